/* The fast paths of the CNN training step (generator/parts/pool.h, nn.h, conv.h): max pooling with
   non-overlapping windows (forward and backward), the fused relu backward and the convolution's
   fast path, each against the reference path (tensor_set_reference_kernels) bit for bit where the
   arithmetic is the same, and against loops written out here in double. */
#include "test.h"

/* ---- helpers ---- */

/* Values with many ties (-0 against +0 among them), infinities and, when nan_every > 0, a NaN
   every nan_every elements on average. */
static tensor *tie_tensor(tensor_dtype dt, int nd, const int64_t *shape, int nan_every) {
    static const double pool[] = {-1, -0.0, 0.0, 1, 2, 0.5, -INFINITY, INFINITY, -2};
    int64_t n = test_numel(nd, shape);
    double *v = (double *)malloc(sizeof(double) * (size_t)(n + 1));
    for (int64_t i = 0; i < n; i++) {
        int r = (int)test_uniform(0, 9);
        v[i] = pool[r < 9 ? r : 8];
        if (nan_every > 0 && test_uniform(0, nan_every) < 1) v[i] = NAN;
    }
    tensor *t = test_tensor(dt, nd, shape, v);
    free(v);
    return t;
}

/* The window (i, j) of a [H, W] plane: its pick as tensor_max_pool2d defines it (the first NaN,
   else the first maximum in row-major order; padding never), as an index into the plane. */
static int64_t naive_pick(const double *x, int64_t H, int64_t W, int k, int s, int p, int64_t i, int64_t j) {
    int64_t at = -1;
    for (int u = 0; u < k; u++)
        for (int v = 0; v < k; v++) {
            int64_t h = i * s - p + u, w = j * s - p + v;
            if (h < 0 || h >= H || w < 0 || w >= W) continue;
            int64_t q = h * W + w;
            if (at < 0) { at = q; continue; }
            double m = x[at], c = x[q];
            if (m == m && (c != c || c > m)) at = q;
        }
    return at;
}

/* max_pool2d forward and backward of x with gradient gy in the current mode: y and gx. */
static void pool_run(tensor *x0, int k, int s, int p, tensor *gy, bool reference, tensor **y, tensor **gx) {
    tensor *x = tensor_set_requires_grad(tensor_clone(x0), true);
    bool was = tensor_set_reference_kernels(reference);
    *y = tensor_max_pool2d(x, k, s, p);
    int rc = *y && gy ? tensor_backward_with(*y, gy) : -1;
    tensor_set_reference_kernels(was);
    CHECK_MSG(*y != NULL, "max_pool2d failed: %s", tensor_last_error() ? tensor_last_error() : "?");
    CHECK_MSG(!gy || rc == 0, "backward failed: %s", tensor_last_error() ? tensor_last_error() : "?");
    *gx = rc == 0 ? tensor_grad(x) : NULL;
}

/* The fast path against the reference (bit for bit: same comparisons, same picks) and against
   naive loops, forward and backward, for x [N, C, H, W] (or a view of one). */
static void check_max_pool(tensor *x, int k, int s, int p) {
    tensor_dtype dt = tensor_get_dtype(x);
    tensor *yf, *gxf, *yr, *gxr;
    tensor *probe = tensor_max_pool2d(x, k, s, p);
    CHECK(probe != NULL);
    if (!probe) return;
    tensor *gy = test_random(dt, tensor_ndim(probe), tensor_shape(probe), -1, 1);
    pool_run(x, k, s, p, gy, false, &yf, &gxf);
    pool_run(x, k, s, p, gy, true, &yr, &gxr);
    CHECK_MSG(test_same_bits(yf, yr), "forward k %d s %d p %d of %s: fast and reference differ", k, s, p, tensor_get_dtype(x) == TENSOR_F32 ? "f32" : "f64");
    CHECK_MSG(test_same_bits(gxf, gxr), "backward k %d s %d p %d: fast and reference differ", k, s, p);
    if (!yf || !gxf) return;
    if (s == 0) s = k; /* stride 0: the kernel size */
    /* naive loops on the planes */
    int nd = tensor_ndim(x);
    const int64_t *xs = tensor_shape(x), *ys = tensor_shape(yf);
    int64_t planes = test_numel(nd - 2, xs), H = xs[nd - 2], W = xs[nd - 1], oH = ys[nd - 2], oW = ys[nd - 1];
    double *xv = test_values(x), *gv = test_values(gy);
    double *ey = (double *)malloc(sizeof(double) * (size_t)(planes * oH * oW + 1));
    double *eg = (double *)calloc((size_t)(planes * H * W + 1), sizeof(double));
    for (int64_t pl = 0; pl < planes; pl++)
        for (int64_t i = 0; i < oH; i++)
            for (int64_t j = 0; j < oW; j++) {
                int64_t at = naive_pick(xv + pl * H * W, H, W, k, s, p, i, j);
                ey[(pl * oH + i) * oW + j] = xv[pl * H * W + at];
                eg[pl * H * W + at] += gv[(pl * oH + i) * oW + j];
            }
    double *yv = test_values(yf), *gxv = test_values(gxf);
    int64_t bad = 0;
    for (int64_t i = 0; i < planes * oH * oW; i++) bad += memcmp(&yv[i], &ey[i], sizeof(double)) != 0 && !(yv[i] != yv[i] && ey[i] != ey[i]);
    CHECK_MSG(bad == 0, "forward k %d s %d p %d: %lld values differ from the naive loop", k, s, p, (long long)bad);
    bad = 0;
    for (int64_t i = 0; i < planes * H * W; i++) bad += fabs(gxv[i] - eg[i]) > 1e-6 * (1 + fabs(eg[i])) || (gxv[i] == 0 && signbit(gxv[i]));
    CHECK_MSG(bad == 0, "backward k %d s %d p %d: %lld values differ from the naive loop", k, s, p, (long long)bad);
    free(xv); free(gv); free(ey); free(eg); free(yv); free(gxv);
}

