// >>linalg-norm ----------------------------------------------------------------------------------
/* Norms and the SVD family of torch.linalg, f32 and f64 (the norms: any floating dtype), batched
   over the leading dims, with our own kernel (no LAPACK):
   - linalg_svd is the one kernel: one-sided (Hestenes) Jacobi on each matrix, in double whatever
     the dtype (f32 results are rounded from it). The rows of G (the columns of A, or the rows of
     A for a wide one) are rotated in pairs until every pair is orthogonal to sqrt(L) * eps of its
     norms; the rotations, gathered in R, give the other factor. Singular values come out
     descending; the vectors of zero singular values (and the extra ones of full_matrices) are
     completed by Gram-Schmidt from the unit vectors. The signs of the vectors are not unique (as
     in PyTorch they are whatever the algorithm gives). The kernel writes U, S and Vh packed in one
     output [..., m*uc + k + vr*n]; the front-end hands out views of it, so one autograd node has
     one output and PyTorch's svd_backward (tensor_autograd.h) sees the three gradients. svdvals
     runs the kernel for S only (ip[1]) and its derivative is U diag(gS) Vh.
   - the rest are composites: vector_norm is the norm reduction of >>reduce over several dims
     (its derivative: 0 at x = 0, the inf-norm's gradient shared among ties, as PyTorch);
     matrix_norm's fro is a vector norm, 1/inf are sums of |A| and amax/amin, 2/-2/nuc come from
     svdvals; pinv, matrix_rank, lstsq (the gelsd driver's minimum-norm solution) and cond are
     written with the SVD. pinv records a node of its own (tensor__layer_record, as the layer
     composites of >>norm do): its derivative is PyTorch's pinv_backward, matmuls of pinv(A), A
     and the gradient, finite where singular values repeat (the SVD's has 1 / (s_i^2 - s_j^2));
     lstsq's solution is pinv(A) B, so its gradients go through that node too. */

/* "fro", "nuc", "1", "-1", "2", "-2", "inf", "-inf" (matrix norms) -> a code; NULL is "fro" */
enum { TENSOR__MN_FRO, TENSOR__MN_NUC, TENSOR__MN_1, TENSOR__MN_M1, TENSOR__MN_2, TENSOR__MN_M2, TENSOR__MN_INF, TENSOR__MN_MINF, TENSOR__MN_BAD };
static int tensor__matrix_ord(const char *ord) {
    static const char *const names[] = {"fro", "nuc", "1", "-1", "2", "-2", "inf", "-inf"};
    if (!ord) return TENSOR__MN_FRO;
    for (int i = 0; i < TENSOR__MN_BAD; i++)
        if (strcmp(ord, names[i]) == 0) return i;
    return TENSOR__MN_BAD;
}
/* a vector order from a string: "inf", "-inf" or a number (the whole string); false if neither */
static bool tensor__vector_ord(const char *ord, double *p) {
    if (strcmp(ord, "inf") == 0) { *p = INFINITY; return true; }
    if (strcmp(ord, "-inf") == 0) { *p = -INFINITY; return true; }
    char *end = NULL;
    double v = strtod(ord, &end);
    if (!ord[0] || !end || *end || v != v) return false;
    *p = v;
    return true;
}

TENSOR_API tensor *tensor_linalg_vector_norm(tensor *x, double ord, int n, const int *dims, bool keepdim) {
    const char *fn = "tensor_linalg_vector_norm";
    TENSOR__CHECK_ARG(fn, x);
    if (!tensor__is_float(x->dtype)) return tensor__fail(fn, "expected a floating point tensor as input, got %s", tensor__dtype_names[x->dtype]);
    if (ord != ord) return tensor__fail(fn, "order ord must be a number, got NaN");
    if (n < 0) return tensor__fail(fn, "n must be >= 0 (0: every dim), got %d", n);
    if (n > 0 && !dims) return tensor__null_arg(fn, "dims");
    unsigned seen = 0;
    bool empty = false;
    for (int i = 0; i < n; i++) {
        int d = tensor__wrap_dim(fn, dims[i], x->ndim > 0 ? x->ndim : 1);
        if (d < 0) return NULL;
        if (seen >> d & 1) return tensor__fail(fn, "dim %d appears more than once in the list of dims", d);
        seen |= 1u << d;
        if (x->ndim > 0 && x->shape[d] == 0) empty = true;
    }
    if (n == 0 && tensor__numel_of(x->ndim, x->shape) == 0) empty = true;
    if (empty && (ord < 0 || ord == INFINITY))
        return tensor__fail(fn, "cannot compute the %g norm on an empty tensor because the operation does not have an identity (shape %s)", ord, tensor__shape_of(x));
    return tensor__reduce(TENSOR_OP_norm, x, n == 0 ? -1 : n, dims, keepdim, ord, 0);
}

