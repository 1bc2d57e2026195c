// >>gemm ---------------------------------------------------------------------------------------
/* Dense f32 and f64 GEMM with the BLIS/OpenBLAS structure:

       C[m, n] = (add ? C : 0) + A[m, k] @ B[k, n]

   A, B and C are addressed through element strides (element (i, p) of A at A[i * a_rs + p * a_cs]),
   so every transposition case is a stride pattern and nothing is copied except into the packed
   panels. The loops, outermost first:
     jc: NC columns of B at a time;
     pc: the k dim in equal blocks of at most KC; B[pc.., jc..] is packed into NR-column panels
         (KC x NR each, p-major), a KC x NC block that stays in L2/L3;
     ic: MC rows of A at a time; A[ic.., pc..] is packed into MR-row panels (MR x KC each), an
         MC x KC block that stays in L2;
     jr: one B panel (KC x NR) at a time, which stays in L1 while
     ir: every A panel of the block streams past it through the micro-kernel, which keeps one
         MR x NR tile of C in registers for the whole KC loop and then adds it to C.
   Packing pads the last panels with zeros, so the micro-kernel always computes a full tile; a
   partial tile at the edge of C is stored with masks (AVX-512) or through a small buffer, as is
   a tile of a C with a column stride.
   Kernel families (tensor__gemm_impl_*: micro-kernel, packing, unpacked tile, tile and block
   sizes), one picked per call by tensor__gemm_pick_* from the SIMD layer's choice, so
   TENSOR_SIMD=avx2 gives the AVX2 family and sse2 or scalar the portable one:
     avx512f: 12 x 32 f32 and 12 x 16 f64 (24 accumulators of the 32 zmm registers, two loads
       of B and 12 broadcasts of A per k step), MC 240 / 120, KC 256, NC 4096. Measured on one
       Zen 5 core (GFLOP/s at 512 / 1024 / 2048, f32): 12 x 32 236 / 230 / 234, 14 x 32 (28
       accumulators) 230 / 225 / 226 (KC 192; 134 at 2048 with KC 256), 8 x 48 234 / 214 / 199
       (KC 160, its B panel in L1), 6 x 64 242 / 207-234 / 180 (KC 128, C read and written 16
       times at k = 2048); f64 at 512 / 1024 / 2048: 12 x 16 120 / 111 / 116, 14 x 16 119 / 103
       / 102, 8 x 24 116 / 95 / 93. MC 144..480 and KC 192..384 with 12 x 32 within noise (3%)
       of each other; KC 256 keeps the B panel (32 KiB) and an A panel (12 KiB) in L1 (48 KiB).
       A last panel of at most 4 rows (a block of 64 rows) runs a 4-row kernel. Unpacked A B^T
       tile: 4 x 4 (16 lanes along k).
     avx2+fma: 6 x 16 f32 and 6 x 8 f64 (12 accumulators of 8 floats / 4 doubles, two loads of
       B and six broadcasts of A per k step); unpacked tile 3 x 4.
     portable: scalar C of the AVX2 tile shape (the only one under TENSOR_NO_SIMD).
     avx512bf16 (bf16 operands, f32 results; only where the CPU has avx512_bf16 and the AVX-512
       kernels run): the 12 x 32 f32 schedule with vdpbf16ps, k packed in pairs (KP 2), KC 512.
       Measured on one Zen 5 core: the kernel 525 GFLOP/s in L1 (f32: 265), 1024^3 480, 2048^3 470.
   f16 / bf16 operands into a family that reads f32 are converted to f32 as they are packed (SIMD
   rows, tensor__gemm_pack_*), so any family takes them with no copy of the operands.
   TENSOR_NO_AVX512 leaves the first and the bf16 one out. The SIMD kernels carry __attribute__((target)), so a
   plain -O2 build has them all. Packing: 8 x 8 transposes in registers where the unit stride
   runs along k; a row-major B is packed by the kernel's first pass over it (no separate copy).
   Two cases skip the blocked loops: a narrow n whose transposed problem (C^T = B^T A^T) fills
   the tiles much better runs transposed, and a row-major A times a column-major B (x @ w^T of a
   linear layer) with few rows or columns runs unpacked dot-product tiles (tensor__gemm_ntk).
   Threads (tensor__gemm_task): the N (or M) range is cut into slices of whole panels that the
   threads claim one by one, so a thread woken late takes fewer; the operand every slice needs in
   full is packed once, unit by unit by whichever threads are there, when it is small (else each
   thread packs its own blocks). Problems below TENSOR__GEMM_PAR_MIN multiply-adds stay on the
   calling thread. */

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
/* TENSOR_NO_AVX512 leaves the AVX-512 kernels out (the AVX2 ones then serve an AVX-512 CPU). */
#if TENSOR__GEMM_AVX2 && !defined(TENSOR_NO_AVX512)
#define TENSOR__GEMM_AVX512 1
#else
#define TENSOR__GEMM_AVX512 0
#endif

/* Tile and block sizes of the AVX2 and portable kernels, for the caches of the machine they were
   measured on (L1d 32 KiB, L2 1 MiB per core, L3 32 MiB): a B panel (KC x NR: 16 KiB in f32 and
   f64) fills half of L1 with the A panel streaming past it; the packed A block (MC x KC: 264 KiB
   f32, 384 KiB f64) sits in L2 next to the B panels passing through; the packed B block (KC x NC:
   4 MiB f32, 8 MiB f64) sits in L3. Measured there (one thread, against the alternatives MC
   72..384, KC 192..384): within 2% of the best everywhere. */
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
#define TENSOR__DGEMM_MC 192
#endif
#ifndef TENSOR__DGEMM_KC
#define TENSOR__DGEMM_KC 256
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
   panels (rows/cols past the end are zero); src points at elements of the family's input dtype. */
typedef void (*tensor__spack_fn)(float *dst, const void *src, int64_t rows, int64_t cols, int64_t rs, int64_t cs);
typedef void (*tensor__dpack_fn)(double *dst, const void *src, int64_t rows, int64_t cols, int64_t rs, int64_t cs);

/* Writes a finished tile: C = acc (+ C) for the mr x nr corner (C's element (i, j) at
   C[i * rs + j * cs]); acc rows are ld apart. */
#define TENSOR__DEFINE_GEMM_STORE(sfx, T)                                                                \
    static void tensor__gemm_store_##sfx(const T *acc, int ld, T *C, int64_t rs, int64_t cs, int mr, int nr, int add) { \
        for (int i = 0; i < mr; i++) {                                                                  \
            T *c = C + i * rs;                                                                          \
            const T *r = acc + i * ld;                                                                  \
            if (add) for (int j = 0; j < nr; j++) c[j * cs] += r[j];                                    \
            else for (int j = 0; j < nr; j++) c[j * cs] = r[j];                                         \
        }                                                                                               \
    }
TENSOR__DEFINE_GEMM_STORE(f32, float)
TENSOR__DEFINE_GEMM_STORE(f64, double)

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
        tensor__gemm_store_##sfx(acc, NR, C, rs, cs, mr, nr, add);                                      \
    }
TENSOR__DEFINE_GEMM_KERNEL_SCALAR(f32, float, TENSOR__SGEMM_MR, TENSOR__SGEMM_NR)
TENSOR__DEFINE_GEMM_KERNEL_SCALAR(f64, double, TENSOR__DGEMM_MR, TENSOR__DGEMM_NR)

/* Portable packing for a tile of MR x NR (any: one instance per tile shape, named by `shape`).
   A: panel after panel of MR rows, dst[p * MR + r] = A[(i0 + r) * rs + p * cs].
   B: panel after panel of NR columns, dst[p * NR + c] = B[p * rs + (j0 + c) * cs]. The common
   layouts (unit stride along the panel's short side, or along k) get loops of fixed trip count. */
#define TENSOR__DEFINE_GEMM_PACK(shape, T, MR, NR)                                                       \
    static TENSOR__UNUSED void tensor__gemm_pack_a_##shape(T *dst, const void *A_, int64_t mc, int64_t kc, int64_t rs, int64_t cs) { \
        const T *A = (const T *)A_;                                                                     \
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
    static TENSOR__UNUSED void tensor__gemm_pack_b_##shape(T *dst, const void *B_, int64_t kc, int64_t nc, int64_t rs, int64_t cs) { \
        const T *B = (const T *)B_;                                                                     \
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
TENSOR__DEFINE_GEMM_PACK(f32_6x16, float, 6, 16)
TENSOR__DEFINE_GEMM_PACK(f64_6x8, double, 6, 8)

#if TENSOR__GEMM_AVX2
#define TENSOR__AVX2 __attribute__((target("avx2,fma")))

#ifndef TENSOR__GEMM_PF
#define TENSOR__GEMM_PF 16 /* rows of B ahead that the packing kernel prefetches */
#endif
/* 6 x 16 f32: c<row><half>; per k step two aligned loads of B, six broadcasts of A, 12 FMAs.
   The k loop is unrolled by four (the panels are read at fixed offsets from one pointer). */
#define TENSOR__SK_FMAS(q, b0, b1)                                                                       \
    do {                                                                                                \
        __m256 av;                                                                                      \
        av = _mm256_broadcast_ss(a + 6 * (q) + 0); c00 = _mm256_fmadd_ps(av, b0, c00); c01 = _mm256_fmadd_ps(av, b1, c01); \
        av = _mm256_broadcast_ss(a + 6 * (q) + 1); c10 = _mm256_fmadd_ps(av, b0, c10); c11 = _mm256_fmadd_ps(av, b1, c11); \
        av = _mm256_broadcast_ss(a + 6 * (q) + 2); c20 = _mm256_fmadd_ps(av, b0, c20); c21 = _mm256_fmadd_ps(av, b1, c21); \
        av = _mm256_broadcast_ss(a + 6 * (q) + 3); c30 = _mm256_fmadd_ps(av, b0, c30); c31 = _mm256_fmadd_ps(av, b1, c31); \
        av = _mm256_broadcast_ss(a + 6 * (q) + 4); c40 = _mm256_fmadd_ps(av, b0, c40); c41 = _mm256_fmadd_ps(av, b1, c41); \
        av = _mm256_broadcast_ss(a + 6 * (q) + 5); c50 = _mm256_fmadd_ps(av, b0, c50); c51 = _mm256_fmadd_ps(av, b1, c51); \
    } while (0)
#define TENSOR__SK_STEP(q)                                                                               \
    do {                                                                                                \
        __m256 b0 = _mm256_load_ps(b + 16 * (q)), b1 = _mm256_load_ps(b + 16 * (q) + 8);                \
        TENSOR__SK_FMAS(q, b0, b1);                                                                     \
    } while (0)
/* The same step reading B in place (16 contiguous floats per k step, bs rows apart) and writing
   the packed panel on the way, for the later A panels. */
