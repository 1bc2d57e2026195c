/* The allocation-failure sweep: a short training run of an MLP (with layer_norm and attention) and
   of a CNN, once to count the library's memory requests, then once more for every k with the k-th
   request failing. Each failing run must either report the failure through a return value (NULL,
   or a non-zero int) with a message, or end with exactly the parameters of the run without a
   failure (a failure the library absorbed, e.g. a cache that could not grow). Never a crash,
   never a silent difference; under make test-asan, never a leak. */
#include "test.h"

#define SWEEP_MAX_PARAMS 8
typedef struct {
    int n;
    tensor *p[SWEEP_MAX_PARAMS];
    bool failed; /* some call reported a failure through its return value */
} sweep_model;

/* A parameter, a leaf that requires grad: randn * scale, or (scale 0) zeros given kaiming_uniform_
   as the examples do. NULL (and failed) when a call fails. */
static tensor *sweep_param(sweep_model *m, int ndim, const int64_t *shape, double scale) {
    tensor *w;
    if (scale > 0) {
        tensor *r = tensor_randn(ndim, shape, TENSOR_F32);
        w = tensor_mul_scalar(r, scale);
        tensor_free(r);
    } else w = tensor_zeros(ndim, shape, TENSOR_F32);
    if (!w || !tensor_set_requires_grad(w, true) || (scale == 0 && !tensor_kaiming_uniform_(w, sqrt(5.0)))) { tensor_free(w); m->failed = true; return NULL; }
    m->p[m->n++] = w;
    return w;
}

/* x: [4, 6, 16] tokens -> linear 16->24 -> layer_norm -> causal self-attention -> relu -> linear 24->5 -> CE */
static tensor *sweep_mlp_loss(sweep_model *m, tensor *x, tensor *y) {
    tensor *h = tensor_linear(x, m->p[0], m->p[1]);
    tensor *n = tensor_layer_norm(h, m->p[2], m->p[3], 1e-5);
    tensor *a = tensor_scaled_dot_product_attention(n, n, n, NULL, true);
    tensor *r = tensor_relu(tensor_add(a, h));
    tensor *logits = tensor_linear(tensor_reshape(r, TENSOR_SHAPE(24, 24)), m->p[4], m->p[5]);
    return tensor_cross_entropy(logits, y);
}

/* As examples/fashion_mnist_cnn.c, smaller. x: [2, 1, 8, 8] -> conv 1->8 k3 p1 -> relu -> max_pool
   2 -> conv 8->8 k3 p1 (Winograd where the CPU has AVX2) -> relu -> avg_pool 2 -> flatten -> dropout
   -> linear 32->3 -> CE */
static tensor *sweep_cnn_logits(sweep_model *m, tensor *x, bool training) {
    tensor *c1 = tensor_relu(tensor_conv2d(x, m->p[0], m->p[1], 1, 1, 1, 1));
    tensor *p1 = tensor_max_pool2d(c1, 2, 2, 0);
    tensor *c2 = tensor_relu(tensor_conv2d(p1, m->p[2], m->p[3], 1, 1, 1, 1));
    tensor *p2 = tensor_avg_pool2d(c2, 2, 2, 0);
    return tensor_linear(tensor_dropout(tensor_flatten(p2, 1, -1), 0.25, training), m->p[4], m->p[5]);
}
static tensor *sweep_cnn_loss(sweep_model *m, tensor *x, tensor *y) { return tensor_cross_entropy(sweep_cnn_logits(m, x, true), y); }

/* The whole run from a fresh library state. Writes the final parameters to out (n_out floats) and
   returns whether a call reported failure. */
