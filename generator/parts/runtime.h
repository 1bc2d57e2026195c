// >>runtime ------------------------------------------------------------------------------------
TENSOR_API bool tensor_cuda_available(void) { return false; }
TENSOR_API const char *tensor_version(void) { return "0.1.0"; }
TENSOR_API const char *tensor_build_info(void) {
    static TENSOR__THREAD_LOCAL char info[320]; /* per thread: two threads asking at once each get theirs */
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
    snprintf(info, sizeof info, "tensor.h %s; simd: %s; gemm: %s; sleef: %s; cuda: no; threads: %d (%s)", tensor_version(), simd,
             gemm, sleef, tensor_get_num_threads(), TENSOR__HAVE_THREADS ? "pthread pool" : "no thread support: 1 used");
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
#endif

static void tensor__runtime_shutdown(void) {
    tensor__rng_reset();
    tensor__pool_stop();
}
