/* torch.special (tests of generator/parts/special.h and the special formulas of formulas.h).
   Reference values: mpmath at 50 digits, rounded to double (PyTorch 1.13 is less accurate in
   places: its ndtr underflows to 0 by x = -10 and its trigamma is off by 5e-10 at 1). */
#include "test.h"

static const double SX[20] = {-30.0, -10.0, -3.5, -1.0, -0.3, 0.0, 1e-08, 0.25, 0.5, 1.0, 2.5, 5.0, 9.9, 10.1, 19.9, 20.1, 27.0, 40.0, 100.0, 700.0};
static const double SV_special_entr[20] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, 0.0, 1.8420680743952367e-07, 0.34657359027997264, 0.34657359027997264, 0.0, -2.2907268296853878, -8.047189562170502, -22.69609409569139, -23.35660778085686, -59.51532266143588, -60.31446828280711, -88.98759538211688, -147.55517816455745, -460.51701859880916, -4585.756234530383};
static const double SV_special_erfcx[20] = {INFINITY, 5.376234283632271e+43, 417962.4224457703, 5.008980080762283, 1.4537492328427655, 1.0, 0.9999999887162084, 0.7703465477309968, 0.6156903441929259, 0.427583576155807, 0.2108063640611436, 0.11070463773306863, 0.05670245693883227, 0.055590487009239874, 0.028315573983185766, 0.028034523526966875, 0.02088160799042094, 0.014100335983377814, 0.005641613782989433, 0.0008059842969226599};
static const double SV_special_ndtr[20] = {4.906713927148187e-198, 7.619853024160525e-24, 0.00023262907903552504, 0.15865525393145705, 0.3820885778110474, 0.5, 0.5000000039894228, 0.5987063256829237, 0.6914624612740131, 0.8413447460685429, 0.9937903346742238, 0.9999997133484281, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0};
static const double SV_special_log_ndtr[20] = {-454.3212439563432, -53.23128515051247, -8.366065308344092, -1.8410216450092636, -0.9621028181688507, -0.6931471805599453, -0.6931471725810997, -0.5129840754094305, -0.3689464152886564, -0.17275377902344988, -0.006229025485860002, -2.866516129637636e-07, -2.081375219493206e-23, -2.762109471764517e-24, -2.03464320878273e-88, -3.6896808637213897e-90, -7.389481006885018e-161, -0.0, -0.0, -0.0};
static const double SV_i0[20] = {781672297823.9775, 2815.7166284662544, 7.3782034322254795, 1.2660658777520084, 1.022626879351597, 1.0, 1.0, 1.015686141223608, 1.0634833707413236, 1.2660658777520084, 3.289839144050123, 27.239871823604446, 2560.963353256044, 3095.9756707889824, 39513376.52006682, 48017874.1071365, 41042005854.75796, 1.48947747934199e+16, 1.0737517071310738e+42, 1.5295933476718737e+302};
static const double SV_special_i0e[20] = {0.0731459464822373, 0.1278333371634286, 0.22280243801077917, 0.46575960759364043, 0.7575806251825479, 1.0, 0.9999999900000001, 0.7910171621397194, 0.6450352704491501, 0.46575960759364043, 0.27004644161220276, 0.18354081260932836, 0.1284955220071385, 0.12718130354436347, 0.0900085888643896, 0.08955376362061344, 0.07713963269258335, 0.06327827987523534, 0.03994437929909668, 0.015081295651531358};
static const double SV_special_i1[20] = {-768532038938.957, -2670.9883037012546, -6.205834922258365, -0.565159103992485, -0.15169384000359276, 0.0, 5e-09, 0.12597910894546793, 0.2578943053908963, 0.565159103992485, 2.5167162452886984, 24.335642142450528, 2427.958312950946, 2938.4655597279148, 38507423.87486228, 46807739.533029884, 40274654313.43806, 1.4707396163259352e+16, 1.0683693903381625e+42, 1.5285003902339006e+302};
static const double SV_special_i1e[20] = {-0.07191633059864755, -0.12126268138445552, -0.18739997660305, -0.20791041534970844, -0.1123775606398388, 0.0, 4.99999995e-09, 0.09811262869736824, 0.1564208031848717, 0.20791041534970844, 0.20658464953126657, 0.16397226694454237, 0.12182203639796144, 0.12071085823848707, 0.0877171021317061, 0.08729685184320159, 0.07569737335825692, 0.062482229074442064, 0.03974415302513025, 0.015070519444716848};
static const double SP[14] = {1e-300, 1e-20, 1e-05, 0.001, 0.0199, 0.02, 0.1, 0.3, 0.5, 0.7, 0.97, 0.981, 0.999, 0.999999};
static const double SV_special_ndtri[14] = {-37.0470962993612, -9.262340089798407, -4.264890793922825, -3.0902323061678136, -2.055818646612404, -2.053748910631823, -1.2815515655446004, -0.5244005127080408, 0.0, 0.5244005127080407, 1.8807936081512506, 2.0748547343933095, 3.090232306167813, 4.753424308817087};
static const double SQ[11] = {-3.5, -2.25, -0.5, 0.1, 0.5, 1.0, 2.0, 3.7, 9.5, 12.0, 50.0};
static const double SV_polygamma1[11] = {9.620879298050347, 19.37941051186914, 8.934802200544679, 101.43329915079275, 4.934802200544679, 1.6449340668482264, 0.6449340668482264, 0.3100378576700383, 0.11099728846909904, 0.08690187287176838, 0.020201333226697125};
static const double SV_polygamma2[11] = {-0.061556821321027695, 123.89694977406016, -0.82879664423432, -2001.8614573783436, -16.82879664423432, -2.4041138063191885, -0.4041138063191886, -0.09539530872855403, -0.012307845807709338, -0.007547205368998912, -0.0004080799893375969};
static const double SV_polygamma3[11] = {194.7878595594625, 1558.4550231887144, 193.40909103400244, 60004.51287679026, 97.40909103400244, 6.493939402266829, 0.49393940226682914, 0.058279217956563614, 0.0027267288350372493, 0.001310093231070826, 1.6486398720682052e-05};
static const double SV_polygamma20[11] = {-47340.82936317666, 1.0700016187896298e+31, -487772949462609.9, -2.432902008176637e+39, -5.10216531273943e+24, -2.4329031685078615e+18, -1160331221321.7373, -2862777.377902003, -0.008174557499259622, -6.54721193671601e-05, -1.5484472745325126e-17};
static const double SS[6] = {1.5, 2.0, 3.0, 4.5, 10.0, 30.0};
static const double SV_zeta[6][11] = {{NAN, NAN, NAN, 34.0529755150756, 4.776537947554833, 2.612375348685488, 1.6123753486854884, 1.1147021940802508, 0.6664102689619015, 0.5896287331055445, 0.2842639966924222},
    {9.620879298050347, 19.37941051186914, 8.934802200544679, 101.43329915079275, 4.934802200544679, 1.6449340668482264, 0.6449340668482264, 0.3100378576700383, 0.11099728846909904, 0.08690187287176838, 0.020201333226697125},
    {0.030778410660513848, -61.94847488703008, 0.41439832211716, 1000.9307286891718, 8.41439832211716, 1.2020569031595942, 0.2020569031595943, 0.04769765436427702, 0.006153922903854669, 0.003773602684499456, 0.00020403999466879846},
    {NAN, NAN, NAN, 31623.472537667592, 22.810599146128396, 1.0547075107614543, 0.05470751076145426, 0.004589434816070683, 0.0001295970140929184, 5.5124664534443555e-05, 3.347321879612014e-07},
    {2048.03490036837, 1048593.8691560924, 2048.017450355758, 10000000000.38615, 1024.017450355758, 1.000994575127818, 0.0009945751278180853, 2.304831811932038e-06, 2.741158612998464e-10, 3.071428360112166e-11, 6.217940562858959e-17},
    {2147483648.0000105, 1.1529215046068526e+18, 2147483648.0000052, 9.999999999999983e+29, 1073741824.0000052, 1.0000000009313275, 9.313274324196682e-10, 9.000797571671219e-18, 4.90684887489325e-30, 4.6418371139547267e-33, 2.441485706300696e-51}};
