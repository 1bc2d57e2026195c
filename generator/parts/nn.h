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

// >>nn -----------------------------------------------------------------------------------------
/* Rows along one dim: the start offsets (in elements) of every row of up to two tensors of one
   shape, walked in row-major order of the other dims. dim -1 stands for the single one-element
   row of a 0-dim tensor. */
typedef struct {
    int nd;
    int64_t shape[TENSOR_MAX_DIMS], idx[TENSOR_MAX_DIMS], stride[2][TENSOR_MAX_DIMS];
    int64_t off[2], count;
} tensor__rows;

static void tensor__rows_init(tensor__rows *r, const tensor *t0, const tensor *t1, int dim) {
    r->nd = 0;
    r->count = 1;
    for (int d = 0; d < t0->ndim; d++) {
        if (d == dim) continue;
        r->shape[r->nd] = t0->shape[d];
        r->stride[0][r->nd] = t0->strides[d];
        r->stride[1][r->nd] = t1->strides[d];
        r->idx[r->nd] = 0;
        r->count *= t0->shape[d];
        r->nd++;
    }
    r->off[0] = t0->offset;
    r->off[1] = t1->offset;
}

static void tensor__rows_next(tensor__rows *r) {
    for (int d = r->nd - 1; d >= 0; d--) {
        r->off[0] += r->stride[0][d];
        r->off[1] += r->stride[1][d];
        if (++r->idx[d] < r->shape[d]) return;
        r->off[0] -= r->stride[0][d] * r->shape[d];
        r->off[1] -= r->stride[1][d] * r->shape[d];
        r->idx[d] = 0;
    }
}

/* dst[i] = t's element at offset off + i * stride (elements), as double. */
static void tensor__load_row(double *dst, const tensor *t, int64_t off, int64_t stride, int64_t n) {
    const char *base = (const char *)t->storage->data;
    if (t->dtype == TENSOR_F32) { const float *s = (const float *)base + off; for (int64_t i = 0; i < n; i++) dst[i] = s[i * stride]; }
    else if (t->dtype == TENSOR_F64) { const double *s = (const double *)base + off; for (int64_t i = 0; i < n; i++) dst[i] = s[i * stride]; }
    else {
        int64_t esz = (int64_t)tensor__dtype_sizes[t->dtype];
        for (int64_t i = 0; i < n; i++) dst[i] = tensor__load_f64(base + (off + i * stride) * esz, t->dtype);
    }
}

/* t's elements at offset off + i * stride = src[i], rounded to t's dtype. */
static void tensor__store_row(tensor *t, int64_t off, int64_t stride, const double *src, int64_t n) {
    char *base = (char *)t->storage->data;
    if (t->dtype == TENSOR_F32) { float *d = (float *)base + off; for (int64_t i = 0; i < n; i++) d[i * stride] = (float)src[i]; }
    else if (t->dtype == TENSOR_F64) { double *d = (double *)base + off; for (int64_t i = 0; i < n; i++) d[i * stride] = src[i]; }
    else {
        int64_t esz = (int64_t)tensor__dtype_sizes[t->dtype];
        for (int64_t i = 0; i < n; i++) tensor__store_f64(base + (off + i * stride) * esz, t->dtype, src[i]);
    }
}

/* A 1-D optional parameter (norm weight or bias) as n doubles; fill where absent. */
static double *tensor__param_row(const char *fn, const tensor *t, int64_t n, double fill) {
    double *v = (double *)tensor__scratch(fn, (size_t)n * sizeof(double));
    if (!v) return NULL;
    if (t) tensor__load_row(v, t, t->offset, t->strides[0], n);
    else for (int64_t i = 0; i < n; i++) v[i] = fill;
    return v;
}

/* ---- softmax, log_softmax ---- */

/* Moves r (just initialized) to row q. */
static void tensor__rows_seek(tensor__rows *r, int64_t q) {
    if (q == 0) return; /* already there; and with no rows (a size-0 dim) nothing to divide by */
    for (int d = r->nd - 1; d >= 0; d--) {
        int64_t i = q % r->shape[d];
        q /= r->shape[d];
        r->idx[d] = i;
        r->off[0] += i * r->stride[0][d];
        r->off[1] += i * r->stride[1][d];
    }
}


/* One row of softmax (or log_softmax) in double, its elements xs and ys apart: the reference
   formula, for the rows with a NaN or an infinity that the fast path hands back (and for strided
   rows when there is no memory to gather them). */
static void tensor__softmax_row_f32(float *y, int64_t ys, const float *x, int64_t xs, int64_t n, bool log_form) {
    double mx = -INFINITY, sum = 0;
    for (int64_t i = 0; i < n; i++) if (x[i * xs] > mx) mx = x[i * xs];
    for (int64_t i = 0; i < n; i++) sum += exp((double)x[i * xs] - mx);
    if (log_form) {
        double lse = mx + log(sum);
        for (int64_t i = 0; i < n; i++) y[i * ys] = (float)((double)x[i * xs] - lse);
    } else {
        for (int64_t i = 0; i < n; i++) y[i * ys] = (float)(exp((double)x[i * xs] - mx) / sum);
    }
}

typedef struct { const tensor *x; tensor *y; int dim; int64_t len; bool log_form; int oom; } tensor__softmax_task;

/* Rows [begin, end) of an f32 softmax: max and e^(x - max) in one pass (the exponentials land in
   y), then one scaling pass. A row whose elements are not adjacent in x or y (softmax over a dim
   other than the innermost) is gathered into a buffer, done there and scattered back: the rows
   of a chunk sit side by side in memory, so the gathers share cache lines. */
static void tensor__softmax_rows_f32(int64_t begin, int64_t end, void *vt) {
    tensor__softmax_task *t = (tensor__softmax_task *)vt;
    tensor__rows r;
    tensor__rows_init(&r, t->x, t->y, t->dim);
    tensor__rows_seek(&r, begin);
    const float *xb = (const float *)t->x->storage->data;
    float *yb = (float *)t->y->storage->data;
    int64_t n = t->len, xs = t->x->strides[t->dim], ys = t->y->strides[t->dim];
    bool strided = n > 1 && (xs != 1 || ys != 1);
    float *buf = strided ? (float *)tensor__alloc_aligned(2 * (size_t)n * sizeof(float)) : NULL; /* (pool threads: no cache) */
    if (strided && !buf) { /* the double formula would round differently: an error, not a silent change */
        __atomic_store_n(&t->oom, 1, __ATOMIC_RELAXED);
        return;
    }
    for (int64_t q = begin; q < end; q++, tensor__rows_next(&r)) {
        const float *x = xb + r.off[0];
        float *y = yb + r.off[1], m;
        if (strided) {
            for (int64_t i = 0; i < n; i++) buf[i] = x[i * xs];
            x = buf, y = buf + n;
        }
        double s = tensor__row_maxsumexp_f32(t->log_form ? NULL : y, x, n, &m);
        if (s != s) tensor__softmax_row_f32(y, 1, x, 1, n, t->log_form);
        else if (t->log_form) tensor__row_sub2_f32(y, x, n, m, (float)log(s));
        else tensor__row_affine_f32(y, y, n, (float)(1.0 / s), 0.0f);
        if (strided)
            for (int64_t i = 0; i < n; i++) yb[r.off[1] + i * ys] = y[i];
    }
    tensor__free_aligned(buf);
}

/* out: same shape as x; each row along dim (ip[0]) becomes exp(x - max) / sum, or its log,
   computed in double. A row of -inf (fully masked) gives NaN, as in PyTorch. The fast path: f32
   rows, split over the pool. */
static int tensor__softmax_kernel(tensor__call *c, bool log_form) {
    tensor *x = c->in[0], *y = c->out;
    int dim = (int)c->ip[0];
    if (tensor__numel_of(x->ndim, x->shape) == 0) return 0;
    int64_t len = dim >= 0 ? x->shape[dim] : 1, xs = dim >= 0 ? x->strides[dim] : 0, ys = dim >= 0 ? y->strides[dim] : 0;
    if (!tensor__reference_kernels && x->dtype == TENSOR_F32 && dim >= 0) {
        tensor__softmax_task t;
        t.x = x;
        t.y = y;
        t.dim = dim;
        t.len = len;
        t.log_form = log_form;
        t.oom = 0;
        tensor__parallel_for(tensor__numel_of(x->ndim, x->shape) / len, tensor__grain(len), tensor__softmax_rows_f32, &t);
        if (TENSOR__TASK_FAILED(t.oom)) { tensor__fail(c->fn, "out of memory allocating %lld floats of scratch", (long long)(2 * len)); return 1; }
        return 0;
    }
    double *row = (double *)tensor__scratch(c->fn, (size_t)len * sizeof(double));
    if (!row) return 1;
    tensor__rows r;
    tensor__rows_init(&r, x, y, dim);
    for (int64_t q = 0; q < r.count; q++, tensor__rows_next(&r)) {
        tensor__load_row(row, x, r.off[0], xs, len);
        double mx = -INFINITY, sum = 0;
        for (int64_t i = 0; i < len; i++) if (row[i] > mx) mx = row[i];
        for (int64_t i = 0; i < len; i++) sum += exp(row[i] - mx);
        if (log_form) {
            double lse = mx + log(sum);
            for (int64_t i = 0; i < len; i++) row[i] = row[i] - lse;
        } else {
            for (int64_t i = 0; i < len; i++) row[i] = exp(row[i] - mx) / sum;
        }
        tensor__store_row(y, r.off[1], ys, row, len);
    }
    tensor__free_aligned(row);
    return 0;
}
static int tensor__cpu_softmax(tensor__call *c) { return tensor__softmax_kernel(c, false); }
static int tensor__cpu_log_softmax(tensor__call *c) { return tensor__softmax_kernel(c, true); }

/* Fused backward of softmax (s (g - sum(g s))) and log_softmax (g - s sum(g)) along dim, with s
   recomputed from x row by row: one kernel instead of five ops and their temporaries. Used by the
   derivatives when the backward pass is not itself recorded (no create_graph). */
#define TENSOR__DEFINE_SOFTMAX_BWD_ROW(sfx, T)                                                            \
    static void tensor__softmax_bwd_row_##sfx(T *gx, const T *x, const T *g, int64_t n, bool log_form) { \
        double mx = -INFINITY, sum = 0, dot = 0;                                                         \
        for (int64_t i = 0; i < n; i++) if (x[i] > mx) mx = x[i];                                        \
        for (int64_t i = 0; i < n; i++) sum += exp((double)x[i] - mx);                                   \
        for (int64_t i = 0; i < n; i++) dot += log_form ? (double)g[i] : (double)g[i] * (exp((double)x[i] - mx) / sum); \
        for (int64_t i = 0; i < n; i++) {                                                                \
            double s = exp((double)x[i] - mx) / sum;                                                     \
            gx[i] = (T)(log_form ? (double)g[i] - s * dot : s * ((double)g[i] - dot));                   \
        }                                                                                                \
    }
TENSOR__DEFINE_SOFTMAX_BWD_ROW(f32, float)
TENSOR__DEFINE_SOFTMAX_BWD_ROW(f64, double)

typedef struct { const char *x, *g; char *gx; int64_t len; bool log_form, f32; } tensor__softmax_bwd_task;
static void tensor__softmax_bwd_rows(int64_t begin, int64_t end, void *vt) {
    const tensor__softmax_bwd_task *t = (const tensor__softmax_bwd_task *)vt;
    int64_t n = t->len;
    for (int64_t q = begin; q < end; q++) {
        if (!t->f32) {
            tensor__softmax_bwd_row_f64((double *)t->gx + q * n, (const double *)t->x + q * n, (const double *)t->g + q * n, n, t->log_form);
            continue;
        }
        float *gx = (float *)t->gx + q * n, m;
        const float *x = (const float *)t->x + q * n, *g = (const float *)t->g + q * n;
        double s = tensor__row_maxsumexp_f32(gx, x, n, &m); /* gx = e^(x - max) */
        if (s != s) tensor__softmax_bwd_row_f32(gx, x, g, n, t->log_form);
        else if (t->log_form) tensor__row_fms_f32(gx, g, n, (float)(tensor__row_sum_f32(g, n) / s));
        else tensor__row_smbwd_f32(gx, g, n, (float)(1.0 / s), (float)(tensor__row_dot_f32(g, gx, n) / s));
    }
}

/* 1 with *gx set, 0 when this path does not take the case (not f32/f64, or dim is not the
   innermost dim), -1 on error. */
static int tensor__softmax_backward(const char *fn, tensor *x, tensor *g, int dim, bool log_form, tensor **gx) {
    if (tensor__reference_kernels || (x->dtype != TENSOR_F32 && x->dtype != TENSOR_F64) || x->storage->device != TENSOR_CPU) return 0;
    for (int d = dim + 1; d < x->ndim; d++) if (x->shape[d] != 1) return 0;
    tensor *xc = tensor__contiguous(x) ? x : tensor__contiguous_copy(fn, x, x->dtype);
    tensor *gc = tensor__contiguous(g) && g->dtype == x->dtype ? g : tensor__contiguous_copy(fn, g, x->dtype);
    tensor *r = xc && gc ? tensor__new_like(fn, x, x->dtype) : NULL;
    if (r && tensor__numel_of(x->ndim, x->shape) > 0) {
        tensor__softmax_bwd_task t;
        t.x = tensor__data(xc);
        t.g = tensor__data(gc);
        t.gx = tensor__data(r);
        t.len = x->shape[dim];
        t.log_form = log_form;
        t.f32 = x->dtype == TENSOR_F32;
        tensor__parallel_for(tensor__numel_of(x->ndim, x->shape) / t.len, tensor__grain(t.len), tensor__softmax_bwd_rows, &t);
    }
    if (xc != x) tensor_free(xc);
    if (gc != g) tensor_free(gc);
    *gx = r;
    return r ? 1 : -1;
}

static tensor *tensor__softmax_front(tensor_op op, tensor *t, int dim) {
    const char *fn = tensor__ops[op].fn;
    TENSOR__CHECK_ARG(fn, t);
    if (!tensor__is_float(t->dtype))
        return tensor__fail(fn, "expected a floating tensor, got %s (convert it with tensor_to_dtype)", tensor__dtype_names[t->dtype]);
    int d = tensor__wrap_dim(fn, dim, t->ndim ? t->ndim : 1);
    if (d < 0) return NULL;
    tensor__call c;
    tensor__call_init(&c, op);
    c.n_in = 1;
    c.in[0] = t;
    c.ip[0] = t->ndim ? d : -1;
    c.out = tensor__new_like(fn, t, t->dtype);
    return c.out ? tensor__dispatch(&c) : NULL;
}
TENSOR_API tensor *tensor_softmax(tensor *t, int dim) { return tensor__softmax_front(TENSOR_OP_softmax, t, dim); }
TENSOR_API tensor *tensor_log_softmax(tensor *t, int dim) { return tensor__softmax_front(TENSOR_OP_log_softmax, t, dim); }

/* ---- layer_norm, rms_norm (over the last dim) ---- */

/* An optional norm parameter (weight, bias) as a contiguous array of dtype dt: the tensor's own
   data when it already is one, else a converted copy in *own (the caller frees it). NULL for an
   absent parameter; *failed on out-of-memory. */
static const void *tensor__param_data(const char *fn, const tensor *p, tensor_dtype dt, tensor **own, bool *failed) {
    *own = NULL;
    if (!p) return NULL;
    if (p->dtype == dt && (p->strides[0] == 1 || p->shape[0] <= 1)) return tensor__data(p);
    *own = tensor__contiguous_copy(fn, p, dt);
    if (!*own) { *failed = true; return NULL; }
    return tensor__data(*own);
}

typedef struct { const tensor *x; tensor *y; const float *w, *b; double eps; int64_t n; bool center; } tensor__norm_task;

/* Rows [begin, end) of an f32 layer_norm (center) or rms_norm with contiguous rows: the mean (of x
   or of x^2) and the variance accumulate in f32 lanes per block and in double across blocks. */
static void tensor__norm_rows_f32(int64_t begin, int64_t end, void *vt) {
    const tensor__norm_task *t = (const tensor__norm_task *)vt;
    int last = t->x->ndim - 1;
    tensor__rows r;
    tensor__rows_init(&r, t->x, t->y, last);
    tensor__rows_seek(&r, begin);
    int64_t n = t->n;
    for (int64_t q = begin; q < end; q++, tensor__rows_next(&r)) {
        const float *x = (const float *)t->x->storage->data + r.off[0];
        float *y = (float *)t->y->storage->data + r.off[1];
        double mean = t->center ? tensor__row_sum_f32(x, n) / (double)n : 0;
        double var = tensor__row_sqdev_f32(x, n, (float)mean) / (double)n;
        tensor__row_norm_f32(y, x, n, mean, (float)(1.0 / sqrt(var + t->eps)), t->w, t->b);
    }
}

/* The f32 fast path of both norms; 0, or 1 after an error. */
static int tensor__norm_fast_f32(tensor__call *c, bool center) {
    tensor *x = c->in[0], *own_w, *own_b;
    bool failed = false;
    tensor__norm_task t;
    t.w = (const float *)tensor__param_data(c->fn, c->in[1], TENSOR_F32, &own_w, &failed);
    t.b = center ? (const float *)tensor__param_data(c->fn, c->in[2], TENSOR_F32, &own_b, &failed) : NULL;
    if (!center) own_b = NULL;
    if (!failed) {
        t.x = x;
        t.y = c->out;
        t.eps = c->p[0];
        t.n = x->shape[x->ndim - 1];
        t.center = center;
        tensor__parallel_for(tensor__numel_of(x->ndim, x->shape) / t.n, tensor__grain(t.n), tensor__norm_rows_f32, &t);
    }
    tensor_free(own_w);
    tensor_free(own_b);
    return failed;
}

static bool tensor__norm_fast_ok(const tensor__call *c) {
    const tensor *x = c->in[0];
    return !tensor__reference_kernels && x->dtype == TENSOR_F32 && (x->strides[x->ndim - 1] == 1 || x->shape[x->ndim - 1] == 1);
}

/* out: [..., C] = (x - mean) / sqrt(var + eps) * weight + bias, biased variance, in double. */
static int tensor__cpu_layer_norm(tensor__call *c) {
    tensor *x = c->in[0], *y = c->out;
    int last = x->ndim - 1;
    int64_t n = x->shape[last];
    if (tensor__numel_of(x->ndim, x->shape) == 0) return 0;
    if (tensor__norm_fast_ok(c)) return tensor__norm_fast_f32(c, true);
    double *row = (double *)tensor__scratch(c->fn, (size_t)n * sizeof(double));
    double *w = tensor__param_row(c->fn, c->in[1], n, 1.0), *b = tensor__param_row(c->fn, c->in[2], n, 0.0);
    if (!row || !w || !b) { tensor__free_aligned(row); tensor__free_aligned(w); tensor__free_aligned(b); return 1; }
    tensor__rows r;
    tensor__rows_init(&r, x, y, last);
    for (int64_t q = 0; q < r.count; q++, tensor__rows_next(&r)) {
        tensor__load_row(row, x, r.off[0], x->strides[last], n);
        double mean = 0, var = 0;
        for (int64_t i = 0; i < n; i++) mean += row[i];
        mean /= (double)n;
        for (int64_t i = 0; i < n; i++) var += (row[i] - mean) * (row[i] - mean);
        var /= (double)n;
        double rstd = 1.0 / sqrt(var + c->p[0]);
        for (int64_t i = 0; i < n; i++) row[i] = (row[i] - mean) * rstd * w[i] + b[i];
        tensor__store_row(y, r.off[1], y->strides[last], row, n);
    }
    tensor__free_aligned(row);
    tensor__free_aligned(w);
    tensor__free_aligned(b);
    return 0;
}

/* out: [..., C] = x / sqrt(mean(x^2) + eps) * weight, in double. */
static int tensor__cpu_rms_norm(tensor__call *c) {
    tensor *x = c->in[0], *y = c->out;
    int last = x->ndim - 1;
    int64_t n = x->shape[last];
    if (tensor__numel_of(x->ndim, x->shape) == 0) return 0;
    if (tensor__norm_fast_ok(c)) return tensor__norm_fast_f32(c, false);
    double *row = (double *)tensor__scratch(c->fn, (size_t)n * sizeof(double));
    double *w = tensor__param_row(c->fn, c->in[1], n, 1.0);
    if (!row || !w) { tensor__free_aligned(row); tensor__free_aligned(w); return 1; }
    tensor__rows r;
    tensor__rows_init(&r, x, y, last);
    for (int64_t q = 0; q < r.count; q++, tensor__rows_next(&r)) {
        tensor__load_row(row, x, r.off[0], x->strides[last], n);
        double ms = 0;
        for (int64_t i = 0; i < n; i++) ms += row[i] * row[i];
        double rr = 1.0 / sqrt(ms / (double)n + c->p[0]);
        for (int64_t i = 0; i < n; i++) row[i] = row[i] * rr * w[i];
        tensor__store_row(y, r.off[1], y->strides[last], row, n);
    }
    tensor__free_aligned(row);
    tensor__free_aligned(w);
    return 0;
}

/* Fused backward of layer_norm (center) and rms_norm over the last dim, for f32 and f64 when the
   backward pass is not recorded: per row, with xhat = (x - mean) rstd and gh = g w,
   gx = rstd (gh - mean(gh) - xhat mean(gh xhat)) (rms_norm: mean 0, no mean(gh) term), and
   gw = sum over rows of g xhat, gb = sum over rows of g. Rows are dealt out in fixed groups whose
   gw/gb partial sums (double) add up in group order, so the result does not depend on the thread
   count. */
#define TENSOR__NORM_GROUP 64 /* rows per group of gw/gb partial sums */
static void tensor__norm_bwd_row_f64(double *gx, const double *x, const double *g, const double *w, int64_t n, double eps, bool center, double *gw, double *gb) {
    double mean = 0, var = 0, s1 = 0, s2 = 0;
    if (center) { for (int64_t i = 0; i < n; i++) mean += x[i]; mean /= (double)n; }
    for (int64_t i = 0; i < n; i++) var += (x[i] - mean) * (x[i] - mean);
    double rstd = 1.0 / sqrt(var / (double)n + eps);
    for (int64_t i = 0; i < n; i++) {
        double xh = (x[i] - mean) * rstd, gh = w ? g[i] * w[i] : g[i];
        s1 += gh;
        s2 += gh * xh;
        if (gw) gw[i] += g[i] * xh;
        if (gb) gb[i] += g[i];
    }
    double m1 = center ? s1 / (double)n : 0, m2 = s2 / (double)n;
    for (int64_t i = 0; i < n; i++) {
        double xh = (x[i] - mean) * rstd, gh = w ? g[i] * w[i] : g[i];
        gx[i] = rstd * (gh - m1 - xh * m2);
    }
}

typedef struct { const char *x, *g, *w; char *gx; double *gw, *gb; int64_t n, rows; double eps; bool center, f32; } tensor__norm_bwd_task;
static void tensor__norm_bwd_groups(int64_t begin, int64_t end, void *vt) {
    const tensor__norm_bwd_task *t = (const tensor__norm_bwd_task *)vt;
    int64_t n = t->n;
    for (int64_t grp = begin; grp < end; grp++) {
        double *gw = t->gw ? t->gw + grp * n : NULL, *gb = t->gb ? t->gb + grp * n : NULL;
        for (int64_t j = 0; j < n; j++) { if (gw) gw[j] = 0; if (gb) gb[j] = 0; }
        int64_t q1 = (grp + 1) * TENSOR__NORM_GROUP < t->rows ? (grp + 1) * TENSOR__NORM_GROUP : t->rows;
        for (int64_t q = grp * TENSOR__NORM_GROUP; q < q1; q++) {
            if (!t->f32) {
                tensor__norm_bwd_row_f64((double *)t->gx + q * n, (const double *)t->x + q * n, (const double *)t->g + q * n,
                                         (const double *)t->w, n, t->eps, t->center, gw, gb);
                continue;
            }
            const float *x = (const float *)t->x + q * n;
            double mean = t->center ? tensor__row_sum_f32(x, n) / (double)n : 0;
            double var = tensor__row_sqdev_f32(x, n, (float)mean) / (double)n;
            tensor__row_norm_bwd_f32((float *)t->gx + q * n, x, (const float *)t->g + q * n, (const float *)t->w, n, mean,
                                     (float)(1.0 / sqrt(var + t->eps)), t->center, gw, gb);
        }
    }
}

/* Sets *gx, *gw, *gb (each only where its pointer is not NULL; gb only for layer_norm). Returns 1
   when done, 0 when this path does not take the case (reference kernels, or a dtype other than
   f32/f64), -1 on error. */
