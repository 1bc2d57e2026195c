/* tests/test_dtype_compat.c: the dtypes the pooling, convolution, distance and loss functions,
   the dropouts in evaluation and a few others accept, as PyTorch 1.13 does on the CPU, table-driven:
   for each op and each integer dtype (and f32), whether the call succeeds, the result's dtype
   (the input's, or the default float dtype f32 where PyTorch's formula meets a float scalar or a
   floating function), and its values against the same op run on the inputs converted to f64
   (integer averages truncated toward zero, as PyTorch's int64 pooling divides). A refusal must
   name the function. Then the shapes PyTorch accepts: norms of empty inputs (batch_norm of a 1-D
   [0]), multi_margin_loss with input [C] and target [1], feature dropouts in evaluation on 0-d and
   1-d inputs. */
#include "test.h"

/* ---- the table ---- */
typedef tensor *(*dc_run)(tensor *const *in);
enum { DC_SAME, DC_F32, DC_INT64 }; /* the result's dtype: the input's, f32, or int64 (an integer sum) */
#define DC_I32 (1u << TENSOR_I32)
#define DC_I64 (1u << TENSOR_I64)
#define DC_U8 (1u << TENSOR_U8)
#define DC_BOOL (1u << TENSOR_BOOL)
#define DC_INTS (DC_I32 | DC_I64 | DC_U8)
#define DC_ALL (DC_INTS | DC_BOOL)
typedef struct {
    const char *name, *fn; /* fn: the function a refusal names */
    dc_run run;
    int n_in;
    int nd[3];
    int64_t shape[3][5];
    const char *kinds; /* per input: v values 1..5, b values 6..10, n values -4..4, s targets +-1, p probabilities */
    unsigned accepts;  /* the non-floating dtypes accepted (floating ones always are) */
    int result;        /* DC_SAME, DC_F32 or DC_INT64 for an accepted non-floating input */
    unsigned values;   /* the accepted dtypes whose values are compared (u8 arithmetic wraps where PyTorch's does) */
    bool trunc;        /* an integer result is the float result truncated toward zero */
    bool logical;      /* a bool result is the float result != 0 */
} dc_case;

