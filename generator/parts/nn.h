// >>nn -----------------------------------------------------------------------------------------
/* The neural-network functions without a part of their own (softmax, log_softmax, embedding,
   dropout, relu's fused backward) and what the nn parts after this one share: rows along a dim
   and the vector level of their kernels. The families follow in their own parts: >>norm
   (layer_norm, rms_norm), >>conv (conv1d, conv2d), >>pool (max_pool2d, avg_pool2d), >>attention
   (scaled_dot_product_attention), >>loss (cross_entropy, nll_loss and the other losses). */

/* Rows along one dim: the start offsets (in elements) of every row of up to two tensors of one
   shape, walked in row-major order of the other dims. dim -1 stands for the single one-element
   row of a 0-dim tensor. */
typedef struct {
    int nd;
    int64_t shape[TENSOR_MAX_DIMS], idx[TENSOR_MAX_DIMS], stride[2][TENSOR_MAX_DIMS];
    int64_t off[2], count;
} tensor__rows;

static void tensor__rows_init(tensor__rows *r, const tensor *t0, const tensor *t1, int dim) {
    r->nd = 0;
    r->count = 1;
    for (int d = 0; d < t0->ndim; d++) {
        if (d == dim) continue;
        r->shape[r->nd] = t0->shape[d];
        r->stride[0][r->nd] = t0->strides[d];
        r->stride[1][r->nd] = t1->strides[d];
        r->idx[r->nd] = 0;
        r->count *= t0->shape[d];
        r->nd++;
    }
    r->off[0] = t0->offset;
    r->off[1] = t1->offset;
}

static void tensor__rows_next(tensor__rows *r) {
    for (int d = r->nd - 1; d >= 0; d--) {
        r->off[0] += r->stride[0][d];
        r->off[1] += r->stride[1][d];
        if (++r->idx[d] < r->shape[d]) return;
        r->off[0] -= r->stride[0][d] * r->shape[d];
        r->off[1] -= r->stride[1][d] * r->shape[d];
        r->idx[d] = 0;
    }
}

/* dst[i] = t's element at offset off + i * stride (elements), as double. */
static void tensor__load_row(double *dst, const tensor *t, int64_t off, int64_t stride, int64_t n) {
    const char *base = (const char *)t->storage->data;
    if (t->dtype == TENSOR_F32) { const float *s = (const float *)base + off; for (int64_t i = 0; i < n; i++) dst[i] = s[i * stride]; }
    else if (t->dtype == TENSOR_F64) { const double *s = (const double *)base + off; for (int64_t i = 0; i < n; i++) dst[i] = s[i * stride]; }
    else {
        int64_t esz = (int64_t)tensor__dtype_sizes[t->dtype];
        for (int64_t i = 0; i < n; i++) dst[i] = tensor__load_f64(base + (off + i * stride) * esz, t->dtype);
    }
}

/* t's elements at offset off + i * stride = src[i], rounded to t's dtype. */
static void tensor__store_row(tensor *t, int64_t off, int64_t stride, const double *src, int64_t n) {
    char *base = (char *)t->storage->data;
    if (t->dtype == TENSOR_F32) { float *d = (float *)base + off; for (int64_t i = 0; i < n; i++) d[i * stride] = (float)src[i]; }
    else if (t->dtype == TENSOR_F64) { double *d = (double *)base + off; for (int64_t i = 0; i < n; i++) d[i * stride] = src[i]; }
    else {
        int64_t esz = (int64_t)tensor__dtype_sizes[t->dtype];
        for (int64_t i = 0; i < n; i++) tensor__store_f64(base + (off + i * stride) * esz, t->dtype, src[i]);
    }
}

/* A 1-D optional parameter (norm weight or bias) as n doubles; fill where absent. */
static double *tensor__param_row(const char *fn, const tensor *t, int64_t n, double fill) {
    double *v = (double *)tensor__scratch(fn, (size_t)n * sizeof(double));
    if (!v) return NULL;
    if (t) tensor__load_row(v, t, t->offset, t->strides[0], n);
    else for (int64_t i = 0; i < n; i++) v[i] = fill;
    return v;
}

/* ---- softmax, log_softmax ---- */

/* Moves r (just initialized) to row q. */
static void tensor__rows_seek(tensor__rows *r, int64_t q) {
    if (q == 0) return; /* already there; and with no rows (a size-0 dim) nothing to divide by */
    for (int d = r->nd - 1; d >= 0; d--) {
        int64_t i = q % r->shape[d];
        q /= r->shape[d];
        r->idx[d] = i;
        r->off[0] += i * r->stride[0][d];
        r->off[1] += i * r->stride[1][d];
    }
}


/* One row of softmax (or log_softmax) in double, its elements xs and ys apart: the reference
   formula, for the rows with a NaN or an infinity that the fast path hands back (and for strided
   rows when there is no memory to gather them). */
static void tensor__softmax_row_f32(float *y, int64_t ys, const float *x, int64_t xs, int64_t n, bool log_form) {
    double mx = -INFINITY, sum = 0;
    for (int64_t i = 0; i < n; i++) if (x[i * xs] > mx) mx = x[i * xs];
    for (int64_t i = 0; i < n; i++) sum += exp((double)x[i * xs] - mx);
    if (log_form) {
        double lse = mx + log(sum);
        for (int64_t i = 0; i < n; i++) y[i * ys] = (float)((double)x[i * xs] - lse);
    } else {
        for (int64_t i = 0; i < n; i++) y[i * ys] = (float)(exp((double)x[i * xs] - mx) / sum);
    }
}

typedef struct { const tensor *x; tensor *y; int dim; int64_t len; bool log_form; int oom; } tensor__softmax_task;

/* Rows [begin, end) of an f32 softmax: max and e^(x - max) in one pass (the exponentials land in
   y), then one scaling pass. A row whose elements are not adjacent in x or y (softmax over a dim
   other than the innermost) is gathered into a buffer, done there and scattered back: the rows
   of a chunk sit side by side in memory, so the gathers share cache lines. */
