// >>norm ---------------------------------------------------------------------------------------
/* ---- layer_norm, rms_norm (over the last dim) ---- */

/* An optional norm parameter (weight, bias) as a contiguous array of dtype dt: the tensor's own
   data when it already is one, else a converted copy in *own (the caller frees it). NULL for an
   absent parameter; *failed on out-of-memory. */
static const void *tensor__param_data(const char *fn, const tensor *p, tensor_dtype dt, tensor **own, bool *failed) {
    *own = NULL;
    if (!p) return NULL;
    if (p->dtype == dt && (p->strides[0] == 1 || p->shape[0] <= 1)) return tensor__data(p);
    *own = tensor__contiguous_copy(fn, p, dt);
    if (!*own) { *failed = true; return NULL; }
    return tensor__data(*own);
}

typedef struct { const tensor *x; tensor *y; const float *w, *b; double eps; int64_t n; bool center; } tensor__norm_task;

/* Rows [begin, end) of an f32 layer_norm (center) or rms_norm with contiguous rows: the mean (of x
   or of x^2) and the variance accumulate in f32 lanes per block and in double across blocks. */
static void tensor__norm_rows_f32(int64_t begin, int64_t end, void *vt) {
    const tensor__norm_task *t = (const tensor__norm_task *)vt;
    int last = t->x->ndim - 1;
    tensor__rows r;
    tensor__rows_init(&r, t->x, t->y, last);
    tensor__rows_seek(&r, begin);
    int64_t n = t->n;
    for (int64_t q = begin; q < end; q++, tensor__rows_next(&r)) {
        const float *x = (const float *)t->x->storage->data + r.off[0];
        float *y = (float *)t->y->storage->data + r.off[1];
        double mean = t->center ? tensor__row_sum_f32(x, n) / (double)n : 0;
        double var = tensor__row_sqdev_f32(x, n, (float)mean) / (double)n;
        tensor__row_norm_f32(y, x, n, mean, (float)(1.0 / sqrt(var + t->eps)), t->w, t->b);
    }
}

/* The f32 fast path of both norms; 0, or 1 after an error. */
static int tensor__norm_fast_f32(tensor__call *c, bool center) {
    tensor *x = c->in[0], *own_w, *own_b;
    bool failed = false;
    tensor__norm_task t;
    t.w = (const float *)tensor__param_data(c->fn, c->in[1], TENSOR_F32, &own_w, &failed);
    t.b = center ? (const float *)tensor__param_data(c->fn, c->in[2], TENSOR_F32, &own_b, &failed) : NULL;
    if (!center) own_b = NULL;
    if (!failed) {
        t.x = x;
        t.y = c->out;
        t.eps = c->p[0];
        t.n = x->shape[x->ndim - 1];
        t.center = center;
        tensor__parallel_for(tensor__numel_of(x->ndim, x->shape) / t.n, tensor__grain(t.n), tensor__norm_rows_f32, &t);
    }
    tensor_free(own_w);
    tensor_free(own_b);
    return failed;
}

static bool tensor__norm_fast_ok(const tensor__call *c) {
    const tensor *x = c->in[0];
    return !tensor__reference_kernels && x->dtype == TENSOR_F32 && (x->strides[x->ndim - 1] == 1 || x->shape[x->ndim - 1] == 1);
}

/* out: [..., C] = (x - mean) / sqrt(var + eps) * weight + bias, biased variance, in double. */
static int tensor__cpu_layer_norm(tensor__call *c) {
    tensor *x = c->in[0], *y = c->out;
    int last = x->ndim - 1;
    int64_t n = x->shape[last];
    if (tensor__numel_of(x->ndim, x->shape) == 0) return 0;
    if (tensor__norm_fast_ok(c)) return tensor__norm_fast_f32(c, true);
    double *row = (double *)tensor__scratch(c->fn, (size_t)n * sizeof(double));
    double *w = tensor__param_row(c->fn, c->in[1], n, 1.0), *b = tensor__param_row(c->fn, c->in[2], n, 0.0);
    if (!row || !w || !b) { tensor__free_aligned(row); tensor__free_aligned(w); tensor__free_aligned(b); return 1; }
    tensor__rows r;
    tensor__rows_init(&r, x, y, last);
    for (int64_t q = 0; q < r.count; q++, tensor__rows_next(&r)) {
        tensor__load_row(row, x, r.off[0], x->strides[last], n);
        double mean = 0, var = 0;
        for (int64_t i = 0; i < n; i++) mean += row[i];
        mean /= (double)n;
        for (int64_t i = 0; i < n; i++) var += (row[i] - mean) * (row[i] - mean);
        var /= (double)n;
        double rstd = 1.0 / sqrt(var + c->p[0]);
        for (int64_t i = 0; i < n; i++) row[i] = (row[i] - mean) * rstd * w[i] + b[i];
        tensor__store_row(y, r.off[1], y->strides[last], row, n);
    }
    tensor__free_aligned(row);
    tensor__free_aligned(w);
    tensor__free_aligned(b);
    return 0;
}

/* out: [..., C] = x / sqrt(mean(x^2) + eps) * weight, in double. */
static int tensor__cpu_rms_norm(tensor__call *c) {
    tensor *x = c->in[0], *y = c->out;
    int last = x->ndim - 1;
    int64_t n = x->shape[last];
    if (tensor__numel_of(x->ndim, x->shape) == 0) return 0;
    if (tensor__norm_fast_ok(c)) return tensor__norm_fast_f32(c, false);
    double *row = (double *)tensor__scratch(c->fn, (size_t)n * sizeof(double));
    double *w = tensor__param_row(c->fn, c->in[1], n, 1.0);
    if (!row || !w) { tensor__free_aligned(row); tensor__free_aligned(w); return 1; }
    tensor__rows r;
    tensor__rows_init(&r, x, y, last);
    for (int64_t q = 0; q < r.count; q++, tensor__rows_next(&r)) {
        tensor__load_row(row, x, r.off[0], x->strides[last], n);
        double ms = 0;
        for (int64_t i = 0; i < n; i++) ms += row[i] * row[i];
        double rr = 1.0 / sqrt(ms / (double)n + c->p[0]);
        for (int64_t i = 0; i < n; i++) row[i] = row[i] * rr * w[i];
        tensor__store_row(y, r.off[1], y->strides[last], row, n);
    }
    tensor__free_aligned(row);
    tensor__free_aligned(w);
    return 0;
}

/* Fused backward of layer_norm (center) and rms_norm over the last dim, for f32 and f64 when the
   backward pass is not recorded: per row, with xhat = (x - mean) rstd and gh = g w,
   gx = rstd (gh - mean(gh) - xhat mean(gh xhat)) (rms_norm: mean 0, no mean(gh) term), and
   gw = sum over rows of g xhat, gb = sum over rows of g. Rows are dealt out in fixed groups whose
   gw/gb partial sums (double) add up in group order, so the result does not depend on the thread
   count. */