static tensor *dc_avg_pool1d(tensor *const *a) { return tensor_avg_pool1d(a[0], 3, 2, 1, true, false); }
static tensor *dc_avg_pool1d_pad(tensor *const *a) { return tensor_avg_pool1d(a[0], 2, 1, 1, false, true); }
static tensor *dc_avg_pool2d(tensor *const *a) { return tensor_avg_pool2d(a[0], 3, 2, 1); }
static tensor *dc_max_pool1d(tensor *const *a) { return tensor_max_pool1d(a[0], 2, 0, 0, 1, false, NULL); }
static tensor *dc_max_pool2d(tensor *const *a) { return tensor_max_pool2d(a[0], 2, 0, 0); }
static tensor *dc_max_pool2d_wi(tensor *const *a) { return tensor_max_pool2d_with_indices(a[0], 2, 0, 0, 1, false, NULL); }
static tensor *dc_adaptive_avg_pool1d(tensor *const *a) { return tensor_adaptive_avg_pool1d(a[0], 2); }
static tensor *dc_adaptive_avg_pool2d(tensor *const *a) { return tensor_adaptive_avg_pool2d(a[0], 2, 2); }
static tensor *dc_adaptive_max_pool2d(tensor *const *a) { return tensor_adaptive_max_pool2d(a[0], 2, 2, NULL); }
static tensor *dc_conv1d(tensor *const *a) { return tensor_conv1d(a[0], a[1], NULL, 1, 1, 1, 1); }
static tensor *dc_conv2d(tensor *const *a) { return tensor_conv2d(a[0], a[1], NULL, 1, 0, 1, 1); }
static tensor *dc_conv3d(tensor *const *a) { return tensor_conv3d(a[0], a[1], NULL, 1, 0, 1, 1); }
static tensor *dc_conv_transpose1d(tensor *const *a) { return tensor_conv_transpose1d(a[0], a[1], a[2], 2, 1, 1, 1, 1); }
static tensor *dc_conv_transpose2d(tensor *const *a) { return tensor_conv_transpose2d(a[0], a[1], a[2], 2, 0, 0, 1, 1); }
static tensor *dc_pairwise_distance(tensor *const *a) { return tensor_pairwise_distance(a[0], a[1], 2, 1e-6, false); }
static tensor *dc_pairwise_distance_p1(tensor *const *a) { return tensor_pairwise_distance(a[0], a[1], 1, 0.5, true); }
static tensor *dc_cdist(tensor *const *a) { return tensor_cdist(a[0], a[1], 2); }
static tensor *dc_pdist(tensor *const *a) { return tensor_pdist(a[0], 2); }
static tensor *dc_dist(tensor *const *a) { return tensor_dist(a[0], a[1], 2); }
static tensor *dc_cosine_similarity(tensor *const *a) { return tensor_cosine_similarity(a[0], a[1], 1, 1e-8); }
static tensor *dc_triplet(tensor *const *a) { return tensor_triplet_margin_loss(a[0], a[1], a[2], 1, 2, 1e-6, true, TENSOR_REDUCTION_MEAN); }
static tensor *dc_cosine_embedding(tensor *const *a) { return tensor_cosine_embedding_loss(a[0], a[1], a[2], 0.25, TENSOR_REDUCTION_NONE); }
static tensor *dc_margin_ranking(tensor *const *a) { return tensor_margin_ranking_loss(a[0], a[1], a[2], 0, TENSOR_REDUCTION_NONE); }
static tensor *dc_poisson_log(tensor *const *a) { return tensor_poisson_nll_loss(a[0], a[1], true, false, 1e-8, TENSOR_REDUCTION_NONE); }
static tensor *dc_poisson_full(tensor *const *a) { return tensor_poisson_nll_loss(a[0], a[1], false, true, 1, TENSOR_REDUCTION_MEAN); }
static tensor *dc_hinge(tensor *const *a) { return tensor_hinge_embedding_loss(a[0], a[1], 3, TENSOR_REDUCTION_NONE); }
static tensor *dc_soft_margin(tensor *const *a) { return tensor_soft_margin_loss(a[0], a[1], TENSOR_REDUCTION_SUM); }
static tensor *dc_kl_div(tensor *const *a) { return tensor_kl_div(a[0], a[1], TENSOR_REDUCTION_NONE, false); }
static tensor *dc_kl_div_log(tensor *const *a) { return tensor_kl_div(a[0], a[1], TENSOR_REDUCTION_MEAN, true); }
static tensor *dc_mse(tensor *const *a) { return tensor_mse_loss(a[0], a[1]); }
static tensor *dc_l1(tensor *const *a) { return tensor_l1_loss(a[0], a[1], TENSOR_REDUCTION_MEAN); }
static tensor *dc_l1_none(tensor *const *a) { return tensor_l1_loss(a[0], a[1], TENSOR_REDUCTION_NONE); }
static tensor *dc_l1_sum(tensor *const *a) { return tensor_l1_loss(a[0], a[1], TENSOR_REDUCTION_SUM); }
static tensor *dc_smooth_l1(tensor *const *a) { return tensor_smooth_l1_loss(a[0], a[1], TENSOR_REDUCTION_MEAN, 1); }
static tensor *dc_huber(tensor *const *a) { return tensor_huber_loss(a[0], a[1], TENSOR_REDUCTION_MEAN, 1); }
static tensor *dc_bce(tensor *const *a) { return tensor_binary_cross_entropy(a[0], a[1], NULL, TENSOR_REDUCTION_MEAN); }
static tensor *dc_bce_logits(tensor *const *a) { return tensor_binary_cross_entropy_with_logits(a[0], a[1]); }
static tensor *dc_multilabel_soft_margin(tensor *const *a) { return tensor_multilabel_soft_margin_loss(a[0], a[1], NULL, TENSOR_REDUCTION_MEAN); }
static tensor *dc_gaussian_nll(tensor *const *a) { return tensor_gaussian_nll_loss(a[0], a[1], a[2], false, 1e-6, TENSOR_REDUCTION_MEAN); }
static tensor *dc_multigammaln(tensor *const *a) { return tensor_special_multigammaln(a[0], 3); }
static tensor *dc_mvlgamma(tensor *const *a) { return tensor_mvlgamma(a[0], 2); }
static tensor *dc_addr(tensor *const *a) { return tensor_addr(a[0], a[1], a[2], 1, 1); }
static tensor *dc_addr_beta0(tensor *const *a) { return tensor_addr(a[0], a[1], a[2], 0, 2); }
static tensor *dc_dropout(tensor *const *a) { return tensor_dropout(a[0], 0.5, false); }
static tensor *dc_dropout1d(tensor *const *a) { return tensor_dropout1d(a[0], 0.5, false); }
static tensor *dc_dropout2d(tensor *const *a) { return tensor_dropout2d(a[0], 0.5, false); }
static tensor *dc_alpha_dropout(tensor *const *a) { return tensor_alpha_dropout(a[0], 0.5, false); }
static tensor *dc_feature_alpha_dropout(tensor *const *a) { return tensor_feature_alpha_dropout(a[0], 0.5, false); }

