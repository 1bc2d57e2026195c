/* Gradient checks of the elementwise ops: every differentiable UNARY, UNARY_P, BINARY, SCALAR and
   TERNARY op of ops.def, plus clone, contiguous, to_dtype and to_device.

   gradcheck_NAME (called by the registry sweep in tests/test_autograd.c) compares each op's
   derivative with central differences in f64, on inputs drawn where the op is smooth: unary ops on a
   [3, 4] leaf and on a transposed view of a [4, 3] leaf; binary ops with broadcasting both ways (so
   the engine's reduction of broadcast dims is checked) and non-contiguous operands.
   The tests below check second derivatives (GRADGRADCHECK) of every elementwise op, the values
   PyTorch defines at kinks (checked directly, not by differences), and that NODIFF ops record no
   graph. */
#include "test.h"

/* ============================================================================================== */
/* inputs                                                                                         */
/* ============================================================================================== */

/* How a leaf's values are drawn. */
typedef enum {
    D_UNIFORM, /* uniform in [lo, hi) */
    D_SIGNED,  /* magnitude uniform in [lo, hi), random sign: away from 0 */
    D_AVOID,   /* uniform in [lo, hi), at least 0.1 away from the kinks k1 and k2 */
    D_GRID_A,  /* -2 + 0.6 k + noise: with D_GRID_B, a and b differ by >= 0.2 everywhere */
    D_GRID_B,  /* -1.7 + 0.6 k + noise */
    D_HALF     /* k + 0.5 + noise, k in -3..2: x / b stays away from integers for |b| in [0.9, 1.1] */
} dom_kind;
typedef struct { dom_kind kind; double lo, hi, k1, k2; } dom;

static dom D(dom_kind kind, double lo, double hi) { dom d; d.kind = kind; d.lo = lo; d.hi = hi; d.k1 = d.k2 = NAN; return d; }
/* the same as initializers of static tables */
#define DOM(kind, lo, hi) {kind, lo, hi, NAN, NAN}
#define DAVOID(lo, hi, k1, k2) {D_AVOID, lo, hi, k1, k2}

static double draw(dom d) {
    switch (d.kind) {
    case D_SIGNED: { double m = test_uniform(d.lo, d.hi); return test_uniform(0, 1) < 0.5 ? -m : m; }
    case D_AVOID:
        for (;;) {
            double v = test_uniform(d.lo, d.hi);
            if (!(fabs(v - d.k1) < 0.1) && !(fabs(v - d.k2) < 0.1)) return v;
        }
    case D_GRID_A: return -2.0 + 0.6 * floor(test_uniform(0, 7)) + test_uniform(-0.05, 0.05);
    case D_GRID_B: return -1.7 + 0.6 * floor(test_uniform(0, 7)) + test_uniform(-0.05, 0.05);
    case D_HALF: return floor(test_uniform(-3, 3)) + 0.5 + test_uniform(-0.15, 0.15);
    default: return test_uniform(d.lo, d.hi);
    }
}

/* An f64 leaf that requires grad, values drawn from d. */
static tensor *leaf(int ndim, const int64_t *shape, dom d) {
    tensor *t = test_leaf(ndim, shape, 0, 1);
    double *p = (double *)tensor_data_ptr(t);
    for (int64_t i = 0; i < tensor_numel(t); i++) p[i] = draw(d);
    return t;
}

/* Failures name the op: the check is run with "file [label]" as its file. */
static const char *at_op(const char *label) {
    static char buf[8][160];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s [%s]", __FILE__, label);
    return buf[k];
}
#define GC(label, f, ctx, n, in) test_gradcheck(at_op(label), __LINE__, f, ctx, n, in, 1e-6, 1e-5)
#define GGC(label, f, ctx, n, in) test_gradgradcheck(at_op(label), __LINE__, f, ctx, n, in, 1e-5, 1e-4)

/* ============================================================================================== */
/* unary-like ops: UNARY, UNARY_P, SCALAR (a fixed scalar), clone, contiguous, to_device          */
/* ============================================================================================== */

typedef tensor *(*op1)(tensor *);
/* flat: the derivative does not depend on x through differentiable ops (a constant or a mask), so
   second derivatives are checked through square(op(x)) only: that differentiates the derivative
   with respect to its incoming gradient. */
typedef struct { const char *name; op1 fn; dom d; bool flat; } ucase;

static tensor *f_u(tensor *const *in, const void *ctx) { return ((const ucase *)ctx)->fn(in[0]); }
static tensor *f_u_t(tensor *const *in, const void *ctx) { return ((const ucase *)ctx)->fn(tensor_transpose(in[0], 0, 1)); }
static tensor *f_u_sq(tensor *const *in, const void *ctx) { return tensor_square(((const ucase *)ctx)->fn(in[0])); }

static void check_unary(const ucase *c) {
    tensor *x = leaf(TENSOR_SHAPE(3, 4), c->d);
    GC(c->name, f_u, c, 1, &x);
    tensor *xt = leaf(TENSOR_SHAPE(4, 3), c->d);
    GC(c->name, f_u_t, c, 1, &xt);
}

static void check_unary_2nd(const ucase *c) {
    tensor *x = leaf(TENSOR_SHAPE(3, 4), c->d);
    if (!c->flat) {
        GGC(c->name, f_u, c, 1, &x);
        tensor *xt = leaf(TENSOR_SHAPE(4, 3), c->d);
        GGC(c->name, f_u_t, c, 1, &xt);
    }
    GGC(c->name, f_u_sq, c, 1, &x);
}