/* the two matrix dims of A (distinct, wrapped); false with an error */
static bool tensor__matrix_dims(const char *fn, const tensor *A, int dim0, int dim1, int *d0, int *d1) {
    if (A->ndim < 2) { tensor__fail(fn, "the input tensor A must have at least 2 dimensions, got shape %s", tensor__shape_of(A)); return false; }
    *d0 = tensor__wrap_dim(fn, dim0, A->ndim);
    *d1 = *d0 < 0 ? -1 : tensor__wrap_dim(fn, dim1, A->ndim);
    if (*d1 < 0) return false;
    if (*d0 == *d1) { tensor__fail(fn, "dims must be different, got (%d, %d)", dim0, dim1); return false; }
    return true;
}

static tensor *tensor__svdvals(const char *fn, tensor *A);

/* matrix_norm inside the caller's scope: A checked, dims wrapped, code valid */
static tensor *tensor__matrix_norm(const char *fn, tensor *A, int code, int d0, int d1, bool keepdim) {
    int both[2] = {d0, d1};
    if (code == TENSOR__MN_FRO) return tensor_linalg_vector_norm(A, 2, 2, both, keepdim);
    if (code == TENSOR__MN_1 || code == TENSOR__MN_M1 || code == TENSOR__MN_INF || code == TENSOR__MN_MINF) {
        bool cols = code == TENSOR__MN_1 || code == TENSOR__MN_M1; /* max column sum: sum over d0 */
        int sd = cols ? d0 : d1, rd = cols ? d1 : d0;
        if (A->shape[rd] == 0) return tensor__fail(fn, "cannot compute the %s norm of matrices of shape %s: the reduction has no identity", code == TENSOR__MN_1 ? "1" : code == TENSOR__MN_M1 ? "-1" : code == TENSOR__MN_INF ? "inf" : "-inf", tensor__shape_of(A));
        tensor *s = tensor_sum(tensor_abs(A), sd, true);
        tensor *r = code == TENSOR__MN_1 || code == TENSOR__MN_INF ? tensor_amax(s, 1, &rd, true) : tensor_amin(s, 1, &rd, true);
        if (!keepdim) r = tensor_squeeze(tensor_squeeze(r, d0 > d1 ? d0 : d1), d0 < d1 ? d0 : d1);
        return r;
    }
    /* 2, -2, nuc: the singular values of the matrices moved to the last two dims */
    if (!tensor__la_float(fn, "A", A)) return NULL;
    int lo = d0 < d1 ? d0 : d1, hi = d0 < d1 ? d1 : d0;
    tensor *m = tensor_movedim(tensor_movedim(A, lo, -1), hi - 1, -1); /* d0's and d1's order in the matrix does not change its singular values */
    tensor *sv = m ? tensor__svdvals(fn, m) : NULL;
    if (!sv) return NULL;
    int last = -1;
    if (code != TENSOR__MN_NUC && sv->shape[sv->ndim - 1] == 0) return tensor__fail(fn, "cannot compute the 2-norm of matrices of shape %s: the reduction has no identity", tensor__shape_of(A));
    tensor *r = code == TENSOR__MN_NUC ? tensor_sum(sv, -1, false) : code == TENSOR__MN_2 ? tensor_amax(sv, 1, &last, false) : tensor_amin(sv, 1, &last, false);
    if (keepdim) r = tensor_unsqueeze(tensor_unsqueeze(r, lo), hi);
    return r;
}

TENSOR_API tensor *tensor_linalg_matrix_norm(tensor *A, const char *ord, int dim0, int dim1, bool keepdim) {
    const char *fn = "tensor_linalg_matrix_norm";
    TENSOR__CHECK_ARG(fn, A);
    if (!tensor__is_float(A->dtype)) return tensor__fail(fn, "expected a floating point tensor as input, got %s", tensor__dtype_names[A->dtype]);
    int code = tensor__matrix_ord(ord);
    if (code == TENSOR__MN_BAD) return tensor__fail(fn, "order %s not supported (fro, nuc, 1, -1, 2, -2, inf, -inf)", ord);
    int d0, d1;
    if (!tensor__matrix_dims(fn, A, dim0, dim1, &d0, &d1)) return NULL;
    TENSOR__LA_BEGIN(fn);
    return tensor__la_end(tensor__matrix_norm(fn, A, code, d0, d1, keepdim));
}

