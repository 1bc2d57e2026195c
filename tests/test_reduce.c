/* Reductions: every op against plain double loops over the row-major values of its input. */
#include "test.h"

enum { R_SUM, R_MEAN, R_PROD, R_MAX, R_MIN, R_ARGMAX, R_ARGMIN, R_VAR, R_STD, R_LSE, R_NORM, R_ALL, R_ANY, R_KINDS };
static const char *const kind_names[R_KINDS] = {"sum", "mean", "prod", "max", "min", "argmax", "argmin", "var", "std", "logsumexp", "norm", "all", "any"};
enum { FORM_DIM, FORM_DIMS, FORM_ALL }; /* tensor_sum(t, dim), tensor_sum_dims(t, n, dims), tensor_sum_all(t) */

static bool is_float(tensor_dtype d) { return d == TENSOR_F32 || d == TENSOR_F64 || d == TENSOR_F16 || d == TENSOR_BF16; }

/* ---- the reference ---- */

/* The expected outputs (row-major over the kept dims) of reducing x (row-major, shape) over the
   dims in mask. param: the correction of var/std, the p of norm. Caller frees. */
static double *ref_reduce(int kind, int ndim, const int64_t *shape, const double *x, unsigned mask, double param, int64_t *nout_p) {
    int64_t numel = 1, nout = 1, rn = 1;
    for (int d = 0; d < ndim; d++) {
        numel *= shape[d];
        if (mask >> d & 1) rn *= shape[d];
        else nout *= shape[d];
    }
    size_t cells = (size_t)(nout ? nout : 1);
    double *out = (double *)calloc(cells, sizeof(double)), *a = (double *)calloc(cells, sizeof(double)), *b = (double *)calloc(cells, sizeof(double));
    int64_t *seen = (int64_t *)calloc(cells, sizeof(int64_t)), *best = (int64_t *)calloc(cells, sizeof(int64_t));
    for (int64_t o = 0; o < nout; o++) a[o] = (kind == R_PROD || kind == R_ALL) ? 1 : 0;
    for (int pass = 0; pass < 2; pass++) {
        int64_t idx[8] = {0};
        for (int64_t o = 0; o < nout; o++) seen[o] = 0;
        for (int64_t i = 0; i < numel; i++) {
            int64_t o = 0;
            for (int d = 0; d < ndim; d++) if (!(mask >> d & 1)) o = o * shape[d] + idx[d];
            double v = x[i];
            int64_t j = seen[o]++;
            if (pass == 0) {
                switch (kind) {
                case R_SUM: case R_MEAN: case R_VAR: case R_STD: a[o] += v; break;
                case R_PROD: a[o] *= v; break;
                case R_MAX: case R_ARGMAX:
                    if (j == 0 || (a[o] == a[o] && (v != v || v > a[o]))) { a[o] = v; best[o] = j; }
                    break;
                case R_MIN: case R_ARGMIN:
                    if (j == 0 || (a[o] == a[o] && (v != v || v < a[o]))) { a[o] = v; best[o] = j; }
                    break;
                case R_LSE: a[o] += exp(v); break;
                case R_NORM:
                    if (param == INFINITY) a[o] = j == 0 ? fabs(v) : (a[o] != a[o] || v != v) ? NAN : fmax(a[o], fabs(v));
                    else if (param == -INFINITY) a[o] = j == 0 ? fabs(v) : (a[o] != a[o] || v != v) ? NAN : fmin(a[o], fabs(v));
                    else if (param == 0) a[o] += v != 0;
                    else a[o] += pow(fabs(v), param);
                    break;
                case R_ALL: if (v == 0) a[o] = 0; break;
                case R_ANY: if (v != 0) a[o] = 1; break;
                }
            } else if (kind == R_VAR || kind == R_STD) {
                double m = a[o] / (double)rn;
                b[o] += (v - m) * (v - m);
            }
            for (int d = ndim - 1; d >= 0; d--) { if (++idx[d] < shape[d]) break; idx[d] = 0; }
        }
    }
    for (int64_t o = 0; o < nout; o++) {
        switch (kind) {
        case R_MEAN: out[o] = a[o] / (double)rn; break;
        case R_ARGMAX: case R_ARGMIN: out[o] = (double)best[o]; break;
        case R_VAR: case R_STD: {
            double dof = (double)rn - param;
            out[o] = b[o] / (dof > 0 ? dof : 0);
            if (kind == R_STD) out[o] = sqrt(out[o]);
            break;
        }
        case R_LSE: out[o] = log(a[o]); break;
        case R_NORM: out[o] = (isinf(param) || param == 0) ? a[o] : pow(a[o], 1.0 / param); break;
        default: out[o] = a[o]; break;
        }
    }
    free(a); free(b); free(seen); free(best);
    *nout_p = nout;
    return out;
}

static tensor_dtype expected_dtype(int kind, tensor_dtype in) {
    switch (kind) {
    case R_SUM: case R_PROD: return is_float(in) ? in : TENSOR_I64;
    case R_ARGMAX: case R_ARGMIN: return TENSOR_I64;
    case R_ALL: case R_ANY: return TENSOR_BOOL;
    default: return in;
    }
}

static tensor *apply(int kind, int form, tensor *t, int n, const int *dims, bool keepdim, double param) {
    if (form == FORM_ALL) {
        switch (kind) {
        case R_SUM: return tensor_sum_all(t);
        case R_MEAN: return tensor_mean_all(t);
        case R_MAX: return tensor_max_all(t);
        case R_MIN: return tensor_min_all(t);
        case R_ALL: return tensor_all(t);
        case R_ANY: return tensor_any(t);
        default: return NULL;
        }
    }
    if (form == FORM_DIMS) return kind == R_SUM ? tensor_sum_dims(t, n, dims, keepdim) : tensor_mean_dims(t, n, dims, keepdim);
    int dim = dims[0];
    switch (kind) {
    case R_SUM: return tensor_sum(t, dim, keepdim);
    case R_MEAN: return tensor_mean(t, dim, keepdim);
    case R_PROD: return tensor_prod(t, dim, keepdim);
    case R_MAX: return tensor_max(t, dim, keepdim);
    case R_MIN: return tensor_min(t, dim, keepdim);
    case R_ARGMAX: return tensor_argmax(t, dim, keepdim);
    case R_ARGMIN: return tensor_argmin(t, dim, keepdim);
    case R_VAR: return tensor_var(t, dim, (int64_t)param, keepdim);
    case R_STD: return tensor_std(t, dim, (int64_t)param, keepdim);
    case R_LSE: return tensor_logsumexp(t, dim, keepdim);
    case R_NORM: return tensor_norm(t, param, dim, keepdim);
    default: return NULL;
    }
}

