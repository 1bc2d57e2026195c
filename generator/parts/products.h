// >>products -----------------------------------------------------------------------------------
/* The products PyTorch users reach for: mm, bmm, mv, dot, vdot, inner, outer, kron, cross,
   tensordot, einsum, addmm and its kin, matrix_power, linalg_multi_dot, cdist, cov, corrcoef and
   trace. Every one is a composite of the registry's ops (matmul, mul, sum, reshape, permute, ...),
   so autograd and the CUDA device come with them: each checks its arguments the way PyTorch does
   (naming itself in the message), then arranges its operands into matrices (a view where the
   strides allow it, in either orientation, since matmul reads a transposed operand in place) and
   calls matmul. */

/* Test builds (TENSOR_TEST_HOOKS): the planned cost of this thread's last einsum (multiply-adds of
   its pairwise contractions) and how many operand arrangements had to be copied (not viewed). */
#ifdef TENSOR_TEST_HOOKS
static TENSOR__THREAD_LOCAL double tensor__prod_last_cost;
static TENSOR__THREAD_LOCAL int64_t tensor__prod_copies;
#define TENSOR__PROD_STAT(stmt) stmt
TENSOR_API double tensor_test_products_stat(const char *what) {
    if (what && !strcmp(what, "einsum_cost")) return tensor__prod_last_cost;
    if (what && !strcmp(what, "copies")) return (double)tensor__prod_copies;
    return -1;
}
#else
#define TENSOR__PROD_STAT(stmt) ((void)0)
#endif

/* Replaces an owned handle by the result of an op on it (the op ran first): frees old, returns
   new; a NULL result passes on, its message kept. */
static tensor *tensor__swap(tensor *old, tensor *neu) {
    tensor_free(old);
    return neu;
}

static bool tensor__prod_ndim(const char *fn, const char *name, const tensor *t, int nd) {
    if (t->ndim == nd) return true;
    tensor__fail(fn, "%s must be a %d-D tensor, got shape %s", name, nd, tensor__shape_of(t));
    return false;
}

/* n operands (NULLs skipped) on one device, of one dtype, not bool: what matmul needs. */
static bool tensor__prod_operands(const char *fn, int n, tensor *const *ts) {
    if (!tensor__same_device(fn, n, ts)) return false;
    const tensor *first = NULL;
    for (int i = 0; i < n; i++) {
        if (!ts[i]) continue;
        if (!first) first = ts[i];
        else if (ts[i]->dtype != first->dtype) {
            tensor__fail(fn, "expected operands of the same dtype, got %s and %s", tensor__dtype_names[first->dtype], tensor__dtype_names[ts[i]->dtype]);
            return false;
        }
    }
    if (first && first->dtype == TENSOR_BOOL) { tensor__fail(fn, "not supported for bool tensors"); return false; }
    return true;
}

/* True when shape a broadcasts to exactly shape b (b does not grow); else an error. */
static bool tensor__prod_fits(const char *fn, const tensor *input, int nb, const int64_t *b) {
    bool ok = input->ndim <= nb;
    for (int i = 1; ok && i <= input->ndim; i++) ok = input->shape[input->ndim - i] == b[nb - i] || input->shape[input->ndim - i] == 1;
    if (!ok) {
        char s[160];
        tensor__fail(fn, "input of shape %s does not broadcast to the product's shape %s", tensor__shape_of(input), tensor__shape_str(s, sizeof s, nb, b));
    }
    return ok;
}

/* s * t (a new handle to t when s is 1); integer tensors stay integers, s must then be integral. */
static tensor *tensor__prod_scale(const char *fn, tensor *t, double s) {
    if (!t) return NULL;
    if (s == 1) return tensor__alias(fn, t);
    if (tensor__is_float(t->dtype)) return tensor_mul_scalar(t, s);
    if (s != floor(s)) return tensor__fail(fn, "alpha and beta must be integers for %s operands, got %g", tensor__dtype_names[t->dtype], s);
    tensor *r = tensor_mul_scalar(t, s);
    return tensor__swap(r, tensor_to_dtype(r, t->dtype));
}

/* beta * input + alpha * prod (prod owned, consumed); beta 0 ignores input (NaN in it too), as
   PyTorch does. */
static tensor *tensor__prod_axpby(const char *fn, tensor *input, double beta, tensor *prod, double alpha) {
    tensor *r = tensor__swap(prod, tensor__prod_scale(fn, prod, alpha));
    if (!r || beta == 0) return r;
    tensor *bi = tensor__prod_scale(fn, input, beta);
    tensor *s = bi ? tensor_add(bi, r) : NULL;
    tensor_free(bi);
    tensor_free(r);
    return s;
}

/* t's dims gathered into a matrix [R, C] (nb 0) or a batch of matrices [B, R, C]: the dims bd, then
   rd (merged into R), then cd (merged into C); together they list every dim of t once. A view when
   the strides allow it, in either orientation ([B, C, R] transposed: matmul reads it in place),
   else a copy. The result is a new handle. */
static tensor *tensor__prod_group(const char *fn, tensor *t, int nb, const int *bd, int nr, const int *rd, int nc, const int *cd) {
    int p1[TENSOR_MAX_DIMS], p2[TENSOR_MAX_DIMS], n = 0;
    int64_t B = 1, R = 1, C = 1;
    for (int i = 0; i < nb; i++) { p1[n] = p2[n] = bd[i]; n++; B *= t->shape[bd[i]]; }
    for (int i = 0; i < nr; i++) { p1[n + i] = rd[i]; p2[n + nc + i] = rd[i]; R *= t->shape[rd[i]]; }
    for (int i = 0; i < nc; i++) { p1[n + nr + i] = cd[i]; p2[n + i] = cd[i]; C *= t->shape[cd[i]]; }
    n += nr + nc;
    int64_t s1[3], s2[3], st[3];
    int k = 0;
    if (nb) { s1[k] = s2[k] = B; k++; }
    s1[k] = R; s2[k] = C; k++;
    s1[k] = C; s2[k] = R; k++;
    /* the two permuted layouts, as metadata only, to ask whether each merges into a view */
    tensor v1, v2;
    memset(&v1, 0, sizeof v1);
    memset(&v2, 0, sizeof v2);
    v1.ndim = v2.ndim = n;
    for (int i = 0; i < n; i++) {
        v1.shape[i] = t->shape[p1[i]]; v1.strides[i] = t->strides[p1[i]];
        v2.shape[i] = t->shape[p2[i]]; v2.strides[i] = t->strides[p2[i]];
    }
    bool view1 = tensor__view_strides(&v1, k, s1, st), flip = !view1 && tensor__view_strides(&v2, k, s2, st);
    if (!view1 && !flip) TENSOR__PROD_STAT(tensor__prod_copies++);
    const int *perm = flip ? p2 : p1;
    bool identity = true;
    for (int i = 0; i < n; i++) identity = identity && perm[i] == i;
    tensor *x = identity ? tensor__alias(fn, t) : tensor_permute(t, n, perm);
    x = tensor__swap(x, tensor_reshape(x, k, flip ? s2 : s1));
    return flip ? tensor__swap(x, tensor_transpose(x, -1, -2)) : x;
}

/* The diagonal of dims p and q (equal sizes) of an owned t, consumed: those dims go, one of that
   size is appended last (t's other dims, then the diagonal), by reshape and a strided slice. */
static tensor *tensor__prod_diag(const char *fn, tensor *t, int p, int q) {
    int perm[TENSOR_MAX_DIMS], n = 0;
    int64_t shape[TENSOR_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++)
        if (i != p && i != q) { perm[n] = i; shape[n] = t->shape[i]; n++; }
    int64_t m = t->shape[p];
    perm[n] = p;
    perm[n + 1] = q;
    shape[n] = m * m; /* within the element count of t */
    tensor *x = tensor__swap(t, tensor_permute(t, n + 2, perm));
    x = tensor__swap(x, tensor_reshape(x, n + 1, shape));
    (void)fn;
    return tensor__swap(x, tensor_slice(x, n, 0, m * m, m + 1));
}

/* ---- matrix products ---- */

TENSOR_API tensor *tensor_mm(tensor *a, tensor *b) {
    const char *fn = "tensor_mm";
    TENSOR__CHECK_ARG(fn, a);
    TENSOR__CHECK_ARG(fn, b);
    tensor *ins[2] = {a, b};
    if (!tensor__prod_ndim(fn, "self", a, 2) || !tensor__prod_ndim(fn, "mat2", b, 2) || !tensor__prod_operands(fn, 2, ins)) return NULL;
    if (a->shape[1] != b->shape[0])
        return tensor__fail(fn, "shapes %s and %s cannot be multiplied (%lld != %lld)", tensor__shape_of(a), tensor__shape_of(b), (long long)a->shape[1], (long long)b->shape[0]);
    return tensor_matmul(a, b);
}