static int tensor__norm_backward(const char *fn, bool center, tensor *x, tensor *w, tensor *g, double eps, tensor **gx, tensor **gw, tensor **gb) {
    if (tensor__reference_kernels || (x->dtype != TENSOR_F32 && x->dtype != TENSOR_F64) || x->storage->device != TENSOR_CPU) return 0;
    tensor_dtype dt = x->dtype;
    int64_t n = x->shape[x->ndim - 1], rows = n ? tensor__numel_of(x->ndim, x->shape) / n : 0;
    int64_t groups = (rows + TENSOR__NORM_GROUP - 1) / TENSOR__NORM_GROUP;
    bool failed = false;
    tensor *own_w = NULL;
    tensor *xc = tensor__contiguous(x) ? x : tensor__contiguous_copy(fn, x, dt);
    tensor *gc = tensor__contiguous(g) && g->dtype == dt ? g : tensor__contiguous_copy(fn, g, dt);
    const void *wd = tensor__param_data(fn, w, dt, &own_w, &failed);
    tensor *rx = tensor__new_like(fn, x, dt);
    tensor *rw = gw ? tensor__new(fn, 1, &n, dt, TENSOR_CPU) : NULL, *rb = gb ? tensor__new(fn, 1, &n, dt, TENSOR_CPU) : NULL;
    size_t part_bytes = (size_t)(groups * n) * sizeof(double);
    double *pw = gw ? (double *)tensor__cache_alloc(part_bytes) : NULL, *pb = gb ? (double *)tensor__cache_alloc(part_bytes) : NULL;
    if ((gw && !pw) || (gb && !pb)) tensor__fail(fn, "out of memory allocating %zu bytes", part_bytes);
    if (!xc || !gc || failed || !rx || (gw && (!rw || !pw)) || (gb && (!rb || !pb))) failed = true;
    else if (rows > 0 && n > 0) {
        tensor__norm_bwd_task t;
        t.x = tensor__data(xc);
        t.g = tensor__data(gc);
        t.w = (const char *)wd;
        t.gx = tensor__data(rx);
        t.gw = pw;
        t.gb = pb;
        t.n = n;
        t.rows = rows;
        t.eps = eps;
        t.center = center;
        t.f32 = dt == TENSOR_F32;
        tensor__parallel_for(groups, tensor__grain(n) / TENSOR__NORM_GROUP + 1, tensor__norm_bwd_groups, &t);
    }
    if (!failed) { /* the groups' partial sums, in group order */
        for (int k = 0; k < 2; k++) {
            tensor *dst = k ? rb : rw;
            double *part = k ? pb : pw;
            if (!dst) continue;
            for (int64_t grp = 1; grp < groups; grp++)
                for (int64_t j = 0; j < n; j++) part[j] += part[grp * n + j];
            for (int64_t j = 0; j < n; j++) {
                double s = groups ? part[j] : 0;
                if (dt == TENSOR_F32) ((float *)tensor__data(dst))[j] = (float)s;
                else ((double *)tensor__data(dst))[j] = s;
            }
        }
    }
    if (xc != x) tensor_free(xc);
    if (gc != g) tensor_free(gc);
    tensor_free(own_w);
    tensor__cache_free(pw);
    tensor__cache_free(pb);
    if (failed) { tensor_free(rx); tensor_free(rw); tensor_free(rb); return -1; }
    if (gx) *gx = rx; else tensor_free(rx);
    if (gw) *gw = rw;
    if (gb) *gb = rb;
    return 1;
}

/* Checks an optional norm parameter: 1-D of the normalized size, floating. */
static bool tensor__check_norm_param(const char *fn, const char *what, const tensor *p, const tensor *x) {
    if (!p) return true;
    int64_t n = x->shape[x->ndim - 1];
    if (p->ndim != 1 || p->shape[0] != n) {
        tensor__fail(fn, "%s of shape %s does not match the normalized shape [%lld] (the last dim of input %s)", what, tensor__shape_of(p), (long long)n, tensor__shape_of(x));
        return false;
    }
    if (!tensor__is_float(p->dtype)) { tensor__fail(fn, "%s must be a floating tensor, got %s", what, tensor__dtype_names[p->dtype]); return false; }
    return true;
}

static tensor *tensor__norm_front(tensor_op op, tensor *x, tensor *weight, tensor *bias, double eps) {
    const char *fn = tensor__ops[op].fn;
    TENSOR__CHECK_ARG(fn, x);
    tensor *ins[3] = {x, weight, bias};
    if (!tensor__same_device(fn, 3, ins)) return NULL;
    if (x->ndim == 0) return tensor__fail(fn, "input must have at least 1 dim, got a 0-dim tensor");
    if (!tensor__is_float(x->dtype)) return tensor__fail(fn, "expected a floating input, got %s", tensor__dtype_names[x->dtype]);
    if (!tensor__check_norm_param(fn, "weight", weight, x) || !tensor__check_norm_param(fn, "bias", bias, x)) return NULL;
    tensor__call c;
    tensor__call_init(&c, op);
    c.n_in = 3;
    c.in[0] = x;
    c.in[1] = weight;
    c.in[2] = bias;
    c.p[0] = eps;
    c.out = tensor__new_like(fn, x, x->dtype);
    return c.out ? tensor__dispatch(&c) : NULL;
}
TENSOR_API tensor *tensor_layer_norm(tensor *x, tensor *weight, tensor *bias, double eps) { return tensor__norm_front(TENSOR_OP_layer_norm, x, weight, bias, eps); }
TENSOR_API tensor *tensor_rms_norm(tensor *x, tensor *weight, double eps) { return tensor__norm_front(TENSOR_OP_rms_norm, x, weight, NULL, eps); }

/* The vector level the kernels of this part may use: 2 for AVX2+FMA, 3 for AVX-512F as well (x86
   with gcc/clang), 0 for the plain loops. Chosen like the elementwise kernels (>>simd): the CPU's
   best, or a lower one named by TENSOR_SIMD, so the tests can run every path on one machine. */
#if TENSOR__SIMD_X86 /* gcc/clang on x86 without TENSOR_NO_SIMD; >>simd included <immintrin.h> */
#define TENSOR__NN_AVX2 1
#define TENSOR__NN_AVX512 1
#define TENSOR__AVX2_FN __attribute__((target("avx2,fma")))
#define TENSOR__AVX2_INLINE __attribute__((target("avx2,fma"), always_inline)) inline /* no call in the loops */
#define TENSOR__AVX512_FN __attribute__((target("avx512f,avx2,fma")))
/* Unrolls the next loop whole, so arrays of vectors indexed by its counter stay in registers (gcc
   -O2 keeps a 6-trip loop and its arrays in memory: 5x slower Winograd transforms, measured) */
#define TENSOR__UNROLL _Pragma("GCC unroll 8")
#else
#define TENSOR__NN_AVX2 0
#define TENSOR__NN_AVX512 0
#endif
static int tensor__nn_isa(void) {
#if TENSOR__NN_AVX512
    const tensor__simd_isa *v = tensor__simd();
    return !v ? 0 : v->width >= 16 ? 3 : v->width >= 8 ? 2 : 0;
#else
    return 0;
#endif
}

/* ---- convolutions: im2col + GEMM ---- */

/* One convolution as 2-D: conv1d is the case H = kH = 1 (stride, padding and dilation act on W). */
typedef struct {
    int64_t N, C, H, W, O, kH, kW, oH, oW, sh, sw, ph, pw, dh, dw, groups;
    int64_t xs[4], ws[4]; /* element strides of x [n, c, h, w] and w [o, c, h, w]; 0 on absent dims */
} tensor__conv_geom;

/* From x, w, the output (or its gradient: only its shape is read) and ip = {stride, padding,
   dilation, groups}. */
static void tensor__conv_geometry_of(const tensor *x, const tensor *w, const tensor *out, int sd, const int64_t *ip, tensor__conv_geom *g) {
    bool batched = x->ndim == sd + 2;
    int xd = x->ndim;
    int64_t s = ip[0], p = ip[1], d = ip[2];
    g->N = batched ? x->shape[0] : 1;
    g->xs[0] = batched ? x->strides[0] : 0;
    g->C = x->shape[xd - sd - 1];
    g->xs[1] = x->strides[xd - sd - 1];
    g->O = w->shape[0];
    g->ws[0] = w->strides[0];
    g->ws[1] = w->strides[1];
    g->W = x->shape[xd - 1];
    g->xs[3] = x->strides[xd - 1];
    g->kW = w->shape[w->ndim - 1];
    g->ws[3] = w->strides[w->ndim - 1];
    g->oW = out->shape[out->ndim - 1];
    g->sw = s; g->pw = p; g->dw = d;
    if (sd == 2) {
        g->H = x->shape[xd - 2]; g->xs[2] = x->strides[xd - 2];
        g->kH = w->shape[2]; g->ws[2] = w->strides[2];
        g->oH = out->shape[out->ndim - 2];
        g->sh = s; g->ph = p; g->dh = d;
    } else {
        g->H = 1; g->xs[2] = 0; g->kH = 1; g->ws[2] = 0; g->oH = 1;
        g->sh = 1; g->ph = 0; g->dh = 1;
    }
    g->groups = ip[3];
}

static void tensor__conv_geometry(const tensor__call *c, int sd, tensor__conv_geom *g) {
    tensor__conv_geometry_of(c->in[0], c->in[1], c->out, sd, c->ip, g);
}

/* The reference: the convolution sum written out, in double, straight from the strided inputs. */
static void tensor__conv_reference(tensor__call *c, const tensor__conv_geom *g) {
    const tensor *x = c->in[0], *w = c->in[1], *bias = c->in[2];
    tensor *out = c->out;
    int64_t ex = (int64_t)tensor__dtype_sizes[x->dtype], ew = (int64_t)tensor__dtype_sizes[w->dtype];
    size_t eo = tensor__dtype_sizes[out->dtype];
    const char *xb = (const char *)x->storage->data, *wb = (const char *)w->storage->data;
    int64_t Cg = g->C / g->groups, Og = g->O / g->groups;
    char *o = tensor__data(out);
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t oc = 0; oc < g->O; oc++)
            for (int64_t oh = 0; oh < g->oH; oh++)
                for (int64_t ow = 0; ow < g->oW; ow++) {
                    double acc = bias ? tensor__load_f64((const char *)bias->storage->data + (bias->offset + oc * bias->strides[0]) * (int64_t)tensor__dtype_sizes[bias->dtype], bias->dtype) : 0;
                    int64_t grp = oc / Og;
                    for (int64_t ic = 0; ic < Cg; ic++)
                        for (int64_t ki = 0; ki < g->kH; ki++)
                            for (int64_t kj = 0; kj < g->kW; kj++) {
                                int64_t ih = oh * g->sh - g->ph + ki * g->dh, iw = ow * g->sw - g->pw + kj * g->dw;
                                if (ih < 0 || ih >= g->H || iw < 0 || iw >= g->W) continue;
                                int64_t xo = x->offset + n * g->xs[0] + (grp * Cg + ic) * g->xs[1] + ih * g->xs[2] + iw * g->xs[3];
                                int64_t wo = w->offset + oc * g->ws[0] + ic * g->ws[1] + ki * g->ws[2] + kj * g->ws[3];
                                acc += tensor__load_f64(xb + xo * ex, x->dtype) * tensor__load_f64(wb + wo * ew, w->dtype);
                            }
                    tensor__store_f64(o + (size_t)(((n * g->O + oc) * g->oH + oh) * g->oW + ow) * eo, out->dtype, acc);
                }
}

/* d[i] += t[i], i < n, for rows that never overlap. As in the GEMM, the vector part runs to a
   multiple of 16 so gcc's -O2 cost model vectorizes it. */
#define TENSOR__DEFINE_ADD_ROW(sfx, T)                                                                   \
    static void tensor__add_row_##sfx(T *d, const T *t, int64_t n) {                                    \
        int64_t nv = n & ~(int64_t)15;                                                                  \
        TENSOR__IVDEP                                                                                   \
        for (int64_t i = 0; i < nv; i++) d[i] += t[i];                                                  \
        for (int64_t i = nv; i < n; i++) d[i] += t[i];                                                  \
    }
TENSOR__DEFINE_ADD_ROW(f32, float)
TENSOR__DEFINE_ADD_ROW(f64, double)

/* The output columns [*lo, *hi) whose input column ow * stride + off lies in [0, W); the
   others read padding. */
static void tensor__conv_span(int64_t off, int64_t stride, int64_t W, int64_t oW, int64_t *lo, int64_t *hi) {
    int64_t l = off >= 0 ? 0 : (-off + stride - 1) / stride;
    int64_t h = W - off <= 0 ? 0 : (W - off + stride - 1) / stride;
    if (h > oW) h = oW;
    if (l > h) l = h;
    *lo = l;
    *hi = h;
}

/* cols: [Cg * kH * kW, oH * oW] (rows ld elements apart) = the input patches of x: [Cg, H, W]
   (contiguous), zero outside.
   Each (channel, ki, kj) row is a strided copy of input rows: only the span of output columns
   that lands inside the input is read (a plain copy at stride 1); the rest is zero-filled. */
#define TENSOR__DEFINE_IM2COL(sfx, T)                                                                    \
    static void tensor__im2col_##sfx(T *cols, int64_t ld, const T *x, const tensor__conv_geom *g, int64_t Cg) { \
        for (int64_t ch = 0; ch < Cg; ch++)                                                             \
            for (int64_t ki = 0; ki < g->kH; ki++)                                                      \
                for (int64_t kj = 0; kj < g->kW; kj++) {                                                \
                    T *row = cols + ((ch * g->kH + ki) * g->kW + kj) * ld;                              \
                    int64_t off = kj * g->dw - g->pw, lo, hi;                                           \
                    tensor__conv_span(off, g->sw, g->W, g->oW, &lo, &hi);                               \
                    for (int64_t oh = 0; oh < g->oH; oh++) {                                            \
                        T *r = row + oh * g->oW;                                                        \
                        int64_t ih = oh * g->sh - g->ph + ki * g->dh;                                   \
                        if (ih < 0 || ih >= g->H) { for (int64_t ow = 0; ow < g->oW; ow++) r[ow] = 0; continue; } \
                        const T *xr = x + (ch * g->H + ih) * g->W;                                      \
                        for (int64_t ow = 0; ow < lo; ow++) r[ow] = 0;                                  \
                        if (g->sw == 1) { if (hi > lo) memcpy(r + lo, xr + lo + off, (size_t)(hi - lo) * sizeof(T)); } \
                        else for (int64_t ow = lo; ow < hi; ow++) r[ow] = xr[ow * g->sw + off];         \
                        for (int64_t ow = hi; ow < g->oW; ow++) r[ow] = 0;                              \
                    }                                                                                   \
                }                                                                                       \
    }
TENSOR__DEFINE_IM2COL(f32, float)
TENSOR__DEFINE_IM2COL(f64, double)
TENSOR__DEFINE_IM2COL(u16, uint16_t) /* bf16 operands of the bf16 GEMM kernel, moved as they are */

/* The adjoint of im2col: x: [Cg, H, W] (contiguous) += every patch entry of cols [Cg * kH * kW,
   oH * oW] (rows ld apart) at the input position it was read from (entries that fell in the padding
   are dropped). */
#define TENSOR__DEFINE_COL2IM(sfx, T)                                                                    \
    static void tensor__col2im_##sfx(T *x, const T *cols, int64_t ld, const tensor__conv_geom *g, int64_t Cg) { \
        for (int64_t ch = 0; ch < Cg; ch++)                                                             \
            for (int64_t ki = 0; ki < g->kH; ki++)                                                      \
                for (int64_t kj = 0; kj < g->kW; kj++) {                                                \
                    const T *row = cols + ((ch * g->kH + ki) * g->kW + kj) * ld;                        \
                    int64_t off = kj * g->dw - g->pw, lo, hi;                                           \
                    tensor__conv_span(off, g->sw, g->W, g->oW, &lo, &hi);                               \
                    for (int64_t oh = 0; oh < g->oH; oh++) {                                            \
                        int64_t ih = oh * g->sh - g->ph + ki * g->dh;                                   \
                        if (ih < 0 || ih >= g->H) continue;                                             \
                        const T *r = row + oh * g->oW;                                                  \
                        T *xr = x + (ch * g->H + ih) * g->W;                                            \
                        if (g->sw == 1 && hi > lo) {                                                    \
                            tensor__add_row_##sfx(xr + lo + off, r + lo, hi - lo);                      \
                        } else {                                                                        \
                            for (int64_t ow = lo; ow < hi; ow++) xr[ow * g->sw + off] += r[ow];         \
                        }                                                                               \
                    }                                                                                   \
                }                                                                                       \
    }
TENSOR__DEFINE_COL2IM(f32, float)
TENSOR__DEFINE_COL2IM(f64, double)

/* f32 im2col and col2im with AVX2 where the stride along W is 1 (any padding and dilation): each
   8-column chunk of a row is one load under the mask of the columns inside the input (the masked
   lanes read as 0, the padding). im2col writes each output row of cols; col2im runs the other way
   round, as a gather: each 8-column chunk of an input row sums, in registers, every cols entry that
   was read from it, and is stored once, so gx needs no zeroing and no read-modify-write. A row's
   last chunk overlaps the one before it when the row is not a multiple of 8 long (the lanes stored
   twice hold the same values). Rows shorter than 8 take the loops above. */
#define TENSOR__COL2IM_KW 16 /* the widest kernel of the AVX2 col2im (its masks sit in an array) */
#if TENSOR__NN_AVX2
static TENSOR__AVX2_INLINE __m256i tensor__conv_lanes(int64_t c0, int64_t lo, int64_t hi) { /* lo <= c0 + lane < hi */
    __m256i c = _mm256_add_epi32(_mm256_set1_epi32((int)c0), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    return _mm256_and_si256(_mm256_cmpgt_epi32(c, _mm256_set1_epi32((int)lo - 1)), _mm256_cmpgt_epi32(_mm256_set1_epi32((int)hi), c));
}
static TENSOR__AVX2_FN void tensor__im2col_avx2(float *cols, int64_t ld, const float *x, const tensor__conv_geom *g, int64_t Cg) {
    const int64_t H = g->H, W = g->W, oH = g->oH, oW = g->oW, sh = g->sh;
    for (int64_t ch = 0; ch < Cg; ch++)
        for (int64_t ki = 0; ki < g->kH; ki++) {
            int64_t ih0 = ki * g->dh - g->ph, oh_lo, oh_hi; /* output row oh reads input row oh * sh + ih0 */
            tensor__conv_span(ih0, sh, H, oH, &oh_lo, &oh_hi);
            for (int64_t kj = 0; kj < g->kW; kj++) {
                float *row = cols + ((ch * g->kH + ki) * g->kW + kj) * ld;
                int64_t off = kj * g->dw - g->pw, lo, hi; /* row entry ow reads input column ow + off */
                tensor__conv_span(off, 1, W, oW, &lo, &hi);
                for (int64_t c0 = 0; c0 < oW; c0 += 8) {
                    int64_t c = c0 + 8 > oW ? oW - 8 : c0, oh = 0;
                    __m256i m = tensor__conv_lanes(c, lo, hi);
                    const float *src = x + (ch * H + ih0) * W + off + c; /* + oh * sh * W */
                    float *dst = row + c;                                /* + oh * oW */
                    for (; oh < oh_lo; oh++) _mm256_storeu_ps(dst + oh * oW, _mm256_setzero_ps());
                    if (c >= lo && c + 8 <= hi)
                        for (; oh < oh_hi; oh++) _mm256_storeu_ps(dst + oh * oW, _mm256_loadu_ps(src + oh * sh * W));
                    else
                        for (; oh < oh_hi; oh++) _mm256_storeu_ps(dst + oh * oW, _mm256_maskload_ps(src + oh * sh * W, m));
                    for (; oh < oH; oh++) _mm256_storeu_ps(dst + oh * oW, _mm256_setzero_ps());
                }
            }
        }
    _mm256_zeroupper();
}
static TENSOR__AVX2_FN void tensor__col2im_avx2(float *x, const float *cols, int64_t ld, const tensor__conv_geom *g, int64_t Cg) {
    int64_t W = g->W, oW = g->oW, kW = g->kW;
    __m256i masks[TENSOR__COL2IM_KW];
    for (int64_t c0 = 0; c0 < W; c0 += 8) {
        int64_t c = c0 + 8 > W ? W - 8 : c0;
        for (int64_t kj = 0; kj < kW; kj++) {
            int64_t off = kj * g->dw - g->pw; /* input column iw was entry iw - off of the row */
            masks[kj] = tensor__conv_lanes(c, off > 0 ? off : 0, oW + off < W ? oW + off : W);
        }
        for (int64_t ch = 0; ch < Cg; ch++)
            for (int64_t ih = 0; ih < g->H; ih++) {
                __m256 acc = _mm256_setzero_ps();
                for (int64_t ki = 0; ki < g->kH; ki++) {
                    int64_t t = ih + g->ph - ki * g->dh, oh = t / g->sh; /* the output row that read input row ih */
                    if (t < 0 || t % g->sh != 0 || oh >= g->oH) continue;
                    const float *r = cols + (ch * g->kH + ki) * kW * ld + oh * oW + g->pw + c;
                    for (int64_t kj = 0; kj < kW; kj++) acc = _mm256_add_ps(acc, _mm256_maskload_ps(r + kj * (ld - g->dw), masks[kj]));
                }
                _mm256_storeu_ps(x + (ch * g->H + ih) * W + c, acc);
            }
    }
    _mm256_zeroupper();
}
#endif
/* The same with AVX-512F: a row of up to 16 columns is one load and one store under k-masks (fast,
   unlike AVX2's masked stores on AMD), so the 14 x 14 images take one vector per row, not two. */
#if TENSOR__NN_AVX512
static inline __mmask16 tensor__conv_kmask(int64_t c0, int64_t lo, int64_t hi) { /* lo <= c0 + lane < hi */
    int64_t l = lo - c0 < 0 ? 0 : lo - c0 > 16 ? 16 : lo - c0, h = hi - c0 < 0 ? 0 : hi - c0 > 16 ? 16 : hi - c0;
    return (__mmask16)(h > l ? ((1u << h) - 1u) & ~((1u << l) - 1u) : 0u);
}
static TENSOR__AVX512_FN void tensor__im2col_avx512(float *cols, int64_t ld, const float *x, const tensor__conv_geom *g, int64_t Cg) {
    const int64_t H = g->H, W = g->W, oH = g->oH, oW = g->oW, sh = g->sh;
    for (int64_t ch = 0; ch < Cg; ch++)
        for (int64_t ki = 0; ki < g->kH; ki++) {
            int64_t ih0 = ki * g->dh - g->ph, oh_lo, oh_hi; /* output row oh reads input row oh * sh + ih0 */
            tensor__conv_span(ih0, sh, H, oH, &oh_lo, &oh_hi);
            for (int64_t kj = 0; kj < g->kW; kj++) {
                float *row = cols + ((ch * g->kH + ki) * g->kW + kj) * ld;
                int64_t off = kj * g->dw - g->pw, lo, hi; /* row entry ow reads input column ow + off */
                tensor__conv_span(off, 1, W, oW, &lo, &hi);
                for (int64_t c = 0; c < oW; c += 16) {
                    __mmask16 m = tensor__conv_kmask(c, lo, hi), st = tensor__conv_kmask(c, 0, oW);
                    const float *src = x + (ch * H + ih0) * W + off + c; /* + oh * sh * W */
                    float *dst = row + c;                                /* + oh * oW */
                    int64_t oh = 0;
                    for (; oh < oh_lo; oh++) _mm512_mask_storeu_ps(dst + oh * oW, st, _mm512_setzero_ps());
                    for (; oh < oh_hi; oh++) _mm512_mask_storeu_ps(dst + oh * oW, st, _mm512_maskz_loadu_ps(m, src + oh * sh * W));
                    for (; oh < oH; oh++) _mm512_mask_storeu_ps(dst + oh * oW, st, _mm512_setzero_ps());
                }
            }
        }
    _mm256_zeroupper();
}
/* The bf16 operands of the bf16 GEMM kernel: the same rows, 16 bf16 columns per masked 256-bit
   load and store (avx512bw; it runs only where the bf16 kernel does). */
#if TENSOR__GEMM_AVX512
static TENSOR__AVX512BF16 void tensor__im2col_avx512_bf16(uint16_t *cols, int64_t ld, const uint16_t *x, const tensor__conv_geom *g, int64_t Cg) {
    const int64_t H = g->H, W = g->W, oH = g->oH, oW = g->oW, sh = g->sh;
    for (int64_t ch = 0; ch < Cg; ch++)
        for (int64_t ki = 0; ki < g->kH; ki++) {
            int64_t ih0 = ki * g->dh - g->ph, oh_lo, oh_hi;
            tensor__conv_span(ih0, sh, H, oH, &oh_lo, &oh_hi);
            for (int64_t kj = 0; kj < g->kW; kj++) {
                uint16_t *row = cols + ((ch * g->kH + ki) * g->kW + kj) * ld;
                int64_t off = kj * g->dw - g->pw, lo, hi;
                tensor__conv_span(off, 1, W, oW, &lo, &hi);
                for (int64_t c = 0; c < oW; c += 16) {
                    __mmask16 m = tensor__conv_kmask(c, lo, hi), st = tensor__conv_kmask(c, 0, oW);
                    const uint16_t *src = x + (ch * H + ih0) * W + off + c;
                    uint16_t *dst = row + c;
                    int64_t oh = 0;
                    for (; oh < oh_lo; oh++) _mm256_mask_storeu_epi16(dst + oh * oW, st, _mm256_setzero_si256());
                    for (; oh < oh_hi; oh++) _mm256_mask_storeu_epi16(dst + oh * oW, st, _mm256_maskz_loadu_epi16(m, src + oh * sh * W));
                    for (; oh < oH; oh++) _mm256_mask_storeu_epi16(dst + oh * oW, st, _mm256_setzero_si256());
                }
            }
        }
    _mm256_zeroupper();
}
#endif
static TENSOR__AVX512_FN void tensor__col2im_avx512(float *x, const float *cols, int64_t ld, const tensor__conv_geom *g, int64_t Cg) {
    int64_t W = g->W, oW = g->oW, kW = g->kW;
    __mmask16 masks[TENSOR__COL2IM_KW];
    for (int64_t c = 0; c < W; c += 16) {
        __mmask16 st = tensor__conv_kmask(c, 0, W);
        for (int64_t kj = 0; kj < kW; kj++) {
            int64_t off = kj * g->dw - g->pw; /* input column iw was entry iw - off of the row */
            masks[kj] = tensor__conv_kmask(c, off > 0 ? off : 0, oW + off < W ? oW + off : W);
        }
        for (int64_t ch = 0; ch < Cg; ch++)
            for (int64_t ih = 0; ih < g->H; ih++) {
                __m512 acc = _mm512_setzero_ps();
                for (int64_t ki = 0; ki < g->kH; ki++) {
                    int64_t t = ih + g->ph - ki * g->dh, oh = t / g->sh; /* the output row that read input row ih */
                    if (t < 0 || t % g->sh != 0 || oh >= g->oH) continue;
                    const float *r = cols + (ch * g->kH + ki) * kW * ld + oh * oW + g->pw + c;
                    for (int64_t kj = 0; kj < kW; kj++) acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(masks[kj], r + kj * (ld - g->dw)));
                }
                _mm512_mask_storeu_ps(x + (ch * g->H + ih) * W + c, st, acc);
            }
    }
    _mm256_zeroupper();
}
#endif
#if TENSOR__NN_AVX2
/* out[Og, P] (rows ldo apart) = w[Og, K] @ cols[K, P] (rows ldc apart) + bias (when not NULL) for
   a short K (a first layer's K = 9): the GEMM's tiles would load and store C for a few
   multiply-adds each and pack cols first; here each 4 x 16 tile sums its K products in registers
   straight from cols, in the GEMM's order (one fused multiply-add per k from 0), then adds the bias,
   and is stored once. P >= 16: a row's last block overlaps the one before (the same values). */