/* Runs one reduction of t and checks its shape, dtype and values against ref_reduce. */
static void check_reduce_at(int line, int kind, int form, tensor *t, int n, const int *dims, bool keepdim, double param) {
    if (!t) { test_fail(__FILE__, line, "input is NULL (%s)", tensor_last_error() ? tensor_last_error() : "?"); return; }
    int nd = tensor_ndim(t);
    const int64_t *shape = tensor_shape(t);
    unsigned mask = 0;
    if (form == FORM_ALL || (form == FORM_DIMS && n == 0)) mask = (1u << nd) - 1;
    else if (nd > 0) for (int i = 0; i < n; i++) mask |= 1u << (dims[i] < 0 ? dims[i] + nd : dims[i]);
    if (form == FORM_ALL) keepdim = false;
    double *x = test_values(t);
    int64_t nout;
    double *want = ref_reduce(kind, nd, shape, x, mask, param, &nout);
    tensor_clear_error();
    tensor *r = apply(kind, form, t, n, dims, keepdim, param);
    if (!r) {
        test_fail(__FILE__, line, "%s failed: %s", kind_names[kind], tensor_last_error() ? tensor_last_error() : "no message");
    } else {
        int on = 0;
        int64_t oshape[8];
        for (int d = 0; d < nd; d++) {
            if (!(mask >> d & 1)) oshape[on++] = shape[d];
            else if (keepdim) oshape[on++] = 1;
        }
        test_check_shape(__FILE__, line, r, on, oshape);
        tensor_dtype want_dt = expected_dtype(kind, tensor_get_dtype(t));
        if (tensor_get_dtype(r) != want_dt)
            test_fail(__FILE__, line, "%s of %s gave dtype %s, expected %s", kind_names[kind], tensor_dtype_name(tensor_get_dtype(t)),
                      tensor_dtype_name(tensor_get_dtype(r)), tensor_dtype_name(want_dt));
        double tol = test_tol(want_dt);
        test_check_values(__FILE__, line, r, want, nout, tol, tol);
    }
    tensor_free(r);
    free(want);
    free(x);
}
#define CHECK_REDUCE(kind, t, dim, keepdim, param) do { int d_ = (dim); check_reduce_at(__LINE__, kind, FORM_DIM, t, 1, &d_, keepdim, param); } while (0)
#define CHECK_REDUCE_DIMS(kind, t, n, dims, keepdim) check_reduce_at(__LINE__, kind, FORM_DIMS, t, n, dims, keepdim, 0)
#define CHECK_REDUCE_ALL(kind, t) check_reduce_at(__LINE__, kind, FORM_ALL, t, 0, NULL, false, 0)

/* A tensor of random values: floats in [lo, hi), integers in [lo, hi], bool 0/1. */
static tensor *random_tensor(tensor_dtype dt, int ndim, const int64_t *shape, double lo, double hi) {
    int64_t n = 1;
    for (int d = 0; d < ndim; d++) n *= shape[d];
    double *v = (double *)malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) {
        if (is_float(dt)) v[i] = test_uniform(lo, hi);
        else if (dt == TENSOR_BOOL) v[i] = test_uniform(0, 1) < 0.5;
        else v[i] = floor(test_uniform(lo, hi + 1));
    }
    tensor *t = test_tensor(dt, ndim, shape, v);
    free(v);
    return t;
}

/* Every op that takes a dim, over every dim (negative too) with keepdim on and off. */
static void check_all_dims(int kind, tensor *t, double param) {
    int nd = tensor_ndim(t);
    for (int dim = -nd; dim < nd; dim++)
        for (int keep = 0; keep < 2; keep++) CHECK_REDUCE(kind, t, dim, keep != 0, param);
}

static const tensor_dtype float_dtypes[4] = {TENSOR_F32, TENSOR_F64, TENSOR_F16, TENSOR_BF16};
static const tensor_dtype int_dtypes[4] = {TENSOR_I32, TENSOR_I64, TENSOR_U8, TENSOR_BOOL};
static const double norm_orders[7] = {2, 1, 0, 3, 0.5, INFINITY, -INFINITY};

/* ---- forward values ---- */

TEST(reduce_float_ops_every_dim_and_dtype) {
    for (int di = 0; di < 4; di++) {
        tensor_dtype dt = float_dtypes[di];
        tensor *t3 = random_tensor(dt, TENSOR_SHAPE(3, 4, 5), -2, 2);
        tensor *t1 = random_tensor(dt, TENSOR_SHAPE(7), -2, 2);
        for (int kind = R_SUM; kind <= R_LSE; kind++) {
            double param = (kind == R_VAR || kind == R_STD) ? 1 : 0;
            check_all_dims(kind, t3, param);
            check_all_dims(kind, t1, param);
        }
        for (int p = 0; p < 7; p++) { check_all_dims(R_NORM, t3, norm_orders[p]); check_all_dims(R_NORM, t1, norm_orders[p]); }
        for (int corr = 0; corr <= 2; corr++) { check_all_dims(R_VAR, t3, corr); check_all_dims(R_STD, t3, corr); }
    }
}

TEST(reduce_int_and_bool_ops_every_dim) {
    for (int di = 0; di < 4; di++) {
        tensor_dtype dt = int_dtypes[di];
        double lo = dt == TENSOR_U8 ? 0 : -3, hi = 3;
        tensor *t3 = random_tensor(dt, TENSOR_SHAPE(3, 4, 5), lo, hi);
        tensor *t1 = random_tensor(dt, TENSOR_SHAPE(9), lo, hi);
        int kinds[6] = {R_SUM, R_PROD, R_MAX, R_MIN, R_ARGMAX, R_ARGMIN};
        for (int k = 0; k < 6; k++) { check_all_dims(kinds[k], t3, 0); check_all_dims(kinds[k], t1, 0); }
        CHECK_REDUCE_ALL(R_SUM, t3);
        CHECK_REDUCE_ALL(R_MAX, t3);
        CHECK_REDUCE_ALL(R_MIN, t3);
        CHECK_REDUCE_ALL(R_ALL, t3);
        CHECK_REDUCE_ALL(R_ANY, t3);
    }
}

