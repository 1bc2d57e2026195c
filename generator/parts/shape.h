// >>shape --------------------------------------------------------------------------------------
/* Shape ops. The view ops (view, permute, transpose, expand, squeeze, unsqueeze, slice, select)
   only compute a new geometry over t's storage: no kernel, no copy. reshape and flatten are views
   whenever the strides allow (PyTorch's computeStride rule), else copies. Each view op still fills
   a tensor__call (inputs, parameters, out) and hands it to the autograd hook, as tensor__dispatch
   does for kernels, so the derivative table can treat views like any other op:
     view/reshape/flatten: recorded as view;   expand: as expand (input shape from in[0]);
     permute: dims[0..n_dims-1];   transpose: ip[0], ip[1] (wrapped);
     squeeze, unsqueeze: ip[0] the wrapped dim;   select: ip[0] dim, ip[1] index (wrapped);
     slice (and each piece of tensor_split): ip[0] dim, ip[1] start, ip[2] end (both normalized
     to [0, size]), ip[3] step.
   reshape of a non-viewable tensor records contiguous (a copy) and then view. The kernel ops'
   calls: cat: ip[0] n, ip[1] the tensor array (read it while recording), ip[2] dim, in[] the first
   TENSOR__MAX_INPUTS inputs; stack: unsqueeze + cat; flip: ip[0] dim; repeat: ip[0..n_dims-1];
   pad: ip[0] npad, ip[1] the pads array, p[0] value; tril/triu: ip[0] diagonal; gather,
   index_select: in = {t, index}, ip[0] dim; scatter_add: in = {t, index, src}, ip[0] dim;
   masked_fill: in = {t, mask}, p[0] value; one_hot: ip[0] num_classes. */

/* Builds the view handle of c and records it for autograd. */
static tensor *tensor__make_view(tensor__call *c, tensor *t, int ndim, const int64_t *shape, const int64_t *strides, int64_t offset) {
    c->n_in = 1;
    c->in[0] = t;
    c->out = tensor__view_of(c->fn, t, ndim, shape, strides, offset);
    if (c->out && !tensor__autograd_record(c)) { tensor_free(c->out); c->out = NULL; }
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
        } else if (!tensor__size_mul(known, shape[i], &known)) {
            tensor__fail(fn, "shape %s has too many elements", tensor__shape_str(b, sizeof b, ndim, shape));
            return false;
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
        return tensor__check_shape(fn, ndim, out) >= 0; /* an empty shape's strides may still overflow */
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
    int64_t sh[TENSOR_MAX_DIMS] = {0}, st[TENSOR_MAX_DIMS] = {0}; /* = {0}: quiets -O3 maybe-uninitialized */
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
    int64_t sh[TENSOR_MAX_DIMS] = {0}, st[TENSOR_MAX_DIMS] = {0}; /* = {0}: quiets -O3 maybe-uninitialized */
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
    if (s == e) return tensor__reshape(fn, t, t->ndim, t->shape); /* a recorded view, not a bare alias */
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
    int64_t sh[TENSOR_MAX_DIMS] = {0}, st[TENSOR_MAX_DIMS] = {0}; /* = {0}: quiets -O3 maybe-uninitialized */
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
    int64_t sh[TENSOR_MAX_DIMS] = {0}, st[TENSOR_MAX_DIMS] = {0}; /* = {0}: quiets -O3 maybe-uninitialized */
    for (int i = 0; i < t->ndim; i++) { sh[i] = t->shape[i]; st[i] = t->strides[i]; }
    if (t->ndim) {
        sh[d0] = t->shape[d1]; st[d0] = t->strides[d1];
        sh[d1] = t->shape[d0]; st[d1] = t->strides[d0];
    }
    c.ip[0] = d0;
    c.ip[1] = d1;
    return tensor__make_view(&c, t, t->ndim, sh, st, t->offset);
}

/* expand, and broadcast_to / expand_as through it (messages name fn). */
static tensor *tensor__expand(const char *fn, tensor *t, int ndim, const int64_t *shape) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_expand);
    c.fn = fn;
    TENSOR__CHECK_ARG(c.fn, t);
    if (ndim < 0 || ndim > TENSOR_MAX_DIMS) return tensor__fail(c.fn, "ndim %d is out of range [0, %d]", ndim, TENSOR_MAX_DIMS);
    if (ndim > 0 && !shape) return tensor__fail(c.fn, "shape is NULL with ndim %d", ndim);
    char b[160];
    if (ndim < t->ndim)
        return tensor__fail(c.fn, "the number of sizes provided (%d) must be greater or equal to the number of dims of the tensor (shape %s)", ndim, tensor__shape_of(t));
    int64_t sh[TENSOR_MAX_DIMS] = {0}, st[TENSOR_MAX_DIMS] = {0}; /* = {0}: quiets -O3 maybe-uninitialized */
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
TENSOR_API tensor *tensor_expand(tensor *t, int ndim, const int64_t *shape) { return tensor__expand("tensor_expand", t, ndim, shape); }

TENSOR_API tensor *tensor_squeeze(tensor *t, int dim) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_squeeze);
    TENSOR__CHECK_ARG(c.fn, t);
    int d = tensor__wrap_dim(c.fn, dim, t->ndim ? t->ndim : 1);
    if (d < 0) return NULL;
    c.ip[0] = d;
    int64_t sh[TENSOR_MAX_DIMS] = {0}, st[TENSOR_MAX_DIMS] = {0}; /* = {0}: quiets -O3 maybe-uninitialized */
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
    int64_t sh[TENSOR_MAX_DIMS] = {0}, st[TENSOR_MAX_DIMS] = {0}; /* = {0}: quiets -O3 maybe-uninitialized */
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
    int64_t sh[TENSOR_MAX_DIMS] = {0}, st[TENSOR_MAX_DIMS] = {0}; /* = {0}: quiets -O3 maybe-uninitialized */
    for (int i = 0; i < t->ndim; i++) { sh[i] = t->shape[i]; st[i] = t->strides[i]; }
    sh[d] = n;
    /* step < size whenever n > 1, so the product is below size * stride then; for a size-0/1 dim
       it may pass the bound of strides (>>shapes), and the stride of such a dim never matters */
    int64_t as = t->strides[d] < 0 ? -t->strides[d] : t->strides[d];
    if (n > 1 || as <= TENSOR__MAX_NUMEL / step) st[d] = t->strides[d] * step;
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
    int64_t sh[TENSOR_MAX_DIMS] = {0}, st[TENSOR_MAX_DIMS] = {0}; /* = {0}: quiets -O3 maybe-uninitialized */
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

