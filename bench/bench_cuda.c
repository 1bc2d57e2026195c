/* bench_cuda.c: tensor.h's CUDA device against the references measured in the same run on the same
   GPU: cuBLAS called directly for matmul, the device-to-device cudaMemcpy bandwidth for the
   memory-bound ops, and the launch overhead of a 1-element op. Every row prints what was measured
   and the ratio (tensor.h / reference for speed: > 1 is faster). `make bench-cuda` builds and
   runs it (a machine with a GPU; bench/compare_torch_cuda.py adds PyTorch's figures). */
#define TENSOR_IMPLEMENTATION
#include "../tensor.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static void die(const char *what) {
    fprintf(stderr, "bench_cuda: %s: %s\n", what, tensor_last_error() ? tensor_last_error() : "failed");
    exit(1);
}
#define CUDA_OK(x) do { cudaError_t e_ = (x); if (e_ != cudaSuccess) { fprintf(stderr, "bench_cuda: %s: %s\n", #x, cudaGetErrorString(e_)); exit(1); } } while (0)
#define BLAS_OK(x) do { cublasStatus_t s_ = (x); if (s_ != CUBLAS_STATUS_SUCCESS) { fprintf(stderr, "bench_cuda: %s: status %d\n", #x, (int)s_); exit(1); } } while (0)

/* With BENCH_CUDA_ROWS=FILE, each row's figure also goes to FILE as `key value` (the unit of the
   printed row), for bench/compare_torch_cuda.py to set PyTorch's figure of the same row beside it. */
static FILE *rows_file;
static void row_value(const char *key, double v) {
    if (rows_file) fprintf(rows_file, "%s %.6g\n", key, v);
}

/* Seconds per call of fn(ctx), the best of 5 rounds of `reps` calls, each round ended by a
   synchronization of both tensor.h's stream and the default stream. */
typedef void (*bench_fn)(void *ctx);
static double best_of(bench_fn fn, void *ctx, int reps) {
    fn(ctx); /* warm up: allocator, cuBLAS handles, kernels loaded */
    if (tensor_cuda_synchronize()) die("synchronize");
    CUDA_OK(cudaDeviceSynchronize());
    double best = 1e30;
    for (int r = 0; r < 5; r++) {
        double t0 = now();
        for (int i = 0; i < reps; i++) fn(ctx);
        if (tensor_cuda_synchronize()) die("synchronize");
        CUDA_OK(cudaDeviceSynchronize());
        double t = (now() - t0) / reps;
        if (t < best) best = t;
    }
    return best;
}

