// >>rng ----------------------------------------------------------------------------------------
/* Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"): a counter-based
   generator, so the stream depends only on the seed and how many numbers were drawn, on every
   platform. The key is the seed; the 64-bit counter advances by one per block of four words; the
   counter's third word is the stream.
   Threads: each thread has its own generator (in its tensor__thread), so draws take no lock and a
   thread's numbers do not depend on what other threads draw. tensor_manual_seed(s) seeds the
   calling thread's generator: stream 0 from seed s, the numbers a single-threaded program gets
   from s. It also makes s the default seed: a thread that draws before seeding its own starts
   from the default seed on the stream of its place in the order threads started using the
   library (the first, usually main, has stream 0: a single-threaded program's numbers are as they
   always were; every later thread has a stream of its own, so numbers of its own). PyTorch instead
   has one global generator behind a lock, whose numbers then depend on how threads interleave. */
#define TENSOR__DEFAULT_SEED 67280421310721ull /* PyTorch's default seed */
static uint64_t tensor__default_seed = TENSOR__DEFAULT_SEED; /* atomic */
static TENSOR__THREAD_LOCAL tensor__philox tensor__rng_spare; /* a thread with no state (no memory for one) */

/* Philox4x32-10's block `counter` of `stream` (>>formulas' tensor__philox_at, the CUDA device's too). */
static void tensor__philox_block(const uint32_t key_in[2], uint64_t counter, uint32_t stream, uint32_t out[4]) {
    tensor__philox_at(key_in[0], key_in[1], counter, stream, 0, out);
}

static void tensor__philox_seed(tensor__philox *g, uint64_t seed, uint32_t stream) {
    g->key[0] = (uint32_t)seed;
    g->key[1] = (uint32_t)(seed >> 32);
    g->counter = 0;
    memset(g->block, 0, sizeof g->block); /* no block in use: none left of an earlier seed (a checkpoint saves it) */
    g->used = 4;
    g->stream = stream;
}

/* The calling thread's generator, set up on its first draw. */
static tensor__philox *tensor__rng_here(void) {
    tensor__thread *me = tensor__me();
    if (me && me->rng_seeded) return &me->rng;
    tensor__philox *g = me ? &me->rng : &tensor__rng_spare;
    if (me || !g->used) tensor__philox_seed(g, TENSOR__LOAD(&tensor__default_seed), me ? me->index : 0xffffffffu);
    if (me) me->rng_seeded = true;
    return g;
}

static uint32_t tensor__rng_u32(void) {
    tensor__philox *g = tensor__rng_here();
    if (g->used == 4) {
        tensor__philox_block(g->key, g->counter++, g->stream, g->block);
        g->used = 0;
    }
    return g->block[g->used++];
}
static uint64_t tensor__rng_u64(void) { uint64_t hi = tensor__rng_u32(); return hi << 32 | tensor__rng_u32(); }
/* Uniform in [0, 1) with 53 random bits. */
static inline double tensor__u53(uint64_t x) { return (double)(int64_t)(x >> 11) * (1.0 / 9007199254740992.0); } /* (the signed conversion is one instruction) */
static double tensor__rng_double(void) { return tensor__u53(tensor__rng_u64()); }

TENSOR_API void tensor_manual_seed(uint64_t seed) {
    TENSOR__STORE(&tensor__default_seed, seed);
    tensor__thread *me = tensor__me();
    tensor__philox_seed(me ? &me->rng : &tensor__rng_spare, seed, 0);
    if (me) me->rng_seeded = true;
}
/* tensor_shutdown: the default seed again, for the caller's generator and (once they draw) every
   other thread's. */
static void tensor__rng_reset(void) {
    TENSOR__STORE(&tensor__default_seed, TENSOR__DEFAULT_SEED);
    tensor__thread *me = tensor__self;
    if (me) me->rng_seeded = false;
}

/* A uniform integer in [0, n), n >= 1, without modulo bias (rejection). */
static uint64_t tensor__rng_below(uint64_t n) {
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t r;
    do r = tensor__rng_u64(); while (r >= limit);
    return r % n;
}

/* ---- fills: many numbers at once, on every thread, in SIMD lanes ----
   A fill of n values takes the next words of the calling thread's stream, exactly those that n
   draws one at a time would take (so a fill leaves the generator where they would), and computes
   each value from its own words: a value depends only on the seed and its place in the stream,
   never on the thread count, the chunking or the instruction set. The words come from Philox
   blocks computed in SIMD lanes (simd.h's rng_blocks, bit for bit tensor__philox_block); the
   normal values from Box-Muller in double (rng_normal) or, for randn below f64, in f32 on the
   words of whole blocks (rng_normal4). */

/* n Philox blocks from counter, their words in stream order: out[4 i + w] = word w of block
   counter + i. The reference of the SIMD layer's rng_blocks. */
static void tensor__rng_blocks_ref(uint32_t *out, int64_t n, const uint32_t key[2], uint64_t counter, uint32_t stream) {
    for (int64_t i = 0; i < n; i++) tensor__philox_block(key, counter + (uint64_t)i, stream, out + 4 * i);
}
/* Box-Muller, the reference of the SIMD layer's rng_normal (which computes the same in double with
   its own log, sin and cos): c[j] = r cos t, s[j] = r sin t, r = sqrt(-2 log u1[j]), t = 2 pi u2[j]. */
static TENSOR__UNUSED void tensor__rng_normal_ref(double *c, double *s, const double *u1, const double *u2, int64_t n) {
    for (int64_t j = 0; j < n; j++) {
        double r = sqrt(-2.0 * log(u1[j])), t = 2.0 * M_PI * u2[j];
        c[j] = r * cos(t);
        s[j] = r * sin(t);
    }
}

/* Box-Muller on whole Philox blocks, the reference of the SIMD layer's rng_normal4 (which computes in
   f32 with its own log, sin and cos, to a few ulp): block b from counter gives out[4 b .. 4 b + 3] =
   r0 cos t0, r0 sin t0, r1 cos t1, r1 sin t1 from its words (x0, y0, x1, y1): r = sqrt(-2 ln u),
   u = f32((x >> 1) | 1) 2^-31 in (0, 1] (down to 2^-31: values up to 6.5 sigma), t = 2 pi y 2^-32.
   One word a uniform, as PyTorch's f32 randn: half the words and a quarter of the work of the
   double path, which f64 keeps. */
