/* NumPy .npy and .npz: round trips of every dtype .npy has and of views, hand-made files for each
   header form and each rejection rule, hand-made zip archives (stored, deflated, ZIP64, corrupt), and
   interop with NumPy itself through tests/interop/numpy_interop.py when python3-numpy is installed. */
#include "test.h"
#include <stdint.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- a scratch directory per test ---- */
typedef struct { char dir[128]; char path[256]; } npy_tmp;

static void npy_tmp_open(npy_tmp *t) {
    static int counter;
    snprintf(t->dir, sizeof t->dir, "/tmp/tensor_npy_%ld_%d", (long)getpid(), counter++);
    if (mkdir(t->dir, 0700) != 0) test_fail(__FILE__, __LINE__, "cannot make %s", t->dir);
}
static const char *npy_tmp_path(npy_tmp *t, const char *name) {
    snprintf(t->path, sizeof t->path, "%s/%s", t->dir, name);
    return t->path;
}
static void npy_tmp_close(npy_tmp *t) {
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", t->dir);
    if (system(cmd) != 0) test_fail(__FILE__, __LINE__, "cannot remove %s", t->dir);
}
static void npy_write_file(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(p, 1, n, f) != n) test_fail(__FILE__, __LINE__, "cannot write %s", path);
    if (f) fclose(f);
}

/* Same dtype, shape and bytes (row-major). */
static bool npy_same(tensor *a, tensor *b) {
    if (!a || !b || tensor_get_dtype(a) != tensor_get_dtype(b) || tensor_ndim(a) != tensor_ndim(b)) return false;
    for (int i = 0; i < tensor_ndim(a); i++) if (tensor_size(a, i) != tensor_size(b, i)) return false;
    size_t n = (size_t)tensor_numel(a) * tensor_dtype_size(tensor_get_dtype(a));
    char *x = (char *)malloc(n + 1), *y = (char *)malloc(n + 1);
    bool ok = x && y && tensor_copy_to(a, x, n) == 0 && tensor_copy_to(b, y, n) == 0 && memcmp(x, y, n) == 0;
    free(x);
    free(y);
    return ok;
}

/* The values numpy_interop.py's value() gives: element i of an array of dtype d. */
static double npy_formula(tensor_dtype d, int64_t i) {
    switch (d) {
    case TENSOR_BOOL: return i % 3 == 1;
    case TENSOR_U8: return (double)((i * 37 + 11) % 256);
    case TENSOR_I32: return (double)((i * 7919) % 2001 - 1000);
    case TENSOR_I64: return (double)(((i * 7919) % 2001 - 1000) * 3000000007LL);
    default: return (double)((i * 7) % 23 - 11) * 0.25;
    }
}
static tensor *npy_formula_tensor(tensor_dtype d, int ndim, const int64_t *shape) {
    int64_t n = test_numel(ndim, shape);
    double *v = (double *)malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) v[i] = npy_formula(d, i);
    tensor *t = test_tensor(d, ndim, shape, v);
    free(v);
    return t;
}
static void npy_check_formula(const char *file, int line, tensor *t, tensor_dtype d, int ndim, const int64_t *shape) {
    if (!t) { test_fail(file, line, "load failed: %s", tensor_last_error() ? tensor_last_error() : "no error"); return; }
    if (tensor_get_dtype(t) != d) test_fail(file, line, "dtype %s, expected %s", tensor_dtype_name(tensor_get_dtype(t)), tensor_dtype_name(d));
    test_check_shape(file, line, t, ndim, shape);
    int64_t n = test_numel(ndim, shape);
    if (n > 0 && !tensor_is_contiguous(t)) test_fail(file, line, "not contiguous");
    double *v = (double *)malloc(sizeof(double) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++) v[i] = npy_formula(d, i);
    test_check_values(file, line, t, v, n, 0, 0);
    free(v);
}
#define CHECK_FORMULA(t, d, ...) npy_check_formula(__FILE__, __LINE__, t, d, __VA_ARGS__)

static const tensor_dtype npy_dtypes[7] = {TENSOR_F32, TENSOR_F64, TENSOR_F16, TENSOR_I32, TENSOR_I64, TENSOR_U8, TENSOR_BOOL};

/* ---- round trips ---- */

TEST(npy_round_trip_every_dtype_and_shape) {
    static const struct { int ndim; int64_t shape[8]; } shapes[] = {
        {0, {0}}, {2, {0, 3}}, {1, {5}}, {3, {2, 3, 4}}, {8, {1, 2, 1, 1, 3, 1, 1, 2}}, {1, {1000}},
    };
    npy_tmp tmp;
    npy_tmp_open(&tmp);
    const char *path = npy_tmp_path(&tmp, "x.npy");
    for (int k = 0; k < 7; k++)
        for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
            tensor_dtype d = npy_dtypes[k];
            tensor *a = d == TENSOR_BOOL ? test_random(d, shapes[s].ndim, shapes[s].shape, 0, 2)
                        : d == TENSOR_U8 ? test_random(d, shapes[s].ndim, shapes[s].shape, 0, 256)
                                         : test_random(d, shapes[s].ndim, shapes[s].shape, -1000, 1000);
            CHECK(tensor_save_npy(path, a) == 0);
            tensor *b = tensor_load_npy(path);
            CHECK_MSG(npy_same(a, b), "%s, %d dims: %s", tensor_dtype_name(d), shapes[s].ndim, b ? "values differ" : tensor_last_error());
            if (b && tensor_numel(b) > 0) CHECK(tensor_is_contiguous(b));
            tensor_free(a);
            tensor_free(b);
        }
    npy_tmp_close(&tmp);
}

