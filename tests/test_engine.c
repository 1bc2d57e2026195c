/* The autograd engine: long graphs, accumulation, the graph's lifetime, tensor_autograd_grad,
   detach and no-grad mode, the in-place checks, handle and byte counts, and small networks that
   must learn (two spirals) and must not leak over 1,000 steps. */
#include "test.h"

static tensor *vec(int n, const double *v) { return test_tensor(TENSOR_F64, 1, (const int64_t[]){n}, v); }
static tensor *leaf(int n, const double *v) { return tensor_set_requires_grad(vec(n, v), true); }

/* The last error names fn and contains what. */
static void check_error(int line, const char *fn, const char *what) {
    const char *m = tensor_last_error();
    if (!m || !strstr(m, fn) || !strstr(m, what)) test_fail(__FILE__, line, "expected an error from %s about '%s', got '%s'", fn, what, m ? m : "(none)");
    tensor_clear_error();
}

/* ---- long graphs ---- */

TEST(engine_chain_of_100000_ops) {
    static const double xv[2] = {0.5, -1.25};
    tensor *x = leaf(2, xv);
    tensor_scope_begin();
    tensor *y = tensor_square(x);
    for (int i = 0; i < 100000 && y; i++) y = tensor_mul_scalar(y, 1.0);
    CHECK(y != NULL);
    CHECK(tensor_backward(tensor_sum_all(y)) == 0);
    tensor_scope_end();
    double g[2] = {2 * xv[0], 2 * xv[1]}; /* every node passed the gradient down to the leaf */
    CHECK_VALUES(tensor_grad(x), g, 2, 0, 0);
}

/* The same chain with each handle freed as soon as the next op is made: the graph alone keeps
   what backward needs, and freeing the last handle frees the whole chain (without recursion). */
TEST(engine_chain_freed_as_it_goes) {
    int64_t h0 = tensor_live_handles(), b0 = tensor_live_bytes();
    static const double xv[2] = {2, 3};
    tensor *x = leaf(2, xv);
    tensor *y = tensor_exp(x);
    for (int i = 0; i < 100000 && y; i++) {
        tensor *next = tensor_mul_scalar(y, i % 2 ? 2.0 : 0.5);
        tensor_free(y);
        y = next;
    }
    tensor *loss = tensor_sum_all(y);
    tensor_free(y);
    CHECK(tensor_backward(loss) == 0);
    double g[2] = {exp(2), exp(3)};
    CHECK_VALUES(tensor_grad(x), g, 2, 0, 1e-15);
    /* a second chain, freed without backward */
    y = tensor_sin(x);
    for (int i = 0; i < 100000 && y; i++) {
        tensor *next = tensor_add_scalar(y, 0);
        tensor_free(y);
        y = next;
    }
    tensor_free(y);
    tensor_free(loss);
    tensor_free(x);
    CHECK(tensor_live_handles() == h0);
    CHECK(tensor_live_bytes() == b0);
}

/* A diamond: x feeds y twice; the engine waits for both paths before running y's node. */
TEST(engine_shared_subexpressions) {
    static const double xv[3] = {0.5, -1, 2};
    tensor *x = leaf(3, xv);
    tensor *y = tensor_mul(x, x);
    tensor *z = tensor_add(y, tensor_mul(y, y)); /* x^2 + x^4 */
    tensor *w = tensor_add(z, x);                 /* + x: the leaf used at two depths */
    CHECK(tensor_backward_with(w, tensor_ones(TENSOR_SHAPE(3), TENSOR_F64)) == 0);
    double g[3];
    for (int i = 0; i < 3; i++) g[i] = 2 * xv[i] + 4 * pow(xv[i], 3) + 1;
    CHECK_VALUES(tensor_grad(x), g, 3, 1e-15, 1e-15);
}

/* ---- accumulation and the graph's lifetime ---- */

