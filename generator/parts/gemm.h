// >>gemm ---------------------------------------------------------------------------------------
/* Dense f32 and f64 GEMM with the BLIS/OpenBLAS structure:

       C[m, n] = (add ? C : 0) + A[m, k] @ B[k, n]

   A and B are read through element strides (element (i, p) of A at A[i * a_rs + p * a_cs]), so
   every transposition case is a stride pattern and nothing is copied except into the packed
   panels; C is written through strides too (c_rs, c_cs). The loops, outermost first:
     jc: NC columns of B at a time;
     pc: KC of the k dim at a time; B[pc.., jc..] is packed into NR-column panels (KC x NR each,
         p-major), a KC x NC block that stays in L2/L3;
     ic: MC rows of A at a time; A[ic.., pc..] is packed into MR-row panels (MR x KC each), an
         MC x KC block that stays in L2;
     jr: one B panel (KC x NR) at a time, which stays in L1 while
     ir: every A panel of the block streams past it through the micro-kernel, which keeps one
         MR x NR tile of C in registers for the whole KC loop and then adds it to C.
   Packing pads the last panels with zeros, so the micro-kernel always computes a full tile; a
   partial tile at the edge of C goes through a small buffer. Micro-kernels: 6 x 16 f32 and 6 x 8
   f64 for AVX2+FMA (12 accumulators of 8 floats / 4 doubles, two loads of B and six broadcasts of
   A per k step), compiled with __attribute__((target)) and chosen at run time from CPUID; a
   portable scalar kernel of the same tile shape otherwise (or when TENSOR_NO_SIMD is defined).
   Threads: the N (or M) range is cut into one slice per thread, in whole panels, and each
   thread runs the loops above on its slice with its own packing buffers, so the threads never
   wait on each other; the operand that is not split is packed by each thread (a cost of order
   k * (m or n) against m * n * k / threads multiply-adds). Problems below TENSOR__GEMM_PAR_MIN
   multiply-adds stay on the calling thread. */

#if !defined(TENSOR_NO_SIMD) && (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define TENSOR__GEMM_AVX2 1
#ifdef __cplusplus
}
#endif
#include <immintrin.h>
#ifdef __cplusplus
extern "C" {
#endif
#else
#define TENSOR__GEMM_AVX2 0
#endif

/* Tile and block sizes for this machine's caches (L1d 32 KiB, L2 1 MiB per core, L3 32 MiB):
   a B panel (KC x NR: 16 KiB in f32, 16 KiB in f64) fills half of L1 with the A panel streaming
   past it; the packed A block (MC x KC: 264 KiB f32, 264 KiB f64) sits in L2 next to the B
   panels passing through; the packed B block (KC x NC: 4 MiB) sits in L3. */
#define TENSOR__SGEMM_MR 6
#define TENSOR__SGEMM_NR 16
#define TENSOR__DGEMM_MR 6
#define TENSOR__DGEMM_NR 8
#ifndef TENSOR__SGEMM_MC
#define TENSOR__SGEMM_MC 264
#endif
#ifndef TENSOR__SGEMM_KC
#define TENSOR__SGEMM_KC 256
#endif
#ifndef TENSOR__SGEMM_NC
#define TENSOR__SGEMM_NC 4096
#endif
#ifndef TENSOR__DGEMM_MC
#define TENSOR__DGEMM_MC 264
#endif
#ifndef TENSOR__DGEMM_KC
#define TENSOR__DGEMM_KC 128
#endif
#ifndef TENSOR__DGEMM_NC
#define TENSOR__DGEMM_NC 4096
#endif
/* Fewer multiply-adds than this run on the calling thread (waking the pool costs microseconds). */
#ifndef TENSOR__GEMM_PAR_MIN
#define TENSOR__GEMM_PAR_MIN ((int64_t)1 << 18)
#endif

/* One micro-kernel call: acc[MR][NR] = sum over p < kc of a[p * MR + i] * b[p * NR + j] (packed
   panels), then C[i * rs + j * cs] = acc (+ C when add) for i < mr, j < nr. */
typedef void (*tensor__sgemm_kernel_fn)(int64_t kc, const float *a, const float *b, float *C, int64_t rs, int64_t cs, int mr, int nr, int add);
typedef void (*tensor__dgemm_kernel_fn)(int64_t kc, const double *a, const double *b, double *C, int64_t rs, int64_t cs, int mr, int nr, int add);
/* Packing of an mc x kc block of A into MR-row panels, or a kc x nc block of B into NR-column
   panels (rows/cols past the end are zero). */
typedef void (*tensor__spack_fn)(float *dst, const float *src, int64_t rows, int64_t cols, int64_t rs, int64_t cs);
typedef void (*tensor__dpack_fn)(double *dst, const double *src, int64_t rows, int64_t cols, int64_t rs, int64_t cs);

/* Writes a finished tile: C = acc (+ C) for the mr x nr corner (C's element (i, j) at
   C[i * rs + j * cs]); acc rows are NR apart. */
#define TENSOR__DEFINE_GEMM_STORE(sfx, T, NR)                                                            \
    static void tensor__gemm_store_##sfx(const T *acc, T *C, int64_t rs, int64_t cs, int mr, int nr, int add) { \
        for (int i = 0; i < mr; i++) {                                                                  \
            T *c = C + i * rs;                                                                          \
            const T *r = acc + i * NR;                                                                  \
            if (add) for (int j = 0; j < nr; j++) c[j * cs] += r[j];                                    \
            else for (int j = 0; j < nr; j++) c[j * cs] = r[j];                                         \
        }                                                                                               \
    }