/* ---- matmul: tensor_matmul (allocating its result) vs cuBLAS into an existing buffer ---- */
typedef struct { tensor *a, *b; cublasHandle_t h; void *da, *db, *dc; int n; bool bf16; } mm_ctx;
static void mm_tensor(void *v) {
    mm_ctx *c = (mm_ctx *)v;
    tensor *r = tensor_matmul(c->a, c->b);
    if (!r) die("tensor_matmul");
    tensor_free(r);
}
static void mm_cublas(void *v) {
    mm_ctx *c = (mm_ctx *)v;
    const float one = 1, zero = 0;
    if (c->bf16)
        BLAS_OK(cublasGemmEx(c->h, CUBLAS_OP_N, CUBLAS_OP_N, c->n, c->n, c->n, &one, c->db, CUDA_R_16BF, c->n, c->da, CUDA_R_16BF, c->n, &zero, c->dc,
                             CUDA_R_16BF, c->n, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
    else
        BLAS_OK(cublasSgemm(c->h, CUBLAS_OP_N, CUBLAS_OP_N, c->n, c->n, c->n, &one, (const float *)c->db, c->n, (const float *)c->da, c->n, &zero,
                            (float *)c->dc, c->n));
}
static void bench_matmul(cublasHandle_t h, int n, bool bf16) {
    tensor_scope_begin();
    tensor_dtype dt = bf16 ? TENSOR_BF16 : TENSOR_F32;
    mm_ctx c;
    c.h = h;
    c.n = n;
    c.bf16 = bf16;
    c.a = tensor_to_device(tensor_to_dtype(tensor_randn(TENSOR_SHAPE(n, n), TENSOR_F32), dt), TENSOR_CUDA);
    c.b = tensor_to_device(tensor_to_dtype(tensor_randn(TENSOR_SHAPE(n, n), TENSOR_F32), dt), TENSOR_CUDA);
    if (!c.a || !c.b) die("matmul inputs");
    size_t bytes = (size_t)n * n * (bf16 ? 2 : 4);
    CUDA_OK(cudaMalloc(&c.da, bytes));
    CUDA_OK(cudaMalloc(&c.db, bytes));
    CUDA_OK(cudaMalloc(&c.dc, bytes));
    CUDA_OK(cudaMemset(c.da, 0, bytes));
    CUDA_OK(cudaMemset(c.db, 0, bytes));
    int reps = n >= 8192 ? 3 : n >= 4096 ? 10 : 50;
    double t = best_of(mm_tensor, &c, reps), r = best_of(mm_cublas, &c, reps);
    double flop = 2.0 * n * (double)n * n;
    printf("matmul %-5s %5d          %8.1f TFLOP/s   %-22s %8.1f TFLOP/s   %5.2fx\n", bf16 ? "bf16" : "f32", n, flop / t * 1e-12,
           bf16 ? "cublasGemmEx" : "cublasSgemm", flop / r * 1e-12, r / t);
    char key[32];
    snprintf(key, sizeof key, "matmul_%s_%d", bf16 ? "bf16" : "f32", n);
    row_value(key, flop / t * 1e-12);
    cudaFree(c.da);
    cudaFree(c.db);
    cudaFree(c.dc);
    tensor_scope_end();
}

/* ---- memory-bound ops: bytes moved per second against cudaMemcpy's (read + write) ---- */
typedef struct { tensor *x, *y; int which; void *src, *dst; size_t bytes; } bw_ctx;
static void bw_tensor(void *v) {
    bw_ctx *c = (bw_ctx *)v;
    tensor *r = c->which == 0 ? tensor_add(c->x, c->y) : c->which == 1 ? tensor_mul(c->x, c->y) : c->which == 2 ? tensor_exp(c->x)
              : c->which == 3 ? tensor_sum(c->x, 1, false) : c->which == 4 ? tensor_softmax(c->x, 1) : tensor_layer_norm(c->x, NULL, NULL, 1e-5);
    if (!r) die("memory-bound op");
    tensor_free(r);
}
static void bw_memcpy(void *v) {
    bw_ctx *c = (bw_ctx *)v;
    CUDA_OK(cudaMemcpy(c->dst, c->src, c->bytes, cudaMemcpyDeviceToDevice));
}
static void bench_bandwidth(void) {
    static const char *const names[6] = {"add", "mul", "exp", "sum over rows", "softmax over rows", "layer_norm"};
    static const char *const keys[6] = {"add", "mul", "exp", "sum_rows", "softmax_rows", "layer_norm"};
    const int64_t n = (int64_t)1 << 28; /* 256M floats: 1 GiB */
    bw_ctx c;
    c.bytes = (size_t)n * 4;
    CUDA_OK(cudaMalloc(&c.src, c.bytes));
    CUDA_OK(cudaMalloc(&c.dst, c.bytes));
    CUDA_OK(cudaMemset(c.src, 0, c.bytes));
    double m = best_of(bw_memcpy, &c, 10), mbw = 2.0 * (double)c.bytes / m;
    printf("cudaMemcpy device to device, 1 GiB: %.0f GB/s (read + write)\n", mbw * 1e-9);
    for (int which = 0; which < 6; which++) {
        tensor_scope_begin();
        int64_t rows = which >= 3 ? 16384 : 1, cols = n / rows;
        c.x = tensor_to_device(tensor_rand(TENSOR_SHAPE(rows, cols), TENSOR_F32), TENSOR_CUDA);
        c.y = which < 2 ? tensor_to_device(tensor_rand(TENSOR_SHAPE(rows, cols), TENSOR_F32), TENSOR_CUDA) : NULL;
        if (!c.x || (which < 2 && !c.y)) die("bandwidth inputs");
        c.which = which;
        double t = best_of(bw_tensor, &c, 10);
        double moved = (double)c.bytes * (which < 2 ? 3 : which == 3 ? 1 : 2); /* inputs read + output written */
        printf("%-18s 256M f32    %8.0f GB/s          %-22s %8.0f GB/s      %5.2fx\n", names[which], moved / t * 1e-9, "cudaMemcpy", mbw * 1e-9, moved / t / mbw);
        row_value(keys[which], moved / t * 1e-9);
        tensor_scope_end();
    }
    cudaFree(c.src);
    cudaFree(c.dst);
}

/* ---- per-op overhead: 100 alternating add/mul on 1-element CUDA tensors, no autograd ---- */
typedef struct { tensor *a, *b; } oh_ctx;
static void oh_chain(void *v) {
    oh_ctx *c = (oh_ctx *)v;
    tensor_scope_begin();
    tensor *x = c->a;
    for (int i = 0; i < 100; i++) x = i & 1 ? tensor_mul(x, c->b) : tensor_add(x, c->b);
    if (!x) die("overhead chain");
    tensor_scope_end();
}

/* ---- training steps of examples/ at batch 256 (AdamW; random data): forward, backward, step ---- */
typedef struct { tensor *w[8]; tensor_optim *opt; tensor *x, *y; bool cnn; int failed; } step_ctx;
static tensor *cuda_param(int ndim, const int64_t *shape) {
    tensor *h = tensor_mul_scalar(tensor_randn(ndim, shape, TENSOR_F32), 0.05);
    tensor *d = tensor_to_device(h, TENSOR_CUDA);
    tensor_free(h);
    return d ? tensor_set_requires_grad(d, true) : NULL;
}
static void train_step(void *v) {
    step_ctx *c = (step_ctx *)v;
    if (c->failed) return;
    tensor_scope_begin();
    tensor **w = c->w, *h;
    if (c->cnn) {
        h = tensor_max_pool2d(tensor_relu(tensor_conv2d(c->x, w[0], w[1], 1, 1, 1, 1)), 2, 2, 0);
        h = tensor_max_pool2d(tensor_relu(tensor_conv2d(h, w[2], w[3], 1, 1, 1, 1)), 2, 2, 0);
        h = tensor_dropout(tensor_relu(tensor_linear(tensor_flatten(h, 1, -1), w[4], w[5])), 0.25, true);
        h = tensor_linear(h, w[6], w[7]);
    } else {
        h = tensor_relu(tensor_linear(c->x, w[0], w[1]));
        h = tensor_relu(tensor_linear(h, w[2], w[3]));
        h = tensor_linear(h, w[4], w[5]);
    }
    tensor_optim_zero_grad(c->opt);
    if (tensor_backward(tensor_cross_entropy(h, c->y)) || tensor_optim_step(c->opt)) c->failed = 1;
    tensor_scope_end();
}
static void bench_training(bool cnn) {
    tensor_scope_begin();
    step_ctx c;
    memset(&c, 0, sizeof c);
    c.cnn = cnn;
    int n = cnn ? 8 : 6;
    if (cnn) {
        c.w[0] = cuda_param(TENSOR_SHAPE(32, 1, 3, 3)), c.w[1] = cuda_param(TENSOR_SHAPE(32));
        c.w[2] = cuda_param(TENSOR_SHAPE(64, 32, 3, 3)), c.w[3] = cuda_param(TENSOR_SHAPE(64));
        c.w[4] = cuda_param(TENSOR_SHAPE(128, 64 * 7 * 7)), c.w[5] = cuda_param(TENSOR_SHAPE(128));
        c.w[6] = cuda_param(TENSOR_SHAPE(10, 128)), c.w[7] = cuda_param(TENSOR_SHAPE(10));
        c.x = tensor_to_device(tensor_rand(TENSOR_SHAPE(256, 1, 28, 28), TENSOR_F32), TENSOR_CUDA);
    } else {
        c.w[0] = cuda_param(TENSOR_SHAPE(256, 784)), c.w[1] = cuda_param(TENSOR_SHAPE(256));
        c.w[2] = cuda_param(TENSOR_SHAPE(128, 256)), c.w[3] = cuda_param(TENSOR_SHAPE(128));
        c.w[4] = cuda_param(TENSOR_SHAPE(10, 128)), c.w[5] = cuda_param(TENSOR_SHAPE(10));
        c.x = tensor_to_device(tensor_rand(TENSOR_SHAPE(256, 784), TENSOR_F32), TENSOR_CUDA);
    }
    c.y = tensor_to_device(tensor_randint(0, 10, TENSOR_SHAPE(256), TENSOR_I64), TENSOR_CUDA);
    for (int i = 0; i < n; i++) if (!c.w[i]) die("training parameters");
    if (!c.x || !c.y || !(c.opt = tensor_optim_adamw(n, c.w, 1e-3, 0.9, 0.999, 1e-8, 1e-2))) die("training setup");
    double t = best_of(train_step, &c, 50);
    if (c.failed) printf("%s training step, batch 256: not available: %s\n", cnn ? "CNN" : "MLP", tensor_last_error());
    else {
        printf("%s training step, batch 256  %8.1f us (bench/compare_torch_cuda.py: PyTorch's)\n", cnn ? "CNN" : "MLP", t * 1e6);
        row_value(cnn ? "cnn_step_us" : "mlp_step_us", t * 1e6);
    }
    tensor_clear_error();
    tensor_optim_free(c.opt);
    tensor_scope_end();
}

int main(void) {
    if (!tensor_cuda_available()) {
        tensor *t = tensor_zeros(TENSOR_SHAPE(1), TENSOR_F32), *d = tensor_to_device(t, TENSOR_CUDA);
        printf("skipped: bench-cuda: %s\n", d ? "?" : tensor_last_error());
        return 0;
    }
    const char *rows = getenv("BENCH_CUDA_ROWS");
    if (rows && !(rows_file = fopen(rows, "w"))) { perror(rows); return 1; }
    printf("%s\n", tensor_build_info());
    printf("%-31s %-22s %-22s %-14s %s\n", "item", "tensor.h", "reference", "", "ratio");
    cublasHandle_t h;
    BLAS_OK(cublasCreate(&h));
    tensor_set_allow_tf32(false); /* f32 is f32 unless a user opts in, as cublasSgemm here */
    BLAS_OK(cublasSetMathMode(h, CUBLAS_DEFAULT_MATH));
    static const int sizes[4] = {1024, 2048, 4096, 8192};
    for (int i = 0; i < 4; i++) bench_matmul(h, sizes[i], false);
    for (int i = 0; i < 4; i++) bench_matmul(h, sizes[i], true);
    cublasDestroy(h);
    bench_bandwidth();
    oh_ctx c;
    c.a = tensor_to_device(tensor_scalar(1, TENSOR_F32), TENSOR_CUDA);
    c.b = tensor_to_device(tensor_scalar(1.0001, TENSOR_F32), TENSOR_CUDA);
    if (!c.a || !c.b) die("overhead inputs");
    double t = best_of(oh_chain, &c, 100) / 100;
    printf("per-op overhead, 1 element  %8.2f us per op (host time with the launch; bench/compare_torch_cuda.py measures PyTorch's)\n", t * 1e6);
    row_value("overhead_us", t * 1e6);
    tensor_free(c.a);
    tensor_free(c.b);
    bench_training(false);
    bench_training(true);
    if (rows_file) fclose(rows_file);
    tensor_shutdown();
    return 0;
}
