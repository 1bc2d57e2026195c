/* The test runner: builds the implementation, runs every registered TEST, checks that each leaves
   no live handle or storage behind, and prints `N passed, N failed` (a test that called test_skip
   and failed nothing counts in neither: its `skipped: ...` line is counted by tests/run.sh).
   Usage: test_all [FILTER] */
#define TENSOR_IMPLEMENTATION
#include "test.h"
#include <stdarg.h>
#include <time.h>

typedef struct { const char *name, *file; test_fn fn; } test_case;
static test_case *cases;
static int n_cases, cap_cases;
static int current_failures, current_skipped;
void (*test_cleanup)(void);
int test_failures_in_current_test(void) { return current_failures; }
static const char *current_test;

static void skip_with(const char *kind, const char *fmt, va_list ap) {
    printf("skipped: %s: %s", current_test, kind);
    vprintf(fmt, ap);
    printf("\n");
    current_skipped = 1;
}

void test_skip(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    skip_with("", fmt, ap);
    va_end(ap);
}

void test_skip_cpu(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    skip_with("not on this CPU: ", fmt, ap);
    va_end(ap);
}

void test_register(const char *name, const char *file, test_fn fn) {
    if (n_cases == cap_cases) {
        cap_cases = cap_cases ? 2 * cap_cases : 256;
        cases = (test_case *)realloc(cases, sizeof *cases * (size_t)cap_cases);
    }
    cases[n_cases].name = name;
    cases[n_cases].file = file;
    cases[n_cases].fn = fn;
    n_cases++;
}

void test_fail(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("  FAIL %s:%d [%s] ", file, line, current_test);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    current_failures++;
}

void test_expect_error(const char *file, int line, bool failed, const char *fn, const char *expr) {
    const char *msg = tensor_last_error();
    if (!failed) test_fail(file, line, "%s: expected failure, got success", expr);
    else if (!msg) test_fail(file, line, "%s: failed without a message", expr);
    else if (!strstr(msg, fn)) test_fail(file, line, "%s: message '%s' does not name %s", expr, msg, fn);
}

tensor *test_tensor(tensor_dtype dtype, int ndim, const int64_t *shape, const double *values) {
    tensor *t = tensor_from_data(values, ndim, shape, TENSOR_F64);
    tensor *r = tensor_to_dtype(t, dtype);
    tensor_free(t);
    return r;
}

double *test_values(tensor *t) {
    int64_t n = tensor_numel(t);
    double *v = (double *)malloc(sizeof(double) * (size_t)(n ? n : 1));
    tensor *d = tensor_to_dtype(t, TENSOR_F64);
    if (!d || tensor_copy_to(d, v, sizeof(double) * (size_t)n) != 0) for (int64_t i = 0; i < n; i++) v[i] = NAN;
    tensor_free(d);
    return v;
}

void test_check_values(const char *file, int line, tensor *t, const double *expected, int64_t n, double atol, double rtol) {
    if (!t) { test_fail(file, line, "tensor is NULL (%s)", tensor_last_error() ? tensor_last_error() : "no error"); return; }
    if (tensor_numel(t) != n) { test_fail(file, line, "numel %lld, expected %lld", (long long)tensor_numel(t), (long long)n); return; }
    double *v = test_values(t);
    int bad = 0;
    for (int64_t i = 0; i < n && bad < 5; i++) {
        double a = v[i], b = expected[i];
        bool ok = (a != a && b != b) || a == b || fabs(a - b) <= atol + rtol * fabs(b);
        if (!ok) { test_fail(file, line, "element %lld: got %.17g, expected %.17g", (long long)i, a, b); bad++; }
    }
    free(v);
}

void test_check_shape(const char *file, int line, tensor *t, int ndim, const int64_t *shape) {
    if (!t) { test_fail(file, line, "tensor is NULL (%s)", tensor_last_error() ? tensor_last_error() : "no error"); return; }
    bool ok = tensor_ndim(t) == ndim;
    for (int i = 0; ok && i < ndim; i++) ok = tensor_shape(t)[i] == shape[i];
    if (!ok) test_fail(file, line, "unexpected shape (ndim %d)", tensor_ndim(t));
}