TENSOR_API tensor *tensor_linalg_norm(tensor *x, const char *ord, int n, const int *dims, bool keepdim) {
    const char *fn = "tensor_linalg_norm";
    TENSOR__CHECK_ARG(fn, x);
    if (!tensor__is_float(x->dtype)) return tensor__fail(fn, "expected a floating point tensor as input, got %s", tensor__dtype_names[x->dtype]);
    if (n < 0 || n > 2) return tensor__fail(fn, "n must be 0 (no dims given), 1 or 2, got %d", n);
    if (n > 0 && !dims) return tensor__null_arg(fn, "dims");
    if (n == 0 && !ord) return tensor_linalg_vector_norm(x, 2, 0, NULL, keepdim);
    int nd = n;
    int dd[2] = {0, 1};
    if (n == 0) {
        if (x->ndim != 1 && x->ndim != 2) return tensor__fail(fn, "with ord given and no dims, the input must be 1-D or 2-D, got shape %s", tensor__shape_of(x));
        nd = x->ndim;
    } else {
        dd[0] = dims[0];
        if (n == 2) dd[1] = dims[1];
    }
    if (nd == 1) {
        double p = 2;
        if (ord && !tensor__vector_ord(ord, &p)) return tensor__fail(fn, "order %s not supported for a vector norm (a number, inf or -inf)", ord);
        return tensor_linalg_vector_norm(x, p, 1, dd, keepdim);
    }
    int code = tensor__matrix_ord(ord);
    if (code == TENSOR__MN_BAD) return tensor__fail(fn, "order %s not supported for a matrix norm (fro, nuc, 1, -1, 2, -2, inf, -inf)", ord);
    int d0, d1;
    if (!tensor__matrix_dims(fn, x, dd[0], dd[1], &d0, &d1)) return NULL;
    TENSOR__LA_BEGIN(fn);
    return tensor__la_end(tensor__matrix_norm(fn, x, code, d0, d1, keepdim));
}

TENSOR_API tensor *tensor_linalg_vecdot(tensor *x, tensor *y, int dim) {
    const char *fn = "tensor_linalg_vecdot";
    TENSOR__CHECK_ARG(fn, x);
    TENSOR__CHECK_ARG(fn, y);
    if (x->dtype != y->dtype)
        return tensor__fail(fn, "expected x and y to have the same dtype, but found x of type %s and y of type %s instead", tensor__dtype_names[x->dtype], tensor__dtype_names[y->dtype]);
    int nb = 0;
    int64_t bs[TENSOR_MAX_DIMS];
    if (!tensor__broadcast_shapes(fn, x->ndim, x->shape, y->ndim, y->shape, &nb, bs)) return NULL;
    if (nb == 0) return tensor__fail(fn, "expected x and y of at least 1 dimension, got shapes %s and %s", tensor__shape_of(x), tensor__shape_of(y));
    if (tensor__wrap_dim(fn, dim, nb) < 0) return NULL;
    TENSOR__LA_BEGIN(fn);
    return tensor__la_end(tensor_sum(tensor_mul(x, y), dim, false));
}

// >>linalg-svd -----------------------------------------------------------------------------------
/* One-sided Jacobi on G (k rows of length L, k <= L, row-major): the rows are rotated in pairs
   until each pair is orthogonal (|g_p . g_q| <= sqrt(L) eps |g_p| |g_q|); R (k x k, or NULL)
   gathers the same rotations of the identity's rows. Then sig[j] = |g_j| and perm orders them
   descending (NaN last). A bounded number of sweeps: the loop ends on any input. */
#define TENSOR__SVD_SWEEPS 80
static void tensor__svd_jacobi(double *G, double *R, double *sig, int64_t *perm, int64_t k, int64_t L) {
    const double tol = sqrt((double)L) * DBL_EPSILON;
    if (R)
        for (int64_t i = 0; i < k * k; i++) R[i] = i / k == i % k;
    for (int sweep = 0; sweep < TENSOR__SVD_SWEEPS; sweep++) {
        bool rotated = false;
        for (int64_t p = 0; p + 1 < k; p++)
            for (int64_t q = p + 1; q < k; q++) {
                double *gp = G + p * L, *gq = G + q * L;
                double alpha = 0, beta = 0, gamma = 0;
                for (int64_t i = 0; i < L; i++) { alpha += gp[i] * gp[i]; beta += gq[i] * gq[i]; gamma += gp[i] * gq[i]; }
                if (!(fabs(gamma) > tol * sqrt(alpha) * sqrt(beta))) continue; /* orthogonal enough, zero or NaN */
                rotated = true;
                double zeta = (beta - alpha) / (2 * gamma);
                double t = (zeta >= 0 ? 1.0 : -1.0) / (fabs(zeta) + sqrt(1 + zeta * zeta));
                double c = 1 / sqrt(1 + t * t), s = c * t;
                for (int64_t i = 0; i < L; i++) { double a = gp[i], b = gq[i]; gp[i] = c * a - s * b; gq[i] = s * a + c * b; }
                if (R) {
                    double *rp = R + p * k, *rq = R + q * k;
                    for (int64_t i = 0; i < k; i++) { double a = rp[i], b = rq[i]; rp[i] = c * a - s * b; rq[i] = s * a + c * b; }
                }
            }
        if (!rotated) break;
    }
    for (int64_t j = 0; j < k; j++) {
        double s = 0;
        for (int64_t i = 0; i < L; i++) s += G[j * L + i] * G[j * L + i];
        sig[j] = sqrt(s);
        perm[j] = j;
    }
    for (int64_t j = 1; j < k; j++) { /* insertion sort, descending, stable; NaN sorts last */
        int64_t v = perm[j], i = j;
        while (i > 0 && (sig[perm[i - 1]] < sig[v] || (sig[perm[i - 1]] != sig[perm[i - 1]] && sig[v] == sig[v]))) { perm[i] = perm[i - 1]; i--; }
        perm[i] = v;
    }
}
/* Q holds `have` orthonormal rows of length L: adds rows up to `want` (<= L), each the first unit
   vector whose part orthogonal to the rows so far has a squared norm above 1 / (2 L) (one always
   has at least 1 / L), orthogonalized twice and normalized. */
