/* Tests of the linear-algebra, neural-network and loss ops: each against plain double loops
   written here (naive matmul, direct convolution, softmax by hand, ...). */
#include "test.h"

/* The library's test hook (tensor_set_reference_kernels): routes matmul and the convolutions through
   their plain reference loops. */

/* ---- helpers ---- */


/* Integer-valued tensor of values in [lo, hi]. */
static tensor *rnd_int(tensor_dtype dt, int nd, const int64_t *shape, int64_t lo, int64_t hi) {
    int64_t n = test_numel(nd, shape);
    double *v = (double *)malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) v[i] = (double)(lo + (int64_t)floor(test_uniform(0, (double)(hi - lo + 1))));
    tensor *t = test_tensor(dt, nd, shape, v);
    free(v);
    return t;
}

/* Naive matmul with torch.matmul's rules, on row-major doubles. Writes the output shape. */
static double *ref_matmul(const double *av, int and_, const int64_t *as_, const double *bv, int bnd, const int64_t *bs_, int *ond, int64_t *os) {
    int64_t as[8] = {0}, bs[8] = {0};
    int an = and_, bn = bnd;
    for (int i = 0; i < an; i++) as[i] = as_[i];
    for (int i = 0; i < bn; i++) bs[i] = bs_[i];
    bool a1 = an == 1, b1 = bn == 1;
    if (a1) { as[1] = as[0]; as[0] = 1; an = 2; }
    if (b1) { bs[1] = 1; bn = 2; }
    int64_t n = as[an - 2], k = as[an - 1], m = bs[bn - 1];
    int na = an - 2, nbb = bn - 2, nb = na > nbb ? na : nbb;
    int64_t batch[8];
    for (int i = 0; i < nb; i++) {
        int ai = i - (nb - na), bi = i - (nb - nbb);
        int64_t da = ai >= 0 ? as[ai] : 1, db = bi >= 0 ? bs[bi] : 1;
        batch[i] = da == 1 ? db : da;
    }
    int64_t nbatch = test_numel(nb, batch);
    double *out = (double *)malloc(sizeof(double) * (size_t)(nbatch * n * m + 1));
    int64_t idx[8] = {0};
    for (int64_t q = 0; q < nbatch; q++) {
        int64_t ao = 0, bo = 0;
        for (int i = 0; i < nb; i++) {
            int ai = i - (nb - na), bi = i - (nb - nbb);
            if (ai >= 0) ao = ao * as[ai] + (as[ai] == 1 ? 0 : idx[i]);
            if (bi >= 0) bo = bo * bs[bi] + (bs[bi] == 1 ? 0 : idx[i]);
        }
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < m; j++) {
                double s = 0;
                for (int64_t p = 0; p < k; p++) s += av[(ao * n + i) * k + p] * bv[(bo * k + p) * m + j];
                out[(q * n + i) * m + j] = s;
            }
        for (int i = nb - 1; i >= 0; i--) { if (++idx[i] < batch[i]) break; idx[i] = 0; }
    }
    int d = 0;
    for (int i = 0; i < nb; i++) os[d++] = batch[i];
    if (!a1) os[d++] = n;
    if (!b1) os[d++] = m;
    *ond = d;
    return out;
}

/* Checks tensor_matmul(a, b) against ref_matmul, with tolerance scaled by k. */
static void check_matmul(tensor *a, tensor *b, double atol, double rtol) {
    tensor *r = tensor_matmul(a, b);
    CHECK_MSG(r != NULL, "matmul failed: %s", tensor_last_error() ? tensor_last_error() : "?");
    if (!r) return;
    double *av = test_values(a), *bv = test_values(b);
    int ond;
    int64_t os[8];
    double *e = ref_matmul(av, tensor_ndim(a), tensor_shape(a), bv, tensor_ndim(b), tensor_shape(b), &ond, os);
    CHECK_SHAPE(r, ond, os);
    CHECK(tensor_get_dtype(r) == tensor_get_dtype(a));
    CHECK_VALUES(r, e, test_numel(ond, os), atol, rtol);
    free(av);
    free(bv);
    free(e);
}

/* ---- matmul ---- */

TEST(matmul_2d_f32_f64) {
    const int64_t dims[][3] = {{3, 4, 5}, {1, 1, 1}, {7, 33, 300}, {5, 200, 260}, {17, 9, 3}, {2, 1, 8}, {4, 130, 1}};
    tensor_dtype dts[] = {TENSOR_F32, TENSOR_F64};
    for (int d = 0; d < 2; d++)
        for (size_t i = 0; i < sizeof dims / sizeof dims[0]; i++) {
            int64_t n = dims[i][0], k = dims[i][1], m = dims[i][2];
            tensor *a = test_random(dts[d], 2, (const int64_t[]){n, k}, -1, 1), *b = test_random(dts[d], 2, (const int64_t[]){k, m}, -1, 1);
            double tol = dts[d] == TENSOR_F32 ? 2e-6 * (double)k : 1e-13 * (double)k;
            check_matmul(a, b, tol, tol);
        }
}

TEST(matmul_vector_cases) {
    tensor_dtype dts[] = {TENSOR_F32, TENSOR_F64};
    for (int d = 0; d < 2; d++) {
        double tol = d ? 1e-12 : 1e-5;
        tensor *v3 = test_random(dts[d], TENSOR_SHAPE(3), -1, 1), *w3 = test_random(dts[d], TENSOR_SHAPE(3), -1, 1);
        tensor *dot = tensor_matmul(v3, w3);
        CHECK(dot && tensor_ndim(dot) == 0); /* 1-D x 1-D: a 0-dim dot product */
        check_matmul(v3, w3, tol, tol);
        check_matmul(v3, test_random(dts[d], TENSOR_SHAPE(3, 4), -1, 1), tol, tol);        /* -> [4] */
        check_matmul(test_random(dts[d], TENSOR_SHAPE(2, 3), -1, 1), w3, tol, tol);        /* -> [2] */
        check_matmul(v3, test_random(dts[d], TENSOR_SHAPE(2, 3, 4), -1, 1), tol, tol);     /* -> [2, 4] */
        check_matmul(test_random(dts[d], TENSOR_SHAPE(2, 5, 3), -1, 1), w3, tol, tol);     /* -> [2, 5] */
        check_matmul(test_random(dts[d], TENSOR_SHAPE(2, 2, 5, 3), -1, 1), w3, tol, tol);  /* -> [2, 2, 5] */
        tensor *r = tensor_matmul(v3, test_random(dts[d], TENSOR_SHAPE(2, 3, 4), -1, 1));
        CHECK_SHAPE(r, 2, (const int64_t[]){2, 4});
        r = tensor_matmul(test_random(dts[d], TENSOR_SHAPE(2, 3), -1, 1), w3);
        CHECK_SHAPE(r, 1, (const int64_t[]){2});
    }
}

TEST(matmul_batch_broadcast) {
    tensor *r = tensor_matmul(test_random(TENSOR_F32, TENSOR_SHAPE(2, 1, 3, 4), -1, 1), test_random(TENSOR_F32, TENSOR_SHAPE(5, 4, 6), -1, 1));
    CHECK_SHAPE(r, 4, (const int64_t[]){2, 5, 3, 6});
    tensor_dtype dts[] = {TENSOR_F32, TENSOR_F64};
    for (int d = 0; d < 2; d++) {
        double tol = d ? 1e-12 : 1e-5;
        check_matmul(test_random(dts[d], TENSOR_SHAPE(2, 1, 3, 4), -1, 1), test_random(dts[d], TENSOR_SHAPE(5, 4, 6), -1, 1), tol, tol);
        check_matmul(test_random(dts[d], TENSOR_SHAPE(3, 4), -1, 1), test_random(dts[d], TENSOR_SHAPE(2, 4, 5), -1, 1), tol, tol);
        check_matmul(test_random(dts[d], TENSOR_SHAPE(2, 3, 4), -1, 1), test_random(dts[d], TENSOR_SHAPE(4, 5), -1, 1), tol, tol);
        check_matmul(test_random(dts[d], TENSOR_SHAPE(1, 3, 4), -1, 1), test_random(dts[d], TENSOR_SHAPE(2, 4, 2), -1, 1), tol, tol);
        check_matmul(test_random(dts[d], TENSOR_SHAPE(3, 1, 2, 3, 4), -1, 1), test_random(dts[d], TENSOR_SHAPE(2, 1, 4, 3), -1, 1), tol, tol);
    }
}

TEST(matmul_noncontiguous) {
    tensor_dtype dts[] = {TENSOR_F32, TENSOR_F64, TENSOR_I64};
    for (int d = 0; d < 3; d++) {
        double tol = dts[d] == TENSOR_F32 ? 1e-5 : dts[d] == TENSOR_F64 ? 1e-12 : 0;
        bool ints = dts[d] == TENSOR_I64;
        tensor *at = ints ? rnd_int(dts[d], TENSOR_SHAPE(6, 5), -9, 9) : test_random(dts[d], TENSOR_SHAPE(6, 5), -1, 1);
        tensor *bt = ints ? rnd_int(dts[d], TENSOR_SHAPE(7, 6), -9, 9) : test_random(dts[d], TENSOR_SHAPE(7, 6), -1, 1);
        tensor *a = tensor_transpose(at, 0, 1), *b = tensor_transpose(bt, 0, 1); /* [5, 6] and [6, 7], column-major */
        CHECK(!tensor_is_contiguous(a) && !tensor_is_contiguous(b));
        check_matmul(a, b, tol, tol);
        tensor *big = ints ? rnd_int(dts[d], TENSOR_SHAPE(10, 12), -9, 9) : test_random(dts[d], TENSOR_SHAPE(10, 12), -1, 1);
        tensor *sl = tensor_slice(tensor_slice(big, 0, 1, 10, 2), 1, 0, 12, 2); /* [5, 6], steps of 2 */
        check_matmul(sl, b, tol, tol);
        check_matmul(a, tensor_slice(big, 0, 0, 6, 1), tol, tol);             /* [6, 12] rows of a wider tensor */
        check_matmul(tensor_slice(big, 1, 2, 8, 1), tensor_transpose(tensor_slice(big, 1, 3, 9, 1), 0, 1), tol, tol); /* row stride 12 */
        /* expanded (stride-0) batch operands */
        tensor *e = tensor_expand(tensor_unsqueeze(b, 0), 3, (const int64_t[]){4, 6, 7});
        check_matmul(tensor_expand(tensor_unsqueeze(a, 0), 3, (const int64_t[]){4, 5, 6}), e, tol, tol);
        check_matmul(tensor_slice(big, 1, 0, 6, 1), e, tol, tol);
        /* a vector with a step */
        check_matmul(tensor_select(sl, 0, 1), b, tol, tol);
        check_matmul(a, tensor_select(bt, 0, 3), tol, tol);
    }
}

TEST(matmul_fast_matches_reference) {
    tensor_dtype dts[] = {TENSOR_F32, TENSOR_F64, TENSOR_F16, TENSOR_BF16, TENSOR_I32, TENSOR_I64, TENSOR_U8};
    const int64_t sizes[][5] = {{1, 3, 4, 5, 0}, {2, 9, 17, 33, 1}, {3, 2, 140, 270, 0}, {1, 1, 1, 1, 1}, {2, 64, 64, 64, 1}};
    for (size_t di = 0; di < sizeof dts / sizeof dts[0]; di++)
        for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
            tensor_dtype dt = dts[di];
            int64_t B = sizes[si][0], n = sizes[si][1], k = sizes[si][2], m = sizes[si][3];
            bool ints = dt == TENSOR_I32 || dt == TENSOR_I64 || dt == TENSOR_U8;
            tensor *a = ints ? rnd_int(dt, 3, (const int64_t[]){B, n, k}, 0, 7) : test_random(dt, 3, (const int64_t[]){B, n, k}, -1, 1);
            tensor *bt = ints ? rnd_int(dt, 3, (const int64_t[]){B, m, k}, 0, 7) : test_random(dt, 3, (const int64_t[]){B, m, k}, -1, 1);
            tensor *b = sizes[si][4] ? tensor_transpose(bt, 1, 2) : tensor_contiguous(tensor_transpose(bt, 1, 2));
            tensor *fast = tensor_matmul(a, b);
            bool was = tensor_set_reference_kernels(true);
            tensor *ref = tensor_matmul(a, b);
            tensor_set_reference_kernels(was);
            CHECK(fast && ref);
            if (!fast || !ref) continue;
            double *rv = test_values(ref);
            /* the fast path accumulates f32 in float; f16/bf16 round once at the end either way */
            double tol = dt == TENSOR_F32 ? 2e-6 * (double)k : dt == TENSOR_F64 ? 1e-13 * (double)k : ints ? 0 : 2 * test_tol(dt) + 1e-5 * (double)k;
            CHECK_VALUES(fast, rv, tensor_numel(ref), tol, tol);
            free(rv);
        }
}

