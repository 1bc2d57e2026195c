// >>resample -------------------------------------------------------------------------------------
/* pixel_shuffle, pixel_unshuffle, interpolate, im2col (F.unfold), col2im (F.fold) and the
   transposed convolutions (a matmul, then col2im, as PyTorch's slow_conv_transpose): composites
   of reshape, permute, index_select, scatter_add and matmul, so autograd and every device come
   from those ops. */

/* ---- pixel_shuffle, pixel_unshuffle ---- */

/* x [*, C r^2, H, W] -> [*, C, H r, W r] (shuffle) or x [*, C, H r, W r] -> [*, C r^2, H, W]. */
static tensor *tensor__pixel_shuffle(const char *fn, tensor *x, int64_t r, bool up) {
    TENSOR__CHECK_ARG(fn, x);
    if (x->ndim < 3) return tensor__fail(fn, "expected an input of at least 3 dims [*, C, H, W], got shape %s", tensor__shape_of(x));
    if (r < 1) return tensor__fail(fn, "the %s factor must be positive, got %lld", up ? "upscale" : "downscale", (long long)r);
    int nd = x->ndim;
    int64_t C = x->shape[nd - 3], H = x->shape[nd - 2], W = x->shape[nd - 1];
    int64_t B = tensor__numel_of(nd - 3, x->shape);
    if (up && C % (r * r)) return tensor__fail(fn, "the channel count %lld of input %s must be divisible by the square of the upscale factor %lld", (long long)C, tensor__shape_of(x), (long long)r);
    if (!up && (H % r || W % r)) return tensor__fail(fn, "the height %lld and width %lld of input %s must be divisible by the downscale factor %lld", (long long)H, (long long)W, tensor__shape_of(x), (long long)r);
    tensor__tmps s = {{0}, 0};
    int64_t shape[TENSOR_MAX_DIMS];
    tensor *v, *p;
    if (up) {
        int64_t c = C / (r * r), s6[6] = {B, c, r, r, H, W};
        int perm[6] = {0, 1, 4, 2, 5, 3};
        v = tensor__tmp(&s, tensor_reshape(x, 6, s6));
        p = tensor__tmp(&s, tensor_permute(v, 6, perm));
        for (int i = 0; i < nd - 3; i++) shape[i] = x->shape[i];
        shape[nd - 3] = c; shape[nd - 2] = H * r; shape[nd - 1] = W * r;
    } else {
        int64_t s6[6] = {B, C, H / r, r, W / r, r};
        int perm[6] = {0, 1, 3, 5, 2, 4};
        v = tensor__tmp(&s, tensor_reshape(x, 6, s6));
        p = tensor__tmp(&s, tensor_permute(v, 6, perm));
        for (int i = 0; i < nd - 3; i++) shape[i] = x->shape[i];
        shape[nd - 3] = C * r * r; shape[nd - 2] = H / r; shape[nd - 1] = W / r;
    }
    tensor *y = p ? tensor_reshape(p, nd, shape) : NULL;
    tensor__tmps_free(&s);
    return y;
}
TENSOR_API tensor *tensor_pixel_shuffle(tensor *x, int64_t upscale_factor) { return tensor__pixel_shuffle("tensor_pixel_shuffle", x, upscale_factor, true); }
TENSOR_API tensor *tensor_pixel_unshuffle(tensor *x, int64_t downscale_factor) { return tensor__pixel_shuffle("tensor_pixel_unshuffle", x, downscale_factor, false); }

/* ---- interpolate ---- */

/* One output position's taps along a dim: up to 4 input indices and weights. */
typedef struct { int64_t i[4]; double w[4]; } tensor__taps;

static double tensor__cubic1(double x, double A) { return ((A + 2) * x - (A + 3)) * x * x + 1; }
static double tensor__cubic2(double x, double A) { return ((A * x - 5 * A) * x + 8 * A) * x - 4 * A; }

/* The taps of output index o along a dim of n inputs, out outputs (PyTorch's upsample kernels:
   nearest_idx, area_pixel_compute_source_index, guard_index_and_lambda; the coordinate math is
   done in f32 for non-f64 inputs, as theirs). mode: 0 nearest, 1 nearest-exact, 2 linear,
   3 cubic. scale: the user's scale factor, or 0. */
static int tensor__interp_taps(int mode, int64_t n, int64_t out, double scale, bool align, bool f64, int64_t o, tensor__taps *t) {
    if (mode <= 1) {
        int64_t src;
        if (mode == 0 && out == n) src = o;
        else if (mode == 0 && out == 2 * n) src = o >> 1;
        else if (f64) {
            double sc = scale > 0 ? 1.0 / scale : (double)n / (double)out;
            src = (int64_t)floor(mode ? ((double)o + 0.5) * sc : (double)o * sc);
        } else {
            float sc = scale > 0 ? (float)(1.0 / scale) : (float)n / (float)out;
            src = (int64_t)floorf(mode ? ((float)o + 0.5f) * sc : (float)o * sc);
        }
        t->i[0] = src < n - 1 ? src : n - 1;
        t->w[0] = 1;
        return 1;
    }
    double real, lambda;
    int64_t i0;
    if (f64) {
        double sc = align ? (out > 1 ? (double)(n - 1) / (double)(out - 1) : 0) : (scale > 0 ? 1.0 / scale : (double)n / (double)out);
        real = align ? sc * (double)o : sc * ((double)o + 0.5) - 0.5;
        if (mode == 2 && real < 0) real = 0;
        i0 = (int64_t)floor(real);
    } else {
        float sc = align ? (out > 1 ? (float)(n - 1) / (float)(out - 1) : 0) : (scale > 0 ? (float)(1.0 / scale) : (float)n / (float)out);
        float rf = align ? sc * (float)o : sc * ((float)o + 0.5f) - 0.5f;
        if (mode == 2 && rf < 0) rf = 0;
        real = rf;
        i0 = (int64_t)floorf(rf);
    }
    if (i0 > n - 1) i0 = n - 1;
    lambda = real - (double)i0;
    lambda = lambda < 0 ? 0 : lambda > 1 ? 1 : lambda;
    if (!f64) lambda = (float)lambda;
    if (mode == 2) {
        t->i[0] = i0;
        t->i[1] = i0 + (i0 < n - 1 ? 1 : 0);
        t->w[0] = 1 - lambda;
        t->w[1] = lambda;
        return 2;
    }
    const double A = -0.75;
    t->w[0] = tensor__cubic2(lambda + 1, A);
    t->w[1] = tensor__cubic1(lambda, A);
    t->w[2] = tensor__cubic1(1 - lambda, A);
    t->w[3] = tensor__cubic2(2 - lambda, A);
    for (int j = 0; j < 4; j++) {
        int64_t k = i0 - 1 + j;
        t->i[j] = k < 0 ? 0 : k > n - 1 ? n - 1 : k;
    }
    return 4;
}

/* x resampled along dim d to out entries: sum over the taps of index_select(x, d, idx_j) * w_j,
   w_j [out, 1, ...] broadcast over the dims after d. A temporary of ts. */
