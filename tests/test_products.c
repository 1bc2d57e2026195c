/* The products of generator/parts/products.h (mm, bmm, mv, dot, vdot, inner, outer, kron, cross,
   linalg_cross, tensordot, einsum, addmm, addmv, addbmm, baddbmm, addr, matrix_power,
   linalg_multi_dot, cdist, cov, corrcoef, trace): values against PyTorch 1.13 (the E_ arrays below
   were computed by torch in float64 on the inputs prod_in makes, whose values are multiples of 1/4,
   and pasted here), their gradients through the registry sweep (gradcheck_NAME, f64, with
   transposed operands), PyTorch's error cases (bad_input_NAME), and that the matrices reach
   matmul as views where the strides allow it. */
#include "test.h"

/* The inputs of the E_ arrays: element i of a tensor of seed s is ((37 i + 11 s) mod 19 - 9) / 4. */
static tensor *prod_in_dt(tensor_dtype dt, int nd, const int64_t *shape, int seed) {
    int64_t n = test_numel(nd, shape);
    double *v = (double *)malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) v[i] = (double)((i * 37 + seed * 11) % 19 - 9) / 4.0;
    tensor *t = test_tensor(dt, nd, shape, v);
    free(v);
    return t;
}
#define IN(seed, ...) prod_in_dt(TENSOR_F64, __VA_ARGS__, seed)
#define N_OF(a) ((int64_t)(sizeof(a) / sizeof((a)[0])))
#define CHECK_E(t, name) CHECK_VALUES(t, E_##name, N_OF(E_##name), 1e-12, 1e-12)

/* ---- the numbers PyTorch gives (tests/ copies of /usr/bin/python3 + torch runs) ---- */
static const double E_mm[] = {-1.6875, -1.8125, -2.1875, -1.3125, -2.6875, -0.8125};
static const double E_mm_t[] = {-5.5625, -4.9375, -5.6875, -4.8125, -5.8125, -4.6875};
static const double E_bmm[] = {-4.625, -3.125, 1.375, -0.875, 7.375, 1.375, -7.625, -6.6875, 8.75, 7.125, 3.75, 3.125};
static const double E_mv[] = {-2.125, -0.625, 0.875};
static const double E_dot[] = {-2.5};
static const double E_dot_i32[] = {-65.0};
static const double E_inner[] = {-5.5, -2.125, 1.25, 4.625, -3.5625, -2.0625, -0.5625, 0.9375};
static const double E_inner3[] = {-5.5, -3.5625, 6.6875, 3.875};
static const double E_outer[] = {-1.125, -1.0, -0.875, -0.75, -1.6875, -1.5, -1.3125, -1.125, -2.25, -2.0, -1.75, -1.5};
static const double E_kron[] = {-0.4375, -0.5, -0.0, -0.0, 0.4375, 0.5, -0.5625, 0.5625, -0.0, 0.0, 0.5625, -0.5625, 0.5, 0.4375, 0.0, 0.0, -0.5, -0.4375, 0.875, 1.0, 1.3125, 1.5, 1.75, 2.0, 1.125, -1.125, 1.6875, -1.6875, 2.25, -2.25, -1.0, -0.875, -1.5, -1.3125, -2.0, -1.75};
static const double E_kron2[] = {-0.4375, -0.5, -0.5625, -0.0, -0.0, -0.0, 0.5625, 0.5, 0.4375, 0.0, 0.0, 0.0};
static const double E_cross[] = {-0.5, 1.0, -0.5, -0.5, 1.0, -0.5, 0.6875, -1.375, 0.6875, 0.6875, -1.375, 0.6875};
static const double E_cross_b[] = {-0.5, 1.0, -0.5, -0.3125, 0.625, -0.3125};
static const double E_cross_d0[] = {-1.0, -1.0, 2.0, 2.0, -1.0, -1.0};
static const double E_td2[] = {-0.4375, -1.5625, -5.0625, -3.8125, 2.1875, -2.8125, -3.25, 2.25, 12.5, 4.9375};
static const double E_tdl[] = {9.4375, 0.625, -1.0625, -6.3125, -2.0625, 5.25, -7.25, -10.25, 2.1875, 2.75};
static const double E_td0[] = {-0.4375, -0.875, -1.3125, -0.375, -0.75, -1.125};
static const double E_ein_mm[] = {-1.6875, -1.8125, -2.1875, -1.3125, -2.6875, -0.8125};
static const double E_ein_mmt[] = {-7.0, -2.5, -7.5625, -3.8125, 10.875, 4.375};
static const double E_ein_bmm[] = {-4.125, -4.125, 0.625, -0.75, 0.625, 0.25, 0.875, -2.0625, 4.125, -2.5625, -2.125, 6.4375};
static const double E_ein_trace[] = {1.5};
static const double E_ein_diag[] = {0.25, -0.75, -1.75};
static const double E_ein_ell_t[] = {-1.0, -2.0, 1.75, -1.25, -2.25, 1.5, -1.5, 2.25, 1.25, -1.75, 2.0, 1.0, 0.75, -0.25, -1.25, 0.5, -0.5, -1.5, 0.25, -0.75, -1.75, 0.0, -1.0, -2.0};
static const double E_ein_outer[] = {-1.125, -0.5625, 1.125, 0.5625, 1.0, 0.5};
static const double E_ein_sum[] = {-1.5};
static const double E_ein_chain3[] = {-0.46875, 0.0625, 1.6875, 3.53125};
static const double E_ein_chain4[] = {37.125, 33.0, 28.875, 24.75, 20.625, 16.5, 12.375, -6.328125, -5.625, -4.921875, -4.21875, -3.515625, -2.8125, -2.109375};
static const double E_ein_bdiag[] = {2.25, 1.25, 0.25, 0.0, -1.0, -2.0};
static const double E_ein_bcast1[] = {-2.5, 1.5, 5.5};
static const double E_ein_ellb[] = {-2.0625, -3.5625, -2.125, -5.5, -1.0, -2.6875, 0.125, 0.125};
static const double E_ein_implicit[] = {-2.1875, -1.25, -0.3125, 0.625, -2.9375, -1.4375, 0.0625, 1.5625};
static const double E_ein_attn[] = {-2.125, -8.625, -2.0625, 9.25, 2.75, -0.625, -3.125, -2.0625, 3.75, 1.25, 0.875, 2.375, -2.0625, -1.75, -0.25, 3.75, 9.25, -6.625, -5.875, -0.375, -2.0625, -2.0625, 7.4375, -2.0625, -2.0625, -3.125, -8.625, 3.6875, 6.5, 1.0, -1.0, -2.5, 3.125, 1.625, 0.125, 2.5, 5.0, -4.375, -1.875, 0.625, 6.0, 12.5, -11.875, -5.375, 1.125, -5.6875, -1.125, 4.625, 0.875, -2.875, -4.75, -5.6875, 7.625, 3.125, -1.375, -0.25, -1.9375, 1.125, 0.625, 0.125};
static const double E_ein_mixed[] = {-2.375, -1.5625, 0.875, -2.0625, 4.125, -2.5625, -0.125, -1.0625, 4.0, 2.875, 1.0, 0.875};
static const double E_ein_iij[] = {1.5, 1.0, 0.5};
static const double E_ein_three[] = {-29.375};
static const double E_ein_perm[] = {1.75, 0.75, -0.25, -1.25, -2.25, 1.5, 1.5, 0.5, -0.5, -1.5, 2.25, 1.25, 1.25, 0.25, -0.75, -1.75, 2.0, 1.0, 1.0, 0.0, -1.0, -2.0, 1.75, 0.75};
static const double E_ein_ellmid[] = {0.0, -0.125, -1.3125, -3.1875, 2.5, 3.375, -2.3125, -3.1875, 1.875, -6.9375, 1.875, -0.375};
static const double E_ein_batchouter[] = {-1.5, -1.3125, -1.125, -0.9375, -2.0, -1.75, -1.5, -1.25, -2.5, -2.1875, -1.875, -1.5625, -1.5, -1.125, -0.75, -0.375, -1.75, -1.3125, -0.875, -0.4375, -2.0, -1.5, -1.0, -0.5};
static const double E_ein_spaces[] = {-2.625, -2.125, 1.5625, 0.25};
static const double E_addmm[] = {-2.75, -5.875, -1.625, -3.625};
static const double E_addmm_b0[] = {1.875, 4.125, 1.03125, 2.4375};
static const double E_addmv[] = {0.96875, 2.59375, 4.21875};
static const double E_addbmm[] = {1.3125, 6.5625, 0.75, -3.1875, -3.375, 2.5};
static const double E_baddbmm[] = {-8.875, -3.5, 13.125, 7.25, 6.625, 3.75, 4.625, -2.375, 22.125, 3.875, 7.5625, 42.1875};
static const double E_addr[] = {-0.375, 0.5, 1.375, 2.25, -0.875, -0.125, 0.625, 3.75, 1.0, 1.625, 2.25, 2.875};
static const double E_mpow3[] = {-6.734375, -6.46875, 4.78125, 7.6875, 5.265625, 9.375, 4.59375, 3.34375, 4.171875};
static const double E_mpow5b[] = {0.015106201171875, 0.00848388671875, 0.004241943359375, 0.00238037109375, -0.032623291015625, -0.04754638671875, -0.071319580078125, -0.10394287109375};
static const double E_mpow0[] = {1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0};
static const double E_md4[] = {27.59375};
static const double E_md_m[] = {8.251953125, 0.0, -8.251953125, -16.50390625, -9.248046875, 0.0, 9.248046875, 18.49609375};
static const double E_md_2[] = {-8.125, 9.375};
static const double E_cdist2[] = {5.165994579942956, 4.264680527307995, 4.205650960315181, 4.520785330006281, 6.189709201569974, 2.0, 4.0, 6.0, 5.755432216610669, 0.5, 0.0, 2.0, 4.0, 4.911720676097125, 1.5};
static const double E_cdist1[] = {10.25, 8.25, 6.25, 5.25, 11.75, 4.0, 8.0, 12.0, 9.5, 1.0, 0.0, 4.0, 8.0, 9.5, 3.0};
static const double E_cdistinf[] = {2.75, 3.0, 4.0, 4.5, 3.5, 1.0, 2.0, 3.0, 4.0, 0.25, 0.0, 1.0, 2.0, 3.0, 0.75};
static const double E_cdist0[] = {4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 4.0, 0.0, 4.0, 4.0, 4.0, 4.0};
static const double E_cdist3b[] = {4.365352892912548, 2.777951840944349, 4.7543819213041205, 3.8618178502993303, 0.0, 1.5874010519681994, 1.5874010519681994, 0.0, 3.1748021039363987, 1.5874010519681994, 4.762203155904598, 3.1748021039363987};
static const double E_cdist_big[] = {4.373213921133975, 3.4641016151377544, 5.105144464165535, 4.763139720814412, 6.031169040907409, 6.06217782649107, 4.513867521316947, 0.8660254037844386, 4.00780488547035, 0.4330127018922193, 3.8890872965260113, 1.7320508075688772, 4.190763653560053, 3.031088913245535, 4.834769901453429, 4.330127018922194, 5.706356105256663, 5.629165124598851, 0.0, 4.138236339311712, 4.138236339311712, 0.0, 3.881043674065006, 1.299038105676658, 4.046603514059662, 2.598076211353316, 4.589389937671455, 3.897114317029974, 5.3967582862307255, 5.196152422706632, 4.513867521316947, 5.3967582862307255, 4.3084219849035215, 0.4330127018922193, 3.9210967853395307, 0.8660254037844386, 3.944933459514875, 2.165063509461097, 4.373213921133975, 3.4641016151377544, 5.105144464165535, 4.763139720814412, 6.031169040907409, 6.06217782649107, 4.513867521316947, 0.8660254037844386, 4.00780488547035, 0.4330127018922193, 3.8890872965260113, 1.7320508075688772, 4.190763653560053, 3.031088913245535, 4.834769901453429, 4.330127018922194, 5.706356105256663, 5.629165124598851, 0.0, 4.138236339311712, 4.138236339311712, 0.0};
static const double E_cov[] = {0.15625, 0.15625, -0.734375, 0.15625, 0.15625, -0.734375, -0.734375, -0.734375, 5.14375};
static const double E_cov0[] = {0.125, 0.125, -0.5875, 0.125, 0.125, -0.5875, -0.5875, -0.5875, 4.115};
static const double E_cov_fw[] = {0.13392857142857142, 0.13392857142857142, -0.7425595238095237, 0.13392857142857142, 0.13392857142857142, -0.7425595238095237, -0.7425595238095237, -0.7425595238095237, 4.827380952380952};
static const double E_cov_aw[] = {0.146875, 0.146875, -0.5878906250000001, 0.146875, 0.146875, -0.5878906250000001, -0.5878906250000001, -0.5878906250000001, 5.023046875};
static const double E_cov_both[] = {0.2393364928909953, 0.2393364928909953, -1.2126777251184835, 0.2393364928909953, 0.2393364928909953, -1.2126777251184835, -1.2126777251184835, -1.2126777251184835, 6.959123222748816};
static const double E_cov_1d[] = {4.335416666666666};
static const double E_corr[] = {0.9999999999999999, 0.9999999999999999, -0.8191585048915059, 0.9999999999999999, 0.9999999999999999, -0.8191585048915059, -0.8191585048915059, -0.8191585048915059, 0.9999999999999998};
static const double E_corr_1d[] = {1.0};
static const double E_trace[] = {0.0};
static const double E_trace_i[] = {3.0};


