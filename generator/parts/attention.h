// >>attention ----------------------------------------------------------------------------------
/* ---- attention ---- */

/* softmax(q k^T / sqrt(E) + bias) v. A bool mask keeps where true (else -inf); a float mask is
   added; is_causal keeps the lower triangle of [L, S]. A fully masked row gives NaN, as in PyTorch.
   Two ways, the same numbers:
   - the composite (tensor__sdpa_composite): matmul, transpose, softmax and where/add, so autograd
     flows through those ops. It is the reference, and what a device without a fused kernel runs.
   - the fused kernel (tensor__cpu_scaled_dot_product_attention, FlashAttention's algorithm): tiles
     of queries against tiles of keys with an online softmax, so the [L, S] scores never exist
     beyond one tile a thread; tiles above the causal diagonal are skipped; threaded over batch x
     query tiles. Its backward (tensor__sdpa_backward) recomputes each tile's probabilities from
     the saved log-sum-exp and takes the gradients of q, k and v in one pass a head. */

/* The causal mask [L, S] (true on and below the diagonal) on device dev. */
static tensor *tensor__causal_mask(const char *fn, int64_t L, int64_t S, tensor_device dev) {
    int64_t cs[2] = {L, S};
    tensor *host = tensor__new(fn, 2, cs, TENSOR_BOOL, TENSOR_CPU); /* filled here, then moved to the device */
    if (!host) return NULL;
    uint8_t *m = (uint8_t *)tensor__data(host);
    for (int64_t i = 0; i < L; i++)
        for (int64_t j = 0; j < S; j++) m[i * S + j] = j <= i;
    tensor *causal = dev == TENSOR_CPU ? host : tensor_to_device(host, dev);
    if (causal != host) tensor_free(host);
    return causal;
}

/* The scores q k^T / sqrt(E), masked (bool: -inf where false) or biased (float mask), and their
   softmax: the attention weights P [..., L, S], as composed ops. */
static tensor *tensor__sdpa_weights(const char *fn, tensor *q, tensor *k, tensor *mask, bool is_causal) {
    int64_t L = q->shape[q->ndim - 2], E = q->shape[q->ndim - 1], S = k->shape[k->ndim - 2];
    tensor *causal = NULL;
    if (is_causal) {
        if (!(causal = tensor__causal_mask(fn, L, S, q->storage->device))) return NULL;
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
    return attn;
}

static tensor *tensor__sdpa_composite(const char *fn, tensor *q, tensor *k, tensor *v, tensor *mask, bool is_causal) {
    tensor *attn = tensor__sdpa_weights(fn, q, k, mask, is_causal);
    tensor *r = attn ? tensor_matmul(attn, v) : NULL;
    tensor_free(attn);
    return r;
}

/* ---- the fused kernel ---- */
#define TENSOR__ATTN_BQ 64   /* query rows a tile */
#define TENSOR__ATTN_BK 128  /* keys a tile: scores of BQ x BK floats (32 KiB) a thread */

/* One call's operands, in the compute dtype ct (f64 for f64 inputs, f32 otherwise: f16 and bf16
   inputs are converted first). Operand 0..3 is q, k, v, mask; batch b's matrix of operand x starts
   at base[x] + the dot of b's index over bshape with bstride[x] (0 on dims it broadcasts over). */
typedef struct {
    tensor_dtype ct, mask_dt;
    int64_t L, S, E, Ev, batches, q_tiles;
    int nb;
    int64_t bshape[TENSOR_MAX_DIMS], bstride[4][TENSOR_MAX_DIMS], rs[4], cs[4];
    const char *base[4];
    bool causal;
    double scale;
    char *out;                  /* [batches, L, Ev] in ct */
    char *saved;                /* [batches, L, Ev + 1] in ct: each row's output and log-sum-exp; or NULL */
    const char *g;              /* backward: the output's gradient, [batches, L, Ev] in ct */
    char *gq, *gk, *gv;         /* backward: [batches, L, E], [batches, S, E], [batches, S, Ev] in ct */
    int failed;
} tensor__attn_job;

/* Element offset of batch b's matrix in operand x. */
static int64_t tensor__attn_off(const tensor__attn_job *j, int x, int64_t b) {
    int64_t off = 0;
    for (int d = j->nb - 1; d >= 0; d--) {
        off += (b % j->bshape[d]) * j->bstride[x][d];
        b /= j->bshape[d];
    }
    return off;
}

/* Tile scores x[r * ld + c] (query i0 + r, key j0 + c) scaled, then masked: -inf above the causal
   diagonal and where a bool mask is false; a float mask added. */
#define TENSOR__ATTN_MASK_TILE(T)                                                                        \
    static void tensor__attn_mask_tile_##T(const tensor__attn_job *j, const char *m, T *x, int64_t ld, int64_t i0, \
                                           int64_t rows, int64_t j0, int64_t cols) {                      \
        const T s = (T)j->scale;                                                                          \
        size_t msz = m ? tensor__dtype_sizes[j->mask_dt] : 0;                                             \
        for (int64_t r = 0; r < rows; r++) {                                                              \
            T *xr = x + r * ld;                                                                           \
            for (int64_t c = 0; c < cols; c++) xr[c] *= s;                                                \
            if (j->causal)                                                                                \
                for (int64_t c = i0 + r + 1 - j0 > 0 ? i0 + r + 1 - j0 : 0; c < cols; c++) xr[c] = (T)-INFINITY; \
            if (!m) continue;                                                                             \
            const char *mr = m + (size_t)((i0 + r) * j->rs[3] + j0 * j->cs[3]) * msz;                     \
            for (int64_t c = 0; c < cols; c++) {                                                          \
                const char *e = mr + (size_t)(c * j->cs[3]) * msz;                                        \
                if (j->mask_dt == TENSOR_BOOL) { if (!*(const uint8_t *)e) xr[c] = (T)-INFINITY; }        \
                else xr[c] += (T)tensor__load_f64(e, j->mask_dt);                                        \
            }                                                                                             \
        }                                                                                                 \
    }