static tensor *tensor__interp_dim(const char *fn, tensor__tmps *ts, tensor *x, int d, int64_t out, int mode, double scale, bool align) {
    if (!x) return NULL;
    tensor__tmps st = {{0}, 0}, *s = &st;
    int64_t n = x->shape[d];
    bool f64 = x->dtype == TENSOR_F64;
    int64_t *idx = (int64_t *)TENSOR__MALLOC(sizeof(int64_t) * (size_t)(4 * out));
    double *w = (double *)TENSOR__MALLOC(sizeof(double) * (size_t)(4 * out));
    if (!idx || !w) { TENSOR_FREE(idx); TENSOR_FREE(w); tensor__fail(fn, "out of memory"); return NULL; }
    int taps = 1;
    for (int64_t o = 0; o < out; o++) {
        tensor__taps t;
        taps = tensor__interp_taps(mode, n, out, scale, align, f64, o, &t);
        for (int j = 0; j < taps; j++) { idx[j * out + o] = t.i[j]; w[j * out + o] = t.w[j]; }
    }
    int64_t ws[TENSOR_MAX_DIMS];
    ws[0] = out;
    for (int i = d + 1; i < x->ndim; i++) ws[i - d] = 1;
    tensor *y = NULL;
    for (int j = 0; j < taps; j++) {
        tensor *g = tensor__tmp(s, tensor_index_select(x, d, tensor__index_on(s, idx + j * out, out, x)));
        if (taps > 1) {
            int64_t ls[1] = {out};
            tensor *wt = tensor__tmp(s, tensor_from_data(w + j * out, 1, ls, TENSOR_F64));
            wt = tensor__tmp(s, tensor_reshape(tensor__tmp(s, tensor_to_dtype(wt, x->dtype)), x->ndim - d, ws));
            if (wt && x->storage->device != TENSOR_CPU) wt = tensor__tmp(s, tensor_to_device(wt, x->storage->device));
            g = tensor__tmp(s, tensor_mul(g, wt));
        }
        y = j == 0 ? g : tensor__tmp(s, tensor_add(y, g));
    }
    TENSOR_FREE(idx);
    TENSOR_FREE(w);
    y = tensor__tmps_take(s, y);
    tensor__tmps_free(s);
    return tensor__tmp(ts, y);
}

/* The fast path of interpolate over 1 or 2 spatial dims (nearest, nearest-exact, linear,
   bilinear, bicubic; >>norm's tensor__layer_fast): the taps of each
   output row and column (tensor__interp_taps, as the composite), then per plane and output row the
   row mix sum_a x[h_a] wh_a (the composite's first dim), then each output element sum_b r[w_b] wb
   (its second), in x's dtype and the composite's order. Planes split over the threads. */
typedef struct {
    const char *x;
    char *y;
    const tensor__taps *th, *tw;
    int nh, nw; /* taps per output row, per output column */
    int64_t H, W, oH, oW;
    bool f64;
    int failed;
} tensor__interp_job;

#define TENSOR__INTERP_PLANES(T)                                                                         \
    {                                                                                                    \
        T *row = (T *)TENSOR__MALLOC(sizeof(T) * (size_t)(j->W + 1));                                     \
        if (!row) { TENSOR__ATOMIC_SET(&j->failed, 1); return; }                                         \
        for (int64_t pl = begin; pl < end; pl++) {                                                       \
            const T *xp = (const T *)(const void *)j->x + pl * j->H * j->W;                              \
            T *yp = (T *)(void *)j->y + pl * j->oH * j->oW;                                              \
            for (int64_t oh = 0; oh < j->oH; oh++) {                                                     \
                const tensor__taps *a = &j->th[oh];                                                      \
                const T *src = xp + a->i[0] * j->W;                                                      \
                if (j->nh > 1) {                                                                         \
                    T w0 = (T)a->w[0];                                                                   \
                    for (int64_t i = 0; i < j->W; i++) row[i] = src[i] * w0;                             \
                    for (int k = 1; k < j->nh; k++) {                                                    \
                        const T *s2 = xp + a->i[k] * j->W;                                               \
                        T wk = (T)a->w[k];                                                               \
                        for (int64_t i = 0; i < j->W; i++) row[i] = row[i] + s2[i] * wk;                 \
                    }                                                                                    \
                    src = row;                                                                           \
                }                                                                                        \
                T *yr = yp + oh * j->oW;                                                                 \
                if (j->nw == 1) {                                                                        \
                    for (int64_t o = 0; o < j->oW; o++) yr[o] = src[j->tw[o].i[0]];                      \
                } else if (j->nw == 2) {                                                                 \
                    for (int64_t o = 0; o < j->oW; o++) {                                                \
                        const tensor__taps *b = &j->tw[o];                                               \
                        yr[o] = src[b->i[0]] * (T)b->w[0] + src[b->i[1]] * (T)b->w[1];                  \
                    }                                                                                    \
                } else {                                                                                 \
                    for (int64_t o = 0; o < j->oW; o++) {                                                \
                        const tensor__taps *b = &j->tw[o];                                               \
                        T acc = src[b->i[0]] * (T)b->w[0];                                               \
                        for (int k = 1; k < j->nw; k++) acc = acc + src[b->i[k]] * (T)b->w[k];           \
                        yr[o] = acc;                                                                     \
                    }                                                                                    \
                }                                                                                        \
            }                                                                                            \
        }                                                                                                \
        TENSOR_FREE(row);                                                                                \
    }
static void tensor__interp_planes(int64_t begin, int64_t end, void *ctx) {
    tensor__interp_job *j = (tensor__interp_job *)ctx;
    if (j->f64) TENSOR__INTERP_PLANES(double)
    else TENSOR__INTERP_PLANES(float)
}
#undef TENSOR__INTERP_PLANES

/* The taps of an interpolation of x [N, C, (H,) W] to out (sd entries), output rows first then
   columns (one row of weight 1 for sd 1); *nh, *nw the taps per row and column. NULL: no memory. */
static tensor__taps *tensor__interp_table(const tensor *x, int sd, const int64_t *out, int mode, const double *sc, bool align, int *nh, int *nw) {
    int nd = x->ndim;
    int64_t H = sd == 2 ? x->shape[nd - 2] : 1, W = x->shape[nd - 1], oH = sd == 2 ? out[0] : 1, oW = out[sd - 1];
    bool f64 = x->dtype == TENSOR_F64;
    tensor__taps *taps = (tensor__taps *)TENSOR__MALLOC(sizeof(tensor__taps) * (size_t)(oH + oW));
    if (!taps) return NULL;
    *nh = *nw = 1;
    for (int64_t o = 0; o < oH; o++) {
        if (sd == 2) *nh = tensor__interp_taps(mode, H, oH, sc[0], align, f64, o, &taps[o]);
        else { taps[o].i[0] = 0; taps[o].w[0] = 1; }
    }
    for (int64_t o = 0; o < oW; o++) *nw = tensor__interp_taps(mode, W, oW, sc[sd - 1], align, f64, o, &taps[oH + o]);
    return taps;
}

/* The interpolation of x [N, C, (H,) W] to out (sd entries) by the plane kernel, or NULL with
   *taken false where it does not apply. Under autograd: a node of interpolate (its derivative
   tensor__interp_backward). */
static tensor *tensor__interp_fast(const char *fn, tensor *x, int sd, const int64_t *out, int mode, const double *sc, bool align, bool *taken) {
    *taken = false;
    if (sd > 2 || mode > 3 || !tensor__layer_fast(x, false)) return NULL;
    int nd = x->ndim;
    int64_t H = sd == 2 ? x->shape[nd - 2] : 1, W = x->shape[nd - 1], oH = sd == 2 ? out[0] : 1, oW = out[sd - 1];
    int64_t planes = x->shape[0] * x->shape[1];
    if (oH > TENSOR__MAX_NUMEL / oW) return NULL;
    int nh, nw;
    tensor__taps *taps = tensor__interp_table(x, sd, out, mode, sc, align, &nh, &nw);
    *taken = true; /* out of memory too: the composite would round otherwise, a silent change */
    if (!taps) return tensor__fail(fn, "out of memory");
    int64_t shape[4];
    for (int i = 0; i < nd; i++) shape[i] = x->shape[i];
    for (int i = 0; i < sd; i++) shape[2 + i] = out[i];
    tensor *xc = tensor_contiguous(x);
    tensor *y = xc ? tensor__new(fn, nd, shape, x->dtype, TENSOR_CPU) : NULL;
    if (y && planes > 0) {
        tensor__interp_job j;
        j.x = tensor__data(xc);
        j.y = tensor__data(y);
        j.th = taps;
        j.tw = taps + oH;
        j.nh = nh; j.nw = nw;
        j.H = H; j.W = W; j.oH = oH; j.oW = oW;
        j.f64 = x->dtype == TENSOR_F64;
        j.failed = 0;
        tensor__parallel_for(planes, 16384 / (oH * oW) + 1, tensor__interp_planes, &j);
        TENSOR__PATH_TAKEN(layer_interpolate);
        if (j.failed) { tensor__fail(fn, "out of memory"); tensor_free(y); y = NULL; }
    }
    TENSOR_FREE(taps);
    tensor_free(xc);
    if (!y || !tensor__grad_on() || !x->requires_grad) return y;
    int64_t ip[5] = {sd, mode, align, out[0], sd == 2 ? out[1] : 0};
    double p[2] = {sc[0], sd == 2 ? sc[1] : 0};
    return tensor__layer_record(TENSOR_OP_interpolate, y, 1, &x, ip, 5, p, 2, NULL);
}