TEST(matmul_dtypes) {
    /* f16 and bf16 compute in f32 and round once */
    check_matmul(test_random(TENSOR_F16, TENSOR_SHAPE(4, 20), -1, 1), test_random(TENSOR_F16, TENSOR_SHAPE(20, 3), -1, 1), 2e-2, test_tol(TENSOR_F16));
    check_matmul(test_random(TENSOR_BF16, TENSOR_SHAPE(2, 4, 20), -1, 1), test_random(TENSOR_BF16, TENSOR_SHAPE(20, 3), -1, 1), 1e-1, test_tol(TENSOR_BF16));
    /* integers: exact */
    check_matmul(rnd_int(TENSOR_I64, TENSOR_SHAPE(3, 5), -100, 100), rnd_int(TENSOR_I64, TENSOR_SHAPE(5, 4), -100, 100), 0, 0);
    check_matmul(rnd_int(TENSOR_I32, TENSOR_SHAPE(2, 3, 5), -100, 100), rnd_int(TENSOR_I32, TENSOR_SHAPE(5, 4), -100, 100), 0, 0);
    tensor *u = tensor_matmul(rnd_int(TENSOR_U8, TENSOR_SHAPE(2, 2), 0, 3), rnd_int(TENSOR_U8, TENSOR_SHAPE(2, 2), 0, 3));
    CHECK(u && tensor_get_dtype(u) == TENSOR_U8);
    /* u8 wraps like PyTorch: 16 * 16 = 256 -> 0 */
    tensor *x = tensor_full(TENSOR_SHAPE(1, 1), 16, TENSOR_U8);
    tensor *w = tensor_matmul(x, x);
    CHECK(w && tensor_item(w) == 0);
    /* i64 values past 2^53 stay exact */
    double big = 3037000499.0;
    tensor *bi = tensor_full(TENSOR_SHAPE(1, 1), big, TENSOR_I64);
    tensor *bb = tensor_matmul(bi, bi);
    int64_t got = 0;
    CHECK(bb && tensor_copy_to(bb, &got, sizeof got) == 0 && got == (int64_t)3037000499LL * 3037000499LL);
}

TEST(matmul_zero_size) {
    tensor *r = tensor_matmul(tensor_zeros(TENSOR_SHAPE(0, 3), TENSOR_F32), tensor_zeros(TENSOR_SHAPE(3, 4), TENSOR_F32));
    CHECK_SHAPE(r, 2, (const int64_t[]){0, 4});
    r = tensor_matmul(tensor_ones(TENSOR_SHAPE(2, 0), TENSOR_F32), tensor_ones(TENSOR_SHAPE(0, 3), TENSOR_F32));
    CHECK_SHAPE(r, 2, (const int64_t[]){2, 3});
    double z[6] = {0, 0, 0, 0, 0, 0};
    CHECK_VALUES(r, z, 6, 0, 0);
    r = tensor_matmul(tensor_ones(TENSOR_SHAPE(0, 2, 3), TENSOR_F64), tensor_ones(TENSOR_SHAPE(3, 4), TENSOR_F64));
    CHECK_SHAPE(r, 3, (const int64_t[]){0, 2, 4});
    r = tensor_matmul(tensor_ones(TENSOR_SHAPE(0), TENSOR_F32), tensor_ones(TENSOR_SHAPE(0), TENSOR_F32));
    CHECK(r && tensor_ndim(r) == 0 && tensor_item(r) == 0);
}

TEST(matmul_error_message) {
    tensor_clear_error();
    tensor *r = tensor_matmul(tensor_ones(TENSOR_SHAPE(2, 3), TENSOR_F32), tensor_ones(TENSOR_SHAPE(4, 5), TENSOR_F32));
    CHECK(r == NULL);
    const char *msg = tensor_last_error();
    CHECK(msg && strstr(msg, "tensor_matmul") && strstr(msg, "[2, 3]") && strstr(msg, "[4, 5]"));
    CHECK(msg && strcmp(msg, "tensor_matmul: shapes [2, 3] and [4, 5] cannot be multiplied (3 != 4)") == 0);
    tensor_clear_error();
}

void bad_input_matmul(void) {
    tensor *a = tensor_ones(TENSOR_SHAPE(2, 3), TENSOR_F32);
    CHECK_BAD(tensor_matmul(NULL, a), "tensor_matmul");
    CHECK_BAD(tensor_matmul(a, NULL), "tensor_matmul");
    CHECK_BAD(tensor_matmul(tensor_scalar(1, TENSOR_F32), a), "tensor_matmul");                                    /* 0-dim */
    CHECK_BAD(tensor_matmul(a, tensor_ones(TENSOR_SHAPE(3, 2), TENSOR_F64)), "tensor_matmul");                   /* dtypes */
    CHECK_BAD(tensor_matmul(tensor_ones(TENSOR_SHAPE(2, 2), TENSOR_BOOL), tensor_ones(TENSOR_SHAPE(2, 2), TENSOR_BOOL)), "tensor_matmul");
    CHECK_BAD(tensor_matmul(a, tensor_ones(TENSOR_SHAPE(4), TENSOR_F32)), "tensor_matmul");                      /* k */
    CHECK_BAD(tensor_matmul(tensor_ones(TENSOR_SHAPE(2, 2, 3), TENSOR_F32), tensor_ones(TENSOR_SHAPE(3, 3, 2), TENSOR_F32)), "tensor_matmul"); /* batch */
    tensor_free(a);
}

/* ---- linear ---- */

/* Expected x @ w^T + b on row-major values: x [R, in], w [out, in]. */
static double *ref_linear(const double *x, int64_t R, int64_t in, const double *w, int64_t out, const double *b) {
    double *y = (double *)malloc(sizeof(double) * (size_t)(R * out + 1));
    for (int64_t r = 0; r < R; r++)
        for (int64_t o = 0; o < out; o++) {
            double s = b ? b[o] : 0;
            for (int64_t i = 0; i < in; i++) s += x[r * in + i] * w[o * in + i];
            y[r * out + o] = s;
        }
    return y;
}

TEST(linear_forward) {
    tensor_dtype dts[] = {TENSOR_F32, TENSOR_F64};
    for (int d = 0; d < 2; d++) {
        double tol = d ? 1e-12 : 1e-5;
        tensor *x = test_random(dts[d], TENSOR_SHAPE(2, 3, 4), -1, 1), *w = test_random(dts[d], TENSOR_SHAPE(5, 4), -1, 1), *b = test_random(dts[d], TENSOR_SHAPE(5), -1, 1);
        double *xv = test_values(x), *wv = test_values(w), *bv = test_values(b);
        double *e = ref_linear(xv, 6, 4, wv, 5, bv), *e0 = ref_linear(xv, 6, 4, wv, 5, NULL);
        tensor *y = tensor_linear(x, w, b);
        CHECK_SHAPE(y, 3, (const int64_t[]){2, 3, 5});
        CHECK_VALUES(y, e, 30, tol, tol);
        y = tensor_linear(x, w, NULL);
        CHECK_SHAPE(y, 3, (const int64_t[]){2, 3, 5});
        CHECK_VALUES(y, e0, 30, tol, tol);
        /* 1-D input: [4] -> [5] */
        tensor *x1 = tensor_select(tensor_select(x, 0, 0), 0, 0);
        y = tensor_linear(x1, w, b);
        CHECK_SHAPE(y, 1, (const int64_t[]){5});
        CHECK_VALUES(y, e, 5, tol, tol);
        /* a transposed weight (stored [in, out]) and a non-contiguous input */
        tensor *wt = tensor_transpose(tensor_contiguous(tensor_transpose(w, 0, 1)), 0, 1);
        CHECK(!tensor_is_contiguous(wt));
        tensor *xt = tensor_transpose(tensor_contiguous(tensor_transpose(x, 0, 1)), 0, 1);
        CHECK(!tensor_is_contiguous(xt));
        y = tensor_linear(xt, wt, b);
        CHECK_VALUES(y, e, 30, tol, tol);
        /* a 1-D weight [in]: x @ w, the last dim removed */
        tensor *w1 = tensor_select(w, 0, 2);
        y = tensor_linear(x, w1, NULL);
        CHECK_SHAPE(y, 2, (const int64_t[]){2, 3});
        double e1[6];
        for (int r = 0; r < 6; r++) e1[r] = e0[r * 5 + 2];
        CHECK_VALUES(y, e1, 6, tol, tol);
        /* zero-size batch */
        y = tensor_linear(tensor_zeros(TENSOR_SHAPE(0, 4), dts[d]), w, b);
        CHECK_SHAPE(y, 2, (const int64_t[]){0, 5});
        free(xv); free(wv); free(bv); free(e); free(e0);
    }
}

void bad_input_linear(void) {
    tensor *x = tensor_ones(TENSOR_SHAPE(2, 4), TENSOR_F32), *w = tensor_ones(TENSOR_SHAPE(3, 4), TENSOR_F32);
    CHECK_BAD(tensor_linear(NULL, w, NULL), "tensor_linear");
    CHECK_BAD(tensor_linear(x, NULL, NULL), "tensor_linear");
    CHECK_BAD(tensor_linear(x, tensor_ones(TENSOR_SHAPE(3, 5), TENSOR_F32), NULL), "tensor_linear");         /* in_features */
    CHECK_BAD(tensor_linear(x, tensor_ones(TENSOR_SHAPE(1, 3, 4), TENSOR_F32), NULL), "tensor_linear");      /* 3-D weight */
    CHECK_BAD(tensor_linear(x, tensor_ones(TENSOR_SHAPE(3, 4), TENSOR_F64), NULL), "tensor_linear");         /* dtypes */
    CHECK_BAD(tensor_linear(x, w, tensor_ones(TENSOR_SHAPE(4), TENSOR_F32)), "tensor_linear");               /* bias */
    CHECK_BAD(tensor_linear(tensor_scalar(1, TENSOR_F32), w, NULL), "tensor_linear");
}

/* ---- softmax, log_softmax ---- */

/* Softmax by hand along dim of row-major values of shape s. */
static double *ref_softmax(const double *v, int nd, const int64_t *s, int dim, bool log_form) {
    int64_t n = test_numel(nd, s), L = nd ? s[dim] : 1, inner = 1;
    for (int i = dim + 1; i < nd; i++) inner *= s[i];
    double *o = (double *)malloc(sizeof(double) * (size_t)(n + 1));
    for (int64_t base = 0; base < n; base++) {
        if ((base / inner) % L != 0) continue; /* base: first element of a row */
        double mx = -INFINITY, sum = 0;
        for (int64_t i = 0; i < L; i++) mx = fmax(mx, v[base + i * inner]);
        for (int64_t i = 0; i < L; i++) sum += exp(v[base + i * inner] - mx);
        for (int64_t i = 0; i < L; i++) {
            double x = v[base + i * inner];
            o[base + i * inner] = log_form ? x - mx - log(sum) : exp(x - mx) / sum;
        }
    }
    return o;
}

