/* Gradient checks of the reductions, shape and indexing ops (tensor_autograd.h against central
   differences, tests/main.c), direct checks of the values PyTorch defines where the derivative has
   a kink (prod at zeros, max/min ties, std and norm at zero), and the engine run through views. */
#include "test.h"

/* ---- helpers ---- */

/* The parameters of one case; each f_NAME reads the fields its op takes. */
typedef struct {
    int op;                       /* the reduction f_reduce applies (TENSOR_OP_xxx) */
    int layout;                   /* how f views its leaves before the op (see arrange) */
    bool squared;                 /* f returns op(...)^2: second derivatives flow through the op's backward */
    int dim, dim1;
    bool keepdim;
    int64_t k;                    /* correction, diagonal, index or start */
    int64_t end, step;
    double p;                     /* norm's p, pad's value, masked_fill's value */
    int n;                        /* length of dims / v (or the number of inputs of cat, stack) */
    int dims[TENSOR_MAX_DIMS];
    int64_t v[2 * TENSOR_MAX_DIMS];
    int idx_ndim;                 /* an index (or mask) tensor built inside f */
    int64_t idx_shape[4];
    int64_t idx[32];
} args;

/* Views f makes of a contiguous leaf, so that every derivative also sees non-contiguous inputs.
   leaf_for gives the leaf shape whose arranged view has the wanted shape. */
enum { PLAIN, TRANSPOSED, STRIDED, EXPANDED };
static int expanded_dim(int ndim) { return ndim > 1 ? 1 : 0; }
static tensor *arrange(tensor *x, int layout) {
    int nd = tensor_ndim(x);
    if (nd == 0) return x;
    int64_t s[TENSOR_MAX_DIMS];
    switch (layout) {
    case TRANSPOSED: return tensor_transpose(x, 0, nd - 1);
    case STRIDED: return tensor_slice(x, nd - 1, 0, tensor_shape(x)[nd - 1], 2);
    case EXPANDED:
        for (int i = 0; i < nd; i++) s[i] = tensor_shape(x)[i];
        s[expanded_dim(nd)] = 4; /* the leaf has size 1 there */
        return tensor_expand(x, nd, s);
    default: return x;
    }
}
static tensor *leaf_for(int layout, int ndim, const int64_t *shape, double lo, double hi) {
    int64_t s[TENSOR_MAX_DIMS];
    for (int i = 0; i < ndim; i++) s[i] = shape[i];
    if (ndim > 0 && layout == TRANSPOSED) { s[0] = shape[ndim - 1]; s[ndim - 1] = shape[0]; }
    if (ndim > 0 && layout == STRIDED) s[ndim - 1] = 2 * shape[ndim - 1];
    if (ndim > 0 && layout == EXPANDED) s[expanded_dim(ndim)] = 1;
    return test_leaf(ndim, s, lo, hi);
}
static const char *layout_name(int layout) {
    return layout == TRANSPOSED ? "transposed" : layout == STRIDED ? "strided" : layout == EXPANDED ? "expanded" : "contiguous";
}

/* Leaf fillers for inputs that must avoid kinks. */
static void fill_distinct(tensor *t) { /* well-spaced distinct values in [-2, 2): no ties, no near-ties */
    double *d = (double *)tensor_data_ptr(t);
    for (int64_t i = 0; i < tensor_numel(t); i++) d[i] = 4 * fmod((double)(i + 1) * 0.6180339887498949, 1.0) - 2;
}
static void fill_away_from_zero(tensor *t) { /* [-1, 1) moved to |x| >= 0.5 */
    double *d = (double *)tensor_data_ptr(t);
    for (int64_t i = 0; i < tensor_numel(t); i++) d[i] += d[i] >= 0 ? 0.5 : -0.5;
}

/* GRADCHECK, and GRADGRADCHECK when twice, of f on n inputs; failures name the case. */
static void check_case(int line, const char *label, test_fn_of f, const args *a, int n, tensor *const *in, bool twice) {
    char where[256];
    snprintf(where, sizeof where, "%s (%s)", __FILE__, label);
    int64_t want = 0;
    for (int i = 0; i < n; i++) if (tensor_requires_grad(in[i])) want += tensor_numel(in[i]);
    int got = test_gradcheck(where, line, f, a, n, in, 1e-6, 1e-5);
    if (got != want) test_fail(where, line, "gradcheck compared %d elements, expected %lld", got, (long long)want);
    if (twice) {
        args b = *a;
        b.squared = true; /* a linear op's gradient does not depend on x: square it so it does */
        test_gradgradcheck(where, line, f, &b, n, in, 1e-5, 1e-4);
    }
}

static tensor *finish(const args *a, tensor *r) { return a->squared ? tensor_square(r) : r; }

/* An i64 tensor of a's index (shape idx_shape). */
static tensor *index_of(const args *a, tensor *like) { return test_like(like, tensor_from_data(a->idx, a->idx_ndim, a->idx_shape, TENSOR_I64)); }

/* A leaf holding the given values. */
static tensor *leaf_of(int ndim, const int64_t *shape, const double *v) {
    return tensor_set_requires_grad(tensor_from_data(v, ndim, shape, TENSOR_F64), true);
}
/* d sum(out) / d x through tensor_backward (x's .grad, borrowed). */
static tensor *grad_of_sum(tensor *x, tensor *out) {
    CHECK(out != NULL);
    if (!out) return NULL;
    CHECK(tensor_backward(tensor_sum_all(out)) == 0);
    return tensor_grad(x);
}

/* ---- reductions ---- */

static tensor *f_reduce(tensor *const *in, const void *ctx) {
    const args *a = (const args *)ctx;
    tensor *x = arrange(in[0], a->layout), *r = NULL;
    switch (a->op) {
    case TENSOR_OP_sum: r = tensor_sum(x, a->dim, a->keepdim); break;
    case TENSOR_OP_sum_all: r = tensor_sum_all(x); break;
    case TENSOR_OP_sum_dims: r = tensor_sum_dims(x, a->n, a->dims, a->keepdim); break;
    case TENSOR_OP_mean: r = tensor_mean(x, a->dim, a->keepdim); break;
    case TENSOR_OP_mean_all: r = tensor_mean_all(x); break;
    case TENSOR_OP_mean_dims: r = tensor_mean_dims(x, a->n, a->dims, a->keepdim); break;
    case TENSOR_OP_prod: r = tensor_prod(x, a->dim, a->keepdim); break;
    case TENSOR_OP_max: r = tensor_max(x, a->dim, a->keepdim); break;
    case TENSOR_OP_max_all: r = tensor_max_all(x); break;
    case TENSOR_OP_min: r = tensor_min(x, a->dim, a->keepdim); break;
    case TENSOR_OP_min_all: r = tensor_min_all(x); break;
    case TENSOR_OP_var: r = tensor_var(x, a->dim, a->k, a->keepdim); break;
    case TENSOR_OP_std: r = tensor_std(x, a->dim, a->k, a->keepdim); break;
    case TENSOR_OP_logsumexp: r = tensor_logsumexp(x, a->dim, a->keepdim); break;
    case TENSOR_OP_norm: r = tensor_norm(x, a->p, a->dim, a->keepdim); break;
    case TENSOR_OP_cumsum: r = tensor_cumsum(x, a->dim); break;
    default: break;
    }
    return finish(a, r);
}

/* One reduction case: a leaf of `shape` as seen through `layout`, optionally refilled. */
static void reduce_case(int line, args a, int layout, int ndim, const int64_t *shape, double lo, double hi, void (*fill)(tensor *), bool twice) {
    a.layout = layout;
    tensor *x = leaf_for(layout, ndim, shape, lo, hi);
    if (fill) fill(x);
    char label[160];
    snprintf(label, sizeof label, "%s dim %d keepdim %d correction %lld p %g, %d-D %s input", tensor_op_name((tensor_op)a.op), a.dim, (int)a.keepdim,
             (long long)a.k, a.p, ndim, layout_name(layout));
    check_case(line, label, f_reduce, &a, 1, &x, twice);
}

/* A reduction over one dim: every dim of a [3, 4, 5] input (negative too) with keepdim both ways,
   transposed, strided and expanded inputs, a 1-D input, and a 0-dim input (dims 0 and -1) unless
   no_scalar; the first case also gets a second-derivative check. */