/* interpolate's backward (the adjoint of the plane kernel): per plane, each output element's
   gradient g[oh][ow] sent to its taps, gx[h_a][w_b] += wh_a wb_b g, in x's dtype. */
typedef struct {
    const char *g;
    char *gx;
    const tensor__taps *th, *tw;
    int nh, nw;
    int64_t H, W, oH, oW;
    bool f64;
} tensor__interp_bwd_job;
#define TENSOR__INTERP_BWD_PLANES(T)                                                                     \
    for (int64_t pl = begin; pl < end; pl++) {                                                           \
        const T *gp = (const T *)(const void *)j->g + pl * j->oH * j->oW;                                \
        T *xp = (T *)(void *)j->gx + pl * j->H * j->W;                                                   \
        memset(xp, 0, sizeof(T) * (size_t)(j->H * j->W));                                                \
        for (int64_t oh = 0; oh < j->oH; oh++) {                                                         \
            const tensor__taps *a = &j->th[oh];                                                          \
            const T *gr = gp + oh * j->oW;                                                               \
            for (int k = 0; k < j->nh; k++) {                                                            \
                T *row = xp + a->i[k] * j->W, wa = (T)a->w[k];                                           \
                for (int64_t o = 0; o < j->oW; o++) {                                                    \
                    const tensor__taps *b = &j->tw[o];                                                   \
                    T v = gr[o] * wa;                                                                    \
                    for (int q = 0; q < j->nw; q++) row[b->i[q]] += v * (T)b->w[q];                      \
                }                                                                                        \
            }                                                                                            \
        }                                                                                                \
    }
static void tensor__interp_bwd_planes(int64_t begin, int64_t end, void *ctx) {
    const tensor__interp_bwd_job *j = (const tensor__interp_bwd_job *)ctx;
    if (j->f64) { TENSOR__INTERP_BWD_PLANES(double) }
    else { TENSOR__INTERP_BWD_PLANES(float) }
}
#undef TENSOR__INTERP_BWD_PLANES

/* gx for the node of tensor__interp_fast (ip = {sd, mode, align, out...}, p the scales): a new
   contiguous tensor of x's shape and dtype; g any layout and floating dtype. */
static tensor *tensor__interp_backward(const char *fn, tensor *x, tensor *g, const int64_t *ip, const double *p) {
    int sd = (int)ip[0], nd = x->ndim, nh, nw;
    int64_t out[2] = {ip[3], ip[4]};
    tensor__taps *taps = tensor__interp_table(x, sd, out, (int)ip[1], p, ip[2] != 0, &nh, &nw);
    if (!taps) return tensor__fail(fn, "out of memory");
    tensor *gc = g->dtype == x->dtype && tensor__contiguous(g) ? tensor_contiguous(g) : tensor__contiguous_copy(fn, g, x->dtype);
    tensor *gx = gc ? tensor__new_like(fn, x, x->dtype) : NULL;
    if (gx) {
        tensor__interp_bwd_job j;
        j.g = tensor__data(gc);
        j.gx = tensor__data(gx);
        j.th = taps;
        j.nh = nh; j.nw = nw;
        j.H = sd == 2 ? x->shape[nd - 2] : 1; j.W = x->shape[nd - 1];
        j.oH = sd == 2 ? out[0] : 1; j.oW = out[sd - 1];
        j.tw = taps + j.oH;
        j.f64 = x->dtype == TENSOR_F64;
        tensor__parallel_for(x->shape[0] * x->shape[1], 16384 / (j.oH * j.oW) + 1, tensor__interp_bwd_planes, &j);
    }
    TENSOR_FREE(taps);
    tensor_free(gc);
    return gx;
}

/* x [N, C, d1 (, d2 (, d3))] resized over its spatial dims (F.interpolate). size or scale_factor
   (exactly one of them, n entries: 1 for every spatial dim, or one each); mode "nearest",
   "nearest-exact", "linear" (3-D), "bilinear" (4-D), "bicubic" (4-D), "trilinear" (5-D), "area"
   (adaptive average pooling, 3-D and 4-D); align_corners for the linear and cubic modes only. */
TENSOR_API tensor *tensor_interpolate(tensor *x, int n, const int64_t *size, const double *scale_factor, const char *mode, bool align_corners) {
    const char *fn = "tensor_interpolate";
    TENSOR__CHECK_ARG(fn, x);
    if (!mode) return tensor__fail(fn, "mode is NULL");
    if (x->ndim < 3 || x->ndim > 5) return tensor__fail(fn, "expected a 3-D, 4-D or 5-D input [N, C, ...], got shape %s", tensor__shape_of(x));
    int sd = x->ndim - 2, m;
    if (!strcmp(mode, "nearest")) m = 0;
    else if (!strcmp(mode, "nearest-exact")) m = 1;
    else if (!strcmp(mode, "linear") || !strcmp(mode, "bilinear") || !strcmp(mode, "trilinear")) m = 2;
    else if (!strcmp(mode, "bicubic")) m = 3;
    else if (!strcmp(mode, "area")) m = 4;
    else return tensor__fail(fn, "unknown mode '%s' (nearest, nearest-exact, linear, bilinear, bicubic, trilinear, area)", mode);
    int need = !strcmp(mode, "linear") ? 1 : !strcmp(mode, "bilinear") || m == 3 ? 2 : !strcmp(mode, "trilinear") ? 3 : m == 4 && sd == 3 ? -1 : 0;
    if (need < 0) return tensor__fail(fn, "mode 'area' takes a 3-D or 4-D input, got shape %s", tensor__shape_of(x));
    if (need && need != sd) return tensor__fail(fn, "mode '%s' expects a %d-D input, got shape %s", mode, need + 2, tensor__shape_of(x));
    if (align_corners && (m <= 1 || m == 4)) return tensor__fail(fn, "align_corners can only be set with the interpolating modes (linear, bilinear, bicubic, trilinear), not '%s'", mode);
    if ((size == NULL) == (scale_factor == NULL)) return tensor__fail(fn, "exactly one of size and scale_factor must be given");
    if (n != 1 && n != sd) return tensor__fail(fn, "%s has %d entries, expected 1 or %d (the spatial dims of input %s)", size ? "size" : "scale_factor", n, sd, tensor__shape_of(x));
    if (m >= 2 && !tensor__is_float(x->dtype)) return tensor__fail(fn, "mode '%s' expects a floating input, got %s", mode, tensor__dtype_names[x->dtype]);
    if (m <= 1 && x->dtype == TENSOR_BOOL) return tensor__fail(fn, "expected a numeric input, got bool");
    int64_t out[3];
    double sc[3];
    for (int i = 0; i < sd; i++) {
        int64_t in = x->shape[2 + i];
        if (in == 0 || x->shape[1] == 0) return tensor__fail(fn, "input of shape %s has a zero-size non-batch dim", tensor__shape_of(x));
        if (size) {
            out[i] = size[n == 1 ? 0 : i];
            sc[i] = 0;
            if (out[i] < 1) return tensor__fail(fn, "output size %lld must be positive", (long long)out[i]);
        } else {
            sc[i] = scale_factor[n == 1 ? 0 : i];
            if (!(sc[i] > 0) || !isfinite(sc[i])) return tensor__fail(fn, "scale_factor %g must be positive and finite", sc[i]);
            double o = floor((double)in * sc[i]);
            if (o < 1 || o > (double)TENSOR__MAX_NUMEL) return tensor__fail(fn, "input size %lld times scale_factor %g gives output size %g", (long long)in, sc[i], o);
            out[i] = (int64_t)o;
        }
        if (m == 4) sc[i] = 0;
    }
    if (m == 4) return sd == 1 ? tensor_adaptive_avg_pool1d(x, out[0]) : tensor_adaptive_avg_pool2d(x, out[0], out[1]);
    bool taken;
    tensor *fast = tensor__interp_fast(fn, x, sd, out, m, sc, align_corners, &taken);
    if (taken) return fast;
    tensor__tmps s = {{0}, 0};
    tensor *y = x;
    for (int i = 0; i < sd; i++) y = tensor__interp_dim(fn, &s, y, 2 + i, out[i], m, sc[i], align_corners);
    if (y == x) y = tensor_clone(x);
    else y = tensor__tmps_take(&s, y);
    tensor__tmps_free(&s);
    return y;
}