static void tensor__rng_normal4_ref(float *out, int64_t n, const uint32_t key[2], uint64_t counter, uint32_t stream) {
    for (int64_t b = 0; b < n; b++) {
        uint32_t w[4];
        tensor__philox_block(key, counter + (uint64_t)b, stream, w);
        for (int h = 0; h < 2; h++) {
            double u = (double)(float)(int32_t)((w[2 * h] >> 1) | 1) * (1.0 / 2147483648.0), t = 2.0 * M_PI * ((double)w[2 * h + 1] * (1.0 / 4294967296.0));
            double r = sqrt(-2.0 * log(u));
            out[4 * b + 2 * h] = (float)(r * cos(t));
            out[4 * b + 2 * h + 1] = (float)(r * sin(t));
        }
    }
}

/* What a fill computes from its words. A unit is the words one step of the one-at-a-time code
   takes, and the values it gives:
     U24     1 word, 1 value: the top 24 bits / 2^24 (rand in f32; 11 bits in f16, 8 in bf16)
     U53     2 words, 1 value: 53 bits / 2^53 (rand in f64, uniform_)
     NORMAL  4 words, 2 values: Box-Muller's pair from u1 = 1 - U53, u2 = U53 (randn)
     NORMAL1 4 words, 1 value: the pair's first (normal_)
     NORMAL4 4 words, 4 values: two pairs in f32 from a whole block (randn below f64; its fill
             starts at the next whole block, leaving the rest of a block a draw began)
     KEEP    1 word, 1 value: dropout's mask, scale where word / 2^32 >= p, else 0 (out *= mask)
   Values are lo + scale * x, rounded once to the dtype. */
enum { TENSOR__RNG_U24, TENSOR__RNG_U53, TENSOR__RNG_NORMAL, TENSOR__RNG_NORMAL1, TENSOR__RNG_KEEP, TENSOR__RNG_NORMAL4 };
static const int tensor__rng_fill_words[] = {1, 2, 4, 4, 1, 4}, tensor__rng_fill_values[] = {1, 1, 2, 1, 1, 4};
typedef struct {
    uint32_t key[2], stream;
    uint64_t counter; /* the fill's word q is word (skip + q) % 4 of block counter + (skip + q) / 4 */
    int skip, kind;
    int64_t n;        /* values */
    tensor_dtype dtype;
    char *out;        /* n contiguous values */
    char *x;          /* KEEP: the data multiplied by the mask (out is the mask) */
    double lo, scale, p;
    void (*blocks)(uint32_t *, int64_t, const uint32_t *, uint64_t, uint32_t);
    void (*normal)(double *, double *, const double *, const double *, int64_t);
    void (*normal4)(float *, int64_t, const uint32_t *, uint64_t, uint32_t);
} tensor__rng_fill;

/* Takes the next `words` words of the calling thread's stream for f. */
static void tensor__rng_fill_take(tensor__rng_fill *f, int64_t words) {
    tensor__philox *g = tensor__rng_here();
    if (f->kind == TENSOR__RNG_NORMAL4) g->used = 4; /* whole blocks */
    memcpy(f->key, g->key, sizeof f->key);
    f->stream = g->stream;
    f->skip = g->used == 4 ? 0 : g->used;
    f->counter = g->used == 4 ? g->counter : g->counter - 1;
    uint64_t end = (uint64_t)f->skip + (uint64_t)words, last = f->counter + end / 4;
    if (end % 4 == 0) {
        g->counter = last;
        g->used = 4;
    } else { /* the last block is read in part: the next draw goes on in it */
        tensor__philox_block(g->key, last, g->stream, g->block);
        g->counter = last + 1;
        g->used = (int)(end % 4);
    }
}

/* Takes the next `words` words of the calling thread's stream for a device's kernel, which draws
   them itself: c->ip[at..at+3] = key (key[0] | key[1] << 32), the block counter of the first word,
   the stream, and how many words of that block were used already (0..3). */
static void tensor__rng_place(tensor__call *c, int at, int64_t words) {
    tensor__rng_fill f;
    f.kind = TENSOR__RNG_KEEP;
    tensor__rng_fill_take(&f, words);
    c->ip[at] = (int64_t)((uint64_t)f.key[0] | (uint64_t)f.key[1] << 32);
    c->ip[at + 1] = (int64_t)f.counter;
    c->ip[at + 2] = f.stream;
    c->ip[at + 3] = f.skip;
}