static void reduce_sweep(int line, args a, double lo, double hi, void (*fill)(tensor *), bool no_scalar) {
    static const int dims[] = {0, 1, 2, -1, -3};
    for (int i = 0; i < 5; i++)
        for (int keep = 0; keep < 2; keep++) {
            a.dim = dims[i];
            a.keepdim = keep;
            reduce_case(line, a, PLAIN, TENSOR_SHAPE(3, 4, 5), lo, hi, fill, i == 1 && keep == 0);
        }
    a.dim = 1; a.keepdim = false; reduce_case(line, a, TRANSPOSED, TENSOR_SHAPE(3, 4, 5), lo, hi, fill, false);
    a.dim = -1; a.keepdim = true; reduce_case(line, a, TRANSPOSED, TENSOR_SHAPE(3, 4, 5), lo, hi, fill, false);
    a.dim = 0; a.keepdim = false; reduce_case(line, a, STRIDED, TENSOR_SHAPE(3, 4, 5), lo, hi, fill, false);
    a.dim = 2; a.keepdim = true; reduce_case(line, a, STRIDED, TENSOR_SHAPE(3, 4, 5), lo, hi, fill, false);
    a.dim = 1; a.keepdim = true; reduce_case(line, a, EXPANDED, TENSOR_SHAPE(3, 4, 5), lo, hi, fill, false); /* over the expanded dim */
    a.dim = -1; a.keepdim = false; reduce_case(line, a, EXPANDED, TENSOR_SHAPE(3, 4, 5), lo, hi, fill, false);
    a.dim = 0; a.keepdim = false; reduce_case(line, a, PLAIN, TENSOR_SHAPE(7), lo, hi, fill, false);
    a.dim = -1; a.keepdim = true; reduce_case(line, a, STRIDED, TENSOR_SHAPE(7), lo, hi, fill, false);
    if (no_scalar) return;
    a.dim = 0; a.keepdim = false; reduce_case(line, a, PLAIN, 0, NULL, lo, hi, fill, false);
    a.dim = -1; a.keepdim = true; reduce_case(line, a, PLAIN, 0, NULL, lo, hi, fill, false);
}
#define REDUCE_SWEEP(...) do { args a_ = {__VA_ARGS__}; reduce_sweep(__LINE__, a_, -1, 1, NULL, false); } while (0)

/* A reduction of everything: contiguous, transposed, strided, expanded, 1-D and 0-dim inputs. */
static void reduce_all_sweep(int line, args a, void (*fill)(tensor *)) {
    reduce_case(line, a, PLAIN, TENSOR_SHAPE(3, 4, 5), -1, 1, fill, true);
    reduce_case(line, a, TRANSPOSED, TENSOR_SHAPE(3, 4, 5), -1, 1, fill, false);
    reduce_case(line, a, STRIDED, TENSOR_SHAPE(4, 3), -1, 1, fill, false);
    reduce_case(line, a, EXPANDED, TENSOR_SHAPE(2, 4, 3), -1, 1, fill, false);
    reduce_case(line, a, PLAIN, TENSOR_SHAPE(6), -1, 1, fill, false);
    reduce_case(line, a, PLAIN, 0, NULL, -1, 1, fill, false);
}

/* Zero-size inputs: the backward gives an empty gradient (nothing to compare, but it must run). */
static void zero_size_cases(int line, args a) {
    a.dim = 1;
    reduce_case(line, a, PLAIN, TENSOR_SHAPE(3, 0, 2), -1, 1, NULL, false);
    a.dim = -1;
    a.keepdim = true;
    reduce_case(line, a, PLAIN, TENSOR_SHAPE(3, 0, 2), -1, 1, NULL, false);
}

void gradcheck_sum(void) {
    REDUCE_SWEEP(.op = TENSOR_OP_sum);
    args a = {.op = TENSOR_OP_sum};
    zero_size_cases(__LINE__, a);
}
void gradcheck_mean(void) { REDUCE_SWEEP(.op = TENSOR_OP_mean); }
void gradcheck_sum_all(void) { args a = {.op = TENSOR_OP_sum_all}; reduce_all_sweep(__LINE__, a, NULL); }
void gradcheck_mean_all(void) { args a = {.op = TENSOR_OP_mean_all}; reduce_all_sweep(__LINE__, a, NULL); }

/* sum_dims / mean_dims: two dims (negative too, either order), one dim, n = 0 (everything), with
   keepdim both ways, over contiguous and non-contiguous inputs, and a 0-dim input. */
static void reduce_dims_sweep(int line, int op) {
    static const int pairs[][2] = {{0, 2}, {-1, 0}, {1, -1}, {2, 1}};
    args a = {.op = op};
    for (int i = 0; i < 4; i++)
        for (int keep = 0; keep < 2; keep++) {
            a.n = 2;
            a.dims[0] = pairs[i][0];
            a.dims[1] = pairs[i][1];
            a.keepdim = keep;
            reduce_case(line, a, i % 2 ? TRANSPOSED : PLAIN, TENSOR_SHAPE(3, 4, 5), -1, 1, NULL, i == 0 && keep == 1);
        }
    a.n = 2; a.dims[0] = 0; a.dims[1] = 1; a.keepdim = false;
    reduce_case(line, a, EXPANDED, TENSOR_SHAPE(3, 4, 5), -1, 1, NULL, false);
    reduce_case(line, a, STRIDED, TENSOR_SHAPE(3, 4, 5), -1, 1, NULL, false);
    a.n = 1; a.dims[0] = -2; a.keepdim = true;
    reduce_case(line, a, PLAIN, TENSOR_SHAPE(3, 4, 5), -1, 1, NULL, false);
    a.n = 0;
    for (int keep = 0; keep < 2; keep++) {
        a.keepdim = keep;
        reduce_case(line, a, PLAIN, TENSOR_SHAPE(3, 4, 5), -1, 1, NULL, false);
        reduce_case(line, a, TRANSPOSED, TENSOR_SHAPE(2, 3), -1, 1, NULL, false);
        reduce_case(line, a, PLAIN, 0, NULL, -1, 1, NULL, false);
    }
    a.n = 1; a.dims[0] = -1; a.keepdim = true;
    reduce_case(line, a, PLAIN, 0, NULL, -1, 1, NULL, false);
}
void gradcheck_sum_dims(void) {
    reduce_dims_sweep(__LINE__, TENSOR_OP_sum_dims);
    args a = {.op = TENSOR_OP_sum_dims, .n = 2, .dims = {0, 1}};
    zero_size_cases(__LINE__, a);
}
void gradcheck_mean_dims(void) { reduce_dims_sweep(__LINE__, TENSOR_OP_mean_dims); }

static void zero_two_entries(tensor *t) { /* one zero in one slice, two in another (of dim 1) */
    double *d = (double *)tensor_data_ptr(t);
    d[1] = 0;                     /* [0, 0, 1] */
    d[5 + 2] = 0; d[5 + 4] = 0;   /* [0, 1, 2] and [0, 1, 4] (in a [3, 4, 5] input) */
}
void gradcheck_prod(void) {
    args a = {.op = TENSOR_OP_prod};
    reduce_sweep(__LINE__, a, 0.5, 1.5, NULL, false);
    reduce_sweep(__LINE__, a, -1.5, 1.5, NULL, true);
    /* zeros: prod is linear in each entry, so central differences are exact there too */
    for (int d = 0; d < 3; d++) {
        a.dim = d;
        a.keepdim = d == 1;
        reduce_case(__LINE__, a, PLAIN, TENSOR_SHAPE(3, 4, 5), -1.5, 1.5, zero_two_entries, d == 2);
    }
    zero_size_cases(__LINE__, a);
}

/* prod at zeros, against the values written out: d/dx_i = product of the others. */
TEST(grad_prod_with_zeros_is_the_product_of_the_others) {
    double v[16] = {2, 0, 3, 5,    /* one zero */
                    0, 4, 0, 7,    /* two zeros */
                    1, 2, 3, -2,   /* none */
                    0, 0, 0, 6};   /* three zeros */
    tensor *x = leaf_of(TENSOR_SHAPE(4, 4), v);
    double expect[16];
    for (int r = 0; r < 4; r++)
        for (int i = 0; i < 4; i++) {
            double others = 1;
            for (int j = 0; j < 4; j++) if (j != i) others *= v[r * 4 + j];
            expect[r * 4 + i] = others;
        }
    CHECK_VALUES(grad_of_sum(x, tensor_prod(x, 1, false)), expect, 16, 1e-12, 1e-12);
    CHECK(expect[1] == 30 && expect[4] == 0 && expect[9] == -6 && expect[15] == 0); /* the cases above */
    /* along dim 0 with keepdim, and through a transposed view */
    tensor *y = leaf_of(TENSOR_SHAPE(4, 4), v);
    double expect0[16];
    for (int c = 0; c < 4; c++)
        for (int i = 0; i < 4; i++) {
            double others = 1;
            for (int j = 0; j < 4; j++) if (j != i) others *= v[j * 4 + c];
            expect0[i * 4 + c] = others;
        }
    CHECK_VALUES(grad_of_sum(y, tensor_prod(tensor_transpose(y, 0, 1), 1, true)), expect0, 16, 1e-12, 1e-12);
    /* a 0-dim input: d prod / dx = 1, zero or not */
    double zero = 0, one = 1;
    tensor *s = leaf_of(0, NULL, &zero);
    CHECK_VALUES(grad_of_sum(s, tensor_prod(s, 0, false)), &one, 1, 0, 0);
}

