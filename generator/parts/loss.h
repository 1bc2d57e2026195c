// >>loss ---------------------------------------------------------------------------------------
/* ---- losses (mean reduction) ---- */

/* Checks class-index targets against input [C] (targets 0-dim), [N, C] (targets [N]) or
   [N, C, d1, ...] (targets [N, d1, ...]): PyTorch's nll_loss shapes. */
static bool tensor__check_class_targets(const char *fn, const tensor *input, const tensor *targets) {
    if (input->ndim == 0) { tensor__fail(fn, "input must have at least 1 dim [C] or [N, C, ...], got a 0-dim tensor"); return false; }
    if (!tensor__is_float(input->dtype)) { tensor__fail(fn, "expected a floating input, got %s", tensor__dtype_names[input->dtype]); return false; }
    if (!tensor__is_int(targets->dtype)) {
        tensor__fail(fn, "targets must be an integer tensor of class indices, got %s", tensor__dtype_names[targets->dtype]);
        return false;
    }
    bool ok;
    if (input->ndim == 1) ok = targets->ndim == 0;
    else {
        ok = targets->ndim == input->ndim - 1 && targets->shape[0] == input->shape[0];
        for (int d = 1; ok && d < targets->ndim; d++) ok = targets->shape[d] == input->shape[d + 1];
    }
    if (!ok) {
        tensor__fail(fn, "targets of shape %s do not match input of shape %s (expected the input's shape without its class dim %d)",
                     tensor__shape_of(targets), tensor__shape_of(input), input->ndim == 1 ? 0 : 1);
        return false;
    }
    return true;
}

#define TENSOR__IGNORE_INDEX (-100) /* PyTorch's default ignore_index: such targets count for nothing */

/* out: 0-dim = -mean over targets t (except ignore_index -100) of input[n, t, ...]. All ignored
   (or no targets) gives NaN, as in PyTorch. */
static int tensor__cpu_nll_loss(tensor__call *c) {
    tensor *x = c->in[0], *t = c->in[1];
    int cdim = x->ndim == 1 ? 0 : 1;
    int64_t C = x->shape[cdim], count = tensor__numel_of(t->ndim, t->shape), used = 0;
    int64_t ti[TENSOR_MAX_DIMS] = {0}, xi[TENSOR_MAX_DIMS];
    int64_t ex = (int64_t)tensor__dtype_sizes[x->dtype], et = (int64_t)tensor__dtype_sizes[t->dtype];
    double sum = 0;
    for (int64_t q = 0; q < count; q++, tensor__next_index(t->ndim, t->shape, ti)) {
        int64_t cls = tensor__load_i64((const char *)t->storage->data + tensor__offset_of(t, ti) * et, t->dtype);
        if (cls == TENSOR__IGNORE_INDEX) continue;
        if (cls < 0 || cls >= C) { tensor__fail(c->fn, "target %lld is out of bounds for %lld classes", (long long)cls, (long long)C); return 1; }
        if (x->ndim == 1) xi[0] = cls;
        else {
            xi[0] = ti[0];
            xi[1] = cls;
            for (int d = 1; d < t->ndim; d++) xi[d + 1] = ti[d];
        }
        sum += tensor__load_f64((const char *)x->storage->data + tensor__offset_of(x, xi) * ex, x->dtype);
        used++;
    }
    tensor__store_f64(tensor__data(c->out), c->out->dtype, -sum / (double)used);
    return 0;
}

TENSOR_API tensor *tensor_nll_loss(tensor *log_probs, tensor *targets) {
    const char *fn = "tensor_nll_loss";
    TENSOR__CHECK_ARG(fn, log_probs);
    TENSOR__CHECK_ARG(fn, targets);
    tensor *ins[2] = {log_probs, targets};
    if (!tensor__same_device(fn, 2, ins) || !tensor__check_class_targets(fn, log_probs, targets)) return NULL;
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_nll_loss);
    c.n_in = 2;
    c.in[0] = log_probs;
    c.in[1] = targets;
    c.out = tensor__new(fn, 0, NULL, log_probs->dtype, log_probs->storage->device);
    return c.out ? tensor__dispatch(&c) : NULL;
}

/* cross_entropy as one kernel: per row of logits along the class dim, lse = max + log(sum(e^(x -
   max))) and the row's loss lse - x[target] (class indices; ignore_index -100 rows count for
   nothing) or sum_c p_c (lse - x_c) (class probabilities p of the logits' shape); the mean over
   the counted rows (all ignored, or no rows: NaN, as PyTorch). Computed in double; f32 rows that
   are contiguous take the vector path. The backward kernel below writes (softmax - onehot) / N
   directly.
   Call layout: in[0] logits, in[1] targets, ip[0] 1 for probability targets. */
#define TENSOR__CE_GROUP 32 /* rows per partial sum of the loss */

/* max and sum(e^(x - max)) of n elements s bytes apart, in double (the reference row). */
static double tensor__ce_lse(const char *x, int64_t s, tensor_dtype dt, int64_t n) {
    double mx = -INFINITY, sum = 0;
    for (int64_t i = 0; i < n; i++) { double v = tensor__load_f64(x + i * s, dt); if (v > mx) mx = v; }
    for (int64_t i = 0; i < n; i++) sum += exp(tensor__load_f64(x + i * s, dt) - mx);
    return mx + log(sum);
}

typedef struct {
    const tensor *x, *p;      /* logits; probability targets (or NULL) */
    const int64_t *cls;       /* class targets, one per row in row order (or NULL) */
    int cdim;
    int64_t C, rows;
    double *partial;          /* one per group of TENSOR__CE_GROUP rows */
    bool fast;
} tensor__ce_task;

