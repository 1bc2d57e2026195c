// >>construct ----------------------------------------------------------------------------------
/* Shape and construction ops that PyTorch users reach for, nearly all written with the ops above
   (COMPOSITE in ops.def: the views and copies they are made of record the autograd graph and run
   on any device). Three are views of their own (VIEW): as_strided, unfold and diagonal; their
   calls record: as_strided: ip[0..n_dims) the sizes, ip[8..8+n_dims) the strides, p[0] the
   storage offset minus the input's; unfold: ip[0] dim, ip[1] size, ip[2] step; diagonal: ip[0]
   offset, ip[1] dim1, ip[2] dim2 (wrapped). Their derivative (tensor_autograd.h) scatters the
   gradient back through tensor__scatter_positions: the same view taken of the positions
   0..numel-1 says where each element of the view came from. The helpers that return several
   tensors (chunk, tensor_split, unbind, broadcast_tensors, meshgrid) return views recorded by
   the view ops they are made of (slice, select, expand, reshape). */

static bool tensor__grad_on(void); /* >>autograd: grad mode of this thread */

/* The flat positions 0..numel-1 (i64, CPU) in a contiguous tensor of shape. */
static tensor *tensor__positions(int ndim, const int64_t *shape) {
    int64_t n = tensor__numel_of(ndim, shape);
    tensor *r = tensor_arange(0, (double)n, 1, TENSOR_I64);
    tensor *p = r ? tensor_reshape(r, ndim, shape) : NULL;
    tensor_free(r);
    return p;
}

/* Zeros of shape (src's dtype and device) with src added at the flat positions idx (an integer
   tensor of src's shape): written with scatter_add, so it is differentiable in src. */
static tensor *tensor__scatter_positions(const char *fn, int ndim, const int64_t *shape, tensor *idx, tensor *src) {
    if (!idx || !src) return NULL;
    int64_t m = tensor__numel_of(src->ndim, src->shape), total = tensor__numel_of(ndim, shape);
    tensor_device dev = src->storage->device;
    tensor *fi = tensor_reshape(idx, 1, &m);
    tensor *di = fi && dev != fi->storage->device ? tensor_to_device(fi, dev) : fi;
    tensor *fs = tensor_reshape(src, 1, &m);
    tensor *z = tensor__full_on(1, &total, 0, src->dtype, dev);
    tensor *s = di && fs && z ? tensor_scatter_add(z, 0, di, fs) : NULL;
    tensor *r = s ? tensor_reshape(s, ndim, shape) : NULL;
    if (!r && !tensor__error_set) tensor__fail(fn, "out of memory");
    if (di != fi) tensor_free(di);
    tensor_free(fi);
    tensor_free(fs);
    tensor_free(z);
    tensor_free(s);
    return r;
}

/* ---- views of their own ---- */

TENSOR_API tensor *tensor_as_strided(tensor *t, int ndim, const int64_t *size, const int64_t *stride, int64_t storage_offset) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_as_strided);
    TENSOR__CHECK_ARG(c.fn, t);
    if (ndim < 0 || ndim > TENSOR_MAX_DIMS) return tensor__fail(c.fn, "ndim %d is out of range [0, %d]", ndim, TENSOR_MAX_DIMS);
    if (ndim > 0 && (!size || !stride)) return tensor__fail(c.fn, "size or stride is NULL with ndim %d", ndim);
    int64_t off = storage_offset < 0 ? t->offset : storage_offset, last = off, numel = 1;
    for (int i = 0; i < ndim; i++) {
        if (size[i] < 0) return tensor__fail(c.fn, "negative size %lld at dim %d", (long long)size[i], i);
        if (stride[i] < 0) return tensor__fail(c.fn, "negative stride %lld at dim %d is not supported", (long long)stride[i], i);
        if (!tensor__size_mul(numel, size[i], &numel)) return tensor__fail(c.fn, "the sizes give too many elements");
    }
    if (tensor__check_shape(c.fn, ndim, size) < 0) return NULL;
    size_t esz = tensor__dtype_sizes[t->dtype];
    int64_t cap = (int64_t)(t->storage->nbytes / esz);
    if (off > TENSOR__MAX_NUMEL) return tensor__fail(c.fn, "storage offset %lld is too large", (long long)off);
    for (int i = 0; numel > 0 && i < ndim; i++) {
        int64_t span;
        if (stride[i] > TENSOR__MAX_NUMEL || !tensor__size_mul(size[i] - 1, stride[i], &span) || !tensor__size_add(last, span, &last))
            return tensor__fail(c.fn, "size and stride reach past any storage");
    }
    if (numel > 0 && last >= cap) {
        char bs[160], bt[160];
        return tensor__fail(c.fn, "a view of size %s, stride %s and storage offset %lld needs element %lld, past the %lld elements of the storage",
                            tensor__shape_str(bs, sizeof bs, ndim, size), tensor__shape_str(bt, sizeof bt, ndim, stride), (long long)off, (long long)last, (long long)cap);
    }
    bool records = tensor__grad_on() && t->requires_grad;
    if (records) { /* the derivative maps storage positions back to t's elements */
        int64_t lo = t->offset, hi = t->offset + tensor__numel_of(t->ndim, t->shape);
        if (!tensor__contiguous(t)) return tensor__fail(c.fn, "the gradient is only defined for a contiguous input; call tensor_contiguous first");
        if (numel > 0 && (off < lo || last >= hi))
            return tensor__fail(c.fn, "the view reaches storage outside the input's elements, where no gradient can go");
    }
    c.n_dims = ndim;
    for (int i = 0; i < ndim; i++) { c.ip[i] = size[i]; c.ip[8 + i] = stride[i]; }
    c.p[0] = (double)(off - t->offset);
    return tensor__make_view(&c, t, ndim, size, stride, off);
}