#define TENSOR__NORM_GROUP 64 /* rows per group of gw/gb partial sums */
static void tensor__norm_bwd_row_f64(double *gx, const double *x, const double *g, const double *w, int64_t n, double eps, bool center, double *gw, double *gb) {
    double mean = 0, var = 0, s1 = 0, s2 = 0;
    if (center) { for (int64_t i = 0; i < n; i++) mean += x[i]; mean /= (double)n; }
    for (int64_t i = 0; i < n; i++) var += (x[i] - mean) * (x[i] - mean);
    double rstd = 1.0 / sqrt(var / (double)n + eps);
    for (int64_t i = 0; i < n; i++) {
        double xh = (x[i] - mean) * rstd, gh = w ? g[i] * w[i] : g[i];
        s1 += gh;
        s2 += gh * xh;
        if (gw) gw[i] += g[i] * xh;
        if (gb) gb[i] += g[i];
    }
    double m1 = center ? s1 / (double)n : 0, m2 = s2 / (double)n;
    for (int64_t i = 0; i < n; i++) {
        double xh = (x[i] - mean) * rstd, gh = w ? g[i] * w[i] : g[i];
        gx[i] = rstd * (gh - m1 - xh * m2);
    }
}

typedef struct { const char *x, *g, *w; char *gx; double *gw, *gb; int64_t n, rows; double eps; bool center, f32; } tensor__norm_bwd_task;
static void tensor__norm_bwd_groups(int64_t begin, int64_t end, void *vt) {
    const tensor__norm_bwd_task *t = (const tensor__norm_bwd_task *)vt;
    int64_t n = t->n;
    for (int64_t grp = begin; grp < end; grp++) {
        double *gw = t->gw ? t->gw + grp * n : NULL, *gb = t->gb ? t->gb + grp * n : NULL;
        for (int64_t j = 0; j < n; j++) { if (gw) gw[j] = 0; if (gb) gb[j] = 0; }
        int64_t q1 = (grp + 1) * TENSOR__NORM_GROUP < t->rows ? (grp + 1) * TENSOR__NORM_GROUP : t->rows;
        for (int64_t q = grp * TENSOR__NORM_GROUP; q < q1; q++) {
            if (!t->f32) {
                tensor__norm_bwd_row_f64((double *)t->gx + q * n, (const double *)t->x + q * n, (const double *)t->g + q * n,
                                         (const double *)t->w, n, t->eps, t->center, gw, gb);
                continue;
            }
            const float *x = (const float *)t->x + q * n;
            double mean = t->center ? tensor__row_sum_f32(x, n) / (double)n : 0;
            double var = tensor__row_sqdev_f32(x, n, (float)mean) / (double)n;
            tensor__row_norm_bwd_f32((float *)t->gx + q * n, x, (const float *)t->g + q * n, (const float *)t->w, n, mean,
                                     (float)(1.0 / sqrt(var + t->eps)), t->center, gw, gb);
        }
    }
}

/* Sets *gx, *gw, *gb (each only where its pointer is not NULL; gb only for layer_norm). Returns 1
   when done, 0 when this path does not take the case (reference kernels, or a dtype other than
   f32/f64), -1 on error. */
static int tensor__norm_backward(const char *fn, bool center, tensor *x, tensor *w, tensor *g, double eps, tensor **gx, tensor **gw, tensor **gb) {
    if (tensor__reference_kernels || (x->dtype != TENSOR_F32 && x->dtype != TENSOR_F64) || x->storage->device != TENSOR_CPU) return 0;
    tensor_dtype dt = x->dtype;
    int64_t n = x->shape[x->ndim - 1], rows = n ? tensor__numel_of(x->ndim, x->shape) / n : 0;
    int64_t groups = (rows + TENSOR__NORM_GROUP - 1) / TENSOR__NORM_GROUP;
    bool failed = false;
    tensor *own_w = NULL;
    tensor *xc = tensor__contiguous(x) ? x : tensor__contiguous_copy(fn, x, dt);
    tensor *gc = tensor__contiguous(g) && g->dtype == dt ? g : tensor__contiguous_copy(fn, g, dt);
    const void *wd = tensor__param_data(fn, w, dt, &own_w, &failed);
    tensor *rx = tensor__new_like(fn, x, dt);
    tensor *rw = gw ? tensor__new(fn, 1, &n, dt, TENSOR_CPU) : NULL, *rb = gb ? tensor__new(fn, 1, &n, dt, TENSOR_CPU) : NULL;
    size_t part_bytes = (size_t)(groups * n) * sizeof(double);
    double *pw = gw ? (double *)tensor__cache_alloc(part_bytes) : NULL, *pb = gb ? (double *)tensor__cache_alloc(part_bytes) : NULL;
    if ((gw && !pw) || (gb && !pb)) tensor__fail(fn, "out of memory allocating %zu bytes", part_bytes);
    if (!xc || !gc || failed || !rx || (gw && (!rw || !pw)) || (gb && (!rb || !pb))) failed = true;
    else if (rows > 0 && n > 0) {
        tensor__norm_bwd_task t;
        t.x = tensor__data(xc);
        t.g = tensor__data(gc);
        t.w = (const char *)wd;
        t.gx = tensor__data(rx);
        t.gw = pw;
        t.gb = pb;
        t.n = n;
        t.rows = rows;
        t.eps = eps;
        t.center = center;
        t.f32 = dt == TENSOR_F32;
        tensor__parallel_for(groups, tensor__grain(n) / TENSOR__NORM_GROUP + 1, tensor__norm_bwd_groups, &t);
    }
    if (!failed) { /* the groups' partial sums, in group order */
        for (int k = 0; k < 2; k++) {
            tensor *dst = k ? rb : rw;
            double *part = k ? pb : pw;
            if (!dst) continue;
            for (int64_t grp = 1; grp < groups; grp++)
                for (int64_t j = 0; j < n; j++) part[j] += part[grp * n + j];
            for (int64_t j = 0; j < n; j++) {
                double s = groups ? part[j] : 0;
                if (dt == TENSOR_F32) ((float *)tensor__data(dst))[j] = (float)s;
                else ((double *)tensor__data(dst))[j] = s;
            }
        }
    }
    if (xc != x) tensor_free(xc);
    if (gc != g) tensor_free(gc);
    tensor_free(own_w);
    tensor__cache_free(pw);
    tensor__cache_free(pb);
    if (failed) { tensor_free(rx); tensor_free(rw); tensor_free(rb); return -1; }
    if (gx) *gx = rx; else tensor_free(rx);
    if (gw) *gw = rw;
    if (gb) *gb = rb;
    return 1;
}