TEST(engine_gradients_accumulate) {
    static const double xv[3] = {1, -2, 0.5};
    tensor *x = leaf(3, xv);
    CHECK(tensor_backward(tensor_sum_all(tensor_square(x))) == 0);
    CHECK(tensor_backward(tensor_sum_all(tensor_mul_scalar(x, 3))) == 0); /* a second graph */
    double g[3] = {2 * 1 + 3, 2 * -2 + 3, 2 * 0.5 + 3};
    CHECK_VALUES(tensor_grad(x), g, 3, 0, 0);
    /* an alias of the leaf shares its .grad */
    tensor *grad_before = tensor_grad(x);
    CHECK(grad_before != NULL);
    tensor_zero_grad(x);
    CHECK(tensor_grad(x) == NULL);
    CHECK(tensor_backward(tensor_sum_all(tensor_mul_scalar(x, 3))) == 0);
    double g3[3] = {3, 3, 3};
    CHECK_VALUES(tensor_grad(x), g3, 3, 0, 0);
    tensor_zero_grad(NULL); /* harmless */
    tensor_zero_grad(tensor_ones(TENSOR_SHAPE(2), TENSOR_F64));
}

/* .grad is the leaf's own contiguous tensor, never a view shared with another leaf's gradient. */
TEST(engine_grad_has_its_own_storage) {
    static const double xv[3] = {1, 2, 3};
    tensor *x = leaf(3, xv), *y = leaf(3, xv);
    CHECK(tensor_backward(tensor_sum_all(tensor_add(x, y))) == 0); /* add hands g to both; sum_all expands */
    CHECK(tensor_is_contiguous(tensor_grad(x)) && tensor_is_contiguous(tensor_grad(y)));
    bool was = tensor_set_grad_enabled(false);
    CHECK(tensor_mul_scalar_(tensor_grad(x), 5) != NULL);
    tensor_set_grad_enabled(was);
    double five[3] = {5, 5, 5}, one[3] = {1, 1, 1};
    CHECK_VALUES(tensor_grad(x), five, 3, 0, 0);
    CHECK_VALUES(tensor_grad(y), one, 3, 0, 0);
}

TEST(engine_backward_twice_through_one_graph_fails) {
    static const double xv[2] = {1.5, -0.5};
    tensor *x = leaf(2, xv);
    tensor *loss = tensor_sum_all(tensor_exp(x));
    CHECK(tensor_backward(loss) == 0);
    tensor_clear_error();
    CHECK(tensor_backward(loss) != 0);
    check_error(__LINE__, "tensor_backward", "freed");
    double g[2] = {exp(1.5), exp(-0.5)}; /* the failed call added nothing */
    CHECK_VALUES(tensor_grad(x), g, 2, 0, 1e-15);
    CHECK(tensor_backward_with(loss, NULL) != 0);
    check_error(__LINE__, "tensor_backward_with", "freed");
    /* create_graph keeps the graph: it can be run again */
    tensor *y = tensor_sum_all(tensor_exp(x)), *g1 = NULL, *g2 = NULL;
    CHECK(tensor_autograd_grad(1, &y, NULL, 1, &x, &g1, true) == 0);
    CHECK(tensor_autograd_grad(1, &y, NULL, 1, &x, &g2, false) == 0);
    CHECK_VALUES(g1, g, 2, 0, 1e-15);
    CHECK_VALUES(g2, g, 2, 0, 1e-15);
}

TEST(engine_backward_needs_one_element_or_grad_out) {
    static const double xv[3] = {1, 2, 3}, go[3] = {0.5, -1, 2};
    tensor *x = leaf(3, xv);
    tensor *y = tensor_square(x);
    CHECK(tensor_backward(y) != 0);
    check_error(__LINE__, "tensor_backward", "[3]");
    CHECK(tensor_backward_with(y, NULL) != 0);
    check_error(__LINE__, "tensor_backward_with", "[3]");
    CHECK(tensor_backward_with(y, tensor_ones(TENSOR_SHAPE(2), TENSOR_F64)) != 0);
    check_error(__LINE__, "tensor_backward_with", "[2]");
    CHECK(tensor_backward_with(y, vec(3, go)) == 0);
    double g[3] = {2 * 1 * 0.5, 2 * 2 * -1, 2 * 3 * 2};
    CHECK_VALUES(tensor_grad(x), g, 3, 0, 0);
    /* a [1, 1] loss is one element: fine */
    tensor *l11 = tensor_reshape(tensor_sum_all(x), 2, (const int64_t[]){1, 1});
    tensor_zero_grad(x);
    CHECK(tensor_backward(l11) == 0);
    double ones[3] = {1, 1, 1};
    CHECK_VALUES(tensor_grad(x), ones, 3, 0, 0);
    /* errors */
    CHECK(tensor_backward(NULL) != 0);
    check_error(__LINE__, "tensor_backward", "");
    CHECK(tensor_backward(tensor_sum_all(vec(3, xv))) != 0); /* no graph */
    check_error(__LINE__, "tensor_backward", "grad");
    CHECK(tensor_backward_with(NULL, NULL) != 0);
    check_error(__LINE__, "tensor_backward_with", "");
}

