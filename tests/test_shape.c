/* Tests of the shape and indexing ops (generator/parts/shape.h): view semantics (shared storage,
   writes through views), values against plain loops written here, and bad inputs of every op. */
#include "test.h"

/* A tensor of shape holding 0, 1, 2, ... (row-major) in dtype. */
static tensor *seq(tensor_dtype dt, int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    double *v = (double *)malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) v[i] = (double)i;
    tensor *t = test_tensor(dt, ndim, shape, v);
    free(v);
    return t;
}

/* Row-major linear index of idx in shape. */
static int64_t lin(int ndim, const int64_t *shape, const int64_t *idx) {
    int64_t o = 0;
    for (int i = 0; i < ndim; i++) o = o * shape[i] + idx[i];
    return o;
}

/* Advances idx over shape in row-major order; false when done. */
static bool next_idx(int ndim, const int64_t *shape, int64_t *idx) {
    for (int d = ndim - 1; d >= 0; d--) {
        if (++idx[d] < shape[d]) return true;
        idx[d] = 0;
    }
    return false;
}

static const tensor_dtype all_dtypes[] = {TENSOR_F32, TENSOR_F64, TENSOR_F16, TENSOR_BF16, TENSOR_I32, TENSOR_I64, TENSOR_U8, TENSOR_BOOL};
#define N_DTYPES 8
/* seq values mod this keep every dtype exact (u8, bf16 hold small integers exactly; bool: 0/1). */
static double exact(tensor_dtype dt, double v) {
    if (dt == TENSOR_BOOL) return v != 0;
    if (dt == TENSOR_U8) return fmod(v, 256);
    return v;
}

/* ---- view semantics ---- */

TEST(shape_view_writes_are_visible_in_base) {
    tensor *base = tensor_zeros(TENSOR_SHAPE(3, 4), TENSOR_F32);
    tensor *row = tensor_select(base, 0, 1);
    CHECK(tensor_shares_storage(row, base));
    tensor_fill_(row, 5);
    tensor *col = tensor_slice(base, 1, 0, INT64_MAX, 2); /* columns 0 and 2 */
    CHECK(tensor_shares_storage(col, base));
    tensor_fill_(tensor_select(col, 0, 2), 7); /* base[2][0], base[2][2] */
    tensor *tr = tensor_transpose(base, 0, 1);
    CHECK(tensor_shares_storage(tr, base));
    tensor_fill_(tensor_select(tr, 0, 3), 9); /* column 3 of base */
    double want[12];
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++) {
            double v = 0;
            if (i == 1) v = 5;
            if (i == 2 && (j == 0 || j == 2)) v = 7;
            if (j == 3) v = 9;
            want[i * 4 + j] = v;
        }
    CHECK_VALUES(base, want, 12, 0, 0);
    /* views through every view op share storage */
    CHECK(tensor_shares_storage(tensor_view(base, TENSOR_SHAPE(12)), base));
    CHECK(tensor_shares_storage(tensor_reshape(base, TENSOR_SHAPE(2, 6)), base));
    CHECK(tensor_shares_storage(tensor_permute(base, 2, (const int[]){1, 0}), base));
    CHECK(tensor_shares_storage(tensor_expand(tensor_unsqueeze(base, 0), TENSOR_SHAPE(2, 3, 4)), base));
    CHECK(tensor_shares_storage(tensor_squeeze(tensor_unsqueeze(base, 1), 1), base));
    CHECK(tensor_shares_storage(tensor_flatten(base, 0, -1), base));
    /* a write through a view of a view */
    tensor *flat = tensor_view(base, TENSOR_SHAPE(12));
    tensor_fill_(tensor_slice(flat, 0, 0, 1, 1), -1);
    CHECK_NEAR(tensor_item(tensor_select(tensor_select(base, 0, 0), 0, 0)), -1, 0, 0);
}

