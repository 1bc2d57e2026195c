/* DLPack exchange: tensor_to_dlpack / tensor_from_dlpack (and the unversioned pair) read and
   built through a real dlpack.h (Debian's libdlpack-dev, DLPack 0.6, which has DLTensor and
   DLManagedTensor; the 1.0 DLManagedTensorVersioned is defined here from the 1.0 spec over that
   DLTensor). tensor.h's mirror structs are invisible from here: the layout is checked through
   behaviour, and Debian's offsets against the numbers the mirrors use. Every capsule made here has
   a deleter that counts its calls: each must run exactly once, and not before its last view goes. */
#include "test.h"
#include <stddef.h>
#include <pthread.h>
#include <stdint.h>

#if defined(__has_include)
#if __has_include(<dlpack/dlpack.h>)
#include <dlpack/dlpack.h>
#define HAVE_DLPACK 1
#endif
#endif

#ifndef HAVE_DLPACK
TEST(dlpack_exchange) { test_skip("dlpack.h not installed (apt-get install libdlpack-dev)"); }
#else

#ifndef DLPACK_MAJOR_VERSION /* before 1.0: DLManagedTensorVersioned as DLPack 1.0 defines it */
typedef struct { uint32_t major, minor; } DLPackVersion;
struct DLManagedTensorVersioned {
    DLPackVersion version;
    void *manager_ctx;
    void (*deleter)(struct DLManagedTensorVersioned *self);
    uint64_t flags;
    DLTensor dl_tensor;
};
typedef struct DLManagedTensorVersioned DLManagedTensorVersioned;
#define DLPACK_FLAG_BITMASK_READ_ONLY (1UL << 0UL)
#endif
#define TEST_DL_BOOL 6 /* kDLBool, 1.0 only */

/* The layout tensor.h's mirrors use (64-bit hosts): DLTensor 48 bytes with data 0, device 8,
   ndim 16, dtype 20, shape 24, strides 32, byte_offset 40; DLManagedTensor 64 with manager_ctx
   48, deleter 56; DLManagedTensorVersioned 80 with manager_ctx 8, deleter 16, flags 24,
   dl_tensor 32. Debian's header must agree. */
#define LAYOUT(name, cond) typedef char layout_##name[(cond) ? 1 : -1]
#if UINTPTR_MAX == 0xFFFFFFFFFFFFFFFFu
LAYOUT(tensor_size, sizeof(DLTensor) == 48);
LAYOUT(device, sizeof(DLDevice) == 8 && offsetof(DLDevice, device_id) == 4);
LAYOUT(dtype, sizeof(DLDataType) == 4 && offsetof(DLDataType, bits) == 1 && offsetof(DLDataType, lanes) == 2);
LAYOUT(tensor_fields, offsetof(DLTensor, data) == 0 && offsetof(DLTensor, device) == 8 && offsetof(DLTensor, ndim) == 16 &&
                          offsetof(DLTensor, dtype) == 20 && offsetof(DLTensor, shape) == 24 && offsetof(DLTensor, strides) == 32 &&
                          offsetof(DLTensor, byte_offset) == 40);
LAYOUT(managed, sizeof(DLManagedTensor) == 64 && offsetof(DLManagedTensor, dl_tensor) == 0 && offsetof(DLManagedTensor, manager_ctx) == 48 &&
                    offsetof(DLManagedTensor, deleter) == 56);
LAYOUT(versioned, sizeof(DLManagedTensorVersioned) == 80 && offsetof(DLManagedTensorVersioned, manager_ctx) == 8 &&
                      offsetof(DLManagedTensorVersioned, deleter) == 16 && offsetof(DLManagedTensorVersioned, flags) == 24 &&
                      offsetof(DLManagedTensorVersioned, dl_tensor) == 32);
#endif

/* ---- capsules built here ---- */
static int deleted, deleted_v;
static void count_deleter(DLManagedTensor *m) { (void)m; deleted++; }
static void count_deleter_v(DLManagedTensorVersioned *m) { (void)m; deleted_v++; }