/* ---- values ---- */

TEST(products_matrix_values) {
    tensor *a = IN(1, TENSOR_SHAPE(3, 4)), *b = IN(2, TENSOR_SHAPE(4, 2));
    tensor *r = tensor_mm(a, b);
    CHECK_SHAPE(r, TENSOR_SHAPE(3, 2));
    CHECK_E(r, mm);
    CHECK_E(tensor_mm(tensor_transpose(IN(1, TENSOR_SHAPE(4, 3)), 0, 1), b), mm_t);
    r = tensor_bmm(IN(3, TENSOR_SHAPE(2, 3, 4)), IN(4, TENSOR_SHAPE(2, 4, 2)));
    CHECK_SHAPE(r, TENSOR_SHAPE(2, 3, 2));
    CHECK_E(r, bmm);
    r = tensor_mv(IN(5, TENSOR_SHAPE(3, 4)), IN(6, TENSOR_SHAPE(4)));
    CHECK_SHAPE(r, TENSOR_SHAPE(3));
    CHECK_E(r, mv);
    r = tensor_dot(IN(7, TENSOR_SHAPE(5)), IN(8, TENSOR_SHAPE(5)));
    CHECK_SHAPE(r, 0, NULL);
    CHECK_E(r, dot);
    CHECK_E(tensor_vdot(IN(7, TENSOR_SHAPE(5)), IN(8, TENSOR_SHAPE(5))), dot);
    tensor *i1 = tensor_to_dtype(tensor_mul_scalar(IN(3, TENSOR_SHAPE(5)), 4), TENSOR_I32);
    tensor *i2 = tensor_to_dtype(tensor_mul_scalar(IN(4, TENSOR_SHAPE(5)), 4), TENSOR_I32);
    r = tensor_dot(i1, i2);
    CHECK(r && tensor_get_dtype(r) == TENSOR_I32);
    CHECK_E(r, dot_i32);
    r = tensor_inner(IN(9, TENSOR_SHAPE(2, 3)), IN(10, TENSOR_SHAPE(4, 3)));
    CHECK_SHAPE(r, TENSOR_SHAPE(2, 4));
    CHECK_E(r, inner);
    r = tensor_inner(IN(9, TENSOR_SHAPE(2, 2, 3)), IN(10, TENSOR_SHAPE(3)));
    CHECK_SHAPE(r, TENSOR_SHAPE(2, 2));
    CHECK_E(r, inner3);
    r = tensor_inner(tensor_scalar(2, TENSOR_F64), IN(10, TENSOR_SHAPE(3))); /* a scalar scales */
    double in0[3];
    for (int i = 0; i < 3; i++) in0[i] = 2 * (double)(((int64_t)i * 37 + 110) % 19 - 9) / 4.0;
    CHECK_VALUES(r, in0, 3, 0, 0);
    r = tensor_outer(IN(11, TENSOR_SHAPE(3)), IN(12, TENSOR_SHAPE(4)));
    CHECK_SHAPE(r, TENSOR_SHAPE(3, 4));
    CHECK_E(r, outer);
    r = tensor_outer(tensor_ones(TENSOR_SHAPE(2), TENSOR_I32), tensor_ones(TENSOR_SHAPE(3), TENSOR_F64)); /* promotes, as torch.outer */
    CHECK(r && tensor_get_dtype(r) == TENSOR_F64);
    r = tensor_kron(IN(13, TENSOR_SHAPE(2, 3)), IN(14, TENSOR_SHAPE(3, 2)));
    CHECK_SHAPE(r, TENSOR_SHAPE(6, 6));
    CHECK_E(r, kron);
    r = tensor_kron(IN(13, TENSOR_SHAPE(2)), IN(14, TENSOR_SHAPE(2, 3)));
    CHECK_SHAPE(r, TENSOR_SHAPE(2, 6));
    CHECK_E(r, kron2);
    r = tensor_linalg_cross(IN(15, TENSOR_SHAPE(4, 3)), IN(16, TENSOR_SHAPE(4, 3)), -1);
    CHECK_SHAPE(r, TENSOR_SHAPE(4, 3));
    CHECK_E(r, cross);
    r = tensor_linalg_cross(IN(15, TENSOR_SHAPE(2, 3)), IN(16, TENSOR_SHAPE(1, 3)), -1);
    CHECK_SHAPE(r, TENSOR_SHAPE(2, 3));
    CHECK_E(r, cross_b);
    r = tensor_cross(IN(15, TENSOR_SHAPE(3, 2)), IN(16, TENSOR_SHAPE(3, 2)), 0);
    CHECK_SHAPE(r, TENSOR_SHAPE(3, 2));
    CHECK_E(r, cross_d0);
    r = tensor_tensordot(IN(17, TENSOR_SHAPE(2, 3, 4)), IN(18, TENSOR_SHAPE(3, 4, 5)), 2, NULL, NULL);
    CHECK_SHAPE(r, TENSOR_SHAPE(2, 5));
    CHECK_E(r, td2);
    int da[2] = {1, 0}, db[2] = {0, 2};
    r = tensor_tensordot(IN(17, TENSOR_SHAPE(3, 4, 2)), IN(18, TENSOR_SHAPE(4, 5, 3)), 2, da, db);
    CHECK_SHAPE(r, TENSOR_SHAPE(2, 5));
    CHECK_E(r, tdl);
    r = tensor_tensordot(IN(17, TENSOR_SHAPE(2)), IN(18, TENSOR_SHAPE(3)), 0, NULL, NULL);
    CHECK_SHAPE(r, TENSOR_SHAPE(2, 3));
    CHECK_E(r, td0);
    /* a size-1 contracted dim against a larger one broadcasts, as torch.tensordot: [2, 1] . [3, 4] */
    r = tensor_tensordot(tensor_full(TENSOR_SHAPE(2, 1), 2, TENSOR_F64), IN(18, TENSOR_SHAPE(3, 4)), 1, NULL, NULL);
    CHECK_SHAPE(r, TENSOR_SHAPE(2, 4));
    tensor *cs = tensor_mul_scalar(tensor_sum(IN(18, TENSOR_SHAPE(3, 4)), 0, false), 2);
    double *csv = test_values(cs);
    double want[8];
    for (int i = 0; i < 8; i++) want[i] = csv[i % 4];
    free(csv);
    CHECK_VALUES(r, want, 8, 1e-12, 1e-12);
}

