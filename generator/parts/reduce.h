// >>reduce -------------------------------------------------------------------------------------
/* Reductions. Every one runs on one description, tensor__red: the input's dims split into "kept"
   dims (one output element per position) and "reduced" dims (walked inside each output element,
   in row-major order). Both lists drop size-1 dims and coalesce dims that step evenly, so any
   strides work and a contiguous last-dim reduction is one row per output element. A reduction
   is an "elem" function (one output element) built from "row" functions (one run of the
   innermost reduced dim), which keep typed fast paths for f32 and f64.
   Float reductions accumulate in double and round once to the output dtype; bool and integer
   sums and products accumulate in int64 (wrapping, as PyTorch's int64 does).

   Call layout, read by the kernels and by the autograd formulas: in[0] the input;
   dims[0..n_dims) the reduced dims of the input, wrapped and ascending (none for a 0-dim input);
   ip[0] keepdim; ip[1] the correction of var and std; p[0] the order p of norm. */
typedef struct {
    int nk, nr;
    int64_t kshape[TENSOR_MAX_DIMS], kstride[2][TENSOR_MAX_DIMS]; /* kept: size; byte strides, [0] input, [1] output */
    int64_t rshape[TENSOR_MAX_DIMS], rstride[1][TENSOR_MAX_DIMS];  /* reduced: size; input byte stride */
    int64_t knumel, rnumel;
    const char *in;
    char *out;
    tensor_dtype in_dt, out_dt;
} tensor__red;

/* Splits t's dims by the bit mask `reduced`; ostride[d] is the output byte stride of kept dim d.
   No overflow: t's byte strides times its sizes fit (>>shapes), and so do the output's. */
static void tensor__red_init(tensor__red *r, const tensor *t, unsigned reduced, const int64_t *ostride, tensor *out) {
    int64_t esz = (int64_t)tensor__dtype_sizes[t->dtype];
    r->nk = r->nr = 0;
    r->knumel = r->rnumel = 1;
    for (int d = 0; d < t->ndim; d++) {
        int64_t n = t->shape[d], s = t->strides[d] * esz;
        if (reduced >> d & 1) {
            r->rnumel *= n;
            if (n == 1) continue;
            if (r->nr > 0 && r->rstride[0][r->nr - 1] == s * n) { r->rshape[r->nr - 1] *= n; r->rstride[0][r->nr - 1] = s; continue; }
            r->rshape[r->nr] = n;
            r->rstride[0][r->nr] = s;
            r->nr++;
        } else {
            r->knumel *= n;
            if (n == 1) continue;
            if (r->nk > 0 && r->kstride[0][r->nk - 1] == s * n && r->kstride[1][r->nk - 1] == ostride[d] * n) {
                r->kshape[r->nk - 1] *= n;
                r->kstride[0][r->nk - 1] = s;
                r->kstride[1][r->nk - 1] = ostride[d];
                continue;
            }
            r->kshape[r->nk] = n;
            r->kstride[0][r->nk] = s;
            r->kstride[1][r->nk] = ostride[d];
            r->nk++;
        }
    }
    r->in = tensor__data(t);
    r->out = tensor__data(out);
    r->in_dt = t->dtype;
    r->out_dt = out->dtype;
}

/* The description of a reduction call: the output is contiguous over the kept dims. */
static void tensor__red_from_call(tensor__red *r, const tensor__call *c) {
    const tensor *t = c->in[0];
    unsigned mask = 0;
    for (int i = 0; i < c->n_dims; i++) mask |= 1u << c->dims[i];
    int64_t ostride[TENSOR_MAX_DIMS], s = (int64_t)tensor__dtype_sizes[c->out->dtype];
    for (int d = t->ndim - 1; d >= 0; d--) {
        ostride[d] = 0;
        if (mask >> d & 1) continue;
        ostride[d] = s;
        s *= t->shape[d] > 1 ? t->shape[d] : 1;
    }
    tensor__red_init(r, t, mask, ostride, c->out);
}

/* One run of the innermost reduced dim: n elements from p, s bytes apart. */
typedef void (*tensor__row_fn)(void *state, const char *p, int64_t s, int64_t n);

/* Walks the reduced elements of the output element whose first input element is at base. */
static void tensor__red_walk(const tensor__red *r, const char *base, tensor__row_fn row, void *state) {
    if (r->rnumel == 0) return;
    if (r->nr == 0) { row(state, base, 0, 1); return; }
    int nr = r->nr;
    int64_t n = r->rshape[nr - 1], s = r->rstride[0][nr - 1];
    if (nr == 1) { row(state, base, s, n); return; }
    int64_t idx[TENSOR_MAX_DIMS] = {0}, rows = r->rnumel / n;
    char *p = (char *)base;
    for (int64_t k = 0; k < rows; k++) {
        row(state, p, s, n);
        tensor__odometer_step(nr - 1, r->rshape, idx, 1, &p, r->rstride); /* over the outer reduced dims */
    }
}

/* Computes one output element: in is its first input element, out where it goes. */
typedef void (*tensor__elem_fn)(const tensor__red *r, const char *in, char *out, void *ctx);

/* The first input element and the output element of output position pos. */
static void tensor__red_at(const tensor__red *r, int64_t pos, const char **in, char **out) {
    int64_t idx[TENSOR_MAX_DIMS];
    char *ptr[2], *base[2] = {(char *)r->in, r->out};
    tensor__odometer_seek(r->nk, r->kshape, idx, 2, ptr, base, r->kstride, pos);
    *in = ptr[0];
    *out = ptr[1];
}

