// >>dlpack -------------------------------------------------------------------------------------
/* DLPack 1.0 (and the unversioned DLManagedTensor of the releases before it). tensor.h does not
   include dlpack.h, so a user may include theirs before or after it: these mirrors have DLPack
   1.0's exact layout (dlpack.h's DLPackVersion, DLDevice, DLDataType, DLTensor, DLManagedTensor,
   DLManagedTensorVersioned), and the public struct pointers are cast to them. The deleters keep
   the public pointer types, so a producer's deleter is called through its own type and ours are
   called by consumers through theirs.

   Export: data points at the first element and byte_offset is 0 (as PyTorch does on the CPU);
   shape and strides are in elements, strides always given. One allocation holds the managed
   struct with its shape and strides arrays; manager_ctx is an internal handle viewing t (it keeps
   the storage alive whatever happens to t), and the deleter frees it and the block, from any
   thread. Capsules must be deleted (or consumed) before tensor_shutdown, which frees that handle.

   Import takes ownership: the producer's deleter runs exactly once, when the last tensor viewing
   its memory is freed, or at once when the import fails or copies. Zero-copy when the view can
   be one of ours: aligned elements, non-negative strides. Negative strides or a misaligned data
   pointer (data + byte_offset not a multiple of the element size) give a copy (CPU only); so does
   the READ_ONLY flag, since nothing here could stop a write through the view. Devices: kDLCPU
   and kDLCUDAHost (pinned host memory) are CPU memory; kDLCUDA and kDLCUDAManaged (device 0) are
   CUDA, refused while this build has no CUDA. Versions 1.x are read (a later minor adds nothing
   this needs); another major version only gets its deleter called, as the spec asks. */
typedef struct { uint32_t major, minor; } tensor__dl_version;
typedef struct { int32_t device_type, device_id; } tensor__dl_device;
typedef struct { uint8_t code, bits; uint16_t lanes; } tensor__dl_dtype;
typedef struct {
    void *data;
    tensor__dl_device device;
    int32_t ndim;
    tensor__dl_dtype dtype;
    int64_t *shape;
    int64_t *strides; /* in elements; NULL: C-contiguous */
    uint64_t byte_offset;
} tensor__dl_tensor;
typedef struct {
    tensor__dl_tensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensor *self);
} tensor__dl_managed;
typedef struct {
    tensor__dl_version version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    tensor__dl_tensor dl_tensor;
} tensor__dl_managed_versioned;

/* The sizes dlpack.h gives on 64-bit hosts (tests/test_dlpack.c checks them against Debian's). */
typedef char tensor__dl_layout_check[sizeof(void *) != 8 ||
                                     (sizeof(tensor__dl_tensor) == 48 && sizeof(tensor__dl_managed) == 64 &&
                                      sizeof(tensor__dl_managed_versioned) == 80 &&
                                      offsetof(tensor__dl_managed_versioned, dl_tensor) == 32 &&
                                      offsetof(tensor__dl_managed_versioned, flags) == 24 &&
                                      offsetof(tensor__dl_managed, deleter) == 56) ? 1 : -1];

enum { TENSOR__DL_CPU = 1, TENSOR__DL_CUDA = 2, TENSOR__DL_CUDA_HOST = 3, TENSOR__DL_CUDA_MANAGED = 13 };
enum { TENSOR__DL_INT = 0, TENSOR__DL_UINT = 1, TENSOR__DL_FLOAT = 2, TENSOR__DL_BFLOAT = 4, TENSOR__DL_BOOL = 6 };
#define TENSOR__DL_READ_ONLY ((uint64_t)1 << 0)
#define TENSOR__DL_IS_COPIED ((uint64_t)1 << 1) /* the producer's copy: ours to view, nothing to do */

/* DLPack type codes in dtype order (f32 f64 f16 bf16 i32 i64 u8 bool); bits are 8 * the size. */
static const unsigned char tensor__dl_codes[TENSOR_DTYPE_COUNT] = {TENSOR__DL_FLOAT, TENSOR__DL_FLOAT, TENSOR__DL_FLOAT, TENSOR__DL_BFLOAT,
                                                                  TENSOR__DL_INT,   TENSOR__DL_INT,   TENSOR__DL_UINT,  TENSOR__DL_BOOL};