TENSOR__DEFINE_GEMM_STORE(f32, float, TENSOR__SGEMM_NR)
TENSOR__DEFINE_GEMM_STORE(f64, double, TENSOR__DGEMM_NR)

/* The portable micro-kernel: the same tile in a local array; the j loop has a fixed trip count,
   so the compiler keeps rows of acc in vector registers where it can. */
#define TENSOR__DEFINE_GEMM_KERNEL_SCALAR(sfx, T, MR, NR)                                                \
    static void tensor__gemm_kernel_scalar_##sfx(int64_t kc, const T *a, const T *b, T *C, int64_t rs, int64_t cs, int mr, int nr, int add) { \
        T acc[MR * NR];                                                                                 \
        for (int i = 0; i < MR * NR; i++) acc[i] = 0;                                                   \
        for (int64_t p = 0; p < kc; p++, a += MR, b += NR)                                              \
            for (int i = 0; i < MR; i++) {                                                              \
                T ai = a[i];                                                                            \
                T *r = acc + i * NR;                                                                    \
                for (int j = 0; j < NR; j++) r[j] += ai * b[j];                                         \
            }                                                                                           \
        tensor__gemm_store_##sfx(acc, C, rs, cs, mr, nr, add);                                          \
    }
TENSOR__DEFINE_GEMM_KERNEL_SCALAR(f32, float, TENSOR__SGEMM_MR, TENSOR__SGEMM_NR)
TENSOR__DEFINE_GEMM_KERNEL_SCALAR(f64, double, TENSOR__DGEMM_MR, TENSOR__DGEMM_NR)

/* Portable packing. A: panel after panel of MR rows, dst[p * MR + r] = A[(i0 + r) * rs + p * cs].
   B: panel after panel of NR columns, dst[p * NR + c] = B[p * rs + (j0 + c) * cs]. The common
   layouts (unit stride along the panel's short side, or along k) get loops of fixed trip count. */
