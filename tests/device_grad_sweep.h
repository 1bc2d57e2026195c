/* tests/device_grad_sweep.h: every differentiable op of the registry, forward and backward, on the
   device under test against the CPU, through the op's own gradient checks (the seam's mirror
   device in tests/test_seam.c, the GPU in tests/cuda/test_cuda.c). */
#ifndef DEVICE_GRAD_SWEEP_H
#define DEVICE_GRAD_SWEEP_H
#include "device_sweep.h"

/* The sweep: each differentiable op's gradient checks (gradcheck_NAME) diverted here, so every
   case (masks, is_causal, reductions, flags: the arguments the CPU's checks use) runs on the CPU
   and again with its inputs on the device under test (the seam's mirror device, or a GPU); the
   values, the first derivatives and (for a second-order check) the second must agree. A case whose forward pass the device refuses is
   counted and named, not failed: its function may make CPU tensors of its own beside the inputs.
   A backward pass must run wherever the forward ran. */
#define DECLARE_GRAD_SWEEP_GRADCHECK_DIFF(name) void gradcheck_##name(void) __attribute__((weak));
#define DECLARE_GRAD_SWEEP_GRADCHECK_NODIFF(name)
#define DECLARE_GRAD_SWEEP_GRADCHECK(name, kind, impl, types, grad, params, doc) DECLARE_GRAD_SWEEP_GRADCHECK_##grad(name)
TENSOR_OPS(DECLARE_GRAD_SWEEP_GRADCHECK)
#define GRAD_SWEEP_GRADCHECK_ROW_DIFF(name) gradcheck_##name,
#define GRAD_SWEEP_GRADCHECK_ROW_NODIFF(name) NULL,
#define GRAD_SWEEP_GRADCHECK_ROW(name, kind, impl, types, grad, params, doc) GRAD_SWEEP_GRADCHECK_ROW_##grad(name)
static void (*const grad_sweep_gradchecks[])(void) = {TENSOR_OPS(GRAD_SWEEP_GRADCHECK_ROW)};

static struct { const char *op; int cases, ran, refused; char refusal[200]; } grad_sweep_now;

/* The gradients of sum(out * w) (order 1), or of sum_i sum(g_i * v_i) over those gradients g_i
   built with create_graph (order 2), for the inputs that require grad; NULL entries where an input
   gets none. 0 ok. */
static int grad_sweep_grads(tensor *out, tensor *w, int n, tensor *const *in, int order, tensor **grads) {
    tensor *req[8];
    int idx[8], k = 0;
    for (int i = 0; i < n && k < 8; i++) if (in[i] && tensor_requires_grad(in[i])) { idx[k] = i; req[k++] = in[i]; }
    for (int i = 0; i < n; i++) grads[i] = NULL;
    if (!k || !tensor_requires_grad(out)) return 0;
    tensor *g[8] = {0};
    if (tensor_autograd_grad(1, &out, &w, k, req, g, order == 2)) return 1;
    if (order == 2) {
        tensor *s = NULL;
        for (int j = 0; j < k; j++) {
            if (!g[j]) continue;
            tensor *v = tensor_cos(tensor_mul_scalar(tensor_ones_like(g[j]), (double)j + 0.5)); /* a fixed direction, on g's device */
            tensor *t = tensor_sum_all(tensor_mul(g[j], v));
            s = s ? tensor_add(s, t) : t;
        }
        if (!s) return 0;
        if (!tensor_requires_grad(s)) return 0;
        for (int j = 0; j < k; j++) g[j] = NULL;
        if (tensor_autograd_grad(1, &s, NULL, k, req, g, false)) return 1;
    }
    for (int j = 0; j < k; j++) grads[idx[j]] = g[j];
    return 0;
}