TEST(shape_reshape_copies_when_strides_do_not_allow) {
    tensor *a = seq(TENSOR_F32, TENSOR_SHAPE(2, 3));
    tensor *t = tensor_transpose(a, 0, 1); /* [3, 2] */
    tensor *r = tensor_reshape(t, TENSOR_SHAPE(6));
    CHECK(r && !tensor_shares_storage(r, a));
    CHECK(tensor_is_contiguous(r));
    double want[6];
    for (int k = 0; k < 6; k++) { int i = k / 2, j = k % 2; want[k] = j * 3 + i; } /* t[i][j] = a[j][i] */
    CHECK_VALUES(r, want, 6, 0, 0);
    CHECK_BAD(tensor_view(t, TENSOR_SHAPE(6)), "tensor_view");
    CHECK(strstr(tensor_last_error() ? tensor_last_error() : "reshape", "reshape") != NULL);
    /* flatten of a transposed tensor copies too */
    tensor *f = tensor_flatten(t, 0, 1);
    CHECK(f && !tensor_shares_storage(f, a));
    CHECK_VALUES(f, want, 6, 0, 0);
    /* clone never shares */
    CHECK(!tensor_shares_storage(tensor_clone(a), a));
}

TEST(shape_view_error_names_use_reshape) {
    tensor *a = seq(TENSOR_F32, TENSOR_SHAPE(2, 3));
    tensor_clear_error();
    tensor *v = tensor_view(tensor_transpose(a, 0, 1), TENSOR_SHAPE(6));
    CHECK(v == NULL);
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "tensor_view") && strstr(tensor_last_error(), "reshape"));
    tensor_clear_error();
    v = tensor_reshape(a, TENSOR_SHAPE(4, 2));
    CHECK(v == NULL);
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "[4, 2]") && strstr(tensor_last_error(), "[2, 3]"));
    tensor_clear_error();
}

TEST(shape_reshape_views_non_contiguous_when_possible) {
    tensor *a = seq(TENSOR_F64, TENSOR_SHAPE(4, 6));
    /* every other column: [4, 3], strides [6, 2]; splitting dim 0 is a view, merging is not */
    tensor *s = tensor_slice(a, 1, 0, INT64_MAX, 2);
    tensor *r = tensor_reshape(s, TENSOR_SHAPE(2, 2, 3));
    CHECK(r && tensor_shares_storage(r, a));
    CHECK(r && tensor_strides(r)[0] == 12 && tensor_strides(r)[1] == 6 && tensor_strides(r)[2] == 2);
    double want[12];
    for (int k = 0; k < 12; k++) { int i = k / 3, j = k % 3; want[k] = i * 6 + 2 * j; }
    CHECK_VALUES(r, want, 12, 0, 0);
    /* rows of stride 6 over 3 elements of stride 2 are evenly spaced: even [12] is a view */
    tensor *m = tensor_reshape(s, TENSOR_SHAPE(12));
    CHECK(m && tensor_shares_storage(m, a) && tensor_strides(m)[0] == 2);
    CHECK_VALUES(m, want, 12, 0, 0);
    /* columns 0 and 2 only: [4, 2], strides [6, 2]: merging needs a copy */
    tensor *s2 = tensor_slice(a, 1, 0, 4, 2);
    tensor *m2 = tensor_reshape(s2, TENSOR_SHAPE(8));
    CHECK(m2 && !tensor_shares_storage(m2, a));
    double want8[8];
    for (int q = 0; q < 8; q++) want8[q] = (q / 2) * 6 + 2 * (q % 2);
    CHECK_VALUES(m2, want8, 8, 0, 0);
    CHECK_BAD(tensor_view(s2, TENSOR_SHAPE(8)), "tensor_view");
    CHECK_SHAPE(tensor_view(s2, TENSOR_SHAPE(2, 2, 2)), TENSOR_SHAPE(2, 2, 2));
    /* transposed [6, 4] strides [1, 6]: splitting dim 0 into [2, 3] is a view */
    tensor *t = tensor_transpose(a, 0, 1);
    tensor *r2 = tensor_view(t, TENSOR_SHAPE(2, 3, 4));
    CHECK(r2 && tensor_shares_storage(r2, a));
    double want2[24];
    int64_t idx[3] = {0, 0, 0}, sh[3] = {2, 3, 4};
    int k = 0;
    do { want2[k++] = idx[2] * 6 + (idx[0] * 3 + idx[1]); } while (next_idx(3, sh, idx));
    CHECK_VALUES(r2, want2, 24, 0, 0);
    /* expanded [4, 3] strides [0, 1] -> [2, 2, 3]: a view with strides [0, 0, 1] */
    tensor *row = seq(TENSOR_F32, TENSOR_SHAPE(1, 3));
    tensor *e = tensor_expand(row, TENSOR_SHAPE(4, 3));
    tensor *r3 = tensor_reshape(e, TENSOR_SHAPE(2, 2, 3));
    CHECK(r3 && tensor_shares_storage(r3, row));
    CHECK(r3 && tensor_strides(r3)[0] == 0 && tensor_strides(r3)[1] == 0 && tensor_strides(r3)[2] == 1);
    double want3[12];
    for (int q = 0; q < 12; q++) want3[q] = q % 3;
    CHECK_VALUES(r3, want3, 12, 0, 0);
    tensor *r4 = tensor_reshape(e, TENSOR_SHAPE(12)); /* needs a copy */
    CHECK(r4 && !tensor_shares_storage(r4, row));
    CHECK_VALUES(r4, want3, 12, 0, 0);
    /* -1 and size-1 dims */
    tensor *r5 = tensor_reshape(a, TENSOR_SHAPE(1, -1, 1, 3));
    CHECK_SHAPE(r5, TENSOR_SHAPE(1, 8, 1, 3));
    CHECK(tensor_shares_storage(r5, a));
}