#define TENSOR__SK_STEP_PACK(q)                                                                          \
    do {                                                                                                \
        _mm_prefetch((const char *)(bsrc + ((q) + TENSOR__GEMM_PF) * bs), _MM_HINT_T0);                \
        __m256 b0 = _mm256_loadu_ps(bsrc + (q) * bs), b1 = _mm256_loadu_ps(bsrc + (q) * bs + 8);        \
        _mm256_store_ps(b + 16 * (q), b0);                                                              \
        _mm256_store_ps(b + 16 * (q) + 8, b1);                                                          \
        TENSOR__SK_FMAS(q, b0, b1);                                                                     \
    } while (0)
#define TENSOR__SK_ROW(r, x0, x1)                                                                        \
    do {                                                                                                \
        float *c_ = C + (r) * rs;                                                                       \
        if (add) { x0 = _mm256_add_ps(x0, _mm256_loadu_ps(c_)); x1 = _mm256_add_ps(x1, _mm256_loadu_ps(c_ + 8)); } \
        _mm256_storeu_ps(c_, x0);                                                                       \
        _mm256_storeu_ps(c_ + 8, x1);                                                                   \
    } while (0)
#define TENSOR__SK_BEGIN                                                                                 \
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;            \
    __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;                            \
    bool full = mr == 6 && nr == 16 && cs == 1;                                                         \
    if (full)                                                                                           \
        for (int r = 0; r < 6; r++) { _mm_prefetch((const char *)(C + r * rs), _MM_HINT_T0); _mm_prefetch((const char *)(C + r * rs + 15), _MM_HINT_T0); } \
    int64_t p = 0
#define TENSOR__SK_END                                                                                   \
    if (full) {                                                                                         \
        TENSOR__SK_ROW(0, c00, c01);                                                                    \
        TENSOR__SK_ROW(1, c10, c11);                                                                    \
        TENSOR__SK_ROW(2, c20, c21);                                                                    \
        TENSOR__SK_ROW(3, c30, c31);                                                                    \
        TENSOR__SK_ROW(4, c40, c41);                                                                    \
        TENSOR__SK_ROW(5, c50, c51);                                                                    \
        return;                                                                                         \
    }                                                                                                   \
    float acc[6 * 16];                                                                                  \
    _mm256_storeu_ps(acc + 0, c00); _mm256_storeu_ps(acc + 8, c01);                                     \
    _mm256_storeu_ps(acc + 16, c10); _mm256_storeu_ps(acc + 24, c11);                                   \
    _mm256_storeu_ps(acc + 32, c20); _mm256_storeu_ps(acc + 40, c21);                                   \
    _mm256_storeu_ps(acc + 48, c30); _mm256_storeu_ps(acc + 56, c31);                                   \
    _mm256_storeu_ps(acc + 64, c40); _mm256_storeu_ps(acc + 72, c41);                                   \
    _mm256_storeu_ps(acc + 80, c50); _mm256_storeu_ps(acc + 88, c51);                                   \
    _mm256_zeroupper(); /* gcc adds none before this call: the SSE store would run dirty */             \
    tensor__gemm_store_f32(acc, 16, C, rs, cs, mr, nr, add)
TENSOR__AVX2 static void tensor__gemm_kernel_avx2_f32(int64_t kc, const float *a, const float *b, float *C, int64_t rs, int64_t cs, int mr, int nr, int add) {
    TENSOR__SK_BEGIN;
    for (; p + 4 <= kc; p += 4, a += 24, b += 64) {
        TENSOR__SK_STEP(0);
        TENSOR__SK_STEP(1);
        TENSOR__SK_STEP(2);
        TENSOR__SK_STEP(3);
    }
    for (; p < kc; p++, a += 6, b += 16) TENSOR__SK_STEP(0);
    TENSOR__SK_END;
}
/* The kernel for the first A panel against a B panel of 16 columns with unit column stride: it
   reads B in place (rows bs apart) and packs the panel into b as it goes, which saves the
   separate packing pass over B where few A panels share each B panel. */
TENSOR__AVX2 static void tensor__gemm_kernel_pack_avx2_f32(int64_t kc, const float *a, float *b, const float *bsrc, int64_t bs, float *C,
                                                          int64_t rs, int64_t cs, int mr, int nr, int add) {
    TENSOR__SK_BEGIN;
    for (; p + 4 <= kc; p += 4, a += 24, b += 64, bsrc += 4 * bs) {
        TENSOR__SK_STEP_PACK(0);
        TENSOR__SK_STEP_PACK(1);
        TENSOR__SK_STEP_PACK(2);
        TENSOR__SK_STEP_PACK(3);
    }
    for (; p < kc; p++, a += 6, b += 16, bsrc += bs) TENSOR__SK_STEP_PACK(0);
    TENSOR__SK_END;
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
    _mm256_zeroupper(); /* as in the f32 kernel */
    tensor__gemm_store_f64(acc, 8, C, rs, cs, mr, nr, add);
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
   spare lanes; the panel's last step stores 6. */
TENSOR__AVX2 static void tensor__gemm_pack_a_avx2_f32(float *dst, const void *A_, int64_t mc, int64_t kc, int64_t rs, int64_t cs) {
    const float *A = (const float *)A_;
    if (cs != 1) { tensor__gemm_pack_a_f32_6x16(dst, A, mc, kc, rs, cs); return; }
    for (int64_t i0 = 0; i0 < mc; i0 += 6, dst += 6 * kc) {
        if (mc - i0 < 6) { tensor__gemm_pack_a_f32_6x16(dst, A + i0 * rs, mc - i0, kc, rs, cs); break; }
        const float *s = A + i0 * rs;
        int64_t p = 0;
        for (; p + 8 <= kc; p += 8) {
            __m256 r[8];
            for (int i = 0; i < 6; i++) r[i] = _mm256_loadu_ps(s + i * rs + p);
            r[6] = r[7] = _mm256_setzero_ps();
            tensor__transpose8_f32(r);
            for (int q = 0; q < 7; q++) _mm256_storeu_ps(dst + (p + q) * 6, r[q]);
            if (p + 8 < kc) {
                _mm256_storeu_ps(dst + (p + 7) * 6, r[7]);
            } else { /* the panel's last step: 6 lanes exactly, as another thread may be packing the next panel */
                _mm_storeu_ps(dst + (p + 7) * 6, _mm256_castps256_ps128(r[7]));
                _mm_storel_pi((__m64 *)(void *)(dst + (p + 7) * 6 + 4), _mm256_extractf128_ps(r[7], 1));
            }
        }
        for (; p < kc; p++)
            for (int i = 0; i < 6; i++) dst[p * 6 + i] = s[i * rs + p];
    }
}
TENSOR__AVX2 static void tensor__gemm_pack_b_avx2_f32(float *dst, const void *B_, int64_t kc, int64_t nc, int64_t rs, int64_t cs) {
    const float *B = (const float *)B_;
    if (cs == 1) { /* row-major: each k step copies 16 contiguous floats */
        for (int64_t j0 = 0; j0 + 16 <= nc; j0 += 16, dst += 16 * kc)
            for (int64_t p = 0; p < kc; p++) {
                _mm256_store_ps(dst + p * 16, _mm256_loadu_ps(B + p * rs + j0));
                _mm256_store_ps(dst + p * 16 + 8, _mm256_loadu_ps(B + p * rs + j0 + 8));
            }
        if (nc % 16) tensor__gemm_pack_b_f32_6x16(dst, B + (nc - nc % 16), kc, nc % 16, rs, cs);
        return;
    }
    if (rs != 1) { tensor__gemm_pack_b_f32_6x16(dst, B, kc, nc, rs, cs); return; }
    for (int64_t j0 = 0; j0 < nc; j0 += 16, dst += 16 * kc) {
        if (nc - j0 < 16) { tensor__gemm_pack_b_f32_6x16(dst, B + j0 * cs, kc, nc - j0, rs, cs); break; }
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

/* The unpacked path for A row-major and B column-major (unit stride along k in both: x @ w^T of a
   linear layer). The vectors run along k: a 3 x 4 tile of C keeps 12 accumulators of partial dot
   products (3 rows of A and 4 columns of B loaded per vector of k, 12 FMAs: as many FMAs per load
   as the outer-product kernel), reduced across lanes at the end, four results at a time. Nothing
   is packed: the rows and columns are read in place as 7 sequential streams. An edge tile repeats
   its first row or column in the missing ones and drops their results; the end of k is read with
   a masked load. */
TENSOR__AVX2 static inline __m128 tensor__hsum4_f32(__m256 a, __m256 b, __m256 c, __m256 d) {
    __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
    return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1)); /* sums of a, b, c, d */
}
TENSOR__AVX2 static inline __m256d tensor__hsum4_f64(__m256d a, __m256d b, __m256d c, __m256d d) {
    __m256d ab = _mm256_hadd_pd(a, b), cd = _mm256_hadd_pd(c, d); /* a01 b01 a23 b23, c01 d01 c23 d23 */
    return _mm256_add_pd(_mm256_permute2f128_pd(ab, cd, 0x20), _mm256_permute2f128_pd(ab, cd, 0x31));
}
TENSOR__AVX2 static inline void tensor__nt_out_f32(__m128 v, float *C, int64_t cs, int nr, int add) {
    float r[4];
    if (nr == 4 && cs == 1) {
        if (add) v = _mm_add_ps(v, _mm_loadu_ps(C));
        _mm_storeu_ps(C, v);
        return;
    }
    _mm_storeu_ps(r, v);
    for (int j = 0; j < nr; j++) C[j * cs] = add ? C[j * cs] + r[j] : r[j];
}
TENSOR__AVX2 static inline void tensor__nt_out_f64(__m256d v, double *C, int64_t cs, int nr, int add) {
    double r[4];
    if (nr == 4 && cs == 1) {
        if (add) v = _mm256_add_pd(v, _mm256_loadu_pd(C));
        _mm256_storeu_pd(C, v);
        return;
    }
    _mm256_storeu_pd(r, v);
    for (int j = 0; j < nr; j++) C[j * cs] = add ? C[j * cs] + r[j] : r[j];
}
/* C[i, j] (+)= sum_p A[i * lda + p] B[j * ldb + p] for i < mr <= 3, j < nr <= 4; C's (i, j) at
   C[i * rs + j * cs]. */
#define TENSOR__DEFINE_GEMM_NT(isa, TARGET, sfx, T, V, W, SET0, LOADU, MASKLOAD, MI, MASK, FMADD, ADD, HSUM) \
    TARGET static void tensor__gemm_ntk_##isa##_##sfx(int64_t kc, const T *A, int64_t lda, const T *B, int64_t ldb, T *C, \
                                                   int64_t rs, int64_t cs, int mr, int nr, int add) {  \
        V c00 = SET0(), c01 = c00, c02 = c00, c03 = c00, c10 = c00, c11 = c00, c12 = c00, c13 = c00;    \
        V c20 = c00, c21 = c00, c22 = c00, c23 = c00;                                                   \
        const T *a0 = A, *a1 = mr > 1 ? A + lda : A, *a2 = mr > 2 ? A + 2 * lda : A;                   \
        const T *b0 = B, *b1 = nr > 1 ? B + ldb : B, *b2 = nr > 2 ? B + 2 * ldb : B, *b3 = nr > 3 ? B + 3 * ldb : B; \
        int64_t p = 0;                                                                                  \
        if (mr == 1) { /* a matrix-vector product: memory-bound on B, so no work for rows 1 and 2, two  \
                          accumulators a column, and B's next columns asked for ahead of use */       \
            for (; p + 2 * W <= kc; p += 2 * W) {                                                       \
                V x0 = LOADU(a0 + p), x1 = LOADU(a0 + p + W);                                           \
                _mm_prefetch((const char *)(b0 + 4 * ldb + p), _MM_HINT_T0);                            \
                _mm_prefetch((const char *)(b2 + 4 * ldb + p), _MM_HINT_T0);                            \
                c00 = FMADD(x0, LOADU(b0 + p), c00); c10 = FMADD(x1, LOADU(b0 + p + W), c10);           \
                c01 = FMADD(x0, LOADU(b1 + p), c01); c11 = FMADD(x1, LOADU(b1 + p + W), c11);           \
                c02 = FMADD(x0, LOADU(b2 + p), c02); c12 = FMADD(x1, LOADU(b2 + p + W), c12);           \
                c03 = FMADD(x0, LOADU(b3 + p), c03); c13 = FMADD(x1, LOADU(b3 + p + W), c13);           \
            }                                                                                           \
            c00 = ADD(c00, c10); c01 = ADD(c01, c11); c02 = ADD(c02, c12); c03 = ADD(c03, c13);         \
            c10 = c11 = c12 = c13 = SET0();                                                             \
        }                                                                                               \
        for (; p + W <= kc; p += W) {                                                                   \
            V x0 = LOADU(a0 + p), x1 = LOADU(a1 + p), x2 = LOADU(a2 + p), y;                            \
            y = LOADU(b0 + p); c00 = FMADD(x0, y, c00); c10 = FMADD(x1, y, c10); c20 = FMADD(x2, y, c20); \
            y = LOADU(b1 + p); c01 = FMADD(x0, y, c01); c11 = FMADD(x1, y, c11); c21 = FMADD(x2, y, c21); \
            y = LOADU(b2 + p); c02 = FMADD(x0, y, c02); c12 = FMADD(x1, y, c12); c22 = FMADD(x2, y, c22); \
            y = LOADU(b3 + p); c03 = FMADD(x0, y, c03); c13 = FMADD(x1, y, c13); c23 = FMADD(x2, y, c23); \
        }                                                                                               \
        if (p < kc) { /* lanes past the end load as zeros */                                            \
            MI mask = MASK(kc - p);                                                                     \
            V x0 = MASKLOAD(a0 + p, mask), x1 = MASKLOAD(a1 + p, mask), x2 = MASKLOAD(a2 + p, mask), y;  \
            y = MASKLOAD(b0 + p, mask); c00 = FMADD(x0, y, c00); c10 = FMADD(x1, y, c10); c20 = FMADD(x2, y, c20); \
            y = MASKLOAD(b1 + p, mask); c01 = FMADD(x0, y, c01); c11 = FMADD(x1, y, c11); c21 = FMADD(x2, y, c21); \
            y = MASKLOAD(b2 + p, mask); c02 = FMADD(x0, y, c02); c12 = FMADD(x1, y, c12); c22 = FMADD(x2, y, c22); \
            y = MASKLOAD(b3 + p, mask); c03 = FMADD(x0, y, c03); c13 = FMADD(x1, y, c13); c23 = FMADD(x2, y, c23); \
        }                                                                                               \
        tensor__nt_out_##sfx(HSUM(c00, c01, c02, c03), C, cs, nr, add);                                 \
        if (mr > 1) tensor__nt_out_##sfx(HSUM(c10, c11, c12, c13), C + rs, cs, nr, add);                \
        if (mr > 2) tensor__nt_out_##sfx(HSUM(c20, c21, c22, c23), C + 2 * rs, cs, nr, add);            \
    }