TENSOR_API tensor *tensor_bmm(tensor *a, tensor *b) {
    const char *fn = "tensor_bmm";
    TENSOR__CHECK_ARG(fn, a);
    TENSOR__CHECK_ARG(fn, b);
    tensor *ins[2] = {a, b};
    if (!tensor__prod_ndim(fn, "batch1", a, 3) || !tensor__prod_ndim(fn, "batch2", b, 3) || !tensor__prod_operands(fn, 2, ins)) return NULL;
    if (a->shape[0] != b->shape[0])
        return tensor__fail(fn, "batch1 %s and batch2 %s must have the same batch size (%lld != %lld)", tensor__shape_of(a), tensor__shape_of(b), (long long)a->shape[0], (long long)b->shape[0]);
    if (a->shape[2] != b->shape[1])
        return tensor__fail(fn, "shapes %s and %s cannot be multiplied (%lld != %lld)", tensor__shape_of(a), tensor__shape_of(b), (long long)a->shape[2], (long long)b->shape[1]);
    return tensor_matmul(a, b);
}

TENSOR_API tensor *tensor_mv(tensor *a, tensor *v) {
    const char *fn = "tensor_mv";
    TENSOR__CHECK_ARG(fn, a);
    TENSOR__CHECK_ARG(fn, v);
    tensor *ins[2] = {a, v};
    if (!tensor__prod_ndim(fn, "self", a, 2) || !tensor__prod_ndim(fn, "vec", v, 1) || !tensor__prod_operands(fn, 2, ins)) return NULL;
    if (a->shape[1] != v->shape[0])
        return tensor__fail(fn, "shapes %s and %s cannot be multiplied (%lld != %lld)", tensor__shape_of(a), tensor__shape_of(v), (long long)a->shape[1], (long long)v->shape[0]);
    return tensor_matmul(a, v);
}

static tensor *tensor__dot(const char *fn, tensor *a, tensor *b) {
    TENSOR__CHECK_ARG(fn, a);
    TENSOR__CHECK_ARG(fn, b);
    tensor *ins[2] = {a, b};
    if (a->ndim != 1 || b->ndim != 1)
        return tensor__fail(fn, "1-D tensors expected, got shapes %s and %s", tensor__shape_of(a), tensor__shape_of(b));
    if (!tensor__prod_operands(fn, 2, ins)) return NULL;
    if (a->shape[0] != b->shape[0])
        return tensor__fail(fn, "vectors of shapes %s and %s must have the same number of elements", tensor__shape_of(a), tensor__shape_of(b));
    return tensor_matmul(a, b);
}
TENSOR_API tensor *tensor_dot(tensor *a, tensor *b) { return tensor__dot("tensor_dot", a, b); }
/* Real dtypes only: conjugating a is the identity, so vdot is dot. */
TENSOR_API tensor *tensor_vdot(tensor *a, tensor *b) { return tensor__dot("tensor_vdot", a, b); }

TENSOR_API tensor *tensor_inner(tensor *a, tensor *b) {
    const char *fn = "tensor_inner";
    TENSOR__CHECK_ARG(fn, a);
    TENSOR__CHECK_ARG(fn, b);
    tensor *ins[2] = {a, b};
    if (!tensor__same_device(fn, 2, ins)) return NULL;
    if (a->ndim == 0 || b->ndim == 0) return tensor_mul(a, b); /* as PyTorch: a scalar scales */
    if (!tensor__prod_operands(fn, 2, ins)) return NULL;
    int64_t k = a->shape[a->ndim - 1];
    if (b->shape[b->ndim - 1] != k)
        return tensor__fail(fn, "the last dims must match, got shapes %s and %s", tensor__shape_of(a), tensor__shape_of(b));
    int nd = a->ndim + b->ndim - 2;
    if (nd > TENSOR_MAX_DIMS) return tensor__fail(fn, "the result of shapes %s and %s would have %d dims (at most %d)", tensor__shape_of(a), tensor__shape_of(b), nd, TENSOR_MAX_DIMS);
    int ra[TENSOR_MAX_DIMS], rb[TENSOR_MAX_DIMS], ka = a->ndim - 1, kb = b->ndim - 1;
    int64_t shape[TENSOR_MAX_DIMS];
    for (int i = 0; i < a->ndim - 1; i++) { ra[i] = i; shape[i] = a->shape[i]; }
    for (int i = 0; i < b->ndim - 1; i++) { rb[i] = i; shape[a->ndim - 1 + i] = b->shape[i]; }
    tensor *ma = tensor__prod_group(fn, a, 0, NULL, a->ndim - 1, ra, 1, &ka);
    tensor *mb = tensor__prod_group(fn, b, 0, NULL, 1, &kb, b->ndim - 1, rb); /* [k, B] */
    tensor *r = ma && mb ? tensor_matmul(ma, mb) : NULL;
    tensor_free(ma);
    tensor_free(mb);
    return tensor__swap(r, tensor_reshape(r, nd, shape));
}

TENSOR_API tensor *tensor_outer(tensor *a, tensor *b) {
    const char *fn = "tensor_outer";
    TENSOR__CHECK_ARG(fn, a);
    TENSOR__CHECK_ARG(fn, b);
    tensor *ins[2] = {a, b};
    if (!tensor__prod_ndim(fn, "self", a, 1) || !tensor__prod_ndim(fn, "vec2", b, 1) || !tensor__same_device(fn, 2, ins)) return NULL;
    tensor *col = tensor_unsqueeze(a, 1);
    tensor *r = col ? tensor_mul(col, b) : NULL;
    tensor_free(col);
    return r;
}

TENSOR_API tensor *tensor_kron(tensor *a, tensor *b) {
    const char *fn = "tensor_kron";
    TENSOR__CHECK_ARG(fn, a);
    TENSOR__CHECK_ARG(fn, b);
    tensor *ins[2] = {a, b};
    if (!tensor__same_device(fn, 2, ins)) return NULL;
    int nd = a->ndim > b->ndim ? a->ndim : b->ndim, k = 0;
    int64_t sa[2 * TENSOR_MAX_DIMS], sb[2 * TENSOR_MAX_DIMS], out[TENSOR_MAX_DIMS];
    /* each dim i becomes a pair [a_i, b_i] (a merged dim a_i * b_i), or one dim where a size is 1 */
    for (int i = 0; i < nd; i++) {
        int64_t ai = i < nd - a->ndim ? 1 : a->shape[i - (nd - a->ndim)], bi = i < nd - b->ndim ? 1 : b->shape[i - (nd - b->ndim)];
        if (!tensor__size_mul(ai, bi, &out[i])) return tensor__fail(fn, "the result of shapes %s and %s is too large", tensor__shape_of(a), tensor__shape_of(b));
        if (ai == 1 || bi == 1) { sa[k] = ai; sb[k] = bi; k++; }
        else { sa[k] = ai; sb[k] = 1; sa[k + 1] = 1; sb[k + 1] = bi; k += 2; }
    }
    if (k > TENSOR_MAX_DIMS)
        return tensor__fail(fn, "shapes %s and %s need %d interleaved dims (at most %d: dims where both sizes exceed 1 count twice)", tensor__shape_of(a),
                            tensor__shape_of(b), k, TENSOR_MAX_DIMS);
    tensor *xa = tensor_reshape(a, k, sa), *xb = tensor_reshape(b, k, sb);
    tensor *r = xa && xb ? tensor_mul(xa, xb) : NULL;
    tensor_free(xa);
    tensor_free(xb);
    return tensor__swap(r, tensor_reshape(r, nd, out));
}

static tensor *tensor__cross(const char *fn, tensor *a, tensor *b, int dim) {
    TENSOR__CHECK_ARG(fn, a);
    TENSOR__CHECK_ARG(fn, b);
    tensor *ins[2] = {a, b};
    if (!tensor__same_device(fn, 2, ins)) return NULL;
    if (a->ndim != b->ndim) return tensor__fail(fn, "inputs must have the same number of dims, got shapes %s and %s", tensor__shape_of(a), tensor__shape_of(b));
    if (a->dtype != b->dtype) return tensor__fail(fn, "expected inputs of the same dtype, got %s and %s", tensor__dtype_names[a->dtype], tensor__dtype_names[b->dtype]);
    if (a->dtype == TENSOR_BOOL) return tensor__fail(fn, "not supported for bool tensors");
    int d = tensor__wrap_dim(fn, dim, a->ndim);
    if (d < 0) return NULL;
    if (a->shape[d] != 3 || b->shape[d] != 3)
        return tensor__fail(fn, "dim %d of the inputs must have length 3, got shapes %s and %s", dim, tensor__shape_of(a), tensor__shape_of(b));
    int nd;
    int64_t shape[TENSOR_MAX_DIMS];
    if (!tensor__broadcast_shapes(fn, a->ndim, a->shape, b->ndim, b->shape, &nd, shape)) return NULL;
    tensor *x[3], *y[3], *c[3] = {NULL, NULL, NULL};
    for (int i = 0; i < 3; i++) { x[i] = tensor_select(a, d, i); y[i] = tensor_select(b, d, i); }
    for (int i = 0; i < 3; i++) {
        int j = (i + 1) % 3, l = (i + 2) % 3; /* c_i = x_j y_l - x_l y_j */
        tensor *p = tensor_mul(x[j], y[l]), *q = tensor_mul(x[l], y[j]);
        c[i] = p && q ? tensor_sub(p, q) : NULL;
        tensor_free(p);
        tensor_free(q);
    }
    tensor *r = c[0] && c[1] && c[2] ? tensor_stack(3, c, d) : NULL;
    for (int i = 0; i < 3; i++) { tensor_free(x[i]); tensor_free(y[i]); tensor_free(c[i]); }
    return r;
}
/* torch.cross with an explicit dim (its dim=None default, the first dim of size 3, is deprecated
   in PyTorch and has no equivalent here). */
