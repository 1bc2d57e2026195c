/* The device seam (tensor__device) without a GPU: a fake device registers through the same table
   tensor_cuda.cu fills and stands in for CUDA. Its memory is host memory behind tagged pointers
   (bit 62 set: a non-canonical address on x86-64 and AArch64), so if the library ever read or
   wrote device memory on the host instead of going through the table, the test would crash. Its
   kernels are the shared formulas (>>formulas) evaluated over the operand descriptions the
   library hands over, so the tests check those descriptions (data at the first element, strides
   in elements, broadcasting, CPU scalars by value), the transfers both ways, the errors, and
   autograd over device tensors. */
#define TENSOR__DEVICE_SOURCE /* the formula lists, as tensor_cuda.cu gets them */
#include "device_sweep.h"
#include "device_grad_sweep.h"

#include <stdint.h>

#define SEAM_TAG ((uintptr_t)1 << 62)
static void *seam_dev(void *host) { return host ? (void *)((uintptr_t)host ^ SEAM_TAG) : NULL; }
static void *seam_host(const void *dev) { return dev ? (void *)((uintptr_t)dev ^ SEAM_TAG) : NULL; }

static int64_t seam_live;           /* device blocks not yet freed */
static size_t seam_limit = SIZE_MAX; /* requests above this fail as out of memory */
static int seam_count = 1;          /* what device_count says */
static int seam_pending_fault;      /* set: the next synchronize reports an asynchronous fault */
static int seam_copies[3];          /* copies by kind */
static int seam_tf32;

static int seam_device_count(void) { return seam_count; }
static const char *seam_info(void) { return "seam test device"; }
static void *seam_alloc(size_t n, char *err, size_t len) {
    if (n > seam_limit) {
        snprintf(err, len, "seam device out of memory: tried to allocate %zu bytes", n);
        return NULL;
    }
    void *p = malloc(n ? n : 1);
    if (!p) { snprintf(err, len, "seam device out of memory: malloc of %zu bytes failed", n); return NULL; }
    __atomic_add_fetch(&seam_live, 1, __ATOMIC_RELAXED);
    return seam_dev(p);
}
static void seam_free(void *p) {
    if (!p) return;
    free(seam_host(p));
    __atomic_sub_fetch(&seam_live, 1, __ATOMIC_RELAXED);
}
static int seam_copy(void *dst, const void *src, size_t n, tensor__copy_kind kind, char *err, size_t len) {
    (void)err, (void)len;
    __atomic_add_fetch(&seam_copies[kind], 1, __ATOMIC_RELAXED);
    void *d = kind == TENSOR__COPY_TO_HOST ? dst : seam_host(dst);
    const void *s = kind == TENSOR__COPY_TO_DEVICE ? src : seam_host(src);
    memcpy(d, s, n);
    return 0;
}
static int seam_synchronize(char *err, size_t len) {
    if (!seam_pending_fault) return 0;
    seam_pending_fault = 0;
    snprintf(err, len, "seam device: an illegal memory access was encountered");
    return -1;
}
static void seam_set_allow_tf32(bool on) { seam_tf32 = on; }

/* ---- kernels: element i of an operand broadcast to out's shape ---- */
static char *seam_elem(const tensor__dev_operand *o, const tensor__dev_operand *out, int64_t i) {
    int64_t off = 0;
    for (int d = out->ndim - 1; d >= 0; d--) {
        int64_t k = i % out->shape[d];
        i /= out->shape[d];
        int od = d - (out->ndim - o->ndim);
        if (od >= 0 && o->shape[od] != 1) off += k * o->strides[od];
    }
    return (char *)seam_host(o->data) + off * (int64_t)tensor_dtype_size(o->dtype);
}
static double seam_f(const tensor__dev_operand *o, const tensor__dev_operand *out, int64_t i) { return o->by_value ? o->value : test_load_f64(seam_elem(o, out, i), o->dtype); }
static int64_t seam_i(const tensor__dev_operand *o, const tensor__dev_operand *out, int64_t i) { return o->by_value ? o->ivalue : test_load_i64(seam_elem(o, out, i), o->dtype); }
static int64_t seam_numel(const tensor__dev_operand *o) {
    int64_t n = 1;
    for (int d = 0; d < o->ndim; d++) n *= o->shape[d];
    return n;
}

typedef double (*seam_ffn)(double x, double y, double p0, double p1, int *err);
typedef int64_t (*seam_ifn)(int64_t x, int64_t y, double p0, double p1, int *err);
static int seam_elementwise(tensor__dev_call *c, seam_ffn f, seam_ifn g) {
    int err = 0;
    int64_t n = seam_numel(&c->out);
    bool ints = !device_float(c->compute);
    for (int64_t i = 0; i < n; i++) {
        char *o = seam_elem(&c->out, &c->out, i);
        if (ints) test_store_i64(o, c->out.dtype, g(seam_i(&c->in[0], &c->out, i), c->n_in > 1 ? seam_i(&c->in[1], &c->out, i) : 0, c->p[0], c->p[1], &err));
        else test_store_f64(o, c->out.dtype, f(seam_f(&c->in[0], &c->out, i), c->n_in > 1 ? seam_f(&c->in[1], &c->out, i) : 0, c->p[0], c->p[1], &err));
    }
    if (err) { snprintf(c->error, sizeof c->error, "integer division by zero"); return 1; }
    return 0;
}
#define SEAM_KERNEL(name, FEXPR, IEXPR)                                                                                       \
    static double seam_f_##name(double x, double y, double p0, double p1, int *err) {                                        \
        (void)x, (void)y, (void)p0, (void)p1, (void)err;                                                                      \
        return (double)(FEXPR);                                                                                               \
    }                                                                                                                         \
    static int64_t seam_i_##name(int64_t x, int64_t y, double p0, double p1, int *err) {                                     \
        (void)x, (void)y, (void)p0, (void)p1, (void)err;                                                                      \
        return (int64_t)(IEXPR);                                                                                              \
    }                                                                                                                         \
    static int seam_k_##name(tensor__dev_call *c) { return seam_elementwise(c, seam_f_##name, seam_i_##name); }
TENSOR__UNARY_FORMULAS(SEAM_KERNEL)
TENSOR__BINARY_FORMULAS(SEAM_KERNEL)