static TENSOR__AVX2_FN void tensor__conv_smallk_avx2(float *out, int64_t ldo, const float *w, int64_t K, const float *cols, int64_t ldc, int64_t Og, int64_t P,
                                                     const float *bias) {
    int64_t o = 0;
    for (; o + 4 <= Og; o += 4) { /* 4 rows of out at a time, written front to back */
        const float *wr = w + o * K;
        float *r = out + o * ldo;
        for (int64_t p0 = 0; p0 < P; p0 += 16) {
            int64_t p = p0 + 16 > P ? P - 16 : p0;
            const float *c = cols + p;
            __m256 a0 = _mm256_setzero_ps(), a1 = a0, b0 = a0, b1 = a0, c0 = a0, c1 = a0, d0 = a0, d1 = a0;
            for (int64_t t = 0; t < K; t++) {
                __m256 x0 = _mm256_loadu_ps(c + t * ldc), x1 = _mm256_loadu_ps(c + t * ldc + 8), v;
                v = _mm256_broadcast_ss(wr + t); a0 = _mm256_fmadd_ps(v, x0, a0); a1 = _mm256_fmadd_ps(v, x1, a1);
                v = _mm256_broadcast_ss(wr + K + t); b0 = _mm256_fmadd_ps(v, x0, b0); b1 = _mm256_fmadd_ps(v, x1, b1);
                v = _mm256_broadcast_ss(wr + 2 * K + t); c0 = _mm256_fmadd_ps(v, x0, c0); c1 = _mm256_fmadd_ps(v, x1, c1);
                v = _mm256_broadcast_ss(wr + 3 * K + t); d0 = _mm256_fmadd_ps(v, x0, d0); d1 = _mm256_fmadd_ps(v, x1, d1);
            }
            if (bias) {
                __m256 v = _mm256_broadcast_ss(bias + o); a0 = _mm256_add_ps(a0, v); a1 = _mm256_add_ps(a1, v);
                v = _mm256_broadcast_ss(bias + o + 1); b0 = _mm256_add_ps(b0, v); b1 = _mm256_add_ps(b1, v);
                v = _mm256_broadcast_ss(bias + o + 2); c0 = _mm256_add_ps(c0, v); c1 = _mm256_add_ps(c1, v);
                v = _mm256_broadcast_ss(bias + o + 3); d0 = _mm256_add_ps(d0, v); d1 = _mm256_add_ps(d1, v);
            }
            _mm256_storeu_ps(r + p, a0); _mm256_storeu_ps(r + p + 8, a1);
            _mm256_storeu_ps(r + ldo + p, b0); _mm256_storeu_ps(r + ldo + p + 8, b1);
            _mm256_storeu_ps(r + 2 * ldo + p, c0); _mm256_storeu_ps(r + 2 * ldo + p + 8, c1);
            _mm256_storeu_ps(r + 3 * ldo + p, d0); _mm256_storeu_ps(r + 3 * ldo + p + 8, d1);
        }
    }
    for (; o < Og; o++)
        for (int64_t p0 = 0; p0 < P; p0 += 16) {
            int64_t p = p0 + 16 > P ? P - 16 : p0;
            __m256 a0 = _mm256_setzero_ps(), a1 = a0;
            for (int64_t t = 0; t < K; t++) {
                __m256 v = _mm256_broadcast_ss(w + o * K + t);
                a0 = _mm256_fmadd_ps(v, _mm256_loadu_ps(cols + t * ldc + p), a0);
                a1 = _mm256_fmadd_ps(v, _mm256_loadu_ps(cols + t * ldc + p + 8), a1);
            }
            if (bias) { __m256 v = _mm256_broadcast_ss(bias + o); a0 = _mm256_add_ps(a0, v); a1 = _mm256_add_ps(a1, v); }
            _mm256_storeu_ps(out + o * ldo + p, a0);
            _mm256_storeu_ps(out + o * ldo + p + 8, a1);
        }
    _mm256_zeroupper();
}
/* r[i] = q[i] + b, i < n (q may be r) */
static TENSOR__AVX2_FN void tensor__add_scalar_avx2(float *r, const float *q, float b, int64_t n) {
    __m256 v = _mm256_set1_ps(b);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(r + i, _mm256_add_ps(_mm256_loadu_ps(q + i), v));
    _mm256_zeroupper();
    for (; i < n; i++) r[i] = q[i] + b;
}
#endif
/* Which vector im2col / col2im apply: 3 (AVX-512) or 2 (AVX2, rows of at least 8) for f32 with
   stride 1 along W, kernels up to TENSOR__COL2IM_KW wide and sizes that fit the int32 lanes of the
   AVX2 masks; else 0 (the loops above). */
static int tensor__conv_vec(const tensor__conv_geom *g, tensor_dtype ct) {
    if (ct != TENSOR_F32 || g->sw != 1 || g->kW > TENSOR__COL2IM_KW || g->W + g->oW + g->kW * g->dw + g->pw >= ((int64_t)1 << 30)) return 0;
    int isa = tensor__nn_isa();
    return isa >= 3 ? 3 : isa == 2 && g->oW >= 8 && g->W >= 8 ? 2 : 0;
}

/* The fast path's work: blocks of `bn` consecutive images, in the compute dtype ct (f32, or f64
   for f64) on contiguous buffers. The images of a block go through one GEMM per group, side by side
   along the GEMM's n dim (cols [K, bn * P]): a P too short to fill the GEMM's tiles well (the 14 x 14
   images of a CNN's second layer: P = 196) fills them in a block of 4 (measured here, one thread:
   64 x 196 x 288 per image at 94 GFLOP/s alone, 105 in blocks of 4; the backward's GEMMs 100 -> 110
   and 93 -> 107). Each chunk of blocks claims a slot: its own im2col buffer and block buffer (and in
   the backward its own gw sum), so the blocks spread over the threads when their GEMMs are too
   small to thread themselves (tensor__conv_blocks). The slots' buffers come from the caching
   allocator, made on the calling thread before the chunks run: no allocation, no page faults
   inside the loop. */
typedef struct {
    const tensor__conv_geom *g;
    tensor_dtype ct;
    tensor_dtype sd;           /* x, w, gc and im2col's cols: ct, or bf16 for the bf16 GEMM kernel */
    bool direct;               /* 1x1 kernel, stride 1, no padding: cols is x itself */
    int vec;                   /* tensor__conv_vec */
    bool smallk;               /* forward: tensor__conv_smallk_avx2 instead of the GEMM */
    int64_t bn;                /* images per block */
    const char *x, *w, *gc;    /* x [N, C, H, W], w [O, Cg, kH, kW], backward: gc [N, O, oH * oW] */
    const char *bias;          /* forward: bias [O] in ct, or NULL */
    char *out;                 /* forward: out [N, O, oH * oW]; backward: gx [N, C, H, W] or NULL */
    char *gw;                  /* backward: gw [O, Cg * kH * kW] sums, one per slot, or NULL */
    double *gbn;               /* backward: [N, O] sums of gc over p, or NULL */
    char *scratch;             /* per slot: cols [K, bn * P], then (bn > 1) a block [Og, bn * P] */
    int slot;                  /* the next chunk's slot */
    int oom;                   /* a GEMM had no memory (set from any thread) */
} tensor__conv_job;

/* Forward GEMMs with K = Cg * kH * kW up to this take tensor__conv_smallk_avx2 (measured here, one
   thread, batch 64, 3x3 kernels: K 9 0.56 -> 0.32 ms, K 27 1.20 -> 0.93, K 72 5.0 -> 4.8; K 144
   2.5 -> 2.8 is the GEMM's). */
#ifndef TENSOR__CONV_SMALLK
#define TENSOR__CONV_SMALLK 64
#endif
/* Images per block: 1, or the largest power of two with bn * P at most TENSOR__CONV_BLOCK_COLS. */
#ifndef TENSOR__CONV_BLOCK_COLS
#define TENSOR__CONV_BLOCK_COLS 1024
#endif
static int64_t tensor__conv_block_images(const tensor__conv_geom *g, bool direct) {
    int64_t P = g->oH * g->oW, bn = 1;
    if (direct || P <= 0) return 1;
    while (bn * 2 * P <= TENSOR__CONV_BLOCK_COLS && bn * 2 <= g->N) bn *= 2;
    return bn;
}
/* (sized in ct even for bf16 operands: the backward's cols hold w^T gc in ct) */
static size_t tensor__conv_slot_bytes(const tensor__conv_geom *g, tensor_dtype ct, bool direct, int64_t bn) {
    int64_t K = g->C / g->groups * g->kH * g->kW, Og = g->O / g->groups, P = g->oH * g->oW;
    /* K * bn * P may overflow (expanded operands): SIZE_MAX then, which no allocation serves */
    int64_t n = tensor__work_mul(direct ? 0 : K, bn * P), m = bn > 1 ? Og * bn * P : 0;
    if (n > INT64_MAX - m || (uint64_t)(n + m) > (SIZE_MAX - 63) / tensor__dtype_sizes[ct]) return SIZE_MAX;
    return ((size_t)(n + m) * tensor__dtype_sizes[ct] + 63) & ~(size_t)63;
}
static int tensor__conv_claim(tensor__conv_job *j) {
#if TENSOR__HAVE_THREADS
    return __atomic_fetch_add(&j->slot, 1, __ATOMIC_RELAXED);
#else
    return j->slot++;
#endif
}

/* cols [K, ld] from columns col0.. = im2col of the image group at xg; x itself when direct. */
static const char *tensor__conv_im2col(const tensor__conv_job *j, char *cols, int64_t ld, int64_t col0, const char *xg) {
    if (j->direct) return xg;
    int64_t Cg = j->g->C / j->g->groups;
#if TENSOR__NN_AVX512 && TENSOR__GEMM_AVX512
    if (j->sd == TENSOR_BF16 && j->vec == 3) { tensor__im2col_avx512_bf16((uint16_t *)(void *)cols + col0, ld, (const uint16_t *)(const void *)xg, j->g, Cg); return cols; }
#endif
    if (j->sd == TENSOR_BF16) { tensor__im2col_u16((uint16_t *)(void *)cols + col0, ld, (const uint16_t *)(const void *)xg, j->g, Cg); return cols; }
    if (j->ct == TENSOR_F64) { tensor__im2col_f64((double *)cols + col0, ld, (const double *)xg, j->g, Cg); return cols; }
#if TENSOR__NN_AVX2
    if (j->vec == 2) { TENSOR__PATH_TAKEN(conv_im2col_simd); tensor__im2col_avx2((float *)cols + col0, ld, (const float *)xg, j->g, Cg); return cols; }
#endif
#if TENSOR__NN_AVX512
    if (j->vec == 3) { TENSOR__PATH_TAKEN(conv_im2col_simd); tensor__im2col_avx512((float *)cols + col0, ld, (const float *)xg, j->g, Cg); return cols; }
#endif
    tensor__im2col_f32((float *)cols + col0, ld, (const float *)xg, j->g, Cg);
    return cols;
}

/* row[i] = src[i] + b, i < n (src may be row) */
static void tensor__row_plus(tensor_dtype ct, char *row, const char *src, const char *bias, int64_t o, int64_t n) {
    if (ct == TENSOR_F64) {
        double b = bias ? ((const double *)bias)[o] : 0, *r = (double *)row;
        const double *q = (const double *)src;
        for (int64_t i = 0; i < n; i++) r[i] = q[i] + b;
        return;
    }
    float b = bias ? ((const float *)bias)[o] : 0, *r = (float *)row;
    const float *q = (const float *)src;
#if TENSOR__NN_AVX2
    if (tensor__nn_isa() >= 2) { tensor__add_scalar_avx2(r, q, b, n); return; }
#endif
    for (int64_t i = 0; i < n; i++) r[i] = q[i] + b;
}

/* Per block of images and group: cols [K, bn * P] = the images' patches side by side,
   blk [Og, bn * P] = w_g[Og, K] @ cols (P = oH * oW, K = Cg * kH * kW), then each image's rows
   (plus the bias) into out; a block of one image is written into out directly, the bias added
   while its rows are in cache. */
static void tensor__conv_fwd_blocks(int64_t begin, int64_t end, void *ctx) {
    tensor__conv_job *j = (tensor__conv_job *)ctx;
    const tensor__conv_geom *g = j->g;
    size_t cs = tensor__dtype_sizes[j->ct], es = tensor__dtype_sizes[j->sd];
    int64_t Cg = g->C / g->groups, Og = g->O / g->groups, K = Cg * g->kH * g->kW, P = g->oH * g->oW, X = Cg * g->H * g->W;
    char *cols = j->scratch + (size_t)tensor__conv_claim(j) * tensor__conv_slot_bytes(g, j->ct, j->direct, j->bn);
    char *blk = j->direct ? cols : cols + (size_t)(K * j->bn * P) * cs;
    if (j->sd == TENSOR_BF16) TENSOR__PATH_TAKEN(conv_bf16);
    for (int64_t bi = begin; bi < end; bi++) {
        int64_t n0 = bi * j->bn, bn = g->N - n0 < j->bn ? g->N - n0 : j->bn, ld = bn * P;
        for (int64_t grp = 0; grp < g->groups; grp++) {
            const char *B = NULL;
            for (int64_t i = 0; i < bn; i++) B = tensor__conv_im2col(j, cols, ld, i * P, j->x + (size_t)(((n0 + i) * g->groups + grp) * X) * es);
            const char *wg = j->w + (size_t)(grp * Og * K) * es;
#if TENSOR__NN_AVX2
            if (j->smallk) {
                TENSOR__PATH_TAKEN(conv_smallk);
                for (int64_t i = 0; i < bn; i++)
                    tensor__conv_smallk_avx2((float *)j->out + ((n0 + i) * g->O + grp * Og) * P, P, (const float *)wg, K, (const float *)B + i * P, ld, Og, P,
                                             j->bias ? (const float *)j->bias + grp * Og : NULL);
                continue;
            }
#endif
            if (bn == 1) {
                char *o = j->out + (size_t)((n0 * g->O + grp * Og) * P) * cs;
                TENSOR__GEMM_IN_TASK(j->oom, tensor__gemm_strided(j->ct, j->sd, Og, P, K, wg, K, 1, B, P, 1, o, P, 1, false));
                for (int64_t q = 0; j->bias && q < Og; q++) tensor__row_plus(j->ct, o + (size_t)(q * P) * cs, o + (size_t)(q * P) * cs, j->bias, grp * Og + q, P);
                continue;
            }
            TENSOR__GEMM_IN_TASK(j->oom, tensor__gemm_strided(j->ct, j->sd, Og, ld, K, wg, K, 1, B, ld, 1, blk, ld, 1, false));
            for (int64_t i = 0; i < bn; i++)
                for (int64_t q = 0; q < Og; q++)
                    tensor__row_plus(j->ct, j->out + (size_t)(((n0 + i) * g->O + grp * Og + q) * P) * cs, blk + (size_t)(q * ld + i * P) * cs, j->bias,
                                     grp * Og + q, P);
        }
    }
}

/* Whether the blocks spread over the threads (tensor__gemm_spread), each GEMM on one thread,
   rather than run one after another with each GEMM (Og x bn P x K) split across the threads. */
static int64_t tensor__conv_nblocks(const tensor__conv_job *j) { return (j->g->N + j->bn - 1) / j->bn; }
static bool tensor__conv_spread(const tensor__conv_job *j) {
    const tensor__conv_geom *g = j->g;
    return tensor__gemm_spread(tensor__conv_nblocks(j), g->O / g->groups, j->bn * g->oH * g->oW, g->C / g->groups * g->kH * g->kW);
}
/* The slots a run of tensor__conv_blocks needs: one per chunk (tensor__parallel_for makes at most
   one per thread). */
static int64_t tensor__conv_slots(const tensor__conv_job *j) { return tensor__conv_spread(j) ? tensor_get_num_threads() : 1; }
/* false when a GEMM had no memory (the caller records the error). */
static bool tensor__conv_blocks(tensor__range_fn fn, tensor__conv_job *j) {
    const tensor__conv_geom *g = j->g;
    int64_t per = tensor__work_mul(tensor__work_mul(g->O, g->C / g->groups * g->kH * g->kW), j->bn * g->oH * g->oW); /* multiply-adds per block */
    if (tensor__conv_spread(j)) tensor__parallel_for(tensor__conv_nblocks(j), TENSOR__GEMM_PAR_MIN / (per > 0 ? per : 1) + 1, fn, j);
    else fn(0, tensor__conv_nblocks(j), j);
    return !TENSOR__TASK_FAILED(j->oom);
}
/* The job's common fields and its slots' scratch (NULL, after recording an error, when there is
   no memory). */
static char *tensor__conv_job_init(const char *fn, tensor__conv_job *j, const tensor__conv_geom *g, tensor_dtype ct, tensor_dtype sd) {
    memset(j, 0, sizeof *j);
    j->g = g;
    j->ct = ct;
    j->sd = sd;
    j->direct = g->kH == 1 && g->kW == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0;
    j->vec = tensor__conv_vec(g, ct);
    j->bn = tensor__conv_block_images(g, j->direct);
    /* (rows of cols a multiple of 1 KiB apart would share the L1 sets: the GEMM then) */
    j->smallk = ct == TENSOR_F32 && sd == ct && tensor__nn_isa() >= 2 && g->C / g->groups * g->kH * g->kW <= TENSOR__CONV_SMALLK && g->oH * g->oW >= 16 &&
                (j->bn * g->oH * g->oW) % 256 != 0;
    size_t slot = tensor__conv_slot_bytes(g, ct, j->direct, j->bn), slots = (size_t)tensor__conv_slots(j);
    size_t bytes = slot > SIZE_MAX / slots ? SIZE_MAX : slots * slot;
    j->scratch = (char *)tensor__cache_alloc(bytes ? bytes : 1);
    if (!j->scratch) tensor__fail(fn, "out of memory allocating convolution scratch");
    return j->scratch;
}

/* ---- convolutions: Winograd F(4x4, 3x3) ---- */

/* A 3x3 convolution with stride 1, as 4x4 output tiles: each tile is A^T [sum over c of
   (G g G^T) . (B^T d B)] A for its 6x6 input patch d and 3x3 kernel g (Lavin and Gray, "Fast
   Algorithms for Convolutional Neural Networks", 2015, with the points 0, 1, -1, 2, -2). The 144
   multiply-adds per tile and channel pair of the direct sum become 36: the work is 36 GEMMs
   [O, C] @ [C, tiles], one per point of the 6x6 transform domain, and the transforms are a few
   adds and multiplies per value. It serves the forward, the input gradient (a convolution of the
   output's gradient with the kernel turned round and its channels swapped, padding 2 - p) and the
   weight gradient (G^T [sum over tiles of (A gy A^T) . (B^T d B)] G). Against F(2x2, 3x3) (16
   GEMMs per 2x2 tile: 4 multiply-adds per output against 2.25 here; 2.94 on 14 x 14 outputs, whose
   4x4 tiles cover 16 x 16) it saves a quarter of the GEMM work and rounds more: the transforms'
   4, 5, 8 and 1/6 spread the terms. Measured here (bench's conv rows, 64 x 32 x 14 x 14 -> 64
   channels, max |a - b| / (1 + |b|) against im2col + OpenBLAS): forward 1.1e-5 (F(2x2): 9.9e-7),
   input gradient 2.0e-5 (1.1e-6), weight gradient 1.7e-4 (2.9e-5; its entries are sums of 12544
   products); CNN training step (examples/fashion_mnist_cnn.c's layers), 1 thread: 11.7-12.4 ms
   against 14.0-14.3 for F(2x2) with the same plane copies and unrolled transforms. TENSOR_NO_WINOGRAD leaves every convolution to im2col + GEMM. f32 with AVX2
   (the transforms run two groups of 4 tiles at a time), when both channel counts are at least
   TENSOR__WINO_MIN_CH: with fewer the transforms cost more than they save (measured here, forward
   + backward of 64 images of 14 x 14, C = O, 1 thread, Winograd vs im2col: C 4 0.37 vs 0.32 ms,
   6 0.41 vs 0.56, 8 0.69 vs 0.89, 12 0.92 vs 1.48, 16 1.54 vs 2.50, 32 4.5 vs 8.4). */
#define TENSOR__WINO_PTS 36 /* points of the transform domain, 6 x 6: point (a, b) is a * 6 + b */
#ifndef TENSOR__WINO_MIN_CH
#define TENSOR__WINO_MIN_CH 8
#endif
/* Tiles per block (a few images): the block's transformed input and GEMM results stay in L2. */
#ifndef TENSOR__WINO_TILES
#define TENSOR__WINO_TILES 128
#endif

static bool tensor__wino_ok(const tensor__conv_geom *g, tensor_dtype ct) {
#ifdef TENSOR_NO_WINOGRAD
    (void)g, (void)ct;
    return false;
#endif
    return TENSOR__NN_AVX2 && ct == TENSOR_F32 && tensor__nn_isa() >= 2 && g->groups == 1 && g->kH == 3 && g->kW == 3 && g->sh == 1 && g->sw == 1 &&
           g->dh == 1 && g->dw == 1 && g->ph == g->pw && g->ph <= 2 && g->C >= TENSOR__WINO_MIN_CH && g->O >= TENSOR__WINO_MIN_CH && g->N >= 1 && g->H >= 1 && g->W >= 1 && g->oH >= 1 &&
           g->oW >= 1 && g->H < ((int64_t)1 << 24) && g->W < ((int64_t)1 << 24) && g->C < ((int64_t)1 << 24) && g->O < ((int64_t)1 << 24); /* (32-bit gather offsets) */
}

