// >>linalg-qr-eigh ------------------------------------------------------------------------------
/* QR and the symmetric eigenproblem, f32 and f64, batched over the leading dims, with our own
   kernels (no LAPACK):
   - linalg_qr: Householder QR of any m x n matrix (tall or wide) with LAPACK's reflectors (dlarfg:
     beta = -sign(alpha) ||x||, tau = (beta - alpha) / beta, so R's diagonal may be negative and the
     values are those of LAPACK's geqrf + orgqr, as PyTorch's); Q is accumulated backwards from the
     reflectors (orgqr). mode "reduced" (NULL): Q [m, k], R [k, n], k = min(m, n); "complete": Q
     [m, m], R [m, n]; "r": R only, Q an empty tensor [0] as PyTorch's.
   - linalg_eigh: Householder tridiagonalisation of the symmetric matrix the UPLO triangle gives
     ("L" (NULL) or "U"; the other triangle is not read), then the implicit QL algorithm with
     Wilkinson shifts on the tridiagonal matrix, the rotations accumulated into the eigenvectors;
     eigenvalues ascending. Eigenvector signs are not unique (PyTorch's are LAPACK's: compare
     A V = V diag(w), not V). No convergence after 60 sweeps for an eigenvalue (NaN input): PyTorch's
     error. linalg_eigvalsh runs the same kernel without the eigenvectors.
   The kernels read a contiguous A [..., m, n] and write one packed output per matrix, so one
   autograd node carries both results: qr: Q's m * kq values then R's kr * n (row-major); eigh:
   the n eigenvalues then V's n * n (eigvalsh: the eigenvalues only). The front-ends hand out views
   (narrow + reshape) of it, so the gradients of both outputs reach the node as one packed
   gradient (eigh without the eigenvectors asked for runs eigvalsh's kernel). The kernels work on
   transposed copies (a column of A is a contiguous row there) and run the batch on the thread
   pool. Derivatives (tensor_autograd.h) are PyTorch's, written with
   library ops: qr (reduced with m >= n): gA = (gQ + Q copyltu(M)) R^-T, M = R gR^T - gQ^T Q;
   wide (m < n): A = [X | Y], gY = Q gR2 and X's with gQ + Y gR2^T; eigh: gA = V (diag(gL) +
   skew(V^T gV) / E) V^T, E_ij = w_j - w_i (inf for repeated eigenvalues where skew(V^T gV) is not
   0, as PyTorch's); eigvalsh: V diag(gL) V^T. */

#define TENSOR__EIGH_MAX_ITER 60

typedef struct {
    tensor_dtype dt;
    int64_t m, n, kq, kr, batches, work;   /* work: scratch elements per matrix */
    const char *in;
    char *out;
    bool upper, vectors;
    int oom;
} tensor__qe_job;

