// >>index ---------------------------------------------------------------------------------------
/* Indexing and scatter ops with PyTorch's semantics (the "indexing (more)" block of ops.def).
   Three have kernels of their own (KERNEL in ops.def, a CPU kernel here and a CUDA one in
   tensor_cuda.cu): scatter (src), scatter_reduce and searchsorted. Their calls record: scatter:
   in = {t, index, src}, ip[0] dim; scatter_reduce: the same and ip[1] the reduction (SUM, PROD,
   AMAX or AMIN below; "mean" is a sum divided by a count, composed here), ip[2] include_self;
   searchsorted: in = {sorted rows (contiguous), values (contiguous, the same dtype)}, ip[0] right.
   Every other op is a composite of gather, scatter_add, index_select, masked_fill, where, cumsum
   and the new kernels, so autograd and the CUDA device come with them. The ops whose output size
   depends on the data (nonzero, masked_select, masked_scatter, bincount, unique, ...) read one
   count back to the host (tensor_item); unique also sorts on the host (its argsort below), the
   rest of it composed of ops. Indices out of range are errors naming the function, the index and
   the size, checked before anything is written. */

static const int64_t tensor__one_dim[1] = {1}; /* the shape [1] */

/* Ends a composite: r (owned by the list) handed to the caller, or NULL with the inner error
   renamed to fn when the inner op set the first one. */
static tensor *tensor__ix_done(tensor__tmps *s, tensor *r, const char *fn, bool had) {
    tensor__tmps_take(s, r);
    tensor__tmps_free(s);
    return r ? r : tensor__fail_as(fn, had);
}
/* A 0-dim tensor holding v (dtype, device). */
static tensor *tensor__ix_num(tensor__tmps *s, double v, tensor_dtype dt, tensor_device dev) { return tensor__tmp(s, tensor__full_on(0, NULL, v, dt, dev)); }
/* t as a 1-D tensor of its numel elements (a view where the strides allow). */
static tensor *tensor__ix_flat(tensor__tmps *s, tensor *t) {
    if (!t) return NULL;
    int64_t n = tensor__numel_of(t->ndim, t->shape);
    return tensor__tmp(s, tensor_reshape(t, 1, &n));
}
static tensor *tensor__ix_dev(tensor__tmps *s, tensor *t, tensor_device dev) {
    if (!t) return NULL;
    return t->storage->device == dev ? t : tensor__tmp(s, tensor_to_device(t, dev));
}
/* 0, 1, ..., n - 1 (i64) on dev. */
static tensor *tensor__ix_arange(tensor__tmps *s, int64_t n, tensor_device dev) { return tensor__ix_dev(s, tensor__tmp(s, tensor_arange(0, (double)n, 1, TENSOR_I64)), dev); }
/* The value of a one-element floating tensor, read back to the host (integer ones:
   tensor__item_i64, exact). */
static bool tensor__ix_item(tensor *t, double *v) {
    if (!t) return false;
    *v = tensor_item(t);
    return !(*v != *v && tensor__error_set && !tensor__is_float(t->dtype));
}

/* idx (an integer tensor) checked against [-size, size) when negatives wrap (neg), else [0, size),
   and returned as i64 in [0, size). The bounds come from its min and max, read back to the host,
   so the check works on any device. */
static tensor *tensor__ix_wrap(tensor__tmps *s, const char *fn, tensor *idx, int64_t size, int dim, bool neg) {
    if (!idx) return NULL;
    if (idx->dtype != TENSOR_I64 && idx->dtype != TENSOR_I32 && idx->dtype != TENSOR_U8)
        return tensor__fail(fn, "indices must be an integer tensor (int64 or int32), got %s", tensor__dtype_names[idx->dtype]);
    tensor *i64 = idx->dtype == TENSOR_I64 ? idx : tensor__tmp(s, tensor_to_dtype(idx, TENSOR_I64));
    if (!i64 || tensor__numel_of(idx->ndim, idx->shape) == 0) return i64;
    int64_t lo, hi;
    if (!tensor__item_i64(tensor__tmp(s, tensor_min_all(i64)), &lo) || !tensor__item_i64(tensor__tmp(s, tensor_max_all(i64)), &hi)) return NULL;
    int64_t low = neg ? -size : 0;
    if (lo < low || hi >= size) {
        int64_t bad = hi >= size ? hi : lo;
        if (dim < 0) return tensor__fail(fn, "index %lld is out of bounds for a tensor of %lld elements", (long long)bad, (long long)size);
        return tensor__fail(fn, "index %lld is out of bounds for dim %d with size %lld", (long long)bad, dim, (long long)size);
    }
    if (lo >= 0) return i64;
    tensor_device dev = idx->storage->device;
    tensor *isneg = tensor__tmp(s, tensor_lt(i64, tensor__ix_num(s, 0, TENSOR_I64, dev)));
    return tensor__tmp(s, tensor_where(isneg, tensor__tmp(s, tensor_add(i64, tensor__ix_num(s, (double)size, TENSOR_I64, dev))), i64));
}

/* index (0-dim or 1-D integer) viewed along dim of an nd-dim tensor and expanded to shape (the
   shape of the source of index_add / index_copy): the index of scatter / scatter_add. */
static tensor *tensor__ix_along(tensor__tmps *s, tensor *index, int nd, int dim, const int64_t *shape) {
    int64_t v[TENSOR_MAX_DIMS];
    for (int i = 0; i < nd; i++) v[i] = i == dim ? shape[dim] : 1;
    tensor *r = tensor__tmp(s, tensor_reshape(index, nd, v));
    return r ? tensor__tmp(s, tensor_expand(r, nd, shape)) : NULL;
}

static bool tensor__ix_index_dtype(const char *fn, const tensor *index) {
    if (index->dtype == TENSOR_I64 || index->dtype == TENSOR_I32) return true;
    tensor__fail(fn, "index must be an int64 (or int32) tensor, got %s", tensor__dtype_names[index->dtype]);
    return false;
}

/* ---- scatter and scatter_reduce (kernels) ---- */

enum { TENSOR__SCATTER_ASSIGN = -1, TENSOR__SCATTER_SUM = 0, TENSOR__SCATTER_PROD = 1, TENSOR__SCATTER_MEAN = 2, TENSOR__SCATTER_AMAX = 3, TENSOR__SCATTER_AMIN = 4 };

/* *q = *q op *sp in dtype dt (PyTorch's CPU rules: NaN propagates through amax / amin; integers
   wrap; bool: sum and amax are or, prod and amin are and). */
static void tensor__scatter_combine(char *q, const char *sp, tensor_dtype dt, int mode) {
    if (mode == TENSOR__SCATTER_ASSIGN) { tensor__copy_elem(q, sp, tensor__dtype_sizes[dt]); return; }
    if (tensor__is_float(dt)) {
        double a = tensor__load_f64(q, dt), b = tensor__load_f64(sp, dt), r;
        switch (mode) {
        case TENSOR__SCATTER_SUM: r = a + b; break;
        case TENSOR__SCATTER_PROD: r = a * b; break;
        case TENSOR__SCATTER_AMAX: r = a != a || b != b ? NAN : a > b ? a : b; break;
        default: r = a != a || b != b ? NAN : a < b ? a : b; break;
        }
        tensor__store_f64(q, dt, r);
        return;
    }
    if (dt == TENSOR_BOOL) {
        uint8_t a = *(const uint8_t *)q != 0, b = *(const uint8_t *)sp != 0;
        *(uint8_t *)q = mode == TENSOR__SCATTER_SUM || mode == TENSOR__SCATTER_AMAX ? (a | b) : (a & b);
        return;
    }
    int64_t a = tensor__load_i64(q, dt), b = tensor__load_i64(sp, dt), r;
    switch (mode) {
    case TENSOR__SCATTER_SUM: r = (int64_t)((uint64_t)a + (uint64_t)b); break;
    case TENSOR__SCATTER_PROD: r = (int64_t)((uint64_t)a * (uint64_t)b); break;
    case TENSOR__SCATTER_AMAX: r = a > b ? a : b; break;
    default: r = a < b ? a : b; break;
    }
    tensor__store_i64(q, dt, r);
}
/* The value a reduction starts from where include_self is false. */
static void tensor__scatter_identity(char *q, tensor_dtype dt, int mode) {
    switch (mode) {
    case TENSOR__SCATTER_PROD: tensor__store_f64(q, dt, 1); return;
    case TENSOR__SCATTER_AMAX:
        if (tensor__is_float(dt)) tensor__store_f64(q, dt, -INFINITY);
        else if (dt == TENSOR_I64) tensor__store_i64(q, dt, INT64_MIN);
        else if (dt == TENSOR_I32) tensor__store_i64(q, dt, INT32_MIN);
        else tensor__store_i64(q, dt, 0);
        return;
    case TENSOR__SCATTER_AMIN:
        if (tensor__is_float(dt)) tensor__store_f64(q, dt, INFINITY);
        else if (dt == TENSOR_I64) tensor__store_i64(q, dt, INT64_MAX);
        else if (dt == TENSOR_I32) tensor__store_i64(q, dt, INT32_MAX);
        else tensor__store_i64(q, dt, dt == TENSOR_U8 ? 255 : 1);
        return;
    default: tensor__store_f64(q, dt, 0); return;
    }
}

