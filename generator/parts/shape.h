// >>shape --------------------------------------------------------------------------------------
/* Shape ops. The view ops (view, permute, transpose, expand, squeeze, unsqueeze, slice, select)
   only compute a new geometry over t's storage: no kernel, no copy. reshape and flatten are views
   whenever the strides allow (PyTorch's computeStride rule), else copies. Each view op still fills
   a tensor__call (inputs, parameters, out) and hands it to the autograd hook, as tensor__dispatch
   does for kernels, so the derivative table can treat views like any other op:
     view/reshape/flatten: recorded as view;   expand: as expand (input shape from in[0]);
     permute: dims[0..n_dims-1];   transpose: ip[0], ip[1] (wrapped);
     squeeze, unsqueeze: ip[0] the wrapped dim;   select: ip[0] dim, ip[1] index (wrapped);
     slice: ip[0] dim, ip[1] start, ip[2] end (both normalized to [0, size]), ip[3] step. */

/* Builds the view handle of c and records it for autograd. */
static tensor *tensor__make_view(tensor__call *c, tensor *t, int ndim, const int64_t *shape, const int64_t *strides, int64_t offset) {
    c->n_in = 1;
    c->in[0] = t;
    c->out = tensor__view_of(c->fn, t, ndim, shape, strides, offset);
    if (c->out) tensor__autograd_record(c);
    return c->out;
}

/* PyTorch's infer_size: the shape with its one -1 filled in so it holds numel elements; false and
   an error naming fn if there are two -1s, a negative size, or the element counts differ. */
static bool tensor__infer_shape(const char *fn, const tensor *t, int ndim, const int64_t *shape, int64_t *out) {
    if (ndim < 0 || ndim > TENSOR_MAX_DIMS) { tensor__fail(fn, "ndim %d is out of range [0, %d]", ndim, TENSOR_MAX_DIMS); return false; }
    if (ndim > 0 && !shape) { tensor__fail(fn, "shape is NULL with ndim %d", ndim); return false; }
    char b[160];
    int64_t numel = tensor__numel_of(t->ndim, t->shape), known = 1;
    int infer = -1;
    for (int i = 0; i < ndim; i++) {
        out[i] = shape[i];
        if (shape[i] == -1) {
            if (infer >= 0) { tensor__fail(fn, "only one dimension can be inferred, shape %s has two -1", tensor__shape_str(b, sizeof b, ndim, shape)); return false; }
            infer = i;
        } else if (shape[i] < 0) {
            tensor__fail(fn, "invalid size %lld at dim %d of shape %s", (long long)shape[i], i, tensor__shape_str(b, sizeof b, ndim, shape));
            return false;
        } else {
            if (shape[i] && known > INT64_MAX / 8 / shape[i]) { tensor__fail(fn, "shape %s has too many elements", tensor__shape_str(b, sizeof b, ndim, shape)); return false; }
            known *= shape[i];
        }
    }
    if (numel == known || (infer >= 0 && known > 0 && numel % known == 0)) {
        if (infer >= 0) {
            if (known == 0) {
                tensor__fail(fn, "cannot reshape tensor of 0 elements into shape %s because the unspecified dimension size -1 can be any value and is ambiguous",
                             tensor__shape_str(b, sizeof b, ndim, shape));
                return false;
            }
            out[infer] = numel / known;
        }
        return true;
    }
    tensor__fail(fn, "shape %s is invalid for input of shape %s (%lld elements)", tensor__shape_str(b, sizeof b, ndim, shape), tensor__shape_of(t), (long long)numel);
    return false;
}

/* PyTorch's computeStride: strides that let t's elements be seen with shape (whose element count
   matches), walking chunks of dims that are contiguous with each other; false if a new dim would
   have to span two such chunks. */
