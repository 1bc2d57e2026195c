// >>init ---------------------------------------------------------------------------------------
/* In-place initializers (torch.nn.init): they write the storage directly, like PyTorch's under
   no_grad, so they work on leaves that require grad. */
/* t = lo + scale * U[0, 1) (or lo + scale * N(0, 1)), in place. */
static tensor *tensor__init_fill(const char *fn, tensor *t, double lo, double scale, bool normal) {
    TENSOR__CHECK_ARG(fn, t);
    if (!tensor__is_float(t->dtype)) return tensor__fail(fn, "needs a floating tensor, got %s", tensor__dtype_names[t->dtype]);
    if (t->storage->device != TENSOR_CPU) return tensor__fail(fn, "only CPU tensors can be initialized in place");
    int kind = normal ? TENSOR__RNG_NORMAL1 : TENSOR__RNG_U53;
    int64_t n = tensor__numel_of(t->ndim, t->shape);
    if (tensor_is_contiguous(t)) {
        tensor__rng_fill_run(kind, t->dtype, tensor__data(t), n, lo, scale, 0, NULL);
    } else { /* a view: the same values, in row-major order, through a contiguous copy */
        tensor *tmp = tensor__new(fn, t->ndim, t->shape, t->dtype, TENSOR_CPU);
        if (!tmp) return NULL;
        tensor__rng_fill_run(kind, t->dtype, tensor__data(tmp), n, lo, scale, 0, NULL);
        tensor__copy_into(t, tmp);
        tensor_free(tmp);
    }
    t->storage->version++;
    return t;
}

TENSOR_API tensor *tensor_uniform_(tensor *t, double lo, double hi) {
    if (!(lo <= hi)) return tensor__fail("tensor_uniform_", "lo %g must not exceed hi %g", lo, hi);
    return tensor__init_fill("tensor_uniform_", t, lo, hi - lo, false);
}
TENSOR_API tensor *tensor_normal_(tensor *t, double mean, double std) {
    if (!(std >= 0)) return tensor__fail("tensor_normal_", "std must be non-negative, got %g", std);
    return tensor__init_fill("tensor_normal_", t, mean, std, true);
}
/* fan_in = size(1) * receptive field, fan_out = size(0) * receptive field (torch.nn.init). */
static bool tensor__fans(const char *fn, tensor *t, double *fan_in, double *fan_out) {
    if (!t) { tensor__null_arg(fn, "t"); return false; }
    if (t->ndim < 2) { tensor__fail(fn, "fan in and fan out need at least 2 dims, got shape %s", tensor__shape_of(t)); return false; }
    double rf = 1;
    for (int d = 2; d < t->ndim; d++) rf *= (double)t->shape[d];
    *fan_in = (double)t->shape[1] * rf;
    *fan_out = (double)t->shape[0] * rf;
    return true;
}
TENSOR_API tensor *tensor_kaiming_uniform_(tensor *t, double a) {
    const char *fn = "tensor_kaiming_uniform_";
    double fan_in, fan_out;
    if (!tensor__fans(fn, t, &fan_in, &fan_out)) return NULL;
    if (fan_in == 0) return tensor__fail(fn, "cannot initialize a tensor with zero fan in, shape %s", tensor__shape_of(t));
    double bound = sqrt(2.0 / (1.0 + a * a)) * sqrt(3.0 / fan_in); /* gain of leaky_relu(a) */
    return tensor__init_fill(fn, t, -bound, 2 * bound, false);
}
TENSOR_API tensor *tensor_xavier_uniform_(tensor *t, double gain) {
    const char *fn = "tensor_xavier_uniform_";
    double fan_in, fan_out;
    if (!tensor__fans(fn, t, &fan_in, &fan_out)) return NULL;
    if (fan_in + fan_out == 0) return tensor__fail(fn, "cannot initialize a tensor with zero fans, shape %s", tensor__shape_of(t));
    double bound = gain * sqrt(6.0 / (fan_in + fan_out));
    return tensor__init_fill(fn, t, -bound, 2 * bound, false);
}

// >>optim --------------------------------------------------------------------------------------
/* Optimizers with torch.optim's update rules. Each keeps aliases of its parameters (so .grad is
   found through the leaves' accumulators) and its state as internal contiguous tensors, made on a
   parameter's first gradient: f32 state for f32 parameters and f64 for f64, as torch.optim; f16 and
   bf16 parameters also get f32 state (torch would keep f16: exp_avg_sq = (1 - beta2) g^2 underflows
   there for gradients below about 1e-2).
   The update: contiguous f32 parameters with f32 gradients take the vector kernel of simd.h
   (tensor__vec_optim_fn: f32 arithmetic, as torch.optim's CPU kernels), split over the thread
   pool; everything else, and every parameter under tensor_set_reference_kernels(true), takes the
   reference loop below, which computes in double and rounds once into each stored value. Every
   element is independent, so neither depends on the thread count. The kinds (TENSOR__SGD, ...) are
   defined in simd.h, next to the kernel's constants. */