TEST(reduce_all_forms_every_dtype) {
    for (int di = 0; di < 4; di++) {
        tensor *t = random_tensor(float_dtypes[di], TENSOR_SHAPE(4, 6), -2, 2);
        int kinds[6] = {R_SUM, R_MEAN, R_MAX, R_MIN, R_ALL, R_ANY};
        for (int k = 0; k < 6; k++) CHECK_REDUCE_ALL(kinds[k], t);
        tensor *one = random_tensor(float_dtypes[di], TENSOR_SHAPE(1, 1, 1), -2, 2);
        for (int k = 0; k < 6; k++) CHECK_REDUCE_ALL(kinds[k], one);
    }
}

TEST(reduce_sum_dims_and_mean_dims) {
    tensor *t = random_tensor(TENSOR_F32, TENSOR_SHAPE(2, 3, 4, 5), -2, 2);
    tensor *ti = random_tensor(TENSOR_I32, TENSOR_SHAPE(2, 3, 4, 5), -5, 5);
    const int lists[][3] = {{0, 2, 0}, {-1, 0, 0}, {1, 0, 0}, {3, 1, 0}, {0, 1, 2}, {-4, -2, 3}, {2, 0, 1}};
    const int counts[] = {2, 2, 1, 2, 3, 3, 3};
    for (int l = 0; l < 7; l++)
        for (int keep = 0; keep < 2; keep++) {
            CHECK_REDUCE_DIMS(R_SUM, t, counts[l], lists[l], keep != 0);
            CHECK_REDUCE_DIMS(R_MEAN, t, counts[l], lists[l], keep != 0);
            CHECK_REDUCE_DIMS(R_SUM, ti, counts[l], lists[l], keep != 0);
        }
    /* n = 0: every dim, as torch.sum(t, dim=[]) */
    CHECK_REDUCE_DIMS(R_SUM, t, 0, NULL, false);
    CHECK_REDUCE_DIMS(R_MEAN, t, 0, NULL, true);
    const int all4[4] = {0, 1, 2, 3};
    CHECK_REDUCE_DIMS(R_SUM, t, 4, all4, true);
    tensor *k = tensor_sum_dims(t, 0, NULL, true);
    CHECK_SHAPE(k, 4, (const int64_t[]){1, 1, 1, 1});
    for (int di = 1; di < 4; di++) {
        tensor *u = random_tensor(float_dtypes[di], TENSOR_SHAPE(3, 4, 5), -2, 2);
        CHECK_REDUCE_DIMS(R_SUM, u, 2, lists[0], false);
        CHECK_REDUCE_DIMS(R_MEAN, u, 2, lists[1], true);
    }
}

/* Non-contiguous inputs: transposed, sliced with a step, expanded by broadcasting. */
static void check_layouts(tensor_dtype dt) {
    tensor *base = random_tensor(dt, TENSOR_SHAPE(4, 6, 5), -2, 2);
    tensor *views[4];
    views[0] = tensor_transpose(base, 0, 2);                  /* [5, 6, 4] */
    views[1] = tensor_slice(base, 1, 0, 6, 2);                /* [4, 3, 5], step 2 */
    tensor *small = random_tensor(dt, TENSOR_SHAPE(4, 1, 5), -2, 2);
    views[2] = tensor_expand(small, 3, (const int64_t[]){4, 3, 5}); /* stride 0 on dim 1 */
    views[3] = tensor_slice(tensor_transpose(base, 1, 2), 2, 1, 6, 3); /* [4, 5, 2] */
    for (int v = 0; v < 4; v++) {
        CHECK(views[v] && !tensor_is_contiguous(views[v]));
        if (!views[v]) continue;
        if (is_float(dt)) {
            for (int kind = R_SUM; kind <= R_LSE; kind++) check_all_dims(kind, views[v], (kind == R_VAR || kind == R_STD) ? 1 : 0);
            check_all_dims(R_NORM, views[v], 2);
            check_all_dims(R_NORM, views[v], INFINITY);
            CHECK_REDUCE_ALL(R_MEAN, views[v]);
            const int d02[2] = {0, 2};
            CHECK_REDUCE_DIMS(R_MEAN, views[v], 2, d02, true);
        } else {
            int kinds[6] = {R_SUM, R_PROD, R_MAX, R_MIN, R_ARGMAX, R_ARGMIN};
            for (int k = 0; k < 6; k++) check_all_dims(kinds[k], views[v], 0);
        }
        const int d12[2] = {1, 2};
        CHECK_REDUCE_DIMS(R_SUM, views[v], 2, d12, false);
        CHECK_REDUCE_ALL(R_SUM, views[v]);
        CHECK_REDUCE_ALL(R_MAX, views[v]);
        CHECK_REDUCE_ALL(R_ANY, views[v]);
        CHECK_REDUCE_ALL(R_ALL, views[v]);
    }
}
TEST(reduce_non_contiguous_f32) { check_layouts(TENSOR_F32); }
TEST(reduce_non_contiguous_f64) { check_layouts(TENSOR_F64); }
TEST(reduce_non_contiguous_bf16) { check_layouts(TENSOR_BF16); }
TEST(reduce_non_contiguous_i32) { check_layouts(TENSOR_I32); }