/* ---- tensor_autograd_grad ---- */

TEST(engine_autograd_grad_second_derivative) {
    static const double xv[3] = {0.5, -2, 1.5};
    tensor *x = leaf(3, xv);
    tensor *y = tensor_sum_all(tensor_mul(tensor_mul(x, x), x)); /* sum x^3 */
    tensor *g1 = NULL, *g2 = NULL;
    CHECK(tensor_autograd_grad(1, &y, NULL, 1, &x, &g1, true) == 0);
    double d1[3], d2[3];
    for (int i = 0; i < 3; i++) { d1[i] = 3 * xv[i] * xv[i]; d2[i] = 6 * xv[i]; }
    CHECK_VALUES(g1, d1, 3, 0, 1e-15);
    CHECK(tensor_requires_grad(g1));
    CHECK(tensor_autograd_grad(1, (tensor *const[]){tensor_sum_all(g1)}, NULL, 1, &x, &g2, false) == 0);
    CHECK_VALUES(g2, d2, 3, 0, 1e-15);
    CHECK(!tensor_requires_grad(g2));
    CHECK(tensor_grad(x) == NULL); /* autograd_grad returns gradients; .grad is left alone */
    /* pow_scalar: the same, and a third derivative (6) */
    tensor *p = tensor_sum_all(tensor_pow_scalar(x, 3)), *q1 = NULL, *q2 = NULL, *q3 = NULL;
    CHECK(tensor_autograd_grad(1, &p, NULL, 1, &x, &q1, true) == 0);
    CHECK(tensor_autograd_grad(1, (tensor *const[]){tensor_sum_all(q1)}, NULL, 1, &x, &q2, true) == 0);
    CHECK(tensor_autograd_grad(1, (tensor *const[]){tensor_sum_all(q2)}, NULL, 1, &x, &q3, false) == 0);
    CHECK_VALUES(q2, d2, 3, 0, 1e-14);
    double six[3] = {6, 6, 6};
    CHECK_VALUES(q3, six, 3, 0, 1e-14);
    /* the pass that made g2 (no create_graph) freed the graph under g1, as PyTorch's grad without
       retain_graph does: going through it again is an error */
    tensor_clear_error();
    CHECK(tensor_backward(tensor_sum_all(g1)) != 0);
    check_error(__LINE__, "tensor_backward", "freed");
    /* backward through a fresh create_graph gradient accumulates into .grad: d/dx sum(3x^2) = 6x */
    tensor *y2 = tensor_sum_all(tensor_mul(tensor_mul(x, x), x)), *g1b = NULL;
    CHECK(tensor_autograd_grad(1, &y2, NULL, 1, &x, &g1b, true) == 0);
    CHECK(tensor_backward(tensor_sum_all(g1b)) == 0);
    CHECK_VALUES(tensor_grad(x), d2, 3, 0, 1e-15);
}