static void tensor__softmax_rows_f32(int64_t begin, int64_t end, void *vt) {
    tensor__softmax_task *t = (tensor__softmax_task *)vt;
    tensor__rows r;
    tensor__rows_init(&r, t->x, t->y, t->dim);
    tensor__rows_seek(&r, begin);
    const float *xb = (const float *)t->x->storage->data;
    float *yb = (float *)t->y->storage->data;
    int64_t n = t->len, xs = t->x->strides[t->dim], ys = t->y->strides[t->dim];
    bool strided = n > 1 && (xs != 1 || ys != 1);
    float *buf = strided ? (float *)tensor__alloc_aligned(2 * (size_t)n * sizeof(float)) : NULL; /* (pool threads: no cache) */
    if (strided && !buf) { /* the double formula would round differently: an error, not a silent change */
        __atomic_store_n(&t->oom, 1, __ATOMIC_RELAXED);
        return;
    }
    for (int64_t q = begin; q < end; q++, tensor__rows_next(&r)) {
        const float *x = xb + r.off[0];
        float *y = yb + r.off[1], m;
        if (strided) {
            for (int64_t i = 0; i < n; i++) buf[i] = x[i * xs];
            x = buf, y = buf + n;
        }
        double s = tensor__row_maxsumexp_f32(t->log_form ? NULL : y, x, n, &m);
        if (s != s) tensor__softmax_row_f32(y, 1, x, 1, n, t->log_form);
        else if (t->log_form) tensor__row_sub2_f32(y, x, n, m, (float)log(s));
        else tensor__row_affine_f32(y, y, n, (float)(1.0 / s), 0.0f);
        if (strided)
            for (int64_t i = 0; i < n; i++) yb[r.off[1] + i * ys] = y[i];
    }
    tensor__free_aligned(buf);
}

/* out: same shape as x; each row along dim (ip[0]) becomes exp(x - max) / sum, or its log,
   computed in double. A row of -inf (fully masked) gives NaN, as in PyTorch. The fast path: f32
   rows, split over the pool. */
static int tensor__softmax_kernel(tensor__call *c, bool log_form) {
    tensor *x = c->in[0], *y = c->out;
    int dim = (int)c->ip[0];
    if (tensor__numel_of(x->ndim, x->shape) == 0) return 0;
    int64_t len = dim >= 0 ? x->shape[dim] : 1, xs = dim >= 0 ? x->strides[dim] : 0, ys = dim >= 0 ? y->strides[dim] : 0;
    if (!tensor__reference_kernels && x->dtype == TENSOR_F32 && dim >= 0) {
        tensor__softmax_task t;
        t.x = x;
        t.y = y;
        t.dim = dim;
        t.len = len;
        t.log_form = log_form;
        t.oom = 0;
        tensor__parallel_for(tensor__numel_of(x->ndim, x->shape) / len, tensor__grain(len), tensor__softmax_rows_f32, &t);
        if (TENSOR__TASK_FAILED(t.oom)) { tensor__fail(c->fn, "out of memory allocating %lld floats of scratch", (long long)(2 * len)); return 1; }
        return 0;
    }
    double *row = (double *)tensor__scratch(c->fn, (size_t)len * sizeof(double));
    if (!row) return 1;
    tensor__rows r;
    tensor__rows_init(&r, x, y, dim);
    for (int64_t q = 0; q < r.count; q++, tensor__rows_next(&r)) {
        tensor__load_row(row, x, r.off[0], xs, len);
        double mx = -INFINITY, sum = 0;
        for (int64_t i = 0; i < len; i++) if (row[i] > mx) mx = row[i];
        for (int64_t i = 0; i < len; i++) sum += exp(row[i] - mx);
        if (log_form) {
            double lse = mx + log(sum);
            for (int64_t i = 0; i < len; i++) row[i] = row[i] - lse;
        } else {
            for (int64_t i = 0; i < len; i++) row[i] = exp(row[i] - mx) / sum;
        }
        tensor__store_row(y, r.off[1], ys, row, len);
    }
    tensor__free_aligned(row);
    return 0;
}
static int tensor__cpu_softmax(tensor__call *c) { return tensor__softmax_kernel(c, false); }
static int tensor__cpu_log_softmax(tensor__call *c) { return tensor__softmax_kernel(c, true); }

/* Fused backward of softmax (s (g - sum(g s))) and log_softmax (g - s sum(g)) along dim, with s
   recomputed from x row by row: one kernel instead of five ops and their temporaries. Used by the
   derivatives when the backward pass is not itself recorded (no create_graph). */
#define TENSOR__DEFINE_SOFTMAX_BWD_ROW(sfx, T)                                                            \
    static void tensor__softmax_bwd_row_##sfx(T *gx, const T *x, const T *g, int64_t n, bool log_form) { \
        double mx = -INFINITY, sum = 0, dot = 0;                                                         \
        for (int64_t i = 0; i < n; i++) if (x[i] > mx) mx = x[i];                                        \
        for (int64_t i = 0; i < n; i++) sum += exp((double)x[i] - mx);                                   \
        for (int64_t i = 0; i < n; i++) dot += log_form ? (double)g[i] : (double)g[i] * (exp((double)x[i] - mx) / sum); \
        for (int64_t i = 0; i < n; i++) {                                                                \
            double s = exp((double)x[i] - mx) / sum;                                                     \
            gx[i] = (T)(log_form ? (double)g[i] - s * dot : s * ((double)g[i] - dot));                   \
        }                                                                                                \
    }
TENSOR__DEFINE_SOFTMAX_BWD_ROW(f32, float)
TENSOR__DEFINE_SOFTMAX_BWD_ROW(f64, double)

typedef struct { const char *x, *g; char *gx; int64_t len; bool log_form, f32; } tensor__softmax_bwd_task;
static void tensor__softmax_bwd_rows(int64_t begin, int64_t end, void *vt) {
    const tensor__softmax_bwd_task *t = (const tensor__softmax_bwd_task *)vt;
    int64_t n = t->len;
    for (int64_t q = begin; q < end; q++) {
        if (!t->f32) {
            tensor__softmax_bwd_row_f64((double *)t->gx + q * n, (const double *)t->x + q * n, (const double *)t->g + q * n, n, t->log_form);
            continue;
        }
        float *gx = (float *)t->gx + q * n, m;
        const float *x = (const float *)t->x + q * n, *g = (const float *)t->g + q * n;
        double s = tensor__row_maxsumexp_f32(gx, x, n, &m); /* gx = e^(x - max) */
        if (s != s) tensor__softmax_bwd_row_f32(gx, x, g, n, t->log_form);
        else if (t->log_form) tensor__row_fms_f32(gx, g, n, (float)(tensor__row_sum_f32(g, n) / s));
        else tensor__row_smbwd_f32(gx, g, n, (float)(1.0 / s), (float)(tensor__row_dot_f32(g, gx, n) / s));
    }
}