/* ---- im2col (F.unfold), col2im (F.fold) ---- */

/* The geometry of a sliding window over a padded H x W plane: kh x kw taps, dilation, stride,
   padding; bh x bw blocks. */
typedef struct { int64_t H, W, kh, kw, dh, dw, ph, pw, sh, sw, bh, bw; } tensor__fold_geom;

/* idx[(i kw + j) L + l] = the flat position in the padded plane (W + 2 pw wide) of tap (i, j) of
   block l (L = bh bw), an i64 tensor on like's device (a temporary of s). */
static tensor *tensor__fold_index(const char *fn, tensor__tmps *s, const tensor__fold_geom *g, const tensor *like) {
    int64_t L = g->bh * g->bw, K = g->kh * g->kw, Wp = g->W + 2 * g->pw;
    if (L > 0 && K > TENSOR__MAX_NUMEL / L) { tensor__fail(fn, "the column buffer of %lld x %lld entries is too large", (long long)K, (long long)L); return NULL; }
    int64_t *idx = (int64_t *)TENSOR__MALLOC(sizeof(int64_t) * (size_t)(K * L + 1));
    if (!idx) { tensor__fail(fn, "out of memory"); return NULL; }
    for (int64_t i = 0; i < g->kh; i++)
        for (int64_t j = 0; j < g->kw; j++)
            for (int64_t bi = 0; bi < g->bh; bi++)
                for (int64_t bj = 0; bj < g->bw; bj++)
                    idx[(i * g->kw + j) * L + bi * g->bw + bj] = (bi * g->sh + i * g->dh) * Wp + bj * g->sw + j * g->dw;
    tensor *t = tensor__index_on(s, idx, K * L, like);
    TENSOR_FREE(idx);
    return t;
}

/* x [N, C, H, W] -> [N, C kh kw, L]. */
static tensor *tensor__im2col(const char *fn, tensor *x, const tensor__fold_geom *g) {
    tensor__tmps s = {{0}, 0};
    int64_t N = x->shape[0], C = x->shape[1], Hp = g->H + 2 * g->ph, Wp = g->W + 2 * g->pw;
    int64_t o3[3] = {N, C * g->kh * g->kw, g->bh * g->bw};
    if (N * C == 0) { tensor__tmps_free(&s); return tensor_reshape(x, 3, o3); } /* no planes: no index table as long as the plane */
    int64_t pads[4] = {g->pw, g->pw, g->ph, g->ph};
    tensor *xp = g->ph || g->pw ? tensor__tmp(&s, tensor_pad(x, 4, pads, 0)) : x;
    int64_t f3[3] = {N, C, Hp * Wp};
    tensor *flat = tensor__tmp(&s, tensor_reshape(xp, 3, f3));
    tensor *cols = tensor__tmp(&s, tensor_index_select(flat, 2, tensor__fold_index(fn, &s, g, x)));
    tensor *y = cols ? tensor_reshape(cols, 3, o3) : NULL;
    tensor__tmps_free(&s);
    return y;
}

/* cols [N, C kh kw, L] -> [N, C, H, W]: each column entry added at its position (the adjoint of
   im2col). */
static tensor *tensor__col2im(const char *fn, tensor *cols, const tensor__fold_geom *g) {
    tensor__tmps s = {{0}, 0};
    int64_t N = cols->shape[0], K = g->kh * g->kw, C = cols->shape[1] / K, L = g->bh * g->bw;
    int64_t Hp = g->H + 2 * g->ph, Wp = g->W + 2 * g->pw;
    if (N * C == 0) { /* no planes: no index table as long as the plane */
        int64_t o4[4] = {N, C, g->H, g->W};
        return tensor_reshape(cols, 4, o4);
    }
    int64_t c3[3] = {N, C, K * L}, z3[3] = {N, C, Hp * Wp}, i3[3] = {1, 1, K * L};
    tensor *src = tensor__tmp(&s, tensor_reshape(cols, 3, c3));
    tensor *z = tensor__tmp(&s, tensor_zeros(3, z3, cols->dtype));
    if (z && cols->storage->device != TENSOR_CPU) z = tensor__tmp(&s, tensor_to_device(z, cols->storage->device));
    tensor *idx = tensor__tmp(&s, tensor_expand(tensor__tmp(&s, tensor_reshape(tensor__fold_index(fn, &s, g, cols), 3, i3)), 3, c3));
    tensor *sum = tensor__tmp(&s, tensor_scatter_add(z, 2, idx, src));
    int64_t p4[4] = {N, C, Hp, Wp};
    tensor *y = tensor__tmp(&s, tensor_reshape(sum, 4, p4));
    if (g->ph || g->pw) {
        int64_t crop[4] = {-g->pw, -g->pw, -g->ph, -g->ph};
        y = tensor__tmp(&s, tensor_pad(y, 4, crop, 0));
    }
    y = tensor__tmps_take(&s, y);
    tensor__tmps_free(&s);
    return y;
}

/* The blocks of a window over n (padded by p): (n + 2p - d (k - 1) - 1) / s + 1, or < 1. */
static int64_t tensor__fold_blocks(int64_t n, int64_t k, int64_t d, int64_t p, int64_t s) {
    int64_t num = n + 2 * p - d * (k - 1) - 1;
    return num < 0 ? 0 : num / s + 1;
}

static bool tensor__fold_params(const char *fn, int kernel, int dilation, int padding, int stride) {
    if (kernel < 1 || dilation < 1 || stride < 1 || padding < 0) {
        tensor__fail(fn, "kernel %d, dilation %d, stride %d must be positive and padding %d non-negative", kernel, dilation, stride, padding);
        return false;
    }
    return true;
}

