/* Files: tensor_dict, safetensors (round trips, hand-made golden files, every rejection rule, mapped
   loading), checkpoints of optimizers and the generator (resumed bit for bit in a fresh process). */
#include "test.h"
#include <errno.h>
#include <stdarg.h>
#include <pthread.h>
#include <unistd.h>

/* A fresh path under /tmp for this process: files_path(buf, "x.safetensors"). */
static const char *files_path(char *buf, size_t n, const char *name) {
    snprintf(buf, n, "/tmp/tensor_test_%d_%s", (int)getpid(), name);
    return buf;
}
static bool write_bytes(const char *path, const void *p, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return false;
    bool ok = fwrite(p, 1, n, f) == n;
    return fclose(f) == 0 && ok;
}
/* A safetensors file from a header text and a buffer of buf_len bytes (0, 1, 2, ... mod 251). */
static bool write_st(const char *path, const char *header, size_t buf_len) {
    size_t h = strlen(header), n = 8 + h + buf_len;
    unsigned char *b = (unsigned char *)malloc(n ? n : 1);
    if (!b) return false;
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)h >> (8 * i));
    memcpy(b + 8, header, h);
    for (size_t i = 0; i < buf_len; i++) b[8 + h + i] = (unsigned char)(i % 251);
    bool ok = write_bytes(path, b, n);
    free(b);
    return ok;
}
static tensor *arange_as(int64_t n, tensor_dtype dt) {
    tensor *a = tensor_arange(0, (double)n, 1, TENSOR_F64);
    tensor *b = tensor_sub_scalar(a, (double)n / 3);
    tensor *c = tensor_to_dtype(b, dt);
    tensor_free(a);
    tensor_free(b);
    return c;
}

TEST(dict_holds_its_own_references_in_order) {
    tensor_dict *d = tensor_dict_new();
    tensor *a = tensor_ones(TENSOR_SHAPE(2, 3), TENSOR_F32), *b = tensor_zeros(TENSOR_SHAPE(4), TENSOR_I64);
    CHECK(tensor_dict_set(d, "w", a) == 0);
    CHECK(tensor_dict_set(d, "b", b) == 0);
    tensor_free(a);
    tensor_free(b);
    CHECK(tensor_dict_len(d) == 2);
    CHECK(!strcmp(tensor_dict_name(d, 0), "w") && !strcmp(tensor_dict_name(d, 1), "b"));
    tensor *w = tensor_dict_get(d, "w");
    CHECK(w && tensor_numel(w) == 6 && tensor_item(tensor_sum_all(w)) == 6);
    CHECK(tensor_dict_at(d, 1) == tensor_dict_get(d, "b"));
    /* replacing keeps the place */
    tensor *c = tensor_full(TENSOR_SHAPE(1), 7, TENSOR_F64);
    CHECK(tensor_dict_set(d, "w", c) == 0);
    tensor_free(c);
    CHECK(tensor_dict_len(d) == 2 && tensor_item(tensor_dict_get(d, "w")) == 7 && !strcmp(tensor_dict_name(d, 0), "w"));
    /* many names: the index grows */
    for (int i = 0; i < 300; i++) {
        char name[32];
        snprintf(name, sizeof name, "layer.%d.weight", i);
        tensor *t = tensor_scalar(i, TENSOR_I32);
        CHECK(tensor_dict_set(d, name, t) == 0);
        tensor_free(t);
    }
    CHECK(tensor_dict_len(d) == 302);
    CHECK(tensor_item(tensor_dict_get(d, "layer.123.weight")) == 123);
    CHECK(tensor_dict_contains(d, "layer.299.weight") && !tensor_dict_contains(d, "layer.300.weight"));
    CHECK(tensor_dict_set_metadata(d, "format", "pt") == 0 && tensor_dict_set_metadata(d, "format", "np") == 0);
    CHECK(!strcmp(tensor_dict_metadata(d, "format"), "np") && tensor_dict_metadata(d, "other") == NULL && tensor_dict_metadata_len(d) == 1);
    CHECK_BAD(tensor_dict_get(d, "missing"), "tensor_dict_get");
    CHECK_BAD(tensor_dict_at(d, 302), "tensor_dict_at");
    CHECK_BAD_INT(tensor_dict_set(d, "x", NULL) != 0, "tensor_dict_set");
    CHECK_BAD_INT(tensor_dict_set(NULL, "x", NULL) != 0, "tensor_dict_set");
    tensor_dict_free(d);
    tensor_dict_free(NULL);
    tensor_clear_error();
}

/* Every dtype, 0-d, empty, 8-d, non-contiguous sources and metadata, read and mapped. */
TEST(safetensors_round_trip_every_dtype_and_shape) {
    char path[256];
    files_path(path, sizeof path, "rt.safetensors");
    tensor_dict *d = tensor_dict_new();
    const tensor_dtype dts[] = {TENSOR_F32, TENSOR_F64, TENSOR_F16, TENSOR_BF16, TENSOR_I32, TENSOR_I64, TENSOR_U8, TENSOR_BOOL};
    for (int i = 0; i < 8; i++) {
        char name[32];
        tensor *t = arange_as(7, dts[i]); /* 7 elements: odd byte lengths for the 1- and 2-byte dtypes */
        snprintf(name, sizeof name, "v.%s", tensor_dtype_name(dts[i]));
        CHECK(tensor_dict_set(d, name, t) == 0);
        tensor_free(t);
    }
    tensor *s = tensor_scalar(-2.5, TENSOR_F32), *e = tensor_zeros(TENSOR_SHAPE(0, 3), TENSOR_F64);
    tensor *big = tensor_randn(TENSOR_SHAPE(2, 1, 2, 1, 3, 1, 2, 2), TENSOR_F32);
    tensor *m = tensor_randn(TENSOR_SHAPE(5, 6), TENSOR_F64), *mt = tensor_transpose(m, 0, 1), *ms = tensor_slice(m, 1, 1, 6, 2);
    CHECK(tensor_dict_set(d, "scalar", s) == 0 && tensor_dict_set(d, "empty", e) == 0 && tensor_dict_set(d, "eight_dims", big) == 0);
    CHECK(tensor_dict_set(d, "transposed", mt) == 0 && tensor_dict_set(d, "sliced", ms) == 0);
    CHECK(tensor_dict_set_metadata(d, "format", "pt") == 0 && tensor_dict_set_metadata(d, "note \"quoted\"\n\xc3\xa9", "caf\xc3\xa9 \\ \x01") == 0);
    CHECK(tensor_save(path, d) == 0);
    for (int mode = 0; mode < 2; mode++) {
        tensor_dict *r = tensor_load(path, mode ? TENSOR_LOAD_MMAP : 0);
        CHECK_MSG(r != NULL, "load (mode %d): %s", mode, tensor_last_error());
        if (!r) continue;
        CHECK(tensor_dict_len(r) == tensor_dict_len(d));
        for (int i = 0; i < tensor_dict_len(d) && i < tensor_dict_len(r); i++) {
            CHECK(!strcmp(tensor_dict_name(r, i), tensor_dict_name(d, i)));
            tensor *a = tensor_dict_at(d, i), *b = tensor_dict_at(r, i);
            CHECK_MSG(tensor_get_dtype(a) == tensor_get_dtype(b) && tensor_ndim(a) == tensor_ndim(b) && tensor_is_contiguous(b), "%s", tensor_dict_name(d, i));
            for (int k = 0; k < tensor_ndim(a); k++) CHECK(tensor_shape(a)[k] == tensor_shape(b)[k]);
            CHECK_MSG(test_same_bits(a, b), "%s differs (mode %d)", tensor_dict_name(d, i), mode);
        }
        CHECK(tensor_dict_metadata_len(r) == 2 && !strcmp(tensor_dict_metadata(r, "format"), "pt"));
        const char *v = tensor_dict_metadata(r, "note \"quoted\"\n\xc3\xa9");
        CHECK(v && !strcmp(v, "caf\xc3\xa9 \\ \x01"));
        tensor_dict_free(r);
    }
    tensor_free(s); tensor_free(e); tensor_free(big); tensor_free(m); tensor_free(mt); tensor_free(ms);
    tensor_dict_free(d);
    remove(path);
    CHECK(tensor_last_error() == NULL);
}