TENSOR_API tensor *tensor_unfold(tensor *t, int dim, int64_t size, int64_t step) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_unfold);
    TENSOR__CHECK_ARG(c.fn, t);
    int d = tensor__wrap_dim(c.fn, dim, t->ndim ? t->ndim : 1);
    if (d < 0) return NULL;
    if (t->ndim == TENSOR_MAX_DIMS) return tensor__fail(c.fn, "tensor of shape %s already has the maximum of %d dims", tensor__shape_of(t), TENSOR_MAX_DIMS);
    int64_t len = t->ndim ? t->shape[d] : 1, st_d = t->ndim ? t->strides[d] : 1;
    if (size < 0) return tensor__fail(c.fn, "size is %lld but must be >= 0", (long long)size);
    if (size > len) return tensor__fail(c.fn, "maximum size for dim %d is %lld but size is %lld", d, (long long)len, (long long)size);
    if (step <= 0) return tensor__fail(c.fn, "step is %lld but must be > 0", (long long)step);
    int64_t sh[TENSOR_MAX_DIMS] = {0}, st[TENSOR_MAX_DIMS] = {0};
    int n = t->ndim ? t->ndim : 0;
    for (int i = 0; i < n; i++) { sh[i] = t->shape[i]; st[i] = t->strides[i]; }
    int64_t windows = (len - size) / step + 1;
    if (n) {
        sh[d] = windows;
        /* step <= len whenever there are two windows; otherwise the stride never matters */
        int64_t as = st_d < 0 ? -st_d : st_d;
        st[d] = windows > 1 || as <= TENSOR__MAX_NUMEL / step ? st_d * step : st_d;
    }
    sh[n] = size;
    st[n] = st_d;
    c.ip[0] = d;
    c.ip[1] = size;
    c.ip[2] = step;
    return tensor__make_view(&c, t, n + 1, sh, st, t->offset);
}

/* The length of the diagonal `offset` of a [rows, cols] plane. */
static int64_t tensor__diag_len(int64_t rows, int64_t cols, int64_t offset) {
    if (offset >= 0) return offset >= cols ? 0 : (rows < cols - offset ? rows : cols - offset);
    return offset <= -rows ? 0 : (rows + offset < cols ? rows + offset : cols);
}

TENSOR_API tensor *tensor_diagonal(tensor *t, int64_t offset, int dim1, int dim2) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_diagonal);
    TENSOR__CHECK_ARG(c.fn, t);
    if (t->ndim < 2) return tensor__fail(c.fn, "needs at least 2 dims, got shape %s", tensor__shape_of(t));
    int d1 = tensor__wrap_dim(c.fn, dim1, t->ndim);
    if (d1 < 0) return NULL;
    int d2 = tensor__wrap_dim(c.fn, dim2, t->ndim);
    if (d2 < 0) return NULL;
    if (d1 == d2) return tensor__fail(c.fn, "diagonal dimensions cannot be identical %d, %d", dim1, dim2);
    int64_t len = tensor__diag_len(t->shape[d1], t->shape[d2], offset), off = t->offset;
    if (len > 0) off += offset >= 0 ? offset * t->strides[d2] : -offset * t->strides[d1];
    int64_t sh[TENSOR_MAX_DIMS] = {0}, st[TENSOR_MAX_DIMS] = {0};
    int n = 0;
    for (int i = 0; i < t->ndim; i++) {
        if (i == d1 || i == d2) continue;
        sh[n] = t->shape[i];
        st[n++] = t->strides[i];
    }
    sh[n] = len;
    st[n++] = t->strides[d1] + t->strides[d2];
    c.ip[0] = offset;
    c.ip[1] = d1;
    c.ip[2] = d2;
    return tensor__make_view(&c, t, n, sh, st, off);
}

/* ---- views made of other views ---- */

static tensor *tensor__movedim(const char *fn, tensor *t, int n, const int *source, const int *destination) {
    TENSOR__CHECK_ARG(fn, t);
    int nd = t->ndim;
    if (n < 0 || n > (nd ? nd : 1)) return tensor__fail(fn, "%d dims to move but the tensor has %d dims", n, nd);
    if (n > 0 && (!source || !destination)) return tensor__fail(fn, "source or destination is NULL with n %d", n);
    int src[TENSOR_MAX_DIMS], dst[TENSOR_MAX_DIMS], order[TENSOR_MAX_DIMS];
    bool src_used[TENSOR_MAX_DIMS] = {false}, dst_used[TENSOR_MAX_DIMS] = {false};
    for (int i = 0; i < n; i++) {
        if ((src[i] = tensor__wrap_dim(fn, source[i], nd ? nd : 1)) < 0) return NULL;
        if ((dst[i] = tensor__wrap_dim(fn, destination[i], nd ? nd : 1)) < 0) return NULL;
        if (src_used[src[i]]) return tensor__fail(fn, "repeated dim %d in source", source[i]);
        if (dst_used[dst[i]]) return tensor__fail(fn, "repeated dim %d in destination", destination[i]);
        src_used[src[i]] = dst_used[dst[i]] = true;
    }
    if (nd == 0) return tensor__reshape(fn, t, 0, NULL); /* a recorded view */
    for (int i = 0; i < n; i++) order[dst[i]] = src[i];
    for (int i = 0, s = 0; i < nd; i++) { /* the other dims keep their order */
        if (dst_used[i]) continue;
        while (src_used[s]) s++;
        order[i] = s++;
    }
    return tensor_permute(t, nd, order);
}
TENSOR_API tensor *tensor_movedim(tensor *t, int source, int destination) { return tensor__movedim("tensor_movedim", t, 1, &source, &destination); }
TENSOR_API tensor *tensor_movedim_dims(tensor *t, int n, const int *source, const int *destination) {
    return tensor__movedim("tensor_movedim_dims", t, n, source, destination);
}

TENSOR_API tensor *tensor_swapaxes(tensor *t, int axis0, int axis1) {
    const char *fn = "tensor_swapaxes";
    TENSOR__CHECK_ARG(fn, t);
    int nd = t->ndim ? t->ndim : 1;
    if (tensor__wrap_dim(fn, axis0, nd) < 0 || tensor__wrap_dim(fn, axis1, nd) < 0) return NULL;
    return tensor_transpose(t, axis0, axis1);
}

TENSOR_API tensor *tensor_broadcast_to(tensor *t, int ndim, const int64_t *shape) { return tensor__expand("tensor_broadcast_to", t, ndim, shape); }

TENSOR_API tensor *tensor_expand_as(tensor *t, tensor *other) {
    TENSOR__CHECK_ARG("tensor_expand_as", t);
    TENSOR__CHECK_ARG("tensor_expand_as", other);
    return tensor__expand("tensor_expand_as", t, other->ndim, other->shape);
}

TENSOR_API tensor *tensor_reshape_as(tensor *t, tensor *other) {
    TENSOR__CHECK_ARG("tensor_reshape_as", t);
    TENSOR__CHECK_ARG("tensor_reshape_as", other);
    return tensor__reshape("tensor_reshape_as", t, other->ndim, other->shape);
}

