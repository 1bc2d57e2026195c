// >>linalg -------------------------------------------------------------------------------------
/* Matrix products and the neural-network functions built on them. The dense kernels (matmul and
   the convolutions, which lower to im2col + the same GEMM) have a fast path that packs operands
   into contiguous f32/f64/i64 panels and a plain reference loop; tensor_set_reference_kernels
   routes them through the reference loops so the tests can compare the two. */

/* Tells the compiler that the loop after it carries no dependence through memory (its output row
   never aliases its input rows), so it vectorizes without a run-time alias check. */
#if defined(__clang__)
#define TENSOR__IVDEP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define TENSOR__IVDEP _Pragma("GCC ivdep")
#elif defined(_MSC_VER)
#define TENSOR__IVDEP __pragma(loop(ivdep))
#else
#define TENSOR__IVDEP
#endif


/* Scratch buffers of kernels: n bytes (at least 1), or NULL after recording an error. */
static void *tensor__scratch(const char *fn, size_t n) {
    void *p = tensor__alloc_aligned(n ? n : 1);
    if (!p) tensor__fail(fn, "out of memory allocating %zu bytes of scratch", n);
    return p;
}

/* out[n, m] = A[n, k] @ B[k, m] for the integer dtypes (as uint64_t: unsigned arithmetic wraps
   like PyTorch's integer matmul). Rows of A, B and out are contiguous, ld* elements apart. The
   loops run i-k-j so the innermost loop streams a row of B into a row of out (the compiler
   vectorizes it); B is walked in KB x NB blocks that stay in cache while every row of A passes
   over them, and four rows of B are folded per pass over the out row. f32 and f64 go through the
   packed GEMM of >>gemm instead. */
#define TENSOR__GEMM_NB 256
#define TENSOR__GEMM_KB 128
#define TENSOR__DEFINE_GEMM(sfx, T)                                                                      \
    static void tensor__gemm_##sfx(int64_t n, int64_t m, int64_t k, const T *A, int64_t lda,           \
                                   const T *B, int64_t ldb, T *out, int64_t ldo) {                      \
        for (int64_t i = 0; i < n; i++)                                                                 \
            for (int64_t j = 0; j < m; j++) out[i * ldo + j] = 0;                                       \
        for (int64_t j0 = 0; j0 < m; j0 += TENSOR__GEMM_NB) {                                           \
            int64_t jn = m - j0 < TENSOR__GEMM_NB ? m - j0 : TENSOR__GEMM_NB, jv = jn & ~(int64_t)15;  \
            for (int64_t k0 = 0; k0 < k; k0 += TENSOR__GEMM_KB) {                                       \
                int64_t kn = k - k0 < TENSOR__GEMM_KB ? k - k0 : TENSOR__GEMM_KB;                       \
                for (int64_t i = 0; i < n; i++) {                                                       \
                    T *o = out + i * ldo + j0;                                                          \
                    const T *ar = A + i * lda + k0;                                                     \
                    int64_t p = 0;                                                                      \
                    for (; p + 4 <= kn; p += 4) {                                                       \
                        const T a0 = ar[p], a1 = ar[p + 1], a2 = ar[p + 2], a3 = ar[p + 3];             \
                        const T *b0 = B + (k0 + p) * ldb + j0, *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb; \
                        TENSOR__IVDEP                                                                   \
                        for (int64_t j = 0; j < jv; j++) o[j] += a0 * b0[j] + a1 * b1[j] + a2 * b2[j] + a3 * b3[j]; \
                        for (int64_t j = jv; j < jn; j++) o[j] += a0 * b0[j] + a1 * b1[j] + a2 * b2[j] + a3 * b3[j]; \
                    }                                                                                   \
                    for (; p < kn; p++) {                                                               \
                        const T a0 = ar[p], *b0 = B + (k0 + p) * ldb + j0;                              \
                        TENSOR__IVDEP                                                                   \
                        for (int64_t j = 0; j < jv; j++) o[j] += a0 * b0[j];                            \
                        for (int64_t j = jv; j < jn; j++) o[j] += a0 * b0[j];                           \
                    }                                                                                   \
                }                                                                                       \
            }                                                                                           \
        }                                                                                               \
    }