/* Mapped tensors view the file's pages; a write copies the page and never reaches the file. */
TEST(safetensors_mapped_load_is_copy_on_write) {
    char path[256];
    files_path(path, sizeof path, "cow.safetensors");
    tensor *w = tensor_randn(TENSOR_SHAPE(256, 64), TENSOR_F32), *h = tensor_arange(0, 10, 1, TENSOR_F16);
    const char *names[2] = {"w", "h"};
    tensor *ts[2] = {w, h};
    CHECK(tensor_save_safetensors(path, 2, names, ts) == 0);
    tensor_dict *m = tensor_load(path, TENSOR_LOAD_MMAP);
    CHECK(m != NULL);
    if (m) {
        tensor *mw = tensor_dict_get(m, "w");
        CHECK(test_same_bits(mw, w));
        /* the data is 8-aligned at least (so every dtype is aligned) */
        CHECK(((uintptr_t)tensor_data_ptr(mw) & 7) == 0 && ((uintptr_t)tensor_data_ptr(tensor_dict_get(m, "h")) & 1) == 0);
        tensor *keep = tensor_clone(mw);
        CHECK(tensor_fill_(mw, 3) != NULL);
        CHECK(tensor_item(tensor_max_all(mw)) == 3);
        tensor_dict *again = tensor_load(path, TENSOR_LOAD_MMAP), *read = tensor_load(path, 0);
        CHECK(again && read && test_same_bits(tensor_dict_get(again, "w"), keep) && test_same_bits(tensor_dict_get(read, "w"), keep));
        /* a tensor outlives its dict (and the mapping outlives both until the last view goes) */
        tensor *view = tensor_slice(tensor_dict_get(again, "w"), 0, 10, 20, 1);
        tensor_dict_free(again);
        tensor *ref = tensor_slice(keep, 0, 10, 20, 1);
        CHECK(test_same_bits(view, ref));
        tensor_free(view);
        tensor_free(ref);
        tensor_free(keep);
        tensor_dict_free(read);
        tensor_dict_free(m);
    }
    tensor_free(w);
    tensor_free(h);
    remove(path);
}

/* The list API: names and tensors the caller frees. */
TEST(safetensors_list_api) {
    char path[256];
    files_path(path, sizeof path, "list.safetensors");
    tensor *a = tensor_eye(3, TENSOR_F32), *b = tensor_arange(0, 5, 1, TENSOR_I64);
    const char *names[2] = {"eye", "range"};
    tensor *ts[2] = {a, b};
    CHECK(tensor_save_safetensors(path, 2, names, ts) == 0);
    int n = 0;
    char **got_names = NULL;
    tensor **got = NULL;
    CHECK(tensor_load_safetensors(path, &n, &got_names, &got) == 0 && n == 2);
    if (n == 2) {
        CHECK(!strcmp(got_names[0], "eye") && !strcmp(got_names[1], "range"));
        CHECK(test_same_bits(got[0], a) && test_same_bits(got[1], b));
        for (int i = 0; i < n; i++) { free(got_names[i]); tensor_free(got[i]); }
    }
    free(got_names);
    free(got);
    const char *dup[2] = {"x", "x"};
    CHECK_BAD_INT(tensor_save_safetensors(path, 2, dup, ts) != 0, "tensor_save_safetensors");
    const char *reserved[1] = {"__metadata__"};
    CHECK_BAD_INT(tensor_save_safetensors(path, 1, reserved, ts) != 0, "tensor_save_safetensors");
    const char *bad_utf8[1] = {"\xff"};
    CHECK_BAD_INT(tensor_save_safetensors(path, 1, bad_utf8, ts) != 0, "tensor_save_safetensors");
    CHECK_BAD_INT(tensor_save_safetensors("/nonexistent-dir/x.safetensors", 2, names, ts) != 0, "tensor_save_safetensors");
    CHECK_BAD_INT(tensor_load_safetensors(path, NULL, &got_names, &got) != 0, "tensor_load_safetensors");
    tensor_free(a);
    tensor_free(b);
    remove(path);
}

/* What tensor.h writes, byte for byte, for a small case worked out from the specification: the
   header in the dict's order (with "format": "pt" first, as the dict has no format of its own),
   data by decreasing element size (F64 first), spaces to 8 bytes. */
TEST(safetensors_writes_the_specified_bytes) {
    char path[256];
    files_path(path, sizeof path, "golden_out.safetensors");
    tensor_dict *d = tensor_dict_new();
    int32_t iv[2] = {1, -2};
    double dv[1] = {0.5};
    tensor *i = tensor_from_data(iv, 1, (const int64_t[]){2}, TENSOR_I32), *f = tensor_from_data(dv, 0, NULL, TENSOR_F64);
    tensor_dict_set(d, "i", i);
    tensor_dict_set(d, "f", f);
    tensor_dict_set_metadata(d, "k", "v");
    CHECK(tensor_save(path, d) == 0);
    const char *hdr = "{\"__metadata__\":{\"format\":\"pt\",\"k\":\"v\"},\"i\":{\"dtype\":\"I32\",\"shape\":[2],\"data_offsets\":[8,16]},"
                      "\"f\":{\"dtype\":\"F64\",\"shape\":[],\"data_offsets\":[0,8]}}";
    size_t h = strlen(hdr), padded = (h + 7) / 8 * 8;
    unsigned char want[512], got[600];
    memset(want, 0, sizeof want);
    want[0] = (unsigned char)padded;
    memcpy(want + 8, hdr, h);
    memset(want + 8 + h, ' ', padded - h);
    memcpy(want + 8 + padded, dv, 8);
    memcpy(want + 16 + padded, iv, 8);
    FILE *fp = fopen(path, "rb");
    size_t n = fp ? fread(got, 1, sizeof got, fp) : 0;
    if (fp) fclose(fp);
    CHECK_MSG(n == 24 + padded && !memcmp(got, want, n), "the file differs from the specification's bytes (%zu bytes)", n);
    tensor_free(i);
    tensor_free(f);
    tensor_dict_free(d);
    remove(path);
}

/* A file made by hand from the specification: tensors listed out of order, metadata, an empty
   tensor and a 0-d one, escapes in a name. */
TEST(safetensors_reads_hand_made_files) {
    char path[256];
    files_path(path, sizeof path, "golden.safetensors");
    const char *hdr = "{ \"b\" : {\"shape\": [2, 2], \"dtype\": \"U8\", \"data_offsets\": [8, 12]},\n"
                      "  \"__metadata__\": {\"format\": \"pt\"},\n"
                      "  \"a\\u00e9\\ud83d\\ude00\": {\"dtype\": \"I64\", \"shape\": [], \"data_offsets\": [0, 8]},\n"
                      "  \"e\": {\"dtype\": \"F32\", \"shape\": [3, 0], \"data_offsets\": [12, 12]}}   ";
    CHECK(write_st(path, hdr, 12));
    for (int mode = 0; mode < 2; mode++) {
        tensor_dict *d = tensor_load(path, mode ? TENSOR_LOAD_MMAP : 0);
        CHECK_MSG(d != NULL, "%s", tensor_last_error());
        if (!d) continue;
        CHECK(tensor_dict_len(d) == 3 && !strcmp(tensor_dict_name(d, 0), "b") && !strcmp(tensor_dict_name(d, 1), "a\xc3\xa9\xf0\x9f\x98\x80"));
        tensor *a = tensor_dict_at(d, 1), *b = tensor_dict_get(d, "b"), *e = tensor_dict_get(d, "e");
        CHECK(tensor_ndim(a) == 0 && tensor_item(a) == (double)0x0706050403020100ll);
        CHECK(b && tensor_get_dtype(b) == TENSOR_U8 && tensor_item(tensor_select(tensor_select(b, 0, 1), 0, 1)) == 11);
        CHECK(e && tensor_numel(e) == 0 && tensor_shape(e)[0] == 3);
        CHECK(!strcmp(tensor_dict_metadata(d, "format"), "pt"));
        tensor_dict_free(d);
    }
    /* bool bytes other than 0 and 1 load as true */
    CHECK(write_st(path, "{\"m\":{\"dtype\":\"BOOL\",\"shape\":[4],\"data_offsets\":[0,4]}}", 4));
    unsigned char raw[4] = {0, 1, 2, 0};
    FILE *fp = fopen(path, "r+b");
    if (fp) { fseek(fp, -4, SEEK_END); fwrite(raw, 1, 4, fp); fclose(fp); }
    for (int mode = 0; mode < 2; mode++) {
        tensor_dict *d = tensor_load(path, mode ? TENSOR_LOAD_MMAP : 0);
        CHECK(d && tensor_item(tensor_sum_all(tensor_dict_get(d, "m"))) == 2);
        tensor_dict_free(d);
    }
    /* no tensors at all */
    CHECK(write_st(path, "{}", 0));
    tensor_dict *d = tensor_load(path, 0);
    CHECK(d && tensor_dict_len(d) == 0);
    tensor_dict_free(d);
    remove(path);
}

/* Every rejection rule, each with a file that triggers it, in both modes; the message names the
   problem. */