TEST(products_addmm_family_values) {
    tensor *r = tensor_addmm(IN(30, TENSOR_SHAPE(2)), IN(31, TENSOR_SHAPE(2, 3)), IN(32, TENSOR_SHAPE(3, 2)), 0.5, 2.0);
    CHECK_SHAPE(r, TENSOR_SHAPE(2, 2));
    CHECK_E(r, addmm);
    /* beta 0: input is ignored, its NaNs too */
    r = tensor_addmm(tensor_full(TENSOR_SHAPE(2, 2), NAN, TENSOR_F64), IN(31, TENSOR_SHAPE(2, 3)), IN(32, TENSOR_SHAPE(3, 2)), 0.0, -1.5);
    CHECK_E(r, addmm_b0);
    r = tensor_addmv(IN(33, TENSOR_SHAPE(3)), IN(34, TENSOR_SHAPE(3, 4)), IN(35, TENSOR_SHAPE(4)), -1.0, 0.25);
    CHECK_SHAPE(r, TENSOR_SHAPE(3));
    CHECK_E(r, addmv);
    r = tensor_addbmm(IN(36, TENSOR_SHAPE(3, 2)), IN(37, TENSOR_SHAPE(4, 3, 5)), IN(38, TENSOR_SHAPE(4, 5, 2)), 2.0, 1.0);
    CHECK_SHAPE(r, TENSOR_SHAPE(3, 2));
    CHECK_E(r, addbmm);
    r = tensor_baddbmm(IN(39, TENSOR_SHAPE(1, 3, 2)), IN(40, TENSOR_SHAPE(2, 3, 4)), IN(41, TENSOR_SHAPE(2, 4, 2)), 1.0, 3.0);
    CHECK_SHAPE(r, TENSOR_SHAPE(2, 3, 2));
    CHECK_E(r, baddbmm);
    r = tensor_addr(IN(42, TENSOR_SHAPE(3, 4)), IN(43, TENSOR_SHAPE(3)), IN(44, TENSOR_SHAPE(4)), 0.5, -2.0);
    CHECK_SHAPE(r, TENSOR_SHAPE(3, 4));
    CHECK_E(r, addr);
    /* integer operands stay integers with integral alpha and beta */
    tensor *m = tensor_to_dtype(tensor_mul_scalar(IN(31, TENSOR_SHAPE(2, 2)), 4), TENSOR_I64);
    r = tensor_addmm(m, m, m, 2, 3);
    CHECK(r && tensor_get_dtype(r) == TENSOR_I64);
    tensor *want = tensor_add(tensor_mul_scalar(m, 2), tensor_mul_scalar(tensor_matmul(m, m), 3));
    double *wv = test_values(want);
    CHECK_VALUES(r, wv, 4, 0, 0);
    free(wv);
}

TEST(products_power_chain_values) {
    tensor *r = tensor_matrix_power(IN(45, TENSOR_SHAPE(3, 3)), 3);
    CHECK_SHAPE(r, TENSOR_SHAPE(3, 3));
    CHECK_E(r, mpow3);
    r = tensor_matrix_power(tensor_div_scalar(IN(46, TENSOR_SHAPE(2, 2, 2)), 2), 5);
    CHECK_SHAPE(r, TENSOR_SHAPE(2, 2, 2));
    CHECK_E(r, mpow5b);
    r = tensor_matrix_power(IN(45, TENSOR_SHAPE(2, 3, 3)), 0);
    CHECK_SHAPE(r, TENSOR_SHAPE(2, 3, 3));
    CHECK_E(r, mpow0);
    tensor *a = IN(45, TENSOR_SHAPE(3, 3));
    /* n < 0: powers of the inverse; [[2, 1], [1, 3]]^-2 = [[0.4, -0.2], [-0.2, 0.2]] */
    CHECK_VALUES(tensor_matrix_power(tensor_from_data((const double[]){2, 1, 1, 3}, TENSOR_SHAPE(2, 2), TENSOR_F64), -2), ((const double[]){0.4, -0.2, -0.2, 0.2}), 4, 1e-15, 1e-14);
    r = tensor_matrix_power(a, 1); /* a copy, as PyTorch */
    CHECK(r && tensor_data_ptr(r) != tensor_data_ptr(a));
    double *av = test_values(a);
    CHECK_VALUES(r, av, 9, 0, 0);
    free(av);
    tensor *md[4] = {IN(47, TENSOR_SHAPE(4)), IN(48, TENSOR_SHAPE(4, 3)), IN(49, TENSOR_SHAPE(3, 6)), IN(50, TENSOR_SHAPE(6))};
    r = tensor_linalg_multi_dot(4, md);
    CHECK_SHAPE(r, 0, NULL);
    CHECK_E(r, md4);
    tensor *mm5[5] = {IN(47, TENSOR_SHAPE(2, 5)), IN(48, TENSOR_SHAPE(5, 3)), IN(49, TENSOR_SHAPE(3, 6)), IN(50, TENSOR_SHAPE(6, 1)), IN(51, TENSOR_SHAPE(1, 4))};
    r = tensor_linalg_multi_dot(5, mm5);
    CHECK_SHAPE(r, TENSOR_SHAPE(2, 4));
    CHECK_E(r, md_m);
    tensor *m2[2] = {IN(47, TENSOR_SHAPE(2, 5)), IN(48, TENSOR_SHAPE(5))};
    r = tensor_linalg_multi_dot(2, m2);
    CHECK_SHAPE(r, TENSOR_SHAPE(2));
    CHECK_E(r, md_2);
    r = tensor_trace(IN(60, TENSOR_SHAPE(3, 4)));
    CHECK_SHAPE(r, 0, NULL);
    CHECK_E(r, trace);
    r = tensor_trace(tensor_to_dtype(tensor_mul_scalar(IN(60, TENSOR_SHAPE(4, 3)), 4), TENSOR_I32));
    CHECK(r && tensor_get_dtype(r) == TENSOR_I64); /* as torch.trace */
    CHECK_E(r, trace_i);
    CHECK_NEAR(tensor_item(tensor_trace(tensor_zeros(TENSOR_SHAPE(0, 3), TENSOR_F32))), 0, 0, 0);
    /* a transposed (non-contiguous) matrix */
    r = tensor_trace(tensor_transpose(IN(60, TENSOR_SHAPE(3, 4)), 0, 1));
    CHECK_E(r, trace);
}

TEST(products_cdist_cov_values) {
    tensor *x1 = IN(52, TENSOR_SHAPE(3, 4)), *x2 = IN(53, TENSOR_SHAPE(5, 4));
    tensor *r = tensor_cdist(x1, x2, 2);
    CHECK_SHAPE(r, TENSOR_SHAPE(3, 5));
    CHECK_E(r, cdist2);
    CHECK_E(tensor_cdist(x1, x2, 1), cdist1);
    CHECK_E(tensor_cdist(x1, x2, INFINITY), cdistinf);
    CHECK_E(tensor_cdist(x1, x2, 0), cdist0);
    r = tensor_cdist(IN(54, TENSOR_SHAPE(2, 3, 4)), IN(55, TENSOR_SHAPE(1, 2, 4)), 3);
    CHECK_SHAPE(r, TENSOR_SHAPE(2, 3, 2));
    CHECK_VALUES(r, E_cdist3b, N_OF(E_cdist3b), 1e-12, 1e-12);
    /* more than 25 rows: the matmul expansion, PyTorch's default there (rounding differs a little) */
    r = tensor_cdist(IN(56, TENSOR_SHAPE(30, 3)), IN(57, TENSOR_SHAPE(2, 3)), 2);
    CHECK_SHAPE(r, TENSOR_SHAPE(30, 2));
    CHECK_VALUES(r, E_cdist_big, N_OF(E_cdist_big), 1e-7, 1e-12);
    r = tensor_cdist(tensor_to_dtype(IN(56, TENSOR_SHAPE(30, 3)), TENSOR_F32), tensor_to_dtype(IN(57, TENSOR_SHAPE(2, 3)), TENSOR_F32), 2);
    CHECK(r && tensor_get_dtype(r) == TENSOR_F32);
    CHECK_VALUES(r, E_cdist_big, N_OF(E_cdist_big), 1e-3, 1e-5);
    tensor *x = IN(58, TENSOR_SHAPE(3, 5));
    r = tensor_cov(x, 1, NULL, NULL);
    CHECK_SHAPE(r, TENSOR_SHAPE(3, 3));
    CHECK_E(r, cov);
    CHECK_E(tensor_cov(x, 0, NULL, NULL), cov0);
    static const double fw[5] = {1, 2, 0, 3, 1}, aw[5] = {0.5, 1.0, 2.0, 0.25, 1.5};
    tensor *tfw = test_tensor(TENSOR_I64, 1, (const int64_t[]){5}, fw), *taw = test_tensor(TENSOR_F64, 1, (const int64_t[]){5}, aw);
    CHECK_VALUES(tensor_cov(x, 1, tfw, NULL), E_cov_fw, 9, 1e-12, 1e-12);
    CHECK_VALUES(tensor_cov(x, 1, NULL, taw), E_cov_aw, 9, 1e-12, 1e-12);
    CHECK_VALUES(tensor_cov(x, 2, tfw, taw), E_cov_both, 9, 1e-12, 1e-12);
    r = tensor_cov(IN(59, TENSOR_SHAPE(6)), 1, NULL, NULL);
    CHECK_SHAPE(r, 0, NULL);
    CHECK_VALUES(r, E_cov_1d, 1, 1e-12, 1e-12);
    r = tensor_cov(tensor_ones(TENSOR_SHAPE(2, 3), TENSOR_I32), 1, NULL, NULL); /* integers: float32, as PyTorch */
    CHECK(r && tensor_get_dtype(r) == TENSOR_F32);
    r = tensor_corrcoef(x);
    CHECK_SHAPE(r, TENSOR_SHAPE(3, 3));
    CHECK_VALUES(r, E_corr, 9, 1e-12, 1e-12);
    r = tensor_corrcoef(IN(59, TENSOR_SHAPE(6)));
    CHECK_SHAPE(r, 0, NULL);
    CHECK_VALUES(r, E_corr_1d, 1, 1e-12, 1e-12);
}