double test_tol(tensor_dtype d) {
    switch (d) {
    case TENSOR_F64: return 1e-12;
    case TENSOR_F32: return 2e-6;
    case TENSOR_F16: return 2e-3;
    case TENSOR_BF16: return 1.6e-2;
    default: return 0;
    }
}

static uint64_t test_rng_state = 0x9E3779B97F4A7C15ull;
double test_uniform(double lo, double hi) {
    test_rng_state ^= test_rng_state << 13; test_rng_state ^= test_rng_state >> 7; test_rng_state ^= test_rng_state << 17;
    return lo + (hi - lo) * (double)(test_rng_state >> 11) * (1.0 / 9007199254740992.0);
}

tensor *test_leaf(int ndim, const int64_t *shape, double lo, double hi) {
    tensor *t = tensor_empty(ndim, shape, TENSOR_F64);
    if (!t) return NULL;
    double *d = (double *)tensor_data_ptr(t);
    for (int64_t i = 0; i < tensor_numel(t); i++) d[i] = test_uniform(lo, hi);
    return tensor_set_requires_grad(t, true);
}

/* sum(f(in) * w) as a 0-dim tensor (w fixed per call site through the seed). */
static tensor *weighted_sum(tensor *out, tensor *w) { return tensor_sum_all(tensor_mul(out, w)); }

static tensor *random_like(tensor *t) {
    tensor *w = tensor_empty(tensor_ndim(t), tensor_shape(t), TENSOR_F64);
    double *d = (double *)tensor_data_ptr(w);
    for (int64_t i = 0; i < tensor_numel(w); i++) d[i] = test_uniform(-1, 1);
    return w;
}

/* The scalar whose gradient is checked: order 1: L = sum(f(in) * w); order 2: sum_i sum(dL/din_i * v_i). */
typedef struct { test_fn_of f; const void *ctx; int n; tensor *const *in; tensor *w; tensor **v; int order; } scalar_spec;
static tensor *eval_scalar(const scalar_spec *s, bool create_graph) {
    tensor *out = s->f(s->in, s->ctx);
    if (!out) return NULL;
    tensor *L = weighted_sum(out, s->w);
    if (s->order == 1) return L;
    tensor *grads[16] = {0}, *req[16];
    int k = 0;
    for (int i = 0; i < s->n; i++) if (tensor_requires_grad(s->in[i])) req[k++] = s->in[i];
    if (tensor_autograd_grad(1, &L, NULL, k, req, grads, create_graph)) return NULL;
    tensor *total = tensor_zeros(0, NULL, TENSOR_F64);
    for (int i = 0; i < k; i++) total = tensor_add(total, tensor_sum_all(tensor_mul(grads[i], s->v[i])));
    return total;
}

/* The allocation-failure sweep of one gradient check: the scalar and its gradients evaluated again
   with the library's k-th memory request failing, for every k the evaluation makes. Each run must
   report the failure (NULL or a non-zero return) with a message, or return exactly the gradients
   of the run without a failure. Every derivative the gradchecks reach (all of the registry's
   differentiable ops, and their second derivatives through gradgradcheck) so gets its error paths
   run. Returns the number of requests covered. */
