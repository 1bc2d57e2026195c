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

/* ---- copies: cat, stack, split, flip, repeat, pad, tril, triu ---- */

/* A few layouts of the same logical [r, c] matrix whose element (i, j) is base + i * c + j:
   contiguous, transposed storage, a stepped slice, and (kind 3) a row expanded, whose (i, j) is
   base + j instead. */
static tensor *layout(tensor_dtype dt, int kind, int64_t r, int64_t c, double base) {
    int64_t n = r * c;
    double *v = (double *)malloc(sizeof(double) * (size_t)(2 * n + 1));
    tensor *t;
    if (kind == 0) {
        for (int64_t q = 0; q < n; q++) v[q] = base + (double)q;
        t = test_tensor(dt, TENSOR_SHAPE(r, c), v);
    } else if (kind == 1) { /* stored as [c, r], viewed transposed */
        for (int64_t j = 0; j < c; j++) for (int64_t i = 0; i < r; i++) v[j * r + i] = base + (double)(i * c + j);
        t = tensor_transpose(test_tensor(dt, TENSOR_SHAPE(c, r), v), 0, 1);
    } else if (kind == 2) { /* every other column of a [r, 2c] matrix */
        for (int64_t i = 0; i < r; i++) for (int64_t j = 0; j < 2 * c; j++) v[i * 2 * c + j] = (j % 2) ? 99 : base + (double)(i * c + j / 2);
        t = tensor_slice(test_tensor(dt, TENSOR_SHAPE(r, 2 * c), v), 1, 0, INT64_MAX, 2);
    } else { /* one row expanded */
        for (int64_t j = 0; j < c; j++) v[j] = base + (double)j;
        t = tensor_expand(test_tensor(dt, TENSOR_SHAPE(1, c), v), TENSOR_SHAPE(r, c));
    }
    free(v);
    return t;
}
static double layout_val(int kind, int64_t i, int64_t j, int64_t c, double base) { return kind == 3 ? base + (double)j : base + (double)(i * c + j); }

TEST(shape_cat_values_layouts_dtypes) {
    for (int di = 0; di < N_DTYPES; di++) {
        tensor_dtype dt = all_dtypes[di];
        if (dt == TENSOR_BOOL || dt == TENSOR_U8) continue; /* value ranges; covered below */
        for (int ka = 0; ka < 4; ka++)
            for (int kb = 0; kb < 4; kb++) {
                tensor *a = layout(dt, ka, 2, 3, 0), *b = layout(dt, kb, 4, 3, 50);
                tensor *ab[2] = {a, b};
                tensor *r = tensor_cat(2, ab, 0); /* [6, 3] */
                CHECK_SHAPE(r, TENSOR_SHAPE(6, 3));
                double w[18];
                for (int i = 0; i < 6; i++) for (int j = 0; j < 3; j++) w[i * 3 + j] = i < 2 ? layout_val(ka, i, j, 3, 0) : layout_val(kb, i - 2, j, 3, 50);
                CHECK_VALUES(r, w, 18, 0, 0);
                CHECK(tensor_get_dtype(r) == dt);
                /* along dim 1 (given as -1): [2, 3] and [2, 5] */
                tensor *b2 = layout(dt, kb, 2, 5, 50);
                tensor *ab2[2] = {a, b2};
                tensor *r2 = tensor_cat(2, ab2, -1);
                CHECK_SHAPE(r2, TENSOR_SHAPE(2, 8));
                double w2[16];
                for (int i = 0; i < 2; i++) for (int j = 0; j < 8; j++) w2[i * 8 + j] = j < 3 ? layout_val(ka, i, j, 3, 0) : layout_val(kb, i, j - 3, 5, 50);
                CHECK_VALUES(r2, w2, 16, 0, 0);
            }
    }
    /* bool and u8 */
    tensor *bt = test_tensor(TENSOR_BOOL, TENSOR_SHAPE(2), (const double[]){1, 0});
    tensor *bu = test_tensor(TENSOR_U8, TENSOR_SHAPE(3), (const double[]){7, 200, 3});
    tensor *bb[3] = {bt, bt, bt};
    tensor *rb = tensor_cat(3, bb, 0);
    CHECK(tensor_get_dtype(rb) == TENSOR_BOOL);
    CHECK_VALUES(rb, ((const double[]){1, 0, 1, 0, 1, 0}), 6, 0, 0);
    tensor *mix[2] = {bt, bu};
    tensor *rm = tensor_cat(2, mix, 0);
    CHECK(tensor_get_dtype(rm) == TENSOR_U8);
    CHECK_VALUES(rm, ((const double[]){1, 0, 7, 200, 3}), 5, 0, 0);
}

TEST(shape_cat_promotion_many_inputs_and_empty) {
    tensor *i32 = test_tensor(TENSOR_I32, TENSOR_SHAPE(1, 2), (const double[]){1, 2});
    tensor *f32 = test_tensor(TENSOR_F32, TENSOR_SHAPE(1, 2), (const double[]){0.5, 1.5});
    tensor *i64 = test_tensor(TENSOR_I64, TENSOR_SHAPE(2, 2), (const double[]){3, 4, 5, 6});
    tensor *f64 = test_tensor(TENSOR_F64, TENSOR_SHAPE(1, 2), (const double[]){-1, -2});
    tensor *f16 = test_tensor(TENSOR_F16, TENSOR_SHAPE(1, 2), (const double[]){0.25, 8});
    tensor *ab[2] = {i32, i64};
    tensor *r = tensor_cat(2, ab, 0);
    CHECK(tensor_get_dtype(r) == TENSOR_I64);
    CHECK_VALUES(r, ((const double[]){1, 2, 3, 4, 5, 6}), 6, 0, 0);
    tensor *ac[2] = {i32, f32};
    CHECK(tensor_get_dtype(tensor_cat(2, ac, 0)) == TENSOR_F32);
    tensor *ad[2] = {i64, f16};
    CHECK(tensor_get_dtype(tensor_cat(2, ad, 0)) == TENSOR_F16);
    /* more inputs than a call holds, including an empty one */
    tensor *e = tensor_zeros(TENSOR_SHAPE(0, 2), TENSOR_I32);
    tensor *five[6] = {i32, f32, e, i64, f64, f16};
    tensor *r5 = tensor_cat(6, five, 0);
    CHECK(tensor_get_dtype(r5) == TENSOR_F64);
    CHECK_SHAPE(r5, TENSOR_SHAPE(6, 2));
    CHECK_VALUES(r5, ((const double[]){1, 2, 0.5, 1.5, 3, 4, 5, 6, -1, -2, 0.25, 8}), 12, 0, 0);
    /* 1-D empty tensors are skipped, whatever the others' dims */
    tensor *e1 = tensor_zeros(TENSOR_SHAPE(0), TENSOR_F32);
    tensor *sk[3] = {e1, i64, e1};
    tensor *rs = tensor_cat(3, sk, 1);
    CHECK_SHAPE(rs, TENSOR_SHAPE(2, 2));
    CHECK(tensor_get_dtype(rs) == TENSOR_F32); /* but they take part in the dtype, as in PyTorch */
    CHECK_VALUES(rs, ((const double[]){3, 4, 5, 6}), 4, 0, 0);
    tensor *only[2] = {e1, e1};
    CHECK_SHAPE(tensor_cat(2, only, 0), TENSOR_SHAPE(0));
    /* a single input: a copy */
    tensor *one = tensor_cat(1, &i64, 1);
    CHECK(one && !tensor_shares_storage(one, i64));
    CHECK_VALUES(one, ((const double[]){3, 4, 5, 6}), 4, 0, 0);
    /* zero-size along other dims */
    tensor *z1 = tensor_zeros(TENSOR_SHAPE(2, 0), TENSOR_F32), *z2 = tensor_zeros(TENSOR_SHAPE(3, 0), TENSOR_F32);
    tensor *zz[2] = {z1, z2};
    CHECK_SHAPE(tensor_cat(2, zz, 0), TENSOR_SHAPE(5, 0));
}