/* wrappers fixing the parameters of UNARY_P and SCALAR ops */
static tensor *leaky_relu_01(tensor *a) { return tensor_leaky_relu(a, 0.1); }
static tensor *leaky_relu_neg(tensor *a) { return tensor_leaky_relu(a, -0.3); }
static tensor *elu_13(tensor *a) { return tensor_elu(a, 1.3); }
static tensor *hardtanh_11(tensor *a) { return tensor_hardtanh(a, -1, 1); }
static tensor *hardtanh_05_15(tensor *a) { return tensor_hardtanh(a, 0.5, 1.5); }
static tensor *clamp_lo_hi(tensor *a) { return tensor_clamp(a, -0.5, 0.8); }
static tensor *clamp_no_lo(tensor *a) { return tensor_clamp(a, NAN, 0.5); }
static tensor *clamp_no_hi(tensor *a) { return tensor_clamp(a, -0.5, NAN); }
static tensor *add_scalar_15(tensor *a) { return tensor_add_scalar(a, 1.5); }
static tensor *sub_scalar_m075(tensor *a) { return tensor_sub_scalar(a, -0.75); }
static tensor *mul_scalar_25(tensor *a) { return tensor_mul_scalar(a, 2.5); }
static tensor *mul_scalar_int(tensor *a) { return tensor_mul_scalar(a, -3); }
static tensor *div_scalar_m175(tensor *a) { return tensor_div_scalar(a, -1.75); }
static tensor *pow_scalar_25(tensor *a) { return tensor_pow_scalar(a, 2.5); }
static tensor *pow_scalar_3(tensor *a) { return tensor_pow_scalar(a, 3); }
static tensor *pow_scalar_m15(tensor *a) { return tensor_pow_scalar(a, -1.5); }
static tensor *pow_scalar_m2(tensor *a) { return tensor_pow_scalar(a, -2); }
static tensor *pow_scalar_05(tensor *a) { return tensor_pow_scalar(a, 0.5); }
static tensor *to_device_cpu(tensor *a) { return tensor_to_device(a, TENSOR_CPU); }
static tensor *to_dtype_f64(tensor *a) { return tensor_to_dtype(a, TENSOR_F64); }

static tensor *logit_none(tensor *a) { return tensor_logit(a, NAN); }
static tensor *polygamma_1(tensor *a) { return tensor_polygamma(1, a); }
static tensor *polygamma_3(tensor *a) { return tensor_polygamma(3, a); }
static tensor *logit_02(tensor *a) { return tensor_logit(a, 0.2); }
static tensor *celu_07(tensor *a) { return tensor_celu(a, 0.7); }
static tensor *hardshrink_05(tensor *a) { return tensor_hardshrink(a, 0.5); }
static tensor *softshrink_05(tensor *a) { return tensor_softshrink(a, 0.5); }
static tensor *threshold_03(tensor *a) { return tensor_threshold(a, 0.3, -1); }
static tensor *clamp_min_m05(tensor *a) { return tensor_clamp_min(a, -0.5); }
static tensor *clamp_max_05(tensor *a) { return tensor_clamp_max(a, 0.5); }
static tensor *nan_to_num_(tensor *a) { return tensor_nan_to_num(a, NAN, NAN, NAN); }