static void tensor__ce_groups(int64_t begin, int64_t end, void *vt) {
    const tensor__ce_task *t = (const tensor__ce_task *)vt;
    const tensor *x = t->x, *p = t->p ? t->p : t->x;
    int64_t ex = (int64_t)tensor__dtype_sizes[x->dtype], ep = (int64_t)tensor__dtype_sizes[p->dtype];
    int64_t xs = x->strides[t->cdim] * ex, ps = p->strides[t->cdim] * ep, C = t->C;
    bool fast_rows = t->fast && x->dtype == TENSOR_F32 && (xs == 4 || C == 1);
    tensor__rows r;
    tensor__rows_init(&r, x, p, t->cdim);
    tensor__rows_seek(&r, begin * TENSOR__CE_GROUP);
    for (int64_t grp = begin; grp < end; grp++) {
        double sum = 0;
        int64_t q1 = (grp + 1) * TENSOR__CE_GROUP < t->rows ? (grp + 1) * TENSOR__CE_GROUP : t->rows;
        for (int64_t q = grp * TENSOR__CE_GROUP; q < q1; q++, tensor__rows_next(&r)) {
            int64_t k = t->cls ? t->cls[q] : 0;
            if (t->cls && k == TENSOR__IGNORE_INDEX) continue;
            const char *xr = (const char *)x->storage->data + r.off[0] * ex;
            double lse = NAN;
            if (fast_rows) {
                float m;
                double s = tensor__row_maxsumexp_f32(NULL, (const float *)xr, C, &m);
                if (s == s) lse = (double)m + log(s);
            }
            if (lse != lse) lse = tensor__ce_lse(xr, xs, x->dtype, C);
            if (t->cls) { sum += lse - tensor__load_f64(xr + k * xs, x->dtype); continue; }
            const char *pr = (const char *)p->storage->data + r.off[1] * ep;
            for (int64_t c = 0; c < C; c++) sum += tensor__load_f64(pr + c * ps, p->dtype) * (lse - tensor__load_f64(xr + c * xs, x->dtype));
        }
        t->partial[grp] = sum;
    }
}

/* Class targets as int64 in row order, checked (0 <= t < C or ignore_index); *count gets the rows
   that count. NULL after an error. */
static int64_t *tensor__ce_classes(const char *fn, const tensor *targets, int64_t C, int64_t *count) {
    int64_t n = tensor__numel_of(targets->ndim, targets->shape), idx[TENSOR_MAX_DIMS] = {0}, used = 0;
    int64_t *cls = (int64_t *)tensor__cache_alloc((size_t)n * sizeof(int64_t));
    if (!cls) { tensor__fail(fn, "out of memory allocating %zu bytes", (size_t)n * sizeof(int64_t)); return NULL; }
    int64_t et = (int64_t)tensor__dtype_sizes[targets->dtype];
    for (int64_t q = 0; q < n; q++, tensor__next_index(targets->ndim, targets->shape, idx)) {
        int64_t k = tensor__load_i64((const char *)targets->storage->data + tensor__offset_of(targets, idx) * et, targets->dtype);
        if (k != TENSOR__IGNORE_INDEX && (k < 0 || k >= C)) {
            tensor__cache_free(cls);
            tensor__fail(fn, "target %lld is out of bounds for %lld classes", (long long)k, (long long)C);
            return NULL;
        }
        used += k != TENSOR__IGNORE_INDEX;
        cls[q] = k;
    }
    *count = used;
    return cls;
}

/* out: [] = the mean cross-entropy */
static int tensor__cpu_cross_entropy(tensor__call *c) {
    tensor *x = c->in[0], *t = c->in[1];
    bool prob = c->ip[0] != 0;
    tensor__ce_task k;
    k.x = x;
    k.cdim = x->ndim == 1 ? 0 : 1;
    k.C = x->shape[k.cdim];
    k.rows = 1;
    for (int d = 0; d < x->ndim; d++) if (d != k.cdim) k.rows *= x->shape[d];
    k.p = prob ? t : NULL;
    k.cls = NULL;
    k.fast = !tensor__reference_kernels;
    int64_t count = k.C ? k.rows : 0; /* probabilities over no classes: 0 / 0 */
    int64_t *cls = NULL;
    if (!prob && !(cls = tensor__ce_classes(c->fn, t, k.C, &count))) return 1;
    k.cls = cls;
    int64_t groups = (k.rows + TENSOR__CE_GROUP - 1) / TENSOR__CE_GROUP;
    k.partial = (double *)tensor__cache_alloc((size_t)groups * sizeof(double));
    if (!k.partial) { tensor__cache_free(cls); tensor__fail(c->fn, "out of memory allocating %zu bytes", (size_t)groups * sizeof(double)); return 1; }
    if (k.C > 0) {
        if (k.fast) tensor__parallel_for(groups, tensor__grain(k.C) / TENSOR__CE_GROUP + 1, tensor__ce_groups, &k); /* C * 32 may overflow */
        else tensor__ce_groups(0, groups, &k);
    } else for (int64_t g = 0; g < groups; g++) k.partial[g] = 0; /* no classes: only ignored rows got past the check */
    double sum = 0;
    for (int64_t g = 0; g < groups; g++) sum += k.partial[g];
    tensor__store_f64(tensor__data(c->out), c->out->dtype, sum / (double)count);
    tensor__cache_free(cls);
    tensor__cache_free(k.partial);
    return 0;
}

/* nll_loss(log_softmax(logits, class dim), targets); with floating targets of the logits' shape
   (class probabilities), -sum(targets * log_softmax) / (numel / C), as PyTorch. */
TENSOR_API tensor *tensor_cross_entropy(tensor *logits, tensor *targets) {
    const char *fn = "tensor_cross_entropy";
    TENSOR__CHECK_ARG(fn, logits);
    TENSOR__CHECK_ARG(fn, targets);
    tensor *ins[2] = {logits, targets};
    if (!tensor__same_device(fn, 2, ins)) return NULL;
    bool prob = tensor__is_float(targets->dtype);
    if (prob) {
        if (logits->ndim == 0) return tensor__fail(fn, "input must have at least 1 dim [C] or [N, C, ...], got a 0-dim tensor");
        if (!tensor__is_float(logits->dtype)) return tensor__fail(fn, "expected a floating input, got %s", tensor__dtype_names[logits->dtype]);
        if (!tensor__same_shape(logits, targets))
            return tensor__fail(fn, "probability targets of shape %s must have the input's shape %s", tensor__shape_of(targets), tensor__shape_of(logits));
    } else if (!tensor__check_class_targets(fn, logits, targets)) return NULL;
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_cross_entropy);
    c.n_in = 2;
    c.in[0] = logits;
    c.in[1] = targets;
    c.ip[0] = prob;
    c.out = tensor__new(fn, 0, NULL, prob ? (tensor_dtype)tensor__promotion[logits->dtype][targets->dtype] : logits->dtype, logits->storage->device);
    return c.out ? tensor__dispatch(&c) : NULL;
}

