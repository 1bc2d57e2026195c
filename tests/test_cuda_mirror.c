/* The CUDA suite (tests/cuda/test_cuda.c) on the seam's mirror device (tests/test_seam.c), in every
   make test: the suite's own cases checked without a GPU, and the library's device paths through
   them (a CPU tensor reaching a device op, host reads of device memory). */
#define DEVICE_MIRROR
#include "cuda/test_cuda.c"