TENSOR__ATTN_MASK_TILE(float)
TENSOR__ATTN_MASK_TILE(double)

/* y[i] = exp(x[i] - m), returning the sum (the f32 one through the vector row kernel). */
static double tensor__attn_sumexp_float(float *y, const float *x, int64_t n, float m) { return tensor__row_sumexp_f32(y, x, n, m); }
static double tensor__attn_sumexp_double(double *y, const double *x, int64_t n, double m) {
    double acc = 0;
    for (int64_t i = 0; i < n; i++) acc += (y[i] = exp(x[i] - m));
    return acc;
}

/* Forward: the tasks [begin, end) of batches x query tiles. Each keeps, per query row, the running
   maximum mx of its scores, the sum of their exponentials (relative to mx) and the output
   accumulated with the same weights; a key tile rescales all three when it raises the maximum. A
   row that sees no key (all masked) ends with 0 / 0: NaN, as the composite's softmax gives. */
#define TENSOR__ATTN_FORWARD(T)                                                                          \
    static void tensor__attn_forward_##T(int64_t begin, int64_t end, void *vjob) {                         \
        tensor__attn_job *j = (tensor__attn_job *)vjob;                                                   \
        const int64_t BQ = TENSOR__ATTN_BQ, BK = TENSOR__ATTN_BK, L = j->L, S = j->S, E = j->E, Ev = j->Ev; \
        T *buf = (T *)TENSOR__MALLOC(sizeof(T) * (size_t)(BQ * BK + BQ * Ev + 2 * BQ));                   \
        if (!buf) { __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED); return; }                         \
        T *sc = buf, *acc = sc + BQ * BK, *mx = acc + BQ * Ev, *sum = mx + BQ;                             \
        for (int64_t t = begin; t < end && !TENSOR__TASK_FAILED(j->failed); t++) {                       \
            int64_t b = t / j->q_tiles, i0 = t % j->q_tiles * BQ, rows = L - i0 < BQ ? L - i0 : BQ;        \
            const T *q = (const T *)(const void *)j->base[0] + tensor__attn_off(j, 0, b) + i0 * j->rs[0];  \
            const T *k = (const T *)(const void *)j->base[1] + tensor__attn_off(j, 1, b);                 \
            const T *v = (const T *)(const void *)j->base[2] + tensor__attn_off(j, 2, b);                 \
            const char *m = j->base[3] ? j->base[3] + (size_t)tensor__attn_off(j, 3, b) * tensor__dtype_sizes[j->mask_dt] : NULL; \
            for (int64_t r = 0; r < rows; r++) { mx[r] = (T)-INFINITY; sum[r] = 0; }                     \
            memset(acc, 0, sizeof(T) * (size_t)(rows * Ev));                                              \
            int64_t kend = j->causal && i0 + rows < S ? i0 + rows : S; /* causal: no tile above the diagonal */ \
            for (int64_t j0 = 0; j0 < kend; j0 += BK) {                                                   \
                int64_t cols = kend - j0 < BK ? kend - j0 : BK;                                           \
                TENSOR__GEMM_IN_TASK(j->failed, tensor__gemm_strided(j->ct, j->ct, rows, cols, E, q, j->rs[0], j->cs[0], k + j0 * j->rs[1], \
                                                                     j->cs[1], j->rs[1], sc, BK, 1, false)); \
                tensor__attn_mask_tile_##T(j, m, sc, BK, i0, rows, j0, cols);                             \
                for (int64_t r = 0; r < rows; r++) {                                                      \
                    T *x = sc + r * BK, top = (T)-INFINITY;                                               \
                    for (int64_t c = 0; c < cols; c++) top = x[c] > top ? x[c] : top;                    \
                    T mnew = top > mx[r] ? top : mx[r];                                                   \
                    if (mnew == (T)-INFINITY) { memset(x, 0, sizeof(T) * (size_t)cols); continue; } /* nothing seen yet */ \
                    T alpha = mx[r] == (T)-INFINITY ? 0 : (T)exp((double)(mx[r] - mnew));                 \
                    T s = (T)tensor__attn_sumexp_##T(x, x, cols, mnew);                                   \
                    sum[r] = sum[r] * alpha + s;                                                          \
                    mx[r] = mnew;                                                                         \
                    if (alpha != 1)                                                                       \
                        for (int64_t e = 0; e < Ev; e++) acc[r * Ev + e] *= alpha;                        \
                }                                                                                         \
                TENSOR__GEMM_IN_TASK(j->failed, tensor__gemm_strided(j->ct, j->ct, rows, Ev, cols, sc, BK, 1, v + j0 * j->rs[2], j->rs[2], \
                                                                     j->cs[2], acc, Ev, 1, true));        \
            }                                                                                             \
            for (int64_t r = 0; r < rows; r++) {                                                          \
                T *o = (T *)(void *)j->out + (b * L + i0 + r) * Ev;                                       \
                for (int64_t e = 0; e < Ev; e++) o[e] = acc[r * Ev + e] / sum[r];                         \
                if (!j->saved) continue;                                                                  \
                T *sv = (T *)(void *)j->saved + (b * L + i0 + r) * (Ev + 1);                              \
                memcpy(sv, o, sizeof(T) * (size_t)Ev);                                                    \
                sv[Ev] = mx[r] + (T)log((double)sum[r]);                                                  \
            }                                                                                             \
        }                                                                                                 \
        TENSOR_FREE(buf);                                                                                 \
    }