#define U(name, fn, dom, flat) {#name, fn, dom, flat}
static const ucase unary_cases[] = {
    U(neg, tensor_neg, DOM(D_UNIFORM, -2, 2), true),
    U(abs, tensor_abs, DOM(D_SIGNED, 0.2, 2), false), /* its derivative g sign(x) records sign */
    U(sign, tensor_sign, DOM(D_SIGNED, 0.2, 2), true),
    U(sqrt, tensor_sqrt, DOM(D_UNIFORM, 0.3, 3), false),
    U(rsqrt, tensor_rsqrt, DOM(D_UNIFORM, 0.3, 3), false),
    U(square, tensor_square, DOM(D_UNIFORM, -2, 2), false),
    U(reciprocal, tensor_reciprocal, DOM(D_SIGNED, 0.4, 2), false),
    U(exp, tensor_exp, DOM(D_UNIFORM, -2, 2), false),
    U(exp2, tensor_exp2, DOM(D_UNIFORM, -2, 2), false),
    U(expm1, tensor_expm1, DOM(D_UNIFORM, -2, 2), false),
    U(log, tensor_log, DOM(D_UNIFORM, 0.3, 3), false),
    U(log2, tensor_log2, DOM(D_UNIFORM, 0.3, 3), false),
    U(log1p, tensor_log1p, DOM(D_UNIFORM, -0.6, 2), false),
    U(sin, tensor_sin, DOM(D_UNIFORM, -3, 3), false),
    U(cos, tensor_cos, DOM(D_UNIFORM, -3, 3), false),
    U(tan, tensor_tan, DOM(D_UNIFORM, -1.2, 1.2), false),
    U(asin, tensor_asin, DOM(D_UNIFORM, -0.9, 0.9), false),
    U(acos, tensor_acos, DOM(D_UNIFORM, -0.9, 0.9), false),
    U(atan, tensor_atan, DOM(D_UNIFORM, -3, 3), false),
    U(sinh, tensor_sinh, DOM(D_UNIFORM, -2, 2), false),
    U(cosh, tensor_cosh, DOM(D_UNIFORM, -2, 2), false),
    U(tanh, tensor_tanh, DOM(D_UNIFORM, -2, 2), false),
    U(asinh, tensor_asinh, DOM(D_UNIFORM, -3, 3), false),
    U(acosh, tensor_acosh, DOM(D_UNIFORM, 1.2, 3), false),
    U(atanh, tensor_atanh, DOM(D_UNIFORM, -0.9, 0.9), false),
    U(sigmoid, tensor_sigmoid, DOM(D_UNIFORM, -4, 4), false),
    U(logsigmoid, tensor_logsigmoid, DOM(D_UNIFORM, -4, 4), false),
    U(relu, tensor_relu, DOM(D_SIGNED, 0.1, 2), true),
    U(relu6, tensor_relu6, DAVOID(-2, 8, 0, 6), true),
    U(gelu, tensor_gelu, DOM(D_UNIFORM, -3, 3), false),
    U(gelu_tanh, tensor_gelu_tanh, DOM(D_UNIFORM, -3, 3), false),
    U(silu, tensor_silu, DOM(D_UNIFORM, -3, 3), false),
    U(mish, tensor_mish, DOM(D_UNIFORM, -3, 3), false),
    U(softplus, tensor_softplus, DOM(D_UNIFORM, -3, 3), false),
    U(softplus, tensor_softplus, DAVOID(15, 25, 20, 20), false), /* both sides of the threshold 20 */
    U(erf, tensor_erf, DOM(D_UNIFORM, -2, 2), false),
    U(leaky_relu, leaky_relu_01, DOM(D_SIGNED, 0.1, 2), true),
    U(leaky_relu, leaky_relu_neg, DOM(D_SIGNED, 0.1, 2), true),
    U(elu, elu_13, DOM(D_SIGNED, 0.1, 2), false),
    U(hardtanh, hardtanh_11, DAVOID(-2, 2, -1, 1), true),
    U(hardtanh, hardtanh_05_15, DAVOID(0, 2, 0.5, 1.5), true),
    U(clamp, clamp_lo_hi, DAVOID(-2, 2, -0.5, 0.8), true),
    U(clamp, clamp_no_lo, DAVOID(-2, 2, 0.5, 0.5), true),
    U(clamp, clamp_no_hi, DAVOID(-2, 2, -0.5, -0.5), true),
    U(add_scalar, add_scalar_15, DOM(D_UNIFORM, -2, 2), true),
    U(sub_scalar, sub_scalar_m075, DOM(D_UNIFORM, -2, 2), true),
    U(mul_scalar, mul_scalar_25, DOM(D_UNIFORM, -2, 2), true),
    U(mul_scalar, mul_scalar_int, DOM(D_UNIFORM, -2, 2), true),
    U(div_scalar, div_scalar_m175, DOM(D_UNIFORM, -2, 2), true),
    U(pow_scalar, pow_scalar_25, DOM(D_UNIFORM, 0.3, 2), false),
    U(pow_scalar, pow_scalar_3, DOM(D_UNIFORM, -2, 2), false),
    U(pow_scalar, pow_scalar_m15, DOM(D_UNIFORM, 0.3, 2), false),
    U(pow_scalar, pow_scalar_m2, DOM(D_SIGNED, 0.4, 2), false),
    U(pow_scalar, pow_scalar_05, DOM(D_UNIFORM, 0.3, 2), false),
    /* floor, ceil, round, trunc: gradient 0, away from their jumps */
    U(floor, tensor_floor, DOM(D_HALF, 0, 0), true),
    U(ceil, tensor_ceil, DOM(D_HALF, 0, 0), true),
    U(round, tensor_round, DOM(D_UNIFORM, 1.1, 1.4), true),
    U(trunc, tensor_trunc, DOM(D_HALF, 0, 0), true),
    /* the ops PyTorch users reach for */
    U(erfc, tensor_erfc, DOM(D_UNIFORM, -2, 2), false),
    U(erfinv, tensor_erfinv, DOM(D_UNIFORM, -0.9, 0.9), false),
    U(sinc, tensor_sinc, DOM(D_SIGNED, 0.2, 2), false),
    U(deg2rad, tensor_deg2rad, DOM(D_UNIFORM, -2, 2), true),
    U(rad2deg, tensor_rad2deg, DOM(D_UNIFORM, -2, 2), true),
    U(frac, tensor_frac, DOM(D_HALF, 0, 0), true),
    U(log10, tensor_log10, DOM(D_UNIFORM, 0.3, 3), false),
    U(hardswish, tensor_hardswish, DAVOID(-4, 4, -3, 3), false),
    U(hardsigmoid, tensor_hardsigmoid, DAVOID(-4, 4, -3, 3), true),
    U(selu, tensor_selu, DOM(D_SIGNED, 0.1, 2), false),
    U(softsign, tensor_softsign, DOM(D_SIGNED, 0.1, 3), false),
    U(tanhshrink, tensor_tanhshrink, DOM(D_UNIFORM, -2, 2), false),
    U(logit, logit_none, DOM(D_UNIFORM, 0.1, 0.9), false),
    U(logit, logit_02, DAVOID(0.05, 0.95, 0.2, 0.8), false),
    U(celu, celu_07, DOM(D_SIGNED, 0.1, 2), false),
    U(hardshrink, hardshrink_05, DAVOID(-2, 2, -0.5, 0.5), true),
    U(softshrink, softshrink_05, DAVOID(-2, 2, -0.5, 0.5), true),
    U(threshold, threshold_03, DAVOID(-2, 2, 0.3, 0.3), true),
    U(clamp_min, clamp_min_m05, DAVOID(-2, 2, -0.5, -0.5), true),
    U(clamp_max, clamp_max_05, DAVOID(-2, 2, 0.5, 0.5), true),
    U(nan_to_num, nan_to_num_, DOM(D_UNIFORM, -2, 2), true),
    /* lgamma's second derivative is polygamma(1, x); digamma and polygamma go on to higher orders */
    U(lgamma, tensor_lgamma, DOM(D_UNIFORM, 0.3, 4), false),
    U(lgamma, tensor_lgamma, DOM(D_UNIFORM, -1.8, -1.2), false),
    U(digamma, tensor_digamma, DOM(D_UNIFORM, 0.3, 4), false),
    U(digamma, tensor_digamma, DOM(D_UNIFORM, -1.8, -1.2), false),
    U(polygamma, polygamma_1, DOM(D_UNIFORM, 0.3, 4), false),
    U(polygamma, polygamma_3, DOM(D_UNIFORM, -2.8, -2.2), false),
    /* torch.special */
    U(special_entr, tensor_special_entr, DOM(D_UNIFORM, 0.2, 3), false),
    U(special_erfcx, tensor_special_erfcx, DOM(D_UNIFORM, -2, 12), false),
    U(special_ndtr, tensor_special_ndtr, DOM(D_UNIFORM, -3, 3), false),
    U(special_log_ndtr, tensor_special_log_ndtr, DOM(D_UNIFORM, -8, 4), false),
    U(special_ndtri, tensor_special_ndtri, DOM(D_UNIFORM, 0.05, 0.95), false),
    U(special_ndtri, tensor_special_ndtri, DOM(D_UNIFORM, 0.001, 0.015), false),
    U(i0, tensor_i0, DOM(D_UNIFORM, -3, 3), false),
    U(special_i0e, tensor_special_i0e, DOM(D_SIGNED, 0.2, 25), false),
    U(special_i1, tensor_special_i1, DOM(D_UNIFORM, -3, 3), false),
    U(special_i1e, tensor_special_i1e, DOM(D_SIGNED, 0.2, 25), false),
    U(clone, tensor_clone, DOM(D_UNIFORM, -2, 2), true),
    U(contiguous, tensor_contiguous, DOM(D_UNIFORM, -2, 2), true), /* the transposed case copies */
    U(to_device, to_device_cpu, DOM(D_UNIFORM, -2, 2), true),      /* same device: an alias */
    U(to_dtype, to_dtype_f64, DOM(D_UNIFORM, -2, 2), true),        /* same dtype: an alias */
};
#define N_UNARY_CASES ((int)(sizeof unary_cases / sizeof unary_cases[0]))

/* Every case of the op (some ops have several parameter sets); failing if there is none. */
static void check_unary_named(const char *name) {
    int found = 0;
    for (int i = 0; i < N_UNARY_CASES; i++)
        if (!strcmp(unary_cases[i].name, name)) { check_unary(&unary_cases[i]); found++; }
    CHECK_MSG(found > 0, "no unary case for %s", name);
}