TENSOR_API tensor *tensor_unflatten(tensor *t, int dim, int n, const int64_t *sizes) {
    const char *fn = "tensor_unflatten";
    TENSOR__CHECK_ARG(fn, t);
    if (t->ndim == 0) return tensor__fail(fn, "cannot unflatten a 0-dim tensor");
    int d = tensor__wrap_dim(fn, dim, t->ndim);
    if (d < 0) return NULL;
    if (n < 1) return tensor__fail(fn, "sizes must be non-empty, got n = %d", n);
    if (!sizes) return tensor__null_arg(fn, "sizes");
    if (t->ndim - 1 + n > TENSOR_MAX_DIMS) return tensor__fail(fn, "unflattening dim %d of shape %s into %d sizes gives more than %d dims", d, tensor__shape_of(t), n, TENSOR_MAX_DIMS);
    int64_t sh[TENSOR_MAX_DIMS], known = 1, size = t->shape[d];
    int infer = -1, k = 0;
    for (int i = 0; i < n; i++) {
        if (sizes[i] == -1) {
            if (infer >= 0) return tensor__fail(fn, "only one size can be -1");
            infer = i;
        } else if (sizes[i] < 0) return tensor__fail(fn, "invalid size %lld", (long long)sizes[i]);
        else if (!tensor__size_mul(known, sizes[i], &known)) return tensor__fail(fn, "sizes give too many elements");
    }
    int64_t inferred = infer >= 0 && known > 0 ? size / known : 0;
    if (infer >= 0 ? (known == 0 || size % known != 0) : known != size)
        return tensor__fail(fn, "sizes of %d entries (product %lld%s) don't multiply up to the size %lld of dim %d (shape %s)", n, (long long)known,
                            infer >= 0 ? " besides -1" : "", (long long)size, d, tensor__shape_of(t));
    for (int i = 0; i < d; i++) sh[k++] = t->shape[i];
    for (int i = 0; i < n; i++) sh[k++] = i == infer ? inferred : sizes[i];
    for (int i = d + 1; i < t->ndim; i++) sh[k++] = t->shape[i];
    return tensor__reshape(fn, t, k, sh);
}

TENSOR_API tensor *tensor_narrow(tensor *t, int dim, int64_t start, int64_t length) {
    const char *fn = "tensor_narrow";
    TENSOR__CHECK_ARG(fn, t);
    if (t->ndim == 0) return tensor__fail(fn, "cannot be applied to a 0-dim tensor");
    int d = tensor__wrap_dim(fn, dim, t->ndim);
    if (d < 0) return NULL;
    int64_t size = t->shape[d];
    if (start < -size || start > size)
        return tensor__fail(fn, "start %lld is out of range (expected to be in range of [%lld, %lld])", (long long)start, (long long)-size, (long long)size);
    if (start < 0) start += size;
    if (length < 0) return tensor__fail(fn, "length must be non-negative, got %lld", (long long)length);
    if (length > size - start)
        return tensor__fail(fn, "start (%lld) + length (%lld) exceeds dimension size (%lld)", (long long)start, (long long)length, (long long)size);
    return tensor_slice(t, d, start, start + length, 1);
}

/* t seen with at least k dims, as atleast_1d/2d/3d: 0-D -> [1]/[1, 1]/[1, 1, 1], 1-D [n] ->
   [1, n]/[1, n, 1], 2-D [m, n] -> [m, n, 1]. */
static tensor *tensor__atleast(const char *fn, tensor *t, int k) {
    TENSOR__CHECK_ARG(fn, t);
    int64_t sh[3] = {1, 1, 1};
    if (t->ndim >= k) return tensor__reshape(fn, t, t->ndim, t->shape); /* a recorded view */
    if (t->ndim == 1) sh[k == 1 ? 0 : 1] = t->shape[0];
    if (t->ndim == 2) { sh[0] = t->shape[0]; sh[1] = t->shape[1]; }
    return tensor__reshape(fn, t, k, sh);
}
TENSOR_API tensor *tensor_atleast_1d(tensor *t) { return tensor__atleast("tensor_atleast_1d", t, 1); }
TENSOR_API tensor *tensor_atleast_2d(tensor *t) { return tensor__atleast("tensor_atleast_2d", t, 2); }
TENSOR_API tensor *tensor_atleast_3d(tensor *t) { return tensor__atleast("tensor_atleast_3d", t, 3); }

/* ---- copies made of other ops ---- */

/* flip over several dims: one flip per dim (each a copy); no dims: a copy. */
static tensor *tensor__flip_dims(const char *fn, tensor *t, int n, const int *dims) {
    TENSOR__CHECK_ARG(fn, t);
    int nd = t->ndim ? t->ndim : 1, w[TENSOR_MAX_DIMS];
    if (n < 0 || n > nd) return tensor__fail(fn, "%d dims to flip but the tensor has %d dims", n, t->ndim);
    if (n > 0 && !dims) return tensor__null_arg(fn, "dims");
    for (int i = 0; i < n; i++) {
        if ((w[i] = tensor__wrap_dim(fn, dims[i], nd)) < 0) return NULL;
        for (int j = 0; j < i; j++) if (w[j] == w[i]) return tensor__fail(fn, "dim %d appears multiple times in the list of dims", w[i]);
    }
    if (n == 0) return tensor_clone(t);
    tensor *r = tensor_flip(t, w[0]);
    for (int i = 1; i < n && r; i++) {
        tensor *next = tensor_flip(r, w[i]);
        tensor_free(r);
        r = next;
    }
    return r;
}
TENSOR_API tensor *tensor_flip_dims(tensor *t, int n, const int *dims) { return tensor__flip_dims("tensor_flip_dims", t, n, dims); }
TENSOR_API tensor *tensor_fliplr(tensor *t) {
    TENSOR__CHECK_ARG("tensor_fliplr", t);
    if (t->ndim < 2) return tensor__fail("tensor_fliplr", "input must be >= 2-d, got shape %s", tensor__shape_of(t));
    return tensor_flip(t, 1);
}
TENSOR_API tensor *tensor_flipud(tensor *t) {
    TENSOR__CHECK_ARG("tensor_flipud", t);
    if (t->ndim < 1) return tensor__fail("tensor_flipud", "input must be >= 1-d, got a 0-dim tensor");
    return tensor_flip(t, 0);
}

