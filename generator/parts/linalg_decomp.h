// >>linalg-decomp ------------------------------------------------------------------------------
/* Linear algebra on square matrices, f32 and f64, batched (the leading dims broadcast as in
   torch.linalg), with our own kernels (no LAPACK):
   - three kernels: linalg_lu_factor (partial pivoting, LAPACK's getrf choices: the first row of
     largest |value| is the pivot, a zero pivot leaves its column unscaled), linalg_cholesky (lower
     factor, reading A's lower triangle) and linalg_solve_triangular (left side; the front-end
     turns X A = B into A^T X^T = B^T). For n >= TENSOR__LA_BLOCK_MIN the LU and Cholesky kernels
     are blocked: a panel of TENSOR__LA_NB columns is factored with plain loops and the trailing
     matrix is updated by the packed GEMM of >>gemm. Batches run on the thread pool.
   - the others are composites of them (and of tril/triu, matmul, gather, prod, ...), so autograd
     and the CUDA device come with them: lu_solve (row permutation + two triangular solves), solve
     (lu_factor + lu_solve), inv (solve with the identity), det and slogdet (the product of U's
     diagonal and the sign of the permutation).
   The kernels read contiguous inputs (the front-ends make them so through tensor_contiguous, which
   autograd follows) and write contiguous outputs. Derivatives (tensor_autograd.h) are PyTorch's:
   LU: A_grad = P L^-T (tril(L^T gL, -1) + triu(gU U^T)) U^-T; Cholesky: L^-T Phi(L^T gL) L^-1,
   symmetrized; solve_triangular: gB = A^-T G, gA = -gB X^T on A's triangle; written with library
   ops, so they differentiate again. Singular inputs: lu_factor, solve and inv fail with PyTorch's
   messages (a zero on U's diagonal); det and slogdet give 0 and (0, -inf); the gradient at a
   singular matrix is not defined here (inf/NaN), where PyTorch's det switches to an SVD. */

#define TENSOR__LA_NB 48
#define TENSOR__LA_BLOCK_MIN 128

static bool tensor__la_float(const char *fn, const char *name, const tensor *t) {
    if (t->dtype == TENSOR_F32 || t->dtype == TENSOR_F64) return true;
    tensor__fail(fn, "expected a float32 or float64 tensor as %s, got %s", name, tensor__dtype_names[t->dtype]);
    return false;
}
/* t is a batch of square matrices [..., n, n] */
static bool tensor__la_square(const char *fn, const char *name, const tensor *t) {
    if (t->ndim < 2) { tensor__fail(fn, "the input tensor %s must have at least 2 dimensions, got shape %s", name, tensor__shape_of(t)); return false; }
    if (t->shape[t->ndim - 1] != t->shape[t->ndim - 2]) {
        tensor__fail(fn, "%s must be batches of square matrices, but they are %lld by %lld matrices", name,
                     (long long)t->shape[t->ndim - 2], (long long)t->shape[t->ndim - 1]);
        return false;
    }
    return true;
}

/* ---- the CPU kernels, one matrix each (row-major, contiguous, n x n) ---- */
typedef struct {
    tensor_dtype dt;
    int64_t n, k, batches;
    const char *in, *in2;   /* A; B for the triangular solve */
    char *out;
    int32_t *piv;
    bool upper, unit;
    int oom;
} tensor__la_job;