struct tensor_optim {
    int kind, n;
    tensor **params, **state1, **state2; /* momentum buffer / exp_avg, exp_avg_sq */
    double momentum, beta1, beta2, eps;
    bool nesterov;
    int64_t *steps; /* [n] per parameter: counted from its first gradient, as torch.optim's state['step'] */
    /* parameter groups (torch.optim's param_groups): group 0 is the constructor's parameters; each
       has its own lr and weight decay */
    int n_groups;
    int *group;                    /* [n] the group of each parameter */
    double *group_lr, *group_wd;   /* [n_groups] */
};

/* Checks params for an optimizer (or a group added to o, which they must not already be in). */
static bool tensor__optim_check_params(const char *fn, const tensor_optim *o, int n, tensor *const *params) {
    if (n <= 0 || !params) { tensor__fail(fn, "needs n > 0 parameters, got %d", n); return false; }
    for (int i = 0; i < n; i++) {
        if (!params[i]) { tensor__null_arg(fn, "params[i]"); return false; }
        if (!tensor__is_float(params[i]->dtype)) { tensor__fail(fn, "parameter %d is %s, not floating", i, tensor__dtype_names[params[i]->dtype]); return false; }
        if (!params[i]->requires_grad || !tensor__is_leaf(params[i])) { tensor__fail(fn, "parameter %d is not a leaf that requires grad", i); return false; }
        if (params[i]->storage->device != TENSOR_CPU && (!tensor__devices[params[i]->storage->device] || !tensor__devices[params[i]->storage->device]->optim_step)) {
            tensor__fail(fn, "parameter %d is on %s, which has no optimizer step in this build", i, tensor__device_name(params[i]->storage->device));
            return false;
        }
        if (!tensor__grad_edge(params[i])) { tensor__fail(fn, "out of memory making the gradient accumulator of parameter %d", i); return false; }
        /* the same leaf twice (its accumulator is shared by every handle of it) would take two
           updates a step; torch.optim refuses it too */
        for (int j = 0; j < i; j++)
            if (params[j]->grad_fn == params[i]->grad_fn) { tensor__fail(fn, "parameter %d is parameter %d again", i, j); return false; }
        for (int j = 0; o && j < o->n; j++)
            if (o->params[j]->grad_fn == params[i]->grad_fn) { tensor__fail(fn, "parameter %d is already in group %d", i, o->group[j]); return false; }
    }
    return true;
}

/* Grows o's per-parameter arrays to hold `add` more parameters (the new entries zero) and its group
   arrays by one group; o is unchanged when memory runs out. */
static bool tensor__optim_grow(const char *fn, tensor_optim *o, int add) {
    int n = o->n + add, g = o->n_groups + 1;
    tensor **arrays = (tensor **)TENSOR__MALLOC(sizeof(tensor *) * 3 * (size_t)n);
    int64_t *steps = (int64_t *)TENSOR__MALLOC(sizeof(int64_t) * (size_t)n);
    int *group = (int *)TENSOR__MALLOC(sizeof(int) * (size_t)n);
    double *hyper = (double *)TENSOR__MALLOC(sizeof(double) * 2 * (size_t)g);
    if (!arrays || !steps || !group || !hyper) {
        if (arrays) TENSOR_FREE(arrays);
        if (steps) TENSOR_FREE(steps);
        if (group) TENSOR_FREE(group);
        if (hyper) TENSOR_FREE(hyper);
        tensor__fail(fn, "out of memory");
        return false;
    }
    memset(arrays, 0, sizeof(tensor *) * 3 * (size_t)n);
    memset(steps, 0, sizeof(int64_t) * (size_t)n);
    memset(group, 0, sizeof(int) * (size_t)n);
    memset(hyper, 0, sizeof(double) * 2 * (size_t)g);
    for (int i = 0; i < o->n; i++) {
        arrays[i] = o->params[i];
        arrays[n + i] = o->state1[i];
        arrays[2 * n + i] = o->state2[i];
        steps[i] = o->steps[i];
        group[i] = o->group[i];
    }
    for (int k = 0; k < o->n_groups; k++) {
        hyper[k] = o->group_lr[k];
        hyper[g + k] = o->group_wd[k];
    }
    if (o->params) TENSOR_FREE(o->params);
    if (o->steps) TENSOR_FREE(o->steps);
    if (o->group) TENSOR_FREE(o->group);
    if (o->group_lr) TENSOR_FREE(o->group_lr);
    o->params = arrays;
    o->state1 = arrays + n;
    o->state2 = arrays + 2 * n;
    o->steps = steps;
    o->group = group;
    o->group_lr = hyper;
    o->group_wd = hyper + g;
    return true;
}

