// >>conv ---------------------------------------------------------------------------------------
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

/* The reference: the convolution sum written out, in double, straight from the strided inputs;
   for the integer dtypes in int64 arithmetic modulo 2^64 (the result wraps as PyTorch's does). It
   is also the integer convolution's only kernel (PyTorch's is its plain slow_conv2d loop too). */
static void tensor__conv_reference(tensor__call *c, const tensor__conv_geom *g) {
    const tensor *x = c->in[0], *w = c->in[1], *bias = c->in[2];
    tensor *out = c->out;
    int64_t ex = (int64_t)tensor__dtype_sizes[x->dtype], ew = (int64_t)tensor__dtype_sizes[w->dtype];
    size_t eo = tensor__dtype_sizes[out->dtype];
    const char *xb = (const char *)x->storage->data, *wb = (const char *)w->storage->data;
    int64_t Cg = g->C / g->groups, Og = g->O / g->groups;
    char *o = tensor__data(out);
    bool ints = !tensor__is_float(out->dtype);
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t oc = 0; oc < g->O; oc++)
            for (int64_t oh = 0; oh < g->oH; oh++)
                for (int64_t ow = 0; ow < g->oW; ow++) {
                    const char *bp = bias ? (const char *)bias->storage->data + (bias->offset + oc * bias->strides[0]) * (int64_t)tensor__dtype_sizes[bias->dtype] : NULL;
                    double acc = bp ? tensor__load_f64(bp, bias->dtype) : 0;
                    uint64_t iacc = bp && ints ? (uint64_t)tensor__load_i64(bp, bias->dtype) : 0;
                    int64_t grp = oc / Og;
                    for (int64_t ic = 0; ic < Cg; ic++)
                        for (int64_t ki = 0; ki < g->kH; ki++)
                            for (int64_t kj = 0; kj < g->kW; kj++) {
                                int64_t ih = oh * g->sh - g->ph + ki * g->dh, iw = ow * g->sw - g->pw + kj * g->dw;
                                if (ih < 0 || ih >= g->H || iw < 0 || iw >= g->W) continue;
                                int64_t xo = x->offset + n * g->xs[0] + (grp * Cg + ic) * g->xs[1] + ih * g->xs[2] + iw * g->xs[3];
                                int64_t wo = w->offset + oc * g->ws[0] + ic * g->ws[1] + ki * g->ws[2] + kj * g->ws[3];
                                if (ints) iacc += (uint64_t)tensor__load_i64(xb + xo * ex, x->dtype) * (uint64_t)tensor__load_i64(wb + wo * ew, w->dtype);
                                else acc += tensor__load_f64(xb + xo * ex, x->dtype) * tensor__load_f64(wb + wo * ew, w->dtype);
                            }
                    char *op = o + (size_t)(((n * g->O + oc) * g->oH + oh) * g->oW + ow) * eo;
                    if (ints) tensor__store_i64(op, out->dtype, (int64_t)iacc);
                    else tensor__store_f64(op, out->dtype, acc);
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
    if (tensor__reference_kernels || !tensor__is_float(c->out->dtype)) { tensor__conv_reference(c, &g); return 0; }
    return tensor__conv_fast(c, &g);
}
/* out: [N, O, oH, oW] or [O, oH, oW] */
static int tensor__cpu_conv2d(tensor__call *c) { return tensor__conv_kernel(c, 2); }
/* out: [N, O, oL] or [O, oL] */
static int tensor__cpu_conv1d(tensor__call *c) { return tensor__conv_kernel(c, 1); }

/* The checks of PyTorch's convolution, for sd spatial dims (1, 2 or 3), then the output shape
   (shape, *nd dims); false after recording an error. */
