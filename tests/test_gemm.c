/* Tests of the packed GEMM (generator/parts/gemm.h) through the ops that use it: matmul on every
   transposition case and on strided views, at sizes on both sides of every micro-tile edge (AVX-512
   12 x 32 f32, 12 x 16 f64, 4 x 4 unpacked; AVX2 and portable 6 x 16 f32, 6 x 8 f64, 3 x 4
   unpacked) and cache-block boundary (MC 240 / 120 and 264 / 192, KC 256, NC 4096), on 1 and 2
   threads, f32 and f64; batched matmul (folded, per batch, over threads), linear and the
   convolutions against the reference kernels; the kernels called directly (edges, layouts, add).
   Expected values are plain double loops. Every test of this file also runs at each SIMD level
   the CPU has (gemm_at_simd_level_*), so each family of kernels meets them. */
#include "test.h"

/* ---- helpers ---- */

static double gemm_unit(tensor_dtype dt) { return dt == TENSOR_F32 ? ldexp(1.0, -24) : ldexp(1.0, -53); }

/* n values in [-1, 1), exactly representable in dt. */
static double *gemm_values(tensor_dtype dt, int64_t n) {
    double *v = (double *)malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) {
        double x = test_uniform(-1, 1);
        v[i] = dt == TENSOR_F32 ? (double)(float)x : x;
    }
    return v;
}

/* A tensor of such values. */
static tensor *gemm_tensor(tensor_dtype dt, int nd, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= shape[i];
    double *v = gemm_values(dt, n);
    tensor *t = test_tensor(dt, nd, shape, v);
    free(v);
    return t;
}

/* The layouts an operand of logical shape [r, c] comes in (vals row-major):
   0: contiguous; 1: the transpose of a contiguous [c, r] (unit stride down the columns);
   2: rows 2 apart and columns 3 apart inside a larger tensor (no unit stride at all). */
static tensor *gemm_operand(tensor_dtype dt, int64_t r, int64_t c, int layout, const double *vals) {
    if (layout == 0) {
        int64_t s[2] = {r, c};
        return test_tensor(dt, 2, s, vals);
    }
    if (layout == 1) {
        int64_t s[2] = {c, r};
        double *t = (double *)malloc(sizeof(double) * (size_t)(r * c + 1));
        for (int64_t i = 0; i < r; i++)
            for (int64_t j = 0; j < c; j++) t[j * r + i] = vals[i * c + j];
        tensor *base = test_tensor(dt, 2, s, t);
        free(t);
        return tensor_transpose(base, 0, 1);
    }
    int64_t s[2] = {2 * r, 3 * c};
    double *t = (double *)malloc(sizeof(double) * (size_t)(6 * r * c + 1));
    for (int64_t i = 0; i < 6 * r * c; i++) t[i] = 7; /* values that must not leak into the product */
    for (int64_t i = 0; i < r; i++)
        for (int64_t j = 0; j < c; j++) t[(2 * i) * 3 * c + 3 * j] = vals[i * c + j];
    tensor *base = test_tensor(dt, 2, s, t);
    free(t);
    return tensor_slice(tensor_slice(base, 0, 0, 2 * r, 2), 1, 0, 3 * c, 3);
}

/* got (any layout) against sum_p a[i, p] b[p, j] in double, element by element, within the
   rounding bound of a k-term dot product in dt: (k + 4) u sum_p |a[i, p] b[p, j]|. Returns the
   number of elements out of bounds. */