static void fill_dl(DLTensor *dl, void *data, int ndim, int64_t *shape, int64_t *strides, uint8_t code, uint8_t bits) {
    dl->data = data;
    dl->device.device_type = kDLCPU;
    dl->device.device_id = 0;
    dl->ndim = ndim;
    dl->dtype.code = code;
    dl->dtype.bits = bits;
    dl->dtype.lanes = 1;
    dl->shape = shape;
    dl->strides = strides;
    dl->byte_offset = 0;
}
static void make_v(DLManagedTensorVersioned *m, void *data, int ndim, int64_t *shape, int64_t *strides, uint8_t code, uint8_t bits) {
    memset(m, 0, sizeof *m);
    m->version.major = 1;
    m->version.minor = 0;
    m->deleter = count_deleter_v;
    fill_dl(&m->dl_tensor, data, ndim, shape, strides, code, bits);
    deleted_v = 0;
}
static void make_u(DLManagedTensor *m, void *data, int ndim, int64_t *shape, int64_t *strides, uint8_t code, uint8_t bits) {
    memset(m, 0, sizeof *m);
    m->deleter = count_deleter;
    fill_dl(&m->dl_tensor, data, ndim, shape, strides, code, bits);
    deleted = 0;
}

/* Element (i, j) of a 2-D tensor (its intermediate views freed). */
static double at2(tensor *t, int64_t i, int64_t j) {
    tensor *r = tensor_select(t, 0, i), *e = tensor_select(r, 0, j);
    double v = tensor_item(e);
    tensor_free(e);
    tensor_free(r);
    return v;
}

/* ---- export ---- */

/* Every field of an exported capsule, read through dlpack.h's types. */
static void check_dl(const char *file, int line, const DLTensor *dl, const void *data, int ndim, const int64_t *shape, const int64_t *strides,
                     int code, int bits) {
    if (dl->data != data) test_fail(file, line, "data %p, expected %p", dl->data, data);
    if (dl->device.device_type != kDLCPU || dl->device.device_id != 0)
        test_fail(file, line, "device (%d, %d)", (int)dl->device.device_type, (int)dl->device.device_id);
    if (dl->ndim != ndim) { test_fail(file, line, "ndim %d, expected %d", (int)dl->ndim, ndim); return; }
    if (dl->dtype.code != code || dl->dtype.bits != bits || dl->dtype.lanes != 1)
        test_fail(file, line, "dtype (%d, %d, %d), expected (%d, %d, 1)", dl->dtype.code, dl->dtype.bits, dl->dtype.lanes, code, bits);
    if (dl->byte_offset != 0) test_fail(file, line, "byte_offset %llu", (unsigned long long)dl->byte_offset);
    if (!dl->strides || (ndim && !dl->shape)) { test_fail(file, line, "shape or strides NULL"); return; }
    for (int i = 0; i < ndim; i++)
        if (dl->shape[i] != shape[i] || dl->strides[i] != strides[i])
            test_fail(file, line, "dim %d: size %lld stride %lld, expected %lld %lld", i, (long long)dl->shape[i], (long long)dl->strides[i],
                      (long long)shape[i], (long long)strides[i]);
}
#define CHECK_DL(dl, data, ndim, shape, strides, code, bits) check_dl(__FILE__, __LINE__, dl, data, ndim, shape, strides, code, bits)

static void check_export(const char *file, int line, tensor *t, const void *data, int code, int bits) {
    DLManagedTensorVersioned *m = tensor_to_dlpack(t);
    if (!m) { test_fail(file, line, "tensor_to_dlpack: %s", tensor_last_error()); return; }
    if (m->version.major != 1 || m->version.minor != 0) test_fail(file, line, "version %u.%u", m->version.major, m->version.minor);
    if (m->flags != 0) test_fail(file, line, "flags %llu", (unsigned long long)m->flags);
    if (!m->deleter) test_fail(file, line, "no deleter");
    check_dl(file, line, &m->dl_tensor, data, tensor_ndim(t), tensor_shape(t), tensor_strides(t), code, bits);
    if (m->deleter) m->deleter(m);
    DLManagedTensor *u = tensor_to_dlpack_unversioned(t);
    if (!u) { test_fail(file, line, "tensor_to_dlpack_unversioned: %s", tensor_last_error()); return; }
    check_dl(file, line, &u->dl_tensor, data, tensor_ndim(t), tensor_shape(t), tensor_strides(t), code, bits);
    if (u->deleter) u->deleter(u);
}
#define CHECK_EXPORT(t, data, code, bits) check_export(__FILE__, __LINE__, t, data, code, bits)

