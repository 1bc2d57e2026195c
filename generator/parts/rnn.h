// >>rnn ------------------------------------------------------------------------------------------
/* The recurrent cells (torch.rnn_tanh_cell, rnn_relu_cell, lstm_cell, gru_cell) and F.bilinear,
   composed of linear and elementwise ops (so they differentiate and run on any device).
   input [N, I] or [I] (unbatched), hx [N, H] or [H] (NULL: zeros, as nn.RNNCell), w_ih [G H, I],
   w_hh [G H, H], b_ih and b_hh [G H] or NULL, with G = 1 (rnn), 4 (lstm: gates i, f, g, o), 3
   (gru: r, z, n). */

/* The operands' shapes; *h the hidden size. false + message. */
static bool tensor__cell_check(const char *fn, tensor *x, tensor *hx, tensor *w_ih, tensor *w_hh, tensor *b_ih, tensor *b_hh, int64_t gates, int64_t *h) {
    if (!x || !w_ih || !w_hh) return tensor__fail(fn, "input, w_ih and w_hh are required (got NULL)"), false;
    tensor *all[6] = {x, hx, w_ih, w_hh, b_ih, b_hh};
    if (!tensor__same_device(fn, 6, all)) return false;
    if (!tensor__is_float(x->dtype)) return tensor__fail(fn, "expected a floating input, got %s", tensor__dtype_names[x->dtype]), false;
    if (x->ndim != 1 && x->ndim != 2) return tensor__fail(fn, "expected input to be 1-D or 2-D, got %d-D", x->ndim), false;
    if (w_ih->ndim != 2 || w_hh->ndim != 2 || w_ih->shape[0] % gates != 0)
        return tensor__fail(fn, "w_ih %s and w_hh %s must be 2-D with %lld * hidden_size rows", tensor__shape_of(w_ih), tensor__shape_of(w_hh), (long long)gates), false;
    *h = w_ih->shape[0] / gates;
    int64_t in = x->shape[x->ndim - 1];
    if (w_ih->shape[1] != in) return tensor__fail(fn, "input has %lld features, w_ih %s expects %lld", (long long)in, tensor__shape_of(w_ih), (long long)w_ih->shape[1]), false;
    if (w_hh->shape[0] != gates * *h || w_hh->shape[1] != *h)
        return tensor__fail(fn, "w_hh %s must be [%lld, %lld]", tensor__shape_of(w_hh), (long long)(gates * *h), (long long)*h), false;
    tensor *bs[2] = {b_ih, b_hh};
    for (int k = 0; k < 2; k++)
        if (bs[k] && (bs[k]->ndim != 1 || bs[k]->shape[0] != gates * *h))
            return tensor__fail(fn, "%s %s must be [%lld]", k ? "b_hh" : "b_ih", tensor__shape_of(bs[k]), (long long)(gates * *h)), false;
    if (hx && (hx->ndim != x->ndim || hx->shape[hx->ndim - 1] != *h || (x->ndim == 2 && hx->shape[0] != x->shape[0])))
        return tensor__fail(fn, "hidden state %s does not match input %s and hidden_size %lld", tensor__shape_of(hx), tensor__shape_of(x), (long long)*h), false;
    return true;
}
/* hx, or zeros of the hidden state's shape when it is NULL (kept in s) */
static tensor *tensor__cell_state(tensor__tmps *s, tensor *x, tensor *hx, int64_t h) {
    if (hx) return hx;
    int64_t shape[2] = {x->shape[0], h};
    return tensor__tmp(s, tensor__full_on(x->ndim, x->ndim == 2 ? shape : shape + 1, 0, x->dtype, x->storage->device));
}