/* t rolled by shift along dim d: the last `shift` entries then the others (two slices and a cat). */
static tensor *tensor__roll_one(tensor *t, int d, int64_t shift) {
    int64_t size = t->shape[d];
    if (size == 0) return tensor_clone(t);
    shift %= size;
    if (shift < 0) shift += size;
    if (shift == 0) return tensor_clone(t);
    tensor *parts[2] = {tensor_slice(t, d, size - shift, size, 1), tensor_slice(t, d, 0, size - shift, 1)};
    tensor *r = parts[0] && parts[1] ? tensor_cat(2, parts, d) : NULL;
    tensor_free(parts[0]);
    tensor_free(parts[1]);
    return r;
}
TENSOR_API tensor *tensor_roll(tensor *t, int n, const int64_t *shifts, const int *dims) {
    const char *fn = "tensor_roll";
    TENSOR__CHECK_ARG(fn, t);
    if (!shifts) return tensor__null_arg(fn, "shifts");
    bool had = tensor__error_set;
    if (!dims) { /* the flattened tensor, shape restored */
        if (n != 1) return tensor__fail(fn, "without dims, exactly one shift is expected, got %d", n);
        int64_t all = tensor__numel_of(t->ndim, t->shape); /* not -1: an empty tensor has no size to infer */
        tensor *f = tensor_reshape(t, 1, &all), *r = f ? tensor__roll_one(f, 0, shifts[0]) : NULL;
        tensor *out = r ? tensor_reshape(r, t->ndim, t->shape) : NULL;
        tensor_free(f);
        tensor_free(r);
        return out ? out : tensor__fail_as(fn, had);
    }
    if (n < 1 || n > TENSOR_MAX_DIMS) return tensor__fail(fn, "shifts and dims must align and be non-empty, got %d", n);
    if (t->ndim == 0) return tensor__fail(fn, "cannot roll a 0-dim tensor along a dim");
    int w[TENSOR_MAX_DIMS];
    for (int i = 0; i < n; i++) if ((w[i] = tensor__wrap_dim(fn, dims[i], t->ndim)) < 0) return NULL;
    tensor *r = tensor__roll_one(t, w[0], shifts[0]);
    for (int i = 1; i < n && r; i++) {
        tensor *next = tensor__roll_one(r, w[i], shifts[i]);
        tensor_free(r);
        r = next;
    }
    return r ? r : tensor__fail_as(fn, had);
}

TENSOR_API tensor *tensor_rot90(tensor *t, int k, int dim0, int dim1) {
    const char *fn = "tensor_rot90";
    TENSOR__CHECK_ARG(fn, t);
    if (t->ndim < 2) return tensor__fail(fn, "expected total dims >= 2, got shape %s", tensor__shape_of(t));
    int d0 = tensor__wrap_dim(fn, dim0, t->ndim), d1 = d0 < 0 ? -1 : tensor__wrap_dim(fn, dim1, t->ndim);
    if (d0 < 0 || d1 < 0) return NULL;
    if (d0 == d1) return tensor__fail(fn, "expected the rotation dims to be different, got %d and %d", dim0, dim1);
    k %= 4;
    if (k < 0) k += 4;
    if (k == 0) return tensor_clone(t);
    if (k == 2) { int both[2] = {d0, d1}; return tensor__flip_dims(fn, t, 2, both); }
    tensor *f = tensor_flip(t, k == 1 ? d1 : d0);
    tensor *r = f ? tensor_transpose(f, d0, d1) : NULL;
    tensor_free(f);
    return r;
}

TENSOR_API tensor *tensor_tile(tensor *t, int n, const int64_t *reps) {
    const char *fn = "tensor_tile";
    TENSOR__CHECK_ARG(fn, t);
    if (n < 0 || n > TENSOR_MAX_DIMS) return tensor__fail(fn, "number of reps %d is out of range [0, %d]", n, TENSOR_MAX_DIMS);
    if (n > 0 && !reps) return tensor__null_arg(fn, "reps");
    int nd = n > t->ndim ? n : t->ndim, lead = nd - n;
    int64_t r[TENSOR_MAX_DIMS], numel = 1;
    for (int i = 0; i < nd; i++) {
        r[i] = i < lead ? 1 : reps[i - lead];
        if (r[i] < 0) return tensor__fail(fn, "negative rep %lld", (long long)r[i]);
        int64_t s = i < nd - t->ndim ? 1 : t->shape[i - (nd - t->ndim)], m;
        if (!tensor__size_mul(s, r[i], &m) || !tensor__size_mul(numel, m, &numel) || numel > TENSOR__MAX_NUMEL)
            return tensor__fail(fn, "reps of shape %s give too many elements", tensor__shape_of(t));
    }
    return tensor_repeat(t, nd, r);
}

TENSOR_API tensor *tensor_repeat_interleave(tensor *t, int64_t repeats, const int *dim) {
    const char *fn = "tensor_repeat_interleave";
    TENSOR__CHECK_ARG(fn, t);
    if (repeats < 0) return tensor__fail(fn, "repeats can not be negative, got %lld", (long long)repeats);
    int d = 0;
    if (dim && (d = tensor__wrap_dim(fn, *dim, t->ndim ? t->ndim : 1)) < 0) return NULL;
    if (dim && t->ndim == TENSOR_MAX_DIMS) return tensor__fail(fn, "tensor of shape %s already has the maximum of %d dims", tensor__shape_of(t), TENSOR_MAX_DIMS);
    int64_t n, numel = tensor__numel_of(t->ndim, t->shape), all = numel;
    if (!tensor__size_mul(numel, repeats, &n) || n > TENSOR__MAX_NUMEL) return tensor__fail(fn, "%lld repeats of shape %s give too many elements", (long long)repeats, tensor__shape_of(t));
    /* x: t, flattened when dim is NULL, 1-D when 0-dim; x.unsqueeze(d + 1).expand(..., repeats, ...) reshaped */
    tensor *x = !dim || t->ndim == 0 ? tensor_reshape(t, 1, &all) : tensor__alias(fn, t);
    tensor *u = x ? tensor_unsqueeze(x, d + 1) : NULL, *e = NULL, *r = NULL;
    if (u) {
        int64_t sh[TENSOR_MAX_DIMS];
        for (int i = 0; i < u->ndim; i++) sh[i] = i == d + 1 ? repeats : u->shape[i];
        e = tensor_expand(u, u->ndim, sh);
        int64_t rs[TENSOR_MAX_DIMS];
        for (int i = 0; i < x->ndim; i++) rs[i] = i == d ? x->shape[i] * repeats : x->shape[i];
        r = e ? tensor_reshape(e, x->ndim, rs) : NULL;
    }
    tensor_free(x);
    tensor_free(u);
    tensor_free(e);
    return r;
}