void gradcheck_max(void) { args a = {.op = TENSOR_OP_max}; reduce_sweep(__LINE__, a, -1, 1, fill_distinct, false); }
void gradcheck_min(void) { args a = {.op = TENSOR_OP_min}; reduce_sweep(__LINE__, a, -1, 1, fill_distinct, false); }
void gradcheck_max_all(void) { args a = {.op = TENSOR_OP_max_all}; reduce_all_sweep(__LINE__, a, fill_distinct); }
void gradcheck_min_all(void) { args a = {.op = TENSOR_OP_min_all}; reduce_all_sweep(__LINE__, a, fill_distinct); }

/* max/min over a dim with ties: the whole gradient goes to the first extreme of each slice. */
TEST(grad_max_min_dim_ties_go_to_the_first_index) {
    double v[9] = {1, 3, 3,   2, 2, 0,   -1, -1, -1};
    tensor *x = leaf_of(TENSOR_SHAPE(3, 3), v);
    double gmax[9] = {0, 1, 0,   1, 0, 0,   1, 0, 0};
    CHECK_VALUES(grad_of_sum(x, tensor_max(x, 1, false)), gmax, 9, 0, 0);
    tensor *y = leaf_of(TENSOR_SHAPE(3, 3), v);
    double gmin[9] = {1, 0, 0,   0, 0, 1,   1, 0, 0};
    CHECK_VALUES(grad_of_sum(y, tensor_min(y, -1, true)), gmin, 9, 0, 0);
    /* along dim 0 (columns {1, 2, -1}, {3, 2, -1}, {3, 0, -1}) */
    tensor *z = leaf_of(TENSOR_SHAPE(3, 3), v);
    double gmax0[9] = {0, 1, 1,   1, 0, 0,   0, 0, 0};
    CHECK_VALUES(grad_of_sum(z, tensor_max(z, 0, false)), gmax0, 9, 0, 0);
    tensor *w = leaf_of(TENSOR_SHAPE(3, 3), v);
    double gmin0[9] = {0, 0, 0,   0, 0, 0,   1, 1, 1};
    CHECK_VALUES(grad_of_sum(w, tensor_min(w, 0, false)), gmin0, 9, 0, 0);
}

/* max_all/min_all with ties: the gradient is shared evenly among the tied entries. */
TEST(grad_max_all_min_all_ties_split_evenly) {
    double v[6] = {1, 3, -2, 3, -2, 3};
    tensor *x = leaf_of(TENSOR_SHAPE(2, 3), v);
    double gmax[6] = {0, 1.0 / 3, 0, 1.0 / 3, 0, 1.0 / 3};
    CHECK_VALUES(grad_of_sum(x, tensor_mul_scalar(tensor_max_all(x), 1)), gmax, 6, 1e-15, 0);
    tensor *y = leaf_of(TENSOR_SHAPE(2, 3), v);
    double gmin[6] = {0, 0, 0.5, 0, 0.5, 0};
    CHECK_VALUES(grad_of_sum(y, tensor_min_all(tensor_transpose(y, 0, 1))), gmin, 6, 1e-15, 0);
    /* scaled by the incoming gradient */
    tensor *z = leaf_of(TENSOR_SHAPE(2, 3), v);
    CHECK(tensor_backward(tensor_mul_scalar(tensor_max_all(z), 6)) == 0);
    double g6[6] = {0, 2, 0, 2, 0, 2};
    CHECK_VALUES(tensor_grad(z), g6, 6, 1e-14, 0);
}

void gradcheck_var(void) {
    for (int corr = 0; corr < 2; corr++) {
        args a = {.op = TENSOR_OP_var, .k = corr};
        reduce_sweep(__LINE__, a, -1, 1, NULL, corr == 1); /* a 0-dim input has N - 1 = 0 */
    }
    args a = {.op = TENSOR_OP_var, .k = 2, .dim = -1};
    reduce_case(__LINE__, a, PLAIN, TENSOR_SHAPE(3, 4, 5), -1, 1, NULL, false);
}
void gradcheck_std(void) {
    for (int corr = 0; corr < 2; corr++) {
        args a = {.op = TENSOR_OP_std, .k = corr};
        reduce_sweep(__LINE__, a, -1, 1, NULL, corr == 1); /* a 0-dim std is 0 (gradient 0), or NaN with N - 1 = 0 */
    }
}

/* std where a slice is constant (std 0, its kink): PyTorch defines the gradient as 0 there. */
TEST(grad_std_of_a_constant_slice_is_zero) {
    double v[6] = {2, 2, 2, 1, 2, 4};
    tensor *x = leaf_of(TENSOR_SHAPE(2, 3), v);
    tensor *g = grad_of_sum(x, tensor_std(x, 1, 1, false));
    /* row 1: mean 7/3, std s = sqrt(((4 + 1 + 25) / 9) / 2); d/dx_i = (x_i - mean) / (2 s) */
    double m = 7.0 / 3, s = sqrt((((1 - m) * (1 - m)) + ((2 - m) * (2 - m)) + ((4 - m) * (4 - m))) / 2);
    double expect[6] = {0, 0, 0, (1 - m) / (2 * s), (2 - m) / (2 * s), (4 - m) / (2 * s)};
    CHECK_VALUES(g, expect, 6, 1e-12, 1e-12);
    double one = 1.5, zero = 0;
    tensor *c = leaf_of(0, NULL, &one);
    CHECK_VALUES(grad_of_sum(c, tensor_std(c, 0, 0, false)), &zero, 1, 0, 0);
}

void gradcheck_logsumexp(void) {
    args a = {.op = TENSOR_OP_logsumexp};
    reduce_sweep(__LINE__, a, -2, 2, NULL, false);
    zero_size_cases(__LINE__, a);
}

void gradcheck_norm(void) {
    args a = {.op = TENSOR_OP_norm};
    a.p = 1; reduce_sweep(__LINE__, a, -1, 1, fill_away_from_zero, false);
    a.p = 2; reduce_sweep(__LINE__, a, -1, 1, NULL, false);
    a.p = 3; reduce_sweep(__LINE__, a, -1, 1, NULL, false);
    a.p = INFINITY; reduce_sweep(__LINE__, a, -1, 1, fill_distinct, false);
    a.p = -INFINITY; reduce_sweep(__LINE__, a, -1, 1, fill_distinct, false);
    a.p = 0.5; a.dim = 1; reduce_case(__LINE__, a, PLAIN, TENSOR_SHAPE(3, 4, 5), -1, 1, fill_away_from_zero, true);
    a.p = 0; a.dim = 1; reduce_case(__LINE__, a, PLAIN, TENSOR_SHAPE(3, 4, 5), -1, 1, fill_away_from_zero, false);
    a.p = -1.5; a.dim = 1; reduce_case(__LINE__, a, PLAIN, TENSOR_SHAPE(3, 4, 5), -1, 1, fill_away_from_zero, true); /* negative order */
}

/* norm at a zero vector gives a zero gradient (PyTorch), and inf-norm ties split evenly. */
TEST(grad_norm_at_zero_and_inf_norm_ties) {
    double v[6] = {0, 0, 0, 3, -4, 0};
    double zeros[6] = {0};
    double p2[6] = {0, 0, 0, 3.0 / 5, -4.0 / 5, 0};
    tensor *x = leaf_of(TENSOR_SHAPE(2, 3), v);
    CHECK_VALUES(grad_of_sum(x, tensor_norm(x, 2, 1, false)), p2, 6, 1e-15, 1e-15);
    x = leaf_of(TENSOR_SHAPE(2, 3), v);
    double p3[6] = {0, 0, 0, 9 / pow(91, 2.0 / 3), -16 / pow(91, 2.0 / 3), 0}; /* x |x| / |x|_3^2 */
    CHECK_VALUES(grad_of_sum(x, tensor_norm(x, 3, 1, false)), p3, 6, 1e-12, 1e-12);
    x = leaf_of(TENSOR_SHAPE(2, 3), zeros);
    CHECK_VALUES(grad_of_sum(x, tensor_norm(x, INFINITY, 1, true)), zeros, 6, 0, 0);
    double t[4] = {-2, 2, 1, 2};
    tensor *y = leaf_of(TENSOR_SHAPE(4), t);
    double pinf[4] = {-1.0 / 3, 1.0 / 3, 0, 1.0 / 3};
    CHECK_VALUES(grad_of_sum(y, tensor_norm(y, INFINITY, 0, false)), pinf, 4, 1e-15, 0);
}

