/* Creation ops (the CREATE kind of ops.def), to_dtype and to_device: shapes, every dtype, values
   computed here in double, the random generators' reproducibility and statistics, and f16/bf16
   conversions bit by bit. */
#include "test.h"
#include <float.h>
#include <stdint.h>

static const tensor_dtype all_dtypes[TENSOR_DTYPE_COUNT] = {TENSOR_F32, TENSOR_F64, TENSOR_F16, TENSOR_BF16,
                                                           TENSOR_I32, TENSOR_I64, TENSOR_U8, TENSOR_BOOL};
static const tensor_dtype float_dtypes[4] = {TENSOR_F32, TENSOR_F64, TENSOR_F16, TENSOR_BF16};
static bool is_float(tensor_dtype d) { return d == TENSOR_F32 || d == TENSOR_F64 || d == TENSOR_F16 || d == TENSOR_BF16; }

/* The shapes every shape-taking creation op is tried on: 0-dim, zero-size, ordinary, 8 dims. */
typedef struct { int ndim; int64_t shape[8]; } test_shape;
static const test_shape shapes[] = {
    {0, {0}}, {1, {0}}, {1, {5}}, {2, {2, 3}}, {3, {2, 0, 4}}, {8, {1, 2, 1, 1, 3, 1, 1, 2}},
};
#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))

static int64_t numel_of(const test_shape *s) {
    int64_t n = 1;
    for (int i = 0; i < s->ndim; i++) n *= s->shape[i];
    return n;
}

/* shape, dtype, contiguity and numel of a freshly created tensor */
static void check_meta(const char *file, int line, tensor *t, int ndim, const int64_t *shape, tensor_dtype dtype) {
    test_check_shape(file, line, t, ndim, shape);
    if (!t) return;
    if (tensor_get_dtype(t) != dtype) test_fail(file, line, "dtype %s, expected %s", tensor_dtype_name(tensor_get_dtype(t)), tensor_dtype_name(dtype));
    if (tensor_get_device(t) != TENSOR_CPU) test_fail(file, line, "not on the CPU");
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    /* zero-size tensors: tests/test_core.c checks their contiguity on its own */
    if (n > 0 && !tensor_is_contiguous(t)) test_fail(file, line, "not contiguous");
    if (tensor_numel(t) != n) test_fail(file, line, "numel %lld, expected %lld", (long long)tensor_numel(t), (long long)n);
}
#define CHECK_META(t, ndim, shape, dtype) check_meta(__FILE__, __LINE__, t, ndim, shape, dtype)

/* What storing double v in dtype d gives, for the values these tests use (exactly representable in
   the floating dtypes; integers truncate toward zero, NaN gives 0, u8 wraps modulo 256 like C's
   conversion through a two's-complement integer; bool is v != 0). */
static double expect_stored(double v, tensor_dtype d) {
    if (is_float(d)) return v;
    if (d == TENSOR_BOOL) return v != 0;
    if (v != v) return 0;
    double t = trunc(v);
    if (d == TENSOR_U8) return fmod(fmod(t, 256) + 256, 256);
    return t;
}

/* ---- empty, zeros, ones, full, scalar ---- */

TEST(create_fill_ops_every_shape_and_dtype) {
    for (int s = 0; s < N_SHAPES; s++) {
        const test_shape *sh = &shapes[s];
        int64_t n = numel_of(sh);
        for (int k = 0; k < TENSOR_DTYPE_COUNT; k++) {
            tensor_dtype d = all_dtypes[k];
            tensor *e = tensor_empty(sh->ndim, sh->shape, d);
            CHECK_META(e, sh->ndim, sh->shape, d);
            tensor *z = tensor_zeros(sh->ndim, sh->shape, d);
            CHECK_META(z, sh->ndim, sh->shape, d);
            tensor *o = tensor_ones(sh->ndim, sh->shape, d);
            CHECK_META(o, sh->ndim, sh->shape, d);
            tensor *f = tensor_full(sh->ndim, sh->shape, 2.5, d);
            CHECK_META(f, sh->ndim, sh->shape, d);
            tensor *g = tensor_full(sh->ndim, sh->shape, -3.75, d);
            CHECK_META(g, sh->ndim, sh->shape, d);
            double *ez = (double *)malloc(sizeof(double) * (size_t)(n ? n : 1));
            double *eo = (double *)malloc(sizeof(double) * (size_t)(n ? n : 1));
            double *ef = (double *)malloc(sizeof(double) * (size_t)(n ? n : 1));
            double *eg = (double *)malloc(sizeof(double) * (size_t)(n ? n : 1));
            for (int64_t i = 0; i < n; i++) {
                ez[i] = 0;
                eo[i] = 1;
                ef[i] = expect_stored(2.5, d);
                eg[i] = expect_stored(-3.75, d);
            }
            CHECK_VALUES(z, ez, n, 0, 0);
            CHECK_VALUES(o, eo, n, 0, 0);
            CHECK_VALUES(f, ef, n, 0, 0);
            CHECK_VALUES(g, eg, n, 0, 0); /* -3 into u8 wraps to 253 */
            free(ez);
            free(eo);
            free(ef);
            free(eg);
        }
    }
    CHECK(tensor_last_error() == NULL);
}

TEST(create_full_special_values) {
    tensor *n = tensor_full(TENSOR_SHAPE(3), NAN, TENSOR_F16);
    const double en[] = {NAN, NAN, NAN};
    CHECK_VALUES(n, en, 3, 0, 0);
    tensor *i = tensor_full(TENSOR_SHAPE(2), -INFINITY, TENSOR_BF16);
    const double ei[] = {-INFINITY, -INFINITY};
    CHECK_VALUES(i, ei, 2, 0, 0);
    /* NaN into an integer dtype is 0, and into bool is true (as in PyTorch); no undefined behaviour */
    const double zero[] = {0, 0}, one[] = {1, 1};
    CHECK_VALUES(tensor_full(TENSOR_SHAPE(2), NAN, TENSOR_I32), zero, 2, 0, 0);
    CHECK_VALUES(tensor_full(TENSOR_SHAPE(2), NAN, TENSOR_I64), zero, 2, 0, 0);
    CHECK_VALUES(tensor_full(TENSOR_SHAPE(2), NAN, TENSOR_U8), zero, 2, 0, 0);
    CHECK_VALUES(tensor_full(TENSOR_SHAPE(2), NAN, TENSOR_BOOL), one, 2, 0, 0);
    CHECK(tensor_full(TENSOR_SHAPE(2), INFINITY, TENSOR_I32) != NULL);
    CHECK(tensor_full(TENSOR_SHAPE(2), -1e300, TENSOR_I64) != NULL);
    /* -3 into u8 wraps like C's conversion through a two's-complement integer */
    const double w[] = {253};
    CHECK_VALUES(tensor_full(TENSOR_SHAPE(1), -3.75, TENSOR_U8), w, 1, 0, 0);
    /* f32 rounding of a value that f32 cannot hold */
    const double r[] = {(double)(float)0.1};
    CHECK_VALUES(tensor_full(TENSOR_SHAPE(1), 0.1, TENSOR_F32), r, 1, 0, 0);
}

TEST(create_scalar_every_dtype) {
    for (int k = 0; k < TENSOR_DTYPE_COUNT; k++) {
        tensor_dtype d = all_dtypes[k];
        tensor *t = tensor_scalar(-2.5, d);
        CHECK_META(t, 0, NULL, d);
        CHECK(tensor_numel(t) == 1);
        CHECK_NEAR(tensor_item(t), expect_stored(-2.5, d), 0, 0);
        CHECK_NEAR(tensor_item(tensor_scalar(1, d)), 1, 0, 0);
        CHECK_NEAR(tensor_item(tensor_scalar(0, d)), 0, 0, 0);
    }
    CHECK_NEAR(tensor_item(tensor_scalar(1e300, TENSOR_F64)), 1e300, 0, 0);
    CHECK(isinf(tensor_item(tensor_scalar(1e300, TENSOR_F32))));
    CHECK(tensor_last_error() == NULL);
}

/* ---- from_data ---- */

