/* bench.c: tensor.h against reference implementations, measured in the same run on the same data.
   Build and run with `make bench` (cc -O2, no -march; links OpenBLAS, glibc's libmvec and SLEEF
   when installed). Every number printed is measured in this run; each time is the median of repeated
   runs after one warm-up run. A ratio is reference time / tensor.h time, printed as
   "tensor.h is X.XXx the reference's speed" (> 1: tensor.h is faster).

   Usage: build/bench [--quick] [--only SUBSTRING] [--threads N]
          build/bench --torch-subset [--threads N]   (machine-readable lines for bench/compare_torch.py)
   --quick shortens every measurement (for checking that it runs; the numbers are noisier). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#define TENSOR_IMPLEMENTATION
#include "../tensor.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <cblas.h>

/* OpenBLAS extensions (declared here too: a netlib cblas.h chosen by update-alternatives lacks them). */
void openblas_set_num_threads(int num_threads);
char *openblas_get_config(void);
char *openblas_get_corename(void);

#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define BENCH_X86 1
#include <immintrin.h>
#define BENCH_AVX2 __attribute__((target("avx2,fma")))
/* glibc's libmvec, AVX2 variants (x86_64 vector function ABI names). */
BENCH_AVX2 __m256 _ZGVdN8v_expf(__m256 x);
BENCH_AVX2 __m256 _ZGVdN8v_tanhf(__m256 x);
/* SLEEF: the Makefile defines BENCH_SLEEF when -lsleef links; the header must be there too. The
   header declares the 8-wide functions only under __AVX__, which a plain -O2 build lacks, so the
   dispatching entry point is declared here with the target it needs. */
#if defined(BENCH_SLEEF) && defined(__has_include)
#if __has_include(<sleef.h>)
#include <sleef.h>
#define BENCH_HAVE_SLEEF 1
#ifndef __AVX__
BENCH_AVX2 __m256 Sleef_expf8_u10(__m256 x);
#endif
#endif
#endif
#endif

/* ---------------------------------------------------------------------------------------------- */
/* OpenBLAS on its best kernel. OpenBLAS picks its kernel when it loads, from the CPU's model, and
   0.3.21 does not know this project's CPUs (a Xeon it takes for a Prescott, a Zen 5 it runs as
   Haswell), so it silently runs at half speed or less. OPENBLAS_CORETYPE names the kernel instead,
   but it is read at load: main sets it from the CPU's features and re-executes the benchmark.
   An OPENBLAS_CORETYPE in the environment is kept when it names a core of that ISA level;
   a reference that still reports a weaker core (OpenBLAS refused the name) gets no ratio
   (g_blas_unfit says why). With TENSOR_SIMD=avx2 (tensor.h forced to its
   AVX2 kernels) the reference is forced to Haswell, its AVX2 kernel, so like meets like. */

/* The ISA level of an OpenBLAS core name: 3 AVX-512, 2 AVX2, 1 older. */
static int blas_core_level(const char *core) {
    static const char *avx512[] = {"skylakex", "cooperlake", "sapphirerapids"};
    static const char *avx2[] = {"haswell", "zen", "skylake", "cascadelake", "excavator"};
    for (size_t i = 0; core && i < sizeof avx512 / sizeof *avx512; i++)
        if (!strcasecmp(core, avx512[i])) return 3;
    for (size_t i = 0; core && i < sizeof avx2 / sizeof *avx2; i++)
        if (!strcasecmp(core, avx2[i])) return 2;
    return 1;
}
/* The best OpenBLAS core for this CPU and for the ISA tensor.h is allowed (TENSOR_SIMD), or NULL. */
static const char *blas_best_core(void) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
    const char *simd = getenv("TENSOR_SIMD");
    bool avx512_ok = !simd || !*simd || !strcmp(simd, "avx512"); /* the key tensor.h takes */
    if (avx512_ok && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))
        return "SkylakeX";
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return "Haswell";
#endif
    return NULL;
}
static const char *g_blas_unfit; /* why OpenBLAS is not on its best kernel here; NULL when it is */
static char g_blas_how[160];     /* how its core was chosen, for the header */
static void blas_choose_core(char **argv) {
    const char *best = blas_best_core(), *set = getenv("OPENBLAS_CORETYPE");
    if (best && (!set || blas_core_level(set) != blas_core_level(best)) && !getenv("BENCH_CORE_SET")) {
        setenv("BENCH_CORE_SET", set ? set : "", 1); /* what it replaced, for the header */
        setenv("OPENBLAS_CORETYPE", best, 1);
        execv("/proc/self/exe", argv);
        fprintf(stderr, "bench: cannot re-execute itself to set OPENBLAS_CORETYPE; OpenBLAS keeps the core it chose\n");
    }
    const char *core = openblas_get_corename(), *was = getenv("BENCH_CORE_SET");
    if (!set) snprintf(g_blas_how, sizeof g_blas_how, "as OpenBLAS detected it");
    else if (!was) snprintf(g_blas_how, sizeof g_blas_how, "OPENBLAS_CORETYPE=%s from the environment", set);
    else snprintf(g_blas_how, sizeof g_blas_how, "OPENBLAS_CORETYPE=%s set by the benchmark from the CPU's features%s%s%s",
                  set, *was ? " in place of the environment's " : "", was, "");
    static char why[200];
    if (best && blas_core_level(core) < blas_core_level(best)) {
        snprintf(why, sizeof why, "OpenBLAS runs core %s, weaker than %s which this CPU runs: no ratio", core, best);
        g_blas_unfit = why;
    }
}

/* ---------------------------------------------------------------------------------------------- */
/* Timing */

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double g_budget = 1.0; /* seconds of timed runs per measurement (after the warm-up run) */
static int g_max_reps = 101;

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef void (*bench_fn)(void *ctx);

/* Median seconds of one call of fn: one warm-up call, then as many as fit the budget (at least 3,
   at most g_max_reps, an odd count). */
static double measure(bench_fn fn, void *ctx, int *reps_out) {
    double t0 = now_s();
    fn(ctx);
    double first = now_s() - t0;
    int reps = first > 0 ? (int)(g_budget / first) : g_max_reps;
    if (reps < 3) reps = 3;
    if (reps > g_max_reps) reps = g_max_reps;
    if (reps % 2 == 0) reps++;
    double *t = (double *)malloc(sizeof(double) * (size_t)reps);
    for (int i = 0; i < reps; i++) {
        double s = now_s();
        fn(ctx);
        t[i] = now_s() - s;
    }
    qsort(t, (size_t)reps, sizeof(double), cmp_double);
    double med = t[reps / 2];
    free(t);
    if (reps_out) *reps_out = reps;
    return med;
}

/* Medians of fa and fb, run alternately (a, b, a, b, ...) so that a change in the machine's load
   during the measurement hits both sides alike; one warm-up call of each first. */
static void measure_pair(bench_fn fa, void *ca, bench_fn fb, void *cb, double *ta_out, double *tb_out) {
    double t0 = now_s();
    fa(ca);
    fb(cb);
    double first = now_s() - t0;
    int reps = first > 0 ? (int)(2 * g_budget / first) : g_max_reps;
    if (reps < 3) reps = 3;
    if (reps > g_max_reps) reps = g_max_reps;
    if (reps % 2 == 0) reps++;
    double *ta = (double *)malloc(sizeof(double) * 2 * (size_t)reps), *tb = ta + reps;
    for (int i = 0; i < reps; i++) {
        double s = now_s();
        fa(ca);
        double m = now_s();
        fb(cb);
        tb[i] = now_s() - m;
        ta[i] = m - s;
    }
    qsort(ta, (size_t)reps, sizeof(double), cmp_double);
    qsort(tb, (size_t)reps, sizeof(double), cmp_double);
    *ta_out = ta[reps / 2];
    *tb_out = tb[reps / 2];
    free(ta);
}

/* Pools whose idle workers spin: OpenBLAS's keep a core busy for about 0.1 s after each threaded
   call (measured here with the process's CPU time around a sleep), and tensor.h's for
   TENSOR_SPIN_US. Run a, b, a, b on 2 cores and each call shares a core with the other library's
   spinner. So the multi-threaded GEMM rows measure each side in blocks of back-to-back calls (how a
   loop uses it), alternating blocks, each after a gap longer than that spin and an untimed call
   that wakes the pool. The gap is busy on the calling thread, as in a program that computes between
   calls: after a sleep, this VM's scheduler wakes a pool's worker on the caller's core and, both
   threads' recent load being low, leaves it there (a 2-thread GEMM then runs at 1-thread speed). */
#define QUIET_GAP_S 0.15
#define PAIR_BLOCKS 4
static void busy_gap(double s) {
    volatile double sink = 0;
    double until = now_s() + s;
    while (now_s() < until)
        for (int i = 0; i < 1000; i++) sink += i;
}
static void measure_block(bench_fn f, void *c, double *t, int n) {
    busy_gap(QUIET_GAP_S);
    f(c);
    for (int i = 0; i < n; i++) {
        double s = now_s();
        f(c);
        t[i] = now_s() - s;
    }
}
static void measure_pair_apart(bench_fn fa, void *ca, bench_fn fb, void *cb, double *ta_out, double *tb_out) {
    double t0 = now_s();
    fa(ca);
    fb(cb);
    double first = now_s() - t0;
    int per = first > 0 ? (int)(2 * g_budget / first / PAIR_BLOCKS) : g_max_reps / PAIR_BLOCKS;
    if (per < 1) per = 1;
    if (per > g_max_reps / PAIR_BLOCKS) per = g_max_reps / PAIR_BLOCKS;
    int reps = per * PAIR_BLOCKS;
    double *ta = (double *)malloc(sizeof(double) * 2 * (size_t)reps), *tb = ta + reps;
    for (int b = 0; b < PAIR_BLOCKS; b++) {
        measure_block(fa, ca, ta + b * per, per);
        measure_block(fb, cb, tb + b * per, per);
    }
    qsort(ta, (size_t)reps, sizeof(double), cmp_double);
    qsort(tb, (size_t)reps, sizeof(double), cmp_double);
    *ta_out = ta[reps / 2];
    *tb_out = tb[reps / 2];
    free(ta);
}