static bool sweep_run(bool cnn, int64_t fail_at, float *out, int64_t n_out, int64_t *requests) {
    tensor_set_num_threads(1); /* the order of requests is then the same in every run */
    tensor_manual_seed(11);
    tensor_clear_error();
    int64_t handles = tensor_live_handles(), bytes = tensor_live_bytes();
    tensor_scope_begin();
    tensor_test_fail_alloc(fail_at);
    sweep_model m = {0, {NULL}, false};
    tensor *x, *y;
    const int64_t tgt_mlp[24] = {0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1, 2, 3};
    const int64_t tgt_cnn[2] = {2, 0};
    if (!cnn) {
        sweep_param(&m, TENSOR_SHAPE(24, 16), 0.25); sweep_param(&m, TENSOR_SHAPE(24), 0.1);
        sweep_param(&m, TENSOR_SHAPE(24), 0.1);      sweep_param(&m, TENSOR_SHAPE(24), 0.1);
        sweep_param(&m, TENSOR_SHAPE(5, 24), 0.2);   sweep_param(&m, TENSOR_SHAPE(5), 0.1);
        x = tensor_randn(TENSOR_SHAPE(4, 6, 16), TENSOR_F32);
        y = tensor_from_data(tgt_mlp, TENSOR_SHAPE(24), TENSOR_I64);
    } else {
        sweep_param(&m, TENSOR_SHAPE(8, 1, 3, 3), 0); sweep_param(&m, TENSOR_SHAPE(8), 0.1);
        sweep_param(&m, TENSOR_SHAPE(8, 8, 3, 3), 0); sweep_param(&m, TENSOR_SHAPE(8), 0.1);
        sweep_param(&m, TENSOR_SHAPE(3, 32), 0);      sweep_param(&m, TENSOR_SHAPE(3), 0.1);
        x = tensor_randn(TENSOR_SHAPE(2, 1, 8, 8), TENSOR_F32);
        y = tensor_from_data(tgt_cnn, TENSOR_SHAPE(2), TENSOR_I64);
    }
    if (!x || !y) m.failed = true;
    tensor_optim *opt = NULL;
    if (!m.failed) {
        opt = cnn ? tensor_optim_adamw(m.n, m.p, 1e-2, 0.9, 0.999, 1e-8, 1e-2) : tensor_optim_sgd(m.n, m.p, 0.05, 0.9, 1e-4, true);
        if (!opt) m.failed = true;
    }
    for (int step = 0; step < 2 && !m.failed; step++) {
        tensor_scope_begin();
        tensor *loss = cnn ? sweep_cnn_loss(&m, x, y) : sweep_mlp_loss(&m, x, y);
        tensor_optim_zero_grad(opt);
        if (!loss || tensor_backward(loss) != 0 || tensor_optim_step(opt) != 0) m.failed = true;
        tensor_scope_end();
    }
    if (cnn && !m.failed) { /* an evaluation, as the example's: no graph, argmax of the logits */
        bool was = tensor_set_grad_enabled(false);
        tensor *pred = tensor_argmax(sweep_cnn_logits(&m, x, false), 1, false);
        int64_t classes[2];
        if (!pred || tensor_copy_to(pred, classes, sizeof classes) != 0) m.failed = true;
        tensor_set_grad_enabled(was);
    }
    *requests = tensor_test_alloc_count();
    tensor_test_fail_alloc(0);
    int64_t at = 0;
    for (int i = 0; i < m.n && !m.failed; i++) {
        int64_t k = tensor_numel(m.p[i]);
        if (at + k > n_out || tensor_copy_to(m.p[i], out + at, sizeof(float) * (size_t)k) != 0) m.failed = true;
        at += k;
    }
    tensor_optim_free(opt);
    tensor_scope_end();
    CHECK_MSG(tensor_live_handles() == handles && tensor_live_bytes() == bytes, "k = %lld: %lld handles and %lld bytes left behind",
              (long long)fail_at, (long long)(tensor_live_handles() - handles), (long long)(tensor_live_bytes() - bytes));
    return m.failed;
}

static void sweep(bool cnn) {
    enum { N_OUT = 4096 };
    float *base = (float *)calloc(N_OUT, sizeof(float)), *got = (float *)calloc(N_OUT, sizeof(float));
    int64_t total = 0, requests = 0;
    bool failed = sweep_run(cnn, 0, base, N_OUT, &total);
    CHECK_MSG(!failed, "the run without injected failures failed: %s", tensor_last_error() ? tensor_last_error() : "?");
    int reported = 0, absorbed = 0;
    /* TEST_SWEEP_K=k runs only that k (to debug one failure in a process of its own) */
    int64_t only = getenv("TEST_SWEEP_K") ? atoll(getenv("TEST_SWEEP_K")) : 0;
    for (int64_t k = only ? only : 1; k <= (only ? only : total) && !failed; k++) {
        memset(got, 0, sizeof(float) * N_OUT);
        bool f = sweep_run(cnn, k, got, N_OUT, &requests);
        if (f) {
            reported++;
            CHECK_MSG(tensor_last_error() != NULL, "k = %lld: a call failed without a message", (long long)k);
        } else {
            absorbed++;
            CHECK_MSG(!memcmp(got, base, sizeof(float) * N_OUT), "k = %lld: no call failed, but the parameters differ (%s)",
                      (long long)k, tensor_last_error() ? tensor_last_error() : "no message");
        }
        if (test_failures_in_current_test() > 10) break;
    }
    printf("  alloc sweep %s: %lld requests, each failed once: %d reported, %d absorbed with equal parameters\n",
           cnn ? "cnn" : "mlp+attention+layer_norm", (long long)total, reported, absorbed);
    tensor_set_num_threads(0);
    free(base);
    free(got);
}

TEST(alloc_fail_sweep_mlp) { sweep(false); }
TEST(alloc_fail_sweep_cnn) { sweep(true); }

/* A backward pass that fails leaves every leaf's .grad as it was (none, or the earlier sum); one
   that succeeds adds its whole gradient. Checked for every memory request of the pass. */