/* t[start:end] along d (0 <= start <= end <= size) as a view recorded as a slice: a piece of
   tensor_split and of the splitting helpers of >>construct. */
static tensor *tensor__piece(const char *fn, tensor *t, int d, int64_t start, int64_t end) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_slice);
    c.fn = fn;
    int64_t sh[TENSOR_MAX_DIMS];
    for (int k = 0; k < t->ndim; k++) sh[k] = t->shape[k];
    sh[d] = end - start;
    c.ip[0] = d;
    c.ip[1] = start;
    c.ip[2] = end;
    c.ip[3] = 1;
    return tensor__make_view(&c, t, t->ndim, sh, t->strides, t->offset + (end > start ? start * t->strides[d] : 0));
}

/* tensor_split: views of split_size along dim (the last one smaller), as torch.split. */
TENSOR_API int tensor_split(tensor *t, int64_t split_size, int dim, tensor **out, int max_out) {
    const char *fn = "tensor_split";
    if (!t) { tensor__null_arg(fn, "t"); return -1; }
    if (!out) { tensor__null_arg(fn, "out"); return -1; }
    if (t->ndim == 0) { tensor__fail(fn, "cannot split a 0-dim tensor"); return -1; }
    int d = tensor__wrap_dim(fn, dim, t->ndim);
    if (d < 0) return -1;
    int64_t size = t->shape[d];
    if (split_size < 0 || (split_size == 0 && size != 0)) {
        tensor__fail(fn, "split_size must be positive (0 only for a dim of size 0), got %lld for dim %d of size %lld", (long long)split_size, d, (long long)size);
        return -1;
    }
    int64_t count = size == 0 ? 1 : 1 + (size - 1) / split_size; /* a size-0 dim gives one empty piece */
    if (count > max_out) {
        tensor__fail(fn, "splitting dim %d of size %lld into pieces of %lld gives %lld tensors, more than max_out %d", d, (long long)size, (long long)split_size, (long long)count, max_out);
        return -1;
    }
    for (int64_t i = 0; i < count; i++) {
        int64_t start = i * split_size, end = size - start < split_size ? size : start + split_size;
        if (!(out[i] = tensor__piece(fn, t, d, start, end))) {
            for (int64_t k = 0; k < i; k++) { tensor_free(out[k]); out[k] = NULL; }
            return -1;
        }
    }
    return (int)count;
}

/* ---- copies ---- */

/* A stack copy of t's handle whose geometry a kernel may change: a window onto t's storage that
   is never linked, freed or returned (the kernels below copy through it with tensor__copy_into). */
static void tensor__window(tensor *w, const tensor *t) { memcpy(w, t, sizeof *w); }

/* PyTorch skips 1-D empty tensors in cat whatever their shape elsewhere (legacy behaviour). */
static bool tensor__cat_skipped(const tensor *t) { return t->ndim == 1 && t->shape[0] == 0; }

/* out: the inputs' shape with the sizes along dim summed. Each input is copied (converted to the
   output dtype) into its slab of out. ip[0] = n, ip[1] = the tensor array, ip[2] = dim; in[] holds
   the first TENSOR__MAX_INPUTS inputs (the autograd record reads the whole array from ip[1]). */
/* One slab of cat's output = src: the CPU's copy, or on a device its copy_ kernel (so cat runs on
   any device that has copy_, whatever the number of inputs: the call record holds only four). */
static int tensor__cat_slab(tensor__call *c, tensor *slab, tensor *src) {
    if (slab->storage->device == TENSOR_CPU) { tensor__copy_into(slab, src); return 0; }
    tensor__call cp;
    tensor__call_init(&cp, TENSOR_OP_copy_);
    cp.fn = c->fn;
    cp.n_in = 2;
    cp.in[0] = cp.out = slab;
    cp.in[1] = src;
    return tensor__device_kernel(&cp);
}
/* The kernel of cat on every device. */
static int tensor__cpu_cat(tensor__call *c) {
    int n = (int)c->ip[0], dim = (int)c->ip[2];
    tensor *const *ts = (tensor *const *)(uintptr_t)c->ip[1];
    int64_t at = 0;
    if (tensor__numel_of(c->out->ndim, c->out->shape) == 0) return 0; /* no slab holds anything */
    for (int i = 0; i < n; i++) {
        if (tensor__cat_skipped(ts[i]) && c->out->ndim != 1) continue;
        int64_t len = ts[i]->shape[dim];
        if (len == 0) continue;
        tensor slab;
        tensor__window(&slab, c->out);
        slab.shape[dim] = len;
        slab.offset += at * slab.strides[dim];
        if (tensor__cat_slab(c, &slab, ts[i])) return 1;
        at += len;
    }
    return 0;
}