static tensor *tensor__rnn_cell(const char *fn, tensor *x, tensor *hx, tensor *w_ih, tensor *w_hh, tensor *b_ih, tensor *b_hh, bool relu) {
    int64_t h;
    if (!tensor__cell_check(fn, x, hx, w_ih, w_hh, b_ih, b_hh, 1, &h)) return NULL;
    tensor__tmps s = {{0}, 0};
    tensor *hh = tensor__cell_state(&s, x, hx, h);
    tensor *pre = tensor__tmp(&s, tensor_add(tensor__tmp(&s, tensor_linear(x, w_ih, b_ih)), tensor__tmp(&s, tensor_linear(hh, w_hh, b_hh))));
    tensor *r = pre ? (relu ? tensor_relu(pre) : tensor_tanh(pre)) : NULL;
    tensor__tmps_free(&s);
    return r;
}
TENSOR_API tensor *tensor_rnn_tanh_cell(tensor *input, tensor *hx, tensor *w_ih, tensor *w_hh, tensor *b_ih, tensor *b_hh) {
    return tensor__rnn_cell("tensor_rnn_tanh_cell", input, hx, w_ih, w_hh, b_ih, b_hh, false);
}
TENSOR_API tensor *tensor_rnn_relu_cell(tensor *input, tensor *hx, tensor *w_ih, tensor *w_hh, tensor *b_ih, tensor *b_hh) {
    return tensor__rnn_cell("tensor_rnn_relu_cell", input, hx, w_ih, w_hh, b_ih, b_hh, true);
}

/* gates = x w_ih^T + b_ih + h w_hh^T + b_hh = [i, f, g, o]; c' = sigmoid(f) c + sigmoid(i) tanh(g),
   h' = sigmoid(o) tanh(c'). Returns h', c' through *cy. */
TENSOR_API tensor *tensor_lstm_cell(tensor *input, tensor *hx, tensor *cx, tensor *w_ih, tensor *w_hh, tensor *b_ih, tensor *b_hh, tensor **cy) {
    const char *fn = "tensor_lstm_cell";
    if (cy) *cy = NULL;
    int64_t h;
    if (!tensor__cell_check(fn, input, hx, w_ih, w_hh, b_ih, b_hh, 4, &h)) return NULL;
    if (cx && (cx->ndim != input->ndim || cx->shape[cx->ndim - 1] != h || (input->ndim == 2 && cx->shape[0] != input->shape[0])))
        return tensor__fail(fn, "cell state %s does not match input %s and hidden_size %lld", tensor__shape_of(cx), tensor__shape_of(input), (long long)h);
    tensor *cs[1] = {cx};
    if (cx && !tensor__same_device(fn, 1, cs)) return NULL;
    tensor__tmps s = {{0}, 0};
    tensor *hh = tensor__cell_state(&s, input, hx, h), *cc = tensor__cell_state(&s, input, cx, h);
    tensor *gates = tensor__tmp(&s, tensor_add(tensor__tmp(&s, tensor_linear(input, w_ih, b_ih)), tensor__tmp(&s, tensor_linear(hh, w_hh, b_hh))));
    int last = input->ndim - 1;
    tensor *g[4] = {NULL, NULL, NULL, NULL};
    for (int k = 0; k < 4 && gates; k++) g[k] = tensor__tmp(&s, tensor_narrow(gates, last, k * h, h));
    tensor *i = tensor__tmp(&s, tensor_sigmoid(g[0])), *f = tensor__tmp(&s, tensor_sigmoid(g[1]));
    tensor *c = tensor__tmp(&s, tensor_tanh(g[2])), *o = tensor__tmp(&s, tensor_sigmoid(g[3]));
    tensor *c2 = tensor__tmp(&s, tensor_add(tensor__tmp(&s, tensor_mul(f, cc)), tensor__tmp(&s, tensor_mul(i, c))));
    tensor *h2 = c2 ? tensor_mul(o, tensor__tmp(&s, tensor_tanh(c2))) : NULL;
    if (h2 && cy) *cy = tensor__tmps_take(&s, c2);
    tensor__tmps_free(&s);
    return h2;
}

/* r = sigmoid(x W_ir + b_ir + h W_hr + b_hr), z likewise, n = tanh(x W_in + b_in + r (h W_hn + b_hn)),
   h' = (1 - z) n + z h = n + z (h - n). */
