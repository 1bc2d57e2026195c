/* tests/test_misc_ops.c: lerp, lerp_scalar, addcmul, addcdiv, isclose, allclose, equal, glu, prelu,
   local_response_norm and pdist: values against PyTorch 1.13 (computed there and pasted below),
   their error cases (the registry's bad-input sweep) and their gradient checks (the registry's
   gradcheck sweep), with broadcasting and non-contiguous inputs. */
#include "test.h"

/* ---- expected values, from PyTorch 1.13 (torch.lerp, torch.addcmul, ..., on the inputs below) ---- */
static const double lerp_s[6] = {0.5, -1.25, 2.0, 3.0, -0.75, 1.5};
static const double lerp_e[3] = {1.5, 2.25, -4.0};
static const double lerp_w[2] = {0.3, 0.75};
static const double lerp_want[6] = {0.8, -0.20000000000000004, 0.20000000000000007, 1.875, 1.5, -2.625};
static const double lerp_want_f32[6] = {0.800000011920929, -0.19999995827674866, 0.19999992847442627, 1.875, 1.5, -2.625};
static const double lerp_s07[6] = {1.2, 1.1999999999999997, -2.1999999999999997, 1.9500000000000002, 1.3499999999999999, -2.3499999999999996};
static const double lerp_s02_f32[6] = {0.699999988079071, -0.550000011920929, 0.7999999523162842, 2.700000047683716, -0.14999999105930328, 0.3999999761581421};
static const double lerp_s1[6] = {1.5, 2.25, -4.0, 1.5, 2.25, -4.0};
static const double lerp_bf16[6] = {0.80078125, -0.2001953125, 0.2001953125, 2.546875, 0.150390625, -0.150390625};
static const double addc_t1[2] = {1.5, -2.0};
static const double addc_t2[3] = {0.5, -3.0, 4.0};
static const double addcmul_want[6] = {-0.0625, 2.125, -2.5, 3.75, -5.25, 7.5};
static const double addcdiv_want[6] = {8.0, -2.5, 2.9375, -7.0, 0.9166666666666667, 0.25};
static const double addcmul_int[6] = {-20.0, 26.0, -24.0, 18.0, -11.0, 24.0};
static const double addcdiv_mixed[6] = {1.2142857313156128, 1.8125, 3.1666667461395264, 3.857142925262451, 5.125, 5.888888835906982};
static const double ic_a[8] = {1.0, 1.0, 0.0, NAN, INFINITY, INFINITY, 100.0, 1e-09};
static const double ic_b[8] = {1.000001, 1.1, 1e-08, NAN, INFINITY, -INFINITY, 100.001, 0.0};
static const double ic_def[8] = {1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 1.0};
static const double ic_nan[8] = {1.0, 0.0, 1.0, 1.0, 1.0, 0.0, 1.0, 1.0};
static const double ic_loose[8] = {1.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 0.0};
static const double ic_zero[8] = {0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0};
static const double ic_f32[8] = {1.0, 0.0, 1.0, 0.0, 1.0, 0.0, 1.0, 1.0};
static const double ic_int[4] = {1.0, 1.0, 1.0, 1.0};
static const double ic_u8[3] = {0.0, 0.0, 1.0};
static const double ic_bool[3] = {1.0, 1.0, 1.0};
static const double ic_bool2[3] = {0.0, 1.0, 1.0};
static const double glu_x[8] = {0.5, -1.0, 2.0, 0.25, 1.5, 3.0, -2.0, -0.5};
static const double glu_1[4] = {0.44039853898894116, -0.5621765008857981, 0.1788043830331763, 1.132622006394436};
static const double glu_0[4] = {0.4087872380968218, -0.9525741268224334, 0.2384058440442351, 0.09438516719953635};
static const double glu_m1[4] = {0.44039853898894116, -0.5621765008857981, 0.1788043830331763, 1.132622006394436};
static const double prelu_x[12] = {1.0, -2.0, -0.5, 3.0, -4.0, 0.0, 2.0, -1.0, -3.0, -0.25, 0.5, -6.0};
static const double prelu_w[3] = {0.25, -0.5, 2.0};
static const double prelu_want[12] = {1.0, -0.5, 0.25, 3.0, -8.0, 0.0, 2.0, -0.25, 1.5, 0.125, 0.5, -12.0};
static const double prelu_one[12] = {1.0, -0.2, -0.05, 3.0, -0.4, 0.0, 2.0, -0.1, -0.30000000000000004, -0.025, 0.5, -0.6000000000000001};
static const double lrn_x[16] = {0.5, -1.0, 2.0, 1.5, -3.0, 0.25, 1.0, -2.5, 1.0, 2.0, 3.0, -1.0, 0.0, 4.0, -2.0, 0.5};
static const double lrn_2[16] = {0.49999531255126894, -0.9999625016405497, 1.9996813092560357, 1.499817213489781, -2.9985383313015643, 0.2499783225056422, 0.9996251639873398, -2.4994083665153806, 0.9999625016405497, 1.999700052490377, 2.9988754919620195, -0.9998125410062276, 0.0, 3.9974518950859386, -1.999700052490377, 0.49969552895256014};
static const double lrn_3[16] = {0.27501015787002614, -0.5713850117404662, 0.8444305101349641, 0.8549768355486348, -1.244594840196646, 0.11939474428590732, 0.4586032643631869, -1.2799180869898608, 0.4586032643631869, 1.0706595448797587, 1.3758097930895608, -0.35956911925258755, 0.0, 1.5462340021557266, -1.11032151746146, 0.1973557041476427};
static const double lrn_6[16] = {0.1846153846153846, -0.9504950495049503, 0.6956521739130435, 0.7164179104477612, -1.0434782608695652, 0.11940298507462686, 0.34782608695652173, -1.1940298507462686, 0.46153846153846145, 0.5, 1.0588235294117647, -0.24742268041237117, 0.0, 0.9896907216494847, -0.7058823529411764, 0.12371134020618559};
static const double lrn_4d[16] = {0.27501015787002614, -0.5713850117404662, 0.8444305101349641, 0.8549768355486348, -1.244594840196646, 0.11939474428590732, 0.4586032643631869, -1.2799180869898608, 0.4586032643631869, 1.0706595448797587, 1.3758097930895608, -0.35956911925258755, 0.0, 1.5462340021557266, -1.11032151746146, 0.1973557041476427};
static const double lrn_int[6] = {1.0, 1.154700517654419, 1.2247447967529297, 1.206045389175415, 1.178511381149292, 1.1547006368637085};
static const double pd_x[12] = {0.0, 1.0, 2.0, 3.0, -1.0, 0.5, 0.0, 1.0, 2.0, 1.5, 2.5, -3.0};
static const double pd_2[6] = {3.905124837953327, 0.0, 5.431390245600108, 3.905124837953327, 5.172040216394301, 5.431390245600108};
static const double pd_1[6] = {6.5, 0.0, 8.0, 6.5, 8.5, 8.0};
static const double pd_35[6] = {3.2548925814238445, 0.0, 5.0418139517633485, 3.2548925814238445, 4.297672349045103, 5.0418139517633485};
static const double pd_inf[6] = {3.0, 0.0, 5.0, 3.0, 3.5, 5.0};
static const double pd_0[6] = {3.0, 0.0, 3.0, 3.0, 3.0, 3.0};
static const double pd_grad2[12] = {-1.0443936649668728, 0.2359751343620869, 1.3046852576970114, 1.8264635059084506, -1.7010105817951322, -0.09150573726541134, -1.0443936649668728, 0.2359751343620869, 1.3046852576970114, 0.26232382402529497, 1.2290603130709585, -2.517864778128611};
static const double prelu_gx[12] = {1.0, 0.25, -0.5, 1.0, 2.0, 2.0, 1.0, 0.25, -0.5, -0.5, 1.0, 2.0};
static const double prelu_gw[3] = {-3.0, -3.75, -10.0};
static const double addcmul_f32[6] = {0.03700000047683716, -1.0209999084472656, 2.259000062942505, 3.740999937057495, -2.6529998779296875, 4.986999988555908};
static const double addcdiv_f32[6] = {0.22857144474983215, -1.3290321826934814, 2.718367338180542, 2.3999998569488525, -0.49677419662475586, 1.7714285850524902};
static const double addcmul_bf16[6] = {0.037109375, -1.015625, 2.265625, 3.734375, -2.640625, 4.96875};
static const double addc_x[6] = {0.1, -1.3, 2.7, 3.3, -0.7, 1.9};
static const double addc_y[2] = {0.3, -2.1};
static const double addc_z[3] = {0.7, -3.1, 4.9};