static const char *fmt_time(double s, char *buf) {
    if (s < 1e-6) sprintf(buf, "%.1f ns", s * 1e9);
    else if (s < 1e-3) sprintf(buf, "%.2f us", s * 1e6);
    else if (s < 1) sprintf(buf, "%.2f ms", s * 1e3);
    else sprintf(buf, "%.3f s", s);
    return buf;
}

static const char *g_only; /* --only: run the items whose name contains this */
static bool wanted(const char *name) { return !g_only || strstr(name, g_only); }

/* A section's title is printed before its first row (none when --only leaves it empty). */
static const char *g_section;
static void section(const char *title) { g_section = title; }
static void section_flush(void) {
    if (g_section) printf("\n-- %s\n", g_section);
    g_section = NULL;
}

/* One table row: an item of tensor.h against one reference. flops > 0 adds GFLOP/s to both times. */
static void row(const char *item, int threads, double ours, const char *ref, double theirs, double flops, const char *note) {
    char a[32], b[32], ga[24] = "", gb[24] = "";
    section_flush();
    if (flops > 0) {
        sprintf(ga, " %6.1f GF/s", flops / ours * 1e-9);
        if (theirs > 0) sprintf(gb, " %6.1f GF/s", flops / theirs * 1e-9);
    }
    printf("%-32s %2d %10s%-12s ", item, threads, fmt_time(ours, a), ga);
    if (ref && theirs > 0 && g_blas_unfit && strstr(ref, "OpenBLAS"))
        printf("%-24s %10s%-12s %-40s", ref, fmt_time(theirs, b), gb, "(no ratio: OpenBLAS not on its best kernel)");
    else if (ref && theirs > 0)
        printf("%-24s %10s%-12s tensor.h is %5.2fx the reference's speed", ref, fmt_time(theirs, b), gb, theirs / ours);
    else
        printf("%-24s %10s%-12s %-40s", "-", "", "", "(no reference)");
    if (note && *note) printf("  %s", note);
    printf("\n");
    fflush(stdout);
}


/* ---------------------------------------------------------------------------------------------- */
/* Reference loops split over plain pthreads (the references get the same thread count as tensor.h). */

typedef void (*range_fn)(int64_t begin, int64_t end, void *ctx);
typedef struct { range_fn fn; void *ctx; int64_t b, e; } par_part;
static void *par_thread(void *p) {
    par_part *pp = (par_part *)p;
    pp->fn(pp->b, pp->e, pp->ctx);
    return NULL;
}
static void par_run(int threads, int64_t n, range_fn fn, void *ctx) {
    if (threads <= 1) { fn(0, n, ctx); return; }
    pthread_t th[16];
    par_part part[16];
    if (threads > 16) threads = 16;
    int64_t chunk = (n + threads - 1) / threads;
    for (int i = 0; i < threads; i++) {
        part[i].fn = fn;
        part[i].ctx = ctx;
        part[i].b = i * chunk < n ? i * chunk : n;
        part[i].e = (i + 1) * chunk < n ? (i + 1) * chunk : n;
    }
    for (int i = 1; i < threads; i++) pthread_create(&th[i], NULL, par_thread, &part[i]);
    fn(part[0].b, part[0].e, ctx);
    for (int i = 1; i < threads; i++) pthread_join(th[i], NULL);
}

static void die_on_error(const char *what) {
    const char *e = tensor_last_error();
    if (e) { fprintf(stderr, "bench: %s: %s\n", what, e); exit(1); }
}

/* Fills p[0..n) with uniform values in [lo, hi) (fixed seed: every run sees the same data). */
static void fill_uniform(float *p, int64_t n, double lo, double hi, uint64_t seed) {
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (int64_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        p[i] = (float)(lo + (hi - lo) * (double)(s >> 11) * (1.0 / 9007199254740992.0));
    }
}
static tensor *uniform_tensor(int ndim, const int64_t *shape, double lo, double hi, uint64_t seed) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    float *p = (float *)malloc(sizeof(float) * (size_t)(n ? n : 1));
    fill_uniform(p, n, lo, hi, seed);
    tensor *t = tensor_from_data(p, ndim, shape, TENSOR_F32);
    free(p);
    die_on_error("creating inputs");
    return t;
}
static float *fdata(tensor *t) { return (float *)tensor_data_ptr(t); }

/* max |a - b| / (1 + |b|) over n floats */
static double max_rel_diff(const float *a, const float *b, int64_t n) {
    double m = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs((double)a[i] - (double)b[i]) / (1 + fabs((double)b[i]));
        if (d > m || d != d) m = d != d ? INFINITY : d;
    }
    return m;
}
static void check_note(char *note, double diff, double tol) {
    if (diff <= tol) sprintf(note, "max rel diff %.1e", diff);
    else sprintf(note, "MISMATCH: max rel diff %.1e > %.1e", diff, tol);
}

/* ---------------------------------------------------------------------------------------------- */
/* sgemm and dgemm against OpenBLAS */

typedef struct {
    tensor *a, *b;              /* operands as tensor.h sees them (views for the transposed cases) */
    void *A, *B, *C;            /* the same data for cblas (row-major storage of a and b's bases) */
    int M, N, K, lda, ldb;
    bool f64;                   /* dgemm (else sgemm) */
    CBLAS_TRANSPOSE ta, tb;
} gemm_case;

static void gemm_ours(void *p) {
    gemm_case *g = (gemm_case *)p;
    tensor_free(tensor_matmul(g->a, g->b));
}
static void gemm_blas(void *p) {
    gemm_case *g = (gemm_case *)p;
    if (g->f64) cblas_dgemm(CblasRowMajor, g->ta, g->tb, g->M, g->N, g->K, 1.0, (const double *)g->A, g->lda, (const double *)g->B, g->ldb, 0.0, (double *)g->C, g->N);
    else cblas_sgemm(CblasRowMajor, g->ta, g->tb, g->M, g->N, g->K, 1.0f, (const float *)g->A, g->lda, (const float *)g->B, g->ldb, 0.0f, (float *)g->C, g->N);
}
/* max |a - b| / (1 + |b|) over the n elements of a tensor and a buffer of its dtype */
static double max_rel_diff_t(tensor *t, const void *b, int64_t n) {
    if (tensor_get_dtype(t) == TENSOR_F32) return max_rel_diff(fdata(t), (const float *)b, n);
    const double *x = (const double *)tensor_data_ptr(t), *y = (const double *)b;
    double m = 0;
    for (int64_t i = 0; i < n; i++) {
        double d = fabs(x[i] - y[i]) / (1 + fabs(y[i]));
        if (d > m || d != d) m = d != d ? INFINITY : d;
    }
    return m;
}

/* C[M, N] = op(A) @ op(B); ta: A is stored [K, M] and used transposed; tb: B is stored [N, K];
   f64: dgemm (the same values in double); bf16: tensor.h multiplies bf16 operands into a bf16
   result (f32 accumulation) against sgemm on the same (bf16-rounded) values in f32. */
static void bench_gemm_of(const char *name, int M, int N, int K, bool ta, bool tb, bool f64, bool bf16) {
    if (!wanted(name)) return;
    gemm_case g;
    tensor *as = ta ? uniform_tensor(TENSOR_SHAPE(K, M), -1, 1, 1) : uniform_tensor(TENSOR_SHAPE(M, K), -1, 1, 1);
    tensor *bs = tb ? uniform_tensor(TENSOR_SHAPE(N, K), -1, 1, 2) : uniform_tensor(TENSOR_SHAPE(K, N), -1, 1, 2);
    if (f64) {
        tensor *ad = tensor_to_dtype(as, TENSOR_F64), *bd = tensor_to_dtype(bs, TENSOR_F64);
        tensor_free(as);
        tensor_free(bs);
        as = ad, bs = bd;
        die_on_error("creating inputs");
    }
    tensor *ah = NULL, *bh = NULL; /* bf16: ours; as and bs hold their values in f32 */
    if (bf16) {
        ah = tensor_to_dtype(as, TENSOR_BF16), bh = tensor_to_dtype(bs, TENSOR_BF16);
        tensor_free(as);
        tensor_free(bs);
        as = tensor_to_dtype(ah, TENSOR_F32), bs = tensor_to_dtype(bh, TENSOR_F32);
        die_on_error("creating inputs");
    }
    size_t es = f64 ? sizeof(double) : sizeof(float);
    g.a = ta ? tensor_transpose(bf16 ? ah : as, 0, 1) : bf16 ? ah : as;
    g.b = tb ? tensor_transpose(bf16 ? bh : bs, 0, 1) : bf16 ? bh : bs;
    g.A = tensor_data_ptr(as);
    g.B = tensor_data_ptr(bs);
    g.C = malloc(es * (size_t)M * (size_t)N);
    g.f64 = f64;
    g.M = M, g.N = N, g.K = K;
    g.lda = ta ? M : K;
    g.ldb = tb ? K : N;
    g.ta = ta ? CblasTrans : CblasNoTrans;
    g.tb = tb ? CblasTrans : CblasNoTrans;
    double flops = 2.0 * M * N * K;
    for (int threads = 1; threads <= 2; threads++) {
        tensor_set_num_threads(threads);
        openblas_set_num_threads(threads);
        double ours, theirs;
        measure_pair_apart(gemm_ours, &g, gemm_blas, &g, &ours, &theirs);
        char note[64];
        tensor *c = tensor_matmul(g.a, g.b), *cf = bf16 ? tensor_to_dtype(c, TENSOR_F32) : NULL;
        die_on_error(name);
        /* bf16: the result's rounding, up to 2^-8 relative */
        check_note(note, max_rel_diff_t(cf ? cf : c, g.C, (int64_t)M * N), f64 ? 1e-13 * K + 1e-12 : bf16 ? 8e-3 : 1e-5 * K + 1e-4);
        tensor_free(c);
        tensor_free(cf);
        row(name, threads, ours, f64 ? "OpenBLAS cblas_dgemm" : "OpenBLAS cblas_sgemm", theirs, flops, note);
    }
    free(g.C);
    if (ta) tensor_free(g.a);
    if (tb) tensor_free(g.b);
    tensor_free(as);
    tensor_free(bs);
    tensor_free(ah);
    tensor_free(bh);
}