static bool tensor__conv_check(const char *fn, int sd, tensor *x, tensor *w, tensor *bias, int stride, int padding, int dilation, int groups, int64_t *shape, int *ndp) {
    if (!x) return tensor__null_arg(fn, "x"), false;
    if (!w) return tensor__null_arg(fn, "w"), false;
    tensor *ins[3] = {x, w, bias};
    if (!tensor__same_device(fn, 3, ins)) return false;
    if (x->ndim != sd + 1 && x->ndim != sd + 2)
        return tensor__fail(fn, "expected a %d-D (unbatched) or %d-D (batched) input, got shape %s", sd + 1, sd + 2, tensor__shape_of(x)), false;
    if (w->ndim != sd + 2)
        return tensor__fail(fn, "expected a %d-D weight [out_channels, in_channels/groups%s], got shape %s", sd + 2, sd == 3 ? ", kD, kH, kW" : sd == 2 ? ", kH, kW" : ", k",
                            tensor__shape_of(w)), false;
    if (x->dtype == TENSOR_BOOL) return tensor__fail(fn, "expected a floating or integer input, got bool"), false;
    if (!tensor__is_float(x->dtype) && x->storage->device != TENSOR_CPU) /* PyTorch's CUDA convolution refuses them too */
        return tensor__fail(fn, "integer convolution (%s) runs on the CPU only", tensor__dtype_names[x->dtype]), false;
    if (w->dtype != x->dtype) return tensor__fail(fn, "input dtype %s and weight dtype %s should be the same", tensor__dtype_names[x->dtype], tensor__dtype_names[w->dtype]), false;
    if (bias && bias->dtype != x->dtype) return tensor__fail(fn, "input dtype %s and bias dtype %s should be the same", tensor__dtype_names[x->dtype], tensor__dtype_names[bias->dtype]), false;
    if (stride < 1) return tensor__fail(fn, "stride must be positive, got %d", stride), false;
    if (padding < 0) return tensor__fail(fn, "padding must be non-negative, got %d", padding), false;
    if (dilation < 1) return tensor__fail(fn, "dilation must be positive, got %d", dilation), false;
    if (groups < 1) return tensor__fail(fn, "groups must be positive, got %d", groups), false;
    int64_t O = w->shape[0], C = x->shape[x->ndim - sd - 1], wc;
    if (O % groups != 0)
        return tensor__fail(fn, "out_channels %lld of weight %s is not divisible by groups %d", (long long)O, tensor__shape_of(w), groups), false;
    if (!tensor__size_mul(w->shape[1], groups, &wc) || C != wc) /* (a product past 2^60 matches no input) */
        return tensor__fail(fn, "input of shape %s has %lld channels, expected %lld x %d (weight %s, groups %d)", tensor__shape_of(x), (long long)C,
                            (long long)w->shape[1], groups, tensor__shape_of(w), groups), false;
    if (bias && (bias->ndim != 1 || bias->shape[0] != O))
        return tensor__fail(fn, "bias must be 1-D with %lld elements (out_channels of weight %s), got shape %s", (long long)O, tensor__shape_of(w), tensor__shape_of(bias)), false;
    int nd = 0;
    if (x->ndim == sd + 2) shape[nd++] = x->shape[0];
    shape[nd++] = O;
    for (int i = 0; i < sd; i++) {
        int64_t in = x->shape[x->ndim - sd + i], k = w->shape[2 + i];
        int64_t padded = in + 2 * (int64_t)padding, span = 1 - dilation; /* k = 0 */
        if (k > 0 && (!tensor__size_mul(k - 1, dilation, &span) || ++span > padded)) /* a span past 2^60 exceeds any input */
            return tensor__fail(fn, "padded input size %lld (input %s, padding %d) is smaller than the dilated kernel size (%lld - 1) * %d + 1 (weight %s)",
                                (long long)padded, tensor__shape_of(x), padding, (long long)k, dilation, tensor__shape_of(w)), false;
        shape[nd++] = (padded - span) / stride + 1;
    }
    *ndp = nd;
    return true;
}