TENSOR__DEFINE_GEMM(u64, uint64_t)

/* The compute dtype of the packed kernels for an output dtype: f32 for f32/f16/bf16, f64 for
   f64, i64 (as uint64_t) for the integer dtypes. */
static tensor_dtype tensor__gemm_dtype(tensor_dtype d) {
    return d == TENSOR_F64 ? TENSOR_F64 : tensor__is_float(d) ? TENSOR_F32 : TENSOR_I64;
}

/* out[n, m] (+)= A[n, k] @ B[k, m] in compute dtype ct, element (i, p) of A at A[i * a_rs + p * a_cs],
   (p, j) of B at B[p * b_rs + j * b_cs], (i, j) of out at out[i * o_rs + j * o_cs]. A and B hold
   dtype sd: ct, or f16 / bf16 for ct f32 (bf16 products in the bf16 kernel where the CPU has one,
   else converted to f32 as they are packed). add: accumulate into out. The integer dtypes need
   a_cs = b_cs = o_cs = 1 and add = false. false: no memory for the packing panels (the caller
   records the error; a pool task flags it in its job). */
static bool tensor__gemm_strided(tensor_dtype ct, tensor_dtype sd, int64_t n, int64_t m, int64_t k, const void *A, int64_t a_rs, int64_t a_cs,
                                 const void *B, int64_t b_rs, int64_t b_cs, void *out, int64_t o_rs, int64_t o_cs, bool add) {
    if (ct == TENSOR_F32) return tensor__gemm_f32s(sd, n, m, k, A, a_rs, a_cs, B, b_rs, b_cs, (float *)out, o_rs, o_cs, add);
    if (ct == TENSOR_F64) return tensor__gemm_f64s(TENSOR_F64, n, m, k, A, a_rs, a_cs, B, b_rs, b_cs, (double *)out, o_rs, o_cs, add);
    tensor__gemm_u64(n, m, k, (const uint64_t *)A, a_rs, (const uint64_t *)B, b_rs, (uint64_t *)out, o_rs);
    return true;
}
/* A pool task's GEMM: a failure raises the job's flag, which the caller checks after the pool. */
#define TENSOR__GEMM_IN_TASK(flag, gemm_call) do { if (!(gemm_call)) __atomic_store_n(&(flag), 1, __ATOMIC_RELAXED); } while (0)
#define TENSOR__TASK_FAILED(flag) __atomic_load_n(&(flag), __ATOMIC_RELAXED)

/* out[n, m] = A[n, k] @ B[k, m] with contiguous rows, ld* elements apart. */
static bool tensor__gemm(tensor_dtype ct, int64_t n, int64_t m, int64_t k, const void *A, int64_t lda,
                         const void *B, int64_t ldb, void *out, int64_t ldo) {
    return tensor__gemm_strided(ct, ct, n, m, k, A, lda, 1, B, ldb, 1, out, ldo, 1, false);
}

/* dst[r * cols + q] = src[r * rs + q * cs] (strides in elements of sd) converted to ct. */
static void tensor__pack(void *dst, tensor_dtype ct, const char *src, tensor_dtype sd, int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
    int64_t esz = (int64_t)tensor__dtype_sizes[sd];
    for (int64_t r = 0; r < rows; r++) {
        const char *s = src + r * rs * esz;
        if (ct == TENSOR_F32) {
            float *d = (float *)dst + r * cols;
            if (sd == TENSOR_F32) { const float *f = (const float *)s; for (int64_t q = 0; q < cols; q++) d[q] = f[q * cs]; }
            else if (cs == 1 && (sd == TENSOR_F16 || sd == TENSOR_BF16)) tensor__half_to_f32(d, (const uint16_t *)(const void *)s, cols, sd == TENSOR_BF16);
            else for (int64_t q = 0; q < cols; q++) d[q] = (float)tensor__load_f64(s + q * cs * esz, sd);
        } else if (ct == TENSOR_F64) {
            double *d = (double *)dst + r * cols;
            if (sd == TENSOR_F64) { const double *f = (const double *)s; for (int64_t q = 0; q < cols; q++) d[q] = f[q * cs]; }
            else for (int64_t q = 0; q < cols; q++) d[q] = tensor__load_f64(s + q * cs * esz, sd);
        } else {
            uint64_t *d = (uint64_t *)dst + r * cols;
            for (int64_t q = 0; q < cols; q++) d[q] = (uint64_t)tensor__load_i64(s + q * cs * esz, sd);
        }
    }
}

