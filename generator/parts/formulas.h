// >>formulas -----------------------------------------------------------------------------------
/* The scalar formula of every elementwise op, written once. The CPU kernels (>>elementwise) and
   the CUDA kernels of tensor_cuda.cu expand the same lists, so an op's value is defined in one
   place for every device. Compiled with the implementation, and by nvcc when tensor_cuda.cu
   defines TENSOR__DEVICE_SOURCE before it includes tensor.h (it needs no other implementation).

   TENSOR__UNARY_FORMULAS(X) and TENSOR__BINARY_FORMULAS(X) call X(name, FEXPR, IEXPR): the float
   formula on double x (and y), evaluated in double and rounded once to the output dtype, and the
   integer formula on int64_t x (and y) for ops that keep integer dtypes. p0, p1 are the op's
   parameters (a binary op's p0: 1 when its output is f32, which nextafter needs); err (an int *) is the flag a formula raises for a value it cannot compute (integer
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
/* gelu's tanh form as x sigmoid(2 y): 0.5 x (1 + tanh(y)) cancels to 0 below -6 (gelu_tanh(-10) is
   -1.2e-37, not -0); gelu itself is x ndtr(x) (in the list below), not 0.5 x (1 + erf(x / sqrt 2)) */
TENSOR__HOSTDEV double tensor__gelu_tanh(double x) { return x / (1 + exp(-1.5957691216057308 * (x + 0.044715 * x * x * x))); }
TENSOR__HOSTDEV double tensor__sign(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : x; }
TENSOR__HOSTDEV double tensor__isinf(double x) { return x == INFINITY || x == -INFINITY; }

/* ---- helpers of the special functions and the ops added with them (host and device alike: no
   libm function that nvcc lacks, and none that writes global state, as lgamma's signgam) ---- */
#define TENSOR__PI 3.14159265358979323846
/* log|Gamma(x)| for x >= 0.5: the recurrence up to z >= 15, then Stirling's series (its error
   there is below 1e-19). The product of the shifts is at most 15^15, so it cannot overflow. Near
   the roots 1 and 2 the result is a difference of two values near 26, so its absolute error is
   about 1e-14 there (exact at 1 and 2). */
TENSOR__HOSTDEV double tensor__lgamma_pos(double x) {
    if (x == 1 || x == 2) return 0;
    double p = 1, z = x;
    while (z < 15) { p *= z; z += 1; }
    double r = 1 / z, r2 = r * r;
    double series = r * (1.0 / 12 - r2 * (1.0 / 360 - r2 * (1.0 / 1260 - r2 * (1.0 / 1680 - r2 * (1.0 / 1188 - r2 * (691.0 / 360360 - r2 / 156))))));
    return (z - 0.5) * log(z) - z + 0.91893853320467274178 + series - log(p);
}
/* sin(pi x) for finite x, as (-1)^t sin(pi r) with t = trunc(x) and r = x - t, exact (r is x for
   |x| < 1, Sterbenz beyond), then folded into [-0.5, 0.5] (exact again): beside every integer, r
   keeps all the digits of the distance to it, which sin(pi x) itself loses (pi x is rounded
   before sin sees it: a relative error of ~1e-16 / |x - n| there). */
TENSOR__HOSTDEV double tensor__sinpi(double x) {
    double t = trunc(x), r = x - t;
    if (r > 0.5) r = 1 - r;
    else if (r < -0.5) r = -1 - r;
    double s = sin(TENSOR__PI * r);
    return fmod(t, 2.0) != 0 ? -s : s;
}
/* log|Gamma(x)| (PyTorch's lgamma): +inf at 0 and the negative integers and at +-inf, the
   reflection formula log(pi / |sin(pi x)|) - lgamma(1 - x) below 0.5, with tensor__sinpi. */
TENSOR__HOSTDEV double tensor__lgamma(double x) {
    if (x != x) return x;
    if (x == INFINITY || x == -INFINITY) return INFINITY;
    if (x <= 0 && x == floor(x)) return INFINITY;
    if (x >= 0.5) return tensor__lgamma_pos(x);
    if (fabs(x) < 1e-18) return -log(fabs(x)); /* the next term, -0.577 x, is below the last digit */
    /* log pi - log|sin(pi x)|: pi / sin(pi x) overflows for tiny x */
    return 1.14472988584940017414 - log(fabs(tensor__sinpi(x))) - tensor__lgamma_pos(1 - x);
}
/* The digamma function psi(x) (PyTorch's digamma): psi(+-0) = -+inf, NaN at the negative
   integers and -inf; reflection below 0, the recurrence up to x >= 10, then the asymptotic series. */