#define GRADCHECK_UNARY(name) void gradcheck_##name(void) { check_unary_named(#name); }
GRADCHECK_UNARY(neg)
GRADCHECK_UNARY(abs)
GRADCHECK_UNARY(sign)
GRADCHECK_UNARY(sqrt)
GRADCHECK_UNARY(rsqrt)
GRADCHECK_UNARY(square)
GRADCHECK_UNARY(reciprocal)
GRADCHECK_UNARY(exp)
GRADCHECK_UNARY(exp2)
GRADCHECK_UNARY(expm1)
GRADCHECK_UNARY(log)
GRADCHECK_UNARY(log2)
GRADCHECK_UNARY(log1p)
GRADCHECK_UNARY(sin)
GRADCHECK_UNARY(cos)
GRADCHECK_UNARY(tan)
GRADCHECK_UNARY(asin)
GRADCHECK_UNARY(acos)
GRADCHECK_UNARY(atan)
GRADCHECK_UNARY(sinh)
GRADCHECK_UNARY(cosh)
GRADCHECK_UNARY(tanh)
GRADCHECK_UNARY(asinh)
GRADCHECK_UNARY(acosh)
GRADCHECK_UNARY(atanh)
GRADCHECK_UNARY(sigmoid)
GRADCHECK_UNARY(logsigmoid)
GRADCHECK_UNARY(relu)
GRADCHECK_UNARY(relu6)
GRADCHECK_UNARY(gelu)
GRADCHECK_UNARY(gelu_tanh)
GRADCHECK_UNARY(silu)
GRADCHECK_UNARY(mish)
GRADCHECK_UNARY(softplus)
GRADCHECK_UNARY(erf)
GRADCHECK_UNARY(leaky_relu)
GRADCHECK_UNARY(elu)
GRADCHECK_UNARY(hardtanh)
GRADCHECK_UNARY(clamp)
GRADCHECK_UNARY(floor)
GRADCHECK_UNARY(ceil)
GRADCHECK_UNARY(round)
GRADCHECK_UNARY(trunc)
GRADCHECK_UNARY(erfc)
GRADCHECK_UNARY(erfinv)
GRADCHECK_UNARY(sinc)
GRADCHECK_UNARY(deg2rad)
GRADCHECK_UNARY(rad2deg)
GRADCHECK_UNARY(frac)
GRADCHECK_UNARY(log10)
GRADCHECK_UNARY(hardswish)
GRADCHECK_UNARY(hardsigmoid)
GRADCHECK_UNARY(selu)
GRADCHECK_UNARY(softsign)
GRADCHECK_UNARY(tanhshrink)
GRADCHECK_UNARY(logit)
GRADCHECK_UNARY(celu)
GRADCHECK_UNARY(hardshrink)
GRADCHECK_UNARY(softshrink)
GRADCHECK_UNARY(threshold)
GRADCHECK_UNARY(clamp_min)
GRADCHECK_UNARY(clamp_max)
GRADCHECK_UNARY(nan_to_num)
GRADCHECK_UNARY(lgamma)
GRADCHECK_UNARY(digamma)
GRADCHECK_UNARY(polygamma)
GRADCHECK_UNARY(special_entr)
GRADCHECK_UNARY(special_erfcx)
GRADCHECK_UNARY(special_ndtr)
GRADCHECK_UNARY(special_log_ndtr)
GRADCHECK_UNARY(special_ndtri)
GRADCHECK_UNARY(i0)
GRADCHECK_UNARY(special_i0e)
GRADCHECK_UNARY(special_i1)
GRADCHECK_UNARY(special_i1e)
GRADCHECK_UNARY(add_scalar)
GRADCHECK_UNARY(sub_scalar)
GRADCHECK_UNARY(mul_scalar)
GRADCHECK_UNARY(div_scalar)
GRADCHECK_UNARY(pow_scalar)
GRADCHECK_UNARY(clone)
GRADCHECK_UNARY(contiguous)
GRADCHECK_UNARY(to_device)

/* to_dtype: the same-dtype alias (above), a hop through f32 (to_dtype with a node each way), and a
   non-contiguous input. The f32 hop rounds x +- h to f32 (spacing 1.2e-7 near 1 against h = 1e-6),
   so its differences carry up to ~6% error: checked loosely here, exactly in
   grad_elementwise_to_dtype_values. */
static tensor *f_f32_hop(tensor *const *in, const void *ctx) {
    (void)ctx;
    return tensor_to_dtype(tensor_to_dtype(tensor_transpose(in[0], 0, 1), TENSOR_F32), TENSOR_F64);
}
static tensor *f_f64_to_f64_of_view(tensor *const *in, const void *ctx) {
    (void)ctx;
    return tensor_mul(tensor_to_dtype(tensor_transpose(in[0], 0, 1), TENSOR_F64), tensor_transpose(in[0], 0, 1));
}
void gradcheck_to_dtype(void) {
    check_unary_named("to_dtype");
    tensor *x = leaf(TENSOR_SHAPE(4, 3), D(D_UNIFORM, 1, 2));
    test_gradcheck(at_op("to_dtype f64->f32->f64"), __LINE__, f_f32_hop, NULL, 1, &x, 0.1, 0.1);
    tensor *y = leaf(TENSOR_SHAPE(4, 3), D(D_UNIFORM, -2, 2));
    GC("to_dtype f64->f64 of a view", f_f64_to_f64_of_view, NULL, 1, &y);
}

/* ============================================================================================== */
/* binary ops                                                                                     */
/* ============================================================================================== */

typedef tensor *(*op2)(tensor *, tensor *);
typedef struct { const char *name; op2 fn; dom da, db; bool flat; } bcase;
enum { B_PLAIN, B_NONCONTIG, B_SQUARE };
typedef struct { const bcase *c; int mode; } bctx;

static tensor *f_b(tensor *const *in, const void *ctx) {
    const bctx *b = (const bctx *)ctx;
    switch (b->mode) {
    case B_NONCONTIG: /* a: [4, 3] transposed; b: [3, 8] every second column; both [3, 4] views */
        return b->c->fn(tensor_transpose(in[0], 0, 1), tensor_slice(in[1], 1, 0, 8, 2));
    case B_SQUARE: return tensor_square(b->c->fn(in[0], in[1]));
    default: return b->c->fn(in[0], in[1]);
    }
}