/* dst (contiguous, dtype dd) = src (contiguous, compute dtype ct), count elements. */
static void tensor__unpack(char *dst, tensor_dtype dd, const void *src, tensor_dtype ct, int64_t count) {
    size_t esz = tensor__dtype_sizes[dd];
    if (ct == TENSOR_F32 && (dd == TENSOR_F16 || dd == TENSOR_BF16)) tensor__f32_to_half((uint16_t *)(void *)dst, (const float *)src, count, dd == TENSOR_BF16);
    else if (ct == TENSOR_F32) for (int64_t i = 0; i < count; i++) tensor__store_f64(dst + (size_t)i * esz, dd, ((const float *)src)[i]);
    else if (ct == TENSOR_F64) for (int64_t i = 0; i < count; i++) tensor__store_f64(dst + (size_t)i * esz, dd, ((const double *)src)[i]);
    else for (int64_t i = 0; i < count; i++) tensor__store_i64(dst + (size_t)i * esz, dd, (int64_t)((const uint64_t *)src)[i]);
}

/* The geometry of one matmul: per batch out[n, m] = A[n, k] @ B[k, m], with the matrix strides of
   a and b (a 1-D operand is a single row of A or column of B) and the batch dims of out, where
   a_bs/b_bs are 0 on dims an operand broadcasts over. */
typedef struct {
    int64_t n, m, k;
    int64_t a_rs, a_cs, b_rs, b_cs;
    int nb;
    int64_t bshape[TENSOR_MAX_DIMS], a_bs[TENSOR_MAX_DIMS], b_bs[TENSOR_MAX_DIMS];
    int64_t batches;
} tensor__mm_geom;

static void tensor__mm_geometry(const tensor *a, const tensor *b, const tensor *out, tensor__mm_geom *g) {
    int ad = a->ndim, bd = b->ndim;
    g->k = a->shape[ad - 1];
    g->a_cs = a->strides[ad - 1];
    if (ad >= 2) { g->n = a->shape[ad - 2]; g->a_rs = a->strides[ad - 2]; }
    else { g->n = 1; g->a_rs = 0; }
    if (bd >= 2) { g->m = b->shape[bd - 1]; g->b_cs = b->strides[bd - 1]; g->b_rs = b->strides[bd - 2]; }
    else { g->m = 1; g->b_cs = 0; g->b_rs = b->strides[0]; }
    int abn = ad >= 2 ? ad - 2 : 0, bbn = bd >= 2 ? bd - 2 : 0;
    g->nb = out->ndim - (ad >= 2) - (bd >= 2);
    g->batches = 1;
    for (int i = 0; i < g->nb; i++) {
        int ai = i - (g->nb - abn), bi = i - (g->nb - bbn);
        g->bshape[i] = out->shape[i];
        g->a_bs[i] = (ai >= 0 && a->shape[ai] != 1) ? a->strides[ai] : 0;
        g->b_bs[i] = (bi >= 0 && b->shape[bi] != 1) ? b->strides[bi] : 0;
        g->batches *= out->shape[i];
    }
}