TEST(npy_round_trip_views_and_special_values) {
    npy_tmp tmp;
    npy_tmp_open(&tmp);
    const char *path = npy_tmp_path(&tmp, "v.npy");
    tensor *a = npy_formula_tensor(TENSOR_F32, TENSOR_SHAPE(3, 4, 5));
    int perm[3] = {2, 0, 1};
    tensor *views[3];
    views[0] = tensor_permute(a, 3, perm);
    views[1] = tensor_slice(a, 2, 1, 5, 2);
    views[2] = tensor_expand(tensor_slice(a, 0, 1, 2, 1), TENSOR_SHAPE(4, 4, 5));
    for (int i = 0; i < 3; i++) {
        CHECK(views[i] && !tensor_is_contiguous(views[i]));
        CHECK(tensor_save_npy(path, views[i]) == 0);
        tensor *b = tensor_load_npy(path);
        CHECK_MSG(npy_same(views[i], b), "view %d", i);
        tensor_free(b);
    }
    /* -0, infinities, NaN payloads and subnormals survive bit for bit */
    uint32_t bits[6] = {0x80000000u, 0x7f800000u, 0xff800000u, 0x7fc01234u, 0x00000001u, 0xffffffffu};
    tensor *s = tensor_from_data(bits, TENSOR_SHAPE(6), TENSOR_F32);
    CHECK(tensor_save_npy(path, s) == 0);
    tensor *b = tensor_load_npy(path);
    uint32_t got[6] = {0};
    CHECK(b && tensor_copy_to(b, got, sizeof got) == 0 && memcmp(got, bits, sizeof bits) == 0);
    tensor_free(b);
    tensor_free(s);
    /* bfloat16 has no NumPy dtype: a clear error, and no file */
    tensor *bf = tensor_zeros(TENSOR_SHAPE(2), TENSOR_BF16);
    CHECK_BAD_INT(tensor_save_npy(npy_tmp_path(&tmp, "bf.npy"), bf) != 0, "tensor_save_npy");
    CHECK(access(npy_tmp_path(&tmp, "bf.npy"), F_OK) != 0);
    CHECK_BAD_INT(tensor_save_npy(npy_tmp_path(&tmp, "n.npy"), NULL) != 0, "tensor_save_npy");
    CHECK_BAD(tensor_load_npy(npy_tmp_path(&tmp, "missing.npy")), "tensor_load_npy");
    tensor_free(bf);
    for (int i = 0; i < 3; i++) tensor_free(views[i]);
    tensor_free(a);
    npy_tmp_close(&tmp);
}

/* ---- hand-made .npy files ---- */

/* magic, version major.0, the header dict padded with spaces to `align` and ending in '\n' (or
   exactly as given when align is 0), then n bytes of data; its length in *len (buf holds 20000). */
static size_t npy_build(unsigned char *buf, int major, const char *dict, int align, const void *data, size_t n) {
    size_t lenbytes = major == 1 ? 2 : 4, pre = 8 + lenbytes, hl = strlen(dict);
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = (unsigned char)major;
    buf[7] = 0;
    memcpy(buf + pre, dict, hl);
    if (align) {
        buf[pre + hl++] = ' ';
        while ((pre + hl + 1) % (size_t)align) buf[pre + hl++] = ' ';
        buf[pre + hl++] = '\n';
    }
    for (size_t i = 0; i < lenbytes; i++) buf[8 + i] = (unsigned char)(hl >> (8 * i));
    if (n) memcpy(buf + pre + hl, data, n);
    return pre + hl + n;
}

static tensor *npy_load_bytes(npy_tmp *tmp, const unsigned char *buf, size_t n) {
    const char *path = npy_tmp_path(tmp, "h.npy");
    npy_write_file(path, buf, n);
    return tensor_load_npy(path);
}