#define TENSOR__DEFINE_LA(sfx, T, ABS, SQRT)                                                                 \
    /* LU with partial pivoting of a (n x n, row stride n) in place; piv 1-based. Full rows are          \
       swapped. The trailing update of each panel goes through the GEMM (scratch: n * nb of T); false: \
       the GEMM had no memory for its panels. */                                                        \
    static bool tensor__lu_##sfx(T *a, int64_t n, int32_t *piv, T *scratch) {                           \
        int64_t nb = n >= TENSOR__LA_BLOCK_MIN && scratch ? TENSOR__LA_NB : n;                          \
        for (int64_t k0 = 0; k0 < n; k0 += nb) {                                                         \
            int64_t kb = n - k0 < nb ? n - k0 : nb, k1 = k0 + kb;                                        \
            for (int64_t j = k0; j < k1; j++) {                                                          \
                int64_t p = j;                                                                           \
                T best = ABS(a[j * n + j]);                                                              \
                for (int64_t i = j + 1; i < n; i++)                                                      \
                    if (ABS(a[i * n + j]) > best) { best = ABS(a[i * n + j]); p = i; }                   \
                piv[j] = (int32_t)(p + 1);                                                               \
                if (p != j)                                                                              \
                    for (int64_t c = 0; c < n; c++) { T t_ = a[j * n + c]; a[j * n + c] = a[p * n + c]; a[p * n + c] = t_; } \
                T d = a[j * n + j];                                                                      \
                if (d != 0)                                                                              \
                    for (int64_t i = j + 1; i < n; i++) a[i * n + j] /= d;                               \
                for (int64_t i = j + 1; i < n; i++) {                                                    \
                    T l = a[i * n + j];                                                                  \
                    T *ri = a + i * n;                                                                   \
                    const T *rj = a + j * n;                                                             \
                    for (int64_t c = j + 1; c < k1; c++) ri[c] -= l * rj[c];                             \
                }                                                                                        \
            }                                                                                            \
            if (k1 >= n) break;                                                                          \
            /* U12 = L11^-1 A12 (unit lower) */                                                          \
            for (int64_t j = k0 + 1; j < k1; j++)                                                        \
                for (int64_t p = k0; p < j; p++) {                                                       \
                    T l = a[j * n + p];                                                                  \
                    T *rj = a + j * n;                                                                   \
                    const T *rp = a + p * n;                                                             \
                    for (int64_t c = k1; c < n; c++) rj[c] -= l * rp[c];                                 \
                }                                                                                        \
            /* A22 += (-L21) U12 */                                                                      \
            int64_t m = n - k1;                                                                          \
            for (int64_t i = 0; i < m; i++)                                                              \
                for (int64_t p = 0; p < kb; p++) scratch[i * kb + p] = -a[(k1 + i) * n + k0 + p];        \
            if (!tensor__gemm_strided(TENSOR_##sfx, TENSOR_##sfx, m, m, kb, scratch, kb, 1, a + k0 * n + k1, n, 1, \
                                      a + k1 * n + k1, n, 1, true)) return false;                         \
        }                                                                                                \
        return true;                                                                                     \
    }                                                                                                    \
    /* Cholesky (lower) of a in place, reading its lower triangle; 0, or the order of the first       \
       leading minor that is not positive-definite (its diagonal entry set to NaN); -1: the GEMM had    \
       no memory. The strict upper triangle is zeroed. */                                               \
    static int64_t tensor__cholesky_##sfx(T *a, int64_t n, T *scratch) {                                \
        int64_t nb = n >= TENSOR__LA_BLOCK_MIN && scratch ? TENSOR__LA_NB : n, bad = 0;                 \
        for (int64_t k0 = 0; k0 < n && !bad; k0 += nb) {                                                 \
            int64_t kb = n - k0 < nb ? n - k0 : nb, k1 = k0 + kb;                                        \
            for (int64_t j = k0; j < k1; j++) {                                                          \
                const T *rj = a + j * n;                                                                 \
                T d = rj[j];                                                                             \
                for (int64_t p = k0; p < j; p++) d -= rj[p] * rj[p];                                     \
                if (!(d > 0)) { a[j * n + j] = (T)NAN; bad = j + 1; break; }                             \
                d = SQRT(d);                                                                             \
                a[j * n + j] = d;                                                                        \
                for (int64_t i = j + 1; i < n; i++) {                                                    \
                    const T *ri = a + i * n;                                                             \
                    T s = ri[j];                                                                         \
                    for (int64_t p = k0; p < j; p++) s -= ri[p] * rj[p];                                 \
                    a[i * n + j] = s / d;                                                                \
                }                                                                                        \
            }                                                                                            \
            if (bad || k1 >= n) break;                                                                   \
            /* A22 += (-L21) L21^T (both triangles updated; only the lower one is read) */               \
            int64_t m = n - k1;                                                                          \
            for (int64_t i = 0; i < m; i++)                                                              \
                for (int64_t p = 0; p < kb; p++) scratch[i * kb + p] = -a[(k1 + i) * n + k0 + p];        \
            if (!tensor__gemm_strided(TENSOR_##sfx, TENSOR_##sfx, m, m, kb, scratch, kb, 1, a + k1 * n + k0, 1, n, \
                                      a + k1 * n + k1, n, 1, true)) return -1;                            \
        }                                                                                                \
        for (int64_t i = 0; i < n; i++)                                                                  \
            for (int64_t c = i + 1; c < n; c++) a[i * n + c] = 0;                                        \
        return bad;                                                                                      \
    }                                                                                                    \
    /* x (n x k) = A^-1 x for triangular A (n x n); division by a zero diagonal gives inf/NaN. */       \
    static void tensor__trsm_##sfx(const T *a, T *x, int64_t n, int64_t k, bool upper, bool unit) {     \
        for (int64_t s = 0; s < n; s++) {                                                                \
            int64_t i = upper ? n - 1 - s : s;                                                           \
            T *xi = x + i * k;                                                                           \
            int64_t p0 = upper ? i + 1 : 0, p1 = upper ? n : i;                                          \
            for (int64_t p = p0; p < p1; p++) {                                                          \
                T l = a[i * n + p];                                                                      \
                const T *xp = x + p * k;                                                                 \
                for (int64_t c = 0; c < k; c++) xi[c] -= l * xp[c];                                      \
            }                                                                                            \
            if (!unit) {                                                                                 \
                T d = a[i * n + i];                                                                      \
                for (int64_t c = 0; c < k; c++) xi[c] /= d;                                              \
            }                                                                                            \
        }                                                                                                \
    }
TENSOR__DEFINE_LA(F32, float, fabsf, sqrtf)
TENSOR__DEFINE_LA(F64, double, fabs, sqrt)

