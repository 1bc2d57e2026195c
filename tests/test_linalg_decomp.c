/* The linear algebra of generator/parts/linalg_decomp.h (linalg_lu_factor, linalg_lu_solve,
   linalg_solve, linalg_inv, linalg_det, linalg_slogdet, linalg_cholesky, linalg_solve_triangular):
   values against PyTorch 1.13 (the E_ arrays were computed by torch in float64 on the inputs
   la_in makes and pasted here), accuracy on Hilbert matrices against a long double reference,
   the blocked kernels (n >= 128) by their residuals, singular and non-positive-definite inputs
   (PyTorch's errors, det 0, slogdet (0, -inf)), gradients through the registry sweep (f64
   gradchecks and gradgradchecks) and PyTorch's error cases (bad_input_NAME). */
#include "test.h"

/* element i of a tensor of seed s: ((3 i^2 + 5 i + 7 s) mod 17 - 8) / 4 */
static tensor *la_in_dt(tensor_dtype dt, int nd, const int64_t *shape, int seed) {
    int64_t n = test_numel(nd, shape);
    double *v = (double *)malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) v[i] = (double)((i * i * 3 + i * 5 + seed * 7) % 17 - 8) / 4.0;
    tensor *t = test_tensor(dt, nd, shape, v);
    free(v);
    return t;
}
#define IN(seed, ...) la_in_dt(TENSOR_F64, TENSOR_SHAPE(__VA_ARGS__), seed)
#define N_OF(a) ((int64_t)(sizeof(a) / sizeof((a)[0])))
#define CHECK_E(t, name) CHECK_VALUES(t, E_##name, N_OF(E_##name), 1e-12, 1e-12)

/* ---- the numbers PyTorch gives (A = in(1, 4x4), B = in(2, 4x2), S = A A^T + I, batched: in(3,
   2x1x3x3) with in(4, 3x3x2), in(5, 3x3x3)) ---- */
static const double E_lu[] = {-1.75, -0.5, -2.0, -2.0, 0.14285714285714285, 1.8214285714285714, 1.2857142857142856, 2.0357142857142856, 0.14285714285714285, -0.3725490196078432, 1.0147058823529411, -0.4558823529411764, 0.2857142857142857, -0.8823529411764707, 0.20289855072463764, 2.710144927536232};
static const int32_t E_piv[] = {3, 3, 3, 4};
static const double E_solve[] = {-1.2727272727272725, 0.9696969696969698, 0.0, 0.6666666666666665, -0.7272727272727273, -1.3030303030303028, 1.0909090909090908, -0.21212121212121215};
static const double E_solve_vec[] = {-1.2727272727272727, -2.220446049250313e-16, -0.7272727272727272, 1.090909090909091};
static const double E_solve_right[] = {0.2424242424242422, 0.9090909090909088, -1.3333333333333335, 1.0909090909090908, 1.333333333333333, 2.0, -0.3333333333333334, 1.0};
static const double E_inv[] = {-0.8734402852049912, -0.8342245989304814, -0.19607843137254896, -0.45989304812834225, -0.13725490196078427, -0.5882352941176472, 0.2549019607843137, -0.5294117647058824, 0.5008912655971479, 0.9518716577540107, -0.2549019607843137, 0.1657754010695187, 0.2976827094474153, -0.07486631016042766, -0.13725490196078433, 0.36898395721925137};
static const double E_det[] = {-8.765625};
static const double E_slog_sign[] = {-1.0};
static const double E_slog_lad[] = {2.1708378221630245};
static const double E_chol[] = {2.8613807855648994, 0.0, 0.0, 0.0, -1.266870882158505, 1.5272649305012314, 0.0, 0.0, -2.075047134569965, 0.4476520035607004, 2.793973348659766, 0.0, -1.3979264906576607, -0.7094331473038038, 0.5965754153681695, 1.9523329403568626};
static const double E_chol_u[] = {2.8613807855648994, -1.266870882158505, -2.075047134569965, -1.3979264906576607, 0.0, 1.5272649305012314, 0.44765200356070045, -0.7094331473038038, 0.0, 0.0, 2.793973348659766, 0.5965754153681695, 0.0, 0.0, 0.0, 1.9523329403568626};
static const double E_trsm_u[] = {-103.41666666666666, -6.5, -16.916666666666664, -1.5, -8.75, -1.5, 8.0, 1.0};
static const double E_trsm_l_unit[] = {1.5, -0.75, -1.125, -0.9375, 3.5625, -0.78125, 6.125, -2.9375};
static const double E_trsm_right_l[] = {37.416666666666664, -12.166666666666666, -6.75, 8.0, 10.25, -0.5, -1.25, 1.0};
static const double E_lus_adj[] = {0.24242424242424254, 1.3333333333333335, 0.9090909090909091, 2.0, -1.3333333333333333, -0.33333333333333337, 1.0909090909090908, 1.0};
static const double E_lus_right[] = {0.24242424242424254, 0.9090909090909091, -1.3333333333333333, 1.0909090909090908, 1.3333333333333335, 2.0, -0.33333333333333337, 1.0};
static const double E_lus_right_adj[] = {-1.2727272727272725, 1.8286026287943756e-16, -0.7272727272727273, 1.0909090909090908, 0.9696969696969698, 0.6666666666666667, -1.3030303030303032, -0.2121212121212121};
static const double E_bsolve[] = {1.3333333333333333, 0.16666666666666652, 2.6333333333333333, -1.9333333333333336, -2.2, 2.4000000000000004, -2.0, 0.0, -0.6499999999999999, -0.5, -0.4, -0.0, -0.5, 1.8333333333333333, 0.0, 1.1833333333333333, -0.0, -0.4, 0.34615384615384615, 0.8076923076923077, -3.4230769230769234, -0.6538461538461541, 4.211538461538462, 0.3269230769230771, -2.1538461538461537, 1.6923076923076923, 6.076923076923077, -1.8461538461538465, -7.038461538461538, 2.9230769230769234, -1.3461538461538463, 1.9615384615384617, 2.4230769230769234, -5.730769230769232, -3.2115384615384617, 6.865384615384616};
static const double E_bdet[] = {7.6875, 2.640625, 0.7812499999999999};
static const double E_bslog_sign[] = {1.0, 1.0, 1.0};
static const double E_bslog_lad[] = {2.0395956331326364, 0.9710156315634016, -0.24686007793152587};
static const double E_binv[] = {-0.5528455284552846, -0.11382113821138211, -0.04878048780487804, -0.35772357723577236, -0.3089430894308943, 0.43902439024390244, -0.24390243902439024, 0.24390243902439024, 0.39024390243902435, -1.6094674556213018, 1.0650887573964498, 0.07100591715976332, -1.9171597633136095, 1.680473372781065, 0.378698224852071, -1.0414201183431953, 1.1597633136094676, -0.1893491124260355, -3.5199999999999996, -0.96, 0.16000000000000003, -6.48, -1.04, -0.16000000000000003, -5.44, -1.12, -0.4800000000000001};

