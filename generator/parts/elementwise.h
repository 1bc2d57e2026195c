// >>elementwise --------------------------------------------------------------------------------
/* Each elementwise op is one line of the shared formula lists (>>formulas). TENSOR__UNARY and
   TENSOR__BINARY expand a formula into the op's reference CPU kernel: a loop over one row of the
   iteration description, with typed fast paths for f32 and f64, an f32 chunk path for bf16/f16
   rows, and a converting path for every other dtype. Float formulas are evaluated in double and
   rounded once to the output dtype; k is the loop context, whose error flag a formula raises
   through err. */
/* ---- bf16 and f16 rows: converted in registers, a chunk at a time ----
   A row whose operands are bf16, f16 or f32 (dense, or a broadcast scalar) and whose output is
   one of those (or bool, for comparisons) runs as f32: each chunk of TENSOR__HALF_CHUNK elements is
   widened into a stack buffer, the op's f32 vector kernel (or its formula) runs on it, and the
   result is narrowed with round to nearest even, as tensor__f32_to_bf16 / tensor__f32_to_f16 do
   (NaN included). The reference loop rounds the double formula to f32 and then to the 16-bit
   type, so an op whose f32 kernel is correctly rounded gives the same bits either way. The
   conversions are the SIMD layer's (tensor__half_to_f32, tensor__f32_to_half); the f32 work is
   the op's own loop, run again on f32 chunks (tensor__half_rows), so no op carries a second copy. */
#define TENSOR__HALF_CHUNK 1024 /* 12 KiB of f32 buffers on the stack; the per-chunk calls amortized */

typedef struct {
    tensor_dtype out, in[3];
    bool int_compute;
    double p0, p1;
    int error;
    /* >>simd row kernels of this op for f32 operands (NULL: none, or reference kernels asked for) */
    tensor__vec_unary_fn vu;
    tensor__vec_binary_fn vb;
    tensor__vec_compare_fn vc;
    double prm[2];
    bool half; /* the f32 chunk path of bf16/f16 rows (off for the reference kernels) */
} tensor__ew_ctx;

/* Which operands of a binary row are f32 arrays (stride 4) and which a broadcast scalar (stride
   0), as the vector kernels' `mode` names it; -1 for any other layout. */
static int tensor__vec_mode(const int64_t *st) {
    if (st[1] == 4 && st[2] == 4) return 0;
    if (st[1] == 4 && st[2] == 0) return 1;
    if (st[1] == 0 && st[2] == 4) return 2;
    return -1;
}

/* Whether an operand of dtype d at byte stride st reads as f32 exactly: f32, bf16 or f16, dense or
   broadcast. */
static bool tensor__half_operand(tensor_dtype d, int64_t st) {
    return (d == TENSOR_F32 || d == TENSOR_BF16 || d == TENSOR_F16) && (st == 0 || st == (int64_t)tensor__dtype_sizes[d]);
}
/* The layout of a row that the f32 chunk path takes, as the vector kernels' `mode` (unary: 0), or
   -1. Inputs must read as f32 exactly and not all be broadcast; the output is dense f32, bf16 or
   f16, or bool for a comparison that has a vector kernel. */
static int tensor__half_mode(const tensor__ew_ctx *k, const int64_t *st, int n_in) {
    if (!k->half) return -1;
    if (k->out == TENSOR_BOOL) {
        if (n_in != 2 || !k->vc || st[0] != 1) return -1;
    } else if (!tensor__half_operand(k->out, st[0]) || st[0] == 0) {
        return -1;
    }
    for (int j = 0; j < n_in; j++) if (!tensor__half_operand(k->in[j], st[j + 1])) return -1;
    if (n_in == 1) return st[1] ? 0 : -1;
    return st[1] && st[2] ? 0 : st[1] ? 1 : st[2] ? 2 : -1;
}
/* Elements [i0, i0 + m) of an input row as f32: the row itself when it is f32, else widened into
   buf; a broadcast input's one value in buf[0]. */
static const float *tensor__half_in(tensor_dtype d, const char *p, int64_t st, int64_t i0, int64_t m, float *buf) {
    if (st == 0) { buf[0] = (float)tensor__load_f64(p, d); return buf; }
    if (d == TENSOR_F32) return (const float *)p + i0;
    tensor__half_to_f32(buf, (const uint16_t *)p + i0, m, d == TENSOR_BF16);
    return buf;
}
/* Where the f32 results of elements [i0, ...) go: the output row when it is f32, else buf, which
   tensor__half_out then narrows into the row. */
static float *tensor__half_dst(const tensor__ew_ctx *k, char *o, int64_t i0, float *buf) { return k->out == TENSOR_F32 ? (float *)o + i0 : buf; }
static void tensor__half_out(const tensor__ew_ctx *k, char *o, int64_t i0, int64_t m, const float *r) {
    if (k->out != TENSOR_F32) tensor__f32_to_half((uint16_t *)o + i0, r, m, k->out == TENSOR_BF16);
}
/* A row that tensor__half_mode takes, as f32 chunk by chunk: inputs widened (an f32 or broadcast
   one read in place), the op's own loop run on the f32 operands (its vector kernel, or its formula
   evaluated from f32 values), the results narrowed into the row. */
static void tensor__half_rows(char **ptr, const int64_t *st, int64_t n, tensor__ew_ctx *k, int n_in, tensor__loop_fn loop) {
    float in_buf[2][TENSOR__HALF_CHUNK], out_buf[TENSOR__HALF_CHUNK];
    tensor__ew_ctx k32 = *k;
    k32.half = false;
    k32.error = 0;
    if (k32.out != TENSOR_BOOL) k32.out = TENSOR_F32;
    for (int j = 0; j < n_in; j++) k32.in[j] = TENSOR_F32;
    for (int64_t i0 = 0; i0 < n; i0 += TENSOR__HALF_CHUNK) {
        int64_t m = n - i0 < TENSOR__HALF_CHUNK ? n - i0 : TENSOR__HALF_CHUNK, s[3];
        char *p[3];
        for (int j = 0; j < n_in; j++) {
            p[j + 1] = (char *)(uintptr_t)tensor__half_in(k->in[j], ptr[j + 1], st[j + 1], i0, m, in_buf[j]);
            s[j + 1] = st[j + 1] ? 4 : 0;
        }
        if (k->out == TENSOR_BOOL) p[0] = ptr[0] + i0, s[0] = 1;
        else p[0] = (char *)tensor__half_dst(k, ptr[0], i0, out_buf), s[0] = 4;
        loop(p, s, m, &k32);
        if (k->out != TENSOR_BOOL) tensor__half_out(k, ptr[0], i0, m, (const float *)(void *)p[0]);
    }
    if (k32.error) TENSOR__ATOMIC_SET(&k->error, 1);
}

/* One row of a unary op: ptr[0] is the output, ptr[1] the input. */
#define TENSOR__UNARY(name, FEXPR, IEXPR)                                                                  \
    static void tensor__loop_##name(char **ptr, const int64_t *st, int64_t n, void *vk) {                \
        tensor__ew_ctx *k = (tensor__ew_ctx *)vk;                                                        \
        double p0 = k->p0, p1 = k->p1;                                                                   \
        (void)p0; (void)p1;                                                                              \
        char *o = ptr[0], *a = ptr[1];                                                                   \
        if (k->int_compute) {                                                                            \
            for (int64_t i = 0; i < n; i++) {                                                            \
                int64_t x = tensor__load_i64(a + i * st[1], k->in[0]);                                   \
                (void)x;                                                                                 \
                tensor__store_i64(o + i * st[0], k->out, (int64_t)(IEXPR));                              \
            }                                                                                            \
        } else if (k->out == TENSOR_F32 && k->in[0] == TENSOR_F32) {                                     \
            if (k->vu && st[0] == 4 && st[1] == 4) { k->vu((float *)o, (const float *)a, n, k->prm); return; } \
            for (int64_t i = 0; i < n; i++) {                                                            \
                double x = *(const float *)(a + i * st[1]);                                              \
                (void)x;                                                                                 \
                *(float *)(o + i * st[0]) = (float)(FEXPR);                                              \
            }                                                                                            \
        } else if (k->out == TENSOR_F64 && k->in[0] == TENSOR_F64) {                                     \
            for (int64_t i = 0; i < n; i++) {                                                            \
                double x = *(const double *)(a + i * st[1]);                                             \
                (void)x;                                                                                 \
                *(double *)(o + i * st[0]) = (FEXPR);                                                    \
            }                                                                                            \
        } else if (tensor__half_mode(k, st, 1) == 0) {                                                   \
            tensor__half_rows(ptr, st, n, k, 1, tensor__loop_##name);                                    \
        } else {                                                                                         \
            for (int64_t i = 0; i < n; i++) {                                                            \
                double x = tensor__load_f64(a + i * st[1], k->in[0]);                                    \
                (void)x;                                                                                 \
                tensor__store_f64(o + i * st[0], k->out, (double)(FEXPR));                               \
            }                                                                                            \
        }                                                                                                \
    }                                                                                                    \
    static int tensor__cpu_##name(tensor__call *c) { return tensor__run_elementwise(c, tensor__loop_##name, TENSOR_OP_##name); }