static void tensor__la_lu_range(int64_t lo, int64_t hi, void *ctx) {
    tensor__la_job *j = (tensor__la_job *)ctx;
    int64_t n = j->n, esz = (int64_t)tensor__dtype_sizes[j->dt];
    void *scratch = NULL;
    if (n >= TENSOR__LA_BLOCK_MIN && !(scratch = tensor__alloc_aligned((size_t)(n * TENSOR__LA_NB * esz)))) { __atomic_store_n(&j->oom, 1, __ATOMIC_RELAXED); return; }
    for (int64_t b = lo; b < hi; b++) {
        char *a = j->out + b * n * n * esz;
        memcpy(a, j->in + b * n * n * esz, (size_t)(n * n * esz));
        bool ok = j->dt == TENSOR_F32 ? tensor__lu_F32((float *)(void *)a, n, j->piv + b * n, (float *)scratch)
                                      : tensor__lu_F64((double *)(void *)a, n, j->piv + b * n, (double *)scratch);
        if (!ok) __atomic_store_n(&j->oom, 1, __ATOMIC_RELAXED);
    }
    if (scratch) tensor__free_aligned(scratch);
}
static void tensor__la_cholesky_range(int64_t lo, int64_t hi, void *ctx) {
    tensor__la_job *j = (tensor__la_job *)ctx;
    int64_t n = j->n, esz = (int64_t)tensor__dtype_sizes[j->dt];
    void *scratch = NULL;
    if (n >= TENSOR__LA_BLOCK_MIN && !(scratch = tensor__alloc_aligned((size_t)(n * TENSOR__LA_NB * esz)))) { __atomic_store_n(&j->oom, 1, __ATOMIC_RELAXED); return; }
    for (int64_t b = lo; b < hi; b++) {
        char *a = j->out + b * n * n * esz;
        memcpy(a, j->in + b * n * n * esz, (size_t)(n * n * esz));
        int64_t r = j->dt == TENSOR_F32 ? tensor__cholesky_F32((float *)(void *)a, n, (float *)scratch)
                                        : tensor__cholesky_F64((double *)(void *)a, n, (double *)scratch);
        if (r < 0) __atomic_store_n(&j->oom, 1, __ATOMIC_RELAXED);
    }
    if (scratch) tensor__free_aligned(scratch);
}
static void tensor__la_trsm_range(int64_t lo, int64_t hi, void *ctx) {
    tensor__la_job *j = (tensor__la_job *)ctx;
    int64_t n = j->n, k = j->k, esz = (int64_t)tensor__dtype_sizes[j->dt];
    for (int64_t b = lo; b < hi; b++) {
        char *x = j->out + b * n * k * esz;
        memcpy(x, j->in2 + b * n * k * esz, (size_t)(n * k * esz));
        const char *a = j->in + b * n * n * esz;
        if (j->dt == TENSOR_F32) tensor__trsm_F32((const float *)(const void *)a, (float *)(void *)x, n, k, j->upper, j->unit);
        else tensor__trsm_F64((const double *)(const void *)a, (double *)(void *)x, n, k, j->upper, j->unit);
    }
}
/* Matrices per task for work a b c per matrix (saturating: an empty batch of huge matrices
   computes this too, and its product may not fit). */
static int64_t tensor__la_grain(int64_t a, int64_t b, int64_t c) {
    int64_t work = tensor__work_mul(tensor__work_mul(a, b), c);
    return work >= 32768 ? 1 : 32768 / (work + 1) + 1;
}

/* in[0] A contiguous [..., n, n]; out LU (same shape), out2 pivots i32 [..., n] */
static int tensor__cpu_linalg_lu_factor(tensor__call *c) {
    tensor__la_job j;
    memset(&j, 0, sizeof j);
    tensor *a = c->in[0];
    j.dt = a->dtype;
    j.n = a->shape[a->ndim - 1];
    j.batches = j.n ? tensor__numel_of(a->ndim, a->shape) / (j.n * j.n) : 0;
    j.in = tensor__data(a);
    j.out = tensor__data(c->out);
    j.piv = (int32_t *)(void *)tensor__data(c->out2);
    tensor__parallel_for(j.batches, tensor__la_grain(j.n, j.n, j.n), tensor__la_lu_range, &j);
    if (j.oom) { tensor__fail(c->fn, "out of memory allocating LU scratch"); return 1; }
    return 0;
}
/* in[0] A contiguous [..., n, n]; out L */
static int tensor__cpu_linalg_cholesky(tensor__call *c) {
    tensor__la_job j;
    memset(&j, 0, sizeof j);
    tensor *a = c->in[0];
    j.dt = a->dtype;
    j.n = a->shape[a->ndim - 1];
    j.batches = j.n ? tensor__numel_of(a->ndim, a->shape) / (j.n * j.n) : 0;
    j.in = tensor__data(a);
    j.out = tensor__data(c->out);
    tensor__parallel_for(j.batches, tensor__la_grain(j.n, j.n, j.n), tensor__la_cholesky_range, &j);
    if (j.oom) { tensor__fail(c->fn, "out of memory allocating Cholesky scratch"); return 1; }
    return 0;
}
/* in[0] A contiguous [..., n, n], in[1] B contiguous [..., n, k] (the same batch dims); ip[0]
   upper, ip[1] unitriangular; out X = A^-1 B */
