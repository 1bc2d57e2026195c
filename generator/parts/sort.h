// >>sort ---------------------------------------------------------------------------------------
/* Sorting and selection (sort, argsort, msort, topk), the scans with a kernel of their own
   (cumprod, cummax, cummin, logcumsumexp) and the reductions composed of them and of the ops of
   >>reduce (max_dim, amax's tie rule, median, kthvalue, mode, quantile, ...).

   Call layout of the kernels (sort and the scans): in[0] the input; dims[0] the dim they work
   along (n_dims 1; 0 for a 0-dim input, whose one element is a line of 1); out the values, of the
   input's shape; out2 the i64 indices of sort, cummax and cummin (the graph keeps them for the
   derivative, which scatters the gradient back through them); ip[0] sort's descending.
   Every output is contiguous (the front-ends allocate them), so an output element's offset in
   elements is the same in out and out2. Lines are independent: they run on the thread pool. */

static bool tensor__grad_on(void); /* >>autograd */

// >>sort-kernels -------------------------------------------------------------------------------
/* A stable merge sort of (key, index) pairs: insertion sort of runs of 24, then bottom-up merges
   between a and tmp. "a before b" is strict, so equal keys keep their order (stability); floats
   order NaN after every number (PyTorch's rule), descending puts it first. */
typedef struct { double k; int64_t i; } tensor__sort_f;
typedef struct { int64_t k; int64_t i; } tensor__sort_i;
static inline bool tensor__sort_before_f(double a, double b, bool desc) {
    if (desc) { double t = a; a = b; b = t; }
    return a < b || (b != b && a == a);
}
static inline bool tensor__sort_before_i(int64_t a, int64_t b, bool desc) { return desc ? a > b : a < b; }
#define TENSOR__MERGE_SORT(NAME, T, BEFORE)                                                              \
    static void NAME(T *a, T *tmp, int64_t n, bool desc) {                                               \
        const int64_t run = 24;                                                                          \
        for (int64_t lo = 0; lo < n; lo += run) {                                                        \
            int64_t hi = lo + run < n ? lo + run : n;                                                    \
            for (int64_t i = lo + 1; i < hi; i++) {                                                      \
                T v = a[i];                                                                              \
                int64_t j = i;                                                                           \
                while (j > lo && BEFORE(v.k, a[j - 1].k, desc)) { a[j] = a[j - 1]; j--; }                \
                a[j] = v;                                                                                \
            }                                                                                            \
        }                                                                                                \
        T *src = a, *dst = tmp;                                                                          \
        for (int64_t w = run; w < n; w *= 2) {                                                           \
            for (int64_t lo = 0; lo < n; lo += 2 * w) {                                                  \
                int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;             \
                int64_t i = lo, j = mid, o = lo;                                                         \
                if (mid >= hi || !BEFORE(src[mid].k, src[mid - 1].k, desc)) { /* already in order */     \
                    memcpy(dst + lo, src + lo, (size_t)(hi - lo) * sizeof(T));                           \
                    continue;                                                                            \
                }                                                                                        \
                while (i < mid && j < hi) dst[o++] = BEFORE(src[j].k, src[i].k, desc) ? src[j++] : src[i++]; \
                while (i < mid) dst[o++] = src[i++];                                                     \
                while (j < hi) dst[o++] = src[j++];                                                      \
            }                                                                                            \
            T *sw = src; src = dst; dst = sw;                                                            \
        }                                                                                                \
        if (src != a) memcpy(a, src, (size_t)n * sizeof(T));                                             \
    }
TENSOR__MERGE_SORT(tensor__merge_sort_f, tensor__sort_f, tensor__sort_before_f)
TENSOR__MERGE_SORT(tensor__merge_sort_i, tensor__sort_i, tensor__sort_before_i)

/* One line's geometry: n elements, input/output/index byte strides along the line. */
typedef struct {
    const tensor__red *r;
    const tensor__call *c;
    int64_t n, is, os, xs;  /* line length; byte strides along it in the input, out and out2 */
    int64_t osz;            /* out's element size */
    char *idx;              /* out2's data (NULL: none) */
    bool is_float, desc;
    int failed;             /* a chunk could not get its buffers */
} tensor__line_job;

/* The job of kernel c along its dim: r over the lines (the dim reduced), strides along it. */
static void tensor__line_job_init(tensor__line_job *j, tensor__red *r, const tensor__call *c) {
    const tensor *t = c->in[0];
    unsigned mask = c->n_dims ? 1u << c->dims[0] : 0;
    int64_t osz = (int64_t)tensor__dtype_sizes[c->out->dtype], ostride[TENSOR_MAX_DIMS];
    for (int d = 0; d < t->ndim; d++) ostride[d] = c->out->strides[d] * osz;
    tensor__red_init(r, t, mask, ostride, c->out);
    memset(j, 0, sizeof *j);
    j->r = r;
    j->c = c;
    int d = c->n_dims ? c->dims[0] : -1;
    j->n = d >= 0 ? t->shape[d] : 1;
    j->is = d >= 0 ? t->strides[d] * (int64_t)tensor__dtype_sizes[t->dtype] : 0;
    j->os = d >= 0 ? c->out->strides[d] * osz : 0;
    j->xs = d >= 0 && c->out2 ? c->out2->strides[d] * 8 : 0;
    j->osz = osz;
    j->idx = c->out2 ? tensor__data(c->out2) : NULL;
    j->is_float = tensor__is_float(t->dtype);
    j->desc = c->ip[0] != 0;
}