/* out = t; then for every element of index in row-major order, out[... index ...] op= src[...].
   Pass 0 checks every index (nothing is combined before a bad one is found) and, without
   include_self, sets each target to the reduction's identity; pass 1 combines. ip[0] = dim. */
static int tensor__scatter_run(tensor__call *c, int mode, bool include_self) {
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
    for (int pass = 0; pass < 2; pass++) {
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
                if (pass == 0) {
                    if (tensor__scatter_index(c, ip, index->dtype, size, dim, &k)) return 1;
                    if (!include_self && mode != TENSOR__SCATTER_ASSIGN) tensor__scatter_identity(tp + k * tdim, dt, mode);
                    continue;
                }
                k = index->dtype == TENSOR_I64 ? *(const int64_t *)(const void *)ip : (int64_t)*(const int32_t *)(const void *)ip;
                tensor__scatter_combine(tp + k * tdim, sp, dt, mode);
            }
            tensor__next_index(last, w.gi.shape, idx);
        }
    }
    return 0;
}
static int tensor__cpu_scatter(tensor__call *c) { return tensor__scatter_run(c, TENSOR__SCATTER_ASSIGN, true); }
static int tensor__cpu_scatter_reduce(tensor__call *c) { return tensor__scatter_run(c, (int)c->ip[1], c->ip[2] != 0); }


TENSOR_API tensor *tensor_scatter(tensor *t, int dim, tensor *index, tensor *src) {
    return tensor__scatter_call(TENSOR_OP_scatter, t, dim, index, src, TENSOR__SCATTER_ASSIGN, true);
}

TENSOR_API tensor *tensor_scatter_value(tensor *t, int dim, tensor *index, double value) {
    const char *fn = "tensor_scatter_value";
    TENSOR__CHECK_ARG(fn, t);
    TENSOR__CHECK_ARG(fn, index);
    if (!tensor__check_value_fits(fn, value, t->dtype)) return NULL;
    bool had = tensor__error_set;
    tensor__tmps s = {{0}, 0};
    /* src: value broadcast to index's shape (0-dim stays 0-dim: the kernel sees both as [1]) */
    tensor *v = tensor__ix_num(&s, value, t->dtype, t->storage->device);
    tensor *src = v ? tensor__tmp(&s, tensor_expand(v, index->ndim, index->shape)) : NULL;
    tensor *r = src ? tensor__tmp(&s, tensor_scatter(t, dim, index, src)) : NULL;
    return tensor__ix_done(&s, r, fn, had);
}

static int tensor__scatter_mode(const char *fn, const char *reduce) {
    static const char *const names[5] = {"sum", "prod", "mean", "amax", "amin"};
    if (!reduce) { tensor__null_arg(fn, "reduce"); return -2; }
    for (int i = 0; i < 5; i++)
        if (strcmp(reduce, names[i]) == 0) return i;
    tensor__fail(fn, "reduce argument must be one of sum, prod, mean, amax, amin, got '%s'", reduce);
    return -2;
}

/* torch.scatter's reduce argument: "add" or "multiply" is scatter_reduce's sum or prod with the
   entries of t included (PyTorch has no gradient here; ours is scatter_reduce's). */
static tensor *tensor__scatter_with_reduce(const char *fn, tensor *t, int dim, tensor *index, tensor *src, const char *reduce) {
    if (!reduce) return tensor__null_arg(fn, "reduce");
    bool add = strcmp(reduce, "add") == 0;
    if (!add && strcmp(reduce, "multiply") != 0) return tensor__fail(fn, "reduce argument must be either add or multiply, got '%s'", reduce);
    bool had = tensor__error_set;
    tensor *r = tensor_scatter_reduce(t, dim, index, src, add ? "sum" : "prod", true);
    return r ? r : tensor__fail_as(fn, had);
}
TENSOR_API tensor *tensor_scatter_with_reduce(tensor *t, int dim, tensor *index, tensor *src, const char *reduce) {
    return tensor__scatter_with_reduce("tensor_scatter_with_reduce", t, dim, index, src, reduce);
}
TENSOR_API tensor *tensor_scatter_value_with_reduce(tensor *t, int dim, tensor *index, double value, const char *reduce) {
    const char *fn = "tensor_scatter_value_with_reduce";
    TENSOR__CHECK_ARG(fn, t);
    TENSOR__CHECK_ARG(fn, index);
    if (!tensor__check_value_fits(fn, value, t->dtype)) return NULL;
    bool had = tensor__error_set;
    tensor__tmps s = {{0}, 0};
    tensor *v = tensor__ix_num(&s, value, t->dtype, t->storage->device);
    tensor *src = v ? tensor__tmp(&s, tensor_expand(v, index->ndim, index->shape)) : NULL;
    tensor *r = src ? tensor__tmp(&s, tensor__scatter_with_reduce(fn, t, dim, index, src, reduce)) : NULL;
    return tensor__ix_done(&s, r, fn, had);
}

TENSOR_API tensor *tensor_scatter_reduce(tensor *t, int dim, tensor *index, tensor *src, const char *reduce, bool include_self) {
    const char *fn = "tensor_scatter_reduce";
    int mode = tensor__scatter_mode(fn, reduce);
    if (mode < -1) return NULL;
    if (mode != TENSOR__SCATTER_MEAN) return tensor__scatter_call(TENSOR_OP_scatter_reduce, t, dim, index, src, mode, include_self);
    TENSOR__CHECK_ARG(fn, t);
    TENSOR__CHECK_ARG(fn, index);
    TENSOR__CHECK_ARG(fn, src);
    if (t->dtype == TENSOR_BOOL) return tensor__fail(fn, "reduce 'mean' is not implemented for bool");
    /* mean: the sum, divided by the count of what was summed (self counted when included; a
       position nothing was scattered to keeps its value); integers divide with floor, as PyTorch */
    bool had = tensor__error_set;
    tensor__tmps s = {{0}, 0};
    tensor *sum = tensor__tmp(&s, tensor__scatter_call(TENSOR_OP_scatter_reduce, t, dim, index, src, TENSOR__SCATTER_SUM, include_self)), *r = NULL;
    if (sum) {
        tensor_device dev = t->storage->device;
        tensor *ones = tensor__tmp(&s, tensor__full_on(index->ndim, index->shape, 1, t->dtype, dev));
        tensor *base = tensor__tmp(&s, tensor__full_on(t->ndim, t->shape, include_self ? 1 : 0, t->dtype, dev));
        tensor *cnt = ones && base ? tensor__tmp(&s, tensor_scatter_add(base, dim, index, ones)) : NULL;
        tensor *zero = cnt ? tensor__tmp(&s, tensor_eq(cnt, tensor__ix_num(&s, 0, t->dtype, dev))) : NULL;
        tensor *den = zero ? tensor__tmp(&s, tensor_masked_fill(cnt, zero, 1)) : NULL;
        if (den) r = tensor__tmp(&s, tensor__is_float(t->dtype) ? tensor_div(sum, den) : tensor_floor_divide(sum, den));
    }
    return tensor__ix_done(&s, r, fn, had);
}

/* ---- index_add, index_copy, index_fill (scatter_add, scatter, masked_fill) ---- */

/* The checks of index_add / index_copy: index 0-dim or 1-D integer, source t's shape but along
   dim (index's numel there), one dtype. *d the wrapped dim. */
static bool tensor__index_source_ok(const char *fn, tensor *t, int dim, tensor *index, tensor *source, int *d) {
    tensor *ins[3] = {t, index, source};
    if (!tensor__same_device(fn, 3, ins)) return false;
    if ((*d = tensor__wrap_dim(fn, dim, t->ndim ? t->ndim : 1)) < 0 || !tensor__ix_index_dtype(fn, index)) return false;
    if (index->ndim > 1) { tensor__fail(fn, "index must be 0-dim or 1-D, got shape %s", tensor__shape_of(index)); return false; }
    if (source->dtype != t->dtype) { tensor__fail(fn, "source dtype %s must equal the input dtype %s", tensor__dtype_names[source->dtype], tensor__dtype_names[t->dtype]); return false; }
    int64_t n = tensor__numel_of(index->ndim, index->shape);
    int nd = t->ndim ? t->ndim : 1, snd = source->ndim ? source->ndim : 1;
    bool ok = nd == snd;
    for (int i = 0; ok && i < nd; i++) {
        int64_t ts = t->ndim ? t->shape[i] : 1, ss = source->ndim ? source->shape[i] : 1;
        ok = i == *d ? ss == n : ss == ts;
    }
    if (!ok) tensor__fail(fn, "source of shape %s does not fit the input of shape %s with %lld indices along dim %d", tensor__shape_of(source), tensor__shape_of(t), (long long)n, *d);
    return ok;
}