/* ---- export ---- */
typedef struct {
    tensor__dl_managed_versioned m; /* first: the block's address is the capsule's */
    int64_t shape[TENSOR_MAX_DIMS], strides[TENSOR_MAX_DIMS];
} tensor__dl_export_v;
typedef struct {
    tensor__dl_managed m;
    int64_t shape[TENSOR_MAX_DIMS], strides[TENSOR_MAX_DIMS];
} tensor__dl_export;

/* The internal handle a capsule holds: a plain view of t (no autograd identity). */
static tensor *tensor__dl_export_view(const char *fn, tensor *t) {
    if (!t) return tensor__null_arg(fn, "t");
    if (t->requires_grad) return tensor__fail(fn, "cannot export a tensor that requires grad (as PyTorch); export tensor_detach(t)");
    return tensor__make_internal(tensor__view_of(fn, t, t->ndim, t->shape, t->strides, t->offset));
}

static void tensor__dl_describe(tensor__dl_tensor *dl, const tensor *v, int64_t *shape, int64_t *strides) {
    dl->data = tensor__data(v);
    dl->device.device_type = v->storage->device == TENSOR_CUDA ? TENSOR__DL_CUDA : TENSOR__DL_CPU;
    dl->device.device_id = 0;
    dl->ndim = v->ndim;
    dl->dtype.code = tensor__dl_codes[v->dtype];
    dl->dtype.bits = (uint8_t)(8 * tensor__dtype_sizes[v->dtype]);
    dl->dtype.lanes = 1;
    for (int i = 0; i < v->ndim; i++) { shape[i] = v->shape[i]; strides[i] = v->strides[i]; }
    dl->shape = shape;
    dl->strides = strides;
    dl->byte_offset = 0;
}

static void tensor__dl_delete_v(struct DLManagedTensorVersioned *self) {
    tensor__dl_export_v *e = (tensor__dl_export_v *)(void *)self;
    if (!e) return;
    tensor_free((tensor *)e->m.manager_ctx);
    TENSOR_FREE(e);
}
static void tensor__dl_delete(struct DLManagedTensor *self) {
    tensor__dl_export *e = (tensor__dl_export *)(void *)self;
    if (!e) return;
    tensor_free((tensor *)e->m.manager_ctx);
    TENSOR_FREE(e);
}

TENSOR_API struct DLManagedTensorVersioned *tensor_to_dlpack(tensor *t) {
    const char *fn = "tensor_to_dlpack";
    tensor *v = tensor__dl_export_view(fn, t);
    if (!v) return NULL;
    tensor__dl_export_v *e = (tensor__dl_export_v *)TENSOR__MALLOC(sizeof *e);
    if (!e) {
        tensor_free(v);
        tensor__fail(fn, "out of memory");
        return NULL;
    }
    e->m.version.major = 1;
    e->m.version.minor = 0;
    e->m.manager_ctx = v;
    e->m.deleter = tensor__dl_delete_v;
    e->m.flags = 0;
    tensor__dl_describe(&e->m.dl_tensor, v, e->shape, e->strides);
    return (struct DLManagedTensorVersioned *)(void *)e;
}

TENSOR_API struct DLManagedTensor *tensor_to_dlpack_unversioned(tensor *t) {
    const char *fn = "tensor_to_dlpack_unversioned";
    tensor *v = tensor__dl_export_view(fn, t);
    if (!v) return NULL;
    tensor__dl_export *e = (tensor__dl_export *)TENSOR__MALLOC(sizeof *e);
    if (!e) {
        tensor_free(v);
        tensor__fail(fn, "out of memory");
        return NULL;
    }
    e->m.manager_ctx = v;
    e->m.deleter = tensor__dl_delete;
    tensor__dl_describe(&e->m.dl_tensor, v, e->shape, e->strides);
    return (struct DLManagedTensor *)(void *)e;
}

/* ---- import ---- */
/* The producer's deleter, as an external storage's release function (ctx: the managed struct). */
static void tensor__dl_release_v(void *ctx) {
    tensor__dl_managed_versioned *m = (tensor__dl_managed_versioned *)ctx;
    if (m->deleter) m->deleter((struct DLManagedTensorVersioned *)ctx);
}
static void tensor__dl_release(void *ctx) {
    tensor__dl_managed *m = (tensor__dl_managed *)ctx;
    if (m->deleter) m->deleter((struct DLManagedTensor *)ctx);
}

/* Gives the capsule back (its deleter runs) after an error was recorded; NULL. */
static tensor *tensor__dl_drop(void (*release)(void *), void *ctx) {
    release(ctx);
    return NULL;
}