#define TENSOR__DEFINE_GEMM_PACK(sfx, T, MR, NR)                                                         \
    static void tensor__gemm_pack_a_##sfx(T *dst, const T *A, int64_t mc, int64_t kc, int64_t rs, int64_t cs) { \
        for (int64_t i0 = 0; i0 < mc; i0 += MR, dst += MR * kc) {                                       \
            int64_t rows = mc - i0 < MR ? mc - i0 : MR;                                                 \
            const T *s = A + i0 * rs;                                                                   \
            if (rows == MR && rs == 1) {                                                                \
                for (int64_t p = 0; p < kc; p++) memcpy(dst + p * MR, s + p * cs, MR * sizeof(T));      \
            } else if (rows == MR && cs == 1) {                                                         \
                for (int r = 0; r < MR; r++)                                                            \
                    for (int64_t p = 0; p < kc; p++) dst[p * MR + r] = s[r * rs + p];                   \
            } else {                                                                                    \
                for (int64_t p = 0; p < kc; p++) {                                                      \
                    int r = 0;                                                                          \
                    for (; r < rows; r++) dst[p * MR + r] = s[r * rs + p * cs];                         \
                    for (; r < MR; r++) dst[p * MR + r] = 0;                                            \
                }                                                                                       \
            }                                                                                           \
        }                                                                                               \
    }                                                                                                   \
    static void tensor__gemm_pack_b_##sfx(T *dst, const T *B, int64_t kc, int64_t nc, int64_t rs, int64_t cs) { \
        for (int64_t j0 = 0; j0 < nc; j0 += NR, dst += NR * kc) {                                       \
            int64_t cols = nc - j0 < NR ? nc - j0 : NR;                                                 \
            const T *s = B + j0 * cs;                                                                   \
            if (cols == NR && cs == 1) {                                                                \
                for (int64_t p = 0; p < kc; p++) memcpy(dst + p * NR, s + p * rs, NR * sizeof(T));      \
            } else if (cols == NR && rs == 1) {                                                         \
                for (int c = 0; c < NR; c++)                                                            \
                    for (int64_t p = 0; p < kc; p++) dst[p * NR + c] = s[c * cs + p];                   \
            } else {                                                                                    \
                for (int64_t p = 0; p < kc; p++) {                                                      \
                    int c = 0;                                                                          \
                    for (; c < cols; c++) dst[p * NR + c] = s[p * rs + c * cs];                         \
                    for (; c < NR; c++) dst[p * NR + c] = 0;                                            \
                }                                                                                       \
            }                                                                                           \
        }                                                                                               \
    }
TENSOR__DEFINE_GEMM_PACK(f32, float, TENSOR__SGEMM_MR, TENSOR__SGEMM_NR)
TENSOR__DEFINE_GEMM_PACK(f64, double, TENSOR__DGEMM_MR, TENSOR__DGEMM_NR)

#if TENSOR__GEMM_AVX2
#define TENSOR__AVX2 __attribute__((target("avx2,fma")))

/* 6 x 16 f32: c<row><half>; per k step two aligned loads of B, six broadcasts of A, 12 FMAs.
   The k loop is unrolled by four (the panels are read at fixed offsets from one pointer). */
#define TENSOR__SK_STEP(q)                                                                               \
    do {                                                                                                \
        __m256 b0 = _mm256_load_ps(b + 16 * (q)), b1 = _mm256_load_ps(b + 16 * (q) + 8), av;            \
        av = _mm256_broadcast_ss(a + 6 * (q) + 0); c00 = _mm256_fmadd_ps(av, b0, c00); c01 = _mm256_fmadd_ps(av, b1, c01); \
        av = _mm256_broadcast_ss(a + 6 * (q) + 1); c10 = _mm256_fmadd_ps(av, b0, c10); c11 = _mm256_fmadd_ps(av, b1, c11); \
        av = _mm256_broadcast_ss(a + 6 * (q) + 2); c20 = _mm256_fmadd_ps(av, b0, c20); c21 = _mm256_fmadd_ps(av, b1, c21); \
        av = _mm256_broadcast_ss(a + 6 * (q) + 3); c30 = _mm256_fmadd_ps(av, b0, c30); c31 = _mm256_fmadd_ps(av, b1, c31); \
        av = _mm256_broadcast_ss(a + 6 * (q) + 4); c40 = _mm256_fmadd_ps(av, b0, c40); c41 = _mm256_fmadd_ps(av, b1, c41); \
        av = _mm256_broadcast_ss(a + 6 * (q) + 5); c50 = _mm256_fmadd_ps(av, b0, c50); c51 = _mm256_fmadd_ps(av, b1, c51); \
    } while (0)
#define TENSOR__SK_ROW(r, x0, x1)                                                                        \
    do {                                                                                                \
        float *c_ = C + (r) * rs;                                                                       \
        if (add) { x0 = _mm256_add_ps(x0, _mm256_loadu_ps(c_)); x1 = _mm256_add_ps(x1, _mm256_loadu_ps(c_ + 8)); } \
        _mm256_storeu_ps(c_, x0);                                                                       \
        _mm256_storeu_ps(c_ + 8, x1);                                                                   \
    } while (0)
