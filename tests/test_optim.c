/* Optimizers and initializers. Each optimizer runs several steps on small f64 parameters with the
   loss sum(w^2 * c) (gradient 2 c w) and is compared with torch.optim's published update rules,
   written out below in plain double arithmetic; the initializers are checked against
   torch.nn.init's bounds and against the statistics of their distributions. */
#include "test.h"

#define NP 5
static const double w0[NP] = {0.8, -1.5, 0.3, 2.0, -0.05};
static const double cw[NP] = {1.0, 0.5, 3.0, 0.25, 2.0};

static tensor *param(int n, const double *v) {
    return tensor_set_requires_grad(test_tensor(TENSOR_F64, 1, (const int64_t[]){n}, v), true);
}

/* One training step: zero_grad, loss = sum(w^2 * c), backward, step. */
static void train_step(tensor_optim *o, tensor *w, tensor *c) {
    tensor_optim_zero_grad(o);
    tensor_scope_begin();
    CHECK(tensor_backward(tensor_sum_all(tensor_mul(tensor_square(w), c))) == 0);
    tensor_scope_end();
    CHECK(tensor_optim_step(o) == 0);
}

/* ---- reference update rules (torch.optim, dampening 0, maximize false, amsgrad false) ----
   SGD:   g = grad + wd p
          if momentum: buf = g (first step) else momentum buf + g
                       g = g + momentum buf (nesterov) else buf
          p = p - lr g
   Adam:  g = grad + wd p                              (AdamW instead: p = p (1 - lr wd), g = grad)
          m = b1 m + (1 - b1) g;  v = b2 v + (1 - b2) g^2
          p = p - lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps) */
typedef struct { int kind; double lr, momentum, wd, b1, b2, eps; bool nesterov; } ref_opt; /* kind 0 SGD, 1 Adam, 2 AdamW */

static void ref_run(const ref_opt *o, int steps, double *p) {
    double buf[NP] = {0}, m[NP] = {0}, v[NP] = {0};
    for (int t = 1; t <= steps; t++) {
        for (int i = 0; i < NP; i++) {
            double g = 2 * cw[i] * p[i];
            if (o->kind == 0) {
                g += o->wd * p[i];
                if (o->momentum != 0) {
                    buf[i] = t == 1 ? g : o->momentum * buf[i] + g;
                    g = o->nesterov ? g + o->momentum * buf[i] : buf[i];
                }
                p[i] -= o->lr * g;
            } else {
                if (o->kind == 2) p[i] *= 1 - o->lr * o->wd;
                else g += o->wd * p[i];
                m[i] = o->b1 * m[i] + (1 - o->b1) * g;
                v[i] = o->b2 * v[i] + (1 - o->b2) * g * g;
                double bc1 = 1 - pow(o->b1, t), bc2 = 1 - pow(o->b2, t);
                p[i] -= o->lr / bc1 * m[i] / (sqrt(v[i]) / sqrt(bc2) + o->eps);
            }
        }
    }
}

static tensor_optim *make_opt(const ref_opt *r, int n, tensor *const *params) {
    if (r->kind == 0) return tensor_optim_sgd(n, params, r->lr, r->momentum, r->wd, r->nesterov);
    if (r->kind == 1) return tensor_optim_adam(n, params, r->lr, r->b1, r->b2, r->eps, r->wd);
    return tensor_optim_adamw(n, params, r->lr, r->b1, r->b2, r->eps, r->wd);
}

/* Runs `steps` steps and compares with the reference after each one. A second parameter that
   takes no part in the loss gets no gradient and must be left alone (as in PyTorch). */
static void check_against_reference(const ref_opt *r, int steps) {
    tensor *w = param(NP, w0), *c = test_tensor(TENSOR_F64, TENSOR_SHAPE(NP), cw);
    tensor *idle = param(2, w0);
    tensor *params[2] = {w, idle};
    tensor_optim *o = make_opt(r, 2, params);
    CHECK(o != NULL);
    if (!o) return;
    for (int s = 1; s <= steps; s++) {
        train_step(o, w, c);
        double expect[NP];
        memcpy(expect, w0, sizeof expect);
        ref_run(r, s, expect);
        CHECK_VALUES(w, expect, NP, 1e-15, 1e-13);
    }
    CHECK_VALUES(idle, w0, 2, 0, 0);
    /* the parameters moved: the reference is not the starting point */
    double *now = test_values(w);
    CHECK(fabs(now[0] - w0[0]) > 1e-3);
    free(now);
    tensor_optim_free(o);
}

TEST(optim_sgd_plain) { ref_opt r = {0, 0.1, 0, 0, 0, 0, 0, false}; check_against_reference(&r, 4); }
TEST(optim_sgd_momentum) { ref_opt r = {0, 0.05, 0.9, 0, 0, 0, 0, false}; check_against_reference(&r, 5); }
TEST(optim_sgd_nesterov) { ref_opt r = {0, 0.05, 0.9, 0, 0, 0, 0, true}; check_against_reference(&r, 5); }
TEST(optim_sgd_weight_decay) {
    ref_opt r = {0, 0.1, 0, 0.01, 0, 0, 0, false};
    check_against_reference(&r, 4);
    ref_opt rm = {0, 0.05, 0.8, 0.1, 0, 0, 0, true};
    check_against_reference(&rm, 4);
}
TEST(optim_adam) { ref_opt r = {1, 0.01, 0, 0, 0.9, 0.999, 1e-8, false}; check_against_reference(&r, 5); }
TEST(optim_adam_weight_decay) { ref_opt r = {1, 0.05, 0, 0.1, 0.8, 0.99, 1e-6, false}; check_against_reference(&r, 5); }
TEST(optim_adamw) {
    ref_opt r = {2, 0.01, 0, 0.01, 0.9, 0.999, 1e-8, false};
    check_against_reference(&r, 5);
    ref_opt big = {2, 0.05, 0, 0.5, 0.5, 0.9, 1e-3, false}; /* a large decay, so AdamW != Adam shows */
    check_against_reference(&big, 4);
}

/* Adam and AdamW with the same weight decay differ (coupled vs decoupled decay). */
TEST(optim_adam_and_adamw_differ) {
    ref_opt a = {1, 0.05, 0, 0.5, 0.9, 0.999, 1e-8, false}, aw = a;
    aw.kind = 2;
    double pa[NP], pw[NP];
    memcpy(pa, w0, sizeof pa);
    memcpy(pw, w0, sizeof pw);
    ref_run(&a, 3, pa);
    ref_run(&aw, 3, pw);
    CHECK(fabs(pa[1] - pw[1]) > 1e-4);
    check_against_reference(&a, 3);
    check_against_reference(&aw, 3);
}

/* torch.optim counts steps per parameter (state['step']) from the first step that gave it a
   gradient: a parameter that joins late gets the bias corrections of its own first steps. */
TEST(optim_adam_steps_count_per_parameter) {
    for (int kind = 1; kind <= 2; kind++) {
        ref_opt r = {kind, 0.05, 0, 0.1, 0.9, 0.999, 1e-8, false};
        tensor *a = param(NP, w0), *b = param(NP, w0), *c = test_tensor(TENSOR_F64, TENSOR_SHAPE(NP), cw);
        tensor *ps[2] = {a, b};
        tensor_optim *o = make_opt(&r, 2, ps);
        for (int s = 0; s < 4; s++) {
            tensor_optim_zero_grad(o);
            tensor_scope_begin();
            tensor *l = tensor_sum_all(tensor_mul(tensor_square(a), c));
            if (s > 0) l = tensor_add(l, tensor_sum_all(tensor_mul(tensor_square(b), c)));
            CHECK(tensor_backward(l) == 0);
            tensor_scope_end();
            CHECK(tensor_optim_step(o) == 0);
        }
        double ea[NP], eb[NP];
        memcpy(ea, w0, sizeof ea);
        memcpy(eb, w0, sizeof eb);
        ref_run(&r, 4, ea);
        ref_run(&r, 3, eb);
        CHECK_VALUES(a, ea, NP, 1e-15, 1e-13);
        CHECK_VALUES(b, eb, NP, 1e-15, 1e-13);
        tensor_optim_free(o);
    }
}