#if TENSOR__NN_AVX2 /* the rest of Winograd: it runs only with AVX2 */
/* G, the kernel transform (6 x 3) */
static const double tensor__wino_G[6][3] = {{0.25, 0, 0},           {-1.0 / 6, -1.0 / 6, -1.0 / 6}, {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                            {1.0 / 24, 1.0 / 12, 1.0 / 6}, {1.0 / 24, -1.0 / 12, 1.0 / 6}, {0, 0, 1}};

/* U[(i * 6 + l) * us + lane] = (G k G^T)[i][l] for up to 8 kernels k at once (lanes < n), their
   element (i, j) at w[lane * ws + i * 3 + j] (or, turned round, at (2 - i) * 3 + 2 - j) */
static TENSOR__AVX2_FN void tensor__wino_kernels8(float *U, int64_t us, const float *w, int ws, bool flip, int n) {
    __m256 g[3][3], t[6][3];
    __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), off = _mm256_mullo_epi32(lane, _mm256_set1_epi32(ws));
    __m256i live = tensor__avx2_first(n);
    TENSOR__UNROLL for (int e = 0; e < 9; e++)
        g[e / 3][e % 3] = _mm256_mask_i32gather_ps(_mm256_setzero_ps(), w, _mm256_add_epi32(off, _mm256_set1_epi32(flip ? 8 - e : e)), _mm256_castsi256_ps(live), 4);
    TENSOR__UNROLL for (int i = 0; i < 6; i++) {
        TENSOR__UNROLL for (int j = 0; j < 3; j++) {
            __m256 acc = _mm256_mul_ps(_mm256_set1_ps((float)tensor__wino_G[i][0]), g[0][j]);
            acc = _mm256_fmadd_ps(_mm256_set1_ps((float)tensor__wino_G[i][1]), g[1][j], acc);
            t[i][j] = _mm256_fmadd_ps(_mm256_set1_ps((float)tensor__wino_G[i][2]), g[2][j], acc);
        }
    }
    TENSOR__UNROLL for (int i = 0; i < 6; i++) {
        TENSOR__UNROLL for (int l = 0; l < 6; l++) {
            __m256 acc = _mm256_mul_ps(_mm256_set1_ps((float)tensor__wino_G[l][0]), t[i][0]);
            acc = _mm256_fmadd_ps(_mm256_set1_ps((float)tensor__wino_G[l][1]), t[i][1], acc);
            acc = _mm256_fmadd_ps(_mm256_set1_ps((float)tensor__wino_G[l][2]), t[i][2], acc);
            if (n == 8) _mm256_storeu_ps(U + (i * 6 + l) * us, acc);
            else _mm256_maskstore_ps(U + (i * 6 + l) * us, live, acc);
        }
    }
}
/* gw[lane * 9 + i * 3 + j] = (G^T d G)[i][j] for up to 8 pairs at once (lanes < n), their points
   d[xi] at gU[xi * gs + lane] */
static TENSOR__AVX2_FN void tensor__wino_grads8(float *gw, const float *gU, int64_t gs, int n) {
    __m256 h[3][6], d[TENSOR__WINO_PTS];
    __m256i live = tensor__avx2_first(n);
    float r[9][8];
    for (int xi = 0; xi < TENSOR__WINO_PTS; xi++) d[xi] = _mm256_maskload_ps(gU + xi * gs, live);
    TENSOR__UNROLL for (int i = 0; i < 3; i++) {
        TENSOR__UNROLL for (int l = 0; l < 6; l++) {
            __m256 acc = _mm256_setzero_ps();
            TENSOR__UNROLL for (int a = 0; a < 6; a++) if (tensor__wino_G[a][i] != 0) acc = _mm256_fmadd_ps(_mm256_set1_ps((float)tensor__wino_G[a][i]), d[a * 6 + l], acc);
            h[i][l] = acc;
        }
    }
    TENSOR__UNROLL for (int i = 0; i < 3; i++) {
        TENSOR__UNROLL for (int j = 0; j < 3; j++) {
            __m256 acc = _mm256_setzero_ps();
            TENSOR__UNROLL for (int l = 0; l < 6; l++) if (tensor__wino_G[l][j] != 0) acc = _mm256_fmadd_ps(_mm256_set1_ps((float)tensor__wino_G[l][j]), h[i][l], acc);
            _mm256_storeu_ps(r[i * 3 + j], acc);
        }
    }
    for (int l = 0; l < n; l++)
        for (int e = 0; e < 9; e++) gw[l * 9 + e] = r[e][l];
}

/* U[xi][a][b] = (G k G^T)[xi] for the kernel k [3][3] from output channel a to input channel b:
   w's [a][b] itself (w [O, C, 3, 3]), or with flip its [b][a] turned round 180 degrees (the input
   gradient's convolution: O_ = C, C_ = O). */
typedef struct { float *U; const float *w; int64_t O, C; bool flip; } tensor__wino_wjob;
static void tensor__wino_weights_range(int64_t a0, int64_t a1, void *ctx) {
    const tensor__wino_wjob *q = (const tensor__wino_wjob *)ctx;
    int64_t O = q->O, C = q->C, A = q->flip ? C : O, B = q->flip ? O : C;
    /* 8 kernels at a time: (a, b + lane) is w's [a][b + lane], 9 floats apart, or turned round its
       [b + lane][a], 9 C apart */
    for (int64_t a = a0; a < a1; a++)
        for (int64_t b = 0; b < B; b += 8)
            tensor__wino_kernels8(q->U + a * B + b, A * B, q->flip ? q->w + (b * C + a) * 9 : q->w + (a * C + b) * 9, q->flip ? (int)(9 * C) : 9, q->flip,
                                  (int)(B - b < 8 ? B - b : 8));
}
static void tensor__wino_weights(float *U, const float *w, int64_t O, int64_t C, bool flip) {
    tensor__wino_wjob q = {U, w, O, C, flip};
    tensor__parallel_for(flip ? C : O, 8, tensor__wino_weights_range, &q);
}

/* gw [O, C, 3, 3] = G^T gU[xi] G for each pair (o, c); gU [36][O][C]. */
static void tensor__wino_weights_grad(float *gw, const float *gU, int64_t O, int64_t C) {
    for (int64_t o = 0; o < O; o++)
        for (int64_t c = 0; c < C; c += 8) tensor__wino_grads8(gw + (o * C + c) * 9, gU + o * C + c, O * C, (int)(C - c < 8 ? C - c : 8));
}

/* One run: out [N, Co, Ho, Wo] = the convolution of in [N, Ci, Hi, Wi] (zero-padded by p) with the
   transformed kernels U [36][Co][Ci], plus bias; or (gy set) the weight-gradient sums
   gU[slot] [36][Co][Ci] += the tiles' (A gy A^T) times their (B^T d B). Blocks of bn images are
   spread over the threads, each chunk with its slot of scratch: the transformed input V
   [36][Ci][T], the GEMMs' results (or gy's transform) M [36][Co][T], the zero-padded input plane
   and (weight gradient) gy's plane, T the block's tiles. A plane's tiles are transformed in groups
   of 4 along a tile row (tQ groups to a row), two groups at a time. */
typedef struct {
    int64_t N, Ci, Hi, Wi, Co, Ho, Wo, p, tH, tW, tQ, bn;
    int64_t ld, ldg;        /* row lengths of the padded planes */
    const float *in, *U, *bias, *gy;
    float *out, *gU;        /* gU: slots * 36 * Co * Ci sums (weight gradient) */
    double *gbn;            /* weight-gradient mode: [N, Co] sums of gy over each plane, or NULL */
    char *scratch;
    size_t slot_bytes;
    int slot;
    int oom;                /* a GEMM had no memory (set from any thread) */
} tensor__wino_job;

/* 4 floats at a in the low half, 4 at b in the high half */
static TENSOR__AVX2_INLINE __m256 tensor__wino_load2(const float *a, const float *b) {
    return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(a)), _mm_loadu_ps(b), 1);
}
/* One row of two groups of 4 tiles (tile k's columns start 4 k floats after a, or after b): d[c]
   holds column c (< n, n 4 or 6) of the 4 tiles of a in its low half, of b in its high half. */
static TENSOR__AVX2_INLINE void tensor__wino_columns(const float *a, const float *b, int n, __m256 *d) {
    __m256 r0 = tensor__wino_load2(a, b), r1 = tensor__wino_load2(a + 4, b + 4);
    __m256 r2 = tensor__wino_load2(a + 8, b + 8), r3 = tensor__wino_load2(a + 12, b + 12);
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1), t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    d[0] = _mm256_shuffle_ps(t0, t2, 0x44), d[1] = _mm256_shuffle_ps(t0, t2, 0xEE);
    d[2] = _mm256_shuffle_ps(t1, t3, 0x44), d[3] = _mm256_shuffle_ps(t1, t3, 0xEE);
    if (n > 4) {
        __m256 r4 = tensor__wino_load2(a + 16, b + 16), u0 = _mm256_unpacklo_ps(r1, r2), u1 = _mm256_unpacklo_ps(r3, r4);
        d[4] = _mm256_shuffle_ps(u0, u1, 0x44), d[5] = _mm256_shuffle_ps(u0, u1, 0xEE);
    }
}
/* v's halves to p + ta and p + tb (one store when they are adjacent; a before b, so b wins where a
   group past its row's end spills over the next) */
static TENSOR__AVX2_INLINE void tensor__wino_put2(float *p, int64_t ta, int64_t tb, __m256 v) {
    if (tb == ta + 4) { _mm256_storeu_ps(p + ta, v); return; }
    _mm_storeu_ps(p + ta, _mm256_castps256_ps128(v));
    _mm_storeu_ps(p + tb, _mm256_extractf128_ps(v, 1));
}
static TENSOR__AVX2_INLINE __m256 tensor__wino_get2(const float *p, int64_t ta, int64_t tb) {
    return tb == ta + 4 ? _mm256_loadu_ps(p + ta) : tensor__wino_load2(p + ta, p + tb);
}
/* o = B^T d: 4 d0 - 5 d2 + d4, -4 d1 - 4 d2 + d3 + d4, 4 d1 - 4 d2 - d3 + d4, -2 d1 - d2 + 2 d3 + d4,
   2 d1 - d2 - 2 d3 + d4, 4 d1 - 5 d3 + d5 */
static TENSOR__AVX2_INLINE void tensor__wino_bt(const __m256 *d, __m256 *o) {
    __m256 four = _mm256_set1_ps(4.0f);
    __m256 t0 = _mm256_fnmadd_ps(four, d[2], d[4]), t1 = _mm256_fnmadd_ps(four, d[1], d[3]);
    __m256 t2 = _mm256_sub_ps(d[4], d[2]), t3 = _mm256_sub_ps(d[3], d[1]);
    t3 = _mm256_add_ps(t3, t3);
    o[0] = _mm256_fmadd_ps(four, _mm256_sub_ps(d[0], d[2]), t2);
    o[1] = _mm256_add_ps(t0, t1), o[2] = _mm256_sub_ps(t0, t1);
    o[3] = _mm256_add_ps(t2, t3), o[4] = _mm256_sub_ps(t2, t3);
    o[5] = _mm256_fmadd_ps(four, _mm256_sub_ps(d[1], d[3]), _mm256_sub_ps(d[5], d[3]));
}
/* y = A^T m: m0 + m1 + m2 + m3 + m4, m1 - m2 + 2 (m3 - m4), m1 + m2 + 4 (m3 + m4), m1 - m2 + 8 (m3 - m4) + m5 */
static TENSOR__AVX2_INLINE void tensor__wino_at(const __m256 *m, __m256 *y) {
    __m256 a = _mm256_add_ps(m[1], m[2]), b = _mm256_sub_ps(m[1], m[2]), c = _mm256_add_ps(m[3], m[4]), d = _mm256_sub_ps(m[3], m[4]);
    y[0] = _mm256_add_ps(_mm256_add_ps(m[0], a), c);
    y[1] = _mm256_fmadd_ps(_mm256_set1_ps(2.0f), d, b);
    y[2] = _mm256_fmadd_ps(_mm256_set1_ps(4.0f), c, a);
    y[3] = _mm256_add_ps(_mm256_fmadd_ps(_mm256_set1_ps(8.0f), d, b), m[5]);
}
/* z = A g: g0, g0 + g1 + g2 + g3, g0 - g1 + g2 - g3, g0 + 2 g1 + 4 g2 + 8 g3, g0 - 2 g1 + 4 g2 - 8 g3, g3 */
static TENSOR__AVX2_INLINE void tensor__wino_a(const __m256 *g, __m256 *z) {
    __m256 four = _mm256_set1_ps(4.0f);
    __m256 e = _mm256_add_ps(g[0], g[2]), f = _mm256_add_ps(g[1], g[3]), e2 = _mm256_fmadd_ps(four, g[2], g[0]), f2 = _mm256_fmadd_ps(four, g[3], g[1]);
    f2 = _mm256_add_ps(f2, f2);
    z[0] = g[0], z[1] = _mm256_add_ps(e, f), z[2] = _mm256_sub_ps(e, f);
    z[3] = _mm256_add_ps(e2, f2), z[4] = _mm256_sub_ps(e2, f2), z[5] = g[3];
}

/* T p T^T of two groups of 4 tiles, t the 1-D transform T (n values to 6): their n x n pieces p
   from a and b (a padded plane's rows, ld apart), into V[xi * vs + ta + k] and V[xi * vs + tb + k]
   for the groups' tiles k < 4. A group past its tile row's end fills tiles of later rows or of the
   row padding: stored first. */
static TENSOR__AVX2_INLINE void tensor__wino_pair(float *V, int64_t vs, int64_t ta, int64_t tb, const float *a, const float *b, int64_t ld, int n,
                                                  void (*t)(const __m256 *, __m256 *)) {
    __m256 w[6][6], d[6], o[6];
    TENSOR__UNROLL for (int r = 0; r < n; r++) {
        tensor__wino_columns(a + r * ld, b + r * ld, n, d);
        t(d, w[r]);
    }
    TENSOR__UNROLL for (int k = 0; k < 6; k++) {
        TENSOR__UNROLL for (int r = 0; r < n; r++) d[r] = w[r][k];
        t(d, o);
        TENSOR__UNROLL for (int i = 0; i < 6; i++) tensor__wino_put2(V + (i * 6 + k) * vs, ta, tb, o[i]);
    }
}
/* B^T d B of the input's 6x6 patches */
static TENSOR__AVX2_FN void tensor__wino_input_pair(float *V, int64_t vs, int64_t ta, int64_t tb, const float *a, const float *b, int64_t ld) {
    tensor__wino_pair(V, vs, ta, tb, a, b, ld, 6, tensor__wino_bt);
}
/* A gy A^T of the output gradient's 4x4 pieces */
static TENSOR__AVX2_FN void tensor__wino_grad_pair(float *M, int64_t ms, int64_t ta, int64_t tb, const float *a, const float *b, int64_t ld) {
    tensor__wino_pair(M, ms, ta, tb, a, b, ld, 4, tensor__wino_a);
}

/* The first n (<= 8) lanes of v to y. */
static TENSOR__AVX2_INLINE void tensor__wino_store(float *y, __m256 v, int64_t n) {
    if (n >= 8) { _mm256_storeu_ps(y, v); return; }
    __m128 h = _mm256_castps256_ps128(v);
    if (n >= 4) { _mm_storeu_ps(y, h); y += 4; n -= 4; h = _mm256_extractf128_ps(v, 1); }
    if (n >= 2) { _mm_storel_pi((__m64 *)(void *)y, h); y += 2; n -= 2; h = _mm_movehl_ps(h, h); }
    if (n >= 1) _mm_store_ss(y, h);
}

/* A^T M A (+ bias) of two groups of 4 tiles: M[xi * ms + ta + k] and M[xi * ms + tb + k], into the
   output rows from ya and yb (Wo apart; ra and rb of them, <= 4) and their first ca and cb (<= 16)
   columns. No store past a row's end: the next row may be another thread's. */
static TENSOR__AVX2_FN void tensor__wino_output_pair(float *ya, float *yb, int64_t Wo, int64_t ra, int64_t rb, int64_t ca, int64_t cb, const float *M,
                                                    int64_t ms, int64_t ta, int64_t tb, float bias) {
    __m256 s[4][6], m[6], y[4], bv = _mm256_set1_ps(bias);
    TENSOR__UNROLL for (int k = 0; k < 6; k++) {
        TENSOR__UNROLL for (int i = 0; i < 6; i++) m[i] = tensor__wino_get2(M + (i * 6 + k) * ms, ta, tb);
        tensor__wino_at(m, y);
        TENSOR__UNROLL for (int r = 0; r < 4; r++) s[r][k] = y[r];
    }
    TENSOR__UNROLL for (int r = 0; r < 4; r++) {
        tensor__wino_at(s[r], y);
        TENSOR__UNROLL for (int c = 0; c < 4; c++) y[c] = _mm256_add_ps(y[c], bv);
        /* lanes from (tile, column) to (column, tile): each half then holds its group's 16 pixels */
        __m256 t0 = _mm256_unpacklo_ps(y[0], y[1]), t1 = _mm256_unpackhi_ps(y[0], y[1]), t2 = _mm256_unpacklo_ps(y[2], y[3]), t3 = _mm256_unpackhi_ps(y[2], y[3]);
        __m256 p0 = _mm256_shuffle_ps(t0, t2, 0x44), p1 = _mm256_shuffle_ps(t0, t2, 0xEE), p2 = _mm256_shuffle_ps(t1, t3, 0x44), p3 = _mm256_shuffle_ps(t1, t3, 0xEE);
        if (r < ra) {
            tensor__wino_store(ya + r * Wo, _mm256_permute2f128_ps(p0, p1, 0x20), ca);
            if (ca > 8) tensor__wino_store(ya + r * Wo + 8, _mm256_permute2f128_ps(p2, p3, 0x20), ca - 8);
        }
        if (r < rb) {
            tensor__wino_store(yb + r * Wo, _mm256_permute2f128_ps(p0, p1, 0x31), cb);
            if (cb > 8) tensor__wino_store(yb + r * Wo + 8, _mm256_permute2f128_ps(p2, p3, 0x31), cb - 8);
        }
    }
}

/* The plane src [H, W] into the rows of dst (ld apart), 8 floats at a time: a row's last piece
   is loaded masked and stored whole, so up to 7 zeros land past the row's end. The planes' rows are
   short (14 here), where a memcpy call or a scalar tail costs more than the copy. The zeros fall on
   the padding (which is zero), on a later row's cells (written after), or on the 8 floats of slack
   after the plane. */
/* and asks for the next plane's cache lines, whose transform follows (the planes come from L3 or
   memory; a prefetch past the tensor's end is harmless) */
static TENSOR__AVX2_FN void tensor__wino_copy(float *dst, int64_t ld, const float *src, int64_t H, int64_t W) {
    for (int64_t i = 0; i < H * W; i += 16) _mm_prefetch((const char *)(src + H * W + i), _MM_HINT_T0);
    __m256i tail = tensor__avx2_first(W % 8);
    for (int64_t y = 0; y < H; y++, dst += ld, src += W) {
        int64_t i = 0;
        for (; i + 8 <= W; i += 8) _mm256_storeu_ps(dst + i, _mm256_loadu_ps(src + i));
        if (i < W) _mm256_storeu_ps(dst + i, _mm256_maskload_ps(src + i, tail));
    }
}

/* group g of a plane: tile row g / tQ, its tiles from 4 (g % tQ); the offsets of its first tile in
   the block's tile order and of its patch in a padded plane */
#define TENSOR__WINO_TILE(g) ((g) / tQ * tW + (g) % tQ * 4)
/* The distance of V's (or M's) rows of two points, n floats or a few more: an odd number of cache
   lines, as the transforms touch all 36 rows at once (a multiple of 4 KiB would put them all in
   the same few L1 sets; measured with n itself, 32 channels of 136 tiles: the input and gradient
   transforms 1.5-1.8x slower, the CNN step 12.1-12.3 ms against 11.3-11.5) */
static int64_t tensor__wino_pitch(int64_t n) { return n + (48 - n % 32) % 32; }
#define TENSOR__WINO_AT(g, ld) (4 * ((g) / tQ) * (ld) + 16 * ((g) % tQ))
static void tensor__wino_blocks(int64_t begin, int64_t end, void *ctx) {
    tensor__wino_job *j = (tensor__wino_job *)ctx;
    int64_t Ci = j->Ci, Co = j->Co, tH = j->tH, tW = j->tW, tQ = j->tQ, tiles = tH * tW, groups = tH * tQ, Tmax = j->bn * tiles + 8;
    int64_t Hp = 4 * tH + 2, Hg = 4 * tH;
#if TENSOR__HAVE_THREADS
    int slot = __atomic_fetch_add(&j->slot, 1, __ATOMIC_RELAXED);
#else
    int slot = j->slot++;
#endif
    float *V = (float *)(void *)(j->scratch + (size_t)slot * j->slot_bytes), *M = V + TENSOR__WINO_PTS * (Ci * Tmax + 32);
    float *pl = M + TENSOR__WINO_PTS * (Co * Tmax + 32), *pg = pl + Hp * j->ld + 8; /* 8: the slack of tensor__wino_copy */
    float *gU = j->gU ? j->gU + (size_t)slot * TENSOR__WINO_PTS * Co * Ci : NULL;
    memset(pl, 0, (size_t)(Hp * j->ld) * sizeof(float)); /* the border stays zero: only the interior is written */
    if (j->gy) memset(pg, 0, (size_t)(Hg * j->ldg) * sizeof(float));
    for (int64_t bi = begin; bi < end; bi++) {
        /* each row of V and M padded by 8 tiles: the last group's spill */
        int64_t n0 = bi * j->bn, nb = j->N - n0 < j->bn ? j->N - n0 : j->bn, T = nb * tiles + 8, vs = tensor__wino_pitch(Ci * T), ms = tensor__wino_pitch(Co * T);
        for (int64_t i = 0; i < nb; i++)
            for (int64_t c = 0; c < Ci; c++) {
                tensor__wino_copy(pl + j->p * j->ld + j->p, j->ld, j->in + ((n0 + i) * Ci + c) * j->Hi * j->Wi, j->Hi, j->Wi);
                for (int64_t g = 0; g < groups; g += 2) {
                    int64_t h = g + 1 < groups ? g + 1 : g; /* the partner: the next group, or itself at the end */
                    tensor__wino_input_pair(V + c * T + i * tiles, vs, TENSOR__WINO_TILE(g), TENSOR__WINO_TILE(h), pl + TENSOR__WINO_AT(g, j->ld),
                                            pl + TENSOR__WINO_AT(h, j->ld), j->ld);
                }
            }
        if (!j->gy) {
            for (int xi = 0; xi < TENSOR__WINO_PTS; xi++)
                TENSOR__GEMM_IN_TASK(j->oom, tensor__gemm_strided(TENSOR_F32, TENSOR_F32, Co, T - 8, Ci, j->U + xi * Co * Ci, Ci, 1, V + xi * vs, T, 1, M + xi * ms, T, 1, false));
            for (int64_t i = 0; i < nb; i++)
                for (int64_t o = 0; o < Co; o++) {
                    float *yo = j->out + ((n0 + i) * Co + o) * j->Ho * j->Wo;
                    for (int64_t g = 0; g < groups; g += 2) {
                        int64_t h = g + 1 < groups ? g + 1 : g, ya = 4 * (g / tQ), yb = 4 * (h / tQ), xa = 16 * (g % tQ), xb = 16 * (h % tQ);
                        tensor__wino_output_pair(yo + ya * j->Wo + xa, yo + yb * j->Wo + xb, j->Wo, j->Ho - ya < 4 ? j->Ho - ya : 4, j->Ho - yb < 4 ? j->Ho - yb : 4,
                                                 j->Wo - xa < 16 ? j->Wo - xa : 16, j->Wo - xb < 16 ? j->Wo - xb : 16, M + o * T + i * tiles, ms,
                                                 TENSOR__WINO_TILE(g), TENSOR__WINO_TILE(h), j->bias ? j->bias[o] : 0.0f);
                    }
                }
        } else {
            for (int64_t i = 0; i < nb; i++)
                for (int64_t o = 0; o < Co; o++) {
                    const float *src = j->gy + ((n0 + i) * Co + o) * j->Ho * j->Wo;
                    tensor__wino_copy(pg, j->ldg, src, j->Ho, j->Wo);
                    if (j->gbn) j->gbn[(n0 + i) * Co + o] = tensor__row_sum_f32(src, j->Ho * j->Wo);
                    for (int64_t g = 0; g < groups; g += 2) {
                        int64_t h = g + 1 < groups ? g + 1 : g;
                        tensor__wino_grad_pair(M + o * T + i * tiles, ms, TENSOR__WINO_TILE(g), TENSOR__WINO_TILE(h), pg + TENSOR__WINO_AT(g, j->ldg),
                                               pg + TENSOR__WINO_AT(h, j->ldg), j->ldg);
                    }
                }
            for (int xi = 0; xi < TENSOR__WINO_PTS; xi++)
                TENSOR__GEMM_IN_TASK(j->oom, tensor__gemm_strided(TENSOR_F32, TENSOR_F32, Co, Ci, T - 8, M + xi * ms, T, 1, V + xi * vs, 1, T, gU + xi * Co * Ci, Ci, 1, true));
        }
    }
}
#undef TENSOR__WINO_TILE
#undef TENSOR__WINO_AT
/* Runs a job whose geometry, operands and (gy) mode the caller set: blocks, scratch, slots; in the
   weight-gradient mode j->gU holds the sums afterwards ([36][Co][Ci], the caller frees it with
   tensor__cache_free). Returns 0, or 1 after recording an error. */