TEST(shape_stack_values) {
    for (int di = 0; di < N_DTYPES; di++) {
        tensor_dtype dt = all_dtypes[di];
        tensor *a = layout(dt, 1, 2, 3, 0), *b = layout(dt, 3, 2, 3, 10);
        tensor *ab[2] = {a, b};
        for (int dim = -3; dim < 3; dim++) {
            tensor *r = tensor_stack(2, ab, dim);
            int d = dim < 0 ? dim + 3 : dim;
            int64_t sh[3] = {2, 3, 0};
            if (d == 0) { sh[0] = 2; sh[1] = 2; sh[2] = 3; }
            if (d == 1) { sh[0] = 2; sh[1] = 2; sh[2] = 3; }
            if (d == 2) { sh[0] = 2; sh[1] = 3; sh[2] = 2; }
            CHECK_SHAPE(r, 3, sh);
            double w[12];
            int64_t idx[3] = {0, 0, 0};
            int k = 0;
            do {
                int64_t which = idx[d], i = d == 0 ? idx[1] : idx[0], j = d == 2 ? idx[1] : idx[2];
                w[k++] = exact(dt, which == 0 ? layout_val(1, i, j, 3, 0) : layout_val(3, i, j, 3, 10));
            } while (next_idx(3, sh, idx));
            CHECK_VALUES(r, w, 12, 0, 0);
        }
    }
    /* 0-dim tensors stack into a vector; promotion */
    tensor *s[3] = {tensor_scalar(1, TENSOR_I32), tensor_scalar(2.5, TENSOR_F32), tensor_scalar(3, TENSOR_I64)};
    tensor *r = tensor_stack(3, s, 0);
    CHECK_SHAPE(r, TENSOR_SHAPE(3));
    CHECK(tensor_get_dtype(r) == TENSOR_F32);
    CHECK_VALUES(r, ((const double[]){1, 2.5, 3}), 3, 0, 0);
    CHECK_SHAPE(tensor_stack(3, s, -1), TENSOR_SHAPE(3));
    /* zero-size */
    tensor *z[2] = {tensor_zeros(TENSOR_SHAPE(0, 2), TENSOR_F32), tensor_zeros(TENSOR_SHAPE(0, 2), TENSOR_F32)};
    CHECK_SHAPE(tensor_stack(2, z, 1), TENSOR_SHAPE(0, 2, 2));
}

TEST(shape_split_views) {
    tensor *a = seq(TENSOR_F32, TENSOR_SHAPE(7, 2));
    tensor *parts[4] = {NULL, NULL, NULL, NULL};
    int n = tensor_split(a, 3, 0, parts, 4);
    CHECK(n == 3);
    int64_t sizes[3] = {3, 3, 1};
    int64_t row = 0;
    for (int i = 0; i < n && i < 3; i++) {
        CHECK_SHAPE(parts[i], TENSOR_SHAPE(sizes[i], 2));
        CHECK(tensor_shares_storage(parts[i], a));
        double w[6];
        for (int64_t q = 0; q < sizes[i] * 2; q++) w[q] = (double)(row * 2 + q);
        CHECK_VALUES(parts[i], w, sizes[i] * 2, 0, 0);
        row += sizes[i];
    }
    tensor_fill_(parts[2], -5); /* the last row of a */
    CHECK_NEAR(tensor_item(tensor_select(tensor_select(a, 0, 6), 0, 1)), -5, 0, 0);
    for (int i = 0; i < n; i++) tensor_free(parts[i]);
    /* along a negative dim of a transposed input, exact multiple */
    tensor *t = tensor_transpose(seq(TENSOR_I32, TENSOR_SHAPE(2, 4)), 0, 1); /* [4, 2] */
    tensor *cols[2];
    CHECK(tensor_split(t, 1, -1, cols, 2) == 2);
    CHECK_VALUES(cols[0], ((const double[]){0, 1, 2, 3}), 4, 0, 0);
    CHECK_VALUES(cols[1], ((const double[]){4, 5, 6, 7}), 4, 0, 0);
    /* split_size larger than the dim: one piece; a size-0 dim: one empty piece (split_size 0 too) */
    tensor *one[1];
    CHECK(tensor_split(a, 100, 0, one, 1) == 1);
    CHECK_SHAPE(one[0], TENSOR_SHAPE(7, 2));
    tensor *z = tensor_zeros(TENSOR_SHAPE(0, 3), TENSOR_F32);
    CHECK(tensor_split(z, 2, 0, one, 1) == 1);
    CHECK_SHAPE(one[0], TENSOR_SHAPE(0, 3));
    CHECK(tensor_split(z, 0, 0, one, 1) == 1);
    CHECK_SHAPE(one[0], TENSOR_SHAPE(0, 3));
}

TEST(shape_split_errors) {
    tensor *a = seq(TENSOR_F32, TENSOR_SHAPE(7, 2));
    tensor *out[8];
    for (int i = 0; i < 8; i++) out[i] = NULL;
    CHECK_BAD_INT(tensor_split(NULL, 2, 0, out, 8) < 0, "tensor_split");
    CHECK_BAD_INT(tensor_split(a, 2, 0, NULL, 8) < 0, "tensor_split");
    CHECK_BAD_INT(tensor_split(a, 0, 0, out, 8) < 0, "tensor_split");
    CHECK_BAD_INT(tensor_split(a, -1, 0, out, 8) < 0, "tensor_split");
    CHECK_BAD_INT(tensor_split(a, 2, 2, out, 8) < 0, "tensor_split");
    CHECK_BAD_INT(tensor_split(a, 2, -3, out, 8) < 0, "tensor_split");
    int64_t before = tensor_live_handles();
    CHECK_BAD_INT(tensor_split(a, 2, 0, out, 3) < 0, "tensor_split"); /* 4 pieces */
    CHECK(tensor_live_handles() == before);
    CHECK_BAD_INT(tensor_split(tensor_scalar(1, TENSOR_F32), 1, 0, out, 8) < 0, "tensor_split");
    for (int i = 0; i < 8; i++) CHECK(out[i] == NULL);
}

