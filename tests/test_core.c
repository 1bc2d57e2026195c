/* Core: the public accessors, dtype promotion, errors, scopes and lifetime, version and runtime
   info, allocation failure. */
#include "test.h"
#include <pthread.h>

#if defined(__SANITIZE_ADDRESS__)
#define TEST_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TEST_ASAN 1
#endif
#endif
#ifdef TEST_ASAN
/* Under AddressSanitizer a request beyond its size limit aborts the run unless this option is on;
   with it, malloc returns NULL as it does in a normal build, so the out-of-memory tests below
   exercise the library's error path under the sanitizer too. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "allocator_may_return_null=1"; }
#endif

static const tensor_dtype all_dtypes[TENSOR_DTYPE_COUNT] = {TENSOR_F32, TENSOR_F64, TENSOR_F16, TENSOR_BF16,
                                                           TENSOR_I32, TENSOR_I64, TENSOR_U8, TENSOR_BOOL};

/* ---- accessors ---- */

TEST(core_shape_accessors) {
    double v[24];
    for (int i = 0; i < 24; i++) v[i] = i;
    tensor *t = test_tensor(TENSOR_F32, TENSOR_SHAPE(2, 3, 4), v);
    CHECK(tensor_ndim(t) == 3);
    const int64_t *s = tensor_shape(t);
    CHECK(s && s[0] == 2 && s[1] == 3 && s[2] == 4);
    const int64_t *st = tensor_strides(t);
    CHECK(st && st[0] == 12 && st[1] == 4 && st[2] == 1);
    CHECK(tensor_size(t, 0) == 2 && tensor_size(t, 1) == 3 && tensor_size(t, 2) == 4);
    CHECK(tensor_size(t, -1) == 4 && tensor_size(t, -2) == 3 && tensor_size(t, -3) == 2);
    CHECK(tensor_numel(t) == 24);
    CHECK(tensor_get_dtype(t) == TENSOR_F32);
    CHECK(tensor_get_device(t) == TENSOR_CPU);
    CHECK(tensor_is_contiguous(t));
    CHECK(tensor_last_error() == NULL);
    CHECK_BAD_INT(tensor_size(t, 3) == -1, "tensor_size");
    CHECK_BAD_INT(tensor_size(t, -4) == -1, "tensor_size");
    /* the message names the dim and the range */
    tensor_size(t, 7);
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "7"));
    tensor_clear_error();
    /* 0-dim: one element, no dims to ask about */
    tensor *z = tensor_scalar(5, TENSOR_I64);
    CHECK(tensor_ndim(z) == 0 && tensor_numel(z) == 1);
    CHECK_BAD_INT(tensor_size(z, 0) == -1, "tensor_size");
    CHECK_BAD_INT(tensor_size(z, -1) == -1, "tensor_size");
    /* zero-size */
    tensor *e = tensor_zeros(TENSOR_SHAPE(3, 0, 2), TENSOR_I32);
    CHECK(tensor_numel(e) == 0 && tensor_ndim(e) == 3 && tensor_size(e, 1) == 0 && tensor_size(e, -1) == 2);
    for (int k = 0; k < TENSOR_DTYPE_COUNT; k++) CHECK(tensor_get_dtype(tensor_ones(TENSOR_SHAPE(1), all_dtypes[k])) == all_dtypes[k]);
}

TEST(core_accessors_on_null) {
    CHECK(tensor_ndim(NULL) == -1);
    CHECK(tensor_shape(NULL) == NULL);
    CHECK(tensor_strides(NULL) == NULL);
    CHECK(tensor_numel(NULL) == 0);
    CHECK(!tensor_is_contiguous(NULL));
    CHECK(!tensor_shares_storage(NULL, NULL));
    tensor_free(NULL);
    CHECK_BAD_INT(tensor_size(NULL, 0) == -1, "tensor_size");
    tensor_clear_error();
    CHECK(isnan(tensor_item(NULL)));
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "tensor_item"));
    CHECK_BAD(tensor_data_ptr(NULL), "tensor_data_ptr");
    double d[2];
    CHECK_BAD_INT(tensor_copy_to(NULL, d, sizeof d) == -1, "tensor_copy_to");
}