TEST(engine_autograd_grad_outputs_and_unreachable_inputs) {
    static const double xv[3] = {1, -1, 2}, vv[3] = {0.5, 2, -3}, zv[2] = {7, 8};
    tensor *x = leaf(3, xv), *z = leaf(2, zv);
    tensor *y = tensor_mul_scalar(tensor_square(x), 1.5); /* [3], needs grad_outputs */
    tensor *v = vec(3, vv), *grads[2] = {NULL, NULL};
    CHECK(tensor_autograd_grad(1, &y, &v, 2, (tensor *const[]){x, z}, grads, false) == 0);
    double gx[3] = {3 * 1 * 0.5, 3 * -1 * 2, 3 * 2 * -3}, zeros[2] = {0, 0};
    CHECK_VALUES(grads[0], gx, 3, 0, 1e-15);
    CHECK_VALUES(grads[1], zeros, 2, 0, 0); /* z is not in y's graph */
    CHECK_SHAPE(grads[1], TENSOR_SHAPE(2));
    /* two outputs: their contributions add */
    tensor *a = tensor_sum_all(tensor_mul_scalar(x, 2)), *b = tensor_sum_all(tensor_mul(x, x));
    tensor *two[2] = {a, b}, *g = NULL;
    CHECK(tensor_autograd_grad(2, two, NULL, 1, &x, &g, false) == 0);
    double gab[3] = {2 + 2 * 1, 2 + 2 * -1, 2 + 2 * 2};
    CHECK_VALUES(g, gab, 3, 0, 1e-15);
    /* errors */
    tensor *y2 = tensor_mul_scalar(tensor_square(x), 1.5), *out = NULL;
    tensor_clear_error();
    CHECK(tensor_autograd_grad(1, &y2, NULL, 1, &x, &out, false) != 0); /* non-scalar without grad_outputs */
    check_error(__LINE__, "tensor_autograd_grad", "[3]");
    CHECK(out == NULL);
    tensor *bad_v = tensor_ones(TENSOR_SHAPE(4), TENSOR_F64);
    CHECK(tensor_autograd_grad(1, &y2, &bad_v, 1, &x, &out, false) != 0);
    check_error(__LINE__, "tensor_autograd_grad", "[4]");
    tensor *plain = vec(3, xv);
    tensor *s2 = tensor_sum_all(y2);
    CHECK(tensor_autograd_grad(1, &s2, NULL, 1, &plain, &out, false) != 0); /* an input without requires_grad */
    check_error(__LINE__, "tensor_autograd_grad", "require");
    CHECK(tensor_autograd_grad(0, &s2, NULL, 1, &x, &out, false) != 0);
    check_error(__LINE__, "tensor_autograd_grad", "");
    CHECK(tensor_autograd_grad(1, (tensor *const[]){NULL}, NULL, 1, &x, &out, false) != 0);
    check_error(__LINE__, "tensor_autograd_grad", "");
    CHECK(tensor_autograd_grad(1, &s2, NULL, 1, &x, NULL, false) != 0);
    check_error(__LINE__, "tensor_autograd_grad", "");
}

/* ---- detach, no-grad mode, requires_grad ---- */

TEST(engine_detach_stops_gradients) {
    static const double xv[3] = {1, 2, -3};
    tensor *x = leaf(3, xv);
    tensor *d = tensor_detach(x);
    CHECK(!tensor_requires_grad(d));
    CHECK(tensor_backward(tensor_sum_all(tensor_mul(d, x))) == 0); /* d/dx (c * x) with c = x's value */
    CHECK_VALUES(tensor_grad(x), xv, 3, 0, 0);
    /* detaching an intermediate cuts the path above it */
    tensor_zero_grad(x);
    tensor *e = tensor_exp(x);
    CHECK(tensor_backward(tensor_sum_all(tensor_add(tensor_detach(e), x))) == 0);
    double ones[3] = {1, 1, 1};
    CHECK_VALUES(tensor_grad(x), ones, 3, 0, 0);
    /* it shares storage */
    CHECK(tensor_data_ptr(d) == tensor_data_ptr(x));
    CHECK_BAD(tensor_detach(NULL), "tensor_detach");
}

TEST(engine_no_grad_mode_records_nothing) {
    static const double xv[2] = {1, 2};
    tensor *x = leaf(2, xv);
    CHECK(tensor_set_grad_enabled(false) == true);
    tensor *y = tensor_sum_all(tensor_exp(tensor_mul(x, x)));
    CHECK(tensor_set_grad_enabled(false) == false);
    CHECK(tensor_set_grad_enabled(true) == false);
    CHECK(tensor_set_grad_enabled(true) == true);
    CHECK(!tensor_requires_grad(y));
    CHECK(tensor_backward(y) != 0);
    check_error(__LINE__, "tensor_backward", "grad");
    CHECK(tensor_grad(x) == NULL);
    /* grad mode back on: recorded again */
    CHECK(tensor_requires_grad(tensor_exp(x)));
}