/* index_add (add) or index_copy: source scattered along dim at index. */
static tensor *tensor__index_scatter(const char *fn, tensor *t, int dim, tensor *index, tensor *source, bool add, double alpha) {
    TENSOR__CHECK_ARG(fn, t);
    TENSOR__CHECK_ARG(fn, index);
    TENSOR__CHECK_ARG(fn, source);
    int d;
    if (!tensor__index_source_ok(fn, t, dim, index, source, &d)) return NULL;
    if (add && !tensor__is_float(t->dtype) && alpha != floor(alpha)) return tensor__fail(fn, "alpha %g must be an integer for an integer input", alpha);
    bool had = tensor__error_set;
    tensor__tmps s = {{0}, 0};
    /* a 0-dim input and source are seen as [1] */
    int64_t one = 1;
    tensor *tt = t->ndim ? t : tensor__tmp(&s, tensor_reshape(t, 1, &one));
    tensor *ss = source->ndim ? source : tensor__tmp(&s, tensor_reshape(source, 1, &one));
    tensor *r = NULL;
    if (tt && ss) {
        tensor *idx = tensor__ix_along(&s, index, tt->ndim, d, ss->shape);
        if (add && alpha != 1) ss = tensor__tmp(&s, tensor_mul(ss, tensor__ix_num(&s, alpha, t->dtype, t->storage->device)));
        if (idx && ss) r = tensor__tmp(&s, add ? tensor_scatter_add(tt, d, idx, ss) : tensor_scatter(tt, d, idx, ss));
        if (r && !t->ndim) r = tensor__tmp(&s, tensor_reshape(r, 0, NULL));
    }
    return tensor__ix_done(&s, r, fn, had);
}
TENSOR_API tensor *tensor_index_add(tensor *t, int dim, tensor *index, tensor *source, double alpha) { return tensor__index_scatter("tensor_index_add", t, dim, index, source, true, alpha); }
TENSOR_API tensor *tensor_index_copy(tensor *t, int dim, tensor *index, tensor *source) { return tensor__index_scatter("tensor_index_copy", t, dim, index, source, false, 1); }

TENSOR_API tensor *tensor_index_fill(tensor *t, int dim, tensor *index, double value) {
    const char *fn = "tensor_index_fill";
    TENSOR__CHECK_ARG(fn, t);
    TENSOR__CHECK_ARG(fn, index);
    tensor *ins[2] = {t, index};
    if (!tensor__same_device(fn, 2, ins)) return NULL;
    int d = tensor__wrap_dim(fn, dim, t->ndim ? t->ndim : 1);
    if (d < 0 || !tensor__ix_index_dtype(fn, index)) return NULL;
    if (index->ndim > 1) return tensor__fail(fn, "index must be 0-dim or 1-D, got shape %s", tensor__shape_of(index));
    if (!tensor__check_value_fits(fn, value, t->dtype)) return NULL;
    bool had = tensor__error_set;
    tensor__tmps s = {{0}, 0};
    int64_t size = t->ndim ? t->shape[d] : 1;
    tensor_device dev = t->storage->device;
    /* the mask along dim: true at every index (negative ones wrap, as PyTorch's index_fill) */
    tensor *idx = tensor__ix_flat(&s, tensor__ix_wrap(&s, fn, index, size, d, true));
    if (idx && tensor__numel_of(t->ndim, t->shape) == 0) /* nothing to fill: no mask as long as dim (which may be huge) */
        return tensor__ix_done(&s, tensor__tmp(&s, tensor_masked_fill(t, tensor__tmp(&s, tensor__full_on(0, NULL, 0, TENSOR_BOOL, dev)), value)), fn, had);
    tensor *z = idx ? tensor__tmp(&s, tensor__full_on(1, &size, 0, TENSOR_BOOL, dev)) : NULL;
    tensor *m = z ? tensor__tmp(&s, tensor_scatter_value(z, 0, idx, 1)) : NULL, *r = NULL;
    if (m) {
        int64_t v[TENSOR_MAX_DIMS];
        for (int i = 0; i < t->ndim; i++) v[i] = i == d ? size : 1;
        tensor *mv = tensor__tmp(&s, tensor_reshape(m, t->ndim, v));
        r = mv ? tensor__tmp(&s, tensor_masked_fill(t, mv, value)) : NULL;
    }
    return tensor__ix_done(&s, r, fn, had);
}

/* ---- nonzero, argwhere, masked_select, masked_scatter ---- */

/* The flat positions (1-D i64, row-major) of the true elements of a bool tensor, in order: each
   true element's rank among them (a cumsum) is where its position goes; the false ones all go to
   one spare slot past the end, dropped. The count is read back to the host. */
static tensor *tensor__ix_flat_nonzero(tensor__tmps *s, tensor *mask, int64_t *count) {
    tensor *f = tensor__ix_flat(s, mask);
    if (!f) return NULL;
    tensor_device dev = mask->storage->device;
    int64_t n = f->shape[0];
    tensor *fi = tensor__tmp(s, tensor_to_dtype(f, TENSOR_I64));
    if (!fi || !tensor__item_i64(tensor__tmp(s, tensor_sum_all(fi)), count)) return NULL;
    if (*count == n) return tensor__ix_arange(s, n, dev);
    int64_t slots = *count + 1;
    tensor *rank = tensor__tmp(s, tensor_cumsum(fi, 0));
    tensor *slot = rank ? tensor__tmp(s, tensor_where(f, tensor__tmp(s, tensor_sub(rank, tensor__ix_num(s, 1, TENSOR_I64, dev))), tensor__ix_num(s, (double)*count, TENSOR_I64, dev))) : NULL;
    tensor *buf = slot ? tensor__tmp(s, tensor__full_on(1, &slots, 0, TENSOR_I64, dev)) : NULL;
    tensor *ar = buf ? tensor__ix_arange(s, n, dev) : NULL;
    tensor *pos = ar ? tensor__tmp(s, tensor_scatter(buf, 0, slot, ar)) : NULL;
    return pos ? tensor__tmp(s, tensor_slice(pos, 0, 0, *count, 1)) : NULL;
}
/* The true elements of mask (bool) as [count, ndim] i64 indices. */
static tensor *tensor__nonzero(tensor__tmps *s, tensor *mask) {
    int64_t count = 0;
    tensor *pos = tensor__ix_flat_nonzero(s, mask, &count);
    if (!pos) return NULL;
    tensor_device dev = mask->storage->device;
    int nd = mask->ndim;
    if (nd == 0 || count == 0) {
        int64_t sh[2] = {count, nd};
        return tensor__tmp(s, tensor__full_on(2, sh, 0, TENSOR_I64, dev));
    }
    tensor *cols[TENSOR_MAX_DIMS];
    int64_t stride = 1;
    for (int d = nd - 1; d >= 0; d--) {
        tensor *q = stride == 1 ? pos : tensor__tmp(s, tensor_floor_divide(pos, tensor__ix_num(s, (double)stride, TENSOR_I64, dev)));
        cols[d] = d == 0 || !q ? q : tensor__tmp(s, tensor_remainder(q, tensor__ix_num(s, (double)mask->shape[d], TENSOR_I64, dev)));
        if (!cols[d]) return NULL;
        stride *= mask->shape[d];
    }
    return tensor__tmp(s, tensor_stack(nd, cols, 1));
}
/* t != 0 as bool (t itself when bool). */
static tensor *tensor__ix_truth(tensor__tmps *s, tensor *t) {
    if (t->dtype == TENSOR_BOOL) return t;
    return tensor__tmp(s, tensor_ne(t, tensor__ix_num(s, 0, t->dtype, t->storage->device)));
}
static tensor *tensor__nonzero_op(const char *fn, tensor *t) {
    TENSOR__CHECK_ARG(fn, t);
    bool had = tensor__error_set;
    tensor__tmps s = {{0}, 0};
    tensor *m = tensor__ix_truth(&s, t);
    tensor *r = m ? tensor__nonzero(&s, m) : NULL;
    return tensor__ix_done(&s, r, fn, had);
}
TENSOR_API tensor *tensor_nonzero(tensor *t) { return tensor__nonzero_op("tensor_nonzero", t); }
TENSOR_API tensor *tensor_argwhere(tensor *t) { return tensor__nonzero_op("tensor_argwhere", t); }

/* t and a bool mask broadcast together: *te, *me (views), shape in (nd, shape). */
static bool tensor__ix_masked_args(tensor__tmps *s, const char *fn, tensor *t, tensor *mask, tensor **te, tensor **me, int *nd, int64_t *shape) {
    tensor *ins[2] = {t, mask};
    if (!tensor__same_device(fn, 2, ins)) return false;
    if (mask->dtype != TENSOR_BOOL) { tensor__fail(fn, "mask must be a bool tensor, got %s", tensor__dtype_names[mask->dtype]); return false; }
    if (!tensor__broadcast_shapes(fn, t->ndim, t->shape, mask->ndim, mask->shape, nd, shape)) return false;
    *te = tensor__tmp(s, tensor_expand(t, *nd, shape));
    *me = tensor__tmp(s, tensor_expand(mask, *nd, shape));
    return *te && *me;
}