/* 1 with *gx set, 0 when this path does not take the case (not f32/f64, or dim is not the
   innermost dim), -1 on error. */
static int tensor__softmax_backward(const char *fn, tensor *x, tensor *g, int dim, bool log_form, tensor **gx) {
    if (tensor__reference_kernels || (x->dtype != TENSOR_F32 && x->dtype != TENSOR_F64) || x->storage->device != TENSOR_CPU) return 0;
    for (int d = dim + 1; d < x->ndim; d++) if (x->shape[d] != 1) return 0;
    tensor *xc = tensor__contiguous(x) ? x : tensor__contiguous_copy(fn, x, x->dtype);
    tensor *gc = tensor__contiguous(g) && g->dtype == x->dtype ? g : tensor__contiguous_copy(fn, g, x->dtype);
    tensor *r = xc && gc ? tensor__new_like(fn, x, x->dtype) : NULL;
    if (r && tensor__numel_of(x->ndim, x->shape) > 0) {
        tensor__softmax_bwd_task t;
        t.x = tensor__data(xc);
        t.g = tensor__data(gc);
        t.gx = tensor__data(r);
        t.len = x->shape[dim];
        t.log_form = log_form;
        t.f32 = x->dtype == TENSOR_F32;
        tensor__parallel_for(tensor__numel_of(x->ndim, x->shape) / t.len, tensor__grain(t.len), tensor__softmax_bwd_rows, &t);
    }
    if (xc != x) tensor_free(xc);
    if (gc != g) tensor_free(gc);
    *gx = r;
    return r ? 1 : -1;
}

static tensor *tensor__softmax_front(tensor_op op, tensor *t, int dim) {
    const char *fn = tensor__ops[op].fn;
    TENSOR__CHECK_ARG(fn, t);
    if (!tensor__is_float(t->dtype))
        return tensor__fail(fn, "expected a floating tensor, got %s (convert it with tensor_to_dtype)", tensor__dtype_names[t->dtype]);
    int d = tensor__wrap_dim(fn, dim, t->ndim ? t->ndim : 1);
    if (d < 0) return NULL;
    tensor__call c;
    tensor__call_init(&c, op);
    c.n_in = 1;
    c.in[0] = t;
    c.ip[0] = t->ndim ? d : -1;
    c.out = tensor__new_like(fn, t, t->dtype);
    return c.out ? tensor__dispatch(&c) : NULL;
}
TENSOR_API tensor *tensor_softmax(tensor *t, int dim) { return tensor__softmax_front(TENSOR_OP_softmax, t, dim); }
TENSOR_API tensor *tensor_log_softmax(tensor *t, int dim) { return tensor__softmax_front(TENSOR_OP_log_softmax, t, dim); }

/* The vector level the kernels of the nn parts (this one and those after it) may use: 2 for
   AVX2+FMA, 3 for AVX-512F as well (x86 with gcc/clang), 0 for the plain loops. Chosen like the elementwise kernels (>>simd): the CPU's
   best, or a lower one named by TENSOR_SIMD, so the tests can run every path on one machine. */
#if TENSOR__SIMD_X86 /* gcc/clang on x86 without TENSOR_NO_SIMD; >>simd included <immintrin.h> */
#define TENSOR__NN_AVX2 1
#define TENSOR__NN_AVX512 1
#define TENSOR__AVX2_FN __attribute__((target("avx2,fma")))
#define TENSOR__AVX2_INLINE __attribute__((target("avx2,fma"), always_inline)) inline /* no call in the loops */
#define TENSOR__AVX512_FN __attribute__((target("avx512f,avx2,fma")))
/* Unrolls the next loop whole, so arrays of vectors indexed by its counter stay in registers (gcc
   -O2 keeps a 6-trip loop and its arrays in memory: 5x slower Winograd transforms, measured) */
#define TENSOR__UNROLL _Pragma("GCC unroll 8")
#else
#define TENSOR__NN_AVX2 0
#define TENSOR__NN_AVX512 0
#endif
static int tensor__nn_isa(void) {
#if TENSOR__NN_AVX512
    const tensor__simd_isa *v = tensor__simd();
    return !v ? 0 : v->width >= 16 ? 3 : v->width >= 8 ? 2 : 0;
#else
    return 0;
#endif
}

/* ---- embedding ---- */

/* out: [*indices.shape, D] = weight[indices[...], :]; an index outside [0, V) is an error. */
static int tensor__cpu_embedding(tensor__call *c) {
    tensor *w = c->in[0], *ix = c->in[1], *out = c->out;
    int64_t V = w->shape[0], D = w->shape[1];
    size_t esz = tensor__dtype_sizes[w->dtype];
    int64_t count = tensor__numel_of(ix->ndim, ix->shape), idx[TENSOR_MAX_DIMS] = {0};
    const char *wb = (const char *)w->storage->data, *ib = (const char *)ix->storage->data;
    char *o = tensor__data(out);
    for (int64_t q = 0; q < count; q++, tensor__next_index(ix->ndim, ix->shape, idx)) {
        int64_t v = tensor__load_i64(ib + tensor__offset_of(ix, idx) * (int64_t)tensor__dtype_sizes[ix->dtype], ix->dtype);
        if (v < 0 || v >= V) {
            tensor__fail(c->fn, "index %lld is out of range for %lld embeddings (weight shape %s)", (long long)v, (long long)V, tensor__shape_of(w));
            return 1;
        }
        const char *src = wb + (size_t)(w->offset + v * w->strides[0]) * esz;
        char *dst = o + (size_t)(q * D) * esz;
        if (w->strides[1] == 1 || D <= 1) memcpy(dst, src, (size_t)D * esz);
        else for (int64_t d = 0; d < D; d++) memcpy(dst + (size_t)d * esz, src + (size_t)(d * w->strides[1]) * esz, esz);
    }
    return 0;
}