TENSOR__AVX2 static void tensor__gemm_kernel_avx2_f32(int64_t kc, const float *a, const float *b, float *C, int64_t rs, int64_t cs, int mr, int nr, int add) {
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    bool full = mr == 6 && nr == 16 && cs == 1;
    if (full)
        for (int r = 0; r < 6; r++) { _mm_prefetch((const char *)(C + r * rs), _MM_HINT_T0); _mm_prefetch((const char *)(C + r * rs + 15), _MM_HINT_T0); }
    int64_t p = 0;
    for (; p + 4 <= kc; p += 4, a += 24, b += 64) {
        TENSOR__SK_STEP(0);
        TENSOR__SK_STEP(1);
        TENSOR__SK_STEP(2);
        TENSOR__SK_STEP(3);
    }
    for (; p < kc; p++, a += 6, b += 16) TENSOR__SK_STEP(0);
    if (full) {
        TENSOR__SK_ROW(0, c00, c01);
        TENSOR__SK_ROW(1, c10, c11);
        TENSOR__SK_ROW(2, c20, c21);
        TENSOR__SK_ROW(3, c30, c31);
        TENSOR__SK_ROW(4, c40, c41);
        TENSOR__SK_ROW(5, c50, c51);
        return;
    }
    float acc[6 * 16];
    _mm256_storeu_ps(acc + 0, c00); _mm256_storeu_ps(acc + 8, c01);
    _mm256_storeu_ps(acc + 16, c10); _mm256_storeu_ps(acc + 24, c11);
    _mm256_storeu_ps(acc + 32, c20); _mm256_storeu_ps(acc + 40, c21);
    _mm256_storeu_ps(acc + 48, c30); _mm256_storeu_ps(acc + 56, c31);
    _mm256_storeu_ps(acc + 64, c40); _mm256_storeu_ps(acc + 72, c41);
    _mm256_storeu_ps(acc + 80, c50); _mm256_storeu_ps(acc + 88, c51);
    tensor__gemm_store_f32(acc, C, rs, cs, mr, nr, add);
}

/* 6 x 8 f64: the same schedule with 4 doubles per register. */
#define TENSOR__DK_STEP(q)                                                                               \
    do {                                                                                                \
        __m256d b0 = _mm256_load_pd(b + 8 * (q)), b1 = _mm256_load_pd(b + 8 * (q) + 4), av;             \
        av = _mm256_broadcast_sd(a + 6 * (q) + 0); c00 = _mm256_fmadd_pd(av, b0, c00); c01 = _mm256_fmadd_pd(av, b1, c01); \
        av = _mm256_broadcast_sd(a + 6 * (q) + 1); c10 = _mm256_fmadd_pd(av, b0, c10); c11 = _mm256_fmadd_pd(av, b1, c11); \
        av = _mm256_broadcast_sd(a + 6 * (q) + 2); c20 = _mm256_fmadd_pd(av, b0, c20); c21 = _mm256_fmadd_pd(av, b1, c21); \
        av = _mm256_broadcast_sd(a + 6 * (q) + 3); c30 = _mm256_fmadd_pd(av, b0, c30); c31 = _mm256_fmadd_pd(av, b1, c31); \
        av = _mm256_broadcast_sd(a + 6 * (q) + 4); c40 = _mm256_fmadd_pd(av, b0, c40); c41 = _mm256_fmadd_pd(av, b1, c41); \
        av = _mm256_broadcast_sd(a + 6 * (q) + 5); c50 = _mm256_fmadd_pd(av, b0, c50); c51 = _mm256_fmadd_pd(av, b1, c51); \
    } while (0)
#define TENSOR__DK_ROW(r, x0, x1)                                                                        \
    do {                                                                                                \
        double *c_ = C + (r) * rs;                                                                      \
        if (add) { x0 = _mm256_add_pd(x0, _mm256_loadu_pd(c_)); x1 = _mm256_add_pd(x1, _mm256_loadu_pd(c_ + 4)); } \
        _mm256_storeu_pd(c_, x0);                                                                       \
        _mm256_storeu_pd(c_ + 4, x1);                                                                   \
    } while (0)
