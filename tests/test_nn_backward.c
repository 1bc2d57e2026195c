/* Gradients of the convolutions and pooling (the fused backward kernels of generator/parts/conv.h, pool.h):
   finite-difference checks in f64, the fast (im2col + GEMM + col2im) path against the reference
   loops, and the gradients against adjoint sums written out here in double. */
#include "test.h"

/* ---- helpers ---- */


/* An f64 leaf whose values are distinct and at least 2 / numel apart (a shuffled ramp in
   [-1, 1)), so no max-pool window has a tie, or a near-tie a finite difference could flip. */
static tensor *distinct_leaf(int nd, const int64_t *shape) {
    tensor *t = tensor_empty(nd, shape, TENSOR_F64);
    double *d = (double *)tensor_data_ptr(t);
    int64_t n = test_numel(nd, shape);
    for (int64_t i = 0; i < n; i++) d[i] = -1 + 2 * ((double)i + 0.5) / (double)n;
    for (int64_t i = n - 1; i > 0; i--) {
        int64_t j = (int64_t)test_uniform(0, (double)(i + 1));
        if (j > i) j = i;
        double tmp = d[i]; d[i] = d[j]; d[j] = tmp;
    }
    return tensor_set_requires_grad(t, true);
}

static tensor *leaf_of(tensor *t) { return tensor_set_requires_grad(t, true); }

/* ---- gradient checks ---- */

/* A convolution case: its parameters and how f builds its inputs from the leaves. */
typedef struct {
    int stride, padding, dilation, groups;
    int view; /* 0: the leaves as they are; 1: weight leaf [O, Cg, kW, kH] transposed (2, 3) in f;
                 2: x leaf with the last dim doubled, sliced with step 2 in f; 3 (conv1d): x leaf
                 [N, L, C] transposed (1, 2) in f */
} conv_ctx;

static tensor *conv_input(tensor *x, const conv_ctx *c) {
    int last = tensor_ndim(x) - 1;
    if (c->view == 2) return tensor_slice(x, last, 0, tensor_size(x, last), 2);
    if (c->view == 3) return tensor_transpose(x, 1, 2);
    return x;
}

static tensor *f_conv2d(tensor *const *in, const void *ctx) {
    const conv_ctx *c = (const conv_ctx *)ctx;
    tensor *w = c->view == 1 ? tensor_transpose(in[1], 2, 3) : in[1];
    return tensor_conv2d(conv_input(in[0], c), w, in[2], c->stride, c->padding, c->dilation, c->groups);
}

static tensor *f_conv1d(tensor *const *in, const void *ctx) {
    const conv_ctx *c = (const conv_ctx *)ctx;
    return tensor_conv1d(conv_input(in[0], c), in[1], in[2], c->stride, c->padding, c->dilation, c->groups);
}