/* sort: each line of the chunk copied into (key, index) pairs, sorted, written out. */
static void tensor__sort_chunk(int64_t begin, int64_t end, void *p) {
    tensor__line_job *j = (tensor__line_job *)p;
    int64_t n = j->n;
    size_t pair = sizeof(tensor__sort_f) > sizeof(tensor__sort_i) ? sizeof(tensor__sort_f) : sizeof(tensor__sort_i);
    tensor__sort_f stack[2 * 64]; /* short lines: no allocation */
    void *buf = (size_t)n * 2 * pair <= sizeof stack ? (void *)stack : TENSOR__MALLOC((size_t)n * 2 * pair);
    if (!buf) { TENSOR__STORE_SC(&j->failed, 1); return; }
    tensor_dtype dt = j->r->in_dt, od = j->r->out_dt;
    for (int64_t e = begin; e < end; e++) {
        const char *in;
        char *out;
        tensor__red_at(j->r, e, &in, &out);
        char *ix = j->idx + (out - j->r->out) / j->osz * 8;
        if (j->is_float) {
            tensor__sort_f *a = (tensor__sort_f *)buf;
            if (dt == TENSOR_F32) for (int64_t i = 0; i < n; i++) { a[i].k = *(const float *)(in + i * j->is); a[i].i = i; }
            else for (int64_t i = 0; i < n; i++) { a[i].k = tensor__load_f64(in + i * j->is, dt); a[i].i = i; }
            tensor__merge_sort_f(a, a + n, n, j->desc);
            if (od == TENSOR_F32) for (int64_t i = 0; i < n; i++) *(float *)(out + i * j->os) = (float)a[i].k;
            else for (int64_t i = 0; i < n; i++) tensor__store_f64(out + i * j->os, od, a[i].k);
            for (int64_t i = 0; i < n; i++) *(int64_t *)(ix + i * j->xs) = a[i].i;
        } else {
            tensor__sort_i *a = (tensor__sort_i *)buf;
            for (int64_t i = 0; i < n; i++) { a[i].k = tensor__load_i64(in + i * j->is, dt); a[i].i = i; }
            tensor__merge_sort_i(a, a + n, n, j->desc);
            for (int64_t i = 0; i < n; i++) { tensor__store_i64(out + i * j->os, od, a[i].k); *(int64_t *)(ix + i * j->xs) = a[i].i; }
        }
    }
    if (buf != (void *)stack) TENSOR_FREE(buf);
}

/* out: t's shape, each line along the dim sorted; out2: i64, where each value came from */
static int tensor__cpu_sort(tensor__call *c) {
    const tensor *t = c->in[0];
    if (tensor__numel_of(t->ndim, t->shape) == 0) return 0;
    tensor__red r;
    tensor__line_job j;
    tensor__line_job_init(&j, &r, c);
    int64_t work = j.n * 8;
    if (tensor__reference_kernels) tensor__sort_chunk(0, r.knumel, &j);
    else tensor__parallel_for(r.knumel, tensor__grain(work), tensor__sort_chunk, &j);
    if (TENSOR__LOAD_SC(&j.failed)) { tensor__fail(c->fn, "out of memory for the sort's buffers (%lld elements a line)", (long long)j.n); return 1; }
    return 0;
}

/* The scans, one line each: cumprod (floats in double, integers in wrapping int64), cummax and
   cummin (PyTorch's rule: a later equal value or a NaN takes over, so the index is the last of a
   tie, and NaN stays once seen), logcumsumexp (a running logaddexp in double). */
static void tensor__scan_line(const tensor__line_job *j, const char *in, char *out) {
    int64_t n = j->n;
    tensor_dtype dt = j->r->in_dt, od = j->r->out_dt;
    tensor_op op = j->c->op;
    char *ix = j->idx ? j->idx + (out - j->r->out) / j->osz * 8 : NULL;
    if (op == TENSOR_OP_cumprod) {
        if (!j->is_float) {
            int64_t acc = 1;
            for (int64_t i = 0; i < n; i++) { acc = tensor__imul(acc, tensor__load_i64(in + i * j->is, dt)); tensor__store_i64(out + i * j->os, od, acc); }
        } else {
            double acc = 1;
            for (int64_t i = 0; i < n; i++) { acc *= tensor__load_f64(in + i * j->is, dt); tensor__store_f64(out + i * j->os, od, acc); }
        }
    } else if (op == TENSOR_OP_cummax || op == TENSOR_OP_cummin) {
        bool is_max = op == TENSOR_OP_cummax;
        int64_t best = 0;
        if (!j->is_float) {
            int64_t m = 0;
            for (int64_t i = 0; i < n; i++) {
                int64_t x = tensor__load_i64(in + i * j->is, dt);
                if (i == 0 || (is_max ? x >= m : x <= m)) { m = x; best = i; }
                tensor__store_i64(out + i * j->os, od, m);
                *(int64_t *)(ix + i * j->xs) = best;
            }
        } else {
            double m = 0;
            for (int64_t i = 0; i < n; i++) {
                double x = tensor__load_f64(in + i * j->is, dt);
                if (i == 0 || x != x || (m == m && (is_max ? x >= m : x <= m))) { m = x; best = i; }
                tensor__store_f64(out + i * j->os, od, m);
                *(int64_t *)(ix + i * j->xs) = best;
            }
        }
    } else { /* logcumsumexp */
        double acc = -INFINITY;
        for (int64_t i = 0; i < n; i++) {
            double x = tensor__load_f64(in + i * j->is, dt);
            double lo = x != x ? x : acc < x ? acc : x, hi = x != x ? x : acc < x ? x : acc;
            if (lo != hi || isfinite(lo)) acc = log1p(exp(lo - hi)) + hi; /* NaN propagates */
            else acc = lo;                                                /* both +-inf alike */
            tensor__store_f64(out + i * j->os, od, acc);
        }
    }
}
static void tensor__scan_chunk(int64_t begin, int64_t end, void *p) {
    const tensor__line_job *j = (const tensor__line_job *)p;
    for (int64_t e = begin; e < end; e++) {
        const char *in;
        char *out;
        tensor__red_at(j->r, e, &in, &out);
        tensor__scan_line(j, in, out);
    }
}
static int tensor__scan_run(tensor__call *c) {
    const tensor *t = c->in[0];
    if (tensor__numel_of(t->ndim, t->shape) == 0) return 0;
    tensor__red r;
    tensor__line_job j;
    tensor__line_job_init(&j, &r, c);
    if (tensor__reference_kernels) tensor__scan_chunk(0, r.knumel, &j);
    else tensor__parallel_for(r.knumel, tensor__grain(j.n), tensor__scan_chunk, &j);
    return 0;
}
/* out: t's shape (cumprod of bool and integers: i64), the scan along the dim; out2 (cummax,
   cummin): i64, the index each value came from */