/* ---- max pooling with non-overlapping windows ---- */

TEST(max_pool2d_fast_matches_reference_and_naive) {
    tensor_dtype dts[] = {TENSOR_F32, TENSOR_F64};
    for (int d = 0; d < 2; d++) {
        /* every width around the 8-window blocks of the vector path, even and odd, and odd heights */
        for (int64_t W = 2; W <= 37; W++) {
            int64_t H = 2 + W % 5;
            check_max_pool(test_random(dts[d], TENSOR_SHAPE(2, 3, H, W), -1, 1), 2, 2, 0);
            check_max_pool(tie_tensor(dts[d], TENSOR_SHAPE(1, 2, H, W), W % 3 ? 0 : 5), 2, 0, 0);
        }
        /* the CNN's two poolings (batch 2), and larger non-overlapping windows */
        check_max_pool(test_random(dts[d], TENSOR_SHAPE(2, 32, 28, 28), -1, 1), 2, 2, 0);
        check_max_pool(test_random(dts[d], TENSOR_SHAPE(2, 64, 14, 14), -1, 1), 2, 2, 0);
        check_max_pool(tie_tensor(dts[d], TENSOR_SHAPE(2, 3, 11, 10), 7), 3, 3, 0);
        check_max_pool(tie_tensor(dts[d], TENSOR_SHAPE(1, 2, 9, 13), 0), 4, 4, 0);
        check_max_pool(test_random(dts[d], TENSOR_SHAPE(2, 2, 7, 7), -1, 1), 1, 1, 0);
        /* unbatched; views: transposed, sliced with a step, expanded */
        check_max_pool(tie_tensor(dts[d], TENSOR_SHAPE(3, 9, 18), 4), 2, 2, 0);
        check_max_pool(tensor_transpose(tie_tensor(dts[d], TENSOR_SHAPE(2, 2, 17, 12), 6), 2, 3), 2, 2, 0);
        check_max_pool(tensor_slice(test_random(dts[d], TENSOR_SHAPE(1, 2, 9, 40), -1, 1), 3, 1, 40, 2), 2, 2, 0);
        check_max_pool(tensor_expand(test_random(dts[d], TENSOR_SHAPE(1, 1, 6, 20), -1, 1), TENSOR_SHAPE(2, 3, 6, 20)), 2, 2, 0);
        /* the other poolings keep the per-window loops (threaded): still equal to the reference */
        check_max_pool(tie_tensor(dts[d], TENSOR_SHAPE(2, 3, 9, 11), 9), 3, 2, 1);
        check_max_pool(tie_tensor(dts[d], TENSOR_SHAPE(2, 3, 9, 11), 9), 2, 1, 0);
    }
    /* f16 and bf16 compute in f32 through the same kernels */
    check_max_pool(tie_tensor(TENSOR_F16, TENSOR_SHAPE(2, 3, 10, 19), 6), 2, 2, 0);
    check_max_pool(test_random(TENSOR_BF16, TENSOR_SHAPE(2, 3, 10, 19), -1, 1), 2, 2, 0);
}

/* Windows written out: ties between -0 and +0 keep the first, the first NaN wins (and takes the
   gradient), a window of -inf picks its first element, the last odd row and column get 0. */
