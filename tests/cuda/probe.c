/* Exits 0 when the linked tensor_cuda.o finds a GPU; otherwise says why on one line and exits 1
   (make test-cuda runs the CUDA suite only after this). */
#define TENSOR_IMPLEMENTATION
#include "../../tensor.h"
#include <stdio.h>

int main(void) {
    if (tensor_cuda_available()) return 0;
    tensor *t = tensor_zeros(TENSOR_SHAPE(1), TENSOR_F32);
    tensor *d = tensor_to_device(t, TENSOR_CUDA); /* records why */
    printf("%s\n", d ? "CUDA is available" : tensor_last_error());
    tensor_free(d);
    tensor_free(t);
    tensor_shutdown();
    return 1;
}