/* out = src converted, broadcast (clone, contiguous, to_dtype: src in[0]; copy_: in[1]) */
static int seam_copy_kernel(tensor__dev_call *c, const tensor__dev_operand *src) {
    int64_t n = seam_numel(&c->out);
    bool ints = !device_float(c->out.dtype) && !device_float(src->dtype);
    for (int64_t i = 0; i < n; i++) {
        char *o = seam_elem(&c->out, &c->out, i);
        if (ints) test_store_i64(o, c->out.dtype, seam_i(src, &c->out, i));
        else test_store_f64(o, c->out.dtype, seam_f(src, &c->out, i));
    }
    return 0;
}
static int seam_k_copy_first(tensor__dev_call *c) { return seam_copy_kernel(c, &c->in[0]); }
static int seam_k_copy_(tensor__dev_call *c) { return seam_copy_kernel(c, &c->in[1]); }
static int seam_k_add_(tensor__dev_call *c) {
    c->compute = c->out.dtype;
    c->n_in = 2;
    return seam_elementwise(c, seam_f_add, seam_i_add);
}
static int seam_k_fill(tensor__dev_call *c, double v) {
    for (int64_t i = 0, n = seam_numel(&c->out); i < n; i++) test_store_f64(seam_elem(&c->out, &c->out, i), c->out.dtype, v);
    return 0;
}
static int seam_k_fill_(tensor__dev_call *c) { return seam_k_fill(c, c->p[0]); }
static int seam_k_zero_(tensor__dev_call *c) { return seam_k_fill(c, 0); }
static int seam_k_mul_scalar_(tensor__dev_call *c) { /* out = in[0] = out * p[0] */
    for (int64_t i = 0, n = seam_numel(&c->out); i < n; i++) {
        char *o = seam_elem(&c->out, &c->out, i);
        if (device_float(c->out.dtype)) test_store_f64(o, c->out.dtype, test_load_f64(o, c->out.dtype) * c->p[0]);
        else test_store_i64(o, c->out.dtype, test_load_i64(o, c->out.dtype) * (int64_t)c->p[0]);
    }
    return 0;
}
static int seam_k_where(tensor__dev_call *c) {
    int64_t n = seam_numel(&c->out);
    bool ints = !device_float(c->compute);
    for (int64_t i = 0; i < n; i++) {
        const tensor__dev_operand *s = seam_i(&c->in[0], &c->out, i) ? &c->in[1] : &c->in[2];
        char *o = seam_elem(&c->out, &c->out, i);
        if (ints) test_store_i64(o, c->out.dtype, seam_i(s, &c->out, i));
        else test_store_f64(o, c->out.dtype, seam_f(s, &c->out, i));
    }
    return 0;
}

static int seam_k_sum_all(tensor__dev_call *c) { /* in double, as a reference */
    double acc = 0;
    for (int64_t i = 0, n = seam_numel(&c->in[0]); i < n; i++) acc += test_load_f64(seam_elem(&c->in[0], &c->in[0], i), c->in[0].dtype);
    test_store_f64(seam_host(c->out.data), c->out.dtype, acc);
    return 0;
}
static int seam_k_extreme(tensor__dev_call *c, bool max) { /* max_all / min_all of integers */
    int64_t best = 0;
    for (int64_t i = 0, n = seam_numel(&c->in[0]); i < n; i++) {
        int64_t v = test_load_i64(seam_elem(&c->in[0], &c->in[0], i), c->in[0].dtype);
        if (i == 0 || (max ? v > best : v < best)) best = v;
    }
    test_store_i64(seam_host(c->out.data), c->out.dtype, best);
    return 0;
}
static int seam_k_max_all(tensor__dev_call *c) { return seam_k_extreme(c, true); }
static int seam_k_min_all(tensor__dev_call *c) { return seam_k_extreme(c, false); }
/* multinomial from the generator's place in ip[2..5] (key, counter, stream, skip): the CPU's
   inverse-CDF scan, sample q drawing words 2q and 2q + 1 after skip */
static uint32_t seam_word(const tensor__dev_call *c, uint64_t word) {
    uint64_t key = (uint64_t)c->ip[2], at = (uint64_t)c->ip[5] + word;
    uint32_t k[2] = {(uint32_t)key, (uint32_t)(key >> 32)}, w[4];
    test_philox_block(k, (uint64_t)c->ip[3] + at / 4, (uint32_t)c->ip[4], w);
    return w[at % 4];
}
static int seam_k_multinomial(tensor__dev_call *c) {
    const tensor__dev_operand *p = &c->in[0];
    int64_t C = p->shape[p->ndim - 1], R = p->ndim == 2 ? p->shape[0] : 1, ns = c->ip[0];
    double *w = (double *)malloc(sizeof(double) * (size_t)C);
    for (int64_t r = 0; r < R; r++) {
        double total = 0;
        for (int64_t j = 0; j < C; j++) total += (w[j] = test_load_f64(seam_elem(p, p, r * C + j), p->dtype));
        for (int64_t s = 0; s < ns; s++) {
            uint64_t q = (uint64_t)(r * ns + s), bits = (uint64_t)seam_word(c, 2 * q) << 32 | seam_word(c, 2 * q + 1);
            double u = (double)(bits >> 11) * (1.0 / 9007199254740992.0) * total, acc = 0;
            int64_t pick = -1;
            for (int64_t j = 0; j < C; j++) {
                if (w[j] <= 0) continue;
                pick = j;
                acc += w[j];
                if (u < acc) break;
            }
            test_store_i64(seam_elem(&c->out, &c->out, r * ns + s), TENSOR_I64, pick);
            if (!c->ip[1] && pick >= 0) { total -= w[pick]; w[pick] = 0; }
        }
    }
    free(w);
    return 0;
}

/* poisson from the place in ip[0..2] (key, counter, stream): >>formulas' sampler on the blocks
   (counter + i, stream, j) of element i, as tensor_cuda.cu's kernel (the random ops, issue 14) */
static int seam_k_poisson(tensor__dev_call *c) {
    uint64_t key = (uint64_t)c->ip[0];
    for (int64_t i = 0, n = seam_numel(&c->out); i < n; i++)
        test_store_f64(seam_elem(&c->out, &c->out, i), c->out.dtype,
                       tensor__poisson_sample(seam_f(&c->in[0], &c->out, i), (uint32_t)key, (uint32_t)(key >> 32), (uint64_t)c->ip[1] + (uint64_t)i, (uint32_t)c->ip[2]));
    return 0;
}