static void check_softmax(tensor *t, int dim, double tol) {
    for (int lf = 0; lf < 2; lf++) {
        tensor *r = lf ? tensor_log_softmax(t, dim) : tensor_softmax(t, dim);
        CHECK(r != NULL);
        if (!r) continue;
        CHECK(tensor_get_dtype(r) == tensor_get_dtype(t));
        CHECK_SHAPE(r, tensor_ndim(t), tensor_shape(t));
        double *v = test_values(t);
        int nd = tensor_ndim(t);
        double *e = ref_softmax(v, nd, tensor_shape(t), nd ? (dim < 0 ? dim + nd : dim) : 0, lf != 0);
        CHECK_VALUES(r, e, tensor_numel(t), tol, tol);
        free(v);
        free(e);
    }
}

TEST(softmax_forward) {
    tensor_dtype dts[] = {TENSOR_F32, TENSOR_F64, TENSOR_F16, TENSOR_BF16};
    for (int d = 0; d < 4; d++) {
        double tol = dts[d] == TENSOR_F64 ? 1e-12 : 2 * test_tol(dts[d]);
        tensor *a = test_random(dts[d], TENSOR_SHAPE(3, 5), -3, 3);
        check_softmax(a, 1, tol);
        check_softmax(a, 0, tol);
        check_softmax(a, -1, tol);
        tensor *b = test_random(dts[d], TENSOR_SHAPE(2, 3, 4), -3, 3);
        check_softmax(b, 1, tol);
        check_softmax(b, -3, tol);
        check_softmax(tensor_transpose(b, 0, 2), 1, tol);                    /* non-contiguous */
        check_softmax(tensor_slice(b, 2, 0, 4, 3), 2, tol);                  /* stepped slice */
        check_softmax(tensor_scalar(0.7, dts[d]), 0, tol);                   /* 0-dim: softmax 1, log 0 */
        check_softmax(tensor_zeros(TENSOR_SHAPE(0, 3), dts[d]), 1, tol);     /* empty */
    }
    /* stability: large logits */
    tensor *big = test_tensor(TENSOR_F32, TENSOR_SHAPE(1, 3), (const double[]){1000, 1001, 1002});
    check_softmax(big, 1, 1e-6);
    tensor *s = tensor_softmax(big, 1);
    double *sv = test_values(s);
    CHECK(isfinite(sv[0]) && isfinite(sv[2]));
    free(sv);
    /* a row of -inf gives NaN, as in PyTorch; other rows are unaffected */
    tensor *m = test_tensor(TENSOR_F64, TENSOR_SHAPE(2, 2), (const double[]){-INFINITY, -INFINITY, 0, 0});
    CHECK_VALUES(tensor_softmax(m, 1), ((const double[]){NAN, NAN, 0.5, 0.5}), 4, 0, 1e-15);
    CHECK_VALUES(tensor_log_softmax(m, 1), ((const double[]){NAN, NAN, -log(2.0), -log(2.0)}), 4, 0, 1e-15);
    CHECK_VALUES(tensor_softmax(tensor_scalar(3, TENSOR_F32), -1), ((const double[]){1}), 1, 0, 0);
}

static void bad_softmax(tensor *(*f)(tensor *, int), const char *fn) {
    CHECK_BAD(f(NULL, 0), fn);
    CHECK_BAD(f(tensor_ones(TENSOR_SHAPE(2, 3), TENSOR_I64), 1), fn);
    CHECK_BAD(f(tensor_ones(TENSOR_SHAPE(2, 3), TENSOR_F32), 2), fn);
    CHECK_BAD(f(tensor_ones(TENSOR_SHAPE(2, 3), TENSOR_F32), -3), fn);
    CHECK_BAD(f(tensor_scalar(1, TENSOR_F32), 1), fn);
}
void bad_input_softmax(void) { bad_softmax(tensor_softmax, "tensor_softmax"); }
void bad_input_log_softmax(void) { bad_softmax(tensor_log_softmax, "tensor_log_softmax"); }

/* ---- layer_norm, rms_norm ---- */

TEST(layer_norm_and_rms_norm_forward) {
    tensor_dtype dts[] = {TENSOR_F32, TENSOR_F64, TENSOR_BF16};
    for (int d = 0; d < 3; d++) {
        double tol = dts[d] == TENSOR_F64 ? 1e-12 : dts[d] == TENSOR_F32 ? 1e-5 : 4 * test_tol(dts[d]);
        tensor *x = test_random(dts[d], TENSOR_SHAPE(2, 3, 8), -2, 3), *w = test_random(dts[d], TENSOR_SHAPE(8), 0.5, 1.5), *b = test_random(dts[d], TENSOR_SHAPE(8), -1, 1);
        double *xv = test_values(x), *wv = test_values(w), *bv = test_values(b);
        for (int rms = 0; rms < 2; rms++)
            for (int opt = 0; opt < 3; opt++) { /* weight and bias, weight only, neither */
                const double *wp = opt < 2 ? wv : NULL, *bp = opt == 0 && !rms ? bv : NULL;
                double *e = test_ref_norm(xv, 6, 8, wp, bp, 1e-5, rms != 0);
                tensor *y = rms ? tensor_rms_norm(x, opt < 2 ? w : NULL, 1e-5) : tensor_layer_norm(x, opt < 2 ? w : NULL, opt == 0 ? b : NULL, 1e-5);
                CHECK_SHAPE(y, 3, (const int64_t[]){2, 3, 8});
                CHECK(y && tensor_get_dtype(y) == dts[d]);
                CHECK_VALUES(y, e, 48, tol, tol);
                free(e);
            }
        /* non-contiguous input: the normalized dim is strided */
        tensor *xt = tensor_transpose(test_random(dts[d], TENSOR_SHAPE(8, 5), -2, 3), 0, 1); /* [5, 8] */
        double *xtv = test_values(xt);
        double *e = test_ref_norm(xtv, 5, 8, wv, bv, 1e-3, false);
        CHECK_VALUES(tensor_layer_norm(xt, w, b, 1e-3), e, 40, tol, tol);
        free(e);
        e = test_ref_norm(xtv, 5, 8, wv, NULL, 1e-3, true);
        CHECK_VALUES(tensor_rms_norm(xt, w, 1e-3), e, 40, tol, tol);
        free(e);
        free(xtv); free(xv); free(wv); free(bv);
        /* zero-size batch */
        CHECK_SHAPE(tensor_layer_norm(tensor_zeros(TENSOR_SHAPE(0, 8), dts[d]), w, b, 1e-5), 2, (const int64_t[]){0, 8});
        CHECK_SHAPE(tensor_rms_norm(tensor_zeros(TENSOR_SHAPE(0, 8), dts[d]), w, 1e-5), 2, (const int64_t[]){0, 8});
    }
    /* a constant row normalizes to 0 (plus bias) */
    tensor *c = tensor_full(TENSOR_SHAPE(1, 4), 3, TENSOR_F64);
    CHECK_VALUES(tensor_layer_norm(c, NULL, NULL, 1e-5), ((const double[]){0, 0, 0, 0}), 4, 0, 0);
}

void bad_input_layer_norm(void) {
    tensor *x = tensor_ones(TENSOR_SHAPE(2, 4), TENSOR_F32);
    CHECK_BAD(tensor_layer_norm(NULL, NULL, NULL, 1e-5), "tensor_layer_norm");
    CHECK_BAD(tensor_layer_norm(tensor_scalar(1, TENSOR_F32), NULL, NULL, 1e-5), "tensor_layer_norm");
    CHECK_BAD(tensor_layer_norm(tensor_ones(TENSOR_SHAPE(2, 4), TENSOR_I32), NULL, NULL, 1e-5), "tensor_layer_norm");
    CHECK_BAD(tensor_layer_norm(x, tensor_ones(TENSOR_SHAPE(3), TENSOR_F32), NULL, 1e-5), "tensor_layer_norm");
    CHECK_BAD(tensor_layer_norm(x, NULL, tensor_ones(TENSOR_SHAPE(2, 4), TENSOR_F32), 1e-5), "tensor_layer_norm");
    CHECK_BAD(tensor_layer_norm(x, tensor_ones(TENSOR_SHAPE(4), TENSOR_I64), NULL, 1e-5), "tensor_layer_norm");
}

void bad_input_rms_norm(void) {
    tensor *x = tensor_ones(TENSOR_SHAPE(2, 4), TENSOR_F32);
    CHECK_BAD(tensor_rms_norm(NULL, NULL, 1e-5), "tensor_rms_norm");
    CHECK_BAD(tensor_rms_norm(tensor_scalar(1, TENSOR_F32), NULL, 1e-5), "tensor_rms_norm");
    CHECK_BAD(tensor_rms_norm(tensor_ones(TENSOR_SHAPE(2, 4), TENSOR_U8), NULL, 1e-5), "tensor_rms_norm");
    CHECK_BAD(tensor_rms_norm(x, tensor_ones(TENSOR_SHAPE(5), TENSOR_F32), 1e-5), "tensor_rms_norm");
}

/* ---- convolutions ---- */

/* Direct convolution on row-major values: x [N, C, H, W], w [O, C/g, kH, kW], b [O] or NULL. */
static double *ref_conv2d(const double *x, int64_t N, int64_t C, int64_t H, int64_t W, const double *w, int64_t O, int64_t kH, int64_t kW,
                          const double *b, int s, int p, int d, int g, int64_t *oH, int64_t *oW) {
    *oH = (H + 2 * p - d * (kH - 1) - 1) / s + 1;
    *oW = (W + 2 * p - d * (kW - 1) - 1) / s + 1;
    int64_t Cg = C / g, Og = O / g;
    double *y = (double *)malloc(sizeof(double) * (size_t)(N * O * *oH * *oW + 1));
    for (int64_t n = 0; n < N; n++)
        for (int64_t o = 0; o < O; o++)
            for (int64_t i = 0; i < *oH; i++)
                for (int64_t j = 0; j < *oW; j++) {
                    double acc = b ? b[o] : 0;
                    for (int64_t c = 0; c < Cg; c++)
                        for (int64_t u = 0; u < kH; u++)
                            for (int64_t v = 0; v < kW; v++) {
                                int64_t h = i * s - p + u * d, ww = j * s - p + v * d;
                                if (h < 0 || h >= H || ww < 0 || ww >= W) continue;
                                acc += x[((n * C + (o / Og) * Cg + c) * H + h) * W + ww] * w[((o * Cg + c) * kH + u) * kW + v];
                            }
                    y[((n * O + o) * *oH + i) * *oW + j] = acc;
                }
    return y;
}

static void check_conv2d(tensor *x, tensor *w, tensor *b, int s, int p, int d, int g, double tol) {
    tensor *y = tensor_conv2d(x, w, b, s, p, d, g);
    CHECK_MSG(y != NULL, "conv2d failed: %s", tensor_last_error() ? tensor_last_error() : "?");
    if (!y) return;
    bool batched = tensor_ndim(x) == 4;
    const int64_t *xs = tensor_shape(x), *ws = tensor_shape(w);
    int64_t N = batched ? xs[0] : 1, C = xs[batched], H = xs[batched + 1], W = xs[batched + 2];
    double *xv = test_values(x), *wv = test_values(w), *bv = b ? test_values(b) : NULL;
    int64_t oH, oW;
    double *e = ref_conv2d(xv, N, C, H, W, wv, ws[0], ws[2], ws[3], bv, s, p, d, g, &oH, &oW);
    if (batched) CHECK_SHAPE(y, 4, (const int64_t[]){N, ws[0], oH, oW});
    else CHECK_SHAPE(y, 3, (const int64_t[]){ws[0], oH, oW});
    CHECK_VALUES(y, e, N * ws[0] * oH * oW, tol, tol);
    /* the fast path agrees with the library's reference loop */
    bool was = tensor_set_reference_kernels(true);
    tensor *r = tensor_conv2d(x, w, b, s, p, d, g);
    tensor_set_reference_kernels(was);
    CHECK_VALUES(r, e, N * ws[0] * oH * oW, tol, tol);
    free(xv); free(wv); free(bv); free(e);
}