TENSOR__HOSTDEV double tensor__digamma(double x) {
    if (x != x || x == INFINITY) return x;
    if (x == 0) return signbit(x) ? INFINITY : -INFINITY; /* copysign(inf, -x) */
    double r = 0;
    if (x < 0) {
        if (x == floor(x)) return NAN; /* -inf included */
        r = -TENSOR__PI / tan(TENSOR__PI * (x - floor(x + 0.5))); /* tan has period pi: x reduced to [-0.5, 0.5) */
        x = 1 - x;
    }
    while (x < 10) { r -= 1 / x; x += 1; }
    double z = 1 / (x * x);
    double series = z * (1.0 / 12 - z * (1.0 / 120 - z * (1.0 / 252 - z * (1.0 / 240 - z * (1.0 / 132 - z * (691.0 / 32760 - z / 12))))));
    return r + log(x) - 0.5 / x - series;
}
/* The inverse error function: Giles' single-precision approximation, then two Newton steps on
   erf(y) = |x| (each doubles the correct digits: ~1e-7 -> ~1e-14 -> double precision); above 0.5
   up to eight (until the step is below an ulp) on log erfc(y) = log(1 - |x|) (1 - |x| exact there), so that values near +-1 keep their
   digits and the start, extrapolated beyond f32's range there, still converges. */
TENSOR__HOSTDEV double tensor__erfinv(double x) {
    if (x != x || x < -1 || x > 1) return NAN;
    if (x == 1 || x == -1) return x * INFINITY;
    double ax = fabs(x), t = 1 - ax; /* t exact for ax > 0.5 (Sterbenz) */
    double w = ax <= 0.5 ? -log1p(-ax * ax) : -log(t * (1 + ax)), p;
    if (w < 5) {
        w -= 2.5;
        p = 2.81022636e-08;
        p = 3.43273939e-07 + p * w;
        p = -3.5233877e-06 + p * w;
        p = -4.39150654e-06 + p * w;
        p = 0.00021858087 + p * w;
        p = -0.00125372503 + p * w;
        p = -0.00417768164 + p * w;
        p = 0.246640727 + p * w;
        p = 1.50140941 + p * w;
    } else {
        w = sqrt(w) - 3;
        p = -0.000200214257;
        p = 0.000100950558 + p * w;
        p = 0.00134934322 + p * w;
        p = -0.00367342844 + p * w;
        p = 0.00573950773 + p * w;
        p = -0.0076224613 + p * w;
        p = 0.00943887047 + p * w;
        p = 1.00167406 + p * w;
        p = 2.83297682 + p * w;
    }
    double y = p * ax;
    if (ax <= 0.5) {
        for (int i = 0; i < 2; i++) y += (ax - erf(y)) / (1.12837916709551257390 * exp(-y * y));
    } else { /* on log erfc(y) = log(1 - |x|): no cancellation near 1, and nearly quadratic in the tail */
        double lt = log(t);
        for (int i = 0; i < 8; i++) { /* 2 or 3 steps in f32's range, up to 6 from the extrapolated start */
            double e = erfc(y), step = (log(e) - lt) * e / (1.12837916709551257390 * exp(-y * y));
            y += step;
            if (fabs(step) <= 1e-17 * y) break;
        }
    }
    return copysign(y, x);
}
/* sin(pi x) / (pi x), 1 at 0 (PyTorch's sinc), with tensor__sinpi: 0 at the integers, and full
   precision beside them and for large x */
TENSOR__HOSTDEV double tensor__sinc(double x) {
    if (x == 0) return 1;
    return tensor__sinpi(x) / (TENSOR__PI * x);
}
/* log(x / (1 - x)) with x clamped to [eps, 1 - eps] first; eps NaN: no clamp (PyTorch's eps=None) */
TENSOR__HOSTDEV double tensor__logit(double x, double eps) {
    double z = eps == eps ? tensor__clampd(x, eps, 1 - eps) : x;
    return log(z / (1 - z));
}
TENSOR__HOSTDEV double tensor__hardsigmoid(double x) { return tensor__clampd(x + 3, 0, 6) / 6; }
TENSOR__HOSTDEV double tensor__selu(double x) {
    return 1.05070098735548049342 * (x > 0 ? x : 1.67326324235437728482 * expm1(x));
}
/* a NaN input gives 0 (softshrink) and NaN (hardshrink), as in PyTorch */
TENSOR__HOSTDEV double tensor__softshrink(double x, double l) { return x > l ? x - l : x < -l ? x + l : 0.0; }
TENSOR__HOSTDEV double tensor__hardshrink(double x, double l) { return x >= -l && x <= l ? 0.0 : x; }
/* logaddexp, logaddexp2: equal infinities give themselves (not inf - inf) */
TENSOR__HOSTDEV double tensor__logaddexp(double x, double y) {
    if ((x == INFINITY || x == -INFINITY) && x == y) return x;
    double m = x < y ? y : x;
    return m + log1p(exp(-fabs(x - y)));
}
TENSOR__HOSTDEV double tensor__logaddexp2(double x, double y) {
    if ((x == INFINITY || x == -INFINITY) && x == y) return x;
    double m = x < y ? y : x;
    return m + log1p(exp2(-fabs(x - y))) * 1.44269504088896340736;
}
/* Python's %: the sign of the divisor */
TENSOR__HOSTDEV double tensor__remainder(double x, double y) {
    double r = fmod(x, y);
    if (r != 0 && (r < 0) != (y < 0)) r += y;
    return r;
}
TENSOR__HOSTDEV int64_t tensor__iremainder(int64_t x, int64_t y, int *err) {
    if (y == 0) { TENSOR__FLAG_RAISE(err); return 0; }
    if (y == -1) return 0;
    int64_t r = x % y;
    if (r != 0 && (r < 0) != (y < 0)) r += y;
    return r;
}
/* Python's //, as PyTorch's div_floor: the quotient of x - fmod(x, y), rounded to the nearest
   integer and moved down one when fmod's sign differs from y's; a zero divisor gives x / y. */