TENSOR_API tensor *tensor_cat(int n, tensor *const *ts, int dim) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_cat);
    if (n < 1) return tensor__fail(c.fn, "expects a non-empty list of tensors, got n = %d", n);
    if (!ts) return tensor__null_arg(c.fn, "ts");
    for (int i = 0; i < n; i++) {
        if (!ts[i]) {
            if (!tensor_last_error()) tensor__fail(c.fn, "tensor %d of the list is NULL", i);
            return NULL;
        }
        if (ts[i]->ndim == 0) return tensor__fail(c.fn, "zero-dimensional tensor (at position %d) cannot be concatenated", i);
    }
    if (!tensor__same_device(c.fn, n, ts)) return NULL;
    int ref = -1;
    for (int i = 0; i < n && ref < 0; i++) if (!tensor__cat_skipped(ts[i])) ref = i;
    const tensor *r = ts[ref < 0 ? 0 : ref];
    int d = tensor__wrap_dim(c.fn, dim, r->ndim);
    if (d < 0) return NULL;
    int64_t shape[TENSOR_MAX_DIMS];
    for (int k = 0; k < r->ndim; k++) shape[k] = r->shape[k];
    if (ref >= 0) {
        shape[d] = 0;
        for (int i = 0; i < n; i++) {
            const tensor *t = ts[i];
            if (tensor__cat_skipped(t)) continue;
            if (t->ndim != r->ndim)
                return tensor__fail(c.fn, "tensors must have the same number of dims: tensor %d has shape %s, tensor %d has shape %s", ref, tensor__shape_of(r), i, tensor__shape_of(t));
            for (int k = 0; k < r->ndim; k++)
                if (k != d && t->shape[k] != r->shape[k])
                    return tensor__fail(c.fn, "sizes of tensors must match except in dim %d: tensor %d has shape %s, tensor %d has shape %s (size %lld vs %lld at dim %d)",
                                        d, ref, tensor__shape_of(r), i, tensor__shape_of(t), (long long)r->shape[k], (long long)t->shape[k], k);
            if (!tensor__size_add(shape[d], t->shape[d], &shape[d]))
                return tensor__fail(c.fn, "the concatenated size along dim %d is too large: it passes 2^60 at tensor %d (shape %s)", d, i, tensor__shape_of(t));
        }
    }
    tensor_dtype dt = tensor__result_type(n, ts);
    c.n_in = n < TENSOR__MAX_INPUTS ? n : TENSOR__MAX_INPUTS;
    for (int i = 0; i < c.n_in; i++) c.in[i] = ts[i];
    c.ip[0] = n;
    c.ip[1] = (int64_t)(uintptr_t)ts;
    c.ip[2] = d;
    c.out = tensor__new(c.fn, r->ndim, shape, dt, r->storage->device);
    return c.out ? tensor__dispatch(&c) : NULL;
}

/* stack = unsqueeze every input at dim, then cat (PyTorch's composite). */
TENSOR_API tensor *tensor_stack(int n, tensor *const *ts, int dim) {
    const char *fn = "tensor_stack";
    if (n < 1) return tensor__fail(fn, "expects a non-empty list of tensors, got n = %d", n);
    if (!ts) return tensor__null_arg(fn, "ts");
    for (int i = 0; i < n; i++) {
        if (!ts[i]) {
            if (!tensor_last_error()) tensor__fail(fn, "tensor %d of the list is NULL", i);
            return NULL;
        }
        if (!tensor__same_shape(ts[i], ts[0]))
            return tensor__fail(fn, "expects each tensor to be equal size, but got %s at entry 0 and %s at entry %d", tensor__shape_of(ts[0]), tensor__shape_of(ts[i]), i);
    }
    int d = tensor__wrap_dim(fn, dim, ts[0]->ndim + 1);
    if (d < 0) return NULL;
    if (ts[0]->ndim == TENSOR_MAX_DIMS) return tensor__fail(fn, "tensors of shape %s already have the maximum of %d dims", tensor__shape_of(ts[0]), TENSOR_MAX_DIMS);
    if (!tensor__same_device(fn, n, ts)) return NULL;
    tensor **u = (tensor **)TENSOR__MALLOC(sizeof(tensor *) * (size_t)n);
    if (!u) return tensor__fail(fn, "out of memory");
    tensor *r = NULL;
    int made = 0;
    for (; made < n; made++) {
        u[made] = tensor_unsqueeze(ts[made], d);
        if (!u[made]) break;
    }
    if (made == n) r = tensor_cat(n, u, d);
    for (int i = 0; i < made; i++) tensor_free(u[i]);
    TENSOR_FREE(u);
    return r;
}

/* out = t with dim reversed: a copy through a window that walks dim backwards. */
static int tensor__cpu_flip(tensor__call *c) {
    tensor *t = c->in[0];
    if (tensor__numel_of(t->ndim, t->shape) == 0) return 0;
    tensor w;
    tensor__window(&w, t);
    if (t->ndim > 0) {
        int d = (int)c->ip[0];
        w.offset += (w.shape[d] - 1) * w.strides[d];
        w.strides[d] = -w.strides[d];
    }
    tensor__copy_into(c->out, &w);
    return 0;
}

TENSOR_API tensor *tensor_flip(tensor *t, int dim) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_flip);
    TENSOR__CHECK_ARG(c.fn, t);
    int d = tensor__wrap_dim(c.fn, dim, t->ndim ? t->ndim : 1);
    if (d < 0) return NULL;
    c.n_in = 1;
    c.in[0] = t;
    c.ip[0] = d;
    c.out = tensor__new_like(c.fn, t, t->dtype);
    return c.out ? tensor__dispatch(&c) : NULL;
}

/* out: [P0*R0, ..., Pn*Rn] where P is t's shape with leading 1s. t goes into the first tile, then
   each dim (last first) is filled by doubling the already-filled block along it: O(log R) copies
   per dim. ip[0..n_dims-1] = repeats. */
static int tensor__cpu_repeat(tensor__call *c) {
    tensor *t = c->in[0], *o = c->out;
    int nd = o->ndim, lead = nd - t->ndim;
    if (tensor__numel_of(nd, o->shape) == 0) return 0;
    tensor src, region;
    tensor__window(&src, t);
    tensor__window(&region, o);
    src.ndim = nd;
    for (int i = nd - 1; i >= 0; i--) {
        src.shape[i] = i < lead ? 1 : t->shape[i - lead];
        src.strides[i] = i < lead ? 0 : t->strides[i - lead];
        region.shape[i] = src.shape[i];
    }
    tensor__copy_into(&region, &src);
    for (int d = nd - 1; d >= 0; d--) {
        int64_t reps = c->ip[d], have = 1, p = src.shape[d];
        while (have < reps) {
            int64_t m = have < reps - have ? have : reps - have;
            tensor from, to;
            tensor__window(&from, &region);
            from.shape[d] = m * p;
            tensor__window(&to, &from);
            to.offset += have * p * o->strides[d];
            tensor__copy_into(&to, &from);
            have += m;
        }
        region.shape[d] = o->shape[d];
    }
    return 0;
}