TEST(safetensors_rejects_malformed_files) {
    char path[256];
    files_path(path, sizeof path, "bad.safetensors");
    static const struct { const char *header; size_t buf; const char *says; } cases[] = {
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}} \xff", 8, "UTF-8"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}} \xc0\xaf", 8, "UTF-8"},   /* overlong */
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}} \xed\xa0\x80", 8, "UTF-8"}, /* a surrogate */
        {"[]", 0, "start with '{'"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},}", 8, "JSON"},          /* trailing comma */
        {"{\"a\" {\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "expected ':'"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}", 8, "JSON"},            /* unclosed */
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}} x", 8, "after the header"},
        {"{\"a\\q\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "escape"},
        {"{\"a\\ud800\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "surrogate"},
        {"{\"a\\u0000\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "NUL"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[02],\"data_offsets\":[0,8]}}", 8, "leading zero"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[-2],\"data_offsets\":[0,8]}}", 8, "non-negative integer"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2.0],\"data_offsets\":[0,8]}}", 8, "fraction"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999],\"data_offsets\":[0,8]}}", 8, "too large"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,16]}}", 16, "appears twice"},
        {"{\"__metadata__\":{},\"__metadata__\":{}}", 0, "duplicate __metadata__"},
        {"{\"__metadata__\":{\"k\":1}}", 0, "expected a string"},
        {"{\"a\":{\"dtype\":\"C64\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "tensor 'a' has dtype 'C64'"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],\"data_offsets\":[0,8]}}", 8, "more elements than fit"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4, "more than 8 dims"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,12]}}", 12, "needs 8 bytes"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[8,0]}}", 8, "reversed"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, "overlapping"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[12,20]}}", 20, "hole"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[4,12]}}", 12, "hole"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 4, "past the end"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 12, "after the last tensor"},
        {"{}", 4, "no tensors"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2]}}", 8, "lacks its data_offsets"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8],\"extra\":1}}", 8, "unknown key"},
        {"{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8, "duplicate key"},
        {"{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8,9]}}", 8, "expected ']'"},
        {"{\"a\":[]}", 0, "expected '{'"},
        {"{\"a\":{}}", 0, "needs dtype"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        CHECK(write_st(path, cases[c].header, cases[c].buf));
        for (int mode = 0; mode < 2; mode++) {
            tensor_clear_error();
            tensor_dict *d = tensor_load(path, mode ? TENSOR_LOAD_MMAP : 0);
            const char *err = tensor_last_error();
            CHECK_MSG(d == NULL && err && strstr(err, "tensor_load") && strstr(err, cases[c].says), "case %zu (%s), mode %d: got %s", c,
                      cases[c].says, mode, err ? err : "no error");
            tensor_dict_free(d);
        }
    }
    /* the length field: larger than the file, larger than 100 MB, too small; short files */
    unsigned char b[16] = {0};
    const uint64_t lens[3] = {100, 200000000ull, 1};
    const char *says[3] = {"larger than the file", "100 MB", "too small"};
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < 8; i++) b[i] = (unsigned char)(lens[k] >> (8 * i));
        b[8] = '{';
        b[9] = '}';
        CHECK(write_bytes(path, b, 16));
        for (int mode = 0; mode < 2; mode++) {
            tensor_clear_error();
            tensor_dict *d = tensor_load(path, mode ? TENSOR_LOAD_MMAP : 0);
            const char *err = tensor_last_error();
            CHECK_MSG(!d && err && strstr(err, says[k]), "length %llu: %s", (unsigned long long)lens[k], err ? err : "no error");
            tensor_dict_free(d);
        }
    }
    for (size_t n = 0; n < 8; n++) {
        CHECK(write_bytes(path, b, n));
        for (int mode = 0; mode < 2; mode++) CHECK_BAD((tensor *)tensor_load(path, mode ? TENSOR_LOAD_MMAP : 0), "tensor_load");
    }
    remove(path);
    CHECK_BAD((tensor *)tensor_load(path, 0), "tensor_load"); /* no such file */
    CHECK_BAD((tensor *)tensor_load("/tmp", TENSOR_LOAD_MMAP), "tensor_load");
    CHECK_BAD((tensor *)tensor_load(NULL, 0), "tensor_load");
    CHECK_BAD((tensor *)tensor_load(path, 4), "tensor_load");
    CHECK_BAD_INT(tensor_save(path, NULL) != 0, "tensor_save");
}

/* Running out of memory anywhere in a save or a load is an error, never a crash or a leak. */
TEST(safetensors_out_of_memory_everywhere) {
    char path[256], path2[256];
    files_path(path, sizeof path, "oom.safetensors");
    files_path(path2, sizeof path2, "oom2.safetensors");
    tensor_dict *d = tensor_dict_new();
    tensor *a = tensor_randn(TENSOR_SHAPE(3, 4), TENSOR_F32), *b = tensor_transpose(a, 0, 1);
    tensor_dict_set(d, "a", a);
    tensor_dict_set(d, "b", b);
    tensor_dict_set_metadata(d, "m", "v");
    CHECK(tensor_save(path, d) == 0);
    int failures = 0;
    for (int64_t k = 1; k < 200; k++) {
        tensor_test_fail_alloc(k);
        int rc = tensor_save(path2, d);
        tensor_dict *r = tensor_load(path, k % 2 ? TENSOR_LOAD_MMAP : 0);
        tensor_test_fail_alloc(0);
        if (rc != 0 || !r) failures++;
        if (r) CHECK(test_same_bits(tensor_dict_get(r, "b"), b));
        tensor_dict_free(r);
        tensor_clear_error();
    }
    CHECK(failures > 10);
    tensor_free(a);
    tensor_free(b);
    tensor_dict_free(d);
    remove(path);
    remove(path2);
}

/* A checkpoint's optimizer state: saved, loaded into a fresh optimizer, the next steps agree. */
static void train_steps(tensor *w, tensor *x, tensor_optim *o, int steps) {
    for (int s = 0; s < steps; s++) {
        tensor_scope_begin();
        tensor *y = tensor_tanh(tensor_matmul(x, w));
        tensor *loss = tensor_mean_all(tensor_square(tensor_sub_scalar(y, 0.25)));
        tensor_optim_zero_grad(o);
        tensor_backward(loss);
        tensor_optim_step(o);
        tensor_scope_end();
    }
}
TEST(checkpoint_optimizer_state_round_trip) {
    char path[256];
    files_path(path, sizeof path, "optim.safetensors");
    for (int kind = 0; kind < 4; kind++) {
        tensor_manual_seed(5);
        tensor *x = tensor_randn(TENSOR_SHAPE(8, 5), TENSOR_F32);
        tensor *w = tensor_set_requires_grad(tensor_randn(TENSOR_SHAPE(5, 3), TENSOR_F32), true);
        tensor *w2 = tensor_set_requires_grad(tensor_zeros(TENSOR_SHAPE(5, 3), TENSOR_F32), true); /* the checkpoint's values replace these */
        tensor_optim *o = kind == 0 ? tensor_optim_sgd(1, &w, 0.1, 0.9, 0.01, true) : kind == 1 ? tensor_optim_sgd(1, &w, 0.1, 0, 0, false)
                        : kind == 2 ? tensor_optim_adam(1, &w, 0.01, 0.8, 0.95, 1e-6, 0.1) : tensor_optim_adamw(1, &w, 0.01, 0.9, 0.99, 1e-8, 0.05);
        tensor_optim *o2 = kind < 2 ? tensor_optim_sgd(1, &w2, 0.5, kind == 0 ? 0.5 : 0, 0, false) : kind == 2 ? tensor_optim_adam(1, &w2, 0.5, 0.5, 0.5, 1, 0)
                                    : tensor_optim_adamw(1, &w2, 0.5, 0.5, 0.5, 1, 0);
        train_steps(w, x, o, 3);
        tensor_optim_set_lr(o, 0.03); /* a schedule's change survives too */
        tensor_dict *d = tensor_dict_new();
        CHECK(tensor_dict_set(d, "w", w) == 0);
        CHECK(tensor_optim_state_save(o, d, "optim") == 0);
        CHECK(tensor_save(path, d) == 0);
        tensor_dict_free(d);
        d = tensor_load(path, TENSOR_LOAD_MMAP);
        CHECK(d != NULL);
        tensor *src = tensor_dict_get(d, "w");
        if (src) tensor_copy_to(src, tensor_data_ptr(w2), (size_t)tensor_numel(w2) * 4);
        CHECK_MSG(tensor_optim_state_load(o2, d, "optim") == 0, "kind %d: %s", kind, tensor_last_error());
        tensor_dict_free(d);
        train_steps(w, x, o, 4);
        train_steps(w2, x, o2, 4);
        CHECK_MSG(test_same_bits(w, w2), "kind %d: resumed parameters differ", kind);
        tensor_optim_free(o);
        tensor_optim_free(o2);
        tensor_free(x);
        tensor_free(w);
        tensor_free(w2);
    }
    remove(path);
    tensor_clear_error();
}