TEST(conv2d_forward_combos) {
    /* N, C, H, W, O, kH, kW, stride, padding, dilation, groups */
    const int cases[][11] = {
        {1, 1, 5, 5, 1, 3, 3, 1, 0, 1, 1}, {2, 3, 7, 6, 4, 3, 3, 1, 1, 1, 1}, {2, 4, 8, 8, 6, 3, 3, 2, 1, 1, 2},
        {1, 2, 9, 7, 2, 3, 2, 2, 2, 2, 1}, {2, 4, 6, 6, 4, 3, 3, 1, 1, 1, 4}, {1, 3, 5, 5, 6, 1, 1, 1, 0, 1, 1},
        {2, 6, 5, 4, 3, 1, 1, 1, 0, 1, 3}, {1, 2, 4, 4, 2, 1, 1, 2, 1, 1, 1}, {1, 1, 3, 3, 2, 3, 3, 1, 0, 1, 1},
        {3, 2, 10, 3, 4, 5, 1, 3, 2, 1, 2}, {1, 3, 12, 12, 5, 3, 3, 1, 2, 3, 1}, {2, 2, 4, 5, 2, 4, 5, 1, 0, 1, 1}};
    tensor_dtype dts[] = {TENSOR_F32, TENSOR_F64};
    for (int di = 0; di < 2; di++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            const int *q = cases[i];
            double tol = dts[di] == TENSOR_F64 ? 1e-12 : 2e-5;
            tensor *x = test_random(dts[di], TENSOR_SHAPE(q[0], q[1], q[2], q[3]), -1, 1);
            tensor *w = test_random(dts[di], TENSOR_SHAPE(q[4], q[1] / q[10], q[5], q[6]), -1, 1);
            tensor *b = test_random(dts[di], TENSOR_SHAPE(q[4]), -1, 1);
            check_conv2d(x, w, b, q[7], q[8], q[9], q[10], tol);
            check_conv2d(x, w, NULL, q[7], q[8], q[9], q[10], tol);
        }
}

TEST(conv2d_layouts_dtypes_and_sizes) {
    /* unbatched input [C, H, W] */
    tensor *w = test_random(TENSOR_F32, TENSOR_SHAPE(4, 3, 3, 3), -1, 1), *b = test_random(TENSOR_F32, TENSOR_SHAPE(4), -1, 1);
    check_conv2d(test_random(TENSOR_F32, TENSOR_SHAPE(3, 6, 5), -1, 1), w, b, 1, 1, 1, 1, 2e-5);
    /* non-contiguous input (H and W swapped) and weight */
    tensor *xt = tensor_transpose(test_random(TENSOR_F32, TENSOR_SHAPE(2, 3, 5, 7), -1, 1), 2, 3);
    tensor *wt = tensor_transpose(test_random(TENSOR_F32, TENSOR_SHAPE(4, 3, 3, 3), -1, 1), 2, 3);
    CHECK(!tensor_is_contiguous(xt) && !tensor_is_contiguous(wt));
    check_conv2d(xt, wt, b, 2, 1, 1, 1, 2e-5);
    check_conv2d(tensor_slice(test_random(TENSOR_F64, TENSOR_SHAPE(2, 3, 9, 9), -1, 1), 3, 0, 9, 2), test_random(TENSOR_F64, TENSOR_SHAPE(2, 3, 2, 2), -1, 1), NULL, 1, 0, 1, 1, 1e-12);
    /* f16 and bf16 compute in f32 */
    check_conv2d(test_random(TENSOR_F16, TENSOR_SHAPE(1, 2, 5, 5), -1, 1), test_random(TENSOR_F16, TENSOR_SHAPE(2, 2, 3, 3), -1, 1), test_random(TENSOR_F16, TENSOR_SHAPE(2), -1, 1), 1, 1, 1, 1, 1e-2);
    check_conv2d(test_random(TENSOR_BF16, TENSOR_SHAPE(2, 2, 5, 5), -1, 1), test_random(TENSOR_BF16, TENSOR_SHAPE(4, 1, 3, 3), -1, 1), NULL, 2, 1, 1, 2, 6e-2);
    /* zero-size batch and zero out_channels */
    tensor *y = tensor_conv2d(tensor_zeros(TENSOR_SHAPE(0, 3, 5, 5), TENSOR_F32), w, b, 1, 0, 1, 1);
    CHECK_SHAPE(y, 4, (const int64_t[]){0, 4, 3, 3});
    y = tensor_conv2d(tensor_zeros(TENSOR_SHAPE(1, 3, 5, 5), TENSOR_F32), tensor_zeros(TENSOR_SHAPE(0, 3, 3, 3), TENSOR_F32), NULL, 1, 0, 1, 1);
    CHECK_SHAPE(y, 4, (const int64_t[]){1, 0, 3, 3});
    /* a larger one that crosses the GEMM's blocks */
    check_conv2d(test_random(TENSOR_F32, TENSOR_SHAPE(1, 16, 20, 20), -1, 1), test_random(TENSOR_F32, TENSOR_SHAPE(8, 16, 3, 3), -1, 1), NULL, 1, 1, 1, 1, 1e-4);
}

void bad_input_conv2d(void) {
    tensor *x = tensor_ones(TENSOR_SHAPE(1, 4, 5, 5), TENSOR_F32), *w = tensor_ones(TENSOR_SHAPE(2, 4, 3, 3), TENSOR_F32);
    const char *fn = "tensor_conv2d";
    CHECK_BAD(tensor_conv2d(NULL, w, NULL, 1, 0, 1, 1), fn);
    CHECK_BAD(tensor_conv2d(x, NULL, NULL, 1, 0, 1, 1), fn);
    CHECK_BAD(tensor_conv2d(tensor_ones(TENSOR_SHAPE(4, 5), TENSOR_F32), w, NULL, 1, 0, 1, 1), fn);             /* 2-D input */
    CHECK_BAD(tensor_conv2d(x, tensor_ones(TENSOR_SHAPE(2, 4, 3), TENSOR_F32), NULL, 1, 0, 1, 1), fn);         /* 3-D weight */
    CHECK_BAD(tensor_conv2d(x, tensor_ones(TENSOR_SHAPE(2, 3, 3, 3), TENSOR_F32), NULL, 1, 0, 1, 1), fn);      /* channels */
    CHECK_BAD(tensor_conv2d(x, tensor_ones(TENSOR_SHAPE(3, 2, 3, 3), TENSOR_F32), NULL, 1, 0, 1, 2), fn);      /* O % groups */
    CHECK_BAD(tensor_conv2d(x, tensor_ones(TENSOR_SHAPE(2, 2, 3, 3), TENSOR_F32), NULL, 1, 0, 1, 3), fn);      /* C % groups */
    CHECK_BAD(tensor_conv2d(x, w, NULL, 0, 0, 1, 1), fn);                                                      /* stride */
    CHECK_BAD(tensor_conv2d(x, w, NULL, 1, -1, 1, 1), fn);                                                     /* padding */
    CHECK_BAD(tensor_conv2d(x, w, NULL, 1, 0, 0, 1), fn);                                                      /* dilation */
    CHECK_BAD(tensor_conv2d(x, w, NULL, 1, 0, 1, 0), fn);                                                      /* groups */
    CHECK_BAD(tensor_conv2d(x, w, NULL, 1, 0, 3, 1), fn);                                                      /* dilated kernel 7 > 5 */
    CHECK_BAD(tensor_conv2d(x, tensor_ones(TENSOR_SHAPE(2, 4, 6, 6), TENSOR_F32), NULL, 1, 0, 1, 1), fn);      /* kernel > input */
    CHECK_BAD(tensor_conv2d(x, w, tensor_ones(TENSOR_SHAPE(3), TENSOR_F32), 1, 0, 1, 1), fn);                  /* bias size */
    CHECK_BAD(tensor_conv2d(x, w, tensor_ones(TENSOR_SHAPE(2), TENSOR_F64), 1, 0, 1, 1), fn);                  /* bias dtype */
    CHECK_BAD(tensor_conv2d(x, tensor_ones(TENSOR_SHAPE(2, 4, 3, 3), TENSOR_F64), NULL, 1, 0, 1, 1), fn);      /* weight dtype */
    CHECK_BAD(tensor_conv2d(tensor_ones(TENSOR_SHAPE(1, 4, 5, 5), TENSOR_BOOL), tensor_ones(TENSOR_SHAPE(2, 4, 3, 3), TENSOR_BOOL), NULL, 1, 0, 1, 1), fn); /* (integers run, as in PyTorch) */
}

/* Direct 1-D convolution: x [N, C, L], w [O, C/g, k]. */
static double *ref_conv1d(const double *x, int64_t N, int64_t C, int64_t L, const double *w, int64_t O, int64_t k, const double *b, int s, int p, int d, int g, int64_t *oL) {
    *oL = (L + 2 * p - d * (k - 1) - 1) / s + 1;
    int64_t Cg = C / g, Og = O / g;
    double *y = (double *)malloc(sizeof(double) * (size_t)(N * O * *oL + 1));
    for (int64_t n = 0; n < N; n++)
        for (int64_t o = 0; o < O; o++)
            for (int64_t j = 0; j < *oL; j++) {
                double acc = b ? b[o] : 0;
                for (int64_t c = 0; c < Cg; c++)
                    for (int64_t v = 0; v < k; v++) {
                        int64_t l = j * s - p + v * d;
                        if (l >= 0 && l < L) acc += x[(n * C + (o / Og) * Cg + c) * L + l] * w[(o * Cg + c) * k + v];
                    }
                y[(n * O + o) * *oL + j] = acc;
            }
    return y;
}

static void check_conv1d(tensor *x, tensor *w, tensor *b, int s, int p, int d, int g, double tol) {
    tensor *y = tensor_conv1d(x, w, b, s, p, d, g);
    CHECK_MSG(y != NULL, "conv1d failed: %s", tensor_last_error() ? tensor_last_error() : "?");
    if (!y) return;
    bool batched = tensor_ndim(x) == 3;
    const int64_t *xs = tensor_shape(x), *ws = tensor_shape(w);
    int64_t N = batched ? xs[0] : 1, C = xs[batched], L = xs[batched + 1], oL;
    double *xv = test_values(x), *wv = test_values(w), *bv = b ? test_values(b) : NULL;
    double *e = ref_conv1d(xv, N, C, L, wv, ws[0], ws[2], bv, s, p, d, g, &oL);
    if (batched) CHECK_SHAPE(y, 3, (const int64_t[]){N, ws[0], oL});
    else CHECK_SHAPE(y, 2, (const int64_t[]){ws[0], oL});
    CHECK_VALUES(y, e, N * ws[0] * oL, tol, tol);
    bool was = tensor_set_reference_kernels(true);
    tensor *r = tensor_conv1d(x, w, b, s, p, d, g);
    tensor_set_reference_kernels(was);
    CHECK_VALUES(r, e, N * ws[0] * oL, tol, tol);
    free(xv); free(wv); free(bv); free(e);
}

TEST(conv1d_forward) {
    /* N, C, L, O, k, stride, padding, dilation, groups */
    const int cases[][9] = {{1, 1, 5, 1, 3, 1, 0, 1, 1}, {2, 3, 11, 4, 3, 2, 1, 1, 1}, {2, 4, 9, 6, 2, 1, 2, 3, 2},
                            {3, 6, 7, 6, 3, 1, 1, 1, 6}, {1, 2, 6, 4, 1, 1, 0, 1, 1}, {2, 2, 4, 2, 4, 3, 0, 1, 1}};
    tensor_dtype dts[] = {TENSOR_F32, TENSOR_F64};
    for (int di = 0; di < 2; di++)
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            const int *q = cases[i];
            double tol = dts[di] == TENSOR_F64 ? 1e-12 : 2e-5;
            tensor *x = test_random(dts[di], TENSOR_SHAPE(q[0], q[1], q[2]), -1, 1);
            tensor *w = test_random(dts[di], TENSOR_SHAPE(q[3], q[1] / q[8], q[4]), -1, 1);
            check_conv1d(x, w, test_random(dts[di], TENSOR_SHAPE(q[3]), -1, 1), q[5], q[6], q[7], q[8], tol);
            check_conv1d(x, w, NULL, q[5], q[6], q[7], q[8], tol);
        }
    /* unbatched, non-contiguous, f16, zero batch */
    tensor *w = test_random(TENSOR_F32, TENSOR_SHAPE(3, 2, 3), -1, 1);
    check_conv1d(test_random(TENSOR_F32, TENSOR_SHAPE(2, 8), -1, 1), w, NULL, 1, 1, 1, 1, 2e-5);
    check_conv1d(tensor_transpose(test_random(TENSOR_F32, TENSOR_SHAPE(2, 8, 2), -1, 1), 1, 2), w, NULL, 2, 0, 1, 1, 2e-5);
    check_conv1d(test_random(TENSOR_F16, TENSOR_SHAPE(1, 2, 8), -1, 1), test_random(TENSOR_F16, TENSOR_SHAPE(3, 2, 3), -1, 1), NULL, 1, 1, 1, 1, 1e-2);
    CHECK_SHAPE(tensor_conv1d(tensor_zeros(TENSOR_SHAPE(0, 2, 8), TENSOR_F32), w, NULL, 1, 0, 1, 1), 3, (const int64_t[]){0, 3, 6});
}