static tensor *T64(int nd, const int64_t *shape, const double *v) { return test_tensor(TENSOR_F64, nd, shape, v); }
static tensor *tr(tensor *t) { return tensor_transpose(tensor_contiguous(tensor_transpose(t, 0, 1)), 0, 1); } /* same values, column-major */

/* ---- lerp ---- */
TEST(misc_lerp_values) {
    tensor *s = T64(TENSOR_SHAPE(2, 3), lerp_s), *e = T64(TENSOR_SHAPE(3), lerp_e), *w = T64(TENSOR_SHAPE(2, 1), lerp_w);
    tensor *r = tensor_lerp(s, e, w);
    CHECK_SHAPE(r, TENSOR_SHAPE(2, 3));
    CHECK(tensor_get_dtype(r) == TENSOR_F64);
    CHECK_VALUES(r, lerp_want, 6, 0, 1e-15);
    CHECK_VALUES(tensor_lerp(tr(s), e, w), lerp_want, 6, 0, 1e-15); /* non-contiguous start */
    /* the weight grows the result: start [3], end [3], weight [2, 1] */
    tensor *r2 = tensor_lerp(e, tensor_mul_scalar(e, 2), w);
    static const double want2[6] = {1.5 * 1.3, 2.25 * 1.3, -4.0 * 1.3, 1.5 * 1.75, 2.25 * 1.75, -4.0 * 1.75};
    CHECK_SHAPE(r2, TENSOR_SHAPE(2, 3));
    CHECK_VALUES(r2, want2, 6, 0, 1e-15);
    tensor *rf = tensor_lerp(tensor_to_dtype(s, TENSOR_F32), tensor_to_dtype(e, TENSOR_F32), tensor_to_dtype(w, TENSOR_F32));
    CHECK(tensor_get_dtype(rf) == TENSOR_F32);
    CHECK_VALUES(rf, lerp_want_f32, 6, 0, 0); /* one rounding, as PyTorch's fused multiply-add */
    CHECK_VALUES(tensor_lerp_scalar(s, e, 0.7), lerp_s07, 6, 0, 1e-15);
    CHECK_VALUES(tensor_lerp_scalar(tensor_to_dtype(s, TENSOR_F32), tensor_to_dtype(e, TENSOR_F32), 0.2), lerp_s02_f32, 6, 0, 1e-7);
    /* weight 1 gives end exactly (the second branch of PyTorch's formula) */
    CHECK_VALUES(tensor_lerp_scalar(s, e, 1.0), lerp_s1, 6, 0, 0);
    tensor *one = tensor_full(TENSOR_SHAPE(1), 1.0, TENSOR_F64);
    CHECK_VALUES(tensor_lerp(s, e, one), lerp_s1, 6, 0, 0);
    tensor *rb = tensor_lerp_scalar(tensor_to_dtype(s, TENSOR_BF16), tensor_to_dtype(e, TENSOR_BF16), 0.3);
    CHECK(tensor_get_dtype(rb) == TENSOR_BF16);
    CHECK_VALUES(rb, lerp_bf16, 6, 0, 0);
    /* NaN weight gives NaN; empty inputs an empty result */
    double nanw = NAN;
    tensor *rn = tensor_lerp(s, e, T64(0, NULL, &nanw));
    static const double nans[6] = {NAN, NAN, NAN, NAN, NAN, NAN};
    CHECK_VALUES(rn, nans, 6, 0, 0);
    tensor *z = tensor_zeros(TENSOR_SHAPE(0, 3), TENSOR_F32);
    CHECK_SHAPE(tensor_lerp_scalar(z, z, 0.5), TENSOR_SHAPE(0, 3));
}

