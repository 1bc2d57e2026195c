/* The CUDA suite (make test-cuda, on a machine with a GPU): tensor_cuda.o against the CPU
   reference. Every op the CPU has a kernel for must have a CUDA kernel: the first test lists
   the ones missing and fails while any is. */
#include "../device_sweep.h"
#include "../device_grad_sweep.h"
#include <pthread.h>

#ifdef DEVICE_SELF_CHECK
#define NEED_GPU() do { } while (0)
#elif defined(DEVICE_MIRROR) /* make test: the suite on the seam's mirror device (tests/test_seam.c) */
#define NEED_GPU() do { if (!test_mirror_device_ready()) return; } while (0)
#else
#define NEED_GPU() do { if (!tensor_cuda_available()) { test_skip("no CUDA device"); return; } } while (0)
#endif

TEST(cuda_every_registry_op_has_a_kernel) {
#ifdef DEVICE_MIRROR
    NEED_GPU();
#endif
    if (!tensor_cuda_available()) { test_skip("no CUDA device"); return; }
    char missing[4096] = "";
    int n = 0;
    for (int op = 0; op < TENSOR_OP_COUNT; op++) {
        /* creation ops make CPU tensors (they take no device; tensor_to_device moves them; multinomial
           takes its device from probs, poisson from rates), one_hot is composed of device ops there: none needs a CUDA kernel */
        bool created = !strcmp(test_op_kind((tensor_op)op), "CREATE") && op != TENSOR_OP_clone && op != TENSOR_OP_contiguous && op != TENSOR_OP_multinomial && op != TENSOR_OP_poisson;
        if (created || op == TENSOR_OP_one_hot) continue;
        /* attention's front end runs the composite (matmul, softmax, matmul: device ops) where the
           device has no fused kernel; the CPU's fused kernel has none on CUDA yet */
        if (op == TENSOR_OP_scaled_dot_product_attention) continue;
        if (test_device_has_kernel((tensor_op)op, TENSOR_CPU) && !test_device_has_kernel((tensor_op)op, TENSOR_CUDA)) {
            size_t len = strlen(missing);
            snprintf(missing + len, sizeof missing - len, "%s%s", n ? " " : "", tensor_op_name((tensor_op)op));
            n++;
        }
    }
    CHECK_MSG(n == 0, "%d ops have no CUDA kernel: %s", n, missing);
}

/* Every differentiable op forward and backward through its gradient checks' cases (the functions
   of tests/test_*.c, linked into this suite's binary): the device's values and gradients against
   the CPU's. make test runs the same sweep on the seam's mirror device (tests/test_seam.c). Named
   gpu_ rather than cuda_: make test-cuda runs it once, not under compute-sanitizer (2000 cases). */
#ifndef DEVICE_MIRROR
TEST(gpu_every_differentiable_op_forward_and_backward) {
    NEED_GPU();
    device_sweep_gradchecks("GPU");
}
#endif

TEST(cuda_elementwise_ops_match_the_cpu) {
    NEED_GPU();
    device_sweep_elementwise();
}

TEST(cuda_transfers_every_dtype_and_layout) {
    NEED_GPU();
    for (int dt = 0; dt < TENSOR_DTYPE_COUNT; dt++) {
        tensor_scope_begin();
        tensor *b = tensor_to_dtype(tensor_reshape(tensor_arange(0, 4096 * 3, 1, TENSOR_F64), TENSOR_SHAPE(3, 64, 64)), (tensor_dtype)dt);
        tensor *views[4] = {b, tensor_transpose(b, 0, 2), tensor_slice(b, 2, 1, 60, 3), tensor_expand(tensor_slice(b, 0, 0, 1, 1), TENSOR_SHAPE(5, 64, 64))};
        for (int v = 0; v < 4; v++) {
            tensor *d = device_cuda(views[v]);
            CHECK(d && tensor_get_device(d) == DEVICE_UNDER_TEST);
            tensor *h = tensor_to_device(tensor_transpose(d, 0, 1), TENSOR_CPU);
            CHECK(h && test_same_bits(h, tensor_transpose(views[v], 0, 1)));
        }
        tensor_scope_end();
    }
}

/* Many sizes allocated and freed out of order: every tensor keeps its own values. */
/* A tensor made on one thread (its block belongs to that thread's stream), used by a second
   thread's queued work and dropped there before that work ran: the first thread's next allocation
   must not get the block (and overwrite it) while the second's stream still reads it. */
typedef struct {
    tensor *x, *w;
    double expect, got;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stage;
} cross_free;
static void cross_free_set(cross_free *c, int stage) {
    pthread_mutex_lock(&c->mu);
    c->stage = stage;
    pthread_cond_broadcast(&c->cv);
    pthread_mutex_unlock(&c->mu);
}
static void cross_free_wait(cross_free *c, int stage) {
    pthread_mutex_lock(&c->mu);
    while (c->stage < stage) pthread_cond_wait(&c->cv, &c->mu);
    pthread_mutex_unlock(&c->mu);
}
static void *cross_free_reader(void *arg) {
    cross_free *c = (cross_free *)arg;
    tensor *acc = NULL;
    for (int i = 0; i < 40; i++) { /* milliseconds of queued matmuls reading x */
        tensor *m = tensor_matmul(c->x, c->w), *y = tensor_sum_all(m);
        tensor_free(m);
        tensor *next = acc ? tensor_add(acc, y) : tensor_clone(y);
        tensor_free(acc);
        tensor_free(y);
        acc = next;
    }
    tensor_free(c->x); /* the last handle: the block is freed here, its reads still queued */
    c->x = NULL;
    cross_free_set(c, 1);
    cross_free_wait(c, 2);
    c->got = acc ? tensor_item(acc) : NAN;
    tensor_free(acc);
    return NULL;
}
TEST(cuda_a_block_freed_by_another_thread_waits_for_its_stream) {
    NEED_GPU();
    cross_free c;
    memset(&c, 0, sizeof c);
    pthread_mutex_init(&c.mu, NULL);
    pthread_cond_init(&c.cv, NULL);
    tensor *hx = tensor_rand(TENSOR_SHAPE(2048, 2048), TENSOR_F32), *hw = tensor_rand(TENSOR_SHAPE(2048, 64), TENSOR_F32);
    c.x = device_cuda(hx);
    c.w = device_cuda(hw);
    CHECK(c.x && c.w);
    tensor *m = tensor_matmul(c.x, c.w), *one = tensor_sum_all(m);
    c.expect = 40 * tensor_item(one);
    tensor_free(one);
    tensor_free(m);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, cross_free_reader, &c) == 0);
    cross_free_wait(&c, 1);
    /* this thread's allocations of x's size, overwritten at once */
    tensor *junk[4];
    for (int i = 0; i < 4; i++) junk[i] = tensor_fill_(device_cuda(hx), 1e30);
    cross_free_set(&c, 2);
    pthread_join(th, NULL);
    CHECK_NEAR(c.got, c.expect, 1e-9, 1e-4);
    for (int i = 0; i < 4; i++) tensor_free(junk[i]);
    tensor_free(c.w);
    tensor_free(hx);
    tensor_free(hw);
    pthread_mutex_destroy(&c.mu);
    pthread_cond_destroy(&c.cv);
}

TEST(cuda_allocator_under_churn) {
    NEED_GPU();
    enum { N = 64 };
    tensor *keep[N] = {NULL};
    uint64_t seed = 12345;
    for (int round = 0; round < 2000; round++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        int slot = (int)(seed >> 58);
        int64_t n = (int64_t)((seed >> 20) % (round % 10 == 0 ? 3000000 : 5000)) + 1;
        tensor_free(keep[slot]);
        keep[slot] = NULL;
        tensor *h = tensor_full(1, &n, (double)slot, TENSOR_F32);
        keep[slot] = device_cuda(h);
        tensor_free(h);
        CHECK(keep[slot]);
        if (round % 97 == 0) tensor_empty_cache();
    }
    for (int i = 0; i < N; i++) {
        if (!keep[i]) continue;
        tensor *h = tensor_to_device(keep[i], TENSOR_CPU);
        double *v = h ? test_values(h) : NULL;
        bool ok = v != NULL;
        for (int64_t j = 0; ok && j < tensor_numel(h); j++) ok = v[j] == i;
        CHECK_MSG(ok, "slot %d lost its values", i);
        free(v);
        tensor_free(h);
        tensor_free(keep[i]);
    }
#ifndef DEVICE_SELF_CHECK
    CHECK(tensor_cuda_synchronize() == 0);
#endif
}

TEST(cuda_errors) {
    NEED_GPU();
    tensor_scope_begin();
    /* out of device memory: an error with the sizes, never an abort; the device still works after */
    tensor *huge = tensor_expand(tensor_zeros(TENSOR_SHAPE(1, 1), TENSOR_F32), TENSOR_SHAPE(1 << 20, 1 << 20)); /* 4 TiB once copied */
#ifndef DEVICE_SELF_CHECK
    CHECK_BAD(tensor_to_device(huge, TENSOR_CUDA), "tensor_to_device");
    tensor_to_device(huge, TENSOR_CUDA);
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "out of memory"));
    tensor_clear_error();
#else
    (void)huge;
#endif
    tensor *x = tensor_arange(0, 10, 1, TENSOR_F32), *dx = device_cuda(x);
    device_check_same("after out of memory", tensor_mul(dx, dx), tensor_mul(x, x));
#ifndef DEVICE_SELF_CHECK
    /* mixed devices, host pointers */
    CHECK_BAD(tensor_add(dx, x), "tensor_add");
    tensor_clear_error();
    CHECK(tensor_data_ptr(dx) == NULL && tensor_last_error() && strstr(tensor_last_error(), "on cuda"));
    tensor_clear_error();