/* ---- einsum ---- */

typedef struct { const char *name, *eq; int n; int nd[4]; int64_t shape[4][4]; const double *want; int64_t count; int out_nd; int64_t out[4]; } ein_case;
#define EC(nm) E_##nm, N_OF(E_##nm)
static const ein_case ein_cases[] = {
    {"mm", "ij,jk->ik", 2, {2, 2}, {{3, 4}, {4, 2}}, EC(ein_mm), 2, {3, 2}},
    {"mmt", "ij,kj", 2, {2, 2}, {{3, 4}, {2, 4}}, EC(ein_mmt), 2, {3, 2}},
    {"bmm", "bij,bjk->bik", 2, {3, 3}, {{2, 3, 4}, {2, 4, 2}}, EC(ein_bmm), 3, {2, 3, 2}},
    {"trace", "ii", 1, {2}, {{3, 3}}, EC(ein_trace), 0, {0}},
    {"diag", "ii->i", 1, {2}, {{3, 3}}, EC(ein_diag), 1, {3}},
    {"ell_t", "...ij->...ji", 1, {3}, {{2, 3, 4}}, EC(ein_ell_t), 3, {2, 4, 3}},
    {"outer", "i,j", 2, {1, 1}, {{3}, {2}}, EC(ein_outer), 2, {3, 2}},
    {"sum", "ij->", 1, {2}, {{3, 4}}, EC(ein_sum), 0, {0}},
    {"chain3", "ab,bc,cd->ad", 3, {2, 2, 2}, {{2, 3}, {3, 4}, {4, 2}}, EC(ein_chain3), 2, {2, 2}},
    {"chain4", "ij,jk,kl,lm->im", 4, {2, 2, 2, 2}, {{2, 6}, {6, 5}, {5, 1}, {1, 7}}, EC(ein_chain4), 2, {2, 7}},
    {"bdiag", "bii->bi", 1, {3}, {{2, 3, 3}}, EC(ein_bdiag), 2, {2, 3}},
    {"bcast1", "ij,j->i", 2, {2, 1}, {{3, 4}, {1}}, EC(ein_bcast1), 1, {3}},
    {"ellb", "...i,...i->...", 2, {2, 3}, {{2, 3}, {4, 1, 3}}, EC(ein_ellb), 2, {4, 2}},
    {"implicit", "ba,cb", 2, {2, 2}, {{3, 2}, {4, 3}}, EC(ein_implicit), 2, {2, 4}},
    {"attn", "bhqd,bhkd->bhqk", 2, {4, 4}, {{2, 2, 3, 4}, {2, 2, 5, 4}}, EC(ein_attn), 4, {2, 2, 3, 5}},
    {"mixed", "ijk,ikl->ijl", 2, {3, 3}, {{2, 3, 4}, {2, 4, 2}}, EC(ein_mixed), 3, {2, 3, 2}},
    {"iij", "iij->j", 1, {3}, {{2, 2, 3}}, EC(ein_iij), 1, {3}},
    {"three", "ij,jk,ik->", 3, {2, 2, 2}, {{2, 3}, {3, 4}, {2, 4}}, EC(ein_three), 0, {0}},
    {"perm", "abc->cab", 1, {3}, {{2, 3, 4}}, EC(ein_perm), 3, {4, 2, 3}},
    {"ellmid", "i...j,j...k->...ik", 2, {3, 3}, {{2, 3, 4}, {4, 3, 2}}, EC(ein_ellmid), 3, {3, 2, 2}},
    {"batchouter", "bi,bj->bij", 2, {2, 2}, {{2, 3}, {2, 4}}, EC(ein_batchouter), 3, {2, 3, 4}},
    {"spaces", " i j , j k -> i k ", 2, {2, 2}, {{2, 3}, {3, 2}}, EC(ein_spaces), 2, {2, 2}},
};

TEST(products_einsum_values) {
    for (int k = 0; k < (int)N_OF(ein_cases); k++) {
        const ein_case *c = &ein_cases[k];
        tensor *ops[4];
        for (int j = 0; j < c->n; j++) ops[j] = prod_in_dt(TENSOR_F64, c->nd[j], c->shape[j], 20 + k * 3 + j);
        tensor *r = tensor_einsum(c->eq, c->n, ops);
        CHECK_MSG(r != NULL, "einsum %s (%s): %s", c->name, c->eq, tensor_last_error() ? tensor_last_error() : "?");
        if (!r) continue;
        bool shape_ok = tensor_ndim(r) == c->out_nd;
        for (int d = 0; shape_ok && d < c->out_nd; d++) shape_ok = tensor_shape(r)[d] == c->out[d];
        CHECK_MSG(shape_ok, "einsum %s (%s): unexpected shape (ndim %d)", c->name, c->eq, tensor_ndim(r));
        double *v = test_values(r);
        int64_t n = tensor_numel(r);
        CHECK_MSG(n == c->count, "einsum %s: %lld elements, expected %lld", c->name, (long long)n, (long long)c->count);
        for (int64_t i = 0; i < n && i < c->count; i++)
            if (!(fabs(v[i] - c->want[i]) <= 1e-12 * (1 + fabs(c->want[i])))) {
                test_fail(__FILE__, __LINE__, "einsum %s (%s) element %lld: got %.17g, expected %.17g", c->name, c->eq, (long long)i, v[i], c->want[i]);
                break;
            }
        free(v);
    }
    /* integer operands: the matmul path keeps the dtype, a sum alone goes to i64 as torch.einsum */
    tensor *i1 = tensor_ones(TENSOR_SHAPE(2, 3), TENSOR_I32), *i2 = tensor_ones(TENSOR_SHAPE(3, 2), TENSOR_I32);
    tensor *ii[2] = {i1, i2};
    tensor *r = tensor_einsum("ij,jk->ik", 2, ii);
    CHECK(r && tensor_get_dtype(r) == TENSOR_I32);
    r = tensor_einsum("ij->i", 1, ii);
    CHECK(r && tensor_get_dtype(r) == TENSOR_I64);
    /* an empty dim */
    tensor *e[2] = {tensor_ones(TENSOR_SHAPE(2, 0), TENSOR_F32), tensor_ones(TENSOR_SHAPE(0, 3), TENSOR_F32)};
    r = tensor_einsum("ij,jk->ik", 2, e);
    CHECK_SHAPE(r, TENSOR_SHAPE(2, 3));
    CHECK(r && tensor_item(tensor_sum_all(r)) == 0);
    /* einsum agrees with matmul on a bigger random case, f32 */
    tensor *a = test_random(TENSOR_F32, TENSOR_SHAPE(4, 17, 33), -1, 1), *b = test_random(TENSOR_F32, TENSOR_SHAPE(4, 33, 9), -1, 1);
    tensor *ab[2] = {a, b};
    tensor *want = tensor_matmul(a, b);
    double *wv = test_values(want);
    CHECK_VALUES(tensor_einsum("bij,bjk->bik", 2, ab), wv, 4 * 17 * 9, 1e-5, 1e-5);
    free(wv);
}