/* Checks an optional norm parameter: 1-D of the normalized size, floating. */
static bool tensor__check_norm_param(const char *fn, const char *what, const tensor *p, const tensor *x) {
    if (!p) return true;
    int64_t n = x->shape[x->ndim - 1];
    if (p->ndim != 1 || p->shape[0] != n) {
        tensor__fail(fn, "%s of shape %s does not match the normalized shape [%lld] (the last dim of input %s)", what, tensor__shape_of(p), (long long)n, tensor__shape_of(x));
        return false;
    }
    if (!tensor__is_float(p->dtype)) { tensor__fail(fn, "%s must be a floating tensor, got %s", what, tensor__dtype_names[p->dtype]); return false; }
    return true;
}

static tensor *tensor__norm_front(tensor_op op, tensor *x, tensor *weight, tensor *bias, double eps) {
    const char *fn = tensor__ops[op].fn;
    TENSOR__CHECK_ARG(fn, x);
    tensor *ins[3] = {x, weight, bias};
    if (!tensor__same_device(fn, 3, ins)) return NULL;
    if (x->ndim == 0) return tensor__fail(fn, "input must have at least 1 dim, got a 0-dim tensor");
    if (!tensor__is_float(x->dtype)) return tensor__fail(fn, "expected a floating input, got %s", tensor__dtype_names[x->dtype]);
    if (!tensor__check_norm_param(fn, "weight", weight, x) || !tensor__check_norm_param(fn, "bias", bias, x)) return NULL;
    tensor__call c;
    tensor__call_init(&c, op);
    c.n_in = 3;
    c.in[0] = x;
    c.in[1] = weight;
    c.in[2] = bias;
    c.p[0] = eps;
    c.out = tensor__new_like(fn, x, x->dtype);
    return c.out ? tensor__dispatch(&c) : NULL;
}
TENSOR_API tensor *tensor_layer_norm(tensor *x, tensor *weight, tensor *bias, double eps) { return tensor__norm_front(TENSOR_OP_layer_norm, x, weight, bias, eps); }
TENSOR_API tensor *tensor_rms_norm(tensor *x, tensor *weight, double eps) { return tensor__norm_front(TENSOR_OP_rms_norm, x, weight, NULL, eps); }

/* ---- batch_norm, instance_norm, group_norm (composites: the statistics are reductions, the rest
   elementwise, so autograd and every device come from those ops) ---- */

/* An optional per-channel tensor p [C] checked (1-D of size C, floating) and viewed as [C, 1, ...]
   (nd - 2 trailing ones) to broadcast against x [N, C, *]; *out NULL when p is. */
static bool tensor__channel_param(const char *fn, const char *what, tensor *p, const tensor *x, tensor__tmps *s, tensor **out) {
    *out = NULL;
    if (!p) return true;
    int64_t C = x->shape[1];
    if (p->ndim != 1 || p->shape[0] != C) {
        tensor__fail(fn, "%s of shape %s must be 1-D with the channel count %lld of input %s", what, tensor__shape_of(p), (long long)C, tensor__shape_of(x));
        return false;
    }
    if (!tensor__is_float(p->dtype)) { tensor__fail(fn, "%s must be a floating tensor, got %s", what, tensor__dtype_names[p->dtype]); return false; }
    int64_t shape[TENSOR_MAX_DIMS];
    shape[0] = C;
    for (int i = 1; i < x->ndim - 1; i++) shape[i] = 1;
    *out = tensor__tmp(s, tensor_reshape(p, x->ndim - 1, shape));
    return *out != NULL;
}

/* (x - mean) * invstd * w + b, mean and invstd broadcast against x, w and b NULL or [C, 1, ...]. */
static tensor *tensor__norm_affine(tensor__tmps *s, tensor *x, tensor *mean, tensor *invstd, tensor *w, tensor *b) {
    tensor *y = tensor__tmp(s, tensor_mul(tensor__tmp(s, tensor_sub(x, mean)), invstd));
    if (w) y = tensor__tmp(s, tensor_mul(y, w));
    if (b) y = tensor__tmp(s, tensor_add(y, b));
    return y;
}

/* The common checks of batch_norm and instance_norm; false after an error. */
static bool tensor__bn_check(const char *fn, tensor *x, int min_nd, tensor *rm, tensor *rv, tensor *w, tensor *b, bool use_input_stats) {
    tensor *ins[5] = {x, rm, rv, w, b};
    if (!tensor__same_device(fn, 5, ins)) return false;
    if (x->ndim < min_nd) { tensor__fail(fn, "input must have at least %d dims [N, C, ...], got shape %s", min_nd, tensor__shape_of(x)); return false; }
    if (!tensor__is_float(x->dtype)) { tensor__fail(fn, "expected a floating input, got %s", tensor__dtype_names[x->dtype]); return false; }
    if (!use_input_stats && (!rm || !rv)) { tensor__fail(fn, "running_mean and running_var must be given when the input statistics are not used (evaluation)"); return false; }
    if ((rm == NULL) != (rv == NULL)) { tensor__fail(fn, "running_mean and running_var must be given together"); return false; }
    const char *names[4] = {"running_mean", "running_var", "weight", "bias"};
    for (int i = 0; i < 4; i++) {
        tensor *p = ins[i + 1];
        if (p && (p->ndim != 1 || p->shape[0] != x->shape[1])) {
            tensor__fail(fn, "%s of shape %s must be 1-D with the channel count %lld of input %s", names[i], tensor__shape_of(p), (long long)x->shape[1], tensor__shape_of(x));
            return false;
        }
        if (p && !tensor__is_float(p->dtype)) { tensor__fail(fn, "%s must be a floating tensor, got %s", names[i], tensor__dtype_names[p->dtype]); return false; }
    }
    return true;
}

/* running = (1 - momentum) running + momentum stat, stat [C] (or broadcastable), outside the graph. */
static bool tensor__running_update(tensor *running, tensor *stat, double momentum) {
    bool was = tensor_set_grad_enabled(false);
    tensor *a = tensor_mul_scalar(running, 1 - momentum);
    tensor *st = stat ? tensor_to_dtype(stat, running->dtype) : NULL;
    tensor *bb = st ? tensor_mul_scalar(st, momentum) : NULL;
    tensor *n = a && bb ? tensor_add(a, bb) : NULL;
    tensor *r = n ? tensor_copy_(running, n) : NULL;
    tensor_free(a); tensor_free(st); tensor_free(bb); tensor_free(n);
    tensor_set_grad_enabled(was);
    return r != NULL;
}

/* The per-channel mean of x [N, C, *] as [C, 1, ...] (broadcasts against x): the mean over * of
   x seen as [N, C, L], then over N (equal counts, so the mean of the means), two reductions
   along contiguous rows rather than one over scattered dims. */