#define TENSOR__RNG_CHUNK 512 /* units per step: their words and values stay in L1 */
static inline void tensor__rng_fill_store(const tensor__rng_fill *f, int64_t i, double v) {
    v = f->lo + f->scale * v;
    if (f->dtype == TENSOR_F32) ((float *)f->out)[i] = (float)v;
    else if (f->dtype == TENSOR_F64) ((double *)f->out)[i] = v;
    else tensor__store_f64(f->out + (size_t)i * tensor__dtype_sizes[f->dtype], f->dtype, v);
}
static inline double tensor__rng_fill_u53(const uint32_t *w) { return tensor__u53(((uint64_t)w[0] << 32) | w[1]); }
/* Units [u0, u1) of the fill ctx, in steps of TENSOR__RNG_CHUNK units. */
static void tensor__rng_fill_range(int64_t u0, int64_t u1, void *ctx) {
    const tensor__rng_fill *f = (const tensor__rng_fill *)ctx;
    int wpu = tensor__rng_fill_words[f->kind], vpu = tensor__rng_fill_values[f->kind];
    uint32_t words[4 * TENSOR__RNG_CHUNK + 8];
    float vals[4 * TENSOR__RNG_CHUNK]; /* NORMAL4's values on their way to another dtype */
    double a[TENSOR__RNG_CHUNK + 16], b[TENSOR__RNG_CHUNK + 16], c[TENSOR__RNG_CHUNK + 16], s[TENSOR__RNG_CHUNK + 16];
    for (int64_t u = u0; u < u1; u += TENSOR__RNG_CHUNK) {
        int64_t m = u1 - u < TENSOR__RNG_CHUNK ? u1 - u : TENSOR__RNG_CHUNK;
        if (f->kind == TENSOR__RNG_NORMAL4) { /* unit u is block counter + u (skip is 0) */
            int64_t v0 = 4 * u;
            if (f->dtype == TENSOR_F32 && f->lo == 0 && f->scale == 1 && v0 + 4 * m <= f->n) {
                f->normal4((float *)f->out + v0, m, f->key, f->counter + (uint64_t)u, f->stream);
                continue;
            }
            f->normal4(vals, m, f->key, f->counter + (uint64_t)u, f->stream);
            for (int64_t j = 0; j < 4 * m && v0 + j < f->n; j++) tensor__rng_fill_store(f, v0 + j, vals[j]);
            continue;
        }
        int64_t q0 = f->skip + u * wpu, q1 = f->skip + (u + m) * wpu; /* words from the fill's first block */
        f->blocks(words, (q1 + 3) / 4 - q0 / 4, f->key, f->counter + (uint64_t)(q0 / 4), f->stream);
        const uint32_t *w = words + q0 % 4;
        int64_t v0 = u * vpu; /* the first value */
        switch (f->kind) {
        case TENSOR__RNG_U24:
            if (f->dtype == TENSOR_F32 && f->lo == 0 && f->scale == 1)
                for (int64_t j = 0; j < m; j++) ((float *)f->out)[v0 + j] = (float)(w[j] >> 8) * (1.0f / 16777216.0f);
            else
                for (int64_t j = 0; j < m; j++)
                    tensor__rng_fill_store(f, v0 + j, f->dtype == TENSOR_F16 ? (double)(w[j] >> 21) * (1.0 / 2048.0)   /* 11 bits: exact in f16 */
                                                  : f->dtype == TENSOR_BF16 ? (double)(w[j] >> 24) * (1.0 / 256.0) /* 8 bits: exact in bf16 */
                                                  : (double)(w[j] >> 8) * (1.0 / 16777216.0));                     /* 24 bits: exact in f32 */
            break;
        case TENSOR__RNG_U53:
            for (int64_t j = 0; j < m; j++) tensor__rng_fill_store(f, v0 + j, tensor__rng_fill_u53(w + 2 * j));
            break;
        case TENSOR__RNG_NORMAL:
        case TENSOR__RNG_NORMAL1: {
            int64_t padded = (m + 15) / 16 * 16;
            for (int64_t j = 0; j < padded; j++) {
                a[j] = j < m ? 1.0 - tensor__rng_fill_u53(w + 4 * j) : 1.0; /* (0, 1] */
                b[j] = j < m ? tensor__rng_fill_u53(w + 4 * j + 2) : 0.0;
            }
            f->normal(c, s, a, b, padded);
            if (vpu == 2 && f->dtype == TENSOR_F32 && f->lo == 0 && f->scale == 1 && v0 + 2 * m <= f->n) {
                float *o = (float *)f->out + v0;
                for (int64_t j = 0; j < m; j++) o[2 * j] = (float)c[j], o[2 * j + 1] = (float)s[j];
                break;
            }
            for (int64_t j = 0; j < m; j++) {
                if (vpu == 1) { tensor__rng_fill_store(f, v0 + j, c[j]); continue; }
                tensor__rng_fill_store(f, v0 + 2 * j, c[j]);
                if (v0 + 2 * j + 1 < f->n) tensor__rng_fill_store(f, v0 + 2 * j + 1, s[j]); /* an odd n drops the last sine */
            }
            break;
        }
        case TENSOR__RNG_KEEP: {
            size_t esz = tensor__dtype_sizes[f->dtype];
            for (int64_t j = 0; j < m; j++) {
                int64_t i = v0 + j;
                double keep = f->p == 1 ? 0 : ((double)w[j] * (1.0 / 4294967296.0) >= f->p ? f->scale : 0.0);
                tensor__store_f64(f->out + (size_t)i * esz, f->dtype, keep);
                if (f->dtype == TENSOR_F32) ((float *)f->x)[i] = (float)((double)((float *)f->x)[i] * keep);
                else if (f->dtype == TENSOR_F64) ((double *)f->x)[i] *= keep;
                else tensor__store_f64(f->x + (size_t)i * esz, f->dtype, tensor__load_f64(f->x + (size_t)i * esz, f->dtype) * keep);
            }
            break;
        }
        }
    }
}
/* Fills n contiguous values at out (dtype) with lo + scale * x, x drawn as `kind` says, from the
   calling thread's stream; KEEP also multiplies x_data by the mask. */
static void tensor__rng_fill_run(int kind, tensor_dtype dtype, void *out, int64_t n, double lo, double scale, double p, void *x_data) {
    if (n <= 0) return;
    tensor__rng_fill f;
    f.kind = kind;
    f.n = n;
    f.dtype = dtype;
    f.out = (char *)out;
    f.x = (char *)x_data;
    f.lo = lo;
    f.scale = scale;
    f.p = p;
    f.blocks = tensor__rng_blocks_ref;
    f.normal = tensor__rng_normal_ref;
    f.normal4 = tensor__rng_normal4_ref;
#if TENSOR__SIMD
    const tensor__simd_isa *isa = tensor__simd();
    if (!tensor__reference_kernels) {
        f.blocks = isa->rng_blocks;
        f.normal = isa->rng_normal;
        f.normal4 = isa->rng_normal4;
    }
#endif
    int vpu = tensor__rng_fill_values[kind];
    int64_t units = (n + vpu - 1) / vpu;
    tensor__rng_fill_take(&f, units * tensor__rng_fill_words[kind]);
    tensor__parallel_for(units, 16384 / vpu, tensor__rng_fill_range, &f);
}

// >>create -------------------------------------------------------------------------------------
static bool tensor__check_dtype(const char *fn, tensor_dtype d) {
    if (tensor__dtype_valid(d)) return true;
    tensor__fail(fn, "invalid dtype %d", (int)d);
    return false;
}

/* Allocates out for a creation op and runs its kernel. */
static tensor *tensor__create(tensor__call *c, int ndim, const int64_t *shape, tensor_dtype dtype) {
    if (!tensor__check_dtype(c->fn, dtype)) return NULL;
    c->out = tensor__new(c->fn, ndim, shape, dtype, TENSOR_CPU);
    return c->out ? tensor__dispatch(c) : NULL;
}

static int tensor__cpu_empty(tensor__call *c) { (void)c; return 0; }
static int tensor__cpu_zeros(tensor__call *c) { tensor__fill(c->out, 0); return 0; }
static int tensor__cpu_ones(tensor__call *c) { tensor__fill(c->out, 1); return 0; }
static int tensor__cpu_full(tensor__call *c) { tensor__fill(c->out, c->p[0]); return 0; }
static int tensor__cpu_scalar(tensor__call *c) { tensor__fill(c->out, c->p[0]); return 0; }

TENSOR_API tensor *tensor_empty(int ndim, const int64_t *shape, tensor_dtype dtype) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_empty);
    return tensor__create(&c, ndim, shape, dtype);
}
TENSOR_API tensor *tensor_zeros(int ndim, const int64_t *shape, tensor_dtype dtype) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_zeros);
    return tensor__create(&c, ndim, shape, dtype);
}
TENSOR_API tensor *tensor_ones(int ndim, const int64_t *shape, tensor_dtype dtype) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_ones);
    return tensor__create(&c, ndim, shape, dtype);
}
TENSOR_API tensor *tensor_full(int ndim, const int64_t *shape, double value, tensor_dtype dtype) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_full);
    c.p[0] = value;
    return tensor__create(&c, ndim, shape, dtype);
}
TENSOR_API tensor *tensor_scalar(double value, tensor_dtype dtype) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_scalar);
    c.p[0] = value;
    return tensor__create(&c, 0, NULL, dtype);
}