static int64_t gemm_compare(const char *file, int line, tensor *got, tensor_dtype dt, int64_t batches, int64_t m, int64_t n, int64_t k,
                            const double *a, int64_t a_bstride, const double *b, int64_t b_bstride) {
    double *g = test_values(got);
    int64_t bad = 0;
    double u = gemm_unit(dt);
    for (int64_t q = 0; q < batches; q++)
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < n; j++) {
                double e = 0, bound = 0;
                for (int64_t p = 0; p < k; p++) {
                    double t = a[q * a_bstride + i * k + p] * b[q * b_bstride + p * n + j];
                    e += t;
                    bound += fabs(t);
                }
                double v = g[(q * m + i) * n + j];
                if (!(fabs(v - e) <= (double)(k + 4) * u * bound + 1e-300)) {
                    if (bad < 3)
                        test_fail(file, line, "[%lld, %lld, %lld] of a %lldx%lldx%lld product: %.17g, expected %.17g", (long long)q, (long long)i,
                                  (long long)j, (long long)m, (long long)k, (long long)n, v, e);
                    bad++;
                }
            }
    free(g);
    return bad;
}
#define GEMM_COMPARE(got, dt, batches, m, n, k, a, abs_, b, bbs) gemm_compare(__FILE__, __LINE__, got, dt, batches, m, n, k, a, abs_, b, bbs)

/* One product C[m, n] = A[m, k] @ B[k, n] with A in layout la and B in layout lb. */
static void gemm_case(tensor_dtype dt, int64_t m, int64_t n, int64_t k, int la, int lb) {
    double *av = gemm_values(dt, m * k), *bv = gemm_values(dt, k * n);
    tensor *a = gemm_operand(dt, m, k, la, av), *b = gemm_operand(dt, k, n, lb, bv);
    tensor *c = tensor_matmul(a, b);
    CHECK(c != NULL);
    if (c) {
        int64_t shape[2] = {m, n};
        CHECK_SHAPE(c, 2, shape);
        CHECK(tensor_get_dtype(c) == dt);
        if (GEMM_COMPARE(c, dt, 1, m, n, k, av, 0, bv, 0))
            test_fail(__FILE__, __LINE__, "%s m=%lld n=%lld k=%lld layouts %d/%d threads %d", dt == TENSOR_F32 ? "f32" : "f64", (long long)m,
                      (long long)n, (long long)k, la, lb, tensor_get_num_threads());
    }
    free(av);
    free(bv);
}

/* Sizes on both sides of the micro-tile edges (6 or 12 rows; 16 or 32 f32 / 8 or 16 f64 columns;
   3 x 4 or 4 x 4 and the vector length along k for the unpacked path) and of the cache blocks (MC = 264 / 192, 240 / 120 rows,
   KC = 256, NC = 4096 columns), small and large enough to thread (split over n when n >= m, else
   over m; a small shared operand packed by both threads, or not). */
static const int64_t gemm_sizes[][3] = {
    {1, 1, 1}, {1, 17, 5}, {5, 1, 7}, {5, 7, 3}, {6, 16, 1}, {7, 17, 2}, {6, 8, 9}, {12, 32, 4},
    {15, 15, 15}, {16, 6, 17}, {17, 33, 63}, {63, 64, 65}, {64, 65, 64}, {65, 63, 33}, {6, 16, 255},
    {7, 15, 256}, {13, 9, 257}, {5, 24, 513}, {9, 40, 127}, {11, 23, 128}, {10, 7, 129}, {257, 17, 30},
    {263, 20, 12}, {264, 31, 5}, {191, 20, 10}, {192, 17, 9}, {193, 33, 5}, {265, 9, 11}, {530, 40, 40},
    {40, 530, 40}, {7, 4097, 3}, {40, 8200, 3}, {120, 200, 300}, {300, 45, 100}, {1, 600, 900},
    {600, 1, 900}, {2, 2, 100000}, {270, 280, 20}, {300, 290, 460}, {64, 256, 784}, {40, 300, 1100},
    {200, 50, 300}, {24, 64, 8}, {25, 31, 9}, {11, 47, 20}, {239, 20, 10}, {240, 33, 9}, {241, 17, 5}, {119, 40, 10},
    {121, 24, 7}, {5, 8, 16}, {9, 9, 100},
};