static int tensor__cpu_cumprod(tensor__call *c) { return tensor__scan_run(c); }
static int tensor__cpu_cummax(tensor__call *c) { return tensor__scan_run(c); }
static int tensor__cpu_cummin(tensor__call *c) { return tensor__scan_run(c); }
static int tensor__cpu_logcumsumexp(tensor__call *c) { return tensor__scan_run(c); }

// >>sort-api -----------------------------------------------------------------------------------
/* The kernel call along dim of t, with the values in dtype out_dt and, when want_index, i64
   indices handed out through *indices (the caller's handle; NULL skips them). */
static tensor *tensor__along(tensor_op op, tensor *t, int dim, tensor_dtype out_dt, bool want_index, int64_t ip0, tensor **indices) {
    const char *fn = tensor__ops[op].fn;
    if (indices) *indices = NULL;
    TENSOR__CHECK_ARG(fn, t);
    int d = tensor__wrap_dim(fn, dim, t->ndim > 0 ? t->ndim : 1); /* a 0-dim tensor takes dim 0 and -1 */
    if (d < 0) return NULL;
    tensor__call c;
    tensor__call_init(&c, op);
    c.n_in = 1;
    c.in[0] = t;
    c.ip[0] = ip0;
    if (t->ndim > 0) { c.dims[0] = d; c.n_dims = 1; }
    c.out = tensor__new_like(fn, t, out_dt);
    if (!c.out) return NULL;
    tensor *mine = NULL;
    if (want_index) {
        /* dispatch drops the call's handle of out2 (the graph takes its own): keep another */
        c.out2 = tensor__new_like(fn, t, TENSOR_I64);
        mine = c.out2 ? tensor__alias(fn, c.out2) : NULL;
        if (!mine) { tensor_free(c.out); tensor_free(c.out2); return NULL; }
    }
    tensor *r = tensor__dispatch(&c);
    if (!r || !indices) tensor_free(mine);
    else *indices = mine;
    return r;
}

/* Sorted values along dim (NaN the largest, as PyTorch); always stable (ties keep their order:
   PyTorch's stable=True, which its stable=False allows too), so there is no flag for it. */
TENSOR_API tensor *tensor_sort(tensor *t, int dim, bool descending, tensor **indices) {
    return tensor__along(TENSOR_OP_sort, t, dim, t ? t->dtype : TENSOR_F32, true, descending, indices);
}
TENSOR_API tensor *tensor_argsort(tensor *t, int dim, bool descending) {
    if (!t) return tensor__null_arg("tensor_argsort", "t");
    tensor *idx = NULL, *v = tensor_sort(t, dim, descending, &idx);
    tensor_free(v);
    return idx;
}
TENSOR_API tensor *tensor_msort(tensor *t) {
    if (t && t->ndim == 0) return tensor__fail("tensor_msort", "expected a tensor of at least 1 dim, got a 0-dim tensor");
    return tensor_sort(t, 0, false, NULL);
}

/* The k largest (smallest) along dim, in order (sorted = false gives them sorted too). */
TENSOR_API tensor *tensor_topk(tensor *t, int64_t k, int dim, bool largest, bool sorted, tensor **indices) {
    const char *fn = "tensor_topk";
    (void)sorted;
    if (indices) *indices = NULL;
    TENSOR__CHECK_ARG(fn, t);
    int d = tensor__wrap_dim(fn, dim, t->ndim > 0 ? t->ndim : 1);
    if (d < 0) return NULL;
    int64_t n = t->ndim ? t->shape[d] : 1;
    if (k < 0 || k > n) return tensor__fail(fn, "k (%lld) is out of range for dim %d of size %lld", (long long)k, d, (long long)n);
    tensor__tmps s = {{0}, 0};
    tensor *idx = NULL, *v = tensor__tmp(&s, tensor_sort(t, d, largest, indices ? &idx : NULL));
    tensor__tmp(&s, idx);
    tensor *rv = NULL, *ri = NULL;
    if (t->ndim == 0) { rv = v; ri = idx; } /* k is 0 or 1: PyTorch keeps the 0-dim tensor */
    else {
        rv = tensor__tmp(&s, tensor_contiguous(tensor__tmp(&s, tensor_narrow(v, d, 0, k))));
        if (idx) ri = tensor__tmp(&s, tensor_contiguous(tensor__tmp(&s, tensor_narrow(idx, d, 0, k))));
    }
    bool ok = rv && (!indices || ri);
    if (ok) {
        if (t->ndim == 0 && k == 0) { ok = false; tensor__fail(fn, "k = 0 of a 0-dim tensor is not supported"); }
    }
    rv = ok ? tensor__tmps_take(&s, rv) : NULL;
    if (ok && indices) *indices = tensor__tmps_take(&s, ri);
    tensor__tmps_free(&s);
    return rv;
}

static tensor *tensor__scan(tensor_op op, tensor *t, int dim, tensor **indices) {
    const char *fn = tensor__ops[op].fn;
    if (indices) *indices = NULL;
    TENSOR__CHECK_ARG(fn, t);
    tensor_dtype dt = t->dtype;
    if (op == TENSOR_OP_cumprod && !tensor__is_float(dt)) dt = TENSOR_I64;
    if (op == TENSOR_OP_logcumsumexp && !tensor__is_float(dt))
        return tensor__fail(fn, "input dtype must be floating point, got %s (convert with tensor_to_dtype first)", tensor__dtype_names[dt]);
    return tensor__along(op, t, dim, dt, op == TENSOR_OP_cummax || op == TENSOR_OP_cummin, 0, indices);
}
TENSOR_API tensor *tensor_cumprod(tensor *t, int dim) { return tensor__scan(TENSOR_OP_cumprod, t, dim, NULL); }
TENSOR_API tensor *tensor_cummax(tensor *t, int dim, tensor **indices) { return tensor__scan(TENSOR_OP_cummax, t, dim, indices); }
TENSOR_API tensor *tensor_cummin(tensor *t, int dim, tensor **indices) { return tensor__scan(TENSOR_OP_cummin, t, dim, indices); }
TENSOR_API tensor *tensor_logcumsumexp(tensor *t, int dim) { return tensor__scan(TENSOR_OP_logcumsumexp, t, dim, NULL); }