TENSOR_API tensor *tensor_im2col(tensor *x, int kernel, int dilation, int padding, int stride) {
    const char *fn = "tensor_im2col";
    TENSOR__CHECK_ARG(fn, x);
    if (x->ndim != 3 && x->ndim != 4) return tensor__fail(fn, "expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got shape %s", tensor__shape_of(x));
    if (!tensor__fold_params(fn, kernel, dilation, padding, stride)) return NULL;
    for (int d = x->ndim - 3; d < x->ndim; d++)
        if (x->shape[d] == 0) return tensor__fail(fn, "input of shape %s has a zero-size non-batch dim", tensor__shape_of(x));
    int64_t H = x->shape[x->ndim - 2], W = x->shape[x->ndim - 1];
    tensor__fold_geom g = {H, W, kernel, kernel, dilation, dilation, padding, padding, stride, stride,
                           tensor__fold_blocks(H, kernel, dilation, padding, stride), tensor__fold_blocks(W, kernel, dilation, padding, stride)};
    if (g.bh < 1 || g.bw < 1) return tensor__fail(fn, "no sliding block fits input %s with kernel %d, dilation %d, padding %d", tensor__shape_of(x), kernel, dilation, padding);
    if (x->ndim == 4) return tensor__im2col(fn, x, &g);
    tensor *x4 = tensor_unsqueeze(x, 0);
    tensor *y4 = x4 ? tensor__im2col(fn, x4, &g) : NULL;
    tensor *y = y4 ? tensor_squeeze(y4, 0) : NULL;
    tensor_free(x4); tensor_free(y4);
    return y;
}

TENSOR_API tensor *tensor_col2im(tensor *cols, int64_t output_h, int64_t output_w, int kernel, int dilation, int padding, int stride) {
    const char *fn = "tensor_col2im";
    TENSOR__CHECK_ARG(fn, cols);
    if (cols->ndim != 2 && cols->ndim != 3) return tensor__fail(fn, "expected a 2-D [C k^2, L] or 3-D [N, C k^2, L] input, got shape %s", tensor__shape_of(cols));
    if (!tensor__fold_params(fn, kernel, dilation, padding, stride)) return NULL;
    if (output_h < 1 || output_w < 1) return tensor__fail(fn, "output size (%lld, %lld) must be positive", (long long)output_h, (long long)output_w);
    int nd = cols->ndim;
    int64_t K = (int64_t)kernel * kernel, CK = cols->shape[nd - 2], L = cols->shape[nd - 1];
    if (CK == 0 || CK % K) return tensor__fail(fn, "dim %d of input %s must be a positive multiple of kernel^2 = %lld", nd - 2, tensor__shape_of(cols), (long long)K);
    tensor__fold_geom g = {output_h, output_w, kernel, kernel, dilation, dilation, padding, padding, stride, stride,
                           tensor__fold_blocks(output_h, kernel, dilation, padding, stride), tensor__fold_blocks(output_w, kernel, dilation, padding, stride)};
    if (g.bh < 1 || g.bw < 1 || g.bh * g.bw != L)
        return tensor__fail(fn, "input %s has %lld blocks, output size (%lld, %lld) with kernel %d, dilation %d, padding %d, stride %d makes %lld", tensor__shape_of(cols),
                            (long long)L, (long long)output_h, (long long)output_w, kernel, dilation, padding, stride, (long long)(g.bh * g.bw));
    if (nd == 3) return tensor__col2im(fn, cols, &g);
    tensor *c3 = tensor_unsqueeze(cols, 0);
    tensor *y4 = c3 ? tensor__col2im(fn, c3, &g) : NULL;
    tensor *y = y4 ? tensor_squeeze(y4, 0) : NULL;
    tensor_free(c3); tensor_free(y4);
    return y;
}

/* ---- conv_transpose1d, conv_transpose2d ---- */

/* The fast path of conv_transpose2d (>>norm's tensor__layer_fast): the transposed convolution is
   the input gradient of the convolution with the same weight, so the conv2d backward's GEMM +
   col2im kernel (>>conv, tensor__conv_backward) computes it from x in place of that gradient; the
   bias is added per plane. Under autograd: a node of conv_transpose2d (its derivative in
   >>autograd: conv2d and conv2d's weight gradient). NULL with *taken false where it does not
   apply. */
static tensor *tensor__conv_transpose_fast(const char *fn, tensor *x, tensor *w, tensor *bias, int groups, const tensor__fold_geom *gm, bool *taken) {
    *taken = false;
    if (!tensor__layer_fast(x, false) || tensor__layer_param_blocks(w, x) || tensor__layer_param_blocks(bias, x)) return NULL;
    if (gm->sh != gm->sw || gm->ph != gm->pw || gm->dh != gm->dw) return NULL;
    bool graph = tensor__grad_on() && (x->requires_grad || w->requires_grad || (bias && bias->requires_grad));
    int64_t oph = gm->H - ((gm->bh - 1) * gm->sh - 2 * gm->ph + gm->dh * (gm->kh - 1) + 1), opw = gm->W - ((gm->bw - 1) * gm->sw - 2 * gm->pw + gm->dw * (gm->kw - 1) + 1);
    if (graph && (oph >= gm->sh || opw >= gm->sw)) return NULL; /* conv2d(g, w) would be larger than x: the composite */
    *taken = true;
    int64_t N = x->shape[0], Co = w->shape[1] * groups, plane = gm->H * gm->W;
    int64_t shape[4] = {N, Co, gm->H, gm->W}, zero[4] = {0, 0, 0, 0};
    int64_t ip[4] = {gm->sw, gm->pw, gm->dw, groups};
    tensor *like = tensor__view_of(fn, x, 4, shape, zero, x->offset); /* the convolution's input: its shape only */
    tensor *y = NULL;
    if (!like || tensor__conv_backward(fn, 2, like, w, x, ip, &y, NULL, NULL)) { tensor_free(like); return NULL; }
    tensor_free(like);
    TENSOR__PATH_TAKEN(layer_conv_transpose);
    if (bias && N * plane > 0) {
        tensor *bc = tensor_contiguous(bias);
        if (!bc) { tensor_free(y); return NULL; }
        for (int64_t n = 0; n < N; n++)
            for (int64_t c = 0; c < Co; c++) {
                if (x->dtype == TENSOR_F64) {
                    double *p = (double *)(void *)tensor__data(y) + (n * Co + c) * plane, v = ((const double *)(const void *)tensor__data(bc))[c];
                    for (int64_t i = 0; i < plane; i++) p[i] += v;
                } else {
                    float *p = (float *)(void *)tensor__data(y) + (n * Co + c) * plane, v = ((const float *)(const void *)tensor__data(bc))[c];
                    for (int64_t i = 0; i < plane; i++) p[i] += v;
                }
            }
        tensor_free(bc);
    }
    if (!graph) return y;
    tensor *in[3] = {x, w, bias};
    return tensor__layer_record(TENSOR_OP_conv_transpose2d, y, 3, in, ip, 4, NULL, 0, NULL);
}

/* x [N, Ci, H, W], w [Ci, Co/groups, kh, kw] -> [N, Co, Ho, Wo]: the columns w^T x per group (a
   batched matmul), summed into place by col2im. gm: the geometry (H, W the output's). */
static tensor *tensor__conv_transpose(const char *fn, tensor *x, tensor *w, tensor *bias, int groups, tensor__fold_geom *gm) {
    bool taken;
    tensor *fast = tensor__conv_transpose_fast(fn, x, w, bias, groups, gm, &taken);
    if (taken) return fast;
    tensor__tmps s = {{0}, 0};
    int64_t N = x->shape[0], Ci = x->shape[1], Cog = w->shape[1], K = gm->kh * gm->kw, G = groups;
    int64_t w3[3] = {G, Ci / G, Cog * K}, x4[4] = {N, G, Ci / G, gm->bh * gm->bw}, c3[3] = {N, G * Cog * K, gm->bh * gm->bw};
    tensor *wt = tensor__tmp(&s, tensor_transpose(tensor__tmp(&s, tensor_reshape(w, 3, w3)), 1, 2));
    tensor *xg = tensor__tmp(&s, tensor_reshape(x, 4, x4));
    tensor *cols = tensor__tmp(&s, tensor_reshape(tensor__tmp(&s, tensor_matmul(wt, xg)), 3, c3));
    tensor *y = cols ? tensor__tmp(&s, tensor__col2im(fn, cols, gm)) : NULL;
    if (bias) {
        int64_t b3[3] = {G * Cog, 1, 1};
        y = tensor__tmp(&s, tensor_add(y, tensor__tmp(&s, tensor_reshape(bias, 3, b3))));
    }
    y = tensor__tmps_take(&s, y);
    tensor__tmps_free(&s);
    return y;
}