#endif
    /* integer division by zero is reported by the op */
    tensor *di = device_cuda(tensor_arange(0, 4, 1, TENSOR_I64));
    CHECK_BAD(tensor_fmod(di, device_cuda(tensor_zeros(TENSOR_SHAPE(4), TENSOR_I64))), "tensor_fmod");
#ifndef DEVICE_SELF_CHECK
    CHECK(tensor_cuda_synchronize() == 0);
#endif
    tensor_scope_end();
}

/* Autograd on the GPU: the leaf's gradient is a CUDA tensor and equals the CPU's. */
TEST(cuda_autograd_elementwise) {
    NEED_GPU();
    tensor_scope_begin();
    tensor *x = tensor_reshape(tensor_linspace(-2, 2, 600, TENSOR_F64), TENSOR_SHAPE(20, 30));
    tensor *w = tensor_set_requires_grad(tensor_clone(x), true), *dw = tensor_set_requires_grad(device_cuda(x), true);
    tensor *g = tensor_full(TENSOR_SHAPE(20, 30), 0.5, TENSOR_F64);
    CHECK(tensor_backward_with(tensor_mul(tensor_tanh(tensor_mul(w, w)), tensor_sigmoid(w)), g) == 0);
    CHECK(tensor_backward_with(tensor_mul(tensor_tanh(tensor_mul(dw, dw)), tensor_sigmoid(dw)), device_cuda(g)) == 0);
    CHECK(tensor_grad(dw) && tensor_get_device(tensor_grad(dw)) == DEVICE_UNDER_TEST);
    device_check_same("grad", tensor_grad(dw), tensor_grad(w));
    tensor_scope_end();
}

/* ---- every op family on the device against the CPU: forward, and the gradient of every floating
   input for a fixed output gradient (through the device's fused backward where it has one) ---- */
typedef tensor *(*case_fn)(tensor *const *in);
/* Runs f on the CPU inputs and on their device copies; float inputs require grad on both sides. */
static void cuda_case(const char *what, int n, tensor *const *cpu, case_fn f) {
    tensor_scope_begin();
    tensor *h[6], *d[6];
    for (int i = 0; i < n; i++) {
        bool fl = device_float(tensor_get_dtype(cpu[i]));
        h[i] = fl ? tensor_set_requires_grad(tensor_clone(cpu[i]), true) : cpu[i];
        d[i] = device_cuda(cpu[i]);
        if (fl && d[i]) d[i] = tensor_set_requires_grad(d[i], true);
    }
    tensor *want = f(h), *got = f(d);
    device_check_same(what, got, want);
    if (want && got && tensor_requires_grad(want) && device_float(tensor_get_dtype(want))) {
        tensor *g = tensor_sin(tensor_reshape(tensor_arange(0, (double)tensor_numel(want), 1, tensor_get_dtype(want)), tensor_ndim(want), tensor_shape(want)));
        CHECK_MSG(tensor_backward_with(want, g) == 0, "%s: CPU backward: %s", what, tensor_last_error());
        CHECK_MSG(tensor_backward_with(got, device_cuda(g)) == 0, "%s: device backward: %s", what, tensor_last_error() ? tensor_last_error() : "");
        for (int i = 0; i < n; i++) {
            if (!device_float(tensor_get_dtype(cpu[i]))) continue;
            char gw[128];
            snprintf(gw, sizeof gw, "%s: gradient of input %d", what, i);
            if (tensor_grad(h[i])) device_check_same(gw, tensor_grad(d[i]), tensor_grad(h[i]));
        }
    }
    tensor_clear_error();
    tensor_scope_end();
}
static tensor *rnd(tensor_dtype dt, int nd, const int64_t *shape, uint64_t seed) { /* values in [-2, 2], reproducible */
    tensor_manual_seed(seed);
    return tensor_to_dtype(tensor_add_scalar(tensor_mul_scalar(tensor_rand(nd, shape, TENSOR_F64), 4), -2), dt);
}
#define IN(...) ((tensor *const[]){__VA_ARGS__})

static tensor *c_sum(tensor *const *a) { return tensor_sum(a[0], 1, false); }
static tensor *c_sum_dims(tensor *const *a) { return tensor_sum_dims(a[0], 2, (const int[]){0, 2}, true); }
static tensor *c_mean_all(tensor *const *a) { return tensor_mean_all(a[0]); }
static tensor *c_prod(tensor *const *a) { return tensor_prod(a[0], 2, false); }
static tensor *c_max(tensor *const *a) { return tensor_max(a[0], 0, true); }
static tensor *c_argmin(tensor *const *a) { return tensor_argmin(a[0], 2, false); }
static tensor *c_var(tensor *const *a) { return tensor_var(a[0], 1, 1, false); }
static tensor *c_std(tensor *const *a) { return tensor_std(a[0], 2, 0, true); }
static tensor *c_lse(tensor *const *a) { return tensor_logsumexp(a[0], 2, false); }
static tensor *c_norm(tensor *const *a) { return tensor_norm(a[0], 3, 1, false); }
static tensor *c_cumsum(tensor *const *a) { return tensor_cumsum(a[0], 1); }
static tensor *c_any(tensor *const *a) { return tensor_any(a[0]); }
static tensor *c_matmul(tensor *const *a) { return tensor_matmul(a[0], a[1]); }
static tensor *c_matmul_t(tensor *const *a) { return tensor_matmul(tensor_transpose(a[0], -1, -2), a[1]); }
static tensor *c_linear(tensor *const *a) { return tensor_linear(a[0], a[1], a[2]); }
static tensor *c_softmax0(tensor *const *a) { return tensor_softmax(a[0], 0); }
static tensor *c_log_softmax(tensor *const *a) { return tensor_log_softmax(a[0], -1); }
static tensor *c_layer_norm(tensor *const *a) { return tensor_layer_norm(a[0], a[1], a[2], 1e-5); }
static tensor *c_rms_norm(tensor *const *a) { return tensor_rms_norm(a[0], a[1], 1e-6); }
static tensor *c_ce(tensor *const *a) { return tensor_cross_entropy(a[0], a[1]); }
static tensor *c_nll(tensor *const *a) { return tensor_nll_loss(tensor_log_softmax(a[0], 1), a[1]); }
/* cross_entropy_ex, nll_loss_ex, ctc_loss: the class weights are not an input of the case (it would
   make them require grad; the losses have no weight gradient, as PyTorch's) */
static tensor *cx_weight;
static tensor *cx_w(tensor *const *a) { return cx_weight && tensor_get_device(a[0]) != TENSOR_CPU ? device_cuda(cx_weight) : cx_weight; }
static tensor *c_ce_ex_mean(tensor *const *a) { return tensor_cross_entropy_ex(a[0], a[1], cx_w(a), -100, TENSOR_REDUCTION_MEAN, 0.1); }
static tensor *c_ce_ex_none(tensor *const *a) { return tensor_cross_entropy_ex(a[0], a[1], cx_w(a), 2, TENSOR_REDUCTION_NONE, 0.2); }
static tensor *c_ce_ex_prob(tensor *const *a) { return tensor_cross_entropy_ex(a[0], a[1], cx_w(a), -100, TENSOR_REDUCTION_SUM, 0.3); }
static tensor *c_nll_ex(tensor *const *a) { return tensor_nll_loss_ex(tensor_log_softmax(a[0], 1), a[1], cx_w(a), -100, TENSOR_REDUCTION_NONE); }
static tensor *c_ctc_padded(tensor *const *a) { return tensor_ctc_loss(a[0], a[1], a[2], a[3], 0, TENSOR_REDUCTION_MEAN, true); }
static tensor *c_ctc_concat(tensor *const *a) { return tensor_ctc_loss(a[0], a[1], a[2], a[3], 5, TENSOR_REDUCTION_NONE, false); }
static tensor *c_embedding(tensor *const *a) { return tensor_embedding(a[0], a[1]); }
static tensor *c_cat(tensor *const *a) { return tensor_cat(3, a, 1); }
static tensor *c_flip(tensor *const *a) { return tensor_flip(a[0], 1); }
static tensor *c_repeat(tensor *const *a) { return tensor_repeat(a[0], 3, (const int64_t[]){2, 1, 3}); }
static tensor *c_pad(tensor *const *a) { return tensor_pad(a[0], 4, (const int64_t[]){1, 2, 0, 1}, 0.5); }
static tensor *c_tril(tensor *const *a) { return tensor_tril(a[0], -1); }
static tensor *c_gather(tensor *const *a) { return tensor_gather(a[0], 1, a[1]); }
static tensor *c_scatter_add(tensor *const *a) { return tensor_scatter_add(a[0], 1, a[1], a[2]); }
static tensor *c_index_select(tensor *const *a) { return tensor_index_select(a[0], 0, a[1]); }
static tensor *c_masked_fill(tensor *const *a) { return tensor_masked_fill(a[0], a[1], -7); }
static tensor *c_conv2d(tensor *const *a) { return tensor_conv2d(a[0], a[1], a[2], 2, 1, 1, 2); }
static tensor *c_conv1d(tensor *const *a) { return tensor_conv1d(a[0], a[1], a[2], 1, 2, 2, 1); }
/* the configurations cuDNN takes (groups 1, no dilation) with a bias of several channels: its bias
   kernel read the wrong channel's (issue 25) */
static tensor *c_conv2d_plain(tensor *const *a) { return tensor_conv2d(a[0], a[1], a[2], 2, 1, 1, 1); }
static tensor *c_conv1d_plain(tensor *const *a) { return tensor_conv1d(a[0], a[1], a[2], 1, 1, 1, 1); }
static tensor *c_max_pool(tensor *const *a) { return tensor_max_pool2d(a[0], 3, 2, 1); }
static tensor *c_avg_pool(tensor *const *a) { return tensor_avg_pool2d(a[0], 2, 2, 0); }