TENSOR__HOSTDEV double tensor__floor_divide(double x, double y) {
    if (y == 0) return x / y;
    double mod = fmod(x, y), div = (x - mod) / y;
    if (mod != 0 && (y < 0) != (mod < 0)) div -= 1;
    if (div == 0) return copysign(0.0, x / y);
    double f = floor(div);
    return div - f > 0.5 ? f + 1 : f;
}
TENSOR__HOSTDEV int64_t tensor__ifloor_divide(int64_t x, int64_t y, int *err) {
    if (y == 0) { TENSOR__FLAG_RAISE(err); return 0; }
    if (y == -1) return tensor__ineg(x); /* INT64_MIN / -1 wraps */
    int64_t q = x / y, r = x % y;
    return r != 0 && (r < 0) != (y < 0) ? q - 1 : q;
}
/* xlogy and xlog1py: 0 where x == 0 unless y is NaN (PyTorch) */
TENSOR__HOSTDEV double tensor__xlogy(double x, double y) { return y != y ? y : x == 0 ? 0.0 : x * log(y); }
TENSOR__HOSTDEV double tensor__xlog1py(double x, double y) { return y != y ? y : x == 0 ? 0.0 : x * log1p(y); }
/* Shifts by a count outside [0, 64) give 0 (left) or the sign (right), as PyTorch 2 defines them;
   computed on int64, then narrowed, which gives the same for the narrower dtypes. */
TENSOR__HOSTDEV int64_t tensor__ishl(int64_t x, int64_t y) { return y < 0 || y >= 64 ? 0 : (int64_t)((uint64_t)x << y); }
TENSOR__HOSTDEV int64_t tensor__ishr(int64_t x, int64_t y) {
    if (y < 0 || y >= 64) return x < 0 ? -1 : 0;
    return x < 0 ? (int64_t)~(~(uint64_t)x >> y) : (int64_t)((uint64_t)x >> y);
}
/* gcd and lcm of the magnitudes (non-negative; INT64_MIN's magnitude wraps to itself, as PyTorch) */
TENSOR__HOSTDEV int64_t tensor__igcd(int64_t x, int64_t y) {
    uint64_t a = (uint64_t)tensor__iabs(x), b = (uint64_t)tensor__iabs(y);
    while (b) { uint64_t t = a % b; a = b; b = t; }
    return (int64_t)a;
}
TENSOR__HOSTDEV int64_t tensor__ilcm(int64_t x, int64_t y) {
    int64_t g = tensor__igcd(x, y);
    if (g == 0) return 0;
    return tensor__iabs(tensor__imul(x / g, y));
}
/* nextafter in the output's precision: f32 (f32 nonzero) or f64 */
TENSOR__HOSTDEV double tensor__nextafter(double x, double y, double f32) {
    return f32 != 0 ? (double)nextafterf((float)x, (float)y) : nextafter(x, y);
}

/* The optimizers' update of one element (torch.optim's rules, in double): p the parameter, g its
   gradient, *s1 and *s2 the state (SGD: the momentum buffer; Adam, AdamW: exp_avg and exp_avg_sq),
   each new state value rounded to the state's dtype (f32 unless s_f64) before it is used, as when
   it is stored and read back. Returns the new parameter. The CPU's reference loop and the devices'
   kernels both run this; the CPU's vector kernel is its f32 transcription (>>simd).
   It must round the same wherever it is compiled, and compilers contract a * b + c into one fused
   multiply-add where the target has one (nvcc always; gcc with FMA in the ISA, aarch64 included),
   so every multiply-add here is an explicit fma() and no other product meets an addition: a
   product only feeds an fma's addend, a division or a square root (tests/fp_contract.c checks the
   results are the same bits built with and without contraction). */
TENSOR__HOSTDEV double tensor__optim_round(double v, bool f64) { return f64 ? v : (double)(float)v; }
TENSOR__HOSTDEV double tensor__optim_update(const tensor__optim_rule *r, double p, double g, double *s1, double *s2, bool s_f64) {
    if (r->kind == TENSOR__SGD) {
        if (r->weight_decay != 0) g = fma(r->weight_decay, p, g);
        if (r->momentum != 0) {
            *s1 = tensor__optim_round(r->first ? g : fma(r->momentum, *s1, g), s_f64); /* dampening 0 */
            g = r->nesterov ? fma(r->momentum, *s1, g) : *s1;
        }
        return fma(-r->lr, g, p);
    }
    double decay = 1; /* AdamW: p (1 - lr wd) - step, rounded once; Adam: p - step */
    if (r->kind == TENSOR__ADAMW) decay = fma(-r->lr, r->weight_decay, 1.0);
    else if (r->weight_decay != 0) g = fma(r->weight_decay, p, g);
    *s1 = tensor__optim_round(fma(r->beta1, *s1, (1 - r->beta1) * g), s_f64);
    *s2 = tensor__optim_round(fma(r->beta2, *s2, (1 - r->beta2) * g * g), s_f64);
    double denom = sqrt(*s2) / sqrt(r->bias2) + r->eps;
    return fma(p, decay, -(r->lr / r->bias1 * *s1 / denom));
}