TEST(linalg_decomp_values_against_pytorch) {
    tensor_scope_begin();
    tensor *A = IN(1, 4, 4), *B = IN(2, 4, 2), *Bt = tensor_contiguous(tensor_transpose(B, 0, 1));
    tensor *piv = NULL;
    tensor *lu = tensor_linalg_lu_factor(A, &piv);
    CHECK_E(lu, lu);
    CHECK(piv && tensor_get_dtype(piv) == TENSOR_I32);
    double ep[4];
    for (int i = 0; i < 4; i++) ep[i] = E_piv[i];
    CHECK_VALUES(piv, ep, 4, 0, 0);
    CHECK_E(tensor_linalg_solve(A, B, true), solve);
    tensor *b0 = tensor_contiguous(tensor_select(B, 1, 0));
    CHECK_SHAPE(tensor_linalg_solve(A, b0, true), 1, (int64_t[]){4});
    CHECK_E(tensor_linalg_solve(A, b0, true), solve_vec);
    CHECK_E(tensor_linalg_solve(A, Bt, false), solve_right);
    CHECK_E(tensor_linalg_inv(A), inv);
    CHECK_E(tensor_linalg_det(A), det);
    tensor *lad = NULL;
    CHECK_E(tensor_linalg_slogdet(A, &lad), slog_sign);
    CHECK_E(lad, slog_lad);
    CHECK_E(tensor_linalg_slogdet(A, NULL), slog_sign);
    tensor *S = tensor_add(tensor_matmul(A, tensor_transpose(A, 0, 1)), tensor_eye(4, TENSOR_F64));
    CHECK_E(tensor_linalg_cholesky(S, false), chol);
    CHECK_E(tensor_linalg_cholesky(S, true), chol_u);
    CHECK_E(tensor_linalg_solve_triangular(A, B, true, true, false), trsm_u);
    CHECK_E(tensor_linalg_solve_triangular(A, B, false, true, true), trsm_l_unit);
    CHECK_E(tensor_linalg_solve_triangular(A, Bt, false, false, false), trsm_right_l);
    CHECK_E(tensor_linalg_lu_solve(lu, piv, B, true, false), solve);
    CHECK_E(tensor_linalg_lu_solve(lu, piv, B, true, true), lus_adj);
    CHECK_E(tensor_linalg_lu_solve(lu, piv, Bt, false, false), lus_right);
    CHECK_E(tensor_linalg_lu_solve(lu, piv, Bt, false, true), lus_right_adj);
    /* batch dims broadcast: [2, 1, 3, 3] with [3, 3, 2] -> [2, 3, 3, 2] */
    tensor *xb = tensor_linalg_solve(IN(3, 2, 1, 3, 3), IN(4, 3, 3, 2), true);
    CHECK_SHAPE(xb, 4, (int64_t[]){2, 3, 3, 2});
    CHECK_E(xb, bsolve);
    CHECK_E(tensor_linalg_det(IN(5, 3, 3, 3)), bdet);
    CHECK_E(tensor_linalg_slogdet(IN(5, 3, 3, 3), &lad), bslog_sign);
    CHECK_E(lad, bslog_lad);
    CHECK_E(tensor_linalg_inv(IN(5, 3, 3, 3)), binv);
    /* non-contiguous operands: A^T held transposed */
    tensor *At = tensor_contiguous(tensor_transpose(A, 0, 1));
    CHECK_E(tensor_linalg_inv(tensor_transpose(At, 0, 1)), inv);
    CHECK_E(tensor_linalg_solve(tensor_transpose(At, 0, 1), tensor_transpose(Bt, 0, 1), true), solve);
    /* f32 */
    tensor *A32 = la_in_dt(TENSOR_F32, TENSOR_SHAPE(4, 4), 1), *B32 = la_in_dt(TENSOR_F32, TENSOR_SHAPE(4, 2), 2);
    tensor *x32 = tensor_linalg_solve(A32, B32, true);
    CHECK(x32 && tensor_get_dtype(x32) == TENSOR_F32);
    CHECK_VALUES(x32, E_solve, 8, 1e-5, 1e-5);
    CHECK_VALUES(tensor_linalg_det(A32), E_det, 1, 1e-5, 1e-5);
    CHECK_VALUES(tensor_linalg_cholesky(tensor_to_dtype(S, TENSOR_F32), false), E_chol, 16, 1e-5, 1e-5);
    CHECK_VALUES(tensor_linalg_solve_triangular(A32, B32, true, true, false), E_trsm_u, 8, 1e-4, 1e-5);
    /* empty matrices: det 1, inv empty */
    tensor *e = tensor_zeros(TENSOR_SHAPE(2, 0, 0), TENSOR_F64);
    CHECK_VALUES(tensor_linalg_det(e), ((double[]){1, 1}), 2, 0, 0);
    CHECK_SHAPE(tensor_linalg_inv(e), 3, (int64_t[]){2, 0, 0});
    CHECK_SHAPE(tensor_linalg_cholesky(e, false), 3, (int64_t[]){2, 0, 0});
    tensor_scope_end();
}