static const bcase binary_cases[] = {
    {"add", tensor_add, DOM(D_UNIFORM, -2, 2), DOM(D_UNIFORM, -2, 2), true},
    {"sub", tensor_sub, DOM(D_UNIFORM, -2, 2), DOM(D_UNIFORM, -2, 2), true},
    {"mul", tensor_mul, DOM(D_UNIFORM, -2, 2), DOM(D_UNIFORM, -2, 2), false},
    {"div", tensor_div, DOM(D_UNIFORM, -2, 2), DOM(D_SIGNED, 0.5, 2), false},
    {"pow", tensor_pow, DOM(D_UNIFORM, 0.5, 2), DOM(D_UNIFORM, -1.5, 2.5), false},
    {"maximum", tensor_maximum, DOM(D_GRID_A, 0, 0), DOM(D_GRID_B, 0, 0), true},
    {"minimum", tensor_minimum, DOM(D_GRID_A, 0, 0), DOM(D_GRID_B, 0, 0), true},
    {"atan2", tensor_atan2, DOM(D_SIGNED, 0.3, 2), DOM(D_UNIFORM, -2, 2), false},
    {"fmod", tensor_fmod, DOM(D_HALF, 0, 0), DOM(D_SIGNED, 0.9, 1.1), true},
    {"hypot", tensor_hypot, DOM(D_SIGNED, 0.3, 2), DOM(D_SIGNED, 0.3, 2), false},
    {"logaddexp", tensor_logaddexp, DOM(D_UNIFORM, -2, 2), DOM(D_UNIFORM, -2, 2), false},
    {"logaddexp2", tensor_logaddexp2, DOM(D_UNIFORM, -2, 2), DOM(D_UNIFORM, -2, 2), false},
    {"copysign", tensor_copysign, DOM(D_SIGNED, 0.3, 2), DOM(D_SIGNED, 0.3, 2), true},
    {"remainder", tensor_remainder, DOM(D_HALF, 0, 0), DOM(D_SIGNED, 0.9, 1.1), true},
    {"fmax", tensor_fmax, DOM(D_GRID_A, 0, 0), DOM(D_GRID_B, 0, 0), true},
    {"fmin", tensor_fmin, DOM(D_GRID_A, 0, 0), DOM(D_GRID_B, 0, 0), true},
    {"xlogy", tensor_xlogy, DOM(D_UNIFORM, -2, 2), DOM(D_UNIFORM, 0.3, 3), false},
    {"xlog1py", tensor_xlog1py, DOM(D_UNIFORM, -2, 2), DOM(D_UNIFORM, -0.6, 2), false},
    {"float_power", tensor_float_power, DOM(D_UNIFORM, 0.5, 2), DOM(D_UNIFORM, -1.5, 2.5), false},
    {"ldexp", tensor_ldexp, DOM(D_UNIFORM, -2, 2), DOM(D_UNIFORM, -2, 2), false},
};
#define N_BINARY_CASES ((int)(sizeof binary_cases / sizeof binary_cases[0]))

static const bcase *binary_case(const char *name) {
    for (int i = 0; i < N_BINARY_CASES; i++)
        if (!strcmp(binary_cases[i].name, name)) return &binary_cases[i];
    return NULL;
}

/* Shapes of (a, b): broadcasting each way, a 0-dim operand, equal shapes. */
typedef struct { int na; int64_t a[2]; int nb; int64_t b[2]; } shape_pair;
static const shape_pair pairs[] = {
    {2, {3, 1}, 2, {1, 4}},
    {2, {2, 3}, 1, {3, 0}},
    {1, {3, 0}, 2, {2, 3}},
    {0, {0, 0}, 1, {3, 0}},
    {1, {3, 0}, 0, {0, 0}},
    {2, {3, 4}, 2, {3, 4}},
};

static void check_binary(const bcase *c) {
    bctx ctx = {c, B_PLAIN};
    for (int i = 0; i < (int)(sizeof pairs / sizeof pairs[0]); i++) {
        tensor *in[2] = {leaf(pairs[i].na, pairs[i].a, c->da), leaf(pairs[i].nb, pairs[i].b, c->db)};
        GC(c->name, f_b, &ctx, 2, in);
    }
    /* one operand a constant (no grad), each way */
    for (int k = 0; k < 2; k++) {
        tensor *in[2] = {leaf(TENSOR_SHAPE(2, 3), c->da), leaf(TENSOR_SHAPE(3), c->db)};
        tensor_set_requires_grad(in[k], false);
        GC(c->name, f_b, &ctx, 2, in);
    }
    bctx nc = {c, B_NONCONTIG};
    tensor *in[2] = {leaf(TENSOR_SHAPE(4, 3), c->da), leaf(TENSOR_SHAPE(3, 8), c->db)};
    GC(c->name, f_b, &nc, 2, in);
}

static void check_binary_2nd(const bcase *c) {
    bctx plain = {c, B_PLAIN}, sq = {c, B_SQUARE}, nc = {c, B_NONCONTIG};
    tensor *in[2] = {leaf(TENSOR_SHAPE(3, 1), c->da), leaf(TENSOR_SHAPE(1, 4), c->db)};
    tensor *in0[2] = {leaf(0, NULL, c->da), leaf(TENSOR_SHAPE(3), c->db)};
    tensor *innc[2] = {leaf(TENSOR_SHAPE(4, 3), c->da), leaf(TENSOR_SHAPE(3, 8), c->db)};
    if (!c->flat) {
        GGC(c->name, f_b, &plain, 2, in);
        GGC(c->name, f_b, &plain, 2, in0);
        GGC(c->name, f_b, &nc, 2, innc);
    }
    GGC(c->name, f_b, &sq, 2, in);
    GGC(c->name, f_b, &sq, 2, in0);
}

#define GRADCHECK_BINARY(name) void gradcheck_##name(void) { const bcase *c = binary_case(#name); CHECK(c != NULL); if (c) check_binary(c); }
GRADCHECK_BINARY(add)
GRADCHECK_BINARY(sub)
GRADCHECK_BINARY(mul)
GRADCHECK_BINARY(div)
GRADCHECK_BINARY(pow)
GRADCHECK_BINARY(maximum)
GRADCHECK_BINARY(minimum)
GRADCHECK_BINARY(atan2)
GRADCHECK_BINARY(fmod)
GRADCHECK_BINARY(hypot)
GRADCHECK_BINARY(logaddexp)
GRADCHECK_BINARY(logaddexp2)
GRADCHECK_BINARY(copysign)
GRADCHECK_BINARY(remainder)
GRADCHECK_BINARY(fmax)
GRADCHECK_BINARY(fmin)
GRADCHECK_BINARY(xlogy)
GRADCHECK_BINARY(xlog1py)
GRADCHECK_BINARY(float_power)
GRADCHECK_BINARY(ldexp)

/* ============================================================================================== */
/* where                                                                                          */
/* ============================================================================================== */

/* in[0] is the bool condition (no grad), in[1] a, in[2] b; ctx: nonzero to take a transposed. */
static tensor *f_where(tensor *const *in, const void *ctx) {
    int mode = *(const int *)ctx;
    tensor *a = mode == 1 ? tensor_transpose(in[1], 0, 1) : in[1];
    tensor *r = tensor_where(in[0], a, in[2]);
    return mode == 2 ? tensor_square(r) : r;
}