#define TENSOR__DEFINE_QR_EIGH(sfx, T, ABS, SQRT, HYPOT, COPYSIGN, EPS, TINY)                                 \
    /* LAPACK's dlarfg on x[0..len): x[0] becomes beta, x[1..] v's tail (v[0] = 1); returns tau (0:   \
       H = I, x unchanged). ||x[1..]|| is computed scaled (no overflow). */                              \
    static T tensor__house_##sfx(T *x, int64_t len) {                                                   \
        if (len <= 1) return 0;                                                                          \
        T scale = 0, ssq = 0;                                                                            \
        bool nan_ = false;                                                                               \
        for (int64_t i = 1; i < len; i++) { if (ABS(x[i]) > scale) scale = ABS(x[i]); nan_ |= x[i] != x[i]; } \
        if (nan_) scale = 1; /* NaN goes on into beta and tau */                                         \
        else if (scale == 0) return 0;                                                                   \
        for (int64_t i = 1; i < len; i++) { T t_ = x[i] / scale; ssq += t_ * t_; }                       \
        T xnorm = scale * SQRT(ssq), alpha = x[0];                                                       \
        T beta = -COPYSIGN(HYPOT(alpha, xnorm), alpha);                                                  \
        T tau = (beta - alpha) / beta, s = 1 / (alpha - beta);                                           \
        for (int64_t i = 1; i < len; i++) x[i] *= s;                                                     \
        x[0] = beta;                                                                                     \
        return tau;                                                                                      \
    }                                                                                                    \
    /* y[0..len) -= tau v (v . y), v = [1, v1[0..len-1)] */                                              \
    static void tensor__house_apply_##sfx(const T *v1, T tau, T *y, int64_t len) {                      \
        T s = y[0];                                                                                      \
        for (int64_t i = 1; i < len; i++) s += v1[i - 1] * y[i];                                         \
        s *= tau;                                                                                        \
        y[0] -= s;                                                                                       \
        for (int64_t i = 1; i < len; i++) y[i] -= s * v1[i - 1];                                         \
    }                                                                                                    \
    /* QR of a (m x n, row-major): q (m x kq, kq = 0: not formed), r (kr x n). w: n*m + k + kq*m. */    \
    static void tensor__qr_##sfx(const T *a, int64_t m, int64_t n, T *q, int64_t kq, T *r, int64_t kr, T *w) { \
        int64_t k = m < n ? m : n;                                                                       \
        T *at = w, *tau = w + n * m, *qt = tau + k;                                                      \
        for (int64_t i = 0; i < m; i++)                                                                  \
            for (int64_t j = 0; j < n; j++) at[j * m + i] = a[i * n + j];                                \
        for (int64_t j = 0; j < k; j++) {                                                                \
            T *cj = at + j * m + j;                                                                      \
            tau[j] = tensor__house_##sfx(cj, m - j);                                                     \
            if (tau[j] != 0)                                                                             \
                for (int64_t c = j + 1; c < n; c++) tensor__house_apply_##sfx(cj + 1, tau[j], at + c * m + j, m - j); \
        }                                                                                                \
        for (int64_t i = 0; i < kr; i++)                                                                 \
            for (int64_t c = 0; c < n; c++) r[i * n + c] = i <= c && i < k ? at[c * m + i] : (T)0;      \
        if (!kq) return;                                                                                 \
        for (int64_t c = 0; c < kq; c++)                                                                 \
            for (int64_t i = 0; i < m; i++) qt[c * m + i] = i == c ? (T)1 : (T)0;                        \
        for (int64_t j = k - 1; j >= 0; j--) {                                                           \
            if (tau[j] == 0) continue;                                                                   \
            const T *v1 = at + j * m + j + 1;                                                            \
            for (int64_t c = j; c < kq; c++) tensor__house_apply_##sfx(v1, tau[j], qt + c * m + j, m - j); \
        }                                                                                                \
        for (int64_t i = 0; i < m; i++)                                                                  \
            for (int64_t c = 0; c < kq; c++) q[i * kq + c] = qt[c * m + i];                              \
    }                                                                                                    \
    /* Eigenvalues (ascending, into wout) and, when vectors, eigenvectors (the columns of vout, n x n) \
       of the symmetric matrix whose lower (upper) triangle a holds. w: 2 n*n + 4 n. false: no         \
       convergence (wout and vout are NaN then). */                                                     \
    static bool tensor__eigh_##sfx(const T *a, int64_t n, bool upper, bool vectors, T *wout, T *vout, T *w) { \
        T *s = w, *z = w + n * n, *d = z + n * n, *e = d + n, *tau = e + n, *tmp = tau + n;              \
        for (int64_t i = 0; i < n; i++)                                                                  \
            for (int64_t j = 0; j <= i; j++) s[i * n + j] = s[j * n + i] = upper ? a[j * n + i] : a[i * n + j]; \
        /* tridiagonalise: H_k (on indices k+1..n-1) zeroes row / column k beyond k+1; row k keeps v */  \
        for (int64_t k = 0; k + 2 < n; k++) {                                                            \
            int64_t p = n - k - 1;                                                                       \
            T *x = s + k * n + k + 1;                                                                    \
            d[k] = s[k * n + k];                                                                         \
            T t = tau[k] = tensor__house_##sfx(x, p);                                                    \
            e[k] = x[0];                                                                                 \
            if (t == 0) continue;                                                                        \
            /* S22 -= v w^T + w v^T, w = y - (t/2)(y . v) v, y = t S22 v (v = [1, x[1..p)]) */           \
            T yv = 0;                                                                                    \
            for (int64_t i = 0; i < p; i++) {                                                            \
                const T *row = s + (k + 1 + i) * n + k + 1;                                              \
                T acc = row[0];                                                                          \
                for (int64_t j = 1; j < p; j++) acc += row[j] * x[j];                                    \
                tmp[i] = t * acc;                                                                        \
                yv += tmp[i] * (i ? x[i] : (T)1);                                                        \
            }                                                                                            \
            T kk = t * yv / 2;                                                                           \
            for (int64_t i = 0; i < p; i++) tmp[i] -= kk * (i ? x[i] : (T)1);                            \
            for (int64_t i = 0; i < p; i++) {                                                            \
                T *row = s + (k + 1 + i) * n + k + 1;                                                    \
                T vi = i ? x[i] : (T)1, wi = tmp[i];                                                     \
                row[0] -= vi * tmp[0] + wi;                                                              \
                for (int64_t j = 1; j < p; j++) row[j] -= vi * tmp[j] + wi * x[j];                       \
            }                                                                                            \
        }                                                                                                \
        if (n >= 2) {                                                                                    \
            d[n - 2] = s[(n - 2) * n + n - 2];                                                           \
            e[n - 2] = s[(n - 2) * n + n - 1];                                                           \
        }                                                                                                \
        if (n >= 1) { d[n - 1] = s[(n - 1) * n + n - 1]; e[n - 1] = 0; }                                 \
        if (n >= 2) tau[n - 2] = 0;                                                                      \
        if (vectors) {                                                                                   \
            /* Q = H_0 ... H_{n-3} accumulated backwards (rows of z), then z = Q^T: a row per vector */  \
            for (int64_t i = 0; i < n * n; i++) z[i] = 0;                                                \
            for (int64_t i = 0; i < n; i++) z[i * n + i] = 1;                                            \
            for (int64_t k = n - 3; k >= 0; k--) {                                                       \
                T t = tau[k];                                                                            \
                if (t == 0) continue;                                                                    \
                int64_t p = n - k - 1;                                                                   \
                const T *x = s + k * n + k + 1;                                                          \
                for (int64_t c = 0; c < p; c++) tmp[c] = 0;                                              \
                for (int64_t i = 0; i < p; i++) {                                                        \
                    T vi = i ? x[i] : (T)1;                                                              \
                    const T *row = z + (k + 1 + i) * n + k + 1;                                          \
                    for (int64_t c = 0; c < p; c++) tmp[c] += vi * row[c];                               \
                }                                                                                        \
                for (int64_t i = 0; i < p; i++) {                                                        \
                    T f = t * (i ? x[i] : (T)1);                                                         \
                    T *row = z + (k + 1 + i) * n + k + 1;                                                \
                    for (int64_t c = 0; c < p; c++) row[c] -= f * tmp[c];                                \
                }                                                                                        \
            }                                                                                            \
            for (int64_t i = 0; i < n; i++)                                                              \
                for (int64_t j = i + 1; j < n; j++) { T t_ = z[i * n + j]; z[i * n + j] = z[j * n + i]; z[j * n + i] = t_; } \
        }                                                                                                \
        /* implicit QL with Wilkinson shifts; e[i] couples d[i] and d[i+1] */                            \
        bool ok = true;                                                                                  \
        for (int64_t l = 0; l < n && ok; l++) {                                                          \
            int iter = 0;                                                                                \
            int64_t m;                                                                                   \
            for (;;) {                                                                                   \
                for (m = l; m < n - 1; m++) {                                                            \
                    T dd = ABS(d[m]) + ABS(d[m + 1]);                                                    \
                    if (ABS(e[m]) <= EPS * dd || ABS(e[m]) < TINY) break;                              \
                }                                                                                        \
                if (m == l) break;                                                                       \
                if (++iter > TENSOR__EIGH_MAX_ITER) { ok = false; break; }                              \
                T g = (d[l + 1] - d[l]) / (2 * e[l]);                                                    \
                T r = HYPOT(g, (T)1);                                                                    \
                g = d[m] - d[l] + e[l] / (g + COPYSIGN(r, g));                                           \
                T sn = 1, cs = 1, p = 0;                                                                 \
                int64_t i;                                                                               \
                for (i = m - 1; i >= l; i--) {                                                           \
                    T f = sn * e[i], b = cs * e[i];                                                      \
                    e[i + 1] = r = HYPOT(f, g);                                                          \
                    if (r == 0) { d[i + 1] -= p; e[m] = 0; break; }                                      \
                    sn = f / r;                                                                          \
                    cs = g / r;                                                                          \
                    g = d[i + 1] - p;                                                                    \
                    r = (d[i] - g) * sn + 2 * cs * b;                                                    \
                    p = sn * r;                                                                          \
                    d[i + 1] = g + p;                                                                    \
                    g = cs * r - b;                                                                      \
                    if (vectors) {                                                                       \
                        T *zi = z + i * n, *zj = z + (i + 1) * n;                                        \
                        for (int64_t c = 0; c < n; c++) {                                                \
                            T f2 = zj[c];                                                                \
                            zj[c] = sn * zi[c] + cs * f2;                                                \
                            zi[c] = cs * zi[c] - sn * f2;                                                \
                        }                                                                                \
                    }                                                                                    \
                }                                                                                        \
                if (r == 0 && i >= l) continue;                                                          \
                d[l] -= p;                                                                               \
                e[l] = g;                                                                                \
                e[m] = 0;                                                                                \
            }                                                                                            \
        }                                                                                                \
        if (!ok) {                                                                                       \
            for (int64_t i = 0; i < n; i++) wout[i] = (T)NAN;                                            \
            if (vectors) for (int64_t i = 0; i < n * n; i++) vout[i] = (T)NAN;                           \
            return false;                                                                                \
        }                                                                                                \
        /* ascending (a stable selection: the first smallest), the vectors' rows with them */            \
        for (int64_t i = 0; i < n; i++) {                                                                \
            int64_t b = i;                                                                               \
            for (int64_t j = i + 1; j < n; j++) if (d[j] < d[b]) b = j;                                  \
            if (b == i) continue;                                                                        \
            T t_ = d[i]; d[i] = d[b]; d[b] = t_;                                                         \
            if (vectors)                                                                                 \
                for (int64_t c = 0; c < n; c++) { t_ = z[i * n + c]; z[i * n + c] = z[b * n + c]; z[b * n + c] = t_; } \
        }                                                                                                \
        for (int64_t i = 0; i < n; i++) wout[i] = d[i];                                                  \
        if (vectors)                                                                                     \
            for (int64_t i = 0; i < n; i++)                                                              \
                for (int64_t j = 0; j < n; j++) vout[i * n + j] = z[j * n + i];                          \
        return true;                                                                                     \
    }