#define TENSOR__NT_MASK_f32(rem) _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(rem)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
#define TENSOR__NT_MASK_f64(rem) _mm256_cmpgt_epi64(_mm256_set1_epi64x((long long)(rem)), _mm256_setr_epi64x(0, 1, 2, 3))
TENSOR__DEFINE_GEMM_NT(avx2, TENSOR__AVX2, f32, float, __m256, 8, _mm256_setzero_ps, _mm256_loadu_ps, _mm256_maskload_ps, __m256i,
                       TENSOR__NT_MASK_f32, _mm256_fmadd_ps, _mm256_add_ps, tensor__hsum4_f32)
TENSOR__DEFINE_GEMM_NT(avx2, TENSOR__AVX2, f64, double, __m256d, 4, _mm256_setzero_pd, _mm256_loadu_pd, _mm256_maskload_pd, __m256i,
                       TENSOR__NT_MASK_f64, _mm256_fmadd_pd, _mm256_add_pd, tensor__hsum4_f64)
#endif

#if TENSOR__GEMM_AVX512
#define TENSOR__AVX512 __attribute__((target("avx512f,avx2,fma")))
/* Tile of the AVX-512 kernels: MR rows of A broadcast against NV vectors of B (16 f32 / 8 f64 lanes
   each), MR x NV accumulators of the 32 zmm registers. */
#ifndef TENSOR__SGEMM512_MR
#define TENSOR__SGEMM512_MR 12
#endif
#ifndef TENSOR__SGEMM512_NV
#define TENSOR__SGEMM512_NV 2
#endif
#ifndef TENSOR__DGEMM512_MR
#define TENSOR__DGEMM512_MR 12
#endif
#ifndef TENSOR__DGEMM512_NV
#define TENSOR__DGEMM512_NV 2
#endif
#define TENSOR__SGEMM512_NR (16 * TENSOR__SGEMM512_NV)
#define TENSOR__DGEMM512_NR (8 * TENSOR__DGEMM512_NV)
#ifndef TENSOR__SGEMM512_MC
#define TENSOR__SGEMM512_MC 240
#endif
#ifndef TENSOR__SGEMM512_KC
#define TENSOR__SGEMM512_KC 256
#endif
#ifndef TENSOR__SGEMM512_NC
#define TENSOR__SGEMM512_NC 4096
#endif
#ifndef TENSOR__DGEMM512_MC
#define TENSOR__DGEMM512_MC 120
#endif
#ifndef TENSOR__DGEMM512_KC
#define TENSOR__DGEMM512_KC 256
#endif
#ifndef TENSOR__DGEMM512_NC
#define TENSOR__DGEMM512_NC 4096
#endif

/* The type's vector operations, named so one kernel body serves f32 and f64. */
#define TENSOR__Z_V_f32 __m512
#define TENSOR__Z_M_f32 __mmask16
#define TENSOR__Z_L_f32 16
#define TENSOR__Z_ZERO_f32 _mm512_setzero_ps
#define TENSOR__Z_SET1_f32 _mm512_set1_ps
#define TENSOR__Z_LOAD_f32 _mm512_load_ps
#define TENSOR__Z_LOADU_f32 _mm512_loadu_ps
#define TENSOR__Z_STORE_f32 _mm512_store_ps
#define TENSOR__Z_STOREU_f32 _mm512_storeu_ps
#define TENSOR__Z_FMADD_f32 _mm512_fmadd_ps
#define TENSOR__Z_ADD_f32 _mm512_add_ps
#define TENSOR__Z_MLOADU_f32 _mm512_maskz_loadu_ps
#define TENSOR__Z_MSTOREU_f32 _mm512_mask_storeu_ps
#define TENSOR__Z_V_f64 __m512d
#define TENSOR__Z_M_f64 __mmask8
#define TENSOR__Z_L_f64 8
#define TENSOR__Z_ZERO_f64 _mm512_setzero_pd
#define TENSOR__Z_SET1_f64 _mm512_set1_pd
#define TENSOR__Z_LOAD_f64 _mm512_load_pd
#define TENSOR__Z_LOADU_f64 _mm512_loadu_pd
#define TENSOR__Z_STORE_f64 _mm512_store_pd
#define TENSOR__Z_STOREU_f64 _mm512_storeu_pd
#define TENSOR__Z_FMADD_f64 _mm512_fmadd_pd
#define TENSOR__Z_ADD_f64 _mm512_add_pd
#define TENSOR__Z_MLOADU_f64 _mm512_maskz_loadu_pd
#define TENSOR__Z_MSTOREU_f64 _mm512_mask_storeu_pd

/* The micro-kernel body: c[i][v] += a[i] * B vector v for MR rows and NV vectors per k step (the
   loops have fixed trip counts and are unrolled, so c lives in registers and each broadcast of A
   folds into its FMAs as a memory operand); the first ROWS of the panel's MR rows are computed. LOADB(sfx, v) gives B vector v of this k step; STEPEND
   advances what it reads. Then the tile goes to C: full rows of unit column stride directly,
   the last vector of a narrower tile with a masked load/store; a C with a column stride through a
   buffer and the portable store. */
#define TENSOR__ZK_BODY(sfx, T, MR, ROWS, NV, LOADB, STEPEND)                                            \
    enum { L_ = TENSOR__Z_L_##sfx };                                                                    \
    TENSOR__Z_V_##sfx c[ROWS][NV];                                                                      \
    _Pragma("GCC unroll 32") for (int i = 0; i < ROWS; i++)                                               \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) c[i][v] = TENSOR__Z_ZERO_##sfx();          \
    if (cs == 1)                                                                                        \
        for (int i = 0; i < mr; i++) {                                                                  \
            _mm_prefetch((const char *)(C + i * rs), _MM_HINT_T0);                                      \
            _mm_prefetch((const char *)(C + i * rs + NV * L_ - 1), _MM_HINT_T0);                        \
        }                                                                                               \
    _Pragma("GCC unroll 4") for (int64_t p = 0; p < kc; p++) {                                          \
        TENSOR__Z_V_##sfx bv[NV];                                                                       \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) bv[v] = LOADB(sfx, v);                        \
        _Pragma("GCC unroll 32") for (int i = 0; i < ROWS; i++) {                                         \
            TENSOR__Z_V_##sfx av = TENSOR__Z_SET1_##sfx(a[i]);                                          \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) c[i][v] = TENSOR__Z_FMADD_##sfx(av, bv[v], c[i][v]); \
        }                                                                                               \
        a += MR;                                                                                        \
        STEPEND;                                                                                        \
    }                                                                                                   \
    if (cs == 1) {                                                                                      \
        _Pragma("GCC unroll 32") for (int i = 0; i < ROWS; i++) {                                         \
            if (i >= mr) break;                                                                         \
            T *cr = C + i * rs;                                                                         \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) {                                      \
                int lanes = nr - v * L_;                                                                \
                TENSOR__Z_V_##sfx x = c[i][v];                                                          \
                if (lanes >= L_) {                                                                      \
                    if (add) x = TENSOR__Z_ADD_##sfx(x, TENSOR__Z_LOADU_##sfx(cr + v * L_));            \
                    TENSOR__Z_STOREU_##sfx(cr + v * L_, x);                                             \
                } else if (lanes > 0) {                                                                 \
                    TENSOR__Z_M_##sfx mk = (TENSOR__Z_M_##sfx)((1u << lanes) - 1);                      \
                    if (add) x = TENSOR__Z_ADD_##sfx(x, TENSOR__Z_MLOADU_##sfx(mk, cr + v * L_));       \
                    TENSOR__Z_MSTOREU_##sfx(cr + v * L_, mk, x);                                        \
                }                                                                                       \
            }                                                                                           \
        }                                                                                               \
        return;                                                                                         \
    }                                                                                                   \
    T acc[ROWS * NV * L_];                                                                              \
    _Pragma("GCC unroll 32") for (int i = 0; i < ROWS; i++)                                               \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) TENSOR__Z_STOREU_##sfx(acc + (i * NV + v) * L_, c[i][v]); \
    _mm256_zeroupper(); /* before the SSE code of the portable store */                                 \
    tensor__gemm_store_##sfx(acc, NV * L_, C, rs, cs, mr, nr, add)