static int grad_sweep_divert(const char *file, int line, test_fn_of f, const void *ctx, int n, tensor *const *in, int order) {
    char what[160];
    snprintf(what, sizeof what, "%s (%s:%d, order %d)", grad_sweep_now.op, file, line, order);
    int compared = 0; /* what the check would compare: its callers count on it */
    for (int i = 0; i < n; i++)
        if (in[i] && tensor_requires_grad(in[i])) compared += (int)tensor_numel(in[i]);
    grad_sweep_now.cases++;
    tensor_scope_begin();
    tensor_clear_error();
    tensor *out = f(in, ctx);
    if (!out) { tensor_scope_end(); tensor_clear_error(); return compared; } /* the CPU's own check reports it */
    tensor *w = tensor_cos(tensor_reshape(tensor_arange(0, (double)tensor_numel(out), 1, TENSOR_F64), tensor_ndim(out), tensor_shape(out)));
    w = tensor_to_dtype(w, tensor_get_dtype(out));
    tensor *want[8] = {0}, *got[8] = {0}, *din[8] = {0};
    if (n > 8 || grad_sweep_grads(out, w, n, in, order, want)) { tensor_scope_end(); tensor_clear_error(); return compared; }
    for (int i = 0; i < n; i++) {
        if (!in[i]) continue;
        din[i] = device_cuda(tensor_detach(in[i]));
        if (tensor_requires_grad(in[i])) tensor_set_requires_grad(din[i], true);
    }
    tensor_clear_error();
    tensor *dout = f(din, ctx);
    if (!dout) {
        const char *e = tensor_last_error();
        /* an op with no kernel on CUDA, or a CPU tensor the case makes beside its inputs */
        CHECK_MSG(e && (strstr(e, "has no kernel on cuda") || strstr(e, "different devices")), "%s: the device refuses it: %s", what, e ? e : "no error");
        grad_sweep_now.refused++;
        snprintf(grad_sweep_now.refusal, sizeof grad_sweep_now.refusal, "%s", e ? e : "");
        tensor_scope_end();
        tensor_clear_error();
        return compared;
    }
    grad_sweep_now.ran++;
    if (!strcmp(grad_sweep_now.op, "to_device") && tensor_get_device(dout) == TENSOR_CPU) dout = device_cuda(dout); /* its case moves to the CPU */
    device_check_same(what, dout, out);
    tensor_clear_error();
    if (grad_sweep_grads(dout, device_cuda(w), n, din, order, got)) {
        test_fail(file, line, "%s: the backward pass fails on the device: %s", what, tensor_last_error() ? tensor_last_error() : "no error");
    } else {
        for (int i = 0; i < n; i++) {
            if (!want[i] && !got[i]) continue;
            char gw[200];
            snprintf(gw, sizeof gw, "%s: gradient of input %d", what, i);
            if (!want[i] || !got[i]) { test_fail(file, line, "%s: present on one side only", gw); continue; }
            device_check_same(gw, got[i], want[i]);
        }
    }
    tensor_scope_end();
    tensor_clear_error();
    return compared;
}

/* Differentiable ops that no case of theirs runs on the device, and why. Any other op must
   run in one case at least, and one of these that runs is taken off the list. */
static const char *const grad_sweep_not_run[][2] = {
    {"special_zeta", "its check's q is a CPU tensor made beside the input"},
    {"quantile_tensor", "its checks' q are CPU tensors made beside the input"},
    {"nanquantile_tensor", "the same"},
    {"batch_norm", "its checks' running statistics are CPU tensors"},
    {"max_unpool2d", "its check's indices are a CPU tensor"},
    {"embedding_bag", "its checks' indices and offsets are CPU tensors"},
    {"bernoulli", "random: checked against the CPU by device_random_ops_match, not by a gradient check"},
    {"normal_tensor", "the same"},
    {"normal_std_scalar", "the same"},
    {"normal_mean_scalar", "the same"},
    {"poisson", "the same"},
};

/* Runs the sweep (`where` names the device in the summary line); every differentiable op runs in
   one case at least, or is listed in grad_sweep_not_run. */
__attribute__((unused))
static void device_sweep_gradchecks(const char *where) {
    int ops = 0, ran = 0, cases = 0, refused_cases = 0;
    for (int op = 0; op < TENSOR_OP_COUNT; op++) {
        if (!grad_sweep_gradchecks[op]) continue;
        grad_sweep_now.op = tensor_op_name((tensor_op)op);
        grad_sweep_now.cases = grad_sweep_now.ran = grad_sweep_now.refused = 0;
        grad_sweep_now.refusal[0] = 0;
        tensor_scope_begin();
        test_gradcheck_divert = grad_sweep_divert;
        grad_sweep_gradchecks[op]();
        test_gradcheck_divert = NULL;
        tensor_scope_end();
        ops++;
        cases += grad_sweep_now.cases;
        refused_cases += grad_sweep_now.refused;
        bool listed = false;
        for (size_t k = 0; k < sizeof grad_sweep_not_run / sizeof grad_sweep_not_run[0]; k++) listed |= !strcmp(grad_sweep_not_run[k][0], grad_sweep_now.op);
        if (grad_sweep_now.ran) ran++;
        CHECK_MSG(!grad_sweep_now.ran || !listed, "%s runs on the %s now: take it off grad_sweep_not_run", grad_sweep_now.op, where);
        CHECK_MSG(grad_sweep_now.ran || listed, "%s runs on no case on the %s (%d refused; the last: %s)", grad_sweep_now.op, where, grad_sweep_now.refused,
                  grad_sweep_now.refusal);
    }
    printf("  %s: %d of %d differentiable ops ran forward and backward on it (%d cases, %d refused)\n", where, ran, ops, cases, refused_cases);
}
#endif