/* Hilbert matrices, f64, n = 6..10 (condition numbers 1.5e7 .. 1.6e13): A X = B with B = A ones,
   the residual ||A X - B|| / (||A|| ||X||) at the level of rounding, X against a solve of the same
   (f64-rounded) matrix in long double (partial pivoting) within cond * eps, det and log|det|
   against the long double ones, A inv(A) = I within cond * eps, and L L^T = A. */
static long double la_ref_solve(int n, const double *h, const long double *b, long double *x) {
    long double m[10][11], det = 1;
    for (int i = 0; i < n; i++) { for (int j = 0; j < n; j++) m[i][j] = h[i * n + j]; m[i][n] = b[i]; }
    for (int j = 0; j < n; j++) {
        int p = j;
        for (int i = j + 1; i < n; i++) if (fabsl(m[i][j]) > fabsl(m[p][j])) p = i;
        if (p != j) { det = -det; for (int c = 0; c <= n; c++) { long double t = m[j][c]; m[j][c] = m[p][c]; m[p][c] = t; } }
        det *= m[j][j];
        for (int i = j + 1; i < n; i++) { long double l = m[i][j] / m[j][j]; for (int c = j; c <= n; c++) m[i][c] -= l * m[j][c]; }
    }
    for (int i = n - 1; i >= 0; i--) { long double s = m[i][n]; for (int c = i + 1; c < n; c++) s -= m[i][c] * x[c]; x[i] = s / m[i][i]; }
    return det;
}
static double la_max_abs(tensor *t) { return t ? tensor_item(tensor_max_all(tensor_abs(t))) : INFINITY; }
TEST(linalg_decomp_hilbert_accuracy) {
    static const double cond[] = {1.5e7, 4.8e8, 1.6e10, 4.9e11, 1.6e13}; /* 2-norm condition numbers, n = 6..10 */
    static const double torch_det[] = {5.3672998866563796e-18, 4.835802608827547e-25, 2.737050008673933e-33, 9.72025647771838e-43, 2.1642146273020104e-53};
    const double eps = 2.220446049250313e-16;
    for (int n = 6; n <= 10; n++) {
        tensor_scope_begin();
        double h[100], b[10];
        long double bl[10], xl[10];
        for (int i = 0; i < n; i++) {
            long double s = 0;
            for (int j = 0; j < n; j++) { h[i * n + j] = 1.0 / (i + j + 1); s += (long double)h[i * n + j]; }
            b[i] = (double)s;
            bl[i] = b[i];
        }
        long double detl = la_ref_solve(n, h, bl, xl);
        tensor *A = test_tensor(TENSOR_F64, 2, (int64_t[]){n, n}, h), *B = test_tensor(TENSOR_F64, 2, (int64_t[]){n, 1}, b);
        double *x = test_values(tensor_linalg_solve(A, B, true));
        CHECK(x != NULL);
        if (x) {
            double rmax = 0, an = 0, xn = 0, err = 0, xln = 0;
            for (int i = 0; i < n; i++) {
                long double r = -(long double)b[i];
                double rowsum = 0;
                for (int j = 0; j < n; j++) { r += (long double)h[i * n + j] * x[j]; rowsum += fabs(h[i * n + j]); }
                if (fabsl(r) > rmax) rmax = (double)fabsl(r);
                if (rowsum > an) an = rowsum;
                if (fabs(x[i]) > xn) xn = fabs(x[i]);
                if (fabsl((long double)x[i] - xl[i]) > err) err = (double)fabsl((long double)x[i] - xl[i]);
                if (fabsl(xl[i]) > xln) xln = (double)fabsl(xl[i]);
            }
            CHECK_MSG(rmax / (an * xn) < 4 * n * eps, "Hilbert n=%d: relative residual %.3g", n, rmax / (an * xn));
            CHECK_MSG(err / xln < 10 * cond[n - 6] * eps, "Hilbert n=%d: error %.3g against long double (cond %.2g)", n, err / xln, cond[n - 6]);
            free(x);
        }
        /* det's relative error grows like cond * eps (PyTorch's, LAPACK's, pasted above, is off by as
           much: 1e-10 at n = 7, 7e-5 at n = 10): ours within cond * eps of the long double one and of
           PyTorch's (the rounding differs between platforms, with or without fused multiply-adds) */
        double det = tensor_item(tensor_linalg_det(A)), dl = (double)detl;
        CHECK_MSG(fabs(det - dl) <= cond[n - 6] * eps * fabs(dl), "Hilbert n=%d: det %.17g vs %.17Lg", n, det, detl);
        CHECK_MSG(fabs(det - torch_det[n - 6]) <= cond[n - 6] * eps * fabs(dl), "Hilbert n=%d: det %.17g vs PyTorch's %.17g", n, det, torch_det[n - 6]);
        tensor *lad = NULL;
        CHECK(tensor_item(tensor_linalg_slogdet(A, &lad)) == 1);
        CHECK_NEAR(tensor_item(lad), (double)logl(detl), cond[n - 6] * eps, 0);
        tensor *R = tensor_sub(tensor_matmul(A, tensor_linalg_inv(A)), tensor_eye(n, TENSOR_F64));
        CHECK_MSG(la_max_abs(R) < 10 * cond[n - 6] * eps, "Hilbert n=%d: |A inv(A) - I| = %.3g", n, la_max_abs(R));
        tensor *L = tensor_linalg_cholesky(A, false);
        CHECK(la_max_abs(tensor_sub(tensor_matmul(L, tensor_transpose(L, 0, 1)), A)) < 4 * eps);
        tensor_scope_end();
    }
}