TEST(create_from_data_every_dtype_bit_exact) {
    const float f32v[4] = {1.5f, -2.25f, 3e38f, FLT_MIN / 4};
    const double f64v[4] = {1.5, -2.25, 1e308, DBL_MIN / 4};
    const uint16_t f16v[4] = {0x3C00, 0xC100, 0x7BFF, 0x0001};
    const uint16_t bf16v[4] = {0x3F80, 0xC020, 0x7F7F, 0x0001};
    const int32_t i32v[4] = {INT32_MIN, -1, 0, INT32_MAX};
    const int64_t i64v[4] = {INT64_MIN, -1, 0, INT64_MAX};
    const uint8_t u8v[4] = {0, 1, 128, 255};
    const bool boolv[4] = {false, true, true, false};
    const void *src[TENSOR_DTYPE_COUNT] = {f32v, f64v, f16v, bf16v, i32v, i64v, u8v, boolv};
    const size_t sizes[TENSOR_DTYPE_COUNT] = {4, 8, 2, 2, 4, 8, 1, 1};
    for (int k = 0; k < TENSOR_DTYPE_COUNT; k++) {
        tensor_dtype d = all_dtypes[k];
        CHECK(tensor_dtype_size(d) == sizes[k]);
        tensor *t = tensor_from_data(src[k], TENSOR_SHAPE(2, 2), d);
        CHECK_META(t, 2, tensor_shape(t), d);
        CHECK_SHAPE(t, TENSOR_SHAPE(2, 2));
        unsigned char out[40];
        memset(out, 0xAB, sizeof out);
        CHECK(tensor_copy_to(t, out, sizeof out) == 0);
        CHECK_MSG(memcmp(out, src[k], 4 * sizes[k]) == 0, "from_data %s: bytes differ", tensor_dtype_name(d));
        CHECK(out[4 * sizes[k]] == 0xAB); /* nothing written past the tensor */
    }
    /* the values those bits stand for */
    const double ef16[4] = {1, -2.5, 65504, ldexp(1, -24)};
    CHECK_VALUES(tensor_from_data(f16v, TENSOR_SHAPE(4), TENSOR_F16), ef16, 4, 0, 0);
    const double ebf16[4] = {1, -2.5, ldexp(255, 120), ldexp(1, -133)};
    CHECK_VALUES(tensor_from_data(bf16v, TENSOR_SHAPE(4), TENSOR_BF16), ebf16, 4, 0, 0);
    const double ebool[4] = {0, 1, 1, 0};
    CHECK_VALUES(tensor_from_data(boolv, TENSOR_SHAPE(4), TENSOR_BOOL), ebool, 4, 0, 0);
    const double eu8[4] = {0, 1, 128, 255};
    CHECK_VALUES(tensor_from_data(u8v, TENSOR_SHAPE(4), TENSOR_U8), eu8, 4, 0, 0);
}

TEST(create_from_data_copies_and_shapes) {
    double v[6] = {1, 2, 3, 4, 5, 6};
    tensor *t = tensor_from_data(v, TENSOR_SHAPE(3, 2), TENSOR_F64);
    v[0] = 100; /* the tensor holds a copy */
    const double e[6] = {1, 2, 3, 4, 5, 6};
    CHECK_VALUES(t, e, 6, 0, 0);
    CHECK(tensor_data_ptr(t) != (void *)v);
    /* 0-dim, zero-size (data may be NULL then), 8 dims */
    const double one = 7;
    tensor *s = tensor_from_data(&one, 0, NULL, TENSOR_F64);
    CHECK_META(s, 0, NULL, TENSOR_F64);
    CHECK_NEAR(tensor_item(s), 7, 0, 0);
    tensor *z = tensor_from_data(NULL, TENSOR_SHAPE(0, 4), TENSOR_I32);
    CHECK_META(z, 2, tensor_shape(z), TENSOR_I32);
    CHECK_SHAPE(z, TENSOR_SHAPE(0, 4));
    tensor *b = tensor_from_data(e, TENSOR_SHAPE(1, 1, 1, 1, 1, 1, 3, 2), TENSOR_F64);
    CHECK_SHAPE(b, TENSOR_SHAPE(1, 1, 1, 1, 1, 1, 3, 2));
    CHECK_VALUES(b, e, 6, 0, 0);
}

/* ---- arange ---- */

/* arange(start, end, step) against ceil((end - start) / step) values start + i * step. */
static void check_arange(const char *file, int line, double start, double end, double step, tensor_dtype d) {
    tensor *t = tensor_arange(start, end, step, d);
    double count = ceil((end - start) / step);
    int64_t n = count > 0 ? (int64_t)count : 0;
    int64_t shape[1] = {n};
    check_meta(file, line, t, 1, shape, d);
    double *e = (double *)malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) {
        double v = start + (double)i * step;
        e[i] = d == TENSOR_F32 ? (double)(float)v : d == TENSOR_F64 ? v : expect_stored(v, d);
    }
    test_check_values(file, line, t, e, n, 0, d == TENSOR_F64 ? 1e-15 : 0);
    free(e);
}
#define CHECK_ARANGE(start, end, step, d) check_arange(__FILE__, __LINE__, start, end, step, d)

TEST(create_arange) {
    CHECK_ARANGE(0, 5, 1, TENSOR_I64);
    CHECK_ARANGE(0, 5, 1, TENSOR_F32);
    CHECK_ARANGE(5, 0, -1, TENSOR_I64);      /* negative step: 5 4 3 2 1 */
    CHECK_ARANGE(-1, -3, -0.5, TENSOR_F64);  /* -1 -1.5 -2 -2.5 */
    CHECK_ARANGE(0, 1, 0.1, TENSOR_F64);     /* non-integer step: 10 values */
    CHECK_ARANGE(0, 0.3, 0.1, TENSOR_F64);   /* 0.3 / 0.1 = 2.9999999999999996: 3 values */
    CHECK_ARANGE(1, 2.5, 0.5, TENSOR_F32);   /* 1 1.5 2 */
    CHECK_ARANGE(0, 10, 3, TENSOR_I32);      /* 0 3 6 9: the end is excluded */
    CHECK_ARANGE(0, 9, 3, TENSOR_U8);        /* 0 3 6 */
    CHECK_ARANGE(2.5, 5, 1, TENSOR_I64);     /* 2.5 3.5 4.5 truncate to 2 3 4 */
    CHECK_ARANGE(0, 4, 1, TENSOR_F16);
    CHECK_ARANGE(0, 4, 1, TENSOR_BF16);
    CHECK_ARANGE(0, 2, 1, TENSOR_BOOL);      /* false, true */
    CHECK_ARANGE(3, 3, 1, TENSOR_F32);       /* empty range */
    CHECK_ARANGE(0, 1, 5, TENSOR_F32);       /* step larger than the range: one value */
    tensor *t = tensor_arange(0, 3, 1, TENSOR_F32);
    CHECK_SHAPE(t, TENSOR_SHAPE(3));
    const double e[] = {0, 1, 2};
    CHECK_VALUES(t, e, 3, 0, 0);
    CHECK(tensor_last_error() == NULL);
}

/* ---- linspace ---- */

TEST(create_linspace) {
    const double e5[] = {0, 0.25, 0.5, 0.75, 1};
    CHECK_VALUES(tensor_linspace(0, 1, 5, TENSOR_F32), e5, 5, 0, 0);
    const double edown[] = {1, 0, -1};
    CHECK_VALUES(tensor_linspace(1, -1, 3, TENSOR_F64), edown, 3, 0, 0);
    /* steps 0: empty; steps 1: just start */
    tensor *z = tensor_linspace(0, 1, 0, TENSOR_F32);
    CHECK_META(z, 1, tensor_shape(z), TENSOR_F32);
    CHECK(tensor_numel(z) == 0);
    const double e1[] = {3};
    tensor *one = tensor_linspace(3, 7, 1, TENSOR_F32);
    CHECK_SHAPE(one, TENSOR_SHAPE(1));
    CHECK_VALUES(one, e1, 1, 0, 0);
    /* a step that is not exact in binary: close to start + i * step, both ends exact */
    double e7[7];
    for (int i = 0; i < 7; i++) e7[i] = -1 + (double)i * (1.0 - -1.0) / 6.0;
    tensor *l = tensor_linspace(-1, 1, 7, TENSOR_F64);
    CHECK_VALUES(l, e7, 7, 1e-15, 1e-15);
    double *v = test_values(l);
    CHECK(v[0] == -1 && v[6] == 1);
    free(v);
    /* integer dtypes truncate: 0 2.5 5 7.5 10 -> 0 2 5 7 10 (PyTorch gives the same) */
    const double ei[] = {0, 2, 5, 7, 10};
    CHECK_VALUES(tensor_linspace(0, 10, 5, TENSOR_I64), ei, 5, 0, 0);
    CHECK_VALUES(tensor_linspace(0, 10, 5, TENSOR_U8), ei, 5, 0, 0);
    const double eh[] = {0, 0.5, 1};
    CHECK_VALUES(tensor_linspace(0, 1, 3, TENSOR_F16), eh, 3, 0, 0);
    CHECK_VALUES(tensor_linspace(0, 1, 3, TENSOR_BF16), eh, 3, 0, 0);
    /* start == end */
    const double ec[] = {2, 2, 2, 2};
    CHECK_VALUES(tensor_linspace(2, 2, 4, TENSOR_F32), ec, 4, 0, 0);
    CHECK(tensor_last_error() == NULL);
}