static bool tensor__view_strides(const tensor *t, int ndim, const int64_t *shape, int64_t *strides) {
    int on = t->ndim;
    if (on == 0) { for (int i = 0; i < ndim; i++) strides[i] = 1; return true; }
    if (tensor__numel_of(on, t->shape) == 0) {
        bool same = on == ndim;
        for (int i = 0; same && i < ndim; i++) same = t->shape[i] == shape[i];
        if (same) { for (int i = 0; i < ndim; i++) strides[i] = t->strides[i]; return true; }
        tensor__contiguous_strides(ndim, shape, strides);
        return true;
    }
    int view_d = ndim - 1;
    int64_t chunk_base = t->strides[on - 1], tensor_numel = 1, view_numel = 1;
    for (int d = on - 1; d >= 0; d--) {
        tensor_numel *= t->shape[d];
        if (d == 0 || (t->shape[d - 1] != 1 && t->strides[d - 1] != tensor_numel * chunk_base)) {
            while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
                strides[view_d] = view_numel * chunk_base;
                view_numel *= shape[view_d];
                view_d--;
            }
            if (view_numel != tensor_numel) return false;
            if (d > 0) {
                chunk_base = t->strides[d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    return view_d == -1;
}

TENSOR_API tensor *tensor_view(tensor *t, int ndim, const int64_t *shape) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_view);
    TENSOR__CHECK_ARG(c.fn, t);
    int64_t sh[TENSOR_MAX_DIMS], st[TENSOR_MAX_DIMS];
    if (!tensor__infer_shape(c.fn, t, ndim, shape, sh)) return NULL;
    if (!tensor__view_strides(t, ndim, sh, st)) {
        char b[160];
        return tensor__fail(c.fn, "shape %s is not compatible with the size and strides of the input (shape %s): a dim would span two contiguous subspaces; use tensor_reshape",
                            tensor__shape_str(b, sizeof b, ndim, sh), tensor__shape_of(t));
    }
    return tensor__make_view(&c, t, ndim, sh, st, t->offset);
}

/* reshape, and flatten through it: a view when the strides allow, else a view of a contiguous
   copy (PyTorch's reshape is exactly this composite: view, or clone then view). Messages name fn. */
static tensor *tensor__reshape(const char *fn, tensor *t, int ndim, const int64_t *shape) {
    int64_t sh[TENSOR_MAX_DIMS], st[TENSOR_MAX_DIMS];
    if (!tensor__infer_shape(fn, t, ndim, shape, sh)) return NULL;
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_view);
    c.fn = fn;
    if (tensor__view_strides(t, ndim, sh, st)) return tensor__make_view(&c, t, ndim, sh, st, t->offset);
    tensor *copy = tensor_contiguous(t);
    if (!copy) return NULL;
    tensor__contiguous_strides(ndim, sh, st);
    tensor *r = tensor__make_view(&c, copy, ndim, sh, st, copy->offset);
    tensor_free(copy); /* the view keeps the storage */
    return r;
}

TENSOR_API tensor *tensor_reshape(tensor *t, int ndim, const int64_t *shape) {
    TENSOR__CHECK_ARG("tensor_reshape", t);
    return tensor__reshape("tensor_reshape", t, ndim, shape);
}

TENSOR_API tensor *tensor_flatten(tensor *t, int start_dim, int end_dim) {
    const char *fn = "tensor_flatten";
    TENSOR__CHECK_ARG(fn, t);
    int nd = t->ndim ? t->ndim : 1; /* a 0-dim tensor flattens to [1] */
    int s = tensor__wrap_dim(fn, start_dim, nd);
    if (s < 0) return NULL;
    int e = tensor__wrap_dim(fn, end_dim, nd);
    if (e < 0) return NULL;
    if (s > e) return tensor__fail(fn, "start_dim %d (dim %d) cannot come after end_dim %d (dim %d)", start_dim, s, end_dim, e);
    if (t->ndim == 0) { int64_t one = 1; return tensor__reshape(fn, t, 1, &one); }
    if (s == e) return tensor__alias(fn, t);
    int64_t sh[TENSOR_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < s; i++) sh[n++] = t->shape[i];
    int64_t m = 1;
    for (int i = s; i <= e; i++) m *= t->shape[i];
    sh[n++] = m;
    for (int i = e + 1; i < t->ndim; i++) sh[n++] = t->shape[i];
    return tensor__reshape(fn, t, n, sh);
}