/* The blocked kernels (n >= 128, panels of 48 through the GEMM), batched and threaded: P L U = A,
   L L^T = S, A solve(A, B) = B and A X = B for the triangular solves, to rounding, f64 and f32,
   at sizes that are and are not multiples of the panel. */
TEST(linalg_decomp_blocked_residuals) {
    static const int64_t ns[] = {128, 150, 200};
    for (int t = 0; t < 3; t++) {
        for (int dt = 0; dt < 2; dt++) {
            tensor_scope_begin();
            tensor_dtype d = dt ? TENSOR_F32 : TENSOR_F64;
            double eps = dt ? 1.2e-7 : 2.2e-16;
            int64_t n = ns[t];
            tensor *A = test_random(d, 3, (int64_t[]){2, n, n}, -1, 1);
            tensor *piv = NULL, *lu = tensor_linalg_lu_factor(A, &piv);
            tensor *L = tensor_add(tensor_tril(lu, -1), tensor_eye(n, d)), *U = tensor_triu(lu, 0);
            /* P^T from the pivots (the swaps applied to the rows of the identity) */
            double *pv = test_values(piv);
            double *rows = (double *)malloc(sizeof(double) * (size_t)(2 * n * n));
            for (int b = 0; pv && rows && b < 2; b++) {
                int64_t perm[200];
                for (int64_t i = 0; i < n; i++) perm[i] = i;
                for (int64_t i = 0; i < n; i++) { int64_t p = (int64_t)pv[b * n + i] - 1, s = perm[i]; perm[i] = perm[p]; perm[p] = s; }
                for (int64_t i = 0; i < n; i++) for (int64_t j = 0; j < n; j++) rows[(b * n + i) * n + j] = (j == perm[i]); /* row i of P^T */
            }
            tensor *Pt = rows ? test_tensor(d, 3, (int64_t[]){2, n, n}, rows) : NULL;
            free(rows);
            free(pv);
            double an = la_max_abs(A);
            CHECK_MSG(la_max_abs(tensor_sub(tensor_matmul(Pt, A), tensor_matmul(L, U))) < 4 * n * eps * an, "n=%lld: P^T A != L U", (long long)n);
            /* |L| <= 1: partial pivoting */
            CHECK(la_max_abs(tensor_tril(lu, -1)) <= 1);
            tensor *B = test_random(d, 3, (int64_t[]){2, n, 3}, -1, 1);
            tensor *X = tensor_linalg_solve(A, B, true);
            CHECK_MSG(la_max_abs(tensor_sub(tensor_matmul(A, X), B)) < 4 * n * eps * an * la_max_abs(X) * n, "n=%lld: A X != B", (long long)n);
            tensor *S = tensor_add(tensor_matmul(A, tensor_transpose(A, -1, -2)), tensor_mul_scalar(tensor_eye(n, d), (double)n));
            tensor *C = tensor_linalg_cholesky(S, false);
            CHECK_MSG(la_max_abs(tensor_sub(tensor_matmul(C, tensor_transpose(C, -1, -2)), S)) < 4 * n * eps * la_max_abs(S), "n=%lld: L L^T != S", (long long)n);
            CHECK(la_max_abs(tensor_triu(C, 1)) == 0);
            tensor *Y = tensor_linalg_solve_triangular(C, B, false, true, false);
            CHECK(la_max_abs(tensor_sub(tensor_matmul(C, Y), B)) < 4 * n * eps * la_max_abs(C) * la_max_abs(Y) * n);
            tensor_scope_end();
        }
    }
}

