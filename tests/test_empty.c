/* Work on EMPTY tensors (issue 24): an op whose operands have a dim of 0 returns at once whatever
   their other dims are, as PyTorch does: no loop over them, no memory in proportion to them, in
   the forward and in the backward pass.

   The sweep runs every op of ops.def through the calls the registry sweeps already make, never a
   second list of them: the differentiable ops through their gradient checks (gradcheck_NAME, run
   with GRADCHECK diverted here), the elementwise ones through the device sweep's device_call, the
   rest through the cases at the end of this file. A diverted gradient check's inputs are remade
   with one of their sizes turned to 0 and another to 2^31 (or with [0, 2^31] / [2^31, 0] put in
   front), so that every input holding the big size is empty and needs no memory. Each case runs
   first with 13 and 17 in place of 2^31: one the op refuses, or whose result grows with that size,
   is not a case of empty work and is left out. With 2^31 the forward and the backward pass must
   then succeed within EMPTY_LIMIT_S seconds, asking for no block over EMPTY_CAP bytes (larger
   requests fail there, so a defect costs no memory), and give a result of the same size. Every op
   must be reached by one case at least, or be listed as refusing empty operands as PyTorch's do. */
#include "test.h"
#include "device_sweep.h"
#include <time.h>

#define EMPTY_HUGE ((int64_t)1 << 31)
#define EMPTY_LIMIT_S 0.5
#define EMPTY_CAP ((int64_t)1 << 24)

/* the op under test and what its cases found */
static struct { const char *op; int valid, failed; bool as_pytorch; char refusal[200]; } empty_now_op;

/* Ops whose cases may do work in proportion to the big size because PyTorch's do the same: a
   reduction over the empty dim gives a non-empty intermediate as big as the other dims. */
static const char *const empty_as_pytorch[][2] = {
    {"linalg_matrix_norm", "ord 1 / inf: amax(sum(abs(x), dim), dim), the sum over an empty dim as big as the other"},
    {"linalg_norm", "the same matrix norms"},
    {"normalize", "x / max(norm(x, dim), eps): the norm over an empty dim is as big as the other dims"},
    {"triplet_margin_loss", "the pairwise distances over an empty feature dim: one per row"},
    {"group_norm", "the statistics per sample and group, [N, G] for a huge N"},
    {"cross_entropy", "a loss per row of a huge N over no classes, as F.cross_entropy's log_softmax then sum"},
};

static double empty_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Ops that refuse empty operands, as PyTorch's do: nothing to run. */
static const char *const empty_refused[][2] = {
    {"max_all", "max(): Expected reduction dim to be specified for input.numel() == 0"},
    {"min_all", "the same"},
    {"affine_grid", "Expected non-zero, positive output size"},
    {"quantile", "quantile() input tensor must be non-empty"},
    {"quantile_tensor", "the same"},
    {"nanquantile", "the same"},
    {"nanquantile_tensor", "the same"},
};

/* One case: makes its operands with `huge` as the big size, runs the op, and puts the leaves that
   require grad into req (*k of them). */
typedef tensor *(*empty_run_fn)(int64_t huge, const void *ctx, tensor **req, int *k);

/* Runs the op and, where its result requires grad, the backward pass (with zeros for the
   result's gradient). 0: ok; 1: the op failed; 3: the backward failed. *numel: the result's. */
static int empty_attempt(empty_run_fn run, const void *ctx, int64_t huge, bool backward, int64_t *numel) {
    tensor *req[16];
    int k = 0;
    tensor_clear_error();
    tensor *out = run(huge, ctx, req, &k);
    if (!out) return 1;
    *numel = tensor_numel(out);
    if (!backward || k == 0 || !tensor_requires_grad(out)) return 0;
    tensor *grads[16] = {0};
    tensor *go = tensor_zeros_like(out);
    return go && tensor_autograd_grad(1, &out, &go, k, req, grads, false) == 0 ? 0 : 3;
}