TEST(cuda_reductions_match_the_cpu) {
    NEED_GPU();
    for (int dt = 0; dt < 2; dt++) { /* f32, f64 */
        tensor_dtype t = dt ? TENSOR_F64 : TENSOR_F32;
        tensor *x = rnd(t, 3, (const int64_t[]){5, 67, 33}, 1), *xt = tensor_transpose(x, 0, 2);
        static const case_fn fs[] = {c_sum, c_sum_dims, c_mean_all, c_prod, c_max, c_argmin, c_var, c_std, c_lse, c_norm, c_cumsum, c_any};
        static const char *const names[] = {"sum", "sum_dims", "mean_all", "prod", "max", "argmin", "var", "std", "logsumexp", "norm", "cumsum", "any"};
        for (int k = 0; k < 12; k++) {
            char what[64];
            snprintf(what, sizeof what, "%s %s", names[k], tensor_dtype_name(t));
            cuda_case(what, 1, IN(x), fs[k]);
            snprintf(what, sizeof what, "%s %s transposed", names[k], tensor_dtype_name(t));
            cuda_case(what, 1, IN(xt), fs[k]);
        }
        tensor_free(xt);
        tensor_free(x);
    }
    tensor *xi = tensor_to_dtype(rnd(TENSOR_F64, 3, (const int64_t[]){4, 5, 6}, 2), TENSOR_I64);
    cuda_case("sum i64", 1, IN(xi), c_sum);
    cuda_case("cumsum i64", 1, IN(xi), c_cumsum);
    cuda_case("argmin i64", 1, IN(xi), c_argmin);
    tensor_free(xi);
    /* few outputs over many elements: the sliced sum (and its gradient), contiguous and strided */
    tensor *big = rnd(TENSOR_F32, 2, (const int64_t[]){3, 400000}, 3), *bigt = tensor_transpose(tensor_reshape(big, TENSOR_SHAPE(400000, 3)), 0, 1);
    cuda_case("sum over 400000", 1, IN(big), c_sum);
    cuda_case("sum over 400000 strided", 1, IN(bigt), c_sum);
    cuda_case("mean_all of 1200000", 1, IN(big), c_mean_all);
    tensor *bigi = tensor_to_dtype(tensor_mul_scalar(big, 1000), TENSOR_I32);
    cuda_case("sum over 400000 i32", 1, IN(bigi), c_sum);
    tensor_free(bigi);
    tensor_free(bigt);
    tensor_free(big);
}

/* The kernels that share memory among a block's threads, small enough for compute-sanitizer's
   racecheck to go through them in seconds (make test-cuda runs it over this test and the
   reductions'): block reductions over rows, columns and everything, the row kernels (softmax,
   log_softmax, layer_norm, rms_norm, cross_entropy, forward and fused backward), the scans and
   the sort. Rows longer than a block's threads, so every tree level is used. */
static tensor *c_sum_rows(tensor *const *a) { return tensor_sum(a[0], -1, false); }
static tensor *c_amax_cols(tensor *const *a) { return tensor_amax(a[0], 1, (const int[]){0}, false); }
static tensor *c_var_all(tensor *const *a) { return tensor_var(tensor_flatten(a[0], 0, -1), 0, 1, false); }
static tensor *c_softmax_rows(tensor *const *a) { return tensor_softmax(a[0], -1); }
static tensor *c_cumprod(tensor *const *a) { return tensor_cumprod(a[0], 1); }
static tensor *c_logcumsumexp(tensor *const *a) { return tensor_logcumsumexp(a[0], 1); }
static tensor *c_cummax(tensor *const *a) { tensor *idx = NULL; return tensor_cummax(a[0], 1, &idx); }
static tensor *c_sort(tensor *const *a) { tensor *idx = NULL; return tensor_sort(a[0], 1, true, &idx); }
TEST(cuda_shared_memory_kernels) {
    NEED_GPU();
    tensor_scope_begin();
    tensor *x = rnd(TENSOR_F32, 2, (const int64_t[]){3, 1500}, 80), *w = rnd(TENSOR_F32, 1, (const int64_t[]){1500}, 81), *b = rnd(TENSOR_F32, 1, (const int64_t[]){1500}, 82);
    cuda_case("sum over rows", 1, IN(x), c_sum_rows);
    cuda_case("amax over columns", 1, IN(tensor_transpose(x, 0, 1)), c_amax_cols);
    cuda_case("var of everything", 1, IN(x), c_var_all);
    cuda_case("softmax over rows", 1, IN(x), c_softmax_rows);
    cuda_case("log_softmax over rows", 1, IN(x), c_log_softmax);
    cuda_case("layer_norm", 3, IN(x, w, b), c_layer_norm);
    cuda_case("rms_norm", 2, IN(x, w), c_rms_norm);
    cuda_case("cross_entropy", 2, IN(x, tensor_randint(0, 1500, TENSOR_SHAPE(3), TENSOR_I64)), c_ce);
    tensor *s = tensor_mul_scalar(rnd(TENSOR_F64, 2, (const int64_t[]){2, 700}, 83), 0.01);
    cuda_case("cumsum", 1, IN(s), c_cumsum);
    cuda_case("cumprod", 1, IN(tensor_add_scalar(s, 1)), c_cumprod);
    cuda_case("logcumsumexp", 1, IN(s), c_logcumsumexp);
    cuda_case("cummax", 1, IN(s), c_cummax);
    cuda_case("sort", 1, IN(rnd(TENSOR_F32, 2, (const int64_t[]){2, 1100}, 84)), c_sort);
    tensor_scope_end();
}

TEST(cuda_matmul_matches_the_cpu) {
    NEED_GPU();
    tensor_dtype dts[4] = {TENSOR_F32, TENSOR_F64, TENSOR_BF16, TENSOR_F16};
    for (int k = 0; k < 4; k++) {
        tensor_scope_begin();
        tensor_dtype t = dts[k];
        char what[64];
        snprintf(what, sizeof what, "matmul %s batched broadcast", tensor_dtype_name(t));
        cuda_case(what, 2, IN(rnd(t, 3, (const int64_t[]){3, 37, 29}, 3), rnd(t, 2, (const int64_t[]){29, 41}, 4)), c_matmul);
        snprintf(what, sizeof what, "matmul %s transposed", tensor_dtype_name(t));
        cuda_case(what, 2, IN(rnd(t, 3, (const int64_t[]){2, 29, 37}, 5), rnd(t, 3, (const int64_t[]){2, 29, 41}, 6)), c_matmul_t);
        snprintf(what, sizeof what, "matmul %s vector", tensor_dtype_name(t));
        cuda_case(what, 2, IN(rnd(t, 1, (const int64_t[]){29}, 7), rnd(t, 3, (const int64_t[]){4, 29, 5}, 8)), c_matmul);
        snprintf(what, sizeof what, "linear %s", tensor_dtype_name(t));
        cuda_case(what, 3, IN(rnd(t, 2, (const int64_t[]){64, 100}, 9), rnd(t, 2, (const int64_t[]){30, 100}, 10), rnd(t, 1, (const int64_t[]){30}, 11)), c_linear);
        tensor_scope_end();
    }
    tensor_scope_begin();
    cuda_case("matmul i64", 2, IN(tensor_to_dtype(rnd(TENSOR_F64, 2, (const int64_t[]){7, 9}, 12), TENSOR_I64), tensor_to_dtype(rnd(TENSOR_F64, 2, (const int64_t[]){9, 5}, 13), TENSOR_I64)), c_matmul);
    cuda_case("matmul k = 0", 2, IN(rnd(TENSOR_F32, 2, (const int64_t[]){3, 0}, 14), rnd(TENSOR_F32, 2, (const int64_t[]){0, 4}, 15)), c_matmul);
    tensor_scope_end();
}

/* linear algebra (decompositions): the three kernels (a block per matrix on the device, blocked
   from n = 128 on the CPU) and the composites built on them, forward and gradients; A = R + 4 I
   (well-conditioned), S = R R^T + n I (positive-definite) */