TENSOR_API tensor *tensor_embedding(tensor *weight, tensor *indices) {
    const char *fn = "tensor_embedding";
    TENSOR__CHECK_ARG(fn, weight);
    TENSOR__CHECK_ARG(fn, indices);
    tensor *ins[2] = {weight, indices};
    if (!tensor__same_device(fn, 2, ins)) return NULL;
    if (weight->ndim != 2) return tensor__fail(fn, "weight must be 2-D [num_embeddings, embedding_dim], got shape %s", tensor__shape_of(weight));
    if (indices->dtype != TENSOR_I64 && indices->dtype != TENSOR_I32)
        return tensor__fail(fn, "indices must be an int64 or int32 tensor, got %s", tensor__dtype_names[indices->dtype]);
    if (indices->ndim + 1 > TENSOR_MAX_DIMS) return tensor__fail(fn, "indices of shape %s have too many dims for the output", tensor__shape_of(indices));
    int64_t shape[TENSOR_MAX_DIMS];
    for (int d = 0; d < indices->ndim; d++) shape[d] = indices->shape[d];
    shape[indices->ndim] = weight->shape[1];
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_embedding);
    c.n_in = 2;
    c.in[0] = weight;
    c.in[1] = indices;
    c.out = tensor__new(fn, indices->ndim + 1, shape, weight->dtype, weight->storage->device);
    return c.out ? tensor__dispatch(&c) : NULL;
}

/* ---- embedding_bag (a composite) ----
   The bags are worked out on the host from input and offsets (read back from a device: small
   integer tensors), as PyTorch's offset2bag: bag b holds input[offsets[b] : offsets[b + 1]] (the
   last bag runs to the end of input, or with include_last_offset to the last offset, and offsets
   has one entry more than there are bags; entries past it are not read); a 2-D input [B, L] is B
   bags of L. Entries equal to padding_idx are left out (of the sum, the count of the mean and the
   max). Then the kept rows are gathered (index_select), scaled by per_sample_weights (sum mode),
   and summed into their bags (index_add; mean divides by the kept count), or reduced with amax
   (scatter_reduce): an empty bag gives 0 in every mode. The gradients for weight and
   per_sample_weights are those ops'. */
TENSOR_API tensor *tensor_embedding_bag(tensor *weight, tensor *input, tensor *offsets, const char *mode, tensor *per_sample_weights, int64_t padding_idx,
                                        bool include_last_offset) {
    const char *fn = "tensor_embedding_bag";
    TENSOR__CHECK_ARG(fn, weight);
    TENSOR__CHECK_ARG(fn, input);
    tensor *psw = per_sample_weights;
    tensor *ins[4] = {weight, input, offsets, psw};
    if (!tensor__same_device(fn, 4, ins)) return NULL;
    int m;
    if (!mode || !strcmp(mode, "mean")) m = 1;
    else if (!strcmp(mode, "sum")) m = 0;
    else if (!strcmp(mode, "max")) m = 2;
    else return tensor__fail(fn, "unknown mode '%s' (sum, mean, max)", mode);
    if (weight->ndim != 2) return tensor__fail(fn, "weight must be 2-D [num_embeddings, embedding_dim], got shape %s", tensor__shape_of(weight));
    if (!tensor__is_float(weight->dtype)) return tensor__fail(fn, "expected a floating weight, got %s", tensor__dtype_names[weight->dtype]);
    if (input->dtype != TENSOR_I64 && input->dtype != TENSOR_I32) return tensor__fail(fn, "input must be an int64 or int32 tensor, got %s", tensor__dtype_names[input->dtype]);
    if (input->ndim == 2 && offsets) return tensor__fail(fn, "offsets must be NULL for a 2-D input (each row is a bag), got offsets of shape %s", tensor__shape_of(offsets));
    if (input->ndim == 1 && !offsets) return tensor__fail(fn, "offsets is NULL: a 1-D input needs offsets");
    if (input->ndim != 1 && input->ndim != 2) return tensor__fail(fn, "input must be 1-D (with offsets) or 2-D, got shape %s", tensor__shape_of(input));
    if (offsets && offsets->ndim != 1) return tensor__fail(fn, "offsets must be 1-D, got shape %s", tensor__shape_of(offsets));
    if (offsets && offsets->dtype != TENSOR_I64 && offsets->dtype != TENSOR_I32)
        return tensor__fail(fn, "offsets must be an int64 or int32 tensor, got %s", tensor__dtype_names[offsets->dtype]);
    if (psw && m != 0) return tensor__fail(fn, "per_sample_weights is only supported for mode 'sum' (got mode '%s')", m == 1 ? "mean" : "max");
    if (psw && psw->dtype != weight->dtype)
        return tensor__fail(fn, "per_sample_weights dtype %s and weight dtype %s should be the same", tensor__dtype_names[psw->dtype], tensor__dtype_names[weight->dtype]);
    if (psw && !tensor__same_shape(psw, input))
        return tensor__fail(fn, "per_sample_weights of shape %s should have the shape of input %s", tensor__shape_of(psw), tensor__shape_of(input));
    int64_t V = weight->shape[0], D = weight->shape[1], n = tensor__numel_of(input->ndim, input->shape);
    if (padding_idx != TENSOR_NO_PADDING_IDX) {
        if (padding_idx < -V || padding_idx >= V)
            return tensor__fail(fn, "padding_idx %lld must be within [-%lld, %lld) (weight %s), or TENSOR_NO_PADDING_IDX", (long long)padding_idx, (long long)V, (long long)V,
                                tensor__shape_of(weight));
        if (padding_idx < 0) padding_idx += V;
    }
    int64_t nb = input->ndim == 2 ? input->shape[0] : offsets->shape[0]; /* offsets' count */
    if (include_last_offset && nb < 1) return tensor__fail(fn, "include_last_offset needs at least one offset, got none");
    int64_t B = include_last_offset ? nb - 1 : nb;
    TENSOR__LA_BEGIN(fn);
    tensor *ih = tensor__la_host(input), *oh = offsets ? tensor__la_host(offsets) : NULL;
    int64_t *buf = (int64_t *)TENSOR__MALLOC((size_t)(3 * n + nb + 1) * sizeof(int64_t)), *ki = buf, *kb = buf + n, *kp = buf + 2 * n, *off = buf + 3 * n;
    double *cnt = (double *)TENSOR__MALLOC((size_t)(B + 1) * sizeof(double));
    int64_t kept = 0;
    bool ok = ih && (!offsets || oh) && buf && cnt;
    if (ih && (!offsets || oh) && (!buf || !cnt)) tensor__fail(fn, "out of memory reading the bags");
    for (int64_t b = 0; ok && b < nb; b++) {
        off[b] = oh ? tensor__load_i64((const char *)tensor__data(oh) + b * (int64_t)tensor__dtype_sizes[oh->dtype], oh->dtype) : b * input->shape[1];
        if (b == 0 && off[0] != 0) ok = (tensor__fail(fn, "offsets[0] has to be 0 (the first bag starts at input's start), got %lld", (long long)off[0]), false);
        else if (b > 0 && off[b] < off[b - 1]) ok = (tensor__fail(fn, "offsets must not decrease, got offsets[%lld] = %lld after %lld", (long long)b, (long long)off[b], (long long)off[b - 1]), false);
        else if (off[b] > n) ok = (tensor__fail(fn, "offsets[%lld] = %lld is past the input's length %lld", (long long)b, (long long)off[b], (long long)n), false);
    }
    for (int64_t b = 0; ok && b < B; b++) {
        int64_t end = b + 1 < nb ? off[b + 1] : n;
        cnt[b] = 0;
        for (int64_t j = off[b]; ok && j < end; j++) {
            int64_t v = tensor__load_i64((const char *)tensor__data(ih) + j * (int64_t)tensor__dtype_sizes[ih->dtype], ih->dtype);
            if (v < 0 || v >= V) ok = (tensor__fail(fn, "index %lld is out of range for %lld embeddings (weight shape %s)", (long long)v, (long long)V, tensor__shape_of(weight)), false);
            else if (v != padding_idx) { ki[kept] = v; kb[kept] = b; kp[kept] = j; kept++; cnt[b] += 1; }
        }
        if (m == 1 && cnt[b] < 1) cnt[b] = 1;
    }
    tensor *r = NULL;
    if (ok) {
        tensor_device dev = weight->storage->device;
        int64_t ks[1] = {kept}, rs[2] = {kept, 1}, es[2] = {kept, D}, os[2] = {B, D}, cs[2] = {B, 1};
        tensor *ti = tensor_to_device(tensor_from_data(ki, 1, ks, TENSOR_I64), dev), *tb = tensor_to_device(tensor_from_data(kb, 1, ks, TENSOR_I64), dev);
        tensor *rows = tensor_index_select(weight, 0, ti); /* [kept, D] */
        if (psw) rows = tensor_mul(rows, tensor_reshape(tensor_index_select(tensor_flatten(psw, 0, -1), 0, tensor_to_device(tensor_from_data(kp, 1, ks, TENSOR_I64), dev)), 2, rs));
        tensor *zero = tensor__full_on(2, os, 0, weight->dtype, dev);
        if (m == 2) r = tensor_scatter_reduce(zero, 0, tensor_expand(tensor_reshape(tb, 2, rs), 2, es), rows, "amax", false);
        else r = tensor_index_add(zero, 0, tb, rows, 1);
        if (m == 1) r = tensor_div(r, tensor_to_device(tensor_to_dtype(tensor_from_data(cnt, 2, cs, TENSOR_F64), weight->dtype), dev));
    }
    TENSOR_FREE(buf);
    TENSOR_FREE(cnt);
    return tensor__la_end(r);
}

