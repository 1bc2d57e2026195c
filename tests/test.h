/* test.h: the test harness. Each tests/test_*.c file defines TEST(name) functions; they register
   themselves at start-up and tests/main.c runs them all, then prints `N passed, N failed`. */
#ifndef TEST_H
#define TEST_H
#define TENSOR_TEST_HOOKS /* tensor_test_path_count */
#include "../tensor.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef void (*test_fn)(void);
void test_register(const char *name, const char *file, test_fn fn);
void test_fail(const char *file, int line, const char *fmt, ...);
/* layer_norm (rms: rms_norm) of R rows of C in double: malloc'd, w and b may be NULL. */
double *test_ref_norm(const double *x, int64_t R, int64_t C, const double *w, const double *b, double eps, bool rms);
/* The SIMD level tensor_build_info() names, as "avx512f (16 x f32)" (a static buffer). */
const char *test_simd_level(void);
/* Bitwise-equal values (through double: -0 and NaN payloads survive the conversion). */
bool test_same_bits(tensor *a, tensor *b);
/* Whether this CPU runs the SIMD instance `level` (avx512, avx2, sse2, scalar), and: this binary
   run again in a child process with TENSOR_SIMD=level (after the environment assignments `env`,
   "" for none) on the tests matching `filter`; the child's lines holding FAIL or `echo` are
   printed, and a last line other than "N passed, 0 failed" with N > 0 fails the calling test.
   Linux (the binary finds itself in /proc). */
bool test_cpu_runs(const char *level);
/* start + sum_p a[p * as] b[p * bs] over p < k in double, the reference of the GEMM tests; *bound
   gets |start| + sum_p |a b|, which scales the error they allow. */
double test_gemm_dot(int64_t k, const double *a, int64_t as, const double *b, int64_t bs, double start, double *bound);
void test_run_at_simd_level(const char *file, int line, const char *level, const char *env, const char *filter, const char *echo);
/* Marks the running test skipped (printing `skipped: TEST: reason`): unless it also fails, it
   counts as neither passed nor failed. */
void test_skip(const char *fmt, ...);
/* The same for what this CPU cannot run (an instruction set it lacks), printing `skipped: TEST:
   not on this CPU: reason`: no package installs it, so CI (.ci/run) accepts these skips only. */
void test_skip_cpu(const char *fmt, ...);
/* The GEMM of >>gemm on raw buffers (f32 or f64): C[m, n] (+)= A[m, k] B[k, n], each addressed
   through element strides (A's (i, p) at A[i * a_rs + p * a_cs]). False when it ran out of memory. */
bool test_gemm_strided(bool f64, int64_t m, int64_t n, int64_t k, const void *A, int64_t a_rs, int64_t a_cs, const void *B, int64_t b_rs,
                       int64_t b_cs, void *C, int64_t c_rs, int64_t c_cs, bool add);
/* The same with A and B of dtype sd (f32, f16 or bf16) into an f32 C. */
bool test_gemm_strided_src(tensor_dtype sd, int64_t m, int64_t n, int64_t k, const void *A, int64_t a_rs, int64_t a_cs, const void *B,
                           int64_t b_rs, int64_t b_cs, float *C, int64_t c_rs, int64_t c_cs, bool add);
/* Whether bf16 operands run the bf16 (vdpbf16ps) GEMM kernel here. */
bool test_gemm_has_bf16(void);
/* The SIMD layer's bf16 (f16 when `f16`) <-> f32 row conversions at this run's SIMD level,
   and the scalar conversions of >>impl they must agree with (for tests/test_half.c). */
void test_half_widen(bool f16, float *out, const uint16_t *in, int64_t n);
void test_half_narrow(bool f16, uint16_t *out, const float *in, int64_t n);
float test_half_to_f32(bool f16, uint16_t h);
uint16_t test_f32_to_half(bool f16, float f);
/* Asserts that `result` is NULL (or an int < 0) and that the recorded error names `fn`. */
void test_expect_error(const char *file, int line, bool failed, const char *fn, const char *expr);