static tensor *la_shift4(tensor *a) { return tensor_add(a, tensor_mul_scalar(tensor_to_device(tensor_eye(tensor_shape(a)[tensor_ndim(a) - 1], tensor_get_dtype(a)), tensor_get_device(a)), 4)); }
static tensor *c_lu_factor(tensor *const *a) { return tensor_linalg_lu_factor(la_shift4(a[0]), NULL); }
static tensor *c_lu_pivots(tensor *const *a) { tensor *p = NULL; tensor_free(tensor_linalg_lu_factor(la_shift4(a[0]), &p)); return p; }
static tensor *c_lu_solve(tensor *const *a) { tensor *p = NULL, *lu = tensor_linalg_lu_factor(la_shift4(a[0]), &p); return tensor_linalg_lu_solve(lu, p, a[1], true, true); }
static tensor *c_solve(tensor *const *a) { return tensor_linalg_solve(la_shift4(a[0]), a[1], true); }
static tensor *c_inv(tensor *const *a) { return tensor_linalg_inv(la_shift4(a[0])); }
static tensor *c_det(tensor *const *a) { return tensor_linalg_det(la_shift4(a[0])); }
static tensor *c_slogdet(tensor *const *a) { tensor *l = NULL; tensor_free(tensor_linalg_slogdet(la_shift4(a[0]), &l)); return l; }
static tensor *c_cholesky(tensor *const *a) {
    int64_t n = tensor_shape(a[0])[tensor_ndim(a[0]) - 1];
    tensor *s = tensor_add(tensor_matmul(a[0], tensor_transpose(a[0], -1, -2)), tensor_mul_scalar(tensor_to_device(tensor_eye(n, tensor_get_dtype(a[0])), tensor_get_device(a[0])), (double)n));
    return tensor_linalg_cholesky(s, false);
}
static tensor *c_trsm(tensor *const *a) { return tensor_linalg_solve_triangular(la_shift4(a[0]), a[1], true, false, false); }
TEST(cuda_linalg_decomp_matches_the_cpu) {
    NEED_GPU();
    for (int k = 0; k < 2; k++) {
        tensor_scope_begin();
        tensor_dtype t = k ? TENSOR_F64 : TENSOR_F32;
        char what[64];
        tensor *A = rnd(t, 3, (const int64_t[]){3, 6, 6}, 21), *B = rnd(t, 2, (const int64_t[]){6, 2}, 22), *Br = rnd(t, 3, (const int64_t[]){3, 2, 6}, 23);
#define LA_CASE(name, n, ...) do { snprintf(what, sizeof what, "%s %s", #name, tensor_dtype_name(t)); cuda_case(what, n, IN(__VA_ARGS__), c_##name); } while (0)
        LA_CASE(lu_factor, 1, A);
        LA_CASE(lu_pivots, 1, A);
        LA_CASE(lu_solve, 2, A, B);
        LA_CASE(solve, 2, A, B);
        LA_CASE(inv, 1, A);
        LA_CASE(det, 1, A);
        LA_CASE(slogdet, 1, A);
        LA_CASE(cholesky, 1, A);
        LA_CASE(trsm, 2, A, Br);
        tensor_scope_end();
    }
    tensor_scope_begin(); /* f64 at n = 130: the CPU's blocked kernels against the device's plain ones */
    char what[64];
    tensor_dtype t = TENSOR_F64;
    tensor *A = rnd(t, 2, (const int64_t[]){130, 130}, 24), *B = rnd(t, 2, (const int64_t[]){130, 3}, 25);
    LA_CASE(lu_factor, 1, A);
    device_cond = tensor_item(tensor_linalg_cond(A, NULL)); /* 7.6e4: the gradient's tolerance from it */
    LA_CASE(solve, 2, A, B);
    device_cond = 0;
    LA_CASE(cholesky, 1, A);
#undef LA_CASE
    tensor_scope_end();
}

/* QR and eigh (a thread per matrix on the device): Q and R together; eigh's eigenvalues with V * V
   (independent of the eigenvectors' signs) of S = A + A^T */
static tensor *qe_flat(tensor *t) { return tensor_reshape(t, 1, (const int64_t[]){-1}); }
static tensor *c_qr_pair(tensor *a, const char *mode) {
    tensor *R = NULL, *Q = tensor_linalg_qr(a, mode, &R);
    tensor *parts[2] = {qe_flat(Q), qe_flat(R)};
    return Q && R ? tensor_cat(2, parts, 0) : NULL;
}
static tensor *c_qr(tensor *const *a) { return c_qr_pair(a[0], "reduced"); }
static tensor *c_qr_complete(tensor *const *a) { return c_qr_pair(tensor_transpose(a[0], -1, -2), "complete"); } /* wide */
static tensor *c_qr_r(tensor *const *a) { tensor *R = NULL; tensor_free(tensor_linalg_qr(tensor_detach(a[0]), "r", &R)); return R; }
static tensor *c_eigh(tensor *const *a) {
    tensor *V = NULL, *w = tensor_linalg_eigh(tensor_add(a[0], tensor_transpose(a[0], -1, -2)), "L", &V);
    tensor *parts[2] = {qe_flat(w), qe_flat(tensor_mul(V, V))};
    return w && V ? tensor_cat(2, parts, 0) : NULL;
}
static tensor *c_eigvalsh(tensor *const *a) { return tensor_linalg_eigvalsh(tensor_add(a[0], tensor_transpose(a[0], -1, -2)), "U"); }
TEST(cuda_linalg_qr_eigh_matches_the_cpu) {
    NEED_GPU();
    for (int k = 0; k < 2; k++) {
        tensor_scope_begin();
        tensor_dtype t = k ? TENSOR_F64 : TENSOR_F32;
        char what[64];
        tensor *T = rnd(t, 3, (const int64_t[]){3, 6, 4}, 41), *S = rnd(t, 3, (const int64_t[]){3, 5, 5}, 42);
#define QE_CASE(name, A) do { snprintf(what, sizeof what, "%s %s", #name, tensor_dtype_name(t)); cuda_case(what, 1, IN(A), c_##name); } while (0)
        QE_CASE(qr, T);
        QE_CASE(qr_complete, T);
        QE_CASE(qr_r, T);
        QE_CASE(eigh, S);
        QE_CASE(eigvalsh, S);
#undef QE_CASE
        tensor_scope_end();
    }
#ifndef DEVICE_SELF_CHECK
    tensor_scope_begin(); /* no convergence (NaN): the CPU's message, from the device's eigenvalues */
    CHECK_BAD(tensor_linalg_eigh(device_cuda(tensor_full(TENSOR_SHAPE(2, 3, 3), NAN, TENSOR_F64)), NULL, NULL), "(Batch element 0): the algorithm failed to converge");
    tensor_scope_end();
#endif
}

/* linear algebra (norms and the SVD): the Jacobi kernel (a thread per matrix on the device) and
   the composites on it, forward and gradients; U and Vh with their signs fixed by U's diagonal,
   singular values made distinct by a shift of 2 j on the diagonal */
static tensor *svd_sep(tensor *a) {
    int64_t m = tensor_shape(a)[tensor_ndim(a) - 2], n = tensor_shape(a)[tensor_ndim(a) - 1], k = m < n ? m : n;
    tensor *d = tensor_diag_embed(tensor_mul_scalar(tensor_arange(1, (double)k + 1, 1, tensor_get_dtype(a)), 2), 0, -2, -1);
    d = tensor_pad(d, 4, (const int64_t[]){0, n - k, 0, m - k}, 0);
    return tensor_add(a, tensor_to_device(d, tensor_get_device(a)));
}
static tensor *c_svd(tensor *const *a, bool full) {
    tensor *S = NULL, *Vh = NULL, *U = tensor_linalg_svd(svd_sep(a[0]), full, &S, &Vh);
    if (!U || !S || !Vh) return NULL;
    int64_t k = tensor_shape(S)[tensor_ndim(S) - 1];
    U = tensor_narrow(U, -1, 0, k); /* the full factors' first k columns (rows of Vh): the rest is any basis of the complement */
    Vh = tensor_narrow(Vh, -2, 0, k);
    tensor *sg = tensor_sign(tensor_detach(tensor_diagonal(U, 0, -2, -1))); /* k signs: taken of the narrowed U */
    tensor *parts[3] = {tensor_flatten(tensor_mul(U, tensor_unsqueeze(sg, -2)), 0, -1), tensor_flatten(S, 0, -1), tensor_flatten(tensor_mul(Vh, tensor_unsqueeze(sg, -1)), 0, -1)};
    return tensor_cat(3, parts, 0);
}
static tensor *c_svd_reduced(tensor *const *a) { return c_svd(a, false); }
static tensor *c_svd_full(tensor *const *a) { return c_svd(a, true); }
/* full U of a rank-2 matrix: the columns of its two nonzero singular values (up to sign), and U^T U
   = I, the completed columns too. The other columns are any orthonormal basis of the rest: those
   of the singular values that come out 1e-16 rather than 0 follow the rounding, which differs
   between the GPU's kernel and the CPU's (the first run compared them and differed). */
static tensor *c_svd_full_u(tensor *const *a) {
    tensor *U = tensor_linalg_svd(tensor_detach(a[0]), true, NULL, NULL);
    if (!U) return NULL;
    tensor *parts[2] = {tensor_flatten(tensor_abs(tensor_narrow(U, -1, 0, 2)), 0, -1), tensor_flatten(tensor_matmul(tensor_transpose(U, -1, -2), U), 0, -1)};
    return tensor_cat(2, parts, 0);
}
static tensor *c_svdvals(tensor *const *a) { return tensor_linalg_svdvals(svd_sep(a[0])); }
static tensor *c_pinv(tensor *const *a) { return tensor_linalg_pinv(svd_sep(a[0]), 0, -1, false); }
static tensor *c_rank(tensor *const *a) { return tensor_linalg_matrix_rank(tensor_matmul(a[0], tensor_transpose(a[0], -1, -2)), 0, -1, true); }
static tensor *c_lstsq(tensor *const *a) { return tensor_linalg_lstsq(svd_sep(a[0]), a[1], -1, NULL, NULL, NULL); }
static tensor *c_nuc(tensor *const *a) { return tensor_linalg_matrix_norm(svd_sep(a[0]), "nuc", -2, -1, false); }
static tensor *c_vnorm(tensor *const *a) { return tensor_linalg_vector_norm(a[0], 3, 2, (const int[]){0, 2}, true); }
static tensor *c_cond(tensor *const *a) { return tensor_linalg_cond(svd_sep(a[0]), "1"); }
TEST(cuda_linalg_svd_matches_the_cpu) {
    NEED_GPU();
    for (int k = 0; k < 2; k++) {
        tensor_scope_begin();
        tensor_dtype t = k ? TENSOR_F64 : TENSOR_F32;
        char what[64];
        tensor *T = rnd(t, 3, (const int64_t[]){3, 7, 4}, 51), *W = rnd(t, 3, (const int64_t[]){2, 3, 6}, 52), *Q = rnd(t, 2, (const int64_t[]){5, 5}, 53);
        tensor *B = rnd(t, 2, (const int64_t[]){7, 2}, 54);
#define SVD_CASE(name, n, ...) do { snprintf(what, sizeof what, "%s %s", #name, tensor_dtype_name(t)); cuda_case(what, n, IN(__VA_ARGS__), c_##name); } while (0)
        SVD_CASE(svd_reduced, 1, T);
        SVD_CASE(svd_reduced, 1, W);
        SVD_CASE(svd_full, 1, T);
        SVD_CASE(svd_full, 1, W);
        SVD_CASE(svd_full_u, 1, tensor_matmul(rnd(t, 2, (const int64_t[]){6, 2}, 55), rnd(t, 2, (const int64_t[]){2, 4}, 56))); /* rank 2 */
        SVD_CASE(svdvals, 1, Q);
        SVD_CASE(pinv, 1, W);
        SVD_CASE(rank, 1, rnd(t, 3, (const int64_t[]){2, 4, 2}, 57));
        SVD_CASE(lstsq, 2, T, B);
        SVD_CASE(nuc, 1, T);
        SVD_CASE(vnorm, 1, T);
        SVD_CASE(cond, 1, Q);
#undef SVD_CASE
        tensor_scope_end();
    }
}