void bad_input_conv1d(void) {
    tensor *x = tensor_ones(TENSOR_SHAPE(1, 4, 5), TENSOR_F32), *w = tensor_ones(TENSOR_SHAPE(2, 4, 3), TENSOR_F32);
    const char *fn = "tensor_conv1d";
    CHECK_BAD(tensor_conv1d(NULL, w, NULL, 1, 0, 1, 1), fn);
    CHECK_BAD(tensor_conv1d(x, NULL, NULL, 1, 0, 1, 1), fn);
    CHECK_BAD(tensor_conv1d(tensor_ones(TENSOR_SHAPE(1, 1, 4, 5), TENSOR_F32), w, NULL, 1, 0, 1, 1), fn);      /* 4-D input */
    CHECK_BAD(tensor_conv1d(x, tensor_ones(TENSOR_SHAPE(2, 4, 3, 3), TENSOR_F32), NULL, 1, 0, 1, 1), fn);      /* 4-D weight */
    CHECK_BAD(tensor_conv1d(x, tensor_ones(TENSOR_SHAPE(2, 3, 3), TENSOR_F32), NULL, 1, 0, 1, 1), fn);         /* channels */
    CHECK_BAD(tensor_conv1d(x, w, NULL, -1, 0, 1, 1), fn);
    CHECK_BAD(tensor_conv1d(x, w, NULL, 1, -2, 1, 1), fn);
    CHECK_BAD(tensor_conv1d(x, w, NULL, 1, 0, -1, 1), fn);
    CHECK_BAD(tensor_conv1d(x, w, NULL, 1, 0, 1, 3), fn);
    CHECK_BAD(tensor_conv1d(x, tensor_ones(TENSOR_SHAPE(2, 4, 7), TENSOR_F32), NULL, 1, 0, 1, 1), fn);         /* kernel > input */
    CHECK_BAD(tensor_conv1d(x, w, tensor_ones(TENSOR_SHAPE(2, 1), TENSOR_F32), 1, 0, 1, 1), fn);              /* bias shape */
    CHECK_BAD(tensor_conv1d(tensor_ones(TENSOR_SHAPE(1, 4, 5), TENSOR_BOOL), tensor_ones(TENSOR_SHAPE(2, 4, 3), TENSOR_BOOL), NULL, 1, 0, 1, 1), fn);
}

/* ---- pooling ---- */

static double *ref_pool(const double *x, int64_t N, int64_t C, int64_t H, int64_t W, int k, int s, int p, bool is_max, int64_t *oH, int64_t *oW) {
    if (s == 0) s = k;
    *oH = (H + 2 * p - k) / s + 1;
    *oW = (W + 2 * p - k) / s + 1;
    double *y = (double *)malloc(sizeof(double) * (size_t)(N * C * *oH * *oW + 1));
    for (int64_t n = 0; n < N * C; n++)
        for (int64_t i = 0; i < *oH; i++)
            for (int64_t j = 0; j < *oW; j++) {
                double acc = is_max ? -INFINITY : 0;
                bool nan = false;
                for (int u = 0; u < k; u++)
                    for (int v = 0; v < k; v++) {
                        int64_t h = i * s - p + u, w = j * s - p + v;
                        if (h < 0 || h >= H || w < 0 || w >= W) continue; /* padding: -inf for max, 0 for the sum */
                        double val = x[(n * H + h) * W + w];
                        if (val != val) nan = true;
                        acc = is_max ? fmax(acc, val) : acc + val;
                    }
                y[(n * *oH + i) * *oW + j] = is_max ? (nan ? NAN : acc) : acc / (k * k);
            }
    return y;
}

static void check_pool(tensor *x, int k, int s, int p, double tol) {
    for (int mx = 0; mx < 2; mx++) {
        tensor *y = mx ? tensor_max_pool2d(x, k, s, p) : tensor_avg_pool2d(x, k, s, p);
        CHECK_MSG(y != NULL, "pool failed: %s", tensor_last_error() ? tensor_last_error() : "?");
        if (!y) continue;
        bool batched = tensor_ndim(x) == 4;
        const int64_t *xs = tensor_shape(x);
        int64_t N = batched ? xs[0] : 1, C = xs[batched], H = xs[batched + 1], W = xs[batched + 2], oH, oW;
        double *xv = test_values(x);
        double *e = ref_pool(xv, N, C, H, W, k, s, p, mx != 0, &oH, &oW);
        if (batched) CHECK_SHAPE(y, 4, (const int64_t[]){N, C, oH, oW});
        else CHECK_SHAPE(y, 3, (const int64_t[]){C, oH, oW});
        CHECK(tensor_get_dtype(y) == tensor_get_dtype(x));
        CHECK_VALUES(y, e, N * C * oH * oW, tol, tol);
        free(xv);
        free(e);
    }
}

TEST(pool2d_forward) {
    tensor_dtype dts[] = {TENSOR_F32, TENSOR_F64, TENSOR_BF16};
    for (int d = 0; d < 3; d++) {
        double tol = dts[d] == TENSOR_F64 ? 1e-14 : 2 * test_tol(dts[d]);
        tensor *x = test_random(dts[d], TENSOR_SHAPE(2, 3, 7, 6), -2, 1); /* mostly negative: padding must not win the max */
        const int combos[][3] = {{1, 0, 0}, {2, 0, 0}, {2, 1, 1}, {3, 2, 1}, {3, 1, 0}, {2, 2, 1}, {4, 3, 2}, {3, 3, 0}};
        for (size_t i = 0; i < sizeof combos / sizeof combos[0]; i++) check_pool(x, combos[i][0], combos[i][1], combos[i][2], tol);
        check_pool(test_random(dts[d], TENSOR_SHAPE(3, 5, 5), -1, 1), 3, 2, 1, tol);                               /* unbatched */
        check_pool(tensor_transpose(test_random(dts[d], TENSOR_SHAPE(2, 3, 6, 7), -1, 1), 2, 3), 2, 1, 1, tol);    /* non-contiguous */
        check_pool(tensor_slice(test_random(dts[d], TENSOR_SHAPE(1, 2, 8, 8), -1, 1), 2, 0, 8, 2), 2, 0, 0, tol);
    }
    /* NaN propagates through max pooling */
    tensor *n = test_tensor(TENSOR_F32, TENSOR_SHAPE(1, 1, 2, 2), (const double[]){1, NAN, 3, 2});
    CHECK_VALUES(tensor_max_pool2d(n, 2, 0, 0), ((const double[]){NAN}), 1, 0, 0);
    CHECK_VALUES(tensor_max_pool2d(n, 1, 0, 0), ((const double[]){1, NAN, 3, 2}), 4, 0, 0);
    /* zero-size batch */
    CHECK_SHAPE(tensor_max_pool2d(tensor_zeros(TENSOR_SHAPE(0, 2, 4, 4), TENSOR_F32), 2, 0, 0), 4, (const int64_t[]){0, 2, 2, 2});
    CHECK_SHAPE(tensor_avg_pool2d(tensor_zeros(TENSOR_SHAPE(0, 2, 4, 4), TENSOR_F32), 2, 0, 0), 4, (const int64_t[]){0, 2, 2, 2});
}

static void bad_pool(tensor *(*f)(tensor *, int, int, int), const char *fn) {
    tensor *x = tensor_ones(TENSOR_SHAPE(1, 2, 4, 4), TENSOR_F32);
    CHECK_BAD(f(NULL, 2, 0, 0), fn);
    CHECK_BAD(f(tensor_ones(TENSOR_SHAPE(4, 4), TENSOR_F32), 2, 0, 0), fn);       /* 2-D */
    CHECK_BAD(f(x, 0, 0, 0), fn);                                               /* kernel */
    CHECK_BAD(f(x, 2, -1, 0), fn);                                              /* stride */
    CHECK_BAD(f(x, 2, 0, -1), fn);                                              /* padding < 0 */
    CHECK_BAD(f(x, 3, 0, 2), fn);                                               /* padding > kernel / 2 */
    CHECK_BAD(f(x, 5, 0, 0), fn);                                               /* output too small */
    CHECK_BAD(f(tensor_ones(TENSOR_SHAPE(1, 2, 4, 4), TENSOR_I32), 2, 0, 0), fn);  /* (avg pooling takes int64, as in PyTorch) */
    CHECK_BAD(f(tensor_ones(TENSOR_SHAPE(1, 0, 4, 4), TENSOR_F32), 2, 0, 0), fn); /* zero channels */
}
void bad_input_max_pool2d(void) { bad_pool(tensor_max_pool2d, "tensor_max_pool2d"); }
void bad_input_avg_pool2d(void) { bad_pool(tensor_avg_pool2d, "tensor_avg_pool2d"); }

/* ---- embedding ---- */

TEST(embedding_forward) {
    tensor *w = test_random(TENSOR_F32, TENSOR_SHAPE(10, 4), -1, 1);
    double *wv = test_values(w);
    const double ids[] = {3, 0, 9, 3, 7, 1};
    tensor_dtype its[] = {TENSOR_I64, TENSOR_I32};
    for (int it = 0; it < 2; it++) {
        tensor *ix = test_tensor(its[it], TENSOR_SHAPE(2, 3), ids);
        tensor *y = tensor_embedding(w, ix);
        CHECK_SHAPE(y, 3, (const int64_t[]){2, 3, 4});
        double e[24];
        for (int i = 0; i < 6; i++)
            for (int d = 0; d < 4; d++) e[i * 4 + d] = wv[(int)ids[i] * 4 + d];
        CHECK_VALUES(y, e, 24, 0, 0);
        /* non-contiguous indices and weight */
        tensor *ixt = tensor_transpose(ix, 0, 1); /* [3, 2]: ids 3, 3, 0, 7, 9, 1 */
        tensor *wt = tensor_transpose(tensor_contiguous(tensor_transpose(w, 0, 1)), 0, 1);
        y = tensor_embedding(wt, ixt);
        CHECK_SHAPE(y, 3, (const int64_t[]){3, 2, 4});
        const int order[] = {0, 3, 1, 4, 2, 5};
        for (int i = 0; i < 6; i++)
            for (int d = 0; d < 4; d++) e[i * 4 + d] = wv[(int)ids[order[i]] * 4 + d];
        CHECK_VALUES(y, e, 24, 0, 0);
    }
    /* 0-dim index: one row; empty indices: [0, D]; integer weights */
    tensor *y = tensor_embedding(w, tensor_scalar(9, TENSOR_I64));
    CHECK_SHAPE(y, 1, (const int64_t[]){4});
    CHECK_VALUES(y, wv + 36, 4, 0, 0);
    CHECK_SHAPE(tensor_embedding(w, tensor_zeros(TENSOR_SHAPE(0), TENSOR_I64)), 2, (const int64_t[]){0, 4});
    tensor *wi = test_tensor(TENSOR_I32, TENSOR_SHAPE(3, 2), (const double[]){1, 2, 3, 4, 5, 6});
    CHECK_VALUES(tensor_embedding(wi, test_tensor(TENSOR_I64, TENSOR_SHAPE(2), (const double[]){2, 0})), ((const double[]){5, 6, 1, 2}), 4, 0, 0);
    free(wv);
}

