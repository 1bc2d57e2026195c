/* Tests of bf16 and f16 compute (issue 11): the GEMM on bf16 / f16 operands called directly, the
   bf16 (vdpbf16ps) kernel against a double loop over the same bf16 products (skipped, visibly,
   where the CPU lacks avx512_bf16), the f16 path (converted to f32 as it is packed) likewise;
   matmul, batched matmul, linear and conv2d on bf16 / f16 tensors, forward and backward, against
   f64 on the same (rounded) values, norm-wise; conv2d on the bf16 kernel element by element, its
   path checked (skipped, visibly, without avx512_bf16); the SIMD f16 / bf16 <-> f32 casts against the
   scalar ones. */
#include "test.h"

/* ---- helpers ---- */

static uint32_t half_bits32(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float half_from_bits32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* A value exactly representable in sd (bf16: 8 significant bits; f16: a multiple of 2^-10 in
   [-1, 1], normal or zero), and its 16-bit encoding. */
static double half_value(tensor_dtype sd, uint16_t *bits) {
    double x = test_uniform(-1, 1);
    if (sd == TENSOR_BF16) {
        uint32_t u = half_bits32((float)x) & 0xffff0000u;
        *bits = (uint16_t)(u >> 16);
        return half_from_bits32(u);
    }
    double v = floor(x * 1024) / 1024;
    if (v == 0) { *bits = 0; return 0; }
    uint32_t u = half_bits32((float)v), sign = (u >> 16) & 0x8000, e = (u >> 23) & 0xff, man = u & 0x7fffff;
    *bits = (uint16_t)(sign | (e - 112) << 10 | man >> 13);
    return v;
}

/* C (m x n, layout lc: 0 row-major with padded rows, 1 column-major) (+)= A (la) B (lb) on raw
   buffers of dtype sd into an f32 C: layouts 0 row-major, 1 column-major (both padded), 2 rows
   and columns strided (no unit stride). Against a double loop over the same products:
   |got - want| <= (k + 5) 2^-24 (sum_p |a b| + |C0|) (each product is exact in f32; what the
   padding holds must not leak into C, nor C's padding be written). */
static void half_raw_case(tensor_dtype sd, int64_t m, int64_t n, int64_t k, int la, int lb, int lc, bool add) {
    int64_t lda = (la == 1 ? m : la == 2 ? 2 * k : k) + 3, ldb = (lb == 1 ? k : lb == 2 ? 2 * n : n) + 5, ldc = (lc ? m : n) + 2;
    int64_t asz = (la == 1 ? k : m) * lda, bsz = (lb == 1 ? n : k) * ldb, csz = (lc ? n : m) * ldc;
    uint16_t *A = (uint16_t *)malloc(2 * (size_t)asz), *B = (uint16_t *)malloc(2 * (size_t)bsz);
    double *a = (double *)malloc(8 * (size_t)asz), *b = (double *)malloc(8 * (size_t)bsz), *c0 = (double *)malloc(8 * (size_t)csz);
    float *C = (float *)malloc(4 * (size_t)csz);
    for (int64_t i = 0; i < asz; i++) a[i] = half_value(sd, A + i);
    for (int64_t i = 0; i < bsz; i++) b[i] = half_value(sd, B + i);
    for (int64_t i = 0; i < csz; i++) C[i] = (float)(c0[i] = test_uniform(-1, 1));
    int64_t a_rs = la == 1 ? 1 : lda, a_cs = la == 1 ? lda : la == 2 ? 2 : 1;
    int64_t b_rs = lb == 1 ? 1 : ldb, b_cs = lb == 1 ? ldb : lb == 2 ? 2 : 1;
    int64_t c_rs = lc ? 1 : ldc, c_cs = lc ? ldc : 1;
    CHECK(test_gemm_strided_src(sd, m, n, k, A, a_rs, a_cs, B, b_rs, b_cs, C, c_rs, c_cs, add));
    double u = ldexp(1.0, -24);
    int64_t bad = 0;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) {
            double bound, e = test_gemm_dot(k, a + i * a_rs, a_cs, b + j * b_cs, b_rs, add ? c0[i * c_rs + j * c_cs] : 0, &bound);
            double v = C[i * c_rs + j * c_cs];
            if (!(fabs(v - e) <= (double)(k + 5) * u * bound + 1e-300) && bad++ < 3)
                test_fail(__FILE__, __LINE__, "%s %lldx%lldx%lld layouts %d/%d/%d add %d threads %d [%lld, %lld]: %.9g, expected %.9g",
                          sd == TENSOR_BF16 ? "bf16" : "f16", (long long)m, (long long)n, (long long)k, la, lb, lc, (int)add,
                          tensor_get_num_threads(), (long long)i, (long long)j, v, e);
        }
    for (int64_t r = 0; r < (lc ? n : m); r++)
        for (int64_t x = lc ? m : n; x < ldc; x++)
            if (C[r * ldc + x] != (float)c0[r * ldc + x] && bad++ < 3) test_fail(__FILE__, __LINE__, "the padding of C was written");
    free(A), free(B), free(a), free(b), free(c0), free(C);
}

