/* tensor_cuda.o linked into the suite's harness (make test, whenever nvcc is found): the object
   registers itself before main with no call from the program, its table passes the library's
   checks, and without a GPU every CUDA entry point says so instead of failing in another way. */
#include "../test.h"

TEST(cuda_object_registers_itself) {
    const char *info = tensor_build_info();
    /* "cuda: no;" would mean no table was registered: the static initializer did not run */
    CHECK_MSG(strstr(info, "cuda: no;") == NULL && strstr(info, "another tensor.h") == NULL, "build info: %s", info);
    tensor *t = tensor_arange(0, 6, 1, TENSOR_F32);
    if (tensor_cuda_available()) { /* a GPU: the round trip */
        CHECK(tensor_cuda_device_count() >= 1);
#ifdef TEST_WITH_CUDNN
        CHECK_MSG(strstr(info, ", cuDNN ") != NULL, "build info: %s", info); /* the object built with -DTENSOR_USE_CUDNN */
#endif
        tensor *d = tensor_to_device(t, TENSOR_CUDA), *h = tensor_to_device(d, TENSOR_CPU);
        CHECK(h && test_same_bits(h, t));
        CHECK(tensor_cuda_synchronize() == 0);
        tensor_free(h);
        tensor_free(d);
    } else {
        CHECK(strstr(info, "cuda: no (tensor_cuda.o linked, no device)") != NULL);
        CHECK(tensor_cuda_device_count() == 0);
        CHECK_BAD(tensor_to_device(t, TENSOR_CUDA), "tensor_to_device");
        tensor_to_device(t, TENSOR_CUDA);
        CHECK(tensor_last_error() && strstr(tensor_last_error(), "found no device"));
        tensor_clear_error();
        CHECK_BAD_INT(tensor_cuda_synchronize() != 0, "tensor_cuda_synchronize");
        tensor_set_allow_tf32(true); /* harmless without a device */
        tensor_set_allow_tf32(false);
        tensor_empty_cache();
    }
    tensor_free(t);
}