/* Copies the elements of a view of raw CPU memory (strides in elements, any sign; p its first
   element, maybe misaligned) into a new contiguous tensor, element by element. */
static tensor *tensor__dl_copy(const char *fn, const char *p, int ndim, const int64_t *shape, const int64_t *strides, tensor_dtype dtype) {
    tensor *out = tensor__new(fn, ndim, shape, dtype, TENSOR_CPU);
    if (!out) return NULL;
    size_t es = tensor__dtype_sizes[dtype];
    int64_t numel = tensor__numel_of(ndim, shape), idx[TENSOR_MAX_DIMS] = {0}, off = 0; /* off: element offset from p, within the checked extent */
    char *dst = (char *)out->storage->data;
    for (int64_t k = 0; k < numel; k++) {
        memcpy(dst + (size_t)k * es, p + off * (int64_t)es, es);
        for (int i = ndim - 1; i >= 0; i--) {
            if (++idx[i] < shape[i]) { off += strides[i]; break; }
            off -= strides[i] * (shape[i] - 1);
            idx[i] = 0;
        }
    }
    return out;
}

static int64_t tensor__dl_nothing[1]; /* where an empty tensor's storage points (aligned for any dtype) */

/* The tensor of a capsule's DLTensor; release(ctx) gives the capsule back (calls its deleter): at
   once on error or after a copy, else when the last view of the external storage goes. */