/* Edges of the 12 x 32 tile (and the 6 x 16 one of the f32 families the f16 path feeds), k = 1,
   odd k (a last pair padded with zero), k across the KC blocks (512 bf16, 256 f32) and odd there,
   the transposed narrow-n case, a matrix-vector product, every layout, add, 1 and 2 threads. */
static void half_sweep(tensor_dtype sd) {
    static const int64_t sizes[][3] = {
        {1, 1, 1}, {12, 32, 1}, {13, 33, 1}, {11, 31, 2}, {12, 32, 3}, {25, 17, 9}, {6, 16, 5}, {7, 9, 300}, {24, 64, 257},
        {23, 65, 513}, {5, 7, 130}, {64, 70, 1027}, {250, 70, 40}, {241, 33, 19}, {3, 300, 50}, {300, 3, 51}, {1, 100, 64},
        {100, 1, 64}, {500, 260, 21},
    };
    int saved = tensor_get_num_threads();
    for (int threads = 1; threads <= 2; threads++) {
        tensor_set_num_threads(threads);
        for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++)
            for (int l = 0; l < 18; l++)
                half_raw_case(sd, sizes[s][0], sizes[s][1], sizes[s][2], l % 3, (l / 3) % 3, (l / 9) % 2, (s + (size_t)l) % 2 == 1);
    }
    tensor_set_num_threads(saved);
}

TEST(bf16_gemm_kernel_edges_layouts_add_threads) {
    if (!test_gemm_has_bf16()) {
        test_skip_cpu("the bf16 GEMM kernel (no avx512_bf16 at this SIMD level; bf16 runs converted to f32: bf16_gemm_converted)");
        return;
    }
    half_sweep(TENSOR_BF16);
}
/* bf16 where the kernel does not run (converted to f32 as packed): at TENSOR_SIMD=avx2 in a child
   when this process runs the bf16 kernel, else here. */
TEST(bf16_gemm_converted) {
#if defined(__linux__) && (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
    if (test_gemm_has_bf16()) {
        if (test_cpu_runs("avx2")) test_run_at_simd_level(__FILE__, __LINE__, "avx2", "", "bf16_gemm_converted", NULL);
        return;
    }
#endif
    half_sweep(TENSOR_BF16);
}
TEST(f16_gemm_edges_layouts_add_threads) { half_sweep(TENSOR_F16); }

/* ---- through the ops ---- */

/* A standard normal sample (Box-Muller on test_uniform). */
static double half_normal(void) {
    double u1 = test_uniform(0, 1), u2 = test_uniform(0, 1);
    return sqrt(-2 * log(1 - u1)) * cos(6.283185307179586 * u2);
}
/* A tensor of N(0, 1) values rounded to dt. */
static tensor *half_randn(tensor_dtype dt, int nd, const int64_t *shape) {
    int64_t n = test_numel(nd, shape);
    double *v = (double *)malloc(8 * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) v[i] = half_normal();
    tensor *t = test_tensor(dt, nd, shape, v);
    free(v);
    return t;
}
/* ||got - want|| / ||want|| (Frobenius, in double). */
static double half_rel_err(tensor *got, tensor *want) {
    if (!got || !want || tensor_numel(got) != tensor_numel(want)) return INFINITY;
    double *g = test_values(got), *w = test_values(want), num = 0, den = 0;
    for (int64_t i = 0; i < tensor_numel(got); i++) {
        num += (g[i] - w[i]) * (g[i] - w[i]);
        den += w[i] * w[i];
    }
    free(g), free(w);
    return sqrt(num) / (den > 0 ? sqrt(den) : 1);
}
/* t's values in f64 (the rounded inputs, for the reference). */
static tensor *half_f64(tensor *t) { return tensor_to_dtype(t, TENSOR_F64); }

