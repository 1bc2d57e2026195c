/* Tests of the bf16/f16 rows of the elementwise ops (generator/parts/elementwise.h: each chunk is
   widened to f32, the op's f32 kernel runs, the result is narrowed with round to nearest even).

   - half_convert_*: the row converters of this SIMD level against the scalar conversions of
     >>impl: widening over every 16-bit pattern, narrowing over every 16-bit value with each
     rounding case below it (the dropped f32 bits 0, 1, half - 1, half, half + 1, all ones) and a
     dense stride over all f32 bit patterns. A NaN may come back as any NaN where the scalar
     conversion gives NaN (F16C quiets a signaling NaN, the scalar code keeps it).
   - half_unary_*, half_binary_*: every float elementwise op on bf16 and f16 tensors against the
     reference loops (tensor_set_reference_kernels: double formula, rounded to f32, then to the
     16-bit type). Bit for bit where the f32 kernel is correctly rounded or the op runs its formula
     (no vector kernel); within 1 ulp of the 16-bit type for the f32 math functions (a few f32 ulp,
     as simd.h states, move a result across a 16-bit rounding boundary at most). Inputs: every
     16-bit pattern (NaN, inf, subnormals: f16 has many), lengths that are not multiples of the
     256-element chunk, unaligned starts, broadcast scalars of each dtype, rows mixing bf16/f16
     with f32, in-place ops.
   - half_mixed_precision_step_gives_f32_gradients: the --bf16 step of the examples (f32 master
     weights, bf16 copies and activations, the loss in f32) gives f32 gradients close to f32's.
   - half_each_isa (x86 Linux): this file again in a child process at the other SIMD levels the
     CPU runs (TENSOR_SIMD), so the AVX-512, AVX2 (F16C) and plain converters are all tested. */
#include "test.h"
#include <stdint.h>

static const tensor_dtype HALVES[2] = {TENSOR_BF16, TENSOR_F16};