static void gemm_sweep(tensor_dtype dt) {
    int saved = tensor_get_num_threads();
    for (int threads = 1; threads <= 2; threads++) {
        tensor_set_num_threads(threads);
        for (size_t s = 0; s < sizeof gemm_sizes / sizeof gemm_sizes[0]; s++)
            for (int la = 0; la < 2; la++)
                for (int lb = 0; lb < 2; lb++) {
                    tensor_scope_begin();
                    gemm_case(dt, gemm_sizes[s][0], gemm_sizes[s][1], gemm_sizes[s][2], la, lb);
                    tensor_scope_end();
                }
    }
    tensor_set_num_threads(saved);
}

TEST(gemm_f32_all_transpositions_and_edges) { gemm_sweep(TENSOR_F32); }
TEST(gemm_f64_all_transpositions_and_edges) { gemm_sweep(TENSOR_F64); }

/* Operands with no unit stride go through the general packing loops. */
TEST(gemm_strided_operands) {
    int saved = tensor_get_num_threads();
    static const int64_t sizes[][3] = {{1, 1, 1}, {7, 17, 5}, {6, 16, 8}, {33, 65, 70}, {70, 20, 300}, {130, 150, 40}};
    tensor_dtype dts[2] = {TENSOR_F32, TENSOR_F64};
    for (int threads = 1; threads <= 2; threads++) {
        tensor_set_num_threads(threads);
        for (int d = 0; d < 2; d++)
            for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
                for (int la = 0; la < 3; la++)
                    for (int lb = 0; lb < 3; lb++)
                        if (la == 2 || lb == 2) gemm_case(dts[d], sizes[s][0], sizes[s][1], sizes[s][2], la, lb);
    }
    tensor_set_num_threads(saved);
}

/* k = 0: the product of [m, 0] and [0, n] is zeros (and a 0-row or 0-column product is empty). */
TEST(gemm_empty_k) {
    tensor_dtype dts[2] = {TENSOR_F32, TENSOR_F64};
    for (int d = 0; d < 2; d++) {
        tensor *a = tensor_ones(TENSOR_SHAPE(5, 0), dts[d]), *b = tensor_ones(TENSOR_SHAPE(0, 17), dts[d]);
        tensor *c = tensor_matmul(a, b);
        double z[5 * 17] = {0};
        CHECK_SHAPE(c, TENSOR_SHAPE(5, 17));
        CHECK_VALUES(c, z, 5 * 17, 0, 0);
        tensor *ct = tensor_matmul(tensor_transpose(tensor_ones(TENSOR_SHAPE(0, 7), dts[d]), 0, 1), tensor_transpose(tensor_ones(TENSOR_SHAPE(3, 0), dts[d]), 0, 1));
        double z2[7 * 3] = {0};
        CHECK_SHAPE(ct, TENSOR_SHAPE(7, 3));
        CHECK_VALUES(ct, z2, 7 * 3, 0, 0);
        CHECK_SHAPE(tensor_matmul(tensor_ones(TENSOR_SHAPE(0, 4), dts[d]), tensor_ones(TENSOR_SHAPE(4, 9), dts[d])), TENSOR_SHAPE(0, 9));
        CHECK_SHAPE(tensor_matmul(tensor_ones(TENSOR_SHAPE(3, 4), dts[d]), tensor_ones(TENSOR_SHAPE(4, 0), dts[d])), TENSOR_SHAPE(3, 0));
    }
}

/* Batched products: [B, T, K] @ [K, N] (batches fold into one GEMM), its transposed-view variant,
   [B, M, K] @ [B, K, N] (one GEMM per batch: small ones spread over threads, large ones threaded
   inside), and batch broadcasting [2, 1, M, K] @ [3, K, N]. */