/* Sizes past the block sizes of the fast paths: columns (sum over dim 0) and long rows. */
TEST(reduce_large_rows_and_columns) {
    tensor_dtype dts[3] = {TENSOR_F32, TENSOR_F64, TENSOR_I64};
    for (int di = 0; di < 3; di++) {
        tensor *t = random_tensor(dts[di], TENSOR_SHAPE(37, 300), -3, 3);
        for (int keep = 0; keep < 2; keep++) {
            CHECK_REDUCE(R_SUM, t, 0, keep != 0, 0);
            CHECK_REDUCE(R_SUM, t, 1, keep != 0, 0);
            CHECK_REDUCE(R_MAX, t, 0, keep != 0, 0);
            CHECK_REDUCE(R_ARGMIN, t, 1, keep != 0, 0);
            if (dts[di] != TENSOR_I64) { CHECK_REDUCE(R_MEAN, t, 0, keep != 0, 0); CHECK_REDUCE(R_VAR, t, 0, keep != 0, 1); }
        }
        tensor *u = random_tensor(dts[di], TENSOR_SHAPE(3, 50, 261), -3, 3);
        CHECK_REDUCE(R_SUM, u, 1, false, 0);
        CHECK_REDUCE(R_SUM, u, 0, false, 0);
        const int d01[2] = {0, 1};
        CHECK_REDUCE_DIMS(R_SUM, u, 2, d01, true);
        /* more outputs than one block of the column path holds */
        tensor *w = random_tensor(dts[di], TENSOR_SHAPE(3, 8300), -3, 3);
        CHECK_REDUCE(R_SUM, w, 0, false, 0);
        if (dts[di] != TENSOR_I64) CHECK_REDUCE(R_MEAN, w, -2, true, 0);
    }
    /* zero-size kept dims in every position */
    tensor *z = tensor_zeros(TENSOR_SHAPE(4, 0, 3), TENSOR_F32);
    for (int d = 0; d < 3; d++) { CHECK_REDUCE(R_SUM, z, d, false, 0); CHECK_REDUCE(R_MEAN, z, d, true, 0); CHECK_REDUCE(R_PROD, z, d, false, 0); }
    tensor *zt = tensor_transpose(z, 0, 2);
    for (int d = 0; d < 3; d++) { CHECK_REDUCE(R_SUM, zt, d, false, 0); CHECK_REDUCE(R_LSE, zt, d, true, 0); }
}

/* The sum of 16M f32 values near 0.5 stays within 1e-6 of the double sum (f32 accumulation
   would be off by ~1e-3). */
TEST(reduce_sum_16m_f32_accurate) {
    int64_t n = 16 * 1024 * 1024;
    tensor *t = tensor_rand(TENSOR_SHAPE(n), TENSOR_F32);
    const float *x = (const float *)tensor_data_ptr(t);
    CHECK(x != NULL);
    if (!x) return;
    double want = 0;
    for (int64_t i = 0; i < n; i++) want += x[i];
    tensor *s = tensor_sum_all(t);
    CHECK(s && tensor_get_dtype(s) == TENSOR_F32);
    CHECK(fabs(tensor_item(s) - want) / want < 1e-6);
    tensor *m = tensor_mean(t, 0, false);
    CHECK(fabs(tensor_item(m) - want / (double)n) / (want / (double)n) < 1e-6);
    /* the same elements as rows, summed per row and over rows */
    tensor *rows = tensor_sum(tensor_reshape(t, 2, (const int64_t[]){1024, 16384}), 1, false);
    tensor *total = tensor_sum_all(rows);
    CHECK(total && fabs(tensor_item(total) - want) / want < 1e-6);
}

/* ---- 0-dim and zero-size inputs ---- */

TEST(reduce_zero_dim_input) {
    tensor *s = tensor_scalar(-2.5, TENSOR_F32);
    tensor *si = tensor_scalar(7, TENSOR_I32);
    for (int dim = -1; dim <= 0; dim++)
        for (int keep = 0; keep < 2; keep++) {
            bool k = keep != 0;
            for (int kind = R_SUM; kind <= R_LSE; kind++) CHECK_REDUCE(kind, s, dim, k, (kind == R_VAR || kind == R_STD) ? 1 : 0);
            CHECK_REDUCE(R_NORM, s, dim, k, 3);
            CHECK_REDUCE(R_SUM, si, dim, k, 0);
            CHECK_REDUCE(R_ARGMAX, si, dim, k, 0);
            CHECK_SHAPE(tensor_sum(s, dim, k), 0, NULL);
            CHECK_VALUES(tensor_var(s, dim, 1, k), (const double[]){NAN}, 1, 0, 0);
            CHECK_VALUES(tensor_var(s, dim, 0, k), (const double[]){0}, 1, 0, 0);
            CHECK_VALUES(tensor_argmin(s, dim, k), (const double[]){0}, 1, 0, 0);
            const int dims[1] = {dim};
            CHECK_REDUCE_DIMS(R_SUM, s, 1, dims, k);
            CHECK_SHAPE(tensor_mean_dims(s, 1, dims, k), 0, NULL);
            tensor *c = tensor_cumsum(si, dim);
            CHECK_SHAPE(c, 0, NULL);
            CHECK(tensor_get_dtype(c) == TENSOR_I64);
            CHECK_VALUES(c, (const double[]){7}, 1, 0, 0);
        }
    for (int kind = 0; kind < R_KINDS; kind++)
        if (kind == R_SUM || kind == R_MEAN || kind == R_MAX || kind == R_MIN || kind == R_ALL || kind == R_ANY) CHECK_REDUCE_ALL(kind, s);
    CHECK_VALUES(tensor_sum_dims(s, 0, NULL, true), (const double[]){-2.5}, 1, 0, 0);
    CHECK_BAD(tensor_sum(s, 1, false), "tensor_sum");
    CHECK_BAD(tensor_max(s, -2, false), "tensor_max");
    CHECK_BAD(tensor_cumsum(s, 1), "tensor_cumsum");
}

