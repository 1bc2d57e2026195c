// >>formulas -----------------------------------------------------------------------------------
/* The scalar formula of every elementwise op, written once. The CPU kernels (>>elementwise) and
   the CUDA kernels of tensor_cuda.cu expand the same lists, so an op's value is defined in one
   place for every device. Compiled with the implementation, and by nvcc when tensor_cuda.cu
   defines TENSOR__DEVICE_SOURCE before it includes tensor.h (it needs no other implementation).

   TENSOR__UNARY_FORMULAS(X) and TENSOR__BINARY_FORMULAS(X) call X(name, FEXPR, IEXPR): the float
   formula on double x (and y), evaluated in double and rounded once to the output dtype, and the
   integer formula on int64_t x (and y) for ops that keep integer dtypes. p0, p1 are the op's
   parameters; err (an int *) is the flag a formula raises for a value it cannot compute (integer
   division by zero), which the kernel turns into an error after the loop. */
#if defined(TENSOR_IMPLEMENTATION) || defined(TENSOR__DEVICE_SOURCE)
#ifndef TENSOR__FORMULAS_DONE
#define TENSOR__FORMULAS_DONE
#include <math.h>
#include <stdint.h>

#if defined(__CUDACC__)
#define TENSOR__HOSTDEV static inline __host__ __device__
#else
#define TENSOR__HOSTDEV static inline
#endif
/* Raises a flag that several threads (CPU pool workers, GPU threads) may raise at once. */
#if defined(__CUDA_ARCH__)
#define TENSOR__FLAG_RAISE(p) (*(volatile int *)(p) = 1)
#elif (defined(__GNUC__) || defined(__clang__)) && !defined(_WIN32)
#define TENSOR__FLAG_RAISE(p) __atomic_store_n(p, 1, __ATOMIC_RELAXED)
#else
#define TENSOR__FLAG_RAISE(p) (*(p) = 1)
#endif

/* double -> integer without undefined behaviour: NaN gives 0, out-of-range saturates. */
TENSOR__HOSTDEV int64_t tensor__double_to_i64(double v) {
    if (v != v) return 0;
    if (v >= 9223372036854775807.0) return INT64_MAX;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}
/* Integer helpers: wrap on overflow like two's-complement hardware, with no undefined behaviour. */
TENSOR__HOSTDEV int64_t tensor__iadd(int64_t x, int64_t y) { return (int64_t)((uint64_t)x + (uint64_t)y); }
TENSOR__HOSTDEV int64_t tensor__isub(int64_t x, int64_t y) { return (int64_t)((uint64_t)x - (uint64_t)y); }
TENSOR__HOSTDEV int64_t tensor__imul(int64_t x, int64_t y) { return (int64_t)((uint64_t)x * (uint64_t)y); }
TENSOR__HOSTDEV int64_t tensor__ineg(int64_t x) { return (int64_t)(0 - (uint64_t)x); }
TENSOR__HOSTDEV int64_t tensor__iabs(int64_t x) { return x < 0 ? tensor__ineg(x) : x; }
TENSOR__HOSTDEV int64_t tensor__ipow(int64_t x, int64_t y) {
    if (y < 0) return x == 1 ? 1 : x == -1 ? (y & 1 ? -1 : 1) : 0; /* what truncating division gives */
    int64_t r = 1;
    while (y) { if (y & 1) r = tensor__imul(r, x); x = tensor__imul(x, x); y >>= 1; }
    return r;
}
TENSOR__HOSTDEV int64_t tensor__ifmod(int64_t x, int64_t y, int *err) {
    if (y == 0) { TENSOR__FLAG_RAISE(err); return 0; }
    if (y == -1) return 0; /* INT64_MIN % -1 would trap */
    return x % y;
}
TENSOR__HOSTDEV double tensor__fmaxnan(double x, double y) { return x != x ? x : y != y ? y : x > y ? x : y; }
TENSOR__HOSTDEV double tensor__fminnan(double x, double y) { return x != x ? x : y != y ? y : x < y ? x : y; }
TENSOR__HOSTDEV double tensor__clampd(double x, double lo, double hi) { double t = x < lo ? lo : x; return t > hi ? hi : t; }
TENSOR__HOSTDEV int64_t tensor__clampi(int64_t x, double lo, double hi) {
    int64_t t = (lo == lo && (double)x < lo) ? tensor__double_to_i64(lo) : x;
    return (hi == hi && (double)t > hi) ? tensor__double_to_i64(hi) : t;
}
TENSOR__HOSTDEV double tensor__softplus(double x) { return x > 20 ? x : log1p(exp(x)); }
TENSOR__HOSTDEV double tensor__logsigmoid(double x) { return x < 0 ? x - log1p(exp(x)) : -log1p(exp(-x)); }
TENSOR__HOSTDEV double tensor__gelu_tanh(double x) { return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }
TENSOR__HOSTDEV double tensor__sign(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : x; }
TENSOR__HOSTDEV double tensor__isinf(double x) { return x == INFINITY || x == -INFINITY; }

/* The optimizers' update of one element (torch.optim's rules, in double): p the parameter, g its
   gradient, *s1 and *s2 the state (SGD: the momentum buffer; Adam, AdamW: exp_avg and exp_avg_sq),
   each new state value rounded to the state's dtype (f32 unless s_f64) before it is used, as when
   it is stored and read back. Returns the new parameter. The CPU's reference loop and the devices'
   kernels both run this; the CPU's vector kernel is its f32 transcription (>>simd). */