/* ---- dropout ---- */

/* out: same shape as x = x * mask, mask (out2, kept for the derivative) 0 or 1 / (1 - p), drawn
   from the library RNG in row-major order (one 32-bit draw per element, kept with probability
   1 - p). Not training or p == 0: a copy; p == 1: x * 0 (NaN stays NaN, as in PyTorch). */
static int tensor__cpu_dropout(tensor__call *c) {
    tensor *out = c->out;
    double p = c->p[0];
    bool training = c->ip[0] != 0;
    tensor__copy_into(out, c->in[0]);
    if (!training || p == 0) return 0;
    c->out2 = tensor__new_like(c->fn, out, out->dtype);
    if (!c->out2) return 1;
    double scale = p == 1 ? 0 : 1.0 / (1.0 - p);
    tensor__rng_fill_run(TENSOR__RNG_KEEP, out->dtype, tensor__data(c->out2), tensor__numel_of(out->ndim, out->shape), 0, scale, p, tensor__data(out));
    return 0;
}

TENSOR_API tensor *tensor_dropout(tensor *x, double p, bool training) {
    const char *fn = "tensor_dropout";
    TENSOR__CHECK_ARG(fn, x);
    if (!(p >= 0 && p <= 1)) return tensor__fail(fn, "dropout probability has to be between 0 and 1, got %g", p);
    if (training && p > 0 && !tensor__is_float(x->dtype))
        return tensor__fail(fn, "expected a floating input when training, got %s", tensor__dtype_names[x->dtype]);
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_dropout);
    c.n_in = 1;
    c.in[0] = x;
    c.p[0] = p;
    c.ip[0] = training;
    c.out = tensor__new_like(fn, x, x->dtype);
    if (c.out && training && p > 0 && x->storage->device != TENSOR_CPU) {
        /* a device's kernel gets the mask to fill (out2) and the generator's place (the same words
           the CPU kernel would take: the masks agree bit for bit): key, counter, stream, skip */
        if (!(c.out2 = tensor__new_like(fn, x, x->dtype))) { tensor_free(c.out); return NULL; }
        tensor__rng_place(&c, 1, tensor__numel_of(x->ndim, x->shape));
    }
    return c.out ? tensor__dispatch(&c) : NULL;
}

/* ---- random nn functions (issue 14): dropout1d, dropout2d, alpha_dropout, feature_alpha_dropout,
   rrelu ----
   PyTorch 1.13's F.dropout1d/dropout2d (_VF.feature_dropout), F.alpha_dropout,
   F.feature_alpha_dropout and F.rrelu, as composites: the noise is bernoulli's (>>create's
   tensor__bernoulli_of, drawn on the CPU and moved to x's device), so they run on every device and
   their gradients are the noise's (x * noise, differentiated by mul).
   Feature dropout draws one number per (N, C) channel: noise of shape [s0, s1, 1, ...] (an input
   of at least 2 dims). dropout1d takes [N, C, L] or [C, L] (unbatched: a batch of one);
   dropout2d takes any input of at least 2 dims as PyTorch 1.13 does (3-D is [N, C, L] there,
   PyTorch's historical behaviour it warns about, not [C, H, W]; 2-D and 5-D+ are deprecated but
   allowed). The alpha forms keep SELU's mean and variance: kept elements a x + alpha a p, dropped
   ones alpha a (p - 1), with alpha = 1.7580993408473766 and a = 1 / sqrt((alpha^2 p + 1)(1 - p)).
   Not training, p == 0 or an empty x: tensor_dropout's eval result (a copy, gradient 1); p == 1:
   x * 0 (NaN stays NaN), as PyTorch. */