/* Where the strides allow it, operands reach matmul as views (transposed ones included), no copy. */
TEST(products_operands_are_viewed_not_copied) {
    tensor *a = IN(1, TENSOR_SHAPE(3, 4)), *b = IN(2, TENSOR_SHAPE(2, 4)), *c = IN(3, TENSOR_SHAPE(2, 3, 4));
    double before = tensor_test_products_stat("copies");
    tensor *ab[2] = {a, b}, *ca[2] = {c, a};
    tensor_free(tensor_einsum("ij,kj->ik", 2, ab));
    tensor_free(tensor_einsum("ji,jk->ik", 2, (tensor *[]){tensor_transpose(a, 0, 1), tensor_transpose(b, 0, 1)}));
    tensor_free(tensor_einsum("bij,kj->bik", 2, ca));
    tensor_free(tensor_inner(a, b));
    tensor_free(tensor_tensordot(c, a, 1, (const int[]){2}, (const int[]){1}));
    CHECK_NEAR(tensor_test_products_stat("copies"), before, 0, 0);
    /* and a layout that cannot be viewed is copied, and counted */
    tensor_free(tensor_einsum("bij,bjk->ik", 2, (tensor *[]){c, IN(4, TENSOR_SHAPE(2, 4, 5))}));
    CHECK(tensor_test_products_stat("copies") > before);
}

/* The contraction order is the cheapest: [N, 2] [2, N] [N, 2] left to right would make an [N, N]
   intermediate (N*N*2 + N*N*2 multiply-adds); the plan contracts the last two first (2*N*2 + N*2*2). */
TEST(products_einsum_order_is_cheapest) {
    const int64_t N = 300;
    tensor *a = test_random(TENSOR_F64, TENSOR_SHAPE(N, 2), -1, 1), *b = test_random(TENSOR_F64, TENSOR_SHAPE(2, N), -1, 1);
    tensor *c = test_random(TENSOR_F64, TENSOR_SHAPE(N, 2), -1, 1);
    tensor *ops[3] = {a, b, c};
    tensor *want = tensor_matmul(a, tensor_matmul(b, c));
    double *wv = test_values(want);
    CHECK_VALUES(tensor_einsum("ij,jk,kl->il", 3, ops), wv, 2 * N, 1e-10, 1e-10);
    CHECK_NEAR(tensor_test_products_stat("einsum_cost"), (double)(2 * N * 2 + N * 2 * 2), 0, 0);
    CHECK_VALUES(tensor_linalg_multi_dot(3, ops), wv, 2 * N, 1e-10, 1e-10);
    /* 14 operands (past the exhaustive plan): the greedy order, same numbers */
    tensor *m[14];
    for (int i = 0; i < 14; i++) m[i] = test_random(TENSOR_F64, TENSOR_SHAPE(3, 3), -0.5, 0.5);
    tensor *chain = m[0];
    for (int i = 1; i < 14; i++) chain = tensor_matmul(chain, m[i]);
    double *cv = test_values(chain);
    CHECK_VALUES(tensor_einsum("ab,bc,cd,de,ef,fg,gh,hi,ij,jk,kl,lm,mn,no->ao", 14, m), cv, 9, 1e-12, 1e-12);
    CHECK_VALUES(tensor_linalg_multi_dot(14, m), cv, 9, 1e-12, 1e-12);
    free(cv);
    free(wv);
}

/* ---- gradients (f64, the registry sweep of tests/test_autograd.c calls these) ---- */

/* One case: op names the function; T bit i: in[i] is held transposed (its last two dims) by the
   leaf and f transposes it back, so the op sees a non-contiguous operand. */
typedef struct { int op; int T; const char *eq; int n; int dim; double p, beta, alpha; int64_t k; const int *da, *db; } pc;
enum { P_MM, P_BMM, P_MV, P_DOT, P_VDOT, P_INNER, P_OUTER, P_KRON, P_CROSS, P_LCROSS, P_TD, P_EIN, P_ADDMM, P_ADDMV, P_ADDBMM,
       P_BADDBMM, P_ADDR, P_MPOW, P_MDOT, P_CDIST, P_COV, P_COVW, P_CORR, P_TRACE };
static tensor *f_prod(tensor *const *in, const void *vctx) {
    const pc *c = (const pc *)vctx;
    tensor *x[16];
    for (int i = 0; i < c->n; i++) x[i] = (c->T >> i & 1) ? tensor_transpose(in[i], -1, -2) : in[i];
    switch (c->op) {
    case P_MM: return tensor_mm(x[0], x[1]);
    case P_BMM: return tensor_bmm(x[0], x[1]);
    case P_MV: return tensor_mv(x[0], x[1]);
    case P_DOT: return tensor_dot(x[0], x[1]);
    case P_VDOT: return tensor_vdot(x[0], x[1]);
    case P_INNER: return tensor_inner(x[0], x[1]);
    case P_OUTER: return tensor_outer(x[0], x[1]);
    case P_KRON: return tensor_kron(x[0], x[1]);
    case P_CROSS: return tensor_cross(x[0], x[1], c->dim);
    case P_LCROSS: return tensor_linalg_cross(x[0], x[1], c->dim);
    case P_TD: return tensor_tensordot(x[0], x[1], (int)c->k, c->da, c->db);
    case P_EIN: return tensor_einsum(c->eq, c->n, x);
    case P_ADDMM: return tensor_addmm(x[0], x[1], x[2], c->beta, c->alpha);
    case P_ADDMV: return tensor_addmv(x[0], x[1], x[2], c->beta, c->alpha);
    case P_ADDBMM: return tensor_addbmm(x[0], x[1], x[2], c->beta, c->alpha);
    case P_BADDBMM: return tensor_baddbmm(x[0], x[1], x[2], c->beta, c->alpha);
    case P_ADDR: return tensor_addr(x[0], x[1], x[2], c->beta, c->alpha);
    case P_MPOW: return tensor_matrix_power(x[0], c->k);
    case P_MDOT: return tensor_linalg_multi_dot(c->n, x);
    case P_CDIST: return tensor_cdist(x[0], x[1], c->p);
    case P_COV: return tensor_cov(x[0], c->k, NULL, NULL);
    case P_COVW: { /* aweights differentiable too; fweights fixed */
        static const double fw[5] = {1, 2, 0, 3, 1};
        tensor *f = test_tensor(TENSOR_I64, 1, (const int64_t[]){5}, fw);
        tensor *aw = c->n > 1 ? tensor_exp(x[1]) : NULL; /* positive */
        tensor *r = f && (aw || c->n == 1) ? tensor_cov(x[0], c->k, f, aw) : NULL;
        tensor_free(aw);
        tensor_free(f);
        return r;
    }
    case P_CORR: return tensor_corrcoef(x[0]);
    case P_TRACE: return tensor_trace(x[0]);
    default: return NULL;
    }
}

/* leaves of the given shapes (shapes[i] as the op sees it; a transposed one is made swapped) */
static void prod_grad(int line, const pc *c, const int *nd, const int64_t (*shapes)[4], bool twice) {
    tensor *in[16];
    int64_t want = 0;
    for (int i = 0; i < c->n; i++) {
        int64_t s[4];
        for (int d = 0; d < nd[i]; d++) s[d] = shapes[i][d];
        if ((c->T >> i & 1) && nd[i] >= 2) { s[nd[i] - 1] = shapes[i][nd[i] - 2]; s[nd[i] - 2] = shapes[i][nd[i] - 1]; }
        in[i] = test_leaf(nd[i], s, -1, 1);
        want += tensor_numel(in[i]);
    }
    int got = test_gradcheck(__FILE__, line, f_prod, c, c->n, in, 1e-6, 1e-5);
    if (got != want) test_fail(__FILE__, line, "gradcheck compared %d elements, expected %lld", got, (long long)want);
    if (twice) test_gradgradcheck(__FILE__, line, f_prod, c, c->n, in, 1e-5, 1e-4);
}
#define PG(ctx, twice, ...) do { pc c_ = ctx; static const int nd_[] = {__VA_ARGS__}; prod_grad(__LINE__, &c_, nd_, shapes_, twice); } while (0)