static int seam_sum_squares_calls;
static int seam_sum_squares(int n, const tensor__dev_operand *ts, double *total, char *error, size_t len) {
    (void)error;
    (void)len;
    seam_sum_squares_calls++;
    *total = 0;
    for (int k = 0; k < n; k++)
        for (int64_t i = 0, m = seam_numel(&ts[k]); i < m; i++) {
            double v = test_load_f64(seam_elem(&ts[k], &ts[k], i), ts[k].dtype);
            *total += v * v;
        }
    return 0;
}
static int seam_optim_calls;
static int seam_optim_step(tensor__dev_optim *s) {
    seam_optim_calls++;
    for (int k = 0; k < s->n; k++) {
        const tensor__dev_operand *p = &s->params[k], *g = &s->grads[k], *m = &s->state1[k], *v = &s->state2[k];
        for (int64_t i = 0, n = seam_numel(p); i < n; i++) {
            char *pp = seam_elem(p, p, i), *pm = m->data ? seam_elem(m, p, i) : NULL, *pv = v->data ? seam_elem(v, p, i) : NULL;
            tensor_dtype sd = pm ? m->dtype : TENSOR_F32;
            double s1 = pm ? test_load_f64(pm, sd) : 0, s2 = pv ? test_load_f64(pv, sd) : 0;
            double np = tensor__optim_update(&s->rules[k], test_load_f64(pp, p->dtype), test_load_f64(seam_elem(g, p, i), g->dtype), &s1, &s2, sd == TENSOR_F64);
            if (pm) test_store_f64(pm, sd, s1);
            if (pv) test_store_f64(pv, sd, s2);
            test_store_f64(pp, p->dtype, np);
        }
    }
    return 0;
}

/* softmax over the last dim (ip[0]) of a contiguous input: forward, and its fused backward
   gx = y (g - sum(g y)) with y recomputed, as the CPU's fused kernel does */
static int seam_softmax_rows(const tensor__dev_operand *x, int64_t *rows, int64_t *n) {
    if (x->ndim < 1) return 1;
    *n = x->shape[x->ndim - 1];
    *rows = *n ? seam_numel(x) / *n : 0;
    for (int d = x->ndim - 1, st = 1; d >= 0; st *= (int)x->shape[d], d--) if (x->strides[d] != st && x->shape[d] != 1) return 1;
    return 0;
}
static void seam_softmax_row(const tensor__dev_operand *x, int64_t r, int64_t n, double *y) {
    double m = -INFINITY, sum = 0;
    for (int64_t j = 0; j < n; j++) { y[j] = test_load_f64(seam_elem(x, x, r * n + j), x->dtype); m = y[j] > m ? y[j] : m; }
    for (int64_t j = 0; j < n; j++) sum += (y[j] = exp(y[j] - m));
    for (int64_t j = 0; j < n; j++) y[j] /= sum;
}
static int seam_k_softmax(tensor__dev_call *c) {
    int64_t rows, n;
    if (c->ip[0] != c->in[0].ndim - 1 || seam_softmax_rows(&c->in[0], &rows, &n)) { snprintf(c->error, sizeof c->error, "seam softmax: last dim of a contiguous input only"); return 1; }
    double *y = (double *)malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t r = 0; r < rows; r++) {
        seam_softmax_row(&c->in[0], r, n, y);
        for (int64_t j = 0; j < n; j++) test_store_f64(seam_elem(&c->out, &c->out, r * n + j), c->out.dtype, y[j]);
    }
    free(y);
    return 0;
}
static int seam_backward_calls;
static int seam_kb_softmax(tensor__dev_call *c) {
    int64_t rows, n;
    seam_backward_calls++;
    if (seam_softmax_rows(&c->in[0], &rows, &n) || !c->grads[0].data) { snprintf(c->error, sizeof c->error, "seam softmax backward: bad record"); return 1; }
    double *y = (double *)malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t r = 0; r < rows; r++) {
        seam_softmax_row(&c->in[0], r, n, y);
        double dot = 0;
        for (int64_t j = 0; j < n; j++) dot += y[j] * test_load_f64(seam_elem(&c->grad, &c->in[0], r * n + j), c->grad.dtype);
        for (int64_t j = 0; j < n; j++)
            test_store_f64(seam_elem(&c->grads[0], &c->grads[0], r * n + j), c->grads[0].dtype, y[j] * (test_load_f64(seam_elem(&c->grad, &c->in[0], r * n + j), c->grad.dtype) - dot));
    }
    free(y);
    return 0;
}
static tensor__dev_kernel seam_backward[TENSOR_OP_COUNT];

static const char *seam_names[TENSOR_OP_COUNT];
static tensor__dev_kernel seam_kernels[TENSOR_OP_COUNT];
static tensor__device seam_device;

/* The fake device, as a device TU would register it (test_device_install stands for the static
   initializer and resets what the library learnt about the previous one). */
static int seam_mirror_ops; /* kernels the mirror installed (seam_mirror_install, below) */
static void *seam_to_host(const void *dev) { return seam_host(dev); }
static void seam_install(void) {
    test_device_host_of(seam_to_host); /* a host read of device memory fails the test rather than crash the suite */
    memset(seam_kernels, 0, sizeof seam_kernels); /* the mirror's, when it was installed before */
    memset(seam_backward, 0, sizeof seam_backward);
    seam_mirror_ops = 0;
#define SEAM_NAME(name, kind, impl, types, grad, params, doc) seam_names[TENSOR_OP_##name] = #name;
    TENSOR_OPS(SEAM_NAME)
#define SEAM_SET(name, FEXPR, IEXPR) seam_kernels[TENSOR_OP_##name] = seam_k_##name;
    TENSOR__UNARY_FORMULAS(SEAM_SET)
    TENSOR__BINARY_FORMULAS(SEAM_SET)
    seam_kernels[TENSOR_OP_where] = seam_k_where;
    seam_kernels[TENSOR_OP_clone] = seam_kernels[TENSOR_OP_contiguous] = seam_kernels[TENSOR_OP_to_dtype] = seam_k_copy_first;
    seam_kernels[TENSOR_OP_copy_] = seam_k_copy_;
    seam_kernels[TENSOR_OP_add_] = seam_k_add_;
    seam_kernels[TENSOR_OP_fill_] = seam_k_fill_;
    seam_kernels[TENSOR_OP_zero_] = seam_k_zero_;
    seam_kernels[TENSOR_OP_mul_scalar_] = seam_k_mul_scalar_;
    seam_kernels[TENSOR_OP_sum_all] = seam_k_sum_all;
    seam_kernels[TENSOR_OP_softmax] = seam_k_softmax;
    seam_kernels[TENSOR_OP_max_all] = seam_k_max_all;
    seam_kernels[TENSOR_OP_min_all] = seam_k_min_all;
    seam_kernels[TENSOR_OP_multinomial] = seam_k_multinomial;
    seam_kernels[TENSOR_OP_poisson] = seam_k_poisson;
    seam_backward[TENSOR_OP_softmax] = seam_kb_softmax;
    tensor__device d = {TENSOR__DEVICE_ABI, TENSOR_CUDA, TENSOR_OP_COUNT, seam_names, seam_kernels, seam_device_count, seam_info,
                        seam_alloc, seam_free, seam_copy, seam_synchronize, NULL, seam_set_allow_tf32, seam_optim_step, seam_backward, seam_sum_squares};
    seam_device = d;
    seam_limit = SIZE_MAX;
    seam_count = 1;
    seam_pending_fault = 0;
    test_device_install(&seam_device);
}
static void seam_uninstall(void) {
    test_device_install(NULL);
    test_device_host_of(NULL);
    CHECK_MSG(seam_live == 0, "%lld device blocks left", (long long)seam_live);
}