/* A zero-size tensor is contiguous whatever its strides (PyTorch: torch.empty(2, 0, 4).is_contiguous()). */
TEST(core_zero_size_is_contiguous) {
    CHECK(tensor_is_contiguous(tensor_zeros(TENSOR_SHAPE(0), TENSOR_F32)));
    CHECK(tensor_is_contiguous(tensor_zeros(TENSOR_SHAPE(3, 0), TENSOR_F32)));
    CHECK(tensor_is_contiguous(tensor_zeros(TENSOR_SHAPE(2, 0, 4), TENSOR_F32)));
    tensor_clear_error();
    CHECK(tensor_data_ptr(tensor_zeros(TENSOR_SHAPE(2, 0, 4), TENSOR_F32)) != NULL);
    tensor_clear_error();
}

TEST(core_item) {
    CHECK_NEAR(tensor_item(tensor_scalar(2.5, TENSOR_F32)), 2.5, 0, 0);
    CHECK_NEAR(tensor_item(tensor_full(TENSOR_SHAPE(1, 1, 1), -4, TENSOR_I32)), -4, 0, 0);
    CHECK_NEAR(tensor_item(tensor_scalar(1, TENSOR_BOOL)), 1, 0, 0);
    CHECK_NEAR(tensor_item(tensor_scalar(0.1, TENSOR_F64)), 0.1, 0, 0);
    CHECK_NEAR(tensor_item(tensor_scalar(0.1, TENSOR_F16)), 0.0999755859375, 0, 0);
    CHECK_NEAR(tensor_item(tensor_scalar(200, TENSOR_U8)), 200, 0, 0);
    const int64_t big = (1ll << 52) + 1;
    CHECK_NEAR(tensor_item(tensor_from_data(&big, 0, NULL, TENSOR_I64)), 4503599627370497.0, 0, 0);
    tensor_clear_error();
    CHECK(isnan(tensor_item(tensor_zeros(TENSOR_SHAPE(2), TENSOR_F32))));
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "tensor_item") && strstr(tensor_last_error(), "[2]"));
    tensor_clear_error();
    CHECK(isnan(tensor_item(tensor_zeros(TENSOR_SHAPE(0), TENSOR_F32))));
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "tensor_item"));
    tensor_clear_error();
}

TEST(core_data_ptr_and_copy_to) {
    const float v[6] = {1, 2, 3, 4, 5, 6};
    tensor *t = tensor_from_data(v, TENSOR_SHAPE(2, 3), TENSOR_F32);
    float *p = (float *)tensor_data_ptr(t);
    CHECK(p != NULL);
    if (p) {
        CHECK(memcmp(p, v, sizeof v) == 0);
        p[4] = 50; /* the pointer is the tensor's storage */
        const double e[6] = {1, 2, 3, 4, 50, 6};
        CHECK_VALUES(t, e, 6, 0, 0);
    }
    /* copy_to: exact size, larger buffer, too small (nothing written), NULL dst */
    float out[8];
    for (int i = 0; i < 8; i++) out[i] = -1;
    CHECK(tensor_copy_to(t, out, 6 * sizeof(float)) == 0);
    CHECK(out[0] == 1 && out[4] == 50 && out[5] == 6 && out[6] == -1);
    CHECK(tensor_copy_to(t, out, sizeof out) == 0);
    for (int i = 0; i < 8; i++) out[i] = -1;
    CHECK_BAD_INT(tensor_copy_to(t, out, 6 * sizeof(float) - 1) == -1, "tensor_copy_to");
    CHECK(out[0] == -1);
    tensor_copy_to(t, out, 4);
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "4") && strstr(tensor_last_error(), "24"));
    tensor_clear_error();
    CHECK_BAD_INT(tensor_copy_to(t, NULL, 100) == -1, "tensor_copy_to");
    /* zero-size: nothing to copy, a NULL destination is fine */
    CHECK(tensor_copy_to(tensor_zeros(TENSOR_SHAPE(0, 3), TENSOR_F64), NULL, 0) == 0);
    /* the copy is in the tensor's own dtype */
    const double d[2] = {1.5, -2};
    uint16_t h[2];
    CHECK(tensor_copy_to(test_tensor(TENSOR_BF16, TENSOR_SHAPE(2), d), h, sizeof h) == 0);
    CHECK(h[0] == 0x3FC0 && h[1] == 0xC000);
    CHECK(tensor_last_error() == NULL);
}