void bad_input_embedding(void) {
    tensor *w = tensor_ones(TENSOR_SHAPE(5, 3), TENSOR_F32);
    const char *fn = "tensor_embedding";
    CHECK_BAD(tensor_embedding(NULL, tensor_zeros(TENSOR_SHAPE(2), TENSOR_I64)), fn);
    CHECK_BAD(tensor_embedding(w, NULL), fn);
    CHECK_BAD(tensor_embedding(tensor_ones(TENSOR_SHAPE(5), TENSOR_F32), tensor_zeros(TENSOR_SHAPE(2), TENSOR_I64)), fn);
    CHECK_BAD(tensor_embedding(w, tensor_zeros(TENSOR_SHAPE(2), TENSOR_F32)), fn);              /* float indices */
    CHECK_BAD(tensor_embedding(w, tensor_full(TENSOR_SHAPE(2), 5, TENSOR_I64)), fn);            /* out of range */
    CHECK_BAD(tensor_embedding(w, tensor_full(TENSOR_SHAPE(2), -1, TENSOR_I32)), fn);           /* negative */
}

/* ---- dropout ---- */

TEST(dropout_forward) {
    int64_t n = 100000;
    tensor *x = test_random(TENSOR_F32, 1, &n, 0.5, 1.5);
    double *xv = test_values(x);
    tensor_manual_seed(7);
    tensor *y = tensor_dropout(x, 0.3, true);
    CHECK(y && tensor_get_dtype(y) == TENSOR_F32);
    double *yv = test_values(y);
    int64_t zeros = 0;
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        if (yv[i] == 0) zeros++;
        else if (fabs(yv[i] - xv[i] / 0.7) > 1e-6 * fabs(yv[i]) && bad++ < 3) CHECK_NEAR(yv[i], xv[i] / 0.7, 1e-6, 1e-6);
    }
    /* 30000 expected zeros, standard deviation ~145 */
    CHECK_MSG(zeros > 29200 && zeros < 30800, "dropped %lld of 100000 at p = 0.3", (long long)zeros);
    /* the same seed gives the same mask */
    tensor_manual_seed(7);
    double *y2 = test_values(tensor_dropout(x, 0.3, true));
    CHECK_VALUES(tensor_dropout(x, 0, true), xv, n, 0, 0);
    CHECK(memcmp(yv, y2, sizeof(double) * (size_t)n) == 0);
    free(yv);
    free(y2);
    /* not training, or p = 0: a copy with its own storage; p = 1: zeros */
    tensor *c = tensor_dropout(x, 0.5, false);
    CHECK(c && !tensor_shares_storage(c, x));
    CHECK_VALUES(c, xv, n, 0, 0);
    CHECK_VALUES(tensor_dropout(x, 0, true), xv, n, 0, 0);
    tensor *z = tensor_dropout(x, 1, true);
    double *zv = test_values(z);
    bool all0 = true;
    for (int64_t i = 0; i < n; i++) all0 = all0 && zv[i] == 0;
    CHECK(all0);
    free(zv);
    free(xv);
    /* f64, non-contiguous, integers when not training */
    tensor *xt = tensor_transpose(test_random(TENSOR_F64, TENSOR_SHAPE(30, 40), 1, 2), 0, 1);
    double *tv = test_values(xt), *dv = test_values(tensor_dropout(xt, 0.5, true));
    int64_t kept = 0;
    for (int i = 0; i < 1200; i++) {
        if (dv[i] != 0) { kept++; CHECK_NEAR(dv[i], tv[i] * 2, 0, 1e-15); }
    }
    CHECK(kept > 450 && kept < 750);
    free(tv);
    free(dv);
    tensor *iv = test_tensor(TENSOR_I64, TENSOR_SHAPE(3), (const double[]){1, 2, 3});
    CHECK_VALUES(tensor_dropout(iv, 0.5, false), ((const double[]){1, 2, 3}), 3, 0, 0);
    CHECK_SHAPE(tensor_dropout(tensor_zeros(TENSOR_SHAPE(0, 3), TENSOR_F32), 0.5, true), 2, (const int64_t[]){0, 3});
}

void bad_input_dropout(void) {
    tensor *x = tensor_ones(TENSOR_SHAPE(3), TENSOR_F32);
    CHECK_BAD(tensor_dropout(NULL, 0.5, true), "tensor_dropout");
    CHECK_BAD(tensor_dropout(x, -0.1, true), "tensor_dropout");
    CHECK_BAD(tensor_dropout(x, 1.5, false), "tensor_dropout");
    CHECK_BAD(tensor_dropout(x, NAN, true), "tensor_dropout");
    CHECK_BAD(tensor_dropout(tensor_ones(TENSOR_SHAPE(3), TENSOR_I64), 0.5, true), "tensor_dropout");
}

/* ---- scaled dot-product attention ---- */

/* softmax(q k^T / sqrt(E) + bias) v by hand for one batch: q [L, E], k [S, E], v [S, Ev];
   mask_kind 0 none, 1 bool (keep where mv != 0), 2 float (added), 3 causal. */
static void ref_attention(const double *q, const double *k, const double *v, int64_t L, int64_t S, int64_t E, int64_t Ev, const double *mv, int mask_kind, double *out) {
    double *sc = (double *)malloc(sizeof(double) * (size_t)(S + 1));
    for (int64_t i = 0; i < L; i++) {
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < S; j++) {
            double s = 0;
            for (int64_t e = 0; e < E; e++) s += q[i * E + e] * k[j * E + e];
            s /= sqrt((double)E);
            if (mask_kind == 1 && mv[i * S + j] == 0) s = -INFINITY;
            if (mask_kind == 2) s += mv[i * S + j];
            if (mask_kind == 3 && j > i) s = -INFINITY;
            sc[j] = s;
            mx = fmax(mx, s);
        }
        for (int64_t j = 0; j < S; j++) { sc[j] = exp(sc[j] - mx); sum += sc[j]; }
        for (int64_t e = 0; e < Ev; e++) {
            double acc = 0;
            for (int64_t j = 0; j < S; j++) acc += sc[j] / sum * v[j * Ev + e];
            out[i * Ev + e] = acc;
        }
    }
    free(sc);
}

TEST(attention_forward) {
    tensor_dtype dts[] = {TENSOR_F32, TENSOR_F64};
    int64_t B = 2, L = 3, S = 5, E = 4, Ev = 6;
    for (int d = 0; d < 2; d++) {
        double tol = dts[d] == TENSOR_F64 ? 1e-12 : 1e-5;
        tensor *q = test_random(dts[d], TENSOR_SHAPE(2, 3, 4), -1, 1), *k = test_random(dts[d], TENSOR_SHAPE(2, 5, 4), -1, 1), *v = test_random(dts[d], TENSOR_SHAPE(2, 5, 6), -1, 1);
        double bmask[15], fmask[15];
        for (int i = 0; i < 15; i++) { bmask[i] = (i % 4) != 1; fmask[i] = test_uniform(-2, 2); }
        tensor *bm = test_tensor(TENSOR_BOOL, TENSOR_SHAPE(3, 5), bmask), *fm = test_tensor(dts[d], TENSOR_SHAPE(3, 5), fmask);
        double *qv = test_values(q), *kv = test_values(k), *vv = test_values(v);
        double e[36];
        for (int kind = 0; kind < 4; kind++) {
            for (int64_t b = 0; b < B; b++)
                ref_attention(qv + b * L * E, kv + b * S * E, vv + b * S * Ev, L, S, E, Ev, kind == 1 ? bmask : fmask, kind, e + b * L * Ev);
            tensor *y = tensor_scaled_dot_product_attention(q, k, v, kind == 1 ? bm : kind == 2 ? fm : NULL, kind == 3);
            CHECK_SHAPE(y, 3, (const int64_t[]){2, 3, 6});
            CHECK_VALUES(y, e, 36, tol, tol);
        }
        /* non-contiguous q (a transposed copy) and k broadcast over a head dim */
        tensor *qt = tensor_transpose(tensor_contiguous(tensor_transpose(q, 1, 2)), 1, 2);
        for (int64_t b = 0; b < B; b++) ref_attention(qv + b * L * E, kv + b * S * E, vv + b * S * Ev, L, S, E, Ev, NULL, 0, e + b * L * Ev);
        CHECK_VALUES(tensor_scaled_dot_product_attention(qt, k, v, NULL, false), e, 36, tol, tol);
        tensor *q4 = tensor_unsqueeze(q, 0); /* [1, 2, 3, 4] with k, v [2, 5, *]: batch dims broadcast */
        tensor *y4 = tensor_scaled_dot_product_attention(q4, k, v, NULL, false);
        CHECK_SHAPE(y4, 4, (const int64_t[]){1, 2, 3, 6});
        CHECK_VALUES(y4, e, 36, tol, tol);
        free(qv); free(kv); free(vv);
    }
    /* zero-size batch */
    tensor *y0 = tensor_scaled_dot_product_attention(tensor_zeros(TENSOR_SHAPE(0, 3, 4), TENSOR_F32), tensor_zeros(TENSOR_SHAPE(0, 5, 4), TENSOR_F32),
                                                     tensor_zeros(TENSOR_SHAPE(0, 5, 6), TENSOR_F32), NULL, true);
    CHECK_SHAPE(y0, 3, (const int64_t[]){0, 3, 6});
    /* a fully masked row gives NaN, as in PyTorch */
    tensor *q = test_random(TENSOR_F32, TENSOR_SHAPE(2, 3), -1, 1), *k = test_random(TENSOR_F32, TENSOR_SHAPE(2, 3), -1, 1), *v = test_random(TENSOR_F32, TENSOR_SHAPE(2, 2), -1, 1);
    tensor *m = test_tensor(TENSOR_BOOL, TENSOR_SHAPE(2, 2), (const double[]){0, 0, 1, 1});
    double *yv = test_values(tensor_scaled_dot_product_attention(q, k, v, m, false));
    CHECK(isnan(yv[0]) && isnan(yv[1]) && !isnan(yv[2]) && !isnan(yv[3]));
    free(yv);
}

void bad_input_scaled_dot_product_attention(void) {
    const char *fn = "tensor_scaled_dot_product_attention";
    tensor *q = tensor_ones(TENSOR_SHAPE(2, 3, 4), TENSOR_F32), *k = tensor_ones(TENSOR_SHAPE(2, 5, 4), TENSOR_F32), *v = tensor_ones(TENSOR_SHAPE(2, 5, 6), TENSOR_F32);
    CHECK_BAD(tensor_scaled_dot_product_attention(NULL, k, v, NULL, false), fn);
    CHECK_BAD(tensor_scaled_dot_product_attention(q, NULL, v, NULL, false), fn);
    CHECK_BAD(tensor_scaled_dot_product_attention(q, k, NULL, NULL, false), fn);
    CHECK_BAD(tensor_scaled_dot_product_attention(tensor_ones(TENSOR_SHAPE(4), TENSOR_F32), k, v, NULL, false), fn);         /* 1-D */
    CHECK_BAD(tensor_scaled_dot_product_attention(q, tensor_ones(TENSOR_SHAPE(2, 5, 3), TENSOR_F32), v, NULL, false), fn);   /* E */
    CHECK_BAD(tensor_scaled_dot_product_attention(q, k, tensor_ones(TENSOR_SHAPE(2, 4, 6), TENSOR_F32), NULL, false), fn);   /* S */
    CHECK_BAD(tensor_scaled_dot_product_attention(q, k, tensor_ones(TENSOR_SHAPE(2, 5, 6), TENSOR_F64), NULL, false), fn);   /* dtype */
    CHECK_BAD(tensor_scaled_dot_product_attention(q, k, v, tensor_ones(TENSOR_SHAPE(3, 5), TENSOR_BOOL), true), fn);         /* mask + causal */
    CHECK_BAD(tensor_scaled_dot_product_attention(q, k, v, tensor_ones(TENSOR_SHAPE(3, 5), TENSOR_I64), false), fn);         /* mask dtype */
    CHECK_BAD(tensor_scaled_dot_product_attention(q, k, v, tensor_ones(TENSOR_SHAPE(3, 4), TENSOR_BOOL), false), fn);        /* mask shape */
    CHECK_BAD(tensor_scaled_dot_product_attention(q, k, v, tensor_ones(TENSOR_SHAPE(4, 2, 3, 5), TENSOR_BOOL), false), fn);  /* mask grows */
}