TEST(reduce_zero_size_input) {
    tensor *e = tensor_zeros(TENSOR_SHAPE(0, 3), TENSOR_F32);
    tensor *ei = tensor_zeros(TENSOR_SHAPE(0, 3), TENSOR_I32);
    const double zeros[3] = {0, 0, 0}, ones[3] = {1, 1, 1}, nans[3] = {NAN, NAN, NAN}, ninf[3] = {-INFINITY, -INFINITY, -INFINITY};
    CHECK_VALUES(tensor_sum(e, 0, false), zeros, 3, 0, 0);
    CHECK_SHAPE(tensor_sum(e, 0, true), 2, (const int64_t[]){1, 3});
    CHECK_VALUES(tensor_sum(ei, 0, false), zeros, 3, 0, 0);
    CHECK(tensor_get_dtype(tensor_sum(ei, 0, false)) == TENSOR_I64);
    CHECK_VALUES(tensor_prod(e, 0, false), ones, 3, 0, 0);
    CHECK_VALUES(tensor_prod(ei, 0, false), ones, 3, 0, 0);
    CHECK_VALUES(tensor_mean(e, 0, false), nans, 3, 0, 0);
    CHECK_VALUES(tensor_var(e, 0, 1, false), nans, 3, 0, 0);
    CHECK_VALUES(tensor_std(e, 0, 0, false), nans, 3, 0, 0);
    CHECK_VALUES(tensor_logsumexp(e, 0, false), ninf, 3, 0, 0);
    CHECK_VALUES(tensor_norm(e, 2, 0, false), zeros, 3, 0, 0);
    CHECK_VALUES(tensor_norm(e, 0, 0, false), zeros, 3, 0, 0);
    CHECK_VALUES(tensor_norm(e, 1.5, 0, false), zeros, 3, 0, 0);
    /* reducing the non-empty dim of an empty tensor gives an empty result, even for max */
    CHECK_SHAPE(tensor_max(e, 1, false), 1, (const int64_t[]){0});
    CHECK_SHAPE(tensor_argmin(e, 1, true), 2, (const int64_t[]){0, 1});
    CHECK_SHAPE(tensor_norm(e, INFINITY, 1, false), 1, (const int64_t[]){0});
    CHECK_SHAPE(tensor_cumsum(e, 0), 2, (const int64_t[]){0, 3});
    CHECK_SHAPE(tensor_cumsum(ei, 1), 2, (const int64_t[]){0, 3});
    CHECK_VALUES(tensor_sum_all(e), zeros, 1, 0, 0);
    CHECK_VALUES(tensor_mean_all(e), nans, 1, 0, 0);
    CHECK_VALUES(tensor_mean_dims(e, 0, NULL, false), nans, 1, 0, 0);
    CHECK_VALUES(tensor_all(e), ones, 1, 0, 0);
    CHECK_VALUES(tensor_any(e), zeros, 1, 0, 0);
    CHECK(tensor_get_dtype(tensor_all(e)) == TENSOR_BOOL && tensor_ndim(tensor_all(e)) == 0);
    /* no identity: an error that says the dim is empty */
    CHECK_BAD(tensor_max(e, 0, false), "tensor_max");
    CHECK(tensor_max(e, 0, false) == NULL && strstr(tensor_last_error(), "empty dim"));
    tensor_clear_error();
    CHECK_BAD(tensor_min(ei, -2, true), "tensor_min");
    CHECK_BAD(tensor_argmax(e, 0, false), "tensor_argmax");
    CHECK_BAD(tensor_argmin(ei, 0, false), "tensor_argmin");
    CHECK_BAD(tensor_max_all(e), "tensor_max_all");
    CHECK_BAD(tensor_min_all(ei), "tensor_min_all");
    CHECK_BAD(tensor_norm(e, INFINITY, 0, false), "tensor_norm");
    CHECK_BAD(tensor_norm(e, -INFINITY, 0, false), "tensor_norm");
}

/* ---- semantics worth a hand-written case ---- */

TEST(reduce_nan_propagates_and_first_index_wins) {
    const double v[8] = {1, 5, 5, NAN, 2, NAN, -1, -1};
    tensor *t = test_tensor(TENSOR_F32, TENSOR_SHAPE(8), v);
    CHECK(isnan(tensor_item(tensor_max(t, 0, false))));
    CHECK(isnan(tensor_item(tensor_min(t, 0, false))));
    CHECK(isnan(tensor_item(tensor_max_all(t))));
    CHECK(tensor_item(tensor_argmax(t, 0, false)) == 3);
    CHECK(tensor_item(tensor_argmin(t, 0, false)) == 3);
    CHECK(isnan(tensor_item(tensor_sum_all(t))));
    CHECK(isnan(tensor_item(tensor_norm(t, INFINITY, 0, false))));
    CHECK(isnan(tensor_item(tensor_logsumexp(t, 0, false))));
    CHECK(tensor_item(tensor_all(t)) == 1); /* NaN is non-zero */
    const double w[6] = {1, 5, 5, 2, -1, -1};
    tensor *u = test_tensor(TENSOR_F64, TENSOR_SHAPE(6), w);
    CHECK(tensor_item(tensor_argmax(u, 0, false)) == 1);
    CHECK(tensor_item(tensor_argmin(u, -1, true)) == 4);
    tensor *ui = test_tensor(TENSOR_U8, TENSOR_SHAPE(6), (const double[]){3, 9, 0, 9, 0, 1});
    CHECK(tensor_item(tensor_argmax(ui, 0, false)) == 1);
    CHECK(tensor_item(tensor_argmin(ui, 0, false)) == 2);
    CHECK(tensor_get_dtype(tensor_max(ui, 0, false)) == TENSOR_U8 && tensor_item(tensor_max(ui, 0, false)) == 9);
    /* the NaN of a later row does not leak into an earlier one */
    tensor *m = test_tensor(TENSOR_F32, TENSOR_SHAPE(2, 3), (const double[]){1, 2, 3, 4, NAN, 6});
    CHECK_VALUES(tensor_max(m, 1, false), ((const double[]){3, NAN}), 2, 0, 0);
    CHECK_VALUES(tensor_argmin(m, 1, false), ((const double[]){0, 1}), 2, 0, 0);
    CHECK_VALUES(tensor_max(m, 0, false), ((const double[]){4, NAN, 6}), 3, 0, 0);
}