static const dc_case dc_cases[] = {
    /* pooling: PyTorch's CPU avg_pool1d/2d also take int64 (sum in int64, divided with truncation); max and adaptive pools floating only */
    {"avg_pool1d", "tensor_avg_pool1d", dc_avg_pool1d, 1, {3}, {{2, 2, 7}}, "n", DC_I64, DC_SAME, DC_I64, true, false},
    {"avg_pool1d_pad", "tensor_avg_pool1d", dc_avg_pool1d_pad, 1, {2}, {{2, 5}}, "n", DC_I64, DC_SAME, DC_I64, true, false},
    {"avg_pool2d", "tensor_avg_pool2d", dc_avg_pool2d, 1, {4}, {{1, 2, 5, 5}}, "n", DC_I64, DC_SAME, DC_I64, true, false},
    {"max_pool1d", "tensor_max_pool1d", dc_max_pool1d, 1, {3}, {{1, 2, 6}}, "v", 0, DC_SAME, 0, false, false},
    {"max_pool2d", "tensor_max_pool2d", dc_max_pool2d, 1, {4}, {{1, 2, 4, 4}}, "v", 0, DC_SAME, 0, false, false},
    {"max_pool2d_with_indices", "tensor_max_pool2d_with_indices", dc_max_pool2d_wi, 1, {4}, {{1, 2, 4, 4}}, "v", 0, DC_SAME, 0, false, false},
    {"adaptive_avg_pool1d", "tensor_adaptive_avg_pool1d", dc_adaptive_avg_pool1d, 1, {3}, {{1, 2, 6}}, "v", 0, DC_SAME, 0, false, false},
    {"adaptive_avg_pool2d", "tensor_adaptive_avg_pool2d", dc_adaptive_avg_pool2d, 1, {4}, {{1, 2, 4, 4}}, "v", 0, DC_SAME, 0, false, false},
    {"adaptive_max_pool2d", "tensor_adaptive_max_pool2d", dc_adaptive_max_pool2d, 1, {4}, {{1, 2, 4, 4}}, "v", 0, DC_SAME, 0, false, false},
    /* convolutions: slow_conv2d/3d take every integer dtype, slow_conv_transpose2d int64 only */
    {"conv1d", "tensor_conv1d", dc_conv1d, 2, {3, 3}, {{1, 2, 5}, {2, 2, 2}}, "vv", DC_INTS, DC_SAME, DC_INTS, false, false},
    {"conv2d", "tensor_conv2d", dc_conv2d, 2, {4, 4}, {{1, 2, 3, 3}, {2, 2, 2, 2}}, "vv", DC_INTS, DC_SAME, DC_INTS, false, false},
    {"conv3d", "tensor_conv3d", dc_conv3d, 2, {5, 5}, {{1, 1, 3, 3, 3}, {2, 1, 2, 2, 2}}, "vv", DC_INTS, DC_SAME, DC_INTS, false, false},
    {"conv_transpose1d", "tensor_conv_transpose1d", dc_conv_transpose1d, 3, {3, 3, 1}, {{2, 2, 4}, {2, 3, 3}, {3}}, "nnn", DC_I64, DC_SAME, DC_I64, false, false},
    {"conv_transpose2d", "tensor_conv_transpose2d", dc_conv_transpose2d, 3, {4, 4, 1}, {{1, 2, 3, 3}, {2, 2, 2, 2}, {2}}, "nnn", DC_I64, DC_SAME, DC_I64, false, false},
    /* distances: pairwise_distance is norm(x1 - x2 + eps) (the + eps makes it f32; bool - bool is refused); the others floating only */
    {"pairwise_distance", "tensor_pairwise_distance", dc_pairwise_distance, 2, {2, 2}, {{3, 4}, {3, 4}}, "bv", DC_INTS, DC_F32, DC_INTS, false, false},
    {"pairwise_distance_p1", "tensor_pairwise_distance", dc_pairwise_distance_p1, 2, {2, 1}, {{3, 4}, {4}}, "bv", DC_INTS, DC_F32, DC_INTS, false, false},
    {"cdist", "tensor_cdist", dc_cdist, 2, {2, 2}, {{3, 4}, {2, 4}}, "vv", 0, DC_F32, 0, false, false},
    {"pdist", "tensor_pdist", dc_pdist, 1, {2}, {{3, 4}}, "v", 0, DC_F32, 0, false, false},
    {"dist", "tensor_dist", dc_dist, 2, {2, 2}, {{3, 4}, {3, 4}}, "bv", 0, DC_F32, 0, false, false},
    {"cosine_similarity", "tensor_cosine_similarity", dc_cosine_similarity, 2, {2, 2}, {{3, 4}, {3, 4}}, "vv", 0, DC_F32, 0, false, false},
    /* losses whose formula reaches a float (a float scalar, exp, log, a division): integers give f32 */
    {"triplet_margin_loss", "tensor_triplet_margin_loss", dc_triplet, 3, {2, 2, 2}, {{3, 4}, {3, 4}, {3, 4}}, "bvv", DC_INTS, DC_F32, DC_I32 | DC_I64, false, false},
    {"cosine_embedding_loss", "tensor_cosine_embedding_loss", dc_cosine_embedding, 3, {2, 2, 1}, {{4, 3}, {4, 3}, {4}}, "vvs", DC_ALL, DC_F32, DC_I32 | DC_I64 | DC_BOOL, false, false},
    {"margin_ranking_loss", "tensor_margin_ranking_loss", dc_margin_ranking, 3, {1, 1, 1}, {{5}, {5}, {5}}, "nvs", DC_INTS, DC_F32, DC_I32 | DC_I64, false, false},
    {"poisson_nll_loss_log", "tensor_poisson_nll_loss", dc_poisson_log, 2, {2, 2}, {{3, 4}, {3, 4}}, "vv", DC_INTS, DC_F32, DC_INTS, false, false},
    {"poisson_nll_loss_full", "tensor_poisson_nll_loss", dc_poisson_full, 2, {2, 2}, {{3, 4}, {3, 4}}, "vv", DC_INTS, DC_F32, DC_INTS, false, false},
    {"hinge_embedding_loss", "tensor_hinge_embedding_loss", dc_hinge, 2, {2, 2}, {{3, 4}, {3, 4}}, "vs", DC_INTS, DC_F32, DC_I32 | DC_I64, false, false},
    {"soft_margin_loss", "tensor_soft_margin_loss", dc_soft_margin, 2, {2, 2}, {{3, 4}, {3, 4}}, "vs", DC_INTS, DC_F32, DC_I32 | DC_I64, false, false},
    {"kl_div", "tensor_kl_div", dc_kl_div, 2, {2, 2}, {{3, 4}, {3, 4}}, "nv", DC_INTS, DC_F32, DC_I32 | DC_I64, false, false},
    {"kl_div_log_target", "tensor_kl_div", dc_kl_div_log, 2, {2, 2}, {{3, 4}, {3, 4}}, "vn", DC_INTS, DC_F32, DC_I32 | DC_I64, false, false},
    /* losses of floating kernels (or of a mean of the integer loss, which PyTorch refuses) */
    {"mse_loss", "tensor_mse_loss", dc_mse, 2, {2, 2}, {{3, 4}, {3, 4}}, "vv", 0, DC_F32, 0, false, false},
    {"l1_loss", "tensor_l1_loss", dc_l1, 2, {2, 2}, {{3, 4}, {3, 4}}, "vv", 0, DC_F32, 0, false, false},
    /* l1_loss is |input - target| reduced: integer losses, summed in int64 (bool - bool refused) */
    {"l1_loss_none", "tensor_l1_loss", dc_l1_none, 2, {2, 2}, {{3, 4}, {3, 4}}, "nv", DC_INTS, DC_SAME, DC_I32 | DC_I64, false, false},
    {"l1_loss_sum", "tensor_l1_loss", dc_l1_sum, 2, {2, 1}, {{3, 4}, {4}}, "nv", DC_INTS, DC_INT64, DC_I32 | DC_I64, false, false},
    {"smooth_l1_loss", "tensor_smooth_l1_loss", dc_smooth_l1, 2, {2, 2}, {{3, 4}, {3, 4}}, "vv", 0, DC_F32, 0, false, false},
    {"huber_loss", "tensor_huber_loss", dc_huber, 2, {2, 2}, {{3, 4}, {3, 4}}, "vv", 0, DC_F32, 0, false, false},
    {"binary_cross_entropy", "tensor_binary_cross_entropy", dc_bce, 2, {2, 2}, {{3, 4}, {3, 4}}, "pp", 0, DC_F32, 0, false, false},
    {"binary_cross_entropy_with_logits", "tensor_binary_cross_entropy_with_logits", dc_bce_logits, 2, {2, 2}, {{3, 4}, {3, 4}}, "vv", 0, DC_F32, 0, false, false},
    {"multilabel_soft_margin_loss", "tensor_multilabel_soft_margin_loss", dc_multilabel_soft_margin, 2, {2, 2}, {{3, 4}, {3, 4}}, "vv", 0, DC_F32, 0, false, false},
    {"gaussian_nll_loss", "tensor_gaussian_nll_loss", dc_gaussian_nll, 3, {2, 2, 2}, {{3, 4}, {3, 4}, {3, 4}}, "vvv", 0, DC_F32, 0, false, false},
    /* mvlgamma: integers promoted to the default float dtype, bool refused */
    {"special_multigammaln", "tensor_special_multigammaln", dc_multigammaln, 1, {2}, {{3, 4}}, "b", DC_INTS, DC_F32, DC_INTS, false, false},
    {"mvlgamma", "tensor_mvlgamma", dc_mvlgamma, 1, {2}, {{3, 4}}, "b", DC_INTS, DC_F32, DC_INTS, false, false},
    /* addr: every dtype, bool as (beta && input) || (alpha && vec1 && vec2) */
    {"addr", "tensor_addr", dc_addr, 3, {2, 1, 1}, {{3, 5}, {3}, {5}}, "vnv", DC_ALL, DC_SAME, DC_I32 | DC_I64 | DC_BOOL, false, true},
    {"addr_beta0", "tensor_addr", dc_addr_beta0, 3, {2, 1, 1}, {{3, 5}, {3}, {5}}, "vvv", DC_ALL, DC_SAME, DC_ALL, false, true},
    /* dropouts in evaluation: the input, any dtype */
    {"dropout", "tensor_dropout", dc_dropout, 1, {2}, {{3, 4}}, "n", DC_ALL, DC_SAME, DC_ALL, false, false},
    {"dropout1d", "tensor_dropout1d", dc_dropout1d, 1, {2}, {{3, 4}}, "n", DC_ALL, DC_SAME, DC_ALL, false, false},
    {"dropout2d", "tensor_dropout2d", dc_dropout2d, 1, {3}, {{2, 3, 4}}, "n", DC_ALL, DC_SAME, DC_ALL, false, false},
    {"dropout2d_1d", "tensor_dropout2d", dc_dropout2d, 1, {1}, {{4}}, "n", DC_ALL, DC_SAME, DC_ALL, false, false},
    {"alpha_dropout", "tensor_alpha_dropout", dc_alpha_dropout, 1, {2}, {{3, 4}}, "n", DC_ALL, DC_SAME, DC_ALL, false, false},
    {"feature_alpha_dropout", "tensor_feature_alpha_dropout", dc_feature_alpha_dropout, 1, {3}, {{2, 3, 4}}, "n", DC_ALL, DC_SAME, DC_ALL, false, false},
    {"feature_alpha_dropout_1d", "tensor_feature_alpha_dropout", dc_feature_alpha_dropout, 1, {1}, {{4}}, "n", DC_ALL, DC_SAME, DC_ALL, false, false},
    {"feature_alpha_dropout_0d", "tensor_feature_alpha_dropout", dc_feature_alpha_dropout, 1, {0}, {{0}}, "n", DC_ALL, DC_SAME, DC_ALL, false, false},
};