/* One row of a binary op: ptr[0] the output, ptr[1] and ptr[2] the inputs. */
#define TENSOR__BINARY(name, FEXPR, IEXPR)                                                                 \
    static void tensor__loop_##name(char **ptr, const int64_t *st, int64_t n, void *vk) {                \
        tensor__ew_ctx *k = (tensor__ew_ctx *)vk;                                                        \
        char *o = ptr[0], *a = ptr[1], *b = ptr[2];                                                      \
        int *err = &k->error;                                                                            \
        double p0 = k->p0;                                                                               \
        (void)err; (void)p0;                                                                             \
        if (k->int_compute) {                                                                            \
            for (int64_t i = 0; i < n; i++) {                                                            \
                int64_t x = tensor__load_i64(a + i * st[1], k->in[0]);                                   \
                int64_t y = tensor__load_i64(b + i * st[2], k->in[1]);                                   \
                (void)x; (void)y;                                                                        \
                (void)x; (void)y;                                                                        \
                tensor__store_i64(o + i * st[0], k->out, (int64_t)(IEXPR));                              \
            }                                                                                            \
        } else if (k->out == TENSOR_F32 && k->in[0] == TENSOR_F32 && k->in[1] == TENSOR_F32) {          \
            int mode = k->vb && st[0] == 4 ? tensor__vec_mode(st) : -1;                                  \
            if (mode >= 0) { k->vb((float *)o, (const float *)a, (const float *)b, n, mode); return; }   \
            for (int64_t i = 0; i < n; i++) {                                                            \
                double x = *(const float *)(a + i * st[1]), y = *(const float *)(b + i * st[2]);         \
                (void)x; (void)y;                                                                        \
                *(float *)(o + i * st[0]) = (float)(FEXPR);                                              \
            }                                                                                            \
        } else if (k->out == TENSOR_F64 && k->in[0] == TENSOR_F64 && k->in[1] == TENSOR_F64) {          \
            for (int64_t i = 0; i < n; i++) {                                                            \
                double x = *(const double *)(a + i * st[1]), y = *(const double *)(b + i * st[2]);       \
                (void)x; (void)y;                                                                        \
                *(double *)(o + i * st[0]) = (FEXPR);                                                    \
            }                                                                                            \
        } else {                                                                                         \
            int mode = k->vc && st[0] == 1 && k->out == TENSOR_BOOL && k->in[0] == TENSOR_F32 &&         \
                       k->in[1] == TENSOR_F32 ? tensor__vec_mode(st) : -1;                               \
            if (mode >= 0) { k->vc((uint8_t *)o, (const float *)a, (const float *)b, n, mode); return; } \
            if (tensor__half_mode(k, st, 2) >= 0) { tensor__half_rows(ptr, st, n, k, 2, tensor__loop_##name); return; } \
            for (int64_t i = 0; i < n; i++) {                                                            \
                double x = tensor__load_f64(a + i * st[1], k->in[0]);                                    \
                (void)x;                                                                                 \
                double y = tensor__load_f64(b + i * st[2], k->in[1]);                                    \
                (void)x; (void)y;                                                                        \
                tensor__store_f64(o + i * st[0], k->out, (double)(FEXPR));                               \
            }                                                                                            \
        }                                                                                                \
    }                                                                                                    \
    static int tensor__cpu_##name(tensor__call *c) { return tensor__run_elementwise(c, tensor__loop_##name, TENSOR_OP_##name); }

/* Runs an elementwise loop over out = f(in...): operands broadcast to out's shape. `kernel` is the
   op whose loop this is (its vector kernels, if any, serve the f32 rows). */
static int tensor__run_elementwise(tensor__call *c, tensor__loop_fn loop, tensor_op kernel) {
    tensor *ops[TENSOR__MAX_OPERANDS];
    tensor__ew_ctx k;
    memset(&k, 0, sizeof k);
    ops[0] = c->out;
    k.out = c->out->dtype;
    k.int_compute = !tensor__is_float(c->compute);
    k.p0 = c->p[0];
    k.p1 = c->p[1];
    for (int i = 0; i < c->n_in; i++) { ops[i + 1] = c->in[i]; k.in[i] = c->in[i]->dtype; }
    const tensor__simd_isa *v = tensor__reference_kernels || k.int_compute ? NULL : tensor__simd();
    if (v) {
        k.vu = v->unary[kernel];
        k.vb = v->binary[kernel];
        k.vc = v->compare[kernel];
        k.prm[0] = k.p0;
        k.prm[1] = k.p1;
        k.half = k.out == TENSOR_BF16 || k.out == TENSOR_F16;
        for (int i = 0; i < c->n_in; i++) k.half = k.half || k.in[i] == TENSOR_BF16 || k.in[i] == TENSOR_F16;
    }
    tensor__iter it;
    tensor__iter_init(&it, c->n_in + 1, ops, c->out->ndim, c->out->shape);
    tensor__iter_run(&it, loop, &k);
    if (k.error) { tensor__fail(c->fn, "integer division by zero"); return 1; }
    return 0;
}

/* The CPU kernel of every op in the shared formula lists (>>formulas). */
TENSOR__UNARY_FORMULAS(TENSOR__UNARY)
TENSOR__BINARY_FORMULAS(TENSOR__BINARY)

/* where: ptr[0] out, ptr[1] cond (bool), ptr[2] a, ptr[3] b. */
static void tensor__loop_where(char **ptr, const int64_t *st, int64_t n, void *vk) {
    tensor__ew_ctx *k = (tensor__ew_ctx *)vk;
    for (int64_t i = 0; i < n; i++) {
        bool c = *(const uint8_t *)(ptr[1] + i * st[1]) != 0;
        int src = c ? 2 : 3;
        char *p = ptr[src] + i * st[src];
        tensor_dtype d = k->in[src - 1];
        if (d == k->out) memcpy(ptr[0] + i * st[0], p, tensor__dtype_sizes[d]);
        else if (k->int_compute) tensor__store_i64(ptr[0] + i * st[0], k->out, tensor__load_i64(p, d));
        else tensor__store_f64(ptr[0] + i * st[0], k->out, tensor__load_f64(p, d));
    }
}
static int tensor__cpu_where(tensor__call *c) { return tensor__run_elementwise(c, tensor__loop_where, TENSOR_OP_where); }

/* ---- fused backward of unary ops ----
   gx = g * f'(x) in one pass over x and g (relu has its own, tensor__relu_backward in >>nn), for a
   backward without create_graph (the derivatives in
   tensor_autograd.h fall back to their op-composed formulas otherwise, and for the ops and dtypes
   this does not take). The formulas are the composed ones, evaluated in the same order, so f64
   gives the same values; f32 works in f32, with the SIMD layer's f(x) where the derivative needs
   it (tanh, sigmoid, exp, silu, gelu). Returns 1 done, 0 not taken, -1 error (recorded). */
#define TENSOR__DUNARY_CHUNK 256
typedef struct { tensor_op op; double p0, p1; const tensor__simd_isa *v; bool f32; } tensor__dunary_ctx;

/* y = f(x) for the functions the derivatives need, n <= TENSOR__DUNARY_CHUNK floats */
static void tensor__dunary_f32_of(const tensor__dunary_ctx *k, tensor_op f, float *y, const float *x, int64_t n) {
    tensor__vec_unary_fn vf = k->v ? k->v->unary[f] : NULL;
    if (vf) { vf(y, x, n, NULL); return; }
    for (int64_t i = 0; i < n; i++) {
        double t = x[i];
        y[i] = (float)(f == TENSOR_OP_tanh ? tanh(t) : f == TENSOR_OP_sigmoid ? 1.0 / (1.0 + exp(-t)) : f == TENSOR_OP_exp ? exp(t) : erf(t));
    }
}
#define TENSOR__DUNARY_MASKS(T, x, g, out, n, op, p0, p1)                                                    \
    switch (op) {                                                                                        \
    case TENSOR_OP_leaky_relu:                                                                           \
        for (int64_t i = 0; i < n; i++) { out[i] = x[i] > 0 ? g[i] : (T)(g[i] * p0); } return;           \
    case TENSOR_OP_relu6:                                                                                \
        for (int64_t i = 0; i < n; i++) { out[i] = g[i] * (x[i] > 0 && x[i] < 6 ? (T)1 : (T)0); } return; \
    case TENSOR_OP_hardtanh:                                                                             \
        for (int64_t i = 0; i < n; i++) { out[i] = g[i] * (x[i] > p0 && x[i] < p1 ? (T)1 : (T)0); } return; \
    case TENSOR_OP_clamp: {                                                                              \
        double lo = p0 == p0 ? p0 : -INFINITY, hi = p1 == p1 ? p1 : INFINITY;                            \
        for (int64_t i = 0; i < n; i++) out[i] = g[i] * (x[i] >= lo && x[i] <= hi ? (T)1 : (T)0);        \
        return;                                                                                          \
    }                                                                                                    \
    default: break;                                                                                      \
    }
static void tensor__dunary_f32(const tensor__dunary_ctx *k, float *out, const float *x, const float *g, int64_t n) {
    TENSOR__DUNARY_MASKS(float, x, g, out, n, k->op, k->p0, k->p1)
    float y[TENSOR__DUNARY_CHUNK], z[TENSOR__DUNARY_CHUNK];
    switch (k->op) {
    case TENSOR_OP_tanh: /* 1 - tanh^2 */
        tensor__dunary_f32_of(k, TENSOR_OP_tanh, y, x, n);
        for (int64_t i = 0; i < n; i++) { float t = y[i] * y[i]; out[i] = g[i] * (-t + 1.0f); }
        return;
    case TENSOR_OP_sigmoid: /* s (1 - s) */
        tensor__dunary_f32_of(k, TENSOR_OP_sigmoid, y, x, n);
        for (int64_t i = 0; i < n; i++) { float t = -y[i] + 1.0f; out[i] = g[i] * (y[i] * t); }
        return;
    case TENSOR_OP_exp:
        tensor__dunary_f32_of(k, TENSOR_OP_exp, y, x, n);
        for (int64_t i = 0; i < n; i++) out[i] = g[i] * y[i];
        return;
    case TENSOR_OP_silu: /* s (x (1 - s) + 1) */
        tensor__dunary_f32_of(k, TENSOR_OP_sigmoid, y, x, n);
        for (int64_t i = 0; i < n; i++) { float t = -y[i] + 1.0f, u = x[i] * t; out[i] = g[i] * (y[i] * (u + 1.0f)); }
        return;
    case TENSOR_OP_gelu_tanh: /* t = tanh(k (x + c x^3)): (1 + t) / 2 + x (1 - t^2) k (1 + 3 c x^2) / 2 */
        for (int64_t i = 0; i < n; i++) { float x2 = x[i] * x[i]; z[i] = 0.79788456080286535588f * (x[i] * (0.044715f * x2 + 1.0f)); }
        tensor__dunary_f32_of(k, TENSOR_OP_tanh, y, z, n);
        for (int64_t i = 0; i < n; i++) {
            float x2 = x[i] * x[i], t = y[i], in = 0.5f * x[i] * (-(t * t) + 1.0f);
            out[i] = g[i] * (0.5f * (t + 1.0f) + in * (0.79788456080286535588f * (0.134145f * x2 + 1.0f)));
        }
        return;
    case TENSOR_OP_gelu: /* Phi(x) + x phi(x) */
        for (int64_t i = 0; i < n; i++) z[i] = (float)(x[i] * 0.70710678118654752440);
        tensor__dunary_f32_of(k, TENSOR_OP_erf, y, z, n);
        for (int64_t i = 0; i < n; i++) { float t = x[i] * x[i]; z[i] = (float)(t * -0.5); }
        tensor__dunary_f32_of(k, TENSOR_OP_exp, z, z, n);
        for (int64_t i = 0; i < n; i++) {
            float cdf = (float)((double)(y[i] + 1.0f) * 0.5), pdf = (float)(z[i] * 0.39894228040143267794);
            out[i] = g[i] * (cdf + x[i] * pdf);
        }
        return;
    default: return;
    }
}
static void tensor__dunary_f64(const tensor__dunary_ctx *k, double *out, const double *x, const double *g, int64_t n) {
    TENSOR__DUNARY_MASKS(double, x, g, out, n, k->op, k->p0, k->p1)
    for (int64_t i = 0; i < n; i++) {
        double v = x[i], d;
        switch (k->op) {
        case TENSOR_OP_tanh: { double t = tanh(v); d = -(t * t) + 1; break; }
        case TENSOR_OP_sigmoid: { double s = 1.0 / (1.0 + exp(-v)); d = s * (-s + 1); break; }
        case TENSOR_OP_exp: d = exp(v); break;
        case TENSOR_OP_silu: { double s = 1.0 / (1.0 + exp(-v)); d = s * (v * (-s + 1) + 1); break; }
        case TENSOR_OP_gelu: d = (erf(v * 0.70710678118654752440) + 1) * 0.5 + v * (exp(v * v * -0.5) * 0.39894228040143267794); break;
        case TENSOR_OP_gelu_tanh: {
            const double kk = 0.79788456080286535588, cc = 0.044715;
            double t = tanh(kk * (v + cc * v * v * v));
            d = 0.5 * (1 + t) + 0.5 * v * (1 - t * t) * kk * (1 + 3 * cc * v * v);
            break;
        }
        default: d = 0; break;
        }
        out[i] = g[i] * d;
    }
}
/* ptr[0] out, ptr[1] x, ptr[2] g, all of one float dtype; strided rows go through chunk buffers */
static void tensor__loop_dunary(char **ptr, const int64_t *st, int64_t n, void *vk) {
    const tensor__dunary_ctx *k = (const tensor__dunary_ctx *)vk;
    int64_t es = k->f32 ? 4 : 8;
    double xb[TENSOR__DUNARY_CHUNK], gb[TENSOR__DUNARY_CHUNK], ob[TENSOR__DUNARY_CHUNK]; /* room for either dtype */
    for (int64_t i0 = 0; i0 < n; i0 += TENSOR__DUNARY_CHUNK) {
        int64_t m = n - i0 < TENSOR__DUNARY_CHUNK ? n - i0 : TENSOR__DUNARY_CHUNK;
        char *o = ptr[0] + i0 * st[0];
        const char *x = ptr[1] + i0 * st[1], *g = ptr[2] + i0 * st[2];
        bool xd = st[1] == es, gd = st[2] == es, od = st[0] == es; /* dense rows are used in place */
        if (!xd) for (int64_t i = 0; i < m; i++) memcpy((char *)xb + i * es, x + i * st[1], (size_t)es);
        if (!gd) for (int64_t i = 0; i < m; i++) memcpy((char *)gb + i * es, g + i * st[2], (size_t)es);
        const void *xp = xd ? (const void *)x : (const void *)xb, *gp = gd ? (const void *)g : (const void *)gb;
        void *op = od ? (void *)o : (void *)ob;
        if (k->f32) tensor__dunary_f32(k, (float *)op, (const float *)xp, (const float *)gp, m);
        else tensor__dunary_f64(k, (double *)op, (const double *)xp, (const double *)gp, m);
        if (!od) for (int64_t i = 0; i < m; i++) memcpy(o + i * st[0], (char *)ob + i * es, (size_t)es);
    }
}
static int tensor__unary_backward(tensor_op op, tensor *x, tensor *g, double p0, double p1, tensor **out) {
    const char *fn = "tensor_backward";
    if (tensor__reference_kernels || !x || !g || x->dtype != g->dtype || (x->dtype != TENSOR_F32 && x->dtype != TENSOR_F64)) return 0;
    if (x->storage->device != TENSOR_CPU || g->storage->device != TENSOR_CPU || x->ndim != g->ndim) return 0;
    for (int d = 0; d < x->ndim; d++) if (x->shape[d] != g->shape[d]) return 0;
    tensor *r = tensor__new(fn, x->ndim, x->shape, x->dtype, TENSOR_CPU);
    if (!r) return -1;
    tensor__dunary_ctx k;
    k.op = op;
    k.p0 = p0;
    k.p1 = p1;
    k.v = tensor__simd();
    k.f32 = x->dtype == TENSOR_F32;
    tensor *ops[3] = {r, x, g};
    tensor__iter it;
    tensor__iter_init(&it, 3, ops, r->ndim, r->shape);
    tensor__iter_run(&it, tensor__loop_dunary, &k);
    TENSOR__PATH_TAKEN(unary_backward_fused);
    *out = r;
    return 1;
}

/* ---- front-ends ---- */

/* The dtype an elementwise op gives for inputs of common dtype `common`; false + error if refused. */
static bool tensor__elementwise_types(tensor_op op, tensor_dtype common, tensor_dtype *out, tensor_dtype *compute) {
    switch (tensor__ops[op].types) {
    case TENSOR__TYPES_NUM:
        if (common == TENSOR_BOOL) { tensor__fail(tensor__ops[op].fn, "not supported for bool tensors"); return false; }
        *out = *compute = common;
        return true;
    case TENSOR__TYPES_FLOAT: *out = *compute = tensor__is_float(common) ? common : TENSOR_F32; return true;
    case TENSOR__TYPES_BOOL: *out = TENSOR_BOOL; *compute = common; return true;
    case TENSOR__TYPES_BITS: /* integers and bool */
        if (tensor__is_float(common)) { tensor__fail(tensor__ops[op].fn, "not supported for %s tensors (integer and bool only)", tensor__dtype_names[common]); return false; }
        *out = *compute = common;
        return true;
    case TENSOR__TYPES_INT: /* integers only */
        if (tensor__is_float(common) || common == TENSOR_BOOL) { tensor__fail(tensor__ops[op].fn, "not supported for %s tensors (integers only)", tensor__dtype_names[common]); return false; }
        *out = *compute = common;
        return true;
    case TENSOR__TYPES_REAL: /* floating only */
        if (!tensor__is_float(common)) { tensor__fail(tensor__ops[op].fn, "not supported for %s tensors (floating dtypes only)", tensor__dtype_names[common]); return false; }
        *out = *compute = common;
        return true;
    case TENSOR__TYPES_F64: *out = *compute = TENSOR_F64; return true;
    default:
        /* square of bool squares 0/1 as integers: int64, as PyTorch */
        if (op == TENSOR_OP_square && common == TENSOR_BOOL) { *out = *compute = TENSOR_I64; return true; }
        *out = *compute = common;
        return true;
    }
}

/* out = op(a) with parameters p0, p1. */
static tensor *tensor__unary(tensor_op op, tensor *a, double p0, double p1) {
    const char *fn = tensor__ops[op].fn;
    TENSOR__CHECK_ARG(fn, a);
    if (op == TENSOR_OP_bitwise_not && a->dtype == TENSOR_BOOL) op = TENSOR_OP_logical_not; /* ~True is False */
    tensor__call c;
    tensor__call_init(&c, op);
    tensor_dtype out;
    if (!tensor__elementwise_types(op, a->dtype, &out, &c.compute)) return NULL;
    c.n_in = 1;
    c.in[0] = a;
    c.p[0] = p0;
    c.p[1] = p1;
    c.out = tensor__new(fn, a->ndim, a->shape, out, a->storage->device);
    return c.out ? tensor__dispatch(&c) : NULL;
}

/* out = op(a, b) broadcast, with the result and compute dtypes already decided. */
static tensor *tensor__binary_typed(tensor_op op, tensor *a, tensor *b, tensor_dtype out, tensor_dtype compute) {
    const char *fn = tensor__ops[op].fn;
    tensor *ins[2] = {a, b};
    tensor_device dev;
    if (!tensor__elementwise_device(fn, 2, ins, &dev)) return NULL;
    int nd;
    int64_t shape[TENSOR_MAX_DIMS];
    if (!tensor__broadcast_shapes(fn, a->ndim, a->shape, b->ndim, b->shape, &nd, shape)) return NULL;
    tensor__call c;
    tensor__call_init(&c, op);
    c.n_in = 2;
    c.in[0] = a;
    c.in[1] = b;
    c.compute = compute;
    c.p[0] = op == TENSOR_OP_nextafter && out == TENSOR_F32; /* nextafter steps in the output's precision */
    c.out = tensor__new(fn, nd, shape, out, dev);
    return c.out ? tensor__dispatch(&c) : NULL;
}

static tensor *tensor__binary(tensor_op op, tensor *a, tensor *b) {
    const char *fn = tensor__ops[op].fn;
    TENSOR__CHECK_ARG(fn, a);
    TENSOR__CHECK_ARG(fn, b);
    tensor *ins[2] = {a, b};
    tensor_dtype out, compute;
    /* subtraction refuses a bool operand even where the other one promotes it (PyTorch's bool - int) */
    tensor_dtype common = op == TENSOR_OP_sub && (a->dtype == TENSOR_BOOL || b->dtype == TENSOR_BOOL) ? TENSOR_BOOL : tensor__result_type(2, ins);
    if (op == TENSOR_OP_heaviside && a->dtype != b->dtype) /* as PyTorch */
        return tensor__fail(fn, "not implemented for tensors with different dtypes (%s and %s)", tensor__dtype_names[a->dtype], tensor__dtype_names[b->dtype]);
    if (op == TENSOR_OP_nextafter && (common == TENSOR_F16 || common == TENSOR_BF16)) /* as PyTorch's CPU */
        return tensor__fail(fn, "not supported for %s tensors (f32 and f64 only)", tensor__dtype_names[common]);
    if (!tensor__elementwise_types(op, common, &out, &compute)) return NULL;
    return tensor__binary_typed(op, a, b, out, compute);
}

/* A C double standing for a PyTorch scalar: integral values act as ints, others as floats. */
static bool tensor__scalar_is_integral(double s) { return s == floor(s) && fabs(s) < 9.2e18; }

/* The dtype of `a op s` when s is a wrapped number (PyTorch: a float tensor keeps its dtype, an int
   tensor stays int for an integral s and becomes f32 otherwise, bool + int gives i64). */
static tensor_dtype tensor__scalar_result_type(tensor_dtype a, double s) {
    if (tensor__is_float(a)) return a;
    if (!tensor__scalar_is_integral(s)) return TENSOR_F32;
    return a == TENSOR_BOOL ? TENSOR_I64 : a;
}

/* A 0-dim tensor holding s for use as the second operand of `a op s`. */
static tensor *tensor__wrapped_scalar(const char *fn, double s, tensor_dtype result) {
    tensor_dtype d = tensor__is_float(result) ? (result == TENSOR_F64 ? TENSOR_F64 : TENSOR_F32) : TENSOR_I64;
    tensor *t = tensor__new(fn, 0, NULL, d, TENSOR_CPU);
    if (!t) return NULL;
    if (d == TENSOR_I64) tensor__store_i64(tensor__data(t), d, tensor__double_to_i64(s));
    else tensor__store_f64(tensor__data(t), d, s);
    return t;
}

/* x OP s for a binary op and a number s wrapped as a scalar of x's dtype (what the composites
   and derivatives write as x > 0, x * 2, ...). NULL in, NULL out. */
static tensor *tensor__op_scalar(tensor_op op, tensor *x, double s) {
    if (!x) return NULL;
    tensor *b = tensor__wrapped_scalar(tensor__ops[op].fn, s, x->dtype);
    tensor *r = b ? tensor__binary(op, x, b) : NULL;
    tensor_free(b);
    return r;
}

/* ---- temporaries of the composites ----
   A composite chains library calls, each of which takes NULL (an earlier failure) and returns
   NULL, so it checks once at the end. Every intermediate goes through tensor__tmp, which keeps it
   for tensor__tmps_free; tensor__tmps_take hands the result out of the list. No allocation. */
#define TENSOR__TMPS_MAX 64
typedef struct { tensor *t[TENSOR__TMPS_MAX]; int n; } tensor__tmps;
static tensor *tensor__tmp(tensor__tmps *s, tensor *t) {
    if (!t) return NULL;
    if (s->n == TENSOR__TMPS_MAX) { TENSOR_ASSERT(!"tensor__tmp: too many temporaries"); tensor_free(t); return NULL; }
    s->t[s->n++] = t;
    return t;
}
static tensor *tensor__tmps_take(tensor__tmps *s, tensor *t) {
    for (int i = s->n - 1; t && i >= 0; i--)
        if (s->t[i] == t) { s->t[i] = NULL; return t; }
    return t;
}
static void tensor__tmps_free(tensor__tmps *s) {
    for (int i = 0; i < s->n; i++) tensor_free(s->t[i]);
    s->n = 0;
}

/* A composite's inner op failed: when it set the first error (none was set before, `had`), the
   message is recorded again under fn, so that it names the function the user called. */
static tensor *tensor__fail_as(const char *fn, bool had) {
    if (had || !tensor__error_set) return NULL;
    char inner[sizeof tensor__error_buf];
    memcpy(inner, tensor__error_buf, sizeof inner);
    inner[sizeof inner - 1] = 0;
    tensor__error_set = false;
    return tensor__fail(fn, "%s", inner);
}

static tensor *tensor__binary_scalar(tensor_op op, tensor *a, double s) {
    const char *fn = tensor__ops[op].fn;
    TENSOR__CHECK_ARG(fn, a);
    tensor_op base;
    switch (op) {
    case TENSOR_OP_add_scalar: base = TENSOR_OP_add; break;
    case TENSOR_OP_sub_scalar: base = TENSOR_OP_sub; break;
    case TENSOR_OP_mul_scalar: base = TENSOR_OP_mul; break;
    case TENSOR_OP_div_scalar: base = TENSOR_OP_div; break;
    default: base = TENSOR_OP_pow; break;
    }
    tensor_dtype out, compute;
    tensor_dtype common = op == TENSOR_OP_sub_scalar && a->dtype == TENSOR_BOOL ? TENSOR_BOOL : tensor__scalar_result_type(a->dtype, s);
    if (!tensor__elementwise_types(op, common, &out, &compute)) return NULL;
    if (op == TENSOR_OP_pow_scalar && tensor__is_int(a->dtype) && tensor__scalar_is_integral(s) && s < 0) /* as PyTorch */
        return tensor__fail(fn, "integers to negative integer powers are not allowed (%s tensor, exponent %g)", tensor__dtype_names[a->dtype], s);
    tensor *b = tensor__wrapped_scalar(fn, s, compute);
    if (!b) return NULL;
    tensor *r = tensor__binary_typed(base, a, b, out, compute);
    tensor_free(b);
    return r;
}

/* Generated front-ends for the UNARY, BINARY and SCALAR ops of the registry. */
#define TENSOR__FRONT_UNARY(name, params) TENSOR_API tensor *tensor_##name params { return tensor__unary(TENSOR_OP_##name, a, 0, 0); }
#define TENSOR__FRONT_BINARY(name, params) TENSOR_API tensor *tensor_##name params { return tensor__binary(TENSOR_OP_##name, a, b); }
#define TENSOR__FRONT_SCALAR(name, params) TENSOR_API tensor *tensor_##name params { return tensor__binary_scalar(TENSOR_OP_##name, a, s); }
#define TENSOR__FRONT_NONE(name, params)
#define TENSOR__FRONT_UNARY_P TENSOR__FRONT_NONE
#define TENSOR__FRONT_TERNARY TENSOR__FRONT_NONE
#define TENSOR__FRONT_INPLACE TENSOR__FRONT_NONE
#define TENSOR__FRONT_CREATE TENSOR__FRONT_NONE
#define TENSOR__FRONT_REDUCE TENSOR__FRONT_NONE
#define TENSOR__FRONT_SHAPE TENSOR__FRONT_NONE
#define TENSOR__FRONT_INDEX TENSOR__FRONT_NONE
#define TENSOR__FRONT_LINALG TENSOR__FRONT_NONE
#define TENSOR__FRONT_NN TENSOR__FRONT_NONE
#define TENSOR__FRONT_LOSS TENSOR__FRONT_NONE
#define TENSOR__FRONT(name, kind, impl, types, grad, params, doc) TENSOR__FRONT_##kind(name, params)
TENSOR_OPS(TENSOR__FRONT)

/* Unary ops with parameters. Integer inputs with a fractional bound compute in f32 (PyTorch's
   promotion with a float scalar). */
static tensor *tensor__unary_bounds(tensor_op op, tensor *a, double lo, double hi) {
    const char *fn = tensor__ops[op].fn;
    TENSOR__CHECK_ARG(fn, a);
    if (!tensor__is_float(a->dtype) && a->dtype != TENSOR_BOOL &&
        ((lo == lo && !isinf(lo) && !tensor__scalar_is_integral(lo)) || (hi == hi && !isinf(hi) && !tensor__scalar_is_integral(hi)))) {
        tensor *f = tensor__contiguous_copy(fn, a, TENSOR_F32);
        tensor *r = f ? tensor__unary(op, f, lo, hi) : NULL;
        tensor_free(f);
        return r;
    }
    return tensor__unary(op, a, lo, hi);
}
TENSOR_API tensor *tensor_leaky_relu(tensor *a, double slope) { return tensor__unary(TENSOR_OP_leaky_relu, a, slope, 0); }
TENSOR_API tensor *tensor_elu(tensor *a, double alpha) { return tensor__unary(TENSOR_OP_elu, a, alpha, 0); }
/* hardtanh keeps an integer dtype, its bounds converted to it (truncated), as PyTorch; an unsigned
   tensor refuses a negative bound. */
TENSOR_API tensor *tensor_hardtanh(tensor *a, double lo, double hi) {
    const char *fn = "tensor_hardtanh";
    TENSOR__CHECK_ARG(fn, a);
    if (a->dtype == TENSOR_BOOL) return tensor__fail(fn, "not supported for bool tensors");
    if (tensor__is_float(a->dtype)) return tensor__unary(TENSOR_OP_hardtanh, a, lo, hi);
    if (a->dtype == TENSOR_U8 && (lo < 0 || hi < 0)) return tensor__fail(fn, "cannot do hardtanh on an unsigned type with negative limits (%g, %g)", lo, hi);
    return tensor__unary(TENSOR_OP_hardtanh, a, lo == lo ? trunc(lo) : lo, hi == hi ? trunc(hi) : hi);
}
TENSOR_API tensor *tensor_clamp(tensor *a, double lo, double hi) { return tensor__unary_bounds(TENSOR_OP_clamp, a, lo, hi); }

/* ---- more unary ops with parameters (the ops PyTorch users reach for) ---- */
TENSOR_API tensor *tensor_logit(tensor *a, double eps) { return tensor__unary(TENSOR_OP_logit, a, eps, 0); }
TENSOR_API tensor *tensor_celu(tensor *a, double alpha) {
    if (alpha == 0) return tensor__fail("tensor_celu", "alpha cannot be 0 for CELU");
    return tensor__unary(TENSOR_OP_celu, a, alpha, 0);
}
/* v as a tensor of dtype d holds it (PyTorch compares a tensor with a scalar converted to its dtype:
   f32 0.3f <= threshold 0.3 is true there) */
static double tensor__scalar_as(double v, tensor_dtype d) {
    if (!tensor__is_float(d) || d == TENSOR_F64) return v;
    char buf[8];
    tensor__store_f64(buf, d, v);
    return tensor__load_f64(buf, d);
}
TENSOR_API tensor *tensor_hardshrink(tensor *a, double lambd) {
    TENSOR__CHECK_ARG("tensor_hardshrink", a);
    return tensor__unary(TENSOR_OP_hardshrink, a, tensor__scalar_as(lambd, a->dtype), 0);
}
TENSOR_API tensor *tensor_softshrink(tensor *a, double lambd) {
    TENSOR__CHECK_ARG("tensor_softshrink", a);
    if (!(lambd >= 0)) return tensor__fail("tensor_softshrink", "lambda must be greater or equal to 0, but found to be %g", lambd);
    return tensor__unary(TENSOR_OP_softshrink, a, tensor__scalar_as(lambd, a->dtype), 0);
}
/* threshold converts both scalars to the tensor's dtype (truncated for integers), as PyTorch */
TENSOR_API tensor *tensor_threshold(tensor *a, double threshold, double value) {
    TENSOR__CHECK_ARG("tensor_threshold", a);
    if (!tensor__is_float(a->dtype) && a->dtype != TENSOR_BOOL)
        return tensor__unary(TENSOR_OP_threshold, a, threshold == threshold ? trunc(threshold) : threshold, value == value ? trunc(value) : value);
    return tensor__unary(TENSOR_OP_threshold, a, tensor__scalar_as(threshold, a->dtype), tensor__scalar_as(value, a->dtype));
}
/* clamp_min and clamp_max: clamp with one bound (its dtype rules and gradient); a bool tensor
   counts as int64 (PyTorch's bool with an integer scalar); a NaN bound gives NaN everywhere (a
   float tensor: 0 * a + NaN, gradient 0, as PyTorch's mask x >= NaN is false). */
static tensor *tensor__clamp_one(const char *fn, tensor *a, double lo, double hi) {
    TENSOR__CHECK_ARG(fn, a);
    double bound = lo == lo ? lo : hi;
    if (bound != bound) {
        tensor *f = tensor__is_float(a->dtype) ? NULL : tensor__contiguous_copy(fn, a, TENSOR_F32);
        if (!tensor__is_float(a->dtype) && !f) return NULL;
        tensor *z = tensor_mul_scalar(f ? f : a, 0);
        tensor *r = z ? tensor_add_scalar(z, NAN) : NULL;
        tensor_free(z);
        tensor_free(f);
        return r;
    }
    if (a->dtype == TENSOR_BOOL) {
        tensor *i = tensor__contiguous_copy(fn, a, TENSOR_I64);
        tensor *r = i ? tensor_clamp(i, lo, hi) : NULL;
        tensor_free(i);
        return r;
    }
    return tensor_clamp(a, lo, hi);
}
TENSOR_API tensor *tensor_clamp_min(tensor *a, double min) { return tensor__clamp_one("tensor_clamp_min", a, min, NAN); }
TENSOR_API tensor *tensor_clamp_max(tensor *a, double max) { return tensor__clamp_one("tensor_clamp_max", a, NAN, max); }

/* clamp with tensor bounds: two where()s, so the dtype is the promoted one of a and the bounds and
   the gradient goes where the result came from: to a where min <= a <= max, to min where a < min
   (unless max then wins), to max where the result is max, as PyTorch's clamp backward; a NaN bound
   is taken (the comparison is widened by isnan), so it gives NaN as PyTorch. */
static tensor *tensor__clamp_bound(tensor__tmps *s, tensor *r, tensor *bound, bool lower) {
    tensor *past = tensor__tmp(s, lower ? tensor_lt(r, bound) : tensor_gt(r, bound));
    tensor *take = past ? tensor__tmp(s, tensor_logical_or(past, tensor__tmp(s, tensor_isnan(bound)))) : NULL;
    return take ? tensor__tmp(s, tensor_where(take, bound, r)) : NULL;
}
static tensor *tensor__clamp_tensors(const char *fn, tensor *a, tensor *min, tensor *max) {
    TENSOR__CHECK_ARG(fn, a);
    if (!min && !max) return tensor__fail(fn, "at least one of min and max must be given");
    tensor *ins[3] = {a, min ? min : max, max ? max : min};
    if (!tensor__same_device(fn, 3, ins)) return NULL;
    if (a->dtype == TENSOR_BOOL && (!min || min->dtype == TENSOR_BOOL) && (!max || max->dtype == TENSOR_BOOL))
        return tensor__fail(fn, "not implemented for bool tensors");
    bool had = tensor__error_set;
    tensor__tmps s = {{0}, 0};
    tensor *r = a;
    if (min) r = tensor__clamp_bound(&s, r, min, true);
    if (max && r) r = tensor__clamp_bound(&s, r, max, false);
    tensor__tmps_take(&s, r);
    tensor__tmps_free(&s);
    return r ? r : tensor__fail_as(fn, had);
}
TENSOR_API tensor *tensor_clamp_tensor(tensor *a, tensor *min, tensor *max) { return tensor__clamp_tensors("tensor_clamp_tensor", a, min, max); }
TENSOR_API tensor *tensor_clamp_min_tensor(tensor *a, tensor *min) {
    if (!min) return tensor__null_arg("tensor_clamp_min_tensor", "min");
    return tensor__clamp_tensors("tensor_clamp_min_tensor", a, min, NULL);
}
TENSOR_API tensor *tensor_clamp_max_tensor(tensor *a, tensor *max) {
    if (!max) return tensor__null_arg("tensor_clamp_max_tensor", "max");
    return tensor__clamp_tensors("tensor_clamp_max_tensor", a, NULL, max);
}

/* The finite extremes of a floating dtype (nan_to_num's defaults for the infinities). */
static double tensor__dtype_max(tensor_dtype d) {
    switch (d) {
    case TENSOR_F16: return 65504.0;
    case TENSOR_BF16: return 3.38953138925153547590e38;
    case TENSOR_F32: return 3.40282346638528859812e38;
    default: return 1.79769313486231570815e308;
    }
}
/* nan_to_num: NaN -> nan, +inf -> posinf, -inf -> neginf; a NaN argument stands for PyTorch's None
   (nan 0, the infinities the dtype's largest finite values). Integer and bool tensors come back
   as a copy. Composite: three wheres with 0-dim constants, so the gradient is g where x is finite
   and 0 elsewhere (PyTorch's), and every device that has where runs it. */
static tensor *tensor__full_on(int ndim, const int64_t *shape, double v, tensor_dtype dtype, tensor_device device);
static tensor *tensor__replace_where(tensor *mask, tensor *a, double v) {
    if (!mask || !a) return NULL;
    tensor *c = tensor__full_on(0, NULL, v, a->dtype, a->storage->device);
    tensor *r = c ? tensor_where(mask, c, a) : NULL;
    tensor_free(c);
    return r;
}
TENSOR_API tensor *tensor_nan_to_num(tensor *a, double nan, double posinf, double neginf) {
    const char *fn = "tensor_nan_to_num";
    TENSOR__CHECK_ARG(fn, a);
    if (!tensor__is_float(a->dtype)) return tensor_clone(a);
    double big = tensor__dtype_max(a->dtype);
    if (nan != nan) nan = 0;
    if (posinf != posinf) posinf = big;
    if (neginf != neginf) neginf = -big;
    tensor *m1 = tensor_isnan(a), *r1 = tensor__replace_where(m1, a, nan);
    tensor *m2 = tensor_isposinf(a), *r2 = tensor__replace_where(m2, r1, posinf);
    tensor *m3 = tensor_isneginf(a), *r3 = tensor__replace_where(m3, r2, neginf);
    tensor_free(m1);
    tensor_free(r1);
    tensor_free(m2);
    tensor_free(r2);
    tensor_free(m3);
    return r3;
}

TENSOR_API tensor *tensor_where(tensor *cond, tensor *a, tensor *b) {
    const char *fn = "tensor_where";
    TENSOR__CHECK_ARG(fn, cond);
    TENSOR__CHECK_ARG(fn, a);
    TENSOR__CHECK_ARG(fn, b);
    if (cond->dtype != TENSOR_BOOL) return tensor__fail(fn, "condition must be a bool tensor, got %s", tensor__dtype_names[cond->dtype]);
    tensor *ins[3] = {cond, a, b};
    tensor_device dev;
    if (!tensor__elementwise_device(fn, 3, ins, &dev)) return NULL;
    int nd;
    int64_t s1[TENSOR_MAX_DIMS], s2[TENSOR_MAX_DIMS];
    if (!tensor__broadcast_shapes(fn, a->ndim, a->shape, b->ndim, b->shape, &nd, s1)) return NULL;
    if (!tensor__broadcast_shapes(fn, cond->ndim, cond->shape, nd, s1, &nd, s2)) return NULL;
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_where);
    c.n_in = 3;
    c.in[0] = cond;
    c.in[1] = a;
    c.in[2] = b;
    c.compute = tensor__result_type(2, ins + 1);
    c.out = tensor__new(fn, nd, s2, c.compute, dev);
    return c.out ? tensor__dispatch(&c) : NULL;
}

