/* The losses with a reduction (l1_loss ... multi_margin_loss) and normalize, cosine_similarity,
   pairwise_distance, softmin: values against PyTorch 1.13 (torch.nn.functional, in float64, pasted
   here), the gradient checks the registry sweep runs (tests/test_autograd.c: gradcheck_NAME, f64
   central differences) and the bad-input cases (tests/test_registry.c: bad_input_NAME). */
#include "test.h"

static const int64_t S23[2] = {2, 3};
static tensor *f64(int nd, const int64_t *shape, const double *v) { return test_tensor(TENSOR_F64, nd, shape, v); }
/* the shared inputs of the value tests, [2, 3] */
static const double X[6] = {0.2, -1.3, 0.7, 1.5, 0.1, -0.4}, Y[6] = {0.5, -1.0, 0.7, 0.3, 0.9, 0.2};
static const double PM1[6] = {1, -1, 1, -1, 1, -1}; /* +-1 targets */
static const double W3[3] = {1, 2, 0.5};
static const tensor_reduction REDS[3] = {TENSOR_REDUCTION_NONE, TENSOR_REDUCTION_MEAN, TENSOR_REDUCTION_SUM};

/* r's none, mean and sum results against PyTorch's: none has n elements of shape none_shape. */
typedef tensor *(*loss_of)(tensor_reduction r, const void *ctx);
static void check_reductions(int line, loss_of f, const void *ctx, int nd, const int64_t *none_shape, const double *none, double mean, double sum) {
    for (int i = 0; i < 3; i++) {
        tensor *l = f(REDS[i], ctx);
        if (!l) { test_fail(__FILE__, line, "reduction %d: NULL (%s)", i, tensor_last_error() ? tensor_last_error() : "no error"); continue; }
        if (i == 0) {
            test_check_shape(__FILE__, line, l, nd, none_shape);
            test_check_values(__FILE__, line, l, none, test_numel(nd, none_shape), 1e-14, 1e-13);
        } else {
            test_check_shape(__FILE__, line, l, 0, NULL);
            test_check_values(__FILE__, line, l, i == 1 ? &mean : &sum, 1, 1e-14, 1e-13);
        }
    }
}

/* ---- the value tests ---- */

typedef struct { double k; } kctx;
static tensor *v_l1(tensor_reduction r, const void *c) { (void)c; return tensor_l1_loss(f64(2, S23, X), f64(2, S23, Y), r); }
static tensor *v_smooth(tensor_reduction r, const void *c) { return tensor_smooth_l1_loss(f64(2, S23, X), f64(2, S23, Y), r, ((const kctx *)c)->k); }
static tensor *v_huber(tensor_reduction r, const void *c) { return tensor_huber_loss(f64(2, S23, X), f64(2, S23, Y), r, ((const kctx *)c)->k); }
TEST(loss_l1_smooth_l1_huber_values) {
    static const double l1[6] = {0.29999999999999999, 0.30000000000000004, 0, 1.2, 0.80000000000000004, 0.60000000000000009};
    check_reductions(__LINE__, v_l1, NULL, 2, S23, l1, 0.53333333333333333, 3.2000000000000002);
    kctx b = {0.5}, b0 = {0};
    static const double sm[6] = {0.089999999999999997, 0.090000000000000024, 0, 0.94999999999999996, 0.55000000000000004, 0.35000000000000009};
    check_reductions(__LINE__, v_smooth, &b, 2, S23, sm, 0.33833333333333337, 2.0300000000000002);
    check_reductions(__LINE__, v_smooth, &b0, 2, S23, l1, 0.53333333333333333, 3.2000000000000002); /* beta 0: l1 */
    static const double hu[6] = {0.044999999999999998, 0.045000000000000012, 0, 0.47499999999999998, 0.27500000000000002, 0.17500000000000004};
    check_reductions(__LINE__, v_huber, &b, 2, S23, hu, 0.16916666666666669, 1.0150000000000001);
    /* broadcast target, f32 */
    tensor *l = tensor_l1_loss(test_tensor(TENSOR_F32, 2, S23, X), test_tensor(TENSOR_F32, TENSOR_SHAPE(3), Y), TENSOR_REDUCTION_NONE);
    static const double lb[6] = {0.3, 0.3, 0, 1, 1.1, 1.1};
    CHECK(l && tensor_get_dtype(l) == TENSOR_F32);
    CHECK_VALUES(l, lb, 6, 1e-6, 1e-6);
}

static const double LP[6] = {-1.0549569196419906, -2.5549569196419908, -0.55495691964199056, -0.33372960988809963, -1.7337296098880994, -2.2337296098880994};
static const double P[6] = {0.2, 0.0, 0.8, 0.5, 0.25, 0.25};
static tensor *v_kl(tensor_reduction r, const void *c) { (void)c; return tensor_kl_div(f64(2, S23, LP), f64(2, S23, P), r, false); }
static tensor *v_kl_log(tensor_reduction r, const void *c) {
    (void)c;
    return tensor_kl_div(f64(2, S23, LP), tensor_log(tensor_add_scalar(f64(2, S23, P), 0.1)), r, true);
}
TEST(loss_kl_div_values) {
    static const double kl[6] = {-0.11089619855842198, 0, 0.26545069466222471, -0.17970878533592283, 0.086858812192052215, 0.21185881219205221};
    check_reductions(__LINE__, v_kl, NULL, 2, S23, kl, 0.045593889191997389, 0.27356333515198433); /* a 0 target gives 0 */
    static const double kll[6] = {-0.044704765405183609, 0.025237182664794539, 0.40463676358574785, -0.10625760832673466, 0.23936761988629751, 0.41436761988629744};
    check_reductions(__LINE__, v_kl_log, NULL, 2, S23, kll, 0.15544113538186985, 0.93264681229121915);
}