static void empty_case(const char *file, int line, const char *what, empty_run_fn run, const void *ctx) {
    int64_t n13 = -1, n17 = -2, n = -3;
    tensor_scope_begin();
    int small = empty_attempt(run, ctx, 13, true, &n13);
    if (small != 1 && empty_attempt(run, ctx, 17, false, &n17) != 0) small = 1;
    tensor_scope_end();
    if (small == 1 || n13 != n17) { /* refused, or a result that grows with the size: not a case of empty work */
        if (small == 1 && tensor_last_error()) snprintf(empty_now_op.refusal, sizeof empty_now_op.refusal, "%s", tensor_last_error());
        tensor_clear_error();
        return;
    }
    tensor_clear_error();
    empty_now_op.valid++;
    tensor_scope_begin();
    tensor_test_alloc_cap(EMPTY_CAP);
    double t0 = empty_seconds();
    int big = empty_attempt(run, ctx, EMPTY_HUGE, small == 0, &n);
    double dt = empty_seconds() - t0;
    int64_t largest = tensor_test_alloc_largest();
    tensor_test_alloc_cap(0);
    /* a shape of the op's with two big sizes is past TENSOR__MAX_NUMEL's bound of 2^60 on sizes
       (counting 0 as 1): refused, as it should be, whether or not a 0 comes with it */
    bool refused = big == 1 && tensor_last_error() && strstr(tensor_last_error(), "is too large");
    tensor_scope_end();
    if (refused) {
        empty_now_op.valid--;
        tensor_clear_error();
        return;
    }
    bool ok = big == 0 && n == n13 && dt <= EMPTY_LIMIT_S && largest <= EMPTY_CAP;
    if (!ok && !empty_now_op.as_pytorch) {
        empty_now_op.failed++;
        if (empty_now_op.failed <= 2)
            test_fail(file, line, "%s: %s with 2^31 in place of 13: %s%s, %lld elements (%lld with 13), %.2f s, largest request %lld bytes", empty_now_op.op, what,
                      big == 0 ? "ok" : big == 1 ? "the op failed: " : "the backward failed: ",
                      big == 1 || big == 3 ? (tensor_last_error() ? tensor_last_error() : "no message") : "", (long long)n, (long long)n13, dt, (long long)largest);
    }
    tensor_clear_error();
}

/* ---- the gradient checks' calls, diverted ---- */
enum { EMPTY_MAP, EMPTY_FRONT_0H, EMPTY_FRONT_H0, EMPTY_FIRST_0H, EMPTY_FIRST_H0 };
typedef struct {
    test_fn_of f;
    const void *ctx;
    int n;
    tensor *const *in;
    int how;
    int64_t zero, big; /* EMPTY_MAP: the sizes that become 0 and the big one */
} empty_grad_case;

static bool empty_has(const tensor *t, int64_t size) {
    for (int d = 0; d < tensor_ndim(t); d++)
        if (tensor_shape(t)[d] == size) return true;
    return false;
}

static tensor *empty_run_grad(int64_t huge, const void *ctx, tensor **req, int *k) {
    const empty_grad_case *c = (const empty_grad_case *)ctx;
    tensor *in[16] = {0}; /* NULL past n: some f read one more (an optional bias) */
    for (int i = 0; i < c->n; i++) {
        tensor *x = c->in[i];
        int nd = tensor_ndim(x), m = 0;
        int64_t shape[TENSOR_MAX_DIMS];
        bool front = c->how == EMPTY_FRONT_0H || c->how == EMPTY_FRONT_H0 || (i == 0 && c->how != EMPTY_MAP);
        if (front) {
            bool zero_first = c->how == EMPTY_FRONT_0H || c->how == EMPTY_FIRST_0H;
            shape[m++] = zero_first ? 0 : huge;
            shape[m++] = zero_first ? huge : 0;
        }
        for (int d = 0; d < nd; d++) {
            int64_t s = tensor_shape(x)[d];
            shape[m++] = c->how != EMPTY_MAP ? s : s == c->zero ? 0 : s == c->big ? huge : s;
        }
        bool same = !front && (c->how != EMPTY_MAP || (!empty_has(x, c->zero) && !empty_has(x, c->big)));
        in[i] = same ? x : tensor_empty(m, shape, tensor_get_dtype(x));
        if (!in[i]) return NULL;
        if (!same && tensor_requires_grad(x)) tensor_set_requires_grad(in[i], true);
        if (tensor_requires_grad(in[i])) req[(*k)++] = in[i];
    }
    return c->f(in, c->ctx);
}