// >>reduce-more --------------------------------------------------------------------------------
/* amax / amin: kernels of >>reduce over several dims (n = 0: every dim); their derivative shares
   the gradient evenly among the tied extremes, as PyTorch's. */
static tensor *tensor__amax(tensor_op op, tensor *t, int n, const int *dims, bool keepdim) {
    if (t && n < 0) return tensor__fail(tensor__ops[op].fn, "the number of dims must be >= 0, got %d", n);
    return tensor__reduce(op, t, n == 0 ? -1 : n, dims, keepdim, 0, 0);
}
TENSOR_API tensor *tensor_amax(tensor *t, int n, const int *dims, bool keepdim) { return tensor__amax(TENSOR_OP_amax, t, n, dims, keepdim); }
TENSOR_API tensor *tensor_amin(tensor *t, int n, const int *dims, bool keepdim) { return tensor__amax(TENSOR_OP_amin, t, n, dims, keepdim); }

/* torch.aminmax: the minimum, and the maximum through *max; dim NULL: over every element. */
TENSOR_API tensor *tensor_aminmax(tensor *t, const int *dim, bool keepdim, tensor **max) {
    if (max) *max = NULL;
    if (!t) return tensor__null_arg("tensor_aminmax", "t");
    int n = dim ? 1 : 0;
    tensor *lo = tensor__amax(TENSOR_OP_amin, t, n, dim, keepdim);
    tensor *hi = lo && max ? tensor__amax(TENSOR_OP_amax, t, n, dim, keepdim) : NULL;
    if (!lo || (max && !hi)) { tensor_free(lo); return NULL; }
    if (max) *max = hi;
    return lo;
}

/* torch.max / torch.min with a dim: the values, and the index of the first extreme (NaN first)
   through *indices; the gradient goes to that index. */
static tensor *tensor__ext_dim(bool is_max, tensor *t, int dim, bool keepdim, tensor **indices) {
    if (indices) *indices = NULL;
    if (!t) return tensor__null_arg(is_max ? "tensor_max_dim" : "tensor_min_dim", "t");
    tensor *v = is_max ? tensor_max(t, dim, keepdim) : tensor_min(t, dim, keepdim);
    if (!v || !indices) return v;
    tensor *i = is_max ? tensor_argmax(t, dim, keepdim) : tensor_argmin(t, dim, keepdim);
    if (!i) { tensor_free(v); return NULL; }
    *indices = i;
    return v;
}
TENSOR_API tensor *tensor_max_dim(tensor *t, int dim, bool keepdim, tensor **indices) { return tensor__ext_dim(true, t, dim, keepdim, indices); }
TENSOR_API tensor *tensor_min_dim(tensor *t, int dim, bool keepdim, tensor **indices) { return tensor__ext_dim(false, t, dim, keepdim, indices); }

/* nansum / nanmean: NaN taken as 0 / left out (over dims[0..n), n = 0: every dim). */
static tensor *tensor__nan_reduce(bool mean, tensor *t, int n, const int *dims, bool keepdim) {
    const char *fn = mean ? "tensor_nanmean" : "tensor_nansum";
    TENSOR__CHECK_ARG(fn, t);
    if (n < 0) return tensor__fail(fn, "the number of dims must be >= 0, got %d", n);
    if (mean && !tensor__is_float(t->dtype))
        return tensor__fail(fn, "input dtype must be floating point, got %s (convert with tensor_to_dtype first)", tensor__dtype_names[t->dtype]);
    if (!tensor__is_float(t->dtype)) { /* no NaN to skip */
        tensor *r = tensor_sum_dims(t, n, dims, keepdim);
        return r;
    }
    tensor__tmps s = {{0}, 0};
    tensor *nan = tensor__tmp(&s, tensor_isnan(t));
    tensor *z = tensor__tmp(&s, tensor_masked_fill(t, nan, 0));
    tensor *r = tensor__tmp(&s, tensor_sum_dims(z, n, dims, keepdim));
    if (mean) {
        tensor *cnt = tensor__tmp(&s, tensor_sum_dims(tensor__tmp(&s, tensor_logical_not(nan)), n, dims, keepdim));
        r = tensor__tmp(&s, tensor_div(r, tensor__tmp(&s, tensor_to_dtype(cnt, t->dtype))));
    }
    r = tensor__tmps_take(&s, r);
    tensor__tmps_free(&s);
    return r;
}
TENSOR_API tensor *tensor_nansum(tensor *t, int n, const int *dims, bool keepdim) { return tensor__nan_reduce(false, t, n, dims, keepdim); }
TENSOR_API tensor *tensor_nanmean(tensor *t, int n, const int *dims, bool keepdim) { return tensor__nan_reduce(true, t, n, dims, keepdim); }

/* The value at sorted position k[...] (an i64 tensor of size 1 along dim) of each line of t
   along dim, and its index: the selection under median, nanmedian, kthvalue. t is >= 1-D. */
static tensor *tensor__select_sorted(tensor__tmps *s, tensor *sorted, tensor *sidx, int d, tensor *k, bool keepdim, tensor **indices) {
    tensor *v = tensor__tmp(s, tensor_gather(sorted, d, k));
    tensor *i = indices ? tensor__tmp(s, tensor_gather(sidx, d, k)) : NULL;
    if (!keepdim) {
        v = tensor__tmp(s, tensor_squeeze(v, d));
        if (indices) i = tensor__tmp(s, tensor_squeeze(i, d));
    }
    if (indices) *indices = i;
    return v;
}

/* median (nan false) / nanmedian along dim: the lower of the two middle values. median gives NaN
   (the first NaN's index) for a line with a NaN; nanmedian leaves NaN out (NaN for all-NaN). */