/* ---- torch.special: the normal distribution, erfcx, the modified Bessel functions of order 0
   and 1, Hurwitz's zeta and polygamma ---- */
#define TENSOR__SQRT_PI 1.77245385090551602730
#define TENSOR__SQRT2 1.41421356237309504880
#define TENSOR__LOG_SQRT_2PI 0.91893853320467274178
/* -x log x (0 at 0, -inf below it) */
TENSOR__HOSTDEV double tensor__entr(double x) { return x != x ? x : x > 0 ? -x * log(x) : x == 0 ? 0.0 : -INFINITY; }
/* exp(x^2) erfc(x). x^2 is split into its double and the rounding error of that double (fma), so
   exp(x^2) keeps its digits where x^2 is large; from 10 the asymptotic series (its terms shrink
   faster than 1 / (2 x^2)^k there), as erfc underflows from 26.5. */
TENSOR__HOSTDEV double tensor__erfcx(double x) {
    if (x != x) return x;
    if (x < -26.7) return INFINITY; /* 2 exp(x^2) overflows (and x^2's rounding error is inf - inf at -inf) */
    if (x < 10) {
        double hi = x * x, lo = fma(x, x, -hi);
        return exp(hi) * (1 + lo) * erfc(x);
    }
    double r = 1 / (2 * x * x), term = 1, sum = 1;
    for (int k = 1; k < 40; k++) {
        term *= -(2 * k - 1) * r;
        sum += term;
        if (fabs(term) < 1e-17 * sum) break;
    }
    return sum / (x * TENSOR__SQRT_PI);
}
/* The standard normal CDF, and its logarithm: log1p(-Phi(-x)) above 0, log of Phi down to -1,
   and below -1 log(erfcx(-x / sqrt 2) / 2) - x^2 / 2, which neither underflows nor cancels. */
/* erfc's relative slope is about -2z in the lower tail, so the rounding of z = -x / sqrt 2 (and of
   1 / sqrt 2 itself) would cost 2 z^2 ulps there: both are put back to first order. */
TENSOR__HOSTDEV double tensor__ndtr(double x) {
    const double r_hi = 0.70710678118654757, r_lo = -4.8336466567264567e-17; /* 1 / sqrt 2 = r_hi + r_lo */
    double z = -x * r_hi;
    if (!(z > 1) || z > 27) return 0.5 * erfc(z); /* erfc underflows from 26.6 (the correction: 0 * inf at -inf) */
    double e = fma(-x, r_hi, -z) - x * r_lo;
    return 0.5 * erfc(z) * (1 - 2 * z * e);
}
TENSOR__HOSTDEV double tensor__log_ndtr(double x) {
    if (x > 0) return log1p(-tensor__ndtr(-x));
    if (x >= -1) return log(tensor__ndtr(x));
    double t = -x / TENSOR__SQRT2;
    return log(0.5 * tensor__erfcx(t)) - t * t;
}
/* d/dx log_ndtr = pdf / Phi, as one exponential (finite where pdf and Phi both underflow) */
TENSOR__HOSTDEV double tensor__log_ndtr_slope(double x) { return exp(-0.5 * x * x - TENSOR__LOG_SQRT_2PI - tensor__log_ndtr(x)); }
/* The inverse of Phi. Between 0.02 and 0.98 sqrt 2 erfinv(2p - 1) (erfinv is accurate to the last
   digits, 2p - 1 exact or nearly so there); in the tails a rational start (Abramowitz and Stegun
   26.2.23, error below 5e-4) refined by Newton's method on log Phi(x) = log p, which keeps full
   relative precision down to the smallest p; above 0.5 by symmetry. */
TENSOR__HOSTDEV double tensor__ndtri(double p) {
    if (p != p || p < 0 || p > 1) return NAN;
    if (p == 0) return -INFINITY;
    if (p == 1) return INFINITY;
    if (p >= 0.02 && p <= 0.98) return TENSOR__SQRT2 * tensor__erfinv(2 * p - 1);
    if (p > 0.5) return -tensor__ndtri(1 - p);
    double t = sqrt(-2 * log(p));
    double x = -(t - (2.515517 + t * (0.802853 + t * 0.010328)) / (1 + t * (1.432788 + t * (0.189269 + t * 0.001308))));
    double lp = log(p);
    for (int k = 0; k < 8; k++) {
        double step = (tensor__log_ndtr(x) - lp) / tensor__log_ndtr_slope(x);
        x -= step;
        if (fabs(step) <= 1e-16 * fabs(x)) break;
    }
    return x;
}
/* The modified Bessel functions I0 and I1, scaled by exp(-|x|) when `scaled`: the power series
   (positive terms) up to |x| = 20, then the asymptotic series e^x / sqrt(2 pi x) sum_k
   (-1)^k prod_{j<=k} (4 nu^2 - (2j - 1)^2) / (k! (8x)^k), whose smallest term there is below
   e^-40. I1 is odd, I0 even. */