TENSOR__HOSTDEV double tensor__optim_round(double v, bool f64) { return f64 ? v : (double)(float)v; }
TENSOR__HOSTDEV double tensor__optim_update(const tensor__optim_rule *r, double p, double g, double *s1, double *s2, bool s_f64) {
    if (r->kind == TENSOR__SGD) {
        if (r->weight_decay != 0) g += r->weight_decay * p;
        if (r->momentum != 0) {
            *s1 = tensor__optim_round(r->first ? g : r->momentum * *s1 + g, s_f64); /* dampening 0 */
            g = r->nesterov ? g + r->momentum * *s1 : *s1;
        }
        return p - r->lr * g;
    }
    if (r->kind == TENSOR__ADAMW) p *= 1 - r->lr * r->weight_decay;
    else if (r->weight_decay != 0) g += r->weight_decay * p;
    *s1 = tensor__optim_round(r->beta1 * *s1 + (1 - r->beta1) * g, s_f64);
    *s2 = tensor__optim_round(r->beta2 * *s2 + (1 - r->beta2) * g * g, s_f64);
    double denom = sqrt(*s2) / sqrt(r->bias2) + r->eps;
    return p - r->lr / r->bias1 * *s1 / denom;
}

/*  X(name,        float formula (double x),                    integer formula (int64_t x)) */
#define TENSOR__UNARY_FORMULAS(X)                                                       \
    X(neg,         -x,                                          tensor__ineg(x))         \
    X(abs,         fabs(x),                                     tensor__iabs(x))         \
    X(sign,        tensor__sign(x),                             (x > 0) - (x < 0))       \
    X(sqrt,        sqrt(x),                                     0)                       \
    X(rsqrt,       1.0 / sqrt(x),                               0)                       \
    X(square,      x * x,                                       tensor__imul(x, x))      \
    X(reciprocal,  1.0 / x,                                     0)                       \
    X(exp,         exp(x),                                      0)                       \
    X(exp2,        exp2(x),                                     0)                       \
    X(expm1,       expm1(x),                                    0)                       \
    X(log,         log(x),                                      0)                       \
    X(log2,        log2(x),                                     0)                       \
    X(log1p,       log1p(x),                                    0)                       \
    X(sin,         sin(x),                                      0)                       \
    X(cos,         cos(x),                                      0)                       \
    X(tan,         tan(x),                                      0)                       \
    X(asin,        asin(x),                                     0)                       \
    X(acos,        acos(x),                                     0)                       \
    X(atan,        atan(x),                                     0)                       \
    X(sinh,        sinh(x),                                     0)                       \
    X(cosh,        cosh(x),                                     0)                       \
    X(tanh,        tanh(x),                                     0)                       \
    X(asinh,       asinh(x),                                    0)                       \
    X(acosh,       acosh(x),                                    0)                       \
    X(atanh,       atanh(x),                                    0)                       \
    X(sigmoid,     1.0 / (1.0 + exp(-x)),                       0)                       \
    X(logsigmoid,  tensor__logsigmoid(x),                       0)                       \
    X(relu,        x < 0 ? 0.0 : x,                             x < 0 ? 0 : x)           \
    X(relu6,       tensor__clampd(x, 0, 6),                     tensor__clampi(x, 0, 6)) \
    X(gelu,        0.5 * x * (1 + erf(x * 0.7071067811865476)), 0)                       \
    X(gelu_tanh,   tensor__gelu_tanh(x),                        0)                       \
    X(silu,        x / (1.0 + exp(-x)),                         0)                       \
    X(mish,        x * tanh(tensor__softplus(x)),               0)                       \
    X(softplus,    tensor__softplus(x),                         0)                       \
    X(erf,         erf(x),                                      0)                       \
    X(floor,       floor(x),                                    x)                       \
    X(ceil,        ceil(x),                                     x)                       \
    X(round,       nearbyint(x),                                x)                       \
    X(trunc,       trunc(x),                                    x)                       \
    X(logical_not, x == 0,                                      x == 0)                  \
    X(isnan,       x != x,                                      0)                       \
    X(isinf,       tensor__isinf(x),                            0)                       \
    X(leaky_relu,  x > 0 ? x : p0 * x,                          0)                       \
    X(elu,         x > 0 ? x : p0 * expm1(x),                   0)                       \
    X(hardtanh,    tensor__clampd(x, p0, p1),                   tensor__clampi(x, p0, p1)) \
    X(clamp,       tensor__clampd(x, p0, p1),                   tensor__clampi(x, p0, p1))

/*  X(name,         float formula (double x, y),    integer formula (int64_t x, y)) */
#define TENSOR__BINARY_FORMULAS(X)                                        \
    X(add,         x + y,                          tensor__iadd(x, y))     \
    X(sub,         x - y,                          tensor__isub(x, y))     \
    X(mul,         x * y,                          tensor__imul(x, y))     \
    X(div,         x / y,                          0)                      \
    X(pow,         pow(x, y),                      tensor__ipow(x, y))     \
    X(maximum,     tensor__fmaxnan(x, y),          x > y ? x : y)          \
    X(minimum,     tensor__fminnan(x, y),          x < y ? x : y)          \
    X(atan2,       atan2(x, y),                    0)                      \
    X(fmod,        fmod(x, y),                     tensor__ifmod(x, y, err)) \
    X(eq,          x == y,                         x == y)                 \
    X(ne,          x != y,                         x != y)                 \
    X(lt,          x < y,                          x < y)                  \
    X(le,          x <= y,                         x <= y)                 \
    X(gt,          x > y,                          x > y)                  \
    X(ge,          x >= y,                         x >= y)                 \
    X(logical_and, x != 0 && y != 0,               x != 0 && y != 0)       \
    X(logical_or,  x != 0 || y != 0,               x != 0 || y != 0)

#endif /* TENSOR__FORMULAS_DONE */
#endif