static tensor *tensor__bn_mean(tensor__tmps *s, tensor *x) {
    if (!x) return NULL;
    int64_t ncl[3] = {x->shape[0], x->shape[1], tensor__numel_of(x->ndim - 2, x->shape + 2)}, shape[TENSOR_MAX_DIMS];
    tensor *m = tensor__tmp(s, tensor_mean(tensor__tmp(s, tensor_reshape(x, 3, ncl)), 2, false));
    m = tensor__tmp(s, tensor_mean(m, 0, false));
    shape[0] = ncl[1];
    for (int i = 1; i < x->ndim - 1; i++) shape[i] = 1;
    return tensor__tmp(s, tensor_reshape(m, x->ndim - 1, shape));
}

/* ---- fast paths of the layer composites (batch_norm here; the pools of >>pool, interpolate and
   conv_transpose of >>resample) ----
   A composite above is the reference: it is what runs under tensor_set_reference_kernels, on a
   device, and wherever the fast path does not apply. The fast paths are plane kernels on the
   CPU, threaded over channels or N * C planes, for f32 and f64. Under autograd, batch_norm,
   conv_transpose2d and interpolate record a node of their own op (tensor__layer_record), whose
   derivative (tensor__derivative_layer in >>autograd) runs a fused backward kernel (linalg_pinv
   of >>linalg-norm records its node the same way, for a derivative of its own); the max pools
   return gather(x, indices), gather's node carrying the gradient. The registry keeps them
   COMPOSITE: a device, and the reference mode, run the composite. tensor__layers_composite: the
   bench's switch to the composites (its reference), leaving the other kernels as they are. */
static bool tensor__layers_composite;
static bool tensor__layer_fast(const tensor *x, bool need_no_grad) {
    if (tensor__reference_kernels || tensor__layers_composite || x->storage->device != TENSOR_CPU) return false;
    if (x->dtype != TENSOR_F32 && x->dtype != TENSOR_F64) return false;
    return !need_no_grad || !tensor__grad_on() || !x->requires_grad;
}
/* true when an optional parameter stops the fast path (present, and of another dtype or device). */
static bool tensor__layer_param_blocks(const tensor *p, const tensor *x) {
    return p && (p->dtype != x->dtype || p->storage->device != TENSOR_CPU);
}
/* Records y's node for op (inputs in[0, n_in), NULL where absent; ip, p its parameters; extra a
   tensor the derivative needs, owned by this call) when an input requires grad. Returns y, or
   NULL after freeing it when the node could not be recorded. */
static tensor *tensor__layer_record(tensor_op op, tensor *y, int n_in, tensor *const *in, const int64_t *ip, int nip, const double *p, int np, tensor *extra) {
    if (!y) { tensor_free(extra); return NULL; }
    tensor__call c;
    tensor__call_init(&c, op);
    c.n_in = n_in;
    for (int i = 0; i < n_in; i++) c.in[i] = in[i];
    for (int i = 0; i < nip; i++) c.ip[i] = ip[i];
    for (int i = 0; i < np; i++) c.p[i] = p[i];
    c.out = y;
    c.out2 = extra;
    bool ok = tensor__autograd_record(&c);
    tensor_free(extra);
    if (!ok) { tensor_free(y); return NULL; }
    return y;
}

/* batch_norm's fused kernel over x [N, C, L] (contiguous): per channel, the statistics in one pass
   over its N rows (training: sums of x - K and (x - K)^2 in double, K the channel's first value,
   so the variance does not cancel: a row's sums, then the rows' sums), then y = x scale + shift
   with scale = invstd w, shift = b - mean scale. Channels split over the threads. f64: the
   loops below (eight partial sums per row); f32: tensor__bn_channel_f32 with the SIMD rows. */
typedef struct {
    const char *x;
    char *y;
    const char *w, *b;   /* [C] of x's dtype, or NULL */
    double *mean, *var;  /* [C]: training: out (var biased); else in (the running statistics) */
    int64_t N, C, L;
    double eps;
    bool f64, training;
} tensor__bn_job;

#define TENSOR__BN_CHANNEL(T)                                                                            \
    {                                                                                                    \
        const T *xs = (const T *)(const void *)j->x;                                                     \
        T *ys = (T *)(void *)j->y;                                                                       \
        int64_t L = j->L, CL = j->C * L;                                                                 \
        double mean, var;                                                                                \
        if (j->training) {                                                                               \
            double K = (double)xs[c * L], s1 = 0, s2 = 0;                                                \
            for (int64_t n = 0; n < j->N; n++) {                                                         \
                const T *r = xs + n * CL + c * L;                                                        \
                double a[8] = {0, 0, 0, 0, 0, 0, 0, 0}, q[8] = {0, 0, 0, 0, 0, 0, 0, 0};                 \
                int64_t i = 0;                                                                           \
                for (; i + 8 <= L; i += 8)                                                               \
                    for (int u = 0; u < 8; u++) {                                                        \
                        double d = (double)r[i + u] - K;                                                 \
                        a[u] += d;                                                                       \
                        q[u] += d * d;                                                                   \
                    }                                                                                    \
                for (; i < L; i++) {                                                                     \
                    double d = (double)r[i] - K;                                                         \
                    a[0] += d;                                                                           \
                    q[0] += d * d;                                                                       \
                }                                                                                        \
                s1 += ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7]));                 \
                s2 += ((q[0] + q[1]) + (q[2] + q[3])) + ((q[4] + q[5]) + (q[6] + q[7]));                 \
            }                                                                                            \
            double cnt = (double)(j->N * L), dm = s1 / cnt;                                              \
            mean = K + dm;                                                                               \
            var = s2 / cnt - dm * dm;                                                                    \
            if (var < 0) var = 0;                                                                        \
            j->mean[c] = mean;                                                                           \
            j->var[c] = var;                                                                             \
        } else {                                                                                         \
            mean = j->mean[c];                                                                           \
            var = j->var[c];                                                                             \
        }                                                                                                \
        double invstd = 1 / sqrt(var + j->eps);                                                          \
        double w = j->w ? (double)((const T *)(const void *)j->w)[c] : 1;                                \
        double b = j->b ? (double)((const T *)(const void *)j->b)[c] : 0;                                \
        T scale = (T)(invstd * w), shift = (T)(b - mean * invstd * w);                                   \
        for (int64_t n = 0; n < j->N; n++) {                                                             \
            const T *r = xs + n * CL + c * L;                                                            \
            T *o = ys + n * CL + c * L;                                                                  \
            for (int64_t i = 0; i < L; i++) o[i] = r[i] * scale + shift;                                 \
        }                                                                                                \
    }
/* f32 with the SIMD rows of >>simd: per row, sum x and sum (x - K)^2 (the row read twice while
   it is in the cache; both sums in double), then y = x scale + shift. */