TEST(shape_view_ops_values) {
    for (int di = 0; di < N_DTYPES; di++) {
        tensor_dtype dt = all_dtypes[di];
        tensor *a = seq(dt, TENSOR_SHAPE(2, 3, 4));
        /* permute (2, 0, 1): out[i][j][k] = a[j][k][i] */
        tensor *p = tensor_permute(a, 3, (const int[]){2, 0, 1});
        CHECK_SHAPE(p, TENSOR_SHAPE(4, 2, 3));
        double w[24];
        int64_t idx[3] = {0, 0, 0}, sp[3] = {4, 2, 3};
        int k = 0;
        do { w[k++] = exact(dt, idx[1] * 12 + idx[2] * 4 + idx[0]); } while (next_idx(3, sp, idx));
        CHECK_VALUES(p, w, 24, 0, 0);
        /* negative dims in permute and transpose */
        tensor *p2 = tensor_permute(a, 3, (const int[]){-1, -3, -2});
        CHECK_VALUES(p2, w, 24, 0, 0);
        tensor *tr = tensor_transpose(a, -1, 0); /* [4, 3, 2]: out[i][j][k] = a[k][j][i] */
        int64_t st[3] = {4, 3, 2};
        idx[0] = idx[1] = idx[2] = 0;
        k = 0;
        do { w[k++] = exact(dt, idx[2] * 12 + idx[1] * 4 + idx[0]); } while (next_idx(3, st, idx));
        CHECK_SHAPE(tr, TENSOR_SHAPE(4, 3, 2));
        CHECK_VALUES(tr, w, 24, 0, 0);
        /* select and slice with negative arguments on a transposed input */
        tensor *sel = tensor_select(tr, 1, -1); /* [4, 2]: tr[i][2][k] = a[k][2][i] */
        double ws[8];
        for (int i = 0; i < 4; i++) for (int q = 0; q < 2; q++) ws[i * 2 + q] = exact(dt, q * 12 + 2 * 4 + i);
        CHECK_SHAPE(sel, TENSOR_SHAPE(4, 2));
        CHECK_VALUES(sel, ws, 8, 0, 0);
        tensor *sl = tensor_slice(tr, 0, -3, INT64_MAX, 2); /* rows 1, 3 of tr */
        double wsl[12];
        k = 0;
        for (int i = 1; i < 4; i += 2) for (int j = 0; j < 3; j++) for (int q = 0; q < 2; q++) wsl[k++] = exact(dt, q * 12 + j * 4 + i);
        CHECK_SHAPE(sl, TENSOR_SHAPE(2, 3, 2));
        CHECK_VALUES(sl, wsl, 12, 0, 0);
        /* expand a sliced column [3, 1] to [2, 3, 4] */
        tensor *col = tensor_slice(tensor_select(a, 0, 1), 1, 1, 2, 1); /* a[1][:, 1:2] */
        tensor *ex = tensor_expand(col, TENSOR_SHAPE(2, -1, 4));
        CHECK_SHAPE(ex, TENSOR_SHAPE(2, 3, 4));
        double we[24];
        for (int q = 0; q < 24; q++) { int j = (q / 4) % 3; we[q] = exact(dt, 12 + j * 4 + 1); }
        CHECK_VALUES(ex, we, 24, 0, 0);
        CHECK(ex && tensor_strides(ex)[0] == 0 && tensor_strides(ex)[2] == 0);
        /* squeeze / unsqueeze */
        tensor *u = tensor_unsqueeze(a, -1);
        CHECK_SHAPE(u, TENSOR_SHAPE(2, 3, 4, 1));
        tensor *u0 = tensor_unsqueeze(a, 1);
        CHECK_SHAPE(u0, TENSOR_SHAPE(2, 1, 3, 4));
        CHECK(u0 && tensor_strides(u0)[1] == 12); /* PyTorch: size * stride of the dim it precedes */
        tensor *sq = tensor_squeeze(u0, 1);
        CHECK_SHAPE(sq, TENSOR_SHAPE(2, 3, 4));
        tensor *sq2 = tensor_squeeze(a, 0); /* size 2: unchanged view */
        CHECK_SHAPE(sq2, TENSOR_SHAPE(2, 3, 4));
        double wa[24];
        for (int q = 0; q < 24; q++) wa[q] = exact(dt, q);
        CHECK_VALUES(u, wa, 24, 0, 0);
        CHECK_VALUES(sq, wa, 24, 0, 0);
        /* flatten parts */
        tensor *f = tensor_flatten(a, 1, 2);
        CHECK_SHAPE(f, TENSOR_SHAPE(2, 12));
        CHECK_VALUES(f, wa, 24, 0, 0);
        tensor *f2 = tensor_flatten(a, -2, -2);
        CHECK_SHAPE(f2, TENSOR_SHAPE(2, 3, 4));
    }
}