TENSOR__ATTN_FORWARD(float)
TENSOR__ATTN_FORWARD(double)

/* Backward of one head a task (batches [begin, end)), FlashAttention-2's: per tile, the
   probabilities P again from the scores and the saved log-sum-exp, then gv += P^T g,
   dP = g v^T, dS = P (dP - D) with D = rowsum(g * out), gq += dS k, gk += dS^T q (gq and gk scaled
   once at the end). The head's gradients are this task's alone: no two tasks write one place. */
#define TENSOR__ATTN_BACKWARD(T)                                                                         \
    static void tensor__attn_backward_##T(int64_t begin, int64_t end, void *vjob) {                        \
        tensor__attn_job *j = (tensor__attn_job *)vjob;                                                   \
        const int64_t BQ = TENSOR__ATTN_BQ, BK = TENSOR__ATTN_BK, L = j->L, S = j->S, E = j->E, Ev = j->Ev; \
        T *buf = (T *)TENSOR__MALLOC(sizeof(T) * (size_t)(2 * BQ * BK + L));                              \
        if (!buf) { __atomic_store_n(&j->failed, 1, __ATOMIC_RELAXED); return; }                         \
        T *p = buf, *ds = p + BQ * BK, *D = ds + BQ * BK;                                                 \
        for (int64_t b = begin; b < end && !TENSOR__TASK_FAILED(j->failed); b++) {                       \
            const T *q = (const T *)(const void *)j->base[0] + tensor__attn_off(j, 0, b);                 \
            const T *k = (const T *)(const void *)j->base[1] + tensor__attn_off(j, 1, b);                 \
            const T *v = (const T *)(const void *)j->base[2] + tensor__attn_off(j, 2, b);                 \
            const char *m = j->base[3] ? j->base[3] + (size_t)tensor__attn_off(j, 3, b) * tensor__dtype_sizes[j->mask_dt] : NULL; \
            const T *g = (const T *)(const void *)j->g + b * L * Ev, *sv = (const T *)(const void *)j->saved + b * L * (Ev + 1); \
            T *gq = (T *)(void *)j->gq + b * L * E, *gk = (T *)(void *)j->gk + b * S * E, *gv = (T *)(void *)j->gv + b * S * Ev; \
            for (int64_t i = 0; i < L; i++) {                                                             \
                T d = 0;                                                                                  \
                for (int64_t e = 0; e < Ev; e++) d += g[i * Ev + e] * sv[i * (Ev + 1) + e];               \
                D[i] = d;                                                                                 \
            }                                                                                             \
            for (int64_t i0 = 0; i0 < L; i0 += BQ) {                                                      \
                int64_t rows = L - i0 < BQ ? L - i0 : BQ;                                                 \
                int64_t kend = j->causal && i0 + rows < S ? i0 + rows : S;                                \
                for (int64_t j0 = 0; j0 < kend; j0 += BK) {                                               \
                    int64_t cols = kend - j0 < BK ? kend - j0 : BK;                                       \
                    const T *qb = q + i0 * j->rs[0], *kt = k + j0 * j->rs[1], *vt = v + j0 * j->rs[2], *gb = g + i0 * Ev; \
                    TENSOR__GEMM_IN_TASK(j->failed, tensor__gemm_strided(j->ct, j->ct, rows, cols, E, qb, j->rs[0], j->cs[0], kt, j->cs[1], \
                                                                         j->rs[1], p, BK, 1, false));  \
                    tensor__attn_mask_tile_##T(j, m, p, BK, i0, rows, j0, cols);                          \
                    for (int64_t r = 0; r < rows; r++) tensor__attn_sumexp_##T(p + r * BK, p + r * BK, cols, sv[(i0 + r) * (Ev + 1) + Ev]); \
                    TENSOR__GEMM_IN_TASK(j->failed, tensor__gemm_strided(j->ct, j->ct, cols, Ev, rows, p, 1, BK, gb, Ev, 1, gv + j0 * Ev, \
                                                                         Ev, 1, true));                   \
                    TENSOR__GEMM_IN_TASK(j->failed, tensor__gemm_strided(j->ct, j->ct, rows, cols, Ev, gb, Ev, 1, vt, j->cs[2], j->rs[2], ds, \
                                                                         BK, 1, false));                  \
                    for (int64_t r = 0; r < rows; r++)                                                    \
                        for (int64_t c = 0; c < cols; c++) ds[r * BK + c] = p[r * BK + c] * (ds[r * BK + c] - D[i0 + r]); \
                    TENSOR__GEMM_IN_TASK(j->failed, tensor__gemm_strided(j->ct, j->ct, rows, E, cols, ds, BK, 1, kt, j->rs[1], j->cs[1], \
                                                                         gq + i0 * E, E, 1, true));       \
                    TENSOR__GEMM_IN_TASK(j->failed, tensor__gemm_strided(j->ct, j->ct, cols, E, rows, ds, 1, BK, qb, j->rs[0], j->cs[0], \
                                                                         gk + j0 * E, E, 1, true));       \
                }                                                                                         \
            }                                                                                             \
            const T s = (T)j->scale;                                                                      \
            for (int64_t i = 0; i < L * E; i++) gq[i] *= s;                                               \
            for (int64_t i = 0; i < S * E; i++) gk[i] *= s;                                               \
        }                                                                                                 \
        TENSOR_FREE(buf);                                                                                 \
    }