TENSOR_API tensor *tensor_permute(tensor *t, int ndim, const int *dims) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_permute);
    TENSOR__CHECK_ARG(c.fn, t);
    if (ndim != t->ndim) return tensor__fail(c.fn, "number of dims %d does not match the %d dims of the input (shape %s)", ndim, t->ndim, tensor__shape_of(t));
    if (ndim > 0 && !dims) return tensor__fail(c.fn, "dims is NULL with ndim %d", ndim);
    int64_t sh[TENSOR_MAX_DIMS], st[TENSOR_MAX_DIMS];
    bool seen[TENSOR_MAX_DIMS] = {false};
    for (int i = 0; i < ndim; i++) {
        int d = tensor__wrap_dim(c.fn, dims[i], ndim);
        if (d < 0) return NULL;
        if (seen[d]) return tensor__fail(c.fn, "dim %d appears more than once in the permutation", d);
        seen[d] = true;
        c.dims[i] = d;
        sh[i] = t->shape[d];
        st[i] = t->strides[d];
    }
    c.n_dims = ndim;
    return tensor__make_view(&c, t, ndim, sh, st, t->offset);
}

TENSOR_API tensor *tensor_transpose(tensor *t, int dim0, int dim1) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_transpose);
    TENSOR__CHECK_ARG(c.fn, t);
    int nd = t->ndim ? t->ndim : 1; /* a 0-dim tensor accepts dims 0 and -1 */
    int d0 = tensor__wrap_dim(c.fn, dim0, nd);
    if (d0 < 0) return NULL;
    int d1 = tensor__wrap_dim(c.fn, dim1, nd);
    if (d1 < 0) return NULL;
    int64_t sh[TENSOR_MAX_DIMS], st[TENSOR_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++) { sh[i] = t->shape[i]; st[i] = t->strides[i]; }
    if (t->ndim) {
        sh[d0] = t->shape[d1]; st[d0] = t->strides[d1];
        sh[d1] = t->shape[d0]; st[d1] = t->strides[d0];
    }
    c.ip[0] = d0;
    c.ip[1] = d1;
    return tensor__make_view(&c, t, t->ndim, sh, st, t->offset);
}

TENSOR_API tensor *tensor_expand(tensor *t, int ndim, const int64_t *shape) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_expand);
    TENSOR__CHECK_ARG(c.fn, t);
    if (ndim < 0 || ndim > TENSOR_MAX_DIMS) return tensor__fail(c.fn, "ndim %d is out of range [0, %d]", ndim, TENSOR_MAX_DIMS);
    if (ndim > 0 && !shape) return tensor__fail(c.fn, "shape is NULL with ndim %d", ndim);
    char b[160];
    if (ndim < t->ndim)
        return tensor__fail(c.fn, "the number of sizes provided (%d) must be greater or equal to the number of dims of the tensor (shape %s)", ndim, tensor__shape_of(t));
    int64_t sh[TENSOR_MAX_DIMS], st[TENSOR_MAX_DIMS];
    int lead = ndim - t->ndim;
    for (int i = 0; i < ndim; i++) {
        int64_t want = shape[i];
        if (i < lead) { /* a new leading dim */
            if (want < 0) return tensor__fail(c.fn, "size %lld is not allowed in the leading, new dim %d (target sizes %s)", (long long)want, i, tensor__shape_str(b, sizeof b, ndim, shape));
            sh[i] = want;
            st[i] = 0;
            continue;
        }
        int d = i - lead;
        if (want == -1) want = t->shape[d];
        if (want < 0) return tensor__fail(c.fn, "invalid size %lld at dim %d (target sizes %s)", (long long)want, i, tensor__shape_str(b, sizeof b, ndim, shape));
        if (want == t->shape[d]) { sh[i] = want; st[i] = t->strides[d]; }
        else if (t->shape[d] == 1) { sh[i] = want; st[i] = 0; }
        else return tensor__fail(c.fn, "the expanded size %lld must match the existing size %lld at non-singleton dim %d (target sizes %s, tensor shape %s)",
                                 (long long)want, (long long)t->shape[d], i, tensor__shape_str(b, sizeof b, ndim, shape), tensor__shape_of(t));
    }
    if (tensor__check_shape(c.fn, ndim, sh) < 0) return NULL;
    return tensor__make_view(&c, t, ndim, sh, st, t->offset);
}