static void tensor__bn_channel_f32(const tensor__bn_job *j, int64_t c) {
    const float *xs = (const float *)(const void *)j->x;
    float *ys = (float *)(void *)j->y;
    int64_t L = j->L, CL = j->C * L;
    double mean, var;
    if (j->training) {
        float K = xs[c * L];
        double s1 = 0, s2 = 0;
        for (int64_t n = 0; n < j->N; n++) {
            const float *r = xs + n * CL + c * L;
            s1 += tensor__row_sum_f32(r, L) - (double)K * (double)L;
            s2 += tensor__row_sqdev_f32(r, L, K);
        }
        double cnt = (double)(j->N * L), dm = s1 / cnt;
        mean = (double)K + dm;
        var = s2 / cnt - dm * dm;
        if (var < 0) var = 0;
        j->mean[c] = mean;
        j->var[c] = var;
    } else {
        mean = j->mean[c];
        var = j->var[c];
    }
    double invstd = 1 / sqrt(var + j->eps);
    double w = j->w ? (double)((const float *)(const void *)j->w)[c] : 1, b = j->b ? (double)((const float *)(const void *)j->b)[c] : 0;
    float scale = (float)(invstd * w), shift = (float)(b - mean * invstd * w);
    for (int64_t n = 0; n < j->N; n++) tensor__row_affine_f32(ys + n * CL + c * L, xs + n * CL + c * L, L, scale, shift);
}
static void tensor__bn_channels(int64_t begin, int64_t end, void *ctx) {
    tensor__bn_job *j = (tensor__bn_job *)ctx;
    for (int64_t c = begin; c < end; c++) {
        if (j->f64) TENSOR__BN_CHANNEL(double)
        else tensor__bn_channel_f32(j, c);
    }
}
#undef TENSOR__BN_CHANNEL

/* The fused batch_norm, or NULL with *taken false when it does not apply (the composite runs).
   Under autograd its node keeps x, weight, bias and the statistics [2, C] (f64: the mean and
   1 / sqrt(var + eps) it normalized with). */
static tensor *tensor__bn_fast(const char *fn, tensor *x, tensor *rm, tensor *rv, tensor *w, tensor *b, bool training, double momentum, double eps, bool *taken) {
    *taken = false;
    if (!tensor__layer_fast(x, false) || tensor__layer_param_blocks(w, x) || tensor__layer_param_blocks(b, x)) return NULL;
    if ((rm && rm->storage->device != TENSOR_CPU) || (rv && rv->storage->device != TENSOR_CPU)) return NULL;
    int64_t N = x->shape[0], C = x->shape[1], L = tensor__numel_of(x->ndim - 2, x->shape + 2);
    if (N * L == 0 || C == 0) return NULL;
    *taken = true;
    bool graph = tensor__grad_on() && (x->requires_grad || (w && w->requires_grad) || (b && b->requires_grad));
    tensor *xc = tensor_contiguous(x), *wc = w ? tensor_contiguous(w) : NULL, *bc = b ? tensor_contiguous(b) : NULL;
    tensor *y = xc ? tensor__new_like(fn, x, x->dtype) : NULL;
    int64_t ss[2] = {2, C};
    tensor *stats = y ? tensor__new(fn, 2, ss, TENSOR_F64, TENSOR_CPU) : NULL;
    double *st = stats ? (double *)(void *)tensor__data(stats) : NULL;
    bool ok = y && st && (!w || wc) && (!b || bc);
    if (ok && !training) { /* the running statistics as doubles */
        tensor *m = tensor_to_dtype(rm, TENSOR_F64), *v = tensor_to_dtype(rv, TENSOR_F64);
        tensor *mc = m ? tensor_contiguous(m) : NULL, *vc = v ? tensor_contiguous(v) : NULL;
        ok = mc && vc;
        if (ok) {
            memcpy(st, tensor__data(mc), sizeof(double) * (size_t)C);
            memcpy(st + C, tensor__data(vc), sizeof(double) * (size_t)C);
        }
        tensor_free(m); tensor_free(v); tensor_free(mc); tensor_free(vc);
    }
    if (ok) {
        tensor__bn_job j;
        j.x = tensor__data(xc);
        j.y = tensor__data(y);
        j.w = wc ? tensor__data(wc) : NULL;
        j.b = bc ? tensor__data(bc) : NULL;
        j.mean = st;
        j.var = st + C;
        j.N = N; j.C = C; j.L = L;
        j.eps = eps;
        j.f64 = x->dtype == TENSOR_F64;
        j.training = training;
        tensor__parallel_for(C, 32768 / (N * L) + 1, tensor__bn_channels, &j);
        TENSOR__PATH_TAKEN(layer_batch_norm);
    }
    if (ok && training && rm) { /* the running statistics, with the unbiased variance */
        double cnt = (double)(N * L), *uv = (double *)TENSOR__MALLOC(sizeof(double) * (size_t)C);
        if (!uv) ok = (tensor__fail(fn, "out of memory"), false);
        for (int64_t c = 0; ok && c < C; c++) uv[c] = st[C + c] * cnt / (cnt - 1);
        tensor *m1 = ok ? tensor_from_data(st, 1, &C, TENSOR_F64) : NULL, *v1 = ok ? tensor_from_data(uv, 1, &C, TENSOR_F64) : NULL;
        ok = m1 && v1 && tensor__running_update(rm, m1, momentum) && tensor__running_update(rv, v1, momentum);
        tensor_free(m1); tensor_free(v1);
        TENSOR_FREE(uv);
    }
    for (int64_t c = 0; ok && c < C; c++) st[C + c] = 1 / sqrt(st[C + c] + eps); /* the variance becomes invstd */
    tensor_free(xc); tensor_free(wc); tensor_free(bc);
    if (!ok) { tensor_free(y); tensor_free(stats); return NULL; }
    if (!graph) { tensor_free(stats); return y; }
    tensor *in[3] = {x, w, b};
    int64_t ip[1] = {training};
    double p[1] = {eps};
    return tensor__layer_record(TENSOR_OP_batch_norm, y, 3, in, ip, 1, p, 1, stats);
}

/* batch_norm's fused backward (PyTorch's): per channel, sg = sum g and sgx = sum g (x - mean) in
   double over its N rows; then gx = w invstd (g - sg / M - (x - mean) invstd^2 sgx / M) with the
   batch statistics (training), or g w invstd with fixed ones; gw = sgx invstd, gb = sg. */