/* An f32 parameter (and a non-contiguous leaf): same rule, f32 rounding. */
TEST(optim_f32_and_strided_parameters) {
    tensor *w = tensor_set_requires_grad(tensor_to_dtype(test_tensor(TENSOR_F64, TENSOR_SHAPE(NP), w0), TENSOR_F32), true);
    tensor *c = test_tensor(TENSOR_F32, TENSOR_SHAPE(NP), cw);
    ref_opt r = {1, 0.01, 0, 0.01, 0.9, 0.999, 1e-8, false};
    tensor_optim *o = make_opt(&r, 1, &w);
    for (int s = 0; s < 3; s++) train_step(o, w, c);
    double expect[NP];
    memcpy(expect, w0, sizeof expect);
    ref_run(&r, 3, expect);
    CHECK_VALUES(w, expect, NP, 1e-6, 1e-5);
    CHECK(tensor_get_dtype(w) == TENSOR_F32);
    tensor_optim_free(o);
    /* a leaf whose storage is transposed: m [3, 2] viewed as [2, 3] */
    static const double mv[6] = {1, 2, 3, 4, 5, 6};
    tensor *m = tensor_set_requires_grad(tensor_transpose(test_tensor(TENSOR_F64, TENSOR_SHAPE(3, 2), mv), 0, 1), true);
    CHECK(!tensor_is_contiguous(m));
    tensor_optim *os = tensor_optim_sgd(1, &m, 0.1, 0.9, 0, false);
    static const double coef[6] = {1, 2, 3, 4, 5, 6}; /* row-major over m's [2, 3] view */
    tensor *cm = test_tensor(TENSOR_F64, TENSOR_SHAPE(2, 3), coef);
    double p[6] = {1, 3, 5, 2, 4, 6}, buf[6];
    for (int s = 0; s < 3; s++) {
        tensor_optim_zero_grad(os);
        CHECK(tensor_backward(tensor_sum_all(tensor_mul(m, cm))) == 0); /* grad = c */
        CHECK(tensor_optim_step(os) == 0);
        for (int i = 0; i < 6; i++) {
            buf[i] = s == 0 ? coef[i] : 0.9 * buf[i] + coef[i];
            p[i] -= 0.1 * buf[i];
        }
    }
    CHECK_VALUES(m, p, 6, 1e-14, 1e-14);
    tensor_optim_free(os);
}

TEST(optim_set_lr_takes_effect) {
    tensor *w = param(NP, w0), *c = test_tensor(TENSOR_F64, TENSOR_SHAPE(NP), cw);
    tensor_optim *o = tensor_optim_sgd(1, &w, 0.1, 0, 0, false);
    train_step(o, w, c);
    tensor_optim_set_lr(o, 0.01);
    train_step(o, w, c);
    double p[NP];
    for (int i = 0; i < NP; i++) {
        p[i] = w0[i] - 0.1 * 2 * cw[i] * w0[i];
        p[i] -= 0.01 * 2 * cw[i] * p[i];
    }
    CHECK_VALUES(w, p, NP, 1e-15, 1e-14);
    tensor_clear_error();
    tensor_optim_set_lr(o, -1);
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "tensor_optim_set_lr"));
    tensor_clear_error();
    tensor_optim_set_lr(NULL, 0.1);
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "tensor_optim_set_lr"));
    tensor_clear_error();
    train_step(o, w, c); /* the bad lr was not taken */
    for (int i = 0; i < NP; i++) p[i] -= 0.01 * 2 * cw[i] * p[i];
    CHECK_VALUES(w, p, NP, 1e-15, 1e-14);
    tensor_optim_free(o);
}

TEST(optim_zero_grad_drops_the_grads) {
    tensor *a = param(NP, w0), *b = param(2, w0);
    tensor *ps[2] = {a, b};
    tensor_optim *o = tensor_optim_adam(2, ps, 0.1, 0.9, 0.999, 1e-8, 0);
    CHECK(tensor_backward(tensor_sum_all(tensor_add(tensor_sum_all(a), tensor_sum_all(b)))) == 0);
    CHECK(tensor_grad(a) != NULL && tensor_grad(b) != NULL);
    tensor_optim_zero_grad(o);
    CHECK(tensor_grad(a) == NULL && tensor_grad(b) == NULL);
    CHECK(tensor_optim_step(o) == 0); /* no gradients: nothing moves */
    CHECK_VALUES(a, w0, NP, 0, 0);
    tensor_optim_zero_grad(NULL);     /* harmless */
    tensor_optim_free(o);
    tensor_optim_free(NULL);
}

static bool optim_failed(tensor_optim *o) {
    if (!o) return true;
    tensor_optim_free(o);
    return false;
}

TEST(optim_errors) {
    tensor *w = param(3, w0), *plain = test_tensor(TENSOR_F64, TENSOR_SHAPE(3), w0);
    tensor *nonleaf = tensor_mul_scalar(w, 2), *ints = tensor_zeros(TENSOR_SHAPE(3), TENSOR_I64);
    tensor *null1[1] = {NULL}, *plain1[1] = {plain}, *nonleaf1[1] = {nonleaf}, *ints1[1] = {ints}, *ok[1] = {w};
    CHECK_BAD_INT(optim_failed(tensor_optim_sgd(1, NULL, 0.1, 0, 0, false)), "tensor_optim_sgd");
    CHECK_BAD_INT(optim_failed(tensor_optim_sgd(0, ok, 0.1, 0, 0, false)), "tensor_optim_sgd");
    CHECK_BAD_INT(optim_failed(tensor_optim_sgd(1, null1, 0.1, 0, 0, false)), "tensor_optim_sgd");
    CHECK_BAD_INT(optim_failed(tensor_optim_sgd(1, plain1, 0.1, 0, 0, false)), "tensor_optim_sgd");   /* no requires_grad */
    CHECK_BAD_INT(optim_failed(tensor_optim_sgd(1, nonleaf1, 0.1, 0, 0, false)), "tensor_optim_sgd"); /* not a leaf */
    CHECK_BAD_INT(optim_failed(tensor_optim_sgd(1, ints1, 0.1, 0, 0, false)), "tensor_optim_sgd");
    CHECK_BAD_INT(optim_failed(tensor_optim_sgd(1, ok, -0.1, 0, 0, false)), "tensor_optim_sgd");
    CHECK_BAD_INT(optim_failed(tensor_optim_sgd(1, ok, 0.1, -0.5, 0, false)), "tensor_optim_sgd");
    CHECK_BAD_INT(optim_failed(tensor_optim_sgd(1, ok, 0.1, 0, -1, false)), "tensor_optim_sgd");
    CHECK_BAD_INT(optim_failed(tensor_optim_sgd(1, ok, 0.1, 0, 0, true)), "tensor_optim_sgd"); /* nesterov without momentum */
    CHECK_BAD_INT(optim_failed(tensor_optim_sgd(1, ok, NAN, 0, 0, false)), "tensor_optim_sgd");
    CHECK_BAD_INT(optim_failed(tensor_optim_adam(1, NULL, 0.1, 0.9, 0.999, 1e-8, 0)), "tensor_optim_adam");
    CHECK_BAD_INT(optim_failed(tensor_optim_adam(1, null1, 0.1, 0.9, 0.999, 1e-8, 0)), "tensor_optim_adam");
    CHECK_BAD_INT(optim_failed(tensor_optim_adam(1, plain1, 0.1, 0.9, 0.999, 1e-8, 0)), "tensor_optim_adam");
    CHECK_BAD_INT(optim_failed(tensor_optim_adam(1, ok, 0.1, 1.0, 0.999, 1e-8, 0)), "tensor_optim_adam"); /* bad betas */
    CHECK_BAD_INT(optim_failed(tensor_optim_adam(1, ok, 0.1, 0.9, 1.5, 1e-8, 0)), "tensor_optim_adam");
    CHECK_BAD_INT(optim_failed(tensor_optim_adam(1, ok, 0.1, -0.1, 0.999, 1e-8, 0)), "tensor_optim_adam");
    CHECK_BAD_INT(optim_failed(tensor_optim_adam(1, ok, 0.1, 0.9, NAN, 1e-8, 0)), "tensor_optim_adam");
    CHECK_BAD_INT(optim_failed(tensor_optim_adam(1, ok, 0.1, 0.9, 0.999, -1e-8, 0)), "tensor_optim_adam");
    CHECK_BAD_INT(optim_failed(tensor_optim_adam(1, ok, -1, 0.9, 0.999, 1e-8, 0)), "tensor_optim_adam");
    CHECK_BAD_INT(optim_failed(tensor_optim_adamw(1, ok, 0.1, 0.9, 1.0, 1e-8, 0.01)), "tensor_optim_adamw");
    CHECK_BAD_INT(optim_failed(tensor_optim_adamw(1, nonleaf1, 0.1, 0.9, 0.999, 1e-8, 0.01)), "tensor_optim_adamw");
    CHECK_BAD_INT(optim_failed(tensor_optim_adamw(1, ok, 0.1, 0.9, 0.999, 1e-8, -0.01)), "tensor_optim_adamw");
    CHECK_BAD_INT(tensor_optim_step(NULL) != 0, "tensor_optim_step");
    /* the good ones are accepted */
    CHECK(!optim_failed(tensor_optim_sgd(1, ok, 0.1, 0.9, 0.01, true)));
    CHECK(!optim_failed(tensor_optim_adam(1, ok, 0.1, 0, 0, 0, 0)));
}

/* ---- clip_grad_norm ---- */