TEST(dlpack_export_fields) {
    tensor *t = tensor_arange(0, 6, 1, TENSOR_F32);
    tensor *a = tensor_reshape(t, TENSOR_SHAPE(2, 3));
    char *base = (char *)tensor_data_ptr(a);
    CHECK_EXPORT(a, base, kDLFloat, 32);
    DLManagedTensorVersioned *m = tensor_to_dlpack(a);
    CHECK(m);
    if (m) {
        int64_t shape[2] = {2, 3}, strides[2] = {3, 1};
        CHECK_DL(&m->dl_tensor, base, 2, shape, strides, kDLFloat, 32);
        const float *f = (const float *)m->dl_tensor.data;
        CHECK(f[0] == 0 && f[5] == 5);
        m->deleter(m);
    }
    /* views: transposed (strides 1, 3), a row (data at its first element), a column (stride 3) */
    tensor *tr = tensor_transpose(a, 0, 1);
    CHECK(!tensor_is_contiguous(tr));
    m = tensor_to_dlpack(tr);
    CHECK(m);
    if (m) {
        int64_t shape[2] = {3, 2}, strides[2] = {1, 3};
        CHECK_DL(&m->dl_tensor, base, 2, shape, strides, kDLFloat, 32);
        m->deleter(m);
    }
    tensor *row = tensor_select(a, 0, 1), *col = tensor_select(a, 1, 2);
    CHECK_EXPORT(row, base + 3 * sizeof(float), kDLFloat, 32);
    CHECK_EXPORT(col, base + 2 * sizeof(float), kDLFloat, 32);
    CHECK(tensor_strides(col)[0] == 3);
    /* every dtype */
    static const tensor_dtype dts[] = {TENSOR_F32, TENSOR_F64, TENSOR_F16, TENSOR_BF16, TENSOR_I32, TENSOR_I64, TENSOR_U8, TENSOR_BOOL};
    static const int codes[] = {kDLFloat, kDLFloat, kDLFloat, kDLBfloat, kDLInt, kDLInt, kDLUInt, TEST_DL_BOOL};
    static const int bits[] = {32, 64, 16, 16, 32, 64, 8, 8};
    for (int i = 0; i < 8; i++) {
        tensor *d = tensor_to_dtype(a, dts[i]);
        CHECK_EXPORT(d, tensor_data_ptr(d), codes[i], bits[i]);
        tensor_free(d);
    }
    /* 0-dim and empty */
    tensor *s = tensor_scalar(2.5, TENSOR_F64);
    CHECK_EXPORT(s, tensor_data_ptr(s), kDLFloat, 64);
    tensor *e = tensor_zeros(TENSOR_SHAPE(0, 3), TENSOR_F32);
    CHECK_EXPORT(e, tensor_data_ptr(e), kDLFloat, 32);
    tensor_free(e);
    tensor_free(s);
    tensor_free(row);
    tensor_free(col);
    tensor_free(tr);
    tensor_free(a);
    tensor_free(t);
}

TEST(dlpack_export_outlives_the_tensor) {
    tensor *t = tensor_arange(0, 4, 1, TENSOR_F64);
    int64_t handles = tensor_live_handles();
    DLManagedTensorVersioned *m = tensor_to_dlpack(t);
    DLManagedTensor *u = tensor_to_dlpack_unversioned(t);
    CHECK(m && u);
    CHECK(tensor_live_handles() == handles + 2); /* the capsules' own handles */
    tensor_free(t);
    tensor_scope_begin();
    tensor_scope_end(); /* a scope ending frees none of them */
    if (!m || !u) return;
    const double *d = (const double *)m->dl_tensor.data;
    CHECK(d[0] == 0 && d[3] == 3);
    ((double *)u->dl_tensor.data)[1] = 42;
    CHECK(d[1] == 42);
    m->deleter(m);
    CHECK(((const double *)u->dl_tensor.data)[3] == 3);
    u->deleter(u);
}