TEST(shape_slice_python_rules) {
    tensor *a = seq(TENSOR_I64, TENSOR_SHAPE(10));
    struct { int64_t start, end, step; } cases[] = {
        {0, INT64_MAX, 1}, {2, 8, 3}, {-3, INT64_MAX, 1}, {-100, 3, 1}, {5, 100, 2}, {7, 2, 1},
        {-2, -1, 1}, {INT64_MIN, INT64_MAX, 4}, {10, INT64_MAX, 1}, {3, -7, 1}, {0, 10, INT64_MAX}, {9, 10, 5}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int64_t s = cases[c].start, e = cases[c].end, st = cases[c].step;
        /* Python's rule written out */
        double sd = (double)s, ed = (double)e;
        if (sd < 0) sd += 10;
        if (ed < 0) ed += 10;
        if (sd < 0) sd = 0;
        if (sd > 10) sd = 10;
        if (ed < 0) ed = 0;
        if (ed > 10) ed = 10;
        double want[10];
        int n = 0;
        for (double i = sd; i < ed; i += (double)st) want[n++] = i;
        tensor *r = tensor_slice(a, 0, s, e, st);
        CHECK_MSG(r && tensor_numel(r) == n, "case %d: numel %lld, expected %d", (int)c, (long long)tensor_numel(r), n);
        CHECK_VALUES(r, want, n, 0, 0);
    }
}