TEST(shape_flip_values) {
    for (int di = 0; di < N_DTYPES; di++) {
        tensor_dtype dt = all_dtypes[di];
        for (int kind = 0; kind < 4; kind++) {
            tensor *a = layout(dt, kind, 3, 4, 0);
            for (int dim = -2; dim < 2; dim++) {
                tensor *r = tensor_flip(a, dim);
                CHECK(r && !tensor_shares_storage(r, a));
                CHECK_SHAPE(r, TENSOR_SHAPE(3, 4));
                int d = dim < 0 ? dim + 2 : dim;
                double w[12];
                for (int i = 0; i < 3; i++) for (int j = 0; j < 4; j++)
                    w[i * 4 + j] = exact(dt, d == 0 ? layout_val(kind, 2 - i, j, 4, 0) : layout_val(kind, i, 3 - j, 4, 0));
                CHECK_VALUES(r, w, 12, 0, 0);
            }
        }
    }
    tensor *s = tensor_scalar(4, TENSOR_F32);
    tensor *fs = tensor_flip(s, 0);
    CHECK(fs && !tensor_shares_storage(fs, s));
    CHECK_SHAPE(fs, 0, NULL);
    CHECK_NEAR(tensor_item(fs), 4, 0, 0);
    CHECK_SHAPE(tensor_flip(tensor_zeros(TENSOR_SHAPE(0, 3), TENSOR_F32), 0), TENSOR_SHAPE(0, 3));
    /* 3-D middle dim */
    tensor *b = seq(TENSOR_I64, TENSOR_SHAPE(2, 3, 2));
    double w[12];
    for (int i = 0; i < 2; i++) for (int j = 0; j < 3; j++) for (int k = 0; k < 2; k++) w[i * 6 + j * 2 + k] = i * 6 + (2 - j) * 2 + k;
    CHECK_VALUES(tensor_flip(b, 1), w, 12, 0, 0);
}

TEST(shape_repeat_values) {
    for (int di = 0; di < N_DTYPES; di++) {
        tensor_dtype dt = all_dtypes[di];
        for (int kind = 0; kind < 4; kind++) {
            tensor *a = layout(dt, kind, 2, 3, 1);
            int64_t reps[3] = {2, 3, 2};
            tensor *r = tensor_repeat(a, 3, reps);
            int64_t sh[3] = {2, 6, 6};
            CHECK_SHAPE(r, 3, sh);
            double w[72];
            int64_t idx[3] = {0, 0, 0};
            int k = 0;
            do { w[k++] = exact(dt, layout_val(kind, idx[1] % 2, idx[2] % 3, 3, 1)); } while (next_idx(3, sh, idx));
            CHECK_VALUES(r, w, 72, 0, 0);
            /* same number of dims, odd counts (the doubling's remainder) */
            tensor *r2 = tensor_repeat(a, 2, (const int64_t[]){5, 1});
            double w2[30];
            for (int i = 0; i < 10; i++) for (int j = 0; j < 3; j++) w2[i * 3 + j] = exact(dt, layout_val(kind, i % 2, j, 3, 1));
            CHECK_SHAPE(r2, TENSOR_SHAPE(10, 3));
            CHECK_VALUES(r2, w2, 30, 0, 0);
        }
    }
    tensor *s = tensor_scalar(2, TENSOR_F32);
    tensor *rs = tensor_repeat(s, 2, (const int64_t[]){2, 3});
    CHECK_SHAPE(rs, TENSOR_SHAPE(2, 3));
    CHECK_VALUES(rs, ((const double[]){2, 2, 2, 2, 2, 2}), 6, 0, 0);
    tensor *r0 = tensor_repeat(s, 0, NULL);
    CHECK_SHAPE(r0, 0, NULL);
    CHECK(r0 && !tensor_shares_storage(r0, s));
    CHECK_SHAPE(tensor_repeat(seq(TENSOR_F32, TENSOR_SHAPE(2)), 2, (const int64_t[]){0, 3}), TENSOR_SHAPE(0, 6));
    CHECK_SHAPE(tensor_repeat(tensor_zeros(TENSOR_SHAPE(0), TENSOR_F32), 2, (const int64_t[]){2, 3}), TENSOR_SHAPE(2, 0));
    /* many repeats of one element */
    tensor *big = tensor_repeat(tensor_ones(TENSOR_SHAPE(1), TENSOR_F32), 1, (const int64_t[]){1000});
    double *ones = (double *)malloc(sizeof(double) * 1000);
    for (int i = 0; i < 1000; i++) ones[i] = 1;
    CHECK_VALUES(big, ones, 1000, 0, 0);
    free(ones);
}

TEST(shape_pad_values) {
    struct { int npad; int64_t pads[4]; } cases[] = {
        {2, {1, 2, 0, 0}}, {4, {1, 0, 2, 1}}, {2, {-1, 1, 0, 0}}, {4, {0, -2, -1, 3}}, {4, {-1, -1, 1, 1}}, {0, {0, 0, 0, 0}}, {4, {0, 0, 0, 0}}, {2, {-4, 0, 0, 0}}};
    for (int di = 0; di < N_DTYPES; di++) {
        tensor_dtype dt = all_dtypes[di];
        double value = dt == TENSOR_BOOL ? 1 : 9;
        for (int kind = 0; kind < 4; kind++) {
            tensor *a = layout(dt, kind, 3, 4, 1);
            for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
                int64_t l = cases[c].pads[0], r = cases[c].pads[1], t = cases[c].npad > 2 ? cases[c].pads[2] : 0, b = cases[c].npad > 2 ? cases[c].pads[3] : 0;
                int64_t R = 3 + t + b, C = 4 + l + r;
                tensor *p = tensor_pad(a, cases[c].npad, cases[c].pads, value);
                CHECK_SHAPE(p, TENSOR_SHAPE(R, C));
                double w[64];
                for (int64_t i = 0; i < R; i++) for (int64_t j = 0; j < C; j++) {
                    int64_t si = i - t, sj = j - l;
                    w[i * C + j] = (si >= 0 && si < 3 && sj >= 0 && sj < 4) ? exact(dt, layout_val(kind, si, sj, 4, 1)) : value;
                }
                CHECK_VALUES(p, w, R * C, 0, 0);
                CHECK(p && !tensor_shares_storage(p, a));
            }
        }
    }
    /* 3-D, padding the last dim only, with a fractional value into f32 and an int dtype */
    tensor *x = seq(TENSOR_I32, TENSOR_SHAPE(2, 1, 2));
    tensor *px = tensor_pad(x, 2, (const int64_t[]){1, 1}, -3.7);
    CHECK_VALUES(px, ((const double[]){-3, 0, 1, -3, -3, 2, 3, -3}), 8, 0, 0);
    tensor *s = tensor_scalar(5, TENSOR_F64);
    tensor *ps = tensor_pad(s, 0, NULL, 0);
    CHECK_SHAPE(ps, 0, NULL);
    CHECK_NEAR(tensor_item(ps), 5, 0, 0);
    tensor *z = tensor_pad(tensor_zeros(TENSOR_SHAPE(0, 2), TENSOR_F32), 4, (const int64_t[]){0, 0, 1, 1}, 2);
    CHECK_SHAPE(z, TENSOR_SHAPE(2, 2));
    CHECK_VALUES(z, ((const double[]){2, 2, 2, 2}), 4, 0, 0);
    CHECK_SHAPE(tensor_pad(seq(TENSOR_F32, TENSOR_SHAPE(2, 3)), 2, (const int64_t[]){-2, -1}, 0), TENSOR_SHAPE(2, 0));
}

