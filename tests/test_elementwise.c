/* Tests of the elementwise ops (generator/parts/elementwise.h): every UNARY, UNARY_P, BINARY, SCALAR,
   TERNARY and INPLACE op of ops.def.

   Expected values come from the table of formulas in this file, written in double with libm (never
   the library's own kernels), applied to the inputs as the tested dtype holds them (the inputs are
   read back after conversion, so f16/bf16 rounding of the inputs is not counted as error). Results
   are compared with a tolerance suited to the result dtype (test_tol), integers exactly. Broadcasting
   is re-derived here with plain index arithmetic. */
#include "test.h"
#include <float.h>
#include <stdint.h>

/* ============================================================================================== */
/* helpers                                                                                        */
/* ============================================================================================== */

enum { R_SAME, R_FLOAT, R_BOOL, R_NUM }; /* the dtype rules of ops.def */

static const tensor_dtype FLOATS[4] = {TENSOR_F64, TENSOR_F32, TENSOR_F16, TENSOR_BF16};
static const tensor_dtype INTS[3] = {TENSOR_I32, TENSOR_I64, TENSOR_U8};

static bool isfl(tensor_dtype d) { return d == TENSOR_F32 || d == TENSOR_F64 || d == TENSOR_F16 || d == TENSOR_BF16; }

/* Results whose magnitude reaches this value round to infinity in d (the largest finite value plus
   half an ulp). */
static double overflow_at(tensor_dtype d) {
    switch (d) {
    case TENSOR_F32: return ldexp(1, 128) - ldexp(1, 103);
    case TENSOR_F16: return 65520.0;
    case TENSOR_BF16: return ldexp(1, 128) - ldexp(1, 119);
    default: return INFINITY;
    }
}
/* The smallest subnormal of d: the absolute error a result near 0 may carry. */
static double tiny_of(tensor_dtype d) {
    switch (d) {
    case TENSOR_F32: return ldexp(1, -149);
    case TENSOR_F16: return ldexp(1, -24);
    case TENSOR_BF16: return ldexp(1, -133);
    default: return ldexp(1, -1074);
    }
}
/* An exact result as dtype d holds it, as far as the tolerance does not cover it: overflow. */
static double in_range(double v, tensor_dtype d) { return (v == v && fabs(v) >= overflow_at(d)) ? copysign(INFINITY, v) : v; }

/* Two's-complement narrowing of an exact integer result to d (what PyTorch's integer ops do). */
static int64_t wrap_to(int64_t v, tensor_dtype d) {
    switch (d) {
    case TENSOR_I32: { uint32_t u = (uint32_t)((uint64_t)v & 0xffffffffu); return u >= 0x80000000u ? (int64_t)u - 4294967296LL : (int64_t)u; }
    case TENSOR_U8: return (int64_t)((uint64_t)v & 0xffu);
    case TENSOR_BOOL: return v != 0;
    default: return v;
    }
}

static int64_t numel_of(int nd, const int64_t *s) {
    int64_t n = 1;
    for (int i = 0; i < nd; i++) n *= s[i];
    return n;
}

/* "op(float32, int32)" in one of a few rotating buffers, for messages. */
static const char *label(const char *op, tensor_dtype a, int b) {
    static char bufs[4][96];
    static int next;
    char *buf = bufs[next++ & 3];
    if (b < 0) snprintf(buf, 96, "%s(%s)", op, tensor_dtype_name(a));
    else snprintf(buf, 96, "%s(%s, %s)", op, tensor_dtype_name(a), tensor_dtype_name((tensor_dtype)b));
    return buf;
}

/* t is a tensor of dtype dt whose n elements match want: |got - want| <= atol + rtol |want|, NaN only
   where NaN is expected, infinities exactly, and with zsign the sign of an expected zero. */
static void check_floats_(const char *file, int line, const char *what, tensor *t, tensor_dtype dt, const double *want, int64_t n,
                          double rtol, double atol, bool zsign) {
    if (!t) { test_fail(file, line, "%s: NULL result (%s)", what, tensor_last_error() ? tensor_last_error() : "no error"); return; }
    if (tensor_get_dtype(t) != dt) { test_fail(file, line, "%s: result dtype %s, expected %s", what, tensor_dtype_name(tensor_get_dtype(t)), tensor_dtype_name(dt)); return; }
    if (tensor_numel(t) != n) { test_fail(file, line, "%s: numel %lld, expected %lld", what, (long long)tensor_numel(t), (long long)n); return; }
    double *v = test_values(t);
    int bad = 0;
    for (int64_t i = 0; i < n && bad < 5; i++) {
        double g = v[i], w = want[i];
        bool ok;
        if (w != w) ok = g != g;
        else if (isinf(w)) ok = g == w;
        else ok = g == w || fabs(g - w) <= atol + rtol * fabs(w);
        if (ok && zsign && w == 0 && g == 0 && (signbit(g) != 0) != (signbit(w) != 0)) ok = false;
        if (!ok) { test_fail(file, line, "%s: element %lld: got %.17g, expected %.17g", what, (long long)i, g, w); bad++; }
    }
    free(v);
}
#define CHECK_FLOATS(what, t, dt, want, n, rtol, atol, zsign) check_floats_(__FILE__, __LINE__, what, t, dt, want, n, rtol, atol, zsign)

/* Every element of t as int64 (exact for i64, unlike doubles). */
static int64_t *ivals(tensor *t) {
    int64_t n = tensor_numel(t);
    int64_t *v = (int64_t *)malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
    tensor *c = tensor_to_dtype(t, TENSOR_I64);
    if (!c || tensor_copy_to(c, v, sizeof(int64_t) * (size_t)n) != 0)
        for (int64_t i = 0; i < n; i++) v[i] = INT64_MIN + 12345;
    tensor_free(c);
    return v;
}

/* t is a tensor of dtype dt holding exactly want. */
static void check_ints_(const char *file, int line, const char *what, tensor *t, tensor_dtype dt, const int64_t *want, int64_t n) {
    if (!t) { test_fail(file, line, "%s: NULL result (%s)", what, tensor_last_error() ? tensor_last_error() : "no error"); return; }
    if (tensor_get_dtype(t) != dt) { test_fail(file, line, "%s: result dtype %s, expected %s", what, tensor_dtype_name(tensor_get_dtype(t)), tensor_dtype_name(dt)); return; }
    if (tensor_numel(t) != n) { test_fail(file, line, "%s: numel %lld, expected %lld", what, (long long)tensor_numel(t), (long long)n); return; }
    int64_t *v = ivals(t);
    int bad = 0;
    for (int64_t i = 0; i < n && bad < 5; i++)
        if (v[i] != want[i]) { test_fail(file, line, "%s: element %lld: got %lld, expected %lld", what, (long long)i, (long long)v[i], (long long)want[i]); bad++; }
    free(v);
}
#define CHECK_INTS(what, t, dt, want, n) check_ints_(__FILE__, __LINE__, what, t, dt, want, n)

/* The last error names fn and contains text. */
static void check_error_has_(const char *file, int line, const char *fn, const char *text) {
    const char *m = tensor_last_error();
    if (!m || !strstr(m, fn) || !strstr(m, text)) test_fail(file, line, "error message '%s' should name %s and say '%s'", m ? m : "(none)", fn, text);
}
#define CHECK_ERROR_HAS(fn, text) check_error_has_(__FILE__, __LINE__, fn, text)

static tensor *from_ints(tensor_dtype d, int nd, const int64_t *shape, const int64_t *v) {
    tensor *t = tensor_from_data(v, nd, shape, TENSOR_I64);
    return tensor_to_dtype(t, d);
}

static int64_t rand_int(int64_t lo, int64_t hi) {
    int64_t r = lo + (int64_t)floor(test_uniform(0, (double)(hi - lo + 1)));
    return r > hi ? hi : r;
}

/* An integer range narrowed to what dtype d holds. */
static void int_range(tensor_dtype d, int64_t *lo, int64_t *hi) {
    if (d == TENSOR_U8) { if (*lo < 0) *lo = 0; if (*hi > 255) *hi = 255; if (*hi < *lo) *hi = *lo; }
    if (d == TENSOR_BOOL) { *lo = 0; *hi = 1; }
}

/* The broadcast shape of a and b (NumPy rules), derived here; -1 if they clash. */
static int bshape(int na, const int64_t *a, int nb, const int64_t *b, int64_t *out) {
    int n = na > nb ? na : nb;
    for (int i = 0; i < n; i++) {
        int64_t da = i < n - na ? 1 : a[i - (n - na)], db = i < n - nb ? 1 : b[i - (n - nb)];
        if (da != db && da != 1 && db != 1) return -1;
        out[i] = da == 1 ? db : da;
    }
    return n;
}
/* The row-major flat index into an operand of shape s (ns dims) that output element `flat` of
   shape os (no dims) reads under broadcasting. */
static int64_t bindex(int no, const int64_t *os, int64_t flat, int ns, const int64_t *s) {
    int64_t idx = 0, stride = 1;
    for (int d = no - 1; d >= 0; d--) {
        int64_t i = flat % os[d];
        flat /= os[d];
        int sd = d - (no - ns);
        if (sd >= 0) {
            if (s[sd] != 1) idx += i * stride;
            stride *= s[sd];
        }
    }
    return idx;
}

/* ============================================================================================== */
/* the formulas                                                                                   */
/* ============================================================================================== */

static double r_neg(double x) { return -x; }
static double r_abs(double x) { return fabs(x); }
static double r_sign(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : x; } /* NaN stays NaN (NumPy); PyTorch gives 0 */
static double r_sqrt(double x) { return sqrt(x); }
static double r_rsqrt(double x) { return 1.0 / sqrt(x); }
static double r_square(double x) { return x * x; }
static double r_reciprocal(double x) { return 1.0 / x; }
static double r_exp(double x) { return exp(x); }
static double r_exp2(double x) { return pow(2.0, x); }
static double r_expm1(double x) { return expm1(x); }
static double r_log(double x) { return log(x); }
static double r_log2(double x) { return log(x) / M_LN2; }
static double r_log1p(double x) { return log1p(x); }
static double r_sin(double x) { return sin(x); }
static double r_cos(double x) { return cos(x); }
static double r_tan(double x) { return tan(x); }
static double r_asin(double x) { return asin(x); }
static double r_acos(double x) { return acos(x); }
static double r_atan(double x) { return atan(x); }
static double r_sinh(double x) { return sinh(x); }
static double r_cosh(double x) { return cosh(x); }
static double r_tanh(double x) { return tanh(x); }
static double r_asinh(double x) { return asinh(x); }
static double r_acosh(double x) { return acosh(x); }
static double r_atanh(double x) { return atanh(x); }
static double r_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }
static double r_logsigmoid(double x) { return (x < 0 ? x : 0.0) - log1p(exp(-fabs(x))); }
static double r_relu(double x) { return x != x ? x : x > 0 ? x : 0.0; }
static double r_relu6(double x) { return x != x ? x : x < 0 ? 0.0 : x > 6 ? 6.0 : x; }
/* gelu without the cancellation of 1 + erf(..) and 1 + tanh(..) below -5 (the library's formulas avoid it too) */
static double r_gelu(double x) { return 0.5 * x * erfc(-x / sqrt(2.0)); }
static double r_gelu_tanh(double x) { return x / (1.0 + exp(-2.0 * sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x))); }
static double r_silu(double x) { return x * r_sigmoid(x); }
static double r_mish(double x) { return x * tanh(log1p(exp(x))); }
static double r_softplus(double x) { return x > 20 ? x : log1p(exp(x)); } /* beta 1, threshold 20 */
static double r_erf(double x) { return erf(x); }
static double r_floor(double x) { return floor(x); }
static double r_ceil(double x) { return ceil(x); }
static double r_trunc(double x) { return trunc(x); }
static double r_round(double x) { /* half to even, keeping the sign of a zero */
    if (!isfinite(x)) return x;
    double f = floor(x), d = x - f, r;
    if (d > 0.5) r = f + 1;
    else if (d < 0.5) r = f;
    else r = fmod(f, 2.0) == 0 ? f : f + 1;
    return r == 0 ? copysign(0.0, x) : r;
}
static double r_logical_not(double x) { return x == 0; }
static double r_isnan(double x) { return x != x; }
static double r_isinf(double x) { return x == INFINITY || x == -INFINITY; }

static int64_t i_neg(int64_t x) { return (int64_t)(0 - (uint64_t)x); }
static int64_t i_abs(int64_t x) { return x < 0 ? i_neg(x) : x; }
static int64_t i_sign(int64_t x) { return x > 0 ? 1 : x < 0 ? -1 : 0; }
static int64_t i_square(int64_t x) { return (int64_t)((uint64_t)x * (uint64_t)x); }
static int64_t i_relu(int64_t x) { return x < 0 ? 0 : x; }
static int64_t i_relu6(int64_t x) { return x < 0 ? 0 : x > 6 ? 6 : x; }
static int64_t i_ident(int64_t x) { return x; }

typedef struct {
    const char *name;
    tensor *(*fn)(tensor *);
    double (*ref)(double);
    int64_t (*iref)(int64_t); /* the integer formula of SAME and NUM ops, NULL for the others */
    int rule;
    double lo, hi;            /* the sweep range */
    bool zsign;               /* the sign of a zero result is fixed (IEEE/libm): checked */
} unary_case;

#define U(name, rule, iref, lo, hi, zsign) {#name, tensor_##name, r_##name, iref, rule, lo, hi, zsign}
static const unary_case UNARY[] = {
    U(neg, R_NUM, i_neg, -10, 10, true),
    U(abs, R_NUM, i_abs, -10, 10, true),
    U(sign, R_SAME, i_sign, -10, 10, false),
    U(sqrt, R_FLOAT, NULL, 0, 100, true),
    U(rsqrt, R_FLOAT, NULL, 0.01, 100, false),
    U(square, R_SAME, i_square, -10, 10, false),
    U(reciprocal, R_FLOAT, NULL, -10, 10, true),
    U(exp, R_FLOAT, NULL, -10, 10, false),
    U(exp2, R_FLOAT, NULL, -10, 10, false),
    U(expm1, R_FLOAT, NULL, -10, 10, true),
    U(log, R_FLOAT, NULL, 0.001, 100, false),
    U(log2, R_FLOAT, NULL, 0.001, 100, false),
    U(log1p, R_FLOAT, NULL, -0.999, 100, true),
    U(sin, R_FLOAT, NULL, -10, 10, true),
    U(cos, R_FLOAT, NULL, -10, 10, false),
    U(tan, R_FLOAT, NULL, -1.5, 1.5, true),
    U(asin, R_FLOAT, NULL, -1, 1, true),
    U(acos, R_FLOAT, NULL, -1, 1, false),
    U(atan, R_FLOAT, NULL, -10, 10, true),
    U(sinh, R_FLOAT, NULL, -5, 5, true),
    U(cosh, R_FLOAT, NULL, -5, 5, false),
    U(tanh, R_FLOAT, NULL, -10, 10, true),
    U(asinh, R_FLOAT, NULL, -10, 10, true),
    U(acosh, R_FLOAT, NULL, 1, 10, false),
    U(atanh, R_FLOAT, NULL, -0.999, 0.999, true),
    U(sigmoid, R_FLOAT, NULL, -20, 20, false),
    U(logsigmoid, R_FLOAT, NULL, -30, 30, false),
    U(relu, R_NUM, i_relu, -10, 10, false),
    U(relu6, R_NUM, i_relu6, -10, 10, false),
    U(gelu, R_FLOAT, NULL, -6, 6, false),
    U(gelu_tanh, R_FLOAT, NULL, -6, 6, false),
    U(silu, R_FLOAT, NULL, -20, 20, false),
    U(mish, R_FLOAT, NULL, -20, 20, false),
    U(softplus, R_FLOAT, NULL, -30, 30, false),
    U(erf, R_FLOAT, NULL, -4, 4, true),
    U(floor, R_SAME, i_ident, -10, 10, true),
    U(ceil, R_SAME, i_ident, -10, 10, true),
    U(round, R_SAME, i_ident, -10, 10, true),
    U(trunc, R_SAME, i_ident, -10, 10, true),
    U(logical_not, R_BOOL, NULL, -2, 2, false),
    U(isnan, R_BOOL, NULL, -10, 10, false),
    U(isinf, R_BOOL, NULL, -10, 10, false),
};
#define N_UNARY ((int)(sizeof UNARY / sizeof UNARY[0]))