TEST(shape_views_zero_dim_and_zero_size) {
    tensor *s = tensor_scalar(3.5, TENSOR_F32);
    tensor *u = tensor_unsqueeze(s, 0);
    CHECK_SHAPE(u, TENSOR_SHAPE(1));
    CHECK(tensor_shares_storage(u, s));
    tensor *u2 = tensor_unsqueeze(s, -1);
    CHECK_SHAPE(u2, TENSOR_SHAPE(1));
    CHECK_SHAPE(tensor_squeeze(u, 0), 0, NULL);
    CHECK_SHAPE(tensor_squeeze(s, 0), 0, NULL);
    CHECK_SHAPE(tensor_squeeze(s, -1), 0, NULL);
    CHECK_SHAPE(tensor_transpose(s, 0, -1), 0, NULL);
    CHECK_SHAPE(tensor_permute(s, 0, NULL), 0, NULL);
    CHECK_SHAPE(tensor_flatten(s, 0, -1), TENSOR_SHAPE(1));
    tensor *v = tensor_view(s, TENSOR_SHAPE(1, 1));
    CHECK_SHAPE(v, TENSOR_SHAPE(1, 1));
    CHECK_NEAR(tensor_item(v), 3.5, 0, 0);
    CHECK_SHAPE(tensor_reshape(u, 0, NULL), 0, NULL);
    CHECK_SHAPE(tensor_reshape(s, TENSOR_SHAPE(-1)), TENSOR_SHAPE(1));
    tensor *e = tensor_expand(s, TENSOR_SHAPE(2, 3));
    double w6[6] = {3.5, 3.5, 3.5, 3.5, 3.5, 3.5};
    CHECK_VALUES(e, w6, 6, 0, 0);
    CHECK_SHAPE(tensor_expand(s, 0, NULL), 0, NULL);
    /* zero-size */
    tensor *z = tensor_zeros(TENSOR_SHAPE(0, 3), TENSOR_F32);
    CHECK_SHAPE(tensor_view(z, TENSOR_SHAPE(3, 0)), TENSOR_SHAPE(3, 0));
    CHECK_SHAPE(tensor_reshape(z, TENSOR_SHAPE(-1, 3)), TENSOR_SHAPE(0, 3));
    CHECK_SHAPE(tensor_reshape(z, TENSOR_SHAPE(2, -1, 3)), TENSOR_SHAPE(2, 0, 3));
    CHECK_BAD(tensor_reshape(z, TENSOR_SHAPE(0, -1)), "tensor_reshape");
    CHECK_SHAPE(tensor_view(z, TENSOR_SHAPE(-1)), TENSOR_SHAPE(0));
    CHECK_BAD(tensor_view(z, TENSOR_SHAPE(3, -1, 0)), "tensor_view");
    CHECK_SHAPE(tensor_transpose(z, 0, 1), TENSOR_SHAPE(3, 0));
    CHECK_SHAPE(tensor_slice(z, 1, 1, 2, 1), TENSOR_SHAPE(0, 1));
    CHECK_SHAPE(tensor_select(z, 1, 2), TENSOR_SHAPE(0));
    CHECK_SHAPE(tensor_expand(tensor_zeros(TENSOR_SHAPE(1, 3), TENSOR_F32), TENSOR_SHAPE(0, 3)), TENSOR_SHAPE(0, 3));
    CHECK_SHAPE(tensor_expand(z, TENSOR_SHAPE(5, 0, 3)), TENSOR_SHAPE(5, 0, 3));
    CHECK_SHAPE(tensor_flatten(z, 0, 1), TENSOR_SHAPE(0));
    CHECK_SHAPE(tensor_unsqueeze(z, 2), TENSOR_SHAPE(0, 3, 1));
    CHECK_SHAPE(tensor_squeeze(z, 0), TENSOR_SHAPE(0, 3));
    CHECK_BAD(tensor_select(z, 0, 0), "tensor_select");
}