TEST(engine_requires_grad_rules) {
    tensor *i = tensor_zeros(TENSOR_SHAPE(3), TENSOR_I64);
    CHECK_BAD(tensor_set_requires_grad(i, true), "tensor_set_requires_grad"); /* integers carry no gradient */
    CHECK_BAD(tensor_set_requires_grad(NULL, true), "tensor_set_requires_grad");
    CHECK(tensor_set_requires_grad(i, false) == i);
    tensor *x = test_leaf(TENSOR_SHAPE(3), -1, 1);
    tensor *y = tensor_exp(x);
    CHECK(tensor_requires_grad(y));
    CHECK_BAD(tensor_set_requires_grad(y, false), "tensor_set_requires_grad"); /* a non-leaf */
    CHECK(tensor_set_requires_grad(x, false) == x);
    CHECK(!tensor_requires_grad(tensor_exp(x)));
    CHECK(!tensor_requires_grad(NULL));
    CHECK(tensor_grad(NULL) == NULL);
    tensor_clear_error();
    /* an integer result of a float input carries no gradient */
    tensor *x2 = test_leaf(TENSOR_SHAPE(3), -1, 1);
    CHECK(!tensor_requires_grad(tensor_to_dtype(x2, TENSOR_I32)));
}

/* ---- in place ---- */

TEST(engine_inplace_checks) {
    static const double xv[3] = {1, 2, 3};
    tensor *x = leaf(3, xv), *one = tensor_ones(TENSOR_SHAPE(3), TENSOR_F64);
    /* a leaf that requires grad */
    CHECK_BAD(tensor_add_(x, one), "tensor_add_");
    CHECK_BAD(tensor_mul_scalar_(x, 2), "tensor_mul_scalar_");
    CHECK_BAD(tensor_copy_(x, one), "tensor_copy_");
    CHECK_BAD(tensor_fill_(x, 0), "tensor_fill_");
    CHECK_BAD(tensor_zero_(x), "tensor_zero_");
    CHECK_BAD(tensor_zero_(tensor_slice(x, 0, 0, 2, 1)), "tensor_zero_"); /* a view of it */
    /* a non-leaf that requires grad */
    CHECK_BAD(tensor_mul_scalar_(tensor_exp(x), 2), "tensor_mul_scalar_");
    /* a tensor a live graph saved for its backward pass */
    tensor *a = vec(3, xv);
    tensor *loss = tensor_sum_all(tensor_mul(a, x));
    CHECK_BAD(tensor_mul_scalar_(a, 2), "tensor_mul_scalar_");
    CHECK_BAD(tensor_fill_(tensor_select(a, 0, 1), 2), "tensor_fill_"); /* through a view */
    /* allowed with grad disabled; backward then reports the modification */
    bool was = tensor_set_grad_enabled(false);
    CHECK(tensor_mul_scalar_(a, 2) == a);
    CHECK(tensor_mul_scalar_(x, 1) == x); /* the optimizer's path */
    tensor_set_grad_enabled(was);
    tensor_clear_error();
    CHECK(tensor_backward(loss) != 0);
    check_error(__LINE__, "tensor_backward", "modified in place");
    CHECK(tensor_grad(x) == NULL);
    /* after a backward pass the graph let go of what it saved: in-place is allowed again */
    tensor *b = vec(3, xv);
    CHECK(tensor_backward(tensor_sum_all(tensor_mul(b, x))) == 0);
    CHECK(tensor_mul_scalar_(b, 2) == b);
    CHECK_VALUES(tensor_grad(x), xv, 3, 0, 0);
    /* a leaf written in place before use is fine; one modified after use (under no_grad) is caught */
    tensor *w = leaf(3, xv);
    tensor *lw = tensor_sum_all(tensor_square(w));
    was = tensor_set_grad_enabled(false);
    tensor_add_(w, one);
    tensor_set_grad_enabled(was);
    CHECK(tensor_backward(lw) != 0);
    check_error(__LINE__, "tensor_backward", "modified in place");
}

/* ---- ownership ---- */