TENSOR__ATTN_BACKWARD(float)
TENSOR__ATTN_BACKWARD(double)

/* The job of q, k, v (already in ct: contiguous copies of f16/bf16), mask and the batch shape of
   the output (nb dims of bshape). */
static void tensor__attn_job_init(tensor__attn_job *j, tensor_dtype ct, tensor *const *in, int nb, const int64_t *bshape, bool causal) {
    memset(j, 0, sizeof *j);
    j->ct = ct;
    j->nb = nb;
    j->causal = causal;
    j->batches = 1;
    for (int d = 0; d < nb; d++) { j->bshape[d] = bshape[d]; j->batches *= bshape[d]; }
    j->L = in[0]->shape[in[0]->ndim - 2];
    j->E = in[0]->shape[in[0]->ndim - 1];
    j->S = in[1]->shape[in[1]->ndim - 2];
    j->Ev = in[2]->shape[in[2]->ndim - 1];
    j->scale = 1.0 / sqrt((double)j->E);
    j->q_tiles = (j->L + TENSOR__ATTN_BQ - 1) / TENSOR__ATTN_BQ;
    for (int x = 0; x < 4; x++) {
        const tensor *t = in[x];
        if (!t) continue;
        j->base[x] = tensor__data(t);
        /* a dim of size 1 (or missing: the mask may be 0-D or 1-D) broadcasts: stride 0, as matmul's batch dims */
        j->rs[x] = t->ndim >= 2 && t->shape[t->ndim - 2] != 1 ? t->strides[t->ndim - 2] : 0;
        j->cs[x] = t->ndim >= 1 && t->shape[t->ndim - 1] != 1 ? t->strides[t->ndim - 1] : 0;
        for (int d = 0; d < nb; d++) {
            int td = t->ndim - 2 - (nb - d); /* t's dim aligned with batch dim d, from the right */
            j->bstride[x][d] = td >= 0 && t->shape[td] != 1 ? t->strides[td] : 0;
        }
    }
    if (in[3]) j->mask_dt = in[3]->dtype;
}