static const double PR[6] = {0.2, 0.9, 0.5, 1.0, 0.0, 0.3}, T01[6] = {0.0, 1.0, 0.4, 1.0, 1.0, 0.5};
static tensor *v_bce(tensor_reduction r, const void *c) { return tensor_binary_cross_entropy(f64(2, S23, PR), f64(2, S23, T01), c ? f64(1, S23 + 1, W3) : NULL, r); }
TEST(loss_binary_cross_entropy_values) {
    static const double b[6] = {0.22314355131420971, 0.10536051565782628, 0.69314718055994529, 0, 100, 0.78032387413233428}; /* log 0 clamps at -100 */
    check_reductions(__LINE__, v_bce, NULL, 2, S23, b, 16.966995853610719, 101.80197512166431);
    static const double bw[6] = {0.22314355131420971, 0.21072103131565256, 0.34657359027997264, 0, 200, 0.39016193706616714};
    check_reductions(__LINE__, v_bce, W3, 2, S23, bw, 33.528433351662663, 201.17060010997599);
}

static const double CNT[6] = {0.0, 1.0, 3.0, 2.0, 5.0, 1.5};
static tensor *v_poisson(tensor_reduction r, const void *c) {
    if (c) return tensor_poisson_nll_loss(tensor_abs(f64(2, S23, X)), f64(2, S23, CNT), false, true, 1e-8, r);
    return tensor_poisson_nll_loss(f64(2, S23, X), f64(2, S23, CNT), true, false, 1e-8, r);
}
static const double VAR[6] = {0.5, 1.0, 2.0, 1e-8, 0.3, 1.5};
static tensor *v_gauss(tensor_reduction r, const void *c) {
    static const double v2[2] = {0.5, 2.0};
    if (c) return tensor_gaussian_nll_loss(f64(2, S23, X), f64(2, S23, Y), f64(TENSOR_SHAPE(2), v2), true, 1e-6, r); /* var [N]: one per row */
    return tensor_gaussian_nll_loss(f64(2, S23, X), f64(2, S23, Y), f64(2, S23, VAR), false, 1e-6, r);
}
TEST(loss_poisson_gaussian_nll_values) {
    static const double p[6] = {1.2214027581601699, 1.5725317930340126, -0.086247292529523012, 1.4816890703380645, 0.60517091807564771, 1.2703200460356392};
    check_reductions(__LINE__, v_poisson, NULL, 2, S23, p, 1.0108112155190017, 6.06486729311401);
    static const double pf[6] = {0.20000000000000001, 1.0376357278402013, 3.5341063325021116, 1.3408762550548738, 16.383772016562478, 2.0043048097322345};
    check_reductions(__LINE__, v_poisson, "full", 2, S23, pf, 4.0834491902819829, 24.500695141691899);
    static const double g[6] = {-0.25657359027997262, 0.045000000000000012, 0.34657359027997264, 719993.09224472102, 0.46468026450369881, 0.32273255405408224};
    check_reductions(__LINE__, v_gauss, NULL, 2, S23, g, 119999.00244292326, 719994.01465753955); /* var 1e-8 clamps to eps */
    static const double gf[6] = {0.66236494292470005, 0.66236494292470005, 0.57236494292469997, 1.6255121234846452, 1.4255121234846453, 1.3555121234846452};
    check_reductions(__LINE__, v_gauss, "full", 2, S23, gf, 1.0506051998713393, 6.3036311992280361);
}

static tensor *v_ranking(tensor_reduction r, const void *c) { (void)c; return tensor_margin_ranking_loss(f64(2, S23, X), f64(2, S23, Y), f64(2, S23, PM1), 0.3, r); }
static tensor *v_hinge(tensor_reduction r, const void *c) { (void)c; return tensor_hinge_embedding_loss(f64(2, S23, X), f64(2, S23, PM1), 1.0, r); }
static tensor *v_soft(tensor_reduction r, const void *c) { (void)c; return tensor_soft_margin_loss(f64(2, S23, X), f64(2, S23, PM1), r); }
TEST(loss_margin_hinge_soft_margin_values) {
    static const double m[6] = {0.59999999999999998, 0, 0.29999999999999999, 1.5, 1.1000000000000001, 0};
    check_reductions(__LINE__, v_ranking, NULL, 2, S23, m, 0.58333333333333337, 3.5);
    static const double h[6] = {0.20000000000000001, 2.2999999999999998, 0.69999999999999996, 0, 0.10000000000000001, 1.3999999999999999};
    check_reductions(__LINE__, v_hinge, NULL, 2, S23, h, 0.78333333333333333, 4.7000000000000002);
    static const double s[6] = {0.59813886938159178, 0.24100845383299216, 0.40318604888545784, 1.7014132779827524, 0.64439666007357088, 0.51301525239995249};
    check_reductions(__LINE__, v_soft, NULL, 2, S23, s, 0.6835264270927196, 4.1011585625563178);
}