/* ---- addcmul, addcdiv ---- */
TEST(misc_addcmul_addcdiv_values) {
    tensor *s = T64(TENSOR_SHAPE(2, 3), lerp_s), *t1 = T64(TENSOR_SHAPE(2, 1), addc_t1), *t2 = T64(TENSOR_SHAPE(3), addc_t2);
    CHECK_VALUES(tensor_addcmul(s, t1, t2, -0.75), addcmul_want, 6, 0, 1e-15);
    CHECK_VALUES(tensor_addcdiv(s, t1, t2, 2.5), addcdiv_want, 6, 0, 1e-15);
    CHECK_VALUES(tensor_addcmul(tr(s), t1, t2, -0.75), addcmul_want, 6, 0, 1e-15);
    /* the inputs broadcast to the result: t [3] grows to [2, 3] */
    tensor *r = tensor_addcmul(t2, t1, t2, 1);
    CHECK_SHAPE(r, TENSOR_SHAPE(2, 3));
    static const double want[6] = {0.5 + 0.75, -3 - 4.5, 4 + 6, 0.5 - 1, -3 + 6, 4 - 8};
    CHECK_VALUES(r, want, 6, 0, 0);
    /* integers: value truncated (-1.5 -> -1), the result i64 (i64 with i32) */
    static const double iv[6] = {1, 2, 3, 4, 5, 6}, i1[2] = {3, -2}, i2[3] = {7, -8, 9};
    tensor *ti = test_tensor(TENSOR_I64, TENSOR_SHAPE(2, 3), iv), *ti1 = test_tensor(TENSOR_I64, TENSOR_SHAPE(2, 1), i1), *ti2 = test_tensor(TENSOR_I32, TENSOR_SHAPE(3), i2);
    tensor *ri = tensor_addcmul(ti, ti1, ti2, -1.5);
    CHECK(tensor_get_dtype(ri) == TENSOR_I64);
    CHECK_VALUES(ri, addcmul_int, 6, 0, 0);
    CHECK_VALUES(tensor_addcmul(ti, ti1, ti2, 0.5), iv, 6, 0, 0); /* value 0.5 -> 0 */
    /* addcdiv of an integer t with a float tensor1 promotes to f32 */
    tensor *rd = tensor_addcdiv(ti, tensor_to_dtype(ti1, TENSOR_F32), ti2, 0.5);
    CHECK(tensor_get_dtype(rd) == TENSOR_F32);
    CHECK_VALUES(rd, addcdiv_mixed, 6, 0, 1e-7);
    /* f32 t with f64 tensors: f64; a 0-dim f64 t with f32 tensors: f32 (PyTorch's promotion) */
    CHECK(tensor_get_dtype(tensor_addcmul(tensor_to_dtype(s, TENSOR_F32), t1, t2, 1)) == TENSOR_F64);
    double one = 1;
    CHECK(tensor_get_dtype(tensor_addcmul(T64(0, NULL, &one), tensor_to_dtype(t1, TENSOR_F32), ti2, 0.5)) == TENSOR_F32);
}

/* f32 and bf16 against PyTorch's, which rounds after each operation where the kernel computes in
   double and rounds once: within an ulp of the dtype. */
TEST(misc_addc_low_precision) {
    tensor *x = T64(TENSOR_SHAPE(2, 3), addc_x), *y = T64(TENSOR_SHAPE(2, 1), addc_y), *z = T64(TENSOR_SHAPE(3), addc_z);
    tensor *xf = tensor_to_dtype(x, TENSOR_F32), *yf = tensor_to_dtype(y, TENSOR_F32), *zf = tensor_to_dtype(z, TENSOR_F32);
    tensor *m = tensor_addcmul(xf, yf, zf, -0.3), *d = tensor_addcdiv(xf, yf, zf, 0.3);
    CHECK(tensor_get_dtype(m) == TENSOR_F32 && tensor_get_dtype(d) == TENSOR_F32);
    CHECK_VALUES(m, addcmul_f32, 6, 0, 1.2e-7);
    CHECK_VALUES(d, addcdiv_f32, 6, 0, 1.2e-7);
    tensor *mb = tensor_addcmul(tensor_to_dtype(x, TENSOR_BF16), tensor_to_dtype(y, TENSOR_BF16), tensor_to_dtype(z, TENSOR_BF16), -0.3);
    CHECK(tensor_get_dtype(mb) == TENSOR_BF16);
    CHECK_VALUES(mb, addcmul_bf16, 6, 0, 7.9e-3);
}

