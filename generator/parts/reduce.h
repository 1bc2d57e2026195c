// >>reduce --------------------------------------------------------------------------------
/* PLACEHOLDER: every op here fails with "not implemented yet" until this part is written. */
static int tensor__cpu_sum(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_sum(tensor *t, int dim, bool keepdim) { (void)t; (void)dim; (void)keepdim; return tensor__fail("tensor_sum", "not implemented yet"); }
static int tensor__cpu_sum_all(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_sum_all(tensor *t) { (void)t; return tensor__fail("tensor_sum_all", "not implemented yet"); }
static int tensor__cpu_sum_dims(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_sum_dims(tensor *t, int n, const int *dims, bool keepdim) { (void)t; (void)n; (void)dims; (void)keepdim; return tensor__fail("tensor_sum_dims", "not implemented yet"); }
static int tensor__cpu_mean(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_mean(tensor *t, int dim, bool keepdim) { (void)t; (void)dim; (void)keepdim; return tensor__fail("tensor_mean", "not implemented yet"); }
static int tensor__cpu_mean_all(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_mean_all(tensor *t) { (void)t; return tensor__fail("tensor_mean_all", "not implemented yet"); }
static int tensor__cpu_mean_dims(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_mean_dims(tensor *t, int n, const int *dims, bool keepdim) { (void)t; (void)n; (void)dims; (void)keepdim; return tensor__fail("tensor_mean_dims", "not implemented yet"); }
static int tensor__cpu_prod(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_prod(tensor *t, int dim, bool keepdim) { (void)t; (void)dim; (void)keepdim; return tensor__fail("tensor_prod", "not implemented yet"); }
static int tensor__cpu_max(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_max(tensor *t, int dim, bool keepdim) { (void)t; (void)dim; (void)keepdim; return tensor__fail("tensor_max", "not implemented yet"); }
static int tensor__cpu_max_all(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_max_all(tensor *t) { (void)t; return tensor__fail("tensor_max_all", "not implemented yet"); }
static int tensor__cpu_min(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_min(tensor *t, int dim, bool keepdim) { (void)t; (void)dim; (void)keepdim; return tensor__fail("tensor_min", "not implemented yet"); }
static int tensor__cpu_min_all(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_min_all(tensor *t) { (void)t; return tensor__fail("tensor_min_all", "not implemented yet"); }
static int tensor__cpu_argmax(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_argmax(tensor *t, int dim, bool keepdim) { (void)t; (void)dim; (void)keepdim; return tensor__fail("tensor_argmax", "not implemented yet"); }
static int tensor__cpu_argmin(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_argmin(tensor *t, int dim, bool keepdim) { (void)t; (void)dim; (void)keepdim; return tensor__fail("tensor_argmin", "not implemented yet"); }
static int tensor__cpu_var(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_var(tensor *t, int dim, int64_t correction, bool keepdim) { (void)t; (void)dim; (void)correction; (void)keepdim; return tensor__fail("tensor_var", "not implemented yet"); }
static int tensor__cpu_std(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_std(tensor *t, int dim, int64_t correction, bool keepdim) { (void)t; (void)dim; (void)correction; (void)keepdim; return tensor__fail("tensor_std", "not implemented yet"); }
static int tensor__cpu_logsumexp(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_logsumexp(tensor *t, int dim, bool keepdim) { (void)t; (void)dim; (void)keepdim; return tensor__fail("tensor_logsumexp", "not implemented yet"); }
static int tensor__cpu_norm(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_norm(tensor *t, double p, int dim, bool keepdim) { (void)t; (void)p; (void)dim; (void)keepdim; return tensor__fail("tensor_norm", "not implemented yet"); }
static int tensor__cpu_cumsum(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_cumsum(tensor *t, int dim) { (void)t; (void)dim; return tensor__fail("tensor_cumsum", "not implemented yet"); }
static int tensor__cpu_all(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_all(tensor *t) { (void)t; return tensor__fail("tensor_all", "not implemented yet"); }
static int tensor__cpu_any(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_any(tensor *t) { (void)t; return tensor__fail("tensor_any", "not implemented yet"); }