/* The fused backward of cross_entropy (the derivative uses it when the backward pass is not
   recorded): with scale = g / count, gx = (softmax(x) - onehot(target)) scale per counted row
   (ignored rows: 0), or for probabilities p, gx = (softmax(x) sum(p) - p) scale and
   gp = (lse - x) scale. */
typedef struct {
    const tensor *x, *p;
    tensor *gx, *gp;
    const int64_t *cls;
    int cdim;
    int64_t C;
    double scale;
    bool fast;
} tensor__ce_bwd_task;

static void tensor__ce_bwd_rows(int64_t begin, int64_t end, void *vt) {
    const tensor__ce_bwd_task *t = (const tensor__ce_bwd_task *)vt;
    const tensor *x = t->x;
    tensor *gx = t->gx;
    int64_t ex = (int64_t)tensor__dtype_sizes[x->dtype], eg = (int64_t)tensor__dtype_sizes[gx->dtype], C = t->C;
    int64_t xs = x->strides[t->cdim] * ex, gs = gx->strides[t->cdim] * eg;
    bool fast_rows = t->fast && t->cls && x->dtype == TENSOR_F32 && gx->dtype == TENSOR_F32 && ((xs == 4 && gs == 4) || C == 1);
    tensor__rows r, rp; /* rp: the rows of p and gp */
    tensor__rows_init(&r, x, gx, t->cdim);
    tensor__rows_seek(&r, begin);
    tensor__rows_init(&rp, t->p ? t->p : x, t->gp ? t->gp : t->p ? t->p : x, t->cdim);
    tensor__rows_seek(&rp, begin);
    for (int64_t q = begin; q < end; q++, tensor__rows_next(&r), tensor__rows_next(&rp)) {
        const char *xr = (const char *)x->storage->data + r.off[0] * ex;
        char *gr = (char *)gx->storage->data + r.off[1] * eg;
        int64_t k = t->cls ? t->cls[q] : -1;
        if (t->cls && k == TENSOR__IGNORE_INDEX) {
            for (int64_t c = 0; c < C; c++) tensor__store_f64(gr + c * gs, gx->dtype, 0);
            continue;
        }
        if (fast_rows) {
            float m, *g = (float *)gr;
            double s = tensor__row_maxsumexp_f32(g, (const float *)xr, C, &m); /* g = e^(x - max) */
            if (s == s) {
                tensor__row_affine_f32(g, g, C, (float)(t->scale / s), 0.0f);
                g[k] -= (float)t->scale;
                continue;
            }
        }
        double lse = tensor__ce_lse(xr, xs, x->dtype, C);
        if (t->cls) {
            for (int64_t c = 0; c < C; c++)
                tensor__store_f64(gr + c * gs, gx->dtype, (exp(tensor__load_f64(xr + c * xs, x->dtype) - lse) - (c == k)) * t->scale);
            continue;
        }
        const tensor *p = t->p;
        int64_t ep = (int64_t)tensor__dtype_sizes[p->dtype], ps = p->strides[t->cdim] * ep;
        const char *pr = (const char *)p->storage->data + rp.off[0] * ep;
        double psum = 0;
        for (int64_t c = 0; c < C; c++) psum += tensor__load_f64(pr + c * ps, p->dtype);
        for (int64_t c = 0; c < C; c++) {
            double xv = tensor__load_f64(xr + c * xs, x->dtype), pv = tensor__load_f64(pr + c * ps, p->dtype);
            tensor__store_f64(gr + c * gs, gx->dtype, (exp(xv - lse) * psum - pv) * t->scale);
        }
        if (t->gp) {
            int64_t eq = (int64_t)tensor__dtype_sizes[t->gp->dtype], qs = t->gp->strides[t->cdim] * eq;
            char *qr = (char *)t->gp->storage->data + rp.off[1] * eq;
            for (int64_t c = 0; c < C; c++) tensor__store_f64(qr + c * qs, t->gp->dtype, (lse - tensor__load_f64(xr + c * xs, x->dtype)) * t->scale);
        }
    }
}

/* Sets *gx (logits' shape and dtype) and, for probability targets, *gp (when gp is not NULL) for
   the loss gradient g (0-dim). 0, or -1 after an error. */
static int tensor__cross_entropy_backward(const char *fn, tensor *x, tensor *targets, bool prob, tensor *g, tensor **gx, tensor **gp) {
    if (!tensor__host_only(fn, x, "the backward of cross_entropy")) return -1;
    tensor__ce_bwd_task k;
    k.x = x;
    k.cdim = x->ndim == 1 ? 0 : 1;
    k.C = x->shape[k.cdim];
    int64_t rows = 1, count;
    for (int d = 0; d < x->ndim; d++) if (d != k.cdim) rows *= x->shape[d];
    count = k.C ? rows : 0;
    int64_t *cls = NULL;
    if (!prob && !(cls = tensor__ce_classes(fn, targets, k.C, &count))) return -1;
    k.cls = cls;
    k.p = prob ? targets : NULL;
    k.gx = tensor__new_like(fn, x, x->dtype);
    k.gp = prob && gp ? tensor__new_like(fn, targets, targets->dtype) : NULL;
    k.scale = tensor__load_f64(tensor__data(g), g->dtype) / (double)(count > 0 ? count : 1);
    k.fast = !tensor__reference_kernels;
    if (!k.gx || (prob && gp && !k.gp)) { tensor_free(k.gx); tensor_free(k.gp); tensor__cache_free(cls); return -1; }
    if (k.C > 0 && rows > 0) tensor__parallel_for(rows, tensor__grain(k.C), tensor__ce_bwd_rows, &k);
    tensor__cache_free(cls);
    *gx = k.gx;
    if (gp) *gp = k.gp;
    return 0;
}