/* ---- isclose, allclose, equal ---- */
TEST(misc_isclose_values) {
    tensor *a = T64(TENSOR_SHAPE(8), ic_a), *b = T64(TENSOR_SHAPE(8), ic_b);
    tensor *r = tensor_isclose(a, b, 1e-5, 1e-8, false);
    CHECK(tensor_get_dtype(r) == TENSOR_BOOL);
    CHECK_VALUES(r, ic_def, 8, 0, 0);
    CHECK_VALUES(tensor_isclose(a, b, 1e-5, 1e-8, true), ic_nan, 8, 0, 0);
    CHECK_VALUES(tensor_isclose(a, b, 0.1, 0, false), ic_loose, 8, 0, 0);
    CHECK_VALUES(tensor_isclose(a, b, 0, 0, false), ic_zero, 8, 0, 0);
    CHECK_VALUES(tensor_isclose(tensor_to_dtype(a, TENSOR_F32), tensor_to_dtype(b, TENSOR_F32), 1e-5, 1e-8, false), ic_f32, 8, 0, 0);
    static const double ia[4] = {0, 10, -5, 100}, ib[4] = {1, 12, -5, 90};
    CHECK_VALUES(tensor_isclose(test_tensor(TENSOR_I64, TENSOR_SHAPE(4), ia), test_tensor(TENSOR_I64, TENSOR_SHAPE(4), ib), 0.1, 1, false), ic_int, 4, 0, 0);
    static const double ua[3] = {0, 200, 5}, ub[3] = {255, 100, 5}; /* u8 differences do not wrap (f32), as PyTorch's */
    CHECK_VALUES(tensor_isclose(test_tensor(TENSOR_U8, TENSOR_SHAPE(3), ua), test_tensor(TENSOR_U8, TENSOR_SHAPE(3), ub), 0, 2, false), ic_u8, 3, 0, 0);
    static const double ba[3] = {1, 0, 1}, bb[3] = {0, 0, 1};
    tensor *ta = test_tensor(TENSOR_BOOL, TENSOR_SHAPE(3), ba), *tb = test_tensor(TENSOR_BOOL, TENSOR_SHAPE(3), bb);
    CHECK_VALUES(tensor_isclose(ta, tb, 0, 1, false), ic_bool, 3, 0, 0);
    CHECK_VALUES(tensor_isclose(ta, tb, 0.5, 0.25, false), ic_bool2, 3, 0, 0);
    /* integers compare in f32: 2^24 + 1 is close to 2^24 with atol 0.5, 2^62 not to -2^62 (PyTorch's) */
    static const double big_a[2] = {16777217.0, 4611686018427387904.0}, big_b[2] = {16777216.0, -4611686018427387904.0}, want_big[2] = {1, 0};
    CHECK_VALUES(tensor_isclose(test_tensor(TENSOR_I64, TENSOR_SHAPE(2), big_a), test_tensor(TENSOR_I64, TENSOR_SHAPE(2), big_b), 0, 0.5, false), want_big, 2, 0, 0);
    /* broadcast: [2] against [2, 1] */
    static const double v2[2] = {1, 2}, want_b[4] = {1, 0, 0, 1};
    tensor *rb = tensor_isclose(T64(TENSOR_SHAPE(2), v2), T64(TENSOR_SHAPE(2, 1), v2), 1e-5, 1e-8, false);
    CHECK_SHAPE(rb, TENSOR_SHAPE(2, 2));
    CHECK_VALUES(rb, want_b, 4, 0, 0);
}

TEST(misc_allclose_equal) {
    tensor *a = T64(TENSOR_SHAPE(2, 3), lerp_s);
    tensor *b = tensor_add_scalar(a, 1e-7);
    CHECK(tensor_allclose(a, b, 1e-5, 1e-8, false));
    CHECK(!tensor_allclose(a, b, 0, 1e-8, false));
    CHECK(tensor_allclose(a, tr(a), 0, 0, false));
    static const double v2[2] = {1, 2};
    CHECK(!tensor_allclose(T64(TENSOR_SHAPE(2), v2), T64(TENSOR_SHAPE(2, 1), v2), 1e-5, 1e-8, false)); /* broadcast, unequal */
    double nan = NAN;
    tensor *n = T64(0, NULL, &nan);
    CHECK(!tensor_allclose(n, n, 1e-5, 1e-8, false));
    CHECK(tensor_allclose(n, n, 1e-5, 1e-8, true));
    CHECK(tensor_last_error() == NULL);
    /* failures: false with the error set */
    tensor_clear_error();
    CHECK(!tensor_allclose(a, tensor_to_dtype(a, TENSOR_F32), 1e-5, 1e-8, false));
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "tensor_isclose"));
    tensor_clear_error();
    CHECK(!tensor_allclose(NULL, a, 1e-5, 1e-8, false));
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "tensor_isclose"));
    tensor_clear_error();
    CHECK(!tensor_allclose(a, a, -1, 1e-8, false));
    CHECK(tensor_last_error() != NULL);
    tensor_clear_error();
    CHECK(!tensor_allclose(a, T64(TENSOR_SHAPE(2), v2), 1e-5, 1e-8, false)); /* shapes [2, 3] and [2] do not broadcast */
    CHECK(tensor_last_error() != NULL);
    tensor_clear_error();

    CHECK(tensor_equal(a, tr(a)));
    CHECK(tensor_equal(a, tensor_to_dtype(a, TENSOR_F64)));
    CHECK(tensor_equal(T64(TENSOR_SHAPE(2), v2), test_tensor(TENSOR_I64, TENSOR_SHAPE(2), v2))); /* dtypes differ, values equal */
    CHECK(!tensor_equal(T64(TENSOR_SHAPE(2), v2), T64(TENSOR_SHAPE(1, 2), v2)));            /* shapes differ */
    CHECK(!tensor_equal(a, b));
    CHECK(!tensor_equal(n, n));
    CHECK(tensor_equal(tensor_zeros(TENSOR_SHAPE(0), TENSOR_F32), tensor_zeros(TENSOR_SHAPE(0), TENSOR_F32)));
    CHECK(tensor_last_error() == NULL);
    CHECK(!tensor_equal(a, NULL));
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "tensor_equal"));
    tensor_clear_error();
    CHECK(!tensor_equal(NULL, NULL));
    CHECK(tensor_last_error() != NULL);
    tensor_clear_error();
}