/* ---- in place: these return their first argument (the same handle, not a new one) ---- */

/* Refuses writes into tensors an autograd graph depends on (see >>autograd). */
static bool tensor__check_inplace(const char *fn, tensor *a);

/* The broadcast shape (nd, shape) of an in-place op's operands is a's own shape: a cannot grow. */
static bool tensor__broadcasts_into(int nd, const int64_t *shape, const tensor *a) {
    if (nd != a->ndim) return false;
    for (int i = 0; i < nd; i++) if (shape[i] != a->shape[i]) return false;
    return true;
}

/* A write into a view where several elements share one memory location (an expanded view) would
   depend on the order of the writes: refused, as PyTorch does (fill_ and zero_ write one value
   everywhere, so they allow it, as PyTorch's do). */
static bool tensor__check_no_overlap(const char *fn, const tensor *a) {
    for (int d = 0; d < a->ndim; d++)
        if (a->strides[d] == 0 && a->shape[d] > 1) {
            tensor__fail(fn, "more than one element of the written-to tensor (shape %s, an expanded view) refers to a single memory location; clone it first", tensor__shape_of(a));
            return false;
        }
    return true;
}

static tensor *tensor__inplace_run(tensor__call *c, tensor *a) {
    c->out = a;
    tensor__kernel_fn k = tensor__kernels[c->op][a->storage->device];
    if (!k) return tensor__fail(c->fn, "%s has no kernel on %s in this build", tensor__ops[c->op].name, tensor__device_name(a->storage->device));
    if (k(c)) return NULL;
    a->storage->version++;
    return a;
}