/* Adds params to o as group o->n_groups with lr and weight_decay; returns the group's index, or -1
   with o unchanged. */
static int tensor__optim_add(const char *fn, tensor_optim *o, int n, tensor *const *params, double lr, double weight_decay) {
    if (!tensor__optim_check_params(fn, o, n, params) || !tensor__optim_grow(fn, o, n)) return -1;
    int g = o->n_groups, first = o->n;
    for (int i = 0; i < n; i++) {
        o->params[first + i] = tensor__alias(fn, params[i]);
        if (!o->params[first + i]) { /* undo: the arrays keep their larger size, unused */
            for (int j = 0; j < i; j++) { tensor_free(o->params[first + j]); o->params[first + j] = NULL; }
            return -1;
        }
        tensor__make_internal(o->params[first + i]);
        o->group[first + i] = g;
    }
    o->group_lr[g] = lr;
    o->group_wd[g] = weight_decay;
    o->n += n;
    o->n_groups++;
    return g;
}

static tensor_optim *tensor__optim_new(const char *fn, int kind, int n, tensor *const *params, double lr, double weight_decay) {
    if (!tensor__optim_check_params(fn, NULL, n, params)) return NULL;
    tensor_optim *o = (tensor_optim *)TENSOR__MALLOC(sizeof *o);
    if (!o) return (tensor_optim *)tensor__fail(fn, "out of memory");
    memset(o, 0, sizeof *o);
    o->kind = kind;
    if (tensor__optim_add(fn, o, n, params, lr, weight_decay) < 0) { tensor_optim_free(o); return NULL; }
    return o;
}

TENSOR_API tensor_optim *tensor_optim_sgd(int n, tensor *const *params, double lr, double momentum, double weight_decay, bool nesterov) {
    const char *fn = "tensor_optim_sgd";
    if (!(lr >= 0) || !(momentum >= 0) || !(weight_decay >= 0)) return (tensor_optim *)tensor__fail(fn, "lr %g, momentum %g and weight_decay %g must be non-negative", lr, momentum, weight_decay);
    if (nesterov && momentum <= 0) return (tensor_optim *)tensor__fail(fn, "nesterov needs a positive momentum");
    tensor_optim *o = tensor__optim_new(fn, TENSOR__SGD, n, params, lr, weight_decay);
    if (!o) return NULL;
    o->momentum = momentum;
    o->nesterov = nesterov;
    return o;
}

static tensor_optim *tensor__adam_new(const char *fn, int kind, int n, tensor *const *params, double lr, double beta1, double beta2, double eps, double weight_decay) {
    if (!(lr >= 0) || !(eps >= 0) || !(weight_decay >= 0)) return (tensor_optim *)tensor__fail(fn, "lr %g, eps %g and weight_decay %g must be non-negative", lr, eps, weight_decay);
    if (!(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1)) return (tensor_optim *)tensor__fail(fn, "betas (%g, %g) must be in [0, 1)", beta1, beta2);
    tensor_optim *o = tensor__optim_new(fn, kind, n, params, lr, weight_decay);
    if (!o) return NULL;
    o->beta1 = beta1;
    o->beta2 = beta2;
    o->eps = eps;
    return o;
}
TENSOR_API tensor_optim *tensor_optim_adam(int n, tensor *const *params, double lr, double beta1, double beta2, double eps, double weight_decay) {
    return tensor__adam_new("tensor_optim_adam", TENSOR__ADAM, n, params, lr, beta1, beta2, eps, weight_decay);
}
TENSOR_API tensor_optim *tensor_optim_adamw(int n, tensor *const *params, double lr, double beta1, double beta2, double eps, double weight_decay) {
    return tensor__adam_new("tensor_optim_adamw", TENSOR__ADAMW, n, params, lr, beta1, beta2, eps, weight_decay);
}

/* ---- the reference update: any dtype and layout, in double (tensor__optim_update) ---- */
typedef struct { tensor__optim_rule rule; tensor_dtype pd, gd, sd; } tensor__step_ctx;