TEST(gemm_batched) {
    int saved = tensor_get_num_threads();
    tensor_dtype dts[2] = {TENSOR_F32, TENSOR_F64};
    for (int threads = 1; threads <= 2; threads++) {
        tensor_set_num_threads(threads);
        for (int d = 0; d < 2; d++) {
            tensor_dtype dt = dts[d];
            static const int64_t shapes[][4] = {{3, 5, 7, 9}, {4, 33, 70, 20}, {3, 150, 60, 170}, {2, 150, 60, 170}, {6, 1, 40, 30}};
            for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
                tensor_scope_begin();
                int64_t B = shapes[s][0], M = shapes[s][1], K = shapes[s][2], N = shapes[s][3];
                double *av = gemm_values(dt, B * M * K), *bv = gemm_values(dt, B * K * N);
                tensor *a = test_tensor(dt, TENSOR_SHAPE(B, M, K), av);
                tensor *b2 = test_tensor(dt, TENSOR_SHAPE(K, N), bv);
                tensor *b3 = test_tensor(dt, TENSOR_SHAPE(B, K, N), bv);
                GEMM_COMPARE(tensor_matmul(a, b2), dt, B, M, N, K, av, M * K, bv, 0);  /* folded */
                GEMM_COMPARE(tensor_matmul(a, b3), dt, B, M, N, K, av, M * K, bv, K * N); /* per batch */
                /* a as the transpose of [B, K, M]: its batches do not fold */
                double *at = (double *)malloc(sizeof(double) * (size_t)(B * M * K));
                for (int64_t q = 0; q < B; q++)
                    for (int64_t i = 0; i < M; i++)
                        for (int64_t p = 0; p < K; p++) at[(q * K + p) * M + i] = av[(q * M + i) * K + p];
                tensor *atv = tensor_transpose(test_tensor(dt, TENSOR_SHAPE(B, K, M), at), 1, 2);
                GEMM_COMPARE(tensor_matmul(atv, b2), dt, B, M, N, K, av, M * K, bv, 0);
                GEMM_COMPARE(tensor_matmul(atv, tensor_transpose(tensor_contiguous(tensor_transpose(b3, 1, 2)), 1, 2)), dt, B, M, N, K, av, M * K,
                             bv, K * N);
                free(at);
                free(av);
                free(bv);
                tensor_scope_end();
            }
            /* [2, 1, M, K] @ [3, K, N] -> [2, 3, M, N] */
            tensor_scope_begin();
            int64_t M = 13, K = 40, N = 21;
            double *av = gemm_values(dt, 2 * M * K), *bv = gemm_values(dt, 3 * K * N);
            tensor *c = tensor_matmul(test_tensor(dt, TENSOR_SHAPE(2, 1, M, K), av), test_tensor(dt, TENSOR_SHAPE(3, K, N), bv));
            CHECK_SHAPE(c, TENSOR_SHAPE(2, 3, M, N));
            for (int64_t i = 0; i < 2; i++)
                for (int64_t j = 0; j < 3; j++)
                    GEMM_COMPARE(tensor_select(tensor_select(c, 0, i), 0, j), dt, 1, M, N, K, av + i * M * K, 0, bv + j * K * N, 0);
            /* one row per batch ([B, 1, K] through an unsqueeze of a [B, K] view) folds too */
            tensor *rows = tensor_unsqueeze(tensor_slice(test_tensor(dt, TENSOR_SHAPE(2, M * K), av), 1, 0, K, 1), 1);
            GEMM_COMPARE(tensor_matmul(rows, test_tensor(dt, TENSOR_SHAPE(K, N), bv)), dt, 2, 1, N, K, av, M * K, bv, 0);
            free(av);
            free(bv);
            tensor_scope_end();
        }
    }
    tensor_set_num_threads(saved);
}

/* The same products with tensor_set_reference_kernels(true) (one double dot product per element)
   and false (the packed GEMM) agree to the GEMM's rounding bound: matmul on transposed and
   strided views, batched, 1-D operands, and linear. */
static tensor *gemm_both_paths(tensor *(*f)(tensor *, tensor *), tensor *x, tensor *y, tensor **ref) {
    bool was = tensor_set_reference_kernels(true);
    *ref = f(x, y);
    tensor_set_reference_kernels(false);
    tensor *fast = f(x, y);
    tensor_set_reference_kernels(was);
    return fast;
}
static tensor *gemm_linear_nobias(tensor *x, tensor *w) { return tensor_linear(x, w, NULL); }