/* ---- eye ---- */

TEST(create_eye) {
    for (int k = 0; k < TENSOR_DTYPE_COUNT; k++) {
        tensor_dtype d = all_dtypes[k];
        tensor *t = tensor_eye(3, d);
        CHECK_META(t, 2, tensor_shape(t), d);
        CHECK_SHAPE(t, TENSOR_SHAPE(3, 3));
        double e[9];
        for (int i = 0; i < 3; i++)
            for (int j = 0; j < 3; j++) e[i * 3 + j] = i == j;
        CHECK_VALUES(t, e, 9, 0, 0);
    }
    tensor *z = tensor_eye(0, TENSOR_F32);
    CHECK_SHAPE(z, TENSOR_SHAPE(0, 0));
    const double one[] = {1};
    tensor *o = tensor_eye(1, TENSOR_F64);
    CHECK_SHAPE(o, TENSOR_SHAPE(1, 1));
    CHECK_VALUES(o, one, 1, 0, 0);
}

/* ---- random: rand, randn, randint, randperm, multinomial ---- */

/* bytes of t (contiguous copy), for exact comparisons; caller frees */
static unsigned char *bytes_of(tensor *t, size_t *n) {
    *n = (size_t)tensor_numel(t) * tensor_dtype_size(tensor_get_dtype(t));
    unsigned char *b = (unsigned char *)malloc(*n ? *n : 1);
    if (tensor_copy_to(t, b, *n) != 0) memset(b, 0, *n);
    return b;
}

static bool same_bytes(tensor *a, tensor *b) {
    size_t na, nb;
    unsigned char *x = bytes_of(a, &na), *y = bytes_of(b, &nb);
    bool same = na == nb && memcmp(x, y, na) == 0;
    free(x);
    free(y);
    return same;
}

static void mean_var(const double *v, int64_t n, double *mean, double *var) {
    double s = 0, ss = 0;
    for (int64_t i = 0; i < n; i++) s += v[i];
    *mean = s / (double)n;
    for (int64_t i = 0; i < n; i++) ss += (v[i] - *mean) * (v[i] - *mean);
    *var = ss / (double)(n - 1);
}

/* The first words of Philox4x32-10 with key 0 and counter 0 are the Random123 known answer
   6627e8d5 e169c58d bc57ac4c 9b00dbd8; tensor_rand(f32) keeps the top 24 bits of each word. */
TEST(create_rand_philox_known_answer) {
    tensor_manual_seed(0);
    tensor *t = tensor_rand(TENSOR_SHAPE(4), TENSOR_F32);
    const double e[4] = {0x6627e8 / 16777216.0, 0xe169c5 / 16777216.0, 0xbc57ac / 16777216.0, 0x9b00db / 16777216.0};
    CHECK_VALUES(t, e, 4, 0, 0);
}

/* Pinned outputs: Philox4x32-10 streams after tensor_manual_seed(42), printed by the
   implementation once and written here. They must never change: users rely on a seed giving the
   same numbers on every platform and in every version. */
TEST(create_rng_pinned_values) {
    tensor_manual_seed(42);
    tensor *u = tensor_rand(TENSOR_SHAPE(4), TENSOR_F32);
    const double eu[4] = {0x1.39d5ep-1, 0x1.dfd524p-2, 0x1.2bf5p-4, 0x1.5d0accp-2};
    CHECK_VALUES(u, eu, 4, 0, 0);
    tensor_manual_seed(42);
    tensor *n = tensor_randn(TENSOR_SHAPE(4), TENSOR_F64);
    /* Box-Muller goes through libm's log, cos and sin: allow their last-bit differences */
    const double en[4] = {0x1.3c0aeec8cec66p+0, 0x1.3944650e53787p-1, -0x1.7a3f3026c1af2p+1, -0x1.0911b17cf17dp-2};
    CHECK_VALUES(n, en, 4, 0, 1e-14);
    /* randn below f64: Box-Muller in f32 on one word a uniform (the reference kernels' values;
       the SIMD ones are within a few ulp) */
    tensor_manual_seed(42);
    tensor *n32 = tensor_randn(TENSOR_SHAPE(6), TENSOR_F32);
    const double e32[6] = {-0x1.f0bcb8p-1, 0x1.8d59dp-3, -0x1.3c51a4p+0, 0x1.ec8676p+0, -0x1.2bc066p-4, 0x1.1cf426p-3};
    CHECK_VALUES(n32, e32, 6, 0, 5e-7);
}

TEST(create_rng_reproducible) {
    for (int k = 0; k < 4; k++) {
        tensor_dtype d = float_dtypes[k];
        tensor_manual_seed(1234);
        tensor *a = tensor_rand(TENSOR_SHAPE(3, 17), d);
        tensor *na = tensor_randn(TENSOR_SHAPE(3, 17), d);
        tensor_manual_seed(1234);
        tensor *b = tensor_rand(TENSOR_SHAPE(3, 17), d);
        tensor *nb = tensor_randn(TENSOR_SHAPE(3, 17), d);
        CHECK(same_bytes(a, b));
        CHECK(same_bytes(na, nb));
        tensor_manual_seed(1235);
        tensor *c = tensor_rand(TENSOR_SHAPE(3, 17), d);
        CHECK(!same_bytes(a, c));
        CHECK(!same_bytes(a, tensor_rand(TENSOR_SHAPE(3, 17), d))); /* the stream moves on */
    }
    tensor_manual_seed(99);
    tensor *i1 = tensor_randint(-50, 50, TENSOR_SHAPE(64), TENSOR_I64);
    tensor *p1 = tensor_randperm(64, TENSOR_I64);
    const double w[] = {1, 2, 3};
    tensor *probs = test_tensor(TENSOR_F32, TENSOR_SHAPE(3), w);
    tensor *m1 = tensor_multinomial(probs, 32, true);
    tensor_manual_seed(99);
    tensor *i2 = tensor_randint(-50, 50, TENSOR_SHAPE(64), TENSOR_I64);
    tensor *p2 = tensor_randperm(64, TENSOR_I64);
    tensor *m2 = tensor_multinomial(probs, 32, true);
    CHECK(same_bytes(i1, i2));
    CHECK(same_bytes(p1, p2));
    CHECK(same_bytes(m1, m2));
    /* the seed's high 32 bits matter too */
    tensor_manual_seed(1);
    tensor *h1 = tensor_rand(TENSOR_SHAPE(8), TENSOR_F64);
    tensor_manual_seed(1 + (1ull << 32));
    tensor *h2 = tensor_rand(TENSOR_SHAPE(8), TENSOR_F64);
    CHECK(!same_bytes(h1, h2));
}

TEST(create_rand_range_and_statistics) {
    for (int s = 0; s < N_SHAPES; s++) {
        tensor *t = tensor_rand(shapes[s].ndim, shapes[s].shape, TENSOR_F32);
        CHECK_META(t, shapes[s].ndim, shapes[s].shape, TENSOR_F32);
    }
    for (int k = 0; k < 4; k++) {
        tensor_dtype d = float_dtypes[k];
        const int64_t n = 100000;
        tensor *t = tensor_rand(1, &n, d);
        CHECK_META(t, 1, &n, d);
        double *v = test_values(t);
        double lo = 1, hi = 0;
        for (int64_t i = 0; i < n; i++) { if (v[i] < lo) lo = v[i]; if (v[i] > hi) hi = v[i]; }
        /* [0, 1) even after rounding to the dtype: f16/bf16 never round up to 1 */
        CHECK_MSG(lo >= 0 && hi < 1, "rand %s: range [%g, %g]", tensor_dtype_name(d), lo, hi);
        CHECK_MSG(hi > 0.99 && lo < 0.01, "rand %s: range [%g, %g] does not cover [0, 1)", tensor_dtype_name(d), lo, hi);
        double mean, var;
        mean_var(v, n, &mean, &var);
        CHECK_NEAR(mean, 0.5, 0.006, 0);      /* standard error 0.0009 */
        CHECK_NEAR(var, 1.0 / 12, 0.003, 0);  /* standard error 0.0003 */
        /* deciles: each holds 10% +- 1% */
        int64_t bins[10] = {0};
        for (int64_t i = 0; i < n; i++) bins[(int)(v[i] * 10)]++;
        for (int b = 0; b < 10; b++) CHECK_NEAR((double)bins[b] / (double)n, 0.1, 0.01, 0);
        free(v);
    }
}