TENSOR__DEFINE_QR_EIGH(F32, float, fabsf, sqrtf, hypotf, copysignf, FLT_EPSILON, FLT_MIN)
TENSOR__DEFINE_QR_EIGH(F64, double, fabs, sqrt, hypot, copysign, DBL_EPSILON, DBL_MIN)

static void tensor__qr_range(int64_t lo, int64_t hi, void *ctx) {
    tensor__qe_job *j = (tensor__qe_job *)ctx;
    int64_t m = j->m, n = j->n, esz = (int64_t)tensor__dtype_sizes[j->dt], per = m * j->kq + j->kr * n;
    void *w = tensor__alloc_aligned((size_t)((j->work ? j->work : 1) * esz));
    if (!w) { __atomic_store_n(&j->oom, 1, __ATOMIC_RELAXED); return; }
    for (int64_t b = lo; b < hi; b++) {
        const char *a = j->in + b * m * n * esz;
        char *q = j->out + b * per * esz, *r = q + m * j->kq * esz;
        if (j->dt == TENSOR_F32) tensor__qr_F32((const float *)(const void *)a, m, n, (float *)(void *)q, j->kq, (float *)(void *)r, j->kr, (float *)w);
        else tensor__qr_F64((const double *)(const void *)a, m, n, (double *)(void *)q, j->kq, (double *)(void *)r, j->kr, (double *)w);
    }
    tensor__free_aligned(w);
}
static void tensor__eigh_range(int64_t lo, int64_t hi, void *ctx) {
    tensor__qe_job *j = (tensor__qe_job *)ctx;
    int64_t n = j->n, esz = (int64_t)tensor__dtype_sizes[j->dt], per = n + (j->vectors ? n * n : 0);
    void *w = tensor__alloc_aligned((size_t)((j->work ? j->work : 1) * esz));
    if (!w) { __atomic_store_n(&j->oom, 1, __ATOMIC_RELAXED); return; }
    for (int64_t b = lo; b < hi; b++) {
        const char *a = j->in + b * n * n * esz;
        char *wo = j->out + b * per * esz, *vo = wo + n * esz;
        if (j->dt == TENSOR_F32) tensor__eigh_F32((const float *)(const void *)a, n, j->upper, j->vectors, (float *)(void *)wo, (float *)(void *)vo, (float *)w);
        else tensor__eigh_F64((const double *)(const void *)a, n, j->upper, j->vectors, (double *)(void *)wo, (double *)(void *)vo, (double *)w);
    }
    tensor__free_aligned(w);
}