/* K = 2048 of N(0, 1): the bf16 / f16 matmul (f32 accumulation, rounded once to dt) against f64 on
   the same rounded inputs, norm-wise within 1e-2, on 1 and 2 threads. */
static void half_matmul_accuracy(tensor_dtype dt) {
    int saved = tensor_get_num_threads();
    for (int threads = 1; threads <= 2; threads++) {
        tensor_set_num_threads(threads);
        tensor_scope_begin();
        int64_t sa[2] = {96, 2048}, sb[2] = {2048, 80};
        tensor *a = half_randn(dt, 2, sa), *b = half_randn(dt, 2, sb);
        tensor *c = tensor_matmul(a, b), *ref = tensor_matmul(half_f64(a), half_f64(b));
        CHECK(c && tensor_get_dtype(c) == dt);
        double e = half_rel_err(c, ref);
        CHECK_MSG(e <= 1e-2, "%s K=2048 threads %d: relative error %.3g", dt == TENSOR_BF16 ? "bf16" : "f16", threads, e);
        /* the error is the final rounding's, not a lost accumulation: well under 1e-2 */
        CHECK_MSG(e <= (dt == TENSOR_BF16 ? 4e-3 : 1e-3), "%s relative error %.3g", dt == TENSOR_BF16 ? "bf16" : "f16", e);
        tensor_scope_end();
    }
    tensor_set_num_threads(saved);
}
TEST(bf16_matmul_k2048_accuracy) { half_matmul_accuracy(TENSOR_BF16); }
TEST(f16_matmul_k2048_accuracy) { half_matmul_accuracy(TENSOR_F16); }

/* Batched matmul (folded into one GEMM, per batch with broadcasting, transposed operands) and
   linear forward and backward on dt, against f64 on the same values. Gradients of dt tensors are
   dt, and their products run the dt GEMM too. */
static void half_ops(tensor_dtype dt) {
    tensor_scope_begin();
    double tol = 1e-2;
    int64_t s3[3] = {3, 37, 70}, s2[2] = {70, 45}, sb[3] = {3, 45, 70}, s1[3] = {1, 70, 29};
    tensor *x = half_randn(dt, 3, s3), *w = half_randn(dt, 2, s2), *wb = half_randn(dt, 3, sb), *w1 = half_randn(dt, 3, s1);
    tensor *pairs[][2] = {{x, w}, {x, tensor_transpose(wb, 1, 2)}, {x, w1}, {tensor_transpose(x, 1, 2), x}};
    for (int i = 0; i < 4; i++) {
        tensor *c = tensor_matmul(pairs[i][0], pairs[i][1]), *ref = tensor_matmul(half_f64(pairs[i][0]), half_f64(pairs[i][1]));
        CHECK(c && tensor_get_dtype(c) == dt);
        double e = half_rel_err(c, ref);
        CHECK_MSG(e <= tol, "matmul case %d: relative error %.3g", i, e);
    }
    /* linear: y = x W^T + b, loss sum(y * g); its gradients against the f64 ones */
    int64_t sw[2] = {29, 70}, sbias[1] = {29}, sy[3] = {3, 37, 29};
    tensor *lw = half_randn(dt, 2, sw), *lb = half_randn(dt, 1, sbias), *g = half_randn(dt, 3, sy);
    tensor *leaves[2][4];
    for (int f = 0; f < 2; f++) {
        tensor *src[4] = {x, lw, lb, g};
        for (int i = 0; i < 4; i++) leaves[f][i] = f ? half_f64(src[i]) : tensor_clone(src[i]);
        for (int i = 0; i < 3; i++) tensor_set_requires_grad(leaves[f][i], true);
        tensor *y = tensor_linear(leaves[f][0], leaves[f][1], leaves[f][2]);
        CHECK(y && tensor_get_dtype(y) == (f ? TENSOR_F64 : dt));
        CHECK(tensor_backward(tensor_sum_all(tensor_mul(y, leaves[f][3]))) == 0);
        if (f) {
            double e = half_rel_err(tensor_linear(leaves[0][0], leaves[0][1], leaves[0][2]), y);
            CHECK_MSG(e <= tol, "linear: relative error %.3g", e);
        }
    }
    for (int i = 0; i < 3; i++) {
        tensor *gh = tensor_grad(leaves[0][i]), *gr = tensor_grad(leaves[1][i]);
        CHECK(gh && tensor_get_dtype(gh) == dt);
        double e = half_rel_err(gh, gr);
        CHECK_MSG(e <= tol, "linear gradient %d: relative error %.3g", i, e);
    }
    tensor_scope_end();
}
TEST(bf16_matmul_linear_forward_backward) { half_ops(TENSOR_BF16); }
TEST(f16_matmul_linear_forward_backward) { half_ops(TENSOR_F16); }