typedef struct {
    const char *x, *g, *w;
    char *gx;
    const double *st;    /* [2, C]: mean, invstd */
    double *gw, *gb;     /* [C] */
    int64_t N, C, L;
    bool f64, training;
    int failed;
} tensor__bn_bwd_job;
#define TENSOR__BN_BWD_CHANNEL(T)                                                                        \
    {                                                                                                    \
        const T *xs = (const T *)(const void *)j->x, *gs = (const T *)(const void *)j->g;                \
        int64_t L = j->L, CL = j->C * L;                                                                 \
        double mean = j->st[c], invstd = j->st[j->C + c], sg = 0, sgx = 0;                               \
        for (int64_t n = 0; n < j->N; n++) {                                                             \
            const T *xr = xs + n * CL + c * L, *gr = gs + n * CL + c * L;                                \
            double a[4] = {0, 0, 0, 0}, q[4] = {0, 0, 0, 0};                                             \
            int64_t i = 0;                                                                               \
            for (; i + 4 <= L; i += 4)                                                                   \
                for (int u = 0; u < 4; u++) {                                                            \
                    double gv = (double)gr[i + u];                                                       \
                    a[u] += gv;                                                                          \
                    q[u] += gv * ((double)xr[i + u] - mean);                                             \
                }                                                                                        \
            for (; i < L; i++) {                                                                         \
                a[0] += (double)gr[i];                                                                   \
                q[0] += (double)gr[i] * ((double)xr[i] - mean);                                          \
            }                                                                                            \
            sg += (a[0] + a[1]) + (a[2] + a[3]);                                                         \
            sgx += (q[0] + q[1]) + (q[2] + q[3]);                                                        \
        }                                                                                                \
        if (j->gw) j->gw[c] = sgx * invstd;                                                              \
        if (j->gb) j->gb[c] = sg;                                                                        \
        if (j->gx) {                                                                                     \
            double w = j->w ? (double)((const T *)(const void *)j->w)[c] : 1, M = (double)(j->N * L);    \
            T k = (T)(w * invstd), mg = (T)(j->training ? sg / M : 0), kx = (T)(j->training ? invstd * invstd * sgx / M : 0), m = (T)mean; \
            for (int64_t n = 0; n < j->N; n++) {                                                         \
                const T *xr = xs + n * CL + c * L, *gr = gs + n * CL + c * L;                            \
                T *o = (T *)(void *)j->gx + n * CL + c * L;                                              \
                for (int64_t i = 0; i < L; i++) o[i] = k * (gr[i] - mg - (xr[i] - m) * kx);              \
            }                                                                                            \
        }                                                                                                \
    }
/* f32 with the SIMD rows: per row, sg += sum g, sgx += dot(g, x - mean) (x - mean into the
   thread's row buffer d, sums in double); then gx = k (g - (x kx + mg - mean kx)) row by row. */
static void tensor__bn_bwd_channel_f32(const tensor__bn_bwd_job *j, int64_t c, float *d) {
    const float *xs = (const float *)(const void *)j->x, *gs = (const float *)(const void *)j->g;
    int64_t L = j->L, CL = j->C * L;
    double mean = j->st[c], invstd = j->st[j->C + c], sg = 0, sgx = 0;
    for (int64_t n = 0; n < j->N; n++) {
        const float *xr = xs + n * CL + c * L, *gr = gs + n * CL + c * L;
        tensor__row_affine_f32(d, xr, L, 1.0f, (float)-mean);
        sg += tensor__row_sum_f32(gr, L);
        sgx += tensor__row_dot_f32(gr, d, L);
    }
    if (j->gw) j->gw[c] = sgx * invstd;
    if (j->gb) j->gb[c] = sg;
    if (!j->gx) return;
    double w = j->w ? (double)((const float *)(const void *)j->w)[c] : 1, M = (double)(j->N * L);
    double mg = j->training ? sg / M : 0, kx = j->training ? invstd * invstd * sgx / M : 0;
    float k = (float)(w * invstd), a = (float)kx, b = (float)(mg - mean * kx);
    for (int64_t n = 0; n < j->N; n++) {
        float *o = (float *)(void *)j->gx + n * CL + c * L;
        tensor__row_affine_f32(o, xs + n * CL + c * L, L, a, b);    /* o = x kx + mg - mean kx */
        tensor__row_fms_f32(o, gs + n * CL + c * L, L, 1.0f);        /* o = g - o */
        tensor__row_affine_f32(o, o, L, k, 0.0f);                    /* o = k o */
    }
}
static void tensor__bn_bwd_channels(int64_t begin, int64_t end, void *ctx) {
    tensor__bn_bwd_job *j = (tensor__bn_bwd_job *)ctx;
    float *d = j->f64 ? NULL : (float *)TENSOR__MALLOC(sizeof(float) * (size_t)(j->L + 1));
    if (!j->f64 && !d) { TENSOR__ATOMIC_SET(&j->failed, 1); return; }
    for (int64_t c = begin; c < end; c++) {
        if (j->f64) TENSOR__BN_BWD_CHANNEL(double)
        else tensor__bn_bwd_channel_f32(j, c, d);
    }
    TENSOR_FREE(d);
}
#undef TENSOR__BN_BWD_CHANNEL

/* The gradients of the fused batch_norm (its node: x, w (or NULL), the statistics st [2, C] f64):
   each wanted one (gx, gw, gb non-NULL) a new contiguous tensor of x's dtype. Returns 0, or 1
   after recording an error. */
static int tensor__bn_backward(const char *fn, tensor *x, tensor *w, tensor *st, tensor *g, bool training, tensor **gx, tensor **gw, tensor **gb) {
    int64_t N = x->shape[0], C = x->shape[1], L = tensor__numel_of(x->ndim - 2, x->shape + 2);
    tensor *xc = tensor_contiguous(x), *wc = w ? tensor_contiguous(w) : NULL;
    tensor *gc = g->dtype == x->dtype && tensor__contiguous(g) ? tensor_contiguous(g) : tensor__contiguous_copy(fn, g, x->dtype);
    tensor *rx = gx ? tensor__new_like(fn, x, x->dtype) : NULL;
    double *sums = (double *)TENSOR__MALLOC(sizeof(double) * (size_t)(2 * C + 1));
    bool ok = xc && (!w || wc) && gc && (!gx || rx) && sums;
    if (!sums) tensor__fail(fn, "out of memory");
    if (ok) {
        tensor__bn_bwd_job j;
        j.x = tensor__data(xc);
        j.g = tensor__data(gc);
        j.w = wc ? tensor__data(wc) : NULL;
        j.gx = rx ? tensor__data(rx) : NULL;
        j.st = (const double *)(const void *)tensor__data(st);
        j.gw = sums;
        j.gb = sums + C;
        j.N = N; j.C = C; j.L = L;
        j.f64 = x->dtype == TENSOR_F64;
        j.training = training;
        j.failed = 0;
        tensor__parallel_for(C, 32768 / (N * L + 1) + 1, tensor__bn_bwd_channels, &j);
        if (j.failed) ok = (tensor__fail(fn, "out of memory"), false);
    }
    tensor *rw = NULL, *rb = NULL;
    if (ok && gw) {
        tensor *d = tensor_from_data(sums, 1, &C, TENSOR_F64);
        rw = d ? tensor_to_dtype(d, x->dtype) : NULL;
        tensor_free(d);
        ok = rw != NULL;
    }
    if (ok && gb) {
        tensor *d = tensor_from_data(sums + C, 1, &C, TENSOR_F64);
        rb = d ? tensor_to_dtype(d, x->dtype) : NULL;
        tensor_free(d);
        ok = rb != NULL;
    }
    TENSOR_FREE(sums);
    tensor_free(xc); tensor_free(wc); tensor_free(gc);
    if (!ok) { tensor_free(rx); tensor_free(rw); tensor_free(rb); return 1; }
    if (gx) *gx = rx;
    if (gw) *gw = rw;
    if (gb) *gb = rb;
    return 0;
}