void gradcheck_cumsum(void) {
    args a = {.op = TENSOR_OP_cumsum};
    for (int d = -3; d < 3; d++) {
        a.dim = d;
        reduce_case(__LINE__, a, PLAIN, TENSOR_SHAPE(3, 4, 5), -1, 1, NULL, d == 1);
    }
    a.dim = 1; reduce_case(__LINE__, a, TRANSPOSED, TENSOR_SHAPE(3, 4, 5), -1, 1, NULL, false);
    a.dim = 0; reduce_case(__LINE__, a, STRIDED, TENSOR_SHAPE(3, 4, 5), -1, 1, NULL, false);
    a.dim = 1; reduce_case(__LINE__, a, EXPANDED, TENSOR_SHAPE(3, 4, 5), -1, 1, NULL, false);
    a.dim = 0; reduce_case(__LINE__, a, PLAIN, TENSOR_SHAPE(6), -1, 1, NULL, false);
    a.dim = -1; reduce_case(__LINE__, a, PLAIN, 0, NULL, -1, 1, NULL, false);
    zero_size_cases(__LINE__, a);
}

/* ---- shape ops ---- */

static tensor *f_reshape(tensor *const *in, const void *ctx) {
    const args *a = (const args *)ctx;
    return finish(a, tensor_reshape(arrange(in[0], a->layout), a->n, a->v));
}
static tensor *f_view(tensor *const *in, const void *ctx) {
    const args *a = (const args *)ctx;
    tensor *x = arrange(in[0], a->layout);
    if (a->step) x = tensor_slice(x, 0, 0, tensor_shape(x)[0], a->step);
    return finish(a, tensor_view(x, a->n, a->v));
}
static tensor *f_flatten(tensor *const *in, const void *ctx) {
    const args *a = (const args *)ctx;
    return finish(a, tensor_flatten(arrange(in[0], a->layout), a->dim, a->dim1));
}
static tensor *f_permute(tensor *const *in, const void *ctx) {
    const args *a = (const args *)ctx;
    return finish(a, tensor_permute(arrange(in[0], a->layout), a->n, a->dims));
}
static tensor *f_transpose(tensor *const *in, const void *ctx) {
    const args *a = (const args *)ctx;
    return finish(a, tensor_transpose(arrange(in[0], a->layout), a->dim, a->dim1));
}
static tensor *f_expand(tensor *const *in, const void *ctx) {
    const args *a = (const args *)ctx;
    return finish(a, tensor_expand(arrange(in[0], a->layout), a->n, a->v));
}
static tensor *f_squeeze(tensor *const *in, const void *ctx) {
    const args *a = (const args *)ctx;
    return finish(a, tensor_squeeze(arrange(in[0], a->layout), a->dim));
}
static tensor *f_unsqueeze(tensor *const *in, const void *ctx) {
    const args *a = (const args *)ctx;
    return finish(a, tensor_unsqueeze(arrange(in[0], a->layout), a->dim));
}
static tensor *f_slice(tensor *const *in, const void *ctx) {
    const args *a = (const args *)ctx;
    return finish(a, tensor_slice(arrange(in[0], a->layout), a->dim, a->k, a->end, a->step));
}
static tensor *f_select(tensor *const *in, const void *ctx) {
    const args *a = (const args *)ctx;
    return finish(a, tensor_select(arrange(in[0], a->layout), a->dim, a->k));
}
static tensor *f_flip(tensor *const *in, const void *ctx) {
    const args *a = (const args *)ctx;
    return finish(a, tensor_flip(arrange(in[0], a->layout), a->dim));
}
static tensor *f_repeat(tensor *const *in, const void *ctx) {
    const args *a = (const args *)ctx;
    return finish(a, tensor_repeat(arrange(in[0], a->layout), a->n, a->v));
}
static tensor *f_pad(tensor *const *in, const void *ctx) {
    const args *a = (const args *)ctx;
    return finish(a, tensor_pad(arrange(in[0], a->layout), a->n, a->v, a->p));
}
static tensor *f_tril(tensor *const *in, const void *ctx) {
    const args *a = (const args *)ctx;
    return finish(a, tensor_tril(arrange(in[0], a->layout), a->k));
}
static tensor *f_triu(tensor *const *in, const void *ctx) {
    const args *a = (const args *)ctx;
    return finish(a, tensor_triu(arrange(in[0], a->layout), a->k));
}
/* cat / stack of a->n inputs, each arranged (the layout applies to leaves only: a plain input that
   does not require grad is used as it is). */
static tensor *cat_or_stack(tensor *const *in, const args *a, bool stack) {
    tensor *xs[8];
    for (int i = 0; i < a->n; i++) xs[i] = tensor_requires_grad(in[i]) ? arrange(in[i], a->layout) : in[i];
    return finish(a, stack ? tensor_stack(a->n, xs, a->dim) : tensor_cat(a->n, xs, a->dim));
}
static tensor *f_cat(tensor *const *in, const void *ctx) { return cat_or_stack(in, (const args *)ctx, false); }
static tensor *f_stack(tensor *const *in, const void *ctx) { return cat_or_stack(in, (const args *)ctx, true); }

#define SHAPE_ARGS(...) ((const int64_t[]){__VA_ARGS__})
static void set_v(args *a, int n, const int64_t *v) {
    a->n = n;
    for (int i = 0; i < n; i++) a->v[i] = v[i];
}

/* One case of a one-input shape op on a leaf of `shape` seen through `layout`. */
static void shape_case(int line, const char *op, test_fn_of f, args a, int layout, int ndim, const int64_t *shape, bool twice) {
    a.layout = layout;
    tensor *x = leaf_for(layout, ndim, shape, -1, 1);
    char label[160];
    snprintf(label, sizeof label, "%s dim %d dim1 %d k %lld n %d, %d-D %s input", op, a.dim, a.dim1, (long long)a.k, a.n, ndim, layout_name(layout));
    check_case(line, label, f, &a, 1, &x, twice);
}
#define SCALAR 0, NULL /* the shape of a 0-dim leaf, as a macro argument */
#define SHAPE_CASE(f, layout, shape, twice, ...) do { args a_ = {__VA_ARGS__}; shape_case(__LINE__, #f, f, a_, layout, shape, twice); } while (0)

void gradcheck_reshape(void) {
    args a = {.n = 0};
    set_v(&a, 2, SHAPE_ARGS(2, 6));
    shape_case(__LINE__, "reshape (a view)", f_reshape, a, PLAIN, TENSOR_SHAPE(3, 4), true);
    shape_case(__LINE__, "reshape (a copy)", f_reshape, a, TRANSPOSED, TENSOR_SHAPE(3, 4), true);
    shape_case(__LINE__, "reshape (a copy)", f_reshape, a, STRIDED, TENSOR_SHAPE(3, 4), false);
    set_v(&a, 3, SHAPE_ARGS(3, -1, 2));
    shape_case(__LINE__, "reshape -1 (a copy)", f_reshape, a, TRANSPOSED, TENSOR_SHAPE(2, 3, 2), false);
    shape_case(__LINE__, "reshape -1 (a copy)", f_reshape, a, EXPANDED, TENSOR_SHAPE(3, 4), false);
    set_v(&a, 1, SHAPE_ARGS(-1));
    shape_case(__LINE__, "reshape to 1-D", f_reshape, a, PLAIN, TENSOR_SHAPE(2, 3, 2), false);
    set_v(&a, 2, SHAPE_ARGS(1, 1));
    shape_case(__LINE__, "reshape of a 0-dim", f_reshape, a, PLAIN, 0, NULL, false);
    set_v(&a, 0, NULL);
    shape_case(__LINE__, "reshape to 0-dim", f_reshape, a, PLAIN, TENSOR_SHAPE(1, 1), false);
    /* a transposed tensor of a size-1 dim reshapes as a view: still one gradient */
    set_v(&a, 2, SHAPE_ARGS(5, 1));
    shape_case(__LINE__, "reshape (a view of a transposed [1, 5])", f_reshape, a, TRANSPOSED, TENSOR_SHAPE(1, 5), false);
}