static void gemm_agree(const char *file, int line, tensor *fast, tensor *ref, int64_t k, tensor_dtype dt) {
    if (!fast || !ref) { test_fail(file, line, "a product failed: %s", tensor_last_error()); return; }
    int64_t n = tensor_numel(ref);
    if (tensor_numel(fast) != n) { test_fail(file, line, "sizes differ"); return; }
    double *f = test_values(fast), *r = test_values(ref);
    /* inputs are in [-1, 1): each |term| <= 1 */
    double tol = (double)(k + 4) * gemm_unit(dt) * (double)k + 1e-300;
    for (int64_t i = 0; i < n; i++)
        if (!(fabs(f[i] - r[i]) <= tol)) { test_fail(file, line, "element %lld: fast %.17g, reference %.17g", (long long)i, f[i], r[i]); break; }
    free(f);
    free(r);
}
#define GEMM_AGREE(fast, ref, k, dt) gemm_agree(__FILE__, __LINE__, fast, ref, k, dt)

TEST(gemm_matches_reference_kernels) {
    int saved = tensor_get_num_threads();
    tensor_dtype dts[2] = {TENSOR_F32, TENSOR_F64};
    for (int threads = 1; threads <= 2; threads++) {
        tensor_set_num_threads(threads);
        for (int d = 0; d < 2; d++) {
            tensor_dtype dt = dts[d];
            static const int64_t sizes[][3] = {{1, 1, 1}, {7, 17, 300}, {64, 256, 38}, {97, 33, 129}, {130, 70, 90}};
            for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
                for (int la = 0; la < 3; la++)
                    for (int lb = 0; lb < 3; lb++) {
                        tensor_scope_begin();
                        int64_t m = sizes[s][0], n = sizes[s][1], k = sizes[s][2];
                        double *av = gemm_values(dt, m * k), *bv = gemm_values(dt, k * n);
                        tensor *ref, *fast = gemm_both_paths(tensor_matmul, gemm_operand(dt, m, k, la, av), gemm_operand(dt, k, n, lb, bv), &ref);
                        GEMM_AGREE(fast, ref, k, dt);
                        /* linear: x [m, k] with weight [n, k] (w's transpose is the GEMM's B) */
                        double *wv = gemm_values(dt, n * k);
                        fast = gemm_both_paths(gemm_linear_nobias, gemm_operand(dt, m, k, la, av), gemm_operand(dt, n, k, lb, wv), &ref);
                        GEMM_AGREE(fast, ref, k, dt);
                        free(av);
                        free(bv);
                        free(wv);
                        tensor_scope_end();
                    }
            tensor_scope_begin();
            tensor *ref, *fast;
            /* batched with broadcasting, 3-D linear input, matrix-vector and vector-matrix */
            tensor *x = gemm_tensor(dt, TENSOR_SHAPE(2, 3, 9, 50));
            tensor *y = gemm_tensor(dt, TENSOR_SHAPE(3, 50, 20));
            fast = gemm_both_paths(tensor_matmul, x, y, &ref);
            GEMM_AGREE(fast, ref, 50, dt);
            fast = gemm_both_paths(tensor_matmul, tensor_transpose(y, 1, 2), tensor_transpose(x, 2, 3), &ref);
            GEMM_AGREE(fast, ref, 20, dt);
            tensor *w = gemm_tensor(dt, TENSOR_SHAPE(31, 50));
            fast = gemm_both_paths(gemm_linear_nobias, x, w, &ref);
            GEMM_AGREE(fast, ref, 50, dt);
            tensor *v = gemm_tensor(dt, TENSOR_SHAPE(50));
            fast = gemm_both_paths(tensor_matmul, x, v, &ref);
            GEMM_AGREE(fast, ref, 50, dt);
            fast = gemm_both_paths(tensor_matmul, v, y, &ref);
            GEMM_AGREE(fast, ref, 50, dt);
            tensor_scope_end();
        }
    }
    tensor_set_num_threads(saved);
}