#define TENSOR__ZK_LOADB_PANEL(sfx, v) TENSOR__Z_LOAD_##sfx(b + (v) * TENSOR__Z_L_##sfx)
/* reads B in place and writes the packed panel on the way */
#define TENSOR__ZK_LOADB_SRC(sfx, v)                                                                     \
    (bx_ = TENSOR__Z_LOADU_##sfx(bsrc + (v) * TENSOR__Z_L_##sfx), TENSOR__Z_STORE_##sfx(b + (v) * TENSOR__Z_L_##sfx, bx_), bx_)
#define TENSOR__DEFINE_GEMM_KERNEL_AVX512(sfx, T, MR, NV)                                                \
    TENSOR__AVX512 static void tensor__gemm_kernel_avx512_##sfx(int64_t kc, const T *a, const T *b, T *C, int64_t rs, int64_t cs, \
                                                               int mr, int nr, int add) {               \
        TENSOR__ZK_BODY(sfx, T, MR, MR, NV, TENSOR__ZK_LOADB_PANEL, b += NV * L_);                      \
    }                                                                                                   \
    /* the same for a last panel of at most MR / 3 rows (a block of 64 rows: 5 full panels and 4    \
       rows; 64 x 784 x 256: 199 -> 216 GFLOP/s) */                                                     \
    TENSOR__AVX512 static void tensor__gemm_kernel_short_avx512_##sfx(int64_t kc, const T *a, const T *b, T *C, int64_t rs, int64_t cs, \
                                                                     int mr, int nr, int add) {         \
        TENSOR__ZK_BODY(sfx, T, MR, MR / 3, NV, TENSOR__ZK_LOADB_PANEL, b += NV * L_);                  \
    }                                                                                                   \
    /* the kernel that packs the B panel on its first pass (as the AVX2 one) */                        \
    TENSOR__AVX512 static void tensor__gemm_kernel_pack_avx512_##sfx(int64_t kc, const T *a, T *b, const T *bsrc, int64_t bs, T *C, \
                                                                    int64_t rs, int64_t cs, int mr, int nr, int add) { \
        TENSOR__Z_V_##sfx bx_;                                                                          \
        TENSOR__ZK_BODY(sfx, T, MR, MR, NV, TENSOR__ZK_LOADB_SRC,                                       \
                        (_mm_prefetch((const char *)(bsrc + TENSOR__GEMM_PF * bs), _MM_HINT_T0), b += NV * L_, bsrc += bs)); \
    }
TENSOR__DEFINE_GEMM_KERNEL_AVX512(f32, float, TENSOR__SGEMM512_MR, TENSOR__SGEMM512_NV)
TENSOR__DEFINE_GEMM_KERNEL_AVX512(f64, double, TENSOR__DGEMM512_MR, TENSOR__DGEMM512_NV)

/* Packing for the AVX-512 tiles. The portable loops for any layout and for the edge panels; for
   f32, the layouts of the bench's and the layers' products in registers: a row-major B copies
   NR floats per k step; A row-major (or B column-major), whose unit stride runs along k, goes
   through 8 x 8 transposes: 8 rows (zero rows past the panel's MR) by 8 steps of k, each step's
   lanes stored with a mask where the panel has fewer than 8 rows left. */
TENSOR__DEFINE_GEMM_PACK(f32_512, float, TENSOR__SGEMM512_MR, TENSOR__SGEMM512_NR)
TENSOR__DEFINE_GEMM_PACK(f64_512, double, TENSOR__DGEMM512_MR, TENSOR__DGEMM512_NR)
TENSOR__AVX512 static void tensor__gemm_pack_a_avx512_f32(float *dst, const void *A_, int64_t mc, int64_t kc, int64_t rs, int64_t cs) {
    const float *A = (const float *)A_;
    enum { MR = TENSOR__SGEMM512_MR };
    if (cs != 1) { tensor__gemm_pack_a_f32_512(dst, A, mc, kc, rs, cs); return; }
    for (int64_t i0 = 0; i0 < mc; i0 += MR, dst += MR * kc) {
        if (mc - i0 < MR) { tensor__gemm_pack_a_f32_512(dst, A + i0 * rs, mc - i0, kc, rs, cs); break; }
        const float *s = A + i0 * rs;
        int64_t p = 0;
        for (; p + 8 <= kc; p += 8)
            for (int r0 = 0; r0 < MR; r0 += 8) {
                int rows = MR - r0 < 8 ? MR - r0 : 8;
                __m256 r[8];
                for (int i = 0; i < 8; i++) r[i] = i < rows ? _mm256_loadu_ps(s + (r0 + i) * rs + p) : _mm256_setzero_ps();
                tensor__transpose8_f32(r);
                __mmask16 mk = (__mmask16)((1u << rows) - 1);
                for (int q = 0; q < 8; q++) _mm512_mask_storeu_ps(dst + (p + q) * MR + r0, mk, _mm512_castps256_ps512(r[q]));
            }
        for (; p < kc; p++)
            for (int i = 0; i < MR; i++) dst[p * MR + i] = s[i * rs + p];
    }
}
TENSOR__AVX512 static void tensor__gemm_pack_b_avx512_f32(float *dst, const void *B_, int64_t kc, int64_t nc, int64_t rs, int64_t cs) {
    const float *B = (const float *)B_;
    enum { NV = TENSOR__SGEMM512_NV, NR = TENSOR__SGEMM512_NR };
    int64_t full = nc - nc % NR;
    if (cs == 1) {
        for (int64_t j0 = 0; j0 < full; j0 += NR, dst += NR * kc)
            for (int64_t p = 0; p < kc; p++)
                for (int v = 0; v < NV; v++) _mm512_store_ps(dst + p * NR + 16 * v, _mm512_loadu_ps(B + p * rs + j0 + 16 * v));
    } else if (rs == 1) {
        for (int64_t j0 = 0; j0 < full; j0 += NR, dst += NR * kc) {
            const float *s = B + j0 * cs;
            int64_t p = 0;
            for (; p + 8 <= kc; p += 8)
                for (int h = 0; h < NR / 8; h++) {
                    __m256 r[8];
                    for (int c = 0; c < 8; c++) r[c] = _mm256_loadu_ps(s + (h * 8 + c) * cs + p);
                    tensor__transpose8_f32(r);
                    for (int q = 0; q < 8; q++) _mm256_store_ps(dst + (p + q) * NR + h * 8, r[q]);
                }
            for (; p < kc; p++)
                for (int c = 0; c < NR; c++) dst[p * NR + c] = s[c * cs + p];
        }
    } else {
        full = 0;
    }
    if (full < nc) tensor__gemm_pack_b_f32_512(dst, B + full * cs, kc, nc - full, rs, cs);
}

/* The unpacked A B^T tiles (as the AVX2 ones) with 16 f32 / 8 f64 lanes along k: each vector
   sum is first folded to 256 bits, then reduced as there. */
TENSOR__AVX512 static inline __m256 tensor__fold512_f32(__m512 a) {
    return _mm256_add_ps(_mm512_castps512_ps256(a), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
}
TENSOR__AVX512 static inline __m128 tensor__hsum4_512_f32(__m512 a, __m512 b, __m512 c, __m512 d) {
    return tensor__hsum4_f32(tensor__fold512_f32(a), tensor__fold512_f32(b), tensor__fold512_f32(c), tensor__fold512_f32(d));
}
TENSOR__AVX512 static inline __m256d tensor__fold512_f64(__m512d a) { return _mm256_add_pd(_mm512_castpd512_pd256(a), _mm512_extractf64x4_pd(a, 1)); }
TENSOR__AVX512 static inline __m256d tensor__hsum4_512_f64(__m512d a, __m512d b, __m512d c, __m512d d) {
    return tensor__hsum4_f64(tensor__fold512_f64(a), tensor__fold512_f64(b), tensor__fold512_f64(c), tensor__fold512_f64(d));
}
/* The tile, measured on the 64 x 256 x 784 product (GFLOP/s, one Zen 5 core): 3 x 4 171, 3 x 8 191,
   2 x 8 198, 2 x 12 181, 5 x 4 216, 6 x 4 210, 4 x 4 222; the packed path 172. */
#ifndef TENSOR__NT512_R
#define TENSOR__NT512_R 4
#endif
#ifndef TENSOR__NT512_C
#define TENSOR__NT512_C 4
#endif
/* C[i, j] (+)= sum_p A[i * lda + p] B[j * ldb + p] for i < mr <= R, j < nr <= C (C a multiple of 4):
   R x C accumulators, R + C loads per vector of k; missing rows and columns repeat the first. */
#define TENSOR__DEFINE_GEMM_NT512(sfx, T, R, CC)                                                         \
    TENSOR__AVX512 static void tensor__gemm_ntk_avx512_##sfx(int64_t kc, const T *A, int64_t lda, const T *B, int64_t ldb, T *C, \
                                                            int64_t rs, int64_t cs, int mr, int nr, int add) { \
        enum { L_ = TENSOR__Z_L_##sfx };                                                                \
        TENSOR__Z_V_##sfx c[R][CC], x[R], y;                                                            \
        const T *a[R], *b[CC];                                                                          \
        _Pragma("GCC unroll 16") for (int i = 0; i < R; i++) a[i] = A + (i < mr ? i : 0) * lda;         \
        _Pragma("GCC unroll 16") for (int j = 0; j < CC; j++) b[j] = B + (j < nr ? j : 0) * ldb;        \
        _Pragma("GCC unroll 16") for (int i = 0; i < R; i++)                                            \
            _Pragma("GCC unroll 16") for (int j = 0; j < CC; j++) c[i][j] = TENSOR__Z_ZERO_##sfx();     \
        int64_t p = 0;                                                                                  \
        for (; p + L_ <= kc; p += L_) {                                                                 \
            _Pragma("GCC unroll 16") for (int i = 0; i < R; i++) x[i] = TENSOR__Z_LOADU_##sfx(a[i] + p); \
            _Pragma("GCC unroll 16") for (int j = 0; j < CC; j++) {                                     \
                y = TENSOR__Z_LOADU_##sfx(b[j] + p);                                                    \
                _Pragma("GCC unroll 16") for (int i = 0; i < R; i++) c[i][j] = TENSOR__Z_FMADD_##sfx(x[i], y, c[i][j]); \
            }                                                                                           \
        }                                                                                               \
        if (p < kc) { /* lanes past the end load as zeros */                                            \
            TENSOR__Z_M_##sfx mk = (TENSOR__Z_M_##sfx)((1u << (kc - p)) - 1);                           \
            _Pragma("GCC unroll 16") for (int i = 0; i < R; i++) x[i] = TENSOR__Z_MLOADU_##sfx(mk, a[i] + p); \
            _Pragma("GCC unroll 16") for (int j = 0; j < CC; j++) {                                     \
                y = TENSOR__Z_MLOADU_##sfx(mk, b[j] + p);                                               \
                _Pragma("GCC unroll 16") for (int i = 0; i < R; i++) c[i][j] = TENSOR__Z_FMADD_##sfx(x[i], y, c[i][j]); \
            }                                                                                           \
        }                                                                                               \
        for (int i = 0; i < mr; i++)                                                                    \
            for (int j = 0; j < nr; j += 4)                                                             \
                tensor__nt_out_##sfx(tensor__hsum4_512_##sfx(c[i][j], c[i][j + 1], c[i][j + 2], c[i][j + 3]), C + i * rs + j * cs, cs, \
                                     nr - j < 4 ? nr - j : 4, add);                                     \
    }