static int tensor__cpu_from_data(tensor__call *c) {
    size_t n = (size_t)tensor__numel_of(c->out->ndim, c->out->shape) * tensor__dtype_sizes[c->out->dtype];
    if (n) memcpy(tensor__data(c->out), (const void *)(uintptr_t)c->ip[0], n); /* data may be NULL when n is 0 */
    return 0;
}
TENSOR_API tensor *tensor_from_data(const void *data, int ndim, const int64_t *shape, tensor_dtype dtype) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_from_data);
    int64_t numel = tensor__check_shape(c.fn, ndim, shape);
    if (numel < 0) return NULL;
    if (!data && numel > 0) return tensor__null_arg(c.fn, "data");
    c.ip[0] = (int64_t)(uintptr_t)data;
    return tensor__create(&c, ndim, shape, dtype);
}

static int tensor__cpu_arange(tensor__call *c) {
    int64_t n = c->out->shape[0];
    char *o = tensor__data(c->out);
    size_t esz = tensor__dtype_sizes[c->out->dtype];
    for (int64_t i = 0; i < n; i++) tensor__store_f64(o + (size_t)i * esz, c->out->dtype, c->p[0] + (double)i * c->p[2]);
    return 0;
}
TENSOR_API tensor *tensor_arange(double start, double end, double step, tensor_dtype dtype) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_arange);
    if (!(step != 0) || step != step) return tensor__fail(c.fn, "step must be non-zero and finite, got %g", step);
    if (!isfinite(start) || !isfinite(end)) return tensor__fail(c.fn, "start %g and end %g must be finite", start, end);
    /* signs compared, not multiplied: a product can underflow to -0 and let (end - start) / step
       be -inf, which no cast to int64_t survives */
    if ((end > start && step < 0) || (end < start && step > 0)) return tensor__fail(c.fn, "upper bound %g and lower bound %g are inconsistent with step sign %g", end, start, step);
    double count = ceil((end - start) / step);
    if (count > 9.0e15) return tensor__fail(c.fn, "range [%g, %g) with step %g is too long", start, end, step);
    int64_t n = (int64_t)count;
    c.p[0] = start;
    c.p[1] = end;
    c.p[2] = step;
    return tensor__create(&c, 1, &n, dtype);
}

static int tensor__cpu_linspace(tensor__call *c) {
    int64_t n = c->out->shape[0];
    char *o = tensor__data(c->out);
    size_t esz = tensor__dtype_sizes[c->out->dtype];
    double start = c->p[0], end = c->p[1], step = n > 1 ? (end - start) / (double)(n - 1) : 0;
    for (int64_t i = 0; i < n; i++) /* from both ends, as PyTorch does, so the last value is exactly end */
        tensor__store_f64(o + (size_t)i * esz, c->out->dtype, n == 1 ? start : i < n / 2 ? start + step * (double)i : end - step * (double)(n - 1 - i));
    return 0;
}
TENSOR_API tensor *tensor_linspace(double start, double end, int64_t steps, tensor_dtype dtype) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_linspace);
    if (steps < 0) return tensor__fail(c.fn, "number of steps must be non-negative, got %lld", (long long)steps);
    c.p[0] = start;
    c.p[1] = end;
    return tensor__create(&c, 1, &steps, dtype);
}

static int tensor__cpu_eye(tensor__call *c) {
    int64_t n = c->out->shape[0];
    tensor__fill(c->out, 0);
    char *o = tensor__data(c->out);
    size_t esz = tensor__dtype_sizes[c->out->dtype];
    for (int64_t i = 0; i < n; i++) tensor__store_f64(o + (size_t)(i * n + i) * esz, c->out->dtype, 1);
    return 0;
}
TENSOR_API tensor *tensor_eye(int64_t n, tensor_dtype dtype) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_eye);
    if (n < 0) return tensor__fail(c.fn, "n must be non-negative, got %lld", (long long)n);
    int64_t shape[2] = {n, n};
    return tensor__create(&c, 2, shape, dtype);
}

/* Random fills walk the output in row-major order, so the numbers drawn depend only on the seed,
   the shape and the dtype. */
static int tensor__cpu_rand(tensor__call *c) {
    tensor *o = c->out;
    tensor__rng_fill_run(o->dtype == TENSOR_F64 ? TENSOR__RNG_U53 : TENSOR__RNG_U24, o->dtype, tensor__data(o),
                     tensor__numel_of(o->ndim, o->shape), 0, 1, 0, NULL);
    return 0;
}
TENSOR_API tensor *tensor_rand(int ndim, const int64_t *shape, tensor_dtype dtype) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_rand);
    if (tensor__dtype_valid(dtype) && !tensor__is_float(dtype)) return tensor__fail(c.fn, "needs a floating dtype, got %s", tensor__dtype_names[dtype]);
    return tensor__create(&c, ndim, shape, dtype);
}

/* Box-Muller on pairs of 53-bit uniforms. */
static int tensor__cpu_randn(tensor__call *c) {
    tensor *o = c->out;
    tensor__rng_fill_run(o->dtype == TENSOR_F64 ? TENSOR__RNG_NORMAL : TENSOR__RNG_NORMAL4, o->dtype, tensor__data(o), tensor__numel_of(o->ndim, o->shape), 0, 1, 0, NULL);
    return 0;
}
TENSOR_API tensor *tensor_randn(int ndim, const int64_t *shape, tensor_dtype dtype) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_randn);
    if (tensor__dtype_valid(dtype) && !tensor__is_float(dtype)) return tensor__fail(c.fn, "needs a floating dtype, got %s", tensor__dtype_names[dtype]);
    return tensor__create(&c, ndim, shape, dtype);
}