void gradcheck_view(void) {
    /* a non-contiguous leaf view: [6, 4] sliced to every other column, then its dim 0 split */
    args a = {.n = 0};
    set_v(&a, 3, SHAPE_ARGS(2, 3, 2));
    shape_case(__LINE__, "view of a strided view", f_view, a, STRIDED, TENSOR_SHAPE(6, 2), true);
    /* transposed [4, 3] -> [2, 2, 3] splits the (non-contiguous) first dim */
    set_v(&a, 3, SHAPE_ARGS(2, 2, 3));
    shape_case(__LINE__, "view of a transposed view", f_view, a, TRANSPOSED, TENSOR_SHAPE(4, 3), false);
    /* every other row (a->step), then flattened: rows keep their stride */
    a.step = 2;
    set_v(&a, 3, SHAPE_ARGS(2, 1, 4));
    shape_case(__LINE__, "view of rows taken with step 2", f_view, a, PLAIN, TENSOR_SHAPE(4, 4), false);
    a.step = 0;
    set_v(&a, 2, SHAPE_ARGS(4, -1));
    shape_case(__LINE__, "view -1", f_view, a, PLAIN, TENSOR_SHAPE(2, 3, 4), false);
    set_v(&a, 1, SHAPE_ARGS(1));
    shape_case(__LINE__, "view of a 0-dim", f_view, a, PLAIN, 0, NULL, false);
}

void gradcheck_flatten(void) {
    SHAPE_CASE(f_flatten, PLAIN, TENSOR_SHAPE(2, 3, 4), true, .dim = 0, .dim1 = -1);
    SHAPE_CASE(f_flatten, TRANSPOSED, TENSOR_SHAPE(2, 3, 4), false, .dim = 1, .dim1 = 2);   /* a copy */
    SHAPE_CASE(f_flatten, TRANSPOSED, TENSOR_SHAPE(2, 3, 4), false, .dim = 0, .dim1 = 1);
    SHAPE_CASE(f_flatten, STRIDED, TENSOR_SHAPE(2, 3, 4), false, .dim = 0, .dim1 = 1);      /* a view */
    SHAPE_CASE(f_flatten, PLAIN, SCALAR, false, .dim = 0, .dim1 = -1);
}

void gradcheck_permute(void) {
    SHAPE_CASE(f_permute, PLAIN, TENSOR_SHAPE(2, 3, 4), true, .n = 3, .dims = {2, 0, 1});
    SHAPE_CASE(f_permute, PLAIN, TENSOR_SHAPE(2, 3, 4), false, .n = 3, .dims = {1, 2, 0});
    SHAPE_CASE(f_permute, TRANSPOSED, TENSOR_SHAPE(2, 3, 4), false, .n = 3, .dims = {-1, 0, -2});
    SHAPE_CASE(f_permute, STRIDED, TENSOR_SHAPE(2, 3, 2, 2), false, .n = 4, .dims = {3, 1, 0, 2});
    SHAPE_CASE(f_permute, PLAIN, SCALAR, false, .n = 0);
}

void gradcheck_transpose(void) {
    SHAPE_CASE(f_transpose, PLAIN, TENSOR_SHAPE(3, 4), true, .dim = 0, .dim1 = 1);
    SHAPE_CASE(f_transpose, PLAIN, TENSOR_SHAPE(2, 3, 4), false, .dim = -1, .dim1 = 0);
    SHAPE_CASE(f_transpose, TRANSPOSED, TENSOR_SHAPE(2, 3, 4), false, .dim = 1, .dim1 = -1);
    SHAPE_CASE(f_transpose, STRIDED, TENSOR_SHAPE(2, 3, 4), false, .dim = 2, .dim1 = 2);
    SHAPE_CASE(f_transpose, PLAIN, SCALAR, false, .dim = 0, .dim1 = -1);
}

void gradcheck_expand(void) {
    args a = {.n = 0};
    set_v(&a, 3, SHAPE_ARGS(2, 3, 4));
    shape_case(__LINE__, "expand [3, 1]", f_expand, a, PLAIN, TENSOR_SHAPE(3, 1), true);
    set_v(&a, 3, SHAPE_ARGS(2, -1, 4));
    shape_case(__LINE__, "expand [1, 3, 1] with -1", f_expand, a, PLAIN, TENSOR_SHAPE(1, 3, 1), false);
    set_v(&a, 3, SHAPE_ARGS(5, 3, 2));
    shape_case(__LINE__, "expand a transposed [3, 1]", f_expand, a, TRANSPOSED, TENSOR_SHAPE(3, 1), false);
    set_v(&a, 3, SHAPE_ARGS(2, 4, 3));
    shape_case(__LINE__, "expand a strided [1, 3]", f_expand, a, STRIDED, TENSOR_SHAPE(4, 3), false);
    set_v(&a, 2, SHAPE_ARGS(2, 3));
    shape_case(__LINE__, "expand a 0-dim", f_expand, a, PLAIN, 0, NULL, false);
    set_v(&a, 2, SHAPE_ARGS(3, 4));
    shape_case(__LINE__, "expand to the same shape", f_expand, a, PLAIN, TENSOR_SHAPE(3, 4), false);
}

void gradcheck_squeeze(void) {
    SHAPE_CASE(f_squeeze, PLAIN, TENSOR_SHAPE(3, 1, 4), true, .dim = 1);
    SHAPE_CASE(f_squeeze, PLAIN, TENSOR_SHAPE(3, 1, 4), false, .dim = -1);  /* size 4: unchanged */
    SHAPE_CASE(f_squeeze, TRANSPOSED, TENSOR_SHAPE(3, 4, 1), false, .dim = -1);
    SHAPE_CASE(f_squeeze, STRIDED, TENSOR_SHAPE(1, 3), false, .dim = 0);
    SHAPE_CASE(f_squeeze, PLAIN, SCALAR, false, .dim = 0);
}

void gradcheck_unsqueeze(void) {
    SHAPE_CASE(f_unsqueeze, PLAIN, TENSOR_SHAPE(3, 4), true, .dim = 1);
    SHAPE_CASE(f_unsqueeze, PLAIN, TENSOR_SHAPE(3, 4), false, .dim = -1);
    SHAPE_CASE(f_unsqueeze, TRANSPOSED, TENSOR_SHAPE(3, 4), false, .dim = 0);
    SHAPE_CASE(f_unsqueeze, STRIDED, TENSOR_SHAPE(3, 4), false, .dim = -2);
    SHAPE_CASE(f_unsqueeze, PLAIN, SCALAR, false, .dim = 0);
}

void gradcheck_slice(void) {
    SHAPE_CASE(f_slice, PLAIN, TENSOR_SHAPE(4, 7), true, .dim = 1, .k = -5, .end = INT64_MAX, .step = 2); /* columns 2, 4, 6 */
    SHAPE_CASE(f_slice, PLAIN, TENSOR_SHAPE(5, 3), false, .dim = 0, .k = 1, .end = 4, .step = 1);
    SHAPE_CASE(f_slice, PLAIN, TENSOR_SHAPE(5, 3), false, .dim = -2, .k = 0, .end = -1, .step = 3);
    SHAPE_CASE(f_slice, TRANSPOSED, TENSOR_SHAPE(6, 3), false, .dim = 0, .k = -4, .end = 6, .step = 2);
    SHAPE_CASE(f_slice, STRIDED, TENSOR_SHAPE(3, 5), false, .dim = -1, .k = 1, .end = 100, .step = 3);
    SHAPE_CASE(f_slice, EXPANDED, TENSOR_SHAPE(3, 4, 2), false, .dim = 1, .k = 1, .end = 3, .step = 1);
    SHAPE_CASE(f_slice, PLAIN, TENSOR_SHAPE(4, 3), false, .dim = 0, .k = 3, .end = 1, .step = 1); /* empty */
    SHAPE_CASE(f_slice, PLAIN, TENSOR_SHAPE(6), false, .dim = 0, .k = -100, .end = -2, .step = 4);
}

void gradcheck_select(void) {
    SHAPE_CASE(f_select, PLAIN, TENSOR_SHAPE(3, 4), true, .dim = 0, .k = -1);
    SHAPE_CASE(f_select, PLAIN, TENSOR_SHAPE(3, 4, 2), false, .dim = 1, .k = 2);
    SHAPE_CASE(f_select, PLAIN, TENSOR_SHAPE(3, 4, 2), false, .dim = -1, .k = -2);
    SHAPE_CASE(f_select, TRANSPOSED, TENSOR_SHAPE(3, 4), false, .dim = 1, .k = -3);
    SHAPE_CASE(f_select, STRIDED, TENSOR_SHAPE(3, 4), false, .dim = -1, .k = 3);
    SHAPE_CASE(f_select, EXPANDED, TENSOR_SHAPE(2, 4, 3), false, .dim = 1, .k = 1);
    SHAPE_CASE(f_select, PLAIN, TENSOR_SHAPE(5), false, .dim = 0, .k = -5);
}

void gradcheck_flip(void) {
    for (int d = -3; d < 3; d++) SHAPE_CASE(f_flip, PLAIN, TENSOR_SHAPE(2, 3, 4), d == 1, .dim = d);
    SHAPE_CASE(f_flip, TRANSPOSED, TENSOR_SHAPE(3, 4), false, .dim = 0);
    SHAPE_CASE(f_flip, STRIDED, TENSOR_SHAPE(3, 4), false, .dim = 1);
    SHAPE_CASE(f_flip, EXPANDED, TENSOR_SHAPE(3, 4), false, .dim = 1);
    SHAPE_CASE(f_flip, PLAIN, SCALAR, false, .dim = -1);
}