static tensor *tensor__dl_import(const char *fn, const tensor__dl_tensor *dl, bool read_only, void (*release)(void *), void *ctx) {
    tensor_device device = TENSOR_CPU;
    int32_t dt = dl->device.device_type;
    if (dt == TENSOR__DL_CUDA || dt == TENSOR__DL_CUDA_MANAGED) {
        if (!tensor_cuda_available())
            return tensor__fail(fn, "the tensor is on CUDA (DLPack device type %d, device %d), and CUDA is not available in this build", (int)dt,
                                (int)dl->device.device_id), tensor__dl_drop(release, ctx);
        if (dl->device.device_id != 0)
            return tensor__fail(fn, "the tensor is on CUDA device %d; this library uses device 0 only", (int)dl->device.device_id),
                   tensor__dl_drop(release, ctx);
        device = TENSOR_CUDA;
    } else if (dt != TENSOR__DL_CPU && dt != TENSOR__DL_CUDA_HOST) {
        return tensor__fail(fn, "DLPack device type %d is not supported (CPU 1, CUDA 2, CUDA host 3, CUDA managed 13)", (int)dt),
               tensor__dl_drop(release, ctx);
    }
    int ndim = dl->ndim;
    if (ndim < 0 || ndim > TENSOR_MAX_DIMS) return tensor__fail(fn, "ndim %d is out of range [0, %d]", ndim, TENSOR_MAX_DIMS), tensor__dl_drop(release, ctx);
    if (ndim > 0 && !dl->shape) return tensor__fail(fn, "shape is NULL with ndim %d", ndim), tensor__dl_drop(release, ctx);
    int dtype = -1;
    for (int d = 0; d < TENSOR_DTYPE_COUNT && dl->dtype.lanes == 1; d++)
        if (dl->dtype.code == tensor__dl_codes[d] && (size_t)dl->dtype.bits == 8 * tensor__dtype_sizes[d]) dtype = d;
    if (dtype < 0)
        return tensor__fail(fn, "DLPack dtype (code %u, %u bits, %u lanes) is not supported (int 32/64, uint 8, float 16/32/64, bfloat 16, bool 8; 1 lane)",
                            (unsigned)dl->dtype.code, (unsigned)dl->dtype.bits, (unsigned)dl->dtype.lanes), tensor__dl_drop(release, ctx);
    size_t es = tensor__dtype_sizes[dtype];
    int64_t shape[TENSOR_MAX_DIMS], strides[TENSOR_MAX_DIMS];
    for (int i = 0; i < ndim; i++) shape[i] = dl->shape[i];
    int64_t numel = tensor__check_shape(fn, ndim, shape);
    if (numel < 0) return tensor__dl_drop(release, ctx);
    if (dl->byte_offset % es)
        return tensor__fail(fn, "byte_offset %llu is not a multiple of the element size %zu", (unsigned long long)dl->byte_offset, es), tensor__dl_drop(release, ctx);
    if (numel > 0 && !dl->data) return tensor__fail(fn, "data is NULL for %lld elements", (long long)numel), tensor__dl_drop(release, ctx);
    if (dl->byte_offset > (uint64_t)TENSOR__MAX_NUMEL || (numel > 0 && dl->byte_offset > (uint64_t)(UINTPTR_MAX - (uintptr_t)dl->data)))
        return tensor__fail(fn, "byte_offset %llu is too large", (unsigned long long)dl->byte_offset), tensor__dl_drop(release, ctx);

    /* Strides: C-contiguous when absent; a size-1 dim's stride is never used, so it takes the
       contiguous one (whatever the producer wrote there), and an empty view is contiguous. The
       elements reached lie from neg elements below the first one to pos above it. */
    int64_t cont[TENSOR_MAX_DIMS], neg = 0, pos = 0, span;
    tensor__contiguous_strides(ndim, shape, cont);
    for (int i = 0; i < ndim; i++) strides[i] = numel > 0 && dl->strides && shape[i] > 1 ? dl->strides[i] : cont[i];
    for (int i = 0; i < ndim && numel > 0; i++) {
        int64_t s = strides[i];
        bool ok = s >= -TENSOR__MAX_NUMEL && tensor__size_mul(shape[i] - 1, s < 0 ? -s : s, &span) && tensor__size_add(s < 0 ? neg : pos, span, s < 0 ? &neg : &pos);
        if (!ok) {
            char b[200], c[200];
            return tensor__fail(fn, "a view of shape %s with strides %s is too large: its element offsets overflow", tensor__shape_str(b, sizeof b, ndim, shape),
                                tensor__shape_str(c, sizeof c, ndim, strides)), tensor__dl_drop(release, ctx);
        }
    }
    int64_t extent = 0, nbytes = 0;
    if (numel > 0 && (!tensor__size_add(neg, pos, &extent) || !tensor__size_add(extent, 1, &extent) || !tensor__size_mul(extent, (int64_t)es, &nbytes) ||
                      (uint64_t)nbytes > (uint64_t)SIZE_MAX))
        return tensor__fail(fn, "the view reaches %lld + %lld elements around its first: too large for this machine", (long long)neg, (long long)pos),
               tensor__dl_drop(release, ctx);
    char *p = numel > 0 ? (char *)dl->data + dl->byte_offset : (char *)tensor__dl_nothing;

    if (neg > 0 || (uintptr_t)p % es) { /* not a view of ours: copy it */
        if (device != TENSOR_CPU)
            return tensor__fail(fn, "a CUDA tensor with negative strides or misaligned elements cannot be imported"), tensor__dl_drop(release, ctx);
        tensor *c = tensor__dl_copy(fn, p, ndim, shape, strides, (tensor_dtype)dtype);
        release(ctx);
        return c;
    }
    tensor__storage *s = tensor__storage_external(fn, p, (size_t)nbytes, device, release, ctx);
    tensor *t = tensor__from_storage(fn, s, (tensor_dtype)dtype, ndim, shape, strides, 0);
    if (!t || !read_only) return t;
    tensor *c = tensor__contiguous_copy(fn, t, (tensor_dtype)dtype);
    tensor_free(t); /* the capsule goes now */
    return c;
}

TENSOR_API tensor *tensor_from_dlpack(struct DLManagedTensorVersioned *m) {
    const char *fn = "tensor_from_dlpack";
    if (!m) return tensor__null_arg(fn, "m");
    tensor__dl_managed_versioned *v = (tensor__dl_managed_versioned *)(void *)m;
    if (v->version.major != 1) /* nothing past the deleter may be read */
        return tensor__fail(fn, "DLPack version %u.%u is not supported (this library reads 1.x)", (unsigned)v->version.major, (unsigned)v->version.minor),
               tensor__dl_drop(tensor__dl_release_v, m);
    return tensor__dl_import(fn, &v->dl_tensor, (v->flags & TENSOR__DL_READ_ONLY) != 0, tensor__dl_release_v, m);
}

TENSOR_API tensor *tensor_from_dlpack_unversioned(struct DLManagedTensor *m) {
    const char *fn = "tensor_from_dlpack_unversioned";
    if (!m) return tensor__null_arg(fn, "m");
    return tensor__dl_import(fn, &((tensor__dl_managed *)(void *)m)->dl_tensor, false, tensor__dl_release, m);
}