TEST(dlpack_export_errors) {
    CHECK(tensor_to_dlpack(NULL) == NULL);
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "tensor_to_dlpack"));
    tensor_clear_error();
    CHECK(tensor_to_dlpack_unversioned(NULL) == NULL);
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "tensor_to_dlpack_unversioned"));
    tensor_clear_error();
    tensor *w = tensor_set_requires_grad(tensor_ones(TENSOR_SHAPE(3), TENSOR_F32), true);
    CHECK(tensor_to_dlpack(w) == NULL);
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "requires grad"));
    tensor_clear_error();
    CHECK(tensor_to_dlpack_unversioned(w) == NULL);
    tensor_clear_error();
    tensor *d = tensor_detach(w);
    DLManagedTensorVersioned *m = tensor_to_dlpack(d);
    CHECK(m);
    if (m) m->deleter(m);
    tensor_free(d);
    tensor_free(w);
}

/* ---- import ---- */

TEST(dlpack_import_contiguous_zero_copy) {
    static float buf[6] = {1, 2, 3, 4, 5, 6};
    int64_t shape[2] = {2, 3};
    static const double want[6] = {1, 2, 3, 4, 5, 6};
    for (int strided = 0; strided < 2; strided++) {
        int64_t strides[2] = {3, 1};
        DLManagedTensorVersioned m;
        make_v(&m, buf, 2, shape, strided ? strides : NULL, kDLFloat, 32);
        tensor *t = tensor_from_dlpack(&m);
        CHECK_SHAPE(t, 2, shape);
        CHECK_VALUES(t, want, 6, 0, 0);
        CHECK(tensor_data_ptr(t) == (void *)buf);
        CHECK(tensor_get_dtype(t) == TENSOR_F32 && tensor_get_device(t) == TENSOR_CPU);
        tensor *v = tensor_transpose(t, 0, 1);
        tensor_free(t);
        CHECK(deleted_v == 0); /* the view still holds the memory */
        buf[1] = 20;
        CHECK(v && at2(v, 1, 0) == 20);
        buf[1] = 2;
        tensor_free(v);
        CHECK(deleted_v == 1);

        DLManagedTensor u;
        make_u(&u, buf, 2, shape, strided ? strides : NULL, kDLFloat, 32);
        t = tensor_from_dlpack_unversioned(&u);
        CHECK_VALUES(t, want, 6, 0, 0);
        CHECK(tensor_data_ptr(t) == (void *)buf);
        CHECK(deleted == 0);
        tensor_free(t);
        CHECK(deleted == 1);
    }
}

TEST(dlpack_import_every_dtype) {
    static unsigned char buf[64];
    static const int codes[] = {kDLFloat, kDLFloat, kDLFloat, kDLBfloat, kDLInt, kDLInt, kDLUInt, TEST_DL_BOOL};
    static const int bits[] = {32, 64, 16, 16, 32, 64, 8, 8};
    static const tensor_dtype dts[] = {TENSOR_F32, TENSOR_F64, TENSOR_F16, TENSOR_BF16, TENSOR_I32, TENSOR_I64, TENSOR_U8, TENSOR_BOOL};
    static const double vals[4] = {1, 0, 3, 1};
    for (int i = 0; i < 8; i++) {
        const double *want = vals;
        static const double bools[4] = {1, 0, 1, 1};
        if (dts[i] == TENSOR_BOOL) want = bools;
        tensor *src = test_tensor(dts[i], 1, (const int64_t[]){4}, want);
        CHECK(tensor_copy_to(src, buf, 4 * tensor_dtype_size(dts[i])) == 0);
        tensor_free(src);
        int64_t shape[1] = {4};
        DLManagedTensorVersioned m;
        make_v(&m, buf, 1, shape, NULL, (uint8_t)codes[i], (uint8_t)bits[i]);
        tensor *t = tensor_from_dlpack(&m);
        CHECK_MSG(t && tensor_get_dtype(t) == dts[i], "dtype %d: %s", i, tensor_last_error() ? tensor_last_error() : "wrong dtype");
        CHECK_VALUES(t, want, 4, 0, 0);
        CHECK(tensor_data_ptr(t) == (void *)buf);
        tensor_free(t);
        CHECK(deleted_v == 1);
    }
}