TEST(reduce_int64_exact) {
    const int64_t big[4] = {(int64_t)1 << 60, ((int64_t)1 << 60) + 1, -5, ((int64_t)1 << 60) + 1};
    tensor *t = tensor_from_data(big, TENSOR_SHAPE(4), TENSOR_I64);
    int64_t got = 0;
    CHECK(tensor_copy_to(tensor_max_all(t), &got, sizeof got) == 0 && got == ((int64_t)1 << 60) + 1);
    CHECK(tensor_item(tensor_argmax(t, 0, false)) == 1);
    CHECK(tensor_copy_to(tensor_sum_all(t), &got, sizeof got) == 0 && got == ((int64_t)3 << 60) + 2 - 5);
    int64_t cs[4];
    CHECK(tensor_copy_to(tensor_cumsum(t, 0), cs, sizeof cs) == 0);
    CHECK(cs[0] == big[0] && cs[1] == big[0] + big[1] && cs[3] == ((int64_t)3 << 60) + 2 - 5);
    /* int64 sums wrap like PyTorch's instead of overflowing into undefined behaviour */
    const int64_t wrap[2] = {INT64_MAX, 1};
    tensor *w = tensor_from_data(wrap, TENSOR_SHAPE(2), TENSOR_I64);
    CHECK(tensor_copy_to(tensor_sum(w, 0, false), &got, sizeof got) == 0 && got == INT64_MIN);
    CHECK(tensor_copy_to(tensor_prod(tensor_from_data(wrap, TENSOR_SHAPE(2), TENSOR_I64), 0, false), &got, sizeof got) == 0 && got == INT64_MAX);
    /* bool sums count */
    tensor *b = test_tensor(TENSOR_BOOL, TENSOR_SHAPE(5), (const double[]){1, 0, 1, 1, 0});
    CHECK(tensor_get_dtype(tensor_sum_all(b)) == TENSOR_I64 && tensor_item(tensor_sum_all(b)) == 3);
    CHECK(tensor_get_dtype(tensor_max_all(b)) == TENSOR_BOOL && tensor_item(tensor_max_all(b)) == 1);
    CHECK(tensor_item(tensor_prod(b, 0, false)) == 0);
}

TEST(reduce_var_std_correction) {
    tensor *t = test_tensor(TENSOR_F64, TENSOR_SHAPE(4), (const double[]){1, 2, 3, 6});
    /* mean 3, squared deviations 4 + 1 + 0 + 9 = 14 */
    CHECK_NEAR(tensor_item(tensor_var(t, 0, 0, false)), 14.0 / 4, 0, 1e-15);
    CHECK_NEAR(tensor_item(tensor_var(t, 0, 1, false)), 14.0 / 3, 0, 1e-15);
    CHECK_NEAR(tensor_item(tensor_std(t, 0, 2, false)), sqrt(14.0 / 2), 0, 1e-15);
    CHECK(tensor_item(tensor_var(t, 0, 4, false)) == INFINITY); /* N - correction <= 0: m2 / 0 */
    CHECK(tensor_item(tensor_std(t, 0, 5, false)) == INFINITY);
    CHECK_NEAR(tensor_item(tensor_var(t, 0, -1, false)), 14.0 / 5, 0, 1e-15);
    tensor *one = test_tensor(TENSOR_F32, TENSOR_SHAPE(1), (const double[]){3});
    CHECK(isnan(tensor_item(tensor_var(one, 0, 1, false)))); /* 0 / 0 */
    CHECK(tensor_item(tensor_var(one, 0, 0, false)) == 0);
    /* a large offset does not cost the f32 result its digits (two passes) */
    tensor *off = test_tensor(TENSOR_F32, TENSOR_SHAPE(4), (const double[]){10000.5, 10001.5, 10002.5, 10003.5});
    CHECK_NEAR(tensor_item(tensor_var(off, 0, 1, false)), 5.0 / 3, 0, 1e-6);
}

TEST(reduce_logsumexp_stable) {
    tensor *t = test_tensor(TENSOR_F32, TENSOR_SHAPE(2, 2), (const double[]){1000, 1000, -1000, -1001});
    CHECK_VALUES(tensor_logsumexp(t, 1, false), ((const double[]){1000 + log(2.0), -1000 + log1p(exp(-1.0))}), 2, 0, 1e-6);
    tensor *ninf = test_tensor(TENSOR_F64, TENSOR_SHAPE(3), (const double[]){-INFINITY, -INFINITY, -INFINITY});
    CHECK(tensor_item(tensor_logsumexp(ninf, 0, false)) == -INFINITY);
    tensor *pinf = test_tensor(TENSOR_F64, TENSOR_SHAPE(3), (const double[]){1, INFINITY, -INFINITY});
    CHECK(tensor_item(tensor_logsumexp(pinf, 0, true)) == INFINITY);
    tensor *h = test_tensor(TENSOR_F16, TENSOR_SHAPE(2), (const double[]){60000, 60000});
    CHECK_NEAR(tensor_item(tensor_logsumexp(h, 0, false)), 60000 + log(2.0), 0, 2e-3);
}

TEST(reduce_norm_orders) {
    tensor *t = test_tensor(TENSOR_F64, TENSOR_SHAPE(5), (const double[]){3, -4, 0, 0.5, -0.25});
    CHECK_NEAR(tensor_item(tensor_norm(t, 2, 0, false)), sqrt(9 + 16 + 0.25 + 0.0625), 0, 1e-15);
    CHECK_NEAR(tensor_item(tensor_norm(t, 1, 0, false)), 7.75, 0, 1e-15);
    CHECK(tensor_item(tensor_norm(t, 0, 0, false)) == 4);
    CHECK(tensor_item(tensor_norm(t, INFINITY, 0, false)) == 4);
    CHECK(tensor_item(tensor_norm(t, -INFINITY, 0, false)) == 0);
    CHECK_NEAR(tensor_item(tensor_norm(t, 3, -1, true)), cbrt(27 + 64 + 0.125 + 0.015625), 0, 1e-14);
    CHECK_NEAR(tensor_item(tensor_norm(t, 0.5, 0, false)), pow(sqrt(3.0) + 2 + sqrt(0.5) + 0.5, 2), 0, 1e-14);
}