static const double SV_multigammaln3[4] = {3.11012646848166, 1.596312591138855, 3.8958984821540388, 36.81285863239809};

/* got[i] against want[i]: equal infinities and NaNs, else within rtol relative (atol near 0) */
static void check_close(int line, const char *what, tensor *t, const double *want, int n, double rtol) {
    double *got = t ? test_values(t) : NULL;
    if (!got) { test_fail(__FILE__, line, "%s: no result (%s)", what, tensor_last_error() ? tensor_last_error() : "?"); return; }
    for (int i = 0; i < n; i++) {
        double a = got[i], b = want[i];
        bool ok = (a != a && b != b) || a == b || (fabs(a - b) <= rtol * fabs(b) + 1e-300);
        if (!ok) { test_fail(__FILE__, line, "%s: element %d: %.17g, expected %.17g", what, i, a, b); break; }
    }
    free(got);
}
static tensor *f64_of(const double *v, int n) { return tensor_from_data(v, 1, (const int64_t[]){n}, TENSOR_F64); }
static tensor *f32_of(const double *v, int n) { return tensor_to_dtype(f64_of(v, n), TENSOR_F32); }

#define NSX ((int)(sizeof SX / sizeof SX[0]))
TEST(special_functions_match_mpmath) {
    tensor *x = f64_of(SX, NSX);
    check_close(__LINE__, "entr", tensor_special_entr(x), SV_special_entr, NSX, 2e-15);
    check_close(__LINE__, "erfcx", tensor_special_erfcx(x), SV_special_erfcx, NSX, 2e-15);
    check_close(__LINE__, "ndtr", tensor_special_ndtr(x), SV_special_ndtr, NSX, 2e-15);
    check_close(__LINE__, "log_ndtr", tensor_special_log_ndtr(x), SV_special_log_ndtr, NSX, 2e-15);
    check_close(__LINE__, "i0", tensor_i0(x), SV_i0, NSX, 2e-15);
    check_close(__LINE__, "i0e", tensor_special_i0e(x), SV_special_i0e, NSX, 2e-15);
    check_close(__LINE__, "i1", tensor_special_i1(x), SV_special_i1, NSX, 2e-15);
    check_close(__LINE__, "i1e", tensor_special_i1e(x), SV_special_i1e, NSX, 2e-15);
    int np = (int)(sizeof SP / sizeof SP[0]);
    check_close(__LINE__, "ndtri", tensor_special_ndtri(f64_of(SP, np)), SV_special_ndtri, np, 2e-15);
    /* f32: the double formula on the same (rounded) inputs, rounded once */
    tensor *x32 = f32_of(SX, NSX), *x32d = tensor_to_dtype(x32, TENSOR_F64);
    tensor *(*fs[3])(tensor *) = {tensor_special_log_ndtr, tensor_special_i1e, tensor_special_erfcx};
    for (int k = 0; k < 3; k++) {
        tensor *got = fs[k](x32), *want = tensor_to_dtype(fs[k](x32d), TENSOR_F32);
        CHECK(got && tensor_get_dtype(got) == TENSOR_F32 && test_same_bits(got, want));
    }
    /* integers promote to f32, as PyTorch */
    tensor *ni = tensor_i0(tensor_arange(0, 3, 1, TENSOR_I64));
    CHECK(ni && tensor_get_dtype(ni) == TENSOR_F32);
    /* the edges */
    static const double pe[6] = {0, 1, -0.5, 1.5, NAN, 0.5}, we[6] = {-INFINITY, INFINITY, NAN, NAN, NAN, 0};
    check_close(__LINE__, "ndtri edges", tensor_special_ndtri(f64_of(pe, 6)), we, 6, 0);
    static const double xe[4] = {INFINITY, -INFINITY, NAN, -0.0}, ee[4] = {-INFINITY, -INFINITY, NAN, 0};
    check_close(__LINE__, "entr edges", tensor_special_entr(f64_of(xe, 4)), ee, 4, 0);
    static const double ie[4] = {INFINITY, INFINITY, NAN, 1}, ie1[4] = {INFINITY, -INFINITY, NAN, 0};
    check_close(__LINE__, "i0 edges", tensor_i0(f64_of(xe, 4)), ie, 4, 0);
    check_close(__LINE__, "i1 edges", tensor_special_i1(f64_of(xe, 4)), ie1, 4, 0);
}