/* ---- glu, prelu ---- */
TEST(misc_glu_prelu_values) {
    tensor *x = T64(TENSOR_SHAPE(2, 4), glu_x);
    tensor *g1 = tensor_glu(x, 1);
    CHECK_SHAPE(g1, TENSOR_SHAPE(2, 2));
    CHECK_VALUES(g1, glu_1, 4, 0, 1e-15);
    CHECK_VALUES(tensor_glu(x, -1), glu_m1, 4, 0, 1e-15);
    tensor *g0 = tensor_glu(x, 0);
    CHECK_SHAPE(g0, TENSOR_SHAPE(1, 4));
    CHECK_VALUES(g0, glu_0, 4, 0, 1e-15);
    CHECK_VALUES(tensor_glu(tr(x), 1), glu_1, 4, 0, 1e-15);
    CHECK_VALUES(tensor_glu(tensor_to_dtype(x, TENSOR_F32), 1), glu_1, 4, 0, 1e-6);

    tensor *px = T64(TENSOR_SHAPE(2, 3, 2), prelu_x), *pw = T64(TENSOR_SHAPE(3), prelu_w);
    CHECK_VALUES(tensor_prelu(px, pw), prelu_want, 12, 0, 0);
    static const double w1 = 0.1;
    CHECK_VALUES(tensor_prelu(px, T64(TENSOR_SHAPE(1), &w1)), prelu_one, 12, 0, 1e-15);
    CHECK_VALUES(tensor_prelu(px, T64(0, NULL, &w1)), prelu_one, 12, 0, 1e-15);
    /* a 0-dim x keeps its shape with a one-element weight */
    double m2 = -2;
    tensor *p0 = tensor_prelu(T64(0, NULL, &m2), T64(TENSOR_SHAPE(1), &w1));
    CHECK(p0 && tensor_ndim(p0) == 0);
    CHECK_VALUES(p0, (const double[]){-0.2}, 1, 0, 1e-15);
    /* gradients against PyTorch's, x holding a 0 (the weight's side there, as PyTorch) */
    tensor *lx = T64(TENSOR_SHAPE(2, 3, 2), prelu_x), *lw = T64(TENSOR_SHAPE(3), prelu_w);
    tensor_set_requires_grad(lx, true);
    tensor_set_requires_grad(lw, true);
    CHECK(tensor_backward(tensor_sum_all(tensor_prelu(lx, lw))) == 0);
    CHECK_VALUES(tensor_grad(lx), prelu_gx, 12, 0, 0);
    CHECK_VALUES(tensor_grad(lw), prelu_gw, 3, 0, 1e-15);
}

/* ---- local_response_norm ---- */
TEST(misc_local_response_norm_values) {
    tensor *x = T64(TENSOR_SHAPE(2, 4, 2), lrn_x);
    CHECK_VALUES(tensor_local_response_norm(x, 2, 1e-4, 0.75, 1.0), lrn_2, 16, 0, 1e-14);
    CHECK_VALUES(tensor_local_response_norm(x, 3, 0.5, 0.6, 2.0), lrn_3, 16, 0, 1e-14);
    CHECK_VALUES(tensor_local_response_norm(x, 6, 1.0, 1.0, 0.5), lrn_6, 16, 0, 1e-14); /* a window wider than C */
    /* 4-D, non-contiguous: [2, 4, 2, 1] as a permuted view of [2, 4, 1, 2] */
    tensor *x4 = tensor_permute(tensor_reshape(x, 4, (const int64_t[]){2, 4, 1, 2}), 4, (const int[]){0, 1, 3, 2});
    tensor *r4 = tensor_local_response_norm(x4, 3, 0.5, 0.6, 2.0);
    CHECK_SHAPE(r4, TENSOR_SHAPE(2, 4, 2, 1));
    CHECK_VALUES(r4, lrn_4d, 16, 0, 1e-14);
    CHECK_VALUES(tensor_local_response_norm(tensor_to_dtype(x, TENSOR_F32), 3, 0.5, 0.6, 2.0), lrn_3, 16, 0, 1e-6);
    /* integers: the window mean truncates (PyTorch's integer avg_pool), the result is f32 */
    static const double iv[6] = {1, 2, 3, 4, 5, 6};
    tensor *ri = tensor_local_response_norm(test_tensor(TENSOR_I64, TENSOR_SHAPE(1, 3, 2), iv), 2, 1.0, 0.5, 1.0);
    CHECK(tensor_get_dtype(ri) == TENSOR_F32);
    CHECK_VALUES(ri, lrn_int, 6, 0, 1e-7);
    tensor *e = tensor_local_response_norm(tensor_zeros(TENSOR_SHAPE(0, 3, 2), TENSOR_F32), 2, 1e-4, 0.75, 1);
    CHECK_SHAPE(e, TENSOR_SHAPE(0, 3, 2));
}

/* ---- pdist ---- */
TEST(misc_pdist_values) {
    tensor *x = T64(TENSOR_SHAPE(4, 3), pd_x);
    static const double ps[5] = {2, 1, 3.5, INFINITY, 0};
    const double *want[5] = {pd_2, pd_1, pd_35, pd_inf, pd_0};
    for (int i = 0; i < 5; i++) {
        tensor *r = tensor_pdist(x, ps[i]);
        CHECK_SHAPE(r, TENSOR_SHAPE(6));
        CHECK_VALUES(r, want[i], 6, 0, 1e-14);
        CHECK_VALUES(tensor_pdist(tr(x), ps[i]), want[i], 6, 0, 1e-14);
    }
    CHECK_VALUES(tensor_pdist(tensor_to_dtype(x, TENSOR_F32), 2), pd_2, 6, 0, 1e-6);
    /* one row or none: empty; no columns: zeros */
    CHECK_SHAPE(tensor_pdist(tensor_zeros(TENSOR_SHAPE(1, 3), TENSOR_F32), 2), TENSOR_SHAPE(0));
    CHECK_SHAPE(tensor_pdist(tensor_zeros(TENSOR_SHAPE(0, 3), TENSOR_F32), 2), TENSOR_SHAPE(0));
    static const double z3[3] = {0, 0, 0};
    CHECK_VALUES(tensor_pdist(tensor_zeros(TENSOR_SHAPE(3, 0), TENSOR_F32), 2), z3, 3, 0, 0);
    /* rows 0 and 2 are equal: their pair's gradient is 0, as PyTorch's */
    tensor *lx = T64(TENSOR_SHAPE(4, 3), pd_x);
    tensor_set_requires_grad(lx, true);
    CHECK(tensor_backward(tensor_sum_all(tensor_pdist(lx, 2))) == 0);
    CHECK_VALUES(tensor_grad(lx), pd_grad2, 12, 0, 1e-14);
}