void gradcheck_conv2d(void) {
    {   /* 3x3, padding 1, bias */
        conv_ctx c = {1, 1, 1, 1, 0};
        tensor *in[3] = {test_leaf(TENSOR_SHAPE(2, 3, 5, 6), -1, 1), test_leaf(TENSOR_SHAPE(4, 3, 3, 3), -1, 1), test_leaf(TENSOR_SHAPE(4), -1, 1)};
        GRADCHECK(f_conv2d, &c, 3, in);
    }
    {   /* stride 2, groups 2 with 4 channels, a 3x2 kernel, no bias */
        conv_ctx c = {2, 1, 1, 2, 0};
        tensor *in[3] = {test_leaf(TENSOR_SHAPE(2, 4, 6, 5), -1, 1), test_leaf(TENSOR_SHAPE(4, 2, 3, 2), -1, 1), NULL};
        GRADCHECK(f_conv2d, &c, 3, in);
    }
    {   /* dilation 2 with padding 2 */
        conv_ctx c = {1, 2, 2, 1, 0};
        tensor *in[3] = {test_leaf(TENSOR_SHAPE(1, 2, 6, 7), -1, 1), test_leaf(TENSOR_SHAPE(3, 2, 2, 3), -1, 1), test_leaf(TENSOR_SHAPE(3), -1, 1)};
        GRADCHECK(f_conv2d, &c, 3, in);
    }
    {   /* stride 3 that skips input columns, padding 1, dilation 2 */
        conv_ctx c = {3, 1, 2, 1, 0};
        tensor *in[3] = {test_leaf(TENSOR_SHAPE(2, 2, 8, 7), -1, 1), test_leaf(TENSOR_SHAPE(2, 2, 2, 2), -1, 1), test_leaf(TENSOR_SHAPE(2), -1, 1)};
        GRADCHECK(f_conv2d, &c, 3, in);
    }
    {   /* unbatched input [C, H, W] */
        conv_ctx c = {2, 0, 1, 1, 0};
        tensor *in[3] = {test_leaf(TENSOR_SHAPE(3, 5, 5), -1, 1), test_leaf(TENSOR_SHAPE(2, 3, 3, 3), -1, 1), test_leaf(TENSOR_SHAPE(2), -1, 1)};
        GRADCHECK(f_conv2d, &c, 3, in);
    }
    {   /* 1x1 kernel, stride 1, no padding (the direct GEMM path), groups 2; K = 2 < Og = 3 */
        conv_ctx c = {1, 0, 1, 2, 0};
        tensor *in[3] = {test_leaf(TENSOR_SHAPE(2, 4, 3, 4), -1, 1), test_leaf(TENSOR_SHAPE(6, 2, 1, 1), -1, 1), test_leaf(TENSOR_SHAPE(6), -1, 1)};
        GRADCHECK(f_conv2d, &c, 3, in);
    }
    {   /* depthwise: groups = channels = 4 */
        conv_ctx c = {1, 1, 1, 4, 0};
        tensor *in[3] = {test_leaf(TENSOR_SHAPE(1, 4, 4, 4), -1, 1), test_leaf(TENSOR_SHAPE(4, 1, 3, 3), -1, 1), NULL};
        GRADCHECK(f_conv2d, &c, 3, in);
    }
    {   /* one input channel, more out channels than patch entries (K = 4 < O = 8) */
        conv_ctx c = {1, 1, 1, 1, 0};
        tensor *in[3] = {test_leaf(TENSOR_SHAPE(2, 1, 4, 5), -1, 1), test_leaf(TENSOR_SHAPE(8, 1, 2, 2), -1, 1), test_leaf(TENSOR_SHAPE(8), -1, 1)};
        GRADCHECK(f_conv2d, &c, 3, in);
    }
    {   /* non-contiguous weight: a transposed view */
        conv_ctx c = {1, 1, 1, 1, 1};
        tensor *in[3] = {test_leaf(TENSOR_SHAPE(2, 2, 5, 4), -1, 1), test_leaf(TENSOR_SHAPE(3, 2, 2, 3), -1, 1), test_leaf(TENSOR_SHAPE(3), -1, 1)};
        GRADCHECK(f_conv2d, &c, 3, in);
    }
    {   /* non-contiguous input: every other column of x */
        conv_ctx c = {1, 0, 1, 1, 2};
        tensor *in[3] = {test_leaf(TENSOR_SHAPE(2, 2, 5, 10), -1, 1), test_leaf(TENSOR_SHAPE(2, 2, 3, 3), -1, 1), NULL};
        GRADCHECK(f_conv2d, &c, 3, in);
    }
    {   /* only the weight requires grad (x is data), the gradient of x is not computed */
        conv_ctx c = {1, 1, 1, 1, 0};
        tensor *in[3] = {tensor_detach(test_leaf(TENSOR_SHAPE(2, 2, 4, 4), -1, 1)), test_leaf(TENSOR_SHAPE(3, 2, 3, 3), -1, 1), test_leaf(TENSOR_SHAPE(3), -1, 1)};
        GRADCHECK(f_conv2d, &c, 3, in);
    }
}