TENSOR_API tensor *tensor_repeat(tensor *t, int ndim, const int64_t *repeats) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_repeat);
    TENSOR__CHECK_ARG(c.fn, t);
    if (ndim < 0 || ndim > TENSOR_MAX_DIMS) return tensor__fail(c.fn, "number of repeats %d is out of range [0, %d]", ndim, TENSOR_MAX_DIMS);
    if (ndim > 0 && !repeats) return tensor__fail(c.fn, "repeats is NULL with ndim %d", ndim);
    char b[160];
    if (ndim < t->ndim)
        return tensor__fail(c.fn, "number of repeats %d can not be smaller than the number of dims of the tensor (shape %s)", ndim, tensor__shape_of(t));
    int64_t shape[TENSOR_MAX_DIMS];
    int lead = ndim - t->ndim;
    for (int i = 0; i < ndim; i++) {
        int64_t s = i < lead ? 1 : t->shape[i - lead];
        if (repeats[i] < 0) return tensor__fail(c.fn, "negative repeat %lld at dim %d (repeats %s)", (long long)repeats[i], i, tensor__shape_str(b, sizeof b, ndim, repeats));
        if (!tensor__size_mul(s, repeats[i], &shape[i]))
            return tensor__fail(c.fn, "repeats %s of shape %s give too many elements", tensor__shape_str(b, sizeof b, ndim, repeats), tensor__shape_of(t));
        c.ip[i] = repeats[i];
    }
    c.n_dims = ndim;
    c.n_in = 1;
    c.in[0] = t;
    c.out = tensor__new(c.fn, ndim, shape, t->dtype, t->storage->device);
    return c.out ? tensor__dispatch(&c) : NULL;
}

/* A value written into a tensor of dtype d must be representable there, as PyTorch checks
   ("value cannot be converted to type ... without overflow"); infinities are fine for floats. */
static bool tensor__check_value_fits(const char *fn, double v, tensor_dtype d) {
    double lo = 0, hi = 0;
    switch (d) {
    case TENSOR_BOOL: case TENSOR_F64: return true;
    case TENSOR_F32: hi = FLT_MAX; break;
    case TENSOR_F16: hi = 65504.0; break;
    case TENSOR_BF16: hi = 3.3895313892515355e38; break;
    case TENSOR_I32: lo = -2147483648.0; hi = 2147483647.0; break;
    case TENSOR_I64: lo = -9223372036854775808.0; hi = 9223372036854775807.0; break;
    case TENSOR_U8: lo = 0; hi = 255; break;
    }
    bool ok;
    if (tensor__is_float(d)) ok = v != v || isinf(v) || (v >= -hi && v <= hi);
    else ok = v >= lo && v <= hi && (d != TENSOR_I64 || v < 9223372036854775807.0);
    if (!ok) tensor__fail(fn, "value %g cannot be converted to %s without overflow", v, tensor__dtype_names[d]);
    return ok;
}

/* out = value everywhere, then the overlap of t and out (after the crops of negative pads) copied
   in. Dim nd-1-k gets pads[2k] before and pads[2k+1] after. ip[0] = npad, ip[1] = the pads array,
   p[0] = value. */
static int tensor__cpu_pad(tensor__call *c) {
    tensor *t = c->in[0], *o = c->out;
    const int64_t *pads = (const int64_t *)(uintptr_t)c->ip[1];
    int npairs = (int)c->ip[0] / 2;
    tensor__fill(o, c->p[0]);
    tensor src, dst;
    tensor__window(&src, t);
    tensor__window(&dst, o);
    for (int k = 0; k < npairs; k++) {
        int d = o->ndim - 1 - k;
        int64_t before = pads[2 * k], after = pads[2 * k + 1];
        int64_t in_start = before < 0 ? -before : 0, out_start = before > 0 ? before : 0;
        int64_t len = t->shape[d] - in_start + (after < 0 ? after : 0);
        if (len <= 0) return 0; /* nothing of t survives the crop */
        src.offset += in_start * src.strides[d];
        src.shape[d] = len;
        dst.offset += out_start * dst.strides[d];
        dst.shape[d] = len;
    }
    if (tensor__numel_of(dst.ndim, dst.shape) > 0) tensor__copy_into(&dst, &src);
    return 0;
}

TENSOR_API tensor *tensor_pad(tensor *t, int npad, const int64_t *pads, double value) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_pad);
    TENSOR__CHECK_ARG(c.fn, t);
    if (npad < 0 || npad % 2) return tensor__fail(c.fn, "padding length %d must be a non-negative multiple of 2", npad);
    if (npad / 2 > t->ndim)
        return tensor__fail(c.fn, "padding length %d must be at most two times the number of dims of the input (shape %s)", npad, tensor__shape_of(t));
    if (npad > 0 && !pads) return tensor__fail(c.fn, "pads is NULL with npad %d", npad);
    if (!tensor__check_value_fits(c.fn, value, t->dtype)) return NULL;
    int64_t shape[TENSOR_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++) shape[i] = t->shape[i];
    for (int k = 0; k < npad / 2; k++) {
        int d = t->ndim - 1 - k;
        int64_t before = pads[2 * k], after = pads[2 * k + 1], size = t->shape[d];
        const int64_t lim = TENSOR__MAX_NUMEL; /* then size + before + after cannot overflow */
        if (before > lim || before < -lim || after > lim || after < -lim)
            return tensor__fail(c.fn, "padding (%lld, %lld) of dim %d is too large", (long long)before, (long long)after, d);
        if (size + before + after < 0)
            return tensor__fail(c.fn, "the input size %lld of dim %d plus the padding (%lld, %lld) gives a negative output size", (long long)size, d, (long long)before, (long long)after);
        if (size + (before < 0 ? before : 0) + (after < 0 ? after : 0) < 0)
            return tensor__fail(c.fn, "the negative padding (%lld, %lld) crops more than the size %lld of dim %d", (long long)before, (long long)after, (long long)size, d);
        shape[d] = size + before + after;
    }
    c.n_in = 1;
    c.in[0] = t;
    c.ip[0] = npad;
    c.ip[1] = (int64_t)(uintptr_t)pads;
    c.p[0] = value;
    c.out = tensor__new(c.fn, t->ndim, shape, t->dtype, t->storage->device);
    return c.out ? tensor__dispatch(&c) : NULL;
}

/* out: [..., M, N] = t, then each row's out-of-triangle part zeroed (all-zero bytes are 0 in every
   dtype). Element (i, j) is kept when j - i <= diagonal (tril) or >= diagonal (triu). */