/* mean((input - target)^2). Shapes that differ are broadcast (PyTorch warns and does the same). */
TENSOR_API tensor *tensor_mse_loss(tensor *input, tensor *target) {
    const char *fn = "tensor_mse_loss";
    TENSOR__CHECK_ARG(fn, input);
    TENSOR__CHECK_ARG(fn, target);
    tensor *ins[2] = {input, target};
    if (!tensor__same_device(fn, 2, ins)) return NULL;
    if (!tensor__is_float(tensor__result_type(2, ins)))
        return tensor__fail(fn, "expected floating inputs, got %s and %s", tensor__dtype_names[input->dtype], tensor__dtype_names[target->dtype]);
    int nd;
    int64_t shape[TENSOR_MAX_DIMS];
    if (!tensor__broadcast_shapes(fn, input->ndim, input->shape, target->ndim, target->shape, &nd, shape)) return NULL;
    tensor *d = tensor_sub(input, target);
    tensor *sq = d ? tensor_square(d) : NULL;
    tensor *r = sq ? tensor_mean_all(sq) : NULL;
    tensor_free(d);
    tensor_free(sq);
    return r;
}

/* mean((1 - y) x - logsigmoid(x)): the same value as max(x, 0) - x y + log(1 + exp(-|x|)), stable
   for large |x|, and written without relu/abs so its gradient is sigmoid(x) - y everywhere, x = 0
   included (PyTorch's; the kinks of relu and abs would give -y there). */
TENSOR_API tensor *tensor_binary_cross_entropy_with_logits(tensor *logits, tensor *targets) {
    const char *fn = "tensor_binary_cross_entropy_with_logits";
    TENSOR__CHECK_ARG(fn, logits);
    TENSOR__CHECK_ARG(fn, targets);
    tensor *ins[2] = {logits, targets};
    if (!tensor__same_device(fn, 2, ins)) return NULL;
    if (!tensor__same_shape(logits, targets))
        return tensor__fail(fn, "target shape %s must be the same as input shape %s", tensor__shape_of(targets), tensor__shape_of(logits));
    if (!tensor__is_float(logits->dtype) || !tensor__is_float(targets->dtype))
        return tensor__fail(fn, "expected floating input and target, got %s and %s", tensor__dtype_names[logits->dtype], tensor__dtype_names[targets->dtype]);
    tensor *xy = tensor_mul(logits, targets);
    tensor *t1 = xy ? tensor_sub(logits, xy) : NULL;
    tensor *ls = tensor_logsigmoid(logits);
    tensor *t2 = t1 && ls ? tensor_sub(t1, ls) : NULL;
    tensor *r = t2 ? tensor_mean_all(t2) : NULL;
    tensor_free(xy);
    tensor_free(t1);
    tensor_free(ls);
    tensor_free(t2);
    return r;
}

/* ---- losses with a reduction (composites: autograd and every device come with the ops) ----
   Each takes PyTorch's arguments in PyTorch's order, reduction last but for the options PyTorch
   puts after it. TENSOR_REDUCTION_NONE returns the per-element (or per-sample) losses. */

static bool tensor__check_reduction(const char *fn, tensor_reduction r) {
    if (r == TENSOR_REDUCTION_MEAN || r == TENSOR_REDUCTION_SUM || r == TENSOR_REDUCTION_NONE) return true;
    tensor__fail(fn, "reduction must be TENSOR_REDUCTION_MEAN, _SUM or _NONE, got %d", (int)r);
    return false;
}
/* The loss's reduction of l (a temporary of s): mean or sum of every element, or l itself, taken
   out of s. */
static tensor *tensor__reduce_loss(tensor__tmps *s, tensor *l, tensor_reduction r) {
    if (!l) return NULL;
    if (r == TENSOR_REDUCTION_NONE) return tensor__tmps_take(s, l);
    return r == TENSOR_REDUCTION_SUM ? tensor_sum_all(l) : tensor_mean_all(l);
}
/* The checks every two-operand loss makes: inputs given, on one device, a floating result type,
   and shapes that broadcast (PyTorch warns on different shapes and broadcasts). */
static bool tensor__check_loss2(const char *fn, tensor *a, tensor *b, tensor_reduction r) {
    if (!a) { tensor__null_arg(fn, "input"); return false; }
    if (!b) { tensor__null_arg(fn, "target"); return false; }
    if (!tensor__check_reduction(fn, r)) return false;
    tensor *ins[2] = {a, b};
    if (!tensor__same_device(fn, 2, ins)) return false;
    if (!tensor__is_float(tensor__result_type(2, ins))) {
        tensor__fail(fn, "expected floating inputs, got %s and %s", tensor__dtype_names[a->dtype], tensor__dtype_names[b->dtype]);
        return false;
    }
    int nd;
    int64_t shape[TENSOR_MAX_DIMS];
    return tensor__broadcast_shapes(fn, a->ndim, a->shape, b->ndim, b->shape, &nd, shape);
}

/* |input - target| */
TENSOR_API tensor *tensor_l1_loss(tensor *input, tensor *target, tensor_reduction reduction) {
    if (!tensor__check_loss2("tensor_l1_loss", input, target, reduction)) return NULL;
    tensor__tmps s = {{0}, 0};
    tensor *l = tensor__tmp(&s, tensor_abs(tensor__tmp(&s, tensor_sub(input, target))));
    tensor *r = tensor__reduce_loss(&s, l, reduction);
    tensor__tmps_free(&s);
    return r;
}

/* z = |input - target|: z < k ? 0.5 z^2 / k * q : (z - 0.5 k) * q; smooth_l1 has k = beta, q = 1
   (beta 0: the l1 loss), huber k = delta, q = delta. */