TEST(create_randn_statistics) {
    for (int k = 0; k < 4; k++) {
        tensor_dtype d = float_dtypes[k];
        const int64_t n = 100000;
        tensor *t = tensor_randn(1, &n, d);
        CHECK_META(t, 1, &n, d);
        double *v = test_values(t);
        double mean, var;
        mean_var(v, n, &mean, &var);
        CHECK_MSG(fabs(mean) < 0.015, "randn %s: mean %g", tensor_dtype_name(d), mean);  /* se 0.0032 */
        CHECK_MSG(fabs(var - 1) < 0.025, "randn %s: var %g", tensor_dtype_name(d), var); /* se 0.0045 */
        int64_t within1 = 0, within2 = 0, finite = 0;
        for (int64_t i = 0; i < n; i++) {
            within1 += fabs(v[i]) < 1;
            within2 += fabs(v[i]) < 2;
            finite += isfinite(v[i]) != 0;
        }
        CHECK(finite == n);
        CHECK_NEAR((double)within1 / (double)n, 0.682689, 0.01, 0);
        CHECK_NEAR((double)within2 / (double)n, 0.954500, 0.005, 0);
        free(v);
    }
    /* odd counts, 0-dim and zero-size shapes */
    for (int s = 0; s < N_SHAPES; s++) {
        tensor *t = tensor_randn(shapes[s].ndim, shapes[s].shape, TENSOR_F64);
        CHECK_META(t, shapes[s].ndim, shapes[s].shape, TENSOR_F64);
        double *v = test_values(t);
        for (int64_t i = 0; i < numel_of(&shapes[s]); i++) CHECK(isfinite(v[i]));
        free(v);
    }
    tensor *odd = tensor_randn(TENSOR_SHAPE(3), TENSOR_F32);
    double *v = test_values(odd);
    CHECK(v[0] != v[1] && v[1] != v[2]);
    free(v);
}

TEST(create_randint) {
    for (int k = 0; k < TENSOR_DTYPE_COUNT; k++) {
        tensor_dtype d = all_dtypes[k];
        int64_t low = d == TENSOR_U8 ? 2 : d == TENSOR_BOOL ? 0 : -3, high = d == TENSOR_BOOL ? 2 : low + 7;
        const int64_t n = 20000;
        tensor *t = tensor_randint(low, high, 1, &n, d);
        CHECK_META(t, 1, &n, d);
        double *v = test_values(t);
        int64_t counts[7] = {0};
        int bad = 0;
        for (int64_t i = 0; i < n; i++) {
            if (!(v[i] >= (double)low && v[i] < (double)high && v[i] == floor(v[i]))) bad++;
            else counts[(int)(v[i] - (double)low)]++;
        }
        CHECK_MSG(bad == 0, "randint %s: %d values outside [%lld, %lld)", tensor_dtype_name(d), bad, (long long)low, (long long)high);
        int64_t range = high - low;
        for (int64_t j = 0; j < range; j++) CHECK_NEAR((double)counts[j] / (double)n, 1.0 / (double)range, 0.015, 0);
        free(v);
    }
    /* a one-value range, a range past 2^32, and the whole int64 line minus its top */
    const double sevens[4] = {7, 7, 7, 7};
    CHECK_VALUES(tensor_randint(7, 8, TENSOR_SHAPE(4), TENSOR_I32), sevens, 4, 0, 0);
    tensor *big = tensor_randint(-(1ll << 40), 1ll << 40, TENSOR_SHAPE(1000), TENSOR_I64);
    int64_t raw[1000];
    CHECK(tensor_copy_to(big, raw, sizeof raw) == 0);
    int64_t lo = INT64_MAX, hi = INT64_MIN;
    for (int i = 0; i < 1000; i++) { if (raw[i] < lo) lo = raw[i]; if (raw[i] > hi) hi = raw[i]; }
    CHECK(lo >= -(1ll << 40) && hi < (1ll << 40));
    CHECK(lo < -(1ll << 38) && hi > (1ll << 38)); /* spread over the range, not stuck in 32 bits */
    tensor *all = tensor_randint(INT64_MIN, INT64_MAX, TENSOR_SHAPE(1000), TENSOR_I64);
    CHECK(tensor_copy_to(all, raw, sizeof raw) == 0);
    int neg = 0;
    for (int i = 0; i < 1000; i++) { CHECK(raw[i] != INT64_MAX); neg += raw[i] < 0; }
    CHECK(neg > 400 && neg < 600);
    /* shapes */
    for (int s = 0; s < N_SHAPES; s++) CHECK_META(tensor_randint(0, 5, shapes[s].ndim, shapes[s].shape, TENSOR_I64), shapes[s].ndim, shapes[s].shape, TENSOR_I64);
}

static bool is_permutation(const double *v, int64_t n) {
    char *seen = (char *)calloc((size_t)(n ? n : 1), 1);
    bool ok = true;
    for (int64_t i = 0; i < n && ok; i++) {
        if (!(v[i] >= 0 && v[i] < (double)n && v[i] == floor(v[i])) || seen[(int64_t)v[i]]) ok = false;
        else seen[(int64_t)v[i]] = 1;
    }
    free(seen);
    return ok;
}

TEST(create_randperm) {
    const tensor_dtype ds[] = {TENSOR_I64, TENSOR_I32, TENSOR_F32, TENSOR_F64, TENSOR_F16, TENSOR_BF16, TENSOR_U8};
    const int64_t ns[] = {1000, 1000, 1000, 1000, 256, 256, 256};
    for (int k = 0; k < 7; k++) {
        tensor *t = tensor_randperm(ns[k], ds[k]);
        CHECK_META(t, 1, &ns[k], ds[k]);
        double *v = test_values(t);
        CHECK_MSG(is_permutation(v, ns[k]), "randperm(%lld, %s) is not a permutation", (long long)ns[k], tensor_dtype_name(ds[k]));
        int64_t fixed = 0;
        for (int64_t i = 0; i < ns[k]; i++) fixed += v[i] == (double)i;
        CHECK(fixed < 10); /* expected 1 fixed point */
        free(v);
    }
    tensor *z = tensor_randperm(0, TENSOR_I64);
    CHECK_SHAPE(z, TENSOR_SHAPE(0));
    const double zero[] = {0};
    CHECK_VALUES(tensor_randperm(1, TENSOR_I64), zero, 1, 0, 0);
    /* uniform over the 6 permutations of 3 */
    int counts[6] = {0};
    for (int r = 0; r < 6000; r++) {
        tensor_scope_begin();
        int64_t p[3];
        CHECK(tensor_copy_to(tensor_randperm(3, TENSOR_I64), p, sizeof p) == 0);
        counts[p[0] * 2 + (p[1] > p[2])]++;
        tensor_scope_end();
    }
    for (int i = 0; i < 6; i++) CHECK_MSG(counts[i] > 850 && counts[i] < 1150, "permutation %d drawn %d times of 6000", i, counts[i]);
}

TEST(create_multinomial_with_replacement) {
    const double p[] = {0.1, 0.2, 0.7, 0};
    for (int k = 0; k < 4; k++) {
        tensor *probs = test_tensor(float_dtypes[k], TENSOR_SHAPE(4), p);
        tensor *s = tensor_multinomial(probs, 100000, true);
        CHECK_META(s, 1, tensor_shape(s), TENSOR_I64);
        CHECK_SHAPE(s, TENSOR_SHAPE(100000));
        double *v = test_values(s);
        int64_t counts[4] = {0}, bad = 0;
        for (int64_t i = 0; i < 100000; i++) {
            if (v[i] >= 0 && v[i] < 4) counts[(int)v[i]]++;
            else bad++;
        }
        CHECK(bad == 0);
        CHECK(counts[3] == 0); /* a zero weight is never drawn */
        /* f16/bf16 store 0.1 and 0.2 inexactly: compare with the stored weights */
        double *w = test_values(probs), total = w[0] + w[1] + w[2] + w[3];
        for (int j = 0; j < 3; j++) CHECK_NEAR((double)counts[j] / 100000.0, w[j] / total, 0.006, 0);
        free(w);
        free(v);
    }
    /* unnormalized weights and several rows */
    const double rows[] = {1, 3, 0, 0, 0, 5};
    tensor *probs = test_tensor(TENSOR_F64, TENSOR_SHAPE(2, 3), rows);
    tensor *s = tensor_multinomial(probs, 20000, true);
    CHECK_SHAPE(s, TENSOR_SHAPE(2, 20000));
    double *v = test_values(s);
    int64_t c1 = 0;
    bool row1_ok = true, row2_ok = true;
    for (int64_t i = 0; i < 20000; i++) {
        if (v[i] != 0 && v[i] != 1) row1_ok = false;
        c1 += v[i] == 1;
        if (v[20000 + i] != 2) row2_ok = false;
    }
    CHECK(row1_ok && row2_ok);
    CHECK_NEAR((double)c1 / 20000.0, 0.75, 0.015, 0);
    free(v);
}