TEST(cuda_nn_ops_match_the_cpu) {
    NEED_GPU();
    tensor_scope_begin();
    tensor *x = rnd(TENSOR_F32, 3, (const int64_t[]){6, 7, 300}, 20);
    cuda_case("softmax dim 0", 1, IN(x), c_softmax0);
    cuda_case("log_softmax", 1, IN(x), c_log_softmax);
    cuda_case("layer_norm", 3, IN(x, rnd(TENSOR_F32, 1, (const int64_t[]){300}, 21), rnd(TENSOR_F32, 1, (const int64_t[]){300}, 22)), c_layer_norm);
    cuda_case("rms_norm", 2, IN(x, rnd(TENSOR_F32, 1, (const int64_t[]){300}, 23)), c_rms_norm);
    tensor *logits = rnd(TENSOR_F32, 2, (const int64_t[]){32, 10}, 24);
    tensor *targets = tensor_randint(0, 10, TENSOR_SHAPE(32), TENSOR_I64);
    tensor_fill_(tensor_select(targets, 0, 3), -100); /* ignore_index */
    cuda_case("cross_entropy", 2, IN(logits, targets), c_ce);
    cuda_case("cross_entropy probabilities", 2, IN(logits, tensor_softmax(rnd(TENSOR_F32, 2, (const int64_t[]){32, 10}, 25), 1)), c_ce);
    cuda_case("nll_loss", 2, IN(logits, targets), c_nll);
    cx_weight = rnd(TENSOR_F32, 1, (const int64_t[]){10}, 50);
    cx_weight = tensor_add_scalar(tensor_abs(cx_weight), 0.1);
    cuda_case("cross_entropy_ex weights, smoothing, mean", 2, IN(logits, targets), c_ce_ex_mean);
    cuda_case("cross_entropy_ex probabilities, weights, smoothing", 2, IN(logits, tensor_softmax(rnd(TENSOR_F32, 2, (const int64_t[]){32, 10}, 25), 1)), c_ce_ex_prob);
    cuda_case("nll_loss_ex weights, none", 2, IN(logits, targets), c_nll_ex);
    cx_weight = rnd(TENSOR_F64, 1, (const int64_t[]){6}, 51);
    cx_weight = tensor_add_scalar(tensor_abs(cx_weight), 0.1);
    cuda_case("cross_entropy_ex K-dim, ignore_index 2, none", 2, IN(rnd(TENSOR_F64, 4, (const int64_t[]){4, 6, 5, 3}, 52), tensor_randint(0, 6, TENSOR_SHAPE(4, 5, 3), TENSOR_I64)), c_ce_ex_none);
    cx_weight = NULL;
    cuda_case("cross_entropy_ex no weights", 2, IN(logits, targets), c_ce_ex_mean);
    {
        tensor *lp = tensor_log_softmax(rnd(TENSOR_F64, 3, (const int64_t[]){12, 4, 6}, 53), 2);
        static const double il[4] = {12, 10, 12, 6}, tl[4] = {5, 3, 0, 4}, tlc[4] = {2, 3, 1, 4};
        tensor *ilt = test_tensor(TENSOR_I64, TENSOR_SHAPE(4), il);
        /* padded, label 1 repeated; the last element cannot fit 4 4 4 4 and the 3 blanks between into 6 frames: zero_infinity */
        static const double tp[20] = {1, 1, 2, 3, 4, 5, 5, 2, 0, 0, 3, 0, 0, 0, 0, 4, 4, 4, 4, 0};
        cuda_case("ctc_loss padded, mean, zero_infinity", 4, IN(lp, test_tensor(TENSOR_I64, TENSOR_SHAPE(4, 5), tp), ilt, test_tensor(TENSOR_I32, TENSOR_SHAPE(4), tl)), c_ctc_padded);
        static const double tc[10] = {0, 0, 1, 2, 3, 4, 3, 3, 1, 3};
        cuda_case("ctc_loss concatenated, blank 5, none", 4, IN(lp, test_tensor(TENSOR_I64, TENSOR_SHAPE(10), tc), ilt, test_tensor(TENSOR_I64, TENSOR_SHAPE(4), tlc)), c_ctc_concat);
    }
    cuda_case("embedding", 2, IN(rnd(TENSOR_F32, 2, (const int64_t[]){50, 16}, 26), tensor_randint(0, 50, TENSOR_SHAPE(4, 9), TENSOR_I64)), c_embedding);
    cuda_case("conv2d stride 2 groups 2", 3, IN(rnd(TENSOR_F32, 4, (const int64_t[]){3, 4, 11, 9}, 27), rnd(TENSOR_F32, 4, (const int64_t[]){6, 2, 3, 3}, 28), rnd(TENSOR_F32, 1, (const int64_t[]){6}, 29)), c_conv2d);
    cuda_case("conv2d stride 2, bias", 3, IN(rnd(TENSOR_F32, 4, (const int64_t[]){3, 4, 11, 9}, 36), rnd(TENSOR_F32, 4, (const int64_t[]){6, 4, 3, 3}, 37), rnd(TENSOR_F32, 1, (const int64_t[]){6}, 38)), c_conv2d_plain);
    cuda_case("conv1d, bias", 3, IN(rnd(TENSOR_F64, 3, (const int64_t[]){2, 3, 20}, 39), rnd(TENSOR_F64, 3, (const int64_t[]){5, 3, 3}, 40), rnd(TENSOR_F64, 1, (const int64_t[]){5}, 41)), c_conv1d_plain);
    cuda_case("conv1d dilation 2", 3, IN(rnd(TENSOR_F32, 3, (const int64_t[]){2, 3, 20}, 30), rnd(TENSOR_F32, 3, (const int64_t[]){5, 3, 3}, 31), rnd(TENSOR_F32, 1, (const int64_t[]){5}, 32)), c_conv1d);
    cuda_case("max_pool2d", 1, IN(rnd(TENSOR_F32, 4, (const int64_t[]){2, 3, 9, 10}, 33)), c_max_pool);
    cuda_case("avg_pool2d", 1, IN(rnd(TENSOR_F32, 4, (const int64_t[]){2, 3, 8, 10}, 34)), c_avg_pool);
    /* bad indices: the CPU's message, from the device */
#ifndef DEVICE_SELF_CHECK
    tensor *w = device_cuda(rnd(TENSOR_F32, 2, (const int64_t[]){5, 3}, 35));
    CHECK_BAD(tensor_embedding(w, device_cuda(tensor_full(TENSOR_SHAPE(2), 5, TENSOR_I64))), "tensor_embedding");
    CHECK_BAD(tensor_cross_entropy(device_cuda(logits), device_cuda(tensor_full(TENSOR_SHAPE(32), 10, TENSOR_I64))), "tensor_cross_entropy");
#endif
    tensor_scope_end();
}

/* nn ops, more: grid_sample (a kernel with a fused backward), conv3d, affine_grid and
   embedding_bag (composites of device ops) */
static const char *const gs_modes[3] = {"bilinear", "nearest", "bicubic"}, *const gs_pads[3] = {"zeros", "border", "reflection"};
static int gs_case_m, gs_case_p;
static tensor *c_grid_sample(tensor *const *a) { return tensor_grid_sample(a[0], a[1], gs_modes[gs_case_m], gs_pads[gs_case_p], gs_case_m != 1 && gs_case_p == 2); }
static tensor *c_conv3d(tensor *const *a) { return tensor_conv3d(a[0], a[1], a[2], 2, 1, 1, 2); }
static tensor *c_affine_grid(tensor *const *a) { return tensor_affine_grid(a[0], 4, (const int64_t[]){2, 3, 5, 7}, false); }
static tensor *c_embedding_bag_sum(tensor *const *a) { return tensor_embedding_bag(a[0], a[1], a[2], "sum", a[3], 3, false); }
static tensor *c_embedding_bag_max(tensor *const *a) { return tensor_embedding_bag(a[0], a[1], a[2], "max", NULL, TENSOR_NO_PADDING_IDX, true); }