TENSOR_API tensor *tensor_masked_select(tensor *t, tensor *mask) {
    const char *fn = "tensor_masked_select";
    TENSOR__CHECK_ARG(fn, t);
    TENSOR__CHECK_ARG(fn, mask);
    bool had = tensor__error_set;
    tensor__tmps s = {{0}, 0};
    tensor *te, *me, *r = NULL;
    int nd;
    int64_t shape[TENSOR_MAX_DIMS], count;
    if (tensor__ix_masked_args(&s, fn, t, mask, &te, &me, &nd, shape)) {
        tensor *pos = tensor__ix_flat_nonzero(&s, me, &count);
        tensor *tf = pos ? tensor__ix_flat(&s, te) : NULL;
        r = tf ? tensor__tmp(&s, tensor_index_select(tf, 0, pos)) : NULL;
    } else if (!tensor__error_set) tensor__fail(fn, "out of memory");
    return tensor__ix_done(&s, r, fn, had);
}

TENSOR_API tensor *tensor_masked_scatter(tensor *t, tensor *mask, tensor *source) {
    const char *fn = "tensor_masked_scatter";
    TENSOR__CHECK_ARG(fn, t);
    TENSOR__CHECK_ARG(fn, mask);
    TENSOR__CHECK_ARG(fn, source);
    if (source->dtype != t->dtype) return tensor__fail(fn, "source dtype %s must equal the input dtype %s", tensor__dtype_names[source->dtype], tensor__dtype_names[t->dtype]);
    if (source->storage->device != t->storage->device) return tensor__fail(fn, "inputs are on different devices (%s and %s)", tensor__device_name(t->storage->device), tensor__device_name(source->storage->device));
    bool had = tensor__error_set;
    tensor__tmps s = {{0}, 0};
    tensor *te, *me, *r = NULL;
    int nd;
    int64_t shape[TENSOR_MAX_DIMS];
    if (tensor__ix_masked_args(&s, fn, t, mask, &te, &me, &nd, shape)) {
        tensor_device dev = t->storage->device;
        tensor *mf = tensor__ix_flat(&s, me);
        tensor *mi = mf ? tensor__tmp(&s, tensor_to_dtype(mf, TENSOR_I64)) : NULL;
        int64_t c;
        int64_t avail = tensor__numel_of(source->ndim, source->shape);
        if (mi && tensor__item_i64(tensor__tmp(&s, tensor_sum_all(mi)), &c)) {
            if (c > avail) {
                tensor__fail(fn, "the mask has %lld true elements but source has only %lld", (long long)c, (long long)avail);
            } else if (c == 0) {
                r = tensor__tmp(&s, tensor_clone(te));
            } else {
                /* element i takes source[rank of i among the true ones] (clamped to 0 where false) */
                tensor *rank = tensor__tmp(&s, tensor_cumsum(mi, 0));
                tensor *at = rank ? tensor__tmp(&s, tensor_sub(rank, tensor__ix_num(&s, 1, TENSOR_I64, dev))) : NULL;
                tensor *pos = at ? tensor__tmp(&s, tensor_clamp_min(at, 0)) : NULL;
                tensor *sf = pos ? tensor__ix_flat(&s, source) : NULL;
                tensor *vals = sf ? tensor__tmp(&s, tensor_index_select(sf, 0, pos)) : NULL;
                tensor *tf = vals ? tensor__ix_flat(&s, te) : NULL;
                tensor *w = tf ? tensor__tmp(&s, tensor_where(mf, vals, tf)) : NULL;
                r = w ? tensor__tmp(&s, tensor_reshape(w, nd, shape)) : NULL;
            }
        }
    } else if (!tensor__error_set) tensor__fail(fn, "out of memory");
    return tensor__ix_done(&s, r, fn, had);
}

/* ---- index_put, take, take_along_dim, put ---- */

TENSOR_API tensor *tensor_index_put(tensor *t, int n, tensor *const *indices, tensor *values, bool accumulate) {
    const char *fn = "tensor_index_put";
    TENSOR__CHECK_ARG(fn, t);
    TENSOR__CHECK_ARG(fn, values);
    if (n < 1 || n > TENSOR_MAX_DIMS) return tensor__fail(fn, "the number of index tensors %d is out of range [1, %d]", n, TENSOR_MAX_DIMS);
    if (!indices) return tensor__null_arg(fn, "indices");
    for (int i = 0; i < n; i++)
        if (!indices[i]) return tensor__null_arg(fn, "indices[i]");
    if (values->dtype != t->dtype) return tensor__fail(fn, "values dtype %s must equal the input dtype %s", tensor__dtype_names[values->dtype], tensor__dtype_names[t->dtype]);
    tensor_device dev = t->storage->device;
    for (int i = 0; i < n; i++)
        if (indices[i]->storage->device != dev || values->storage->device != dev) return tensor__fail(fn, "inputs are on different devices; move them with tensor_to_device");
    bool had = tensor__error_set;
    tensor__tmps s = {{0}, 0};
    tensor *r = NULL;
    /* the index list: a bool (or u8) mask of k dims stands for its nonzero's k columns */
    tensor *list[TENSOR_MAX_DIMS];
    int m = 0;
    for (int i = 0; i < n; i++) {
        tensor *ix = indices[i];
        if (ix->dtype == TENSOR_BOOL || ix->dtype == TENSOR_U8) {
            int k = ix->ndim ? ix->ndim : 1;
            if (m + k > t->ndim) { tensor__fail(fn, "too many indices for a tensor of %d dims", t->ndim); goto done; }
            for (int j = 0; j < ix->ndim; j++)
                if (ix->shape[j] != t->shape[m + j]) { tensor__fail(fn, "the shape of mask %d (%s) does not match the indexed tensor (%s) at dim %d", i, tensor__shape_of(ix), tensor__shape_of(t), m + j); goto done; }
            if (ix->ndim == 0) { tensor__fail(fn, "a 0-dim bool index is not supported"); goto done; }
            tensor *b = ix->dtype == TENSOR_BOOL ? ix : tensor__tmp(&s, tensor_to_dtype(ix, TENSOR_BOOL));
            tensor *nz = b ? tensor__nonzero(&s, b) : NULL;
            for (int j = 0; j < k; j++) {
                if (!nz || !(list[m + j] = tensor__tmp(&s, tensor_select(nz, 1, j)))) goto done;
            }
            m += k;
        } else if (ix->dtype == TENSOR_I64 || ix->dtype == TENSOR_I32) {
            if (m + 1 > t->ndim) { tensor__fail(fn, "too many indices for a tensor of %d dims", t->ndim); goto done; }
            if (!(list[m] = tensor__ix_wrap(&s, fn, ix, t->shape[m], m, true))) goto done;
            m++;
        } else {
            tensor__fail(fn, "indices must be int64, int32 or bool tensors, got %s", tensor__dtype_names[ix->dtype]);
            goto done;
        }
    }
    {
        /* the indices broadcast to B; the linear position over the first m dims; t as [M, R] */
        int nb = 0;
        int64_t bs[TENSOR_MAX_DIMS];
        for (int i = 0; i < m; i++)
            if (!tensor__broadcast_shapes(fn, nb, bs, list[i]->ndim, list[i]->shape, &nb, bs)) goto done;
        tensor *lin = NULL;
        int64_t stride = 1;
        for (int i = m - 1; i >= 0; i--) {
            tensor *e = tensor__tmp(&s, tensor_expand(list[i], nb, bs));
            tensor *term = e && stride != 1 ? tensor__tmp(&s, tensor_mul(e, tensor__ix_num(&s, (double)stride, TENSOR_I64, dev))) : e;
            lin = !term ? NULL : !lin ? term : tensor__tmp(&s, tensor_add(lin, term));
            if (!lin) goto done;
            stride *= t->shape[i];
        }
        int64_t M = stride, R = tensor__numel_of(t->ndim - m, t->shape + m), nB = tensor__numel_of(nb, bs);
        int vn = nb + t->ndim - m;
        if (vn > TENSOR_MAX_DIMS) { tensor__fail(fn, "the indexed result would have %d dims, more than %d", vn, TENSOR_MAX_DIMS); goto done; }
        int64_t vs[TENSOR_MAX_DIMS];
        for (int i = 0; i < nb; i++) vs[i] = bs[i];
        for (int i = m; i < t->ndim; i++) vs[nb + i - m] = t->shape[i];
        int nv;
        int64_t vb[TENSOR_MAX_DIMS];
        if (!tensor__broadcast_shapes(fn, values->ndim, values->shape, vn, vs, &nv, vb) || nv != vn) {
            if (!tensor__error_set || !had) tensor__fail(fn, "values of shape %s cannot be broadcast to the indexed shape", tensor__shape_of(values));
            goto done;
        }
        for (int i = 0; i < vn; i++)
            if (vb[i] != vs[i]) { tensor__fail(fn, "values of shape %s cannot be broadcast to the indexed shape", tensor__shape_of(values)); goto done; }
        int64_t two[2] = {M, R}, v2[2] = {nB, R}, l2[2] = {nB, 1};
        tensor *tv = tensor__tmp(&s, tensor_reshape(t, 2, two));
        tensor *ve = tensor__tmp(&s, tensor_expand(values, vn, vs));
        tensor *vv = ve ? tensor__tmp(&s, tensor_reshape(ve, 2, v2)) : NULL;
        tensor *li = tensor__tmp(&s, tensor_reshape(lin, 2, l2));
        tensor *ie = li ? tensor__tmp(&s, tensor_expand(li, 2, v2)) : NULL;
        tensor *o = tv && vv && ie ? tensor__tmp(&s, accumulate ? tensor_scatter_add(tv, 0, ie, vv) : tensor_scatter(tv, 0, ie, vv)) : NULL;
        r = o ? tensor__tmp(&s, tensor_reshape(o, t->ndim, t->shape)) : NULL;
    }
done:
    return tensor__ix_done(&s, r, fn, had);
}