TEST(shape_tril_triu_values) {
    int64_t diags[] = {-5, -2, -1, 0, 1, 3, 6, INT64_MAX, INT64_MIN};
    for (int di = 0; di < N_DTYPES; di++) {
        tensor_dtype dt = all_dtypes[di];
        for (int kind = 0; kind < 4; kind++) {
            tensor *a = layout(dt, kind, 3, 5, 1);
            for (size_t q = 0; q < sizeof diags / sizeof diags[0]; q++) {
                double d = (double)diags[q];
                tensor *lo = tensor_tril(a, diags[q]), *up = tensor_triu(a, diags[q]);
                double wl[15], wu[15];
                for (int i = 0; i < 3; i++) for (int j = 0; j < 5; j++) {
                    double v = exact(dt, layout_val(kind, i, j, 5, 1));
                    wl[i * 5 + j] = (double)(j - i) <= d ? v : 0;
                    wu[i * 5 + j] = (double)(j - i) >= d ? v : 0;
                }
                CHECK_VALUES(lo, wl, 15, 0, 0);
                CHECK_VALUES(up, wu, 15, 0, 0);
            }
        }
    }
    /* batch dims, transposed last two */
    tensor *b = tensor_transpose(seq(TENSOR_F64, TENSOR_SHAPE(2, 4, 3)), 1, 2); /* [2, 3, 4]: (n, i, j) = n*12 + j*3 + i */
    double w[24];
    for (int n = 0; n < 2; n++) for (int i = 0; i < 3; i++) for (int j = 0; j < 4; j++) w[n * 12 + i * 4 + j] = j - i >= -1 ? n * 12 + j * 3 + i : 0;
    CHECK_VALUES(tensor_triu(b, -1), w, 24, 0, 0);
    CHECK_SHAPE(tensor_tril(tensor_zeros(TENSOR_SHAPE(2, 0, 3), TENSOR_F32), 0), TENSOR_SHAPE(2, 0, 3));
    CHECK_SHAPE(tensor_triu(tensor_zeros(TENSOR_SHAPE(3, 0), TENSOR_F32), 0), TENSOR_SHAPE(3, 0));
}

/* ---- indexing ---- */

TEST(shape_gather_values) {
    for (int di = 0; di < N_DTYPES; di++) {
        tensor_dtype dt = all_dtypes[di];
        for (int kind = 0; kind < 4; kind++) {
            tensor *a = layout(dt, kind, 3, 4, 0);
            /* dim 0: index [2, 4] (smaller along dim 0 is fine, and may be larger too) */
            double iv[8] = {2, 0, 1, 1, 0, 0, 2, 1};
            tensor_dtype idt = kind % 2 ? TENSOR_I32 : TENSOR_I64;
            tensor *ix = test_tensor(idt, TENSOR_SHAPE(2, 4), iv);
            tensor *r = tensor_gather(a, 0, ix);
            CHECK_SHAPE(r, TENSOR_SHAPE(2, 4));
            double w[8];
            for (int i = 0; i < 2; i++) for (int j = 0; j < 4; j++) w[i * 4 + j] = exact(dt, layout_val(kind, (int64_t)iv[i * 4 + j], j, 4, 0));
            CHECK_VALUES(r, w, 8, 0, 0);
            /* dim 1 (as -1) with a transposed index [3, 2] larger along dim 1 than a? no: [3, 5] */
            double jv[15] = {3, 0, 1, 2, 3, 1, 1, 1, 0, 0, 2, 3, 3, 3, 2};
            tensor *jx = tensor_transpose(test_tensor(TENSOR_I64, TENSOR_SHAPE(5, 3), jv), 0, 1); /* (i, j) = jv[j*3 + i] */
            tensor *r2 = tensor_gather(a, -1, jx);
            CHECK_SHAPE(r2, TENSOR_SHAPE(3, 5));
            double w2[15];
            for (int i = 0; i < 3; i++) for (int j = 0; j < 5; j++) w2[i * 5 + j] = exact(dt, layout_val(kind, i, (int64_t)jv[j * 3 + i], 4, 0));
            CHECK_VALUES(r2, w2, 15, 0, 0);
        }
    }
    /* an expanded index */
    tensor *a = seq(TENSOR_F32, TENSOR_SHAPE(3, 4));
    tensor *ix = tensor_expand(test_tensor(TENSOR_I64, TENSOR_SHAPE(1, 4), (const double[]){2, 1, 0, 2}), TENSOR_SHAPE(3, 4));
    double w[12];
    for (int i = 0; i < 3; i++) for (int j = 0; j < 4; j++) { int k[4] = {2, 1, 0, 2}; w[i * 4 + j] = k[j] * 4 + j; }
    CHECK_VALUES(tensor_gather(a, 0, ix), w, 12, 0, 0);
    /* 0-dim, empty index */
    tensor *s = tensor_scalar(7, TENSOR_F64);
    tensor *g0 = tensor_gather(s, 0, tensor_scalar(0, TENSOR_I64));
    CHECK_SHAPE(g0, 0, NULL);
    CHECK_NEAR(tensor_item(g0), 7, 0, 0);
    tensor *g1 = tensor_gather(s, -1, tensor_zeros(TENSOR_SHAPE(1), TENSOR_I64));
    CHECK_SHAPE(g1, TENSOR_SHAPE(1));
    CHECK_NEAR(tensor_item(g1), 7, 0, 0);
    CHECK_SHAPE(tensor_gather(a, 1, tensor_zeros(TENSOR_SHAPE(3, 0), TENSOR_I64)), TENSOR_SHAPE(3, 0));
    CHECK_SHAPE(tensor_gather(a, 1, tensor_zeros(TENSOR_SHAPE(0), TENSOR_I64)), TENSOR_SHAPE(0)); /* empty: no shape check */
}