#define NSQ ((int)(sizeof SQ / sizeof SQ[0]))
TEST(special_polygamma_and_zeta_match_mpmath) {
    tensor *q = f64_of(SQ, NSQ);
    check_close(__LINE__, "polygamma 1", tensor_polygamma(1, q), SV_polygamma1, NSQ, 2e-15);
    check_close(__LINE__, "polygamma 2", tensor_polygamma(2, q), SV_polygamma2, NSQ, 2e-15);
    check_close(__LINE__, "polygamma 3", tensor_polygamma(3, q), SV_polygamma3, NSQ, 2e-15);
    check_close(__LINE__, "polygamma 20", tensor_polygamma(20, q), SV_polygamma20, NSQ, 2e-15);
    double *dg = test_values(tensor_digamma(q));
    check_close(__LINE__, "polygamma 0 is digamma", tensor_polygamma(0, q), dg, NSQ, 0);
    free(dg);
    for (int k = 0; k < (int)(sizeof SS / sizeof SS[0]); k++) {
        tensor *s = tensor_full(1, (const int64_t[]){NSQ}, SS[k], TENSOR_F64);
        char what[32];
        snprintf(what, sizeof what, "zeta(%g, q)", SS[k]);
        check_close(__LINE__, what, tensor_special_zeta(s, q), SV_zeta[k], NSQ, 4e-15);
    }
    /* poles and the domain, as PyTorch: s == 1 inf, s < 1 NaN, q a non-positive integer inf */
    static const double s4[4] = {1, 0.5, 2, 3}, q4[4] = {2, 2, -2, 0}, w4[4] = {INFINITY, NAN, INFINITY, INFINITY};
    check_close(__LINE__, "zeta poles", tensor_special_zeta(f64_of(s4, 4), f64_of(q4, 4)), w4, 4, 0);
    static const double qp[3] = {0, -1, -7}, wp[3] = {INFINITY, INFINITY, INFINITY};
    check_close(__LINE__, "trigamma poles", tensor_polygamma(1, f64_of(qp, 3)), wp, 3, 0);
    /* zeta broadcasts and promotes like a binary op */
    tensor *zb = tensor_special_zeta(tensor_scalar(2, TENSOR_I64), tensor_arange(1, 4, 1, TENSOR_F32));
    CHECK(zb && tensor_get_dtype(zb) == TENSOR_F32 && tensor_numel(zb) == 3);
}