/* Element i of input k of one kind (bool: its value != 0). */
static double dc_value(char kind, int k, int64_t i) {
    int64_t j = i * 3 + k * 2;
    switch (kind) {
    case 'b': return (double)(6 + j % 5);
    case 'n': return (double)((i * 5 + k * 3) % 9 - 4);
    case 's': return (i + k) % 3 == 1 ? -1 : 1;
    case 'p': return (double)(1 + j % 4) / 5;
    default: return (double)(1 + j % 5);
    }
}

static const tensor_dtype dc_dtypes[5] = {TENSOR_I32, TENSOR_I64, TENSOR_U8, TENSOR_BOOL, TENSOR_F32};

TEST(dtype_compat_table) {
    for (size_t c = 0; c < sizeof dc_cases / sizeof dc_cases[0]; c++) {
        const dc_case *dc = &dc_cases[c];
        for (int di = 0; di < 5; di++) {
            tensor_dtype dt = dc_dtypes[di];
            bool is_float = dt == TENSOR_F32, accepted = is_float || (dc->accepts >> dt & 1);
            tensor *in[3] = {NULL, NULL, NULL}, *in64[3] = {NULL, NULL, NULL};
            for (int k = 0; k < dc->n_in; k++) {
                int64_t n = test_numel(dc->nd[k], dc->shape[k]);
                double v[64];
                for (int64_t i = 0; i < n; i++) v[i] = dc_value(dc->kinds[k], k, i);
                in[k] = test_tensor(dt, dc->nd[k], dc->shape[k], v);
                in64[k] = tensor_to_dtype(in[k], TENSOR_F64); /* the values the typed input holds */
            }
            tensor_clear_error();
            tensor *r = dc->run(in);
            if (!accepted) {
                CHECK_MSG(!r, "%s accepted %s input (PyTorch refuses it)", dc->name, tensor_dtype_name(dt));
                const char *e = tensor_last_error();
                CHECK_MSG(r || (e && strstr(e, dc->fn) == e), "%s on %s: the message '%s' does not name %s", dc->name, tensor_dtype_name(dt), e ? e : "(none)", dc->fn);
                tensor_clear_error();
                continue;
            }
            if (!r) {
                test_fail(__FILE__, __LINE__, "%s refused %s input: %s", dc->name, tensor_dtype_name(dt), tensor_last_error() ? tensor_last_error() : "(no message)");
                tensor_clear_error();
                continue;
            }
            tensor_dtype want = is_float || dc->result == DC_SAME ? dt : dc->result == DC_F32 ? TENSOR_F32 : TENSOR_I64;
            CHECK_MSG(tensor_get_dtype(r) == want, "%s on %s: result dtype %s, PyTorch's %s", dc->name, tensor_dtype_name(dt), tensor_dtype_name(tensor_get_dtype(r)), tensor_dtype_name(want));
            if (!is_float && !(dc->values >> dt & 1)) continue;
            tensor *ref = dc->run(in64);
            CHECK_MSG(ref != NULL, "%s: the f64 reference failed", dc->name);
            if (!ref) continue;
            CHECK_MSG(tensor_ndim(r) == tensor_ndim(ref) && tensor_numel(r) == tensor_numel(ref), "%s on %s: shape differs from the f64 computation", dc->name, tensor_dtype_name(dt));
            int64_t n = tensor_numel(ref);
            double *got = test_values(r), *exp = test_values(ref);
            for (int64_t i = 0; i < n && got && exp; i++) {
                double e = exp[i];
                if (!(tensor_get_dtype(r) == TENSOR_F32 || tensor_get_dtype(r) == TENSOR_F64) && dc->trunc) e = trunc(e);
                if (tensor_get_dtype(r) == TENSOR_BOOL && dc->logical) e = e != 0;
                double tol = tensor_get_dtype(r) == TENSOR_F32 ? 2e-6 : 0;
                if (!(fabs(got[i] - e) <= tol * (1 + fabs(e))))
                    test_fail(__FILE__, __LINE__, "%s on %s: element %lld is %.9g, the f64 computation gives %.9g", dc->name, tensor_dtype_name(dt), (long long)i, got[i], e);
            }
            free(got);
            free(exp);
        }
    }
}