/* The checks and geometry of both; sd the spatial dims (1 or 2). */
static tensor *tensor__conv_transpose_front(const char *fn, int sd, tensor *x, tensor *w, tensor *bias, int stride, int padding, int output_padding, int groups, int dilation) {
    TENSOR__CHECK_ARG(fn, x);
    TENSOR__CHECK_ARG(fn, w);
    tensor *ins[3] = {x, w, bias};
    if (!tensor__same_device(fn, 3, ins)) return NULL;
    if (x->ndim != sd + 1 && x->ndim != sd + 2)
        return tensor__fail(fn, "expected a %d-D (unbatched) or %d-D (batched) input, got shape %s", sd + 1, sd + 2, tensor__shape_of(x));
    if (w->ndim != sd + 2)
        return tensor__fail(fn, "expected a %d-D weight [in_channels, out_channels/groups%s], got shape %s", sd + 2, sd == 2 ? ", kH, kW" : ", k", tensor__shape_of(w));
    /* PyTorch's CPU slow_conv_transpose2d (conv_transpose1d runs it too) takes int64 besides the
       floating dtypes, its CUDA kernel only those; int64 sums wrap modulo 2^64 as its GEMM's do */
    if (!tensor__is_float(x->dtype) && x->dtype != TENSOR_I64) return tensor__fail(fn, "expected a floating or int64 input, got %s", tensor__dtype_names[x->dtype]);
    if (x->dtype == TENSOR_I64 && x->storage->device != TENSOR_CPU) return tensor__fail(fn, "int64 transposed convolution runs on the CPU only");
    if (w->dtype != x->dtype) return tensor__fail(fn, "input dtype %s and weight dtype %s should be the same", tensor__dtype_names[x->dtype], tensor__dtype_names[w->dtype]);
    if (bias && bias->dtype != x->dtype) return tensor__fail(fn, "input dtype %s and bias dtype %s should be the same", tensor__dtype_names[x->dtype], tensor__dtype_names[bias->dtype]);
    if (stride < 1 || dilation < 1 || groups < 1 || padding < 0 || output_padding < 0)
        return tensor__fail(fn, "stride %d, dilation %d, groups %d must be positive, padding %d and output_padding %d non-negative", stride, dilation, groups, padding, output_padding);
    if (output_padding >= stride && output_padding >= dilation)
        return tensor__fail(fn, "output_padding %d must be smaller than either stride %d or dilation %d", output_padding, stride, dilation);
    bool batched = x->ndim == sd + 2;
    int64_t Ci = x->shape[batched ? 1 : 0];
    if (w->shape[0] != Ci) return tensor__fail(fn, "input of shape %s has %lld channels, weight %s expects %lld", tensor__shape_of(x), (long long)Ci, tensor__shape_of(w), (long long)w->shape[0]);
    if (Ci % groups) return tensor__fail(fn, "in_channels %lld is not divisible by groups %d", (long long)Ci, groups);
    int64_t Co = w->shape[1] * groups;
    if (bias && (bias->ndim != 1 || bias->shape[0] != Co))
        return tensor__fail(fn, "bias must be 1-D with %lld elements (out_channels), got shape %s", (long long)Co, tensor__shape_of(bias));
    for (int d = 0; d < x->ndim; d++)
        if (x->shape[d] == 0 && (d > 0 || !batched)) return tensor__fail(fn, "input of shape %s has a zero-size non-batch dim", tensor__shape_of(x));
    for (int d = 0; d < w->ndim; d++)
        if (w->shape[d] == 0) return tensor__fail(fn, "weight of shape %s has a zero-size dim", tensor__shape_of(w));
    int64_t in_h = sd == 2 ? x->shape[x->ndim - 2] : 1, in_w = x->shape[x->ndim - 1];
    int64_t kh = sd == 2 ? w->shape[2] : 1, kw = w->shape[w->ndim - 1];
    int64_t s = stride, p = padding, d = dilation, op = output_padding;
    int64_t oh = sd == 2 ? (in_h - 1) * s - 2 * p + d * (kh - 1) + op + 1 : 1, ow = (in_w - 1) * s - 2 * p + d * (kw - 1) + op + 1;
    if (oh < 1 || ow < 1) return tensor__fail(fn, "output size (%lld, %lld) is not positive (input %s, weight %s, padding %d)", (long long)oh, (long long)ow, tensor__shape_of(x), tensor__shape_of(w), padding);
    tensor__fold_geom g = {oh, ow, kh, kw, sd == 2 ? d : 1, d, sd == 2 ? p : 0, p, sd == 2 ? s : 1, s, in_h, in_w};
    tensor__tmps t = {{0}, 0};
    tensor *x4 = batched ? x : tensor__tmp(&t, tensor_unsqueeze(x, 0)), *w4 = w;
    if (sd == 1) {
        x4 = tensor__tmp(&t, tensor_unsqueeze(x4, 2));
        w4 = tensor__tmp(&t, tensor_unsqueeze(w, 2));
    }
    tensor *y = x4 && w4 ? tensor__tmp(&t, tensor__conv_transpose(fn, x4, w4, bias, groups, &g)) : NULL;
    if (sd == 1) y = tensor__tmp(&t, tensor_squeeze(y, 2));
    if (!batched) y = tensor__tmp(&t, tensor_squeeze(y, 0));
    y = tensor__tmps_take(&t, y);
    tensor__tmps_free(&t);
    return y;
}

TENSOR_API tensor *tensor_conv_transpose2d(tensor *x, tensor *w, tensor *bias, int stride, int padding, int output_padding, int groups, int dilation) {
    return tensor__conv_transpose_front("tensor_conv_transpose2d", 2, x, w, bias, stride, padding, output_padding, groups, dilation);
}
TENSOR_API tensor *tensor_conv_transpose1d(tensor *x, tensor *w, tensor *bias, int stride, int padding, int output_padding, int groups, int dilation) {
    return tensor__conv_transpose_front("tensor_conv_transpose1d", 1, x, w, bias, stride, padding, output_padding, groups, dilation);
}

/* ---- grid_sample (a kernel), affine_grid (a composite) ----
   grid_sample follows PyTorch's grid_sampler_2d (GridSampler.h): a grid value g in [-1, 1] maps to
   the input coordinate ((g + 1) / 2) (S - 1) (align_corners) or ((g + 1) S - 1) / 2; border clips
   it to [0, S - 1], reflection reflects it about the borders (the corner pixels' centres, or their
   outer edges without align_corners) and clips; bilinear reads the 2 x 2 pixels around it, nearest
   the pixel it rounds to (half to even), bicubic the 4 x 4 around it with the cubic convolution
   (A = -0.75), the padding then applied to each tap's coordinate. Pixels outside the input read 0.
   Each grid point's taps along x and y (indices, weights and the weights' derivatives) come from
   tensor__gs_taps_of (>>formulas), which the CUDA kernels share. The kernel computes in double
   from contiguous copies in the compute dtype (f64 for f64, else f32), the points spread over the
   threads; the backward (the derivative's fused kernel) gives input's gradient (the weights times
   the output's gradient added at the taps, in double) and grid's (the taps' values times the
   weights' derivatives; 0 for nearest, as PyTorch's), one image per chunk so no two threads add
   into the same place. */