static int tensor__cpu_randint(tensor__call *c) {
    int64_t n = tensor__numel_of(c->out->ndim, c->out->shape), low = c->ip[0];
    uint64_t range = (uint64_t)c->ip[1] - (uint64_t)low;
    char *o = tensor__data(c->out);
    size_t esz = tensor__dtype_sizes[c->out->dtype];
    for (int64_t i = 0; i < n; i++) tensor__store_i64(o + (size_t)i * esz, c->out->dtype, (int64_t)((uint64_t)low + tensor__rng_below(range)));
    return 0;
}
TENSOR_API tensor *tensor_randint(int64_t low, int64_t high, int ndim, const int64_t *shape, tensor_dtype dtype) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_randint);
    if (low >= high) return tensor__fail(c.fn, "low %lld must be less than high %lld", (long long)low, (long long)high);
    int64_t lo_ok = INT64_MIN, hi_ok = INT64_MAX; /* the dtype must hold every value of [low, high) */
    switch (dtype) {
    case TENSOR_BOOL: lo_ok = 0; hi_ok = 1; break;
    case TENSOR_U8: lo_ok = 0; hi_ok = 255; break;
    case TENSOR_I32: lo_ok = INT32_MIN; hi_ok = INT32_MAX; break;
    case TENSOR_F16: lo_ok = -2048; hi_ok = 2048; break;  /* integers exact in the significand */
    case TENSOR_BF16: lo_ok = -256; hi_ok = 256; break;
    case TENSOR_F32: lo_ok = -16777216; hi_ok = 16777216; break;
    default: break;
    }
    if (low < lo_ok || high - 1 > hi_ok) return tensor__fail(c.fn, "range [%lld, %lld) does not fit dtype %s", (long long)low, (long long)high, tensor_dtype_name(dtype));
    c.ip[0] = low;
    c.ip[1] = high;
    return tensor__create(&c, ndim, shape, dtype);
}

static int tensor__cpu_randperm(tensor__call *c) {
    int64_t n = c->out->shape[0];
    int64_t *perm = (int64_t *)tensor__alloc_aligned((size_t)(n ? n : 1) * sizeof(int64_t));
    if (!perm) { tensor__fail(c->fn, "out of memory"); return 1; }
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    for (int64_t i = n - 1; i > 0; i--) { /* Fisher-Yates */
        int64_t j = (int64_t)tensor__rng_below((uint64_t)i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    char *o = tensor__data(c->out);
    size_t esz = tensor__dtype_sizes[c->out->dtype];
    for (int64_t i = 0; i < n; i++) tensor__store_i64(o + (size_t)i * esz, c->out->dtype, perm[i]);
    tensor__free_aligned(perm);
    return 0;
}
TENSOR_API tensor *tensor_randperm(int64_t n, tensor_dtype dtype) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_randperm);
    if (n < 0) return tensor__fail(c.fn, "n must be non-negative, got %lld", (long long)n);
    if (dtype == TENSOR_BOOL || (dtype == TENSOR_U8 && n > 256) || ((dtype == TENSOR_F16 || dtype == TENSOR_BF16) && n > 256))
        return tensor__fail(c.fn, "n %lld is too large for dtype %s", (long long)n, tensor_dtype_name(dtype));
    return tensor__create(&c, 1, &n, dtype);
}

/* Each row of probs: num_samples draws by inverse CDF on a running total; without replacement a
   drawn category's weight drops to 0. */
static int tensor__cpu_multinomial(tensor__call *c) {
    tensor *p = c->in[0];
    int64_t rows = p->ndim == 2 ? p->shape[0] : 1, cats = p->shape[p->ndim - 1], ns = c->ip[0];
    bool replacement = c->ip[1] != 0;
    double *w = (double *)tensor__alloc_aligned((size_t)cats * sizeof(double));
    if (!w) { tensor__fail(c->fn, "out of memory"); return 1; }
    int64_t *o = (int64_t *)tensor__data(c->out);
    for (int64_t r = 0; r < rows; r++) {
        double total = 0;
        int64_t nonzero = 0;
        for (int64_t j = 0; j < cats; j++) {
            int64_t idx[2] = {r, j};
            int64_t off = p->ndim == 2 ? tensor__offset_of(p, idx) : tensor__offset_of(p, idx + 1);
            w[j] = tensor__load_f64((char *)p->storage->data + off * (int64_t)tensor__dtype_sizes[p->dtype], p->dtype);
            if (!(w[j] >= 0) || isinf(w[j])) { double bad = w[j]; tensor__free_aligned(w); tensor__fail(c->fn, "probabilities must be finite and non-negative, row %lld has %g", (long long)r, bad); return 1; }
            total += w[j];
            nonzero += w[j] > 0;
        }
        if (!(total > 0)) { tensor__free_aligned(w); tensor__fail(c->fn, "row %lld of probabilities sums to 0", (long long)r); return 1; }
        if (!replacement && nonzero < ns) {
            tensor__free_aligned(w);
            tensor__fail(c->fn, "cannot draw %lld samples without replacement from row %lld with %lld non-zero categories", (long long)ns, (long long)r, (long long)nonzero);
            return 1;
        }
        for (int64_t s = 0; s < ns; s++) {
            double u = tensor__rng_double() * total, acc = 0;
            int64_t pick = -1;
            for (int64_t j = 0; j < cats; j++) {
                if (w[j] <= 0) continue;
                pick = j;  /* the last positive category absorbs rounding */
                acc += w[j];
                if (u < acc) break;
            }
            o[r * ns + s] = pick;
            if (!replacement) { total -= w[pick]; w[pick] = 0; }
        }
    }
    tensor__free_aligned(w);
    return 0;
}
TENSOR_API tensor *tensor_multinomial(tensor *probs, int64_t num_samples, bool replacement) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_multinomial);
    TENSOR__CHECK_ARG(c.fn, probs);
    if (probs->ndim != 1 && probs->ndim != 2) return tensor__fail(c.fn, "probs must be 1-D or 2-D, got shape %s", tensor__shape_of(probs));
    if (!tensor__is_float(probs->dtype)) return tensor__fail(c.fn, "probs must be a floating tensor, got %s", tensor__dtype_names[probs->dtype]);
    int64_t cats = probs->shape[probs->ndim - 1];
    if (cats == 0) return tensor__fail(c.fn, "probs has no categories");
    if (num_samples <= 0) return tensor__fail(c.fn, "num_samples must be positive, got %lld", (long long)num_samples);
    if (!replacement && num_samples > cats) return tensor__fail(c.fn, "cannot draw %lld samples without replacement from %lld categories", (long long)num_samples, (long long)cats);
    c.n_in = 1;
    c.in[0] = probs;
    c.ip[0] = num_samples;
    c.ip[1] = replacement;
    int64_t shape[2] = {probs->shape[0], num_samples}, rows = probs->ndim == 2 ? probs->shape[0] : 1;
    const int64_t *out_shape = probs->ndim == 2 ? shape : &num_samples;
    if (probs->storage->device == TENSOR_CPU) return tensor__create(&c, probs->ndim, out_shape, TENSOR_I64);
    /* a device draws the words the CPU kernel would take, two per sample: ip[2..5] say where */
    if (rows > INT64_MAX / 2 / num_samples) return tensor__fail(c.fn, "%lld x %lld samples are too many", (long long)rows, (long long)num_samples);
    c.out = tensor__new(c.fn, probs->ndim, out_shape, TENSOR_I64, probs->storage->device);
    if (!c.out) return NULL;
    tensor__rng_place(&c, 2, rows * num_samples * 2);
    return tensor__dispatch(&c);
}