/* Mixed dtypes PyTorch accepts: gaussian_nll_loss of integer input and target with a floating
   var (only var is clamped in place, so only it must be floating); cosine_similarity of an integer
   and a floating operand (the integer one converted to the common dtype, f64 here: exact). */
TEST(dtype_compat_mixed) {
    static const double x[4] = {1, 2, 3, 4}, t[4] = {2, 2, 5, 1}, var[4] = {0.5, 1, 2, 4};
    tensor *xi = test_tensor(TENSOR_I64, TENSOR_SHAPE(4), x), *ti = test_tensor(TENSOR_I32, TENSOR_SHAPE(4), t), *vf = test_tensor(TENSOR_F32, TENSOR_SHAPE(4), var);
    tensor *r = tensor_gaussian_nll_loss(xi, ti, vf, false, 1e-6, TENSOR_REDUCTION_SUM);
    CHECK(r && tensor_get_dtype(r) == TENSOR_F32);
    double want = 0; /* 0.5 (log var + (x - t)^2 / var) summed */
    for (int i = 0; i < 4; i++) want += 0.5 * (log(var[i]) + (x[i] - t[i]) * (x[i] - t[i]) / var[i]);
    if (r) CHECK_NEAR(tensor_item(r), want, 1e-6, 1e-6);
    CHECK_BAD(tensor_gaussian_nll_loss(vf, vf, xi, false, 1e-6, TENSOR_REDUCTION_SUM), "tensor_gaussian_nll_loss");
    static const double big[2] = {16777217, 1}, other[2] = {1, 0};
    tensor *cs = tensor_cosine_similarity(test_tensor(TENSOR_I64, TENSOR_SHAPE(2), big), test_tensor(TENSOR_F64, TENSOR_SHAPE(2), other), 0, 1e-8);
    CHECK(cs && tensor_get_dtype(cs) == TENSOR_F64);
    if (cs) CHECK_NEAR(tensor_item(cs), 16777217 / sqrt(16777217.0 * 16777217.0 + 1), 0, 1e-15);
    CHECK_BAD(tensor_cosine_similarity(xi, ti, 0, 1e-8), "tensor_cosine_similarity");
}