static int tensor__triangle(tensor__call *c, bool lower) {
    tensor *o = c->out;
    if (tensor__numel_of(o->ndim, o->shape) == 0) return 0; /* [2^40, 0]: no row to walk */
    tensor__copy_into(o, c->in[0]);
    int64_t m = o->shape[o->ndim - 2], n = o->shape[o->ndim - 1], rows = tensor__numel_of(o->ndim - 1, o->shape);
    int64_t diag = c->ip[0];
    if (diag < -m - 1) diag = -m - 1; /* j - i lies in (-m, n): clamping keeps the result, avoids overflow */
    if (diag > n + 1) diag = n + 1;
    size_t esz = tensor__dtype_sizes[o->dtype];
    char *base = tensor__data(o);
    for (int64_t r = 0; r < rows; r++) {
        int64_t i = r % m, lo, hi; /* zero columns [lo, hi) */
        if (lower) { lo = i + diag + 1; hi = n; }
        else { lo = 0; hi = i + diag; }
        if (lo < 0) lo = 0;
        if (hi > n) hi = n;
        if (lo < hi) memset(base + (size_t)(r * n + lo) * esz, 0, (size_t)(hi - lo) * esz);
    }
    return 0;
}
static int tensor__cpu_tril(tensor__call *c) { return tensor__triangle(c, true); }
static int tensor__cpu_triu(tensor__call *c) { return tensor__triangle(c, false); }

static tensor *tensor__triangle_front(tensor_op op, tensor *t, int64_t diagonal) {
    tensor__call c;
    tensor__call_init(&c, op);
    TENSOR__CHECK_ARG(c.fn, t);
    if (t->ndim < 2) return tensor__fail(c.fn, "input must have at least 2 dims, got shape %s", tensor__shape_of(t));
    c.n_in = 1;
    c.in[0] = t;
    c.ip[0] = diagonal;
    c.out = tensor__new_like(c.fn, t, t->dtype);
    return c.out ? tensor__dispatch(&c) : NULL;
}
TENSOR_API tensor *tensor_tril(tensor *t, int64_t diagonal) { return tensor__triangle_front(TENSOR_OP_tril, t, diagonal); }
TENSOR_API tensor *tensor_triu(tensor *t, int64_t diagonal) { return tensor__triangle_front(TENSOR_OP_triu, t, diagonal); }

/* ---- indexing ---- */

/* A tensor's geometry with a 0-dim tensor seen as [1] (PyTorch's ensure_nonempty_dim/size). */
typedef struct { int ndim; int64_t shape[TENSOR_MAX_DIMS], strides[TENSOR_MAX_DIMS]; } tensor__geom;
static void tensor__geom_of(const tensor *t, tensor__geom *g) {
    g->ndim = t->ndim ? t->ndim : 1;
    g->shape[0] = 1;
    g->strides[0] = 0;
    for (int i = 0; i < t->ndim; i++) { g->shape[i] = t->shape[i]; g->strides[i] = t->strides[i]; }
}
static bool tensor__check_index_dtype(const char *fn, const tensor *index) {
    if (index->dtype == TENSOR_I64 || index->dtype == TENSOR_I32) return true;
    tensor__fail(fn, "index must be an int64 (or int32) tensor, got %s", tensor__dtype_names[index->dtype]);
    return false;
}

/* The shape rules of gather and scatter_add (PyTorch's gather/scatter_shape_check): same number of
   dims (0-dim counts as 1), index no larger than t except along dim, and no larger than src. */
static bool tensor__check_scatter_shapes(const char *fn, const tensor *t, int dim, const tensor *index, const tensor *src) {
    tensor__geom gt, gi, gs;
    tensor__geom_of(t, &gt);
    tensor__geom_of(index, &gi);
    if (gi.ndim != gt.ndim) {
        tensor__fail(fn, "index (shape %s) must have the same number of dims as the input (shape %s)", tensor__shape_of(index), tensor__shape_of(t));
        return false;
    }
    if (src) tensor__geom_of(src, &gs);
    if (src && gs.ndim != gt.ndim) {
        tensor__fail(fn, "src (shape %s) must have the same number of dims as the input (shape %s)", tensor__shape_of(src), tensor__shape_of(t));
        return false;
    }
    for (int d = 0; d < gt.ndim; d++) {
        if (d != dim && gi.shape[d] > gt.shape[d]) {
            tensor__fail(fn, "index of shape %s is larger than the input of shape %s at dim %d (only dim %d may be larger)", tensor__shape_of(index), tensor__shape_of(t), d, dim);
            return false;
        }
        if (src && gi.shape[d] > gs.shape[d]) {
            tensor__fail(fn, "index of shape %s is larger than src of shape %s at dim %d", tensor__shape_of(index), tensor__shape_of(src), d);
            return false;
        }
    }
    return true;
}

/* Element copy of a size known at compile time for the common sizes (a variable memcpy is a call). */
static void tensor__copy_elem(char *dst, const char *src, size_t esz) {
    switch (esz) {
    case 1: *dst = *src; return;
    case 2: memcpy(dst, src, 2); return;
    case 4: memcpy(dst, src, 4); return;
    case 8: memcpy(dst, src, 8); return;
    default: memcpy(dst, src, esz); return;
    }
}

/* The walk shared by gather and scatter_add: rows of index (every dim but the last), then the
   last dim with running pointers. For element j of a row, *ip is the index element, *tp the element
   of t (or of the scatter output) at the same position with the dim component left out, *sp the
   element of src (scatter) or of the gather output. */
typedef struct {
    tensor__geom gi, gt, gs;
    char *ib, *tb, *sb;      /* element 0 of index, t, src */
    size_t isz, tsz, ssz;
    int nd;
    int64_t rows, row_len;
} tensor__scatter_walk;

static void tensor__scatter_walk_init(tensor__scatter_walk *w, tensor *index, tensor *t, tensor *s) {
    tensor__geom_of(index, &w->gi);
    tensor__geom_of(t, &w->gt);
    tensor__geom_of(s, &w->gs);
    w->isz = tensor__dtype_sizes[index->dtype];
    w->tsz = tensor__dtype_sizes[t->dtype];
    w->ssz = tensor__dtype_sizes[s->dtype];
    w->ib = tensor__data(index);
    w->tb = tensor__data(t);
    w->sb = tensor__data(s);
    w->nd = w->gi.ndim;
    w->row_len = w->gi.shape[w->nd - 1];
    w->rows = w->row_len ? tensor__numel_of(index->ndim, index->shape) / w->row_len : 0;
}

