/* Tests of the vector layer (generator/parts/simd.h) and the elementwise fast paths that use it.

   - simd_ulp_*: the f32 math (exp, log, expm1, log1p, sin, cos, tanh, erf, sigmoid, silu,
     softplus, gelu, gelu_tanh) over a dense sweep of the f32 range (every bit pattern of the
     relevant range with a stride, plus special values), through the public ops, against libm in
     double (accurate to ~2^-29 ulp of f32). The error is |got - exact| / ulp(exact): the largest
     error must stay within the bound written next to each function in simd.h. Points per
     function: 1000000, or TENSOR_TEST_ULP_POINTS.
   - simd_matches_reference: every fast path against the reference loops
     (tensor_set_reference_kernels): odd sizes (vector tails), sizes split across threads,
     unaligned starts (a slice from element 1), broadcast scalars, in-place ops, special values.
     The ops that are exact in f32 must match bit for bit.
   - simd_each_isa (x86 Linux): runs this file's tests again in a child process for every other
     instance the CPU has, chosen with TENSOR_SIMD, so the AVX-512, AVX2, SSE2 and scalar builds of
     the kernels are all tested here (`make test-neon` does the same for NEON under qemu). */
#include "test.h"
#include <float.h>
#include <stdint.h>

/* ---- references, in double ---- */
static double r_exp(double x) { return exp(x); }
static double r_log(double x) { return log(x); }
static double r_expm1(double x) { return expm1(x); }
static double r_log1p(double x) { return log1p(x); }
static double r_sin(double x) { return sin(x); }
static double r_cos(double x) { return cos(x); }
static double r_tanh(double x) { return tanh(x); }
static double r_erf(double x) { return erf(x); }
static double r_sigmoid(double x) { return x >= 0 ? 1 / (1 + exp(-x)) : exp(x) / (1 + exp(x)); }
static double r_silu(double x) { return isinf(x) && x < 0 ? NAN : x * r_sigmoid(x); } /* -inf: NaN, as x / (1 + e^-x) */
static double r_softplus(double x) { return x > 20 ? x : log1p(exp(x)); }
/* gelu through erfc: no cancellation in the negative tail (the reference loop's formula has it) */
static double r_gelu(double x) { return isinf(x) && x < 0 ? NAN : 0.5 * x * erfc(-x * 0.70710678118654752); }
static double r_gelu_tanh(double x) {
    if (isinf(x) && x < 0) return NAN;
    double y = 2 * 0.7978845608028654 * (x + 0.044715 * x * x * x); /* 0.5 (1 + tanh(y/2)) = sigmoid(y) */
    return x * r_sigmoid(y);
}

typedef struct {
    const char *name;
    tensor *(*op)(tensor *);
    double (*ref)(double);
    float lo, hi;     /* the swept range (beyond it the results are constant or inf/0) */
    double bound;     /* ulp, as simd.h states it */
    double sleef;     /* with TENSOR_USE_SLEEF: SLEEF's u10 functions claim 1 ulp; measured up to 1.07
                         (1.64 for erf of subnormals), so 1.5 (erf: 2) where the brief allows 2 */
} math_fn;

static const math_fn MATH[] = {
    {"exp", tensor_exp, r_exp, -105, 90, 1.0, 1.0},
    {"log", tensor_log, r_log, 0, FLT_MAX, 1.0, 1.0},
    {"expm1", tensor_expm1, r_expm1, -40, 90, 1.0, 1.5},
    {"log1p", tensor_log1p, r_log1p, -1, FLT_MAX, 1.0, 1.5},
    {"sin", tensor_sin, r_sin, -4e6f, 4e6f, 0.501, 1.5},
    {"cos", tensor_cos, r_cos, -4e6f, 4e6f, 0.501, 1.5},
    {"tanh", tensor_tanh, r_tanh, -12, 12, 1.5, 1.5},
    {"erf", tensor_erf, r_erf, -5, 5, 0.501, 2.0}, /* SLEEF sse2/scalar erff: 1.64 ulp for subnormal x */
    {"sigmoid", tensor_sigmoid, r_sigmoid, -120, 120, 0.501, 0.501},
    {"silu", tensor_silu, r_silu, -120, 120, 0.501, 0.501},
    {"softplus", tensor_softplus, r_softplus, -120, 120, 2.0, 2.0},
    /* gelu, f32: every f32 in [-20, 20] measured 7.34 ulp with FMA (AVX-512, AVX2), 7.51 on SSE2; the second row
       sweeps the subnormal tail densely (a double rounding there was once 11.5 ulp off) */
    {"gelu", tensor_gelu, r_gelu, -20, 20, 8.0, 8.0},
    {"gelu_tail", tensor_gelu, r_gelu, -14.6f, -12.5f, 8.0, 8.0},
    {"gelu_tanh", tensor_gelu_tanh, r_gelu_tanh, -25, 25, 0.501, 0.501},
};
enum { N_MATH = sizeof MATH / sizeof MATH[0] };

static float f_of(uint32_t b) { float f; memcpy(&f, &b, 4); return f; }
static uint32_t bits_of(float f) { uint32_t b; memcpy(&b, &f, 4); return b; }

/* |got - exact| in ulp of exact (of the f32 binade exact falls in; 2^-149 below the normals).
   NaN must give NaN, an exact value that rounds to +-inf must give it exactly, and a zero result
   must have exact's sign. */
static double ulp_error(float got, double exact) {
    if (exact != exact) return got != got ? 0 : INFINITY;
    if (got != got) return INFINITY;
    if (isinf((float)exact)) return got == (float)exact ? 0 : INFINITY;
    if (isinf(got)) return INFINITY;
    if (exact == 0 && got == 0) return !signbit(exact) == !signbit(got) ? 0 : INFINITY;
    double a = fabs(exact), ulp;
    if (a < FLT_MIN) ulp = ldexp(1, -149);
    else {
        int e;
        frexp(a, &e); /* a in [2^(e-1), 2^e) */
        ulp = ldexp(1, e - 24);
    }
    return fabs((double)got - exact) / ulp;
}

static long ulp_points(void) {
    const char *s = getenv("TENSOR_TEST_ULP_POINTS");
    long n = s ? atol(s) : 1000000;
    return n < 1000 ? 1000 : n;
}

/* Every bit pattern of [lo, hi] with a stride so that about `want` points result, both signs,
   plus the special values and boundaries. Returns the count; xs holds want + 64 floats. */