/* Singular and indefinite inputs: PyTorch's errors (naming the batch element and the zero pivot
   or the leading minor), det 0 and slogdet (0, -inf); the triangular solve divides (inf/NaN). */
TEST(linalg_decomp_singular) {
    tensor_scope_begin();
    tensor *S = test_tensor(TENSOR_F64, 2, (int64_t[]){2, 2}, (double[]){1, 2, 2, 4});
    tensor *Sb = tensor_stack(2, (tensor *[]){tensor_eye(2, TENSOR_F64), S}, 0);
    tensor *piv = NULL;
    CHECK_BAD(tensor_linalg_lu_factor(S, &piv), "U[2,2] is zero");
    CHECK(piv == NULL);
    CHECK_BAD(tensor_linalg_lu_factor(Sb, NULL), "(Batch element 1): U[2,2] is zero");
    CHECK_BAD(tensor_linalg_solve(S, tensor_ones(TENSOR_SHAPE(2), TENSOR_F64), true), "the solver failed because the input matrix is singular");
    CHECK_BAD(tensor_linalg_solve(Sb, tensor_ones(TENSOR_SHAPE(2), TENSOR_F64), true), "(Batch element 1): the solver failed");
    CHECK_BAD(tensor_linalg_inv(S), "the diagonal element 2 is zero");
    CHECK_BAD(tensor_linalg_inv(Sb), "(Batch element 1): the diagonal element 2 is zero");
    CHECK_VALUES(tensor_linalg_det(S), ((double[]){0}), 1, 0, 0);
    CHECK_VALUES(tensor_linalg_det(Sb), ((double[]){1, 0}), 2, 0, 0);
    tensor *lad = NULL;
    CHECK_VALUES(tensor_linalg_slogdet(Sb, &lad), ((double[]){1, 0}), 2, 0, 0);
    CHECK_VALUES(lad, ((double[]){0, -INFINITY}), 2, 0, 0);
    CHECK_VALUES(tensor_linalg_det(tensor_zeros(TENSOR_SHAPE(3, 3), TENSOR_F32)), ((double[]){0}), 1, 0, 0);
    tensor *I = test_tensor(TENSOR_F64, 2, (int64_t[]){2, 2}, (double[]){1, 2, 2, 1});
    CHECK_BAD(tensor_linalg_cholesky(I, false), "the leading minor of order 2 is not positive-definite");
    CHECK_BAD(tensor_linalg_cholesky(tensor_stack(2, (tensor *[]){tensor_eye(2, TENSOR_F64), I}, 0), true), "(Batch element 1): the factorization could not be completed");
    CHECK_BAD(tensor_linalg_cholesky(tensor_neg(tensor_eye(3, TENSOR_F32)), false), "leading minor of order 1");
    CHECK_BAD(tensor_linalg_cholesky(tensor_full(TENSOR_SHAPE(2, 2), NAN, TENSOR_F64), false), "leading minor of order 1");
    /* as PyTorch: [[0, 1], [0, 1]] upper, B ones -> [NaN, 1] */
    CHECK_VALUES(tensor_linalg_solve_triangular(test_tensor(TENSOR_F64, 2, (int64_t[]){2, 2}, (double[]){0, 1, 0, 1}), tensor_ones(TENSOR_SHAPE(2, 1), TENSOR_F64), true, true, false),
                 ((double[]){NAN, 1}), 2, 0, 0);
    tensor_scope_end();
}

/* ---- gradients (f64, the registry sweep of tests/test_autograd.c calls these) ---- */
typedef struct { int op; bool upper, left, unit, adjoint, T; } lc;
enum { L_LU, L_LUS, L_SOLVE, L_INV, L_DET, L_SLOG, L_CHOL, L_TRSM };
/* A well-conditioned square matrix from a leaf x (values in [-1, 1)): x + 3 I (and held transposed
   when T, so the op sees a non-contiguous operand). */