static const double ML[6] = {1, 0, 1, 0, 0, 1};
static tensor *v_multilabel(tensor_reduction r, const void *c) { return tensor_multilabel_soft_margin_loss(f64(2, S23, X), f64(2, S23, ML), c ? f64(1, S23 + 1, W3) : NULL, r); }
static tensor *v_cosemb(tensor_reduction r, const void *c) {
    static const double t[2] = {1, -1};
    (void)c;
    return tensor_cosine_embedding_loss(f64(2, S23, X), f64(2, S23, Y), f64(TENSOR_SHAPE(2), t), 0.1, r);
}
static const double NEG[6] = {0.0, 0.5, 0.5, 1.0, 1.0, -1.0};
static tensor *v_triplet(tensor_reduction r, const void *c) {
    if (c) return tensor_triplet_margin_loss(f64(2, S23, X), f64(2, S23, Y), f64(2, S23, NEG), 0.5, 1, 1e-6, true, r);
    return tensor_triplet_margin_loss(f64(2, S23, X), f64(2, S23, Y), f64(2, S23, NEG), 1.0, 2, 1e-6, false, r);
}
static tensor *v_multimargin(tensor_reduction r, const void *c) {
    static const double cls[2] = {2, 0};
    tensor *t = test_tensor(TENSOR_I64, TENSOR_SHAPE(2), cls);
    if (c) return tensor_multi_margin_loss(f64(2, S23, X), t, 2, 0.7, f64(1, S23 + 1, W3), r);
    return tensor_multi_margin_loss(f64(2, S23, X), t, 1, 1.0, NULL, r);
}
TEST(loss_multilabel_cosine_triplet_multi_margin_values) {
    static const int64_t n2[1] = {2};
    static const double ml[2] = {0.41411112403334727, 1.1196083968187587}, mlw[2] = {0.4272496004967683, 1.2155714081099569};
    check_reductions(__LINE__, v_multilabel, NULL, 1, n2, ml, 0.76685976042605297, 1.5337195208521059);
    check_reductions(__LINE__, v_multilabel, W3, 1, n2, mlw, 0.8214105043033626, 1.6428210086067252);
    static const double ce[2] = {0.038364045376047762, 0.20499043676809967};
    check_reductions(__LINE__, v_cosemb, NULL, 1, n2, ce, 0.12167724107207371, 0.24335448214414743);
    static const double tr[2] = {0, 1.3704121105265885}, trs[2] = {0, 1.1000000000000001};
    check_reductions(__LINE__, v_triplet, NULL, 1, n2, tr, 0.68520605526329426, 1.3704121105265885);
    check_reductions(__LINE__, v_triplet, "swap", 1, n2, trs, 0.55000000000000004, 1.1000000000000001);
    static const double mm[2] = {0.16666666666666666, 0}, mm2[2] = {0.006666666666666668, 0};
    check_reductions(__LINE__, v_multimargin, NULL, 1, n2, mm, 0.083333333333333329, 0.16666666666666666);
    check_reductions(__LINE__, v_multimargin, W3, 1, n2, mm2, 0.003333333333333334, 0.006666666666666668);
    /* one sample: input [C], a 0-dim target, a 0-dim loss */
    tensor *l = tensor_multi_margin_loss(f64(1, S23 + 1, X), tensor_scalar(2, TENSOR_I64), 1, 1.0, NULL, TENSOR_REDUCTION_NONE);
    CHECK_SHAPE(l, 0, NULL);
    CHECK_VALUES(l, mm, 1, 1e-15, 1e-14);
}

TEST(nn_normalize_cosine_similarity_pairwise_distance_softmin_values) {
    static const double n[6] = {0.13423121104280486, -0.8725028717782316, 0.469809238649817, 0.96423651979983749, 0.064282434653322507, -0.25712973861329003};
    CHECK_VALUES(tensor_normalize(f64(2, S23, X), 2, 1, 1e-12), n, 6, 1e-15, 1e-14);
    static const double n1[6] = {0.11764705882352942, -0.92857142857142849, 0.63636363636363624, 0.88235294117647056, 0.071428571428571425, -0.36363636363636365};
    CHECK_VALUES(tensor_normalize(f64(2, S23, X), 1, 0, 1e-12), n1, 6, 1e-15, 1e-14);
    static const double cs[2] = {0.96163595462444507, 0.30499043676832494};
    CHECK_VALUES(tensor_cosine_similarity(f64(2, S23, X), f64(2, S23, Y), 1, 1e-8), cs, 2, 1e-15, 1e-14);
    static const double v3[3] = {1, 2, -1}, csb[2] = {-0.84939476774434608, 0.5511070751355519};
    CHECK_VALUES(tensor_cosine_similarity(f64(2, S23, X), f64(1, S23 + 1, v3), -1, 1e-8), csb, 2, 1e-15, 1e-14);
    static const double tiny[2] = {1e-5, 0}, one = 1; /* each is divided by its own norm first (PyTorch 1.13+) */
    CHECK_VALUES(tensor_cosine_similarity(f64(TENSOR_SHAPE(2), tiny), f64(TENSOR_SHAPE(2), tiny), 0, 1e-8), &one, 1, 1e-15, 1e-14);
    static const double pd[2] = {0.4242626544995447, 1.5620498071454059}, pd1[2] = {0.59999900000000006, 2.5999989999999999};
    CHECK_VALUES(tensor_pairwise_distance(f64(2, S23, X), f64(2, S23, Y), 2, 1e-6, false), pd, 2, 1e-15, 1e-14);
    tensor *p1 = tensor_pairwise_distance(f64(2, S23, X), f64(2, S23, Y), 1, 1e-6, true);
    CHECK_SHAPE(p1, TENSOR_SHAPE(2, 1));
    CHECK_VALUES(p1, pd1, 2, 1e-15, 1e-14);
    static const double sm[6] = {0.1642516276250878, 0.73612472431259379, 0.099623648062318326, 0.085170935958312807, 0.34538517667427998, 0.56944388736740714};
    CHECK_VALUES(tensor_softmin(f64(2, S23, X), 1), sm, 6, 1e-15, 1e-14);
}

/* ---- gradient checks (called by the registry sweep) ---- */