static int tensor__cpu_linalg_solve_triangular(tensor__call *c) {
    tensor__la_job j;
    memset(&j, 0, sizeof j);
    tensor *a = c->in[0], *b = c->in[1];
    j.dt = a->dtype;
    j.n = a->shape[a->ndim - 1];
    j.k = b->shape[b->ndim - 1];
    j.batches = j.n && j.k ? tensor__numel_of(b->ndim, b->shape) / (j.n * j.k) : 0;
    j.in = tensor__data(a);
    j.in2 = tensor__data(b);
    j.out = tensor__data(c->out);
    j.upper = c->ip[0] != 0;
    j.unit = c->ip[1] != 0;
    tensor__parallel_for(j.batches, tensor__la_grain(j.n, j.n, j.k), tensor__la_trsm_range, &j);
    return 0;
}

/* ---- helpers of the front-ends (each runs inside the caller's scope) ---- */

/* A scope of the composite's own: its intermediates are freed at tensor_scope_end, the result is
   tensor_keep'd out of it. */
#define TENSOR__LA_BEGIN(fn) do { if (!tensor__scope_push(fn)) return NULL; } while (0)
static tensor *tensor__la_end(tensor *r) {
    if (r) tensor_keep(r);
    tensor_scope_end();
    return r;
}

/* t's values on the host as a contiguous CPU tensor outside the graph (a new handle). */
static tensor *tensor__la_host(tensor *t) {
    if (!t) return NULL;
    tensor *d = tensor_detach(t);
    tensor *h = d ? tensor_to_device(d, TENSOR_CPU) : NULL;
    tensor_free(d);
    tensor *r = h ? tensor_contiguous(h) : NULL;
    tensor_free(h);
    return r;
}

/* The first (batch, index) where the diagonal of the matrices of m is zero (LU's U) or not
   positive (Cholesky's L, whose kernel leaves a NaN there): true if found. False too when the
   values cannot be read (then *err is set). */
static bool tensor__la_first_bad(tensor *m, bool chol, int64_t *batch, int64_t *index, bool *err) {
    *err = false;
    tensor *d = tensor_diagonal(m, 0, -2, -1);
    tensor *h = tensor__la_host(d);
    tensor_free(d);
    if (!h) { *err = true; return false; }
    int64_t n = h->ndim ? h->shape[h->ndim - 1] : 0, total = tensor__numel_of(h->ndim, h->shape);
    const char *p = tensor__data(h);
    bool found = false;
    for (int64_t i = 0; i < total && !found; i++) {
        double v = tensor__load_f64(p + i * (int64_t)tensor__dtype_sizes[h->dtype], h->dtype);
        if (chol ? !(v > 0) : v == 0) { found = true; *batch = i / n; *index = i % n; }
    }
    tensor_free(h);
    return found;
}
/* "(Batch element b): " where the input is batched, as PyTorch writes it */
static void tensor__la_batch_prefix(char *buf, size_t size, const tensor *a, int64_t b) {
    if (a->ndim > 2) snprintf(buf, size, "(Batch element %lld): ", (long long)b);
    else buf[0] = 0;
}

/* The row permutation of pivots (i32 [..., n], 1-based sequential swaps) as i64 indices on the
   device of pivots: perm[i] is the row of A that is row i of L U (LU = P^T A); inverse: the
   inverse permutation. NULL on an error (an out-of-range pivot included). */
static tensor *tensor__la_perm(const char *fn, tensor *pivots, bool inverse) {
    if (!pivots) return NULL;
    tensor *h = tensor__la_host(pivots);
    if (!h) return NULL;
    int64_t n = h->ndim ? h->shape[h->ndim - 1] : 0, total = tensor__numel_of(h->ndim, h->shape), batches = n ? total / n : 0;
    tensor *r = tensor__new(fn, h->ndim, h->shape, TENSOR_I64, TENSOR_CPU);
    int64_t *tmp = r ? (int64_t *)TENSOR__MALLOC(sizeof(int64_t) * (size_t)(n ? n : 1)) : NULL;
    if (r && !tmp) tensor__fail(fn, "out of memory");
    bool ok = tmp != NULL;
    const char *pv = tensor__data(h);
    int64_t *out = r ? (int64_t *)(void *)tensor__data(r) : NULL;
    for (int64_t b = 0; b < batches && ok; b++) {
        int64_t *perm = inverse ? tmp : out + b * n;
        for (int64_t i = 0; i < n; i++) perm[i] = i;
        for (int64_t i = 0; i < n; i++) {
            int64_t p = tensor__load_i64(pv + (b * n + i) * (int64_t)tensor__dtype_sizes[h->dtype], h->dtype) - 1;
            if (p < i || p >= n) { tensor__fail(fn, "pivots must hold values in [i + 1, n] at position i (1-based), got %lld at %lld", (long long)p + 1, (long long)i); ok = false; break; }
            int64_t t = perm[i]; perm[i] = perm[p]; perm[p] = t;
        }
        if (inverse && ok)
            for (int64_t i = 0; i < n; i++) out[b * n + tmp[i]] = i;
    }
    if (tmp) TENSOR_FREE(tmp);
    tensor_free(h);
    if (!ok) { tensor_free(r); return NULL; }
    if (pivots->storage->device == TENSOR_CPU) return r;
    tensor *dev = tensor_to_device(r, pivots->storage->device);
    tensor_free(r);
    return dev;
}
/* The sign of the permutation of pivots ([..., n] -> [...], +-1 in dtype dt) on pivots' device. */
static tensor *tensor__la_perm_sign(const char *fn, tensor *pivots, tensor_dtype dt) {
    if (!pivots) return NULL;
    tensor *h = tensor__la_host(pivots);
    if (!h) return NULL;
    int64_t n = h->shape[h->ndim - 1], total = tensor__numel_of(h->ndim, h->shape), batches = tensor__numel_of(h->ndim - 1, h->shape);
    tensor *r = tensor__new(fn, h->ndim - 1, h->shape, dt, TENSOR_CPU);
    const char *pv = tensor__data(h);
    for (int64_t b = 0; r && b < batches; b++) {
        int s = 1;
        for (int64_t i = 0; i < n && total; i++)
            if (tensor__load_i64(pv + (b * n + i) * (int64_t)tensor__dtype_sizes[h->dtype], h->dtype) - 1 != i) s = -s;
        tensor__store_f64(tensor__data(r) + b * (int64_t)tensor__dtype_sizes[dt], dt, (double)s);
    }
    tensor_free(h);
    if (!r || pivots->storage->device == TENSOR_CPU) return r;
    tensor *dev = tensor_to_device(r, pivots->storage->device);
    tensor_free(r);
    return dev;
}