TEST(checkpoint_optimizer_state_mismatches) {
    tensor *w = tensor_set_requires_grad(tensor_zeros(TENSOR_SHAPE(3), TENSOR_F32), true);
    tensor *v = tensor_set_requires_grad(tensor_zeros(TENSOR_SHAPE(4), TENSOR_F32), true);
    tensor *wv[2] = {w, v};
    tensor_optim *adam = tensor_optim_adam(1, &w, 0.1, 0.9, 0.999, 1e-8, 0), *sgd = tensor_optim_sgd(1, &w, 0.1, 0.9, 0, false);
    tensor_optim *two = tensor_optim_adam(2, wv, 0.1, 0.9, 0.999, 1e-8, 0), *other = tensor_optim_adam(1, &v, 0.1, 0.9, 0.999, 1e-8, 0);
    tensor *loss = tensor_sum_all(tensor_square(tensor_add_scalar(w, 1)));
    tensor_backward(loss);
    tensor_optim_step(adam);
    tensor_dict *d = tensor_dict_new();
    CHECK(tensor_optim_state_save(adam, d, "opt") == 0);
    CHECK_BAD_INT(tensor_optim_state_load(sgd, d, "opt") != 0, "tensor_optim_state_load");   /* kind */
    CHECK_BAD_INT(tensor_optim_state_load(two, d, "opt") != 0, "tensor_optim_state_load");   /* count */
    CHECK_BAD_INT(tensor_optim_state_load(other, d, "opt") != 0, "tensor_optim_state_load"); /* shape */
    CHECK_BAD_INT(tensor_optim_state_load(adam, d, "nothing") != 0, "tensor_optim_state_load");
    CHECK_BAD_INT(tensor_optim_state_save(NULL, d, "opt") != 0, "tensor_optim_state_save");
    CHECK(tensor_optim_state_load(adam, d, "opt") == 0);
    tensor_dict_free(d);
    tensor_free(loss);
    tensor_optim_free(adam); tensor_optim_free(sgd); tensor_optim_free(two); tensor_optim_free(other);
    tensor_free(w);
    tensor_free(v);
}

TEST(checkpoint_rng_state_round_trip) {
    tensor_manual_seed(123);
    tensor *skip = tensor_rand(TENSOR_SHAPE(3), TENSOR_F32); /* mid-block: the block and its use are saved */
    tensor_dict *d = tensor_dict_new();
    CHECK(tensor_rng_state_save(d, "rng") == 0);
    tensor *a = tensor_randn(TENSOR_SHAPE(17), TENSOR_F64), *ai = tensor_randint(0, 1000, TENSOR_SHAPE(5), TENSOR_I64);
    tensor_manual_seed(999);
    CHECK(tensor_rng_state_load(d, "rng") == 0);
    tensor *b = tensor_randn(TENSOR_SHAPE(17), TENSOR_F64), *bi = tensor_randint(0, 1000, TENSOR_SHAPE(5), TENSOR_I64);
    CHECK(test_same_bits(a, b) && test_same_bits(ai, bi));
    CHECK_BAD_INT(tensor_rng_state_load(d, "missing") != 0, "tensor_rng_state_load");
    tensor *bad = tensor_full(TENSOR_SHAPE(8), -1, TENSOR_I64);
    tensor_dict_set(d, "bad", bad);
    CHECK_BAD_INT(tensor_rng_state_load(d, "bad") != 0, "tensor_rng_state_load");
    tensor_dict_free(d);
    tensor_free(skip); tensor_free(a); tensor_free(ai); tensor_free(b); tensor_free(bi); tensor_free(bad);
}

/* The calling thread's generator state as checkpoint_rng saves it (8 int64 words). */
static void rng_words(int64_t v[8]) {
    tensor_dict *d = tensor_dict_new();
    memset(v, 0, 8 * sizeof *v);
    CHECK(tensor_rng_state_save(d, "rng") == 0);
    tensor *t = tensor_dict_get(d, "rng");
    CHECK(t && tensor_copy_to(t, v, 8 * sizeof *v) == 0);
    tensor_dict_free(d);
}
static void rng_draw(int64_t n) { tensor_free(tensor_rand(1, &n, TENSOR_F32)); } /* n words */

/* Same state, same bytes (issue 24): a file written right after tensor_manual_seed held the words
   of the block that earlier draws left behind, and a state with no block in use saved whichever
   block was last computed. */
TEST(checkpoint_rng_state_is_a_function_of_the_state) {
    int64_t a[8], b[8];
    tensor_manual_seed(5);
    rng_draw(5);
    tensor_manual_seed(7);
    rng_words(a);
    tensor_manual_seed(9);
    rng_draw(2);
    tensor_manual_seed(7);
    rng_words(b);
    CHECK_MSG(!memcmp(a, b, sizeof a), "after tensor_manual_seed(7): block words %llx %llx vs %llx %llx", (long long)a[4], (long long)a[5], (long long)b[4], (long long)b[5]);
    /* counter 1 with no word of a block in use, reached by 4 words at once or by 3 and then 1 */
    tensor_manual_seed(7);
    rng_draw(4);
    rng_words(a);
    tensor *x = tensor_rand(TENSOR_SHAPE(6), TENSOR_F64);
    tensor_manual_seed(7);
    rng_draw(3);
    rng_draw(1);
    rng_words(b);
    tensor *y = tensor_rand(TENSOR_SHAPE(6), TENSOR_F64);
    CHECK_MSG(!memcmp(a, b, sizeof a), "counter %lld, used %lld: block words %llx vs %llx", (long long)a[1], (long long)a[3], (long long)a[4], (long long)b[4]);
    CHECK(test_same_bits(x, y));
    tensor_free(x);
    tensor_free(y);
}

/* The bytes of a file at path (malloc'd, *n its length), or NULL. */
static unsigned char *read_all(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    unsigned char *b = NULL;
    *n = 0;
    if (f && fseek(f, 0, SEEK_END) == 0) {
        long len = ftell(f);
        b = len >= 0 ? (unsigned char *)malloc((size_t)len + 1) : NULL;
        if (b && (fseek(f, 0, SEEK_SET) != 0 || fread(b, 1, (size_t)len, f) != (size_t)len)) { free(b); b = NULL; }
        if (b) *n = (size_t)len;
    }
    if (f) fclose(f);
    return b;
}
/* Heap memory of many sizes filled with `byte` and freed, so that memory a writer takes next and
   does not set holds it. */
static void dirty_heap(unsigned char byte) {
    void *p[64];
    for (int i = 0; i < 64; i++) {
        size_t n = (size_t)16 << (i % 16);
        p[i] = malloc(n);
        if (p[i]) memset(p[i], byte, n);
    }
    for (int i = 0; i < 64; i++) free(p[i]);
}
/* A checkpoint (parameters, metadata, optimizer, generator), a .npy and an .npz of the same state
   written twice, after filling freed memory and the generator's block with different garbage:
   the same bytes each time (every byte written was set from the state). */
TEST(files_are_a_function_of_the_state) {
    char paths[3][256];
    files_path(paths[0], sizeof paths[0], "same.safetensors");
    files_path(paths[1], sizeof paths[1], "same.npy");
    files_path(paths[2], sizeof paths[2], "same.npz");
    unsigned char *first[3] = {NULL, NULL, NULL};
    size_t first_n[3] = {0, 0, 0};
    for (int round = 0; round < 2; round++) {
        tensor_manual_seed(round ? 1 : 2);
        rng_draw(round ? 3 : 6);
        tensor_clear_error();
        tensor_scope_begin();
        dirty_heap(round ? 0xA5 : 0x5A);
        tensor_manual_seed(31);
        tensor *w = tensor_set_requires_grad(tensor_randn(TENSOR_SHAPE(3, 5), TENSOR_F32), true);
        tensor *v = tensor_transpose(tensor_arange(0, 6, 1, TENSOR_F64), 0, 0);
        tensor_optim *o = tensor_optim_adamw(1, &w, 1e-2, 0.9, 0.999, 1e-8, 0.1);
        CHECK(tensor_backward(tensor_sum_all(tensor_square(w))) == 0 && tensor_optim_step(o) == 0);
        tensor_dict *d = tensor_dict_new();
        CHECK(tensor_dict_set(d, "w", w) == 0 && tensor_dict_set(d, "v", v) == 0 && tensor_dict_set_metadata(d, "note", "x") == 0);
        CHECK(tensor_optim_state_save(o, d, "optim") == 0 && tensor_rng_state_save(d, "rng") == 0);
        dirty_heap(round ? 0xFF : 0x11);
        CHECK(tensor_save(paths[0], d) == 0);
        CHECK(tensor_save_npy(paths[1], v) == 0);
        CHECK(tensor_save_npz(paths[2], d) == 0);
        for (int k = 0; k < 3; k++) {
            size_t n;
            unsigned char *b = read_all(paths[k], &n);
            CHECK(b != NULL && n > 0);
            if (!round) { first[k] = b; first_n[k] = n; continue; }
            size_t at = 0;
            while (b && first[k] && at < n && at < first_n[k] && b[at] == first[k][at]) at++;
            CHECK_MSG(b && n == first_n[k] && at == n, "%s: the second save differs at byte %zu of %zu", paths[k], at, n);
            free(b);
        }
        tensor_dict_free(d);
        tensor_optim_free(o);
        tensor_scope_end();
    }
    for (int k = 0; k < 3; k++) { free(first[k]); remove(paths[k]); }
}

