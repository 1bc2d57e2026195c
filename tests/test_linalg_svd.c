/* Norms and the SVD family of generator/parts/linalg_norm.h (linalg_vector_norm,
   linalg_matrix_norm, linalg_norm, linalg_vecdot, linalg_svd, linalg_svdvals, linalg_pinv,
   linalg_matrix_rank, linalg_lstsq, linalg_cond): values against PyTorch 1.13 (the E_ arrays were
   computed by torch in float64 on the inputs ls_in makes and pasted here), U diag(S) Vh = A and
   orthonormal U, V (tall, wide, square, full and reduced, batched, non-contiguous, f32 and f64,
   rank-deficient and empty), Hilbert singular values against mpmath (50 digits),
   rank-deficient lstsq / pinv / matrix_rank, gradients through the registry sweep (f64
   gradchecks) and the error cases (bad_input_NAME). */
#include "test.h"
#include <float.h>

/* element i of a tensor of seed s: ((3 i^2 + 5 i + 7 s) mod 17 - 8) / 4 (as test_linalg_decomp.c) */
static tensor *ls_in_dt(tensor_dtype dt, int nd, const int64_t *shape, int seed) {
    int64_t n = test_numel(nd, shape);
    double *v = (double *)malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) v[i] = (double)((i * i * 3 + i * 5 + seed * 7) % 17 - 8) / 4.0;
    tensor *t = test_tensor(dt, nd, shape, v);
    free(v);
    return t;
}
#define IN(seed, ...) ls_in_dt(TENSOR_F64, TENSOR_SHAPE(__VA_ARGS__), seed)
#define N_OF(a) ((int64_t)(sizeof(a) / sizeof((a)[0])))
#define CHECK_E(t, name) CHECK_VALUES(t, E_##name, N_OF(E_##name), 1e-12, 1e-12)

/* ---- the numbers PyTorch gives (gen: x = in(5, 2x3x4), A = in(1, 4x3), W = in(2, 3x5),
   Q = in(3, 4x4), Bt = in(4, 2x3x4x3), R = in(7, 4x2) @ in(8, 2x5) of rank 2, S = in(10, 4x4)) ---- */
static const double E_vn2[] = {6.628536791781426};
static const double E_vn3_d1[] = {2.2714007410401744, 2.5206620940226303, 1.3572088082974532, 1.3371203103098408, 2.5206620940226303, 2.2714007410401744, 2.1521881454515137, 1.591524190104223};
static const double E_vninf_d02[] = {2.0, 2.0, 2.0};
static const double E_vnminf_d2k[] = {0.25, 1.25, 0.75, 1.0, 0.25, 0.25};
static const double E_vn0_d2[] = {4.0, 4.0, 4.0, 4.0, 4.0, 4.0};
static const double E_vnhalf_d12[] = {147.60801760541725, 167.69215947096487};
static const double E_vnm1_d0[] = {1.17462117805524, 0.23112042478354491, 0.43020296616731457, 0.23612233801133733, 1.17462117805524, 1.17462117805524, 0.23612233801133733, 0.43020296616731457, 0.23112042478354491, 1.17462117805524, 0.6534454743793757, 0.5815012830586893};
static const double E_mn_fro[] = {4.444097208657794, 4.9180788932265};
static const double E_mn_nuc[] = {6.623828972254707, 7.399273075699085};
static const double E_mn_1[] = {4.5, 4.5};
static const double E_mn_m1[] = {2.25, 3.0};
static const double E_mn_2[] = {4.033688467135518, 3.703779131150285};
static const double E_mn_m2[] = {1.0451268269925504, 0.4984541203409836};
static const double E_mn_inf[] = {6.25, 5.5};
static const double E_mn_minf[] = {2.75, 4.5};
static const double E_mn_2_d20k[] = {3.072833307483705, 4.103944072876411, 3.450370453339393};
static const double E_mn_1_d20[] = {5.5, 6.25, 5.25};
static const double E_mn_inf_d10k[] = {3.75, 3.75, 2.75, 2.0};
static const double E_n_default[] = {6.628536791781426};
static const double E_n_vec3[] = {2.2714007410401744, 2.5206620940226303, 1.3572088082974532, 1.3371203103098408, 2.5206620940226303, 2.2714007410401744, 2.1521881454515137, 1.591524190104223};
static const double E_n_mat_nuc[] = {6.623828972254707, 7.399273075699085};
static const double E_n_2d_inf[] = {4.5};
static const double E_n_1d_half[] = {9.180793566824656};
static const double E_vecdot[] = {-2.25, 1.5, -1.5625, 3.4375, 4.3125, -5.6875, 3.0, -2.5625};
static const double E_sv_tall[] = {4.198140079934741, 1.8661278240764538, 0.5750537483168043};
static const double E_sv_wide[] = {3.029069520057024, 2.402423416707735, 1.1415338670034485};
static const double E_sv_sq[] = {3.752052440295248, 2.686152569756559, 2.5821407186553897, 0.7757165502466304};
static const double E_sv_b[] = {2.826529806330027, 2.386179742659432, 0.7933318912344999, 3.2585189884171184, 1.6382243035260051, 0.7973550861829442, 2.7446711604796974, 0.9397869709844697, 0.38220501043140126, 3.234531184563061, 1.1726548646074435, 0.6893392376773434, 2.9591006814134686, 2.148305429663605, 0.752334326038778, 3.137278937472871, 1.7955427370309156, 0.9661817365199078};
static const double E_pinv_tall[] = {-0.2888383674353145, 0.46195854835023364, -0.05740199439452463, -0.26742689425378585, 1.1111832846162184, 0.17316829658499006, 0.32011355298136834, 0.21055417223004103, -1.0206777092129489, -0.20530956419231802, -0.5273477439765205, -0.4719184920548998};
static const double E_pinv_wide[] = {0.17686641618374419, 0.11157103738139203, 0.035661975418709996, -0.23562376615933273, 0.3487231739158125, -0.34515697637394127, -0.061304633934067654, 0.06406419155575364, 0.6597465452461315, -0.125835827548876, 0.026237024772336554, -0.1194676176526778, 0.24776581969475045, 0.1399732535184359, 0.3917722728141121};
static const double E_rank_def_sv[] = {8.19490623536663, 3.9240539361162132, 6.903435111650944e-16, 4.0366766289847463e-16};
static const double E_pinv_def[] = {0.006000998435061031, 0.02591775931246094, -0.05566588287901077, -0.004341268361944397, 0.09528739359459872, -0.011469844439851162, -0.020255789666161674, -0.10418383009746957, 0.12385033295530987, 0.02124643367566343, -0.10014287135899665, -0.1324006578952805, -0.0062413405708267216, -0.042063179053592616, 0.08873960499604723, 0.0032561873639296037, -0.005279972027763998, 0.02251849991093411, -0.04355528347209867, 0.007596511355988823};
static const double E_rank[] = {2.0, 4.0, 0.0};
static const double E_rank_atol[] = {3.0};
static const double E_pinv_herm[] = {0.03241719520789286, -0.266384778012685, 0.02396053558844248, -0.3537702607470051, -0.266384778012685, -0.0718816067653277, -0.10993657505285424, 0.21141649048625796, 0.023960535588442466, -0.10993657505285426, 0.32205778717406636, 0.3037350246652575, -0.3537702607470051, 0.21141649048625796, 0.3037350246652575, 0.3389711064129671};
static const double E_rank_herm[] = {4.0};
static const double E_ls_x[] = {0.4058075613775513, -0.06446296897742128, 0.775492283449413, -2.8592857228778006, -1.0489095786270202, 3.0557299748595645};
static const double E_ls_res[] = {0.4799545607640769, 1.189783238906333};
static const double E_ls_sv[] = {4.19814007993474, 1.866127824076454, 0.5750537483168044};
static const double E_ls_def_x[] = {-0.11765030856695757, -0.09473446502685492, 0.343854754967297, -0.12947594436103166, 0.2578696408337039, -0.2857889921176987, 0.2013613800171567, 0.14762767792312287, -0.13348290578363983, -0.0639451736619489};
static const double E_ls_def_rank[] = {2.0};
static const double E_ls_wide_x[] = {-0.022585917765182956, 0.3969942049289946, 0.5519327517034964, 0.5148060880086608, -0.25117281198921637, -0.6556072088136027, 0.1423294911800293, -0.029930586512131513, -0.21478910611560406, 0.18983633700566793};
static const double E_ls_vec_x[] = {-0.0799489208272824, 0.474685762932546, 0.17036406429966428, -0.890873015873016, 0.9406746031746032, 0.38174603174603156};
static const double E_ls_vec_res[] = {2.6118217612299066, 9.536569940476195};
static const double E_cond_none[] = {4.836885894857245};
static const double E_cond_2[] = {4.836885894857245};
static const double E_cond_m2[] = {0.20674459181748256};
static const double E_cond_fro[] = {7.598560088656798};
static const double E_cond_nuc[] = {22.679909078963238};
static const double E_cond_1[] = {10.778637770897832};
static const double E_cond_m1[] = {2.796052631578947};
static const double E_cond_inf[] = {8.507739938080496};
static const double E_cond_minf[] = {3.3606811145510833};
static const double E_cond_tall[] = {7.300430772293537};
static const double E_cond_sing1[] = {INFINITY, 1.0};