TENSOR_API tensor *tensor_cross(tensor *a, tensor *b, int dim) { return tensor__cross("tensor_cross", a, b, dim); }
TENSOR_API tensor *tensor_linalg_cross(tensor *a, tensor *b, int dim) { return tensor__cross("tensor_linalg_cross", a, b, dim); }

/* dims_a == dims_b == NULL: the last n dims of a against the first n of b (dims=n); else n pairs. */
TENSOR_API tensor *tensor_tensordot(tensor *a, tensor *b, int n, const int *dims_a, const int *dims_b) {
    const char *fn = "tensor_tensordot";
    TENSOR__CHECK_ARG(fn, a);
    TENSOR__CHECK_ARG(fn, b);
    tensor *ins[2] = {a, b};
    if (!tensor__prod_operands(fn, 2, ins)) return NULL;
    if (!dims_a != !dims_b) return tensor__fail(fn, "dims_a and dims_b must both be given or both be NULL");
    if (n < 0) return tensor__fail(fn, "the number of contracted dims must be >= 0, got %d", n);
    int da[TENSOR_MAX_DIMS], db[TENSOR_MAX_DIMS];
    if (!dims_a) {
        if (n > a->ndim || n > b->ndim) return tensor__fail(fn, "cannot contract %d dims of shapes %s and %s", n, tensor__shape_of(a), tensor__shape_of(b));
        for (int i = 0; i < n; i++) { da[i] = a->ndim - n + i; db[i] = i; }
    } else {
        if (n > a->ndim || n > b->ndim) return tensor__fail(fn, "%d dims to contract, but the shapes are %s and %s", n, tensor__shape_of(a), tensor__shape_of(b));
        for (int i = 0; i < n; i++) {
            if ((da[i] = tensor__wrap_dim(fn, dims_a[i], a->ndim)) < 0 || (db[i] = tensor__wrap_dim(fn, dims_b[i], b->ndim)) < 0) return NULL;
            for (int j = 0; j < i; j++)
                if (da[j] == da[i] || db[j] == db[i]) return tensor__fail(fn, "dim %d appears more than once in the list of dims", da[j] == da[i] ? dims_a[i] : dims_b[i]);
        }
    }
    bool in_a[TENSOR_MAX_DIMS] = {false}, in_b[TENSOR_MAX_DIMS] = {false}, bcast = false;
    for (int i = 0; i < n; i++) {
        int64_t sa = a->shape[da[i]], sb = b->shape[db[i]];
        if (sa != sb && sa != 1 && sb != 1)
            return tensor__fail(fn, "contracted dims must match, but a has size %lld in dim %d and b has size %lld in dim %d", (long long)sa, da[i], (long long)sb, db[i]);
        bcast = bcast || sa != sb;
        in_a[da[i]] = in_b[db[i]] = true;
    }
    int fa[TENSOR_MAX_DIMS], fb[TENSOR_MAX_DIMS], nfa = 0, nfb = 0;
    int64_t shape[2 * TENSOR_MAX_DIMS];
    for (int i = 0; i < a->ndim; i++) if (!in_a[i]) { shape[nfa] = a->shape[i]; fa[nfa++] = i; }
    for (int i = 0; i < b->ndim; i++) if (!in_b[i]) { shape[nfa + nfb] = b->shape[i]; fb[nfb++] = i; }
    if (nfa + nfb > TENSOR_MAX_DIMS) return tensor__fail(fn, "the result would have %d dims (at most %d)", nfa + nfb, TENSOR_MAX_DIMS);
    if (tensor__check_shape(fn, nfa + nfb, shape) < 0) return NULL; /* before any work (the sums below) */
    tensor *xa = tensor__alias(fn, a), *xb = tensor__alias(fn, b);
    if (bcast) { /* a size-1 dim against a size-m one: the other side is summed over it first (keepdim) */
        int sa_d[TENSOR_MAX_DIMS], sb_d[TENSOR_MAX_DIMS], nsa = 0, nsb = 0;
        for (int i = 0; i < n; i++) {
            if (a->shape[da[i]] == 1 && b->shape[db[i]] != 1) sb_d[nsb++] = db[i];
            if (b->shape[db[i]] == 1 && a->shape[da[i]] != 1) sa_d[nsa++] = da[i];
        }
        if (nsa) xa = tensor__swap(xa, tensor_sum_dims(xa, nsa, sa_d, true));
        if (nsb) xb = tensor__swap(xb, tensor_sum_dims(xb, nsb, sb_d, true));
        if (xa && xb && xa->dtype != xb->dtype) { /* an integer side summed to i64 */
            tensor_dtype t = tensor_promote_types(xa->dtype, xb->dtype);
            xa = tensor__swap(xa, tensor_to_dtype(xa, t));
            xb = tensor__swap(xb, tensor_to_dtype(xb, t));
        }
    }
    tensor *ma = xa ? tensor__prod_group(fn, xa, 0, NULL, nfa, fa, n, da) : NULL;
    tensor *mb = xb ? tensor__prod_group(fn, xb, 0, NULL, n, db, nfb, fb) : NULL;
    tensor_free(xa);
    tensor_free(xb);
    tensor *r = ma && mb ? tensor_matmul(ma, mb) : NULL;
    tensor_free(ma);
    tensor_free(mb);
    return tensor__swap(r, tensor_reshape(r, nfa + nfb, shape));
}

/* ---- einsum ---- */

/* Labels: 'A'..'Z' are 0..25, 'a'..'z' 26..51, the dims an ellipsis covers 52..59 (right-aligned
   across the operands, broadcast like NumPy). A set of labels is a bit mask. */
#define TENSOR__EIN_ELL 52
typedef struct {
    tensor *t; /* owned */
    int lab[TENSOR_MAX_DIMS];
    uint64_t mask;
} tensor__ein_op;

static uint64_t tensor__ein_bits(const tensor__ein_op *o) {
    uint64_t m = 0;
    for (int i = 0; i < o->t->ndim; i++) m |= (uint64_t)1 << o->lab[i];
    return m;
}
static char tensor__ein_char(int l) { return l < 26 ? (char)('A' + l) : l < 52 ? (char)('a' + l - 26) : '.'; }
static int tensor__ein_popcount(uint64_t m) {
    int n = 0;
    for (; m; m &= m - 1) n++;
    return n;
}
static double tensor__ein_size(uint64_t m, const int64_t *size) {
    double s = 1;
    for (int l = 0; l < 64; l++) if (m >> l & 1) s *= (double)size[l];
    return s;
}

/* Sums o over the labels outside `keep` (where o is their only holder). */
static bool tensor__ein_sum_out(tensor__ein_op *o, uint64_t keep) {
    int dims[TENSOR_MAX_DIMS], nd = 0, lab[TENSOR_MAX_DIMS], nl = 0;
    for (int i = 0; i < o->t->ndim; i++) {
        if (keep >> o->lab[i] & 1) lab[nl++] = o->lab[i];
        else dims[nd++] = i;
    }
    if (!nd) return true;
    o->t = tensor__swap(o->t, tensor_sum_dims(o->t, nd, dims, false));
    if (!o->t) return false;
    for (int i = 0; i < nl; i++) o->lab[i] = lab[i];
    o->mask = tensor__ein_bits(o);
    return true;
}

/* x and y (consumed) contracted into one operand holding the labels `keep` of theirs: the labels
   both hold and keep are matmul's batch, those both hold and drop its inner dim, the rest its rows
   (x's) and columns (y's). */