/* Visits the output elements [begin, end). */
static void tensor__red_run_range(const tensor__red *r, tensor__elem_fn fn, void *ctx, int64_t begin, int64_t end) {
    int64_t idx[TENSOR_MAX_DIMS];
    char *ptr[2], *base[2] = {(char *)r->in, r->out}; /* input, output */
    tensor__odometer_seek(r->nk, r->kshape, idx, 2, ptr, base, r->kstride, begin);
    for (int64_t e = begin; e < end; e++) {
        fn(r, ptr[0], ptr[1], ctx);
        tensor__odometer_step(r->nk, r->kshape, idx, 2, ptr, r->kstride);
    }
}

/* Visits every output element, in order, on the calling thread. */
static void tensor__red_run(const tensor__red *r, tensor__elem_fn fn, void *ctx) {
    if (r->knumel > 0) tensor__red_run_range(r, fn, ctx, 0, r->knumel);
}

typedef struct { const tensor__red *r; tensor__elem_fn fn; void *ctx; } tensor__red_task;
static void tensor__red_chunk(int64_t begin, int64_t end, void *p) {
    const tensor__red_task *t = (const tensor__red_task *)p;
    tensor__red_run_range(t->r, t->fn, t->ctx, begin, end);
}

/* Visits every output element, split over the thread pool when there is enough work (fn writes
   only its own output; each output is computed the same way on any thread, so the result does not
   depend on the split). Reference kernels stay on the calling thread. */
static void tensor__red_run_parallel(const tensor__red *r, tensor__elem_fn fn, void *ctx) {
    if (r->knumel == 0) return;
    if (tensor__reference_kernels) { tensor__red_run(r, fn, ctx); return; }
    tensor__red_task t;
    t.r = r;
    t.fn = fn;
    t.ctx = ctx;
    tensor__parallel_for(r->knumel, tensor__grain(r->rnumel), tensor__red_chunk, &t);
}

/* The loop `for i < n: double x = element i; BODY...` with typed loads for f32 and f64 (the body
   may `break`). Integers load exactly as doubles only up to 2^53: integer paths use int64 instead. */
#define TENSOR__RED_LOOP(dt, p, s, n, ...)                                                              \
    do {                                                                                                 \
        if ((dt) == TENSOR_F32) {                                                                        \
            for (int64_t i = 0; i < (n); i++) { double x = *(const float *)((p) + i * (s)); __VA_ARGS__ }      \
        } else if ((dt) == TENSOR_F64) {                                                                 \
            for (int64_t i = 0; i < (n); i++) { double x = *(const double *)((p) + i * (s)); __VA_ARGS__ }     \
        } else {                                                                                         \
            for (int64_t i = 0; i < (n); i++) { double x = tensor__load_f64((p) + i * (s), (dt)); __VA_ARGS__ } \
        }                                                                                                \
    } while (0)

/* The running state of one output element. */
typedef struct {
    tensor_dtype dt;
    bool is_int;        /* bool and integer inputs: i holds the value */
    double d, ref;      /* float accumulator; a reference value (the mean, the max) */
    int64_t i;          /* integer accumulator */
    int64_t seen, best; /* elements visited so far; index of the extreme */
    int mode;           /* max/min: +1 / -1; norm: its kind */
    double p;           /* norm: the order */
    bool found, done;   /* an element was seen; the result cannot change any more */
} tensor__acc;

static void tensor__acc_init(tensor__acc *a, tensor_dtype dt) {
    memset(a, 0, sizeof *a);
    a->dt = dt;
    a->is_int = !tensor__is_float(dt);
}

/* Contiguous f32 and f64 rows: eight independent double accumulators (they vectorize and hide
   the add latency; f32 values are exact in double, so the order hardly matters). */
static double tensor__sum_f32(const float *x, int64_t n) {
    double a[8] = {0, 0, 0, 0, 0, 0, 0, 0}, tail = 0;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) a[j] += (double)x[i + j];
    for (; i < n; i++) tail += (double)x[i];
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7])) + tail;
}
static double tensor__sum_f64(const double *x, int64_t n) {
    double a[8] = {0, 0, 0, 0, 0, 0, 0, 0}, tail = 0;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) a[j] += x[i + j];
    for (; i < n; i++) tail += x[i];
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7])) + tail;
}

static void tensor__row_sum(void *st, const char *p, int64_t s, int64_t n) {
    tensor__acc *a = (tensor__acc *)st;
    if (a->is_int) {
        int64_t acc = a->i;
        if (a->dt == TENSOR_I64) for (int64_t i = 0; i < n; i++) acc = tensor__iadd(acc, *(const int64_t *)(p + i * s));
        else if (a->dt == TENSOR_I32) for (int64_t i = 0; i < n; i++) acc = tensor__iadd(acc, *(const int32_t *)(p + i * s));
        else for (int64_t i = 0; i < n; i++) acc = tensor__iadd(acc, tensor__load_i64(p + i * s, a->dt));
        a->i = acc;
    } else if (a->dt == TENSOR_F32 && s == 4) {
        a->d += tensor__reference_kernels ? tensor__sum_f32((const float *)p, n) : tensor__row_sum_f32((const float *)p, n);
    } else if (a->dt == TENSOR_F64 && s == 8) {
        const tensor__simd_isa *v = tensor__reference_kernels ? NULL : tensor__simd();
        a->d += v ? v->row_sum_f64((const double *)p, n) : tensor__sum_f64((const double *)p, n);
    } else {
        double acc = a->d;
        TENSOR__RED_LOOP(a->dt, p, s, n, acc += x;);
        a->d = acc;
    }
}

static void tensor__row_prod(void *st, const char *p, int64_t s, int64_t n) {
    tensor__acc *a = (tensor__acc *)st;
    if (a->is_int) {
        int64_t acc = a->i;
        for (int64_t i = 0; i < n; i++) acc = tensor__imul(acc, tensor__load_i64(p + i * s, a->dt));
        a->i = acc;
    } else {
        double acc = a->d;
        TENSOR__RED_LOOP(a->dt, p, s, n, acc *= x;);
        a->d = acc;
    }
}