TENSOR_API tensor *tensor_gru_cell(tensor *input, tensor *hx, tensor *w_ih, tensor *w_hh, tensor *b_ih, tensor *b_hh) {
    int64_t h;
    if (!tensor__cell_check("tensor_gru_cell", input, hx, w_ih, w_hh, b_ih, b_hh, 3, &h)) return NULL;
    tensor__tmps s = {{0}, 0};
    tensor *hh = tensor__cell_state(&s, input, hx, h);
    tensor *gi = tensor__tmp(&s, tensor_linear(input, w_ih, b_ih)), *gh = tensor__tmp(&s, tensor_linear(hh, w_hh, b_hh));
    int last = input->ndim - 1;
    tensor *pi[3] = {NULL, NULL, NULL}, *ph[3] = {NULL, NULL, NULL};
    for (int k = 0; k < 3 && gi && gh; k++) {
        pi[k] = tensor__tmp(&s, tensor_narrow(gi, last, k * h, h));
        ph[k] = tensor__tmp(&s, tensor_narrow(gh, last, k * h, h));
    }
    tensor *r = tensor__tmp(&s, tensor_sigmoid(tensor__tmp(&s, tensor_add(pi[0], ph[0]))));
    tensor *z = tensor__tmp(&s, tensor_sigmoid(tensor__tmp(&s, tensor_add(pi[1], ph[1]))));
    tensor *n = tensor__tmp(&s, tensor_tanh(tensor__tmp(&s, tensor_add(pi[2], tensor__tmp(&s, tensor_mul(r, ph[2]))))));
    tensor *out = n ? tensor_add(n, tensor__tmp(&s, tensor_mul(z, tensor__tmp(&s, tensor_sub(hh, n))))) : NULL;
    tensor__tmps_free(&s);
    return out;
}

/* F.bilinear: y[..., o] = sum_ij x1[..., i] weight[o, i, j] x2[..., j] + bias[o]: (x1 W_o) . x2 as
   one matmul of x1 [B, I] with weight viewed [I, O J] (permuted), then a product with x2 summed. */
TENSOR_API tensor *tensor_bilinear(tensor *input1, tensor *input2, tensor *weight, tensor *bias) {
    const char *fn = "tensor_bilinear";
    TENSOR__CHECK_ARG(fn, input1);
    TENSOR__CHECK_ARG(fn, input2);
    TENSOR__CHECK_ARG(fn, weight);
    tensor *all[4] = {input1, input2, weight, bias};
    if (!tensor__same_device(fn, 4, all)) return NULL;
    if (weight->ndim != 3) return tensor__fail(fn, "weight must be [out, in1, in2], got %s", tensor__shape_of(weight));
    int64_t O = weight->shape[0], I = weight->shape[1], J = weight->shape[2];
    if (input1->ndim < 1 || input1->ndim != input2->ndim || input1->shape[input1->ndim - 1] != I || input2->shape[input2->ndim - 1] != J)
        return tensor__fail(fn, "inputs %s and %s must have one rank and last dims %lld and %lld (weight %s)", tensor__shape_of(input1), tensor__shape_of(input2), (long long)I,
                            (long long)J, tensor__shape_of(weight));
    for (int d = 0; d + 1 < input1->ndim; d++)
        if (input1->shape[d] != input2->shape[d]) return tensor__fail(fn, "inputs %s and %s must have the same batch dims", tensor__shape_of(input1), tensor__shape_of(input2));
    if (bias && (bias->ndim != 1 || bias->shape[0] != O)) return tensor__fail(fn, "bias %s must be [%lld]", tensor__shape_of(bias), (long long)O);
    tensor__tmps s = {{0}, 0};
    int nd = input1->ndim;
    int64_t b = tensor__numel_of(nd - 1, input1->shape);
    const int64_t s1[2] = {b, I}, s2[3] = {b, 1, J}, sw[2] = {I, O * J}, sxw[3] = {b, O, J};
    const int perm[3] = {1, 0, 2};
    tensor *x1 = tensor__tmp(&s, tensor_reshape(input1, 2, s1));
    tensor *x2 = tensor__tmp(&s, tensor_reshape(input2, 3, s2));
    tensor *w = tensor__tmp(&s, tensor_reshape(tensor__tmp(&s, tensor_permute(weight, 3, perm)), 2, sw));
    tensor *xw = tensor__tmp(&s, tensor_reshape(tensor__tmp(&s, tensor_matmul(x1, w)), 3, sxw));
    tensor *y = tensor__tmp(&s, tensor_sum(tensor__tmp(&s, tensor_mul(xw, x2)), 2, false));
    if (bias) y = tensor__tmp(&s, tensor_add(y, bias));
    int64_t shape[TENSOR_MAX_DIMS];
    for (int d = 0; d + 1 < nd; d++) shape[d] = input1->shape[d];
    shape[nd - 1] = O;
    tensor *out = y ? tensor_reshape(y, nd, shape) : NULL;
    tensor__tmps_free(&s);
    return out;
}