static long sweep_points(float lo, float hi, long want, float *xs) {
    long n = 0;
    float pos_lo = lo > 0 ? lo : 0, pos_hi = hi, neg_lo = hi < 0 ? -hi : 0, neg_hi = lo < 0 ? -lo : 0;
    double span_p = pos_hi > pos_lo ? (double)(bits_of(pos_hi) - bits_of(pos_lo)) : 0;
    double span_n = neg_hi > neg_lo ? (double)(bits_of(neg_hi) - bits_of(neg_lo)) : 0;
    for (int sign = 0; sign < 2; sign++) {
        double span = sign ? span_n : span_p;
        if (span <= 0) continue;
        long k = (long)(want * (span / (span_p + span_n)));
        uint32_t from = bits_of(sign ? neg_lo : pos_lo), to = bits_of(sign ? neg_hi : pos_hi);
        uint64_t stride = (uint64_t)(span / (k > 1 ? k - 1 : 1));
        if (stride < 1) stride = 1;
        stride |= 1; /* odd: every residue of the low mantissa bits gets visited */
        for (uint64_t u = from; u <= to && n < want; u += stride) xs[n++] = f_of((uint32_t)u | (sign ? 0x80000000u : 0));
    }
    static const float special[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-45f, -1e-45f, FLT_MIN, -FLT_MIN,
                                    FLT_MAX, -FLT_MAX, 1, -1, 0.5f, -0.5f, 88.72283f, 88.72284f, -87.33655f, -103.28f,
                                    -103.98f, 20, 20.000002f, 19.999998f, 0.9f, 0.89999998f, 1048576, 1048576.1f,
                                    -1048576.1f, 3e-8f, -3e-8f, 12.0f, -14.5f, 0.34657359f, -0.34657359f};
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++) xs[n++] = special[i];
    return n;
}

static bool sleef_on(void) { return strstr(tensor_build_info(), "sleef: yes") != NULL; }
/* Sweeps one function; returns the largest error and records failures. */
static double check_math(const math_fn *f, long want) {
    float *xs = (float *)malloc(sizeof(float) * (size_t)(want + 64));
    long n = sweep_points(f->lo, f->hi, want, xs);
    int64_t shape[1] = {n};
    tensor *x = tensor_from_data(xs, 1, shape, TENSOR_F32);
    tensor *y = f->op(x);
    const float *ys = (const float *)tensor_data_ptr(y);
    double bound = sleef_on() ? f->sleef : f->bound, worst = 0;
    long bad = 0, at = -1;
    CHECK_MSG(ys != NULL, "%s: no result", f->name);
    for (long i = 0; ys && i < n; i++) {
        double e = ulp_error(ys[i], f->ref((double)xs[i]));
        if (e > worst || e != e) { worst = e; at = i; }
        if (!(e <= bound) && bad++ < 3)
            test_fail(__FILE__, __LINE__, "%s(%.9g = %a) = %.9g, exact %.17g: %.3f ulp > %.3f (%s)", f->name, xs[i], xs[i], ys[i],
                      f->ref((double)xs[i]), e, bound, test_simd_level());
    }
    (void)at;
    free(xs);
    return worst;
}

static double MEASURED[N_MATH];
static void ulp_test(int i) { MEASURED[i] = check_math(&MATH[i], ulp_points()); }
TEST(simd_ulp_exp) { ulp_test(0); }
TEST(simd_ulp_log) { ulp_test(1); }
TEST(simd_ulp_expm1) { ulp_test(2); }
TEST(simd_ulp_log1p) { ulp_test(3); }
TEST(simd_ulp_sin) { ulp_test(4); }
TEST(simd_ulp_cos) { ulp_test(5); }
TEST(simd_ulp_erf) { ulp_test(7); }
TEST(simd_ulp_sigmoid) { ulp_test(8); }
TEST(simd_ulp_silu) { ulp_test(9); }
TEST(simd_ulp_softplus) { ulp_test(10); }
TEST(simd_ulp_gelu) { ulp_test(11); }
TEST(simd_ulp_gelu_tail) { ulp_test(12); }
TEST(simd_ulp_gelu_tanh) { ulp_test(13); }
/* The last of the sweeps in name order: also prints what they all measured. */
TEST(simd_ulp_tanh) {
    ulp_test(6);
    char line[512];
    int k = snprintf(line, sizeof line, "  simd %s%s: max ulp over %ld points:", test_simd_level(), sleef_on() ? " + sleef" : "", ulp_points());
    for (int i = 0; i < N_MATH && k < (int)sizeof line; i++) k += snprintf(line + k, sizeof line - (size_t)k, " %s %.3f", MATH[i].name, MEASURED[i]);
    printf("%s\n", line);
}

/* Exact results at the edges, sign of zero included (the sweeps cover them too; these say which). */
TEST(simd_special_values) {
    struct { tensor *(*op)(tensor *); float x, want; } cases[] = {
        {tensor_exp, -INFINITY, 0}, {tensor_exp, INFINITY, INFINITY}, {tensor_exp, 88.8f, INFINITY}, {tensor_exp, -104, 0},
        {tensor_exp, 0, 1}, {tensor_log, 0, -INFINITY}, {tensor_log, -0.0f, -INFINITY}, {tensor_log, -1, NAN},
        {tensor_log, INFINITY, INFINITY}, {tensor_log, 1, 0}, {tensor_expm1, -INFINITY, -1}, {tensor_expm1, -0.0f, -0.0f},
        {tensor_expm1, 89, INFINITY}, {tensor_expm1, 1e-40f, 1e-40f}, {tensor_log1p, -1, -INFINITY}, {tensor_log1p, -2, NAN},
        {tensor_log1p, -0.0f, -0.0f}, {tensor_log1p, INFINITY, INFINITY}, {tensor_sin, -0.0f, -0.0f}, {tensor_sin, INFINITY, NAN},
        {tensor_cos, -INFINITY, NAN}, {tensor_cos, 0, 1}, {tensor_tanh, INFINITY, 1}, {tensor_tanh, -INFINITY, -1},
        {tensor_tanh, -0.0f, -0.0f}, {tensor_tanh, -9.5f, -1}, {tensor_erf, -INFINITY, -1}, {tensor_erf, -0.0f, -0.0f},
        {tensor_erf, 4, 1}, {tensor_sigmoid, -INFINITY, 0}, {tensor_sigmoid, INFINITY, 1}, {tensor_sigmoid, 0, 0.5f},
        {tensor_silu, -INFINITY, NAN}, {tensor_silu, INFINITY, INFINITY}, {tensor_silu, -0.0f, -0.0f}, {tensor_silu, -200, -0.0f},
        {tensor_softplus, INFINITY, INFINITY}, {tensor_softplus, -INFINITY, 0}, {tensor_softplus, 30, 30},
        {tensor_gelu, -INFINITY, NAN}, {tensor_gelu, INFINITY, INFINITY}, {tensor_gelu, -0.0f, -0.0f}, {tensor_gelu, -30, -0.0f},
        {tensor_gelu_tanh, -INFINITY, NAN}, {tensor_gelu_tanh, INFINITY, INFINITY}, {tensor_gelu_tanh, -0.0f, -0.0f},
        /* beyond the vector path's range: libm's, and the vector lanes beside them stay defined */
        {tensor_sin, -3e38f, (float)sin((double)-3e38f)}, {tensor_cos, 3e38f, (float)cos((double)3e38f)},
        {tensor_sin, 1e7f, (float)sin((double)1e7f)}, {tensor_cos, -INFINITY, NAN},
    };
    tensor *(*nan_ops[])(tensor *) = {tensor_exp, tensor_log, tensor_expm1, tensor_log1p, tensor_sin, tensor_cos, tensor_tanh, tensor_erf,
                                      tensor_sigmoid, tensor_silu, tensor_softplus, tensor_gelu, tensor_gelu_tanh};
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        /* at index 5 of a 19-element row: inside a vector on every instance, and in a tail */
        for (int at = 5; at < 19; at += 13) {
            float in[19];
            for (int j = 0; j < 19; j++) in[j] = 0.25f * (float)j;
            in[at] = cases[i].x;
            tensor *y = cases[i].op(tensor_from_data(in, TENSOR_SHAPE(19), TENSOR_F32));
            const float *ys = (const float *)tensor_data_ptr(y);
            if (!ys) { CHECK(ys != NULL); continue; }
            float got = ys[at], want = cases[i].want;
            bool ok = (want != want) ? got != got : got == want && !signbit(got) == !signbit(want);
            CHECK_MSG(ok, "case %d: f(%g) = %g, expected %g (%s)", (int)i, (double)cases[i].x, (double)got, (double)want, test_simd_level());
        }
    }
    for (size_t i = 0; i < sizeof nan_ops / sizeof nan_ops[0]; i++) {
        float in[3] = {1, NAN, -NAN};
        const float *ys = (const float *)tensor_data_ptr(nan_ops[i](tensor_from_data(in, TENSOR_SHAPE(3), TENSOR_F32)));
        CHECK_MSG(ys && ys[1] != ys[1] && ys[2] != ys[2], "op %d: NaN does not give NaN", (int)i);
    }
}