/* ---- losses ---- */

/* -mean of logp[n, t[n], rest] over targets (ignoring -100): x [N, C, R] row-major. */
static double ref_nll(const double *x, int64_t N, int64_t C, int64_t R, const double *t) {
    double s = 0;
    int64_t cnt = 0;
    for (int64_t n = 0; n < N; n++)
        for (int64_t r = 0; r < R; r++) {
            int64_t c = (int64_t)t[n * R + r];
            if (c == -100) continue;
            s += x[(n * C + c) * R + r];
            cnt++;
        }
    return -s / (double)cnt;
}

/* Row-wise log-softmax over C of x [N, C, R]. */
static double *ref_log_softmax_c(const double *x, int64_t N, int64_t C, int64_t R) {
    double *o = (double *)malloc(sizeof(double) * (size_t)(N * C * R + 1));
    for (int64_t n = 0; n < N; n++)
        for (int64_t r = 0; r < R; r++) {
            double mx = -INFINITY, s = 0;
            for (int64_t c = 0; c < C; c++) mx = fmax(mx, x[(n * C + c) * R + r]);
            for (int64_t c = 0; c < C; c++) s += exp(x[(n * C + c) * R + r] - mx);
            for (int64_t c = 0; c < C; c++) o[(n * C + c) * R + r] = x[(n * C + c) * R + r] - mx - log(s);
        }
    return o;
}

TEST(nll_loss_forward) {
    tensor_dtype dts[] = {TENSOR_F32, TENSOR_F64, TENSOR_BF16};
    for (int d = 0; d < 3; d++) {
        double tol = dts[d] == TENSOR_F64 ? 1e-13 : 2 * test_tol(dts[d]);
        tensor *x = test_random(dts[d], TENSOR_SHAPE(4, 5), -3, 0);
        double *xv = test_values(x);
        const double t[] = {1, 4, 0, 2};
        tensor *y = tensor_nll_loss(x, test_tensor(TENSOR_I64, TENSOR_SHAPE(4), t));
        CHECK(y && tensor_ndim(y) == 0 && tensor_get_dtype(y) == dts[d]);
        CHECK_NEAR(tensor_item(y), ref_nll(xv, 4, 5, 1, t), tol, tol);
        CHECK_NEAR(tensor_item(tensor_nll_loss(x, test_tensor(TENSOR_I32, TENSOR_SHAPE(4), t))), ref_nll(xv, 4, 5, 1, t), tol, tol);
        /* ignore_index -100 drops a target from the sum and the count */
        const double ti[] = {1, -100, 0, -100};
        CHECK_NEAR(tensor_item(tensor_nll_loss(x, test_tensor(TENSOR_I64, TENSOR_SHAPE(4), ti))), ref_nll(xv, 4, 5, 1, ti), tol, tol);
        /* unbatched [C] with a 0-dim target */
        CHECK_NEAR(tensor_item(tensor_nll_loss(tensor_select(x, 0, 2), tensor_scalar(3, TENSOR_I64))), -xv[2 * 5 + 3], tol, tol);
        /* non-contiguous input: [5, 4] transposed */
        tensor *xt = tensor_transpose(tensor_contiguous(tensor_transpose(x, 0, 1)), 0, 1);
        CHECK_NEAR(tensor_item(tensor_nll_loss(xt, test_tensor(TENSOR_I64, TENSOR_SHAPE(4), t))), ref_nll(xv, 4, 5, 1, t), tol, tol);
        free(xv);
        /* [N, C, d1] with targets [N, d1] */
        tensor *x3 = test_random(dts[d], TENSOR_SHAPE(2, 3, 4), -3, 0);
        double *x3v = test_values(x3);
        const double t3[] = {0, 2, 1, 1, 2, 2, 0, -100};
        CHECK_NEAR(tensor_item(tensor_nll_loss(x3, test_tensor(TENSOR_I64, TENSOR_SHAPE(2, 4), t3))), ref_nll(x3v, 2, 3, 4, t3), tol, tol);
        free(x3v);
    }
    /* every target ignored, or none at all: NaN, as in PyTorch */
    tensor *x = test_random(TENSOR_F32, TENSOR_SHAPE(2, 3), -1, 0);
    CHECK(isnan(tensor_item(tensor_nll_loss(x, tensor_full(TENSOR_SHAPE(2), -100, TENSOR_I64)))));
    CHECK(isnan(tensor_item(tensor_nll_loss(tensor_zeros(TENSOR_SHAPE(0, 3), TENSOR_F32), tensor_zeros(TENSOR_SHAPE(0), TENSOR_I64)))));
}

void bad_input_nll_loss(void) {
    const char *fn = "tensor_nll_loss";
    tensor *x = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32);
    CHECK_BAD(tensor_nll_loss(NULL, tensor_zeros(TENSOR_SHAPE(2), TENSOR_I64)), fn);
    CHECK_BAD(tensor_nll_loss(x, NULL), fn);
    CHECK_BAD(tensor_nll_loss(tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_I64), tensor_zeros(TENSOR_SHAPE(2), TENSOR_I64)), fn);
    CHECK_BAD(tensor_nll_loss(x, tensor_zeros(TENSOR_SHAPE(2), TENSOR_F32)), fn);      /* float targets */
    CHECK_BAD(tensor_nll_loss(x, tensor_zeros(TENSOR_SHAPE(3), TENSOR_I64)), fn);      /* batch size */
    CHECK_BAD(tensor_nll_loss(x, tensor_zeros(TENSOR_SHAPE(2, 1), TENSOR_I64)), fn);   /* target dims */
    CHECK_BAD(tensor_nll_loss(tensor_scalar(0, TENSOR_F32), tensor_scalar(0, TENSOR_I64)), fn);
    CHECK_BAD(tensor_nll_loss(x, tensor_full(TENSOR_SHAPE(2), 3, TENSOR_I64)), fn);    /* class out of range */
    CHECK_BAD(tensor_nll_loss(x, tensor_full(TENSOR_SHAPE(2), -1, TENSOR_I64)), fn);
}

TEST(cross_entropy_forward) {
    tensor_dtype dts[] = {TENSOR_F32, TENSOR_F64};
    for (int d = 0; d < 2; d++) {
        double tol = dts[d] == TENSOR_F64 ? 1e-13 : 1e-6;
        tensor *x = test_random(dts[d], TENSOR_SHAPE(4, 5), -3, 3);
        double *xv = test_values(x);
        double *ls = ref_log_softmax_c(xv, 4, 5, 1);
        const double t[] = {1, 4, 0, 2}, ti[] = {1, -100, 0, 2};
        CHECK_NEAR(tensor_item(tensor_cross_entropy(x, test_tensor(TENSOR_I64, TENSOR_SHAPE(4), t))), ref_nll(ls, 4, 5, 1, t), tol, tol);
        CHECK_NEAR(tensor_item(tensor_cross_entropy(x, test_tensor(TENSOR_I64, TENSOR_SHAPE(4), ti))), ref_nll(ls, 4, 5, 1, ti), tol, tol);
        /* unbatched [C] with a 0-dim target */
        CHECK_NEAR(tensor_item(tensor_cross_entropy(tensor_select(x, 0, 1), tensor_scalar(4, TENSOR_I64))), -ls[1 * 5 + 4], tol, tol);
        /* class probabilities as targets: -sum(p * log_softmax) / N */
        tensor *p = tensor_softmax(test_random(dts[d], TENSOR_SHAPE(4, 5), -1, 1), 1);
        double *pv = test_values(p), s = 0;
        for (int i = 0; i < 20; i++) s += pv[i] * ls[i];
        CHECK_NEAR(tensor_item(tensor_cross_entropy(x, p)), -s / 4, tol, tol);
        free(pv); free(ls); free(xv);
        /* [N, C, d1] */
        tensor *x3 = test_random(dts[d], TENSOR_SHAPE(2, 3, 4), -3, 3);
        double *x3v = test_values(x3), *ls3 = ref_log_softmax_c(x3v, 2, 3, 4);
        const double t3[] = {0, 2, 1, 1, 2, 2, 0, 1};
        CHECK_NEAR(tensor_item(tensor_cross_entropy(x3, test_tensor(TENSOR_I64, TENSOR_SHAPE(2, 4), t3))), ref_nll(ls3, 2, 3, 4, t3), tol, tol);
        free(x3v); free(ls3);
    }
    /* zero-size batch: the mean of nothing is NaN, as in PyTorch */
    CHECK(isnan(tensor_item(tensor_cross_entropy(tensor_zeros(TENSOR_SHAPE(0, 3), TENSOR_F32), tensor_zeros(TENSOR_SHAPE(0), TENSOR_I64)))));
    /* huge logits stay finite */
    tensor *big = test_tensor(TENSOR_F32, TENSOR_SHAPE(1, 3), (const double[]){1000, -1000, 0});
    CHECK_NEAR(tensor_item(tensor_cross_entropy(big, tensor_zeros(TENSOR_SHAPE(1), TENSOR_I64))), 0, 1e-6, 0);
    CHECK_NEAR(tensor_item(tensor_cross_entropy(big, tensor_full(TENSOR_SHAPE(1), 2, TENSOR_I64))), 1000, 0, 1e-6);
}

void bad_input_cross_entropy(void) {
    const char *fn = "tensor_cross_entropy";
    tensor *x = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32);
    CHECK_BAD(tensor_cross_entropy(NULL, tensor_zeros(TENSOR_SHAPE(2), TENSOR_I64)), fn);
    CHECK_BAD(tensor_cross_entropy(x, NULL), fn);
    CHECK_BAD(tensor_cross_entropy(tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_I64), tensor_zeros(TENSOR_SHAPE(2), TENSOR_I64)), fn);
    CHECK_BAD(tensor_cross_entropy(x, tensor_zeros(TENSOR_SHAPE(3), TENSOR_I64)), fn);        /* batch size */
    CHECK_BAD(tensor_cross_entropy(x, tensor_zeros(TENSOR_SHAPE(2, 4), TENSOR_F32)), fn);     /* probability shape */
    CHECK_BAD(tensor_cross_entropy(x, tensor_zeros(TENSOR_SHAPE(2), TENSOR_BOOL)), fn);
    CHECK_BAD(tensor_cross_entropy(tensor_scalar(1, TENSOR_F32), tensor_scalar(0, TENSOR_I64)), fn);
}

TEST(mse_loss_forward) {
    tensor_dtype dts[] = {TENSOR_F32, TENSOR_F64, TENSOR_F16};
    for (int d = 0; d < 3; d++) {
        double tol = dts[d] == TENSOR_F64 ? 1e-13 : 2 * test_tol(dts[d]);
        tensor *a = test_random(dts[d], TENSOR_SHAPE(3, 4), -2, 2), *b = test_random(dts[d], TENSOR_SHAPE(3, 4), -2, 2);
        double *av = test_values(a), *bv = test_values(b), s = 0;
        for (int i = 0; i < 12; i++) s += (av[i] - bv[i]) * (av[i] - bv[i]);
        tensor *y = tensor_mse_loss(a, b);
        CHECK(y && tensor_ndim(y) == 0 && tensor_get_dtype(y) == dts[d]);
        CHECK_NEAR(tensor_item(y), s / 12, tol, tol);
        /* non-contiguous: a^T against b^T */
        CHECK_NEAR(tensor_item(tensor_mse_loss(tensor_transpose(a, 0, 1), tensor_transpose(b, 0, 1))), s / 12, tol, tol);
        /* broadcasting: [3, 1] against [4] -> [3, 4] */
        tensor *c = tensor_slice(a, 1, 0, 1, 1), *r = tensor_select(b, 0, 0);
        s = 0;
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 4; j++) s += (av[i * 4] - bv[j]) * (av[i * 4] - bv[j]);
        CHECK_NEAR(tensor_item(tensor_mse_loss(c, r)), s / 12, tol, tol);
        free(av); free(bv);
    }
    CHECK(isnan(tensor_item(tensor_mse_loss(tensor_zeros(TENSOR_SHAPE(0), TENSOR_F32), tensor_zeros(TENSOR_SHAPE(0), TENSOR_F32)))));
}

