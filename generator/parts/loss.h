// >>loss ---------------------------------------------------------------------------------------
/* ---- losses (mean reduction) ---- */

/* Checks class-index targets against input [C] (targets 0-dim), [N, C] (targets [N]) or
   [N, C, d1, ...] (targets [N, d1, ...]): PyTorch's nll_loss shapes. */
static bool tensor__check_class_targets(const char *fn, const tensor *input, const tensor *targets) {
    if (input->ndim == 0) { tensor__fail(fn, "input must have at least 1 dim [C] or [N, C, ...], got a 0-dim tensor"); return false; }
    if (!tensor__is_float(input->dtype)) { tensor__fail(fn, "expected a floating input, got %s", tensor__dtype_names[input->dtype]); return false; }
    if (!tensor__is_int(targets->dtype)) {
        tensor__fail(fn, "targets must be class indices, int64 or int32, got %s%s", tensor__dtype_names[targets->dtype],
                     tensor__is_float(targets->dtype) ? " (tensor_to_dtype(targets, TENSOR_I64) if they hold class numbers)" : "");
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

static bool tensor__check_reduction(const char *fn, tensor_reduction r);

/* The options of the class losses: cross_entropy_ex and nll_loss_ex take them from their
   arguments, cross_entropy and nll_loss take the defaults (no weight, ignore_index -100, mean, no
   label smoothing). */
typedef struct {
    const tensor *weight;        /* [C] class weights, or NULL */
    int64_t ignore;              /* ignore_index (class-index targets only) */
    tensor_reduction reduction;
    double eps;                  /* label smoothing, in [0, 1] */
} tensor__ce_opts;

static tensor__ce_opts tensor__ce_default_opts(void) {
    tensor__ce_opts o;
    o.weight = NULL;
    o.ignore = TENSOR__IGNORE_INDEX;
    o.reduction = TENSOR_REDUCTION_MEAN;
    o.eps = 0;
    return o;
}
/* The options of a call record: the _ex ops carry them (in[2] weight, ip[1] ignore_index, ip[2]
   reduction, p[0] label smoothing), the others take the defaults. */
static tensor__ce_opts tensor__ce_opts_of(tensor_op op, tensor *const *in, const double *p, const int64_t *ip) {
    tensor__ce_opts o = tensor__ce_default_opts();
    if (op == TENSOR_OP_cross_entropy_ex || op == TENSOR_OP_nll_loss_ex) {
        o.weight = in[2];
        o.ignore = ip[1];
        o.reduction = (tensor_reduction)ip[2];
        o.eps = op == TENSOR_OP_cross_entropy_ex ? p[0] : 0;
    }
    return o;
}

/* The class weights as C doubles in *w (cache memory; NULL when there are none). false after an
   error. */
static bool tensor__ce_weights(const char *fn, const tensor *weight, int64_t C, double **w) {
    *w = NULL;
    if (!weight) return true;
    *w = (double *)tensor__cache_alloc((size_t)(C > 0 ? C : 1) * sizeof(double));
    if (!*w) { tensor__fail(fn, "out of memory allocating %zu bytes", (size_t)(C > 0 ? C : 1) * sizeof(double)); return false; }
    tensor__load_row(*w, weight, weight->offset, weight->strides[0], C);
    return true;
}

/* Class targets as int64 in row order, checked (0 <= t < C, or ignore); *count gets the rows
   that count. NULL after an error. */
static int64_t *tensor__ce_classes(const char *fn, const tensor *targets, int64_t C, int64_t ignore, int64_t *count) {
    int64_t n = tensor__numel_of(targets->ndim, targets->shape), idx[TENSOR_MAX_DIMS] = {0}, used = 0;
    int64_t *cls = (int64_t *)tensor__cache_alloc((size_t)(n > 0 ? n : 1) * sizeof(int64_t));
    if (!cls) { tensor__fail(fn, "out of memory allocating %zu bytes", (size_t)n * sizeof(int64_t)); return NULL; }
    int64_t et = (int64_t)tensor__dtype_sizes[targets->dtype];
    for (int64_t q = 0; q < n; q++, tensor__next_index(targets->ndim, targets->shape, idx)) {
        int64_t k = tensor__load_i64((const char *)targets->storage->data + tensor__offset_of(targets, idx) * et, targets->dtype);
        if (k != ignore && (k < 0 || k >= C)) {
            tensor__cache_free(cls);
            tensor__fail(fn, "target %lld is out of bounds for %lld classes", (long long)k, (long long)C);
            return NULL;
        }
        used += k != ignore;
        cls[q] = k;
    }
    *count = used;
    return cls;
}

/* The divisor of the mean of the class losses: the sum of the weights of the counted targets
   (their number without weights). */
static double tensor__ce_divisor(const int64_t *cls, int64_t n, int64_t ignore, const double *w) {
    double d = 0;
    for (int64_t q = 0; q < n; q++)
        if (cls[q] != ignore) d += w ? w[cls[q]] : 1;
    return d;
}

/* out: [] (mean, sum) or the targets' shape (none). Per counted target k of input x [N, C, d...]
   (or [C] with a 0-dim target): -w[k] x[n, k, ...]; ignored targets give 0. The mean divides by
   the sum of the counted targets' weights (none counted: NaN, as PyTorch). */
static int tensor__nll_forward(tensor__call *c, const tensor__ce_opts *o) {
    tensor *x = c->in[0], *t = c->in[1];
    int cdim = x->ndim == 1 ? 0 : 1;
    int64_t C = x->shape[cdim], count = tensor__numel_of(t->ndim, t->shape), used;
    int64_t ti[TENSOR_MAX_DIMS] = {0}, xi[TENSOR_MAX_DIMS];
    int64_t ex = (int64_t)tensor__dtype_sizes[x->dtype], eo = (int64_t)tensor__dtype_sizes[c->out->dtype];
    int64_t *cls = tensor__ce_classes(c->fn, t, C, o->ignore, &used);
    double *w;
    if (!cls) return 1;
    if (!tensor__ce_weights(c->fn, o->weight, C, &w)) { tensor__cache_free(cls); return 1; }
    bool none = o->reduction == TENSOR_REDUCTION_NONE;
    char *out = (char *)tensor__data(c->out);
    double sum = 0, wsum = 0;
    for (int64_t q = 0; q < count; q++, tensor__next_index(t->ndim, t->shape, ti)) {
        int64_t k = cls[q];
        double v = 0;
        if (k != o->ignore) {
            if (x->ndim == 1) xi[0] = k;
            else {
                xi[0] = ti[0];
                xi[1] = k;
                for (int d = 1; d < t->ndim; d++) xi[d + 1] = ti[d];
            }
            double wk = w ? w[k] : 1;
            v = -wk * tensor__load_f64((const char *)x->storage->data + tensor__offset_of(x, xi) * ex, x->dtype);
            sum += v;
            wsum += wk;
        }
        if (none) tensor__store_f64(out + q * eo, c->out->dtype, v);
    }
    if (!none) tensor__store_f64(out, c->out->dtype, o->reduction == TENSOR_REDUCTION_SUM ? sum : sum / wsum);
    tensor__cache_free(cls);
    tensor__cache_free(w);
    return 0;
}
static int tensor__cpu_nll_loss(tensor__call *c) {
    tensor__ce_opts o = tensor__ce_default_opts();
    return tensor__nll_forward(c, &o);
}
static int tensor__cpu_nll_loss_ex(tensor__call *c) {
    tensor__ce_opts o = tensor__ce_opts_of(c->op, c->in, c->p, c->ip);
    return tensor__nll_forward(c, &o);
}

/* The checks of the class losses' options: a valid reduction, weight (NULL or a floating [C] on
   the input's device), label smoothing in [0, 1]. */
static bool tensor__check_ce_opts(const char *fn, const tensor *input, const tensor__ce_opts *o) {
    if (!tensor__check_reduction(fn, o->reduction)) return false;
    if (!(o->eps >= 0 && o->eps <= 1)) { tensor__fail(fn, "label_smoothing must be between 0.0 and 1.0, got %g", o->eps); return false; }
    const tensor *w = o->weight;
    if (!w) return true;
    int64_t C = input->ndim ? input->shape[input->ndim == 1 ? 0 : 1] : 0;
    tensor *ins[2] = {(tensor *)input, (tensor *)w};
    if (!tensor__same_device(fn, 2, ins)) return false;
    if (!tensor__is_float(w->dtype)) { tensor__fail(fn, "weight must be floating, got %s", tensor__dtype_names[w->dtype]); return false; }
    if (w->ndim != 1 || w->shape[0] != C) {
        tensor__fail(fn, "weight must be 1-D with %lld elements (the classes of input %s), got shape %s", (long long)C, tensor__shape_of(input), tensor__shape_of(w));
        return false;
    }
    return true;
}

/* The output of a class loss: 0-dim, or for reduction none the input's shape without its class dim. */
static tensor *tensor__ce_new_out(const char *fn, const tensor *input, tensor_reduction r, tensor_dtype dt) {
    int64_t shape[TENSOR_MAX_DIMS];
    int nd = 0;
    if (r == TENSOR_REDUCTION_NONE && input->ndim > 1)
        for (int d = 0; d < input->ndim; d++) if (d != 1) shape[nd++] = input->shape[d];
    return tensor__new(fn, nd, shape, dt, input->storage->device);
}

static tensor *tensor__nll_call(const char *fn, tensor_op op, tensor *input, tensor *target, const tensor__ce_opts *o) {
    TENSOR__CHECK_ARG(fn, input);
    TENSOR__CHECK_ARG(fn, target);
    tensor *ins[2] = {input, target};
    if (!tensor__same_device(fn, 2, ins) || !tensor__check_class_targets(fn, input, target) || !tensor__check_ce_opts(fn, input, o)) return NULL;
    tensor__call c;
    tensor__call_init(&c, op);
    c.n_in = op == TENSOR_OP_nll_loss_ex ? 3 : 2;
    c.in[0] = input;
    c.in[1] = target;
    c.in[2] = (tensor *)o->weight;
    c.ip[1] = o->ignore;
    c.ip[2] = o->reduction;
    c.p[0] = 0;
    c.out = tensor__ce_new_out(fn, input, o->reduction, input->dtype);
    return c.out ? tensor__dispatch(&c) : NULL;
}

TENSOR_API tensor *tensor_nll_loss(tensor *log_probs, tensor *targets) {
    tensor__ce_opts o = tensor__ce_default_opts();
    return tensor__nll_call("tensor_nll_loss", TENSOR_OP_nll_loss, log_probs, targets, &o);
}

/* F.nll_loss in full: -weight[t] input[n, t, ...] per target t (ignore_index: 0 and not
   counted); mean divides by the sum of the counted targets' weights. */
TENSOR_API tensor *tensor_nll_loss_ex(tensor *input, tensor *target, tensor *weight, int64_t ignore_index, tensor_reduction reduction) {
    tensor__ce_opts o = {weight, ignore_index, reduction, 0};
    return tensor__nll_call("tensor_nll_loss_ex", TENSOR_OP_nll_loss_ex, input, target, &o);
}

/* cross_entropy as one kernel: per row of logits along the class dim, lse = max + log(sum(e^(x -
   max))) (never a materialised softmax). With class weights w (1 without), label smoothing eps
   and C classes, a class-index row k has the loss
       (1 - eps) w[k] (lse - x[k]) + eps / C sum_c w[c] (lse - x[c])
   (ignore_index rows: 0, not counted), and a row of class probabilities p
       sum_c w[c] p'[c] (lse - x[c]),  p' = (1 - eps) p + eps / C.
   Reduction none keeps the row losses; sum adds them; mean divides the sum by the weights of the
   counted index targets (their number without weights), or by the rows for probabilities: PyTorch
   1.13's formulas (an all-ignored mean is NaN). Computed in double; f32 rows that are contiguous
   take the vector path for lse. The backward kernel below writes the gradient directly. */
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
    const double *w;          /* class weights (or NULL) */
    double eps;
    int cdim;
    int64_t C, rows, ignore;
    double *partial;          /* one per group of TENSOR__CE_GROUP rows */
    char *out;                /* reduction none: the row losses, contiguous (else NULL) */
    tensor_dtype od;
    bool fast;
} tensor__ce_task;

static void tensor__ce_groups(int64_t begin, int64_t end, void *vt) {
    const tensor__ce_task *t = (const tensor__ce_task *)vt;
    const tensor *x = t->x, *p = t->p ? t->p : t->x;
    int64_t ex = (int64_t)tensor__dtype_sizes[x->dtype], ep = (int64_t)tensor__dtype_sizes[p->dtype], eo = (int64_t)tensor__dtype_sizes[t->od];
    int64_t xs = x->strides[t->cdim] * ex, ps = p->strides[t->cdim] * ep, C = t->C;
    bool fast_rows = t->fast && x->dtype == TENSOR_F32 && (xs == 4 || C == 1);
    double eps = t->eps, ec = C > 0 ? eps / (double)C : 0;
    tensor__rows r;
    tensor__rows_init(&r, x, p, t->cdim);
    tensor__rows_seek(&r, begin * TENSOR__CE_GROUP);
    for (int64_t grp = begin; grp < end; grp++) {
        double sum = 0;
        int64_t q1 = (grp + 1) * TENSOR__CE_GROUP < t->rows ? (grp + 1) * TENSOR__CE_GROUP : t->rows;
        for (int64_t q = grp * TENSOR__CE_GROUP; q < q1; q++, tensor__rows_next(&r)) {
            int64_t k = t->cls ? t->cls[q] : 0;
            double l = 0;
            if (t->cls && k == t->ignore) {
                if (t->out) tensor__store_f64(t->out + q * eo, t->od, 0);
                continue;
            }
            const char *xr = (const char *)x->storage->data + r.off[0] * ex;
            double lse = NAN;
            if (fast_rows) {
                float m;
                double s = tensor__row_maxsumexp_f32(NULL, (const float *)xr, C, &m);
                if (s == s) lse = (double)m + log(s);
            }
            if (lse != lse) lse = tensor__ce_lse(xr, xs, x->dtype, C);
            if (t->cls) {
                l = (t->w ? t->w[k] : 1) * (lse - tensor__load_f64(xr + k * xs, x->dtype));
                if (eps > 0) {
                    double sm = 0;
                    for (int64_t c = 0; c < C; c++) sm += (t->w ? t->w[c] : 1) * (lse - tensor__load_f64(xr + c * xs, x->dtype));
                    l = (1 - eps) * l + ec * sm;
                }
            } else {
                const char *pr = (const char *)p->storage->data + r.off[1] * ep;
                for (int64_t c = 0; c < C; c++) {
                    double pv = tensor__load_f64(pr + c * ps, p->dtype);
                    if (eps > 0) pv = pv * (1 - eps) + ec;
                    l += (t->w ? t->w[c] : 1) * pv * (lse - tensor__load_f64(xr + c * xs, x->dtype));
                }
            }
            if (t->out) tensor__store_f64(t->out + q * eo, t->od, l);
            sum += l;
        }
        t->partial[grp] = sum;
    }
}

/* out: [] (mean, sum) or the rows' shape (none); call layout in >>loss's front-end below. */
static int tensor__ce_forward(tensor__call *c, const tensor__ce_opts *o) {
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
    k.eps = o->eps;
    k.ignore = o->ignore;
    k.fast = !tensor__reference_kernels;
    k.out = o->reduction == TENSOR_REDUCTION_NONE ? (char *)tensor__data(c->out) : NULL;
    k.od = c->out->dtype;
    int64_t count = k.C ? k.rows : 0; /* probabilities over no classes: 0 / 0 */
    int64_t *cls = NULL;
    double *w = NULL;
    if (!prob && !(cls = tensor__ce_classes(c->fn, t, k.C, o->ignore, &count))) return 1;
    if (!tensor__ce_weights(c->fn, o->weight, k.C, &w)) { tensor__cache_free(cls); return 1; }
    k.cls = cls;
    k.w = w;
    int64_t groups = (k.rows + TENSOR__CE_GROUP - 1) / TENSOR__CE_GROUP;
    k.partial = (double *)tensor__cache_alloc((size_t)(groups > 0 ? groups : 1) * sizeof(double));
    if (!k.partial) {
        tensor__cache_free(cls);
        tensor__cache_free(w);
        tensor__fail(c->fn, "out of memory allocating %zu bytes", (size_t)groups * sizeof(double));
        return 1;
    }
    if (k.C > 0) {
        if (k.fast) tensor__parallel_for(groups, tensor__grain(k.C) / TENSOR__CE_GROUP + 1, tensor__ce_groups, &k); /* C * 32 may overflow */
        else tensor__ce_groups(0, groups, &k);
    } else { /* no classes: only ignored rows got past the check, or probabilities over nothing */
        for (int64_t g = 0; g < groups; g++) k.partial[g] = 0;
        for (int64_t q = 0; k.out && q < k.rows; q++) tensor__store_f64(k.out + q * (int64_t)tensor__dtype_sizes[k.od], k.od, 0);
    }
    if (!k.out) {
        double sum = 0;
        for (int64_t g = 0; g < groups; g++) sum += k.partial[g];
        double div = o->reduction == TENSOR_REDUCTION_SUM ? 1 : prob ? (double)count : tensor__ce_divisor(cls, k.rows, o->ignore, w);
        tensor__store_f64(tensor__data(c->out), c->out->dtype, sum / div);
    }
    tensor__cache_free(cls);
    tensor__cache_free(w);
    tensor__cache_free(k.partial);
    return 0;
}
static int tensor__cpu_cross_entropy(tensor__call *c) {
    tensor__ce_opts o = tensor__ce_default_opts();
    return tensor__ce_forward(c, &o);
}
static int tensor__cpu_cross_entropy_ex(tensor__call *c) {
    tensor__ce_opts o = tensor__ce_opts_of(c->op, c->in, c->p, c->ip);
    return tensor__ce_forward(c, &o);
}

/* Call layout: in[0] logits, in[1] targets, in[2] weight (the _ex op; NULL: none), ip[0] 1 for
   probability targets, ip[1] ignore_index, ip[2] reduction, p[0] label smoothing. */
static tensor *tensor__ce_call(const char *fn, tensor_op op, tensor *logits, tensor *targets, const tensor__ce_opts *o) {
    TENSOR__CHECK_ARG(fn, logits);
    TENSOR__CHECK_ARG(fn, targets);
    tensor *ins[2] = {logits, targets};
    if (!tensor__same_device(fn, 2, ins)) return NULL;
    bool prob = tensor__is_float(targets->dtype);
    if (prob) {
        if (logits->ndim == 0) return tensor__fail(fn, "input must have at least 1 dim [C] or [N, C, ...], got a 0-dim tensor");
        if (!tensor__is_float(logits->dtype)) return tensor__fail(fn, "expected a floating input, got %s", tensor__dtype_names[logits->dtype]);
        if (!tensor__same_shape(logits, targets)) /* most often class numbers in a float tensor */
            return tensor__fail(fn, "%s targets of shape %s are neither class indices (those must be int64 or int32) nor class probabilities (those must have the input's shape %s)",
                                tensor__dtype_names[targets->dtype], tensor__shape_of(targets), tensor__shape_of(logits));
        if (o->ignore >= 0) return tensor__fail(fn, "ignore_index (%lld) is not supported for floating point (probability) targets", (long long)o->ignore);
    } else if (!tensor__check_class_targets(fn, logits, targets)) return NULL;
    if (!tensor__check_ce_opts(fn, logits, o)) return NULL;
    tensor__call c;
    tensor__call_init(&c, op);
    c.n_in = op == TENSOR_OP_cross_entropy_ex ? 3 : 2;
    c.in[0] = logits;
    c.in[1] = targets;
    c.in[2] = (tensor *)o->weight;
    c.ip[0] = prob;
    c.ip[1] = o->ignore;
    c.ip[2] = o->reduction;
    c.p[0] = o->eps;
    c.out = tensor__ce_new_out(fn, logits, o->reduction, prob ? (tensor_dtype)tensor__promotion[logits->dtype][targets->dtype] : logits->dtype);
    return c.out ? tensor__dispatch(&c) : NULL;
}

/* nll_loss(log_softmax(logits, class dim), targets); with floating targets of the logits' shape
   (class probabilities), -sum(targets * log_softmax) / (numel / C), as PyTorch. */
TENSOR_API tensor *tensor_cross_entropy(tensor *logits, tensor *targets) {
    tensor__ce_opts o = tensor__ce_default_opts();
    return tensor__ce_call("tensor_cross_entropy", TENSOR_OP_cross_entropy, logits, targets, &o);
}

/* F.cross_entropy in full (the formulas above the kernel). */
TENSOR_API tensor *tensor_cross_entropy_ex(tensor *input, tensor *target, tensor *weight, int64_t ignore_index, tensor_reduction reduction, double label_smoothing) {
    tensor__ce_opts o = {weight, ignore_index, reduction, label_smoothing};
    return tensor__ce_call("tensor_cross_entropy_ex", TENSOR_OP_cross_entropy_ex, input, target, &o);
}

/* The fused backward of cross_entropy (the derivative uses it when the backward pass is not
   recorded). With s the row's share of the output gradient (none: its own; sum: g; mean: g / the
   divisor), sm = softmax(x), a class-index row k gets
       gx = s ((1 - eps) w[k] (sm - onehot(k)) + eps / C (sum(w) sm - w))
   (ignored rows: 0), a row of probabilities gx = s (sm sum(w p') - w p') and
   gp = s (1 - eps) w (lse - x). */
typedef struct {
    const tensor *x, *p;
    tensor *gx, *gp;
    const int64_t *cls;
    const double *w, *gq;     /* class weights; per-row output gradients (reduction none); NULL: none */
    double scale, eps, wsum;  /* scale: s for reductions sum and mean; wsum: sum(w) (C without) */
    int cdim;
    int64_t C, ignore;
    bool fast;
} tensor__ce_bwd_task;

static void tensor__ce_bwd_rows(int64_t begin, int64_t end, void *vt) {
    const tensor__ce_bwd_task *t = (const tensor__ce_bwd_task *)vt;
    const tensor *x = t->x;
    tensor *gx = t->gx;
    int64_t ex = (int64_t)tensor__dtype_sizes[x->dtype], eg = (int64_t)tensor__dtype_sizes[gx->dtype], C = t->C;
    int64_t xs = x->strides[t->cdim] * ex, gs = gx->strides[t->cdim] * eg;
    bool fast_rows = t->fast && t->cls && !t->w && t->eps == 0 && x->dtype == TENSOR_F32 && gx->dtype == TENSOR_F32 && ((xs == 4 && gs == 4) || C == 1);
    double eps = t->eps, ec = eps / (double)C;
    tensor__rows r, rp; /* rp: the rows of p and gp */
    tensor__rows_init(&r, x, gx, t->cdim);
    tensor__rows_seek(&r, begin);
    tensor__rows_init(&rp, t->p ? t->p : x, t->gp ? t->gp : t->p ? t->p : x, t->cdim);
    tensor__rows_seek(&rp, begin);
    for (int64_t q = begin; q < end; q++, tensor__rows_next(&r), tensor__rows_next(&rp)) {
        const char *xr = (const char *)x->storage->data + r.off[0] * ex;
        char *gr = (char *)gx->storage->data + r.off[1] * eg;
        int64_t k = t->cls ? t->cls[q] : -1;
        double s = t->gq ? t->gq[q] : t->scale;
        if (t->cls && k == t->ignore) {
            for (int64_t c = 0; c < C; c++) tensor__store_f64(gr + c * gs, gx->dtype, 0);
            continue;
        }
        if (fast_rows) {
            float m, *g = (float *)gr;
            double sum = tensor__row_maxsumexp_f32(g, (const float *)xr, C, &m); /* g = e^(x - max) */
            if (sum == sum) {
                tensor__row_affine_f32(g, g, C, (float)(s / sum), 0.0f);
                g[k] -= (float)s;
                continue;
            }
        }
        double lse = tensor__ce_lse(xr, xs, x->dtype, C);
        if (t->cls) {
            double a = s * (1 - eps) * (t->w ? t->w[k] : 1), b = s * ec;
            for (int64_t c = 0; c < C; c++) {
                double sm = exp(tensor__load_f64(xr + c * xs, x->dtype) - lse), v = a * (sm - (c == k));
                if (eps > 0) v += b * (t->wsum * sm - (t->w ? t->w[c] : 1));
                tensor__store_f64(gr + c * gs, gx->dtype, v);
            }
            continue;
        }
        const tensor *p = t->p;
        int64_t ep = (int64_t)tensor__dtype_sizes[p->dtype], ps = p->strides[t->cdim] * ep;
        const char *pr = (const char *)p->storage->data + rp.off[0] * ep;
        double qsum = 0;
        for (int64_t c = 0; c < C; c++) {
            double pv = tensor__load_f64(pr + c * ps, p->dtype);
            qsum += (t->w ? t->w[c] : 1) * (eps > 0 ? pv * (1 - eps) + ec : pv);
        }
        for (int64_t c = 0; c < C; c++) {
            double xv = tensor__load_f64(xr + c * xs, x->dtype), pv = tensor__load_f64(pr + c * ps, p->dtype);
            double qv = (t->w ? t->w[c] : 1) * (eps > 0 ? pv * (1 - eps) + ec : pv);
            tensor__store_f64(gr + c * gs, gx->dtype, (exp(xv - lse) * qsum - qv) * s);
        }
        if (t->gp) {
            int64_t eq = (int64_t)tensor__dtype_sizes[t->gp->dtype], qs = t->gp->strides[t->cdim] * eq;
            char *qr = (char *)t->gp->storage->data + rp.off[1] * eq;
            for (int64_t c = 0; c < C; c++)
                tensor__store_f64(qr + c * qs, t->gp->dtype, s * (1 - eps) * (t->w ? t->w[c] : 1) * (lse - tensor__load_f64(xr + c * xs, x->dtype)));
        }
    }
}

/* Sets *gx (logits' shape and dtype) and, for probability targets, *gp (when gp is not NULL) for
   the loss gradient g (0-dim, or the rows' shape for reduction none). 0, or -1 after an error. */
static int tensor__cross_entropy_backward(const char *fn, tensor *x, tensor *targets, bool prob, const tensor__ce_opts *o, tensor *g, tensor **gx, tensor **gp) {
    if (!tensor__host_only(fn, x, "the backward of cross_entropy")) return -1;
    tensor__ce_bwd_task k;
    k.x = x;
    k.cdim = x->ndim == 1 ? 0 : 1;
    k.C = x->shape[k.cdim];
    k.eps = o->eps;
    k.ignore = o->ignore;
    int64_t rows = 1, count;
    for (int d = 0; d < x->ndim; d++) if (d != k.cdim) rows *= x->shape[d];
    count = k.C ? rows : 0;
    int64_t *cls = NULL;
    double *w = NULL, *gq = NULL;
    if (!prob && !(cls = tensor__ce_classes(fn, targets, k.C, o->ignore, &count))) return -1;
    if (!tensor__ce_weights(fn, o->weight, k.C, &w)) { tensor__cache_free(cls); return -1; }
    k.cls = cls;
    k.w = w;
    k.wsum = (double)k.C;
    if (w) { k.wsum = 0; for (int64_t c = 0; c < k.C; c++) k.wsum += w[c]; }
    k.p = prob ? targets : NULL;
    k.gx = tensor__new_like(fn, x, x->dtype);
    k.gp = prob && gp ? tensor__new_like(fn, targets, targets->dtype) : NULL;
    k.fast = !tensor__reference_kernels;
    k.scale = 0;
    if (o->reduction == TENSOR_REDUCTION_NONE) {
        gq = (double *)tensor__cache_alloc((size_t)(rows > 0 ? rows : 1) * sizeof(double));
        if (gq) {
            int64_t idx[TENSOR_MAX_DIMS] = {0}, eg = (int64_t)tensor__dtype_sizes[g->dtype];
            for (int64_t q = 0; q < rows; q++, tensor__next_index(g->ndim, g->shape, idx))
                gq[q] = tensor__load_f64((const char *)g->storage->data + tensor__offset_of(g, idx) * eg, g->dtype);
        } else tensor__fail(fn, "out of memory allocating %zu bytes", (size_t)rows * sizeof(double));
    } else {
        double div = o->reduction == TENSOR_REDUCTION_SUM ? 1 : prob ? (double)count : tensor__ce_divisor(cls, rows, o->ignore, w);
        k.scale = tensor__load_f64(tensor__data(g), g->dtype) / (div != 0 ? div : 1);
    }
    k.gq = gq;
    if (!k.gx || (prob && gp && !k.gp) || (o->reduction == TENSOR_REDUCTION_NONE && !gq)) {
        tensor_free(k.gx);
        tensor_free(k.gp);
        tensor__cache_free(cls);
        tensor__cache_free(w);
        tensor__cache_free(gq);
        return -1;
    }
    if (k.C > 0 && rows > 0) tensor__parallel_for(rows, tensor__grain(k.C), tensor__ce_bwd_rows, &k);
    tensor__cache_free(cls);
    tensor__cache_free(w);
    tensor__cache_free(gq);
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
/* The checks every two-operand loss makes: inputs given, on one device, shapes that broadcast
   (PyTorch warns on different shapes and broadcasts), and where `floating`, a floating result type
   (the losses of PyTorch's floating kernels; the others follow their formula's promotion). */
static bool tensor__check_loss2(const char *fn, tensor *a, tensor *b, tensor_reduction r, bool floating) {
    if (!a) { tensor__null_arg(fn, "input"); return false; }
    if (!b) { tensor__null_arg(fn, "target"); return false; }
    if (!tensor__check_reduction(fn, r)) return false;
    tensor *ins[2] = {a, b};
    if (!tensor__same_device(fn, 2, ins)) return false;
    if (floating && !tensor__is_float(tensor__result_type(2, ins))) {
        tensor__fail(fn, "expected floating inputs, got %s and %s", tensor__dtype_names[a->dtype], tensor__dtype_names[b->dtype]);
        return false;
    }
    int nd;
    int64_t shape[TENSOR_MAX_DIMS];
    return tensor__broadcast_shapes(fn, a->ndim, a->shape, b->ndim, b->shape, &nd, shape);
}

/* |input - target|. PyTorch's is that formula too: integers give an integer loss (summed in int64),
   and their mean is refused as PyTorch's mean refuses integers; bool is refused (subtracted). */
TENSOR_API tensor *tensor_l1_loss(tensor *input, tensor *target, tensor_reduction reduction) {
    const char *fn = "tensor_l1_loss";
    if (!tensor__check_loss2(fn, input, target, reduction, reduction == TENSOR_REDUCTION_MEAN)) return NULL;
    tensor *ins[2] = {input, target};
    if (!tensor__no_bool(fn, 2, ins)) return NULL;
    tensor__tmps s = {{0}, 0};
    tensor *l = tensor__tmp(&s, tensor_abs(tensor__tmp(&s, tensor_sub(input, target))));
    tensor *r = tensor__reduce_loss(&s, l, reduction);
    tensor__tmps_free(&s);
    return r;
}

/* z = |input - target|: z < k ? 0.5 z^2 / k * q : (z - 0.5 k) * q; smooth_l1 has k = beta, q = 1
   (beta 0: the l1 loss), huber k = delta, q = delta. */
static tensor *tensor__smooth_l1(const char *fn, tensor *input, tensor *target, tensor_reduction reduction, double k, bool huber) {
    if (!tensor__check_loss2(fn, input, target, reduction, true)) return NULL;
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
   (PyTorch's 'mean'; its 'batchmean' is the sum divided by the batch size). Integer operands follow
   PyTorch's formula: exp and xlogy make it f32; bool is refused where it subtracts one (target -
   input, or xlogy(t, t) - t input when that product is bool). */
TENSOR_API tensor *tensor_kl_div(tensor *input, tensor *target, tensor_reduction reduction, bool log_target) {
    const char *fn = "tensor_kl_div";
    if (!tensor__check_loss2(fn, input, target, reduction, false)) return NULL;
    tensor *ins[2] = {input, target};
    if (log_target ? !tensor__no_bool(fn, 2, ins) : input->dtype == TENSOR_BOOL && target->dtype == TENSOR_BOOL && !tensor__no_bool(fn, 1, ins)) return NULL;
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
    if (!tensor__check_loss2(fn, input, target, reduction, true)) return NULL;
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
   Stirling's term target log(target) - target + 0.5 log(2 pi target) where target > 1. Integer
   operands give f32 (exp, log and + eps promote, as in PyTorch's formula); bool is refused where
   the formula subtracts it: input without log_input, target when full, a bool product. */
TENSOR_API tensor *tensor_poisson_nll_loss(tensor *input, tensor *target, bool log_input, bool full, double eps, tensor_reduction reduction) {
    const char *fn = "tensor_poisson_nll_loss";
    if (!tensor__check_loss2(fn, input, target, reduction, false)) return NULL;
    tensor *ins[2] = {input, target};
    if ((log_input ? input->dtype == TENSOR_BOOL && target->dtype == TENSOR_BOOL : input->dtype == TENSOR_BOOL) && !tensor__no_bool(fn, 1, ins)) return NULL;
    if (full && !tensor__no_bool(fn, 1, &ins[1])) return NULL;
    tensor__tmps s = {{0}, 0};
    tensor *l;
    if (log_input) l = tensor__tmp(&s, tensor_sub(tensor__tmp(&s, tensor_exp(input)), tensor__tmp(&s, tensor_mul(target, input))));
    else l = tensor__tmp(&s, tensor_sub(input, tensor__tmp(&s, tensor_mul(target, tensor__tmp(&s, tensor_log(tensor__tmp(&s, tensor_add_scalar(tensor__as_float(&s, input), eps))))))));
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
   input's without its last dim, or that with a last dim of 1; a negative var is an error. As in
   PyTorch, var must be floating (it is clamped in place), input and target may be integers (not
   bool: they are subtracted). */
TENSOR_API tensor *tensor_gaussian_nll_loss(tensor *input, tensor *target, tensor *var, bool full, double eps, tensor_reduction reduction) {
    const char *fn = "tensor_gaussian_nll_loss";
    if (!tensor__check_loss2(fn, input, target, reduction, false)) return NULL;
    TENSOR__CHECK_ARG(fn, var);
    tensor *ins[2] = {input, var}, *it[2] = {input, target};
    if (!tensor__same_device(fn, 2, ins) || !tensor__no_bool(fn, 2, it)) return NULL;
    if (!tensor__is_float(var->dtype)) return tensor__fail(fn, "var must be a floating tensor, got %s", tensor__dtype_names[var->dtype]);
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

/* The checks of the losses of two inputs and a +-1 target (margin_ranking, cosine_embedding):
   any dtypes (PyTorch's formulas promote integers to f32 where they meet a float). */
static bool tensor__check_loss3(const char *fn, tensor *a, tensor *b, tensor *y, tensor_reduction r) {
    if (!a) { tensor__null_arg(fn, "input1"); return false; }
    if (!b) { tensor__null_arg(fn, "input2"); return false; }
    if (!y) { tensor__null_arg(fn, "target"); return false; }
    if (!tensor__check_reduction(fn, r)) return false;
    tensor *ins[3] = {a, b, y};
    return tensor__same_device(fn, 3, ins);
}
/* A +-1 target compared with -1 and 1: a bool one as int64 (PyTorch compares bool with an integer
   scalar in int64, so true is never -1; x == -1 of a bool x would wrap -1 to true). */
static tensor *tensor__sign_target(tensor__tmps *s, tensor *y) {
    return y && y->dtype == TENSOR_BOOL ? tensor__tmp(s, tensor_to_dtype(y, TENSOR_I64)) : y;
}

/* max(0, -target (input1 - input2) + margin); all three of one rank, broadcast. Integers: the
   product in their promoted dtype, then f32 from + margin (PyTorch's); bool refused (negated). */
TENSOR_API tensor *tensor_margin_ranking_loss(tensor *input1, tensor *input2, tensor *target, double margin, tensor_reduction reduction) {
    const char *fn = "tensor_margin_ranking_loss";
    if (!tensor__check_loss3(fn, input1, input2, target, reduction)) return NULL;
    tensor *ins[3] = {input1, input2, target};
    if (!tensor__no_bool(fn, 3, ins)) return NULL;
    if (input1->ndim != input2->ndim || input1->ndim != target->ndim)
        return tensor__fail(fn, "all input tensors should have the same number of dims, got shapes %s, %s and %s", tensor__shape_of(input1),
                            tensor__shape_of(input2), tensor__shape_of(target));
    tensor__tmps s = {{0}, 0};
    tensor *d = tensor__tmp(&s, tensor_mul(tensor__tmp(&s, tensor_neg(target)), tensor__tmp(&s, tensor_sub(input1, input2))));
    tensor *l = tensor__tmp(&s, tensor_clamp(tensor__tmp(&s, tensor_add_scalar(tensor__as_float(&s, d), margin)), 0, NAN));
    tensor *r = tensor__reduce_loss(&s, l, reduction);
    tensor__tmps_free(&s);
    return r;
}

/* input where target != -1, plus max(0, margin - input) where target != 1 (PyTorch's; +-1 targets
   pick one of the two). An integer input gives f32 (margin - input is a float); bool is refused. */
TENSOR_API tensor *tensor_hinge_embedding_loss(tensor *input, tensor *target, double margin, tensor_reduction reduction) {
    const char *fn = "tensor_hinge_embedding_loss";
    if (!tensor__check_loss2(fn, input, target, reduction, false) || !tensor__no_bool(fn, 1, &input)) return NULL;
    tensor__tmps s = {{0}, 0};
    target = tensor__sign_target(&s, target);
    tensor *hinge = tensor__tmp(&s, tensor_clamp(tensor__tmp(&s, tensor_add_scalar(tensor__tmp(&s, tensor_neg(tensor__as_float(&s, input))), margin)), 0, NAN));
    tensor *lm = tensor__tmp(&s, tensor_masked_fill(hinge, tensor__tmp(&s, tensor__op_scalar(TENSOR_OP_eq, target, 1)), 0));
    tensor *ls = tensor__tmp(&s, tensor_masked_fill(input, tensor__tmp(&s, tensor__op_scalar(TENSOR_OP_eq, target, -1)), 0));
    tensor *l = tensor__tmp(&s, tensor_add(lm, ls));
    tensor *r = tensor__reduce_loss(&s, l, reduction);
    tensor__tmps_free(&s);
    return r;
}

/* log(1 + exp(-target input)), as softplus (stable for large |input|). Integers: -input target in
   their dtype, then f32 (PyTorch's exp); a bool input is refused (negated). */
TENSOR_API tensor *tensor_soft_margin_loss(tensor *input, tensor *target, tensor_reduction reduction) {
    const char *fn = "tensor_soft_margin_loss";
    if (!tensor__check_loss2(fn, input, target, reduction, false) || !tensor__no_bool(fn, 1, &input)) return NULL;
    tensor__tmps s = {{0}, 0};
    tensor *l = tensor__tmp(&s, tensor_softplus(tensor__as_float(&s, tensor__tmp(&s, tensor_neg(tensor__tmp(&s, tensor_mul(input, target)))))));
    tensor *r = tensor__reduce_loss(&s, l, reduction);
    tensor__tmps_free(&s);
    return r;
}

/* -(target logsigmoid(input) + (1 - target) logsigmoid(-input)) (times weight, NULL: none),
   averaged over the last (class) dim: one loss per sample before the reduction. */
TENSOR_API tensor *tensor_multilabel_soft_margin_loss(tensor *input, tensor *target, tensor *weight, tensor_reduction reduction) {
    const char *fn = "tensor_multilabel_soft_margin_loss";
    if (!tensor__check_loss2(fn, input, target, reduction, true)) return NULL;
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
   margin) where it is -1, 0 elsewhere. Integer and bool inputs: the sums in int64 (PyTorch's),
   f32 from + 1e-12 on. */
TENSOR_API tensor *tensor_cosine_embedding_loss(tensor *input1, tensor *input2, tensor *target, double margin, tensor_reduction reduction) {
    const char *fn = "tensor_cosine_embedding_loss";
    if (!tensor__check_loss3(fn, input1, input2, target, reduction)) return NULL;
    if (target->ndim > 1) return tensor__fail(fn, "0-D or 1-D target tensor expected, multi-target not supported (got shape %s)", tensor__shape_of(target));
    if (input1->ndim != target->ndim + 1 || input2->ndim != target->ndim + 1)
        return tensor__fail(fn, "a %d-D target expects %d-D inputs, got shapes %s and %s", target->ndim, target->ndim + 1, tensor__shape_of(input1), tensor__shape_of(input2));
    int dim = target->ndim;
    tensor__tmps s = {{0}, 0};
    target = tensor__sign_target(&s, target);
    tensor *prod = tensor__tmp(&s, tensor_sum(tensor__tmp(&s, tensor_mul(input1, input2)), dim, false));
    tensor *m1 = tensor__tmp(&s, tensor_add_scalar(tensor__as_float(&s, tensor__tmp(&s, tensor_sum(tensor__tmp(&s, tensor_mul(input1, input1)), dim, false))), 1e-12));
    tensor *m2 = tensor__tmp(&s, tensor_add_scalar(tensor__as_float(&s, tensor__tmp(&s, tensor_sum(tensor__tmp(&s, tensor_mul(input2, input2)), dim, false))), 1e-12));
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
   swap: the smaller of d(anchor, negative) and d(positive, negative). Integers give f32, bool is
   refused (pairwise_distance's rules). */
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
    if (!tensor__same_device(fn, 3, ins) || !tensor__no_bool(fn, 3, ins)) return NULL;
    tensor__tmps s = {{0}, 0};
    tensor *dp = tensor__tmp(&s, tensor_pairwise_distance(anchor, positive, p, eps, false));
    tensor *dn = tensor__tmp(&s, tensor_pairwise_distance(anchor, negative, p, eps, false));
    if (swap) dn = tensor__tmp(&s, tensor_minimum(dn, tensor__tmp(&s, tensor_pairwise_distance(positive, negative, p, eps, false))));
    tensor *l = tensor__tmp(&s, tensor_clamp(tensor__tmp(&s, tensor_add_scalar(tensor__tmp(&s, tensor_sub(dp, dn)), margin)), 0, NAN));
    tensor *r = tensor__reduce_loss(&s, l, reduction);
    tensor__tmps_free(&s);
    return r;
}

/* Per sample n of input [N, C] (or [C], or 0-d: one sample): sum over i != y of
   max(0, margin - x[y] + x[i])^p (times weight[y]; NULL: none) / C, y = target[n]; p 1 or 2. As
   PyTorch's multi_margin_loss_shape_check: the target has at most one dim and one element per
   sample ([1] or 0-d for one), the weight C elements; no reduction gives [N] for a target with a
   dim, a 0-d loss for a 0-d one. */
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
    int64_t C = input->ndim ? input->shape[input->ndim - 1] : 1, rows = input->ndim == 2 ? input->shape[0] : 1;
    if (input->ndim > 2 || C == 0)
        return tensor__fail(fn, "expected a non-empty vector or matrix [C] or [N, C] (N may be 0) or a 0-dim input, got shape %s", tensor__shape_of(input));
    if (target->ndim > 1 || tensor__numel_of(target->ndim, target->shape) != rows)
        return tensor__fail(fn, "inconsistent target size: expected %lld element%s in at most one dim (input %s), got shape %s", (long long)rows, rows == 1 ? "" : "s",
                            tensor__shape_of(input), tensor__shape_of(target));
    if (weight && (weight->ndim > 1 || tensor__numel_of(weight->ndim, weight->shape) != C))
        return tensor__fail(fn, "weight must have %lld elements in at most one dim (the classes of input %s), got shape %s", (long long)C, tensor__shape_of(input), tensor__shape_of(weight));
    int64_t xs[2] = {rows, C}, ts[2] = {rows, 1};
    tensor__tmps s = {{0}, 0};
    if (weight && !(weight = tensor__tmp(&s, tensor_reshape(weight, 1, &C)))) { tensor__tmps_free(&s); return NULL; }
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
    if (l && target->ndim == 0) l = tensor__tmp(&s, tensor_reshape(l, 0, NULL));
    tensor *r = tensor__reduce_loss(&s, l, reduction);
    tensor__tmps_free(&s);
    return r;
}

/* ---- ctc_loss: connectionist temporal classification (Graves et al. 2006), PyTorch's CPU
   algorithm: per batch element b, with l' = the target with blanks around and between its labels
   (2 L + 1 states), the forward variables in log space
       alpha[0][0] = lp[0][blank], alpha[0][1] = lp[0][l'1],
       alpha[t][s] = logsumexp(alpha[t-1][s], alpha[t-1][s-1], alpha[t-1][s-2] if l's != l's-2) + lp[t][l's],
   the loss -logsumexp(alpha[T_b-1][2L], alpha[T_b-1][2L-1]) (inf when no alignment fits); the
   backward variables beta likewise from the end, and the gradient PyTorch's ctc_loss_backward
   gives: exp(lp[t][c]) - exp(logsumexp over the states s of label c of (alpha + beta)[t][s] + loss
   - lp[t][c]), times the output gradient, 0 past T_b (the gradient of the logits when lp is their
   log_softmax: PyTorch's own convention). Threaded over the batch.
   Call layout: in[0] log_probs [T, N, C], in[1] targets ([N, S] padded, or 1-D concatenated), in[2]
   input_lengths and in[3] target_lengths (int64 [N], contiguous, on log_probs' device), ip[0]
   blank, ip[1] reduction, ip[2] zero_infinity, ip[3] 1 for concatenated targets, ip[4] the longest
   target. */
typedef struct {
    const tensor *lp, *tg;
    const int64_t *il, *tl;
    int64_t blank, T, C;
    bool concat, zero_inf;
    double *nll;          /* forward: [N] the losses */
    const double *gb;     /* backward: [N] the output gradient of each loss (scaled by the reduction) */
    tensor *grad;         /* backward: [T, N, C], contiguous */
    int *status;          /* [N] 0, 1 out of memory, 2 a target out of range */
    int64_t *bad;         /* [N] that target */
} tensor__ctc_task;

static double tensor__ctc_lp(const tensor__ctc_task *k, int64_t t, int64_t b, int64_t c) {
    const tensor *lp = k->lp;
    return tensor__load_f64((const char *)lp->storage->data + (lp->offset + t * lp->strides[0] + b * lp->strides[1] + c * lp->strides[2]) *
                                                                   (int64_t)tensor__dtype_sizes[lp->dtype], lp->dtype);
}
/* log(e^a + e^b + e^c) as PyTorch writes it (a max of -inf counts as 0). */
static double tensor__ctc_lse3(double a, double b, double c) {
    double m = a > b ? a : b;
    if (c > m) m = c;
    if (m == -INFINITY) m = 0;
    return log(exp(a - m) + exp(b - m) + exp(c - m)) + m;
}

/* One batch element: its loss in k->nll[b] (forward), or its gradient rows (k->grad non-NULL). */
static void tensor__ctc_one(const tensor__ctc_task *k, int64_t b) {
    int64_t Tb = k->il[b], L = k->tl[b], S = 2 * L + 1, C = k->C, off = 0;
    if (k->concat) for (int64_t j = 0; j < b; j++) off += k->tl[j];
    const tensor *tg = k->tg;
    int64_t et = (int64_t)tensor__dtype_sizes[tg->dtype];
    size_t need = (size_t)L * sizeof(int64_t) + (size_t)(Tb * S) * sizeof(double) * (k->grad ? 2 : 1) + (size_t)(k->grad ? Tb * C : 0) * sizeof(double);
    char *mem = (char *)tensor__alloc_aligned(need > 0 ? need : 1);
    if (!mem) { k->status[b] = 1; return; }
    int64_t *lab = (int64_t *)mem;
    double *alpha = (double *)(lab + L), *beta = alpha + Tb * S, *lg = beta + Tb * S;
    for (int64_t i = 0; i < L; i++) {
        int64_t o = k->concat ? tg->offset + (off + i) * tg->strides[0] : tg->offset + b * tg->strides[0] + i * tg->strides[1];
        lab[i] = tensor__load_i64((const char *)tg->storage->data + o * et, tg->dtype);
        if (lab[i] < 0 || lab[i] >= C) { k->status[b] = 2; k->bad[b] = lab[i]; tensor__free_aligned(mem); return; }
    }
#define TENSOR__CTC_LABEL(s) ((s) % 2 == 0 ? k->blank : lab[(s) / 2])
    double nll;
    if (Tb == 0) nll = L == 0 ? 0 : INFINITY; /* no frames: only the empty target fits */
    else {
        for (int64_t i = 0; i < Tb * S; i++) alpha[i] = -INFINITY;
        alpha[0] = tensor__ctc_lp(k, 0, b, k->blank);
        if (L > 0) alpha[1] = tensor__ctc_lp(k, 0, b, lab[0]);
        for (int64_t t = 1; t < Tb; t++)
            for (int64_t s = 0; s < S; s++) {
                int64_t cur = TENSOR__CTC_LABEL(s);
                const double *prev = alpha + (t - 1) * S;
                double a2 = s > 0 ? prev[s - 1] : -INFINITY, a3 = s > 1 && TENSOR__CTC_LABEL(s - 2) != cur ? prev[s - 2] : -INFINITY;
                alpha[t * S + s] = tensor__ctc_lse3(prev[s], a2, a3) + tensor__ctc_lp(k, t, b, cur);
            }
        const double *last = alpha + (Tb - 1) * S;
        nll = -tensor__ctc_lse3(last[S - 1], L > 0 ? last[S - 2] : -INFINITY, -INFINITY);
    }
    if (!k->grad) {
        k->nll[b] = nll;
        tensor__free_aligned(mem);
        return;
    }
    /* the gradient rows of b: [t][b][:] of the contiguous [T, N, C] grad */
    tensor *gt = k->grad;
    int64_t N = gt->shape[1], eg = (int64_t)tensor__dtype_sizes[gt->dtype];
    double gr = k->zero_inf && nll == INFINITY ? 0 : k->gb[b]; /* zero_infinity: no gradient either */
    for (int64_t t = 0; t < k->T; t++)
        for (int64_t c = 0; c < C; c++) tensor__store_f64((char *)tensor__data(gt) + ((t * N + b) * C + c) * eg, gt->dtype, 0);
    if (Tb == 0 || gr == 0) { tensor__free_aligned(mem); return; }
    for (int64_t i = 0; i < Tb * S; i++) beta[i] = -INFINITY;
    for (int64_t i = 0; i < Tb * C; i++) lg[i] = -INFINITY;
    int64_t t1 = Tb - 1;
    beta[t1 * S + S - 1] = tensor__ctc_lp(k, t1, b, k->blank);
    lg[t1 * C + k->blank] = alpha[t1 * S + S - 1] + beta[t1 * S + S - 1];
    if (L > 0) {
        beta[t1 * S + S - 2] = tensor__ctc_lp(k, t1, b, lab[L - 1]);
        lg[t1 * C + lab[L - 1]] = alpha[t1 * S + S - 2] + beta[t1 * S + S - 2];
    }
    for (int64_t t = Tb - 2; t >= 0; t--)
        for (int64_t s = S - 1; s >= 0; s--) {
            int64_t cur = TENSOR__CTC_LABEL(s);
            const double *next = beta + (t + 1) * S;
            double b2 = s < S - 1 ? next[s + 1] : -INFINITY, b3 = s < S - 2 && TENSOR__CTC_LABEL(s + 2) != cur ? next[s + 2] : -INFINITY;
            double v = tensor__ctc_lse3(next[s], b2, b3) + tensor__ctc_lp(k, t, b, cur);
            beta[t * S + s] = v;
            double ab = alpha[t * S + s] + v, *acc = &lg[t * C + cur];
            if (*acc == -INFINITY) *acc = ab;
            else {
                double m = *acc > ab ? *acc : ab;
                *acc = log(exp(*acc - m) + exp(ab - m)) + m;
            }
        }
#undef TENSOR__CTC_LABEL
    for (int64_t t = 0; t < Tb; t++)
        for (int64_t c = 0; c < C; c++) {
            double lpv = tensor__ctc_lp(k, t, b, c);
            tensor__store_f64((char *)tensor__data(gt) + ((t * N + b) * C + c) * eg, gt->dtype, (exp(lpv) - exp(lg[t * C + c] + nll - lpv)) * gr);
        }
    tensor__free_aligned(mem);
}
static void tensor__ctc_batch(int64_t begin, int64_t end, void *vk) {
    for (int64_t b = begin; b < end; b++) tensor__ctc_one((const tensor__ctc_task *)vk, b);
}

/* Runs the task over the N batch elements; 0, or 1 after an error (reported for fn). */
static int tensor__ctc_run(const char *fn, tensor__ctc_task *k, int64_t N, int64_t smax) {
    k->status = (int *)tensor__cache_alloc((size_t)(N > 0 ? N : 1) * sizeof(int));
    k->bad = (int64_t *)tensor__cache_alloc((size_t)(N > 0 ? N : 1) * sizeof(int64_t));
    if (!k->status || !k->bad) {
        tensor__cache_free(k->status);
        tensor__cache_free(k->bad);
        tensor__fail(fn, "out of memory");
        return 1;
    }
    for (int64_t b = 0; b < N; b++) k->status[b] = 0;
    tensor__parallel_for(N, tensor__grain(k->T * (2 * smax + 1 + k->C)), tensor__ctc_batch, k);
    int rc = 0;
    for (int64_t b = 0; b < N && !rc; b++) {
        if (k->status[b] == 1) rc = (tensor__fail(fn, "out of memory"), 1);
        else if (k->status[b] == 2)
            rc = (tensor__fail(fn, "target %lld of batch element %lld is out of range for %lld classes", (long long)k->bad[b], (long long)b, (long long)k->C), 1);
    }
    tensor__cache_free(k->status);
    tensor__cache_free(k->bad);
    return rc;
}
static void tensor__ctc_task_init(tensor__ctc_task *k, tensor *const *in, const int64_t *ip) {
    memset(k, 0, sizeof *k);
    k->lp = in[0];
    k->tg = in[1];
    k->il = (const int64_t *)tensor__data(in[2]);
    k->tl = (const int64_t *)tensor__data(in[3]);
    k->blank = ip[0];
    k->concat = ip[3] != 0;
    k->zero_inf = ip[2] != 0;
    k->T = in[0]->shape[0];
    k->C = in[0]->shape[2];
}

/* out: [N] (none) or [] */
static int tensor__cpu_ctc_loss(tensor__call *c) {
    tensor__ctc_task k;
    tensor__ctc_task_init(&k, c->in, c->ip);
    int64_t N = c->in[0]->shape[1];
    k.nll = (double *)tensor__cache_alloc((size_t)(N > 0 ? N : 1) * sizeof(double));
    if (!k.nll) { tensor__fail(c->fn, "out of memory"); return 1; }
    if (tensor__ctc_run(c->fn, &k, N, c->ip[4])) { tensor__cache_free(k.nll); return 1; }
    tensor_reduction r = (tensor_reduction)c->ip[1];
    double sum = 0;
    for (int64_t b = 0; b < N; b++) {
        double l = k.nll[b];
        if (c->ip[2] && l == INFINITY) l = 0; /* zero_infinity */
        if (r == TENSOR_REDUCTION_NONE) tensor__store_f64((char *)tensor__data(c->out) + b * (int64_t)tensor__dtype_sizes[c->out->dtype], c->out->dtype, l);
        else sum += r == TENSOR_REDUCTION_MEAN ? l / (double)(k.tl[b] > 1 ? k.tl[b] : 1) : l;
    }
    if (r == TENSOR_REDUCTION_MEAN) sum /= (double)N;
    if (r != TENSOR_REDUCTION_NONE) tensor__store_f64(tensor__data(c->out), c->out->dtype, sum);
    tensor__cache_free(k.nll);
    return 0;
}

/* The gradient of log_probs (in = the forward's saved inputs, ip its parameters) for the output
   gradient g ([N] or []); NULL after an error. */
static tensor *tensor__ctc_backward(const char *fn, tensor *const *in, const int64_t *ip, tensor *g) {
    if (!tensor__host_only(fn, in[0], "the backward of ctc_loss")) return NULL;
    tensor__ctc_task k;
    tensor__ctc_task_init(&k, in, ip);
    int64_t N = in[0]->shape[1];
    tensor_reduction r = (tensor_reduction)ip[1];
    double *gb = (double *)tensor__cache_alloc((size_t)(N > 0 ? N : 1) * sizeof(double));
    if (!gb) return tensor__fail(fn, "out of memory");
    int64_t idx[TENSOR_MAX_DIMS] = {0}, eg = (int64_t)tensor__dtype_sizes[g->dtype];
    for (int64_t b = 0; b < N; b++) {
        double gv = tensor__load_f64((const char *)g->storage->data + tensor__offset_of(g, idx) * eg, g->dtype);
        if (r == TENSOR_REDUCTION_NONE) tensor__next_index(g->ndim, g->shape, idx);
        else if (r == TENSOR_REDUCTION_MEAN) gv /= (double)(k.tl[b] > 1 ? k.tl[b] : 1) * (double)N;
        gb[b] = gv;
    }
    k.gb = gb;
    k.grad = tensor__new(fn, 3, in[0]->shape, in[0]->dtype, TENSOR_CPU);
    if (!k.grad || tensor__ctc_run(fn, &k, N, ip[4])) { tensor_free(k.grad); tensor__cache_free(gb); return NULL; }
    tensor__cache_free(gb);
    return k.grad;
}

/* The lengths as a CPU int64 contiguous copy of n elements (ndim <= 1); NULL after an error. */
static tensor *tensor__ctc_lengths(const char *fn, tensor *t, const char *what, int64_t n) {
    if (!tensor__is_int(t->dtype)) return tensor__fail(fn, "%s must be an integer tensor, got %s", what, tensor__dtype_names[t->dtype]);
    if (t->ndim > 1 || tensor__numel_of(t->ndim, t->shape) != n)
        return tensor__fail(fn, "%s must have %lld element%s (one per batch element), got shape %s", what, (long long)n, n == 1 ? "" : "s", tensor__shape_of(t));
    tensor *h = t->storage->device == TENSOR_CPU ? tensor__alias(fn, t) : tensor_to_device(t, TENSOR_CPU);
    tensor *d = h ? tensor_to_dtype(h, TENSOR_I64) : NULL;
    tensor *v = d ? tensor_reshape(d, 1, &n) : NULL;
    tensor *r = v ? tensor_contiguous(v) : NULL;
    tensor_free(h);
    tensor_free(d);
    tensor_free(v);
    return r;
}

/* F.ctc_loss: log_probs [T, N, C] (or [T, C] unbatched), targets padded [N, S] or concatenated
   1-D (the batch's targets one after another; unbatched: [S]), input_lengths and target_lengths
   integer tensors of N elements (unbatched: one). Mean divides each loss by its target length
   (at least 1) and averages over the batch; zero_infinity turns the infinite losses (no
   alignment fits) and their gradients to 0. The gradient is PyTorch's (see the kernel). */
TENSOR_API tensor *tensor_ctc_loss(tensor *log_probs, tensor *targets, tensor *input_lengths, tensor *target_lengths, int64_t blank, tensor_reduction reduction,
                                   bool zero_infinity) {
    const char *fn = "tensor_ctc_loss";
    TENSOR__CHECK_ARG(fn, log_probs);
    TENSOR__CHECK_ARG(fn, targets);
    TENSOR__CHECK_ARG(fn, input_lengths);
    TENSOR__CHECK_ARG(fn, target_lengths);
    if (!tensor__check_reduction(fn, reduction)) return NULL;
    tensor *ins[4] = {log_probs, targets, input_lengths, target_lengths};
    if (!tensor__same_device(fn, 4, ins)) return NULL;
    if (!tensor__is_float(log_probs->dtype)) return tensor__fail(fn, "log_probs must be floating, got %s", tensor__dtype_names[log_probs->dtype]);
    if (log_probs->ndim != 3 && log_probs->ndim != 2)
        return tensor__fail(fn, "log_probs must be [T, N, C] or unbatched [T, C], got shape %s", tensor__shape_of(log_probs));
    if (!tensor__is_int(targets->dtype)) return tensor__fail(fn, "targets must be an integer tensor, got %s", tensor__dtype_names[targets->dtype]);
    bool unbatched = log_probs->ndim == 2;
    int64_t T = log_probs->shape[0], N = unbatched ? 1 : log_probs->shape[1], C = log_probs->shape[log_probs->ndim - 1];
    bool concat = !unbatched && targets->ndim == 1;
    if (unbatched ? targets->ndim != 1 : targets->ndim != 1 && (targets->ndim != 2 || targets->shape[0] != N))
        return tensor__fail(fn, "targets of shape %s do not fit log_probs %s (expected %s)", tensor__shape_of(targets), tensor__shape_of(log_probs),
                            unbatched ? "[S]" : "[N, S] padded or 1-D concatenated");
    if (blank < 0 || blank >= C) return tensor__fail(fn, "blank must be in label range [0, %lld), got %lld", (long long)C, (long long)blank);
    tensor *il = tensor__ctc_lengths(fn, input_lengths, "input_lengths", N);
    tensor *tl = il ? tensor__ctc_lengths(fn, target_lengths, "target_lengths", N) : NULL;
    tensor *r = NULL, *lp3 = NULL, *tg2 = NULL, *ild = NULL, *tld = NULL;
    if (!tl) goto done;
    {
        const int64_t *ilv = (const int64_t *)tensor__data(il), *tlv = (const int64_t *)tensor__data(tl);
        int64_t smax = 0, total = 0, S = concat ? tensor__numel_of(targets->ndim, targets->shape) : targets->shape[targets->ndim - 1];
        for (int64_t b = 0; b < N; b++) {
            if (ilv[b] < 0 || ilv[b] > T) { tensor__fail(fn, "input_lengths must be in [0, %lld] (the frames of log_probs), got %lld", (long long)T, (long long)ilv[b]); goto done; }
            if (tlv[b] < 0 || (!concat && tlv[b] > S)) {
                tensor__fail(fn, "target_lengths must be in [0, %lld] (the padded targets' length), got %lld", (long long)S, (long long)tlv[b]);
                goto done;
            }
            if (tlv[b] > smax) smax = tlv[b];
            if (concat && tlv[b] > S - total) { /* checked before the sum, which could overflow (total <= S) */
                tensor__fail(fn, "the target_lengths add up to more than the %lld concatenated targets (%lld at batch element %lld)", (long long)S, (long long)tlv[b], (long long)b);
                goto done;
            }
            total += tlv[b];
        }
        tensor_device dev = log_probs->storage->device;
        ild = dev == TENSOR_CPU ? tensor__alias(fn, il) : tensor_to_device(il, dev);
        tld = dev == TENSOR_CPU ? tensor__alias(fn, tl) : tensor_to_device(tl, dev);
        lp3 = unbatched ? tensor_unsqueeze(log_probs, 1) : tensor__alias(fn, log_probs);
        tg2 = unbatched ? tensor_unsqueeze(targets, 0) : tensor__alias(fn, targets);
        if (!ild || !tld || !lp3 || !tg2) goto done;
        tensor__call c;
        tensor__call_init(&c, TENSOR_OP_ctc_loss);
        c.n_in = 4;
        c.in[0] = lp3;
        c.in[1] = tg2;
        c.in[2] = ild;
        c.in[3] = tld;
        c.ip[0] = blank;
        c.ip[1] = reduction;
        c.ip[2] = zero_infinity;
        c.ip[3] = concat;
        c.ip[4] = smax;
        c.out = tensor__new(fn, reduction == TENSOR_REDUCTION_NONE ? 1 : 0, &N, log_probs->dtype, dev);
        r = c.out ? tensor__dispatch(&c) : NULL;
        if (r && unbatched && reduction == TENSOR_REDUCTION_NONE) {
            tensor *s = tensor_reshape(r, 0, NULL);
            tensor_free(r);
            r = s;
        }
    }
done:
    tensor_free(il);
    tensor_free(tl);
    tensor_free(ild);
    tensor_free(tld);
    tensor_free(lp3);
    tensor_free(tg2);
    return r;
}