TEST(create_multinomial_without_replacement) {
    const int64_t rows = 20000;
    double *p = (double *)malloc(sizeof(double) * 3 * (size_t)rows);
    for (int64_t r = 0; r < rows; r++) { p[3 * r] = 0.1; p[3 * r + 1] = 0.2; p[3 * r + 2] = 0.7; }
    tensor *probs = test_tensor(TENSOR_F64, TENSOR_SHAPE(rows, 3), p);
    tensor *s = tensor_multinomial(probs, 3, false);
    CHECK_SHAPE(s, TENSOR_SHAPE(rows, 3));
    double *v = test_values(s);
    int64_t first[3] = {0}, second[3] = {0}, not_perm = 0;
    for (int64_t r = 0; r < rows; r++) {
        if (!is_permutation(v + 3 * r, 3)) { not_perm++; continue; }
        first[(int)v[3 * r]]++;
        second[(int)v[3 * r + 1]]++;
    }
    CHECK(not_perm == 0);
    /* first draw ~ p; second draw: P(j) = sum over i != j of p_i p_j / (1 - p_i) */
    const double pr[3] = {0.1, 0.2, 0.7};
    for (int j = 0; j < 3; j++) {
        double want2 = 0;
        for (int i = 0; i < 3; i++) if (i != j) want2 += pr[i] * pr[j] / (1 - pr[i]);
        CHECK_NEAR((double)first[j] / (double)rows, pr[j], 0.015, 0);
        CHECK_NEAR((double)second[j] / (double)rows, want2, 0.015, 0);
    }
    free(v);
    free(p);
    /* zero weights are never drawn while non-zero ones remain */
    const double z[] = {0, 1, 0, 1, 1};
    tensor *pz = test_tensor(TENSOR_F32, TENSOR_SHAPE(5), z);
    for (int r = 0; r < 50; r++) {
        tensor_scope_begin();
        int64_t o[3];
        CHECK(tensor_copy_to(tensor_multinomial(pz, 3, false), o, sizeof o) == 0);
        for (int i = 0; i < 3; i++) CHECK(o[i] == 1 || o[i] == 3 || o[i] == 4);
        CHECK(o[0] != o[1] && o[1] != o[2] && o[0] != o[2]);
        tensor_scope_end();
    }
}

/* ---- clone, contiguous ---- */

TEST(create_clone_every_dtype) {
    const double v[] = {0, 1, 2, 3, 4, 5};
    for (int k = 0; k < TENSOR_DTYPE_COUNT; k++) {
        tensor_dtype d = all_dtypes[k];
        tensor *a = test_tensor(d, TENSOR_SHAPE(2, 3), v);
        tensor *c = tensor_clone(a);
        CHECK_META(c, 2, tensor_shape(a), d);
        CHECK(!tensor_shares_storage(a, c));
        double e[6];
        for (int i = 0; i < 6; i++) e[i] = expect_stored(v[i], d);
        CHECK_VALUES(c, e, 6, 0, 0);
        tensor_fill_(c, 1); /* writing the clone leaves the original alone */
        CHECK_VALUES(a, e, 6, 0, 0);
    }
    tensor *s = tensor_clone(tensor_scalar(4, TENSOR_F32));
    CHECK_META(s, 0, NULL, TENSOR_F32);
    CHECK_NEAR(tensor_item(s), 4, 0, 0);
    tensor *z = tensor_clone(tensor_zeros(TENSOR_SHAPE(3, 0), TENSOR_I32));
    CHECK_SHAPE(z, TENSOR_SHAPE(3, 0));
}

TEST(create_clone_and_contiguous_of_views) {
    const double v[] = {0, 1, 2, 3, 4, 5};
    tensor *a = test_tensor(TENSOR_F64, TENSOR_SHAPE(2, 3), v);
    /* contiguous input: a new handle to the same storage */
    tensor *c = tensor_contiguous(a);
    CHECK(c && c != a && tensor_shares_storage(a, c));
    CHECK_VALUES(c, v, 6, 0, 0);
    /* transposed: a contiguous copy in logical order */
    tensor *t = tensor_transpose(a, 0, 1);
    CHECK(t && !tensor_is_contiguous(t));
    const double et[] = {0, 3, 1, 4, 2, 5};
    tensor *tc = tensor_contiguous(t);
    CHECK_META(tc, 2, tensor_shape(t), TENSOR_F64);
    CHECK_SHAPE(tc, TENSOR_SHAPE(3, 2));
    CHECK(!tensor_shares_storage(tc, a));
    CHECK_VALUES(tc, et, 6, 0, 0);
    tensor *tl = tensor_clone(t);
    CHECK_META(tl, 2, tensor_shape(t), TENSOR_F64);
    CHECK_VALUES(tl, et, 6, 0, 0);
    /* a strided slice and an expanded view */
    tensor *s = tensor_slice(a, 1, 0, 3, 2);
    const double es[] = {0, 2, 3, 5};
    CHECK_VALUES(tensor_contiguous(s), es, 4, 0, 0);
    CHECK(tensor_is_contiguous(tensor_contiguous(s)));
    const double r[] = {7, 8};
    tensor *e = tensor_expand(test_tensor(TENSOR_BF16, TENSOR_SHAPE(2, 1), r), TENSOR_SHAPE(2, 3));
    const double ee[] = {7, 7, 7, 8, 8, 8};
    tensor *ec = tensor_clone(e);
    CHECK_META(ec, 2, tensor_shape(e), TENSOR_BF16);
    CHECK_VALUES(ec, ee, 6, 0, 0);
}

/* ---- to_dtype ---- */

TEST(to_dtype_every_pair) {
    const double v[] = {0, 1, 2, 1, 0, 3};
    for (int i = 0; i < TENSOR_DTYPE_COUNT; i++)
        for (int j = 0; j < TENSOR_DTYPE_COUNT; j++) {
            tensor_dtype from = all_dtypes[i], to = all_dtypes[j];
            tensor *a = test_tensor(from, TENSOR_SHAPE(3, 2), v);
            tensor *b = tensor_to_dtype(a, to);
            CHECK_META(b, 2, tensor_shape(a), to);
            double e[6];
            for (int k = 0; k < 6; k++) e[k] = expect_stored(expect_stored(v[k], from), to);
            CHECK_VALUES(b, e, 6, 0, 0);
            if (from == to) CHECK(b != a && tensor_shares_storage(a, b));
            else CHECK(!tensor_shares_storage(a, b));
        }
}

