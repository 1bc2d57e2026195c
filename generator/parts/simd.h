// >>simd ---------------------------------------------------------------------------------------
/* The vector layer: f32 kernels written once and compiled for every instruction set the target
   has, one of which is chosen at run time.

   Kernels are the bodies of the macros TENSOR__SIMD_MATH and TENSOR__SIMD_KERNELS below. They use
   GCC/Clang vector extensions (operators, comparisons, casts between same-size vectors) and a few
   names each instance defines before expanding them:
     TENSOR__VF  TENSOR__W floats         TENSOR__VI  TENSOR__W int32 (what a float comparison gives)
     TENSOR__VU  TENSOR__W uint32 (arithmetic that may wrap: signed overflow is undefined)
     TENSOR__VD  TENSOR__DW doubles       TENSOR__VL  TENSOR__DW int64 (double comparisons)
     TENSOR__VB  TENSOR__W int8           TENSOR__F(name)  the instance's name for a function
     TENSOR__FMA / TENSOR__FMAD (fused where the ISA has it), TENSOR__SQRT, TENSOR__SEL / TENSOR__SELD
     (lane select by mask), TENSOR__MIN / TENSOR__MAX (a NaN first operand gives the second),
     TENSOR__ANY / TENSOR__ANYD (any lane of a float / double mask set), TENSOR__LOADH /
     TENSOR__STOREH (TENSOR__DW floats <-> doubles),
     TENSOR__TARGET (the instance's __attribute__((target(...))), empty where none is needed).
   Instances: avx512 (16 lanes, "avx512f"), avx2 (8, "avx2,fma"), sse2 (4) on x86; neon (4) on
   aarch64; scalar (1 lane, plain C) everywhere but x86-64, where SSE2 is the floor. The x86
   instances carry target attributes, so a plain `cc -O2` build holds all of them and runs the best
   one the CPU has (__builtin_cpu_supports, asked once, the first time a kernel needs the choice).
   The environment variable TENSOR_SIMD (scalar, sse2, avx2, avx512, neon) picks a lower one, for
   tests and comparisons (scalar on x86-64: sse2). TENSOR_NO_SIMD
   compiles the scalar instance only; compilers without vector extensions (MSVC) get none, and the
   elementwise ops keep their reference loops. TENSOR_USE_SLEEF (link -lsleef) makes exp, log,
   expm1, log1p, sin, cos, tanh and erf call SLEEF's 1-ulp vector functions instead of ours.

   The math: range reduction + polynomial, coefficients fitted for this library (near-minimax,
   weighted least squares). Errors are stated in ulp of the f32 result against the exact value and
   are measured by tests/test_simd.c over a dense sweep of the f32 range, for every instance. */

#if defined(__GNUC__) || defined(__clang__)
#define TENSOR__SIMD 1
#else
#define TENSOR__SIMD 0
#endif
#if TENSOR__SIMD && !defined(TENSOR_NO_SIMD) && (defined(__x86_64__) || defined(__i386__))
#define TENSOR__SIMD_X86 1
#else
#define TENSOR__SIMD_X86 0
#endif
#if TENSOR__SIMD && !defined(TENSOR_NO_SIMD) && defined(__aarch64__) && defined(__ARM_NEON)
#define TENSOR__SIMD_NEON 1
#else
#define TENSOR__SIMD_NEON 0
#endif
/* The scalar instance: wherever there is no vector one, and on i386 (whose CPUs may lack SSE2);
   on x86-64, whose every CPU has SSE2, sse2 is the floor and a scalar instance would be compiled
   for nothing (it cost about 6% of the implementation's compile time). */
#if TENSOR__SIMD && !(TENSOR__SIMD_X86 && defined(__x86_64__))
#define TENSOR__SIMD_SCALAR 1
#else
#define TENSOR__SIMD_SCALAR 0
#endif