/* The composites free every temporary (the scope of a test would hide a leak). */
TEST(misc_ops_free_their_temporaries) {
    tensor *a = T64(TENSOR_SHAPE(2, 3), lerp_s), *b = T64(TENSOR_SHAPE(3), lerp_e), *w = T64(TENSOR_SHAPE(2, 1), lerp_w);
    tensor *x = T64(TENSOR_SHAPE(2, 4, 2), lrn_x), *pw = T64(TENSOR_SHAPE(4), lrn_x);
    tensor_set_requires_grad(a, true);
    tensor_set_requires_grad(x, true);
    int64_t before = tensor_live_handles();
    for (int i = 0; i < 11; i++) {
        tensor *r = NULL;
        switch (i) {
        case 0: r = tensor_lerp(a, b, w); break;
        case 1: r = tensor_lerp_scalar(a, b, 0.7); break;
        case 2: r = tensor_addcmul(a, b, w, 0.5); break;
        case 3: r = tensor_addcdiv(a, b, w, 0.5); break;
        case 4: r = tensor_isclose(a, b, 1e-5, 1e-8, true); break;
        case 5: r = tensor_glu(x, 1); break;
        case 6: r = tensor_prelu(x, pw); break;
        case 7: r = tensor_local_response_norm(x, 3, 1e-4, 0.75, 1); break;
        case 8: r = tensor_pdist(a, 2); break;
        case 9: CHECK(tensor_allclose(a, a, 1e-5, 1e-8, false)); r = tensor_clone(a); break;
        default: CHECK(tensor_equal(a, a)); r = tensor_clone(a); break;
        }
        CHECK_MSG(r != NULL, "case %d: %s", i, tensor_last_error() ? tensor_last_error() : "");
        tensor_free(r);
        CHECK_MSG(tensor_live_handles() == before, "case %d: %lld handles more", i, (long long)(tensor_live_handles() - before));
    }
}

/* ---- bad inputs (the registry's sweep) ---- */
static tensor *f32(int nd, const int64_t *shape) { return tensor_ones(nd, shape, TENSOR_F32); }