TENSOR__HOSTDEV double tensor__bessel_i(int nu, double x, bool scaled) {
    if (x != x) return x;
    double ax = fabs(x), v;
    if (ax == INFINITY) v = scaled ? 0.0 : INFINITY;
    else if (ax <= 20) {
        double q = 0.25 * ax * ax, term = nu ? 0.5 * ax : 1, sum = term;
        for (int k = 1; k < 200; k++) {
            term *= q / ((double)k * (double)(k + nu));
            sum += term;
            if (term < 1e-17 * sum) break;
        }
        v = scaled ? sum * exp(-ax) : sum;
    } else {
        double mu = 4.0 * nu * nu, r = 1 / (8 * ax), term = 1, sum = 1;
        for (int k = 1; k < 60; k++) {
            double t = term * -(mu - (2.0 * k - 1) * (2.0 * k - 1)) * r / k;
            if (fabs(t) >= fabs(term)) break; /* past the smallest term */
            term = t;
            sum += term;
            if (fabs(term) < 1e-17 * fabs(sum)) break;
        }
        double c = sum / sqrt(2 * TENSOR__PI * ax);
        v = scaled ? c : ax > 709 ? (c * exp(0.5 * ax)) * exp(0.5 * ax) : c * exp(ax); /* exp(ax) alone overflows first */
    }
    return nu && x < 0 ? -v : v;
}
/* Hurwitz's zeta sum_k (k + q)^-s for s > 1 and q > 0: the terms up to k + q >= max(10, s)
   summed directly, the rest by Euler-Maclaurin: w^(1-s) / (s - 1) + w^-s / 2 + sum_j B_2j / (2j)!
   s (s + 1) ... (s + 2j - 2) w^(-s-2j+1) with w = q + N. The direct sum stops as soon as what is
   left of it, at most w^(1-s) / (s - 1), is below the last digit: while w < s each term is about
   1/e of the one before or less, so the loop ends within ~60 terms for every s (s = +inf
   included: its limit 1, 0 or inf for q = 1, > 1, < 1) and every q (past 2^53, w + 1 == w); the
   count is capped besides. */
TENSOR__HOSTDEV double tensor__zeta_pos(double s, double q) {
    double sum = 0, w = q;
    for (int k = 0; (w < 10 || w < s || k < 2) && k < 80; k++, w += 1) {
        /* what is left, sum_j (w + j)^-s, is at most w^(1-s) / (s - 1) */
        double t = pow(w, -s), left = (t > 0 ? t * w : pow(w, 1 - s)) / (s - 1);
        sum += t;
        if (left <= 1e-17 * sum) return sum;
    }
    double wn = pow(w, -s);
    sum += pow(w, 1 - s) / (s - 1) + 0.5 * wn; /* w^(1-s) itself: w * w^-s underflows first */
    /* B_2j / (2j)! for j = 1..12 */
    const double b[12] = {1.0 / 12, -1.0 / 720, 1.0 / 30240, -1.0 / 1209600, 1.0 / 47900160, -691.0 / 1307674368000.0, 1.0 / 74724249600.0,
                          -3617.0 / 10670622842880000.0, 43867.0 / 5109094217170944000.0, -174611.0 / 802857662698291200000.0,
                          77683.0 / 14101100039391805440000.0, -236364091.0 / 1693824136731743669452800000.0};
    double poch = s, wp = wn / w; /* s (s+1) ... (s + 2j - 2), w^(-s-2j+1) */
    for (int j = 0; j < 12; j++) {
        double t = b[j] * poch * wp;
        sum += t;
        if (fabs(t) < 1e-17 * fabs(sum)) break;
        poch *= (s + 2 * j + 1) * (s + 2 * j + 2);
        wp /= w * w;
    }
    return sum;
}
/* Hurwitz's zeta for every q (PyTorch's domain: s == 1 inf, s < 1 NaN, q a non-positive integer
   inf, q < 0 needs an integer s). For q < 0, q = f - N with f in (0, 1): the N terms below 0 are
   (-1)^s (j - f)^-s, j = 1..N, whose sum is zeta(s, 1 - f) - zeta(s, 1 - q), so
   zeta(s, q) = f^-s + (-1)^s c^-s + zeta(s, 1 + f) + (-1)^s zeta(s, 1 + c) - (-1)^s zeta(s, 1 - q)
   with c = 1 - f = ceil(q) - q (exact): no loop over the N terms, and the two leading terms,
   which cancel exactly at a half-integer q with s odd, taken together. */