/* max (mode +1) or min (mode -1) and the index of its first occurrence. NaN counts as both the
   maximum and the minimum: the first NaN wins, as in PyTorch. */
static void tensor__row_ext(void *st, const char *p, int64_t s, int64_t n) {
    tensor__acc *a = (tensor__acc *)st;
    if (a->done) return;
    bool is_max = a->mode > 0;
    if (a->is_int) {
        for (int64_t i = 0; i < n; i++) {
            int64_t x = tensor__load_i64(p + i * s, a->dt);
            if (!a->found || (is_max ? x > a->i : x < a->i)) { a->i = x; a->best = a->seen + i; a->found = true; }
        }
    } else {
        double b = a->d;
        int64_t best = a->best;
        bool found = a->found;
        TENSOR__RED_LOOP(a->dt, p, s, n,
            if (!found || x != x || (is_max ? x > b : x < b)) {
                b = x; best = a->seen + i; found = true;
                if (x != x) { a->done = true; break; }
            });
        a->d = b;
        a->best = best;
        a->found = found;
    }
    a->seen += n;
}

/* Sum of squared deviations from a->ref (the second pass of var). */
static void tensor__row_sqdev(void *st, const char *p, int64_t s, int64_t n) {
    tensor__acc *a = (tensor__acc *)st;
    double acc = a->d, m = a->ref;
    TENSOR__RED_LOOP(a->dt, p, s, n, acc += (x - m) * (x - m););
    a->d = acc;
}

/* Sum of exp(x - a->ref) (the second pass of logsumexp). */
static void tensor__row_sumexp(void *st, const char *p, int64_t s, int64_t n) {
    tensor__acc *a = (tensor__acc *)st;
    double acc = a->d, m = a->ref;
    TENSOR__RED_LOOP(a->dt, p, s, n, acc += exp(x - m););
    a->d = acc;
}

/* The kinds of p-norm, each with its own accumulation. */
enum { TENSOR__NORM_INF, TENSOR__NORM_NEG_INF, TENSOR__NORM_ZERO, TENSOR__NORM_ONE, TENSOR__NORM_TWO, TENSOR__NORM_P };

static void tensor__row_norm(void *st, const char *p, int64_t s, int64_t n) {
    tensor__acc *a = (tensor__acc *)st;
    double acc = a->d, q = a->p;
    switch (a->mode) {
    case TENSOR__NORM_INF:
        TENSOR__RED_LOOP(a->dt, p, s, n, double v = fabs(x); if (!a->found || v != v || v > acc) acc = v; a->found = true;);
        break;
    case TENSOR__NORM_NEG_INF:
        TENSOR__RED_LOOP(a->dt, p, s, n, double v = fabs(x); if (!a->found || v != v || v < acc) acc = v; a->found = true;);
        break;
    case TENSOR__NORM_ZERO: TENSOR__RED_LOOP(a->dt, p, s, n, acc += x != 0;); break;
    case TENSOR__NORM_ONE: TENSOR__RED_LOOP(a->dt, p, s, n, acc += fabs(x);); break;
    case TENSOR__NORM_TWO: TENSOR__RED_LOOP(a->dt, p, s, n, acc += x * x;); break;
    default: TENSOR__RED_LOOP(a->dt, p, s, n, acc += pow(fabs(x), q);); break;
    }
    a->d = acc;
}

/* all (mode 1): stays true until a zero; any (mode 0): becomes true at a non-zero. NaN is
   non-zero. Every dtype loads exactly enough as a double to tell zero from non-zero. */
static void tensor__row_allany(void *st, const char *p, int64_t s, int64_t n) {
    tensor__acc *a = (tensor__acc *)st;
    if (a->done) return;
    bool want_zero = a->mode == 1;
    TENSOR__RED_LOOP(a->dt, p, s, n, if ((x == 0) == want_zero) { a->done = true; break; });
}

/* Stores a float (v) or integer (iv) result in the output dtype. */
static void tensor__red_store(const tensor__red *r, char *out, const tensor__acc *a) {
    if (a->is_int && !tensor__is_float(r->out_dt)) tensor__store_i64(out, r->out_dt, a->i);
    else if (r->out_dt == TENSOR_F32) *(float *)out = (float)a->d;
    else tensor__store_f64(out, r->out_dt, a->d);
}

/* sum (ctx NULL) or mean (ctx non-NULL); a mean of no elements is 0/0 = NaN. */
static void tensor__elem_sum(const tensor__red *r, const char *in, char *out, void *ctx) {
    tensor__acc a;
    tensor__acc_init(&a, r->in_dt);
    tensor__red_walk(r, in, tensor__row_sum, &a);
    if (ctx) a.d /= (double)r->rnumel;
    tensor__red_store(r, out, &a);
}

/* Block sums for when the innermost kept dim is contiguous in the input but the reduced dims are
   not (a sum over dim 0 of [N, C], as a bias gradient does): walking each output's elements on
   its own would stride through memory once per output, so a block of adjacent outputs
   accumulates together while the input is read row by row. */
#define TENSOR__COL_BLOCK 8192 /* outputs per block: 64 KiB of accumulators, at most */
typedef struct { tensor_dtype dt; int64_t nb; double *acc; int64_t *iacc; bool fast; } tensor__cols_acc; /* acc: floats, iacc: integers */
typedef struct { int64_t n, in_stride, out_stride; bool mean; void *buf; } tensor__cols_ctx;

#if defined(__GNUC__) || defined(__clang__) || defined(_MSC_VER)
#define TENSOR__RESTRICT __restrict
#else
#define TENSOR__RESTRICT
#endif