TEST(npy_load_header_forms) {
    static unsigned char buf[20000];
    npy_tmp tmp;
    npy_tmp_open(&tmp);
    float f[6];
    for (int i = 0; i < 6; i++) f[i] = (float)npy_formula(TENSOR_F32, i);
    /* versions 2.0 and 3.0, 16-byte alignment, double quotes, keys in another order, blanks, trailing commas */
    const char *dicts[] = {
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
        "{\"shape\": (2, 3,), \"descr\": \"<f4\", \"fortran_order\": False}",
        "{ 'fortran_order' :False ,'shape':( 2 ,3 ) ,'descr' : '<f4' }",
        "{'descr': '=f4', 'fortran_order': False, 'shape': (2,3)}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }", /* Python 2 longs (1.0 and 2.0 only) */
    };
    for (int major = 1; major <= 3; major++)
        for (int k = 0; k < (major < 3 ? 5 : 4); k++)
            for (int align = 16; align <= 64; align *= 4) {
                tensor *t = npy_load_bytes(&tmp, buf, npy_build(buf, major, dicts[k], align, f, sizeof f));
                CHECK_FORMULA(t, TENSOR_F32, TENSOR_SHAPE(2, 3));
                tensor_free(t);
            }
    /* big-endian f8, i4, f2 */
    unsigned char be[48];
    for (int i = 0; i < 6; i++) {
        double v = npy_formula(TENSOR_F64, i);
        uint64_t u;
        memcpy(&u, &v, 8);
        for (int b = 0; b < 8; b++) be[8 * i + b] = (unsigned char)(u >> (56 - 8 * b));
    }
    tensor *t = npy_load_bytes(&tmp, buf, npy_build(buf, 1, "{'descr': '>f8', 'fortran_order': False, 'shape': (3, 2), }", 64, be, 48));
    CHECK_FORMULA(t, TENSOR_F64, TENSOR_SHAPE(3, 2));
    tensor_free(t);
    for (int i = 0; i < 6; i++) {
        uint32_t u = (uint32_t)(int32_t)npy_formula(TENSOR_I32, i);
        for (int b = 0; b < 4; b++) be[4 * i + b] = (unsigned char)(u >> (24 - 8 * b));
    }
    t = npy_load_bytes(&tmp, buf, npy_build(buf, 1, "{'descr': '>i4', 'fortran_order': False, 'shape': (6,), }", 64, be, 24));
    CHECK_FORMULA(t, TENSOR_I32, TENSOR_SHAPE(6));
    tensor_free(t);
    unsigned char h2[4] = {0x3c, 0x00, 0xc0, 0x00}; /* 1.0, -2.0 in big-endian half */
    t = npy_load_bytes(&tmp, buf, npy_build(buf, 1, "{'descr': '>f2', 'fortran_order': False, 'shape': (2,), }", 64, h2, 4));
    double want_h[2] = {1.0, -2.0};
    CHECK_VALUES(t, want_h, 2, 0, 0);
    tensor_free(t);
    /* Fortran order: the data of the transposed array */
    float ff[24];
    for (int i = 0; i < 2; i++)
        for (int j = 0; j < 3; j++)
            for (int k = 0; k < 4; k++) ff[k * 6 + j * 2 + i] = (float)npy_formula(TENSOR_F32, i * 12 + j * 4 + k);
    t = npy_load_bytes(&tmp, buf, npy_build(buf, 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3, 4), }", 64, ff, sizeof ff));
    CHECK_FORMULA(t, TENSOR_F32, TENSOR_SHAPE(2, 3, 4));
    tensor_free(t);
    t = npy_load_bytes(&tmp, buf, npy_build(buf, 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (0, 5), }", 64, NULL, 0));
    CHECK_SHAPE(t, TENSOR_SHAPE(0, 5));
    tensor_free(t);
    /* 0-d, and bools other than 0 and 1 read as true */
    t = npy_load_bytes(&tmp, buf, npy_build(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (), }", 64, f, 4));
    CHECK_FORMULA(t, TENSOR_F32, 0, NULL);
    tensor_free(t);
    unsigned char bools[4] = {0, 1, 2, 255};
    t = npy_load_bytes(&tmp, buf, npy_build(buf, 1, "{'descr': '|b1', 'fortran_order': False, 'shape': (4,), }", 64, bools, 4));
    double want_b[4] = {0, 1, 1, 1};
    CHECK_VALUES(t, want_b, 4, 0, 0);
    unsigned char back[4];
    CHECK(t && tensor_copy_to(t, back, 4) == 0 && back[2] == 1 && back[3] == 1);
    tensor_free(t);
    npy_tmp_close(&tmp);
}

TEST(npy_load_rejects_malformed_files) {
    static unsigned char buf[20000];
    npy_tmp tmp;
    npy_tmp_open(&tmp);
    float f[6] = {0};
    static const char *const bad_dicts[] = {
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)",              /* no '}' */
        "{'descr': '<f4' 'fortran_order': False, 'shape': (2, 3)}",              /* no ',' */
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3)} x",           /* text after */
        "['descr', '<f4']",                                                       /* not a dict */
        "{'descr': '<f4, 'fortran_order': False, 'shape': (2, 3)}",              /* quotes */
        "{'descr': '<f4', 'fortran_order': false, 'shape': (2, 3)}",             /* false */
        "{'descr': '<f4', 'fortran_order': 0, 'shape': (2, 3)}",                 /* not a bool */
        "{'descr': '<f4', 'fortran_order': False, 'shape': [2, 3]}",             /* a list */
        "{'descr': '<f4', 'fortran_order': False, 'shape': (6)}",                /* not a tuple */
        "{'descr': '<f4', 'fortran_order': False, 'shape': (,)}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2,, 3)}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2.0, 3)}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (02, 3)}",
        "{'descr': '<\\x66\\x34', 'fortran_order': False, 'shape': (2, 3)}",    /* escapes */
        "{'descr': '<f4', 'fortran_order': False}",                               /* missing shape */
        "{'fortran_order': False, 'shape': (2, 3)}",                              /* missing descr */
        "{'descr': '<f4', 'shape': (2, 3)}",                                      /* missing fortran_order */
        "{}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'shape': (2, 3)}", /* duplicate */
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), 'extra': 1}",  /* unknown key */
        "{'descr': '<i2', 'fortran_order': False, 'shape': (2, 3)}",              /* unsupported descrs */
        "{'descr': '|i1', 'fortran_order': False, 'shape': (2, 3)}",
        "{'descr': '<c8', 'fortran_order': False, 'shape': (2, 3)}",
        "{'descr': '|f4', 'fortran_order': False, 'shape': (2, 3)}",
        "{'descr': '<U1', 'fortran_order': False, 'shape': (2, 3)}",
        "{'descr': 'f4', 'fortran_order': False, 'shape': (2, 3)}",
        "{'descr': '', 'fortran_order': False, 'shape': (2, 3)}",
        "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2, 3)}",   /* structured */
        "{'descr': '|O', 'fortran_order': False, 'shape': (2, 3)}",               /* object (pickles) */
        "{'descr': '<f4', 'fortran_order': False, 'shape': (-2, 3)}",             /* negative */
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1099511627776, 1099511627776)}", /* overflow */
        "{'descr': '<f4', 'fortran_order': False, 'shape': (0, 1152921504606846976, 16)}",  /* strides overflow */
        "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,)}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (1, 1, 1, 1, 1, 1, 1, 1, 6)}", /* 9 dims */
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 2)}",              /* short data */
        "{'descr': '<f4', 'fortran_order': False, 'shape': (5,)}",
        "{'descr': '<f4', 'fortran_order': False, 'shape': (7,)}",                /* data too short by one */
        "{'descr': '<f4', 'fortran_order': False, 'shape': ()}",                  /* trailing data */
        "{'descr': '<f4', 'fortran_order': False, 'shape': (0,)}",
    };
    for (size_t k = 0; k < sizeof bad_dicts / sizeof bad_dicts[0]; k++) {
        size_t n = npy_build(buf, 1, bad_dicts[k], 64, f, sizeof f);
        tensor_clear_error();
        tensor *t = npy_load_bytes(&tmp, buf, n);
        CHECK_MSG(!t && tensor_last_error() && strstr(tensor_last_error(), "tensor_load_npy") && strstr(tensor_last_error(), "h.npy"),
                  "dict %zu (%s) loaded or failed without naming the function and file: %s", k, bad_dicts[k], tensor_last_error() ? tensor_last_error() : "no error");
        tensor_free(t);
    }
    const char *good = "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }";
    size_t n = npy_build(buf, 1, good, 64, f, sizeof f);
    /* bad magic, versions */
    buf[1] ^= 1;
    CHECK_BAD(npy_load_bytes(&tmp, buf, n), "tensor_load_npy");
    buf[1] ^= 1;
    buf[6] = 4;
    CHECK_BAD(npy_load_bytes(&tmp, buf, n), "tensor_load_npy");
    buf[6] = 1;
    buf[7] = 1;
    CHECK_BAD(npy_load_bytes(&tmp, buf, n), "tensor_load_npy");
    buf[7] = 0;
    tensor *ok = npy_load_bytes(&tmp, buf, n);
    CHECK(ok != NULL);
    tensor_free(ok);
    /* truncated: inside the magic, inside the header, inside the data */
    CHECK_BAD(npy_load_bytes(&tmp, buf, 0), "tensor_load_npy");
    CHECK_BAD(npy_load_bytes(&tmp, buf, 7), "tensor_load_npy");
    CHECK_BAD(npy_load_bytes(&tmp, buf, 40), "tensor_load_npy");
    CHECK_BAD(npy_load_bytes(&tmp, buf, n - 1), "tensor_load_npy");
    /* trailing data */
    n = npy_build(buf, 1, good, 64, f, sizeof f);
    buf[n] = 0;
    CHECK_BAD(npy_load_bytes(&tmp, buf, n + 1), "tensor_load_npy");
    /* the header length past the end of the file */
    n = npy_build(buf, 1, good, 64, f, sizeof f);
    buf[8] = 0xff;
    buf[9] = 0x00;
    CHECK_BAD(npy_load_bytes(&tmp, buf, 200), "tensor_load_npy");
    n = npy_build(buf, 2, good, 64, f, sizeof f);
    buf[11] = 0x7f;
    CHECK_BAD(npy_load_bytes(&tmp, buf, n), "tensor_load_npy");
    /* a header longer than NumPy's 10,000 bytes (valid otherwise), and one just within */
    char big[10100];
    snprintf(big, sizeof big, "%s", good);
    memset(big + strlen(good), ' ', 10001 - 1 - strlen(good));
    big[10001 - 1] = '\n';
    big[10001] = 0;
    CHECK_BAD(npy_load_bytes(&tmp, buf, npy_build(buf, 2, big, 0, f, sizeof f)), "tensor_load_npy");
    big[10000 - 1] = '\n';
    big[10000] = 0;
    ok = npy_load_bytes(&tmp, buf, npy_build(buf, 2, big, 0, f, sizeof f));
    CHECK(ok != NULL);
    tensor_free(ok);
    /* NUL inside the header; version 3.0 with invalid UTF-8; non-ASCII in 1.0 */
    n = npy_build(buf, 1, good, 64, f, sizeof f);
    buf[12] = 0;
    CHECK_BAD(npy_load_bytes(&tmp, buf, n), "tensor_load_npy");
    n = npy_build(buf, 3, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), '\xff': 1}", 64, f, sizeof f);
    CHECK_BAD(npy_load_bytes(&tmp, buf, n), "tensor_load_npy");
    n = npy_build(buf, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), '\xe9': 1}", 64, f, sizeof f);
    CHECK_BAD(npy_load_bytes(&tmp, buf, n), "tensor_load_npy");
    n = npy_build(buf, 3, "{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }", 64, f, sizeof f);
    CHECK_BAD(npy_load_bytes(&tmp, buf, n), "tensor_load_npy");
    npy_tmp_close(&tmp);
}