TENSOR__DEFINE_GEMM_NT512(f32, float, TENSOR__NT512_R, TENSOR__NT512_C)
TENSOR__DEFINE_GEMM_NT512(f64, double, TENSOR__NT512_R, TENSOR__NT512_C)

/* bf16 operands, f32 results: vdpbf16ps multiplies two bf16 pairs per f32 lane and adds both
   products to the lane, so the packed panels hold k in pairs, each pair one 32-bit element:
   A panels [k/2][MR] of (a[i, 2p], a[i, 2p + 1]), B panels [k/2][NR] of (b[2p, j], b[2p + 1, j])
   (low half the even k; an odd k's last pair padded with zero). The f32 kernel's schedule runs on
   them: one 32-bit broadcast of A per row and pair feeds NV dot products; the kernel's kc counts
   pairs. KC counts k (512: the B panel is 32 KiB, as the f32 one). */
#define TENSOR__AVX512BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,avx2,fma")))
#ifndef TENSOR__BGEMM512_MR
#define TENSOR__BGEMM512_MR 12 /* at most 16: a panel's pair row is one masked store */
#endif
#define TENSOR__BGEMM512_NV 2
#define TENSOR__BGEMM512_NR (16 * TENSOR__BGEMM512_NV)
#ifndef TENSOR__BGEMM512_MC
#define TENSOR__BGEMM512_MC 240
#endif
#ifndef TENSOR__BGEMM512_KC
#define TENSOR__BGEMM512_KC 512
#endif
#ifndef TENSOR__BGEMM512_NC
#define TENSOR__BGEMM512_NC 4096
#endif
typedef int32_t tensor__i32a __attribute__((may_alias)); /* a packed pair, read where floats were declared */
#define TENSOR__Z_V_bf16 __m512
#define TENSOR__Z_M_bf16 __mmask16
#define TENSOR__Z_L_bf16 16
#define TENSOR__Z_ZERO_bf16 _mm512_setzero_ps
#define TENSOR__Z_SET1_bf16(x) _mm512_castsi512_ps(_mm512_set1_epi32(*(const tensor__i32a *)&(x)))
#define TENSOR__Z_LOAD_bf16 _mm512_load_ps
#define TENSOR__Z_LOADU_bf16 _mm512_loadu_ps
#define TENSOR__Z_STOREU_bf16 _mm512_storeu_ps
#define TENSOR__Z_FMADD_bf16(a, b, c) _mm512_dpbf16_ps((c), (__m512bh)_mm512_castps_si512(a), (__m512bh)_mm512_castps_si512(b))
#define TENSOR__Z_ADD_bf16 _mm512_add_ps
#define TENSOR__Z_MLOADU_bf16 _mm512_maskz_loadu_ps
#define TENSOR__Z_MSTOREU_bf16 _mm512_mask_storeu_ps
#define tensor__gemm_store_bf16 tensor__gemm_store_f32
TENSOR__AVX512BF16 static void tensor__gemm_kernel_avx512_bf16(int64_t kc, const float *a, const float *b, float *C, int64_t rs, int64_t cs, int mr,
                                                               int nr, int add) {
    TENSOR__ZK_BODY(bf16, float, TENSOR__BGEMM512_MR, TENSOR__BGEMM512_MR, TENSOR__BGEMM512_NV, TENSOR__ZK_LOADB_PANEL,
                    b += TENSOR__BGEMM512_NV * L_);
}
/* One pair: (lo, hi) of two bf16 (a missing one is zero). */
static inline uint32_t tensor__bf16_pair(const uint16_t *lo, const uint16_t *hi) { return (uint32_t)(lo ? *lo : 0) | (uint32_t)(hi ? *hi : 0) << 16; }
/* A (mc x kc, bf16) into [k/2][MR] pair panels: a row-major A's pairs are 32-bit elements along
   its rows, transposed 8 x 8 in registers (as the f32 packing); a column-major A's pair is two
   rows of A^T zero-extended and merged; the rest (edges, odd k's last pair) one pair at a time. */
TENSOR__AVX512BF16 static void tensor__gemm_pack_a_bf16(float *dst_, const void *src, int64_t mc, int64_t kc, int64_t rs, int64_t cs) {
    const int64_t MR = TENSOR__BGEMM512_MR;
    tensor__i32a *dst = (tensor__i32a *)(void *)dst_;
    const uint16_t *A = (const uint16_t *)src;
    int64_t ks = (kc + 1) / 2, kf = kc / 2; /* pairs, whole pairs */
    for (int64_t i0 = 0; i0 < mc; i0 += MR, dst += MR * ks) {
        int64_t rows = mc - i0 < MR ? mc - i0 : MR, p = 0;
        const uint16_t *s = A + i0 * rs;
        if (rows == MR && cs == 1) {
            for (; p + 8 <= kf; p += 8)
                for (int r0 = 0; r0 < MR; r0 += 8) {
                    int n8 = MR - r0 < 8 ? MR - r0 : 8;
                    __m256 r[8];
                    for (int i = 0; i < 8; i++) r[i] = i < n8 ? _mm256_loadu_ps((const float *)(const void *)(s + (r0 + i) * rs + 2 * p)) : _mm256_setzero_ps();
                    tensor__transpose8_f32(r);
                    for (int q = 0; q < 8; q++) _mm512_mask_storeu_ps((void *)(dst + (p + q) * MR + r0), (__mmask16)((1u << n8) - 1), _mm512_castps256_ps512(r[q]));
                }
        } else if (rows == MR && rs == 1) {
            const __mmask16 mk = (__mmask16)((1u << MR) - 1);
            for (; p < kf; p++) {
                __m512i lo = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mk, s + 2 * p * cs));
                __m512i hi = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mk, s + (2 * p + 1) * cs));
                _mm512_mask_storeu_epi32((void *)(dst + p * MR), mk, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
            }
        }
        for (; p < ks; p++)
            for (int64_t r = 0; r < MR; r++)
                dst[p * MR + r] = (int32_t)(r < rows ? tensor__bf16_pair(s + r * rs + 2 * p * cs, 2 * p + 1 < kc ? s + r * rs + (2 * p + 1) * cs : NULL) : 0);
    }
}
/* B (kc x nc, bf16) into [k/2][NR] pair panels: a row-major B's rows 2p and 2p + 1 zero-extended
   and merged, 16 columns at a time (masked: the edge panel's missing columns load as zeros); a
   column-major B's pairs are 32-bit elements down its columns, transposed 8 x 8. */
TENSOR__AVX512BF16 static void tensor__gemm_pack_b_bf16(float *dst_, const void *src, int64_t kc, int64_t nc, int64_t rs, int64_t cs) {
    const int64_t NR = TENSOR__BGEMM512_NR;
    tensor__i32a *dst = (tensor__i32a *)(void *)dst_;
    const uint16_t *B = (const uint16_t *)src;
    int64_t ks = (kc + 1) / 2, kf = kc / 2;
    for (int64_t j0 = 0; j0 < nc; j0 += NR, dst += NR * ks) {
        int64_t cols = nc - j0 < NR ? nc - j0 : NR, p = 0;
        const uint16_t *s = B + j0 * cs;
        if (cs == 1) {
            for (; p < kf; p++)
                for (int v = 0; v < NR / 16; v++) {
                    int64_t lanes = cols - 16 * v;
                    __mmask16 mk = (__mmask16)(lanes >= 16 ? 0xffffu : lanes > 0 ? (1u << lanes) - 1 : 0);
                    __m512i lo = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mk, s + 2 * p * rs + 16 * v));
                    __m512i hi = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mk, s + (2 * p + 1) * rs + 16 * v));
                    _mm512_storeu_si512((void *)(dst + p * NR + 16 * v), _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
                }
        } else if (cols == NR && rs == 1) {
            for (; p + 8 <= kf; p += 8)
                for (int h = 0; h < NR / 8; h++) {
                    __m256 r[8];
                    for (int c = 0; c < 8; c++) r[c] = _mm256_loadu_ps((const float *)(const void *)(s + (h * 8 + c) * cs + 2 * p));
                    tensor__transpose8_f32(r);
                    for (int q = 0; q < 8; q++) _mm256_storeu_ps((float *)(void *)(dst + (p + q) * NR + h * 8), r[q]);
                }
        }
        for (; p < ks; p++)
            for (int64_t c = 0; c < NR; c++)
                dst[p * NR + c] = (int32_t)(c < cols ? tensor__bf16_pair(s + c * cs + 2 * p * rs, 2 * p + 1 < kc ? s + c * cs + (2 * p + 1) * rs : NULL) : 0);
    }
}
#endif

/* Whether the AVX2+FMA kernels run: when the SIMD layer chose avx2 or avx512 (which needs avx2 and
   fma too), so TENSOR_SIMD=sse2 or scalar, and TENSOR_NO_SIMD, also choose the portable kernels. */
static TENSOR__UNUSED bool tensor__gemm_has_avx2(void) {
#if TENSOR__GEMM_AVX2 && TENSOR__SIMD_X86
    const tensor__simd_isa *v = tensor__simd();
    return v && v->width >= 8;
#else
    return false;
#endif
}

/* Whether the AVX-512 kernels run: when the SIMD layer chose avx512 (TENSOR_SIMD=avx2 and lower
   choose the AVX2 or portable ones). */
static TENSOR__UNUSED bool tensor__gemm_has_avx512(void) {
#if TENSOR__GEMM_AVX512 && TENSOR__SIMD_X86
    const tensor__simd_isa *v = tensor__simd();
    return v && v->width >= 16;
#else
    return false;
#endif
}

/* Whether the bf16 kernel runs: the AVX-512 kernels run and the CPU has avx512_bf16. */
static TENSOR__UNUSED bool tensor__gemm_has_bf16(void) {
#if TENSOR__GEMM_AVX512 && TENSOR__SIMD_X86
    return tensor__gemm_has_avx512() && tensor__simd()->bf16dot;
#else
    return false;
#endif
}