/* ---- random ops (issue 14): bernoulli, normal, poisson ----
   PyTorch 1.13's torch.bernoulli, torch.normal and torch.poisson. bernoulli and normal are
   composites of rand/randn (drawn on the CPU from the calling thread's generator and moved to the
   input's device, as rand_like), so a seed gives the same numbers on every device; poisson is a
   kernel whose sampler (>>formulas' tensor__poisson_sample) the CPU and CUDA share. Their values
   are checked as PyTorch checks them (bernoulli's p in [0, 1], normal's std >= 0, poisson's rates
   >= 0; NaN fails each) by a reduction over the input. Gradients: PyTorch defines them as 0 for
   every input (the samples are not reparameterised): the results of bernoulli, normal and poisson
   require grad when an input does, and backward gives zeros. */

static bool tensor__grad_on(void); /* >>autograd: grad mode of this thread */

/* The least and greatest element of t (any device), NaN where t holds one; false when t is empty. */
static bool tensor__random_range(tensor *t, double *lo, double *hi) {
    if (tensor__numel_of(t->ndim, t->shape) == 0) return false;
    bool was = tensor_set_grad_enabled(false);
    tensor *mn = tensor_min_all(t), *mx = tensor_max_all(t);
    tensor_set_grad_enabled(was);
    *lo = mn ? tensor_item(mn) : NAN;
    *hi = mx ? tensor_item(mx) : NAN;
    tensor_free(mn);
    tensor_free(mx);
    return true;
}

/* out + 0 sign(a) + 0 sign(b) where a or b requires grad (NULL skips one): out's values (a and b
   are finite or out is NaN where they are not) in a graph whose gradient for a and b is 0, as
   PyTorch's random ops define it. Takes out. */
static tensor *tensor__random_zero_grad(tensor *out, tensor *a, tensor *b) {
    tensor *ins[2] = {a, b};
    for (int i = 0; i < 2 && out; i++) {
        if (!ins[i] || !ins[i]->requires_grad || !tensor__grad_on()) continue;
        tensor *z = tensor_mul_scalar(tensor_sign(ins[i]), 0), *s = z && z->dtype != out->dtype ? tensor_to_dtype(z, out->dtype) : NULL;
        tensor *r = z ? tensor_add(out, s ? s : z) : NULL;
        tensor_free(s);
        tensor_free(z);
        tensor_free(out);
        out = r;
    }
    return out;
}

/* 0 or 1 (dtype, shape, on device), 1 where a 53-bit uniform u < p: the rand f64 draws of the
   shape, compared on the CPU, the mask moved. p in [0, 1] (checked by the callers). */
static tensor *tensor__bernoulli_of(const char *fn, int ndim, const int64_t *shape, tensor_dtype dtype, tensor_device device, double p) {
    tensor__tmps s = {{0}, 0};
    tensor *u = tensor__tmp(&s, tensor_rand(ndim, shape, TENSOR_F64));
    tensor *m = tensor__tmp(&s, tensor__op_scalar(TENSOR_OP_lt, u, p));
    tensor *r = tensor__tmp(&s, tensor_to_dtype(m, dtype));
    if (r && device != TENSOR_CPU) r = tensor__tmp(&s, tensor_to_device(r, device));
    if (!r && !tensor__error_set) tensor__fail(fn, "out of memory");
    r = tensor__tmps_take(&s, r);
    tensor__tmps_free(&s);
    return r;
}

TENSOR_API tensor *tensor_bernoulli_scalar(tensor *t, double p) {
    const char *fn = "tensor_bernoulli_scalar";
    TENSOR__CHECK_ARG(fn, t);
    if (!(p >= 0 && p <= 1)) return tensor__fail(fn, "bernoulli_ expects p to be in [0, 1], but got p=%g", p);
    return tensor__bernoulli_of(fn, t->ndim, t->shape, t->dtype, t->storage->device, p);
}

TENSOR_API tensor *tensor_bernoulli(tensor *p) {
    const char *fn = "tensor_bernoulli";
    TENSOR__CHECK_ARG(fn, p);
    if (!tensor__is_float(p->dtype)) return tensor__fail(fn, "p must be a floating tensor, got %s", tensor__dtype_names[p->dtype]);
    double lo, hi;
    if (tensor__random_range(p, &lo, &hi) && !(lo >= 0 && hi <= 1)) return tensor__fail(fn, "expected every p in [0, 1], got values in [%g, %g]", lo, hi);
    tensor__tmps s = {{0}, 0};
    bool was = tensor_set_grad_enabled(false);
    tensor *u = tensor__tmp(&s, tensor_rand(p->ndim, p->shape, TENSOR_F64));
    if (u && p->storage->device != TENSOR_CPU) u = tensor__tmp(&s, tensor_to_device(u, p->storage->device));
    tensor *r = tensor__tmp(&s, tensor_to_dtype(tensor__tmp(&s, tensor_lt(u, p)), p->dtype));
    tensor_set_grad_enabled(was);
    r = tensor__random_zero_grad(tensor__tmps_take(&s, r), p, NULL);
    tensor__tmps_free(&s);
    return r;
}

/* mean + std z, z standard normal of the broadcast shape in mean's dtype (randn's numbers), the
   result in `dtype`; mean or std a number where its tensor is NULL. */