TEST(to_dtype_float_to_int_truncates) {
    const double v[] = {-2.7, -0.5, -0.0, 0.5, 2.7, 255.9, 1e9 + 0.5, NAN};
    const double e32[] = {-2, 0, 0, 0, 2, 255, 1e9, 0};
    const double e64[] = {-2, 0, 0, 0, 2, 255, 1e9, 0};
    tensor *a = test_tensor(TENSOR_F64, TENSOR_SHAPE(8), v);
    CHECK_VALUES(tensor_to_dtype(a, TENSOR_I32), e32, 8, 0, 0);
    CHECK_VALUES(tensor_to_dtype(a, TENSOR_I64), e64, 8, 0, 0);
    const double vu[] = {0.9, 1.5, 254.99, NAN};
    const double eu[] = {0, 1, 254, 0};
    CHECK_VALUES(tensor_to_dtype(test_tensor(TENSOR_F32, TENSOR_SHAPE(4), vu), TENSOR_U8), eu, 4, 0, 0);
    /* bool: any non-zero value, NaN included, is true; -0 is false */
    const double eb[] = {1, 1, 0, 1, 1, 1, 1, 1};
    CHECK_VALUES(tensor_to_dtype(a, TENSOR_BOOL), eb, 8, 0, 0);
    /* out-of-range values convert without undefined behaviour (the sanitizer build checks) */
    const double huge[] = {INFINITY, -INFINITY, 1e300, -1e300, 3e9, -3e9};
    tensor *h = test_tensor(TENSOR_F64, TENSOR_SHAPE(6), huge);
    CHECK(tensor_to_dtype(h, TENSOR_I32) && tensor_to_dtype(h, TENSOR_I64) && tensor_to_dtype(h, TENSOR_U8));
    tensor *hf = tensor_to_dtype(h, TENSOR_F16);
    CHECK(hf && tensor_to_dtype(hf, TENSOR_I32) && tensor_to_dtype(hf, TENSOR_U8));
    /* f16/bf16 sources truncate the same way */
    const double vh[] = {-2.5, 3.75};
    const double eh[] = {-2, 3};
    CHECK_VALUES(tensor_to_dtype(test_tensor(TENSOR_F16, TENSOR_SHAPE(2), vh), TENSOR_I32), eh, 2, 0, 0);
    CHECK_VALUES(tensor_to_dtype(test_tensor(TENSOR_BF16, TENSOR_SHAPE(2), vh), TENSOR_I64), eh, 2, 0, 0);
}

TEST(to_dtype_int_conversions) {
    /* int -> float rounds to nearest even */
    const int64_t big[] = {(1ll << 53) + 1, (1ll << 24) + 1, (1ll << 24) + 3, -((1ll << 53) + 3)};
    tensor *b = tensor_from_data(big, TENSOR_SHAPE(4), TENSOR_I64);
    const double ef64[] = {9007199254740992.0, 16777217.0, 16777219.0, -9007199254740996.0};
    CHECK_VALUES(tensor_to_dtype(b, TENSOR_F64), ef64, 4, 0, 0);
    const double ef32[] = {9007199254740992.0, 16777216.0, 16777220.0, -9007199254740992.0};
    CHECK_VALUES(tensor_to_dtype(b, TENSOR_F32), ef32, 4, 0, 0);
    const int32_t small[] = {2049, 2051, 65519, 70000};
    const double ef16[] = {2048, 2052, 65504, INFINITY};
    CHECK_VALUES(tensor_to_dtype(tensor_from_data(small, TENSOR_SHAPE(4), TENSOR_I32), TENSOR_F16), ef16, 4, 0, 0);
    /* int -> narrower int wraps (two's complement), as PyTorch's conversions do */
    const int32_t w[] = {-1, 300, 255, 256};
    const double eu8[] = {255, 44, 255, 0};
    CHECK_VALUES(tensor_to_dtype(tensor_from_data(w, TENSOR_SHAPE(4), TENSOR_I32), TENSOR_U8), eu8, 4, 0, 0);
    const int64_t l[] = {(1ll << 32) + 5, -(1ll << 32) - 1, INT64_MIN};
    const double ei32[] = {5, -1, 0};
    CHECK_VALUES(tensor_to_dtype(tensor_from_data(l, TENSOR_SHAPE(3), TENSOR_I64), TENSOR_I32), ei32, 3, 0, 0);
    const uint8_t u[] = {0, 200, 255};
    const double eu[] = {0, 200, 255};
    CHECK_VALUES(tensor_to_dtype(tensor_from_data(u, TENSOR_SHAPE(3), TENSOR_U8), TENSOR_I32), eu, 3, 0, 0);
    const double ebool[] = {0, 1, 1};
    CHECK_VALUES(tensor_to_dtype(tensor_from_data(u, TENSOR_SHAPE(3), TENSOR_U8), TENSOR_BOOL), ebool, 3, 0, 0);
    const bool bv[] = {true, false};
    const double eb[] = {1, 0};
    for (int k = 0; k < TENSOR_DTYPE_COUNT; k++) CHECK_VALUES(tensor_to_dtype(tensor_from_data(bv, TENSOR_SHAPE(2), TENSOR_BOOL), all_dtypes[k]), eb, 2, 0, 0);
}

/* f16 bits -> value, written from the IEEE 754 binary16 definition. */
static double f16_value(uint16_t h) {
    int sign = h >> 15, e = (h >> 10) & 31, m = h & 1023;
    double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY) : ldexp(1024 + m, e - 25);
    return sign ? -v : v;
}