/* in[0] A contiguous [..., m, n]; ip[0] mode (0 reduced, 1 complete, 2 r); out [..., m*kq + kr*n]:
   Q (m x kq) then R (kr x n) of each matrix */
static int tensor__cpu_linalg_qr(tensor__call *c) {
    tensor__qe_job j;
    memset(&j, 0, sizeof j);
    tensor *a = c->in[0];
    j.dt = a->dtype;
    j.m = a->shape[a->ndim - 2];
    j.n = a->shape[a->ndim - 1];
    int64_t k = j.m < j.n ? j.m : j.n;
    j.kq = c->ip[0] == 2 ? 0 : c->ip[0] == 1 ? j.m : k;
    j.kr = c->ip[0] == 1 ? j.m : k;
    j.batches = tensor__numel_of(a->ndim - 2, a->shape);
    j.work = j.n * j.m + k + j.kq * j.m;
    j.in = tensor__data(a);
    j.out = tensor__data(c->out);
    if (j.m * j.kq + j.kr * j.n == 0) return 0;
    tensor__parallel_for(j.batches, tensor__la_grain(j.m, j.n, j.n + j.kq), tensor__qr_range, &j);
    if (j.oom) { tensor__fail(c->fn, "out of memory allocating QR scratch"); return 1; }
    return 0;
}
/* in[0] A contiguous [..., n, n]; ip[0] upper (the triangle read), ip[1] eigenvalues only; out
   [..., n + n*n]: the eigenvalues then V (row-major) of each matrix, or [..., n] */
