// >>dict ---------------------------------------------------------------------------------------
/* tensor_dict: named tensors in insertion (or file) order, plus a string map of metadata. Each entry
   holds an internal alias of the tensor it was given (its own reference, as an optimizer holds its
   parameters), so the caller may free theirs. Lookup goes through an open-addressing hash index
   of the names, so a file with a million entries loads in linear time. */
struct tensor_dict {
    int n, cap;
    char **names;
    tensor **ts;
    int *index;    /* [index_cap]: entry + 1, 0 empty; index_cap a power of two > 2 n */
    int index_cap;
    int n_meta, meta_cap;
    char **meta_keys, **meta_values;
};

static uint64_t tensor__hash_str(const char *s) { /* FNV-1a */
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static char *tensor__strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *r = (char *)TENSOR__MALLOC(n);
    if (r) memcpy(r, s, n);
    return r;
}

/* The entry named name, or -1; *slot gets the index slot where it is or would go. */
static int tensor__dict_find(const tensor_dict *d, const char *name, int *slot) {
    if (!d->index_cap) { if (slot) *slot = -1; return -1; }
    unsigned mask = (unsigned)d->index_cap - 1, i = (unsigned)tensor__hash_str(name) & mask;
    for (;; i = (i + 1) & mask) {
        int e = d->index[i];
        if (!e || !strcmp(d->names[e - 1], name)) {
            if (slot) *slot = (int)i;
            return e - 1;
        }
    }
}

static bool tensor__dict_grow(tensor_dict *d) {
    if (d->n >= INT_MAX / 4) return false;
    int cap = d->cap ? d->cap * 2 : 16;
    char **names = (char **)TENSOR__MALLOC(sizeof(char *) * (size_t)cap);
    tensor **ts = (tensor **)TENSOR__MALLOC(sizeof(tensor *) * (size_t)cap);
    int icap = 4 * cap, *index = (int *)TENSOR__MALLOC(sizeof(int) * (size_t)icap);
    if (!names || !ts || !index) {
        if (names) TENSOR_FREE(names);
        if (ts) TENSOR_FREE(ts);
        if (index) TENSOR_FREE(index);
        return false;
    }
    if (d->n) {
        memcpy(names, d->names, sizeof(char *) * (size_t)d->n);
        memcpy(ts, d->ts, sizeof(tensor *) * (size_t)d->n);
    }
    if (d->names) { TENSOR_FREE(d->names); TENSOR_FREE(d->ts); TENSOR_FREE(d->index); }
    d->names = names;
    d->ts = ts;
    d->index = index;
    d->index_cap = icap;
    d->cap = cap;
    memset(index, 0, sizeof(int) * (size_t)icap);
    for (int e = 0; e < d->n; e++) {
        int slot;
        tensor__dict_find(d, d->names[e], &slot);
        d->index[slot] = e + 1;
    }
    return true;
}

TENSOR_API tensor_dict *tensor_dict_new(void) {
    tensor_dict *d = (tensor_dict *)TENSOR__MALLOC(sizeof *d);
    if (!d) return (tensor_dict *)tensor__fail("tensor_dict_new", "out of memory");
    memset(d, 0, sizeof *d);
    return d;
}

/* Adds (or replaces) name -> an alias of t that the dict owns; 0, or -1 with an error. */
static int tensor__dict_put(const char *fn, tensor_dict *d, const char *name, tensor *t) {
    if (!d) { tensor__null_arg(fn, "d"); return -1; }
    if (!name) { tensor__null_arg(fn, "name"); return -1; }
    if (!t) { tensor__null_arg(fn, "t"); return -1; }
    tensor *a = tensor__make_internal(tensor__alias(fn, t));
    if (!a) return -1;
    int slot, e = tensor__dict_find(d, name, &slot);
    if (e >= 0) {
        tensor_free(d->ts[e]);
        d->ts[e] = a;
        return 0;
    }
    char *copy = tensor__strdup(name);
    if (!copy || (d->n == d->cap && !tensor__dict_grow(d))) {
        if (copy) TENSOR_FREE(copy);
        tensor_free(a);
        tensor__fail(fn, "out of memory adding '%.200s'", name);
        return -1;
    }
    tensor__dict_find(d, name, &slot); /* the index may have been rebuilt */
    d->names[d->n] = copy;
    d->ts[d->n] = a;
    d->index[slot] = ++d->n;
    return 0;
}

TENSOR_API int tensor_dict_set(tensor_dict *d, const char *name, tensor *t) { return tensor__dict_put("tensor_dict_set", d, name, t); }

TENSOR_API tensor *tensor_dict_get(const tensor_dict *d, const char *name) {
    const char *fn = "tensor_dict_get";
    TENSOR__CHECK_ARG(fn, d);
    TENSOR__CHECK_ARG(fn, name);
    int e = tensor__dict_find(d, name, NULL);
    return e >= 0 ? d->ts[e] : tensor__fail(fn, "no tensor named '%.200s'", name);
}
TENSOR_API bool tensor_dict_contains(const tensor_dict *d, const char *name) { return d && name && tensor__dict_find(d, name, NULL) >= 0; }
TENSOR_API int tensor_dict_len(const tensor_dict *d) { return d ? d->n : 0; }
TENSOR_API const char *tensor_dict_name(const tensor_dict *d, int i) {
    if (!d) return (const char *)tensor__null_arg("tensor_dict_name", "d");
    if (i < 0 || i >= d->n) return (const char *)tensor__fail("tensor_dict_name", "index %d is out of range for %d entries", i, d->n);
    return d->names[i];
}
TENSOR_API tensor *tensor_dict_at(const tensor_dict *d, int i) {
    TENSOR__CHECK_ARG("tensor_dict_at", d);
    if (i < 0 || i >= d->n) return tensor__fail("tensor_dict_at", "index %d is out of range for %d entries", i, d->n);
    return d->ts[i];
}

TENSOR_API int tensor_dict_set_metadata(tensor_dict *d, const char *key, const char *value) {
    const char *fn = "tensor_dict_set_metadata";
    if (!d) { tensor__null_arg(fn, "d"); return -1; }
    if (!key) { tensor__null_arg(fn, "key"); return -1; }
    if (!value) { tensor__null_arg(fn, "value"); return -1; }
    char *v = tensor__strdup(value);
    if (!v) { tensor__fail(fn, "out of memory"); return -1; }
    for (int i = 0; i < d->n_meta; i++)
        if (!strcmp(d->meta_keys[i], key)) {
            TENSOR_FREE(d->meta_values[i]);
            d->meta_values[i] = v;
            return 0;
        }
    char *k = tensor__strdup(key);
    if (!k || d->n_meta >= INT_MAX / 2) { if (k) TENSOR_FREE(k); TENSOR_FREE(v); tensor__fail(fn, "out of memory"); return -1; }
    if (d->n_meta == d->meta_cap) {
        int cap = d->meta_cap ? d->meta_cap * 2 : 8;
        char **keys = (char **)TENSOR__MALLOC(sizeof(char *) * 2 * (size_t)cap);
        if (!keys) { TENSOR_FREE(k); TENSOR_FREE(v); tensor__fail(fn, "out of memory"); return -1; }
        for (int i = 0; i < d->n_meta; i++) { keys[i] = d->meta_keys[i]; keys[cap + i] = d->meta_values[i]; }
        if (d->meta_keys) TENSOR_FREE(d->meta_keys);
        d->meta_keys = keys;
        d->meta_values = keys + cap;
        d->meta_cap = cap;
    }
    d->meta_keys[d->n_meta] = k;
    d->meta_values[d->n_meta++] = v;
    return 0;
}
TENSOR_API const char *tensor_dict_metadata(const tensor_dict *d, const char *key) {
    if (!d || !key) return NULL;
    for (int i = 0; i < d->n_meta; i++) if (!strcmp(d->meta_keys[i], key)) return d->meta_values[i];
    return NULL;
}
TENSOR_API int tensor_dict_metadata_len(const tensor_dict *d) { return d ? d->n_meta : 0; }
TENSOR_API const char *tensor_dict_metadata_key(const tensor_dict *d, int i) { return d && i >= 0 && i < d->n_meta ? d->meta_keys[i] : NULL; }

TENSOR_API void tensor_dict_free(tensor_dict *d) {
    if (!d) return;
    for (int i = 0; i < d->n; i++) { tensor_free(d->ts[i]); TENSOR_FREE(d->names[i]); }
    for (int i = 0; i < d->n_meta; i++) { TENSOR_FREE(d->meta_keys[i]); TENSOR_FREE(d->meta_values[i]); }
    if (d->names) { TENSOR_FREE(d->names); TENSOR_FREE(d->ts); TENSOR_FREE(d->index); }
    if (d->meta_keys) TENSOR_FREE(d->meta_keys);
    TENSOR_FREE(d);
}

// >>external ---------------------------------------------------------------------------------
/* A tensor over storage s (made by tensor__storage_external or tensor__storage_new), taking s's one
   reference: strides NULL means contiguous. On failure s is released (its release function runs). */
static TENSOR__UNUSED tensor *tensor__from_storage(const char *fn, tensor__storage *s, tensor_dtype dtype, int ndim, const int64_t *shape,
                                                   const int64_t *strides, int64_t offset) {
    if (!s) return NULL;
    int64_t st[TENSOR_MAX_DIMS];
    if (ndim >= 0 && ndim <= TENSOR_MAX_DIMS && !strides) { tensor__contiguous_strides(ndim, shape, st); strides = st; }
    tensor *t = tensor__check_view(fn, ndim, shape, strides, offset) ? tensor__handle_new(fn) : NULL;
    if (!t) {
        tensor__storage_release(tensor__self, s);
        return NULL;
    }
    t->storage = s;
    t->offset = offset;
    t->ndim = ndim;
    t->dtype = dtype;
    for (int i = 0; i < ndim; i++) { t->shape[i] = shape[i]; t->strides[i] = strides[i]; }
    return t;
}