static tensor *bool_tensor(int ndim, const int64_t *shape, const double *v) { return test_tensor(TENSOR_BOOL, ndim, shape, v); }

static const double cond_v[12] = {1, 0, 0, 1, 1, 1, 0, 0, 1, 0, 1, 0};

void gradcheck_where(void) {
    dom d = D(D_UNIFORM, -2, 2);
    int plain = 0, transposed = 1;
    /* cond [3, 1], a [3, 4], b [4] */
    tensor *in1[3] = {bool_tensor(TENSOR_SHAPE(3, 1), cond_v), leaf(TENSOR_SHAPE(3, 4), d), leaf(TENSOR_SHAPE(4), d)};
    GC("where", f_where, &plain, 3, in1);
    /* cond [4], a [3, 1], b [1, 4]: every operand broadcast */
    tensor *in2[3] = {bool_tensor(TENSOR_SHAPE(4), cond_v), leaf(TENSOR_SHAPE(3, 1), d), leaf(TENSOR_SHAPE(1, 4), d)};
    GC("where", f_where, &plain, 3, in2);
    /* cond [3, 4], a transposed from [4, 3], b 0-dim */
    tensor *in3[3] = {bool_tensor(TENSOR_SHAPE(3, 4), cond_v), leaf(TENSOR_SHAPE(4, 3), d), leaf(0, NULL, d)};
    GC("where", f_where, &transposed, 3, in3);
    /* only b requires grad */
    tensor *in4[3] = {bool_tensor(TENSOR_SHAPE(3, 1), cond_v), leaf(TENSOR_SHAPE(3, 4), d), leaf(TENSOR_SHAPE(3, 4), d)};
    tensor_set_requires_grad(in4[1], false);
    GC("where", f_where, &plain, 3, in4);
}

/* ============================================================================================== */
/* double backward                                                                                */
/* ============================================================================================== */

TEST(grad_elementwise_double_backward_unary) {
    for (int i = 0; i < N_UNARY_CASES; i++) {
        tensor_scope_begin();
        check_unary_2nd(&unary_cases[i]);
        tensor_scope_end();
    }
}

TEST(grad_elementwise_double_backward_binary) {
    for (int i = 0; i < N_BINARY_CASES; i++) {
        tensor_scope_begin();
        check_binary_2nd(&binary_cases[i]);
        tensor_scope_end();
    }
}

TEST(grad_elementwise_double_backward_where) {
    dom d = D(D_UNIFORM, -2, 2);
    int sq = 2;
    tensor *in1[3] = {bool_tensor(TENSOR_SHAPE(3, 1), cond_v), leaf(TENSOR_SHAPE(3, 4), d), leaf(TENSOR_SHAPE(4), d)};
    GGC("where", f_where, &sq, 3, in1);
    tensor *in2[3] = {bool_tensor(TENSOR_SHAPE(4), cond_v), leaf(TENSOR_SHAPE(3, 1), d), leaf(TENSOR_SHAPE(1, 4), d)};
    GGC("where", f_where, &sq, 3, in2);
}

/* The second derivative written out for a few ops, so the check does not rest on finite
   differences alone: d2/dx2 of sum(op(x)) via autograd_grad with create_graph. */
static void check_second(const char *label, op1 fn, double x0, double expect1, double expect2) {
    tensor *x = tensor_set_requires_grad(tensor_full(TENSOR_SHAPE(1), x0, TENSOR_F64), true);
    tensor *y = tensor_sum_all(fn(x));
    tensor *g1 = NULL, *g2 = NULL;
    CHECK(tensor_autograd_grad(1, &y, NULL, 1, &x, &g1, true) == 0);
    CHECK_MSG(g1 && fabs(tensor_item(g1) - expect1) <= 1e-12 * (1 + fabs(expect1)), "%s: first derivative %.17g, expected %.17g", label, g1 ? tensor_item(g1) : NAN, expect1);
    tensor *s = tensor_sum_all(g1);
    CHECK(tensor_autograd_grad(1, &s, NULL, 1, &x, &g2, false) == 0);
    CHECK_MSG(g2 && fabs(tensor_item(g2) - expect2) <= 1e-12 * (1 + fabs(expect2)), "%s: second derivative %.17g, expected %.17g", label, g2 ? tensor_item(g2) : NAN, expect2);
}

TEST(grad_elementwise_second_derivative_values) {
    check_second("exp", tensor_exp, 0.7, exp(0.7), exp(0.7));
    check_second("sin", tensor_sin, 0.7, cos(0.7), -sin(0.7));
    check_second("log", tensor_log, 0.7, 1 / 0.7, -1 / (0.7 * 0.7));
    check_second("sqrt", tensor_sqrt, 0.7, 0.5 / sqrt(0.7), -0.25 * pow(0.7, -1.5));
    check_second("tanh", tensor_tanh, 0.7, 1 - tanh(0.7) * tanh(0.7), -2 * tanh(0.7) * (1 - tanh(0.7) * tanh(0.7)));
    check_second("pow_scalar 3", pow_scalar_3, -0.7, 3 * 0.49, 6 * -0.7);
    double s = 1 / (1 + exp(-0.7));
    check_second("sigmoid", tensor_sigmoid, 0.7, s * (1 - s), s * (1 - s) * (1 - 2 * s));
    check_second("elu x < 0", elu_13, -0.7, 1.3 * exp(-0.7), 1.3 * exp(-0.7));
    check_second("abs", tensor_abs, -0.7, -1, 0);
}

/* ============================================================================================== */
/* kinks: the subgradients PyTorch defines                                                        */
/* ============================================================================================== */

/* d sum(fn(x)) / dx for x = xs (f64), compared with expect. */
static void check_grad_at(const char *label, op1 fn, int n, const double *xs, const double *expect) {
    tensor *x = tensor_set_requires_grad(tensor_from_data(xs, TENSOR_SHAPE(n), TENSOR_F64), true);
    tensor *y = tensor_sum_all(fn(x));
    CHECK_MSG(tensor_backward(y) == 0, "%s: backward failed: %s", label, tensor_last_error() ? tensor_last_error() : "?");
    double *g = tensor_grad(x) ? test_values(tensor_grad(x)) : NULL;
    CHECK_MSG(g != NULL, "%s: no gradient", label);
    for (int i = 0; g && i < n; i++)
        CHECK_MSG(g[i] == expect[i], "%s at x = %g: gradient %.17g, expected %.17g", label, xs[i], g[i], expect[i]);
    free(g);
}