/* ---- fast paths against the reference loops ---- */
typedef enum { EXACT, ULPS, ULPS8 } agreement; /* ULPS: within 2 ulp; ULPS8: 8 (gelu, an f32 formula) */
typedef struct { const char *name; tensor *(*op)(tensor *); agreement how; float lo, hi; } unary_case;
static tensor *relu6_(tensor *a) { return tensor_relu6(a); }
static tensor *hardtanh_(tensor *a) { return tensor_hardtanh(a, -0.7, 0.30000001192092896); }
static tensor *clamp_(tensor *a) { return tensor_clamp(a, -0.1, 1e300); }
static tensor *clamp_nan_(tensor *a) { return tensor_clamp(a, NAN, 2.5); }
static tensor *leaky_(tensor *a) { return tensor_leaky_relu(a, 0.01); }
static const unary_case UNARY[] = {
    {"neg", tensor_neg, EXACT, -10, 10}, {"abs", tensor_abs, EXACT, -10, 10}, {"sqrt", tensor_sqrt, EXACT, -1, 100},
    {"square", tensor_square, EXACT, -1e20f, 1e20f}, {"reciprocal", tensor_reciprocal, EXACT, -3, 3}, {"relu", tensor_relu, EXACT, -3, 3},
    {"relu6", relu6_, EXACT, -3, 9}, {"hardtanh", hardtanh_, EXACT, -2, 2}, {"clamp", clamp_, EXACT, -2, 2},
    {"clamp NaN bound", clamp_nan_, EXACT, -4, 4}, {"leaky_relu", leaky_, EXACT, -5, 5},
    {"exp", tensor_exp, ULPS, -90, 90}, {"log", tensor_log, ULPS, -1, 1e6f}, {"expm1", tensor_expm1, ULPS, -20, 20},
    {"log1p", tensor_log1p, ULPS, -1.5f, 100}, {"sin", tensor_sin, ULPS, -100, 100}, {"cos", tensor_cos, ULPS, -100, 100},
    {"tanh", tensor_tanh, ULPS, -10, 10}, {"erf", tensor_erf, ULPS, -4, 4}, {"sigmoid", tensor_sigmoid, ULPS, -30, 30},
    {"silu", tensor_silu, ULPS, -30, 30}, {"softplus", tensor_softplus, ULPS, -30, 30},
    /* the reference formulas of gelu and gelu_tanh cancel below -5: compared where they do not */
    {"gelu", tensor_gelu, ULPS8, -5, 5}, {"gelu_tanh", tensor_gelu_tanh, ULPS, -5, 5},
};
static const float SPECIAL[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 1e-45f, -3e-39f, FLT_MAX, -FLT_MAX, 1, -1};

/* n values in [lo, hi] with every 7th a special value */
static void fill_values(float *v, int64_t n, float lo, float hi) {
    for (int64_t i = 0; i < n; i++)
        v[i] = i % 7 == 3 ? SPECIAL[(i / 7) % (int64_t)(sizeof SPECIAL / sizeof SPECIAL[0])] : (float)test_uniform(lo, hi);
}

/* integer ulp distance of two floats (NaN == NaN) */
static int64_t ulp_distance(float a, float b) {
    if (a != a || b != b) return (a != a && b != b) ? 0 : INT64_MAX;
    if (a == b) return !signbit(a) == !signbit(b) ? 0 : INT64_MAX;
    int64_t ia = (int32_t)bits_of(a), ib = (int32_t)bits_of(b);
    if (ia < 0) ia = INT32_MIN - ia;
    if (ib < 0) ib = INT32_MIN - ib;
    return ia > ib ? ia - ib : ib - ia;
}

/* Compares `fast` with `ref` elementwise: bit-exact (NaN == NaN) or within 2 ulp (8 with wide). */
static void check_agreement_within(const char *what, int64_t n, tensor *fast, tensor *ref, bool exact, bool as_bool, bool wide) {
    if (!fast || !ref) { test_fail(__FILE__, __LINE__, "%s: NULL result (%s)", what, tensor_last_error() ? tensor_last_error() : "?"); return; }
    size_t esz = as_bool ? 1 : 4;
    char *a = (char *)malloc(esz * (size_t)(n ? n : 1)), *b = (char *)malloc(esz * (size_t)(n ? n : 1));
    CHECK(tensor_copy_to(fast, a, esz * (size_t)n) == 0 && tensor_copy_to(ref, b, esz * (size_t)n) == 0);
    int bad = 0;
    for (int64_t i = 0; i < n && bad < 3; i++) {
        float x = 0, y = 0;
        if (as_bool) {
            x = a[i];
            y = b[i];
        } else {
            memcpy(&x, a + 4 * i, 4);
            memcpy(&y, b + 4 * i, 4);
        }
        int64_t d = ulp_distance(x, y);
        if (exact ? d == 0 : d <= (wide ? 8 : 2)) continue;
        test_fail(__FILE__, __LINE__, "%s, n=%lld, element %lld: fast %.9g, reference %.9g (%s)", what, (long long)n, (long long)i, (double)x, (double)y, test_simd_level());
        bad++;
    }
    free(a);
    free(b);
}