/* Values every unary op sees besides its sweep: zeros of both signs, infinities, NaN, halves (for
   round), the domain edges of the inverse functions and tiny values (for expm1, log1p). */
static const double SPECIALS[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1.0, -1.0, 0.5, -0.5, 1.5, -1.5, 2.5, -2.5,
                                  3.0, -3.0, 20.0, 20.5, 1e-10, -1e-10, 7.0, 100.0};
#define N_SPECIALS ((int)(sizeof SPECIALS / sizeof SPECIALS[0]))
#define N_SWEEP 48

/* The sweep of [lo, hi] (evenly spaced, then random) followed by the special values. */
static int sweep(double lo, double hi, double *out) {
    int n = 0;
    for (int i = 0; i < N_SWEEP / 2; i++) out[n++] = lo + (hi - lo) * i / (N_SWEEP / 2 - 1);
    for (int i = 0; i < N_SWEEP / 2; i++) out[n++] = test_uniform(lo, hi);
    for (int i = 0; i < N_SPECIALS; i++) out[n++] = SPECIALS[i];
    return n;
}

/* The dtype a unary op of this rule gives for input dtype d (the rules of ops.def, re-stated). */
static tensor_dtype unary_out(int rule, tensor_dtype d) {
    if (rule == R_BOOL) return TENSOR_BOOL;
    if (rule == R_FLOAT && !isfl(d)) return TENSOR_F32;
    return d;
}

/* u applied to a floating tensor of dtype d, shape `shape`, holding in (row-major). */
static void run_unary_floats(const unary_case *u, tensor_dtype d, int nd, const int64_t *shape, const double *in) {
    int64_t n = numel_of(nd, shape);
    tensor *x = test_tensor(d, nd, shape, in);
    double *xs = test_values(x); /* the inputs as d holds them */
    double *want = (double *)malloc(sizeof(double) * (size_t)(n ? n : 1));
    tensor_dtype od = unary_out(u->rule, d);
    for (int64_t i = 0; i < n; i++) want[i] = in_range(u->ref(xs[i]), od);
    tensor *y = u->fn(x);
    if (od == TENSOR_BOOL) CHECK_FLOATS(label(u->name, d, -1), y, od, want, n, 0, 0, false);
    else CHECK_FLOATS(label(u->name, d, -1), y, od, want, n, test_tol(od), tiny_of(od), u->zsign);
    if (y) CHECK_SHAPE(y, nd, shape);
    free(xs);
    free(want);
    tensor_free(x);
    tensor_free(y);
}

/* u applied to an integer or bool tensor of dtype d holding in. */
static void run_unary_ints(const unary_case *u, tensor_dtype d, int64_t n, const int64_t *in) {
    tensor *x = from_ints(d, 1, &n, in);
    int64_t *xs = ivals(x);
    tensor_dtype od = unary_out(u->rule, d);
    if (!strcmp(u->name, "square") && d == TENSOR_BOOL) od = TENSOR_I64; /* PyTorch: bool squares to int64 */
    tensor *y = u->fn(x);
    if (u->rule == R_NUM && d == TENSOR_BOOL) {
        CHECK_MSG(y == NULL, "%s should refuse bool", label(u->name, d, -1));
        tensor_clear_error();
    } else if (isfl(od)) {
        double *want = (double *)malloc(sizeof(double) * (size_t)n);
        for (int64_t i = 0; i < n; i++) want[i] = in_range(u->ref((double)xs[i]), od);
        CHECK_FLOATS(label(u->name, d, -1), y, od, want, n, test_tol(od), tiny_of(od), false);
        free(want);
    } else {
        int64_t *want = (int64_t *)malloc(sizeof(int64_t) * (size_t)n);
        for (int64_t i = 0; i < n; i++) want[i] = wrap_to(u->iref ? u->iref(xs[i]) : (int64_t)u->ref((double)xs[i]), od);
        CHECK_INTS(label(u->name, d, -1), y, od, want, n);
        free(want);
    }
    free(xs);
    tensor_free(x);
    tensor_free(y);
}

/* Integer inputs of dtype d: a random part and the extremes d holds. */
static int64_t int_inputs(tensor_dtype d, int64_t *v) {
    int64_t n = 0;
    if (d == TENSOR_BOOL) { v[n++] = 0; v[n++] = 1; v[n++] = 1; v[n++] = 0; return n; }
    int64_t lo = -100, hi = 100;
    int_range(d, &lo, &hi);
    for (int i = 0; i < 40; i++) v[n++] = rand_int(lo, hi);
    static const int64_t small[] = {0, 1, 2, 5, 6, 7};
    for (int i = 0; i < 6; i++) v[n++] = small[i];
    if (d == TENSOR_U8) { v[n++] = 254; v[n++] = 255; return n; }
    v[n++] = -1; v[n++] = -7;
    if (d == TENSOR_I32) { v[n++] = INT32_MAX; v[n++] = INT32_MIN; v[n++] = INT32_MIN + 1; v[n++] = 46341; }
    if (d == TENSOR_I64) {
        v[n++] = INT64_MAX; v[n++] = INT64_MIN; v[n++] = INT64_MIN + 1;
        v[n++] = ((int64_t)1 << 53) + 1; v[n++] = -((int64_t)1 << 53) - 1; v[n++] = (int64_t)1 << 40;
    }
    return n;
}

/* ============================================================================================== */
/* unary ops                                                                                      */
/* ============================================================================================== */

TEST(ew_unary_float_dtypes_sweep_and_special_values) {
    double in[N_SWEEP + N_SPECIALS];
    for (int k = 0; k < N_UNARY; k++)
        for (int di = 0; di < 4; di++) {
            int64_t n = sweep(UNARY[k].lo, UNARY[k].hi, in);
            run_unary_floats(&UNARY[k], FLOATS[di], 1, &n, in);
        }
}

TEST(ew_unary_shapes_0dim_zero_size_3d_long) {
    static const int nds[5] = {0, 1, 3, 3, 1};
    static const int64_t shapes[5][3] = {{0, 0, 0}, {0, 0, 0}, {2, 0, 3}, {2, 3, 4}, {1027, 0, 0}};
    double *in = (double *)malloc(sizeof(double) * 1027);
    for (int k = 0; k < N_UNARY; k++)
        for (int s = 0; s < 5; s++) {
            int64_t n = numel_of(nds[s], shapes[s]);
            for (int64_t i = 0; i < n; i++) in[i] = test_uniform(UNARY[k].lo, UNARY[k].hi);
            run_unary_floats(&UNARY[k], TENSOR_F32, nds[s], shapes[s], in);
            run_unary_floats(&UNARY[k], TENSOR_F64, nds[s], shapes[s], in);
        }
    free(in);
}

/* FLOAT ops give f32 for integer and bool inputs; SAME and NUM ops keep the integer dtype (with
   two's-complement wrap); BOOL ops give bool; NUM ops refuse bool. */
TEST(ew_unary_integer_and_bool_dtypes) {
    static const tensor_dtype dts[4] = {TENSOR_I32, TENSOR_I64, TENSOR_U8, TENSOR_BOOL};
    int64_t in[80];
    for (int k = 0; k < N_UNARY; k++)
        for (int di = 0; di < 4; di++) {
            int64_t n = int_inputs(dts[di], in);
            run_unary_ints(&UNARY[k], dts[di], n, in);
        }
}

TEST(ew_unary_result_dtypes) {
    tensor *i = tensor_ones(TENSOR_SHAPE(2), TENSOR_I32);
    tensor *b = tensor_ones(TENSOR_SHAPE(2), TENSOR_BOOL);
    tensor *h = tensor_ones(TENSOR_SHAPE(2), TENSOR_F16);
    CHECK(tensor_get_dtype(tensor_exp(i)) == TENSOR_F32);
    CHECK(tensor_get_dtype(tensor_exp(tensor_ones(TENSOR_SHAPE(2), TENSOR_I64))) == TENSOR_F32);
    CHECK(tensor_get_dtype(tensor_sqrt(b)) == TENSOR_F32);
    CHECK(tensor_get_dtype(tensor_exp(h)) == TENSOR_F16);
    CHECK(tensor_get_dtype(tensor_neg(i)) == TENSOR_I32);
    CHECK(tensor_get_dtype(tensor_floor(i)) == TENSOR_I32);
    CHECK(tensor_get_dtype(tensor_sign(b)) == TENSOR_BOOL);
    CHECK(tensor_get_dtype(tensor_isnan(h)) == TENSOR_BOOL);
    CHECK(tensor_get_dtype(tensor_logical_not(i)) == TENSOR_BOOL);
    CHECK(tensor_neg(b) == NULL);
    CHECK_ERROR_HAS("tensor_neg", "bool");
    tensor_clear_error();
}

TEST(ew_unary_specific_values) {
    /* round: half to even */
    double rin[10] = {0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 0.49999999999999994, 4503599627370497.0, -0.0, 3.5};
    double rwant[10] = {0, 2, 2, -0.0, -2, -2, 0, 4503599627370497.0, -0.0, 4};
    tensor *r = tensor_round(tensor_from_data(rin, TENSOR_SHAPE(10), TENSOR_F64));
    CHECK_FLOATS("round", r, TENSOR_F64, rwant, 10, 0, 0, true);
    /* neg of +0 is -0; abs of -0 is +0 */
    double zin[2] = {0.0, -0.0}, nwant[2] = {-0.0, 0.0}, awant[2] = {0.0, 0.0};
    tensor *z = tensor_from_data(zin, TENSOR_SHAPE(2), TENSOR_F64);
    CHECK_FLOATS("neg", tensor_neg(z), TENSOR_F64, nwant, 2, 0, 0, true);
    CHECK_FLOATS("abs", tensor_abs(z), TENSOR_F64, awant, 2, 0, 0, true);
    /* accuracy near 0 of expm1 and log1p, which exp(x)-1 and log(1+x) would lose */
    double tin[2] = {1e-10, -3e-12};
    double ewant[2] = {1.00000000005e-10, -2.9999999999955e-12}, lwant[2] = {9.9999999995e-11, -3.0000000000045e-12};
    tensor *t = tensor_from_data(tin, TENSOR_SHAPE(2), TENSOR_F64);
    CHECK_FLOATS("expm1", tensor_expm1(t), TENSOR_F64, ewant, 2, 1e-12, 0, true);
    CHECK_FLOATS("log1p", tensor_log1p(t), TENSOR_F64, lwant, 2, 1e-12, 0, true);
    /* softplus: the threshold 20 gives x itself above it */
    double sin_[3] = {20.5, 19.5, -40};
    double swant[3] = {20.5, 19.5 + log1p(exp(-19.5)), exp(-40)};
    CHECK_FLOATS("softplus", tensor_softplus(tensor_from_data(sin_, TENSOR_SHAPE(3), TENSOR_F64)), TENSOR_F64, swant, 3, 1e-15, 0, false);
    /* logsigmoid stays finite and accurate where log(sigmoid(x)) would give -inf or 0 */
    double lin[2] = {-800, 40};
    double lswant[2] = {-800, -exp(-40)};
    CHECK_FLOATS("logsigmoid", tensor_logsigmoid(tensor_from_data(lin, TENSOR_SHAPE(2), TENSOR_F64)), TENSOR_F64, lswant, 2, 1e-15, 0, false);
    /* sigmoid saturates without NaN */
    double gin[2] = {-800, 800}, gwant[2] = {0, 1};
    CHECK_FLOATS("sigmoid", tensor_sigmoid(tensor_from_data(gin, TENSOR_SHAPE(2), TENSOR_F64)), TENSOR_F64, gwant, 2, 0, 0, false);
    /* integer ops keep i64 exact beyond 2^53 */
    int64_t big[2] = {((int64_t)1 << 62) + 1, -((int64_t)1 << 53) - 1};
    int64_t bneg[2] = {-(((int64_t)1 << 62) + 1), ((int64_t)1 << 53) + 1};
    CHECK_INTS("neg i64", tensor_neg(tensor_from_data(big, TENSOR_SHAPE(2), TENSOR_I64)), TENSOR_I64, bneg, 2);
    CHECK_INTS("floor i64", tensor_floor(tensor_from_data(big, TENSOR_SHAPE(2), TENSOR_I64)), TENSOR_I64, big, 2);
    /* u8 negation wraps, abs of INT32_MIN wraps to itself */
    int64_t u[3] = {1, 0, 200}, uw[3] = {255, 0, 56};
    CHECK_INTS("neg u8", tensor_neg(from_ints(TENSOR_U8, 1, (const int64_t[]){3}, u)), TENSOR_U8, uw, 3);
    int64_t m[1] = {INT32_MIN};
    CHECK_INTS("abs i32 min", tensor_abs(from_ints(TENSOR_I32, 1, (const int64_t[]){1}, m)), TENSOR_I32, m, 1);
}

/* ============================================================================================== */
/* unary ops with parameters                                                                      */
/* ============================================================================================== */

static double r_leaky_relu(double x, double p0, double p1) { (void)p1; return x > 0 ? x : p0 * x; }
static double r_elu(double x, double p0, double p1) { (void)p1; return x > 0 ? x : p0 * expm1(x); }
/* clamp and hardtanh: NaN input stays NaN; a NaN bound is no bound */
static double r_clamp(double x, double lo, double hi) {
    if (x != x) return x;
    double t = (lo == lo && x < lo) ? lo : x;
    return (hi == hi && t > hi) ? hi : t;
}
static int64_t i_clamp(int64_t x, double lo, double hi) {
    int64_t t = (lo == lo && (double)x < lo) ? (int64_t)lo : x;
    return (hi == hi && (double)t > hi) ? (int64_t)hi : t;
}
static tensor *w_leaky_relu(tensor *a, double p0, double p1) { (void)p1; return tensor_leaky_relu(a, p0); }
static tensor *w_elu(tensor *a, double p0, double p1) { (void)p1; return tensor_elu(a, p0); }

typedef struct {
    const char *name;
    tensor *(*fn)(tensor *, double, double);
    double (*ref)(double, double, double);
    int rule;
    double p0, p1;
} param_case;
static const param_case PARAMS[] = {
    {"leaky_relu", w_leaky_relu, r_leaky_relu, R_FLOAT, 0.01, 0},
    {"leaky_relu", w_leaky_relu, r_leaky_relu, R_FLOAT, 0.2, 0},
    {"leaky_relu", w_leaky_relu, r_leaky_relu, R_FLOAT, -0.5, 0},
    {"elu", w_elu, r_elu, R_FLOAT, 1.0, 0},
    {"elu", w_elu, r_elu, R_FLOAT, 0.5, 0},
    {"hardtanh", tensor_hardtanh, r_clamp, R_NUM, -1, 1},
    {"hardtanh", tensor_hardtanh, r_clamp, R_NUM, -2.5, 0.5},
    {"clamp", tensor_clamp, r_clamp, R_NUM, -1, 1},
    {"clamp", tensor_clamp, r_clamp, R_NUM, -3, 5},
    {"clamp", tensor_clamp, r_clamp, R_NUM, NAN, 0.5},
    {"clamp", tensor_clamp, r_clamp, R_NUM, -0.5, NAN},
    {"clamp", tensor_clamp, r_clamp, R_NUM, 2, 1}, /* lo > hi: every element becomes hi, as in PyTorch */
    {"clamp", tensor_clamp, r_clamp, R_NUM, -INFINITY, INFINITY},
};
#define N_PARAMS ((int)(sizeof PARAMS / sizeof PARAMS[0]))

static bool integral_or_nonfinite(double v) { return v != v || isinf(v) || v == floor(v); }