/* conv2d (im2col and the 3x3 Winograd shapes) forward and backward on dt against f64. */
static void half_conv(tensor_dtype dt) {
    static const int64_t cases[][7] = { /* N, C, H, O, k, stride, pad */
        {2, 3, 11, 5, 3, 2, 1}, {2, 8, 12, 16, 3, 1, 1}, {1, 4, 9, 6, 1, 1, 0}, {2, 5, 10, 7, 5, 1, 2},
    };
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        tensor_scope_begin();
        const int64_t *q = cases[t];
        int64_t sx[4] = {q[0], q[1], q[2], q[2]}, sw[4] = {q[3], q[1], q[4], q[4]}, sb[1] = {q[3]};
        tensor *src[3] = {half_randn(dt, 4, sx), half_randn(dt, 4, sw), half_randn(dt, 1, sb)};
        tensor *l[2][3], *y[2];
        for (int f = 0; f < 2; f++) {
            for (int i = 0; i < 3; i++) tensor_set_requires_grad(l[f][i] = f ? half_f64(src[i]) : tensor_clone(src[i]), true);
            y[f] = tensor_conv2d(l[f][0], l[f][1], l[f][2], (int)q[5], (int)q[6], 1, 1);
            CHECK(y[f] != NULL);
            if (!y[f]) break;
            tensor *gy = f ? half_f64(y[0]) : y[0]; /* the same weights of the loss */
            CHECK(tensor_backward(tensor_sum_all(tensor_mul(y[f], tensor_detach(gy)))) == 0);
        }
        if (y[0] && y[1]) {
            CHECK(tensor_get_dtype(y[0]) == dt);
            double e = half_rel_err(y[0], y[1]);
            CHECK_MSG(e <= 1e-2, "conv case %zu: relative error %.3g", t, e);
            for (int i = 0; i < 3; i++) {
                e = half_rel_err(tensor_grad(l[0][i]), tensor_grad(l[1][i]));
                CHECK_MSG(e <= 1e-2, "conv case %zu gradient %d: relative error %.3g", t, i, e);
            }
        }
        tensor_scope_end();
    }
}
TEST(bf16_conv2d_forward_backward) { half_conv(TENSOR_BF16); }

/* N(0, 1) values rounded to bf16 from a generator of this file's own, so the shared stream of
   test_uniform (and the data of every test after this one) stays as it was. */
static tensor *half_conv_randn(int nd, const int64_t *shape) {
    static uint64_t st = 0x2545F4914F6CDD1Dull;
    int64_t n = test_numel(nd, shape);
    double *v = (double *)malloc(8 * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) {
        double u[2];
        for (int j = 0; j < 2; j++) {
            st ^= st << 13, st ^= st >> 7, st ^= st << 17;
            u[j] = (double)(st >> 11) * (1.0 / 9007199254740992.0);
        }
        v[i] = sqrt(-2 * log(1 - u[0])) * cos(6.283185307179586 * u[1]);
    }
    tensor *t = test_tensor(TENSOR_BF16, nd, shape, v);
    free(v);
    return t;
}

/* got against ref element by element: each result is an f32 sum of `terms` exact products (a bf16
   times a bf16 is exact in f32; vdpbf16ps adds each in f32, as the GEMM's C and col2im do), off by
   at most terms 2^-24 S (S: the same sum of absolute values, abs), then rounded once to bf16 (half
   an ulp: 2^-8 relative). */