typedef struct {
    tensor_dtype ct;
    const char *x, *g, *gy; /* input [N, C, H, W], grid [N, Ho, Wo, 2], backward: gy [N, C, Ho, Wo] (ct, contiguous) */
    char *out, *gg;         /* forward: out [N, C, Ho, Wo]; backward: gg [N, Ho, Wo, 2] or NULL (ct) */
    double *gx;             /* backward: [N, C, H, W] sums, or NULL */
    int64_t N, C, H, W, Ho, Wo;
    int mode, pad, align;
} tensor__gs_job;

static double tensor__gs_ld(const char *p, int64_t i, tensor_dtype ct) { return ct == TENSOR_F64 ? ((const double *)(const void *)p)[i] : (double)((const float *)(const void *)p)[i]; }
static void tensor__gs_st(char *p, int64_t i, tensor_dtype ct, double v) {
    if (ct == TENSOR_F64) ((double *)(void *)p)[i] = v;
    else ((float *)(void *)p)[i] = (float)v;
}
static void tensor__gs_point(const tensor__gs_job *j, int64_t q, tensor__gs_taps *tx, tensor__gs_taps *ty) {
    tensor__gs_taps_of(tensor__gs_ld(j->g, 2 * q, j->ct), j->W, j->mode, j->pad, j->align, tx);
    tensor__gs_taps_of(tensor__gs_ld(j->g, 2 * q + 1, j->ct), j->H, j->mode, j->pad, j->align, ty);
}
/* points q = n Ho Wo + p in [begin, end) */
static void tensor__gs_fwd_range(int64_t begin, int64_t end, void *ctx) {
    const tensor__gs_job *j = (const tensor__gs_job *)ctx;
    int64_t P = j->Ho * j->Wo, HW = j->H * j->W;
    for (int64_t q = begin; q < end; q++) {
        int64_t n = q / P, p = q - n * P;
        tensor__gs_taps tx, ty;
        tensor__gs_point(j, q, &tx, &ty);
        for (int64_t c = 0; c < j->C; c++) {
            int64_t base = (n * j->C + c) * HW;
            double acc = 0;
            for (int b = 0; b < ty.k; b++)
                for (int a = 0; a < tx.k; a++)
                    if (ty.v[b] && tx.v[a]) acc += tensor__gs_ld(j->x, base + ty.c[b] * j->W + tx.c[a], j->ct) * (tx.w[a] * ty.w[b]);
            tensor__gs_st(j->out, (n * j->C + c) * P + p, j->ct, acc);
        }
    }
}
/* images n in [begin, end) */
static void tensor__gs_bwd_range(int64_t begin, int64_t end, void *ctx) {
    const tensor__gs_job *j = (const tensor__gs_job *)ctx;
    int64_t P = j->Ho * j->Wo, HW = j->H * j->W;
    for (int64_t n = begin; n < end; n++)
        for (int64_t p = 0; p < P; p++) {
            int64_t q = n * P + p;
            tensor__gs_taps tx, ty;
            tensor__gs_point(j, q, &tx, &ty);
            double gix = 0, giy = 0;
            for (int64_t c = 0; c < j->C; c++) {
                int64_t base = (n * j->C + c) * HW;
                double go = tensor__gs_ld(j->gy, (n * j->C + c) * P + p, j->ct);
                for (int b = 0; b < ty.k; b++)
                    for (int a = 0; a < tx.k; a++) {
                        if (!ty.v[b] || !tx.v[a]) continue;
                        int64_t at = base + ty.c[b] * j->W + tx.c[a];
                        if (j->gx) j->gx[at] += tx.w[a] * ty.w[b] * go;
                        if (j->gg) {
                            double v = tensor__gs_ld(j->x, at, j->ct) * go;
                            gix += v * tx.dw[a] * ty.w[b];
                            giy += v * tx.w[a] * ty.dw[b];
                        }
                    }
            }
            if (j->gg) {
                tensor__gs_st(j->gg, 2 * q, j->ct, gix);
                tensor__gs_st(j->gg, 2 * q + 1, j->ct, giy);
            }
        }
}
static void tensor__gs_job_init(tensor__gs_job *j, const tensor *x, const tensor *g, const int64_t *ip, tensor_dtype ct) {
    memset(j, 0, sizeof *j);
    j->ct = ct;
    j->N = x->shape[0]; j->C = x->shape[1]; j->H = x->shape[2]; j->W = x->shape[3]; j->Ho = g->shape[1]; j->Wo = g->shape[2];
    j->mode = (int)ip[0]; j->pad = (int)ip[1]; j->align = (int)ip[2];
}
/* multiply-adds per grid point and channel */
static int64_t tensor__gs_taps_per_point(int mode) { return mode == 0 ? 4 : mode == 1 ? 1 : 16; }
/* t as a contiguous tensor of dtype ct: a new handle to t when it is one (*made false), else a copy */
static tensor *tensor__gs_operand(const char *fn, tensor *t, tensor_dtype ct) {
    return t->dtype == ct && tensor__contiguous(t) ? tensor__alias(fn, t) : tensor__contiguous_copy(fn, t, ct);
}

/* out: [N, C, Ho, Wo] */
static int tensor__cpu_grid_sample(tensor__call *c) {
    tensor *x = c->in[0], *g = c->in[1], *out = c->out;
    if (tensor__numel_of(out->ndim, out->shape) == 0) return 0;
    tensor_dtype ct = x->dtype == TENSOR_F64 ? TENSOR_F64 : TENSOR_F32;
    tensor__gs_job j;
    tensor__gs_job_init(&j, x, g, c->ip, ct);
    tensor *xc = tensor__gs_operand(c->fn, x, ct), *gc = xc ? tensor__gs_operand(c->fn, g, ct) : NULL;
    tensor *oc = !gc ? NULL : out->dtype == ct ? tensor__alias(c->fn, out) : tensor__new_like(c->fn, out, ct);
    int rc = !oc;
    if (!rc) {
        j.x = tensor__data(xc);
        j.g = tensor__data(gc);
        j.out = tensor__data(oc);
        int64_t per = (j.C > 0 ? j.C : 1) * tensor__gs_taps_per_point(j.mode);
        tensor__parallel_for(j.N * j.Ho * j.Wo, 16384 / per + 1, tensor__gs_fwd_range, &j);
        if (oc->storage != out->storage) tensor__copy_into(out, oc);
    }
    tensor_free(xc);
    tensor_free(gc);
    tensor_free(oc);
    return rc;
}

/* The gradients of grid_sample (used by its derivative in >>autograd): *gx of x's shape and dtype,
   *gg of grid's (each only where its pointer is non-NULL), from gy, the output's gradient (any
   layout, a floating dtype). Returns 0, or 1 after recording an error. */