static int tensor__cpu_linalg_eigh(tensor__call *c) {
    tensor__qe_job j;
    memset(&j, 0, sizeof j);
    tensor *a = c->in[0];
    j.dt = a->dtype;
    j.n = a->shape[a->ndim - 1];
    j.upper = c->ip[0] != 0;
    j.vectors = c->ip[1] == 0;
    j.batches = tensor__numel_of(a->ndim - 2, a->shape);
    j.work = 2 * j.n * j.n + 4 * j.n;
    j.in = tensor__data(a);
    j.out = tensor__data(c->out);
    if (j.n == 0) return 0;
    tensor__parallel_for(j.batches, tensor__la_grain(j.n, j.n, j.n * (j.vectors ? 4 : 1)), tensor__eigh_range, &j);
    if (j.oom) { tensor__fail(c->fn, "out of memory allocating eigh scratch"); return 1; }
    return 0;
}

/* ---- front-ends ---- */

/* mode: 0 reduced, 1 complete, 2 r; -1 (with PyTorch's message) for another string */
static int tensor__qr_mode(const char *fn, const char *mode) {
    if (!mode || strcmp(mode, "reduced") == 0) return 0;
    if (strcmp(mode, "complete") == 0) return 1;
    if (strcmp(mode, "r") == 0) return 2;
    tensor__fail(fn, "qr received unrecognized mode '%s' but expected one of 'reduced' (default), 'r', or 'complete'", mode);
    return -1;
}
/* the QR kernel through the dispatcher: the packed [..., m*kq + kr*n] (see above) */
static tensor *tensor__la_qr_packed(const char *fn, tensor *A, int mode) {
    tensor *ac = A ? tensor_contiguous(A) : NULL;
    if (!ac) return NULL;
    int64_t m = A->shape[A->ndim - 2], n = A->shape[A->ndim - 1], k = m < n ? m : n;
    int64_t kq = mode == 2 ? 0 : mode == 1 ? m : k, kr = mode == 1 ? m : k, ps[TENSOR_MAX_DIMS];
    for (int d = 0; d < A->ndim - 2; d++) ps[d] = A->shape[d];
    int64_t pq, pr; /* complete mode on an empty [N, 0]: m kq elements may not fit */
    if (!tensor__size_mul(m, kq, &pq) || !tensor__size_mul(kr, n, &pr) || !tensor__size_add(pq, pr, &ps[A->ndim - 2])) {
        tensor_free(ac);
        return tensor__fail(fn, "the size of Q and R of a %lld x %lld matrix is too large", (long long)m, (long long)n);
    }
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_linalg_qr);
    c.n_in = 1;
    c.in[0] = ac;
    c.ip[0] = mode;
    c.out = tensor__new(fn, A->ndim - 1, ps, A->dtype, A->storage->device);
    tensor *r = c.out ? tensor__dispatch(&c) : NULL;
    tensor_free(ac);
    return r;
}
/* the [..., rows, cols] matrices at offset start of the packed p's last dim (a view where it can be) */
static tensor *tensor__qe_part(tensor *p, int64_t start, int64_t rows, int64_t cols) {
    if (!p) return NULL;
    int64_t s[TENSOR_MAX_DIMS];
    for (int d = 0; d < p->ndim - 1; d++) s[d] = p->shape[d];
    s[p->ndim - 1] = rows;
    s[p->ndim] = cols;
    tensor *nw = tensor_narrow(p, -1, start, rows * cols);
    tensor *r = nw ? tensor_reshape(nw, p->ndim + 1, s) : NULL;
    tensor_free(nw);
    return r;
}
/* Q and R (new handles, views of one packed result) of A [..., m, n]; mode 2: *Q left NULL */
static bool tensor__la_qr(const char *fn, tensor *A, int mode, tensor **Q, tensor **R) {
    *Q = *R = NULL;
    tensor *p = tensor__la_qr_packed(fn, A, mode);
    if (!p) return false;
    int64_t m = A->shape[A->ndim - 2], n = A->shape[A->ndim - 1], k = m < n ? m : n;
    int64_t kq = mode == 2 ? 0 : mode == 1 ? m : k, kr = mode == 1 ? m : k;
    if (mode != 2) *Q = tensor__qe_part(p, 0, m, kq);
    *R = tensor__qe_part(p, m * kq, kr, n);
    tensor_free(p);
    if (*R && (mode == 2 || *Q)) return true;
    tensor_free(*Q);
    tensor_free(*R);
    *Q = *R = NULL;
    return false;
}