/* One row: ptr[0] the parameter, ptr[1] its gradient, then the state tensors the kind has (SGD
   with momentum: the buffer; Adam/AdamW: exp_avg, exp_avg_sq). */
static void tensor__step_loop(char **ptr, const int64_t *st, int64_t count, void *vctx) {
    const tensor__step_ctx *c = (const tensor__step_ctx *)vctx;
    bool has1 = c->rule.kind != TENSOR__SGD || c->rule.momentum != 0, has2 = c->rule.kind != TENSOR__SGD;
    for (int64_t i = 0; i < count; i++) {
        char *pp = ptr[0] + i * st[0], *p1 = has1 ? ptr[2] + i * st[2] : NULL, *p2 = has2 ? ptr[3] + i * st[3] : NULL;
        double s1 = p1 ? tensor__load_f64(p1, c->sd) : 0, s2 = p2 ? tensor__load_f64(p2, c->sd) : 0;
        double p = tensor__optim_update(&c->rule, tensor__load_f64(pp, c->pd), tensor__load_f64(ptr[1] + i * st[1], c->gd), &s1, &s2, c->sd == TENSOR_F64);
        if (p1) tensor__store_f64(p1, c->sd, s1);
        if (p2) tensor__store_f64(p2, c->sd, s2);
        tensor__store_f64(pp, c->pd, p);
    }
}

/* ---- the vector kernel over the thread pool ---- */
/* Elements per block: thread ranges start at block boundaries (whole vectors and cache lines, so
   two threads never write the same line). A parameter of up to TENSOR__GRAIN_ELEMENTWISE elements
   stays on the calling thread, as the elementwise ops do (Adam runs about 0.4 ns per element on
   one AVX-512 core: 13 us there, against a pool wake-up of a few us). */
#define TENSOR__OPTIM_BLOCK 256
#define TENSOR__OPTIM_GRAIN (TENSOR__GRAIN_ELEMENTWISE / TENSOR__OPTIM_BLOCK)
typedef struct {
    tensor__vec_optim_fn fn;
    const tensor__optim_consts *k;
    float *p, *s1, *s2;
    const float *g;
    int64_t n;
} tensor__optim_task;
static void tensor__optim_blocks(int64_t begin, int64_t end, void *vtask) {
    const tensor__optim_task *t = (const tensor__optim_task *)vtask;
    int64_t from = begin * TENSOR__OPTIM_BLOCK, to = end * TENSOR__OPTIM_BLOCK < t->n ? end * TENSOR__OPTIM_BLOCK : t->n;
    t->fn(t->p + from, t->g + from, t->s1 ? t->s1 + from : NULL, t->s2 ? t->s2 + from : NULL, to - from, t->k);
}

/* The kernel for this parameter, or NULL where the reference loop must run. */
static tensor__vec_optim_fn tensor__optim_kernel(const tensor *p, const tensor *g, tensor_dtype sd) {
    if (tensor__reference_kernels || p->dtype != TENSOR_F32 || g->dtype != TENSOR_F32 || sd != TENSOR_F32) return NULL;
    if (!tensor__contiguous(p) || !tensor__contiguous(g)) return NULL; /* the state is always contiguous */
    const tensor__simd_isa *v = tensor__simd();
    return v ? v->optim : NULL;
}

/* A state tensor of parameter p: zeros of p's shape on p's device, f64 for f64 parameters, f32
   otherwise. */
static tensor *tensor__optim_state_new(const char *fn, const tensor *p) {
    tensor_dtype sd = p->dtype == TENSOR_F64 ? TENSOR_F64 : TENSOR_F32;
    if (p->storage->device == TENSOR_CPU) return tensor_zeros(p->ndim, p->shape, sd);
    tensor *s = tensor__new(fn, p->ndim, p->shape, sd, p->storage->device);
    if (s && !tensor_zero_(s)) { tensor_free(s); return NULL; }
    return s;
}

/* The device's parameters of o (those with a gradient), in one call of its optim_step: rules[i] and
   the operands of parameter i. A state that lives elsewhere (loaded from a checkpoint onto the
   CPU) moves to the parameter's device first. */