/* Reads index value k at element j of the current row and checks it against size; -1 on error. */
static int tensor__scatter_index(tensor__call *c, const char *ip, tensor_dtype idt, int64_t size, int dim, int64_t *k) {
    *k = idt == TENSOR_I64 ? *(const int64_t *)(const void *)ip : (int64_t)*(const int32_t *)(const void *)ip;
    if (*k >= 0 && *k < size) return 0;
    tensor__fail(c->fn, "index %lld is out of bounds for dim %d with size %lld", (long long)*k, dim, (long long)size);
    return -1;
}

/* out[idx] = t[idx with idx[dim] = index[idx]]. out: index's shape (contiguous). ip[0] = dim. */
static int tensor__cpu_gather(tensor__call *c) {
    tensor *t = c->in[0], *index = c->in[1], *o = c->out;
    int dim = (int)c->ip[0];
    tensor__scatter_walk w;
    tensor__scatter_walk_init(&w, index, t, o);
    if (!w.rows) return 0; /* an empty index: its shape was not checked against t's */
    int last = w.nd - 1;
    int64_t size = w.gt.shape[dim], tdim = w.gt.strides[dim] * (int64_t)w.tsz;
    int64_t il = w.gi.strides[last] * (int64_t)w.isz, tl = last == dim ? 0 : w.gt.strides[last] * (int64_t)w.tsz;
    int64_t idx[TENSOR_MAX_DIMS] = {0};
    char *out = w.sb;
    for (int64_t r = 0; r < w.rows; r++) {
        int64_t io = 0, to = 0;
        for (int d = 0; d < last; d++) {
            io += idx[d] * w.gi.strides[d];
            if (d != dim) to += idx[d] * w.gt.strides[d];
        }
        const char *ip = w.ib + io * (int64_t)w.isz;
        const char *tp = w.tb + to * (int64_t)w.tsz;
        for (int64_t j = 0; j < w.row_len; j++, ip += il, tp += tl, out += w.tsz) {
            int64_t k;
            if (tensor__scatter_index(c, ip, index->dtype, size, dim, &k)) return 1;
            tensor__copy_elem(out, tp + k * tdim, w.tsz);
        }
        tensor__next_index(last, w.gi.shape, idx);
    }
    return 0;
}

TENSOR_API tensor *tensor_gather(tensor *t, int dim, tensor *index) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_gather);
    TENSOR__CHECK_ARG(c.fn, t);
    TENSOR__CHECK_ARG(c.fn, index);
    tensor *ins[2] = {t, index};
    if (!tensor__same_device(c.fn, 2, ins)) return NULL;
    int d = tensor__wrap_dim(c.fn, dim, t->ndim ? t->ndim : 1);
    if (d < 0 || !tensor__check_index_dtype(c.fn, index)) return NULL;
    if (tensor__numel_of(index->ndim, index->shape) > 0 && !tensor__check_scatter_shapes(c.fn, t, d, index, NULL)) return NULL;
    c.n_in = 2;
    c.in[0] = t;
    c.in[1] = index;
    c.ip[0] = d;
    c.out = tensor__new(c.fn, index->ndim, index->shape, t->dtype, t->storage->device);
    return c.out ? tensor__dispatch(&c) : NULL;
}

/* out = t, then out[idx with idx[dim] = index[idx]] += src[idx] for every idx of index (in
   row-major order, each sum rounded to the dtype as PyTorch's CPU loop does). ip[0] = dim. */
static int tensor__cpu_scatter_add(tensor__call *c) {
    tensor *index = c->in[1], *src = c->in[2], *o = c->out;
    int dim = (int)c->ip[0];
    tensor__copy_into(o, c->in[0]);
    tensor__scatter_walk w;
    tensor__scatter_walk_init(&w, index, o, src);
    if (!w.rows) return 0; /* an empty index: its shape was not checked against src's */
    int last = w.nd - 1;
    tensor_dtype dt = o->dtype;
    int64_t size = w.gt.shape[dim], tdim = w.gt.strides[dim] * (int64_t)w.tsz;
    int64_t il = w.gi.strides[last] * (int64_t)w.isz, tl = last == dim ? 0 : w.gt.strides[last] * (int64_t)w.tsz;
    int64_t sl = w.gs.strides[last] * (int64_t)w.ssz;
    int64_t idx[TENSOR_MAX_DIMS] = {0};
    for (int64_t r = 0; r < w.rows; r++) {
        int64_t io = 0, to = 0, so = 0;
        for (int d = 0; d < last; d++) {
            io += idx[d] * w.gi.strides[d];
            so += idx[d] * w.gs.strides[d];
            if (d != dim) to += idx[d] * w.gt.strides[d];
        }
        const char *ip = w.ib + io * (int64_t)w.isz, *sp = w.sb + so * (int64_t)w.ssz;
        char *tp = w.tb + to * (int64_t)w.tsz;
        for (int64_t j = 0; j < w.row_len; j++, ip += il, tp += tl, sp += sl) {
            int64_t k;
            if (tensor__scatter_index(c, ip, index->dtype, size, dim, &k)) return 1;
            char *q = tp + k * tdim;
            switch (dt) {
            case TENSOR_F32: *(float *)(void *)q += *(const float *)(const void *)sp; break;
            case TENSOR_F64: *(double *)(void *)q += *(const double *)(const void *)sp; break;
            case TENSOR_F16: case TENSOR_BF16: tensor__store_f64(q, dt, tensor__load_f64(q, dt) + tensor__load_f64(sp, dt)); break;
            case TENSOR_BOOL: *(uint8_t *)q = *(const uint8_t *)q || *(const uint8_t *)sp; break;
            default: tensor__store_i64(q, dt, (int64_t)((uint64_t)tensor__load_i64(q, dt) + (uint64_t)tensor__load_i64(sp, dt))); break;
            }
        }
        tensor__next_index(last, w.gi.shape, idx);
    }
    return 0;
}

/* The front-end of scatter_add, scatter and scatter_reduce (>>index): checks, then out = t with src
   combined at index; mode and include_self are read by the last two only (a scatter_reduce mode
   MEAN is not a kernel mode: its caller divides a sum). */