static int tensor__grid_sample_backward(const char *fn, tensor *x, tensor *g, tensor *gy, const int64_t *ip, tensor **gx, tensor **gg) {
    if (!tensor__host_only(fn, x, "the backward of grid_sample")) return 1;
    if (gy->ndim != 4 || gy->shape[0] != x->shape[0] || gy->shape[1] != x->shape[1] || gy->shape[2] != g->shape[1] || gy->shape[3] != g->shape[2]) {
        tensor__fail(fn, "the gradient of shape %s does not fit grid_sample of input %s and grid %s", tensor__shape_of(gy), tensor__shape_of(x), tensor__shape_of(g));
        return 1;
    }
    tensor_dtype ct = x->dtype == TENSOR_F64 ? TENSOR_F64 : TENSOR_F32;
    tensor__gs_job j;
    tensor__gs_job_init(&j, x, g, ip, ct);
    int64_t nx = tensor__numel_of(x->ndim, x->shape);
    tensor *xc = tensor__gs_operand(fn, x, ct), *gc = xc ? tensor__gs_operand(fn, g, ct) : NULL, *gyc = gc ? tensor__gs_operand(fn, gy, ct) : NULL;
    tensor *rx = gyc && gx ? tensor__new(fn, x->ndim, x->shape, x->dtype, TENSOR_CPU) : NULL;
    tensor *rg = gyc && gg ? tensor__new(fn, g->ndim, g->shape, ct, TENSOR_CPU) : NULL;
    double *sums = rx ? (double *)tensor__scratch(fn, (size_t)nx * sizeof(double)) : NULL;
    int rc = !gyc || (gx && !rx) || (gg && !rg) || (gx && !sums);
    if (!rc) {
        if (sums) memset(sums, 0, (size_t)nx * sizeof(double));
        j.x = tensor__data(xc);
        j.g = tensor__data(gc);
        j.gy = tensor__data(gyc);
        j.gx = sums;
        j.gg = rg ? tensor__data(rg) : NULL;
        int64_t per = (j.C > 0 ? j.C : 1) * j.Ho * j.Wo * tensor__gs_taps_per_point(j.mode);
        tensor__parallel_for(j.N, 16384 / (per > 0 ? per : 1) + 1, tensor__gs_bwd_range, &j);
        if (rx) tensor__unpack(tensor__data(rx), rx->dtype, sums, TENSOR_F64, nx);
        if (rg && g->dtype != ct) {
            tensor *r = tensor__new(fn, g->ndim, g->shape, g->dtype, TENSOR_CPU);
            if (r) tensor__copy_into(r, rg);
            tensor_free(rg);
            rg = r;
            rc = !r;
        }
    }
    if (sums) tensor__free_aligned(sums);
    tensor_free(xc);
    tensor_free(gc);
    tensor_free(gyc);
    if (rc) {
        tensor_free(rx);
        tensor_free(rg);
        return 1;
    }
    if (gx) *gx = rx;
    if (gg) *gg = rg;
    return 0;
}

TENSOR_API tensor *tensor_grid_sample(tensor *input, tensor *grid, const char *mode, const char *padding_mode, bool align_corners) {
    const char *fn = "tensor_grid_sample";
    TENSOR__CHECK_ARG(fn, input);
    TENSOR__CHECK_ARG(fn, grid);
    tensor *ins[2] = {input, grid};
    if (!tensor__same_device(fn, 2, ins)) return NULL;
    int m, pad;
    if (!mode || !strcmp(mode, "bilinear")) m = 0;
    else if (!strcmp(mode, "nearest")) m = 1;
    else if (!strcmp(mode, "bicubic")) m = 2;
    else return tensor__fail(fn, "unknown mode '%s' (bilinear, nearest, bicubic)", mode);
    if (!padding_mode || !strcmp(padding_mode, "zeros")) pad = 0;
    else if (!strcmp(padding_mode, "border")) pad = 1;
    else if (!strcmp(padding_mode, "reflection")) pad = 2;
    else return tensor__fail(fn, "unknown padding_mode '%s' (zeros, border, reflection)", padding_mode);
    if (input->ndim != 4) return tensor__fail(fn, "expected a 4-D input [N, C, H, W], got shape %s", tensor__shape_of(input));
    if (grid->ndim != 4 || grid->shape[3] != 2 || grid->shape[0] != input->shape[0])
        return tensor__fail(fn, "expected a grid [N, H_out, W_out, 2] with N = %lld (input %s), got shape %s", (long long)input->shape[0], tensor__shape_of(input),
                            tensor__shape_of(grid));
    if (!tensor__is_float(input->dtype)) return tensor__fail(fn, "expected a floating input, got %s", tensor__dtype_names[input->dtype]);
    if (grid->dtype != input->dtype) return tensor__fail(fn, "input dtype %s and grid dtype %s should be the same", tensor__dtype_names[input->dtype], tensor__dtype_names[grid->dtype]);
    if (input->shape[2] == 0 || input->shape[3] == 0) return tensor__fail(fn, "expected an input with non-empty spatial dims, got shape %s", tensor__shape_of(input));
    int64_t shape[4] = {input->shape[0], input->shape[1], grid->shape[1], grid->shape[2]};
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_grid_sample);
    c.n_in = 2;
    c.in[0] = input;
    c.in[1] = grid;
    c.ip[0] = m;
    c.ip[1] = pad;
    c.ip[2] = align_corners;
    c.out = tensor__new(fn, 4, shape, input->dtype, input->storage->device);
    return c.out ? tensor__dispatch(&c) : NULL;
}

/* affine_grid: the base grid of the output's pixel centres in [-1, 1] (x along W first, then y,
   (z), then 1; PyTorch's linspace_from_neg_one: 0 for a size of 1, scaled by (S - 1) / S without
   align_corners) times theta^T, one matmul (so theta's gradient is matmul's). */
TENSOR_API tensor *tensor_affine_grid(tensor *theta, int ndim, const int64_t *size, bool align_corners) {
    const char *fn = "tensor_affine_grid";
    TENSOR__CHECK_ARG(fn, theta);
    if (!size) return tensor__fail(fn, "size is NULL");
    if (ndim != 4 && ndim != 5) return tensor__fail(fn, "size must have 4 ([N, C, H, W]) or 5 ([N, C, D, H, W]) entries, got %d", ndim);
    int sd = ndim - 2;
    for (int i = 0; i < ndim; i++)
        if (size[i] < 1) return tensor__fail(fn, "expected a positive output size, got %lld in entry %d", (long long)size[i], i);
    if (!tensor__is_float(theta->dtype)) return tensor__fail(fn, "expected a floating theta, got %s", tensor__dtype_names[theta->dtype]);
    if (theta->ndim != 3 || theta->shape[0] != size[0] || theta->shape[1] != sd || theta->shape[2] != sd + 1)
        return tensor__fail(fn, "expected a batch of %d-D affine matrices of shape [%lld, %d, %d] for size [%lld, ...], got theta of shape %s", sd, (long long)size[0], sd,
                            sd + 1, (long long)size[0], tensor__shape_of(theta));
    int64_t P = 1;
    for (int i = 2; i < ndim; i++)
        if (!tensor__size_mul(P, size[i], &P) || P > ((int64_t)1 << 40)) return tensor__fail(fn, "the output size is too large");
    double *base = (double *)TENSOR__MALLOC((size_t)(P * (sd + 1)) * sizeof(double));
    if (!base) return tensor__fail(fn, "out of memory allocating the base grid");
    for (int64_t p = 0; p < P; p++) {
        int64_t rem = p;
        for (int k = 0; k < sd; k++) { /* k = 0: x (the last dim), 1: y, 2: z */
            int64_t S = size[ndim - 1 - k], i = rem % S;
            rem /= S;
            double v = 0;
            if (S > 1) {
                double step = 2.0 / (double)(S - 1);
                v = i < S / 2 ? -1 + step * (double)i : 1 - step * (double)(S - 1 - i); /* (torch.linspace's halves) */
                if (!align_corners) v = v * (double)(S - 1) / (double)S;
            }
            base[p * (sd + 1) + k] = v;
        }
        base[p * (sd + 1) + sd] = 1;
    }
    TENSOR__LA_BEGIN(fn);
    int64_t bshape[2] = {P, sd + 1}, gshape[5] = {size[0], 0, 0, 0, 0};
    for (int i = 0; i < sd; i++) gshape[1 + i] = size[2 + i];
    gshape[1 + sd] = sd;
    tensor *b = tensor_to_device(tensor_to_dtype(tensor_from_data(base, 2, bshape, TENSOR_F64), theta->dtype), theta->storage->device);
    TENSOR_FREE(base);
    return tensor__la_end(tensor_reshape(tensor_matmul(b, tensor_transpose(theta, 1, 2)), sd + 2, gshape));
}