#ifdef __cplusplus
} /* system headers outside extern "C" */
#endif
#if TENSOR__SIMD_X86
#include <immintrin.h>
#endif
#if TENSOR__SIMD_NEON
#include <arm_neon.h>
#endif
#if TENSOR__SIMD && defined(TENSOR_USE_SLEEF)
#include <sleef.h>
#endif
#ifdef __cplusplus
extern "C" {
#endif

/* Row kernels, as the elementwise loops call them: n floats from unaligned pointers. `mode` says
   which operands are arrays: 0 both, 1 a only (b[0] is a broadcast scalar), 2 b only. */
typedef void (*tensor__vec_unary_fn)(float *out, const float *a, int64_t n, const double *param);
typedef void (*tensor__vec_binary_fn)(float *out, const float *a, const float *b, int64_t n, int mode);
typedef void (*tensor__vec_compare_fn)(uint8_t *out, const float *a, const float *b, int64_t n, int mode);
/* The optimizer update (optim.h): kinds, and the per-step constants of one parameter, already
   rounded to f32 the way torch.optim's f32 kernels see its Python scalars. */
typedef struct {
    int kind;
    bool first;      /* SGD: the momentum buffer starts as the gradient */
    bool nesterov;   /* SGD */
    bool decay;      /* weight_decay != 0 (SGD, Adam: g += wd p only then, as torch) */
    float neg_lr;    /* SGD: -lr */
    float momentum;  /* SGD */
    float weight_decay;
    float keep;      /* AdamW: 1 - lr wd */
    float beta1, one_minus_beta1, beta2, one_minus_beta2;
    float sqrt_bias2; /* sqrt(1 - beta2^t) */
    float eps;
    float step_size; /* lr / (1 - beta1^t) */
} tensor__optim_consts;
/* n elements of a parameter p, its gradient g and its state s1 (momentum buffer / exp_avg; NULL for
   SGD without momentum) and s2 (exp_avg_sq; Adam/AdamW only), all f32 and contiguous. */
typedef void (*tensor__vec_optim_fn)(float *p, const float *g, float *s1, float *s2, int64_t n, const tensor__optim_consts *k);
typedef struct {
    const char *name; /* as tensor_build_info reports it */
    int width;        /* f32 lanes */
    bool bf16dot;     /* avx512 chosen and the CPU has avx512_bf16 (vdpbf16ps): the bf16 GEMM kernel */
    bool f16c;        /* avx2 or above chosen and the CPU has F16C: the SIMD f16/bf16 <-> f32 rows */
    tensor__vec_unary_fn unary[TENSOR_OP_COUNT];
    tensor__vec_binary_fn binary[TENSOR_OP_COUNT];
    tensor__vec_compare_fn compare[TENSOR_OP_COUNT];
    tensor__vec_optim_fn optim; /* the optimizer update (TENSOR__SIMD_OPTIM) */
    /* the row primitives of the reductions, softmax, cross_entropy and the norms (TENSOR__SIMD_ROWS
       below; tensor__row_*_f32 at the end of this part say what each computes) */
    double (*row_sum)(const float *x, int64_t n);
    double (*row_sum_f64)(const double *x, int64_t n);
    void (*row_cols_add)(double *acc, const float *x, int64_t n);
    double (*row_sqdev)(const float *x, int64_t n, float m);
    double (*row_dot)(const float *a, const float *b, int64_t n);
    float (*row_max)(const float *x, int64_t n);
    double (*row_sumexp)(float *y, const float *x, int64_t n, float m);
    void (*row_affine)(float *y, const float *x, int64_t n, float s, float t);
    void (*row_sub2)(float *y, const float *x, int64_t n, float a, float b);
    void (*row_smbwd)(float *y, const float *g, int64_t n, float s, float d);
    void (*row_fms)(float *y, const float *g, int64_t n, float c);
    void (*row_norm)(float *y, const float *x, int64_t n, float mh, float ml, float rstd, const float *w, const float *b);
    void (*row_norm_bwd)(float *gx, const float *x, const float *g, const float *w, int64_t n, float mh, float ml, float rstd, bool center,
                         double *gw, double *gb);
    /* the random fills (create.h's tensor__rng_blocks_ref and tensor__rng_normal_ref say what each
       computes) */
    void (*rng_blocks)(uint32_t *out, int64_t n, const uint32_t key[2], uint64_t counter, uint32_t stream);
    void (*rng_normal)(double *c, double *s, const double *u1, const double *u2, int64_t n);
    void (*rng_normal4)(float *out, int64_t n, const uint32_t key[2], uint64_t counter, uint32_t stream);
} tensor__simd_isa;

#if TENSOR__SIMD
typedef float tensor__f32x1 __attribute__((vector_size(4)));
typedef double tensor__f64x1 __attribute__((vector_size(8)));
typedef int8_t tensor__i8x1 __attribute__((vector_size(1)));
typedef int8_t tensor__i8x4 __attribute__((vector_size(4)));
typedef int8_t tensor__i8x8 __attribute__((vector_size(8)));
typedef int8_t tensor__i8x16 __attribute__((vector_size(16)));
typedef int32_t tensor__i32x1 __attribute__((vector_size(4)));
typedef uint32_t tensor__u32x1 __attribute__((vector_size(4)));
typedef uint32_t tensor__u32x4 __attribute__((vector_size(16)));
typedef uint32_t tensor__u32x8 __attribute__((vector_size(32)));
typedef uint32_t tensor__u32x16 __attribute__((vector_size(64)));
typedef int32_t tensor__i32x4 __attribute__((vector_size(16)));
typedef int32_t tensor__i32x8 __attribute__((vector_size(32)));
typedef int32_t tensor__i32x16 __attribute__((vector_size(64)));
typedef int64_t tensor__i64x1 __attribute__((vector_size(8)));
typedef int64_t tensor__i64x2 __attribute__((vector_size(16)));
typedef int64_t tensor__i64x4 __attribute__((vector_size(32)));
typedef int64_t tensor__i64x8 __attribute__((vector_size(64)));

/* the math helpers are inlined into the row loops, whose constants then stay in registers */
#define TENSOR__INLINE inline __attribute__((always_inline))
#define TENSOR__F(name) TENSOR__F2(TENSOR__ISA, name)
#define TENSOR__F2(isa, name) TENSOR__F3(isa, name)
#define TENSOR__F3(isa, name) isa##_##name
/* one Horner step with a constant coefficient */
#define TENSOR__H(p, x, c) TENSOR__FMA(p, x, TENSOR__F(splat)(c))
#define TENSOR__HD(p, x, c) TENSOR__FMAD(p, x, TENSOR__F(splatd)(c))

/* Polynomial coefficients, lowest degree first (fitted on the ranges named). */
/* (e^r - 1 - r - r^2/2) / r^3 on |r| <= ln2/2: error 2^-31.5 of e^r */
static const float tensor__expf_q[5] = {1.666666716e-01f, 4.166655615e-02f, 8.333301172e-03f, 1.392622129e-03f, 1.989934099e-04f};
/* (log1p(f) - f) / f^2 on [sqrt(1/2) - 1, sqrt(2) - 1]: error 2^-27.9 of log1p(f) */
static const float tensor__logf_p[9] = {-4.999998808e-01f, 3.333332539e-01f, -2.500159144e-01f, 2.000200152e-01f, -1.660889089e-01f,
                                        1.418115795e-01f, -1.324395686e-01f, 1.290922165e-01f, -7.625278831e-02f};
/* (tanh(x) - x) / x^3 as a polynomial in x^2, |x| <= 0.9: error 2^-29.7 of tanh(x) */
static const float tensor__tanhf_p[7] = {-3.333332241e-01f, 1.333297640e-01f, -5.392910913e-02f, 2.166276798e-02f, -8.262984455e-03f,
                                         2.581131412e-03f, -4.548712459e-04f};
/* (e^r - 1 - r - r^2/2) / r^3 on |r| <= ln2/2, one degree less than expf_q: error 2^-26.6 of e^r,
   enough for gelu, whose S is good to 2^-24.7 */
static const float tensor__geluf_q[4] = {1.666660756e-01f, 4.166973755e-02f, 8.360692300e-03f, 1.363661024e-03f};
/* gelu's S(t) = Phi(-a) e^(a^2 / 2) as a polynomial in t = 1 / (1 + 0.3 a), a in [0, 14.5] (relative
   error 2^-24.7), each coefficient times 2^-40 (exactly; see geluf) */
#define TENSOR__GELU_S(c) (c * 9.094947017729282e-13f)
static const float tensor__geluf_s[10] = {
    TENSOR__GELU_S(1.438426716049435e-05f), TENSOR__GELU_S(1.193338856101036e-01f), TENSOR__GELU_S(1.233142614364624e-01f),
    TENSOR__GELU_S(8.763142675161362e-02f), TENSOR__GELU_S(1.645114272832870e-01f), TENSOR__GELU_S(-1.203321814537048e-01f),
    TENSOR__GELU_S(2.847211658954620e-01f), TENSOR__GELU_S(-2.136338502168655e-01f), TENSOR__GELU_S(5.827609822154045e-02f),
    TENSOR__GELU_S(-3.836604068055749e-03f)};
/* f64 helpers, accurate far beyond f32 (they serve sin, cos, erf and gelu_tanh) */
/* (e^r - 1 - r - r^2/2) / r^3 on |r| <= ln2/2: error 2^-37 of e^r */
static const double tensor__expd_q[6] = {1.66666666816701142e-01, 4.16666667566754495e-02, 8.33331087990160820e-03,
                                         1.38888414909583632e-03, 1.98910407082777404e-04, 2.48679465296688266e-05};
/* erf(x) / x as a polynomial in x^2, |x| <= 2: error 2^-42 (2^-34 of 1 + erf(x) at x = -2, where
   gelu cancels most) */
static const double tensor__erfd_p[14] = {1.12837916709528363e+00, -3.76126389010594364e-01, 1.12837916378376549e-01, -2.68661685900906111e-02,
                                          5.22397091098407949e-03, -8.54819450515384915e-04, 1.20536241329603368e-04, -1.49105504317090634e-05,
                                          1.63680346969746760e-06, -1.59462676052313462e-07, 1.34620787171949495e-08, -9.20705734256231601e-10,
                                          4.43390075302266444e-11, -1.09254395060707299e-12};
/* erfc(z) e^(z^2) (z + 2) as a polynomial in t = 1 / (z + 2), z in [1, 12]: error 2^-34 */
static const double tensor__erfcd_g[11] = {5.64191142236527443e-01, 1.12826526557746587e+00, 1.97832734523613718e+00, 2.75256400573056403e+00,
                                           3.50092182385075823e+00, -6.90983916484099314e+00, 2.90965209189257159e+01, -1.46348592369453144e+02,
                                           2.96425981702165416e+02, -2.73734929451720575e+02, 9.78002515400119563e+01};
/* (sin r - r) / r^3 and (cos r - 1 + r^2/2) / r^4 as polynomials in r^2, |r| <= pi/4: error 2^-38 */
static const double tensor__sind_s[4] = {-1.66666666638323829e-01, 8.33333186521217559e-03, -1.98400814279559604e-04, 2.72492228615599520e-06};
static const double tensor__cosd_c[4] = {4.16666666643014036e-02, -1.38888876638947425e-03, 2.48005958633951376e-05, -2.73003634391574619e-07};

/* ---- f32 math, written once for every instance ---- */
#define TENSOR__SIMD_MATH                                                                                             \
/* c in every lane (-0 included, which 0 + c would lose) */                                                           \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VF TENSOR__F(splat)(float c) {                            \
    TENSOR__VF v = {0};                                                                                               \
    for (int j = 0; j < TENSOR__W; j++) v[j] = c;                                                                     \
    return v;                                                                                                         \
}                                                                                                                     \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VD TENSOR__F(splatd)(double c) {                          \
    TENSOR__VD v = {0};                                                                                               \
    for (int j = 0; j < TENSOR__DW; j++) v[j] = c;                                                                    \
    return v;                                                                                                         \
}                                                                                                                     \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VF TENSOR__F(load)(const float *p) { TENSOR__VF v; memcpy(&v, p, sizeof v); return v; } \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET void TENSOR__F(store)(float *p, TENSOR__VF v) { memcpy(p, &v, sizeof v); } \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VF TENSOR__F(abs)(TENSOR__VF x) { return (TENSOR__VF)((TENSOR__VI)x & 0x7fffffff); } \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VD TENSOR__F(absd)(TENSOR__VD x) { return (TENSOR__VD)((TENSOR__VL)x & 0x7fffffffffffffffLL); } \
/* |m| with the sign of s */                                                                                          \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VF TENSOR__F(copysign)(TENSOR__VF m, TENSOR__VF s) {      \
    return (TENSOR__VF)(((TENSOR__VI)m & 0x7fffffff) | ((TENSOR__VI)s & ~0x7fffffff));                                \
}                                                                                                                     \
/* PyTorch's clamp: NaN stays NaN, a NaN bound clamps nothing */                                                      \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VF TENSOR__F(clamp)(TENSOR__VF x, float lo, float hi) {   \
    TENSOR__VF t = TENSOR__SEL(x < lo, TENSOR__F(splat)(lo), x);                                                      \
    return TENSOR__SEL(t > hi, TENSOR__F(splat)(hi), t);                                                              \
}                                                                                                                     \
/* round to nearest integer, for |x| < 2^22 */                                                                        \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VF TENSOR__F(rint)(TENSOR__VF x) { return (x + 12582912.0f) - 12582912.0f; } \
/* p * 2^n for an integral n in [-252, 252] held in a float: two exact power-of-two factors, so a                     \
   result that underflows is rounded once */                                                                          \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VF TENSOR__F(scale)(TENSOR__VF p, TENSOR__VF nf) {        \
    TENSOR__VI n = (TENSOR__VI)(nf + 12582912.0f) - 0x4b400000;                                                       \
    TENSOR__VI n1 = n >> 1, n2 = n - n1;                                                                              \
    return p * (TENSOR__VF)((n1 + 127) << 23) * (TENSOR__VF)((n2 + 127) << 23);                                       \
}                                                                                                                     \
/* e^x = p 2^n: n = rint(x / ln2), p = e^r with r = x - n ln2 in [-0.347, 0.347]. ln2 is split in                     \
   16 bits + the rest, so n * LN2_HI is exact for |n| < 256 with or without FMA and r carries one                     \
   rounding; p = 1 + r + r^2 (1/2 + r Q(r)). x must be finite with |x| < 160. */                                      \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VF TENSOR__F(exp_core)(TENSOR__VF x, TENSOR__VF *n) {     \
    TENSOR__VF nf = TENSOR__F(rint)(x * 1.44269504f);                                                                 \
    TENSOR__VF r = TENSOR__FMA(nf, TENSOR__F(splat)(-0.693145751953125f), x);                                         \
    r = TENSOR__FMA(nf, TENSOR__F(splat)(-1.428606765e-06f), r);                                                      \
    TENSOR__VF q = TENSOR__F(splat)(tensor__expf_q[4]);                                                               \
    q = TENSOR__H(q, r, tensor__expf_q[3]);                                                                           \
    q = TENSOR__H(q, r, tensor__expf_q[2]);                                                                           \
    q = TENSOR__H(q, r, tensor__expf_q[1]);                                                                           \
    q = TENSOR__H(q, r, tensor__expf_q[0]);                                                                           \
    *n = nf;                                                                                                          \
    return TENSOR__FMA(r * r, TENSOR__H(q, r, 0.5f), r) + 1.0f;                                                       \
}                                                                                                                     \
/* e^x: <= 1 ulp (the reduction leaves r within 0.5 ulp(r), the polynomial within 2^-31.5, the                        \
   final 1 + ... rounds once); overflow to inf above 88.72, gradual underflow below -87.3.                            \
   Measured over every f32 in [-104, 89]: 0.978 ulp with FMA, 0.951 without (SSE2). */                                \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VF TENSOR__F(exp)(TENSOR__VF x) {                         \
    TENSOR__VF xc = TENSOR__MAX(TENSOR__MIN(x, TENSOR__F(splat)(100.0f)), TENSOR__F(splat)(-110.0f)); /* NaN -> 100, restored below */ \
    TENSOR__VF nf, p = TENSOR__F(exp_core)(xc, &nf), r;                                                               \
    if (TENSOR__ANY(TENSOR__F(abs)(x) > 86.0f)) r = TENSOR__F(scale)(p, nf);                                          \
    else r = (TENSOR__VF)((TENSOR__VU)p + ((TENSOR__VU)(nf + 12582912.0f) << 23)); /* normal: add n to the exponent */ \
    return TENSOR__SEL(x == x, r, x);                                                                                 \
}                                                                                                                     \
/* gelu(x) = x Phi(x) in f32, Phi(x) = 0.5 erfc(-x / sqrt2): one formula for every x, with no                       \
   cancellation in the negative tail. Q(a) = Phi(-a) = e^(-a^2 / 2) S(a) for a = |x|, S a polynomial                  \
   in t = 1 / (1 + 0.3 a) (fitted on [0, 14.5] for relative error, 2^-24.7); a^2 / 2 is split                         \
   exactly (Dekker: 12-bit halves, no FMA needed), so the exponential sees no rounding of it; then                    \
   Phi = Q for x < 0, 1 - Q above. Q is carried scaled by 2^40, which keeps it normal up to a =                       \
   14.5 (where x Q rounds to 0 in f32): the exponential needs no subnormal path and no branch, and                    \
   the negative tail's product x Q rounds once, when it is scaled back (rounded twice, as it was                      \
   before, a subnormal result near x = -13 was 11.5 ulp off). The exponential's polynomial                            \
   goes by Estrin's scheme and S's by Horner's rule in t^2 on pairs of terms (shorter chains),                        \
   and small terms are folded into other operations: 6.0 -> 5.0 ms on 16M, one thread. Measured                       \
   over every f32 in [-20, 20]: 7.34 ulp at most with FMA (AVX-512, AVX2), 7.51 without (SSE2).                       \
   About 1.6 times the time of a memory-bound exp on one thread: it is bound by its ~30                               \
   multiplies and fused multiply-adds a vector. (In double and rounded once, as it once was:                          \
   0.5 ulp, 6 times slower.) */                                                                                       \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VF TENSOR__F(geluf)(TENSOR__VF x) {                       \
    TENSOR__VF a = TENSOR__MIN(TENSOR__F(abs)(x), TENSOR__F(splat)(14.5f)); /* a Q rounds to 0 beyond; NaN -> 14.5 */ \
    /* -a^2 / 2 = g + m exactly: m from one fused multiply-add, or Dekker's 12-bit halves (there g                    \
       comes from the rounded a^2, so no multiply that sets g's rounding can be contracted into an add) */            \
    TENSOR__VF g, m;                                                                                                  \
    if (TENSOR__FMA_EXACT) {                                                                                          \
        TENSOR__VF na = -0.5f * a;                                                                                    \
        g = na * a;                                                                                                   \
        m = TENSOR__FMA(na, a, -g);                                                                                   \
    } else {                                                                                                          \
        TENSOR__VF ah = (TENSOR__VF)((TENSOR__VI)a & -4096), al = a - ah, h = a * a;                                  \
        g = -0.5f * h;                                                                                                \
        m = -0.5f * (((ah * ah - h) + 2.0f * ah * al) + al * al);                                                     \
    }                                                                                                                 \
    /* e^(g + m) = 2^n p as exp_core computes it (m joins the reduced argument), the polynomial of                    \
       degree 6 (fitted for gelu: 2^-26.6) by Estrin's scheme */                                                      \
    TENSOR__VF nf = TENSOR__F(rint)(g * 1.44269504f);                                                                 \
    TENSOR__VF r = TENSOR__FMA(nf, TENSOR__F(splat)(-0.693145751953125f), g);                                         \
    r = TENSOR__FMA(nf, TENSOR__F(splat)(-1.428606765e-06f), r) + m;                                                  \
    TENSOR__VF r2 = r * r, q01 = TENSOR__H(TENSOR__F(splat)(tensor__geluf_q[1]), r, tensor__geluf_q[0]);              \
    TENSOR__VF q = TENSOR__FMA(r2, TENSOR__H(TENSOR__F(splat)(tensor__geluf_q[3]), r, tensor__geluf_q[2]), q01);      \
    TENSOR__VF p = TENSOR__FMA(r2, TENSOR__H(q, r, 0.5f), r) + 1.0f;                                                 \
    TENSOR__VF e = (TENSOR__VF)((TENSOR__VU)p + ((TENSOR__VU)(nf + (12582912.0f + 40.0f)) << 23));                   \
    TENSOR__VF ae = a * e; /* a e^(-a^2/2) 2^40 */                                                                    \
    TENSOR__VF t = 1.0f / (1.0f + 0.3f * a), t2 = t * t;                                                              \
    /* S(t) = c0 + c1 t + ... + c9 t^9 by Horner's rule in t^2 on the pairs (c0 + c1 t), ...: a shorter               \
       chain than Horner's in t, fewer operations than Estrin's (which also loses more without FMA) */                \
    TENSOR__VF s01 = TENSOR__H(TENSOR__F(splat)(tensor__geluf_s[1]), t, tensor__geluf_s[0]);                          \
    TENSOR__VF s23 = TENSOR__H(TENSOR__F(splat)(tensor__geluf_s[3]), t, tensor__geluf_s[2]);                          \
    TENSOR__VF s45 = TENSOR__H(TENSOR__F(splat)(tensor__geluf_s[5]), t, tensor__geluf_s[4]);                          \
    TENSOR__VF s67 = TENSOR__H(TENSOR__F(splat)(tensor__geluf_s[7]), t, tensor__geluf_s[6]);                          \
    TENSOR__VF s89 = TENSOR__H(TENSOR__F(splat)(tensor__geluf_s[9]), t, tensor__geluf_s[8]);                          \
    TENSOR__VF sp = TENSOR__FMA(TENSOR__FMA(TENSOR__FMA(TENSOR__FMA(s89, t2, s67), t2, s45), t2, s23), t2, s01);      \
    TENSOR__VF s = ae * sp; /* a Q: S's coefficients carry the 2^-40, so a subnormal rounds once, here */          \
    /* x Phi(x) = x - a Q for x >= 0, -a Q below: x m - a Q with m = 1 or 0 (NaN and -inf give NaN, as x Phi(x)) */  \
    return TENSOR__FMA(x, TENSOR__SEL(x >= 0.0f, TENSOR__F(splat)(1.0f), TENSOR__F(splat)(0.0f)), -s);               \
}                                                                                                                     \
/* log(x): <= 1 ulp. x = 2^e m, m in [sqrt(1/2), sqrt(2)), f = m - 1 exactly; log x = e ln2 + f +                     \
   f^2 P(f). e LN2_HI + f is summed exactly (Fast2Sum: |e LN2_HI| > |f| unless e = 0) and the small                   \
   terms, which are below 0.21 of the result, are added last: one rounding of the result, plus                        \
   the polynomial's 2^-28. Subnormal x are scaled by 2^23 first. Measured over every positive                         \
   f32: 0.876 ulp with FMA, 0.897 without. */                                                                         \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VF TENSOR__F(log_tail)(TENSOR__VI e, TENSOR__VF f, TENSOR__VF extra) { \
    TENSOR__VF ef = __builtin_convertvector(e, TENSOR__VF);                                                           \
    TENSOR__VF hi = ef * 0.693145751953125f, s = hi + f, err = (hi - s) + f;                                          \
    TENSOR__VF p = TENSOR__F(splat)(tensor__logf_p[8]);                                                               \
    p = TENSOR__H(p, f, tensor__logf_p[7]);                                                                           \
    p = TENSOR__H(p, f, tensor__logf_p[6]);                                                                           \
    p = TENSOR__H(p, f, tensor__logf_p[5]);                                                                           \
    p = TENSOR__H(p, f, tensor__logf_p[4]);                                                                           \
    p = TENSOR__H(p, f, tensor__logf_p[3]);                                                                           \
    p = TENSOR__H(p, f, tensor__logf_p[2]);                                                                           \
    p = TENSOR__H(p, f, tensor__logf_p[1]);                                                                           \
    p = TENSOR__H(p, f, tensor__logf_p[0]);                                                                           \
    return s + TENSOR__FMA(f * f, p, TENSOR__FMA(ef, TENSOR__F(splat)(1.428606765e-06f), err + extra));               \
}                                                                                                                     \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VF TENSOR__F(log)(TENSOR__VF x) {                         \
    TENSOR__VI sub = x < 1.17549435e-38f;                                                                             \
    TENSOR__VF xs = TENSOR__SEL(sub, x * 8388608.0f, x);                                                              \
    TENSOR__VI b = (TENSOR__VI)((TENSOR__VU)xs - 0x3f3504f3u); /* unsigned: wraps for negative x */                   \
    TENSOR__VF m = (TENSOR__VF)((b & 0x007fffff) + 0x3f3504f3);                                                       \
    TENSOR__VF r = TENSOR__F(log_tail)((b >> 23) - (sub & 23), m - 1.0f, TENSOR__F(splat)(0.0f));                     \
    r = TENSOR__SEL(x < INFINITY, r, x); /* +inf and NaN */                                                           \
    r = TENSOR__SEL(x < 0.0f, TENSOR__F(splat)(NAN), r);                                                              \
    return TENSOR__SEL(x == 0.0f, TENSOR__F(splat)(-INFINITY), r);                                                    \
}                                                                                                                     \
/* log1p(x): <= 1 ulp by the same argument as log. u = 1 + x rounded, with its rounding error c                       \
   recovered exactly (Fast2Sum on 1 and x by magnitude); log1p x = log u + c / u. When u falls in                     \
   the first binade (e = 0), f = x itself, exactly, and no correction is needed. Measured over                        \
   every f32 >= -1: 0.876 ulp with FMA, 0.974 without. */                                                             \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VF TENSOR__F(log1p)(TENSOR__VF x) {                       \
    TENSOR__VF one = TENSOR__F(splat)(1.0f), u = x + 1.0f;                                                            \
    TENSOR__VI big = TENSOR__F(abs)(x) > 1.0f;                                                                        \
    TENSOR__VF c = (TENSOR__SEL(big, x, one) - u) + TENSOR__SEL(big, one, x);                                         \
    TENSOR__VI b = (TENSOR__VI)((TENSOR__VU)u - 0x3f3504f3u), e = b >> 23;                                            \
    TENSOR__VF m = (TENSOR__VF)((b & 0x007fffff) + 0x3f3504f3);                                                       \
    TENSOR__VI e0 = e == 0;                                                                                           \
    TENSOR__VF f = TENSOR__SEL(e0, x, m - 1.0f);                                                                      \
    TENSOR__VF r = TENSOR__F(log_tail)(e, f, TENSOR__SEL(e0, TENSOR__F(splat)(0.0f), c / u));                         \
    r = TENSOR__SEL(x < INFINITY, r, x);                                                                              \
    r = TENSOR__SEL(x < -1.0f, TENSOR__F(splat)(NAN), r);                                                             \
    r = TENSOR__SEL(x == -1.0f, TENSOR__F(splat)(-INFINITY), r);                                                      \
    return TENSOR__SEL(x == 0.0f, x, r); /* keeps -0 */                                                               \
}                                                                                                                     \
/* e^x - 1: <= 1 ulp. e^x - 1 = 2 (h e^r - 1/2) with h = 2^(n-1), summed as s + (err + h r^2 P(r))                    \
   where s + err = (h - 1/2) + h r exactly (Fast2Sum: |h - 1/2| >= |h r| unless n = 0, and h - 1/2                    \
   is exact for n <= 24; above, the -1/2 joins the small terms). So the cancellation near                             \
   x = +-ln2/2 costs nothing and one rounding of the result remains, plus r's and the polynomial's                    \
   small errors. Clamped to [-30, 89]: -1 below, inf above. Measured over every f32 in [-18, 89]:                     \
   0.988 ulp with FMA, 0.991 without. */                                                                              \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VF TENSOR__F(expm1)(TENSOR__VF x) {                       \
    TENSOR__VF xc = TENSOR__MAX(TENSOR__MIN(x, TENSOR__F(splat)(89.0f)), TENSOR__F(splat)(-30.0f)); /* NaN -> 89, restored below */ \
    TENSOR__VF nf = TENSOR__F(rint)(xc * 1.44269504f);                                                                \
    TENSOR__VF r = TENSOR__FMA(nf, TENSOR__F(splat)(-0.693145751953125f), xc);                                        \
    r = TENSOR__FMA(nf, TENSOR__F(splat)(-1.428606765e-06f), r);                                                      \
    TENSOR__VF q = TENSOR__F(splat)(tensor__expf_q[4]);                                                               \
    q = TENSOR__H(q, r, tensor__expf_q[3]);                                                                           \
    q = TENSOR__H(q, r, tensor__expf_q[2]);                                                                           \
    q = TENSOR__H(q, r, tensor__expf_q[1]);                                                                           \
    q = TENSOR__H(q, r, tensor__expf_q[0]);                                                                           \
    TENSOR__VF h = (TENSOR__VF)(((TENSOR__VI)(nf + 12582912.0f) - (0x4b400000 - 126)) << 23); /* n in [-43, 128] */   \
    TENSOR__VI big = nf > 24.0f;                                                                                      \
    TENSOR__VF c = TENSOR__SEL(big, h, h - 0.5f), hr = h * r;                                                         \
    TENSOR__VF s = c + hr, err = (c - s) + hr;                                                                        \
    TENSOR__VF t = TENSOR__FMA(h * (r * r), TENSOR__H(q, r, 0.5f), err + TENSOR__SEL(big, TENSOR__F(splat)(-0.5f), TENSOR__F(splat)(0.0f))); \
    TENSOR__VF res = (s + t) * 2.0f;                                                                                  \
    return TENSOR__SEL((TENSOR__F(abs)(x) < 2.98e-8f) | (x != x), x, res); /* x + x^2/2 rounds to x */                \
}                                                                                                                     \
/* tanh(x): <= 1.5 ulp. |x| < 0.9: x + x^3 P(x^2) (polynomial 2^-29.7). Above: 1 - 2 / (E + 1) with                   \
   E = e^(2|x|) >= 6.05: the subtracted term is below 0.29 and carries E's ulp, the sum's and the                     \
   quotient's roundings (< 1.75 2^-23 relative), so at most 0.29 * 1.75 2^-23 < 1 ulp of the                          \
   result, plus its own rounding. |x| is clamped to 10 (tanh is 1 in f32 from 9.01 on). Measured                      \
   over every f32 in [-9.1, 9.1]: 0.996 ulp with FMA, 1.037 without. */                                               \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VF TENSOR__F(tanh)(TENSOR__VF x) {                        \
    TENSOR__VF a = TENSOR__F(abs)(x), z = a * a;                                                                      \
    TENSOR__VF p = TENSOR__F(splat)(tensor__tanhf_p[6]);                                                              \
    p = TENSOR__H(p, z, tensor__tanhf_p[5]);                                                                          \
    p = TENSOR__H(p, z, tensor__tanhf_p[4]);                                                                          \
    p = TENSOR__H(p, z, tensor__tanhf_p[3]);                                                                          \
    p = TENSOR__H(p, z, tensor__tanhf_p[2]);                                                                          \
    p = TENSOR__H(p, z, tensor__tanhf_p[1]);                                                                          \
    p = TENSOR__H(p, z, tensor__tanhf_p[0]);                                                                          \
    TENSOR__VF small = TENSOR__FMA(a * z, p, a);                                                                      \
    TENSOR__VF nf, e = TENSOR__F(exp_core)(TENSOR__MIN(a, TENSOR__F(splat)(10.0f)) * 2.0f, &nf); /* NaN -> 10 */      \
    e = (TENSOR__VF)((TENSOR__VI)e + (((TENSOR__VI)(nf + 12582912.0f) - 0x4b400000) << 23)); /* * 2^n, n in [0, 29] */ \
    TENSOR__VF big = 1.0f - 2.0f / (e + 1.0f);                                                                        \
    TENSOR__VF r = TENSOR__SEL(a >= 0.9f, big, small); /* NaN: small, which is NaN */                                 \
    return (TENSOR__VF)((TENSOR__VI)r | ((TENSOR__VI)x & ~0x7fffffff)); /* r >= 0: x's sign */                        \
}                                                                                                                     \
/* softplus(x) = max(x, 0) + log1p(e^-|x|), and x above 20 (PyTorch's threshold, as the reference                     \
   loop): <= 2 ulp (log1p's argument is within 1 ulp and log1p damps relative errors, then one                        \
   more rounding for the sum). Measured over every f32 in [-104, 21]: 1.711 ulp. */                                   \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VF TENSOR__F(softplus)(TENSOR__VF x) {                    \
    TENSOR__VF l = TENSOR__F(log1p)(TENSOR__F(exp)(-TENSOR__F(abs)(x)));                                              \
    TENSOR__VF r = TENSOR__SEL(x > 0.0f, x, TENSOR__F(splat)(0.0f)) + l;                                              \
    return TENSOR__SEL(x > 20.0f, x, r);                                                                              \
}                                                                                                                     \
                                                                                                                      \
/* ---- f64 helpers: the functions below are computed in double and rounded once to f32, so their                     \
   f32 results are within 0.5 ulp + 2^-10 ulp of exact (the f64 polynomials are good to 2^-34; the                    \
   sweeps measure 0.501). They cost about 2-3x the f32 functions, the price of accuracy where a                       \
   float formula cancels (gelu instead has an f32 formula without the cancellation, geluf). ---- */                   \
/* e^x for finite x in [-708, 708] */                                                                                 \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VD TENSOR__F(expd)(TENSOR__VD x) {                        \
    TENSOR__VD nf = (x * 1.4426950408889634 + 6755399441055744.0) - 6755399441055744.0;                               \
    TENSOR__VD r = TENSOR__FMAD(nf, TENSOR__F(splatd)(-6.93147180559890330e-01), x);                                  \
    r = TENSOR__FMAD(nf, TENSOR__F(splatd)(-5.49792301870837116e-14), r);                                             \
    TENSOR__VD q = TENSOR__F(splatd)(tensor__expd_q[5]);                                                              \
    q = TENSOR__HD(q, r, tensor__expd_q[4]);                                                                          \
    q = TENSOR__HD(q, r, tensor__expd_q[3]);                                                                          \
    q = TENSOR__HD(q, r, tensor__expd_q[2]);                                                                          \
    q = TENSOR__HD(q, r, tensor__expd_q[1]);                                                                          \
    q = TENSOR__HD(q, r, tensor__expd_q[0]);                                                                          \
    TENSOR__VD p = TENSOR__FMAD(r * r, TENSOR__HD(q, r, 0.5), r) + 1.0;                                               \
    TENSOR__VL n = (TENSOR__VL)(nf + 6755399441055744.0) - 0x4338000000000000LL;                                      \
    return p * (TENSOR__VD)((n + 1023) << 52);                                                                        \
}                                                                                                                     \
/* erf(x) / x for |x| <= 2, as a polynomial in x^2 (wide enough that the tail below is rarely                         \
   needed for data of unit scale) */                                                                                  \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VD TENSOR__F(erfd_small)(TENSOR__VD x) {                  \
    TENSOR__VD z = x * x, p = TENSOR__F(splatd)(tensor__erfd_p[13]);                                                  \
    p = TENSOR__HD(p, z, tensor__erfd_p[12]);                                                                         \
    p = TENSOR__HD(p, z, tensor__erfd_p[11]);                                                                         \
    p = TENSOR__HD(p, z, tensor__erfd_p[10]);                                                                         \
    p = TENSOR__HD(p, z, tensor__erfd_p[9]);                                                                          \
    p = TENSOR__HD(p, z, tensor__erfd_p[8]);                                                                          \
    p = TENSOR__HD(p, z, tensor__erfd_p[7]);                                                                          \
    p = TENSOR__HD(p, z, tensor__erfd_p[6]);                                                                          \
    p = TENSOR__HD(p, z, tensor__erfd_p[5]);                                                                          \
    p = TENSOR__HD(p, z, tensor__erfd_p[4]);                                                                          \
    p = TENSOR__HD(p, z, tensor__erfd_p[3]);                                                                          \
    p = TENSOR__HD(p, z, tensor__erfd_p[2]);                                                                          \
    p = TENSOR__HD(p, z, tensor__erfd_p[1]);                                                                          \
    return TENSOR__HD(p, z, tensor__erfd_p[0]);                                                                       \
}                                                                                                                     \
/* erfc(z) for z >= 1 (relative error 2^-34): e^(-z^2) t G(t), t = 1 / (z + 2); 0 from z = 12                         \
   on (erfc(12) < 2^-210: every f32 result the callers form from it is 0 or 1 there). */                              \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VD TENSOR__F(erfcd_tail)(TENSOR__VD z) {                  \
    TENSOR__VL in = (TENSOR__VL)(z < 12.0);                                                                           \
    z = TENSOR__SELD(in, z, TENSOR__F(splatd)(12.0));                                                                 \
    TENSOR__VD t = 1.0 / (z + 2.0), g = TENSOR__F(splatd)(tensor__erfcd_g[10]);                                       \
    g = TENSOR__HD(g, t, tensor__erfcd_g[9]);                                                                         \
    g = TENSOR__HD(g, t, tensor__erfcd_g[8]);                                                                         \
    g = TENSOR__HD(g, t, tensor__erfcd_g[7]);                                                                         \
    g = TENSOR__HD(g, t, tensor__erfcd_g[6]);                                                                         \
    g = TENSOR__HD(g, t, tensor__erfcd_g[5]);                                                                         \
    g = TENSOR__HD(g, t, tensor__erfcd_g[4]);                                                                         \
    g = TENSOR__HD(g, t, tensor__erfcd_g[3]);                                                                         \
    g = TENSOR__HD(g, t, tensor__erfcd_g[2]);                                                                         \
    g = TENSOR__HD(g, t, tensor__erfcd_g[1]);                                                                         \
    g = TENSOR__HD(g, t, tensor__erfcd_g[0]);                                                                         \
    return TENSOR__SELD(in, TENSOR__F(expd)(-(z * z)) * t * g, TENSOR__F(splatd)(0.0));                               \
}                                                                                                                     \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VD TENSOR__F(erfd)(TENSOR__VD x) {                        \
    TENSOR__VD ax = TENSOR__F(absd)(x), r = x * TENSOR__F(erfd_small)(x);                                             \
    TENSOR__VL tail = ~(TENSOR__VL)(ax < 2.0);                                                                        \
    if (TENSOR__ANYD(tail)) {                                                                                         \
        TENSOR__VD big = (TENSOR__VD)((TENSOR__VL)(1.0 - TENSOR__F(erfcd_tail)(ax)) | ((TENSOR__VL)x & (-0x7fffffffffffffffLL - 1))); \
        r = TENSOR__SELD(tail, big, r);                                                                               \
    }                                                                                                                 \
    return TENSOR__SELD(x == x, r, x);                                                                                \
}                                                                                                                     \
/* sigmoid(x) = 1 / (1 + e) for x >= 0 and e / (1 + e) below, e = e^-|x|; silu(x) = x sigmoid(x) (-inf                \
   gives NaN, as the reference formula x / (1 + e^-x) does) */                                                        \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VD TENSOR__F(sigmoidd)(TENSOR__VD x) {                    \
    TENSOR__VD ax = TENSOR__F(absd)(x);                                                                               \
    TENSOR__VD e = TENSOR__F(expd)(-TENSOR__SELD(ax < 700.0, ax, TENSOR__F(splatd)(700.0))); /* NaN -> 700, restored below */ \
    TENSOR__VD s = TENSOR__SELD(x >= 0.0, TENSOR__F(splatd)(1.0), e) / (1.0 + e);                                     \
    return TENSOR__SELD(x == x, s, x);                                                                                \
}                                                                                                                     \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VD TENSOR__F(silud)(TENSOR__VD x) {                       \
    return TENSOR__SELD(x > -INFINITY, x * TENSOR__F(sigmoidd)(x), x * 0.0);                                          \
}                                                                                                                     \
/* gelu_tanh(x) = x (1 + tanh u) / 2 = x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3); in double,                   \
   with the sigmoid split by sign so the negative tail does not cancel. */                                            \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VD TENSOR__F(gelu_tanhd)(TENSOR__VD x) {                  \
    TENSOR__VD y = 2.0 * (0.7978845608028654 * (x + 0.044715 * (x * x * x)));                                         \
    return TENSOR__SELD(x > -INFINITY, x * TENSOR__F(sigmoidd)(y), x * 0.0);                                          \
}                                                                                                                     \
/* sin x (cos when q0 = 1) for |x| <= 2^20: k = rint(2x / pi), r = x - k pi/2 with pi/2 in three                      \
   parts (33 + 32 + 53 bits: k * part is exact, r keeps ~2^-53 relative), then the quadrant's sin                     \
   or cos polynomial. Larger arguments, inf and NaN are left to the caller. */                                        \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VD TENSOR__F(sincosd)(TENSOR__VD x, int q0) {             \
    TENSOR__VD kf = (x * 0.63661977236758134 + 6755399441055744.0) - 6755399441055744.0;                              \
    TENSOR__VD r = TENSOR__FMAD(kf, TENSOR__F(splatd)(-1.57079632673412561e+00), x);                                  \
    r = TENSOR__FMAD(kf, TENSOR__F(splatd)(-6.07710050630396598e-11), r);                                             \
    r = TENSOR__FMAD(kf, TENSOR__F(splatd)(-2.02226624879595063e-21), r);                                             \
    TENSOR__VL q = (TENSOR__VL)(kf + 6755399441055744.0) - 0x4338000000000000LL + q0;                                 \
    TENSOR__VD z = r * r;                                                                                             \
    TENSOR__VD s = TENSOR__F(splatd)(tensor__sind_s[3]), c = TENSOR__F(splatd)(tensor__cosd_c[3]);                    \
    s = TENSOR__HD(s, z, tensor__sind_s[2]);                                                                          \
    c = TENSOR__HD(c, z, tensor__cosd_c[2]);                                                                          \
    s = TENSOR__HD(s, z, tensor__sind_s[1]);                                                                          \
    c = TENSOR__HD(c, z, tensor__cosd_c[1]);                                                                          \
    s = TENSOR__HD(s, z, tensor__sind_s[0]);                                                                          \
    c = TENSOR__HD(c, z, tensor__cosd_c[0]);                                                                          \
    s = TENSOR__FMAD(r * z, s, r);                                                                                    \
    c = TENSOR__FMAD(z * z, c, 1.0 - 0.5 * z);                                                                        \
    TENSOR__VD v = TENSOR__SELD((TENSOR__VL)((q & 1) == 0), s, c);                                                    \
    v = TENSOR__SELD((TENSOR__VL)((q & 2) == 0), v, -v);                                                              \
    return q0 ? v : TENSOR__SELD((TENSOR__VL)(x == 0.0), x, v); /* sin(-0) = -0 */                                    \
}

/* ---- row kernels: out[i] = f(a[i]) etc. over n floats, any alignment ---- */
/* f32 lanes; a tail shorter than a vector goes through a zero-padded buffer */
#define TENSOR__SIMD_UNARY_F32(name, EXPR)                                                                            \
static TENSOR__TARGET void TENSOR__F(u_##name)(float *o, const float *a, int64_t n, const double *prm) {              \
    (void)prm;                                                                                                        \
    for (int64_t i = 0; i < n; i += TENSOR__W) {                                                                      \
        float buf[TENSOR__W];                                                                                         \
        const float *src = a + i;                                                                                     \
        float *dst = o + i;                                                                                           \
        if (n - i < TENSOR__W) { /* the tail, through a zero-padded buffer */                                         \
            memset(buf, 0, sizeof buf);                                                                               \
            memcpy(buf, src, (size_t)(n - i) * sizeof(float));                                                        \
            src = dst = buf;                                                                                          \
        }                                                                                                             \
        TENSOR__VF x = TENSOR__F(load)(src);                                                                          \
        TENSOR__F(store)(dst, EXPR);                                                                                  \
        if (dst == buf) memcpy(o + i, buf, (size_t)(n - i) * sizeof(float));                                          \
    }                                                                                                                 \
}
/* computed in double: TENSOR__DW lanes at a time */
#define TENSOR__SIMD_UNARY_F64(name, EXPR)                                                                            \
static TENSOR__TARGET void TENSOR__F(u_##name)(float *o, const float *a, int64_t n, const double *prm) {              \
    (void)prm;                                                                                                        \
    for (int64_t i = 0; i < n; i += TENSOR__DW) {                                                                     \
        float buf[TENSOR__DW];                                                                                        \
        const float *src = a + i;                                                                                     \
        float *dst = o + i;                                                                                           \
        if (n - i < TENSOR__DW) {                                                                                     \
            memset(buf, 0, sizeof buf);                                                                               \
            memcpy(buf, src, (size_t)(n - i) * sizeof(float));                                                        \
            src = dst = buf;                                                                                          \
        }                                                                                                             \
        TENSOR__VD x = TENSOR__LOADH(src);                                                                            \
        TENSOR__STOREH(dst, EXPR);                                                                                    \
        if (dst == buf) memcpy(o + i, buf, (size_t)(n - i) * sizeof(float));                                          \
    }                                                                                                                 \
}
/* sin and cos: the vector path for |x| <= 2^20, libm in double for the rare larger, inf or NaN */
#define TENSOR__SIMD_SINCOS(name, Q0, LIBM)                                                                           \
static TENSOR__TARGET void TENSOR__F(u_##name)(float *o, const float *a, int64_t n, const double *prm) {              \
    (void)prm;                                                                                                        \
    for (int64_t i = 0; i < n; i += TENSOR__DW) {                                                                     \
        float buf[TENSOR__DW] = {0};                                                                                  \
        int64_t len = n - i < TENSOR__DW ? n - i : TENSOR__DW;                                                        \
        const float *src = a + i;                                                                                     \
        float *dst = o + i;                                                                                           \
        if (len < TENSOR__DW) {                                                                                       \
            memcpy(buf, src, (size_t)len * sizeof(float));                                                            \
            src = dst = buf;                                                                                          \
        }                                                                                                             \
        TENSOR__VD x = TENSOR__LOADH(src);                                                                            \
        TENSOR__VL far = ~(TENSOR__VL)(TENSOR__F(absd)(x) <= 1048576.0);                                              \
        /* far lanes (and inf, NaN) go in as 0: their quadrant would overflow the int64 lanes */                      \
        TENSOR__STOREH(dst, TENSOR__F(sincosd)(TENSOR__SELD(far, TENSOR__F(splatd)(0.0), x), Q0));                    \
        if (TENSOR__ANYD(far))                                                                                        \
            for (int64_t j = 0; j < len; j++)                                                                         \
                if (far[j]) dst[j] = (float)LIBM((double)a[i + j]);                                                   \
        if (len < TENSOR__DW) memcpy(o + i, buf, (size_t)len * sizeof(float));                                        \
    }                                                                                                                 \
}
#define TENSOR__SIMD_BINARY(name, EXPR)                                                                               \
static TENSOR__TARGET void TENSOR__F(b_##name)(float *o, const float *a, const float *b, int64_t n, int mode) {       \
    int64_t i = 0;                                                                                                    \
    if (mode == 0)                                                                                                    \
        for (; i + TENSOR__W <= n; i += TENSOR__W) {                                                                  \
            TENSOR__VF x = TENSOR__F(load)(a + i), y = TENSOR__F(load)(b + i);                                        \
            TENSOR__F(store)(o + i, EXPR);                                                                            \
        }                                                                                                             \
    else if (mode == 1) {                                                                                             \
        TENSOR__VF y = TENSOR__F(splat)(b[0]);                                                                        \
        for (; i + TENSOR__W <= n; i += TENSOR__W) {                                                                  \
            TENSOR__VF x = TENSOR__F(load)(a + i);                                                                    \
            TENSOR__F(store)(o + i, EXPR);                                                                            \
        }                                                                                                             \
    } else {                                                                                                          \
        TENSOR__VF x = TENSOR__F(splat)(a[0]);                                                                        \
        for (; i + TENSOR__W <= n; i += TENSOR__W) {                                                                  \
            TENSOR__VF y = TENSOR__F(load)(b + i);                                                                    \
            TENSOR__F(store)(o + i, EXPR);                                                                            \
        }                                                                                                             \
    }                                                                                                                 \
    if (i < n) {                                                                                                      \
        float ba[TENSOR__W] = {0}, bb[TENSOR__W] = {0};                                                               \
        for (int64_t j = i; j < n; j++) {                                                                             \
            ba[j - i] = a[mode == 2 ? 0 : j];                                                                         \
            bb[j - i] = b[mode == 1 ? 0 : j];                                                                         \
        }                                                                                                             \
        TENSOR__VF x = TENSOR__F(load)(ba), y = TENSOR__F(load)(bb);                                                  \
        TENSOR__F(store)(ba, EXPR);                                                                                   \
        memcpy(o + i, ba, (size_t)(n - i) * sizeof(float));                                                           \
    }                                                                                                                 \
}
/* comparisons: bool (0/1 bytes) out */
#define TENSOR__SIMD_COMPARE(name, OP)                                                                                \
static TENSOR__TARGET void TENSOR__F(c_##name)(uint8_t *o, const float *a, const float *b, int64_t n, int mode) {     \
    for (int64_t i = 0; i < n; i += TENSOR__W) {                                                                      \
        int64_t len = n - i < TENSOR__W ? n - i : TENSOR__W;                                                          \
        TENSOR__VF x, y;                                                                                              \
        if (len == TENSOR__W) {                                                                                       \
            x = mode == 2 ? TENSOR__F(splat)(a[0]) : TENSOR__F(load)(a + i);                                          \
            y = mode == 1 ? TENSOR__F(splat)(b[0]) : TENSOR__F(load)(b + i);                                          \
        } else {                                                                                                      \
            float ba[TENSOR__W] = {0}, bb[TENSOR__W] = {0};                                                           \
            for (int64_t j = i; j < n; j++) {                                                                         \
                ba[j - i] = a[mode == 2 ? 0 : j];                                                                     \
                bb[j - i] = b[mode == 1 ? 0 : j];                                                                     \
            }                                                                                                         \
            x = TENSOR__F(load)(ba);                                                                                  \
            y = TENSOR__F(load)(bb);                                                                                  \
        }                                                                                                             \
        TENSOR__VB v = __builtin_convertvector((TENSOR__VI)(x OP y), TENSOR__VB) & 1;                                 \
        memcpy(o + i, &v, (size_t)len);                                                                               \
    }                                                                                                                 \
}

/* SLEEF 3.5's log1pf overflows to inf from about 1e38 on: log x is log1p x in f32 long before. */
#ifdef TENSOR_USE_SLEEF
#define TENSOR__SIMD_OWN_OR_SLEEF                                                                          \
    TENSOR__SIMD_UNARY_F32(exp, TENSOR__SLEEF(exp, x))                                                     \
    TENSOR__SIMD_UNARY_F32(log, TENSOR__SLEEF(log, x))                                                     \
    TENSOR__SIMD_UNARY_F32(expm1, TENSOR__SLEEF(expm1, x))                                                 \
    TENSOR__SIMD_UNARY_F32(log1p, TENSOR__SEL(x < 1e30f, TENSOR__SLEEF(log1p, x), TENSOR__SLEEF(log, x)))         \
    TENSOR__SIMD_UNARY_F32(tanh, TENSOR__SLEEF(tanh, x))                                                   \
    TENSOR__SIMD_UNARY_F32(sin, TENSOR__SLEEF(sin, x))                                                     \
    TENSOR__SIMD_UNARY_F32(cos, TENSOR__SLEEF(cos, x))                                                     \
    TENSOR__SIMD_UNARY_F32(erf, TENSOR__SLEEF(erf, x))
#else
#define TENSOR__SIMD_OWN_OR_SLEEF                                                                          \
    TENSOR__SIMD_UNARY_F32(exp, TENSOR__F(exp)(x))                                                         \
    TENSOR__SIMD_UNARY_F32(log, TENSOR__F(log)(x))                                                         \
    TENSOR__SIMD_UNARY_F32(expm1, TENSOR__F(expm1)(x))                                                     \
    TENSOR__SIMD_UNARY_F32(log1p, TENSOR__F(log1p)(x))                                                     \
    TENSOR__SIMD_UNARY_F32(tanh, TENSOR__F(tanh)(x))                                                       \
    TENSOR__SIMD_SINCOS(sin, 0, sin)                                                                       \
    TENSOR__SIMD_SINCOS(cos, 1, cos)                                                                       \
    TENSOR__SIMD_UNARY_F64(erf, TENSOR__F(erfd)(x))
#endif

/* The optimizer update with torch.optim's formulas (optim.h has the reference loop, in double), in
   f32 lanes. TENSOR__FMA fuses where the ISA has it (avx2, avx512, neon), so instances may differ
   in the last bits; sqrt and the divides are IEEE (correctly rounded), no approximations. The tail
   goes through zero-padded buffers, so every element takes the same vector arithmetic wherever a
   thread's range starts: the result does not depend on the thread count. */
#define TENSOR__SIMD_OPTIM                                                                                            \
static TENSOR__TARGET void TENSOR__F(optim)(float *p, const float *g, float *s1, float *s2, int64_t n, const tensor__optim_consts *k) { \
    const int kind = k->kind;                                                                                         \
    const bool first = k->first, nesterov = k->nesterov, decay = k->decay;                                            \
    const TENSOR__VF neg_lr = TENSOR__F(splat)(k->neg_lr), mom = TENSOR__F(splat)(k->momentum);                       \
    const TENSOR__VF wd = TENSOR__F(splat)(k->weight_decay), keep = TENSOR__F(splat)(k->keep);                        \
    const TENSOR__VF b1 = TENSOR__F(splat)(k->beta1), c1 = TENSOR__F(splat)(k->one_minus_beta1);                      \
    const TENSOR__VF b2 = TENSOR__F(splat)(k->beta2), c2 = TENSOR__F(splat)(k->one_minus_beta2);                      \
    const TENSOR__VF sb2 = TENSOR__F(splat)(k->sqrt_bias2), eps = TENSOR__F(splat)(k->eps);                           \
    const TENSOR__VF step = TENSOR__F(splat)(k->step_size);                                                           \
    for (int64_t i = 0; i < n; i += TENSOR__W) {                                                                      \
        int64_t len = n - i < TENSOR__W ? n - i : TENSOR__W;                                                          \
        float *pp = p + i, *pm = s1 ? s1 + i : NULL, *pv = s2 ? s2 + i : NULL;                                        \
        const float *pg = g + i;                                                                                      \
        float bp[TENSOR__W], bg[TENSOR__W], bm[TENSOR__W], bv[TENSOR__W];                                             \
        if (len < TENSOR__W) { /* the tail, through zero-padded buffers */                                            \
            memset(bp, 0, sizeof bp);                                                                                 \
            memset(bg, 0, sizeof bg);                                                                                 \
            memset(bm, 0, sizeof bm);                                                                                 \
            memset(bv, 0, sizeof bv);                                                                                 \
            memcpy(bp, pp, (size_t)len * sizeof(float));                                                              \
            memcpy(bg, pg, (size_t)len * sizeof(float));                                                              \
            if (pm) { memcpy(bm, pm, (size_t)len * sizeof(float)); pm = bm; }                                         \
            if (pv) { memcpy(bv, pv, (size_t)len * sizeof(float)); pv = bv; }                                         \
            pp = bp;                                                                                                  \
            pg = bg;                                                                                                  \
        }                                                                                                             \
        TENSOR__VF P = TENSOR__F(load)(pp), G = TENSOR__F(load)(pg);                                                  \
        if (kind == TENSOR__SGD) {                                                                                    \
            if (decay) G = TENSOR__FMA(wd, P, G);                                                                     \
            if (pm) {                                                                                                 \
                TENSOR__VF M = G; /* dampening 0 */                                                                   \
                if (!first) M = TENSOR__FMA(mom, TENSOR__F(load)(pm), G);                                             \
                TENSOR__F(store)(pm, M);                                                                              \
                if (nesterov) G = TENSOR__FMA(mom, M, G);                                                             \
                else G = M;                                                                                           \
            }                                                                                                         \
            P = TENSOR__FMA(neg_lr, G, P);                                                                            \
        } else {                                                                                                      \
            if (kind == TENSOR__ADAMW) P = P * keep;                                                                  \
            else if (decay) G = TENSOR__FMA(wd, P, G);                                                                \
            TENSOR__VF M = TENSOR__FMA(c1, G, b1 * TENSOR__F(load)(pm));                                              \
            TENSOR__VF V = TENSOR__FMA(c2 * G, G, b2 * TENSOR__F(load)(pv));                                          \
            TENSOR__F(store)(pm, M);                                                                                  \
            TENSOR__F(store)(pv, V);                                                                                  \
            TENSOR__VF denom = TENSOR__SQRT(V) / sb2 + eps;                                                           \
            P = P - step * M / denom;                                                                                 \
        }                                                                                                             \
        TENSOR__F(store)(pp, P);                                                                                      \
        if (len < TENSOR__W) {                                                                                        \
            memcpy(p + i, bp, (size_t)len * sizeof(float));                                                           \
            if (s1) memcpy(s1 + i, bm, (size_t)len * sizeof(float));                                                  \
            if (s2) memcpy(s2 + i, bv, (size_t)len * sizeof(float));                                                  \
        }                                                                                                             \
    }                                                                                                                 \
}

/* The kernels of one instance and the function that installs them. The float-valued ops that are
   exact in f32 (neg, abs, sqrt, square, reciprocal, relu, clamps, + - * /, max, min, comparisons)
   give bit-identical results to the reference loops, which compute in double and round once;
   leaky_relu computes in double for the same reason. */
#define TENSOR__SIMD_KERNELS                                                                                          \
TENSOR__SIMD_MATH                                                                                                     \
TENSOR__SIMD_OWN_OR_SLEEF                                                                                             \
TENSOR__SIMD_UNARY_F32(neg, -x)                                                                                       \
TENSOR__SIMD_UNARY_F32(abs, TENSOR__F(abs)(x))                                                                        \
TENSOR__SIMD_UNARY_F32(sqrt, TENSOR__SQRT(x))                                                                         \
TENSOR__SIMD_UNARY_F32(square, x * x)                                                                                 \
TENSOR__SIMD_UNARY_F32(reciprocal, 1.0f / x)                                                                          \
TENSOR__SIMD_UNARY_F32(relu, TENSOR__SEL(x < 0.0f, TENSOR__F(splat)(0.0f), x))                                        \
TENSOR__SIMD_UNARY_F32(relu6, TENSOR__F(clamp)(x, 0.0f, 6.0f))                                                        \
TENSOR__SIMD_UNARY_F32(hardtanh, TENSOR__F(clamp)(x, (float)prm[0], (float)prm[1]))                                   \
TENSOR__SIMD_UNARY_F32(clamp, TENSOR__F(clamp)(x, (float)prm[0], (float)prm[1]))                                      \
TENSOR__SIMD_UNARY_F64(leaky_relu, TENSOR__SELD(x > 0.0, x, x * prm[0]))                                              \
TENSOR__SIMD_UNARY_F64(sigmoid, TENSOR__F(sigmoidd)(x))                                                               \
TENSOR__SIMD_UNARY_F64(silu, TENSOR__F(silud)(x))                                                                     \
TENSOR__SIMD_UNARY_F32(softplus, TENSOR__F(softplus)(x))                                                              \
TENSOR__SIMD_UNARY_F32(gelu, TENSOR__F(geluf)(x))                                                                     \
TENSOR__SIMD_UNARY_F64(gelu_tanh, TENSOR__F(gelu_tanhd)(x))                                                           \
TENSOR__SIMD_BINARY(add, x + y)                                                                                       \
TENSOR__SIMD_BINARY(sub, x - y)                                                                                       \
TENSOR__SIMD_BINARY(mul, x * y)                                                                                       \
TENSOR__SIMD_BINARY(div, x / y)                                                                                       \
TENSOR__SIMD_BINARY(maximum, TENSOR__SEL((x > y) | (x != x), x, y)) /* a NaN x or y gives it */                        \
TENSOR__SIMD_BINARY(minimum, TENSOR__SEL((x < y) | (x != x), x, y))                                                 \
TENSOR__SIMD_COMPARE(eq, ==)                                                                                          \
TENSOR__SIMD_COMPARE(ne, !=)                                                                                          \
TENSOR__SIMD_COMPARE(lt, <)                                                                                           \
TENSOR__SIMD_COMPARE(le, <=)                                                                                          \
TENSOR__SIMD_COMPARE(gt, >)                                                                                           \
TENSOR__SIMD_COMPARE(ge, >=)                                                                                          \
TENSOR__SIMD_OPTIM                                                                                                    \
static void TENSOR__F(install)(tensor__simd_isa *t) {                                                                 \
    t->width = TENSOR__W;                                                                                             \
    t->unary[TENSOR_OP_exp] = TENSOR__F(u_exp);                                                                       \
    t->unary[TENSOR_OP_log] = TENSOR__F(u_log);                                                                       \
    t->unary[TENSOR_OP_expm1] = TENSOR__F(u_expm1);                                                                   \
    t->unary[TENSOR_OP_log1p] = TENSOR__F(u_log1p);                                                                   \
    t->unary[TENSOR_OP_tanh] = TENSOR__F(u_tanh);                                                                     \
    t->unary[TENSOR_OP_sin] = TENSOR__F(u_sin);                                                                       \
    t->unary[TENSOR_OP_cos] = TENSOR__F(u_cos);                                                                       \
    t->unary[TENSOR_OP_erf] = TENSOR__F(u_erf);                                                                       \
    t->unary[TENSOR_OP_neg] = TENSOR__F(u_neg);                                                                       \
    t->unary[TENSOR_OP_abs] = TENSOR__F(u_abs);                                                                       \
    t->unary[TENSOR_OP_sqrt] = TENSOR__F(u_sqrt);                                                                     \
    t->unary[TENSOR_OP_square] = TENSOR__F(u_square);                                                                 \
    t->unary[TENSOR_OP_reciprocal] = TENSOR__F(u_reciprocal);                                                         \
    t->unary[TENSOR_OP_relu] = TENSOR__F(u_relu);                                                                     \
    t->unary[TENSOR_OP_relu6] = TENSOR__F(u_relu6);                                                                   \
    t->unary[TENSOR_OP_hardtanh] = TENSOR__F(u_hardtanh);                                                             \
    t->unary[TENSOR_OP_clamp] = TENSOR__F(u_clamp);                                                                   \
    t->unary[TENSOR_OP_leaky_relu] = TENSOR__F(u_leaky_relu);                                                         \
    t->unary[TENSOR_OP_sigmoid] = TENSOR__F(u_sigmoid);                                                               \
    t->unary[TENSOR_OP_silu] = TENSOR__F(u_silu);                                                                     \
    t->unary[TENSOR_OP_softplus] = TENSOR__F(u_softplus);                                                             \
    t->unary[TENSOR_OP_gelu] = TENSOR__F(u_gelu);                                                                     \
    t->unary[TENSOR_OP_gelu_tanh] = TENSOR__F(u_gelu_tanh);                                                           \
    t->binary[TENSOR_OP_add] = TENSOR__F(b_add);                                                                      \
    t->binary[TENSOR_OP_sub] = TENSOR__F(b_sub);                                                                      \
    t->binary[TENSOR_OP_mul] = TENSOR__F(b_mul);                                                                      \
    t->binary[TENSOR_OP_div] = TENSOR__F(b_div);                                                                      \
    t->binary[TENSOR_OP_maximum] = TENSOR__F(b_maximum);                                                              \
    t->binary[TENSOR_OP_minimum] = TENSOR__F(b_minimum);                                                              \
    t->compare[TENSOR_OP_eq] = TENSOR__F(c_eq);                                                                       \
    t->compare[TENSOR_OP_ne] = TENSOR__F(c_ne);                                                                       \
    t->compare[TENSOR_OP_lt] = TENSOR__F(c_lt);                                                                       \
    t->compare[TENSOR_OP_le] = TENSOR__F(c_le);                                                                       \
    t->compare[TENSOR_OP_gt] = TENSOR__F(c_gt);                                                                       \
    t->compare[TENSOR_OP_ge] = TENSOR__F(c_ge);                                                                       \
    t->optim = TENSOR__F(optim);                                                                                      \
}

/* ---- row primitives: the contiguous f32 loops of the reductions, softmax, cross_entropy and the
   norms (the tensor__row_*_f32 entry points at the end of this part call them through the table) ----
   The public sum and mean (row_sum) convert each element to double and add there, in four vector
   accumulators: as exact as the reference for sums that cancel, and still faster than memory
   delivers a long row. The sums inside softmax, cross_entropy and the norms (of e^x, squares,
   products) accumulate in f32 lanes over blocks of TENSOR__ROW_BLOCK elements and then in double:
   a block adds at most ~10 roundings of 2^-24 relative to its own magnitude. Tails shorter than a
   vector go through zero-padded buffers or plain loops. */
#define TENSOR__ROW_BLOCK 256 /* a multiple of 2 vectors of every instance */
#define TENSOR__SIMD_ROWS                                                                                             \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VD TENSOR__F(rw_loadd)(const double *p) { TENSOR__VD v; memcpy(&v, p, sizeof v); return v; } \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET void TENSOR__F(rw_stored)(double *p, TENSOR__VD v) { memcpy(p, &v, sizeof v); } \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET double TENSOR__F(rw_hsumd)(TENSOR__VD v) {                        \
    double d[8] = {0, 0, 0, 0, 0, 0, 0, 0}; /* pairwise, written out: the compiler keeps it in registers */           \
    memcpy(d, &v, sizeof v);                                                                                          \
    if (TENSOR__DW > 4) { d[0] += d[4]; d[1] += d[5]; d[2] += d[6]; d[3] += d[7]; }                                   \
    if (TENSOR__DW > 2) { d[0] += d[2]; d[1] += d[3]; }                                                               \
    if (TENSOR__DW > 1) d[0] += d[1];                                                                                 \
    return d[0];                                                                                                      \
}                                                                                                                     \
/* acc (doubles) += the lanes of v, whose floats are in f (v stored) */                                               \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VD TENSOR__F(rw_widen)(TENSOR__VD acc, TENSOR__VF v) {    \
    float f[TENSOR__W];                                                                                               \
    TENSOR__F(store)(f, v);                                                                                           \
    for (int k = 0; k < TENSOR__W; k += TENSOR__DW) acc = acc + TENSOR__LOADH(f + k);                                 \
    return acc;                                                                                                       \
}                                                                                                                     \
/* d[0 .. W) += the lanes of v, in double */                                                                          \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET void TENSOR__F(rw_addh)(double *d, TENSOR__VF v) {                \
    float f[TENSOR__W];                                                                                               \
    TENSOR__F(store)(f, v);                                                                                           \
    for (int k = 0; k < TENSOR__W; k += TENSOR__DW)                                                                   \
        TENSOR__F(rw_stored)(d + k, TENSOR__F(rw_loadd)(d + k) + TENSOR__LOADH(f + k));                               \
}                                                                                                                     \
/* The first k < W elements of p, the other lanes `fill`; and the store of the first k lanes. These                   \
   are the plain versions: an instance with masked loads and stores defines TENSOR__ROW_LOADN /                       \
   TENSOR__ROW_STOREN with them, the others as these. */                                                              \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VF TENSOR__F(rw_part)(const float *p, int64_t k, float fill) { \
    float f[TENSOR__W];                                                                                               \
    for (int j = 0; j < TENSOR__W; j++) f[j] = fill;                                                                  \
    for (int64_t j = 0; j < k; j++) f[j] = p[j];                                                                      \
    return TENSOR__F(load)(f);                                                                                        \
}                                                                                                                     \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET void TENSOR__F(rw_store_part)(float *p, TENSOR__VF v, int64_t k) { \
    float f[TENSOR__W];                                                                                               \
    TENSOR__F(store)(f, v);                                                                                           \
    for (int64_t j = 0; j < k; j++) p[j] = f[j];                                                                      \
}                                                                                                                     \
/* lanes below k set */                                                                                               \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VI TENSOR__F(rw_first)(int64_t k) {                       \
    TENSOR__VI io;                                                                                                    \
    for (int j = 0; j < TENSOR__W; j++) io[j] = j;                                                                    \
    return io < (int32_t)k;                                                                                           \
}                                                                                                                     \
/* sum of a row, each element in double (the public sum and mean) */                                                  \
static TENSOR__TARGET double TENSOR__F(row_sum)(const float *x, int64_t n) {                                          \
    TENSOR__VD a0 = TENSOR__F(splatd)(0.0), a1 = a0;                                                                  \
    int64_t i = 0;                                                                                                    \
    for (; i + 2 * TENSOR__DW <= n; i += 2 * TENSOR__DW) {                                                            \
        a0 = a0 + TENSOR__LOADH(x + i);                                                                               \
        a1 = a1 + TENSOR__LOADH(x + i + TENSOR__DW);                                                                  \
    }                                                                                                                 \
    if (i + TENSOR__DW <= n) { a0 = a0 + TENSOR__LOADH(x + i); i += TENSOR__DW; }                                     \
    double tail = 0;                                                                                                  \
    for (; i < n; i++) tail += (double)x[i];                                                                          \
    return TENSOR__F(rw_hsumd)(a0 + a1) + tail;                                                                       \
}                                                                                                                     \
static TENSOR__TARGET double TENSOR__F(row_sum_f64)(const double *x, int64_t n) {                                     \
    TENSOR__VD a0 = TENSOR__F(splatd)(0.0), a1 = a0, a2 = a0, a3 = a0;                                                \
    int64_t i = 0;                                                                                                    \
    for (; i + 4 * TENSOR__DW <= n; i += 4 * TENSOR__DW) {                                                            \
        a0 = a0 + TENSOR__F(rw_loadd)(x + i);                                                                         \
        a1 = a1 + TENSOR__F(rw_loadd)(x + i + TENSOR__DW);                                                            \
        a2 = a2 + TENSOR__F(rw_loadd)(x + i + 2 * TENSOR__DW);                                                        \
        a3 = a3 + TENSOR__F(rw_loadd)(x + i + 3 * TENSOR__DW);                                                        \
    }                                                                                                                 \
    double tail = 0;                                                                                                  \
    for (; i < n; i++) tail += x[i];                                                                                  \
    return TENSOR__F(rw_hsumd)((a0 + a1) + (a2 + a3)) + tail;                                                         \
}                                                                                                                     \
/* acc[j] += x[j] in double (the column sums of reductions over outer dims) */                                        \
static TENSOR__TARGET void TENSOR__F(row_cols_add)(double *acc, const float *x, int64_t n) {                          \
    int64_t j = 0;                                                                                                    \
    for (; j + TENSOR__DW <= n; j += TENSOR__DW)                                                                      \
        TENSOR__F(rw_stored)(acc + j, TENSOR__F(rw_loadd)(acc + j) + TENSOR__LOADH(x + j));                           \
    for (; j < n; j++) acc[j] += (double)x[j];                                                                        \
}                                                                                                                     \
/* sum of (x - m)^2: padding lanes hold m */                                                                          \
static TENSOR__TARGET double TENSOR__F(row_sqdev)(const float *x, int64_t n, float m) {                               \
    TENSOR__VD d = TENSOR__F(splatd)(0.0);                                                                            \
    TENSOR__VF vm = TENSOR__F(splat)(m);                                                                              \
    int64_t i = 0, full = n - n % TENSOR__W;                                                                          \
    while (i < full) {                                                                                                \
        int64_t end = full - i > TENSOR__ROW_BLOCK ? i + TENSOR__ROW_BLOCK : full;                                    \
        TENSOR__VF a0 = TENSOR__F(splat)(0.0f), a1 = a0;                                                              \
        for (; i + 2 * TENSOR__W <= end; i += 2 * TENSOR__W) {                                                        \
            TENSOR__VF d0 = TENSOR__F(load)(x + i) - vm, d1 = TENSOR__F(load)(x + i + TENSOR__W) - vm;                \
            a0 = TENSOR__FMA(d0, d0, a0);                                                                             \
            a1 = TENSOR__FMA(d1, d1, a1);                                                                             \
        }                                                                                                             \
        if (i < end) { TENSOR__VF d0 = TENSOR__F(load)(x + i) - vm; a0 = TENSOR__FMA(d0, d0, a0); i += TENSOR__W; }   \
        d = TENSOR__F(rw_widen)(d, a0 + a1);                                                                          \
    }                                                                                                                 \
    if (i < n) { TENSOR__VF d0 = TENSOR__ROW_LOADN(x + i, n - i, m) - vm; d = TENSOR__F(rw_widen)(d, d0 * d0); }      \
    return TENSOR__F(rw_hsumd)(d);                                                                                    \
}                                                                                                                     \
/* sum of a * b */                                                                                                    \
static TENSOR__TARGET double TENSOR__F(row_dot)(const float *a, const float *b, int64_t n) {                          \
    TENSOR__VD d = TENSOR__F(splatd)(0.0);                                                                            \
    int64_t i = 0, full = n - n % TENSOR__W;                                                                          \
    while (i < full) {                                                                                                \
        int64_t end = full - i > TENSOR__ROW_BLOCK ? i + TENSOR__ROW_BLOCK : full;                                    \
        TENSOR__VF a0 = TENSOR__F(splat)(0.0f), a1 = a0;                                                              \
        for (; i + 2 * TENSOR__W <= end; i += 2 * TENSOR__W) {                                                        \
            a0 = TENSOR__FMA(TENSOR__F(load)(a + i), TENSOR__F(load)(b + i), a0);                                     \
            a1 = TENSOR__FMA(TENSOR__F(load)(a + i + TENSOR__W), TENSOR__F(load)(b + i + TENSOR__W), a1);             \
        }                                                                                                             \
        if (i < end) { a0 = TENSOR__FMA(TENSOR__F(load)(a + i), TENSOR__F(load)(b + i), a0); i += TENSOR__W; }        \
        d = TENSOR__F(rw_widen)(d, a0 + a1);                                                                          \
    }                                                                                                                 \
    if (i < n) d = TENSOR__F(rw_widen)(d, TENSOR__ROW_LOADN(a + i, n - i, 0.0f) * TENSOR__ROW_LOADN(b + i, n - i, 0.0f)); \
    return TENSOR__F(rw_hsumd)(d);                                                                                    \
}                                                                                                                     \
/* the largest element, -inf for none (a NaN may or may not win: the callers find NaN rows from                       \
   row_sumexp, whose e^(NaN - m) is NaN) */                                                                           \