static void tensor__row_cols(void *st, const char *p, int64_t s, int64_t n) {
    tensor__cols_acc *a = (tensor__cols_acc *)st;
    int64_t nb = a->nb;
    double *TENSOR__RESTRICT acc = a->acc;
    const tensor__simd_isa *v = a->fast && a->dt == TENSOR_F32 ? tensor__simd() : NULL;
    if (v) {
        for (int64_t k = 0; k < n; k++, p += s) v->row_cols_add(acc, (const float *)p, nb);
        return;
    }
    for (int64_t k = 0; k < n; k++, p += s) {
        switch (a->dt) {
        case TENSOR_F32: { const float *TENSOR__RESTRICT x = (const float *)p; for (int64_t j = 0; j < nb; j++) acc[j] += (double)x[j]; break; }
        case TENSOR_F64: { const double *TENSOR__RESTRICT x = (const double *)p; for (int64_t j = 0; j < nb; j++) acc[j] += x[j]; break; }
        case TENSOR_F16:
        case TENSOR_BF16: for (int64_t j = 0; j < nb; j++) acc[j] += tensor__load_f64(p + 2 * j, a->dt); break;
        default: {
            int64_t esz = (int64_t)tensor__dtype_sizes[a->dt];
            for (int64_t j = 0; j < nb; j++) a->iacc[j] = tensor__iadd(a->iacc[j], tensor__load_i64(p + esz * j, a->dt));
        }
        }
    }
}

/* Outputs j0 .. j0 + nb of the innermost kept dim, for the outer output element at in/out; buf
   holds nb accumulators. */
static void tensor__sum_cols_block(const tensor__red *r, const tensor__cols_ctx *cc, const char *in, char *out, void *buf, int64_t j0, int64_t nb, bool fast) {
    double *acc = (double *)buf;
    int64_t *iacc = (int64_t *)buf;
    tensor__cols_acc a;
    a.dt = r->in_dt;
    a.acc = acc;
    a.iacc = iacc;
    a.nb = nb;
    a.fast = fast;
    bool is_int = !tensor__is_float(r->in_dt);
    for (int64_t j = 0; j < nb; j++) { if (is_int) iacc[j] = 0; else acc[j] = 0; }
    tensor__red_walk(r, in + j0 * cc->in_stride, tensor__row_cols, &a);
    for (int64_t j = 0; j < nb; j++) {
        char *o = out + (j0 + j) * cc->out_stride;
        if (is_int) tensor__store_i64(o, r->out_dt, iacc[j]);
        else tensor__store_f64(o, r->out_dt, cc->mean ? acc[j] / (double)r->rnumel : acc[j]);
    }
}

/* r describes the outer kept dims only; ctx the innermost kept dim (n, strides). */
static void tensor__elem_sum_cols(const tensor__red *r, const char *in, char *out, void *ctx) {
    const tensor__cols_ctx *cc = (const tensor__cols_ctx *)ctx;
    for (int64_t j0 = 0; j0 < cc->n; j0 += TENSOR__COL_BLOCK)
        tensor__sum_cols_block(r, cc, in, out, cc->buf, j0, cc->n - j0 < TENSOR__COL_BLOCK ? cc->n - j0 : TENSOR__COL_BLOCK, false);
}

/* The column sums split over the pool: items are (outer element, block of cb columns), dealt out
   in n_parts contiguous runs, each with its own accumulators in buf. */
typedef struct { const tensor__red *r; const tensor__cols_ctx *cc; int64_t cb, nblk, items, n_parts; char *buf; } tensor__cols_task;
static void tensor__cols_parts(int64_t begin, int64_t end, void *vt) {
    const tensor__cols_task *t = (const tensor__cols_task *)vt;
    for (int64_t part = begin; part < end; part++) {
        int64_t i0 = t->items * part / t->n_parts, i1 = t->items * (part + 1) / t->n_parts;
        for (int64_t it = i0; it < i1; it++) {
            int64_t j0 = (it % t->nblk) * t->cb;
            const char *in;
            char *out;
            tensor__red_at(t->r, it / t->nblk, &in, &out);
            int64_t nb = t->cc->n - j0 < t->cb ? t->cc->n - j0 : t->cb;
            tensor__sum_cols_block(t->r, t->cc, in, out, t->buf + part * t->cb * 8, j0, nb, true);
        }
    }
}

/* One part of a long sum split into fixed blocks: partial[b] = the sum of block b (the blocks do
   not depend on the thread count, so neither does the result). */
#define TENSOR__SPLIT_BLOCK 65536
typedef struct { const char *in; int64_t n; tensor_dtype dt; double *partial; } tensor__split_task;
static void tensor__split_sum(int64_t begin, int64_t end, void *vt) {
    const tensor__split_task *t = (const tensor__split_task *)vt;
    for (int64_t b = begin; b < end; b++) {
        int64_t i0 = b * TENSOR__SPLIT_BLOCK, m = t->n - i0 < TENSOR__SPLIT_BLOCK ? t->n - i0 : TENSOR__SPLIT_BLOCK;
        tensor__acc a;
        tensor__acc_init(&a, t->dt);
        tensor__row_sum(&a, t->in + i0 * (int64_t)tensor__dtype_sizes[t->dt], (int64_t)tensor__dtype_sizes[t->dt], m);
        t->partial[b] = a.d;
    }
}

