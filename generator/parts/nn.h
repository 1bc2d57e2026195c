// >>linalg --------------------------------------------------------------------------------
/* PLACEHOLDER: every op here fails with "not implemented yet" until this part is written. */
static int tensor__cpu_matmul(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_matmul(tensor *a, tensor *b) { (void)a; (void)b; return tensor__fail("tensor_matmul", "not implemented yet"); }
TENSOR_API tensor *tensor_linear(tensor *x, tensor *weight, tensor *bias) { (void)x; (void)weight; (void)bias; return tensor__fail("tensor_linear", "not implemented yet"); }
static int tensor__cpu_softmax(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_softmax(tensor *t, int dim) { (void)t; (void)dim; return tensor__fail("tensor_softmax", "not implemented yet"); }
static int tensor__cpu_log_softmax(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_log_softmax(tensor *t, int dim) { (void)t; (void)dim; return tensor__fail("tensor_log_softmax", "not implemented yet"); }
static int tensor__cpu_layer_norm(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_layer_norm(tensor *x, tensor *weight, tensor *bias, double eps) { (void)x; (void)weight; (void)bias; (void)eps; return tensor__fail("tensor_layer_norm", "not implemented yet"); }
static int tensor__cpu_rms_norm(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_rms_norm(tensor *x, tensor *weight, double eps) { (void)x; (void)weight; (void)eps; return tensor__fail("tensor_rms_norm", "not implemented yet"); }
static int tensor__cpu_conv2d(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_conv2d(tensor *x, tensor *w, tensor *bias, int stride, int padding, int dilation, int groups) { (void)x; (void)w; (void)bias; (void)stride; (void)padding; (void)dilation; (void)groups; return tensor__fail("tensor_conv2d", "not implemented yet"); }
static int tensor__cpu_conv1d(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_conv1d(tensor *x, tensor *w, tensor *bias, int stride, int padding, int dilation, int groups) { (void)x; (void)w; (void)bias; (void)stride; (void)padding; (void)dilation; (void)groups; return tensor__fail("tensor_conv1d", "not implemented yet"); }
static int tensor__cpu_max_pool2d(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_max_pool2d(tensor *x, int kernel, int stride, int padding) { (void)x; (void)kernel; (void)stride; (void)padding; return tensor__fail("tensor_max_pool2d", "not implemented yet"); }
static int tensor__cpu_avg_pool2d(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_avg_pool2d(tensor *x, int kernel, int stride, int padding) { (void)x; (void)kernel; (void)stride; (void)padding; return tensor__fail("tensor_avg_pool2d", "not implemented yet"); }
static int tensor__cpu_embedding(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_embedding(tensor *weight, tensor *indices) { (void)weight; (void)indices; return tensor__fail("tensor_embedding", "not implemented yet"); }
static int tensor__cpu_dropout(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_dropout(tensor *x, double p, bool training) { (void)x; (void)p; (void)training; return tensor__fail("tensor_dropout", "not implemented yet"); }
TENSOR_API tensor *tensor_scaled_dot_product_attention(tensor *q, tensor *k, tensor *v, tensor *mask, bool is_causal) { (void)q; (void)k; (void)v; (void)mask; (void)is_causal; return tensor__fail("tensor_scaled_dot_product_attention", "not implemented yet"); }
TENSOR_API tensor *tensor_cross_entropy(tensor *logits, tensor *targets) { (void)logits; (void)targets; return tensor__fail("tensor_cross_entropy", "not implemented yet"); }
static int tensor__cpu_nll_loss(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_nll_loss(tensor *log_probs, tensor *targets) { (void)log_probs; (void)targets; return tensor__fail("tensor_nll_loss", "not implemented yet"); }
TENSOR_API tensor *tensor_mse_loss(tensor *input, tensor *target) { (void)input; (void)target; return tensor__fail("tensor_mse_loss", "not implemented yet"); }
TENSOR_API tensor *tensor_binary_cross_entropy_with_logits(tensor *logits, tensor *targets) { (void)logits; (void)targets; return tensor__fail("tensor_binary_cross_entropy_with_logits", "not implemented yet"); }