/* m's rows permuted: out[..., i, :] = m[..., idx[..., i], :] (idx i64 [..., n] with m's batch dims) */
static tensor *tensor__la_rows(tensor *m, tensor *idx) {
    if (!m || !idx) return NULL;
    int64_t shape[TENSOR_MAX_DIMS];
    for (int d = 0; d < m->ndim; d++) shape[d] = m->shape[d];
    tensor *i2 = tensor_unsqueeze(idx, -1);
    tensor *ie = i2 ? tensor_expand(i2, m->ndim, shape) : NULL;
    tensor_free(i2);
    tensor *r = ie ? tensor_gather(m, -2, ie) : NULL;
    tensor_free(ie);
    return r;
}

/* The LU kernel through the dispatcher: A [..., n, n] float; pivots (a new handle) always set on
   success. check: fail with lu_factor's message where U has a zero on its diagonal. */
static tensor *tensor__la_lu(const char *fn, tensor *A, tensor **pivots, bool check) {
    tensor *ac = A ? tensor_contiguous(A) : NULL;
    if (!ac) return NULL;
    int64_t ps[TENSOR_MAX_DIMS];
    for (int d = 0; d < A->ndim - 1; d++) ps[d] = A->shape[d];
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_linalg_lu_factor);
    c.n_in = 1;
    c.in[0] = ac;
    c.out = tensor__new(fn, A->ndim, A->shape, A->dtype, A->storage->device);
    c.out2 = c.out ? tensor__new(fn, A->ndim - 1, ps, TENSOR_I32, A->storage->device) : NULL;
    if (!c.out2) { tensor_free(c.out); tensor_free(ac); return NULL; }
    tensor *piv = tensor_detach(c.out2), *lu = NULL;
    if (piv) lu = tensor__dispatch(&c);
    else { tensor_free(c.out); tensor_free(c.out2); }
    tensor_free(ac);
    if (!lu) { tensor_free(piv); return NULL; }
    if (check) {
        int64_t b = 0, k = 0;
        bool err;
        if (tensor__la_first_bad(lu, false, &b, &k, &err) || err) {
            if (!err) {
                char pre[64];
                tensor__la_batch_prefix(pre, sizeof pre, A, b);
                tensor__fail(fn, "%sU[%lld,%lld] is zero and using it on lu_solve would result in a division by zero", pre, (long long)k + 1, (long long)k + 1);
            }
            tensor_free(lu);
            tensor_free(piv);
            return NULL;
        }
    }
    *pivots = piv;
    return lu;
}

TENSOR_API tensor *tensor_linalg_lu_factor(tensor *A, tensor **pivots) {
    const char *fn = "tensor_linalg_lu_factor";
    if (pivots) *pivots = NULL;
    TENSOR__CHECK_ARG(fn, A);
    if (!tensor__la_float(fn, "A", A) || !tensor__la_square(fn, "A", A)) return NULL;
    tensor *piv = NULL;
    tensor *lu = tensor__la_lu(fn, A, &piv, true);
    if (!lu) return NULL;
    if (pivots) *pivots = piv;
    else tensor_free(piv);
    return lu;
}

/* The triangular solve kernel: X = A^-1 B (left), A [..., n, n], B [..., n, k], batch dims
   broadcast; both made contiguous at the broadcast batch shape. */
static tensor *tensor__la_trsm(const char *fn, tensor *A, tensor *B, bool upper, bool unit) {
    if (!A || !B) return NULL; /* an earlier step failed (its message kept) */
    int nb = 0;
    int64_t bs[TENSOR_MAX_DIMS], sa[TENSOR_MAX_DIMS], sb[TENSOR_MAX_DIMS];
    if (!tensor__broadcast_shapes(fn, A->ndim - 2, A->shape, B->ndim - 2, B->shape, &nb, bs)) return NULL;
    int64_t n = A->shape[A->ndim - 1], k = B->shape[B->ndim - 1];
    for (int d = 0; d < nb; d++) sa[d] = sb[d] = bs[d];
    sa[nb] = sa[nb + 1] = n;
    sb[nb] = n;
    sb[nb + 1] = k;
    tensor *ae = tensor_expand(A, nb + 2, sa), *be = tensor_expand(B, nb + 2, sb);
    tensor *ac = ae ? tensor_contiguous(ae) : NULL, *bc = be ? tensor_contiguous(be) : NULL;
    tensor_free(ae);
    tensor_free(be);
    tensor *r = NULL;
    if (ac && bc) {
        tensor__call c;
        tensor__call_init(&c, TENSOR_OP_linalg_solve_triangular);
        c.n_in = 2;
        c.in[0] = ac;
        c.in[1] = bc;
        c.ip[0] = upper;
        c.ip[1] = unit;
        c.out = tensor__new(fn, nb + 2, sb, A->dtype, A->storage->device);
        r = c.out ? tensor__dispatch(&c) : NULL;
    }
    tensor_free(ac);
    tensor_free(bc);
    return r;
}