TEST(reduce_cumsum_every_dim_and_dtype) {
    tensor_dtype dts[8] = {TENSOR_F32, TENSOR_F64, TENSOR_F16, TENSOR_BF16, TENSOR_I32, TENSOR_I64, TENSOR_U8, TENSOR_BOOL};
    for (int di = 0; di < 8; di++) {
        tensor_dtype dt = dts[di];
        tensor *base = random_tensor(dt, TENSOR_SHAPE(3, 4, 5), dt == TENSOR_U8 ? 0 : -3, 3);
        tensor *views[3] = {base, tensor_transpose(base, 0, 2), tensor_slice(base, 2, 0, 5, 2)};
        for (int v = 0; v < 3; v++) {
            tensor *t = views[v];
            if (!t) { CHECK(t != NULL); continue; }
            int nd = tensor_ndim(t);
            const int64_t *shape = tensor_shape(t);
            int64_t n = tensor_numel(t);
            double *x = test_values(t), *want = (double *)malloc(sizeof(double) * (size_t)n);
            for (int dim = -nd; dim < nd; dim++) {
                int d = dim < 0 ? dim + nd : dim;
                int64_t stride = 1;
                for (int k = d + 1; k < nd; k++) stride *= shape[k];
                for (int64_t i = 0; i < n; i++) {
                    int64_t pos = (i / stride) % shape[d];
                    want[i] = pos == 0 ? x[i] : want[i - stride] + x[i];
                }
                tensor *c = tensor_cumsum(t, dim);
                CHECK_SHAPE(c, nd, shape);
                tensor_dtype want_dt = is_float(dt) ? dt : TENSOR_I64;
                CHECK(tensor_get_dtype(c) == want_dt);
                double tol = test_tol(want_dt);
                CHECK_VALUES(c, want, n, tol * 4, tol);
            }
            free(x);
            free(want);
        }
    }
}

TEST(reduce_all_any_values) {
    tensor *z = test_tensor(TENSOR_F32, TENSOR_SHAPE(2, 2), (const double[]){1, 2, 0, 3});
    CHECK(tensor_item(tensor_all(z)) == 0 && tensor_item(tensor_any(z)) == 1);
    tensor *zz = tensor_zeros(TENSOR_SHAPE(3), TENSOR_I64);
    CHECK(tensor_item(tensor_all(zz)) == 0 && tensor_item(tensor_any(zz)) == 0);
    tensor *o = tensor_ones(TENSOR_SHAPE(3, 2), TENSOR_BOOL);
    CHECK(tensor_item(tensor_all(o)) == 1 && tensor_item(tensor_any(o)) == 1);
    tensor *neg0 = test_tensor(TENSOR_F64, TENSOR_SHAPE(1), (const double[]){-0.0});
    CHECK(tensor_item(tensor_any(neg0)) == 0);
    tensor *s = tensor_scalar(0.5, TENSOR_BF16);
    CHECK(tensor_item(tensor_all(s)) == 1);
    CHECK(tensor_get_dtype(tensor_any(s)) == TENSOR_BOOL && tensor_ndim(tensor_any(s)) == 0);
}

TEST(reduce_error_messages_name_the_fault) {
    tensor *ti = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_I32);
    tensor *t = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32);
    tensor_clear_error();
    CHECK(tensor_mean(ti, 0, false) == NULL && strstr(tensor_last_error(), "int32"));
    tensor_clear_error();
    CHECK(tensor_sum(t, 2, false) == NULL && strstr(tensor_last_error(), "dim 2"));
    tensor_clear_error();
    CHECK(tensor_sum_dims(t, 2, (const int[]){1, -1}, false) == NULL && strstr(tensor_last_error(), "more than once"));
    tensor_clear_error();
    CHECK(tensor_norm(tensor_zeros(TENSOR_SHAPE(2, 0), TENSOR_F32), -2, 1, false) == NULL && strstr(tensor_last_error(), "-2")); /* no identity */
    tensor_clear_error();
}

/* ---- bad inputs, one per op (tests/test_registry.c sweeps them) ---- */