TEST(max_pool2d_fast_ties_nan_and_edges) {
    tensor_dtype dts[] = {TENSOR_F32, TENSOR_F64};
    for (int d = 0; d < 2; d++) {
        /* 3 x 5 input, 2x2 windows: rows 0-1, columns 0-1 and 2-3 (row 2 and column 4 are left out) */
        const double xv[15] = {-0.0, 0.0, 1, NAN, 9, 0.0, -0.0, NAN, 1, 9, 9, 9, 9, 9, 9};
        tensor *x = tensor_set_requires_grad(test_tensor(dts[d], TENSOR_SHAPE(1, 1, 3, 5), xv), true);
        tensor *y = tensor_max_pool2d(x, 2, 2, 0);
        CHECK_SHAPE(y, 4, (const int64_t[]){1, 1, 1, 2});
        double *yv = test_values(y);
        CHECK(yv[0] == 0 && signbit(yv[0])); /* -0 first, +0 does not replace it */
        CHECK(yv[1] != yv[1]);
        free(yv);
        CHECK(tensor_backward_with(y, test_tensor(dts[d], TENSOR_SHAPE(1, 1, 1, 2), (const double[]){-0.0, 4})) == 0);
        double *g = test_values(tensor_grad(x));
        const double eg[15] = {0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0};
        for (int i = 0; i < 15; i++) CHECK_MSG(g[i] == eg[i] && !signbit(g[i]), "gx[%d] = %g", i, g[i]); /* 0 + -0 is +0 */
        free(g);
        /* -inf windows: the first element; a 2x2 window with the max last */
        tensor *z = tensor_set_requires_grad(test_tensor(dts[d], TENSOR_SHAPE(2, 2, 2), (const double[]){-INFINITY, -INFINITY, -INFINITY, -INFINITY, 1, 2, 3, 4}), true);
        tensor *yz = tensor_max_pool2d(z, 2, 0, 0);
        CHECK_VALUES(yz, ((const double[]){-INFINITY, 4}), 2, 0, 0);
        CHECK(tensor_backward_with(yz, test_tensor(dts[d], TENSOR_SHAPE(2, 1, 1), (const double[]){5, 6})) == 0);
        CHECK_VALUES(tensor_grad(z), ((const double[]){5, 0, 0, 0, 0, 0, 0, 6}), 8, 0, 0);
    }
}

/* ---- relu backward ---- */

/* The gradient of relu(x) for the output gradient gy: by tensor_backward_with (the fused kernel,
   or under reference kernels the op-composed formula), or with create_graph (always composed). */
static tensor *relu_grad(tensor *x0, tensor *gy, int mode) {
    tensor *x = tensor_set_requires_grad(tensor_clone(x0), true);
    bool was = tensor_set_reference_kernels(mode == 1);
    tensor *y = tensor_relu(x), *g = NULL;
    int rc;
    if (mode == 2) rc = tensor_autograd_grad(1, &y, &gy, 1, &x, &g, true);
    else if ((rc = tensor_backward_with(y, gy)) == 0) g = tensor_grad(x);
    tensor_set_reference_kernels(was);
    CHECK_MSG(rc == 0 && g != NULL, "relu backward (mode %d) failed: %s", mode, tensor_last_error() ? tensor_last_error() : "?");
    return g;
}

/* fused, reference and create_graph gradients are the same bits, and x <= 0 ? 0 : gy elementwise */
static void check_relu_grad(tensor *x, tensor *gy) {
    tensor *g[3];
    for (int m = 0; m < 3; m++) g[m] = relu_grad(x, gy, m);
    CHECK_MSG(test_same_bits(g[0], g[1]), "relu backward: fused and reference differ (%lld elements)", (long long)tensor_numel(x));
    CHECK_MSG(test_same_bits(g[0], g[2]), "relu backward: fused and create_graph differ (%lld elements)", (long long)tensor_numel(x));
    if (!g[0]) return;
    CHECK(tensor_get_dtype(g[0]) == tensor_get_dtype(x));
    tensor *gye = tensor_contiguous(tensor_expand(gy, tensor_ndim(x), tensor_shape(x)));
    double *xv = test_values(x), *gv = test_values(gye), *r = test_values(g[0]);
    int64_t n = tensor_numel(x), bad = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = xv[i] <= 0 ? 0.0 : gv[i];
        bad += memcmp(&e, &r[i], sizeof e) != 0 && !(e != e && r[i] != r[i]);
    }
    CHECK_MSG(bad == 0, "relu backward: %lld of %lld values differ from x <= 0 ? 0 : g", (long long)bad, (long long)n);
    free(xv); free(gv); free(r);
}