/* Mappings of path in this process (Linux: /proc/self/maps), or -1. */
static int mappings_of(const char *path) {
    FILE *f = fopen("/proc/self/maps", "r");
    if (!f) return -1;
    char line[1024];
    int n = 0;
    size_t len = strlen(path);
    while (fgets(line, sizeof line, f)) {
        char *p = strstr(line, path);
        if (p && (p[len] == '\n' || p[len] == 0 || p[len] == ' ')) n++;
    }
    fclose(f);
    return n;
}
typedef struct { const char *path; tensor_dict *d; tensor *view; } mmap_thread_arg;
static void *mmap_load_thread(void *p) {
    mmap_thread_arg *a = (mmap_thread_arg *)p;
    a->d = tensor_load(a->path, TENSOR_LOAD_MMAP);
    a->view = a->d ? tensor_slice(tensor_dict_get(a->d, "w"), 0, 1, 3, 1) : NULL;
    return NULL;
}
/* A mapped file is unmapped when its last tensor goes, whichever thread made it and whether or not
   that thread still runs (issue 24: loaded on a thread that then ended and freed on another, the
   mapping stayed for good); and tensor_shutdown unmaps what is left. */
TEST(safetensors_mapping_released_across_threads) {
    if (mappings_of("/") < 0) { test_skip("no /proc/self/maps"); return; }
    char path[256];
    files_path(path, sizeof path, "threads.safetensors");
    tensor *w = tensor_randn(TENSOR_SHAPE(64, 64), TENSOR_F32);
    const char *names[1] = {"w"};
    CHECK(tensor_save_safetensors(path, 1, names, &w) == 0);
    for (int how = 0; how < 2; how++) {
        mmap_thread_arg a = {path, NULL, NULL};
        pthread_t th;
        CHECK(pthread_create(&th, NULL, mmap_load_thread, &a) == 0);
        pthread_join(th, NULL);
        CHECK(a.d && a.view && mappings_of(path) == 1);
        tensor *keep = NULL;
        if (how == 1) keep = tensor_reshape(a.view, TENSOR_SHAPE(128)); /* a view of this thread's, freed last */
        tensor_dict_free(a.d);
        tensor_free(a.view);
        if (how == 1) {
            CHECK(mappings_of(path) == 1 && tensor_item(tensor_sum_all(keep)) != 0);
            tensor_free(keep);
        }
        CHECK_MSG(mappings_of(path) == 0, "case %d: %d mappings of the file are left after its tensors were freed", how, mappings_of(path));
    }
    tensor_free(w);
    remove(path);
}

/* tensor_shutdown unmaps a file whose tensors nobody freed, loaded on a thread that ended. In a
   child run of this binary (tensor_shutdown frees the harness's tensors too); the dict struct
   leaks by design (freeing it after tensor_shutdown would free its handles twice). */
TEST(safetensors_mapping_released_by_shutdown_child) {
    const char *path = getenv("TENSOR_TEST_MAP_SHUTDOWN");
    if (!path) return; /* runs only in safetensors_mapping_released_by_shutdown's child */
    mmap_thread_arg a = {path, NULL, NULL};
    pthread_t th;
    CHECK(pthread_create(&th, NULL, mmap_load_thread, &a) == 0);
    pthread_join(th, NULL);
    CHECK(a.d && mappings_of(path) == 1);
    tensor_shutdown();
    CHECK_MSG(mappings_of(path) == 0, "%d mappings of the file are left after tensor_shutdown", mappings_of(path));
    tensor_scope_begin(); /* for the harness's scope end */
}
TEST(safetensors_mapping_released_by_shutdown) {
#if defined(__linux__)
    char path[256], env[400];
    files_path(path, sizeof path, "shutdown.safetensors");
    tensor *w = tensor_randn(TENSOR_SHAPE(64, 64), TENSOR_F32);
    const char *names[1] = {"w"};
    CHECK(tensor_save_safetensors(path, 1, names, &w) == 0);
    snprintf(env, sizeof env, "TENSOR_TEST_MAP_SHUTDOWN='%s' ASAN_OPTIONS=detect_leaks=0 ", path);
    test_run_at_simd_level(__FILE__, __LINE__, "scalar", env, "safetensors_mapping_released_by_shutdown_child", NULL);
    tensor_free(w);
    remove(path);
#endif
}

/* The resume test of issue 12: a small MLP with dropout (the generator matters) and AdamW trains N
   steps and saves a checkpoint (parameters, optimizer, generator), then trains M more. A fresh
   process (this binary again, on this test only) loads the checkpoint and trains M steps: its
   parameters must equal the first run's bit for bit. */
#define RESUME_N 5
#define RESUME_M 6
static void resume_model(tensor **w1, tensor **w2) {
    tensor_manual_seed(2024);
    *w1 = tensor_set_requires_grad(tensor_mul_scalar(tensor_randn(TENSOR_SHAPE(16, 32), TENSOR_F32), 0.3), true);
    *w2 = tensor_set_requires_grad(tensor_mul_scalar(tensor_randn(TENSOR_SHAPE(32, 4), TENSOR_F32), 0.3), true);
}
static void resume_train(tensor *w1, tensor *w2, tensor_optim *o, int steps) {
    for (int s = 0; s < steps; s++) {
        tensor_scope_begin();
        tensor *x = tensor_randn(TENSOR_SHAPE(8, 16), TENSOR_F32); /* a batch drawn from the generator */
        tensor *h = tensor_dropout(tensor_relu(tensor_matmul(x, w1)), 0.3, true);
        tensor *loss = tensor_mean_all(tensor_square(tensor_matmul(h, w2)));
        tensor_optim_zero_grad(o);
        tensor_backward(loss);
        tensor_optim_step(o);
        tensor_scope_end();
    }
}
TEST(checkpoint_resume_is_bitwise_in_a_fresh_process) {
    const char *dir = getenv("TENSOR_TEST_RESUME");
    char ckpt[300], final[300];
    if (dir) { /* the child: resume from the checkpoint, compare with the parent's final parameters */
        snprintf(ckpt, sizeof ckpt, "%s.ckpt", dir);
        snprintf(final, sizeof final, "%s.final", dir);
        tensor *w1, *w2;
        resume_model(&w1, &w2); /* other values: the checkpoint replaces them */
        tensor *ws[2] = {w1, w2};
        tensor_optim *o = tensor_optim_adamw(2, ws, 1e-3, 0.9, 0.999, 1e-8, 0.5);
        tensor_manual_seed(1); /* a different generator state: the checkpoint replaces it */
        tensor_dict *d = tensor_load(ckpt, TENSOR_LOAD_MMAP);
        CHECK(d != NULL);
        if (d) {
            tensor_copy_to(tensor_dict_get(d, "w1"), tensor_data_ptr(w1), 16 * 32 * 4);
            tensor_copy_to(tensor_dict_get(d, "w2"), tensor_data_ptr(w2), 32 * 4 * 4);
            CHECK(tensor_optim_state_load(o, d, "optim") == 0);
            CHECK(tensor_rng_state_load(d, "rng") == 0);
        }
        tensor_dict_free(d);
        resume_train(w1, w2, o, RESUME_M);
        tensor_dict *f = tensor_load(final, 0);
        CHECK(f && test_same_bits(tensor_dict_get(f, "w1"), w1) && test_same_bits(tensor_dict_get(f, "w2"), w2));
        if (f && test_same_bits(tensor_dict_get(f, "w1"), w1) && test_same_bits(tensor_dict_get(f, "w2"), w2)) printf("  resume: bitwise equal\n");
        tensor_dict_free(f);
        tensor_optim_free(o);
        tensor_free(w1);
        tensor_free(w2);
        return;
    }
    char base[256];
    files_path(base, sizeof base, "resume");
    snprintf(ckpt, sizeof ckpt, "%s.ckpt", base);
    snprintf(final, sizeof final, "%s.final", base);
    tensor *w1, *w2;
    resume_model(&w1, &w2);
    tensor *ws[2] = {w1, w2};
    tensor_optim *o = tensor_optim_adamw(2, ws, 1e-3, 0.9, 0.999, 1e-8, 0.5);
    resume_train(w1, w2, o, RESUME_N);
    tensor_dict *d = tensor_dict_new();
    CHECK(tensor_dict_set(d, "w1", w1) == 0 && tensor_dict_set(d, "w2", w2) == 0);
    CHECK(tensor_optim_state_save(o, d, "optim") == 0 && tensor_rng_state_save(d, "rng") == 0);
    CHECK(tensor_save(ckpt, d) == 0);
    tensor_dict_free(d);
    resume_train(w1, w2, o, RESUME_M);
    d = tensor_dict_new();
    CHECK(tensor_dict_set(d, "w1", w1) == 0 && tensor_dict_set(d, "w2", w2) == 0 && tensor_save(final, d) == 0);
    tensor_dict_free(d);
    /* the fresh process */
    char self[1024], cmd[1600], line[512], last[512] = "";
    ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    CHECK(len > 0);
    if (len > 0) {
        self[len] = 0;
        const char *runner = getenv("TENSOR_TEST_RUNNER");
        snprintf(cmd, sizeof cmd, "TENSOR_TEST_RESUME='%s' %s '%s' checkpoint_resume_is_bitwise 2>&1", base, runner ? runner : "", self);
        fflush(stdout);
        FILE *p = popen(cmd, "r");
        bool equal = false;
        while (p && fgets(line, sizeof line, p)) {
            if (strstr(line, "FAIL")) printf("  [resumed] %s", line);
            if (strstr(line, "resume: bitwise equal")) equal = true;
            snprintf(last, sizeof last, "%s", line);
        }
        int status = p ? pclose(p) : -1;
        CHECK_MSG(equal && status == 0 && !strcmp(last, "1 passed, 0 failed\n"), "the resumed process: %s (status %d)", last, status);
    }
    tensor_optim_free(o);
    tensor_free(w1);
    tensor_free(w2);
    remove(ckpt);
    remove(final);
}