static tensor *tensor__smooth_l1(const char *fn, tensor *input, tensor *target, tensor_reduction reduction, double k, bool huber) {
    if (!tensor__check_loss2(fn, input, target, reduction)) return NULL;
    if (huber ? !(k > 0) : !(k >= 0))
        return tensor__fail(fn, huber ? "delta must be positive, got %g" : "beta must be non-negative, got %g", k);
    tensor__tmps s = {{0}, 0};
    tensor *z = tensor__tmp(&s, tensor_abs(tensor__tmp(&s, tensor_sub(input, target))));
    tensor *l = z;
    if (k > 0) {
        double q = huber ? k : 1;
        tensor *quad = tensor__tmp(&s, tensor_mul_scalar(tensor__tmp(&s, tensor_square(z)), 0.5 * q / k));
        tensor *lin = tensor__tmp(&s, tensor_mul_scalar(tensor__tmp(&s, tensor_sub_scalar(z, 0.5 * k)), q));
        l = tensor__tmp(&s, tensor_where(tensor__tmp(&s, tensor__op_scalar(TENSOR_OP_lt, z, k)), quad, lin));
    }
    tensor *r = tensor__reduce_loss(&s, l, reduction);
    tensor__tmps_free(&s);
    return r;
}
TENSOR_API tensor *tensor_smooth_l1_loss(tensor *input, tensor *target, tensor_reduction reduction, double beta) {
    return tensor__smooth_l1("tensor_smooth_l1_loss", input, target, reduction, beta, false);
}
TENSOR_API tensor *tensor_huber_loss(tensor *input, tensor *target, tensor_reduction reduction, double delta) {
    return tensor__smooth_l1("tensor_huber_loss", input, target, reduction, delta, true);
}

/* t log t, 0 where t == 0 (xlogy(t, t)), with a finite gradient there. */
static tensor *tensor__xlogx(tensor__tmps *s, tensor *t) {
    tensor *zero = tensor__tmp(s, tensor__op_scalar(TENSOR_OP_eq, t, 0));
    tensor *safe = tensor__tmp(s, tensor_masked_fill(t, zero, 1));
    return tensor__tmp(s, tensor_mul(t, tensor__tmp(s, tensor_log(safe))));
}

/* input holds log-probabilities; target probabilities (log_target: log-probabilities):
   target (log target - input), or exp(target) (target - input). Mean is over every element
   (PyTorch's 'mean'; its 'batchmean' is the sum divided by the batch size). */
TENSOR_API tensor *tensor_kl_div(tensor *input, tensor *target, tensor_reduction reduction, bool log_target) {
    if (!tensor__check_loss2("tensor_kl_div", input, target, reduction)) return NULL;
    tensor__tmps s = {{0}, 0};
    tensor *l;
    if (log_target) l = tensor__tmp(&s, tensor_mul(tensor__tmp(&s, tensor_exp(target)), tensor__tmp(&s, tensor_sub(target, input))));
    else l = tensor__tmp(&s, tensor_sub(tensor__xlogx(&s, target), tensor__tmp(&s, tensor_mul(target, input))));
    tensor *r = tensor__reduce_loss(&s, l, reduction);
    tensor__tmps_free(&s);
    return r;
}

/* -weight (target log(input) + (1 - target) log(1 - input)), each log clamped at -100 as
   PyTorch's; input in [0, 1] (checked on the CPU), target of input's shape, weight (NULL: none)
   broadcast to it. */
TENSOR_API tensor *tensor_binary_cross_entropy(tensor *input, tensor *target, tensor *weight, tensor_reduction reduction) {
    const char *fn = "tensor_binary_cross_entropy";
    if (!tensor__check_loss2(fn, input, target, reduction)) return NULL;
    if (!tensor__same_shape(input, target))
        return tensor__fail(fn, "target shape %s must be the same as input shape %s", tensor__shape_of(target), tensor__shape_of(input));
    if (weight) {
        tensor *ins[2] = {input, weight};
        if (!tensor__same_device(fn, 2, ins)) return NULL;
        if (!tensor__broadcasts_to(weight->ndim, weight->shape, input->ndim, input->shape))
            return tensor__fail(fn, "weight of shape %s does not broadcast to the input shape %s", tensor__shape_of(weight), tensor__shape_of(input));
    }
    tensor__tmps s = {{0}, 0};
    if (input->storage->device == TENSOR_CPU) {
        tensor *bad = tensor__tmp(&s, tensor_logical_or(tensor__tmp(&s, tensor__op_scalar(TENSOR_OP_lt, input, 0)), tensor__tmp(&s, tensor__op_scalar(TENSOR_OP_gt, input, 1))));
        tensor *any = tensor__tmp(&s, tensor_any(bad));
        if (!any || tensor_item(any) != 0) {
            tensor__tmps_free(&s);
            return any ? tensor__fail(fn, "all elements of input should be between 0 and 1") : NULL;
        }
    }
    tensor *lx = tensor__tmp(&s, tensor_clamp(tensor__tmp(&s, tensor_log(input)), -100, NAN));
    tensor *one_minus_x = tensor__tmp(&s, tensor_add_scalar(tensor__tmp(&s, tensor_neg(input)), 1));
    tensor *l1x = tensor__tmp(&s, tensor_clamp(tensor__tmp(&s, tensor_log(one_minus_x)), -100, NAN));
    tensor *one_minus_t = tensor__tmp(&s, tensor_add_scalar(tensor__tmp(&s, tensor_neg(target)), 1));
    tensor *sum = tensor__tmp(&s, tensor_add(tensor__tmp(&s, tensor_mul(target, lx)), tensor__tmp(&s, tensor_mul(one_minus_t, l1x))));
    tensor *l = tensor__tmp(&s, tensor_neg(sum));
    if (weight) l = tensor__tmp(&s, tensor_mul(l, weight));
    tensor *r = tensor__reduce_loss(&s, l, reduction);
    tensor__tmps_free(&s);
    return r;
}

/* log_input: exp(input) - target input; else input - target log(input + eps). full adds
   Stirling's term target log(target) - target + 0.5 log(2 pi target) where target > 1. */