static tensor *tensor__feature_noise_dropout(const char *fn, tensor *x, double p, bool training, bool feature, bool alpha) {
    TENSOR__CHECK_ARG(fn, x);
    if (!(p >= 0 && p <= 1)) return tensor__fail(fn, "dropout probability has to be between 0 and 1, but got %g", p);
    /* PyTorch's _dropout_impl returns the input before it looks at the dims (make_feature_noise
       wants 2): in evaluation, at p 0 and for an empty input any shape goes, at p 1 too */
    if (!training || p == 0 || tensor__numel_of(x->ndim, x->shape) == 0) return tensor_dropout(x, p, false);
    if (!tensor__is_float(x->dtype)) return tensor__fail(fn, "expected a floating input when training, got %s", tensor__dtype_names[x->dtype]);
    if (p == 1) return tensor_mul_scalar(x, 0);
    if (feature && x->ndim < 2) return tensor__fail(fn, "Feature dropout requires at least 2 dimensions in the input, got shape %s", tensor__shape_of(x));
    int64_t shape[TENSOR_MAX_DIMS];
    for (int d = 0; d < x->ndim; d++) shape[d] = feature && d >= 2 ? 1 : x->shape[d];
    tensor__tmps s = {{0}, 0};
    tensor *keep = tensor__tmp(&s, tensor__bernoulli_of(fn, x->ndim, shape, x->dtype, x->storage->device, 1 - p)), *y;
    if (!alpha) y = tensor__tmp(&s, tensor_mul(x, tensor__tmp(&s, tensor_div_scalar(keep, 1 - p))));
    else {
        const double al = 1.7580993408473766, a = 1.0 / sqrt((al * al * p + 1) * (1 - p));
        tensor *b = tensor__tmp(&s, tensor_add_scalar(tensor__tmp(&s, tensor_mul_scalar(tensor__tmp(&s, tensor_add_scalar(keep, -1)), al * a)), al * a * p));
        y = tensor__tmp(&s, tensor_add(tensor__tmp(&s, tensor_mul(x, tensor__tmp(&s, tensor_mul_scalar(keep, a)))), b));
    }
    y = tensor__tmps_take(&s, y);
    tensor__tmps_free(&s);
    return y;
}
TENSOR_API tensor *tensor_dropout1d(tensor *x, double p, bool training) {
    const char *fn = "tensor_dropout1d";
    TENSOR__CHECK_ARG(fn, x);
    if (x->ndim != 2 && x->ndim != 3) return tensor__fail(fn, "dropout1d: Expected 2D or 3D input, but received a %dD input", x->ndim);
    if (x->ndim == 3) return tensor__feature_noise_dropout(fn, x, p, training, true, false);
    tensor *b = tensor_unsqueeze(x, 0), *y = b ? tensor__feature_noise_dropout(fn, b, p, training, true, false) : NULL, *r = y ? tensor_squeeze(y, 0) : NULL;
    tensor_free(b);
    tensor_free(y);
    return r;
}
TENSOR_API tensor *tensor_dropout2d(tensor *x, double p, bool training) { return tensor__feature_noise_dropout("tensor_dropout2d", x, p, training, true, false); }
TENSOR_API tensor *tensor_alpha_dropout(tensor *x, double p, bool training) { return tensor__feature_noise_dropout("tensor_alpha_dropout", x, p, training, false, true); }
TENSOR_API tensor *tensor_feature_alpha_dropout(tensor *x, double p, bool training) { return tensor__feature_noise_dropout("tensor_feature_alpha_dropout", x, p, training, true, true); }

/* rrelu: eval leaky_relu(x, (lower + upper) / 2); training x * r where x <= 0, r = lower + (upper -
   lower) u with u rand_like(x) (one uniform per element, in x's dtype), x elsewhere: the gradient
   is the drawn slope there, 1 elsewhere (PyTorch's rrelu_with_noise). */
TENSOR_API tensor *tensor_rrelu(tensor *x, double lower, double upper, bool training) {
    const char *fn = "tensor_rrelu";
    TENSOR__CHECK_ARG(fn, x);
    if (!tensor__is_float(x->dtype)) return tensor__fail(fn, "expected a floating input, got %s", tensor__dtype_names[x->dtype]);
    if (!(lower <= upper)) return tensor__fail(fn, "Lower bound should be less than or equal to the upper bound, got lower %g and upper %g", lower, upper);
    if (!training) return tensor_leaky_relu(x, (lower + upper) / 2);
    tensor__tmps s = {{0}, 0};
    tensor *u = tensor__tmp(&s, tensor_rand_like(x));
    tensor *slope = tensor__tmp(&s, tensor_add_scalar(tensor__tmp(&s, tensor_mul_scalar(u, upper - lower)), lower));
    tensor *neg = tensor__tmp(&s, tensor__op_scalar(TENSOR_OP_le, x, 0));
    tensor *y = tensor__tmp(&s, tensor_where(neg, tensor__tmp(&s, tensor_mul(x, slope)), x));
    y = tensor__tmps_take(&s, y);
    tensor__tmps_free(&s);
    return y;
}

/* ---- relu's backward (used by its derivative in >>autograd) ---- */

/* relu's gradient in one pass, PyTorch's threshold_backward: gx = x <= 0 ? 0 : g (so a NaN x
   passes g, and an infinite or NaN g at x <= 0 gives 0, not inf * 0). The op-composed formula of
   >>autograd (create_graph, and the reference kernels) computes the same values. */