/* diag of a 1-D v: the [n + |k|, n + |k|] matrix with v on diagonal k. */
static tensor *tensor__diag_embed(const char *fn, tensor *t, int64_t offset, int dim1, int dim2) {
    TENSOR__CHECK_ARG(fn, t);
    if (t->ndim < 1) return tensor__fail(fn, "needs at least 1 dim, got a 0-dim tensor");
    if (t->ndim == TENSOR_MAX_DIMS) return tensor__fail(fn, "tensor of shape %s already has the maximum of %d dims", tensor__shape_of(t), TENSOR_MAX_DIMS);
    int nd = t->ndim + 1, d1 = tensor__wrap_dim(fn, dim1, nd), d2 = d1 < 0 ? -1 : tensor__wrap_dim(fn, dim2, nd);
    if (d1 < 0 || d2 < 0) return NULL;
    if (d1 == d2) return tensor__fail(fn, "diagonal dimensions cannot be identical %d, %d", dim1, dim2);
    int64_t n = t->shape[t->ndim - 1], ao = offset < 0 ? -offset : offset, size;
    if (offset < -TENSOR__MAX_NUMEL || offset > TENSOR__MAX_NUMEL || !tensor__size_add(n, ao, &size)) return tensor__fail(fn, "offset %lld is too large", (long long)offset);
    int64_t sh[TENSOR_MAX_DIMS];
    for (int i = 0, j = 0; i < nd; i++) sh[i] = i == d1 || i == d2 ? size : t->shape[j++];
    bool had = tensor__error_set;
    if (tensor__check_shape(fn, nd, sh) < 0) return NULL;
    tensor *pos = tensor__positions(nd, sh);
    tensor *idx = pos ? tensor_diagonal(pos, offset, d1, d2) : NULL;
    tensor *r = tensor__scatter_positions(fn, nd, sh, idx, t);
    tensor_free(pos);
    tensor_free(idx);
    return r ? r : tensor__fail_as(fn, had);
}
TENSOR_API tensor *tensor_diag_embed(tensor *t, int64_t offset, int dim1, int dim2) { return tensor__diag_embed("tensor_diag_embed", t, offset, dim1, dim2); }

static tensor *tensor__diag(const char *fn, tensor *t, int64_t diagonal) {
    TENSOR__CHECK_ARG(fn, t);
    if (t->ndim == 1) return tensor__diag_embed(fn, t, diagonal, 0, 1);
    if (t->ndim != 2) return tensor__fail(fn, "expects a matrix or a vector, got shape %s", tensor__shape_of(t));
    tensor *v = tensor_diagonal(t, diagonal, 0, 1);
    tensor *r = v ? tensor_clone(v) : NULL;
    tensor_free(v);
    return r;
}
TENSOR_API tensor *tensor_diag(tensor *t, int64_t diagonal) { return tensor__diag("tensor_diag", t, diagonal); }
TENSOR_API tensor *tensor_diagflat(tensor *t, int64_t offset) {
    const char *fn = "tensor_diagflat";
    TENSOR__CHECK_ARG(fn, t);
    int64_t all = tensor__numel_of(t->ndim, t->shape);
    tensor *f = tensor_reshape(t, 1, &all), *r = f ? tensor__diag(fn, f, offset) : NULL;
    tensor_free(f);
    return r;
}

/* The list ops: each input seen through `prep` (0: atleast_1d, 1: atleast_2d, 2: atleast_3d,
   3: column_stack's [N, 1] for 0-D and 1-D), then concatenated along dim (-1: hstack's rule, dim 0
   when the first input is 1-D after prep, else 1). */
static tensor *tensor__stack_list(const char *fn, int n, tensor *const *ts, int prep, int dim) {
    if (n < 1) return tensor__fail(fn, "expects a non-empty list of tensors, got n = %d", n);
    if (!ts) return tensor__null_arg(fn, "ts");
    for (int i = 0; i < n; i++)
        if (!ts[i]) {
            if (!tensor__error_set) tensor__fail(fn, "tensor %d of the list is NULL", i);
            return NULL;
        }
    tensor **v = (tensor **)TENSOR__MALLOC(sizeof(tensor *) * (size_t)n);
    if (!v) return tensor__fail(fn, "out of memory");
    bool had = tensor__error_set;
    int made = 0;
    for (; made < n; made++) {
        tensor *t = ts[made];
        if (prep == 3) {
            int64_t col[2] = {tensor__numel_of(t->ndim, t->shape), 1};
            v[made] = t->ndim <= 1 ? tensor__reshape(fn, t, 2, col) : tensor__alias(fn, t);
        } else v[made] = tensor__atleast(fn, t, prep + 1);
        if (!v[made]) break;
    }
    tensor *r = NULL;
    if (made == n) r = tensor_cat(n, v, dim >= 0 ? dim : v[0]->ndim == 1 ? 0 : 1);
    for (int i = 0; i < made; i++) tensor_free(v[i]);
    TENSOR_FREE(v);
    return r ? r : tensor__fail_as(fn, had);
}
TENSOR_API tensor *tensor_hstack(int n, tensor *const *ts) { return tensor__stack_list("tensor_hstack", n, ts, 0, -1); }
TENSOR_API tensor *tensor_vstack(int n, tensor *const *ts) { return tensor__stack_list("tensor_vstack", n, ts, 1, 0); }
TENSOR_API tensor *tensor_dstack(int n, tensor *const *ts) { return tensor__stack_list("tensor_dstack", n, ts, 2, 2); }
TENSOR_API tensor *tensor_column_stack(int n, tensor *const *ts) { return tensor__stack_list("tensor_column_stack", n, ts, 3, 1); }

/* Checks a list argument: n in [lo, TENSOR_MAX_DIMS] tensors, none NULL. */
static bool tensor__check_list(const char *fn, int n, tensor *const *ts, int lo) {
    if (n < lo || n > TENSOR_MAX_DIMS) { tensor__fail(fn, "expects %d to %d tensors, got n = %d", lo, TENSOR_MAX_DIMS, n); return false; }
    if (n > 0 && !ts) { tensor__null_arg(fn, "ts"); return false; }
    for (int i = 0; i < n; i++)
        if (!ts[i]) {
            if (!tensor__error_set) tensor__fail(fn, "tensor %d of the list is NULL", i);
            return false;
        }
    return true;
}