static tensor *tensor__normal(const char *fn, tensor *mean, double mean_v, tensor *std, double std_v, tensor_dtype dtype) {
    int nd = 0;
    int64_t shape[TENSOR_MAX_DIMS];
    tensor *ref = mean ? mean : std;
    if (mean && std) {
        if (!tensor__broadcast_shapes(fn, mean->ndim, mean->shape, std->ndim, std->shape, &nd, shape)) return NULL;
        if (mean->storage->device != std->storage->device)
            return tensor__fail(fn, "mean is on %s, std on %s", tensor__device_name(mean->storage->device), tensor__device_name(std->storage->device));
    } else {
        nd = ref->ndim;
        for (int i = 0; i < nd; i++) shape[i] = ref->shape[i];
    }
    double lo, hi;
    if (std && tensor__random_range(std, &lo, &hi) && !(lo >= 0)) return tensor__fail(fn, "normal expects all elements of std >= 0.0, got %g", lo);
    tensor__tmps s = {{0}, 0};
    bool was = tensor_set_grad_enabled(false);
    tensor *z = tensor__tmp(&s, tensor_randn(nd, shape, dtype));
    if (z && ref->storage->device != TENSOR_CPU) z = tensor__tmp(&s, tensor_to_device(z, ref->storage->device));
    tensor *y = std ? tensor__tmp(&s, tensor_mul(z, std)) : tensor__tmp(&s, tensor_mul_scalar(z, std_v));
    y = mean ? tensor__tmp(&s, tensor_add(y, mean)) : tensor__tmp(&s, tensor_add_scalar(y, mean_v));
    if (y && y->dtype != dtype) y = tensor__tmp(&s, tensor_to_dtype(y, dtype));
    tensor_set_grad_enabled(was);
    y = tensor__random_zero_grad(tensor__tmps_take(&s, y), mean, std);
    tensor__tmps_free(&s);
    return y;
}
TENSOR_API tensor *tensor_normal_tensor(tensor *mean, tensor *std) {
    const char *fn = "tensor_normal_tensor";
    TENSOR__CHECK_ARG(fn, mean);
    TENSOR__CHECK_ARG(fn, std);
    if (!tensor__is_float(mean->dtype)) return tensor__fail(fn, "mean must be a floating tensor, got %s", tensor__dtype_names[mean->dtype]);
    return tensor__normal(fn, mean, 0, std, 0, mean->dtype);
}
TENSOR_API tensor *tensor_normal_std_scalar(tensor *mean, double std) {
    const char *fn = "tensor_normal_std_scalar";
    TENSOR__CHECK_ARG(fn, mean);
    if (!tensor__is_float(mean->dtype)) return tensor__fail(fn, "mean must be a floating tensor, got %s", tensor__dtype_names[mean->dtype]);
    if (!(std >= 0)) return tensor__fail(fn, "normal expects std >= 0.0, but found std %g", std);
    return tensor__normal(fn, mean, 0, NULL, std, mean->dtype);
}
TENSOR_API tensor *tensor_normal_mean_scalar(double mean, tensor *std) {
    const char *fn = "tensor_normal_mean_scalar";
    TENSOR__CHECK_ARG(fn, std);
    if (!tensor__is_float(std->dtype)) return tensor__fail(fn, "std must be a floating tensor, got %s", tensor__dtype_names[std->dtype]);
    return tensor__normal(fn, NULL, mean, std, 0, std->dtype);
}

/* poisson: in[0] the rates (any layout, floating), out contiguous in their dtype; ip[0] the key
   (key[0] | key[1] << 32), ip[1] the block counter, ip[2] the stream: element i (row-major) is
   tensor__poisson_sample on the blocks (counter + i, stream, j), so a value depends on the seed and
   its place only, never on the threads; the front-end took n whole blocks of the stream for it. */
typedef struct { const char *x; tensor_dtype dt; char *out; uint32_t k0, k1, stream; uint64_t counter; } tensor__poisson_job;
static void tensor__poisson_range(int64_t i0, int64_t i1, void *ctx) {
    const tensor__poisson_job *j = (const tensor__poisson_job *)ctx;
    size_t esz = tensor__dtype_sizes[j->dt];
    for (int64_t i = i0; i < i1; i++) {
        double lam = tensor__load_f64(j->x + (size_t)i * esz, j->dt);
        tensor__store_f64(j->out + (size_t)i * esz, j->dt, tensor__poisson_sample(lam, j->k0, j->k1, j->counter + (uint64_t)i, j->stream));
    }
}
static int tensor__cpu_poisson(tensor__call *c) {
    tensor *x = c->in[0];
    tensor *xc = tensor__contiguous(x) ? NULL : tensor__contiguous_copy(c->fn, x, x->dtype);
    if (!tensor__contiguous(x) && !xc) return 1;
    tensor__poisson_job j;
    j.x = tensor__data(xc ? xc : x);
    j.dt = c->out->dtype;
    j.out = tensor__data(c->out);
    j.k0 = (uint32_t)(uint64_t)c->ip[0];
    j.k1 = (uint32_t)((uint64_t)c->ip[0] >> 32);
    j.counter = (uint64_t)c->ip[1];
    j.stream = (uint32_t)c->ip[2];
    tensor__parallel_for(tensor__numel_of(x->ndim, x->shape), 1024, tensor__poisson_range, &j);
    tensor_free(xc);
    return 0;
}
TENSOR_API tensor *tensor_poisson(tensor *rates) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_poisson);
    TENSOR__CHECK_ARG(c.fn, rates);
    if (!tensor__is_float(rates->dtype)) return tensor__fail(c.fn, "rates must be a floating tensor, got %s", tensor__dtype_names[rates->dtype]);
    double lo, hi;
    if (tensor__random_range(rates, &lo, &hi) && !(lo >= 0)) return tensor__fail(c.fn, "invalid Poisson rate, expected rate to be non-negative, got %g", lo);
    int64_t n = tensor__numel_of(rates->ndim, rates->shape);
    c.n_in = 1;
    c.in[0] = rates;
    c.out = tensor__new_like(c.fn, rates, rates->dtype);
    if (!c.out) return NULL;
    c.ip[0] = c.ip[1] = c.ip[2] = 0;
    if (n > 0) { /* n whole blocks: the next draw starts after them */
        tensor__rng_fill f;
        f.kind = TENSOR__RNG_NORMAL4;
        tensor__rng_fill_take(&f, 4 * n);
        c.ip[0] = (int64_t)((uint64_t)f.key[0] | (uint64_t)f.key[1] << 32);
        c.ip[1] = (int64_t)f.counter;
        c.ip[2] = f.stream;
    }
    return tensor__dispatch(&c);
}

static int tensor__cpu_clone(tensor__call *c) { tensor__copy_into(c->out, c->in[0]); return 0; }
static int tensor__cpu_contiguous(tensor__call *c) { tensor__copy_into(c->out, c->in[0]); return 0; }

TENSOR_API tensor *tensor_clone(tensor *t) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_clone);
    TENSOR__CHECK_ARG(c.fn, t);
    c.n_in = 1;
    c.in[0] = t;
    c.out = tensor__new_like(c.fn, t, t->dtype);
    return c.out ? tensor__dispatch(&c) : NULL;
}

TENSOR_API tensor *tensor_contiguous(tensor *t) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_contiguous);
    TENSOR__CHECK_ARG(c.fn, t);
    if (tensor__contiguous(t)) return tensor__alias(c.fn, t);
    c.n_in = 1;
    c.in[0] = t;
    c.out = tensor__new_like(c.fn, t, t->dtype);
    return c.out ? tensor__dispatch(&c) : NULL;
}