/* A Python interpreter with NumPy (TENSOR_TEST_PYTHON, else /usr/bin/python3, else python3), or NULL. */
static const char *files_python(void) {
    static char found[512];
    const char *env = getenv("TENSOR_TEST_PYTHON");
    const char *candidates[3] = {env, "/usr/bin/python3", "python3"};
    for (int i = 0; i < 3; i++) {
        if (!candidates[i]) continue;
        char cmd[700];
        snprintf(cmd, sizeof cmd, "%s -c 'import numpy' > /dev/null 2>&1", candidates[i]);
        if (system(cmd) == 0) { snprintf(found, sizeof found, "%s", candidates[i]); return found; }
    }
    return NULL;
}
static int run_py(const char *py, const char *script, const char *cmd, const char *path) {
    char line[1500];
    snprintf(line, sizeof line, "%s tests/interop/%s %s '%s' 2>&1", py, script, cmd, path);
    fflush(stdout);
    int rc = system(line);
    return rc;
}

/* The ten tensors of tests/interop/safetensors_spec.py's expected(), made here. */
static tensor_dict *spec_expected(void) {
    tensor_dict *d = tensor_dict_new();
    double f[12];
    int64_t i64[12];
    int32_t i32[12];
    uint8_t u8[12], b[12];
    for (int i = 0; i < 12; i++) {
        f[i] = (i - 5) * 0.25;
        i64[i] = (int64_t)i * ((int64_t)1 << 40) - 3;
        i32[i] = i * 7 - 20;
        u8[i] = (uint8_t)(i * 37 % 256);
        b[i] = i % 3 == 0;
    }
    const tensor_dtype fl[4] = {TENSOR_F64, TENSOR_F32, TENSOR_F16, TENSOR_BF16};
    const char *fname[4] = {"F64", "F32", "F16", "BF16"};
    tensor *t64 = tensor_from_data(f, TENSOR_SHAPE(3, 4), TENSOR_F64);
    for (int k = 0; k < 4; k++) {
        tensor *t = tensor_to_dtype(t64, fl[k]);
        tensor_dict_set(d, fname[k], t);
        tensor_free(t);
    }
    tensor *ts[6] = {tensor_from_data(i64, TENSOR_SHAPE(3, 4), TENSOR_I64), tensor_from_data(i32, TENSOR_SHAPE(3, 4), TENSOR_I32),
                     tensor_from_data(u8, TENSOR_SHAPE(3, 4), TENSOR_U8), tensor_from_data(b, TENSOR_SHAPE(3, 4), TENSOR_BOOL),
                     tensor_scalar(-1.5, TENSOR_F32), tensor_zeros(TENSOR_SHAPE(0, 2), TENSOR_I32)};
    const char *names[6] = {"I64", "I32", "U8", "BOOL", "scalar", "empty"};
    for (int k = 0; k < 6; k++) { tensor_dict_set(d, names[k], ts[k]); tensor_free(ts[k]); }
    tensor_free(t64);
    tensor_dict_set_metadata(d, "format", "pt");
    tensor_dict_set_metadata(d, "written by", "safetensors_spec.py");
    return d;
}

/* Files written by a reader/writer made from the specification (Python, standard library and
   NumPy) load exactly, and tensor.h's files pass its strict check. */
TEST(safetensors_agrees_with_a_reader_written_from_the_specification) {
    const char *py = files_python();
    if (!py) { test_skip("no Python with NumPy (apt-get install python3-numpy)"); return; }
    char path[256];
    files_path(path, sizeof path, "spec.safetensors");
    tensor_dict *want = spec_expected();
    CHECK(run_py(py, "safetensors_spec.py", "make", path) == 0);
    for (int mode = 0; mode < 2; mode++) {
        tensor_dict *got = tensor_load(path, mode ? TENSOR_LOAD_MMAP : 0);
        CHECK_MSG(got != NULL, "%s", tensor_last_error());
        if (!got) continue;
        CHECK(tensor_dict_len(got) == tensor_dict_len(want));
        for (int i = 0; i < tensor_dict_len(want) && i < tensor_dict_len(got); i++) {
            CHECK(!strcmp(tensor_dict_name(got, i), tensor_dict_name(want, i)));
            tensor *a = tensor_dict_at(got, i), *b = tensor_dict_at(want, i);
            CHECK_MSG(tensor_get_dtype(a) == tensor_get_dtype(b) && tensor_ndim(a) == tensor_ndim(b) && test_same_bits(a, b), "%s", tensor_dict_name(want, i));
        }
        CHECK(tensor_dict_metadata(got, "written by") && !strcmp(tensor_dict_metadata(got, "written by"), "safetensors_spec.py"));
        tensor_dict_free(got);
    }
    remove(path);
    CHECK(tensor_save(path, want) == 0);
    CHECK_MSG(run_py(py, "safetensors_spec.py", "check", path) == 0, "the specification's reader rejects tensor.h's file");
    tensor_dict_free(want);
    remove(path);
}

/* The message of the last error contains every one of the strings (NULL-terminated). */
static void check_error_has(const char *file, int line, const char *what, ...) {
    const char *e = tensor_last_error();
    va_list ap;
    va_start(ap, what);
    for (const char *s = va_arg(ap, const char *); s; s = va_arg(ap, const char *))
        if (!e || !strstr(e, s)) { test_fail(file, line, "%s: the message lacks \"%s\": %s", what, s, e ? e : "no error"); break; }
    va_end(ap);
}
#define CHECK_ERROR_HAS(what, ...) check_error_has(__FILE__, __LINE__, what, __VA_ARGS__, (const char *)NULL)

/* A file that cannot be opened: the message names the caller's path (never the writer's PATH.tmp)
   and the system's reason (issue 24). */