/* The plain reference: one dot product per output element, in double (i64 for integers). */
static void tensor__matmul_reference(tensor__call *c, const tensor__mm_geom *g) {
    const tensor *a = c->in[0], *b = c->in[1];
    tensor *out = c->out;
    int64_t ea = (int64_t)tensor__dtype_sizes[a->dtype], eb = (int64_t)tensor__dtype_sizes[b->dtype];
    size_t eo = tensor__dtype_sizes[out->dtype];
    bool ints = !tensor__is_float(out->dtype);
    int64_t idx[TENSOR_MAX_DIMS] = {0};
    char *o = tensor__data(out);
    for (int64_t bi = 0; bi < g->batches; bi++) {
        int64_t ao = a->offset, bo = b->offset;
        for (int d = 0; d < g->nb; d++) { ao += idx[d] * g->a_bs[d]; bo += idx[d] * g->b_bs[d]; }
        const char *pa = (const char *)a->storage->data + ao * ea, *pb = (const char *)b->storage->data + bo * eb;
        for (int64_t i = 0; i < g->n; i++)
            for (int64_t j = 0; j < g->m; j++) {
                char *dst = o + (size_t)((bi * g->n + i) * g->m + j) * eo;
                if (ints) {
                    int64_t acc = 0;
                    for (int64_t p = 0; p < g->k; p++)
                        acc = tensor__iadd(acc, tensor__imul(tensor__load_i64(pa + (i * g->a_rs + p * g->a_cs) * ea, a->dtype),
                                                             tensor__load_i64(pb + (p * g->b_rs + j * g->b_cs) * eb, b->dtype)));
                    tensor__store_i64(dst, out->dtype, acc);
                } else {
                    double acc = 0;
                    for (int64_t p = 0; p < g->k; p++)
                        acc += tensor__load_f64(pa + (i * g->a_rs + p * g->a_cs) * ea, a->dtype) *
                               tensor__load_f64(pb + (p * g->b_rs + j * g->b_cs) * eb, b->dtype);
                    tensor__store_f64(dst, out->dtype, acc);
                }
            }
        tensor__next_index(g->nb, g->bshape, idx);
    }
}

/* The element offsets of batch bi's matrices of a and b. */
static void tensor__mm_batch_offsets(const tensor__mm_geom *g, int64_t bi, int64_t *ao, int64_t *bo) {
    int64_t ra = 0, rb = 0;
    for (int d = g->nb - 1; d >= 0; d--) {
        int64_t i = bi % g->bshape[d];
        bi /= g->bshape[d];
        ra += i * g->a_bs[d];
        rb += i * g->b_bs[d];
    }
    *ao = ra;
    *bo = rb;
}

/* A range of batches of a floating matmul: one strided GEMM per batch, straight from the operands'
   storage (of dtype sd) into the output (of the compute dtype ct). */
typedef struct {
    const tensor__mm_geom *g;
    tensor_dtype ct, sd;
    const char *a, *b; /* element 0 of a and b */
    char *o;
    int oom;           /* a GEMM had no memory (set from any thread) */
} tensor__mm_job;

static void tensor__mm_batches(int64_t begin, int64_t end, void *ctx) {
    tensor__mm_job *j = (tensor__mm_job *)ctx;
    const tensor__mm_geom *g = j->g;
    size_t cs = tensor__dtype_sizes[j->ct], es = tensor__dtype_sizes[j->sd];
    for (int64_t bi = begin; bi < end; bi++) {
        int64_t ao, bo;
        tensor__mm_batch_offsets(g, bi, &ao, &bo);
        TENSOR__GEMM_IN_TASK(j->oom, tensor__gemm_strided(j->ct, j->sd, g->n, g->m, g->k, j->a + (size_t)ao * es, g->a_rs, g->a_cs, j->b + (size_t)bo * es,
                                                          g->b_rs, g->b_cs, j->o + (size_t)(bi * g->n * g->m) * cs, g->m, 1, false));
    }
}

/* The fast path. f32/f64: every transposition and batch broadcast is a stride pattern of the
   GEMM, so operands are read in place. When b is shared by every batch and a's batches are
   evenly spaced rows (x [B, T, C] @ w [C, O]) the batches fold into one tall GEMM; otherwise
   there is one GEMM per batch, and batches too small for the GEMM to thread itself are spread
   over the threads instead. f16/bf16 the same, read in place too (the GEMM multiplies bf16 pairs,
   or converts to f32 as it packs), into an f32 result rounded into out once at the end. The
   integers (in i64): each operand
   is converted (or, for an integer operand with strided rows, packed) into a contiguous
   compute-dtype buffer once per distinct batch offset, then one GEMM per batch into the output
   (or a compute-dtype buffer converted back). */