/* meshgrid's front-end and cartesian_prod's core: out[i] views of ts[i] expanded to the grid. */
static int tensor__meshgrid(const char *fn, int n, tensor *const *ts, const char *indexing, tensor **out) {
    if (!tensor__check_list(fn, n, ts, 0)) return -1;
    if (n > 0 && !out) { tensor__null_arg(fn, "out"); return -1; }
    bool xy = false;
    if (indexing && strcmp(indexing, "ij") != 0) {
        if (strcmp(indexing, "xy") != 0) { tensor__fail(fn, "indexing must be \"ij\" or \"xy\", got \"%s\"", indexing); return -1; }
        xy = true;
    }
    int64_t grid[TENSOR_MAX_DIMS] = {0};
    for (int i = 0; i < n; i++) {
        if (ts[i]->ndim > 1) { tensor__fail(fn, "expects 0-D or 1-D tensors, got shape %s at position %d", tensor__shape_of(ts[i]), i); return -1; }
        if (ts[i]->dtype != ts[0]->dtype) { tensor__fail(fn, "expects all tensors to have the same dtype, got %s and %s", tensor__dtype_names[ts[0]->dtype], tensor__dtype_names[ts[i]->dtype]); return -1; }
        grid[i] = tensor__numel_of(ts[i]->ndim, ts[i]->shape);
    }
    if (n > 0 && !tensor__same_device(fn, n, ts)) return -1;
    int swap = xy && n >= 2; /* "xy": the first two inputs' dims trade places */
    if (swap) { int64_t g = grid[0]; grid[0] = grid[1]; grid[1] = g; }
    if (tensor__check_shape(fn, n, grid) < 0) return -1;
    for (int i = 0; i < n; i++) {
        int at = swap && i < 2 ? 1 - i : i;
        int64_t sh[TENSOR_MAX_DIMS];
        for (int k = 0; k < n; k++) sh[k] = k == at ? grid[k] : 1;
        tensor *r = tensor__reshape(fn, ts[i], n, sh);
        out[i] = r ? tensor__expand(fn, r, n, grid) : NULL;
        tensor_free(r);
        if (!out[i]) {
            for (int k = 0; k < i; k++) { tensor_free(out[k]); out[k] = NULL; }
            return -1;
        }
    }
    return n;
}
TENSOR_API int tensor_meshgrid(int n, tensor *const *ts, const char *indexing, tensor **out) { return tensor__meshgrid("tensor_meshgrid", n, ts, indexing, out); }

TENSOR_API tensor *tensor_cartesian_prod(int n, tensor *const *ts) {
    const char *fn = "tensor_cartesian_prod";
    if (!tensor__check_list(fn, n, ts, 1)) return NULL;
    for (int i = 0; i < n; i++)
        if (ts[i]->ndim != 1) return tensor__fail(fn, "expects 1-D tensors, got shape %s at position %d", tensor__shape_of(ts[i]), i);
    if (n == 1) return tensor__alias(fn, ts[0]); /* PyTorch returns the input itself */
    tensor *grid[TENSOR_MAX_DIMS] = {NULL}, *flat[TENSOR_MAX_DIMS] = {NULL};
    bool had = tensor__error_set;
    if (tensor__meshgrid(fn, n, ts, "ij", grid) < 0) return NULL;
    int made = 0;
    int64_t all = tensor__numel_of(grid[0]->ndim, grid[0]->shape);
    for (; made < n; made++) if (!(flat[made] = tensor_reshape(grid[made], 1, &all))) break;
    tensor *r = made == n ? tensor_stack(n, flat, 1) : NULL;
    for (int i = 0; i < n; i++) tensor_free(grid[i]);
    for (int i = 0; i < made; i++) tensor_free(flat[i]);
    return r ? r : tensor__fail_as(fn, had);
}

TENSOR_API tensor *tensor_block_diag(int n, tensor *const *ts) {
    const char *fn = "tensor_block_diag";
    if (n < 1) return tensor__fail(fn, "expects a non-empty list of tensors, got n = %d", n);
    if (!ts) return tensor__null_arg(fn, "ts");
    int64_t cols = 0;
    for (int i = 0; i < n; i++) {
        if (!ts[i]) {
            if (!tensor__error_set) tensor__fail(fn, "tensor %d of the list is NULL", i);
            return NULL;
        }
        if (ts[i]->ndim > 2) return tensor__fail(fn, "input tensors must have 2 or fewer dims, got shape %s at position %d", tensor__shape_of(ts[i]), i);
        int64_t c = ts[i]->ndim == 2 ? ts[i]->shape[1] : ts[i]->ndim == 1 ? ts[i]->shape[0] : 1;
        if (!tensor__size_add(cols, c, &cols)) return tensor__fail(fn, "the blocks have too many columns");
    }
    if (!tensor__same_device(fn, n, ts)) return NULL;
    tensor_dtype dt = tensor__result_type(n, ts);
    tensor **rows = (tensor **)TENSOR__MALLOC(sizeof(tensor *) * (size_t)n);
    if (!rows) return tensor__fail(fn, "out of memory");
    bool had = tensor__error_set;
    int made = 0;
    int64_t at = 0;
    for (; made < n; made++) { /* each block as 2-D, in its dtype, padded with zeros to the full width */
        tensor *t = ts[made];
        int64_t sh[2] = {t->ndim == 2 ? t->shape[0] : 1, t->ndim == 2 ? t->shape[1] : t->ndim == 1 ? t->shape[0] : 1};
        tensor *m = tensor__reshape(fn, t, 2, sh), *c = m ? tensor_to_dtype(m, dt) : NULL;
        int64_t pads[2] = {at, cols - at - sh[1]};
        rows[made] = c ? tensor_pad(c, 2, pads, 0) : NULL;
        tensor_free(m);
        tensor_free(c);
        if (!rows[made]) break;
        at += sh[1];
    }
    tensor *r = made == n ? tensor_cat(n, rows, 0) : NULL;
    for (int i = 0; i < made; i++) tensor_free(rows[i]);
    TENSOR_FREE(rows);
    return r ? r : tensor__fail_as(fn, had);
}

/* ---- several outputs: views ---- */

/* out[i] = t[bounds[2i] : bounds[2i+1]] along d (bounds within [0, size], end >= start), each
   recorded as a slice; count, or -1 with every out freed. */
static int tensor__pieces(const char *fn, tensor *t, int d, int64_t count, const int64_t *bounds, tensor **out) {
    for (int64_t i = 0; i < count; i++) {
        if (!(out[i] = tensor__piece(fn, t, d, bounds[2 * i], bounds[2 * i + 1]))) {
            for (int64_t k = 0; k < i; k++) { tensor_free(out[k]); out[k] = NULL; }
            return -1;
        }
    }
    return (int)count;
}