TEST(engine_freeing_handles_before_backward) {
    int64_t h0 = tensor_live_handles(), b0 = tensor_live_bytes();
    static const double xv[3] = {0.5, -1, 2};
    tensor *x = leaf(3, xv);
    tensor *y = tensor_exp(x);
    tensor *z = tensor_mul(y, x);
    tensor *r = tensor_reshape(z, 2, (const int64_t[]){1, 3});
    tensor *t = tensor_transpose(r, 0, 1);
    tensor *loss = tensor_sum_all(t);
    /* every intermediate handle gone: the graph holds what backward needs */
    tensor_free(y);
    tensor_free(z);
    tensor_free(r);
    tensor_free(t);
    CHECK(tensor_backward(loss) == 0);
    double g[3];
    for (int i = 0; i < 3; i++) g[i] = exp(xv[i]) * (1 + xv[i]);
    CHECK_VALUES(tensor_grad(x), g, 3, 0, 1e-15);
    tensor_free(loss);
    /* a graph freed from its root without backward */
    tensor *s = tensor_sin(x), *p = tensor_mul(s, x), *l2 = tensor_sum_all(p);
    tensor_free(s);
    tensor_free(p);
    tensor_free(l2);
    tensor_free(x); /* the leaf and its .grad */
    CHECK(tensor_live_handles() == h0);
    CHECK(tensor_live_bytes() == b0);
}

/* Same, with every handle accounted for: made inside a scope and the scope closed. */
TEST(engine_everything_freed_returns_counts) {
    int64_t h0 = tensor_live_handles(), b0 = tensor_live_bytes();
    tensor_scope_begin();
    tensor *x = test_leaf(TENSOR_SHAPE(4, 3), -1, 1), *w = test_leaf(TENSOR_SHAPE(2, 3), -1, 1);
    tensor *loss = tensor_mean_all(tensor_tanh(tensor_linear(x, w, NULL)));
    CHECK(tensor_backward(loss) == 0);
    tensor *g = NULL;
    tensor *l2 = tensor_sum_all(tensor_square(w));
    CHECK(tensor_autograd_grad(1, &l2, NULL, 1, &w, &g, true) == 0); /* a kept graph */
    CHECK(tensor_live_handles() > h0);
    tensor_scope_end();
    CHECK(tensor_live_handles() == h0);
    CHECK(tensor_live_bytes() == b0);
}

/* ---- training ---- */

/* Two interleaved spirals, 2 x 48 points, deterministic. */
#define SPIRAL_N 48
static void two_spirals(double *xy, double *label) {
    for (int i = 0; i < SPIRAL_N; i++) {
        double t = 0.3 + 3.0 * M_PI * i / SPIRAL_N, r = t / (3.0 * M_PI + 0.3);
        for (int c = 0; c < 2; c++) {
            int k = 2 * i + c;
            double s = c ? -1 : 1;
            xy[2 * k] = s * r * cos(t);
            xy[2 * k + 1] = s * r * sin(t);
            label[k] = c;
        }
    }
}

typedef struct { tensor *w[3], *b[3]; } mlp;
/* PyTorch's nn.Linear initialization: kaiming_uniform_(a = sqrt(5)), bias U(-1/sqrt(in), 1/sqrt(in)) */
static void mlp_init(mlp *m, const int *sizes) {
    for (int l = 0; l < 3; l++) {
        m->w[l] = tensor_zeros(2, (const int64_t[]){sizes[l + 1], sizes[l]}, TENSOR_F32);
        m->b[l] = tensor_zeros(1, (const int64_t[]){sizes[l + 1]}, TENSOR_F32);
        tensor_kaiming_uniform_(m->w[l], sqrt(5.0));
        tensor_uniform_(m->b[l], -1 / sqrt((double)sizes[l]), 1 / sqrt((double)sizes[l]));
        tensor_set_requires_grad(m->w[l], true);
        tensor_set_requires_grad(m->b[l], true);
    }
}
static tensor *mlp_forward(const mlp *m, tensor *x) {
    tensor *h = tensor_tanh(tensor_linear(x, m->w[0], m->b[0]));
    h = tensor_tanh(tensor_linear(h, m->w[1], m->b[1]));
    return tensor_linear(h, m->w[2], m->b[2]);
}

/* A 2-32-32-2 tanh MLP, Adam, full batch, cross-entropy. With this seed the loss sits near
   chance (ln 2 = 0.69) for ~100 steps, falls below 0.013 by step 200 and reaches ~0.0006 by 600;
   the bound 0.05 leaves a wide margin for other platforms' rounding. */