void bad_input_lerp(void) {
    const char *fn = "tensor_lerp";
    CHECK_BAD(tensor_lerp(NULL, f32(TENSOR_SHAPE(2)), f32(TENSOR_SHAPE(2))), fn);
    CHECK_BAD(tensor_lerp(f32(TENSOR_SHAPE(2)), f32(TENSOR_SHAPE(2)), NULL), fn);
    CHECK_BAD(tensor_lerp(f32(TENSOR_SHAPE(2)), tensor_ones(TENSOR_SHAPE(2), TENSOR_F64), f32(TENSOR_SHAPE(2))), fn);  /* dtypes differ */
    CHECK_BAD(tensor_lerp(f32(TENSOR_SHAPE(2)), f32(TENSOR_SHAPE(2)), tensor_ones(TENSOR_SHAPE(2), TENSOR_F64)), fn);
    CHECK_BAD(tensor_lerp(tensor_ones(TENSOR_SHAPE(2), TENSOR_I64), tensor_ones(TENSOR_SHAPE(2), TENSOR_I64), tensor_ones(TENSOR_SHAPE(2), TENSOR_I64)), fn);
    CHECK_BAD(tensor_lerp(f32(TENSOR_SHAPE(2)), f32(TENSOR_SHAPE(3)), f32(TENSOR_SHAPE(1))), fn);                      /* shapes */
    CHECK_BAD(tensor_lerp(f32(TENSOR_SHAPE(2)), f32(TENSOR_SHAPE(2)), f32(TENSOR_SHAPE(3))), fn);
}
void bad_input_lerp_scalar(void) {
    const char *fn = "tensor_lerp_scalar";
    CHECK_BAD(tensor_lerp_scalar(f32(TENSOR_SHAPE(2)), NULL, 0.5), fn);
    CHECK_BAD(tensor_lerp_scalar(tensor_ones(TENSOR_SHAPE(2), TENSOR_I32), tensor_ones(TENSOR_SHAPE(2), TENSOR_I32), 0.5), fn);
    CHECK_BAD(tensor_lerp_scalar(f32(TENSOR_SHAPE(2)), tensor_ones(TENSOR_SHAPE(2), TENSOR_F16), 0.5), fn);
    CHECK_BAD(tensor_lerp_scalar(f32(TENSOR_SHAPE(2)), f32(TENSOR_SHAPE(3)), 0.5), fn);
}
void bad_input_addcmul(void) {
    const char *fn = "tensor_addcmul";
    CHECK_BAD(tensor_addcmul(NULL, f32(TENSOR_SHAPE(2)), f32(TENSOR_SHAPE(2)), 1), fn);
    CHECK_BAD(tensor_addcmul(f32(TENSOR_SHAPE(2)), f32(TENSOR_SHAPE(2)), NULL, 1), fn);
    tensor *bo = tensor_ones(TENSOR_SHAPE(2), TENSOR_BOOL);
    CHECK_BAD(tensor_addcmul(bo, bo, bo, 1), fn);
    CHECK_BAD(tensor_addcmul(f32(TENSOR_SHAPE(2)), f32(TENSOR_SHAPE(3)), f32(TENSOR_SHAPE(2)), 1), fn);
}
void bad_input_addcdiv(void) {
    const char *fn = "tensor_addcdiv";
    CHECK_BAD(tensor_addcdiv(f32(TENSOR_SHAPE(2)), NULL, f32(TENSOR_SHAPE(2)), 1), fn);
    /* integer division refused, as PyTorch, even with a float t (bool counts as integer) */
    CHECK_BAD(tensor_addcdiv(f32(TENSOR_SHAPE(2)), tensor_ones(TENSOR_SHAPE(2), TENSOR_I64), tensor_ones(TENSOR_SHAPE(2), TENSOR_I32), 1), fn);
    CHECK_BAD(tensor_addcdiv(f32(TENSOR_SHAPE(2)), tensor_ones(TENSOR_SHAPE(2), TENSOR_BOOL), tensor_ones(TENSOR_SHAPE(2), TENSOR_BOOL), 1), fn);
    CHECK_BAD(tensor_addcdiv(f32(TENSOR_SHAPE(4)), f32(TENSOR_SHAPE(2)), f32(TENSOR_SHAPE(2)), 1), fn);
}
void bad_input_isclose(void) {
    const char *fn = "tensor_isclose";
    CHECK_BAD(tensor_isclose(NULL, f32(TENSOR_SHAPE(2)), 1e-5, 1e-8, false), fn);
    CHECK_BAD(tensor_isclose(f32(TENSOR_SHAPE(2)), tensor_ones(TENSOR_SHAPE(2), TENSOR_I64), 1e-5, 1e-8, false), fn); /* dtypes differ */
    CHECK_BAD(tensor_isclose(f32(TENSOR_SHAPE(2)), f32(TENSOR_SHAPE(2)), -1, 1e-8, false), fn);
    CHECK_BAD(tensor_isclose(f32(TENSOR_SHAPE(2)), f32(TENSOR_SHAPE(2)), 1e-5, -1, false), fn);
    CHECK_BAD(tensor_isclose(f32(TENSOR_SHAPE(2)), f32(TENSOR_SHAPE(2)), NAN, 1e-8, false), fn);
    CHECK_BAD(tensor_isclose(f32(TENSOR_SHAPE(2)), f32(TENSOR_SHAPE(3)), 1e-5, 1e-8, false), fn);
}
void bad_input_glu(void) {
    const char *fn = "tensor_glu";
    CHECK_BAD(tensor_glu(NULL, 0), fn);
    CHECK_BAD(tensor_glu(f32(0, NULL), 0), fn);
    CHECK_BAD(tensor_glu(f32(TENSOR_SHAPE(2, 3)), 1), fn);  /* odd size */
    CHECK_BAD(tensor_glu(f32(TENSOR_SHAPE(2, 4)), 2), fn);  /* dim out of range */
    CHECK_BAD(tensor_glu(f32(TENSOR_SHAPE(2, 4)), -3), fn);
    CHECK_BAD(tensor_glu(tensor_ones(TENSOR_SHAPE(2, 4), TENSOR_I64), 1), fn);
}
void bad_input_prelu(void) {
    const char *fn = "tensor_prelu";
    CHECK_BAD(tensor_prelu(NULL, f32(TENSOR_SHAPE(1))), fn);
    CHECK_BAD(tensor_prelu(f32(TENSOR_SHAPE(2, 3)), NULL), fn);
    CHECK_BAD(tensor_prelu(f32(TENSOR_SHAPE(2, 3)), f32(TENSOR_SHAPE(2))), fn);        /* 2 weights, 3 channels */
    CHECK_BAD(tensor_prelu(f32(TENSOR_SHAPE(4)), f32(TENSOR_SHAPE(4))), fn);           /* a 1-D x has one channel */
    CHECK_BAD(tensor_prelu(f32(0, NULL), f32(TENSOR_SHAPE(2))), fn);
    CHECK_BAD(tensor_prelu(f32(TENSOR_SHAPE(2, 3)), f32(TENSOR_SHAPE(1, 3))), fn);     /* weight 2-D */
    CHECK_BAD(tensor_prelu(f32(TENSOR_SHAPE(2, 3)), tensor_ones(TENSOR_SHAPE(3), TENSOR_F64)), fn);
    CHECK_BAD(tensor_prelu(tensor_ones(TENSOR_SHAPE(2, 3), TENSOR_I64), tensor_ones(TENSOR_SHAPE(3), TENSOR_I64)), fn);
}
void bad_input_local_response_norm(void) {
    const char *fn = "tensor_local_response_norm";
    CHECK_BAD(tensor_local_response_norm(NULL, 2, 1e-4, 0.75, 1), fn);
    CHECK_BAD(tensor_local_response_norm(f32(TENSOR_SHAPE(2, 3)), 2, 1e-4, 0.75, 1), fn);  /* 2-D */
    CHECK_BAD(tensor_local_response_norm(f32(TENSOR_SHAPE(1, 3, 2)), 0, 1e-4, 0.75, 1), fn);
    CHECK_BAD(tensor_local_response_norm(tensor_ones(TENSOR_SHAPE(1, 3, 2), TENSOR_BOOL), 2, 1e-4, 0.75, 1), fn);
}
void bad_input_pdist(void) {
    const char *fn = "tensor_pdist";
    CHECK_BAD(tensor_pdist(NULL, 2), fn);
    CHECK_BAD(tensor_pdist(f32(TENSOR_SHAPE(3)), 2), fn);
    CHECK_BAD(tensor_pdist(f32(TENSOR_SHAPE(3, 2, 2)), 2), fn);
    CHECK_BAD(tensor_pdist(f32(TENSOR_SHAPE(3, 2)), -1), fn);
    CHECK_BAD(tensor_pdist(f32(TENSOR_SHAPE(3, 2)), NAN), fn);
    CHECK_BAD(tensor_pdist(tensor_ones(TENSOR_SHAPE(3, 2), TENSOR_I64), 2), fn);
}