/* The checks every splitting helper makes: t and out given, t at least 1-D, dim wrapped (-1 on error). */
static int tensor__split_dim(const char *fn, tensor *t, int dim, tensor **out) {
    if (!t) { tensor__null_arg(fn, "t"); return -1; }
    if (!out) { tensor__null_arg(fn, "out"); return -1; }
    if (t->ndim == 0) { tensor__fail(fn, "expects at least a 1-dimensional tensor"); return -1; }
    return tensor__wrap_dim(fn, dim, t->ndim);
}
static bool tensor__check_count(const char *fn, int64_t count, int max_out) {
    if (count <= max_out) return true;
    tensor__fail(fn, "gives %lld tensors, more than max_out %d", (long long)count, max_out);
    return false;
}
/* pieces of the given lengths: bounds from a running sum (malloc'd by the caller's count) */
static int tensor__pieces_of(const char *fn, tensor *t, int d, int64_t count, int64_t base, int64_t extra, tensor **out) {
    int64_t *b = (int64_t *)TENSOR__MALLOC(sizeof(int64_t) * 2 * (size_t)(count ? count : 1));
    if (!b) { tensor__fail(fn, "out of memory"); return -1; }
    int64_t at = 0, size = t->shape[d];
    for (int64_t i = 0; i < count; i++) { /* `extra` pieces of base + 1, then pieces of base (the last clipped to size) */
        int64_t len = base + (i < extra ? 1 : 0);
        b[2 * i] = at < size ? at : size;
        at = size - at < len ? size : at + len;
        b[2 * i + 1] = at;
    }
    int r = tensor__pieces(fn, t, d, count, b, out);
    TENSOR_FREE(b);
    return r;
}

TENSOR_API int tensor_chunk(tensor *t, int chunks, int dim, tensor **out, int max_out) {
    const char *fn = "tensor_chunk";
    int d = tensor__split_dim(fn, t, dim, out);
    if (d < 0) return -1;
    if (chunks <= 0) { tensor__fail(fn, "chunks must be greater than 0, got %d", chunks); return -1; }
    int64_t size = t->shape[d], split = size / chunks + (size % chunks != 0);
    int64_t count = size == 0 ? chunks : 1 + (size - 1) / split; /* a size-0 dim gives `chunks` empty pieces */
    if (!tensor__check_count(fn, count, max_out)) return -1;
    return tensor__pieces_of(fn, t, d, count, split, 0, out);
}

TENSOR_API int tensor_tensor_split(tensor *t, int64_t sections, int dim, tensor **out, int max_out) {
    const char *fn = "tensor_tensor_split";
    int d = tensor__split_dim(fn, t, dim, out);
    if (d < 0) return -1;
    if (sections <= 0) { tensor__fail(fn, "number of sections must be larger than 0, got %lld", (long long)sections); return -1; }
    if (!tensor__check_count(fn, sections, max_out)) return -1;
    int64_t size = t->shape[d];
    return tensor__pieces_of(fn, t, d, sections, size / sections, size % sections, out);
}

TENSOR_API int tensor_tensor_split_indices(tensor *t, int n, const int64_t *indices, int dim, tensor **out, int max_out) {
    const char *fn = "tensor_tensor_split_indices";
    int d = tensor__split_dim(fn, t, dim, out);
    if (d < 0) return -1;
    if (n < 0) { tensor__fail(fn, "number of indices must be non-negative, got %d", n); return -1; }
    if (n > 0 && !indices) { tensor__null_arg(fn, "indices"); return -1; }
    if (!tensor__check_count(fn, (int64_t)n + 1, max_out)) return -1;
    int64_t *b = (int64_t *)TENSOR__MALLOC(sizeof(int64_t) * 2 * ((size_t)n + 1));
    if (!b) { tensor__fail(fn, "out of memory"); return -1; }
    int64_t size = t->shape[d];
    for (int i = 0; i <= n; i++) { /* t[indices[i-1] : indices[i]] with Python's slice rules */
        int64_t lo = i == 0 ? 0 : indices[i - 1], hi = i == n ? size : indices[i];
        if (lo < 0) lo = lo < -size ? 0 : lo + size;
        if (hi < 0) hi = hi < -size ? 0 : hi + size;
        if (lo > size) lo = size;
        if (hi > size) hi = size;
        b[2 * i] = lo;
        b[2 * i + 1] = hi < lo ? lo : hi;
    }
    int r = tensor__pieces(fn, t, d, (int64_t)n + 1, b, out);
    TENSOR_FREE(b);
    return r;
}

TENSOR_API int tensor_unbind(tensor *t, int dim, tensor **out, int max_out) {
    const char *fn = "tensor_unbind";
    int d = tensor__split_dim(fn, t, dim, out);
    if (d < 0) return -1;
    int64_t count = t->shape[d];
    if (!tensor__check_count(fn, count, max_out)) return -1;
    bool had = tensor__error_set;
    for (int64_t i = 0; i < count; i++)
        if (!(out[i] = tensor_select(t, d, i))) {
            for (int64_t k = 0; k < i; k++) { tensor_free(out[k]); out[k] = NULL; }
            tensor__fail_as(fn, had);
            return -1;
        }
    return (int)count;
}

TENSOR_API int tensor_broadcast_tensors(int n, tensor *const *ts, tensor **out) {
    const char *fn = "tensor_broadcast_tensors";
    if (n < 0) { tensor__fail(fn, "n must be non-negative, got %d", n); return -1; }
    if (n > 0 && !ts) { tensor__null_arg(fn, "ts"); return -1; }
    if (n > 0 && !out) { tensor__null_arg(fn, "out"); return -1; }
    int nd = 0;
    int64_t shape[TENSOR_MAX_DIMS] = {0};
    for (int i = 0; i < n; i++) {
        if (!ts[i]) {
            if (!tensor__error_set) tensor__fail(fn, "tensor %d of the list is NULL", i);
            return -1;
        }
        if (!tensor__broadcast_shapes(fn, nd, shape, ts[i]->ndim, ts[i]->shape, &nd, shape)) return -1;
    }
    for (int i = 0; i < n; i++)
        if (!(out[i] = tensor__expand(fn, ts[i], nd, shape))) {
            for (int k = 0; k < i; k++) { tensor_free(out[k]); out[k] = NULL; }
            return -1;
        }
    return n;
}

/* ---- construction ---- */