static int tensor__optim_step_device(const char *fn, tensor_optim *o, tensor_device dev, const tensor__optim_rule *rules, int n_state) {
    const tensor__device *d = tensor__devices[dev];
    int n = 0;
    for (int i = 0; i < o->n; i++) n += o->params[i]->storage->device == dev && tensor_grad(o->params[i]) != NULL;
    if (!n) return 0;
    tensor__optim_rule *r = (tensor__optim_rule *)TENSOR__MALLOC(sizeof *r * (size_t)n);
    tensor__dev_operand *ops = (tensor__dev_operand *)TENSOR__MALLOC(sizeof *ops * 4 * (size_t)n);
    if (!r || !ops) {
        if (r) TENSOR_FREE(r);
        if (ops) TENSOR_FREE(ops);
        tensor__fail(fn, "out of memory");
        return -1;
    }
    tensor__dev_optim call;
    call.n = n;
    call.rules = r;
    call.params = ops;
    call.grads = ops + n;
    call.state1 = ops + 2 * n;
    call.state2 = ops + 3 * n;
    call.error[0] = 0;
    int k = 0, rc = 0;
    for (int i = 0; i < o->n && !rc; i++) {
        tensor *p = o->params[i], *g = tensor_grad(p);
        if (p->storage->device != dev || !g) continue;
        for (int j = 0; j < n_state && !rc; j++) {
            tensor **st = j ? &o->state2[i] : &o->state1[i];
            if ((*st)->storage->device == dev) continue;
            tensor *moved = tensor__transfer_copy(fn, *st, dev);
            if (!moved) rc = -1;
            else { tensor_free(*st); *st = tensor__make_internal(moved); }
        }
        if (!rc && g->storage->device != dev) rc = (tensor__fail(fn, "the gradient of parameter %d is on %s, the parameter on %s", i, tensor__device_name(g->storage->device), tensor__device_name(dev)), -1);
        r[k] = rules[i];
        tensor__dev_operand_of(&ops[k], p);
        tensor__dev_operand_of(&ops[n + k], g);
        tensor__dev_operand_of(&ops[2 * n + k], n_state > 0 ? o->state1[i] : NULL);
        tensor__dev_operand_of(&ops[3 * n + k], n_state > 1 ? o->state2[i] : NULL);
        k++;
    }
    if (!rc && d->optim_step(&call)) {
        call.error[sizeof call.error - 1] = 0;
        tensor__fail(fn, "%s", call.error[0] ? call.error : "the device's optimizer step failed");
        rc = -1;
    }
    TENSOR_FREE(r);
    TENSOR_FREE(ops);
    return rc;
}

