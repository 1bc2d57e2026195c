/* The CUDA suite (make test-cuda, on a machine with a GPU): tensor_cuda.o against the CPU
   reference. Every op the CPU has a kernel for must have a CUDA kernel: the first test lists
   the ones missing and fails while any is. */
#include "../device_sweep.h"

#define NEED_GPU() do { if (!tensor_cuda_available()) { test_skip("no CUDA device"); return; } } while (0)

TEST(cuda_every_registry_op_has_a_kernel) {
    NEED_GPU();
    char missing[4096] = "";
    int n = 0;
    for (int op = 0; op < TENSOR_OP_COUNT; op++)
        if (test_device_has_kernel((tensor_op)op, TENSOR_CPU) && !test_device_has_kernel((tensor_op)op, TENSOR_CUDA)) {
            size_t len = strlen(missing);
            snprintf(missing + len, sizeof missing - len, "%s%s", n ? " " : "", tensor_op_name((tensor_op)op));
            n++;
        }
    CHECK_MSG(n == 0, "%d ops have no CUDA kernel: %s", n, missing);
}

TEST(cuda_elementwise_ops_match_the_cpu) {
    NEED_GPU();
    device_sweep_elementwise();
}

TEST(cuda_transfers_every_dtype_and_layout) {
    NEED_GPU();
    for (int dt = 0; dt < TENSOR_DTYPE_COUNT; dt++) {
        tensor_scope_begin();
        tensor *b = tensor_to_dtype(tensor_reshape(tensor_arange(0, 4096 * 3, 1, TENSOR_F64), TENSOR_SHAPE(3, 64, 64)), (tensor_dtype)dt);
        tensor *views[4] = {b, tensor_transpose(b, 0, 2), tensor_slice(b, 2, 1, 60, 3), tensor_expand(tensor_slice(b, 0, 0, 1, 1), TENSOR_SHAPE(5, 64, 64))};
        for (int v = 0; v < 4; v++) {
            tensor *d = device_cuda(views[v]);
            CHECK(d && tensor_get_device(d) == TENSOR_CUDA);
            tensor *h = tensor_to_device(tensor_transpose(d, 0, 1), TENSOR_CPU);
            CHECK(h && test_same_bits(h, tensor_transpose(views[v], 0, 1)));
        }
        tensor_scope_end();
    }
}

/* Many sizes allocated and freed out of order: every tensor keeps its own values. */
TEST(cuda_allocator_under_churn) {
    NEED_GPU();
    enum { N = 64 };
    tensor *keep[N] = {NULL};
    uint64_t seed = 12345;
    for (int round = 0; round < 2000; round++) {
        seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
        int slot = (int)(seed >> 58);
        int64_t n = (int64_t)((seed >> 20) % (round % 10 == 0 ? 3000000 : 5000)) + 1;
        tensor_free(keep[slot]);
        keep[slot] = NULL;
        tensor *h = tensor_full(1, &n, (double)slot, TENSOR_F32);
        keep[slot] = tensor_to_device(h, TENSOR_CUDA);
        tensor_free(h);
        CHECK(keep[slot]);
        if (round % 97 == 0) tensor_empty_cache();
    }
    for (int i = 0; i < N; i++) {
        if (!keep[i]) continue;
        tensor *h = tensor_to_device(keep[i], TENSOR_CPU);
        double *v = h ? test_values(h) : NULL;
        bool ok = v != NULL;
        for (int64_t j = 0; ok && j < tensor_numel(h); j++) ok = v[j] == i;
        CHECK_MSG(ok, "slot %d lost its values", i);
        free(v);
        tensor_free(h);
        tensor_free(keep[i]);
    }
    CHECK(tensor_cuda_synchronize() == 0);
}

TEST(cuda_errors) {
    NEED_GPU();
    tensor_scope_begin();
    /* out of device memory: an error with the sizes, never an abort; the device still works after */
    tensor *huge = tensor_expand(tensor_zeros(TENSOR_SHAPE(1, 1), TENSOR_F32), TENSOR_SHAPE(1 << 20, 1 << 20)); /* 4 TiB once copied */
    CHECK_BAD(tensor_to_device(huge, TENSOR_CUDA), "tensor_to_device");
    tensor_to_device(huge, TENSOR_CUDA);
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "out of memory"));
    tensor_clear_error();
    tensor *x = tensor_arange(0, 10, 1, TENSOR_F32), *dx = device_cuda(x);
    device_check_same("after out of memory", tensor_mul(dx, dx), tensor_mul(x, x));
    /* mixed devices, host pointers */
    CHECK_BAD(tensor_add(dx, x), "tensor_add");
    tensor_clear_error();
    CHECK(tensor_data_ptr(dx) == NULL && tensor_last_error() && strstr(tensor_last_error(), "on cuda"));
    tensor_clear_error();
    /* integer division by zero is reported by the op */
    tensor *di = device_cuda(tensor_arange(0, 4, 1, TENSOR_I64));
    CHECK_BAD(tensor_fmod(di, device_cuda(tensor_zeros(TENSOR_SHAPE(4), TENSOR_I64))), "tensor_fmod");
    CHECK(tensor_cuda_synchronize() == 0);
    tensor_scope_end();
}

/* Autograd on the GPU: the leaf's gradient is a CUDA tensor and equals the CPU's. */
TEST(cuda_autograd_elementwise) {
    NEED_GPU();
    tensor_scope_begin();
    tensor *x = tensor_reshape(tensor_linspace(-2, 2, 600, TENSOR_F64), TENSOR_SHAPE(20, 30));
    tensor *w = tensor_set_requires_grad(tensor_clone(x), true), *dw = tensor_set_requires_grad(device_cuda(x), true);
    tensor *g = tensor_full(TENSOR_SHAPE(20, 30), 0.5, TENSOR_F64);
    CHECK(tensor_backward_with(tensor_mul(tensor_tanh(tensor_mul(w, w)), tensor_sigmoid(w)), g) == 0);
    CHECK(tensor_backward_with(tensor_mul(tensor_tanh(tensor_mul(dw, dw)), tensor_sigmoid(dw)), device_cuda(g)) == 0);
    CHECK(tensor_grad(dw) && tensor_get_device(tensor_grad(dw)) == TENSOR_CUDA);
    device_check_same("grad", tensor_grad(dw), tensor_grad(w));
    tensor_scope_end();
}