TEST(linalg_norm_values_against_pytorch) {
    tensor_scope_begin();
    tensor *x = IN(5, 2, 3, 4), *A = IN(1, 4, 3);
    CHECK_E(tensor_linalg_vector_norm(x, 2, 0, NULL, false), vn2);
    CHECK_E(tensor_linalg_vector_norm(x, 3, 1, (int[]){1}, false), vn3_d1);
    CHECK_E(tensor_linalg_vector_norm(x, INFINITY, 2, (int[]){0, 2}, false), vninf_d02);
    tensor *k = tensor_linalg_vector_norm(x, -INFINITY, 1, (int[]){2}, true);
    CHECK_SHAPE(k, 3, (int64_t[]){2, 3, 1});
    CHECK_E(k, vnminf_d2k);
    CHECK_E(tensor_linalg_vector_norm(x, 0, 1, (int[]){2}, false), vn0_d2);
    CHECK_E(tensor_linalg_vector_norm(x, 0.5, 2, (int[]){1, -1}, false), vnhalf_d12);
    CHECK_E(tensor_linalg_vector_norm(x, -1.5, 1, (int[]){0}, false), vnm1_d0);
    CHECK_E(tensor_linalg_matrix_norm(x, NULL, -2, -1, false), mn_fro);
    CHECK_E(tensor_linalg_matrix_norm(x, "fro", -2, -1, false), mn_fro);
    CHECK_E(tensor_linalg_matrix_norm(x, "nuc", -2, -1, false), mn_nuc);
    CHECK_E(tensor_linalg_matrix_norm(x, "1", -2, -1, false), mn_1);
    CHECK_E(tensor_linalg_matrix_norm(x, "-1", -2, -1, false), mn_m1);
    CHECK_E(tensor_linalg_matrix_norm(x, "2", -2, -1, false), mn_2);
    CHECK_E(tensor_linalg_matrix_norm(x, "-2", -2, -1, false), mn_m2);
    CHECK_E(tensor_linalg_matrix_norm(x, "inf", -2, -1, false), mn_inf);
    CHECK_E(tensor_linalg_matrix_norm(x, "-inf", -2, -1, false), mn_minf);
    k = tensor_linalg_matrix_norm(x, "2", 2, 0, true);
    CHECK_SHAPE(k, 3, (int64_t[]){1, 3, 1});
    CHECK_E(k, mn_2_d20k);
    CHECK_E(tensor_linalg_matrix_norm(x, "1", 2, 0, false), mn_1_d20);
    k = tensor_linalg_matrix_norm(x, "inf", 1, 0, true);
    CHECK_SHAPE(k, 3, (int64_t[]){1, 1, 4});
    CHECK_E(k, mn_inf_d10k);
    CHECK_E(tensor_linalg_norm(x, NULL, 0, NULL, false), n_default);
    CHECK_E(tensor_linalg_norm(x, "3", 1, (int[]){1}, false), n_vec3);
    CHECK_E(tensor_linalg_norm(x, "nuc", 2, (int[]){1, 2}, false), n_mat_nuc);
    CHECK_E(tensor_linalg_norm(A, "inf", 0, NULL, false), n_2d_inf);
    CHECK_E(tensor_linalg_norm(tensor_select(A, 1, 0), "0.5", 0, NULL, false), n_1d_half);
    CHECK_E(tensor_linalg_vecdot(x, IN(6, 3, 1), 1), vecdot);
    /* non-contiguous and f32 */
    tensor *xt = tensor_contiguous(tensor_transpose(x, 1, 2));
    CHECK_E(tensor_linalg_matrix_norm(tensor_transpose(xt, 1, 2), "nuc", -2, -1, false), mn_nuc);
    CHECK_VALUES(tensor_linalg_matrix_norm(tensor_to_dtype(x, TENSOR_F32), "2", -2, -1, false), E_mn_2, 2, 1e-5, 1e-5);
    CHECK(tensor_get_dtype(tensor_linalg_vector_norm(tensor_to_dtype(x, TENSOR_F32), 2, 0, NULL, false)) == TENSOR_F32);
    /* a 0-dim input; empty inputs (the 2-norm 0, the inf norm refused) */
    CHECK_VALUES(tensor_linalg_vector_norm(tensor_scalar(-3, TENSOR_F64), 2, 0, NULL, false), ((double[]){3}), 1, 0, 0);
    CHECK_VALUES(tensor_linalg_vector_norm(tensor_zeros(TENSOR_SHAPE(0, 3), TENSOR_F64), 2, 0, NULL, false), ((double[]){0}), 1, 0, 0);
    CHECK_BAD(tensor_linalg_vector_norm(tensor_zeros(TENSOR_SHAPE(0, 3), TENSOR_F64), INFINITY, 0, NULL, false), "does not have an identity");
    tensor_scope_end();
}