TEST(cuda_nn_more_ops_match_the_cpu) {
    NEED_GPU();
    tensor_scope_begin();
    tensor *x = rnd(TENSOR_F32, 4, (const int64_t[]){2, 3, 7, 9}, 40);
    tensor *grid = tensor_mul_scalar(rnd(TENSOR_F32, 4, (const int64_t[]){2, 5, 6, 2}, 41), 0.6); /* in [-1.2, 1.2] */
    for (gs_case_m = 0; gs_case_m < 3; gs_case_m++)
        for (gs_case_p = 0; gs_case_p < 3; gs_case_p++) {
            char what[64];
            snprintf(what, sizeof what, "grid_sample %s %s", gs_modes[gs_case_m], gs_pads[gs_case_p]);
            cuda_case(what, 2, IN(x, grid), c_grid_sample);
        }
    gs_case_m = 2;
    gs_case_p = 1;
    cuda_case("grid_sample f64 transposed", 2, IN(tensor_transpose(tensor_to_dtype(x, TENSOR_F64), 2, 3), tensor_to_dtype(tensor_slice(grid, 2, 0, 5, 1), TENSOR_F64)), c_grid_sample);
    cuda_case("conv3d stride 2 groups 2", 3, IN(rnd(TENSOR_F32, 5, (const int64_t[]){2, 4, 5, 6, 7}, 42), rnd(TENSOR_F32, 5, (const int64_t[]){6, 2, 3, 2, 3}, 43), rnd(TENSOR_F32, 1, (const int64_t[]){6}, 44)), c_conv3d);
    cuda_case("affine_grid", 1, IN(rnd(TENSOR_F32, 3, (const int64_t[]){2, 2, 3}, 45)), c_affine_grid);
    tensor *idx = tensor_randint(0, 20, TENSOR_SHAPE(30), TENSOR_I64), *off = tensor_from_data((const int64_t[]){0, 4, 4, 11, 30}, 1, (const int64_t[]){5}, TENSOR_I64);
    cuda_case("embedding_bag sum", 4, IN(rnd(TENSOR_F32, 2, (const int64_t[]){20, 8}, 46), idx, tensor_slice(off, 0, 0, 4, 1), rnd(TENSOR_F32, 1, (const int64_t[]){30}, 47)), c_embedding_bag_sum);
    cuda_case("embedding_bag max", 3, IN(rnd(TENSOR_F32, 2, (const int64_t[]){20, 8}, 48), idx, off), c_embedding_bag_max);
    tensor_scope_end();
}

TEST(cuda_shape_and_index_ops_match_the_cpu) {
    NEED_GPU();
    tensor_scope_begin();
    tensor *x = rnd(TENSOR_F32, 3, (const int64_t[]){4, 5, 6}, 40);
    cuda_case("cat", 3, IN(x, rnd(TENSOR_F32, 3, (const int64_t[]){4, 2, 6}, 41), tensor_transpose(rnd(TENSOR_F32, 3, (const int64_t[]){4, 6, 3}, 42), 1, 2)), c_cat);
    cuda_case("flip", 1, IN(x), c_flip);
    cuda_case("repeat", 1, IN(x), c_repeat);
    cuda_case("pad", 1, IN(x), c_pad);
    cuda_case("tril", 1, IN(x), c_tril);
    tensor *idx = tensor_randint(0, 5, TENSOR_SHAPE(4, 3, 6), TENSOR_I64);
    cuda_case("gather", 2, IN(x, idx), c_gather);
    cuda_case("scatter_add", 3, IN(x, idx, rnd(TENSOR_F32, 3, (const int64_t[]){4, 3, 6}, 43)), c_scatter_add);
    cuda_case("index_select", 2, IN(x, tensor_randint(0, 4, TENSOR_SHAPE(7), TENSOR_I64)), c_index_select);
    cuda_case("masked_fill", 2, IN(x, tensor_gt(rnd(TENSOR_F32, 2, (const int64_t[]){5, 6}, 44), tensor_scalar(0, TENSOR_F32))), c_masked_fill);
    tensor_scope_end();
}

/* The indexing ops of index.h: scatter, scatter_reduce and searchsorted are kernels of their own;
   the rest are composites that run the device's kernels (and read counts back). */
static tensor *c_scatter(tensor *const *a) { return tensor_scatter(a[0], 0, a[1], a[2]); }
static tensor *c_scatter_sum(tensor *const *a) { return tensor_scatter_reduce(a[0], 1, a[1], a[2], "sum", true); }
static tensor *c_scatter_prod(tensor *const *a) { return tensor_scatter_reduce(a[0], 1, a[1], a[2], "prod", false); }
static tensor *c_scatter_mean(tensor *const *a) { return tensor_scatter_reduce(a[0], 1, a[1], a[2], "mean", true); }
static tensor *c_scatter_amax(tensor *const *a) { return tensor_scatter_reduce(a[0], 1, a[1], a[2], "amax", false); }
static tensor *c_scatter_amin(tensor *const *a) { return tensor_scatter_reduce(a[0], 1, a[1], a[2], "amin", true); }
static tensor *c_index_add(tensor *const *a) { return tensor_index_add(a[0], 0, a[1], a[2], 0.5); }
static tensor *c_index_fill(tensor *const *a) { return tensor_index_fill(a[0], 1, a[1], -2); }
static tensor *c_index_put(tensor *const *a) { return tensor_index_put(a[0], 2, a + 1, a[3], true); }
static tensor *c_take_along_dim(tensor *const *a) { int d = 1; return tensor_take_along_dim(a[0], a[1], &d); }
static tensor *c_masked_select(tensor *const *a) { return tensor_masked_select(a[0], a[1]); }
static tensor *c_masked_scatter(tensor *const *a) { return tensor_masked_scatter(a[0], a[1], a[2]); }
static tensor *c_nonzero(tensor *const *a) { return tensor_nonzero(a[0]); }
static tensor *c_searchsorted(tensor *const *a) { return tensor_searchsorted(a[0], a[1], false, true, NULL); }
static tensor *c_bincount(tensor *const *a) { return tensor_bincount(a[0], a[1], 3); }
static tensor *c_histc(tensor *const *a) { return tensor_histc(a[0], 7, -1, 1); }
static tensor *c_unique_counts(tensor *const *a) { tensor *cnt = NULL, *u = tensor_unique(a[0], true, NULL, NULL, &cnt); return u ? cnt : NULL; }
static tensor *c_diagonal_scatter(tensor *const *a) { return tensor_diagonal_scatter(a[0], a[1], 1, 0, 1); }
TEST(cuda_index_more_ops_match_the_cpu) {
    NEED_GPU();
    tensor_scope_begin();
    tensor *x = rnd(TENSOR_F32, 2, (const int64_t[]){6, 9}, 60);
    tensor *perm = tensor_reshape(tensor_randperm(6, TENSOR_I64), 2, (const int64_t[]){6, 1}); /* no repeats: scatter's stores do not collide */
    cuda_case("scatter", 3, IN(x, tensor_expand(perm, 2, (const int64_t[]){6, 4}), rnd(TENSOR_F32, 2, (const int64_t[]){6, 4}, 61)), c_scatter);
    tensor *idx = tensor_randint(0, 9, TENSOR_SHAPE(6, 12), TENSOR_I64); /* repeats */
    tensor *src = rnd(TENSOR_F32, 2, (const int64_t[]){6, 12}, 62);
    cuda_case("scatter_reduce sum", 3, IN(x, idx, src), c_scatter_sum);
    cuda_case("scatter_reduce prod", 3, IN(x, idx, src), c_scatter_prod);
    cuda_case("scatter_reduce mean", 3, IN(x, idx, src), c_scatter_mean);
    cuda_case("scatter_reduce amax", 3, IN(x, idx, src), c_scatter_amax);
    cuda_case("scatter_reduce amin", 3, IN(x, idx, src), c_scatter_amin);
    cuda_case("scatter_reduce amax i32", 3, IN(tensor_to_dtype(x, TENSOR_I32), idx, tensor_to_dtype(tensor_mul_scalar(src, 10), TENSOR_I32)), c_scatter_amax);
    cuda_case("scatter_reduce sum f16", 3, IN(tensor_to_dtype(x, TENSOR_F16), idx, tensor_to_dtype(src, TENSOR_F16)), c_scatter_sum);
    cuda_case("scatter_reduce prod u8", 3, IN(tensor_to_dtype(tensor_abs(x), TENSOR_U8), idx, tensor_to_dtype(tensor_add_scalar(tensor_abs(src), 1), TENSOR_U8)), c_scatter_prod);
    cuda_case("index_add", 3, IN(x, tensor_randint(0, 6, TENSOR_SHAPE(5), TENSOR_I64), rnd(TENSOR_F32, 2, (const int64_t[]){5, 9}, 63)), c_index_add);
    cuda_case("index_fill", 2, IN(x, tensor_randint(-9, 9, TENSOR_SHAPE(4), TENSOR_I64)), c_index_fill);
    cuda_case("index_put", 4, IN(x, tensor_randint(-6, 6, TENSOR_SHAPE(7), TENSOR_I64), tensor_randint(0, 9, TENSOR_SHAPE(7), TENSOR_I64), rnd(TENSOR_F32, 1, (const int64_t[]){7}, 64)), c_index_put);
    cuda_case("take_along_dim", 2, IN(x, tensor_randint(0, 9, TENSOR_SHAPE(1, 5), TENSOR_I64)), c_take_along_dim);
    tensor *mask = tensor_gt(rnd(TENSOR_F32, 1, (const int64_t[]){9}, 65), tensor_scalar(0, TENSOR_F32));
    cuda_case("masked_select", 2, IN(x, mask), c_masked_select);
    cuda_case("masked_scatter", 3, IN(x, mask, rnd(TENSOR_F32, 1, (const int64_t[]){60}, 66)), c_masked_scatter);
    cuda_case("nonzero", 1, IN(tensor_to_dtype(x, TENSOR_I64)), c_nonzero);
    cuda_case("searchsorted", 2, IN(tensor_cumsum(tensor_abs(rnd(TENSOR_F64, 2, (const int64_t[]){6, 9}, 67)), 1), rnd(TENSOR_F64, 2, (const int64_t[]){6, 5}, 68)), c_searchsorted);
    cuda_case("bincount", 2, IN(tensor_randint(0, 8, TENSOR_SHAPE(40), TENSOR_I64), rnd(TENSOR_F32, 1, (const int64_t[]){40}, 69)), c_bincount);
    cuda_case("histc", 1, IN(x), c_histc);
    cuda_case("unique counts", 1, IN(tensor_randint(0, 8, TENSOR_SHAPE(40), TENSOR_I64)), c_unique_counts);
    cuda_case("diagonal_scatter", 2, IN(x, rnd(TENSOR_F32, 1, (const int64_t[]){6}, 70)), c_diagonal_scatter);
#ifndef DEVICE_SELF_CHECK
    CHECK_BAD(tensor_scatter_reduce(device_cuda(x), 1, device_cuda(tensor_full(TENSOR_SHAPE(2, 2), 9, TENSOR_I64)), device_cuda(src), "amax", true), "tensor_scatter_reduce");
    CHECK_BAD(tensor_take(device_cuda(x), device_cuda(tensor_full(TENSOR_SHAPE(2), 54, TENSOR_I64))), "tensor_take");
#endif
    tensor_scope_end();
}