/* Sizes: empty, one, vector tails of every instance (1, 4, 8, 16 lanes), and large enough to be
   split across threads at chunk boundaries that are not multiples of a vector. */
static const int64_t SIZES[] = {0, 1, 2, 3, 5, 7, 8, 9, 15, 16, 17, 31, 33, 63, 65, 100, 1000, 70001};

/* t's values, optionally starting at element 1 of a larger tensor (an unaligned start) */
static tensor *values_tensor(int64_t n, float lo, float hi, bool offset) {
    float *v = (float *)malloc(sizeof(float) * (size_t)(n + 1));
    fill_values(v, n + 1, lo, hi);
    int64_t full = n + 1;
    tensor *t = tensor_from_data(v, 1, &full, TENSOR_F32);
    free(v);
    return tensor_slice(t, 0, offset ? 1 : 0, offset ? n + 1 : n, 1);
}

static void check_agreement(const char *what, int64_t n, tensor *fast, tensor *ref, bool exact, bool as_bool) {
    check_agreement_within(what, n, fast, ref, exact, as_bool, false);
}

TEST(simd_matches_reference_unary) {
    for (size_t k = 0; k < sizeof UNARY / sizeof UNARY[0]; k++)
        for (size_t s = 0; s < sizeof SIZES / sizeof SIZES[0]; s++)
            for (int off = 0; off < 2; off++) {
                tensor_scope_begin();
                tensor *x = values_tensor(SIZES[s], UNARY[k].lo, UNARY[k].hi, off);
                tensor *fast = UNARY[k].op(x);
                bool was = tensor_set_reference_kernels(true);
                tensor *ref = UNARY[k].op(x);
                tensor_set_reference_kernels(was);
                char what[64];
                snprintf(what, sizeof what, "%s%s", UNARY[k].name, off ? " from element 1" : "");
                check_agreement_within(what, SIZES[s], fast, ref, UNARY[k].how == EXACT, false, UNARY[k].how == ULPS8);
                tensor_scope_end();
            }
}

/* Binary ops in every operand layout the fast path serves (two arrays, a broadcast 0-dim scalar on
   either side, a size-1 dim expanded, a wrapped Python scalar) and in place. */
typedef struct { const char *name; tensor *(*op)(tensor *, tensor *); bool as_bool; } binary_case;
static const binary_case BINARY[] = {
    {"add", tensor_add, false}, {"sub", tensor_sub, false}, {"mul", tensor_mul, false}, {"div", tensor_div, false},
    {"maximum", tensor_maximum, false}, {"minimum", tensor_minimum, false}, {"eq", tensor_eq, true}, {"ne", tensor_ne, true},
    {"lt", tensor_lt, true}, {"le", tensor_le, true}, {"gt", tensor_gt, true}, {"ge", tensor_ge, true},
};

static void compare_binary(const binary_case *c, const char *layout, int64_t n, tensor *a, tensor *b) {
    tensor *fast = c->op(a, b);
    bool was = tensor_set_reference_kernels(true);
    tensor *ref = c->op(a, b);
    tensor_set_reference_kernels(was);
    char what[96];
    snprintf(what, sizeof what, "%s (%s)", c->name, layout);
    check_agreement(what, n, fast, ref, true, c->as_bool);
}

TEST(simd_matches_reference_binary) {
    for (size_t k = 0; k < sizeof BINARY / sizeof BINARY[0]; k++)
        for (size_t s = 0; s < sizeof SIZES / sizeof SIZES[0]; s++) {
            int64_t n = SIZES[s];
            tensor_scope_begin();
            tensor *a = values_tensor(n, -4, 4, true), *b = values_tensor(n, -4, 4, false);
            /* equal values now and then, so == and <= see ties */
            tensor *b_ties = tensor_where(tensor_gt(b, tensor_scalar(2, TENSOR_F32)), a, b);
            float sv = 0.5f;
            tensor *s0 = tensor_from_data(&sv, 0, NULL, TENSOR_F32);
            int64_t one = 1;
            tensor *s1 = tensor_expand(tensor_from_data(&sv, 1, &one, TENSOR_F32), 1, &n);
            float nanv = NAN, nzv = -0.0f;
            tensor *snan = tensor_from_data(&nanv, 0, NULL, TENSOR_F32), *snz = tensor_from_data(&nzv, 0, NULL, TENSOR_F32);
            compare_binary(&BINARY[k], "arrays", n, a, b_ties);
            compare_binary(&BINARY[k], "0-dim b", n, a, s0);
            compare_binary(&BINARY[k], "0-dim a", n, s0, a);
            compare_binary(&BINARY[k], "expanded b", n, a, s1);
            compare_binary(&BINARY[k], "NaN 0-dim b", n, a, snan);
            compare_binary(&BINARY[k], "-0 0-dim a", n, snz, b);
            compare_binary(&BINARY[k], "-0 0-dim b", n, b, snz);
            tensor_scope_end();
        }
}

TEST(simd_matches_reference_scalar_and_inplace) {
    for (size_t s = 0; s < sizeof SIZES / sizeof SIZES[0]; s++) {
        int64_t n = SIZES[s];
        tensor_scope_begin();
        tensor *a = values_tensor(n, -4, 4, true), *b = values_tensor(n, -4, 4, false);
        tensor *(*scalar_ops[])(tensor *, double) = {tensor_add_scalar, tensor_sub_scalar, tensor_mul_scalar, tensor_div_scalar};
        for (int k = 0; k < 4; k++) {
            tensor *fast = scalar_ops[k](a, 0.1);
            bool was = tensor_set_reference_kernels(true);
            tensor *ref = scalar_ops[k](a, 0.1);
            tensor_set_reference_kernels(was);
            check_agreement("tensor op scalar", n, fast, ref, true, false);
        }
        /* in place, into an unaligned view */
        tensor *x1 = tensor_clone(a), *x2 = tensor_clone(a);
        tensor *big1 = tensor_zeros(TENSOR_SHAPE(n + 1), TENSOR_F32), *big2 = tensor_zeros(TENSOR_SHAPE(n + 1), TENSOR_F32);
        tensor *v1 = tensor_slice(big1, 0, 1, n + 1, 1), *v2 = tensor_slice(big2, 0, 1, n + 1, 1);
        tensor_copy_(v1, a);
        tensor_copy_(v2, a);
        tensor_add_(x1, b);
        tensor_mul_scalar_(v1, 1.7);
        bool was = tensor_set_reference_kernels(true);
        tensor_add_(x2, b);
        tensor_mul_scalar_(v2, 1.7);
        tensor_set_reference_kernels(was);
        check_agreement("add_", n, x1, x2, true, false);
        check_agreement("mul_scalar_ into a view from element 1", n, v1, v2, true, false);
        tensor_scope_end();
    }
}