/* The subgradient at 0 is 0 (PyTorch's vector_norm backward); the inf norm's is shared among ties. */
TEST(linalg_norm_gradient_at_zero) {
    tensor_scope_begin();
    static const double ords[] = {2, 1, 3, 0.5, INFINITY};
    for (int i = 0; i < 5; i++) {
        tensor *z = tensor_set_requires_grad(tensor_zeros(TENSOR_SHAPE(3), TENSOR_F64), true);
        CHECK(tensor_backward(tensor_linalg_vector_norm(z, ords[i], 0, NULL, false)) == 0);
        CHECK_VALUES(tensor_grad(z), ((double[]){0, 0, 0}), 3, 0, 0);
    }
    tensor *t = tensor_set_requires_grad(test_tensor(TENSOR_F64, 1, (int64_t[]){3}, (double[]){-2, 1, 2}), true);
    CHECK(tensor_backward(tensor_linalg_vector_norm(t, INFINITY, 0, NULL, false)) == 0);
    CHECK_VALUES(tensor_grad(t), ((double[]){-0.5, 0, 0.5}), 3, 0, 0);
    tensor_scope_end();
}

/* max |M - N| */
static double ls_diff(tensor *M, tensor *N) { return M && N ? tensor_item(tensor_max_all(tensor_abs(tensor_sub(M, N)))) : INFINITY; }
/* U diag(S) Vh = A, U^T U = I, Vh Vh^T = I, S descending and >= 0, for one call */
static void ls_check_svd(int line, tensor *A, bool full, double tol) {
    tensor *S = NULL, *Vh = NULL;
    tensor *U = tensor_linalg_svd(A, full, &S, &Vh);
    if (!U || !S || !Vh) { test_fail(__FILE__, line, "svd failed: %s", tensor_last_error()); return; }
    int nd = tensor_ndim(A);
    int64_t m = tensor_shape(A)[nd - 2], n = tensor_shape(A)[nd - 1], k = m < n ? m : n;
    tensor_dtype dt = tensor_get_dtype(A);
    CHECK_MSG(tensor_get_dtype(U) == dt && tensor_get_dtype(S) == dt && tensor_get_dtype(Vh) == dt, "line %d: dtypes", line);
    CHECK_MSG(tensor_shape(U)[nd - 2] == m && tensor_shape(U)[nd - 1] == (full ? m : k), "line %d: U's shape", line);
    CHECK_MSG(tensor_shape(Vh)[nd - 2] == (full ? n : k) && tensor_shape(Vh)[nd - 1] == n, "line %d: Vh's shape", line);
    CHECK_MSG(tensor_ndim(S) == nd - 1 && tensor_shape(S)[nd - 2] == k, "line %d: S's shape", line);
    tensor *Uk = tensor_narrow(U, -1, 0, k), *Vk = tensor_narrow(Vh, -2, 0, k);
    double scale = k ? tensor_item(tensor_max_all(S)) : 0;
    if (scale < 1) scale = 1;
    CHECK_MSG(ls_diff(tensor_matmul(tensor_mul(Uk, tensor_unsqueeze(S, -2)), Vk), A) <= tol * scale, "line %d: U S Vh != A (%.3g)", line,
              ls_diff(tensor_matmul(tensor_mul(Uk, tensor_unsqueeze(S, -2)), Vk), A));
    int64_t uc = tensor_shape(U)[nd - 1], vr = tensor_shape(Vh)[nd - 2];
    CHECK_MSG(ls_diff(tensor_matmul(tensor_transpose(U, -1, -2), U), tensor_eye(uc, dt)) <= tol, "line %d: U^T U != I", line);
    CHECK_MSG(ls_diff(tensor_matmul(Vh, tensor_transpose(Vh, -1, -2)), tensor_eye(vr, dt)) <= tol, "line %d: Vh Vh^T != I", line);
    double *s = test_values(S);
    int64_t ns = tensor_numel(S);
    for (int64_t i = 0; s && i < ns; i++) {
        CHECK_MSG(s[i] >= 0, "line %d: S[%lld] = %g < 0", line, (long long)i, s[i]);
        if (i % k) CHECK_MSG(s[i] <= s[i - 1], "line %d: S not descending at %lld", line, (long long)i);
    }
    free(s);
    /* svdvals agrees */
    CHECK_MSG(ls_diff(tensor_linalg_svdvals(A), S) <= tol * scale, "line %d: svdvals != S", line);
}
#define SVD_OK(A, full, tol) ls_check_svd(__LINE__, A, full, tol)

TEST(linalg_svd_reconstruction) {
    tensor_scope_begin();
    const double e64 = 1e-13, e32 = 2e-5;
    tensor *A = IN(1, 4, 3), *W = IN(2, 3, 5), *Q = IN(3, 4, 4), *Bt = IN(4, 2, 3, 4, 3);
    CHECK_E(tensor_linalg_svdvals(A), sv_tall);
    CHECK_E(tensor_linalg_svdvals(W), sv_wide);
    CHECK_E(tensor_linalg_svdvals(Q), sv_sq);
    CHECK_E(tensor_linalg_svdvals(Bt), sv_b);
    CHECK_VALUES(tensor_linalg_svdvals(tensor_to_dtype(Bt, TENSOR_F32)), E_sv_b, N_OF(E_sv_b), 1e-5, 1e-5);
    tensor *S = NULL;
    tensor_free(tensor_linalg_svd(A, false, &S, NULL));
    CHECK_E(S, sv_tall);
    for (int full = 0; full < 2; full++) {
        tensor *ins[] = {A, W, Q, Bt, tensor_transpose(Bt, -1, -2), IN(9, 1, 7), IN(9, 6, 1), tensor_zeros(TENSOR_SHAPE(3, 2), TENSOR_F64),
                         IN(7, 4, 2) /* rank 2 below */, tensor_matmul(IN(7, 4, 2), IN(8, 2, 5)), tensor_matmul(IN(8, 5, 2), IN(7, 2, 4)),
                         tensor_expand(IN(6, 1, 3, 3), TENSOR_SHAPE(3, 3, 3))};
        for (int i = 0; i < (int)(sizeof ins / sizeof ins[0]); i++) {
            SVD_OK(ins[i], full, e64);
            SVD_OK(tensor_to_dtype(ins[i], TENSOR_F32), full, e32);
        }
        SVD_OK(test_random(TENSOR_F64, 3, (int64_t[]){3, 9, 6}, -1, 1), full, e64);
        SVD_OK(test_random(TENSOR_F64, 2, (int64_t[]){5, 12}, -1, 1), full, e64);
    }
    /* rank-deficient: zero singular values (to rounding) */
    double *sv = test_values(tensor_linalg_svdvals(tensor_matmul(IN(7, 4, 2), IN(8, 2, 5))));
    CHECK(sv && fabs(sv[0] - E_rank_def_sv[0]) < 1e-13 && fabs(sv[1] - E_rank_def_sv[1]) < 1e-13 && sv[2] < 1e-14 && sv[3] < 1e-14);
    free(sv);
    /* empty: k = 0; full_matrices gives identities (as PyTorch) */
    tensor *Vh = NULL;
    tensor *U = tensor_linalg_svd(tensor_zeros(TENSOR_SHAPE(0, 3), TENSOR_F64), true, &S, &Vh);
    CHECK_SHAPE(U, 2, (int64_t[]){0, 0});
    CHECK_SHAPE(S, 1, (int64_t[]){0});
    CHECK(ls_diff(Vh, tensor_eye(3, TENSOR_F64)) == 0);
    U = tensor_linalg_svd(tensor_zeros(TENSOR_SHAPE(2, 2, 0), TENSOR_F64), true, &S, &Vh);
    CHECK_SHAPE(U, 3, (int64_t[]){2, 2, 2});
    CHECK(ls_diff(U, tensor_eye(2, TENSOR_F64)) == 0);
    CHECK_SHAPE(Vh, 3, (int64_t[]){2, 0, 0});
    CHECK_SHAPE(tensor_linalg_svdvals(tensor_zeros(TENSOR_SHAPE(0, 4, 3), TENSOR_F64)), 2, (int64_t[]){0, 3});
    tensor_scope_end();
}