TENSOR_API tensor *tensor_linalg_solve_triangular(tensor *A, tensor *B, bool upper, bool left, bool unitriangular) {
    const char *fn = "tensor_linalg_solve_triangular";
    TENSOR__CHECK_ARG(fn, A);
    TENSOR__CHECK_ARG(fn, B);
    tensor *ins[2] = {A, B};
    if (!tensor__same_device(fn, 2, ins)) return NULL;
    if (B->ndim < 2) return tensor__fail(fn, "the input tensor B must have at least 2 dimensions, got shape %s", tensor__shape_of(B));
    if (!tensor__la_float(fn, "A", A) || !tensor__la_square(fn, "A", A)) return NULL;
    if (A->dtype != B->dtype)
        return tensor__fail(fn, "expected A and B to have the same dtype, but found A of type %s and B of type %s instead", tensor__dtype_names[A->dtype], tensor__dtype_names[B->dtype]);
    int64_t n = A->shape[A->ndim - 1], bn = B->shape[B->ndim - (left ? 2 : 1)];
    if (bn != n)
        return tensor__fail(fn, "incompatible shapes of A and B for the equation %s (%lldx%lld and %lldx%lld)", left ? "AX = B" : "XA = B",
                            (long long)n, (long long)n, (long long)B->shape[B->ndim - 2], (long long)B->shape[B->ndim - 1]);
    if (left) return tensor__la_trsm(fn, A, B, upper, unitriangular);
    /* X A = B  <=>  A^T X^T = B^T */
    tensor *at = tensor_transpose(A, -1, -2), *bt = tensor_transpose(B, -1, -2);
    tensor *xt = at && bt ? tensor__la_trsm(fn, at, bt, !upper, unitriangular) : NULL;
    tensor_free(at);
    tensor_free(bt);
    tensor *x = xt ? tensor_transpose(xt, -1, -2) : NULL;
    tensor_free(xt);
    return x;
}

/* The Cholesky kernel through the dispatcher (lower factor); check: fail with PyTorch's message. */
static tensor *tensor__la_cholesky(const char *fn, tensor *A, bool check) {
    tensor *ac = A ? tensor_contiguous(A) : NULL;
    if (!ac) return NULL;
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_linalg_cholesky);
    c.n_in = 1;
    c.in[0] = ac;
    c.out = tensor__new(fn, A->ndim, A->shape, A->dtype, A->storage->device);
    tensor *l = c.out ? tensor__dispatch(&c) : NULL;
    tensor_free(ac);
    if (!l || !check) return l;
    int64_t b = 0, k = 0;
    bool err;
    if (tensor__la_first_bad(l, true, &b, &k, &err) || err) {
        if (!err) {
            char pre[64];
            tensor__la_batch_prefix(pre, sizeof pre, A, b);
            tensor__fail(fn, "%sthe factorization could not be completed because the input is not positive-definite (the leading minor of order %lld is not positive-definite)",
                         pre, (long long)k + 1);
        }
        tensor_free(l);
        return NULL;
    }
    return l;
}

TENSOR_API tensor *tensor_linalg_cholesky(tensor *A, bool upper) {
    const char *fn = "tensor_linalg_cholesky";
    TENSOR__CHECK_ARG(fn, A);
    if (!tensor__la_float(fn, "A", A) || !tensor__la_square(fn, "A", A)) return NULL;
    tensor *l = tensor__la_cholesky(fn, A, true);
    if (!l || !upper) return l;
    tensor *u = tensor_transpose(l, -1, -2);
    tensor_free(l);
    return u;
}