static tensor *tensor__median_dim(bool nan, tensor *t, int dim, bool keepdim, tensor **indices) {
    const char *fn = nan ? "tensor_nanmedian" : "tensor_median";
    if (indices) *indices = NULL;
    TENSOR__CHECK_ARG(fn, t);
    int d = tensor__wrap_dim(fn, dim, t->ndim > 0 ? t->ndim : 1);
    if (d < 0) return NULL;
    int64_t n = t->ndim ? t->shape[d] : 1;
    if (n == 0) return tensor__fail(fn, "cannot compute the median on an empty dim (dim %d of shape %s)", d, tensor__shape_of(t));
    tensor__tmps s = {{0}, 0};
    int64_t one = 1;
    tensor *x = t->ndim ? t : tensor__tmp(&s, tensor_reshape(t, 1, &one));
    tensor *sidx = NULL, *sorted = tensor__tmp(&s, tensor_sort(x, d, false, &sidx));
    tensor__tmp(&s, sidx);
    /* per line: nn = the count of non-NaN values; the position to take */
    tensor *nn = tensor__tmp(&s, tensor_sum(tensor__tmp(&s, tensor_logical_not(tensor__tmp(&s, tensor_isnan(x)))), d, true));
    tensor *k;
    if (nan) { /* (max(nn, 1) - 1) / 2 */
        tensor *m1 = tensor__tmp(&s, tensor_sub_scalar(tensor__tmp(&s, tensor_clamp_min(nn, 1)), 1));
        k = tensor__tmp(&s, tensor__op_scalar(TENSOR_OP_floor_divide, m1, 2));
    } else { /* nn < n (a NaN): nn, the first NaN's place; else (n - 1) / 2 */
        tensor *has = tensor__tmp(&s, tensor__op_scalar(TENSOR_OP_lt, nn, (double)n));
        tensor *mid = tensor__tmp(&s, tensor_full_like(nn, (double)((n - 1) / 2)));
        k = tensor__tmp(&s, tensor_where(has, nn, mid));
    }
    tensor *ix = NULL;
    tensor *v = tensor__select_sorted(&s, sorted, sidx, d, k, keepdim || t->ndim == 0, indices ? &ix : NULL);
    if (v && t->ndim == 0) { /* back to 0-dim */
        v = tensor__tmp(&s, tensor_reshape(v, 0, NULL));
        if (indices) ix = tensor__tmp(&s, tensor_reshape(ix, 0, NULL));
    }
    bool ok = v && (!indices || ix);
    v = ok ? tensor__tmps_take(&s, v) : NULL;
    if (ok && indices) *indices = tensor__tmps_take(&s, ix);
    tensor__tmps_free(&s);
    return v;
}
TENSOR_API tensor *tensor_median(tensor *t, int dim, bool keepdim, tensor **indices) { return tensor__median_dim(false, t, dim, keepdim, indices); }
TENSOR_API tensor *tensor_nanmedian(tensor *t, int dim, bool keepdim, tensor **indices) { return tensor__median_dim(true, t, dim, keepdim, indices); }

/* The median of every element (0-dim; NaN for an empty tensor). Its gradient is shared evenly
   among the elements equal to it (the NaNs when it is NaN), as PyTorch's: the value is the
   selected m, plus a term of value 0 whose gradient is that share (0 where m is infinite). */
static tensor *tensor__median_all(bool nan, tensor *t) {
    const char *fn = nan ? "tensor_nanmedian_all" : "tensor_median_all";
    TENSOR__CHECK_ARG(fn, t);
    tensor__tmps s = {{0}, 0};
    int64_t all = -1;
    tensor *flat = tensor__tmp(&s, tensor_reshape(t, 1, &all));
    tensor *m;
    if (flat && flat->shape[0] == 0) m = tensor__tmp(&s, tensor__full_on(0, NULL, NAN, t->dtype, t->storage->device));
    else {
        tensor *fd = tensor__tmp(&s, tensor_detach(flat));
        m = tensor__tmp(&s, tensor__median_dim(nan, fd, 0, false, NULL));
    }
    tensor *r = m;
    if (m && flat && flat->shape[0] > 0 && t->requires_grad && tensor__grad_on() && tensor__is_float(t->dtype)) {
        tensor *mnan = tensor__tmp(&s, tensor_isnan(m));
        tensor *hit = tensor__tmp(&s, tensor_where(mnan, tensor__tmp(&s, tensor_isnan(flat)), tensor__tmp(&s, tensor_eq(flat, m))));
        tensor *fin = tensor__tmp(&s, tensor_logical_and(hit, tensor__tmp(&s, tensor_isfinite(flat))));
        tensor *hf = tensor__tmp(&s, tensor_to_dtype(hit, t->dtype));
        tensor *share = tensor__tmp(&s, tensor_div(hf, tensor__tmp(&s, tensor_sum_all(hf))));
        tensor *sel = tensor__tmp(&s, tensor_mul(tensor__tmp(&s, tensor_masked_fill(flat, tensor__tmp(&s, tensor_logical_not(fin)), 0)), share));
        tensor *sum = tensor__tmp(&s, tensor_sum_all(sel));
        tensor *zero = tensor__tmp(&s, tensor_sub(sum, tensor__tmp(&s, tensor_detach(sum))));
        r = tensor__tmp(&s, tensor_add(m, zero));
    }
    r = tensor__tmps_take(&s, r);
    tensor__tmps_free(&s);
    return r;
}
TENSOR_API tensor *tensor_median_all(tensor *t) { return tensor__median_all(false, t); }
TENSOR_API tensor *tensor_nanmedian_all(tensor *t) { return tensor__median_all(true, t); }

/* The k-th smallest value along dim (k from 1), and its index (the later of equal values'
   order in a stable sort, as PyTorch's CPU kernel picks). */