TEST(relu_backward_fused_matches_formula) {
    tensor_dtype dts[] = {TENSOR_F32, TENSOR_F64};
    for (int d = 0; d < 2; d++) {
        /* special values on both sides: NaN x passes g, inf / NaN g at x <= 0 gives +0, -0 g stays -0 */
        const double xv[12] = {NAN, -0.0, 0.0, -1, 2, INFINITY, -INFINITY, 1e-30, -1e-30, NAN, 3, -3};
        const double gv[12] = {5, INFINITY, NAN, -INFINITY, -0.0, 7, NAN, -2, 1, NAN, INFINITY, -0.0};
        check_relu_grad(test_tensor(dts[d], TENSOR_SHAPE(12), xv), test_tensor(dts[d], TENSOR_SHAPE(12), gv));
        /* lengths around the vector width, and large enough to split over the threads */
        const int64_t lens[] = {1, 3, 4, 7, 8, 9, 15, 16, 17, 33, 100003};
        for (size_t i = 0; i < sizeof lens / sizeof lens[0]; i++)
            check_relu_grad(tie_tensor(dts[d], 1, &lens[i], 9), test_random(dts[d], 1, &lens[i], -2, 2));
        /* the CNN's shape; a non-contiguous x; a broadcast gradient (from a sum) */
        check_relu_grad(test_random(dts[d], TENSOR_SHAPE(2, 32, 28, 28), -1, 1), test_random(dts[d], TENSOR_SHAPE(2, 32, 28, 28), -1, 1));
        check_relu_grad(tensor_transpose(test_random(dts[d], TENSOR_SHAPE(5, 6, 7), -1, 1), 0, 2), test_random(dts[d], TENSOR_SHAPE(7, 6, 5), -1, 1));
        check_relu_grad(test_random(dts[d], TENSOR_SHAPE(4, 9), -1, 1), tensor_expand(test_random(dts[d], TENSOR_SHAPE(1, 9), -1, 1), TENSOR_SHAPE(4, 9)));
    }
    /* a gradient the engine made itself (of the mul after relu) is written over in place: the
       same values, and the caller's tensors untouched */
    for (int d = 0; d < 2; d++) {
        tensor *x0 = tie_tensor(dts[d], TENSOR_SHAPE(3, 50), 7), *c = test_random(dts[d], TENSOR_SHAPE(3, 50), -2, 2), *gy = test_random(dts[d], TENSOR_SHAPE(3, 50), -1, 1);
        tensor *cc = tensor_clone(c), *gyc = tensor_clone(gy), *g[2];
        for (int m = 0; m < 2; m++) {
            tensor *x = tensor_set_requires_grad(tensor_clone(x0), true);
            bool was = tensor_set_reference_kernels(m == 1);
            CHECK(tensor_backward_with(tensor_mul(tensor_relu(x), c), gy) == 0);
            tensor_set_reference_kernels(was);
            g[m] = tensor_grad(x);
        }
        CHECK_MSG(test_same_bits(g[0], g[1]), "relu backward in place: fused and reference differ");
        CHECK(test_same_bits(c, cc) && test_same_bits(gy, gyc));
        double *xv = test_values(x0), *cv = test_values(c), *gv = test_values(gy), *r = test_values(g[0]);
        int64_t bad = 0;
        for (int i = 0; i < 150; i++) {
            double e = xv[i] <= 0 ? 0.0 : (double)(dts[d] == TENSOR_F32 ? (float)(gv[i] * cv[i]) : gv[i] * cv[i]);
            bad += memcmp(&e, &r[i], sizeof e) != 0 && !(e != e && r[i] != r[i]);
        }
        CHECK_MSG(bad == 0, "relu backward in place: %lld values differ from x <= 0 ? 0 : g c", (long long)bad);
        free(xv); free(cv); free(gv); free(r);
    }
    /* f16 and bf16 take the composed formula */
    check_relu_grad(tie_tensor(TENSOR_F16, TENSOR_SHAPE(3, 11), 5), test_random(TENSOR_F16, TENSOR_SHAPE(3, 11), -2, 2));
    check_relu_grad(tie_tensor(TENSOR_BF16, TENSOR_SHAPE(3, 11), 5), test_random(TENSOR_BF16, TENSOR_SHAPE(3, 11), -2, 2));
}

/* ---- convolution: the fast path (AVX2 im2col / col2im for stride 1, per-image bias, per-image
   bias-gradient sums, scratch slots per thread) against the reference loops ---- */

