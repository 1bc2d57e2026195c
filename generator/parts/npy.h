// >>npy ----------------------------------------------------------------------------------------
/* NumPy's .npy (one array: magic "\x93NUMPY", version, header length, a Python dict literal
   {'descr', 'fortran_order', 'shape'} padded to 64 bytes, then the data) and .npz (a zip archive of
   NAME.npy members, stored, or deflated with -DTENSOR_USE_ZLIB). The header parser is a small strict
   reader of exactly the literals NumPy writes (any key order, either quote, trailing commas), capped
   at NumPy's 10,000 bytes; object arrays (pickles) are refused. The zip reader checks every offset
   and size against the file before it reads or allocates, takes sizes from the central directory
   (ZIP64 included), and verifies each member's CRC-32. tensor__npy_parse and tensor__npz_parse work
   on any tensor__rfile, so the fuzzers feed them memory. */
#ifdef TENSOR_USE_ZLIB
#ifdef __cplusplus
} /* system headers outside extern "C" */
#endif
#include <zlib.h>
#ifdef __cplusplus
extern "C" {
#endif
#endif

/* Member sizes and offsets at or above this take ZIP64 fields (tests build with a smaller one). */
#ifndef TENSOR__ZIP64_LIMIT
#define TENSOR__ZIP64_LIMIT 0xFFFFFFFFull
#endif
#define TENSOR__NPY_MAX_HEADER 10000 /* NumPy's default max_header_size */

/* CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), as zip stores it. */
static const uint32_t tensor__crc32_table[256] = {
    0x00000000, 0x77073096, 0xee0e612c, 0x990951ba, 0x076dc419, 0x706af48f, 0xe963a535, 0x9e6495a3,
    0x0edb8832, 0x79dcb8a4, 0xe0d5e91e, 0x97d2d988, 0x09b64c2b, 0x7eb17cbd, 0xe7b82d07, 0x90bf1d91,
    0x1db71064, 0x6ab020f2, 0xf3b97148, 0x84be41de, 0x1adad47d, 0x6ddde4eb, 0xf4d4b551, 0x83d385c7,
    0x136c9856, 0x646ba8c0, 0xfd62f97a, 0x8a65c9ec, 0x14015c4f, 0x63066cd9, 0xfa0f3d63, 0x8d080df5,
    0x3b6e20c8, 0x4c69105e, 0xd56041e4, 0xa2677172, 0x3c03e4d1, 0x4b04d447, 0xd20d85fd, 0xa50ab56b,
    0x35b5a8fa, 0x42b2986c, 0xdbbbc9d6, 0xacbcf940, 0x32d86ce3, 0x45df5c75, 0xdcd60dcf, 0xabd13d59,
    0x26d930ac, 0x51de003a, 0xc8d75180, 0xbfd06116, 0x21b4f4b5, 0x56b3c423, 0xcfba9599, 0xb8bda50f,
    0x2802b89e, 0x5f058808, 0xc60cd9b2, 0xb10be924, 0x2f6f7c87, 0x58684c11, 0xc1611dab, 0xb6662d3d,
    0x76dc4190, 0x01db7106, 0x98d220bc, 0xefd5102a, 0x71b18589, 0x06b6b51f, 0x9fbfe4a5, 0xe8b8d433,
    0x7807c9a2, 0x0f00f934, 0x9609a88e, 0xe10e9818, 0x7f6a0dbb, 0x086d3d2d, 0x91646c97, 0xe6635c01,
    0x6b6b51f4, 0x1c6c6162, 0x856530d8, 0xf262004e, 0x6c0695ed, 0x1b01a57b, 0x8208f4c1, 0xf50fc457,
    0x65b0d9c6, 0x12b7e950, 0x8bbeb8ea, 0xfcb9887c, 0x62dd1ddf, 0x15da2d49, 0x8cd37cf3, 0xfbd44c65,
    0x4db26158, 0x3ab551ce, 0xa3bc0074, 0xd4bb30e2, 0x4adfa541, 0x3dd895d7, 0xa4d1c46d, 0xd3d6f4fb,
    0x4369e96a, 0x346ed9fc, 0xad678846, 0xda60b8d0, 0x44042d73, 0x33031de5, 0xaa0a4c5f, 0xdd0d7cc9,
    0x5005713c, 0x270241aa, 0xbe0b1010, 0xc90c2086, 0x5768b525, 0x206f85b3, 0xb966d409, 0xce61e49f,
    0x5edef90e, 0x29d9c998, 0xb0d09822, 0xc7d7a8b4, 0x59b33d17, 0x2eb40d81, 0xb7bd5c3b, 0xc0ba6cad,
    0xedb88320, 0x9abfb3b6, 0x03b6e20c, 0x74b1d29a, 0xead54739, 0x9dd277af, 0x04db2615, 0x73dc1683,
    0xe3630b12, 0x94643b84, 0x0d6d6a3e, 0x7a6a5aa8, 0xe40ecf0b, 0x9309ff9d, 0x0a00ae27, 0x7d079eb1,
    0xf00f9344, 0x8708a3d2, 0x1e01f268, 0x6906c2fe, 0xf762575d, 0x806567cb, 0x196c3671, 0x6e6b06e7,
    0xfed41b76, 0x89d32be0, 0x10da7a5a, 0x67dd4acc, 0xf9b9df6f, 0x8ebeeff9, 0x17b7be43, 0x60b08ed5,
    0xd6d6a3e8, 0xa1d1937e, 0x38d8c2c4, 0x4fdff252, 0xd1bb67f1, 0xa6bc5767, 0x3fb506dd, 0x48b2364b,
    0xd80d2bda, 0xaf0a1b4c, 0x36034af6, 0x41047a60, 0xdf60efc3, 0xa867df55, 0x316e8eef, 0x4669be79,
    0xcb61b38c, 0xbc66831a, 0x256fd2a0, 0x5268e236, 0xcc0c7795, 0xbb0b4703, 0x220216b9, 0x5505262f,
    0xc5ba3bbe, 0xb2bd0b28, 0x2bb45a92, 0x5cb36a04, 0xc2d7ffa7, 0xb5d0cf31, 0x2cd99e8b, 0x5bdeae1d,
    0x9b64c2b0, 0xec63f226, 0x756aa39c, 0x026d930a, 0x9c0906a9, 0xeb0e363f, 0x72076785, 0x05005713,
    0x95bf4a82, 0xe2b87a14, 0x7bb12bae, 0x0cb61b38, 0x92d28e9b, 0xe5d5be0d, 0x7cdcefb7, 0x0bdbdf21,
    0x86d3d2d4, 0xf1d4e242, 0x68ddb3f8, 0x1fda836e, 0x81be16cd, 0xf6b9265b, 0x6fb077e1, 0x18b74777,
    0x88085ae6, 0xff0f6a70, 0x66063bca, 0x11010b5c, 0x8f659eff, 0xf862ae69, 0x616bffd3, 0x166ccf45,
    0xa00ae278, 0xd70dd2ee, 0x4e048354, 0x3903b3c2, 0xa7672661, 0xd06016f7, 0x4969474d, 0x3e6e77db,
    0xaed16a4a, 0xd9d65adc, 0x40df0b66, 0x37d83bf0, 0xa9bcae53, 0xdebb9ec5, 0x47b2cf7f, 0x30b5ffe9,
    0xbdbdf21c, 0xcabac28a, 0x53b39330, 0x24b4a3a6, 0xbad03605, 0xcdd70693, 0x54de5729, 0x23d967bf,
    0xb3667a2e, 0xc4614ab8, 0x5d681b02, 0x2a6f2b94, 0xb40bbe37, 0xc30c8ea1, 0x5a05df1b, 0x2d02ef8d,
};
static uint32_t tensor__crc32(uint32_t crc, const void *p, size_t n) {
    const unsigned char *b = (const unsigned char *)p;
    crc = ~crc;
    for (size_t i = 0; i < n; i++) crc = tensor__crc32_table[(crc ^ b[i]) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

// >>npy-header ---------------------------------------------------------------------------------
/* The header dict: a cursor over its bytes, and the first problem found (with where). */
typedef struct {
    const char *s;
    size_t n, i;
    const char *fn, *path;
    bool failed, py2; /* py2: versions 1.0 and 2.0 may hold Python 2 longs such as 3L (NumPy drops the L) */
} tensor__npy_lex;

static bool tensor__npy_bad(tensor__npy_lex *x, const char *what) {
    size_t n = x->n; /* the header quoted without its padding, up to 120 bytes */
    while (n && (x->s[n - 1] == ' ' || x->s[n - 1] == '\n')) n--;
    if (!x->failed)
        tensor__fail(x->fn, "'%.300s': bad .npy header: %s at byte %zu of \"%.*s%s\"", x->path, what, x->i, (int)(n < 120 ? n : 120), x->s, n > 120 ? "..." : "");
    x->failed = true;
    return false;
}
static void tensor__npy_ws(tensor__npy_lex *x) {
    while (x->i < x->n && (x->s[x->i] == ' ' || x->s[x->i] == '\t' || x->s[x->i] == '\n' || x->s[x->i] == '\r' || x->s[x->i] == '\f' || x->s[x->i] == '\v')) x->i++;
}
/* Skips blanks, then consumes c if it is next. */
static bool tensor__npy_eat(tensor__npy_lex *x, char c) {
    tensor__npy_ws(x);
    if (x->i < x->n && x->s[x->i] == c) { x->i++; return true; }
    return false;
}
/* A quoted string of printable ASCII without escapes, into out[cap]. */
static bool tensor__npy_string(tensor__npy_lex *x, char *out, size_t cap) {
    tensor__npy_ws(x);
    if (x->i >= x->n || (x->s[x->i] != '\'' && x->s[x->i] != '"')) return tensor__npy_bad(x, "expected a quoted string");
    char q = x->s[x->i++];
    size_t k = 0;
    for (;; x->i++) {
        if (x->i >= x->n) return tensor__npy_bad(x, "unterminated string");
        char c = x->s[x->i];
        if (c == q) break;
        if (c == '\\') return tensor__npy_bad(x, "escape sequences are not supported in strings");
        if ((unsigned char)c < 0x20 || (unsigned char)c > 0x7E) return tensor__npy_bad(x, "unexpected character in a string");
        if (k + 1 >= cap) return tensor__npy_bad(x, "string too long");
        out[k++] = c;
    }
    x->i++;
    out[k] = 0;
    return true;
}
static bool tensor__npy_word(tensor__npy_lex *x, const char *w) {
    size_t n = strlen(w);
    if (x->n - x->i < n || memcmp(x->s + x->i, w, n)) return false;
    if (x->i + n < x->n) {
        char c = x->s[x->i + n];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_') return false;
    }
    x->i += n;
    return true;
}
/* shape: a tuple of non-negative ints, (), (3,), (3, 4) or (3, 4,). */
static bool tensor__npy_shape(tensor__npy_lex *x, int *ndim, int64_t *shape) {
    *ndim = 0;
    if (!tensor__npy_eat(x, '(')) return tensor__npy_bad(x, "'shape' must be a tuple such as (3, 4), (3,) or ()");
    if (tensor__npy_eat(x, ')')) return true;
    for (;;) {
        tensor__npy_ws(x);
        bool neg = x->i < x->n && x->s[x->i] == '-';
        if (neg) { x->i++; tensor__npy_ws(x); }
        size_t start = x->i;
        uint64_t v = 0;
        bool big = false;
        while (x->i < x->n && x->s[x->i] >= '0' && x->s[x->i] <= '9') {
            unsigned d = (unsigned)(x->s[x->i++] - '0');
            if (v > ((uint64_t)INT64_MAX - d) / 10) big = true;
            else v = v * 10 + d;
        }
        if (x->i == start) return tensor__npy_bad(x, "expected an integer in 'shape'");
        size_t digits = x->i - start;
        if (x->py2 && x->i < x->n && x->s[x->i] == 'L') x->i++;
        if (digits > 1 && x->s[start] == '0') return tensor__npy_bad(x, "an integer with a leading zero in 'shape'");
        if (neg && (v || big)) return tensor__npy_bad(x, "negative dimension in 'shape'");
        if (big) return tensor__npy_bad(x, "dimension in 'shape' is too large");
        if (*ndim == TENSOR_MAX_DIMS) return tensor__npy_bad(x, "'shape' has more than 8 dimensions (TENSOR_MAX_DIMS)");
        shape[(*ndim)++] = (int64_t)v;
        if (tensor__npy_eat(x, ',')) {
            if (tensor__npy_eat(x, ')')) return true;
            continue;
        }
        if (tensor__npy_eat(x, ')')) {
            if (*ndim == 1) return tensor__npy_bad(x, "'shape' (n) is not a tuple: a 1-d shape is written (n,)");
            return true;
        }
        return tensor__npy_bad(x, "expected ',' or ')' in 'shape'");
    }
}

/* The dtype of a descr, and whether its bytes need swapping on this host; -1 with an error. */
static int tensor__npy_dtype(tensor__npy_lex *x, const char *descr, bool *swap) {
    static const char *const codes[7] = {"b1", "u1", "i4", "i8", "f2", "f4", "f8"};
    static const tensor_dtype dts[7] = {TENSOR_BOOL, TENSOR_U8, TENSOR_I32, TENSOR_I64, TENSOR_F16, TENSOR_F32, TENSOR_F64};
    char o = descr[0];
    if ((o == '|' || o == '<' || o == '>' || o == '=') && descr[1] == 'O') {
        tensor__fail(x->fn, "'%.300s': object arrays (descr '%.40s') hold Python pickles and are not supported", x->path, descr);
        return -1;
    }
    if (o == '<' || o == '>' || o == '=' || o == '|')
        for (int k = 0; k < 7; k++) {
            if (strcmp(descr + 1, codes[k])) continue;
            if (o == '|' && tensor__dtype_sizes[dts[k]] > 1) break; /* '|' (no byte order) only for single bytes */
            *swap = tensor__dtype_sizes[dts[k]] > 1 && ((o == '>' && !tensor__big_endian()) || (o == '<' && tensor__big_endian()));
            return (int)dts[k];
        }
    tensor__fail(x->fn, "'%.300s': unsupported descr '%.40s': tensor.h reads |b1, |u1, <i4, <i8, <f2, <f4, <f8 (and their '>' and '=' forms)", x->path, descr);
    return -1;
}

typedef struct {
    tensor_dtype dtype;
    bool swap, fortran;
    int ndim;
    int64_t shape[TENSOR_MAX_DIMS];
} tensor__npy_info;

/* Parses the header dict s[0..n): exactly the keys descr, fortran_order and shape, in any order. */
static bool tensor__npy_dict(const char *fn, const char *path, const char *s, size_t n, bool py2, tensor__npy_info *info) {
    tensor__npy_lex x;
    x.s = s; x.n = n; x.i = 0; x.fn = fn; x.path = path; x.failed = false; x.py2 = py2;
    bool seen[3] = {false, false, false};
    char key[32], descr[48];
    if (!tensor__npy_eat(&x, '{')) return tensor__npy_bad(&x, "expected '{'");
    while (!tensor__npy_eat(&x, '}')) {
        if (!tensor__npy_string(&x, key, sizeof key)) return false;
        if (!tensor__npy_eat(&x, ':')) return tensor__npy_bad(&x, "expected ':' after a key");
        int k = !strcmp(key, "descr") ? 0 : !strcmp(key, "fortran_order") ? 1 : !strcmp(key, "shape") ? 2 : -1;
        if (k < 0) return tensor__npy_bad(&x, "unknown key (the keys are 'descr', 'fortran_order' and 'shape')");
        if (seen[k]) return tensor__npy_bad(&x, "duplicate key");
        seen[k] = true;
        tensor__npy_ws(&x);
        if (k == 0) {
            if (x.i < x.n && (x.s[x.i] == '[' || x.s[x.i] == '{')) return tensor__npy_bad(&x, "structured dtypes are not supported");
            if (!tensor__npy_string(&x, descr, sizeof descr)) return false;
        } else if (k == 1) {
            if (tensor__npy_word(&x, "True")) info->fortran = true;
            else if (tensor__npy_word(&x, "False")) info->fortran = false;
            else return tensor__npy_bad(&x, "'fortran_order' must be True or False");
        } else if (!tensor__npy_shape(&x, &info->ndim, info->shape)) {
            return false;
        }
        if (tensor__npy_eat(&x, ',')) continue;
        if (tensor__npy_eat(&x, '}')) break;
        return tensor__npy_bad(&x, "expected ',' or '}'");
    }
    tensor__npy_ws(&x);
    if (x.i != x.n) return tensor__npy_bad(&x, "unexpected text after the dict");
    if (!seen[0] || !seen[1] || !seen[2]) {
        tensor__fail(fn, "'%.300s': bad .npy header: missing key '%s'", path, !seen[0] ? "descr" : !seen[1] ? "fortran_order" : "shape");
        return false;
    }
    int dt = tensor__npy_dtype(&x, descr, &info->swap);
    if (dt < 0) return false;
    info->dtype = (tensor_dtype)dt;
    return true;
}

// >>npy-read -----------------------------------------------------------------------------------
/* The .npy occupying [off, off + len) of f. */
static tensor *tensor__npy_parse(const char *fn, tensor__rfile *f, int64_t off, int64_t len) {
    unsigned char pre[12];
    if (off < 0 || len < 0 || off > f->size || len > f->size - off) return tensor__fail(fn, "'%.300s': .npy range runs past the end of the file", f->path);
    if (len < 10) return tensor__fail(fn, "'%.300s': %lld bytes is too short for a .npy file", f->path, (long long)len);
    if (!tensor__rfile_read(fn, f, off, pre, 10)) return NULL;
    if (memcmp(pre, "\x93NUMPY", 6)) return tensor__fail(fn, "'%.300s': not a .npy file (bad magic)", f->path);
    int major = pre[6], minor = pre[7];
    if (major < 1 || major > 3 || minor != 0) return tensor__fail(fn, "'%.300s': unsupported .npy version %d.%d (1.0, 2.0 and 3.0 are)", f->path, major, minor);
    int64_t pos = 10;
    uint64_t hlen = tensor__le16(pre + 8);
    if (major > 1) {
        if (len < 12) return tensor__fail(fn, "'%.300s': %lld bytes is too short for a version %d.0 .npy file", f->path, (long long)len, major);
        if (!tensor__rfile_read(fn, f, off + 10, pre + 10, 2)) return NULL;
        hlen = tensor__le32(pre + 8);
        pos = 12;
    }
    if (hlen > TENSOR__NPY_MAX_HEADER)
        return tensor__fail(fn, "'%.300s': .npy header of %llu bytes is longer than NumPy's limit of %d", f->path, (unsigned long long)hlen, TENSOR__NPY_MAX_HEADER);
    if ((int64_t)hlen > len - pos)
        return tensor__fail(fn, "'%.300s': .npy header of %llu bytes runs past the end of the file (%lld bytes)", f->path, (unsigned long long)hlen, (long long)len);
    char *h = (char *)TENSOR__MALLOC((size_t)hlen + 1);
    if (!h) return tensor__fail(fn, "out of memory");
    if (!tensor__rfile_read(fn, f, off + pos, h, (size_t)hlen)) { TENSOR_FREE(h); return NULL; }
    h[hlen] = 0;
    size_t bad;
    tensor__npy_info info;
    memset(&info, 0, sizeof info);
    bool ok = true;
    if (major == 3 && !tensor__utf8_valid((const unsigned char *)h, (size_t)hlen, &bad)) {
        tensor__fail(fn, "'%.300s': .npy 3.0 header is not valid UTF-8 (byte %zu)", f->path, bad);
        ok = false;
    }
    if (ok && memchr(h, 0, (size_t)hlen)) {
        tensor__fail(fn, "'%.300s': bad .npy header: it contains a NUL byte", f->path);
        ok = false;
    }
    ok = ok && tensor__npy_dict(fn, f->path, h, (size_t)hlen, major < 3, &info);
    TENSOR_FREE(h);
    if (!ok) return NULL;
    pos += (int64_t)hlen;

    /* the shape's element count and strides must not overflow; the data must fill the rest exactly */
    int64_t extent = 1, numel = 1, need;
    char b[200];
    for (int i = 0; i < info.ndim && extent >= 0; i++) {
        if (!tensor__size_mul(extent, info.shape[i] > 1 ? info.shape[i] : 1, &extent)) extent = -1;
        else numel *= info.shape[i];
    }
    if (extent < 0)
        return tensor__fail(fn, "'%.300s': .npy shape %s is too large (its element count overflows)", f->path, tensor__shape_str(b, sizeof b, info.ndim, info.shape));
    size_t es = tensor__dtype_sizes[info.dtype];
    need = numel * (int64_t)es; /* numel <= 2^60, es <= 8 */
    if (len - pos < need)
        return tensor__fail(fn, "'%.300s': .npy data holds %lld bytes, shape %s of %s needs %lld", f->path, (long long)(len - pos),
                            tensor__shape_str(b, sizeof b, info.ndim, info.shape), tensor__dtype_names[info.dtype], (long long)need);
    if (len - pos > need)
        return tensor__fail(fn, "'%.300s': %lld bytes of trailing data after the .npy array (shape %s of %s)", f->path, (long long)(len - pos - need),
                            tensor__shape_str(b, sizeof b, info.ndim, info.shape), tensor__dtype_names[info.dtype]);

    /* Fortran order: the data is the C-order array of the reversed shape, transposed back below */
    bool fortran = info.fortran && info.ndim > 1 && numel > 0;
    int64_t rshape[TENSOR_MAX_DIMS];
    for (int i = 0; i < info.ndim; i++) rshape[i] = fortran ? info.shape[info.ndim - 1 - i] : info.shape[i];
    tensor *t = tensor__new(fn, info.ndim, rshape, info.dtype, TENSOR_CPU);
    if (!t) return NULL;
    char *data = tensor__data(t);
    if (!tensor__rfile_read(fn, f, off + pos, data, (size_t)need)) { tensor_free(t); return NULL; }
    if (info.swap) tensor__swap_bytes(data, numel, es);
    if (info.dtype == TENSOR_BOOL)
        for (int64_t i = 0; i < numel; i++) data[i] = data[i] != 0;
    if (fortran) {
        int dims[TENSOR_MAX_DIMS];
        for (int i = 0; i < info.ndim; i++) dims[i] = info.ndim - 1 - i;
        tensor *p = tensor_permute(t, info.ndim, dims);
        tensor *c = p ? tensor_contiguous(p) : NULL;
        tensor_free(p);
        tensor_free(t);
        t = c;
    }
    return t;
}

TENSOR_API tensor *tensor_load_npy(const char *path) {
    const char *fn = "tensor_load_npy";
    tensor__rfile f;
    if (!tensor__rfile_open(fn, path, &f)) return NULL;
    int kind = tensor__file_kind(&f);
    tensor *t = kind == TENSOR__FILE_SAFETENSORS || kind == TENSOR__FILE_NPZ
                    ? tensor__fail(fn, "'%.300s' is not a .npy file: it looks like %s", path, tensor__file_kind_hints[kind])
                    : tensor__npy_parse(fn, &f, 0, f.size);
    tensor__rfile_close(&f);
    return t;
}

// >>npy-write ----------------------------------------------------------------------------------
/* The preamble NumPy (>= 1.23) writes for t: magic, version, length, the dict with 21 - digits
   spaces of room to grow the first dim, padded with spaces and '\n' to a multiple of 64. Its
   length in buf[cap], or -1 with an error (bfloat16 has no NumPy dtype). */
static int tensor__npy_header(const char *fn, const char *path, const tensor *t, char *buf, size_t cap) {
    static const char *const descrs[TENSOR_DTYPE_COUNT] = {"<f4", "<f8", "<f2", NULL, "<i4", "<i8", "|u1", "|b1"};
    const char *descr = descrs[t->dtype];
    if (!descr) {
        tensor__fail(fn, "'%.300s': %s has no NumPy dtype: convert it first (tensor_to_dtype(t, TENSOR_F32))", path ? path : "", tensor__dtype_names[t->dtype]);
        return -1;
    }
    char d[400];
    int n = snprintf(d, sizeof d, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int i = 0; i < t->ndim; i++) n += snprintf(d + n, sizeof d - (size_t)n, i ? ", %lld" : "%lld", (long long)t->shape[i]);
    n += snprintf(d + n, sizeof d - (size_t)n, "%s), }", t->ndim == 1 ? "," : "");
    if (t->ndim > 0) {
        int digits = snprintf(NULL, 0, "%lld", (long long)t->shape[0]);
        for (int i = digits; i < 21; i++) d[n++] = ' ';
    }
    size_t hlen = (size_t)n + 1, lenbytes = 2;
    size_t pad = 64 - (8 + lenbytes + hlen) % 64;
    if (hlen + pad > 65535) { lenbytes = 4; pad = 64 - (8 + lenbytes + hlen) % 64; }
    size_t total = 8 + lenbytes + hlen + pad;
    if (total > cap) { tensor__fail(fn, ".npy header too long"); return -1; }
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = lenbytes == 2 ? 1 : 2;
    buf[7] = 0;
    tensor__put_le((unsigned char *)buf + 8, hlen + pad, (int)lenbytes);
    memcpy(buf + 8 + lenbytes, d, (size_t)n);
    memset(buf + 8 + lenbytes + n, ' ', pad);
    buf[total - 1] = '\n';
    return (int)total;
}

TENSOR_API int tensor_save_npy(const char *path, tensor *t) {
    const char *fn = "tensor_save_npy";
    if (!path) { tensor__null_arg(fn, "path"); return -1; }
    if (!t) { tensor__null_arg(fn, "t"); return -1; }
    char hdr[512];
    int hn = tensor__npy_header(fn, path, t, hdr, sizeof hdr);
    if (hn < 0) return -1;
    tensor__wfile w;
    if (!tensor__wfile_open(fn, path, &w)) return -1;
    tensor__wfile_write(fn, &w, hdr, (size_t)hn);
    tensor__wfile_tensor(fn, &w, t);
    return tensor__wfile_close(fn, &w, true);
}

// >>npz-read -----------------------------------------------------------------------------------
#define TENSOR__ZIP_CHUNK 65536

/* CRC-32 of [off, off + n) of f, read in chunks through buf[TENSOR__ZIP_CHUNK]. */
static bool tensor__zip_crc_range(const char *fn, tensor__rfile *f, int64_t off, int64_t n, unsigned char *buf, uint32_t *crc) {
    uint32_t c = 0;
    while (n > 0) {
        size_t k = n < TENSOR__ZIP_CHUNK ? (size_t)n : TENSOR__ZIP_CHUNK;
        if (!tensor__rfile_read(fn, f, off, buf, k)) return false;
        c = tensor__crc32(c, buf, k);
        off += (int64_t)k;
        n -= (int64_t)k;
    }
    *crc = c;
    return true;
}

#ifdef TENSOR_USE_ZLIB
/* Inflates the raw deflate stream [off, off + csize) of f into out[usize]; it must end exactly there
   and produce exactly usize bytes. */
static bool tensor__zip_inflate(const char *fn, tensor__rfile *f, const char *what, int64_t off, int64_t csize, unsigned char *out, int64_t usize,
                                unsigned char *buf) {
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, -15) != Z_OK) { tensor__fail(fn, "'%.300s': zlib's inflateInit2 failed", what); return false; }
    int64_t in_done = 0, out_done = 0;
    const char *err = NULL;
    for (;;) {
        if (zs.avail_in == 0 && in_done < csize) {
            size_t k = csize - in_done < TENSOR__ZIP_CHUNK ? (size_t)(csize - in_done) : TENSOR__ZIP_CHUNK;
            if (!tensor__rfile_read(fn, f, off + in_done, buf, k)) { inflateEnd(&zs); return false; }
            zs.next_in = buf;
            zs.avail_in = (uInt)k;
            in_done += (int64_t)k;
        }
        if (zs.avail_out == 0) {
            int64_t k = usize - out_done < ((int64_t)1 << 30) ? usize - out_done : ((int64_t)1 << 30);
            zs.next_out = out + out_done;
            zs.avail_out = (uInt)k;
            out_done += k;
        }
        int rc = inflate(&zs, Z_NO_FLUSH);
        if (rc == Z_STREAM_END) break;
        if (rc == Z_OK) continue;
        if (rc == Z_BUF_ERROR && zs.avail_in == 0 && in_done == csize) err = "the compressed data ends early";
        else if (rc == Z_BUF_ERROR) err = "it inflates to more bytes than its declared size";
        else err = "the compressed data is corrupt";
        break;
    }
    if (!err && out_done - (int64_t)zs.avail_out != usize) err = "it inflates to fewer bytes than its declared size";
    if (!err && (zs.avail_in != 0 || in_done != csize)) err = "bytes follow the end of its compressed data";
    inflateEnd(&zs);
    if (err) tensor__fail(fn, "'%.300s': deflated member: %s", what, err);
    return !err;
}
#endif

/* One central directory entry, its ZIP64 fields applied. */
typedef struct {
    uint32_t flags, method, crc, nlen;
    uint64_t csize, usize, local;
    const unsigned char *name;
} tensor__zip_entry;

/* The ZIP64 extended information field of extra[0..n): each of usize, csize, local (and the disk)
   is there when its 32-bit field holds the 0xFFFFFFFF marker. */
static bool tensor__zip64_extra(const unsigned char *x, size_t n, tensor__zip_entry *e, uint32_t disk) {
    bool need = e->usize == 0xFFFFFFFFu || e->csize == 0xFFFFFFFFu || e->local == 0xFFFFFFFFu || disk == 0xFFFF;
    size_t i = 0;
    while (i + 4 <= n) {
        uint32_t id = tensor__le16(x + i), sz = tensor__le16(x + i + 2);
        if (sz > n - i - 4) return false;
        if (id == 1) {
            const unsigned char *p = x + i + 4;
            size_t left = sz;
            uint64_t *fields[3] = {&e->usize, &e->csize, &e->local};
            for (int k = 0; k < 3; k++) {
                if (*fields[k] != 0xFFFFFFFFu) continue;
                if (left < 8) return false;
                *fields[k] = tensor__le64(p);
                p += 8;
                left -= 8;
            }
            return true;
        }
        i += 4 + sz;
    }
    return !need;
}

static tensor_dict *tensor__npz_parse(const char *fn, tensor__rfile *f) {
    const int64_t size = f->size;
    if (size < 22) return (tensor_dict *)tensor__fail(fn, "'%.300s': %lld bytes is too short for a zip archive (.npz)", f->path, (long long)size);
    /* the end of central directory record: the last signature whose comment ends the file */
    size_t tail = size < 22 + 65535 ? (size_t)size : 22 + 65535;
    /* the CRC's chunks are never longer than the file: a small file gets a small buffer */
    size_t chunk = size < TENSOR__ZIP_CHUNK ? (size_t)size : TENSOR__ZIP_CHUNK;
    unsigned char *buf = (unsigned char *)TENSOR__MALLOC(tail > chunk ? tail : chunk);
    if (!buf) return (tensor_dict *)tensor__fail(fn, "out of memory");
    unsigned char *cd = NULL, *out = NULL;
    char *what = NULL, *key = NULL;
    tensor_dict *d = NULL;
    int64_t eocd = -1;
    unsigned char e[56];
    if (!tensor__rfile_read(fn, f, size - (int64_t)tail, buf, tail)) goto fail;
    for (size_t p = tail - 22 + 1; p-- > 0;)
        if (tensor__le32(buf + p) == 0x06054b50u && p + 22 + tensor__le16(buf + p + 20) == tail) { eocd = size - (int64_t)tail + (int64_t)p; memcpy(e, buf + p, 22); break; }
    if (eocd < 0) {
        int kind = tensor__file_kind(f);
        if (kind == TENSOR__FILE_SAFETENSORS || kind == TENSOR__FILE_NPY) tensor__fail(fn, "'%.300s' is not an .npz file: it looks like %s", f->path, tensor__file_kind_hints[kind]);
        else tensor__fail(fn, "'%.300s': not a zip archive (.npz): no end of central directory record", f->path);
        goto fail;
    }
    {
        uint64_t disk = tensor__le16(e + 4), cd_disk = tensor__le16(e + 6), n_disk = tensor__le16(e + 8), n = tensor__le16(e + 10);
        uint64_t cd_size = tensor__le32(e + 12), cd_off = tensor__le32(e + 16);
        int64_t cd_limit = eocd; /* the central directory ends before the records that follow it */
        unsigned char loc[20];
        if (eocd >= 20 && tensor__rfile_read(fn, f, eocd - 20, loc, 20) && tensor__le32(loc) == 0x07064b50u) {
            uint64_t z = tensor__le64(loc + 8);
            if (z > (uint64_t)(eocd - 20) || eocd - 20 - (int64_t)z < 56) { tensor__fail(fn, "'%.300s': zip: the ZIP64 end of central directory record is out of place", f->path); goto fail; }
            if (!tensor__rfile_read(fn, f, (int64_t)z, e, 56)) goto fail;
            if (tensor__le32(e) != 0x06064b50u) { tensor__fail(fn, "'%.300s': zip: bad ZIP64 end of central directory record", f->path); goto fail; }
            disk = tensor__le32(e + 16); cd_disk = tensor__le32(e + 20); n_disk = tensor__le64(e + 24); n = tensor__le64(e + 32);
            cd_size = tensor__le64(e + 40); cd_off = tensor__le64(e + 48);
            cd_limit = (int64_t)z;
        }
        if (disk || cd_disk || n_disk != n) { tensor__fail(fn, "'%.300s': zip: multi-disk archives are not supported", f->path); goto fail; }
        if (cd_off > (uint64_t)cd_limit || cd_size > (uint64_t)cd_limit - cd_off) {
            tensor__fail(fn, "'%.300s': zip: the central directory (%llu bytes at offset %llu) runs past its end (%lld)", f->path, (unsigned long long)cd_size,
                         (unsigned long long)cd_off, (long long)cd_limit);
            goto fail;
        }
        if (n > cd_size / 46) {
            tensor__fail(fn, "'%.300s': zip: a central directory of %llu bytes cannot hold %llu entries (truncated?)", f->path, (unsigned long long)cd_size, (unsigned long long)n);
            goto fail;
        }
        if (cd_size > SIZE_MAX / 2) { tensor__fail(fn, "'%.300s': zip: the central directory is too large for this machine", f->path); goto fail; }
        cd = (unsigned char *)TENSOR__MALLOC(cd_size ? (size_t)cd_size : 1);
        d = tensor_dict_new();
        if (!cd || !d) { tensor__fail(fn, "out of memory"); goto fail; }
        if (!tensor__rfile_read(fn, f, (int64_t)cd_off, cd, (size_t)cd_size)) goto fail;
        size_t pos = 0;
        for (uint64_t i = 0; i < n; i++) {
            tensor__zip_entry z;
            const unsigned char *c = cd + pos;
            if (cd_size - pos < 46 || tensor__le32(c) != 0x02014b50u) { tensor__fail(fn, "'%.300s': zip: central directory entry %llu is truncated or corrupt", f->path, (unsigned long long)i); goto fail; }
            z.flags = tensor__le16(c + 8); z.method = tensor__le16(c + 10); z.crc = tensor__le32(c + 16);
            z.csize = tensor__le32(c + 20); z.usize = tensor__le32(c + 24); z.nlen = tensor__le16(c + 28);
            size_t xlen = tensor__le16(c + 30), clen = tensor__le16(c + 32);
            uint32_t edisk = tensor__le16(c + 34);
            z.local = tensor__le32(c + 42);
            z.name = c + 46;
            if (cd_size - pos - 46 < z.nlen + xlen + clen) { tensor__fail(fn, "'%.300s': zip: central directory entry %llu runs past the directory's end", f->path, (unsigned long long)i); goto fail; }
            pos += 46 + z.nlen + xlen + clen;
            /* the name: UTF-8, no NUL, not a directory; its key drops ".npy" */
            size_t bad;
            if (!z.nlen || memchr(z.name, 0, z.nlen) || !tensor__utf8_valid(z.name, z.nlen, &bad)) {
                tensor__fail(fn, "'%.300s': zip: member %llu has an empty name, or one that is not valid UTF-8", f->path, (unsigned long long)i);
                goto fail;
            }
            if (what) TENSOR_FREE(what);
            size_t plen = strlen(f->path);
            what = (char *)TENSOR__MALLOC(plen + z.nlen + 3);
            if (!what) { tensor__fail(fn, "out of memory"); goto fail; }
            memcpy(what, f->path, plen);
            what[plen] = '[';
            memcpy(what + plen + 1, z.name, z.nlen);
            what[plen + 1 + z.nlen] = ']';
            what[plen + 2 + z.nlen] = 0;
            if (z.name[z.nlen - 1] == '/') { tensor__fail(fn, "'%.300s': zip: member is a directory", what); goto fail; }
            if (z.flags & 0x41) { tensor__fail(fn, "'%.300s': zip: member is encrypted", what); goto fail; }
            if (z.method != 0 && z.method != 8) { tensor__fail(fn, "'%.300s': zip: compression method %u is not supported (stored and deflate are)", what, (unsigned)z.method); goto fail; }
            if (!tensor__zip64_extra(c + 46 + z.nlen, xlen, &z, edisk) || (edisk && edisk != 0xFFFF)) {
                tensor__fail(fn, "'%.300s': zip: bad or missing ZIP64 extra field", what);
                goto fail;
            }
            /* the local header: same name; the data follows it and its extra field */
            unsigned char lh[30];
            if (z.local > (uint64_t)size || size - (int64_t)z.local < 30) { tensor__fail(fn, "'%.300s': zip: the local header's offset %llu runs past the end of the file", what, (unsigned long long)z.local); goto fail; }
            if (!tensor__rfile_read(fn, f, (int64_t)z.local, lh, 30)) goto fail;
            if (tensor__le32(lh) != 0x04034b50u || tensor__le16(lh + 26) != z.nlen) { tensor__fail(fn, "'%.300s': zip: bad local header", what); goto fail; }
            if (tensor__le16(lh + 8) != z.method || (tensor__le16(lh + 6) & 0x41)) { tensor__fail(fn, "'%.300s': zip: the local header disagrees with the central directory", what); goto fail; }
            int64_t data = (int64_t)z.local + 30, lx = tensor__le16(lh + 28);
            if (size - data < (int64_t)z.nlen + lx) { tensor__fail(fn, "'%.300s': zip: the local header runs past the end of the file", what); goto fail; }
            if (!tensor__rfile_read(fn, f, data, buf, z.nlen)) goto fail;
            if (memcmp(buf, z.name, z.nlen)) { tensor__fail(fn, "'%.300s': zip: the local header names another member", what); goto fail; }
            data += (int64_t)z.nlen + lx;
            if (z.csize > (uint64_t)(size - data)) {
                tensor__fail(fn, "'%.300s': zip: %llu bytes of data at offset %lld run past the end of the file (%lld bytes)", what, (unsigned long long)z.csize, (long long)data, (long long)size);
                goto fail;
            }
            if (key) TENSOR_FREE(key);
            key = (char *)TENSOR__MALLOC(z.nlen + 1);
            if (!key) { tensor__fail(fn, "out of memory"); goto fail; }
            memcpy(key, z.name, z.nlen);
            key[z.nlen >= 4 && !memcmp(z.name + z.nlen - 4, ".npy", 4) ? z.nlen - 4 : z.nlen] = 0;
            if (tensor_dict_contains(d, key)) { tensor__fail(fn, "'%.300s': zip: duplicate member '%.200s'", f->path, key); goto fail; }
            uint32_t crc = 0;
            tensor__rfile mf;
            tensor *t = NULL;
            if (z.method == 0) {
                if (z.csize != z.usize) { tensor__fail(fn, "'%.300s': zip: a stored member's sizes differ (%llu, %llu)", what, (unsigned long long)z.csize, (unsigned long long)z.usize); goto fail; }
                if (!tensor__zip_crc_range(fn, f, data, (int64_t)z.csize, buf, &crc)) goto fail;
                if (crc != z.crc) { tensor__fail(fn, "'%.300s': zip: CRC-32 mismatch (stored %08x, computed %08x)", what, (unsigned)z.crc, (unsigned)crc); goto fail; }
                mf = *f;
                mf.path = what;
                t = tensor__npy_parse(fn, &mf, data, (int64_t)z.csize);
            } else {
#ifdef TENSOR_USE_ZLIB
                /* deflate expands at most 1032:1: a larger declared size is a lie, refused before allocating */
                if (z.usize / 1032 > z.csize + 64 || z.usize > (uint64_t)TENSOR__MAX_NUMEL || z.usize > SIZE_MAX / 2) {
                    tensor__fail(fn, "'%.300s': zip: declared size %llu is impossible for %llu compressed bytes", what, (unsigned long long)z.usize, (unsigned long long)z.csize);
                    goto fail;
                }
                out = (unsigned char *)TENSOR__MALLOC(z.usize ? (size_t)z.usize : 1);
                if (!out) { tensor__fail(fn, "out of memory inflating '%.300s'", what); goto fail; }
                if (!tensor__zip_inflate(fn, f, what, data, (int64_t)z.csize, out, (int64_t)z.usize, buf)) goto fail;
                crc = tensor__crc32(0, out, (size_t)z.usize);
                if (crc != z.crc) { tensor__fail(fn, "'%.300s': zip: CRC-32 mismatch (stored %08x, computed %08x)", what, (unsigned)z.crc, (unsigned)crc); goto fail; }
                tensor__rfile_mem(&mf, out, (size_t)z.usize, what);
                t = tensor__npy_parse(fn, &mf, 0, (int64_t)z.usize);
                TENSOR_FREE(out);
                out = NULL;
#else
                tensor__fail(fn, "'%.300s': zip: the member is deflated (numpy.savez_compressed): build with -DTENSOR_USE_ZLIB and link -lz to read it", what);
                goto fail;
#endif
            }
            if (!t) goto fail;
            int rc = tensor__dict_put(fn, d, key, t);
            tensor_free(t);
            if (rc) goto fail;
        }
        if (pos != cd_size) { tensor__fail(fn, "'%.300s': zip: %llu bytes follow the central directory's %llu entries", f->path, (unsigned long long)(cd_size - pos), (unsigned long long)n); goto fail; }
    }
    TENSOR_FREE(buf);
    TENSOR_FREE(cd);
    if (what) TENSOR_FREE(what);
    if (key) TENSOR_FREE(key);
    return d;
fail:
    TENSOR_FREE(buf);
    if (cd) TENSOR_FREE(cd);
    if (out) TENSOR_FREE(out);
    if (what) TENSOR_FREE(what);
    if (key) TENSOR_FREE(key);
    tensor_dict_free(d);
    return NULL;
}

TENSOR_API tensor_dict *tensor_load_npz(const char *path) {
    const char *fn = "tensor_load_npz";
    tensor__rfile f;
    if (!tensor__rfile_open(fn, path, &f)) return NULL;
    tensor_dict *d = tensor__npz_parse(fn, &f);
    tensor__rfile_close(&f);
    return d;
}

// >>npz-write ----------------------------------------------------------------------------------
typedef struct {
    uint64_t offset, size;
    uint32_t crc;
} tensor__zip_out;

/* Stored members NAME.npy, then the central directory and its end record (ZIP64 records and fields
   where a size, offset or count reaches its 32-bit (16-bit) field's limit). DOS time 1980-01-01 00:00. */
TENSOR_API int tensor_save_npz(const char *path, const tensor_dict *d) {
    const char *fn = "tensor_save_npz";
    if (!path) { tensor__null_arg(fn, "path"); return -1; }
    if (!d) { tensor__null_arg(fn, "d"); return -1; }
    char hdr[512];
    for (int i = 0; i < d->n; i++) {
        size_t nl = strlen(d->names[i]), bad;
        if (nl > 65535 - 4) { tensor__fail(fn, "'%.300s': name '%.100s...' is too long for a zip member", path, d->names[i]); return -1; }
        if (!tensor__utf8_valid((const unsigned char *)d->names[i], nl, &bad)) { tensor__fail(fn, "'%.300s': name '%.200s' is not valid UTF-8", path, d->names[i]); return -1; }
        if (tensor__npy_header(fn, path, d->ts[i], hdr, sizeof hdr) < 0) return -1;
    }
    tensor__zip_out *m = (tensor__zip_out *)TENSOR__MALLOC(sizeof(tensor__zip_out) * (size_t)(d->n ? d->n : 1));
    if (!m) { tensor__fail(fn, "out of memory"); return -1; }
    tensor__wfile w;
    if (!tensor__wfile_open(fn, path, &w)) { TENSOR_FREE(m); return -1; }
    const uint64_t lim = TENSOR__ZIP64_LIMIT;
    unsigned char h[46 + 28];
    uint64_t pos = 0;
    bool ok = true;
    for (int i = 0; i < d->n && ok && !w.failed; i++) {
        tensor *t = d->ts[i], *holder;
        int hn = tensor__npy_header(fn, path, t, hdr, sizeof hdr);
        const char *bytes = hn < 0 ? NULL : tensor__bytes_le(fn, t, &holder);
        if (!bytes) { ok = false; break; }
        uint64_t nbytes = (uint64_t)tensor__numel_of(t->ndim, t->shape) * tensor__dtype_sizes[t->dtype];
        size_t nl = strlen(d->names[i]);
        m[i].offset = pos;
        m[i].size = (uint64_t)hn + nbytes;
        m[i].crc = tensor__crc32(tensor__crc32(0, hdr, (size_t)hn), bytes, (size_t)nbytes);
        bool z64 = m[i].size >= lim, utf8 = false;
        for (size_t k = 0; k < nl; k++) utf8 |= (unsigned char)d->names[i][k] >= 0x80;
        memset(h, 0, sizeof h);
        tensor__put_le(h, 0x04034b50u, 4);
        tensor__put_le(h + 4, z64 ? 45 : 20, 2);
        tensor__put_le(h + 6, utf8 ? 0x800 : 0, 2);
        tensor__put_le(h + 12, 0x21, 2); /* 1980-01-01 */
        tensor__put_le(h + 14, m[i].crc, 4);
        tensor__put_le(h + 18, z64 ? 0xFFFFFFFFu : m[i].size, 4);
        tensor__put_le(h + 22, z64 ? 0xFFFFFFFFu : m[i].size, 4);
        tensor__put_le(h + 26, nl + 4, 2);
        tensor__put_le(h + 28, z64 ? 20 : 0, 2);
        tensor__wfile_write(fn, &w, h, 30);
        tensor__wfile_write(fn, &w, d->names[i], nl);
        tensor__wfile_write(fn, &w, ".npy", 4);
        if (z64) {
            tensor__put_le(h, 1, 2);
            tensor__put_le(h + 2, 16, 2);
            tensor__put_le(h + 4, m[i].size, 8);
            tensor__put_le(h + 12, m[i].size, 8);
            tensor__wfile_write(fn, &w, h, 20);
        }
        tensor__wfile_write(fn, &w, hdr, (size_t)hn);
        tensor__wfile_write(fn, &w, bytes, (size_t)nbytes);
        tensor_free(holder);
        pos += 30 + nl + 4 + (z64 ? 20 : 0) + m[i].size;
    }
    uint64_t cd_off = pos;
    for (int i = 0; i < d->n && ok && !w.failed; i++) {
        size_t nl = strlen(d->names[i]);
        bool zs = m[i].size >= lim, zo = m[i].offset >= lim, utf8 = false;
        for (size_t k = 0; k < nl; k++) utf8 |= (unsigned char)d->names[i][k] >= 0x80;
        int xl = (zs || zo) ? 4 + (zs ? 16 : 0) + (zo ? 8 : 0) : 0;
        memset(h, 0, sizeof h);
        tensor__put_le(h, 0x02014b50u, 4);
        tensor__put_le(h + 4, 45, 2);
        tensor__put_le(h + 6, xl ? 45 : 20, 2);
        tensor__put_le(h + 8, utf8 ? 0x800 : 0, 2);
        tensor__put_le(h + 14, 0x21, 2);
        tensor__put_le(h + 16, m[i].crc, 4);
        tensor__put_le(h + 20, zs ? 0xFFFFFFFFu : m[i].size, 4);
        tensor__put_le(h + 24, zs ? 0xFFFFFFFFu : m[i].size, 4);
        tensor__put_le(h + 28, nl + 4, 2);
        tensor__put_le(h + 30, (uint64_t)xl, 2);
        tensor__put_le(h + 42, zo ? 0xFFFFFFFFu : m[i].offset, 4);
        tensor__wfile_write(fn, &w, h, 46);
        tensor__wfile_write(fn, &w, d->names[i], nl);
        tensor__wfile_write(fn, &w, ".npy", 4);
        if (xl) {
            unsigned char *x = h + 46;
            int k = 4;
            tensor__put_le(x, 1, 2);
            tensor__put_le(x + 2, (uint64_t)xl - 4, 2);
            if (zs) { tensor__put_le(x + k, m[i].size, 8); tensor__put_le(x + k + 8, m[i].size, 8); k += 16; }
            if (zo) tensor__put_le(x + k, m[i].offset, 8);
            tensor__wfile_write(fn, &w, x, (size_t)xl);
        }
        pos += 46 + nl + 4 + (uint64_t)xl;
    }
    uint64_t cd_size = pos - cd_off, n = (uint64_t)d->n;
    bool z64 = n >= 0xFFFF || cd_off >= lim || cd_size >= lim;
    if (ok && z64) {
        unsigned char r[56 + 20];
        memset(r, 0, sizeof r);
        tensor__put_le(r, 0x06064b50u, 4);
        tensor__put_le(r + 4, 44, 8);
        tensor__put_le(r + 12, 45, 2);
        tensor__put_le(r + 14, 45, 2);
        tensor__put_le(r + 24, n, 8);
        tensor__put_le(r + 32, n, 8);
        tensor__put_le(r + 40, cd_size, 8);
        tensor__put_le(r + 48, cd_off, 8);
        tensor__put_le(r + 56, 0x07064b50u, 4);
        tensor__put_le(r + 64, pos, 8);
        tensor__put_le(r + 72, 1, 4);
        tensor__wfile_write(fn, &w, r, sizeof r);
    }
    memset(h, 0, 22);
    tensor__put_le(h, 0x06054b50u, 4);
    tensor__put_le(h + 8, z64 && n >= 0xFFFF ? 0xFFFF : n, 2);
    tensor__put_le(h + 10, z64 && n >= 0xFFFF ? 0xFFFF : n, 2);
    tensor__put_le(h + 12, z64 && cd_size >= lim ? 0xFFFFFFFFu : cd_size, 4);
    tensor__put_le(h + 16, z64 && cd_off >= lim ? 0xFFFFFFFFu : cd_off, 4);
    if (ok) tensor__wfile_write(fn, &w, h, 22);
    TENSOR_FREE(m);
    return tensor__wfile_close(fn, &w, ok);
}