TEST(core_views_of_transposed) {
    const double v[6] = {0, 1, 2, 3, 4, 5};
    tensor *a = test_tensor(TENSOR_F64, TENSOR_SHAPE(2, 3), v);
    tensor *t = tensor_transpose(a, 0, 1);
    CHECK(t && !tensor_is_contiguous(t));
    CHECK(tensor_shares_storage(a, t));
    const int64_t *st = tensor_strides(t);
    CHECK(st && st[0] == 1 && st[1] == 3);
    CHECK_BAD(tensor_data_ptr(t), "tensor_data_ptr");
    /* copy_to writes any layout in row-major order */
    double out[6];
    CHECK(tensor_copy_to(t, out, sizeof out) == 0);
    CHECK(out[0] == 0 && out[1] == 3 && out[2] == 1 && out[3] == 4 && out[4] == 2 && out[5] == 5);
    CHECK_NEAR(tensor_item(tensor_select(tensor_select(t, 0, 2), 0, 1)), 5, 0, 0);
}

TEST(core_dtype_names_and_sizes) {
    const char *names[TENSOR_DTYPE_COUNT] = {"float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8", "bool"};
    const size_t sizes[TENSOR_DTYPE_COUNT] = {4, 8, 2, 2, 4, 8, 1, 1};
    for (int k = 0; k < TENSOR_DTYPE_COUNT; k++) {
        CHECK(strcmp(tensor_dtype_name(all_dtypes[k]), names[k]) == 0);
        CHECK(tensor_dtype_size(all_dtypes[k]) == sizes[k]);
    }
    CHECK(strcmp(tensor_dtype_name((tensor_dtype)99), "invalid") == 0);
    CHECK(tensor_dtype_size((tensor_dtype)99) == 0);
    CHECK(tensor_dtype_size((tensor_dtype)-1) == 0);
}

/* ---- promotion ---- */

/* torch.promote_types(a, b), rows and columns in the order float32 float64 float16 bfloat16
   int32 int64 uint8 bool, as PyTorch prints it. */
#define F32 TENSOR_F32
#define F64 TENSOR_F64
#define F16 TENSOR_F16
#define BF16 TENSOR_BF16
#define I32 TENSOR_I32
#define I64 TENSOR_I64
#define U8 TENSOR_U8
#define B TENSOR_BOOL
static const tensor_dtype torch_promote[8][8] = {
    /*          f32  f64  f16   bf16  i32   i64   u8    bool */
    /* f32  */ {F32, F64, F32,  F32,  F32,  F32,  F32,  F32},
    /* f64  */ {F64, F64, F64,  F64,  F64,  F64,  F64,  F64},
    /* f16  */ {F32, F64, F16,  F32,  F16,  F16,  F16,  F16},
    /* bf16 */ {F32, F64, F32,  BF16, BF16, BF16, BF16, BF16},
    /* i32  */ {F32, F64, F16,  BF16, I32,  I64,  I32,  I32},
    /* i64  */ {F32, F64, F16,  BF16, I64,  I64,  I64,  I64},
    /* u8   */ {F32, F64, F16,  BF16, I32,  I64,  U8,   U8},
    /* bool */ {F32, F64, F16,  BF16, I32,  I64,  U8,   B},
};