TEST(special_multigammaln_and_the_other_names) {
    static const double x[4] = {1.25, 2, 3.5, 10};
    check_close(__LINE__, "multigammaln p 3", tensor_special_multigammaln(f64_of(x, 4), 3), SV_multigammaln3, 4, 4e-15);
    double *lg = test_values(tensor_lgamma(f64_of(x, 4)));
    check_close(__LINE__, "multigammaln p 1", tensor_special_multigammaln(f64_of(x, 4), 1), lg, 4, 0);
    free(lg);
    CHECK_BAD(tensor_special_multigammaln(f64_of(x, 4), 4), "tensor_special_multigammaln"); /* 1.25 <= (4 - 1) / 2 */
    CHECK_BAD(tensor_special_multigammaln(f64_of(x, 4), 0), "tensor_special_multigammaln");
    CHECK_BAD(tensor_special_multigammaln(tensor_ones(TENSOR_SHAPE(2), TENSOR_BOOL), 1), "tensor_special_multigammaln"); /* integers: f32 (tests/test_dtype_compat.c) */
    CHECK_BAD(tensor_special_multigammaln(NULL, 1), "tensor_special_multigammaln");
    tensor *ml = tensor_special_multigammaln(tensor_set_requires_grad(f64_of(x, 4), true), 2);
    CHECK(ml && tensor_requires_grad(ml));
    /* every other name is its op, bit for bit */
    tensor *a = tensor_reshape(tensor_linspace(0.05, 0.95, 12, TENSOR_F64), TENSOR_SHAPE(3, 4)), *b = tensor_add_scalar(a, 0.5);
    tensor *pairs[][2] = {
        {tensor_special_expit(a), tensor_sigmoid(a)},       {tensor_special_exp2(a), tensor_exp2(a)},
        {tensor_special_expm1(a), tensor_expm1(a)},         {tensor_special_log1p(a), tensor_log1p(a)},
        {tensor_special_erf(a), tensor_erf(a)},             {tensor_special_erfc(a), tensor_erfc(a)},
        {tensor_special_erfinv(a), tensor_erfinv(a)},       {tensor_special_gammaln(a), tensor_lgamma(a)},
        {tensor_special_digamma(a), tensor_digamma(a)},     {tensor_special_psi(a), tensor_digamma(a)},
        {tensor_special_polygamma(2, a), tensor_polygamma(2, a)}, {tensor_special_sinc(a), tensor_sinc(a)},
        {tensor_special_round(a), tensor_round(a)},         {tensor_special_i0(a), tensor_i0(a)},
        {tensor_special_logit(a, 0.1), tensor_logit(a, 0.1)}, {tensor_special_xlogy(a, b), tensor_xlogy(a, b)},
        {tensor_special_xlog1py(a, b), tensor_xlog1py(a, b)}, {tensor_special_softmax(a, 1), tensor_softmax(a, 1)},
        {tensor_special_log_softmax(a, 0), tensor_log_softmax(a, 0)}, {tensor_special_logsumexp(a, 1, true), tensor_logsumexp(a, 1, true)},
    };
    for (int i = 0; i < (int)(sizeof pairs / sizeof pairs[0]); i++) CHECK_MSG(test_same_bits(pairs[i][0], pairs[i][1]), "alias %d differs from its op", i);
}