static int64_t swept_requests, swept_checks;
static int64_t alloc_sweep(const char *file, int line, scalar_spec *s, int k, tensor *const *req, tensor *const *analytic) {
    int64_t total = -1; /* the first run (at = 0) fails nothing and counts */
    for (int64_t at = 0; at <= total || total < 0; at++) {
        tensor_scope_begin();
        tensor_clear_error();
        tensor_test_fail_alloc(at);
        tensor *grads[16] = {0};
        tensor *L = eval_scalar(s, s->order == 2);
        int rc = L ? tensor_autograd_grad(1, &L, NULL, k, req, grads, false) : -1;
        int64_t used = tensor_test_alloc_count();
        tensor_test_fail_alloc(0);
        if (at == 0) {
            total = used;
            swept_requests += used;
            swept_checks++;
        }
        if (rc != 0) {
            if (!tensor_last_error()) test_fail(file, line, "alloc sweep (order %d): request %lld failed without a message", s->order, (long long)at);
        } else {
            for (int i = 0; i < k; i++)
                if (!test_same_bits(grads[i], analytic[i])) {
                    test_fail(file, line, "alloc sweep (order %d): request %lld failed, no error was reported, and gradient %d differs", s->order, (long long)at, i);
                    break;
                }
        }
        tensor_clear_error();
        tensor_scope_end();
        if (test_failures_in_current_test() > 20) break;
    }
    return total;
}

static int check_order(const char *file, int line, scalar_spec *s, double atol, double rtol) {
    tensor *req[16];
    int k = 0, compared = 0;
    for (int i = 0; i < s->n; i++) if (tensor_requires_grad(s->in[i])) req[k++] = s->in[i];
    if (k == 0 || k > 16) { test_fail(file, line, "gradcheck needs 1..16 inputs that require grad"); return 0; }
    tensor_scope_begin();
    tensor *probe = s->f(s->in, s->ctx);
    if (!probe) { test_fail(file, line, "gradcheck: f failed: %s", tensor_last_error()); tensor_scope_end(); return 0; }
    s->w = random_like(probe);
    tensor *v[16];
    for (int i = 0; i < k; i++) v[i] = random_like(req[i]);
    s->v = v;
    tensor *L = eval_scalar(s, s->order == 2);
    tensor *analytic[16] = {0};
    if (!L || tensor_autograd_grad(1, &L, NULL, k, req, analytic, false)) {
        test_fail(file, line, "gradcheck (order %d): backward failed: %s", s->order, tensor_last_error() ? tensor_last_error() : "?");
        tensor_clear_error();
        tensor_scope_end();
        return 0;
    }
    alloc_sweep(file, line, s, k, req, analytic);
    bool was = tensor_set_grad_enabled(s->order == 2); /* order 2 needs the graph to take first derivatives */
    for (int i = 0; i < k; i++) {
        double *x = (double *)tensor_data_ptr(req[i]);
        double *a = test_values(analytic[i]);
        int bad = 0;
        for (int64_t j = 0; j < tensor_numel(req[i]); j++) {
            double orig = x[j], h = 1e-6 * (fabs(orig) > 1 ? fabs(orig) : 1);
            tensor_scope_begin();
            x[j] = orig + h;
            double up = tensor_item(eval_scalar(s, false));
            x[j] = orig - h;
            double down = tensor_item(eval_scalar(s, false));
            x[j] = orig;
            tensor_scope_end();
            double num = (up - down) / (2 * h);
            compared++;
            if (!(fabs(num - a[j]) <= atol + rtol * fabs(num)) && bad++ < 3)
                test_fail(file, line, "%s derivative of input %d element %lld: analytic %.10g, numeric %.10g",
                          s->order == 1 ? "first" : "second", i, (long long)j, a[j], num);
        }
        free(a);
    }
    tensor_set_grad_enabled(was);
    tensor_scope_end();
    return compared;
}

test_gradcheck_divert_fn test_gradcheck_divert;
int test_gradcheck(const char *file, int line, test_fn_of f, const void *ctx, int n, tensor *const *in, double atol, double rtol) {
    if (test_gradcheck_divert) return test_gradcheck_divert(file, line, f, ctx, n, in, 1);
    scalar_spec s = {f, ctx, n, in, NULL, NULL, 1};
    return check_order(file, line, &s, atol, rtol);
}
int test_gradgradcheck(const char *file, int line, test_fn_of f, const void *ctx, int n, tensor *const *in, double atol, double rtol) {
    if (test_gradcheck_divert) return test_gradcheck_divert(file, line, f, ctx, n, in, 2);
    scalar_spec s = {f, ctx, n, in, NULL, NULL, 2};
    return check_order(file, line, &s, atol, rtol);
}