TEST(shape_scatter_add_values) {
    for (int di = 0; di < N_DTYPES; di++) {
        tensor_dtype dt = all_dtypes[di];
        if (dt == TENSOR_BOOL) continue;
        for (int kind = 0; kind < 4; kind++) {
            tensor *t = layout(dt, kind, 3, 4, 0);
            tensor *src = layout(dt, (kind + 1) % 4, 2, 5, 1); /* larger than index along dim 1 */
            double iv[6] = {2, 0, 2, 1, 2, 2};                   /* duplicates accumulate */
            tensor *ix = test_tensor(kind % 2 ? TENSOR_I32 : TENSOR_I64, TENSOR_SHAPE(2, 3), iv);
            tensor *r = tensor_scatter_add(t, 0, ix, src);
            CHECK(r && !tensor_shares_storage(r, t));
            CHECK_SHAPE(r, TENSOR_SHAPE(3, 4));
            double w[12];
            for (int i = 0; i < 3; i++) for (int j = 0; j < 4; j++) w[i * 4 + j] = layout_val(kind, i, j, 4, 0);
            for (int i = 0; i < 2; i++) for (int j = 0; j < 3; j++) w[(int)iv[i * 3 + j] * 4 + j] += layout_val((kind + 1) % 4, i, j, 5, 1);
            for (int q = 0; q < 12; q++) w[q] = exact(dt, w[q]);
            CHECK_VALUES(r, w, 12, 0, test_tol(dt));
            /* along dim 1 */
            tensor *r2 = tensor_scatter_add(t, 1, ix, src);
            for (int i = 0; i < 3; i++) for (int j = 0; j < 4; j++) w[i * 4 + j] = layout_val(kind, i, j, 4, 0);
            for (int i = 0; i < 2; i++) for (int j = 0; j < 3; j++) w[i * 4 + (int)iv[i * 3 + j]] += layout_val((kind + 1) % 4, i, j, 5, 1);
            for (int q = 0; q < 12; q++) w[q] = exact(dt, w[q]);
            CHECK_VALUES(r2, w, 12, 0, test_tol(dt));
        }
    }
    /* bool: logical or; i32 wraps */
    tensor *bt = test_tensor(TENSOR_BOOL, TENSOR_SHAPE(3), (const double[]){0, 1, 0});
    tensor *bs = test_tensor(TENSOR_BOOL, TENSOR_SHAPE(3), (const double[]){1, 1, 0});
    tensor *bi = test_tensor(TENSOR_I64, TENSOR_SHAPE(3), (const double[]){2, 1, 0});
    CHECK_VALUES(tensor_scatter_add(bt, 0, bi, bs), ((const double[]){0, 1, 1}), 3, 0, 0);
    tensor *it = test_tensor(TENSOR_I32, TENSOR_SHAPE(1), (const double[]){2147483647});
    tensor *is = test_tensor(TENSOR_I32, TENSOR_SHAPE(1), (const double[]){1});
    CHECK_VALUES(tensor_scatter_add(it, 0, tensor_zeros(TENSOR_SHAPE(1), TENSOR_I64), is), ((const double[]){-2147483648.0}), 1, 0, 0);
    /* 0-dim, empty index */
    tensor *s = tensor_scalar(1.5, TENSOR_F32);
    tensor *r0 = tensor_scatter_add(s, 0, tensor_scalar(0, TENSOR_I64), tensor_scalar(2, TENSOR_F32));
    CHECK_SHAPE(r0, 0, NULL);
    CHECK_NEAR(tensor_item(r0), 3.5, 0, 0);
    tensor *a = seq(TENSOR_F32, TENSOR_SHAPE(2, 2));
    tensor *re = tensor_scatter_add(a, 0, tensor_zeros(TENSOR_SHAPE(0), TENSOR_I64), tensor_zeros(TENSOR_SHAPE(5), TENSOR_F32));
    CHECK_VALUES(re, ((const double[]){0, 1, 2, 3}), 4, 0, 0);
}

TEST(shape_index_select_values) {
    for (int di = 0; di < N_DTYPES; di++) {
        tensor_dtype dt = all_dtypes[di];
        for (int kind = 0; kind < 4; kind++) {
            tensor *a = layout(dt, kind, 3, 4, 0);
            double iv[5] = {3, 0, 3, 1, 2};
            tensor *ix = tensor_slice(test_tensor(kind % 2 ? TENSOR_I32 : TENSOR_I64, TENSOR_SHAPE(10), (const double[]){3, -1, 0, -1, 3, -1, 1, -1, 2, -1}), 0, 0, INT64_MAX, 2);
            tensor *r = tensor_index_select(a, -1, ix);
            CHECK_SHAPE(r, TENSOR_SHAPE(3, 5));
            double w[15];
            for (int i = 0; i < 3; i++) for (int j = 0; j < 5; j++) w[i * 5 + j] = exact(dt, layout_val(kind, i, (int64_t)iv[j], 4, 0));
            CHECK_VALUES(r, w, 15, 0, 0);
            tensor *r0 = tensor_index_select(a, 0, test_tensor(TENSOR_I64, TENSOR_SHAPE(4), (const double[]){2, 2, 0, 1}));
            double rows[4] = {2, 2, 0, 1}, w0[16];
            for (int i = 0; i < 4; i++) for (int j = 0; j < 4; j++) w0[i * 4 + j] = exact(dt, layout_val(kind, (int64_t)rows[i], j, 4, 0));
            CHECK_SHAPE(r0, TENSOR_SHAPE(4, 4));
            CHECK_VALUES(r0, w0, 16, 0, 0);
        }
    }
    tensor *a = seq(TENSOR_F32, TENSOR_SHAPE(3, 4));
    /* a 0-dim index keeps the dim (size 1) */
    tensor *r1 = tensor_index_select(a, 0, tensor_scalar(1, TENSOR_I64));
    CHECK_SHAPE(r1, TENSOR_SHAPE(1, 4));
    CHECK_VALUES(r1, ((const double[]){4, 5, 6, 7}), 4, 0, 0);
    CHECK_SHAPE(tensor_index_select(a, 1, tensor_zeros(TENSOR_SHAPE(0), TENSOR_I64)), TENSOR_SHAPE(3, 0));
    tensor *s = tensor_scalar(6, TENSOR_I32);
    tensor *rs = tensor_index_select(s, 0, tensor_zeros(TENSOR_SHAPE(1), TENSOR_I64));
    CHECK_SHAPE(rs, 0, NULL);
    CHECK_NEAR(tensor_item(rs), 6, 0, 0);
    CHECK_SHAPE(tensor_index_select(tensor_zeros(TENSOR_SHAPE(0, 3), TENSOR_F32), 1, tensor_zeros(TENSOR_SHAPE(2), TENSOR_I64)), TENSOR_SHAPE(0, 2));
}