/* ---- .npz ---- */

TEST(npz_round_trip_stored) {
    npy_tmp tmp;
    npy_tmp_open(&tmp);
    const char *path = npy_tmp_path(&tmp, "x.npz");
    tensor_dict *d = tensor_dict_new();
    tensor *ts[9];
    const char *names[9] = {"f4", "f8", "f2", "i4", "i8", "u1", "b1", "transposed", "\xce\xb1/\xce\xb2 name"};
    for (int k = 0; k < 7; k++) ts[k] = npy_formula_tensor(npy_dtypes[k], TENSOR_SHAPE(3, k + 1));
    ts[7] = tensor_transpose(ts[0], 0, 1);
    ts[8] = tensor_zeros(TENSOR_SHAPE(0, 2), TENSOR_I64);
    for (int k = 0; k < 9; k++) CHECK(tensor_dict_set(d, names[k], ts[k]) == 0);
    CHECK(tensor_save_npz(path, d) == 0);
    tensor_dict *e = tensor_load_npz(path);
    CHECK_MSG(e && tensor_dict_len(e) == 9, "%s", e ? "wrong count" : tensor_last_error());
    for (int k = 0; e && k < 9 && k < tensor_dict_len(e); k++) {
        CHECK_MSG(!strcmp(tensor_dict_name(e, k), names[k]), "entry %d is '%s'", k, tensor_dict_name(e, k));
        CHECK_MSG(npy_same(tensor_dict_at(e, k), ts[k]), "entry %s", names[k]);
    }
    tensor_dict_free(e);
    /* an empty archive; a bfloat16 member is refused before anything is written */
    tensor_dict *empty = tensor_dict_new();
    CHECK(tensor_save_npz(path, empty) == 0);
    e = tensor_load_npz(path);
    CHECK(e && tensor_dict_len(e) == 0);
    tensor_dict_free(e);
    tensor *bf = tensor_zeros(TENSOR_SHAPE(2), TENSOR_BF16);
    tensor_dict_set(empty, "bf", bf);
    CHECK_BAD_INT(tensor_save_npz(npy_tmp_path(&tmp, "bf.npz"), empty) != 0, "tensor_save_npz");
    CHECK(access(npy_tmp_path(&tmp, "bf.npz"), F_OK) != 0);
    CHECK_BAD_INT(tensor_save_npz(path, NULL) != 0, "tensor_save_npz");
    CHECK_BAD((tensor *)tensor_load_npz(npy_tmp_path(&tmp, "missing.npz")), "tensor_load_npz");
    tensor_free(bf);
    tensor_dict_free(empty);
    for (int k = 0; k < 9; k++) tensor_free(ts[k]);
    tensor_dict_free(d);
    npy_tmp_close(&tmp);
}