TENSOR_API tensor *tensor_poisson_nll_loss(tensor *input, tensor *target, bool log_input, bool full, double eps, tensor_reduction reduction) {
    if (!tensor__check_loss2("tensor_poisson_nll_loss", input, target, reduction)) return NULL;
    tensor__tmps s = {{0}, 0};
    tensor *l;
    if (log_input) l = tensor__tmp(&s, tensor_sub(tensor__tmp(&s, tensor_exp(input)), tensor__tmp(&s, tensor_mul(target, input))));
    else l = tensor__tmp(&s, tensor_sub(input, tensor__tmp(&s, tensor_mul(target, tensor__tmp(&s, tensor_log(tensor__tmp(&s, tensor_add_scalar(input, eps))))))));
    if (full) {
        tensor *small = tensor__tmp(&s, tensor__op_scalar(TENSOR_OP_le, target, 1));
        tensor *t = tensor__tmp(&s, tensor_masked_fill(target, small, 2)); /* finite where it is not used */
        tensor *st = tensor__tmp(&s, tensor_sub(tensor__xlogx(&s, t), t));
        st = tensor__tmp(&s, tensor_add(st, tensor__tmp(&s, tensor_mul_scalar(tensor__tmp(&s, tensor_log(tensor__tmp(&s, tensor_mul_scalar(t, 2 * M_PI)))), 0.5))));
        l = tensor__tmp(&s, tensor_add(l, tensor__tmp(&s, tensor_masked_fill(st, small, 0))));
    }
    tensor *r = tensor__reduce_loss(&s, l, reduction);
    tensor__tmps_free(&s);
    return r;
}

/* 0.5 (log(max(var, eps)) + (input - target)^2 / max(var, eps)) (+ 0.5 log(2 pi) when full); the
   clamp does not stop var's gradient (PyTorch clamps under no_grad). var has input's shape, or
   input's without its last dim, or that with a last dim of 1; a negative var is an error. */
TENSOR_API tensor *tensor_gaussian_nll_loss(tensor *input, tensor *target, tensor *var, bool full, double eps, tensor_reduction reduction) {
    const char *fn = "tensor_gaussian_nll_loss";
    if (!tensor__check_loss2(fn, input, target, reduction)) return NULL;
    TENSOR__CHECK_ARG(fn, var);
    tensor *ins[2] = {input, var};
    if (!tensor__same_device(fn, 2, ins)) return NULL;
    bool same = tensor__same_shape(var, input), drop_last = false, last_one = false;
    if (!same && input->ndim >= 1) {
        drop_last = var->ndim == input->ndim - 1;
        for (int d = 0; drop_last && d < var->ndim; d++) drop_last = var->shape[d] == input->shape[d];
        last_one = var->ndim == input->ndim && var->shape[var->ndim - 1] == 1;
        for (int d = 0; last_one && d < var->ndim - 1; d++) last_one = var->shape[d] == input->shape[d];
    }
    if (!same && !drop_last && !last_one)
        return tensor__fail(fn, "var of shape %s is of incorrect size for input %s", tensor__shape_of(var), tensor__shape_of(input));
    tensor__tmps s = {{0}, 0};
    tensor *neg = tensor__tmp(&s, tensor_any(tensor__tmp(&s, tensor__op_scalar(TENSOR_OP_lt, var, 0))));
    if (!neg || tensor_item(neg) != 0) {
        tensor__tmps_free(&s);
        return neg ? tensor__fail(fn, "var has negative entry/entries") : NULL;
    }
    tensor *v = drop_last ? tensor__tmp(&s, tensor_unsqueeze(var, -1)) : var;
    v = tensor__clamp_min_nograd(&s, v, eps);
    tensor *d2 = tensor__tmp(&s, tensor_square(tensor__tmp(&s, tensor_sub(input, target))));
    tensor *l = tensor__tmp(&s, tensor_add(tensor__tmp(&s, tensor_log(v)), tensor__tmp(&s, tensor_div(d2, v))));
    l = tensor__tmp(&s, tensor_mul_scalar(l, 0.5));
    if (full) l = tensor__tmp(&s, tensor_add_scalar(l, 0.5 * log(2 * M_PI)));
    tensor *r = tensor__reduce_loss(&s, l, reduction);
    tensor__tmps_free(&s);
    return r;
}

/* The checks of the losses of two inputs and a +-1 target (margin_ranking, cosine_embedding). */
static bool tensor__check_loss3(const char *fn, tensor *a, tensor *b, tensor *y, tensor_reduction r) {
    if (!a) { tensor__null_arg(fn, "input1"); return false; }
    if (!b) { tensor__null_arg(fn, "input2"); return false; }
    if (!y) { tensor__null_arg(fn, "target"); return false; }
    if (!tensor__check_reduction(fn, r)) return false;
    tensor *ins[3] = {a, b, y};
    if (!tensor__same_device(fn, 3, ins)) return false;
    if (!tensor__is_float(tensor__result_type(3, ins))) {
        tensor__fail(fn, "expected floating inputs, got %s, %s and %s", tensor__dtype_names[a->dtype], tensor__dtype_names[b->dtype], tensor__dtype_names[y->dtype]);
        return false;
    }
    return true;
}

/* max(0, -target (input1 - input2) + margin); all three of one rank, broadcast. */
TENSOR_API tensor *tensor_margin_ranking_loss(tensor *input1, tensor *input2, tensor *target, double margin, tensor_reduction reduction) {
    const char *fn = "tensor_margin_ranking_loss";
    if (!tensor__check_loss3(fn, input1, input2, target, reduction)) return NULL;
    if (input1->ndim != input2->ndim || input1->ndim != target->ndim)
        return tensor__fail(fn, "all input tensors should have the same number of dims, got shapes %s, %s and %s", tensor__shape_of(input1),
                            tensor__shape_of(input2), tensor__shape_of(target));
    tensor__tmps s = {{0}, 0};
    tensor *d = tensor__tmp(&s, tensor_mul(tensor__tmp(&s, tensor_neg(target)), tensor__tmp(&s, tensor_sub(input1, input2))));
    tensor *l = tensor__tmp(&s, tensor_clamp(tensor__tmp(&s, tensor_add_scalar(d, margin)), 0, NAN));
    tensor *r = tensor__reduce_loss(&s, l, reduction);
    tensor__tmps_free(&s);
    return r;
}