/* out: the kept shape = sum (or mean) of t over the reduced dims. */
static int tensor__reduce_sum(tensor__call *c, bool mean) {
    tensor__red r;
    tensor__red_from_call(&r, c);
    int64_t esz = (int64_t)tensor__dtype_sizes[r.in_dt];
    if (r.knumel == 0) return 0;
    if (r.nk >= 1 && r.nr >= 1 && r.kstride[0][r.nk - 1] == esz && r.rstride[0][r.nr - 1] != esz) {
        tensor__cols_ctx cc;
        cc.n = r.kshape[r.nk - 1];
        cc.in_stride = r.kstride[0][r.nk - 1];
        cc.out_stride = r.kstride[1][r.nk - 1];
        cc.mean = mean;
        r.nk--;
        r.knumel /= cc.n;
        if (!tensor__reference_kernels) {
            /* about one block of columns per thread, 64 at least, TENSOR__COL_BLOCK at most */
            int64_t threads = r.knumel * cc.n * r.rnumel >= 2 * TENSOR__GRAIN_ELEMENTWISE ? tensor_get_num_threads() : 1;
            int64_t cb = (cc.n + threads - 1) / threads;
            cb = cb < 64 ? 64 : cb > TENSOR__COL_BLOCK ? TENSOR__COL_BLOCK : (cb + 7) & ~(int64_t)7;
            tensor__cols_task t;
            t.r = &r;
            t.cc = &cc;
            t.cb = cb;
            t.nblk = (cc.n + cb - 1) / cb;
            t.items = r.knumel * t.nblk;
            t.n_parts = t.items < threads ? t.items : threads;
            size_t bytes = (size_t)(t.n_parts * cb) * 8; /* doubles or int64s */
            t.buf = (char *)tensor__cache_alloc(bytes);
            if (!t.buf) { tensor__fail(c->fn, "out of memory allocating %zu bytes", bytes); return 1; }
            tensor__parallel_for(t.n_parts, 1, tensor__cols_parts, &t);
            tensor__cache_free(t.buf);
            return 0;
        }
        size_t bytes = (size_t)(cc.n < TENSOR__COL_BLOCK ? cc.n : TENSOR__COL_BLOCK) * 8; /* doubles or int64s */
        cc.buf = TENSOR__MALLOC(bytes);
        if (!cc.buf) { tensor__fail(c->fn, "out of memory allocating %zu bytes", bytes); return 1; }
        tensor__red_run(&r, tensor__elem_sum_cols, &cc);
        TENSOR_FREE(cc.buf);
        return 0;
    }
    if (!tensor__reference_kernels && r.nr == 1 && r.rstride[0][0] == esz && (r.in_dt == TENSOR_F32 || r.in_dt == TENSOR_F64) &&
        r.knumel < 4 && r.rnumel >= 2 * TENSOR__SPLIT_BLOCK) {
        /* a few long contiguous sums (sum_all of a big tensor): each split over the pool */
        tensor__split_task t;
        int64_t nblk = (r.rnumel + TENSOR__SPLIT_BLOCK - 1) / TENSOR__SPLIT_BLOCK;
        t.partial = (double *)tensor__cache_alloc((size_t)nblk * sizeof(double));
        if (!t.partial) { tensor__fail(c->fn, "out of memory allocating %zu bytes", (size_t)nblk * sizeof(double)); return 1; }
        t.n = r.rnumel;
        t.dt = r.in_dt;
        for (int64_t e = 0; e < r.knumel; e++) {
            const char *in;
            char *out;
            tensor__red_at(&r, e, &in, &out);
            t.in = in;
            tensor__parallel_for(nblk, 1, tensor__split_sum, &t);
            tensor__acc a;
            tensor__acc_init(&a, r.in_dt);
            for (int64_t b = 0; b < nblk; b++) a.d += t.partial[b];
            if (mean) a.d /= (double)r.rnumel;
            tensor__red_store(&r, out, &a);
        }
        tensor__cache_free(t.partial);
        return 0;
    }
    tensor__red_run_parallel(&r, tensor__elem_sum, mean ? (void *)&r : NULL);
    return 0;
}

static void tensor__elem_prod(const tensor__red *r, const char *in, char *out, void *ctx) {
    (void)ctx;
    tensor__acc a;
    tensor__acc_init(&a, r->in_dt);
    a.d = 1;
    a.i = 1;
    tensor__red_walk(r, in, tensor__row_prod, &a);
    tensor__red_store(r, out, &a);
}

/* ctx: the call; max/min store the value, argmax/argmin its index. */
static void tensor__elem_ext(const tensor__red *r, const char *in, char *out, void *ctx) {
    tensor_op op = ((const tensor__call *)ctx)->op;
    tensor__acc a;
    tensor__acc_init(&a, r->in_dt);
    a.mode = (op == TENSOR_OP_max || op == TENSOR_OP_max_all || op == TENSOR_OP_argmax || op == TENSOR_OP_amax) ? 1 : -1;
    tensor__red_walk(r, in, tensor__row_ext, &a);
    if (op == TENSOR_OP_argmax || op == TENSOR_OP_argmin) { tensor__store_i64(out, TENSOR_I64, a.best); return; }
    tensor__red_store(r, out, &a);
}

/* var / std, two passes: the mean, then the squared deviations from it. Divided by
   N - correction, or by 0 where that is <= 0 (NaN or inf, as PyTorch gives). */
static void tensor__elem_var(const tensor__red *r, const char *in, char *out, void *ctx) {
    const tensor__call *c = (const tensor__call *)ctx;
    tensor__acc a;
    tensor__acc_init(&a, r->in_dt);
    tensor__red_walk(r, in, tensor__row_sum, &a);
    a.ref = a.d / (double)r->rnumel;
    a.d = 0;
    tensor__red_walk(r, in, tensor__row_sqdev, &a);
    double dof = (double)r->rnumel - (double)c->ip[1];
    a.d /= dof > 0 ? dof : 0;
    if (c->op == TENSOR_OP_std) a.d = sqrt(a.d);
    tensor__red_store(r, out, &a);
}

/* log(sum(exp(x - m))) + m with m the max; an infinite m is replaced by 0 so that all -inf gives
   -inf and a +inf gives +inf instead of NaN. No elements: -inf. */