/* zeta differentiates in q only: -s zeta(s + 1, q); asking for d/ds is an error, as in PyTorch */
static tensor *zeta_of_q(tensor *const *in, const void *ctx) { return tensor_special_zeta((tensor *)ctx, in[0]); }
static tensor *zeta_of_qt(tensor *const *in, const void *ctx) { return tensor_special_zeta((tensor *)ctx, tensor_transpose(in[0], 0, 1)); }
void gradcheck_special_zeta(void) {
    tensor *s = tensor_from_data((const double[]){2, 3.5, 1.5, 6}, TENSOR_SHAPE(4), TENSOR_F64);
    tensor *q = test_leaf(TENSOR_SHAPE(3, 4), 0.5, 3);
    GRADCHECK(zeta_of_q, s, 1, &q);
    GRADGRADCHECK(zeta_of_q, s, 1, &q);
    tensor *qt = test_leaf(TENSOR_SHAPE(4, 3), 0.5, 3); /* transposed inside: a strided operand */
    GRADCHECK(zeta_of_qt, s, 1, &qt);
    tensor *sl = test_leaf(TENSOR_SHAPE(4), 2, 3);
    CHECK(tensor_backward(tensor_sum_all(tensor_special_zeta(sl, q))) != 0);
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "not implemented"));
    tensor_clear_error();
}

void bad_input_special_entr(void) { CHECK_BAD(tensor_special_entr(NULL), "tensor_special_entr"); }
void bad_input_special_erfcx(void) { CHECK_BAD(tensor_special_erfcx(NULL), "tensor_special_erfcx"); }
void bad_input_special_ndtr(void) { CHECK_BAD(tensor_special_ndtr(NULL), "tensor_special_ndtr"); }
void bad_input_special_log_ndtr(void) { CHECK_BAD(tensor_special_log_ndtr(NULL), "tensor_special_log_ndtr"); }
void bad_input_special_ndtri(void) { CHECK_BAD(tensor_special_ndtri(NULL), "tensor_special_ndtri"); }
void bad_input_i0(void) { CHECK_BAD(tensor_i0(NULL), "tensor_i0"); }
void bad_input_special_i0e(void) { CHECK_BAD(tensor_special_i0e(NULL), "tensor_special_i0e"); }
void bad_input_special_i1(void) { CHECK_BAD(tensor_special_i1(NULL), "tensor_special_i1"); }
void bad_input_special_i1e(void) { CHECK_BAD(tensor_special_i1e(NULL), "tensor_special_i1e"); }
void bad_input_polygamma(void) {
    CHECK_BAD(tensor_polygamma(1, NULL), "tensor_polygamma");
    CHECK_BAD(tensor_polygamma(-1, tensor_ones(TENSOR_SHAPE(2), TENSOR_F32)), "tensor_polygamma");
    CHECK_BAD(tensor_polygamma(171, tensor_ones(TENSOR_SHAPE(2), TENSOR_F32)), "tensor_polygamma");
}
void bad_input_special_zeta(void) {
    CHECK_BAD(tensor_special_zeta(NULL, tensor_ones(TENSOR_SHAPE(2), TENSOR_F32)), "tensor_special_zeta");
    CHECK_BAD(tensor_special_zeta(tensor_ones(TENSOR_SHAPE(2), TENSOR_F32), tensor_ones(TENSOR_SHAPE(3), TENSOR_F32)), "tensor_special_zeta");
}