TENSOR_API int tensor_optim_step(tensor_optim *o) {
    const char *fn = "tensor_optim_step";
    if (!o) { tensor__null_arg(fn, "o"); return -1; }
    int n_state = o->kind != TENSOR__SGD ? 2 : o->momentum != 0 ? 1 : 0;
    /* every new state first, so a step that runs out of memory has changed no parameter */
    bool fresh[64], *first = o->n <= 64 ? fresh : (bool *)TENSOR__MALLOC(sizeof(bool) * (size_t)o->n);
    tensor__optim_rule rule_buf[64], *rules = o->n <= 64 ? rule_buf : (tensor__optim_rule *)TENSOR__MALLOC(sizeof *rules * (size_t)o->n);
    if (!first || !rules) {
        if (first && first != fresh) TENSOR_FREE(first);
        if (rules && rules != rule_buf) TENSOR_FREE(rules);
        tensor__fail(fn, "out of memory");
        return -1;
    }
    int rc = 0;
    bool on_device[TENSOR_DEVICE_COUNT] = {false};
    for (int i = 0; i < o->n && !rc; i++) {
        tensor *p = o->params[i];
        first[i] = n_state > 0 && o->state1[i] == NULL;
        for (int k = 0; k < n_state && tensor_grad(p); k++) {
            tensor **s = k ? &o->state2[i] : &o->state1[i];
            if (!*s && !(*s = tensor__make_internal(tensor__optim_state_new(fn, p)))) {
                for (int j = 0; j <= i; j++) /* drop the states made here: the next step makes them anew */
                    if (first[j]) { tensor_free(o->state1[j]); tensor_free(o->state2[j]); o->state1[j] = o->state2[j] = NULL; }
                rc = -1;
                break;
            }
        }
    }
    for (int i = 0; i < o->n && !rc; i++) {
        tensor *p = o->params[i];
        tensor__optim_rule *r = &rules[i];
        memset(r, 0, sizeof *r);
        if (!tensor_grad(p)) continue; /* a parameter that got no gradient is left alone, as in PyTorch */
        o->steps[i]++;
        r->kind = o->kind;
        r->first = first[i];
        r->nesterov = o->nesterov;
        r->lr = o->group_lr[o->group[i]];
        r->momentum = o->momentum;
        r->weight_decay = o->group_wd[o->group[i]];
        r->beta1 = o->beta1;
        r->beta2 = o->beta2;
        r->eps = o->eps;
        r->bias1 = 1 - pow(o->beta1, (double)o->steps[i]);
        r->bias2 = 1 - pow(o->beta2, (double)o->steps[i]);
        on_device[p->storage->device] = true;
    }
    for (int d = 1; d < TENSOR_DEVICE_COUNT && !rc; d++) /* every device's parameters in one call */
        if (on_device[d]) rc = tensor__optim_step_device(fn, o, (tensor_device)d, rules, n_state);
    for (int i = 0; i < o->n && !rc; i++) {
        tensor *p = o->params[i], *g = tensor_grad(p);
        if (!g) continue;
        p->storage->version++;
        if (p->storage->device != TENSOR_CPU) continue;
        if (!tensor__host_only(fn, g, "a gradient on another device than its parameter")) { rc = -1; break; }
        tensor_dtype sd = p->dtype == TENSOR_F64 ? TENSOR_F64 : TENSOR_F32;
        int64_t numel = tensor__numel_of(p->ndim, p->shape);
        tensor__vec_optim_fn kernel = tensor__optim_kernel(p, g, sd);
        if (kernel && numel > 0) {
            TENSOR__PATH_TAKEN(optim_simd);
            tensor__optim_consts k;
            memset(&k, 0, sizeof k);
            k.kind = o->kind;
            k.first = rules[i].first;
            k.nesterov = o->nesterov;
            double lr = rules[i].lr, wd = rules[i].weight_decay;
            k.decay = wd != 0;
            k.neg_lr = (float)-lr;
            k.momentum = (float)o->momentum;
            k.weight_decay = (float)wd;
            k.keep = (float)(1 - lr * wd);
            k.beta1 = (float)o->beta1;
            k.one_minus_beta1 = (float)(1 - o->beta1);
            k.beta2 = (float)o->beta2;
            k.one_minus_beta2 = (float)(1 - o->beta2);
            k.sqrt_bias2 = (float)sqrt(rules[i].bias2);
            k.eps = (float)o->eps;
            k.step_size = (float)(lr / rules[i].bias1);
            tensor__optim_task t;
            t.fn = kernel;
            t.k = &k;
            t.p = (float *)tensor__data(p);
            t.g = (const float *)tensor__data(g);
            t.s1 = n_state > 0 ? (float *)tensor__data(o->state1[i]) : NULL;
            t.s2 = n_state > 1 ? (float *)tensor__data(o->state2[i]) : NULL;
            t.n = numel;
            tensor__parallel_for((numel + TENSOR__OPTIM_BLOCK - 1) / TENSOR__OPTIM_BLOCK, TENSOR__OPTIM_GRAIN, tensor__optim_blocks, &t);
        } else {
            tensor__step_ctx c;
            c.rule = rules[i];
            c.pd = p->dtype;
            c.gd = g->dtype;
            c.sd = sd;
            tensor *ops[4] = {p, g, o->state1[i], o->state2[i]};
            tensor__iter it;
            tensor__iter_init(&it, 2 + n_state, ops, p->ndim, p->shape);
            tensor__iter_run(&it, tensor__step_loop, &c);
        }
    }
    if (first != fresh) TENSOR_FREE(first);
    if (rules != rule_buf) TENSOR_FREE(rules);
    return rc;
}

TENSOR_API void tensor_optim_zero_grad(tensor_optim *o) {
    if (!o) return;
    for (int i = 0; i < o->n; i++) tensor_zero_grad(o->params[i]);
}
/* Every group's lr (a schedule's value for the whole model). */
TENSOR_API void tensor_optim_set_lr(tensor_optim *o, double lr) {
    if (!o) { tensor__null_arg("tensor_optim_set_lr", "o"); return; }
    if (!(lr >= 0)) { tensor__fail("tensor_optim_set_lr", "lr must be non-negative, got %g", lr); return; }
    for (int g = 0; g < o->n_groups; g++) o->group_lr[g] = lr;
}
TENSOR_API int tensor_optim_add_group(tensor_optim *o, int n, tensor *const *params, double lr, double weight_decay) {
    const char *fn = "tensor_optim_add_group";
    if (!o) { tensor__null_arg(fn, "o"); return -1; }
    if (!(lr >= 0) || !(weight_decay >= 0)) { tensor__fail(fn, "lr %g and weight_decay %g must be non-negative", lr, weight_decay); return -1; }
    return tensor__optim_add(fn, o, n, params, lr, weight_decay);
}
TENSOR_API void tensor_optim_set_group_lr(tensor_optim *o, int group, double lr) {
    const char *fn = "tensor_optim_set_group_lr";
    if (!o) { tensor__null_arg(fn, "o"); return; }
    if (group < 0 || group >= o->n_groups) { tensor__fail(fn, "group %d is out of range for %d groups", group, o->n_groups); return; }
    if (!(lr >= 0)) { tensor__fail(fn, "lr must be non-negative, got %g", lr); return; }
    o->group_lr[group] = lr;
}
/* ---- learning-rate schedules: torch.optim.lr_scheduler's closed forms, pure functions of the step
   (0 for the first), so a resumed run needs only its step count. An argument out of range is an
   error and NaN. ---- */