int64_t test_numel(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i];
    return n;
}

tensor *test_random(tensor_dtype dtype, int ndim, const int64_t *shape, double lo, double hi) {
    int64_t n = test_numel(ndim, shape);
    double *v = (double *)malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) v[i] = test_uniform(lo, hi);
    tensor *t = test_tensor(dtype, ndim, shape, v);
    free(v);
    return t;
}

/* Whether the upper halves of the ymm/zmm registers are in use (XGETBV with ECX = 1, bits 2 and 6).
   A kernel that returns with them dirty makes every later non-VEX SSE instruction (all scalar
   floating-point code in a plain -O2 build) pay a transition penalty: 4x on the Adam step here.
   -1 where the CPU cannot tell. */
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
#define TEST_SANITIZED 1 /* the sanitizer runtimes use AVX themselves and leave the state dirty */
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer) || __has_feature(address_sanitizer)
#define TEST_SANITIZED 1
#endif
#endif
int test_upper_vector_state_dirty(void) {
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__)) && !defined(TEST_SANITIZED)
    unsigned a, b, c, d;
    __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0), "c"(0));
    if (a < 0xd) return -1;
    __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(1), "c"(0));
    if (!(c & (1u << 27))) return -1; /* OSXSAVE */
    __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0xd), "c"(1));
    if (!(a & (1u << 2))) return -1; /* XGETBV with ECX = 1 */
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
    return (lo & ((1u << 2) | (1u << 6))) != 0;
#else
    return -1;
#endif
}

void test_device_host_of(void *(*host_of)(const void *device_ptr)) { tensor__test_host_of = host_of; }
void test_device_install(const tensor__device *d) {
    tensor__devices[TENSOR_CUDA] = d;
    tensor__device_states[TENSOR_CUDA] = 0;
    for (int op = 0; op < TENSOR_OP_COUNT; op++) tensor__kernels[op][TENSOR_CUDA] = NULL;
}
bool test_device_has_kernel(tensor_op op, tensor_device device) {
    if (device != TENSOR_CPU && !tensor__device_ready(device)) return false;
    return tensor__kernels[op][device] != NULL;
}
tensor *test_like(tensor *like, tensor *t) {
    if (!like || !t || tensor_get_device(like) == tensor_get_device(t)) return t;
    return tensor_to_device(t, tensor_get_device(like));
}
bool test_has_cpu_kernel(tensor_op op) { return tensor__kernels[op][TENSOR_CPU] != NULL; }

/* A CPU tensor over the memory of a device operand (a CPU scalar passed by value: a 0-dim tensor
   holding it); NULL for an absent operand, or with *failed set when out of memory. */
static tensor *mirror_wrap(const tensor__dev_operand *o, void *(*to_host)(const void *), bool *failed) {
    if (o->by_value) {
        tensor *s = tensor__new("mirror", 0, NULL, o->dtype, TENSOR_CPU);
        if (!s) { *failed = true; return NULL; }
        if (tensor__is_float(o->dtype)) tensor__store_f64(tensor__data(s), o->dtype, o->value);
        else tensor__store_i64(tensor__data(s), o->dtype, o->ivalue);
        return s;
    }
    if (!o->data) return NULL;
    int64_t span = 1; /* elements from the first to the last one addressed */
    for (int d = 0; d < o->ndim; d++) {
        if (o->shape[d] == 0) { span = 0; break; }
        span += (o->shape[d] - 1) * o->strides[d];
    }
    tensor__storage *st = tensor__storage_external("mirror", to_host(o->data), (size_t)span * tensor__dtype_sizes[o->dtype], TENSOR_CPU, NULL, NULL);
    tensor *t = tensor__from_storage("mirror", st, o->dtype, o->ndim, o->shape, o->strides, 0);
    if (!t) *failed = true;
    return t;
}