TEST(core_promote_types_all_pairs) {
    for (int i = 0; i < 8; i++)
        for (int j = 0; j < 8; j++) {
            tensor_dtype got = tensor_promote_types(all_dtypes[i], all_dtypes[j]);
            CHECK_MSG(got == torch_promote[i][j], "promote_types(%s, %s) = %s, PyTorch gives %s", tensor_dtype_name(all_dtypes[i]),
                      tensor_dtype_name(all_dtypes[j]), tensor_dtype_name(got), tensor_dtype_name(torch_promote[i][j]));
            CHECK(got == tensor_promote_types(all_dtypes[j], all_dtypes[i]));
            /* a binary op on two dimensioned tensors gives the same dtype */
            tensor_scope_begin();
            tensor *r = tensor_add(tensor_ones(TENSOR_SHAPE(2), all_dtypes[i]), tensor_ones(TENSOR_SHAPE(2), all_dtypes[j]));
            CHECK_MSG(r && tensor_get_dtype(r) == torch_promote[i][j], "add(%s, %s) gives %s", tensor_dtype_name(all_dtypes[i]),
                      tensor_dtype_name(all_dtypes[j]), r ? tensor_dtype_name(tensor_get_dtype(r)) : "NULL");
            tensor_scope_end();
        }
    CHECK(tensor_last_error() == NULL);
    tensor_promote_types((tensor_dtype)99, TENSOR_F32);
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "tensor_promote_types"));
    tensor_clear_error();
}

static tensor_dtype add_type(tensor *a, tensor *b) {
    tensor *r = tensor_add(a, b);
    return r ? tensor_get_dtype(r) : (tensor_dtype)-1;
}

/* PyTorch's result_type: a 0-dim operand only matters when its category (bool < int < float) is
   higher than that of the dimensioned operands; a Python number acts as a 0-dim operand of the
   default dtype of its kind. */
TEST(core_result_type_with_zero_dim_operands) {
    tensor *f32v = tensor_ones(TENSOR_SHAPE(2), TENSOR_F32), *i32v = tensor_ones(TENSOR_SHAPE(2), TENSOR_I32);
    tensor *u8v = tensor_ones(TENSOR_SHAPE(2), TENSOR_U8), *bv = tensor_ones(TENSOR_SHAPE(2), TENSOR_BOOL);
    tensor *f16v = tensor_ones(TENSOR_SHAPE(2), TENSOR_F16);
    tensor *f64s = tensor_scalar(0.5, TENSOR_F64), *i32s = tensor_scalar(3, TENSOR_I32), *i64s = tensor_scalar(3, TENSOR_I64);
    tensor *f32s = tensor_scalar(1, TENSOR_F32), *bs = tensor_scalar(1, TENSOR_BOOL);
    CHECK(add_type(f32v, f64s) == TENSOR_F32);   /* same category: the dimensioned tensor wins */
    CHECK(add_type(f64s, f32v) == TENSOR_F32);
    CHECK(add_type(i32v, f64s) == TENSOR_F64);   /* higher category: promote with the 0-dim dtype */
    CHECK(add_type(u8v, i32s) == TENSOR_U8);
    CHECK(add_type(u8v, i64s) == TENSOR_U8);
    CHECK(add_type(bv, bv) == TENSOR_BOOL);
    CHECK(add_type(bv, bs) == TENSOR_BOOL);
    CHECK(add_type(bv, i64s) == TENSOR_I64);
    CHECK(add_type(f16v, f32s) == TENSOR_F16);
    CHECK(add_type(f16v, f64s) == TENSOR_F16);
    CHECK(add_type(i64s, i32s) == TENSOR_I64);   /* two 0-dim operands: ordinary promotion */
    CHECK(add_type(bs, f64s) == TENSOR_F64);
    CHECK(add_type(i32v, tensor_ones(TENSOR_SHAPE(2), TENSOR_I64)) == TENSOR_I64);
    /* values follow the result type: int32 [1, 1] + 0.5 (f64) = [1.5, 1.5] in f64 */
    const double e[2] = {1.5, 1.5};
    CHECK_VALUES(tensor_add(i32v, f64s), e, 2, 0, 0);
    /* a C double as a Python number */
    tensor *r = tensor_add_scalar(i32v, 2.5);
    CHECK(r && tensor_get_dtype(r) == TENSOR_F32);
    const double e2[2] = {3.5, 3.5};
    CHECK_VALUES(r, e2, 2, 0, 0);
    CHECK(tensor_get_dtype(tensor_add_scalar(i32v, 2)) == TENSOR_I32);
    CHECK(tensor_get_dtype(tensor_add_scalar(bv, 1)) == TENSOR_I64);
    CHECK(tensor_get_dtype(tensor_add_scalar(bv, 1.5)) == TENSOR_F32);
    CHECK(tensor_get_dtype(tensor_add_scalar(f16v, 2.5)) == TENSOR_F16);
    CHECK(tensor_get_dtype(tensor_add_scalar(u8v, 2)) == TENSOR_U8);
    CHECK(tensor_get_dtype(tensor_mul_scalar(tensor_ones(TENSOR_SHAPE(2), TENSOR_F64), 0.5)) == TENSOR_F64);
    CHECK(tensor_last_error() == NULL);
}