static int tensor__matmul_fast(tensor__call *c, const tensor__mm_geom *g) {
    const tensor *a = c->in[0], *b = c->in[1];
    tensor *out = c->out;
    tensor_dtype dt = out->dtype, ct = tensor__gemm_dtype(dt);
    int64_t n = g->n, m = g->m, k = g->k;
    size_t cs = tensor__dtype_sizes[ct], eo = tensor__dtype_sizes[dt];
    int64_t ea = (int64_t)tensor__dtype_sizes[a->dtype], eb = (int64_t)tensor__dtype_sizes[b->dtype];
    bool half = ct == TENSOR_F32 && (dt == TENSOR_F16 || dt == TENSOR_BF16);
    if (ct != TENSOR_I64 && a->dtype == dt && b->dtype == dt && (dt == ct || half)) {
        tensor__mm_geom fg = *g;
        /* rs: the stride of the folded rows; next: where the next batch dim must step */
        bool fold = fg.batches > 1, have = n > 1;
        int64_t rs = fg.a_rs, next = n * fg.a_rs;
        for (int d = fg.nb - 1; d >= 0 && fold; d--) {
            if (fg.bshape[d] == 1) continue;
            if (!have) { rs = fg.a_bs[d]; next = rs; have = true; } /* one row per batch: its batch stride */
            fold = fg.b_bs[d] == 0 && fg.a_bs[d] == next;
            if (fold) next *= fg.bshape[d]; /* a's size times stride there: fits (>>shapes) */
        }
        if (fold) { /* n * batches rows of a, rs apart, against one b */
            fg.n = n * fg.batches;
            fg.a_rs = rs;
            fg.nb = 0;
            fg.batches = 1;
        }
        tensor__mm_job j;
        j.oom = 0;
        j.g = &fg;
        j.ct = ct;
        j.sd = dt;
        j.a = (const char *)a->storage->data + a->offset * ea;
        j.b = (const char *)b->storage->data + b->offset * eb;
        int64_t count = fg.batches * fg.n * m;
        float *acc = half ? (float *)tensor__cache_alloc((size_t)count * sizeof(float)) : NULL; /* (cached: no page faults) */
        if (half && !acc) { tensor__fail(c->fn, "out of memory allocating matmul scratch"); return 1; }
        j.o = half ? (char *)acc : tensor__data(out);
        int64_t per = tensor__work_mul(tensor__work_mul(fg.n, m), k);
        if (tensor__gemm_spread(fg.batches, fg.n, m, k))
            tensor__parallel_for(fg.batches, TENSOR__GEMM_PAR_MIN / (per > 0 ? per : 1) + 1, tensor__mm_batches, &j);
        else
            tensor__mm_batches(0, fg.batches, &j);
        if (half && !TENSOR__TASK_FAILED(j.oom)) tensor__f32_to_half((uint16_t *)(void *)tensor__data(out), acc, count, dt == TENSOR_BF16);
        tensor__cache_free(acc);
        if (TENSOR__TASK_FAILED(j.oom)) { tensor__fail(c->fn, "out of memory allocating matmul scratch"); return 1; }
        return 0;
    }
    bool a_direct = a->dtype == ct && (g->a_cs == 1 || k == 1);
    bool b_direct = b->dtype == ct && (g->b_cs == 1 || m == 1);
    bool o_direct = dt == ct;
    void *pa = a_direct ? NULL : tensor__scratch(c->fn, (size_t)(n * k) * cs);
    void *pb = b_direct ? NULL : tensor__scratch(c->fn, (size_t)(k * m) * cs);
    void *po = o_direct ? NULL : tensor__scratch(c->fn, (size_t)(n * m) * cs);
    if ((!a_direct && !pa) || (!b_direct && !pb) || (!o_direct && !po)) {
        tensor__free_aligned(pa); tensor__free_aligned(pb); tensor__free_aligned(po);
        return 1;
    }
    int64_t last_a = -1, last_b = -1;
    char *o = tensor__data(out);
    for (int64_t bi = 0; bi < g->batches; bi++) {
        int64_t ao, bo;
        tensor__mm_batch_offsets(g, bi, &ao, &bo);
        ao += a->offset;
        bo += b->offset;
        const char *sa = (const char *)a->storage->data + ao * ea, *sb = (const char *)b->storage->data + bo * eb;
        if (!a_direct && ao != last_a) tensor__pack(pa, ct, sa, a->dtype, n, k, g->a_rs, g->a_cs);
        if (!b_direct && bo != last_b) tensor__pack(pb, ct, sb, b->dtype, k, m, g->b_rs, g->b_cs);
        last_a = ao;
        last_b = bo;
        char *dst = o + (size_t)(bi * n * m) * eo;
        if (!tensor__gemm(ct, n, m, k, a_direct ? (const void *)sa : pa, a_direct ? g->a_rs : k,
                          b_direct ? (const void *)sb : pb, b_direct ? g->b_rs : m, o_direct ? (void *)dst : po, m)) {
            tensor__free_aligned(pa); tensor__free_aligned(pb); tensor__free_aligned(po);
            tensor__fail(c->fn, "out of memory allocating matmul scratch");
            return 1;
        }
        if (!o_direct) tensor__unpack(dst, dt, po, ct, n * m);
    }
    tensor__free_aligned(pa);
    tensor__free_aligned(pb);
    tensor__free_aligned(po);
    return 0;
}