static int tensor__wino_run(const char *fn, tensor__wino_job *j) {
    j->tH = (j->Ho + 3) / 4;
    j->tW = (j->Wo + 3) / 4;
    j->tQ = (j->tW + 3) / 4;
    int64_t tiles = j->tH * j->tW;
    j->bn = TENSOR__WINO_TILES / tiles;
    j->bn = j->bn < 1 ? 1 : j->bn > j->N ? j->N : j->bn;
    /* a block count the threads share evenly (64 images: 16 blocks of 4 on 2 threads, not 13 of 5
       where one thread waits for the other's 7th), if a block no smaller than half the size gives one */
    for (int64_t b = j->bn, th = tensor_get_num_threads(); th > 1 && b > 1 && 2 * b >= j->bn; b--)
        if (((j->N + b - 1) / b) % th == 0) { j->bn = b; break; }
    j->ld = 16 * j->tQ + 8; /* a group's patch reads 20 floats from 16 q */
    j->ldg = 16 * j->tQ;
    int64_t T = j->bn * tiles, nblocks = (j->N + j->bn - 1) / j->bn, threads = tensor_get_num_threads();
    int64_t slots = nblocks < threads ? nblocks : threads, sums = TENSOR__WINO_PTS * j->Co * j->Ci;
    size_t floats = (size_t)(TENSOR__WINO_PTS * ((j->Ci + j->Co) * (T + 8) + 64) + (4 * j->tH + 2) * j->ld + 8 + (j->gy ? 4 * j->tH * j->ldg + 8 : 0));
    j->slot_bytes = (floats * sizeof(float) + 63) & ~(size_t)63;
    j->slot = 0;
    j->scratch = (char *)tensor__cache_alloc((size_t)slots * j->slot_bytes);
    j->gU = j->gy ? (float *)tensor__cache_alloc((size_t)(slots * sums) * sizeof(float)) : NULL;
    if (!j->scratch || (j->gy && !j->gU)) {
        tensor__cache_free(j->scratch);
        tensor__cache_free(j->gU);
        j->gU = NULL;
        tensor__fail(fn, "out of memory allocating convolution scratch");
        return 1;
    }
    if (j->gU) memset(j->gU, 0, (size_t)(slots * sums) * sizeof(float));
    TENSOR__PATH_TAKEN(conv_winograd);
    tensor__parallel_for(nblocks, 1, tensor__wino_blocks, j);
    if (TENSOR__TASK_FAILED(j->oom)) {
        tensor__cache_free(j->scratch);
        tensor__cache_free(j->gU);
        j->gU = NULL;
        tensor__fail(fn, "out of memory allocating convolution scratch");
        return 1;
    }
    for (int s = 1; j->gU && s < j->slot && s < slots; s++)
        for (int64_t i = 0; i < sums; i++) j->gU[i] += j->gU[s * sums + i];
    tensor__cache_free(j->scratch);
    return 0;
}

/* out [N, O, oH, oW] of x [N, C, H, W] and w [O, C, 3, 3] (contiguous), bias [O] or NULL. */
static int tensor__wino_forward(const char *fn, const tensor__conv_geom *g, const float *x, const float *w, const float *bias, float *out) {
    float *U = (float *)tensor__cache_alloc((size_t)(TENSOR__WINO_PTS * g->O * g->C) * sizeof(float));
    if (!U) { tensor__fail(fn, "out of memory allocating convolution scratch"); return 1; }
    tensor__wino_weights(U, w, g->O, g->C, false);
    tensor__wino_job j;
    memset(&j, 0, sizeof j);
    j.N = g->N, j.Ci = g->C, j.Hi = g->H, j.Wi = g->W, j.Co = g->O, j.Ho = g->oH, j.Wo = g->oW, j.p = g->ph;
    j.in = x, j.U = U, j.bias = bias, j.out = out;
    int rc = tensor__wino_run(fn, &j);
    tensor__cache_free(U);
    return rc;
}

/* The gradients, each where its pointer is set: gx [N, C, H, W] (needs w), gw [O, C, 3, 3] (needs
   x), gb [O]; gc: the output's gradient [N, O, oH, oW]; all contiguous f32. */
static int tensor__wino_backward(const char *fn, const tensor__conv_geom *g, const float *x, const float *w, const float *gc, float *gx, float *gw, float *gb) {
    int64_t P = g->oH * g->oW;
    if (gx) {
        float *U = (float *)tensor__cache_alloc((size_t)(TENSOR__WINO_PTS * g->O * g->C) * sizeof(float));
        if (!U) { tensor__fail(fn, "out of memory allocating convolution scratch"); return 1; }
        tensor__wino_weights(U, w, g->O, g->C, true);
        tensor__wino_job j;
        memset(&j, 0, sizeof j);
        j.N = g->N, j.Ci = g->O, j.Hi = g->oH, j.Wi = g->oW, j.Co = g->C, j.Ho = g->H, j.Wo = g->W, j.p = 2 - g->ph;
        j.in = gc, j.U = U, j.out = gx;
        int rc = tensor__wino_run(fn, &j);
        tensor__cache_free(U);
        if (rc) return 1;
    }
    if (gw) {
        tensor__wino_job j;
        memset(&j, 0, sizeof j);
        j.N = g->N, j.Ci = g->C, j.Hi = g->H, j.Wi = g->W, j.Co = g->O, j.Ho = g->oH, j.Wo = g->oW, j.p = g->ph;
        j.in = x, j.gy = gc;
        j.gbn = gb ? (double *)tensor__cache_alloc((size_t)(g->N * g->O) * sizeof(double)) : NULL;
        if ((gb && !j.gbn) || tensor__wino_run(fn, &j)) {
            if (gb && !j.gbn) tensor__fail(fn, "out of memory allocating convolution scratch");
            tensor__cache_free(j.gbn);
            return 1;
        }
        tensor__wino_weights_grad(gw, j.gU, g->O, g->C);
        tensor__cache_free(j.gU);
        for (int64_t o = 0; gb && o < g->O; o++) { /* per image in float, over the images in double, as the GEMM path */
            double acc = 0;
            for (int64_t n = 0; n < g->N; n++) acc += j.gbn[n * g->O + o];
            gb[o] = (float)acc;
        }
        tensor__cache_free(j.gbn);
        return 0;
    }
    for (int64_t o = 0; gb && o < g->O; o++) { /* no weight gradient: the sums here */
        double acc = 0;
        for (int64_t n = 0; n < g->N; n++) acc += tensor__row_sum_f32(gc + (n * g->O + o) * P, P);
        gb[o] = (float)acc;
    }
    return 0;
}
#endif

/* The dtype a convolution's operands (x, w and the output's gradient, all of dtype dt) enter
   the GEMM in: bf16 as it is where the bf16 kernel runs (im2col on 2-byte elements, f32 products,
   results rounded once at the end), else the compute dtype (f16, and bf16 without avx512_bf16,
   converted to f32 first). A shape Winograd takes stays converted: a quarter of the multiplies at
   half the rate beat the bf16 kernel there (measured here, 1 thread, forward + backward, bf16
   kernel vs converted: 64 x 32 x 14 x 14 -> 64, 3x3, 5.1-5.6 vs 4.75 ms; 32 x 128 x 14 x 14 ->
   128 19.8 vs 16.7 ms (Winograd both); with stride 2 2.7 vs 3.2 ms, 64 x 64 x 14 x 14 -> 64 1x1
   1.35 vs 2.6 ms (im2col + the f32 GEMM)). */
static tensor_dtype tensor__conv_operand_dtype(tensor_dtype dt, const tensor__conv_geom *g) {
    return dt == TENSOR_BF16 && tensor__gemm_has_bf16() && !tensor__wino_ok(g, TENSOR_F32) ? TENSOR_BF16 : tensor__gemm_dtype(dt);
}

/* The fast path: x and w as contiguous tensors of the operand dtype, then tensor__conv_fwd_blocks
   (or Winograd, which runs in f32 only). */
static int tensor__conv_fast(tensor__call *c, const tensor__conv_geom *g) {
    tensor *x = c->in[0], *w = c->in[1], *bias = c->in[2], *out = c->out;
    tensor_dtype ct = tensor__gemm_dtype(x->dtype), sd = w->dtype == x->dtype ? tensor__conv_operand_dtype(x->dtype, g) : ct;
    size_t cs = tensor__dtype_sizes[ct];
    bool x_ok = x->dtype == sd && tensor__contiguous(x), w_ok = w->dtype == sd && tensor__contiguous(w);
    tensor *xc = x_ok ? NULL : tensor__contiguous_copy(c->fn, x, sd);
    tensor *wc = w_ok ? NULL : tensor__contiguous_copy(c->fn, w, sd);
    tensor *oc = out->dtype == ct ? NULL : tensor__new_like(c->fn, out, ct);
    char *bb = bias ? (char *)tensor__cache_alloc((size_t)g->O * cs) : NULL;
    tensor__conv_job j;
    int rc = (!x_ok && !xc) || (!w_ok && !wc) || (out->dtype != ct && !oc);
    if (!rc && bias && !bb) rc = (tensor__fail(c->fn, "out of memory allocating convolution scratch"), 1);
    bool wino = sd == ct && tensor__wino_ok(g, ct);
    if (wino || rc) memset(&j, 0, sizeof j); /* (no scratch to size when the copies failed) */
    else if (!tensor__conv_job_init(c->fn, &j, g, ct, sd)) rc = 1;
    if (!rc) {
        const char *bsrc = bias ? (const char *)bias->storage->data + bias->offset * (int64_t)tensor__dtype_sizes[bias->dtype] : NULL;
        bool bhalf = bias && (bias->dtype == TENSOR_BF16 || bias->dtype == TENSOR_F16);
        if (bias && ct == TENSOR_F32 && bhalf && (bias->strides[0] == 1 || g->O == 1)) { /* the bias in f32: one SIMD cast */
            tensor__half_to_f32((float *)(void *)bb, (const uint16_t *)(const void *)bsrc, g->O, bias->dtype == TENSOR_BF16);
        } else if (bias) { /* the bias in ct */
            int64_t eb = (int64_t)tensor__dtype_sizes[bias->dtype];
            for (int64_t o = 0; o < g->O; o++) {
                double bv = tensor__load_f64((const char *)bias->storage->data + (bias->offset + o * bias->strides[0]) * eb, bias->dtype);
                if (ct == TENSOR_F32) ((float *)bb)[o] = (float)bv;
                else ((double *)bb)[o] = bv;
            }
        }
        j.bias = bb;
        j.x = tensor__data(xc ? xc : x);
        j.w = tensor__data(wc ? wc : w);
        j.out = tensor__data(oc ? oc : out);
#if TENSOR__NN_AVX2
        if (wino) rc = tensor__wino_forward(c->fn, g, (const float *)j.x, (const float *)j.w, (const float *)bb, (float *)j.out);
        else
#endif
        if (!tensor__conv_blocks(tensor__conv_fwd_blocks, &j)) rc = (tensor__fail(c->fn, "out of memory allocating convolution scratch"), 1);
        if (oc && !rc) tensor__copy_into(out, oc);
    }
    tensor__cache_free(bb);
    tensor__cache_free(j.scratch);
    tensor_free(xc);
    tensor_free(wc);
    tensor_free(oc);
    return rc;
}

static int tensor__conv_kernel(tensor__call *c, int sd) {
    tensor__conv_geom g;
    tensor__conv_geometry(c, sd, &g);
    if (tensor__numel_of(c->out->ndim, c->out->shape) == 0) return 0;
    if (tensor__reference_kernels) { tensor__conv_reference(c, &g); return 0; }
    return tensor__conv_fast(c, &g);
}
/* out: [N, O, oH, oW] or [O, oH, oW] */
static int tensor__cpu_conv2d(tensor__call *c) { return tensor__conv_kernel(c, 2); }
/* out: [N, O, oL] or [O, oL] */
static int tensor__cpu_conv1d(tensor__call *c) { return tensor__conv_kernel(c, 1); }

/* The checks of PyTorch's convolution, for sd spatial dims (1 or 2), then the output shape. */
static tensor *tensor__conv_front(tensor_op op, int sd, tensor *x, tensor *w, tensor *bias, int stride, int padding, int dilation, int groups) {
    const char *fn = tensor__ops[op].fn;
    TENSOR__CHECK_ARG(fn, x);
    TENSOR__CHECK_ARG(fn, w);
    tensor *ins[3] = {x, w, bias};
    if (!tensor__same_device(fn, 3, ins)) return NULL;
    if (x->ndim != sd + 1 && x->ndim != sd + 2)
        return tensor__fail(fn, "expected a %d-D (unbatched) or %d-D (batched) input, got shape %s", sd + 1, sd + 2, tensor__shape_of(x));
    if (w->ndim != sd + 2)
        return tensor__fail(fn, "expected a %d-D weight [out_channels, in_channels/groups%s], got shape %s", sd + 2, sd == 2 ? ", kH, kW" : ", k", tensor__shape_of(w));
    if (!tensor__is_float(x->dtype)) return tensor__fail(fn, "expected a floating input, got %s", tensor__dtype_names[x->dtype]);
    if (w->dtype != x->dtype) return tensor__fail(fn, "input dtype %s and weight dtype %s should be the same", tensor__dtype_names[x->dtype], tensor__dtype_names[w->dtype]);
    if (bias && bias->dtype != x->dtype) return tensor__fail(fn, "input dtype %s and bias dtype %s should be the same", tensor__dtype_names[x->dtype], tensor__dtype_names[bias->dtype]);
    if (stride < 1) return tensor__fail(fn, "stride must be positive, got %d", stride);
    if (padding < 0) return tensor__fail(fn, "padding must be non-negative, got %d", padding);
    if (dilation < 1) return tensor__fail(fn, "dilation must be positive, got %d", dilation);
    if (groups < 1) return tensor__fail(fn, "groups must be positive, got %d", groups);
    int64_t O = w->shape[0], C = x->shape[x->ndim - sd - 1], wc;
    if (O % groups != 0)
        return tensor__fail(fn, "out_channels %lld of weight %s is not divisible by groups %d", (long long)O, tensor__shape_of(w), groups);
    if (!tensor__size_mul(w->shape[1], groups, &wc) || C != wc) /* (a product past 2^60 matches no input) */
        return tensor__fail(fn, "input of shape %s has %lld channels, expected %lld x %d (weight %s, groups %d)", tensor__shape_of(x), (long long)C,
                            (long long)w->shape[1], groups, tensor__shape_of(w), groups);
    if (bias && (bias->ndim != 1 || bias->shape[0] != O))
        return tensor__fail(fn, "bias must be 1-D with %lld elements (out_channels of weight %s), got shape %s", (long long)O, tensor__shape_of(w), tensor__shape_of(bias));
    int64_t shape[TENSOR_MAX_DIMS];
    int nd = 0;
    if (x->ndim == sd + 2) shape[nd++] = x->shape[0];
    shape[nd++] = O;
    for (int i = 0; i < sd; i++) {
        int64_t in = x->shape[x->ndim - sd + i], k = w->shape[2 + i];
        int64_t padded = in + 2 * (int64_t)padding, span = 1 - dilation; /* k = 0 */
        if (k > 0 && (!tensor__size_mul(k - 1, dilation, &span) || ++span > padded)) /* a span past 2^60 exceeds any input */
            return tensor__fail(fn, "padded input size %lld (input %s, padding %d) is smaller than the dilated kernel size (%lld - 1) * %d + 1 (weight %s)",
                                (long long)padded, tensor__shape_of(x), padding, (long long)k, dilation, tensor__shape_of(w));
        shape[nd++] = (padded - span) / stride + 1;
    }
    tensor__call c;
    tensor__call_init(&c, op);
    c.n_in = 3;
    c.in[0] = x;
    c.in[1] = w;
    c.in[2] = bias;
    c.ip[0] = stride;
    c.ip[1] = padding;
    c.ip[2] = dilation;
    c.ip[3] = groups;
    c.out = tensor__new(fn, nd, shape, x->dtype, x->storage->device);
    return c.out ? tensor__dispatch(&c) : NULL;
}
TENSOR_API tensor *tensor_conv2d(tensor *x, tensor *w, tensor *bias, int stride, int padding, int dilation, int groups) {
    return tensor__conv_front(TENSOR_OP_conv2d, 2, x, w, bias, stride, padding, dilation, groups);
}
TENSOR_API tensor *tensor_conv1d(tensor *x, tensor *w, tensor *bias, int stride, int padding, int dilation, int groups) {
    return tensor__conv_front(TENSOR_OP_conv1d, 1, x, w, bias, stride, padding, dilation, groups);
}

/* ---- pooling ---- */

/* One plane of pooling in the compute type T (f32, or f64 for f64). Window (oh, ow) covers input
   rows [oh * s - pad, + k) and columns [ow * s - pad, + k) clipped to the input: max treats the
   padding as -inf, avg as zeros (count_include_pad: the divisor is always k^2, floor mode).
   argmax: the position the max picks: the first maximum in row-major order, or the first NaN
   (NaN propagates); a window of -inf picks its first element, as PyTorch does.
   pool: y [oH, oW] from x [H, W]; pool_bwd: gx [H, W] = the adjoint, from gy [oH, oW]. */
#define TENSOR__DEFINE_POOL(sfx, T)                                                                      \
    static int64_t tensor__pool_argmax_##sfx(const T *x, int64_t W, int64_t h0, int64_t h1, int64_t w0, int64_t w1) { \
        int64_t at = h0 * W + w0;                                                                       \
        T best = (T)-INFINITY;                                                                          \
        for (int64_t ih = h0; ih < h1; ih++)                                                            \
            for (int64_t iw = w0; iw < w1; iw++) {                                                      \
                int64_t i = ih * W + iw;                                                                \
                T v = x[i];                                                                             \
                if (v != v) return i;                                                                   \
                int64_t gt = v > best; /* branch-free: random data makes this branch unpredictable */  \
                best = gt ? v : best;                                                                   \
                at += (i - at) & -gt;                                                                   \
            }                                                                                           \
        return at;                                                                                      \
    }                                                                                                   \
    static void tensor__pool_plane_##sfx(T *y, const T *x, const tensor__pool_geom *p, bool is_max) {   \
        T div = (T)(p->k * p->k);                                                                       \
        for (int64_t oh = 0; oh < p->oH; oh++) {                                                        \
            int64_t h0 = oh * p->s - p->pad, h1 = h0 + p->k < p->H ? h0 + p->k : p->H;                  \
            if (h0 < 0) h0 = 0;                                                                         \
            for (int64_t ow = 0; ow < p->oW; ow++) {                                                    \
                int64_t w0 = ow * p->s - p->pad, w1 = w0 + p->k < p->W ? w0 + p->k : p->W;              \
                if (w0 < 0) w0 = 0;                                                                     \
                if (is_max) { y[oh * p->oW + ow] = x[tensor__pool_argmax_##sfx(x, p->W, h0, h1, w0, w1)]; continue; } \
                T acc = 0;                                                                              \
                for (int64_t ih = h0; ih < h1; ih++)                                                    \
                    for (int64_t iw = w0; iw < w1; iw++) acc += x[ih * p->W + iw];                      \
                y[oh * p->oW + ow] = acc / div;                                                         \
            }                                                                                           \
        }                                                                                               \
    }                                                                                                   \
    static void tensor__pool_plane_bwd_##sfx(T *gx, const T *x, const T *gy, const tensor__pool_geom *p, bool is_max) { \
        T div = (T)(p->k * p->k);                                                                       \
        memset(gx, 0, (size_t)(p->H * p->W) * sizeof(T));                                               \
        for (int64_t oh = 0; oh < p->oH; oh++) {                                                        \
            int64_t h0 = oh * p->s - p->pad, h1 = h0 + p->k < p->H ? h0 + p->k : p->H;                  \
            if (h0 < 0) h0 = 0;                                                                         \
            for (int64_t ow = 0; ow < p->oW; ow++) {                                                    \
                int64_t w0 = ow * p->s - p->pad, w1 = w0 + p->k < p->W ? w0 + p->k : p->W;              \
                if (w0 < 0) w0 = 0;                                                                     \
                T g = gy[oh * p->oW + ow];                                                              \
                if (is_max) { gx[tensor__pool_argmax_##sfx(x, p->W, h0, h1, w0, w1)] += g; continue; }  \
                g = g / div;                                                                            \
                for (int64_t ih = h0; ih < h1; ih++)                                                    \
                    for (int64_t iw = w0; iw < w1; iw++) gx[ih * p->W + iw] += g;                       \
            }                                                                                           \
        }                                                                                               \
    }

typedef struct { int64_t H, W, oH, oW, k, s, pad; } tensor__pool_geom;
TENSOR__DEFINE_POOL(f32, float)
TENSOR__DEFINE_POOL(f64, double)

/* The fast path of max pooling with non-overlapping windows (kernel == stride, no padding: every
   window lies inside the input; floor mode leaves the last H % k rows and W % k columns out), such
   as a CNN's 2x2. It gives what tensor__pool_argmax picks: a running maximum m over the window in
   row-major order takes v when v > m or v is NaN, unless m already is NaN (so the first NaN stays,
   and of equal values the earlier one, which tells -0 from +0). Backward writes each element of gx
   once: gy at the window's pick (as 0 + gy, the reference's sum into zeros), 0 elsewhere. */
#define TENSOR__POOL_TAKES(m, v) (((m) == (m)) & (((v) > (m)) | ((v) != (v)))) /* no branches: random data */
#define TENSOR__DEFINE_POOL_NOV(sfx, T)                                                                  \
    static void tensor__maxpool_nov_##sfx(T *y, const T *x, const tensor__pool_geom *p) {               \
        int64_t k = p->k, W = p->W;                                                                     \
        if (k == 2 && tensor__maxpool2_plane_##sfx(y, x, p)) return;                                    \
        for (int64_t oh = 0; oh < p->oH; oh++) {                                                        \
            const T *r = x + oh * k * W;                                                                \
            T *yr = y + oh * p->oW;                                                                     \
            int64_t ow = 0;                                                                             \
            for (; k == 2 && ow < p->oW; ow++) {                                                        \
                const T *q = r + 2 * ow;                                                                \
                T m = q[0], v = q[1];                                                                   \
                m = TENSOR__POOL_TAKES(m, v) ? v : m;                                                   \
                v = q[W]; m = TENSOR__POOL_TAKES(m, v) ? v : m;                                         \
                v = q[W + 1]; m = TENSOR__POOL_TAKES(m, v) ? v : m;                                     \
                yr[ow] = m;                                                                             \
            }                                                                                           \
            for (; ow < p->oW; ow++) {                                                                  \
                const T *q = r + ow * k;                                                                \
                T m = q[0];                                                                             \
                for (int64_t i = 0; i < k; i++)                                                         \
                    for (int64_t j = 0; j < k; j++) {                                                   \
                        T v = q[i * W + j];                                                             \
                        m = TENSOR__POOL_TAKES(m, v) ? v : m;                                           \
                    }                                                                                   \
                yr[ow] = m;                                                                             \
            }                                                                                           \
        }                                                                                               \
    }                                                                                                   \
    static void tensor__maxpool_nov_bwd_##sfx(T *gx, const T *x, const T *gy, const tensor__pool_geom *p) { \
        int64_t k = p->k, W = p->W, cw = p->oW * k;                                                     \
        if (k == 2 && tensor__maxpool2_bwd_plane_##sfx(gx, x, gy, p)) return;                          \
        for (int64_t oh = 0; oh < p->oH; oh++) {                                                        \
            const T *r = x + oh * k * W, *gr = gy + oh * p->oW;                                         \
            T *o = gx + oh * k * W;                                                                     \
            int64_t ow = 0;                                                                             \
            for (; k == 2 && ow < p->oW; ow++) {                                                        \
                const T *q = r + 2 * ow;                                                                \
                T m = q[0], v = q[1], g = (T)0 + gr[ow];                                                \
                int at = 0, t = TENSOR__POOL_TAKES(m, v);                                               \
                m = t ? v : m; at = t ? 1 : at;                                                         \
                v = q[W]; t = TENSOR__POOL_TAKES(m, v); m = t ? v : m; at = t ? 2 : at;                 \
                v = q[W + 1]; t = TENSOR__POOL_TAKES(m, v); at = t ? 3 : at;                            \
                T *d = o + 2 * ow;                                                                      \
                d[0] = at == 0 ? g : 0;                                                                 \
                d[1] = at == 1 ? g : 0;                                                                 \
                d[W] = at == 2 ? g : 0;                                                                 \
                d[W + 1] = at == 3 ? g : 0;                                                             \
            }                                                                                           \
            for (; ow < p->oW; ow++) {                                                                  \
                const T *q = r + ow * k;                                                                \
                T *d = o + ow * k;                                                                      \
                T m = q[0];                                                                             \
                int64_t at = 0;                                                                         \
                for (int64_t i = 0; i < k; i++)                                                         \
                    for (int64_t j = 0; j < k; j++) {                                                   \
                        T v = q[i * W + j];                                                             \
                        bool t = TENSOR__POOL_TAKES(m, v);                                              \
                        m = t ? v : m;                                                                  \
                        at = t ? i * W + j : at;                                                        \
                        d[i * W + j] = 0;                                                               \
                    }                                                                                   \
                d[at] = (T)0 + gr[ow];                                                                  \
            }                                                                                           \
            for (int64_t i = 0; i < k && cw < W; i++) memset(o + i * W + cw, 0, (size_t)(W - cw) * sizeof(T)); \
        }                                                                                               \
        if (p->oH * k < p->H) memset(gx + p->oH * k * W, 0, (size_t)((p->H - p->oH * k) * W) * sizeof(T)); \
    }

/* 2x2 windows of f32 planes, eight at a time along a row (AVX2). The columns of the
   windows are split into even and odd ones (a, b of r0; c, d of r1), then the running maximum
   goes a, b, c, d as above. A row of at least 8 windows ends with a block that overlaps the one
   before it (no masks; the overlap is computed twice, the same). A shorter row is one block whose
   loads and stores run past the row, over data the plane's later rows overwrite; masked stores are
   slow on some CPUs, so only where the block would run past the plane (xa: elements from r1 to the
   end of the plane, ya: from y / gy) do the loads take a mask and the stores go through a buffer. */
#if TENSOR__NN_AVX2
static TENSOR__AVX2_INLINE __m256 tensor__pool_even(__m256 lo, __m256 hi) { /* lo[0, 2, 4, 6], hi[0, 2, 4, 6] */
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi, 0x88)), 0xD8));
}
static TENSOR__AVX2_INLINE __m256 tensor__pool_odd(__m256 lo, __m256 hi) {
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi, 0xDD)), 0xD8));
}
/* lanes where the running maximum m takes v: v > m or v NaN (NLE_UQ), and m is not NaN */
static TENSOR__AVX2_INLINE __m256 tensor__pool_takes(__m256 m, __m256 v) {
    return _mm256_and_ps(_mm256_cmp_ps(v, m, _CMP_NLE_UQ), _mm256_cmp_ps(m, m, _CMP_ORD_Q));
}
static TENSOR__AVX2_INLINE void tensor__pool_corners(const float *r0, const float *r1, int64_t n, __m256 *a, __m256 *b, __m256 *c, __m256 *d) {
    __m256 l0, h0, l1, h1;
    if (n >= 16) { /* 16 columns of each row readable */
        l0 = _mm256_loadu_ps(r0); h0 = _mm256_loadu_ps(r0 + 8);
        l1 = _mm256_loadu_ps(r1); h1 = _mm256_loadu_ps(r1 + 8);
    } else { /* the first n only */
        __m256i ml = tensor__avx2_first(n), mh = tensor__avx2_first(n - 8);
        l0 = _mm256_maskload_ps(r0, ml); h0 = _mm256_maskload_ps(r0 + 8, mh);
        l1 = _mm256_maskload_ps(r1, ml); h1 = _mm256_maskload_ps(r1 + 8, mh);
    }
    *a = tensor__pool_even(l0, h0); *b = tensor__pool_odd(l0, h0);
    *c = tensor__pool_even(l1, h1); *d = tensor__pool_odd(l1, h1);
}
static TENSOR__AVX2_INLINE __m256 tensor__pool_max4(__m256 m, __m256 b, __m256 c, __m256 d) {
    m = _mm256_blendv_ps(m, b, tensor__pool_takes(m, b));
    m = _mm256_blendv_ps(m, c, tensor__pool_takes(m, c));
    return _mm256_blendv_ps(m, d, tensor__pool_takes(m, d));
}
/* y [oH, oW] from x [H, W] */
static TENSOR__AVX2_FN void tensor__maxpool2_plane_avx2(float *y, const float *x, const tensor__pool_geom *p) {
    const int64_t H = p->H, W = p->W, oH = p->oH, oW = p->oW;
    __m256 m, b, c, d;
    for (int64_t oh = 0; oh < oH; oh++) {
        const float *r0 = x + 2 * oh * W, *r1 = r0 + W;
        float *yr = y + oh * oW;
        if (oW >= 8) {
            for (int64_t o0 = 0; o0 < oW; o0 += 8) {
                int64_t ow = o0 + 8 > oW ? oW - 8 : o0;
                tensor__pool_corners(r0 + 2 * ow, r1 + 2 * ow, 16, &m, &b, &c, &d);
                _mm256_storeu_ps(yr + ow, tensor__pool_max4(m, b, c, d));
            }
            continue;
        }
        int64_t xa = (H - 2 * oh - 1) * W, ya = (oH - oh) * oW; /* elements from r1, yr to the plane's end */
        tensor__pool_corners(r0, r1, xa >= 16 ? 16 : 2 * oW, &m, &b, &c, &d);
        m = tensor__pool_max4(m, b, c, d);
        if (ya >= 8) {
            _mm256_storeu_ps(yr, m);
        } else {
            float t[8];
            _mm256_storeu_ps(t, m);
            for (int64_t i = 0; i < oW; i++) yr[i] = t[i];
        }
    }
    _mm256_zeroupper(); /* gcc leaves it out in some builds (-O1 with ASan); the tests check */
}
/* gx of one 2x2 block: the last take wins (d, else c, else b, else a), as 0 + g; the two rows'
   16 columns each, interleaved back. */