TEST(ew_unary_params_float_dtypes) {
    double in[N_SWEEP + N_SPECIALS];
    for (int k = 0; k < N_PARAMS; k++)
        for (int di = 0; di < 4; di++) {
            const param_case *p = &PARAMS[k];
            tensor_dtype d = FLOATS[di];
            int64_t n = sweep(-8, 8, in);
            tensor *x = test_tensor(d, 1, &n, in);
            double *xs = test_values(x), want[N_SWEEP + N_SPECIALS];
            for (int64_t i = 0; i < n; i++) want[i] = p->ref(xs[i], p->p0, p->p1);
            tensor *y = p->fn(x, p->p0, p->p1);
            CHECK_FLOATS(label(p->name, d, -1), y, d, want, n, test_tol(d), tiny_of(d), false);
            free(xs);
        }
    /* 0-dim, zero-size and 3-D shapes */
    tensor *s = tensor_scalar(-2, TENSOR_F32);
    tensor *r = tensor_elu(s, 1.0);
    double w = expm1(-2.0);
    CHECK_FLOATS("elu 0-dim", r, TENSOR_F32, &w, 1, 2e-6, 0, false);
    CHECK(tensor_ndim(r) == 0);
    r = tensor_clamp(tensor_zeros(TENSOR_SHAPE(2, 0, 3), TENSOR_F32), -1, 1);
    CHECK_SHAPE(r, 3, (const int64_t[]){2, 0, 3});
    double v24[24], w24[24];
    for (int i = 0; i < 24; i++) { v24[i] = i - 12; w24[i] = v24[i] > 0 ? v24[i] : 0.1 * v24[i]; }
    r = tensor_leaky_relu(tensor_from_data(v24, TENSOR_SHAPE(2, 3, 4), TENSOR_F64), 0.1);
    CHECK_FLOATS("leaky_relu 3-d", r, TENSOR_F64, w24, 24, 1e-15, 0, false);
    CHECK_SHAPE(r, 3, (const int64_t[]){2, 3, 4});
}

/* clamp keeps integer dtypes for integral (or NaN/infinite) bounds and computes in f32 for a
   fractional one; hardtanh keeps them always, its bounds truncated (u8 refuses negative ones); leaky_relu and elu give f32 for integers; bool is refused by the NUM ones. */
TEST(ew_unary_params_integer_and_bool_dtypes) {
    static const tensor_dtype dts[4] = {TENSOR_I32, TENSOR_I64, TENSOR_U8, TENSOR_BOOL};
    int64_t in[80];
    for (int k = 0; k < N_PARAMS; k++)
        for (int di = 0; di < 4; di++) {
            const param_case *p = &PARAMS[k];
            tensor_dtype d = dts[di];
            int64_t n = int_inputs(d, in);
            tensor *x = from_ints(d, 1, &n, in);
            int64_t *xs = ivals(x);
            tensor *y = p->fn(x, p->p0, p->p1);
            const char *what = label(p->name, d, -1);
            if (p->rule == R_NUM && d == TENSOR_BOOL) {
                CHECK_MSG(y == NULL, "%s should refuse bool", what);
                tensor_clear_error();
            } else if (!strcmp(p->name, "hardtanh") && d == TENSOR_U8 && (p->p0 < 0 || p->p1 < 0)) {
                CHECK_MSG(y == NULL, "%s should refuse negative limits", what); /* PyTorch */
                tensor_clear_error();
            } else if (!strcmp(p->name, "hardtanh")) { /* keeps the integer dtype, bounds truncated (PyTorch) */
                int64_t want[80];
                for (int64_t i = 0; i < n; i++) want[i] = wrap_to(i_clamp(xs[i], trunc(p->p0), trunc(p->p1)), d);
                CHECK_INTS(what, y, d, want, n);
            } else if (p->rule == R_NUM && integral_or_nonfinite(p->p0) && integral_or_nonfinite(p->p1)) {
                int64_t want[80];
                for (int64_t i = 0; i < n; i++) want[i] = wrap_to(i_clamp(xs[i], p->p0, p->p1), d);
                CHECK_INTS(what, y, d, want, n);
            } else {
                double want[80];
                for (int64_t i = 0; i < n; i++) want[i] = in_range(p->ref((double)(float)xs[i], p->p0, p->p1), TENSOR_F32);
                CHECK_FLOATS(what, y, TENSOR_F32, want, n, test_tol(TENSOR_F32), tiny_of(TENSOR_F32), false);
            }
            free(xs);
        }
    int64_t big[3] = {INT64_MIN, 5, INT64_MAX}, bw[3] = {-((int64_t)1 << 40), 5, (int64_t)1 << 40};
    tensor *r = tensor_clamp(tensor_from_data(big, TENSOR_SHAPE(3), TENSOR_I64), -1099511627776.0, 1099511627776.0);
    CHECK_INTS("clamp i64 2^40", r, TENSOR_I64, bw, 3);
}

/* ============================================================================================== */
/* binary ops                                                                                     */
/* ============================================================================================== */

static double r_add(double x, double y) { return x + y; }
static double r_sub(double x, double y) { return x - y; }
static double r_mul(double x, double y) { return x * y; }
static double r_div(double x, double y) { return x / y; }
static double r_pow(double x, double y) { return pow(x, y); }
static double r_maximum(double x, double y) { return (x != x || y != y) ? NAN : x > y ? x : y; } /* NaN propagates (PyTorch) */
static double r_minimum(double x, double y) { return (x != x || y != y) ? NAN : x < y ? x : y; }
static double r_atan2(double x, double y) { return atan2(x, y); }
static double r_fmod(double x, double y) { return fmod(x, y); }
static double r_eq(double x, double y) { return x == y; }
static double r_ne(double x, double y) { return x != y; }
static double r_lt(double x, double y) { return x < y; }
static double r_le(double x, double y) { return x <= y; }
static double r_gt(double x, double y) { return x > y; }
static double r_ge(double x, double y) { return x >= y; }
static double r_logical_and(double x, double y) { return x != 0 && y != 0; } /* NaN counts as true */
static double r_logical_or(double x, double y) { return x != 0 || y != 0; }

static int64_t i_add(int64_t x, int64_t y) { return (int64_t)((uint64_t)x + (uint64_t)y); }
static int64_t i_sub(int64_t x, int64_t y) { return (int64_t)((uint64_t)x - (uint64_t)y); }
static int64_t i_mul(int64_t x, int64_t y) { return (int64_t)((uint64_t)x * (uint64_t)y); }
/* PyTorch's integer pow: a negative exponent gives what 1 / x^|y| truncates to */
static int64_t i_pow(int64_t x, int64_t y) {
    if (y < 0) return x == 1 ? 1 : x == -1 ? (y % 2 ? -1 : 1) : 0;
    uint64_t r = 1;
    for (int64_t i = 0; i < y; i++) r *= (uint64_t)x;
    return (int64_t)r;
}
static int64_t i_maximum(int64_t x, int64_t y) { return x > y ? x : y; }
static int64_t i_minimum(int64_t x, int64_t y) { return x < y ? x : y; }
static int64_t i_fmod(int64_t x, int64_t y) { return (int64_t)fmod((double)x, (double)y); } /* exact for the small values used */
static int64_t i_eq(int64_t x, int64_t y) { return x == y; }
static int64_t i_ne(int64_t x, int64_t y) { return x != y; }
static int64_t i_lt(int64_t x, int64_t y) { return x < y; }
static int64_t i_le(int64_t x, int64_t y) { return x <= y; }
static int64_t i_gt(int64_t x, int64_t y) { return x > y; }
static int64_t i_ge(int64_t x, int64_t y) { return x >= y; }
static int64_t i_logical_and(int64_t x, int64_t y) { return x != 0 && y != 0; }
static int64_t i_logical_or(int64_t x, int64_t y) { return x != 0 || y != 0; }

typedef struct {
    const char *name;
    tensor *(*fn)(tensor *, tensor *);
    double (*ref)(double, double);
    int64_t (*iref)(int64_t, int64_t); /* the integer formula; NULL for FLOAT ops */
    int rule;
    double lo, hi, blo, bhi;           /* float sweep ranges of a and b */
    int64_t ilo, ihi, iblo, ibhi;      /* integer sweep ranges of a and b */
    bool small;                        /* floats drawn as small integers (ties for comparisons) */
    bool b_nonzero;                    /* integer b never 0 (fmod) */
    bool zsign;
} binary_case;