void gradcheck_mm(void) {
    static const int64_t shapes_[][4] = {{3, 4}, {4, 2}};
    for (int T = 0; T < 4; T++) PG(((pc){.op = P_MM, .T = T, .n = 2}), T == 0, 2, 2);
}
void gradcheck_bmm(void) {
    static const int64_t shapes_[][4] = {{2, 3, 4}, {2, 4, 2}};
    PG(((pc){.op = P_BMM, .n = 2}), true, 3, 3);
    PG(((pc){.op = P_BMM, .T = 3, .n = 2}), false, 3, 3);
}
void gradcheck_mv(void) {
    static const int64_t shapes_[][4] = {{3, 4}, {4}};
    PG(((pc){.op = P_MV, .n = 2}), true, 2, 1);
    PG(((pc){.op = P_MV, .T = 1, .n = 2}), false, 2, 1);
}
void gradcheck_dot(void) {
    static const int64_t shapes_[][4] = {{5}, {5}};
    PG(((pc){.op = P_DOT, .n = 2}), true, 1, 1);
}
void gradcheck_vdot(void) {
    static const int64_t shapes_[][4] = {{5}, {5}};
    PG(((pc){.op = P_VDOT, .n = 2}), false, 1, 1);
}
void gradcheck_inner(void) {
    { static const int64_t shapes_[][4] = {{2, 3}, {4, 3}}; PG(((pc){.op = P_INNER, .n = 2}), true, 2, 2); PG(((pc){.op = P_INNER, .T = 3, .n = 2}), false, 2, 2); }
    { static const int64_t shapes_[][4] = {{2, 2, 3}, {3}}; PG(((pc){.op = P_INNER, .n = 2}), false, 3, 1); }
    { static const int64_t shapes_[][4] = {{0}, {2, 3}}; PG(((pc){.op = P_INNER, .n = 2}), false, 0, 2); }
}
void gradcheck_outer(void) {
    static const int64_t shapes_[][4] = {{3}, {4}};
    PG(((pc){.op = P_OUTER, .n = 2}), true, 1, 1);
}
void gradcheck_kron(void) {
    { static const int64_t shapes_[][4] = {{2, 3}, {3, 2}}; PG(((pc){.op = P_KRON, .n = 2}), true, 2, 2); PG(((pc){.op = P_KRON, .T = 1, .n = 2}), false, 2, 2); }
    { static const int64_t shapes_[][4] = {{2}, {2, 3}}; PG(((pc){.op = P_KRON, .n = 2}), false, 1, 2); }
}
void gradcheck_cross(void) {
    static const int64_t shapes_[][4] = {{3, 2}, {3, 2}};
    PG(((pc){.op = P_CROSS, .n = 2, .dim = 0}), true, 2, 2);
    PG(((pc){.op = P_CROSS, .T = 1, .n = 2, .dim = 0}), false, 2, 2);
}
void gradcheck_linalg_cross(void) {
    { static const int64_t shapes_[][4] = {{4, 3}, {4, 3}}; PG(((pc){.op = P_LCROSS, .n = 2, .dim = -1}), false, 2, 2); }
    { static const int64_t shapes_[][4] = {{2, 3}, {1, 3}}; PG(((pc){.op = P_LCROSS, .n = 2, .dim = -1}), false, 2, 2); }
}
void gradcheck_tensordot(void) {
    static const int da[2] = {1, 0}, db[2] = {0, 2};
    { static const int64_t shapes_[][4] = {{2, 3, 4}, {3, 4, 5}}; PG(((pc){.op = P_TD, .n = 2, .k = 2}), true, 3, 3); PG(((pc){.op = P_TD, .T = 3, .n = 2, .k = 2}), false, 3, 3); }
    { static const int64_t shapes_[][4] = {{3, 4, 2}, {4, 5, 3}}; PG(((pc){.op = P_TD, .n = 2, .k = 2, .da = da, .db = db}), false, 3, 3); }
    { static const int64_t shapes_[][4] = {{2, 1}, {3, 4}}; PG(((pc){.op = P_TD, .n = 2, .k = 1}), false, 2, 2); } /* size-1 broadcast */
}
void gradcheck_einsum(void) {
    { static const int64_t shapes_[][4] = {{3, 4}, {4, 2}}; PG(((pc){.op = P_EIN, .eq = "ij,jk->ik", .n = 2}), true, 2, 2); PG(((pc){.op = P_EIN, .eq = "ij,jk", .T = 3, .n = 2}), false, 2, 2); }
    { static const int64_t shapes_[][4] = {{3, 3}}; PG(((pc){.op = P_EIN, .eq = "ii", .n = 1}), false, 2); PG(((pc){.op = P_EIN, .eq = "ii->i", .T = 1, .n = 1}), false, 2); }
    { static const int64_t shapes_[][4] = {{2, 3, 3}}; PG(((pc){.op = P_EIN, .eq = "bii->bi", .n = 1}), false, 3); }
    { static const int64_t shapes_[][4] = {{2, 3}, {3, 4}, {4, 2}}; PG(((pc){.op = P_EIN, .eq = "ab,bc,cd->ad", .n = 3}), true, 2, 2, 2); }
    { static const int64_t shapes_[][4] = {{2, 3}, {4, 1, 3}}; PG(((pc){.op = P_EIN, .eq = "...i,...i->...", .n = 2}), false, 2, 3); }
    { static const int64_t shapes_[][4] = {{2, 2, 3, 4}, {2, 2, 5, 4}}; PG(((pc){.op = P_EIN, .eq = "bhqd,bhkd->bhqk", .n = 2}), false, 4, 4); }
    { static const int64_t shapes_[][4] = {{3, 4}, {1}}; PG(((pc){.op = P_EIN, .eq = "ij,j->i", .n = 2}), false, 2, 1); }
    { static const int64_t shapes_[][4] = {{2, 3}, {3, 4}, {2, 4}}; PG(((pc){.op = P_EIN, .eq = "ij,jk,ik->", .n = 3}), false, 2, 2, 2); }
    { static const int64_t shapes_[][4] = {{2, 3, 4}, {4, 3, 2}}; PG(((pc){.op = P_EIN, .eq = "i...j,j...k->...ik", .n = 2}), false, 3, 3); }
}
void gradcheck_addmm(void) {
    { static const int64_t shapes_[][4] = {{2, 2}, {2, 3}, {3, 2}}; PG(((pc){.op = P_ADDMM, .n = 3, .beta = 0.5, .alpha = 2}), true, 2, 2, 2); PG(((pc){.op = P_ADDMM, .T = 6, .n = 3, .beta = 1, .alpha = 1}), false, 2, 2, 2); }
    { static const int64_t shapes_[][4] = {{2}, {2, 3}, {3, 2}}; PG(((pc){.op = P_ADDMM, .n = 3, .beta = -1, .alpha = 0.5}), false, 1, 2, 2); }
}
void gradcheck_addmv(void) {
    static const int64_t shapes_[][4] = {{3}, {3, 4}, {4}};
    PG(((pc){.op = P_ADDMV, .n = 3, .beta = 0.5, .alpha = 2}), true, 1, 2, 1);
    PG(((pc){.op = P_ADDMV, .T = 2, .n = 3, .beta = 1, .alpha = -1}), false, 1, 2, 1);
}
void gradcheck_addbmm(void) {
    static const int64_t shapes_[][4] = {{3, 2}, {4, 3, 5}, {4, 5, 2}};
    PG(((pc){.op = P_ADDBMM, .n = 3, .beta = 2, .alpha = 1}), true, 2, 3, 3);
    PG(((pc){.op = P_ADDBMM, .T = 6, .n = 3, .beta = 0.5, .alpha = -1}), false, 2, 3, 3);
}
void gradcheck_baddbmm(void) {
    static const int64_t shapes_[][4] = {{1, 3, 2}, {2, 3, 4}, {2, 4, 2}};
    PG(((pc){.op = P_BADDBMM, .n = 3, .beta = 1, .alpha = 3}), true, 3, 3, 3);
    PG(((pc){.op = P_BADDBMM, .T = 2, .n = 3, .beta = -0.5, .alpha = 1}), false, 3, 3, 3);
}
void gradcheck_addr(void) {
    static const int64_t shapes_[][4] = {{3, 4}, {3}, {4}};
    PG(((pc){.op = P_ADDR, .n = 3, .beta = 0.5, .alpha = -2}), true, 2, 1, 1);
    PG(((pc){.op = P_ADDR, .T = 1, .n = 3, .beta = 1, .alpha = 1}), false, 2, 1, 1);
}
void gradcheck_matrix_power(void) {
    { static const int64_t shapes_[][4] = {{3, 3}}; PG(((pc){.op = P_MPOW, .n = 1, .k = 3}), true, 2); PG(((pc){.op = P_MPOW, .T = 1, .n = 1, .k = 1}), false, 2); }
    { static const int64_t shapes_[][4] = {{2, 2, 2}}; PG(((pc){.op = P_MPOW, .n = 1, .k = 6}), false, 3); }
}
void gradcheck_linalg_multi_dot(void) {
    { static const int64_t shapes_[][4] = {{4}, {4, 3}, {3, 6}, {6}}; PG(((pc){.op = P_MDOT, .n = 4}), true, 1, 2, 2, 1); }
    { static const int64_t shapes_[][4] = {{2, 5}, {5, 3}, {3, 6}, {6, 1}}; PG(((pc){.op = P_MDOT, .T = 2, .n = 4}), false, 2, 2, 2, 2); }
}
void gradcheck_cdist(void) {
    static const double ps[] = {2, 1, 3, INFINITY};
    { static const int64_t shapes_[][4] = {{3, 4}, {5, 4}};
      for (int i = 0; i < 4; i++) PG(((pc){.op = P_CDIST, .n = 2, .p = ps[i]}), false, 2, 2);
      PG(((pc){.op = P_CDIST, .T = 1, .n = 2, .p = 2}), false, 2, 2); }
    { static const int64_t shapes_[][4] = {{2, 3, 2}, {1, 2, 2}}; PG(((pc){.op = P_CDIST, .n = 2, .p = 2}), false, 3, 3); }
    { static const int64_t shapes_[][4] = {{27, 2}, {3, 2}}; PG(((pc){.op = P_CDIST, .n = 2, .p = 2}), false, 2, 2); } /* the matmul form */
}
void gradcheck_cov(void) {
    { static const int64_t shapes_[][4] = {{3, 5}}; PG(((pc){.op = P_COV, .n = 1, .k = 1}), true, 2); PG(((pc){.op = P_COV, .T = 1, .n = 1, .k = 0}), false, 2); }
    { static const int64_t shapes_[][4] = {{6}}; PG(((pc){.op = P_COV, .n = 1, .k = 1}), false, 1); }
    { static const int64_t shapes_[][4] = {{3, 5}, {5}}; PG(((pc){.op = P_COVW, .n = 1, .k = 1}), false, 2); PG(((pc){.op = P_COVW, .n = 2, .k = 1}), false, 2, 1); }
}
void gradcheck_corrcoef(void) {
    static const int64_t shapes_[][4] = {{3, 5}};
    PG(((pc){.op = P_CORR, .n = 1}), false, 2);
    PG(((pc){.op = P_CORR, .T = 1, .n = 1}), false, 2);
}
void gradcheck_trace(void) {
    static const int64_t shapes_[][4] = {{3, 4}};
    PG(((pc){.op = P_TRACE, .n = 1}), false, 2);
    PG(((pc){.op = P_TRACE, .T = 1, .n = 1}), false, 2);
}