TEST(files_open_failures_name_the_path_and_the_reason) {
    const char *nowhere = "/nonexistent-dir/x.bin";
    const char *enoent = strerror(ENOENT);
    tensor *t = tensor_ones(TENSOR_SHAPE(2), TENSOR_F32);
    tensor_dict *d = tensor_dict_new();
    const char *names[1] = {"t"};
    CHECK(tensor_dict_set(d, "t", t) == 0);
    for (int k = 0; k < 4; k++) {
        tensor_clear_error();
        int rc = k == 0 ? tensor_save(nowhere, d) : k == 1 ? tensor_save_npy(nowhere, t) : k == 2 ? tensor_save_npz(nowhere, d) : tensor_save_safetensors(nowhere, 1, names, &t);
        CHECK(rc != 0);
        CHECK_ERROR_HAS("save", "'/nonexistent-dir/x.bin'", enoent);
        CHECK_MSG(tensor_last_error() && !strstr(tensor_last_error(), ".tmp"), "save %d: %s", k, tensor_last_error());
    }
    for (int k = 0; k < 4; k++) {
        tensor_clear_error();
        void *r = k == 0 ? (void *)tensor_load(nowhere, 0) : k == 1 ? (void *)tensor_load(nowhere, TENSOR_LOAD_MMAP) : k == 2 ? (void *)tensor_load_npy(nowhere) : (void *)tensor_load_npz(nowhere);
        CHECK(r == NULL);
        CHECK_ERROR_HAS("load", "'/nonexistent-dir/x.bin'", enoent);
    }
    /* a directory is not a file */
    for (int k = 0; k < 3; k++) {
        tensor_clear_error();
        void *r = k == 0 ? (void *)tensor_load("/tmp", 0) : k == 1 ? (void *)tensor_load_npy("/tmp") : (void *)tensor_load_npz("/tmp");
        CHECK(r == NULL);
        CHECK_ERROR_HAS("load of a directory", "'/tmp'", "not a regular file");
    }
    tensor_clear_error();
    tensor_dict_free(d);
    tensor_free(t);
}

/* A file given to another format's loader says which loader reads it (issue 24: tensor_load on an
   .npz said its header length exceeded 100 MB). */
TEST(files_loaders_name_the_loader_of_another_format) {
    char st[256], npy[256], npz[256];
    files_path(st, sizeof st, "kind.safetensors");
    files_path(npy, sizeof npy, "kind.npy");
    files_path(npz, sizeof npz, "kind.npz");
    tensor *t = tensor_ones(TENSOR_SHAPE(2, 2), TENSOR_F32);
    tensor_dict *d = tensor_dict_new(), *empty = tensor_dict_new();
    CHECK(tensor_dict_set(d, "t", t) == 0);
    CHECK(tensor_save(st, d) == 0 && tensor_save_npy(npy, t) == 0 && tensor_save_npz(npz, d) == 0);
    for (int mode = 0; mode < 2; mode++) {
        tensor_clear_error();
        CHECK(!tensor_load(npz, mode ? TENSOR_LOAD_MMAP : 0));
        CHECK_ERROR_HAS("tensor_load of an .npz", "tensor_load:", "looks like an .npz", "tensor_load_npz");
        tensor_clear_error();
        CHECK(!tensor_load(npy, mode ? TENSOR_LOAD_MMAP : 0));
        CHECK_ERROR_HAS("tensor_load of an .npy", "tensor_load:", "looks like an .npy", "tensor_load_npy");
    }
    CHECK(tensor_save_npz(npz, empty) == 0); /* an empty zip starts with its end record */
    tensor_clear_error();
    CHECK(!tensor_load(npz, 0));
    CHECK_ERROR_HAS("tensor_load of an empty .npz", "looks like an .npz", "tensor_load_npz");
    tensor_clear_error();
    CHECK(!tensor_load_npy(npz));
    CHECK_ERROR_HAS("tensor_load_npy of an .npz", "tensor_load_npy:", "looks like an .npz", "tensor_load_npz");
    tensor_clear_error();
    CHECK(!tensor_load_npy(st));
    CHECK_ERROR_HAS("tensor_load_npy of a safetensors file", "tensor_load_npy:", "looks like a safetensors file", "tensor_load(");
    tensor_clear_error();
    CHECK(!tensor_load_npz(st));
    CHECK_ERROR_HAS("tensor_load_npz of a safetensors file", "tensor_load_npz:", "looks like a safetensors file", "tensor_load(");
    tensor_clear_error();
    CHECK(!tensor_load_npz(npy));
    CHECK_ERROR_HAS("tensor_load_npz of an .npy", "tensor_load_npz:", "looks like an .npy", "tensor_load_npy");
    tensor_clear_error();
    tensor_dict_free(d);
    tensor_dict_free(empty);
    tensor_free(t);
    remove(st);
    remove(npy);
    remove(npz);
}

/* Hugging Face's loaders refuse a safetensors file whose metadata has no "format" (transformers:
   "does not contain the valid metadata"): a dict without one is written with "format": "pt", as
   torch's save_file via save_pretrained writes it; a dict's own format is kept. */
TEST(safetensors_writes_format_pt_unless_the_dict_has_one) {
    char path[256];
    files_path(path, sizeof path, "format.safetensors");
    tensor *t = tensor_ones(TENSOR_SHAPE(2), TENSOR_F32);
    for (int k = 0; k < 3; k++) {
        tensor_dict *d = tensor_dict_new();
        CHECK(tensor_dict_set(d, "t", t) == 0);
        if (k == 1) CHECK(tensor_dict_set_metadata(d, "note", "n") == 0);
        if (k == 2) CHECK(tensor_dict_set_metadata(d, "format", "np") == 0);
        CHECK(tensor_save(path, d) == 0);
        tensor_dict *r = tensor_load(path, 0);
        const char *f = tensor_dict_metadata(r, "format");
        CHECK_MSG(f && !strcmp(f, k == 2 ? "np" : "pt"), "case %d: format %s", k, f ? f : "absent");
        CHECK(tensor_dict_metadata_len(r) == (k == 1 ? 2 : 1));
        CHECK(tensor_dict_metadata(d, "format") == NULL || k == 2); /* the dict itself is not changed */
        tensor_dict_free(r);
        tensor_dict_free(d);
    }
    tensor_free(t);
    remove(path);
}

/* ---- tensor_state_dict / tensor_load_state_dict ---- */
static const char *const sd_names[3] = {"fc1.weight", "fc1.bias", "bn.num_batches_tracked"};
/* A small model's parameters: w [4, 3] and b [4] that require grad, and an int64 buffer [1],
   filled with value + their element index. */
static void sd_params(tensor *p[3], double value) {
    tensor *w = tensor_add_scalar(tensor_arange(0, 12, 1, TENSOR_F32), value), *b = tensor_add_scalar(tensor_arange(0, 4, 1, TENSOR_F32), value);
    p[0] = tensor_set_requires_grad(tensor_contiguous(tensor_reshape(w, TENSOR_SHAPE(4, 3))), true);
    p[1] = tensor_set_requires_grad(tensor_clone(b), true);
    p[2] = tensor_full(TENSOR_SHAPE(1), value, TENSOR_I64);
    tensor_free(w);
    tensor_free(b);
}
/* Whether p holds value + element index everywhere. */
static bool sd_holds(tensor *const p[3], double value) {
    bool ok = true;
    for (int i = 0; i < 3 && ok; i++) {
        tensor *d = tensor_to_dtype(p[i], TENSOR_F64);
        double v[12];
        ok = d && tensor_copy_to(d, v, sizeof(double) * (size_t)tensor_numel(p[i])) == 0;
        for (int64_t k = 0; ok && k < tensor_numel(p[i]); k++) ok = v[k] == value + (i == 2 ? 0 : (double)k);
        tensor_free(d);
    }
    return ok;
}
static void sd_free(tensor *p[3]) { for (int i = 0; i < 3; i++) tensor_free(p[i]); }

/* Saved by name, loaded into another model of the same shapes: values, dtypes converted, the
   parameters still leaves that require grad, grad mode as it was. */
TEST(state_dict_round_trip) {
    char path[256];
    files_path(path, sizeof path, "state.safetensors");
    tensor *a[3], *b[3];
    sd_params(a, 7);
    sd_params(b, 0);
    tensor_dict *sd = tensor_state_dict(3, sd_names, a);
    CHECK(sd && tensor_dict_len(sd) == 3);
    for (int i = 0; sd && i < 3; i++) {
        tensor *t = tensor_dict_at(sd, i);
        CHECK(!strcmp(tensor_dict_name(sd, i), sd_names[i]));
        CHECK_MSG(tensor_data_ptr(t) == tensor_data_ptr(a[i]) && !tensor_requires_grad(t), "%s: not a detached view of the parameter", sd_names[i]);
    }
    CHECK(tensor_save(path, sd) == 0);
    tensor_dict_free(sd);
    tensor_dict *d = tensor_load(path, TENSOR_LOAD_MMAP);
    CHECK(d && tensor_load_state_dict(d, 3, sd_names, b, true) == 0);
    CHECK(sd_holds(b, 7));
    CHECK(tensor_requires_grad(b[0]) && tensor_requires_grad(b[1]));
    CHECK(tensor_set_grad_enabled(true) == true);
    /* under no-grad it stays so */
    tensor_set_grad_enabled(false);
    CHECK(tensor_load_state_dict(d, 3, sd_names, b, true) == 0);
    CHECK(tensor_set_grad_enabled(true) == false);
    tensor_dict_free(d);
    /* another dtype is converted (as torch's copy_): f64 and bf16 into f32, f32 into int64 */
    tensor *c[3];
    sd_params(c, 3);
    tensor *conv[3] = {tensor_to_dtype(c[0], TENSOR_F64), tensor_to_dtype(c[1], TENSOR_BF16), tensor_to_dtype(c[2], TENSOR_F32)};
    d = tensor_state_dict(3, sd_names, conv);
    CHECK(tensor_load_state_dict(d, 3, sd_names, b, true) == 0 && sd_holds(b, 3));
    CHECK(tensor_get_dtype(b[0]) == TENSOR_F32 && tensor_get_dtype(b[2]) == TENSOR_I64);
    tensor_dict_free(d);
    sd_free(conv);
    sd_free(c);
    sd_free(a);
    sd_free(b);
    remove(path);
}