TEST(optim_clip_grad_norm) {
    static const double ca[3] = {3, -4, 12}, cb[4] = {1, 2, -2, 4}, zeros4[4] = {0, 0, 0, 0};
    tensor *a = param(3, zeros4), *b = tensor_set_requires_grad(tensor_zeros(TENSOR_SHAPE(2, 2), TENSOR_F64), true);
    tensor *none = param(2, zeros4); /* gets no gradient: skipped */
    tensor *ps[3] = {a, b, none};
    tensor *ta = test_tensor(TENSOR_F64, TENSOR_SHAPE(3), ca), *tb = test_tensor(TENSOR_F64, TENSOR_SHAPE(2, 2), cb);
    double total = sqrt(9 + 16 + 144 + 1 + 4 + 4 + 16); /* sqrt(194) */
    /* grads: a -> ca, b -> cb */
    #define SET_GRADS() do { tensor_zero_grad(a); tensor_zero_grad(b); \
        CHECK(tensor_backward(tensor_add(tensor_sum_all(tensor_mul(a, ta)), tensor_sum_all(tensor_mul(b, tb)))) == 0); } while (0)
    SET_GRADS();
    CHECK_NEAR(tensor_clip_grad_norm(3, ps, 100), total, 1e-13, 1e-14); /* below max_norm: unchanged */
    CHECK_VALUES(tensor_grad(a), ca, 3, 0, 0);
    CHECK_VALUES(tensor_grad(b), cb, 4, 0, 0);
    CHECK_NEAR(tensor_clip_grad_norm(3, ps, total + 1e-3), total, 1e-13, 1e-14); /* just above the norm: unchanged */
    CHECK_VALUES(tensor_grad(a), ca, 3, 0, 0);
    double max_norm = 2.5, coef = max_norm / (total + 1e-6), ea[3], eb[4];
    for (int i = 0; i < 3; i++) ea[i] = ca[i] * coef;
    for (int i = 0; i < 4; i++) eb[i] = cb[i] * coef;
    CHECK_NEAR(tensor_clip_grad_norm(3, ps, max_norm), total, 1e-13, 1e-14); /* returns the norm before clipping */
    CHECK_VALUES(tensor_grad(a), ea, 3, 1e-15, 1e-14);
    CHECK_VALUES(tensor_grad(b), eb, 4, 1e-15, 1e-14);
    CHECK(tensor_grad(none) == NULL);
    CHECK_NEAR(tensor_clip_grad_norm(3, ps, 100), max_norm * total / (total + 1e-6), 1e-13, 1e-13); /* now the clipped norm */
    /* f32 gradients, one parameter */
    tensor *f = tensor_set_requires_grad(tensor_zeros(TENSOR_SHAPE(3), TENSOR_F32), true);
    CHECK(tensor_backward(tensor_sum_all(tensor_mul(f, tensor_to_dtype(ta, TENSOR_F32)))) == 0);
    CHECK_NEAR(tensor_clip_grad_norm(1, &f, 1), 13, 1e-6, 1e-6);
    double ef[3] = {3 / (13 + 1e-6), -4 / (13 + 1e-6), 12 / (13 + 1e-6)};
    CHECK_VALUES(tensor_grad(f), ef, 3, 1e-7, 1e-6);
    /* gradients that come out of backward as views: sum_all's is an expanded view of one
       number, and add passes the same gradient to both of its inputs. Each is clipped once. */
    tensor *x = param(3, zeros4), *y = param(3, zeros4), *xy[2] = {x, y};
    CHECK(tensor_backward(tensor_sum_all(x)) == 0);
    CHECK_NEAR(tensor_clip_grad_norm(1, &x, 0.5), sqrt(3.0), 1e-15, 1e-15);
    double ex[3] = {0.5 / (sqrt(3.0) + 1e-6), 0.5 / (sqrt(3.0) + 1e-6), 0.5 / (sqrt(3.0) + 1e-6)};
    CHECK_VALUES(tensor_grad(x), ex, 3, 1e-15, 1e-14);
    tensor_zero_grad(x);
    CHECK(tensor_backward(tensor_sum_all(tensor_mul(tensor_add(x, y), ta))) == 0);
    CHECK_NEAR(tensor_clip_grad_norm(2, xy, 1), sqrt(2.0) * 13, 1e-13, 1e-14);
    double exy[3];
    for (int i = 0; i < 3; i++) exy[i] = ca[i] / (sqrt(2.0) * 13 + 1e-6);
    CHECK_VALUES(tensor_grad(x), exy, 3, 1e-15, 1e-14);
    CHECK_VALUES(tensor_grad(y), exy, 3, 1e-15, 1e-14);
    /* no parameters, or none with a gradient: norm 0 */
    CHECK(tensor_clip_grad_norm(0, NULL, 1) == 0);
    /* a large f32 gradient (summed in place, in f32 lanes) against the sum in double */
    {
        tensor *big = tensor_set_requires_grad(test_random(TENSOR_F32, TENSOR_SHAPE(300001), -1, 1), true);
        CHECK(tensor_backward(tensor_sum_all(tensor_mul(big, big))) == 0); /* gradient 2 big */
        double *gv = test_values(tensor_grad(big)), want = 0;
        for (int64_t i = 0; i < 300001; i++) want += gv[i] * gv[i];
        free(gv);
        CHECK_NEAR(tensor_clip_grad_norm(1, &big, 1e9), sqrt(want), 0, 1e-6);
    }
    CHECK(tensor_clip_grad_norm(1, &none, 1) == 0);
    /* errors: -1 and a message */
    tensor *nulls[1] = {NULL};
    CHECK_BAD_INT(tensor_clip_grad_norm(3, ps, -1) < 0, "tensor_clip_grad_norm");
    CHECK_BAD_INT(tensor_clip_grad_norm(-1, ps, 1) < 0, "tensor_clip_grad_norm");
    CHECK_BAD_INT(tensor_clip_grad_norm(2, NULL, 1) < 0, "tensor_clip_grad_norm");
    CHECK_BAD_INT(tensor_clip_grad_norm(1, nulls, 1) < 0, "tensor_clip_grad_norm");
    #undef SET_GRADS
}

/* ---- initializers ---- */

static void stats(tensor *t, double *mean, double *var, double *lo, double *hi) {
    int64_t n = tensor_numel(t);
    double *v = test_values(t), s = 0, q = 0;
    *lo = INFINITY;
    *hi = -INFINITY;
    for (int64_t i = 0; i < n; i++) { s += v[i]; *lo = fmin(*lo, v[i]); *hi = fmax(*hi, v[i]); }
    *mean = s / (double)n;
    for (int64_t i = 0; i < n; i++) q += (v[i] - *mean) * (v[i] - *mean);
    *var = q / (double)n;
    free(v);
}

TEST(init_uniform_statistics) {
    const int64_t n = 40000;
    tensor_dtype dts[2] = {TENSOR_F64, TENSOR_F32};
    for (int k = 0; k < 2; k++) {
        tensor *t = tensor_zeros(1, &n, dts[k]);
        CHECK(tensor_uniform_(t, -2, 3) == t);
        double mean, var, lo, hi;
        stats(t, &mean, &var, &lo, &hi);
        /* U[-2, 3): mean 0.5, var 25/12; 6 standard errors of margin */
        CHECK(lo >= -2 && hi < 3 + 1e-6);
        CHECK(lo < -1.99 && hi > 2.99);
        CHECK_NEAR(mean, 0.5, 6 * sqrt(25.0 / 12 / (double)n), 0);
        CHECK_NEAR(var, 25.0 / 12, 6 * sqrt((625.0 / 80 - 625.0 / 144) / (double)n), 0);
    }
    /* on a leaf that requires grad (initialization is not recorded), and on a strided view */
    tensor *w = tensor_set_requires_grad(tensor_zeros(TENSOR_SHAPE(4, 6), TENSOR_F64), true);
    CHECK(tensor_uniform_(w, 1, 2) == w);
    CHECK(!tensor_grad(w));
    double mean, var, lo, hi;
    stats(w, &mean, &var, &lo, &hi);
    CHECK(lo >= 1 && hi < 2);
    tensor *z = tensor_zeros(TENSOR_SHAPE(4, 6), TENSOR_F64);
    CHECK(tensor_uniform_(tensor_slice(z, 1, 0, 6, 2), 5, 6) != NULL);
    double *zv = test_values(z);
    for (int i = 0; i < 24; i++) CHECK(i % 2 ? zv[i] == 0 : (zv[i] >= 5 && zv[i] < 6));
    free(zv);
    /* the same seed gives the same values */
    tensor *a = tensor_zeros(TENSOR_SHAPE(8), TENSOR_F64), *b = tensor_zeros(TENSOR_SHAPE(8), TENSOR_F64);
    tensor_manual_seed(5);
    tensor_uniform_(a, 0, 1);
    tensor_manual_seed(5);
    tensor_uniform_(b, 0, 1);
    double *av = test_values(a);
    CHECK_VALUES(b, av, 8, 0, 0);
    free(av);
}