static tensor *la_shift(tensor *x, bool T) {
    int64_t n = tensor_shape(x)[tensor_ndim(x) - 1];
    tensor *s = tensor_add(x, test_like(x, tensor_mul_scalar(tensor_eye(n, TENSOR_F64), 3)));
    return T ? tensor_transpose(s, -1, -2) : s;
}
static tensor *f_la(tensor *const *in, const void *vctx) {
    const lc *c = (const lc *)vctx;
    switch (c->op) {
    case L_LU: return tensor_linalg_lu_factor(la_shift(in[0], c->T), NULL);
    case L_LUS: {
        tensor *piv = NULL, *lu = tensor_linalg_lu_factor(la_shift(in[0], c->T), &piv);
        return tensor_linalg_lu_solve(lu, piv, in[1], c->left, c->adjoint);
    }
    case L_SOLVE: return tensor_linalg_solve(la_shift(in[0], c->T), in[1], c->left);
    case L_INV: return tensor_linalg_inv(la_shift(in[0], c->T));
    case L_DET: return tensor_linalg_det(c->T ? tensor_transpose(in[0], -1, -2) : in[0]);
    case L_SLOG: { tensor *lad = NULL; tensor *s = tensor_linalg_slogdet(c->T ? tensor_transpose(in[0], -1, -2) : in[0], &lad); return s ? lad : NULL; }
    case L_CHOL: { /* x x^T + n I: symmetric positive-definite, so the gradient is defined in every entry */
        tensor *x = c->T ? tensor_transpose(in[0], -1, -2) : in[0];
        int64_t n = tensor_shape(in[0])[tensor_ndim(in[0]) - 1]; /* in[0] square: x may be NULL (an allocation failure the sweep injects) */
        return tensor_linalg_cholesky(tensor_add(tensor_matmul(x, tensor_transpose(x, -1, -2)), test_like(x, tensor_mul_scalar(tensor_eye(n, TENSOR_F64), (double)n))), c->upper);
    }
    case L_TRSM: return tensor_linalg_solve_triangular(la_shift(in[0], c->T), in[1], c->upper, c->left, c->unit);
    default: return NULL;
    }
}
static void la_grad(int line, lc c, int n_in, int nd0, const int64_t *s0, int nd1, const int64_t *s1, bool twice) {
    tensor_scope_begin();
    tensor *in[2] = {test_leaf(nd0, s0, -1, 1), n_in > 1 ? test_leaf(nd1, s1, -1, 1) : NULL};
    int want = (int)(tensor_numel(in[0]) + (n_in > 1 ? tensor_numel(in[1]) : 0));
    int got = test_gradcheck(__FILE__, line, f_la, &c, n_in, in, 1e-6, 1e-5);
    if (got != want) test_fail(__FILE__, line, "gradcheck compared %d elements, expected %d", got, want);
    if (twice) test_gradgradcheck(__FILE__, line, f_la, &c, n_in, in, 1e-5, 1e-4);
    tensor_scope_end();
}
#define LG(c, n_in, s0, s1, twice) la_grad(__LINE__, c, n_in, N_OF(s0), s0, N_OF(s1), s1, twice)
static const int64_t M3[] = {3, 3}, M4[] = {4, 4}, B2x3x3[] = {2, 3, 3}, R3x2[] = {3, 2}, R2x3[] = {2, 3}, R2x3x2[] = {2, 3, 2}, R2x2x3[] = {2, 2, 3}, V3[] = {3};

void gradcheck_linalg_lu_factor(void) {
    LG(((lc){.op = L_LU}), 1, M4, M4, true);
    LG(((lc){.op = L_LU, .T = true}), 1, B2x3x3, M3, false);
}
void gradcheck_linalg_lu_solve(void) {
    LG(((lc){.op = L_LUS, .left = true}), 2, M3, R3x2, true);
    LG(((lc){.op = L_LUS, .left = true, .adjoint = true}), 2, B2x3x3, R3x2, false);
    LG(((lc){.op = L_LUS, .left = false}), 2, M3, R2x3, false);
    LG(((lc){.op = L_LUS, .left = false, .adjoint = true, .T = true}), 2, M3, R2x3, false);
}
void gradcheck_linalg_solve(void) {
    LG(((lc){.op = L_SOLVE, .left = true}), 2, M3, R3x2, true);
    LG(((lc){.op = L_SOLVE, .left = true, .T = true}), 2, B2x3x3, V3, false);      /* vector B, broadcast */
    LG(((lc){.op = L_SOLVE, .left = true}), 2, M3, R2x3x2, false);                 /* A broadcast over B's batch */
    LG(((lc){.op = L_SOLVE, .left = false}), 2, M3, R2x3, false);
}
void gradcheck_linalg_inv(void) {
    LG(((lc){.op = L_INV}), 1, M3, M3, true);
    LG(((lc){.op = L_INV, .T = true}), 1, B2x3x3, M3, false);
}
void gradcheck_linalg_det(void) {
    LG(((lc){.op = L_DET}), 1, M3, M3, true);
    LG(((lc){.op = L_DET, .T = true}), 1, B2x3x3, M3, false);
}
void gradcheck_linalg_slogdet(void) {
    LG(((lc){.op = L_SLOG}), 1, M3, M3, true);
    LG(((lc){.op = L_SLOG, .T = true}), 1, B2x3x3, M3, false);
}
void gradcheck_linalg_cholesky(void) {
    LG(((lc){.op = L_CHOL}), 1, M3, M3, true);
    LG(((lc){.op = L_CHOL, .upper = true, .T = true}), 1, B2x3x3, M3, false);
}
void gradcheck_linalg_solve_triangular(void) {
    LG(((lc){.op = L_TRSM, .upper = true, .left = true}), 2, M3, R3x2, true);
    LG(((lc){.op = L_TRSM, .upper = false, .left = true, .unit = true}), 2, M3, R3x2, false);
    LG(((lc){.op = L_TRSM, .upper = false, .left = false, .T = true}), 2, B2x3x3, R2x3, false);
    LG(((lc){.op = L_TRSM, .upper = true, .left = false, .unit = true}), 2, M3, R2x2x3, false);
}