typedef struct { int op; tensor_reduction r; double k; bool flag; tensor *aux, *aux2; } gctx;
enum { G_L1, G_SMOOTH, G_HUBER, G_KL, G_BCE, G_POISSON, G_GAUSS, G_RANK, G_HINGE, G_SOFT, G_MULTILABEL, G_COSEMB, G_TRIPLET, G_MULTIMARGIN,
       G_NORMALIZE, G_COSSIM, G_PDIST, G_SOFTMIN };
static tensor *g_call(tensor *const *in, const void *vctx) {
    const gctx *c = (const gctx *)vctx;
    switch (c->op) {
    case G_L1: return tensor_l1_loss(in[0], in[1], c->r);
    case G_SMOOTH: return tensor_smooth_l1_loss(in[0], in[1], c->r, c->k);
    case G_HUBER: return tensor_huber_loss(in[0], in[1], c->r, c->k);
    case G_KL: return tensor_kl_div(in[0], in[1], c->r, c->flag);
    case G_BCE: return tensor_binary_cross_entropy(in[0], in[1], test_like(in[0], c->aux), c->r);
    case G_POISSON: return tensor_poisson_nll_loss(in[0], in[1], c->flag, !c->flag, 1e-8, c->r);
    case G_GAUSS: return tensor_gaussian_nll_loss(in[0], in[1], in[2], c->flag, 1e-6, c->r);
    case G_RANK: return tensor_margin_ranking_loss(in[0], in[1], test_like(in[0], c->aux), c->k, c->r);
    case G_HINGE: return tensor_hinge_embedding_loss(in[0], test_like(in[0], c->aux), c->k, c->r);
    case G_SOFT: return tensor_soft_margin_loss(in[0], test_like(in[0], c->aux), c->r);
    case G_MULTILABEL: return tensor_multilabel_soft_margin_loss(in[0], test_like(in[0], c->aux), in[1], c->r);
    case G_COSEMB: return tensor_cosine_embedding_loss(in[0], in[1], test_like(in[0], c->aux), c->k, c->r);
    case G_TRIPLET: return tensor_triplet_margin_loss(in[0], in[1], in[2], c->k, c->flag ? 1 : 2, 1e-6, c->flag, c->r);
    case G_MULTIMARGIN: return tensor_multi_margin_loss(in[0], test_like(in[0], c->aux), c->flag ? 2 : 1, c->k, in[1], c->r);
    case G_NORMALIZE: return tensor_normalize(in[0], c->k, c->flag ? 0 : 1, 1e-12);
    case G_COSSIM: return tensor_cosine_similarity(in[0], in[1], c->flag ? 0 : -1, 1e-8);
    case G_PDIST: return tensor_pairwise_distance(in[0], in[1], c->k, 1e-6, c->flag);
    case G_SOFTMIN: return tensor_softmin(in[0], c->flag ? 0 : 1);
    default: return NULL;
    }
}
/* GRADCHECK of op with inputs in[0..n) under each reduction; returns the elements compared. */
static int g_reductions(int line, gctx c, int n, tensor *const *in) {
    int total = 0;
    for (int i = 0; i < 3; i++) {
        c.r = REDS[i];
        total += test_gradcheck(__FILE__, line, g_call, &c, n, in, 1e-6, 1e-5);
    }
    return total;
}
/* a [2, 3] leaf whose elements differ from those of `other` by at least 0.2 (away from |x - y|'s kink) */
static tensor *leaf_apart(tensor *other) {
    tensor *t = test_leaf(2, S23, 0.2, 1);
    double *d = (double *)tensor_data_ptr(t), *o = (double *)tensor_data_ptr(other);
    for (int i = 0; i < 6; i++) d[i] = o[i] + (i % 2 ? -d[i] : d[i]);
    return t;
}