#define TEST(name)                                                                                       \
    static void test_##name(void);                                                                       \
    __attribute__((constructor)) static void test_register_##name(void) { test_register(#name, __FILE__, test_##name); } \
    static void test_##name(void)

#define CHECK(cond) do { if (!(cond)) test_fail(__FILE__, __LINE__, "CHECK(%s)", #cond); } while (0)
#define CHECK_MSG(cond, ...) do { if (!(cond)) test_fail(__FILE__, __LINE__, __VA_ARGS__); } while (0)
/* |a - b| <= atol + rtol * |b|, NaNs equal */
#define CHECK_NEAR(a, b, atol, rtol) do {                                                              \
        double test_a_ = (a), test_b_ = (b);                                                           \
        if (!((test_a_ != test_a_ && test_b_ != test_b_) || test_a_ == test_b_ ||                      \
              fabs(test_a_ - test_b_) <= (atol) + (rtol) * fabs(test_b_)))                             \
            test_fail(__FILE__, __LINE__, "CHECK_NEAR(%s, %s): %.17g vs %.17g", #a, #b, test_a_, test_b_); \
    } while (0)
/* `expr` (a tensor *) must fail with a message naming fn. Clears the error first and after. */
#define CHECK_BAD(expr, fn) do {                                                                       \
        tensor_clear_error();                                                                          \
        tensor *test_r_ = (expr);                                                                      \
        test_expect_error(__FILE__, __LINE__, test_r_ == NULL, fn, #expr);                             \
        tensor_free(test_r_);                                                                          \
        tensor_clear_error();                                                                          \
    } while (0)
/* Same for functions returning int (failure: < 0 or != 0 as documented: pass the failed flag). */
#define CHECK_BAD_INT(failed_expr, fn) do {                                                            \
        tensor_clear_error();                                                                          \
        bool test_f_ = (failed_expr);                                                                  \
        test_expect_error(__FILE__, __LINE__, test_f_, fn, #failed_expr);                              \
        tensor_clear_error();                                                                          \
    } while (0)

/* 1 when the upper halves of the ymm/zmm registers are left in use (a kernel returned without
   vzeroupper, which slows every later SSE instruction), 0 when clean, -1 where the CPU cannot tell.
   main.c checks it after every test. */
int test_upper_vector_state_dirty(void);
/* Failures recorded so far in the running test. */
int test_failures_in_current_test(void);

/* ---- the device seam (tests/test_seam.c) ---- */
/* Makes d the registered CUDA device and forgets the checks of the previous one, as if the
   program had started with d linked (NULL: none). */
void test_device_install(const tensor__device *d);
/* Where the fake device's bytes are on the host: host code that takes a device tensor's data
   pointer (counted, and the test fails) then reads them, so a sweep goes on to the next case. */
void test_device_host_of(void *(*host_of)(const void *device_ptr));
/* Installs the seam's mirror device as CUDA unless it is installed (tests/test_seam.c); false with a
   failure recorded when it cannot be. */
bool test_mirror_device_ready(void);
/* Set by a test: run once after it ends (the harness clears it), e.g. to take its device away. */
extern void (*test_cleanup)(void);
/* Whether the dispatch table holds a kernel for op on device (after the device's checks). */
bool test_device_has_kernel(tensor_op op, tensor_device device);
/* The seam's mirror device (tests/test_seam.c): runs op dc->op's CPU kernel over the operands of a
   device call, each wrapped as a CPU tensor over the host memory that to_host gives for its device
   pointer (dropout in training draws the words the call names, as a device's kernel does).
   Whether the op has a CPU kernel: test_has_cpu_kernel. 0 ok, else 1 with dc->error. */
int test_mirror_kernel(tensor__dev_call *dc, void *(*to_host)(const void *dev));
/* The same for a fused backward kernel (tensor__device.backward_kernels): op dc->op's derivative
   (tensor_autograd.h) on the CPU over the record's saved inputs and gradient, each gradient
   wanted (dc->grads[i].data) written in its input's shape and dtype. */