static TENSOR__TARGET float TENSOR__F(row_max)(const float *x, int64_t n) {                                           \
    TENSOR__VF m0 = TENSOR__F(splat)(-INFINITY), m1 = m0;                                                             \
    int64_t i = 0;                                                                                                    \
    for (; i + 2 * TENSOR__W <= n; i += 2 * TENSOR__W) {                                                              \
        m0 = TENSOR__MAX(m0, TENSOR__F(load)(x + i));                                                                 \
        m1 = TENSOR__MAX(m1, TENSOR__F(load)(x + i + TENSOR__W));                                                     \
    }                                                                                                                 \
    if (i + TENSOR__W <= n) { m0 = TENSOR__MAX(m0, TENSOR__F(load)(x + i)); i += TENSOR__W; }                         \
    if (i < n) m1 = TENSOR__MAX(m1, TENSOR__ROW_LOADN(x + i, n - i, -INFINITY));                                      \
    float f[16];                                                                                                      \
    TENSOR__F(store)(f, TENSOR__MAX(m0, m1));                                                                         \
    int w = TENSOR__W;                                                                                                \
    if (w > 8) { for (int j = 0; j < 8; j++) f[j] = f[j + 8] > f[j] ? f[j + 8] : f[j]; w = 8; }                       \
    if (w > 4) { for (int j = 0; j < 4; j++) f[j] = f[j + 4] > f[j] ? f[j + 4] : f[j]; w = 4; }                       \
    if (w > 2) { f[0] = f[2] > f[0] ? f[2] : f[0]; f[1] = f[3] > f[1] ? f[3] : f[1]; }                                \
    if (w > 1) f[0] = f[1] > f[0] ? f[1] : f[0];                                                                      \
    return f[0];                                                                                                      \
}                                                                                                                     \
/* sum of e^(x - m) (the layer's exp); e^(x - m) also stored to y when y is not NULL. Padding lanes                   \
   hold m and are zeroed after the exp. */                                                                            \