static void tensor__elem_logsumexp(const tensor__red *r, const char *in, char *out, void *ctx) {
    (void)ctx;
    if (!tensor__reference_kernels && r->in_dt == TENSOR_F32 && r->nr == 1 && r->rstride[0][0] == 4) {
        float m;
        double v = tensor__row_maxsumexp_f32(NULL, (const float *)in, r->rnumel, &m);
        if (v == v) { *(float *)out = (float)((double)m + log(v)); return; } /* else a NaN or an infinity: the path below */
    }
    tensor__acc a;
    tensor__acc_init(&a, r->in_dt);
    a.mode = 1;
    tensor__red_walk(r, in, tensor__row_ext, &a);
    double m = a.found ? a.d : -INFINITY;
    if (isinf(m)) m = 0;
    a.ref = m;
    a.d = 0;
    tensor__red_walk(r, in, tensor__row_sumexp, &a);
    a.d = log(a.d) + m;
    tensor__red_store(r, out, &a);
}

static void tensor__elem_norm(const tensor__red *r, const char *in, char *out, void *ctx) {
    double p = ((const tensor__call *)ctx)->p[0];
    tensor__acc a;
    tensor__acc_init(&a, r->in_dt);
    a.p = p;
    a.mode = p == INFINITY ? TENSOR__NORM_INF : p == -INFINITY ? TENSOR__NORM_NEG_INF : p == 0 ? TENSOR__NORM_ZERO
           : p == 1 ? TENSOR__NORM_ONE : p == 2 ? TENSOR__NORM_TWO : TENSOR__NORM_P;
    tensor__red_walk(r, in, tensor__row_norm, &a);
    if (a.mode == TENSOR__NORM_TWO) a.d = sqrt(a.d);
    else if (a.mode == TENSOR__NORM_P) a.d = pow(a.d, 1.0 / p);
    tensor__red_store(r, out, &a);
}

static void tensor__elem_allany(const tensor__red *r, const char *in, char *out, void *ctx) {
    tensor__acc a;
    tensor__acc_init(&a, r->in_dt);
    a.mode = ((const tensor__call *)ctx)->op == TENSOR_OP_all;
    tensor__red_walk(r, in, tensor__row_allany, &a);
    *(uint8_t *)out = a.mode == 1 ? !a.done : a.done;
}

/* cumsum: r's single reduced dim is the scanned one; ctx its output byte stride. */
static void tensor__elem_cumsum(const tensor__red *r, const char *in, char *out, void *ctx) {
    int64_t os = *(const int64_t *)ctx, n = r->nr ? r->rshape[0] : r->rnumel, s = r->nr ? r->rstride[0][0] : 0;
    if (!tensor__is_float(r->in_dt)) {
        int64_t acc = 0;
        for (int64_t i = 0; i < n; i++) {
            acc = tensor__iadd(acc, tensor__load_i64(in + i * s, r->in_dt));
            *(int64_t *)(out + i * os) = acc;
        }
        return;
    }
    double acc = 0;
    tensor_dtype od = r->out_dt;
    if (od == TENSOR_F32) TENSOR__RED_LOOP(r->in_dt, in, s, n, acc += x; *(float *)(out + i * os) = (float)acc;);
    else TENSOR__RED_LOOP(r->in_dt, in, s, n, acc += x; tensor__store_f64(out + i * os, od, acc););
}

/* ---- kernels ---- */
static int tensor__reduce_run(tensor__call *c, tensor__elem_fn fn) {
    tensor__red r;
    tensor__red_from_call(&r, c);
    tensor__red_run_parallel(&r, fn, c);
    return 0;
}

/* out: t's shape without (or with size 1 at) the reduced dims */
static int tensor__cpu_sum(tensor__call *c) { return tensor__reduce_sum(c, false); }
static int tensor__cpu_sum_all(tensor__call *c) { return tensor__reduce_sum(c, false); }
static int tensor__cpu_sum_dims(tensor__call *c) { return tensor__reduce_sum(c, false); }
static int tensor__cpu_mean(tensor__call *c) { return tensor__reduce_sum(c, true); }
static int tensor__cpu_mean_all(tensor__call *c) { return tensor__reduce_sum(c, true); }
static int tensor__cpu_mean_dims(tensor__call *c) { return tensor__reduce_sum(c, true); }
static int tensor__cpu_prod(tensor__call *c) { return tensor__reduce_run(c, tensor__elem_prod); }
static int tensor__cpu_max(tensor__call *c) { return tensor__reduce_run(c, tensor__elem_ext); }
static int tensor__cpu_max_all(tensor__call *c) { return tensor__reduce_run(c, tensor__elem_ext); }
static int tensor__cpu_min(tensor__call *c) { return tensor__reduce_run(c, tensor__elem_ext); }
static int tensor__cpu_min_all(tensor__call *c) { return tensor__reduce_run(c, tensor__elem_ext); }
static int tensor__cpu_amax(tensor__call *c) { return tensor__reduce_run(c, tensor__elem_ext); }
static int tensor__cpu_amin(tensor__call *c) { return tensor__reduce_run(c, tensor__elem_ext); }
static int tensor__cpu_argmax(tensor__call *c) { return tensor__reduce_run(c, tensor__elem_ext); }
static int tensor__cpu_argmin(tensor__call *c) { return tensor__reduce_run(c, tensor__elem_ext); }
static int tensor__cpu_var(tensor__call *c) { return tensor__reduce_run(c, tensor__elem_var); }
static int tensor__cpu_std(tensor__call *c) { return tensor__reduce_run(c, tensor__elem_var); }
static int tensor__cpu_logsumexp(tensor__call *c) { return tensor__reduce_run(c, tensor__elem_logsumexp); }
static int tensor__cpu_norm(tensor__call *c) { return tensor__reduce_run(c, tensor__elem_norm); }
/* out: [] (bool) */
static int tensor__cpu_all(tensor__call *c) { return tensor__reduce_run(c, tensor__elem_allany); }
static int tensor__cpu_any(tensor__call *c) { return tensor__reduce_run(c, tensor__elem_allany); }