TENSOR_API tensor *tensor_kthvalue(tensor *t, int64_t k, int dim, bool keepdim, tensor **indices) {
    const char *fn = "tensor_kthvalue";
    if (indices) *indices = NULL;
    TENSOR__CHECK_ARG(fn, t);
    int d = tensor__wrap_dim(fn, dim, t->ndim > 0 ? t->ndim : 1);
    if (d < 0) return NULL;
    int64_t n = t->ndim ? t->shape[d] : 1;
    if (k < 1 || k > n) return tensor__fail(fn, "k (%lld) is out of range for dim %d of size %lld (expected 1..%lld)", (long long)k, d, (long long)n, (long long)n);
    tensor__tmps s = {{0}, 0};
    int64_t one = 1;
    tensor *x = t->ndim ? t : tensor__tmp(&s, tensor_reshape(t, 1, &one));
    tensor *sidx = NULL, *sorted = tensor__tmp(&s, tensor_sort(x, d, false, indices ? &sidx : NULL));
    tensor__tmp(&s, sidx);
    tensor *v = tensor__tmp(&s, tensor_narrow(sorted, d, k - 1, 1));
    tensor *ix = indices ? tensor__tmp(&s, tensor_narrow(sidx, d, k - 1, 1)) : NULL;
    if (!keepdim || t->ndim == 0) {
        v = tensor__tmp(&s, tensor_squeeze(v, d));
        if (indices) ix = tensor__tmp(&s, tensor_squeeze(ix, d));
    }
    v = tensor__tmp(&s, tensor_contiguous(v));
    if (indices) ix = tensor__tmp(&s, tensor_contiguous(ix));
    bool ok = v && (!indices || ix);
    v = ok ? tensor__tmps_take(&s, v) : NULL;
    if (ok && indices) *indices = tensor__tmps_take(&s, ix);
    tensor__tmps_free(&s);
    return v;
}

/* The most frequent value along dim (the smallest of equally frequent ones) and the index of
   its last occurrence, as PyTorch's CPU kernel. From the sorted line: each run of equal values
   counted, the first longest run taken. */
TENSOR_API tensor *tensor_mode(tensor *t, int dim, bool keepdim, tensor **indices) {
    const char *fn = "tensor_mode";
    if (indices) *indices = NULL;
    TENSOR__CHECK_ARG(fn, t);
    int d = tensor__wrap_dim(fn, dim, t->ndim > 0 ? t->ndim : 1);
    if (d < 0) return NULL;
    int64_t n = t->ndim ? t->shape[d] : 1;
    if (n == 0) return tensor__fail(fn, "cannot compute the mode on an empty dim (dim %d of shape %s)", d, tensor__shape_of(t));
    tensor__tmps s = {{0}, 0};
    int64_t one = 1;
    tensor *x = t->ndim ? t : tensor__tmp(&s, tensor_reshape(t, 1, &one));
    tensor *sidx = NULL, *sorted = tensor__tmp(&s, tensor_sort(x, d, false, &sidx));
    tensor__tmp(&s, sidx);
    tensor *sd = tensor__tmp(&s, tensor_detach(sorted));
    /* start[i]: a run begins at i (i == 0, or a value other than the one before) */
    tensor *start;
    if (n == 1) start = tensor__tmp(&s, tensor_ones_like(tensor__tmp(&s, tensor_to_dtype(sd, TENSOR_BOOL))));
    else {
        tensor *head = tensor__tmp(&s, tensor_ones_like(tensor__tmp(&s, tensor_to_dtype(tensor__tmp(&s, tensor_narrow(sd, d, 0, 1)), TENSOR_BOOL))));
        tensor *diff = tensor__tmp(&s, tensor_ne(tensor__tmp(&s, tensor_narrow(sd, d, 1, n - 1)), tensor__tmp(&s, tensor_narrow(sd, d, 0, n - 1))));
        tensor *pair[2] = {head, diff};
        start = tensor__tmp(&s, tensor_cat(2, pair, d));
    }
    tensor *run = tensor__tmp(&s, tensor_sub_scalar(tensor__tmp(&s, tensor_cumsum(start, d)), 1)); /* the run of each place */
    tensor *ones = tensor__tmp(&s, tensor_ones_like(run));
    tensor *counts = tensor__tmp(&s, tensor_scatter_add(tensor__tmp(&s, tensor_zeros_like(run)), d, run, ones));
    tensor *len = tensor__tmp(&s, tensor_gather(counts, d, run));          /* the length of each place's run */
    tensor *first = tensor__tmp(&s, tensor_argmax(len, d, true));          /* the first place of the first longest run */
    tensor *last = tensor__tmp(&s, tensor_sub_scalar(tensor__tmp(&s, tensor_add(first, tensor__tmp(&s, tensor_gather(len, d, first)))), 1));
    tensor *ix = NULL;
    tensor *v = tensor__select_sorted(&s, sorted, sidx, d, last, keepdim || t->ndim == 0, indices ? &ix : NULL);
    if (v && t->ndim == 0) {
        v = tensor__tmp(&s, tensor_reshape(v, 0, NULL));
        if (indices) ix = tensor__tmp(&s, tensor_reshape(ix, 0, NULL));
    }
    bool ok = v && (!indices || ix);
    v = ok ? tensor__tmps_take(&s, v) : NULL;
    if (ok && indices) *indices = tensor__tmps_take(&s, ix);
    tensor__tmps_free(&s);
    return v;
}

/* quantile / nanquantile, PyTorch's algorithm: the line sorted (NaN last), the rank q (n - 1)
   (nanquantile: q (non-NaN count - 1), 0 for none; quantile: n - 1, the NaN, for a line with a
   NaN), rounded by the interpolation, and the values at floor and ceil of it interpolated (linear:
   torch.lerp's formula; midpoint: weight 0.5). q: a 0-dim (scalar q) or 1-D tensor of t's dtype
   (a 1-D q puts its dim first in the result). dim NULL: over every element. */
