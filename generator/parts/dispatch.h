// >>dispatch -----------------------------------------------------------------------------------
/* One call of an op, as its front-end prepared it: validated inputs, the allocated output and the
   op's parameters. Every kernel of every device takes this one struct, so the table below has one
   type. A kernel returns 0, or non-zero after recording an error. */
#define TENSOR__MAX_INPUTS 4
typedef struct tensor__call {
    tensor_op op;
    const char *fn;                    /* the public function, for messages */
    int n_in;
    tensor *in[TENSOR__MAX_INPUTS];    /* inputs (NULL where an optional one is absent) */
    tensor *out;                       /* the output, allocated by the front-end */
    tensor *out2;                      /* a second output where an op has one (indices, saved stats) */
    tensor_dtype compute;              /* the dtype elementwise kernels compute in */
    double p[4];                       /* double parameters */
    int64_t ip[16];                    /* integer parameters (sizes, flags, pads) */
    int n_dims;                        /* reductions: how many dims in dims[] */
    int dims[TENSOR_MAX_DIMS];
    int error;                         /* set by a kernel loop that met a bad value */
} tensor__call;

typedef int (*tensor__kernel_fn)(tensor__call *c);

/* Forward declarations of every CPU kernel the registry names (impl KERNEL). A kernel named here
   but never written fails to compile, so no op can be registered without one. */
#define TENSOR__DECLARE_KERNEL_KERNEL(name) static int tensor__cpu_##name(tensor__call *c);
#define TENSOR__DECLARE_KERNEL_VIEW(name)
#define TENSOR__DECLARE_KERNEL_COMPOSITE(name)
#define TENSOR__DECLARE_KERNEL(name, kind, impl, types, grad, params, doc) TENSOR__DECLARE_KERNEL_##impl(name)
TENSOR_OPS(TENSOR__DECLARE_KERNEL)

/* kernel[op][device]: the CPU column comes from the registry; the CUDA column is empty until
   tensor_cuda.cu registers its kernels at start-up. */
#define TENSOR__KERNEL_ENTRY_KERNEL(name) tensor__cpu_##name
#define TENSOR__KERNEL_ENTRY_VIEW(name) 0
#define TENSOR__KERNEL_ENTRY_COMPOSITE(name) 0
#define TENSOR__KERNEL_ROW(name, kind, impl, types, grad, params, doc) {TENSOR__KERNEL_ENTRY_##impl(name), 0},
static tensor__kernel_fn tensor__kernels[TENSOR_OP_COUNT][TENSOR_DEVICE_COUNT] = {TENSOR_OPS(TENSOR__KERNEL_ROW)};

/* Static facts about each op, from the registry. */
enum { TENSOR__TYPES_SAME, TENSOR__TYPES_FLOAT, TENSOR__TYPES_BOOL, TENSOR__TYPES_NUM, TENSOR__TYPES_ANY,
       TENSOR__TYPES_BITS, TENSOR__TYPES_INT, TENSOR__TYPES_REAL, TENSOR__TYPES_F64 };
#define TENSOR__TYPES_OF_SAME TENSOR__TYPES_SAME
#define TENSOR__TYPES_OF_FLOAT TENSOR__TYPES_FLOAT
#define TENSOR__TYPES_OF_BOOL TENSOR__TYPES_BOOL
#define TENSOR__TYPES_OF_NUM TENSOR__TYPES_NUM
#define TENSOR__TYPES_OF_ANY TENSOR__TYPES_ANY
#define TENSOR__TYPES_OF_BITS TENSOR__TYPES_BITS
#define TENSOR__TYPES_OF_INT TENSOR__TYPES_INT
#define TENSOR__TYPES_OF_REAL TENSOR__TYPES_REAL
#define TENSOR__TYPES_OF_F64 TENSOR__TYPES_F64
#define TENSOR__GRAD_OF_DIFF 1
#define TENSOR__GRAD_OF_NODIFF 0
typedef struct { const char *name, *fn, *kind; int types; bool differentiable; } tensor__op_info;
#define TENSOR__INFO_ROW(name, kind, impl, types, grad, params, doc) {#name, "tensor_" #name, #kind, TENSOR__TYPES_OF_##types, TENSOR__GRAD_OF_##grad != 0},
static const tensor__op_info tensor__ops[TENSOR_OP_COUNT] = {TENSOR_OPS(TENSOR__INFO_ROW)};