static tensor *tensor__conv_front(tensor_op op, int sd, tensor *x, tensor *w, tensor *bias, int stride, int padding, int dilation, int groups) {
    const char *fn = tensor__ops[op].fn;
    int64_t shape[TENSOR_MAX_DIMS];
    int nd;
    if (!tensor__conv_check(fn, sd, x, w, bias, stride, padding, dilation, groups, shape, &nd)) return NULL;
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

/* ---- backward (used by the derivatives in >>autograd) ---- */

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

/* ---- conv2d, conv1d with a padding mode (composites: pad, then the convolution) ---- */

/* padding "valid": none; "same": the output has the input's size (stride 1), the total padding
   d (k - 1) of each dim split in halves, the odd one more on the right/bottom (PyTorch). */
static tensor *tensor__conv_padding_front(const char *fn, int sd, tensor *x, tensor *w, tensor *bias, int stride, const char *padding, int dilation, int groups) {
    TENSOR__CHECK_ARG(fn, x);
    TENSOR__CHECK_ARG(fn, w);
    if (!padding) return tensor__fail(fn, "padding is NULL (expected \"same\" or \"valid\")");
    bool same = !strcmp(padding, "same");
    if (!same && strcmp(padding, "valid")) return tensor__fail(fn, "padding '%s' is not \"same\" or \"valid\"", padding);
    if (same && stride != 1) return tensor__fail(fn, "padding \"same\" is not supported for strided convolutions (stride %d)", stride);
    if (w->ndim != sd + 2) return tensor__fail(fn, "expected a %d-D weight, got shape %s", sd + 2, tensor__shape_of(w));
    if (dilation < 1) return tensor__fail(fn, "dilation must be positive, got %d", dilation);
    tensor *(*conv)(tensor *, tensor *, tensor *, int, int, int, int) = sd == 2 ? tensor_conv2d : tensor_conv1d;
    if (!same) return conv(x, w, bias, stride, 0, dilation, groups);
    int64_t pads[4], sym = -1;
    bool uniform = true;
    for (int i = 0; i < sd; i++) {
        int64_t total = (int64_t)dilation * (w->shape[w->ndim - 1 - i] - 1);
        pads[2 * i] = total / 2;
        pads[2 * i + 1] = total - total / 2;
        if (pads[2 * i] != pads[2 * i + 1] || (sym >= 0 && sym != pads[2 * i]) || total / 2 > INT32_MAX) uniform = false;
        sym = pads[2 * i];
    }
    if (uniform) return conv(x, w, bias, 1, (int)sym, dilation, groups);
    tensor *xp = tensor_pad(x, 2 * sd, pads, 0);
    tensor *y = xp ? conv(xp, w, bias, 1, 0, dilation, groups) : NULL;
    tensor_free(xp);
    return y;
}
TENSOR_API tensor *tensor_conv2d_padding(tensor *x, tensor *w, tensor *bias, int stride, const char *padding, int dilation, int groups) {
    return tensor__conv_padding_front("tensor_conv2d_padding", 2, x, w, bias, stride, padding, dilation, groups);
}
TENSOR_API tensor *tensor_conv1d_padding(tensor *x, tensor *w, tensor *bias, int stride, const char *padding, int dilation, int groups) {
    return tensor__conv_padding_front("tensor_conv1d_padding", 1, x, w, bias, stride, padding, dilation, groups);
}

/* ---- conv3d (a composite: the depth taps as channels of one conv2d) ----
   x [N, C, D, H, W] (or [C, D, H, W]), w [O, C/groups, kD, kH, kW]. x is zero-padded along D; the
   kD taps of each output depth (unfold along D, every dilation-th entry of a window) become
   channels, so the images of one conv2d are the N * oD output depths: xc [N oD, groups kD Cg, H, W]
   with channel (grp, kd, c), and wc [O, kD Cg, kH, kW] (w's c and kd swapped), with the same stride,
   padding (H, W), dilation and groups. That is one GEMM per group with K = Cg kD kH kW, the GEMM of
   a 3-D im2col, run by conv2d's machinery (its threads, its fast paths, its devices); gradients
   come from conv2d's and from the copies'. xc costs kD copies of the input. */
TENSOR_API tensor *tensor_conv3d(tensor *x, tensor *w, tensor *bias, int stride, int padding, int dilation, int groups) {
    const char *fn = "tensor_conv3d";
    int64_t shape[TENSOR_MAX_DIMS];
    int nd;
    if (!tensor__conv_check(fn, 3, x, w, bias, stride, padding, dilation, groups, shape, &nd)) return NULL;
    for (int i = 2; i < 5; i++)
        if (w->shape[i] < 1) return tensor__fail(fn, "the kernel size must be positive in every dim, got weight %s", tensor__shape_of(w));
    bool batched = x->ndim == 5;
    int64_t N = batched ? x->shape[0] : 1, G = groups, Cg = w->shape[1], O = w->shape[0];
    int64_t H = x->shape[x->ndim - 2], W = x->shape[x->ndim - 1], kD = w->shape[2];
    int64_t oD = shape[nd - 3], oH = shape[nd - 2], oW = shape[nd - 1], span = (kD - 1) * dilation + 1;
    tensor__tmps s = {{0}, 0};
    tensor *xb = batched ? x : tensor__tmp(&s, tensor_unsqueeze(x, 0));
    int64_t pads[6] = {0, 0, 0, 0, padding, padding};
    tensor *xp = padding ? tensor__tmp(&s, tensor_pad(xb, 6, pads, 0)) : xb;
    tensor *u = tensor__tmp(&s, tensor_unfold(xp, 2, span, stride));                    /* [N, C, oD, H, W, span] */
    if (dilation > 1) u = tensor__tmp(&s, tensor_slice(u, 5, 0, span, dilation));        /* [N, C, oD, H, W, kD] */
    int64_t s7[7] = {N, G, Cg, oD, H, W, kD}, s4[4] = {N * oD, G * kD * Cg, H, W};
    int p7[7] = {0, 3, 1, 6, 2, 4, 5};
    tensor *xc = tensor__tmp(&s, tensor_reshape(tensor__tmp(&s, tensor_permute(tensor__tmp(&s, tensor_reshape(u, 7, s7)), 7, p7)), 4, s4));
    int pw[5] = {0, 2, 1, 3, 4};
    int64_t sw[4] = {O, kD * Cg, w->shape[3], w->shape[4]};
    tensor *wc = tensor__tmp(&s, tensor_reshape(tensor__tmp(&s, tensor_permute(w, 5, pw)), 4, sw));
    tensor *y = tensor__tmp(&s, tensor_conv2d(xc, wc, bias, stride, padding, dilation, groups)); /* [N oD, O, oH, oW] */
    int64_t s5[5] = {N, oD, O, oH, oW};
    tensor *yp = tensor__tmp(&s, tensor_permute(tensor__tmp(&s, tensor_reshape(y, 5, s5)), 5, pw));
    tensor *r = tensor__tmp(&s, tensor_contiguous(yp));
    if (r && !batched) r = tensor__tmp(&s, tensor_reshape(r, 4, shape));
    r = tensor__tmps_take(&s, r);
    tensor__tmps_free(&s);
    return r;
}