TEST(init_normal_statistics) {
    const int64_t n = 40000;
    tensor *t = tensor_zeros(1, &n, TENSOR_F64);
    CHECK(tensor_normal_(t, 1, 2) == t);
    double mean, var, lo, hi;
    stats(t, &mean, &var, &lo, &hi);
    CHECK_NEAR(mean, 1, 6 * 2 / sqrt((double)n), 0);
    CHECK_NEAR(sqrt(var), 2, 6 * 2 / sqrt(2.0 * (double)n), 0);
    /* the shape: about 68.27% within one std, 95.45% within two */
    double *v = test_values(t);
    int64_t in1 = 0, in2 = 0;
    for (int64_t i = 0; i < n; i++) { in1 += fabs(v[i] - 1) < 2; in2 += fabs(v[i] - 1) < 4; }
    free(v);
    CHECK_NEAR((double)in1 / (double)n, 0.6827, 0.015, 0);
    CHECK_NEAR((double)in2 / (double)n, 0.9545, 0.01, 0);
    tensor *z = tensor_zeros(TENSOR_SHAPE(10), TENSOR_F32);
    CHECK(tensor_normal_(z, 3, 0) == z); /* std 0: the mean */
    double threes[10] = {3, 3, 3, 3, 3, 3, 3, 3, 3, 3};
    CHECK_VALUES(z, threes, 10, 0, 0);
}

/* Checks t against U(-bound, bound): inside it, reaching near both ends, variance bound^2 / 3. */
static void check_uniform_bound(tensor *t, double bound) {
    double mean, var, lo, hi;
    int64_t n = tensor_numel(t);
    stats(t, &mean, &var, &lo, &hi);
    CHECK_MSG(lo >= -bound && hi <= bound, "values [%g, %g] outside +-%g", lo, hi, bound);
    CHECK_MSG(lo < -0.97 * bound && hi > 0.97 * bound, "values [%g, %g] do not reach +-%g", lo, hi, bound);
    CHECK_NEAR(mean, 0, 6 * bound / sqrt(3.0 * (double)n), 0);
    CHECK_NEAR(var, bound * bound / 3, 6 * bound * bound * sqrt(4.0 / 45 / (double)n), 0);
}

TEST(init_kaiming_uniform_bounds) {
    /* torch.nn.init.kaiming_uniform_(w, a, mode='fan_in', nonlinearity='leaky_relu'):
       gain = sqrt(2 / (1 + a^2)), bound = gain * sqrt(3 / fan_in) */
    tensor *lin = tensor_zeros(TENSOR_SHAPE(128, 50), TENSOR_F64); /* [out, in]: fan_in 50 */
    CHECK(tensor_kaiming_uniform_(lin, sqrt(5.0)) == lin);        /* nn.Linear's default: bound 1/sqrt(fan_in) */
    check_uniform_bound(lin, sqrt(2.0 / 6) * sqrt(3.0 / 50));
    CHECK_NEAR(sqrt(2.0 / 6) * sqrt(3.0 / 50), 1 / sqrt(50.0), 1e-15, 1e-15);
    tensor *relu = tensor_zeros(TENSOR_SHAPE(64, 80), TENSOR_F32);
    CHECK(tensor_kaiming_uniform_(relu, 0) == relu);
    check_uniform_bound(relu, sqrt(6.0 / 80) * (1 + 1e-7));
    /* a conv weight [out, in, kH, kW]: fan_in = in * kH * kW */
    tensor *conv = tensor_zeros(TENSOR_SHAPE(16, 8, 3, 3), TENSOR_F64);
    CHECK(tensor_kaiming_uniform_(conv, 1) == conv);
    check_uniform_bound(conv, sqrt(2.0 / 2) * sqrt(3.0 / 72));
    tensor *conv1 = tensor_zeros(TENSOR_SHAPE(40, 6, 5), TENSOR_F64); /* conv1d [out, in, k]: fan_in 30 */
    CHECK(tensor_kaiming_uniform_(conv1, 0) == conv1);
    check_uniform_bound(conv1, sqrt(2.0) * sqrt(3.0 / 30));
}

TEST(init_xavier_uniform_bounds) {
    /* torch.nn.init.xavier_uniform_(w, gain): bound = gain * sqrt(6 / (fan_in + fan_out)) */
    tensor *lin = tensor_zeros(TENSOR_SHAPE(60, 40), TENSOR_F64);
    CHECK(tensor_xavier_uniform_(lin, 1) == lin);
    check_uniform_bound(lin, sqrt(6.0 / 100));
    tensor *g2 = tensor_zeros(TENSOR_SHAPE(30, 70), TENSOR_F64);
    CHECK(tensor_xavier_uniform_(g2, 2) == g2);
    check_uniform_bound(g2, 2 * sqrt(6.0 / 100));
    /* conv [16, 8, 3, 3]: fan_in 72, fan_out 144 */
    tensor *conv = tensor_zeros(TENSOR_SHAPE(16, 8, 3, 3), TENSOR_F64);
    CHECK(tensor_xavier_uniform_(conv, 1) == conv);
    check_uniform_bound(conv, sqrt(6.0 / (72 + 144)));
}

TEST(init_errors) {
    CHECK_BAD(tensor_kaiming_uniform_(tensor_zeros(TENSOR_SHAPE(5), TENSOR_F64), 0), "tensor_kaiming_uniform_"); /* 1-D: no fan in */
    CHECK_BAD(tensor_kaiming_uniform_(tensor_scalar(0, TENSOR_F64), 0), "tensor_kaiming_uniform_");
    CHECK_BAD(tensor_kaiming_uniform_(NULL, 0), "tensor_kaiming_uniform_");
    CHECK_BAD(tensor_kaiming_uniform_(tensor_zeros(TENSOR_SHAPE(3, 0), TENSOR_F64), 0), "tensor_kaiming_uniform_");
    CHECK_BAD(tensor_kaiming_uniform_(tensor_zeros(TENSOR_SHAPE(3, 4), TENSOR_I32), 0), "tensor_kaiming_uniform_");
    CHECK_BAD(tensor_xavier_uniform_(tensor_zeros(TENSOR_SHAPE(5), TENSOR_F64), 1), "tensor_xavier_uniform_");
    CHECK_BAD(tensor_xavier_uniform_(tensor_scalar(0, TENSOR_F32), 1), "tensor_xavier_uniform_");
    CHECK_BAD(tensor_xavier_uniform_(NULL, 1), "tensor_xavier_uniform_");
    CHECK_BAD(tensor_xavier_uniform_(tensor_zeros(TENSOR_SHAPE(3, 4), TENSOR_BOOL), 1), "tensor_xavier_uniform_");
    CHECK_BAD(tensor_uniform_(NULL, 0, 1), "tensor_uniform_");
    CHECK_BAD(tensor_uniform_(tensor_zeros(TENSOR_SHAPE(3), TENSOR_I64), 0, 1), "tensor_uniform_");
    CHECK_BAD(tensor_uniform_(tensor_zeros(TENSOR_SHAPE(3), TENSOR_F32), 2, 1), "tensor_uniform_");
    CHECK_BAD(tensor_normal_(NULL, 0, 1), "tensor_normal_");
    CHECK_BAD(tensor_normal_(tensor_zeros(TENSOR_SHAPE(3), TENSOR_U8), 0, 1), "tensor_normal_");
    CHECK_BAD(tensor_normal_(tensor_zeros(TENSOR_SHAPE(3), TENSOR_F32), 0, -1), "tensor_normal_");
    CHECK_BAD(tensor_normal_(tensor_zeros(TENSOR_SHAPE(3), TENSOR_F32), 0, NAN), "tensor_normal_");
}

/* ---- the f32 fast path (simd.h's vector kernel over the thread pool) against the reference loop ----
   Two copies of an f32 parameter get the same gradients (loss sum(w * c_t) with a fresh c_t each
   step: the gradient is c_t exactly); one steps on the fast path, the other under
   tensor_set_reference_kernels(true) (the loop in double, rounding once into each stored f32). The
   fast path computes in f32 with the constants rounded to f32, as torch.optim does: about eight
   roundings per step, and the two trajectories may round a parameter differently at every step.
   So after t steps they must agree within 6 t ulp of the element's scale: the largest of |p|, lr
   and the step's change |p_t - p_t-1| seen so far (an update larger than the parameter it moves
   is exact to the update's ulp, not the parameter's). Measured: at most 2/3 of that, over 40 x 7
   runs of 20000 elements and 10 steps, every instance. A wrong formula, a missing bias correction
   or an approximate square root or reciprocal shows as hundreds of ulp or more. A third copy steps
   on the fast path with one thread: it must match the two-thread one bit for bit.
   The gradients are at least 0.25 in size, so g = grad + wd p (Adam) never cancels to near 0:
   there Adam's first update, about lr g / (|g| + eps), turns the last bits of g into large
   relative changes, and rounding wd to f32 alone (as torch does) moves it by hundreds of ulp. */
#include <float.h>
#include <stdint.h>

#define FAST_ULPS_PER_STEP 6
static const ref_opt FAST_CASES[] = {
    {0, 0.1, 0, 0, 0, 0, 0, false},              /* SGD */
    {0, 0.05, 0.9, 0.01, 0, 0, 0, false},        /* momentum, weight decay */
    {0, 0.05, 0.8, 0.1, 0, 0, 0, true},          /* nesterov */
    {1, 1e-3, 0, 0, 0.9, 0.999, 1e-8, false},    /* Adam */
    {1, 1e-2, 0, 0.1, 0.8, 0.99, 1e-6, false},   /* Adam, L2 decay */
    {2, 1e-3, 0, 1e-2, 0.9, 0.999, 1e-8, false}, /* AdamW */
    {2, 0.05, 0, 0.5, 0.5, 0.9, 1e-3, false},
};
static const char *const FAST_NAMES[] = {"sgd", "sgd momentum", "sgd nesterov", "adam", "adam decay", "adamw", "adamw big decay"};
enum { N_FAST = sizeof FAST_CASES / sizeof FAST_CASES[0] };
/* empty, one, the vector tails of every instance, a few blocks, and enough to split over 2 threads */
static const int64_t FAST_SIZES[] = {0, 1, 3, 15, 16, 17, 33, 100, 257, 1000, 70001};