TEST(seam_refuses_a_table_of_another_tensor_h) {
    tensor_scope_begin();
    seam_install();
    seam_device.abi = TENSOR__DEVICE_ABI + 1;
    test_device_install(&seam_device);
    tensor *a = tensor_ones(TENSOR_SHAPE(2), TENSOR_F32);
    CHECK(!tensor_cuda_available() && tensor_cuda_device_count() == 0);
    CHECK_BAD(tensor_to_device(a, TENSOR_CUDA), "tensor_to_device");
    CHECK(tensor_to_device(a, TENSOR_CUDA) == NULL);
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "built for another version of tensor.h"));
    CHECK(strstr(tensor_build_info(), "cuda: no (tensor_cuda.o is from another tensor.h)") != NULL);
    /* the same ABI and op count, another op list */
    seam_install();
    static const char *renamed[TENSOR_OP_COUNT];
    memcpy(renamed, seam_names, sizeof renamed);
    renamed[TENSOR_OP_add] = "plus";
    seam_device.op_names = renamed;
    test_device_install(&seam_device);
    tensor_clear_error();
    CHECK(tensor_to_device(a, TENSOR_CUDA) == NULL);
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "another op list") && strstr(tensor_last_error(), "plus"));
    /* linked, but no GPU */
    seam_install();
    seam_count = 0;
    tensor_clear_error();
    CHECK(!tensor_cuda_available() && tensor_to_device(a, TENSOR_CUDA) == NULL);
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "found no device"));
    CHECK(strstr(tensor_build_info(), "cuda: no (tensor_cuda.o linked, no device)") != NULL);
    CHECK_BAD_INT(tensor_cuda_synchronize() != 0, "tensor_cuda_synchronize");
    seam_uninstall();
    /* nothing linked */
    CHECK(!tensor_cuda_available() && tensor_cuda_device_count() == 0);
    CHECK(strstr(tensor_build_info(), "cuda: no;") != NULL);
    CHECK_BAD_INT(tensor_cuda_synchronize() != 0, "tensor_cuda_synchronize");
    tensor_clear_error();
    CHECK(tensor_to_device(a, TENSOR_CUDA) == NULL && tensor_last_error() && strstr(tensor_last_error(), "CUDA is not available"));
    tensor_clear_error();
    tensor_scope_end();
}

TEST(seam_transfers_every_dtype_and_layout) {
    seam_install();
    CHECK(tensor_cuda_available() && tensor_cuda_device_count() == 1);
    CHECK(strstr(tensor_build_info(), "cuda: seam test device") != NULL);
    for (int dt = 0; dt < TENSOR_DTYPE_COUNT; dt++) {
        tensor_scope_begin();
        tensor *b = tensor_to_dtype(tensor_reshape(tensor_arange(0, 24, 1, TENSOR_F64), TENSOR_SHAPE(2, 3, 4)), (tensor_dtype)dt);
        tensor *views[4] = {b, tensor_transpose(b, 0, 2), tensor_slice(b, 2, 1, 4, 2), tensor_expand(tensor_slice(b, 0, 0, 1, 1), TENSOR_SHAPE(5, 3, 4))};
        for (int v = 0; v < 4; v++) {
            tensor *d = device_cuda(views[v]);
            CHECK(d && tensor_get_device(d) == TENSOR_CUDA && tensor_get_dtype(d) == (tensor_dtype)dt);
            tensor *dv = tensor_transpose(d, 0, 1); /* a non-contiguous device view goes back */
            tensor *h = tensor_to_device(dv, TENSOR_CPU), *ref = tensor_transpose(views[v], 0, 1);
            CHECK(h && tensor_get_device(h) == TENSOR_CPU && test_same_bits(h, ref));
            /* tensor_copy_to and tensor_item read device tensors too */
            size_t n = (size_t)tensor_numel(ref) * tensor_dtype_size((tensor_dtype)dt);
            char *got = (char *)malloc(n), *want = (char *)malloc(n);
            CHECK(tensor_copy_to(dv, got, n) == 0 && tensor_copy_to(ref, want, n) == 0 && memcmp(got, want, n) == 0);
            free(got);
            free(want);
            tensor *one = tensor_select(tensor_select(tensor_select(d, 0, 1), 0, 1), 0, 1);
            CHECK(one && tensor_item(one) == tensor_item(tensor_select(tensor_select(tensor_select(views[v], 0, 1), 0, 1), 0, 1)));
        }
        tensor_scope_end();
    }
    tensor_scope_begin();
    /* the host never gets a device tensor's data pointer; printing copies first */
    tensor *d = device_cuda(tensor_arange(0, 3, 1, TENSOR_F32));
    tensor_clear_error();
    CHECK(tensor_data_ptr(d) == NULL && tensor_last_error() && strstr(tensor_last_error(), "on cuda"));
    tensor_clear_error();
    char text[128];
    CHECK(tensor_snprint(d, text, sizeof text) > 0 && strstr(text, "device='cuda:0'") && strstr(text, "1."));
    /* empty tensors move too */
    tensor *eh = tensor_to_device(device_cuda(tensor_zeros(TENSOR_SHAPE(0, 3), TENSOR_F32)), TENSOR_CPU);
    CHECK(eh && tensor_numel(eh) == 0 && tensor_ndim(eh) == 2);
    /* the copies went by the table: to the device, back to the host */
    CHECK(seam_copies[TENSOR__COPY_TO_DEVICE] > 0 && seam_copies[TENSOR__COPY_TO_HOST] > 0);
    tensor_scope_end();
    seam_uninstall();
}