/* ---- errors ---- */

TEST(core_error_messages_name_function_and_values) {
    tensor_clear_error();
    CHECK(tensor_last_error() == NULL);
    CHECK(tensor_zeros(TENSOR_SHAPE(2, -3), TENSOR_F32) == NULL);
    const char *m = tensor_last_error();
    CHECK(m && strncmp(m, "tensor_zeros: ", 14) == 0 && strstr(m, "-3") && strstr(m, "[2, -3]"));
    tensor_clear_error();
    CHECK(tensor_eye(-5, TENSOR_F32) == NULL);
    m = tensor_last_error();
    CHECK(m && strncmp(m, "tensor_eye: ", 12) == 0 && strstr(m, "-5"));
    tensor_clear_error();
    tensor *a = tensor_ones(TENSOR_SHAPE(2, 3), TENSOR_F32), *b = tensor_ones(TENSOR_SHAPE(4), TENSOR_F32);
    CHECK(tensor_add(a, b) == NULL);
    m = tensor_last_error();
    CHECK(m && strncmp(m, "tensor_add: ", 12) == 0 && strstr(m, "[2, 3]") && strstr(m, "[4]"));
    tensor_clear_error();
}

TEST(core_first_error_kept_until_cleared) {
    tensor_clear_error();
    CHECK(tensor_zeros(TENSOR_SHAPE(-1), TENSOR_F32) == NULL);
    CHECK(tensor_eye(-1, TENSOR_F32) == NULL);
    CHECK(tensor_arange(0, 1, 0, TENSOR_F32) == NULL);
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "tensor_zeros"));
    tensor_clear_error();
    CHECK(tensor_last_error() == NULL);
    CHECK(tensor_eye(-1, TENSOR_F32) == NULL);
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "tensor_eye"));
    /* a success does not clear it */
    tensor *ok = tensor_ones(TENSOR_SHAPE(1), TENSOR_F32);
    CHECK(ok != NULL);
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "tensor_eye"));
    tensor_clear_error();
}

typedef struct { int calls; char last[256]; void *user; } handler_log;
static void log_error(const char *message, void *user) {
    handler_log *h = (handler_log *)user;
    h->calls++;
    h->user = user;
    snprintf(h->last, sizeof h->last, "%s", message);
}

TEST(core_error_handler) {
    handler_log log;
    memset(&log, 0, sizeof log);
    tensor_set_error_handler(log_error, &log);
    CHECK(tensor_zeros(TENSOR_SHAPE(-1), TENSOR_F32) == NULL);
    CHECK(log.calls == 1 && log.user == &log && strstr(log.last, "tensor_zeros") && strstr(log.last, "-1"));
    /* the handler sees every error, while tensor_last_error keeps the first */
    CHECK(tensor_eye(-2, TENSOR_F32) == NULL);
    CHECK(log.calls == 2 && strstr(log.last, "tensor_eye"));
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "tensor_zeros"));
    /* no call on success */
    CHECK(tensor_ones(TENSOR_SHAPE(1), TENSOR_F32) != NULL);
    CHECK(log.calls == 2);
    tensor_set_error_handler(NULL, NULL);
    CHECK(tensor_eye(-3, TENSOR_F32) == NULL);
    CHECK(log.calls == 2);
    tensor_clear_error();
}

