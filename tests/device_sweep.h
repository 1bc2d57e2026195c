/* tests/device_sweep.h: checks shared by the seam tests (a fake device, tests/test_seam.c) and the
   CUDA suite (tests/cuda/test_cuda.c): the same ops on TENSOR_CUDA and on the CPU must agree. */
#ifndef DEVICE_SWEEP_H
#define DEVICE_SWEEP_H
#include "test.h"

/* The device under test. tests/cuda/test_cuda.c built with -DDEVICE_SELF_CHECK runs its cases with
   the CPU in that role, to check the suite itself where no GPU is at hand. */
#ifdef DEVICE_SELF_CHECK
#define DEVICE_UNDER_TEST TENSOR_CPU
#else
#define DEVICE_UNDER_TEST TENSOR_CUDA
#endif

/* t's values on the CPU (any device), row-major, as doubles (caller frees). */
static double *device_values(tensor *t) {
    tensor *c = tensor_to_device(t, TENSOR_CPU);
    double *v = c ? test_values(c) : NULL;
    tensor_free(c);
    return v;
}
static bool device_float(tensor_dtype d) { return d == TENSOR_F32 || d == TENSOR_F64 || d == TENSOR_F16 || d == TENSOR_BF16; }
/* a (a device result) and b (the CPU's) hold the same shape, dtype and values: exactly for
   integers and bool, within rounding for floats, relative to 1 + |b| (the CPU's vector kernels of
   some f32 ops are not the double formula rounded once; sums run in other orders). */
/* When set: the condition number of the matrix an f64 case solves with. Two correct solvers (the
   GPU's and the CPU's, summing in other orders) may then differ by about cond eps relative, so the
   tolerance is 4 cond eps where that is above 1e-12 (the first GPU run: solve's gradient at n 130,
   cond 7.6e4, differed by 1.0e-12 relative, within 8.4e-12). */
static double device_cond;
static void device_check_same(const char *what, tensor *a, tensor *b) {
    CHECK_MSG(a && b, "%s: missing result (%s)", what, tensor_last_error() ? tensor_last_error() : "no error");
    if (!a || !b) return;
    CHECK_MSG(tensor_get_device(a) == DEVICE_UNDER_TEST, "%s: the result is not on the device", what);
    CHECK_MSG(tensor_get_dtype(a) == tensor_get_dtype(b) && tensor_ndim(a) == tensor_ndim(b) && tensor_numel(a) == tensor_numel(b),
              "%s: dtype or shape differ", what);
    if (tensor_numel(a) != tensor_numel(b)) return;
    int64_t n = tensor_numel(a);
    tensor_dtype dt = tensor_get_dtype(a);
    double *x = device_values(a), *y = device_values(b);
    /* f32: the GPU sums in another order than the CPU (cuBLAS, tree reductions) */
    double tol = dt == TENSOR_F64 ? 1e-12 : dt == TENSOR_F32 ? 1e-5 : 1e-2;
    if (dt == TENSOR_F64 && 4 * device_cond * 2.220446049250313e-16 > tol) tol = 4 * device_cond * 2.220446049250313e-16;
    for (int64_t i = 0; x && y && i < n; i++) {
        bool ok = (x[i] != x[i] && y[i] != y[i]) || x[i] == y[i] || (device_float(dt) && fabs(x[i] - y[i]) <= tol * (1 + fabs(y[i])));
        if (!ok) { CHECK_MSG(ok, "%s: element %lld: %.17g on the device, %.17g on the CPU", what, (long long)i, x[i], y[i]); break; }
    }
    CHECK(x && y);
    free(x);
    free(y);
}
static tensor *device_cuda(tensor *t) { return tensor_to_device(t, DEVICE_UNDER_TEST); }

static tensor *device_call(tensor_op op, tensor *a, tensor *b) {
    switch (op) {
    case TENSOR_OP_clamp: return tensor_clamp(a, -0.5, 2.0);
    case TENSOR_OP_hardtanh: return tensor_hardtanh(a, -0.5, 2.0);
    case TENSOR_OP_elu: return tensor_elu(a, 0.7);
    case TENSOR_OP_leaky_relu: return tensor_leaky_relu(a, 0.1);
    case TENSOR_OP_logit: return tensor_logit(a, 0.1);
    case TENSOR_OP_celu: return tensor_celu(a, 0.7);
    case TENSOR_OP_hardshrink: return tensor_hardshrink(a, 0.5);
    case TENSOR_OP_softshrink: return tensor_softshrink(a, 0.5);
    case TENSOR_OP_threshold: return tensor_threshold(a, 0.5, -1.0);
    case TENSOR_OP_clamp_min: return tensor_clamp_min(a, -0.5);
    case TENSOR_OP_clamp_max: return tensor_clamp_max(a, 2.0);
    case TENSOR_OP_nan_to_num: return tensor_nan_to_num(a, NAN, NAN, NAN);
    case TENSOR_OP_polygamma: return tensor_polygamma(2, a);
    case TENSOR_OP_clamp_tensor: return tensor_clamp_tensor(a, b, tensor_add_scalar(b, 1));
    case TENSOR_OP_clamp_min_tensor: return tensor_clamp_min_tensor(a, b);
    case TENSOR_OP_clamp_max_tensor: return tensor_clamp_max_tensor(a, b);
#define DEVICE_CASE_UNARY(name) case TENSOR_OP_##name: return tensor_##name(a);
#define DEVICE_CASE_BINARY(name) case TENSOR_OP_##name: return tensor_##name(a, b);
#define DEVICE_CASE_NONE(name)
#define DEVICE_CASE_UNARY_P DEVICE_CASE_NONE
#define DEVICE_CASE_SCALAR DEVICE_CASE_NONE
#define DEVICE_CASE_TERNARY DEVICE_CASE_NONE
#define DEVICE_CASE_INPLACE DEVICE_CASE_NONE
#define DEVICE_CASE_CREATE DEVICE_CASE_NONE
#define DEVICE_CASE_REDUCE DEVICE_CASE_NONE
#define DEVICE_CASE_SHAPE DEVICE_CASE_NONE
#define DEVICE_CASE_INDEX DEVICE_CASE_NONE
#define DEVICE_CASE_LINALG DEVICE_CASE_NONE
#define DEVICE_CASE_NN DEVICE_CASE_NONE
#define DEVICE_CASE_LOSS DEVICE_CASE_NONE
#define DEVICE_CASE(name, kind, impl, types, grad, params, doc) DEVICE_CASE_##kind(name)
        TENSOR_OPS(DEVICE_CASE)
    default: return NULL;
    }
}