/* The Hilbert matrix of order 8 (cond 1.5e10), f64: every singular value against mpmath's (50
   digits, of the f64-rounded matrix), within eps * sigma_max / sigma_i * 8, the bound a backward
   stable SVD meets (Jacobi meets much better: relative accuracy). */
TEST(linalg_svd_hilbert_accuracy) {
    static const double ref[] = {1.6959389969219494359, 0.29812521131693071067, 0.026212843578119050945, 0.0014676881177418471388,
                                 0.0000543694336975089627, 1.2943320918741792919e-6, 1.7988737460063012302e-8, 1.1115389694888081586e-10};
    tensor_scope_begin();
    double h[64];
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++) h[i * 8 + j] = 1.0 / (i + j + 1);
    tensor *H = test_tensor(TENSOR_F64, 2, (int64_t[]){8, 8}, h);
    double *s = test_values(tensor_linalg_svdvals(H));
    CHECK(s != NULL);
    for (int i = 0; s && i < 8; i++) {
        double rel = fabs(s[i] - ref[i]) / ref[i], bound = 8 * DBL_EPSILON * ref[0] / ref[i];
        CHECK_MSG(rel <= bound, "Hilbert sigma_%d = %.17g vs %.17g: relative error %.3g > %.3g", i, s[i], ref[i], rel, bound);
    }
    free(s);
    /* its condition number and matrix_rank (all 8 above eps * 8 * sigma_max) */
    CHECK_NEAR(tensor_item(tensor_linalg_cond(H, NULL)), ref[0] / ref[7], 0, 1e-6);
    CHECK(tensor_item(tensor_linalg_matrix_rank(H, 0, -1, false)) == 8);
    CHECK(tensor_item(tensor_linalg_matrix_rank(H, 0, 1e-9, true)) == 7);
    tensor_scope_end();
}

TEST(linalg_svd_composites_against_pytorch) {
    tensor_scope_begin();
    tensor *A = IN(1, 4, 3), *W = IN(2, 3, 5), *Q = IN(3, 4, 4);
    tensor *R = tensor_matmul(IN(7, 4, 2), IN(8, 2, 5));
    CHECK_E(tensor_linalg_pinv(A, 0, -1, false), pinv_tall);
    CHECK_E(tensor_linalg_pinv(W, 0, -1, false), pinv_wide);
    CHECK_E(tensor_linalg_pinv(R, 0, -1, false), pinv_def);
    CHECK_E(tensor_linalg_pinv(IN(10, 4, 4), 0, -1, true), pinv_herm);
    CHECK_VALUES(tensor_linalg_pinv(tensor_to_dtype(A, TENSOR_F32), 0, -1, false), E_pinv_tall, N_OF(E_pinv_tall), 1e-5, 1e-5);
    /* the Moore-Penrose conditions on the rank-deficient R */
    tensor *P = tensor_linalg_pinv(R, 0, -1, false);
    CHECK(ls_diff(tensor_matmul(tensor_matmul(R, P), R), R) < 1e-12);
    CHECK(ls_diff(tensor_matmul(tensor_matmul(P, R), P), P) < 1e-12);
    tensor *rk = tensor_linalg_matrix_rank(tensor_stack(3, (tensor *[]){R, IN(9, 4, 5), tensor_zeros(TENSOR_SHAPE(4, 5), TENSOR_F64)}, 0), 0, -1, false);
    CHECK(rk && tensor_get_dtype(rk) == TENSOR_I64);
    CHECK_E(rk, rank);
    CHECK_E(tensor_linalg_matrix_rank(IN(9, 4, 5), 1.0, 0, false), rank_atol);
    CHECK_E(tensor_linalg_matrix_rank(IN(10, 4, 4), 0, -1, true), rank_herm);
    CHECK_VALUES(tensor_linalg_matrix_rank(tensor_to_dtype(R, TENSOR_F32), 0, -1, false), ((double[]){2}), 1, 0, 0);
    tensor *res = NULL, *rank = NULL, *sv = NULL;
    CHECK_E(tensor_linalg_lstsq(A, IN(11, 4, 2), -1, &res, &rank, &sv), ls_x);
    CHECK_E(res, ls_res);
    CHECK_VALUES(rank, ((double[]){3}), 1, 0, 0);
    CHECK(rank && tensor_get_dtype(rank) == TENSOR_I64);
    CHECK_E(sv, ls_sv);
    CHECK_E(tensor_linalg_lstsq(R, IN(12, 4, 2), -1, &res, &rank, NULL), ls_def_x);
    CHECK_E(rank, ls_def_rank);
    CHECK_SHAPE(res, 1, (int64_t[]){0}); /* rank-deficient: no residuals */
    CHECK_E(tensor_linalg_lstsq(W, IN(13, 3, 2), -1, &res, NULL, NULL), ls_wide_x);
    CHECK_SHAPE(res, 1, (int64_t[]){0}); /* m < n */
    tensor *xv = tensor_linalg_lstsq(IN(14, 2, 5, 3), IN(15, 2, 5), -1, &res, NULL, NULL);
    CHECK_SHAPE(xv, 2, (int64_t[]){2, 3});
    CHECK_E(xv, ls_vec_x);
    CHECK_E(res, ls_vec_res);
    /* B [4, 2] with A [2, 4, 3]: matrices (not A's shape without its last dim), broadcast */
    tensor *A2 = IN(14, 2, 4, 3), *B2 = IN(16, 4, 2);
    tensor *X2 = tensor_linalg_lstsq(A2, B2, -1, NULL, NULL, NULL);
    CHECK_SHAPE(X2, 3, (int64_t[]){2, 3, 2});
    CHECK(ls_diff(X2, tensor_linalg_lstsq(A2, tensor_contiguous(tensor_expand(B2, TENSOR_SHAPE(2, 4, 2))), -1, NULL, NULL, NULL)) < 1e-14);
    CHECK(ls_diff(tensor_select(X2, 0, 1), tensor_linalg_lstsq(tensor_select(A2, 0, 1), B2, -1, NULL, NULL, NULL)) < 1e-13);
    /* the minimum-norm solution of the rank-deficient system is pinv(R) B */
    CHECK(ls_diff(tensor_linalg_lstsq(R, IN(12, 4, 2), -1, NULL, NULL, NULL), tensor_matmul(P, IN(12, 4, 2))) < 1e-12);
    CHECK_E(tensor_linalg_cond(Q, NULL), cond_none);
    CHECK_E(tensor_linalg_cond(Q, "2"), cond_2);
    CHECK_E(tensor_linalg_cond(Q, "-2"), cond_m2);
    CHECK_E(tensor_linalg_cond(Q, "fro"), cond_fro);
    CHECK_E(tensor_linalg_cond(Q, "nuc"), cond_nuc);
    CHECK_E(tensor_linalg_cond(Q, "1"), cond_1);
    CHECK_E(tensor_linalg_cond(Q, "-1"), cond_m1);
    CHECK_E(tensor_linalg_cond(Q, "inf"), cond_inf);
    CHECK_E(tensor_linalg_cond(Q, "-inf"), cond_minf);
    CHECK_E(tensor_linalg_cond(A, NULL), cond_tall);
    CHECK_E(tensor_linalg_cond(tensor_stack(2, (tensor *[]){test_tensor(TENSOR_F64, 2, (int64_t[]){2, 2}, (double[]){1, 2, 2, 4}), tensor_mul_scalar(tensor_eye(2, TENSOR_F64), 2)}, 0), "1"), cond_sing1);
    tensor_scope_end();
}