static void half_check_elems(const char *what, size_t t, int threads, tensor *got, tensor *ref, tensor *abs, double terms) {
    CHECK_MSG(got && ref && abs && tensor_get_dtype(got) == TENSOR_BF16, "conv case %zu %s: missing or not bf16", t, what);
    if (!got || !ref || !abs || tensor_numel(got) != tensor_numel(ref)) return;
    double *g = test_values(got), *r = test_values(ref), *a = test_values(abs), u = ldexp(1.0, -8), e32 = (terms + 2) * ldexp(1.0, -24);
    int bad = 0;
    for (int64_t i = 0; i < tensor_numel(got); i++)
        if (!(fabs(g[i] - r[i]) <= u * fabs(r[i]) + (1 + u) * e32 * a[i] + 1e-300) && bad++ < 3)
            test_fail(__FILE__, __LINE__, "conv case %zu %s threads %d [%lld]: %.9g, expected %.9g (sum of |terms| %.3g)", t, what, threads, (long long)i,
                      g[i], r[i], a[i]);
    free(g), free(r), free(a);
}

/* conv2d on bf16 where the bf16 GEMM kernel runs it (x and w read as bf16 by im2col; f32 sums):
   forward, input, weight and bias gradients against f64 on the same values, each element within the
   bound above; the shapes Winograd leaves to the kernel (fewer than 8 channels, stride 2, 1x1 and
   5x5 kernels, groups, dilation), odd channel counts, K past the kernel's KC (512), batch 1 and
   more, an x that is a transposed view; 1 and 2 threads. */
TEST(bf16_conv2d_kernel_elementwise) {
    if (!test_gemm_has_bf16()) {
        test_skip_cpu("the bf16 conv2d kernel (no avx512_bf16 at this SIMD level; bf16 conv2d runs converted to f32: bf16_conv2d_forward_backward)");
        return;
    }
    static const int64_t cases[][11] = { /* N, C, H, W, O, k, stride, pad, dilation, groups, x transposed */
        {2, 3, 11, 9, 5, 3, 1, 1, 1, 1, 0},  {3, 5, 9, 12, 7, 3, 2, 1, 1, 1, 0}, {2, 16, 8, 8, 24, 1, 1, 0, 1, 1, 0},
        {1, 7, 10, 11, 9, 5, 1, 2, 1, 1, 0}, {2, 9, 13, 10, 11, 3, 2, 0, 1, 1, 1}, {5, 12, 7, 9, 20, 1, 2, 0, 1, 1, 0},
        {2, 64, 9, 9, 33, 3, 2, 1, 1, 1, 0}, {4, 6, 12, 12, 10, 3, 1, 1, 1, 2, 0}, {2, 5, 14, 14, 6, 3, 1, 2, 2, 1, 1},
        {7, 3, 20, 20, 17, 5, 2, 2, 1, 1, 0},
    };
    int saved = tensor_get_num_threads();
    for (int threads = 1; threads <= 2; threads++) {
        tensor_set_num_threads(threads);
        for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
            tensor_scope_begin();
            const int64_t *q = cases[t];
            int64_t N = q[0], C = q[1], H = q[2], W = q[3], O = q[4], k = q[5], st = q[6], pd = q[7], dl = q[8], gr = q[9];
            int64_t sx[4] = {N, C, q[10] ? W : H, q[10] ? H : W}, sw[4] = {O, C / gr, k, k}, sb[1] = {O};
            int64_t oH = (H + 2 * pd - dl * (k - 1) - 1) / st + 1, oW = (W + 2 * pd - dl * (k - 1) - 1) / st + 1, sy[4] = {N, O, oH, oW};
            tensor *x = half_conv_randn(4, sx), *w = half_conv_randn(4, sw), *b = half_conv_randn(1, sb), *gy = half_conv_randn(4, sy);
            /* ours (l[0]), f64 on the same values (l[1]), f64 on their absolute values (l[2]); x
               transposed: the convolution reads a strided view of the leaf */
            tensor *l[3][3], *y[3];
            int64_t before = tensor_test_path_count("conv_bf16"), after_fwd = before;
            for (int f = 0; f < 3; f++) {
                tensor *src[3] = {x, w, b};
                for (int i = 0; i < 3; i++) {
                    tensor *v = f ? half_f64(src[i]) : tensor_clone(src[i]);
                    l[f][i] = tensor_set_requires_grad(f == 2 ? tensor_abs(v) : v, true);
                }
                tensor *xin = q[10] ? tensor_transpose(l[f][0], 2, 3) : l[f][0];
                y[f] = tensor_conv2d(xin, l[f][1], l[f][2], (int)st, (int)pd, (int)dl, (int)gr);
                CHECK(y[f] != NULL);
                if (!y[f]) break;
                if (!f) after_fwd = tensor_test_path_count("conv_bf16");
                tensor *g = f == 0 ? gy : f == 1 ? half_f64(gy) : tensor_abs(half_f64(gy));
                CHECK(tensor_backward_with(y[f], g) == 0);
            }
            CHECK_MSG(after_fwd > before && tensor_test_path_count("conv_bf16") > after_fwd, "conv case %zu: the bf16 kernel ran %lld times forward, %lld backward", t,
                      (long long)(after_fwd - before), (long long)(tensor_test_path_count("conv_bf16") - after_fwd));
            if (y[0] && y[1] && y[2]) {
                double K = (double)(C / gr * k * k);
                half_check_elems("forward", t, threads, y[0], y[1], y[2], K + 1);
                half_check_elems("input gradient", t, threads, tensor_grad(l[0][0]), tensor_grad(l[1][0]), tensor_grad(l[2][0]), (double)(O / gr * k * k));
                half_check_elems("weight gradient", t, threads, tensor_grad(l[0][1]), tensor_grad(l[1][1]), tensor_grad(l[2][1]), (double)(N * oH * oW));
                half_check_elems("bias gradient", t, threads, tensor_grad(l[0][2]), tensor_grad(l[1][2]), tensor_grad(l[2][2]), (double)(N * oH * oW));
            }
            tensor_scope_end();
        }
    }
    tensor_set_num_threads(saved);
}
TEST(f16_conv2d_forward_backward) { half_conv(TENSOR_F16); }