/* Forward and all three gradients of conv (2 or 1 spatial dims) in the current mode. */
static void conv_all(int sd, tensor *x0, tensor *w0, tensor *b0, tensor *gy, int s, int p, int d, int groups, bool reference, tensor **out) {
    tensor *x = tensor_set_requires_grad(tensor_clone(x0), true), *w = tensor_set_requires_grad(tensor_clone(w0), true);
    tensor *b = b0 ? tensor_set_requires_grad(tensor_clone(b0), true) : NULL;
    bool was = tensor_set_reference_kernels(reference);
    tensor *y = sd == 2 ? tensor_conv2d(x, w, b, s, p, d, groups) : tensor_conv1d(x, w, b, s, p, d, groups);
    int rc = y ? tensor_backward_with(y, gy) : -1;
    tensor_set_reference_kernels(was);
    CHECK_MSG(rc == 0, "conv failed: %s", tensor_last_error() ? tensor_last_error() : "?");
    out[0] = y;
    out[1] = rc ? NULL : tensor_grad(x);
    out[2] = rc ? NULL : tensor_grad(w);
    out[3] = rc || !b ? NULL : tensor_grad(b);
}

static void check_conv(int sd, tensor *x, tensor *w, tensor *b, int s, int p, int d, int groups, double tol) {
    tensor *probe = sd == 2 ? tensor_conv2d(x, w, b, s, p, d, groups) : tensor_conv1d(x, w, b, s, p, d, groups);
    CHECK_MSG(probe != NULL, "conv failed: %s", tensor_last_error() ? tensor_last_error() : "?");
    if (!probe) return;
    tensor *gy = test_random(tensor_get_dtype(x), tensor_ndim(probe), tensor_shape(probe), -1, 1);
    tensor *fast[4], *ref[4];
    conv_all(sd, x, w, b, gy, s, p, d, groups, false, fast);
    conv_all(sd, x, w, b, gy, s, p, d, groups, true, ref);
    const char *names[4] = {"y", "gx", "gw", "gb"};
    for (int i = 0; i < 4; i++) {
        if (i == 3 && !b) continue;
        CHECK(fast[i] != NULL && ref[i] != NULL);
        if (!fast[i] || !ref[i]) continue;
        CHECK_SHAPE(fast[i], tensor_ndim(ref[i]), tensor_shape(ref[i]));
        double *e = test_values(ref[i]), *v = test_values(fast[i]), scale = 0;
        int64_t n = tensor_numel(ref[i]), bad = 0;
        for (int64_t k = 0; k < n; k++) scale = fmax(scale, fabs(e[k]));
        for (int64_t k = 0; k < n; k++) bad += !(fabs(v[k] - e[k]) <= tol * (1 + scale));
        CHECK_MSG(bad == 0, "%dd conv %s (stride %d, padding %d, dilation %d, groups %d): %lld of %lld differ from the reference", sd, names[i], s, p, d,
                  groups, (long long)bad, (long long)n);
        free(e);
        free(v);
    }
}

/* Winograd F(4x4, 3x3) (3x3, stride 1, f32, both channel counts >= 8) rounds more than the direct
   sum (its transforms hold entries up to 8, and 1/6): measured here, the largest difference is
   between 3.5e-6 and 5e-6 times (1 + the largest reference value), in the input gradient; a wrong
   sign or index in a transform gives differences of order 1 */
#define WINO_TOL 5e-5

/* Whether this process runs the AVX2 nn kernels (Winograd among them): an x86 CPU with AVX2 and
   FMA, unless TENSOR_SIMD names scalar or sse2 */
static bool test_nn_avx2(void) {
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
    const char *level = getenv("TENSOR_SIMD");
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && !(level && (!strcmp(level, "scalar") || !strcmp(level, "sse2")));
#else
    return false;
#endif
}