/* X from LU, pivots and B [..., n, k] (left, batch dims broadcast): A X = B or A^T X = B. */
static tensor *tensor__la_lu_solve_left(const char *fn, tensor *LU, tensor *pivots, tensor *B, bool adjoint) {
    int nb = 0;
    int64_t bs[TENSOR_MAX_DIMS];
    if (!tensor__broadcast_shapes(fn, LU->ndim - 2, LU->shape, B->ndim - 2, B->shape, &nb, bs)) return NULL;
    int64_t n = LU->shape[LU->ndim - 1], k = B->shape[B->ndim - 1];
    bs[nb] = n;
    bs[nb + 1] = k;
    tensor *be = tensor_expand(B, nb + 2, bs);
    bs[nb + 1] = n;
    tensor *lue = tensor_expand(LU, nb + 2, bs);
    tensor *pe = tensor_expand(pivots, nb + 1, bs);
    if (!be || !lue || !pe) return NULL;
    if (!adjoint) { /* X = U^-1 L^-1 P^T B */
        tensor *perm = tensor__la_perm(fn, pe, false);
        tensor *pb = perm ? tensor__la_rows(be, perm) : NULL;
        tensor *y = pb ? tensor_linalg_solve_triangular(lue, pb, false, true, true) : NULL;
        return y ? tensor_linalg_solve_triangular(lue, y, true, true, false) : NULL;
    }
    /* A^T = U^T L^T P^T: X = P L^-T U^-T B */
    tensor *lt = tensor_transpose(lue, -1, -2);
    tensor *y = lt ? tensor_linalg_solve_triangular(lt, be, false, true, false) : NULL;
    tensor *z = y ? tensor_linalg_solve_triangular(lt, y, true, true, true) : NULL;
    tensor *inv = z ? tensor__la_perm(fn, pe, true) : NULL;
    return inv ? tensor__la_rows(z, inv) : NULL;
}

TENSOR_API tensor *tensor_linalg_lu_solve(tensor *LU, tensor *pivots, tensor *B, bool left, bool adjoint) {
    const char *fn = "tensor_linalg_lu_solve";
    TENSOR__CHECK_ARG(fn, LU);
    TENSOR__CHECK_ARG(fn, pivots);
    TENSOR__CHECK_ARG(fn, B);
    tensor *ins[3] = {LU, pivots, B};
    if (!tensor__same_device(fn, 3, ins)) return NULL;
    if (!tensor__la_float(fn, "LU", LU) || !tensor__la_square(fn, "LU", LU)) return NULL;
    if (B->ndim < 2) return tensor__fail(fn, "the input tensor B must have at least 2 dimensions, got shape %s", tensor__shape_of(B));
    if (LU->dtype != B->dtype)
        return tensor__fail(fn, "expected LU and B to have the same dtype, but found LU of type %s and B of type %s instead", tensor__dtype_names[LU->dtype], tensor__dtype_names[B->dtype]);
    if (pivots->dtype != TENSOR_I32) return tensor__fail(fn, "expected pivots to be int32, got %s", tensor__dtype_names[pivots->dtype]);
    int64_t n = LU->shape[LU->ndim - 1];
    if (pivots->ndim != LU->ndim - 1 || pivots->shape[pivots->ndim - 1] != n)
        return tensor__fail(fn, "pivots of shape %s do not match LU of shape %s (expected LU's shape without its last dim)", tensor__shape_of(pivots), tensor__shape_of(LU));
    for (int d = 0; d < pivots->ndim - 1; d++)
        if (pivots->shape[d] != LU->shape[d]) return tensor__fail(fn, "pivots of shape %s do not match LU of shape %s (expected LU's shape without its last dim)", tensor__shape_of(pivots), tensor__shape_of(LU));
    int64_t bn = B->shape[B->ndim - (left ? 2 : 1)];
    if (bn != n)
        return tensor__fail(fn, "incompatible shapes of A and B for the equation %s (%lldx%lld and %lldx%lld)", left ? "AX = B" : "XA = B",
                            (long long)n, (long long)n, (long long)B->shape[B->ndim - 2], (long long)B->shape[B->ndim - 1]);
    TENSOR__LA_BEGIN(fn);
    tensor *x;
    if (left) x = tensor__la_lu_solve_left(fn, LU, pivots, B, adjoint);
    else { /* X A = B  <=>  A^T X^T = B^T */
        tensor *bt = tensor_transpose(B, -1, -2);
        tensor *xt = bt ? tensor__la_lu_solve_left(fn, LU, pivots, bt, !adjoint) : NULL;
        x = xt ? tensor_transpose(xt, -1, -2) : NULL;
    }
    return tensor__la_end(x);
}

/* solve's and inv's common part: X for A X = B (left) or X A = B, B a matrix; msg_inv: inv's
   message for a singular A. */
static tensor *tensor__la_solve(const char *fn, tensor *A, tensor *B, bool left, bool msg_inv) {
    tensor *piv = NULL;
    tensor *lu = tensor__la_lu(fn, A, &piv, false);
    if (!lu) return NULL;
    int64_t b = 0, k = 0;
    bool err;
    if (tensor__la_first_bad(lu, false, &b, &k, &err) || err) {
        if (!err) {
            char pre[64];
            tensor__la_batch_prefix(pre, sizeof pre, A, b);
            if (msg_inv) tensor__fail(fn, "%sthe diagonal element %lld is zero, the inversion could not be completed because the input matrix is singular", pre, (long long)k + 1);
            else tensor__fail(fn, "%sthe solver failed because the input matrix is singular", pre);
        }
        return NULL;
    }
    if (left) return tensor__la_lu_solve_left(fn, lu, piv, B, false);
    tensor *bt = tensor_transpose(B, -1, -2);
    tensor *xt = bt ? tensor__la_lu_solve_left(fn, lu, piv, bt, true) : NULL;
    return xt ? tensor_transpose(xt, -1, -2) : NULL;
}