TENSOR_API tensor *tensor_linalg_qr(tensor *A, const char *mode, tensor **R) {
    const char *fn = "tensor_linalg_qr";
    if (R) *R = NULL;
    TENSOR__CHECK_ARG(fn, A);
    if (A->ndim < 2) return tensor__fail(fn, "the input tensor A must have at least 2 dimensions, got shape %s", tensor__shape_of(A));
    if (!tensor__la_float(fn, "A", A)) return NULL;
    int md = tensor__qr_mode(fn, mode);
    if (md < 0) return NULL;
    TENSOR__LA_BEGIN(fn);
    tensor *q = NULL, *r = NULL;
    if (!tensor__la_qr(fn, A, md, &q, &r)) return tensor__la_end(NULL);
    if (md == 2) { /* PyTorch's Q for mode 'r': an empty tensor */
        int64_t zero = 0;
        q = tensor_empty(1, &zero, A->dtype);
        q = tensor__on(q, A->storage->device);
    } else {
        q = tensor_contiguous(q);
    }
    r = tensor_contiguous(r);
    if (!q || !r) return tensor__la_end(NULL);
    if (R) *R = tensor_keep(r);
    return tensor__la_end(q);
}

/* UPLO: false "L" (NULL), true "U"; -1 with PyTorch's message for another string */
static int tensor__uplo(const char *fn, const char *UPLO) {
    if (!UPLO || strcmp(UPLO, "L") == 0 || strcmp(UPLO, "l") == 0) return 0;
    if (strcmp(UPLO, "U") == 0 || strcmp(UPLO, "u") == 0) return 1;
    tensor__fail(fn, "expected UPLO argument to be 'L' or 'U', but got %s", UPLO);
    return -1;
}
/* The eigh kernel through the dispatcher: the packed [..., n + n*n] (values_only: [..., n]);
   check: fail with PyTorch's message where it did not converge (NaN eigenvalues). */