/* ---- gradients (f64, the registry sweep of tests/test_autograd.c calls these) ---- */
typedef struct { int op; double ord; const char *s; int n, d0, d1; bool keep, full, T; int64_t m, k; } lsc;
enum { G_VN, G_MN, G_N, G_VD, G_SVD, G_SV, G_PINV, G_LS, G_COND };
/* x + D, D the m x n "diagonal" 3, 6, 9, ...: well-separated singular values (and held transposed
   when T, so the op sees a non-contiguous operand) */
static tensor *ls_sep(tensor *x, bool T) {
    if (!x || tensor_numel(x) == 0) return x; /* nothing to separate (tests/test_empty.c's sweep) */
    int nd = tensor_ndim(x);
    int64_t m = tensor_shape(x)[nd - 2], n = tensor_shape(x)[nd - 1];
    double d[64] = {0};
    for (int64_t i = 0; i < m && i < n; i++) d[i * n + i] = 3.0 * (double)(i + 1);
    tensor *s = tensor_add(x, test_like(x, test_tensor(TENSOR_F64, 2, (int64_t[]){m, n}, d)));
    return T ? tensor_transpose(tensor_contiguous(tensor_transpose(s, -1, -2)), -1, -2) : s;
}
/* U and Vh with the signs fixed by U's diagonal (a smooth function of A, as PyTorch's gauge) */
static tensor *ls_svd_fixed(tensor *A, bool full) {
    tensor *S = NULL, *Vh = NULL;
    if (A && tensor_numel(A) == 0) full = false; /* the full factors' columns narrowed away below can be huge (tests/test_empty.c) */
    tensor *U = tensor_linalg_svd(A, full, &S, &Vh);
    if (!U || !S || !Vh) return NULL;
    int64_t k = tensor_shape(S)[tensor_ndim(S) - 1];
    U = tensor_narrow(U, -1, 0, k);
    Vh = tensor_narrow(Vh, -2, 0, k);
    tensor *sg = tensor_sign(tensor_detach(tensor_diagonal(U, 0, -2, -1)));
    U = tensor_mul(U, tensor_unsqueeze(sg, -2));
    Vh = tensor_mul(Vh, tensor_unsqueeze(sg, -1));
    tensor *parts[3] = {tensor_flatten(U, 0, -1), tensor_flatten(S, 0, -1), tensor_flatten(Vh, 0, -1)};
    return tensor_cat(3, parts, 0);
}
static tensor *f_ls(tensor *const *in, const void *vctx) {
    const lsc *c = (const lsc *)vctx;
    tensor *x = c->T && in[0] ? tensor_transpose(tensor_contiguous(tensor_transpose(in[0], -1, -2)), -1, -2) : in[0];
    int dd[2] = {c->d0, c->d1};
    switch (c->op) {
    case G_VN: return tensor_linalg_vector_norm(x, c->ord, c->n, c->n ? dd : NULL, c->keep);
    case G_MN: return tensor_linalg_matrix_norm(c->s && (strcmp(c->s, "2") == 0 || strcmp(c->s, "-2") == 0 || strcmp(c->s, "nuc") == 0) ? ls_sep(in[0], c->T) : x, c->s, c->d0, c->d1, c->keep);
    case G_N: return tensor_linalg_norm(x, c->s, c->n, c->n ? dd : NULL, c->keep);
    case G_VD: return tensor_linalg_vecdot(x, in[1], c->d0);
    case G_SVD: return ls_svd_fixed(ls_sep(in[0], c->T), c->full);
    case G_SV: return tensor_linalg_svdvals(ls_sep(in[0], c->T));
    case G_PINV: return tensor_linalg_pinv(ls_sep(c->full ? tensor_add(in[0], tensor_transpose(in[0], -1, -2)) : in[0], c->T), 0, -1, c->full);
    case G_LS: return tensor_linalg_lstsq(ls_sep(in[0], c->T), in[1], -1, NULL, NULL, NULL);
    case G_COND: return tensor_linalg_cond(ls_sep(in[0], c->T), c->s);
    default: return NULL;
    }
}
static void ls_grad(int line, lsc c, int n_in, int nd0, const int64_t *s0, int nd1, const int64_t *s1) {
    tensor_scope_begin();
    tensor *in[2] = {test_leaf(nd0, s0, -1, 1), n_in > 1 ? test_leaf(nd1, s1, -1, 1) : NULL};
    int want = (int)(tensor_numel(in[0]) + (n_in > 1 ? tensor_numel(in[1]) : 0));
    int got = test_gradcheck(__FILE__, line, f_ls, &c, n_in, in, 1e-6, 1e-5);
    if (got != want) test_fail(__FILE__, line, "gradcheck compared %d elements, expected %d", got, want);
    tensor_scope_end();
}
#define LG(c, n_in, s0, s1) ls_grad(__LINE__, c, n_in, N_OF(s0), s0, N_OF(s1), s1)
static const int64_t M3[] = {3, 3}, M43[] = {4, 3}, M35[] = {3, 5}, B243[] = {2, 4, 3}, B234[] = {2, 3, 4}, V4[] = {4}, M42[] = {4, 2}, M31[] = {3, 1}, M41[] = {4, 1}, B24[] = {2, 4};