TEST(seam_elementwise_ops_match_the_cpu) {
    seam_install();
    device_sweep_elementwise();
    seam_uninstall();
}

TEST(seam_cpu_scalars_and_mixed_devices) {
    seam_install();
    tensor_scope_begin();
    tensor *x = tensor_reshape(tensor_arange(-3, 3, 1, TENSOR_F32), TENSOR_SHAPE(2, 3));
    tensor *xi = tensor_reshape(tensor_arange(-3, 3, 1, TENSOR_I64), TENSOR_SHAPE(2, 3));
    tensor *dx = device_cuda(x), *dxi = device_cuda(xi);
    /* wrapped numbers and CPU 0-dim tensors go by value, on either side */
    device_check_same("mul_scalar", tensor_mul_scalar(dx, 2.5), tensor_mul_scalar(x, 2.5));
    device_check_same("pow_scalar", tensor_pow_scalar(dx, 2), tensor_pow_scalar(x, 2));
    device_check_same("int add_scalar", tensor_add_scalar(dxi, 7), tensor_add_scalar(xi, 7));
    device_check_same("int div_scalar", tensor_div_scalar(dxi, 2), tensor_div_scalar(xi, 2));
    tensor *s = tensor_scalar(1.5, TENSOR_F64);
    device_check_same("scalar - x", tensor_sub(s, dx), tensor_sub(s, x));
    device_check_same("x * scalar", tensor_mul(dxi, s), tensor_mul(xi, s));
    tensor *cond = tensor_gt(x, tensor_scalar(0, TENSOR_F32));
    device_check_same("where", tensor_where(device_cuda(cond), dx, s), tensor_where(cond, x, s));
    /* in place on the device */
    tensor *y = tensor_clone(dx);
    CHECK(tensor_add_(y, dx) == y);
    device_check_same("add_", y, tensor_add(x, x));
    CHECK(tensor_copy_(y, device_cuda(tensor_ones(TENSOR_SHAPE(3), TENSOR_F64))) == y);
    device_check_same("copy_", y, tensor_ones(TENSOR_SHAPE(2, 3), TENSOR_F32));
    CHECK(tensor_mul_scalar_(y, 3) == y);
    device_check_same("mul_scalar_", y, tensor_full(TENSOR_SHAPE(2, 3), 3, TENSOR_F32));
    CHECK(tensor_fill_(tensor_select(y, 0, 1), -2) != NULL);
    CHECK(tensor_zero_(tensor_select(y, 0, 0)) != NULL);
    device_check_same("fill_ zero_", y, test_tensor(TENSOR_F32, 2, (const int64_t[]){2, 3}, (const double[]){0, 0, 0, -2, -2, -2}));
    device_check_same("to_dtype", tensor_to_dtype(dx, TENSOR_BF16), tensor_to_dtype(x, TENSOR_BF16));
    device_check_same("contiguous", tensor_contiguous(tensor_transpose(dx, 0, 1)), tensor_contiguous(tensor_transpose(x, 0, 1)));
    /* a CPU tensor of more than 0 dims beside a device tensor: an error, never a silent copy */
    CHECK_BAD(tensor_add(dx, x), "tensor_add");
    CHECK_BAD(tensor_add_(y, x), "tensor_add_");
    tensor_add(dx, x);
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "different devices (cuda and cpu)"));
    /* an op the device has no kernel for says so */
    tensor_clear_error();
    CHECK(tensor_prod(dx, 0, false) == NULL && tensor_last_error() && strstr(tensor_last_error(), "prod has no kernel on cuda"));
    tensor_clear_error();
    tensor_scope_end();
    seam_uninstall();
}

TEST(seam_errors_of_the_device) {
    seam_install();
    tensor_scope_begin();
    tensor *x = tensor_ones(TENSOR_SHAPE(1000), TENSOR_F32);
    int64_t live = tensor_live_handles();
    /* out of device memory: the device's message, nothing left behind */
    seam_limit = 1000;
    CHECK_BAD(tensor_to_device(x, TENSOR_CUDA), "tensor_to_device");
    CHECK(tensor_to_device(x, TENSOR_CUDA) == NULL && tensor_last_error() && strstr(tensor_last_error(), "tried to allocate 4000 bytes"));
    tensor_clear_error();
    CHECK(tensor_live_handles() == live && seam_live == 0);
    seam_limit = SIZE_MAX;
    /* a kernel's error comes back with its message */
    tensor *di = device_cuda(tensor_arange(0, 4, 1, TENSOR_I32));
    CHECK_BAD(tensor_fmod(di, device_cuda(tensor_zeros(TENSOR_SHAPE(4), TENSOR_I32))), "tensor_fmod");
    tensor_fmod(di, tensor_scalar(0, TENSOR_I64));
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "integer division by zero"));
    tensor_clear_error();
    /* an asynchronous fault is reported by the next synchronize */
    CHECK(tensor_cuda_synchronize() == 0);
    seam_pending_fault = 1;
    CHECK_BAD_INT(tensor_cuda_synchronize() != 0, "tensor_cuda_synchronize");
    seam_pending_fault = 1;
    tensor_cuda_synchronize();
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "illegal memory access"));
    tensor_clear_error();
    /* host-side code that has no device path refuses device tensors with a message */
    tensor *p = tensor_set_requires_grad(device_cuda(tensor_ones(TENSOR_SHAPE(3), TENSOR_F32)), true);
    CHECK_BAD(tensor_uniform_(p, 0, 1), "tensor_uniform_");
    /* TF32 reaches the device */
    tensor_set_allow_tf32(true);
    CHECK(seam_tf32 == 1);
    tensor_set_allow_tf32(false);
    CHECK(seam_tf32 == 0);
    tensor_scope_end();
    seam_uninstall();
    /* ... also when it was asked for before the device was first used */
    tensor_set_allow_tf32(true);
    seam_install();
    seam_tf32 = 0;
    CHECK(tensor_cuda_available() && seam_tf32 == 1);
    tensor_set_allow_tf32(false);
    seam_uninstall();
}