static int tensor__cpu_add_(tensor__call *c) { c->compute = c->out->dtype; return tensor__cpu_add(c); }
TENSOR_API tensor *tensor_add_(tensor *a, tensor *b) {
    const char *fn = "tensor_add_";
    TENSOR__CHECK_ARG(fn, a);
    TENSOR__CHECK_ARG(fn, b);
    tensor *ins[2] = {a, b};
    if (!tensor__same_device(fn, 2, ins) || !tensor__check_no_overlap(fn, a) || !tensor__check_inplace(fn, a)) return NULL;
    int nd;
    int64_t shape[TENSOR_MAX_DIMS];
    if (!tensor__broadcast_shapes(fn, a->ndim, a->shape, b->ndim, b->shape, &nd, shape)) return NULL;
    if (!tensor__broadcasts_into(nd, shape, a))
        return tensor__fail(fn, "shape %s of b does not broadcast to the shape %s of a", tensor__shape_of(b), tensor__shape_of(a));
    if (a->dtype == TENSOR_BOOL && b->dtype != TENSOR_BOOL) return tensor__fail(fn, "cannot add %s into a bool tensor", tensor__dtype_names[b->dtype]);
    if (!tensor__is_float(a->dtype) && tensor__is_float(b->dtype)) return tensor__fail(fn, "result type %s cannot be cast to %s in place", tensor__dtype_names[b->dtype], tensor__dtype_names[a->dtype]);
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_add_);
    c.n_in = 2;
    c.in[0] = a;
    c.in[1] = b;
    return tensor__inplace_run(&c, a);
}