/* bf16 bits -> value: the top half of an f32. */
static double bf16_value(uint16_t b) {
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static bool bits_is_nan16(uint16_t h, bool bf) { return bf ? (h & 0x7f80) == 0x7f80 && (h & 0x7f) : (h & 0x7c00) == 0x7c00 && (h & 0x3ff); }

/* Every one of the 65536 patterns decodes to its IEEE value and encodes back to itself. */
static void check_all_patterns(tensor_dtype d) {
    bool bf = d == TENSOR_BF16;
    uint16_t *bits = (uint16_t *)malloc(65536 * sizeof(uint16_t));
    double *want = (double *)malloc(65536 * sizeof(double));
    for (int i = 0; i < 65536; i++) { bits[i] = (uint16_t)i; want[i] = bf ? bf16_value((uint16_t)i) : f16_value((uint16_t)i); }
    tensor *t = tensor_from_data(bits, TENSOR_SHAPE(65536), d);
    tensor *f = tensor_to_dtype(t, TENSOR_F32);
    CHECK_VALUES(f, want, 65536, 0, 0);
    tensor *back = tensor_to_dtype(f, d);
    uint16_t *got = (uint16_t *)malloc(65536 * sizeof(uint16_t));
    CHECK(tensor_copy_to(back, got, 65536 * sizeof(uint16_t)) == 0);
    int bad = 0;
    for (int i = 0; i < 65536 && bad < 5; i++) {
        bool ok = bits_is_nan16(bits[i], bf) ? bits_is_nan16(got[i], bf) : got[i] == bits[i];
        if (!ok) { test_fail(__FILE__, __LINE__, "%s pattern 0x%04x came back as 0x%04x", tensor_dtype_name(d), bits[i], got[i]); bad++; }
    }
    /* and through f64 */
    tensor *back64 = tensor_to_dtype(tensor_to_dtype(t, TENSOR_F64), d);
    CHECK(tensor_copy_to(back64, got, 65536 * sizeof(uint16_t)) == 0);
    for (int i = 0; i < 65536 && bad < 5; i++) {
        bool ok = bits_is_nan16(bits[i], bf) ? bits_is_nan16(got[i], bf) : got[i] == bits[i];
        if (!ok) { test_fail(__FILE__, __LINE__, "%s pattern 0x%04x came back through f64 as 0x%04x", tensor_dtype_name(d), bits[i], got[i]); bad++; }
    }
    free(got);
    free(bits);
    free(want);
}

TEST(f16_every_pattern_round_trips) { check_all_patterns(TENSOR_F16); }
TEST(bf16_every_pattern_round_trips) { check_all_patterns(TENSOR_BF16); }

/* Encodes f32 values to d and compares the bits. */
static void check_encode(const char *file, int line, tensor_dtype d, int n, const float *in, const uint16_t *want) {
    tensor *t = tensor_to_dtype(tensor_from_data(in, 1, (const int64_t[]){n}, TENSOR_F32), d);
    uint16_t got[32];
    if (!t || tensor_copy_to(t, got, sizeof got) != 0) { test_fail(file, line, "conversion failed"); return; }
    for (int i = 0; i < n; i++) {
        bool ok = bits_is_nan16(want[i], d == TENSOR_BF16) ? bits_is_nan16(got[i], d == TENSOR_BF16) : got[i] == want[i];
        if (!ok) test_fail(file, line, "%s of %a: 0x%04x, expected 0x%04x", tensor_dtype_name(d), (double)in[i], got[i], want[i]);
    }
}

TEST(f16_rounding) {
    const float in[] = {
        1.0f, -2.5f, 65504.0f, 0x1p-14f, 0x1p-24f,
        1.0f + 0x1p-11f,             /* halfway between 1 and 1 + 2^-10: to even, 1 */
        1.0f + 3 * 0x1p-11f,         /* halfway between 1 + 2^-10 and 1 + 2^-9: to even, 1 + 2^-9 */
        1.0f + 0x1p-11f + 0x1p-20f,  /* just above halfway: up */
        0x1p-25f,                    /* half the smallest subnormal: to even, 0 */
        3 * 0x1p-25f,                /* halfway between 1 and 2 units: 2 units */
        0x1p-25f + 0x1p-35f,         /* just above half a unit: 1 unit */
        0x1.ff8p-15f,                /* the largest subnormal, 1023 * 2^-24 */
        0x1.ffcp-15f,                /* halfway between it and 2^-14 (1024 units, even): up */
        65519.0f,                    /* below the halfway point to 65536: 65504 */
        65520.0f,                    /* halfway: rounds to even, which is infinity */
        1e-8f, -0.0f, INFINITY, -INFINITY, NAN, 1e10f, -1e10f,
    };
    const uint16_t want[] = {0x3C00, 0xC100, 0x7BFF, 0x0400, 0x0001, 0x3C00, 0x3C02, 0x3C01, 0x0000, 0x0002, 0x0001,
                             0x03FF, 0x0400, 0x7BFF, 0x7C00, 0x0000, 0x8000, 0x7C00, 0xFC00, 0x7E00, 0x7C00, 0xFC00};
    check_encode(__FILE__, __LINE__, TENSOR_F16, (int)(sizeof in / sizeof in[0]), in, want);
}

TEST(bf16_rounding) {
    const float in[] = {
        1.0f, -2.5f,
        1.0f + 0x1p-8f,              /* halfway between 1 and 1 + 2^-7: to even, 1 */
        1.0f + 3 * 0x1p-8f,          /* halfway, to even: 1 + 2^-6 */
        1.0f + 0x1p-8f + 0x1p-20f,   /* just above halfway: up */
        0x1p-133f,                   /* smallest bf16 subnormal */
        0x1p-134f,                   /* half of it: to even, 0 */
        3 * 0x1p-134f,               /* halfway between 1 and 2 units: 2 units */
        FLT_MAX,                     /* rounds past the largest bf16: infinity */
        0x1.fep+127f,                /* the largest bf16 */
        -0.0f, INFINITY, -INFINITY, NAN,
    };
    const uint16_t want[] = {0x3F80, 0xC020, 0x3F80, 0x3F82, 0x3F81, 0x0001, 0x0000, 0x0002, 0x7F80, 0x7F7F,
                             0x8000, 0x7F80, 0xFF80, 0x7FC0};
    check_encode(__FILE__, __LINE__, TENSOR_BF16, (int)(sizeof in / sizeof in[0]), in, want);
}

TEST(to_dtype_shapes_and_views) {
    for (int s = 0; s < N_SHAPES; s++) {
        tensor *a = tensor_ones(shapes[s].ndim, shapes[s].shape, TENSOR_F32);
        tensor *b = tensor_to_dtype(a, TENSOR_I32);
        CHECK_META(b, shapes[s].ndim, shapes[s].shape, TENSOR_I32);
    }
    const double v[] = {0.5, 1.5, 2.5, 3.5, 4.5, 5.5};
    tensor *t = tensor_transpose(test_tensor(TENSOR_F32, TENSOR_SHAPE(2, 3), v), 0, 1);
    const double e[] = {0.5, 3.5, 1.5, 4.5, 2.5, 5.5};
    tensor *h = tensor_to_dtype(t, TENSOR_F16);
    CHECK_META(h, 2, tensor_shape(t), TENSOR_F16);
    CHECK_VALUES(h, e, 6, 0, 0);
}

/* ---- to_device ---- */

TEST(to_device_cpu_and_cuda) {
    const double v[] = {1, 2, 3};
    tensor *a = test_tensor(TENSOR_F32, TENSOR_SHAPE(3), v);
    tensor *b = tensor_to_device(a, TENSOR_CPU);
    CHECK(b && b != a && tensor_shares_storage(a, b));
    CHECK(tensor_get_device(b) == TENSOR_CPU);
    CHECK_VALUES(b, v, 3, 0, 0);
    if (!tensor_cuda_available()) {
        CHECK_BAD(tensor_to_device(a, TENSOR_CUDA), "tensor_to_device");
    } else {
        tensor *c = tensor_to_device(a, TENSOR_CUDA);
        CHECK(c && tensor_get_device(c) == TENSOR_CUDA);
        CHECK_VALUES(tensor_to_device(c, TENSOR_CPU), v, 3, 0, 0);
    }
}

/* ---- bad inputs, one function per registry op (tests/test_registry.c calls them) ---- */

/* The shape checks every shape-taking creation op shares: f is the op with its other arguments
   fixed. */
typedef tensor *(*shape_op)(int ndim, const int64_t *shape);
static void bad_shapes(shape_op f, const char *fn) {
    const int64_t nine[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1}, one[1] = {1};
    CHECK_BAD(f(TENSOR_SHAPE(-1)), fn);
    CHECK_BAD(f(TENSOR_SHAPE(2, -3)), fn);
    CHECK_BAD(f(9, nine), fn);
    CHECK_BAD(f(-1, one), fn);
    CHECK_BAD(f(2, NULL), fn);
    CHECK_BAD(f(TENSOR_SHAPE(1ll << 62, 1ll << 62)), fn);
}

static tensor *empty_f32(int nd, const int64_t *sh) { return tensor_empty(nd, sh, TENSOR_F32); }
static tensor *zeros_f32(int nd, const int64_t *sh) { return tensor_zeros(nd, sh, TENSOR_F32); }
static tensor *ones_i32(int nd, const int64_t *sh) { return tensor_ones(nd, sh, TENSOR_I32); }
static tensor *full_f64(int nd, const int64_t *sh) { return tensor_full(nd, sh, 1.5, TENSOR_F64); }
static const double bad_data[16] = {0};
static tensor *from_data_f64(int nd, const int64_t *sh) { return tensor_from_data(bad_data, nd, sh, TENSOR_F64); }
static tensor *rand_f32(int nd, const int64_t *sh) { return tensor_rand(nd, sh, TENSOR_F32); }
static tensor *randn_f64(int nd, const int64_t *sh) { return tensor_randn(nd, sh, TENSOR_F64); }
static tensor *randint_i64(int nd, const int64_t *sh) { return tensor_randint(0, 10, nd, sh, TENSOR_I64); }

void bad_input_empty(void) {
    bad_shapes(empty_f32, "tensor_empty");
    CHECK_BAD(tensor_empty(TENSOR_SHAPE(2), (tensor_dtype)99), "tensor_empty");
    CHECK_BAD(tensor_empty(TENSOR_SHAPE(2), (tensor_dtype)-1), "tensor_empty");
}
void bad_input_zeros(void) {
    bad_shapes(zeros_f32, "tensor_zeros");
    CHECK_BAD(tensor_zeros(TENSOR_SHAPE(2), (tensor_dtype)99), "tensor_zeros");
}
void bad_input_ones(void) {
    bad_shapes(ones_i32, "tensor_ones");
    CHECK_BAD(tensor_ones(TENSOR_SHAPE(2), (tensor_dtype)99), "tensor_ones");
}
void bad_input_full(void) {
    bad_shapes(full_f64, "tensor_full");
    CHECK_BAD(tensor_full(TENSOR_SHAPE(2), 1, (tensor_dtype)99), "tensor_full");
}
void bad_input_scalar(void) {
    CHECK_BAD(tensor_scalar(1, (tensor_dtype)99), "tensor_scalar");
    CHECK_BAD(tensor_scalar(1, (tensor_dtype)TENSOR_DTYPE_COUNT), "tensor_scalar");
}
void bad_input_from_data(void) {
    bad_shapes(from_data_f64, "tensor_from_data");
    CHECK_BAD(tensor_from_data(NULL, TENSOR_SHAPE(2), TENSOR_F32), "tensor_from_data");
    CHECK_BAD(tensor_from_data(bad_data, TENSOR_SHAPE(2), (tensor_dtype)99), "tensor_from_data");
}
void bad_input_arange(void) {
    CHECK_BAD(tensor_arange(0, 5, 0, TENSOR_F32), "tensor_arange");
    CHECK_BAD(tensor_arange(0, 5, NAN, TENSOR_F32), "tensor_arange");
    CHECK_BAD(tensor_arange(0, 5, -1, TENSOR_F32), "tensor_arange");   /* step away from end */
    CHECK_BAD(tensor_arange(5, 0, 1, TENSOR_I64), "tensor_arange");
    CHECK_BAD(tensor_arange(0, INFINITY, 1, TENSOR_F32), "tensor_arange");
    CHECK_BAD(tensor_arange(NAN, 5, 1, TENSOR_F32), "tensor_arange");
    CHECK_BAD(tensor_arange(0, 1e300, 1, TENSOR_F64), "tensor_arange"); /* too many elements */
    CHECK_BAD(tensor_arange(0, 5, 1, (tensor_dtype)99), "tensor_arange");
}
void bad_input_linspace(void) {
    CHECK_BAD(tensor_linspace(0, 1, -1, TENSOR_F32), "tensor_linspace");
    CHECK_BAD(tensor_linspace(0, 1, 5, (tensor_dtype)99), "tensor_linspace");
    CHECK_BAD(tensor_linspace(0, 1, INT64_MAX, TENSOR_F32), "tensor_linspace");
}
void bad_input_eye(void) {
    CHECK_BAD(tensor_eye(-1, TENSOR_F32), "tensor_eye");
    CHECK_BAD(tensor_eye(3, (tensor_dtype)99), "tensor_eye");
    CHECK_BAD(tensor_eye(1ll << 40, TENSOR_F32), "tensor_eye"); /* 2^80 elements */
}
void bad_input_rand(void) {
    bad_shapes(rand_f32, "tensor_rand");
    CHECK_BAD(tensor_rand(TENSOR_SHAPE(2), TENSOR_I32), "tensor_rand");
    CHECK_BAD(tensor_rand(TENSOR_SHAPE(2), TENSOR_BOOL), "tensor_rand");
    CHECK_BAD(tensor_rand(TENSOR_SHAPE(2), (tensor_dtype)99), "tensor_rand");
}
void bad_input_randn(void) {
    bad_shapes(randn_f64, "tensor_randn");
    CHECK_BAD(tensor_randn(TENSOR_SHAPE(2), TENSOR_I64), "tensor_randn");
    CHECK_BAD(tensor_randn(TENSOR_SHAPE(2), TENSOR_U8), "tensor_randn");
    CHECK_BAD(tensor_randn(TENSOR_SHAPE(2), (tensor_dtype)99), "tensor_randn");
}
void bad_input_randint(void) {
    bad_shapes(randint_i64, "tensor_randint");
    CHECK_BAD(tensor_randint(5, 5, TENSOR_SHAPE(2), TENSOR_I64), "tensor_randint");
    CHECK_BAD(tensor_randint(5, 2, TENSOR_SHAPE(2), TENSOR_I64), "tensor_randint");
    CHECK_BAD(tensor_randint(0, 3, TENSOR_SHAPE(2), TENSOR_BOOL), "tensor_randint");
    CHECK_BAD(tensor_randint(-1, 1, TENSOR_SHAPE(2), TENSOR_BOOL), "tensor_randint");
    CHECK_BAD(tensor_randint(0, 10, TENSOR_SHAPE(2), (tensor_dtype)99), "tensor_randint");
}
void bad_input_randperm(void) {
    CHECK_BAD(tensor_randperm(-1, TENSOR_I64), "tensor_randperm");
    CHECK_BAD(tensor_randperm(3, TENSOR_BOOL), "tensor_randperm");
    CHECK_BAD(tensor_randperm(300, TENSOR_U8), "tensor_randperm");
    CHECK_BAD(tensor_randperm(3, (tensor_dtype)99), "tensor_randperm");
}
void bad_input_multinomial(void) {
    const double p[] = {0.2, 0.8}, neg[] = {0.5, -0.1, 0.6}, zero[] = {0, 0}, one_nz[] = {0, 1, 0};
    CHECK_BAD(tensor_multinomial(NULL, 1, true), "tensor_multinomial");
    CHECK_BAD(tensor_multinomial(test_tensor(TENSOR_F32, TENSOR_SHAPE(3), neg), 1, true), "tensor_multinomial");
    const double nanp[] = {0.5, NAN}, infp[] = {0.5, INFINITY};
    CHECK_BAD(tensor_multinomial(test_tensor(TENSOR_F32, TENSOR_SHAPE(2), nanp), 1, true), "tensor_multinomial");
    CHECK_BAD(tensor_multinomial(test_tensor(TENSOR_F64, TENSOR_SHAPE(2), infp), 1, true), "tensor_multinomial");
    CHECK_BAD(tensor_multinomial(test_tensor(TENSOR_F32, TENSOR_SHAPE(2), zero), 1, true), "tensor_multinomial");
    CHECK_BAD(tensor_multinomial(test_tensor(TENSOR_I64, TENSOR_SHAPE(2), p), 1, true), "tensor_multinomial");
    CHECK_BAD(tensor_multinomial(test_tensor(TENSOR_F32, TENSOR_SHAPE(1, 1, 2), p), 1, true), "tensor_multinomial");
    CHECK_BAD(tensor_multinomial(tensor_scalar(1, TENSOR_F32), 1, true), "tensor_multinomial");
    CHECK_BAD(tensor_multinomial(tensor_zeros(TENSOR_SHAPE(2, 0), TENSOR_F32), 1, true), "tensor_multinomial");
    CHECK_BAD(tensor_multinomial(test_tensor(TENSOR_F32, TENSOR_SHAPE(2), p), 0, true), "tensor_multinomial");
    CHECK_BAD(tensor_multinomial(test_tensor(TENSOR_F32, TENSOR_SHAPE(2), p), -3, true), "tensor_multinomial");
    CHECK_BAD(tensor_multinomial(test_tensor(TENSOR_F32, TENSOR_SHAPE(2), p), 3, false), "tensor_multinomial");
    CHECK_BAD(tensor_multinomial(test_tensor(TENSOR_F32, TENSOR_SHAPE(3), one_nz), 2, false), "tensor_multinomial");
}
void bad_input_clone(void) {
    CHECK_BAD(tensor_clone(NULL), "tensor_clone");
}
void bad_input_contiguous(void) {
    CHECK_BAD(tensor_contiguous(NULL), "tensor_contiguous");
}
void bad_input_to_dtype(void) {
    tensor *t = tensor_ones(TENSOR_SHAPE(2), TENSOR_F32);
    CHECK_BAD(tensor_to_dtype(NULL, TENSOR_F32), "tensor_to_dtype");
    CHECK_BAD(tensor_to_dtype(t, (tensor_dtype)99), "tensor_to_dtype");
    CHECK_BAD(tensor_to_dtype(t, (tensor_dtype)-1), "tensor_to_dtype");
    tensor_free(t);
}
void bad_input_to_device(void) {
    tensor *t = tensor_ones(TENSOR_SHAPE(2), TENSOR_F32);
    CHECK_BAD(tensor_to_device(NULL, TENSOR_CPU), "tensor_to_device");
    CHECK_BAD(tensor_to_device(t, (tensor_device)7), "tensor_to_device");
    CHECK_BAD(tensor_to_device(t, (tensor_device)-1), "tensor_to_device");
    tensor_free(t);
}

/* The same cases run as ordinary tests too, so a filter on this file exercises them. */
TEST(create_bad_inputs) {
    bad_input_empty(); bad_input_zeros(); bad_input_ones(); bad_input_full(); bad_input_scalar();
    bad_input_from_data(); bad_input_arange(); bad_input_linspace(); bad_input_eye(); bad_input_rand();
    bad_input_randn(); bad_input_randint(); bad_input_randperm(); bad_input_multinomial();
    bad_input_clone(); bad_input_contiguous(); bad_input_to_dtype(); bad_input_to_device();
}

/* fill_ through a stepped view writes its elements only, in every dtype; -0.0 keeps its sign (its
   bits are not zero: it takes the typed stores, not the memset of a zero fill). */
TEST(create_fill_strided_views) {
    for (int k = 0; k < TENSOR_DTYPE_COUNT; k++) {
        tensor_dtype d = all_dtypes[k];
        tensor *base = tensor_full(TENSOR_SHAPE(6, 5), 3, d);
        tensor *v = tensor_slice(tensor_transpose(base, 0, 1), 1, 1, 6, 2); /* [5, 3]: rows 1, 3, 5 of base */
        CHECK(tensor_fill_(v, 7) != NULL);
        double want[30];
        for (int i = 0; i < 30; i++) want[i] = expect_stored((i / 5) % 2 == 1 ? 7 : 3, d);
        CHECK_VALUES(base, want, 30, 0, 0);
        CHECK(tensor_zero_(v) != NULL);
        for (int i = 0; i < 30; i++) want[i] = (i / 5) % 2 == 1 ? 0 : expect_stored(3, d);
        CHECK_VALUES(base, want, 30, 0, 0);
    }
    tensor *z = tensor_full(TENSOR_SHAPE(9), -0.0, TENSOR_F32);
    const float *zv = (const float *)tensor_data_ptr(z);
    for (int i = 0; zv && i < 9; i++) CHECK(zv[i] == 0 && signbit(zv[i]));
}