static bool tensor__ein_pair(const char *fn, tensor__ein_op *x, tensor__ein_op *y, uint64_t keep, const int64_t *size, tensor__ein_op *out) {
    out->t = NULL;
    bool ok = tensor__ein_sum_out(x, keep | y->mask) && tensor__ein_sum_out(y, keep | x->mask);
    if (ok && x->t->dtype != y->t->dtype) { /* an integer operand summed to i64 */
        tensor_dtype t = tensor_promote_types(x->t->dtype, y->t->dtype);
        x->t = tensor__swap(x->t, tensor_to_dtype(x->t, t));
        y->t = tensor__swap(y->t, tensor_to_dtype(y->t, t));
        ok = x->t && y->t;
    }
    int xb[TENSOR_MAX_DIMS], xr[TENSOR_MAX_DIMS], xc[TENSOR_MAX_DIMS], yb[TENSOR_MAX_DIMS], yr[TENSOR_MAX_DIMS], yc[TENSOR_MAX_DIMS];
    int nb = 0, nr = 0, nc = 0, mr = 0, nl = 0, lab[3 * TENSOR_MAX_DIMS];
    int64_t shape[3 * TENSOR_MAX_DIMS];
    if (ok) {
        int ypos[64];
        for (int i = 0; i < y->t->ndim; i++) ypos[y->lab[i]] = i;
        for (int i = 0; i < x->t->ndim; i++) { /* batch and inner labels in x's order, y follows */
            int l = x->lab[i];
            if (!(y->mask >> l & 1)) xr[nr++] = i;
            else if (keep >> l & 1) { xb[nb] = i; yb[nb] = ypos[l]; nb++; }
            else { xc[nc] = i; yc[nc] = ypos[l]; nc++; }
        }
        for (int i = 0; i < y->t->ndim; i++) if (!(x->mask >> y->lab[i] & 1)) yr[mr++] = i;
        for (int i = 0; i < nb; i++) { lab[nl] = x->lab[xb[i]]; shape[nl++] = size[x->lab[xb[i]]]; }
        for (int i = 0; i < nr; i++) { lab[nl] = x->lab[xr[i]]; shape[nl++] = x->t->shape[xr[i]]; }
        for (int i = 0; i < mr; i++) { lab[nl] = y->lab[yr[i]]; shape[nl++] = y->t->shape[yr[i]]; }
        if (nl > TENSOR_MAX_DIMS) { tensor__fail(fn, "an intermediate result would have %d dims (at most %d)", nl, TENSOR_MAX_DIMS); ok = false; }
    }
    tensor *mx = ok ? tensor__prod_group(fn, x->t, nb, xb, nr, xr, nc, xc) : NULL;
    tensor *my = ok ? tensor__prod_group(fn, y->t, nb, yb, nc, yc, mr, yr) : NULL;
    tensor_free(x->t);
    tensor_free(y->t);
    x->t = y->t = NULL;
    tensor *r = mx && my ? tensor_matmul(mx, my) : NULL;
    tensor_free(mx);
    tensor_free(my);
    r = tensor__swap(r, tensor_reshape(r, nl, shape));
    if (!r) return false;
    out->t = r;
    for (int i = 0; i < nl; i++) out->lab[i] = lab[i];
    out->mask = tensor__ein_bits(out);
    return true;
}

/* The contraction order: for every subset S of the operands (n <= 12), the cheapest way to reduce
   it to one tensor, by dynamic programming over the splits of S; the cost of a pairwise
   contraction is the product of the sizes of the labels it touches (its multiply-adds). A
   contraction whose result would pass TENSOR_MAX_DIMS dims is never chosen. */
typedef struct {
    int n;
    uint64_t *uni;  /* labels held by the operands of S */
    uint64_t *keep; /* the labels S's result keeps: those of S that the output or the other operands need */
    double *cost;
    uint32_t *split;
} tensor__ein_plan;

static int tensor__ein_contract(const char *fn, const tensor__ein_plan *p, tensor__ein_op *ops, uint32_t s, const int64_t *size) {
    if (!(s & (s - 1))) {
        int i = 0;
        while (!(s >> i & 1)) i++;
        return i;
    }
    uint32_t a = p->split[s];
    int ia = tensor__ein_contract(fn, p, ops, a, size);
    if (ia < 0) return -1;
    int ib = tensor__ein_contract(fn, p, ops, s & ~a, size);
    if (ib < 0) return -1;
    tensor__ein_op r;
    if (!tensor__ein_pair(fn, &ops[ia], &ops[ib], p->keep[s], size, &r)) return -1;
    ops[ia] = r;
    return ia;
}

/* einsum on n operands: the equation as torch.einsum takes it ("ij,jk->ik", "...ii->...i",
   implicit output when there is no "->"). */