static double tensor__lr_bad(const char *fn, const char *why) {
    tensor__fail(fn, "%s", why);
    return NAN;
}
/* CosineAnnealingLR: lr_min + (lr_max - lr_min) (1 + cos(pi step / t_max)) / 2 (periodic past t_max,
   as PyTorch's) */
TENSOR_API double tensor_lr_cosine(int64_t step, int64_t t_max, double lr_max, double lr_min) {
    if (step < 0 || t_max <= 0) return tensor__lr_bad("tensor_lr_cosine", "needs step >= 0 and t_max > 0");
    return lr_min + (lr_max - lr_min) * (1 + cos(M_PI * (double)step / (double)t_max)) / 2;
}
/* StepLR: lr0 gamma^floor(step / step_size) */
TENSOR_API double tensor_lr_step(int64_t step, int64_t step_size, double gamma, double lr0) {
    if (step < 0 || step_size <= 0) return tensor__lr_bad("tensor_lr_step", "needs step >= 0 and step_size > 0");
    return lr0 * pow(gamma, (double)(step / step_size));
}
/* ExponentialLR: lr0 gamma^step */
TENSOR_API double tensor_lr_exponential(int64_t step, double gamma, double lr0) {
    if (step < 0) return tensor__lr_bad("tensor_lr_exponential", "needs step >= 0");
    return lr0 * pow(gamma, (double)step);
}
/* Linear warmup to lr_max over `warmup` steps (lr_max (step + 1) / warmup: PyTorch's LinearLR with
   start_factor 1/warmup over warmup - 1 steps), then CosineAnnealingLR from lr_max down to lr_min
   over the total - warmup steps that follow (SequentialLR with the milestone at warmup), and lr_min
   after total (nanoGPT's schedule; PyTorch's cosine would rise again). */
TENSOR_API double tensor_lr_linear_warmup_cosine(int64_t step, int64_t warmup, int64_t total, double lr_max, double lr_min) {
    if (step < 0 || warmup < 0 || total <= warmup) return tensor__lr_bad("tensor_lr_linear_warmup_cosine", "needs step >= 0 and 0 <= warmup < total");
    if (step < warmup) return lr_max * (double)(step + 1) / (double)warmup;
    if (step >= total) return lr_min;
    return tensor_lr_cosine(step - warmup, total - warmup, lr_max, lr_min);
}
/* OneCycleLR (two phases, cosine annealing): from max_lr / div_factor up to max_lr over the first
   pct_start of total steps, then down to max_lr / div_factor / final_div_factor at step total - 1. */
TENSOR_API double tensor_lr_one_cycle(int64_t step, int64_t total, double max_lr, double pct_start, double div_factor, double final_div_factor) {
    const char *fn = "tensor_lr_one_cycle";
    if (total <= 0 || step < 0 || step >= total) return tensor__lr_bad(fn, "needs 0 <= step < total");
    if (!(pct_start > 0 && pct_start < 1) || !(div_factor > 0) || !(final_div_factor > 0)) return tensor__lr_bad(fn, "needs 0 < pct_start < 1 and positive div factors");
    double initial = max_lr / div_factor, final = initial / final_div_factor;
    double end_up = pct_start * (double)total - 1, end_down = (double)total - 1, from, to, pct;
    if (!(end_up > 0) || !(end_down > end_up)) return tensor__lr_bad(fn, "pct_start leaves a phase of no steps");
    if ((double)step <= end_up) { from = initial; to = max_lr; pct = (double)step / end_up; }
    else { from = max_lr; to = final; pct = ((double)step - end_up) / (end_down - end_up); }
    return to + (from - to) / 2 * (cos(M_PI * pct) + 1);
}