/* The shape and construction ops of construct.h are composites and views: on the device they run
   the device's kernels (diag_embed and the views' backward through scatter_add, roll through cat). */
static tensor *c_roll(tensor *const *a) { return tensor_roll(a[0], 2, (const int64_t[]){2, -1}, (const int[]){0, 2}); }
static tensor *c_rot90(tensor *const *a) { return tensor_rot90(a[0], 1, 1, 2); }
static tensor *c_repeat_interleave(tensor *const *a) { int d = 1; return tensor_repeat_interleave(a[0], 3, &d); }
static tensor *c_diagonal(tensor *const *a) { return tensor_diagonal(a[0], 1, 2, 1); }
static tensor *c_unfold(tensor *const *a) { return tensor_unfold(a[0], 2, 3, 2); }
static tensor *c_as_strided(tensor *const *a) { return tensor_as_strided(a[0], 2, (const int64_t[]){5, 4}, (const int64_t[]){3, 2}, 7); }
static tensor *c_diag_embed(tensor *const *a) { return tensor_diag_embed(a[0], -1, 0, 2); }
static tensor *c_block_diag(tensor *const *a) { return tensor_block_diag(2, a); }
static tensor *c_hstack(tensor *const *a) { return tensor_hstack(2, a); }
static tensor *c_tile(tensor *const *a) { return tensor_tile(a[0], 2, (const int64_t[]){2, 3}); }
TEST(cuda_construct_ops_match_the_cpu) {
    NEED_GPU();
    tensor_scope_begin();
    tensor *x = rnd(TENSOR_F32, 3, (const int64_t[]){4, 5, 6}, 50);
    cuda_case("roll", 1, IN(x), c_roll);
    cuda_case("rot90", 1, IN(x), c_rot90);
    cuda_case("repeat_interleave", 1, IN(x), c_repeat_interleave);
    cuda_case("diagonal", 1, IN(x), c_diagonal);
    cuda_case("unfold", 1, IN(x), c_unfold);
    cuda_case("as_strided", 1, IN(x), c_as_strided);
    cuda_case("diag_embed", 1, IN(x), c_diag_embed);
    cuda_case("diag_embed i64", 1, IN(tensor_to_dtype(x, TENSOR_I64)), c_diag_embed);
    cuda_case("block_diag", 2, IN(rnd(TENSOR_F32, 2, (const int64_t[]){2, 3}, 51), rnd(TENSOR_F32, 1, (const int64_t[]){4}, 52)), c_block_diag);
    cuda_case("hstack", 2, IN(rnd(TENSOR_F32, 2, (const int64_t[]){3, 2}, 53), rnd(TENSOR_F32, 2, (const int64_t[]){3, 4}, 54)), c_hstack);
    cuda_case("tile", 1, IN(x), c_tile);
    /* the *_like ops keep the device */
    tensor *d = device_cuda(x);
    tensor *likes[4] = {tensor_zeros_like(d), tensor_full_like(d, 2.5), tensor_empty_like(d), tensor_randn_like(d)};
    for (int i = 0; i < 4; i++) CHECK(likes[i] && tensor_get_device(likes[i]) == DEVICE_UNDER_TEST && tensor_numel(likes[i]) == 120);
    device_check_same("full_like", likes[1], tensor_full_like(x, 2.5));
    tensor_scope_end();
}

/* dropout draws the CPU's words: the same seed gives the same mask on both, and the generator
   goes on from the same place. */
TEST(cuda_dropout_matches_the_cpu_bit_for_bit) {
    NEED_GPU();
    tensor_scope_begin();
    tensor *x = rnd(TENSOR_F32, 2, (const int64_t[]){37, 101}, 70);
    tensor *dx = device_cuda(x);
    tensor_manual_seed(7);
    tensor_rand(TENSOR_SHAPE(3), TENSOR_F32); /* a generator part-way through a block */
    tensor *want = tensor_dropout(x, 0.3, true), *next_cpu = tensor_rand(TENSOR_SHAPE(5), TENSOR_F64);
    tensor_manual_seed(7);
    tensor_rand(TENSOR_SHAPE(3), TENSOR_F32);
    tensor *got = tensor_dropout(dx, 0.3, true), *next_dev = tensor_rand(TENSOR_SHAPE(5), TENSOR_F64);
    tensor *h = tensor_to_device(got, TENSOR_CPU);
    CHECK(h && want && test_same_bits(h, want));
    CHECK(test_same_bits(next_cpu, next_dev));
    tensor_scope_end();
}

/* The random ops of issue 14: the same numbers as on the CPU under the same seed (poisson's
   kernel on the CPU's Philox blocks; the composites from the CPU's draws), the generator going on
   where the CPU's does (device_sweep.h). */
TEST(cuda_random_ops_match_the_cpu) {
    NEED_GPU();
    tensor_scope_begin();
    device_random_ops_match();
    tensor_scope_end();
}

/* multinomial draws the CPU's words (two per sample, row-major): with and without replacement,
   over rows with zeros and a strided (transposed) probs, the picks and the generator's next draw
   equal the CPU's; a bad row is refused with the CPU's message. */
TEST(cuda_multinomial_matches_the_cpu) {
    NEED_GPU();
    tensor_scope_begin();
    tensor *w = tensor_relu(rnd(TENSOR_F64, 2, (const int64_t[]){300, 6}, 71)); /* zeros in most rows */
    tensor *probs[2] = {tensor_contiguous(tensor_transpose(w, 0, 1)), tensor_transpose(w, 0, 1)}; /* [6, 300] */
    for (int layout = 0; layout < 2; layout++)
        for (int repl = 0; repl < 2; repl++) {
            int64_t ns = repl ? 500 : 20;
            tensor_manual_seed(11);
            tensor_rand(TENSOR_SHAPE(1), TENSOR_F32); /* part-way through a block */
            tensor *want = tensor_multinomial(probs[layout], ns, repl), *next_cpu = tensor_rand(TENSOR_SHAPE(3), TENSOR_F64);
            tensor_manual_seed(11);
            tensor_rand(TENSOR_SHAPE(1), TENSOR_F32);
            tensor *got = tensor_multinomial(device_cuda(probs[layout]), ns, repl), *next_dev = tensor_rand(TENSOR_SHAPE(3), TENSOR_F64);
            tensor *h = tensor_to_device(got, TENSOR_CPU);
            CHECK_MSG(h && want && test_same_bits(h, want), "layout %d, replacement %d: %s", layout, repl, tensor_last_error());
            CHECK(test_same_bits(next_cpu, next_dev));
        }
    tensor *one = tensor_multinomial(device_cuda(tensor_from_data((const float[]){0, 0, 3, 0}, TENSOR_SHAPE(4), TENSOR_F32)), 3, true);
    tensor *h = tensor_to_device(one, TENSOR_CPU);
    CHECK(h && tensor_numel(h) == 3 && tensor_item(tensor_min_all(h)) == 2 && tensor_item(tensor_max_all(h)) == 2);
    tensor_clear_error();
#ifndef DEVICE_MIRROR /* the kernel's own checks of the probabilities (the mirror's kernel draws, it does not check) */
    CHECK(tensor_multinomial(device_cuda(tensor_from_data((const float[]){1, 2, -1, 0, 1, 1}, TENSOR_SHAPE(2, 3), TENSOR_F32)), 1, true) == NULL);
    CHECK_MSG(strstr(tensor_last_error(), "row 0 has -1"), "%s", tensor_last_error());
    tensor_clear_error();
    CHECK(tensor_multinomial(device_cuda(tensor_from_data((const float[]){1, 2, 3, 0, 0, 0}, TENSOR_SHAPE(2, 3), TENSOR_F32)), 1, true) == NULL);
    CHECK_MSG(strstr(tensor_last_error(), "row 1 of probabilities sums to 0"), "%s", tensor_last_error());
    tensor_clear_error();
    CHECK(tensor_multinomial(device_cuda(tensor_from_data((const float[]){1, 2, 3, 0, 0, 5}, TENSOR_SHAPE(2, 3), TENSOR_F32)), 2, false) == NULL);
    CHECK_MSG(strstr(tensor_last_error(), "row 1"), "%s", tensor_last_error());
    tensor_clear_error();
#endif
    tensor_scope_end();
}

/* The optimizers' steps over 30 parameters (one multi-tensor launch takes 24 contiguous ones; a
   transposed one goes alone), f32 and f64, an empty one: bit for bit the CPU's reference loop. */
