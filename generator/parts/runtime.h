// >>runtime ------------------------------------------------------------------------------------
TENSOR_API bool tensor_cuda_available(void) { return tensor__device_ready(TENSOR_CUDA) && tensor__devices[TENSOR_CUDA]->device_count() > 0; }
TENSOR_API int tensor_cuda_device_count(void) {
    if (!tensor__device_ready(TENSOR_CUDA)) return 0;
    int n = tensor__devices[TENSOR_CUDA]->device_count();
    return n > 0 ? n : 0;
}
TENSOR_API int tensor_cuda_synchronize(void) {
    const tensor__device *d = tensor__device_get("tensor_cuda_synchronize", TENSOR_CUDA);
    if (!d) return -1;
    char err[256] = "";
    if (!d->synchronize(err, sizeof err)) return 0;
    tensor__fail("tensor_cuda_synchronize", "%s", err[0] ? err : "the device reported an error");
    return -1;
}
TENSOR_API void tensor_set_allow_tf32(bool allow) {
    TENSOR__STORE_SC(&tensor__allow_tf32, allow ? 1 : 0);
    if (tensor__device_ready(TENSOR_CUDA) && tensor__devices[TENSOR_CUDA]->set_allow_tf32) tensor__devices[TENSOR_CUDA]->set_allow_tf32(allow);
}
TENSOR_API const char *tensor_version(void) { return "0.1.0"; }
TENSOR_API const char *tensor_build_info(void) {
    static TENSOR__THREAD_LOCAL char info[560]; /* per thread: two threads asking at once each get theirs */
    const tensor__simd_isa *v = tensor__simd();
    char simd[64];
    if (v) snprintf(simd, sizeof simd, "%s (%d x f32)%s", v->name, v->width, tensor__reference_kernels ? ", reference kernels on" : "");
    else snprintf(simd, sizeof simd, "none (reference loops)");
#if TENSOR__SIMD && defined(TENSOR_USE_SLEEF)
    const char *sleef = "yes (exp log expm1 log1p sin cos tanh erf)";
#else
    const char *sleef = "no";
#endif
    const tensor__gemm_impl_f32 *gs = tensor__gemm_pick_f32(TENSOR_F32), *gb = tensor__gemm_pick_f32(TENSOR_BF16);
    const tensor__gemm_impl_f64 *gd = tensor__gemm_pick_f64(TENSOR_F64);
    char gemm[128], bf[48] = "";
    if (gb != gs) snprintf(bf, sizeof bf, ", %s %lldx%lld bf16", gb->name, (long long)gb->MR, (long long)gb->NR);
    snprintf(gemm, sizeof gemm, "%s %lldx%lld f32, %s %lldx%lld f64%s", gs->name, (long long)gs->MR, (long long)gs->NR, gd->name,
             (long long)gd->MR, (long long)gd->NR, bf);
    char cuda[160];
    const tensor__device *d = tensor__device_ready(TENSOR_CUDA) ? tensor__devices[TENSOR_CUDA] : NULL;
    if (!tensor__devices[TENSOR_CUDA]) snprintf(cuda, sizeof cuda, "no");
    else if (!d) snprintf(cuda, sizeof cuda, "no (tensor_cuda.o is from another tensor.h)");
    else if (d->device_count() <= 0) snprintf(cuda, sizeof cuda, "no (tensor_cuda.o linked, no device)");
    else snprintf(cuda, sizeof cuda, "%s", d->info ? d->info() : "yes");
#ifdef TENSOR_USE_MPI
    char mpi[48];
    if (TENSOR__LOAD_ACQ(&tensor__dist_state) == TENSOR__DIST_NONE) snprintf(mpi, sizeof mpi, "yes (not initialized)");
    else snprintf(mpi, sizeof mpi, "yes (rank %d of %d)", tensor_dist_rank(), tensor_dist_world_size());
#else
    const char *mpi = "no (a world of one rank)";
#endif
    snprintf(info, sizeof info, "tensor.h %s; simd: %s; gemm: %s; sleef: %s; cuda: %s; mpi: %s; threads: %d (%s)", tensor_version(), simd,
             gemm, sleef, cuda, mpi, tensor_get_num_threads(), TENSOR__HAVE_THREADS ? "pthread pool" : "no thread support: 1 used");
    return info;
}

#ifdef TENSOR_TEST_HOOKS
TENSOR_API int64_t tensor_test_path_count(const char *path) {
#define TENSOR__PATH_NAME(name) #name,
    static const char *const names[TENSOR__N_PATHS] = {TENSOR__PATHS(TENSOR__PATH_NAME)};
    for (int i = 0; path && i < TENSOR__N_PATHS; i++)
        if (!strcmp(path, names[i])) return __atomic_load_n(&tensor__path_counts[i], __ATOMIC_RELAXED);
    return -1;
}
TENSOR_API void tensor_test_fail_alloc(int64_t k) {
    __atomic_store_n(&tensor__test_alloc_fail_at, k, __ATOMIC_RELAXED);
    __atomic_store_n(&tensor__test_alloc_count, 0, __ATOMIC_RELAXED);
}
TENSOR_API int64_t tensor_test_alloc_count(void) { return __atomic_load_n(&tensor__test_alloc_count, __ATOMIC_RELAXED); }
TENSOR_API void tensor_test_alloc_cap(int64_t bytes) {
    __atomic_store_n(&tensor__test_alloc_cap, bytes, __ATOMIC_RELAXED);
    __atomic_store_n(&tensor__test_alloc_largest, 0, __ATOMIC_RELAXED);
}
TENSOR_API int64_t tensor_test_alloc_largest(void) { return __atomic_load_n(&tensor__test_alloc_largest, __ATOMIC_RELAXED); }
#endif

static void tensor__runtime_shutdown(void) {
    tensor__rng_reset();
    tensor__pool_stop();
}