void gradcheck_conv1d(void) {
    {   /* stride 2, padding 1, dilation 2, groups 2 with 4 channels, bias */
        conv_ctx c = {2, 1, 2, 2, 0};
        tensor *in[3] = {test_leaf(TENSOR_SHAPE(2, 4, 9), -1, 1), test_leaf(TENSOR_SHAPE(4, 2, 3), -1, 1), test_leaf(TENSOR_SHAPE(4), -1, 1)};
        GRADCHECK(f_conv1d, &c, 3, in);
    }
    {   /* unbatched [C, L], no bias */
        conv_ctx c = {1, 1, 1, 1, 0};
        tensor *in[3] = {test_leaf(TENSOR_SHAPE(3, 7), -1, 1), test_leaf(TENSOR_SHAPE(2, 3, 3), -1, 1), NULL};
        GRADCHECK(f_conv1d, &c, 3, in);
    }
    {   /* kernel size 1 (the direct path) */
        conv_ctx c = {1, 0, 1, 1, 0};
        tensor *in[3] = {test_leaf(TENSOR_SHAPE(2, 3, 5), -1, 1), test_leaf(TENSOR_SHAPE(4, 3, 1), -1, 1), test_leaf(TENSOR_SHAPE(4), -1, 1)};
        GRADCHECK(f_conv1d, &c, 3, in);
    }
    {   /* non-contiguous input: x made as [N, L, C] and transposed */
        conv_ctx c = {1, 2, 1, 1, 3};
        tensor *in[3] = {test_leaf(TENSOR_SHAPE(2, 6, 3), -1, 1), test_leaf(TENSOR_SHAPE(2, 3, 4), -1, 1), test_leaf(TENSOR_SHAPE(2), -1, 1)};
        GRADCHECK(f_conv1d, &c, 3, in);
    }
    {   /* non-contiguous input: every other element of a longer x, stride 3 */
        conv_ctx c = {3, 0, 1, 1, 2};
        tensor *in[3] = {test_leaf(TENSOR_SHAPE(1, 2, 20), -1, 1), test_leaf(TENSOR_SHAPE(3, 2, 2), -1, 1), NULL};
        GRADCHECK(f_conv1d, &c, 3, in);
    }
}

typedef struct { int kernel, stride, padding; bool transposed; } pool_ctx;

static tensor *f_max_pool2d(tensor *const *in, const void *ctx) {
    const pool_ctx *p = (const pool_ctx *)ctx;
    int nd = tensor_ndim(in[0]);
    tensor *x = p->transposed ? tensor_transpose(in[0], nd - 2, nd - 1) : in[0];
    return tensor_max_pool2d(x, p->kernel, p->stride, p->padding);
}

static tensor *f_avg_pool2d(tensor *const *in, const void *ctx) {
    const pool_ctx *p = (const pool_ctx *)ctx;
    int nd = tensor_ndim(in[0]);
    tensor *x = p->transposed ? tensor_transpose(in[0], nd - 2, nd - 1) : in[0];
    return tensor_avg_pool2d(x, p->kernel, p->stride, p->padding);
}

static const pool_ctx pool_cases[] = {
    {2, 2, 0, false}, /* the CNN's pooling */
    {2, 0, 0, false}, /* stride 0: the kernel size */
    {3, 2, 1, false}, /* padding */
    {3, 1, 1, false}, /* overlapping windows: one element can be the max of several */
    {2, 1, 1, true},  /* a transposed input */
    {3, 3, 0, false}, /* windows that leave the last row and column out */
};

void gradcheck_max_pool2d(void) {
    for (size_t i = 0; i < sizeof pool_cases / sizeof pool_cases[0]; i++) {
        tensor *x = distinct_leaf(TENSOR_SHAPE(2, 2, 6, 7));
        GRADCHECK(f_max_pool2d, &pool_cases[i], 1, &x);
    }
    pool_ctx c = {3, 2, 1, false};
    tensor *x = distinct_leaf(TENSOR_SHAPE(3, 5, 5)); /* unbatched */
    GRADCHECK(f_max_pool2d, &c, 1, &x);
}

void gradcheck_avg_pool2d(void) {
    for (size_t i = 0; i < sizeof pool_cases / sizeof pool_cases[0]; i++) {
        tensor *x = test_leaf(TENSOR_SHAPE(2, 2, 6, 7), -1, 1);
        GRADCHECK(f_avg_pool2d, &pool_cases[i], 1, &x);
    }
    pool_ctx c = {3, 2, 1, false};
    tensor *x = test_leaf(TENSOR_SHAPE(3, 5, 5), -1, 1); /* unbatched */
    GRADCHECK(f_avg_pool2d, &c, 1, &x);
}

/* The gradchecks run here too, so a failure names its test (the sweep in test_autograd.c runs
   them as well). */