void gradcheck_repeat(void) {
    args a = {.n = 0};
    set_v(&a, 2, SHAPE_ARGS(2, 3));
    shape_case(__LINE__, "repeat [2, 3]", f_repeat, a, PLAIN, TENSOR_SHAPE(2, 3), true);
    set_v(&a, 3, SHAPE_ARGS(2, 1, 3));
    shape_case(__LINE__, "repeat with a leading dim", f_repeat, a, PLAIN, TENSOR_SHAPE(2, 3), false);
    set_v(&a, 4, SHAPE_ARGS(2, 3, 1, 2));
    shape_case(__LINE__, "repeat with two leading dims", f_repeat, a, TRANSPOSED, TENSOR_SHAPE(2, 3), false);
    set_v(&a, 2, SHAPE_ARGS(1, 1));
    shape_case(__LINE__, "repeat by ones", f_repeat, a, STRIDED, TENSOR_SHAPE(2, 3), false);
    set_v(&a, 3, SHAPE_ARGS(2, 2, 3));
    shape_case(__LINE__, "repeat an expanded input", f_repeat, a, EXPANDED, TENSOR_SHAPE(3, 4, 2), false);
    set_v(&a, 2, SHAPE_ARGS(3, 2));
    shape_case(__LINE__, "repeat a 0-dim", f_repeat, a, PLAIN, 0, NULL, false);
    set_v(&a, 5, SHAPE_ARGS(2, 1, 2, 3, 1)); /* more than TENSOR_MAX_DIMS / 2 dims: summed one dim at a time */
    shape_case(__LINE__, "repeat over 5 dims", f_repeat, a, PLAIN, TENSOR_SHAPE(2, 1, 2), true);
    set_v(&a, 3, SHAPE_ARGS(2, 0, 1));
    shape_case(__LINE__, "repeat by 0", f_repeat, a, PLAIN, TENSOR_SHAPE(2, 3), false);
}

void gradcheck_pad(void) {
    args a = {.p = 0.5};
    set_v(&a, 4, SHAPE_ARGS(1, 2, 2, 1));
    shape_case(__LINE__, "pad two dims", f_pad, a, PLAIN, TENSOR_SHAPE(2, 3, 4), true);
    set_v(&a, 4, SHAPE_ARGS(-1, 2, 1, -2)); /* negative pads crop */
    shape_case(__LINE__, "pad positive and negative", f_pad, a, PLAIN, TENSOR_SHAPE(2, 4, 5), true);
    set_v(&a, 4, SHAPE_ARGS(-1, -1, -1, 0));
    shape_case(__LINE__, "pad negative only", f_pad, a, TRANSPOSED, TENSOR_SHAPE(3, 4), false);
    set_v(&a, 6, SHAPE_ARGS(0, 1, -1, 1, 2, -1));
    shape_case(__LINE__, "pad three dims", f_pad, a, STRIDED, TENSOR_SHAPE(3, 3, 3), false);
    set_v(&a, 2, SHAPE_ARGS(2, -3));
    shape_case(__LINE__, "pad the last dim", f_pad, a, EXPANDED, TENSOR_SHAPE(2, 4, 4), false);
    set_v(&a, 2, SHAPE_ARGS(-2, -2));
    shape_case(__LINE__, "pad cropping all", f_pad, a, PLAIN, TENSOR_SHAPE(2, 4), false);
    set_v(&a, 0, NULL);
    shape_case(__LINE__, "pad nothing", f_pad, a, PLAIN, TENSOR_SHAPE(2, 3), false);
}

static void triangle_sweep(int line, const char *name, test_fn_of f) {
    for (int diag = -1; diag <= 1; diag++) {
        args a = {.k = diag};
        shape_case(line, name, f, a, PLAIN, TENSOR_SHAPE(4, 5), diag == 0);
        shape_case(line, name, f, a, PLAIN, TENSOR_SHAPE(2, 5, 3), false);
        shape_case(line, name, f, a, TRANSPOSED, TENSOR_SHAPE(4, 3), false);
        shape_case(line, name, f, a, STRIDED, TENSOR_SHAPE(2, 3, 4), false);
        shape_case(line, name, f, a, EXPANDED, TENSOR_SHAPE(2, 4, 3), false);
    }
    args far = {.k = -7};
    shape_case(line, name, f, far, PLAIN, TENSOR_SHAPE(3, 4), false);
    far.k = 9;
    shape_case(line, name, f, far, PLAIN, TENSOR_SHAPE(3, 4), false);
}
void gradcheck_tril(void) { triangle_sweep(__LINE__, "tril", f_tril); }
void gradcheck_triu(void) { triangle_sweep(__LINE__, "triu", f_triu); }

/* cat: 2 inputs along a middle dim, and 6 (more than the call holds inline: all must get their
   gradient), one of them plain data that does not require grad, one an empty 1-D leaf (skipped). */
void gradcheck_cat(void) {
    for (int layout = PLAIN; layout <= STRIDED; layout++) {
        tensor *in2[2] = {leaf_for(layout, TENSOR_SHAPE(2, 3, 4), -1, 1), leaf_for(layout, TENSOR_SHAPE(2, 1, 4), -1, 1)};
        args a = {.n = 2, .dim = 1, .layout = layout};
        char label[64];
        snprintf(label, sizeof label, "cat 2 along dim 1, %s", layout_name(layout));
        check_case(__LINE__, label, f_cat, &a, 2, in2, layout == PLAIN);
    }
    const int64_t sizes[6] = {2, 1, 3, 1, 2, 2};
    tensor *in6[6];
    for (int i = 0; i < 6; i++) in6[i] = test_leaf(TENSOR_SHAPE(3, sizes[i], 2), -1, 1);
    tensor_set_requires_grad(in6[2], false);
    args a = {.n = 6, .dim = -2};
    check_case(__LINE__, "cat 6 along dim -2", f_cat, &a, 6, in6, true);
    a.dim = 0;
    tensor *rows[5];
    for (int i = 0; i < 5; i++) rows[i] = test_leaf(TENSOR_SHAPE(i % 2 + 1, 3), -1, 1);
    rows[1] = tensor_zeros(TENSOR_SHAPE(0), TENSOR_F64); /* 1-D empty: skipped by cat */
    rows[3] = tensor_set_requires_grad(tensor_zeros(TENSOR_SHAPE(0, 3), TENSOR_F64), true);
    a.n = 5;
    check_case(__LINE__, "cat 5 along dim 0 with empty inputs", f_cat, &a, 5, rows, false);
    tensor *vecs[3] = {test_leaf(TENSOR_SHAPE(3), -1, 1), test_leaf(TENSOR_SHAPE(0), -1, 1), test_leaf(TENSOR_SHAPE(2), -1, 1)};
    a.n = 3;
    check_case(__LINE__, "cat 3 1-D inputs", f_cat, &a, 3, vecs, false);
}

void gradcheck_stack(void) {
    for (int d = -3; d < 3; d++) {
        tensor *in3[3] = {test_leaf(TENSOR_SHAPE(2, 3), -1, 1), test_leaf(TENSOR_SHAPE(2, 3), -1, 1), test_leaf(TENSOR_SHAPE(2, 3), -1, 1)};
        args a = {.n = 3, .dim = d, .layout = d == 1 ? STRIDED : d == 2 ? TRANSPOSED : PLAIN};
        char label[64];
        snprintf(label, sizeof label, "stack 3 along dim %d", d);
        check_case(__LINE__, label, f_stack, &a, 3, in3, d == 1);
    }
    tensor *in6[6];
    for (int i = 0; i < 6; i++) in6[i] = test_leaf(TENSOR_SHAPE(2, 2), -1, 1);
    tensor_set_requires_grad(in6[4], false);
    args a = {.n = 6, .dim = 1};
    check_case(__LINE__, "stack 6 along dim 1", f_stack, &a, 6, in6, false);
    tensor *s2[2] = {test_leaf(0, NULL, -1, 1), test_leaf(0, NULL, -1, 1)};
    a.n = 2;
    a.dim = 0;
    check_case(__LINE__, "stack 0-dim inputs", f_stack, &a, 2, s2, false);
}

/* ---- indexing ---- */