/* conv2d / conv1d forward and backward (im2col + GEMM, spread over images) against the reference
   loops, on shapes whose GEMMs are small (spread over the batch) and large (threaded inside). */
static tensor *gemm_conv_loss(tensor *x, tensor *w, tensor *b, int stride, int pad, int groups, bool one_d) {
    tensor *y = one_d ? tensor_conv1d(x, w, b, stride, pad, 1, groups) : tensor_conv2d(x, w, b, stride, pad, 1, groups);
    /* a weighted sum, so every output element has its own gradient */
    tensor *wts = tensor_sin(tensor_arange(0, (double)tensor_numel(y), 1, tensor_get_dtype(y)));
    return tensor_sum_all(tensor_mul(y, tensor_reshape(wts, tensor_ndim(y), tensor_shape(y))));
}

TEST(gemm_conv_matches_reference_kernels) {
    int saved = tensor_get_num_threads();
    /* N, C, H, W, O, kernel, stride, pad, groups, 1-D */
    static const int cases[][10] = {
        {4, 1, 12, 12, 8, 3, 1, 1, 1, 0}, {3, 6, 9, 11, 4, 3, 2, 0, 2, 0}, {2, 16, 20, 20, 32, 3, 1, 1, 1, 0},
        {5, 8, 7, 7, 24, 1, 1, 0, 1, 0},  {3, 4, 1, 40, 6, 5, 1, 2, 1, 1}, {1, 20, 30, 30, 40, 3, 1, 1, 1, 0},
        {16, 4, 16, 16, 16, 3, 1, 1, 1, 0}, {12, 8, 1, 200, 16, 3, 1, 1, 1, 1}, {9, 16, 10, 10, 16, 1, 1, 0, 2, 0},
    };
    tensor_dtype dts[2] = {TENSOR_F32, TENSOR_F64};
    for (int threads = 1; threads <= 2; threads++) {
        tensor_set_num_threads(threads);
        for (int d = 0; d < 2; d++)
            for (size_t s = 0; s < sizeof cases / sizeof cases[0]; s++) {
                tensor_scope_begin();
                const int *q = cases[s];
                tensor_dtype dt = dts[d];
                bool one_d = q[9] != 0;
                int64_t xs[4] = {q[0], q[1], q[2], q[3]}, ws[4] = {q[4], q[1] / q[8], q[5], q[5]};
                tensor *x = one_d ? gemm_tensor(dt, TENSOR_SHAPE(q[0], q[1], q[3])) : gemm_tensor(dt, 4, xs);
                tensor *w = one_d ? gemm_tensor(dt, TENSOR_SHAPE(q[4], q[1] / q[8], q[5])) : gemm_tensor(dt, 4, ws);
                tensor *b = gemm_tensor(dt, TENSOR_SHAPE(q[4]));
                tensor *grads[2][3], *outs[2];
                for (int path = 0; path < 2; path++) {
                    bool was = tensor_set_reference_kernels(path == 0);
                    tensor *xl = tensor_set_requires_grad(tensor_clone(x), true), *wl = tensor_set_requires_grad(tensor_clone(w), true);
                    tensor *bl = tensor_set_requires_grad(tensor_clone(b), true);
                    CHECK(tensor_backward(gemm_conv_loss(xl, wl, bl, q[6], q[7], q[8], one_d)) == 0);
                    grads[path][0] = tensor_clone(tensor_grad(xl));
                    grads[path][1] = tensor_clone(tensor_grad(wl));
                    grads[path][2] = tensor_clone(tensor_grad(bl));
                    outs[path] = one_d ? tensor_conv1d(x, w, b, q[6], q[7], 1, q[8]) : tensor_conv2d(x, w, b, q[6], q[7], 1, q[8]);
                    tensor_set_reference_kernels(was);
                }
                /* each output element: a (C/groups * k * k)-term dot product plus the bias; each
                   gradient element: at most N * oH * oW * O terms of size <= 1 */
                GEMM_AGREE(outs[1], outs[0], (int64_t)(q[1] / q[8]) * q[5] * q[5] + 1, dt);
                for (int i = 0; i < 3; i++) GEMM_AGREE(grads[1][i], grads[0][i], 40000, dt);
                tensor_scope_end();
            }
    }
    tensor_set_num_threads(saved);
}