int test_mirror_kernel(tensor__dev_call *dc, void *(*to_host)(const void *dev)) {
    tensor__call c;
    tensor__call_init(&c, dc->op);
    bool failed = false;
    c.n_in = dc->n_in;
    /* the handles kept apart: a CPU kernel may change its record (mul_scalar_ puts its scalar in in[1]) */
    tensor *wrapped[TENSOR__MAX_INPUTS + 2];
    for (int i = 0; i < TENSOR__MAX_INPUTS; i++) c.in[i] = wrapped[i] = mirror_wrap(&dc->in[i], to_host, &failed);
    c.out = wrapped[TENSOR__MAX_INPUTS] = mirror_wrap(&dc->out, to_host, &failed);
    c.out2 = wrapped[TENSOR__MAX_INPUTS + 1] = mirror_wrap(&dc->out2, to_host, &failed);
    c.compute = dc->compute;
    memcpy(c.p, dc->p, sizeof c.p);
    memcpy(c.ip, dc->ip, sizeof c.ip);
    c.n_dims = dc->n_dims;
    memcpy(c.dims, dc->dims, sizeof c.dims);
    tensor_clear_error();
    int rc = 1;
    if (failed) tensor__fail(c.fn, "mirror device: out of memory");
    else if (dc->op == TENSOR_OP_dropout && c.out2) {
        /* the mask from the words the front-end took for the device (ip[1..4]), as tensor_cuda.cu's kernel */
        tensor__copy_into(c.out, c.in[0]);
        tensor__rng_fill f;
        memset(&f, 0, sizeof f);
        f.kind = TENSOR__RNG_KEEP;
        f.n = tensor__numel_of(c.out->ndim, c.out->shape);
        f.dtype = c.out->dtype;
        f.out = tensor__data(c.out2);
        f.x = tensor__data(c.out);
        f.scale = c.p[0] == 1 ? 0 : 1.0 / (1.0 - c.p[0]);
        f.p = c.p[0];
        f.blocks = tensor__rng_blocks_ref;
        f.normal = tensor__rng_normal_ref;
        f.normal4 = tensor__rng_normal4_ref;
        f.key[0] = (uint32_t)(uint64_t)c.ip[1];
        f.key[1] = (uint32_t)((uint64_t)c.ip[1] >> 32);
        f.counter = (uint64_t)c.ip[2];
        f.stream = (uint32_t)c.ip[3];
        f.skip = (int)c.ip[4];
        tensor__rng_fill_range(0, f.n, &f);
        rc = 0;
    } else if (!tensor__kernels[dc->op][TENSOR_CPU]) tensor__fail(c.fn, "mirror device: %s has no CPU kernel", tensor__ops[dc->op].name);
    else rc = tensor__kernels[dc->op][TENSOR_CPU](&c);
    if (rc) snprintf(dc->error, sizeof dc->error, "%s", tensor_last_error() ? tensor_last_error() : "the CPU kernel failed");
    for (int i = 0; i < TENSOR__MAX_INPUTS + 2; i++) tensor_free(wrapped[i]);
    return rc;
}

