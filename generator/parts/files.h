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

static bool tensor__rfile_open(const char *fn, const char *path, tensor__rfile *f) {
    f->fp = NULL;
    f->mem = NULL;
    f->path = path;
    if (!path) { tensor__null_arg(fn, "path"); return false; }
    f->fp = fopen(path, "rb");
    if (!f->fp) { tensor__fail(fn, "cannot open '%.300s' for reading", path); return false; }
#if defined(_WIN32)
    bool ok = _fseeki64(f->fp, 0, SEEK_END) == 0 && (f->size = _ftelli64(f->fp)) >= 0 && _fseeki64(f->fp, 0, SEEK_SET) == 0;
#else
    bool ok = fseek(f->fp, 0, SEEK_END) == 0 && (f->size = ftell(f->fp)) >= 0 && fseek(f->fp, 0, SEEK_SET) == 0;
#endif
    if (!ok) {
        fclose(f->fp);
        f->fp = NULL;
        tensor__fail(fn, "cannot find the size of '%.300s' (not a regular file?)", path);
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
        tensor__fail(fn, "'%.300s': reading %zu bytes at offset %lld failed", f->path, n, (long long)off);
        return false;
    }
    return true;
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
    if (!w->fp) {
        tensor__fail(fn, "cannot open '%.300s' for writing", w->tmp);
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
        tensor__fail(fn, "writing '%.300s' failed (disk full?)", w->tmp);
    }
}
/* Closes the file and, when everything was written (and ok: the caller's own checks passed),
   renames it to its path; otherwise removes it. 0 or -1. */
static int tensor__wfile_close(const char *fn, tensor__wfile *w, bool ok) {
    if (!w->fp) return -1;
    bool good = ok && !w->failed;
    if (fclose(w->fp) != 0 && good) { tensor__fail(fn, "writing '%.300s' failed (disk full?)", w->tmp); good = false; }
    w->fp = NULL;
#if defined(_WIN32)
    if (good) remove(w->path); /* rename does not replace a file there */
#endif
    if (good && rename(w->tmp, w->path) != 0) { tensor__fail(fn, "cannot rename '%.300s' to '%.300s'", w->tmp, w->path); good = false; }
    if (!good) remove(w->tmp);
    TENSOR_FREE(w->tmp);
    w->tmp = NULL;
    return good ? 0 : -1;
}

/* Writes t's elements in row-major order, little-endian, whatever its layout or device: a contiguous
   CPU tensor straight from its storage, anything else through contiguous chunks. */
static void tensor__wfile_tensor(const char *fn, tensor__wfile *w, tensor *t) {
    size_t es = tensor__dtype_sizes[t->dtype];
    int64_t numel = tensor__numel_of(t->ndim, t->shape);
    if (!numel || w->failed) return;
    if (t->storage->device == TENSOR_CPU && tensor__contiguous(t) && !tensor__big_endian()) {
        tensor__wfile_write(fn, w, tensor__data(t), (size_t)numel * es);
        return;
    }
    tensor *c = tensor__contiguous_copy(fn, t, t->dtype); /* the copy runs on t's device */
    if (!c) { w->failed = true; return; }
    if (c->storage->device != TENSOR_CPU) {
        tensor *h = tensor_to_device(c, TENSOR_CPU);
        tensor_free(c);
        if (!h) { w->failed = true; return; }
        c = h;
    }
    if (tensor__big_endian()) tensor__swap_bytes(tensor__data(c), numel, es);
    tensor__wfile_write(fn, w, tensor__data(c), (size_t)numel * es);
    tensor_free(c);
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