/* ---- the kernels directly, at every SIMD level ---- */

/* C (m x n, layout lc: 0 row-major with padded rows, 1 column-major) (+)= A (la) B (lb) (0 row-,
   1 column-major, padded) on raw buffers through test_gemm_strided, against a double loop:
   |got - want| <= (k + 5) u (sum_p |a b| + |C0|). Edge tiles of every kernel family (12 x 32 and
   12 x 16 AVX-512, 6 x 16 and 6 x 8 AVX2 and portable, 4 x 4 and 3 x 4 unpacked), k = 1, k across
   the KC blocks, the transposed narrow-n case, add on a filled C. */
static void gemm_raw_case(bool f64, int64_t m, int64_t n, int64_t k, int la, int lb, int lc, bool add) {
    int64_t lda = (la ? m : k) + 3, ldb = (lb ? k : n) + 5, ldc = (lc ? m : n) + 2;
    int64_t asz = (la ? k : m) * lda, bsz = (lb ? n : k) * ldb, csz = (lc ? n : m) * ldc;
    size_t es = f64 ? sizeof(double) : sizeof(float);
    double *a = gemm_values(f64 ? TENSOR_F64 : TENSOR_F32, asz), *b = gemm_values(f64 ? TENSOR_F64 : TENSOR_F32, bsz);
    double *c0 = gemm_values(f64 ? TENSOR_F64 : TENSOR_F32, csz);
    void *A = malloc(es * (size_t)asz), *B = malloc(es * (size_t)bsz), *C = malloc(es * (size_t)csz);
    for (int64_t i = 0; i < asz; i++) if (f64) ((double *)A)[i] = a[i]; else ((float *)A)[i] = (float)a[i];
    for (int64_t i = 0; i < bsz; i++) if (f64) ((double *)B)[i] = b[i]; else ((float *)B)[i] = (float)b[i];
    for (int64_t i = 0; i < csz; i++) if (f64) ((double *)C)[i] = c0[i]; else ((float *)C)[i] = (float)c0[i];
    int64_t a_rs = la ? 1 : lda, a_cs = la ? lda : 1, b_rs = lb ? 1 : ldb, b_cs = lb ? ldb : 1, c_rs = lc ? 1 : ldc, c_cs = lc ? ldc : 1;
    CHECK(test_gemm_strided(f64, m, n, k, A, a_rs, a_cs, B, b_rs, b_cs, C, c_rs, c_cs, add));
    double u = f64 ? ldexp(1.0, -53) : ldexp(1.0, -24);
    int64_t bad = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double bound, e = test_gemm_dot(k, a + i * a_rs, a_cs, b + j * b_cs, b_rs, add ? c0[i * c_rs + j * c_cs] : 0, &bound);
            int64_t at = i * c_rs + j * c_cs;
            double v = f64 ? ((double *)C)[at] : (double)((float *)C)[at];
            if (!(fabs(v - e) <= (double)(k + 5) * u * bound + 1e-300) && bad++ < 3)
                test_fail(__FILE__, __LINE__, "%s %lldx%lldx%lld layouts %d/%d/%d add %d threads %d [%lld, %lld]: %.17g, expected %.17g",
                          f64 ? "f64" : "f32", (long long)m, (long long)n, (long long)k, la, lb, lc, (int)add, tensor_get_num_threads(),
                          (long long)i, (long long)j, v, e);
        }
    /* what lies between the rows (or columns) of C is untouched */
    for (int64_t r = 0; r < (lc ? n : m); r++)
        for (int64_t x = lc ? m : n; x < ldc; x++) {
            int64_t at = r * ldc + x;
            double v = f64 ? ((double *)C)[at] : (double)((float *)C)[at];
            if (v != c0[at] && bad++ < 3) test_fail(__FILE__, __LINE__, "%lldx%lldx%lld: the padding of C was written", (long long)m, (long long)n, (long long)k);
        }
    free(a), free(b), free(c0), free(A), free(B), free(C);
}