/* ---- gradient checks (the registry's sweep): f64, broadcasting, a transposed input ---- */
typedef struct { int op; bool transposed; double v; int i; } mctx;
enum { M_LERP, M_LERP_S, M_ADDCMUL, M_ADDCDIV, M_GLU, M_PRELU, M_LRN, M_PDIST };
static tensor *m_call(tensor *const *in, const void *vctx) {
    const mctx *c = (const mctx *)vctx;
    tensor *x = c->transposed ? tensor_transpose(in[0], 0, 1) : in[0];
    switch (c->op) {
    case M_LERP: return tensor_lerp(x, in[1], in[2]);
    case M_LERP_S: return tensor_lerp_scalar(x, in[1], c->v);
    case M_ADDCMUL: return tensor_addcmul(x, in[1], in[2], c->v);
    case M_ADDCDIV: return tensor_addcdiv(x, in[1], in[2], c->v);
    case M_GLU: return tensor_glu(x, c->i);
    case M_PRELU: return tensor_prelu(x, in[1]);
    case M_LRN: return tensor_local_response_norm(x, c->i, c->v, 0.75, 1.5);
    default: return tensor_pdist(x, c->v);
    }
}
#define MG(ctx, n, in, count) CHECK(GRADCHECK(m_call, &ctx, n, in) == (count))

void gradcheck_lerp(void) {
    /* start [3, 2] (used transposed: [2, 3]), end [3], weight [2, 1]; weights on both sides of 0.5 */
    tensor *in[3] = {test_leaf(TENSOR_SHAPE(3, 2), -2, 2), test_leaf(TENSOR_SHAPE(3), -2, 2), test_leaf(TENSOR_SHAPE(2, 1), -1, 2)};
    MG(((mctx){M_LERP, true, 0, 0}), 3, in, 11);
    tensor *in2[3] = {test_leaf(TENSOR_SHAPE(2, 3), -2, 2), test_leaf(TENSOR_SHAPE(2, 3), -2, 2), test_leaf(TENSOR_SHAPE(2, 3), -1, 2)};
    MG(((mctx){M_LERP, false, 0, 0}), 3, in2, 18);
}
void gradcheck_lerp_scalar(void) {
    tensor *in[2] = {test_leaf(TENSOR_SHAPE(3, 2), -2, 2), test_leaf(TENSOR_SHAPE(2, 1), -2, 2)};
    MG(((mctx){M_LERP_S, true, 0.3, 0}), 2, in, 8);
    MG(((mctx){M_LERP_S, true, 0.8, 0}), 2, in, 8);
}
void gradcheck_addcmul(void) {
    tensor *in[3] = {test_leaf(TENSOR_SHAPE(3, 2), -2, 2), test_leaf(TENSOR_SHAPE(2, 1), -2, 2), test_leaf(TENSOR_SHAPE(3), -2, 2)};
    MG(((mctx){M_ADDCMUL, true, -0.75, 0}), 3, in, 11);
}
void gradcheck_addcdiv(void) {
    tensor *in[3] = {test_leaf(TENSOR_SHAPE(3, 2), -2, 2), test_leaf(TENSOR_SHAPE(2, 1), -2, 2), test_leaf(TENSOR_SHAPE(3), 0.5, 2)};
    MG(((mctx){M_ADDCDIV, true, 2.5, 0}), 3, in, 11);
}
void gradcheck_glu(void) {
    tensor *in[1] = {test_leaf(TENSOR_SHAPE(4, 3), -2, 2)};
    MG(((mctx){M_GLU, true, 0, 1}), 1, in, 12);
    MG(((mctx){M_GLU, false, 0, 0}), 1, in, 12);
}
void gradcheck_prelu(void) {
    tensor *in[2] = {test_leaf(TENSOR_SHAPE(2, 3, 2), -2, 2), test_leaf(TENSOR_SHAPE(3), -1, 1)};
    MG(((mctx){M_PRELU, false, 0, 0}), 2, in, 15);
    tensor *in2[2] = {test_leaf(TENSOR_SHAPE(3, 2), -2, 2), test_leaf(TENSOR_SHAPE(1), -1, 1)}; /* used as [2, 3], one weight */
    MG(((mctx){M_PRELU, true, 0, 0}), 2, in2, 7);
}
void gradcheck_local_response_norm(void) {
    tensor *in[1] = {test_leaf(TENSOR_SHAPE(2, 4, 3), -2, 2)};
    MG(((mctx){M_LRN, false, 0.5, 3}), 1, in, 24);
    MG(((mctx){M_LRN, false, 0.3, 2}), 1, in, 24);
    tensor *in2[1] = {test_leaf(TENSOR_SHAPE(3, 2, 2), -2, 2)}; /* used as [2, 3, 2] */
    MG(((mctx){M_LRN, true, 1.0, 5}), 1, in2, 12);
}
void gradcheck_pdist(void) {
    static const double ps[4] = {2, 1, 3, INFINITY};
    tensor *in[1] = {test_leaf(TENSOR_SHAPE(4, 3), -2, 2)};
    for (int i = 0; i < 4; i++) MG(((mctx){M_PDIST, false, ps[i], 0}), 1, in, 12);
    tensor *in2[1] = {test_leaf(TENSOR_SHAPE(2, 3), -2, 2)}; /* used as [3, 2] */
    MG(((mctx){M_PDIST, true, 2, 0}), 1, in2, 6);
}

/* Second derivatives: the derivatives are written with ops, so create_graph differentiates them. */
TEST(misc_ternary_second_order) {
    static const int ops[3] = {M_LERP, M_ADDCMUL, M_ADDCDIV};
    for (int i = 0; i < 3; i++) {
        tensor *in[3] = {test_leaf(TENSOR_SHAPE(3, 2), -2, 2), test_leaf(TENSOR_SHAPE(3), -2, 2), test_leaf(TENSOR_SHAPE(2, 1), 0.5, 2)};
        mctx c = {ops[i], true, -0.75, 0};
        CHECK(GRADGRADCHECK(m_call, &c, 3, in) == 11);
    }
}