static void bench_gemm(const char *name, int M, int N, int K, bool ta, bool tb) { bench_gemm_of(name, M, N, K, ta, tb, false, false); }

static void bench_gemms(void) {
    section("sgemm (f32): tensor_matmul allocating its result vs cblas_sgemm into an existing buffer");
    static const int sizes[] = {64, 128, 256, 512, 1024, 2048};
    char name[64];
    for (int i = 0; i < 6; i++) {
        sprintf(name, "sgemm %d", sizes[i]);
        bench_gemm(name, sizes[i], sizes[i], sizes[i], false, false);
    }
    /* The 784-256-10 MLP's first layer at batch 64: Y = X W^T, dX = dY W, dW = dY^T X. */
    bench_gemm("mlp fwd X@W^T 64x256x784", 64, 256, 784, false, true);
    bench_gemm("mlp dX dY@W 64x784x256", 64, 784, 256, false, false);
    bench_gemm("mlp dW dY^T@X 256x784x64", 256, 784, 64, true, false);
    section("dgemm (f64): tensor_matmul allocating its result vs cblas_dgemm into an existing buffer");
    for (int i = 0; i < 6; i++) {
        sprintf(name, "dgemm %d", sizes[i]);
        bench_gemm_of(name, sizes[i], sizes[i], sizes[i], false, false, true, false);
    }
    section("bf16 matmul: tensor_matmul on bf16 tensors (f32 accumulation, bf16 result) vs cblas_sgemm (f32) of the same size");
    for (int i = 4; i < 6; i++) {
        sprintf(name, "bf16 matmul %d", sizes[i]);
        bench_gemm_of(name, sizes[i], sizes[i], sizes[i], false, false, false, true);
    }
}

/* ---------------------------------------------------------------------------------------------- */
/* Elementwise ops on 16M floats */

#define EW_N (16 * 1024 * 1024)

typedef struct {
    tensor *a, *b;              /* inputs */
    const float *x, *y;         /* their data */
    float *out;                 /* the references' existing output buffer */
    tensor *(*unary)(tensor *);
    tensor *(*binary)(tensor *, tensor *);
    range_fn ref;
    int threads;
} ew_case;

static void ew_ours(void *p) {
    ew_case *e = (ew_case *)p;
    tensor_free(e->binary ? e->binary(e->a, e->b) : e->unary(e->a));
}
static void ew_ref(void *p) {
    ew_case *e = (ew_case *)p;
    par_run(e->threads, EW_N, e->ref, e);
}

static void ref_add(int64_t b, int64_t n, void *p) {
    ew_case *e = (ew_case *)p;
    const float *x = e->x, *y = e->y;
    float *o = e->out;
    for (int64_t i = b; i < n; i++) o[i] = x[i] + y[i];
}
static void ref_mul(int64_t b, int64_t n, void *p) {
    ew_case *e = (ew_case *)p;
    const float *x = e->x, *y = e->y;
    float *o = e->out;
    for (int64_t i = b; i < n; i++) o[i] = x[i] * y[i];
}
static void ref_expf(int64_t b, int64_t n, void *p) {
    ew_case *e = (ew_case *)p;
    for (int64_t i = b; i < n; i++) e->out[i] = expf(e->x[i]);
}
static void ref_tanhf(int64_t b, int64_t n, void *p) {
    ew_case *e = (ew_case *)p;
    for (int64_t i = b; i < n; i++) e->out[i] = tanhf(e->x[i]);
}
static void ref_gelu_erff(int64_t b, int64_t n, void *p) {
    ew_case *e = (ew_case *)p;
    for (int64_t i = b; i < n; i++) e->out[i] = 0.5f * e->x[i] * (1.0f + erff(e->x[i] * 0.70710678118654752f));
}
#ifdef BENCH_X86
/* Whole vectors of 8 (the ranges split by par_run are multiples of 8 for EW_N and 2 threads); a
   scalar tail covers the rest. */