int test_mirror_backward(tensor__dev_call *dc, void *(*to_host)(const void *dev)) {
    tensor__node n;
    tensor *saved[TENSOR__MAX_INPUTS] = {0}, *grads[TENSOR__MAX_INPUTS] = {0};
    tensor__node *next[TENSOR__MAX_INPUTS] = {0};
    int64_t versions[TENSOR__MAX_INPUTS] = {0};
    bool failed = false;
    memset(&n, 0, sizeof n);
    n.op = dc->op;
    n.n_in = dc->n_in;
    n.saved = saved;
    n.next = next;
    n.saved_version = versions;
    tensor_scope_begin();
    for (int i = 0; i < dc->n_in && i < TENSOR__MAX_INPUTS; i++) {
        saved[i] = mirror_wrap(&dc->in[i], to_host, &failed);
        next[i] = dc->grads[i].data ? &n : NULL; /* an input whose gradient is wanted */
    }
    n.extra = mirror_wrap(&dc->out2, to_host, &failed);
    memcpy(n.p, dc->p, sizeof n.p);
    memcpy(n.ip, dc->ip, sizeof n.ip);
    n.n_dims = dc->n_dims;
    memcpy(n.dims, dc->dims, sizeof n.dims);
    tensor *g = mirror_wrap(&dc->grad, to_host, &failed);
    tensor_clear_error();
    bool was = tensor_set_grad_enabled(false);
    int rc = failed ? (tensor__fail("mirror", "mirror device: out of memory"), 1)
                    : tensor__derivatives[n.op] ? tensor__derivatives[n.op](&n, g, grads) : tensor__derivative_layer(&n, g, grads);
    for (int i = 0; i < dc->n_in && !rc; i++) {
        if (!dc->grads[i].data) continue;
        tensor *into = mirror_wrap(&dc->grads[i], to_host, &failed);
        tensor *s = grads[i] ? tensor__sum_to(grads[i], saved[i]->ndim, saved[i]->shape) : NULL;
        if (!into || !s) { rc = 1; if (!tensor_last_error()) tensor__fail("mirror", "no gradient for input %d", i); break; }
        tensor__copy_into(into, s);
    }
    tensor_set_grad_enabled(was);
    if (rc) snprintf(dc->error, sizeof dc->error, "%s", tensor_last_error() ? tensor_last_error() : "the derivative failed");
    tensor_scope_end();
    return rc;
}

const char *test_op_kind(tensor_op op) { return tensor__ops[op].kind; }
double test_load_f64(const void *p, tensor_dtype d) { return tensor__load_f64((const char *)p, d); }
int64_t test_load_i64(const void *p, tensor_dtype d) { return tensor__load_i64((const char *)p, d); }
void test_store_f64(void *p, tensor_dtype d, double v) { tensor__store_f64((char *)p, d, v); }
void test_store_i64(void *p, tensor_dtype d, int64_t v) { tensor__store_i64((char *)p, d, v); }
void test_philox_block(const uint32_t key[2], uint64_t counter, uint32_t stream, uint32_t out[4]) { tensor__philox_block(key, counter, stream, out); }

bool test_same_bits(tensor *a, tensor *b) {
    if (!a || !b || tensor_numel(a) != tensor_numel(b)) return false;
    double *x = test_values(a), *y = test_values(b);
    bool same = true;
    for (int64_t i = 0; i < tensor_numel(a); i++) same &= memcmp(&x[i], &y[i], sizeof(double)) == 0;
    free(x);
    free(y);
    return same;
}

double *test_ref_norm(const double *x, int64_t R, int64_t C, const double *w, const double *b, double eps, bool rms) {
    double *y = (double *)malloc(sizeof(double) * (size_t)(R * C + 1));
    for (int64_t r = 0; r < R; r++) {
        const double *xr = x + r * C;
        double mean = 0, var = 0, ms = 0;
        for (int64_t i = 0; i < C; i++) { mean += xr[i]; ms += xr[i] * xr[i]; }
        mean /= (double)C;
        ms /= (double)C;
        for (int64_t i = 0; i < C; i++) var += (xr[i] - mean) * (xr[i] - mean);
        var /= (double)C;
        for (int64_t i = 0; i < C; i++) {
            double v = rms ? xr[i] / sqrt(ms + eps) : (xr[i] - mean) / sqrt(var + eps);
            y[r * C + i] = v * (w ? w[i] : 1) + (b ? b[i] : 0);
        }
    }
    return y;
}

/* The GEMM of >>gemm called directly (C (+)= A B through element strides): for tests/test_gemm.c,
   whose TU cannot see the implementation's statics. */