/* A tensor of t's shape, dtype and device made by `make` (on the CPU, then moved). */
static tensor *tensor__like(const char *fn, tensor *t, int kind, double value) {
    TENSOR__CHECK_ARG(fn, t);
    tensor_device dev = t->storage->device;
    if ((kind == 4 || kind == 5) && !tensor__is_float(t->dtype)) return tensor__fail(fn, "needs a floating dtype, got %s", tensor__dtype_names[t->dtype]);
    if (kind == 3) return tensor__new(fn, t->ndim, t->shape, t->dtype, dev); /* empty */
    if (kind <= 2) {
        if (kind == 2 && !tensor__check_value_fits(fn, value, t->dtype)) return NULL;
        bool had = tensor__error_set;
        tensor *r = tensor__full_on(t->ndim, t->shape, kind == 0 ? 0 : kind == 1 ? 1 : value, t->dtype, dev);
        return r ? r : tensor__fail_as(fn, had);
    }
    tensor *c = kind == 4 ? tensor_rand(t->ndim, t->shape, t->dtype) : tensor_randn(t->ndim, t->shape, t->dtype);
    if (!c || dev == TENSOR_CPU) return c;
    tensor *r = tensor_to_device(c, dev);
    tensor_free(c);
    return r;
}
TENSOR_API tensor *tensor_zeros_like(tensor *t) { return tensor__like("tensor_zeros_like", t, 0, 0); }
TENSOR_API tensor *tensor_ones_like(tensor *t) { return tensor__like("tensor_ones_like", t, 1, 0); }
TENSOR_API tensor *tensor_full_like(tensor *t, double value) { return tensor__like("tensor_full_like", t, 2, value); }
TENSOR_API tensor *tensor_empty_like(tensor *t) { return tensor__like("tensor_empty_like", t, 3, 0); }
TENSOR_API tensor *tensor_rand_like(tensor *t) { return tensor__like("tensor_rand_like", t, 4, 0); }
TENSOR_API tensor *tensor_randn_like(tensor *t) { return tensor__like("tensor_randn_like", t, 5, 0); }

/* base ** linspace(start, end, steps), computed in f64 and rounded once to dtype. */
TENSOR_API tensor *tensor_logspace(double start, double end, int64_t steps, double base, tensor_dtype dtype) {
    const char *fn = "tensor_logspace";
    if (!tensor__check_dtype(fn, dtype)) return NULL;
    if (steps < 0) return tensor__fail(fn, "number of steps must be non-negative, got %lld", (long long)steps);
    bool had = tensor__error_set;
    tensor *e = tensor_linspace(start, end, steps, TENSOR_F64);
    tensor *b = tensor_scalar(base, TENSOR_F64);
    tensor *p = e && b ? tensor_pow(b, e) : NULL;
    tensor *r = p ? tensor_to_dtype(p, dtype) : NULL;
    tensor_free(e);
    tensor_free(b);
    tensor_free(p);
    return r ? r : tensor__fail_as(fn, had);
}

/* sum over i in [0, rows) of clamp(a + i, 0, col), in O(1); false if it passes TENSOR__MAX_NUMEL.
   |a| <= rows + col + 2 (the callers clamp the offset), so no intermediate overflows. */
static bool tensor__sum_clamped(int64_t a, int64_t rows, int64_t col, int64_t *out) {
    int64_t lo = 1 - a < 0 ? 0 : 1 - a, hi = col - a + 1; /* a + i in [1, col] for i in [lo, hi) */
    if (lo > rows) lo = rows;
    if (hi > rows) hi = rows;
    if (hi < lo) hi = lo;
    int64_t cnt = hi - lo, sum = 0, top = 0, pair = 2 * a + lo + hi - 1; /* first + last; cnt + pair is odd */
    if (cnt > 0 && !(cnt % 2 == 0 ? tensor__size_mul(cnt / 2, pair, &sum) : tensor__size_mul(cnt, pair / 2, &sum))) return false;
    if (!tensor__size_mul(rows - hi, col, &top) || !tensor__size_add(sum, top, out)) return false;
    return *out <= TENSOR__MAX_NUMEL;
}

/* [2, N]: the (row, col) pairs of a row x col matrix, row-major, with col - row <= offset (lower)
   or >= offset (upper). Row i holds columns [0, i + offset + 1) (lower) or [i + offset, col). */
static tensor *tensor__tri_indices(const char *fn, int64_t row, int64_t col, int64_t offset, tensor_dtype dtype, bool lower) {
    if (!tensor__check_dtype(fn, dtype)) return NULL;
    if (dtype == TENSOR_BOOL) return tensor__fail(fn, "dtype bool is not supported");
    if (row < 0 || col < 0) return tensor__fail(fn, "row %lld and col %lld must be non-negative", (long long)row, (long long)col);
    if (row > TENSOR__MAX_NUMEL || col > TENSOR__MAX_NUMEL) return tensor__fail(fn, "row %lld or col %lld is too large", (long long)row, (long long)col);
    if (offset > col + 1) offset = col + 1; /* past the matrix: the same as at its edge */
    if (offset < -row - 1) offset = -row - 1;
    int64_t n = 0, all = 0;
    bool ok = lower ? tensor__sum_clamped(offset + 1, row, col, &n) : tensor__sum_clamped(offset, row, col, &all);
    if (ok && !lower) { /* the upper rows hold what the clamped count leaves */
        int64_t full;
        ok = tensor__size_mul(row, col, &full) && full <= TENSOR__MAX_NUMEL;
        n = ok ? full - all : 0;
    }
    if (!ok) return tensor__fail(fn, "a %lld x %lld matrix has too many indices", (long long)row, (long long)col);
    int64_t shape[2] = {2, n};
    tensor *r = tensor__new(fn, 2, shape, TENSOR_I64, TENSOR_CPU);
    if (!r) return NULL;
    int64_t *rows = (int64_t *)(void *)tensor__data(r), *cols = rows + n, k = 0;
    /* only the rows that hold something are walked: the loop is O(n + 1) */
    int64_t first = lower && -offset > 0 ? -offset : 0, stop = lower ? row : (col - offset < row ? col - offset : row);
    for (int64_t i = first; n > 0 && i < stop; i++) {
        int64_t lo = lower ? 0 : i + offset, hi = lower ? i + offset + 1 : col;
        if (lo < 0) lo = 0;
        if (hi > col) hi = col;
        for (int64_t j = lo; j < hi; j++, k++) { rows[k] = i; cols[k] = j; }
    }
    if (dtype == TENSOR_I64) return r;
    tensor *c = tensor_to_dtype(r, dtype);
    tensor_free(r);
    return c;
}
TENSOR_API tensor *tensor_tril_indices(int64_t row, int64_t col, int64_t offset, tensor_dtype dtype) { return tensor__tri_indices("tensor_tril_indices", row, col, offset, dtype, true); }
TENSOR_API tensor *tensor_triu_indices(int64_t row, int64_t col, int64_t offset, tensor_dtype dtype) { return tensor__tri_indices("tensor_triu_indices", row, col, offset, dtype, false); }