BENCH_AVX2 static void ref_mvec_expf(int64_t b, int64_t n, void *p) {
    ew_case *e = (ew_case *)p;
    int64_t i = b;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(e->out + i, _ZGVdN8v_expf(_mm256_loadu_ps(e->x + i)));
    for (; i < n; i++) e->out[i] = expf(e->x[i]);
}
BENCH_AVX2 static void ref_mvec_tanhf(int64_t b, int64_t n, void *p) {
    ew_case *e = (ew_case *)p;
    int64_t i = b;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(e->out + i, _ZGVdN8v_tanhf(_mm256_loadu_ps(e->x + i)));
    for (; i < n; i++) e->out[i] = tanhf(e->x[i]);
}
#ifdef BENCH_HAVE_SLEEF
BENCH_AVX2 static void ref_sleef_expf(int64_t b, int64_t n, void *p) {
    ew_case *e = (ew_case *)p;
    int64_t i = b;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(e->out + i, Sleef_expf8_u10(_mm256_loadu_ps(e->x + i)));
    for (; i < n; i++) e->out[i] = expf(e->x[i]);
}
#endif
static bool have_avx2(void) { return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"); }
#endif

typedef struct { const char *ref_name; range_fn ref; double tol; } ew_ref_def;

/* One op against its references at 1 and 2 threads; the result of tensor.h is checked against
   the first reference. */
static void bench_ew(const char *name, tensor *a, tensor *b, tensor *(*unary)(tensor *),
                     tensor *(*binary)(tensor *, tensor *), int n_refs, const ew_ref_def *refs, float *out) {
    if (!wanted(name)) return;
    ew_case e;
    memset(&e, 0, sizeof e);
    e.a = a, e.b = b, e.x = fdata(a), e.y = b ? fdata(b) : NULL, e.out = out;
    e.unary = unary, e.binary = binary;
    for (int threads = 1; threads <= 2; threads++) {
        tensor_set_num_threads(threads);
        e.threads = threads;
        for (int r = 0; r < n_refs; r++) {
            if (!refs[r].ref) {
                section_flush();
                printf("%-32s %2d (%s not measured: needs AVX2+FMA%s)\n", name, threads, refs[r].ref_name,
                       strstr(refs[r].ref_name, "SLEEF") ? " and SLEEF (libsleef-dev)" : "");
                continue;
            }
            e.ref = refs[r].ref;
            double ours, theirs;
            measure_pair(ew_ours, &e, ew_ref, &e, &ours, &theirs);
            char note[64] = "";
            tensor *c = binary ? binary(a, b) : unary(a);
            die_on_error(name);
            check_note(note, max_rel_diff(fdata(c), out, EW_N), refs[r].tol);
            tensor_free(c);
            row(name, threads, ours, refs[r].ref_name, theirs, 0, note);
        }
    }
}

/* rand and randn on 16M f32 against the one-at-a-time code they replace: a plain loop of scalar
   Philox4x32-10 blocks (tensor.h's own tensor__philox_block) and libm's Box-Muller, split over the
   same number of threads by counter. After the same seed both give the same numbers. */
typedef struct { tensor_dtype dt; bool normal; float *out; } rng_case;
static const uint32_t rng_key[2] = {1234, 0};
static void ref_rand(int64_t b, int64_t e, void *p) {
    rng_case *r = (rng_case *)p;
    uint32_t w[4];
    for (int64_t i = b / 4 * 4; i < e; i += 4) {
        tensor__philox_block(rng_key, (uint64_t)i / 4, 0, w);
        for (int q = 0; q < 4 && i + q < e; q++)
            if (i + q >= b) r->out[i + q] = (float)(w[q] >> 8) * (1.0f / 16777216.0f);
    }
}
static void ref_randn(int64_t b, int64_t e, void *p) { /* f32 randn: two pairs from each block's words */
    rng_case *r = (rng_case *)p;
    uint32_t w[4];
    for (int64_t i = b / 4 * 4; i < e; i += 4) {
        tensor__philox_block(rng_key, (uint64_t)i / 4, 0, w);
        for (int h = 0; h < 2; h++) {
            double u1 = (double)(float)(int32_t)((w[2 * h] >> 1) | 1) * (1.0 / 2147483648.0), t = 2.0 * M_PI * ((double)w[2 * h + 1] * (1.0 / 4294967296.0));
            double rr = sqrt(-2.0 * log(u1));
            int64_t j = i + 2 * h;
            if (j >= b && j < e) r->out[j] = (float)(rr * cos(t));
            if (j + 1 >= b && j + 1 < e) r->out[j + 1] = (float)(rr * sin(t));
        }
    }
}
typedef struct { rng_case *c; int threads; } rng_ref_ctx;
static void rng_ours(void *p) {
    rng_case *r = (rng_case *)p;
    tensor_free(r->normal ? tensor_randn(TENSOR_SHAPE(EW_N), r->dt) : tensor_rand(TENSOR_SHAPE(EW_N), r->dt));
}
static void rng_ref(void *p) {
    rng_ref_ctx *x = (rng_ref_ctx *)p;
    par_run(x->threads, EW_N, x->c->normal ? ref_randn : ref_rand, x->c);
}
static void bench_random(void) {
    section("random fills of 16M f32: tensor.h allocates its result; the reference loop writes an existing buffer");
    float *out = (float *)malloc(sizeof(float) * EW_N);
    for (int normal = 0; normal < 2; normal++) {
        const char *name = normal ? "randn 16M" : "rand 16M";
        if (!wanted(name)) continue;
        rng_case c = {TENSOR_F32, normal != 0, out};
        for (int threads = 1; threads <= 2; threads++) {
            tensor_set_num_threads(threads);
            rng_ref_ctx x = {&c, threads};
            double ours, theirs;
            measure_pair(rng_ours, &c, rng_ref, &x, &ours, &theirs);
            tensor_manual_seed(rng_key[0]);
            tensor *t = normal ? tensor_randn(TENSOR_SHAPE(EW_N), TENSOR_F32) : tensor_rand(TENSOR_SHAPE(EW_N), TENSOR_F32);
            die_on_error(name);
            char note[64];
            check_note(note, max_rel_diff(fdata(t), out, EW_N), 1e-6);
            tensor_free(t);
            row(name, threads, ours, normal ? "Philox+libm Box-Muller" : "scalar Philox loop", theirs, 0, note);
        }
    }
    free(out);
}

static void bench_elementwise(void) {
    section("elementwise on 16M f32 (64 MiB per tensor): tensor.h allocates its result each call; "
            "references write into an existing buffer, split over the same number of threads");
    float *out = (float *)malloc(sizeof(float) * EW_N);
    tensor *a = uniform_tensor(TENSOR_SHAPE(EW_N), -1, 1, 11);
    tensor *b = uniform_tensor(TENSOR_SHAPE(EW_N), -1, 1, 12);
    ew_ref_def add_refs[] = {{"C loop (STREAM add)", ref_add, 0}};
    ew_ref_def mul_refs[] = {{"C loop", ref_mul, 0}};
    bench_ew("add 16M", a, b, NULL, tensor_add, 1, add_refs, out);
    bench_ew("mul 16M", a, b, NULL, tensor_mul, 1, mul_refs, out);
    tensor_free(a);
    tensor_free(b);

    tensor *xe = uniform_tensor(TENSOR_SHAPE(EW_N), -10, 10, 13);
    ew_ref_def exp_refs[3] = {{"libm expf loop", ref_expf, 1e-6}, {"libmvec _ZGVdN8v_expf", NULL, 1e-6},
                              {"SLEEF Sleef_expf8_u10", NULL, 1e-6}};
#ifdef BENCH_X86
    if (have_avx2()) {
        exp_refs[1].ref = ref_mvec_expf;
#ifdef BENCH_HAVE_SLEEF
        exp_refs[2].ref = ref_sleef_expf;
#endif
    }
#endif
    bench_ew("exp 16M [-10,10]", xe, NULL, tensor_exp, NULL, 3, exp_refs, out);
    tensor_free(xe);

    tensor *xt = uniform_tensor(TENSOR_SHAPE(EW_N), -5, 5, 14);
    ew_ref_def tanh_refs[2] = {{"libm tanhf loop", ref_tanhf, 1e-6}, {"libmvec _ZGVdN8v_tanhf", NULL, 1e-6}};
#ifdef BENCH_X86
    if (have_avx2()) tanh_refs[1].ref = ref_mvec_tanhf;
#endif
    bench_ew("tanh 16M [-5,5]", xt, NULL, tensor_tanh, NULL, 2, tanh_refs, out);
    ew_ref_def gelu_refs[] = {{"libm erff loop", ref_gelu_erff, 1e-6}};
    bench_ew("gelu 16M [-5,5]", xt, NULL, tensor_gelu, NULL, 1, gelu_refs, out);
    tensor_free(xt);
    free(out);
}

/* bf16 and f16 against f32: there is no 16-bit reference library here, so each op runs on the same
   values as bf16 (f16) and as f32 in the same run, alternately, and the row prints the ratio of the
   16-bit time to the f32 time (< 1: the 16-bit op is faster; it moves half the bytes). The check
   compares the 16-bit result with the f32 result rounded to the 16-bit type. */
typedef struct { tensor *a, *b; tensor *(*unary)(tensor *); tensor *(*binary)(tensor *, tensor *); } half_case;
static void half_run(void *p) {
    half_case *h = (half_case *)p;
    tensor_free(h->binary ? h->binary(h->a, h->b) : h->unary(h->a));
}
static void bench_half_op(const char *name, tensor_dtype dt, tensor *a32, tensor *b32, tensor *(*unary)(tensor *),
                          tensor *(*binary)(tensor *, tensor *)) {
    if (!wanted(name)) return;
    /* the f32 operands hold the 16-bit values, so both compute on the same numbers */
    tensor *a16 = tensor_to_dtype(a32, dt), *b16 = b32 ? tensor_to_dtype(b32, dt) : NULL;
    tensor *a = tensor_to_dtype(a16, TENSOR_F32), *b = b16 ? tensor_to_dtype(b16, TENSOR_F32) : NULL;
    die_on_error(name);
    half_case h16 = {a16, b16, unary, binary}, h32 = {a, b, unary, binary};
    for (int threads = 1; threads <= 2; threads++) {
        tensor_set_num_threads(threads);
        double t16, t32;
        measure_pair(half_run, &h16, half_run, &h32, &t16, &t32);
        tensor *r16 = binary ? binary(a16, b16) : unary(a16), *r32 = binary ? binary(a, b) : unary(a);
        tensor *w16 = tensor_to_dtype(r16, TENSOR_F32), *w32 = tensor_to_dtype(tensor_to_dtype(r32, dt), TENSOR_F32);
        die_on_error(name);
        char note[64], x[32], y[32];
        /* one ulp of the 16-bit type where the f32 kernel rounds differently near a boundary */
        check_note(note, max_rel_diff(fdata(w16), fdata(w32), EW_N), dt == TENSOR_BF16 ? 1.0 / 128 : 1.0 / 1024);
        section_flush();
        printf("%-32s %2d %10s %-12s %-24s %10s %-12s %s time / f32 time: %5.2f  %s\n", name, threads, fmt_time(t16, x), "",
               "f32, same op", fmt_time(t32, y), "", tensor_dtype_name(dt), t16 / t32, note);
        fflush(stdout);
        tensor_free(r16), tensor_free(r32), tensor_free(w16), tensor_free(w32);
    }
    tensor_free(a16), tensor_free(b16), tensor_free(a), tensor_free(b);
}
static void bench_half(void) {
    section("bf16 and f16 elementwise on 16M: no 16-bit reference; each row is the 16-bit time and the f32 time of the same "
            "op on the same values, measured alternately");
    tensor *a = uniform_tensor(TENSOR_SHAPE(EW_N), -1, 1, 11), *b = uniform_tensor(TENSOR_SHAPE(EW_N), -1, 1, 12);
    tensor *xe = uniform_tensor(TENSOR_SHAPE(EW_N), -10, 10, 13), *xt = uniform_tensor(TENSOR_SHAPE(EW_N), -5, 5, 14);
    static const tensor_dtype dts[2] = {TENSOR_BF16, TENSOR_F16};
    for (int d = 0; d < 2; d++) {
        char n1[48], n2[48], n3[48], n4[48];
        const char *dn = d ? "f16" : "bf16";
        snprintf(n1, sizeof n1, "add %s 16M", dn);
        snprintf(n2, sizeof n2, "mul %s 16M", dn);
        snprintf(n3, sizeof n3, "exp %s 16M [-10,10]", dn);
        snprintf(n4, sizeof n4, "gelu %s 16M [-5,5]", dn);
        bench_half_op(n1, dts[d], a, b, NULL, tensor_add);
        bench_half_op(n2, dts[d], a, b, NULL, tensor_mul);
        bench_half_op(n3, dts[d], xe, NULL, tensor_exp, NULL);
        bench_half_op(n4, dts[d], xt, NULL, tensor_gelu, NULL);
    }
    tensor_free(a), tensor_free(b), tensor_free(xe), tensor_free(xt);
}

/* ---------------------------------------------------------------------------------------------- */
/* Row reductions: sum and softmax over the last dim of [4096, 4096] */

#define RR 4096
typedef struct { tensor *x; const float *xd; float *out; int threads; bool softmax; } rows_case;

static void rows_ours(void *p) {
    rows_case *r = (rows_case *)p;
    tensor_free(r->softmax ? tensor_softmax(r->x, 1) : tensor_sum(r->x, 1, false));
}
static void ref_rowsum(int64_t b, int64_t e, void *p) {
    rows_case *r = (rows_case *)p;
    for (int64_t i = b; i < e; i++) {
        const float *x = r->xd + i * RR;
        float s = 0;
        for (int64_t j = 0; j < RR; j++) s += x[j];
        r->out[i] = s;
    }
}
static void ref_softmax(int64_t b, int64_t e, void *p) {
    rows_case *r = (rows_case *)p;
    for (int64_t i = b; i < e; i++) {
        const float *x = r->xd + i * RR;
        float *o = r->out + i * RR;
        float m = x[0], s = 0;
        for (int64_t j = 1; j < RR; j++) m = x[j] > m ? x[j] : m;
        for (int64_t j = 0; j < RR; j++) s += (o[j] = expf(x[j] - m));
        float inv = 1 / s;
        for (int64_t j = 0; j < RR; j++) o[j] *= inv;
    }
}
static void rows_ref(void *p) {
    rows_case *r = (rows_case *)p;
    par_run(r->threads, RR, r->softmax ? ref_softmax : ref_rowsum, r);
}

static void bench_rows(void) {
    section("reductions over rows of [4096, 4096] f32 (plain loops: float accumulator, libm expf)");
    rows_case r;
    r.x = uniform_tensor(TENSOR_SHAPE(RR, RR), -4, 4, 21);
    r.xd = fdata(r.x);
    r.out = (float *)malloc(sizeof(float) * RR * RR);
    for (int which = 0; which < 2; which++) {
        const char *name = which ? "softmax(x, 1) 4096x4096" : "sum(x, 1) 4096x4096";
        if (!wanted(name)) continue;
        r.softmax = which == 1;
        for (int threads = 1; threads <= 2; threads++) {
            tensor_set_num_threads(threads);
            r.threads = threads;
            double ours, theirs;
            measure_pair(rows_ours, &r, rows_ref, &r, &ours, &theirs);
            tensor *c = r.softmax ? tensor_softmax(r.x, 1) : tensor_sum(r.x, 1, false);
            die_on_error(name);
            char note[64];
            /* the float-accumulator reference sum itself carries ~1e-4 relative error over 4096 terms */
            check_note(note, max_rel_diff(fdata(c), r.out, r.softmax ? (int64_t)RR * RR : RR), r.softmax ? 1e-5 : 1e-3);
            tensor_free(c);
            row(name, threads, ours, "plain C loop", theirs, 0, note);
        }
    }
    tensor_free(r.x);
    free(r.out);
}

/* ---------------------------------------------------------------------------------------------- */
/* conv2d forward and forward+backward against im2col + OpenBLAS sgemm per image */

enum { CN = 64, CI = 32, CH = 14, CW = 14, CO = 64, CK = 3, CHW = CH * CW, CCOL = CI * CK * CK };

typedef struct {
    tensor *x, *w, *b, *gy;         /* tensor.h: leaves (requires grad for the backward case) */
    const float *xd, *wd, *bd, *gyd;
    float *y, *cols, *dx, *dw_part, *db_part, *dcols; /* reference buffers */
    int threads;
    int k; /* the kernel: 3 (pad 1) or 1 (pad 0), stride 1 */
} conv_case;

static void ref_im2col(const float *x, float *cols) { /* x: [CI, CH, CW] -> cols: [CI*9, CH*CW], pad 1 */
    for (int c = 0; c < CI; c++)
        for (int ky = 0; ky < CK; ky++)
            for (int kx = 0; kx < CK; kx++) {
                float *o = cols + ((c * CK + ky) * CK + kx) * CHW;
                for (int y = 0; y < CH; y++) {
                    int iy = y + ky - 1;
                    for (int xx = 0; xx < CW; xx++) {
                        int ix = xx + kx - 1;
                        o[y * CW + xx] = iy >= 0 && iy < CH && ix >= 0 && ix < CW ? x[(c * CH + iy) * CW + ix] : 0.0f;
                    }
                }
            }
}
static void ref_col2im(const float *cols, float *x) { /* adds cols back into x: [CI, CH, CW] */
    memset(x, 0, sizeof(float) * CI * CHW);
    for (int c = 0; c < CI; c++)
        for (int ky = 0; ky < CK; ky++)
            for (int kx = 0; kx < CK; kx++) {
                const float *o = cols + ((c * CK + ky) * CK + kx) * CHW;
                for (int y = 0; y < CH; y++) {
                    int iy = y + ky - 1;
                    if (iy < 0 || iy >= CH) continue;
                    for (int xx = 0; xx < CW; xx++) {
                        int ix = xx + kx - 1;
                        if (ix >= 0 && ix < CW) x[(c * CH + iy) * CW + ix] += o[y * CW + xx];
                    }
                }
            }
}
static void ref_conv_fwd_range(int64_t b, int64_t e, void *p) {
    conv_case *cc = (conv_case *)p;
    for (int64_t n = b; n < e; n++) {
        float *cols = cc->cols + n * CCOL * CHW, *y = cc->y + n * CO * CHW;
        ref_im2col(cc->xd + n * CI * CHW, cols);
        for (int o = 0; o < CO; o++)
            for (int i = 0; i < CHW; i++) y[o * CHW + i] = cc->bd[o];
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, CO, CHW, CCOL, 1.0f, cc->wd, CCOL, cols, CHW, 1.0f, y, CHW);
    }
}
/* Backward over a range of images; each thread accumulates dW and db into its own slot. */
static void ref_conv_bwd_range(int64_t b, int64_t e, void *p) {
    conv_case *cc = (conv_case *)p;
    int slot = (int)(b * cc->threads / CN);
    float *dw = cc->dw_part + (size_t)slot * CO * CCOL, *db = cc->db_part + (size_t)slot * CO;
    float *dcols = cc->dcols + (size_t)slot * CCOL * CHW;
    memset(dw, 0, sizeof(float) * CO * CCOL);
    memset(db, 0, sizeof(float) * CO);
    for (int64_t n = b; n < e; n++) {
        const float *gy = cc->gyd + n * CO * CHW, *cols = cc->cols + n * CCOL * CHW;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, CO, CCOL, CHW, 1.0f, gy, CHW, cols, CHW, 1.0f, dw, CCOL);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, CCOL, CHW, CO, 1.0f, cc->wd, CCOL, gy, CHW, 0.0f, dcols, CHW);
        ref_col2im(dcols, cc->dx + n * CI * CHW);
        for (int o = 0; o < CO; o++) {
            float s = 0;
            for (int i = 0; i < CHW; i++) s += gy[o * CHW + i];
            db[o] += s;
        }
    }
}
/* The 1x1 layer's reference: x [CI, CHW] is its own im2col. */
static void ref_conv1_fwd_range(int64_t b, int64_t e, void *p) {
    conv_case *cc = (conv_case *)p;
    for (int64_t n = b; n < e; n++) {
        float *y = cc->y + n * CO * CHW;
        for (int o = 0; o < CO; o++)
            for (int i = 0; i < CHW; i++) y[o * CHW + i] = cc->bd[o];
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, CO, CHW, CI, 1.0f, cc->wd, CI, cc->xd + n * CI * CHW, CHW, 1.0f, y, CHW);
    }
}
static void ref_conv1_bwd_range(int64_t b, int64_t e, void *p) {
    conv_case *cc = (conv_case *)p;
    int slot = (int)(b * cc->threads / CN);
    float *dw = cc->dw_part + (size_t)slot * CO * CI, *db = cc->db_part + (size_t)slot * CO;
    memset(dw, 0, sizeof(float) * CO * CI);
    memset(db, 0, sizeof(float) * CO);
    for (int64_t n = b; n < e; n++) {
        const float *gy = cc->gyd + n * CO * CHW, *x = cc->xd + n * CI * CHW;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, CO, CI, CHW, 1.0f, gy, CHW, x, CHW, 1.0f, dw, CI);
        cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, CI, CHW, CO, 1.0f, cc->wd, CI, gy, CHW, 0.0f, cc->dx + n * CI * CHW, CHW);
        for (int o = 0; o < CO; o++) {
            float s = 0;
            for (int i = 0; i < CHW; i++) s += gy[o * CHW + i];
            db[o] += s;
        }
    }
}
static void conv_ref_fwd(void *p) {
    conv_case *cc = (conv_case *)p;
    openblas_set_num_threads(1); /* the images are split over threads, as PyTorch's CPU conv does */
    par_run(cc->threads, CN, ref_conv_fwd_range, cc);
}
static void conv_ref_fwdbwd(void *p) {
    conv_case *cc = (conv_case *)p;
    int wn = cc->k == 1 ? CO * CI : CO * CCOL;
    openblas_set_num_threads(1);
    par_run(cc->threads, CN, cc->k == 1 ? ref_conv1_fwd_range : ref_conv_fwd_range, cc);
    par_run(cc->threads, CN, cc->k == 1 ? ref_conv1_bwd_range : ref_conv_bwd_range, cc);
    for (int s = 1; s < cc->threads; s++) { /* sum the threads' dW, db */
        for (int i = 0; i < wn; i++) cc->dw_part[i] += cc->dw_part[(size_t)s * wn + i];
        for (int i = 0; i < CO; i++) cc->db_part[i] += cc->db_part[(size_t)s * CO + i];
    }
}
static void conv_ours_fwd(void *p) {
    conv_case *cc = (conv_case *)p;
    bool was = tensor_set_grad_enabled(false);
    tensor_free(tensor_conv2d(cc->x, cc->w, cc->b, 1, cc->k == 3, 1, 1));
    tensor_set_grad_enabled(was);
}
static void conv_ours_fwdbwd(void *p) {
    conv_case *cc = (conv_case *)p;
    tensor_zero_grad(cc->x);
    tensor_zero_grad(cc->w);
    tensor_zero_grad(cc->b);
    tensor_scope_begin();
    tensor_backward_with(tensor_conv2d(cc->x, cc->w, cc->b, 1, cc->k == 3, 1, 1), cc->gy);
    tensor_scope_end();
}