TENSOR__AVX2 static void tensor__gemm_kernel_avx2_f64(int64_t kc, const double *a, const double *b, double *C, int64_t rs, int64_t cs, int mr, int nr, int add) {
    __m256d c00 = _mm256_setzero_pd(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256d c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    bool full = mr == 6 && nr == 8 && cs == 1;
    if (full)
        for (int r = 0; r < 6; r++) { _mm_prefetch((const char *)(C + r * rs), _MM_HINT_T0); _mm_prefetch((const char *)(C + r * rs + 7), _MM_HINT_T0); }
    int64_t p = 0;
    for (; p + 4 <= kc; p += 4, a += 24, b += 32) {
        TENSOR__DK_STEP(0);
        TENSOR__DK_STEP(1);
        TENSOR__DK_STEP(2);
        TENSOR__DK_STEP(3);
    }
    for (; p < kc; p++, a += 6, b += 8) TENSOR__DK_STEP(0);
    if (full) {
        TENSOR__DK_ROW(0, c00, c01);
        TENSOR__DK_ROW(1, c10, c11);
        TENSOR__DK_ROW(2, c20, c21);
        TENSOR__DK_ROW(3, c30, c31);
        TENSOR__DK_ROW(4, c40, c41);
        TENSOR__DK_ROW(5, c50, c51);
        return;
    }
    double acc[6 * 8];
    _mm256_storeu_pd(acc + 0, c00); _mm256_storeu_pd(acc + 4, c01);
    _mm256_storeu_pd(acc + 8, c10); _mm256_storeu_pd(acc + 12, c11);
    _mm256_storeu_pd(acc + 16, c20); _mm256_storeu_pd(acc + 20, c21);
    _mm256_storeu_pd(acc + 24, c30); _mm256_storeu_pd(acc + 28, c31);
    _mm256_storeu_pd(acc + 32, c40); _mm256_storeu_pd(acc + 36, c41);
    _mm256_storeu_pd(acc + 40, c50); _mm256_storeu_pd(acc + 44, c51);
    tensor__gemm_store_f64(acc, C, rs, cs, mr, nr, add);
}

/* In-register transpose of an 8 x 8 f32 block (r[i] row i in, column i out). */
TENSOR__AVX2 static inline void tensor__transpose8_f32(__m256 *r) {
    __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    r[0] = _mm256_permute2f128_ps(s0, s4, 0x20); r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
    r[2] = _mm256_permute2f128_ps(s2, s6, 0x20); r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
    r[4] = _mm256_permute2f128_ps(s0, s4, 0x31); r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
    r[6] = _mm256_permute2f128_ps(s2, s6, 0x31); r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

/* Packing of f32 operands whose unit stride runs along k (A row-major, B column-major): the
   portable loops gather one element per row per k step; these transpose 8 x 8 blocks in
   registers. An A panel takes 6 rows (two zero rows complete the block) and writes each k step's
   8 lanes where the next step's 6 start: in order, every store overwrites the previous one's 2
   spare lanes (the last one's land in the slack after the buffer). */
TENSOR__AVX2 static void tensor__gemm_pack_a_avx2_f32(float *dst, const float *A, int64_t mc, int64_t kc, int64_t rs, int64_t cs) {
    if (cs != 1) { tensor__gemm_pack_a_f32(dst, A, mc, kc, rs, cs); return; }
    for (int64_t i0 = 0; i0 < mc; i0 += 6, dst += 6 * kc) {
        if (mc - i0 < 6) { tensor__gemm_pack_a_f32(dst, A + i0 * rs, mc - i0, kc, rs, cs); break; }
        const float *s = A + i0 * rs;
        int64_t p = 0;
        for (; p + 8 <= kc; p += 8) {
            __m256 r[8];
            for (int i = 0; i < 6; i++) r[i] = _mm256_loadu_ps(s + i * rs + p);
            r[6] = r[7] = _mm256_setzero_ps();
            tensor__transpose8_f32(r);
            for (int q = 0; q < 8; q++) _mm256_storeu_ps(dst + (p + q) * 6, r[q]);
        }
        for (; p < kc; p++)
            for (int i = 0; i < 6; i++) dst[p * 6 + i] = s[i * rs + p];
    }
}
TENSOR__AVX2 static void tensor__gemm_pack_b_avx2_f32(float *dst, const float *B, int64_t kc, int64_t nc, int64_t rs, int64_t cs) {
    if (cs == 1) { /* row-major: each k step copies 16 contiguous floats */
        for (int64_t j0 = 0; j0 + 16 <= nc; j0 += 16, dst += 16 * kc)
            for (int64_t p = 0; p < kc; p++) {
                _mm256_store_ps(dst + p * 16, _mm256_loadu_ps(B + p * rs + j0));
                _mm256_store_ps(dst + p * 16 + 8, _mm256_loadu_ps(B + p * rs + j0 + 8));
            }
        if (nc % 16) tensor__gemm_pack_b_f32(dst, B + (nc - nc % 16), kc, nc % 16, rs, cs);
        return;
    }
    if (rs != 1) { tensor__gemm_pack_b_f32(dst, B, kc, nc, rs, cs); return; }
    for (int64_t j0 = 0; j0 < nc; j0 += 16, dst += 16 * kc) {
        if (nc - j0 < 16) { tensor__gemm_pack_b_f32(dst, B + j0 * cs, kc, nc - j0, rs, cs); break; }
        const float *s = B + j0 * cs;
        int64_t p = 0;
        for (; p + 8 <= kc; p += 8)
            for (int h = 0; h < 2; h++) {
                __m256 r[8];
                for (int c = 0; c < 8; c++) r[c] = _mm256_loadu_ps(s + (h * 8 + c) * cs + p);
                tensor__transpose8_f32(r);
                for (int q = 0; q < 8; q++) _mm256_store_ps(dst + (p + q) * 16 + h * 8, r[q]);
            }
        for (; p < kc; p++)
            for (int c = 0; c < 16; c++) dst[p * 16 + c] = s[c * cs + p];
    }
}
#endif

/* Whether this CPU runs the AVX2+FMA kernels (CPUID, with the OS saving the YMM state). */
static TENSOR__UNUSED bool tensor__gemm_has_avx2(void) {
#if TENSOR__GEMM_AVX2
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
    return false;
#endif
}

/* The problem of one GEMM call: C[m, n] (+)= A[m, k] B[k, n], element (i, j) of C at
   C[i * c_rs + j * c_cs], and the kernel and packing routines chosen for this CPU. */
#define TENSOR__DEFINE_GEMM_DRIVER(sfx, T, MR, NR, MC, KC, NC)                                           \
    typedef struct {                                                                                    \
        tensor__##sfx##_kernel_fn kern;                                                                 \
        tensor__##sfx##_pack_fn pack_a, pack_b;                                                         \
        int64_t m, n, k, a_rs, a_cs, b_rs, b_cs, c_rs, c_cs;                                            \
        const T *A, *B;                                                                                 \
        T *C;                                                                                           \
        int add;                                                                                        \
    } tensor__gemm_prob_##sfx;                                                                          \
    /* The blocked loops over rows [m0, m1) and columns [n0, n1) of C; pa and pb hold one packed A    \
       block and one packed B block. */                                                                 \
    static void tensor__gemm_serial_##sfx(const tensor__gemm_prob_##sfx *q, int64_t m0, int64_t m1, int64_t n0, int64_t n1, \
                                          T *pa, T *pb) {                                               \
        int64_t k = q->k;                                                                               \
        for (int64_t jc = n0; jc < n1; jc += NC) {                                                      \
            int64_t nc = n1 - jc < NC ? n1 - jc : NC;                                                   \
            for (int64_t pc = 0; pc < k; pc += KC) {                                                    \
                int64_t kc = k - pc < KC ? k - pc : KC;                                                 \
                int addk = q->add || pc > 0;                                                            \
                q->pack_b(pb, q->B + pc * q->b_rs + jc * q->b_cs, kc, nc, q->b_rs, q->b_cs);            \
                for (int64_t ic = m0; ic < m1; ic += MC) {                                              \
                    int64_t mc = m1 - ic < MC ? m1 - ic : MC;                                           \
                    q->pack_a(pa, q->A + ic * q->a_rs + pc * q->a_cs, mc, kc, q->a_rs, q->a_cs);        \
                    for (int64_t jr = 0; jr < nc; jr += NR) {                                           \
                        int nr = (int)(nc - jr < NR ? nc - jr : NR);                                    \
                        const T *bp = pb + jr * kc;                                                     \
                        T *cc = q->C + ic * q->c_rs + (jc + jr) * q->c_cs;                              \
                        for (int64_t ir = 0; ir < mc; ir += MR)                                         \
                            q->kern(kc, pa + ir * kc, bp, cc + ir * q->c_rs, q->c_rs, q->c_cs, (int)(mc - ir < MR ? mc - ir : MR), nr, addk); \
                    }                                                                                   \
                }                                                                                       \
            }                                                                                           \
        }                                                                                               \
    }                                                                                                   \
    /* Task t of `tasks` computes the slice t of the split dim (n when split_n, else m), cut at     \
       panel boundaries, with its own packing buffers in scratch. */                                    \
    typedef struct {                                                                                    \
        const tensor__gemm_prob_##sfx *q;                                                               \
        T *scratch;                                                                                     \
        int64_t pa_size, per_task, tasks;                                                               \
        int split_n;                                                                                    \
    } tensor__gemm_job_##sfx;                                                                           \
    static void tensor__gemm_task_##sfx(int64_t begin, int64_t end, void *ctx) {                        \
        const tensor__gemm_job_##sfx *j = (const tensor__gemm_job_##sfx *)ctx;                          \
        const tensor__gemm_prob_##sfx *q = j->q;                                                        \
        int64_t unit = j->split_n ? NR : MR, len = j->split_n ? q->n : q->m;                            \
        int64_t panels = (len + unit - 1) / unit;                                                       \
        for (int64_t t = begin; t < end; t++) {                                                         \
            int64_t lo = panels * t / j->tasks * unit, hi = panels * (t + 1) / j->tasks * unit;         \
            if (hi > len) hi = len;                                                                     \
            if (lo >= hi) continue;                                                                     \
            T *pa = j->scratch + t * j->per_task, *pb = pa + j->pa_size;                                \
            if (j->split_n) tensor__gemm_serial_##sfx(q, 0, q->m, lo, hi, pa, pb);                      \
            else tensor__gemm_serial_##sfx(q, lo, hi, 0, q->n, pa, pb);                                 \
        }                                                                                               \
    }                                                                                                   \
    static int64_t tensor__gemm_round_##sfx(int64_t x, int64_t unit) { return (x + unit - 1) / unit * unit; } \
    /* The fraction of a tile grid's work that lands inside an m x n result. */                        \
    static double tensor__gemm_fill_##sfx(int64_t m, int64_t n) {                                       \
        return (double)(m * n) / (double)(tensor__gemm_round_##sfx(m, MR) * tensor__gemm_round_##sfx(n, NR)); \
    }                                                                                                   \
    static void tensor__gemm_##sfx##s(int64_t m, int64_t n, int64_t k, const T *A, int64_t a_rs, int64_t a_cs, \
                                      const T *B, int64_t b_rs, int64_t b_cs, T *C, int64_t c_rs, int64_t c_cs, bool add) { \
        if (m <= 0 || n <= 0) return;                                                                   \
        if (k <= 0) {                                                                                   \
            if (!add)                                                                                   \
                for (int64_t i = 0; i < m; i++)                                                         \
                    for (int64_t q = 0; q < n; q++) C[i * c_rs + q * c_cs] = 0;                         \
            return;                                                                                     \
        }                                                                                               \
        tensor__gemm_prob_##sfx q;                                                                      \
        /* C^T = B^T A^T: the transposed problem when its tiles fill much better (a narrow n, such    \
           as a matrix-vector product), its tiles then written with C's strides swapped */            \
        if (n < NR && tensor__gemm_fill_##sfx(n, m) > 1.25 * tensor__gemm_fill_##sfx(m, n)) {           \
            const T *t = A; A = B; B = t;                                                               \
            int64_t x = m; m = n; n = x;                                                                \
            x = a_rs; a_rs = b_cs; b_cs = x;                                                            \
            x = a_cs; a_cs = b_rs; b_rs = x;                                                            \
            x = c_rs; c_rs = c_cs; c_cs = x;                                                            \
        }                                                                                               \
        q.kern = tensor__gemm_kernel_scalar_##sfx;                                                      \
        q.pack_a = tensor__gemm_pack_a_##sfx;                                                           \
        q.pack_b = tensor__gemm_pack_b_##sfx;                                                           \
        TENSOR__GEMM_PICK_##sfx(q);                                                                     \
        q.m = m; q.n = n; q.k = k; q.A = A; q.B = B; q.C = C; q.add = add;                              \
        q.a_rs = a_rs; q.a_cs = a_cs; q.b_rs = b_rs; q.b_cs = b_cs; q.c_rs = c_rs; q.c_cs = c_cs;       \
        tensor__gemm_job_##sfx j;                                                                       \
        j.q = &q;                                                                                       \
        int64_t mp = (m + MR - 1) / MR, np = (n + NR - 1) / NR, work = m * n * k;                        \
        int64_t threads = tensor_get_num_threads();                                                     \
        if (threads > work / TENSOR__GEMM_PAR_MIN) threads = work / TENSOR__GEMM_PAR_MIN;               \
        /* split the dim whose operand is cheaper to pack twice (n: each thread packs all of A) */      \
        j.split_n = np >= 2 && (n >= m || mp < 2);                                                      \
        int64_t cap = j.split_n ? np : mp;                                                              \
        j.tasks = threads < 1 ? 1 : threads > cap ? cap : threads;                                      \
        /* the largest slice a task gets, and the blocks it packs */                                    \
        int64_t ms = j.split_n ? m : (mp + j.tasks - 1) / j.tasks * MR;                                 \
        int64_t ns = j.split_n ? (np + j.tasks - 1) / j.tasks * NR : n;                                 \
        int64_t kc = k < KC ? k : KC, line = 64 / (int64_t)sizeof(T);                                   \
        int64_t mc = tensor__gemm_round_##sfx(ms < MC ? ms : MC, MR), nc = tensor__gemm_round_##sfx(ns < NC ? ns : NC, NR); \
        /* + slack for the overlapping stores of the packing; B starts on a cache line */              \
        j.pa_size = tensor__gemm_round_##sfx(mc * kc + 16, line);                                       \
        j.per_task = j.pa_size + tensor__gemm_round_##sfx(nc * kc + 16, line);                          \
        j.scratch = (T *)tensor__alloc_aligned((size_t)(j.per_task * j.tasks) * sizeof(T));             \
        if (!j.scratch) { /* no memory for panels: the plain loop needs none */                         \
            for (int64_t i = 0; i < m; i++)                                                             \
                for (int64_t c = 0; c < n; c++) {                                                       \
                    T acc = 0;                                                                          \
                    for (int64_t p = 0; p < k; p++) acc += A[i * a_rs + p * a_cs] * B[p * b_rs + c * b_cs]; \
                    T *dst = C + i * c_rs + c * c_cs;                                                   \
                    *dst = add ? *dst + acc : acc;                                                      \
                }                                                                                       \
            return;                                                                                     \
        }                                                                                               \
        if (j.tasks > 1) tensor__parallel_for(j.tasks, 1, tensor__gemm_task_##sfx, &j);                 \
        else tensor__gemm_task_##sfx(0, 1, &j);                                                         \
        tensor__free_aligned(j.scratch);                                                                \
    }

typedef tensor__sgemm_kernel_fn tensor__f32_kernel_fn;
typedef tensor__dgemm_kernel_fn tensor__f64_kernel_fn;
typedef tensor__spack_fn tensor__f32_pack_fn;
typedef tensor__dpack_fn tensor__f64_pack_fn;
#if TENSOR__GEMM_AVX2
#define TENSOR__GEMM_PICK_f32(q)                                                                         \
    if (tensor__gemm_has_avx2()) {                                                                      \
        q.kern = tensor__gemm_kernel_avx2_f32;                                                          \
        q.pack_a = tensor__gemm_pack_a_avx2_f32;                                                        \
        q.pack_b = tensor__gemm_pack_b_avx2_f32;                                                        \
    }
#define TENSOR__GEMM_PICK_f64(q) if (tensor__gemm_has_avx2()) q.kern = tensor__gemm_kernel_avx2_f64;
#else
#define TENSOR__GEMM_PICK_f32(q)
#define TENSOR__GEMM_PICK_f64(q)
#endif
TENSOR__DEFINE_GEMM_DRIVER(f32, float, TENSOR__SGEMM_MR, TENSOR__SGEMM_NR, TENSOR__SGEMM_MC, TENSOR__SGEMM_KC, TENSOR__SGEMM_NC)
TENSOR__DEFINE_GEMM_DRIVER(f64, double, TENSOR__DGEMM_MR, TENSOR__DGEMM_NR, TENSOR__DGEMM_MC, TENSOR__DGEMM_KC, TENSOR__DGEMM_NC)

/* Whether a GEMM of this size splits itself across threads (callers with many small GEMMs
   split over those instead). */
static bool tensor__gemm_threads_itself(int64_t m, int64_t n, int64_t k) {
    return tensor_get_num_threads() > 1 && m * n * k >= 2 * TENSOR__GEMM_PAR_MIN;
}