bool test_gemm_strided(bool f64, int64_t m, int64_t n, int64_t k, const void *A, int64_t a_rs, int64_t a_cs, const void *B, int64_t b_rs,
                       int64_t b_cs, void *C, int64_t c_rs, int64_t c_cs, bool add) {
    tensor_dtype t = f64 ? TENSOR_F64 : TENSOR_F32;
    return tensor__gemm_strided(t, t, m, n, k, A, a_rs, a_cs, B, b_rs, b_cs, C, c_rs, c_cs, add);
}
bool test_gemm_strided_src(tensor_dtype sd, int64_t m, int64_t n, int64_t k, const void *A, int64_t a_rs, int64_t a_cs, const void *B,
                           int64_t b_rs, int64_t b_cs, float *C, int64_t c_rs, int64_t c_cs, bool add) {
    return tensor__gemm_strided(TENSOR_F32, sd, m, n, k, A, a_rs, a_cs, B, b_rs, b_cs, C, c_rs, c_cs, add);
}
bool test_gemm_has_bf16(void) { return tensor__gemm_has_bf16(); }

/* The SIMD layer's row conversions at this run's SIMD level (the plain loops where there is none). */
void test_half_widen(bool f16, float *out, const uint16_t *in, int64_t n) { tensor__half_to_f32(out, in, n, !f16); }
void test_half_narrow(bool f16, uint16_t *out, const float *in, int64_t n) { tensor__f32_to_half(out, in, n, !f16); }
float test_half_to_f32(bool f16, uint16_t h) { return f16 ? tensor__f16_to_f32(h) : tensor__bf16_to_f32(h); }
uint16_t test_f32_to_half(bool f16, float f) { return f16 ? tensor__f32_to_f16(f) : tensor__f32_to_bf16(f); }

const char *test_simd_level(void) {
    static char name[64];
    const char *s = strstr(tensor_build_info(), "simd: ");
    size_t k = 0;
    if (s) for (s += 6; *s && *s != ';' && k + 1 < sizeof name; s++) name[k++] = *s;
    name[k] = 0;
    return name;
}

double test_gemm_dot(int64_t k, const double *a, int64_t as, const double *b, int64_t bs, double start, double *bound) {
    double e = start;
    *bound = fabs(start);
    for (int64_t p = 0; p < k; p++) {
        double t = a[p * as] * b[p * bs];
        e += t;
        *bound += fabs(t);
    }
    return e;
}

bool test_cpu_runs(const char *level) {
#if defined(__x86_64__) && !defined(TENSOR_NO_SIMD) && (defined(__GNUC__) || defined(__clang__))
    if (!strcmp(level, "scalar")) return false; /* no scalar instance on x86-64: TENSOR_SIMD=scalar gives sse2 */
#else
    if (!strcmp(level, "scalar")) return true;
#endif
#if (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
    __builtin_cpu_init();
    bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    if (!strcmp(level, "avx512")) return avx2 && __builtin_cpu_supports("avx512f");
    if (!strcmp(level, "avx2")) return avx2;
    if (!strcmp(level, "sse2")) return __builtin_cpu_supports("sse2");
#endif
    return false;
}

#if defined(__linux__)
#include <unistd.h>
void test_run_at_simd_level(const char *file, int line, const char *level, const char *env, const char *filter, const char *echo) {
    char self[4096], cmd[4500], text[1024], last[1024] = "";
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    if (len <= 0) { test_fail(file, line, "cannot find this test binary (/proc/self/exe)"); return; }
    self[len] = 0;
    /* TENSOR_TEST_RUNNER: what runs this binary when it is foreign (make test-neon: qemu-aarch64) */
    const char *runner = getenv("TENSOR_TEST_RUNNER");
    snprintf(cmd, sizeof cmd, "%sTENSOR_SIMD=%s %s '%s' %s 2>&1", env, level, runner ? runner : "", self, filter);
    fflush(stdout);
    FILE *p = popen(cmd, "r");
    if (!p) { test_fail(file, line, "cannot run %s", cmd); return; }
    while (fgets(text, sizeof text, p)) {
        if (strstr(text, "FAIL") || (echo && strstr(text, echo))) printf("  [TENSOR_SIMD=%s] %s", level, text);
        snprintf(last, sizeof last, "%s", text);
    }
    int status = pclose(p);
    int passed = 0, failed = -1;
    if (!(sscanf(last, "%d passed, %d failed", &passed, &failed) == 2 && failed == 0 && passed > 0 && status == 0))
        test_fail(file, line, "TENSOR_SIMD=%s: the child run ended with '%s' (status %d)", level, last, status);
}
#endif