/* Layouts the fast path does not serve still agree (they take the reference loop). */
TEST(simd_other_layouts) {
    tensor *a = values_tensor(6 * 7, -3, 3, false);
    tensor *m = tensor_reshape(a, TENSOR_SHAPE(6, 7));
    tensor *t = tensor_transpose(m, 0, 1), *stepped = tensor_slice(m, 1, 0, 7, 2);
    tensor *pairs[][2] = {{tensor_exp(t), NULL}, {tensor_exp(stepped), NULL}, {tensor_add(t, t), NULL}};
    bool was = tensor_set_reference_kernels(true);
    pairs[0][1] = tensor_exp(t);
    pairs[1][1] = tensor_exp(stepped);
    pairs[2][1] = tensor_add(t, t);
    tensor_set_reference_kernels(was);
    check_agreement("exp of a transposed view", 42, tensor_contiguous(pairs[0][0]), tensor_contiguous(pairs[0][1]), true, false);
    check_agreement("exp of a stepped slice", 24, tensor_contiguous(pairs[1][0]), tensor_contiguous(pairs[1][1]), true, false);
    check_agreement("add of transposed views", 42, tensor_contiguous(pairs[2][0]), tensor_contiguous(pairs[2][1]), true, false);
}

/* The fast path is really taken: our exp is not correctly rounded everywhere, the reference loop
   (libm in double, rounded once) is, so over many points they must differ somewhere. */
TEST(simd_fast_path_is_used) {
    if (strstr(tensor_build_info(), "simd: none")) return; /* no vector layer in this build */
    int64_t n = 200000;
    tensor *x = values_tensor(n, -80, 80, false);
    tensor *fast = tensor_exp(x);
    bool was = tensor_set_reference_kernels(true);
    CHECK(strstr(tensor_build_info(), "reference kernels on") != NULL);
    tensor *ref = tensor_exp(x);
    tensor_set_reference_kernels(was);
    float *a = (float *)malloc(sizeof(float) * (size_t)n), *b = (float *)malloc(sizeof(float) * (size_t)n);
    CHECK(tensor_copy_to(fast, a, sizeof(float) * (size_t)n) == 0 && tensor_copy_to(ref, b, sizeof(float) * (size_t)n) == 0);
    int64_t differ = 0;
    for (int64_t i = 0; i < n; i++) differ += ulp_distance(a[i], b[i]) != 0;
    CHECK_MSG(differ > 0, "tensor_exp gave the reference loop's results everywhere: is the %s fast path used?", test_simd_level());
    free(a);
    free(b);
}

TEST(simd_build_info) {
    const char *info = tensor_build_info(), *want = getenv("TENSOR_SIMD");
    CHECK(strstr(info, "simd: ") != NULL);
    CHECK(strstr(info, "reference kernels on") == NULL);
    static const char *const levels[] = {"avx512f", "avx2+fma", "sse2", "neon", "scalar", "none"};
    bool known = false;
    for (int i = 0; i < 6; i++) known |= strncmp(test_simd_level(), levels[i], strlen(levels[i])) == 0;
    CHECK_MSG(known, "unknown simd level '%s'", test_simd_level());
    /* x86-64 compiles no scalar instance: TENSOR_SIMD=scalar gives the lowest, sse2 */
    const char *got = want && !test_cpu_runs("scalar") && !strcmp(want, "scalar") ? "sse2" : want;
    if (want) CHECK_MSG(strstr(test_simd_level(), got) != NULL, "TENSOR_SIMD=%s but build info says %s", want, info);
    /* (that the GEMM kernels follow this choice: tests/test_gemm.c, gemm_kernel_follows_simd_level) */
    CHECK_MSG(strstr(info, "; gemm: ") != NULL, "build info: %s", info);
}

/* ---- the row primitives (simd.h, TENSOR__SIMD_ROWS) through the ops that use them: every length
   0..70 (each tail of each instance) and long rows (past the 256-element blocks), against plain
   double loops and against the reference kernels; simd_each_isa repeats them for every instance. */