/* out: [batch..., n, m] (the n or m dim absent where a or b is 1-D) */
static int tensor__cpu_matmul(tensor__call *c) {
    tensor__mm_geom g;
    tensor__mm_geometry(c->in[0], c->in[1], c->out, &g);
    if (tensor__numel_of(c->out->ndim, c->out->shape) == 0) return 0;
    if (g.k == 0) { tensor__fill(c->out, 0); return 0; }
    if (tensor__reference_kernels) { tensor__matmul_reference(c, &g); return 0; }
    return tensor__matmul_fast(c, &g);
}

TENSOR_API tensor *tensor_matmul(tensor *a, tensor *b) {
    const char *fn = "tensor_matmul";
    TENSOR__CHECK_ARG(fn, a);
    TENSOR__CHECK_ARG(fn, b);
    tensor *ins[2] = {a, b};
    if (!tensor__same_device(fn, 2, ins)) return NULL;
    if (a->ndim == 0 || b->ndim == 0)
        return tensor__fail(fn, "both arguments need at least 1 dim, got shapes %s and %s", tensor__shape_of(a), tensor__shape_of(b));
    if (a->dtype != b->dtype)
        return tensor__fail(fn, "expected both arguments to have the same dtype, got %s and %s", tensor__dtype_names[a->dtype], tensor__dtype_names[b->dtype]);
    if (a->dtype == TENSOR_BOOL) return tensor__fail(fn, "not supported for bool tensors");
    int ad = a->ndim, bd = b->ndim;
    int64_t ka = a->shape[ad - 1], kb = bd == 1 ? b->shape[0] : b->shape[bd - 2];
    if (ka != kb)
        return tensor__fail(fn, "shapes %s and %s cannot be multiplied (%lld != %lld)", tensor__shape_of(a), tensor__shape_of(b), (long long)ka, (long long)kb);
    /* batch dims: everything before the last two dims, broadcast */
    int abn = ad >= 2 ? ad - 2 : 0, bbn = bd >= 2 ? bd - 2 : 0, nb = abn > bbn ? abn : bbn;
    int64_t shape[TENSOR_MAX_DIMS];
    for (int i = 0; i < nb; i++) {
        int ai = i - (nb - abn), bi = i - (nb - bbn);
        int64_t da = ai >= 0 ? a->shape[ai] : 1, db = bi >= 0 ? b->shape[bi] : 1;
        if (da != db && da != 1 && db != 1) {
            char sa[160], sb[160];
            return tensor__fail(fn, "batch dims %s and %s of shapes %s and %s cannot be broadcast (size %lld vs %lld)",
                                tensor__shape_str(sa, sizeof sa, abn, a->shape), tensor__shape_str(sb, sizeof sb, bbn, b->shape),
                                tensor__shape_of(a), tensor__shape_of(b), (long long)da, (long long)db);
        }
        shape[i] = da == 1 ? db : da;
    }
    int nd = nb;
    if (ad >= 2) shape[nd++] = a->shape[ad - 2];
    if (bd >= 2) shape[nd++] = b->shape[bd - 1];
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_matmul);
    c.n_in = 2;
    c.in[0] = a;
    c.in[1] = b;
    c.out = tensor__new(fn, nd, shape, a->dtype, a->storage->device);
    return c.out ? tensor__dispatch(&c) : NULL;
}

