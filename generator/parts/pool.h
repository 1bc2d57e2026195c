// >>pool ---------------------------------------------------------------------------------------
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

/* avg pooling of int64 (PyTorch's only integer pooling): the window's sum, modulo 2^64, divided by
   k^2 with C's division, which truncates toward zero as PyTorch's kernel does. */
static void tensor__avgpool_plane_i64(uint64_t *y, const uint64_t *x, const tensor__pool_geom *p) {
    int64_t div = p->k * p->k;
    for (int64_t oh = 0; oh < p->oH; oh++) {
        int64_t h0 = oh * p->s - p->pad, h1 = h0 + p->k < p->H ? h0 + p->k : p->H;
        if (h0 < 0) h0 = 0;
        for (int64_t ow = 0; ow < p->oW; ow++) {
            int64_t w0 = ow * p->s - p->pad, w1 = w0 + p->k < p->W ? w0 + p->k : p->W;
            if (w0 < 0) w0 = 0;
            uint64_t acc = 0;
            for (int64_t ih = h0; ih < h1; ih++)
                for (int64_t iw = w0; iw < w1; iw++) acc += x[ih * p->W + iw];
            y[oh * p->oW + ow] = (uint64_t)((int64_t)acc / div);
        }
    }
}
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
            } else if (ct == TENSOR_I64) {
                tensor__avgpool_plane_i64((uint64_t *)(void *)op, (const uint64_t *)(const void *)xp, p);
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
    if (!tensor__is_float(x->dtype) && (op == TENSOR_OP_max_pool2d || x->dtype != TENSOR_I64)) /* as PyTorch 1.13 on the CPU */
        return tensor__fail(fn, "expected a floating input%s, got %s", op == TENSOR_OP_avg_pool2d ? " or int64" : "", tensor__dtype_names[x->dtype]);
    if (!tensor__is_float(x->dtype) && x->storage->device != TENSOR_CPU) /* PyTorch's CUDA kernel refuses int64 too */
        return tensor__fail(fn, "int64 pooling runs on the CPU only");
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

/* ---- backward (used by the derivatives in >>autograd) ---- */

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

/* ---- max_pool2d_with_indices, max/avg_pool1d, adaptive pools, max_unpool2d (composites) ----
   A window of a pooling is a list of flat input positions: the input, seen as [..., H * W], is read
   at a table of positions (index_select), the [..., L, K] windows reduced with max or sum. Autograd
   and every device come from index_select, max, sum and gather. */

/* An i64 tensor [n] holding v, on like's device (a temporary of s). */
static tensor *tensor__index_on(tensor__tmps *s, const int64_t *v, int64_t n, const tensor *like) {
    int64_t shape[1] = {n};
    tensor *t = tensor__tmp(s, tensor_from_data(v, 1, shape, TENSOR_I64));
    if (t && like->storage->device != TENSOR_CPU) t = tensor__tmp(s, tensor_to_device(t, like->storage->device));
    return t;
}

/* The K positions of window o along one dim of size n (-1: outside the input), with its count of
   positions inside and its PyTorch divisor with padding (avg pooling's count_include_pad).
   adaptive: [floor(o n / out), ceil((o + 1) n / out)); else o s - p + j d for j < k. */
typedef struct { int64_t n, out, k, s, p, d, K; bool adaptive; } tensor__win1d;
static void tensor__win1d_at(const tensor__win1d *w, int64_t o, int64_t *pos, int64_t *inside, int64_t *padded) {
    int64_t start, end, cnt = 0;
    if (w->adaptive) {
        start = o * w->n / w->out, end = ((o + 1) * w->n + w->out - 1) / w->out;
        for (int64_t j = 0; j < w->K; j++) pos[j] = start + j < end ? start + j : -1;
        *inside = *padded = end - start;
        return;
    }
    start = o * w->s - w->p;
    for (int64_t j = 0; j < w->K; j++) {
        int64_t h = start + j * w->d;
        pos[j] = h >= 0 && h < w->n ? h : -1;
        cnt += pos[j] >= 0;
    }
    *inside = cnt;
    end = start + w->k < w->n + w->p ? start + w->k : w->n + w->p;
    *padded = end - start;
}
/* The largest adaptive window of n split into out (its entry count K). */
static int64_t tensor__adaptive_k(int64_t n, int64_t out) {
    int64_t k = 0;
    for (int64_t o = 0; o < out; o++) {
        int64_t len = ((o + 1) * n + out - 1) / out - o * n / out;
        if (len > k) k = len;
    }
    return k;
}

static tensor *tensor__pool_windows_fast(const char *fn, tensor *x, const tensor__win1d *hw, const tensor__win1d *ww, bool is_max, bool count_include_pad, tensor **indices, bool *taken);

/* Pools x [..., H, W] (3-D or 4-D) over the windows hw x ww: max (positions outside the input
   repeat the window's first inside element, so the max and its first index are PyTorch's; a
   window with none reads -inf), or the sum divided by the count inside (count_include_pad: by the
   padded size). *indices (if asked, max only): the flat position h * W + w of each max, i64. */
static tensor *tensor__pool_windows(const char *fn, tensor *x, const tensor__win1d *hw, const tensor__win1d *ww, bool is_max, bool count_include_pad, tensor **indices) {
    int nd = x->ndim;
    int64_t H = x->shape[nd - 2], W = x->shape[nd - 1], oH = hw->out, oW = ww->out, KH = hw->K, KW = ww->K;
    int64_t L = oH * oW, K = KH * KW, sentinel = H * W;
    if (L > 0 && K > TENSOR__MAX_NUMEL / L) return tensor__fail(fn, "the pooling windows of input %s are too large", tensor__shape_of(x));
    if (tensor__numel_of(nd - 2, x->shape) == 0) { /* no planes: an empty result at once, without a window table as long as the planes are large */
        int64_t os[TENSOR_MAX_DIMS];
        for (int i = 0; i < nd - 2; i++) os[i] = x->shape[i];
        os[nd - 2] = oH;
        os[nd - 1] = oW;
        tensor *y = tensor_reshape(x, nd, os); /* 0 elements both: a view that keeps the graph */
        if (indices && y && !(*indices = tensor__new(fn, nd, os, TENSOR_I64, x->storage->device))) { tensor_free(y); y = NULL; }
        return y;
    }
    bool taken;
    tensor *fast = tensor__pool_windows_fast(fn, x, hw, ww, is_max, count_include_pad, indices, &taken);
    if (taken) return fast;
    int64_t *idx = (int64_t *)TENSOR__MALLOC(sizeof(int64_t) * (size_t)(L * K + 2 * (KH + KW) + 1));
    double *div = (double *)TENSOR__MALLOC(sizeof(double) * (size_t)(L + 1));
    if (!idx || !div) { TENSOR_FREE(idx); TENSOR_FREE(div); return tensor__fail(fn, "out of memory"); }
    int64_t *ph = idx + L * K, *pw = ph + KH;
    bool need_sentinel = false;
    for (int64_t oh = 0; oh < oH; oh++) {
        int64_t hin, hpad;
        tensor__win1d_at(hw, oh, ph, &hin, &hpad);
        for (int64_t ow = 0; ow < oW; ow++) {
            int64_t win, wpad, first = -1;
            tensor__win1d_at(ww, ow, pw, &win, &wpad);
            int64_t *e = idx + (oh * oW + ow) * K;
            for (int64_t i = 0; i < KH; i++)
                for (int64_t j = 0; j < KW; j++) {
                    int64_t v = ph[i] >= 0 && pw[j] >= 0 ? ph[i] * W + pw[j] : -1;
                    if (v >= 0 && first < 0) first = v;
                    e[i * KW + j] = v;
                }
            if (is_max && first < 0) need_sentinel = true;
            for (int64_t q = 0; q < K; q++)
                if (e[q] < 0) e[q] = is_max && first >= 0 ? first : sentinel;
            div[oh * oW + ow] = (double)(count_include_pad ? hpad * wpad : hin * win);
            if (!is_max && hin * win < K) need_sentinel = true;
        }
    }
    tensor__tmps s = {{0}, 0};
    int64_t shape[TENSOR_MAX_DIMS];
    for (int i = 0; i < nd - 2; i++) shape[i] = x->shape[i];
    shape[nd - 2] = H * W;
    tensor *flat = tensor__tmp(&s, tensor_reshape(x, nd - 1, shape));
    if (need_sentinel) {
        int64_t pads[2] = {0, 1};
        flat = tensor__tmp(&s, tensor_pad(flat, 2, pads, is_max ? -INFINITY : 0));
    }
    tensor *table = tensor__index_on(&s, idx, L * K, x);
    tensor *g = tensor__tmp(&s, tensor_index_select(flat, nd - 2, table));
    shape[nd - 2] = L;
    shape[nd - 1] = K;
    g = tensor__tmp(&s, tensor_reshape(g, nd, shape));
    tensor *y;
    if (is_max) {
        y = tensor__tmp(&s, tensor_max(g, nd - 1, false));
        if (indices && y) {
            tensor *a = tensor__tmp(&s, tensor_argmax(g, nd - 1, true));
            int64_t ts[2] = {L, K};
            tensor *tb = tensor__tmp(&s, tensor_expand(tensor__tmp(&s, tensor_reshape(table, 2, ts)), nd, shape));
            tensor *at = tensor__tmp(&s, tensor_gather(tb, nd - 1, a));
            shape[nd - 2] = oH;
            shape[nd - 1] = oW;
            *indices = tensor__tmps_take(&s, tensor__tmp(&s, tensor_reshape(at, nd, shape)));
        }
    } else if (x->dtype == TENSOR_I64) { /* (CPU) the window's sum, modulo 2^64, over the divisor with C's division, truncating toward zero as PyTorch's int64 kernel */
        y = tensor__tmp(&s, tensor_sum(g, nd - 1, false));
        y = y ? tensor__tmp(&s, tensor__contiguous_copy(fn, y, TENSOR_I64)) : NULL;
        if (y) {
            int64_t *v = (int64_t *)(void *)tensor__data(y), rows = tensor__numel_of(y->ndim, y->shape) / (L ? L : 1);
            for (int64_t r = 0; r < rows; r++)
                for (int64_t l = 0; l < L; l++) v[r * L + l] /= (int64_t)div[l];
        }
    } else {
        for (int64_t l = 0; l < L; l++) div[l] = 1 / div[l];
        int64_t ls[1] = {L};
        tensor *r = tensor__tmp(&s, tensor_from_data(div, 1, ls, TENSOR_F64));
        r = tensor__tmp(&s, tensor_to_dtype(r, x->dtype));
        if (r && x->storage->device != TENSOR_CPU) r = tensor__tmp(&s, tensor_to_device(r, x->storage->device));
        y = tensor__tmp(&s, tensor_mul(tensor__tmp(&s, tensor_sum(g, nd - 1, false)), r));
    }
    shape[nd - 2] = oH;
    shape[nd - 1] = oW;
    y = tensor__tmps_take(&s, tensor__tmp(&s, tensor_reshape(y, nd, shape)));
    tensor__tmps_free(&s);
    TENSOR_FREE(idx);
    TENSOR_FREE(div);
    if (indices && !y) { tensor_free(*indices); *indices = NULL; }
    if (indices && y && !*indices) { tensor_free(y); return NULL; }
    return y;
}

/* ---- the fast path of the window pools (>>norm's tensor__layer_fast): a plane kernel ----
   The windows of tensor__pool_windows, read in place: for each output row the list of its input
   rows inside the input, for each output column its columns (the positions outside dropped); max
   starts from the window's first element and takes v where TENSOR__POOL_TAKES (the first NaN, else
   the first strict maximum in row-major order: tensor__pool_argmax's pick; -0 and +0 tie), without
   branches, with its flat index; avg sums the elements (in double) times 1 / divisor. Planes split
   over the threads. Applies where every window has an element inside (else the composite runs). */
typedef struct {
    const char *x;
    char *y;
    int64_t *ix;               /* [planes, oH oW] or NULL */
    const int64_t *ph, *pw;    /* [oH, KH], [oW, KW]: the inside positions first */
    const int64_t *nh, *nw;    /* [oH], [oW]: how many are inside */
    const double *rdiv;        /* [oH oW] 1 / divisor (avg) */
    int64_t H, W, oH, oW, KH, KW;
    bool f64, is_max;
} tensor__winpool_job;

/* One window (oh, ow) of the plane kernel below. */
#define TENSOR__WINPOOL_ONE(T)                                                                           \
    {                                                                                                    \
        const int64_t *wc = j->pw + ow * j->KW;                                                          \
        int64_t o = oh * j->oW + ow;                                                                     \
        if (j->is_max) {                                                                             \
            int64_t at = hr[0] * j->W + wc[0];                                                       \
            T m = xp[at];                                                                            \
            for (int64_t a = 0; a < nh; a++) {                                                       \
                int64_t base = hr[a] * j->W;                                                         \
                for (int64_t b = 0; b < nw; b++) {                                                   \
                    int64_t q = base + wc[b];                                                        \
                    T v = xp[q];                                                                     \
                    int tk = TENSOR__POOL_TAKES(m, v);                                               \
                    m = tk ? v : m;                                                                  \
                    at = tk ? q : at;                                                                \
                }                                                                                    \
            }                                                                                        \
            yp[o] = m;                                                                               \
            if (ip) ip[o] = at;                                                                      \
        } else {                                                                                     \
            double acc = 0;                                                                          \
            for (int64_t a = 0; a < nh; a++) {                                                       \
                const T *row = xp + hr[a] * j->W;                                                    \
                for (int64_t b = 0; b < nw; b++) acc += (double)row[wc[b]];                          \
            }                                                                                        \
            yp[o] = (T)(acc * j->rdiv[o]);                                                           \
        }                                                                                            \
    }
#define TENSOR__WINPOOL_PLANE(T)                                                                         \
    {                                                                                                    \
        const T *xp = (const T *)(const void *)j->x + pl * j->H * j->W;                                  \
        T *yp = (T *)(void *)j->y + pl * j->oH * j->oW;                                                  \
        int64_t *ip = j->ix ? j->ix + pl * j->oH * j->oW : NULL;                                         \
        for (int64_t oh = 0; oh < j->oH; oh++) {                                                         \
            const int64_t *hr = j->ph + oh * j->KH, nh = j->nh[oh];                                      \
            int64_t ow = 0;                                                                              \
            /* four windows of one row at a time where they have as many columns: four independent   \
               chains of compares (one chain waits on each compare's latency) */                       \
            while (ow < j->oW) {                                                                         \
                int64_t nw = j->nw[ow];                                                                  \
                if (!j->is_max || ow + 4 > j->oW || j->nw[ow + 1] != nw || j->nw[ow + 2] != nw || j->nw[ow + 3] != nw) { \
                    TENSOR__WINPOOL_ONE(T)                                                               \
                    ow++;                                                                                \
                    continue;                                                                            \
                }                                                                                        \
                const int64_t *c0 = j->pw + ow * j->KW, *c1 = c0 + j->KW, *c2 = c1 + j->KW, *c3 = c2 + j->KW; \
                int64_t a0 = hr[0] * j->W + c0[0], a1 = hr[0] * j->W + c1[0], a2 = hr[0] * j->W + c2[0], a3 = hr[0] * j->W + c3[0]; \
                T m0 = xp[a0], m1 = xp[a1], m2 = xp[a2], m3 = xp[a3];                                    \
                for (int64_t a = 0; a < nh; a++) {                                                       \
                    int64_t base = hr[a] * j->W;                                                         \
                    for (int64_t b = 0; b < nw; b++) {                                                   \
                        int64_t q0 = base + c0[b], q1 = base + c1[b], q2 = base + c2[b], q3 = base + c3[b]; \
                        T v0 = xp[q0], v1 = xp[q1], v2 = xp[q2], v3 = xp[q3];                            \
                        int t0 = TENSOR__POOL_TAKES(m0, v0), t1 = TENSOR__POOL_TAKES(m1, v1);            \
                        int t2 = TENSOR__POOL_TAKES(m2, v2), t3 = TENSOR__POOL_TAKES(m3, v3);            \
                        m0 = t0 ? v0 : m0; a0 = t0 ? q0 : a0;                                            \
                        m1 = t1 ? v1 : m1; a1 = t1 ? q1 : a1;                                            \
                        m2 = t2 ? v2 : m2; a2 = t2 ? q2 : a2;                                            \
                        m3 = t3 ? v3 : m3; a3 = t3 ? q3 : a3;                                            \
                    }                                                                                    \
                }                                                                                        \
                int64_t o = oh * j->oW + ow;                                                             \
                yp[o] = m0; yp[o + 1] = m1; yp[o + 2] = m2; yp[o + 3] = m3;                              \
                if (ip) { ip[o] = a0; ip[o + 1] = a1; ip[o + 2] = a2; ip[o + 3] = a3; }                  \
                ow += 4;                                                                                 \
            }                                                                                            \
        }                                                                                                \
    }
static void tensor__winpool_planes(int64_t begin, int64_t end, void *ctx) {
    const tensor__winpool_job *j = (const tensor__winpool_job *)ctx;
    for (int64_t pl = begin; pl < end; pl++) {
        if (j->f64) TENSOR__WINPOOL_PLANE(double)
        else TENSOR__WINPOOL_PLANE(float)
    }
}
#undef TENSOR__WINPOOL_PLANE
#undef TENSOR__WINPOOL_ONE

/* Moves the positions >= 0 of p[0, k) to its front, in order; returns their count. */
static int64_t tensor__winpool_compact(int64_t *p, int64_t k) {
    int64_t n = 0;
    for (int64_t i = 0; i < k; i++)
        if (p[i] >= 0) p[n++] = p[i];
    return n;
}

/* The pooling of tensor__pool_windows by the plane kernel, or NULL with *taken false where it does
   not apply. Avg pooling and the result without indices need no graph here; with one (x requires
   grad), max pooling returns gather(x, indices) over the flat planes, which records gather's node
   (its backward a scatter_add: the gradient at each pick). */
/* The windows of a pooling as the plane kernel reads them (rdiv only for avg); false when some
   window has no element inside (or no memory): the composite then runs. pos owns the arrays. */
typedef struct { int64_t *pos, *ph, *pw, *nh, *nw; double *rdiv; } tensor__winpool_table;
static bool tensor__winpool_table_of(const tensor__win1d *hw, const tensor__win1d *ww, bool is_max, bool count_include_pad, tensor__winpool_table *tb) {
    int64_t oH = hw->out, oW = ww->out, KH = hw->K, KW = ww->K;
    tb->pos = NULL;
    tb->rdiv = NULL;
    if (oH * KH > TENSOR__MAX_NUMEL / 4 || oW * KW > TENSOR__MAX_NUMEL / 4 || oH > TENSOR__MAX_NUMEL / oW) return false;
    int64_t *pos = (int64_t *)TENSOR__MALLOC(sizeof(int64_t) * (size_t)(oH * KH + oW * KW + 3 * oW + oH + 1));
    double *rdiv = is_max ? NULL : (double *)TENSOR__MALLOC(sizeof(double) * (size_t)(oH * oW + 1));
    if (!pos || (!is_max && !rdiv)) { TENSOR_FREE(pos); TENSOR_FREE(rdiv); return false; }
    int64_t *ph = pos, *pw = ph + oH * KH, *in_w = pw + oW * KW, *pad_w = in_w + oW, *nh = pad_w + oW, *nw = nh + oH;
    bool empty = false;
    for (int64_t ow = 0; ow < oW; ow++) {
        tensor__win1d_at(ww, ow, pw + ow * KW, &in_w[ow], &pad_w[ow]);
        nw[ow] = tensor__winpool_compact(pw + ow * KW, KW);
        empty |= nw[ow] == 0;
    }
    for (int64_t oh = 0; oh < oH && !empty; oh++) {
        int64_t in_h, pad_h;
        tensor__win1d_at(hw, oh, ph + oh * KH, &in_h, &pad_h);
        nh[oh] = tensor__winpool_compact(ph + oh * KH, KH);
        empty = nh[oh] == 0;
        for (int64_t ow = 0; ow < oW && rdiv; ow++)
            rdiv[oh * oW + ow] = 1 / (double)(count_include_pad ? pad_h * pad_w[ow] : in_h * in_w[ow]);
    }
    if (empty) { TENSOR_FREE(pos); TENSOR_FREE(rdiv); return false; }
    tb->pos = pos; tb->ph = ph; tb->pw = pw; tb->nh = nh; tb->nw = nw; tb->rdiv = rdiv;
    return true;
}

/* The op whose node an average pooling records (its derivative: tensor__derivative_layer). */
static tensor_op tensor__avgpool_op(const char *fn) {
    return !strcmp(fn, "tensor_avg_pool1d") ? TENSOR_OP_avg_pool1d : !strcmp(fn, "tensor_adaptive_avg_pool1d") ? TENSOR_OP_adaptive_avg_pool1d : TENSOR_OP_adaptive_avg_pool2d;
}

static tensor *tensor__pool_windows_fast(const char *fn, tensor *x, const tensor__win1d *hw, const tensor__win1d *ww, bool is_max, bool count_include_pad, tensor **indices, bool *taken) {
    *taken = false;
    if (!tensor__layer_fast(x, false)) return NULL;
    int nd = x->ndim;
    int64_t H = x->shape[nd - 2], W = x->shape[nd - 1], oH = hw->out, oW = ww->out, KH = hw->K, KW = ww->K;
    int64_t planes = tensor__numel_of(nd - 2, x->shape);
    tensor__winpool_table tb;
    if (!tensor__winpool_table_of(hw, ww, is_max, count_include_pad, &tb)) return NULL;
    *taken = true;
    int64_t shape[TENSOR_MAX_DIMS];
    for (int i = 0; i < nd - 2; i++) shape[i] = x->shape[i];
    shape[nd - 2] = oH;
    shape[nd - 1] = oW;
    bool graph = tensor__grad_on() && x->requires_grad, gather = is_max && graph;
    tensor *xc = tensor_contiguous(x);
    tensor *y = xc ? tensor__new(fn, nd, shape, x->dtype, TENSOR_CPU) : NULL;
    tensor *ix = y && (indices || gather) ? tensor__new(fn, nd, shape, TENSOR_I64, TENSOR_CPU) : NULL;
    if (y && (ix || !(indices || gather))) {
        tensor__winpool_job j;
        j.x = tensor__data(xc);
        j.y = tensor__data(y);
        j.ix = ix ? (int64_t *)(void *)tensor__data(ix) : NULL;
        j.ph = tb.ph; j.pw = tb.pw; j.nh = tb.nh; j.nw = tb.nw; j.rdiv = tb.rdiv;
        j.H = H; j.W = W; j.oH = oH; j.oW = oW; j.KH = KH; j.KW = KW;
        j.f64 = x->dtype == TENSOR_F64;
        j.is_max = is_max;
        tensor__parallel_for(planes, 16384 / (oH * oW * KH * KW + 1) + 1, tensor__winpool_planes, &j);
        TENSOR__PATH_TAKEN(layer_pool);
    } else {
        tensor_free(y);
        y = NULL;
    }
    TENSOR_FREE(tb.pos);
    TENSOR_FREE(tb.rdiv);
    tensor_free(xc);
    if (y && gather) { /* the values again, as gather(x, indices): gather's node carries the gradient */
        int64_t fs[TENSOR_MAX_DIMS];
        for (int i = 0; i < nd - 2; i++) fs[i] = x->shape[i];
        fs[nd - 2] = H * W;
        tensor *xf = tensor_reshape(x, nd - 1, fs);
        fs[nd - 2] = oH * oW;
        tensor *jf = tensor_reshape(ix, nd - 1, fs);
        tensor *g = xf && jf ? tensor_gather(xf, nd - 2, jf) : NULL;
        tensor *r = g ? tensor_reshape(g, nd, shape) : NULL;
        tensor_free(xf); tensor_free(jf); tensor_free(g);
        tensor_free(y);
        y = r;
    } else if (y && graph) { /* average pooling: a node of its own (the windows in ip) */
        int64_t ip[15] = {hw->out, hw->k, hw->s, hw->p, hw->d, hw->K, hw->adaptive, ww->out, ww->k, ww->s, ww->p, ww->d, ww->K, ww->adaptive, count_include_pad};
        y = tensor__layer_record(tensor__avgpool_op(fn), y, 1, &x, ip, 15, NULL, 0, NULL);
    }
    if (y && indices) *indices = ix;
    else tensor_free(ix);
    return y;
}

/* The backward of the fast average pooling (its node's ip: the windows): per plane, each
   window's g / divisor added to its inside elements; a new contiguous tensor of x's shape and
   dtype. */
typedef struct {
    const char *g;
    char *gx;
    const tensor__winpool_table *tb;
    int64_t H, W, oH, oW, KH, KW;
    bool f64;
} tensor__avgpool_bwd_job;
#define TENSOR__AVGPOOL_BWD(T)                                                                           \
    for (int64_t pl = begin; pl < end; pl++) {                                                           \
        const T *gp = (const T *)(const void *)j->g + pl * j->oH * j->oW;                                \
        T *xp = (T *)(void *)j->gx + pl * j->H * j->W;                                                   \
        memset(xp, 0, sizeof(T) * (size_t)(j->H * j->W));                                                \
        for (int64_t oh = 0; oh < j->oH; oh++) {                                                         \
            const int64_t *hr = j->tb->ph + oh * j->KH;                                                  \
            for (int64_t ow = 0; ow < j->oW; ow++) {                                                     \
                const int64_t *wc = j->tb->pw + ow * j->KW;                                              \
                T v = (T)((double)gp[oh * j->oW + ow] * j->tb->rdiv[oh * j->oW + ow]);                   \
                for (int64_t a = 0; a < j->tb->nh[oh]; a++) {                                            \
                    T *row = xp + hr[a] * j->W;                                                          \
                    for (int64_t b = 0; b < j->tb->nw[ow]; b++) row[wc[b]] += v;                         \
                }                                                                                        \
            }                                                                                            \
        }                                                                                                \
    }
static void tensor__avgpool_bwd_planes(int64_t begin, int64_t end, void *ctx) {
    const tensor__avgpool_bwd_job *j = (const tensor__avgpool_bwd_job *)ctx;
    if (j->f64) { TENSOR__AVGPOOL_BWD(double) }
    else { TENSOR__AVGPOOL_BWD(float) }
}
#undef TENSOR__AVGPOOL_BWD
static tensor *tensor__avgpool_backward(const char *fn, tensor *x, tensor *g, const int64_t *ip) {
    int nd = x->ndim;
    tensor__win1d hw = {x->shape[nd - 2], ip[0], ip[1], ip[2], ip[3], ip[4], ip[5], ip[6] != 0};
    tensor__win1d ww = {x->shape[nd - 1], ip[7], ip[8], ip[9], ip[10], ip[11], ip[12], ip[13] != 0};
    tensor__winpool_table tb;
    if (!tensor__winpool_table_of(&hw, &ww, false, ip[14] != 0, &tb)) return tensor__fail(fn, "out of memory");
    tensor *gc = g->dtype == x->dtype && tensor__contiguous(g) ? tensor_contiguous(g) : tensor__contiguous_copy(fn, g, x->dtype);
    tensor *gx = gc ? tensor__new_like(fn, x, x->dtype) : NULL;
    if (gx) {
        tensor__avgpool_bwd_job j;
        j.g = tensor__data(gc);
        j.gx = tensor__data(gx);
        j.tb = &tb;
        j.H = hw.n; j.W = ww.n; j.oH = hw.out; j.oW = ww.out; j.KH = hw.K; j.KW = ww.K;
        j.f64 = x->dtype == TENSOR_F64;
        tensor__parallel_for(tensor__numel_of(nd - 2, x->shape), 16384 / (hw.n * ww.n + 1) + 1, tensor__avgpool_bwd_planes, &j);
    }
    TENSOR_FREE(tb.pos);
    TENSOR_FREE(tb.rdiv);
    tensor_free(gc);
    return gx;
}

/* Checks a pooling input (nd_lo or nd_hi dims, non-empty but for the batch, floating; int64 too
   where int64_ok: PyTorch's CPU avg_pool1d/2d take it, its max and adaptive pools do not). */
static bool tensor__pool_input_ok(const char *fn, const tensor *x, int nd_lo, int nd_hi, const char *shapes, bool int64_ok) {
    if (x->ndim < nd_lo || x->ndim > nd_hi) { tensor__fail(fn, "expected a %s input, got shape %s", shapes, tensor__shape_of(x)); return false; }
    for (int d = x->ndim == nd_hi ? 1 : 0; d < x->ndim; d++)
        if (x->shape[d] == 0) { tensor__fail(fn, "input of shape %s has a zero-size non-batch dim", tensor__shape_of(x)); return false; }
    if (!tensor__is_float(x->dtype) && !(int64_ok && x->dtype == TENSOR_I64)) {
        tensor__fail(fn, "expected a floating input%s, got %s", int64_ok ? " or int64" : "", tensor__dtype_names[x->dtype]);
        return false;
    }
    if (!tensor__is_float(x->dtype) && x->storage->device != TENSOR_CPU) { tensor__fail(fn, "int64 pooling runs on the CPU only"); return false; } /* as PyTorch's CUDA kernels */
    return true;
}

/* One dim of a regular pooling: checks and output size (PyTorch's pooling_output_shape). */
static bool tensor__pool_dim(const char *fn, int64_t n, int kernel, int *stride, int padding, int dilation, bool ceil_mode, tensor__win1d *w) {
    if (kernel < 1) { tensor__fail(fn, "kernel size must be positive, got %d", kernel); return false; }
    if (*stride < 0) { tensor__fail(fn, "stride must be positive (or 0 for the kernel size), got %d", *stride); return false; }
    if (*stride == 0) *stride = kernel;
    if (dilation < 1) { tensor__fail(fn, "dilation must be positive, got %d", dilation); return false; }
    if (padding < 0 || padding > kernel / 2) { tensor__fail(fn, "padding %d must be non-negative and at most half the kernel size %d", padding, kernel); return false; }
    int64_t k = kernel, s = *stride, p = padding, d = dilation;
    int64_t num = n + 2 * p - d * (k - 1) - 1 + (ceil_mode ? s - 1 : 0);
    int64_t out = (num >= 0 ? num / s : -((-num + s - 1) / s)) + 1;
    if (ceil_mode && out > 0 && (out - 1) * s >= n + p) out--;
    if (out < 1) { tensor__fail(fn, "output size is too small: input size %lld, kernel %d, padding %d, dilation %d", (long long)n, kernel, padding, dilation); return false; }
    tensor__win1d r = {n, out, k, s, p, d, k, false};
    *w = r;
    return true;
}

TENSOR_API tensor *tensor_max_pool2d_with_indices(tensor *x, int kernel, int stride, int padding, int dilation, bool ceil_mode, tensor **indices) {
    const char *fn = "tensor_max_pool2d_with_indices";
    if (indices) *indices = NULL;
    TENSOR__CHECK_ARG(fn, x);
    if (!tensor__pool_input_ok(fn, x, 3, 4, "3-D [C, H, W] or 4-D [N, C, H, W]", false)) return NULL;
    tensor__win1d hw, ww;
    int st = stride;
    if (!tensor__pool_dim(fn, x->shape[x->ndim - 2], kernel, &st, padding, dilation, ceil_mode, &hw)) return NULL;
    st = stride;
    if (!tensor__pool_dim(fn, x->shape[x->ndim - 1], kernel, &st, padding, dilation, ceil_mode, &ww)) return NULL;
    return tensor__pool_windows(fn, x, &hw, &ww, true, false, indices);
}

/* x [C, L] or [N, C, L] pooled as [..., 1, L]; the result (and *indices) squeezed back. */
static tensor *tensor__pool1d(const char *fn, tensor *x, const tensor__win1d *lw, bool is_max, bool count_include_pad, tensor **indices) {
    tensor__win1d one = {1, 1, 1, 1, 0, 1, 1, false};
    tensor *x4 = tensor_unsqueeze(x, x->ndim - 1);
    tensor *ix = NULL;
    tensor *y4 = x4 ? tensor__pool_windows(fn, x4, &one, lw, is_max, count_include_pad, indices ? &ix : NULL) : NULL;
    tensor *y = y4 ? tensor_squeeze(y4, x->ndim - 1) : NULL;
    if (indices && y) {
        *indices = tensor_squeeze(ix, x->ndim - 1);
        if (!*indices) { tensor_free(y); y = NULL; }
    }
    tensor_free(x4); tensor_free(y4); tensor_free(ix);
    return y;
}

TENSOR_API tensor *tensor_max_pool1d(tensor *x, int kernel, int stride, int padding, int dilation, bool ceil_mode, tensor **indices) {
    const char *fn = "tensor_max_pool1d";
    if (indices) *indices = NULL;
    TENSOR__CHECK_ARG(fn, x);
    if (!tensor__pool_input_ok(fn, x, 2, 3, "2-D [C, L] or 3-D [N, C, L]", false)) return NULL;
    tensor__win1d lw;
    if (!tensor__pool_dim(fn, x->shape[x->ndim - 1], kernel, &stride, padding, dilation, ceil_mode, &lw)) return NULL;
    return tensor__pool1d(fn, x, &lw, true, false, indices);
}

TENSOR_API tensor *tensor_avg_pool1d(tensor *x, int kernel, int stride, int padding, bool ceil_mode, bool count_include_pad) {
    const char *fn = "tensor_avg_pool1d";
    TENSOR__CHECK_ARG(fn, x);
    if (!tensor__pool_input_ok(fn, x, 2, 3, "2-D [C, L] or 3-D [N, C, L]", true)) return NULL;
    tensor__win1d lw;
    if (!tensor__pool_dim(fn, x->shape[x->ndim - 1], kernel, &stride, padding, 1, ceil_mode, &lw)) return NULL;
    return tensor__pool1d(fn, x, &lw, false, count_include_pad, NULL);
}

static bool tensor__adaptive_dim(const char *fn, int64_t n, int64_t out, tensor__win1d *w) {
    if (out < 1) { tensor__fail(fn, "output size must be positive, got %lld", (long long)out); return false; }
    tensor__win1d r = {n, out, 0, 0, 0, 1, tensor__adaptive_k(n, out), true};
    *w = r;
    return true;
}

TENSOR_API tensor *tensor_adaptive_avg_pool1d(tensor *x, int64_t output_size) {
    const char *fn = "tensor_adaptive_avg_pool1d";
    TENSOR__CHECK_ARG(fn, x);
    if (!tensor__pool_input_ok(fn, x, 2, 3, "2-D [C, L] or 3-D [N, C, L]", false)) return NULL;
    tensor__win1d lw;
    if (!tensor__adaptive_dim(fn, x->shape[x->ndim - 1], output_size, &lw)) return NULL;
    return tensor__pool1d(fn, x, &lw, false, false, NULL);
}

TENSOR_API tensor *tensor_adaptive_avg_pool2d(tensor *x, int64_t output_h, int64_t output_w) {
    const char *fn = "tensor_adaptive_avg_pool2d";
    TENSOR__CHECK_ARG(fn, x);
    if (!tensor__pool_input_ok(fn, x, 3, 4, "3-D [C, H, W] or 4-D [N, C, H, W]", false)) return NULL;
    tensor__win1d hw, ww;
    if (!tensor__adaptive_dim(fn, x->shape[x->ndim - 2], output_h, &hw) || !tensor__adaptive_dim(fn, x->shape[x->ndim - 1], output_w, &ww)) return NULL;
    return tensor__pool_windows(fn, x, &hw, &ww, false, false, NULL);
}

TENSOR_API tensor *tensor_adaptive_max_pool2d(tensor *x, int64_t output_h, int64_t output_w, tensor **indices) {
    const char *fn = "tensor_adaptive_max_pool2d";
    if (indices) *indices = NULL;
    TENSOR__CHECK_ARG(fn, x);
    if (!tensor__pool_input_ok(fn, x, 3, 4, "3-D [C, H, W] or 4-D [N, C, H, W]", false)) return NULL;
    tensor__win1d hw, ww;
    if (!tensor__adaptive_dim(fn, x->shape[x->ndim - 2], output_h, &hw) || !tensor__adaptive_dim(fn, x->shape[x->ndim - 1], output_w, &ww)) return NULL;
    return tensor__pool_windows(fn, x, &hw, &ww, true, false, indices);
}

/* The inverse of max pooling: x [..., h, w] placed at the flat positions indices [..., h, w] of
   zeros [..., output_h, output_w] (output_h, output_w 0: (in - 1) stride - 2 padding + kernel).
   A position named twice (overlapping windows) holds the mean of the values sent there, which is
   the value itself when they come from a max pooling (PyTorch keeps one of them). */
TENSOR_API tensor *tensor_max_unpool2d(tensor *x, tensor *indices, int kernel, int stride, int padding, int64_t output_h, int64_t output_w) {
    const char *fn = "tensor_max_unpool2d";
    TENSOR__CHECK_ARG(fn, x);
    TENSOR__CHECK_ARG(fn, indices);
    tensor *ins[2] = {x, indices};
    if (!tensor__same_device(fn, 2, ins)) return NULL;
    if (!tensor__pool_input_ok(fn, x, 3, 4, "3-D [C, H, W] or 4-D [N, C, H, W]", false)) return NULL;
    if (indices->dtype != TENSOR_I64) return tensor__fail(fn, "indices must be int64, got %s", tensor__dtype_names[indices->dtype]);
    if (!tensor__same_shape(x, indices)) return tensor__fail(fn, "indices of shape %s must have the shape of input %s", tensor__shape_of(indices), tensor__shape_of(x));
    if (kernel < 1 || stride < 0 || padding < 0) return tensor__fail(fn, "kernel %d, stride %d, padding %d: expected kernel > 0, stride >= 0 (0: kernel), padding >= 0", kernel, stride, padding);
    if (stride == 0) stride = kernel;
    int nd = x->ndim;
    int64_t h = x->shape[nd - 2], w = x->shape[nd - 1];
    if ((output_h == 0) != (output_w == 0) || output_h < 0 || output_w < 0) return tensor__fail(fn, "output size (%lld, %lld) must be both positive or both 0 (the default)", (long long)output_h, (long long)output_w);
    if (output_h == 0) {
        output_h = (h - 1) * stride - 2 * (int64_t)padding + kernel;
        output_w = (w - 1) * stride - 2 * (int64_t)padding + kernel;
        if (output_h < 1 || output_w < 1) return tensor__fail(fn, "the default output size (%lld, %lld) is not positive", (long long)output_h, (long long)output_w);
    }
    if (output_h > TENSOR__MAX_NUMEL / output_w) return tensor__fail(fn, "output size (%lld, %lld) is too large", (long long)output_h, (long long)output_w);
    tensor__tmps s = {{0}, 0};
    int64_t shape[4];
    for (int i = 0; i < nd - 2; i++) shape[i] = x->shape[i];
    shape[nd - 2] = h * w;
    tensor *xf = tensor__tmp(&s, tensor_reshape(x, nd - 1, shape));
    tensor *jf = tensor__tmp(&s, tensor_reshape(indices, nd - 1, shape));
    shape[nd - 2] = output_h * output_w;
    tensor *z = tensor__tmp(&s, tensor_zeros(nd - 1, shape, x->dtype));
    if (z && x->storage->device != TENSOR_CPU) z = tensor__tmp(&s, tensor_to_device(z, x->storage->device));
    tensor *sum = tensor__tmp(&s, tensor_scatter_add(z, nd - 2, jf, xf));
    tensor *cnt = NULL;
    if (sum) { /* positions named more than once, outside the graph */
        bool was = tensor_set_grad_enabled(false);
        tensor *ones = tensor__tmp(&s, tensor_ones_like(xf));
        cnt = tensor__tmp(&s, tensor_clamp(tensor__tmp(&s, tensor_scatter_add(z, nd - 2, jf, ones)), 1, NAN));
        tensor_set_grad_enabled(was);
    }
    tensor *y = tensor__tmp(&s, tensor_div(sum, cnt));
    shape[nd - 2] = output_h;
    shape[nd - 1] = output_w;
    y = tensor__tmps_take(&s, tensor__tmp(&s, tensor_reshape(y, nd, shape)));
    tensor__tmps_free(&s);
    return y;
}
