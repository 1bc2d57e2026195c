// >>runtime ------------------------------------------------------------------------------------
TENSOR_API bool tensor_cuda_available(void) { return false; }
TENSOR_API const char *tensor_version(void) { return "0.1.0"; }
TENSOR_API const char *tensor_build_info(void) {
    static char info[256];
    snprintf(info, sizeof info,
             "tensor.h %s; simd: scalar (reference kernels only); sleef: no; cuda: no; threads: %d (%s)",
             tensor_version(), tensor_get_num_threads(), TENSOR__HAVE_THREADS ? "pthread pool" : "no thread support: 1 used");
    return info;
}

static void tensor__runtime_shutdown(void) {
    tensor__rng_reset();
    tensor__pool_stop();
}