#define B(name, iref, rule, lo, hi, blo, bhi, ilo, ihi, iblo, ibhi, small, nz, zsign) \
    {#name, tensor_##name, r_##name, iref, rule, lo, hi, blo, bhi, ilo, ihi, iblo, ibhi, small, nz, zsign}
static const binary_case BINARY[] = {
    B(add, i_add, R_SAME, -10, 10, -10, 10, -1000, 1000, -1000, 1000, false, false, true),
    B(sub, i_sub, R_NUM, -10, 10, -10, 10, -1000, 1000, -1000, 1000, false, false, true),
    B(mul, i_mul, R_SAME, -10, 10, -10, 10, -1000, 1000, -1000, 1000, false, false, true),
    B(div, NULL, R_FLOAT, -10, 10, -10, 10, -20, 20, -3, 3, false, false, true),
    B(pow, i_pow, R_SAME, 0, 4, -3, 3, -6, 6, 0, 9, false, false, false),
    B(maximum, i_maximum, R_SAME, -10, 10, -10, 10, -1000, 1000, -1000, 1000, false, false, false),
    B(minimum, i_minimum, R_SAME, -10, 10, -10, 10, -1000, 1000, -1000, 1000, false, false, false),
    B(atan2, NULL, R_FLOAT, -10, 10, -10, 10, -20, 20, -20, 20, false, false, true),
    B(fmod, i_fmod, R_NUM, -20, 20, -6, 6, -100, 100, -9, 9, false, true, true),
    B(eq, i_eq, R_BOOL, -3, 3, -3, 3, -3, 3, -3, 3, true, false, false),
    B(ne, i_ne, R_BOOL, -3, 3, -3, 3, -3, 3, -3, 3, true, false, false),
    B(lt, i_lt, R_BOOL, -3, 3, -3, 3, -3, 3, -3, 3, true, false, false),
    B(le, i_le, R_BOOL, -3, 3, -3, 3, -3, 3, -3, 3, true, false, false),
    B(gt, i_gt, R_BOOL, -3, 3, -3, 3, -3, 3, -3, 3, true, false, false),
    B(ge, i_ge, R_BOOL, -3, 3, -3, 3, -3, 3, -3, 3, true, false, false),
    B(logical_and, i_logical_and, R_BOOL, -2, 2, -2, 2, -2, 2, -2, 2, true, false, false),
    B(logical_or, i_logical_or, R_BOOL, -2, 2, -2, 2, -2, 2, -2, 2, true, false, false),
};
#define N_BINARY ((int)(sizeof BINARY / sizeof BINARY[0]))

/* torch.promote_types, re-stated: floats win (f64 > f32 > f16/bf16, f16 with bf16 gives f32),
   then i64 > i32 > u8 > bool. */
static tensor_dtype promote(tensor_dtype a, tensor_dtype b) {
    if (a == b) return a;
    if (isfl(a) && isfl(b)) {
        if (a == TENSOR_F64 || b == TENSOR_F64) return TENSOR_F64;
        return TENSOR_F32; /* f32 with f16/bf16, or f16 with bf16 */
    }
    if (isfl(a)) return a;
    if (isfl(b)) return b;
    static const tensor_dtype order[4] = {TENSOR_I64, TENSOR_I32, TENSOR_U8, TENSOR_BOOL};
    for (int i = 0; i < 4; i++) if (a == order[i] || b == order[i]) return order[i];
    return a;
}
/* PyTorch's result_type for two tensors: a 0-dim operand beside a dimensioned one only counts when
   its category (bool < integer < float) is higher. */
static tensor_dtype expect_type(tensor_dtype da, int na, tensor_dtype db, int nb) {
    if ((na == 0) == (nb == 0)) return promote(da, db);
    tensor_dtype dim = na ? da : db, zero = na ? db : da;
    if (isfl(dim)) return dim;
    if (dim == TENSOR_BOOL || isfl(zero)) return promote(dim, zero);
    return dim;
}
static tensor_dtype rule_out(int rule, tensor_dtype common) {
    if (rule == R_BOOL) return TENSOR_BOOL;
    if (rule == R_FLOAT && !isfl(common)) return TENSOR_F32;
    return common;
}

static double draw(const binary_case *c, tensor_dtype d, bool second) {
    if (isfl(d)) {
        double v = second ? test_uniform(c->blo, c->bhi) : test_uniform(c->lo, c->hi);
        return c->small ? floor(v + 0.5) : v;
    }
    int64_t lo = second ? c->iblo : c->ilo, hi = second ? c->ibhi : c->ihi;
    int_range(d, &lo, &hi);
    int64_t v = rand_int(lo, hi);
    if (second && c->b_nonzero && v == 0) v = d == TENSOR_BOOL ? 1 : 7;
    return (double)v;
}

/* c(a, b) for a of dtype da, shape sa and b of dtype db, shape sb, holding av and bv (random draws
   where NULL), against the formula applied under broadcasting. */
static void run_binary(const binary_case *c, tensor_dtype da, int na, const int64_t *sa, const double *av_in,
                       tensor_dtype db, int nb, const int64_t *sb, const double *bv_in) {
    int64_t os[TENSOR_MAX_DIMS];
    int no = bshape(na, sa, nb, sb, os);
    const char *what = label(c->name, da, (int)db);
    if (no < 0) { test_fail(__FILE__, __LINE__, "%s: bad test shapes", what); return; }
    int64_t nA = numel_of(na, sa), nB = numel_of(nb, sb), nO = numel_of(no, os);
    double *av = (double *)malloc(sizeof(double) * (size_t)(nA ? nA : 1)), *bv = (double *)malloc(sizeof(double) * (size_t)(nB ? nB : 1));
    for (int64_t i = 0; i < nA; i++) av[i] = av_in ? av_in[i] : draw(c, da, false);
    for (int64_t i = 0; i < nB; i++) bv[i] = bv_in ? bv_in[i] : draw(c, db, true);
    tensor *a = test_tensor(da, na, sa, av), *b = test_tensor(db, nb, sb, bv);
    tensor *r = c->fn(a, b);
    tensor_dtype common = expect_type(da, na, db, nb), od = rule_out(c->rule, common);
    /* sub refuses any bool operand (PyTorch); the other NUM ops only a bool result type */
    bool refuse = c->rule == R_NUM && (strcmp(c->name, "sub") == 0 ? (da == TENSOR_BOOL || db == TENSOR_BOOL) : common == TENSOR_BOOL);
    if (refuse) {
        CHECK_MSG(r == NULL, "%s should refuse bool", what);
        char fn[64];
        snprintf(fn, sizeof fn, "tensor_%s", c->name);
        if (r == NULL) CHECK_ERROR_HAS(fn, "bool");
        tensor_clear_error();
    } else {
        bool int_compute = !isfl(common);
        double *ar = test_values(a), *br = test_values(b);
        int64_t *ai = int_compute ? ivals(a) : NULL, *bi = int_compute ? ivals(b) : NULL;
        if (isfl(od)) {
            double *want = (double *)malloc(sizeof(double) * (size_t)(nO ? nO : 1));
            for (int64_t o = 0; o < nO; o++) want[o] = in_range(c->ref(ar[bindex(no, os, o, na, sa)], br[bindex(no, os, o, nb, sb)]), od);
            CHECK_FLOATS(what, r, od, want, nO, test_tol(od), tiny_of(od), c->zsign);
            free(want);
        } else {
            int64_t *want = (int64_t *)malloc(sizeof(int64_t) * (size_t)(nO ? nO : 1));
            for (int64_t o = 0; o < nO; o++) {
                int64_t ia = bindex(no, os, o, na, sa), ib = bindex(no, os, o, nb, sb);
                want[o] = int_compute ? wrap_to(c->iref(ai[ia], bi[ib]), od) : (int64_t)c->ref(ar[ia], br[ib]);
            }
            CHECK_INTS(what, r, od, want, nO);
            free(want);
        }
        if (r) CHECK_SHAPE(r, no, os);
        free(ar);
        free(br);
        free(ai);
        free(bi);
    }
    free(av);
    free(bv);
    tensor_free(a);
    tensor_free(b);
    tensor_free(r);
}

typedef struct { int na; int64_t sa[3]; int nb; int64_t sb[3]; } shape_pair;
static const shape_pair SHAPES[] = {
    {1, {37}, 1, {37}},           /* 1-D */
    {2, {5, 7}, 2, {5, 7}},       /* 2-D */
    {3, {2, 3, 4}, 3, {2, 3, 4}}, /* 3-D */
    {3, {2, 3, 4}, 1, {4}},       /* broadcasting a row */
    {1, {4}, 3, {2, 3, 4}},
    {2, {3, 1}, 2, {1, 4}},       /* both ways */
    {3, {2, 1, 4}, 2, {3, 1}},
    {0, {0}, 1, {5}},             /* 0-dim with [5] */
    {1, {5}, 0, {0}},
    {0, {0}, 0, {0}},             /* 0-dim with 0-dim */
    {1, {1027}, 1, {1027}},       /* long, odd length */
    {1, {1027}, 1, {1}},
    {2, {0, 3}, 1, {3}},          /* zero-size */
    {1, {0}, 1, {1}},
    {3, {2, 0, 3}, 3, {1, 1, 3}},
};
#define N_SHAPES ((int)(sizeof SHAPES / sizeof SHAPES[0]))

TEST(ew_binary_float_dtypes_shapes_broadcasting) {
    for (int k = 0; k < N_BINARY; k++)
        for (int di = 0; di < 4; di++)
            for (int s = 0; s < N_SHAPES; s++)
                run_binary(&BINARY[k], FLOATS[di], SHAPES[s].na, SHAPES[s].sa, NULL, FLOATS[di], SHAPES[s].nb, SHAPES[s].sb, NULL);
}

/* Every pair of special values: a [8, 1] against b [1, 8]. */
TEST(ew_binary_special_values) {
    static const double sp[8] = {0.0, -0.0, 1.0, -2.5, 3.0, INFINITY, -INFINITY, NAN};
    for (int k = 0; k < N_BINARY; k++)
        for (int di = 0; di < 4; di++)
            run_binary(&BINARY[k], FLOATS[di], 2, (const int64_t[]){8, 1}, sp, FLOATS[di], 2, (const int64_t[]){1, 8}, sp);
}

TEST(ew_binary_integer_and_bool_dtypes) {
    static const tensor_dtype dts[4] = {TENSOR_I32, TENSOR_I64, TENSOR_U8, TENSOR_BOOL};
    static const int pick[5] = {0, 3, 5, 7, 10};
    for (int k = 0; k < N_BINARY; k++)
        for (int di = 0; di < 4; di++)
            for (int s = 0; s < 5; s++) {
                const shape_pair *p = &SHAPES[pick[s]];
                run_binary(&BINARY[k], dts[di], p->na, p->sa, NULL, dts[di], p->nb, p->sb, NULL);
            }
}

/* Every pair of dtypes, dimensioned and 0-dim: PyTorch's promotion decides the result dtype. */
TEST(ew_binary_mixed_dtypes_promotion) {
    static const int64_t s6[1] = {6};
    for (int k = 0; k < N_BINARY; k++)
        for (int da = 0; da < TENSOR_DTYPE_COUNT; da++)
            for (int db = 0; db < TENSOR_DTYPE_COUNT; db++) {
                run_binary(&BINARY[k], (tensor_dtype)da, 1, s6, NULL, (tensor_dtype)db, 1, s6, NULL);
                run_binary(&BINARY[k], (tensor_dtype)da, 1, s6, NULL, (tensor_dtype)db, 0, NULL, NULL);
                run_binary(&BINARY[k], (tensor_dtype)da, 0, NULL, NULL, (tensor_dtype)db, 1, s6, NULL);
            }
}

/* The result dtypes the task names, spelled out. */
TEST(ew_binary_result_dtype_table) {
    tensor *i32 = tensor_ones(TENSOR_SHAPE(3), TENSOR_I32), *i64 = tensor_ones(TENSOR_SHAPE(3), TENSOR_I64);
    tensor *u8 = tensor_ones(TENSOR_SHAPE(3), TENSOR_U8), *bl = tensor_ones(TENSOR_SHAPE(3), TENSOR_BOOL);
    tensor *f16 = tensor_ones(TENSOR_SHAPE(3), TENSOR_F16), *bf = tensor_ones(TENSOR_SHAPE(3), TENSOR_BF16);
    tensor *f32 = tensor_ones(TENSOR_SHAPE(3), TENSOR_F32), *f64 = tensor_ones(TENSOR_SHAPE(3), TENSOR_F64);
    tensor *f64s = tensor_scalar(1, TENSOR_F64), *i64s = tensor_scalar(1, TENSOR_I64), *f32s = tensor_scalar(1, TENSOR_F32);
    CHECK(tensor_get_dtype(tensor_add(i32, i64)) == TENSOR_I64);
    CHECK(tensor_get_dtype(tensor_add(i32, u8)) == TENSOR_I32);
    CHECK(tensor_get_dtype(tensor_add(u8, bl)) == TENSOR_U8);
    CHECK(tensor_get_dtype(tensor_add(bl, bl)) == TENSOR_BOOL);
    CHECK(tensor_get_dtype(tensor_mul(bl, bl)) == TENSOR_BOOL);
    CHECK(tensor_get_dtype(tensor_add(f16, bf)) == TENSOR_F32);
    CHECK(tensor_get_dtype(tensor_add(f32, f64)) == TENSOR_F64);
    CHECK(tensor_get_dtype(tensor_add(i32, f16)) == TENSOR_F16);
    CHECK(tensor_get_dtype(tensor_add(f32, f64s)) == TENSOR_F32);   /* 0-dim of the same category: ignored */
    CHECK(tensor_get_dtype(tensor_add(i32, i64s)) == TENSOR_I32);
    CHECK(tensor_get_dtype(tensor_add(i32, f64s)) == TENSOR_F64);   /* 0-dim of a higher category counts */
    CHECK(tensor_get_dtype(tensor_add(f16, f32s)) == TENSOR_F16);
    CHECK(tensor_get_dtype(tensor_div(i32, i32)) == TENSOR_F32);    /* true division */
    CHECK(tensor_get_dtype(tensor_div(i64, u8)) == TENSOR_F32);
    CHECK(tensor_get_dtype(tensor_div(f64, i32)) == TENSOR_F64);
    CHECK(tensor_get_dtype(tensor_atan2(bl, bl)) == TENSOR_F32);
    CHECK(tensor_get_dtype(tensor_eq(f32, i32)) == TENSOR_BOOL);
    CHECK(tensor_get_dtype(tensor_logical_and(f16, u8)) == TENSOR_BOOL);
    CHECK(tensor_get_dtype(tensor_maximum(u8, i32)) == TENSOR_I32);
    CHECK(tensor_get_dtype(tensor_pow(i32, i32)) == TENSOR_I32);
    CHECK(tensor_get_dtype(tensor_fmod(i64, i32)) == TENSOR_I64);
    CHECK(tensor_sub(bl, bl) == NULL);                              /* NUM ops refuse bool */
    CHECK_ERROR_HAS("tensor_sub", "bool");
    tensor_clear_error();
    CHECK(tensor_sub(i32, bl) == NULL);                             /* ... any bool operand, as PyTorch's sub */
    tensor_clear_error();
    CHECK(tensor_fmod(bl, bl) == NULL);
    tensor_clear_error();
}

TEST(ew_binary_integer_overflow_wraps) {
    int64_t a32[4] = {INT32_MAX, INT32_MIN, 65536, 46341}, b32[4] = {1, 1, 65536, 46341};
    tensor *a = from_ints(TENSOR_I32, 1, (const int64_t[]){4}, a32), *b = from_ints(TENSOR_I32, 1, (const int64_t[]){4}, b32);
    int64_t add_w[4] = {INT32_MIN, INT32_MIN + 1, 131072, 92682};
    int64_t sub_w[4] = {INT32_MAX - 1, INT32_MAX, 0, 0};
    int64_t mul_w[4] = {INT32_MAX, INT32_MIN, 0, -2147479015};
    CHECK_INTS("add i32 wrap", tensor_add(a, b), TENSOR_I32, add_w, 4);
    CHECK_INTS("sub i32 wrap", tensor_sub(a, b), TENSOR_I32, sub_w, 4);
    CHECK_INTS("mul i32 wrap", tensor_mul(a, b), TENSOR_I32, mul_w, 4);
    int64_t one = 1, m = INT32_MIN;
    CHECK_INTS("i32 max + 1", tensor_add(from_ints(TENSOR_I32, 1, (const int64_t[]){1}, (const int64_t[]){INT32_MAX}), from_ints(TENSOR_I32, 0, NULL, &one)), TENSOR_I32, &m, 1);
    CHECK_INTS("sub i32 min - 1", tensor_sub(from_ints(TENSOR_I32, 1, (const int64_t[]){1}, &m), from_ints(TENSOR_I32, 1, (const int64_t[]){1}, &one)),
               TENSOR_I32, (const int64_t[]){INT32_MAX}, 1);
    int64_t a64[2] = {INT64_MAX, INT64_MIN}, b64[2] = {1, -1}, w64[2] = {INT64_MIN, INT64_MAX};
    CHECK_INTS("add i64 wrap", tensor_add(tensor_from_data(a64, TENSOR_SHAPE(2), TENSOR_I64), tensor_from_data(b64, TENSOR_SHAPE(2), TENSOR_I64)), TENSOR_I64, w64, 2);
    int64_t u[3] = {255, 0, 16}, ub[3] = {1, 1, 16}, uadd[3] = {0, 1, 32}, usub[3] = {254, 255, 0}, umul[3] = {255, 0, 0};
    tensor *ua = from_ints(TENSOR_U8, 1, (const int64_t[]){3}, u), *ubt = from_ints(TENSOR_U8, 1, (const int64_t[]){3}, ub);
    CHECK_INTS("add u8 wrap", tensor_add(ua, ubt), TENSOR_U8, uadd, 3);
    CHECK_INTS("sub u8 wrap", tensor_sub(ua, ubt), TENSOR_U8, usub, 3);
    CHECK_INTS("mul u8 wrap", tensor_mul(ua, ubt), TENSOR_U8, umul, 3);
    int64_t p[2] = {2, 3}, e[2] = {31, 41}, pw[2] = {INT32_MIN, wrap_to(i_pow(3, 41), TENSOR_I32)};
    CHECK_INTS("pow i32 wrap", tensor_pow(from_ints(TENSOR_I32, 1, (const int64_t[]){2}, p), from_ints(TENSOR_I32, 1, (const int64_t[]){2}, e)), TENSOR_I32, pw, 2);
    CHECK_INTS("square i32 wrap", tensor_square(from_ints(TENSOR_I32, 1, (const int64_t[]){1}, (const int64_t[]){65536})), TENSOR_I32, (const int64_t[]){0}, 1);
    CHECK_INTS("neg i32 min", tensor_neg(from_ints(TENSOR_I32, 1, (const int64_t[]){1}, &m)), TENSOR_I32, &m, 1);
    CHECK_INTS("add_scalar i32 max + 1", tensor_add_scalar(from_ints(TENSOR_I32, 1, (const int64_t[]){1}, (const int64_t[]){INT32_MAX}), 1), TENSOR_I32, &m, 1);
}

TEST(ew_binary_integer_division_is_true_division) {
    int64_t a[6] = {7, -7, 1, 0, -1, 6}, b[6] = {2, 2, 0, 0, 0, 3};
    double want[6] = {3.5, -3.5, INFINITY, NAN, -INFINITY, 2};
    CHECK_FLOATS("div i32", tensor_div(from_ints(TENSOR_I32, 1, (const int64_t[]){6}, a), from_ints(TENSOR_I32, 1, (const int64_t[]){6}, b)), TENSOR_F32, want, 6, 0, 0, false);
    CHECK_FLOATS("div i64", tensor_div(from_ints(TENSOR_I64, 1, (const int64_t[]){6}, a), from_ints(TENSOR_I64, 1, (const int64_t[]){6}, b)), TENSOR_F32, want, 6, 0, 0, false);
    double want_s[6] = {3.5, -3.5, 0.5, 0, -0.5, 3};
    CHECK_FLOATS("div_scalar i32", tensor_div_scalar(from_ints(TENSOR_I32, 1, (const int64_t[]){6}, a), 2), TENSOR_F32, want_s, 6, 0, 0, false);
}

TEST(ew_binary_integer_fmod_by_zero_is_an_error) {
    int64_t a[3] = {5, -5, 7}, b[3] = {3, 0, 2};
    for (int di = 0; di < 3; di++) {
        tensor_clear_error();
        tensor *r = tensor_fmod(from_ints(INTS[di], 1, (const int64_t[]){3}, a), from_ints(INTS[di], 1, (const int64_t[]){3}, b));
        CHECK_MSG(r == NULL, "fmod %s by 0 should fail", tensor_dtype_name(INTS[di]));
        CHECK_ERROR_HAS("tensor_fmod", "zero");
        tensor_free(r);
    }
    tensor_clear_error();
    /* C fmod semantics (sign of a) for integers, including INT64_MIN % -1 */
    int64_t x[5] = {-7, 7, -7, INT64_MIN, 9}, y[5] = {3, -3, -3, -1, 4}, w[5] = {-1, 1, -1, 0, 1};
    CHECK_INTS("fmod i64", tensor_fmod(tensor_from_data(x, TENSOR_SHAPE(5), TENSOR_I64), tensor_from_data(y, TENSOR_SHAPE(5), TENSOR_I64)), TENSOR_I64, w, 5);
    /* floats by 0 give NaN */
    double fx[2] = {1, -0.0}, fy[2] = {0, 1}, fw[2] = {NAN, -0.0};
    CHECK_FLOATS("fmod f32", tensor_fmod(test_tensor(TENSOR_F32, 1, (const int64_t[]){2}, fx), test_tensor(TENSOR_F32, 1, (const int64_t[]){2}, fy)), TENSOR_F32, fw, 2, 0, 0, true);
}

/* Integer pow with a negative exponent tensor: 1 ** -n = 1, (-1) ** -n = +-1, anything else 0 (what
   PyTorch gives); with a negative integral scalar exponent PyTorch refuses. */
TEST(ew_binary_integer_pow_negative_exponent) {
    int64_t a[6] = {1, -1, -1, 2, -2, 0}, e[6] = {-5, -3, -4, -1, -2, -1}, w[6] = {1, -1, 1, 0, 0, 0};
    CHECK_INTS("pow i32 negative", tensor_pow(from_ints(TENSOR_I32, 1, (const int64_t[]){6}, a), from_ints(TENSOR_I32, 1, (const int64_t[]){6}, e)), TENSOR_I32, w, 6);
    CHECK_INTS("pow i64 negative", tensor_pow(from_ints(TENSOR_I64, 1, (const int64_t[]){6}, a), from_ints(TENSOR_I64, 1, (const int64_t[]){6}, e)), TENSOR_I64, w, 6);
    tensor_clear_error();
    CHECK(tensor_pow_scalar(from_ints(TENSOR_I32, 1, (const int64_t[]){6}, a), -2) == NULL);
    CHECK_ERROR_HAS("tensor_pow_scalar", "negative");
    tensor_clear_error();
    double fw[6];
    for (int i = 0; i < 6; i++) fw[i] = pow((double)a[i], 0.5);
    CHECK_FLOATS("pow_scalar i32 0.5", tensor_pow_scalar(from_ints(TENSOR_I32, 1, (const int64_t[]){6}, a), 0.5), TENSOR_F32, fw, 6, 2e-6, 0, false);
    for (int i = 0; i < 6; i++) fw[i] = pow((double)a[i], -2.0);
    CHECK_FLOATS("pow f32 -2", tensor_pow(from_ints(TENSOR_F32, 1, (const int64_t[]){6}, a), tensor_scalar(-2, TENSOR_I64)), TENSOR_F32, fw, 6, 2e-6, 0, false);
}

/* i64 stays exact beyond 2^53 (computed in integers, not doubles). */
TEST(ew_binary_i64_exact_beyond_2_53) {
    int64_t p53 = (int64_t)1 << 53;
    int64_t a[3] = {p53 + 1, p53, INT64_MAX - 1}, b[3] = {p53, p53, INT64_MAX};
    tensor *ta = tensor_from_data(a, TENSOR_SHAPE(3), TENSOR_I64), *tb = tensor_from_data(b, TENSOR_SHAPE(3), TENSOR_I64);
    CHECK_INTS("eq i64", tensor_eq(ta, tb), TENSOR_BOOL, ((const int64_t[]){0, 1, 0}), 3);
    CHECK_INTS("lt i64", tensor_lt(ta, tb), TENSOR_BOOL, ((const int64_t[]){0, 0, 1}), 3);
    CHECK_INTS("sub i64", tensor_sub(ta, tb), TENSOR_I64, ((const int64_t[]){1, 0, -1}), 3);
    CHECK_INTS("maximum i64", tensor_maximum(ta, tb), TENSOR_I64, ((const int64_t[]){p53 + 1, p53, INT64_MAX}), 3);
    CHECK_INTS("minimum i64", tensor_minimum(ta, tb), TENSOR_I64, ((const int64_t[]){p53, p53, INT64_MAX - 1}), 3);
    CHECK_INTS("add_scalar i64", tensor_add_scalar(ta, 1), TENSOR_I64, ((const int64_t[]){p53 + 2, p53 + 1, INT64_MAX}), 3);
}

TEST(ew_binary_maximum_minimum_nan_propagates) {
    double a[4] = {NAN, 1, NAN, -INFINITY}, b[4] = {1, NAN, NAN, 2};
    double wmax[4] = {NAN, NAN, NAN, 2}, wmin[4] = {NAN, NAN, NAN, -INFINITY};
    for (int di = 0; di < 4; di++) {
        tensor *ta = test_tensor(FLOATS[di], 1, (const int64_t[]){4}, a), *tb = test_tensor(FLOATS[di], 1, (const int64_t[]){4}, b);
        CHECK_FLOATS(label("maximum", FLOATS[di], -1), tensor_maximum(ta, tb), FLOATS[di], wmax, 4, 0, 0, false);
        CHECK_FLOATS(label("minimum", FLOATS[di], -1), tensor_minimum(ta, tb), FLOATS[di], wmin, 4, 0, 0, false);
    }
}

TEST(ew_binary_broadcast_shapes_and_errors) {
    tensor *a = tensor_ones(TENSOR_SHAPE(3, 1), TENSOR_F32), *b = tensor_ones(TENSOR_SHAPE(1, 4), TENSOR_F32);
    CHECK_SHAPE(tensor_add(a, b), 2, (const int64_t[]){3, 4});
    CHECK_SHAPE(tensor_add(tensor_ones(TENSOR_SHAPE(2, 3, 4), TENSOR_F32), tensor_ones(TENSOR_SHAPE(4), TENSOR_F32)), 3, (const int64_t[]){2, 3, 4});
    CHECK_SHAPE(tensor_add(tensor_scalar(1, TENSOR_F32), tensor_ones(TENSOR_SHAPE(5), TENSOR_F32)), 1, (const int64_t[]){5});
    CHECK_SHAPE(tensor_add(tensor_scalar(1, TENSOR_F32), tensor_scalar(2, TENSOR_F32)), 0, NULL);
    CHECK_SHAPE(tensor_mul(tensor_ones(TENSOR_SHAPE(0, 3), TENSOR_F32), tensor_ones(TENSOR_SHAPE(3), TENSOR_F32)), 2, (const int64_t[]){0, 3});
    CHECK_SHAPE(tensor_mul(tensor_ones(TENSOR_SHAPE(0), TENSOR_F32), tensor_ones(TENSOR_SHAPE(1), TENSOR_F32)), 1, (const int64_t[]){0});
    tensor_clear_error();
    CHECK(tensor_add(tensor_ones(TENSOR_SHAPE(2, 3), TENSOR_F32), tensor_ones(TENSOR_SHAPE(4), TENSOR_F32)) == NULL);
    CHECK_ERROR_HAS("tensor_add", "[2, 3]");
    CHECK_ERROR_HAS("tensor_add", "[4]");
    tensor_clear_error();
    CHECK(tensor_eq(tensor_ones(TENSOR_SHAPE(0), TENSOR_F32), tensor_ones(TENSOR_SHAPE(2), TENSOR_F32)) == NULL);
    CHECK_ERROR_HAS("tensor_eq", "[0]");
    tensor_clear_error();
}

/* ============================================================================================== */
/* tensor op scalar                                                                               */
/* ============================================================================================== */

typedef struct {
    const char *name;
    tensor *(*fn)(tensor *, double);
    double (*ref)(double, double);
    int64_t (*iref)(int64_t, int64_t);
    int rule;
} scalar_case;
static const scalar_case SCALARS[] = {
    {"add_scalar", tensor_add_scalar, r_add, i_add, R_SAME},
    {"sub_scalar", tensor_sub_scalar, r_sub, i_sub, R_NUM},
    {"mul_scalar", tensor_mul_scalar, r_mul, i_mul, R_SAME},
    {"div_scalar", tensor_div_scalar, r_div, NULL, R_FLOAT},
    {"pow_scalar", tensor_pow_scalar, r_pow, i_pow, R_SAME},
};
#define N_SCALARS ((int)(sizeof SCALARS / sizeof SCALARS[0]))

/* PyTorch treats a Python number as a wrapped scalar: a float tensor keeps its dtype; an integer or
   bool tensor stays integer (bool becomes i64) for an integral number and becomes f32 otherwise. */
static tensor_dtype scalar_common(tensor_dtype d, double s) {
    if (isfl(d)) return d;
    if (s != floor(s) || isinf(s)) return TENSOR_F32; /* NaN and inf too */
    return d == TENSOR_BOOL ? TENSOR_I64 : d;
}

TEST(ew_scalar_ops_every_dtype) {
    static const double svals[] = {2, -3, 0.5, 2.5, -1.5, 0, 1, 0.1, 300, NAN, INFINITY};
    int64_t iv[80];
    double fv[64];
    for (int k = 0; k < N_SCALARS; k++)
        for (int d = 0; d < TENSOR_DTYPE_COUNT; d++)
            for (int si = 0; si < (int)(sizeof svals / sizeof svals[0]); si++) {
                const scalar_case *c = &SCALARS[k];
                tensor_dtype dt = (tensor_dtype)d;
                double s = svals[si];
                tensor *a;
                int64_t n;
                if (isfl(dt)) {
                    n = 64;
                    for (int i = 0; i < n; i++) fv[i] = k == 4 ? test_uniform(0, 4) : test_uniform(-10, 10);
                    fv[0] = 0; fv[1] = -0.0; fv[2] = INFINITY; fv[3] = NAN;
                    a = test_tensor(dt, 1, &n, fv);
                } else {
                    n = int_inputs(dt, iv);
                    a = from_ints(dt, 1, &n, iv);
                }
                char what[80];
                snprintf(what, sizeof what, "%s(%s, %g)", c->name, tensor_dtype_name(dt), s);
                tensor *r = c->fn(a, s);
                tensor_dtype common = scalar_common(dt, s), od = rule_out(c->rule, common);
                if (c->rule == R_NUM && dt == TENSOR_BOOL) {
                    CHECK_MSG(r == NULL, "%s should refuse bool", what);
                    tensor_clear_error();
                } else if (k == 4 && !isfl(dt) && dt != TENSOR_BOOL && s < 0 && s == floor(s) && !isinf(s)) {
                    CHECK_MSG(r == NULL, "%s: integers to negative integer powers should be refused", what);
                    tensor_clear_error();
                } else if (isfl(od)) {
                    double *xs = test_values(a), want[80];
                    double sr = common == TENSOR_F64 ? s : (double)(float)s; /* the scalar as the op's compute dtype holds it */
                    if (!isfl(common)) sr = s;
                    for (int64_t i = 0; i < n; i++) want[i] = in_range(c->ref(xs[i], sr), od);
                    CHECK_FLOATS(what, r, od, want, n, test_tol(od), tiny_of(od), false);
                    free(xs);
                } else {
                    int64_t *xs = ivals(a), want[80];
                    for (int64_t i = 0; i < n; i++) want[i] = wrap_to(c->iref(xs[i], (int64_t)s), od);
                    CHECK_INTS(what, r, od, want, n);
                    free(xs);
                }
                tensor_free(r);
                tensor_free(a);
            }
}

TEST(ew_scalar_dtype_rules) {
    tensor *i32 = tensor_ones(TENSOR_SHAPE(3), TENSOR_I32), *bl = tensor_ones(TENSOR_SHAPE(3), TENSOR_BOOL);
    tensor *f16 = tensor_ones(TENSOR_SHAPE(3), TENSOR_F16), *u8 = tensor_ones(TENSOR_SHAPE(3), TENSOR_U8);
    CHECK(tensor_get_dtype(tensor_add_scalar(i32, 2)) == TENSOR_I32);
    CHECK(tensor_get_dtype(tensor_add_scalar(i32, 2.5)) == TENSOR_F32);
    CHECK(tensor_get_dtype(tensor_add_scalar(bl, 1)) == TENSOR_I64);
    CHECK(tensor_get_dtype(tensor_add_scalar(bl, 0.5)) == TENSOR_F32);
    CHECK(tensor_get_dtype(tensor_add_scalar(f16, 0.1)) == TENSOR_F16);
    CHECK(tensor_get_dtype(tensor_mul_scalar(u8, 3)) == TENSOR_U8);
    CHECK(tensor_get_dtype(tensor_div_scalar(i32, 2)) == TENSOR_F32);
    CHECK(tensor_get_dtype(tensor_pow_scalar(i32, 2)) == TENSOR_I32);
    CHECK(tensor_get_dtype(tensor_pow_scalar(bl, 2)) == TENSOR_I64);
    CHECK(tensor_get_dtype(tensor_add_scalar(i32, NAN)) == TENSOR_F32);
    CHECK(tensor_get_dtype(tensor_add_scalar(i32, 1e19)) == TENSOR_F32);
    CHECK(tensor_get_dtype(tensor_add_scalar(tensor_ones(TENSOR_SHAPE(3), TENSOR_F64), 2)) == TENSOR_F64);
    /* f16 + 0.1 computes in f32 with the scalar as f32 and rounds once to f16 */
    double v = tensor_item(tensor_add_scalar(tensor_scalar(1, TENSOR_F16), 0.1));
    CHECK_NEAR(v, 1.099609375, 0, 0); /* 1.1 rounded to f16 */
    CHECK(tensor_ndim(tensor_add_scalar(tensor_scalar(1, TENSOR_I32), 2)) == 0);
    CHECK_SHAPE(tensor_mul_scalar(tensor_ones(TENSOR_SHAPE(0, 3), TENSOR_F32), 2), 2, (const int64_t[]){0, 3});
    tensor *r = tensor_mul_scalar(tensor_ones(TENSOR_SHAPE(2, 3, 4), TENSOR_F32), -2);
    CHECK_SHAPE(r, 3, (const int64_t[]){2, 3, 4});
    double want[24];
    for (int i = 0; i < 24; i++) want[i] = -2;
    CHECK_FLOATS("mul_scalar 3-d", r, TENSOR_F32, want, 24, 0, 0, false);
    tensor_clear_error();
    CHECK(tensor_sub_scalar(bl, 1) == NULL);
    CHECK_ERROR_HAS("tensor_sub_scalar", "bool");
    tensor_clear_error();
}

/* ============================================================================================== */
/* where                                                                                          */
/* ============================================================================================== */

/* where(cond, a, b) for the given shapes and dtypes, against cond ? a : b under broadcasting. */
static void run_where(int nc, const int64_t *sc, tensor_dtype da, int na, const int64_t *sa, tensor_dtype db, int nb, const int64_t *sb) {
    int64_t s1[TENSOR_MAX_DIMS], os[TENSOR_MAX_DIMS];
    int n1 = bshape(na, sa, nb, sb, s1), no = bshape(nc, sc, n1, s1, os);
    int64_t nC = numel_of(nc, sc), nA = numel_of(na, sa), nB = numel_of(nb, sb), nO = numel_of(no, os);
    double *cv = (double *)malloc(sizeof(double) * (size_t)(nC + 1)), *av = (double *)malloc(sizeof(double) * (size_t)(nA + 1)), *bv = (double *)malloc(sizeof(double) * (size_t)(nB + 1));
    for (int64_t i = 0; i < nC; i++) cv[i] = test_uniform(0, 1) < 0.5;
    for (int64_t i = 0; i < nA; i++) av[i] = isfl(da) ? test_uniform(-10, 10) : (double)rand_int(da == TENSOR_U8 ? 0 : -100, da == TENSOR_BOOL ? 1 : 100);
    for (int64_t i = 0; i < nB; i++) bv[i] = isfl(db) ? test_uniform(-10, 10) : (double)rand_int(db == TENSOR_U8 ? 0 : -100, db == TENSOR_BOOL ? 1 : 100);
    if (nA > 1 && isfl(da)) { av[0] = NAN; av[1] = -0.0; }
    if (nB > 1 && isfl(db)) { bv[0] = INFINITY; bv[1] = -0.0; }
    tensor *c = test_tensor(TENSOR_BOOL, nc, sc, cv), *a = test_tensor(da, na, sa, av), *b = test_tensor(db, nb, sb, bv);
    double *cr = test_values(c), *ar = test_values(a), *br = test_values(b);
    double *want = (double *)malloc(sizeof(double) * (size_t)(nO + 1));
    for (int64_t o = 0; o < nO; o++)
        want[o] = cr[bindex(no, os, o, nc, sc)] != 0 ? ar[bindex(no, os, o, na, sa)] : br[bindex(no, os, o, nb, sb)];
    tensor_dtype od = expect_type(da, na, db, nb);
    if (od == TENSOR_F32) for (int64_t o = 0; o < nO; o++) want[o] = (double)(float)want[o]; /* f64 0-dim into f32 */
    tensor *r = tensor_where(c, a, b);
    CHECK_FLOATS(label("where", da, (int)db), r, od, want, nO, 0, 0, true); /* selection converts exactly */
    if (r) CHECK_SHAPE(r, no, os);
    free(cv); free(av); free(bv); free(cr); free(ar); free(br); free(want);
}

TEST(ew_where_shapes_and_dtypes) {
    static const struct { int nc; int64_t sc[3]; int na; int64_t sa[3]; int nb; int64_t sb[3]; } sh[] = {
        {2, {2, 3}, 2, {2, 3}, 2, {2, 3}},
        {1, {7}, 1, {7}, 1, {7}},
        {3, {2, 3, 4}, 3, {2, 3, 4}, 3, {2, 3, 4}},
        {2, {3, 1}, 2, {1, 4}, 0, {0}},
        {1, {4}, 2, {3, 1}, 2, {3, 4}},
        {0, {0}, 1, {5}, 1, {5}},
        {0, {0}, 0, {0}, 0, {0}},
        {2, {2, 1}, 1, {3}, 0, {0}},
        {1, {0}, 1, {0}, 1, {1}},
        {2, {2, 0}, 1, {1}, 2, {2, 1}},
        {1, {1027}, 1, {1027}, 1, {1}},
    };
    static const tensor_dtype pairs[][2] = {
        {TENSOR_F32, TENSOR_F32}, {TENSOR_F64, TENSOR_F64}, {TENSOR_F16, TENSOR_F16}, {TENSOR_BF16, TENSOR_BF16},
        {TENSOR_I32, TENSOR_I32}, {TENSOR_I64, TENSOR_I64}, {TENSOR_U8, TENSOR_U8}, {TENSOR_BOOL, TENSOR_BOOL},
        {TENSOR_I32, TENSOR_F32}, {TENSOR_I32, TENSOR_I64}, {TENSOR_U8, TENSOR_BOOL}, {TENSOR_F16, TENSOR_BF16},
        {TENSOR_F32, TENSOR_F64}, {TENSOR_BOOL, TENSOR_F16},
    };
    for (int s = 0; s < (int)(sizeof sh / sizeof sh[0]); s++)
        for (int p = 0; p < (int)(sizeof pairs / sizeof pairs[0]); p++)
            run_where(sh[s].nc, sh[s].sc, pairs[p][0], sh[s].na, sh[s].sa, pairs[p][1], sh[s].nb, sh[s].sb);
    /* a 0-dim operand of a higher category counts, of the same category not */
    int64_t s3 = 3;
    run_where(1, &s3, TENSOR_I32, 1, &s3, TENSOR_F64, 0, NULL);
    run_where(1, &s3, TENSOR_F32, 1, &s3, TENSOR_F64, 0, NULL);
    run_where(1, &s3, TENSOR_I32, 1, &s3, TENSOR_I64, 0, NULL);
    /* i64 beyond 2^53 is copied exactly */
    int64_t big[2] = {((int64_t)1 << 62) + 1, -(((int64_t)1 << 55) + 3)}, small[2] = {1, 2};
    uint8_t cond[2] = {1, 0};
    tensor *r = tensor_where(tensor_from_data(cond, TENSOR_SHAPE(2), TENSOR_BOOL), tensor_from_data(big, TENSOR_SHAPE(2), TENSOR_I64),
                             tensor_from_data(small, TENSOR_SHAPE(2), TENSOR_I64));
    CHECK_INTS("where i64", r, TENSOR_I64, ((const int64_t[]){big[0], 2}), 2);
}

/* ============================================================================================== */
/* in place                                                                                       */
/* ============================================================================================== */

TEST(ew_inplace_add_) {
    float av[6] = {1, 2, 3, 4, 5, 6}, bv[3] = {10, 20, 30};
    tensor *a = tensor_from_data(av, TENSOR_SHAPE(2, 3), TENSOR_F32);
    tensor *b = tensor_from_data(bv, TENSOR_SHAPE(3), TENSOR_F32);
    tensor *r = tensor_add_(a, b); /* b broadcast into a */
    CHECK(r == a);
    double w1[6] = {11, 22, 33, 14, 25, 36};
    CHECK_FLOATS("add_ broadcast", a, TENSOR_F32, w1, 6, 0, 0, false);
    CHECK_SHAPE(a, 2, (const int64_t[]){2, 3});
    CHECK(tensor_add_(a, tensor_scalar(-1, TENSOR_F32)) == a); /* 0-dim b */
    double w2[6] = {10, 21, 32, 13, 24, 35};
    CHECK_FLOATS("add_ 0-dim", a, TENSOR_F32, w2, 6, 0, 0, false);
    CHECK(tensor_add_(a, a) == a); /* a += a */
    double w3[6] = {20, 42, 64, 26, 48, 70};
    CHECK_FLOATS("add_ self", a, TENSOR_F32, w3, 6, 0, 0, false);
    double cv[2] = {0.5, -0.5};
    CHECK(tensor_add_(a, tensor_from_data(cv, TENSOR_SHAPE(2, 1), TENSOR_F64)) == a); /* f64 into f32, column broadcast */
    double w4[6] = {20.5, 42.5, 64.5, 25.5, 47.5, 69.5};
    CHECK_FLOATS("add_ f64 into f32", a, TENSOR_F32, w4, 6, 0, 0, false);
    /* integer and bool b into an f32 a */
    int32_t ib[3] = {1, 2, 3};
    CHECK(tensor_add_(a, tensor_from_data(ib, TENSOR_SHAPE(3), TENSOR_I32)) == a);
    double w5[6] = {21.5, 44.5, 67.5, 26.5, 49.5, 72.5};
    CHECK_FLOATS("add_ i32 into f32", a, TENSOR_F32, w5, 6, 0, 0, false);
    /* integer a: wraps in its own dtype; i64 and bool b accepted */
    int64_t iv[3] = {INT32_MAX, -5, 0};
    tensor *ia = from_ints(TENSOR_I32, 1, (const int64_t[]){3}, iv);
    int64_t bb[3] = {1, 5, 7};
    CHECK(tensor_add_(ia, tensor_from_data(bb, TENSOR_SHAPE(3), TENSOR_I64)) == ia);
    CHECK_INTS("add_ i64 into i32", ia, TENSOR_I32, ((const int64_t[]){INT32_MIN, 0, 7}), 3);
    uint8_t bools[3] = {1, 0, 1};
    CHECK(tensor_add_(ia, tensor_from_data(bools, TENSOR_SHAPE(3), TENSOR_BOOL)) == ia);
    CHECK_INTS("add_ bool into i32", ia, TENSOR_I32, ((const int64_t[]){INT32_MIN + 1, 0, 8}), 3);
    tensor *ua = from_ints(TENSOR_U8, 1, (const int64_t[]){2}, (const int64_t[]){250, 3});
    CHECK(tensor_add_(ua, from_ints(TENSOR_I32, 1, (const int64_t[]){2}, (const int64_t[]){10, -5})) == ua);
    CHECK_INTS("add_ u8 wraps", ua, TENSOR_U8, ((const int64_t[]){4, 254}), 2);
    tensor *ba = tensor_from_data(bools, TENSOR_SHAPE(3), TENSOR_BOOL);
    uint8_t bools2[3] = {1, 0, 0};
    CHECK(tensor_add_(ba, tensor_from_data(bools2, TENSOR_SHAPE(3), TENSOR_BOOL)) == ba);
    CHECK_INTS("add_ bool into bool", ba, TENSOR_BOOL, ((const int64_t[]){1, 0, 1}), 3);
    /* f16: computed and rounded once */
    tensor *h = tensor_full(TENSOR_SHAPE(2), 1, TENSOR_F16);
    CHECK(tensor_add_(h, tensor_full(TENSOR_SHAPE(2), 0.1, TENSOR_F64)) == h);
    double wh[2] = {1.099609375, 1.099609375};
    CHECK_FLOATS("add_ f16", h, TENSOR_F16, wh, 2, 0, 0, false);
    /* 0-dim and zero-size */
    tensor *s = tensor_scalar(2, TENSOR_F64);
    CHECK(tensor_add_(s, tensor_scalar(3, TENSOR_F64)) == s);
    CHECK_NEAR(tensor_item(s), 5, 0, 0);
    tensor *z = tensor_zeros(TENSOR_SHAPE(0, 3), TENSOR_F32);
    CHECK(tensor_add_(z, tensor_ones(TENSOR_SHAPE(3), TENSOR_F32)) == z);
    CHECK_SHAPE(z, 2, (const int64_t[]){0, 3});
    /* refusals: a would have to grow; the result type cannot be cast into a */
    tensor_clear_error();
    tensor *small = tensor_ones(TENSOR_SHAPE(3), TENSOR_F32);
    CHECK(tensor_add_(small, tensor_ones(TENSOR_SHAPE(2, 3), TENSOR_F32)) == NULL);
    CHECK_ERROR_HAS("tensor_add_", "[2, 3]");
    double sv[3];
    for (int i = 0; i < 3; i++) sv[i] = 1;
    CHECK_FLOATS("add_ refused leaves a", small, TENSOR_F32, sv, 3, 0, 0, false);
    tensor_clear_error();
    CHECK(tensor_add_(ia, tensor_ones(TENSOR_SHAPE(3), TENSOR_F32)) == NULL);
    CHECK_ERROR_HAS("tensor_add_", "float32");
    tensor_clear_error();
    CHECK(tensor_add_(ba, tensor_ones(TENSOR_SHAPE(3), TENSOR_I32)) == NULL);
    CHECK_ERROR_HAS("tensor_add_", "bool");
    tensor_clear_error();
}

TEST(ew_inplace_mul_scalar_) {
    double av[4] = {1, -2, 0.5, NAN};
    tensor *a = tensor_from_data(av, TENSOR_SHAPE(2, 2), TENSOR_F64);
    CHECK(tensor_mul_scalar_(a, 2.5) == a);
    double w[4] = {2.5, -5, 1.25, NAN};
    CHECK_FLOATS("mul_scalar_ f64", a, TENSOR_F64, w, 4, 0, 0, false);
    for (int di = 1; di < 4; di++) {
        tensor *f = test_tensor(FLOATS[di], 2, (const int64_t[]){2, 2}, av);
        double *fs = test_values(f), fw[4];
        for (int i = 0; i < 4; i++) fw[i] = fs[i] * -0.5;
        CHECK(tensor_mul_scalar_(f, -0.5) == f);
        CHECK_FLOATS(label("mul_scalar_", FLOATS[di], -1), f, FLOATS[di], fw, 4, test_tol(FLOATS[di]), 0, false);
        free(fs);
    }
    tensor *i = from_ints(TENSOR_I32, 1, (const int64_t[]){3}, (const int64_t[]){INT32_MAX, -7, 0});
    CHECK(tensor_mul_scalar_(i, 3) == i);
    CHECK_INTS("mul_scalar_ i32 wraps", i, TENSOR_I32, ((const int64_t[]){wrap_to((int64_t)INT32_MAX * 3, TENSOR_I32), -21, 0}), 3);
    tensor *u = from_ints(TENSOR_U8, 1, (const int64_t[]){2}, (const int64_t[]){100, 3});
    CHECK(tensor_mul_scalar_(u, 3) == u);
    CHECK_INTS("mul_scalar_ u8 wraps", u, TENSOR_U8, ((const int64_t[]){44, 9}), 2);
    tensor *s = tensor_scalar(3, TENSOR_I64);
    CHECK(tensor_mul_scalar_(s, -2) == s);
    CHECK_NEAR(tensor_item(s), -6, 0, 0);
    tensor *z = tensor_zeros(TENSOR_SHAPE(2, 0), TENSOR_F32);
    CHECK(tensor_mul_scalar_(z, 2) == z);
    tensor_clear_error();
    CHECK(tensor_mul_scalar_(i, 2.5) == NULL); /* would need f32 */
    CHECK_ERROR_HAS("tensor_mul_scalar_", "2.5");
    tensor_clear_error();
    CHECK(tensor_mul_scalar_(tensor_ones(TENSOR_SHAPE(2), TENSOR_BOOL), 2) == NULL); /* bool * int gives i64 */
    CHECK_ERROR_HAS("tensor_mul_scalar_", "bool");
    tensor_clear_error();
}

TEST(ew_inplace_copy_) {
    /* broadcast and convert */
    int32_t src[3] = {1, -2, 3};
    tensor *d = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32);
    CHECK(tensor_copy_(d, tensor_from_data(src, TENSOR_SHAPE(3), TENSOR_I32)) == d);
    double w[6] = {1, -2, 3, 1, -2, 3};
    CHECK_FLOATS("copy_ broadcast i32 -> f32", d, TENSOR_F32, w, 6, 0, 0, false);
    /* float -> int truncates toward 0 */
    double fv[6] = {3.7, -3.7, 2.5, -0.5, 1000, -1000};
    tensor *di = tensor_zeros(TENSOR_SHAPE(6), TENSOR_I32);
    CHECK(tensor_copy_(di, tensor_from_data(fv, TENSOR_SHAPE(6), TENSOR_F64)) == di);
    CHECK_INTS("copy_ f64 -> i32", di, TENSOR_I32, ((const int64_t[]){3, -3, 2, 0, 1000, -1000}), 6);
    /* int -> u8 wraps */
    tensor *du = tensor_zeros(TENSOR_SHAPE(3), TENSOR_U8);
    CHECK(tensor_copy_(du, from_ints(TENSOR_I32, 1, (const int64_t[]){3}, (const int64_t[]){-1, 256, 7})) == du);
    CHECK_INTS("copy_ i32 -> u8", du, TENSOR_U8, ((const int64_t[]){255, 0, 7}), 3);
    /* to bool: non-zero (NaN too) is true */
    double bv[4] = {0, 0.5, -0.0, NAN};
    tensor *db = tensor_zeros(TENSOR_SHAPE(4), TENSOR_BOOL);
    CHECK(tensor_copy_(db, tensor_from_data(bv, TENSOR_SHAPE(4), TENSOR_F64)) == db);
    CHECK_INTS("copy_ f64 -> bool", db, TENSOR_BOOL, ((const int64_t[]){0, 1, 0, 1}), 4);
    /* to f16: rounds to nearest */
    double hv[3] = {0.1, 65504, 1e6};
    tensor *dh = tensor_zeros(TENSOR_SHAPE(3), TENSOR_F16);
    CHECK(tensor_copy_(dh, tensor_from_data(hv, TENSOR_SHAPE(3), TENSOR_F64)) == dh);
    double hw[3] = {0.0999755859375, 65504, INFINITY};
    CHECK_FLOATS("copy_ f64 -> f16", dh, TENSOR_F16, hw, 3, 0, 0, false);
    /* i64 exact */
    int64_t big[2] = {((int64_t)1 << 62) + 1, INT64_MIN};
    tensor *d64 = tensor_zeros(TENSOR_SHAPE(2), TENSOR_I64);
    CHECK(tensor_copy_(d64, tensor_from_data(big, TENSOR_SHAPE(2), TENSOR_I64)) == d64);
    CHECK_INTS("copy_ i64", d64, TENSOR_I64, big, 2);
    /* 0-dim source into anything, 0-dim destination, zero-size */
    tensor *d3 = tensor_zeros(TENSOR_SHAPE(2, 2, 2), TENSOR_F64);
    CHECK(tensor_copy_(d3, tensor_scalar(4, TENSOR_F32)) == d3);
    double w3[8] = {4, 4, 4, 4, 4, 4, 4, 4};
    CHECK_FLOATS("copy_ 0-dim src", d3, TENSOR_F64, w3, 8, 0, 0, false);
    tensor *s = tensor_scalar(0, TENSOR_F32);
    tensor_clear_error();
    CHECK(tensor_copy_(s, tensor_ones(TENSOR_SHAPE(1), TENSOR_F32)) == NULL); /* [1] does not fit a 0-dim destination */
    CHECK_ERROR_HAS("tensor_copy_", "[1]");
    tensor_clear_error();
    CHECK(tensor_copy_(s, tensor_scalar(7, TENSOR_I32)) == s);
    CHECK_NEAR(tensor_item(s), 7, 0, 0);
    tensor *z = tensor_zeros(TENSOR_SHAPE(0, 2), TENSOR_F32);
    CHECK(tensor_copy_(z, tensor_ones(TENSOR_SHAPE(2), TENSOR_F32)) == z);
    /* refusals */
    tensor_clear_error();
    CHECK(tensor_copy_(tensor_zeros(TENSOR_SHAPE(3), TENSOR_F32), tensor_ones(TENSOR_SHAPE(2, 3), TENSOR_F32)) == NULL);
    CHECK_ERROR_HAS("tensor_copy_", "[2, 3]");
    tensor_clear_error();
    CHECK(tensor_copy_(tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32), tensor_ones(TENSOR_SHAPE(4), TENSOR_F32)) == NULL);
    CHECK_ERROR_HAS("tensor_copy_", "[4]");
    tensor_clear_error();
}