TEST(gemm_kernels_edges_layouts_add_threads) {
    static const int64_t sizes[][3] = {
        {1, 1, 1}, {12, 32, 1}, {13, 33, 1}, {11, 31, 2}, {12, 16, 3}, {25, 17, 9}, {6, 16, 5}, {7, 9, 300}, {24, 64, 257},
        {23, 65, 513}, {4, 4, 40}, {5, 7, 130}, {64, 70, 200}, {250, 70, 40}, {241, 33, 19}, {100, 100, 100}, {3, 300, 50},
        {300, 3, 50}, {130, 9, 140}, {500, 260, 20},
    };
    int saved = tensor_get_num_threads();
    for (int threads = 1; threads <= 2; threads++) {
        tensor_set_num_threads(threads);
        for (int d = 0; d < 2; d++)
            for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
                for (int l = 0; l < 8; l++)
                    gemm_raw_case(d == 1, sizes[s][0], sizes[s][1], sizes[s][2], l & 1, (l >> 1) & 1, (l >> 2) & 1, (s + (size_t)l) % 2 == 1);
    }
    tensor_set_num_threads(saved);
}

/* tensor_build_info names the GEMM kernels the SIMD layer's choice selects: AVX-512 with avx512
   (unless built with TENSOR_NO_AVX512 or TENSOR_NO_SIMD), AVX2 with avx2, the portable ones below. */
TEST(gemm_kernel_follows_simd_level) {
    const char *simd = test_simd_level(), *gemm = strstr(tensor_build_info(), "gemm: ");
    CHECK(gemm != NULL);
    if (!gemm) return;
#if !defined(TENSOR_NO_SIMD) && (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#ifdef TENSOR_NO_AVX512
    const char *want512 = "gemm: avx2+fma 6x16 f32, avx2+fma 6x8 f64";
#else
    const char *want512 = "gemm: avx512f 12x32 f32, avx512f 12x16 f64";
#endif
    const char *want = strstr(simd, "avx512") ? want512 : strstr(simd, "avx2") ? "gemm: avx2+fma 6x16 f32, avx2+fma 6x8 f64"
                                                                                 : "gemm: portable 6x16 f32, portable 6x8 f64";
#else
    const char *want = "gemm: portable 6x16 f32, portable 6x8 f64";
#endif
    CHECK_MSG(strncmp(gemm, want, strlen(want)) == 0, "simd %s: '%.48s', expected '%s'", simd, gemm, want);
}

/* The GEMM tests of this file at each x86 level in a child process (TENSOR_SIMD=level): the level
   this process runs was covered above; one the CPU lacks is skipped, visibly. */
#if defined(__linux__) && (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
static void gemm_at_level(const char *level) {
    if (getenv("TENSOR_SIMD")) return; /* a child: it runs its own level's tests */
    if (!test_cpu_runs(level)) { test_skip_cpu("the GEMM kernels at TENSOR_SIMD=%s", level); return; }
    if (strstr(test_simd_level(), level)) return; /* this process runs at that level */
    test_run_at_simd_level(__FILE__, __LINE__, level, "", "test_gemm", NULL);
}
TEST(gemm_at_simd_level_avx512) { gemm_at_level("avx512"); }
TEST(gemm_at_simd_level_avx2) { gemm_at_level("avx2"); }
TEST(gemm_at_simd_level_sse2) { gemm_at_level("sse2"); }
#if !defined(__x86_64__) || defined(TENSOR_NO_SIMD) /* x86-64 has no scalar instance (simd.h) */
TEST(gemm_at_simd_level_scalar) { gemm_at_level("scalar"); }
#endif
#endif