/* Autograd through device ops: the leaf's gradient is a device tensor and equals the CPU's; and
   through to_device, a CPU leaf gets its gradient back on the CPU. */
TEST(seam_autograd_on_the_device) {
    seam_install();
    tensor_scope_begin();
    tensor *x = tensor_reshape(tensor_linspace(-2, 2, 6, TENSOR_F64), TENSOR_SHAPE(2, 3));
    tensor *w = tensor_set_requires_grad(tensor_clone(x), true);
    tensor *dw = tensor_set_requires_grad(device_cuda(x), true);
    tensor *g = tensor_full(TENSOR_SHAPE(2, 3), 0.5, TENSOR_F64);
    tensor *y = tensor_mul(tensor_tanh(tensor_mul(w, w)), tensor_sigmoid(w));
    tensor *dy = tensor_mul(tensor_tanh(tensor_mul(dw, dw)), tensor_sigmoid(dw));
    CHECK(tensor_backward_with(y, g) == 0);
    CHECK(tensor_backward_with(dy, device_cuda(g)) == 0);
    CHECK(tensor_grad(dw) && tensor_get_device(tensor_grad(dw)) == TENSOR_CUDA);
    device_check_same("grad", tensor_grad(dw), tensor_grad(w));
    /* tensor_backward of a device loss: its gradient of 1 is made on the device */
    tensor *l = tensor_set_requires_grad(tensor_clone(x), true), *dl = tensor_set_requires_grad(device_cuda(x), true);
    CHECK(tensor_backward(tensor_sum_all(tensor_tanh(tensor_mul(l, x)))) == 0);
    CHECK(tensor_backward(tensor_sum_all(tensor_tanh(tensor_mul(dl, device_cuda(x))))) == 0);
    device_check_same("grad of a device loss", tensor_grad(dl), tensor_grad(l));
    /* a CPU leaf moved to the device: its gradient comes back to the CPU */
    tensor *c = tensor_set_requires_grad(tensor_clone(x), true);
    tensor *dc = tensor_exp(tensor_to_device(c, TENSOR_CUDA));
    CHECK(tensor_backward_with(tensor_to_device(dc, TENSOR_CPU), g) == 0);
    CHECK(tensor_grad(c) && tensor_get_device(tensor_grad(c)) == TENSOR_CPU);
    tensor *want = tensor_mul(tensor_exp(x), g);
    CHECK(tensor_grad(c) && test_same_bits(tensor_grad(c), want));
    tensor_scope_end();
    seam_uninstall();
}

/* Optimizer steps on device parameters: one call of the device's optim_step per step, and the
   same values as the CPU's reference loop (the same update formula, tensor__optim_update); a
   state loaded onto the CPU moves to the device; clip_grad_norm composes device ops. */
TEST(seam_optimizer_steps_on_the_device) {
    seam_install();
    bool ref = tensor_set_reference_kernels(true); /* the CPU's reference loop: tensor__optim_update too */
    for (int kind = 0; kind < 4; kind++) {
        tensor_scope_begin();
        tensor *w = tensor_reshape(tensor_linspace(-1, 1, 12, TENSOR_F32), TENSOR_SHAPE(3, 4));
        tensor *b = tensor_linspace(0.5, -0.5, 4, TENSOR_F64);
        tensor *cpu[2] = {tensor_set_requires_grad(tensor_clone(w), true), tensor_set_requires_grad(tensor_clone(b), true)};
        tensor *dev[2] = {tensor_set_requires_grad(device_cuda(w), true), tensor_set_requires_grad(device_cuda(b), true)};
        tensor_optim *oc, *od;
        if (kind == 0) { oc = tensor_optim_sgd(2, cpu, 0.1, 0, 0.01, false); od = tensor_optim_sgd(2, dev, 0.1, 0, 0.01, false); }
        else if (kind == 1) { oc = tensor_optim_sgd(2, cpu, 0.1, 0.9, 0, true); od = tensor_optim_sgd(2, dev, 0.1, 0.9, 0, true); }
        else if (kind == 2) { oc = tensor_optim_adam(2, cpu, 0.01, 0.9, 0.999, 1e-8, 0.1); od = tensor_optim_adam(2, dev, 0.01, 0.9, 0.999, 1e-8, 0.1); }
        else { oc = tensor_optim_adamw(2, cpu, 0.01, 0.9, 0.999, 1e-8, 0.1); od = tensor_optim_adamw(2, dev, 0.01, 0.9, 0.999, 1e-8, 0.1); }
        CHECK(oc && od);
        int calls = seam_optim_calls;
        for (int step = 0; step < 3 && oc && od; step++) {
            tensor *gw = tensor_mul_scalar(tensor_sin(tensor_add_scalar(w, step)), 0.5), *gb = tensor_cos(tensor_mul_scalar(b, step + 1));
            CHECK(tensor_backward_with(tensor_mul(cpu[0], tensor_ones(TENSOR_SHAPE(3, 4), TENSOR_F32)), gw) == 0);
            CHECK(tensor_backward_with(tensor_mul(cpu[1], tensor_ones(TENSOR_SHAPE(4), TENSOR_F64)), gb) == 0);
            CHECK(tensor_backward_with(tensor_mul(dev[0], device_cuda(tensor_ones(TENSOR_SHAPE(3, 4), TENSOR_F32))), device_cuda(gw)) == 0);
            CHECK(tensor_backward_with(tensor_mul(dev[1], device_cuda(tensor_ones(TENSOR_SHAPE(4), TENSOR_F64))), device_cuda(gb)) == 0);
            CHECK(tensor_optim_step(oc) == 0 && tensor_optim_step(od) == 0);
            tensor_optim_zero_grad(oc);
            tensor_optim_zero_grad(od);
        }
        CHECK(seam_optim_calls == calls + 3); /* both parameters in one call per step */
        tensor *hw = tensor_to_device(dev[0], TENSOR_CPU), *hb = tensor_to_device(dev[1], TENSOR_CPU);
        CHECK_MSG(hw && hb && test_same_bits(hw, cpu[0]) && test_same_bits(hb, cpu[1]), "optimizer kind %d: the device's parameters differ from the CPU's", kind);
        tensor_optim_free(oc);
        tensor_optim_free(od);
        tensor_scope_end();
    }
    tensor_set_reference_kernels(ref);
    /* clip_grad_norm over device gradients */
    tensor_scope_begin();
    tensor *x = tensor_linspace(-2, 3, 5, TENSOR_F32);
    tensor *hp = tensor_set_requires_grad(tensor_clone(x), true), *dp = tensor_set_requires_grad(device_cuda(x), true);
    CHECK(tensor_backward_with(tensor_mul(hp, hp), x) == 0 && tensor_backward_with(tensor_mul(dp, dp), device_cuda(x)) == 0);
    int sq_calls = seam_sum_squares_calls;
    double nh = tensor_clip_grad_norm(1, &hp, 1.0), nd = tensor_clip_grad_norm(1, &dp, 1.0);
    CHECK_NEAR(nd, nh, 1e-12, 1e-6);
    CHECK(seam_sum_squares_calls == sq_calls + 1);
    device_check_same("clipped gradient", tensor_grad(dp), tensor_grad(hp));
    /* a device without sum_squares: composed of its ops */
    seam_device.sum_squares = NULL;
    CHECK(tensor_backward_with(tensor_mul(hp, hp), x) == 0 && tensor_backward_with(tensor_mul(dp, dp), device_cuda(x)) == 0);
    nh = tensor_clip_grad_norm(1, &hp, 1.0);
    nd = tensor_clip_grad_norm(1, &dp, 1.0);
    CHECK_NEAR(nd, nh, 1e-12, 1e-6);
    CHECK(seam_sum_squares_calls == sq_calls + 1);
    device_check_same("clipped gradient, composed", tensor_grad(dp), tensor_grad(hp));
    tensor_scope_end();
    seam_uninstall();
}