static tensor *tensor__scatter_call(tensor_op op, tensor *t, int dim, tensor *index, tensor *src, int mode, bool include_self) {
    tensor__call c;
    tensor__call_init(&c, op);
    TENSOR__CHECK_ARG(c.fn, t);
    TENSOR__CHECK_ARG(c.fn, index);
    TENSOR__CHECK_ARG(c.fn, src);
    tensor *ins[3] = {t, index, src};
    if (!tensor__same_device(c.fn, 3, ins)) return NULL;
    int d = tensor__wrap_dim(c.fn, dim, t->ndim ? t->ndim : 1);
    if (d < 0 || !tensor__check_index_dtype(c.fn, index)) return NULL;
    if (src->dtype != t->dtype) return tensor__fail(c.fn, "src dtype %s must equal the input dtype %s", tensor__dtype_names[src->dtype], tensor__dtype_names[t->dtype]);
    if (tensor__numel_of(index->ndim, index->shape) > 0 && !tensor__check_scatter_shapes(c.fn, t, d, index, src)) return NULL;
    c.n_in = 3;
    c.in[0] = t;
    c.in[1] = index;
    c.in[2] = src;
    c.ip[0] = d;
    c.ip[1] = mode;
    c.ip[2] = include_self;
    c.out = tensor__new_like(c.fn, t, t->dtype);
    return c.out ? tensor__dispatch(&c) : NULL;
}

TENSOR_API tensor *tensor_scatter_add(tensor *t, int dim, tensor *index, tensor *src) {
    return tensor__scatter_call(TENSOR_OP_scatter_add, t, dim, index, src, 0, true);
}

/* out: t's shape with dim's size = index's numel; slab p of out along dim = slab index[p] of t.
   ip[0] = dim. */
static int tensor__cpu_index_select(tensor__call *c) {
    tensor *t = c->in[0], *index = c->in[1], *o = c->out;
    int dim = (int)c->ip[0];
    int64_t n = tensor__numel_of(index->ndim, index->shape), size = t->ndim ? t->shape[dim] : 1;
    int64_t istride = index->ndim ? index->strides[0] : 0;
    size_t isz = tensor__dtype_sizes[index->dtype];
    for (int64_t p = 0; p < n; p++) { /* every index first: no partial work on a bad one */
        int64_t k = tensor__load_i64(tensor__data(index) + p * istride * (int64_t)isz, index->dtype);
        if (k < 0 || k >= size) { tensor__fail(c->fn, "index %lld is out of range for dim %d of size %lld", (long long)k, dim, (long long)size); return 1; }
    }
    if (tensor__numel_of(o->ndim, o->shape) == 0) return 0; /* [2^40, 0]: no block to copy */
    if (t->ndim > 0 && tensor__contiguous(t)) { /* blocks of the dims after dim are contiguous runs */
        size_t esz = tensor__dtype_sizes[t->dtype];
        int64_t outer = tensor__numel_of(dim, t->shape), inner = tensor__numel_of(t->ndim - dim - 1, t->shape + dim + 1);
        size_t block = (size_t)inner * esz;
        const char *src = tensor__data(t);
        char *dst = tensor__data(o);
        for (int64_t q = 0; q < outer; q++)
            for (int64_t p = 0; p < n; p++, dst += block) {
                int64_t k = tensor__load_i64(tensor__data(index) + p * istride * (int64_t)isz, index->dtype);
                memcpy(dst, src + (size_t)(q * size + k) * block, block);
            }
        return 0;
    }
    for (int64_t p = 0; p < n; p++) {
        int64_t k = tensor__load_i64(tensor__data(index) + p * istride * (int64_t)isz, index->dtype);
        if (t->ndim == 0) { tensor__copy_into(o, t); continue; }
        tensor from, to;
        tensor__window(&from, t);
        tensor__window(&to, o);
        from.offset += k * t->strides[dim];
        from.shape[dim] = 1;
        to.offset += p * o->strides[dim];
        to.shape[dim] = 1;
        if (tensor__numel_of(to.ndim, to.shape) > 0) tensor__copy_into(&to, &from);
    }
    return 0;
}

TENSOR_API tensor *tensor_index_select(tensor *t, int dim, tensor *index) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_index_select);
    TENSOR__CHECK_ARG(c.fn, t);
    TENSOR__CHECK_ARG(c.fn, index);
    tensor *ins[2] = {t, index};
    if (!tensor__same_device(c.fn, 2, ins)) return NULL;
    int d = tensor__wrap_dim(c.fn, dim, t->ndim ? t->ndim : 1);
    if (d < 0 || !tensor__check_index_dtype(c.fn, index)) return NULL;
    if (index->ndim > 1) return tensor__fail(c.fn, "index must be 0-dim or 1-D, got shape %s", tensor__shape_of(index));
    int64_t n = tensor__numel_of(index->ndim, index->shape);
    if (t->ndim == 0 && n != 1) return tensor__fail(c.fn, "index into a 0-dim tensor must have exactly 1 value, got %lld", (long long)n);
    int64_t shape[TENSOR_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++) shape[i] = t->shape[i];
    if (t->ndim) shape[d] = n;
    c.n_in = 2;
    c.in[0] = t;
    c.in[1] = index;
    c.ip[0] = d;
    c.out = tensor__new(c.fn, t->ndim, shape, t->dtype, t->storage->device);
    return c.out ? tensor__dispatch(&c) : NULL;
}

typedef struct { char elem[8]; size_t size; } tensor__masked_ctx;
static void tensor__masked_loop(char **p, const int64_t *s, int64_t n, void *ctx) {
    const tensor__masked_ctx *k = (const tensor__masked_ctx *)ctx;
    for (int64_t i = 0; i < n; i++)
        if (*(const uint8_t *)(p[1] + i * s[1])) memcpy(p[0] + i * s[0], k->elem, k->size);
}
/* out = t, then value where mask (broadcast to out's shape) is true. p[0] = value. */
static int tensor__cpu_masked_fill(tensor__call *c) {
    tensor *o = c->out;
    tensor__copy_into(o, c->in[0]);
    tensor__masked_ctx k;
    k.size = tensor__dtype_sizes[o->dtype];
    tensor__store_f64(k.elem, o->dtype, c->p[0]);
    tensor *ops[2] = {o, c->in[1]};
    tensor__iter it;
    tensor__iter_init(&it, 2, ops, o->ndim, o->shape);
    tensor__iter_run(&it, tensor__masked_loop, &k);
    return 0;
}