/* |a - b| in ulp of the f32 binade of `scale` (NaN == NaN; infinities must match) */
static double f32_ulps(float a, float b, double scale) {
    if (a != a || b != b) return (a != a && b != b) ? 0 : INFINITY;
    if (isinf(a) || isinf(b)) return a == b ? 0 : INFINITY;
    int e;
    frexp(scale < FLT_MIN ? FLT_MIN : scale, &e);
    return fabs((double)a - (double)b) / ldexp(1, e - 24);
}

/* An f32 leaf with values v, at element `off` of its storage (off 1: not vector aligned). */
static tensor *f32_param(const float *v, int64_t n, int64_t off) {
    int64_t full = n + off;
    float *buf = (float *)calloc((size_t)(full ? full : 1), sizeof(float));
    memcpy(buf + off, v, sizeof(float) * (size_t)n);
    tensor *t = tensor_from_data(buf, 1, &full, TENSOR_F32);
    free(buf);
    if (off) t = tensor_slice(t, 0, off, full, 1);
    return tensor_set_requires_grad(t, true);
}

/* zero_grad, loss = sum(w * c) (gradient c), step */
static void grad_step(tensor_optim *o, tensor *w, tensor *c) {
    tensor_optim_zero_grad(o);
    tensor_scope_begin();
    CHECK(tensor_backward(tensor_sum_all(tensor_mul(w, c))) == 0);
    tensor_scope_end();
    CHECK(tensor_optim_step(o) == 0);
}

static double FAST_WORST[N_FAST]; /* the largest difference seen, in ulp of the scale */

/* Runs `steps` steps of case `which` on n elements. specials: a NaN, an infinite and zero
   gradients. Returns how many elements of the last step differ from the reference at all. */
static int64_t fast_vs_reference(int which, int64_t n, int64_t off, int steps, bool specials) {
    const ref_opt *r = &FAST_CASES[which];
    size_t nn = (size_t)(n ? n : 1);
    float *v = (float *)malloc(sizeof(float) * nn), *a = (float *)malloc(sizeof(float) * nn);
    float *b = (float *)malloc(sizeof(float) * nn), *s = (float *)malloc(sizeof(float) * nn);
    double *scale = (double *)malloc(sizeof(double) * nn), *prev = (double *)malloc(sizeof(double) * nn);
    for (int64_t i = 0; i < n; i++) {
        v[i] = i % 11 == 4 ? 0.0f : i % 13 == 6 ? (float)test_uniform(-1e-6, 1e-6) : (float)test_uniform(-1, 1);
        prev[i] = v[i];
        scale[i] = fmax(fabs(prev[i]), r->lr);
    }
    tensor_scope_begin();
    tensor *wf = f32_param(v, n, off), *wr = f32_param(v, n, off), *w1 = f32_param(v, n, 0);
    tensor_optim *of = make_opt(r, 1, &wf), *orf = make_opt(r, 1, &wr), *o1 = make_opt(r, 1, &w1);
    int threads = tensor_get_num_threads();
    int64_t differ = 0;
    for (int t = 1; t <= steps; t++) {
        for (int64_t i = 0; i < n; i++) { /* |c| in [0.25, 2]: see above */
            double m = test_uniform(0.25, 2);
            a[i] = (float)(test_uniform(0, 1) < 0.5 ? -m : m);
        }
        if (specials && n > 20) {
            a[3] = NAN;
            a[n - 2] = t == 2 ? INFINITY : 0.0f;
            a[n / 2] = 0.0f;
        }
        tensor *c = tensor_from_data(a, 1, &n, TENSOR_F32);
        tensor_set_num_threads(2);
        grad_step(of, wf, c);
        tensor_set_num_threads(1);
        grad_step(o1, w1, c);
        tensor_set_num_threads(threads);
        bool was = tensor_set_reference_kernels(true);
        grad_step(orf, wr, c);
        tensor_set_reference_kernels(was);
        CHECK(tensor_copy_to(wf, a, sizeof(float) * (size_t)n) == 0 && tensor_copy_to(wr, b, sizeof(float) * (size_t)n) == 0);
        CHECK(tensor_copy_to(w1, s, sizeof(float) * (size_t)n) == 0);
        int bad = 0;
        differ = 0;
        for (int64_t i = 0; i < n && bad < 3; i++) {
            if (isfinite(b[i])) scale[i] = fmax(scale[i], fmax(fabs((double)b[i]), fabs((double)b[i] - prev[i])));
            prev[i] = b[i];
            double e = f32_ulps(a[i], b[i], scale[i]);
            if (e > FAST_WORST[which]) FAST_WORST[which] = e;
            differ += memcmp(&a[i], &b[i], sizeof(float)) != 0;
            if (!(e <= FAST_ULPS_PER_STEP * t)) {
                test_fail(__FILE__, __LINE__, "%s, n=%lld from element %lld, step %d, element %lld: fast %.9g, reference %.9g: %.1f ulp of %g (%s)",
                          FAST_NAMES[which], (long long)n, (long long)off, t, (long long)i, (double)a[i], (double)b[i], e, scale[i], test_simd_level());
                bad++;
            }
            if (memcmp(&a[i], &s[i], sizeof(float)) != 0 && bad++ < 3)
                test_fail(__FILE__, __LINE__, "%s, n=%lld, step %d, element %lld: 2 threads %.9g, 1 thread %.9g", FAST_NAMES[which], (long long)n, t,
                          (long long)i, (double)a[i], (double)s[i]);
        }
    }
    tensor_optim_free(of);
    tensor_optim_free(orf);
    tensor_optim_free(o1);
    tensor_scope_end();
    free(v);
    free(a);
    free(b);
    free(s);
    free(scale);
    free(prev);
    return differ;
}

TEST(optim_fast_matches_reference) {
    for (int k = 0; k < N_FAST; k++)
        for (size_t s = 0; s < sizeof FAST_SIZES / sizeof FAST_SIZES[0]; s++) fast_vs_reference(k, FAST_SIZES[s], 0, 6, false);
    char line[512];
    int len = snprintf(line, sizeof line, "  optim %s: max difference from the reference over 6 steps, ulp:", test_simd_level());
    for (int k = 0; k < N_FAST && len < (int)sizeof line; k++) len += snprintf(line + len, sizeof line - (size_t)len, " %s %.2f", FAST_NAMES[k], FAST_WORST[k]);
    printf("%s\n", line);
}

/* NaN, infinite and zero gradients; parameters that start at element 1 of their storage. */
TEST(optim_fast_special_values_and_offsets) {
    for (int k = 0; k < N_FAST; k++) {
        fast_vs_reference(k, 41, 1, 4, true);
        fast_vs_reference(k, 70001, 1, 3, true);
    }
}

/* The fast path is really taken: f32 arithmetic differs from the loop in double somewhere. */
TEST(optim_fast_path_is_used) {
    if (strstr(tensor_build_info(), "simd: none")) return; /* no vector layer in this build */
    for (int k = 0; k < N_FAST; k++) CHECK_MSG(fast_vs_reference(k, 20000, 0, 3, false) > 0, "%s: the fast path gave the reference's results everywhere (%s)", FAST_NAMES[k], test_simd_level());
}

/* Layouts and dtypes the vector kernel does not serve take the reference loop (bit for bit the
   same as under tensor_set_reference_kernels(true)): a transposed leaf, a leaf sliced with a step,
   and f64, f16 and bf16 parameters in any layout (f16 and bf16 keep f32 state). Gradients come out
   of backward contiguous (a leaf's first .grad is a fresh tensor), so a strided gradient cannot be
   made here; the kernel checks it all the same. */