TEST(conv2d_gradcheck) { gradcheck_conv2d(); }
TEST(conv1d_gradcheck) { gradcheck_conv1d(); }
TEST(max_pool2d_gradcheck) { gradcheck_max_pool2d(); }
TEST(avg_pool2d_gradcheck) { gradcheck_avg_pool2d(); }

/* ---- convolution gradients against adjoint sums written out here ---- */

/* The gradients of L = sum(conv2d(x, w, b) * gy) on row-major doubles: x [N, C, H, W],
   w [O, C/groups, kH, kW], gy [N, O, oH, oW]; gx, gw, gb are zeroed here. */
static void naive_conv2d_grads(const double *x, int64_t N, int64_t C, int64_t H, int64_t W, const double *w, int64_t O, int64_t kH, int64_t kW,
                               const double *gy, int64_t oH, int64_t oW, int s, int p, int d, int groups, double *gx, double *gw, double *gb) {
    int64_t Cg = C / groups, Og = O / groups;
    memset(gx, 0, sizeof(double) * (size_t)(N * C * H * W));
    memset(gw, 0, sizeof(double) * (size_t)(O * Cg * kH * kW));
    memset(gb, 0, sizeof(double) * (size_t)O);
    for (int64_t n = 0; n < N; n++)
        for (int64_t o = 0; o < O; o++)
            for (int64_t i = 0; i < oH; i++)
                for (int64_t j = 0; j < oW; j++) {
                    double g = gy[((n * O + o) * oH + i) * oW + j];
                    gb[o] += g;
                    for (int64_t c = 0; c < Cg; c++)
                        for (int64_t u = 0; u < kH; u++)
                            for (int64_t v = 0; v < kW; v++) {
                                int64_t h = i * s - p + u * d, ww = j * s - p + v * d;
                                if (h < 0 || h >= H || ww < 0 || ww >= W) continue;
                                int64_t xi = ((n * C + (o / Og) * Cg + c) * H + h) * W + ww, wi = ((o * Cg + c) * kH + u) * kW + v;
                                gx[xi] += g * w[wi];
                                gw[wi] += g * x[xi];
                            }
                }
}

/* Backward through conv2d with a given gradient gy, on the fast path or the reference; the
   gradients of x, w, b must match naive_conv2d_grads. */
static void check_conv2d_grads(tensor_dtype dt, bool reference, const int64_t *xs, const int64_t *ws, int s, int p, int d, int groups, double tol) {
    tensor *x = leaf_of(test_random(dt, 4, xs, -1, 1)), *w = leaf_of(test_random(dt, 4, ws, -1, 1)), *b = leaf_of(test_random(dt, 1, ws, -1, 1));
    bool was = tensor_set_reference_kernels(reference);
    tensor *y = tensor_conv2d(x, w, b, s, p, d, groups);
    CHECK_MSG(y != NULL, "conv2d failed: %s", tensor_last_error() ? tensor_last_error() : "?");
    if (!y) { tensor_set_reference_kernels(was); return; }
    const int64_t *ys = tensor_shape(y);
    tensor *gy = test_random(dt, 4, ys, -1, 1);
    int rc = tensor_backward_with(y, gy);
    tensor_set_reference_kernels(was);
    CHECK_MSG(rc == 0, "backward failed: %s", tensor_last_error() ? tensor_last_error() : "?");
    if (rc) return;
    double *xv = test_values(x), *wv = test_values(w), *gyv = test_values(gy);
    int64_t nx = test_numel(4, xs), nw = test_numel(4, ws);
    double *gx = (double *)malloc(sizeof(double) * (size_t)nx), *gw = (double *)malloc(sizeof(double) * (size_t)nw);
    double *gb = (double *)malloc(sizeof(double) * (size_t)ws[0]);
    naive_conv2d_grads(xv, xs[0], xs[1], xs[2], xs[3], wv, ws[0], ws[2], ws[3], gyv, ys[2], ys[3], s, p, d, groups, gx, gw, gb);
    tensor *grads[3] = {tensor_grad(x), tensor_grad(w), tensor_grad(b)};
    const double *expect[3] = {gx, gw, gb};
    int64_t counts[3] = {nx, nw, ws[0]};
    for (int i = 0; i < 3; i++) {
        CHECK(grads[i] != NULL);
        if (!grads[i]) continue;
        CHECK(tensor_get_dtype(grads[i]) == dt);
        CHECK(tensor_is_contiguous(grads[i]));
        CHECK_VALUES(grads[i], expect[i], counts[i], tol, tol);
    }
    free(xv); free(wv); free(gyv); free(gx); free(gw); free(gb);
}