TENSOR_API tensor *tensor_einsum(const char *equation, int n, tensor *const *operands) {
    const char *fn = "tensor_einsum";
    if (!equation) return tensor__null_arg(fn, "equation");
    if (n < 1) return tensor__fail(fn, "needs at least one operand, got n = %d", n);
    if (!operands) return tensor__null_arg(fn, "operands");
    for (int i = 0; i < n; i++) if (!operands[i]) return tensor__null_arg(fn, "operands[i]");
    if (!tensor__same_device(fn, n, operands)) return NULL;
    for (int i = 1; i < n; i++)
        if (operands[i]->dtype != operands[0]->dtype)
            return tensor__fail(fn, "expected operands of the same dtype, got %s (operand 0) and %s (operand %d)", tensor__dtype_names[operands[0]->dtype],
                                tensor__dtype_names[operands[i]->dtype], i);
    if (operands[0]->dtype == TENSOR_BOOL) return tensor__fail(fn, "not supported for bool tensors");
    if (n > 64) return tensor__fail(fn, "at most 64 operands, got %d", n);
    /* parse: the labels of each term (-1 marks its ellipsis), then the output */
    int (*terms)[TENSOR_MAX_DIMS + 1] = (int (*)[TENSOR_MAX_DIMS + 1])TENSOR__MALLOC(sizeof *terms * (size_t)n);
    int *nlab = (int *)TENSOR__MALLOC(sizeof(int) * (size_t)n), *ell = (int *)TENSOR__MALLOC(sizeof(int) * (size_t)n);
    tensor__ein_op *ops = (tensor__ein_op *)TENSOR__MALLOC(sizeof *ops * (size_t)n);
    tensor__ein_plan plan;
    memset(&plan, 0, sizeof plan);
    tensor *result = NULL;
    int made = 0;
    if (!terms || !nlab || !ell || !ops) { tensor__fail(fn, "out of memory"); goto done; }
    {
        const char *s = equation;
        int term = 0, out_lab[TENSOR_MAX_DIMS + 1], n_out = 0, out_ell = -1;
        bool arrow = false;
        nlab[0] = 0;
        ell[0] = -1;
        for (int i = 0; i < n; i++) { nlab[i] = 0; ell[i] = -1; }
        for (int pos = 0; s[pos]; pos++) {
            char ch = s[pos];
            if (ch == ' ' || ch == '\t' || ch == '\n') continue;
            if (ch == '-' ) {
                if (s[pos + 1] != '>' || arrow) { tensor__fail(fn, "invalid '-' at index %d of the equation \"%s\" (expected one \"->\")", pos, equation); goto done; }
                if (term != n - 1) { tensor__fail(fn, "the equation \"%s\" names %d operands, %d were given", equation, term + 1, n); goto done; }
                arrow = true;
                pos++;
                continue;
            }
            if (ch == ',') {
                if (arrow) { tensor__fail(fn, "',' after \"->\" in the equation \"%s\"", equation); goto done; }
                if (++term >= n) { tensor__fail(fn, "the equation \"%s\" names more operands than the %d given", equation, n); goto done; }
                continue;
            }
            int label;
            if (ch == '.') {
                if (s[pos + 1] != '.' || s[pos + 2] != '.') { tensor__fail(fn, "'.' at index %d of the equation \"%s\" is not part of an ellipsis", pos, equation); goto done; }
                pos += 2;
                label = -1;
            } else if (ch >= 'A' && ch <= 'Z') label = ch - 'A';
            else if (ch >= 'a' && ch <= 'z') label = 26 + ch - 'a';
            else { tensor__fail(fn, "invalid subscript '%c' at index %d of the equation \"%s\": subscripts must be in [a-zA-Z]", ch, pos, equation); goto done; }
            int *lab = arrow ? out_lab : terms[term], *cnt = arrow ? &n_out : &nlab[term], *el = arrow ? &out_ell : &ell[term];
            if (label < 0) {
                if (*el >= 0) { tensor__fail(fn, "more than one ellipsis in a term of the equation \"%s\"", equation); goto done; }
                *el = *cnt;
            }
            if (*cnt > TENSOR_MAX_DIMS) { tensor__fail(fn, "a term of the equation \"%s\" has more than %d subscripts", equation, TENSOR_MAX_DIMS); goto done; }
            lab[(*cnt)++] = label;
        }
        if (term != n - 1) { tensor__fail(fn, "the equation \"%s\" names %d operands, %d were given", equation, term + 1, n); goto done; }
        /* the ellipsis dims of each operand, and their count E over all */
        int E = 0, edims[64];
        for (int i = 0; i < n; i++) {
            int letters = nlab[i] - (ell[i] >= 0), nd = operands[i]->ndim;
            edims[i] = ell[i] >= 0 ? nd - letters : 0;
            if (edims[i] < 0 || (ell[i] < 0 && letters != nd)) {
                tensor__fail(fn, "operand %d has %d dims (shape %s), but its term in \"%s\" names %d%s", i, nd, tensor__shape_of(operands[i]), equation, letters,
                             ell[i] >= 0 ? " and an ellipsis" : " and no ellipsis");
                goto done;
            }
            if (edims[i] > E) E = edims[i];
        }
        /* each operand with its labels; sizes agree or broadcast from 1 */
        int64_t size[64];
        int count[64] = {0};
        for (int l = 0; l < 64; l++) size[l] = -1;
        for (int i = 0; i < n; i++) {
            tensor *t = operands[i];
            int lab[TENSOR_MAX_DIMS], d = 0;
            for (int j = 0; j < nlab[i]; j++) {
                if (terms[i][j] >= 0) lab[d++] = terms[i][j];
                else for (int e = 0; e < edims[i]; e++) lab[d++] = TENSOR__EIN_ELL + E - edims[i] + e;
            }
            for (int j = 0; j < d; j++) {
                int l = lab[j];
                int64_t sz = t->shape[j];
                for (int q = 0; q < j; q++)
                    if (lab[q] == l && t->shape[q] != sz) {
                        tensor__fail(fn, "subscript %c is repeated for operand %d but the sizes don't match, %lld != %lld", tensor__ein_char(l), i, (long long)t->shape[q], (long long)sz);
                        goto done;
                    }
                if (size[l] < 0 || size[l] == 1) size[l] = sz;
                else if (sz != 1 && sz != size[l]) {
                    if (l >= TENSOR__EIN_ELL) tensor__fail(fn, "the ellipsis dims of operand %d (shape %s) do not broadcast with those seen before (size %lld vs %lld)", i, tensor__shape_of(t), (long long)sz, (long long)size[l]);
                    else tensor__fail(fn, "subscript %c has size %lld for operand %d which does not broadcast with the size %lld seen before", tensor__ein_char(l), (long long)sz, i, (long long)size[l]);
                    goto done;
                }
                count[l]++;
            }
            ops[i].t = tensor__alias(fn, t);
            if (!ops[i].t) goto done;
            made = i + 1;
            for (int j = 0; j < d; j++) ops[i].lab[j] = lab[j];
        }
        /* the output's labels */
        int olab[TENSOR_MAX_DIMS], no = 0;
        uint64_t omask = 0;
        if (arrow) {
            for (int j = 0; j < n_out; j++) {
                if (out_lab[j] < 0) {
                    if (no + E > TENSOR_MAX_DIMS) { tensor__fail(fn, "the output would have more than %d dims", TENSOR_MAX_DIMS); goto done; }
                    for (int e = 0; e < E; e++) olab[no++] = TENSOR__EIN_ELL + e;
                    continue;
                }
                int l = out_lab[j];
                if (!count[l]) { tensor__fail(fn, "output subscript %c does not appear in the equation for any input operand", tensor__ein_char(l)); goto done; }
                if (omask >> l & 1) { tensor__fail(fn, "output subscript %c appears more than once in the output", tensor__ein_char(l)); goto done; }
                if (no >= TENSOR_MAX_DIMS) { tensor__fail(fn, "the output would have more than %d dims", TENSOR_MAX_DIMS); goto done; }
                olab[no++] = l;
                omask |= (uint64_t)1 << l;
            }
        } else { /* implicit: the ellipsis dims, then the labels seen once, in alphabetical order (A..Z, a..z) */
            for (int e = 0; e < E; e++) olab[no++] = TENSOR__EIN_ELL + e;
            for (int l = 0; l < TENSOR__EIN_ELL; l++)
                if (count[l] == 1) {
                    if (no >= TENSOR_MAX_DIMS) { tensor__fail(fn, "the output would have more than %d dims", TENSOR_MAX_DIMS); goto done; }
                    olab[no++] = l;
                }
        }
        for (int j = 0; j < no; j++) omask |= (uint64_t)1 << olab[j];
        /* per operand: diagonals of repeated labels, size-1 dims that broadcast against another
           operand dropped (a squeeze), labels no one else needs summed out */
        for (int i = 0; i < n; i++) {
            tensor__ein_op *o = &ops[i];
            for (bool again = true; again;) {
                again = false;
                for (int p = 0; p < o->t->ndim && !again; p++)
                    for (int q = p + 1; q < o->t->ndim && !again; q++)
                        if (o->lab[p] == o->lab[q]) {
                            int l = o->lab[p], k = 0;
                            o->t = tensor__prod_diag(fn, o->t, p, q);
                            if (!o->t) goto done;
                            for (int j = 0; j < o->t->ndim + 1; j++) if (j != p && j != q) o->lab[k++] = o->lab[j];
                            o->lab[k] = l;
                            again = true;
                        }
            }
            for (int j = o->t->ndim - 1; j >= 0; j--)
                if (o->t->shape[j] == 1 && size[o->lab[j]] != 1) {
                    o->t = tensor__swap(o->t, tensor_squeeze(o->t, j));
                    if (!o->t) goto done;
                    for (int q = j; q < o->t->ndim; q++) o->lab[q] = o->lab[q + 1];
                }
            o->mask = tensor__ein_bits(o);
        }
        for (int i = 0; i < n; i++) {
            uint64_t others = omask;
            for (int j = 0; j < n; j++) if (j != i) others |= ops[j].mask;
            if (!tensor__ein_sum_out(&ops[i], others)) goto done;
        }
        int last = 0;
        TENSOR__PROD_STAT(tensor__prod_last_cost = 0);
        if (n > 1) {
            /* the order of the pairwise contractions */
            int m = n <= 12 ? n : 0;
            if (m) {
                size_t cnt = (size_t)1 << m;
                plan.n = m;
                plan.uni = (uint64_t *)TENSOR__MALLOC(sizeof(uint64_t) * cnt);
                plan.keep = (uint64_t *)TENSOR__MALLOC(sizeof(uint64_t) * cnt);
                plan.cost = (double *)TENSOR__MALLOC(sizeof(double) * cnt);
                plan.split = (uint32_t *)TENSOR__MALLOC(sizeof(uint32_t) * cnt);
                if (!plan.uni || !plan.keep || !plan.cost || !plan.split) { tensor__fail(fn, "out of memory planning the contraction"); goto done; }
                uint32_t all = (uint32_t)(cnt - 1);
                plan.uni[0] = 0;
                for (uint32_t s = 1; s <= all; s++) {
                    int low = 0;
                    while (!(s >> low & 1)) low++;
                    plan.uni[s] = plan.uni[s & (s - 1)] | ops[low].mask;
                }
                for (uint32_t s = 1; s <= all; s++) plan.keep[s] = plan.uni[s] & (omask | plan.uni[all & ~s]);
                for (uint32_t s = 1; s <= all; s++) {
                    plan.split[s] = 0;
                    if (!(s & (s - 1))) { plan.cost[s] = 0; continue; }
                    plan.cost[s] = INFINITY;
                    if (tensor__ein_popcount(plan.keep[s]) > TENSOR_MAX_DIMS) continue;
                    uint32_t lowbit = s & (~s + 1);
                    for (uint32_t a = (s - 1) & s; a; a = (a - 1) & s) { /* a holds s's lowest operand: each split once */
                        if (!(a & lowbit)) continue;
                        uint32_t b = s & ~a;
                        double c = plan.cost[a] + plan.cost[b] + tensor__ein_size(plan.keep[a] | plan.keep[b], size);
                        if (c < plan.cost[s] || !plan.split[s]) {
                            if (c == c && c < INFINITY) { plan.cost[s] = c; plan.split[s] = a; }
                        }
                    }
                }
                TENSOR__PROD_STAT(tensor__prod_last_cost = plan.cost[all]);
                if (!plan.split[all]) { tensor__fail(fn, "every order of contraction makes an intermediate of more than %d dims", TENSOR_MAX_DIMS); goto done; }
                last = tensor__ein_contract(fn, &plan, ops, all, size);
                if (last < 0) goto done;
                for (int i = 0; i < n; i++) if (i != last) ops[i].t = NULL; /* consumed */
            } else { /* many operands: greedily the cheapest pair first */
                int alive = n;
                TENSOR__PROD_STAT(tensor__prod_last_cost = 0);
                bool *live = (bool *)TENSOR__MALLOC(sizeof(bool) * (size_t)n);
                if (!live) { tensor__fail(fn, "out of memory planning the contraction"); goto done; }
                for (int i = 0; i < n; i++) live[i] = true;
                while (alive > 1) {
                    int bi = -1, bj = -1;
                    double best = INFINITY;
                    uint64_t bkeep = 0;
                    for (int i = 0; i < n; i++)
                        for (int j = i + 1; live[i] && j < n; j++) {
                            if (!live[j]) continue;
                            uint64_t rest = omask;
                            for (int q = 0; q < n; q++) if (live[q] && q != i && q != j) rest |= ops[q].mask;
                            uint64_t keep = (ops[i].mask | ops[j].mask) & rest;
                            double c = tensor__ein_size(ops[i].mask | ops[j].mask, size);
                            if (tensor__ein_popcount(keep) <= TENSOR_MAX_DIMS && (bi < 0 || c < best)) { best = c; bi = i; bj = j; bkeep = keep; }
                        }
                    tensor__ein_op r;
                    if (bi < 0) tensor__fail(fn, "every pair of operands makes an intermediate of more than %d dims", TENSOR_MAX_DIMS);
                    if (bi < 0 || !tensor__ein_pair(fn, &ops[bi], &ops[bj], bkeep, size, &r)) { TENSOR_FREE(live); goto done; }
                    TENSOR__PROD_STAT(tensor__prod_last_cost += best);
                    ops[bi] = r;
                    ops[bj].t = NULL;
                    live[bj] = false;
                    alive--;
                    last = bi;
                }
                TENSOR_FREE(live);
            }
        }
        /* the last operand holds the output's labels: into the output's order */
        tensor__ein_op *o = &ops[last];
        if (!tensor__ein_sum_out(o, omask)) goto done;
        int perm[TENSOR_MAX_DIMS];
        int64_t oshape[TENSOR_MAX_DIMS];
        bool identity = true;
        for (int j = 0; j < no; j++) {
            perm[j] = -1;
            for (int q = 0; q < o->t->ndim; q++) if (o->lab[q] == olab[j]) perm[j] = q;
            oshape[j] = size[olab[j]];
        }
        /* a label whose operands all had size 1 where another was squeezed cannot be missing here,
           but an output label held only in broadcast (size-1) form comes back as a new dim */
        int have = 0;
        for (int j = 0; j < no; j++) if (perm[j] >= 0) perm[have++] = perm[j];
        for (int j = 0; j < have; j++) identity = identity && perm[j] == j;
        result = identity && have == o->t->ndim ? tensor__alias(fn, o->t) : tensor_permute(o->t, have, perm);
        if (result && have != no) result = tensor__swap(result, tensor_reshape(result, no, oshape));
    }
done:
    for (int i = 0; ops && i < made; i++) tensor_free(ops[i].t);
    TENSOR_FREE(plan.uni);
    TENSOR_FREE(plan.keep);
    TENSOR_FREE(plan.cost);
    TENSOR_FREE(plan.split);
    TENSOR_FREE(terms);
    TENSOR_FREE(nlab);
    TENSOR_FREE(ell);
    TENSOR_FREE(ops);
    return result;
}