/* The reference's buffers of a conv case (im2col columns, outputs, per-thread partial gradients):
   allocated (make) or freed. */
static void conv_ref_buffers(conv_case *cc, bool make) {
    if (!make) {
        free(cc->y), free(cc->cols), free(cc->dx), free(cc->dw_part), free(cc->db_part), free(cc->dcols);
        return;
    }
    cc->y = (float *)malloc(sizeof(float) * CN * CO * CHW);
    cc->cols = (float *)malloc(sizeof(float) * CN * CCOL * CHW);
    cc->dx = (float *)malloc(sizeof(float) * CN * CI * CHW);
    cc->dw_part = (float *)malloc(sizeof(float) * 2 * CO * CCOL);
    cc->db_part = (float *)malloc(sizeof(float) * 2 * CO);
    cc->dcols = (float *)malloc(sizeof(float) * 2 * CCOL * CHW);
}

static void bench_conv(void) {
    const char *fname = "conv2d fwd 64x32x14x14 k3", *bname = "conv2d fwd+bwd 64x32x14x14 k3";
    if (!wanted(fname) && !wanted(bname)) return;
    section("conv2d: x [64, 32, 14, 14], w [64, 32, 3, 3], bias, stride 1, pad 1 (reference: im2col + "
            "cblas_sgemm per image, images split over the threads; tensor.h: Winograd F(4x4, 3x3), so its GF/s, "
            "counted as the direct sum's multiply-adds, can pass the machine's peak)");
    conv_case cc;
    cc.k = 3;
    cc.x = tensor_set_requires_grad(uniform_tensor(TENSOR_SHAPE(CN, CI, CH, CW), -1, 1, 31), true);
    cc.w = tensor_set_requires_grad(uniform_tensor(TENSOR_SHAPE(CO, CI, CK, CK), -0.1, 0.1, 32), true);
    cc.b = tensor_set_requires_grad(uniform_tensor(TENSOR_SHAPE(CO), -0.1, 0.1, 33), true);
    cc.gy = uniform_tensor(TENSOR_SHAPE(CN, CO, CH, CW), -1, 1, 34);
    cc.xd = fdata(cc.x), cc.wd = fdata(cc.w), cc.bd = fdata(cc.b), cc.gyd = fdata(cc.gy);
    conv_ref_buffers(&cc, true);
    double fwd_flops = 2.0 * CN * CO * CHW * CCOL;
    for (int threads = 1; threads <= 2; threads++) {
        tensor_set_num_threads(threads);
        cc.threads = threads;
        if (wanted(fname)) {
            double ours, theirs;
            measure_pair(conv_ours_fwd, &cc, conv_ref_fwd, &cc, &ours, &theirs);
            bool was = tensor_set_grad_enabled(false);
            tensor *y = tensor_conv2d(cc.x, cc.w, cc.b, 1, 1, 1, 1);
            tensor_set_grad_enabled(was);
            die_on_error(fname);
            char note[64];
            check_note(note, max_rel_diff(fdata(y), cc.y, (int64_t)CN * CO * CHW), 1e-4);
            tensor_free(y);
            row(fname, threads, ours, "im2col+OpenBLAS", theirs, fwd_flops, note);
        }
        if (wanted(bname)) {
            double ours, theirs;
            measure_pair(conv_ours_fwdbwd, &cc, conv_ref_fwdbwd, &cc, &ours, &theirs);
            conv_ours_fwdbwd(&cc);
            die_on_error(bname);
            char note[96];
            double d = max_rel_diff(fdata(tensor_grad(cc.x)), cc.dx, (int64_t)CN * CI * CHW);
            double dw = max_rel_diff(fdata(tensor_grad(cc.w)), cc.dw_part, CO * CCOL); /* sums of 12544 terms */
            if (d <= 1e-4 && dw <= 1e-3) sprintf(note, "max rel diff dx %.1e, dw %.1e", d, dw);
            else sprintf(note, "MISMATCH: max rel diff dx %.1e (tol 1e-4), dw %.1e (tol 1e-3)", d, dw);
            row(bname, threads, ours, "im2col+OpenBLAS", theirs, 3 * fwd_flops, note);
        }
    }
    conv_ref_buffers(&cc, false);
    tensor_free(cc.x), tensor_free(cc.w), tensor_free(cc.b), tensor_free(cc.gy);
}