static int tensor__cpu_mul_scalar_(tensor__call *c) {
    c->compute = c->out->dtype;
    tensor *s = tensor__wrapped_scalar(c->fn, c->p[0], c->out->dtype);
    if (!s) return 1;
    c->n_in = 2;
    c->in[1] = s;
    int rc = tensor__cpu_mul(c);
    tensor_free(s);
    return rc;
}
TENSOR_API tensor *tensor_mul_scalar_(tensor *a, double s) {
    const char *fn = "tensor_mul_scalar_";
    TENSOR__CHECK_ARG(fn, a);
    if (!tensor__check_no_overlap(fn, a) || !tensor__check_inplace(fn, a)) return NULL;
    if (a->dtype == TENSOR_BOOL || (!tensor__is_float(a->dtype) && !tensor__scalar_is_integral(s)))
        return tensor__fail(fn, "cannot multiply the %s tensor by %g in place", tensor__dtype_names[a->dtype], s);
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_mul_scalar_);
    c.n_in = 1;
    c.in[0] = a;
    c.p[0] = s;
    return tensor__inplace_run(&c, a);
}

static int tensor__cpu_copy_(tensor__call *c) { tensor__copy_into(c->out, c->in[1]); return 0; }
TENSOR_API tensor *tensor_copy_(tensor *dst, tensor *src) {
    const char *fn = "tensor_copy_";
    TENSOR__CHECK_ARG(fn, dst);
    TENSOR__CHECK_ARG(fn, src);
    tensor *ins[2] = {dst, src};
    if (!tensor__same_device(fn, 2, ins) || !tensor__check_no_overlap(fn, dst) || !tensor__check_inplace(fn, dst)) return NULL;
    int nd;
    int64_t shape[TENSOR_MAX_DIMS];
    if (!tensor__broadcast_shapes(fn, dst->ndim, dst->shape, src->ndim, src->shape, &nd, shape) || !tensor__broadcasts_into(nd, shape, dst))
        return tensor__fail(fn, "source shape %s does not broadcast to the destination shape %s", tensor__shape_of(src), tensor__shape_of(dst));
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_copy_);
    c.n_in = 2;
    c.in[0] = dst;
    c.in[1] = src;
    return tensor__inplace_run(&c, dst);
}