TENSOR__HOSTDEV double tensor__zeta(double s, double q) {
    if (s != s || q != q) return NAN;
    if (s == 1) return INFINITY;
    if (s < 1) return NAN;
    if (q > 0) return tensor__zeta_pos(s, q);
    if (q == floor(q)) return INFINITY;
    if (s != floor(s) || s == INFINITY) return NAN; /* (-|x|)^-s: no real value (+inf: no parity) */
    bool odd = fmod(s, 2.0) != 0;
    double f = q - floor(q), c = ceil(q) - q, lead;
    if (odd && f == c) lead = 0;
    else {
        double pf = pow(f, -s), pc = pow(c, -s);
        lead = odd ? pf - pc : pf + pc;
        if (lead != lead) lead = f < c ? INFINITY : -INFINITY; /* both overflow: the nearer to 0 wins */
    }
    double zf = tensor__zeta_pos(s, 1 + f), zc = tensor__zeta_pos(s, 1 + c), zq = tensor__zeta_pos(s, 1 - q);
    return lead + (odd ? zf - zc : zf + zc) + (odd ? zq : -zq); /* zf - zc first: 0 exactly when f == c */
}
/* The n-th derivative of digamma: (-1)^(n+1) n! zeta(n + 1, x) for n >= 1; digamma for n == 0. */
TENSOR__HOSTDEV double tensor__polygamma(double n, double x) {
    if (n == 0) return tensor__digamma(x);
    double f = 1;
    for (int k = 2; k <= (int)n && k <= 171; k++) f *= k; /* n <= 170 (tensor_polygamma); 171! is inf */
    return ((int)n % 2 ? f : -f) * tensor__zeta(n + 1, x);
}

/* ---- random samplers (the random ops of issue 14): host and device alike, so the CPU kernel and
   tensor_cuda.cu draw the same numbers from the same words ---- */
/* Philox4x32-10, the library's one copy (>>rng's tensor__philox_block and the CUDA device call it),
   with the counter's fourth word given: block
   (counter, stream, word3). The stream's own blocks have word3 0; a sampler that needs an
   unbounded number of words per element takes the blocks (its counter, stream, j), j = 0, 1, ...,
   which no other draw uses. */
TENSOR__HOSTDEV void tensor__philox_at(uint32_t k0, uint32_t k1, uint64_t counter, uint32_t stream, uint32_t word3, uint32_t out[4]) {
    uint32_t c0 = (uint32_t)counter, c1 = (uint32_t)(counter >> 32), c2 = stream, c3 = word3;
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c0, p1 = (uint64_t)0xCD9E8D57u * c2;
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c1 ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c3 ^ k1;
        c0 = n0;
        c1 = (uint32_t)p1;
        c2 = n2;
        c3 = (uint32_t)p0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    out[0] = c0;
    out[1] = c1;
    out[2] = c2;
    out[3] = c3;
}
/* Uniform in [0, 1) from two words (53 bits), as >>rng's tensor__u53. */
TENSOR__HOSTDEV double tensor__u53_of(uint32_t hi, uint32_t lo) { return (double)(((uint64_t)hi << 32 | lo) >> 11) * (1.0 / 9007199254740992.0); }
/* One Poisson(lam) sample (lam >= 0, not NaN; +inf gives +inf) from the blocks (counter, stream, j).
   lam < 10: inversion, one uniform u (block 0's words 0 and 1): the least k with u < P(X <= k),
   the CDF summed upwards from exp(-lam) (exact but for rounding; the sum stops where its terms no
   longer change it). lam >= 10: Hormann's PTRS, transformed rejection with squeeze ("The
   transformed rejection method for generating Poisson random variables", 1993), attempt j drawing
   U and V from block j; the log-factorial is tensor__lgamma_pos (no global state, unlike lgamma). */