static tensor *tensor__la_eigh_packed(const char *fn, tensor *A, bool upper, bool values_only, bool check) {
    tensor *ac = A ? tensor_contiguous(A) : NULL;
    if (!ac) return NULL;
    int64_t n = A->shape[A->ndim - 1], ps[TENSOR_MAX_DIMS];
    for (int d = 0; d < A->ndim - 2; d++) ps[d] = A->shape[d];
    ps[A->ndim - 2] = n + (values_only ? 0 : n * n);
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_linalg_eigh);
    c.n_in = 1;
    c.in[0] = ac;
    c.ip[0] = upper;
    c.ip[1] = values_only;
    c.out = tensor__new(fn, A->ndim - 1, ps, A->dtype, A->storage->device);
    tensor *p = c.out ? tensor__dispatch(&c) : NULL;
    tensor_free(ac);
    if (!p || !check) return p;
    tensor *w = tensor_narrow(p, -1, 0, n);
    tensor *h = tensor__la_host(w);
    tensor_free(w);
    if (!h) { tensor_free(p); return NULL; }
    int64_t total = tensor__numel_of(h->ndim, h->shape);
    const char *v = tensor__data(h);
    for (int64_t i = 0; i < total; i++) {
        double x = tensor__load_f64(v + i * (int64_t)tensor__dtype_sizes[h->dtype], h->dtype);
        if (x != x) {
            char pre[64];
            tensor__la_batch_prefix(pre, sizeof pre, A, i / n);
            tensor__fail(fn, "%sthe algorithm failed to converge because the input matrix is ill-conditioned or has too many repeated eigenvalues", pre);
            tensor_free(h);
            tensor_free(p);
            return NULL;
        }
    }
    tensor_free(h);
    return p;
}
/* w [..., n] and V [..., n, n] (new handles, views of the packed result) */
static bool tensor__la_eigh(const char *fn, tensor *A, bool upper, bool check, tensor **w, tensor **V) {
    *w = *V = NULL;
    tensor *p = tensor__la_eigh_packed(fn, A, upper, false, check);
    if (!p) return false;
    int64_t n = A->shape[A->ndim - 1];
    *w = tensor_narrow(p, -1, 0, n);
    *V = tensor__qe_part(p, n, n, n);
    tensor_free(p);
    if (*w && *V) return true;
    tensor_free(*w);
    tensor_free(*V);
    *w = *V = NULL;
    return false;
}

TENSOR_API tensor *tensor_linalg_eigh(tensor *A, const char *UPLO, tensor **eigenvectors) {
    const char *fn = "tensor_linalg_eigh";
    if (eigenvectors) *eigenvectors = NULL;
    TENSOR__CHECK_ARG(fn, A);
    if (!tensor__la_float(fn, "A", A) || !tensor__la_square(fn, "A", A)) return NULL;
    int up = tensor__uplo(fn, UPLO);
    if (up < 0) return NULL;
    if (!eigenvectors) return tensor__la_eigh_packed(fn, A, up != 0, true, true); /* eigvalsh's kernel */
    TENSOR__LA_BEGIN(fn);
    tensor *w = NULL, *V = NULL;
    if (!tensor__la_eigh(fn, A, up != 0, true, &w, &V)) return tensor__la_end(NULL);
    w = tensor_contiguous(w);
    V = tensor_contiguous(V);
    if (!w || !V) return tensor__la_end(NULL);
    *eigenvectors = tensor_keep(V);
    return tensor__la_end(w);
}

TENSOR_API tensor *tensor_linalg_eigvalsh(tensor *A, const char *UPLO) {
    const char *fn = "tensor_linalg_eigvalsh";
    TENSOR__CHECK_ARG(fn, A);
    if (!tensor__la_float(fn, "A", A) || !tensor__la_square(fn, "A", A)) return NULL;
    int up = tensor__uplo(fn, UPLO);
    if (up < 0) return NULL;
    return tensor__la_eigh_packed(fn, A, up != 0, true, true);
}