/* x [N, C, *]: normalized per channel over N and *; training: with the batch statistics (biased
   variance), and running_mean/var (when given) updated in place with the unbiased variance, as
   PyTorch; otherwise with running_mean/var. */
/* y (owned) op p[0], as PyTorch's empty-input batch_norm applies weight[0] and bias[0]. */
static tensor *tensor__bn_empty_affine(const char *fn, tensor *y, tensor *p, tensor_op op) {
    if (!y) return NULL;
    if (tensor__numel_of(p->ndim, p->shape) == 0) { tensor_free(y); return tensor__fail(fn, "index 0 is out of bounds for a parameter of shape %s", tensor__shape_of(p)); }
    int64_t all = -1;
    tensor *flat = tensor_reshape(p, 1, &all), *first = flat ? tensor_select(flat, 0, 0) : NULL;
    tensor *r = first ? tensor__binary(op, y, first) : NULL;
    tensor_free(flat); tensor_free(first); tensor_free(y);
    return r;
}
TENSOR_API tensor *tensor_batch_norm(tensor *x, tensor *running_mean, tensor *running_var, tensor *weight, tensor *bias, bool training, double momentum, double eps) {
    const char *fn = "tensor_batch_norm";
    TENSOR__CHECK_ARG(fn, x);
    if (x->ndim == 1 && x->shape[0] == 0) { /* PyTorch's _batch_norm_impl_index returns an empty input's copy before its checks */
        tensor *ins[5] = {x, running_mean, running_var, weight, bias};
        if (!tensor__same_device(fn, 5, ins)) return NULL;
        if (!tensor__is_float(x->dtype)) return tensor__fail(fn, "expected a floating input, got %s", tensor__dtype_names[x->dtype]);
        tensor *y = tensor_clone(x); /* a copy, not a view: the gradient reaches x */
        if (weight) y = tensor__bn_empty_affine(fn, y, weight, TENSOR_OP_mul);
        if (bias) y = tensor__bn_empty_affine(fn, y, bias, TENSOR_OP_add);
        return y;
    }
    if (!tensor__bn_check(fn, x, 2, running_mean, running_var, weight, bias, training)) return NULL;
    int64_t C = x->shape[1], count = tensor__numel_of(x->ndim, x->shape) / (C ? C : 1);
    if (training && C > 0 && count == 1) return tensor__fail(fn, "expected more than 1 value per channel when training, got input of shape %s", tensor__shape_of(x));
    if (count == 0 && C > 0) { /* an empty batch: PyTorch's x * weight[0] + bias[0] at once (no statistics over huge other dims) */
        tensor__tmps s = {{0}, 0};
        tensor *y = tensor__tmp(&s, tensor_clone(x));
        if (weight) y = tensor__tmp(&s, tensor_mul(y, tensor__tmp(&s, tensor_select(weight, 0, 0))));
        if (bias) y = tensor__tmp(&s, tensor_add(y, tensor__tmp(&s, tensor_select(bias, 0, 0))));
        y = tensor__tmps_take(&s, y);
        tensor__tmps_free(&s);
        return y;
    }
    bool taken;
    tensor *fast = tensor__bn_fast(fn, x, running_mean, running_var, weight, bias, training, momentum, eps, &taken);
    if (taken) return fast;
    tensor__tmps s = {{0}, 0};
    tensor *w, *b, *mean, *invstd;
    if (!tensor__channel_param(fn, "weight", weight, x, &s, &w) || !tensor__channel_param(fn, "bias", bias, x, &s, &b)) { tensor__tmps_free(&s); return NULL; }
    if (training) {
        mean = tensor__bn_mean(&s, x);
        tensor *xc = tensor__tmp(&s, tensor_sub(x, mean));
        tensor *var = tensor__bn_mean(&s, tensor__tmp(&s, tensor_mul(xc, xc)));
        invstd = tensor__tmp(&s, tensor_rsqrt(tensor__tmp(&s, tensor_add_scalar(var, eps))));
        if (running_mean && mean && var && count > 1) {
            int64_t cs[1] = {C};
            tensor *m1 = tensor__tmp(&s, tensor_reshape(mean, 1, cs));
            tensor *v1 = tensor__tmp(&s, tensor_mul_scalar(tensor__tmp(&s, tensor_reshape(var, 1, cs)), (double)count / (double)(count - 1)));
            if (!m1 || !v1 || !tensor__running_update(running_mean, m1, momentum) || !tensor__running_update(running_var, v1, momentum)) { tensor__tmps_free(&s); return NULL; }
        }
    } else {
        tensor *rm, *rv;
        if (!tensor__channel_param(fn, "running_mean", running_mean, x, &s, &rm) || !tensor__channel_param(fn, "running_var", running_var, x, &s, &rv)) { tensor__tmps_free(&s); return NULL; }
        mean = tensor__tmp(&s, tensor_to_dtype(rm, x->dtype));
        invstd = tensor__tmp(&s, tensor_rsqrt(tensor__tmp(&s, tensor_add_scalar(tensor__tmp(&s, tensor_to_dtype(rv, x->dtype)), eps))));
    }
    tensor *y = tensor__tmps_take(&s, tensor__norm_affine(&s, x, mean, invstd, w, b));
    tensor__tmps_free(&s);
    return y;
}

/* x [N, C, *]: each (sample, channel) normalized over *; use_input_stats false: with the running
   statistics instead; with them given and use_input_stats, they are updated in place with the
   per-instance statistics averaged over the batch (as PyTorch's F.instance_norm). */