static void tensor__svd_complete(double *Q, int64_t have, int64_t want, int64_t L) {
    int64_t cand = 0;
    for (int64_t j = have; j < want; j++) {
        double *v = Q + j * L;
        for (int64_t tries = 0; tries < L; tries++, cand = (cand + 1) % L) {
            for (int64_t i = 0; i < L; i++) v[i] = i == cand;
            for (int pass = 0; pass < 2; pass++)
                for (int64_t r = 0; r < j; r++) {
                    const double *q = Q + r * L;
                    double d = 0;
                    for (int64_t i = 0; i < L; i++) d += q[i] * v[i];
                    for (int64_t i = 0; i < L; i++) v[i] -= d * q[i];
                }
            double s = 0;
            for (int64_t i = 0; i < L; i++) s += v[i] * v[i];
            if (s > 0.5 / (double)L) {
                s = 1 / sqrt(s);
                for (int64_t i = 0; i < L; i++) v[i] *= s;
                cand = (cand + 1) % L;
                break;
            }
        }
    }
}
/* The SVD of one m x n matrix a (doubles): S (k) into s; with vectors (u, vh not NULL) U (m x uc)
   and Vh (vr x n), uc = vr = k, or m and n (full). w: scratch of k L + k k + want L doubles (want:
   L when full, else k) and perm: k. */
static void tensor__svd_one(const double *a, int64_t m, int64_t n, bool full, double *u, double *s, double *vh, double *w, int64_t *perm) {
    bool tall = m >= n;
    int64_t L = tall ? m : n, k = tall ? n : m;
    double *G = w, *R = w + k * L, *Q = R + k * k;
    for (int64_t j = 0; j < k; j++)
        for (int64_t i = 0; i < L; i++) G[j * L + i] = tall ? a[i * n + j] : a[j * n + i];
    double *sv = s;
    tensor__svd_jacobi(G, u ? R : NULL, sv, perm, k, L);
    /* sv is in G's order: sorted copies */
    for (int64_t j = 0; j < k; j++) Q[j] = sv[perm[j]];
    for (int64_t j = 0; j < k; j++) sv[j] = Q[j];
    if (!u) return;
    /* the normalized rows of G (sorted) into Q; zero ones completed */
    int64_t r = 0;
    while (r < k && sv[r] > 0) r++;
    for (int64_t j = 0; j < r; j++)
        for (int64_t i = 0; i < L; i++) Q[j * L + i] = G[perm[j] * L + i] / sv[j];
    int64_t want = full ? L : k;
    tensor__svd_complete(Q, r, want, L);
    int64_t uc = full ? m : k, vr = full ? n : k;
    if (tall) { /* U's columns: Q's rows; Vh's rows: R's (sorted) */
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < uc; j++) u[i * uc + j] = Q[j * L + i];
        for (int64_t j = 0; j < k; j++)
            for (int64_t i = 0; i < n; i++) vh[j * n + i] = R[perm[j] * k + i];
        (void)vr;
    } else { /* Vh's rows: Q's rows; U's columns: R's rows (sorted) */
        for (int64_t j = 0; j < vr; j++)
            for (int64_t i = 0; i < n; i++) vh[j * n + i] = Q[j * L + i];
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < k; j++) u[i * uc + j] = R[perm[j] * k + i];
    }
}

typedef struct {
    tensor_dtype dt;
    int64_t m, n, batches;
    bool full, values;
    const char *in;
    char *out;
    int oom;
} tensor__svd_job;