/* ---- PyTorch's error cases ---- */
static tensor *F(tensor_dtype d, int nd, const int64_t *shape) { return tensor_ones(nd, shape, d); }
#define O(...) F(TENSOR_F32, TENSOR_SHAPE(__VA_ARGS__))
#define D(...) F(TENSOR_F64, TENSOR_SHAPE(__VA_ARGS__))
#define EYE3 tensor_eye(3, TENSOR_F32)

void bad_input_linalg_lu_factor(void) {
    tensor_scope_begin();
    tensor *piv = (tensor *)1;
    CHECK_BAD(tensor_linalg_lu_factor(NULL, &piv), "tensor_linalg_lu_factor");
    CHECK(piv == NULL);
    CHECK_BAD(tensor_linalg_lu_factor(O(3), NULL), "at least 2 dimensions");
    CHECK_BAD(tensor_linalg_lu_factor(O(2, 3), NULL), "square matrices");
    CHECK_BAD(tensor_linalg_lu_factor(F(TENSOR_I32, TENSOR_SHAPE(2, 2)), NULL), "float32 or float64");
    CHECK_BAD(tensor_linalg_lu_factor(F(TENSOR_F16, TENSOR_SHAPE(2, 2)), NULL), "tensor_linalg_lu_factor");
    tensor_scope_end();
}
void bad_input_linalg_lu_solve(void) {
    tensor_scope_begin();
    tensor *piv = NULL, *lu = tensor_linalg_lu_factor(EYE3, &piv);
    CHECK_BAD(tensor_linalg_lu_solve(NULL, piv, O(3, 1), true, false), "tensor_linalg_lu_solve");
    CHECK_BAD(tensor_linalg_lu_solve(lu, NULL, O(3, 1), true, false), "tensor_linalg_lu_solve");
    CHECK_BAD(tensor_linalg_lu_solve(lu, piv, O(3), true, false), "at least 2 dimensions");
    CHECK_BAD(tensor_linalg_lu_solve(lu, piv, O(2, 1), true, false), "incompatible shapes");
    CHECK_BAD(tensor_linalg_lu_solve(lu, piv, O(3, 2), false, false), "incompatible shapes");
    CHECK_BAD(tensor_linalg_lu_solve(lu, piv, D(3, 1), true, false), "same dtype");
    CHECK_BAD(tensor_linalg_lu_solve(lu, tensor_to_dtype(piv, TENSOR_I64), O(3, 1), true, false), "int32");
    CHECK_BAD(tensor_linalg_lu_solve(lu, F(TENSOR_I32, TENSOR_SHAPE(2)), O(3, 1), true, false), "do not match");
    CHECK_BAD(tensor_linalg_lu_solve(lu, F(TENSOR_I32, TENSOR_SHAPE(2, 3)), O(3, 1), true, false), "do not match");
    CHECK_BAD(tensor_linalg_lu_solve(lu, tensor_full(TENSOR_SHAPE(3), 7, TENSOR_I32), O(3, 1), true, false), "pivots must hold values");
    CHECK_BAD(tensor_linalg_lu_solve(lu, tensor_zeros(TENSOR_SHAPE(3), TENSOR_I32), O(3, 1), true, false), "pivots must hold values");
    CHECK_BAD(tensor_linalg_lu_solve(tensor_expand(lu, TENSOR_SHAPE(2, 3, 3)), tensor_expand(piv, TENSOR_SHAPE(2, 3)), O(3, 3, 1), true, false), "cannot be broadcast");
    tensor_scope_end();
}
void bad_input_linalg_solve(void) {
    tensor_scope_begin();
    CHECK_BAD(tensor_linalg_solve(NULL, O(3), true), "tensor_linalg_solve");
    CHECK_BAD(tensor_linalg_solve(EYE3, NULL, true), "tensor_linalg_solve");
    CHECK_BAD(tensor_linalg_solve(O(3), O(3), true), "at least 2 dimensions");
    CHECK_BAD(tensor_linalg_solve(O(2, 3), O(2), true), "square matrices");
    CHECK_BAD(tensor_linalg_solve(EYE3, O(2), true), "incompatible shapes");
    CHECK_BAD(tensor_linalg_solve(EYE3, O(2, 2), true), "incompatible shapes");
    CHECK_BAD(tensor_linalg_solve(EYE3, O(3), false), "left = true");
    CHECK_BAD(tensor_linalg_solve(EYE3, O(3, 2), false), "incompatible shapes");
    CHECK_BAD(tensor_linalg_solve(EYE3, D(3, 1), true), "same dtype");
    CHECK_BAD(tensor_linalg_solve(F(TENSOR_I64, TENSOR_SHAPE(3, 3)), F(TENSOR_I64, TENSOR_SHAPE(3, 1)), true), "float32 or float64");
    CHECK_BAD(tensor_linalg_solve(O(2, 3, 3), O(4, 3, 1), true), "cannot be broadcast");
    CHECK_BAD(tensor_linalg_solve(EYE3, tensor_scalar(1, TENSOR_F32), true), "at least 1 dimension");
    tensor_scope_end();
}
void bad_input_linalg_inv(void) {
    tensor_scope_begin();
    CHECK_BAD(tensor_linalg_inv(NULL), "tensor_linalg_inv");
    CHECK_BAD(tensor_linalg_inv(O(2)), "at least 2 dimensions");
    CHECK_BAD(tensor_linalg_inv(O(2, 3, 2)), "square matrices");
    CHECK_BAD(tensor_linalg_inv(F(TENSOR_BOOL, TENSOR_SHAPE(2, 2))), "float32 or float64");
    tensor_scope_end();
}
void bad_input_linalg_det(void) {
    tensor_scope_begin();
    CHECK_BAD(tensor_linalg_det(NULL), "tensor_linalg_det");
    CHECK_BAD(tensor_linalg_det(O(2, 3)), "but they are 2 by 3 matrices");
    CHECK_BAD(tensor_linalg_det(tensor_scalar(1, TENSOR_F32)), "at least 2 dimensions");
    CHECK_BAD(tensor_linalg_det(F(TENSOR_I32, TENSOR_SHAPE(2, 2))), "float32 or float64");
    tensor_scope_end();
}
void bad_input_linalg_slogdet(void) {
    tensor_scope_begin();
    tensor *lad = (tensor *)1;
    CHECK_BAD(tensor_linalg_slogdet(NULL, &lad), "tensor_linalg_slogdet");
    CHECK(lad == NULL);
    lad = (tensor *)1;
    CHECK_BAD(tensor_linalg_slogdet(O(3, 2), &lad), "square matrices");
    CHECK(lad == NULL);
    CHECK_BAD(tensor_linalg_slogdet(F(TENSOR_BF16, TENSOR_SHAPE(2, 2)), NULL), "float32 or float64");
    tensor_scope_end();
}
void bad_input_linalg_cholesky(void) {
    tensor_scope_begin();
    CHECK_BAD(tensor_linalg_cholesky(NULL, false), "tensor_linalg_cholesky");
    CHECK_BAD(tensor_linalg_cholesky(O(3), false), "at least 2 dimensions");
    CHECK_BAD(tensor_linalg_cholesky(O(2, 3), true), "square matrices");
    CHECK_BAD(tensor_linalg_cholesky(F(TENSOR_I64, TENSOR_SHAPE(2, 2)), false), "float32 or float64");
    CHECK_BAD(tensor_linalg_cholesky(O(3, 3), false), "leading minor of order 2");
    tensor_scope_end();
}
void bad_input_linalg_solve_triangular(void) {
    tensor_scope_begin();
    CHECK_BAD(tensor_linalg_solve_triangular(NULL, O(3, 1), true, true, false), "tensor_linalg_solve_triangular");
    CHECK_BAD(tensor_linalg_solve_triangular(EYE3, NULL, true, true, false), "tensor_linalg_solve_triangular");
    CHECK_BAD(tensor_linalg_solve_triangular(EYE3, O(3), true, true, false), "B must have at least 2 dimensions");
    CHECK_BAD(tensor_linalg_solve_triangular(O(3), O(3, 1), true, true, false), "at least 2 dimensions");
    CHECK_BAD(tensor_linalg_solve_triangular(O(2, 3), O(2, 1), true, true, false), "square matrices");
    CHECK_BAD(tensor_linalg_solve_triangular(EYE3, O(2, 1), true, true, false), "incompatible shapes");
    CHECK_BAD(tensor_linalg_solve_triangular(EYE3, O(3, 1), true, false, false), "incompatible shapes");
    CHECK_BAD(tensor_linalg_solve_triangular(EYE3, D(3, 1), true, true, false), "same dtype");
    CHECK_BAD(tensor_linalg_solve_triangular(F(TENSOR_I32, TENSOR_SHAPE(2, 2)), F(TENSOR_I32, TENSOR_SHAPE(2, 1)), true, true, false), "float32 or float64");
    CHECK_BAD(tensor_linalg_solve_triangular(O(2, 3, 3), O(4, 3, 1), true, true, false), "cannot be broadcast");
    tensor_scope_end();
}