#if TENSOR__NN_AVX2
static TENSOR__AVX2_FN int64_t tensor__relu_bwd_avx2_f32(float *o, const float *x, const float *g, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) /* NLE_UQ: x > 0 or NaN */
        _mm256_storeu_ps(o + i, _mm256_and_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), _mm256_setzero_ps(), _CMP_NLE_UQ), _mm256_loadu_ps(g + i)));
    _mm256_zeroupper();
    return i;
}
static TENSOR__AVX2_FN int64_t tensor__relu_bwd_avx2_f64(double *o, const double *x, const double *g, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        _mm256_storeu_pd(o + i, _mm256_and_pd(_mm256_cmp_pd(_mm256_loadu_pd(x + i), _mm256_setzero_pd(), _CMP_NLE_UQ), _mm256_loadu_pd(g + i)));
    _mm256_zeroupper();
    return i;
}
#endif
typedef struct { const char *x, *g; char *gx; bool f32; } tensor__relu_bwd_task;
static void tensor__relu_bwd_range(int64_t begin, int64_t end, void *vt) {
    const tensor__relu_bwd_task *t = (const tensor__relu_bwd_task *)vt;
    int64_t n = end - begin, i = 0;
    if (t->f32) {
        float *o = (float *)t->gx + begin;
        const float *x = (const float *)t->x + begin, *g = (const float *)t->g + begin;
#if TENSOR__NN_AVX2
        if (tensor__nn_isa() >= 2) { TENSOR__PATH_TAKEN(relu_backward_fused); i = tensor__relu_bwd_avx2_f32(o, x, g, n); }
#endif
        for (; i < n; i++) o[i] = x[i] <= 0 ? 0.0f : g[i];
    } else {
        double *o = (double *)t->gx + begin;
        const double *x = (const double *)t->x + begin, *g = (const double *)t->g + begin;
#if TENSOR__NN_AVX2
        if (tensor__nn_isa() >= 2) i = tensor__relu_bwd_avx2_f64(o, x, g, n);
#endif
        for (; i < n; i++) o[i] = x[i] <= 0 ? 0.0 : g[i];
    }
}

/* 1 with *gx set, 0 when this path does not take the case (the reference kernels; not f32/f64;
   g of another dtype or shape; an operand not contiguous), -1 on error. g is the engine's, dropped
   after the derivative: when its storage has no other handle (a gradient made by the derivative
   below, not the caller's grad_out), gx is written over it, which saves a buffer's worth of memory
   traffic. */
static int tensor__relu_backward(const char *fn, tensor *x, tensor *g, tensor **gx) {
    if (tensor__reference_kernels || (x->dtype != TENSOR_F32 && x->dtype != TENSOR_F64) || g->dtype != x->dtype || !tensor__same_shape(x, g) ||
        !tensor__contiguous(x) || !tensor__contiguous(g) || x->storage->device != TENSOR_CPU)
        return 0;
    tensor *r = tensor__refs_sole(&g->storage->refs, tensor__self) ? tensor__view_of(fn, g, g->ndim, g->shape, g->strides, g->offset) : tensor__new_like(fn, x, x->dtype);
    if (!r) return -1;
    tensor__relu_bwd_task t;
    t.x = tensor__data(x);
    t.g = tensor__data(g);
    t.gx = tensor__data(r);
    t.f32 = x->dtype == TENSOR_F32;
    tensor__parallel_for(tensor__numel_of(x->ndim, x->shape), TENSOR__GRAIN_ELEMENTWISE, tensor__relu_bwd_range, &t);
    *gx = r;
    return 1;
}

/* t with its values clamped below at lo in the forward pass only: the gradient passes as if
   unclamped, as PyTorch's clamp_ under no_grad gives it. t + detach(clamp(t, lo) - t). */
static tensor *tensor__clamp_min_nograd(tensor__tmps *s, tensor *t, double lo) {
    tensor *d = tensor__tmp(s, tensor_detach(tensor__tmp(s, tensor_sub(tensor__tmp(s, tensor_clamp(t, lo, NAN)), t))));
    return tensor__tmp(s, tensor_add(t, d));
}
/* An integer or bool tensor as f32 (a temporary of s), float as it is: the default floating
   dtype PyTorch's formulas promote to where an integer meets a float scalar (x + eps, margin - x)
   or a floating function, the integer arithmetic before that point staying integer. */
static tensor *tensor__as_float(tensor__tmps *s, tensor *t) {
    return !t || tensor__is_float(t->dtype) ? t : tensor__tmp(s, tensor_to_dtype(t, TENSOR_F32));
}
/* False after an error naming fn when one of the n tensors (NULLs skipped) is bool: for the
   composites whose formula subtracts or negates it, which PyTorch refuses for bool. */
static bool tensor__no_bool(const char *fn, int n, tensor *const *ts) {
    for (int i = 0; i < n; i++)
        if (ts[i] && ts[i]->dtype == TENSOR_BOOL) {
            tensor__fail(fn, "bool inputs are not supported (the formula subtracts or negates them, which PyTorch refuses for bool)");
            return false;
        }
    return true;
}

/* ---- softmin, normalize, cosine_similarity, pairwise_distance (composites) ---- */

TENSOR_API tensor *tensor_softmin(tensor *t, int dim) {
    TENSOR__CHECK_ARG("tensor_softmin", t);
    tensor *n = tensor_neg(t);
    tensor *r = n ? tensor_softmax(n, dim) : NULL;
    tensor_free(n);
    return r;
}

/* x / max(norm_p(x, dim), eps), the norm kept as a dim of size 1. */
TENSOR_API tensor *tensor_normalize(tensor *x, double p, int dim, double eps) {
    const char *fn = "tensor_normalize";
    TENSOR__CHECK_ARG(fn, x);
    if (!tensor__is_float(x->dtype)) return tensor__fail(fn, "expected a floating input, got %s", tensor__dtype_names[x->dtype]);
    tensor__tmps s = {{0}, 0};
    tensor *n = tensor__tmp(&s, tensor_norm(x, p, dim, true));
    tensor *r = tensor_div(x, tensor__tmp(&s, tensor_clamp(n, eps, NAN)));
    tensor__tmps_free(&s);
    return r;
}

/* sum(x1 / max(|x1|, eps) * x2 / max(|x2|, eps)) over dim, x1 and x2 broadcast (PyTorch 1.13+: each
   is divided by its own 2-norm first; the clamps do not stop the gradient). */