TENSOR_API tensor *tensor_take(tensor *t, tensor *index) {
    const char *fn = "tensor_take";
    TENSOR__CHECK_ARG(fn, t);
    TENSOR__CHECK_ARG(fn, index);
    tensor *ins[2] = {t, index};
    if (!tensor__same_device(fn, 2, ins)) return NULL;
    if (!tensor__ix_index_dtype(fn, index)) return NULL;
    bool had = tensor__error_set;
    tensor__tmps s = {{0}, 0};
    tensor *tf = tensor__ix_flat(&s, t);
    tensor *idx = tf ? tensor__ix_flat(&s, tensor__ix_wrap(&s, fn, index, tf->shape[0], -1, true)) : NULL;
    tensor *v = idx ? tensor__tmp(&s, tensor_index_select(tf, 0, idx)) : NULL;
    tensor *r = v ? tensor__tmp(&s, tensor_reshape(v, index->ndim, index->shape)) : NULL;
    return tensor__ix_done(&s, r, fn, had);
}

TENSOR_API tensor *tensor_take_along_dim(tensor *t, tensor *indices, const int *dim) {
    const char *fn = "tensor_take_along_dim";
    TENSOR__CHECK_ARG(fn, t);
    TENSOR__CHECK_ARG(fn, indices);
    tensor *ins[2] = {t, indices};
    if (!tensor__same_device(fn, 2, ins)) return NULL;
    if (!tensor__ix_index_dtype(fn, indices)) return NULL;
    bool had = tensor__error_set;
    tensor__tmps s = {{0}, 0};
    tensor *r = NULL;
    if (!dim) { /* the flattened t and indices */
        tensor *tf = tensor__ix_flat(&s, t), *xf = tensor__ix_flat(&s, indices);
        r = tf && xf ? tensor__tmp(&s, tensor_gather(tf, 0, xf)) : NULL;
        return tensor__ix_done(&s, r, fn, had);
    }
    if (t->ndim != indices->ndim) {
        tensor__tmps_free(&s);
        return tensor__fail(fn, "input and indices should have the same number of dims, got %d and %d", t->ndim, indices->ndim);
    }
    int d = tensor__wrap_dim(fn, *dim, t->ndim ? t->ndim : 1);
    if (d < 0) return NULL;
    if (t->ndim == 0) {
        r = tensor__tmp(&s, tensor_gather(t, 0, indices));
        return tensor__ix_done(&s, r, fn, had);
    }
    /* every dim but d broadcast between t and indices */
    int64_t ts[TENSOR_MAX_DIMS], is[TENSOR_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++) {
        int64_t a = t->shape[i], b = indices->shape[i];
        if (i == d) { ts[i] = a; is[i] = b; continue; }
        if (a != b && a != 1 && b != 1) {
            tensor__tmps_free(&s);
            return tensor__fail(fn, "input of shape %s and indices of shape %s cannot be broadcast (size %lld vs %lld at dim %d)", tensor__shape_of(t), tensor__shape_of(indices), (long long)a, (long long)b, i);
        }
        ts[i] = is[i] = a == 1 ? b : a;
    }
    tensor *te = tensor__tmp(&s, tensor_expand(t, t->ndim, ts)), *ie = tensor__tmp(&s, tensor_expand(indices, t->ndim, is));
    r = te && ie ? tensor__tmp(&s, tensor_gather(te, d, ie)) : NULL;
    return tensor__ix_done(&s, r, fn, had);
}

TENSOR_API tensor *tensor_put(tensor *t, tensor *index, tensor *source, bool accumulate) {
    const char *fn = "tensor_put";
    TENSOR__CHECK_ARG(fn, t);
    TENSOR__CHECK_ARG(fn, index);
    TENSOR__CHECK_ARG(fn, source);
    tensor *ins[3] = {t, index, source};
    if (!tensor__same_device(fn, 3, ins)) return NULL;
    if (!tensor__ix_index_dtype(fn, index)) return NULL;
    if (source->dtype != t->dtype) return tensor__fail(fn, "source dtype %s must equal the input dtype %s", tensor__dtype_names[source->dtype], tensor__dtype_names[t->dtype]);
    int64_t k = tensor__numel_of(index->ndim, index->shape), ns = tensor__numel_of(source->ndim, source->shape);
    if (k != ns) return tensor__fail(fn, "source has %lld elements but index has %lld: they must be equal", (long long)ns, (long long)k);
    bool had = tensor__error_set;
    tensor__tmps s = {{0}, 0};
    tensor *tf = tensor__ix_flat(&s, t);
    tensor *idx = tf ? tensor__ix_flat(&s, tensor__ix_wrap(&s, fn, index, tf->shape[0], -1, true)) : NULL;
    tensor *sf = idx ? tensor__ix_flat(&s, source) : NULL;
    tensor *o = sf ? tensor__tmp(&s, accumulate ? tensor_scatter_add(tf, 0, idx, sf) : tensor_scatter(tf, 0, idx, sf)) : NULL;
    tensor *r = o ? tensor__tmp(&s, tensor_reshape(o, t->ndim, t->shape)) : NULL;
    return tensor__ix_done(&s, r, fn, had);
}

/* ---- slice_scatter, select_scatter, diagonal_scatter ---- */

/* src checked against the shape (nd, shape) it must fill. */
static bool tensor__ix_fits(const char *fn, tensor *src, tensor *t, int nd, const int64_t *shape) {
    if (src->dtype != t->dtype) { tensor__fail(fn, "src dtype %s must equal the input dtype %s", tensor__dtype_names[src->dtype], tensor__dtype_names[t->dtype]); return false; }
    if (src->storage->device != t->storage->device) { tensor__fail(fn, "inputs are on different devices; move them with tensor_to_device"); return false; }
    bool ok = src->ndim == nd;
    for (int i = 0; ok && i < nd; i++) ok = src->shape[i] == shape[i];
    if (!ok) {
        char b[160];
        tensor__fail(fn, "src of shape %s must have the shape of the part it fills, %s", tensor__shape_of(src), tensor__shape_str(b, sizeof b, nd, shape));
    }
    return ok;
}

TENSOR_API tensor *tensor_slice_scatter(tensor *t, tensor *src, int dim, int64_t start, int64_t end, int64_t step) {
    const char *fn = "tensor_slice_scatter";
    TENSOR__CHECK_ARG(fn, t);
    TENSOR__CHECK_ARG(fn, src);
    if (t->ndim == 0) return tensor__fail(fn, "cannot slice a 0-dim tensor");
    int d = tensor__wrap_dim(fn, dim, t->ndim);
    if (d < 0) return NULL;
    if (step <= 0) return tensor__fail(fn, "step must be positive, got %lld", (long long)step);
    bool had = tensor__error_set;
    tensor__tmps s = {{0}, 0};
    tensor *r = NULL;
    /* the positions the slice takes along d (Python's slice rules, from tensor_slice) */
    tensor *ar = tensor__ix_arange(&s, t->shape[d], TENSOR_CPU);
    tensor *idx = ar ? tensor__tmp(&s, tensor_slice(ar, 0, start, end, step)) : NULL;
    if (idx) {
        int64_t sh[TENSOR_MAX_DIMS];
        for (int i = 0; i < t->ndim; i++) sh[i] = i == d ? idx->shape[0] : t->shape[i];
        if (tensor__ix_fits(fn, src, t, t->ndim, sh)) {
            tensor *di = tensor__ix_dev(&s, idx, t->storage->device);
            r = di ? tensor__tmp(&s, tensor_index_copy(t, d, di, src)) : NULL;
        }
    }
    return tensor__ix_done(&s, r, fn, had);
}

TENSOR_API tensor *tensor_select_scatter(tensor *t, tensor *src, int dim, int64_t index) {
    const char *fn = "tensor_select_scatter";
    TENSOR__CHECK_ARG(fn, t);
    TENSOR__CHECK_ARG(fn, src);
    if (t->ndim == 0) return tensor__fail(fn, "cannot select from a 0-dim tensor");
    int d = tensor__wrap_dim(fn, dim, t->ndim);
    if (d < 0) return NULL;
    int64_t size = t->shape[d];
    if (index < -size || index >= size) return tensor__fail(fn, "index %lld is out of bounds for dim %d with size %lld", (long long)index, d, (long long)size);
    if (index < 0) index += size;
    int64_t sh[TENSOR_MAX_DIMS];
    for (int i = 0, j = 0; i < t->ndim; i++)
        if (i != d) sh[j++] = t->shape[i];
    if (!tensor__ix_fits(fn, src, t, t->ndim - 1, sh)) return NULL;
    bool had = tensor__error_set;
    tensor__tmps s = {{0}, 0};
    tensor *ix = tensor__tmp(&s, tensor__full_on(1, tensor__one_dim, (double)index, TENSOR_I64, t->storage->device));
    tensor *u = ix ? tensor__tmp(&s, tensor_unsqueeze(src, d)) : NULL;
    tensor *r = u ? tensor__tmp(&s, tensor_index_copy(t, d, ix, u)) : NULL;
    return tensor__ix_done(&s, r, fn, had);
}