TEST(conv2d_backward_matches_naive_sums) {
    /* x shape, w shape, stride, padding, dilation, groups */
    const int64_t cases[][12] = {
        {2, 4, 6, 5, 4, 2, 3, 3, 2, 1, 1, 2},  /* groups 2, stride 2 */
        {2, 3, 7, 7, 5, 3, 3, 2, 1, 2, 2, 1},  /* dilation 2, 3x2 kernel */
        {1, 2, 5, 5, 6, 2, 1, 1, 1, 0, 1, 1},  /* 1x1 direct path */
        {3, 1, 6, 6, 8, 1, 3, 3, 1, 1, 1, 1},  /* K = 9 > Og = 8 and the transposed orientation's neighbour */
        {2, 1, 5, 4, 12, 1, 2, 2, 1, 1, 1, 1}, /* K = 4 < Og = 12 */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const int64_t *q = cases[i];
        for (int ref = 0; ref < 2; ref++) {
            check_conv2d_grads(TENSOR_F64, ref != 0, q, q + 4, (int)q[8], (int)q[9], (int)q[10], (int)q[11], 1e-12);
            check_conv2d_grads(TENSOR_F32, ref != 0, q, q + 4, (int)q[8], (int)q[9], (int)q[10], (int)q[11], 2e-5);
        }
    }
    /* f16 and bf16 compute in f32 and return their own dtype */
    check_conv2d_grads(TENSOR_F16, false, (const int64_t[]){1, 2, 5, 5}, (const int64_t[]){3, 2, 3, 3}, 1, 1, 1, 1, 2e-2);
    check_conv2d_grads(TENSOR_BF16, false, (const int64_t[]){2, 2, 5, 4}, (const int64_t[]){2, 1, 3, 3}, 2, 1, 1, 2, 8e-2);
}

/* ---- fast path against the reference path ---- */

/* Runs conv (2 or 1 spatial dims) forward and backward with a fixed gradient in the current mode;
   returns the gradients of x, w, b (kept in the caller's scope). */
static void conv_grads(int sd, tensor *x0, tensor *w0, tensor *b0, tensor *gy, int s, int p, int d, int groups, bool reference, tensor **out) {
    tensor *x = leaf_of(tensor_clone(x0)), *w = leaf_of(tensor_clone(w0)), *b = b0 ? leaf_of(tensor_clone(b0)) : NULL;
    bool was = tensor_set_reference_kernels(reference);
    tensor *y = sd == 2 ? tensor_conv2d(x, w, b, s, p, d, groups) : tensor_conv1d(x, w, b, s, p, d, groups);
    int rc = y ? tensor_backward_with(y, gy) : -1;
    tensor_set_reference_kernels(was);
    CHECK_MSG(rc == 0, "conv backward failed: %s", tensor_last_error() ? tensor_last_error() : "?");
    out[0] = rc ? NULL : tensor_grad(x);
    out[1] = rc ? NULL : tensor_grad(w);
    out[2] = rc || !b ? NULL : tensor_grad(b);
}

static void check_fast_vs_reference(int sd, tensor *x, tensor *w, tensor *b, int s, int p, int d, int groups, double tol) {
    tensor *y = sd == 2 ? tensor_conv2d(x, w, b, s, p, d, groups) : tensor_conv1d(x, w, b, s, p, d, groups);
    CHECK(y != NULL);
    if (!y) return;
    tensor *gy = test_random(tensor_get_dtype(x), tensor_ndim(y), tensor_shape(y), -1, 1);
    tensor *fast[3], *ref[3];
    conv_grads(sd, x, w, b, gy, s, p, d, groups, false, fast);
    conv_grads(sd, x, w, b, gy, s, p, d, groups, true, ref);
    for (int i = 0; i < 3; i++) {
        if (i == 2 && !b) { CHECK(fast[2] == NULL && ref[2] == NULL); continue; }
        CHECK(fast[i] != NULL && ref[i] != NULL);
        if (!fast[i] || !ref[i]) continue;
        double *e = test_values(ref[i]);
        CHECK(tensor_get_dtype(fast[i]) == tensor_get_dtype(x) && tensor_get_dtype(ref[i]) == tensor_get_dtype(x));
        CHECK_VALUES(fast[i], e, tensor_numel(ref[i]), tol, tol);
        free(e);
    }
}