TEST(conv_fast_matches_reference) {
    /* 3x3 stride 1 (the AVX2 im2col / col2im) at widths around the 8-column chunks, paddings 0-2 */
    for (int64_t W = 8; W <= 19; W++)
        for (int p = 0; p <= 2; p++) {
            if (W + 2 * p - 2 < 8) continue;
            check_conv(2, test_random(TENSOR_F32, TENSOR_SHAPE(2, 3, 5 + W % 4, W), -1, 1), test_random(TENSOR_F32, TENSOR_SHAPE(4, 3, 3, 3), -1, 1),
                       test_random(TENSOR_F32, TENSOR_SHAPE(4), -1, 1), 1, p, 1, 1, 1e-5);
        }
    /* dilation, kernels wider than tall and the reverse, padding larger than the kernel reach,
       1x1 with padding (not the direct path), groups, no bias */
    check_conv(2, test_random(TENSOR_F32, TENSOR_SHAPE(3, 4, 9, 13), -1, 1), test_random(TENSOR_F32, TENSOR_SHAPE(6, 2, 3, 2), -1, 1), NULL, 1, 2, 2, 2, 1e-5);
    check_conv(2, test_random(TENSOR_F32, TENSOR_SHAPE(2, 2, 7, 16), -1, 1), test_random(TENSOR_F32, TENSOR_SHAPE(3, 2, 2, 5), -1, 1),
               test_random(TENSOR_F32, TENSOR_SHAPE(3), -1, 1), 1, 3, 3, 1, 1e-5);
    check_conv(2, test_random(TENSOR_F32, TENSOR_SHAPE(2, 3, 6, 9), -1, 1), test_random(TENSOR_F32, TENSOR_SHAPE(5, 3, 1, 1), -1, 1),
               test_random(TENSOR_F32, TENSOR_SHAPE(5), -1, 1), 1, 1, 1, 1, 1e-5);
    check_conv(2, test_random(TENSOR_F32, TENSOR_SHAPE(1, 4, 10, 12), -1, 1), test_random(TENSOR_F32, TENSOR_SHAPE(8, 1, 5, 3), -1, 1),
               test_random(TENSOR_F32, TENSOR_SHAPE(8), -1, 1), 1, 2, 1, 4, 1e-5);
    /* the CNN's two convolutions, with more images than threads (spread) and one image (threaded
       GEMMs); the second is Winograd's */
    check_conv(2, test_random(TENSOR_F32, TENSOR_SHAPE(6, 1, 28, 28), 0, 1), test_random(TENSOR_F32, TENSOR_SHAPE(32, 1, 3, 3), -0.3, 0.3),
               test_random(TENSOR_F32, TENSOR_SHAPE(32), -0.3, 0.3), 1, 1, 1, 1, 1e-5);
    check_conv(2, test_random(TENSOR_F32, TENSOR_SHAPE(5, 32, 14, 14), 0, 1), test_random(TENSOR_F32, TENSOR_SHAPE(64, 32, 3, 3), -0.06, 0.06),
               test_random(TENSOR_F32, TENSOR_SHAPE(64), -0.06, 0.06), 1, 1, 1, 1, WINO_TOL);
    check_conv(2, test_random(TENSOR_F32, TENSOR_SHAPE(1, 32, 14, 14), 0, 1), test_random(TENSOR_F32, TENSOR_SHAPE(64, 32, 3, 3), -0.06, 0.06),
               test_random(TENSOR_F32, TENSOR_SHAPE(64), -0.06, 0.06), 1, 1, 1, 1, WINO_TOL);
    /* unbatched, and a non-contiguous input */
    check_conv(2, test_random(TENSOR_F32, TENSOR_SHAPE(3, 11, 10), -1, 1), test_random(TENSOR_F32, TENSOR_SHAPE(2, 3, 3, 3), -1, 1),
               test_random(TENSOR_F32, TENSOR_SHAPE(2), -1, 1), 1, 1, 1, 1, 1e-5);
    check_conv(2, tensor_transpose(test_random(TENSOR_F32, TENSOR_SHAPE(2, 3, 12, 9), -1, 1), 2, 3), test_random(TENSOR_F32, TENSOR_SHAPE(4, 3, 3, 3), -1, 1),
               test_random(TENSOR_F32, TENSOR_SHAPE(4), -1, 1), 1, 1, 1, 1, 1e-5);
    /* conv1d (H = 1) with stride 1 takes the same rows; stride 2 and f64 the loops */
    check_conv(1, test_random(TENSOR_F32, TENSOR_SHAPE(3, 4, 21), -1, 1), test_random(TENSOR_F32, TENSOR_SHAPE(6, 2, 4), -1, 1),
               test_random(TENSOR_F32, TENSOR_SHAPE(6), -1, 1), 1, 2, 2, 2, 1e-5);
    check_conv(1, test_random(TENSOR_F32, TENSOR_SHAPE(3, 4, 21), -1, 1), test_random(TENSOR_F32, TENSOR_SHAPE(6, 4, 3), -1, 1),
               test_random(TENSOR_F32, TENSOR_SHAPE(6), -1, 1), 2, 1, 1, 1, 1e-5);
    check_conv(2, test_random(TENSOR_F64, TENSOR_SHAPE(3, 3, 9, 10), -1, 1), test_random(TENSOR_F64, TENSOR_SHAPE(4, 3, 3, 3), -1, 1),
               test_random(TENSOR_F64, TENSOR_SHAPE(4), -1, 1), 1, 1, 1, 1, 1e-12);
    /* f16 computes in f32 */
    check_conv(2, test_random(TENSOR_F16, TENSOR_SHAPE(2, 2, 8, 10), -1, 1), test_random(TENSOR_F16, TENSOR_SHAPE(3, 2, 3, 3), -1, 1),
               test_random(TENSOR_F16, TENSOR_SHAPE(3), -1, 1), 1, 1, 1, 1, 3e-3);
}