void bad_input_mse_loss(void) {
    const char *fn = "tensor_mse_loss";
    tensor *a = tensor_zeros(TENSOR_SHAPE(3), TENSOR_F32);
    CHECK_BAD(tensor_mse_loss(NULL, a), fn);
    CHECK_BAD(tensor_mse_loss(a, NULL), fn);
    CHECK_BAD(tensor_mse_loss(a, tensor_zeros(TENSOR_SHAPE(4), TENSOR_F32)), fn);
    CHECK_BAD(tensor_mse_loss(tensor_zeros(TENSOR_SHAPE(3), TENSOR_I64), tensor_zeros(TENSOR_SHAPE(3), TENSOR_I64)), fn);
}

TEST(bce_with_logits_forward) {
    tensor_dtype dts[] = {TENSOR_F32, TENSOR_F64};
    for (int d = 0; d < 2; d++) {
        double tol = dts[d] == TENSOR_F64 ? 1e-13 : 1e-6;
        double xs[] = {-3, -0.5, 0, 0.25, 2, 100, -100, 40};
        double ys[] = {0, 1, 0.5, 1, 0, 1, 0, 0};
        tensor *x = test_tensor(dts[d], TENSOR_SHAPE(2, 4), xs), *y = test_tensor(dts[d], TENSOR_SHAPE(2, 4), ys);
        double s = 0;
        for (int i = 0; i < 8; i++) /* -[y log sigmoid(x) + (1 - y) log(1 - sigmoid(x))], in a form exact for large |x| */
            s += -(ys[i] * (xs[i] < 0 ? xs[i] - log1p(exp(xs[i])) : -log1p(exp(-xs[i]))) +
                   (1 - ys[i]) * (xs[i] > 0 ? -xs[i] - log1p(exp(-xs[i])) : -log1p(exp(xs[i]))));
        tensor *l = tensor_binary_cross_entropy_with_logits(x, y);
        CHECK(l && tensor_ndim(l) == 0 && tensor_get_dtype(l) == dts[d]);
        CHECK_NEAR(tensor_item(l), s / 8, tol, tol);
        CHECK_NEAR(tensor_item(tensor_binary_cross_entropy_with_logits(tensor_transpose(x, 0, 1), tensor_transpose(y, 0, 1))), s / 8, tol, tol);
    }
}

void bad_input_binary_cross_entropy_with_logits(void) {
    const char *fn = "tensor_binary_cross_entropy_with_logits";
    tensor *a = tensor_zeros(TENSOR_SHAPE(3), TENSOR_F32);
    CHECK_BAD(tensor_binary_cross_entropy_with_logits(NULL, a), fn);
    CHECK_BAD(tensor_binary_cross_entropy_with_logits(a, NULL), fn);
    CHECK_BAD(tensor_binary_cross_entropy_with_logits(a, tensor_zeros(TENSOR_SHAPE(1), TENSOR_F32)), fn); /* shapes must match */
    CHECK_BAD(tensor_binary_cross_entropy_with_logits(a, tensor_zeros(TENSOR_SHAPE(3), TENSOR_I64)), fn);
    CHECK_BAD(tensor_binary_cross_entropy_with_logits(tensor_zeros(TENSOR_SHAPE(3), TENSOR_I32), a), fn);
}

/* ---- the fused attention kernel against the composite (tensor_set_reference_kernels(true)) ---- */

/* max |a - b| / (1 + |b|) over all elements (NaN where they disagree on NaN) */
static double attn_diff(tensor *a, tensor *b) {
    double *x = test_values(a), *y = test_values(b), worst = 0;
    int64_t n = tensor_numel(b);
    if (tensor_numel(a) != n) worst = INFINITY;
    for (int64_t i = 0; i < n && worst < INFINITY; i++) {
        if (isnan(x[i]) != isnan(y[i])) { worst = NAN; break; }
        if (isnan(y[i])) continue;
        double e = fabs(x[i] - y[i]) / (1 + fabs(y[i]));
        if (e > worst) worst = e;
    }
    free(x);
    free(y);
    return worst;
}

typedef struct { const char *what; int64_t B, H, L, S, E, Ev; int mask; bool bcast_k; } attn_case; /* mask: 0 none, 1 causal, 2 bool, 3 float, 4 0-D float, 5 1-D bool [S] */

/* Forward and the gradients of q, k, v (and of a float mask), fused and composed. */
static void attn_compare(const attn_case *c, tensor_dtype dt, double tol) {
    int64_t qs[4] = {c->B, c->H, c->L, c->E}, ks[4] = {c->B, c->bcast_k ? 1 : c->H, c->S, c->E}, vs[4] = {c->B, c->H, c->S, c->Ev};
    int64_t ms[2] = {c->L, c->S};
    tensor *q = tensor_set_requires_grad(test_random(dt, 4, qs, -2, 2), true), *k = tensor_set_requires_grad(test_random(dt, 4, ks, -2, 2), true);
    tensor *v = tensor_set_requires_grad(test_random(dt, 4, vs, -1, 1), true), *mask = NULL;
    if (c->mask == 2) { /* every row keeps key 0 and about 70% of the others */
        double *mv = (double *)malloc(sizeof(double) * (size_t)(c->L * c->S));
        for (int64_t i = 0; i < c->L * c->S; i++) mv[i] = i % c->S == 0 || test_uniform(0, 1) > 0.3;
        mask = test_tensor(TENSOR_BOOL, 2, ms, mv);
        free(mv);
    }
    if (c->mask == 3) mask = tensor_set_requires_grad(test_random(dt, 2, ms, -1, 1), true);
    if (c->mask == 4) mask = test_random(dt, 0, ms, -1, 1); /* broadcast to every score: a shift softmax ignores */
    if (c->mask == 5) { /* key 0 and every third key masked out for every query */
        double *mv = (double *)malloc(sizeof(double) * (size_t)c->S);
        for (int64_t i = 0; i < c->S; i++) mv[i] = i == 0 || i % 3 != 0;
        mask = test_tensor(TENSOR_BOOL, 1, &c->S, mv);
        free(mv);
    }
    tensor *gout = test_random(dt, 4, (int64_t[]){c->B, c->H, c->L, c->Ev}, -1, 1);
    tensor *y[2], *gr[2][4];
    for (int ref = 0; ref < 2; ref++) {
        bool was = tensor_set_reference_kernels(ref == 1);
        y[ref] = tensor_scaled_dot_product_attention(q, k, v, mask, c->mask == 1);
        tensor *ins[4] = {q, k, v, mask};
        int n = c->mask == 3 ? 4 : 3;
        for (int i = 0; i < 4; i++) gr[ref][i] = NULL;
        CHECK_MSG(y[ref] && tensor_autograd_grad(1, &y[ref], &gout, n, ins, gr[ref], false) == 0, "%s: %s", c->what, tensor_last_error());
        tensor_set_reference_kernels(was);
    }
    double e = attn_diff(y[0], y[1]);
    CHECK_MSG(e <= tol, "%s %s: output differs by %g", c->what, tensor_dtype_name(dt), e);
    const char *names[4] = {"q", "k", "v", "mask"};
    for (int i = 0; i < (c->mask == 3 ? 4 : 3); i++) {
        e = gr[0][i] && gr[1][i] ? attn_diff(gr[0][i], gr[1][i]) : INFINITY;
        CHECK_MSG(e <= 4 * tol, "%s %s: gradient of %s differs by %g", c->what, tensor_dtype_name(dt), names[i], e);
        CHECK(gr[0][i] && tensor_get_dtype(gr[0][i]) == dt && tensor_ndim(gr[0][i]) == tensor_ndim(i == 0 ? q : i == 1 ? k : i == 2 ? v : mask));
    }
}

TEST(attention_fused_matches_composite) {
    int64_t fwd0 = tensor_test_path_count("attention_fused"), bwd0 = tensor_test_path_count("attention_fused_backward");
    const attn_case cases[] = {
        {"one tile", 2, 3, 5, 7, 4, 6, 0, false},
        {"tiles, not causal", 1, 2, 150, 300, 24, 40, 0, false},
        {"tiles, causal L == S", 2, 2, 200, 200, 16, 16, 1, false},
        {"causal L < S", 1, 2, 70, 260, 8, 8, 1, false},
        {"causal L > S", 1, 1, 260, 70, 8, 8, 1, false},
        {"bool mask", 1, 2, 90, 140, 12, 5, 2, false},
        {"float mask (with its gradient)", 2, 1, 65, 129, 8, 8, 3, false},
        {"k broadcast over heads", 2, 3, 66, 130, 8, 10, 1, true},
        {"one query (a decoding step)", 1, 4, 1, 200, 32, 32, 0, false},
        {"0-D float mask", 1, 2, 70, 130, 8, 8, 4, false},
        {"1-D bool mask over keys", 2, 2, 70, 130, 8, 8, 5, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        attn_compare(&cases[i], TENSOR_F64, 1e-12);
        attn_compare(&cases[i], TENSOR_F32, 2e-5);
    }
    attn_compare(&cases[2], TENSOR_BF16, 2e-2);
    /* each case ran the fused forward once (the other run is the composite's), and its backward
       except with a float mask that wants a gradient (the composed formulas) */
    int64_t runs = 2 * (int64_t)(sizeof cases / sizeof cases[0]) + 1;
    CHECK(tensor_test_path_count("attention_fused") - fwd0 == runs && tensor_test_path_count("attention_fused_backward") - bwd0 == runs - 2);
    /* 1 and 2 threads give the same bits (each head's tiles are one thread's) */
    int threads = tensor_get_num_threads();
    int64_t shape[4] = {2, 3, 130, 16};
    tensor *q = test_random(TENSOR_F32, 4, shape, -1, 1), *k = test_random(TENSOR_F32, 4, shape, -1, 1), *v = test_random(TENSOR_F32, 4, shape, -1, 1);
    tensor_set_num_threads(1);
    tensor *one = tensor_scaled_dot_product_attention(q, k, v, NULL, true);
    tensor_set_num_threads(2);
    tensor *two = tensor_scaled_dot_product_attention(q, k, v, NULL, true);
    tensor_set_num_threads(threads);
    CHECK(test_same_bits(one, two));
}

/* The fused kernel keeps O(L) per head for backward, not the [L, S] weights the composite saves. */
TEST(attention_fused_saves_no_score_matrix) {
    int64_t shape[4] = {1, 2, 1024, 16};
    tensor *q = tensor_set_requires_grad(test_random(TENSOR_F32, 4, shape, -1, 1), true);
    tensor *k = test_random(TENSOR_F32, 4, shape, -1, 1), *v = test_random(TENSOR_F32, 4, shape, -1, 1);
    for (int ref = 0; ref < 2; ref++) {
        bool was = tensor_set_reference_kernels(ref == 1);
        int64_t before = tensor_live_bytes();
        tensor_scope_begin();
        tensor *y = tensor_scaled_dot_product_attention(q, k, v, NULL, true);
        int64_t held = tensor_live_bytes() - before, scores = 2 * 1024 * 1024 * 4;
        if (ref == 0) CHECK_MSG(held < scores / 8, "fused: %lld bytes live after the forward (the scores are %lld)", (long long)held, (long long)scores);
        else CHECK_MSG(held >= scores, "composite: %lld bytes live (expected the scores' %lld)", (long long)held, (long long)scores);
        CHECK(tensor_backward(tensor_sum_all(y)) == 0);
        tensor_scope_end();
        tensor_set_reference_kernels(was);
        tensor_zero_grad(q);
    }
}