enum { TENSOR__Q_LINEAR, TENSOR__Q_LOWER, TENSOR__Q_HIGHER, TENSOR__Q_MIDPOINT, TENSOR__Q_NEAREST };
static tensor *tensor__quantile(const char *fn, bool ignore_nan, tensor *t, tensor *q, bool q_scalar, const int *dim, bool keepdim, const char *interpolation) {
    TENSOR__CHECK_ARG(fn, t);
    TENSOR__CHECK_ARG(fn, q);
    int mode = -1;
    const char *names[] = {"linear", "lower", "higher", "midpoint", "nearest"};
    if (!interpolation) mode = TENSOR__Q_LINEAR;
    for (int i = 0; i < 5 && mode < 0; i++) if (!strcmp(interpolation, names[i])) mode = i;
    if (mode < 0) return tensor__fail(fn, "interpolation must be linear, lower, higher, midpoint or nearest, got '%s'", interpolation);
    if (t->dtype != TENSOR_F32 && t->dtype != TENSOR_F64) return tensor__fail(fn, "input dtype must be float32 or float64, got %s", tensor__dtype_names[t->dtype]);
    if (q->dtype != t->dtype) return tensor__fail(fn, "q must have the input's dtype %s, got %s", tensor__dtype_names[t->dtype], tensor__dtype_names[q->dtype]);
    if (q->ndim > 1) return tensor__fail(fn, "q must be a scalar or a 1-D tensor, got shape %s", tensor__shape_of(q));
    tensor *ins[2] = {t, q};
    if (!tensor__same_device(fn, 2, ins)) return NULL;
    int64_t numel = tensor__numel_of(t->ndim, t->shape), nq = tensor__numel_of(q->ndim, q->shape);
    if (numel == 0) return tensor__fail(fn, "the input must be non-empty");
    int d = -1;
    if (dim && (d = tensor__wrap_dim(fn, *dim, t->ndim > 0 ? t->ndim : 1)) < 0) return NULL;
    { /* q in [0, 1], read on the host */
        double *qv = (double *)TENSOR__MALLOC(sizeof(double) * (size_t)(nq > 0 ? nq : 1));
        if (!qv) return tensor__fail(fn, "out of memory");
        tensor *q64 = tensor_to_dtype(q, TENSOR_F64);
        int rc = q64 ? tensor_copy_to(q64, qv, sizeof(double) * (size_t)nq) : -1;
        tensor_free(q64);
        bool bad = false;
        double badv = 0;
        for (int64_t i = 0; rc == 0 && i < nq && !bad; i++) if (!(qv[i] >= 0 && qv[i] <= 1)) { bad = true; badv = qv[i]; }
        TENSOR_FREE(qv);
        if (rc) return NULL;
        if (bad) return tensor__fail(fn, "q values must be in the range [0, 1], got %g", badv);
    }
    tensor__tmps s = {{0}, 0};
    int64_t flat = -1, one = 1;
    tensor *x = !dim ? tensor__tmp(&s, tensor_reshape(t, 1, &flat))
              : t->ndim == 0 ? tensor__tmp(&s, tensor_reshape(t, 1, &one))
              : tensor__tmp(&s, tensor_movedim(t, d, -1));
    tensor *sorted = tensor__tmp(&s, tensor_sort(x, -1, false, NULL));
    int64_t n = x ? x->shape[x->ndim - 1] : 0;
    tensor *qq = tensor__tmp(&s, tensor_reshape(q, 1, &nq)); /* [Q] */
    tensor *nanm = tensor__tmp(&s, tensor_isnan(sorted));
    tensor *ranks;
    if (ignore_nan) {
        tensor *cnt = tensor__tmp(&s, tensor_sum(tensor__tmp(&s, tensor_logical_not(nanm)), -1, true));
        tensor *last = tensor__tmp(&s, tensor_to_dtype(tensor__tmp(&s, tensor_sub_scalar(cnt, 1)), t->dtype));
        ranks = tensor__tmp(&s, tensor_mul(qq, last));
        ranks = tensor__tmp(&s, tensor_masked_fill(ranks, tensor__tmp(&s, tensor__op_scalar(TENSOR_OP_lt, ranks, 0)), 0));
    } else {
        tensor *has = tensor__tmp(&s, tensor__op_scalar(TENSOR_OP_gt, tensor__tmp(&s, tensor_sum(nanm, -1, true)), 0));
        ranks = tensor__tmp(&s, tensor_masked_fill(tensor__tmp(&s, tensor_mul_scalar(qq, (double)(n - 1))), has, (double)(n - 1)));
    }
    if (mode == TENSOR__Q_LOWER) ranks = tensor__tmp(&s, tensor_floor(ranks));
    else if (mode == TENSOR__Q_HIGHER) ranks = tensor__tmp(&s, tensor_ceil(ranks));
    else if (mode == TENSOR__Q_NEAREST) ranks = tensor__tmp(&s, tensor_round(ranks));
    /* ranks may be [Q] (no NaN rule per line): every line takes the same places */
    if (ranks && x && ranks->ndim < x->ndim) {
        int64_t shape[TENSOR_MAX_DIMS];
        for (int i = 0; i < x->ndim - 1; i++) shape[i] = x->shape[i];
        shape[x->ndim - 1] = nq;
        ranks = tensor__tmp(&s, tensor_contiguous(tensor__tmp(&s, tensor_expand(ranks, x->ndim, shape))));
    }
    tensor *below = tensor__tmp(&s, tensor_to_dtype(ranks, TENSOR_I64));
    tensor *r = tensor__tmp(&s, tensor_gather(sorted, -1, below));
    if (mode == TENSOR__Q_LINEAR || mode == TENSOR__Q_MIDPOINT) {
        tensor *w = mode == TENSOR__Q_MIDPOINT ? tensor__tmp(&s, tensor_full_like(ranks, 0.5))
                                               : tensor__tmp(&s, tensor_sub(ranks, tensor__tmp(&s, tensor_to_dtype(below, t->dtype))));
        tensor *above = tensor__tmp(&s, tensor_gather(sorted, -1, tensor__tmp(&s, tensor_to_dtype(tensor__tmp(&s, tensor_ceil(ranks)), TENSOR_I64))));
        tensor *span = tensor__tmp(&s, tensor_sub(above, r));
        tensor *lo = tensor__tmp(&s, tensor_add(r, tensor__tmp(&s, tensor_mul(w, span))));
        tensor *hi = tensor__tmp(&s, tensor_sub(above, tensor__tmp(&s, tensor_mul(span, tensor__tmp(&s, tensor_sub_scalar(tensor__tmp(&s, tensor_neg(w)), -1))))));
        r = tensor__tmp(&s, tensor_where(tensor__tmp(&s, tensor__op_scalar(TENSOR_OP_lt, w, 0.5)), lo, hi));
    }
    /* r: [..., Q] -> PyTorch's layout */
    r = q_scalar ? tensor__tmp(&s, tensor_squeeze(r, -1)) : tensor__tmp(&s, tensor_movedim(r, -1, 0));
    if (r && keepdim) {
        if (!dim) {
            int64_t shape[TENSOR_MAX_DIMS + 1];
            int nd = 0;
            if (!q_scalar) shape[nd++] = nq;
            for (int i = 0; i < t->ndim; i++) shape[nd++] = 1;
            r = tensor__tmp(&s, tensor_reshape(r, nd, shape));
        } else if (t->ndim > 0) r = tensor__tmp(&s, tensor_unsqueeze(r, d + (q_scalar ? 0 : 1)));
    }
    if (r && dim && t->ndim == 0 && !keepdim) { /* a 0-dim input over its dim: no dim left */
        int64_t qs = nq;
        r = tensor__tmp(&s, tensor_reshape(r, q_scalar ? 0 : 1, &qs));
    }
    r = tensor__tmp(&s, tensor_contiguous(r));
    r = tensor__tmps_take(&s, r);
    tensor__tmps_free(&s);
    return r;
}
static tensor *tensor__quantile_scalar(const char *fn, bool ignore_nan, tensor *t, double q, const int *dim, bool keepdim, const char *interpolation) {
    TENSOR__CHECK_ARG(fn, t);
    if (!(q >= 0 && q <= 1)) return tensor__fail(fn, "q must be in the range [0, 1], got %g", q);
    tensor *qt = tensor__full_on(0, NULL, q, tensor__is_float(t->dtype) ? t->dtype : TENSOR_F32, t->storage->device);
    tensor *r = qt ? tensor__quantile(fn, ignore_nan, t, qt, true, dim, keepdim, interpolation) : NULL;
    tensor_free(qt);
    return r;
}
TENSOR_API tensor *tensor_quantile(tensor *t, double q, const int *dim, bool keepdim, const char *interpolation) {
    return tensor__quantile_scalar("tensor_quantile", false, t, q, dim, keepdim, interpolation);
}
TENSOR_API tensor *tensor_nanquantile(tensor *t, double q, const int *dim, bool keepdim, const char *interpolation) {
    return tensor__quantile_scalar("tensor_nanquantile", true, t, q, dim, keepdim, interpolation);
}
TENSOR_API tensor *tensor_quantile_tensor(tensor *t, tensor *q, const int *dim, bool keepdim, const char *interpolation) {
    return tensor__quantile("tensor_quantile_tensor", false, t, q, q && q->ndim == 0, dim, keepdim, interpolation);
}
TENSOR_API tensor *tensor_nanquantile_tensor(tensor *t, tensor *q, const int *dim, bool keepdim, const char *interpolation) {
    return tensor__quantile("tensor_nanquantile_tensor", true, t, q, q && q->ndim == 0, dim, keepdim, interpolation);
}