/* The same layer's forward + backward (k 3), or its 1x1 variant (k 1, pad 0), on bf16 tensors (f32
   accumulation, bf16 results) against the reference on the same bf16-rounded values in f32. */
static void bench_conv_bf16_of(const char *name, int k) {
    if (!wanted(name)) return;
    conv_case cc;
    cc.k = k;
    tensor *xf = uniform_tensor(TENSOR_SHAPE(CN, CI, CH, CW), -1, 1, 31), *wf = uniform_tensor(TENSOR_SHAPE(CO, CI, k, k), -0.1, 0.1, 32);
    tensor *bf = uniform_tensor(TENSOR_SHAPE(CO), -0.1, 0.1, 33), *gf = uniform_tensor(TENSOR_SHAPE(CN, CO, CH, CW), -1, 1, 34);
    cc.x = tensor_set_requires_grad(tensor_to_dtype(xf, TENSOR_BF16), true);
    cc.w = tensor_set_requires_grad(tensor_to_dtype(wf, TENSOR_BF16), true);
    cc.b = tensor_set_requires_grad(tensor_to_dtype(bf, TENSOR_BF16), true);
    cc.gy = tensor_to_dtype(gf, TENSOR_BF16);
    tensor *r[4] = {tensor_to_dtype(cc.x, TENSOR_F32), tensor_to_dtype(cc.w, TENSOR_F32), tensor_to_dtype(cc.b, TENSOR_F32), tensor_to_dtype(cc.gy, TENSOR_F32)};
    die_on_error("creating inputs");
    cc.xd = fdata(r[0]), cc.wd = fdata(r[1]), cc.bd = fdata(r[2]), cc.gyd = fdata(r[3]);
    conv_ref_buffers(&cc, true);
    for (int threads = 1; threads <= 2; threads++) {
        tensor_set_num_threads(threads);
        cc.threads = threads;
        double ours, theirs;
        measure_pair(conv_ours_fwdbwd, &cc, conv_ref_fwdbwd, &cc, &ours, &theirs);
        conv_ours_fwdbwd(&cc);
        tensor *gx = tensor_to_dtype(tensor_grad(cc.x), TENSOR_F32), *gw = tensor_to_dtype(tensor_grad(cc.w), TENSOR_F32);
        die_on_error(name);
        /* bf16 results: their rounding, up to 2^-8 relative */
        char note[96];
        double d = max_rel_diff(fdata(gx), cc.dx, (int64_t)CN * CI * CHW), dw = max_rel_diff(fdata(gw), cc.dw_part, k == 1 ? CO * CI : CO * CCOL);
        if (d <= 8e-3 && dw <= 8e-3) sprintf(note, "max rel diff dx %.1e, dw %.1e", d, dw);
        else sprintf(note, "MISMATCH: max rel diff dx %.1e, dw %.1e (tol 8e-3)", d, dw);
        tensor_free(gx), tensor_free(gw);
        row(name, threads, ours, k == 1 ? "OpenBLAS f32" : "im2col+OpenBLAS f32", theirs, 3 * 2.0 * CN * CO * CHW * CI * k * k, note);
    }
    conv_ref_buffers(&cc, false);
    tensor_free(cc.x), tensor_free(cc.w), tensor_free(cc.b), tensor_free(cc.gy);
    tensor_free(xf), tensor_free(wf), tensor_free(bf), tensor_free(gf);
    for (int i = 0; i < 4; i++) tensor_free(r[i]);
}
static void bench_conv_bf16(void) {
    section("bf16 conv2d: the layer above on bf16 x, w, bias and gradient (f32 accumulation, bf16 results; tensor.h: "
            "Winograd in f32 on the converted values, which measured faster there than the bf16 GEMM kernel) and its 1x1 "
            "variant (the bf16 kernel where the CPU has avx512_bf16, x read as bf16) vs im2col + cblas_sgemm (f32) on the "
            "same bf16-rounded values");
    bench_conv_bf16_of("bf16 conv2d fwd+bwd 64x32x14x14 k3", 3);
    bench_conv_bf16_of("bf16 conv2d fwd+bwd 64x32x14x14 k1", 1);
}

/* ---------------------------------------------------------------------------------------------- */
/* Per-op overhead on 1-element tensors: a chain of OVH_OPS ops (alternating add and mul) */

#define OVH_OPS 100
typedef struct { tensor *x, *w; int mode; } ovh_case; /* mode 0: no autograd; 1: recording; 2: + backward */

static void ovh_run(void *p) {
    ovh_case *o = (ovh_case *)p;
    tensor_scope_begin();
    tensor *y = o->x;
    for (int i = 0; i < OVH_OPS; i++) y = i & 1 ? tensor_mul(y, o->w) : tensor_add(y, o->w);
    if (o->mode == 2) tensor_backward(y);
    tensor_scope_end();
    if (o->mode == 2) {
        tensor_zero_grad(o->x);
        tensor_zero_grad(o->w);
    }
}

static const char *ovh_names[3] = {"op overhead, no autograd", "op overhead, autograd fwd", "op overhead, autograd fwd+bwd"};
static double ovh_measure(int mode) {
    ovh_case o;
    o.mode = mode;
    o.x = tensor_full(TENSOR_SHAPE(1), 0.25, TENSOR_F32);
    o.w = tensor_full(TENSOR_SHAPE(1), 0.5, TENSOR_F32);
    if (mode) tensor_set_requires_grad(o.x, true), tensor_set_requires_grad(o.w, true);
    double t = measure(ovh_run, &o, NULL) / OVH_OPS;
    die_on_error(ovh_names[mode]);
    tensor_free(o.x);
    tensor_free(o.w);
    return t;
}