static TENSOR__TARGET double TENSOR__F(row_sumexp)(float *y, const float *x, int64_t n, float m) {                    \
    TENSOR__VD d = TENSOR__F(splatd)(0.0);                                                                            \
    TENSOR__VF vm = TENSOR__F(splat)(m);                                                                              \
    int64_t i = 0, full = n - n % TENSOR__W;                                                                          \
    while (i < full) {                                                                                                \
        int64_t end = full - i > TENSOR__ROW_BLOCK ? i + TENSOR__ROW_BLOCK : full;                                    \
        TENSOR__VF a0 = TENSOR__F(splat)(0.0f), a1 = a0;                                                              \
        for (; i + 2 * TENSOR__W <= end; i += 2 * TENSOR__W) { /* two independent exponentials per step */            \
            TENSOR__VF e0 = TENSOR__F(exp)(TENSOR__F(load)(x + i) - vm);                                              \
            TENSOR__VF e1 = TENSOR__F(exp)(TENSOR__F(load)(x + i + TENSOR__W) - vm);                                  \
            if (y) { TENSOR__F(store)(y + i, e0); TENSOR__F(store)(y + i + TENSOR__W, e1); }                          \
            a0 = a0 + e0;                                                                                             \
            a1 = a1 + e1;                                                                                             \
        }                                                                                                             \
        if (i < end) {                                                                                                \
            TENSOR__VF e0 = TENSOR__F(exp)(TENSOR__F(load)(x + i) - vm);                                              \
            if (y) TENSOR__F(store)(y + i, e0);                                                                       \
            a0 = a0 + e0;                                                                                             \
            i += TENSOR__W;                                                                                           \
        }                                                                                                             \
        d = TENSOR__F(rw_widen)(d, a0 + a1);                                                                          \
    }                                                                                                                 \
    if (i < n) {                                                                                                      \
        TENSOR__VF e0 = TENSOR__F(exp)(TENSOR__ROW_LOADN(x + i, n - i, m) - vm);                                      \
        e0 = TENSOR__SEL(TENSOR__F(rw_first)(n - i), e0, TENSOR__F(splat)(0.0f));                                     \
        if (y) TENSOR__ROW_STOREN(y + i, e0, n - i);                                                                  \
        d = TENSOR__F(rw_widen)(d, e0);                                                                               \
    }                                                                                                                 \
    return TENSOR__F(rw_hsumd)(d);                                                                                    \
}                                                                                                                     \
/* y = x * s + t */                                                                                                   \
static TENSOR__TARGET void TENSOR__F(row_affine)(float *y, const float *x, int64_t n, float s, float t) {             \
    TENSOR__VF vs = TENSOR__F(splat)(s), vt = TENSOR__F(splat)(t);                                                    \
    int64_t i = 0;                                                                                                    \
    for (; i + TENSOR__W <= n; i += TENSOR__W) TENSOR__F(store)(y + i, TENSOR__FMA(TENSOR__F(load)(x + i), vs, vt));  \
    if (i < n) TENSOR__ROW_STOREN(y + i, TENSOR__FMA(TENSOR__ROW_LOADN(x + i, n - i, 0.0f), vs, vt), n - i);          \
}                                                                                                                     \
/* y = (x - a) - b (log_softmax: x - max - log(sum)) */                                                               \
static TENSOR__TARGET void TENSOR__F(row_sub2)(float *y, const float *x, int64_t n, float a, float b) {               \
    TENSOR__VF va = TENSOR__F(splat)(a), vb = TENSOR__F(splat)(b);                                                    \
    int64_t i = 0;                                                                                                    \
    for (; i + TENSOR__W <= n; i += TENSOR__W) TENSOR__F(store)(y + i, (TENSOR__F(load)(x + i) - va) - vb);           \
    if (i < n) TENSOR__ROW_STOREN(y + i, (TENSOR__ROW_LOADN(x + i, n - i, 0.0f) - va) - vb, n - i);                   \
}                                                                                                                     \
/* y = (y * s) * (g - d) (softmax backward, y holding e^(x - max) and s = 1 / sum) */                                 \
static TENSOR__TARGET void TENSOR__F(row_smbwd)(float *y, const float *g, int64_t n, float s, float d) {              \
    TENSOR__VF vs = TENSOR__F(splat)(s), vd = TENSOR__F(splat)(d);                                                    \
    int64_t i = 0;                                                                                                    \
    for (; i + TENSOR__W <= n; i += TENSOR__W)                                                                        \
        TENSOR__F(store)(y + i, (TENSOR__F(load)(y + i) * vs) * (TENSOR__F(load)(g + i) - vd));                       \
    if (i < n)                                                                                                        \
        TENSOR__ROW_STOREN(y + i, (TENSOR__ROW_LOADN(y + i, n - i, 0.0f) * vs) * (TENSOR__ROW_LOADN(g + i, n - i, 0.0f) - vd), n - i); \
}                                                                                                                     \
/* y = g - y * c (log_softmax backward) */                                                                            \
static TENSOR__TARGET void TENSOR__F(row_fms)(float *y, const float *g, int64_t n, float c) {                         \
    TENSOR__VF vc = TENSOR__F(splat)(-c);                                                                             \
    int64_t i = 0;                                                                                                    \
    for (; i + TENSOR__W <= n; i += TENSOR__W) TENSOR__F(store)(y + i, TENSOR__FMA(TENSOR__F(load)(y + i), vc, TENSOR__F(load)(g + i))); \
    if (i < n)                                                                                                        \
        TENSOR__ROW_STOREN(y + i, TENSOR__FMA(TENSOR__ROW_LOADN(y + i, n - i, 0.0f), vc, TENSOR__ROW_LOADN(g + i, n - i, 0.0f)), n - i); \
}                                                                                                                     \
/* y = ((x - mh) - ml) * rstd * w + b, w and b optional (the norms' forward; the mean comes as mh + ml,               \
   its f32 rounding and the rest: x - mh is exact for x near the mean) */                                             \