/* input where target != -1, plus max(0, margin - input) where target != 1 (PyTorch's; +-1 targets
   pick one of the two). */
TENSOR_API tensor *tensor_hinge_embedding_loss(tensor *input, tensor *target, double margin, tensor_reduction reduction) {
    if (!tensor__check_loss2("tensor_hinge_embedding_loss", input, target, reduction)) return NULL;
    tensor__tmps s = {{0}, 0};
    tensor *hinge = tensor__tmp(&s, tensor_clamp(tensor__tmp(&s, tensor_add_scalar(tensor__tmp(&s, tensor_neg(input)), margin)), 0, NAN));
    tensor *lm = tensor__tmp(&s, tensor_masked_fill(hinge, tensor__tmp(&s, tensor__op_scalar(TENSOR_OP_eq, target, 1)), 0));
    tensor *ls = tensor__tmp(&s, tensor_masked_fill(input, tensor__tmp(&s, tensor__op_scalar(TENSOR_OP_eq, target, -1)), 0));
    tensor *l = tensor__tmp(&s, tensor_add(lm, ls));
    tensor *r = tensor__reduce_loss(&s, l, reduction);
    tensor__tmps_free(&s);
    return r;
}

/* log(1 + exp(-target input)), as softplus (stable for large |input|). */
TENSOR_API tensor *tensor_soft_margin_loss(tensor *input, tensor *target, tensor_reduction reduction) {
    if (!tensor__check_loss2("tensor_soft_margin_loss", input, target, reduction)) return NULL;
    tensor__tmps s = {{0}, 0};
    tensor *l = tensor__tmp(&s, tensor_softplus(tensor__tmp(&s, tensor_neg(tensor__tmp(&s, tensor_mul(input, target))))));
    tensor *r = tensor__reduce_loss(&s, l, reduction);
    tensor__tmps_free(&s);
    return r;
}

/* -(target logsigmoid(input) + (1 - target) logsigmoid(-input)) (times weight, NULL: none),
   averaged over the last (class) dim: one loss per sample before the reduction. */
TENSOR_API tensor *tensor_multilabel_soft_margin_loss(tensor *input, tensor *target, tensor *weight, tensor_reduction reduction) {
    const char *fn = "tensor_multilabel_soft_margin_loss";
    if (!tensor__check_loss2(fn, input, target, reduction)) return NULL;
    if (input->ndim == 0) return tensor__fail(fn, "input must have at least 1 dim [C] or [N, C], got a 0-dim tensor");
    if (weight) {
        tensor *ins[2] = {input, weight};
        if (!tensor__same_device(fn, 2, ins)) return NULL;
    }
    tensor__tmps s = {{0}, 0};
    tensor *a = tensor__tmp(&s, tensor_mul(target, tensor__tmp(&s, tensor_logsigmoid(input))));
    tensor *one_minus_t = tensor__tmp(&s, tensor_add_scalar(tensor__tmp(&s, tensor_neg(target)), 1));
    tensor *b = tensor__tmp(&s, tensor_mul(one_minus_t, tensor__tmp(&s, tensor_logsigmoid(tensor__tmp(&s, tensor_neg(input))))));
    tensor *l = tensor__tmp(&s, tensor_neg(tensor__tmp(&s, tensor_add(a, b))));
    if (weight) l = tensor__tmp(&s, tensor_mul(l, weight));
    l = tensor__tmp(&s, tensor_div_scalar(tensor__tmp(&s, tensor_sum(l, -1, false)), (double)input->shape[input->ndim - 1]));
    tensor *r = tensor__reduce_loss(&s, l, reduction);
    tensor__tmps_free(&s);
    return r;
}

/* cos = sum(x1 x2) / sqrt((sum(x1^2) + 1e-12) (sum(x2^2) + 1e-12)) over the last dim (x1, x2
   [N, D] with target [N], or [D] with a 0-dim target); 1 - cos where target is 1, max(0, cos -
   margin) where it is -1, 0 elsewhere. */
TENSOR_API tensor *tensor_cosine_embedding_loss(tensor *input1, tensor *input2, tensor *target, double margin, tensor_reduction reduction) {
    const char *fn = "tensor_cosine_embedding_loss";
    if (!tensor__check_loss3(fn, input1, input2, target, reduction)) return NULL;
    if (target->ndim > 1) return tensor__fail(fn, "0-D or 1-D target tensor expected, multi-target not supported (got shape %s)", tensor__shape_of(target));
    if (input1->ndim != target->ndim + 1 || input2->ndim != target->ndim + 1)
        return tensor__fail(fn, "a %d-D target expects %d-D inputs, got shapes %s and %s", target->ndim, target->ndim + 1, tensor__shape_of(input1), tensor__shape_of(input2));
    int dim = target->ndim;
    tensor__tmps s = {{0}, 0};
    tensor *prod = tensor__tmp(&s, tensor_sum(tensor__tmp(&s, tensor_mul(input1, input2)), dim, false));
    tensor *m1 = tensor__tmp(&s, tensor_add_scalar(tensor__tmp(&s, tensor_sum(tensor__tmp(&s, tensor_mul(input1, input1)), dim, false)), 1e-12));
    tensor *m2 = tensor__tmp(&s, tensor_add_scalar(tensor__tmp(&s, tensor_sum(tensor__tmp(&s, tensor_mul(input2, input2)), dim, false)), 1e-12));
    tensor *cos = tensor__tmp(&s, tensor_div(prod, tensor__tmp(&s, tensor_sqrt(tensor__tmp(&s, tensor_mul(m1, m2))))));
    tensor *pos = tensor__tmp(&s, tensor_add_scalar(tensor__tmp(&s, tensor_neg(cos)), 1));
    tensor *neg = tensor__tmp(&s, tensor_clamp(tensor__tmp(&s, tensor_sub_scalar(cos, margin)), 0, NAN));
    tensor *lp = tensor__tmp(&s, tensor_masked_fill(pos, tensor__tmp(&s, tensor__op_scalar(TENSOR_OP_ne, target, 1)), 0));
    tensor *ln = tensor__tmp(&s, tensor_masked_fill(neg, tensor__tmp(&s, tensor__op_scalar(TENSOR_OP_ne, target, -1)), 0));
    tensor *l = tensor__tmp(&s, tensor_add(lp, ln));
    tensor *r = tensor__reduce_loss(&s, l, reduction);
    tensor__tmps_free(&s);
    return r;
}