/* ---- convolution: Winograd F(4x4, 3x3) ---- */
TEST(conv_winograd_matches_reference) {
    /* output sizes odd and even, narrower than a vector of tiles (Wo < 16), wider than one (Wo > 16,
       several groups of 8 tiles), a single row or column of outputs; paddings 0, 1, 2 */
    static const int64_t HW[][2] = {{14, 14}, {7, 9}, {5, 33}, {20, 3}, {3, 18}, {1, 4}, {4, 1}, {10, 17}};
    for (size_t k = 0; k < sizeof HW / sizeof HW[0]; k++)
        for (int p = 0; p <= 2; p++) {
            int64_t H = HW[k][0] + 2 - 2 * p, W = HW[k][1] + 2 - 2 * p; /* output HW[k] */
            if (H < 3 - 2 * p || W < 3 - 2 * p || H < 1 || W < 1) continue;
            int64_t N = 1 + (int64_t)(k % 4) * 2, C = 16 + (int64_t)(k % 3) * 5, O = 16 + (int64_t)(k % 2) * 9;
            check_conv(2, test_random(TENSOR_F32, TENSOR_SHAPE(N, C, H, W), -1, 1), test_random(TENSOR_F32, TENSOR_SHAPE(O, C, 3, 3), -0.2, 0.2),
                       k % 2 ? NULL : test_random(TENSOR_F32, TENSOR_SHAPE(O), -1, 1), 1, p, 1, 1, WINO_TOL);
        }
    /* more images than one block (the blocks spread over the threads), unbatched, a strided input,
       and one thread */
    check_conv(2, test_random(TENSOR_F32, TENSOR_SHAPE(13, 16, 14, 14), 0, 1), test_random(TENSOR_F32, TENSOR_SHAPE(24, 16, 3, 3), -0.1, 0.1),
               test_random(TENSOR_F32, TENSOR_SHAPE(24), -0.1, 0.1), 1, 1, 1, 1, WINO_TOL);
    check_conv(2, test_random(TENSOR_F32, TENSOR_SHAPE(20, 9, 11), -1, 1), test_random(TENSOR_F32, TENSOR_SHAPE(17, 20, 3, 3), -0.2, 0.2),
               test_random(TENSOR_F32, TENSOR_SHAPE(17), -1, 1), 1, 1, 1, 1, WINO_TOL);
    check_conv(2, tensor_transpose(test_random(TENSOR_F32, TENSOR_SHAPE(3, 16, 12, 9), -1, 1), 2, 3), test_random(TENSOR_F32, TENSOR_SHAPE(16, 16, 3, 3), -0.2, 0.2),
               test_random(TENSOR_F32, TENSOR_SHAPE(16), -1, 1), 1, 2, 1, 1, WINO_TOL);
    /* empty: no images; no input rows, the output from padding alone (the im2col path takes both) */
    check_conv(2, test_random(TENSOR_F32, TENSOR_SHAPE(0, 16, 8, 8), -1, 1), test_random(TENSOR_F32, TENSOR_SHAPE(16, 16, 3, 3), -0.2, 0.2),
               test_random(TENSOR_F32, TENSOR_SHAPE(16), -1, 1), 1, 1, 1, 1, WINO_TOL);
    check_conv(2, test_random(TENSOR_F32, TENSOR_SHAPE(2, 16, 0, 5), -1, 1), test_random(TENSOR_F32, TENSOR_SHAPE(16, 16, 3, 3), -0.2, 0.2),
               test_random(TENSOR_F32, TENSOR_SHAPE(16), -1, 1), 1, 2, 1, 1, WINO_TOL);
    /* the bias gradient alone (a weight that needs none): the sums of gy over images and pixels */
    {
        tensor *x = tensor_set_requires_grad(test_random(TENSOR_F32, TENSOR_SHAPE(3, 16, 9, 10), -1, 1), true);
        tensor *w = test_random(TENSOR_F32, TENSOR_SHAPE(20, 16, 3, 3), -0.2, 0.2);
        tensor *b = tensor_set_requires_grad(test_random(TENSOR_F32, TENSOR_SHAPE(20), -1, 1), true);
        tensor *y = tensor_conv2d(x, w, b, 1, 1, 1, 1);
        tensor *gy = test_random(TENSOR_F32, TENSOR_SHAPE(3, 20, 9, 10), -1, 1);
        CHECK(y && tensor_backward_with(y, gy) == 0);
        tensor *want = tensor_sum_dims(gy, 3, (const int[]){0, 2, 3}, false);
        double *e = test_values(want), *v = test_values(tensor_grad(b));
        for (int o = 0; o < 20; o++) CHECK_NEAR(v[o], e[o], 1e-4, 1e-5);
        free(e);
        free(v);
    }
    /* from 8 channels each way (Winograd), and at 7 (im2col) */
    for (int64_t C = 7; C <= 8; C++) {
        int64_t before = tensor_test_path_count("conv_winograd");
        check_conv(2, test_random(TENSOR_F32, TENSOR_SHAPE(2, C, 9, 12), -1, 1), test_random(TENSOR_F32, TENSOR_SHAPE(C + 3, C, 3, 3), -0.3, 0.3),
                   test_random(TENSOR_F32, TENSOR_SHAPE(C + 3), -1, 1), 1, 1, 1, 1, WINO_TOL);
        CHECK_MSG((tensor_test_path_count("conv_winograd") > before) == (C == 8 && test_nn_avx2()), "%d channels: Winograd %s", (int)C,
                  C == 8 ? "not taken" : "taken below its threshold");
    }
    int threads = tensor_get_num_threads();
    tensor_set_num_threads(1);
    check_conv(2, test_random(TENSOR_F32, TENSOR_SHAPE(9, 32, 14, 14), 0, 1), test_random(TENSOR_F32, TENSOR_SHAPE(64, 32, 3, 3), -0.06, 0.06),
               test_random(TENSOR_F32, TENSOR_SHAPE(64), -0.06, 0.06), 1, 1, 1, 1, WINO_TOL);
    tensor_set_num_threads(threads);
}

