// >>attention ----------------------------------------------------------------------------------
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
        tensor *host = tensor__new(fn, 2, cs, TENSOR_BOOL, TENSOR_CPU); /* filled here, then moved to q's device */
        if (!host) return NULL;
        uint8_t *m = (uint8_t *)tensor__data(host);
        for (int64_t i = 0; i < L; i++)
            for (int64_t j = 0; j < S; j++) m[i * S + j] = j <= i;
        causal = host->storage->device == q->storage->device ? host : tensor_to_device(host, q->storage->device);
        if (causal != host) tensor_free(host);
        if (!causal) return NULL;
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