void gradcheck_l1_loss(void) {
    tensor *a = test_leaf(2, S23, -1, 1), *in[2] = {a, leaf_apart(a)};
    CHECK(g_reductions(__LINE__, (gctx){.op = G_L1}, 2, in) == 36);
}
void gradcheck_smooth_l1_loss(void) {
    tensor *a = test_leaf(2, S23, -1, 1), *in[2] = {a, leaf_apart(a)};
    CHECK(g_reductions(__LINE__, (gctx){.op = G_SMOOTH, .k = 0.6}, 2, in) == 36); /* both sides of beta */
    CHECK(g_reductions(__LINE__, (gctx){.op = G_SMOOTH, .k = 0}, 2, in) == 36);
}
void gradcheck_huber_loss(void) {
    tensor *a = test_leaf(2, S23, -1, 1), *in[2] = {a, leaf_apart(a)};
    CHECK(g_reductions(__LINE__, (gctx){.op = G_HUBER, .k = 0.6}, 2, in) == 36);
}
void gradcheck_kl_div(void) {
    tensor *in[2] = {test_leaf(2, S23, -2, -0.1), test_leaf(2, S23, 0.1, 1)};
    CHECK(g_reductions(__LINE__, (gctx){.op = G_KL}, 2, in) == 36);
    tensor *inl[2] = {test_leaf(2, S23, -2, -0.1), test_leaf(2, S23, -2, 0)};
    CHECK(g_reductions(__LINE__, (gctx){.op = G_KL, .flag = true}, 2, inl) == 36);
}
void gradcheck_binary_cross_entropy(void) {
    tensor *in[2] = {test_leaf(2, S23, 0.1, 0.9), test_leaf(2, S23, 0, 1)};
    CHECK(g_reductions(__LINE__, (gctx){.op = G_BCE}, 2, in) == 36);
    CHECK(g_reductions(__LINE__, (gctx){.op = G_BCE, .aux = f64(1, S23 + 1, W3)}, 2, in) == 36);
}
void gradcheck_poisson_nll_loss(void) {
    tensor *in[2] = {test_leaf(2, S23, -1, 1), test_leaf(2, S23, 0, 3)};
    CHECK(g_reductions(__LINE__, (gctx){.op = G_POISSON, .flag = true}, 2, in) == 36);
    /* input as rates, full: targets above 1 get Stirling's term (kept away from 1, its jump) */
    tensor *inf[2] = {test_leaf(2, S23, 0.5, 2), test_leaf(2, S23, 1.2, 4)};
    double *t = (double *)tensor_data_ptr(inf[1]);
    t[0] = 0.5;
    t[4] = 0.3;
    CHECK(g_reductions(__LINE__, (gctx){.op = G_POISSON, .flag = false}, 2, inf) == 36);
}
void gradcheck_gaussian_nll_loss(void) {
    tensor *in[3] = {test_leaf(2, S23, -1, 1), test_leaf(2, S23, -1, 1), test_leaf(2, S23, 0.2, 2)};
    CHECK(g_reductions(__LINE__, (gctx){.op = G_GAUSS}, 3, in) == 54);
    tensor *inv[3] = {test_leaf(2, S23, -1, 1), test_leaf(2, S23, -1, 1), test_leaf(TENSOR_SHAPE(2), 0.2, 2)}; /* var per row */
    CHECK(g_reductions(__LINE__, (gctx){.op = G_GAUSS, .flag = true}, 3, inv) == 42);
}
void gradcheck_margin_ranking_loss(void) {
    /* x1 - x2 = +-(0.5 .. 1): with margin 0.2 the hinge is active for some and not others */
    tensor *a = test_leaf(2, S23, -1, 1), *in[2] = {a, leaf_apart(a)};
    CHECK(g_reductions(__LINE__, (gctx){.op = G_RANK, .k = 0.1, .aux = f64(2, S23, PM1)}, 2, in) == 36);
}
void gradcheck_hinge_embedding_loss(void) {
    static const double x[6] = {0.3, -0.4, 1.6, 0.7, 2.5, -1.2}, t[6] = {1, -1, -1, 1, -1, 0.5};
    tensor *in[1] = {tensor_set_requires_grad(f64(2, S23, x), true)};
    CHECK(g_reductions(__LINE__, (gctx){.op = G_HINGE, .k = 1, .aux = f64(2, S23, t)}, 1, in) == 18);
}
void gradcheck_soft_margin_loss(void) {
    tensor *in[1] = {test_leaf(2, S23, -3, 3)};
    CHECK(g_reductions(__LINE__, (gctx){.op = G_SOFT, .aux = f64(2, S23, PM1)}, 1, in) == 18);
}
void gradcheck_multilabel_soft_margin_loss(void) {
    tensor *in[2] = {test_leaf(2, S23, -3, 3), test_leaf(1, S23 + 1, 0.5, 2)}; /* the weight is differentiable too */
    CHECK(g_reductions(__LINE__, (gctx){.op = G_MULTILABEL, .aux = f64(2, S23, ML)}, 2, in) == 27);
}
void gradcheck_cosine_embedding_loss(void) {
    static const double t[3] = {1, -1, -1};
    static const double a[9] = {0.3, -0.4, 1.6, 0.7, 0.5, -1.2, 1, 2, -0.5}, b[9] = {0.5, 0.2, 1, 0.6, 0.6, -1, -1, 0.3, 0.5};
    /* rows: target 1; target -1 with cos ~0.98 > margin; target -1 with cos < margin (zero loss) */
    tensor *in[2] = {tensor_set_requires_grad(f64(TENSOR_SHAPE(3, 3), a), true), tensor_set_requires_grad(f64(TENSOR_SHAPE(3, 3), b), true)};
    CHECK(g_reductions(__LINE__, (gctx){.op = G_COSEMB, .k = 0.1, .aux = f64(TENSOR_SHAPE(3), t)}, 2, in) == 54);
}
void gradcheck_triplet_margin_loss(void) {
    tensor *in[3] = {test_leaf(2, S23, -1, 1), test_leaf(2, S23, -1, 1), test_leaf(2, S23, -1, 1)};
    CHECK(g_reductions(__LINE__, (gctx){.op = G_TRIPLET, .k = 3}, 3, in) == 54); /* margin 3: every hinge active */
    CHECK(g_reductions(__LINE__, (gctx){.op = G_TRIPLET, .k = 3, .flag = true}, 3, in) == 54);
}
void gradcheck_multi_margin_loss(void) {
    static const double cls[3] = {2, 0, 1};
    static const double x[9] = {0.3, -0.4, 1.6, 0.7, 2.5, -1.2, 1.5, 2, -0.5};
    tensor *in[2] = {tensor_set_requires_grad(f64(TENSOR_SHAPE(3, 3), x), true), test_leaf(1, S23 + 1, 0.5, 2)};
    tensor *t = test_tensor(TENSOR_I64, TENSOR_SHAPE(3), cls);
    CHECK(g_reductions(__LINE__, (gctx){.op = G_MULTIMARGIN, .k = 1, .aux = t}, 2, in) == 36);
    CHECK(g_reductions(__LINE__, (gctx){.op = G_MULTIMARGIN, .k = 0.7, .flag = true, .aux = t}, 2, in) == 36);
}
void gradcheck_normalize(void) {
    tensor *in[1] = {test_leaf(2, S23, 0.2, 2)};
    CHECK(GRADCHECK(g_call, &((gctx){.op = G_NORMALIZE, .k = 2}), 1, in) == 6);
    CHECK(GRADCHECK(g_call, &((gctx){.op = G_NORMALIZE, .k = 3, .flag = true}), 1, in) == 6);
}
void gradcheck_cosine_similarity(void) {
    tensor *in[2] = {test_leaf(2, S23, -1, 1), test_leaf(2, S23, -1, 1)};
    CHECK(GRADCHECK(g_call, &((gctx){.op = G_COSSIM}), 2, in) == 12);
    tensor *inb[2] = {test_leaf(2, S23, -1, 1), test_leaf(1, S23 + 1, -1, 1)}; /* broadcast */
    CHECK(GRADCHECK(g_call, &((gctx){.op = G_COSSIM, .flag = true}), 2, inb) == 9);
}
void gradcheck_pairwise_distance(void) {
    tensor *in[2] = {test_leaf(2, S23, -1, 1), test_leaf(2, S23, -1, 1)};
    CHECK(GRADCHECK(g_call, &((gctx){.op = G_PDIST, .k = 2}), 2, in) == 12);
    CHECK(GRADCHECK(g_call, &((gctx){.op = G_PDIST, .k = 3, .flag = true}), 2, in) == 12);
}
void gradcheck_softmin(void) {
    tensor *in[1] = {test_leaf(2, S23, -2, 2)};
    CHECK(GRADCHECK(g_call, &((gctx){.op = G_SOFTMIN}), 1, in) == 6);
    CHECK(GRADCHECK(g_call, &((gctx){.op = G_SOFTMIN, .flag = true}), 1, in) == 6);
}