/* ---- the fast paths are taken ---- */

/* The comparisons above pass whether a fast path runs or the reference does in its place (an nn
   kernel compiled out by a guard macro went unnoticed that way). Here one small CNN training step
   must run each path the current vector level has: the AVX2 ones on x86 CPUs with AVX2 unless
   TENSOR_SIMD names scalar or sse2 (then none of them), the fused activation backward and the
   optimizer's vector kernel everywhere. */
TEST(fast_paths_are_taken) {
    static const char *const paths[] = {"conv_winograd", "conv_im2col_simd", "conv_smallk", "maxpool_fast", "relu_backward_fused",
                                        "unary_backward_fused", "optim_simd"};
    const char *level = getenv("TENSOR_SIMD");
    bool avx2 = test_nn_avx2();
    bool want[7] = {avx2, avx2, avx2, avx2, avx2, true, true};
    int64_t before[7];
    for (int i = 0; i < 7; i++) before[i] = tensor_test_path_count(paths[i]);
    CHECK(tensor_test_path_count("no_such_path") == -1);
    tensor_scope_begin();
    tensor *w1 = tensor_set_requires_grad(test_random(TENSOR_F32, TENSOR_SHAPE(32, 1, 3, 3), -0.3, 0.3), true);
    tensor *w2 = tensor_set_requires_grad(test_random(TENSOR_F32, TENSOR_SHAPE(32, 32, 3, 3), -0.06, 0.06), true);
    tensor *x = test_random(TENSOR_F32, TENSOR_SHAPE(2, 1, 14, 14), 0, 1); /* 16 x 16 would miss conv_smallk: see j->smallk */
    tensor *h = tensor_max_pool2d(tensor_relu(tensor_conv2d(x, w1, NULL, 1, 1, 1, 1)), 2, 2, 0);
    tensor *y = tensor_tanh(tensor_conv2d(h, w2, NULL, 1, 1, 1, 1));
    tensor_optim *opt = tensor_optim_adamw(2, (tensor *[]){w1, w2}, 1e-3, 0.9, 0.999, 1e-8, 0.01);
    CHECK(y && opt && tensor_backward(tensor_sum_all(y)) == 0 && tensor_optim_step(opt) == 0);
    tensor_optim_free(opt);
    tensor_scope_end();
    for (int i = 0; i < 7; i++) {
        int64_t now = tensor_test_path_count(paths[i]);
        CHECK_MSG(before[i] >= 0 && (now > before[i]) == want[i], "%s: taken %lld times in the step, expected %s (TENSOR_SIMD=%s)", paths[i],
                  (long long)(now - before[i]), want[i] ? "some" : "none", level ? level : "unset");
    }
}

/* ---- every vector level ---- */

#if defined(__linux__) && (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
/* The kernels above pick AVX-512, AVX2 or plain loops like the elementwise kernels (TENSOR_SIMD
   names a lower level): the tests of this file run again in a child process for each level below
   the CPU's best, so each path is checked against the reference on this machine. */
TEST(nn_fast_paths_at_each_simd_level) {
    if (getenv("TENSOR_SIMD")) return; /* a child */
    if (test_cpu_runs("avx512")) test_run_at_simd_level(__FILE__, __LINE__, "avx2", "", "test_nn_fast", NULL);
    if (test_cpu_runs("avx2")) test_run_at_simd_level(__FILE__, __LINE__, "sse2", "", "test_nn_fast", NULL);
}
#endif