static void tensor__svd_range(int64_t lo, int64_t hi, void *ctx) {
    tensor__svd_job *j = (tensor__svd_job *)ctx;
    int64_t m = j->m, n = j->n, k = m < n ? m : n, L = m < n ? n : m;
    int64_t uc = j->full ? m : k, vr = j->full ? n : k;
    int64_t per = j->values ? k : m * uc + k + vr * n; /* packed output per matrix */
    size_t esz = tensor__dtype_sizes[j->dt];
    /* the rows Q completes: L only for full matrices (then within the output's size); a reduced
       SVD of a wide matrix needs no L x L scratch */
    int64_t want = j->full && !j->values ? L : k;
    size_t nd = (size_t)(m * n + per + k * L + k * k + want * L + 1);
    double *buf = (double *)TENSOR__MALLOC(sizeof(double) * nd);
    int64_t *perm = (int64_t *)TENSOR__MALLOC(sizeof(int64_t) * (size_t)(k + 1));
    if (!buf || !perm) {
        if (buf) TENSOR_FREE(buf);
        if (perm) TENSOR_FREE(perm);
        __atomic_store_n(&j->oom, 1, __ATOMIC_RELAXED);
        return;
    }
    double *a = buf, *o = buf + m * n, *w = o + per;
    for (int64_t b = lo; b < hi; b++) {
        const char *src = j->in + (size_t)(b * m * n) * esz;
        for (int64_t i = 0; i < m * n; i++) a[i] = j->dt == TENSOR_F64 ? ((const double *)(const void *)src)[i] : (double)((const float *)(const void *)src)[i];
        if (j->values) tensor__svd_one(a, m, n, false, NULL, o, NULL, w, perm);
        else tensor__svd_one(a, m, n, j->full, o, o + m * uc, o + m * uc + k, w, perm);
        char *dst = j->out + (size_t)(b * per) * esz;
        for (int64_t i = 0; i < per; i++) {
            if (j->dt == TENSOR_F64) ((double *)(void *)dst)[i] = o[i];
            else ((float *)(void *)dst)[i] = (float)o[i];
        }
    }
    TENSOR_FREE(buf);
    TENSOR_FREE(perm);
}

/* in[0] A contiguous [..., m, n] f32/f64; ip[0] full_matrices, ip[1] values only; out contiguous
   [..., P]: U (m x uc), S (k), Vh (vr x n) one after the other (P = m uc + k + vr n), or S only
   [..., k]. */
static int tensor__cpu_linalg_svd(tensor__call *c) {
    tensor__svd_job j;
    memset(&j, 0, sizeof j);
    tensor *a = c->in[0];
    j.dt = a->dtype;
    j.m = a->shape[a->ndim - 2];
    j.n = a->shape[a->ndim - 1];
    j.batches = tensor__numel_of(a->ndim - 2, a->shape);
    j.full = c->ip[0] != 0;
    j.values = c->ip[1] != 0;
    j.in = tensor__data(a);
    j.out = tensor__data(c->out);
    int64_t k = j.m < j.n ? j.m : j.n, L = j.m < j.n ? j.n : j.m;
    /* an empty result (no matrices, or the reduced SVD of empty ones): nothing to loop over */
    if (j.batches == 0 || c->out->shape[c->out->ndim - 1] == 0) return 0;
    tensor__parallel_for(j.batches, tensor__la_grain(L, L, L + 8 * k), tensor__svd_range, &j);
    if (j.oom) { tensor__fail(c->fn, "out of memory allocating SVD scratch"); return 1; }
    return 0;
}

/* The kernel through the dispatcher: A float f32/f64 [..., m, n]; values: S [..., k] only, else
   the packed [..., P]. Non-finite inputs are refused as PyTorch (LAPACK) does. */
static tensor *tensor__svd_run(const char *fn, tensor *A, bool full, bool values) {
    if (!A) return NULL;
    tensor *fin = tensor_all(tensor_isfinite(A));
    if (!fin) return NULL;
    if (tensor_item(fin) == 0) {
        tensor_free(fin);
        return tensor__fail(fn, "the algorithm failed to converge because the input matrix contained non-finite values");
    }
    tensor_free(fin);
    tensor *ac = tensor_contiguous(A);
    if (!ac) return NULL;
    int64_t m = A->shape[A->ndim - 2], n = A->shape[A->ndim - 1], k = m < n ? m : n;
    int64_t uc = full ? m : k, vr = full ? n : k;
    int64_t shape[TENSOR_MAX_DIMS];
    for (int d = 0; d < A->ndim - 2; d++) shape[d] = A->shape[d];
    int64_t pu, pv, pk; /* full matrices of an empty [0, N]: Vh's N N elements may not fit */
    if (!tensor__size_mul(m, uc, &pu) || !tensor__size_mul(vr, n, &pv) || !tensor__size_add(pu, k, &pk) || !tensor__size_add(pk, pv, &shape[A->ndim - 2])) {
        tensor_free(ac);
        return tensor__fail(fn, "the size of U, S and Vh of a %lld x %lld matrix is too large", (long long)m, (long long)n);
    }
    if (values) shape[A->ndim - 2] = k;
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_linalg_svd);
    c.n_in = 1;
    c.in[0] = ac;
    c.ip[0] = full;
    c.ip[1] = values;
    c.out = tensor__new(fn, A->ndim - 1, shape, A->dtype, A->storage->device);
    tensor *r = c.out ? tensor__dispatch(&c) : NULL;
    tensor_free(ac);
    return r;
}
/* U, S, Vh as views of the packed p (inside the caller's scope) */
static bool tensor__svd_split(tensor *p, int64_t m, int64_t n, bool full, tensor **U, tensor **S, tensor **Vh) {
    if (!p) return false;
    int nb = p->ndim - 1;
    int64_t k = m < n ? m : n, uc = full ? m : k, vr = full ? n : k;
    int64_t shape[TENSOR_MAX_DIMS];
    for (int d = 0; d < nb; d++) shape[d] = p->shape[d];
    shape[nb] = m;
    shape[nb + 1] = uc;
    *U = tensor_reshape(tensor_narrow(p, -1, 0, m * uc), nb + 2, shape);
    *S = tensor_narrow(p, -1, m * uc, k);
    shape[nb] = vr;
    shape[nb + 1] = n;
    *Vh = tensor_reshape(tensor_narrow(p, -1, m * uc + k, vr * n), nb + 2, shape);
    return *U && *S && *Vh;
}
static bool tensor__svd_check(const char *fn, tensor *A) {
    if (!tensor__la_float(fn, "A", A)) return false;
    if (A->ndim < 2) { tensor__fail(fn, "the input tensor A must have at least 2 dimensions, got shape %s", tensor__shape_of(A)); return false; }
    return true;
}