TEST(ew_inplace_fill_and_zero_) {
    static const double vals[] = {2.5, -2.7, 0.1, 7, 0.5, 0, 1099511627776.0, NAN, INFINITY};
    for (int d = 0; d < TENSOR_DTYPE_COUNT; d++)
        for (int k = 0; k < (int)(sizeof vals / sizeof vals[0]); k++) {
            tensor_dtype dt = (tensor_dtype)d;
            double v = vals[k];
            if (!isfl(dt) && (v != v || isinf(v))) continue; /* not representable: no defined result */
            if (dt == TENSOR_I32 && fabs(v) > 2e9) continue;
            if (dt == TENSOR_U8 && (v < 0 || v > 255)) continue;
            tensor *t = tensor_empty(TENSOR_SHAPE(2, 3), dt);
            CHECK(tensor_fill_(t, v) == t);
            char what[64];
            snprintf(what, sizeof what, "fill_(%s, %g)", tensor_dtype_name(dt), v);
            double want[6];
            double e = dt == TENSOR_BOOL ? (v != 0) : isfl(dt) ? in_range(v, dt) : trunc(v); /* a C cast: toward 0 */
            for (int i = 0; i < 6; i++) want[i] = e;
            CHECK_FLOATS(what, t, dt, want, 6, isfl(dt) ? test_tol(dt) : 0, 0, false);
            CHECK(tensor_zero_(t) == t);
            for (int i = 0; i < 6; i++) want[i] = 0;
            CHECK_FLOATS(label("zero_", dt, -1), t, dt, want, 6, 0, 0, false);
        }
    tensor *s = tensor_scalar(1, TENSOR_F32);
    CHECK(tensor_fill_(s, -3) == s);
    CHECK_NEAR(tensor_item(s), -3, 0, 0);
    CHECK(tensor_zero_(s) == s);
    CHECK_NEAR(tensor_item(s), 0, 0, 0);
    tensor *z = tensor_zeros(TENSOR_SHAPE(0), TENSOR_F32);
    CHECK(tensor_fill_(z, 1) == z);
    CHECK(tensor_zero_(z) == z);
    CHECK(tensor_numel(z) == 0);
}