/* ---- beta * input + alpha * product ---- */

TENSOR_API tensor *tensor_addmm(tensor *input, tensor *mat1, tensor *mat2, double beta, double alpha) {
    const char *fn = "tensor_addmm";
    TENSOR__CHECK_ARG(fn, input);
    TENSOR__CHECK_ARG(fn, mat1);
    TENSOR__CHECK_ARG(fn, mat2);
    tensor *ins[3] = {input, mat1, mat2};
    if (!tensor__prod_ndim(fn, "mat1", mat1, 2) || !tensor__prod_ndim(fn, "mat2", mat2, 2) || !tensor__prod_operands(fn, 3, ins)) return NULL;
    if (mat1->shape[1] != mat2->shape[0])
        return tensor__fail(fn, "shapes %s and %s cannot be multiplied (%lld != %lld)", tensor__shape_of(mat1), tensor__shape_of(mat2), (long long)mat1->shape[1], (long long)mat2->shape[0]);
    int64_t shape[2] = {mat1->shape[0], mat2->shape[1]};
    if (!tensor__prod_fits(fn, input, 2, shape)) return NULL;
    return tensor__prod_axpby(fn, input, beta, tensor_matmul(mat1, mat2), alpha);
}

TENSOR_API tensor *tensor_addmv(tensor *input, tensor *mat, tensor *vec, double beta, double alpha) {
    const char *fn = "tensor_addmv";
    TENSOR__CHECK_ARG(fn, input);
    TENSOR__CHECK_ARG(fn, mat);
    TENSOR__CHECK_ARG(fn, vec);
    tensor *ins[3] = {input, mat, vec};
    if (!tensor__prod_ndim(fn, "mat", mat, 2) || !tensor__prod_ndim(fn, "vec", vec, 1) || !tensor__prod_operands(fn, 3, ins)) return NULL;
    if (mat->shape[1] != vec->shape[0])
        return tensor__fail(fn, "shapes %s and %s cannot be multiplied (%lld != %lld)", tensor__shape_of(mat), tensor__shape_of(vec), (long long)mat->shape[1], (long long)vec->shape[0]);
    if (!tensor__prod_fits(fn, input, 1, mat->shape)) return NULL;
    return tensor__prod_axpby(fn, input, beta, tensor_matmul(mat, vec), alpha);
}

static bool tensor__prod_batches(const char *fn, tensor *b1, tensor *b2) {
    if (!tensor__prod_ndim(fn, "batch1", b1, 3) || !tensor__prod_ndim(fn, "batch2", b2, 3)) return false;
    if (b1->shape[0] != b2->shape[0]) {
        tensor__fail(fn, "batch1 %s and batch2 %s must have the same batch size (%lld != %lld)", tensor__shape_of(b1), tensor__shape_of(b2), (long long)b1->shape[0], (long long)b2->shape[0]);
        return false;
    }
    if (b1->shape[2] != b2->shape[1]) {
        tensor__fail(fn, "shapes %s and %s cannot be multiplied (%lld != %lld)", tensor__shape_of(b1), tensor__shape_of(b2), (long long)b1->shape[2], (long long)b2->shape[1]);
        return false;
    }
    return true;
}

/* The sum over batches of b1 @ b2 is one matmul: b1 as [n, B * m] (its batch dim moved in) against
   b2 as [B * m, p]. */
TENSOR_API tensor *tensor_addbmm(tensor *input, tensor *batch1, tensor *batch2, double beta, double alpha) {
    const char *fn = "tensor_addbmm";
    TENSOR__CHECK_ARG(fn, input);
    TENSOR__CHECK_ARG(fn, batch1);
    TENSOR__CHECK_ARG(fn, batch2);
    tensor *ins[3] = {input, batch1, batch2};
    if (!tensor__prod_batches(fn, batch1, batch2) || !tensor__prod_operands(fn, 3, ins)) return NULL;
    int64_t shape[2] = {batch1->shape[1], batch2->shape[2]};
    if (!tensor__prod_fits(fn, input, 2, shape)) return NULL;
    int r1 = 1, c1[2] = {0, 2}, r2[2] = {0, 1}, c2 = 2;
    tensor *m1 = tensor__prod_group(fn, batch1, 0, NULL, 1, &r1, 2, c1);
    tensor *m2 = tensor__prod_group(fn, batch2, 0, NULL, 2, r2, 1, &c2);
    tensor *p = m1 && m2 ? tensor_matmul(m1, m2) : NULL;
    tensor_free(m1);
    tensor_free(m2);
    return tensor__prod_axpby(fn, input, beta, p, alpha);
}

TENSOR_API tensor *tensor_baddbmm(tensor *input, tensor *batch1, tensor *batch2, double beta, double alpha) {
    const char *fn = "tensor_baddbmm";
    TENSOR__CHECK_ARG(fn, input);
    TENSOR__CHECK_ARG(fn, batch1);
    TENSOR__CHECK_ARG(fn, batch2);
    tensor *ins[3] = {input, batch1, batch2};
    if (!tensor__prod_batches(fn, batch1, batch2) || !tensor__prod_operands(fn, 3, ins)) return NULL;
    int64_t shape[3] = {batch1->shape[0], batch1->shape[1], batch2->shape[2]};
    if (!tensor__prod_fits(fn, input, 3, shape)) return NULL;
    return tensor__prod_axpby(fn, input, beta, tensor_matmul(batch1, batch2), alpha);
}

TENSOR_API tensor *tensor_addr(tensor *input, tensor *vec1, tensor *vec2, double beta, double alpha) {
    const char *fn = "tensor_addr";
    TENSOR__CHECK_ARG(fn, input);
    TENSOR__CHECK_ARG(fn, vec1);
    TENSOR__CHECK_ARG(fn, vec2);
    tensor *ins[3] = {input, vec1, vec2};
    if (!tensor__prod_ndim(fn, "vec1", vec1, 1) || !tensor__prod_ndim(fn, "vec2", vec2, 1)) return NULL;
    int64_t shape[2] = {vec1->shape[0], vec2->shape[0]};
    if (input->dtype == TENSOR_BOOL && vec1->dtype == TENSOR_BOOL && vec2->dtype == TENSOR_BOOL) {
        /* PyTorch's addr of bool (it has no matmul): (beta && input) || (alpha && vec1 vec2^T),
           alpha and beta integral as for the integer dtypes */
        if (!tensor__same_device(fn, 3, ins) || !tensor__prod_fits(fn, input, 2, shape)) return NULL;
        if (beta != floor(beta) || alpha != floor(alpha)) return tensor__fail(fn, "alpha and beta must be integers for bool operands, got %g and %g", alpha, beta);
        tensor *r = tensor_outer(vec1, vec2);
        if (alpha == 0) r = tensor__swap(r, tensor__op_scalar(TENSOR_OP_logical_and, r, 0));
        return beta == 0 ? r : tensor__swap(r, tensor_logical_or(r, input));
    }
    if (!tensor__prod_operands(fn, 3, ins) || !tensor__prod_fits(fn, input, 2, shape)) return NULL;
    return tensor__prod_axpby(fn, input, beta, tensor_outer(vec1, vec2), alpha);
}

/* ---- powers and chains ---- */

/* By repeated squaring (n = 0: the identity, which does not depend on a); n < 0 raises
   linalg_inv(a) to -n, as PyTorch (a singular a is an error there). */
TENSOR_API tensor *tensor_matrix_power(tensor *a, int64_t n) {
    const char *fn = "tensor_matrix_power";
    TENSOR__CHECK_ARG(fn, a);
    if (a->ndim < 2 || a->shape[a->ndim - 1] != a->shape[a->ndim - 2])
        return tensor__fail(fn, "expected batches of square matrices, got shape %s", tensor__shape_of(a));
    if (a->dtype == TENSOR_BOOL) return tensor__fail(fn, "not supported for bool tensors");
    if (n < 0) {
        if (n == INT64_MIN) return tensor__fail(fn, "n = %lld is out of range", (long long)n);
        tensor *inv = tensor_linalg_inv(a), *r = inv ? tensor_matrix_power(inv, -n) : NULL;
        tensor_free(inv);
        return r;
    }
    if (n == 0 && tensor__numel_of(a->ndim, a->shape) == 0) return tensor_zeros_like(a); /* no n x n identity for an empty batch */
    if (n == 0) {
        tensor *e = tensor_eye(a->shape[a->ndim - 1], a->dtype);
        e = tensor__swap(e, tensor_to_device(e, a->storage->device));
        e = tensor__swap(e, tensor_expand(e, a->ndim, a->shape));
        return tensor__swap(e, tensor_contiguous(e));
    }
    if (n == 1) return tensor_clone(a);
    tensor *base = tensor__alias(fn, a), *acc = NULL;
    for (int64_t k = n; base;) { /* acc = a^(bits of n seen so far), base = a^(2^step) */
        if (k & 1) {
            acc = acc ? tensor__swap(acc, tensor_matmul(acc, base)) : tensor__alias(fn, base);
            if (!acc) break;
        }
        k >>= 1;
        if (!k) break;
        base = tensor__swap(base, tensor_matmul(base, base));
    }
    if (!base) {
        tensor_free(acc);
        return NULL;
    }
    tensor_free(base);
    return acc;
}