/* The count the gradient check would have returned (its callers check it). */
static int empty_divert(const char *file, int line, test_fn_of f, const void *ctx, int n, tensor *const *in, int order) {
    int compared = 0;
    for (int i = 0; i < n; i++)
        if (tensor_requires_grad(in[i])) compared += (int)tensor_numel(in[i]);
    if (order != 1 || n > 16) return compared; /* second derivatives: the first ones' ops, again */
    int64_t sizes[32];
    int ns = 0, max_nd = 0;
    for (int i = 0; i < n; i++) {
        if (tensor_ndim(in[i]) > max_nd) max_nd = tensor_ndim(in[i]);
        for (int d = 0; d < tensor_ndim(in[i]); d++) {
            int64_t s = tensor_shape(in[i])[d];
            bool seen = s < 2 || s == 13 || s == 17;
            for (int j = 0; j < ns && !seen; j++) seen = sizes[j] == s;
            if (!seen && ns < 32) sizes[ns++] = s;
        }
    }
    empty_grad_case c = {f, ctx, n, in, EMPTY_MAP, 0, 0};
    char what[96];
    for (int a = 0; a < ns; a++)
        for (int b = -1; b < ns; b++) { /* b -1: a 0 alone (an op of 1-D inputs of one size) */
            if (a == b) continue;
            /* every input holding the big size is empty (needs no memory), and holds it once (two
               are past the 2^60 bound on a shape's sizes) */
            bool fits = true;
            for (int i = 0; i < n && fits && b >= 0; i++) {
                int bigs = 0;
                for (int d = 0; d < tensor_ndim(in[i]); d++) bigs += tensor_shape(in[i])[d] == sizes[b];
                fits = bigs == 0 || (bigs == 1 && empty_has(in[i], sizes[a]));
            }
            if (!fits) continue;
            c.zero = sizes[a];
            c.big = b >= 0 ? sizes[b] : -1;
            snprintf(what, sizeof what, "gradcheck's inputs with %lld -> 0, %lld -> 2^31", (long long)sizes[a], (long long)c.big);
            empty_case(file, line, what, empty_run_grad, &c);
        }
    if (max_nd + 2 <= TENSOR_MAX_DIMS) {
        static const char *const names[] = {"", "every input behind [0, 2^31]", "every input behind [2^31, 0]", "the first input behind [0, 2^31]",
                                            "the first input behind [2^31, 0]"};
        for (int how = EMPTY_FRONT_0H; how <= EMPTY_FIRST_H0; how++) {
            if (n == 1 && how >= EMPTY_FIRST_0H) break;
            c.how = how;
            empty_case(file, line, names[how], empty_run_grad, &c);
        }
    }
    return compared;
}

#define DECLARE_EMPTY_GRADCHECK_DIFF(name) void gradcheck_##name(void) __attribute__((weak));
#define DECLARE_EMPTY_GRADCHECK_NODIFF(name)
#define DECLARE_EMPTY_GRADCHECK(name, kind, impl, types, grad, params, doc) DECLARE_EMPTY_GRADCHECK_##grad(name)
TENSOR_OPS(DECLARE_EMPTY_GRADCHECK)
#define EMPTY_GRADCHECK_ROW_DIFF(name) gradcheck_##name,
#define EMPTY_GRADCHECK_ROW_NODIFF(name) NULL,
#define EMPTY_GRADCHECK_ROW(name, kind, impl, types, grad, params, doc) EMPTY_GRADCHECK_ROW_##grad(name)
static void (*const empty_gradchecks[])(void) = {TENSOR_OPS(EMPTY_GRADCHECK_ROW)};

/* ---- the elementwise ops: the device sweep's calls, on [0, 2^31] and [0, 1] (its calls make
   more operands of the second, so it is empty too) ---- */