TENSOR_API const char *tensor_op_name(tensor_op op) { return (unsigned)op < TENSOR_OP_COUNT ? tensor__ops[op].name : NULL; }
TENSOR_API bool tensor_op_differentiable(tensor_op op) { return (unsigned)op < TENSOR_OP_COUNT && tensor__ops[op].differentiable; }

/* ---- devices: the kernels of a registered device (>>devices) run through one trampoline ----
   The trampoline turns the call record into the device's plain description (tensor__dev_call) and
   calls the device's kernel for the op. A CPU 0-dim input of an elementwise op (a wrapped number,
   as PyTorch allows beside CUDA tensors) goes by value; any other op gets it copied to the device. */
static bool tensor__op_elementwise(tensor_op op) {
    const char *k = tensor__ops[op].kind;
    return !strcmp(k, "UNARY") || !strcmp(k, "UNARY_P") || !strcmp(k, "BINARY") || !strcmp(k, "TERNARY") || !strcmp(k, "SCALAR") || !strcmp(k, "INPLACE");
}
static void tensor__dev_operand_of(tensor__dev_operand *o, const tensor *t) {
    memset(o, 0, sizeof *o);
    if (!t) return;
    o->data = (char *)t->storage->data + t->offset * (int64_t)tensor__dtype_sizes[t->dtype];
    o->dtype = t->dtype;
    o->ndim = t->ndim;
    for (int d = 0; d < t->ndim; d++) { o->shape[d] = t->shape[d]; o->strides[d] = t->strides[d]; }
}
static tensor *tensor__transfer_copy(const char *fn, tensor *t, tensor_device device); /* >>create: a copy on device, no autograd */
static int tensor__device_kernel(tensor__call *c) {
    tensor_device dev = c->out->storage->device;
    const tensor__device *d = tensor__devices[dev];
    tensor__dev_kernel k = d->kernels[c->op];
    tensor__dev_call dc;
    tensor *moved[TENSOR__MAX_INPUTS] = {NULL, NULL, NULL, NULL};
    int rc = 0;
    dc.op = c->op;
    dc.n_in = c->n_in;
    for (int i = 0; i < TENSOR__MAX_INPUTS; i++) {
        tensor *t = c->in[i];
        tensor__dev_operand *o = &dc.in[i];
        tensor__dev_operand_of(o, NULL);
        if (!t || t->storage->device == dev) { tensor__dev_operand_of(o, t); continue; }
        if (t->storage->device != TENSOR_CPU || t->ndim != 0) {
            tensor__fail(c->fn, "inputs are on different devices (%s and %s); move them with tensor_to_device", tensor__device_name(t->storage->device), tensor__device_name(dev));
            rc = 1;
            break;
        }
        if (tensor__op_elementwise(c->op)) {
            o->dtype = t->dtype;
            o->by_value = true;
            o->value = tensor__load_f64(tensor__data(t), t->dtype);
            o->ivalue = tensor__load_i64(tensor__data(t), t->dtype);
            continue;
        }
        if (!(moved[i] = tensor__transfer_copy(c->fn, t, dev))) { rc = 1; break; }
        tensor__dev_operand_of(o, moved[i]);
    }
    if (!rc) {
        tensor__dev_operand_of(&dc.out, c->out);
        tensor__dev_operand_of(&dc.out2, c->out2);
        tensor__dev_operand_of(&dc.grad, NULL);
        for (int i = 0; i < TENSOR__MAX_INPUTS; i++) tensor__dev_operand_of(&dc.grads[i], NULL);
        dc.compute = c->compute;
        memcpy(dc.p, c->p, sizeof dc.p);
        memcpy(dc.ip, c->ip, sizeof dc.ip);
        dc.n_dims = c->n_dims;
        memcpy(dc.dims, c->dims, sizeof dc.dims);
        dc.error[0] = 0;
        if (k(&dc)) {
            dc.error[sizeof dc.error - 1] = 0;
            tensor__fail(c->fn, "%s", dc.error[0] ? dc.error : "the device kernel failed");
            rc = 1;
        }
    }
    for (int i = 0; i < TENSOR__MAX_INPUTS; i++) tensor_free(moved[i]);
    return rc;
}
static int tensor__cpu_to_device(tensor__call *c); /* >>create: copies between any two devices */
static void tensor__device_fill_column(tensor_device dev) {
    const tensor__device *d = tensor__devices[dev];
    for (int op = 0; op < TENSOR_OP_COUNT; op++) tensor__kernels[op][dev] = d->kernels[op] ? tensor__device_kernel : NULL;
    tensor__kernels[TENSOR_OP_to_device][dev] = tensor__cpu_to_device;
    tensor__kernels[TENSOR_OP_cat][dev] = d->kernels[TENSOR_OP_copy_] ? tensor__cpu_cat : NULL; /* its slabs by copy_ */
    if (d->set_allow_tf32) d->set_allow_tf32(TENSOR__LOAD_SC(&tensor__allow_tf32) != 0); /* set before the device was asked for */
}