TEST(cuda_optimizer_steps_match_the_cpu_bit_for_bit) {
    NEED_GPU();
    bool ref = tensor_set_reference_kernels(true);
    enum { NP = 30 };
    for (int kind = 0; kind < 3; kind++) {
        tensor_scope_begin();
        tensor *cpu[NP], *dev[NP], *grad[NP];
        for (int i = 0; i < NP; i++) {
            int64_t n = i == 7 ? 0 : i == 3 ? 10000 : 1 + 37 * i;
            tensor_dtype dt = i % 5 == 4 ? TENSOR_F64 : TENSOR_F32;
            tensor *v = rnd(dt, 1, &n, 200 + (uint64_t)i);
            if (i == 11) v = tensor_transpose(tensor_reshape(rnd(dt, 1, (const int64_t[]){24}, 211), TENSOR_SHAPE(4, 6)), 0, 1);
            cpu[i] = tensor_set_requires_grad(tensor_clone(v), true);
            dev[i] = tensor_set_requires_grad(i == 11 ? tensor_transpose(device_cuda(tensor_transpose(v, 0, 1)), 0, 1) : device_cuda(v), true);
            grad[i] = tensor_mul_scalar(tensor_sin(tensor_mul_scalar(v, 3)), 0.5);
        }
        tensor_optim *oc, *od;
        if (kind == 0) { oc = tensor_optim_sgd(NP, cpu, 0.1, 0.9, 0.01, true); od = tensor_optim_sgd(NP, dev, 0.1, 0.9, 0.01, true); }
        else if (kind == 1) { oc = tensor_optim_adam(NP, cpu, 0.01, 0.9, 0.999, 1e-8, 0.1); od = tensor_optim_adam(NP, dev, 0.01, 0.9, 0.999, 1e-8, 0.1); }
        else { oc = tensor_optim_adamw(NP, cpu, 0.01, 0.9, 0.999, 1e-8, 0.1); od = tensor_optim_adamw(NP, dev, 0.01, 0.9, 0.999, 1e-8, 0.1); }
        CHECK(oc && od);
        for (int step = 0; step < 3 && oc && od; step++) {
            for (int i = 0; i < NP; i++) {
                CHECK(tensor_backward_with(tensor_mul_scalar(cpu[i], step + 1), grad[i]) == 0);
                CHECK(tensor_backward_with(tensor_mul_scalar(dev[i], step + 1), device_cuda(grad[i])) == 0);
            }
            CHECK(tensor_optim_step(oc) == 0 && tensor_optim_step(od) == 0);
            tensor_optim_zero_grad(oc);
            tensor_optim_zero_grad(od);
        }
        for (int i = 0; i < NP; i++) {
            tensor *h = tensor_to_device(dev[i], TENSOR_CPU);
            CHECK_MSG(h && test_same_bits(h, cpu[i]), "optimizer kind %d, parameter %d differs from the CPU's", kind, i);
        }
        /* clip_grad_norm over the 30 gradients: one pass on the device, the CPU's norm and scaling */
        for (int i = 0; i < NP; i++) {
            CHECK_MSG(tensor_backward_with(tensor_mul_scalar(cpu[i], 2), grad[i]) == 0, "%s", tensor_last_error());
            CHECK(tensor_backward_with(tensor_mul_scalar(dev[i], 2), device_cuda(grad[i])) == 0);
        }
        double nh = tensor_clip_grad_norm(NP, cpu, 0.5), nd = tensor_clip_grad_norm(NP, dev, 0.5);
        CHECK(nh > 0.5);
        CHECK_NEAR(nd, nh, 1e-12, 1e-12);
        for (int i = 0; i < NP; i++) device_check_same("clipped gradient", tensor_grad(dev[i]), tensor_grad(cpu[i]));
        tensor_optim_free(oc);
        tensor_optim_free(od);
        tensor_scope_end();
    }
    tensor_set_reference_kernels(ref);
}

/* A few MLP training steps (AdamW) on the device and on the CPU from the same start. */
TEST(cuda_training_steps_match_the_cpu) {
    NEED_GPU();
    tensor_scope_begin();
    tensor *hw[4], *dw[4];
    const int64_t shapes[4][2] = {{64, 784}, {64, 1}, {10, 64}, {10, 1}};
    for (int i = 0; i < 4; i++) {
        tensor *v = rnd(TENSOR_F32, shapes[i][1] == 1 ? 1 : 2, shapes[i], 50 + (uint64_t)i);
        hw[i] = tensor_set_requires_grad(tensor_mul_scalar(v, 0.05), true);
        dw[i] = tensor_set_requires_grad(device_cuda(tensor_mul_scalar(v, 0.05)), true);
    }
    tensor_optim *oh = tensor_optim_adamw(4, hw, 1e-3, 0.9, 0.999, 1e-8, 1e-2), *od = tensor_optim_adamw(4, dw, 1e-3, 0.9, 0.999, 1e-8, 1e-2);
    CHECK(oh && od);
    for (int step = 0; step < 5 && oh && od; step++) {
        tensor *x = rnd(TENSOR_F32, 2, (const int64_t[]){32, 784}, 60 + (uint64_t)step), *y = tensor_randint(0, 10, TENSOR_SHAPE(32), TENSOR_I64);
        tensor *lh = tensor_cross_entropy(tensor_linear(tensor_relu(tensor_linear(x, hw[0], hw[1])), hw[2], hw[3]), y);
        tensor *ld = tensor_cross_entropy(tensor_linear(tensor_relu(tensor_linear(device_cuda(x), dw[0], dw[1])), dw[2], dw[3]), device_cuda(y));
        CHECK(lh && ld);
        if (lh && ld) CHECK_NEAR(tensor_item(ld), tensor_item(lh), 1e-5, 1e-4);
        tensor_optim_zero_grad(oh);
        tensor_optim_zero_grad(od);
        CHECK(tensor_backward(lh) == 0 && tensor_optim_step(oh) == 0);
        CHECK_MSG(tensor_backward(ld) == 0 && tensor_optim_step(od) == 0, "device step %d: %s", step, tensor_last_error() ? tensor_last_error() : "");
    }
    for (int i = 0; i < 4; i++) {
        double *a = device_values(dw[i]), *b = device_values(hw[i]);
        double worst = 0;
        for (int64_t j = 0; a && b && j < tensor_numel(hw[i]); j++) worst = fabs(a[j] - b[j]) > worst ? fabs(a[j] - b[j]) : worst;
        CHECK_MSG(a && b && worst < 1e-4, "parameter %d after 5 steps: differs by %g", i, worst);
        free(a);
        free(b);
    }
    tensor_optim_free(oh);
    tensor_optim_free(od);
    tensor_scope_end();
}

/* misc: the ternary formula ops (lerp, lerp_scalar, addcmul, addcdiv) against the CPU: each dtype
   (the CPU refusing integers for lerp and addcdiv, the device too), contiguous, transposed and
   broadcast, a CPU 0-dim operand passed by value; and lerp's and addcdiv's gradients. */
static tensor *cuda_ternary_call(int op, tensor *x, tensor *y, tensor *z) {
    switch (op) {
    case 0: return tensor_lerp(x, y, z);
    case 1: return tensor_lerp_scalar(x, y, 0.3);
    case 2: return tensor_addcmul(x, y, z, -1.5);
    default: return tensor_addcdiv(x, y, z, 0.5);
    }
}
TEST(cuda_ternary_ops_match_the_cpu) {
    NEED_GPU();
    static const double va[12] = {-2.5, -1, -0.25, 0, 0.5, 1, 1.5, 2, 3, -3, 0.75, 4};
    static const double vb[4] = {1.5, -2, 3, 0.5}, vw[3] = {0.25, 0.75, -1.5}, v0 = 2.0;
    static const char *const names[4] = {"lerp", "lerp_scalar", "addcmul", "addcdiv"};
    for (int dt = 0; dt < TENSOR_DTYPE_COUNT; dt++) {
        if (dt == TENSOR_BOOL) continue;
        tensor_scope_begin();
        tensor *a = test_tensor((tensor_dtype)dt, 2, (const int64_t[]){3, 4}, va);
        tensor *b = test_tensor((tensor_dtype)dt, 1, (const int64_t[]){4}, vb);
        tensor *w = test_tensor((tensor_dtype)dt, 2, (const int64_t[]){3, 1}, vw);
        tensor *w0 = test_tensor((tensor_dtype)dt, 0, NULL, &v0);
        tensor *at = tensor_transpose(tensor_contiguous(tensor_transpose(a, 0, 1)), 0, 1);
        tensor *cases[3][3] = {{a, b, w}, {at, b, w}, {tensor_slice(at, 0, 1, 3, 1), tensor_unsqueeze(b, 0), w0}};
        for (int k = 0; k < 3; k++)
            for (int op = 0; op < 4; op++) {
                char what[96];
                snprintf(what, sizeof what, "%s %s case %d", names[op], tensor_dtype_name((tensor_dtype)dt), k);
                tensor_clear_error();
                tensor *want = cuda_ternary_call(op, cases[k][0], cases[k][1], cases[k][2]);
                tensor_clear_error();
                tensor *z = k == 2 ? cases[k][2] : device_cuda(cases[k][2]); /* case 2: the CPU 0-dim weight by value */
                tensor *got = cuda_ternary_call(op, device_cuda(cases[k][0]), device_cuda(cases[k][1]), z);
                if (!want) { CHECK_MSG(!got && tensor_last_error(), "%s: the CPU refuses it, the device does not", what); continue; }
                device_check_same(what, got, want);
            }
        tensor_scope_end();
    }
    tensor_clear_error();
    /* gradients on the device: the derivatives are ops, so they run there */
    tensor_scope_begin();
    tensor *hx[3] = {test_leaf(TENSOR_SHAPE(3, 4), -2, 2), test_leaf(TENSOR_SHAPE(4), -2, 2), test_leaf(TENSOR_SHAPE(3, 1), 0.5, 2)};
    for (int op = 0; op < 4; op += 3) {
        tensor *dx[3];
        for (int i = 0; i < 3; i++) {
            tensor_zero_grad(hx[i]);
            dx[i] = tensor_set_requires_grad(tensor_detach(device_cuda(hx[i])), true);
        }
        CHECK(tensor_backward(tensor_sum_all(cuda_ternary_call(op, hx[0], hx[1], hx[2]))) == 0);
        CHECK(tensor_backward(tensor_sum_all(cuda_ternary_call(op, dx[0], dx[1], dx[2]))) == 0);
        for (int i = 0; i < 3; i++) {
            char what[64];
            snprintf(what, sizeof what, "%s gradient %d", names[op], i);
            device_check_same(what, tensor_grad(dx[i]), tensor_grad(hx[i]));
        }
    }
    tensor_scope_end();
}