TEST(conv_backward_fast_matches_reference) {
    /* the Fashion-MNIST CNN's convolutions (batch 4): 1 -> 32 and 32 -> 64, 3x3, padding 1 */
    check_fast_vs_reference(2, test_random(TENSOR_F32, TENSOR_SHAPE(4, 1, 28, 28), 0, 1), test_random(TENSOR_F32, TENSOR_SHAPE(32, 1, 3, 3), -0.3, 0.3),
                            test_random(TENSOR_F32, TENSOR_SHAPE(32), -0.3, 0.3), 1, 1, 1, 1, 1e-4);
    check_fast_vs_reference(2, test_random(TENSOR_F32, TENSOR_SHAPE(4, 32, 14, 14), 0, 1), test_random(TENSOR_F32, TENSOR_SHAPE(64, 32, 3, 3), -0.06, 0.06),
                            test_random(TENSOR_F32, TENSOR_SHAPE(64), -0.06, 0.06), 1, 1, 1, 1, 1e-4);
    /* strides, dilation, groups, unbatched, non-contiguous, f64 */
    check_fast_vs_reference(2, test_random(TENSOR_F64, TENSOR_SHAPE(2, 6, 9, 8), -1, 1), test_random(TENSOR_F64, TENSOR_SHAPE(9, 2, 3, 2), -1, 1),
                            test_random(TENSOR_F64, TENSOR_SHAPE(9), -1, 1), 2, 2, 2, 3, 1e-12);
    check_fast_vs_reference(2, test_random(TENSOR_F32, TENSOR_SHAPE(3, 6, 6), -1, 1), test_random(TENSOR_F32, TENSOR_SHAPE(4, 3, 3, 3), -1, 1), NULL, 1, 0, 1, 1, 1e-5);
    check_fast_vs_reference(2, tensor_transpose(test_random(TENSOR_F32, TENSOR_SHAPE(2, 3, 7, 5), -1, 1), 2, 3), tensor_transpose(test_random(TENSOR_F32, TENSOR_SHAPE(4, 3, 2, 3), -1, 1), 2, 3),
                            test_random(TENSOR_F32, TENSOR_SHAPE(4), -1, 1), 1, 1, 1, 1, 1e-5);
    check_fast_vs_reference(2, test_random(TENSOR_F32, TENSOR_SHAPE(2, 8, 5, 5), -1, 1), test_random(TENSOR_F32, TENSOR_SHAPE(16, 2, 1, 1), -1, 1), NULL, 1, 0, 1, 4, 1e-5);
    check_fast_vs_reference(1, test_random(TENSOR_F32, TENSOR_SHAPE(3, 4, 17), -1, 1), test_random(TENSOR_F32, TENSOR_SHAPE(6, 2, 5), -1, 1), test_random(TENSOR_F32, TENSOR_SHAPE(6), -1, 1), 2, 2, 2, 2, 1e-5);
    check_fast_vs_reference(1, test_random(TENSOR_F64, TENSOR_SHAPE(4, 9), -1, 1), test_random(TENSOR_F64, TENSOR_SHAPE(3, 4, 3), -1, 1), NULL, 1, 1, 1, 1, 1e-12);
    check_fast_vs_reference(2, test_random(TENSOR_BF16, TENSOR_SHAPE(2, 2, 5, 5), -1, 1), test_random(TENSOR_BF16, TENSOR_SHAPE(4, 2, 3, 3), -1, 1), test_random(TENSOR_BF16, TENSOR_SHAPE(4), -1, 1), 1, 1, 1, 1, 3e-2);
    /* a GEMM large enough to cross its blocks: K = 288, P = 400 */
    check_fast_vs_reference(2, test_random(TENSOR_F32, TENSOR_SHAPE(1, 32, 20, 20), -1, 1), test_random(TENSOR_F32, TENSOR_SHAPE(40, 32, 3, 3), -0.1, 0.1), NULL, 1, 1, 1, 1, 1e-4);
}