/* ============================================================================================== */
/* non-contiguous inputs and outputs (views made by the shape ops)                                */
/* ============================================================================================== */

/* Three [8, 6] views of different layouts. Their element (i, j), from the row-major values of
   their bases:
   VT  the transpose of A [6, 8]:                v(i, j) = A[j][i]
   VS  B [8, 12] sliced with step 2 along dim 1:  v(i, j) = B[i][2j]
   VE  row 1 of C [3, 6] expanded to [8, 6]:      v(i, j) = C[1][j]   (stride 0, non-zero offset) */
enum { VT, VS, VE, N_VIEWS };
static const int VIEW_ND = 2;
static const int64_t VIEW_SHAPE[2] = {8, 6};
static const int64_t VIEW_BASE_SHAPE[N_VIEWS][2] = {{6, 8}, {8, 12}, {3, 6}};
static const char *const VIEW_NAME[N_VIEWS] = {"transposed", "sliced", "expanded"};

static tensor *make_view(int kind, tensor *base) {
    switch (kind) {
    case VT: return tensor_transpose(base, 0, 1);
    case VS: return tensor_slice(base, 1, 0, 12, 2);
    default: return tensor_expand(tensor_slice(base, 0, 1, 2, 1), 2, VIEW_SHAPE);
    }
}
static int64_t view_src(int kind, int64_t i, int64_t j) {
    switch (kind) {
    case VT: return j * 8 + i;
    case VS: return i * 12 + 2 * j;
    default: return 6 + j;
    }
}
/* A base for view `kind` of dtype d with values drawn from [lo, hi] (integers for integer d), the
   view of it, and the view's 48 values row-major (as d holds them). */