TEST(optim_fast_other_layouts) {
    static const tensor_dtype dts[4] = {TENSOR_F32, TENSOR_F64, TENSOR_F16, TENSOR_BF16};
    for (int k = 0; k < N_FAST; k++)
        for (int d = 0; d < 4; d++)
            for (int layout = 0; layout < (dts[d] == TENSOR_F32 ? 2 : 3); layout++) {
                tensor_scope_begin();
                tensor *base = test_random(dts[d], TENSOR_SHAPE(19, 74), -1, 1), *w[2];
                for (int j = 0; j < 2; j++) {
                    tensor *c = tensor_clone(base);
                    /* [37, 19]: the first 37 columns of c transposed, every other column of c
                       transposed, or the first a contiguous copy */
                    tensor *v = tensor_transpose(tensor_slice(c, 1, 0, layout == 1 ? 74 : 37, layout == 1 ? 2 : 1), 0, 1);
                    w[j] = tensor_set_requires_grad(layout == 2 ? tensor_contiguous(v) : v, true);
                }
                double *start = test_values(w[0]);
                CHECK(tensor_shape(w[0])[0] == 37 && tensor_shape(w[0])[1] == 19);
                CHECK(layout == 2 || !tensor_is_contiguous(w[0]));
                tensor *coef = test_random(dts[d], TENSOR_SHAPE(37, 19), -2, 2);
                tensor_optim *o[2] = {make_opt(&FAST_CASES[k], 1, &w[0]), make_opt(&FAST_CASES[k], 1, &w[1])};
                for (int t = 0; t < 3; t++)
                    for (int j = 0; j < 2; j++) {
                        bool was = tensor_set_reference_kernels(j == 1);
                        grad_step(o[j], w[j], coef);
                        tensor_set_reference_kernels(was);
                    }
                double *ref = test_values(w[1]);
                CHECK_VALUES(w[0], ref, 37 * 19, 0, 0);
                free(ref);
                double *now = test_values(w[0]);
                int moved = 0;
                for (int i = 0; i < 37 * 19; i++) moved += now[i] != start[i];
                CHECK(moved > 37 * 19 / 4);
                free(start);
                free(now);
                tensor_optim_free(o[0]);
                tensor_optim_free(o[1]);
                tensor_scope_end();
            }
}

/* f16 and bf16 parameters (f32 state) against the update rules in double, within the dtype's
   rounding of p at each step. */
TEST(optim_half_parameters) {
    static const tensor_dtype dts[2] = {TENSOR_F16, TENSOR_BF16};
    for (int d = 0; d < 2; d++) {
        ref_opt rs[3] = {{0, 0.05, 0.9, 0.01, 0, 0, 0, true}, {1, 0.01, 0, 0.01, 0.9, 0.999, 1e-8, false}, {2, 0.01, 0, 0.1, 0.9, 0.999, 1e-8, false}};
        for (int k = 0; k < 3; k++) {
            tensor *w = tensor_set_requires_grad(tensor_to_dtype(test_tensor(TENSOR_F64, TENSOR_SHAPE(NP), w0), dts[d]), true);
            tensor *c = test_tensor(dts[d], TENSOR_SHAPE(NP), cw);
            tensor_optim *o = make_opt(&rs[k], 1, &w);
            for (int s = 0; s < 3; s++) train_step(o, w, c);
            double expect[NP];
            memcpy(expect, w0, sizeof expect);
            ref_run(&rs[k], 3, expect);
            CHECK_VALUES(w, expect, NP, test_tol(dts[d]), 2 * test_tol(dts[d]));
            CHECK(tensor_get_dtype(w) == dts[d]);
            tensor_optim_free(o);
        }
    }
}

#if defined(__linux__) && (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
/* The fast-path tests once more for every other x86 instance (avx512, avx2, sse2), each in a child
   process of this binary with TENSOR_SIMD set, as test_simd.c does; one the CPU lacks is skipped. */
static void optim_fast_at_level(const char *level) {
    if (getenv("TENSOR_SIMD")) return; /* a child, or an instance chosen from outside */
    if (!test_cpu_runs(level)) { test_skip_cpu("the optimizer kernels at TENSOR_SIMD=%s", level); return; }
    if (strstr(test_simd_level(), level)) return; /* this process ran that one */
    test_run_at_simd_level(__FILE__, __LINE__, level, "", "optim_fast", "optim ");
}
TEST(optim_fast_at_level_avx512) { optim_fast_at_level("avx512"); }
TEST(optim_fast_at_level_avx2) { optim_fast_at_level("avx2"); }
TEST(optim_fast_at_level_sse2) { optim_fast_at_level("sse2"); }
#endif

/* ---- parameter groups ---- */

/* Two groups (a: lr 0.05, decay 0.1; b: lr 0.02, no decay) step exactly as two optimizers with
   those settings would, and set_lr / set_group_lr change every group / one group. */
TEST(optim_parameter_groups_step_as_separate_optimizers) {
    tensor *c = test_tensor(TENSOR_F64, TENSOR_SHAPE(NP), cw);
    tensor *a = param(NP, w0), *b = param(NP, cw), *a2 = param(NP, w0), *b2 = param(NP, cw);
    tensor_optim *o = tensor_optim_adamw(1, &a, 0.05, 0.9, 0.99, 1e-8, 0.1);
    CHECK(tensor_optim_add_group(o, 1, &b, 0.02, 0) == 1);
    tensor_optim *oa = tensor_optim_adamw(1, &a2, 0.05, 0.9, 0.99, 1e-8, 0.1), *ob = tensor_optim_adamw(1, &b2, 0.02, 0.9, 0.99, 1e-8, 0);
    for (int s = 0; s < 6; s++) {
        if (s == 2) { tensor_optim_set_group_lr(o, 1, 0.03); tensor_optim_set_lr(ob, 0.03); }
        if (s == 4) { tensor_optim_set_lr(o, 0.01); tensor_optim_set_lr(oa, 0.01); tensor_optim_set_lr(ob, 0.01); }
        tensor_optim_zero_grad(o);
        tensor_optim_zero_grad(oa);
        tensor_optim_zero_grad(ob);
        tensor_scope_begin();
        CHECK(tensor_backward(tensor_add(tensor_sum_all(tensor_mul(tensor_square(a), c)), tensor_sum_all(tensor_mul(tensor_square(b), c)))) == 0);
        CHECK(tensor_backward(tensor_sum_all(tensor_mul(tensor_square(a2), c))) == 0);
        CHECK(tensor_backward(tensor_sum_all(tensor_mul(tensor_square(b2), c))) == 0);
        tensor_scope_end();
        CHECK(tensor_optim_step(o) == 0 && tensor_optim_step(oa) == 0 && tensor_optim_step(ob) == 0);
    }
    CHECK(test_same_bits(a, a2) && test_same_bits(b, b2));
    CHECK(!test_same_bits(a, param(NP, w0)));
    tensor_optim_free(o);
    tensor_optim_free(oa);
    tensor_optim_free(ob);
}

/* f32 parameters take the vector kernel with each group's own constants. */
TEST(optim_parameter_groups_f32_kernel) {
    int64_t n = 1000;
    tensor *init = tensor_randn(TENSOR_SHAPE(n), TENSOR_F32);
    tensor *ps[4];
    for (int i = 0; i < 4; i++) ps[i] = tensor_set_requires_grad(tensor_clone(init), true);
    tensor_optim *o = tensor_optim_adamw(1, &ps[0], 1e-2, 0.9, 0.95, 1e-8, 0.1);
    CHECK(tensor_optim_add_group(o, 1, &ps[1], 3e-3, 0) == 1);
    tensor_optim *o2 = tensor_optim_adamw(1, &ps[2], 1e-2, 0.9, 0.95, 1e-8, 0.1), *o3 = tensor_optim_adamw(1, &ps[3], 3e-3, 0.9, 0.95, 1e-8, 0);
    for (int s = 0; s < 3; s++) {
        tensor_scope_begin();
        for (int i = 0; i < 4; i++) CHECK(tensor_backward(tensor_sum_all(tensor_pow_scalar(ps[i], 3))) == 0);
        tensor_scope_end();
        CHECK(tensor_optim_step(o) == 0 && tensor_optim_step(o2) == 0 && tensor_optim_step(o3) == 0);
        tensor_optim_zero_grad(o);
        tensor_optim_zero_grad(o2);
        tensor_optim_zero_grad(o3);
    }
    CHECK(test_same_bits(ps[0], ps[2]) && test_same_bits(ps[1], ps[3]) && !test_same_bits(ps[0], ps[1]));
    tensor_optim_free(o);
    tensor_optim_free(o2);
    tensor_optim_free(o3);
}