TENSOR__HOSTDEV double tensor__poisson_sample(double lam, uint32_t k0, uint32_t k1, uint64_t counter, uint32_t stream) {
    if (!(lam > 0)) return 0;
    if (lam == INFINITY) return lam;
    uint32_t w[4];
    if (lam < 10) {
        tensor__philox_at(k0, k1, counter, stream, 0, w);
        double u = tensor__u53_of(w[0], w[1]), p = exp(-lam), cdf = p, k = 0;
        while (u >= cdf) {
            k += 1;
            p *= lam / k;
            double next = cdf + p;
            if (next == cdf) break;
            cdf = next;
        }
        return k;
    }
    double slam = sqrt(lam), loglam = log(lam), b = 0.931 + 2.53 * slam, a = -0.059 + 0.02483 * b;
    double log_invalpha = log(1.1239 + 1.1328 / (b - 3.4)), vr = 0.9277 - 3.6224 / (b - 2), k = 0;
    for (uint32_t j = 0; j < 1000; j++) { /* each attempt is accepted with probability above 0.85 */
        tensor__philox_at(k0, k1, counter, stream, j, w);
        double U = tensor__u53_of(w[0], w[1]) - 0.5, V = tensor__u53_of(w[2], w[3]), us = 0.5 - fabs(U);
        k = floor((2 * a / us + b) * U + lam + 0.43);
        if (us >= 0.07 && V <= vr) return k;
        if (k < 0 || (us < 0.013 && V > us)) continue;
        if (log(V) + log_invalpha - log(a / (us * us) + b) <= -lam + k * loglam - tensor__lgamma_pos(k + 1)) return k;
    }
    return k < 0 ? 0 : k;
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
    X(gelu,        x * tensor__ndtr(x),                         0)                       \
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
    X(erfc,        erfc(x),                                     0)                       \
    X(erfinv,      tensor__erfinv(x),                           0)                       \
    X(lgamma,      tensor__lgamma(x),                           0)                       \
    X(digamma,     tensor__digamma(x),                          0)                       \
    X(sinc,        tensor__sinc(x),                             0)                       \
    X(deg2rad,     x * 0.017453292519943295769,                 0)                       \
    X(rad2deg,     x * 57.295779513082320877,                   0)                       \
    X(frac,        x - trunc(x),                                0)                       \
    X(log10,       log10(x),                                    0)                       \
    X(signbit,     signbit(x) != 0,                             x < 0)                   \
    X(isfinite,    x == x && !tensor__isinf(x),                 1)                       \
    X(isposinf,    x == INFINITY,                               0)                       \
    X(isneginf,    x == -INFINITY,                              0)                       \
    X(hardswish,   x * tensor__hardsigmoid(x),                  0)                       \
    X(hardsigmoid, tensor__hardsigmoid(x),                      0)                       \
    X(selu,        tensor__selu(x),                             0)                       \
    X(softsign,    x / (1 + fabs(x)),                           0)                       \
    X(tanhshrink,  x - tanh(x),                                 0)                       \
    X(bitwise_not, 0,                                           ~x)                      \
    X(leaky_relu,  x > 0 ? x : p0 * x,                          0)                       \
    X(elu,         x > 0 ? x : p0 * expm1(x),                   0)                       \
    X(hardtanh,    tensor__clampd(x, p0, p1),                   tensor__clampi(x, p0, p1)) \
    X(clamp,       tensor__clampd(x, p0, p1),                   tensor__clampi(x, p0, p1)) \
    X(logit,       tensor__logit(x, p0),                        0)                       \
    X(celu,        x > 0 ? x : p0 * expm1(x / p0),              0)                       \
    X(hardshrink,  tensor__hardshrink(x, p0),                   0)                       \
    X(softshrink,  tensor__softshrink(x, p0),                   0)                       \
    X(threshold,   x <= p0 ? p1 : x,                            (double)x <= p0 ? (int64_t)p1 : x) \
    X(special_entr,     tensor__entr(x),                        0)                       \
    X(special_erfcx,    tensor__erfcx(x),                       0)                       \
    X(special_ndtr,     tensor__ndtr(x),                        0)                       \
    X(special_log_ndtr, tensor__log_ndtr(x),                    0)                       \
    X(special_ndtri,    tensor__ndtri(x),                       0)                       \
    X(i0,               tensor__bessel_i(0, x, false),          0)                       \
    X(special_i0e,      tensor__bessel_i(0, x, true),           0)                       \
    X(special_i1,       tensor__bessel_i(1, x, false),          0)                       \
    X(special_i1e,      tensor__bessel_i(1, x, true),           0)                       \
    X(polygamma,        tensor__polygamma(p0, x),               0)

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
    X(logical_or,  x != 0 || y != 0,               x != 0 || y != 0)       \
    X(hypot,       hypot(x, y),                    0)                      \
    X(logaddexp,   tensor__logaddexp(x, y),        0)                      \
    X(logaddexp2,  tensor__logaddexp2(x, y),       0)                      \
    X(copysign,    copysign(x, y),                 0)                      \
    X(nextafter,   tensor__nextafter(x, y, p0),    0)                      \
    X(remainder,   tensor__remainder(x, y),        tensor__iremainder(x, y, err)) \
    X(floor_divide, tensor__floor_divide(x, y),    tensor__ifloor_divide(x, y, err)) \
    X(fmax,        fmax(x, y),                     x > y ? x : y)          \
    X(fmin,        fmin(x, y),                     x < y ? x : y)          \
    X(heaviside,   x == 0 ? y : (double)(x > 0),   x == 0 ? y : x > 0)     \
    X(xlogy,       tensor__xlogy(x, y),            0)                      \
    X(xlog1py,     tensor__xlog1py(x, y),          0)                      \
    X(float_power, pow(x, y),                      0)                      \
    X(ldexp,       x * exp2(y),                    0)                      \
    X(logical_xor, (x != 0) != (y != 0),           (x != 0) != (y != 0))   \
    X(bitwise_and, 0,                              x & y)                  \
    X(bitwise_or,  0,                              x | y)                  \
    X(bitwise_xor, 0,                              x ^ y)                  \
    X(bitwise_left_shift, 0,                       tensor__ishl(x, y))     \
    X(bitwise_right_shift, 0,                      tensor__ishr(x, y))     \
    X(gcd,         0,                              tensor__igcd(x, y))     \
    X(lcm,         0,                              tensor__ilcm(x, y))     \
    X(special_zeta, tensor__zeta(x, y),            0)

/* ---- misc: ternary ops ----
   TENSOR__TERNARY_FORMULAS(X) calls X(name, FEXPR, IEXPR) on x, y, z (double, or int64_t where
   the op computes in an integer dtype) and p0, the op's number (addcmul's value, truncated by the
   front-end for integers). lerp is PyTorch's formula: the side of the weight nearer its end, so a
   weight of 1 gives y exactly. */
TENSOR__HOSTDEV double tensor__lerp(double x, double y, double w) {
    double d = y - x;
    return fabs(w) < 0.5 ? x + w * d : y - d * (1 - w);
}
/*  X(name,     float formula (double x, y, z),  integer formula (int64_t x, y, z)) */
#define TENSOR__TERNARY_FORMULAS(X)                                                                          \
    X(lerp,     tensor__lerp(x, y, z),           0)                                                          \
    X(addcmul,  x + p0 * y * z,                  tensor__iadd(x, tensor__imul(tensor__imul(tensor__double_to_i64(p0), y), z))) \
    X(addcdiv,  x + p0 * y / z,                  0)

/* ---- grid_sample: one grid value's taps along one axis (PyTorch's GridSampler.h, in double),
   shared by the CPU kernel (>>resample) and the CUDA one. g: the grid value; S: the input's size
   along the axis; mode 0 bilinear, 1 nearest, 2 bicubic; pad 0 zeros, 1 border, 2 reflection. The
   taps: k input indices c[i] (v[i]: inside [0, S), else the tap reads 0 and c[i] is 0), their
   weights w[i] and dw[i] = dw[i] / dg (the factors of the unnormalization and of the padding
   included: PyTorch's gix_mult). */
typedef struct { int64_t c[4]; double w[4], dw[4]; int v[4]; int k; } tensor__gs_taps;

/* PyTorch's clip_coordinates_set_grad: the borders count as outside (gradient 0) */
TENSOR__HOSTDEV double tensor__gs_clip(double x, int64_t S, double *d) {
    double hi = (double)(S - 1);
    if (x <= 0) { *d = 0; return 0; }
    if (x >= hi) { *d = 0; return hi; }
    *d = 1;
    return x;
}
/* PyTorch's reflect_coordinates_set_grad, twice_low and twice_high the doubled bounds */
TENSOR__HOSTDEV double tensor__gs_reflect(double x, int64_t twice_low, int64_t twice_high, double *d) {
    if (twice_low == twice_high) { *d = 0; return 0; }
    double lo = (double)twice_low / 2, span = (double)(twice_high - twice_low) / 2, sign = 1;
    x -= lo;
    if (x < 0) { sign = -1; x = -x; }
    double extra = fmod(x, span), flips = floor(x / span);
    if (fmod(flips, 2.0) == 0) { *d = sign; return extra + lo; }
    *d = -sign;
    return span - extra + lo;
}
/* PyTorch's compute_coordinates_set_grad: the padding applied to the coordinate x */
TENSOR__HOSTDEV double tensor__gs_pad_coord(double x, int64_t S, int pad, int align, double *d) {
    double dr = 1, dc = 1;
    if (pad == 2) x = align ? tensor__gs_reflect(x, 0, 2 * (S - 1), &dr) : tensor__gs_reflect(x, -1, 2 * S - 1, &dr);
    if (pad != 0) x = tensor__gs_clip(x, S, &dc);
    *d = dr * dc;
    return x;
}
TENSOR__HOSTDEV void tensor__gs_tap(tensor__gs_taps *t, int i, double x, int64_t S) {
    t->v[i] = x >= 0 && x <= (double)(S - 1); /* (false for NaN) */
    t->c[i] = t->v[i] ? (int64_t)x : 0;
}
TENSOR__HOSTDEV void tensor__gs_taps_of(double g, int64_t S, int mode, int pad, int align, tensor__gs_taps *t) {
    double m = align ? (double)(S - 1) / 2 : (double)S / 2, d;
    double x = align ? ((g + 1) / 2) * (double)(S - 1) : ((g + 1) * (double)S - 1) / 2;
    if (mode == 1) { /* nearest: the grid gets no gradient */
        t->k = 1;
        tensor__gs_tap(t, 0, nearbyint(tensor__gs_pad_coord(x, S, pad, align, &d)), S);
        t->w[0] = 1;
        t->dw[0] = 0;
    } else if (mode == 0) { /* bilinear */
        x = tensor__gs_pad_coord(x, S, pad, align, &d);
        double x0 = floor(x);
        t->k = 2;
        tensor__gs_tap(t, 0, x0, S);
        tensor__gs_tap(t, 1, x0 + 1, S);
        t->w[0] = (x0 + 1) - x;
        t->w[1] = x - x0;
        t->dw[0] = -m * d;
        t->dw[1] = m * d;
    } else { /* bicubic (A = -0.75): the padding applies to each tap; the weights' derivatives */
        const double A = -0.75;
        double x0 = floor(x), u = x - x0, p[4] = {u + 1, u, 1 - u, 2 - u};
        t->k = 4;
        for (int i = 0; i < 4; i++) {
            double a = p[i], s = i < 2 ? 1 : -1; /* da/du */
            if (i == 0 || i == 3) { /* 1 < |a| < 2 */
                t->w[i] = ((A * a - 5 * A) * a + 8 * A) * a - 4 * A;
                t->dw[i] = s * m * ((3 * A * a - 10 * A) * a + 8 * A);
            } else {
                t->w[i] = ((A + 2) * a - (A + 3)) * a * a + 1;
                t->dw[i] = s * m * (3 * (A + 2) * a - 2 * (A + 3)) * a;
            }
            tensor__gs_tap(t, i, trunc(tensor__gs_pad_coord(x0 - 1 + i, S, pad, align, &d)), S);
        }
    }
}

#endif /* TENSOR__FORMULAS_DONE */
#endif