TENSOR_API tensor *tensor_instance_norm(tensor *x, tensor *running_mean, tensor *running_var, tensor *weight, tensor *bias, bool use_input_stats, double momentum, double eps) {
    const char *fn = "tensor_instance_norm";
    TENSOR__CHECK_ARG(fn, x);
    if (!tensor__bn_check(fn, x, 3, running_mean, running_var, weight, bias, use_input_stats)) return NULL;
    int64_t count = tensor__numel_of(x->ndim - 2, x->shape + 2);
    if (use_input_stats && count == 1) return tensor__fail(fn, "expected more than 1 spatial element when training, got input of shape %s", tensor__shape_of(x));
    if (!use_input_stats) return tensor_batch_norm(x, running_mean, running_var, weight, bias, false, momentum, eps);
    tensor__tmps s = {{0}, 0};
    tensor *w, *b;
    if (!tensor__channel_param(fn, "weight", weight, x, &s, &w) || !tensor__channel_param(fn, "bias", bias, x, &s, &b)) { tensor__tmps_free(&s); return NULL; }
    int dims[TENSOR_MAX_DIMS], nd = 0;
    for (int i = 2; i < x->ndim; i++) dims[nd++] = i;
    tensor *mean = tensor__tmp(&s, tensor_mean_dims(x, nd, dims, true));
    tensor *xc = tensor__tmp(&s, tensor_sub(x, mean));
    tensor *var = tensor__tmp(&s, tensor_mean_dims(tensor__tmp(&s, tensor_mul(xc, xc)), nd, dims, true));
    tensor *invstd = tensor__tmp(&s, tensor_rsqrt(tensor__tmp(&s, tensor_add_scalar(var, eps))));
    if (running_mean && mean && var && x->shape[0] > 0 && count > 1) {
        int64_t nc[2] = {x->shape[0], x->shape[1]};
        tensor *m1 = tensor__tmp(&s, tensor_mean(tensor__tmp(&s, tensor_reshape(mean, 2, nc)), 0, false));
        tensor *v1 = tensor__tmp(&s, tensor_mul_scalar(tensor__tmp(&s, tensor_mean(tensor__tmp(&s, tensor_reshape(var, 2, nc)), 0, false)), (double)count / (double)(count - 1)));
        if (!m1 || !v1 || !tensor__running_update(running_mean, m1, momentum) || !tensor__running_update(running_var, v1, momentum)) { tensor__tmps_free(&s); return NULL; }
    }
    tensor *y = tensor__tmps_take(&s, tensor__norm_affine(&s, x, mean, invstd, w, b));
    tensor__tmps_free(&s);
    return y;
}

/* x [N, C, *]: the channels split into num_groups groups, each (sample, group) normalized over its
   channels and *, then the per-channel weight and bias. */
TENSOR_API tensor *tensor_group_norm(tensor *x, int64_t num_groups, tensor *weight, tensor *bias, double eps) {
    const char *fn = "tensor_group_norm";
    TENSOR__CHECK_ARG(fn, x);
    tensor *ins[3] = {x, weight, bias};
    if (!tensor__same_device(fn, 3, ins)) return NULL;
    if (x->ndim < 2) return tensor__fail(fn, "input must have at least 2 dims [N, C, ...], got shape %s", tensor__shape_of(x));
    if (!tensor__is_float(x->dtype)) return tensor__fail(fn, "expected a floating input, got %s", tensor__dtype_names[x->dtype]);
    int64_t N = x->shape[0], C = x->shape[1];
    if (num_groups <= 0 || C % num_groups) return tensor__fail(fn, "the channel count %lld must be divisible by num_groups %lld (> 0)", (long long)C, (long long)num_groups);
    tensor__tmps s = {{0}, 0};
    tensor *w, *b;
    if (!tensor__channel_param(fn, "weight", weight, x, &s, &w) || !tensor__channel_param(fn, "bias", bias, x, &s, &b)) { tensor__tmps_free(&s); return NULL; }
    int64_t gs[3] = {N, num_groups, tensor__numel_of(x->ndim, x->shape) / (N ? N : 1) / num_groups};
    tensor *xg = tensor__tmp(&s, tensor_reshape(x, 3, gs));
    tensor *mean = tensor__tmp(&s, tensor_mean(xg, 2, true));
    tensor *xc = tensor__tmp(&s, tensor_sub(xg, mean));
    tensor *var = tensor__tmp(&s, tensor_mean(tensor__tmp(&s, tensor_mul(xc, xc)), 2, true));
    tensor *y = tensor__tmp(&s, tensor_mul(xc, tensor__tmp(&s, tensor_rsqrt(tensor__tmp(&s, tensor_add_scalar(var, eps))))));
    y = tensor__tmp(&s, tensor_reshape(y, x->ndim, x->shape));
    if (w) y = tensor__tmp(&s, tensor_mul(y, w));
    if (b) y = tensor__tmp(&s, tensor_add(y, b));
    y = tensor__tmps_take(&s, y);
    tensor__tmps_free(&s);
    return y;
}

/* ---- misc: local_response_norm (composite) ----
   PyTorch's formula: x / (k + alpha * div)^beta, div[c] the mean of x^2 over the channels
   c - size/2 .. c + (size - 1)/2 with zeros beyond the ends (its avg_pool over channels, padded).
   x^2 as [N, C, R] is padded along C and windowed by unfold (a view), so each window is summed
   once. An integer x averages in its dtype (truncating, as PyTorch's avg_pool does) and gives f32. */
TENSOR_API tensor *tensor_local_response_norm(tensor *x, int size, double alpha, double beta, double k) {
    const char *fn = "tensor_local_response_norm";
    TENSOR__CHECK_ARG(fn, x);
    if (x->ndim < 3) return tensor__fail(fn, "expected 3-D or higher dimensionality input, got shape %s", tensor__shape_of(x));
    if (size <= 0) return tensor__fail(fn, "size should be greater than zero, got %d", size);
    if (x->dtype == TENSOR_BOOL) return tensor__fail(fn, "not implemented for bool tensors");
    if (tensor_numel(x) == 0) return tensor__alias(fn, x);
    int64_t N = x->shape[0], C = x->shape[1], R = tensor_numel(x) / (N * C);
    int64_t shape3[3] = {N, C, R}, pads[4] = {0, 0, size / 2, (size - 1) / 2};
    tensor__tmps s = {{0}, 0};
    tensor *sq = tensor__tmp(&s, tensor_reshape(tensor__tmp(&s, tensor_mul(x, x)), 3, shape3));
    tensor *win = tensor__tmp(&s, tensor_unfold(tensor__tmp(&s, tensor_pad(sq, 4, pads, 0)), 1, size, 1)); /* [N, C, R, size] */
    tensor *sum = tensor__tmp(&s, tensor_sum(win, -1, false));
    if (sum && sum->dtype != x->dtype) sum = tensor__misc_as(&s, sum, x->dtype); /* integer sums come as i64 */
    tensor *div = tensor__tmp(&s, tensor__is_float(x->dtype) ? tensor_div_scalar(sum, size) : tensor__op_scalar(TENSOR_OP_floor_divide, sum, size));
    div = tensor__tmp(&s, tensor_reshape(div, x->ndim, x->shape));
    div = tensor__tmp(&s, tensor_pow_scalar(tensor__tmp(&s, tensor_add_scalar(tensor__tmp(&s, tensor_mul_scalar(div, alpha)), k)), beta));
    tensor *r = div ? tensor_div(x, div) : NULL;
    tensor__tmps_free(&s);
    return r;
}