/* true: kernels that have an optimized path take their plain reference path instead, so tests can
   compare the two (tensor_set_reference_kernels). */
static bool tensor__reference_kernels;
TENSOR_API bool tensor_set_reference_kernels(bool on) {
    bool was = tensor__reference_kernels;
    tensor__reference_kernels = on;
    return was;
}

static bool tensor__autograd_record(tensor__call *c); /* >>autograd: records a node when inputs need grad; false: no memory */

/* Runs c's kernel on the device of its output; on failure frees the output(s) and returns NULL. */
static tensor *tensor__dispatch(tensor__call *c) {
    tensor_device dev = c->out->storage->device;
    tensor__kernel_fn k = tensor__kernels[c->op][dev];
    int rc = k ? k(c) : (tensor__fail(c->fn, "%s has no kernel on %s in this build", tensor__ops[c->op].name, tensor__device_name(dev)), 1);
    if (rc || !tensor__autograd_record(c)) {
        tensor_free(c->out);
        tensor_free(c->out2);
        c->out = c->out2 = NULL;
        return NULL;
    }
    tensor_free(c->out2); /* a kernel's second output: the graph keeps its own handle if it needs it */
    c->out2 = NULL;
    return c->out;
}

/* Starts a call record: the operands absent, no error. The parameters (p, ip, dims) are the
   front-end's to set, each one its op reads, and are left as they are: clearing the whole record
   for every op cost more than the rest of this. Test builds fill them with garbage instead, so a
   kernel or derivative that reads a parameter its front-end never set fails the suite. */
static void tensor__call_init(tensor__call *c, tensor_op op) {
    c->op = op;
    c->fn = tensor__ops[op].fn;
    c->n_in = 0;
    for (int i = 0; i < TENSOR__MAX_INPUTS; i++) c->in[i] = NULL;
    c->out = c->out2 = NULL;
    c->compute = TENSOR_F32;
    c->n_dims = 0;
    c->error = 0;
#ifdef TENSOR_TEST_HOOKS
    memset(c->p, 0xff, sizeof c->p); /* NaN */
    memset(c->ip, 0x5b, sizeof c->ip);
    memset(c->dims, 0x5b, sizeof c->dims);
#endif
}

/* Every input of an op must live on one device: never a silent copy. */
static bool tensor__same_device(const char *fn, int n, tensor *const *ts) {
    int first = -1;
    for (int i = 0; i < n; i++) {
        if (!ts[i]) continue;
        if (first < 0) first = i;
        else if (ts[i]->storage->device != ts[first]->storage->device) {
            tensor__fail(fn, "inputs are on different devices (%s and %s); move them with tensor_to_device",
                         tensor__device_name(ts[first]->storage->device), tensor__device_name(ts[i]->storage->device));
            return false;
        }
    }
    return true;
}
/* Host code that reads a tensor's values outside a kernel refuses a device tensor until it has a
   device path of its own. */