/* The cheapest parenthesisation of m1 @ m2 @ ... (the classic dynamic programme over chain
   lengths); the result of chain i..j. */
static tensor *tensor__chain(tensor *const *ms, const int *split, int n, int i, int j) {
    if (i == j) return tensor__alias("tensor_linalg_multi_dot", ms[i]);
    int k = split[i * n + j];
    tensor *l = tensor__chain(ms, split, n, i, k), *r = l ? tensor__chain(ms, split, n, k + 1, j) : NULL;
    tensor *p = l && r ? tensor_matmul(l, r) : NULL;
    tensor_free(l);
    tensor_free(r);
    return p;
}

TENSOR_API tensor *tensor_linalg_multi_dot(int n, tensor *const *tensors) {
    const char *fn = "tensor_linalg_multi_dot";
    if (n < 2) return tensor__fail(fn, "expected at least 2 tensors, got %d", n);
    if (!tensors) return tensor__null_arg(fn, "tensors");
    for (int i = 0; i < n; i++) if (!tensors[i]) return tensor__null_arg(fn, "tensors[i]");
    if (!tensor__prod_operands(fn, n, tensors)) return NULL;
    for (int i = 0; i < n; i++) {
        int nd = tensors[i]->ndim;
        bool ok = nd == 2 || ((i == 0 || i == n - 1) && nd == 1);
        if (!ok)
            return tensor__fail(fn, "tensor %d must be 2-D%s, got shape %s", i, i == 0 || i == n - 1 ? " (or 1-D)" : "", tensor__shape_of(tensors[i]));
    }
    for (int i = 0; i + 1 < n; i++) {
        const tensor *x = tensors[i], *y = tensors[i + 1];
        int64_t kx = x->shape[x->ndim - 1], ky = y->shape[0];
        if (kx != ky)
            return tensor__fail(fn, "tensors %d and %d of shapes %s and %s cannot be multiplied (%lld != %lld)", i, i + 1, tensor__shape_of(x), tensor__shape_of(y), (long long)kx, (long long)ky);
    }
    bool first1 = tensors[0]->ndim == 1, last1 = tensors[n - 1]->ndim == 1;
    tensor **ms = (tensor **)TENSOR__MALLOC(sizeof(tensor *) * (size_t)n);
    int64_t *dim = (int64_t *)TENSOR__MALLOC(sizeof(int64_t) * (size_t)(n + 1));
    double *cost = (double *)TENSOR__MALLOC(sizeof(double) * (size_t)n * (size_t)n);
    int *split = (int *)TENSOR__MALLOC(sizeof(int) * (size_t)n * (size_t)n);
    tensor *r = NULL;
    if (!ms || !dim || !cost || !split) {
        tensor__fail(fn, "out of memory");
        n = 0;
    }
    for (int i = 0; i < n; i++) ms[i] = NULL;
    bool ok = n > 0;
    for (int i = 0; i < n && ok; i++) { /* 1-D ends as a row [1, k] and a column [k, 1] */
        tensor *t = tensors[i];
        ms[i] = t->ndim == 2 ? tensor__alias(fn, t) : tensor_unsqueeze(t, i == 0 ? 0 : 1);
        ok = ms[i] != NULL;
    }
    if (ok) {
        dim[0] = ms[0]->shape[0];
        for (int i = 0; i < n; i++) dim[i + 1] = ms[i]->shape[1];
        for (int i = 0; i < n; i++) cost[i * n + i] = 0;
        for (int len = 2; len <= n; len++)
            for (int i = 0; i + len - 1 < n; i++) {
                int j = i + len - 1;
                cost[i * n + j] = INFINITY;
                for (int k = i; k < j; k++) {
                    double c = cost[i * n + k] + cost[(k + 1) * n + j] + (double)dim[i] * (double)dim[k + 1] * (double)dim[j + 1];
                    if (c < cost[i * n + j] || k == i) { cost[i * n + j] = c; split[i * n + j] = k; }
                }
            }
        r = tensor__chain(ms, split, n, 0, n - 1);
        if (r && (first1 || last1)) {
            int64_t shape[2];
            int nd = 0;
            if (!first1) shape[nd++] = r->shape[0];
            if (!last1) shape[nd++] = r->shape[1];
            r = tensor__swap(r, tensor_reshape(r, nd, shape));
        }
    }
    for (int i = 0; ms && i < n; i++) tensor_free(ms[i]);
    TENSOR_FREE(ms);
    TENSOR_FREE(dim);
    TENSOR_FREE(cost);
    TENSOR_FREE(split);
    return r;
}

/* ---- distances and statistics ---- */

/* p-norm distances between the rows of x1 [..., P, M] and x2 [..., R, M] (batch dims broadcast).
   p = 2 with more than 25 rows on either side goes through the matmul expansion
   sqrt(max(|x|^2 + |y|^2 - 2 x.y, 1e-30)), as PyTorch's default compute mode does; otherwise
   the differences are taken exactly. */
TENSOR_API tensor *tensor_cdist(tensor *x1, tensor *x2, double p) {
    const char *fn = "tensor_cdist";
    TENSOR__CHECK_ARG(fn, x1);
    TENSOR__CHECK_ARG(fn, x2);
    tensor *ins[2] = {x1, x2};
    if (!tensor__same_device(fn, 2, ins)) return NULL;
    if (x1->ndim < 2 || x2->ndim < 2) return tensor__fail(fn, "expected at least 2-D tensors, got shapes %s and %s", tensor__shape_of(x1), tensor__shape_of(x2));
    if (!tensor__is_float(x1->dtype) || x2->dtype != x1->dtype)
        return tensor__fail(fn, "expected two tensors of one floating dtype, got %s and %s", tensor__dtype_names[x1->dtype], tensor__dtype_names[x2->dtype]);
    if (x1->shape[x1->ndim - 1] != x2->shape[x2->ndim - 1])
        return tensor__fail(fn, "x1 %s and x2 %s must have the same number of columns", tensor__shape_of(x1), tensor__shape_of(x2));
    if (!(p >= 0)) return tensor__fail(fn, "p must be non-negative, got %g", p);
    int nb;
    int64_t bs[TENSOR_MAX_DIMS];
    if (!tensor__broadcast_shapes(fn, x1->ndim - 2, x1->shape, x2->ndim - 2, x2->shape, &nb, bs)) return NULL;
    int64_t P = x1->shape[x1->ndim - 2], R = x2->shape[x2->ndim - 2];
    if (p == 2 && (P > 25 || R > 25)) {
        tensor *s1 = tensor_square(x1), *s2 = tensor_square(x2);
        tensor *n1 = tensor_sum(s1, -1, true), *n2 = tensor_sum(s2, -1, true); /* [..., P, 1], [..., R, 1] */
        tensor *x2t = tensor_transpose(x2, -1, -2), *n2t = tensor_transpose(n2, -1, -2);
        tensor *xy = tensor_matmul(x1, x2t);
        tensor *m2 = tensor_mul_scalar(xy, -2.0);
        tensor *d = tensor_add(n1, m2);
        d = tensor__swap(d, tensor_add(d, n2t));
        d = tensor__swap(d, tensor_clamp(d, 1e-30, NAN));
        d = tensor__swap(d, tensor_sqrt(d));
        tensor_free(s1); tensor_free(s2); tensor_free(n1); tensor_free(n2);
        tensor_free(x2t); tensor_free(n2t); tensor_free(xy); tensor_free(m2);
        return d;
    }
    if (nb + 3 > TENSOR_MAX_DIMS) return tensor__fail(fn, "batch dims of shapes %s and %s are too many for the exact form (at most %d)", tensor__shape_of(x1), tensor__shape_of(x2), TENSOR_MAX_DIMS - 3);
    tensor *a = tensor_unsqueeze(x1, -2), *b = tensor_unsqueeze(x2, -3); /* [..., P, 1, M], [..., 1, R, M] */
    tensor *diff = a && b ? tensor_sub(a, b) : NULL;
    tensor_free(a);
    tensor_free(b);
    return tensor__swap(diff, tensor_norm(diff, p, -1, false));
}

/* torch.cov: rows are variables, columns observations (a 1-D input is one variable);
   fweights (integer) and aweights (floating) may be NULL. */