/* q, k, v in the compute dtype: themselves (f32, f64), or contiguous f32 copies (f16, bf16); the
   copies go into tmp[0..2] for the caller to free. */
static bool tensor__attn_operands(const char *fn, tensor *const *in, tensor_dtype ct, tensor **ops, tensor **tmp) {
    for (int x = 0; x < 3; x++) {
        tmp[x] = NULL;
        ops[x] = in[x];
        if (in[x]->dtype == ct) continue;
        if (!(tmp[x] = ops[x] = tensor__contiguous_copy(fn, in[x], ct))) return false;
    }
    ops[3] = in[3];
    return true;
}

static bool tensor__grad_on(void); /* >>autograd */

static int tensor__cpu_scaled_dot_product_attention(tensor__call *c) {
    tensor *out = c->out, *ops[4], *tmp[3] = {NULL, NULL, NULL}, *o = NULL;
    tensor_dtype ct = out->dtype == TENSOR_F64 ? TENSOR_F64 : TENSOR_F32;
    int rc = 1;
    if (tensor__attn_operands(c->fn, c->in, ct, ops, tmp)) {
        tensor__attn_job j;
        tensor__attn_job_init(&j, ct, ops, out->ndim - 2, out->shape, c->ip[0] != 0);
        /* the backward's rows (output and log-sum-exp) when a graph will be recorded */
        bool grad = tensor__grad_on() && (c->in[0]->requires_grad || c->in[1]->requires_grad || c->in[2]->requires_grad || (c->in[3] && c->in[3]->requires_grad));
        int64_t sshape[TENSOR_MAX_DIMS];
        memcpy(sshape, out->shape, sizeof(int64_t) * (size_t)out->ndim);
        sshape[out->ndim - 1] = j.Ev + 1;
        o = out->dtype == ct ? out : tensor__new(c->fn, out->ndim, out->shape, ct, TENSOR_CPU);
        if (o && grad) c->out2 = tensor__new(c->fn, out->ndim, sshape, ct, TENSOR_CPU);
        if (o && (!grad || c->out2)) {
            j.out = (char *)tensor__data(o);
            j.saved = grad ? (char *)tensor__data(c->out2) : NULL;
            TENSOR__PATH_TAKEN(attention_fused);
            tensor__parallel_for(j.batches * j.q_tiles, 1, ct == TENSOR_F64 ? tensor__attn_forward_double : tensor__attn_forward_float, &j);
            if (TENSOR__TASK_FAILED(j.failed)) tensor__fail(c->fn, "out of memory");
            else rc = 0;
            if (!rc && o != out) tensor__copy_into(out, o);
        }
    }
    for (int x = 0; x < 3; x++) tensor_free(tmp[x]);
    if (o != out) tensor_free(o);
    return rc;
}

