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