typedef struct { char elem[8]; size_t size; bool zero; } tensor__fill_ctx;
/* One row of a fill: memset for zero bits in a contiguous row, else stores of a fixed size (a
   memcpy of f->size bytes per element was a call, 3 ns: tensor_zeros of 16M floats ran at
   1.3 GB/s; one of a constant size compiles to a single store, and writes no typed lvalue). */
static void tensor__fill_loop(char **p, const int64_t *s, int64_t n, void *ctx) {
    const tensor__fill_ctx *f = (const tensor__fill_ctx *)ctx;
    char *o = p[0];
    int64_t st = s[0];
    if (f->zero && st == (int64_t)f->size) { memset(o, 0, (size_t)n * f->size); return; }
    switch (f->size) {
    case 8: for (int64_t i = 0; i < n; i++) memcpy(o + i * st, f->elem, 8); return;
    case 4: for (int64_t i = 0; i < n; i++) memcpy(o + i * st, f->elem, 4); return;
    case 2: for (int64_t i = 0; i < n; i++) memcpy(o + i * st, f->elem, 2); return;
    default: for (int64_t i = 0; i < n; i++) o[i * st] = f->elem[0]; return;
    }
}
/* Fills t (any layout) with value converted to t's dtype. */
static void tensor__fill(tensor *t, double value) {
    tensor__fill_ctx f;
    f.size = tensor__dtype_sizes[t->dtype];
    memset(f.elem, 0, sizeof f.elem);
    tensor__store_f64(f.elem, t->dtype, value);
    static const char zeros[8] = {0};
    f.zero = memcmp(f.elem, zeros, sizeof zeros) == 0;
    tensor__iter it;
    tensor__iter_init(&it, 1, &t, t->ndim, t->shape);
    tensor__iter_run(&it, tensor__fill_loop, &f);
}
static int tensor__cpu_fill_(tensor__call *c) { tensor__fill(c->out, c->p[0]); return 0; }
static int tensor__cpu_zero_(tensor__call *c) { tensor__fill(c->out, 0); return 0; }
TENSOR_API tensor *tensor_fill_(tensor *a, double value) {
    TENSOR__CHECK_ARG("tensor_fill_", a);
    if (!tensor__check_inplace("tensor_fill_", a)) return NULL;
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_fill_);
    c.p[0] = value;
    return tensor__inplace_run(&c, a);
}
/* t moved to device (a constant that a composite or a derivative made on the CPU: positions, an
   identity, a mask); t itself when it is there already. The CPU handle stays in the caller's
   scope. */