static void backward_grad_all_or_nothing(bool had_grad) {
    float before[2][12], expected[2][12], got[2][12];
    int64_t total = -1, failed = 0;
    for (int64_t at = 0; at <= total || total < 0; at++) {
        memset(before, 0, sizeof before);
        memset(got, 0, sizeof got); /* the bias fills 4 of the 12 floats */
        tensor_scope_begin();
        tensor_manual_seed(3);
        tensor *p[2] = {tensor_set_requires_grad(tensor_randn(TENSOR_SHAPE(4, 3), TENSOR_F32), true),
                        tensor_set_requires_grad(tensor_randn(TENSOR_SHAPE(4), TENSOR_F32), true)};
        tensor *x = tensor_randn(TENSOR_SHAPE(5, 3), TENSOR_F32);
        if (had_grad) CHECK(tensor_backward(tensor_sum_all(tensor_tanh(tensor_linear(x, p[0], p[1])))) == 0);
        for (int i = 0; i < 2 && had_grad; i++) CHECK(tensor_copy_to(tensor_grad(p[i]), before[i], sizeof before[i]) == 0);
        tensor *loss = tensor_sum_all(tensor_mul(tensor_sigmoid(tensor_linear(x, p[0], p[1])), tensor_sum(x, 1, true)));
        CHECK(loss != NULL);
        tensor_clear_error();
        tensor_test_fail_alloc(at);
        int rc = tensor_backward(loss);
        int64_t used = tensor_test_alloc_count();
        tensor_test_fail_alloc(0);
        if (at == 0) { total = used; CHECK(rc == 0); }
        for (int i = 0; i < 2; i++) {
            tensor *g = tensor_grad(p[i]);
            if (rc != 0 && !had_grad) { CHECK_MSG(g == NULL, "request %lld failed: a first .grad appeared anyway", (long long)at); continue; }
            if (at == 0) memset(expected[i], 0, sizeof expected[i]);
            CHECK(g && tensor_copy_to(g, at == 0 ? expected[i] : got[i], sizeof got[i]) == 0);
            if (at == 0) continue;
            if (rc != 0) CHECK_MSG(!memcmp(got[i], before[i], sizeof got[i]), "request %lld failed: .grad of parameter %d changed", (long long)at, i);
            else CHECK_MSG(!memcmp(got[i], expected[i], sizeof got[i]), "request %lld: backward succeeded with a different .grad of parameter %d", (long long)at, i);
        }
        if (rc != 0) { failed++; CHECK_MSG(tensor_last_error() != NULL, "request %lld: backward failed without a message", (long long)at); }
        tensor_clear_error();
        tensor_scope_end();
        if (test_failures_in_current_test() > 10) break;
    }
    CHECK(total > 0 && failed > 0);
}
TEST(alloc_fail_backward_leaves_grad_untouched) { backward_grad_all_or_nothing(true); }
TEST(alloc_fail_backward_makes_no_first_grad) { backward_grad_all_or_nothing(false); }

/* An optimizer step that runs out of memory (for its first moments) changes no parameter. */
TEST(alloc_fail_optimizer_step_changes_nothing) {
    int64_t total = -1, failed = 0;
    for (int64_t at = 0; at <= total || total < 0; at++) {
        tensor_scope_begin();
        tensor_manual_seed(5);
        tensor *p[3] = {tensor_set_requires_grad(tensor_randn(TENSOR_SHAPE(7), TENSOR_F32), true),
                        tensor_set_requires_grad(tensor_randn(TENSOR_SHAPE(3, 2), TENSOR_F64), true),
                        tensor_set_requires_grad(tensor_randn(TENSOR_SHAPE(5), TENSOR_F32), true)};
        tensor_optim *o = tensor_optim_adam(3, p, 0.1, 0.9, 0.999, 1e-8, 0.01);
        CHECK(tensor_backward(tensor_add(tensor_add(tensor_sum_all(tensor_square(p[0])), tensor_sum_all(p[1])), tensor_sum_all(p[2]))) == 0);
        double before[3][7], after[3][7];
        for (int i = 0; i < 3; i++) CHECK(tensor_copy_to(tensor_to_dtype(p[i], TENSOR_F64), before[i], sizeof before[i]) == 0);
        tensor_test_fail_alloc(at);
        int rc = tensor_optim_step(o);
        int64_t used = tensor_test_alloc_count();
        tensor_test_fail_alloc(0);
        if (at == 0) { total = used; CHECK(rc == 0 && used > 0); }
        for (int i = 0; i < 3 && rc != 0; i++) {
            CHECK(tensor_copy_to(tensor_to_dtype(p[i], TENSOR_F64), after[i], sizeof after[i]) == 0);
            CHECK_MSG(!memcmp(before[i], after[i], sizeof(double) * (size_t)tensor_numel(p[i])), "request %lld failed: parameter %d changed", (long long)at, i);
        }
        if (rc != 0) failed++;
        CHECK(rc == 0 || tensor_last_error() != NULL);
        tensor_clear_error();
        tensor_optim_free(o);
        tensor_scope_end();
    }
    CHECK(total > 0 && failed == total);
}