/* The feature dropouts while training: PyTorch returns the input at p 0 and zeros at p 1 before
   it asks for 2 dims; between them a 0-d or 1-d input is refused. */
TEST(dtype_compat_feature_dropout_training_dims) {
    static const double x[4] = {1, -2, 3, 4}, z[4] = {0, 0, 0, 0};
    tensor *v = test_tensor(TENSOR_F32, TENSOR_SHAPE(4), x);
    CHECK_VALUES(tensor_dropout2d(v, 0, true), x, 4, 0, 0);
    CHECK_VALUES(tensor_feature_alpha_dropout(v, 1, true), z, 4, 0, 0);
    CHECK_BAD(tensor_feature_alpha_dropout(v, 0.5, true), "tensor_feature_alpha_dropout");
    CHECK_BAD(tensor_dropout2d(v, 0.5, true), "tensor_dropout2d");
    CHECK_BAD(tensor_dropout1d(v, 0.5, false), "tensor_dropout1d"); /* F.dropout1d checks its dims first */
}

/* ---- shapes PyTorch accepts ---- */

/* batch_norm of an empty input returns a copy of it (PyTorch's _batch_norm_impl_index skips every
   check for numel 0), a 1-D [0] included; the other norms of empty inputs return empty results. */
TEST(dtype_compat_norms_of_empty_inputs) {
    tensor *e1 = tensor_zeros(TENSOR_SHAPE(0), TENSOR_F32), *e2 = tensor_zeros(TENSOR_SHAPE(0, 3), TENSOR_F32), *e3 = tensor_zeros(TENSOR_SHAPE(0, 4, 2), TENSOR_F32);
    tensor *r0 = tensor_zeros(TENSOR_SHAPE(0), TENSOR_F32), *r3 = tensor_ones(TENSOR_SHAPE(3), TENSOR_F32), *r4 = tensor_ones(TENSOR_SHAPE(4), TENSOR_F32);
    for (int training = 0; training < 2; training++) {
        tensor *y = tensor_batch_norm(e1, r0, r0, NULL, NULL, training, 0.1, 1e-5);
        CHECK_MSG(y != NULL, "batch_norm of [0] (training %d): %s", training, tensor_last_error() ? tensor_last_error() : "");
        if (y) CHECK_SHAPE(y, TENSOR_SHAPE(0));
        tensor_clear_error();
        y = tensor_batch_norm(e1, NULL, NULL, NULL, NULL, true, 0.1, 1e-5);
        CHECK(y != NULL);
        if (y) CHECK_SHAPE(y, TENSOR_SHAPE(0));
        tensor_clear_error();
        y = tensor_batch_norm(e2, r3, r3, r3, r3, training, 0.1, 1e-5);
        CHECK(y != NULL);
        if (y) CHECK_SHAPE(y, TENSOR_SHAPE(0, 3));
        y = tensor_batch_norm(e3, r4, r4, NULL, NULL, training, 0.1, 1e-5);
        CHECK(y != NULL);
        if (y) CHECK_SHAPE(y, TENSOR_SHAPE(0, 4, 2));
    }
    /* the gradient still reaches the input (PyTorch returns a copy, not a view or a new empty) */
    tensor *leaf = tensor_zeros(TENSOR_SHAPE(0), TENSOR_F64);
    tensor_set_requires_grad(leaf, true);
    tensor *y = tensor_batch_norm(leaf, NULL, NULL, NULL, NULL, true, 0.1, 1e-5);
    CHECK(y && tensor_requires_grad(y));
    CHECK(tensor_numel(r3) == 3 && tensor_item(tensor_sum_all(r3)) == 3); /* running statistics untouched */
    CHECK_BAD(tensor_batch_norm(tensor_zeros(TENSOR_SHAPE(3), TENSOR_F32), NULL, NULL, NULL, NULL, true, 0.1, 1e-5), "tensor_batch_norm");
    CHECK_BAD(tensor_batch_norm(tensor_zeros(0, NULL, TENSOR_F32), NULL, NULL, NULL, NULL, true, 0.1, 1e-5), "tensor_batch_norm");
    tensor *r;
    CHECK((r = tensor_instance_norm(e3, NULL, NULL, NULL, NULL, true, 0.1, 1e-5)) && tensor_numel(r) == 0);
    CHECK((r = tensor_group_norm(e3, 2, NULL, NULL, 1e-5)) && tensor_numel(r) == 0);
    CHECK((r = tensor_layer_norm(e2, NULL, NULL, 1e-5)) && tensor_numel(r) == 0);
    CHECK((r = tensor_rms_norm(e2, NULL, 1e-5)) && tensor_numel(r) == 0);
    CHECK((r = tensor_local_response_norm(e3, 2, 1e-4, 0.75, 1)) && tensor_numel(r) == 0);
    CHECK((r = tensor_normalize(e2, 2, 1, 1e-12)) && tensor_numel(r) == 0);
}