TEST(dlpack_import_strided_views) {
    static double buf[16]; /* a 4 x 4 row-major matrix: element (i, j) = 10 i + j */
    for (int i = 0; i < 16; i++) buf[i] = 10 * (i / 4) + i % 4;
    /* a 2 x 3 block of its transpose, from the transpose's (1, 1): element (i, j) at buf[5 + i + 4 j] */
    int64_t shape[2] = {2, 3}, strides[2] = {1, 4};
    DLManagedTensorVersioned m;
    make_v(&m, buf, 2, shape, strides, kDLFloat, 64);
    m.dl_tensor.byte_offset = 5 * sizeof(double);
    tensor *t = tensor_from_dlpack(&m);
    double w[6];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++) w[i * 3 + j] = buf[5 + i + 4 * j];
    CHECK_SHAPE(t, 2, shape);
    CHECK_VALUES(t, w, 6, 0, 0);
    CHECK(t && tensor_strides(t)[0] == 1 && tensor_strides(t)[1] == 4);
    buf[5] = -1; /* zero-copy: the tensor sees the producer's writes */
    w[0] = -1;
    CHECK_VALUES(t, w, 6, 0, 0);
    CHECK(deleted_v == 0);
    tensor_free(t);
    CHECK(deleted_v == 1);
    /* stride 0 (a broadcast row) and a size-1 dim with a nonsense stride */
    int64_t shape2[3] = {3, 1, 2}, strides2[3] = {0, -7, 1};
    make_v(&m, buf, 3, shape2, strides2, kDLFloat, 64);
    t = tensor_from_dlpack(&m);
    double w2[6] = {buf[0], buf[1], buf[0], buf[1], buf[0], buf[1]};
    CHECK_VALUES(t, w2, 6, 0, 0);
    CHECK(deleted_v == 0);
    tensor_free(t);
    CHECK(deleted_v == 1);
}

TEST(dlpack_import_copies) {
    /* negative strides: copied into a fresh tensor, the capsule given back at once */
    static int32_t buf[6] = {0, 1, 2, 3, 4, 5};
    int64_t shape[2] = {2, 3}, strides[2] = {-3, -1};
    DLManagedTensorVersioned m;
    make_v(&m, buf + 5, 2, shape, strides, kDLInt, 32);
    tensor *t = tensor_from_dlpack(&m);
    static const double rev[6] = {5, 4, 3, 2, 1, 0};
    CHECK(deleted_v == 1);
    CHECK_VALUES(t, rev, 6, 0, 0);
    CHECK(t && tensor_get_dtype(t) == TENSOR_I32 && tensor_is_contiguous(t));
    tensor_free(t);
    CHECK(deleted_v == 1);
    /* mixed signs, through byte_offset: rows reversed, columns forward */
    int64_t strides2[2] = {-3, 1};
    DLManagedTensor u;
    make_u(&u, buf, 2, shape, strides2, kDLInt, 32);
    u.dl_tensor.byte_offset = 3 * sizeof(int32_t);
    t = tensor_from_dlpack_unversioned(&u);
    static const double rows[6] = {3, 4, 5, 0, 1, 2};
    CHECK(deleted == 1);
    CHECK_VALUES(t, rows, 6, 0, 0);
    tensor_free(t);
    /* misaligned elements: data one byte into a buffer */
    static union { unsigned char b[64]; double align; } raw;
    float f[4] = {1.5f, -2, 3, 4.25f};
    memcpy(raw.b + 1, f, sizeof f);
    int64_t shape1[1] = {4};
    make_v(&m, raw.b + 1, 1, shape1, NULL, kDLFloat, 32);
    t = tensor_from_dlpack(&m);
    static const double fw[4] = {1.5, -2, 3, 4.25};
    CHECK(deleted_v == 1);
    CHECK_VALUES(t, fw, 4, 0, 0);
    CHECK(t && tensor_data_ptr(t) != (void *)(raw.b + 1));
    tensor_free(t);
    /* READ_ONLY: a copy, values equal, the deleter at once */
    static float ro[6] = {1, 2, 3, 4, 5, 6};
    static const double row[6] = {1, 2, 3, 4, 5, 6};
    make_v(&m, ro, 2, shape, NULL, kDLFloat, 32);
    m.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
    t = tensor_from_dlpack(&m);
    CHECK(deleted_v == 1);
    CHECK_VALUES(t, row, 6, 0, 0);
    CHECK(t && tensor_data_ptr(t) != (void *)ro);
    tensor_free(t);
    CHECK(deleted_v == 1);
}