TEST(core_null_propagation_through_a_chain) {
    tensor_clear_error();
    tensor *x = tensor_ones(TENSOR_SHAPE(3), TENSOR_F32);
    tensor *bad = tensor_full(TENSOR_SHAPE(3, -1), 1, TENSOR_F32);
    tensor *r = tensor_exp(tensor_mul(tensor_add(bad, x), tensor_clone(tensor_to_dtype(bad, TENSOR_F64))));
    CHECK(r == NULL);
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "tensor_full"));
    CHECK(isnan(tensor_item(r)));
    CHECK(tensor_numel(r) == 0);
    char buf[8];
    CHECK(tensor_snprint(r, buf, sizeof buf) == -1);
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "tensor_full"));
    tensor_clear_error();
    /* a NULL passed directly names the function that received it */
    CHECK(tensor_exp(NULL) == NULL);
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "tensor_exp"));
    tensor_clear_error();
}

/* Errors are per thread. */
static void *error_in_thread(void *arg) {
    int *ok = (int *)arg;
    tensor_clear_error();
    tensor_eye(-1, TENSOR_F32); /* fails before allocating anything */
    *ok = tensor_last_error() != NULL && strstr(tensor_last_error(), "tensor_eye") != NULL;
    return NULL;
}

TEST(core_errors_are_per_thread) {
    tensor_clear_error();
    pthread_t th;
    int ok = 0;
    CHECK(pthread_create(&th, NULL, error_in_thread, &ok) == 0);
    pthread_join(th, NULL);
    CHECK(ok);
    CHECK(tensor_last_error() == NULL);
}

/* ---- scopes and lifetime ---- */

TEST(core_scopes_nested_and_keep) {
    int64_t h0 = tensor_live_handles(), b0 = tensor_live_bytes();
    tensor_scope_begin();
    tensor *a = tensor_zeros(TENSOR_SHAPE(10), TENSOR_F32);
    CHECK(tensor_live_handles() == h0 + 1 && tensor_live_bytes() == b0 + 40);
    tensor_scope_begin();
    tensor *b = tensor_zeros(TENSOR_SHAPE(20), TENSOR_F32);
    tensor *c = tensor_full(TENSOR_SHAPE(30), 7, TENSOR_F32);
    (void)b;
    CHECK(tensor_keep(c) == c);
    CHECK(tensor_keep(NULL) == NULL);
    CHECK(tensor_live_handles() == h0 + 3);
    tensor_scope_end(); /* frees b; c moved to the outer scope */
    CHECK(tensor_live_handles() == h0 + 2 && tensor_live_bytes() == b0 + 40 + 120);
    float cv[30];
    CHECK(tensor_copy_to(c, cv, sizeof cv) == 0);
    CHECK(cv[0] == 7 && cv[29] == 7);
    /* freeing a handle early inside a scope is fine: scope end does not free it twice */
    tensor *d = tensor_ones(TENSOR_SHAPE(5), TENSOR_F64);
    tensor_free(d);
    (void)a;
    tensor_scope_end();
    CHECK(tensor_live_handles() == h0 && tensor_live_bytes() == b0);
    CHECK(tensor_last_error() == NULL);
}

TEST(core_handles_outside_scopes_survive) {
    int64_t h0 = tensor_live_handles(), b0 = tensor_live_bytes();
    /* this test runs inside a scope; keep moves x out of it to the root, outside every scope */
    tensor *x = tensor_keep(tensor_full(TENSOR_SHAPE(4), 3, TENSOR_I32));
    CHECK(tensor_keep(x) == x); /* at the root keep changes nothing */
    tensor_scope_begin();
    tensor *y = tensor_ones(TENSOR_SHAPE(4), TENSOR_I32);
    (void)y;
    tensor_scope_end();
    CHECK(tensor_live_handles() == h0 + 1 && tensor_live_bytes() == b0 + 16);
    const double e[4] = {3, 3, 3, 3};
    CHECK_VALUES(x, e, 4, 0, 0);
    /* a handle at the root lives until it is freed */
    tensor_free(x);
    CHECK(tensor_live_handles() == h0 && tensor_live_bytes() == b0);
}