/* multi_margin_loss takes a target of at most one dim with as many elements as the input has
   samples (PyTorch's multi_margin_loss_shape_check): input [C] with target [1], input [1, C] with
   a 0-d target; REDUCTION_NONE gives [N] when the target has a dim, else a 0-d loss. The values
   are those of input [1, C] with target [1]. */
TEST(dtype_compat_multi_margin_loss_shapes) {
    static const double x[4] = {0.1, 0.9, -0.4, 0.3}, y[1] = {1};
    tensor *xc = test_tensor(TENSOR_F64, TENSOR_SHAPE(4), x), *x1 = test_tensor(TENSOR_F64, TENSOR_SHAPE(1, 4), x);
    tensor *t1 = test_tensor(TENSOR_I64, TENSOR_SHAPE(1), y), *t0 = test_tensor(TENSOR_I64, 0, NULL, y);
    tensor *want = tensor_multi_margin_loss(x1, t1, 1, 1, NULL, TENSOR_REDUCTION_NONE);
    CHECK(want != NULL);
    double w = want ? tensor_item(want) : NAN;
    tensor *a = tensor_multi_margin_loss(xc, t1, 1, 1, NULL, TENSOR_REDUCTION_NONE);
    CHECK_MSG(a != NULL, "input [C], target [1]: %s", tensor_last_error() ? tensor_last_error() : "");
    if (a) { CHECK_SHAPE(a, TENSOR_SHAPE(1)); CHECK_NEAR(tensor_item(a), w, 1e-12, 1e-12); }
    tensor_clear_error();
    tensor *b = tensor_multi_margin_loss(x1, t0, 1, 1, NULL, TENSOR_REDUCTION_NONE);
    CHECK_MSG(b != NULL, "input [1, C], 0-d target: %s", tensor_last_error() ? tensor_last_error() : "");
    if (b) { CHECK(tensor_ndim(b) == 0); CHECK_NEAR(tensor_item(b), w, 1e-12, 1e-12); }
    tensor_clear_error();
    tensor *c = tensor_multi_margin_loss(xc, t1, 2, 0.5, NULL, TENSOR_REDUCTION_MEAN), *cw = tensor_multi_margin_loss(x1, t1, 2, 0.5, NULL, TENSOR_REDUCTION_MEAN);
    CHECK(c && cw && tensor_ndim(c) == 0);
    if (c && cw) CHECK_NEAR(tensor_item(c), tensor_item(cw), 1e-12, 1e-12);
    tensor_clear_error();
    static const double y2[2] = {1, 0};
    CHECK_BAD(tensor_multi_margin_loss(xc, test_tensor(TENSOR_I64, TENSOR_SHAPE(2), y2), 1, 1, NULL, TENSOR_REDUCTION_NONE), "tensor_multi_margin_loss");
    CHECK_BAD(tensor_multi_margin_loss(x1, test_tensor(TENSOR_I64, TENSOR_SHAPE(1, 1), y), 1, 1, NULL, TENSOR_REDUCTION_NONE), "tensor_multi_margin_loss");
}