TENSOR_API void tensor_optim_free(tensor_optim *o) {
    if (!o) return;
    for (int i = 0; o->params && i < o->n; i++) { /* three arrays in one block, each of the capacity */
        tensor_free(o->params[i]);
        tensor_free(o->state1[i]);
        tensor_free(o->state2[i]);
    }
    if (o->params) TENSOR_FREE(o->params);
    if (o->steps) TENSOR_FREE(o->steps);
    if (o->group) TENSOR_FREE(o->group);
    if (o->group_lr) TENSOR_FREE(o->group_lr);
    TENSOR_FREE(o);
}

/* The sum of squares of the gradients of params on device dev, added to *total: one pass of the
   device's sum_squares over all of them, or composed of its ops (a value back per gradient). */
static int tensor__grad_sum_squares(const char *fn, int n, tensor *const *params, tensor_device dev, double *total) {
    const tensor__device *d = tensor__devices[dev];
    if (d && d->sum_squares) {
        tensor__dev_operand *ops = (tensor__dev_operand *)TENSOR__MALLOC(sizeof *ops * (size_t)n);
        if (!ops) return (tensor__fail(fn, "out of memory"), -1);
        int k = 0;
        for (int i = 0; i < n; i++) {
            tensor *g = tensor_grad(params[i]);
            if (g && g->storage->device == dev) tensor__dev_operand_of(&ops[k++], g);
        }
        char error[256] = "";
        double v = 0;
        int rc = d->sum_squares(k, ops, &v, error, sizeof error);
        TENSOR_FREE(ops);
        error[sizeof error - 1] = 0;
        if (rc) return (tensor__fail(fn, "%s", error[0] ? error : "the device's sum of squares failed"), -1);
        *total += v;
        return 0;
    }
    for (int i = 0; i < n; i++) {
        tensor *g = tensor_grad(params[i]);
        if (!g || g->storage->device != dev) continue;
        bool was = tensor_set_grad_enabled(false);
        tensor *g64 = tensor_to_dtype(g, TENSOR_F64), *sq = tensor_square(g64), *sum = tensor_sum_all(sq);
        bool ok = sum != NULL;
        double v = ok ? tensor_item(sum) : NAN;
        tensor_free(sum);
        tensor_free(sq);
        tensor_free(g64);
        tensor_set_grad_enabled(was);
        if (!ok) return -1;
        *total += v;
    }
    return 0;
}

/* Scales every gradient by max_norm / (total + 1e-6) when the total 2-norm exceeds max_norm
   (torch.nn.utils.clip_grad_norm_). Returns the total norm before clipping, or -1 on error. */
TENSOR_API double tensor_clip_grad_norm(int n, tensor *const *params, double max_norm) {
    const char *fn = "tensor_clip_grad_norm";
    if (n < 0 || (n > 0 && !params)) { tensor__fail(fn, "needs n >= 0 parameters, got %d", n); return -1; }
    if (!(max_norm >= 0)) { tensor__fail(fn, "max_norm must be non-negative, got %g", max_norm); return -1; }
    double total = 0;
    bool on_device[TENSOR_DEVICE_COUNT] = {false};
    for (int i = 0; i < n; i++) {
        if (!params[i]) { tensor__null_arg(fn, "params[i]"); return -1; }
        tensor *g = tensor_grad(params[i]);
        if (!g) continue;
        if (g->storage->device != TENSOR_CPU) {
            on_device[g->storage->device] = true;
            continue;
        }
        int64_t k = tensor__numel_of(g->ndim, g->shape);
        if (g->dtype == TENSOR_F32 && tensor__contiguous(g) && !tensor__reference_kernels) { /* in place: f32 lanes, in double every 256 */
            const float *v = (const float *)tensor__data(g);
            total += tensor__row_dot_f32(v, v, k);
            continue;
        }
        tensor *c = tensor__contiguous_copy(fn, g, TENSOR_F64);
        if (!c) return -1;
        const double *v = (const double *)tensor__data(c);
        for (int64_t j = 0; j < k; j++) total += v[j] * v[j];
        tensor_free(c);
    }
    for (int d = 1; d < TENSOR_DEVICE_COUNT; d++)
        if (on_device[d] && tensor__grad_sum_squares(fn, n, params, (tensor_device)d, &total)) return -1;
    total = sqrt(total);
    double coef = max_norm / (total + 1e-6);
    if (coef < 1)
        for (int i = 0; i < n; i++) {
            tensor *g = tensor_grad(params[i]);
            if (!g) continue;
            bool was = tensor_set_grad_enabled(false);
            bool ok = tensor_mul_scalar_(g, coef) != NULL; /* returns g itself */
            tensor_set_grad_enabled(was);
            if (!ok) return -1;
        }
    return total;
}