static TENSOR__TARGET void TENSOR__F(row_norm)(float *y, const float *x, int64_t n, float mh, float ml, float rstd, const float *w, const float *b) { \
    TENSOR__VF vm = TENSOR__F(splat)(mh), vl = TENSOR__F(splat)(ml), vr = TENSOR__F(splat)(rstd);                     \
    int64_t i = 0;                                                                                                    \
    for (; i + TENSOR__W <= n; i += TENSOR__W) {                                                                      \
        TENSOR__VF v = ((TENSOR__F(load)(x + i) - vm) - vl) * vr;                                                     \
        if (w) v = v * TENSOR__F(load)(w + i);                                                                        \
        if (b) v = v + TENSOR__F(load)(b + i);                                                                        \
        TENSOR__F(store)(y + i, v);                                                                                   \
    }                                                                                                                 \
    if (i < n) {                                                                                                      \
        TENSOR__VF v = ((TENSOR__ROW_LOADN(x + i, n - i, mh) - vm) - vl) * vr;                                        \
        if (w) v = v * TENSOR__ROW_LOADN(w + i, n - i, 0.0f);                                                         \
        if (b) v = v + TENSOR__ROW_LOADN(b + i, n - i, 0.0f);                                                         \
        TENSOR__ROW_STOREN(y + i, v, n - i);                                                                          \
    }                                                                                                                 \
}                                                                                                                     \
/* The norms' backward for one row: xhat = (x - mean) rstd, gh = g w;                                                 \
   gx = rstd (gh - [center] mean(gh) - xhat mean(gh xhat)); gw += g xhat and gb += g (in double,                      \
   when not NULL). rms_norm is the case center = false, mean = 0. */                                                  \
static TENSOR__TARGET void TENSOR__F(row_norm_bwd)(float *gx, const float *x, const float *g, const float *w, int64_t n, float mh, float ml, \
                                                   float rstd, bool center, double *gw, double *gb) {                 \
    TENSOR__VF vm = TENSOR__F(splat)(mh), vl = TENSOR__F(splat)(ml), vr = TENSOR__F(splat)(rstd);                     \
    TENSOR__VD s1v = TENSOR__F(splatd)(0.0), s2v = s1v;                                                               \
    int64_t i = 0, full = n - n % TENSOR__W;                                                                          \
    while (i < full) {                                                                                                \
        int64_t end = full - i > TENSOR__ROW_BLOCK ? i + TENSOR__ROW_BLOCK : full;                                    \
        TENSOR__VF a1 = TENSOR__F(splat)(0.0f), a2 = a1;                                                              \
        for (; i < end; i += TENSOR__W) {                                                                             \
            TENSOR__VF gv = TENSOR__F(load)(g + i), xh = ((TENSOR__F(load)(x + i) - vm) - vl) * vr;                   \
            TENSOR__VF gh = gv;                                                                                       \
            if (w) gh = gv * TENSOR__F(load)(w + i);                                                                  \
            a1 = a1 + gh;                                                                                             \
            a2 = TENSOR__FMA(gh, xh, a2);                                                                             \
            if (gw) TENSOR__F(rw_addh)(gw + i, gv * xh);                                                              \
            if (gb) TENSOR__F(rw_addh)(gb + i, gv);                                                                   \
        }                                                                                                             \
        s1v = TENSOR__F(rw_widen)(s1v, a1);                                                                           \
        s2v = TENSOR__F(rw_widen)(s2v, a2);                                                                           \
    }                                                                                                                 \
    if (i < n) { /* the last n % W: padding lanes masked off */                                                       \
        int64_t k = n - i;                                                                                            \
        TENSOR__VI first = TENSOR__F(rw_first)(k);                                                                    \
        TENSOR__VF zero = TENSOR__F(splat)(0.0f), gv = TENSOR__ROW_LOADN(g + i, k, 0.0f);                             \
        TENSOR__VF xh = ((TENSOR__ROW_LOADN(x + i, k, mh) - vm) - vl) * vr;                                           \
        TENSOR__VF gh = gv;                                                                                           \
        if (w) gh = gv * TENSOR__ROW_LOADN(w + i, k, 0.0f);                                                           \
        s1v = TENSOR__F(rw_widen)(s1v, gh);                                                                           \
        s2v = TENSOR__F(rw_widen)(s2v, TENSOR__SEL(first, gh * xh, zero));                                            \
        float f[TENSOR__W];                                                                                           \
        if (gw) {                                                                                                     \
            TENSOR__F(store)(f, gv * xh);                                                                             \
            for (int64_t j = 0; j < k; j++) gw[i + j] += (double)f[j];                                                \
        }                                                                                                             \
        if (gb)                                                                                                       \
            for (int64_t j = 0; j < k; j++) gb[i + j] += (double)g[i + j];                                            \
    }                                                                                                                 \
    double s1 = TENSOR__F(rw_hsumd)(s1v), s2 = TENSOR__F(rw_hsumd)(s2v);                                              \
    float f1 = center ? (float)(s1 / (double)n) : 0.0f, f2 = (float)(s2 / (double)n);                                 \
    TENSOR__VF m1 = TENSOR__F(splat)(f1), m2 = TENSOR__F(splat)(-f2);                                                 \
    for (i = 0; i + TENSOR__W <= n; i += TENSOR__W) {                                                                 \
        TENSOR__VF gv = TENSOR__F(load)(g + i), xh = ((TENSOR__F(load)(x + i) - vm) - vl) * vr;                       \
        TENSOR__VF gh = gv;                                                                                           \
        if (w) gh = gv * TENSOR__F(load)(w + i);                                                                      \
        TENSOR__F(store)(gx + i, vr * TENSOR__FMA(xh, m2, gh - m1));                                                  \
    }                                                                                                                 \
    if (i < n) {                                                                                                      \
        TENSOR__VF gv = TENSOR__ROW_LOADN(g + i, n - i, 0.0f), xh = ((TENSOR__ROW_LOADN(x + i, n - i, mh) - vm) - vl) * vr; \
        TENSOR__VF gh = gv;                                                                                           \
        if (w) gh = gv * TENSOR__ROW_LOADN(w + i, n - i, 0.0f);                                                       \
        TENSOR__ROW_STOREN(gx + i, vr * TENSOR__FMA(xh, m2, gh - m1), n - i);                                         \
    }                                                                                                                 \
}                                                                                                                     \
static void TENSOR__F(install_rows)(tensor__simd_isa *t) {                                                            \
    t->row_sum = TENSOR__F(row_sum);                                                                                  \
    t->row_sum_f64 = TENSOR__F(row_sum_f64);                                                                          \
    t->row_cols_add = TENSOR__F(row_cols_add);                                                                        \
    t->row_sqdev = TENSOR__F(row_sqdev);                                                                              \
    t->row_dot = TENSOR__F(row_dot);                                                                                  \
    t->row_max = TENSOR__F(row_max);                                                                                  \
    t->row_sumexp = TENSOR__F(row_sumexp);                                                                            \
    t->row_affine = TENSOR__F(row_affine);                                                                            \
    t->row_sub2 = TENSOR__F(row_sub2);                                                                                \
    t->row_smbwd = TENSOR__F(row_smbwd);                                                                              \
    t->row_fms = TENSOR__F(row_fms);                                                                                  \
    t->row_norm = TENSOR__F(row_norm);                                                                                \
    t->row_norm_bwd = TENSOR__F(row_norm_bwd);                                                                        \
}

/* ---- the random fills (create.h): Philox blocks and Box-Muller, both in stream order ---- */
static void tensor__rng_blocks_ref(uint32_t *out, int64_t n, const uint32_t key[2], uint64_t counter, uint32_t stream); /* >>rng */
/* Box-Muller for n pairs (n a multiple of 16): c[j] = r cos t, s[j] = r sin t, r = sqrt(-2 log u1[j]),
   t = 2 pi u2[j], u1 in (0, 1], u2 in [0, 1). In double to a few ulp, by series with exact
   coefficients (nothing fitted): log m = 2 atanh((m - 1) / (m + 1)) for m in [sqrt(1/2), sqrt(2)),
   and Taylor's sin and cos on r = 2 pi (u2 - k / 4), |r| <= pi / 4, the quarter turn k = rint(4 u2)
   taken exactly from u2. So an f32 randn rounds the same double value on every instance, except
   where a fused multiply-add tips a rounding (about one value in 2^26). */