TEST(conv_backward_edge_cases) {
    /* a zero-size batch: empty grad of x, zero grads of w and b */
    tensor *x = leaf_of(tensor_zeros(TENSOR_SHAPE(0, 3, 5, 5), TENSOR_F32));
    tensor *w = leaf_of(test_random(TENSOR_F32, TENSOR_SHAPE(2, 3, 3, 3), -1, 1)), *b = leaf_of(test_random(TENSOR_F32, TENSOR_SHAPE(2), -1, 1));
    tensor *y = tensor_conv2d(x, w, b, 1, 0, 1, 1);
    CHECK(tensor_backward_with(y, tensor_ones(tensor_ndim(y), tensor_shape(y), TENSOR_F32)) == 0);
    CHECK_SHAPE(tensor_grad(x), 4, (const int64_t[]){0, 3, 5, 5});
    CHECK_VALUES(tensor_grad(b), ((const double[]){0, 0}), 2, 0, 0);
    double zeros[54] = {0};
    CHECK_VALUES(tensor_grad(w), zeros, 54, 0, 0);
    /* a non-contiguous, expanded gradient (from sum) and a gradient of another dtype */
    tensor *x2 = leaf_of(test_random(TENSOR_F32, TENSOR_SHAPE(1, 2, 4, 4), -1, 1)), *w2 = leaf_of(test_random(TENSOR_F32, TENSOR_SHAPE(3, 2, 3, 3), -1, 1));
    CHECK(tensor_backward(tensor_sum_all(tensor_conv2d(x2, w2, NULL, 1, 1, 1, 1))) == 0);
    double *xv = test_values(x2), *wv = test_values(w2), ones[48], gx[32], gw[54], gb[3];
    for (int i = 0; i < 48; i++) ones[i] = 1;
    naive_conv2d_grads(xv, 1, 2, 4, 4, wv, 3, 3, 3, ones, 4, 4, 1, 1, 1, 1, gx, gw, gb);
    CHECK_VALUES(tensor_grad(x2), gx, 32, 1e-5, 1e-5);
    CHECK_VALUES(tensor_grad(w2), gw, 54, 1e-5, 1e-5);
    free(xv); free(wv);
    /* a second derivative through the fused kernel is refused cleanly */
    tensor *x3 = test_leaf(TENSOR_SHAPE(1, 1, 3, 3), -1, 1), *w3 = test_leaf(TENSOR_SHAPE(1, 1, 2, 2), -1, 1);
    tensor *L = tensor_sum_all(tensor_conv2d(x3, w3, NULL, 1, 0, 1, 1)), *g3[1] = {NULL};
    tensor_clear_error();
    CHECK(tensor_autograd_grad(1, &L, NULL, 1, &x3, g3, true) != 0);
    CHECK(tensor_last_error() != NULL);
    tensor_clear_error();
}

/* ---- pooling gradients written out ---- */

/* Backward through max_pool2d(x) with gradient gy; the gradient of x must equal expect. */
static void check_pool_grad(bool is_max, tensor_dtype dt, int nd, const int64_t *shape, const double *xv, int k, int s, int p, const double *gyv, const double *expect) {
    tensor *x = leaf_of(test_tensor(dt, nd, shape, xv));
    tensor *y = is_max ? tensor_max_pool2d(x, k, s, p) : tensor_avg_pool2d(x, k, s, p);
    CHECK(y != NULL);
    if (!y) return;
    tensor *gy = test_tensor(dt, tensor_ndim(y), tensor_shape(y), gyv);
    CHECK(tensor_backward_with(y, gy) == 0);
    tensor *g = tensor_grad(x);
    CHECK(g && tensor_get_dtype(g) == dt && tensor_is_contiguous(g));
    CHECK_VALUES(g, expect, test_numel(nd, shape), 1e-6, 1e-6);
}