TEST(dlpack_import_empty_and_scalar) {
    int64_t shape[2] = {0, 3};
    DLManagedTensorVersioned m;
    make_v(&m, NULL, 2, shape, NULL, kDLFloat, 32); /* no data at all */
    tensor *t = tensor_from_dlpack(&m);
    CHECK_SHAPE(t, 2, shape);
    CHECK(tensor_numel(t) == 0);
    CHECK(deleted_v == 0);
    tensor_free(t);
    CHECK(deleted_v == 1);
    static double one = 7.5;
    make_v(&m, &one, 0, NULL, NULL, kDLFloat, 64);
    t = tensor_from_dlpack(&m);
    CHECK(t && tensor_ndim(t) == 0 && tensor_item(t) == 7.5);
    tensor_free(t);
    CHECK(deleted_v == 1);
    /* a NULL deleter (allowed: nothing to give back) */
    make_v(&m, &one, 0, NULL, NULL, kDLFloat, 64);
    m.deleter = NULL;
    t = tensor_from_dlpack(&m);
    CHECK(t && tensor_item(t) == 7.5);
    tensor_free(t);
}

/* Each bad capsule fails with an error naming fn and gives the capsule back exactly once. */
#define CHECK_BAD_V(m) do { CHECK_BAD(tensor_from_dlpack(&(m)), "tensor_from_dlpack"); CHECK_MSG(deleted_v == 1, "deleter ran %d times", deleted_v); } while (0)
#define CHECK_BAD_U(m) do { CHECK_BAD(tensor_from_dlpack_unversioned(&(m)), "tensor_from_dlpack_unversioned"); CHECK_MSG(deleted == 1, "deleter ran %d times", deleted); } while (0)

TEST(dlpack_import_errors) {
    static float buf[16];
    int64_t shape[2] = {2, 3};
    DLManagedTensorVersioned m;
    DLManagedTensor u;
    /* version 2.0: refused, only the deleter touched */
    make_v(&m, buf, 2, shape, NULL, kDLFloat, 32);
    m.version.major = 2;
    m.dl_tensor.ndim = 99; /* never read */
    CHECK_BAD_V(m);
    make_v(&m, buf, 2, shape, NULL, kDLFloat, 32);
    m.version.major = 0;
    m.version.minor = 8;
    CHECK_BAD_V(m);
    /* CUDA (and managed): not available in this build */
    make_v(&m, buf, 2, shape, NULL, kDLFloat, 32);
    m.dl_tensor.device.device_type = kDLCUDA;
    tensor_clear_error();
    CHECK(tensor_from_dlpack(&m) == NULL);
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "CUDA is not available in this build"));
    CHECK(deleted_v == 1);
    tensor_clear_error();
    make_u(&u, buf, 2, shape, NULL, kDLFloat, 32);
    u.dl_tensor.device.device_type = kDLCUDAManaged;
    CHECK_BAD_U(u);
    make_v(&m, buf, 2, shape, NULL, kDLFloat, 32);
    m.dl_tensor.device.device_type = kDLOpenCL;
    CHECK_BAD_V(m);
    /* dtypes: complex64, 4 lanes, float8, bool 32 */
    make_v(&m, buf, 2, shape, NULL, kDLComplex, 64);
    CHECK_BAD_V(m);
    make_v(&m, buf, 2, shape, NULL, kDLFloat, 32);
    m.dl_tensor.dtype.lanes = 4;
    CHECK_BAD_V(m);
    make_v(&m, buf, 2, shape, NULL, kDLFloat, 8);
    CHECK_BAD_V(m);
    make_u(&u, buf, 2, shape, NULL, TEST_DL_BOOL, 32);
    CHECK_BAD_U(u);
    /* ndim 9 and -1, NULL shape */
    int64_t shape9[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    make_v(&m, buf, 9, shape9, NULL, kDLFloat, 32);
    CHECK_BAD_V(m);
    make_u(&u, buf, -1, shape, NULL, kDLFloat, 32);
    CHECK_BAD_U(u);
    make_v(&m, buf, 2, NULL, NULL, kDLFloat, 32);
    CHECK_BAD_V(m);
    /* negative size */
    int64_t neg[2] = {2, -3};
    make_v(&m, buf, 2, neg, NULL, kDLFloat, 32);
    CHECK_BAD_V(m);
    /* byte_offset not a multiple of the element size */
    make_v(&m, buf, 2, shape, NULL, kDLFloat, 32);
    m.dl_tensor.byte_offset = 2;
    CHECK_BAD_V(m);
    make_u(&u, buf, 2, shape, NULL, kDLFloat, 32);
    u.dl_tensor.byte_offset = 6;
    CHECK_BAD_U(u);
    /* element offsets that overflow */
    int64_t huge[2] = {INT64_MAX / 2, 1}, big[2] = {3, 3};
    make_v(&m, buf, 2, big, huge, kDLFloat, 32);
    CHECK_BAD_V(m);
    int64_t most[2] = {INT64_MIN, 1};
    make_v(&m, buf, 2, big, most, kDLFloat, 32);
    CHECK_BAD_V(m);
    /* NULL data with elements */
    make_v(&m, NULL, 2, shape, NULL, kDLFloat, 32);
    CHECK_BAD_V(m);
    /* NULL capsule */
    CHECK_BAD(tensor_from_dlpack(NULL), "tensor_from_dlpack");
    CHECK_BAD(tensor_from_dlpack_unversioned(NULL), "tensor_from_dlpack_unversioned");
}