TEST(shape_masked_fill_values) {
    for (int di = 0; di < N_DTYPES; di++) {
        tensor_dtype dt = all_dtypes[di];
        double value = dt == TENSOR_BOOL ? 0 : dt == TENSOR_U8 ? 200 : -7;
        for (int kind = 0; kind < 4; kind++) {
            tensor *a = layout(dt, kind, 3, 4, 1);
            /* a [4] mask broadcast over rows, a [3, 1] mask over columns, a full transposed mask */
            double m1[4] = {1, 0, 0, 1}, m2[3] = {0, 1, 0};
            tensor *k1 = test_tensor(TENSOR_BOOL, TENSOR_SHAPE(4), m1);
            tensor *k2 = test_tensor(TENSOR_BOOL, TENSOR_SHAPE(3, 1), m2);
            double mf[12];
            for (int q = 0; q < 12; q++) mf[q] = (q * 7) % 3 == 0;
            tensor *k3 = tensor_transpose(test_tensor(TENSOR_BOOL, TENSOR_SHAPE(4, 3), mf), 0, 1); /* (i, j) = mf[j*3 + i] */
            tensor *r1 = tensor_masked_fill(a, k1, value), *r2 = tensor_masked_fill(a, k2, value), *r3 = tensor_masked_fill(a, k3, value);
            double w1[12], w2[12], w3[12];
            for (int i = 0; i < 3; i++) for (int j = 0; j < 4; j++) {
                double v = exact(dt, layout_val(kind, i, j, 4, 1));
                w1[i * 4 + j] = m1[j] != 0 ? value : v;
                w2[i * 4 + j] = m2[i] != 0 ? value : v;
                w3[i * 4 + j] = mf[j * 3 + i] != 0 ? value : v;
            }
            CHECK_VALUES(r1, w1, 12, 0, 0);
            CHECK_VALUES(r2, w2, 12, 0, 0);
            CHECK_VALUES(r3, w3, 12, 0, 0);
            CHECK(tensor_get_dtype(r1) == dt);
            CHECK(r1 && !tensor_shares_storage(r1, a));
        }
    }
    tensor *s = tensor_scalar(2, TENSOR_F32);
    tensor *r = tensor_masked_fill(s, tensor_scalar(1, TENSOR_BOOL), 5);
    CHECK_SHAPE(r, 0, NULL);
    CHECK_NEAR(tensor_item(r), 5, 0, 0);
    tensor *a = seq(TENSOR_I32, TENSOR_SHAPE(2, 2));
    CHECK_VALUES(tensor_masked_fill(a, tensor_scalar(1, TENSOR_BOOL), 3.9), ((const double[]){3, 3, 3, 3}), 4, 0, 0);
    CHECK_VALUES(tensor_masked_fill(tensor_zeros(TENSOR_SHAPE(2), TENSOR_F32), tensor_ones(TENSOR_SHAPE(2), TENSOR_BOOL), NAN), ((const double[]){NAN, NAN}), 2, 0, 0);
    CHECK_SHAPE(tensor_masked_fill(tensor_zeros(TENSOR_SHAPE(0, 2), TENSOR_F32), tensor_ones(TENSOR_SHAPE(2), TENSOR_BOOL), 1), TENSOR_SHAPE(0, 2));
}

TEST(shape_one_hot_values) {
    tensor_dtype its[3] = {TENSOR_I64, TENSOR_I32, TENSOR_U8};
    for (int q = 0; q < 3; q++) {
        double iv[6] = {2, 0, 4, 1, 1, 3};
        tensor *ix = tensor_transpose(test_tensor(its[q], TENSOR_SHAPE(3, 2), iv), 0, 1); /* [2, 3]: (i, j) = iv[j*2 + i] */
        for (int pass = 0; pass < 2; pass++) {
            int64_t classes = pass == 0 ? -1 : 7, C = pass == 0 ? 5 : 7;
            tensor *r = tensor_one_hot(ix, classes);
            CHECK_SHAPE(r, TENSOR_SHAPE(2, 3, C));
            CHECK(tensor_get_dtype(r) == TENSOR_I64);
            double w[42];
            for (int i = 0; i < 2; i++) for (int j = 0; j < 3; j++) for (int k = 0; k < C; k++) w[(i * 3 + j) * C + k] = iv[j * 2 + i] == k;
            CHECK_VALUES(r, w, 2 * 3 * C, 0, 0);
        }
    }
    tensor *s = tensor_one_hot(tensor_scalar(2, TENSOR_I64), 3);
    CHECK_SHAPE(s, TENSOR_SHAPE(3));
    CHECK_VALUES(s, ((const double[]){0, 0, 1}), 3, 0, 0);
    CHECK_SHAPE(tensor_one_hot(tensor_zeros(TENSOR_SHAPE(0, 2), TENSOR_I64), 4), TENSOR_SHAPE(0, 2, 4));
    CHECK_SHAPE(tensor_one_hot(tensor_zeros(TENSOR_SHAPE(0), TENSOR_I64), 0), TENSOR_SHAPE(0, 0));
    tensor *e = tensor_one_hot(tensor_expand(tensor_scalar(1, TENSOR_I64), TENSOR_SHAPE(3)), -1);
    CHECK_VALUES(e, ((const double[]){0, 1, 0, 1, 0, 1}), 6, 0, 0);
}

/* ---- bad inputs of the copying and indexing ops ---- */

void bad_input_cat(void) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32), *b = tensor_zeros(TENSOR_SHAPE(2, 4), TENSOR_F32);
    tensor *c3 = tensor_zeros(TENSOR_SHAPE(2, 3, 1), TENSOR_F32), *s = tensor_scalar(1, TENSOR_F32);
    tensor *ab[2] = {a, b}, *ac[2] = {a, c3}, *as[2] = {a, s}, *an[2] = {a, NULL};
    CHECK_BAD(tensor_cat(2, NULL, 0), "tensor_cat");
    CHECK_BAD(tensor_cat(2, an, 0), "tensor_cat");
    CHECK_BAD(tensor_cat(0, ab, 0), "tensor_cat");
    CHECK_BAD(tensor_cat(-1, ab, 0), "tensor_cat");
    CHECK_BAD(tensor_cat(2, ab, 0), "tensor_cat");  /* sizes differ at dim 1 */
    CHECK_BAD(tensor_cat(2, ac, 0), "tensor_cat");  /* dims differ */
    CHECK_BAD(tensor_cat(2, as, 0), "tensor_cat");  /* 0-dim */
    CHECK_BAD(tensor_cat(2, ab, 2), "tensor_cat");
    CHECK_BAD(tensor_cat(2, ab, -3), "tensor_cat");
    tensor_free(a); tensor_free(b); tensor_free(c3); tensor_free(s);
}

void bad_input_stack(void) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32), *b = tensor_zeros(TENSOR_SHAPE(3, 2), TENSOR_F32);
    tensor *ab[2] = {a, b}, *aa[2] = {a, a}, *an[2] = {a, NULL};
    CHECK_BAD(tensor_stack(2, NULL, 0), "tensor_stack");
    CHECK_BAD(tensor_stack(2, an, 0), "tensor_stack");
    CHECK_BAD(tensor_stack(0, aa, 0), "tensor_stack");
    CHECK_BAD(tensor_stack(2, ab, 0), "tensor_stack");
    CHECK_BAD(tensor_stack(2, aa, 3), "tensor_stack");
    CHECK_BAD(tensor_stack(2, aa, -4), "tensor_stack");
    tensor *big = tensor_zeros(TENSOR_SHAPE(1, 1, 1, 1, 1, 1, 1, 1), TENSOR_F32);
    tensor *bb[2] = {big, big};
    CHECK_BAD(tensor_stack(2, bb, 0), "tensor_stack");
    tensor_free(big); tensor_free(a); tensor_free(b);
}