static TENSOR__UNUSED tensor *tensor__on(tensor *t, tensor_device device) { return !t || t->storage->device == device ? t : tensor_to_device(t, device); }
/* A tensor of shape filled with v on device (the derivatives' zeros and ones on the graph's device). */
static tensor *tensor__full_on(int ndim, const int64_t *shape, double v, tensor_dtype dtype, tensor_device device) {
    if (device == TENSOR_CPU) return tensor_full(ndim, shape, v, dtype);
    tensor *t = tensor__new("tensor_full", ndim, shape, dtype, device);
    if (t && !tensor_fill_(t, v)) { tensor_free(t); return NULL; }
    return t;
}
TENSOR_API tensor *tensor_zero_(tensor *a) {
    TENSOR__CHECK_ARG("tensor_zero_", a);
    if (!tensor__check_inplace("tensor_zero_", a)) return NULL;
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_zero_);
    return tensor__inplace_run(&c, a);
}

/* ---- misc: lerp, addcmul, addcdiv (kernels of the ternary formulas of >>formulas), isclose,
   allclose, equal (composites of the ops above) ---- */

/* t as dtype d, kept in s (an alias when it already is). */
static tensor *tensor__misc_as(tensor__tmps *s, tensor *t, tensor_dtype d) { return tensor__tmp(s, tensor_to_dtype(t, d)); }

/* The CPU kernels of the ternary formulas (>>formulas): ptr[0] the output, ptr[1..3] the inputs,
   each converted from its own dtype; f32 and f64 operands read and written directly. */
#define TENSOR__TERNARY(name, FEXPR, IEXPR)                                                                \
    static void tensor__loop_##name(char **ptr, const int64_t *st, int64_t n, void *vk) {                \
        tensor__ew_ctx *k = (tensor__ew_ctx *)vk;                                                        \
        char *o = ptr[0], *a = ptr[1], *b = ptr[2], *w = ptr[3];                                         \
        double p0 = k->p0;                                                                               \
        (void)p0;                                                                                        \
        bool all32 = k->in[0] == TENSOR_F32 && k->in[1] == TENSOR_F32 && k->in[2] == TENSOR_F32;         \
        bool all64 = k->in[0] == TENSOR_F64 && k->in[1] == TENSOR_F64 && k->in[2] == TENSOR_F64;         \
        if (k->int_compute) {                                                                            \
            for (int64_t i = 0; i < n; i++) {                                                            \
                int64_t x = tensor__load_i64(a + i * st[1], k->in[0]);                                   \
                int64_t y = tensor__load_i64(b + i * st[2], k->in[1]);                                   \
                int64_t z = tensor__load_i64(w + i * st[3], k->in[2]);                                   \
                (void)x; (void)y; (void)z;                                                               \
                tensor__store_i64(o + i * st[0], k->out, (int64_t)(IEXPR));                              \
            }                                                                                            \
        } else if (k->out == TENSOR_F32 && all32) {                                                      \
            for (int64_t i = 0; i < n; i++) {                                                            \
                double x = *(const float *)(a + i * st[1]), y = *(const float *)(b + i * st[2]);         \
                double z = *(const float *)(w + i * st[3]);                                              \
                *(float *)(o + i * st[0]) = (float)(FEXPR);                                              \
            }                                                                                            \
        } else if (k->out == TENSOR_F64 && all64) {                                                      \
            for (int64_t i = 0; i < n; i++) {                                                            \
                double x = *(const double *)(a + i * st[1]), y = *(const double *)(b + i * st[2]);       \
                double z = *(const double *)(w + i * st[3]);                                             \
                *(double *)(o + i * st[0]) = (FEXPR);                                                    \
            }                                                                                            \
        } else {                                                                                         \
            for (int64_t i = 0; i < n; i++) {                                                            \
                double x = tensor__load_f64(a + i * st[1], k->in[0]);                                    \
                double y = tensor__load_f64(b + i * st[2], k->in[1]);                                    \
                double z = tensor__load_f64(w + i * st[3], k->in[2]);                                    \
                tensor__store_f64(o + i * st[0], k->out, (double)(FEXPR));                               \
            }                                                                                            \
        }                                                                                                \
    }                                                                                                    \
    static int tensor__cpu_##name(tensor__call *c) { return tensor__run_elementwise(c, tensor__loop_##name, TENSOR_OP_##name); }
TENSOR__TERNARY_FORMULAS(TENSOR__TERNARY)