static TENSOR__AVX2_INLINE void tensor__pool_bwd_block(const float *r0, const float *r1, int64_t n, __m256 g, __m256 *o) {
    __m256 m, b, c, d;
    tensor__pool_corners(r0, r1, n, &m, &b, &c, &d);
    __m256 tb = tensor__pool_takes(m, b);
    m = _mm256_blendv_ps(m, b, tb);
    __m256 tc = tensor__pool_takes(m, c);
    m = _mm256_blendv_ps(m, c, tc);
    __m256 td = tensor__pool_takes(m, d);
    g = _mm256_add_ps(_mm256_setzero_ps(), g);
    __m256 later = _mm256_or_ps(tc, td);
    __m256 ga = _mm256_andnot_ps(_mm256_or_ps(tb, later), g), gb = _mm256_andnot_ps(later, _mm256_and_ps(tb, g));
    __m256 gc = _mm256_andnot_ps(td, _mm256_and_ps(tc, g)), gd = _mm256_and_ps(td, g);
    /* [a0 b0 a1 b1 | a4 b4 a5 b5] and [a2 b2 a3 b3 | a6 b6 a7 b7], then their halves */
    __m256 lo0 = _mm256_unpacklo_ps(ga, gb), hi0 = _mm256_unpackhi_ps(ga, gb), lo1 = _mm256_unpacklo_ps(gc, gd), hi1 = _mm256_unpackhi_ps(gc, gd);
    o[0] = _mm256_permute2f128_ps(lo0, hi0, 0x20); o[1] = _mm256_permute2f128_ps(lo0, hi0, 0x31);
    o[2] = _mm256_permute2f128_ps(lo1, hi1, 0x20); o[3] = _mm256_permute2f128_ps(lo1, hi1, 0x31);
}
/* gx [H, W] from x [H, W] and gy [oH, oW], every element written (the column and row that no
   window covers when W or H is odd get 0, after the blocks that spill over them) */
static TENSOR__AVX2_FN void tensor__maxpool2_bwd_plane_avx2(float *gx, const float *x, const float *gy, const tensor__pool_geom *p) {
    const int64_t H = p->H, W = p->W, oH = p->oH, oW = p->oW;
    __m256 o[4];
    for (int64_t oh = 0; oh < oH; oh++) {
        const float *r0 = x + 2 * oh * W, *r1 = r0 + W, *gr = gy + oh * oW;
        float *g0 = gx + 2 * oh * W, *g1 = g0 + W;
        if (oW >= 8) {
            for (int64_t o0 = 0; o0 < oW; o0 += 8) {
                int64_t ow = o0 + 8 > oW ? oW - 8 : o0;
                tensor__pool_bwd_block(r0 + 2 * ow, r1 + 2 * ow, 16, _mm256_loadu_ps(gr + ow), o);
                _mm256_storeu_ps(g0 + 2 * ow, o[0]); _mm256_storeu_ps(g0 + 2 * ow + 8, o[1]);
                _mm256_storeu_ps(g1 + 2 * ow, o[2]); _mm256_storeu_ps(g1 + 2 * ow + 8, o[3]);
            }
        } else {
            int64_t xa = (H - 2 * oh - 1) * W, ya = (oH - oh) * oW;
            __m256 g = ya >= 8 ? _mm256_loadu_ps(gr) : _mm256_maskload_ps(gr, tensor__avx2_first(oW));
            tensor__pool_bwd_block(r0, r1, xa >= 16 ? 16 : 2 * oW, g, o);
            if (xa >= 16) { /* g0's spill lands in g1, stored after it; g1's in the next rows */
                _mm256_storeu_ps(g0, o[0]); _mm256_storeu_ps(g0 + 8, o[1]);
                _mm256_storeu_ps(g1, o[2]); _mm256_storeu_ps(g1 + 8, o[3]);
            } else {
                float t[32];
                for (int i = 0; i < 4; i++) _mm256_storeu_ps(t + 8 * i, o[i]);
                for (int64_t i = 0; i < 2 * oW; i++) { g0[i] = t[i]; g1[i] = t[16 + i]; }
            }
        }
        if (W & 1) g0[W - 1] = g1[W - 1] = 0;
    }
    _mm256_zeroupper();
    if (H & 1) memset(gx + (H - 1) * W, 0, (size_t)W * sizeof(float));
}
#endif
/* The 2x2 plane kernels where the CPU has AVX2 (f32); false: the scalar loops do the plane. */
static bool tensor__maxpool2_plane_f32(float *y, const float *x, const tensor__pool_geom *p) {
#if TENSOR__NN_AVX2
    if (tensor__nn_isa() >= 2) { TENSOR__PATH_TAKEN(maxpool_fast); tensor__maxpool2_plane_avx2(y, x, p); return true; }
#endif
    (void)y; (void)x; (void)p;
    return false;
}
static bool tensor__maxpool2_bwd_plane_f32(float *gx, const float *x, const float *gy, const tensor__pool_geom *p) {
#if TENSOR__NN_AVX2
    if (tensor__nn_isa() >= 2) { TENSOR__PATH_TAKEN(maxpool_fast); tensor__maxpool2_bwd_plane_avx2(gx, x, gy, p); return true; }
#endif
    (void)gx; (void)x; (void)gy; (void)p;
    return false;
}
static bool tensor__maxpool2_plane_f64(double *y, const double *x, const tensor__pool_geom *p) { (void)y; (void)x; (void)p; return false; }
static bool tensor__maxpool2_bwd_plane_f64(double *gx, const double *x, const double *gy, const tensor__pool_geom *p) {
    (void)gx; (void)x; (void)gy; (void)p;
    return false;
}
TENSOR__DEFINE_POOL_NOV(f32, float)
TENSOR__DEFINE_POOL_NOV(f64, double)

/* The planes of a pooling's operand t ([N, C, h, w] or [C, h, w]) in the compute dtype ct: plane
   i of a contiguous t of dtype ct is used in place, else it is packed into buf. */
static bool tensor__pool_direct(const tensor *t, tensor_dtype ct) { return t->dtype == ct && tensor__contiguous(t); }
static const char *tensor__pool_plane_of(const tensor *t, int64_t i, int64_t C, tensor_dtype ct, void *buf) {
    int nd = t->ndim;
    int64_t h = t->shape[nd - 2], w = t->shape[nd - 1];
    size_t cs = tensor__dtype_sizes[ct];
    if (tensor__pool_direct(t, ct)) return tensor__data(t) + (size_t)(i * h * w) * cs;
    int64_t n = i / C, ch = i % C;
    int64_t off = t->offset + (nd == 4 ? n * t->strides[0] : 0) + ch * t->strides[nd - 3];
    tensor__pack(buf, ct, (const char *)t->storage->data + off * (int64_t)tensor__dtype_sizes[t->dtype], t->dtype, h, w, t->strides[nd - 2], t->strides[nd - 1]);
    return (const char *)buf;
}

/* A range of planes of a pooling, forward (out from x) or backward (out = gx from x and gy), in
   f32 (f64 for f64): operands are read in place when contiguous of that dtype, else packed into
   this range's own buffers; the result (a new contiguous tensor) is written in place when of that
   dtype, else converted. fast: the non-overlapping max pooling kernels above, else the per-window
   loops of TENSOR__DEFINE_POOL (the reference). */
typedef struct {
    const tensor *x, *gy;
    tensor *out;
    const tensor__pool_geom *p;
    int64_t C;
    tensor_dtype ct;
    bool is_max, backward, fast;
    int failed;
} tensor__pool_job;

static void tensor__pool_planes(int64_t begin, int64_t end, void *ctx) {
    tensor__pool_job *j = (tensor__pool_job *)ctx;
    const tensor__pool_geom *p = j->p;
    tensor_dtype ct = j->ct;
    size_t cs = tensor__dtype_sizes[ct], eo = tensor__dtype_sizes[j->out->dtype];
    bool f32 = ct == TENSOR_F32, need_x = !j->backward || j->is_max, out_direct = j->out->dtype == ct;
    int64_t in_n = p->H * p->W, pooled_n = p->oH * p->oW, out_n = j->backward ? in_n : pooled_n;
    void *xb = need_x && !tensor__pool_direct(j->x, ct) ? tensor__alloc_aligned((size_t)in_n * cs) : NULL;
    void *gb = j->backward && !tensor__pool_direct(j->gy, ct) ? tensor__alloc_aligned((size_t)pooled_n * cs) : NULL;
    void *ob = out_direct ? NULL : tensor__alloc_aligned((size_t)out_n * cs);
    if ((need_x && !xb && !tensor__pool_direct(j->x, ct)) || (j->backward && !gb && !tensor__pool_direct(j->gy, ct)) || (!out_direct && !ob)) {
        TENSOR__ATOMIC_SET(&j->failed, 1);
    } else {
        for (int64_t i = begin; i < end; i++) {
            const char *xp = need_x ? tensor__pool_plane_of(j->x, i, j->C, ct, xb) : NULL;
            const char *gp = j->backward ? tensor__pool_plane_of(j->gy, i, j->C, ct, gb) : NULL;
            char *op = out_direct ? tensor__data(j->out) + (size_t)(i * out_n) * cs : (char *)ob;
            if (j->fast && j->backward) {
                if (f32) tensor__maxpool_nov_bwd_f32((float *)op, (const float *)xp, (const float *)gp, p);
                else tensor__maxpool_nov_bwd_f64((double *)op, (const double *)xp, (const double *)gp, p);
            } else if (j->fast) {
                if (f32) tensor__maxpool_nov_f32((float *)op, (const float *)xp, p);
                else tensor__maxpool_nov_f64((double *)op, (const double *)xp, p);
            } else if (j->backward) {
                if (f32) tensor__pool_plane_bwd_f32((float *)op, (const float *)xp, (const float *)gp, p, j->is_max);
                else tensor__pool_plane_bwd_f64((double *)op, (const double *)xp, (const double *)gp, p, j->is_max);
            } else {
                if (f32) tensor__pool_plane_f32((float *)op, (const float *)xp, p, j->is_max);
                else tensor__pool_plane_f64((double *)op, (const double *)xp, p, j->is_max);
            }
            if (!out_direct) tensor__unpack(tensor__data(j->out) + (size_t)(i * out_n) * eo, j->out->dtype, ob, ct, out_n);
        }
    }
    tensor__free_aligned(xb);
    tensor__free_aligned(gb);
    tensor__free_aligned(ob);
}

/* Forward (out from x) or backward (gx from x and gy) of max/avg pooling, plane by plane: the
   planes split over the threads, with the non-overlapping max pooling kernels where they apply;
   under tensor_set_reference_kernels, the per-window loops on the calling thread. */
static int tensor__pool_run(const char *fn, bool is_max, bool backward, const tensor *x, const tensor *gy, tensor *out, const int64_t *ip) {
    int xd = x->ndim;
    const tensor *pooled = backward ? gy : out; /* the [.., oH, oW] operand */
    tensor__pool_geom p;
    p.H = x->shape[xd - 2]; p.W = x->shape[xd - 1];
    p.oH = pooled->shape[xd - 2]; p.oW = pooled->shape[xd - 1];
    p.k = ip[0]; p.s = ip[1]; p.pad = ip[2];
    int64_t C = x->shape[xd - 3], planes = (xd == 4 ? x->shape[0] : 1) * C;
    if (planes == 0 || p.H * p.W == 0 || p.oH * p.oW == 0) return 0;
    tensor__pool_job j;
    memset(&j, 0, sizeof j);
    j.x = x;
    j.gy = gy;
    j.out = out;
    j.p = &p;
    j.C = C;
    j.ct = tensor__gemm_dtype(x->dtype);
    j.is_max = is_max;
    j.backward = backward;
    j.fast = !tensor__reference_kernels && is_max && p.k == p.s && p.pad == 0;
    if (tensor__reference_kernels) tensor__pool_planes(0, planes, &j);
    else tensor__parallel_for(planes, 16384 / (p.H * p.W) + 1, tensor__pool_planes, &j);
    if (j.failed) { tensor__fail(fn, "out of memory allocating pooling scratch"); return 1; }
    return 0;
}

/* out: [N, C, oH, oW] or [C, oH, oW]; ip = {kernel, stride, padding}. */
static int tensor__pool_kernel(tensor__call *c, bool is_max) {
    return tensor__pool_run(c->fn, is_max, false, c->in[0], NULL, c->out, c->ip);
}
static int tensor__cpu_max_pool2d(tensor__call *c) { return tensor__pool_kernel(c, true); }
static int tensor__cpu_avg_pool2d(tensor__call *c) { return tensor__pool_kernel(c, false); }

static tensor *tensor__pool_front(tensor_op op, tensor *x, int kernel, int stride, int padding) {
    const char *fn = tensor__ops[op].fn;
    TENSOR__CHECK_ARG(fn, x);
    if (x->ndim != 3 && x->ndim != 4) return tensor__fail(fn, "expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got shape %s", tensor__shape_of(x));
    for (int d = x->ndim - 3; d < x->ndim; d++)
        if (x->shape[d] == 0) return tensor__fail(fn, "input of shape %s has a zero-size non-batch dim", tensor__shape_of(x));
    if (!tensor__is_float(x->dtype)) return tensor__fail(fn, "expected a floating input, got %s", tensor__dtype_names[x->dtype]);
    if (kernel < 1) return tensor__fail(fn, "kernel size must be positive, got %d", kernel);
    if (stride < 0) return tensor__fail(fn, "stride must be positive (or 0 for the kernel size), got %d", stride);
    if (stride == 0) stride = kernel;
    if (padding < 0) return tensor__fail(fn, "padding must be non-negative, got %d", padding);
    if (padding > kernel / 2) return tensor__fail(fn, "padding %d must be at most half the kernel size %d", padding, kernel);
    int64_t shape[4];
    for (int d = 0; d < x->ndim; d++) shape[d] = x->shape[d];
    for (int d = x->ndim - 2; d < x->ndim; d++) {
        int64_t padded = x->shape[d] + 2 * (int64_t)padding;
        if (padded < kernel)
            return tensor__fail(fn, "output size is too small: input %s with padding %d is smaller than the kernel size %d", tensor__shape_of(x), padding, kernel);
        shape[d] = (padded - kernel) / stride + 1;
    }
    tensor__call c;
    tensor__call_init(&c, op);
    c.n_in = 1;
    c.in[0] = x;
    c.ip[0] = kernel;
    c.ip[1] = stride;
    c.ip[2] = padding;
    c.out = tensor__new(fn, x->ndim, shape, x->dtype, x->storage->device);
    return c.out ? tensor__dispatch(&c) : NULL;
}
TENSOR_API tensor *tensor_max_pool2d(tensor *x, int kernel, int stride, int padding) { return tensor__pool_front(TENSOR_OP_max_pool2d, x, kernel, stride, padding); }
TENSOR_API tensor *tensor_avg_pool2d(tensor *x, int kernel, int stride, int padding) { return tensor__pool_front(TENSOR_OP_avg_pool2d, x, kernel, stride, padding); }

/* ---- embedding ---- */

/* out: [*indices.shape, D] = weight[indices[...], :]; an index outside [0, V) is an error. */
static int tensor__cpu_embedding(tensor__call *c) {
    tensor *w = c->in[0], *ix = c->in[1], *out = c->out;
    int64_t V = w->shape[0], D = w->shape[1];
    size_t esz = tensor__dtype_sizes[w->dtype];
    int64_t count = tensor__numel_of(ix->ndim, ix->shape), idx[TENSOR_MAX_DIMS] = {0};
    const char *wb = (const char *)w->storage->data, *ib = (const char *)ix->storage->data;
    char *o = tensor__data(out);
    for (int64_t q = 0; q < count; q++, tensor__next_index(ix->ndim, ix->shape, idx)) {
        int64_t v = tensor__load_i64(ib + tensor__offset_of(ix, idx) * (int64_t)tensor__dtype_sizes[ix->dtype], ix->dtype);
        if (v < 0 || v >= V) {
            tensor__fail(c->fn, "index %lld is out of range for %lld embeddings (weight shape %s)", (long long)v, (long long)V, tensor__shape_of(w));
            return 1;
        }
        const char *src = wb + (size_t)(w->offset + v * w->strides[0]) * esz;
        char *dst = o + (size_t)(q * D) * esz;
        if (w->strides[1] == 1 || D <= 1) memcpy(dst, src, (size_t)D * esz);
        else for (int64_t d = 0; d < D; d++) memcpy(dst + (size_t)d * esz, src + (size_t)(d * w->strides[1]) * esz, esz);
    }
    return 0;
}

TENSOR_API tensor *tensor_embedding(tensor *weight, tensor *indices) {
    const char *fn = "tensor_embedding";
    TENSOR__CHECK_ARG(fn, weight);
    TENSOR__CHECK_ARG(fn, indices);
    tensor *ins[2] = {weight, indices};
    if (!tensor__same_device(fn, 2, ins)) return NULL;
    if (weight->ndim != 2) return tensor__fail(fn, "weight must be 2-D [num_embeddings, embedding_dim], got shape %s", tensor__shape_of(weight));
    if (indices->dtype != TENSOR_I64 && indices->dtype != TENSOR_I32)
        return tensor__fail(fn, "indices must be an int64 or int32 tensor, got %s", tensor__dtype_names[indices->dtype]);
    if (indices->ndim + 1 > TENSOR_MAX_DIMS) return tensor__fail(fn, "indices of shape %s have too many dims for the output", tensor__shape_of(indices));
    int64_t shape[TENSOR_MAX_DIMS];
    for (int d = 0; d < indices->ndim; d++) shape[d] = indices->shape[d];
    shape[indices->ndim] = weight->shape[1];
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_embedding);
    c.n_in = 2;
    c.in[0] = weight;
    c.in[1] = indices;
    c.out = tensor__new(fn, indices->ndim + 1, shape, weight->dtype, weight->storage->device);
    return c.out ? tensor__dispatch(&c) : NULL;
}

/* ---- dropout ---- */

/* out: same shape as x = x * mask, mask (out2, kept for the derivative) 0 or 1 / (1 - p), drawn
   from the library RNG in row-major order (one 32-bit draw per element, kept with probability
   1 - p). Not training or p == 0: a copy; p == 1: x * 0 (NaN stays NaN, as in PyTorch). */