static tensor *f_gather(tensor *const *in, const void *ctx) {
    const args *a = (const args *)ctx;
    return finish(a, tensor_gather(arrange(in[0], a->layout), a->dim, index_of(a, in[0])));
}
static tensor *f_scatter_add(tensor *const *in, const void *ctx) {
    const args *a = (const args *)ctx;
    return finish(a, tensor_scatter_add(arrange(in[0], a->layout), a->dim, index_of(a, in[0]), arrange(in[1], a->layout)));
}
static tensor *f_index_select(tensor *const *in, const void *ctx) {
    const args *a = (const args *)ctx;
    return finish(a, tensor_index_select(arrange(in[0], a->layout), a->dim, index_of(a, in[0])));
}
static tensor *f_masked_fill(tensor *const *in, const void *ctx) {
    const args *a = (const args *)ctx;
    tensor *mask = tensor_to_dtype(index_of(a, in[0]), TENSOR_BOOL);
    return finish(a, tensor_masked_fill(arrange(in[0], a->layout), mask, a->p));
}

static void set_index(args *a, int ndim, const int64_t *shape, const int64_t *values) {
    a->idx_ndim = ndim;
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) { a->idx_shape[i] = shape[i]; n *= shape[i]; }
    for (int64_t i = 0; i < n; i++) a->idx[i] = values[i];
}

void gradcheck_gather(void) {
    args a = {.dim = 1};
    set_index(&a, TENSOR_SHAPE(3, 4), SHAPE_ARGS(0, 2, 2, 1,   3, 3, 3, 3,   1, 0, 4, 0)); /* repeats */
    tensor *x = test_leaf(TENSOR_SHAPE(3, 5), -1, 1);
    check_case(__LINE__, "gather dim 1", f_gather, &a, 1, &x, true);
    a.dim = -2;
    set_index(&a, TENSOR_SHAPE(2, 3), SHAPE_ARGS(2, 0, 2,   2, 1, 1)); /* smaller than t in dim 1 */
    check_case(__LINE__, "gather dim -2", f_gather, &a, 1, &x, false);
    a.layout = TRANSPOSED;
    x = leaf_for(TRANSPOSED, TENSOR_SHAPE(5, 3), -1, 1);
    check_case(__LINE__, "gather dim -2 of a transposed input", f_gather, &a, 1, &x, false);
    a.layout = STRIDED;
    a.dim = 1;
    set_index(&a, TENSOR_SHAPE(2, 2, 2), SHAPE_ARGS(0, 1,   2, 2,   1, 1,   0, 2));
    x = leaf_for(STRIDED, TENSOR_SHAPE(2, 3, 2), -1, 1);
    check_case(__LINE__, "gather 3-D, strided", f_gather, &a, 1, &x, false);
    a.layout = PLAIN;
    a.dim = 0;
    set_index(&a, 0, NULL, SHAPE_ARGS(0));
    x = test_leaf(0, NULL, -1, 1);
    check_case(__LINE__, "gather of a 0-dim", f_gather, &a, 1, &x, false);
    x = test_leaf(TENSOR_SHAPE(4), -1, 1);
    set_index(&a, 0, NULL, SHAPE_ARGS(3)); /* a 0-dim index into a 1-D input */
    check_case(__LINE__, "gather 1-D with a 0-dim index", f_gather, &a, 1, &x, true);
}

void gradcheck_scatter_add(void) {
    args a = {.dim = 1};
    set_index(&a, TENSOR_SHAPE(3, 2), SHAPE_ARGS(0, 0,   4, 1,   2, 4)); /* repeated index in row 0 */
    tensor *ts[2] = {test_leaf(TENSOR_SHAPE(3, 5), -1, 1), test_leaf(TENSOR_SHAPE(3, 2), -1, 1)};
    check_case(__LINE__, "scatter_add dim 1", f_scatter_add, &a, 2, ts, true);
    /* src larger than index: only its part under index reaches the output */
    tensor *big[2] = {test_leaf(TENSOR_SHAPE(3, 5), -1, 1), test_leaf(TENSOR_SHAPE(4, 3), -1, 1)};
    check_case(__LINE__, "scatter_add with src larger than index", f_scatter_add, &a, 2, big, true);
    a.dim = 0;
    set_index(&a, TENSOR_SHAPE(4, 3), SHAPE_ARGS(2, 0, 1,   2, 0, 1,   0, 0, 0,   1, 2, 2));
    tensor *tr[2] = {leaf_for(TRANSPOSED, TENSOR_SHAPE(3, 3), -1, 1), leaf_for(TRANSPOSED, TENSOR_SHAPE(4, 3), -1, 1)};
    a.layout = TRANSPOSED;
    check_case(__LINE__, "scatter_add dim 0, transposed", f_scatter_add, &a, 2, tr, false);
    /* only one of the two requires grad */
    a.layout = PLAIN;
    a.dim = -1;
    set_index(&a, TENSOR_SHAPE(2, 2), SHAPE_ARGS(1, 1,   0, 2));
    tensor *only_t[2] = {test_leaf(TENSOR_SHAPE(2, 3), -1, 1), tensor_ones(TENSOR_SHAPE(2, 2), TENSOR_F64)};
    check_case(__LINE__, "scatter_add, src without grad", f_scatter_add, &a, 2, only_t, false);
    tensor *only_src[2] = {tensor_ones(TENSOR_SHAPE(2, 3), TENSOR_F64), test_leaf(TENSOR_SHAPE(2, 2), -1, 1)};
    check_case(__LINE__, "scatter_add, t without grad", f_scatter_add, &a, 2, only_src, false);
    /* 0-dim index and src (each counts as [1]) into a 1-D t; and a 1-D src larger than a 0-dim index */
    a.dim = 0;
    set_index(&a, 0, NULL, SHAPE_ARGS(2));
    tensor *scalars[2] = {test_leaf(TENSOR_SHAPE(4), -1, 1), test_leaf(0, NULL, -1, 1)};
    check_case(__LINE__, "scatter_add, 0-dim index and src", f_scatter_add, &a, 2, scalars, true);
    tensor *vec[2] = {test_leaf(TENSOR_SHAPE(4), -1, 1), test_leaf(TENSOR_SHAPE(3), -1, 1)};
    check_case(__LINE__, "scatter_add, 0-dim index, src [3]", f_scatter_add, &a, 2, vec, true);
    set_index(&a, TENSOR_SHAPE(0), NULL); /* empty index: src unused */
    check_case(__LINE__, "scatter_add, empty index", f_scatter_add, &a, 2, vec, false);
    tensor *s0[2] = {test_leaf(0, NULL, -1, 1), test_leaf(0, NULL, -1, 1)};
    set_index(&a, 0, NULL, SHAPE_ARGS(0));
    check_case(__LINE__, "scatter_add, all 0-dim", f_scatter_add, &a, 2, s0, false);
}

/* scatter_add's src gradient where src is larger than index: g at index, 0 elsewhere. */
TEST(grad_scatter_add_src_larger_than_index) {
    tensor *t = test_leaf(TENSOR_SHAPE(2, 3), -1, 1), *src = test_leaf(TENSOR_SHAPE(3, 3), -1, 1);
    tensor *index = tensor_from_data(SHAPE_ARGS(2, 2,   0, 1), TENSOR_SHAPE(2, 2), TENSOR_I64);
    double wv[6] = {1, 2, 3, 4, 5, 6};
    tensor *w = tensor_from_data(wv, TENSOR_SHAPE(2, 3), TENSOR_F64);
    CHECK(tensor_backward(tensor_sum_all(tensor_mul(tensor_scatter_add(t, 1, index, src), w))) == 0);
    CHECK_VALUES(tensor_grad(t), wv, 6, 0, 0);
    CHECK_SHAPE(tensor_grad(src), TENSOR_SHAPE(3, 3));
    double gs[9] = {3, 3, 0,   4, 5, 0,   0, 0, 0};
    CHECK_VALUES(tensor_grad(src), gs, 9, 0, 0);
}

void gradcheck_index_select(void) {
    args a = {.dim = 0};
    set_index(&a, TENSOR_SHAPE(5), SHAPE_ARGS(2, 0, 2, 2, 3));
    tensor *x = test_leaf(TENSOR_SHAPE(4, 3), -1, 1);
    check_case(__LINE__, "index_select dim 0, repeats", f_index_select, &a, 1, &x, true);
    a.dim = -1;
    set_index(&a, TENSOR_SHAPE(4), SHAPE_ARGS(1, 1, 0, 1));
    check_case(__LINE__, "index_select dim -1, repeats", f_index_select, &a, 1, &x, false);
    a.layout = TRANSPOSED;
    x = leaf_for(TRANSPOSED, TENSOR_SHAPE(2, 4, 3), -1, 1);
    a.dim = 1;
    check_case(__LINE__, "index_select dim 1 of a transposed 3-D", f_index_select, &a, 1, &x, false);
    a.layout = EXPANDED;
    x = leaf_for(EXPANDED, TENSOR_SHAPE(2, 4, 3), -1, 1);
    check_case(__LINE__, "index_select over the expanded dim", f_index_select, &a, 1, &x, false);
    a.layout = PLAIN;
    a.dim = 0;
    set_index(&a, 0, NULL, SHAPE_ARGS(1)); /* a 0-dim index keeps the dim (size 1) */
    x = test_leaf(TENSOR_SHAPE(3, 2), -1, 1);
    check_case(__LINE__, "index_select with a 0-dim index", f_index_select, &a, 1, &x, false);
    set_index(&a, TENSOR_SHAPE(1), SHAPE_ARGS(0));
    x = test_leaf(0, NULL, -1, 1);
    check_case(__LINE__, "index_select of a 0-dim", f_index_select, &a, 1, &x, false);
    set_index(&a, TENSOR_SHAPE(0), NULL);
    x = test_leaf(TENSOR_SHAPE(3, 2), -1, 1);
    check_case(__LINE__, "index_select with an empty index", f_index_select, &a, 1, &x, false);
}