void bad_input_flip(void) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32), *s = tensor_scalar(1, TENSOR_F32);
    CHECK_BAD(tensor_flip(NULL, 0), "tensor_flip");
    CHECK_BAD(tensor_flip(a, 2), "tensor_flip");
    CHECK_BAD(tensor_flip(a, -3), "tensor_flip");
    CHECK_BAD(tensor_flip(s, 1), "tensor_flip");
    tensor_free(a); tensor_free(s);
}

void bad_input_repeat(void) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32);
    CHECK_BAD(tensor_repeat(NULL, 2, (const int64_t[]){1, 1}), "tensor_repeat");
    CHECK_BAD(tensor_repeat(a, 1, (const int64_t[]){2}), "tensor_repeat");
    CHECK_BAD(tensor_repeat(a, 2, (const int64_t[]){-1, 2}), "tensor_repeat");
    CHECK_BAD(tensor_repeat(a, 2, NULL), "tensor_repeat");
    CHECK_BAD(tensor_repeat(a, 9, (const int64_t[]){1, 1, 1, 1, 1, 1, 1, 1, 1}), "tensor_repeat");
    CHECK_BAD(tensor_repeat(a, 2, (const int64_t[]){INT64_MAX / 2, 2}), "tensor_repeat");
    tensor_free(a);
}

void bad_input_pad(void) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32), *u = tensor_zeros(TENSOR_SHAPE(2), TENSOR_U8);
    CHECK_BAD(tensor_pad(NULL, 2, (const int64_t[]){1, 1}, 0), "tensor_pad");
    CHECK_BAD(tensor_pad(a, 3, (const int64_t[]){1, 1, 1}, 0), "tensor_pad");
    CHECK_BAD(tensor_pad(a, 6, (const int64_t[]){1, 1, 1, 1, 1, 1}, 0), "tensor_pad");
    CHECK_BAD(tensor_pad(a, -2, (const int64_t[]){1, 1}, 0), "tensor_pad");
    CHECK_BAD(tensor_pad(a, 2, NULL, 0), "tensor_pad");
    CHECK_BAD(tensor_pad(a, 2, (const int64_t[]){-2, -2}, 0), "tensor_pad");  /* negative size */
    CHECK_BAD(tensor_pad(a, 2, (const int64_t[]){-4, 2}, 0), "tensor_pad");   /* crops past the input */
    CHECK_BAD(tensor_pad(a, 2, (const int64_t[]){INT64_MAX, 1}, 0), "tensor_pad");
    CHECK_BAD(tensor_pad(u, 2, (const int64_t[]){1, 1}, 256), "tensor_pad");  /* value does not fit */
    CHECK_BAD(tensor_pad(u, 2, (const int64_t[]){1, 1}, -1), "tensor_pad");
    tensor_free(a); tensor_free(u);
}

void bad_input_tril(void) {
    tensor *v = tensor_zeros(TENSOR_SHAPE(3), TENSOR_F32), *s = tensor_scalar(1, TENSOR_F32);
    CHECK_BAD(tensor_tril(NULL, 0), "tensor_tril");
    CHECK_BAD(tensor_tril(v, 0), "tensor_tril");
    CHECK_BAD(tensor_tril(s, 0), "tensor_tril");
    tensor_free(v); tensor_free(s);
}

void bad_input_triu(void) {
    tensor *v = tensor_zeros(TENSOR_SHAPE(3), TENSOR_F32), *s = tensor_scalar(1, TENSOR_F32);
    CHECK_BAD(tensor_triu(NULL, 0), "tensor_triu");
    CHECK_BAD(tensor_triu(v, 1), "tensor_triu");
    CHECK_BAD(tensor_triu(s, 0), "tensor_triu");
    tensor_free(v); tensor_free(s);
}

void bad_input_gather(void) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32);
    tensor *ok = tensor_zeros(TENSOR_SHAPE(2, 2), TENSOR_I64);
    tensor *fidx = tensor_zeros(TENSOR_SHAPE(2, 2), TENSOR_F32), *u8 = tensor_zeros(TENSOR_SHAPE(2, 2), TENSOR_U8);
    tensor *i1 = tensor_zeros(TENSOR_SHAPE(2), TENSOR_I64), *wide = tensor_zeros(TENSOR_SHAPE(2, 4), TENSOR_I64);
    tensor *hi = tensor_full(TENSOR_SHAPE(2, 2), 3, TENSOR_I64), *neg = tensor_full(TENSOR_SHAPE(2, 2), -1, TENSOR_I64);
    CHECK_BAD(tensor_gather(NULL, 0, ok), "tensor_gather");
    CHECK_BAD(tensor_gather(a, 0, NULL), "tensor_gather");
    CHECK_BAD(tensor_gather(a, 2, ok), "tensor_gather");
    CHECK_BAD(tensor_gather(a, 0, fidx), "tensor_gather");
    CHECK_BAD(tensor_gather(a, 0, u8), "tensor_gather");
    CHECK_BAD(tensor_gather(a, 0, i1), "tensor_gather");    /* dims differ */
    CHECK_BAD(tensor_gather(a, 0, wide), "tensor_gather");  /* index larger at dim 1 != dim */
    CHECK_BAD(tensor_gather(a, 1, hi), "tensor_gather");    /* out of range */
    CHECK_BAD(tensor_gather(a, 1, neg), "tensor_gather");   /* negative */
    CHECK_BAD(tensor_gather(a, 0, hi), "tensor_gather");
    tensor_free(a); tensor_free(ok); tensor_free(fidx); tensor_free(u8); tensor_free(i1); tensor_free(wide); tensor_free(hi); tensor_free(neg);
}

