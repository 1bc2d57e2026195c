// >>print ------------------------------------------------------------------------------------------
/* tensor_print / tensor_snprint: the text of PyTorch's repr(tensor) with its default print options
   (torch/_tensor_str.py: precision 4, threshold 1000, edgeitems 3, linewidth 80), so output can be
   compared with PyTorch's line by line. The rules, as PyTorch applies them:

   Layout
   - "tensor(" + body + suffixes + ")". A 0-dim tensor's body is its one value: tensor(3.).
   - A 1-D body is "[a, b, c]"; a k-D body is "[" + the (k-1)-D bodies of its rows joined by ","
     followed by k-1 newlines and the indent + 1 spaces + "]". The indent starts at 7 (the length of
     "tensor(") and grows by one per nesting level, so rows line up under the first "[".
   - A 1-D row wraps after floor((80 - indent) / (width + 2)) elements (at least 1); continuation
     lines start with indent + 1 spaces.
   - Summarization: when numel > 1000, every dim longer than 6 shows its first 3 and last 3 entries
     with "..." between them (an element " ..." inside a row, a row "..." between rows; the " ..."
     element counts as an element when wrapping).
   - Empty tensors: body "[]"; the size is added as a suffix unless the tensor is 1-D
     (tensor([], size=(0, 3))), and the dtype whenever it is not float32 (tensor([], dtype=torch.int64)).
   Element text (every element right-aligned to one width per tensor)
   - bool: True / False. Integers: decimal.
   - Floating (f16/bf16 are widened to f32 first): statistics over the finite non-zero values
     (in summarized mode only over the entries shown):
     int mode when every such value is integral: "%.0f" + "." (3. and -0.);
     sci mode when max|x| / min|x| > 1000 or max|x| > 1e8, or, outside int mode, min|x| < 1e-4:
     "%.4e" (1.0000e-05); otherwise "%.4f" (1.5000).
     The width is the longest of those texts over the finite non-zero values (int mode counts the
     "."), at least 1; zeros and non-finite values do not widen it, so tensor([inf, -inf, nan])
     has no padding. NaN prints as nan whatever its sign bit, infinities as inf and -inf.
   Suffixes, in PyTorch's order, joined by ", " (or ",\n" + 7 spaces when the last line would pass
   80 columns, counting as PyTorch does): device='cuda:0' for a CUDA tensor; size=(...) for empty
   tensors as above; dtype=torch.NAME unless the dtype is float32, int64 or bool (PyTorch's
   defaults); requires_grad=True for a leaf that requires grad. */

#define TENSOR__PRINT_LINEWIDTH 80
#define TENSOR__PRINT_THRESHOLD 1000
#define TENSOR__PRINT_EDGE 3

/* Output sink: a caller's buffer (snprintf rules: as much as fits, the full length counted) or a
   stream. `line` counts the characters since the last newline, for the suffix line breaks. */
typedef struct {
    FILE *f;
    char *buf;
    size_t cap;
    size_t len;
    size_t line;
} tensor__pw;

static void tensor__pw_put(tensor__pw *w, const char *s, size_t k) {
    if (w->f) fwrite(s, 1, k, w->f);
    else if (w->buf && w->len + 1 < w->cap) {
        size_t room = w->cap - 1 - w->len;
        memcpy(w->buf + w->len, s, k < room ? k : room);
    }
    w->len += k;
    for (size_t i = 0; i < k; i++) w->line = s[i] == '\n' ? 0 : w->line + 1;
}
static void tensor__pw_str(tensor__pw *w, const char *s) { tensor__pw_put(w, s, strlen(s)); }
static void tensor__pw_spaces(tensor__pw *w, int n) {
    static const char sp[] = "                                ";
    while (n > 0) {
        int k = n < 32 ? n : 32;
        tensor__pw_put(w, sp, (size_t)k);
        n -= k;
    }
}

/* How every element of one tensor is written (PyTorch's _Formatter). */
typedef struct {
    const tensor *t;
    bool floating, int_mode, sci_mode, summarize;
    int width;
    /* statistics of the finite non-zero values */
    int64_t count;
    double amin, amax;
} tensor__fmt;

static const char *tensor__elem_ptr(const tensor *t, int64_t off) {
    return (const char *)t->storage->data + off * (int64_t)tensor__dtype_sizes[t->dtype];
}

