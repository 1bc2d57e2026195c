/* How long a program takes to its first result from the GPU: a tensor moved there, one kernel, the
   result back. With machine code for the GPU in tensor_cuda.o this is the CUDA context's start-up;
   with PTX only the driver compiles it first (unless its JIT cache holds the result: run with
   CUDA_CACHE_DISABLE=1 to see the cold case). Prints the seconds; exits 1 without a GPU. */
#define TENSOR_IMPLEMENTATION
#include "../../tensor.h"
#include <stdio.h>
#include <time.h>

int main(void) {
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    tensor *d = tensor_to_device(tensor_ones(TENSOR_SHAPE(4), TENSOR_F32), TENSOR_CUDA);
    tensor *r = d ? tensor_to_device(tensor_exp(d), TENSOR_CPU) : NULL;
    clock_gettime(CLOCK_MONOTONIC, &b);
    if (!r) { printf("no result: %s\n", tensor_last_error() ? tensor_last_error() : "?"); return 1; }
    printf("first CUDA result after %.3f s (exp(1) = %.6f)\n", (double)(b.tv_sec - a.tv_sec) + 1e-9 * (double)(b.tv_nsec - a.tv_nsec), tensor_item(tensor_select(r, 0, 0)));
    tensor_shutdown();
    return 0;
}