#define TENSOR__SIMD_RNG                                                                                              \
static TENSOR__TARGET void TENSOR__F(rng_normal)(double *c, double *s, const double *u1, const double *u2, int64_t n) { \
    for (int64_t j = 0; j < n; j += TENSOR__DW) {                                                                     \
        TENSOR__VD x, f;                                                                                              \
        memcpy(&x, u1 + j, sizeof x);                                                                                 \
        memcpy(&f, u2 + j, sizeof f);                                                                                 \
        TENSOR__VL b = (TENSOR__VL)x;                                                                                 \
        TENSOR__VL e = ((b >> 52) & 0x7ff) - 1023;                                                                    \
        TENSOR__VD m = (TENSOR__VD)((b & 0xfffffffffffffLL) | 0x3ff0000000000000LL);                                   \
        TENSOR__VL big = (TENSOR__VL)(m > 1.4142135623730951);                                                        \
        m = TENSOR__SELD(big, m * 0.5, m);                                                                            \
        e = e - big; /* big is -1 where set */                                                                        \
        TENSOR__VD q = (m - 1.0) / (m + 1.0), z = q * q, p = TENSOR__F(splatd)(1.0 / 23);                             \
        p = TENSOR__HD(p, z, 1.0 / 21);                                                                               \
        p = TENSOR__HD(p, z, 1.0 / 19);                                                                               \
        p = TENSOR__HD(p, z, 1.0 / 17);                                                                               \
        p = TENSOR__HD(p, z, 1.0 / 15);                                                                               \
        p = TENSOR__HD(p, z, 1.0 / 13);                                                                               \
        p = TENSOR__HD(p, z, 1.0 / 11);                                                                               \
        p = TENSOR__HD(p, z, 1.0 / 9);                                                                                \
        p = TENSOR__HD(p, z, 1.0 / 7);                                                                                \
        p = TENSOR__HD(p, z, 1.0 / 5);                                                                                \
        p = TENSOR__HD(p, z, 1.0 / 3);                                                                                \
        TENSOR__VD ef = (TENSOR__VD)(e + 0x4338000000000000LL) - 6755399441055744.0;                                  \
        /* ln 2 in two parts: e times the first (32 bits) is exact */                                                 \
        TENSOR__VD lg = TENSOR__FMAD(ef, TENSOR__F(splatd)(6.93147180369123816490e-01),                               \
                                     TENSOR__FMAD(ef, TENSOR__F(splatd)(1.90821492927058770002e-10), 2.0 * q * TENSOR__HD(p, z, 1.0))); \
        TENSOR__VD r = TENSOR__SQRTD(-2.0 * lg);                                                                      \
        TENSOR__VD kf = (f * 4.0 + 6755399441055744.0) - 6755399441055744.0;                                          \
        TENSOR__VL k = (TENSOR__VL)(f * 4.0 + 6755399441055744.0) - 0x4338000000000000LL;                             \
        TENSOR__VD a = (f - kf * 0.25) * 6.283185307179586, a2 = a * a; /* f - kf / 4 is exact */                     \
        TENSOR__VD sp = TENSOR__F(splatd)(1.0 / 355687428096000.0), cp = TENSOR__F(splatd)(-1.0 / 6402373705728000.0); \
        sp = TENSOR__HD(sp, a2, -1.0 / 1307674368000.0);                                                              \
        cp = TENSOR__HD(cp, a2, 1.0 / 20922789888000.0);                                                              \
        sp = TENSOR__HD(sp, a2, 1.0 / 6227020800.0);                                                                  \
        cp = TENSOR__HD(cp, a2, -1.0 / 87178291200.0);                                                                \
        sp = TENSOR__HD(sp, a2, -1.0 / 39916800.0);                                                                   \
        cp = TENSOR__HD(cp, a2, 1.0 / 479001600.0);                                                                   \
        sp = TENSOR__HD(sp, a2, 1.0 / 362880.0);                                                                      \
        cp = TENSOR__HD(cp, a2, -1.0 / 3628800.0);                                                                    \
        sp = TENSOR__HD(sp, a2, -1.0 / 5040.0);                                                                       \
        cp = TENSOR__HD(cp, a2, 1.0 / 40320.0);                                                                       \
        sp = TENSOR__HD(sp, a2, 1.0 / 120.0);                                                                         \
        cp = TENSOR__HD(cp, a2, -1.0 / 720.0);                                                                        \
        sp = TENSOR__HD(sp, a2, -1.0 / 6.0);                                                                          \
        cp = TENSOR__HD(cp, a2, 1.0 / 24.0);                                                                          \
        TENSOR__VD sn = TENSOR__FMAD(a * a2, sp, a), cs = TENSOR__FMAD(a2 * a2, cp, 1.0 - 0.5 * a2);                  \
        /* t = a + k pi / 2: the quarter turn k swaps and negates sin and cos */                                      \
        TENSOR__VL odd = (TENSOR__VL)((k & 1) != 0);                                                                  \
        TENSOR__VD st = TENSOR__SELD(odd, cs, sn), ct = TENSOR__SELD(odd, sn, cs);                                    \
        st = TENSOR__SELD((TENSOR__VL)((k & 2) != 0), -st, st);                                                       \
        ct = TENSOR__SELD((TENSOR__VL)(((k + 1) & 2) != 0), -ct, ct);                                                 \
        TENSOR__VD oc = r * ct, os = r * st;                                                                          \
        memcpy(c + j, &oc, sizeof oc);                                                                                \
        memcpy(s + j, &os, sizeof os);                                                                                \
    }                                                                                                                 \
}                                                                                                                     \
/* Box-Muller in f32 on two Philox words, the f32 randn (create.h's tensor__rng_normal4_ref says       \
   what it computes): u1 = float((x >> 1) | 1) 2^-31 in (0, 1], the angle y 2^-32 of a turn;         \
   c = r cos t, s = r sin t, r = sqrt(-2 ln u1). The quarter turn k = rint(4 y 2^-32) comes off y      \
   exactly in integers, so Taylor's sin and cos (to a^9 and a^10: 2^-28 on |a| <= pi / 4) run on a     \
   small angle; each value is within a few ulp of the double computation. */                          \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET void TENSOR__F(box_muller)(TENSOR__VU x, TENSOR__VU y, TENSOR__VF *c, TENSOR__VF *s) { \
    TENSOR__VF u = __builtin_convertvector((TENSOR__VI)((x >> 1) | 1), TENSOR__VF) * 4.656612873e-10f; /* 2^-31 */    \
    TENSOR__VI b = (TENSOR__VI)((TENSOR__VU)u - 0x3f3504f3u); /* u = 2^e m, m in [sqrt(1/2), sqrt(2)) */         \
    TENSOR__VF m = (TENSOR__VF)((b & 0x007fffff) + 0x3f3504f3);                                                       \
    TENSOR__VF r = TENSOR__SQRT(-2.0f * TENSOR__F(log_tail)(b >> 23, m - 1.0f, TENSOR__F(splat)(0.0f)));            \
    TENSOR__VU k = (y + 0x20000000u) >> 30;                                                                           \
    TENSOR__VF a = __builtin_convertvector((TENSOR__VI)(y - (k << 30)), TENSOR__VF) * 1.462918079e-09f; /* 2 pi / 2^32 */ \
    TENSOR__VF a2 = a * a, sp = TENSOR__F(splat)(2.755731922e-06f), cp = TENSOR__F(splat)(-2.755731922e-07f);        \
    sp = TENSOR__H(sp, a2, -1.984126984e-04f);                                                                        \
    cp = TENSOR__H(cp, a2, 2.480158730e-05f);                                                                         \
    sp = TENSOR__H(sp, a2, 8.333333333e-03f);                                                                         \
    cp = TENSOR__H(cp, a2, -1.388888889e-03f);                                                                        \
    sp = TENSOR__H(sp, a2, -1.666666667e-01f);                                                                        \
    cp = TENSOR__H(cp, a2, 4.166666667e-02f);                                                                         \
    cp = TENSOR__H(cp, a2, -0.5f);                                                                                    \
    TENSOR__VF sn = TENSOR__FMA(a * a2, sp, a), cs = TENSOR__H(cp, a2, 1.0f);                                         \
    /* t = a + k pi / 2: an odd k swaps sin and cos, and the signs follow the quadrant */                             \
    TENSOR__VI odd = (TENSOR__VI)((k & 1) != 0);                                                                      \
    TENSOR__VF st = TENSOR__SEL(odd, cs, sn), ct = TENSOR__SEL(odd, sn, cs);                                          \
    st = (TENSOR__VF)((TENSOR__VU)st ^ ((k & 2) << 30));                                                              \
    ct = (TENSOR__VF)((TENSOR__VU)ct ^ (((k + 1) & 2) << 30));                                                        \
    *c = r * ct;                                                                                                      \
    *s = r * st;                                                                                                      \
}
#if TENSOR__SIMD_NEON
static TENSOR__UNUSED inline void tensor__store_blocks4(uint32_t *out, tensor__u32x4 c0, tensor__u32x4 c1, tensor__u32x4 c2, tensor__u32x4 c3) {
    for (int i = 0; i < 4; i++) { /* memcpy: out may hold floats (rng_normal4) */
        uint32_t w[4] = {c0[i], c1[i], c2[i], c3[i]};
        memcpy(out + 4 * i, w, sizeof w);
    }
}
#endif
/* Philox4x32-10 on TENSOR__W blocks at once, one a lane (the instances with 4 or more lanes;
   TENSOR__MULEV(a, b): the 64-bit products of the low halves of a's and b's 64-bit lanes;
   TENSOR__STORE_BLOCKS: the words into stream order; TENSOR__CLEAN: vzeroupper where needed). The
   words are those of tensor__philox_block, bit for bit, in stream order. */
#define TENSOR__SIMD_PHILOX                                                                                           \
typedef uint64_t TENSOR__F(vq) __attribute__((vector_size(TENSOR__W * 4)));                                          \
/* the 32-bit products a * m of every lane: their high and low halves */                                             \
static TENSOR__INLINE TENSOR__TARGET void TENSOR__F(mul32)(TENSOR__VU a, TENSOR__F(vq) m, TENSOR__VU *hi, TENSOR__VU *lo) { \
    TENSOR__F(vq) ev = TENSOR__MULEV((TENSOR__F(vq))a, m), od = TENSOR__MULEV((TENSOR__F(vq))a >> 32, m);           \
    *hi = (TENSOR__VU)((ev >> 32) | (od & 0xffffffff00000000ull));                                                    \
    *lo = (TENSOR__VU)((ev & 0xffffffffull) | (od << 32));                                                            \
}                                                                                                                     \
/* One Philox round on a group of lanes (c0..c3) with round keys k0, k1. */                             \
static TENSOR__INLINE TENSOR__TARGET void TENSOR__F(philox_round)(TENSOR__VU *c0, TENSOR__VU *c1, TENSOR__VU *c2, TENSOR__VU *c3, uint32_t k0, uint32_t k1) { \
    TENSOR__F(vq) zq = {0};                                                                                           \
    TENSOR__VU h0, l0, h1, l1;                                                                                        \
    TENSOR__F(mul32)(*c0, zq + 0xD2511F53u, &h0, &l0);                                                                \
    TENSOR__F(mul32)(*c2, zq + 0xCD9E8D57u, &h1, &l1);                                                                \
    *c0 = h1 ^ *c1 ^ k0;                                                                                              \
    *c2 = h0 ^ *c3 ^ k1;                                                                                              \
    *c1 = l1;                                                                                                         \
    *c3 = l0;                                                                                                         \
}                                                                                                                     \
/* The counters of the W blocks from `first`: low words in c0, high words (with the carry) in c1. */                  \
static TENSOR__INLINE TENSOR__TARGET void TENSOR__F(philox_counters)(uint64_t first, TENSOR__VU lane, TENSOR__VU *c0, TENSOR__VU *c1) { \
    TENSOR__VU zero = {0};                                                                                            \
    *c0 = lane + (uint32_t)first;                                                                                     \
    *c1 = (zero + (uint32_t)(first >> 32)) - (TENSOR__VU)(*c0 < (uint32_t)first);                                     \
}                                                                                                                     \
static TENSOR__TARGET void TENSOR__F(rng_blocks)(uint32_t *out, int64_t n, const uint32_t key[2], uint64_t counter, uint32_t stream) { \
    TENSOR__VU lane, zero = {0};                                                                                      \
    for (int i = 0; i < TENSOR__W; i++) lane[i] = (uint32_t)i;                                                        \
    int64_t b = 0;                                                                                                    \
    /* two groups of lanes side by side: independent chains, so one's multiplies fill the other's latency */         \
    for (; b + 2 * TENSOR__W <= n; b += 2 * TENSOR__W) {                                                              \
        TENSOR__VU a0, a1, a2 = zero + stream, a3 = zero, d0, d1, d2 = zero + stream, d3 = zero;                      \
        TENSOR__F(philox_counters)(counter + (uint64_t)b, lane, &a0, &a1);                                            \
        TENSOR__F(philox_counters)(counter + (uint64_t)(b + TENSOR__W), lane, &d0, &d1);                              \
        uint32_t k0 = key[0], k1 = key[1];                                                                            \
        for (int r = 0; r < 10; r++, k0 += 0x9E3779B9u, k1 += 0xBB67AE85u) {                                          \
            TENSOR__F(philox_round)(&a0, &a1, &a2, &a3, k0, k1);                                                      \
            TENSOR__F(philox_round)(&d0, &d1, &d2, &d3, k0, k1);                                                      \
        }                                                                                                             \
        TENSOR__STORE_BLOCKS(out + 4 * b, a0, a1, a2, a3); /* word q of lane i to out[4 i + q] */                    \
        TENSOR__STORE_BLOCKS(out + 4 * (b + TENSOR__W), d0, d1, d2, d3);                                              \
    }                                                                                                                 \
    for (; b + TENSOR__W <= n; b += TENSOR__W) {                                                                      \
        TENSOR__VU a0, a1, a2 = zero + stream, a3 = zero;                                                             \
        TENSOR__F(philox_counters)(counter + (uint64_t)b, lane, &a0, &a1);                                            \
        uint32_t k0 = key[0], k1 = key[1];                                                                            \
        for (int r = 0; r < 10; r++, k0 += 0x9E3779B9u, k1 += 0xBB67AE85u) TENSOR__F(philox_round)(&a0, &a1, &a2, &a3, k0, k1); \
        TENSOR__STORE_BLOCKS(out + 4 * b, a0, a1, a2, a3);                                                            \
    }                                                                                                                 \
    TENSOR__CLEAN(); /* gcc adds no vzeroupper before the scalar tail's calls */                                     \
    tensor__rng_blocks_ref(out + 4 * b, n - b, key, counter + (uint64_t)b, stream);                                   \
}                                                                                                                    \
/* n blocks of normal values: Philox in lanes, then Box-Muller on each block's words (0, 1) and                \
   (2, 3), the four values stored in stream order; a last part of W blocks goes through a buffer. */      \
static TENSOR__TARGET void TENSOR__F(rng_normal4)(float *out, int64_t n, const uint32_t key[2], uint64_t counter, uint32_t stream) { \
    TENSOR__VU lane, zero = {0};                                                                                      \
    for (int i = 0; i < TENSOR__W; i++) lane[i] = (uint32_t)i;                                                        \
    uint32_t part[4 * TENSOR__W];                                                                                     \
    for (int64_t b = 0; b < n; b += TENSOR__W) {                                                                      \
        TENSOR__VU a0, a1, a2 = zero + stream, a3 = zero;                                                             \
        TENSOR__F(philox_counters)(counter + (uint64_t)b, lane, &a0, &a1);                                            \
        uint32_t k0 = key[0], k1 = key[1];                                                                            \
        for (int r = 0; r < 10; r++, k0 += 0x9E3779B9u, k1 += 0xBB67AE85u) TENSOR__F(philox_round)(&a0, &a1, &a2, &a3, k0, k1); \
        TENSOR__VF c0, s0, c1, s1;                                                                                    \
        TENSOR__F(box_muller)(a0, a1, &c0, &s0);                                                                      \
        TENSOR__F(box_muller)(a2, a3, &c1, &s1);                                                                      \
        if (b + TENSOR__W <= n) {                                                                                     \
            TENSOR__STORE_BLOCKS((uint32_t *)(void *)(out + 4 * b), c0, s0, c1, s1);                                  \
            continue;                                                                                                 \
        }                                                                                                             \
        TENSOR__STORE_BLOCKS(part, c0, s0, c1, s1);                                                                   \
        memcpy(out + 4 * b, part, (size_t)(n - b) * 4 * sizeof(float));                                              \
    }                                                                                                                 \
    TENSOR__CLEAN();                                                                                                  \
}

/* ---- the instances ---- */
#define TENSOR__SEL_BITS(m, a, b) ((TENSOR__VF)(((TENSOR__VI)(m) & (TENSOR__VI)(a)) | (~(TENSOR__VI)(m) & (TENSOR__VI)(b))))
#define TENSOR__SELD_BITS(m, a, b) ((TENSOR__VD)(((TENSOR__VL)(m) & (TENSOR__VL)(a)) | (~(TENSOR__VL)(m) & (TENSOR__VL)(b))))

#if TENSOR__SIMD_SCALAR
/* scalar: one lane, plain C (the compiler may still fuse a * b + c where the target has FMA) */
static TENSOR__UNUSED inline tensor__f32x1 tensor__scalar_sqrt1(tensor__f32x1 a) { tensor__f32x1 r = {sqrtf(a[0])}; return r; }
static TENSOR__UNUSED inline tensor__f64x1 tensor__scalar_loadh(const float *p) { tensor__f64x1 r = {(double)p[0]}; return r; }
static TENSOR__UNUSED inline tensor__f64x1 tensor__scalar_sqrtd1(tensor__f64x1 a) { tensor__f64x1 r = {sqrt(a[0])}; return r; }
#ifdef TENSOR_USE_SLEEF
static inline tensor__f32x1 tensor__scalar_f1(float f) { tensor__f32x1 r = {f}; return r; }
#define TENSOR__SLEEF(fn, x) tensor__scalar_f1(Sleef_##fn##f_u10((x)[0]))
#endif
#define TENSOR__ISA tensor__scalar
#define TENSOR__TARGET
#define TENSOR__W 1
#define TENSOR__DW 1
#define TENSOR__VF tensor__f32x1
#define TENSOR__VI tensor__i32x1
#define TENSOR__VU tensor__u32x1
#define TENSOR__VD tensor__f64x1
#define TENSOR__VL tensor__i64x1
#define TENSOR__VB tensor__i8x1
#define TENSOR__FMA(a, b, c) ((a) * (b) + (c))
#define TENSOR__FMA_EXACT 0
#define TENSOR__FMAD(a, b, c) ((a) * (b) + (c))
#define TENSOR__SQRT(a) tensor__scalar_sqrt1(a)
#define TENSOR__SEL(m, a, b) TENSOR__SEL_BITS(m, a, b)
#define TENSOR__SELD(m, a, b) TENSOR__SELD_BITS(m, a, b)
#define TENSOR__MIN(a, b) TENSOR__SEL_BITS((a) < (b), a, b)
#define TENSOR__MAX(a, b) TENSOR__SEL_BITS((a) > (b), a, b)
#define TENSOR__ANY(m) ((m)[0] != 0)
#define TENSOR__LOADH(p) tensor__scalar_loadh(p)
#define TENSOR__STOREH(p, v) ((p)[0] = (float)(v)[0])
#define TENSOR__ANYD(m) ((m)[0] != 0)
TENSOR__SIMD_KERNELS
#define TENSOR__ROW_LOADN(p, k, fill) TENSOR__F(rw_part)(p, k, fill)
#define TENSOR__ROW_STOREN(p, v, k) TENSOR__F(rw_store_part)(p, v, k)
TENSOR__SIMD_ROWS
#undef TENSOR__ROW_LOADN
#undef TENSOR__ROW_STOREN
#define TENSOR__SQRTD(a) tensor__scalar_sqrtd1(a)
TENSOR__SIMD_RNG
#undef TENSOR__SQRTD
static void tensor__scalar_rng_normal4(float *out, int64_t n, const uint32_t key[2], uint64_t counter, uint32_t stream) {
    for (int64_t b = 0; b < n; b++) {
        uint32_t w[4];
        tensor__rng_blocks_ref(w, 1, key, counter + (uint64_t)b, stream);
        tensor__u32x1 x0 = {w[0]}, y0 = {w[1]}, x1 = {w[2]}, y1 = {w[3]};
        tensor__f32x1 c0, s0, c1, s1;
        tensor__scalar_box_muller(x0, y0, &c0, &s0);
        tensor__scalar_box_muller(x1, y1, &c1, &s1);
        out[4 * b] = c0[0], out[4 * b + 1] = s0[0], out[4 * b + 2] = c1[0], out[4 * b + 3] = s1[0];
    }
}
#undef TENSOR__ISA
#undef TENSOR__TARGET
#undef TENSOR__W
#undef TENSOR__DW
#undef TENSOR__VF
#undef TENSOR__VI
#undef TENSOR__VU
#undef TENSOR__VD
#undef TENSOR__VL
#undef TENSOR__VB
#undef TENSOR__FMA
#undef TENSOR__FMA_EXACT
#undef TENSOR__FMAD
#undef TENSOR__SQRT
#undef TENSOR__SEL
#undef TENSOR__SELD
#undef TENSOR__MIN
#undef TENSOR__MAX
#undef TENSOR__ANY
#undef TENSOR__LOADH
#undef TENSOR__STOREH
#undef TENSOR__ANYD
#undef TENSOR__SLEEF
#endif /* TENSOR__SIMD_SCALAR */

#if TENSOR__SIMD_X86
#ifdef TENSOR_USE_SLEEF
/* sleef.h declares the AVX2 and AVX-512 functions only when the translation unit is compiled for
   them: declared here under names of our own bound to SLEEF's symbols, so they cannot clash with
   sleef.h's declarations where it has them. */