/* Every problem in one message, and nothing copied when there is one (issue 24: tensor_copy_, the
   README's recipe, broadcast a [3] checkpoint tensor into a [4, 3] parameter without a word). */
TEST(state_dict_load_checks_everything_first) {
    tensor *p[3], *q[3];
    sd_params(p, 1);
    sd_params(q, 5);
    tensor *small = tensor_zeros(TENSOR_SHAPE(3), TENSOR_F32), *extra = tensor_ones(TENSOR_SHAPE(2), TENSOR_F32);
    tensor_dict *d = tensor_state_dict(3, sd_names, q);
    CHECK(tensor_dict_set(d, "fc1.weight", small) == 0);
    tensor_clear_error();
    CHECK(tensor_load_state_dict(d, 3, sd_names, p, true) != 0);
    CHECK_MSG(tensor_last_error() && !strcmp(tensor_last_error(), "tensor_load_state_dict: 1 problem: size mismatch for fc1.weight: checkpoint [3], parameter [4, 3]"),
              "%s", tensor_last_error() ? tensor_last_error() : "no error");
    CHECK_MSG(sd_holds(p, 1), "a parameter changed although the load failed");
    tensor_clear_error();
    CHECK(tensor_load_state_dict(d, 3, sd_names, p, false) != 0); /* not strict: still no broadcasting */
    CHECK(sd_holds(p, 1));
    tensor_dict_free(d);
    /* strict: missing and unexpected names; a size mismatch beside them */
    d = tensor_dict_new();
    CHECK(tensor_dict_set(d, "fc1.bias", small) == 0 && tensor_dict_set(d, "extra", extra) == 0 && tensor_dict_set(d, "bn.num_batches_tracked", q[2]) == 0 &&
          tensor_dict_set(d, "more", extra) == 0);
    tensor_clear_error();
    CHECK(tensor_load_state_dict(d, 3, sd_names, p, true) != 0);
    CHECK_MSG(tensor_last_error() && !strcmp(tensor_last_error(), "tensor_load_state_dict: 4 problems: missing: \"fc1.weight\"; unexpected: \"extra\", \"more\"; "
                                                                  "size mismatch for fc1.bias: checkpoint [3], parameter [4]"),
              "%s", tensor_last_error() ? tensor_last_error() : "no error");
    CHECK(sd_holds(p, 1));
    tensor_clear_error();
    CHECK(tensor_load_state_dict(d, 3, sd_names, p, false) != 0); /* the size mismatch */
    CHECK_ERROR_HAS("not strict", "1 problem: size mismatch for fc1.bias");
    CHECK(sd_holds(p, 1));
    /* not strict, shapes right: what is there is copied, the rest skipped */
    CHECK(tensor_dict_set(d, "fc1.bias", q[1]) == 0);
    tensor_clear_error();
    CHECK(tensor_load_state_dict(d, 3, sd_names, p, false) == 0);
    tensor *want[3] = {p[0], q[1], q[2]};
    for (int i = 0; i < 3; i++) CHECK(test_same_bits(p[i], want[i]));
    tensor_dict_free(d);
    /* a parameter that is an expanded view cannot be written */
    tensor *e = tensor_expand(tensor_ones(TENSOR_SHAPE(1), TENSOR_F32), TENSOR_SHAPE(4));
    tensor *pe[1] = {e};
    const char *ne[1] = {"e"};
    d = tensor_state_dict(1, ne, &extra);
    tensor_dict_free(d);
    d = tensor_dict_new();
    CHECK(tensor_dict_set(d, "e", tensor_zeros(TENSOR_SHAPE(4), TENSOR_F32)) == 0);
    CHECK_BAD_INT(tensor_load_state_dict(d, 1, ne, pe, true) != 0, "tensor_load_state_dict");
    tensor_dict_free(d);
    /* a message with more problems than fit says how many it left out */
    enum { MANY = 300 };
    static char many_names[MANY][24];
    const char *mn[MANY];
    tensor *mp[MANY];
    for (int i = 0; i < MANY; i++) { snprintf(many_names[i], sizeof many_names[i], "layer%d", i); mn[i] = many_names[i]; mp[i] = p[1]; }
    d = tensor_dict_new();
    tensor_clear_error();
    CHECK(tensor_load_state_dict(d, MANY, mn, mp, true) != 0);
    CHECK_ERROR_HAS("300 missing", "tensor_load_state_dict: 300 problems: missing: \"layer0\", \"layer1\"", "more");
    tensor_dict_free(d);
    /* bad arguments */
    const char *dup[2] = {"a", "a"};
    const char *null_name[2] = {"a", NULL};
    tensor *two[2] = {p[0], p[1]}, *with_null[2] = {p[0], NULL};
    d = tensor_dict_new();
    CHECK_BAD_INT(tensor_load_state_dict(NULL, 3, sd_names, p, true) != 0, "tensor_load_state_dict");
    CHECK_BAD_INT(tensor_load_state_dict(d, -1, sd_names, p, true) != 0, "tensor_load_state_dict");
    CHECK_BAD_INT(tensor_load_state_dict(d, 2, NULL, two, true) != 0, "tensor_load_state_dict");
    CHECK_BAD_INT(tensor_load_state_dict(d, 2, dup, two, false) != 0, "tensor_load_state_dict");
    CHECK_BAD_INT(tensor_load_state_dict(d, 2, null_name, two, false) != 0, "tensor_load_state_dict");
    CHECK_BAD_INT(tensor_load_state_dict(d, 2, sd_names, with_null, false) != 0, "tensor_load_state_dict");
    CHECK(tensor_load_state_dict(d, 0, NULL, NULL, true) == 0);
    CHECK_BAD((tensor *)tensor_state_dict(2, dup, two), "tensor_state_dict");
    CHECK_BAD((tensor *)tensor_state_dict(2, sd_names, with_null), "tensor_state_dict");
    CHECK_BAD((tensor *)tensor_state_dict(-1, sd_names, two), "tensor_state_dict");
    tensor_dict_free(d);
    tensor_free(e);
    tensor_free(small);
    tensor_free(extra);
    sd_free(p);
    sd_free(q);
}

/* Running out of memory anywhere in a state dict's making or loading is an error with a message,
   and a load that fails leaves every parameter as it was. */
TEST(state_dict_out_of_memory_everywhere) {
    tensor *p[3], *q[3];
    sd_params(p, 2);
    sd_params(q, 9);
    tensor *conv = tensor_to_dtype(q[0], TENSOR_F64);
    int64_t total = -1, failed = 0;
    for (int64_t k = 0; k <= total || total < 0; k++) {
        tensor_clear_error();
        tensor_test_fail_alloc(k);
        tensor_dict *d = tensor_state_dict(3, sd_names, q);
        int rc = d && tensor_dict_set(d, "fc1.weight", conv) == 0 ? tensor_load_state_dict(d, 3, sd_names, p, true) : -1;
        int64_t used = tensor_test_alloc_count();
        tensor_test_fail_alloc(0);
        if (k == 0) { total = used; CHECK(rc == 0 && sd_holds(p, 9)); }
        else if (rc != 0) {
            failed++;
            CHECK_MSG(tensor_last_error() != NULL, "request %lld failed without a message", (long long)k);
            CHECK_MSG(sd_holds(p, 2), "request %lld failed: a parameter changed", (long long)k);
        } else CHECK(sd_holds(p, 9));
        tensor_dict_free(d);
        tensor *again[3];
        sd_params(again, 2); /* back to 2 for the next request */
        for (int i = 0; i < 3; i++) { CHECK(tensor_set_grad_enabled(false) == true); tensor_copy_(p[i], again[i]); tensor_set_grad_enabled(true); }
        sd_free(again);
        if (test_failures_in_current_test() > 10) break;
    }
    CHECK(total > 0 && failed > 0);
    tensor_clear_error();
    tensor_free(conv);
    sd_free(p);
    sd_free(q);
}