static void rows_want(int line, const char *what, int64_t n, tensor *got, const double *want, int64_t cnt, double atol, double rtol) {
    if (!got) { test_fail(__FILE__, line, "%s, row length %lld: NULL (%s)", what, (long long)n, tensor_last_error()); return; }
    if (tensor_numel(got) != cnt) { test_fail(__FILE__, line, "%s, row length %lld: numel %lld", what, (long long)n, (long long)tensor_numel(got)); return; }
    double *v = test_values(got);
    for (int64_t i = 0, bad = 0; i < cnt && bad < 3; i++) {
        double a = v[i], b = want[i];
        if ((a != a && b != b) || a == b || fabs(a - b) <= atol + rtol * fabs(b)) continue;
        test_fail(__FILE__, line, "%s, row length %lld (simd %s): element %lld is %.9g, expected %.9g", what, (long long)n, test_simd_level(),
                  (long long)i, a, b);
        bad++;
    }
    free(v);
}
static void rows_same(int line, const char *what, int64_t n, tensor *fast, tensor *ref, double atol, double rtol) {
    if (!ref) { test_fail(__FILE__, line, "%s, row length %lld: reference NULL (%s)", what, (long long)n, tensor_last_error()); return; }
    double *e = test_values(ref);
    rows_want(line, what, n, fast, e, tensor_numel(ref), atol, rtol);
    free(e);
}
/* the op on x, and d sum(op(x) * wt) / d x (and d / d w, d / d b for the norms) */
typedef struct { tensor *y, *gx, *gw, *gb; } rows_out;
static rows_out rows_run(int op, tensor *x0, tensor *w0, tensor *b0, tensor *wt) {
    rows_out o;
    tensor *x = tensor_set_requires_grad(tensor_clone(x0), true);
    tensor *w = tensor_set_requires_grad(tensor_clone(w0), true), *b = tensor_set_requires_grad(tensor_clone(b0), true);
    o.y = op == 0 ? tensor_softmax(x, 1) : op == 1 ? tensor_log_softmax(x, 1) : op == 2 ? tensor_layer_norm(x, w, b, 1e-5) : tensor_rms_norm(x, w, 1e-5);
    CHECK(o.y && tensor_backward(tensor_sum_all(tensor_mul(o.y, wt))) == 0);
    o.gx = tensor_grad(x);
    o.gw = op >= 2 ? tensor_grad(w) : NULL;
    o.gb = op == 2 ? tensor_grad(b) : NULL;
    return o;
}
static void rows_check_length(int64_t n) {
    const int64_t R = 3;
    tensor *x = test_random(TENSOR_F32, 2, (const int64_t[]){R, n}, -3, 3); /* finite: specials have their own test */
    if (n > 0) x = tensor_add(x, tensor_reshape(tensor_from_data((const float[]){0.0f, 40.0f, -7.5f}, 1, (const int64_t[]){3}, TENSOR_F32), 2, (const int64_t[]){3, 1}));
    double *xv = test_values(x);
    /* plain double loops */
    double *sum = (double *)calloc((size_t)(2 * R + n + 1), sizeof(double)), *lse = sum + R, *col = sum + 2 * R;
    double *sm = (double *)calloc((size_t)(R * n + 1), sizeof(double)), *ls = (double *)calloc((size_t)(R * n + 1), sizeof(double));
    for (int64_t r = 0; r < R; r++) {
        double m = -INFINITY, se = 0;
        for (int64_t i = 0; i < n; i++) { sum[r] += xv[r * n + i]; col[i] += xv[r * n + i]; m = xv[r * n + i] > m ? xv[r * n + i] : m; }
        for (int64_t i = 0; i < n; i++) se += exp(xv[r * n + i] - m);
        lse[r] = n ? m + log(se) : -INFINITY;
        for (int64_t i = 0; i < n; i++) { sm[r * n + i] = exp(xv[r * n + i] - m) / se; ls[r * n + i] = xv[r * n + i] - lse[r]; }
    }
    /* the sums are exact in double: only the f32 result's rounding */
    rows_want(__LINE__, "sum", n, tensor_sum(x, 1, false), sum, R, 1e-6, 1.2e-7);
    rows_want(__LINE__, "sum over dim 0", n, tensor_sum(x, 0, false), col, n, 1e-6, 1.2e-7);
    rows_want(__LINE__, "logsumexp", n, tensor_logsumexp(x, 1, false), lse, R, 1e-5, 1e-6);
    rows_want(__LINE__, "softmax", n, tensor_softmax(x, 1), sm, R * n, 1e-7, 1e-5);
    rows_want(__LINE__, "log_softmax", n, tensor_log_softmax(x, 1), ls, R * n, 2e-5, 1e-6);
    tensor *w = test_random(TENSOR_F32, 1, &n, -2, 2), *b = tensor_slice(test_random(TENSOR_F32, 1, (const int64_t[]){n + 1}, -1, 1), 0, 1, n + 1, 1);
    tensor *wt = test_random(TENSOR_F32, 2, (const int64_t[]){R, n}, -1, 1);
    tensor *fast[8], *ref[8];
    for (int pass = 0; pass < 2; pass++) {
        bool was = tensor_set_reference_kernels(pass == 1);
        tensor **o = pass ? ref : fast;
        o[0] = tensor_sum(x, 1, false);
        o[1] = tensor_mean(x, 1, false);
        o[2] = tensor_sum(x, 0, false);
        o[3] = tensor_var(x, 1, 0, false);
        o[4] = tensor_logsumexp(x, 1, false);
        o[5] = tensor_std(x, 1, 1, true);
        o[6] = tensor_sum(tensor_slice(x, 1, n > 1 ? 1 : 0, n, 1), 1, false); /* unaligned rows */
        o[7] = tensor_softmax(tensor_slice(x, 1, n > 1 ? 1 : 0, n, 1), 1);
        tensor_set_reference_kernels(was);
    }
    static const char *const red_names[8] = {"sum", "mean", "sum over dim 0", "var", "logsumexp", "std", "sum of a slice", "softmax of a slice"};
    for (int k = 0; k < 8; k++) rows_same(__LINE__, red_names[k], n, fast[k], ref[k], k == 4 ? 1e-5 : 1e-6, 1e-6);
    if (n > 0) {
        static const char *const names[4] = {"softmax", "log_softmax", "layer_norm", "rms_norm"};
        for (int op = 0; op < 4; op++) {
            rows_out f = rows_run(op, x, w, b, wt);
            bool was = tensor_set_reference_kernels(true);
            rows_out r = rows_run(op, x, w, b, wt);
            tensor_set_reference_kernels(was);
            rows_same(__LINE__, names[op], n, f.y, r.y, 2e-5, 2e-5);
            /* the norms' input gradient is a small difference of terms of size |g w| / sigma, and
               x - mean carries an error of eps |x| (rows offset by 40): float paths may differ by
               about eps |g w| max|x| / sigma^2, large for a short row of nearly equal values */
            double gx_atol = 2e-5, gw_atol = 0;
            for (int64_t r = 0; op >= 2 && r < R; r++) {
                double mean = 0, sq = 0, amax = 0;
                for (int64_t i = 0; i < n; i++) mean += xv[r * n + i] / (double)n;
                for (int64_t i = 0; i < n; i++) {
                    double d = op == 2 ? xv[r * n + i] - mean : xv[r * n + i];
                    sq += d * d / (double)n;
                    amax = fabs(xv[r * n + i]) > amax ? fabs(xv[r * n + i]) : amax;
                }
                double bound = 16 * FLT_EPSILON * 2.0 * amax / (sq + 1e-5); /* |g w| <= 2 */
                gx_atol = bound > gx_atol ? bound : gx_atol;
                /* the same error of x - mean moves xhat by up to eps |x| / sigma, and each row's
                   xhat enters the weight's gradient times |g| <= 1 (measured: 5e-4 for two values
                   near 40 that differ by 1.3e-3, where this allows 5.9e-3) */
                gw_atol += 4 * FLT_EPSILON * amax / sqrt(sq + 1e-5);
            }
            rows_same(__LINE__, names[op], n, f.gx, r.gx, gx_atol, 2e-4);
            if (f.gw || r.gw) rows_same(__LINE__, "norm weight grad", n, f.gw, r.gw, 2e-5 + gw_atol, 2e-5);
            if (f.gb || r.gb) rows_same(__LINE__, "norm bias grad", n, f.gb, r.gb, 2e-5, 2e-5);
        }
    }
    free(xv);
    free(sum);
    free(sm);
    free(ls);
}
TEST(simd_rows_match_reference) {
    for (int64_t n = 0; n <= 70; n++) rows_check_length(n);
    static const int64_t LONG[] = {255, 256, 257, 511, 1000, 4099};
    for (size_t k = 0; k < sizeof LONG / sizeof LONG[0]; k++) rows_check_length(LONG[k]);
}
/* Rows with NaN and infinities (the max and sum-of-exp primitives leave them to the reference
   path): logsumexp, softmax and log_softmax must give the reference's values, NaN where it has NaN. */