TENSOR_API tensor *tensor_linalg_svd(tensor *A, bool full_matrices, tensor **S, tensor **Vh) {
    const char *fn = "tensor_linalg_svd";
    if (S) *S = NULL;
    if (Vh) *Vh = NULL;
    TENSOR__CHECK_ARG(fn, A);
    if (!tensor__svd_check(fn, A)) return NULL;
    TENSOR__LA_BEGIN(fn);
    tensor *u = NULL, *s = NULL, *vh = NULL;
    tensor *p = tensor__svd_run(fn, A, full_matrices, false);
    if (!tensor__svd_split(p, A->shape[A->ndim - 2], A->shape[A->ndim - 1], full_matrices, &u, &s, &vh)) return tensor__la_end(NULL);
    u = tensor_contiguous(u);
    s = S ? tensor_contiguous(s) : s;
    vh = Vh ? tensor_contiguous(vh) : vh;
    if (!u || !s || !vh) return tensor__la_end(NULL);
    if (S) *S = tensor_keep(s);
    if (Vh) *Vh = tensor_keep(vh);
    return tensor__la_end(u);
}

static tensor *tensor__svdvals(const char *fn, tensor *A) { return tensor__svd_run(fn, A, false, true); }

TENSOR_API tensor *tensor_linalg_svdvals(tensor *A) {
    const char *fn = "tensor_linalg_svdvals";
    TENSOR__CHECK_ARG(fn, A);
    if (!tensor__svd_check(fn, A)) return NULL;
    return tensor__svdvals(fn, A);
}

/* The lower triangle of A mirrored (what the hermitian = true paths read, as eigh does) */
static tensor *tensor__la_sym_lower(tensor *A) { return tensor_add(tensor_tril(A, 0), tensor_transpose(tensor_tril(A, -1), -1, -2)); }

/* PyTorch's tolerance: max(atol, rtol * sigma_max) with rtol < 0 (None): 0 if atol > 0, else
   eps * max(m, n). S [..., k] descending; the result [..., 1] (k = 0: atol). */
static tensor *tensor__la_tol(tensor *S, int64_t m, int64_t n, double atol, double rtol) {
    if (!S) return NULL;
    double eps = S->dtype == TENSOR_F32 ? (double)FLT_EPSILON : DBL_EPSILON;
    if (atol < 0) atol = 0;
    if (rtol < 0) rtol = atol > 0 ? 0 : eps * (double)(m > n ? m : n);
    int64_t k = S->shape[S->ndim - 1];
    if (k == 0) return tensor_full_like(S, atol); /* empty, as S */
    tensor *smax = tensor_detach(tensor_narrow(S, -1, 0, 1));
    return tensor_clamp_min(tensor_mul_scalar(smax, rtol), atol);
}

/* pinv from the thin SVD of A (inside the caller's scope): V diag(1 / S where S > tol, else 0) U^T */
static tensor *tensor__pinv_of_svd(tensor *U, tensor *S, tensor *Vh, tensor *keep) {
    tensor *sinv = tensor_where(keep, tensor_reciprocal(tensor_where(keep, S, tensor_ones_like(S))), tensor_zeros_like(S)); /* no 1 / 0 computed */
    return tensor_matmul(tensor_mul(tensor_transpose(Vh, -1, -2), tensor_unsqueeze(sinv, -2)), tensor_transpose(U, -1, -2));
}
static tensor *tensor__layer_record(tensor_op op, tensor *y, int n_in, tensor *const *in, const int64_t *ip, int nip, const double *p, int np, tensor *extra);
/* P (computed without recording) given the linalg_pinv node of A: ip[0] hermitian, p[0] atol,
   p[1] rtol (tensor__derivative_layer in >>autograd). Returns P, or NULL after freeing it. */
static tensor *tensor__pinv_record(tensor *P, tensor *A, double atol, double rtol, bool hermitian) {
    int64_t ip[1] = {hermitian};
    double p[2] = {atol, rtol};
    return tensor__layer_record(TENSOR_OP_linalg_pinv, P, 1, &A, ip, 1, p, 2, NULL);
}