/* ---- PyTorch's error cases ---- */

static tensor *F32(int nd, const int64_t *shape) { return tensor_ones(nd, shape, TENSOR_F32); }
#define O(...) F32(TENSOR_SHAPE(__VA_ARGS__))

void bad_input_mm(void) {
    tensor_scope_begin();
    CHECK_BAD(tensor_mm(NULL, O(2, 2)), "tensor_mm");
    CHECK_BAD(tensor_mm(O(2, 2), NULL), "tensor_mm");
    CHECK_BAD(tensor_mm(O(2), O(2, 2)), "tensor_mm");              /* not 2-D */
    CHECK_BAD(tensor_mm(O(2, 2), O(1, 2, 2)), "tensor_mm");
    CHECK_BAD(tensor_mm(O(2, 3), O(2, 3)), "tensor_mm");           /* 3 != 2 */
    CHECK_BAD(tensor_mm(O(2, 2), tensor_ones(TENSOR_SHAPE(2, 2), TENSOR_F64)), "tensor_mm");
    CHECK_BAD(tensor_mm(tensor_ones(TENSOR_SHAPE(2, 2), TENSOR_BOOL), tensor_ones(TENSOR_SHAPE(2, 2), TENSOR_BOOL)), "tensor_mm");
    tensor_scope_end();
}
void bad_input_bmm(void) {
    tensor_scope_begin();
    CHECK_BAD(tensor_bmm(NULL, O(1, 2, 2)), "tensor_bmm");
    CHECK_BAD(tensor_bmm(O(2, 2), O(2, 2)), "tensor_bmm");         /* not 3-D */
    CHECK_BAD(tensor_bmm(O(2, 2, 3), O(3, 3, 2)), "tensor_bmm");   /* batch 2 vs 3: no broadcasting */
    CHECK_BAD(tensor_bmm(O(1, 2, 3), O(2, 3, 2)), "tensor_bmm");
    CHECK_BAD(tensor_bmm(O(2, 2, 3), O(2, 2, 2)), "tensor_bmm");   /* 3 != 2 */
    tensor_scope_end();
}
void bad_input_mv(void) {
    tensor_scope_begin();
    CHECK_BAD(tensor_mv(O(2, 3), NULL), "tensor_mv");
    CHECK_BAD(tensor_mv(O(2, 3), O(3, 1)), "tensor_mv");           /* vec 2-D */
    CHECK_BAD(tensor_mv(O(3), O(3)), "tensor_mv");
    CHECK_BAD(tensor_mv(O(2, 3), O(2)), "tensor_mv");
    tensor_scope_end();
}
static void bad_dot(tensor *(*f)(tensor *, tensor *), const char *fn) {
    CHECK_BAD(f(NULL, O(3)), fn);
    CHECK_BAD(f(O(3), O(4)), fn);                                  /* lengths */
    CHECK_BAD(f(O(1, 3), O(3)), fn);                               /* 2-D */
    CHECK_BAD(f(O(3), tensor_ones(TENSOR_SHAPE(3), TENSOR_F64)), fn);
    CHECK_BAD(f(tensor_scalar(1, TENSOR_F32), tensor_scalar(1, TENSOR_F32)), fn);
    CHECK_BAD(f(tensor_ones(TENSOR_SHAPE(2), TENSOR_BOOL), tensor_ones(TENSOR_SHAPE(2), TENSOR_BOOL)), fn);
}
void bad_input_dot(void) { tensor_scope_begin(); bad_dot(tensor_dot, "tensor_dot"); tensor_scope_end(); }
void bad_input_vdot(void) { tensor_scope_begin(); bad_dot(tensor_vdot, "tensor_vdot"); tensor_scope_end(); }
void bad_input_inner(void) {
    tensor_scope_begin();
    CHECK_BAD(tensor_inner(NULL, O(3)), "tensor_inner");
    CHECK_BAD(tensor_inner(O(2, 3), O(2)), "tensor_inner");        /* last dims 3 vs 2 */
    CHECK_BAD(tensor_inner(O(2, 3), tensor_ones(TENSOR_SHAPE(3), TENSOR_F64)), "tensor_inner");
    CHECK_BAD(tensor_inner(O(1, 1, 1, 1, 1, 2), O(1, 1, 1, 1, 1, 2)), "tensor_inner"); /* 10 dims */
    tensor_scope_end();
}
void bad_input_outer(void) {
    tensor_scope_begin();
    CHECK_BAD(tensor_outer(O(3), NULL), "tensor_outer");
    CHECK_BAD(tensor_outer(O(2, 2), O(2)), "tensor_outer");
    CHECK_BAD(tensor_outer(O(2), tensor_scalar(1, TENSOR_F32)), "tensor_outer");
    tensor_scope_end();
}
void bad_input_kron(void) {
    tensor_scope_begin();
    CHECK_BAD(tensor_kron(NULL, O(2)), "tensor_kron");
    CHECK_BAD(tensor_kron(O(2, 2, 2, 2, 2), O(2, 2, 2, 2, 2)), "tensor_kron"); /* 10 interleaved dims */
    tensor_scope_end();
}
static void bad_cross(tensor *(*f)(tensor *, tensor *, int), const char *fn) {
    CHECK_BAD(f(NULL, O(3), -1), fn);
    CHECK_BAD(f(O(2, 3), O(3), -1), fn);                           /* ndims differ */
    CHECK_BAD(f(O(2, 2), O(2, 2), -1), fn);                        /* not length 3 */
    CHECK_BAD(f(O(3, 2), O(3, 2), 2), fn);                         /* dim out of range */
    CHECK_BAD(f(O(2, 3), O(3, 3), -1), fn);                        /* batch 2 vs 3 */
    CHECK_BAD(f(O(3), tensor_ones(TENSOR_SHAPE(3), TENSOR_F64), 0), fn);
}
void bad_input_cross(void) { tensor_scope_begin(); bad_cross(tensor_cross, "tensor_cross"); tensor_scope_end(); }
void bad_input_linalg_cross(void) { tensor_scope_begin(); bad_cross(tensor_linalg_cross, "tensor_linalg_cross"); tensor_scope_end(); }
void bad_input_tensordot(void) {
    tensor_scope_begin();
    const int d1[1] = {1}, d0[1] = {0}, d11[2] = {1, 1}, d00[2] = {0, 0}, d5[1] = {5};
    CHECK_BAD(tensor_tensordot(NULL, O(3), 1, NULL, NULL), "tensor_tensordot");
    CHECK_BAD(tensor_tensordot(O(2, 3), O(4, 3), 1, d1, d0), "tensor_tensordot");   /* 3 vs 4 */
    CHECK_BAD(tensor_tensordot(O(2, 3), O(3, 4), 2, d11, d00), "tensor_tensordot"); /* repeated dim */
    CHECK_BAD(tensor_tensordot(O(2, 3), O(3, 4), 3, NULL, NULL), "tensor_tensordot");
    CHECK_BAD(tensor_tensordot(O(2, 3), O(3, 4), -1, NULL, NULL), "tensor_tensordot");
    CHECK_BAD(tensor_tensordot(O(2, 3), O(3, 4), 1, d5, d0), "tensor_tensordot");   /* dim out of range */
    CHECK_BAD(tensor_tensordot(O(2, 3), O(3, 4), 1, d1, NULL), "tensor_tensordot"); /* one list */
    CHECK_BAD(tensor_tensordot(O(2, 3), tensor_ones(TENSOR_SHAPE(3, 4), TENSOR_F64), 1, NULL, NULL), "tensor_tensordot");
    tensor_scope_end();
}
void bad_input_einsum(void) {
    tensor_scope_begin();
    tensor *a = O(2, 3), *b = O(3, 4), *sq = O(2, 2);
    tensor *ab[2] = {a, b}, *aa[2] = {a, a}, *an[2] = {a, NULL};
    CHECK_BAD(tensor_einsum(NULL, 1, &a), "tensor_einsum");
    CHECK_BAD(tensor_einsum("ij", 0, &a), "tensor_einsum");
    CHECK_BAD(tensor_einsum("ij", 1, NULL), "tensor_einsum");
    CHECK_BAD(tensor_einsum("ij,jk", 2, an), "tensor_einsum");
    CHECK_BAD(tensor_einsum("ij->jj", 1, &a), "tensor_einsum");      /* repeated output subscript */
    CHECK_BAD(tensor_einsum("ij->k", 1, &a), "tensor_einsum");       /* k in no operand */
    CHECK_BAD(tensor_einsum("i", 1, &a), "tensor_einsum");           /* 1 subscript, 2 dims */
    CHECK_BAD(tensor_einsum("ijk", 1, &a), "tensor_einsum");
    CHECK_BAD(tensor_einsum("ij,ij", 2, ab), "tensor_einsum");       /* i: 2 vs 3 */
    CHECK_BAD(tensor_einsum("ij", 2, ab), "tensor_einsum");          /* more operands than terms */
    CHECK_BAD(tensor_einsum("ij,jk,kl", 2, ab), "tensor_einsum");    /* fewer */
    CHECK_BAD(tensor_einsum("i.j", 1, &a), "tensor_einsum");         /* a lone '.' */
    CHECK_BAD(tensor_einsum("i1", 1, &a), "tensor_einsum");          /* not [a-zA-Z] */
    CHECK_BAD(tensor_einsum("i->i->i", 1, &a), "tensor_einsum");
    CHECK_BAD(tensor_einsum("i-j", 1, &a), "tensor_einsum");
    CHECK_BAD(tensor_einsum("......", 1, &a), "tensor_einsum");      /* two ellipses */
    CHECK_BAD(tensor_einsum("ii", 1, &a), "tensor_einsum");          /* a diagonal of a 2 x 3 */
    CHECK_BAD(tensor_einsum("ij,jk->ik,", 2, aa), "tensor_einsum");
    CHECK_BAD(tensor_einsum("ij,ij->ij", 2, (tensor *[]){sq, tensor_ones(TENSOR_SHAPE(2, 2), TENSOR_F64)}), "tensor_einsum");
    CHECK_BAD(tensor_einsum("i", 1, (tensor *[]){tensor_ones(TENSOR_SHAPE(2), TENSOR_BOOL)}), "tensor_einsum");
    CHECK_BAD(tensor_einsum("...i,...i", 2, (tensor *[]){O(2, 3), O(4, 3)}), "tensor_einsum"); /* ellipsis 2 vs 4 */
    /* more than 8 dims in the output */
    CHECK_BAD(tensor_einsum("abcde,fghij->abcdefghij", 2, (tensor *[]){O(1, 1, 1, 1, 1), O(1, 1, 1, 1, 1)}), "tensor_einsum");
    tensor_scope_end();
}
static void bad_add(tensor *(*f)(tensor *, tensor *, tensor *, double, double), const char *fn, tensor *in, tensor *x, tensor *y, tensor *bad_in,
                    tensor *bad_x) {
    CHECK_BAD(f(NULL, x, y, 1, 1), fn);
    CHECK_BAD(f(in, NULL, y, 1, 1), fn);
    CHECK_BAD(f(in, x, NULL, 1, 1), fn);
    CHECK_BAD(f(bad_in, x, y, 1, 1), fn);                            /* input does not broadcast */
    CHECK_BAD(f(in, bad_x, y, 1, 1), fn);                            /* shapes */
    CHECK_BAD(f(tensor_to_dtype(in, TENSOR_F64), x, y, 1, 1), fn);   /* dtypes */
    tensor *ii = tensor_to_dtype(in, TENSOR_I32), *xi = tensor_to_dtype(x, TENSOR_I32), *yi = tensor_to_dtype(y, TENSOR_I32);
    CHECK_BAD(f(ii, xi, yi, 1, 0.5), fn);                            /* a fractional alpha on integers */
}
void bad_input_addmm(void) {
    tensor_scope_begin();
    bad_add(tensor_addmm, "tensor_addmm", O(2, 2), O(2, 3), O(3, 2), O(3), O(2, 2));
    CHECK_BAD(tensor_addmm(O(2, 2), O(3), O(3, 2), 1, 1), "tensor_addmm");
    tensor_scope_end();
}
void bad_input_addmv(void) {
    tensor_scope_begin();
    bad_add(tensor_addmv, "tensor_addmv", O(2), O(2, 3), O(3), O(3), O(2, 2));
    CHECK_BAD(tensor_addmv(O(2), O(2, 3), O(3, 1), 1, 1), "tensor_addmv");
    tensor_scope_end();
}
void bad_input_addbmm(void) {
    tensor_scope_begin();
    bad_add(tensor_addbmm, "tensor_addbmm", O(2, 2), O(4, 2, 3), O(4, 3, 2), O(4, 2, 2), O(3, 2, 3));
    CHECK_BAD(tensor_addbmm(O(2, 2), O(2, 3), O(3, 2), 1, 1), "tensor_addbmm");
    tensor_scope_end();
}
void bad_input_baddbmm(void) {
    tensor_scope_begin();
    bad_add(tensor_baddbmm, "tensor_baddbmm", O(4, 2, 2), O(4, 2, 3), O(4, 3, 2), O(5, 2, 2), O(4, 2, 2));
    tensor_scope_end();
}
void bad_input_addr(void) {
    tensor_scope_begin();
    bad_add(tensor_addr, "tensor_addr", O(2, 3), O(2), O(3), O(3, 2), O(2, 1));
    tensor_scope_end();
}
void bad_input_matrix_power(void) {
    tensor_scope_begin();
    CHECK_BAD(tensor_matrix_power(NULL, 2), "tensor_matrix_power");
    CHECK_BAD(tensor_matrix_power(O(2, 3), 2), "tensor_matrix_power");
    CHECK_BAD(tensor_matrix_power(O(3), 2), "tensor_matrix_power");
    CHECK(tensor_matrix_power(O(2, 2), -1) == NULL && strstr(tensor_last_error(), "singular")); /* inv of a singular matrix */
    tensor_clear_error();
    tensor_scope_end();
}
void bad_input_linalg_multi_dot(void) {
    tensor_scope_begin();
    tensor *one[1] = {O(2, 2)};
    CHECK_BAD(tensor_linalg_multi_dot(1, one), "tensor_linalg_multi_dot");
    CHECK_BAD(tensor_linalg_multi_dot(2, NULL), "tensor_linalg_multi_dot");
    CHECK_BAD(tensor_linalg_multi_dot(2, (tensor *[]){O(2, 2), NULL}), "tensor_linalg_multi_dot");
    CHECK_BAD(tensor_linalg_multi_dot(3, (tensor *[]){O(2, 2), O(2), O(2, 2)}), "tensor_linalg_multi_dot"); /* 1-D in the middle */
    CHECK_BAD(tensor_linalg_multi_dot(2, (tensor *[]){O(2, 2, 2), O(2, 2)}), "tensor_linalg_multi_dot");
    CHECK_BAD(tensor_linalg_multi_dot(3, (tensor *[]){O(2, 3), O(2, 2), O(2, 2)}), "tensor_linalg_multi_dot"); /* 3 != 2 */
    CHECK_BAD(tensor_linalg_multi_dot(2, (tensor *[]){O(2, 2), tensor_ones(TENSOR_SHAPE(2, 2), TENSOR_F64)}), "tensor_linalg_multi_dot");
    tensor_scope_end();
}
void bad_input_cdist(void) {
    tensor_scope_begin();
    CHECK_BAD(tensor_cdist(NULL, O(2, 3), 2), "tensor_cdist");
    CHECK_BAD(tensor_cdist(O(3), O(4, 3), 2), "tensor_cdist");       /* 1-D */
    CHECK_BAD(tensor_cdist(O(2, 3), O(4, 2), 2), "tensor_cdist");    /* columns */
    CHECK_BAD(tensor_cdist(O(2, 2, 3), O(3, 4, 3), 2), "tensor_cdist"); /* batch 2 vs 3 */
    CHECK_BAD(tensor_cdist(O(2, 3), O(4, 3), -1), "tensor_cdist");
    CHECK_BAD(tensor_cdist(O(2, 3), O(4, 3), NAN), "tensor_cdist");
    CHECK_BAD(tensor_cdist(tensor_ones(TENSOR_SHAPE(2, 3), TENSOR_I32), tensor_ones(TENSOR_SHAPE(4, 3), TENSOR_I32), 2), "tensor_cdist");
    CHECK_BAD(tensor_cdist(O(2, 3), tensor_ones(TENSOR_SHAPE(4, 3), TENSOR_F64), 2), "tensor_cdist");
    tensor_scope_end();
}
void bad_input_cov(void) {
    tensor_scope_begin();
    tensor *x = O(2, 3);
    CHECK_BAD(tensor_cov(NULL, 1, NULL, NULL), "tensor_cov");
    CHECK_BAD(tensor_cov(O(2, 3, 4), 1, NULL, NULL), "tensor_cov");
    CHECK_BAD(tensor_cov(x, 1, O(3), NULL), "tensor_cov");           /* float fweights */
    CHECK_BAD(tensor_cov(x, 1, tensor_ones(TENSOR_SHAPE(4), TENSOR_I64), NULL), "tensor_cov");
    CHECK_BAD(tensor_cov(x, 1, tensor_full(TENSOR_SHAPE(3), -1, TENSOR_I64), NULL), "tensor_cov");
    CHECK_BAD(tensor_cov(x, 1, NULL, tensor_ones(TENSOR_SHAPE(3), TENSOR_I64)), "tensor_cov"); /* integer aweights */
    CHECK_BAD(tensor_cov(x, 1, NULL, tensor_full(TENSOR_SHAPE(3), -0.5, TENSOR_F32)), "tensor_cov");
    CHECK_BAD(tensor_cov(x, 1, NULL, O(1, 3)), "tensor_cov");        /* 2-D weights */
    CHECK_BAD(tensor_cov(tensor_ones(TENSOR_SHAPE(2, 3), TENSOR_BOOL), 1, NULL, NULL), "tensor_cov");
    tensor_scope_end();
}
void bad_input_corrcoef(void) {
    tensor_scope_begin();
    CHECK_BAD(tensor_corrcoef(NULL), "tensor_corrcoef");
    CHECK_BAD(tensor_corrcoef(O(2, 3, 4)), "tensor_corrcoef");
    tensor_scope_end();
}
void bad_input_trace(void) {
    tensor_scope_begin();
    CHECK_BAD(tensor_trace(NULL), "tensor_trace");
    CHECK_BAD(tensor_trace(O(3)), "tensor_trace");
    CHECK_BAD(tensor_trace(O(2, 2, 2)), "tensor_trace");
    tensor_scope_end();
}