/* max(0, margin + d(anchor, positive) - d(anchor, negative)) with d the pairwise_distance (p, eps);
   swap: the smaller of d(anchor, negative) and d(positive, negative). */
TENSOR_API tensor *tensor_triplet_margin_loss(tensor *anchor, tensor *positive, tensor *negative, double margin, double p, double eps, bool swap,
                                              tensor_reduction reduction) {
    const char *fn = "tensor_triplet_margin_loss";
    TENSOR__CHECK_ARG(fn, anchor);
    TENSOR__CHECK_ARG(fn, positive);
    TENSOR__CHECK_ARG(fn, negative);
    if (!tensor__check_reduction(fn, reduction)) return NULL;
    if (anchor->ndim != positive->ndim || anchor->ndim != negative->ndim)
        return tensor__fail(fn, "anchor, positive and negative must have the same number of dims, got shapes %s, %s and %s", tensor__shape_of(anchor),
                            tensor__shape_of(positive), tensor__shape_of(negative));
    tensor *ins[3] = {anchor, positive, negative};
    if (!tensor__same_device(fn, 3, ins)) return NULL;
    tensor__tmps s = {{0}, 0};
    tensor *dp = tensor__tmp(&s, tensor_pairwise_distance(anchor, positive, p, eps, false));
    tensor *dn = tensor__tmp(&s, tensor_pairwise_distance(anchor, negative, p, eps, false));
    if (swap) dn = tensor__tmp(&s, tensor_minimum(dn, tensor__tmp(&s, tensor_pairwise_distance(positive, negative, p, eps, false))));
    tensor *l = tensor__tmp(&s, tensor_clamp(tensor__tmp(&s, tensor_add_scalar(tensor__tmp(&s, tensor_sub(dp, dn)), margin)), 0, NAN));
    tensor *r = tensor__reduce_loss(&s, l, reduction);
    tensor__tmps_free(&s);
    return r;
}

/* Per sample n of input [N, C] (or [C] with a 0-dim target): sum over i != y of
   max(0, margin - x[y] + x[i])^p (times weight[y]; NULL: none) / C, y = target[n]; p 1 or 2. */
TENSOR_API tensor *tensor_multi_margin_loss(tensor *input, tensor *target, int p, double margin, tensor *weight, tensor_reduction reduction) {
    const char *fn = "tensor_multi_margin_loss";
    TENSOR__CHECK_ARG(fn, input);
    TENSOR__CHECK_ARG(fn, target);
    if (!tensor__check_reduction(fn, reduction)) return NULL;
    if (p != 1 && p != 2) return tensor__fail(fn, "only p == 1 and p == 2 are supported, got %d", p);
    tensor *ins[3] = {input, target, weight};
    if (!tensor__same_device(fn, 3, ins)) return NULL;
    if (!tensor__is_float(input->dtype)) return tensor__fail(fn, "expected a floating input, got %s", tensor__dtype_names[input->dtype]);
    if (!tensor__is_int(target->dtype)) return tensor__fail(fn, "target must be an integer tensor of class indices, got %s", tensor__dtype_names[target->dtype]);
    if (input->ndim > 2 || target->ndim != (input->ndim == 2 ? 1 : 0) || (input->ndim == 2 && target->shape[0] != input->shape[0]))
        return tensor__fail(fn, "expected input [N, C] with target [N], or input [C] (or a 0-dim one) with a 0-dim target, got shapes %s and %s",
                            tensor__shape_of(input), tensor__shape_of(target));
    int64_t C = input->ndim ? input->shape[input->ndim - 1] : 1;
    if (weight && (weight->ndim != 1 || weight->shape[0] != C))
        return tensor__fail(fn, "weight must be 1-D with %lld elements (the classes of input %s), got shape %s", (long long)C, tensor__shape_of(input), tensor__shape_of(weight));
    int64_t rows = input->ndim == 2 ? input->shape[0] : 1;
    int64_t xs[2] = {rows, C}, ts[2] = {rows, 1};
    tensor__tmps s = {{0}, 0};
    tensor *x = tensor__tmp(&s, tensor_reshape(input, 2, xs));
    tensor *y = tensor__tmp(&s, tensor_reshape(target, 2, ts));
    if (y && y->dtype != TENSOR_I64) y = tensor__tmp(&s, tensor_to_dtype(y, TENSOR_I64));
    tensor *xy = tensor__tmp(&s, tensor_gather(x, 1, y)); /* [rows, 1]; checks every target against [0, C) */
    tensor *z = tensor__tmp(&s, tensor_clamp(tensor__tmp(&s, tensor_add_scalar(tensor__tmp(&s, tensor_sub(x, xy)), margin)), 0, NAN));
    if (p == 2) z = tensor__tmp(&s, tensor_square(z));
    if (weight) {
        tensor *wy = tensor__tmp(&s, tensor_reshape(tensor__tmp(&s, tensor_index_select(weight, 0, tensor__tmp(&s, tensor_reshape(y, 1, xs)))), 2, ts));
        z = tensor__tmp(&s, tensor_mul(z, wy));
    }
    tensor *self = tensor__tmp(&s, tensor_to_dtype(tensor__tmp(&s, tensor_one_hot(tensor__tmp(&s, tensor_reshape(y, 1, xs)), C)), TENSOR_BOOL));
    z = tensor__tmp(&s, tensor_masked_fill(z, self, 0));
    tensor *l = tensor__tmp(&s, tensor_div_scalar(tensor__tmp(&s, tensor_sum(z, 1, false)), (double)C));
    if (l && input->ndim < 2) l = tensor__tmp(&s, tensor_reshape(l, 0, NULL));
    tensor *r = tensor__reduce_loss(&s, l, reduction);
    tensor__tmps_free(&s);
    return r;
}