TEST(simd_rows_special_values) {
    static const int64_t LENS[] = {1, 2, 5, 16, 17, 33, 70, 300};
    static const float SPECIALS[] = {NAN, INFINITY, -INFINITY};
    for (size_t li = 0; li < sizeof LENS / sizeof LENS[0]; li++) {
        int64_t n = LENS[li], R = 8;
        float *v = (float *)malloc(sizeof(float) * (size_t)(R * n));
        for (int64_t i = 0; i < R * n; i++) v[i] = (float)(((i * 37) % 23) - 11) * 0.25f;
        /* row 0: plain; 1: a NaN last; 2: +inf in the middle; 3: -inf first; 4: all -inf; 5: +inf and -inf;
           6: a NaN first and +inf; 7: all +inf */
        v[1 * n + n - 1] = SPECIALS[0];
        v[2 * n + n / 2] = SPECIALS[1];
        v[3 * n] = SPECIALS[2];
        for (int64_t i = 0; i < n; i++) v[4 * n + i] = -INFINITY;
        v[5 * n] = INFINITY;
        v[5 * n + n - 1] = -INFINITY;
        v[6 * n] = NAN;
        v[6 * n + n - 1] = INFINITY;
        for (int64_t i = 0; i < n; i++) v[7 * n + i] = INFINITY;
        tensor *x = tensor_from_data(v, 2, (const int64_t[]){R, n}, TENSOR_F32);
        tensor *f[3], *r[3];
        for (int pass = 0; pass < 2; pass++) {
            bool was = tensor_set_reference_kernels(pass == 1);
            tensor **o = pass ? r : f;
            o[0] = tensor_logsumexp(x, 1, false);
            o[1] = tensor_softmax(x, 1);
            o[2] = tensor_log_softmax(x, 1);
            tensor_set_reference_kernels(was);
        }
        rows_same(__LINE__, "logsumexp with specials", n, f[0], r[0], 1e-6, 1e-6);
        rows_same(__LINE__, "softmax with specials", n, f[1], r[1], 1e-7, 1e-5);
        rows_same(__LINE__, "log_softmax with specials", n, f[2], r[2], 1e-5, 1e-6);
        free(v);
    }
}

#if defined(__linux__) && (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
/* Every x86 instance, each in a child process of this binary (TENSOR_SIMD picks it at start-up):
   the child runs this file's tests (tests/test_gemm.c runs the GEMM tests at each level). The
   level this process runs was covered above; one the CPU lacks is skipped, visibly. x86-64 has
   no scalar instance to test (make test-neon runs it, under qemu). */
static void simd_at_level(const char *level) {
    if (getenv("TENSOR_SIMD")) return; /* a child */
    if (!test_cpu_runs(level)) { test_skip_cpu("the vector kernels at TENSOR_SIMD=%s", level); return; }
    if (strstr(test_simd_level(), level)) return; /* this process runs at that level */
    char env[64];
    snprintf(env, sizeof env, "TENSOR_TEST_ULP_POINTS=%ld ", ulp_points() / 2);
    test_run_at_simd_level(__FILE__, __LINE__, level, env, "test_simd", "simd ");
}
TEST(simd_at_level_avx512) { simd_at_level("avx512"); }
TEST(simd_at_level_avx2) { simd_at_level("avx2"); }
TEST(simd_at_level_sse2) { simd_at_level("sse2"); }
#if !defined(__x86_64__) || defined(TENSOR_NO_SIMD)
TEST(simd_at_level_scalar) { simd_at_level("scalar"); }
#endif
#endif

/* Every vector kernel must hand back the registers clean (vzeroupper at each exit, including calls
   out to scalar helpers): otherwise every later SSE instruction of a plain -O2 build, in the
   library or the user's program, pays a transition penalty. This runs the f32 paths of a training
   step one op at a time, on 1 and 2 threads, and checks after each. */