TENSOR_API tensor *tensor_diagonal_scatter(tensor *t, tensor *src, int64_t offset, int dim1, int dim2) {
    const char *fn = "tensor_diagonal_scatter";
    TENSOR__CHECK_ARG(fn, t);
    TENSOR__CHECK_ARG(fn, src);
    bool had = tensor__error_set;
    tensor__tmps s = {{0}, 0};
    tensor *r = NULL;
    /* the flat positions of the diagonal's elements: the same diagonal taken of 0..numel-1 */
    tensor *pos = tensor__tmp(&s, tensor__positions(t->ndim, t->shape));
    tensor *dg = pos ? tensor__tmp(&s, tensor_diagonal(pos, offset, dim1, dim2)) : NULL;
    if (dg && tensor__ix_fits(fn, src, t, dg->ndim, dg->shape)) {
        tensor *di = tensor__ix_dev(&s, tensor__ix_flat(&s, dg), t->storage->device);
        tensor *tf = di ? tensor__ix_flat(&s, t) : NULL, *sf = tf ? tensor__ix_flat(&s, src) : NULL;
        tensor *o = sf ? tensor__tmp(&s, tensor_scatter(tf, 0, di, sf)) : NULL;
        r = o ? tensor__tmp(&s, tensor_reshape(o, t->ndim, t->shape)) : NULL;
    }
    return tensor__ix_done(&s, r, fn, had);
}

/* ---- searchsorted (kernel), bucketize ---- */

/* out[q] = the number of entries of the sorted row of values[q] that lie before it: the first
   i with seq[i] >= v (right: seq[i] > v), as PyTorch's loop compares (NaN sorts last). seq and
   values contiguous, of one dtype; seq [M] for every value, or [R, M] with R rows of K values.
   ip[0] right. out: values' shape, i64 or i32. */
static int tensor__cpu_searchsorted(tensor__call *c) {
    tensor *seq = c->in[0], *val = c->in[1], *o = c->out;
    tensor_dtype dt = val->dtype;
    bool right = c->ip[0] != 0, fl = tensor__is_float(dt);
    int64_t n = tensor__numel_of(val->ndim, val->shape), M = seq->ndim ? seq->shape[seq->ndim - 1] : 1;
    int64_t K = val->ndim ? val->shape[val->ndim - 1] : 1;
    size_t esz = tensor__dtype_sizes[dt];
    const char *sb = tensor__data(seq), *vb = tensor__data(val);
    char *ob = tensor__data(o);
    for (int64_t q = 0; q < n; q++) {
        const char *row = sb + (seq->ndim > 1 ? (q / K) * M : 0) * (int64_t)esz;
        int64_t lo = 0, hi = M;
        if (fl) {
            double v = tensor__load_f64(vb + q * (int64_t)esz, dt);
            while (lo < hi) {
                int64_t mid = lo + (hi - lo) / 2;
                double x = tensor__load_f64(row + mid * (int64_t)esz, dt);
                if (right ? !(x > v) : !(x >= v)) lo = mid + 1;
                else hi = mid;
            }
        } else {
            int64_t v = tensor__load_i64(vb + q * (int64_t)esz, dt);
            while (lo < hi) {
                int64_t mid = lo + (hi - lo) / 2;
                int64_t x = tensor__load_i64(row + mid * (int64_t)esz, dt);
                if (right ? !(x > v) : !(x >= v)) lo = mid + 1;
                else hi = mid;
            }
        }
        tensor__store_i64(ob + q * (int64_t)tensor__dtype_sizes[o->dtype], o->dtype, lo);
    }
    return 0;
}

static tensor *tensor__searchsorted(const char *fn, tensor *seq, tensor *values, bool out_int32, bool right, tensor *sorter) {
    TENSOR__CHECK_ARG(fn, seq);
    TENSOR__CHECK_ARG(fn, values);
    tensor *ins[3] = {seq, values, sorter};
    if (!tensor__same_device(fn, 3, ins)) return NULL;
    if (seq->ndim == 0) return tensor__fail(fn, "the sorted sequence must have at least 1 dim, got a 0-dim tensor");
    if (seq->dtype == TENSOR_BOOL || values->dtype == TENSOR_BOOL) return tensor__fail(fn, "bool tensors are not supported");
    if (seq->ndim > 1) {
        bool ok = values->ndim == seq->ndim;
        for (int i = 0; ok && i < seq->ndim - 1; i++) ok = values->shape[i] == seq->shape[i];
        if (!ok) return tensor__fail(fn, "the sorted sequence of shape %s and values of shape %s must have the same dims but the last", tensor__shape_of(seq), tensor__shape_of(values));
    }
    if (sorter) {
        if (!tensor__ix_index_dtype(fn, sorter)) return NULL;
        bool ok = sorter->ndim == seq->ndim;
        for (int i = 0; ok && i < seq->ndim; i++) ok = sorter->shape[i] == seq->shape[i];
        if (!ok) return tensor__fail(fn, "sorter of shape %s must have the shape of the sorted sequence, %s", tensor__shape_of(sorter), tensor__shape_of(seq));
    }
    bool had = tensor__error_set;
    tensor__tmps s = {{0}, 0};
    tensor *r = NULL;
    tensor_dtype dt = tensor_promote_types(seq->dtype, values->dtype);
    tensor *sq = seq;
    if (sorter) {
        int last = seq->ndim - 1;
        sq = tensor__tmp(&s, tensor_take_along_dim(seq, sorter, &last));
    }
    tensor *sc = sq ? tensor__tmp(&s, tensor_contiguous(sq->dtype == dt ? sq : tensor__tmp(&s, tensor_to_dtype(sq, dt)))) : NULL;
    tensor *vc = sc ? tensor__tmp(&s, tensor_contiguous(values->dtype == dt ? values : tensor__tmp(&s, tensor_to_dtype(values, dt)))) : NULL;
    if (vc) {
        tensor__call c;
        tensor__call_init(&c, TENSOR_OP_searchsorted);
        c.fn = fn;
        c.n_in = 2;
        c.in[0] = sc;
        c.in[1] = vc;
        c.ip[0] = right;
        c.out = tensor__new(fn, values->ndim, values->shape, out_int32 ? TENSOR_I32 : TENSOR_I64, values->storage->device);
        r = c.out ? tensor__tmp(&s, tensor__dispatch(&c)) : NULL;
    }
    return tensor__ix_done(&s, r, fn, had);
}
TENSOR_API tensor *tensor_searchsorted(tensor *sorted_sequence, tensor *values, bool out_int32, bool right, tensor *sorter) {
    return tensor__searchsorted("tensor_searchsorted", sorted_sequence, values, out_int32, right, sorter);
}
TENSOR_API tensor *tensor_bucketize(tensor *input, tensor *boundaries, bool out_int32, bool right) {
    const char *fn = "tensor_bucketize";
    TENSOR__CHECK_ARG(fn, input);
    TENSOR__CHECK_ARG(fn, boundaries);
    if (boundaries->ndim != 1) return tensor__fail(fn, "boundaries must be 1-D, got shape %s", tensor__shape_of(boundaries));
    return tensor__searchsorted(fn, boundaries, input, out_int32, right, NULL);
}

/* ---- bincount, histc (scatter_add) ---- */

TENSOR_API tensor *tensor_bincount(tensor *input, tensor *weights, int64_t minlength) {
    const char *fn = "tensor_bincount";
    TENSOR__CHECK_ARG(fn, input);
    if (input->ndim != 1 || !tensor__is_int(input->dtype)) return tensor__fail(fn, "input must be a 1-D integer tensor, got %s of shape %s", tensor__dtype_names[input->dtype], tensor__shape_of(input));
    if (minlength < 0) return tensor__fail(fn, "minlength must be non-negative, got %lld", (long long)minlength);
    if (weights) {
        tensor *ins[2] = {input, weights};
        if (!tensor__same_device(fn, 2, ins)) return NULL;
        if (weights->ndim != 1 || weights->shape[0] != input->shape[0]) return tensor__fail(fn, "weights of shape %s must be 1-D of the input's length %lld", tensor__shape_of(weights), (long long)input->shape[0]);
        if (weights->dtype == TENSOR_BOOL) return tensor__fail(fn, "weights must be numbers, got bool");
    }
    bool had = tensor__error_set;
    tensor__tmps s = {{0}, 0};
    tensor *r = NULL;
    tensor_device dev = input->storage->device;
    tensor_dtype odt = !weights ? TENSOR_I64 : weights->dtype == TENSOR_F32 ? TENSOR_F32 : TENSOR_F64;
    int64_t n = input->shape[0], size = minlength;
    tensor *ix = tensor__tmp(&s, tensor_to_dtype(input, TENSOR_I64));
    if (ix && n > 0) {
        int64_t lo, hi;
        if (!tensor__item_i64(tensor__tmp(&s, tensor_min_all(ix)), &lo) || !tensor__item_i64(tensor__tmp(&s, tensor_max_all(ix)), &hi)) goto done;
        if (lo < 0) { tensor__fail(fn, "input must be non-negative, got %lld", (long long)lo); goto done; }
        if (hi >= TENSOR__MAX_NUMEL) { tensor__fail(fn, "the largest input %lld needs too many bins", (long long)hi); goto done; }
        if (hi + 1 > size) size = hi + 1;
    }
    if (ix) {
        tensor *z = tensor__tmp(&s, tensor__full_on(1, &size, 0, odt, dev));
        tensor *w = !z ? NULL : weights ? (weights->dtype == odt ? weights : tensor__tmp(&s, tensor_to_dtype(weights, odt))) : tensor__tmp(&s, tensor__full_on(1, &n, 1, odt, dev));
        r = w ? tensor__tmp(&s, tensor_scatter_add(z, 0, ix, w)) : NULL;
    }
done:
    return tensor__ix_done(&s, r, fn, had);
}