TEST(core_views_keep_storage_alive) {
    int64_t h0 = tensor_live_handles(), b0 = tensor_live_bytes();
    tensor *a = tensor_full(TENSOR_SHAPE(8), 2, TENSOR_F64);
    tensor *v = tensor_contiguous(a); /* a second handle on the same storage */
    CHECK(tensor_shares_storage(a, v));
    CHECK(tensor_live_handles() == h0 + 2 && tensor_live_bytes() == b0 + 64);
    tensor_free(a);
    CHECK(tensor_live_handles() == h0 + 1 && tensor_live_bytes() == b0 + 64);
    const double e[8] = {2, 2, 2, 2, 2, 2, 2, 2};
    CHECK_VALUES(v, e, 8, 0, 0);
    tensor_free(v);
    CHECK(tensor_live_handles() == h0 && tensor_live_bytes() == b0);
}

TEST(core_unbalanced_scope_end_is_an_error) {
    /* close the scope this test runs in, then one more: that one is unbalanced */
    tensor_scope_end();
    tensor_clear_error();
    tensor_scope_end();
    const char *m = tensor_last_error();
    CHECK(m && strstr(m, "tensor_scope_end"));
    tensor_clear_error();
    tensor_scope_begin(); /* give the runner back its scope */
    tensor *t = tensor_ones(TENSOR_SHAPE(2), TENSOR_F32);
    CHECK(t != NULL);
}

/* ---- version, build info, runtime ---- */

TEST(core_version_and_build_info) {
    char want[32];
    snprintf(want, sizeof want, "%d.%d.%d", TENSOR_VERSION_MAJOR, TENSOR_VERSION_MINOR, TENSOR_VERSION_PATCH);
    CHECK(strcmp(tensor_version(), want) == 0);
    int a, b, c;
    char tail;
    CHECK(sscanf(tensor_version(), "%d.%d.%d%c", &a, &b, &c, &tail) == 3);
    const char *info = tensor_build_info();
    CHECK(info && strstr(info, tensor_version()));
    CHECK(info && strstr(info, "simd"));
    CHECK(info && strstr(info, "sleef"));
    CHECK(info && strstr(info, "cuda"));
    CHECK(info && strstr(info, "threads"));
    CHECK((strstr(info, "cuda: no") != NULL) == !tensor_cuda_available());
}

TEST(core_num_threads) {
    int before = tensor_get_num_threads();
    CHECK(before >= 1);
    tensor_clear_error();
    tensor_set_num_threads(-1);
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "tensor_set_num_threads") && strstr(tensor_last_error(), "-1"));
    CHECK(tensor_get_num_threads() == before);
    tensor_clear_error();
    tensor_set_num_threads(3);
    CHECK(tensor_get_num_threads() == 3);
    tensor_set_num_threads(0); /* all cores: at least one */
    CHECK(tensor_get_num_threads() >= 1);
    tensor_set_num_threads(before);
    CHECK(tensor_get_num_threads() == before);
    CHECK(tensor_last_error() == NULL);
}

/* ---- allocation failure ---- */

TEST(core_out_of_memory_is_an_error) {
    int64_t h0 = tensor_live_handles(), b0 = tensor_live_bytes();
    /* 2^60 elements: refused before any allocation */
    CHECK_BAD(tensor_empty(TENSOR_SHAPE(1ll << 40, 1ll << 20), TENSOR_F32), "tensor_empty");
    /* 2^48 f32 elements = 1 PiB: passes the shape checks, and malloc fails */
    CHECK_BAD(tensor_empty(TENSOR_SHAPE(1ll << 48), TENSOR_F32), "tensor_empty");
    CHECK(tensor_empty(TENSOR_SHAPE(1ll << 48), TENSOR_F32) == NULL);
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "tensor_empty"));
    tensor_clear_error();
    CHECK_BAD(tensor_zeros(TENSOR_SHAPE(1ll << 24, 1ll << 24), TENSOR_F64), "tensor_zeros");
    CHECK_BAD(tensor_rand(TENSOR_SHAPE(1ll << 49), TENSOR_F16), "tensor_rand");
    CHECK(tensor_live_handles() == h0 && tensor_live_bytes() == b0);
    /* the library still works afterwards */
    CHECK_NEAR(tensor_item(tensor_ones(0, NULL, TENSOR_F32)), 1, 0, 0);
}