/* d[i] = s[i * stride] (elements of dtype sd) converted to T, i < n: a contiguous f16 / bf16 run
   through the SIMD rows, the rest one by one. */
static void tensor__gemm_cvt_f32(float *d, const char *s, tensor_dtype sd, int64_t n, int64_t stride) {
    const uint16_t *h = (const uint16_t *)(const void *)s;
    bool bf16 = sd == TENSOR_BF16;
    if (sd == TENSOR_F32) for (int64_t i = 0; i < n; i++) d[i] = ((const float *)(const void *)s)[i * stride];
    else if (stride == 1) tensor__half_to_f32(d, h, n, bf16);
    else if (bf16) for (int64_t i = 0; i < n; i++) d[i] = tensor__bf16_to_f32(h[i * stride]);
    else for (int64_t i = 0; i < n; i++) d[i] = tensor__f16_to_f32(h[i * stride]);
}
static TENSOR__UNUSED void tensor__gemm_cvt_f64(double *d, const char *s, tensor_dtype sd, int64_t n, int64_t stride) {
    int64_t e = (int64_t)tensor__dtype_sizes[sd];
    for (int64_t i = 0; i < n; i++) d[i] = tensor__load_f64(s + i * stride * e, sd);
}

/* The threads a GEMM may use: one inside a parallel region (a nested split would run inline). */
static int64_t tensor__gemm_threads(void) {
#if TENSOR__HAVE_THREADS
    if (tensor__in_parallel) return 1;
#endif
    return tensor_get_num_threads();
}

/* The count of finished slices the threads of one GEMM wait on by spinning: whoever they wait
   for claimed its slice and is running, so waits are short; after a while they yield the core, in
   case the one they wait for shares it. */
#if TENSOR__HAVE_THREADS
#if defined(__x86_64__) || defined(__i386__)
#define TENSOR__GEMM_PAUSE() __builtin_ia32_pause()
#else
#define TENSOR__GEMM_PAUSE() ((void)0)
#endif
static void tensor__gemm_wait_count(int *count, int n) {
    for (int spins = 0; __atomic_load_n(count, __ATOMIC_ACQUIRE) < n; spins++)
        if (spins < 256) TENSOR__GEMM_PAUSE(); else sched_yield();
}
#else
static void tensor__gemm_wait_count(int *count, int n) { (void)count; (void)n; }
#endif

#if TENSOR__GEMM_AVX2
#define TENSOR__GEMM_NT_DRIVER(sfx, T)                                                                   \
    /* The unpacked A row-major x B column-major path (AVX2): column slices of 4-column tiles are    \
       claimed like the packed path's; per slice the loops run over MB-row blocks of A (kept in L2), \
       KD-blocks of k and the slice's tiles, whose KD x 4 columns of B stay in L1 while the 3-row   \
       tiles of the block pass. */                                                                       \
    typedef struct {                                                                                    \
        const tensor__gemm_prob_##sfx *q;                                                               \
        int64_t tasks;                                                                                  \
        int next_task, done;                                                                            \
    } tensor__gemm_ntjob_##sfx;                                                                         \
    static void tensor__gemm_nt_task_##sfx(int64_t begin, int64_t end, void *ctx) {                     \
        (void)begin; (void)end;                                                                         \
        tensor__gemm_ntjob_##sfx *j = (tensor__gemm_ntjob_##sfx *)ctx;                                  \
        const tensor__gemm_prob_##sfx *q = j->q;                                                        \
        const int64_t TR = q->im->NTR, TC = q->im->NTC; /* the tile */                                  \
        int64_t tiles = (q->n + TC - 1) / TC;                                                           \
        for (;;) {                                                                                      \
            int64_t t = TENSOR__GEMM_CLAIM(&j->next_task);                                              \
            if (t >= j->tasks) break;                                                                   \
            int64_t n0 = tiles * t / j->tasks * TC, n1 = tiles * (t + 1) / j->tasks * TC;               \
            if (n1 > q->n) n1 = q->n;                                                                   \
            for (int64_t i0 = 0; i0 < q->m; i0 += TENSOR__GEMM_NT_MB)                                   \
                for (int64_t pc = 0; pc < q->k; pc += q->kb) {                                          \
                    int64_t kc = q->k - pc < q->kb ? q->k - pc : q->kb, i1 = q->m - i0 < TENSOR__GEMM_NT_MB ? q->m : i0 + TENSOR__GEMM_NT_MB; \
                    int addk = q->add || pc > 0;                                                        \
                    for (int64_t jt = n0; jt < n1; jt += TC)                                            \
                        for (int64_t it = i0; it < i1; it += TR) {                                      \
                            const T *a = (const T *)(const void *)q->A + it * q->a_rs + pc;             \
                            const T *b = (const T *)(const void *)q->B + jt * q->b_cs + pc;             \
                            T *c = q->C + it * q->c_rs + jt * q->c_cs;                                  \
                            q->im->ntk(kc, a, q->a_rs, b, q->b_cs, c, q->c_rs, q->c_cs, (int)(i1 - it < TR ? i1 - it : TR), \
                                       (int)(n1 - jt < TC ? n1 - jt : TC), addk);                       \
                        }                                                                               \
                }                                                                                       \
            TENSOR__GEMM_CLAIM(&j->done);                                                               \
        }                                                                                               \
        tensor__gemm_wait_count(&j->done, (int)j->tasks);                                               \
    }                                                                                                   \
    static void tensor__gemm_nt_##sfx(tensor__gemm_prob_##sfx *q) {                                     \
        tensor__gemm_ntjob_##sfx j;                                                                     \
        memset(&j, 0, sizeof j);                                                                        \
        j.q = q;                                                                                        \
        q->kb = (q->k + (q->k + TENSOR__GEMM_NT_KD / (int64_t)sizeof(T) - 1) / (TENSOR__GEMM_NT_KD / (int64_t)sizeof(T)) - 1) / \
                ((q->k + TENSOR__GEMM_NT_KD / (int64_t)sizeof(T) - 1) / (TENSOR__GEMM_NT_KD / (int64_t)sizeof(T))); \
        int64_t tiles = (q->n + q->im->NTC - 1) / q->im->NTC, threads = tensor__gemm_threads();         \
        int64_t work = tensor__work_mul(tensor__work_mul(q->m, q->n), q->k); /* may overflow */         \
        if (threads > work / TENSOR__GEMM_PAR_MIN) threads = work / TENSOR__GEMM_PAR_MIN;               \
        if (threads > tiles) threads = tiles;                                                           \
        if (threads < 1) threads = 1;                                                                   \
        j.tasks = threads;                                                                              \
        if (threads > 1) {                                                                              \
            int64_t t = work / (TENSOR__GEMM_PAR_MIN / 2);                                              \
            t = t < 4 * threads ? t : 4 * threads;                                                      \
            j.tasks = t < threads ? threads : t > tiles ? tiles : t;                                    \
            tensor__parallel_for(threads, 1, tensor__gemm_nt_task_##sfx, &j);                           \
        } else {                                                                                        \
            tensor__gemm_nt_task_##sfx(0, 1, &j);                                                       \
        }                                                                                               \
    }
#else
#define TENSOR__GEMM_NT_DRIVER(sfx, T)
#endif

/* The problem of one GEMM call: C[m, n] (+)= A[m, k] B[k, n], element (i, j) of C at
   C[i * c_rs + j * c_cs], and the kernel and packing routines chosen for this CPU. A and B hold
   elements of dtype src (esz bytes each): T, or f16 / bf16 for the f32 families. */