static tensor *clamp_11(tensor *a) { return tensor_clamp(a, -1, 1); }
static tensor *clamp_nan_nan(tensor *a) { return tensor_clamp(a, NAN, NAN); }
static tensor *relu6_(tensor *a) { return tensor_relu6(a); }
static tensor *pow_scalar_0(tensor *a) { return tensor_pow_scalar(a, 0); }
static tensor *pow_scalar_2(tensor *a) { return tensor_pow_scalar(a, 2); }

TEST(grad_elementwise_kinks) {
    const double x[5] = {-1, 0, 2, 1, -2};
    const double relu_g[5] = {0, 0, 1, 1, 0};
    check_grad_at("relu", tensor_relu, 5, x, relu_g);
    const double abs_g[5] = {-1, 0, 1, 1, -1};
    check_grad_at("abs", tensor_abs, 5, x, abs_g);
    const double zero_g[5] = {0, 0, 0, 0, 0};
    check_grad_at("sign", tensor_sign, 5, x, zero_g);
    /* hardtanh(-1, 1): 0 at and beyond the bounds, 1 strictly inside */
    const double ht_x[5] = {-1, 1, 0, -2, 2}, ht_g[5] = {0, 0, 1, 0, 0};
    check_grad_at("hardtanh", hardtanh_11, 5, ht_x, ht_g);
    /* clamp(-1, 1): 1 on [lo, hi] bounds included (PyTorch: x >= min && x <= max) */
    const double cl_g[5] = {1, 1, 1, 0, 0};
    check_grad_at("clamp", clamp_11, 5, ht_x, cl_g);
    const double ones_g[5] = {1, 1, 1, 1, 1};
    check_grad_at("clamp without bounds", clamp_nan_nan, 5, ht_x, ones_g);
    /* relu6 is hardtanh(0, 6): 0 at both bounds */
    const double r6_x[5] = {0, 6, 3, -1, 7}, r6_g[5] = {0, 0, 1, 0, 0};
    check_grad_at("relu6", relu6_, 5, r6_x, r6_g);
    /* leaky_relu and elu take the negative side's slope at 0 */
    const double lr_g[5] = {0.1, 0.1, 1, 1, 0.1};
    check_grad_at("leaky_relu", leaky_relu_01, 5, x, lr_g);
    const double elu_g[5] = {1.3 * exp(-1), 1.3, 1, 1, 1.3 * exp(-2)};
    check_grad_at("elu", elu_13, 5, x, elu_g);
    /* pow with exponent 0 has derivative 0 everywhere, 0 ** 0 included (PyTorch) */
    check_grad_at("pow_scalar(x, 0)", pow_scalar_0, 5, x, zero_g);
    const double sq_g[5] = {-2, 0, 4, 2, -4};
    check_grad_at("pow_scalar(x, 2)", pow_scalar_2, 5, x, sq_g);
}

/* maximum/minimum: ties split the gradient evenly; pow: d/db is 0 where a == 0 and b >= 0. */
static void check_binary_grads(const char *label, op2 fn, int na, const int64_t *sa, const double *a, int nb, const int64_t *sb,
                               const double *b, const double *expect_a, const double *expect_b) {
    tensor *ta = tensor_set_requires_grad(tensor_from_data(a, na, sa, TENSOR_F64), true);
    tensor *tb = tensor_set_requires_grad(tensor_from_data(b, nb, sb, TENSOR_F64), true);
    tensor *y = tensor_sum_all(fn(ta, tb));
    CHECK_MSG(tensor_backward(y) == 0, "%s: backward failed: %s", label, tensor_last_error() ? tensor_last_error() : "?");
    if (!tensor_grad(ta) || !tensor_grad(tb)) { test_fail(__FILE__, __LINE__, "%s: no gradient", label); return; }
    double *ga = test_values(tensor_grad(ta)), *gb = test_values(tensor_grad(tb));
    for (int64_t i = 0; i < tensor_numel(ta); i++)
        CHECK_MSG(ga[i] == expect_a[i], "%s: grad a[%lld] = %.17g, expected %.17g", label, (long long)i, ga[i], expect_a[i]);
    for (int64_t i = 0; i < tensor_numel(tb); i++)
        CHECK_MSG(gb[i] == expect_b[i], "%s: grad b[%lld] = %.17g, expected %.17g", label, (long long)i, gb[i], expect_b[i]);
    free(ga);
    free(gb);
}

TEST(grad_elementwise_ties_and_pow_at_zero) {
    const int64_t s3[1] = {3};
    const double a[3] = {1, 2, 3}, b[3] = {1, 0, 5};
    const double max_a[3] = {0.5, 1, 0}, max_b[3] = {0.5, 0, 1};
    check_binary_grads("maximum", tensor_maximum, 1, s3, a, 1, s3, b, max_a, max_b);
    const double min_a[3] = {0.5, 0, 1}, min_b[3] = {0.5, 1, 0};
    check_binary_grads("minimum", tensor_minimum, 1, s3, a, 1, s3, b, min_a, min_b);
    /* a 0-dim b tied with two elements of a: b's gradient sums its shares (0.5 + 0.5 + 1) */
    const double a2[3] = {2, 2, 1}, b2[1] = {2};
    const double mx_a2[3] = {0.5, 0.5, 0}, mx_b2[1] = {2};
    check_binary_grads("maximum broadcast tie", tensor_maximum, 1, s3, a2, 0, NULL, b2, mx_a2, mx_b2);
    const double mn_a2[3] = {0.5, 0.5, 1}, mn_b2[1] = {1};
    check_binary_grads("minimum broadcast tie", tensor_minimum, 1, s3, a2, 0, NULL, b2, mn_a2, mn_b2);
    /* a NaN operand: neither side loses, so both get the whole gradient (PyTorch) */
    const double an[3] = {NAN, 1, 2}, bn[3] = {0, NAN, 1};
    const double ones[3] = {1, 1, 1}, max_bn[3] = {1, 1, 0}, min_an[3] = {1, 1, 0};
    check_binary_grads("maximum with NaN", tensor_maximum, 1, s3, an, 1, s3, bn, ones, max_bn);
    check_binary_grads("minimum with NaN", tensor_minimum, 1, s3, an, 1, s3, bn, min_an, ones);
    /* pow(0, b): d/db = 0 for b >= 0; d/da = b 0^(b-1): 0 for b > 1, 1 for b = 1, 0 for b = 0 */
    const double pa[3] = {0, 0, 0}, pb[3] = {2, 1, 0};
    const double pow_a[3] = {0, 1, 0}, pow_b[3] = {0, 0, 0};
    check_binary_grads("pow at a = 0", tensor_pow, 1, s3, pa, 1, s3, pb, pow_a, pow_b);
}