// >>file-io ------------------------------------------------------------------------------------
/* Reading and writing whole files. Readers know the file's size before they trust anything in it;
   writers write PATH.tmp and rename it over PATH once every byte is out, so a crash (or a full
   disk) mid-save leaves the previous file intact. Files are little-endian: a big-endian host swaps
   elements on their way in and out (tensor__to_le). */
#include <errno.h>
#if defined(__unix__) || defined(__APPLE__)
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#define TENSOR__FILE_MAP 1
#else
#define TENSOR__FILE_MAP 0 /* TENSOR_LOAD_MMAP reads the file instead */
#endif

typedef struct {
    FILE *fp;
    const unsigned char *mem; /* or the file's bytes in memory (the fuzzers: tensor__rfile_mem) */
    int64_t size;
    const char *path;
} tensor__rfile;

static TENSOR__UNUSED void tensor__rfile_mem(tensor__rfile *f, const void *data, size_t n, const char *name) {
    f->fp = NULL;
    f->mem = (const unsigned char *)data;
    f->size = (int64_t)n;
    f->path = name;
}

/* What the system said when the last call failed (errno), for messages. strerror is C99's (the
   _r variants are POSIX's, hidden from a strict C99 build); glibc, musl and macOS return constant
   text for the errors a file call reports (glibc >= 2.32 keeps an unknown number's in a buffer of
   the calling thread), and tensor__fail copies it at once. */
static const char *tensor__errno_text(void) {
    const char *e = strerror(errno);
    return e ? e : "unknown error";
}

static bool tensor__rfile_open(const char *fn, const char *path, tensor__rfile *f) {
    f->fp = NULL;
    f->mem = NULL;
    f->path = path;
    if (!path) { tensor__null_arg(fn, "path"); return false; }
    f->fp = fopen(path, "rb");
    if (!f->fp) { tensor__fail(fn, "cannot open '%.300s' for reading: %s", path, tensor__errno_text()); return false; }
#if TENSOR__FILE_MAP
    /* fopen opens a directory on POSIX, whose size and reads then fail in less clear words (stat of
       the path: fileno is not declared in a strict C99 build) */
    struct stat st;
    if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
        fclose(f->fp);
        f->fp = NULL;
        tensor__fail(fn, "'%.300s' is not a regular file%s", path, S_ISDIR(st.st_mode) ? " (a directory)" : "");
        return false;
    }
#endif
#if defined(_WIN32)
    bool ok = _fseeki64(f->fp, 0, SEEK_END) == 0 && (f->size = _ftelli64(f->fp)) >= 0 && _fseeki64(f->fp, 0, SEEK_SET) == 0;
#else
    bool ok = fseek(f->fp, 0, SEEK_END) == 0 && (f->size = ftell(f->fp)) >= 0 && fseek(f->fp, 0, SEEK_SET) == 0;
#endif
    if (!ok) {
        const char *why = tensor__errno_text();
        fclose(f->fp);
        f->fp = NULL;
        tensor__fail(fn, "cannot find the size of '%.300s' (not a regular file?): %s", path, why);
        return false;
    }
    return true;
}
static void tensor__rfile_close(tensor__rfile *f) {
    if (f->fp) fclose(f->fp);
    f->fp = NULL;
}
/* n bytes at offset off (checked against the size first). */
static bool tensor__rfile_read(const char *fn, tensor__rfile *f, int64_t off, void *buf, size_t n) {
    if (off < 0 || off > f->size || (uint64_t)n > (uint64_t)(f->size - off)) {
        tensor__fail(fn, "'%.300s': %zu bytes at offset %lld run past the end of the file (%lld bytes)", f->path, n, (long long)off, (long long)f->size);
        return false;
    }
    if (f->mem) {
        if (n) memcpy(buf, f->mem + off, n);
        return true;
    }
#if defined(_WIN32)
    bool ok = _fseeki64(f->fp, off, SEEK_SET) == 0;
#else
    bool ok = (long)off == off && fseek(f->fp, (long)off, SEEK_SET) == 0;
#endif
    if (!ok || fread(buf, 1, n, f->fp) != n) {
        tensor__fail(fn, "'%.300s': reading %zu bytes at offset %lld failed: %s", f->path, n, (long long)off, ferror(f->fp) ? tensor__errno_text() : "the file is shorter than it was");
        return false;
    }
    return true;
}

/* Little-endian integers of file formats, read and written byte by byte (any host). */
static uint32_t tensor__le16(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t tensor__le32(const unsigned char *p) { return tensor__le16(p) | tensor__le16(p + 2) << 16; }
static uint64_t tensor__le64(const unsigned char *p) { return (uint64_t)tensor__le32(p) | (uint64_t)tensor__le32(p + 4) << 32; }

/* The format f's first bytes look like, for the message of a loader given another format's file:
   TENSOR__FILE_SAFETENSORS (a header length that fits, then '{'), _NPY (NumPy's magic), _NPZ (a
   zip's first local header, or the end record an empty zip starts with), or _UNKNOWN. A loader
   asks only where its own format has already failed, or cannot hold those bytes. */
enum { TENSOR__FILE_UNKNOWN, TENSOR__FILE_SAFETENSORS, TENSOR__FILE_NPY, TENSOR__FILE_NPZ };
static const char *const tensor__file_kind_hints[4] = {
    "", "a safetensors file: load it with tensor_load(path, flags)", "an .npy: load it with tensor_load_npy", "an .npz (a zip archive): load it with tensor_load_npz"};
static int tensor__file_kind(tensor__rfile *f) {
    unsigned char b[9];
    if (f->size < 9) return TENSOR__FILE_UNKNOWN;
    if (f->mem) memcpy(b, f->mem, 9);
    else if (fseek(f->fp, 0, SEEK_SET) != 0 || fread(b, 1, 9, f->fp) != 9) return TENSOR__FILE_UNKNOWN; /* quietly: only a hint */
    if (b[0] == 'P' && b[1] == 'K' && ((b[2] == 3 && b[3] == 4) || (b[2] == 5 && b[3] == 6)) && b[8] != '{') return TENSOR__FILE_NPZ;
    if (!memcmp(b, "\x93NUMPY", 6) && b[8] != '{') return TENSOR__FILE_NPY;
    if (b[8] == '{' && tensor__le64(b) >= 2 && tensor__le64(b) <= (uint64_t)f->size - 8) return TENSOR__FILE_SAFETENSORS;
    return TENSOR__FILE_UNKNOWN;
}
static void tensor__put_le(unsigned char *p, uint64_t v, int n) {
    for (int i = 0; i < n; i++) p[i] = (unsigned char)(v >> (8 * i));
}

static bool tensor__big_endian(void) {
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 0;
}
/* Reverses the bytes of each of n elements of `size` bytes (little-endian <-> host on a big-endian
   host, and .npy's '>' data). */
static void tensor__swap_bytes(void *p, int64_t n, size_t size) {
    unsigned char *b = (unsigned char *)p;
    if (size < 2) return;
    for (int64_t i = 0; i < n; i++, b += size)
        for (size_t j = 0; j < size / 2; j++) { unsigned char t = b[j]; b[j] = b[size - 1 - j]; b[size - 1 - j] = t; }
}

typedef struct {
    FILE *fp;
    char *tmp;        /* PATH.tmp */
    const char *path;
    bool failed;
} tensor__wfile;

static bool tensor__wfile_open(const char *fn, const char *path, tensor__wfile *w) {
    w->fp = NULL;
    w->tmp = NULL;
    w->path = path;
    w->failed = false;
    if (!path) { tensor__null_arg(fn, "path"); return false; }
    size_t n = strlen(path);
    w->tmp = (char *)TENSOR__MALLOC(n + 5);
    if (!w->tmp) { tensor__fail(fn, "out of memory"); return false; }
    memcpy(w->tmp, path, n);
    memcpy(w->tmp + n, ".tmp", 5);
    w->fp = fopen(w->tmp, "wb");
    if (!w->fp) { /* the caller's path: the temporary is ours (its directory is the same) */
        tensor__fail(fn, "cannot open '%.300s' for writing: %s", path, tensor__errno_text());
        TENSOR_FREE(w->tmp);
        w->tmp = NULL;
        return false;
    }
    return true;
}
static void tensor__wfile_write(const char *fn, tensor__wfile *w, const void *p, size_t n) {
    if (w->failed || !n) return;
    if (fwrite(p, 1, n, w->fp) != n) {
        w->failed = true;
        tensor__fail(fn, "writing '%.300s' failed: %s", w->path, tensor__errno_text());
    }
}
/* Closes the file and, when everything was written (and ok: the caller's own checks passed),
   renames it to its path; otherwise removes it. 0 or -1. */
static int tensor__wfile_close(const char *fn, tensor__wfile *w, bool ok) {
    if (!w->fp) return -1;
    bool good = ok && !w->failed;
    if (fclose(w->fp) != 0 && good) { tensor__fail(fn, "writing '%.300s' failed: %s", w->path, tensor__errno_text()); good = false; }
    w->fp = NULL;
#if defined(_WIN32)
    if (good) remove(w->path); /* rename does not replace a file there */
#endif
    if (good && rename(w->tmp, w->path) != 0) { tensor__fail(fn, "cannot replace '%.300s' (renaming '%.300s' onto it): %s", w->path, w->tmp, tensor__errno_text()); good = false; }
    if (!good) remove(w->tmp);
    TENSOR_FREE(w->tmp);
    w->tmp = NULL;
    return good ? 0 : -1;
}

/* t's elements row-major little-endian: its own storage when that is already so, else a contiguous
   CPU copy in *holder (free it after use). NULL with an error. */
static const char *tensor__bytes_le(const char *fn, tensor *t, tensor **holder) {
    *holder = NULL;
    if (t->storage->device == TENSOR_CPU && tensor__contiguous(t) && !tensor__big_endian()) return tensor__data(t);
    tensor *c = tensor__contiguous_copy(fn, t, t->dtype);
    if (c && c->storage->device != TENSOR_CPU) {
        tensor *h = tensor_to_device(c, TENSOR_CPU);
        tensor_free(c);
        c = h;
    }
    if (!c) return NULL;
    if (tensor__big_endian()) tensor__swap_bytes(tensor__data(c), tensor__numel_of(c->ndim, c->shape), tensor__dtype_sizes[c->dtype]);
    *holder = c;
    return tensor__data(c);
}

/* Writes t's elements in row-major order, little-endian, whatever its layout or device. */
static void tensor__wfile_tensor(const char *fn, tensor__wfile *w, tensor *t) {
    if (w->failed || !tensor__numel_of(t->ndim, t->shape)) return;
    tensor *holder;
    const char *bytes = tensor__bytes_le(fn, t, &holder);
    if (!bytes) { w->failed = true; return; }
    tensor__wfile_write(fn, w, bytes, (size_t)tensor__numel_of(t->ndim, t->shape) * tensor__dtype_sizes[t->dtype]);
    tensor_free(holder);
}

/* Whether s[0..n) is well-formed UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF
   (RFC 3629); the offset of the first bad byte in *bad. */
static bool tensor__utf8_valid(const unsigned char *s, size_t n, size_t *bad) {
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        if (!len || i + len > n) break;
        uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
        size_t k = 1;
        for (; k < len && (s[i + k] & 0xC0) == 0x80; k++) cp = cp << 6 | (s[i + k] & 0x3F);
        if (k < len) break;
        static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min_cp[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) break;
        i += len;
    }
    if (bad) *bad = i;
    return i == n;
}