/* ---- round trips ---- */

TEST(dlpack_round_trip) {
    tensor *t = tensor_reshape(tensor_arange(0, 12, 1, TENSOR_F32), TENSOR_SHAPE(3, 4));
    tensor *u = tensor_from_dlpack(tensor_to_dlpack(t));
    CHECK(u && !tensor_shares_storage(t, u));
    CHECK(u && tensor_data_ptr(u) == tensor_data_ptr(t));
    if (u) ((float *)tensor_data_ptr(u))[5] = 42;
    CHECK(((float *)tensor_data_ptr(t))[5] == 42);
    tensor_free(t); /* u keeps the memory through the capsule */
    CHECK(u && at2(u, 1, 1) == 42);
    /* a transposed view, unversioned: same strides, same values */
    tensor *tr = tensor_transpose(u, 0, 1);
    tensor *v = tensor_from_dlpack_unversioned(tensor_to_dlpack_unversioned(tr));
    CHECK(v && tensor_strides(v)[0] == 1 && tensor_strides(v)[1] == 4);
    double *a = test_values(tr);
    CHECK_VALUES(v, a, 12, 0, 0);
    free(a);
    tensor_free(u);
    tensor_free(tr);
    tensor_free(v); /* the last view: every deleter runs, in order (checked by the leak counts) */
    /* every dtype */
    static const tensor_dtype dts[] = {TENSOR_F32, TENSOR_F64, TENSOR_F16, TENSOR_BF16, TENSOR_I32, TENSOR_I64, TENSOR_U8, TENSOR_BOOL};
    for (int i = 0; i < 8; i++) {
        tensor *x = test_random(dts[i], 2, (const int64_t[]){2, 5}, 0, 4);
        tensor *y = tensor_from_dlpack(tensor_to_dlpack(x));
        CHECK(y && tensor_get_dtype(y) == dts[i] && test_same_bits(x, y));
        tensor_free(x);
        tensor_free(y);
    }
}

/* Every memory request of an export and of the imports (zero-copy, copied, read-only) failing in
   turn: a NULL with a message, the capsule's deleter run exactly once, nothing leaked. */