#define TENSOR__DEFINE_GEMM_DRIVER(sfx, T)                                                               \
    typedef struct {                                                                                    \
        const tensor__gemm_impl_##sfx *im;                                                              \
        int64_t m, n, k, kb, a_rs, a_cs, b_rs, b_cs, c_rs, c_cs, esz;                                   \
        const char *A, *B;                                                                              \
        T *C;                                                                                           \
        tensor_dtype src;                                                                               \
        int add;                                                                                        \
    } tensor__gemm_prob_##sfx;                                                                          \
    static int64_t tensor__gemm_round_##sfx(int64_t x, int64_t unit) { return (x + unit - 1) / unit * unit; } \
    /* Packs A (rows x cols = mc x kc, MR-row panels) or B (kc x nc, NR-column panels, when is_b)    \
       with the family's routine where it reads src; else (f16 / bf16 into an f32 family) converts   \
       a panel by ch steps of k at a time into buf, laid out as the operand is (unit stride along k  \
       or along the panel), so the family's fast layouts apply, and packs that. */                   \
    static void tensor__gemm_pack_##sfx(const tensor__gemm_prob_##sfx *q, bool is_b, T *dst, const char *src, int64_t rows, int64_t cols, \
                                        int64_t rs, int64_t cs) {                                       \
        const tensor__gemm_impl_##sfx *im = q->im;                                                      \
        tensor__##sfx##_pack_fn pack = is_b ? im->pack_b : im->pack_a;                                  \
        if (q->src == im->in) { pack(dst, src, rows, cols, rs, cs); return; }                           \
        enum { BUF = 2048 };                                                                            \
        T buf[BUF];                                                                                     \
        int64_t P = is_b ? im->NR : im->MR, K = is_b ? rows : cols, len = is_b ? cols : rows;          \
        int64_t ks = is_b ? rs : cs, ps = is_b ? cs : rs; /* strides along k and along the panel */    \
        int64_t ch = BUF / P > 8 ? BUF / P / 8 * 8 : BUF / P;                                           \
        for (int64_t i0 = 0; i0 < len; i0 += P, dst += P * K) {                                         \
            int64_t w = len - i0 < P ? len - i0 : P;                                                    \
            for (int64_t p0 = 0; p0 < K; p0 += ch) {                                                    \
                int64_t kk = K - p0 < ch ? K - p0 : ch, bk, bp; /* buf's strides along k, the panel */  \
                const char *s0 = src + (i0 * ps + p0 * ks) * q->esz;                                    \
                if (ks == 1) { bk = 1; bp = kk; for (int64_t r = 0; r < w; r++) tensor__gemm_cvt_##sfx(buf + r * kk, s0 + r * ps * q->esz, q->src, kk, 1); } \
                else { bk = w; bp = 1; for (int64_t p = 0; p < kk; p++) tensor__gemm_cvt_##sfx(buf + p * w, s0 + p * ks * q->esz, q->src, w, ps); } \
                if (is_b) pack(dst + p0 * P, buf, kk, w, bk, bp);                                       \
                else pack(dst + p0 * P, buf, w, kk, bp, bk);                                            \
            }                                                                                           \
        }                                                                                               \
    }                                                                                                   \
    /* The blocked loops over rows [m0, m1) and columns [n0, n1) of C; pa and pb hold one packed A    \
       block and one packed B block, KP steps of k per packed element (2 for bf16 pairs). */        \
    static void tensor__gemm_serial_##sfx(const tensor__gemm_prob_##sfx *q, int64_t m0, int64_t m1, int64_t n0, int64_t n1, \
                                          T *pa, T *pb) {                                               \
        const tensor__gemm_impl_##sfx *im = q->im;                                                      \
        const int64_t MR = im->MR, NR = im->NR, MC = im->MC, NC = im->NC, KP = im->KP, e = q->esz;      \
        int64_t k = q->k, kb = q->kb;                                                                   \
        for (int64_t jc = n0; jc < n1; jc += NC) {                                                      \
            int64_t nc = n1 - jc < NC ? n1 - jc : NC;                                                   \
            for (int64_t pc = 0; pc < k; pc += kb) {                                                    \
                int64_t kc = k - pc < kb ? k - pc : kb, ks = (kc + KP - 1) / KP;                        \
                int addk = q->add || pc > 0;                                                            \
                /* with a packing kernel, the full panels of a unit-column-stride B are packed by     \
                   their first use; the edge panel here */                                              \
                bool fuse = im->kern_pack && q->b_cs == 1 && q->src == im->in;                          \
                int64_t nfull = nc - nc % NR;                                                           \
                const char *bsrc = q->B + (pc * q->b_rs + jc * q->b_cs) * e;                            \
                if (!fuse) tensor__gemm_pack_##sfx(q, true, pb, bsrc, kc, nc, q->b_rs, q->b_cs);        \
                if (fuse && nfull < nc) im->pack_b(pb + nfull * ks, bsrc + nfull * e, kc, nc - nfull, q->b_rs, 1); \
                for (int64_t ic = m0; ic < m1; ic += MC) {                                              \
                    int64_t mc = m1 - ic < MC ? m1 - ic : MC;                                           \
                    const T *ablk = pa;                                                                 \
                    tensor__gemm_pack_##sfx(q, false, pa, q->A + (ic * q->a_rs + pc * q->a_cs) * e, mc, kc, q->a_rs, q->a_cs); \
                    for (int64_t jr = 0; jr < nc; jr += NR) {                                           \
                        int nr = (int)(nc - jr < NR ? nc - jr : NR);                                    \
                        const T *bp = pb + jr * ks;                                                     \
                        T *cc = q->C + ic * q->c_rs + (jc + jr) * q->c_cs;                              \
                        int64_t ir = 0;                                                                 \
                        if (fuse && ic == m0 && jr < nfull) {                                           \
                            im->kern_pack(kc, ablk, pb + jr * kc, (const T *)(const void *)bsrc + jr, q->b_rs, cc, q->c_rs, q->c_cs, \
                                         (int)(mc < MR ? mc : MR), nr, addk);                           \
                            ir = MR;                                                                    \
                        }                                                                               \
                        for (; ir < mc; ir += MR) {                                                     \
                            int mr = (int)(mc - ir < MR ? mc - ir : MR);                                \
                            (mr <= im->short_rows ? im->kern_short : im->kern)(ks, ablk + ir * ks, bp, cc + ir * q->c_rs, q->c_rs, \
                                                                               q->c_cs, mr, nr, addk);  \
                        }                                                                               \
                    }                                                                                   \
                }                                                                                       \
            }                                                                                           \
        }                                                                                               \
    }                                                                                                   \
    /* The split dim (n when split_n, else m) is cut at panel boundaries into `tasks` slices. Each  \
       call of the task function is one thread taking part: it takes the next scratch slot, then    \
       claims slices until none are left, so a thread that starts late takes fewer, and then waits  \
       (spinning: at most one slice) until every slice is done, so the caller rarely sleeps on the \
       pool. Each thread packs the operand every slice needs in full (A when split_n) itself: an   \
       earlier scheme packed a small one once, shared, with the slices waiting on flags for its    \
       parts, and was slower at every shape measured here (256^3 on 2 threads 184 -> 167 us). */   \
    typedef struct {                                                                                    \
        const tensor__gemm_prob_##sfx *q;                                                               \
        T *scratch;                                                                                     \
        int64_t pa_size, per_slot, tasks;                                                               \
        int split_n, next_slot, next_task, done;                                                        \
    } tensor__gemm_job_##sfx;                                                                           \
    static void tensor__gemm_task_##sfx(int64_t begin, int64_t end, void *ctx) {                        \
        (void)begin; (void)end;                                                                         \
        tensor__gemm_job_##sfx *j = (tensor__gemm_job_##sfx *)ctx;                                      \
        const tensor__gemm_prob_##sfx *q = j->q;                                                        \
        int64_t unit = j->split_n ? q->im->NR : q->im->MR, len = j->split_n ? q->n : q->m;                            \
        int64_t panels = (len + unit - 1) / unit;                                                       \
        int slot = TENSOR__GEMM_CLAIM(&j->next_slot);                                                   \
        T *pa = j->scratch + slot * j->per_slot, *pb = pa + j->pa_size;                                 \
        for (;;) {                                                                                      \
            int64_t t = TENSOR__GEMM_CLAIM(&j->next_task);                                              \
            if (t >= j->tasks) break;                                                                   \
            int64_t lo = panels * t / j->tasks * unit, hi = panels * (t + 1) / j->tasks * unit;         \
            if (hi > len) hi = len;                                                                     \
            if (lo < hi) {                                                                              \
                if (j->split_n) tensor__gemm_serial_##sfx(q, 0, q->m, lo, hi, pa, pb);                   \
                else tensor__gemm_serial_##sfx(q, lo, hi, 0, q->n, pa, pb);                              \
            }                                                                                           \
            TENSOR__GEMM_CLAIM(&j->done);                                                               \
        }                                                                                               \
        tensor__gemm_wait_count(&j->done, (int)j->tasks);                                               \
    }                                                                                                   \
    TENSOR__GEMM_NT_DRIVER(sfx, T)                                                                      \
    /* The fraction of a tile grid's work that lands inside an m x n result. */                        \
    static double tensor__gemm_fill_##sfx(int64_t m, int64_t n, int64_t MR, int64_t NR) {               \
        return (double)(m * n) / (double)(tensor__gemm_round_##sfx(m, MR) * tensor__gemm_round_##sfx(n, NR)); \
    }                                                                                                   \
    /* false when there is no memory for the packing panels (nothing is written then: a fallback    \
       loop would round differently, a silent change of the result) */                              \
    static bool tensor__gemm_##sfx##s(tensor_dtype src, int64_t m, int64_t n, int64_t k, const void *A, int64_t a_rs, int64_t a_cs, \
                                      const void *B, int64_t b_rs, int64_t b_cs, T *C, int64_t c_rs, int64_t c_cs, bool add) { \
        if (m <= 0 || n <= 0) return true;                                                              \
        if (k <= 0) {                                                                                   \
            if (!add)                                                                                   \
                for (int64_t i = 0; i < m; i++)                                                         \
                    for (int64_t q = 0; q < n; q++) C[i * c_rs + q * c_cs] = 0;                         \
            return true;                                                                                \
        }                                                                                               \
        tensor__gemm_prob_##sfx q;                                                                      \
        q.im = tensor__gemm_pick_##sfx(src);                                                            \
        const int64_t MR = q.im->MR, NR = q.im->NR, MC = q.im->MC, KC = q.im->KC, NC = q.im->NC, KP = q.im->KP; \
        /* C^T = B^T A^T: the transposed problem when its tiles fill much better (a narrow n, such    \
           as a matrix-vector product), its tiles then written with C's strides swapped */            \
        if (n < NR && tensor__gemm_fill_##sfx(n, m, MR, NR) > 1.25 * tensor__gemm_fill_##sfx(m, n, MR, NR)) {     \
            const void *t = A; A = B; B = t;                                                            \
            int64_t x = m; m = n; n = x;                                                                \
            x = a_rs; a_rs = b_cs; b_cs = x;                                                            \
            x = a_cs; a_cs = b_rs; b_rs = x;                                                            \
            x = c_rs; c_rs = c_cs; c_cs = x;                                                            \
        }                                                                                               \
        q.m = m; q.n = n; q.k = k; q.A = (const char *)A; q.B = (const char *)B; q.C = C; q.add = add;  \
        q.src = src; q.esz = (int64_t)tensor__dtype_sizes[src];                                         \
        q.a_rs = a_rs; q.a_cs = a_cs; q.b_rs = b_rs; q.b_cs = b_cs; q.c_rs = c_rs; q.c_cs = c_cs;       \
        TENSOR__GEMM_TRY_NT(sfx);                                                                       \
        /* k in equal blocks of at most KC (784 = 4 x 196, not 3 x 256 + 16: a thin last block      \
           would pay C's loads and stores for few multiply-adds) */                                    \
        q.kb = tensor__gemm_round_##sfx((k + (k + KC - 1) / KC - 1) / ((k + KC - 1) / KC), KP); /* whole pairs */ \
        tensor__gemm_job_##sfx j;                                                                       \
        memset(&j, 0, sizeof j);                                                                        \
        j.q = &q;                                                                                       \
        int64_t mp = (m + MR - 1) / MR, np = (n + NR - 1) / NR;                                         \
        int64_t work = tensor__work_mul(tensor__work_mul(m, n), k); /* m n k may overflow */            \
        int64_t threads = tensor__gemm_threads();                                                       \
        if (threads > work / TENSOR__GEMM_PAR_MIN) threads = work / TENSOR__GEMM_PAR_MIN;               \
        if (threads < 1) threads = 1;                                                                   \
        /* split the dim whose operand is cheaper to pack twice (n: each thread packs all of A) */      \
        j.split_n = np >= 2 && (n >= m || mp < 2);                                                      \
        int64_t cap = j.split_n ? np : mp;                                                              \
        if (threads > cap) threads = cap;                                                               \
        j.tasks = threads; /* one slice per thread */                                                   \
        /* each slot: an A block, then a B block (on a cache line, with some slack) */                  \
        int64_t line = 64 / (int64_t)sizeof(T), kc = ((k < KC ? k : KC) + KP - 1) / KP; /* packed steps */ \
        int64_t ms = j.split_n ? m : (mp + j.tasks - 1) / j.tasks * MR;                                 \
        int64_t ns = j.split_n ? (np + j.tasks - 1) / j.tasks * NR : n;                                 \
        int64_t asz = tensor__gemm_round_##sfx(ms < MC ? ms : MC, MR) * kc;                             \
        int64_t bsz = tensor__gemm_round_##sfx(ns < NC ? ns : NC, NR) * kc;                             \
        j.pa_size = tensor__gemm_round_##sfx(asz + 16, line);                                           \
        j.per_slot = j.pa_size + tensor__gemm_round_##sfx(bsz + 16, line);                              \
        size_t bytes = (size_t)(j.per_slot * threads) * sizeof(T);                                      \
        j.scratch = (T *)tensor__alloc_aligned(bytes);                                                  \
        if (!j.scratch) return false;                                                                   \
        if (threads > 1) tensor__parallel_for(threads, 1, tensor__gemm_task_##sfx, &j);                 \
        else tensor__gemm_task_##sfx(0, 1, &j);                                                         \
        tensor__free_aligned(j.scratch);                                                                \
        return true;                                                                                    \
    }

/* A row-major A and column-major B take the unpacked path where packing would cost the most
   against the multiply-adds: few rows of A (every packed B panel would serve few A panels: a
   linear layer's batch), few columns of B (up to a moderate m, whose rows stay in L2 while B's
   columns pass), or a matrix-vector product; k must be long enough to pay the lane sums. Measured
   here against the packed path: 64 x 256 x 784 106 vs 93 GFLOP/s, 1 x 512 x 512 30 vs 8; the
   packed path keeps 96 x 96 x 96 (95 vs 84) and 2048 x 64 x 1024 (97 vs 86). */
#if TENSOR__GEMM_AVX2
#define TENSOR__GEMM_TRY_NT(sfx)                                                                         \
    if (q.im->ntk && q.src == q.im->in && a_cs == 1 && b_rs == 1 &&                                     \
        ((k >= 16 && (m <= 4 || n <= 4)) || (k >= 128 && (m <= 64 || (n <= 64 && m <= 512))))) {        \
        tensor__gemm_nt_##sfx(&q);                                                                      \
        return true;                                                                                    \
    }
#else
#define TENSOR__GEMM_TRY_NT(sfx)
#endif
#ifndef TENSOR__GEMM_NT_MB
#define TENSOR__GEMM_NT_MB 128 /* rows of A per block: 128 x KD bytes in L2 */
#endif
#ifndef TENSOR__GEMM_NT_KD
#define TENSOR__GEMM_NT_KD 4096 /* bytes of k per block: 4 columns of B in 16 KiB of L1 */
#endif

/* Claims the next index of a counter shared by the threads of one GEMM (the count of finished
   slices too: acq_rel, so whoever sees the count sees the slices' results). */
#if TENSOR__HAVE_THREADS
#define TENSOR__GEMM_CLAIM(p) __atomic_fetch_add(p, 1, __ATOMIC_ACQ_REL)
#else
#define TENSOR__GEMM_CLAIM(p) ((*(p))++)
#endif

typedef tensor__sgemm_kernel_fn tensor__f32_kernel_fn;
typedef tensor__dgemm_kernel_fn tensor__f64_kernel_fn;
typedef tensor__spack_fn tensor__f32_pack_fn;
typedef tensor__dpack_fn tensor__f64_pack_fn;
/* A kernel family, chosen once per call (tensor__gemm_pick_*): its micro-kernel, the kernel that
   packs B on its first pass (or NULL), the packing routines, the unpacked A B^T tile kernel (or
   NULL: no unpacked path), and the tile (MR x NR) and block sizes the driver loops by. */
#define TENSOR__DEFINE_GEMM_IMPL(sfx, T)                                                                 \
    typedef void (*tensor__##sfx##_kpack_fn)(int64_t kc, const T *a, T *b, const T *bsrc, int64_t bs, T *C, int64_t rs, int64_t cs, \
                                             int mr, int nr, int add);                                  \
    typedef void (*tensor__##sfx##_ntk_fn)(int64_t kc, const T *A, int64_t lda, const T *B, int64_t ldb, T *C, int64_t rs, int64_t cs, \
                                           int mr, int nr, int add);                                    \
    typedef struct {                                                                                    \
        const char *name;                                                                               \
        tensor__##sfx##_kernel_fn kern;                                                                 \
        tensor__##sfx##_kpack_fn kern_pack;                                                             \
        tensor__##sfx##_pack_fn pack_a, pack_b;                                                         \
        tensor__##sfx##_ntk_fn ntk;                                                                     \
        tensor__##sfx##_kernel_fn kern_short; /* for a panel of at most short_rows rows (or NULL) */    \
        int64_t short_rows;                                                                             \
        int64_t MR, NR, MC, KC, NC;                                                                     \
        int64_t NTR, NTC; /* the tile of ntk */                                                         \
        tensor_dtype in; /* the dtype the packing routines read (other inputs are converted first) */   \
        int64_t KP;      /* steps of k per packed element: 2 where the kernel takes k in pairs (bf16) */ \
    } tensor__gemm_impl_##sfx;
TENSOR__DEFINE_GEMM_IMPL(f32, float)
TENSOR__DEFINE_GEMM_IMPL(f64, double)

static const tensor__gemm_impl_f32 tensor__gemm_portable_f32 = {"portable", tensor__gemm_kernel_scalar_f32, NULL, tensor__gemm_pack_a_f32_6x16,
                                                                tensor__gemm_pack_b_f32_6x16, NULL, NULL, 0, TENSOR__SGEMM_MR, TENSOR__SGEMM_NR,
                                                                TENSOR__SGEMM_MC, TENSOR__SGEMM_KC, TENSOR__SGEMM_NC, 3, 4, TENSOR_F32, 1};
static const tensor__gemm_impl_f64 tensor__gemm_portable_f64 = {"portable", tensor__gemm_kernel_scalar_f64, NULL, tensor__gemm_pack_a_f64_6x8,
                                                                tensor__gemm_pack_b_f64_6x8, NULL, NULL, 0, TENSOR__DGEMM_MR, TENSOR__DGEMM_NR,
                                                                TENSOR__DGEMM_MC, TENSOR__DGEMM_KC, TENSOR__DGEMM_NC, 3, 4, TENSOR_F64, 1};
#if TENSOR__GEMM_AVX2
static const tensor__gemm_impl_f32 tensor__gemm_avx2_f32 = {"avx2+fma", tensor__gemm_kernel_avx2_f32, tensor__gemm_kernel_pack_avx2_f32,
                                                            tensor__gemm_pack_a_avx2_f32, tensor__gemm_pack_b_avx2_f32, tensor__gemm_ntk_avx2_f32, NULL, 0,
                                                            TENSOR__SGEMM_MR, TENSOR__SGEMM_NR, TENSOR__SGEMM_MC, TENSOR__SGEMM_KC, TENSOR__SGEMM_NC, 3, 4, TENSOR_F32, 1};
static const tensor__gemm_impl_f64 tensor__gemm_avx2_f64 = {"avx2+fma", tensor__gemm_kernel_avx2_f64, NULL, tensor__gemm_pack_a_f64_6x8,
                                                            tensor__gemm_pack_b_f64_6x8, tensor__gemm_ntk_avx2_f64, NULL, 0, TENSOR__DGEMM_MR, TENSOR__DGEMM_NR,
                                                            TENSOR__DGEMM_MC, TENSOR__DGEMM_KC, TENSOR__DGEMM_NC, 3, 4, TENSOR_F64, 1};
#endif
#if TENSOR__GEMM_AVX512
static const tensor__gemm_impl_f32 tensor__gemm_avx512_f32 = {"avx512f", tensor__gemm_kernel_avx512_f32, tensor__gemm_kernel_pack_avx512_f32,
                                                              tensor__gemm_pack_a_avx512_f32, tensor__gemm_pack_b_avx512_f32, tensor__gemm_ntk_avx512_f32,
                                                              tensor__gemm_kernel_short_avx512_f32, TENSOR__SGEMM512_MR / 3,
                                                              TENSOR__SGEMM512_MR, TENSOR__SGEMM512_NR, TENSOR__SGEMM512_MC, TENSOR__SGEMM512_KC,
                                                              TENSOR__SGEMM512_NC, TENSOR__NT512_R, TENSOR__NT512_C, TENSOR_F32, 1};
static const tensor__gemm_impl_f64 tensor__gemm_avx512_f64 = {"avx512f", tensor__gemm_kernel_avx512_f64, tensor__gemm_kernel_pack_avx512_f64,
                                                              tensor__gemm_pack_a_f64_512, tensor__gemm_pack_b_f64_512, tensor__gemm_ntk_avx512_f64,
                                                              tensor__gemm_kernel_short_avx512_f64, TENSOR__DGEMM512_MR / 3,
                                                              TENSOR__DGEMM512_MR, TENSOR__DGEMM512_NR, TENSOR__DGEMM512_MC, TENSOR__DGEMM512_KC,
                                                              TENSOR__DGEMM512_NC, TENSOR__NT512_R, TENSOR__NT512_C, TENSOR_F64, 1};
static const tensor__gemm_impl_f32 tensor__gemm_avx512_bf16 = {"avx512bf16", tensor__gemm_kernel_avx512_bf16, NULL, tensor__gemm_pack_a_bf16,
                                                               tensor__gemm_pack_b_bf16, NULL, NULL, 0, TENSOR__BGEMM512_MR, TENSOR__BGEMM512_NR,
                                                               TENSOR__BGEMM512_MC, TENSOR__BGEMM512_KC, TENSOR__BGEMM512_NC, 0, 0, TENSOR_BF16, 2};
#endif
/* The family for this CPU and the SIMD layer's choice (TENSOR_SIMD=avx2 gives the AVX2 one,
   sse2 or scalar the portable one). */
#define TENSOR__DEFINE_GEMM_PICK(sfx)                                                                    \
    static const tensor__gemm_impl_##sfx *tensor__gemm_pick_##sfx(tensor_dtype src) {                   \
        (void)src;                                                                                      \
        TENSOR__GEMM_PICK_BF16_##sfx                                                                    \
        TENSOR__GEMM_PICK_AVX512(sfx)                                                                   \
        TENSOR__GEMM_PICK_AVX2(sfx)                                                                     \
        return &tensor__gemm_portable_##sfx;                                                            \
    }