void gradcheck_linalg_vector_norm(void) {
    LG(((lsc){.op = G_VN, .ord = 2}), 1, B234, V4);
    LG(((lsc){.op = G_VN, .ord = 3, .n = 2, .d0 = 0, .d1 = -1, .keep = true, .T = true}), 1, B234, V4);
    LG(((lsc){.op = G_VN, .ord = INFINITY, .n = 1, .d0 = 1}), 1, B234, V4);
    LG(((lsc){.op = G_VN, .ord = 0.5, .n = 1, .d0 = 2}), 1, B234, V4);
    LG(((lsc){.op = G_VN, .ord = -2, .n = 1, .d0 = 2}), 1, B234, V4);
}
void gradcheck_linalg_matrix_norm(void) {
    LG(((lsc){.op = G_MN, .s = "fro", .d0 = -2, .d1 = -1, .T = true}), 1, B243, V4);
    LG(((lsc){.op = G_MN, .s = "1", .d0 = 0, .d1 = 2, .keep = true}), 1, B243, V4);
    LG(((lsc){.op = G_MN, .s = "-inf", .d0 = -2, .d1 = -1}), 1, B243, V4);
    LG(((lsc){.op = G_MN, .s = "2", .d0 = -2, .d1 = -1}), 1, B243, V4);
    LG(((lsc){.op = G_MN, .s = "-2", .d0 = -1, .d1 = -2, .T = true}), 1, M35, V4);
    LG(((lsc){.op = G_MN, .s = "nuc", .d0 = -2, .d1 = -1, .keep = true}), 1, B243, V4);
}
void gradcheck_linalg_norm(void) {
    LG(((lsc){.op = G_N}), 1, B234, V4);
    LG(((lsc){.op = G_N, .s = "3", .n = 1, .d0 = 1}), 1, B234, V4);
    LG(((lsc){.op = G_N, .s = "inf", .n = 2, .d0 = 1, .d1 = 2, .T = true}), 1, B234, V4);
}
void gradcheck_linalg_vecdot(void) {
    LG(((lsc){.op = G_VD, .d0 = -1}), 2, B234, V4);
    LG(((lsc){.op = G_VD, .d0 = 1, .T = true}), 2, B243, M41);
}
void gradcheck_linalg_svd(void) {
    LG(((lsc){.op = G_SVD}), 1, M43, V4);
    LG(((lsc){.op = G_SVD, .T = true}), 1, M35, V4);
    LG(((lsc){.op = G_SVD, .full = true}), 1, B243, V4);
    LG(((lsc){.op = G_SVD, .full = true}), 1, M35, V4);
    LG(((lsc){.op = G_SVD}), 1, M3, V4);
}
void gradcheck_linalg_svdvals(void) {
    LG(((lsc){.op = G_SV}), 1, B243, V4);
    LG(((lsc){.op = G_SV, .T = true}), 1, M35, V4);
}
void gradcheck_linalg_pinv(void) {
    LG(((lsc){.op = G_PINV}), 1, M43, V4);
    LG(((lsc){.op = G_PINV, .T = true}), 1, B234, V4);
    LG(((lsc){.op = G_PINV, .full = true}), 1, M3, V4); /* hermitian: of a symmetric input, as PyTorch's gradcheck */
}
void gradcheck_linalg_lstsq(void) {
    LG(((lsc){.op = G_LS}), 2, M43, M42);
    LG(((lsc){.op = G_LS, .T = true}), 2, B243, B24); /* a batch of vectors */
    LG(((lsc){.op = G_LS}), 2, M35, M31);
}
void gradcheck_linalg_cond(void) {
    LG(((lsc){.op = G_COND}), 1, M43, V4);
    LG(((lsc){.op = G_COND, .s = "-2", .T = true}), 1, B234, V4);
    LG(((lsc){.op = G_COND, .s = "fro"}), 1, M3, V4);
    LG(((lsc){.op = G_COND, .s = "1"}), 1, M3, V4);
}

/* ---- repeated singular values (issue 24): pinv's and lstsq's gradients are PyTorch's
   pinv_backward, with no 1 / (s_i - s_j), so they are finite where singular values repeat ---- */
static tensor *ls_leaf(int nd, const int64_t *shape, const double *v) { return tensor_set_requires_grad(test_tensor(TENSOR_F64, nd, shape, v), true); }
static const double L_2I[] = {2, 0, 0, 0, 2, 0, 0, 0, 2}, L_I[] = {1, 0, 0, 0, 1, 0, 0, 0, 1};
/* the first two columns of the 4 x 4 Hadamard matrix / 2: orthonormal, both singular values 1 */
static const double L_ORTHO[] = {0.5, 0.5, 0.5, -0.5, 0.5, 0.5, 0.5, -0.5}, L_ORTHO_T[] = {0.5, 0.5, 0.5, 0.5, 0.5, -0.5, 0.5, -0.5};
static const double L_B42[] = {1, 2, 3, 4, 5, 6, 7, 8}, L_B2[] = {1, -2};

TEST(linalg_pinv_lstsq_grad_repeated_singular_values) {
    tensor_scope_begin();
    /* d sum(pinv(2 I)) / dA = -0.25 in every entry (PyTorch; hermitian too: the gradient of the
       symmetric input, every entry) */
    for (int herm = 0; herm < 2; herm++)
        for (int f32 = 0; f32 < 2; f32++) {
            tensor *A = test_tensor(f32 ? TENSOR_F32 : TENSOR_F64, TENSOR_SHAPE(3, 3), L_2I);
            tensor_set_requires_grad(A, true);
            CHECK(tensor_backward(tensor_sum_all(tensor_linalg_pinv(A, 0, -1, herm != 0))) == 0);
            CHECK_VALUES(tensor_grad(A), ((double[]){-0.25, -0.25, -0.25, -0.25, -0.25, -0.25, -0.25, -0.25, -0.25}), 9, 1e-6, 0);
        }
    /* lstsq with orthonormal columns: X = A^T B, sum(X); the gradients from mpmath (60 digits,
       central differences of sum((A^T A)^-1 A^T B)) */
    tensor *A = ls_leaf(TENSOR_SHAPE(4, 2), L_ORTHO), *B = ls_leaf(TENSOR_SHAPE(4, 2), L_B42);
    tensor *X = tensor_linalg_lstsq(A, B, -1, NULL, NULL, NULL);
    CHECK_VALUES(X, ((double[]){8, 10, -2, -2}), 4, 1e-12, 0);
    CHECK(tensor_backward(tensor_sum_all(X)) == 0);
    CHECK_VALUES(tensor_grad(A), ((double[]){-22, 0, -4, -4, -14, 8, 4, 4}), 8, 1e-12, 0);
    CHECK_VALUES(tensor_grad(B), ((double[]){1, 1, 0, 0, 1, 1, 0, 0}), 8, 1e-12, 0);
    /* wide (orthonormal rows), B a vector: the minimum-norm solution, sum(x * [1, 2, 3, 4]) */
    tensor *Aw = ls_leaf(TENSOR_SHAPE(2, 4), L_ORTHO_T), *bw = ls_leaf(TENSOR_SHAPE(2), L_B2);
    tensor *xw = tensor_linalg_lstsq(Aw, bw, -1, NULL, NULL, NULL);
    CHECK(tensor_backward(tensor_sum_all(tensor_mul(xw, test_tensor(TENSOR_F64, TENSOR_SHAPE(4), (double[]){1, 2, 3, 4})))) == 0);
    CHECK_VALUES(tensor_grad(Aw), ((double[]){1.5, -8.5, 3.5, -6.5, 1.5, 3.5, -2.5, -0.5}), 8, 1e-12, 0);
    CHECK_VALUES(tensor_grad(bw), ((double[]){5, -1}), 2, 1e-12, 0);
    tensor_scope_end();
}