TEST(dlpack_alloc_failures) {
    static float buf[6] = {1, 2, 3, 4, 5, 6};
    int64_t shape[2] = {2, 3}, negs[2] = {-3, -1};
    tensor *t = tensor_ones(TENSOR_SHAPE(2, 3), TENSOR_F32);
    for (int kind = 0; kind < 4; kind++) {
        for (int64_t k = 1; k < 100; k++) {
            tensor_clear_error();
            tensor_test_fail_alloc(k);
            tensor *r = NULL;
            DLManagedTensorVersioned c;
            make_v(&c, kind == 2 ? buf + 5 : buf, 2, shape, kind == 2 ? negs : NULL, kDLFloat, 32);
            if (kind == 3) c.flags = DLPACK_FLAG_BITMASK_READ_ONLY;
            if (kind == 0) {
                DLManagedTensorVersioned *m = tensor_to_dlpack(t);
                r = m ? tensor_from_dlpack(m) : NULL;
            } else {
                r = tensor_from_dlpack(&c);
            }
            int64_t requests = tensor_test_alloc_count();
            tensor_test_fail_alloc(0);
            if (!r) CHECK_MSG(tensor_last_error() != NULL, "kind %d, request %lld: NULL without a message", kind, (long long)k);
            tensor_free(r);
            if (kind > 0) CHECK_MSG(deleted_v == 1, "kind %d, request %lld: the deleter ran %d times", kind, (long long)k, deleted_v);
            tensor_clear_error();
            if (r && requests < k) break; /* no request failed: the sweep is done */
        }
    }
    tensor_free(t);
}

/* Deleters and last frees on another thread (a consumer's garbage collector, say). */
static void *delete_on_thread(void *arg) {
    DLManagedTensorVersioned *m = (DLManagedTensorVersioned *)arg;
    m->deleter(m);
    return NULL;
}
static void *free_on_thread(void *arg) {
    tensor_free((tensor *)arg);
    return NULL;
}

TEST(dlpack_other_threads) {
    tensor *t = tensor_arange(0, 1000, 1, TENSOR_F32);
    DLManagedTensorVersioned *m = tensor_to_dlpack(t);
    tensor_free(t);
    pthread_t th;
    CHECK(m && pthread_create(&th, NULL, delete_on_thread, m) == 0 && pthread_join(th, NULL) == 0);
    /* an imported capsule whose last view is freed on another thread: the deleter runs once, where the handle is released */
    static float buf[4] = {1, 2, 3, 4};
    int64_t shape[1] = {4};
    DLManagedTensorVersioned c;
    make_v(&c, buf, 1, shape, NULL, kDLFloat, 32);
    tensor *u = tensor_from_dlpack(&c);
    CHECK(u);
    CHECK(pthread_create(&th, NULL, free_on_thread, u) == 0 && pthread_join(th, NULL) == 0);
    tensor_scope_begin(); /* the owner releases a handle sent back to it at its next scope end */
    tensor_scope_end();
    tensor *x = tensor_zeros(TENSOR_SHAPE(1), TENSOR_F32); /* or its next handle */
    tensor_free(x);
    CHECK_MSG(deleted_v == 1, "deleter ran %d times", deleted_v);
}

/* An import that is a thread's first call: its storage was made before the thread had a state, so
   its reference counted as nobody's and the deleter never ran, whichever thread freed the tensor
   (issue 24, found with mapped files). */
typedef struct { DLManagedTensorVersioned *m; tensor *t; bool free_here; } first_call_job;
static void *first_call_import(void *arg) {
    first_call_job *j = (first_call_job *)arg;
    j->t = tensor_from_dlpack(j->m);
    if (j->free_here) { tensor_free(j->t); j->t = NULL; }
    return NULL;
}
TEST(dlpack_import_as_a_threads_first_call_is_released) {
    static float buf[4] = {1, 2, 3, 4};
    int64_t shape[1] = {4};
    for (int here = 0; here < 2; here++) {
        DLManagedTensorVersioned m;
        make_v(&m, buf, 1, shape, NULL, kDLFloat, 32);
        first_call_job j = {&m, NULL, here == 1};
        pthread_t th;
        CHECK(pthread_create(&th, NULL, first_call_import, &j) == 0);
        pthread_join(th, NULL);
        CHECK(here == 1 || (j.t && tensor_item(tensor_sum_all(j.t)) == 10));
        CHECK(deleted_v == 0 || here == 1);
        tensor_free(j.t); /* on this thread, after the importing one ended */
        CHECK_MSG(deleted_v == 1, "%s: the deleter ran %d times", here ? "freed on the importing thread" : "freed on another thread", deleted_v);
    }
}

#endif /* HAVE_DLPACK */