static int tensor__copy_from_device(const char *fn, tensor *t, void *dst, size_t nbytes); /* >>transfers */
static tensor *tensor__device_contiguous(const char *fn, tensor *t);
TENSOR_API int tensor_copy_to(tensor *t, void *dst, size_t dst_bytes) {
    const char *fn = "tensor_copy_to";
    if (!t) { tensor__null_arg(fn, "t"); return -1; }
    int64_t numel = tensor__numel_of(t->ndim, t->shape); /* an expanded view may hold more than size_t counts (32-bit) */
    if ((uint64_t)numel > SIZE_MAX / tensor__dtype_sizes[t->dtype]) { tensor__fail(fn, "tensor of shape %s has more bytes than size_t holds", tensor__shape_of(t)); return -1; }
    size_t need = (size_t)numel * tensor__dtype_sizes[t->dtype];
    if (!dst && need) { tensor__null_arg(fn, "dst"); return -1; }
    if (dst_bytes < need) { tensor__fail(fn, "destination holds %zu bytes, tensor of shape %s needs %zu", dst_bytes, tensor__shape_of(t), need); return -1; }
    if (!need) return 0;
    if (t->storage->device != TENSOR_CPU) { /* contiguous on its device, then one copy into dst */
        tensor *src = tensor__device_contiguous(fn, t);
        int rc = src ? tensor__copy_from_device(fn, src, dst, need) : -1;
        tensor_free(src);
        return rc;
    }
    /* view dst as a contiguous tensor of t's shape, on a stack storage that is never freed */
    tensor__storage s;
    memset(&s, 0, sizeof s);
    s.data = dst;
    s.nbytes = need;
    tensor__refs_init(&s.refs, NULL); /* no thread's: never released */
    tensor d;
    memset(&d, 0, sizeof d);
    d.storage = &s;
    d.ndim = t->ndim;
    d.dtype = t->dtype;
    for (int i = 0; i < t->ndim; i++) d.shape[i] = t->shape[i];
    tensor__contiguous_strides(t->ndim, t->shape, d.strides);
    tensor__copy_into(&d, t);
    return 0;
}

static int tensor__cpu_to_dtype(tensor__call *c) { tensor__copy_into(c->out, c->in[0]); return 0; }
TENSOR_API tensor *tensor_to_dtype(tensor *t, tensor_dtype dtype) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_to_dtype);
    TENSOR__CHECK_ARG(c.fn, t);
    if (!tensor__check_dtype(c.fn, dtype)) return NULL;
    if (t->dtype == dtype) return tensor__alias(c.fn, t);
    c.n_in = 1;
    c.in[0] = t;
    c.out = tensor__new_like(c.fn, t, dtype);
    return c.out ? tensor__dispatch(&c) : NULL;
}

// >>transfers ----------------------------------------------------------------------------------
/* Copies between devices: the bytes move by the device's copy function, always contiguous (a
   non-contiguous source is made contiguous first, on its own device), and the host end converts
   nothing: to_device keeps the dtype. */

/* A contiguous device tensor t as a contiguous CPU tensor's bytes, into dst (nbytes). */
static int tensor__copy_from_device(const char *fn, tensor *t, void *dst, size_t nbytes) {
    const tensor__device *d = tensor__devices[t->storage->device];
    char err[256] = "";
    if (d->copy(dst, (char *)t->storage->data + t->offset * (int64_t)tensor__dtype_sizes[t->dtype], nbytes, TENSOR__COPY_TO_HOST, err, sizeof err)) {
        tensor__fail(fn, "%s", err[0] ? err : "copy from the device failed");
        return -1;
    }
    return 0;
}

/* A contiguous copy of the view t on its own device (a device kernel when t is not contiguous);
   a new handle of t itself when it is contiguous already. No autograd. */
static tensor *tensor__device_contiguous(const char *fn, tensor *t) {
    return tensor__contiguous(t) ? tensor__alias(fn, t) : tensor__contiguous_copy(fn, t, t->dtype);
}

/* out (contiguous, allocated) = t, whatever devices the two are on. */
static int tensor__transfer(const char *fn, tensor *out, tensor *t) {
    tensor_device from = t->storage->device, to = out->storage->device;
    if (from == TENSOR_CPU && to == TENSOR_CPU) { tensor__copy_into(out, t); return 0; }
    size_t nbytes = (size_t)tensor__numel_of(t->ndim, t->shape) * tensor__dtype_sizes[t->dtype];
    tensor *src = tensor__device_contiguous(fn, t);
    if (!src) return -1;
    int rc = 0;
    char err[256] = "";
    char *s = (char *)src->storage->data + src->offset * (int64_t)tensor__dtype_sizes[src->dtype];
    char *o = (char *)out->storage->data + out->offset * (int64_t)tensor__dtype_sizes[out->dtype];
    if (!nbytes) rc = 0;
    else if (to == TENSOR_CPU) rc = tensor__copy_from_device(fn, src, o, nbytes);
    else if (from == TENSOR_CPU || from == to) {
        const tensor__device *d = tensor__devices[to];
        if (d->copy(o, s, nbytes, from == TENSOR_CPU ? TENSOR__COPY_TO_DEVICE : TENSOR__COPY_ON_DEVICE, err, sizeof err)) {
            tensor__fail(fn, "%s", err[0] ? err : "copy to the device failed");
            rc = -1;
        }
    } else {
        rc = -1;
        tensor__fail(fn, "no copy from %s to %s", tensor__device_name(from), tensor__device_name(to));
    }
    tensor_free(src);
    return rc;
}

/* A contiguous copy of t on device (no autograd): what the device trampoline makes of a CPU input. */
static tensor *tensor__transfer_copy(const char *fn, tensor *t, tensor_device device) {
    tensor *r = tensor__new(fn, t->ndim, t->shape, t->dtype, device);
    if (r && tensor__transfer(fn, r, t)) { tensor_free(r); return NULL; }
    return r;
}

/* The kernel of to_device in every device's column. */
static int tensor__cpu_to_device(tensor__call *c) { return tensor__transfer(c->fn, c->out, c->in[0]) ? 1 : 0; }
TENSOR_API tensor *tensor_to_device(tensor *t, tensor_device device) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_to_device);
    TENSOR__CHECK_ARG(c.fn, t);
    if ((unsigned)device >= TENSOR_DEVICE_COUNT) return tensor__fail(c.fn, "invalid device %d", (int)device);
    if (t->storage->device == device) return tensor__alias(c.fn, t);
    if (device != TENSOR_CPU && !tensor__device_get(c.fn, device)) return NULL;
    c.n_in = 1;
    c.in[0] = t;
    c.out = tensor__new(c.fn, t->ndim, t->shape, t->dtype, device);
    return c.out ? tensor__dispatch(&c) : NULL;
}