typedef struct { tensor_op op; tensor_dtype dtype; } empty_elementwise_case;
static tensor *empty_run_elementwise(int64_t huge, const void *ctx, tensor **req, int *k) {
    const empty_elementwise_case *c = (const empty_elementwise_case *)ctx;
    tensor *a = tensor_empty(TENSOR_SHAPE(0, huge), c->dtype), *b = tensor_empty(TENSOR_SHAPE(0, 1), c->dtype);
    if (c->dtype == TENSOR_F64 && tensor_op_differentiable(c->op)) {
        req[(*k)++] = tensor_set_requires_grad(a, true);
        req[(*k)++] = tensor_set_requires_grad(b, true);
    }
    return device_call(c->op, a, b);
}

/* ---- the ops without a derivative, and those whose gradient checks hold shapes the sweep above
   cannot turn (indices held aside, windows, fixed sizes): one call each on [0, 2^31] operands ---- */
static tensor *empty_run_other(int64_t huge, const void *ctx, tensor **req, int *k) {
    tensor_op op = *(const tensor_op *)ctx;
    int64_t e[2] = {0, huge};
    tensor *x = tensor_empty(2, e, TENSOR_F64), *xi = tensor_empty(2, e, TENSOR_I64);
    tensor *x1 = tensor_empty(TENSOR_SHAPE(0), TENSOR_F64), *i1 = tensor_empty(TENSOR_SHAPE(0), TENSOR_I64);
    /* leaves that require grad: [0, 2^31], [0, 2, 2^31], [0, 2, 3, 2^31] */
    tensor *g2 = tensor_set_requires_grad(tensor_empty(2, e, TENSOR_F64), true);
    tensor *g3 = tensor_set_requires_grad(tensor_empty(TENSOR_SHAPE(0, 2, huge), TENSOR_F64), true);
    tensor *g4 = tensor_set_requires_grad(tensor_empty(TENSOR_SHAPE(0, 2, 3, huge), TENSOR_F64), true);
    tensor *ix = tensor_empty(TENSOR_SHAPE(0, 3), TENSOR_I64), *src = tensor_empty(TENSOR_SHAPE(0, 3), TENSOR_F64);
    if (tensor_op_differentiable(op)) {
        req[(*k)++] = g2;
        req[(*k)++] = g3;
        req[(*k)++] = g4;
    }
    const int d1 = 1;
    switch (op) {
    case TENSOR_OP_max_all: return tensor_max_all(g2); /* refused, as PyTorch's */
    case TENSOR_OP_min_all: return tensor_min_all(g2);
    case TENSOR_OP_quantile: return tensor_quantile(g2, 0.5, &d1, false, "linear");
    case TENSOR_OP_nanquantile: return tensor_nanquantile(g2, 0.5, &d1, true, "linear");
    case TENSOR_OP_quantile_tensor: return tensor_quantile_tensor(g2, tensor_full(TENSOR_SHAPE(2), 0.5, TENSOR_F64), &d1, false, "lower");
    case TENSOR_OP_nanquantile_tensor: return tensor_nanquantile_tensor(g2, tensor_full(TENSOR_SHAPE(2), 0.5, TENSOR_F64), &d1, false, "higher");
    case TENSOR_OP_broadcast_to: return tensor_broadcast_to(tensor_sum(g2, 1, true), 2, e);
    case TENSOR_OP_expand_as: return tensor_expand_as(tensor_sum(g2, 1, true), x);
    case TENSOR_OP_reshape_as: return tensor_reshape_as(g2, tensor_empty(TENSOR_SHAPE(huge, 0), TENSOR_F64));
    case TENSOR_OP_as_strided: return tensor_as_strided(g2, 2, (const int64_t[]){huge, 0}, (const int64_t[]){1, 1}, 0);
    case TENSOR_OP_gather: return tensor_gather(g2, 1, ix);
    case TENSOR_OP_scatter: return tensor_scatter(g2, 1, ix, src);
    case TENSOR_OP_scatter_value: return tensor_scatter_value(g2, 1, ix, 2);
    case TENSOR_OP_scatter_reduce: return tensor_scatter_reduce(g2, 1, ix, src, "amax", true);
    case TENSOR_OP_scatter_with_reduce: return tensor_scatter_with_reduce(g2, 1, ix, src, "add");
    case TENSOR_OP_scatter_value_with_reduce: return tensor_scatter_value_with_reduce(g2, 1, ix, 2, "multiply");
    case TENSOR_OP_index_put: return tensor_index_put(g2, 1, (tensor *const[]){i1}, tensor_empty(TENSOR_SHAPE(0, 1), TENSOR_F64), true);
    case TENSOR_OP_take: return tensor_take(g2, i1);
    case TENSOR_OP_take_along_dim: return tensor_take_along_dim(g2, ix, &d1);
    case TENSOR_OP_put: return tensor_put(g2, i1, x1, true);
    case TENSOR_OP_diagonal_scatter: return tensor_diagonal_scatter(g2, x1, 0, 0, 1);
    case TENSOR_OP_max_pool2d: return tensor_max_pool2d(g4, 2, 2, 0);
    case TENSOR_OP_avg_pool2d: return tensor_avg_pool2d(g4, 2, 2, 1);
    case TENSOR_OP_max_pool2d_with_indices: return tensor_max_pool2d_with_indices(g4, 2, 1, 0, 2, true, NULL);
    case TENSOR_OP_avg_pool1d: return tensor_avg_pool1d(g3, 3, 2, 1, true, false);
    case TENSOR_OP_adaptive_avg_pool1d: return tensor_adaptive_avg_pool1d(g3, 5);
    case TENSOR_OP_adaptive_avg_pool2d: return tensor_adaptive_avg_pool2d(g4, 2, 5);
    case TENSOR_OP_adaptive_max_pool2d: return tensor_adaptive_max_pool2d(g4, 2, 5, NULL);
    case TENSOR_OP_conv_transpose1d: return tensor_conv_transpose1d(g3, tensor_ones(TENSOR_SHAPE(2, 3, 2), TENSOR_F64), NULL, 2, 0, 1, 1, 1);
    case TENSOR_OP_conv_transpose2d: return tensor_conv_transpose2d(g4, tensor_ones(TENSOR_SHAPE(2, 3, 2, 2), TENSOR_F64), NULL, 1, 1, 0, 1, 2);
    case TENSOR_OP_im2col: return tensor_im2col(g4, 2, 1, 0, 1);
    case TENSOR_OP_grid_sample: return tensor_grid_sample(g4, tensor_zeros(TENSOR_SHAPE(0, 4, 5, 2), TENSOR_F64), "bilinear", "zeros", false);
    case TENSOR_OP_affine_grid: return tensor_affine_grid(tensor_set_requires_grad(tensor_empty(TENSOR_SHAPE(0, 2, 3), TENSOR_F64), true), 4, (const int64_t[]){0, 1, huge, 5}, false);
    case TENSOR_OP_margin_ranking_loss: return tensor_margin_ranking_loss(g2, x, x, 0.5, TENSOR_REDUCTION_MEAN);
    case TENSOR_OP_cosine_embedding_loss: return tensor_cosine_embedding_loss(g2, x, tensor_empty(TENSOR_SHAPE(0), TENSOR_F64), 0.5, TENSOR_REDUCTION_SUM);
    case TENSOR_OP_multi_margin_loss: return tensor_multi_margin_loss(g2, i1, 1, 1, NULL, TENSOR_REDUCTION_MEAN);
    case TENSOR_OP_nll_loss_ex: return tensor_nll_loss_ex(g2, i1, NULL, -100, TENSOR_REDUCTION_SUM);
    case TENSOR_OP_bernoulli: return tensor_bernoulli(g2);
    case TENSOR_OP_normal_tensor: return tensor_normal_tensor(g2, x);
    case TENSOR_OP_normal_std_scalar: return tensor_normal_std_scalar(g2, 1);
    case TENSOR_OP_normal_mean_scalar: return tensor_normal_mean_scalar(0, g2);
    case TENSOR_OP_poisson: return tensor_poisson(g2);
    case TENSOR_OP_max_unpool2d: return tensor_max_unpool2d(g4, tensor_empty(TENSOR_SHAPE(0, 2, 3, huge), TENSOR_I64), 2, 2, 0, 6, 2 * huge);
    case TENSOR_OP_ctc_loss: return tensor_ctc_loss(tensor_set_requires_grad(tensor_empty(TENSOR_SHAPE(huge, 0, 5), TENSOR_F64), true), tensor_empty(TENSOR_SHAPE(0, 4), TENSOR_I64), i1, i1, 0, TENSOR_REDUCTION_MEAN, false);
    case TENSOR_OP_empty: return tensor_empty(2, e, TENSOR_F32);
    case TENSOR_OP_zeros: return tensor_zeros(2, e, TENSOR_F32);
    case TENSOR_OP_ones: return tensor_ones(2, e, TENSOR_F32);
    case TENSOR_OP_full: return tensor_full(2, e, 2, TENSOR_F32);
    case TENSOR_OP_rand: return tensor_rand(2, e, TENSOR_F32);
    case TENSOR_OP_randn: return tensor_randn(2, e, TENSOR_F32);
    case TENSOR_OP_randint: return tensor_randint(0, 5, 2, e, TENSOR_I64);
    case TENSOR_OP_from_data: return tensor_from_data(NULL, 2, e, TENSOR_F32);
    case TENSOR_OP_arange: return tensor_arange(0, 0, 1, TENSOR_F32);
    case TENSOR_OP_linspace: return tensor_linspace(0, 1, 0, TENSOR_F32);
    case TENSOR_OP_logspace: return tensor_logspace(0, 1, 0, 10, TENSOR_F32);
    case TENSOR_OP_eye: return tensor_eye(0, TENSOR_F32);
    case TENSOR_OP_randperm: return tensor_randperm(0, TENSOR_I64);
    case TENSOR_OP_scalar: return tensor_scalar(1, TENSOR_F32); /* no operand to be empty */
    case TENSOR_OP_multinomial: return tensor_multinomial(tensor_ones(TENSOR_SHAPE(0, 3), TENSOR_F32), 2, true);
    case TENSOR_OP_zeros_like: return tensor_zeros_like(x);
    case TENSOR_OP_ones_like: return tensor_ones_like(x);
    case TENSOR_OP_full_like: return tensor_full_like(x, 3);
    case TENSOR_OP_empty_like: return tensor_empty_like(x);
    case TENSOR_OP_rand_like: return tensor_rand_like(x);
    case TENSOR_OP_randn_like: return tensor_randn_like(x);
    case TENSOR_OP_bernoulli_scalar: return tensor_bernoulli_scalar(x, 0.5);
    case TENSOR_OP_tril_indices: return tensor_tril_indices(0, huge, 0, TENSOR_I64);
    case TENSOR_OP_triu_indices: return tensor_triu_indices(0, huge, 0, TENSOR_I64);
    case TENSOR_OP_add_: return tensor_add_(x, tensor_expand(tensor_scalar(1, TENSOR_F64), 1, (const int64_t[]){huge}));
    case TENSOR_OP_mul_scalar_: return tensor_mul_scalar_(x, 2);
    case TENSOR_OP_copy_: return tensor_copy_(x, tensor_expand(tensor_scalar(1, TENSOR_F64), 1, (const int64_t[]){huge}));
    case TENSOR_OP_fill_: return tensor_fill_(x, 2);
    case TENSOR_OP_zero_: return tensor_zero_(x);
    case TENSOR_OP_argmax: return tensor_argmax(x, 1, false);
    case TENSOR_OP_argmin: return tensor_argmin(x, 1, true);
    case TENSOR_OP_all: return tensor_all(x);
    case TENSOR_OP_any: return tensor_any(x);
    case TENSOR_OP_argsort: return tensor_argsort(x, 1, false);
    case TENSOR_OP_count_nonzero: return tensor_count_nonzero(x, 1, (const int[]){1});
    case TENSOR_OP_one_hot: return tensor_one_hot(xi, 4);
    case TENSOR_OP_nonzero: return tensor_nonzero(x);
    case TENSOR_OP_argwhere: return tensor_argwhere(x);
    case TENSOR_OP_searchsorted: return tensor_searchsorted(tensor_zeros(TENSOR_SHAPE(0, 3), TENSOR_F64), x, false, false, NULL);
    case TENSOR_OP_bucketize: return tensor_bucketize(x, tensor_zeros(TENSOR_SHAPE(3), TENSOR_F64), false, false);
    case TENSOR_OP_bincount: return tensor_bincount(i1, NULL, 0);
    case TENSOR_OP_histc: return tensor_histc(x1, 4, 0, 1);
    case TENSOR_OP_unique: return tensor_unique(x, true, NULL, NULL, NULL);
    case TENSOR_OP_unique_consecutive: return tensor_unique_consecutive(x, NULL, NULL, NULL);
    case TENSOR_OP_linalg_matrix_rank: return tensor_linalg_matrix_rank(tensor_empty(TENSOR_SHAPE(0, huge, 4), TENSOR_F64), 0, -1, false);
    case TENSOR_OP_isclose: return tensor_isclose(x, tensor_ones(TENSOR_SHAPE(1), TENSOR_F64), 1e-5, 1e-8, false);
    default: return NULL;
    }
}