TENSOR_API tensor *tensor_linalg_pinv(tensor *A, double atol, double rtol, bool hermitian) {
    const char *fn = "tensor_linalg_pinv";
    TENSOR__CHECK_ARG(fn, A);
    if (!tensor__svd_check(fn, A)) return NULL;
    if (atol != atol || rtol != rtol) return tensor__fail(fn, "atol and rtol must be numbers, got %g and %g", atol, rtol);
    if (hermitian && A->shape[A->ndim - 1] != A->shape[A->ndim - 2]) return tensor__fail(fn, "hermitian = true needs square matrices, got shape %s", tensor__shape_of(A));
    TENSOR__LA_BEGIN(fn);
    int64_t m = A->shape[A->ndim - 2], n = A->shape[A->ndim - 1];
    bool was = tensor_set_grad_enabled(false);
    tensor *a = hermitian ? tensor__la_sym_lower(A) : A;
    tensor *U = NULL, *S = NULL, *Vh = NULL, *r = NULL;
    if (tensor__svd_split(tensor__svd_run(fn, a, false, false), m, n, false, &U, &S, &Vh))
        r = tensor__pinv_of_svd(U, S, Vh, tensor_gt(S, tensor__la_tol(S, m, n, atol, rtol)));
    tensor_set_grad_enabled(was);
    return tensor__la_end(r ? tensor__pinv_record(r, A, atol, rtol, hermitian) : NULL);
}

TENSOR_API tensor *tensor_linalg_matrix_rank(tensor *A, double atol, double rtol, bool hermitian) {
    const char *fn = "tensor_linalg_matrix_rank";
    TENSOR__CHECK_ARG(fn, A);
    if (!tensor__svd_check(fn, A)) return NULL;
    if (atol != atol || rtol != rtol) return tensor__fail(fn, "atol and rtol must be numbers, got %g and %g", atol, rtol);
    if (hermitian && A->shape[A->ndim - 1] != A->shape[A->ndim - 2]) return tensor__fail(fn, "hermitian = true needs square matrices, got shape %s", tensor__shape_of(A));
    TENSOR__LA_BEGIN(fn);
    int64_t m = A->shape[A->ndim - 2], n = A->shape[A->ndim - 1];
    tensor *d = tensor_detach(A);
    tensor *S = tensor__svdvals(fn, hermitian ? tensor__la_sym_lower(d) : d);
    tensor *r = S ? tensor_sum(tensor_gt(S, tensor__la_tol(S, m, n, atol, rtol)), -1, false) : NULL;
    return tensor__la_end(r);
}

TENSOR_API tensor *tensor_linalg_lstsq(tensor *A, tensor *B, double rcond, tensor **residuals, tensor **rank, tensor **singular_values) {
    const char *fn = "tensor_linalg_lstsq";
    if (residuals) *residuals = NULL;
    if (rank) *rank = NULL;
    if (singular_values) *singular_values = NULL;
    TENSOR__CHECK_ARG(fn, A);
    TENSOR__CHECK_ARG(fn, B);
    tensor *ins[2] = {A, B};
    if (!tensor__same_device(fn, 2, ins)) return NULL;
    if (!tensor__svd_check(fn, A)) return NULL;
    if (A->dtype != B->dtype)
        return tensor__fail(fn, "expected A and B to have the same dtype, but found A of type %s and B of type %s instead", tensor__dtype_names[A->dtype], tensor__dtype_names[B->dtype]);
    if (rcond != rcond) return tensor__fail(fn, "rcond must be a number, got NaN");
    int64_t m = A->shape[A->ndim - 2], n = A->shape[A->ndim - 1];
    /* B a batch of vectors when it is 1-D or of A's shape without its last dim (as PyTorch
       decides), else matrices [..., m, k] */
    bool vec = B->ndim == 1;
    if (!vec && B->ndim == A->ndim - 1) {
        vec = true;
        for (int d = 0; d < B->ndim; d++) vec &= B->shape[d] == A->shape[d];
    }
    if (B->ndim < 1 || (!vec && B->ndim < 2)) return tensor__fail(fn, "the input tensor B must have at least 1 dimension, got shape %s", tensor__shape_of(B));
    int64_t bm = B->shape[B->ndim - (vec ? 1 : 2)];
    if (bm != m) return tensor__fail(fn, "incompatible shapes of A and B for the equation AX = B (%lldx%lld and %s)", (long long)m, (long long)n, tensor__shape_of(B));
    int nbd = 0;
    int64_t bs[TENSOR_MAX_DIMS];
    if (!tensor__broadcast_shapes(fn, A->ndim - 2, A->shape, B->ndim - (vec ? 1 : 2), B->shape, &nbd, bs)) return NULL;
    TENSOR__LA_BEGIN(fn);
    tensor *b = vec ? tensor_unsqueeze(B, -1) : B;
    tensor *U = NULL, *S = NULL, *Vh = NULL;
    double eps = A->dtype == TENSOR_F32 ? (double)FLT_EPSILON : DBL_EPSILON;
    double rc = rcond < 0 ? eps * (double)(m > n ? m : n) : rcond;
    /* X = pinv(A) B, pinv's node carrying A's gradient (PyTorch's linalg_lstsq_backward) */
    bool was = tensor_set_grad_enabled(false);
    tensor *keep = NULL, *P = NULL;
    if (tensor__svd_split(tensor__svd_run(fn, A, false, false), m, n, false, &U, &S, &Vh)) {
        keep = tensor_gt(S, tensor__la_tol(S, m, n, 0, rc));
        P = tensor__pinv_of_svd(U, S, Vh, keep);
    }
    tensor_set_grad_enabled(was);
    P = P ? tensor__pinv_record(P, A, 0, rc, false) : NULL;
    tensor *x = P ? tensor_matmul(P, b) : NULL;
    tensor *rk = keep ? tensor_sum(keep, -1, false) : NULL;
    tensor *res = NULL;
    if (x && rk && residuals) {
        /* only when m > n and every matrix has full rank (as PyTorch) */
        bool full_rank = m > n;
        if (full_rank && tensor_numel(rk) > 0) {
            int64_t low = -1;
            if (!tensor__item_i64(tensor_min_all(rk), &low)) return tensor__la_end(NULL);
            full_rank = low == n;
        }
        if (full_rank) {
            tensor *d = tensor_sub(tensor_matmul(A, x), b);
            res = tensor_sum(tensor_mul(d, d), -2, false);
            if (res && vec) res = tensor_squeeze(res, -1);
        } else {
            int64_t zero = 0;
            res = tensor_empty(1, &zero, A->dtype);
        }
        if (res && res->storage->device != A->storage->device) res = tensor_to_device(res, A->storage->device);
    }
    if (x && vec) x = tensor_squeeze(x, -1);
    if (!x || !rk || (residuals && !res)) return tensor__la_end(NULL);
    if (rank) *rank = tensor_keep(rk);
    if (singular_values) *singular_values = tensor_keep(tensor_detach(S));
    if (residuals) *residuals = tensor_keep(res);
    return tensor__la_end(x);
}