static int tensor__cpu_dropout(tensor__call *c) {
    tensor *out = c->out;
    double p = c->p[0];
    bool training = c->ip[0] != 0;
    tensor__copy_into(out, c->in[0]);
    if (!training || p == 0) return 0;
    c->out2 = tensor__new_like(c->fn, out, out->dtype);
    if (!c->out2) return 1;
    double scale = p == 1 ? 0 : 1.0 / (1.0 - p);
    tensor__rng_fill_run(TENSOR__RNG_KEEP, out->dtype, tensor__data(c->out2), tensor__numel_of(out->ndim, out->shape), 0, scale, p, tensor__data(out));
    return 0;
}

TENSOR_API tensor *tensor_dropout(tensor *x, double p, bool training) {
    const char *fn = "tensor_dropout";
    TENSOR__CHECK_ARG(fn, x);
    if (!(p >= 0 && p <= 1)) return tensor__fail(fn, "dropout probability has to be between 0 and 1, got %g", p);
    if (training && p > 0 && !tensor__is_float(x->dtype))
        return tensor__fail(fn, "expected a floating input when training, got %s", tensor__dtype_names[x->dtype]);
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_dropout);
    c.n_in = 1;
    c.in[0] = x;
    c.p[0] = p;
    c.ip[0] = training;
    c.out = tensor__new_like(fn, x, x->dtype);
    if (c.out && training && p > 0 && x->storage->device != TENSOR_CPU) {
        /* a device's kernel gets the mask to fill (out2) and the generator's place (the same words
           the CPU kernel would take: the masks agree bit for bit): key, counter, stream, skip */
        if (!(c.out2 = tensor__new_like(fn, x, x->dtype))) { tensor_free(c.out); return NULL; }
        tensor__rng_place(&c, 1, tensor__numel_of(x->ndim, x->shape));
    }
    return c.out ? tensor__dispatch(&c) : NULL;
}

/* ---- attention ---- */

/* softmax(q k^T / sqrt(E) + bias) v, written with matmul, transpose, softmax and where/add so
   autograd flows through it. A bool mask keeps where true (else -inf); a float mask is added;
   is_causal keeps the lower triangle of [L, S]. A fully masked row gives NaN, as in PyTorch. */
TENSOR_API tensor *tensor_scaled_dot_product_attention(tensor *q, tensor *k, tensor *v, tensor *mask, bool is_causal) {
    const char *fn = "tensor_scaled_dot_product_attention";
    TENSOR__CHECK_ARG(fn, q);
    TENSOR__CHECK_ARG(fn, k);
    TENSOR__CHECK_ARG(fn, v);
    tensor *ins[4] = {q, k, v, mask};
    if (!tensor__same_device(fn, 4, ins)) return NULL;
    if (q->ndim < 2 || k->ndim < 2 || v->ndim < 2)
        return tensor__fail(fn, "query, key and value need at least 2 dims [..., L, E], got shapes %s, %s and %s", tensor__shape_of(q), tensor__shape_of(k), tensor__shape_of(v));
    if (!tensor__is_float(q->dtype) || k->dtype != q->dtype || v->dtype != q->dtype)
        return tensor__fail(fn, "query, key and value must have the same floating dtype, got %s, %s and %s", tensor__dtype_names[q->dtype],
                            tensor__dtype_names[k->dtype], tensor__dtype_names[v->dtype]);
    int64_t L = q->shape[q->ndim - 2], E = q->shape[q->ndim - 1], S = k->shape[k->ndim - 2];
    if (k->shape[k->ndim - 1] != E)
        return tensor__fail(fn, "query %s and key %s must have the same embedding size (%lld != %lld)", tensor__shape_of(q), tensor__shape_of(k), (long long)E, (long long)k->shape[k->ndim - 1]);
    if (v->shape[v->ndim - 2] != S)
        return tensor__fail(fn, "key %s and value %s must have the same sequence length (%lld != %lld)", tensor__shape_of(k), tensor__shape_of(v), (long long)S, (long long)v->shape[v->ndim - 2]);
    /* the scores' shape: q's and k's batch dims broadcast, then [L, S] */
    int nd, nd2;
    int64_t bs[TENSOR_MAX_DIMS], sshape[TENSOR_MAX_DIMS], tmp[TENSOR_MAX_DIMS];
    if (!tensor__broadcast_shapes(fn, q->ndim - 2, q->shape, k->ndim - 2, k->shape, &nd, bs)) return NULL;
    if (!tensor__broadcast_shapes(fn, nd, bs, v->ndim - 2, v->shape, &nd2, tmp)) return NULL;
    for (int i = 0; i < nd; i++) sshape[i] = bs[i];
    sshape[nd] = L;
    sshape[nd + 1] = S;
    if (mask) {
        if (is_causal) return tensor__fail(fn, "a mask and is_causal cannot both be given");
        if (mask->dtype != TENSOR_BOOL && mask->dtype != q->dtype)
            return tensor__fail(fn, "mask must be bool or have the query's dtype %s, got %s", tensor__dtype_names[q->dtype], tensor__dtype_names[mask->dtype]);
        if (!tensor__broadcasts_to(mask->ndim, mask->shape, nd + 2, sshape)) {
            char b[160];
            return tensor__fail(fn, "mask of shape %s does not broadcast to the attention scores' shape %s", tensor__shape_of(mask), tensor__shape_str(b, sizeof b, nd + 2, sshape));
        }
    }
    tensor *causal = NULL;
    if (is_causal) {
        int64_t cs[2] = {L, S};
        causal = tensor__new(fn, 2, cs, TENSOR_BOOL, q->storage->device);
        if (!causal) return NULL;
        uint8_t *m = (uint8_t *)tensor__data(causal);
        for (int64_t i = 0; i < L; i++)
            for (int64_t j = 0; j < S; j++) m[i * S + j] = j <= i;
        mask = causal;
    }
    tensor *kt = tensor_transpose(k, -2, -1);
    tensor *qk = kt ? tensor_matmul(q, kt) : NULL;
    tensor *scores = qk ? tensor_mul_scalar(qk, 1.0 / sqrt((double)E)) : NULL;
    tensor_free(kt);
    tensor_free(qk);
    if (scores && mask) {
        tensor *masked;
        if (mask->dtype == TENSOR_BOOL) {
            tensor *ninf = tensor_scalar(-INFINITY, scores->dtype);
            masked = ninf ? tensor_where(mask, scores, ninf) : NULL;
            tensor_free(ninf);
        } else {
            masked = tensor_add(scores, mask);
        }
        tensor_free(scores);
        scores = masked;
    }
    tensor_free(causal);
    tensor *attn = scores ? tensor_softmax(scores, -1) : NULL;
    tensor_free(scores);
    tensor *r = attn ? tensor_matmul(attn, v) : NULL;
    tensor_free(attn);
    return r;
}

/* ---- losses (mean reduction) ---- */

/* Checks class-index targets against input [C] (targets 0-dim), [N, C] (targets [N]) or
   [N, C, d1, ...] (targets [N, d1, ...]): PyTorch's nll_loss shapes. */
static bool tensor__check_class_targets(const char *fn, const tensor *input, const tensor *targets) {
    if (input->ndim == 0) { tensor__fail(fn, "input must have at least 1 dim [C] or [N, C, ...], got a 0-dim tensor"); return false; }
    if (!tensor__is_float(input->dtype)) { tensor__fail(fn, "expected a floating input, got %s", tensor__dtype_names[input->dtype]); return false; }
    if (!tensor__is_int(targets->dtype)) {
        tensor__fail(fn, "targets must be an integer tensor of class indices, got %s", tensor__dtype_names[targets->dtype]);
        return false;
    }
    bool ok;
    if (input->ndim == 1) ok = targets->ndim == 0;
    else {
        ok = targets->ndim == input->ndim - 1 && targets->shape[0] == input->shape[0];
        for (int d = 1; ok && d < targets->ndim; d++) ok = targets->shape[d] == input->shape[d + 1];
    }
    if (!ok) {
        tensor__fail(fn, "targets of shape %s do not match input of shape %s (expected the input's shape without its class dim %d)",
                     tensor__shape_of(targets), tensor__shape_of(input), input->ndim == 1 ? 0 : 1);
        return false;
    }
    return true;
}

#define TENSOR__IGNORE_INDEX (-100) /* PyTorch's default ignore_index: such targets count for nothing */

/* out: 0-dim = -mean over targets t (except ignore_index -100) of input[n, t, ...]. All ignored
   (or no targets) gives NaN, as in PyTorch. */
static int tensor__cpu_nll_loss(tensor__call *c) {
    tensor *x = c->in[0], *t = c->in[1];
    int cdim = x->ndim == 1 ? 0 : 1;
    int64_t C = x->shape[cdim], count = tensor__numel_of(t->ndim, t->shape), used = 0;
    int64_t ti[TENSOR_MAX_DIMS] = {0}, xi[TENSOR_MAX_DIMS];
    int64_t ex = (int64_t)tensor__dtype_sizes[x->dtype], et = (int64_t)tensor__dtype_sizes[t->dtype];
    double sum = 0;
    for (int64_t q = 0; q < count; q++, tensor__next_index(t->ndim, t->shape, ti)) {
        int64_t cls = tensor__load_i64((const char *)t->storage->data + tensor__offset_of(t, ti) * et, t->dtype);
        if (cls == TENSOR__IGNORE_INDEX) continue;
        if (cls < 0 || cls >= C) { tensor__fail(c->fn, "target %lld is out of bounds for %lld classes", (long long)cls, (long long)C); return 1; }
        if (x->ndim == 1) xi[0] = cls;
        else {
            xi[0] = ti[0];
            xi[1] = cls;
            for (int d = 1; d < t->ndim; d++) xi[d + 1] = ti[d];
        }
        sum += tensor__load_f64((const char *)x->storage->data + tensor__offset_of(x, xi) * ex, x->dtype);
        used++;
    }
    tensor__store_f64(tensor__data(c->out), c->out->dtype, -sum / (double)used);
    return 0;
}

TENSOR_API tensor *tensor_nll_loss(tensor *log_probs, tensor *targets) {
    const char *fn = "tensor_nll_loss";
    TENSOR__CHECK_ARG(fn, log_probs);
    TENSOR__CHECK_ARG(fn, targets);
    tensor *ins[2] = {log_probs, targets};
    if (!tensor__same_device(fn, 2, ins) || !tensor__check_class_targets(fn, log_probs, targets)) return NULL;
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_nll_loss);
    c.n_in = 2;
    c.in[0] = log_probs;
    c.in[1] = targets;
    c.out = tensor__new(fn, 0, NULL, log_probs->dtype, log_probs->storage->device);
    return c.out ? tensor__dispatch(&c) : NULL;
}

/* cross_entropy as one kernel: per row of logits along the class dim, lse = max + log(sum(e^(x -
   max))) and the row's loss lse - x[target] (class indices; ignore_index -100 rows count for
   nothing) or sum_c p_c (lse - x_c) (class probabilities p of the logits' shape); the mean over
   the counted rows (all ignored, or no rows: NaN, as PyTorch). Computed in double; f32 rows that
   are contiguous take the vector path. The backward kernel below writes (softmax - onehot) / N
   directly.
   Call layout: in[0] logits, in[1] targets, ip[0] 1 for probability targets. */
#define TENSOR__CE_GROUP 32 /* rows per partial sum of the loss */

/* max and sum(e^(x - max)) of n elements s bytes apart, in double (the reference row). */
static double tensor__ce_lse(const char *x, int64_t s, tensor_dtype dt, int64_t n) {
    double mx = -INFINITY, sum = 0;
    for (int64_t i = 0; i < n; i++) { double v = tensor__load_f64(x + i * s, dt); if (v > mx) mx = v; }
    for (int64_t i = 0; i < n; i++) sum += exp(tensor__load_f64(x + i * s, dt) - mx);
    return mx + log(sum);
}

typedef struct {
    const tensor *x, *p;      /* logits; probability targets (or NULL) */
    const int64_t *cls;       /* class targets, one per row in row order (or NULL) */
    int cdim;
    int64_t C, rows;
    double *partial;          /* one per group of TENSOR__CE_GROUP rows */
    bool fast;
} tensor__ce_task;

static void tensor__ce_groups(int64_t begin, int64_t end, void *vt) {
    const tensor__ce_task *t = (const tensor__ce_task *)vt;
    const tensor *x = t->x, *p = t->p ? t->p : t->x;
    int64_t ex = (int64_t)tensor__dtype_sizes[x->dtype], ep = (int64_t)tensor__dtype_sizes[p->dtype];
    int64_t xs = x->strides[t->cdim] * ex, ps = p->strides[t->cdim] * ep, C = t->C;
    bool fast_rows = t->fast && x->dtype == TENSOR_F32 && (xs == 4 || C == 1);
    tensor__rows r;
    tensor__rows_init(&r, x, p, t->cdim);
    tensor__rows_seek(&r, begin * TENSOR__CE_GROUP);
    for (int64_t grp = begin; grp < end; grp++) {
        double sum = 0;
        int64_t q1 = (grp + 1) * TENSOR__CE_GROUP < t->rows ? (grp + 1) * TENSOR__CE_GROUP : t->rows;
        for (int64_t q = grp * TENSOR__CE_GROUP; q < q1; q++, tensor__rows_next(&r)) {
            int64_t k = t->cls ? t->cls[q] : 0;
            if (t->cls && k == TENSOR__IGNORE_INDEX) continue;
            const char *xr = (const char *)x->storage->data + r.off[0] * ex;
            double lse = NAN;
            if (fast_rows) {
                float m;
                double s = tensor__row_maxsumexp_f32(NULL, (const float *)xr, C, &m);
                if (s == s) lse = (double)m + log(s);
            }
            if (lse != lse) lse = tensor__ce_lse(xr, xs, x->dtype, C);
            if (t->cls) { sum += lse - tensor__load_f64(xr + k * xs, x->dtype); continue; }
            const char *pr = (const char *)p->storage->data + r.off[1] * ep;
            for (int64_t c = 0; c < C; c++) sum += tensor__load_f64(pr + c * ps, p->dtype) * (lse - tensor__load_f64(xr + c * xs, x->dtype));
        }
        t->partial[grp] = sum;
    }
}

/* Class targets as int64 in row order, checked (0 <= t < C or ignore_index); *count gets the rows
   that count. NULL after an error. */
static int64_t *tensor__ce_classes(const char *fn, const tensor *targets, int64_t C, int64_t *count) {
    int64_t n = tensor__numel_of(targets->ndim, targets->shape), idx[TENSOR_MAX_DIMS] = {0}, used = 0;
    int64_t *cls = (int64_t *)tensor__cache_alloc((size_t)n * sizeof(int64_t));
    if (!cls) { tensor__fail(fn, "out of memory allocating %zu bytes", (size_t)n * sizeof(int64_t)); return NULL; }
    int64_t et = (int64_t)tensor__dtype_sizes[targets->dtype];
    for (int64_t q = 0; q < n; q++, tensor__next_index(targets->ndim, targets->shape, idx)) {
        int64_t k = tensor__load_i64((const char *)targets->storage->data + tensor__offset_of(targets, idx) * et, targets->dtype);
        if (k != TENSOR__IGNORE_INDEX && (k < 0 || k >= C)) {
            tensor__cache_free(cls);
            tensor__fail(fn, "target %lld is out of bounds for %lld classes", (long long)k, (long long)C);
            return NULL;
        }
        used += k != TENSOR__IGNORE_INDEX;
        cls[q] = k;
    }
    *count = used;
    return cls;
}

/* out: [] = the mean cross-entropy */
static int tensor__cpu_cross_entropy(tensor__call *c) {
    tensor *x = c->in[0], *t = c->in[1];
    bool prob = c->ip[0] != 0;
    tensor__ce_task k;
    k.x = x;
    k.cdim = x->ndim == 1 ? 0 : 1;
    k.C = x->shape[k.cdim];
    k.rows = 1;
    for (int d = 0; d < x->ndim; d++) if (d != k.cdim) k.rows *= x->shape[d];
    k.p = prob ? t : NULL;
    k.cls = NULL;
    k.fast = !tensor__reference_kernels;
    int64_t count = k.C ? k.rows : 0; /* probabilities over no classes: 0 / 0 */
    int64_t *cls = NULL;
    if (!prob && !(cls = tensor__ce_classes(c->fn, t, k.C, &count))) return 1;
    k.cls = cls;
    int64_t groups = (k.rows + TENSOR__CE_GROUP - 1) / TENSOR__CE_GROUP;
    k.partial = (double *)tensor__cache_alloc((size_t)groups * sizeof(double));
    if (!k.partial) { tensor__cache_free(cls); tensor__fail(c->fn, "out of memory allocating %zu bytes", (size_t)groups * sizeof(double)); return 1; }
    if (k.C > 0) {
        if (k.fast) tensor__parallel_for(groups, tensor__grain(k.C) / TENSOR__CE_GROUP + 1, tensor__ce_groups, &k); /* C * 32 may overflow */
        else tensor__ce_groups(0, groups, &k);
    } else for (int64_t g = 0; g < groups; g++) k.partial[g] = 0; /* no classes: only ignored rows got past the check */
    double sum = 0;
    for (int64_t g = 0; g < groups; g++) sum += k.partial[g];
    tensor__store_f64(tensor__data(c->out), c->out->dtype, sum / (double)count);
    tensor__cache_free(cls);
    tensor__cache_free(k.partial);
    return 0;
}

/* nll_loss(log_softmax(logits, class dim), targets); with floating targets of the logits' shape
   (class probabilities), -sum(targets * log_softmax) / (numel / C), as PyTorch. */
TENSOR_API tensor *tensor_cross_entropy(tensor *logits, tensor *targets) {
    const char *fn = "tensor_cross_entropy";
    TENSOR__CHECK_ARG(fn, logits);
    TENSOR__CHECK_ARG(fn, targets);
    tensor *ins[2] = {logits, targets};
    if (!tensor__same_device(fn, 2, ins)) return NULL;
    bool prob = tensor__is_float(targets->dtype);
    if (prob) {
        if (logits->ndim == 0) return tensor__fail(fn, "input must have at least 1 dim [C] or [N, C, ...], got a 0-dim tensor");
        if (!tensor__is_float(logits->dtype)) return tensor__fail(fn, "expected a floating input, got %s", tensor__dtype_names[logits->dtype]);
        if (!tensor__same_shape(logits, targets))
            return tensor__fail(fn, "probability targets of shape %s must have the input's shape %s", tensor__shape_of(targets), tensor__shape_of(logits));
    } else if (!tensor__check_class_targets(fn, logits, targets)) return NULL;
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_cross_entropy);
    c.n_in = 2;
    c.in[0] = logits;
    c.in[1] = targets;
    c.ip[0] = prob;
    c.out = tensor__new(fn, 0, NULL, prob ? (tensor_dtype)tensor__promotion[logits->dtype][targets->dtype] : logits->dtype, logits->storage->device);
    return c.out ? tensor__dispatch(&c) : NULL;
}

/* The fused backward of cross_entropy (the derivative uses it when the backward pass is not
   recorded): with scale = g / count, gx = (softmax(x) - onehot(target)) scale per counted row
   (ignored rows: 0), or for probabilities p, gx = (softmax(x) sum(p) - p) scale and
   gp = (lse - x) scale. */
typedef struct {
    const tensor *x, *p;
    tensor *gx, *gp;
    const int64_t *cls;
    int cdim;
    int64_t C;
    double scale;
    bool fast;
} tensor__ce_bwd_task;

static void tensor__ce_bwd_rows(int64_t begin, int64_t end, void *vt) {
    const tensor__ce_bwd_task *t = (const tensor__ce_bwd_task *)vt;
    const tensor *x = t->x;
    tensor *gx = t->gx;
    int64_t ex = (int64_t)tensor__dtype_sizes[x->dtype], eg = (int64_t)tensor__dtype_sizes[gx->dtype], C = t->C;
    int64_t xs = x->strides[t->cdim] * ex, gs = gx->strides[t->cdim] * eg;
    bool fast_rows = t->fast && t->cls && x->dtype == TENSOR_F32 && gx->dtype == TENSOR_F32 && ((xs == 4 && gs == 4) || C == 1);
    tensor__rows r, rp; /* rp: the rows of p and gp */
    tensor__rows_init(&r, x, gx, t->cdim);
    tensor__rows_seek(&r, begin);
    tensor__rows_init(&rp, t->p ? t->p : x, t->gp ? t->gp : t->p ? t->p : x, t->cdim);
    tensor__rows_seek(&rp, begin);
    for (int64_t q = begin; q < end; q++, tensor__rows_next(&r), tensor__rows_next(&rp)) {
        const char *xr = (const char *)x->storage->data + r.off[0] * ex;
        char *gr = (char *)gx->storage->data + r.off[1] * eg;
        int64_t k = t->cls ? t->cls[q] : -1;
        if (t->cls && k == TENSOR__IGNORE_INDEX) {
            for (int64_t c = 0; c < C; c++) tensor__store_f64(gr + c * gs, gx->dtype, 0);
            continue;
        }
        if (fast_rows) {
            float m, *g = (float *)gr;
            double s = tensor__row_maxsumexp_f32(g, (const float *)xr, C, &m); /* g = e^(x - max) */
            if (s == s) {
                tensor__row_affine_f32(g, g, C, (float)(t->scale / s), 0.0f);
                g[k] -= (float)t->scale;
                continue;
            }
        }
        double lse = tensor__ce_lse(xr, xs, x->dtype, C);
        if (t->cls) {
            for (int64_t c = 0; c < C; c++)
                tensor__store_f64(gr + c * gs, gx->dtype, (exp(tensor__load_f64(xr + c * xs, x->dtype) - lse) - (c == k)) * t->scale);
            continue;
        }
        const tensor *p = t->p;
        int64_t ep = (int64_t)tensor__dtype_sizes[p->dtype], ps = p->strides[t->cdim] * ep;
        const char *pr = (const char *)p->storage->data + rp.off[0] * ep;
        double psum = 0;
        for (int64_t c = 0; c < C; c++) psum += tensor__load_f64(pr + c * ps, p->dtype);
        for (int64_t c = 0; c < C; c++) {
            double xv = tensor__load_f64(xr + c * xs, x->dtype), pv = tensor__load_f64(pr + c * ps, p->dtype);
            tensor__store_f64(gr + c * gs, gx->dtype, (exp(xv - lse) * psum - pv) * t->scale);
        }
        if (t->gp) {
            int64_t eq = (int64_t)tensor__dtype_sizes[t->gp->dtype], qs = t->gp->strides[t->cdim] * eq;
            char *qr = (char *)t->gp->storage->data + rp.off[1] * eq;
            for (int64_t c = 0; c < C; c++) tensor__store_f64(qr + c * qs, t->gp->dtype, (lse - tensor__load_f64(xr + c * xs, x->dtype)) * t->scale);
        }
    }
}

/* Sets *gx (logits' shape and dtype) and, for probability targets, *gp (when gp is not NULL) for
   the loss gradient g (0-dim). 0, or -1 after an error. */
static int tensor__cross_entropy_backward(const char *fn, tensor *x, tensor *targets, bool prob, tensor *g, tensor **gx, tensor **gp) {
    if (!tensor__host_only(fn, x, "the backward of cross_entropy")) return -1;
    tensor__ce_bwd_task k;
    k.x = x;
    k.cdim = x->ndim == 1 ? 0 : 1;
    k.C = x->shape[k.cdim];
    int64_t rows = 1, count;
    for (int d = 0; d < x->ndim; d++) if (d != k.cdim) rows *= x->shape[d];
    count = k.C ? rows : 0;
    int64_t *cls = NULL;
    if (!prob && !(cls = tensor__ce_classes(fn, targets, k.C, &count))) return -1;
    k.cls = cls;
    k.p = prob ? targets : NULL;
    k.gx = tensor__new_like(fn, x, x->dtype);
    k.gp = prob && gp ? tensor__new_like(fn, targets, targets->dtype) : NULL;
    k.scale = tensor__load_f64(tensor__data(g), g->dtype) / (double)(count > 0 ? count : 1);
    k.fast = !tensor__reference_kernels;
    if (!k.gx || (prob && gp && !k.gp)) { tensor_free(k.gx); tensor_free(k.gp); tensor__cache_free(cls); return -1; }
    if (k.C > 0 && rows > 0) tensor__parallel_for(rows, tensor__grain(k.C), tensor__ce_bwd_rows, &k);
    tensor__cache_free(cls);
    *gx = k.gx;
    if (gp) *gp = k.gp;
    return 0;
}

