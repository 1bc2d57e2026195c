/* The API fuzzer: decodes its input bytes into a sequence of public calls over a pool of 8 tensor
   slots (creation with odd shapes and every dtype, views, the registry's ops with often invalid
   arguments, autograd, optimizers, scopes) and checks the results through the API only: a failed
   call leaves a message, a returned tensor has a sane shape, tensor_shutdown frees everything.
   Built two ways (make fuzz, make test):
     clang -fsanitize=fuzzer,address,undefined -DFUZZ_LIBFUZZER tests/fuzz/fuzz_api.c   libFuzzer target
     cc tests/fuzz/fuzz_api.c -o replay; replay [--each] FILE|FOLDER ...               replays inputs
   The replay prints `ok NAME` / `FAIL NAME` lines for tests/run.sh: one per folder, or one per file
   after --each (the regressions). A file may pack several inputs, each ended by the line
   `--fz--` (fz_sep): the committed corpus is libFuzzer's -set_cover_merge=1 of long runs, packed into a
   few dozen files; `replay --unpack DIR FILES` writes them out one a file again.
   One action arms tensor_test_fail_alloc, so a later call runs out of memory somewhere inside.
   Huge sizes (2^40..2^62) appear in shapes for the library to refuse; a creator is never asked
   for a middle size that it would really allocate (fz_shape_ok), and the allocator refuses
   requests over 4 MiB. */
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Requests above 4 MiB fail, in both builds alike: pool tensors are small, so only huge shapes
   and the products of pool tensors (an outer product, attention's scores) ask for that much; the
   huge ones must be refused, not served by overcommitted memory, and the products would make an
   input take seconds under the sanitizers (a 32 MiB cap let one attention call take 8 s, a
   libFuzzer timeout), where failing them tests the out-of-memory paths instead. */
#define FZ_MALLOC_CAP ((size_t)4 << 20)
static void *fz_malloc(size_t n) { return n > FZ_MALLOC_CAP ? NULL : malloc(n); }
#define TENSOR_MALLOC(n) fz_malloc(n)
#define TENSOR_FREE(p) free(p)
#define TENSOR_TEST_HOOKS /* tensor_test_fail_alloc: an action fails one memory request */
#define TENSOR_IMPLEMENTATION
#include "../../tensor.h"

#define FZ_SLOTS 8
#define FZ_CAP 4096 /* elements a pool tensor may have: each call stays cheap */

static void fz_fail(const char *what, int line) {
    fprintf(stderr, "fuzz_api.c:%d: check failed: %s (last error: %s)\n", line, what,
            tensor_last_error() ? tensor_last_error() : "none");
    abort();
}
#define FZ_CHECK(c) do { if (!(c)) fz_fail(#c, __LINE__); } while (0)

// ---- the input ----------------------------------------------------------------------------------
static const uint8_t *fz_p;
static size_t fz_n;
static uint8_t fz_u8(void) { if (!fz_n) return 0; fz_n--; return *fz_p++; }
static uint32_t fz_u32(void) { uint32_t v = fz_u8(); v |= (uint32_t)fz_u8() << 8; v |= (uint32_t)fz_u8() << 16; return v | (uint32_t)fz_u8() << 24; }
static uint64_t fz_u64(void) { uint64_t v = fz_u32(); return v | (uint64_t)fz_u32() << 32; }
static bool fz_bool(void) { return fz_u8() & 1; }

/* A dim: mostly in -4..7, sometimes far out. */
static int fz_dim(void) {
    uint8_t b = fz_u8();
    if (b < 240) return (int)(b % 12) - 4;
    static const int odd[] = {INT_MIN, INT_MAX, -9, 8, 9, 100, -100, INT_MIN + 1, -1000000, 1 << 30, 16, -8, -5, 12, 64, -65};
    return odd[b - 240];
}
/* A size for a shape: mostly 0..5, sometimes up to 16, sometimes huge (2^40..2^62) or negative. */
static int64_t fz_size(void) {
    uint8_t b = fz_u8();
    if (b < 200) return b % 6;
    if (b < 228) return b % 17;
    if (b < 251) return (int64_t)1 << (40 + (b - 228));
    static const int64_t odd[] = {INT64_MAX, INT64_MIN, -1, -2, (int64_t)1 << 31, (int64_t)1 << 32, INT32_MAX};
    return odd[b - 251];
}
/* An index, bound or count: mostly small, sometimes extreme. */
static int64_t fz_i64(void) {
    uint8_t b = fz_u8();
    if (b < 224) return (int64_t)(b % 16) - 6;
    static const int64_t odd[] = {INT64_MIN, INT64_MAX, INT64_MIN + 1, INT64_MAX - 1, (int64_t)1 << 62, -((int64_t)1 << 62),
                                  (int64_t)1 << 40, -((int64_t)1 << 40), INT32_MAX, INT32_MIN, (int64_t)INT32_MAX + 1,
                                  100, -100, 4096, 1 << 20, (int64_t)1 << 33, 64, -64, 1000, 17, 31, 32, 33, -17,
                                  (int64_t)1 << 53, -((int64_t)1 << 53), 255, 256, 65535, 65536, 9, -9};
    return odd[b - 224];
}
/* An int parameter of conv/pool (stride, padding, kernel, groups): mostly 0..4. */
static int fz_iparam(void) {
    uint8_t b = fz_u8();
    if (b < 232) return b % 5;
    static const int odd[] = {-1, -2, INT_MAX, INT_MIN, 1 << 30, 1 << 16, 1000, 7, 8, 16, -1000, 1 << 20, 3, 2, 65536, INT_MAX - 1,
                              100, 5, 6, 9, 10, 12, 31, 64};
    return odd[b - 232];
}
static double fz_double(void) {
    uint8_t b = fz_u8();
    if (b < 128) return (double)(b % 16) / 4 - 1;
    static const double odd[] = {0.0, -0.0, 1.0, -1.0, 0.5, 2.0, 1e-5, 1e-8, 0.9, 0.999, 1e300, -1e300, 1e-310, 3.4e38,
                                 6.6e4, 1e20, -1e20, 9.3e18, -9.3e18, 2147483648.0, 4294967296.0, 0.1, 0.01, 10, 100};
    if (b < 128 + 25) return odd[b - 128];
    if (b < 160) return NAN;
    if (b < 168) return INFINITY;
    if (b < 176) return -INFINITY;
    if (b < 192) return (double)fz_i64();
    uint64_t u = fz_u64();
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}
static tensor_dtype fz_dtype(void) {
    uint8_t b = fz_u8();
    if (b < 248) return (tensor_dtype)(b % TENSOR_DTYPE_COUNT);
    static const int odd[] = {-1, 8, 9, 100, INT_MAX, INT_MIN, 255, -2};
    return (tensor_dtype)odd[b - 248];
}
/* A shape of 0..8 dims (sometimes 9 or -1: refused); shape has room for 16. */
static int fz_shape(int64_t *shape) {
    uint8_t b = fz_u8();
    int ndim = b < 250 ? (int)(b % 9) : b < 253 ? 9 : b < 255 ? -1 : 16;
    for (int i = 0; i < 16; i++) shape[i] = i < ndim ? fz_size() : 1;
    return ndim;
}
/* Elements of a shape, 0 if it has a zero or a negative size, INT64_MAX if past 2^62. */
static int64_t fz_numel(int ndim, const int64_t *shape) {
    int64_t n = 1;
    bool big = false;
    for (int i = 0; i < ndim && i < 16; i++) {
        if (shape[i] <= 0) return 0;
        if (big || shape[i] > ((int64_t)1 << 62) / n) big = true;
        else n *= shape[i];
    }
    return big ? INT64_MAX : n;
}
/* Whether a creator may be called with this shape: small, empty or invalid (cheap), or so huge
   that it must be refused (2^32 elements ask at least 4 GiB; a middle size would really fill
   memory, which tells nothing). */
static bool fz_shape_ok(int ndim, const int64_t *shape) {
    if (ndim < 0 || ndim > TENSOR_MAX_DIMS) return true;
    for (int i = 0; i < ndim; i++) if (shape[i] < 0) return true;
    int64_t n = fz_numel(ndim, shape);
    return n <= FZ_CAP || n >= ((int64_t)1 << 32);
}

// ---- the pool ----------------------------------------------------------------------------------
static tensor *slot[FZ_SLOTS];
static int slot_level[FZ_SLOTS]; /* the scope level that owns the handle (tensor_keep moves it out) */
static int depth;                /* scopes open */
static tensor_optim *optim[2];
static int64_t fz_errors;        /* the error handler's count */

static tensor *fz_tensor(void) {
    uint8_t b = fz_u8();
    return b % 16 == 15 ? NULL : slot[b % FZ_SLOTS];
}
static int fz_slot(void) { return fz_u8() % FZ_SLOTS; }
static bool fz_in_pool(const tensor *t) {
    for (int i = 0; i < FZ_SLOTS; i++) if (slot[i] == t) return true;
    return false;
}

/* What holds for any tensor the library returns. */
static void fz_check_tensor(tensor *t) {
    int nd = tensor_ndim(t);
    FZ_CHECK(nd >= 0 && nd <= TENSOR_MAX_DIMS);
    const int64_t *s = tensor_shape(t);
    FZ_CHECK(s != NULL || nd == 0);
    for (int i = 0; i < nd; i++) FZ_CHECK(s[i] >= 0);
    FZ_CHECK(tensor_dtype_size(tensor_get_dtype(t)) > 0);
    FZ_CHECK(tensor_get_device(t) == TENSOR_CPU);
}

/* Keeps a call's result in slot dst. A failure must leave a message; a success must not add one.
   Results over FZ_CAP elements (a broadcast view, a large product) are freed: ops on them would
   be slow, not wrong. */
static void fz_put(tensor *r, int dst, bool had_error) {
    if (!r) { FZ_CHECK(tensor_last_error() != NULL); return; }
    FZ_CHECK(had_error || tensor_last_error() == NULL);
    if (fz_in_pool(r)) return; /* an in-place op returns its argument */
    fz_check_tensor(r);
    if (tensor_numel(r) > FZ_CAP) { tensor_free(r); return; }
    tensor_free(slot[dst]);
    slot[dst] = r;
    slot_level[dst] = depth;
}
/* The same for int results: non-zero is a failure. */
static void fz_rc(int rc, bool had_error) {
    if (rc) FZ_CHECK(tensor_last_error() != NULL);
    else FZ_CHECK(had_error || tensor_last_error() == NULL);
}
#define FZ_ERR (tensor_last_error() != NULL)
#define FZ_PUT(dst, call) do { int fz_dst_ = (dst); bool fz_had_ = FZ_ERR; fz_put((call), fz_dst_, fz_had_); } while (0)

static void fz_on_error(const char *message, void *user) {
    FZ_CHECK(message && strlen(message) > 0);
    (*(int64_t *)user)++;
}

// ---- the op tables, by signature ----------------------------------------------------------------
typedef tensor *(*fz_unary)(tensor *);
static const fz_unary unary_ops[] = {
    tensor_neg, tensor_abs, tensor_sign, tensor_sqrt, tensor_rsqrt, tensor_square, tensor_reciprocal, tensor_exp,
    tensor_exp2, tensor_expm1, tensor_log, tensor_log2, tensor_log1p, tensor_sin, tensor_cos, tensor_tan, tensor_asin,
    tensor_acos, tensor_atan, tensor_sinh, tensor_cosh, tensor_tanh, tensor_asinh, tensor_acosh, tensor_atanh,
    tensor_sigmoid, tensor_logsigmoid, tensor_relu, tensor_relu6, tensor_gelu, tensor_gelu_tanh, tensor_silu,
    tensor_mish, tensor_softplus, tensor_erf, tensor_floor, tensor_ceil, tensor_round, tensor_trunc,
    tensor_logical_not, tensor_isnan, tensor_isinf, tensor_clone, tensor_contiguous, tensor_sum_all, tensor_mean_all,
    tensor_max_all, tensor_min_all, tensor_all, tensor_any, tensor_detach, tensor_zero_};
typedef tensor *(*fz_binary)(tensor *, tensor *);
static const fz_binary binary_ops[] = {
    tensor_add, tensor_sub, tensor_mul, tensor_div, tensor_pow, tensor_maximum, tensor_minimum, tensor_atan2,
    tensor_fmod, tensor_eq, tensor_ne, tensor_lt, tensor_le, tensor_gt, tensor_ge, tensor_logical_and,
    tensor_logical_or, tensor_matmul, tensor_cross_entropy, tensor_nll_loss, tensor_mse_loss,
    tensor_binary_cross_entropy_with_logits, tensor_embedding, tensor_add_, tensor_copy_};
typedef tensor *(*fz_scalar)(tensor *, double);
static const fz_scalar scalar_ops[] = {
    tensor_add_scalar, tensor_sub_scalar, tensor_mul_scalar, tensor_div_scalar, tensor_pow_scalar, tensor_leaky_relu,
    tensor_elu, tensor_mul_scalar_, tensor_fill_, tensor_kaiming_uniform_, tensor_xavier_uniform_};
typedef tensor *(*fz_scalar2)(tensor *, double, double);
static const fz_scalar2 scalar2_ops[] = {tensor_hardtanh, tensor_clamp, tensor_uniform_, tensor_normal_};
typedef tensor *(*fz_reduce)(tensor *, int, bool);
static const fz_reduce reduce_ops[] = {tensor_sum, tensor_mean, tensor_prod, tensor_max, tensor_min, tensor_argmax,
                                       tensor_argmin, tensor_logsumexp};
typedef tensor *(*fz_dimop)(tensor *, int);
static const fz_dimop dim_ops[] = {tensor_cumsum, tensor_softmax, tensor_log_softmax, tensor_squeeze, tensor_unsqueeze, tensor_flip};
typedef tensor *(*fz_shapeop)(tensor *, int, const int64_t *);
static const fz_shapeop shape_ops[] = {tensor_reshape, tensor_view, tensor_expand, tensor_repeat};
typedef tensor *(*fz_creator)(int, const int64_t *, tensor_dtype);
static const fz_creator creators[] = {tensor_empty, tensor_zeros, tensor_ones, tensor_rand, tensor_randn};
#define FZ_LEN(a) ((int)(sizeof(a) / sizeof((a)[0])))

// ---- actions --------------------------------------------------------------------------------------
/* A tensor from data: bytes of the input, a pattern of small integers (indices, classes), or
   zeros, in any dtype. *skipped when the shape is one not to ask for. */
static tensor *fz_from_data(bool *skipped) {
    int64_t shape[16];
    int ndim = fz_shape(shape);
    tensor_dtype dt = fz_dtype();
    uint8_t mode = fz_u8() % 4;
    if (!fz_shape_ok(ndim, shape)) { *skipped = true; return NULL; }
    int64_t n = fz_numel(ndim, shape);
    size_t es = tensor_dtype_size(dt) ? tensor_dtype_size(dt) : 8;
    size_t bytes = n <= FZ_CAP ? (size_t)n * es : 8;
    uint8_t *buf = (uint8_t *)malloc(bytes ? bytes : 1);
    if (!buf) { *skipped = true; return NULL; }
    if (mode == 0) {
        memset(buf, 0, bytes);
    } else if (mode == 1) { /* raw bytes: NaNs, huge ints, bools other than 0 and 1 */
        uint8_t seed[32];
        int k = 1 + fz_u8() % 32;
        for (int i = 0; i < k; i++) seed[i] = fz_u8();
        for (size_t i = 0; i < bytes; i++) buf[i] = seed[i % (size_t)k];
    } else { /* small integers through f64, then converted: a second call */
        free(buf);
        int m = 2 + fz_u8() % 6, off = fz_u8() % 4;
        double *v = (double *)malloc(n <= FZ_CAP && n > 0 ? (size_t)n * sizeof(double) : sizeof(double));
        if (!v) { *skipped = true; return NULL; }
        for (int64_t i = 0; i < n && n <= FZ_CAP; i++) v[i] = (double)((i * 7 + off) % m) - (mode == 3 ? 1 : 0);
        tensor *f = tensor_from_data(v, ndim, shape, TENSOR_F64);
        free(v);
        tensor *r = tensor_to_dtype(f, dt);
        tensor_free(f);
        return r;
    }
    tensor *r = tensor_from_data(fz_u8() == 0xff ? NULL : buf, ndim, shape, dt);
    free(buf);
    return r;
}

static void fz_create(void) {
    int dst = fz_slot();
    uint8_t which = fz_u8() % 13;
    int64_t shape[16];
    bool had = FZ_ERR;
    tensor *r = NULL;
    switch (which) {
    case 0: case 1: case 2: case 3: case 4: {
        int ndim = fz_shape(shape);
        tensor_dtype dt = fz_dtype();
        if (!fz_shape_ok(ndim, shape)) return;
        r = creators[which](ndim, fz_u8() == 0xff ? NULL : shape, dt);
        break;
    }
    case 5: {
        int ndim = fz_shape(shape);
        double v = fz_double();
        tensor_dtype dt = fz_dtype();
        if (!fz_shape_ok(ndim, shape)) return;
        r = tensor_full(ndim, shape, v, dt);
        break;
    }
    case 6: { double v = fz_double(); r = tensor_scalar(v, fz_dtype()); break; }
    case 7: {
        bool skipped = false;
        r = fz_from_data(&skipped);
        if (skipped) return;
        break;
    }
    case 8: { /* arange: at most FZ_CAP values unless the count is past 2^32 */
        double start = fz_double(), end = fz_double(), step = fz_double();
        tensor_dtype dt = fz_dtype();
        double count = (end - start) / step;
        if (count > FZ_CAP && count < 4294967296.0) return;
        r = tensor_arange(start, end, step, dt);
        break;
    }
    case 9: {
        double a = fz_double(), b = fz_double();
        int64_t steps = fz_i64();
        tensor_dtype dt = fz_dtype();
        if (steps > FZ_CAP && steps < ((int64_t)1 << 32)) return;
        r = tensor_linspace(a, b, steps, dt);
        break;
    }
    case 10: {
        int64_t n = fz_i64();
        tensor_dtype dt = fz_dtype();
        if (n > 64 && n < 65536) return;
        r = tensor_eye(n, dt);
        break;
    }
    case 11: {
        int64_t lo = fz_i64(), hi = fz_i64();
        int ndim = fz_shape(shape);
        tensor_dtype dt = fz_dtype();
        if (!fz_shape_ok(ndim, shape)) return;
        r = tensor_randint(lo, hi, ndim, shape, dt);
        break;
    }
    default: {
        int64_t n = fz_i64();
        tensor_dtype dt = fz_dtype();
        if (n > FZ_CAP && n < ((int64_t)1 << 32)) return;
        r = tensor_randperm(n, dt);
        break;
    }
    }
    fz_put(r, dst, had);
}

/* Views and shape ops with their own argument lists. */
static void fz_view(void) {
    int dst = fz_slot();
    tensor *t = fz_tensor();
    int64_t shape[16];
    int dims[16];
    switch (fz_u8() % 12) {
    case 0: { int ndim = fz_shape(shape); FZ_PUT(dst, shape_ops[fz_u8() % FZ_LEN(shape_ops)](t, ndim, shape)); break; }
    case 1: { /* reshape/view/expand to t's own size, with a -1 somewhere: valid more often */
        int ndim = 1 + fz_u8() % 4;
        int64_t n = tensor_numel(t);
        shape[0] = n;
        for (int i = 1; i < ndim; i++) shape[i] = 1;
        if (ndim > 1) { int k = fz_u8() % ndim; shape[k] = -1; }
        FZ_PUT(dst, shape_ops[fz_u8() % 3](t, ndim, shape));
        break;
    }
    case 2: {
        uint8_t b = fz_u8();
        int n = b < 250 ? (int)(b % 9) : -1;
        for (int i = 0; i < 16; i++) dims[i] = i < n ? (fz_u8() < 200 ? (int)(fz_u8() % 8) : fz_dim()) : 0;
        FZ_PUT(dst, tensor_permute(t, n, dims));
        break;
    }
    case 3: { int a = fz_dim(), b = fz_dim(); FZ_PUT(dst, tensor_transpose(t, a, b)); break; }
    case 4: { int a = fz_dim(), b = fz_dim(); FZ_PUT(dst, tensor_flatten(t, a, b)); break; }
    case 5: {
        int d = fz_dim();
        int64_t start = fz_i64(), end = fz_i64(), step = fz_u8() < 200 ? 1 + fz_u8() % 3 : fz_i64();
        FZ_PUT(dst, tensor_slice(t, d, start, end, step));
        break;
    }
    case 6: { int d = fz_dim(); FZ_PUT(dst, tensor_select(t, d, fz_i64())); break; }
    case 7: { int d = fz_dim(); FZ_PUT(dst, dim_ops[fz_u8() % FZ_LEN(dim_ops)](t, d)); break; }
    case 8: {
        int npad = fz_u8() % 18;
        int64_t pads[20];
        for (int i = 0; i < 20; i++) pads[i] = i < npad ? (fz_u8() < 200 ? (int64_t)(fz_u8() % 5) - 1 : fz_i64()) : 0;
        double v = fz_double();
        FZ_PUT(dst, tensor_pad(t, npad, fz_u8() == 0xff ? NULL : pads, v));
        break;
    }
    case 9: { int64_t d = fz_i64(); FZ_PUT(dst, fz_bool() ? tensor_tril(t, d) : tensor_triu(t, d)); break; }
    case 10: { /* cat / stack */
        tensor *ts[8];
        uint8_t b = fz_u8();
        int n = b < 250 ? (int)(b % 5) : b < 253 ? 8 : -1;
        for (int i = 0; i < 8; i++) ts[i] = i == 0 ? t : fz_tensor();
        int d = fz_dim();
        bool stack = fz_bool();
        tensor *const *arg = fz_u8() == 0xff ? NULL : ts;
        FZ_PUT(dst, stack ? tensor_stack(n, arg, d) : tensor_cat(n, arg, d));
        break;
    }
    default: { /* split */
        tensor *out[9] = {NULL};
        int64_t size = fz_u8() < 200 ? (int64_t)(fz_u8() % 4) : fz_i64();
        int d = fz_dim();
        int max_out = (int)(fz_u8() % 10) - 1;
        bool had = FZ_ERR;
        int n = tensor_split(t, size, d, max_out < 0 ? NULL : out, max_out);
        if (n < 0) { FZ_CHECK(tensor_last_error() != NULL); break; }
        FZ_CHECK(had || !FZ_ERR);
        FZ_CHECK(n >= 1 && n <= max_out);
        for (int i = 0; i < n; i++) { FZ_CHECK(out[i] != NULL); fz_put(out[i], (dst + i) % FZ_SLOTS, true); }
        break;
    }
    }
}

/* Indexing, NN functions, losses. */
static void fz_nn(void) {
    int dst = fz_slot();
    tensor *a = fz_tensor(), *b = fz_tensor(), *c = fz_tensor();
    switch (fz_u8() % 17) {
    case 0: { int d = fz_dim(); FZ_PUT(dst, fz_bool() ? tensor_gather(a, d, b) : tensor_index_select(a, d, b)); break; }
    case 1: { int d = fz_dim(); FZ_PUT(dst, tensor_scatter_add(a, d, b, c)); break; }
    case 2: { double v = fz_double(); FZ_PUT(dst, tensor_masked_fill(a, b, v)); break; }
    case 3: {
        int64_t nc = fz_u8() < 200 ? (int64_t)(fz_u8() % 8) - 1 : fz_i64();
        FZ_PUT(dst, tensor_one_hot(a, nc));
        break;
    }
    case 4: FZ_PUT(dst, tensor_to_dtype(a, fz_dtype())); break;
    case 5: { uint8_t d = fz_u8(); FZ_PUT(dst, tensor_to_device(a, d < 128 ? TENSOR_CPU : d < 250 ? TENSOR_CUDA : (tensor_device)(d - 250 + 2))); break; }
    case 6: FZ_PUT(dst, tensor_where(a, b, c)); break;
    case 7: FZ_PUT(dst, tensor_linear(a, b, c)); break;
    case 8: { double eps = fz_double(); FZ_PUT(dst, tensor_layer_norm(a, b, c, eps)); break; }
    case 9: { double eps = fz_double(); FZ_PUT(dst, tensor_rms_norm(a, b, eps)); break; }
    case 10: case 11: {
        int s = fz_iparam(), p = fz_iparam(), d = fz_iparam(), g = fz_iparam();
        bool two = fz_bool();
        FZ_PUT(dst, two ? tensor_conv2d(a, b, c, s, p, d, g) : tensor_conv1d(a, b, c, s, p, d, g));
        break;
    }
    case 12: {
        int k = fz_iparam(), s = fz_iparam(), p = fz_iparam();
        FZ_PUT(dst, fz_bool() ? tensor_max_pool2d(a, k, s, p) : tensor_avg_pool2d(a, k, s, p));
        break;
    }
    case 13: { double p = fz_double(); FZ_PUT(dst, tensor_dropout(a, p, fz_bool())); break; }
    case 14: { tensor *m = fz_tensor(); FZ_PUT(dst, tensor_scaled_dot_product_attention(a, b, c, m, fz_bool())); break; }
    case 15: {
        int64_t ns = fz_u8() < 220 ? (int64_t)(fz_u8() % 6) : fz_i64();
        if (ns > FZ_CAP && ns < ((int64_t)1 << 32)) break;
        FZ_PUT(dst, tensor_multinomial(a, ns, fz_bool()));
        break;
    }
    default: { /* several-dim and parameterized reductions */
        int d = fz_dim();
        switch (fz_u8() % 4) {
        case 0: { int64_t corr = fz_u8() < 220 ? fz_u8() % 3 : fz_i64(); bool k = fz_bool(); FZ_PUT(dst, fz_bool() ? tensor_var(a, d, corr, k) : tensor_std(a, d, corr, k)); break; }
        case 1: { double p = fz_double(); FZ_PUT(dst, tensor_norm(a, p, d, fz_bool())); break; }
        default: {
            int dims[16];
            uint8_t nb = fz_u8();
            int n = nb < 250 ? (int)(nb % 10) : -1;
            for (int i = 0; i < 16; i++) dims[i] = fz_dim();
            bool k = fz_bool();
            const int *arg = fz_u8() == 0xff ? NULL : dims;
            FZ_PUT(dst, fz_bool() ? tensor_sum_dims(a, n, arg, k) : tensor_mean_dims(a, n, arg, k));
            break;
        }
        }
    }
    }
}

/* Reads a tensor through every query function; ASan checks the reads. */
static void fz_query(void) {
    tensor *t = fz_tensor();
    bool had = FZ_ERR;
    switch (fz_u8() % 10) {
    case 0: {
        int nd = tensor_ndim(t);
        const int64_t *s = tensor_shape(t), *st = tensor_strides(t);
        volatile int64_t sum = 0;
        for (int i = 0; i < nd; i++) sum += s[i] + st[i] + tensor_size(t, i);
        (void)sum;
        (void)tensor_size(t, fz_dim());
        (void)tensor_is_contiguous(t);
        (void)tensor_shares_storage(t, fz_tensor());
        (void)tensor_requires_grad(t);
        break;
    }
    case 1: {
        double v = tensor_item(t);
        if (!t || tensor_numel(t) != 1) FZ_CHECK(FZ_ERR);
        (void)v;
        break;
    }
    case 2: {
        int64_t n = tensor_numel(t);
        size_t need = t && n <= FZ_CAP ? (size_t)n * tensor_dtype_size(tensor_get_dtype(t)) : 0;
        uint8_t how = fz_u8() % 4;
        size_t give = how == 0 && need ? need - 1 : how == 1 ? 0 : need;
        void *dst = how == 1 ? NULL : malloc(give ? give : 1);
        int rc = tensor_copy_to(t, dst, give);
        fz_rc(rc, had);
        if (!rc) FZ_CHECK(t && give >= need);
        free(dst);
        break;
    }
    case 3: {
        char *p = (char *)tensor_data_ptr(t);
        if (!p) { FZ_CHECK(FZ_ERR); break; }
        int64_t n = tensor_numel(t);
        size_t bytes = (size_t)n * tensor_dtype_size(tensor_get_dtype(t));
        volatile char x = 0;
        if (bytes) x = (char)(p[0] + p[bytes - 1]);
        (void)x;
        break;
    }
    case 4: {
        size_t n = fz_u8() % 200;
        char *buf = n ? (char *)malloc(n) : NULL;
        int len = tensor_snprint(t, buf, n);
        if (len >= 0 && n) FZ_CHECK(strlen(buf) < n && (size_t)len >= strlen(buf));
        free(buf);
        break;
    }
    case 5: if (fz_u8() < 16) tensor_print(t); break;
    case 6: {
        tensor_dtype d = fz_dtype(), e = fz_dtype();
        const char *name = tensor_dtype_name(d);
        if (name) FZ_CHECK(strlen(name) < 64);
        (void)tensor_dtype_size(d);
        (void)tensor_promote_types(d, e);
        break;
    }
    case 7: {
        int op = (int)fz_u8() - 8;
        const char *name = tensor_op_name((tensor_op)op);
        if (name) FZ_CHECK(strlen(name) < 64);
        (void)tensor_op_differentiable((tensor_op)op);
        break;
    }
    case 8: { /* the borrowed .grad, through an op */
        tensor *g = tensor_grad(t);
        if (!g) break;
        fz_check_tensor(g);
        int dst = fz_slot();
        tensor *r = unary_ops[fz_u8() % FZ_LEN(unary_ops)](g);
        if (r != g) fz_put(r, dst, had); /* zero_ returns g itself: borrowed, not ours to keep */
        break;
    }
    default: {
        const char *v = tensor_version(), *bi = tensor_build_info();
        FZ_CHECK(v && bi && strlen(v) < 32);
        (void)tensor_cuda_available();
        (void)tensor_get_num_threads();
        (void)tensor_live_handles();
        (void)tensor_live_bytes();
        break;
    }
    }
}

static void fz_autograd(void) {
    bool had = FZ_ERR;
    switch (fz_u8() % 7) {
    case 0: { tensor *t = fz_tensor(); FZ_PUT(0, tensor_set_requires_grad(t, fz_u8() < 200)); break; }
    case 1: fz_rc(tensor_backward(fz_tensor()), had); break;
    case 2: { tensor *o = fz_tensor(); fz_rc(tensor_backward_with(o, fz_tensor()), had); break; }
    case 3: tensor_zero_grad(fz_tensor()); break;
    case 4: tensor_set_grad_enabled(fz_u8() < 170); break;
    case 5: { /* autograd_grad into the pool */
        tensor *outs[3], *gos[3], *ins[4], *grads[4] = {NULL};
        int n_out = (int)(fz_u8() % 4), n_in = (int)(fz_u8() % 5);
        for (int i = 0; i < 3; i++) { outs[i] = fz_tensor(); gos[i] = fz_tensor(); }
        for (int i = 0; i < 4; i++) ins[i] = fz_tensor();
        bool use_go = fz_bool(), create = fz_bool();
        int dst = fz_slot();
        int rc = tensor_autograd_grad(n_out, outs, use_go ? gos : NULL, n_in, ins, grads, create);
        fz_rc(rc, had);
        for (int i = 0; i < n_in; i++) {
            if (rc) { FZ_CHECK(grads[i] == NULL); continue; }
            FZ_CHECK(grads[i] != NULL);
            fz_put(grads[i], (dst + i) % FZ_SLOTS, true);
        }
        break;
    }
    default: { /* clip_grad_norm */
        tensor *ps[4];
        int n = (int)(fz_u8() % 5);
        for (int i = 0; i < 4; i++) ps[i] = fz_tensor();
        double max_norm = fz_double();
        (void)tensor_clip_grad_norm(n, ps, max_norm);
        break;
    }
    }
}

static void fz_optim(void) {
    int k = fz_u8() & 1;
    bool had = FZ_ERR;
    switch (fz_u8() % 6) {
    case 0: case 1: {
        tensor *ps[4];
        int n = (int)(fz_u8() % 5);
        for (int i = 0; i < 4; i++) ps[i] = fz_tensor();
        double lr = fz_double(), m = fz_double(), wd = fz_double(), eps = fz_double();
        uint8_t kind = fz_u8() % 3;
        bool nesterov = fz_bool();
        tensor_optim *o = kind == 0 ? tensor_optim_sgd(n, ps, lr, m, wd, nesterov)
                        : kind == 1 ? tensor_optim_adam(n, ps, lr, m, wd, eps, wd)
                                    : tensor_optim_adamw(n, ps, lr, m, 0.999, eps, wd);
        if (!o) { FZ_CHECK(FZ_ERR); break; }
        FZ_CHECK(had || !FZ_ERR);
        tensor_optim_free(optim[k]);
        optim[k] = o;
        break;
    }
    case 2: case 3: fz_rc(tensor_optim_step(optim[k]), had || !optim[k]); break;
    case 4: tensor_optim_zero_grad(optim[k]); break;
    default: tensor_optim_set_lr(optim[k], fz_double()); break;
    }
}

/* Drops the pool's handles owned by the scope level that tensor_scope_end just freed. */
static void fz_scope_end(void) {
    tensor_scope_end();
    if (depth == 0) return; /* unbalanced: an error, nothing freed */
    for (int i = 0; i < FZ_SLOTS; i++) if (slot[i] && slot_level[i] == depth) slot[i] = NULL;
    depth--;
}

static void fz_misc(void) {
    switch (fz_u8() % 12) {
    case 0: { int i = fz_slot(); tensor_free(slot[i]); slot[i] = NULL; break; }
    case 1: if (depth < 64) { tensor_scope_begin(); depth++; } break;
    case 2: fz_scope_end(); break;
    case 3: {
        int i = fz_slot();
        FZ_CHECK(tensor_keep(slot[i]) == slot[i]);
        if (slot[i] && slot_level[i] > 0) slot_level[i]--;
        break;
    }
    case 4: tensor_clear_error(); break;
    case 5: tensor_set_error_handler(fz_bool() ? fz_on_error : NULL, &fz_errors); break;
    case 6: tensor_manual_seed(fz_u64()); break;
    case 7: tensor_empty_cache(); break;
    case 8: { static const int n[] = {0, 1, 2, 3, -1, 1000}; tensor_set_num_threads(n[fz_u8() % 6]); break; }
    case 9: tensor_set_reference_kernels(fz_bool()); break;
    case 10: { /* everything at once, mid-run: the pool empties */
        for (int k = 0; k < 2; k++) { tensor_optim_free(optim[k]); optim[k] = NULL; }
        tensor_shutdown();
        FZ_CHECK(tensor_live_handles() == 0 && tensor_live_bytes() == 0);
        for (int i = 0; i < FZ_SLOTS; i++) slot[i] = NULL;
        depth = 0;
        break;
    }
    default: /* the k-th memory request from now fails (the library's cache hits count too) */
        tensor_test_fail_alloc(1 + fz_u8() % 64);
        break;
    }
}

static void fz_reset(void) {
    tensor_test_fail_alloc(0);
    for (int k = 0; k < 2; k++) { tensor_optim_free(optim[k]); optim[k] = NULL; }
    tensor_shutdown();
    FZ_CHECK(tensor_live_handles() == 0 && tensor_live_bytes() == 0);
    for (int i = 0; i < FZ_SLOTS; i++) { slot[i] = NULL; slot_level[i] = 0; }
    depth = 0;
    tensor_set_error_handler(NULL, NULL);
    tensor_set_grad_enabled(true);
    tensor_set_reference_kernels(false);
    tensor_set_num_threads(0);
}

/* One input: a few ready tensors, then one action per byte until the input ends. */
static int fz_run(const uint8_t *data, size_t size) {
    fz_p = data;
    fz_n = size;
    tensor_manual_seed(0);
    slot[0] = tensor_set_requires_grad(tensor_randn(TENSOR_SHAPE(2, 3), TENSOR_F32), true);
    slot[1] = tensor_randn(TENSOR_SHAPE(3), TENSOR_F32);
    slot[2] = tensor_from_data((const int64_t[]){0, 2}, TENSOR_SHAPE(2), TENSOR_I64);
    slot[3] = tensor_randn(TENSOR_SHAPE(2, 3, 4, 4), TENSOR_F32);
    for (int steps = 0; fz_n && steps < 512; steps++) {
        uint8_t a = fz_u8();
        if (a < 40) fz_create();
        else if (a < 72) fz_view();
        else if (a < 96) { int dst = fz_slot(); tensor *t = fz_tensor(); FZ_PUT(dst, unary_ops[fz_u8() % FZ_LEN(unary_ops)](t)); }
        else if (a < 128) { int dst = fz_slot(); tensor *x = fz_tensor(), *y = fz_tensor(); FZ_PUT(dst, binary_ops[fz_u8() % FZ_LEN(binary_ops)](x, y)); }
        else if (a < 144) { int dst = fz_slot(); tensor *t = fz_tensor(); double s = fz_double(); FZ_PUT(dst, scalar_ops[fz_u8() % FZ_LEN(scalar_ops)](t, s)); }
        else if (a < 152) { int dst = fz_slot(); tensor *t = fz_tensor(); double lo = fz_double(), hi = fz_double(); FZ_PUT(dst, scalar2_ops[fz_u8() % FZ_LEN(scalar2_ops)](t, lo, hi)); }
        else if (a < 168) { int dst = fz_slot(); tensor *t = fz_tensor(); int d = fz_dim(); bool k = fz_bool(); FZ_PUT(dst, reduce_ops[fz_u8() % FZ_LEN(reduce_ops)](t, d, k)); }
        else if (a < 196) fz_nn();
        else if (a < 212) fz_query();
        else if (a < 232) fz_autograd();
        else if (a < 240) fz_optim();
        else fz_misc();
    }
    fz_reset();
    return 0;
}

#include "fuzz_main.h"