void gradcheck_masked_fill(void) {
    args a = {.p = 2.5};
    set_index(&a, TENSOR_SHAPE(3, 4), SHAPE_ARGS(1, 0, 0, 1,   0, 0, 0, 0,   1, 1, 0, 1));
    tensor *x = test_leaf(TENSOR_SHAPE(3, 4), -1, 1);
    check_case(__LINE__, "masked_fill", f_masked_fill, &a, 1, &x, true);
    set_index(&a, TENSOR_SHAPE(3, 1), SHAPE_ARGS(0, 1, 0)); /* broadcast mask */
    a.layout = TRANSPOSED;
    x = leaf_for(TRANSPOSED, TENSOR_SHAPE(3, 4), -1, 1);
    check_case(__LINE__, "masked_fill, broadcast mask, transposed", f_masked_fill, &a, 1, &x, false);
    set_index(&a, TENSOR_SHAPE(4), SHAPE_ARGS(0, 1, 1, 0));
    a.layout = EXPANDED;
    x = leaf_for(EXPANDED, TENSOR_SHAPE(2, 4, 4), -1, 1);
    check_case(__LINE__, "masked_fill, expanded", f_masked_fill, &a, 1, &x, false);
    set_index(&a, 0, NULL, SHAPE_ARGS(1));
    a.layout = PLAIN;
    x = test_leaf(TENSOR_SHAPE(2, 2), -1, 1);
    check_case(__LINE__, "masked_fill, 0-dim mask (all)", f_masked_fill, &a, 1, &x, false);
}

/* ---- the engine through views ---- */

/* A chain of views (slice with step, transpose, select, negative index) back into one leaf: the
   gradient lands on exactly the elements the chain reads. */
TEST(grad_through_a_chain_of_views_reaches_the_leaf) {
    tensor *x = test_leaf(TENSOR_SHAPE(4, 6), -1, 1);
    /* x[:, ::2] -> [4, 3] (columns 0, 2, 4), transposed -> [3, 4], rows 1..3 of x -> [3, 3], the last
       column of ::2 (index -1) -> [1, 3]: x[1:4, 4] */
    tensor *v = tensor_slice(tensor_slice(tensor_transpose(tensor_slice(x, 1, 0, 6, 2), 0, 1), 1, 1, 4, 1), 0, -1, 3, 1);
    CHECK_SHAPE(v, TENSOR_SHAPE(1, 3));
    double wv[3] = {1, -2, 3};
    tensor *w = tensor_from_data(wv, TENSOR_SHAPE(1, 3), TENSOR_F64);
    CHECK(tensor_backward(tensor_sum_all(tensor_mul(v, w))) == 0);
    double expect[24] = {0};
    for (int r = 1; r < 4; r++) expect[r * 6 + 4] = wv[r - 1];
    CHECK_VALUES(tensor_grad(x), expect, 24, 0, 0);
    /* a second backward through another chain accumulates into the same .grad:
       transpose -> [6, 4], select dim -1 index 2 -> x[2, :], select index -1 -> x[2, 5] */
    tensor *u = tensor_select(tensor_select(tensor_transpose(x, 0, 1), -1, 2), 0, -1);
    CHECK(tensor_backward(tensor_mul_scalar(u, 10)) == 0);
    expect[2 * 6 + 5] += 10;
    CHECK_VALUES(tensor_grad(x), expect, 24, 0, 0);
}

static tensor *f_view_chain(tensor *const *in, const void *ctx) {
    const args *s = (const args *)ctx;
    tensor *x = in[0];
    tensor *a = tensor_select(tensor_transpose(tensor_slice(x, 1, 1, 6, 2), 0, 1), 1, -2);      /* x[-2, 1::2]: [3] */
    tensor *b = tensor_flip(tensor_slice(tensor_select(x, 0, 0), 0, 0, 3, 1), 0);               /* x[0, 2::-1]: [3] */
    tensor *c = tensor_sum(tensor_permute(tensor_unsqueeze(tensor_slice(x, 1, 3, 6, 1), 0), 3, (const int[]){1, 0, 2}), 1, false); /* x[:, 3:] */
    return finish(s, tensor_mul(tensor_mul(a, b), c));
}
TEST(grad_view_chains_gradcheck) {
    tensor *x = test_leaf(TENSOR_SHAPE(4, 6), -1, 1);
    args none = {.n = 0};
    CHECK_SHAPE(f_view_chain(&x, &none), TENSOR_SHAPE(4, 3));
    check_case(__LINE__, "slice/select/transpose chains", f_view_chain, &none, 1, &x, true);
}

/* A leaf used twice, directly and through a strided view (x * x[::2], broadcast): both paths add
   into its .grad. */
TEST(grad_leaf_used_twice_through_a_view_accumulates_both_paths) {
    double xv[6] = {1, 2, 3, 4, 5, 6}, wv[6] = {0.5, -1, 2, 3, 0.25, -2};
    tensor *x = leaf_of(TENSOR_SHAPE(2, 3), xv);
    tensor *w = tensor_from_data(wv, TENSOR_SHAPE(2, 3), TENSOR_F64);
    tensor *y = tensor_mul(x, tensor_slice(x, 0, 0, 2, 2)); /* [2, 3] * [1, 3] */
    CHECK(tensor_backward(tensor_sum_all(tensor_mul(y, w))) == 0);
    double expect[6];
    for (int j = 0; j < 3; j++) {
        /* L = sum_ij w_ij x_ij x_0j: dL/dx_0j = w_0j x_0j + sum_i w_ij x_ij, dL/dx_1j = w_1j x_0j */
        expect[j] = wv[j] * xv[j] + wv[j] * xv[j] + wv[3 + j] * xv[3 + j];
        expect[3 + j] = wv[3 + j] * xv[j];
    }
    CHECK_VALUES(tensor_grad(x), expect, 6, 1e-14, 1e-14);
    /* the same through tensor_autograd_grad and a 1-D leaf: x[::2] * x[1::2] + x[:3] */
    double zv[6] = {1, -2, 3, 0.5, 2, 4};
    tensor *z = leaf_of(TENSOR_SHAPE(6), zv);
    tensor *out = tensor_add(tensor_mul(tensor_slice(z, 0, 0, 6, 2), tensor_slice(z, 0, 1, 6, 2)), tensor_slice(z, 0, 0, 3, 1));
    tensor *L = tensor_sum_all(out), *g = NULL;
    CHECK(tensor_autograd_grad(1, &L, NULL, 1, &z, &g, false) == 0);
    double ez[6] = {zv[1] + 1, zv[0] + 1, zv[3] + 1, zv[2], zv[5], zv[4]};
    CHECK_VALUES(g, ez, 6, 1e-14, 1e-14);
    CHECK(tensor_grad(z) == NULL); /* autograd_grad does not accumulate */
}

/* The 6 inputs of a cat each get their own slice of the gradient (the engine's input array beyond
   the inline ones), through tensor_backward. */
TEST(grad_cat_of_many_inputs_reaches_each) {
    tensor *in[7];
    for (int i = 0; i < 7; i++) in[i] = tensor_set_requires_grad(tensor_full(TENSOR_SHAPE(2, 1), (double)i, TENSOR_F64), i != 5);
    tensor *y = tensor_cat(7, in, 1);
    double wv[14];
    for (int i = 0; i < 14; i++) wv[i] = i + 1;
    CHECK(tensor_backward(tensor_sum_all(tensor_mul(y, tensor_from_data(wv, TENSOR_SHAPE(2, 7), TENSOR_F64)))) == 0);
    for (int i = 0; i < 7; i++) {
        if (i == 5) { CHECK(tensor_grad(in[i]) == NULL); continue; }
        double e[2] = {wv[i], wv[7 + i]};
        CHECK_VALUES(tensor_grad(in[i]), e, 2, 0, 0);
    }
}