void bad_input_sum(void) {
    tensor *t = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32);
    CHECK_BAD(tensor_sum(NULL, 0, false), "tensor_sum");
    CHECK_BAD(tensor_sum(t, 2, false), "tensor_sum");
    CHECK_BAD(tensor_sum(t, -3, true), "tensor_sum");
}
void bad_input_sum_all(void) { CHECK_BAD(tensor_sum_all(NULL), "tensor_sum_all"); }
void bad_input_sum_dims(void) {
    tensor *t = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32);
    CHECK_BAD(tensor_sum_dims(NULL, 1, (const int[]){0}, false), "tensor_sum_dims");
    CHECK_BAD(tensor_sum_dims(t, 2, (const int[]){0, -2}, false), "tensor_sum_dims");
    CHECK_BAD(tensor_sum_dims(t, 2, (const int[]){0, 5}, false), "tensor_sum_dims");
    CHECK_BAD(tensor_sum_dims(t, -1, (const int[]){0}, false), "tensor_sum_dims");
    CHECK_BAD(tensor_sum_dims(t, 1, NULL, false), "tensor_sum_dims");
}
void bad_input_mean(void) {
    tensor *t = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32);
    CHECK_BAD(tensor_mean(NULL, 0, false), "tensor_mean");
    CHECK_BAD(tensor_mean(t, 2, false), "tensor_mean");
    CHECK_BAD(tensor_mean(tensor_zeros(TENSOR_SHAPE(2), TENSOR_I64), 0, false), "tensor_mean");
    CHECK_BAD(tensor_mean(tensor_zeros(TENSOR_SHAPE(2), TENSOR_BOOL), 0, false), "tensor_mean");
}
void bad_input_mean_all(void) {
    CHECK_BAD(tensor_mean_all(NULL), "tensor_mean_all");
    CHECK_BAD(tensor_mean_all(tensor_zeros(TENSOR_SHAPE(2), TENSOR_U8)), "tensor_mean_all");
}
void bad_input_mean_dims(void) {
    tensor *t = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32);
    CHECK_BAD(tensor_mean_dims(NULL, 1, (const int[]){0}, false), "tensor_mean_dims");
    CHECK_BAD(tensor_mean_dims(t, 2, (const int[]){1, 1}, true), "tensor_mean_dims");
    CHECK_BAD(tensor_mean_dims(t, 1, (const int[]){-3}, true), "tensor_mean_dims");
    CHECK_BAD(tensor_mean_dims(t, -2, (const int[]){0}, true), "tensor_mean_dims");
    CHECK_BAD(tensor_mean_dims(tensor_zeros(TENSOR_SHAPE(2), TENSOR_I32), 0, NULL, false), "tensor_mean_dims");
}
void bad_input_prod(void) {
    CHECK_BAD(tensor_prod(NULL, 0, false), "tensor_prod");
    CHECK_BAD(tensor_prod(tensor_zeros(TENSOR_SHAPE(2), TENSOR_F32), 1, false), "tensor_prod");
}
void bad_input_max(void) {
    CHECK_BAD(tensor_max(NULL, 0, false), "tensor_max");
    CHECK_BAD(tensor_max(tensor_zeros(TENSOR_SHAPE(2), TENSOR_F32), -2, false), "tensor_max");
    CHECK_BAD(tensor_max(tensor_zeros(TENSOR_SHAPE(2, 0), TENSOR_F32), 1, false), "tensor_max");
}
void bad_input_max_all(void) {
    CHECK_BAD(tensor_max_all(NULL), "tensor_max_all");
    CHECK_BAD(tensor_max_all(tensor_zeros(TENSOR_SHAPE(0), TENSOR_I32)), "tensor_max_all");
}
void bad_input_min(void) {
    CHECK_BAD(tensor_min(NULL, 0, false), "tensor_min");
    CHECK_BAD(tensor_min(tensor_zeros(TENSOR_SHAPE(2), TENSOR_F32), 1, false), "tensor_min");
    CHECK_BAD(tensor_min(tensor_zeros(TENSOR_SHAPE(0, 2), TENSOR_F64), 0, true), "tensor_min");
}
void bad_input_min_all(void) {
    CHECK_BAD(tensor_min_all(NULL), "tensor_min_all");
    CHECK_BAD(tensor_min_all(tensor_zeros(TENSOR_SHAPE(3, 0), TENSOR_F32)), "tensor_min_all");
}
void bad_input_argmax(void) {
    CHECK_BAD(tensor_argmax(NULL, 0, false), "tensor_argmax");
    CHECK_BAD(tensor_argmax(tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32), 2, false), "tensor_argmax");
    CHECK_BAD(tensor_argmax(tensor_zeros(TENSOR_SHAPE(0), TENSOR_F32), 0, false), "tensor_argmax");
}
void bad_input_argmin(void) {
    CHECK_BAD(tensor_argmin(NULL, 0, false), "tensor_argmin");
    CHECK_BAD(tensor_argmin(tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_I32), -3, false), "tensor_argmin");
    CHECK_BAD(tensor_argmin(tensor_zeros(TENSOR_SHAPE(2, 0), TENSOR_I32), -1, false), "tensor_argmin");
}
void bad_input_var(void) {
    CHECK_BAD(tensor_var(NULL, 0, 1, false), "tensor_var");
    CHECK_BAD(tensor_var(tensor_zeros(TENSOR_SHAPE(4), TENSOR_I32), 0, 1, false), "tensor_var");
    CHECK_BAD(tensor_var(tensor_zeros(TENSOR_SHAPE(4), TENSOR_F32), 1, 1, false), "tensor_var");
}
void bad_input_std(void) {
    CHECK_BAD(tensor_std(NULL, 0, 1, false), "tensor_std");
    CHECK_BAD(tensor_std(tensor_zeros(TENSOR_SHAPE(4), TENSOR_BOOL), 0, 1, false), "tensor_std");
    CHECK_BAD(tensor_std(tensor_zeros(TENSOR_SHAPE(4), TENSOR_F64), -2, 0, true), "tensor_std");
}
void bad_input_logsumexp(void) {
    CHECK_BAD(tensor_logsumexp(NULL, 0, false), "tensor_logsumexp");
    CHECK_BAD(tensor_logsumexp(tensor_zeros(TENSOR_SHAPE(4), TENSOR_I64), 1, false), "tensor_logsumexp"); /* (ints give f32, as in PyTorch) */
    CHECK_BAD(tensor_logsumexp(tensor_zeros(TENSOR_SHAPE(4), TENSOR_F32), 1, false), "tensor_logsumexp");
}
void bad_input_norm(void) {
    tensor *t = tensor_zeros(TENSOR_SHAPE(4), TENSOR_F32);
    CHECK_BAD(tensor_norm(NULL, 2, 0, false), "tensor_norm");
    CHECK_BAD(tensor_norm(tensor_zeros(TENSOR_SHAPE(4), TENSOR_I32), 2, 0, false), "tensor_norm");
    CHECK_BAD(tensor_norm(tensor_zeros(TENSOR_SHAPE(4, 0), TENSOR_F32), -1, 1, false), "tensor_norm"); /* p < 0 has no identity */
    CHECK_BAD(tensor_norm(t, NAN, 0, false), "tensor_norm");
    CHECK_BAD(tensor_norm(t, 2, 1, false), "tensor_norm");
    CHECK_BAD(tensor_norm(tensor_zeros(TENSOR_SHAPE(0), TENSOR_F32), INFINITY, 0, false), "tensor_norm");
}
void bad_input_cumsum(void) {
    CHECK_BAD(tensor_cumsum(NULL, 0), "tensor_cumsum");
    CHECK_BAD(tensor_cumsum(tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32), 2), "tensor_cumsum");
    CHECK_BAD(tensor_cumsum(tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_I32), -3), "tensor_cumsum");
}
void bad_input_all(void) { CHECK_BAD(tensor_all(NULL), "tensor_all"); }
void bad_input_any(void) { CHECK_BAD(tensor_any(NULL), "tensor_any"); }

/* Runs this file's bad-input cases on their own too (the registry sweep needs every op's). */
TEST(reduce_bad_inputs) {
    bad_input_sum(); bad_input_sum_all(); bad_input_sum_dims(); bad_input_mean(); bad_input_mean_all();
    bad_input_mean_dims(); bad_input_prod(); bad_input_max(); bad_input_max_all(); bad_input_min();
    bad_input_min_all(); bad_input_argmax(); bad_input_argmin(); bad_input_var(); bad_input_std();
    bad_input_logsumexp(); bad_input_norm(); bad_input_cumsum(); bad_input_all(); bad_input_any();
}