TENSOR_API tensor *tensor_linalg_solve(tensor *A, tensor *B, bool left) {
    const char *fn = "tensor_linalg_solve";
    TENSOR__CHECK_ARG(fn, A);
    TENSOR__CHECK_ARG(fn, B);
    tensor *ins[2] = {A, B};
    if (!tensor__same_device(fn, 2, ins)) return NULL;
    if (!tensor__la_float(fn, "A", A) || !tensor__la_square(fn, "A", A)) return NULL;
    if (A->dtype != B->dtype)
        return tensor__fail(fn, "expected A and B to have the same dtype, but found A of type %s and B of type %s instead", tensor__dtype_names[A->dtype], tensor__dtype_names[B->dtype]);
    if (B->ndim < 1) return tensor__fail(fn, "the input tensor B must have at least 1 dimension, got shape %s", tensor__shape_of(B));
    /* torch.linalg.solve: B is a batch of vectors when it is 1-D or A's shape without its last dim */
    bool vec = B->ndim == 1;
    if (!vec && left && B->ndim == A->ndim - 1) {
        vec = true;
        for (int d = 0; d < B->ndim; d++) vec &= B->shape[d] == A->shape[d];
    }
    if (vec && !left) return tensor__fail(fn, "the vector case (B of shape %s) needs left = true", tensor__shape_of(B));
    int64_t n = A->shape[A->ndim - 1];
    if (!vec && B->ndim < 2) return tensor__fail(fn, "the input tensor B must have at least 2 dimensions, got shape %s", tensor__shape_of(B));
    int64_t bn = vec ? B->shape[B->ndim - 1] : B->shape[B->ndim - (left ? 2 : 1)];
    if (bn != n)
        return tensor__fail(fn, "incompatible shapes of A and B for the equation %s (%lldx%lld and %lldx%lld)", left ? "AX = B" : "XA = B",
                            (long long)n, (long long)n, (long long)bn, vec ? 1LL : (long long)B->shape[B->ndim - (left ? 1 : 2)]);
    int nbd = 0;
    int64_t bs[TENSOR_MAX_DIMS];
    if (!tensor__broadcast_shapes(fn, A->ndim - 2, A->shape, B->ndim - (vec ? 1 : 2), B->shape, &nbd, bs)) return NULL;
    TENSOR__LA_BEGIN(fn);
    tensor *b2 = vec ? tensor_unsqueeze(B, -1) : B;
    tensor *x = b2 ? tensor__la_solve(fn, A, b2, left, false) : NULL;
    if (x && vec) x = tensor_squeeze(x, -1);
    return tensor__la_end(x);
}

TENSOR_API tensor *tensor_linalg_inv(tensor *A) {
    const char *fn = "tensor_linalg_inv";
    TENSOR__CHECK_ARG(fn, A);
    if (!tensor__la_float(fn, "A", A) || !tensor__la_square(fn, "A", A)) return NULL;
    TENSOR__LA_BEGIN(fn);
    /* an empty batch solves for an empty right side: no n x n identity */
    tensor *eye = tensor__numel_of(A->ndim, A->shape) == 0 ? tensor_zeros_like(A) : tensor_eye(A->shape[A->ndim - 1], A->dtype);
    eye = tensor__on(eye, A->storage->device);
    return tensor__la_end(eye ? tensor__la_solve(fn, A, eye, true, true) : NULL);
}

/* det and slogdet: the LU of A, the diagonal of U and the sign of the permutation. */
static bool tensor__la_det_parts(const char *fn, tensor *A, tensor **diag, tensor **psign) {
    tensor *piv = NULL;
    tensor *lu = tensor__la_lu(fn, A, &piv, false);
    if (!lu) return false;
    *diag = tensor_diagonal(lu, 0, -2, -1);
    *psign = *diag ? tensor__la_perm_sign(fn, piv, A->dtype) : NULL;
    return *psign != NULL;
}

TENSOR_API tensor *tensor_linalg_det(tensor *A) {
    const char *fn = "tensor_linalg_det";
    TENSOR__CHECK_ARG(fn, A);
    if (!tensor__la_float(fn, "A", A) || !tensor__la_square(fn, "A", A)) return NULL;
    TENSOR__LA_BEGIN(fn);
    tensor *d = NULL, *s = NULL;
    tensor *r = tensor__la_det_parts(fn, A, &d, &s) ? tensor_mul(tensor_prod(d, -1, false), s) : NULL;
    return tensor__la_end(r);
}

TENSOR_API tensor *tensor_linalg_slogdet(tensor *A, tensor **logabsdet) {
    const char *fn = "tensor_linalg_slogdet";
    if (logabsdet) *logabsdet = NULL;
    TENSOR__CHECK_ARG(fn, A);
    if (!tensor__la_float(fn, "A", A) || !tensor__la_square(fn, "A", A)) return NULL;
    TENSOR__LA_BEGIN(fn);
    tensor *d = NULL, *s = NULL;
    tensor *sign = NULL, *lad = NULL;
    if (tensor__la_det_parts(fn, A, &d, &s)) {
        sign = tensor_mul(tensor_prod(tensor_sign(d), -1, false), s);
        lad = logabsdet ? tensor_sum(tensor_log(tensor_abs(d)), -1, false) : NULL;
    }
    if (!sign || (logabsdet && !lad)) return tensor__la_end(NULL);
    if (logabsdet) *logabsdet = tensor_keep(lad);
    return tensor__la_end(sign);
}