/* The element at element offset off, unpadded, into s (64 bytes); returns its length. */
static int tensor__format_elem(const tensor__fmt *f, int64_t off, char *s) {
    const tensor *t = f->t;
    const char *p = tensor__elem_ptr(t, off);
    if (!f->floating) {
        if (t->dtype == TENSOR_BOOL) return snprintf(s, 64, "%s", *(const uint8_t *)p ? "True" : "False");
        return snprintf(s, 64, "%lld", (long long)tensor__load_i64(p, t->dtype));
    }
    double v = tensor__load_f64(p, t->dtype);
    if (v != v) return snprintf(s, 64, "nan");  /* C would print -nan for a set sign bit */
    if (isinf(v)) return snprintf(s, 64, "%s", v < 0 ? "-inf" : "inf");
    if (f->sci_mode) return snprintf(s, 64, "%.4e", v);
    if (f->int_mode) return snprintf(s, 64, "%.0f.", v);
    return snprintf(s, 64, "%.4f", v);
}

/* Visits the elements that will be shown (all, or the edges of each long dim when summarizing),
   in row-major order. pass 0 gathers statistics, pass 1 the width. */
static void tensor__fmt_visit(tensor__fmt *f, int dim, int64_t off, int pass) {
    const tensor *t = f->t;
    if (dim == t->ndim) {
        char s[64];
        if (!f->floating) {
            int k = tensor__format_elem(f, off, s);
            if (k > f->width) f->width = k;
            return;
        }
        double v = tensor__load_f64(tensor__elem_ptr(t, off), t->dtype);
        if (!isfinite(v) || v == 0) return;
        if (pass == 0) {
            double a = fabs(v);
            if (f->count == 0 || a < f->amin) f->amin = a;
            if (f->count == 0 || a > f->amax) f->amax = a;
            if (v != ceil(v)) f->int_mode = false;
            f->count++;
        } else {
            int k = tensor__format_elem(f, off, s);
            if (k > f->width) f->width = k;
        }
        return;
    }
    int64_t n = t->shape[dim];
    bool cut = f->summarize && n > 2 * TENSOR__PRINT_EDGE;
    for (int64_t i = 0; i < n; i++) {
        if (cut && i == TENSOR__PRINT_EDGE) i = n - TENSOR__PRINT_EDGE;
        tensor__fmt_visit(f, dim + 1, off + i * t->strides[dim], pass);
    }
}

static void tensor__fmt_init(tensor__fmt *f, const tensor *t, bool summarize) {
    memset(f, 0, sizeof *f);
    f->t = t;
    f->floating = tensor__is_float(t->dtype);
    f->int_mode = true;
    f->summarize = summarize;
    f->width = 1;
    if (!f->floating) { tensor__fmt_visit(f, 0, t->offset, 1); return; }
    tensor__fmt_visit(f, 0, t->offset, 0);
    if (f->count == 0) return; /* only zeros and non-finite values: int mode, width 1 */
    double ratio = f->amax / f->amin;
    if (f->int_mode) f->sci_mode = ratio > 1000.0 || f->amax > 1.0e8;
    else f->sci_mode = ratio > 1000.0 || f->amax > 1.0e8 || f->amin < 1.0e-4;
    tensor__fmt_visit(f, 0, t->offset, 1);
}

static void tensor__print_elem(tensor__pw *w, const tensor__fmt *f, int64_t off) {
    char s[64];
    int k = tensor__format_elem(f, off, s);
    if (k < 0) k = 0;
    if (k > 63) k = 63;
    tensor__pw_spaces(w, f->width - k);
    tensor__pw_put(w, s, (size_t)k);
}

/* The body from dim on, at element offset off; indent as in PyTorch's _tensor_str_with_formatter. */
static void tensor__print_body(tensor__pw *w, const tensor__fmt *f, int dim, int64_t off, int indent) {
    const tensor *t = f->t;
    if (t->ndim == 0) { tensor__print_elem(w, f, off); return; }
    int64_t n = t->shape[dim];
    bool cut = f->summarize && n > 2 * TENSOR__PRINT_EDGE;
    tensor__pw_str(w, "[");
    if (dim == t->ndim - 1) {
        int per_line = (TENSOR__PRINT_LINEWIDTH - indent) / (f->width + 2);
        if (per_line < 1) per_line = 1;
        int64_t k = 0; /* items written, " ..." included */
        for (int64_t i = 0; i < n; i++, k++) {
            if (k > 0) {
                if (k % per_line == 0) { tensor__pw_str(w, ",\n"); tensor__pw_spaces(w, indent + 1); }
                else tensor__pw_str(w, ", ");
            }
            if (cut && i == TENSOR__PRINT_EDGE) {
                tensor__pw_str(w, " ...");
                i = n - TENSOR__PRINT_EDGE - 1;
                continue;
            }
            tensor__print_elem(w, f, off + i * t->strides[dim]);
        }
    } else {
        int newlines = t->ndim - dim - 1;
        for (int64_t i = 0; i < n; i++) {
            if (i > 0) {
                tensor__pw_str(w, ",");
                for (int j = 0; j < newlines; j++) tensor__pw_str(w, "\n");
                tensor__pw_spaces(w, indent + 1);
            }
            if (cut && i == TENSOR__PRINT_EDGE) {
                tensor__pw_str(w, "...");
                tensor__pw_str(w, ",");
                for (int j = 0; j < newlines; j++) tensor__pw_str(w, "\n");
                tensor__pw_spaces(w, indent + 1);
                i = n - TENSOR__PRINT_EDGE;
            }
            tensor__print_body(w, f, dim + 1, off + i * t->strides[dim], indent + 1);
        }
    }
    tensor__pw_str(w, "]");
}