/* ---- bad inputs (the registry's sweep) ---- */

#define BAD_REDUCTION ((tensor_reduction)7)
static tensor *fa(void) { return tensor_zeros(2, S23, TENSOR_F32); }
static tensor *ia(void) { return tensor_zeros(2, S23, TENSOR_I64); }
static tensor *ba(void) { return tensor_zeros(2, S23, TENSOR_BOOL); }

void bad_input_l1_loss(void) {
    const char *fn = "tensor_l1_loss";
    CHECK_BAD(tensor_l1_loss(NULL, fa(), TENSOR_REDUCTION_MEAN), fn);
    CHECK_BAD(tensor_l1_loss(fa(), NULL, TENSOR_REDUCTION_MEAN), fn);
    CHECK_BAD(tensor_l1_loss(fa(), fa(), BAD_REDUCTION), fn);
    CHECK_BAD(tensor_l1_loss(fa(), tensor_zeros(TENSOR_SHAPE(4), TENSOR_F32), TENSOR_REDUCTION_MEAN), fn);
    CHECK_BAD(tensor_l1_loss(ia(), ia(), TENSOR_REDUCTION_MEAN), fn); /* PyTorch's mean refuses integers (their sum: tests/test_dtype_compat.c) */
    CHECK_BAD(tensor_l1_loss(ba(), ba(), TENSOR_REDUCTION_SUM), fn);
}
void bad_input_smooth_l1_loss(void) {
    const char *fn = "tensor_smooth_l1_loss";
    CHECK_BAD(tensor_smooth_l1_loss(NULL, fa(), TENSOR_REDUCTION_MEAN, 1), fn);
    CHECK_BAD(tensor_smooth_l1_loss(fa(), fa(), TENSOR_REDUCTION_MEAN, -1), fn);
    CHECK_BAD(tensor_smooth_l1_loss(fa(), fa(), BAD_REDUCTION, 1), fn);
}
void bad_input_huber_loss(void) {
    const char *fn = "tensor_huber_loss";
    CHECK_BAD(tensor_huber_loss(fa(), NULL, TENSOR_REDUCTION_MEAN, 1), fn);
    CHECK_BAD(tensor_huber_loss(fa(), fa(), TENSOR_REDUCTION_MEAN, 0), fn);
    CHECK_BAD(tensor_huber_loss(ia(), ia(), TENSOR_REDUCTION_MEAN, 1), fn);
}
void bad_input_kl_div(void) {
    const char *fn = "tensor_kl_div";
    CHECK_BAD(tensor_kl_div(NULL, fa(), TENSOR_REDUCTION_MEAN, false), fn);
    CHECK_BAD(tensor_kl_div(fa(), tensor_zeros(TENSOR_SHAPE(2), TENSOR_F32), TENSOR_REDUCTION_MEAN, false), fn);
    CHECK_BAD(tensor_kl_div(fa(), fa(), BAD_REDUCTION, true), fn);
}
void bad_input_binary_cross_entropy(void) {
    const char *fn = "tensor_binary_cross_entropy";
    CHECK_BAD(tensor_binary_cross_entropy(NULL, fa(), NULL, TENSOR_REDUCTION_MEAN), fn);
    CHECK_BAD(tensor_binary_cross_entropy(fa(), tensor_zeros(TENSOR_SHAPE(3), TENSOR_F32), NULL, TENSOR_REDUCTION_MEAN), fn); /* same shape */
    CHECK_BAD(tensor_binary_cross_entropy(fa(), fa(), tensor_zeros(TENSOR_SHAPE(2), TENSOR_F32), TENSOR_REDUCTION_MEAN), fn);
    CHECK_BAD(tensor_binary_cross_entropy(tensor_full(2, S23, 1.5, TENSOR_F32), fa(), NULL, TENSOR_REDUCTION_MEAN), fn); /* outside [0, 1] */
    CHECK_BAD(tensor_binary_cross_entropy(fa(), fa(), NULL, BAD_REDUCTION), fn);
}
void bad_input_poisson_nll_loss(void) {
    const char *fn = "tensor_poisson_nll_loss";
    CHECK_BAD(tensor_poisson_nll_loss(fa(), NULL, true, false, 1e-8, TENSOR_REDUCTION_MEAN), fn);
    CHECK_BAD(tensor_poisson_nll_loss(ba(), fa(), false, false, 1e-8, TENSOR_REDUCTION_MEAN), fn); /* bool input - float (integers: tests/test_dtype_compat.c) */
    CHECK_BAD(tensor_poisson_nll_loss(fa(), fa(), true, false, 1e-8, BAD_REDUCTION), fn);
}
void bad_input_gaussian_nll_loss(void) {
    const char *fn = "tensor_gaussian_nll_loss";
    CHECK_BAD(tensor_gaussian_nll_loss(fa(), fa(), NULL, false, 1e-6, TENSOR_REDUCTION_MEAN), fn);
    CHECK_BAD(tensor_gaussian_nll_loss(fa(), fa(), tensor_ones(TENSOR_SHAPE(3), TENSOR_F32), false, 1e-6, TENSOR_REDUCTION_MEAN), fn); /* wrong size */
    CHECK_BAD(tensor_gaussian_nll_loss(fa(), fa(), tensor_full(2, S23, -1, TENSOR_F32), false, 1e-6, TENSOR_REDUCTION_MEAN), fn); /* negative */
    CHECK_BAD(tensor_gaussian_nll_loss(fa(), fa(), fa(), false, 1e-6, BAD_REDUCTION), fn);
}
void bad_input_margin_ranking_loss(void) {
    const char *fn = "tensor_margin_ranking_loss";
    CHECK_BAD(tensor_margin_ranking_loss(fa(), fa(), NULL, 0, TENSOR_REDUCTION_MEAN), fn);
    CHECK_BAD(tensor_margin_ranking_loss(fa(), fa(), tensor_ones(TENSOR_SHAPE(3), TENSOR_F32), 0, TENSOR_REDUCTION_MEAN), fn); /* ranks differ */
    CHECK_BAD(tensor_margin_ranking_loss(ba(), ba(), ba(), 0, TENSOR_REDUCTION_MEAN), fn);
}
void bad_input_hinge_embedding_loss(void) {
    const char *fn = "tensor_hinge_embedding_loss";
    CHECK_BAD(tensor_hinge_embedding_loss(NULL, fa(), 1, TENSOR_REDUCTION_MEAN), fn);
    CHECK_BAD(tensor_hinge_embedding_loss(fa(), fa(), 1, BAD_REDUCTION), fn);
}
void bad_input_soft_margin_loss(void) {
    const char *fn = "tensor_soft_margin_loss";
    CHECK_BAD(tensor_soft_margin_loss(fa(), NULL, TENSOR_REDUCTION_MEAN), fn);
    CHECK_BAD(tensor_soft_margin_loss(ba(), ia(), TENSOR_REDUCTION_MEAN), fn);
}
void bad_input_multilabel_soft_margin_loss(void) {
    const char *fn = "tensor_multilabel_soft_margin_loss";
    CHECK_BAD(tensor_multilabel_soft_margin_loss(NULL, fa(), NULL, TENSOR_REDUCTION_MEAN), fn);
    CHECK_BAD(tensor_multilabel_soft_margin_loss(tensor_scalar(1, TENSOR_F32), tensor_scalar(1, TENSOR_F32), NULL, TENSOR_REDUCTION_MEAN), fn);
    CHECK_BAD(tensor_multilabel_soft_margin_loss(fa(), fa(), NULL, BAD_REDUCTION), fn);
}
void bad_input_cosine_embedding_loss(void) {
    const char *fn = "tensor_cosine_embedding_loss";
    CHECK_BAD(tensor_cosine_embedding_loss(fa(), NULL, fa(), 0, TENSOR_REDUCTION_MEAN), fn);
    CHECK_BAD(tensor_cosine_embedding_loss(fa(), fa(), fa(), 0, TENSOR_REDUCTION_MEAN), fn); /* a 2-D target */
    CHECK_BAD(tensor_cosine_embedding_loss(fa(), fa(), tensor_scalar(1, TENSOR_F32), 0, TENSOR_REDUCTION_MEAN), fn); /* 0-D target, 2-D inputs */
}
void bad_input_triplet_margin_loss(void) {
    const char *fn = "tensor_triplet_margin_loss";
    CHECK_BAD(tensor_triplet_margin_loss(fa(), fa(), NULL, 1, 2, 1e-6, false, TENSOR_REDUCTION_MEAN), fn);
    CHECK_BAD(tensor_triplet_margin_loss(fa(), fa(), tensor_zeros(TENSOR_SHAPE(3), TENSOR_F32), 1, 2, 1e-6, false, TENSOR_REDUCTION_MEAN), fn);
    CHECK_BAD(tensor_triplet_margin_loss(fa(), fa(), fa(), 1, 2, 1e-6, false, BAD_REDUCTION), fn);
}
void bad_input_multi_margin_loss(void) {
    const char *fn = "tensor_multi_margin_loss";
    tensor *t = tensor_zeros(TENSOR_SHAPE(2), TENSOR_I64);
    CHECK_BAD(tensor_multi_margin_loss(fa(), NULL, 1, 1, NULL, TENSOR_REDUCTION_MEAN), fn);
    CHECK_BAD(tensor_multi_margin_loss(fa(), t, 3, 1, NULL, TENSOR_REDUCTION_MEAN), fn); /* p 1 or 2 */
    CHECK_BAD(tensor_multi_margin_loss(fa(), tensor_zeros(TENSOR_SHAPE(2), TENSOR_F32), 1, 1, NULL, TENSOR_REDUCTION_MEAN), fn);
    CHECK_BAD(tensor_multi_margin_loss(fa(), tensor_zeros(TENSOR_SHAPE(3), TENSOR_I64), 1, 1, NULL, TENSOR_REDUCTION_MEAN), fn);
    CHECK_BAD(tensor_multi_margin_loss(fa(), t, 1, 1, tensor_ones(TENSOR_SHAPE(2), TENSOR_F32), TENSOR_REDUCTION_MEAN), fn);
    CHECK_BAD(tensor_multi_margin_loss(ia(), t, 1, 1, NULL, TENSOR_REDUCTION_MEAN), fn);
    CHECK_BAD(tensor_multi_margin_loss(fa(), t, 1, 1, NULL, BAD_REDUCTION), fn);
    /* a class index out of range is refused (by the gather it goes through) */
    tensor_clear_error();
    CHECK(tensor_multi_margin_loss(fa(), tensor_full(TENSOR_SHAPE(2), 3, TENSOR_I64), 1, 1, NULL, TENSOR_REDUCTION_MEAN) == NULL && tensor_last_error());
    tensor_clear_error();
}
void bad_input_normalize(void) {
    const char *fn = "tensor_normalize";
    CHECK_BAD(tensor_normalize(NULL, 2, 1, 1e-12), fn);
    CHECK_BAD(tensor_normalize(ia(), 2, 1, 1e-12), fn);
    CHECK_BAD(tensor_normalize(fa(), 2, 5, 1e-12), "tensor_norm"); /* the dim, checked by the norm */
}
void bad_input_cosine_similarity(void) {
    const char *fn = "tensor_cosine_similarity";
    CHECK_BAD(tensor_cosine_similarity(NULL, fa(), 1, 1e-8), fn);
    CHECK_BAD(tensor_cosine_similarity(fa(), tensor_zeros(TENSOR_SHAPE(4), TENSOR_F32), 1, 1e-8), fn);
    CHECK_BAD(tensor_cosine_similarity(fa(), fa(), 2, 1e-8), fn);
}
void bad_input_pairwise_distance(void) {
    const char *fn = "tensor_pairwise_distance";
    CHECK_BAD(tensor_pairwise_distance(fa(), NULL, 2, 1e-6, false), fn);
    CHECK_BAD(tensor_pairwise_distance(ba(), ba(), 2, 1e-6, false), fn);
}
void bad_input_softmin(void) {
    CHECK_BAD(tensor_softmin(NULL, 0), "tensor_softmin");
    CHECK_BAD(tensor_softmin(fa(), 2), "tensor_softmax"); /* the dim, checked by the softmax */
}