/* out: t's shape, out[..., i, ...] = sum of t[..., :i+1, ...] along the dim */
static int tensor__cpu_cumsum(tensor__call *c) {
    const tensor *t = c->in[0];
    if (tensor__numel_of(t->ndim, t->shape) == 0) return 0; /* [2^40, 0]: no scan to walk, whatever the other dims */
    unsigned mask = c->n_dims ? 1u << c->dims[0] : 0;
    int64_t esz = (int64_t)tensor__dtype_sizes[c->out->dtype], ostride[TENSOR_MAX_DIMS];
    for (int d = 0; d < t->ndim; d++) ostride[d] = c->out->strides[d] * esz;
    int64_t os = c->n_dims ? ostride[c->dims[0]] : 0;
    tensor__red r;
    tensor__red_init(&r, t, mask, ostride, c->out);
    tensor__red_run(&r, tensor__elem_cumsum, &os);
    return 0;
}

/* ---- front-ends ---- */

/* The output dtype of a reduction of t, or false + an error where t's dtype is refused. */
static bool tensor__reduce_dtype(tensor_op op, const tensor *t, tensor_dtype *out) {
    const char *fn = tensor__ops[op].fn;
    switch (op) {
    case TENSOR_OP_sum: case TENSOR_OP_sum_all: case TENSOR_OP_sum_dims:
    case TENSOR_OP_prod: case TENSOR_OP_cumsum:
        *out = tensor__is_float(t->dtype) ? t->dtype : TENSOR_I64; /* ints and bool sum to int64 */
        return true;
    case TENSOR_OP_mean: case TENSOR_OP_mean_all: case TENSOR_OP_mean_dims:
    case TENSOR_OP_var: case TENSOR_OP_std: case TENSOR_OP_logsumexp: case TENSOR_OP_norm:
        if (!tensor__is_float(t->dtype)) {
            tensor__fail(fn, "input dtype must be floating point, got %s (convert with tensor_to_dtype first)", tensor__dtype_names[t->dtype]);
            return false;
        }
        *out = t->dtype;
        return true;
    case TENSOR_OP_argmax: case TENSOR_OP_argmin: *out = TENSOR_I64; return true;
    case TENSOR_OP_all: case TENSOR_OP_any: *out = TENSOR_BOOL; return true;
    default: *out = t->dtype; return true; /* max, min */
    }
}

/* Reduces t over dims[0..n) (n < 0: every dim) for op, with keepdim, parameters p (norm) and
   correction (var, std). Validates everything, then allocates the output and dispatches. */
static tensor *tensor__reduce(tensor_op op, tensor *t, int n, const int *dims, bool keepdim, double p, int64_t correction) {
    const char *fn = tensor__ops[op].fn;
    TENSOR__CHECK_ARG(fn, t);
    tensor_dtype out_dt;
    if (!tensor__reduce_dtype(op, t, &out_dt)) return NULL;
    if (n > 0 && !dims) return tensor__null_arg(fn, "dims");
    unsigned mask = 0, seen = 0;
    if (n < 0) mask = (1u << t->ndim) - 1;
    for (int i = 0; i < n; i++) {
        int d = tensor__wrap_dim(fn, dims[i], t->ndim > 0 ? t->ndim : 1); /* a 0-dim tensor takes dim 0 and -1 */
        if (d < 0) return NULL;
        if (seen >> d & 1) return tensor__fail(fn, "dim %d appears more than once in the list of dims", d);
        seen |= 1u << d;
    }
    if (t->ndim > 0) mask |= seen;

    tensor__call c;
    tensor__call_init(&c, op);
    c.n_in = 1;
    c.in[0] = t;
    c.ip[0] = keepdim;
    c.ip[1] = correction;
    c.p[0] = p;
    int on = 0;
    int64_t oshape[TENSOR_MAX_DIMS];
    for (int d = 0; d < t->ndim; d++) {
        if (mask >> d & 1) {
            c.dims[c.n_dims++] = d;
            if (keepdim) oshape[on++] = 1;
        } else oshape[on++] = t->shape[d];
    }

    /* ops with no identity refuse to reduce over nothing */
    bool no_identity = op == TENSOR_OP_max || op == TENSOR_OP_max_all || op == TENSOR_OP_min || op == TENSOR_OP_min_all || op == TENSOR_OP_amax || op == TENSOR_OP_amin ||
                       op == TENSOR_OP_argmax || op == TENSOR_OP_argmin || (op == TENSOR_OP_norm && (p == INFINITY || p < 0));
    if (no_identity) {
        const char *what = op == TENSOR_OP_max || op == TENSOR_OP_max_all || op == TENSOR_OP_amax ? "the maximum" : op == TENSOR_OP_min || op == TENSOR_OP_min_all || op == TENSOR_OP_amin ? "the minimum"
                         : op == TENSOR_OP_argmax ? "the argmax" : op == TENSOR_OP_argmin ? "the argmin" : "the norm";
        char norm_what[48];
        if (op == TENSOR_OP_norm) { snprintf(norm_what, sizeof norm_what, "the %g norm", p); what = norm_what; }
        for (int i = 0; i < c.n_dims; i++)
            if (t->shape[c.dims[i]] == 0) {
                if (n < 0) return tensor__fail(fn, "cannot compute %s of an empty tensor (shape %s): it has no identity", what, tensor__shape_of(t));
                return tensor__fail(fn, "cannot compute %s on an empty dim (dim %d of shape %s)", what, c.dims[i], tensor__shape_of(t));
            }
    }
    c.out = tensor__new(fn, on, oshape, out_dt, t->storage->device);
    return c.out ? tensor__dispatch(&c) : NULL;
}