/* A zip archive built by hand: members with a name, data, method (0 or 8: the data is then wrapped
   in a deflate stored block), flags; ZIP64 central directory fields and end records when zip64. */
typedef struct { const char *name; const unsigned char *data; size_t n; int method, flags; } npz_member;

static uint32_t npz_crc(const unsigned char *p, size_t n) {
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1)));
    }
    return ~c;
}
static void npz_put(unsigned char *p, uint64_t v, int n) { for (int i = 0; i < n; i++) p[i] = (unsigned char)(v >> (8 * i)); }

static size_t npz_build(unsigned char *buf, int n, const npz_member *m, bool zip64) {
    size_t pos = 0, offs[8], csz[8];
    for (int i = 0; i < n; i++) {
        size_t nl = strlen(m[i].name), cs = m[i].method == 8 ? m[i].n + 5 : m[i].n;
        offs[i] = pos;
        csz[i] = cs;
        unsigned char *h = buf + pos;
        memset(h, 0, 30);
        npz_put(h, 0x04034b50u, 4);
        npz_put(h + 4, 20, 2);
        npz_put(h + 6, (uint64_t)m[i].flags, 2);
        npz_put(h + 8, (uint64_t)m[i].method, 2);
        npz_put(h + 14, npz_crc(m[i].data, m[i].n), 4);
        npz_put(h + 18, cs, 4);
        npz_put(h + 22, m[i].n, 4);
        npz_put(h + 26, nl, 2);
        memcpy(h + 30, m[i].name, nl);
        pos += 30 + nl;
        if (m[i].method == 8) { /* one final stored block: BFINAL 1, BTYPE 00, LEN, NLEN */
            buf[pos] = 1;
            npz_put(buf + pos + 1, m[i].n, 2);
            npz_put(buf + pos + 3, ~m[i].n & 0xFFFF, 2);
            pos += 5;
        }
        memcpy(buf + pos, m[i].data, m[i].n);
        pos += m[i].n;
    }
    size_t cd = pos;
    for (int i = 0; i < n; i++) {
        size_t nl = strlen(m[i].name);
        unsigned char *h = buf + pos;
        memset(h, 0, 46);
        npz_put(h, 0x02014b50u, 4);
        npz_put(h + 4, 45, 2);
        npz_put(h + 6, 20, 2);
        npz_put(h + 8, (uint64_t)m[i].flags, 2);
        npz_put(h + 10, (uint64_t)m[i].method, 2);
        npz_put(h + 16, npz_crc(m[i].data, m[i].n), 4);
        npz_put(h + 20, zip64 ? 0xFFFFFFFFu : csz[i], 4);
        npz_put(h + 24, zip64 ? 0xFFFFFFFFu : m[i].n, 4);
        npz_put(h + 28, nl, 2);
        npz_put(h + 30, zip64 ? 28 : 0, 2);
        npz_put(h + 42, zip64 ? 0xFFFFFFFFu : offs[i], 4);
        memcpy(h + 46, m[i].name, nl);
        pos += 46 + nl;
        if (zip64) {
            npz_put(buf + pos, 1, 2);
            npz_put(buf + pos + 2, 24, 2);
            npz_put(buf + pos + 4, m[i].n, 8);
            npz_put(buf + pos + 12, csz[i], 8);
            npz_put(buf + pos + 20, offs[i], 8);
            pos += 28;
        }
    }
    size_t cds = pos - cd;
    if (zip64) {
        unsigned char *r = buf + pos;
        memset(r, 0, 76);
        npz_put(r, 0x06064b50u, 4);
        npz_put(r + 4, 44, 8);
        npz_put(r + 24, (uint64_t)n, 8);
        npz_put(r + 32, (uint64_t)n, 8);
        npz_put(r + 40, cds, 8);
        npz_put(r + 48, cd, 8);
        npz_put(r + 56, 0x07064b50u, 4);
        npz_put(r + 64, pos, 8);
        npz_put(r + 72, 1, 4);
        pos += 76;
    }
    unsigned char *e = buf + pos;
    memset(e, 0, 22);
    npz_put(e, 0x06054b50u, 4);
    npz_put(e + 8, zip64 ? 0xFFFF : (uint64_t)n, 2);
    npz_put(e + 10, zip64 ? 0xFFFF : (uint64_t)n, 2);
    npz_put(e + 12, zip64 ? 0xFFFFFFFFu : cds, 4);
    npz_put(e + 16, zip64 ? 0xFFFFFFFFu : cd, 4);
    return pos + 22;
}