#if TENSOR__GEMM_AVX512
#define TENSOR__GEMM_PICK_AVX512(sfx) if (tensor__gemm_has_avx512()) return &tensor__gemm_avx512_##sfx;
#else
#define TENSOR__GEMM_PICK_AVX512(sfx)
#endif
#if TENSOR__GEMM_AVX2
#define TENSOR__GEMM_PICK_AVX2(sfx) if (tensor__gemm_has_avx2()) return &tensor__gemm_avx2_##sfx;
#else
#define TENSOR__GEMM_PICK_AVX2(sfx)
#endif
/* bf16 operands into f32 results: the vdpbf16ps family where the CPU has it */
#if TENSOR__GEMM_AVX512
#define TENSOR__GEMM_PICK_BF16_f32 if (src == TENSOR_BF16 && tensor__gemm_has_bf16()) return &tensor__gemm_avx512_bf16;
#else
#define TENSOR__GEMM_PICK_BF16_f32
#endif
#define TENSOR__GEMM_PICK_BF16_f64
TENSOR__DEFINE_GEMM_PICK(f32)
TENSOR__DEFINE_GEMM_PICK(f64)
TENSOR__DEFINE_GEMM_DRIVER(f32, float)
TENSOR__DEFINE_GEMM_DRIVER(f64, double)

/* Whether `count` independent GEMMs of m x n x k (a batch, or the images of a convolution) should
   run side by side, each on one thread, rather than one after another, each split across the
   threads: yes when they are too small to split, or when they share out evenly (or nearly: at
   least 4 per thread), which needs no synchronization inside the GEMMs. */
static bool tensor__gemm_spread(int64_t count, int64_t m, int64_t n, int64_t k) {
    int64_t threads = tensor__gemm_threads();
    if (count < 2 || threads < 2) return false;
    if (tensor__work_mul(tensor__work_mul(m, n), k) < 2 * TENSOR__GEMM_PAR_MIN) return true; /* (m n k may overflow) */
    return count >= threads && (count % threads == 0 || count >= 4 * threads);
}