/* out = op(a, b, w), the three broadcast, computing in and giving dtype dt; p0 the op's number. */
static tensor *tensor__ternary(tensor_op op, const char *fn, tensor *a, tensor *b, tensor *w, tensor_dtype dt, double p0) {
    tensor *ins[3] = {a, b, w};
    tensor_device dev;
    if (!tensor__elementwise_device(fn, 3, ins, &dev)) return NULL;
    int nd;
    int64_t s1[TENSOR_MAX_DIMS], s2[TENSOR_MAX_DIMS];
    if (!tensor__broadcast_shapes(fn, a->ndim, a->shape, b->ndim, b->shape, &nd, s1)) return NULL;
    if (!tensor__broadcast_shapes(fn, nd, s1, w->ndim, w->shape, &nd, s2)) return NULL;
    tensor__call c;
    tensor__call_init(&c, op);
    c.fn = fn;
    c.n_in = 3;
    c.in[0] = a;
    c.in[1] = b;
    c.in[2] = w;
    c.compute = dt;
    c.p[0] = p0;
    c.out = tensor__new(fn, nd, s2, dt, dev);
    return c.out ? tensor__dispatch(&c) : NULL;
}

/* start, end and weight (NULL: a number) of one floating dtype, as PyTorch's lerp requires. */
static bool tensor__lerp_check(const char *fn, tensor *start, tensor *end, tensor *weight) {
    if (end->dtype != start->dtype) { tensor__fail(fn, "expected dtype %s for `end` but got dtype %s", tensor__dtype_names[start->dtype], tensor__dtype_names[end->dtype]); return false; }
    if (weight && weight->dtype != start->dtype) { tensor__fail(fn, "expected dtype %s for `weight` but got dtype %s", tensor__dtype_names[start->dtype], tensor__dtype_names[weight->dtype]); return false; }
    if (!tensor__is_float(start->dtype)) { tensor__fail(fn, "not implemented for %s tensors (floating dtypes only)", tensor__dtype_names[start->dtype]); return false; }
    return true;
}
/* lerp: PyTorch's formula (tensor__lerp) in double, rounded once to the dtype. */
TENSOR_API tensor *tensor_lerp(tensor *start, tensor *end, tensor *weight) {
    const char *fn = "tensor_lerp";
    TENSOR__CHECK_ARG(fn, start);
    TENSOR__CHECK_ARG(fn, end);
    TENSOR__CHECK_ARG(fn, weight);
    if (!tensor__lerp_check(fn, start, end, weight)) return NULL;
    return tensor__ternary(TENSOR_OP_lerp, fn, start, end, weight, start->dtype, 0);
}
/* lerp with a number: lerp's kernel with the weight as a 0-dim CPU tensor (passed by value to any
   device), f32 below f64 as PyTorch's weight in f32, f16 and bf16 is. */
TENSOR_API tensor *tensor_lerp_scalar(tensor *start, tensor *end, double weight) {
    const char *fn = "tensor_lerp_scalar";
    TENSOR__CHECK_ARG(fn, start);
    TENSOR__CHECK_ARG(fn, end);
    if (!tensor__lerp_check(fn, start, end, NULL)) return NULL;
    tensor *w = tensor__wrapped_scalar(fn, weight, start->dtype == TENSOR_F64 ? TENSOR_F64 : TENSOR_F32);
    tensor *r = w ? tensor__ternary(TENSOR_OP_lerp, fn, start, end, w, start->dtype, 0) : NULL;
    tensor_free(w);
    return r;
}

/* addcmul and addcdiv: the three inputs promoted to one dtype (PyTorch's ternary ops), each read
   in its own dtype by the kernel; an integer result truncates value, as PyTorch's conversion of
   the scalar to the dtype does. */
static tensor *tensor__addc(tensor_op op, tensor *t, tensor *t1, tensor *t2, double value) {
    const char *fn = tensor__ops[op].fn;
    TENSOR__CHECK_ARG(fn, t);
    TENSOR__CHECK_ARG(fn, t1);
    TENSOR__CHECK_ARG(fn, t2);
    if (op == TENSOR_OP_addcdiv && !tensor__is_float(t1->dtype) && !tensor__is_float(t2->dtype))
        return tensor__fail(fn, "integer division with addcdiv is not supported (tensor1 %s, tensor2 %s): use t + value * trunc(tensor1 / tensor2) or true division of floats", tensor__dtype_names[t1->dtype], tensor__dtype_names[t2->dtype]);
    tensor *ins[3] = {t, t1, t2};
    tensor_dtype dt = tensor__result_type(3, ins);
    if (dt == TENSOR_BOOL) return tensor__fail(fn, "not implemented for bool tensors");
    if (!tensor__is_float(dt) && value == value) value = trunc(value);
    return tensor__ternary(op, fn, t, t1, t2, dt, value);
}
TENSOR_API tensor *tensor_addcmul(tensor *t, tensor *tensor1, tensor *tensor2, double value) { return tensor__addc(TENSOR_OP_addcmul, t, tensor1, tensor2, value); }
TENSOR_API tensor *tensor_addcdiv(tensor *t, tensor *tensor1, tensor *tensor2, double value) { return tensor__addc(TENSOR_OP_addcdiv, t, tensor1, tensor2, value); }

/* PyTorch's isclose: a == b (NaN == NaN too with equal_nan), or |a - b| finite and at most
   atol + |rtol b|, computed in a's dtype, integers and bool converted to f32 first (as PyTorch's:
   2^24 + 1 is close to 2^24 with atol 0.5, and u8 differences do not wrap). */
TENSOR_API tensor *tensor_isclose(tensor *a, tensor *b, double rtol, double atol, bool equal_nan) {
    const char *fn = "tensor_isclose";
    TENSOR__CHECK_ARG(fn, a);
    TENSOR__CHECK_ARG(fn, b);
    if (a->dtype != b->dtype) return tensor__fail(fn, "%s did not match %s (a and b must have one dtype)", tensor__dtype_names[a->dtype], tensor__dtype_names[b->dtype]);
    if (!(rtol >= 0)) return tensor__fail(fn, "rtol must be greater than or equal to zero, but got %g", rtol);
    if (!(atol >= 0)) return tensor__fail(fn, "atol must be greater than or equal to zero, but got %g", atol);
    tensor *ins[2] = {a, b};
    int nd;
    int64_t shape[TENSOR_MAX_DIMS];
    if (!tensor__same_device(fn, 2, ins) || !tensor__broadcast_shapes(fn, a->ndim, a->shape, b->ndim, b->shape, &nd, shape)) return NULL;
    bool fl = tensor__is_float(a->dtype);
    tensor__tmps s = {{0}, 0};
    tensor *close = tensor__tmp(&s, tensor_eq(a, b));
    if (equal_nan && fl)
        close = tensor__tmp(&s, tensor_logical_or(close, tensor__tmp(&s, tensor_logical_and(tensor__tmp(&s, tensor_isnan(a)), tensor__tmp(&s, tensor_isnan(b))))));
    if (rtol != 0 || atol != 0) {
        tensor *ca = fl ? a : tensor__misc_as(&s, a, TENSOR_F32), *cb = fl ? b : tensor__misc_as(&s, b, TENSOR_F32);
        tensor *allowed = tensor__tmp(&s, tensor_add_scalar(tensor__tmp(&s, tensor_abs(tensor__tmp(&s, tensor_mul_scalar(cb, rtol)))), atol));
        tensor *actual = tensor__tmp(&s, tensor_abs(tensor__tmp(&s, tensor_sub(ca, cb))));
        tensor *ok = tensor__tmp(&s, tensor_logical_and(tensor__tmp(&s, tensor_le(actual, allowed)), tensor__tmp(&s, tensor_isfinite(actual))));
        close = tensor__tmp(&s, tensor_logical_or(close, ok));
    }
    tensor *r = tensor__tmps_take(&s, close);
    tensor__tmps_free(&s);
    return r;
}

/* A 0-dim bool result on any device as a C bool; false with the error kept on failure. */
static bool tensor__misc_truth(tensor *t) {
    if (!t) return false;
    double v = tensor_item(t);
    tensor_free(t);
    return v == v && v != 0;
}
TENSOR_API bool tensor_allclose(tensor *a, tensor *b, double rtol, double atol, bool equal_nan) {
    tensor *c = tensor_isclose(a, b, rtol, atol, equal_nan);
    if (!c) return false;
    tensor *all = tensor_all(c);
    tensor_free(c);
    return tensor__misc_truth(all);
}
/* torch.equal: the same shape and equal values (compared after promotion; NaN is unequal). */
TENSOR_API bool tensor_equal(tensor *a, tensor *b) {
    const char *fn = "tensor_equal";
    if (!a) { tensor__null_arg(fn, "a"); return false; }
    if (!b) { tensor__null_arg(fn, "b"); return false; }
    tensor *ins[2] = {a, b};
    if (!tensor__same_device(fn, 2, ins)) return false;
    if (a->ndim != b->ndim) return false;
    for (int d = 0; d < a->ndim; d++) if (a->shape[d] != b->shape[d]) return false;
    tensor *e = tensor_eq(a, b);
    tensor *all = e ? tensor_all(e) : NULL;
    tensor_free(e);
    return tensor__misc_truth(all);
}
