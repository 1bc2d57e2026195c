// >>shape --------------------------------------------------------------------------------
/* PLACEHOLDER: every op here fails with "not implemented yet" until this part is written. */
TENSOR_API tensor *tensor_reshape(tensor *t, int ndim, const int64_t *shape) { (void)t; (void)ndim; (void)shape; return tensor__fail("tensor_reshape", "not implemented yet"); }
TENSOR_API tensor *tensor_view(tensor *t, int ndim, const int64_t *shape) { (void)t; (void)ndim; (void)shape; return tensor__fail("tensor_view", "not implemented yet"); }
TENSOR_API tensor *tensor_permute(tensor *t, int ndim, const int *dims) { (void)t; (void)ndim; (void)dims; return tensor__fail("tensor_permute", "not implemented yet"); }
TENSOR_API tensor *tensor_transpose(tensor *t, int dim0, int dim1) { (void)t; (void)dim0; (void)dim1; return tensor__fail("tensor_transpose", "not implemented yet"); }
TENSOR_API tensor *tensor_expand(tensor *t, int ndim, const int64_t *shape) { (void)t; (void)ndim; (void)shape; return tensor__fail("tensor_expand", "not implemented yet"); }
TENSOR_API tensor *tensor_squeeze(tensor *t, int dim) { (void)t; (void)dim; return tensor__fail("tensor_squeeze", "not implemented yet"); }
TENSOR_API tensor *tensor_unsqueeze(tensor *t, int dim) { (void)t; (void)dim; return tensor__fail("tensor_unsqueeze", "not implemented yet"); }
TENSOR_API tensor *tensor_flatten(tensor *t, int start_dim, int end_dim) { (void)t; (void)start_dim; (void)end_dim; return tensor__fail("tensor_flatten", "not implemented yet"); }
TENSOR_API tensor *tensor_slice(tensor *t, int dim, int64_t start, int64_t end, int64_t step) { (void)t; (void)dim; (void)start; (void)end; (void)step; return tensor__fail("tensor_slice", "not implemented yet"); }
TENSOR_API tensor *tensor_select(tensor *t, int dim, int64_t index) { (void)t; (void)dim; (void)index; return tensor__fail("tensor_select", "not implemented yet"); }
static int tensor__cpu_cat(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_cat(int n, tensor *const *ts, int dim) { (void)n; (void)ts; (void)dim; return tensor__fail("tensor_cat", "not implemented yet"); }
TENSOR_API tensor *tensor_stack(int n, tensor *const *ts, int dim) { (void)n; (void)ts; (void)dim; return tensor__fail("tensor_stack", "not implemented yet"); }
static int tensor__cpu_flip(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_flip(tensor *t, int dim) { (void)t; (void)dim; return tensor__fail("tensor_flip", "not implemented yet"); }
static int tensor__cpu_repeat(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_repeat(tensor *t, int ndim, const int64_t *repeats) { (void)t; (void)ndim; (void)repeats; return tensor__fail("tensor_repeat", "not implemented yet"); }
static int tensor__cpu_pad(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_pad(tensor *t, int npad, const int64_t *pads, double value) { (void)t; (void)npad; (void)pads; (void)value; return tensor__fail("tensor_pad", "not implemented yet"); }
static int tensor__cpu_tril(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_tril(tensor *t, int64_t diagonal) { (void)t; (void)diagonal; return tensor__fail("tensor_tril", "not implemented yet"); }
static int tensor__cpu_triu(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_triu(tensor *t, int64_t diagonal) { (void)t; (void)diagonal; return tensor__fail("tensor_triu", "not implemented yet"); }
static int tensor__cpu_gather(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_gather(tensor *t, int dim, tensor *index) { (void)t; (void)dim; (void)index; return tensor__fail("tensor_gather", "not implemented yet"); }
static int tensor__cpu_scatter_add(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_scatter_add(tensor *t, int dim, tensor *index, tensor *src) { (void)t; (void)dim; (void)index; (void)src; return tensor__fail("tensor_scatter_add", "not implemented yet"); }
static int tensor__cpu_index_select(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_index_select(tensor *t, int dim, tensor *index) { (void)t; (void)dim; (void)index; return tensor__fail("tensor_index_select", "not implemented yet"); }
static int tensor__cpu_masked_fill(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_masked_fill(tensor *t, tensor *mask, double value) { (void)t; (void)mask; (void)value; return tensor__fail("tensor_masked_fill", "not implemented yet"); }
static int tensor__cpu_one_hot(tensor__call *c) { (void)c; return 1; }
TENSOR_API tensor *tensor_one_hot(tensor *indices, int64_t num_classes) { (void)indices; (void)num_classes; return tensor__fail("tensor_one_hot", "not implemented yet"); }
TENSOR_API int tensor_split(tensor *t, int64_t split_size, int dim, tensor **out, int max_out) { (void)t; (void)split_size; (void)dim; (void)out; (void)max_out; tensor__fail("tensor_split", "not implemented yet"); return -1; }