static tensor *view_operand(int kind, tensor_dtype d, double lo, double hi, double *vals, int64_t *ivals_out) {
    int64_t n = VIEW_BASE_SHAPE[kind][0] * VIEW_BASE_SHAPE[kind][1];
    double base[96];
    for (int64_t i = 0; i < n; i++) base[i] = isfl(d) ? test_uniform(lo, hi) : (double)rand_int((int64_t)lo, (int64_t)hi);
    tensor *b = test_tensor(d, 2, VIEW_BASE_SHAPE[kind], base);
    double *bv = test_values(b);
    int64_t *bi = ivals(b);
    tensor *v = make_view(kind, b);
    CHECK_MSG(v && !tensor_is_contiguous(v) && tensor_shares_storage(v, b), "%s view", VIEW_NAME[kind]);
    for (int64_t i = 0; i < 8; i++)
        for (int64_t j = 0; j < 6; j++) {
            vals[i * 6 + j] = bv[view_src(kind, i, j)];
            if (ivals_out) ivals_out[i * 6 + j] = bi[view_src(kind, i, j)];
        }
    free(bv);
    free(bi);
    return v;
}

TEST(ew_unary_noncontiguous_inputs) {
    static const tensor_dtype dts[3] = {TENSOR_F32, TENSOR_F64, TENSOR_BF16};
    double xs[48], want[48];
    for (int k = 0; k < N_UNARY; k++)
        for (int di = 0; di < 3; di++)
            for (int kind = 0; kind < N_VIEWS; kind++) {
                tensor_dtype d = dts[di], od = unary_out(UNARY[k].rule, d);
                tensor *v = view_operand(kind, d, UNARY[k].lo, UNARY[k].hi, xs, NULL);
                for (int i = 0; i < 48; i++) want[i] = in_range(UNARY[k].ref(xs[i]), od);
                tensor *r = UNARY[k].fn(v);
                char what[96];
                snprintf(what, sizeof what, "%s of a %s view", label(UNARY[k].name, d, -1), VIEW_NAME[kind]);
                CHECK_FLOATS(what, r, od, want, 48, od == TENSOR_BOOL ? 0 : test_tol(od), od == TENSOR_BOOL ? 0 : tiny_of(od), false);
                if (r) CHECK_SHAPE(r, VIEW_ND, VIEW_SHAPE);
                if (r) CHECK(tensor_is_contiguous(r));
            }
    /* integer ops on an integer view */
    int64_t xi[48], wi[48];
    for (int k = 0; k < N_UNARY; k++) {
        if (!UNARY[k].iref) continue;
        for (int kind = 0; kind < N_VIEWS; kind++) {
            tensor *v = view_operand(kind, TENSOR_I32, -100, 100, xs, xi);
            for (int i = 0; i < 48; i++) wi[i] = wrap_to(UNARY[k].iref(xi[i]), TENSOR_I32);
            CHECK_INTS(label(UNARY[k].name, TENSOR_I32, -1), UNARY[k].fn(v), TENSOR_I32, wi, 48);
        }
    }
    /* parameterized ops */
    for (int k = 0; k < N_PARAMS; k++)
        for (int kind = 0; kind < N_VIEWS; kind++) {
            tensor *v = view_operand(kind, TENSOR_F32, -8, 8, xs, NULL);
            for (int i = 0; i < 48; i++) want[i] = PARAMS[k].ref(xs[i], PARAMS[k].p0, PARAMS[k].p1);
            CHECK_FLOATS(label(PARAMS[k].name, TENSOR_F32, -1), PARAMS[k].fn(v, PARAMS[k].p0, PARAMS[k].p1), TENSOR_F32, want, 48, 2e-6, 0, false);
        }
    /* a 3-D permuted view: out[i][j][l] = x[l][i][j] */
    double x3[24], w3[24];
    for (int i = 0; i < 24; i++) x3[i] = test_uniform(-3, 3);
    tensor *p = tensor_permute(tensor_from_data(x3, TENSOR_SHAPE(2, 3, 4), TENSOR_F64), 3, (const int[]){1, 2, 0});
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 4; j++)
            for (int l = 0; l < 2; l++) w3[(i * 4 + j) * 2 + l] = exp(x3[(l * 3 + i) * 4 + j]);
    tensor *r = tensor_exp(p);
    CHECK_FLOATS("exp of a permuted view", r, TENSOR_F64, w3, 24, 1e-15, 0, false);
    CHECK_SHAPE(r, 3, (const int64_t[]){3, 4, 2});
}

TEST(ew_binary_noncontiguous_inputs) {
    static const int pairs[5][2] = {{VT, VS}, {VS, VE}, {VE, VT}, {VT, VT}, {VE, VE}};
    static const tensor_dtype dts[3] = {TENSOR_F32, TENSOR_F64, TENSOR_I32};
    double av[48], bv[48];
    int64_t ai[48], bi[48];
    for (int k = 0; k < N_BINARY; k++)
        for (int di = 0; di < 3; di++)
            for (int p = 0; p < 5; p++) {
                const binary_case *c = &BINARY[k];
                tensor_dtype d = dts[di];
                bool in = !isfl(d);
                tensor *a = view_operand(pairs[p][0], d, in ? (double)c->ilo : c->lo, in ? (double)c->ihi : c->hi, av, ai);
                tensor *b = view_operand(pairs[p][1], d, in ? (double)c->iblo : c->blo, in ? (double)c->ibhi : c->bhi, bv, bi);
                if (c->b_nonzero && in)
                    for (int i = 0; i < 48; i++) if (bi[i] == 0) { tensor_fill_(b, 3); for (int q = 0; q < 48; q++) { bi[q] = 3; bv[q] = 3; } break; }
                char what[96];
                snprintf(what, sizeof what, "%s of %s and %s views", label(c->name, d, -1), VIEW_NAME[pairs[p][0]], VIEW_NAME[pairs[p][1]]);
                tensor_dtype od = rule_out(c->rule, d);
                tensor *r = c->fn(a, b);
                if (isfl(od)) {
                    double want[48];
                    for (int i = 0; i < 48; i++) want[i] = in_range(c->ref(av[i], bv[i]), od);
                    CHECK_FLOATS(what, r, od, want, 48, test_tol(od), tiny_of(od), false);
                } else {
                    int64_t want[48];
                    for (int i = 0; i < 48; i++) want[i] = in ? wrap_to(c->iref(ai[i], bi[i]), od) : (int64_t)c->ref(av[i], bv[i]);
                    CHECK_INTS(what, r, od, want, 48);
                }
                if (r) CHECK_SHAPE(r, VIEW_ND, VIEW_SHAPE);
            }
    /* a transposed [8, 6] with a step-2 slice of a [12] vector broadcast along the rows */
    double dv[12], w[48];
    for (int i = 0; i < 12; i++) dv[i] = test_uniform(-5, 5);
    tensor *a = view_operand(VT, TENSOR_F64, -5, 5, av, NULL);
    tensor *row = tensor_slice(tensor_from_data(dv, TENSOR_SHAPE(12), TENSOR_F64), 0, 1, 12, 2);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 6; j++) w[i * 6 + j] = av[i * 6 + j] * dv[1 + 2 * j];
    CHECK_FLOATS("mul of transposed and sliced row", tensor_mul(a, row), TENSOR_F64, w, 48, 1e-15, 0, false);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 6; j++) w[i * 6 + j] = dv[1 + 2 * j] - av[i * 6 + j];
    CHECK_FLOATS("sub of sliced row and transposed", tensor_sub(row, a), TENSOR_F64, w, 48, 1e-15, 0, false);
    /* scalar ops on a view */
    for (int i = 0; i < 48; i++) w[i] = av[i] * 2.5;
    CHECK_FLOATS("mul_scalar of transposed", tensor_mul_scalar(a, 2.5), TENSOR_F64, w, 48, 1e-15, 0, false);
}

TEST(ew_where_noncontiguous_inputs) {
    double cb[48], av[48], bv[48], want[48];
    for (int i = 0; i < 48; i++) cb[i] = test_uniform(0, 1) < 0.5;
    tensor *cond = tensor_transpose(test_tensor(TENSOR_BOOL, 2, (const int64_t[]){6, 8}, cb), 0, 1); /* [8, 6] */
    tensor *a = view_operand(VS, TENSOR_F32, -5, 5, av, NULL);
    tensor *b = view_operand(VE, TENSOR_F32, -5, 5, bv, NULL);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 6; j++) want[i * 6 + j] = cb[j * 8 + i] != 0 ? av[i * 6 + j] : bv[i * 6 + j];
    tensor *r = tensor_where(cond, a, b);
    CHECK_FLOATS("where of views", r, TENSOR_F32, want, 48, 0, 0, false);
    CHECK_SHAPE(r, VIEW_ND, VIEW_SHAPE);
}

/* In-place ops write through views into their base; refused into expanded views (one memory
   location for several elements), except fill_ and zero_. */
TEST(ew_inplace_through_views) {
    double base[48], bv[48], w[96];
    for (int i = 0; i < 48; i++) { base[i] = i; bv[i] = 100 + i; }
    /* add_ into a transposed view: base[j][i] += b[i][j] */
    tensor *A = tensor_from_data(base, TENSOR_SHAPE(6, 8), TENSOR_F64);
    tensor *v = tensor_transpose(A, 0, 1);
    tensor *b = tensor_from_data(bv, TENSOR_SHAPE(8, 6), TENSOR_F64);
    CHECK(tensor_add_(v, b) == v);
    for (int r = 0; r < 6; r++)
        for (int c = 0; c < 8; c++) w[r * 8 + c] = base[r * 8 + c] + bv[c * 6 + r];
    CHECK_FLOATS("add_ into a transposed view: base", A, TENSOR_F64, w, 48, 0, 0, false);
    CHECK_SHAPE(v, 2, (const int64_t[]){8, 6});
    /* add_ of a non-contiguous b (transposed) into a contiguous a */
    tensor *a2 = tensor_from_data(bv, TENSOR_SHAPE(8, 6), TENSOR_F64);
    CHECK(tensor_add_(a2, tensor_transpose(tensor_from_data(base, TENSOR_SHAPE(6, 8), TENSOR_F64), 0, 1)) == a2);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 6; j++) w[i * 6 + j] = bv[i * 6 + j] + base[j * 8 + i];
    CHECK_FLOATS("add_ of a transposed b", a2, TENSOR_F64, w, 48, 0, 0, false);
    /* add_ of a broadcast row into a step-2 slice: the odd columns keep their values */
    double big[96], row[6] = {1, 2, 3, 4, 5, 6};
    for (int i = 0; i < 96; i++) big[i] = -i;
    tensor *B = tensor_from_data(big, TENSOR_SHAPE(8, 12), TENSOR_F64);
    tensor *s = tensor_slice(B, 1, 0, 12, 2);
    CHECK(tensor_add_(s, tensor_from_data(row, TENSOR_SHAPE(6), TENSOR_F64)) == s);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 12; j++) w[i * 12 + j] = big[i * 12 + j] + (j % 2 == 0 ? row[j / 2] : 0);
    CHECK_FLOATS("add_ into a sliced view: base", B, TENSOR_F64, w, 96, 0, 0, false);
    /* mul_scalar_ into every other row */
    tensor *rows = tensor_slice(B, 0, 1, 8, 2);
    CHECK(tensor_mul_scalar_(rows, -2) == rows);
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 12; j++) if (i % 2 == 1) w[i * 12 + j] *= -2;
    CHECK_FLOATS("mul_scalar_ into a sliced view: base", B, TENSOR_F64, w, 96, 0, 0, false);
    /* copy_ into a transposed view, from a contiguous source and converting i32 -> f32 */
    int32_t src[48];
    for (int i = 0; i < 48; i++) src[i] = 3 * i - 70;
    tensor *C = tensor_zeros(TENSOR_SHAPE(6, 8), TENSOR_F32);
    tensor *ct = tensor_transpose(C, 0, 1);
    CHECK(tensor_copy_(ct, tensor_from_data(src, TENSOR_SHAPE(8, 6), TENSOR_I32)) == ct);
    for (int r = 0; r < 6; r++)
        for (int c = 0; c < 8; c++) w[r * 8 + c] = src[c * 6 + r];
    CHECK_FLOATS("copy_ into a transposed view: base", C, TENSOR_F32, w, 48, 0, 0, false);
    /* copy_ from an expanded source into a sliced view */
    tensor *D = tensor_zeros(TENSOR_SHAPE(4, 6), TENSOR_F64);
    tensor *ds = tensor_slice(D, 1, 1, 6, 2); /* [4, 3]: columns 1, 3, 5 */
    double col[4] = {7, 8, 9, 10};
    CHECK(tensor_copy_(ds, tensor_expand(tensor_from_data(col, TENSOR_SHAPE(4, 1), TENSOR_F64), 2, (const int64_t[]){4, 3})) == ds);
    for (int i = 0; i < 4; i++)
        for (int j = 0; j < 6; j++) w[i * 6 + j] = j % 2 ? col[i] : 0;
    CHECK_FLOATS("copy_ of an expanded source into a sliced view: base", D, TENSOR_F64, w, 24, 0, 0, false);
    /* fill_ into a slice, zero_ into a selected row, fill_ into an expanded view */
    tensor *E = tensor_zeros(TENSOR_SHAPE(3, 4), TENSOR_I32);
    tensor *ec = tensor_slice(E, 1, 0, 4, 2);
    CHECK(tensor_fill_(ec, 5) == ec);
    tensor *row1 = tensor_select(E, 0, 1);
    CHECK(tensor_zero_(row1) == row1);
    CHECK_INTS("fill_ and zero_ through views: base", E, TENSOR_I32, ((const int64_t[]){5, 0, 5, 0, 0, 0, 0, 0, 5, 0, 5, 0}), 12);
    tensor *F = tensor_zeros(TENSOR_SHAPE(1, 3), TENSOR_F32);
    tensor *fe = tensor_expand(F, 2, (const int64_t[]){4, 3});
    CHECK(tensor_fill_(fe, 2) == fe);
    double fw[3] = {2, 2, 2};
    CHECK_FLOATS("fill_ into an expanded view: base", F, TENSOR_F32, fw, 3, 0, 0, false);
    CHECK(tensor_zero_(fe) == fe);
    double zw[3] = {0, 0, 0};
    CHECK_FLOATS("zero_ into an expanded view: base", F, TENSOR_F32, zw, 3, 0, 0, false);
    /* a write into the base is visible through its views */
    tensor_fill_(A, 4);
    for (int i = 0; i < 48; i++) w[i] = 4;
    CHECK_FLOATS("view sees fill_ of its base", v, TENSOR_F64, w, 48, 0, 0, false);
    /* refused: writes into an expanded view that add, multiply or copy */
    tensor_clear_error();
    CHECK(tensor_add_(fe, tensor_ones(TENSOR_SHAPE(4, 3), TENSOR_F32)) == NULL);
    CHECK_ERROR_HAS("tensor_add_", "single memory location");
    tensor_clear_error();
    CHECK(tensor_mul_scalar_(fe, 2) == NULL);
    CHECK_ERROR_HAS("tensor_mul_scalar_", "single memory location");
    tensor_clear_error();
    CHECK(tensor_copy_(fe, tensor_ones(TENSOR_SHAPE(4, 3), TENSOR_F32)) == NULL);
    CHECK_ERROR_HAS("tensor_copy_", "single memory location");
    tensor_clear_error();
    CHECK_FLOATS("refused writes leave the base", F, TENSOR_F32, zw, 3, 0, 0, false);
}