/* ============================================================================================== */
/* to_dtype through f32, to_device                                                                */
/* ============================================================================================== */

TEST(grad_elementwise_to_dtype_values) {
    /* f64 -> f32 -> f64: the gradient is the incoming one rounded to f32 on its way back */
    const double xv[4] = {0.1, -1.7, 2.5, 1e-3}, wv[4] = {0.3, -0.7, 1.0 / 3, 0.1};
    tensor *x = tensor_set_requires_grad(tensor_from_data(xv, TENSOR_SHAPE(4), TENSOR_F64), true);
    tensor *w = tensor_from_data(wv, TENSOR_SHAPE(4), TENSOR_F64);
    tensor *y = tensor_to_dtype(tensor_to_dtype(x, TENSOR_F32), TENSOR_F64);
    CHECK(tensor_requires_grad(y));
    CHECK(tensor_backward(tensor_sum_all(tensor_mul(y, w))) == 0);
    CHECK(tensor_grad(x) && tensor_get_dtype(tensor_grad(x)) == TENSOR_F64);
    double e[4];
    for (int i = 0; i < 4; i++) e[i] = (double)(float)wv[i];
    CHECK_VALUES(tensor_grad(x), e, 4, 0, 0);

    /* an f32 leaf converted up: d sum(x64^2 w) / dx = 2 x w, delivered as f32 */
    tensor *x32 = tensor_set_requires_grad(tensor_to_dtype(tensor_from_data(xv, TENSOR_SHAPE(4), TENSOR_F64), TENSOR_F32), true);
    tensor *up = tensor_to_dtype(x32, TENSOR_F64);
    CHECK(tensor_backward(tensor_sum_all(tensor_mul(tensor_square(up), w))) == 0);
    CHECK(tensor_grad(x32) && tensor_get_dtype(tensor_grad(x32)) == TENSOR_F32);
    for (int i = 0; i < 4; i++) e[i] = (double)(float)(2 * (double)(float)xv[i] * wv[i]);
    CHECK_VALUES(tensor_grad(x32), e, 4, 0, 0);

    /* f64 -> f16 -> f64 also records both conversions */
    tensor *h = tensor_to_dtype(tensor_to_dtype(x, TENSOR_F16), TENSOR_F64);
    CHECK(tensor_requires_grad(h));
    tensor_zero_grad(x);
    CHECK(tensor_backward(tensor_sum_all(h)) == 0);
    const double ones[4] = {1, 1, 1, 1};
    CHECK_VALUES(tensor_grad(x), ones, 4, 0, 0);

    /* to_device on the same device is an alias that keeps the graph */
    tensor *d = tensor_to_device(x, TENSOR_CPU);
    CHECK(tensor_requires_grad(d));
    tensor_zero_grad(x);
    CHECK(tensor_backward(tensor_sum_all(tensor_mul(d, w))) == 0);
    CHECK_VALUES(tensor_grad(x), wv, 4, 0, 0);
}

/* ============================================================================================== */
/* NODIFF ops record no graph                                                                     */
/* ============================================================================================== */

TEST(grad_elementwise_nondifferentiable_ops) {
    tensor *x = test_leaf(TENSOR_SHAPE(3, 4), -2, 2);
    tensor *y = test_leaf(TENSOR_SHAPE(4), -2, 2);
    tensor *r[9] = {tensor_eq(x, y), tensor_ne(x, y), tensor_lt(x, y), tensor_le(x, y), tensor_gt(x, y), tensor_ge(x, y),
                    tensor_isnan(x), tensor_isinf(x), tensor_logical_not(x)};
    for (int i = 0; i < 9; i++) {
        CHECK_MSG(r[i] != NULL, "NODIFF op %d failed: %s", i, tensor_last_error() ? tensor_last_error() : "?");
        CHECK_MSG(r[i] && !tensor_requires_grad(r[i]), "NODIFF op %d: the result requires grad", i);
    }
    CHECK(!tensor_requires_grad(tensor_logical_and(tensor_gt(x, y), tensor_lt(x, y))));
    CHECK(!tensor_requires_grad(tensor_logical_or(tensor_gt(x, y), tensor_lt(x, y))));
    /* floor, ceil, round, trunc stay in the graph with gradient 0 (PyTorch):
       d/dx (x + floor(x) + round(x) * x) = 1 + round(x) */
    tensor *z = tensor_add(tensor_add(x, tensor_floor(x)), tensor_mul(tensor_round(x), x));
    CHECK(tensor_backward(tensor_sum_all(z)) == 0);
    double *xv = test_values(x), e[12];
    for (int i = 0; i < 12; i++) e[i] = 1 + nearbyint(xv[i]);
    free(xv);
    CHECK_VALUES(tensor_grad(x), e, 12, 0, 0);
    /* a loss made of them alone has a gradient of zeros (it failed with "does not require grad") */
    tensor_op rounding[4] = {TENSOR_OP_floor, TENSOR_OP_ceil, TENSOR_OP_round, TENSOR_OP_trunc};
    tensor *(*rfn[4])(tensor *) = {tensor_floor, tensor_ceil, tensor_round, tensor_trunc};
    for (int k = 0; k < 4; k++) {
        tensor_zero_grad(x);
        tensor *l = tensor_sum_all(rfn[k](x));
        CHECK_MSG(l && tensor_requires_grad(l), "%s: not in the graph", tensor_op_name(rounding[k]));
        CHECK_MSG(tensor_backward(l) == 0, "%s: backward failed: %s", tensor_op_name(rounding[k]), tensor_last_error() ? tensor_last_error() : "?");
        const double zeros[12] = {0};
        if (tensor_grad(x)) CHECK_VALUES(tensor_grad(x), zeros, 12, 0, 0);
        else test_fail(__FILE__, __LINE__, "%s: no gradient", tensor_op_name(rounding[k]));
    }
    /* a condition computed from x: where routes the gradient, the comparison adds none */
    tensor_zero_grad(x);
    tensor *w = tensor_where(tensor_gt(x, y), x, tensor_neg(x));
    CHECK(tensor_backward(tensor_sum_all(w)) == 0);
    double *xs = test_values(x), *ys = test_values(y), e2[12];
    for (int i = 0; i < 12; i++) e2[i] = xs[i] > ys[i % 4] ? 1 : -1;
    free(xs);
    free(ys);
    CHECK_VALUES(tensor_grad(x), e2, 12, 0, 0);
}