TENSOR_API tensor *tensor_histc(tensor *input, int64_t bins, double min, double max) {
    const char *fn = "tensor_histc";
    TENSOR__CHECK_ARG(fn, input);
    if (!tensor__is_float(input->dtype)) return tensor__fail(fn, "input must be floating point, got %s", tensor__dtype_names[input->dtype]);
    if (bins <= 0 || bins > TENSOR__MAX_NUMEL) return tensor__fail(fn, "bins must be > 0, got %lld", (long long)bins);
    if (!(min <= max)) return tensor__fail(fn, "max must be larger than min, got min %g and max %g", min, max);
    if (!isfinite(min) || !isfinite(max)) return tensor__fail(fn, "range of [%g, %g] is not finite", min, max);
    bool had = tensor__error_set;
    tensor__tmps s = {{0}, 0};
    tensor *r = NULL;
    tensor_dtype dt = input->dtype;
    tensor_device dev = input->storage->device;
    int64_t n = tensor__numel_of(input->ndim, input->shape);
    if (min == max && n > 0) { /* the data's range */
        if (!tensor__ix_item(tensor__tmp(&s, tensor_min_all(input)), &min) || !tensor__ix_item(tensor__tmp(&s, tensor_max_all(input)), &max)) goto done;
        if (!isfinite(min) || !isfinite(max)) { tensor__fail(fn, "range of [%g, %g] is not finite", min, max); goto done; }
    }
    if (min == max) { min -= 1; max += 1; }
    {
        /* bin (x - min) * bins / (max - min) computed in the input's dtype, as PyTorch; x == max in
           the last bin; x outside [min, max] (or NaN) counted nowhere */
        tensor *x = tensor__ix_flat(&s, input);
        tensor *lo = tensor__ix_num(&s, min, dt, dev), *hi = tensor__ix_num(&s, max, dt, dev);
        tensor *in = x && lo && hi ? tensor__tmp(&s, tensor_logical_and(tensor__tmp(&s, tensor_ge(x, lo)), tensor__tmp(&s, tensor_le(x, hi)))) : NULL;
        tensor *lo_t = in ? tensor__tmp(&s, tensor_to_dtype(lo, dt)) : NULL;
        tensor *span = lo_t ? tensor__tmp(&s, tensor_sub(hi, lo_t)) : NULL;
        tensor *pos = span ? tensor__tmp(&s, tensor_div(tensor__tmp(&s, tensor_mul(tensor__tmp(&s, tensor_sub(x, lo)), tensor__ix_num(&s, (double)bins, dt, dev))), span)) : NULL;
        tensor *safe = pos ? tensor__tmp(&s, tensor_where(in, pos, tensor__ix_num(&s, 0, dt, dev))) : NULL;
        tensor *bi = safe ? tensor__tmp(&s, tensor_to_dtype(tensor__tmp(&s, tensor_trunc(safe)), TENSOR_I64)) : NULL;
        tensor *bc = bi ? tensor__tmp(&s, tensor_clamp_max(bi, (double)(bins - 1))) : NULL;
        tensor *w = bc ? tensor__tmp(&s, tensor_to_dtype(in, dt)) : NULL;
        tensor *z = w ? tensor__tmp(&s, tensor__full_on(1, &bins, 0, dt, dev)) : NULL;
        r = z ? tensor__tmp(&s, tensor_scatter_add(z, 0, bc, w)) : NULL;
    }
done:
    return tensor__ix_done(&s, r, fn, had);
}

/* ---- unique_consecutive (composite), unique (a host argsort, then unique_consecutive) ---- */

/* unique_consecutive of x2 [S, R] (rows compared whole): the row positions where a new run starts
   (*starts, 1-D i64) and the mask of those rows (*mask, [S] bool). */
static bool tensor__ix_runs(tensor__tmps *s, tensor *x2, tensor **mask, tensor **starts, int64_t *count) {
    tensor_device dev = x2->storage->device;
    int64_t S = x2->shape[0];
    tensor *first = tensor__tmp(s, tensor__full_on(1, tensor__one_dim, 1, TENSOR_BOOL, dev));
    tensor *m = first;
    if (S > 1 && first) {
        tensor *a = tensor__tmp(s, tensor_slice(x2, 0, 1, S, 1)), *b = tensor__tmp(s, tensor_slice(x2, 0, 0, S - 1, 1));
        tensor *ne = a && b ? tensor__tmp(s, tensor_ne(a, b)) : NULL;
        tensor *cnt = ne ? tensor__tmp(s, tensor_sum(ne, 1, false)) : NULL;
        tensor *diff = cnt ? tensor__tmp(s, tensor_gt(cnt, tensor__ix_num(s, 0, cnt->dtype, dev))) : NULL;
        tensor *parts[2] = {first, diff};
        m = diff ? tensor__tmp(s, tensor_cat(2, parts, 0)) : NULL;
    }
    if (!m) return false;
    *mask = m;
    *starts = tensor__ix_flat_nonzero(s, m, count);
    return *starts != NULL;
}

/* x seen as [S, R] rows along d (d < 0: the flattened x, rows of one element). */
static tensor *tensor__ix_rows(tensor__tmps *s, tensor *x, int d) {
    if (d < 0) {
        int64_t sh[2] = {tensor__numel_of(x->ndim, x->shape), 1};
        return tensor__tmp(s, tensor_reshape(x, 2, sh));
    }
    tensor *mv = tensor__tmp(s, tensor_movedim(x, d, 0));
    if (!mv) return NULL;
    int64_t sh[2] = {x->shape[d], tensor__numel_of(x->ndim, x->shape) / (x->shape[d] ? x->shape[d] : 1)};
    if (x->shape[d] == 0) sh[1] = tensor__numel_of(x->ndim - 1, mv->shape + 1);
    return tensor__tmp(s, tensor_reshape(mv, 2, sh));
}

/* The runs of equal rows of x along d (d < 0: elements of the flattened x): the values, the run of
   each row (*inverse, d < 0: x's shape) and each run's length (*counts). */
static tensor *tensor__ix_consecutive(tensor__tmps *s, tensor *x, int d, tensor **inverse, tensor **counts) {
    tensor *x2 = tensor__ix_rows(s, x, d), *mask, *starts;
    int64_t u;
    if (!x2 || !tensor__ix_runs(s, x2, &mask, &starts, &u)) return NULL;
    int64_t S = x2->shape[0];
    tensor_device dev = x->storage->device;
    if (S == 0) { /* nothing: empty values, inverse, counts */
        if (inverse && !(*inverse = tensor__tmp(s, tensor__full_on(d < 0 ? x->ndim : 1, d < 0 ? x->shape : &S, 0, TENSOR_I64, dev)))) return NULL;
        if (counts && !(*counts = tensor__tmp(s, tensor__full_on(1, &S, 0, TENSOR_I64, dev)))) return NULL;
        return d < 0 ? tensor__ix_flat(s, x) : tensor__tmp(s, tensor_clone(x));
    }
    if (inverse) {
        tensor *mi = tensor__tmp(s, tensor_to_dtype(mask, TENSOR_I64));
        tensor *cs = mi ? tensor__tmp(s, tensor_cumsum(mi, 0)) : NULL;
        tensor *inv = cs ? tensor__tmp(s, tensor_sub(cs, tensor__ix_num(s, 1, TENSOR_I64, dev))) : NULL;
        if (!inv || !(*inverse = d < 0 ? tensor__tmp(s, tensor_reshape(inv, x->ndim, x->shape)) : inv)) return NULL;
    }
    if (counts) {
        tensor *tail = tensor__tmp(s, tensor__full_on(1, tensor__one_dim, (double)S, TENSOR_I64, dev));
        tensor *nx = tail ? tensor__tmp(s, tensor_slice(starts, 0, 1, u, 1)) : NULL;
        tensor *parts[2] = {nx, tail};
        tensor *ends = nx ? tensor__tmp(s, tensor_cat(2, parts, 0)) : NULL;
        if (!ends || !(*counts = tensor__tmp(s, tensor_sub(ends, starts)))) return NULL;
    }
    if (d < 0) return tensor__tmp(s, tensor_index_select(tensor__ix_flat(s, x), 0, starts));
    return tensor__tmp(s, tensor_index_select(x, d, starts));
}