TENSOR_API tensor *tensor_masked_fill(tensor *t, tensor *mask, double value) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_masked_fill);
    TENSOR__CHECK_ARG(c.fn, t);
    TENSOR__CHECK_ARG(c.fn, mask);
    tensor *ins[2] = {t, mask};
    if (!tensor__same_device(c.fn, 2, ins)) return NULL;
    if (mask->dtype != TENSOR_BOOL) return tensor__fail(c.fn, "mask must be a bool tensor, got %s", tensor__dtype_names[mask->dtype]);
    int nd;
    int64_t shape[TENSOR_MAX_DIMS];
    if (!tensor__broadcast_shapes(c.fn, t->ndim, t->shape, mask->ndim, mask->shape, &nd, shape)) return NULL;
    bool same = nd == t->ndim;
    for (int i = 0; same && i < nd; i++) same = shape[i] == t->shape[i];
    if (!tensor__check_value_fits(c.fn, value, t->dtype)) return NULL;
    if (!same) { /* a larger mask: t broadcasts up to the common shape, as torch.masked_fill does (a view; its gradient sums back) */
        tensor *te = tensor_expand(t, nd, shape);
        tensor *r = te ? tensor_masked_fill(te, mask, value) : NULL;
        tensor_free(te);
        return r;
    }
    c.n_in = 2;
    c.in[0] = t;
    c.in[1] = mask;
    c.p[0] = value;
    c.out = tensor__new_like(c.fn, t, t->dtype);
    return c.out ? tensor__dispatch(&c) : NULL;
}

/* out: [..., C] i64, zero but for out[..., indices[...]] = 1. ip[0] = C. The front-end has
   checked every index against [0, C). */
static int tensor__cpu_one_hot(tensor__call *c) {
    tensor *ind = c->in[0], *o = c->out;
    int64_t classes = c->ip[0], n = tensor__numel_of(ind->ndim, ind->shape), idx[TENSOR_MAX_DIMS] = {0};
    int64_t *out = (int64_t *)tensor__data(o);
    memset(out, 0, (size_t)(n * classes) * sizeof(int64_t));
    for (int64_t p = 0; p < n; p++) {
        int64_t k = tensor__load_i64((char *)ind->storage->data + tensor__offset_of(ind, idx) * (int64_t)tensor__dtype_sizes[ind->dtype], ind->dtype);
        if (k < 0 || k >= classes) { tensor__fail(c->fn, "class value %lld is out of range [0, %lld)", (long long)k, (long long)classes); return 1; }
        out[p * classes + k] = 1;
        tensor__next_index(ind->ndim, ind->shape, idx);
    }
    return 0;
}

TENSOR_API tensor *tensor_one_hot(tensor *indices, int64_t num_classes) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_one_hot);
    TENSOR__CHECK_ARG(c.fn, indices);
    if (!tensor__is_int(indices->dtype)) return tensor__fail(c.fn, "indices must be an integer tensor, got %s", tensor__dtype_names[indices->dtype]);
    if (indices->ndim == TENSOR_MAX_DIMS) return tensor__fail(c.fn, "indices of shape %s already have the maximum of %d dims", tensor__shape_of(indices), TENSOR_MAX_DIMS);
    if (num_classes < -1) return tensor__fail(c.fn, "num_classes must be -1 or non-negative, got %lld", (long long)num_classes);
    int64_t n = tensor__numel_of(indices->ndim, indices->shape), idx[TENSOR_MAX_DIMS] = {0}, lo = 0, hi = -1;
    if (n == 0 && num_classes == -1) return tensor__fail(c.fn, "cannot infer the number of classes from an empty tensor");
    tensor_device dev = indices->storage->device;
    if (dev != TENSOR_CPU && n > 0) { /* the range from the device's reductions (two values come back) */
        tensor *mn = tensor_min_all(indices), *mx = tensor_max_all(indices);
        bool ok = tensor__item_i64(mn, &lo) && tensor__item_i64(mx, &hi);
        tensor_free(mn);
        tensor_free(mx);
        if (!ok) return NULL;
    }
    for (int64_t p = 0; p < n && dev == TENSOR_CPU; p++) { /* the range of the values decides the output's shape */
        int64_t k = tensor__load_i64((char *)indices->storage->data + tensor__offset_of(indices, idx) * (int64_t)tensor__dtype_sizes[indices->dtype], indices->dtype);
        if (p == 0 || k < lo) lo = k;
        if (p == 0 || k > hi) hi = k;
        tensor__next_index(indices->ndim, indices->shape, idx);
    }
    if (n > 0 && lo < 0) return tensor__fail(c.fn, "class values must be non-negative, got %lld", (long long)lo);
    if (num_classes == -1 && hi == INT64_MAX) return tensor__fail(c.fn, "class value %lld gives too many classes", (long long)hi);
    if (num_classes == -1) num_classes = hi + 1;
    else if (n > 0 && hi >= num_classes) return tensor__fail(c.fn, "class value %lld must be smaller than num_classes %lld", (long long)hi, (long long)num_classes);
    int64_t shape[TENSOR_MAX_DIMS];
    for (int i = 0; i < indices->ndim; i++) shape[i] = indices->shape[i];
    shape[indices->ndim] = num_classes;
    if (dev != TENSOR_CPU) { /* composed on the device: indices[..., None] == arange(num_classes), as i64 */
        tensor *classes = tensor_arange(0, (double)num_classes, 1, TENSOR_I64), *dc = classes ? tensor_to_device(classes, dev) : NULL;
        tensor *col = tensor_unsqueeze(indices, indices->ndim), *hit = dc && col ? tensor_eq(col, dc) : NULL;
        tensor *r = hit ? tensor_to_dtype(hit, TENSOR_I64) : NULL;
        tensor_free(hit);
        tensor_free(col);
        tensor_free(dc);
        tensor_free(classes);
        return r;
    }
    c.n_in = 1;
    c.in[0] = indices;
    c.ip[0] = num_classes;
    c.out = tensor__new(c.fn, indices->ndim + 1, shape, TENSOR_I64, TENSOR_CPU);
    return c.out ? tensor__dispatch(&c) : NULL;
}