static tensor *tensor__sum_to(tensor *g, int ndim, const int64_t *shape); /* tensor_autograd.h */

/* The gradients of q, k, v (grads[0..2], where the node's next edge wants one) from g, the saved
   rows (n->extra) and the inputs: one pass over the tiles per head, as the forward went. Inputs
   broadcast over batch dims get their gradients summed back to their shape. 0, or 1 on error. */
static int tensor__sdpa_backward(const char *fn, tensor *const *in, tensor *saved, bool causal, tensor *g, const bool *want, tensor **grads) {
    tensor_dtype ct = saved->dtype;
    tensor *ops[4], *tmp[3] = {NULL, NULL, NULL}, *gc = NULL, *full[3] = {NULL, NULL, NULL};
    int rc = 1;
    if (tensor__attn_operands(fn, in, ct, ops, tmp) && (gc = tensor__contiguous_copy(fn, g, ct)) != NULL) {
        tensor__attn_job j;
        int nb = saved->ndim - 2;
        tensor__attn_job_init(&j, ct, ops, nb, saved->shape, causal);
        int64_t shp[3][TENSOR_MAX_DIMS];
        const int64_t last[3][2] = {{j.L, j.E}, {j.S, j.E}, {j.S, j.Ev}};
        bool ok = true;
        for (int x = 0; x < 3 && ok; x++) {
            memcpy(shp[x], saved->shape, sizeof(int64_t) * (size_t)nb);
            shp[x][nb] = last[x][0];
            shp[x][nb + 1] = last[x][1];
            ok = (full[x] = tensor_zeros(nb + 2, shp[x], ct)) != NULL;
        }
        if (ok) {
            j.saved = (char *)tensor__data(saved);
            j.g = (const char *)tensor__data(gc);
            j.gq = (char *)tensor__data(full[0]);
            j.gk = (char *)tensor__data(full[1]);
            j.gv = (char *)tensor__data(full[2]);
            TENSOR__PATH_TAKEN(attention_fused_backward);
            tensor__parallel_for(j.batches, 1, ct == TENSOR_F64 ? tensor__attn_backward_double : tensor__attn_backward_float, &j);
            if (TENSOR__TASK_FAILED(j.failed)) tensor__fail(fn, "out of memory");
            else rc = 0;
        }
        for (int x = 0; x < 3 && !rc; x++) {
            if (!want[x]) continue;
            tensor *r = tensor__sum_to(full[x], in[x]->ndim, in[x]->shape); /* a new tensor or an alias of full[x] */
            if (r && r->dtype != in[x]->dtype) { tensor *d = tensor_to_dtype(r, in[x]->dtype); tensor_free(r); r = d; }
            if (!(grads[x] = r)) rc = 1;
        }
    }
    for (int x = 0; x < 3; x++) { tensor_free(tmp[x]); tensor_free(full[x]); }
    tensor_free(gc);
    return rc;
}

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
    /* the fused kernel where the device has one (the CPU always; tensor_set_reference_kernels(true):
       the composite), and where it is defined the same way (no keys: a zero output; no embedding:
       scores of 0 * inf) */
    tensor_device dev = q->storage->device;
    if (tensor__reference_kernels || !tensor__kernels[TENSOR_OP_scaled_dot_product_attention][dev] || S == 0 || E == 0)
        return tensor__sdpa_composite(fn, q, k, v, mask, is_causal);
    int64_t oshape[TENSOR_MAX_DIMS];
    for (int i = 0; i < nd2; i++) oshape[i] = tmp[i];
    oshape[nd2] = L;
    oshape[nd2 + 1] = v->shape[v->ndim - 1];
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_scaled_dot_product_attention);
    c.n_in = 4;
    c.in[0] = q;
    c.in[1] = k;
    c.in[2] = v;
    c.in[3] = mask;
    c.ip[0] = is_causal;
    c.out = tensor__new(fn, nd2 + 2, oshape, q->dtype, dev);
    return c.out ? tensor__dispatch(&c) : NULL;
}