/* first and second derivatives against finite differences at repeated singular values */
typedef struct { int op; } lrc;
static tensor *f_rep(tensor *const *in, const void *vctx) {
    switch (((const lrc *)vctx)->op) {
    case 0: return tensor_linalg_pinv(in[0], 0, -1, false);
    case 1: return tensor_linalg_pinv(tensor_add(in[0], tensor_transpose(in[0], -1, -2)), 0, -1, true); /* symmetric: every entry counts */
    case 2: return tensor_linalg_pinv(in[0], 0, -1, false); /* tall or wide, orthonormal */
    default: return tensor_linalg_lstsq(in[0], in[1], -1, NULL, NULL, NULL);
    }
}
TEST(linalg_pinv_lstsq_gradcheck_repeated_singular_values) {
    tensor_scope_begin();
    struct { lrc c; int n; tensor *in[2]; } cases[] = {
        {{0}, 1, {ls_leaf(TENSOR_SHAPE(3, 3), L_2I), NULL}},
        {{1}, 1, {ls_leaf(TENSOR_SHAPE(3, 3), L_I), NULL}},
        {{2}, 1, {ls_leaf(TENSOR_SHAPE(4, 2), L_ORTHO), NULL}},
        {{2}, 1, {ls_leaf(TENSOR_SHAPE(2, 4), L_ORTHO_T), NULL}},
        {{3}, 2, {ls_leaf(TENSOR_SHAPE(4, 2), L_ORTHO), ls_leaf(TENSOR_SHAPE(4, 2), L_B42)}},
        {{3}, 2, {ls_leaf(TENSOR_SHAPE(2, 4), L_ORTHO_T), ls_leaf(TENSOR_SHAPE(2), L_B2)}},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int want = 0;
        for (int k = 0; k < cases[i].n; k++) want += (int)tensor_numel(cases[i].in[k]);
        CHECK(GRADCHECK(f_rep, &cases[i].c, cases[i].n, cases[i].in) == want);
        CHECK(GRADGRADCHECK(f_rep, &cases[i].c, cases[i].n, cases[i].in) == want);
    }
    tensor_scope_end();
}

/* ---- the error cases ---- */
static tensor *F(tensor_dtype d, int nd, const int64_t *shape) { return tensor_ones(nd, shape, d); }
#define O(...) F(TENSOR_F32, TENSOR_SHAPE(__VA_ARGS__))
#define D(...) F(TENSOR_F64, TENSOR_SHAPE(__VA_ARGS__))