/* The filter: comma-separated substrings, any of which may match a test's name or file. */
static bool filter_matches(const char *filter, const test_case *c) {
    char buf[256];
    snprintf(buf, sizeof buf, "%s", filter);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ","))
        if (strstr(c->name, tok) || strstr(c->file, tok)) return true;
    return false;
}

static int case_order(const void *a, const void *b) {
    const test_case *x = (const test_case *)a, *y = (const test_case *)b;
    int c = strcmp(x->file, y->file);
    return c ? c : strcmp(x->name, y->name);
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv) {
    /* --shard I/N: the I-th of N processes that share the run (tests/run.sh starts one per core),
       taking every N-th test of the run from the I-th on, in the sorted order; --times: prints
       each test's seconds */
    int shard = 0, shards = 1, times = 0, a = 1;
    for (; a < argc && !strncmp(argv[a], "--", 2); a++) {
        if (!strcmp(argv[a], "--times")) times = 1;
        else if (!strcmp(argv[a], "--shard") && a + 1 < argc && sscanf(argv[a + 1], "%d/%d", &shard, &shards) == 2 && shards > 0 && shard >= 0 && shard < shards) a++;
        else { fprintf(stderr, "usage: %s [--times] [--shard I/N] [FILTER]\n", argv[0]); return 2; }
    }
    const char *filter = a < argc ? argv[a] : NULL;
    qsort(cases, (size_t)n_cases, sizeof *cases, case_order);
    int passed = 0, failed = 0, in_run = 0;
    for (int i = 0; i < n_cases; i++) {
        if (filter && !filter_matches(filter, &cases[i])) continue;
        if (in_run++ % shards != shard) continue;
        double started = times ? now_seconds() : 0;
        current_test = cases[i].name;
        current_failures = 0;
        current_skipped = 0;
        int64_t handles = tensor_live_handles(), bytes = tensor_live_bytes();
        tensor_clear_error();
        tensor_manual_seed(0);
        tensor_scope_begin();
        cases[i].fn();
        tensor_scope_end();
        if (test_cleanup) { test_cleanup(); test_cleanup = NULL; }
        int64_t reads = __atomic_exchange_n(&tensor__test_device_reads, 0, __ATOMIC_RELAXED);
        if (reads) test_fail(cases[i].file, 0, "host code took the data pointer of a device tensor %lld times (the first: %s)", (long long)reads, tensor__test_device_read_fn);
        if (tensor_live_handles() != handles || tensor_live_bytes() != bytes)
            test_fail(cases[i].file, 0, "leaked %lld handles, %lld bytes", (long long)(tensor_live_handles() - handles), (long long)(tensor_live_bytes() - bytes));
        if (test_upper_vector_state_dirty() == 1) {
            test_fail(cases[i].file, 0, "returned with the upper halves of the vector registers dirty: a kernel misses vzeroupper");
#if defined(__x86_64__)
            __asm__ volatile("vzeroupper"); /* so the next test is judged on its own */
#endif
        }
        if (times) printf("time %.3f s %s\n", now_seconds() - started, cases[i].name);
        if (current_failures) { failed++; printf("FAIL %s (%s)\n", cases[i].name, cases[i].file); }
        else if (!current_skipped) passed++;
    }
    tensor_shutdown();
    free(cases);
    if (swept_checks)
        printf("  alloc sweep of the gradient checks: %lld memory requests failed one at a time over %lld checks\n", (long long)swept_requests, (long long)swept_checks);
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