TEST(empty_every_op_returns_at_once_on_empty_operands) {
    int reached = 0, refused = 0;
    for (int op = 0; op < TENSOR_OP_COUNT; op++) {
        empty_now_op.op = tensor_op_name((tensor_op)op);
        empty_now_op.valid = empty_now_op.failed = 0;
        empty_now_op.as_pytorch = false;
        empty_now_op.refusal[0] = 0;
        for (size_t e = 0; e < sizeof empty_as_pytorch / sizeof empty_as_pytorch[0]; e++)
            if (!strcmp(empty_as_pytorch[e][0], empty_now_op.op)) empty_now_op.as_pytorch = true;
        const char *kind = test_op_kind((tensor_op)op);
        if (empty_gradchecks[op]) {
            tensor_scope_begin();
            test_gradcheck_divert = empty_divert;
            empty_gradchecks[op]();
            test_gradcheck_divert = NULL;
            tensor_scope_end();
        }
        if (!strcmp(kind, "UNARY") || !strcmp(kind, "UNARY_P") || !strcmp(kind, "BINARY")) {
            static const tensor_dtype dts[] = {TENSOR_F64, TENSOR_F32, TENSOR_I64, TENSOR_BOOL};
            for (int d = 0; d < 4; d++) {
                empty_elementwise_case c = {(tensor_op)op, dts[d]};
                empty_case(__FILE__, __LINE__, tensor_dtype_name(dts[d]), empty_run_elementwise, &c);
            }
        }
        tensor_op o = (tensor_op)op;
        empty_case(__FILE__, __LINE__, "[0, 2^31]", empty_run_other, &o);
        bool refuses = false;
        for (size_t e = 0; e < sizeof empty_refused / sizeof empty_refused[0]; e++)
            if (!strcmp(empty_refused[e][0], empty_now_op.op)) refuses = true;
        if (empty_now_op.valid > 0) {
            reached++;
            CHECK_MSG(!refuses, "%s is run on empty operands now: take it off empty_refused", empty_now_op.op);
        } else if (refuses) {
            refused++;
        } else {
            test_fail(__FILE__, __LINE__, "%s: no call of the sweep runs it on empty operands (give it a case in empty_run_other; the last refusal: %s)", empty_now_op.op,
                      empty_now_op.refusal[0] ? empty_now_op.refusal : "none");
        }
    }
    printf("  empty sweep: %d of %d ops run on empty operands with a dim of 2^31 (%d refuse them, as PyTorch's do)\n", reached, (int)TENSOR_OP_COUNT, refused);
}