#define TENSOR__SLEEF_STR2(s) #s
#define TENSOR__SLEEF_STR(s) TENSOR__SLEEF_STR2(s)
#define TENSOR__SLEEF_SYM(name) __asm__(TENSOR__SLEEF_STR(__USER_LABEL_PREFIX__) name)
#define TENSOR__SLEEF_DECLARE(fn)                                                                          \
    extern __attribute__((target("avx512f"))) __m512 tensor__sleef_##fn##16(__m512) TENSOR__SLEEF_SYM("Sleef_" #fn "f16_u10avx512f"); \
    extern __attribute__((target("avx2,fma"))) __m256 tensor__sleef_##fn##8(__m256) TENSOR__SLEEF_SYM("Sleef_" #fn "f8_u10avx2"); \
    extern __m128 tensor__sleef_##fn##4(__m128) TENSOR__SLEEF_SYM("Sleef_" #fn "f4_u10sse2");
TENSOR__SLEEF_DECLARE(exp)
TENSOR__SLEEF_DECLARE(log)
TENSOR__SLEEF_DECLARE(expm1)
TENSOR__SLEEF_DECLARE(log1p)
TENSOR__SLEEF_DECLARE(tanh)
TENSOR__SLEEF_DECLARE(sin)
TENSOR__SLEEF_DECLARE(cos)
TENSOR__SLEEF_DECLARE(erf)
#endif

/* Philox's words into stream order (TENSOR__STORE_BLOCKS): c0..c3 hold words 0..3 of one block a
   lane; out gets the blocks one after another. A 4 x 4 transpose of 32-bit words within each
   128-bit lane, then (AVX2, AVX-512) of the 128-bit lanes. */
#define TENSOR__TRANSPOSE4_EPI32(T, mm, c0, c1, c2, c3, r0, r1, r2, r3) do {                               \
        T t0_ = mm##_unpacklo_epi32(c0, c1), t1_ = mm##_unpackhi_epi32(c0, c1);                               \
        T t2_ = mm##_unpacklo_epi32(c2, c3), t3_ = mm##_unpackhi_epi32(c2, c3);                               \
        r0 = mm##_unpacklo_epi64(t0_, t2_);                                                                   \
        r1 = mm##_unpackhi_epi64(t0_, t2_);                                                                   \
        r2 = mm##_unpacklo_epi64(t1_, t3_);                                                                   \
        r3 = mm##_unpackhi_epi64(t1_, t3_);                                                                   \
    } while (0)
static TENSOR__UNUSED inline __attribute__((target("sse2"))) void tensor__sse2_store_blocks(uint32_t *out, __m128i c0, __m128i c1, __m128i c2, __m128i c3) {
    __m128i r0, r1, r2, r3;
    TENSOR__TRANSPOSE4_EPI32(__m128i, _mm, c0, c1, c2, c3, r0, r1, r2, r3);
    _mm_storeu_si128((__m128i *)(void *)out, r0);
    _mm_storeu_si128((__m128i *)(void *)(out + 4), r1);
    _mm_storeu_si128((__m128i *)(void *)(out + 8), r2);
    _mm_storeu_si128((__m128i *)(void *)(out + 12), r3);
}
static TENSOR__UNUSED inline __attribute__((target("avx2,fma"))) void tensor__avx2_store_blocks(uint32_t *out, __m256i c0, __m256i c1, __m256i c2, __m256i c3) {
    __m256i r0, r1, r2, r3; /* r0: blocks 0 and 4, r1: 1 and 5, ... */
    TENSOR__TRANSPOSE4_EPI32(__m256i, _mm256, c0, c1, c2, c3, r0, r1, r2, r3);
    _mm256_storeu_si256((__m256i *)(void *)out, _mm256_permute2x128_si256(r0, r1, 0x20));
    _mm256_storeu_si256((__m256i *)(void *)(out + 8), _mm256_permute2x128_si256(r2, r3, 0x20));
    _mm256_storeu_si256((__m256i *)(void *)(out + 16), _mm256_permute2x128_si256(r0, r1, 0x31));
    _mm256_storeu_si256((__m256i *)(void *)(out + 24), _mm256_permute2x128_si256(r2, r3, 0x31));
}
static TENSOR__UNUSED inline __attribute__((target("avx512f,avx2,fma"))) void tensor__avx512_store_blocks(uint32_t *out, __m512i c0, __m512i c1, __m512i c2, __m512i c3) {
    __m512i r0, r1, r2, r3; /* r0: blocks 0, 4, 8, 12; r1: 1, 5, 9, 13; ... */
    TENSOR__TRANSPOSE4_EPI32(__m512i, _mm512, c0, c1, c2, c3, r0, r1, r2, r3);
    __m512i a0 = _mm512_shuffle_i32x4(r0, r1, 0x44), a1 = _mm512_shuffle_i32x4(r2, r3, 0x44); /* lanes 0, 1 of each */
    __m512i a2 = _mm512_shuffle_i32x4(r0, r1, 0xee), a3 = _mm512_shuffle_i32x4(r2, r3, 0xee); /* lanes 2, 3 */
    _mm512_storeu_si512((void *)out, _mm512_shuffle_i32x4(a0, a1, 0x88));
    _mm512_storeu_si512((void *)(out + 16), _mm512_shuffle_i32x4(a0, a1, 0xdd));
    _mm512_storeu_si512((void *)(out + 32), _mm512_shuffle_i32x4(a2, a3, 0x88));
    _mm512_storeu_si512((void *)(out + 48), _mm512_shuffle_i32x4(a2, a3, 0xdd));
}

/* SSE2: 4 lanes (baseline on x86-64; the attribute matters on i386) */
static TENSOR__UNUSED inline __attribute__((target("sse2"))) __m128d tensor__sse2_loadh(const float *p) {
    double d;
    memcpy(&d, p, sizeof d); /* two floats, 4-byte aligned */
    return _mm_cvtps_pd(_mm_castpd_ps(_mm_set_sd(d)));
}
static TENSOR__UNUSED inline __attribute__((target("sse2"))) void tensor__sse2_storeh(float *p, __m128d v) {
    double d = _mm_cvtsd_f64(_mm_castps_pd(_mm_cvtpd_ps(v)));
    memcpy(p, &d, sizeof d);
}
#define TENSOR__ISA tensor__sse2
#define TENSOR__TARGET __attribute__((target("sse2")))
#define TENSOR__W 4
#define TENSOR__DW 2
#define TENSOR__VF __m128
#define TENSOR__VI tensor__i32x4
#define TENSOR__VU tensor__u32x4
#define TENSOR__VD __m128d
#define TENSOR__VL tensor__i64x2
#define TENSOR__VB tensor__i8x4
#define TENSOR__FMA(a, b, c) ((a) * (b) + (c))
#define TENSOR__FMA_EXACT 0
#define TENSOR__FMAD(a, b, c) ((a) * (b) + (c))
#define TENSOR__SQRT(a) _mm_sqrt_ps(a)
#define TENSOR__SEL(m, a, b) TENSOR__SEL_BITS(m, a, b)
#define TENSOR__SELD(m, a, b) TENSOR__SELD_BITS(m, a, b)
#define TENSOR__MIN(a, b) _mm_min_ps(a, b)
#define TENSOR__MAX(a, b) _mm_max_ps(a, b)
#define TENSOR__ANY(m) (_mm_movemask_ps((__m128)(m)) != 0)
#define TENSOR__LOADH(p) tensor__sse2_loadh(p)
#define TENSOR__STOREH(p, v) tensor__sse2_storeh(p, v)
#define TENSOR__ANYD(m) (_mm_movemask_pd((__m128d)(m)) != 0)
#define TENSOR__SLEEF(fn, x) tensor__sleef_##fn##4(x)
TENSOR__SIMD_KERNELS
#define TENSOR__ROW_LOADN(p, k, fill) TENSOR__F(rw_part)(p, k, fill)
#define TENSOR__ROW_STOREN(p, v, k) TENSOR__F(rw_store_part)(p, v, k)
TENSOR__SIMD_ROWS
#undef TENSOR__ROW_LOADN
#undef TENSOR__ROW_STOREN
#define TENSOR__SQRTD(a) _mm_sqrt_pd(a)
TENSOR__SIMD_RNG
#undef TENSOR__SQRTD
#define TENSOR__CLEAN() ((void)0)
#define TENSOR__STORE_BLOCKS(out, c0, c1, c2, c3) tensor__sse2_store_blocks(out, (__m128i)(c0), (__m128i)(c1), (__m128i)(c2), (__m128i)(c3))
#define TENSOR__MULEV(a, b) (TENSOR__F(vq))_mm_mul_epu32((__m128i)(a), (__m128i)(b))
TENSOR__SIMD_PHILOX
#undef TENSOR__MULEV
#undef TENSOR__STORE_BLOCKS
#undef TENSOR__CLEAN
#undef TENSOR__ISA
#undef TENSOR__TARGET
#undef TENSOR__W
#undef TENSOR__DW
#undef TENSOR__VF
#undef TENSOR__VI
#undef TENSOR__VU
#undef TENSOR__VD
#undef TENSOR__VL
#undef TENSOR__VB
#undef TENSOR__FMA
#undef TENSOR__FMA_EXACT
#undef TENSOR__FMAD
#undef TENSOR__SQRT
#undef TENSOR__SEL
#undef TENSOR__SELD
#undef TENSOR__MIN
#undef TENSOR__MAX
#undef TENSOR__ANY
#undef TENSOR__LOADH
#undef TENSOR__STOREH
#undef TENSOR__ANYD
#undef TENSOR__SLEEF

/* AVX2 + FMA: 8 lanes */
/* the first k < 8 floats, the other lanes `fill` / the store of the first k lanes (masked: no access past k) */
static TENSOR__UNUSED inline __attribute__((target("avx2,fma"))) __m256i tensor__avx2_first(int64_t k) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
static TENSOR__UNUSED inline __attribute__((target("avx2,fma"))) __m256 tensor__avx2_loadn(const float *p, int64_t k, float fill) {
    __m256i m = tensor__avx2_first(k);
    return _mm256_blendv_ps(_mm256_set1_ps(fill), _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m));
}
static TENSOR__UNUSED inline __attribute__((target("avx2,fma"))) void tensor__avx2_storen(float *p, __m256 v, int64_t k) {
    _mm256_maskstore_ps(p, tensor__avx2_first(k), v);
}
#define TENSOR__ISA tensor__avx2
#define TENSOR__TARGET __attribute__((target("avx2,fma")))
#define TENSOR__W 8
#define TENSOR__DW 4
#define TENSOR__VF __m256
#define TENSOR__VI tensor__i32x8
#define TENSOR__VU tensor__u32x8
#define TENSOR__VD __m256d
#define TENSOR__VL tensor__i64x4
#define TENSOR__VB tensor__i8x8
#define TENSOR__FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define TENSOR__FMA_EXACT 1
#define TENSOR__FMAD(a, b, c) _mm256_fmadd_pd(a, b, c)
#define TENSOR__SQRT(a) _mm256_sqrt_ps(a)
#define TENSOR__SEL(m, a, b) _mm256_blendv_ps(b, a, (__m256)(m))
#define TENSOR__SELD(m, a, b) _mm256_blendv_pd(b, a, (__m256d)(m))
#define TENSOR__MIN(a, b) _mm256_min_ps(a, b)
#define TENSOR__MAX(a, b) _mm256_max_ps(a, b)
#define TENSOR__ANY(m) (_mm256_movemask_ps((__m256)(m)) != 0)
#define TENSOR__LOADH(p) _mm256_cvtps_pd(_mm_loadu_ps(p))
#define TENSOR__STOREH(p, v) _mm_storeu_ps(p, _mm256_cvtpd_ps(v))
#define TENSOR__ANYD(m) (_mm256_movemask_pd((__m256d)(m)) != 0)
#define TENSOR__SLEEF(fn, x) tensor__sleef_##fn##8(x)
TENSOR__SIMD_KERNELS
#define TENSOR__ROW_LOADN(p, k, fill) tensor__avx2_loadn(p, k, fill)
#define TENSOR__ROW_STOREN(p, v, k) tensor__avx2_storen(p, v, k)
TENSOR__SIMD_ROWS
#undef TENSOR__ROW_LOADN
#undef TENSOR__ROW_STOREN
#define TENSOR__SQRTD(a) _mm256_sqrt_pd(a)
TENSOR__SIMD_RNG
#undef TENSOR__SQRTD
#define TENSOR__CLEAN() _mm256_zeroupper()
#define TENSOR__STORE_BLOCKS(out, c0, c1, c2, c3) tensor__avx2_store_blocks(out, (__m256i)(c0), (__m256i)(c1), (__m256i)(c2), (__m256i)(c3))
#define TENSOR__MULEV(a, b) (TENSOR__F(vq))_mm256_mul_epu32((__m256i)(a), (__m256i)(b))
TENSOR__SIMD_PHILOX
#undef TENSOR__MULEV
#undef TENSOR__STORE_BLOCKS
#undef TENSOR__CLEAN
#undef TENSOR__ISA
#undef TENSOR__TARGET
#undef TENSOR__W
#undef TENSOR__DW
#undef TENSOR__VF
#undef TENSOR__VI
#undef TENSOR__VU
#undef TENSOR__VD
#undef TENSOR__VL
#undef TENSOR__VB
#undef TENSOR__FMA
#undef TENSOR__FMA_EXACT
#undef TENSOR__FMAD
#undef TENSOR__SQRT
#undef TENSOR__SEL
#undef TENSOR__SELD
#undef TENSOR__MIN
#undef TENSOR__MAX
#undef TENSOR__ANY
#undef TENSOR__LOADH
#undef TENSOR__STOREH
#undef TENSOR__ANYD
#undef TENSOR__SLEEF

/* AVX-512F: 16 lanes. (Generic conversions instead of _mm512_cvtps_pd and the masked forms of min,
   max and sqrt: at -O2, GCC 12's C++ front end warns about the undefined vector inside the plain
   intrinsics, -Wmaybe-uninitialized.) */
static TENSOR__UNUSED inline __attribute__((target("avx512f,avx2,fma"))) __m512d tensor__avx512_loadh(const float *p) {
    /* the zero-masked form: one vcvtps2pd zmm (GCC splits __builtin_convertvector to 256 bits) */
    return _mm512_maskz_cvtps_pd((__mmask8)-1, _mm256_loadu_ps(p));
}
static TENSOR__UNUSED inline __attribute__((target("avx512f,avx2,fma"))) void tensor__avx512_storeh(float *p, __m512d v) {
    __m256 f = __builtin_convertvector(v, __m256);
    memcpy(p, &f, sizeof f);
}
/* the first k < 16 floats, the other lanes `fill` / the store of the first k lanes (masked: no access past k) */
static TENSOR__UNUSED inline __attribute__((target("avx512f,avx2,fma"))) __m512 tensor__avx512_loadn(const float *p, int64_t k, float fill) {
    return _mm512_mask_loadu_ps(_mm512_set1_ps(fill), (__mmask16)((1u << k) - 1), p);
}
static TENSOR__UNUSED inline __attribute__((target("avx512f,avx2,fma"))) void tensor__avx512_storen(float *p, __m512 v, int64_t k) {
    _mm512_mask_storeu_ps(p, (__mmask16)((1u << k) - 1), v);
}
#define TENSOR__ISA tensor__avx512
#define TENSOR__TARGET __attribute__((target("avx512f,avx2,fma")))
#define TENSOR__W 16
#define TENSOR__DW 8
#define TENSOR__VF __m512
#define TENSOR__VI tensor__i32x16
#define TENSOR__VU tensor__u32x16
#define TENSOR__VD __m512d
#define TENSOR__VL tensor__i64x8
#define TENSOR__VB tensor__i8x16
#define TENSOR__FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define TENSOR__FMA_EXACT 1
#define TENSOR__FMAD(a, b, c) _mm512_fmadd_pd(a, b, c)
#define TENSOR__SQRT(a) _mm512_mask_sqrt_ps(a, (__mmask16)-1, a)
#define TENSOR__SEL(m, a, b) TENSOR__SEL_BITS(m, a, b)
#define TENSOR__SELD(m, a, b) TENSOR__SELD_BITS(m, a, b)
#define TENSOR__MIN(a, b) _mm512_mask_min_ps(b, (__mmask16)-1, a, b)
#define TENSOR__MAX(a, b) _mm512_mask_max_ps(b, (__mmask16)-1, a, b)
#define TENSOR__ANY(m) (_mm512_test_epi32_mask((__m512i)(m), (__m512i)(m)) != 0)
#define TENSOR__LOADH(p) tensor__avx512_loadh(p)
#define TENSOR__STOREH(p, v) tensor__avx512_storeh(p, v)
#define TENSOR__ANYD(m) (_mm512_test_epi64_mask((__m512i)(m), (__m512i)(m)) != 0)
#define TENSOR__SLEEF(fn, x) tensor__sleef_##fn##16(x)
TENSOR__SIMD_KERNELS
#define TENSOR__ROW_LOADN(p, k, fill) tensor__avx512_loadn(p, k, fill)
#define TENSOR__ROW_STOREN(p, v, k) tensor__avx512_storen(p, v, k)
TENSOR__SIMD_ROWS
#undef TENSOR__ROW_LOADN
#undef TENSOR__ROW_STOREN
#define TENSOR__SQRTD(a) _mm512_mask_sqrt_pd(a, (__mmask8)-1, a)
TENSOR__SIMD_RNG
#undef TENSOR__SQRTD
#define TENSOR__CLEAN() _mm256_zeroupper()
#define TENSOR__STORE_BLOCKS(out, c0, c1, c2, c3) tensor__avx512_store_blocks(out, (__m512i)(c0), (__m512i)(c1), (__m512i)(c2), (__m512i)(c3))
#define TENSOR__MULEV(a, b) (TENSOR__F(vq))_mm512_mul_epu32((__m512i)(a), (__m512i)(b))
TENSOR__SIMD_PHILOX
#undef TENSOR__MULEV
#undef TENSOR__STORE_BLOCKS
#undef TENSOR__CLEAN
#undef TENSOR__ISA
#undef TENSOR__TARGET
#undef TENSOR__W
#undef TENSOR__DW
#undef TENSOR__VF
#undef TENSOR__VI
#undef TENSOR__VU
#undef TENSOR__VD
#undef TENSOR__VL
#undef TENSOR__VB
#undef TENSOR__FMA
#undef TENSOR__FMA_EXACT
#undef TENSOR__FMAD
#undef TENSOR__SQRT
#undef TENSOR__SEL
#undef TENSOR__SELD
#undef TENSOR__MIN
#undef TENSOR__MAX
#undef TENSOR__ANY
#undef TENSOR__LOADH
#undef TENSOR__STOREH
#undef TENSOR__ANYD
#undef TENSOR__SLEEF
#endif /* TENSOR__SIMD_X86 */