TEST(max_pool2d_backward_picks_the_forwards_position) {
    tensor_dtype dts[] = {TENSOR_F32, TENSOR_F64, TENSOR_F16, TENSOR_BF16};
    for (int d = 0; d < 4; d++) {
        /* ties: the first maximum in row-major order of its window takes the whole gradient */
        check_pool_grad(true, dts[d], TENSOR_SHAPE(1, 1, 2, 4), (const double[]){1, 3, 2, 2, 3, 0, 2, 1}, 2, 2, 0, (const double[]){5, 7},
                        (const double[]){0, 5, 7, 0, 0, 0, 0, 0});
        /* overlapping windows accumulate; stride 1 */
        check_pool_grad(true, dts[d], TENSOR_SHAPE(1, 3, 3), (const double[]){0, 1, 0, 1, 9, 1, 0, 1, 0}, 2, 1, 0, (const double[]){1, 2, 3, 4},
                        (const double[]){0, 0, 0, 0, 10, 0, 0, 0, 0});
        /* padding never takes the gradient, even where every real element is negative */
        check_pool_grad(true, dts[d], TENSOR_SHAPE(1, 1, 2, 2), (const double[]){-4, -3, -2, -1}, 2, 2, 1, (const double[]){1, 2, 3, 4},
                        (const double[]){1, 2, 3, 4});
        /* NaN: the first NaN of the window, as the forward picks it */
        check_pool_grad(true, dts[d], TENSOR_SHAPE(1, 1, 2, 2), (const double[]){1, NAN, 5, NAN}, 2, 2, 0, (const double[]){3},
                        (const double[]){0, 3, 0, 0});
        /* a window of -inf: its first element */
        check_pool_grad(true, dts[d], TENSOR_SHAPE(1, 1, 2, 2), (const double[]){-INFINITY, -INFINITY, -INFINITY, -INFINITY}, 2, 2, 0,
                        (const double[]){2}, (const double[]){2, 0, 0, 0});
        /* avg: g / k^2 to every element of the window, padding counted in the divisor */
        check_pool_grad(false, dts[d], TENSOR_SHAPE(1, 1, 2, 2), (const double[]){1, 2, 3, 4}, 2, 2, 1, (const double[]){4, 8, 12, 16},
                        (const double[]){1, 2, 3, 4});
        check_pool_grad(false, dts[d], TENSOR_SHAPE(1, 3, 3), (const double[]){0, 0, 0, 0, 0, 0, 0, 0, 0}, 2, 1, 0, (const double[]){4, 8, 12, 16},
                        (const double[]){1, 3, 2, 4, 10, 6, 3, 7, 4});
    }
}

/* Pool gradients of a larger random case against a naive loop (max with distinct values). */
TEST(pool2d_backward_matches_naive_loops) {
    const int combos[][3] = {{2, 2, 0}, {3, 2, 1}, {3, 1, 1}, {2, 3, 1}};
    for (int mx = 0; mx < 2; mx++)
        for (size_t ci = 0; ci < sizeof combos / sizeof combos[0]; ci++) {
            int k = combos[ci][0], s = combos[ci][1], p = combos[ci][2];
            const int64_t N = 2, C = 3, H = 9, W = 8;
            tensor *x = distinct_leaf(TENSOR_SHAPE(N, C, H, W));
            tensor *xs = tensor_transpose(x, 2, 3); /* pool the [N, C, W, H] view */
            tensor *y = mx ? tensor_max_pool2d(xs, k, s, p) : tensor_avg_pool2d(xs, k, s, p);
            const int64_t *ys = tensor_shape(y);
            tensor *gy = test_random(TENSOR_F64, 4, ys, -1, 1);
            CHECK(tensor_backward_with(y, gy) == 0);
            double *xv = test_values(xs), *gv = test_values(gy);
            double *e = (double *)calloc((size_t)(N * C * H * W), sizeof(double)); /* in the [N, C, W, H] layout */
            for (int64_t nc = 0; nc < N * C; nc++)
                for (int64_t i = 0; i < ys[2]; i++)
                    for (int64_t j = 0; j < ys[3]; j++) {
                        double g = gv[(nc * ys[2] + i) * ys[3] + j], best = -INFINITY;
                        int64_t at = -1;
                        for (int u = 0; u < k; u++)
                            for (int v = 0; v < k; v++) {
                                int64_t h = i * s - p + u, w = j * s - p + v;
                                if (h < 0 || h >= W || w < 0 || w >= H) continue;
                                int64_t q = (nc * W + h) * H + w;
                                if (!mx) e[q] += g / (k * k);
                                else if (xv[q] > best) { best = xv[q]; at = q; }
                            }
                        if (mx) e[at] += g;
                    }
            CHECK_VALUES(tensor_transpose(tensor_grad(x), 2, 3), e, N * C * H * W, 1e-12, 1e-12);
            free(xv); free(gv); free(e);
        }
}