/* ---- bad inputs of the view ops ---- */

void bad_input_view(void) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32);
    CHECK_BAD(tensor_view(NULL, TENSOR_SHAPE(6)), "tensor_view");
    CHECK_BAD(tensor_view(a, TENSOR_SHAPE(4)), "tensor_view");
    CHECK_BAD(tensor_view(a, TENSOR_SHAPE(-1, -1)), "tensor_view");
    CHECK_BAD(tensor_view(a, TENSOR_SHAPE(-2, -3)), "tensor_view");
    CHECK_BAD(tensor_view(a, TENSOR_SHAPE(-1, 4)), "tensor_view");
    CHECK_BAD(tensor_view(a, 9, NULL), "tensor_view");
    CHECK_BAD(tensor_view(a, 2, NULL), "tensor_view");
    CHECK_BAD(tensor_view(tensor_transpose(a, 0, 1), TENSOR_SHAPE(6)), "tensor_view");
    tensor_free(a);
}

void bad_input_reshape(void) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32);
    CHECK_BAD(tensor_reshape(NULL, TENSOR_SHAPE(6)), "tensor_reshape");
    CHECK_BAD(tensor_reshape(a, TENSOR_SHAPE(5)), "tensor_reshape");
    CHECK_BAD(tensor_reshape(a, TENSOR_SHAPE(-1, -1)), "tensor_reshape");
    CHECK_BAD(tensor_reshape(a, TENSOR_SHAPE(2, -5)), "tensor_reshape");
    CHECK_BAD(tensor_reshape(a, -1, NULL), "tensor_reshape");
    CHECK_BAD(tensor_reshape(a, 1, NULL), "tensor_reshape");
    CHECK_BAD(tensor_reshape(a, TENSOR_SHAPE(INT64_MAX, INT64_MAX)), "tensor_reshape");
    tensor *z = tensor_zeros(TENSOR_SHAPE(0, 2), TENSOR_F32);
    CHECK_BAD(tensor_reshape(z, TENSOR_SHAPE(-1, 0)), "tensor_reshape");
    tensor_free(z);
    tensor_free(a);
}

void bad_input_permute(void) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32);
    CHECK_BAD(tensor_permute(NULL, 2, (const int[]){1, 0}), "tensor_permute");
    CHECK_BAD(tensor_permute(a, 3, (const int[]){1, 0, 2}), "tensor_permute");
    CHECK_BAD(tensor_permute(a, 1, (const int[]){0}), "tensor_permute");
    CHECK_BAD(tensor_permute(a, 2, (const int[]){0, 0}), "tensor_permute");
    CHECK_BAD(tensor_permute(a, 2, (const int[]){1, -2 - 1}), "tensor_permute");
    CHECK_BAD(tensor_permute(a, 2, (const int[]){0, 2}), "tensor_permute");
    CHECK_BAD(tensor_permute(a, 2, NULL), "tensor_permute");
    tensor_free(a);
}

void bad_input_transpose(void) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32);
    CHECK_BAD(tensor_transpose(NULL, 0, 1), "tensor_transpose");
    CHECK_BAD(tensor_transpose(a, 0, 2), "tensor_transpose");
    CHECK_BAD(tensor_transpose(a, -3, 1), "tensor_transpose");
    tensor *s = tensor_scalar(1, TENSOR_F32);
    CHECK_BAD(tensor_transpose(s, 0, 1), "tensor_transpose");
    tensor_free(s);
    tensor_free(a);
}