/* An integer operand of cosine_similarity beside a floating one is converted to the common dtype;
   two integer ones are refused, as PyTorch's ("expected common dtype to be floating point"). */
TEST(nn_cosine_similarity_of_integers) {
    static const double a[3] = {1, 2, 3}, b[3] = {3, 2, 1}, want = 10.0 / 14;
    tensor *r = tensor_cosine_similarity(test_tensor(TENSOR_I64, TENSOR_SHAPE(3), a), test_tensor(TENSOR_F32, TENSOR_SHAPE(3), b), 0, 1e-8);
    CHECK(r && tensor_get_dtype(r) == TENSOR_F32);
    CHECK_VALUES(r, &want, 1, 1e-6, 1e-6);
    CHECK_BAD(tensor_cosine_similarity(test_tensor(TENSOR_I64, TENSOR_SHAPE(3), a), test_tensor(TENSOR_I32, TENSOR_SHAPE(3), b), 0, 1e-8), "tensor_cosine_similarity");
}

/* Float targets that are not soft targets of the input's shape are usually class indices in the
   wrong dtype: the message says which dtypes hold class indices (issue 24). */
TEST(loss_class_targets_of_float_dtype_say_int64_or_int32) {
    tensor *x = tensor_randn(TENSOR_SHAPE(4, 3), TENSOR_F32), *lp = tensor_log_softmax(x, 1);
    tensor *t = tensor_arange(0, 4, 1, TENSOR_F32), *tx = tensor_zeros(TENSOR_SHAPE(4, 3, 2), TENSOR_F32), *u = tensor_zeros(TENSOR_SHAPE(4, 3), TENSOR_I64);
    tensor *r[5];
    const char *fn[5] = {"tensor_cross_entropy", "tensor_cross_entropy_ex", "tensor_nll_loss", "tensor_nll_loss_ex", "tensor_cross_entropy"};
    for (int k = 0; k < 5; k++) {
        tensor_clear_error();
        r[k] = k == 0 ? tensor_cross_entropy(x, t) : k == 1 ? tensor_cross_entropy_ex(x, t, NULL, -100, TENSOR_REDUCTION_MEAN, 0)
             : k == 2 ? tensor_nll_loss(lp, t) : k == 3 ? tensor_nll_loss_ex(lp, t, NULL, -100, TENSOR_REDUCTION_MEAN) : tensor_cross_entropy(x, tx);
        const char *e = tensor_last_error();
        CHECK_MSG(!r[k] && e && strstr(e, fn[k]) && strstr(e, "int64 or int32"), "case %d: %s", k, e ? e : "no error");
        if (k != 2 && k != 3) CHECK_MSG(e && strstr(e, "input's shape [4, 3]"), "case %d: %s", k, e ? e : "no error");
    }
    /* integer targets of the input's shape are not soft targets either */
    tensor_clear_error();
    CHECK(!tensor_cross_entropy(x, u) && tensor_last_error() && strstr(tensor_last_error(), "do not match"));
    tensor_clear_error();
    tensor_free(x); tensor_free(lp); tensor_free(t); tensor_free(tx); tensor_free(u);
}