TENSOR_API tensor *tensor_sum(tensor *t, int dim, bool keepdim) { return tensor__reduce(TENSOR_OP_sum, t, 1, &dim, keepdim, 0, 0); }
TENSOR_API tensor *tensor_sum_all(tensor *t) { return tensor__reduce(TENSOR_OP_sum_all, t, -1, NULL, false, 0, 0); }
TENSOR_API tensor *tensor_mean(tensor *t, int dim, bool keepdim) { return tensor__reduce(TENSOR_OP_mean, t, 1, &dim, keepdim, 0, 0); }
TENSOR_API tensor *tensor_mean_all(tensor *t) { return tensor__reduce(TENSOR_OP_mean_all, t, -1, NULL, false, 0, 0); }
TENSOR_API tensor *tensor_prod(tensor *t, int dim, bool keepdim) { return tensor__reduce(TENSOR_OP_prod, t, 1, &dim, keepdim, 0, 0); }
TENSOR_API tensor *tensor_max(tensor *t, int dim, bool keepdim) { return tensor__reduce(TENSOR_OP_max, t, 1, &dim, keepdim, 0, 0); }
TENSOR_API tensor *tensor_max_all(tensor *t) { return tensor__reduce(TENSOR_OP_max_all, t, -1, NULL, false, 0, 0); }
TENSOR_API tensor *tensor_min(tensor *t, int dim, bool keepdim) { return tensor__reduce(TENSOR_OP_min, t, 1, &dim, keepdim, 0, 0); }
TENSOR_API tensor *tensor_min_all(tensor *t) { return tensor__reduce(TENSOR_OP_min_all, t, -1, NULL, false, 0, 0); }
TENSOR_API tensor *tensor_argmax(tensor *t, int dim, bool keepdim) { return tensor__reduce(TENSOR_OP_argmax, t, 1, &dim, keepdim, 0, 0); }
TENSOR_API tensor *tensor_argmin(tensor *t, int dim, bool keepdim) { return tensor__reduce(TENSOR_OP_argmin, t, 1, &dim, keepdim, 0, 0); }
TENSOR_API tensor *tensor_var(tensor *t, int dim, int64_t correction, bool keepdim) { return tensor__reduce(TENSOR_OP_var, t, 1, &dim, keepdim, 0, correction); }
TENSOR_API tensor *tensor_std(tensor *t, int dim, int64_t correction, bool keepdim) { return tensor__reduce(TENSOR_OP_std, t, 1, &dim, keepdim, 0, correction); }
/* Integer and bool inputs give an f32 result (PyTorch's default float dtype), as in PyTorch. */
TENSOR_API tensor *tensor_logsumexp(tensor *t, int dim, bool keepdim) {
    if (!t || tensor__is_float(t->dtype)) return tensor__reduce(TENSOR_OP_logsumexp, t, 1, &dim, keepdim, 0, 0);
    tensor *f = tensor_to_dtype(t, TENSOR_F32);
    tensor *r = f ? tensor__reduce(TENSOR_OP_logsumexp, f, 1, &dim, keepdim, 0, 0) : NULL;
    tensor_free(f);
    return r;
}
TENSOR_API tensor *tensor_all(tensor *t) { return tensor__reduce(TENSOR_OP_all, t, -1, NULL, false, 0, 0); }
TENSOR_API tensor *tensor_any(tensor *t) { return tensor__reduce(TENSOR_OP_any, t, -1, NULL, false, 0, 0); }

/* n = 0 reduces every dim, as torch.sum(t, dim=[]) does. */
TENSOR_API tensor *tensor_sum_dims(tensor *t, int n, const int *dims, bool keepdim) {
    if (t && n < 0) return tensor__fail("tensor_sum_dims", "the number of dims must be >= 0, got %d", n);
    return tensor__reduce(TENSOR_OP_sum_dims, t, n == 0 ? -1 : n, dims, keepdim, 0, 0);
}
TENSOR_API tensor *tensor_mean_dims(tensor *t, int n, const int *dims, bool keepdim) {
    if (t && n < 0) return tensor__fail("tensor_mean_dims", "the number of dims must be >= 0, got %d", n);
    return tensor__reduce(TENSOR_OP_mean_dims, t, n == 0 ? -1 : n, dims, keepdim, 0, 0);
}

/* (sum |x|^p)^(1/p) for any p but NaN: p = 0 is the count of non-zeros, INFINITY max |x|,
   -INFINITY min |x|; p < 0 gives 0 where an element is 0, and refuses an empty dim, as PyTorch. */
TENSOR_API tensor *tensor_norm(tensor *t, double p, int dim, bool keepdim) {
    if (t && p != p) return tensor__fail("tensor_norm", "order p must be a number, got %g", p);
    return tensor__reduce(TENSOR_OP_norm, t, 1, &dim, keepdim, p, 0);
}

TENSOR_API tensor *tensor_cumsum(tensor *t, int dim) {
    const char *fn = "tensor_cumsum";
    TENSOR__CHECK_ARG(fn, t);
    tensor_dtype out_dt;
    if (!tensor__reduce_dtype(TENSOR_OP_cumsum, t, &out_dt)) return NULL;
    int d = tensor__wrap_dim(fn, dim, t->ndim > 0 ? t->ndim : 1);
    if (d < 0) return NULL;
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_cumsum);
    c.n_in = 1;
    c.in[0] = t;
    if (t->ndim > 0) { c.dims[0] = d; c.n_dims = 1; }
    c.out = tensor__new_like(fn, t, out_dt);
    return c.out ? tensor__dispatch(&c) : NULL;
}