/* Sizes of empty linear-algebra operands whose products must not overflow (UBSan stops the asan
   build at the first): the SVD's scratch L L and grain L L L of [0, 2^35], the packed U, S, Vh and
   Q, R of full / complete factors (too large: refused), and the grain of an empty batch of huge
   matrices (n n n) in LU, Cholesky, the triangular solve, QR and eigh. */
TEST(empty_linalg_sizes_do_not_overflow) {
    const int64_t big = (int64_t)1 << 35, n = (int64_t)1 << 25;
    tensor *wide = tensor_empty(TENSOR_SHAPE(0, big), TENSOR_F64), *tall = tensor_empty(TENSOR_SHAPE(big, 0), TENSOR_F64);
    tensor *S = NULL, *Vh = NULL, *R = NULL, *piv = NULL;
    tensor *U = tensor_linalg_svd(wide, false, &S, &Vh);
    CHECK_SHAPE(U, 2, (const int64_t[]){0, 0});
    CHECK_SHAPE(S, 1, (const int64_t[]){0});
    CHECK_SHAPE(Vh, 2, (const int64_t[]){0, big});
    CHECK_SHAPE(tensor_linalg_svdvals(tall), 1, (const int64_t[]){0});
    CHECK_SHAPE(tensor_linalg_pinv(wide, 0, -1, false), 2, (const int64_t[]){big, 0});
    CHECK_BAD(tensor_linalg_svd(wide, true, NULL, NULL), "tensor_linalg_svd"); /* Vh [2^35, 2^35] */
    CHECK_SHAPE(tensor_linalg_qr(tall, "reduced", &R), 2, (const int64_t[]){big, 0});
    CHECK_SHAPE(R, 2, (const int64_t[]){0, 0});
    CHECK_BAD(tensor_linalg_qr(tall, "complete", NULL), "tensor_linalg_qr"); /* Q [2^35, 2^35] */
    tensor *sq = tensor_empty(TENSOR_SHAPE(0, n, n), TENSOR_F64);
    const int64_t sq_shape[3] = {0, n, n}, w_shape[2] = {0, n};
    CHECK_SHAPE(tensor_linalg_cholesky(sq, false), 3, sq_shape);
    CHECK_SHAPE(tensor_linalg_lu_factor(sq, &piv), 3, sq_shape);
    CHECK_SHAPE(piv, 2, w_shape);
    CHECK_SHAPE(tensor_linalg_solve_triangular(sq, sq, true, true, false), 3, sq_shape);
    CHECK_SHAPE(tensor_linalg_eigvalsh(sq, "L"), 2, w_shape);
    CHECK_SHAPE(tensor_linalg_qr(sq, "r", &R), 1, (const int64_t[]){0});
    CHECK_SHAPE(R, 3, sq_shape);
    CHECK_SHAPE(tensor_linalg_inv(sq), 3, sq_shape);
    CHECK_SHAPE(tensor_linalg_det(sq), 1, (const int64_t[]){0});
    tensor_clear_error();
}