/* True when shape a broadcasts to exactly shape b (b does not grow); records nothing. */
static bool tensor__broadcasts_to(int na, const int64_t *a, int nb, const int64_t *b) {
    if (na > nb) return false;
    for (int i = 1; i <= na; i++)
        if (a[na - i] != b[nb - i] && a[na - i] != 1) return false;
    return true;
}

/* x @ weight^T + bias, written with matmul, transpose and add so autograd flows through them. */
TENSOR_API tensor *tensor_linear(tensor *x, tensor *weight, tensor *bias) {
    const char *fn = "tensor_linear";
    TENSOR__CHECK_ARG(fn, x);
    TENSOR__CHECK_ARG(fn, weight);
    tensor *ins[3] = {x, weight, bias};
    if (!tensor__same_device(fn, 3, ins)) return NULL;
    if (x->ndim == 0) return tensor__fail(fn, "input must have at least 1 dim, got a 0-dim tensor");
    if (weight->ndim != 1 && weight->ndim != 2)
        return tensor__fail(fn, "weight must be [out_features, in_features] (or 1-D), got shape %s", tensor__shape_of(weight));
    if (x->dtype != weight->dtype || (bias && bias->dtype != x->dtype))
        return tensor__fail(fn, "input, weight and bias must have the same dtype, got %s, %s and %s", tensor__dtype_names[x->dtype],
                            tensor__dtype_names[weight->dtype], bias ? tensor__dtype_names[bias->dtype] : "none");
    if (!tensor__is_float(x->dtype) && x->dtype != TENSOR_I32 && x->dtype != TENSOR_I64 && x->dtype != TENSOR_U8)
        return tensor__fail(fn, "not supported for %s tensors", tensor__dtype_names[x->dtype]);
    int64_t in = x->shape[x->ndim - 1], win = weight->shape[weight->ndim - 1];
    if (in != win)
        return tensor__fail(fn, "input shape %s and weight shape %s are incompatible (in_features %lld != %lld)", tensor__shape_of(x),
                            tensor__shape_of(weight), (long long)in, (long long)win);
    /* the bias must broadcast onto the output [..., out_features] without growing it */
    int64_t oshape[TENSOR_MAX_DIMS];
    int ond = 0;
    for (int d = 0; d < x->ndim - 1; d++) oshape[ond++] = x->shape[d];
    if (weight->ndim == 2) oshape[ond++] = weight->shape[0];
    if (bias && !tensor__broadcasts_to(bias->ndim, bias->shape, ond, oshape)) {
        char b[160];
        return tensor__fail(fn, "bias of shape %s does not broadcast to the output shape %s (weight %s)", tensor__shape_of(bias),
                            tensor__shape_str(b, sizeof b, ond, oshape), tensor__shape_of(weight));
    }
    tensor *wt = NULL; /* a 1-D weight is used as it is, so autograd sees weight itself */
    if (weight->ndim == 2 && !(wt = tensor_transpose(weight, 0, 1))) return NULL;
    tensor *y = tensor_matmul(x, wt ? wt : weight);
    tensor_free(wt);
    if (!y || !bias) return y;
    tensor *r = tensor_add(y, bias);
    tensor_free(y);
    return r;
}
