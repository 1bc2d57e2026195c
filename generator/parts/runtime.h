// >>runtime ------------------------------------------------------------------------------------
/* Kernels run on the calling thread for now: the thread pool arrives with the CPU speed work, and
   tensor_build_info says so. tensor_set_num_threads records the request. */
static int tensor__num_threads = 1;

TENSOR_API void tensor_set_num_threads(int n) {
    if (n < 0) { tensor__fail("tensor_set_num_threads", "thread count must be >= 0, got %d", n); return; }
    tensor__num_threads = n == 0 ? 1 : n;
}
TENSOR_API int tensor_get_num_threads(void) { return tensor__num_threads; }
TENSOR_API bool tensor_cuda_available(void) { return false; }
TENSOR_API const char *tensor_version(void) { return "0.1.0"; }
TENSOR_API const char *tensor_build_info(void) {
    static char info[256];
    snprintf(info, sizeof info,
             "tensor.h %s; simd: scalar (reference kernels only); sleef: no; cuda: no; "
             "threads: 1 (kernels run on the calling thread; %d requested)",
             tensor_version(), tensor__num_threads);
    return info;
}

static void tensor__runtime_shutdown(void) { tensor__rng_reset(); }