/* ============================================================================================== */
/* bad inputs: one function per op, called by the registry sweep (tests/test_registry.c)          */
/* ============================================================================================== */

static tensor *bools3(void) { return tensor_ones(TENSOR_SHAPE(3), TENSOR_BOOL); }
static tensor *f23(void) { return tensor_ones(TENSOR_SHAPE(2, 3), TENSOR_F32); }
static tensor *f4(void) { return tensor_ones(TENSOR_SHAPE(4), TENSOR_F32); }

/* unary ops: a NULL input; NUM ones refuse bool */
#define BAD_UNARY(name) \
    void bad_input_##name(void) { CHECK_BAD(tensor_##name(NULL), "tensor_" #name); }
#define BAD_UNARY_NUM(name)                                  \
    void bad_input_##name(void) {                            \
        CHECK_BAD(tensor_##name(NULL), "tensor_" #name);     \
        CHECK_BAD(tensor_##name(bools3()), "tensor_" #name); \
    }
BAD_UNARY_NUM(neg)
BAD_UNARY_NUM(abs)
BAD_UNARY(sign)
BAD_UNARY(sqrt)
BAD_UNARY(rsqrt)
BAD_UNARY(square)
BAD_UNARY(reciprocal)
BAD_UNARY(exp)
BAD_UNARY(exp2)
BAD_UNARY(expm1)
BAD_UNARY(log)
BAD_UNARY(log2)
BAD_UNARY(log1p)
BAD_UNARY(sin)
BAD_UNARY(cos)
BAD_UNARY(tan)
BAD_UNARY(asin)
BAD_UNARY(acos)
BAD_UNARY(atan)
BAD_UNARY(sinh)
BAD_UNARY(cosh)
BAD_UNARY(tanh)
BAD_UNARY(asinh)
BAD_UNARY(acosh)
BAD_UNARY(atanh)
BAD_UNARY(sigmoid)
BAD_UNARY(logsigmoid)
BAD_UNARY_NUM(relu)
BAD_UNARY_NUM(relu6)
BAD_UNARY(gelu)
BAD_UNARY(gelu_tanh)
BAD_UNARY(silu)
BAD_UNARY(mish)
BAD_UNARY(softplus)
BAD_UNARY(erf)
BAD_UNARY(floor)
BAD_UNARY(ceil)
BAD_UNARY(round)
BAD_UNARY(trunc)
BAD_UNARY(logical_not)
BAD_UNARY(isnan)
BAD_UNARY(isinf)

void bad_input_leaky_relu(void) { CHECK_BAD(tensor_leaky_relu(NULL, 0.01), "tensor_leaky_relu"); }
void bad_input_elu(void) { CHECK_BAD(tensor_elu(NULL, 1.0), "tensor_elu"); }
void bad_input_hardtanh(void) {
    CHECK_BAD(tensor_hardtanh(NULL, -1, 1), "tensor_hardtanh");
    CHECK_BAD(tensor_hardtanh(bools3(), -1, 1), "tensor_hardtanh");
    CHECK_BAD(tensor_hardtanh(bools3(), -0.5, 0.5), "tensor_hardtanh");
}
void bad_input_clamp(void) {
    CHECK_BAD(tensor_clamp(NULL, -1, 1), "tensor_clamp");
    CHECK_BAD(tensor_clamp(bools3(), 0, 1), "tensor_clamp");
}

/* binary ops: NULL on either side, shapes that do not broadcast (zero-size included) */
#define BAD_BINARY_COMMON(name)                                                                        \
    CHECK_BAD(tensor_##name(NULL, f4()), "tensor_" #name);                                             \
    CHECK_BAD(tensor_##name(f4(), NULL), "tensor_" #name);                                             \
    CHECK_BAD(tensor_##name(NULL, NULL), "tensor_" #name);                                             \
    CHECK_BAD(tensor_##name(f23(), f4()), "tensor_" #name);                                            \
    CHECK_BAD(tensor_##name(tensor_ones(TENSOR_SHAPE(2, 0), TENSOR_F32), tensor_ones(TENSOR_SHAPE(3, 1), TENSOR_F32)), "tensor_" #name);
#define BAD_BINARY(name) \
    void bad_input_##name(void) { BAD_BINARY_COMMON(name) }
BAD_BINARY(add)
BAD_BINARY(mul)
BAD_BINARY(div)
BAD_BINARY(pow)
BAD_BINARY(maximum)
BAD_BINARY(minimum)
BAD_BINARY(atan2)
BAD_BINARY(eq)
BAD_BINARY(ne)
BAD_BINARY(lt)
BAD_BINARY(le)
BAD_BINARY(gt)
BAD_BINARY(ge)
BAD_BINARY(logical_and)
BAD_BINARY(logical_or)
void bad_input_sub(void) { /* NUM: no bool operand */
    BAD_BINARY_COMMON(sub)
    CHECK_BAD(tensor_sub(bools3(), bools3()), "tensor_sub");
    CHECK_BAD(tensor_sub(tensor_ones(TENSOR_SHAPE(3), TENSOR_I32), bools3()), "tensor_sub");
}
void bad_input_fmod(void) { /* NUM: no bool operand; integer division by zero */
    BAD_BINARY_COMMON(fmod)
    CHECK_BAD(tensor_fmod(bools3(), bools3()), "tensor_fmod");
    CHECK_BAD(tensor_fmod(tensor_ones(TENSOR_SHAPE(3), TENSOR_I64), tensor_zeros(TENSOR_SHAPE(3), TENSOR_I64)), "tensor_fmod");
    CHECK_BAD(tensor_fmod(tensor_ones(TENSOR_SHAPE(3), TENSOR_U8), tensor_zeros(TENSOR_SHAPE(1), TENSOR_U8)), "tensor_fmod");
}

/* scalar ops: NULL; sub of a bool tensor; integers to negative integer powers */
void bad_input_add_scalar(void) { CHECK_BAD(tensor_add_scalar(NULL, 1), "tensor_add_scalar"); }
void bad_input_sub_scalar(void) {
    CHECK_BAD(tensor_sub_scalar(NULL, 1), "tensor_sub_scalar");
    CHECK_BAD(tensor_sub_scalar(bools3(), 1), "tensor_sub_scalar");
    CHECK_BAD(tensor_sub_scalar(bools3(), 0.5), "tensor_sub_scalar");
}
void bad_input_mul_scalar(void) { CHECK_BAD(tensor_mul_scalar(NULL, 2), "tensor_mul_scalar"); }
void bad_input_div_scalar(void) { CHECK_BAD(tensor_div_scalar(NULL, 2), "tensor_div_scalar"); }
void bad_input_pow_scalar(void) {
    CHECK_BAD(tensor_pow_scalar(NULL, 2), "tensor_pow_scalar");
    CHECK_BAD(tensor_pow_scalar(tensor_ones(TENSOR_SHAPE(3), TENSOR_I32), -1), "tensor_pow_scalar");
    CHECK_BAD(tensor_pow_scalar(tensor_ones(TENSOR_SHAPE(3), TENSOR_U8), -2), "tensor_pow_scalar");
}

void bad_input_where(void) {
    CHECK_BAD(tensor_where(NULL, f4(), f4()), "tensor_where");
    CHECK_BAD(tensor_where(bools3(), NULL, f4()), "tensor_where");
    CHECK_BAD(tensor_where(bools3(), f4(), NULL), "tensor_where");
    CHECK_BAD(tensor_where(f4(), f4(), f4()), "tensor_where");                                   /* cond not bool */
    CHECK_BAD(tensor_where(tensor_ones(TENSOR_SHAPE(4), TENSOR_I32), f4(), f4()), "tensor_where");
    CHECK_BAD(tensor_where(bools3(), f4(), f4()), "tensor_where");                               /* [3] vs [4] */
    CHECK_BAD(tensor_where(tensor_ones(TENSOR_SHAPE(4), TENSOR_BOOL), f23(), tensor_ones(TENSOR_SHAPE(3), TENSOR_F32)), "tensor_where");
    CHECK_BAD(tensor_where(tensor_ones(TENSOR_SHAPE(2, 1), TENSOR_BOOL), f23(), f4()), "tensor_where");
}

void bad_input_add_(void) {
    CHECK_BAD(tensor_add_(NULL, f4()), "tensor_add_");
    CHECK_BAD(tensor_add_(f4(), NULL), "tensor_add_");
    CHECK_BAD(tensor_add_(tensor_ones(TENSOR_SHAPE(3), TENSOR_F32), f23()), "tensor_add_");       /* would enlarge a */
    CHECK_BAD(tensor_add_(tensor_ones(TENSOR_SHAPE(1, 3), TENSOR_F32), f23()), "tensor_add_");
    CHECK_BAD(tensor_add_(f23(), f4()), "tensor_add_");                                           /* no broadcast */
    CHECK_BAD(tensor_add_(tensor_ones(TENSOR_SHAPE(1, 0), TENSOR_F32), tensor_ones(TENSOR_SHAPE(5, 0), TENSOR_F32)), "tensor_add_");
    CHECK_BAD(tensor_add_(tensor_ones(TENSOR_SHAPE(3), TENSOR_I32), tensor_ones(TENSOR_SHAPE(3), TENSOR_F32)), "tensor_add_"); /* float into int */
    CHECK_BAD(tensor_add_(tensor_ones(TENSOR_SHAPE(3), TENSOR_I64), tensor_scalar(0.5, TENSOR_F64)), "tensor_add_");
    CHECK_BAD(tensor_add_(bools3(), tensor_ones(TENSOR_SHAPE(3), TENSOR_U8)), "tensor_add_");     /* int into bool */
    CHECK_BAD(tensor_add_(tensor_expand(tensor_ones(TENSOR_SHAPE(1), TENSOR_F32), 1, (const int64_t[]){3}), tensor_ones(TENSOR_SHAPE(3), TENSOR_F32)), "tensor_add_");
}
void bad_input_mul_scalar_(void) {
    CHECK_BAD(tensor_mul_scalar_(NULL, 2), "tensor_mul_scalar_");
    CHECK_BAD(tensor_mul_scalar_(tensor_ones(TENSOR_SHAPE(3), TENSOR_I32), 0.5), "tensor_mul_scalar_");
    CHECK_BAD(tensor_mul_scalar_(tensor_ones(TENSOR_SHAPE(3), TENSOR_U8), NAN), "tensor_mul_scalar_");
    CHECK_BAD(tensor_mul_scalar_(bools3(), 1), "tensor_mul_scalar_");
    CHECK_BAD(tensor_mul_scalar_(tensor_expand(tensor_ones(TENSOR_SHAPE(2, 1), TENSOR_F32), 2, (const int64_t[]){2, 5}), 2), "tensor_mul_scalar_");
}
void bad_input_copy_(void) {
    CHECK_BAD(tensor_copy_(NULL, f4()), "tensor_copy_");
    CHECK_BAD(tensor_copy_(f4(), NULL), "tensor_copy_");
    CHECK_BAD(tensor_copy_(f4(), f23()), "tensor_copy_");
    CHECK_BAD(tensor_copy_(f23(), f4()), "tensor_copy_");
    CHECK_BAD(tensor_copy_(tensor_ones(TENSOR_SHAPE(1, 0), TENSOR_F32), tensor_ones(TENSOR_SHAPE(5, 0), TENSOR_F32)), "tensor_copy_");
    CHECK_BAD(tensor_copy_(tensor_scalar(0, TENSOR_F32), f4()), "tensor_copy_");
    CHECK_BAD(tensor_copy_(tensor_expand(tensor_ones(TENSOR_SHAPE(1), TENSOR_F32), 1, (const int64_t[]){4}), f4()), "tensor_copy_");
}
void bad_input_fill_(void) { CHECK_BAD(tensor_fill_(NULL, 1), "tensor_fill_"); }
void bad_input_zero_(void) { CHECK_BAD(tensor_zero_(NULL), "tensor_zero_"); }

/* The cases above, run on their own too (the registry sweep runs them as well). */
#define CALL_BAD(name) bad_input_##name();
TEST(ew_bad_inputs) {
    CALL_BAD(neg) CALL_BAD(abs) CALL_BAD(sign) CALL_BAD(sqrt) CALL_BAD(rsqrt) CALL_BAD(square) CALL_BAD(reciprocal)
    CALL_BAD(exp) CALL_BAD(exp2) CALL_BAD(expm1) CALL_BAD(log) CALL_BAD(log2) CALL_BAD(log1p) CALL_BAD(sin) CALL_BAD(cos)
    CALL_BAD(tan) CALL_BAD(asin) CALL_BAD(acos) CALL_BAD(atan) CALL_BAD(sinh) CALL_BAD(cosh) CALL_BAD(tanh) CALL_BAD(asinh)
    CALL_BAD(acosh) CALL_BAD(atanh) CALL_BAD(sigmoid) CALL_BAD(logsigmoid) CALL_BAD(relu) CALL_BAD(relu6) CALL_BAD(gelu)
    CALL_BAD(gelu_tanh) CALL_BAD(silu) CALL_BAD(mish) CALL_BAD(softplus) CALL_BAD(erf) CALL_BAD(floor) CALL_BAD(ceil)
    CALL_BAD(round) CALL_BAD(trunc) CALL_BAD(logical_not) CALL_BAD(isnan) CALL_BAD(isinf)
    CALL_BAD(leaky_relu) CALL_BAD(elu) CALL_BAD(hardtanh) CALL_BAD(clamp)
    CALL_BAD(add) CALL_BAD(sub) CALL_BAD(mul) CALL_BAD(div) CALL_BAD(pow) CALL_BAD(maximum) CALL_BAD(minimum) CALL_BAD(atan2)
    CALL_BAD(fmod) CALL_BAD(eq) CALL_BAD(ne) CALL_BAD(lt) CALL_BAD(le) CALL_BAD(gt) CALL_BAD(ge) CALL_BAD(logical_and)
    CALL_BAD(logical_or)
    CALL_BAD(add_scalar) CALL_BAD(sub_scalar) CALL_BAD(mul_scalar) CALL_BAD(div_scalar) CALL_BAD(pow_scalar)
    CALL_BAD(where)
    CALL_BAD(add_) CALL_BAD(mul_scalar_) CALL_BAD(copy_) CALL_BAD(fill_) CALL_BAD(zero_)
}