/* Every unary and binary op of the registry on the registered CUDA device (the fake one of
   test_seam.c, or the GPU) against the CPU: each dtype, contiguous, transposed and broadcast. */
__attribute__((unused)) /* a file may take only device_call (tests/test_empty.c) */
static void device_sweep_elementwise(void) {
    static const double va[12] = {-2.5, -1, -0.25, 0, 0.5, 1, 1.5, 2, 3, -3, 0.75, 4};
    static const double vb[4] = {1.5, -2, 3, 0.5};
    int n_ops = 0;
    for (int op = 0; op < TENSOR_OP_COUNT; op++) {
        const char *kind = test_op_kind((tensor_op)op);
        if (strcmp(kind, "UNARY") && strcmp(kind, "UNARY_P") && strcmp(kind, "BINARY")) continue;
        n_ops++;
        for (int dt = 0; dt < TENSOR_DTYPE_COUNT; dt++) {
            tensor_scope_begin();
            tensor *a = test_tensor((tensor_dtype)dt, 2, (const int64_t[]){3, 4}, va);
            tensor *b = test_tensor((tensor_dtype)dt, 1, (const int64_t[]){4}, vb);
            tensor *at = tensor_transpose(tensor_contiguous(tensor_transpose(a, 0, 1)), 0, 1); /* same values, column-major */
            tensor *cases[3][2] = {{a, b}, {at, b}, {tensor_slice(at, 0, 1, 3, 1), tensor_unsqueeze(b, 0)}};
            for (int k = 0; k < 3; k++) {
                char what[96];
                snprintf(what, sizeof what, "%s %s case %d", tensor_op_name((tensor_op)op), tensor_dtype_name((tensor_dtype)dt), k);
                tensor_clear_error();
                tensor *want = device_call((tensor_op)op, cases[k][0], cases[k][1]);
                tensor_clear_error();
                tensor *got = device_call((tensor_op)op, device_cuda(cases[k][0]), device_cuda(cases[k][1]));
                if (!want) { CHECK_MSG(!got && tensor_last_error(), "%s: the CPU refuses it, the device does not", what); continue; }
                device_check_same(what, got, want);
            }
            tensor_scope_end();
        }
    }
    CHECK(n_ops == 126); /* 86 unary, 40 binary: a new one is in the sweep without a change here */
}

/* The random ops (issue 14) on the device under test against the CPU under the same seed:
   poisson's kernel draws the CPU's Philox blocks (a strided input too), the composites (bernoulli,
   normal, the dropouts, rrelu) draw on the CPU and compute on the device; and the generator goes
   on where the CPU's does. Training paths only (their eval paths are tensor_dropout's copy). */
static tensor *device_random_call(int w, tensor *rates, tensor *p, tensor *x) {
    switch (w) {
    case 0: return tensor_poisson(rates);
    case 1: return tensor_poisson(tensor_transpose(tensor_to_dtype(rates, TENSOR_F32), 0, 1));
    case 2: return tensor_bernoulli(p);
    case 3: return tensor_bernoulli_scalar(x, 0.3);
    case 4: return tensor_normal_tensor(x, p);
    case 5: return tensor_normal_mean_scalar(2, p);
    case 6: return tensor_dropout2d(x, 0.5, true);
    case 7: return tensor_alpha_dropout(x, 0.3, true);
    case 8: return tensor_feature_alpha_dropout(x, 0.3, true);
    default: return tensor_rrelu(x, 0.1, 0.4, true);
    }
}
__attribute__((unused))
static void device_random_ops_match(void) {
    tensor_manual_seed(1);
    tensor *rates = tensor_mul_scalar(tensor_rand(TENSOR_SHAPE(6, 7), TENSOR_F64), 40); /* both samplers: below and above 10 */
    tensor *p = tensor_rand(TENSOR_SHAPE(4), TENSOR_F32), *x = tensor_add_scalar(tensor_rand(TENSOR_SHAPE(2, 3, 4), TENSOR_F32), -0.5);
    tensor *dr = device_cuda(rates), *dp = device_cuda(p), *dx = device_cuda(x);
    for (int w = 0; w < 10; w++) {
        tensor *got[2], *next[2];
        for (int dev = 0; dev < 2; dev++) {
            tensor_manual_seed(40 + (uint64_t)w);
            tensor_rand(TENSOR_SHAPE(1), TENSOR_F32); /* part-way through a block */
            got[dev] = dev ? device_random_call(w, dr, dp, dx) : device_random_call(w, rates, p, x);
            next[dev] = tensor_rand(TENSOR_SHAPE(3), TENSOR_F64);
        }
        char what[48];
        snprintf(what, sizeof what, "random op %d", w);
        device_check_same(what, got[1], got[0]);
        CHECK_MSG(test_same_bits(next[0], next[1]), "%s: the generator went on elsewhere", what);
    }
}

#endif