TEST(optim_parameter_group_errors) {
    tensor *a = param(NP, w0), *b = param(NP, w0), *plain = test_tensor(TENSOR_F64, TENSOR_SHAPE(NP), w0);
    tensor *twice[2] = {a, a}, *dup[2] = {b, a}, *plain1[1] = {plain}, *null1[1] = {NULL};
    CHECK_BAD_INT(optim_failed(tensor_optim_sgd(2, twice, 0.1, 0, 0, false)), "parameter 1 is parameter 0 again");
    tensor *alias = tensor_detach(a); /* another handle, no grad: refused as not requiring grad */
    tensor_optim *o = tensor_optim_sgd(1, &a, 0.1, 0, 0, false);
    CHECK_BAD_INT(tensor_optim_add_group(o, 2, dup, 0.1, 0) == -1, "already in group 0");
    CHECK_BAD_INT(tensor_optim_add_group(o, 1, plain1, 0.1, 0) == -1, "tensor_optim_add_group");
    CHECK_BAD_INT(tensor_optim_add_group(o, 1, null1, 0.1, 0) == -1, "tensor_optim_add_group");
    CHECK_BAD_INT(tensor_optim_add_group(o, 0, &b, 0.1, 0) == -1, "tensor_optim_add_group");
    CHECK_BAD_INT(tensor_optim_add_group(o, 1, &b, -0.1, 0) == -1, "tensor_optim_add_group");
    CHECK_BAD_INT(tensor_optim_add_group(o, 1, &b, 0.1, NAN) == -1, "tensor_optim_add_group");
    CHECK_BAD_INT(tensor_optim_add_group(NULL, 1, &b, 0.1, 0) == -1, "tensor_optim_add_group");
    CHECK_BAD_INT(tensor_optim_add_group(o, 1, &alias, 0.1, 0) == -1, "tensor_optim_add_group");
    tensor_clear_error();
    tensor_optim_set_group_lr(o, 1, 0.1); /* no group 1 yet */
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "out of range"));
    tensor_clear_error();
    tensor_optim_set_group_lr(o, 0, -1);
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "tensor_optim_set_group_lr"));
    tensor_clear_error();
    tensor_optim_set_group_lr(NULL, 0, 1);
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "tensor_optim_set_group_lr"));
    tensor_clear_error();
    /* the refused groups left the optimizer as it was: one step moves a only */
    CHECK(tensor_optim_add_group(o, 1, &b, 0.5, 0) == 1);
    tensor *c = test_tensor(TENSOR_F64, TENSOR_SHAPE(NP), cw);
    tensor_scope_begin();
    CHECK(tensor_backward(tensor_add(tensor_sum_all(tensor_mul(tensor_square(a), c)), tensor_sum_all(tensor_mul(tensor_square(b), c)))) == 0);
    tensor_scope_end();
    CHECK(tensor_optim_step(o) == 0);
    double pa[NP], pb[NP];
    for (int i = 0; i < NP; i++) { pa[i] = w0[i] - 0.1 * 2 * cw[i] * w0[i]; pb[i] = w0[i] - 0.5 * 2 * cw[i] * w0[i]; }
    CHECK_VALUES(a, pa, NP, 1e-15, 1e-14);
    CHECK_VALUES(b, pb, NP, 1e-15, 1e-14);
    tensor_optim_free(o);
}

/* A checkpoint holds each group's lr and weight decay and each parameter's group; loading it into
   an optimizer of other groups is an error, and an old checkpoint (one group) still loads. */
TEST(optim_parameter_groups_in_checkpoints) {
    tensor *a = param(NP, w0), *b = param(NP, cw), *c = test_tensor(TENSOR_F64, TENSOR_SHAPE(NP), cw);
    tensor_optim *o = tensor_optim_adamw(1, &a, 0.05, 0.9, 0.99, 1e-8, 0.1);
    CHECK(tensor_optim_add_group(o, 1, &b, 0.02, 0) == 1);
    tensor_scope_begin();
    CHECK(tensor_backward(tensor_add(tensor_sum_all(tensor_mul(tensor_square(a), c)), tensor_sum_all(tensor_mul(tensor_square(b), c)))) == 0);
    tensor_scope_end();
    CHECK(tensor_optim_step(o) == 0);
    tensor_dict *d = tensor_dict_new();
    CHECK(tensor_optim_state_save(o, d, "opt") == 0);
    /* the same groups made with other settings: the checkpoint's settings come back, so its next
       step is the one of an optimizer made with the checkpoint's settings */
    tensor_optim_free(o);
    tensor *a2 = tensor_set_requires_grad(tensor_detach(tensor_clone(a)), true), *b2 = tensor_set_requires_grad(tensor_detach(tensor_clone(b)), true);
    tensor_optim *o2 = tensor_optim_adamw(1, &a, 0.5, 0.9, 0.99, 1e-8, 0);
    CHECK(tensor_optim_add_group(o2, 1, &b, 0.5, 0.3) == 1);
    CHECK_MSG(tensor_optim_state_load(o2, d, "opt") == 0, "%s", tensor_last_error());
    tensor_optim *ref = tensor_optim_adamw(1, &a2, 0.05, 0.9, 0.99, 1e-8, 0.1);
    CHECK(tensor_optim_add_group(ref, 1, &b2, 0.02, 0) == 1);
    CHECK(tensor_optim_state_load(ref, d, "opt") == 0);
    tensor_optim_zero_grad(o2);
    tensor_scope_begin();
    CHECK(tensor_backward(tensor_add(tensor_sum_all(tensor_mul(tensor_square(a), c)), tensor_sum_all(tensor_mul(tensor_square(b), c)))) == 0);
    CHECK(tensor_backward(tensor_add(tensor_sum_all(tensor_mul(tensor_square(a2), c)), tensor_sum_all(tensor_mul(tensor_square(b2), c)))) == 0);
    tensor_scope_end();
    CHECK(tensor_optim_step(o2) == 0 && tensor_optim_step(ref) == 0);
    CHECK(test_same_bits(a, a2) && test_same_bits(b, b2));
    tensor_optim_free(o2);
    tensor_optim_free(ref);
    /* one group against a checkpoint of two, and the reverse */
    tensor_optim *one = tensor_optim_adamw(1, &a, 0.05, 0.9, 0.99, 1e-8, 0.1);
    CHECK_BAD_INT(tensor_optim_state_load(one, d, "opt") != 0, "tensor_optim_state_load");
    tensor_optim_free(one);
    tensor *ab[2] = {a, b};
    tensor_optim *merged = tensor_optim_adamw(2, ab, 0.05, 0.9, 0.99, 1e-8, 0.1); /* two parameters, one group */
    CHECK_BAD_INT(tensor_optim_state_load(merged, d, "opt") != 0, "parameter group");
    tensor_optim_free(merged);
    tensor_optim *swapped = tensor_optim_adamw(1, &b, 0.05, 0.9, 0.99, 1e-8, 0.1);
    CHECK(tensor_optim_add_group(swapped, 1, &a, 0.05, 0) == 1);
    CHECK(tensor_optim_state_load(swapped, d, "opt") == 0); /* same structure: the names are the caller's business */
    tensor_optim_free(swapped);
    tensor_dict_free(d);
    /* a checkpoint written before groups existed: no .param_groups */
    tensor_dict *old = tensor_dict_new();
    tensor *ab2[2] = {a, b};
    tensor_optim *single = tensor_optim_sgd(2, ab2, 0.25, 0, 0.5, false);
    CHECK(tensor_optim_state_save(single, old, "opt") == 0);
    tensor_dict *stripped = tensor_dict_new();
    for (int i = 0; i < tensor_dict_len(old); i++)
        if (!strstr(tensor_dict_name(old, i), "param_group")) tensor_dict_set(stripped, tensor_dict_name(old, i), tensor_dict_at(old, i));
    CHECK(tensor_dict_len(stripped) == tensor_dict_len(old) - 2);
    tensor_optim *fresh = tensor_optim_sgd(2, ab2, 1, 0, 0, false);
    CHECK(tensor_optim_state_load(fresh, stripped, "opt") == 0);
    tensor_optim_zero_grad(fresh);
    tensor *before = tensor_clone(a);
    tensor_scope_begin();
    CHECK(tensor_backward(tensor_sum_all(tensor_mul(tensor_square(a), c))) == 0);
    tensor_scope_end();
    CHECK(tensor_optim_step(fresh) == 0);
    /* lr 0.25, weight decay 0.5 came back from the file: p - 0.25 (2 c p + 0.5 p) */
    double want[NP], p0[NP];
    tensor_copy_to(before, p0, sizeof p0);
    for (int i = 0; i < NP; i++) want[i] = p0[i] - 0.25 * (2 * cw[i] * p0[i] + 0.5 * p0[i]);
    CHECK_VALUES(a, want, NP, 1e-15, 1e-14);
    tensor_optim *pair = tensor_optim_sgd(1, &a, 1, 0, 0, false);
    CHECK(tensor_optim_add_group(pair, 1, &b, 1, 0) == 1);
    CHECK_BAD_INT(tensor_optim_state_load(pair, stripped, "opt") != 0, "one parameter group");
    tensor_optim_free(pair);
    tensor_optim_free(fresh);
    tensor_optim_free(single);
    tensor_dict_free(stripped);
    tensor_dict_free(old);
}