int test_mirror_backward(tensor__dev_call *dc, void *(*to_host)(const void *dev));
bool test_has_cpu_kernel(tensor_op op);
/* The kind of an op in ops.def ("UNARY", "BINARY", ...). */
const char *test_op_kind(tensor_op op);
/* The library's own conversions of one element (>>impl's generic loads and stores). */
double test_load_f64(const void *p, tensor_dtype d);
int64_t test_load_i64(const void *p, tensor_dtype d);
void test_store_f64(void *p, tensor_dtype d, double v);
void test_store_i64(void *p, tensor_dtype d, int64_t v);
/* The library generator's block `counter` of `stream` (>>rng's Philox4x32-10). */
void test_philox_block(const uint32_t key[2], uint64_t counter, uint32_t stream, uint32_t out[4]);

/* ---- helpers for writing expected values ---- */
/* A tensor from a list of doubles, converted to dtype. */
tensor *test_tensor(tensor_dtype dtype, int ndim, const int64_t *shape, const double *values);
/* Every element of t, row-major, as doubles (caller frees). */
double *test_values(tensor *t);
/* t (any dtype/layout) compared elementwise with expected (row-major), with tolerances. */
void test_check_values(const char *file, int line, tensor *t, const double *expected, int64_t n, double atol, double rtol);
#define CHECK_VALUES(t, expected, n, atol, rtol) test_check_values(__FILE__, __LINE__, t, expected, n, atol, rtol)
/* t has exactly this shape. */
void test_check_shape(const char *file, int line, tensor *t, int ndim, const int64_t *shape);
#define CHECK_SHAPE(t, ...) test_check_shape(__FILE__, __LINE__, t, __VA_ARGS__)
/* Elements of a shape. */
int64_t test_numel(int ndim, const int64_t *shape);
/* A tensor of uniform values in [lo, hi) from test_uniform, rounded to dtype. */
tensor *test_random(tensor_dtype dtype, int ndim, const int64_t *shape, double lo, double hi);
/* Tolerance suited to a dtype's precision (relative). */
double test_tol(tensor_dtype d);
/* Random doubles in [lo, hi) from a small local generator (independent of the library's RNG). */
double test_uniform(double lo, double hi);

/* ---- gradient checks (f64, central differences) ----
   f maps the inputs to one tensor; the check compares d sum(f(in) * w) / d in[i], for fixed random
   weights w, against (L(x + eps) - L(x - eps)) / 2 eps for every element of every input that requires
   grad. Inputs must be contiguous f64 leaves (make views inside f to test non-contiguous paths).
   gradgradcheck does the same for the scalar sum_i sum(grad_i * v_i) computed with create_graph, so
   it checks second derivatives. Both record failures through test_fail and return the number of
   elements compared. */
typedef tensor *(*test_fn_of)(tensor *const *in, const void *ctx);
int test_gradcheck(const char *file, int line, test_fn_of f, const void *ctx, int n, tensor *const *in, double atol, double rtol);
int test_gradgradcheck(const char *file, int line, test_fn_of f, const void *ctx, int n, tensor *const *in, double atol, double rtol);
#define GRADCHECK(f, ctx, n, in) test_gradcheck(__FILE__, __LINE__, f, ctx, n, in, 1e-6, 1e-5)
#define GRADGRADCHECK(f, ctx, n, in) test_gradgradcheck(__FILE__, __LINE__, f, ctx, n, in, 1e-5, 1e-4)
/* While set (tests/test_empty.c's sweep), test_gradcheck and test_gradgradcheck hand their
   arguments to this function instead (order 1 or 2) and return what it returns. */
typedef int (*test_gradcheck_divert_fn)(const char *file, int line, test_fn_of f, const void *ctx, int n, tensor *const *in, int order);
extern test_gradcheck_divert_fn test_gradcheck_divert;
/* t on like's device (a constant a gradient check's function makes beside its inputs, so the
   seam's mirror device runs the case too: tests/test_seam.c); t when like is NULL or there. */
tensor *test_like(tensor *like, tensor *t);
/* An f64 leaf that requires grad, filled with uniform values in [lo, hi) from test_uniform. */
tensor *test_leaf(int ndim, const int64_t *shape, double lo, double hi);
#endif