static bool tensor__host_only(const char *fn, const tensor *t, const char *what) {
    if (!t || t->storage->device == TENSOR_CPU) return true;
    tensor__fail(fn, "%s is not available on %s in this build", what, tensor__device_name(t->storage->device));
    return false;
}
/* The same rule for elementwise ops, where a CPU 0-dim tensor also goes with tensors of another
   device (as PyTorch's CPU scalars do): the device of the result in *dev. */
static bool tensor__elementwise_device(const char *fn, int n, tensor *const *ts, tensor_device *dev) {
    tensor *others[TENSOR__MAX_INPUTS];
    int m = 0;
    for (int i = 0; i < n; i++)
        if (ts[i] && !(ts[i]->ndim == 0 && ts[i]->storage->device == TENSOR_CPU)) others[m++] = ts[i];
    *dev = m ? others[0]->storage->device : TENSOR_CPU;
    return tensor__same_device(fn, m, others);
}

// >>iter ---------------------------------------------------------------------------------------
/* The iteration description every elementwise kernel consumes (like ATen's TensorIterator):
   operands broadcast to one shape (stride 0 on broadcast dims), dims coalesced where every operand
   is contiguous across them, strides in bytes. Operand 0 is the output by convention. A kernel
   supplies the inner loop over the last dim; tensor__iter_run walks the outer dims. */
#define TENSOR__MAX_OPERANDS 5
typedef struct {
    int ndim, n;
    int64_t shape[TENSOR_MAX_DIMS];
    int64_t stride[TENSOR__MAX_OPERANDS][TENSOR_MAX_DIMS];
    char *base[TENSOR__MAX_OPERANDS];
    tensor_dtype dtype[TENSOR__MAX_OPERANDS];
    int64_t numel;
} tensor__iter;

/* ptr[k] points at the first element of operand k in this row; stride[k] is its byte stride
   along the row; count elements. */
typedef void (*tensor__loop_fn)(char **ptr, const int64_t *stride, int64_t count, void *ctx);

/* No overflow here: every operand's |stride| * size is within TENSOR__MAX_NUMEL (>>shapes), so its
   byte strides, their products with the sizes and the offsets of its elements fit in int64. */
static void tensor__iter_init(tensor__iter *it, int n, tensor *const *ops, int ndim, const int64_t *shape) {
    TENSOR_ASSERT(n <= TENSOR__MAX_OPERANDS && ndim <= TENSOR_MAX_DIMS);
    it->n = n;
    it->numel = tensor__numel_of(ndim, shape);
    for (int k = 0; k < n; k++) { it->base[k] = tensor__data(ops[k]); it->dtype[k] = ops[k]->dtype; }
    /* drop size-1 dims, right-align each operand's dims to shape */
    int nd = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 1) continue;
        it->shape[nd] = shape[d];
        for (int k = 0; k < n; k++) {
            const tensor *t = ops[k];
            int td = d - (ndim - t->ndim);
            int64_t esz = (int64_t)tensor__dtype_sizes[t->dtype];
            it->stride[k][nd] = (td < 0 || t->shape[td] == 1) ? 0 : t->strides[td] * esz;
        }
        nd++;
    }
    /* coalesce dim d-1 into d when every operand steps evenly across both */
    int out = 0;
    for (int d = 0; d < nd; d++) {
        if (out > 0) {
            bool ok = true;
            for (int k = 0; k < n && ok; k++) ok = it->stride[k][out - 1] == it->stride[k][d] * it->shape[d];
            if (ok) {
                it->shape[out - 1] *= it->shape[d];
                for (int k = 0; k < n; k++) it->stride[k][out - 1] = it->stride[k][d];
                continue;
            }
        }
        it->shape[out] = it->shape[d];
        for (int k = 0; k < n; k++) it->stride[k][out] = it->stride[k][d];
        out++;
    }
    if (out == 0) { /* a single element */
        it->shape[0] = 1;
        for (int k = 0; k < n; k++) it->stride[k][0] = 0;
        out = 1;
    }
    it->ndim = out;
}

/* The odometer every walker shares (this iteration's, and the reductions' over kept and reduced
   dims): n byte pointers move over dims [0, nd) of shape, the last dim fastest; stride[k][d] is
   pointer k's byte stride along dim d. seek places them at position pos (row-major), step moves
   them one position on and returns false when that wrapped from the last position to the first. */