/* var_mean / std_mean: var (std) over dim, and the mean through *mean. */
static tensor *tensor__stat_mean(bool sd, tensor *t, int dim, int64_t correction, bool keepdim, tensor **mean) {
    if (mean) *mean = NULL;
    if (!t) return tensor__null_arg(sd ? "tensor_std_mean" : "tensor_var_mean", "t");
    tensor *v = sd ? tensor_std(t, dim, correction, keepdim) : tensor_var(t, dim, correction, keepdim);
    if (!v || !mean) return v;
    tensor *m = tensor_mean(t, dim, keepdim);
    if (!m) { tensor_free(v); return NULL; }
    *mean = m;
    return v;
}
TENSOR_API tensor *tensor_var_mean(tensor *t, int dim, int64_t correction, bool keepdim, tensor **mean) { return tensor__stat_mean(false, t, dim, correction, keepdim, mean); }
TENSOR_API tensor *tensor_std_mean(tensor *t, int dim, int64_t correction, bool keepdim, tensor **mean) { return tensor__stat_mean(true, t, dim, correction, keepdim, mean); }

/* The count of non-zero elements over dims[0..n) (n = 0: every dim), i64. */
TENSOR_API tensor *tensor_count_nonzero(tensor *t, int n, const int *dims) {
    const char *fn = "tensor_count_nonzero";
    TENSOR__CHECK_ARG(fn, t);
    if (n < 0) return tensor__fail(fn, "the number of dims must be >= 0, got %d", n);
    tensor *nz = tensor__op_scalar(TENSOR_OP_ne, t, 0);
    tensor *r = nz ? tensor_sum_dims(nz, n, dims, false) : NULL;
    tensor_free(nz);
    return r;
}

/* The p-norm of a - b (broadcast), over every element. */
TENSOR_API tensor *tensor_dist(tensor *a, tensor *b, double p) {
    const char *fn = "tensor_dist";
    TENSOR__CHECK_ARG(fn, a);
    TENSOR__CHECK_ARG(fn, b);
    if (p != p) return tensor__fail(fn, "order p must be a number, got %g", p);
    tensor *ins[2] = {a, b};
    if (!tensor__is_float(tensor__result_type(2, ins))) /* PyTorch's norm of a - b: floating only */
        return tensor__fail(fn, "expected floating inputs, got %s and %s", tensor__dtype_names[a->dtype], tensor__dtype_names[b->dtype]);
    tensor__tmps s = {{0}, 0};
    int64_t flat = -1;
    tensor *diff = tensor__tmp(&s, tensor_sub(a, b));
    tensor *r = tensor__tmp(&s, tensor_norm(tensor__tmp(&s, tensor_reshape(diff, 1, &flat)), p, 0, false));
    r = tensor__tmps_take(&s, r);
    tensor__tmps_free(&s);
    return r;
}