void bad_input_scatter_add(void) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32), *src = tensor_ones(TENSOR_SHAPE(2, 3), TENSOR_F32);
    tensor *src64 = tensor_ones(TENSOR_SHAPE(2, 3), TENSOR_F64), *small = tensor_ones(TENSOR_SHAPE(2, 1), TENSOR_F32);
    tensor *ok = tensor_zeros(TENSOR_SHAPE(2, 2), TENSOR_I64), *fidx = tensor_zeros(TENSOR_SHAPE(2, 2), TENSOR_F32);
    tensor *i1 = tensor_zeros(TENSOR_SHAPE(2), TENSOR_I64), *wide = tensor_zeros(TENSOR_SHAPE(2, 4), TENSOR_I64);
    tensor *hi = tensor_full(TENSOR_SHAPE(2, 2), 2, TENSOR_I64), *neg = tensor_full(TENSOR_SHAPE(2, 2), -1, TENSOR_I64);
    CHECK_BAD(tensor_scatter_add(NULL, 0, ok, src), "tensor_scatter_add");
    CHECK_BAD(tensor_scatter_add(a, 0, NULL, src), "tensor_scatter_add");
    CHECK_BAD(tensor_scatter_add(a, 0, ok, NULL), "tensor_scatter_add");
    CHECK_BAD(tensor_scatter_add(a, 2, ok, src), "tensor_scatter_add");
    CHECK_BAD(tensor_scatter_add(a, 0, fidx, src), "tensor_scatter_add");
    CHECK_BAD(tensor_scatter_add(a, 0, ok, src64), "tensor_scatter_add"); /* dtypes differ */
    CHECK_BAD(tensor_scatter_add(a, 0, i1, src), "tensor_scatter_add");
    CHECK_BAD(tensor_scatter_add(a, 0, wide, src), "tensor_scatter_add");
    CHECK_BAD(tensor_scatter_add(a, 0, ok, small), "tensor_scatter_add"); /* index larger than src */
    CHECK_BAD(tensor_scatter_add(a, 0, hi, src), "tensor_scatter_add");
    CHECK_BAD(tensor_scatter_add(a, 1, neg, src), "tensor_scatter_add");
    tensor_free(a); tensor_free(src); tensor_free(src64); tensor_free(small); tensor_free(ok); tensor_free(fidx);
    tensor_free(i1); tensor_free(wide); tensor_free(hi); tensor_free(neg);
}

void bad_input_index_select(void) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32), *s = tensor_scalar(1, TENSOR_F32);
    tensor *ok = tensor_zeros(TENSOR_SHAPE(2), TENSOR_I64), *fidx = tensor_zeros(TENSOR_SHAPE(2), TENSOR_F32);
    tensor *i2 = tensor_zeros(TENSOR_SHAPE(1, 2), TENSOR_I64), *neg = tensor_full(TENSOR_SHAPE(1), -1, TENSOR_I64);
    tensor *hi = tensor_full(TENSOR_SHAPE(1), 3, TENSOR_I32);
    CHECK_BAD(tensor_index_select(NULL, 0, ok), "tensor_index_select");
    CHECK_BAD(tensor_index_select(a, 0, NULL), "tensor_index_select");
    CHECK_BAD(tensor_index_select(a, 2, ok), "tensor_index_select");
    CHECK_BAD(tensor_index_select(a, 0, fidx), "tensor_index_select");
    CHECK_BAD(tensor_index_select(a, 0, i2), "tensor_index_select");
    CHECK_BAD(tensor_index_select(a, 1, neg), "tensor_index_select");
    CHECK_BAD(tensor_index_select(a, 1, hi), "tensor_index_select");
    CHECK_BAD(tensor_index_select(s, 0, ok), "tensor_index_select"); /* two values into a 0-dim tensor */
    tensor_free(a); tensor_free(s); tensor_free(ok); tensor_free(fidx); tensor_free(i2); tensor_free(neg); tensor_free(hi);
}

void bad_input_masked_fill(void) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32), *i = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_I32);
    tensor *m = tensor_ones(TENSOR_SHAPE(2, 3), TENSOR_BOOL), *mu8 = tensor_ones(TENSOR_SHAPE(2, 3), TENSOR_U8);
    tensor *mbig = tensor_ones(TENSOR_SHAPE(4, 2, 3), TENSOR_BOOL), *mbad = tensor_ones(TENSOR_SHAPE(2, 2), TENSOR_BOOL);
    CHECK_BAD(tensor_masked_fill(NULL, m, 0), "tensor_masked_fill");
    CHECK_BAD(tensor_masked_fill(a, NULL, 0), "tensor_masked_fill");
    CHECK_BAD(tensor_masked_fill(a, mu8, 0), "tensor_masked_fill");
    CHECK_BAD(tensor_masked_fill(a, tensor_ones(TENSOR_SHAPE(4, 3, 3), TENSOR_BOOL), 0), "tensor_masked_fill"); /* (a larger mask enlarges t, as in PyTorch; this one does not broadcast) */
    CHECK_BAD(tensor_masked_fill(a, mbad, 0), "tensor_masked_fill");
    CHECK_BAD(tensor_masked_fill(i, m, 1e10), "tensor_masked_fill"); /* value does not fit int32 */
    CHECK_BAD(tensor_masked_fill(i, m, NAN), "tensor_masked_fill");
    tensor_free(a); tensor_free(i); tensor_free(m); tensor_free(mu8); tensor_free(mbig); tensor_free(mbad);
}

void bad_input_one_hot(void) {
    tensor *ok = test_tensor(TENSOR_I64, TENSOR_SHAPE(3), (const double[]){0, 2, 1});
    tensor *neg = test_tensor(TENSOR_I64, TENSOR_SHAPE(2), (const double[]){0, -1});
    tensor *f = tensor_zeros(TENSOR_SHAPE(2), TENSOR_F32), *b = tensor_zeros(TENSOR_SHAPE(2), TENSOR_BOOL);
    tensor *e = tensor_zeros(TENSOR_SHAPE(0), TENSOR_I64), *big = tensor_zeros(TENSOR_SHAPE(1, 1, 1, 1, 1, 1, 1, 1), TENSOR_I64);
    CHECK_BAD(tensor_one_hot(NULL, 3), "tensor_one_hot");
    CHECK_BAD(tensor_one_hot(f, 3), "tensor_one_hot");
    CHECK_BAD(tensor_one_hot(b, 3), "tensor_one_hot");
    CHECK_BAD(tensor_one_hot(ok, 2), "tensor_one_hot");   /* 2 >= num_classes */
    CHECK_BAD(tensor_one_hot(ok, 0), "tensor_one_hot");
    CHECK_BAD(tensor_one_hot(ok, -2), "tensor_one_hot");
    CHECK_BAD(tensor_one_hot(neg, -1), "tensor_one_hot");
    CHECK_BAD(tensor_one_hot(neg, 5), "tensor_one_hot");
    CHECK_BAD(tensor_one_hot(e, -1), "tensor_one_hot");   /* cannot infer from empty */
    CHECK_BAD(tensor_one_hot(big, 2), "tensor_one_hot");
    CHECK_BAD(tensor_one_hot(ok, INT64_MAX), "tensor_one_hot"); /* too large */
    tensor_free(ok); tensor_free(neg); tensor_free(f); tensor_free(b); tensor_free(e); tensor_free(big);
}

TEST(shape_bad_inputs_of_copy_and_index_ops) {
    bad_input_cat();
    bad_input_stack();
    bad_input_flip();
    bad_input_repeat();
    bad_input_pad();
    bad_input_tril();
    bad_input_triu();
    bad_input_gather();
    bad_input_scatter_add();
    bad_input_index_select();
    bad_input_masked_fill();
    bad_input_one_hot();
}