/* A device's fused backward: tensor_backward runs it (one call) when no graph is being built, and
   the result equals the CPU's; cat runs as the device's copy_ into each slab. */
TEST(seam_fused_backward_and_cat) {
    seam_install();
    tensor_scope_begin();
    tensor *x = tensor_reshape(tensor_linspace(-3, 2, 12, TENSOR_F64), TENSOR_SHAPE(3, 4));
    tensor *g = tensor_reshape(tensor_linspace(1, -1, 12, TENSOR_F64), TENSOR_SHAPE(3, 4));
    tensor *hx = tensor_set_requires_grad(tensor_clone(x), true), *dx = tensor_set_requires_grad(device_cuda(x), true);
    device_check_same("softmax", tensor_softmax(dx, 1), tensor_softmax(hx, 1));
    int calls = seam_backward_calls;
    CHECK(tensor_backward_with(tensor_softmax(hx, 1), g) == 0);
    CHECK(tensor_backward_with(tensor_softmax(dx, 1), device_cuda(g)) == 0);
    CHECK(seam_backward_calls == calls + 1);
    device_check_same("softmax backward", tensor_grad(dx), tensor_grad(hx));
    /* with create_graph the derivative composes ops, which need kernels this device lacks: an error, not a crash */
    tensor *gx = NULL;
    tensor *out = tensor_softmax(dx, 1);
    CHECK(tensor_autograd_grad(1, &out, (tensor *[]){device_cuda(g)}, 1, &dx, &gx, true) != 0 && gx == NULL);
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "has no kernel on cuda"));
    tensor_clear_error();
    CHECK(seam_backward_calls == calls + 1);
    /* cat of six device tensors (more than a call record holds), with an empty one and a strided one */
    tensor *parts[6], *hparts[6];
    for (int i = 0; i < 6; i++) {
        hparts[i] = i == 2 ? tensor_zeros(TENSOR_SHAPE(3, 0), TENSOR_F32) : tensor_to_dtype(tensor_add_scalar(i == 4 ? tensor_transpose(tensor_reshape(x, TENSOR_SHAPE(4, 3)), 0, 1) : x, i), TENSOR_F32);
        parts[i] = device_cuda(hparts[i]);
    }
    device_check_same("cat", tensor_cat(6, parts, 1), tensor_cat(6, hparts, 1));
    device_check_same("cat dim 0", tensor_cat(3, parts + 3, 0), tensor_cat(3, hparts + 3, 0));
    /* one_hot composed of device ops (its range from two device reductions) */
    tensor *cls = tensor_to_dtype(tensor_reshape(tensor_arange(0, 6, 1, TENSOR_I64), TENSOR_SHAPE(2, 3)), TENSOR_I32);
    device_check_same("one_hot", tensor_one_hot(device_cuda(cls), -1), tensor_one_hot(cls, -1));
    device_check_same("one_hot 9", tensor_one_hot(device_cuda(cls), 9), tensor_one_hot(cls, 9));
    CHECK_BAD(tensor_one_hot(device_cuda(cls), 4), "tensor_one_hot");
    tensor_scope_end();
    seam_uninstall();
}

/* multinomial of device probabilities: the device is told where in the generator's stream its
   draws start, so it picks what the CPU picks, and the generator goes on where the CPU's would. */
TEST(seam_multinomial_draws_the_cpu_words) {
    seam_install();
    tensor_scope_begin();
    tensor *probs = tensor_transpose(tensor_relu(tensor_reshape(tensor_add_scalar(tensor_sin(tensor_arange(0, 40, 1, TENSOR_F64)), 0.5), TENSOR_SHAPE(8, 5))), 0, 1); /* [5, 8], strided, zeros */
    for (int repl = 0; repl < 2; repl++) {
        int64_t ns = repl ? 9 : 3;
        tensor_manual_seed(5);
        tensor_rand(TENSOR_SHAPE(1), TENSOR_F32); /* part-way through a block */
        tensor *want = tensor_multinomial(probs, ns, repl), *next_cpu = tensor_rand(TENSOR_SHAPE(3), TENSOR_F64);
        tensor_manual_seed(5);
        tensor_rand(TENSOR_SHAPE(1), TENSOR_F32);
        tensor *got = tensor_multinomial(device_cuda(probs), ns, repl), *next_dev = tensor_rand(TENSOR_SHAPE(3), TENSOR_F64);
        CHECK(got && tensor_get_device(got) == TENSOR_CUDA && tensor_get_dtype(got) == TENSOR_I64);
        device_check_same("multinomial", got, want);
        CHECK(test_same_bits(next_cpu, next_dev));
    }
    CHECK_BAD(tensor_multinomial(device_cuda(probs), 0, true), "tensor_multinomial");
    tensor_scope_end();
    seam_uninstall();
}