#define CHECK_CLEAN_AFTER(expr) do {                                                                   \
        tensor *clean_r_ = (expr);                                                                     \
        CHECK_MSG(clean_r_ != NULL, "%s failed: %s", #expr, tensor_last_error());                      \
        CHECK_MSG(test_upper_vector_state_dirty() != 1, "%s left the upper vector state dirty", #expr); \
    } while (0)
TEST(simd_kernels_leave_vector_state_clean) {
    if (test_upper_vector_state_dirty() == -1) return; /* not x86, or the CPU cannot tell */
    int threads = tensor_get_num_threads();
    for (int nt = 1; nt <= 2; nt++) {
        tensor_set_num_threads(nt);
        tensor *x = tensor_set_requires_grad(test_random(TENSOR_F32, TENSOR_SHAPE(8, 1, 12, 12), -1, 1), true);
        tensor *w = tensor_set_requires_grad(test_random(TENSOR_F32, TENSOR_SHAPE(6, 1, 3, 3), -1, 1), true);
        tensor *a = tensor_set_requires_grad(test_random(TENSOR_F32, TENSOR_SHAPE(37, 53), -1, 1), true);
        tensor *b = tensor_set_requires_grad(test_random(TENSOR_F32, TENSOR_SHAPE(29, 53), -1, 1), true);
        tensor *d = test_random(TENSOR_F64, TENSOR_SHAPE(37, 53), -1, 1);
        int64_t labels[37];
        for (int i = 0; i < 37; i++) labels[i] = i % 29;
        tensor *y = tensor_from_data(labels, TENSOR_SHAPE(37), TENSOR_I64);
        CHECK_CLEAN_AFTER(tensor_add(a, a));
        CHECK_CLEAN_AFTER(tensor_mul(a, a));
        CHECK_CLEAN_AFTER(tensor_exp(a));
        CHECK_CLEAN_AFTER(tensor_tanh(a));
        CHECK_CLEAN_AFTER(tensor_gelu(a));
        CHECK_CLEAN_AFTER(tensor_relu(a));
        CHECK_CLEAN_AFTER(tensor_sum_all(a));
        CHECK_CLEAN_AFTER(tensor_sum(a, 0, false));
        CHECK_CLEAN_AFTER(tensor_max(a, 1, false));
        CHECK_CLEAN_AFTER(tensor_softmax(a, 1));
        CHECK_CLEAN_AFTER(tensor_log_softmax(a, 1));
        CHECK_CLEAN_AFTER(tensor_layer_norm(a, NULL, NULL, 1e-5));
        CHECK_CLEAN_AFTER(tensor_rms_norm(a, NULL, 1e-5));
        CHECK_CLEAN_AFTER(tensor_matmul(a, tensor_transpose(b, 0, 1)));
        CHECK_CLEAN_AFTER(tensor_matmul(tensor_transpose(a, 0, 1), a));
        CHECK_CLEAN_AFTER(tensor_matmul(d, tensor_transpose(d, 0, 1)));
        CHECK_CLEAN_AFTER(tensor_linear(a, b, NULL));
        tensor *h = tensor_max_pool2d(tensor_relu(tensor_conv2d(x, w, NULL, 1, 1, 1, 1)), 2, 2, 0);
        CHECK_CLEAN_AFTER(h);
        tensor *loss = tensor_add(tensor_cross_entropy(tensor_linear(a, b, NULL), y), tensor_mean_all(h));
        CHECK_CLEAN_AFTER(loss);
        CHECK(tensor_backward(loss) == 0);
        CHECK_MSG(test_upper_vector_state_dirty() != 1, "backward left the upper vector state dirty");
        tensor *params[4] = {x, w, a, b};
        tensor_optim *opt = tensor_optim_adamw(4, params, 1e-3, 0.9, 0.999, 1e-8, 1e-2);
        CHECK(opt && tensor_optim_step(opt) == 0);
        CHECK_MSG(test_upper_vector_state_dirty() != 1, "tensor_optim_step left the upper vector state dirty");
        tensor_optim_free(opt);
    }
    tensor_set_num_threads(threads);
}

/* ---- random fills (create.h): words from Philox in SIMD lanes, Box-Muller in double or f32 ---- */

/* One fill per kind after the same seed and the same earlier draws (rand of 3 leaves the stream
   inside a block, so the fills start mid-block), on the path chosen now. */
#define RNG_N 200003 /* odd: randn drops the last sine; large: split over the threads */
static void rng_fills(tensor **out) {
    tensor_manual_seed(7);
    tensor *skip = tensor_rand(TENSOR_SHAPE(3), TENSOR_F32);
    out[0] = tensor_rand(TENSOR_SHAPE(RNG_N), TENSOR_F32);
    out[1] = tensor_rand(TENSOR_SHAPE(RNG_N), TENSOR_F64);
    out[2] = tensor_randn(TENSOR_SHAPE(RNG_N), TENSOR_F32);
    out[3] = tensor_randn(TENSOR_SHAPE(RNG_N), TENSOR_F64);
    out[4] = tensor_dropout(tensor_ones(TENSOR_SHAPE(RNG_N), TENSOR_F32), 0.3, true);
    out[5] = tensor_normal_(tensor_zeros(TENSOR_SHAPE(RNG_N), TENSOR_F32), 1.5, 2.0);
    out[6] = tensor_uniform_(tensor_zeros(TENSOR_SHAPE(RNG_N), TENSOR_BF16), -2, 3);
    out[7] = tensor_rand(TENSOR_SHAPE(5), TENSOR_F32); /* the stream after the fills */
    tensor_free(skip);
}
static const char *const RNG_NAMES[8] = {"rand f32", "rand f64", "randn f32", "randn f64", "dropout", "normal_ f32", "uniform_ bf16", "rand after"};

/* The SIMD words are Philox's bit for bit, so the uniform fills and dropout's mask equal the
   reference's exactly on every instance. The normal ones in double (randn f64, normal_) differ
   from the reference's libm Box-Muller by at most an ulp of the dtype, in a small share of values
   (the SIMD log, sin and cos are good to a few ulp of double); randn f32, Box-Muller in f32, by a
   few ulp (2.3 measured). Any thread count gives the same values bit for bit. */
TEST(simd_rng_matches_reference_and_thread_counts) {
    tensor_scope_begin();
    tensor *fast[8], *ref[8], *one[8];
    rng_fills(fast);
    bool was = tensor_set_reference_kernels(true);
    rng_fills(ref);
    tensor_set_reference_kernels(was);
    int threads = tensor_get_num_threads();
    tensor_set_num_threads(1);
    rng_fills(one);
    tensor_set_num_threads(threads);
    for (int k = 0; k < 8; k++) {
        CHECK_MSG(fast[k] && ref[k] && one[k], "%s failed: %s", RNG_NAMES[k], tensor_last_error());
        if (!fast[k] || !ref[k] || !one[k]) continue;
        int64_t n = tensor_numel(fast[k]), differ = 0;
        size_t bytes = (size_t)n * tensor_dtype_size(tensor_get_dtype(fast[k]));
        CHECK_MSG(memcmp(tensor_data_ptr(fast[k]), tensor_data_ptr(one[k]), bytes) == 0, "%s: %d threads and 1 thread differ", RNG_NAMES[k], threads);
        double *a = test_values(fast[k]), *b = test_values(ref[k]), worst = 0;
        bool normal = k == 2 || k == 3 || k == 5;
        double ulp = tensor_get_dtype(fast[k]) == TENSOR_F64 ? ldexp(1, -52) : ldexp(1, -23);
        for (int64_t i = 0; i < n; i++) {
            if (a[i] == b[i]) continue;
            differ++;
            double e = fabs(a[i] - b[i]) / (ulp * (ulp < 1e-10 ? fmax(fabs(b[i]), 1) : fabs(b[i])));
            if (e > worst) worst = e;
        }
        if (!normal)
            CHECK_MSG(differ == 0, "%s: %lld of %lld values differ from the reference", RNG_NAMES[k], (long long)differ, (long long)n);
        else if (ulp < 1e-10) /* f64: within 1e-14 of the reference, as create_rng_pinned_values allows libm */
            CHECK_MSG(worst <= 1e-14 / ulp, "%s: values differ from the reference by up to %.2f ulp of max(|x|, 1)", RNG_NAMES[k], worst);
        else if (k == 2) /* randn f32: Box-Muller in f32 (simd.h's box_muller) against the double reference */
            CHECK_MSG(worst <= 4, "%s: values differ from the reference by up to %.2f ulp", RNG_NAMES[k], worst);
        else
            CHECK_MSG(worst <= 1 && differ * 100 <= n, "%s: %lld of %lld values differ from the reference, by up to %.2f ulp",
                      RNG_NAMES[k], (long long)differ, (long long)n, worst);
        if (normal) printf("  rng %s: %lld of %lld values differ from the reference (libm Box-Muller), by up to %.2g ulp%s\n", RNG_NAMES[k],
                           (long long)differ, (long long)n, worst, ulp < 1e-10 ? " of max(|x|, 1)" : "");
        free(a);
        free(b);
    }
    tensor_scope_end();
}

/* An initializer on a view draws what it draws on a contiguous tensor of the view's shape, in the
   view's row-major order (it fills a contiguous copy and copies it in). */
TEST(simd_rng_initializer_on_a_view) {
    tensor_scope_begin();
    tensor *base = tensor_zeros(TENSOR_SHAPE(40, 30), TENSOR_F32), *view = tensor_transpose(base, 0, 1);
    tensor *flat = tensor_zeros(TENSOR_SHAPE(30, 40), TENSOR_F32);
    for (int normal = 0; normal < 2; normal++) {
        tensor_manual_seed(11);
        CHECK(normal ? tensor_normal_(view, 1, 2) != NULL : tensor_uniform_(view, -1, 3) != NULL);
        tensor_manual_seed(11);
        CHECK(normal ? tensor_normal_(flat, 1, 2) != NULL : tensor_uniform_(flat, -1, 3) != NULL);
        CHECK_MSG(test_same_bits(tensor_contiguous(view), flat), "%s_ on a transposed view differs from a contiguous fill", normal ? "normal" : "uniform");
    }
    tensor_scope_end();
}