/* Appends one suffix the way PyTorch's _add_suffixes does: its line length starts at the
   characters since the last newline + 2. */
static void tensor__print_suffix(tensor__pw *w, const char *suffix) {
    size_t last = w->line + 2, k = strlen(suffix);
    if (last + k + 2 > TENSOR__PRINT_LINEWIDTH) { tensor__pw_str(w, ",\n"); tensor__pw_spaces(w, 7); }
    else tensor__pw_str(w, ", ");
    tensor__pw_str(w, suffix);
}

/* Writes the whole repr of t (a CPU tensor) to w; user is the handle the caller passed (its
   device and autograd flags name the suffixes). */
static void tensor__print_to(tensor__pw *w, const tensor *t, const tensor *user) {
    int64_t numel = tensor__numel_of(t->ndim, t->shape);
    char suffix[200];
    tensor__pw_str(w, "tensor(");
    if (numel == 0) tensor__pw_str(w, "[]");
    else {
        tensor__fmt f;
        tensor__fmt_init(&f, t, numel > TENSOR__PRINT_THRESHOLD);
        tensor__print_body(w, &f, 0, t->offset, 7);
    }
    if (user->storage->device == TENSOR_CUDA) tensor__print_suffix(w, "device='cuda:0'");
    if (numel == 0 && t->ndim != 1) {
        size_t at = (size_t)snprintf(suffix, sizeof suffix, "size=(");
        for (int i = 0; i < t->ndim && at < sizeof suffix; i++)
            at += (size_t)snprintf(suffix + at, sizeof suffix - at, i ? ", %lld" : "%lld", (long long)t->shape[i]);
        if (at < sizeof suffix) snprintf(suffix + at, sizeof suffix - at, ")");
        tensor__print_suffix(w, suffix);
    }
    bool default_dtype = numel == 0 ? t->dtype == TENSOR_F32 : (t->dtype == TENSOR_F32 || t->dtype == TENSOR_I64 || t->dtype == TENSOR_BOOL);
    if (!default_dtype) {
        snprintf(suffix, sizeof suffix, "dtype=torch.%s", tensor__dtype_names[t->dtype]);
        tensor__print_suffix(w, suffix);
    }
    if (user->requires_grad && !user->grad_fn) tensor__print_suffix(w, "requires_grad=True");
    tensor__pw_str(w, ")");
}

/* Prints t into w; false (error recorded under fn) if t cannot be read. */
static bool tensor__print_run(const char *fn, tensor__pw *w, tensor *t) {
    if (!t) { tensor__null_arg(fn, "t"); return false; }
    if (t->storage->device == TENSOR_CPU) { tensor__print_to(w, t, t); return true; }
    tensor *c = tensor_to_device(t, TENSOR_CPU);
    if (!c) { tensor__fail(fn, "cannot copy the tensor to the CPU for printing"); return false; }
    tensor__print_to(w, c, t);
    tensor_free(c);
    return true;
}

TENSOR_API int tensor_snprint(tensor *t, char *buf, size_t n) {
    const char *fn = "tensor_snprint";
    if (buf && n > 0) buf[0] = 0;
    if (!buf && n > 0) { tensor__fail(fn, "buf is NULL but n is %zu", n); return -1; }
    tensor__pw w;
    memset(&w, 0, sizeof w);
    w.buf = buf;
    w.cap = n;
    if (!tensor__print_run(fn, &w, t)) return -1;
    if (buf && n > 0) buf[w.len < n ? w.len : n - 1] = 0;
    if (w.len > (size_t)INT_MAX) { tensor__fail(fn, "text of %zu characters does not fit an int", w.len); return -1; }
    return (int)w.len;
}

TENSOR_API void tensor_print(tensor *t) {
    tensor__pw w;
    memset(&w, 0, sizeof w);
    w.f = stdout;
    if (tensor__print_run("tensor_print", &w, t)) fputc('\n', stdout);
}