static inline void tensor__odometer_seek(int nd, const int64_t *shape, int64_t *idx, int n, char **ptr, char *const *base,
                                         const int64_t (*stride)[TENSOR_MAX_DIMS], int64_t pos) {
    for (int k = 0; k < n; k++) ptr[k] = base[k];
    for (int d = nd - 1; d >= 0; d--) {
        idx[d] = pos % shape[d];
        pos /= shape[d];
        for (int k = 0; k < n; k++) ptr[k] += idx[d] * stride[k][d];
    }
}
static inline bool tensor__odometer_step(int nd, const int64_t *shape, int64_t *idx, int n, char **ptr, const int64_t (*stride)[TENSOR_MAX_DIMS]) {
    for (int d = nd - 1; d >= 0; d--) {
        for (int k = 0; k < n; k++) ptr[k] += stride[k][d];
        if (++idx[d] < shape[d]) return true;
        for (int k = 0; k < n; k++) ptr[k] -= stride[k][d] * shape[d];
        idx[d] = 0;
    }
    return false;
}

/* Runs fn over the elements [begin, end) of the iteration, in row-major order: partial rows at
   the ends, whole rows between. */
static void tensor__iter_run_range(const tensor__iter *it, tensor__loop_fn fn, void *ctx, int64_t begin, int64_t end) {
    int nd = it->ndim, n = it->n;
    int64_t inner_n = it->shape[nd - 1], idx[TENSOR_MAX_DIMS], inner[TENSOR__MAX_OPERANDS];
    char *ptr[TENSOR__MAX_OPERANDS];
    tensor__odometer_seek(nd, it->shape, idx, n, ptr, it->base, it->stride, begin);
    for (int k = 0; k < n; k++) inner[k] = it->stride[k][nd - 1];
    int64_t at = begin;
    while (at < end) {
        int64_t count = inner_n - idx[nd - 1];
        if (count > end - at) count = end - at;
        fn(ptr, inner, count, ctx);
        at += count;
        if (at >= end) break;
        /* to the start of the next row: back along the row, one step over the outer dims */
        for (int k = 0; k < n; k++) ptr[k] -= idx[nd - 1] * inner[k];
        idx[nd - 1] = 0;
        tensor__odometer_step(nd - 1, it->shape, idx, n, ptr, it->stride);
    }
}

typedef struct { const tensor__iter *it; tensor__loop_fn fn; void *ctx; } tensor__iter_task;
static void tensor__iter_chunk(int64_t begin, int64_t end, void *task) {
    const tensor__iter_task *t = (const tensor__iter_task *)task;
    tensor__iter_run_range(t->it, t->fn, t->ctx, begin, end);
}

/* Elements per thread below which an elementwise op stays on one thread: about the work of a
   thread wake-up. */
#define TENSOR__GRAIN_ELEMENTWISE 32768
/* Items per thread chunk when each item (a row, an output element) is `per_item` elements of
   work: about TENSOR__GRAIN_ELEMENTWISE elements, and never 0, whatever per_item is (0 for an
   empty row, or huge). */
static int64_t tensor__grain(int64_t per_item) { return TENSOR__GRAIN_ELEMENTWISE / (per_item > 0 ? per_item : 1) + 1; }

/* Runs fn over every element; large iterations are split across the thread pool (fn must only
   write its own elements; its ctx is shared). */
static void tensor__iter_run(const tensor__iter *it, tensor__loop_fn fn, void *ctx) {
    if (it->numel == 0) return;
    tensor__iter_task t;
    t.it = it;
    t.fn = fn;
    t.ctx = ctx;
    tensor__parallel_for(it->numel, TENSOR__GRAIN_ELEMENTWISE, tensor__iter_chunk, &t);
}

/* Visits every element index of a shape in row-major order: a helper for kernels that are not
   elementwise (index math of gather, pooling, ...). Returns false when done. */
static TENSOR__UNUSED bool tensor__next_index(int ndim, const int64_t *shape, int64_t *idx) {
    return tensor__odometer_step(ndim, shape, idx, 0, NULL, NULL);
}