// >>json ---------------------------------------------------------------------------------------
/* A strict reader for the one JSON shape a safetensors header has (RFC 8259 syntax: no comments,
   no trailing commas, no leading zeros or fractions in the integers we take), reading straight
   into the caller's structures: no tree, no recursion, so no input can exhaust the stack. */
typedef struct {
    const unsigned char *s, *p, *end;
    const char *fn, *path;
} tensor__json;

static bool tensor__json_fail(tensor__json *j, const char *what) {
    tensor__fail(j->fn, "'%.300s': invalid header JSON at byte %lld: %s", j->path, (long long)(j->p - j->s), what);
    return false;
}
static void tensor__json_ws(tensor__json *j) {
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\t' || *j->p == '\n' || *j->p == '\r')) j->p++;
}
/* Skips whitespace, then takes c if it is next. */
static bool tensor__json_take(tensor__json *j, char c) {
    tensor__json_ws(j);
    if (j->p < j->end && *j->p == (unsigned char)c) { j->p++; return true; }
    return false;
}
static bool tensor__json_expect(tensor__json *j, char c) {
    if (tensor__json_take(j, c)) return true;
    char what[40];
    snprintf(what, sizeof what, "expected '%c'", c);
    return tensor__json_fail(j, what);
}
static int tensor__json_hex4(const unsigned char *p) {
    int v = 0;
    for (int i = 0; i < 4; i++) {
        int c = p[i], d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}
/* A string, decoded to UTF-8 in a new buffer (an escape never decodes longer than it is written,
   so the raw length bounds it); NULL with an error. The header was checked to be UTF-8 before. */
static char *tensor__json_string(tensor__json *j) {
    if (!tensor__json_take(j, '"')) { tensor__json_fail(j, "expected a string"); return NULL; }
    const unsigned char *q = j->p;
    while (q < j->end && *q != '"') q += *q == '\\' && q + 1 < j->end ? 2 : 1;
    if (q >= j->end) { tensor__json_fail(j, "unterminated string"); return NULL; }
    char *out = (char *)TENSOR__MALLOC((size_t)(q - j->p) + 1), *o = out;
    if (!out) { tensor__fail(j->fn, "out of memory reading the header of '%.300s'", j->path); return NULL; }
    const char *bad = NULL;
    while (!bad && *j->p != '"') {
        unsigned c = *j->p;
        if (c < 0x20) { bad = "control character in a string"; break; }
        if (c != '\\') { *o++ = (char)c; j->p++; continue; }
        unsigned e = j->p[1];
        j->p += 2;
        const char *simple = strchr("\"\\/bfnrt", (int)e);
        if (e && simple) { static const char map[] = "\"\\/\b\f\n\r\t"; *o++ = map[simple - "\"\\/bfnrt"]; continue; }
        if (e != 'u') { j->p -= 2; bad = "invalid escape in a string"; break; }
        long cp = j->end - j->p >= 4 ? tensor__json_hex4(j->p) : -1;
        if (cp < 0) { bad = "invalid \\u escape"; break; }
        j->p += 4;
        if (cp >= 0xDC00 && cp <= 0xDFFF) { bad = "unpaired surrogate in a \\u escape"; break; }
        if (cp >= 0xD800 && cp <= 0xDBFF) { /* a high surrogate: its low half must follow */
            long lo = j->end - j->p >= 6 && j->p[0] == '\\' && j->p[1] == 'u' ? tensor__json_hex4(j->p + 2) : -1;
            if (lo < 0xDC00 || lo > 0xDFFF) { bad = "unpaired surrogate in a \\u escape"; break; }
            j->p += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        if (cp == 0) { bad = "NUL character in a string"; break; }
        if (cp < 0x80) *o++ = (char)cp;
        else if (cp < 0x800) { *o++ = (char)(0xC0 | cp >> 6); *o++ = (char)(0x80 | (cp & 0x3F)); }
        else if (cp < 0x10000) { *o++ = (char)(0xE0 | cp >> 12); *o++ = (char)(0x80 | (cp >> 6 & 0x3F)); *o++ = (char)(0x80 | (cp & 0x3F)); }
        else { *o++ = (char)(0xF0 | cp >> 18); *o++ = (char)(0x80 | (cp >> 12 & 0x3F)); *o++ = (char)(0x80 | (cp >> 6 & 0x3F)); *o++ = (char)(0x80 | (cp & 0x3F)); }
    }
    if (bad) { TENSOR_FREE(out); tensor__json_fail(j, bad); return NULL; }
    j->p++; /* the closing quote */
    *o = 0;
    return out;
}
/* A non-negative integer: 0 or [1-9][0-9]*, at most INT64_MAX. */
static bool tensor__json_uint(tensor__json *j, int64_t *v) {
    tensor__json_ws(j);
    const unsigned char *p = j->p;
    if (p >= j->end || *p < '0' || *p > '9') return tensor__json_fail(j, "expected a non-negative integer");
    int64_t r = 0;
    if (*p == '0') p++;
    else
        for (; p < j->end && *p >= '0' && *p <= '9'; p++) {
            if (r > (INT64_MAX - (*p - '0')) / 10) return tensor__json_fail(j, "integer too large");
            r = r * 10 + (*p - '0');
        }
    if (p < j->end && (*p == '.' || *p == 'e' || *p == 'E' || (*p >= '0' && *p <= '9')))
        return tensor__json_fail(j, "expected an integer without fraction, exponent or leading zero");
    j->p = p;
    *v = r;
    return true;
}

// >>safetensors --------------------------------------------------------------------------------
/* safetensors (Hugging Face's format): an 8-byte little-endian header length N, N bytes of UTF-8
   JSON {"__metadata__": {string: string}, NAME: {"dtype": "F32", "shape": [2, 3],
   "data_offsets": [BEGIN, END]}, ...} (offsets relative to the byte buffer), then the buffer.
   Loading checks everything before it allocates a tensor: the header's size (at most 100 MB and
   within the file), its UTF-8 and JSON, the dtype names, each shape's element count and byte
   length against its offsets, and that the tensors cover the buffer exactly (no hole, no overlap,
   nothing past its end; listed in any order). Saving lays the data out in order of decreasing
   element size, so that every tensor of a file mapped at an 8-byte boundary is aligned for its
   dtype, pads the header with spaces to a multiple of 8 (as the reference writer does), and
   writes "format": "pt" in the metadata unless the dict has a format of its own. */
static const char *const tensor__st_dtypes[TENSOR_DTYPE_COUNT] = {"F32", "F64", "F16", "BF16", "I32", "I64", "U8", "BOOL"};
#define TENSOR__ST_MAX_HEADER ((int64_t)100000000)

typedef struct {
    char *name;
    tensor_dtype dtype;
    int ndim;
    int64_t shape[TENSOR_MAX_DIMS];
    int64_t begin, end;
} tensor__st_entry;

typedef struct {
    tensor__st_entry *e;
    int n, cap;
} tensor__st_entries;

static void tensor__st_entries_free(tensor__st_entries *l) {
    for (int i = 0; i < l->n; i++) TENSOR_FREE(l->e[i].name);
    if (l->e) TENSOR_FREE(l->e);
    l->e = NULL;
    l->n = l->cap = 0;
}

/* One tensor's entry: {"dtype": ..., "shape": [...], "data_offsets": [b, e]}, keys in any order,
   each exactly once. */
static bool tensor__st_entry_parse(tensor__json *j, tensor__st_entry *e) {
    bool seen[3] = {false, false, false};
    if (!tensor__json_expect(j, '{')) return false;
    if (tensor__json_take(j, '}')) return tensor__json_fail(j, "a tensor entry needs dtype, shape and data_offsets");
    do {
        char *key = tensor__json_string(j);
        if (!key) return false;
        int k = !strcmp(key, "dtype") ? 0 : !strcmp(key, "shape") ? 1 : !strcmp(key, "data_offsets") ? 2 : -1;
        TENSOR_FREE(key);
        if (k < 0) return tensor__json_fail(j, "unknown key in a tensor entry (only dtype, shape and data_offsets)");
        if (seen[k]) return tensor__json_fail(j, "duplicate key in a tensor entry");
        seen[k] = true;
        if (!tensor__json_expect(j, ':')) return false;
        if (k == 0) {
            char *dt = tensor__json_string(j);
            if (!dt) return false;
            int d = 0;
            while (d < TENSOR_DTYPE_COUNT && strcmp(dt, tensor__st_dtypes[d])) d++;
            if (d == TENSOR_DTYPE_COUNT) {
                tensor__fail(j->fn, "'%.300s': tensor '%.200s' has dtype '%.40s', which tensor.h does not support (F32 F64 F16 BF16 I32 I64 U8 BOOL)",
                             j->path, e->name, dt);
                TENSOR_FREE(dt);
                return false;
            }
            TENSOR_FREE(dt);
            e->dtype = (tensor_dtype)d;
        } else if (k == 1) {
            if (!tensor__json_expect(j, '[')) return false;
            e->ndim = 0;
            if (!tensor__json_take(j, ']')) {
                do {
                    int64_t v;
                    if (!tensor__json_uint(j, &v)) return false;
                    if (e->ndim == TENSOR_MAX_DIMS) {
                        tensor__fail(j->fn, "'%.300s': tensor '%.200s' has more than %d dims", j->path, e->name, TENSOR_MAX_DIMS);
                        return false;
                    }
                    e->shape[e->ndim++] = v;
                } while (tensor__json_take(j, ','));
                if (!tensor__json_expect(j, ']')) return false;
            }
        } else {
            if (!tensor__json_expect(j, '[') || !tensor__json_uint(j, &e->begin) || !tensor__json_expect(j, ',') || !tensor__json_uint(j, &e->end) ||
                !tensor__json_expect(j, ']'))
                return false;
        }
    } while (tensor__json_take(j, ','));
    if (!tensor__json_expect(j, '}')) return false;
    if (!seen[0] || !seen[1] || !seen[2]) {
        tensor__fail(j->fn, "'%.300s': tensor '%.200s' lacks %s", j->path, e->name, !seen[0] ? "its dtype" : !seen[1] ? "its shape" : "its data_offsets");
        return false;
    }
    return true;
}

/* The header: entries into l (in header order), metadata into d. */
static bool tensor__st_header_parse(tensor__json *j, tensor__st_entries *l, tensor_dict *d) {
    bool meta_seen = false;
    if (!tensor__json_expect(j, '{')) return false;
    if (!tensor__json_take(j, '}')) {
        do {
            char *name = tensor__json_string(j);
            if (!name) return false;
            if (!tensor__json_expect(j, ':')) { TENSOR_FREE(name); return false; }
            if (!strcmp(name, "__metadata__")) {
                TENSOR_FREE(name);
                if (meta_seen) return tensor__json_fail(j, "duplicate __metadata__");
                meta_seen = true;
                if (!tensor__json_expect(j, '{')) return false;
                if (tensor__json_take(j, '}')) continue;
                do {
                    char *k = tensor__json_string(j), *v = NULL;
                    bool ok = k && tensor__json_expect(j, ':') && (v = tensor__json_string(j)) != NULL;
                    if (ok && tensor_dict_metadata(d, k)) ok = tensor__json_fail(j, "duplicate key in __metadata__");
                    if (ok) ok = tensor_dict_set_metadata(d, k, v) == 0;
                    if (k) TENSOR_FREE(k);
                    if (v) TENSOR_FREE(v);
                    if (!ok) return false;
                } while (tensor__json_take(j, ','));
                if (!tensor__json_expect(j, '}')) return false;
                continue;
            }
            if (l->n == l->cap) {
                int cap = l->cap ? 2 * l->cap : 16;
                tensor__st_entry *e = l->n < INT_MAX / 4 ? (tensor__st_entry *)TENSOR__MALLOC(sizeof *e * (size_t)cap) : NULL;
                if (!e) { TENSOR_FREE(name); tensor__fail(j->fn, "out of memory reading the header of '%.300s'", j->path); return false; }
                if (l->n) memcpy(e, l->e, sizeof *e * (size_t)l->n);
                if (l->e) TENSOR_FREE(l->e);
                l->e = e;
                l->cap = cap;
            }
            tensor__st_entry *e = &l->e[l->n++];
            memset(e, 0, sizeof *e);
            e->name = name;
            if (!tensor__st_entry_parse(j, e)) return false;
        } while (tensor__json_take(j, ','));
        if (!tensor__json_expect(j, '}')) return false;
    }
    tensor__json_ws(j);
    if (j->p != j->end) return tensor__json_fail(j, "unexpected bytes after the header's object");
    return true;
}

typedef struct { int64_t begin, end; int entry; } tensor__st_span;
static int tensor__st_span_order(const void *a, const void *b) {
    const tensor__st_span *x = (const tensor__st_span *)a, *y = (const tensor__st_span *)b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return x->entry < y->entry ? -1 : x->entry > y->entry;
}

/* Checks the entries against each other and the buffer of buf_len bytes: unique names, element
   counts and byte lengths that fit, offsets that agree with them and cover the buffer exactly. */
static bool tensor__st_validate(const char *fn, const char *path, const tensor__st_entries *l, int64_t buf_len) {
    if (!l->n) {
        if (buf_len) { tensor__fail(fn, "'%.300s': no tensors, but a buffer of %lld bytes", path, (long long)buf_len); return false; }
        return true;
    }
    size_t icap = 16;
    while (icap < 2 * (size_t)l->n) icap *= 2;
    int *index = (int *)TENSOR__MALLOC(sizeof(int) * icap);
    tensor__st_span *spans = (tensor__st_span *)TENSOR__MALLOC(sizeof *spans * (size_t)l->n);
    bool ok = index && spans;
    if (!ok) tensor__fail(fn, "out of memory checking the header of '%.300s'", path);
    if (ok) memset(index, 0, sizeof(int) * icap);
    for (int i = 0; ok && i < l->n; i++) {
        const tensor__st_entry *e = &l->e[i];
        size_t h = (size_t)tensor__hash_str(e->name) & (icap - 1);
        while (index[h] && strcmp(l->e[index[h] - 1].name, e->name)) h = (h + 1) & (icap - 1);
        if (index[h]) { tensor__fail(fn, "'%.300s': the name '%.200s' appears twice", path, e->name); ok = false; break; }
        index[h] = i + 1;
        int64_t numel = 1, nbytes;
        for (int k = 0; k < e->ndim && ok; k++) ok = tensor__size_mul(numel, e->shape[k], &numel);
        if (ok) ok = numel <= TENSOR__MAX_NUMEL && tensor__size_mul(numel, (int64_t)tensor__dtype_sizes[e->dtype], &nbytes);
        if (!ok) { tensor__fail(fn, "'%.300s': the shape of tensor '%.200s' has more elements than fit in 64 bits", path, e->name); break; }
        if (e->begin > e->end || e->end - e->begin != nbytes) {
            tensor__fail(fn, "'%.300s': tensor '%.200s' (%s, %lld elements) needs %lld bytes, but its data_offsets [%lld, %lld] %s", path, e->name,
                         tensor__st_dtypes[e->dtype], (long long)numel, (long long)nbytes, (long long)e->begin, (long long)e->end,
                         e->begin > e->end ? "are reversed" : "hold another length");
            ok = false;
            break;
        }
        spans[i].begin = e->begin;
        spans[i].end = e->end;
        spans[i].entry = i;
    }
    if (ok) {
        qsort(spans, (size_t)l->n, sizeof *spans, tensor__st_span_order);
        int64_t at = 0;
        for (int i = 0; i < l->n && ok; i++) {
            const tensor__st_span *s = &spans[i];
            if (s->begin != at) {
                tensor__fail(fn, "'%.300s': tensor '%.200s' starts at byte %lld of the buffer, %s at byte %lld", path, l->e[s->entry].name,
                             (long long)s->begin, s->begin > at ? "leaving a hole: the previous tensor ends" : "overlapping the previous tensor, which ends",
                             (long long)at);
                ok = false;
            }
            at = s->end;
        }
        if (ok && at != buf_len) {
            tensor__fail(fn, "'%.300s': the tensors cover %lld bytes, the buffer holds %lld%s", path, (long long)at, (long long)buf_len,
                         at > buf_len ? " (data past the end of the file)" : " (bytes after the last tensor)");
            ok = false;
        }
    }
    if (index) TENSOR_FREE(index);
    if (spans) TENSOR_FREE(spans);
    return ok;
}

/* A mapped file, shared by the tensors that view it: unmapped when the last goes. */
typedef struct {
    void *base;
    size_t len;
    int64_t refs; /* atomic */
} tensor__file_map;
static void tensor__file_map_release(void *ctx) {
    tensor__file_map *m = (tensor__file_map *)ctx;
    if (TENSOR__ADD(&m->refs, -1) != 0) return;
#if TENSOR__FILE_MAP
    munmap(m->base, m->len);
#endif
    TENSOR_FREE(m);
}

/* Whether bool bytes are all 0 or 1 (what tensor.h's bool ops assume). */
static bool tensor__bools_clean(const unsigned char *p, int64_t n) {
    unsigned char acc = 0;
    for (int64_t i = 0; i < n; i++) acc |= p[i];
    return acc <= 1;
}

/* Parses a safetensors file from f (read into fresh storage), or from a mapping m of the same bytes
   (tensors then view the mapping where their dtype's alignment allows); a dict in header order. */
static tensor_dict *tensor__st_parse(const char *fn, tensor__rfile *f, tensor__file_map *m) {
    const char *path = f->path;
    unsigned char len8[8];
    int kind = tensor__file_kind(f);
    if (kind == TENSOR__FILE_NPY || kind == TENSOR__FILE_NPZ)
        return (tensor_dict *)tensor__fail(fn, "'%.300s' is not a safetensors file: it looks like %s", path, tensor__file_kind_hints[kind]);
    if (f->size < 8) return (tensor_dict *)tensor__fail(fn, "'%.300s' is too short for a safetensors file (%lld bytes)", path, (long long)f->size);
    if (!tensor__rfile_read(fn, f, 0, len8, 8)) return NULL;
    uint64_t hlen = tensor__le64(len8);
    if (hlen > (uint64_t)TENSOR__ST_MAX_HEADER)
        return (tensor_dict *)tensor__fail(fn, "'%.300s': header length %llu exceeds the limit of 100 MB", path, (unsigned long long)hlen);
    if ((int64_t)hlen > f->size - 8)
        return (tensor_dict *)tensor__fail(fn, "'%.300s': header length %llu is larger than the file (%lld bytes)", path, (unsigned long long)hlen, (long long)f->size);
    if (hlen < 2) return (tensor_dict *)tensor__fail(fn, "'%.300s': header length %llu is too small for a JSON object", path, (unsigned long long)hlen);
    unsigned char *hdr = (unsigned char *)TENSOR__MALLOC((size_t)hlen);
    tensor_dict *d = tensor_dict_new();
    tensor__st_entries l;
    memset(&l, 0, sizeof l);
    bool ok = hdr && d;
    if (!ok) tensor__fail(fn, "out of memory reading the header of '%.300s'", path);
    ok = ok && tensor__rfile_read(fn, f, 8, hdr, (size_t)hlen);
    size_t bad;
    if (ok && !tensor__utf8_valid(hdr, (size_t)hlen, &bad)) {
        tensor__fail(fn, "'%.300s': the header is not valid UTF-8 (byte %zu)", path, bad);
        ok = false;
    }
    if (ok && hdr[0] != '{') { tensor__fail(fn, "'%.300s': the header does not start with '{'", path); ok = false; }
    if (ok) {
        tensor__json j;
        j.s = j.p = hdr;
        j.end = hdr + hlen;
        j.fn = fn;
        j.path = path;
        ok = tensor__st_header_parse(&j, &l, d);
    }
    int64_t base = 8 + (int64_t)hlen, buf_len = f->size - base;
    ok = ok && tensor__st_validate(fn, path, &l, buf_len);
    bool be = tensor__big_endian();
    for (int i = 0; ok && i < l.n; i++) {
        const tensor__st_entry *e = &l.e[i];
        size_t es = tensor__dtype_sizes[e->dtype], nbytes = (size_t)(e->end - e->begin);
        int64_t numel = (int64_t)(nbytes / es);
        tensor *t = NULL;
        const unsigned char *src = m ? (const unsigned char *)m->base + base + e->begin : NULL;
        if (m && nbytes && !be && (uintptr_t)src % es == 0 && (e->dtype != TENSOR_BOOL || tensor__bools_clean(src, numel))) {
            TENSOR__ADD(&m->refs, 1);
            tensor__storage *s = tensor__storage_external(fn, (void *)src, nbytes, TENSOR_CPU, tensor__file_map_release, m);
            t = tensor__from_storage(fn, s, e->dtype, e->ndim, e->shape, NULL, 0);
        } else {
            t = tensor__new(fn, e->ndim, e->shape, e->dtype, TENSOR_CPU);
            if (t && nbytes) {
                if (src) memcpy(tensor__data(t), src, nbytes);
                else if (!tensor__rfile_read(fn, f, base + e->begin, tensor__data(t), nbytes)) { tensor_free(t); t = NULL; }
            }
            if (t && be) tensor__swap_bytes(tensor__data(t), numel, es);
            if (t && e->dtype == TENSOR_BOOL)
                for (int64_t k = 0; k < numel; k++) tensor__data(t)[k] = tensor__data(t)[k] != 0;
        }
        ok = t && tensor__dict_put(fn, d, e->name, t) == 0;
        tensor_free(t);
    }
    tensor__st_entries_free(&l);
    if (hdr) TENSOR_FREE(hdr);
    if (!ok) { tensor_dict_free(d); return NULL; }
    return d;
}

TENSOR_API tensor_dict *tensor_load(const char *path, int flags) {
    const char *fn = "tensor_load";
    if (!path) return (tensor_dict *)tensor__null_arg(fn, "path");
    if (flags & ~TENSOR_LOAD_MMAP) return (tensor_dict *)tensor__fail(fn, "unknown flags 0x%x (TENSOR_LOAD_MMAP is the one flag)", (unsigned)flags);
#if TENSOR__FILE_MAP
    if (flags & TENSOR_LOAD_MMAP) {
        int fd = open(path, O_RDONLY);
        if (fd < 0) return (tensor_dict *)tensor__fail(fn, "cannot open '%.300s' for reading: %s", path, tensor__errno_text());
        struct stat st;
        if (fstat(fd, &st) != 0) {
            const char *why = tensor__errno_text();
            close(fd);
            return (tensor_dict *)tensor__fail(fn, "cannot read the size of '%.300s': %s", path, why);
        }
        if (!S_ISREG(st.st_mode)) {
            close(fd);
            return (tensor_dict *)tensor__fail(fn, "'%.300s' is not a regular file%s", path, S_ISDIR(st.st_mode) ? " (a directory)" : "");
        }
        if ((uint64_t)st.st_size < 8 || (uint64_t)st.st_size > SIZE_MAX / 2) {
            close(fd);
            return (tensor_dict *)tensor__fail(fn, "'%.300s' is too %s for a safetensors file (%lld bytes)", path, st.st_size < 8 ? "short" : "large", (long long)st.st_size);
        }
        tensor__file_map *m = (tensor__file_map *)TENSOR__MALLOC(sizeof *m);
        void *base = m ? mmap(NULL, (size_t)st.st_size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0) : MAP_FAILED;
        const char *why = m ? tensor__errno_text() : "out of memory";
        close(fd); /* the mapping stays valid */
        if (base == MAP_FAILED) {
            if (m) TENSOR_FREE(m);
            return (tensor_dict *)tensor__fail(fn, "cannot map '%.300s' (%lld bytes): %s", path, (long long)st.st_size, why);
        }
        m->base = base;
        m->len = (size_t)st.st_size;
        m->refs = 1; /* ours, until the tensors have theirs */
        tensor__rfile f;
        tensor__rfile_mem(&f, base, m->len, path);
        tensor_dict *d = tensor__st_parse(fn, &f, m);
        tensor__file_map_release(m);
        return d;
    }
#endif
    tensor__rfile f;
    if (!tensor__rfile_open(fn, path, &f)) return NULL;
    tensor_dict *d = tensor__st_parse(fn, &f, NULL);
    tensor__rfile_close(&f);
    return d;
}

/* JSON text of a string (quotes and escapes) into b; false when out of memory. */
typedef struct { char *p; size_t n, cap; bool oom; } tensor__buf;
static void tensor__buf_add(tensor__buf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (n > b->cap - b->n) {
        size_t cap = b->cap ? b->cap : 256;
        while (n > cap - b->n) {
            if (cap > SIZE_MAX / 4) { b->oom = true; return; }
            cap *= 2;
        }
        char *p = (char *)TENSOR__MALLOC(cap);
        if (!p) { b->oom = true; return; }
        if (b->n) memcpy(p, b->p, b->n);
        if (b->p) TENSOR_FREE(b->p);
        b->p = p;
        b->cap = cap;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
}
static void tensor__buf_str(tensor__buf *b, const char *s) { tensor__buf_add(b, s, strlen(s)); }
static void tensor__buf_json(tensor__buf *b, const char *s) {
    tensor__buf_add(b, "\"", 1);
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        char esc[8];
        if (c == '"' || c == '\\') { esc[0] = '\\'; esc[1] = (char)c; tensor__buf_add(b, esc, 2); }
        else if (c < 0x20) { snprintf(esc, sizeof esc, "\\u%04x", c); tensor__buf_add(b, esc, 6); }
        else tensor__buf_add(b, s, 1);
    }
    tensor__buf_add(b, "\"", 1);
}

/* Writes d's tensors and metadata to path. */
static int tensor__st_save(const char *fn, const char *path, const tensor_dict *d) {
    if (!path) { tensor__null_arg(fn, "path"); return -1; }
    if (!d) { tensor__null_arg(fn, "d"); return -1; }
    for (int i = 0; i < d->n; i++) {
        if (!strcmp(d->names[i], "__metadata__")) { tensor__fail(fn, "'__metadata__' is reserved for the metadata and cannot name a tensor"); return -1; }
        if (!tensor__utf8_valid((const unsigned char *)d->names[i], strlen(d->names[i]), NULL)) { tensor__fail(fn, "tensor name %d is not valid UTF-8", i); return -1; }
    }
    for (int i = 0; i < d->n_meta; i++)
        if (!tensor__utf8_valid((const unsigned char *)d->meta_keys[i], strlen(d->meta_keys[i]), NULL) ||
            !tensor__utf8_valid((const unsigned char *)d->meta_values[i], strlen(d->meta_values[i]), NULL)) {
            tensor__fail(fn, "metadata entry %d is not valid UTF-8", i);
            return -1;
        }
    /* data order: by decreasing element size, then as listed (stable), so each tensor is aligned */
    int *order = (int *)TENSOR__MALLOC(sizeof(int) * (size_t)(d->n ? d->n : 1));
    int64_t *begin = (int64_t *)TENSOR__MALLOC(sizeof(int64_t) * (size_t)(d->n ? d->n : 1));
    tensor__buf b;
    memset(&b, 0, sizeof b);
    if (!order || !begin) {
        if (order) TENSOR_FREE(order);
        if (begin) TENSOR_FREE(begin);
        tensor__fail(fn, "out of memory");
        return -1;
    }
    int k = 0;
    for (size_t es = 8; es >= 1; es /= 2)
        for (int i = 0; i < d->n; i++)
            if (tensor__dtype_sizes[d->ts[i]->dtype] == es) order[k++] = i;
    int64_t at = 0;
    for (int j = 0; j < d->n; j++) {
        const tensor *t = d->ts[order[j]];
        begin[order[j]] = at;
        at += tensor__numel_of(t->ndim, t->shape) * (int64_t)tensor__dtype_sizes[t->dtype];
    }
    char num[64];
    tensor__buf_str(&b, "{\"__metadata__\":{");
    /* Hugging Face's loaders refuse a file without a "format" (transformers: "does not contain the
       valid metadata"); save_pretrained writes "pt", and so do we unless the dict says otherwise */
    bool own_format = tensor_dict_metadata(d, "format") != NULL;
    if (!own_format) tensor__buf_str(&b, "\"format\":\"pt\"");
    for (int i = 0; i < d->n_meta; i++) {
        if (i || !own_format) tensor__buf_str(&b, ",");
        tensor__buf_json(&b, d->meta_keys[i]);
        tensor__buf_str(&b, ":");
        tensor__buf_json(&b, d->meta_values[i]);
    }
    tensor__buf_str(&b, "}");
    for (int i = 0; i < d->n; i++) {
        const tensor *t = d->ts[i];
        tensor__buf_str(&b, ",");
        tensor__buf_json(&b, d->names[i]);
        tensor__buf_str(&b, ":{\"dtype\":\"");
        tensor__buf_str(&b, tensor__st_dtypes[t->dtype]);
        tensor__buf_str(&b, "\",\"shape\":[");
        for (int k2 = 0; k2 < t->ndim; k2++) {
            snprintf(num, sizeof num, "%s%lld", k2 ? "," : "", (long long)t->shape[k2]);
            tensor__buf_str(&b, num);
        }
        snprintf(num, sizeof num, "],\"data_offsets\":[%lld,%lld]}", (long long)begin[i],
                 (long long)(begin[i] + tensor__numel_of(t->ndim, t->shape) * (int64_t)tensor__dtype_sizes[t->dtype]));
        tensor__buf_str(&b, num);
    }
    tensor__buf_str(&b, "}");
    while (!b.oom && b.n % 8) tensor__buf_add(&b, " ", 1);
    TENSOR_FREE(begin);
    if (b.oom) {
        if (b.p) TENSOR_FREE(b.p);
        TENSOR_FREE(order);
        tensor__fail(fn, "out of memory writing the header");
        return -1;
    }
    tensor__wfile w;
    int rc = -1;
    if (tensor__wfile_open(fn, path, &w)) {
        unsigned char len8[8];
        tensor__put_le(len8, (uint64_t)b.n, 8);
        tensor__wfile_write(fn, &w, len8, 8);
        tensor__wfile_write(fn, &w, b.p, b.n);
        for (int j = 0; j < d->n; j++) tensor__wfile_tensor(fn, &w, d->ts[order[j]]);
        rc = tensor__wfile_close(fn, &w, true);
    }
    TENSOR_FREE(b.p);
    TENSOR_FREE(order);
    return rc;
}

TENSOR_API int tensor_save(const char *path, const tensor_dict *d) { return tensor__st_save("tensor_save", path, d); }

TENSOR_API int tensor_save_safetensors(const char *path, int n, const char *const *names, tensor *const *ts) {
    const char *fn = "tensor_save_safetensors";
    if (n < 0 || (n > 0 && (!names || !ts))) { tensor__fail(fn, "needs n >= 0 names and tensors, got n = %d%s", n, n > 0 ? " with a NULL array" : ""); return -1; }
    tensor_dict *d = tensor_dict_new();
    int rc = d ? 0 : -1;
    for (int i = 0; i < n && rc == 0; i++) {
        if (!names[i]) { tensor__null_arg(fn, "names[i]"); rc = -1; }
        else if (!ts[i]) { tensor__null_arg(fn, "ts[i]"); rc = -1; }
        else if (tensor_dict_contains(d, names[i])) { tensor__fail(fn, "the name '%.200s' appears twice", names[i]); rc = -1; }
        else rc = tensor__dict_put(fn, d, names[i], ts[i]);
    }
    if (rc == 0) rc = tensor__st_save(fn, path, d);
    tensor_dict_free(d);
    return rc;
}

TENSOR_API int tensor_load_safetensors(const char *path, int *n, char ***names, tensor ***ts) {
    const char *fn = "tensor_load_safetensors";
    if (!n || !names || !ts) { tensor__fail(fn, "n, names and ts must not be NULL"); return -1; }
    *n = 0;
    *names = NULL;
    *ts = NULL;
    tensor_dict *d = tensor_load(path, 0);
    if (!d) return -1;
    size_t count = (size_t)(d->n ? d->n : 1);
    char **nm = (char **)malloc(sizeof(char *) * count); /* plain malloc: the caller frees with free() */
    tensor **tt = (tensor **)malloc(sizeof(tensor *) * count);
    bool ok = nm && tt;
    int made = 0;
    for (; ok && made < d->n; made++) {
        size_t len = strlen(d->names[made]) + 1;
        nm[made] = (char *)malloc(len);
        tt[made] = nm[made] ? tensor__alias(fn, d->ts[made]) : NULL;
        if (!tt[made]) { if (nm[made]) free(nm[made]); ok = false; break; }
        memcpy(nm[made], d->names[made], len);
    }
    if (!ok) {
        for (int i = 0; i < made; i++) { free(nm[i]); tensor_free(tt[i]); }
        free(nm);
        free(tt);
        tensor_dict_free(d);
        tensor__fail(fn, "out of memory");
        return -1;
    }
    *n = d->n;
    *names = nm;
    *ts = tt;
    tensor_dict_free(d);
    return 0;
}

// >>state-dict ---------------------------------------------------------------------------------
/* A model's parameters by name, as torch's state_dict and load_state_dict. The load checks
   everything before it writes anything, and reports every problem in one message, as PyTorch's
   "Error(s) in loading state_dict": the missing names and the unexpected ones (strict only), then
   each shape that differs (also when not strict: no broadcasting, a [3] never fills a [4, 3]).
   A dtype that differs is converted, as torch's copy_ converts it. */

/* Checks n, names and params (non-NULL, names unique); false with an error. */
static bool tensor__check_named(const char *fn, int n, const char *const *names, tensor *const *params) {
    if (n < 0 || (n > 0 && (!names || !params))) {
        tensor__fail(fn, "needs n >= 0 names and parameters, got n = %d%s", n, n > 0 ? " with a NULL array" : "");
        return false;
    }
    for (int i = 0; i < n; i++) {
        if (!names[i]) { tensor__fail(fn, "names[%d] is NULL", i); return false; }
        if (!params[i]) { tensor__null_arg(fn, "params[i]"); return false; }
    }
    tensor_dict *seen = n > 1 ? tensor_dict_new() : NULL; /* its index finds a repeated name in linear time */
    if (n > 1 && !seen) return false;
    bool ok = true;
    for (int i = 0; ok && n > 1 && i < n; i++) {
        if (tensor_dict_contains(seen, names[i])) { tensor__fail(fn, "the name '%.200s' appears twice", names[i]); ok = false; }
        else ok = tensor__dict_put(fn, seen, names[i], params[i]) == 0;
    }
    tensor_dict_free(seen);
    return ok;
}

TENSOR_API tensor_dict *tensor_state_dict(int n, const char *const *names, tensor *const *params) {
    const char *fn = "tensor_state_dict";
    if (!tensor__check_named(fn, n, names, params)) return NULL;
    tensor_dict *d = tensor_dict_new();
    for (int i = 0; d && i < n; i++) {
        tensor *v = tensor__view_of(fn, params[i], params[i]->ndim, params[i]->shape, params[i]->strides, params[i]->offset); /* detached */
        int rc = v ? tensor__dict_put(fn, d, names[i], v) : -1;
        tensor_free(v);
        if (rc) { tensor_dict_free(d); d = NULL; }
    }
    return d;
}

/* The problems of a load, gathered into one message of at most cap bytes (what does not fit is
   counted: "... and N more"). */
typedef struct { char *p; size_t cap, at; int n, left_out; const char *sep; } tensor__problems;
static TENSOR__PRINTF(2, 3) void tensor__problem(tensor__problems *pr, const char *fmt, ...) {
    char item[400];
    va_list ap;
    va_start(ap, fmt);
    int k = vsnprintf(item, sizeof item, fmt, ap);
    va_end(ap);
    size_t len = k < 0 ? 0 : (size_t)k < sizeof item ? (size_t)k : sizeof item - 1, sep = strlen(pr->sep);
    pr->n++;
    if (pr->left_out || pr->at + sep + len + 40 >= pr->cap) { pr->left_out++; return; } /* 40: room for the count */
    memcpy(pr->p + pr->at, pr->sep, sep);
    memcpy(pr->p + pr->at + sep, item, len);
    pr->at += sep + len;
    pr->p[pr->at] = 0;
}

TENSOR_API int tensor_load_state_dict(const tensor_dict *d, int n, const char *const *names, tensor *const *params, bool strict) {
    const char *fn = "tensor_load_state_dict";
    if (!d) { tensor__null_arg(fn, "d"); return -1; }
    if (!tensor__check_named(fn, n, names, params)) return -1;
    char text[900] = "";
    tensor__problems pr = {text, sizeof text, 0, 0, 0, ""};
    /* the names the dict holds that are parameters' (index: entry -> found) */
    unsigned char *used = (unsigned char *)TENSOR__MALLOC((size_t)(d->n ? d->n : 1));
    if (!used) { tensor__fail(fn, "out of memory"); return -1; }
    memset(used, 0, (size_t)(d->n ? d->n : 1));
    bool first = true;
    for (int i = 0; i < n; i++) {
        int e = tensor__dict_find(d, names[i], NULL);
        if (e >= 0) used[e] = 1;
        else if (strict) {
            pr.sep = first ? "" : ", ";
            tensor__problem(&pr, "%s\"%.200s\"", first ? "missing: " : "", names[i]);
            first = false;
        }
    }
    first = true;
    for (int e = 0; strict && e < d->n; e++)
        if (!used[e]) {
            pr.sep = first ? (pr.n ? "; " : "") : ", ";
            tensor__problem(&pr, "%s\"%.200s\"", first ? "unexpected: " : "", d->names[e]);
            first = false;
        }
    TENSOR_FREE(used);
    for (int i = 0; i < n; i++) {
        int e = tensor__dict_find(d, names[i], NULL);
        const tensor *src = e >= 0 ? d->ts[e] : NULL, *p = params[i];
        pr.sep = pr.n ? "; " : "";
        if (src && !tensor__same_shape(src, p))
            tensor__problem(&pr, "size mismatch for %.200s: checkpoint %s, parameter %s", names[i], tensor__shape_of(src), tensor__shape_of(p));
        for (int k = 0; k < p->ndim; k++)
            if (src && p->strides[k] == 0 && p->shape[k] > 1) { /* as tensor_copy_ refuses it */
                tensor__problem(&pr, "parameter %.200s (shape %s) is an expanded view: several of its elements share one memory location", names[i], tensor__shape_of(p));
                break;
            }
    }
    if (pr.n) {
        if (pr.left_out) snprintf(text + pr.at, sizeof text - pr.at, "; ... and %d more", pr.left_out);
        tensor__fail(fn, "%d problem%s: %s", pr.n, pr.n > 1 ? "s" : "", text);
        return -1;
    }
    /* the sources on each parameter's device, made before any parameter changes (an allocation that
       fails leaves every parameter as it was); dtypes are converted by the copy */
    tensor **moved = (tensor **)TENSOR__MALLOC(sizeof(tensor *) * (size_t)(n ? n : 1));
    if (!moved) { tensor__fail(fn, "out of memory"); return -1; }
    bool ok = true;
    for (int i = 0; i < n; i++) {
        int e = tensor__dict_find(d, names[i], NULL);
        tensor *src = e >= 0 ? d->ts[e] : NULL;
        moved[i] = NULL;
        if (ok && src && src->storage->device != params[i]->storage->device && !(moved[i] = tensor_to_device(src, params[i]->storage->device))) ok = false;
    }
    bool was = tensor_set_grad_enabled(false); /* writing into leaves that require grad, as torch.no_grad() */
    for (int i = 0; ok && i < n; i++) {
        int e = tensor__dict_find(d, names[i], NULL);
        if (e < 0) continue;
        if (!tensor_copy_(params[i], moved[i] ? moved[i] : d->ts[e])) ok = false;
    }
    tensor_set_grad_enabled(was);
    for (int i = 0; i < n; i++) tensor_free(moved[i]);
    TENSOR_FREE(moved);
    return ok ? 0 : -1;
}

// >>checkpoint ---------------------------------------------------------------------------------
/* An optimizer's state in a dict, under a prefix, with the names of torch.optim's state_dict:
   PREFIX.kind (i64: 0 SGD, 1 Adam, 2 AdamW), PREFIX.num_params, the hyperparameters as f64 scalars
   (PREFIX.lr, .momentum, .betas [2], .eps, .weight_decay, .nesterov), and per parameter i
   PREFIX.state.i.step (i64) with PREFIX.state.i.momentum_buffer (SGD with momentum) or
   PREFIX.state.i.exp_avg and .exp_avg_sq (Adam, AdamW) once the parameter has had a step.
   Loading checks all of it against the optimizer (kind, parameter count, shapes) before it
   changes anything, and restores the hyperparameters too (a schedule may have changed lr). */
static const char *const tensor__optim_kind_names[3] = {"SGD", "Adam", "AdamW"};

static int tensor__put_scalar(const char *fn, tensor_dict *d, const char *name, double v, tensor_dtype dtype) {
    tensor *t = tensor_scalar(v, dtype);
    int rc = t ? tensor__dict_put(fn, d, name, t) : -1;
    tensor_free(t);
    return rc;
}
static int tensor__put_i64(const char *fn, tensor_dict *d, const char *name, int64_t v) {
    tensor *t = tensor__new(fn, 0, NULL, TENSOR_I64, TENSOR_CPU);
    if (t) memcpy(tensor__data(t), &v, 8);
    int rc = t ? tensor__dict_put(fn, d, name, t) : -1;
    tensor_free(t);
    return rc;
}
/* d[prefix + suffix], or NULL; *name gets the full name (for messages). */
static tensor *tensor__dict_find_prefixed(const tensor_dict *d, const char *prefix, const char *suffix, char *name, size_t cap) {
    snprintf(name, cap, "%s%s", prefix, suffix);
    int e = tensor__dict_find(d, name, NULL);
    return e >= 0 ? d->ts[e] : NULL;
}
/* A one-element tensor's value, checked to be there; false with an error otherwise. */
static bool tensor__dict_number(const char *fn, const tensor_dict *d, const char *prefix, const char *suffix, double *v) {
    char name[512];
    tensor *t = tensor__dict_find_prefixed(d, prefix, suffix, name, sizeof name);
    if (!t) { tensor__fail(fn, "the checkpoint has no '%.300s'", name); return false; }
    if (t->storage->device != TENSOR_CPU || tensor__numel_of(t->ndim, t->shape) != 1) { tensor__fail(fn, "'%.300s' should hold one number, its shape is %s", name, tensor__shape_of(t)); return false; }
    *v = tensor__load_f64(tensor__data(t), t->dtype);
    return true;
}
static bool tensor__dict_i64(const char *fn, const tensor_dict *d, const char *prefix, const char *suffix, int64_t *v) {
    char name[512];
    tensor *t = tensor__dict_find_prefixed(d, prefix, suffix, name, sizeof name);
    if (!t) { tensor__fail(fn, "the checkpoint has no '%.300s'", name); return false; }
    if (t->dtype != TENSOR_I64 || t->storage->device != TENSOR_CPU || tensor__numel_of(t->ndim, t->shape) != 1) {
        tensor__fail(fn, "'%.300s' should be one int64, it is %s of shape %s", name, tensor__dtype_names[t->dtype], tensor__shape_of(t));
        return false;
    }
    memcpy(v, tensor__data(t), 8);
    return true;
}

TENSOR_API int tensor_optim_state_save(const tensor_optim *o, tensor_dict *d, const char *prefix) {
    const char *fn = "tensor_optim_state_save";
    if (!o) { tensor__null_arg(fn, "o"); return -1; }
    if (!d) { tensor__null_arg(fn, "d"); return -1; }
    if (!prefix) { tensor__null_arg(fn, "prefix"); return -1; }
    if (strlen(prefix) > 400) { tensor__fail(fn, "prefix is longer than 400 bytes"); return -1; }
    char name[512];
    int rc = 0;
#define TENSOR__PUT(suffix, expr) (snprintf(name, sizeof name, "%s%s", prefix, suffix), rc = rc ? rc : (expr))
    TENSOR__PUT(".kind", tensor__put_i64(fn, d, name, o->kind));
    TENSOR__PUT(".num_params", tensor__put_i64(fn, d, name, o->n));
    TENSOR__PUT(".lr", tensor__put_scalar(fn, d, name, o->group_lr[0], TENSOR_F64)); /* group 0's, as before groups */
    TENSOR__PUT(".momentum", tensor__put_scalar(fn, d, name, o->momentum, TENSOR_F64));
    TENSOR__PUT(".eps", tensor__put_scalar(fn, d, name, o->eps, TENSOR_F64));
    TENSOR__PUT(".weight_decay", tensor__put_scalar(fn, d, name, o->group_wd[0], TENSOR_F64));
    if (!rc) { /* the groups: (lr, weight_decay) of each, and each parameter's group */
        int64_t hshape[2] = {o->n_groups, 2}, gshape[1] = {o->n};
        tensor *h = tensor__new(fn, 2, hshape, TENSOR_F64, TENSOR_CPU);
        tensor *g = h ? tensor__new(fn, 1, gshape, TENSOR_I64, TENSOR_CPU) : NULL;
        if (g) {
            double *hv = (double *)tensor__data(h);
            int64_t *gv = (int64_t *)tensor__data(g);
            for (int k = 0; k < o->n_groups; k++) { hv[2 * k] = o->group_lr[k]; hv[2 * k + 1] = o->group_wd[k]; }
            for (int i = 0; i < o->n; i++) gv[i] = o->group[i];
        }
        TENSOR__PUT(".param_groups", g ? tensor__dict_put(fn, d, name, h) : -1);
        TENSOR__PUT(".param_group_of", g ? tensor__dict_put(fn, d, name, g) : -1);
        tensor_free(g);
        tensor_free(h);
    }
    TENSOR__PUT(".nesterov", tensor__put_scalar(fn, d, name, o->nesterov, TENSOR_BOOL));
    if (!rc) {
        double betas[2] = {o->beta1, o->beta2};
        int64_t two = 2;
        tensor *b = tensor_from_data(betas, 1, &two, TENSOR_F64);
        TENSOR__PUT(".betas", b ? tensor__dict_put(fn, d, name, b) : -1);
        tensor_free(b);
    }
    for (int i = 0; i < o->n && !rc; i++) {
        char sfx[64];
        snprintf(sfx, sizeof sfx, ".state.%d.step", i);
        TENSOR__PUT(sfx, tensor__put_i64(fn, d, name, o->steps[i]));
        const char *s1 = o->kind == TENSOR__SGD ? "momentum_buffer" : "exp_avg";
        if (o->state1[i]) {
            snprintf(sfx, sizeof sfx, ".state.%d.%s", i, s1);
            TENSOR__PUT(sfx, tensor__dict_put(fn, d, name, o->state1[i]));
        }
        if (o->state2[i]) {
            snprintf(sfx, sizeof sfx, ".state.%d.exp_avg_sq", i);
            TENSOR__PUT(sfx, tensor__dict_put(fn, d, name, o->state2[i]));
        }
    }
#undef TENSOR__PUT
    return rc;
}

TENSOR_API int tensor_optim_state_load(tensor_optim *o, const tensor_dict *d, const char *prefix) {
    const char *fn = "tensor_optim_state_load";
    if (!o) { tensor__null_arg(fn, "o"); return -1; }
    if (!d) { tensor__null_arg(fn, "d"); return -1; }
    if (!prefix) { tensor__null_arg(fn, "prefix"); return -1; }
    if (strlen(prefix) > 400) { tensor__fail(fn, "prefix is longer than 400 bytes"); return -1; }
    int64_t kind, n;
    double lr, momentum, eps, wd, nesterov;
    if (!tensor__dict_i64(fn, d, prefix, ".kind", &kind) || !tensor__dict_i64(fn, d, prefix, ".num_params", &n)) return -1;
    if (kind != o->kind) {
        tensor__fail(fn, "the checkpoint holds %s state, the optimizer is %s", kind >= 0 && kind < 3 ? tensor__optim_kind_names[kind] : "unknown",
                     tensor__optim_kind_names[o->kind]);
        return -1;
    }
    if (n != o->n) { tensor__fail(fn, "the checkpoint holds state for %lld parameters, the optimizer has %d", (long long)n, o->n); return -1; }
    if (!tensor__dict_number(fn, d, prefix, ".lr", &lr) || !tensor__dict_number(fn, d, prefix, ".momentum", &momentum) ||
        !tensor__dict_number(fn, d, prefix, ".eps", &eps) || !tensor__dict_number(fn, d, prefix, ".weight_decay", &wd) ||
        !tensor__dict_number(fn, d, prefix, ".nesterov", &nesterov))
        return -1;
    char name[512];
    tensor *betas = tensor__dict_find_prefixed(d, prefix, ".betas", name, sizeof name);
    if (!betas || betas->ndim != 1 || betas->shape[0] != 2 || betas->storage->device != TENSOR_CPU) { tensor__fail(fn, "the checkpoint has no '%.300s' of 2 numbers", name); return -1; }
    double beta1 = tensor__load_f64(tensor__data(betas), betas->dtype), beta2 = tensor__load_f64(tensor__data(betas) + betas->strides[0] * (int64_t)tensor__dtype_sizes[betas->dtype], betas->dtype);
    if (!(lr >= 0) || !(momentum >= 0) || !(eps >= 0) || !(wd >= 0) || !(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1)) {
        tensor__fail(fn, "the checkpoint's hyperparameters are out of range (lr %g, momentum %g, betas (%g, %g), eps %g, weight_decay %g)", lr, momentum, beta1, beta2, eps, wd);
        return -1;
    }
    /* the groups: the same parameters in the same groups; a checkpoint from before groups has one */
    tensor *hyper = tensor__dict_find_prefixed(d, prefix, ".param_groups", name, sizeof name);
    tensor *group_of = tensor__dict_find_prefixed(d, prefix, ".param_group_of", name, sizeof name);
    if (!hyper && o->n_groups != 1) { tensor__fail(fn, "the checkpoint has one parameter group, the optimizer %d", o->n_groups); return -1; }
    if (hyper) {
        if (hyper->ndim != 2 || hyper->shape[1] != 2 || hyper->dtype != TENSOR_F64 || hyper->storage->device != TENSOR_CPU || !tensor_is_contiguous(hyper) ||
            !group_of || group_of->ndim != 1 || group_of->shape[0] != o->n || group_of->dtype != TENSOR_I64 || group_of->storage->device != TENSOR_CPU || !tensor_is_contiguous(group_of)) {
            tensor__fail(fn, "the checkpoint's '%.200s.param_groups' (f64 [groups, 2]) or '.param_group_of' (int64 [%d]) is malformed", prefix, o->n);
            return -1;
        }
        if (hyper->shape[0] != o->n_groups) { tensor__fail(fn, "the checkpoint has %lld parameter groups, the optimizer %d", (long long)hyper->shape[0], o->n_groups); return -1; }
        const double *hv = (const double *)tensor__data(hyper);
        const int64_t *gv = (const int64_t *)tensor__data(group_of);
        for (int i = 0; i < o->n; i++)
            if (gv[i] != o->group[i]) { tensor__fail(fn, "parameter %d is in group %lld in the checkpoint, in group %d here", i, (long long)gv[i], o->group[i]); return -1; }
        for (int k = 0; k < o->n_groups; k++)
            if (!(hv[2 * k] >= 0) || !(hv[2 * k + 1] >= 0)) { tensor__fail(fn, "group %d's lr %g or weight_decay %g is out of range", k, hv[2 * k], hv[2 * k + 1]); return -1; }
    }
    /* the new state, made in full before anything changes */
    size_t bytes = sizeof(tensor *) * 2 * (size_t)o->n + sizeof(int64_t) * (size_t)o->n;
    char *mem = (char *)TENSOR__MALLOC(bytes);
    if (!mem) { tensor__fail(fn, "out of memory"); return -1; }
    memset(mem, 0, bytes);
    tensor **s1 = (tensor **)mem, **s2 = s1 + o->n;
    int64_t *steps = (int64_t *)(s2 + o->n);
    int n_state = o->kind != TENSOR__SGD ? 2 : momentum != 0 ? 1 : 0;
    bool ok = true;
    for (int i = 0; ok && i < o->n; i++) {
        char sfx[64];
        snprintf(sfx, sizeof sfx, ".state.%d.step", i);
        ok = tensor__dict_i64(fn, d, prefix, sfx, &steps[i]);
        if (ok && steps[i] < 0) { tensor__fail(fn, "'%s%s' is negative", prefix, sfx); ok = false; }
        const tensor *p = o->params[i];
        tensor_dtype sd = p->dtype == TENSOR_F64 ? TENSOR_F64 : TENSOR_F32;
        for (int k = 0; ok && k < n_state; k++) {
            snprintf(sfx, sizeof sfx, ".state.%d.%s", i, k ? "exp_avg_sq" : o->kind == TENSOR__SGD ? "momentum_buffer" : "exp_avg");
            tensor *s = tensor__dict_find_prefixed(d, prefix, sfx, name, sizeof name);
            if (!s) continue; /* no step taken yet: the first step makes it */
            if (!tensor__same_shape(s, p) || !tensor__is_float(s->dtype)) {
                tensor__fail(fn, "'%.300s' is %s of shape %s, parameter %d is of shape %s", name, tensor__dtype_names[s->dtype], tensor__shape_of(s), i, tensor__shape_of(p));
                ok = false;
                break;
            }
            tensor *c = tensor__contiguous_copy(fn, s, sd); /* the optimizer's own, written in place by its steps */
            if (c && c->storage->device != TENSOR_CPU) { tensor *h = tensor_to_device(c, TENSOR_CPU); tensor_free(c); c = h; }
            (k ? s2 : s1)[i] = tensor__make_internal(c);
            ok = c != NULL;
        }
        if (ok && n_state && (!s1[i] || (n_state == 2 && !s2[i])) && steps[i] > 0) {
            tensor__fail(fn, "parameter %d has taken %lld steps, but the checkpoint lacks its state", i, (long long)steps[i]);
            ok = false;
        }
    }
    if (!ok) {
        for (int i = 0; i < 2 * o->n; i++) tensor_free(s1[i]);
        TENSOR_FREE(mem);
        return -1;
    }
    for (int i = 0; i < o->n; i++) {
        tensor_free(o->state1[i]);
        tensor_free(o->state2[i]);
        o->state1[i] = s1[i];
        o->state2[i] = s2[i];
        o->steps[i] = steps[i];
    }
    TENSOR_FREE(mem);
    for (int k = 0; k < o->n_groups; k++) {
        o->group_lr[k] = hyper ? ((const double *)tensor__data(hyper))[2 * k] : lr;
        o->group_wd[k] = hyper ? ((const double *)tensor__data(hyper))[2 * k + 1] : wd;
    }
    o->momentum = momentum;
    o->beta1 = beta1;
    o->beta2 = beta2;
    o->eps = eps;
    o->nesterov = nesterov != 0;
    return 0;
}

/* The calling thread's generator as 8 int64 values: key (the seed), block counter, stream, words
   used of the current block, the block's four words (zeros when all four are used: the next draw
   computes a new block, so a stale one is not part of the state, and the same state must give
   the same bytes). */
TENSOR_API int tensor_rng_state_save(tensor_dict *d, const char *name) {
    const char *fn = "tensor_rng_state_save";
    if (!d) { tensor__null_arg(fn, "d"); return -1; }
    if (!name) { tensor__null_arg(fn, "name"); return -1; }
    const tensor__philox *g = tensor__rng_here();
    int64_t v[8];
    uint64_t key = (uint64_t)g->key[1] << 32 | g->key[0], counter = g->counter;
    memcpy(&v[0], &key, 8);
    memcpy(&v[1], &counter, 8);
    v[2] = g->stream;
    v[3] = g->used;
    for (int i = 0; i < 4; i++) v[4 + i] = g->used < 4 ? g->block[i] : 0;
    int64_t eight = 8;
    tensor *t = tensor_from_data(v, 1, &eight, TENSOR_I64);
    int rc = t ? tensor__dict_put(fn, d, name, t) : -1;
    tensor_free(t);
    return rc;
}

TENSOR_API int tensor_rng_state_load(const tensor_dict *d, const char *name) {
    const char *fn = "tensor_rng_state_load";
    if (!d) { tensor__null_arg(fn, "d"); return -1; }
    if (!name) { tensor__null_arg(fn, "name"); return -1; }
    int e = tensor__dict_find(d, name, NULL);
    if (e < 0) { tensor__fail(fn, "the checkpoint has no '%.300s'", name); return -1; }
    const tensor *t = d->ts[e];
    if (t->dtype != TENSOR_I64 || t->ndim != 1 || t->shape[0] != 8 || t->storage->device != TENSOR_CPU) {
        tensor__fail(fn, "'%.300s' should be 8 int64 values, it is %s of shape %s", name, tensor__dtype_names[t->dtype], tensor__shape_of(t));
        return -1;
    }
    int64_t v[8];
    for (int i = 0; i < 8; i++) memcpy(&v[i], tensor__data(t) + i * t->strides[0] * 8, 8);
    bool ok = v[2] >= 0 && v[2] <= 0xffffffffll && v[3] >= 0 && v[3] <= 4;
    for (int i = 0; i < 4; i++) ok = ok && v[4 + i] >= 0 && v[4 + i] <= 0xffffffffll;
    if (!ok) { tensor__fail(fn, "'%.300s' does not hold a generator state", name); return -1; }
    tensor__philox *g = tensor__rng_here();
    uint64_t key, counter;
    memcpy(&key, &v[0], 8);
    memcpy(&counter, &v[1], 8);
    g->key[0] = (uint32_t)key;
    g->key[1] = (uint32_t)(key >> 32);
    g->counter = counter;
    g->stream = (uint32_t)v[2];
    g->used = (int)v[3];
    for (int i = 0; i < 4; i++) g->block[i] = (uint32_t)v[4 + i];
    return 0;
}