static void bench_overhead(void) {
    section("op overhead on 1-element f32 tensors: chains of 100 ops (alternating add and mul) in a scope; "
            "time per op");
    tensor_set_num_threads(1);
    for (int mode = 0; mode < 3; mode++) {
        if (!wanted(ovh_names[mode])) continue;
        row(ovh_names[mode], 1, ovh_measure(mode), NULL, 0, 0,
            mode == 0 ? "y = op(y, w); freed at scope end" : mode == 1 ? "w requires grad: graph recorded" : "then backward through the chain");
    }
}

/* ---------------------------------------------------------------------------------------------- */
/* Training steps */

#define BATCH 64
typedef struct {
    tensor *p[6];
    int n_params;
    tensor *x, *y;
    tensor_optim *opt;
    bool cnn;
} train_case;

static tensor *param(int ndim, const int64_t *shape, double bound, uint64_t seed) {
    return tensor_set_requires_grad(uniform_tensor(ndim, shape, -bound, bound, seed), true);
}

static void train_step(void *p) {
    train_case *t = (train_case *)p;
    tensor_scope_begin();
    tensor *logits;
    if (t->cnn) { /* examples/fashion_mnist_cnn.c: conv 32 relu pool, conv 64 relu pool, linear */
        tensor *h = tensor_max_pool2d(tensor_relu(tensor_conv2d(t->x, t->p[0], t->p[1], 1, 1, 1, 1)), 2, 2, 0);
        h = tensor_max_pool2d(tensor_relu(tensor_conv2d(h, t->p[2], t->p[3], 1, 1, 1, 1)), 2, 2, 0);
        logits = tensor_linear(tensor_flatten(h, 1, -1), t->p[4], t->p[5]);
    } else { /* 784-256-10 MLP */
        logits = tensor_linear(tensor_relu(tensor_linear(t->x, t->p[0], t->p[1])), t->p[2], t->p[3]);
    }
    tensor *loss = tensor_cross_entropy(logits, t->y);
    tensor_optim_zero_grad(t->opt);
    if (tensor_backward(loss) || tensor_optim_step(t->opt)) die_on_error("training step");
    tensor_scope_end();
}

static void train_setup(train_case *t, bool cnn) {
    memset(t, 0, sizeof *t);
    t->cnn = cnn;
    if (cnn) {
        t->n_params = 6;
        t->p[0] = param(TENSOR_SHAPE(32, 1, 3, 3), 1 / 3.0, 41), t->p[1] = param(TENSOR_SHAPE(32), 1 / 3.0, 42);
        t->p[2] = param(TENSOR_SHAPE(64, 32, 3, 3), 1 / sqrt(288.0), 43), t->p[3] = param(TENSOR_SHAPE(64), 1 / sqrt(288.0), 44);
        t->p[4] = param(TENSOR_SHAPE(10, 64 * 7 * 7), 1 / sqrt(3136.0), 45), t->p[5] = param(TENSOR_SHAPE(10), 1 / sqrt(3136.0), 46);
        t->x = uniform_tensor(TENSOR_SHAPE(BATCH, 1, 28, 28), 0, 1, 47);
    } else {
        t->n_params = 4;
        t->p[0] = param(TENSOR_SHAPE(256, 784), 1 / 28.0, 41), t->p[1] = param(TENSOR_SHAPE(256), 1 / 28.0, 42);
        t->p[2] = param(TENSOR_SHAPE(10, 256), 1 / 16.0, 43), t->p[3] = param(TENSOR_SHAPE(10), 1 / 16.0, 44);
        t->x = uniform_tensor(TENSOR_SHAPE(BATCH, 784), 0, 1, 47);
    }
    int64_t labels[BATCH];
    for (int i = 0; i < BATCH; i++) labels[i] = (i * 7) % 10;
    t->y = tensor_from_data(labels, TENSOR_SHAPE(BATCH), TENSOR_I64);
    t->opt = tensor_optim_adamw(t->n_params, t->p, 1e-3, 0.9, 0.999, 1e-8, 1e-2);
    die_on_error("training setup");
}
static void train_free(train_case *t) {
    tensor_optim_free(t->opt);
    for (int i = 0; i < t->n_params; i++) tensor_free(t->p[i]);
    tensor_free(t->x);
    tensor_free(t->y);
}

static const char *train_names[2] = {"MLP 784-256-10 step, batch 64", "CNN step, batch 64"};
static double train_measure(bool cnn) {
    train_case t;
    train_setup(&t, cnn);
    double s = measure(train_step, &t, NULL);
    train_free(&t);
    return s;
}

/* Processes that spin on every core (the machine busy with other work); killed by busy_stop. */
static int busy_start(pid_t *pids, int n) {
    int started = 0;
    fflush(stdout);
    for (int i = 0; i < n; i++) {
        pid_t p = fork();
        if (p == 0) {
            volatile uint64_t x = 0;
            for (;;) x++;
        }
        if (p > 0) pids[started++] = p;
    }
    return started;
}
static void busy_stop(const pid_t *pids, int n) {
    for (int i = 0; i < n; i++) kill(pids[i], SIGKILL);
    for (int i = 0; i < n; i++) waitpid(pids[i], NULL, 0);
}

static void bench_training(void) {
    section("training steps (forward, cross_entropy, backward, AdamW step; compare with PyTorch: "
            "python3 bench/compare_torch.py)");
    double alone[2] = {0, 0};
    for (int cnn = 0; cnn < 2; cnn++) {
        if (!wanted(train_names[cnn])) continue;
        for (int threads = 1; threads <= 2; threads++) {
            tensor_set_num_threads(threads);
            double s = train_measure(cnn != 0);
            if (threads == 1) alone[cnn] = s;
            char note[64];
            sprintf(note, "%.0f steps/s%s", 1 / s, cnn ? "; the model of examples/fashion_mnist_cnn.c" : "");
            row(train_names[cnn], threads, s, NULL, 0, 0, note);
        }
    }
    /* The same steps on every core's worth of threads while as many processes spin on the cores:
       against the one-thread step on an idle machine (the pool must not wait for workers that the
       scheduler does not run; target: at most 3x that time, a ratio >= 0.33). */
    int cores = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (cores < 1) cores = 1;
    if (cores > 64) cores = 64;
    static const char *busy_names[2] = {"MLP step, cores busy", "CNN step, cores busy"};
    for (int cnn = 0; cnn < 2; cnn++) {
        if (!wanted(busy_names[cnn])) continue;
        if (alone[cnn] <= 0) {
            tensor_set_num_threads(1);
            alone[cnn] = train_measure(cnn != 0);
        }
        tensor_set_num_threads(cores);
        pid_t pids[64];
        int n = busy_start(pids, cores);
        double s = train_measure(cnn != 0);
        busy_stop(pids, n);
        char note[96];
        sprintf(note, "%d spinning processes beside it", n);
        row(busy_names[cnn], cores, s, "1 thread, idle machine", alone[cnn], 0, note);
    }
    tensor_set_num_threads(0);
}

/* ---------------------------------------------------------------------------------------------- */
/* --torch-subset: the items bench/compare_torch.py measures in PyTorch, one line each:
   "TORCH_SUBSET <item> <threads> <seconds per op/call/step>" */

static void torch_subset(int only_threads) {
    tensor *a = uniform_tensor(TENSOR_SHAPE(EW_N), -1, 1, 11);
    tensor *b = uniform_tensor(TENSOR_SHAPE(EW_N), -1, 1, 12);
    tensor *xe = uniform_tensor(TENSOR_SHAPE(EW_N), -10, 10, 13);
    tensor *xt = uniform_tensor(TENSOR_SHAPE(EW_N), -5, 5, 14);
    struct { const char *name; tensor *a, *b; tensor *(*unary)(tensor *); tensor *(*binary)(tensor *, tensor *); } ew[5] = {
        {"add_16M", a, b, NULL, tensor_add}, {"mul_16M", a, b, NULL, tensor_mul}, {"exp_16M", xe, NULL, tensor_exp, NULL},
        {"tanh_16M", xt, NULL, tensor_tanh, NULL}, {"gelu_16M", xt, NULL, tensor_gelu, NULL}};
    for (int threads = 1; threads <= 2; threads++) {
        if (only_threads && threads != only_threads) continue;
        tensor_set_num_threads(threads);
        for (int i = 0; i < 5; i++) {
            ew_case e;
            memset(&e, 0, sizeof e);
            e.a = ew[i].a, e.b = ew[i].b, e.unary = ew[i].unary, e.binary = ew[i].binary;
            printf("TORCH_SUBSET %s %d %.6e\n", ew[i].name, threads, measure(ew_ours, &e, NULL));
            fflush(stdout);
        }
        rng_case rc[2] = {{TENSOR_F32, false, NULL}, {TENSOR_F32, true, NULL}};
        printf("TORCH_SUBSET rand_16M %d %.6e\n", threads, measure(rng_ours, &rc[0], NULL));
        printf("TORCH_SUBSET randn_16M %d %.6e\n", threads, measure(rng_ours, &rc[1], NULL));
        static const char *ovh_items[3] = {"op_nograd", "op_grad_fwd", "op_grad_fwdbwd"};
        for (int mode = 0; mode < 3; mode++) printf("TORCH_SUBSET %s %d %.6e\n", ovh_items[mode], threads, ovh_measure(mode));
        printf("TORCH_SUBSET mlp_step %d %.6e\n", threads, train_measure(false));
        fflush(stdout);
        printf("TORCH_SUBSET cnn_step %d %.6e\n", threads, train_measure(true));
        fflush(stdout);
    }
    tensor_free(a), tensor_free(b), tensor_free(xe), tensor_free(xt);
}