TENSOR_API tensor *tensor_squeeze(tensor *t, int dim) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_squeeze);
    TENSOR__CHECK_ARG(c.fn, t);
    int d = tensor__wrap_dim(c.fn, dim, t->ndim ? t->ndim : 1);
    if (d < 0) return NULL;
    c.ip[0] = d;
    int64_t sh[TENSOR_MAX_DIMS], st[TENSOR_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < t->ndim; i++) {
        if (i == d && t->shape[i] == 1) continue; /* only a size-1 dim goes; otherwise a plain view */
        sh[n] = t->shape[i];
        st[n++] = t->strides[i];
    }
    return tensor__make_view(&c, t, n, sh, st, t->offset);
}

TENSOR_API tensor *tensor_unsqueeze(tensor *t, int dim) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_unsqueeze);
    TENSOR__CHECK_ARG(c.fn, t);
    int d = tensor__wrap_dim(c.fn, dim, t->ndim + 1);
    if (d < 0) return NULL;
    if (t->ndim == TENSOR_MAX_DIMS) return tensor__fail(c.fn, "tensor of shape %s already has the maximum of %d dims", tensor__shape_of(t), TENSOR_MAX_DIMS);
    c.ip[0] = d;
    int64_t sh[TENSOR_MAX_DIMS], st[TENSOR_MAX_DIMS];
    for (int i = 0, j = 0; i <= t->ndim; i++) {
        if (i == d) {
            sh[i] = 1;
            st[i] = d < t->ndim ? t->shape[d] * t->strides[d] : 1; /* PyTorch's choice */
            continue;
        }
        sh[i] = t->shape[j];
        st[i] = t->strides[j++];
    }
    return tensor__make_view(&c, t, t->ndim + 1, sh, st, t->offset);
}

TENSOR_API tensor *tensor_slice(tensor *t, int dim, int64_t start, int64_t end, int64_t step) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_slice);
    TENSOR__CHECK_ARG(c.fn, t);
    if (t->ndim == 0) return tensor__fail(c.fn, "cannot slice a 0-dim tensor");
    int d = tensor__wrap_dim(c.fn, dim, t->ndim);
    if (d < 0) return NULL;
    if (step <= 0) return tensor__fail(c.fn, "slice step must be positive, got %lld", (long long)step);
    int64_t size = t->shape[d];
    /* Python rules: negative bounds count from the end, then both clamp to [0, size] */
    if (start < 0) start += size;
    if (end < 0) end += size;
    if (start < 0) start = 0;
    if (start > size) start = size;
    if (end < start) end = start;
    if (end > size) end = size;
    int64_t len = end - start, n = len == 0 ? 0 : 1 + (len - 1) / step;
    int64_t sh[TENSOR_MAX_DIMS], st[TENSOR_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++) { sh[i] = t->shape[i]; st[i] = t->strides[i]; }
    sh[d] = n;
    /* step < size whenever n > 1, so the product fits then; for a size-0/1 dim it may not (the
       stride of such a dim never matters) */
    int64_t as = t->strides[d] < 0 ? -t->strides[d] : t->strides[d];
    if (n > 1 || as <= INT64_MAX / step) st[d] = t->strides[d] * step;
    c.ip[0] = d;
    c.ip[1] = start;
    c.ip[2] = end;
    c.ip[3] = step;
    return tensor__make_view(&c, t, t->ndim, sh, st, t->offset + (n ? start * t->strides[d] : 0));
}

TENSOR_API tensor *tensor_select(tensor *t, int dim, int64_t index) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_select);
    TENSOR__CHECK_ARG(c.fn, t);
    if (t->ndim == 0) return tensor__fail(c.fn, "cannot select on a 0-dim tensor");
    int d = tensor__wrap_dim(c.fn, dim, t->ndim);
    if (d < 0) return NULL;
    int64_t size = t->shape[d];
    if (index < -size || index >= size)
        return tensor__fail(c.fn, "index %lld is out of range for dim %d of size %lld (shape %s)", (long long)index, d, (long long)size, tensor__shape_of(t));
    if (index < 0) index += size;
    int64_t sh[TENSOR_MAX_DIMS], st[TENSOR_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < t->ndim; i++) {
        if (i == d) continue;
        sh[n] = t->shape[i];
        st[n++] = t->strides[i];
    }
    c.ip[0] = d;
    c.ip[1] = index;
    return tensor__make_view(&c, t, n, sh, st, t->offset + index * t->strides[d]);
}
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