/* ---- learning-rate schedules against torch.optim.lr_scheduler (tests/interop/lr_schedules.py) ---- */
static const double E_lr_warmup_cosine[] = {0.0001, 0.0002, 0.00030000000000000003, 0.0004, 0.0005, 0.0006, 0.0007, 0.0007999999999999999, 0.0009, 0.001, 0.001, 0.000999725872158593, 0.0009989038226169207, 0.0009975348529157229, 0.0009956206309337066, 0.0009931634888554934, 0.0009901664203302123, 0.000986633076824198, 0.0009825677631722432, 0.000977975432332819, 0.0009728616793536585, 0.0009672327345550541, 0.0009610954559391701, 0.000954457320834625, 0.0009473264167865169, 0.0009397114317029973, 0.0009316216432703915, 0.0009230669076497686, 0.0009140576474687262, 0.0009046048391230248, 0.0008947199994035399, 0.0008844151714648273, 0.0008737029101523929, 0.0008625962667065486, 0.0008511087728614861, 0.0008392544243589426, 0.0008270476638965462, 0.000814503363531613, 0.0008016368065618361, 0.0007884636689049423, 0.0007750000000000001, 0.0007612622032536509, 0.0007472670160550848, 0.00073303148938411, 0.0007185729670371603, 0.0007039090644965509, 0.0006890576474687263, 0.0006740368101176495, 0.0006588648530198505, 0.0006435602608679918, 0.0006281416799501187, 0.0006126278954320294, 0.000597037808470444, 0.0005813904131848563, 0.0005657047735161255, 0.0005499999999999999, 0.0005342952264838747, 0.0005186095868151436, 0.000502962191529556, 0.00048737210456797057, 0.00047185832004988137, 0.0004564397391320084, 0.0004411351469801495, 0.0004259631898823504, 0.00041094235253127373, 0.00039609093550344916, 0.0003814270329628396, 0.00036696851061589, 0.00035273298394491515, 0.0003387377967463493, 0.00032500000000000015, 0.0003115363310950579, 0.00029836319343816404, 0.0002854966364683872, 0.00027295233610345385, 0.0002607455756410574, 0.0002488912271385139, 0.00023740373329345142, 0.00022629708984760703, 0.00021558482853517276, 0.00020528000059646001, 0.00019539516087697522, 0.00018594235253127376, 0.00017693309235023133, 0.00016837835672960837, 0.00016028856829700263, 0.000152673583213483, 0.00014554267916537487, 0.0001389045440608297, 0.00013276726544494575, 0.0001271383206463413, 0.00012202456766718094, 0.00011743223682775662, 0.0001133669231758016, 0.00010983357966978745, 0.00010683651114450639, 0.0001043793690662934, 0.00010246514708427702, 0.00010109617738307911, 0.00010027412784140692};
static const double E_lr_cosine[] = {0.5, 0.49865786436522697, 0.49464616217978236, 0.48800884649231263, 0.47881863712243716, 0.4671762239271875, 0.45320916362186214, 0.4370704822419616, 0.41893699855792027, 0.39900738681165593, 0.3775, 0.3546504775535711, 0.33070916362186215, 0.30593836425035104, 0.28060947350057514, 0.25500000000000006, 0.22939052649942493, 0.20406163574964892, 0.1792908363781379, 0.155349522446429, 0.13250000000000006, 0.11099261318834412, 0.09106300144207982, 0.07292951775803848, 0.05679083637813792, 0.042823776072812535, 0.03118136287756277, 0.021991153507687388, 0.015353837820217608, 0.011342135634773017, 0.01, 0.011342135634773045, 0.015353837820217715, 0.0219911535076876, 0.031181362877563214, 0.04282377607281315, 0.05679083637813879, 0.07292951775803967, 0.0910630014420813, 0.11099261318834609, 0.13250000000000237, 0.15534952244643177, 0.17929083637814128, 0.20406163574965278, 0.22939052649942918};
static const double E_lr_step[] = {0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.2, 0.06, 0.06, 0.06, 0.06, 0.06, 0.06, 0.06, 0.018, 0.018, 0.018, 0.018, 0.018, 0.018, 0.018, 0.005399999999999999, 0.005399999999999999, 0.005399999999999999, 0.005399999999999999, 0.005399999999999999, 0.005399999999999999, 0.005399999999999999, 0.0016199999999999997, 0.0016199999999999997};
static const double E_lr_exponential[] = {0.2, 0.18000000000000002, 0.16200000000000003, 0.14580000000000004, 0.13122000000000003, 0.11809800000000004, 0.10628820000000004, 0.09565938000000004, 0.08609344200000005, 0.07748409780000004, 0.06973568802000003, 0.06276211921800003, 0.056485907296200025, 0.050837316566580026, 0.04575358490992203, 0.04117822641892983, 0.03706040377703684, 0.03335436339933316, 0.030018927059399847, 0.027017034353459864, 0.02431533091811388, 0.02188379782630249, 0.019695418043672242, 0.01772587623930502, 0.015953288615374518, 0.014357959753837067, 0.012922163778453361, 0.011629947400608026, 0.010466952660547223, 0.0094202573944925};
static const double E_lr_one_cycle[] = {0.0040000000000000036, 0.0052034602152724735, 0.008753494340683884, 0.014472088841534572, 0.022072489510780793, 0.03117358052235722, 0.04131899517009691, 0.052000000000000005, 0.0626810048299031, 0.07282641947764279, 0.08192751048921922, 0.08952791115846544, 0.09524650565931612, 0.09879653978472754, 0.1, 0.09979871550490317, 0.09919648264401378, 0.09819815024222053, 0.09681175628501273, 0.09504846320134738, 0.09292246799033459, 0.0904508879153485, 0.08765362268588736, 0.08455319423681344, 0.0811745653949763, 0.07754493889320883, 0.07369353834991745, 0.06965137297768985, 0.0654509879153485, 0.06112620219362893, 0.05671183644422961, 0.05224343254455968, 0.04775696745544034, 0.043288563555770404, 0.03887419780637107, 0.03454941208465151, 0.030349027022310158, 0.026306861650082565, 0.022455461106791173, 0.0188258346050237, 0.015447205763186566, 0.012346777314112658, 0.009549512084651508, 0.007077932009665416, 0.004951936798652629, 0.003188643714987268, 0.0018022497577794773, 0.0008039173559862364, 0.00020168449509684564, 4e-07};
#define LR_N(a) ((int64_t)(sizeof(a) / sizeof((a)[0])))
static void check_schedule(const char *name, const double *want, int64_t n, double (*f)(int64_t)) {
    for (int64_t s = 0; s < n; s++) {
        double got = f(s);
        CHECK_MSG(fabs(got - want[s]) <= 1e-13 * fabs(want[s]), "%s step %lld: %.17g, PyTorch %.17g", name, (long long)s, got, want[s]);
    }
}
static double lr_warmup_cosine(int64_t s) { return tensor_lr_linear_warmup_cosine(s, 10, 100, 1e-3, 1e-4); }
static double lr_cosine(int64_t s) { return tensor_lr_cosine(s, 30, 0.5, 0.01); }
static double lr_step(int64_t s) { return tensor_lr_step(s, 7, 0.3, 0.2); }
static double lr_exponential(int64_t s) { return tensor_lr_exponential(s, 0.9, 0.2); }
static double lr_one_cycle(int64_t s) { return tensor_lr_one_cycle(s, 50, 0.1, 0.3, 25, 1e4); }

TEST(lr_schedules_match_pytorch) {
    check_schedule("warmup_cosine", E_lr_warmup_cosine, LR_N(E_lr_warmup_cosine), lr_warmup_cosine);
    check_schedule("cosine", E_lr_cosine, LR_N(E_lr_cosine), lr_cosine);
    check_schedule("step", E_lr_step, LR_N(E_lr_step), lr_step);
    check_schedule("exponential", E_lr_exponential, LR_N(E_lr_exponential), lr_exponential);
    check_schedule("one_cycle", E_lr_one_cycle, LR_N(E_lr_one_cycle), lr_one_cycle);
    /* after total the warmup-cosine schedule stays at lr_min */
    CHECK(tensor_lr_linear_warmup_cosine(100, 10, 100, 1e-3, 1e-4) == 1e-4 && tensor_lr_linear_warmup_cosine(5000, 10, 100, 1e-3, 1e-4) == 1e-4);
    CHECK(tensor_lr_linear_warmup_cosine(0, 0, 10, 1, 0) == 1); /* no warmup: the cosine from its top */
}

TEST(lr_schedule_errors) {
    CHECK_BAD_INT(isnan(tensor_lr_cosine(-1, 10, 1, 0)), "tensor_lr_cosine");
    CHECK_BAD_INT(isnan(tensor_lr_cosine(0, 0, 1, 0)), "tensor_lr_cosine");
    CHECK_BAD_INT(isnan(tensor_lr_step(0, 0, 0.5, 1)), "tensor_lr_step");
    CHECK_BAD_INT(isnan(tensor_lr_exponential(-3, 0.5, 1)), "tensor_lr_exponential");
    CHECK_BAD_INT(isnan(tensor_lr_linear_warmup_cosine(0, 10, 10, 1, 0)), "tensor_lr_linear_warmup_cosine");
    CHECK_BAD_INT(isnan(tensor_lr_linear_warmup_cosine(0, -1, 10, 1, 0)), "tensor_lr_linear_warmup_cosine");
    CHECK_BAD_INT(isnan(tensor_lr_one_cycle(50, 50, 0.1, 0.3, 25, 1e4)), "tensor_lr_one_cycle"); /* past the last step, as PyTorch */
    CHECK_BAD_INT(isnan(tensor_lr_one_cycle(0, 50, 0.1, 1.0, 25, 1e4)), "tensor_lr_one_cycle");
    CHECK_BAD_INT(isnan(tensor_lr_one_cycle(0, 50, 0.1, 0.3, 0, 1e4)), "tensor_lr_one_cycle");
    CHECK_BAD_INT(isnan(tensor_lr_one_cycle(0, 2, 0.1, 0.3, 25, 1e4)), "tensor_lr_one_cycle"); /* 0.6 - 1 < 0: no warmup phase */
}