/* The random ops of issue 14 on the device: the same numbers as on the CPU (device_sweep.h). */
TEST(seam_random_ops_match_the_cpu) {
    seam_install();
    tensor_scope_begin();
    device_random_ops_match();
    tensor_scope_end();
    seam_uninstall();
}

/* ---- the mirror device: every op tensor_cuda.cu has a kernel for, on the fake device ----
   Its kernels are the CPU's, run over the operands of the device call (test_mirror_kernel), so
   it computes what the CPU computes while its memory stays out of the host's reach (tagged
   pointers) and its tensors are not the CPU's. Whatever host code reads a device tensor's data, or
   hands a CPU tensor to a device op, fails here as it would on a GPU; and every op's forward and
   backward runs on it through the registry's gradient checks. Its kernels are those of
   tensor_cuda.cu (the names it registers, read from the file), so the library takes the paths it
   takes with a GPU: a composite where CUDA has no kernel, a "no kernel" error where neither
   does. */
static int seam_k_mirror(tensor__dev_call *c) { return test_mirror_kernel(c, seam_to_host); }
static int seam_kb_mirror(tensor__dev_call *c) { return test_mirror_backward(c, seam_to_host); }

/* The ops tensor_cuda.cu registers a kernel for: the formula lists and its TENSOR__CUDA_KERNEL
   lines. False when the file cannot be read (the suite runs from the project root). */
static bool seam_cuda_ops(bool has[TENSOR_OP_COUNT], bool backward[TENSOR_OP_COUNT]) {
    memset(has, 0, sizeof(bool) * TENSOR_OP_COUNT);
    memset(backward, 0, sizeof(bool) * TENSOR_OP_COUNT);
#define SEAM_CUDA_FORMULA(name, FEXPR, IEXPR) has[TENSOR_OP_##name] = true;
    TENSOR__UNARY_FORMULAS(SEAM_CUDA_FORMULA)
    TENSOR__BINARY_FORMULAS(SEAM_CUDA_FORMULA)
    TENSOR__TERNARY_FORMULAS(SEAM_CUDA_FORMULA)
    FILE *f = fopen("tensor_cuda.cu", "r");
    if (!f) return false;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        bool fwd = !strncmp(line, "TENSOR__CUDA_KERNEL(", 20), bwd = !strncmp(line, "TENSOR__CUDA_BACKWARD(", 22);
        if (!fwd && !bwd) continue;
        char *name = line + (fwd ? 20 : 22), *end = strchr(name, ',');
        if (!end) continue;
        *end = 0;
        bool found = false;
        for (int op = 0; op < TENSOR_OP_COUNT; op++)
            if (!strcmp(tensor_op_name((tensor_op)op), name)) (fwd ? has : backward)[op] = found = true;
        CHECK_MSG(found, "tensor_cuda.cu registers a kernel for '%s', which is not an op of ops.def", name);
    }
    fclose(f);
    return true;
}

static bool seam_mirror_install(void) {
    bool cuda[TENSOR_OP_COUNT], cuda_backward[TENSOR_OP_COUNT];
    if (!seam_cuda_ops(cuda, cuda_backward)) { test_fail(__FILE__, __LINE__, "cannot read tensor_cuda.cu (run the suite from the project root)"); return false; }
    seam_install();
    seam_mirror_ops = 0;
    for (int op = 0; op < TENSOR_OP_COUNT; op++) {
        seam_backward[op] = cuda_backward[op] ? seam_kb_mirror : NULL;
        if (!cuda[op]) { seam_kernels[op] = NULL; continue; }
        CHECK_MSG(test_has_cpu_kernel((tensor_op)op) || op == TENSOR_OP_multinomial || op == TENSOR_OP_poisson,
                  "tensor_cuda.cu has a kernel for %s, which has no CPU kernel to mirror", tensor_op_name((tensor_op)op));
        seam_mirror_ops++;
        if (op == TENSOR_OP_multinomial || op == TENSOR_OP_poisson) continue; /* the seam's: they draw the words the call names */
        seam_kernels[op] = seam_k_mirror;
    }
    seam_limit = (size_t)1 << 36; /* as a GPU's memory: 64 GiB (the CUDA suite asks for 4 TiB once) */
    test_device_install(&seam_device);
    return true;
}
/* The CUDA suite built against the mirror device (tests/cuda/test_cuda.c with -DDEVICE_MIRROR, make
   test): its tests install it first. */
static void seam_mirror_uninstall(void);
bool test_mirror_device_ready(void) {
    test_cleanup = seam_mirror_uninstall; /* the next test starts without it */
    if (tensor_cuda_available() && seam_mirror_ops > 0 && seam_kernels[TENSOR_OP_matmul] == seam_k_mirror) return true;
    return seam_mirror_install();
}
static void seam_mirror_uninstall(void) {
    seam_mirror_ops = 0;
    test_device_host_of(NULL);
    for (int op = 0; op < TENSOR_OP_COUNT; op++) seam_kernels[op] = NULL;
    seam_uninstall();
}

/* Every differentiable op's gradient checks on the mirror device (tests/device_grad_sweep.h); the
   CUDA suite runs the same sweep on a GPU. */
TEST(seam_mirror_runs_every_op_forward_and_backward) {
    if (!seam_mirror_install()) return;
    device_sweep_gradchecks("mirror device");
    printf("  (%d kernels as tensor_cuda.cu)\n", seam_mirror_ops);
    seam_mirror_uninstall();
}

/* The collectives take CPU tensors (CUDA ones need tensor_cuda.cu built with NCCL): a device
   tensor is refused with a message saying so, here and on every rank over MPI. */
TEST(seam_collectives_refuse_device_tensors) {
    seam_install();
    tensor *d = device_cuda(tensor_ones(TENSOR_SHAPE(4), TENSOR_F32));
    CHECK_BAD_INT(tensor_dist_all_reduce(d, TENSOR_REDUCE_SUM) != 0, "tensor_dist_all_reduce");
    CHECK(tensor_dist_all_reduce(d, TENSOR_REDUCE_SUM) != 0 && strstr(tensor_last_error(), "TENSOR_USE_NCCL"));
    tensor_clear_error();
    CHECK_BAD_INT(tensor_dist_broadcast(d, 0) != 0, "tensor_dist_broadcast");
    CHECK_BAD(tensor_dist_all_gather(d), "tensor_dist_all_gather");
    CHECK_BAD(tensor_dist_reduce_scatter(d, TENSOR_REDUCE_SUM), "tensor_dist_reduce_scatter");
}