/* The SIMD casts f32 <-> f16 / bf16 (contiguous) against element-by-element ones (a strided copy
   takes the scalar conversions): every rounding case, NaN, inf, subnormals, overflow. */
TEST(half_casts_match_scalar) {
    enum { N = 1 << 16 };
    tensor_scope_begin();
    float *v = (float *)malloc(sizeof(float) * 2 * N);
    for (int i = 0; i < 2 * N; i++) {
        uint32_t u = (uint32_t)i * 2654435761u; /* spread over the bit patterns */
        if (i < N) u = ((uint32_t)i << 16) | (uint32_t)(i * 40503u & 0xffff); /* every high half, low halves near ties too */
        if (i % 7 == 0) u = (u & 0xffff0000u) | 0x8000u; /* exact ties */
        v[i] = half_from_bits32(u);
    }
    int64_t shape[1] = {2 * N}, big[2] = {2 * N, 2};
    tensor *src = tensor_from_data(v, 1, shape, TENSOR_F32);
    tensor *wide = tensor_zeros(2, big, TENSOR_F32); /* column 0 of it: a strided copy of v */
    tensor *col = tensor_select(wide, 1, 0);
    CHECK(tensor_copy_(col, src) != NULL);
    tensor_dtype dts[2] = {TENSOR_BF16, TENSOR_F16};
    for (int d = 0; d < 2; d++) {
        tensor *fast = tensor_to_dtype(src, dts[d]), *slow = tensor_to_dtype(col, dts[d]);
        const uint16_t *f = (const uint16_t *)tensor_data_ptr(fast);
        tensor *slowc = tensor_contiguous(slow);
        const uint16_t *s = (const uint16_t *)tensor_data_ptr(slowc);
        int bad = 0;
        for (int i = 0; f && s && i < 2 * N && bad < 3; i++)
            if (f[i] != s[i]) { test_fail(__FILE__, __LINE__, "%s: %a (0x%08x) -> 0x%04x, scalar 0x%04x", d ? "f16" : "bf16", v[i], half_bits32(v[i]), f[i], s[i]); bad++; }
        /* and back */
        tensor *back_fast = tensor_to_dtype(fast, TENSOR_F32);
        tensor *wide16 = tensor_zeros(2, big, dts[d]), *col16 = tensor_select(wide16, 1, 0);
        CHECK(tensor_copy_(col16, fast) != NULL);
        tensor *back_slow = tensor_contiguous(tensor_to_dtype(col16, TENSOR_F32));
        const uint32_t *bf = (const uint32_t *)tensor_data_ptr(back_fast), *bs = (const uint32_t *)tensor_data_ptr(back_slow);
        for (int i = 0; bf && bs && i < 2 * N && bad < 3; i++)
            if (bf[i] != bs[i]) { test_fail(__FILE__, __LINE__, "%s 0x%04x -> 0x%08x, scalar 0x%08x", d ? "f16" : "bf16", f[i], bf[i], bs[i]); bad++; }
    }
    free(v);
    tensor_scope_end();
}