TENSOR_API tensor *tensor_cov(tensor *input, int64_t correction, tensor *fweights, tensor *aweights) {
    const char *fn = "tensor_cov";
    TENSOR__CHECK_ARG(fn, input);
    tensor *ins[3] = {input, fweights, aweights};
    if (!tensor__same_device(fn, 3, ins)) return NULL;
    if (input->ndim > 2) return tensor__fail(fn, "expected input to have two or fewer dims, got shape %s", tensor__shape_of(input));
    if (input->dtype == TENSOR_BOOL) return tensor__fail(fn, "not supported for bool tensors");
    int64_t N = input->ndim == 0 ? 1 : input->shape[input->ndim - 1];
    tensor *w[2] = {fweights, aweights};
    for (int i = 0; i < 2; i++) {
        const char *nm = i ? "aweights" : "fweights";
        tensor *t = w[i];
        if (!t) continue;
        if (t->ndim > 1) return tensor__fail(fn, "expected %s to have one or fewer dims, got shape %s", nm, tensor__shape_of(t));
        if (i == 0 && !tensor__is_int(t->dtype)) return tensor__fail(fn, "expected fweights to have an integer dtype, got %s", tensor__dtype_names[t->dtype]);
        if (i == 1 && !tensor__is_float(t->dtype)) return tensor__fail(fn, "expected aweights to have a floating dtype, got %s", tensor__dtype_names[t->dtype]);
        if (tensor_numel(t) != N) return tensor__fail(fn, "expected %s to have the same number of elements as there are observations (%lld), got shape %s", nm, (long long)N, tensor__shape_of(t));
        if (N == 0) continue;
        tensor *mn = tensor_min_all(t);
        double lo = mn && t->storage->device == TENSOR_CPU ? tensor_item(mn) : 0;
        if (mn && t->storage->device != TENSOR_CPU) {
            tensor *c = tensor_to_device(mn, TENSOR_CPU);
            lo = c ? tensor_item(c) : 0;
            tensor_free(c);
        }
        bool failed = !mn;
        tensor_free(mn);
        if (failed) return NULL;
        if (lo < 0) return tensor__fail(fn, "%s cannot be negative", nm);
    }
    tensor_dtype dt = tensor__is_float(input->dtype) ? input->dtype : TENSOR_F32;
    if (aweights) dt = tensor_promote_types(dt, aweights->dtype);
    int64_t shape2[2] = {input->ndim == 2 ? input->shape[0] : 1, N};
    tensor *x = tensor_to_dtype(input, dt);
    x = tensor__swap(x, tensor_reshape(x, 2, shape2));
    tensor *wt = NULL, *wsum = NULL, *avg = NULL, *nf = NULL;
    if (fweights && !(wt = tensor_to_dtype(fweights, dt))) goto fail;
    if (aweights) {
        tensor *aw = tensor_to_dtype(aweights, dt);
        if (!aw) goto fail;
        wt = wt ? tensor__swap(wt, tensor_mul(wt, aw)) : tensor__alias(fn, aw);
        tensor_free(aw);
        if (!wt) goto fail;
    }
    if (wt) {
        int64_t one = N;
        wt = tensor__swap(wt, tensor_reshape(wt, 1, &one));
        wsum = tensor_sum_all(wt);
        tensor *xw = x && wt ? tensor_mul(x, wt) : NULL;
        tensor *s = tensor_sum(xw, 1, false);
        avg = s && wsum ? tensor_div(s, wsum) : NULL;
        tensor_free(s);
        tensor_free(xw);
        if (aweights && correction != 0) { /* w_sum - correction * sum(w * aweights) / w_sum */
            tensor *aw = tensor_to_dtype(aweights, dt);
            tensor *waw = aw && wt ? tensor_mul(wt, aw) : NULL;
            tensor *sw = tensor_sum_all(waw);
            tensor *q = sw && wsum ? tensor_div(sw, wsum) : NULL;
            tensor *cq = tensor_mul_scalar(q, (double)correction);
            nf = cq ? tensor_sub(wsum, cq) : NULL;
            tensor_free(aw); tensor_free(waw); tensor_free(sw); tensor_free(q); tensor_free(cq);
        } else nf = tensor_sub_scalar(wsum, (double)correction);
    } else {
        avg = tensor_mean(x, 1, false);
        nf = tensor_scalar((double)(N - correction), dt);
        nf = tensor__swap(nf, tensor_to_device(nf, input->storage->device));
    }
    nf = tensor__swap(nf, tensor_clamp(nf, 0.0, NAN)); /* no degrees of freedom left: inf or nan, as PyTorch */
    {
        tensor *ac = tensor_unsqueeze(avg, 1);
        tensor *xc = x && ac ? tensor_sub(x, ac) : NULL;
        tensor *xcw = xc && wt ? tensor_mul(xc, wt) : (xc ? tensor__alias(fn, xc) : NULL);
        tensor *xt = tensor_transpose(xcw, 0, 1);
        tensor *c = xc && xt ? tensor_matmul(xc, xt) : NULL;
        tensor *r = c && nf ? tensor_div(c, nf) : NULL;
        tensor_free(ac); tensor_free(xc); tensor_free(xcw); tensor_free(xt); tensor_free(c);
        tensor_free(x); tensor_free(wt); tensor_free(wsum); tensor_free(avg); tensor_free(nf);
        if (r && r->shape[0] == 1) r = tensor__swap(r, tensor_reshape(r, 0, NULL)); /* one variable: PyTorch squeezes the [1, 1] */
        return r;
    }
fail:
    tensor_free(x); tensor_free(wt); tensor_free(wsum); tensor_free(avg); tensor_free(nf);
    return NULL;
}

/* torch.corrcoef: the covariance over the outer product of the standard deviations, clipped to
   [-1, 1]; a single variable gives c / c. */
TENSOR_API tensor *tensor_corrcoef(tensor *input) {
    const char *fn = "tensor_corrcoef";
    TENSOR__CHECK_ARG(fn, input);
    if (input->ndim > 2) return tensor__fail(fn, "expected input to have two or fewer dims, got shape %s", tensor__shape_of(input));
    if (input->dtype == TENSOR_BOOL) return tensor__fail(fn, "not supported for bool tensors");
    tensor *c = tensor_cov(input, 1, NULL, NULL);
    if (!c || c->ndim == 0) return tensor__swap(c, c ? tensor_div(c, c) : NULL);
    int64_t v = c->shape[0], flat = v * v;
    tensor *f = tensor_reshape(c, 1, &flat);
    tensor *d = tensor_slice(f, 0, 0, flat, v + 1); /* the diagonal */
    tensor *sd = tensor_sqrt(d);
    tensor *col = tensor_unsqueeze(sd, 1);
    tensor *r = col ? tensor_div(c, col) : NULL;
    r = tensor__swap(r, r ? tensor_div(r, sd) : NULL);
    r = tensor__swap(r, tensor_clamp(r, -1.0, 1.0));
    tensor_free(c); tensor_free(f); tensor_free(d); tensor_free(sd); tensor_free(col);
    return r;
}

TENSOR_API tensor *tensor_trace(tensor *a) {
    const char *fn = "tensor_trace";
    TENSOR__CHECK_ARG(fn, a);
    if (a->ndim != 2) return tensor__fail(fn, "expected a matrix, got shape %s", tensor__shape_of(a));
    int64_t m = a->shape[0], n = a->shape[1], k = m < n ? m : n, flat = m * n;
    tensor *f = tensor_reshape(a, 1, &flat);
    f = tensor__swap(f, tensor_slice(f, 0, 0, k ? (k - 1) * (n + 1) + 1 : 0, n + 1));
    return tensor__swap(f, tensor_sum_all(f));
}

/* ---- misc: pdist (composite) ----
   torch.pdist: the p-norm distance of every pair i < j of rows of x [N, M], in row-major order of
   the upper triangle. The pairs' rows are gathered by index_select (N (N - 1) / 2 rows of M each,
   no pair computed twice) and reduced by norm, whose derivative is 0 at a zero distance, as
   PyTorch's pdist backward. */
TENSOR_API tensor *tensor_pdist(tensor *x, double p) {
    const char *fn = "tensor_pdist";
    TENSOR__CHECK_ARG(fn, x);
    if (x->ndim != 2) return tensor__fail(fn, "pdist only supports 2-D tensors, got shape %s", tensor__shape_of(x));
    if (!tensor__is_float(x->dtype)) return tensor__fail(fn, "pdist only supports floating-point dtypes, got %s", tensor__dtype_names[x->dtype]);
    if (!(p >= 0)) return tensor__fail(fn, "pdist only supports non-negative p values, got %g", p);
    int64_t N = x->shape[0];
    tensor__tmps s = {{0}, 0};
    tensor *ij = tensor__tmp(&s, tensor_triu_indices(N, N, 1, TENSOR_I64));
    if (ij && ij->storage->device != x->storage->device) ij = tensor__tmp(&s, tensor_to_device(ij, x->storage->device));
    tensor *a = tensor__tmp(&s, tensor_index_select(x, 0, tensor__tmp(&s, tensor_select(ij, 0, 0))));
    tensor *b = tensor__tmp(&s, tensor_index_select(x, 0, tensor__tmp(&s, tensor_select(ij, 0, 1))));
    tensor *d = tensor__tmp(&s, tensor_sub(a, b));
    tensor *r = d ? tensor_norm(d, p, -1, false) : NULL;
    tensor__tmps_free(&s);
    return r;
}