static tensor_dict *npz_load_bytes(npy_tmp *tmp, const unsigned char *buf, size_t n) {
    const char *path = npy_tmp_path(tmp, "h.npz");
    npy_write_file(path, buf, n);
    return tensor_load_npz(path);
}
#define CHECK_BAD_NPZ(expr) do { tensor_dict *bad_d_ = NULL; CHECK_BAD((tensor *)(bad_d_ = (expr)), "tensor_load_npz"); tensor_dict_free(bad_d_); } while (0)

TEST(npz_load_hand_made_archives) {
    static unsigned char buf[20000], a[2000], b[2000];
    npy_tmp tmp;
    npy_tmp_open(&tmp);
    float f[6];
    int64_t g[3] = {-1, 0, 1LL << 40};
    for (int i = 0; i < 6; i++) f[i] = (float)npy_formula(TENSOR_F32, i);
    size_t na = npy_build(a, 1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", 64, f, sizeof f);
    size_t nb = npy_build(b, 1, "{'descr': '<i8', 'fortran_order': False, 'shape': (3,), }", 64, g, sizeof g);
    npz_member m[2] = {{"a.npy", a, na, 0, 0}, {"sub/b", b, nb, 0, 0}};
    /* stored, plain and ZIP64; names keep everything but ".npy" */
    for (int z64 = 0; z64 < 2; z64++) {
        tensor_dict *d = npz_load_bytes(&tmp, buf, npz_build(buf, 2, m, z64 != 0));
        CHECK_MSG(d && tensor_dict_len(d) == 2, "zip64 %d: %s", z64, d ? "count" : tensor_last_error());
        if (d && tensor_dict_len(d) == 2) {
            CHECK(!strcmp(tensor_dict_name(d, 0), "a") && !strcmp(tensor_dict_name(d, 1), "sub/b"));
            CHECK_FORMULA(tensor_dict_at(d, 0), TENSOR_F32, TENSOR_SHAPE(2, 3));
            double want[3] = {-1, 0, (double)(1LL << 40)};
            CHECK_VALUES(tensor_dict_at(d, 1), want, 3, 0, 0);
        }
        tensor_dict_free(d);
    }
    /* a deflated member (a deflate stream of one stored block) */
    npz_member md[1] = {{"a.npy", a, na, 8, 0}};
    size_t n = npz_build(buf, 1, md, false);
#ifdef TENSOR_USE_ZLIB
    tensor_dict *d = npz_load_bytes(&tmp, buf, n);
    CHECK_MSG(d && tensor_dict_len(d) == 1, "%s", d ? "count" : tensor_last_error());
    if (d && tensor_dict_len(d) == 1) CHECK_FORMULA(tensor_dict_at(d, 0), TENSOR_F32, TENSOR_SHAPE(2, 3));
    tensor_dict_free(d);
    /* declared sizes that lie: larger, smaller, impossibly large for the compressed size */
    size_t cd = n - 22 - 46 - 5;
    uint64_t lies[3] = {na + 1, na - 1, 0xF0000000u};
    for (int k = 0; k < 3; k++) {
        npz_build(buf, 1, md, false);
        npz_put(buf + cd + 24, lies[k], 4);
        CHECK_BAD_NPZ(npz_load_bytes(&tmp, buf, n));
    }
    npz_build(buf, 1, md, false);
    buf[30 + 5] = 3; /* the block type: reserved */
    CHECK_BAD_NPZ(npz_load_bytes(&tmp, buf, n));
#else
    tensor_clear_error();
    tensor_dict *d = npz_load_bytes(&tmp, buf, n);
    CHECK(!d && tensor_last_error() && strstr(tensor_last_error(), "tensor_load_npz") && strstr(tensor_last_error(), "TENSOR_USE_ZLIB"));
    tensor_dict_free(d);
    tensor_clear_error();
#endif
    /* a bad CRC: one data byte flipped */
    n = npz_build(buf, 2, m, false);
    buf[30 + 5 + na - 1] ^= 1;
    CHECK_BAD_NPZ(npz_load_bytes(&tmp, buf, n));
    /* a truncated central directory: its size in the end record too small; the file cut inside it */
    n = npz_build(buf, 2, m, false);
    npz_put(buf + n - 22 + 12, 46 + 5 + 10, 4);
    CHECK_BAD_NPZ(npz_load_bytes(&tmp, buf, n));
    n = npz_build(buf, 2, m, false);
    CHECK_BAD_NPZ(npz_load_bytes(&tmp, buf, n - 30));
    CHECK_BAD_NPZ(npz_load_bytes(&tmp, buf, 10));
    /* the central directory's offset, a local header's offset, a member's size past the end */
    size_t cd0 = 30 + 5 + na + 30 + 5 + nb;
    n = npz_build(buf, 2, m, false);
    npz_put(buf + n - 22 + 16, n, 4);
    CHECK_BAD_NPZ(npz_load_bytes(&tmp, buf, n));
    n = npz_build(buf, 2, m, false);
    npz_put(buf + cd0 + 42, n - 10, 4);
    CHECK_BAD_NPZ(npz_load_bytes(&tmp, buf, n));
    n = npz_build(buf, 2, m, false);
    npz_put(buf + cd0 + 20, 100000, 4);
    npz_put(buf + cd0 + 24, 100000, 4);
    CHECK_BAD_NPZ(npz_load_bytes(&tmp, buf, n));
    n = npz_build(buf, 2, m, false);
    npz_put(buf + n - 22 + 10, 1000, 2);
    npz_put(buf + n - 22 + 8, 1000, 2);
    CHECK_BAD_NPZ(npz_load_bytes(&tmp, buf, n));
    /* duplicates (also "a" beside "a.npy"), a directory, encryption, an unknown method, bad UTF-8 */
    npz_member dup[2] = {{"a.npy", a, na, 0, 0}, {"a.npy", b, nb, 0, 0}};
    CHECK_BAD_NPZ(npz_load_bytes(&tmp, buf, npz_build(buf, 2, dup, false)));
    dup[1].name = "a";
    CHECK_BAD_NPZ(npz_load_bytes(&tmp, buf, npz_build(buf, 2, dup, false)));
    npz_member odd[1] = {{"dir/", a, 0, 0, 0}};
    CHECK_BAD_NPZ(npz_load_bytes(&tmp, buf, npz_build(buf, 1, odd, false)));
    odd[0].name = "a.npy";
    odd[0].n = na;
    odd[0].flags = 1;
    CHECK_BAD_NPZ(npz_load_bytes(&tmp, buf, npz_build(buf, 1, odd, false)));
    odd[0].flags = 0;
    odd[0].method = 12;
    CHECK_BAD_NPZ(npz_load_bytes(&tmp, buf, npz_build(buf, 1, odd, false)));
    odd[0].method = 0;
    odd[0].name = "\xff\xfe.npy";
    CHECK_BAD_NPZ(npz_load_bytes(&tmp, buf, npz_build(buf, 1, odd, false)));
    /* a member that is not a valid .npy: the .npy parser's error, under tensor_load_npz */
    odd[0].name = "a.npy";
    odd[0].n = na - 1;
    CHECK_BAD_NPZ(npz_load_bytes(&tmp, buf, npz_build(buf, 1, odd, false)));
    npy_tmp_close(&tmp);
}

/* ---- NumPy itself ---- */

static const char *npy_python(void) {
    static char cmd[600];
    const char *env = getenv("TENSOR_TEST_PYTHON");
    const char *cands[3] = {env, "/usr/bin/python3", "python3"};
    for (int i = 0; i < 3; i++) {
        if (!cands[i] || !*cands[i]) continue;
        if (cands[i][0] == '/' && access(cands[i], X_OK) != 0) continue;
        snprintf(cmd, sizeof cmd, "'%s' -c 'import numpy' > /dev/null 2>&1", cands[i]);
        if (system(cmd) == 0) return cands[i];
    }
    return NULL;
}

/* tests/interop/numpy_interop.py next to this file (as compiled: tests/test_npy.c from the repository root) */
static const char *npy_script(void) {
    static char path[600];
    const char *slash = strrchr(__FILE__, '/');
    snprintf(path, sizeof path, "%.*sinterop/numpy_interop.py", slash ? (int)(slash - __FILE__ + 1) : 0, __FILE__);
    return path;
}

TEST(npy_numpy_interop) {
    const char *py = npy_python();
    if (!py) { test_skip("numpy not installed (apt-get install python3-numpy)"); return; }
    if (access(npy_script(), R_OK) != 0) { test_fail(__FILE__, __LINE__, "cannot find %s (run the tests from the repository root)", npy_script()); return; }
    npy_tmp tmp;
    npy_tmp_open(&tmp);
    char cmd[1500];
    snprintf(cmd, sizeof cmd, "'%s' '%s' make '%s'", py, npy_script(), tmp.dir);
    fflush(stdout);
    CHECK_MSG(system(cmd) == 0, "%s failed", cmd);
    static const struct { const char *name; tensor_dtype d; int ndim; int64_t shape[8]; } npy[] = {
        {"f4", TENSOR_F32, 2, {3, 4}}, {"f8", TENSOR_F64, 3, {2, 3, 4}}, {"f2", TENSOR_F16, 1, {5}}, {"i4", TENSOR_I32, 2, {2, 5}},
        {"i8", TENSOR_I64, 1, {4}}, {"u1", TENSOR_U8, 2, {3, 3}}, {"b1", TENSOR_BOOL, 1, {7}}, {"scalar", TENSOR_F64, 0, {0}},
        {"empty", TENSOR_F32, 2, {0, 3}}, {"fortran", TENSOR_F32, 3, {3, 4, 2}}, {"be_f8", TENSOR_F64, 2, {2, 3}}, {"be_i4", TENSOR_I32, 1, {5}},
    };
    char name[64];
    for (size_t k = 0; k < sizeof npy / sizeof npy[0]; k++) {
        snprintf(name, sizeof name, "%s.npy", npy[k].name);
        tensor *t = tensor_load_npy(npy_tmp_path(&tmp, name));
        CHECK_MSG(t, "%s: %s", name, tensor_last_error());
        CHECK_FORMULA(t, npy[k].d, npy[k].ndim, npy[k].shape);
        tensor_free(t);
    }
    static const struct { const char *name; tensor_dtype d; int ndim; int64_t shape[8]; } npz[] = {
        {"a", TENSOR_F32, 2, {2, 3}}, {"b", TENSOR_I64, 1, {4}}, {"c", TENSOR_BOOL, 1, {3}}, {"d", TENSOR_F64, 0, {0}},
    };
    for (int c = 0; c < 2; c++) {
        tensor_clear_error();
        tensor_dict *d = tensor_load_npz(npy_tmp_path(&tmp, c ? "compressed.npz" : "plain.npz"));
#ifndef TENSOR_USE_ZLIB
        if (c) {
            CHECK(!d && tensor_last_error() && strstr(tensor_last_error(), "TENSOR_USE_ZLIB"));
            tensor_dict_free(d);
            tensor_clear_error();
            continue;
        }
#endif
        CHECK_MSG(d && tensor_dict_len(d) == 4, "%s: %s", c ? "compressed.npz" : "plain.npz", d ? "count" : tensor_last_error());
        for (int k = 0; d && k < 4 && k < tensor_dict_len(d); k++) {
            CHECK(!strcmp(tensor_dict_name(d, k), npz[k].name));
            CHECK_FORMULA(tensor_dict_at(d, k), npz[k].d, npz[k].ndim, npz[k].shape);
        }
        tensor_dict_free(d);
    }
    /* what tensor.h writes, checked by numpy (and byte for byte against numpy.save) */
    static const struct { const char *name; tensor_dtype d; int ndim; int64_t shape[8]; } out[] = {
        {"f4", TENSOR_F32, 2, {3, 4}}, {"f8", TENSOR_F64, 3, {2, 3, 4}}, {"f2", TENSOR_F16, 1, {5}}, {"i4", TENSOR_I32, 2, {2, 5}},
        {"i8", TENSOR_I64, 1, {4}}, {"u1", TENSOR_U8, 2, {3, 3}}, {"b1", TENSOR_BOOL, 1, {7}}, {"scalar", TENSOR_F64, 0, {0}},
        {"empty", TENSOR_F32, 2, {0, 3}}, {"eight", TENSOR_F32, 8, {1, 2, 1, 1, 3, 1, 1, 2}},
    };
    tensor_dict *d = tensor_dict_new();
    for (size_t k = 0; k < sizeof out / sizeof out[0]; k++) {
        tensor *t = npy_formula_tensor(out[k].d, out[k].ndim, out[k].shape);
        snprintf(name, sizeof name, "out_%s.npy", out[k].name);
        CHECK(tensor_save_npy(npy_tmp_path(&tmp, name), t) == 0);
        CHECK(tensor_dict_set(d, out[k].name, t) == 0);
        tensor_free(t);
    }
    tensor *base = npy_formula_tensor(TENSOR_F32, TENSOR_SHAPE(4, 3));
    tensor *tr = tensor_transpose(base, 0, 1);
    CHECK(tensor_save_npy(npy_tmp_path(&tmp, "out_t.npy"), tr) == 0);
    CHECK(tensor_save_npz(npy_tmp_path(&tmp, "out.npz"), d) == 0);
    tensor_free(tr);
    tensor_free(base);
    tensor_dict_free(d);
    snprintf(cmd, sizeof cmd, "'%s' '%s' check '%s'", py, npy_script(), tmp.dir);
    fflush(stdout);
    CHECK_MSG(system(cmd) == 0, "%s failed", cmd);
    npy_tmp_close(&tmp);
}

/* 70,000 members: the count takes the ZIP64 end records (the 16-bit fields hold 0xFFFF). */
TEST(npz_many_members_zip64_count) {
    npy_tmp tmp;
    npy_tmp_open(&tmp);
    const char *path = npy_tmp_path(&tmp, "many.npz");
    tensor_dict *d = tensor_dict_new();
    tensor *t = tensor_zeros(TENSOR_SHAPE(1), TENSOR_U8);
    char name[32];
    for (int i = 0; i < 70000; i++) {
        snprintf(name, sizeof name, "m%d", i);
        tensor_dict_set(d, name, t);
    }
    CHECK(tensor_save_npz(path, d) == 0);
    tensor_dict *e = tensor_load_npz(path);
    CHECK_MSG(e && tensor_dict_len(e) == 70000, "%s", e ? "count" : tensor_last_error());
    if (e && tensor_dict_len(e) == 70000) CHECK(!strcmp(tensor_dict_name(e, 69999), "m69999"));
    tensor_dict_free(e);
    tensor_dict_free(d);
    tensor_free(t);
    npy_tmp_close(&tmp);
}

/* Every memory request of a save and load (.npy in Fortran order, .npz) failing in turn: each run
   fails with a message or gives the same tensors; never a crash or a leak. */
static bool npy_sweep_run(npy_tmp *tmp, tensor *src) {
    bool ok = tensor_save_npy(npy_tmp_path(tmp, "s.npy"), src) == 0;
    tensor *a = ok ? tensor_load_npy(npy_tmp_path(tmp, "fortran.npy")) : NULL;
    tensor_dict *d = a ? tensor_dict_new() : NULL;
    ok = d && tensor_dict_set(d, "a", a) == 0 && tensor_dict_set(d, "src", src) == 0 && tensor_save_npz(npy_tmp_path(tmp, "s.npz"), d) == 0;
    tensor_dict *e = ok ? tensor_load_npz(npy_tmp_path(tmp, "s.npz")) : NULL;
    ok = e && tensor_dict_len(e) == 2 && npy_same(tensor_dict_at(e, 0), a) && npy_same(tensor_dict_at(e, 1), src);
    tensor_dict_free(e);
    tensor_dict_free(d);
    tensor_free(a);
    return ok;
}

TEST(npy_alloc_failure_sweep) {
    static unsigned char buf[2000];
    npy_tmp tmp;
    npy_tmp_open(&tmp);
    float ff[24];
    for (int i = 0; i < 24; i++) ff[i] = (float)i;
    npy_write_file(npy_tmp_path(&tmp, "fortran.npy"), buf, npy_build(buf, 1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3, 4), }", 64, ff, sizeof ff));
    tensor *base = npy_formula_tensor(TENSOR_F64, TENSOR_SHAPE(3, 4));
    tensor *src = tensor_transpose(base, 0, 1);
    tensor_test_fail_alloc(0);
    CHECK(npy_sweep_run(&tmp, src));
    int64_t n = tensor_test_alloc_count();
    CHECK(n > 5);
    for (int64_t k = 1; k <= n; k++) {
        tensor_clear_error();
        tensor_test_fail_alloc(k);
        bool ok = npy_sweep_run(&tmp, src);
        tensor_test_fail_alloc(0);
        CHECK_MSG(ok || tensor_last_error(), "request %lld of %lld failed silently", (long long)k, (long long)n);
    }
    tensor_test_alloc_count();
    tensor_clear_error();
    tensor_free(src);
    tensor_free(base);
    npy_tmp_close(&tmp);
}