/* mean((input - target)^2). Shapes that differ are broadcast (PyTorch warns and does the same). */
TENSOR_API tensor *tensor_mse_loss(tensor *input, tensor *target) {
    const char *fn = "tensor_mse_loss";
    TENSOR__CHECK_ARG(fn, input);
    TENSOR__CHECK_ARG(fn, target);
    tensor *ins[2] = {input, target};
    if (!tensor__same_device(fn, 2, ins)) return NULL;
    if (!tensor__is_float(tensor__result_type(2, ins)))
        return tensor__fail(fn, "expected floating inputs, got %s and %s", tensor__dtype_names[input->dtype], tensor__dtype_names[target->dtype]);
    int nd;
    int64_t shape[TENSOR_MAX_DIMS];
    if (!tensor__broadcast_shapes(fn, input->ndim, input->shape, target->ndim, target->shape, &nd, shape)) return NULL;
    tensor *d = tensor_sub(input, target);
    tensor *sq = d ? tensor_square(d) : NULL;
    tensor *r = sq ? tensor_mean_all(sq) : NULL;
    tensor_free(d);
    tensor_free(sq);
    return r;
}

/* mean((1 - y) x - logsigmoid(x)): the same value as max(x, 0) - x y + log(1 + exp(-|x|)), stable
   for large |x|, and written without relu/abs so its gradient is sigmoid(x) - y everywhere, x = 0
   included (PyTorch's; the kinks of relu and abs would give -y there). */
TENSOR_API tensor *tensor_binary_cross_entropy_with_logits(tensor *logits, tensor *targets) {
    const char *fn = "tensor_binary_cross_entropy_with_logits";
    TENSOR__CHECK_ARG(fn, logits);
    TENSOR__CHECK_ARG(fn, targets);
    tensor *ins[2] = {logits, targets};
    if (!tensor__same_device(fn, 2, ins)) return NULL;
    if (!tensor__same_shape(logits, targets))
        return tensor__fail(fn, "target shape %s must be the same as input shape %s", tensor__shape_of(targets), tensor__shape_of(logits));
    if (!tensor__is_float(logits->dtype) || !tensor__is_float(targets->dtype))
        return tensor__fail(fn, "expected floating input and target, got %s and %s", tensor__dtype_names[logits->dtype], tensor__dtype_names[targets->dtype]);
    tensor *xy = tensor_mul(logits, targets);
    tensor *t1 = xy ? tensor_sub(logits, xy) : NULL;
    tensor *ls = tensor_logsigmoid(logits);
    tensor *t2 = t1 && ls ? tensor_sub(t1, ls) : NULL;
    tensor *r = t2 ? tensor_mean_all(t2) : NULL;
    tensor_free(xy);
    tensor_free(t1);
    tensor_free(ls);
    tensor_free(t2);
    return r;
}

/* ---- backward kernels (used by the derivatives in >>autograd) ---- */

/* relu's gradient in one pass, PyTorch's threshold_backward: gx = x <= 0 ? 0 : g (so a NaN x
   passes g, and an infinite or NaN g at x <= 0 gives 0, not inf * 0). The op-composed formula of
   >>autograd (create_graph, and the reference kernels) computes the same values. */
#if TENSOR__NN_AVX2
static TENSOR__AVX2_FN int64_t tensor__relu_bwd_avx2_f32(float *o, const float *x, const float *g, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) /* NLE_UQ: x > 0 or NaN */
        _mm256_storeu_ps(o + i, _mm256_and_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), _mm256_setzero_ps(), _CMP_NLE_UQ), _mm256_loadu_ps(g + i)));
    _mm256_zeroupper();
    return i;
}
static TENSOR__AVX2_FN int64_t tensor__relu_bwd_avx2_f64(double *o, const double *x, const double *g, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        _mm256_storeu_pd(o + i, _mm256_and_pd(_mm256_cmp_pd(_mm256_loadu_pd(x + i), _mm256_setzero_pd(), _CMP_NLE_UQ), _mm256_loadu_pd(g + i)));
    _mm256_zeroupper();
    return i;
}
#endif
typedef struct { const char *x, *g; char *gx; bool f32; } tensor__relu_bwd_task;
static void tensor__relu_bwd_range(int64_t begin, int64_t end, void *vt) {
    const tensor__relu_bwd_task *t = (const tensor__relu_bwd_task *)vt;
    int64_t n = end - begin, i = 0;
    if (t->f32) {
        float *o = (float *)t->gx + begin;
        const float *x = (const float *)t->x + begin, *g = (const float *)t->g + begin;
#if TENSOR__NN_AVX2
        if (tensor__nn_isa() >= 2) { TENSOR__PATH_TAKEN(relu_backward_fused); i = tensor__relu_bwd_avx2_f32(o, x, g, n); }
#endif
        for (; i < n; i++) o[i] = x[i] <= 0 ? 0.0f : g[i];
    } else {
        double *o = (double *)t->gx + begin;
        const double *x = (const double *)t->x + begin, *g = (const double *)t->g + begin;
#if TENSOR__NN_AVX2
        if (tensor__nn_isa() >= 2) i = tensor__relu_bwd_avx2_f64(o, x, g, n);
#endif
        for (; i < n; i++) o[i] = x[i] <= 0 ? 0.0 : g[i];
    }
}

/* 1 with *gx set, 0 when this path does not take the case (the reference kernels; not f32/f64;
   g of another dtype or shape; an operand not contiguous), -1 on error. g is the engine's, dropped
   after the derivative: when its storage has no other handle (a gradient made by the derivative
   below, not the caller's grad_out), gx is written over it, which saves a buffer's worth of memory
   traffic. */
static int tensor__relu_backward(const char *fn, tensor *x, tensor *g, tensor **gx) {
    if (tensor__reference_kernels || (x->dtype != TENSOR_F32 && x->dtype != TENSOR_F64) || g->dtype != x->dtype || !tensor__same_shape(x, g) ||
        !tensor__contiguous(x) || !tensor__contiguous(g) || x->storage->device != TENSOR_CPU)
        return 0;
    tensor *r = tensor__refs_sole(&g->storage->refs, tensor__self) ? tensor__view_of(fn, g, g->ndim, g->shape, g->strides, g->offset) : tensor__new_like(fn, x, x->dtype);
    if (!r) return -1;
    tensor__relu_bwd_task t;
    t.x = tensor__data(x);
    t.g = tensor__data(g);
    t.gx = tensor__data(r);
    t.f32 = x->dtype == TENSOR_F32;
    tensor__parallel_for(tensor__numel_of(x->ndim, x->shape), TENSOR__GRAIN_ELEMENTWISE, tensor__relu_bwd_range, &t);
    *gx = r;
    return 1;
}

/* The element strides of a convolution output's gradient as [n, o, h, w] (0 on absent dims). */
static void tensor__conv_out_strides(const tensor *gr, int sd, bool batched, int64_t *gs) {
    int nd = gr->ndim;
    gs[0] = batched ? gr->strides[0] : 0;
    gs[1] = gr->strides[nd - sd - 1];
    gs[2] = sd == 2 ? gr->strides[nd - 2] : 0;
    gs[3] = gr->strides[nd - 1];
}

/* The reference: the adjoint of the convolution sum, written out in double straight from the
   strided x, w and gradient gr. gx: [N, C, H, W], gw: [O, Cg, kH, kW], gb: [O] (row-major doubles,
   zeroed by the caller; NULL where not wanted) accumulate. */
static void tensor__conv_backward_reference(const tensor *x, const tensor *w, const tensor *gr, const int64_t *gs, const tensor__conv_geom *g,
                                            double *gx, double *gw, double *gb) {
    int64_t ex = (int64_t)tensor__dtype_sizes[x->dtype], ew = (int64_t)tensor__dtype_sizes[w->dtype], eg = (int64_t)tensor__dtype_sizes[gr->dtype];
    const char *xb = (const char *)x->storage->data, *wb = (const char *)w->storage->data, *gbase = (const char *)gr->storage->data;
    int64_t Cg = g->C / g->groups, Og = g->O / g->groups;
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t oc = 0; oc < g->O; oc++)
            for (int64_t oh = 0; oh < g->oH; oh++)
                for (int64_t ow = 0; ow < g->oW; ow++) {
                    double gv = tensor__load_f64(gbase + (gr->offset + n * gs[0] + oc * gs[1] + oh * gs[2] + ow * gs[3]) * eg, gr->dtype);
                    if (gb) gb[oc] += gv;
                    int64_t grp = oc / Og;
                    for (int64_t ic = 0; ic < Cg; ic++)
                        for (int64_t ki = 0; ki < g->kH; ki++)
                            for (int64_t kj = 0; kj < g->kW; kj++) {
                                int64_t ih = oh * g->sh - g->ph + ki * g->dh, iw = ow * g->sw - g->pw + kj * g->dw;
                                if (ih < 0 || ih >= g->H || iw < 0 || iw >= g->W) continue;
                                int64_t c = grp * Cg + ic;
                                if (gx) {
                                    int64_t wo = w->offset + oc * g->ws[0] + ic * g->ws[1] + ki * g->ws[2] + kj * g->ws[3];
                                    gx[((n * g->C + c) * g->H + ih) * g->W + iw] += gv * tensor__load_f64(wb + wo * ew, w->dtype);
                                }
                                if (gw) {
                                    int64_t xo = x->offset + n * g->xs[0] + c * g->xs[1] + ih * g->xs[2] + iw * g->xs[3];
                                    gw[((oc * Cg + ic) * g->kH + ki) * g->kW + kj] += gv * tensor__load_f64(xb + xo * ex, x->dtype);
                                }
                            }
                }
}

/* sum of r[0..n) in double, four chains so the adds overlap (f32 rows: tensor__row_sum_f32). */
static double tensor__sum_row_f64(const double *r, int64_t n) {
    double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) { a0 += r[i]; a1 += r[i + 1]; a2 += r[i + 2]; a3 += r[i + 3]; }
    for (; i < n; i++) a0 += r[i];
    return (a0 + a1) + (a2 + a3);
}

/* sum of the bf16 r[0..n), through f32 in chunks that stay in L1. */
static double tensor__sum_row_bf16(const uint16_t *r, int64_t n) {
    float t[256];
    double acc = 0;
    for (int64_t i = 0; i < n; i += 256) {
        int64_t m = n - i < 256 ? n - i : 256;
        tensor__half_to_f32(t, r + i, m, true);
        acc += tensor__row_sum_f32(t, m);
    }
    return acc;
}

/* d[i] += t[i], i < n (compute dtype ct). */
static void tensor__add_to(void *d, const void *t, int64_t n, tensor_dtype ct) {
    if (ct == TENSOR_F32) tensor__add_row_f32((float *)d, (const float *)t, n);
    else tensor__add_row_f64((double *)d, (const double *)t, n);
}

/* Per block of images and group (gc_g: the images' gc[n, grp * Og.., :] side by side, [Og, bn P];
   a block of one image reads gc in place, a larger one copies the rows into the block buffer):
     gx: cols[K, bn P] = w_g^T[K, Og] @ gc_g (w_g read transposed through strides), then col2im
         sums each image's columns into its gx [Cg, H, W] (a 1x1 kernel with stride 1 and no padding
         writes gx itself);
     gw: cols = the images' im2col [K, bn P]; sum_g[Og, K] += gc_g @ cols^T (cols read transposed),
         into this chunk's own sum (slot 0's is gw itself);
     gb: the rows of gc summed (in double) into gbn[n, grp * Og..], while they are in cache. */
static void tensor__conv_bwd_blocks(int64_t begin, int64_t end, void *ctx) {
    tensor__conv_job *j = (tensor__conv_job *)ctx;
    const tensor__conv_geom *g = j->g;
    size_t cs = tensor__dtype_sizes[j->ct], es = tensor__dtype_sizes[j->sd];
    int64_t Cg = g->C / g->groups, Og = g->O / g->groups, K = Cg * g->kH * g->kW, P = g->oH * g->oW, X = Cg * g->H * g->W;
    int slot = tensor__conv_claim(j);
    char *gw = j->gw ? j->gw + (size_t)(slot * g->O * K) * cs : NULL;
    char *cols = j->scratch + (size_t)slot * tensor__conv_slot_bytes(g, j->ct, j->direct, j->bn);
    char *blk = j->direct ? cols : cols + (size_t)(K * j->bn * P) * cs;
    if (j->sd == TENSOR_BF16) TENSOR__PATH_TAKEN(conv_bf16);
    for (int64_t bi = begin; bi < end; bi++) {
        int64_t n0 = bi * j->bn, bn = g->N - n0 < j->bn ? g->N - n0 : j->bn, ld = bn * P;
        /* the scatter col2im adds into gx: zeroed first (the vector gathers write every element) */
        if (j->out && !j->direct && !j->vec) memset(j->out + (size_t)(n0 * g->C * g->H * g->W) * cs, 0, (size_t)(bn * g->C * g->H * g->W) * cs);
        for (int64_t grp = 0; grp < g->groups; grp++) {
            const char *gcg = j->gc + (size_t)((n0 * g->O + grp * Og) * P) * es;
            for (int64_t i = 0; i < bn; i++)
                for (int64_t q = 0; q < Og; q++) {
                    const char *r = j->gc + (size_t)(((n0 + i) * g->O + grp * Og + q) * P) * es;
                    if (bn > 1) r = (const char *)memcpy(blk + (size_t)(q * ld + i * P) * es, r, (size_t)P * es); /* then summed in L1 */
                    if (j->gbn)
                        j->gbn[(n0 + i) * g->O + grp * Og + q] = j->sd == TENSOR_BF16 ? tensor__sum_row_bf16((const uint16_t *)(const void *)r, P)
                                                                 : j->ct == TENSOR_F32  ? tensor__row_sum_f32((const float *)r, P)
                                                                                        : tensor__sum_row_f64((const double *)r, P);
                }
            if (bn > 1) gcg = blk;
            if (j->out) {
                char *xg = j->out + (size_t)((n0 * g->groups + grp) * X) * cs;
                TENSOR__GEMM_IN_TASK(j->oom, tensor__gemm_strided(j->ct, j->sd, K, ld, Og, j->w + (size_t)(grp * Og * K) * es, 1, K, gcg, ld, 1, j->direct ? (void *)xg : cols, ld, 1, false));
                for (int64_t i = 0; i < bn && !j->direct; i++) {
                    char *xi = j->out + (size_t)(((n0 + i) * g->groups + grp) * X) * cs;
#if TENSOR__NN_AVX2
                    if (j->vec == 2) { tensor__col2im_avx2((float *)xi, (const float *)cols + i * P, ld, g, Cg); continue; }
#endif
#if TENSOR__NN_AVX512
                    if (j->vec == 3) { tensor__col2im_avx512((float *)xi, (const float *)cols + i * P, ld, g, Cg); continue; }
#endif
                    if (j->ct == TENSOR_F32) tensor__col2im_f32((float *)xi, (const float *)cols + i * P, ld, g, Cg);
                    else tensor__col2im_f64((double *)xi, (const double *)cols + i * P, ld, g, Cg);
                }
            }
            if (gw) {
                const char *B = NULL;
                for (int64_t i = 0; i < bn; i++) B = tensor__conv_im2col(j, cols, ld, i * P, j->x + (size_t)(((n0 + i) * g->groups + grp) * X) * es);
                TENSOR__GEMM_IN_TASK(j->oom, tensor__gemm_strided(j->ct, j->sd, Og, K, ld, gcg, ld, 1, B, 1, ld, gw + (size_t)(grp * Og * K) * cs, K, 1, true));
            }
        }
    }
}

/* The fast path, in the compute dtype ct (f32, or f64 for f64) with the forward's machinery: gc is
   the gradient [N, O, P] (P = oH * oW), contiguous of the operand dtype sd (ct, or bf16 for the
   bf16 kernel, which then reads x and w as bf16 too; its products still land in ct); gx, gw and
   the per-image sums of gb come from tensor__conv_bwd_blocks, spread over the blocks like the
   forward; gb adds the images' sums in order, in double. gx, gw, gb are contiguous ct buffers of x's, w's and [O]'s size, or NULL.
   Returns 0, or 1 after recording an error. */
static int tensor__conv_backward_fast(const char *fn, const tensor *x, const tensor *w, const char *gc, const tensor__conv_geom *g, tensor_dtype ct,
                                      tensor_dtype sd, void *gx, void *gw, void *gb) {
    size_t cs = tensor__dtype_sizes[ct];
    int64_t K = g->C / g->groups * g->kH * g->kW, wn = g->O * K;
    tensor *xc = NULL, *wc = NULL;
    int rc = 0;
    if (gw && !(x->dtype == sd && tensor__contiguous(x))) rc |= !(xc = tensor__contiguous_copy(fn, x, sd));
    if (gx && !(w->dtype == sd && tensor__contiguous(w))) rc |= !(wc = tensor__contiguous_copy(fn, w, sd));
#if TENSOR__NN_AVX2
    if (sd == ct && tensor__wino_ok(g, ct)) {
        rc = rc || tensor__wino_backward(fn, g, gw ? (const float *)tensor__data(xc ? xc : x) : NULL, gx ? (const float *)tensor__data(wc ? wc : w) : NULL,
                                         (const float *)gc, (float *)gx, (float *)gw, (float *)gb);
        tensor_free(xc);
        tensor_free(wc);
        return rc;
    }
#endif
    tensor__conv_job j;
    if (!tensor__conv_job_init(fn, &j, g, ct, sd)) rc = 1;
    /* the slots' gw sums side by side (gw itself when there is one slot); the images' gb sums */
    int64_t slots = tensor__conv_slots(&j);
    char *sums = !gw ? NULL : slots > 1 ? (char *)tensor__cache_alloc((size_t)(slots * wn) * cs) : (char *)gw;
    j.gbn = gb ? (double *)tensor__cache_alloc((size_t)(g->N * g->O) * sizeof(double) + 1) : NULL;
    if (!rc && ((gw && !sums) || (gb && !j.gbn))) rc = (tensor__fail(fn, "out of memory allocating convolution scratch"), 1);
    if (!rc) {
        j.x = gw ? (const char *)tensor__data(xc ? xc : x) : NULL;
        j.w = gx ? (const char *)tensor__data(wc ? wc : w) : NULL;
        j.gc = gc;
        j.out = (char *)gx;
        j.gw = sums;
        if (sums) memset(sums, 0, (size_t)((sums == (char *)gw ? 1 : slots) * wn) * cs);
        if (!tensor__conv_blocks(tensor__conv_bwd_blocks, &j)) rc = (tensor__fail(fn, "out of memory allocating convolution scratch"), 1);
        if (!rc && sums && sums != (char *)gw) {
            memcpy(gw, sums, (size_t)wn * cs);
            for (int s = 1; s < j.slot && s < slots; s++) tensor__add_to(gw, sums + (size_t)(s * wn) * cs, wn, ct);
        }
        for (int64_t o = 0; !rc && gb && o < g->O; o++) {
            double acc = 0;
            for (int64_t n = 0; n < g->N; n++) acc += j.gbn[n * g->O + o];
            if (ct == TENSOR_F32) ((float *)gb)[o] = (float)acc;
            else ((double *)gb)[o] = acc;
        }
    }
    if (sums != (char *)gw) tensor__cache_free(sums);
    tensor__cache_free(j.scratch);
    tensor__cache_free(j.gbn);
    tensor_free(xc);
    tensor_free(wc);
    return rc;
}

/* Gradients of a convolution with the call layout of conv2d/conv1d (ip = {stride, padding,
   dilation, groups}, sd spatial dims): gx of x's shape, gw of w's shape, gb [O], each computed only
   where its pointer is non-NULL, each a new contiguous tensor of x's dtype (f16/bf16 compute in
   f32). g: the output's gradient, any layout and floating dtype. Returns 0, or 1 after recording an
   error. */
static int tensor__conv_backward(const char *fn, int sd, tensor *x, tensor *w, tensor *g, const int64_t *ip, tensor **gx, tensor **gw, tensor **gb) {
    if (!tensor__host_only(fn, x, "the backward of convolutions")) return -1;
    tensor__conv_geom geo;
    bool batched = x->ndim == sd + 2;
    int od = batched ? sd + 2 : sd + 1;
    if (g->ndim != od || (batched && g->shape[0] != x->shape[0]) || g->shape[od - sd - 1] != w->shape[0]) {
        tensor__fail(fn, "the gradient of shape %s does not fit a convolution of input %s and weight %s", tensor__shape_of(g), tensor__shape_of(x), tensor__shape_of(w));
        return 1;
    }
    tensor__conv_geometry_of(x, w, g, sd, ip, &geo);
    int64_t O = geo.O;
    tensor *rx = gx ? tensor__new_like(fn, x, x->dtype) : NULL;
    tensor *rw = gw ? tensor__new_like(fn, w, x->dtype) : NULL;
    tensor *rb = gb ? tensor__new(fn, 1, &O, x->dtype, x->storage->device) : NULL;
    int rc = (gx && !rx) || (gw && !rw) || (gb && !rb);
    tensor *outs[3] = {rx, rw, rb};
    int64_t counts[3] = {rx ? tensor__numel_of(rx->ndim, rx->shape) : 0, rw ? tensor__numel_of(rw->ndim, rw->shape) : 0, rb ? O : 0};
    /* the compute buffers: doubles for the reference; ct for the fast path, the results themselves
       where they are of ct */
    bool ref = tensor__reference_kernels;
    tensor_dtype ct = ref ? TENSOR_F64 : tensor__gemm_dtype(x->dtype);
    void *buf[3] = {NULL, NULL, NULL};
    bool own[3] = {false, false, false};
    for (int i = 0; i < 3 && !rc; i++) {
        if (!outs[i]) continue;
        own[i] = ref || outs[i]->dtype != ct;
        buf[i] = own[i] ? tensor__scratch(fn, (size_t)counts[i] * tensor__dtype_sizes[ct]) : (void *)tensor__data(outs[i]);
        rc |= !buf[i];
    }
    if (!rc && tensor__numel_of(g->ndim, g->shape) == 0) { /* every term has a factor of g: all zero, whatever the planes' size */
        for (int i = 0; i < 3; i++) if (buf[i]) memset(buf[i], 0, (size_t)counts[i] * tensor__dtype_sizes[ct]);
    } else if (!rc) {
        if (ref) {
            for (int i = 0; i < 3; i++) if (buf[i]) memset(buf[i], 0, (size_t)counts[i] * sizeof(double));
            int64_t gs[4];
            tensor__conv_out_strides(g, sd, batched, gs);
            tensor__conv_backward_reference(x, w, g, gs, &geo, (double *)buf[0], (double *)buf[1], (double *)buf[2]);
        } else {
            /* bf16 operands only when all three are bf16 (a wider gradient is not rounded to bf16) */
            tensor_dtype opd = x->dtype == w->dtype && g->dtype == x->dtype ? tensor__conv_operand_dtype(x->dtype, &geo) : ct;
            bool g_ok = g->dtype == opd && tensor__contiguous(g);
            tensor *gcopy = g_ok ? NULL : tensor__contiguous_copy(fn, g, opd);
            rc = (!g_ok && !gcopy) || tensor__conv_backward_fast(fn, x, w, tensor__data(gcopy ? gcopy : g), &geo, ct, opd, buf[0], buf[1], buf[2]);
            tensor_free(gcopy);
        }
    }
    for (int i = 0; i < 3; i++) {
        if (!rc && own[i]) tensor__unpack(tensor__data(outs[i]), outs[i]->dtype, buf[i], ct, counts[i]);
        if (own[i]) tensor__free_aligned(buf[i]);
    }
    if (rc) {
        tensor_free(rx);
        tensor_free(rw);
        tensor_free(rb);
        return 1;
    }
    if (gx) *gx = rx;
    if (gw) *gw = rw;
    if (gb) *gb = rb;
    return 0;
}

/* Gradient of max or average pooling (ip = {kernel, stride, padding}, stride already resolved) for
   x: a new contiguous tensor of x's shape and dtype (f16/bf16 compute in f32). g: the output's
   gradient, any layout and floating dtype. Max sends each window's gradient to the position the
   forward picked (tensor__pool_argmax); avg spreads g / k^2 over the window's in-bounds elements. */
static tensor *tensor__pool_backward(const char *fn, bool is_max, tensor *x, tensor *g, const int64_t *ip) {
    if (!tensor__host_only(fn, x, "the backward of pooling")) return NULL;
    int xd = x->ndim;
    if (g->ndim != xd || (xd == 4 && g->shape[0] != x->shape[0]) || g->shape[xd - 3] != x->shape[xd - 3])
        return tensor__fail(fn, "the gradient of shape %s does not fit a pooling of input %s", tensor__shape_of(g), tensor__shape_of(x));
    tensor *r = tensor__new_like(fn, x, x->dtype);
    if (!r) return NULL;
    if (tensor__numel_of(g->ndim, g->shape) == 0) { tensor__fill(r, 0); return r; }
    if (tensor__pool_run(fn, is_max, true, x, g, r, ip)) { tensor_free(r); return NULL; }
    return r;
}