/* addr of bool operands: (beta && input) || (alpha && vec1 && vec2); beta 0 ignores input; a
   non-integral alpha or beta is refused for bool and integer operands, as PyTorch does. */
TEST(dtype_compat_addr_bool) {
    static const double in[4] = {1, 0, 0, 0}, v1[2] = {1, 0}, v2[2] = {0, 1};
    tensor *a = test_tensor(TENSOR_BOOL, TENSOR_SHAPE(2, 2), in), *b = test_tensor(TENSOR_BOOL, TENSOR_SHAPE(2), v1), *c = test_tensor(TENSOR_BOOL, TENSOR_SHAPE(2), v2);
    static const double w11[4] = {1, 1, 0, 0}, w01[4] = {0, 1, 0, 0}, w10[4] = {1, 0, 0, 0};
    tensor *r = tensor_addr(a, b, c, 1, 1);
    CHECK(r && tensor_get_dtype(r) == TENSOR_BOOL);
    CHECK_VALUES(r, w11, 4, 0, 0);
    CHECK_VALUES(tensor_addr(a, b, c, 0, 3), w01, 4, 0, 0);
    CHECK_VALUES(tensor_addr(a, b, c, 2, 0), w10, 4, 0, 0);
    CHECK_BAD(tensor_addr(a, b, c, 0.5, 1), "tensor_addr");
}