void bad_input_linalg_vector_norm(void) {
    tensor_scope_begin();
    CHECK_BAD(tensor_linalg_vector_norm(NULL, 2, 0, NULL, false), "tensor_linalg_vector_norm");
    CHECK_BAD(tensor_linalg_vector_norm(F(TENSOR_I64, TENSOR_SHAPE(3)), 2, 0, NULL, false), "floating point");
    CHECK_BAD(tensor_linalg_vector_norm(O(3), NAN, 0, NULL, false), "NaN");
    CHECK_BAD(tensor_linalg_vector_norm(O(3), 2, 1, NULL, false), "dims");
    CHECK_BAD(tensor_linalg_vector_norm(O(3), 2, -1, NULL, false), "n must be");
    CHECK_BAD(tensor_linalg_vector_norm(O(3, 2), 2, 1, (int[]){2}, false), "tensor_linalg_vector_norm");
    CHECK_BAD(tensor_linalg_vector_norm(O(3, 2), 2, 2, (int[]){1, -1}, false), "more than once");
    CHECK_BAD(tensor_linalg_vector_norm(O(3, 0), -1, 1, (int[]){1}, false), "identity");
    tensor_scope_end();
}
void bad_input_linalg_matrix_norm(void) {
    tensor_scope_begin();
    CHECK_BAD(tensor_linalg_matrix_norm(NULL, NULL, -2, -1, false), "tensor_linalg_matrix_norm");
    CHECK_BAD(tensor_linalg_matrix_norm(O(3), NULL, -2, -1, false), "at least 2 dimensions");
    CHECK_BAD(tensor_linalg_matrix_norm(O(3, 3), "3", -2, -1, false), "not supported");
    CHECK_BAD(tensor_linalg_matrix_norm(O(3, 3), "fro", 0, 0, false), "must be different");
    CHECK_BAD(tensor_linalg_matrix_norm(O(3, 3), "fro", 0, 2, false), "tensor_linalg_matrix_norm");
    CHECK_BAD(tensor_linalg_matrix_norm(F(TENSOR_I32, TENSOR_SHAPE(2, 2)), NULL, -2, -1, false), "floating point");
    CHECK_BAD(tensor_linalg_matrix_norm(F(TENSOR_F16, TENSOR_SHAPE(2, 2)), "nuc", -2, -1, false), "float32 or float64");
    CHECK_BAD(tensor_linalg_matrix_norm(O(0, 3), "2", -2, -1, false), "no identity");
    CHECK_BAD(tensor_linalg_matrix_norm(O(0, 3), "inf", -2, -1, false), "no identity");
    CHECK_BAD(tensor_linalg_matrix_norm(O(3, 0), "1", -2, -1, false), "no identity");
    tensor_scope_end();
}
void bad_input_linalg_norm(void) {
    tensor_scope_begin();
    CHECK_BAD(tensor_linalg_norm(NULL, NULL, 0, NULL, false), "tensor_linalg_norm");
    CHECK_BAD(tensor_linalg_norm(O(2, 2, 2), "fro", 0, NULL, false), "1-D or 2-D");
    CHECK_BAD(tensor_linalg_norm(O(2, 2, 2), NULL, 3, (int[]){0, 1, 2}, false), "n must be");
    CHECK_BAD(tensor_linalg_norm(O(2, 2), NULL, 1, NULL, false), "dims");
    CHECK_BAD(tensor_linalg_norm(O(3), "fro", 0, NULL, false), "not supported for a vector norm");
    CHECK_BAD(tensor_linalg_norm(O(3), "2x", 0, NULL, false), "not supported for a vector norm");
    CHECK_BAD(tensor_linalg_norm(O(3, 3), "3", 0, NULL, false), "not supported for a matrix norm");
    CHECK_BAD(tensor_linalg_norm(F(TENSOR_I64, TENSOR_SHAPE(3)), NULL, 0, NULL, false), "floating point");
    tensor_scope_end();
}
void bad_input_linalg_vecdot(void) {
    tensor_scope_begin();
    CHECK_BAD(tensor_linalg_vecdot(NULL, O(3), -1), "tensor_linalg_vecdot");
    CHECK_BAD(tensor_linalg_vecdot(O(3), NULL, -1), "tensor_linalg_vecdot");
    CHECK_BAD(tensor_linalg_vecdot(O(3), D(3), -1), "same dtype");
    CHECK_BAD(tensor_linalg_vecdot(O(3), O(4), -1), "tensor_linalg_vecdot");
    CHECK_BAD(tensor_linalg_vecdot(O(3), O(3), 1), "tensor_linalg_vecdot");
    CHECK_BAD(tensor_linalg_vecdot(tensor_scalar(1, TENSOR_F32), tensor_scalar(1, TENSOR_F32), -1), "at least 1 dimension");
    tensor_scope_end();
}
void bad_input_linalg_svd(void) {
    tensor_scope_begin();
    tensor *S = (tensor *)1, *Vh = (tensor *)1;
    CHECK_BAD(tensor_linalg_svd(NULL, false, &S, &Vh), "tensor_linalg_svd");
    CHECK(S == NULL && Vh == NULL);
    CHECK_BAD(tensor_linalg_svd(O(3), false, &S, NULL), "at least 2 dimensions");
    CHECK_BAD(tensor_linalg_svd(F(TENSOR_I32, TENSOR_SHAPE(2, 2)), false, NULL, NULL), "float32 or float64");
    CHECK_BAD(tensor_linalg_svd(F(TENSOR_BF16, TENSOR_SHAPE(2, 2)), true, NULL, NULL), "float32 or float64");
    CHECK_BAD(tensor_linalg_svd(tensor_full(TENSOR_SHAPE(2, 2), NAN, TENSOR_F64), false, &S, &Vh), "non-finite");
    CHECK(S == NULL && Vh == NULL);
    CHECK_BAD(tensor_linalg_svd(tensor_full(TENSOR_SHAPE(2, 3), INFINITY, TENSOR_F32), true, NULL, NULL), "non-finite");
    tensor_scope_end();
}
void bad_input_linalg_svdvals(void) {
    tensor_scope_begin();
    CHECK_BAD(tensor_linalg_svdvals(NULL), "tensor_linalg_svdvals");
    CHECK_BAD(tensor_linalg_svdvals(O(3)), "at least 2 dimensions");
    CHECK_BAD(tensor_linalg_svdvals(F(TENSOR_I64, TENSOR_SHAPE(2, 2))), "float32 or float64");
    CHECK_BAD(tensor_linalg_svdvals(tensor_full(TENSOR_SHAPE(2, 2), NAN, TENSOR_F32)), "non-finite");
    tensor_scope_end();
}
void bad_input_linalg_pinv(void) {
    tensor_scope_begin();
    CHECK_BAD(tensor_linalg_pinv(NULL, 0, -1, false), "tensor_linalg_pinv");
    CHECK_BAD(tensor_linalg_pinv(O(3), 0, -1, false), "at least 2 dimensions");
    CHECK_BAD(tensor_linalg_pinv(O(2, 3), 0, -1, true), "square");
    CHECK_BAD(tensor_linalg_pinv(O(3, 3), NAN, -1, false), "must be numbers");
    CHECK_BAD(tensor_linalg_pinv(F(TENSOR_I32, TENSOR_SHAPE(2, 2)), 0, -1, false), "float32 or float64");
    tensor_scope_end();
}
void bad_input_linalg_matrix_rank(void) {
    tensor_scope_begin();
    CHECK_BAD(tensor_linalg_matrix_rank(NULL, 0, -1, false), "tensor_linalg_matrix_rank");
    CHECK_BAD(tensor_linalg_matrix_rank(O(3), 0, -1, false), "at least 2 dimensions");
    CHECK_BAD(tensor_linalg_matrix_rank(O(2, 3), 0, -1, true), "square");
    CHECK_BAD(tensor_linalg_matrix_rank(O(3, 3), 0, NAN, false), "must be numbers");
    CHECK_BAD(tensor_linalg_matrix_rank(F(TENSOR_BOOL, TENSOR_SHAPE(2, 2)), 0, -1, false), "float32 or float64");
    tensor_scope_end();
}
void bad_input_linalg_lstsq(void) {
    tensor_scope_begin();
    tensor *res = (tensor *)1, *rank = (tensor *)1, *sv = (tensor *)1;
    CHECK_BAD(tensor_linalg_lstsq(NULL, O(3, 1), -1, &res, &rank, &sv), "tensor_linalg_lstsq");
    CHECK(res == NULL && rank == NULL && sv == NULL);
    CHECK_BAD(tensor_linalg_lstsq(O(3, 2), NULL, -1, NULL, NULL, NULL), "tensor_linalg_lstsq");
    CHECK_BAD(tensor_linalg_lstsq(O(3), O(3), -1, NULL, NULL, NULL), "at least 2 dimensions");
    CHECK_BAD(tensor_linalg_lstsq(O(3, 2), D(3, 1), -1, NULL, NULL, NULL), "same dtype");
    CHECK_BAD(tensor_linalg_lstsq(O(3, 2), O(4, 1), -1, NULL, NULL, NULL), "incompatible shapes");
    CHECK_BAD(tensor_linalg_lstsq(O(3, 2), O(4), -1, NULL, NULL, NULL), "incompatible shapes");
    CHECK_BAD(tensor_linalg_lstsq(O(2, 3, 2), O(2, 2), -1, NULL, NULL, NULL), "incompatible shapes"); /* a matrix [2, 2] (not [2, 3]): 2 rows, not 3 */
    CHECK_BAD(tensor_linalg_lstsq(O(2, 3, 2), O(4, 3, 1), -1, NULL, NULL, NULL), "cannot be broadcast");
    CHECK_BAD(tensor_linalg_lstsq(O(3, 2), O(3, 1), NAN, NULL, NULL, NULL), "rcond");
    CHECK_BAD(tensor_linalg_lstsq(F(TENSOR_I32, TENSOR_SHAPE(3, 2)), F(TENSOR_I32, TENSOR_SHAPE(3, 1)), -1, NULL, NULL, NULL), "float32 or float64");
    tensor_scope_end();
}
void bad_input_linalg_cond(void) {
    tensor_scope_begin();
    CHECK_BAD(tensor_linalg_cond(NULL, NULL), "tensor_linalg_cond");
    CHECK_BAD(tensor_linalg_cond(O(3), NULL), "at least 2 dimensions");
    CHECK_BAD(tensor_linalg_cond(O(3, 3), "3"), "not supported");
    CHECK_BAD(tensor_linalg_cond(O(2, 3), "fro"), "square matrices");
    CHECK_BAD(tensor_linalg_cond(F(TENSOR_I32, TENSOR_SHAPE(2, 2)), NULL), "float32 or float64");
    tensor_scope_end();
}