TENSOR_API tensor *tensor_linalg_cond(tensor *A, const char *p) {
    const char *fn = "tensor_linalg_cond";
    TENSOR__CHECK_ARG(fn, A);
    if (!tensor__svd_check(fn, A)) return NULL;
    int code = p ? tensor__matrix_ord(p) : TENSOR__MN_2;
    if (code == TENSOR__MN_BAD) return tensor__fail(fn, "order %s not supported (fro, nuc, 1, -1, 2, -2, inf, -inf; NULL: 2)", p);
    if (code == TENSOR__MN_2 || code == TENSOR__MN_M2) {
        TENSOR__LA_BEGIN(fn);
        tensor *S = tensor__svdvals(fn, A);
        if (!S) return tensor__la_end(NULL);
        int64_t k = S->shape[S->ndim - 1];
        if (k == 0) return tensor__la_end(tensor_sum(S, -1, false)); /* zeros of the batch shape */
        tensor *hi = tensor_select(S, -1, 0), *lo = tensor_select(S, -1, k - 1);
        return tensor__la_end(code == TENSOR__MN_2 ? tensor_div(hi, lo) : tensor_div(lo, hi));
    }
    if (!tensor__la_square(fn, "A", A)) return NULL;
    TENSOR__LA_BEGIN(fn);
    int64_t n = A->shape[A->ndim - 1];
    /* zeros of the batch shape (an empty batch too: no n x n identity for it) */
    if (tensor__numel_of(A->ndim, A->shape) == 0) return tensor__la_end(tensor_sum(tensor_sum(A, -1, false), -1, false));
    /* singular matrices (a zero on U's diagonal) give inf: they are replaced by I for the inverse */
    tensor *piv = NULL;
    tensor *lu = tensor__la_lu(fn, tensor_detach(A), &piv, false);
    int last = -1;
    tensor *sing = lu ? tensor_amax(tensor_to_dtype(tensor__op_scalar(TENSOR_OP_eq, tensor_diagonal(lu, 0, -2, -1), 0), A->dtype), 1, &last, false) : NULL;
    tensor *bad = sing ? tensor__op_scalar(TENSOR_OP_gt, sing, 0) : NULL;
    tensor *eye = tensor_eye(n, A->dtype);
    eye = tensor__on(eye, A->storage->device);
    tensor *a2 = bad && eye ? tensor_where(tensor_unsqueeze(tensor_unsqueeze(bad, -1), -1), eye, A) : NULL;
    tensor *inv = a2 ? tensor_linalg_inv(a2) : NULL;
    tensor *r = inv ? tensor_mul(tensor__matrix_norm(fn, A, code, -2 + A->ndim, -1 + A->ndim, false), tensor__matrix_norm(fn, inv, code, -2 + A->ndim, -1 + A->ndim, false)) : NULL;
    r = r ? tensor_masked_fill(r, bad, INFINITY) : NULL;
    return tensor__la_end(r);
}