static float f32_of(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint32_t bits32(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static bool half_is_nan(bool f16, uint32_t h) { return f16 ? (h & 0x7fff) > 0x7c00 : (h & 0x7fff) > 0x7f80; }
static bool f32_bits_nan(uint32_t u) { return (u & 0x7fffffffu) > 0x7f800000u; }

/* ---- the converters ---- */

TEST(half_convert_widen_every_pattern) {
    for (int f16 = 0; f16 < 2; f16++) {
        uint16_t *in = (uint16_t *)malloc(2 * 65537);
        float *out = (float *)malloc(4 * 65537);
        for (uint32_t i = 0; i < 65537; i++) in[i] = (uint16_t)(i + 12345); /* 65537: a tail */
        /* from element 1 as well: an unaligned start */
        for (int off = 0; off < 2; off++) {
            test_half_widen(f16, out, in + off, 65537 - off);
            int bad = 0;
            for (int64_t i = 0; i < 65537 - off && bad < 3; i++) {
                uint16_t h = in[i + off];
                float want = test_half_to_f32(f16, h);
                bool ok = want != want ? out[i] != out[i] : bits32(out[i]) == bits32(want);
                if (!ok && bad++ < 3)
                    test_fail(__FILE__, __LINE__, "%s widen 0x%04x: 0x%08x, scalar 0x%08x (%s)", f16 ? "f16" : "bf16", h, bits32(out[i]),
                              bits32(want), test_simd_level());
            }
        }
        free(in);
        free(out);
    }
}

/* Narrows `n` floats both ways and compares; returns the failures found. */
static int narrow_check(bool f16, const float *in, int64_t n, uint16_t *out) {
    test_half_narrow(f16, out, in, n);
    int bad = 0;
    for (int64_t i = 0; i < n; i++) {
        uint16_t want = test_f32_to_half(f16, in[i]);
        bool ok = half_is_nan(f16, want) ? half_is_nan(f16, out[i]) : out[i] == want;
        if (!ok && bad++ < 3)
            test_fail(__FILE__, __LINE__, "%s narrow 0x%08x: 0x%04x, scalar 0x%04x (%s)", f16 ? "f16" : "bf16", bits32(in[i]), out[i], want,
                      test_simd_level());
    }
    return bad;
}

TEST(half_convert_narrow_every_rounding_case) {
    enum { BLOCK = 65536 + 7 };
    float *in = (float *)malloc(4 * BLOCK);
    uint16_t *out = (uint16_t *)malloc(2 * BLOCK);
    for (int f16 = 0; f16 < 2 && in && out; f16++) {
        /* the f32 bits below the 16-bit type's last place, as a suffix of every 16-bit value */
        static const uint32_t bf16_low[] = {0, 1, 0x7fff, 0x8000, 0x8001, 0xffff};
        static const uint32_t f16_low[] = {0, 1, 0xfff, 0x1000, 0x1001, 0x1fff};
        const uint32_t *low = f16 ? f16_low : bf16_low;
        int bad = 0;
        for (int c = 0; c < 6 && !bad; c++) {
            int64_t n = 0;
            for (uint32_t h = 0; h < 65536; h++) {
                float v = test_half_to_f32(f16, (uint16_t)h);
                uint32_t u = bits32(v);
                if (f32_bits_nan(u) || (u & 0x7fffffffu) == 0x7f800000u) { in[n++] = v; continue; }
                /* bf16: the low 16 bits; f16 (normal range): the low 13, and for f16 subnormals the
                   same offsets in units of 2^-24 / 2^13 of the value's own binade */
                in[n++] = f32_of(u | low[c]);
            }
            bad += narrow_check(f16, in, n, out);
        }
        /* f16's subnormal ties, (m + 1/2) 2^-24, and the points either side of them */
        if (f16) {
            int64_t n = 0;
            for (int m = 0; m < 1024; m++)
                for (int sgn = 0; sgn < 2; sgn++) {
                    float t = (float)ldexp(m + 0.5, -24) * (sgn ? -1.0f : 1.0f);
                    in[n++] = t;
                    in[n++] = f32_of(bits32(t) + 1);
                    in[n++] = f32_of(bits32(t) - 1);
                }
            bad += narrow_check(f16, in, n, out);
        }
        /* f16's overflow edge (65504 .. 65520) and subnormal edge */
        static const float edges[] = {65504.0f, 65519.996f, 65520.0f, 65520.004f, -65520.0f, 6.1035156e-05f, 6.0975552e-05f,
                                      5.9604645e-08f, 2.9802322e-08f, 2.9802326e-08f, -2.9802322e-08f, 1e-45f, 3.3895314e38f,
                                      3.3961775e38f, 3.4028235e38f, -3.3961775e38f};
        bad += narrow_check(f16, edges, (int64_t)(sizeof edges / sizeof edges[0]), out);
        /* a dense stride over every f32 bit pattern (odd, so every low residue comes up) */
        for (uint64_t u0 = 0; u0 < (1ull << 32) && bad == 0; u0 += (uint64_t)BLOCK * 4099) {
            int64_t n = 0;
            for (uint64_t u = u0; n < BLOCK && u < (1ull << 32); u += 4099) in[n++] = f32_of((uint32_t)u);
            bad += narrow_check(f16, in, n, out);
        }
    }
    free(in);
    free(out);
}

/* ---- ops against the reference loops ---- */

/* Element bits of t (row-major; 1, 2 or 4 bytes each), malloc'd. */
static uint32_t *bits_of_tensor(tensor *t, int64_t n) {
    size_t es = tensor_get_dtype(t) == TENSOR_BOOL ? 1 : tensor_get_dtype(t) == TENSOR_F32 ? 4 : 2;
    unsigned char *raw = (unsigned char *)malloc(es * (size_t)(n ? n : 1));
    uint32_t *u = (uint32_t *)malloc(4 * (size_t)(n ? n : 1));
    if (tensor_copy_to(t, raw, es * (size_t)n) != 0) n = 0;
    for (int64_t i = 0; i < n; i++) {
        if (es == 1) u[i] = raw[i];
        else if (es == 2) { uint16_t h; memcpy(&h, raw + 2 * i, 2); u[i] = h; }
        else memcpy(&u[i], raw + 4 * i, 4);
    }
    free(raw);
    return u;
}
/* A value's place on a line where neighbouring floats of its type are 1 apart (-0 and +0 at 0). */
static int64_t ordinal(uint32_t u, int bits) {
    uint32_t sign = 1u << (bits - 1), mag = u & (sign - 1);
    return (u & sign) ? -(int64_t)mag : (int64_t)mag;
}

/* fast against ref, n elements of one dtype: bit for bit (NaN: any NaN) when ulps is 0, else
   within ulps of the type. `in` (bits of the first input, of dtype in_d; may be NULL) is printed with
   a failure, and elements whose input lies outside [lo, hi] are not compared. */
static void check_in(const char *what, tensor *fast, tensor *ref, int64_t n, int ulps, const uint32_t *in, tensor_dtype in_d, double lo, double hi) {
    if (!fast || !ref) { test_fail(__FILE__, __LINE__, "%s: NULL result (%s)", what, tensor_last_error() ? tensor_last_error() : "?"); return; }
    tensor_dtype d = tensor_get_dtype(fast);
    CHECK_MSG(d == tensor_get_dtype(ref) && tensor_numel(fast) == n && tensor_numel(ref) == n, "%s: dtype or size differ", what);
    uint32_t *a = bits_of_tensor(fast, n), *b = bits_of_tensor(ref, n);
    int bits = d == TENSOR_F32 ? 32 : d == TENSOR_BOOL ? 0 : 16;
    int bad = 0;
    for (int64_t i = 0; i < n && bad < 3; i++) {
        if (in) {
            double x = test_half_to_f32(in_d == TENSOR_F16, (uint16_t)in[i]);
            if (x < lo || x > hi) continue;
        }
        bool nan_a = bits == 32 ? f32_bits_nan(a[i]) : bits == 16 && half_is_nan(d == TENSOR_F16, a[i]);
        bool nan_b = bits == 32 ? f32_bits_nan(b[i]) : bits == 16 && half_is_nan(d == TENSOR_F16, b[i]);
        bool ok = nan_a || nan_b ? nan_a && nan_b : a[i] == b[i];
        if (!ok && ulps && !nan_a && !nan_b) {
            int64_t dist = ordinal(a[i], bits) - ordinal(b[i], bits);
            ok = dist <= ulps && dist >= -ulps;
        }
        if (ok) continue;
        bad++;
        test_fail(__FILE__, __LINE__, "%s (%s), n=%lld, element %lld (input 0x%04x): fast 0x%04x, reference 0x%04x (%s)", what,
                  tensor_dtype_name(d), (long long)n, (long long)i, in ? in[i] : 0u, a[i], b[i], test_simd_level());
    }
    free(a);
    free(b);
}
static void check_same(const char *what, tensor *fast, tensor *ref, int64_t n, int ulps) {
    check_in(what, fast, ref, n, ulps, NULL, TENSOR_F32, -INFINITY, INFINITY);
}

/* n 16-bit patterns of dtype d as a 1-d tensor starting at element `off` of its storage: pattern i
   is (seed + i * step) mod 2^16, or a pseudo-random one when step is 0. */
static tensor *patterns(tensor_dtype d, int64_t n, int64_t off, uint32_t seed, uint32_t step) {
    uint16_t *v = (uint16_t *)malloc(2 * (size_t)(n + off + 1));
    uint32_t r = seed * 2654435761u + 1;
    for (int64_t i = 0; i < n + off; i++) {
        r = r * 1664525u + 1013904223u;
        v[i] = (uint16_t)(step ? seed + (uint32_t)(i - off) * step : r >> 16);
    }
    int64_t full = n + off;
    tensor *t = tensor_from_data(v, 1, &full, d);
    free(v);
    return tensor_slice(t, 0, off, n + off, 1);
}

typedef struct { const char *name; tensor *(*op)(tensor *); int ulps; double lo, hi; } half_unary;
static tensor *u_relu6(tensor *a) { return tensor_relu6(a); }
static tensor *u_hardtanh(tensor *a) { return tensor_hardtanh(a, -0.7, 0.30000001192092896); }
static tensor *u_clamp(tensor *a) { return tensor_clamp(a, -0.1, 1e300); }
static tensor *u_clamp_nan(tensor *a) { return tensor_clamp(a, NAN, 2.5); }
static tensor *u_leaky(tensor *a) { return tensor_leaky_relu(a, 0.01); }
static tensor *u_elu(tensor *a) { return tensor_elu(a, 1.5); }
/* ulps 0: the f32 kernel is correctly rounded, or there is none and the formula runs. lo, hi:
   where the reference is accurate (the formulas of gelu and gelu_tanh cancel below -5, where the
   f32 kernels, tested against erfc in tests/test_simd.c, do not). */
#define ALL -INFINITY, INFINITY
static const half_unary UNARY[] = {
    {"neg", tensor_neg, 0, ALL}, {"abs", tensor_abs, 0, ALL}, {"sign", tensor_sign, 0, ALL}, {"sqrt", tensor_sqrt, 0, ALL}, {"rsqrt", tensor_rsqrt, 0, ALL},
    {"square", tensor_square, 0, ALL}, {"reciprocal", tensor_reciprocal, 0, ALL}, {"relu", tensor_relu, 0, ALL}, {"relu6", u_relu6, 0, ALL},
    {"hardtanh", u_hardtanh, 0, ALL}, {"clamp", u_clamp, 0, ALL}, {"clamp NaN bound", u_clamp_nan, 0, ALL}, {"leaky_relu", u_leaky, 0, ALL},
    {"elu", u_elu, 0, ALL}, {"floor", tensor_floor, 0, ALL}, {"ceil", tensor_ceil, 0, ALL}, {"round", tensor_round, 0, ALL}, {"trunc", tensor_trunc, 0, ALL},
    {"exp2", tensor_exp2, 0, ALL}, {"log2", tensor_log2, 0, ALL}, {"tan", tensor_tan, 0, ALL}, {"asin", tensor_asin, 0, ALL}, {"acos", tensor_acos, 0, ALL},
    {"atan", tensor_atan, 0, ALL}, {"sinh", tensor_sinh, 0, ALL}, {"cosh", tensor_cosh, 0, ALL}, {"asinh", tensor_asinh, 0, ALL},
    {"acosh", tensor_acosh, 0, ALL}, {"atanh", tensor_atanh, 0, ALL}, {"logsigmoid", tensor_logsigmoid, 0, ALL}, {"mish", tensor_mish, 0, ALL},
    {"exp", tensor_exp, 1, ALL}, {"log", tensor_log, 1, ALL}, {"expm1", tensor_expm1, 1, ALL}, {"log1p", tensor_log1p, 1, ALL}, {"sin", tensor_sin, 1, ALL},
    {"cos", tensor_cos, 1, ALL}, {"tanh", tensor_tanh, 1, ALL}, {"erf", tensor_erf, 1, ALL}, {"sigmoid", tensor_sigmoid, 1, ALL},
    {"silu", tensor_silu, 1, ALL}, {"softplus", tensor_softplus, 1, ALL}, {"gelu", tensor_gelu, 1, -5, 5}, {"gelu_tanh", tensor_gelu_tanh, 1, -5, 5},
};
enum { N_UNARY = sizeof UNARY / sizeof UNARY[0] };

static void compare_unary(const half_unary *u, const char *layout, tensor *x, int64_t n) {
    tensor *fast = u->op(x);
    bool was = tensor_set_reference_kernels(true);
    tensor *ref = u->op(x);
    tensor_set_reference_kernels(was);
    uint32_t *in = bits_of_tensor(x, n);
    char what[96];
    snprintf(what, sizeof what, "%s (%s)", u->name, layout);
    check_in(what, fast, ref, n, u->ulps, in, tensor_get_dtype(x), u->lo, u->hi);
    free(in);
}

/* Every 16-bit pattern, and an odd tail, from an unaligned start: large enough that the
   rows split across threads at places that are not multiples of the chunk. */
TEST(half_unary_every_pattern) {
    for (int h = 0; h < 2; h++)
        for (int k = 0; k < N_UNARY; k++) {
            tensor_scope_begin();
            int64_t n = 65536 + 77;
            compare_unary(&UNARY[k], "every pattern", patterns(HALVES[h], n, 1, 0x1234, 1), n);
            tensor_scope_end();
        }
}

/* Lengths around the chunk and the vector widths, both alignments. */
static const int64_t SIZES[] = {0, 1, 2, 7, 8, 9, 15, 16, 17, 31, 33, 255, 256, 257, 511, 513, 1000, 4097};
enum { N_SIZES = sizeof SIZES / sizeof SIZES[0] };

TEST(half_unary_lengths) {
    static const int picks[] = {0, 3, 31, 32, 42}; /* neg, sqrt, exp, log, gelu */
    for (int h = 0; h < 2; h++)
        for (size_t p = 0; p < sizeof picks / sizeof picks[0]; p++)
            for (int s = 0; s < N_SIZES; s++)
                for (int off = 0; off < 2; off++) {
                    tensor_scope_begin();
                    compare_unary(&UNARY[picks[p]], off ? "from element 1" : "aligned", patterns(HALVES[h], SIZES[s], off, 7u * (uint32_t)s, 0), SIZES[s]);
                    tensor_scope_end();
                }
}

/* A transposed view and a stepped slice take the converting loop; they agree too. */
TEST(half_unary_other_layouts) {
    for (int h = 0; h < 2; h++) {
        tensor_scope_begin();
        tensor *m = tensor_reshape(patterns(HALVES[h], 48 * 37, 0, 99, 0), TENSOR_SHAPE(48, 37));
        for (int v = 0; v < 2; v++)
            for (int k = 0; k < N_UNARY; k++) {
                tensor *views[2] = {tensor_transpose(m, 0, 1), tensor_slice(m, 1, 0, 37, 3)};
                tensor *fast = UNARY[k].op(views[v]);
                bool was = tensor_set_reference_kernels(true);
                tensor *ref = UNARY[k].op(views[v]);
                tensor_set_reference_kernels(was);
                uint32_t *in = bits_of_tensor(views[v], tensor_numel(views[v]));
                check_in(UNARY[k].name, fast, ref, tensor_numel(views[v]), UNARY[k].ulps, in, HALVES[h], UNARY[k].lo, UNARY[k].hi);
                free(in);
            }
        tensor_scope_end();
    }
}

/* ---- binary ---- */
typedef struct { const char *name; tensor *(*op)(tensor *, tensor *); } half_binary;
static const half_binary BINARY[] = {
    {"add", tensor_add}, {"sub", tensor_sub}, {"mul", tensor_mul}, {"div", tensor_div}, {"maximum", tensor_maximum},
    {"minimum", tensor_minimum}, {"pow", tensor_pow}, {"atan2", tensor_atan2}, {"fmod", tensor_fmod}, {"eq", tensor_eq},
    {"ne", tensor_ne}, {"lt", tensor_lt}, {"le", tensor_le}, {"gt", tensor_gt}, {"ge", tensor_ge},
    {"logical_and", tensor_logical_and}, {"logical_or", tensor_logical_or},
};
enum { N_BINARY = sizeof BINARY / sizeof BINARY[0] };

/* Every op here is exact in f32 (or runs its formula): bit for bit. */
static void compare_binary(const half_binary *b, const char *layout, tensor *x, tensor *y, int64_t n) {
    tensor *fast = b->op(x, y);
    bool was = tensor_set_reference_kernels(true);
    tensor *ref = b->op(x, y);
    tensor_set_reference_kernels(was);
    char what[128];
    snprintf(what, sizeof what, "%s (%s)", b->name, layout);
    check_same(what, fast, ref, n, 0);
}

/* 0-dim tensor of dtype d holding v */
static tensor *scalar_of(tensor_dtype d, double v) { return tensor_scalar(v, d); }

static void binary_layouts(const half_binary *b, tensor_dtype d, int64_t n, uint32_t seed) {
    tensor_scope_begin();
    tensor *x = patterns(d, n, 1, seed, 0), *y = patterns(d, n, 0, seed + 1, 0);
    /* ties now and then, so == and <= see equal values */
    tensor *y_ties = tensor_where(tensor_lt(tensor_abs(y), tensor_scalar(0.5, TENSOR_F32)), x, y);
    int64_t one = 1;
    tensor *expanded = tensor_expand(tensor_reshape(scalar_of(d, -1.25), 1, &one), 1, &n);
    tensor *xf = tensor_to_dtype(patterns(d, n, 0, seed + 2, 0), TENSOR_F32);
    tensor_dtype other = d == TENSOR_BF16 ? TENSOR_F16 : TENSOR_BF16;
    compare_binary(b, "arrays", x, y_ties, n);
    compare_binary(b, "0-dim b", x, scalar_of(d, 0.3), n);
    compare_binary(b, "0-dim a", scalar_of(d, -2.5), y, n);
    compare_binary(b, "expanded b", x, expanded, n);
    compare_binary(b, "NaN 0-dim b", x, scalar_of(d, NAN), n);
    compare_binary(b, "inf 0-dim a", scalar_of(d, -INFINITY), y, n);
    compare_binary(b, "-0 0-dim b", y, scalar_of(d, -0.0), n);
    compare_binary(b, "0-dim f32 b", x, scalar_of(TENSOR_F32, 0.1), n);
    compare_binary(b, "0-dim of the other 16-bit type a", scalar_of(other, 1.0 / 3), y, n);
    compare_binary(b, "0-dim f64 b (converting loop)", x, scalar_of(TENSOR_F64, 0.1), n);
    compare_binary(b, "f32 array a, 16-bit b: f32 out", xf, y, n);
    compare_binary(b, "16-bit a, f32 array b: f32 out", y, xf, n);
    tensor_scope_end();
}

TEST(half_binary_random_patterns_and_layouts) {
    for (int h = 0; h < 2; h++)
        for (int k = 0; k < N_BINARY; k++) binary_layouts(&BINARY[k], HALVES[h], 65536 + 77, 11u * (uint32_t)k + 3);
}

TEST(half_binary_lengths) {
    static const int picks[] = {0, 2, 3, 6, 11}; /* add, mul, div, pow, lt */
    for (int h = 0; h < 2; h++)
        for (size_t p = 0; p < sizeof picks / sizeof picks[0]; p++)
            for (int s = 0; s < N_SIZES; s++) binary_layouts(&BINARY[picks[p]], HALVES[h], SIZES[s], (uint32_t)s);
}

/* Every pair of a set of special values (NaN, inf, zeros, subnormals, extremes, ties). */
TEST(half_binary_special_pairs) {
    static const double sp[] = {0.0, -0.0, INFINITY, -INFINITY, NAN, 1, -1, 0.5, 3, 65504, -65504, 6.103515625e-05, 5.9604644775390625e-08,
                                -5.9604644775390625e-08, 1e-40, -1e-40, 3.3895313892515355e38, 1.00390625, 1.0009765625, 2};
    enum { S = sizeof sp / sizeof sp[0] };
    for (int h = 0; h < 2; h++) {
        tensor_scope_begin();
        double xa[S * S], ya[S * S];
        for (int i = 0; i < S; i++)
            for (int j = 0; j < S; j++) xa[i * S + j] = sp[i], ya[i * S + j] = sp[j];
        tensor *x = test_tensor(HALVES[h], TENSOR_SHAPE(S * S), xa), *y = test_tensor(HALVES[h], TENSOR_SHAPE(S * S), ya);
        for (int k = 0; k < N_BINARY; k++) compare_binary(&BINARY[k], "special pairs", x, y, S * S);
        for (int k = 0; k < N_UNARY; k++) compare_unary(&UNARY[k], "special values", x, S * S);
        tensor_scope_end();
    }
}

/* The scalar forms and the in-place ops (the output is also an input). */
TEST(half_scalar_and_inplace) {
    tensor *(*scalar_ops[])(tensor *, double) = {tensor_add_scalar, tensor_sub_scalar, tensor_mul_scalar, tensor_div_scalar, tensor_pow_scalar};
    for (int h = 0; h < 2; h++)
        for (int s = 0; s < N_SIZES; s++) {
            int64_t n = SIZES[s] * 3 + 1;
            tensor_scope_begin();
            tensor *a = patterns(HALVES[h], n, 1, 5u + (uint32_t)s, 0), *b = patterns(HALVES[h], n, 0, 77u + (uint32_t)s, 0);
            for (int k = 0; k < 5; k++) {
                tensor *fast = scalar_ops[k](a, k == 4 ? 2.0 : 0.1);
                bool was = tensor_set_reference_kernels(true);
                tensor *ref = scalar_ops[k](a, k == 4 ? 2.0 : 0.1);
                tensor_set_reference_kernels(was);
                check_same("tensor op scalar", fast, ref, n, 0);
            }
            tensor *bf = tensor_to_dtype(b, TENSOR_F32);
            tensor *x[2][3];
            for (int pass = 0; pass < 2; pass++) {
                bool was = tensor_set_reference_kernels(pass == 1);
                for (int j = 0; j < 3; j++) x[pass][j] = tensor_clone(a);
                tensor_add_(x[pass][0], b);
                tensor_add_(x[pass][1], bf); /* a 16-bit row += an f32 row */
                tensor *big = tensor_zeros(TENSOR_SHAPE(n + 1), HALVES[h]);
                tensor *view = tensor_slice(big, 0, 1, n + 1, 1);
                tensor_copy_(view, a);
                tensor_mul_scalar_(view, 1.7);
                x[pass][2] = view;
                tensor_set_reference_kernels(was);
            }
            check_same("add_", x[0][0], x[1][0], n, 0);
            check_same("add_ of an f32 row", x[0][1], x[1][1], n, 0);
            check_same("mul_scalar_ into a view from element 1", x[0][2], x[1][2], n, 0);
            tensor_scope_end();
        }
}

/* Mixed precision as examples/fashion_mnist_*.c --bf16 run it: f32 master weights, bf16 copies
   (tensor_to_dtype, differentiable) and activations, the loss in f32. The gradients come back to
   the masters as f32 and agree with an all-f32 step to bf16 precision. */
TEST(half_mixed_precision_step_gives_f32_gradients) {
    tensor_scope_begin();
    int64_t labels[16];
    for (int i = 0; i < 16; i++) labels[i] = i % 5;
    tensor *y = tensor_from_data(labels, TENSOR_SHAPE(16), TENSOR_I64);
    tensor *x = test_random(TENSOR_F32, TENSOR_SHAPE(16, 40), -1, 1);
    double *g[2][4];
    for (int pass = 0; pass < 2; pass++) {
        tensor_dtype dt = pass ? TENSOR_BF16 : TENSOR_F32;
        tensor_manual_seed(5);
        tensor *w1 = tensor_set_requires_grad(tensor_randn(TENSOR_SHAPE(24, 40), TENSOR_F32), true);
        tensor *b1 = tensor_set_requires_grad(tensor_randn(TENSOR_SHAPE(24), TENSOR_F32), true);
        tensor *w2 = tensor_set_requires_grad(tensor_randn(TENSOR_SHAPE(5, 24), TENSOR_F32), true);
        tensor *b2 = tensor_set_requires_grad(tensor_randn(TENSOR_SHAPE(5), TENSOR_F32), true);
        /* gelu, not the examples' relu: a pre-activation within bf16 rounding of 0 would flip relu's
           gradient for a whole row, a real difference but not one of precision */
        tensor *h = tensor_gelu(tensor_linear(tensor_to_dtype(x, dt), tensor_to_dtype(w1, dt), tensor_to_dtype(b1, dt)));
        tensor *logits = tensor_linear(h, tensor_to_dtype(w2, dt), tensor_to_dtype(b2, dt));
        CHECK(tensor_get_dtype(logits) == dt);
        tensor *loss = tensor_cross_entropy(tensor_to_dtype(logits, TENSOR_F32), y);
        CHECK_MSG(loss && tensor_backward(loss) == 0, "%s", tensor_last_error() ? tensor_last_error() : "?");
        tensor *params[4] = {w1, b1, w2, b2};
        for (int i = 0; i < 4; i++) {
            tensor *gr = tensor_grad(params[i]);
            CHECK_MSG(gr && tensor_get_dtype(gr) == TENSOR_F32, "pass %d: the gradient of parameter %d is not f32", pass, i);
            g[pass][i] = gr ? test_values(gr) : NULL;
        }
    }
    static const int64_t sizes[4] = {24 * 40, 24, 5 * 24, 5};
    for (int i = 0; i < 4; i++) {
        double worst = 0, scale = 0;
        for (int64_t j = 0; g[0][i] && g[1][i] && j < sizes[i]; j++) {
            worst = fmax(worst, fabs(g[1][i][j] - g[0][i][j]));
            scale = fmax(scale, fabs(g[0][i][j]));
        }
        /* bf16 keeps 8 bits: a few of its ulps through two layers */
        CHECK_MSG(worst <= 0.05 * scale, "parameter %d: bf16 gradients differ from f32 by %g (largest %g)", i, worst, scale);
        free(g[0][i]);
        free(g[1][i]);
    }
    tensor_scope_end();
}

/* The conversions leave the vector registers clean (see simd_kernels_leave_vector_state_clean). */
TEST(half_ops_leave_vector_state_clean) {
    if (test_upper_vector_state_dirty() == -1) return;
    for (int h = 0; h < 2; h++) {
        tensor_scope_begin();
        tensor *a = patterns(HALVES[h], 1000, 0, 1, 0), *b = patterns(HALVES[h], 1000, 0, 2, 0);
        tensor *r[] = {tensor_add(a, b), tensor_exp(a), tensor_lt(a, b), tensor_pow(a, b), tensor_add(tensor_to_dtype(a, TENSOR_F32), b)};
        for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) CHECK_MSG(r[i] != NULL, "op %d failed", (int)i);
        CHECK_MSG(test_upper_vector_state_dirty() != 1, "a 16-bit row left the upper vector state dirty (%s)", tensor_dtype_name(HALVES[h]));
        tensor_scope_end();
    }
}

#if defined(__linux__) && (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
/* This file at every other x86 level the CPU runs (avx2: the 8-lane and F16C converters; scalar:
   the plain loops, which sse2 uses too). */
TEST(half_each_isa) {
    if (getenv("TENSOR_SIMD")) return; /* a child */
    static const char *const levels[] = {"avx512", "avx2", "scalar"};
    for (size_t i = 0; i < sizeof levels / sizeof levels[0]; i++)
        if (test_cpu_runs(levels[i]) && !strstr(test_simd_level(), levels[i]))
            test_run_at_simd_level(__FILE__, __LINE__, levels[i], "", "test_half", NULL);
}
#endif