void bad_input_expand(void) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(2, 1), TENSOR_F32);
    CHECK_BAD(tensor_expand(NULL, TENSOR_SHAPE(2, 3)), "tensor_expand");
    CHECK_BAD(tensor_expand(a, TENSOR_SHAPE(3, 3)), "tensor_expand");   /* non-singleton 2 -> 3 */
    CHECK_BAD(tensor_expand(a, TENSOR_SHAPE(3)), "tensor_expand");      /* fewer dims */
    CHECK_BAD(tensor_expand(a, TENSOR_SHAPE(-1, 2, 3)), "tensor_expand"); /* -1 in a new leading dim */
    CHECK_BAD(tensor_expand(a, TENSOR_SHAPE(2, -2)), "tensor_expand");
    CHECK_BAD(tensor_expand(a, 9, NULL), "tensor_expand");
    CHECK_BAD(tensor_expand(a, 2, NULL), "tensor_expand");
    tensor_free(a);
}

void bad_input_squeeze(void) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(2, 1), TENSOR_F32);
    CHECK_BAD(tensor_squeeze(NULL, 0), "tensor_squeeze");
    CHECK_BAD(tensor_squeeze(a, 2), "tensor_squeeze");
    CHECK_BAD(tensor_squeeze(a, -3), "tensor_squeeze");
    tensor *s = tensor_scalar(1, TENSOR_F32);
    CHECK_BAD(tensor_squeeze(s, 1), "tensor_squeeze");
    tensor_free(s);
    tensor_free(a);
}

void bad_input_unsqueeze(void) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(2, 1), TENSOR_F32);
    CHECK_BAD(tensor_unsqueeze(NULL, 0), "tensor_unsqueeze");
    CHECK_BAD(tensor_unsqueeze(a, 3), "tensor_unsqueeze");
    CHECK_BAD(tensor_unsqueeze(a, -4), "tensor_unsqueeze");
    tensor *big = tensor_zeros(TENSOR_SHAPE(1, 1, 1, 1, 1, 1, 1, 1), TENSOR_F32);
    CHECK_BAD(tensor_unsqueeze(big, 0), "tensor_unsqueeze");
    tensor_free(big);
    tensor_free(a);
}

void bad_input_flatten(void) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(2, 3, 4), TENSOR_F32);
    CHECK_BAD(tensor_flatten(NULL, 0, -1), "tensor_flatten");
    CHECK_BAD(tensor_flatten(a, 2, 1), "tensor_flatten");
    CHECK_BAD(tensor_flatten(a, 0, 3), "tensor_flatten");
    CHECK_BAD(tensor_flatten(a, -4, 1), "tensor_flatten");
    tensor *s = tensor_scalar(1, TENSOR_F32);
    CHECK_BAD(tensor_flatten(s, 0, 1), "tensor_flatten");
    tensor_free(s);
    tensor_free(a);
}

void bad_input_slice(void) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32);
    CHECK_BAD(tensor_slice(NULL, 0, 0, 1, 1), "tensor_slice");
    CHECK_BAD(tensor_slice(a, 2, 0, 1, 1), "tensor_slice");
    CHECK_BAD(tensor_slice(a, 0, 0, 1, 0), "tensor_slice");
    CHECK_BAD(tensor_slice(a, 0, 0, 1, -1), "tensor_slice");
    tensor *s = tensor_scalar(1, TENSOR_F32);
    CHECK_BAD(tensor_slice(s, 0, 0, 1, 1), "tensor_slice");
    tensor_free(s);
    tensor_free(a);
}

void bad_input_select(void) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32);
    CHECK_BAD(tensor_select(NULL, 0, 0), "tensor_select");
    CHECK_BAD(tensor_select(a, 0, 2), "tensor_select");
    CHECK_BAD(tensor_select(a, 1, -4), "tensor_select");
    CHECK_BAD(tensor_select(a, 2, 0), "tensor_select");
    tensor *s = tensor_scalar(1, TENSOR_F32);
    CHECK_BAD(tensor_select(s, 0, 0), "tensor_select");
    tensor_free(s);
    tensor_free(a);
}

TEST(shape_bad_inputs_of_view_ops) {
    bad_input_view();
    bad_input_reshape();
    bad_input_permute();
    bad_input_transpose();
    bad_input_expand();
    bad_input_squeeze();
    bad_input_unsqueeze();
    bad_input_flatten();
    bad_input_slice();
    bad_input_select();
}