static bool tensor__ix_dim_arg(const char *fn, tensor *t, const int *dim, int *d) {
    *d = -1;
    if (!dim) return true;
    if (t->ndim == 0) { tensor__fail(fn, "cannot take the unique rows of a 0-dim tensor along a dim"); return false; }
    return (*d = tensor__wrap_dim(fn, *dim, t->ndim)) >= 0;
}

TENSOR_API tensor *tensor_unique_consecutive(tensor *t, const int *dim, tensor **inverse, tensor **counts) {
    const char *fn = "tensor_unique_consecutive";
    if (inverse) *inverse = NULL;
    if (counts) *counts = NULL;
    TENSOR__CHECK_ARG(fn, t);
    int d;
    if (!tensor__ix_dim_arg(fn, t, dim, &d)) return NULL;
    bool had = tensor__error_set;
    tensor__tmps s = {{0}, 0};
    tensor *inv = NULL, *cnt = NULL;
    tensor *r = tensor__ix_consecutive(&s, t, d, inverse ? &inv : NULL, counts ? &cnt : NULL);
    if (r) {
        if (inverse) *inverse = tensor__tmps_take(&s, inv);
        if (counts) *counts = tensor__tmps_take(&s, cnt);
    }
    return tensor__ix_done(&s, r, fn, had);
}

/* The stable argsort of the rows of x2 [S, R] (contiguous, on the CPU): rows compared element by
   element, NaN after every number (PyTorch's sort order); a merge sort of positions. */
typedef struct { const char *base; tensor_dtype dt; int64_t R; size_t esz; } tensor__rowcmp;
static int tensor__row_compare(const tensor__rowcmp *k, int64_t a, int64_t b) {
    const char *pa = k->base + (size_t)(a * k->R) * k->esz, *pb = k->base + (size_t)(b * k->R) * k->esz;
    for (int64_t j = 0; j < k->R; j++, pa += k->esz, pb += k->esz) {
        if (tensor__is_float(k->dt)) {
            double x = tensor__load_f64(pa, k->dt), y = tensor__load_f64(pb, k->dt);
            bool nx = x != x, ny = y != y;
            if (nx || ny) { if (nx != ny) return nx ? 1 : -1; continue; }
            if (x != y) return x < y ? -1 : 1;
        } else {
            int64_t x = tensor__load_i64(pa, k->dt), y = tensor__load_i64(pb, k->dt);
            if (x != y) return x < y ? -1 : 1;
        }
    }
    return 0;
}
static void tensor__row_argsort(const tensor__rowcmp *k, int64_t *p, int64_t *tmp, int64_t n) {
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n, i = lo, j = mid, o = lo;
            while (i < mid && j < hi) tmp[o++] = tensor__row_compare(k, p[j], p[i]) < 0 ? p[j++] : p[i++];
            while (i < mid) tmp[o++] = p[i++];
            while (j < hi) tmp[o++] = p[j++];
        }
        memcpy(p, tmp, sizeof(int64_t) * (size_t)n);
    }
}

TENSOR_API tensor *tensor_unique(tensor *t, bool sorted, const int *dim, tensor **inverse, tensor **counts) {
    const char *fn = "tensor_unique";
    (void)sorted; /* always sorted: PyTorch's order for sorted=false is unspecified */
    if (inverse) *inverse = NULL;
    if (counts) *counts = NULL;
    TENSOR__CHECK_ARG(fn, t);
    int d;
    if (!tensor__ix_dim_arg(fn, t, dim, &d)) return NULL;
    bool had = tensor__error_set;
    tensor__tmps s = {{0}, 0};
    tensor *r = NULL, *inv = NULL, *cnt = NULL;
    tensor_device dev = t->storage->device;
    /* the rows' order, on the host */
    tensor *x2 = tensor__ix_rows(&s, t, d);
    tensor *h = x2 ? tensor__tmp(&s, tensor_contiguous(tensor__ix_dev(&s, x2, TENSOR_CPU))) : NULL;
    if (h) {
        int64_t S = h->shape[0];
        tensor *perm = tensor__tmp(&s, tensor_empty(1, &S, TENSOR_I64));
        int64_t *tmp = perm ? (int64_t *)TENSOR__MALLOC(sizeof(int64_t) * (size_t)(S ? S : 1)) : NULL;
        if (perm && !tmp) tensor__fail(fn, "out of memory");
        if (tmp) {
            int64_t *p = (int64_t *)(void *)tensor__data(perm);
            for (int64_t i = 0; i < S; i++) p[i] = i;
            tensor__rowcmp k = {tensor__data(h), h->dtype, h->shape[1], tensor__dtype_sizes[h->dtype]};
            tensor__row_argsort(&k, p, tmp, S);
            TENSOR_FREE(tmp);
            tensor *pd = tensor__ix_dev(&s, perm, dev);
            /* the sorted rows, their runs; the inverse maps back through the permutation */
            tensor *sorted_x = pd ? tensor__tmp(&s, d < 0 ? tensor_index_select(tensor__ix_flat(&s, t), 0, pd) : tensor_index_select(t, d, pd)) : NULL;
            tensor *sinv = NULL;
            r = sorted_x ? tensor__ix_consecutive(&s, sorted_x, d < 0 ? -1 : d, inverse ? &sinv : NULL, counts ? &cnt : NULL) : NULL;
            if (r && inverse) {
                tensor *sf = tensor__ix_flat(&s, sinv);
                tensor *z = sf ? tensor__tmp(&s, tensor__full_on(1, &S, 0, TENSOR_I64, dev)) : NULL;
                tensor *iv = z ? tensor__tmp(&s, tensor_scatter(z, 0, pd, sf)) : NULL;
                inv = !iv ? NULL : d < 0 ? tensor__tmp(&s, tensor_reshape(iv, t->ndim, t->shape)) : iv;
                if (!inv) r = NULL;
            }
        }
    }
    if (r) {
        if (inverse) *inverse = tensor__tmps_take(&s, inv);
        if (counts) *counts = tensor__tmps_take(&s, cnt);
    }
    return tensor__ix_done(&s, r, fn, had);
}

/* ---- repeat_interleave with a tensor of repeats ---- */

/* Output position p takes source element idx[p] = the number of running totals of repeats that are
   <= p (searchsorted, right), so the index is built where t lives and only the total and the
   smallest repeat come back to the host (the total summed in f64: an i64 sum could wrap);
   index_select then gives the gradient. */
TENSOR_API tensor *tensor_repeat_interleave_tensor(tensor *t, tensor *repeats, const int *dim) {
    const char *fn = "tensor_repeat_interleave_tensor";
    TENSOR__CHECK_ARG(fn, t);
    TENSOR__CHECK_ARG(fn, repeats);
    tensor *ins[2] = {t, repeats};
    if (!tensor__same_device(fn, 2, ins)) return NULL;
    if (!tensor__is_int(repeats->dtype) || repeats->ndim > 1)
        return tensor__fail(fn, "repeats must be a 0-dim or 1-D integer tensor, got %s of shape %s", tensor__dtype_names[repeats->dtype], tensor__shape_of(repeats));
    int d = 0;
    if (dim && (d = tensor__wrap_dim(fn, *dim, t->ndim ? t->ndim : 1)) < 0) return NULL;
    bool had = tensor__error_set;
    tensor__tmps s = {{0}, 0};
    tensor *x = !dim || t->ndim == 0 ? tensor__ix_flat(&s, t) : t, *rep = NULL, *ends = NULL, *pos = NULL, *idx = NULL, *r = NULL;
    int64_t size = x ? x->shape[d] : 0, nrep = tensor__numel_of(repeats->ndim, repeats->shape);
    int64_t lo = 0;
    double total = 0; /* summed in double: an int64 sum could overflow */
    if (!x) goto done;
    if (nrep != 1 && nrep != size) { tensor__fail(fn, "repeats must have one element or %lld (the size of the dim), got %lld", (long long)size, (long long)nrep); goto done; }
    rep = tensor__tmp(&s, tensor_to_dtype(tensor__ix_flat(&s, repeats), TENSOR_I64));
    if (rep && nrep == 1 && size != 1) rep = tensor__tmp(&s, tensor_expand(rep, 1, &size));
    if (!rep || (size > 0 && (!tensor__item_i64(tensor__tmp(&s, tensor_min_all(rep)), &lo) || !tensor__ix_item(tensor__tmp(&s, tensor_sum_all(tensor__tmp(&s, tensor_to_dtype(rep, TENSOR_F64)))), &total)))) goto done;
    if (lo < 0) { tensor__fail(fn, "repeats can not be negative, got %lld", (long long)lo); goto done; }
    if (total > (double)TENSOR__MAX_NUMEL) { tensor__fail(fn, "repeats sum to more than %lld elements", (long long)TENSOR__MAX_NUMEL); goto done; }
    ends = size > 0 ? tensor__tmp(&s, tensor_cumsum(rep, 0)) : rep;
    pos = ends ? tensor__ix_arange(&s, (int64_t)total, t->storage->device) : NULL;
    idx = pos ? tensor__tmp(&s, tensor_searchsorted(ends, pos, false, true, NULL)) : NULL;
    r = idx ? tensor__tmp(&s, tensor_index_select(x, d, idx)) : NULL;
done:
    return tensor__ix_done(&s, r, fn, had);
}