#if TENSOR__SIMD_NEON
/* NEON (aarch64): 4 lanes */
#define TENSOR__ISA tensor__neon
#define TENSOR__TARGET
#define TENSOR__W 4
#define TENSOR__DW 2
#define TENSOR__VF float32x4_t
#define TENSOR__VI tensor__i32x4
#define TENSOR__VU tensor__u32x4
#define TENSOR__VD float64x2_t
#define TENSOR__VL tensor__i64x2
#define TENSOR__VB tensor__i8x4
#define TENSOR__FMA(a, b, c) vfmaq_f32(c, a, b)
#define TENSOR__FMA_EXACT 1
#define TENSOR__FMAD(a, b, c) vfmaq_f64(c, a, b)
#define TENSOR__SQRT(a) vsqrtq_f32(a)
#define TENSOR__SEL(m, a, b) vbslq_f32((uint32x4_t)(m), a, b)
#define TENSOR__SELD(m, a, b) vbslq_f64((uint64x2_t)(m), a, b)
#define TENSOR__MIN(a, b) vminnmq_f32(a, b)
#define TENSOR__MAX(a, b) vmaxnmq_f32(a, b)
#define TENSOR__ANY(m) (vmaxvq_u32((uint32x4_t)(m)) != 0)
#define TENSOR__LOADH(p) vcvt_f64_f32(vld1_f32(p))
#define TENSOR__STOREH(p, v) vst1_f32(p, vcvt_f32_f64(v))
#define TENSOR__ANYD(m) (vmaxvq_u32((uint32x4_t)(m)) != 0)
#define TENSOR__SLEEF(fn, x) Sleef_##fn##f4_u10(x)
TENSOR__SIMD_KERNELS
#define TENSOR__ROW_LOADN(p, k, fill) TENSOR__F(rw_part)(p, k, fill)
#define TENSOR__ROW_STOREN(p, v, k) TENSOR__F(rw_store_part)(p, v, k)
TENSOR__SIMD_ROWS
#undef TENSOR__ROW_LOADN
#undef TENSOR__ROW_STOREN
#define TENSOR__SQRTD(a) vsqrtq_f64(a)
TENSOR__SIMD_RNG
#undef TENSOR__SQRTD
#define TENSOR__CLEAN() ((void)0)
#define TENSOR__STORE_BLOCKS(out, c0, c1, c2, c3) tensor__store_blocks4(out, (tensor__u32x4)(c0), (tensor__u32x4)(c1), (tensor__u32x4)(c2), (tensor__u32x4)(c3))
#define TENSOR__MULEV(a, b) (TENSOR__F(vq))vmull_u32(vmovn_u64((uint64x2_t)(a)), vmovn_u64((uint64x2_t)(b)))
TENSOR__SIMD_PHILOX
#undef TENSOR__MULEV
#undef TENSOR__STORE_BLOCKS
#undef TENSOR__CLEAN
#undef TENSOR__ISA
#undef TENSOR__TARGET
#undef TENSOR__W
#undef TENSOR__DW
#undef TENSOR__VF
#undef TENSOR__VI
#undef TENSOR__VU
#undef TENSOR__VD
#undef TENSOR__VL
#undef TENSOR__VB
#undef TENSOR__FMA
#undef TENSOR__FMA_EXACT
#undef TENSOR__FMAD
#undef TENSOR__SQRT
#undef TENSOR__SEL
#undef TENSOR__SELD
#undef TENSOR__MIN
#undef TENSOR__MAX
#undef TENSOR__ANY
#undef TENSOR__LOADH
#undef TENSOR__STOREH
#undef TENSOR__ANYD
#undef TENSOR__SLEEF
#endif /* TENSOR__SIMD_NEON */

/* Picks the instance: the first the CPU runs, best first, unless TENSOR_SIMD names another it
   runs; "scalar" where none is compiled (x86-64) gives the lowest there is, sse2. */
typedef struct {
    const char *key, *name;
    bool ok;
    void (*install)(tensor__simd_isa *), (*install_rows)(tensor__simd_isa *);
    void (*rng_blocks)(uint32_t *, int64_t, const uint32_t *, uint64_t, uint32_t);
    void (*rng_normal)(double *, double *, const double *, const double *, int64_t);
    void (*rng_normal4)(float *, int64_t, const uint32_t *, uint64_t, uint32_t);
} tensor__simd_candidate;
static void tensor__simd_choose(tensor__simd_isa *t) {
    tensor__simd_candidate c[4];
    int n = 0;
#if TENSOR__SIMD_X86
    __builtin_cpu_init();
    bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    c[n].key = "avx512"; c[n].name = "avx512f"; c[n].ok = avx2 && __builtin_cpu_supports("avx512f"); c[n].install = tensor__avx512_install; c[n].install_rows = tensor__avx512_install_rows;
    c[n].rng_blocks = tensor__avx512_rng_blocks; c[n].rng_normal = tensor__avx512_rng_normal;
    c[n].rng_normal4 = tensor__avx512_rng_normal4; n++;
    c[n].key = "avx2"; c[n].name = "avx2+fma"; c[n].ok = avx2; c[n].install = tensor__avx2_install; c[n].install_rows = tensor__avx2_install_rows;
    c[n].rng_blocks = tensor__avx2_rng_blocks; c[n].rng_normal = tensor__avx2_rng_normal;
    c[n].rng_normal4 = tensor__avx2_rng_normal4; n++;
    c[n].key = "sse2"; c[n].name = "sse2"; c[n].ok = __builtin_cpu_supports("sse2"); c[n].install = tensor__sse2_install; c[n].install_rows = tensor__sse2_install_rows;
    c[n].rng_blocks = tensor__sse2_rng_blocks; c[n].rng_normal = tensor__sse2_rng_normal;
    c[n].rng_normal4 = tensor__sse2_rng_normal4; n++;
#endif
#if TENSOR__SIMD_NEON
    c[n].key = "neon"; c[n].name = "neon"; c[n].ok = true; c[n].install = tensor__neon_install; c[n].install_rows = tensor__neon_install_rows;
    c[n].rng_blocks = tensor__neon_rng_blocks; c[n].rng_normal = tensor__neon_rng_normal;
    c[n].rng_normal4 = tensor__neon_rng_normal4; n++;
#endif
#if TENSOR__SIMD_SCALAR
    c[n].key = "scalar"; c[n].name = "scalar"; c[n].ok = true; c[n].install = tensor__scalar_install; c[n].install_rows = tensor__scalar_install_rows;
    c[n].rng_blocks = tensor__rng_blocks_ref; c[n].rng_normal = tensor__scalar_rng_normal;
    c[n].rng_normal4 = tensor__scalar_rng_normal4; n++;
#endif
    const char *want = getenv("TENSOR_SIMD");
    int pick = -1;
    for (int i = 0; i < n && want; i++) if (c[i].ok && strcmp(want, c[i].key) == 0) pick = i;
    if (pick < 0 && want && !TENSOR__SIMD_SCALAR && strcmp(want, "scalar") == 0) pick = n - 1;
    for (int i = 0; i < n && pick < 0; i++) if (c[i].ok) pick = i;
    t->name = c[pick].name;
#if TENSOR__SIMD_X86
    unsigned r1[4] = {0, 0, 0, 0};
    __asm__("cpuid" : "=a"(r1[0]), "=b"(r1[1]), "=c"(r1[2]), "=d"(r1[3]) : "a"(1), "c"(0)); /* leaf 1: ecx bit 29 is F16C */
    t->f16c = pick <= 1 && (r1[2] >> 29 & 1);
    /* the bf16 kernel's packing and im2col use avx512bw/vl too (every avx512_bf16 CPU so far has them) */
    t->bf16dot = pick == 0 && __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
#endif
    c[pick].install(t);
    c[pick].install_rows(t);
    t->rng_blocks = c[pick].rng_blocks;
    t->rng_normal = c[pick].rng_normal;
    t->rng_normal4 = c[pick].rng_normal4;
}
#endif /* TENSOR__SIMD */

/* The chosen instance (chosen on first use; threads that race here wait for the first), or NULL
   where there is none. The check is inline: row primitives run on rows as short as 10 floats,
   where an out-of-line call per row showed in their time. */
#if TENSOR__SIMD
static tensor__simd_isa tensor__simd_table;
static int tensor__simd_state; /* 0: not chosen, 1: being chosen, 2: chosen */
static const tensor__simd_isa *tensor__simd_first_use(void) {
    int expected = 0;
    if (__atomic_compare_exchange_n(&tensor__simd_state, &expected, 1, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        tensor__simd_choose(&tensor__simd_table);
        __atomic_store_n(&tensor__simd_state, 2, __ATOMIC_RELEASE);
    }
    while (__atomic_load_n(&tensor__simd_state, __ATOMIC_ACQUIRE) != 2) {
    }
    return &tensor__simd_table;
}
static inline const tensor__simd_isa *tensor__simd(void) {
    if (__atomic_load_n(&tensor__simd_state, __ATOMIC_ACQUIRE) == 2) return &tensor__simd_table;
    return tensor__simd_first_use();
}
#else
static inline const tensor__simd_isa *tensor__simd(void) { return NULL; }
#endif

/* ---- f32 row primitives (>>rowsimd) ----
   The contiguous f32 loops that the fast paths of the reductions, softmax, cross_entropy and the
   norms share, written once above (TENSOR__SIMD_ROWS) and compiled for each instance; these entry
   points call the chosen instance, or the plain loops below where there is none (compilers
   without vector extensions). The public sum and mean accumulate each element in double; the sums
   inside softmax, cross_entropy and the norms in f32 lanes over blocks of 256 elements and then
   in double (simd.h says more). tensor_set_reference_kernels(true) skips all of it: the callers
   take their reference paths. */
static double tensor__sum_f32(const float *x, int64_t n);
static double tensor__row_sum_f32(const float *x, int64_t n) {
    const tensor__simd_isa *v = tensor__simd();
    return v ? v->row_sum(x, n) : tensor__sum_f32(x, n);
}
static double tensor__row_sqdev_f32(const float *x, int64_t n, float m) {
    const tensor__simd_isa *v = tensor__simd();
    if (v) return v->row_sqdev(x, n, m);
    double acc = 0;
    for (int64_t i = 0; i < n; i++) { float d = x[i] - m; acc += (double)(d * d); }
    return acc;
}
static double tensor__row_dot_f32(const float *a, const float *b, int64_t n) {
    const tensor__simd_isa *v = tensor__simd();
    if (v) return v->row_dot(a, b, n);
    double acc = 0;
    for (int64_t i = 0; i < n; i++) acc += (double)(a[i] * b[i]);
    return acc;
}
static float tensor__row_max_f32(const float *x, int64_t n) {
    const tensor__simd_isa *v = tensor__simd();
    if (v) return v->row_max(x, n);
    float m = -INFINITY;
    for (int64_t i = 0; i < n; i++) m = x[i] > m ? x[i] : m;
    return m;
}
static double tensor__row_sumexp_f32(float *y, const float *x, int64_t n, float m) {
    const tensor__simd_isa *v = tensor__simd();
    if (v) return v->row_sumexp(y, x, n, m);
    double acc = 0;
    for (int64_t i = 0; i < n; i++) {
        float e = expf(x[i] - m);
        if (y) y[i] = e;
        acc += e;
    }
    return acc;
}
static void tensor__row_affine_f32(float *y, const float *x, int64_t n, float s, float t) {
    const tensor__simd_isa *v = tensor__simd();
    if (v) { v->row_affine(y, x, n, s, t); return; }
    for (int64_t i = 0; i < n; i++) y[i] = x[i] * s + t;
}
static void tensor__row_sub2_f32(float *y, const float *x, int64_t n, float a, float b) {
    const tensor__simd_isa *v = tensor__simd();
    if (v) { v->row_sub2(y, x, n, a, b); return; }
    for (int64_t i = 0; i < n; i++) y[i] = (x[i] - a) - b;
}
static void tensor__row_smbwd_f32(float *y, const float *g, int64_t n, float s, float d) {
    const tensor__simd_isa *v = tensor__simd();
    if (v) { v->row_smbwd(y, g, n, s, d); return; }
    for (int64_t i = 0; i < n; i++) y[i] = (y[i] * s) * (g[i] - d);
}
static void tensor__row_fms_f32(float *y, const float *g, int64_t n, float c) {
    const tensor__simd_isa *v = tensor__simd();
    if (v) { v->row_fms(y, g, n, c); return; }
    for (int64_t i = 0; i < n; i++) y[i] = g[i] - y[i] * c;
}
/* y = (x - mean) * rstd * w + b, w and b optional (the norms' forward). The mean goes in as
   mh + ml (its f32 rounding and the rest): x - mh is exact for x near the mean, so rows with a
   large mean and a small spread keep their accuracy. */
static void tensor__row_norm_f32(float *y, const float *x, int64_t n, double mean, float rstd, const float *w, const float *b) {
    float mh = (float)mean, ml = (float)(mean - mh);
    const tensor__simd_isa *v = tensor__simd();
    if (v) { v->row_norm(y, x, n, mh, ml, rstd, w, b); return; }
    for (int64_t i = 0; i < n; i++) {
        float r = ((x[i] - mh) - ml) * rstd;
        if (w) r *= w[i];
        if (b) r += b[i];
        y[i] = r;
    }
}
/* The norms' backward for one row: xhat = (x - mean) rstd, gh = g w;
   gx = rstd (gh - [center] mean(gh) - xhat mean(gh xhat)); gw += g xhat and gb += g (in double,
   when not NULL). rms_norm is the case center = false, mean = 0. */
static void tensor__row_norm_bwd_f32(float *gx, const float *x, const float *g, const float *w, int64_t n, double mean, float rstd,
                                     bool center, double *gw, double *gb) {
    float mh = (float)mean, ml = (float)(mean - mh);
    const tensor__simd_isa *v = tensor__simd();
    if (v) { v->row_norm_bwd(gx, x, g, w, n, mh, ml, rstd, center, gw, gb); return; }
    double s1 = 0, s2 = 0;
    for (int64_t i = 0; i < n; i++) {
        float xh = ((x[i] - mh) - ml) * rstd, gh = w ? g[i] * w[i] : g[i];
        s1 += gh;
        s2 += (double)gh * xh;
        if (gw) gw[i] += (double)(g[i] * xh);
        if (gb) gb[i] += g[i];
    }
    float f1 = center ? (float)(s1 / (double)n) : 0.0f, f2 = (float)(s2 / (double)n);
    for (int64_t i = 0; i < n; i++) {
        float xh = ((x[i] - mh) - ml) * rstd, gh = w ? g[i] * w[i] : g[i];
        gx[i] = rstd * ((gh - f1) - xh * f2);
    }
}

/* max and sum of e^(x - max) of a contiguous f32 row (the max in *mx); NaN for rows the fast path
   cannot take (a NaN, or an infinite max), which callers then compute on their reference path.
   When y is not NULL it receives e^(x - max). */
static double tensor__row_maxsumexp_f32(float *y, const float *x, int64_t n, float *mx) {
    const tensor__simd_isa *v = tensor__simd(); /* looked up once: rows may be short */
    float m = v ? v->row_max(x, n) : tensor__row_max_f32(x, n);
    *mx = m;
    if (isinf(m) || m != m) return NAN;
    double s = v ? v->row_sumexp(y, x, n, m) : tensor__row_sumexp_f32(y, x, n, m);
    return s == s ? s : NAN;
}

/* Contiguous rows of f16 / bf16 <-> f32 (the dtype casts, the GEMM's packing and its f32 results
   written back, the elementwise ops' bf16/f16 rows): 16 lanes where the SIMD layer chose avx512, F16C
   and AVX2 where it chose avx2, else the scalar conversions of >>core, with the same results (round
   to nearest even; a NaN stays a NaN). */
#if TENSOR__SIMD_X86
#define TENSOR__CVT_TARGET __attribute__((target("avx2,fma,f16c")))
TENSOR__CVT_TARGET static void tensor__half_to_f32_avx2(float *d, const uint16_t *s, int64_t n, bool bf16) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        __m256 f = bf16 ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)) : _mm256_cvtph_ps(h);
        _mm256_storeu_ps(d + i, f);
    }
    for (; i < n; i++) d[i] = bf16 ? tensor__bf16_to_f32(s[i]) : tensor__f16_to_f32(s[i]);
}
TENSOR__CVT_TARGET static void tensor__f32_to_half_avx2(uint16_t *d, const float *s, int64_t n, bool bf16) {
    int64_t i = 0;
    const __m256i one = _mm256_set1_epi32(1), half = _mm256_set1_epi32(0x7fff), abs = _mm256_set1_epi32(0x7fffffff);
    const __m256i inf = _mm256_set1_epi32(0x7f800000), quiet = _mm256_set1_epi32(0x40);
    for (; i + 8 <= n; i += 8) {
        __m128i h;
        if (bf16) { /* u + 0x7fff + (bit 16 of u), high half; a NaN keeps its high half, quieted */
            __m256i u = _mm256_loadu_si256((const __m256i *)(const void *)(s + i)), hi = _mm256_srli_epi32(u, 16);
            __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(half, _mm256_and_si256(hi, one))), 16);
            r = _mm256_blendv_epi8(r, _mm256_or_si256(hi, quiet), _mm256_cmpgt_epi32(_mm256_and_si256(u, abs), inf));
            h = _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1)); /* (each lane <= 0xffff) */
        } else {
            h = _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT);
        }
        _mm_storeu_si128((__m128i *)(void *)(d + i), h);
    }
    for (; i < n; i++) d[i] = bf16 ? tensor__f32_to_bf16(s[i]) : tensor__f32_to_f16(s[i]);
}
/* AVX-512F has both f16 conversions and 16 lanes; its tails go to the 8-lane rows above */
#define TENSOR__CVT512_TARGET __attribute__((target("avx512f,avx2,fma,f16c")))
TENSOR__CVT512_TARGET static void tensor__half_to_f32_avx512(float *d, const uint16_t *s, int64_t n, bool bf16) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i h = _mm256_loadu_si256((const __m256i *)(const void *)(s + i));
        __m512 f = bf16 ? _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)) : _mm512_cvtph_ps(h);
        _mm512_storeu_ps(d + i, f);
    }
    tensor__half_to_f32_avx2(d + i, s + i, n - i, bf16);
}
TENSOR__CVT512_TARGET static void tensor__f32_to_half_avx512(uint16_t *d, const float *s, int64_t n, bool bf16) {
    int64_t i = 0;
    const __m512i one = _mm512_set1_epi32(1), half = _mm512_set1_epi32(0x7fff), abs = _mm512_set1_epi32(0x7fffffff);
    const __m512i inf = _mm512_set1_epi32(0x7f800000), quiet = _mm512_set1_epi32(0x40);
    for (; i + 16 <= n; i += 16) {
        __m256i h;
        if (bf16) { /* as the 8-lane row: u + 0x7fff + (bit 16 of u), high half; a NaN quieted */
            __m512i u = _mm512_loadu_si512((const void *)(s + i)), hi = _mm512_srli_epi32(u, 16);
            __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(half, _mm512_and_si512(hi, one))), 16);
            r = _mm512_mask_mov_epi32(r, _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, abs), inf), _mm512_or_si512(hi, quiet));
            h = _mm512_cvtepi32_epi16(r);
        } else {
            h = _mm512_cvtps_ph(_mm512_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT);
        }
        _mm256_storeu_si256((__m256i *)(void *)(d + i), h);
    }
    tensor__f32_to_half_avx2(d + i, s + i, n - i, bf16);
}
#endif
static void tensor__half_to_f32(float *d, const uint16_t *s, int64_t n, bool bf16) {
#if TENSOR__SIMD_X86
    const tensor__simd_isa *v = tensor__simd();
    if (v && v->f16c && v->width == 16) { tensor__half_to_f32_avx512(d, s, n, bf16); return; }
    if (v && v->f16c) { tensor__half_to_f32_avx2(d, s, n, bf16); return; }
#endif
    for (int64_t i = 0; i < n; i++) d[i] = bf16 ? tensor__bf16_to_f32(s[i]) : tensor__f16_to_f32(s[i]);
}
static void tensor__f32_to_half(uint16_t *d, const float *s, int64_t n, bool bf16) {
#if TENSOR__SIMD_X86
    const tensor__simd_isa *v = tensor__simd();
    if (v && v->f16c && v->width == 16) { tensor__f32_to_half_avx512(d, s, n, bf16); return; }
    if (v && v->f16c) { tensor__f32_to_half_avx2(d, s, n, bf16); return; }
#endif
    for (int64_t i = 0; i < n; i++) d[i] = bf16 ? tensor__f32_to_bf16(s[i]) : tensor__f32_to_f16(s[i]);
}