TEST(engine_trains_two_spirals) {
    double xy[4 * SPIRAL_N], lab[2 * SPIRAL_N];
    two_spirals(xy, lab);
    tensor *x = tensor_to_dtype(test_tensor(TENSOR_F64, TENSOR_SHAPE(2 * SPIRAL_N, 2), xy), TENSOR_F32);
    tensor *y = test_tensor(TENSOR_I64, TENSOR_SHAPE(2 * SPIRAL_N), lab);
    tensor_manual_seed(42);
    static const int sizes[4] = {2, 32, 32, 2};
    mlp m;
    mlp_init(&m, sizes);
    tensor *params[6] = {m.w[0], m.b[0], m.w[1], m.b[1], m.w[2], m.b[2]};
    tensor_optim *o = tensor_optim_adam(6, params, 0.02, 0.9, 0.999, 1e-8, 0);
    double first = 0, last = 0;
    for (int step = 0; step < 600; step++) {
        tensor_scope_begin();
        tensor_optim_zero_grad(o);
        tensor *loss = tensor_cross_entropy(mlp_forward(&m, x), y);
        CHECK(tensor_backward(loss) == 0);
        CHECK(tensor_optim_step(o) == 0);
        last = tensor_item(loss);
        if (step == 0) first = last;
        if (getenv("TEST_VERBOSE") && step % 50 == 0) printf("  spirals step %d loss %.5f\n", step, last);
        tensor_scope_end();
    }
    CHECK_MSG(first > 0.6, "initial loss %g", first);
    CHECK_MSG(last < 0.05, "final loss %g", last);
    /* every point classified right */
    tensor *pred = tensor_argmax(mlp_forward(&m, x), 1, false);
    double *pv = test_values(pred);
    int right = 0;
    for (int i = 0; i < 2 * SPIRAL_N; i++) right += pv[i] == lab[i];
    free(pv);
    CHECK_MSG(right == 2 * SPIRAL_N, "%d of %d right", right, 2 * SPIRAL_N);
    tensor_optim_free(o);
}

/* 1,000 training steps (XOR, SGD with momentum, clipping) each inside a scope: the live handle and
   byte counts after each step are those after the first, and freeing the model restores the start. */
TEST(engine_training_does_not_leak) {
    int64_t h0 = tensor_live_handles(), b0 = tensor_live_bytes();
    static const double xv[8] = {0, 0, 0, 1, 1, 0, 1, 1}, yv[4] = {0, 1, 1, 0};
    tensor_scope_begin();
    tensor *x = test_tensor(TENSOR_F32, TENSOR_SHAPE(4, 2), xv), *y = test_tensor(TENSOR_F32, TENSOR_SHAPE(4, 1), yv);
    tensor_manual_seed(3);
    static const int sizes[4] = {2, 8, 8, 1};
    mlp m;
    mlp_init(&m, sizes);
    tensor *params[6] = {m.w[0], m.b[0], m.w[1], m.b[1], m.w[2], m.b[2]};
    tensor_optim *o = tensor_optim_sgd(6, params, 0.1, 0.9, 1e-4, false);
    int64_t h1 = 0, b1 = 0;
    double loss_v = 0;
    bool flat = true;
    for (int step = 0; step < 1000; step++) {
        tensor_scope_begin();
        tensor_optim_zero_grad(o);
        tensor *loss = tensor_binary_cross_entropy_with_logits(mlp_forward(&m, x), y);
        if (tensor_backward(loss) != 0) flat = false;
        tensor_clip_grad_norm(6, params, 5.0);
        tensor_optim_step(o);
        loss_v = tensor_item(loss);
        tensor_scope_end();
        if (step == 0) { h1 = tensor_live_handles(); b1 = tensor_live_bytes(); }
        else if (tensor_live_handles() != h1 || tensor_live_bytes() != b1) flat = false;
    }
    CHECK_MSG(flat, "handles %lld -> %lld, bytes %lld -> %lld", (long long)h1, (long long)tensor_live_handles(), (long long)b1, (long long)tensor_live_bytes());
    CHECK_MSG(loss_v < 0.05, "XOR loss after 1000 steps %g", loss_v); /* it learned, too */
    tensor_optim_free(o);
    tensor_scope_end();
    CHECK(tensor_live_handles() == h0);
    CHECK(tensor_live_bytes() == b0);
}