TENSOR_API tensor *tensor_cosine_similarity(tensor *x1, tensor *x2, int dim, double eps) {
    const char *fn = "tensor_cosine_similarity";
    TENSOR__CHECK_ARG(fn, x1);
    TENSOR__CHECK_ARG(fn, x2);
    int nd;
    int64_t shape[TENSOR_MAX_DIMS];
    if (!tensor__broadcast_shapes(fn, x1->ndim, x1->shape, x2->ndim, x2->shape, &nd, shape)) return NULL;
    if (tensor__wrap_dim(fn, dim, nd > 0 ? nd : 1) < 0) return NULL;
    /* PyTorch's: the common dtype must be floating (an integer or bool operand beside a floating
       one is converted to it; two integer ones are refused) */
    tensor *ins[2] = {x1, x2};
    tensor_dtype dt = tensor__result_type(2, ins);
    if (!tensor__is_float(dt))
        return tensor__fail(fn, "expected the common dtype to be floating point, got %s (inputs %s and %s)", tensor__dtype_names[dt], tensor__dtype_names[x1->dtype], tensor__dtype_names[x2->dtype]);
    tensor__tmps s = {{0}, 0};
    tensor *a = x1->dtype == dt ? x1 : tensor__tmp(&s, tensor_to_dtype(x1, dt)), *b = x2->dtype == dt ? x2 : tensor__tmp(&s, tensor_to_dtype(x2, dt));
    a = tensor__tmp(&s, tensor_expand(a, nd, shape));
    b = tensor__tmp(&s, tensor_expand(b, nd, shape));
    tensor *na = tensor__clamp_min_nograd(&s, tensor__tmp(&s, tensor_norm(a, 2, dim, true)), eps);
    tensor *nb = tensor__clamp_min_nograd(&s, tensor__tmp(&s, tensor_norm(b, 2, dim, true)), eps);
    tensor *prod = tensor__tmp(&s, tensor_mul(tensor__tmp(&s, tensor_div(a, na)), tensor__tmp(&s, tensor_div(b, nb))));
    tensor *r = prod ? tensor_sum(prod, dim, false) : NULL;
    tensor__tmps_free(&s);
    return r;
}

/* norm_p(x1 - x2 + eps) over the last dim of the broadcast shape (keepdim keeps it as size 1).
   Integer inputs are subtracted as integers (u8 wraps, as PyTorch's), then + eps makes them f32
   (PyTorch's promotion of a tensor plus a float scalar); bool is refused (no bool subtraction). */
TENSOR_API tensor *tensor_pairwise_distance(tensor *x1, tensor *x2, double p, double eps, bool keepdim) {
    const char *fn = "tensor_pairwise_distance";
    TENSOR__CHECK_ARG(fn, x1);
    TENSOR__CHECK_ARG(fn, x2);
    tensor *ins[2] = {x1, x2};
    if (!tensor__no_bool(fn, 2, ins)) return NULL;
    tensor__tmps s = {{0}, 0};
    tensor *d = tensor__tmp(&s, tensor_add_scalar(tensor__as_float(&s, tensor__tmp(&s, tensor_sub(x1, x2))), eps));
    tensor *r = d ? tensor_norm(d, p, -1, keepdim) : NULL;
    tensor__tmps_free(&s);
    return r;
}

/* ---- misc: glu, prelu (composites) ---- */

/* F.glu: a * sigmoid(b), a the first half of x along dim and b the second. */
TENSOR_API tensor *tensor_glu(tensor *x, int dim) {
    const char *fn = "tensor_glu";
    TENSOR__CHECK_ARG(fn, x);
    if (x->ndim == 0) return tensor__fail(fn, "glu does not support scalars because halving size must be even");
    int d = tensor__wrap_dim(fn, dim, x->ndim);
    if (d < 0) return NULL;
    if (!tensor__is_float(x->dtype)) return tensor__fail(fn, "not implemented for %s tensors (floating dtypes only)", tensor__dtype_names[x->dtype]);
    int64_t n = x->shape[d];
    if (n % 2) return tensor__fail(fn, "halving dimension must be even, but dimension %d is size %lld", d, (long long)n);
    tensor__tmps s = {{0}, 0};
    tensor *a = tensor__tmp(&s, tensor_narrow(x, d, 0, n / 2));
    tensor *g = tensor__tmp(&s, tensor_sigmoid(tensor__tmp(&s, tensor_narrow(x, d, n / 2, n / 2))));
    tensor *r = a && g ? tensor_mul(a, g) : NULL;
    tensor__tmps_free(&s);
    return r;
}

/* F.prelu: where(x > 0, x, weight * x); weight 0-D or 1-D, of one element (shared) or of C = x's
   dim 1 (a 1-D x has one channel), x and weight of one floating dtype, as PyTorch. */
TENSOR_API tensor *tensor_prelu(tensor *x, tensor *weight) {
    const char *fn = "tensor_prelu";
    TENSOR__CHECK_ARG(fn, x);
    TENSOR__CHECK_ARG(fn, weight);
    tensor *ins[2] = {x, weight};
    if (!tensor__same_device(fn, 2, ins)) return NULL;
    if (!tensor__is_float(x->dtype)) return tensor__fail(fn, "not implemented for %s tensors (floating dtypes only)", tensor__dtype_names[x->dtype]);
    if (weight->dtype != x->dtype) return tensor__fail(fn, "weight has dtype %s but x has %s (they must be one dtype)", tensor__dtype_names[weight->dtype], tensor__dtype_names[x->dtype]);
    if (weight->ndim > 1) return tensor__fail(fn, "expected weight to be a scalar or 1-D tensor, got shape %s", tensor__shape_of(weight));
    int64_t nw = tensor_numel(weight), C = x->ndim > 1 ? x->shape[1] : 1;
    int64_t wshape[TENSOR_MAX_DIMS];
    int wnd = 0;
    if (nw != 1) {
        if (x->ndim == 0) return tensor__fail(fn, "weight of %lld elements for a 0-dim x (only one element is allowed)", (long long)nw);
        if (nw != C) return tensor__fail(fn, "mismatch of parameter numbers and input channel size: weight has %lld elements, x %s has %lld channels", (long long)nw, tensor__shape_of(x), (long long)C);
        wshape[wnd++] = C; /* [C, 1, ..., 1] against x's dims 1.. */
        for (int d = 2; d < x->ndim; d++) wshape[wnd++] = 1;
    }
    tensor__tmps s = {{0}, 0};
    tensor *w = tensor__tmp(&s, tensor_reshape(weight, wnd, wshape));
    tensor *pos = tensor__tmp(&s, tensor__op_scalar(TENSOR_OP_gt, x, 0));
    tensor *wx = tensor__tmp(&s, tensor_mul(w, x));
    tensor *r = pos && wx ? tensor_where(pos, x, wx) : NULL;
    tensor__tmps_free(&s);
    return r;
}