/* Element offset (in elements) of index idx in t. */
static TENSOR__UNUSED int64_t tensor__offset_of(const tensor *t, const int64_t *idx) {
    int64_t o = t->offset;
    for (int d = 0; d < t->ndim; d++) o += idx[d] * t->strides[d];
    return o;
}

/* Generic converting copy src -> dst (broadcasting src to dst's shape): the kernel of copy_,
   contiguous, clone and to_dtype. */
static void tensor__copy_loop(char **p, const int64_t *s, int64_t n, void *ctx) {
    const tensor__iter *it = (const tensor__iter *)ctx;
    tensor_dtype dd = it->dtype[0], sd = it->dtype[1];
    if (dd == sd) {
        size_t esz = tensor__dtype_sizes[dd];
        if (s[0] == (int64_t)esz && s[1] == (int64_t)esz) { memmove(p[0], p[1], (size_t)n * esz); return; }
        /* strided: typed moves (a memcpy call per element cost 3 ns) */
        char *d = p[0];
        const char *q = p[1];
        switch (esz) {
        case 8: for (int64_t i = 0; i < n; i++) *(uint64_t *)(void *)(d + i * s[0]) = *(const uint64_t *)(const void *)(q + i * s[1]); return;
        case 4: for (int64_t i = 0; i < n; i++) *(uint32_t *)(void *)(d + i * s[0]) = *(const uint32_t *)(const void *)(q + i * s[1]); return;
        case 2: for (int64_t i = 0; i < n; i++) *(uint16_t *)(void *)(d + i * s[0]) = *(const uint16_t *)(const void *)(q + i * s[1]); return;
        default: for (int64_t i = 0; i < n; i++) memcpy(d + i * s[0], q + i * s[1], esz); return;
        }
    }
    bool half_d = dd == TENSOR_F16 || dd == TENSOR_BF16, half_s = sd == TENSOR_F16 || sd == TENSOR_BF16;
    if (s[0] == (int64_t)tensor__dtype_sizes[dd] && s[1] == (int64_t)tensor__dtype_sizes[sd]) { /* contiguous f16/bf16 <-> f32: SIMD rows */
        if (dd == TENSOR_F32 && half_s) { tensor__half_to_f32((float *)(void *)p[0], (const uint16_t *)(const void *)p[1], n, sd == TENSOR_BF16); return; }
        if (sd == TENSOR_F32 && half_d) { tensor__f32_to_half((uint16_t *)(void *)p[0], (const float *)(const void *)p[1], n, dd == TENSOR_BF16); return; }
    }
    if (tensor__is_float(dd) || tensor__is_float(sd))
        for (int64_t i = 0; i < n; i++) tensor__store_f64(p[0] + i * s[0], dd, tensor__load_f64(p[1] + i * s[1], sd));
    else
        for (int64_t i = 0; i < n; i++) tensor__store_i64(p[0] + i * s[0], dd, tensor__load_i64(p[1] + i * s[1], sd));
}

static void tensor__copy_into(tensor *dst, const tensor *src) {
    tensor *ops[2] = {dst, (tensor *)src};
    tensor__iter it;
    tensor__iter_init(&it, 2, ops, dst->ndim, dst->shape);
    tensor__iter_run(&it, tensor__copy_loop, &it);
}

/* A contiguous copy of t in dtype, on t's device (a plain helper; no autograd): a device tensor's
   through the device's to_dtype kernel, a converting strided copy. */
static tensor *tensor__contiguous_copy(const char *fn, const tensor *t, tensor_dtype dtype) {
    tensor *r = tensor__new_like(fn, t, dtype);
    if (!r) return NULL;
    tensor_device dev = t->storage->device;
    if (dev == TENSOR_CPU) { tensor__copy_into(r, t); return r; }
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_to_dtype);
    c.fn = fn;
    c.n_in = 1;
    c.in[0] = (tensor *)(uintptr_t)t;
    c.out = r;
    tensor__kernel_fn k = tensor__kernels[TENSOR_OP_to_dtype][dev];
    if (!k) tensor__fail(fn, "to_dtype has no kernel on %s in this build", tensor__device_name(dev));
    if (!k || k(&c)) { tensor_free(r); return NULL; }
    return r;
}