/* ---------------------------------------------------------------------------------------------- */

/* The 1-minute load average: other work on the machine during the run makes the numbers noisy. */
static double loadavg(void) {
    double l = -1;
    FILE *f = fopen("/proc/loadavg", "r");
    if (f) {
        if (fscanf(f, "%lf", &l) != 1) l = -1;
        fclose(f);
    }
    return l;
}

/* The compile time a user pays on every rebuild of the file that holds the implementation: that
   translation unit (#define TENSOR_IMPLEMENTATION + #include "tensor.h") compiled with -O2 by the
   compiler the Makefile used (BENCH_CC) and by clang when there is one, CPU time of the compiler
   (user + system, from the children's rusage), the best of 3 runs. No reference: a figure. */
#ifndef BENCH_CC
#define BENCH_CC "cc"
#endif
static double compile_seconds(const char *cc) {
    char cmd[512];
    snprintf(cmd, sizeof cmd, "%s -O2 -I. -x c -c - -o /dev/null", cc);
    double best = -1;
    for (int rep = 0; rep < 3; rep++) {
        struct rusage before, after;
        getrusage(RUSAGE_CHILDREN, &before);
        FILE *p = popen(cmd, "w");
        if (!p) return -1;
        fputs("#define TENSOR_IMPLEMENTATION\n#include \"tensor.h\"\n", p);
        if (pclose(p) != 0) return -1;
        getrusage(RUSAGE_CHILDREN, &after);
        double t = (double)(after.ru_utime.tv_sec - before.ru_utime.tv_sec) + 1e-6 * (double)(after.ru_utime.tv_usec - before.ru_utime.tv_usec) +
                   (double)(after.ru_stime.tv_sec - before.ru_stime.tv_sec) + 1e-6 * (double)(after.ru_stime.tv_usec - before.ru_stime.tv_usec);
        if (best < 0 || t < best) best = t;
    }
    return best;
}
/* ---------------------------------------------------------------------------------------------- */
/* Loading a 1 GiB safetensors file (4 f32 tensors of 256 MiB) from the page cache (the file was
   just written): read into fresh storage, and mapped. The reference reads the same file with one
   fread into an existing 1 GiB buffer. A mapped load costs only the header's parse; its data is
   read on first use, so the last row times the mapped load plus a sum over every element against
   the read load plus the same sum. */
typedef struct { const char *path; int flags; bool sum; char *buf; size_t n; double total; } files_ctx;
static void files_load(void *vc) {
    files_ctx *c = (files_ctx *)vc;
    tensor_dict *d = tensor_load(c->path, c->flags);
    die_on_error("tensor_load");
    for (int i = 0; c->sum && i < tensor_dict_len(d); i++) c->total += tensor_item(tensor_sum_all(tensor_dict_at(d, i)));
    tensor_dict_free(d);
}
static void files_fread(void *vc) {
    files_ctx *c = (files_ctx *)vc;
    FILE *f = fopen(c->path, "rb");
    if (!f || fread(c->buf, 1, c->n, f) != c->n) { fprintf(stderr, "bench: cannot read %s\n", c->path); exit(1); }
    fclose(f);
}
static void bench_files(void) {
    if (!wanted("safetensors")) return;
    section("safetensors: load a 1 GiB file (4 x 256 MiB f32) from the page cache; reference: fread of the file into an existing buffer");
    char path[256];
    snprintf(path, sizeof path, "%s/tensor_bench_%d.safetensors", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    tensor_set_num_threads(1);
    tensor_dict *d = tensor_dict_new();
    for (int i = 0; i < 4; i++) {
        char name[32];
        snprintf(name, sizeof name, "layer.%d.weight", i);
        tensor *t = tensor_full(TENSOR_SHAPE(8192, 8192), 0.5 + i, TENSOR_F32);
        tensor_dict_set(d, name, t);
        tensor_free(t);
    }
    if (tensor_save(path, d) != 0) { fprintf(stderr, "bench: %s\n", tensor_last_error()); tensor_dict_free(d); return; }
    tensor_dict_free(d);
    FILE *f = fopen(path, "rb");
    fseek(f, 0, SEEK_END);
    size_t n = (size_t)ftell(f);
    fclose(f);
    char *buf = (char *)malloc(n);
    memset(buf, 0, n);
    double gb = (double)n / 1e9;
    files_ctx ref = {path, 0, false, buf, n, 0}, ours = {path, 0, false, NULL, 0, 0};
    double g = g_budget;
    g_budget = 3 * g;
    char note[96];
    double tr = measure(files_fread, &ref, NULL), to = measure(files_load, &ours, NULL);
    snprintf(note, sizeof note, "%.1f GB/s vs %.1f GB/s", gb / to, gb / tr);
    row("load, read", 1, to, "fread", tr, 0, note);
    ours.flags = TENSOR_LOAD_MMAP;
    to = measure(files_load, &ours, NULL);
    /* no ratio: the data is not read yet, so a ratio to fread would compare unlike work (the row
       after this one is the comparison) */
    snprintf(note, sizeof note, "the header's parse only; data read on first use (fread: %.1f GB/s)", gb / tr);
    row("load, mapped", 1, to, NULL, 0, 0, note);
    files_ctx read_sum = {path, 0, true, NULL, 0, 0};
    ours.sum = true;
    tr = measure(files_load, &read_sum, NULL);
    to = measure(files_load, &ours, NULL);
    snprintf(note, sizeof note, "%.1f GB/s vs %.1f GB/s", gb / to, gb / tr);
    row("load, mapped + sum of all", 1, to, "load, read + sum", tr, 0, note);
    g_budget = g;
    free(buf);
    remove(path);
}

static void bench_compile(void) {
    if (!wanted("compile")) return;
    section("compile time of the implementation TU (-O2, compiler CPU time, best of 3; target <= 6 s)");
    section_flush();
    const char *ccs[2] = {BENCH_CC, "clang"};
    for (int i = 0; i < 2; i++) {
        if (i == 1 && (strstr(BENCH_CC, "clang") || system("command -v clang > /dev/null 2>&1") != 0)) break;
        double t = compile_seconds(ccs[i]);
        if (t < 0) printf("%-32s could not compile with %s\n", "compile tensor.h impl", ccs[i]);
        else printf("%-32s    %9.2f s   (%s -O2 -c, from the project root)\n", "compile tensor.h impl", t, ccs[i]);
    }
}

static void print_header(void) {
    char cpu[128] = "unknown CPU";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[256];
        while (fgets(line, sizeof line, f))
            if (!strncmp(line, "model name", 10)) {
                char *c = strchr(line, ':');
                if (c) {
                    snprintf(cpu, sizeof cpu, "%s", c + 2);
                    cpu[strcspn(cpu, "\n")] = 0;
                }
                break;
            }
        fclose(f);
    }
    printf("tensor.h benchmark. CPU: %s, %d cores. %s\n", cpu, tensor_get_num_threads(), tensor_build_info());
    printf("OpenBLAS: %s; core %s (%s ISA), %s.\n", openblas_get_config(), openblas_get_corename(),
           blas_core_level(openblas_get_corename()) == 3 ? "AVX-512" : blas_core_level(openblas_get_corename()) == 2 ? "AVX2" : "pre-AVX2",
           g_blas_how);
    if (g_blas_unfit) printf("WARNING: %s.\n", g_blas_unfit);
    printf("libmvec: %s. SLEEF: %s.\n",
#ifdef BENCH_X86
           have_avx2() ? "AVX2 variants" : "not measured (no AVX2)",
#else
           "not measured (not x86)",
#endif
#ifdef BENCH_HAVE_SLEEF
           "Sleef_expf8_u10"
#else
           "not built in"
#endif
    );
    if (loadavg() >= 0) printf("Load average (1 min) at start: %.2f (other processes running make the numbers noisy).\n", loadavg());
    printf("Times: median of repeated runs after a warm-up run (%.2f s of runs per side, 3 to %d runs); tensor.h and its\n"
           "reference run alternately, so a change in load hits both.\n"
           "Ratio = reference time / tensor.h time: \"tensor.h is X.XXx the reference's speed\", > 1 means tensor.h is faster.\n",
           g_budget, g_max_reps);
    printf("\n%-32s %2s %10s%-12s %-24s %10s%-12s %s\n", "item", "th", "tensor.h", "", "reference", "ref. time", "", "ratio");
}

int main(int argc, char **argv) {
    bool subset = false;
    int only_threads = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) g_budget = 0.1, g_max_reps = 11;
        else if (!strcmp(argv[i], "--torch-subset")) subset = true;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) g_only = argv[++i];
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) only_threads = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: %s [--quick] [--only SUBSTRING] | --torch-subset [--threads N]\n", argv[0]);
            return 2;
        }
    }
    blas_choose_core(argv);
    double t0 = now_s();
    if (subset) {
        torch_subset(only_threads);
        tensor_shutdown();
        return 0;
    }
    print_header();
    bench_gemms();
    bench_elementwise();
    bench_half();
    bench_random();
    bench_rows();
    bench_conv();
    bench_conv_bf16();
    bench_overhead();
    bench_training();
    bench_files();
    bench_compile();
    tensor_set_num_threads(0);
    printf("\nbench: done in %.0f s", now_s() - t0);
    if (loadavg() >= 0) printf("; load average (1 min) at the end: %.2f", loadavg());
    printf("\n");
    tensor_shutdown();
    return 0;
}