/* The cases of issue 24 (with the sweep's 2^31 for N): the backward of softmax, log_softmax,
   softmin and cumprod over x [0, 2^27] built a [1, N] sum (2.6 to 12.7 s); the SVD, its values
   and the pseudo-inverse of [2^24, 0, 4] looped over the batch (0.5 s). */
static tensor *empty_issue_case(int64_t huge, const void *ctx, tensor **req, int *k) {
    int w = *(const int *)ctx;
    tensor *x = tensor_set_requires_grad(tensor_empty(TENSOR_SHAPE(0, huge), TENSOR_F32), true);
    tensor *a = tensor_set_requires_grad(tensor_empty(TENSOR_SHAPE(huge, 0, 4), TENSOR_F32), true);
    req[(*k)++] = w < 4 ? x : a;
    switch (w) {
    case 0: return tensor_softmax(x, 0);
    case 1: return tensor_log_softmax(x, 0);
    case 2: return tensor_softmin(x, 0);
    case 3: return tensor_cumprod(x, 0);
    case 4: return tensor_linalg_svd(a, false, NULL, NULL);
    case 5: return tensor_linalg_svdvals(a);
    default: return tensor_linalg_pinv(a, 0, -1, false);
    }
}
TEST(empty_issue_cases_return_at_once) {
    static const char *const names[] = {"softmax", "log_softmax", "softmin", "cumprod", "linalg_svd", "linalg_svdvals", "linalg_pinv"};
    for (int w = 0; w < 7; w++) {
        empty_now_op.op = names[w];
        empty_now_op.valid = empty_now_op.failed = 0;
        empty_now_op.as_pytorch = false;
        empty_case(__FILE__, __LINE__, "[0, N] or [N, 0, 4]", empty_issue_case, &w);
        CHECK_MSG(empty_now_op.valid == 1, "%s: the case did not run (%s)", names[w], empty_now_op.refusal);
    }
}
