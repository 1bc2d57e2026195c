// >>impl ---------------------------------------------------------------------------------------
#ifdef TENSOR_IMPLEMENTATION
#ifndef TENSOR__IMPLEMENTATION_DONE
#define TENSOR__IMPLEMENTATION_DONE

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The fast paths' counts for tensor_test_path_count (TENSOR_TEST_HOOKS builds; nothing otherwise):
   kernels bump theirs with TENSOR__PATH_TAKEN(name), from any thread. */
#define TENSOR__PATHS(X) X(conv_winograd) X(conv_im2col_simd) X(conv_smallk) X(conv_bf16) X(maxpool_fast) X(relu_backward_fused) X(unary_backward_fused) X(optim_simd) \
    X(layer_pool) X(layer_batch_norm) X(layer_conv_transpose) X(layer_interpolate) X(attention_fused) X(attention_fused_backward)
#ifdef TENSOR_TEST_HOOKS
#define TENSOR__PATH_ENUM(name) TENSOR__PATH_##name,
enum { TENSOR__PATHS(TENSOR__PATH_ENUM) TENSOR__N_PATHS };
static int64_t tensor__path_counts[TENSOR__N_PATHS];
#define TENSOR__PATH_TAKEN(name) __atomic_fetch_add(&tensor__path_counts[TENSOR__PATH_##name], 1, __ATOMIC_RELAXED)
#else
#define TENSOR__PATH_TAKEN(name) ((void)0)
#endif

#if defined(TENSOR_MALLOC) && defined(TENSOR_FREE)
#define TENSOR__USER_ALLOCATOR 1 /* storage then comes only from TENSOR_MALLOC (no mmap) */
#elif !defined(TENSOR_MALLOC) && !defined(TENSOR_FREE)
#define TENSOR_MALLOC(n) malloc(n)
#define TENSOR_FREE(p) free(p)
#else
#error "tensor.h: define both TENSOR_MALLOC and TENSOR_FREE, or neither"
#endif

/* Storage blocks of 2 MiB and more are mapped with mmap and marked for transparent huge pages
   (Linux, unless the user supplies the allocator; a strict -std=c99 build without _GNU_SOURCE or
   _DEFAULT_SOURCE does not see MAP_ANONYMOUS and madvise, and uses malloc instead). */
#if defined(__linux__) && !defined(TENSOR__USER_ALLOCATOR)
#include <sys/mman.h>
#include <sys/sysinfo.h>
#endif
#if defined(__linux__) && !defined(TENSOR__USER_ALLOCATOR) && defined(MAP_ANONYMOUS) && defined(MADV_HUGEPAGE)
#define TENSOR__MMAP 1
#else
#define TENSOR__MMAP 0
#endif

/* Under AddressSanitizer the data of cached blocks is poisoned, so a use after tensor_free is still
   reported although the block is not given back. */
#if defined(__SANITIZE_ADDRESS__)
#define TENSOR__ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TENSOR__ASAN 1
#endif
#endif
#ifdef TENSOR__ASAN
#include <sanitizer/asan_interface.h>
#define TENSOR__POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define TENSOR__UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define TENSOR__POISON(p, n) ((void)0)
#define TENSOR__UNPOISON(p, n) ((void)0)
#endif

/* Bytes of freed storage the caching allocator keeps for reuse (tensor_empty_cache frees them). */
#ifndef TENSOR_CACHE_LIMIT
#define TENSOR_CACHE_LIMIT ((size_t)1 << 30)
#endif

/* Allocation-failure injection (TENSOR_TEST_HOOKS builds): every place the library asks for memory
   goes through TENSOR__MALLOC or TENSOR__ALLOC_FAILS(bytes), so a test can count the requests of a
   run and then fail the k-th one, whether the cache or the system would have served it; and it
   can fail every request over a size and see the largest one made (work on an empty tensor must
   not ask for memory in proportion to its other dims). */
#ifdef TENSOR_TEST_HOOKS
static int64_t tensor__test_alloc_count, tensor__test_alloc_fail_at, tensor__test_alloc_cap, tensor__test_alloc_largest;
static int tensor__test_alloc_fails(size_t bytes) {
    int64_t k = __atomic_add_fetch(&tensor__test_alloc_count, 1, __ATOMIC_RELAXED);
    int64_t b = bytes > (size_t)INT64_MAX ? INT64_MAX : (int64_t)bytes, was = __atomic_load_n(&tensor__test_alloc_largest, __ATOMIC_RELAXED);
    while (b > was && !__atomic_compare_exchange_n(&tensor__test_alloc_largest, &was, b, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {}
    int64_t cap = __atomic_load_n(&tensor__test_alloc_cap, __ATOMIC_RELAXED);
    return k == __atomic_load_n(&tensor__test_alloc_fail_at, __ATOMIC_RELAXED) || (cap > 0 && b > cap);
}
#define TENSOR__ALLOC_FAILS(bytes) tensor__test_alloc_fails(bytes)
#else
#define TENSOR__ALLOC_FAILS(bytes) 0
#endif
#define TENSOR__MALLOC(n) (TENSOR__ALLOC_FAILS(n) ? NULL : TENSOR_MALLOC(n))

#ifndef TENSOR_ASSERT
#include <assert.h>
#define TENSOR_ASSERT(x) assert(x)
#endif

#if defined(__cplusplus)
#define TENSOR__THREAD_LOCAL thread_local
#elif defined(_MSC_VER)
#define TENSOR__THREAD_LOCAL __declspec(thread)
#elif defined(__GNUC__) || defined(__clang__)
#define TENSOR__THREAD_LOCAL __thread
#else
#define TENSOR__THREAD_LOCAL _Thread_local
#endif

/* Atomics for what user threads share (>>threads-state): the shared half of reference counts,
   the counts other threads sum, the queues of what other threads freed. GCC and Clang builtins;
   another compiler gets plain accesses (then one user thread at a time). LOAD and STORE are
   relaxed (plain moves on x86 and ARM: the owner's stores to counts other threads read); ADD
   returns the new value with acquire-release order (the last reference's drop sees all others);
   the queue operations and SC accesses are sequentially consistent (a sender and an exiting
   owner must see each other's writes, >>scopes). */
#if defined(__GNUC__) || defined(__clang__)
#define TENSOR__LOAD(p) __atomic_load_n(p, __ATOMIC_RELAXED)
#define TENSOR__LOAD_ACQ(p) __atomic_load_n(p, __ATOMIC_ACQUIRE)
#define TENSOR__STORE(p, v) __atomic_store_n(p, v, __ATOMIC_RELAXED)
#define TENSOR__LOAD_SC(p) __atomic_load_n(p, __ATOMIC_SEQ_CST)
#define TENSOR__STORE_SC(p, v) __atomic_store_n(p, v, __ATOMIC_SEQ_CST)
#define TENSOR__ADD(p, v) __atomic_add_fetch(p, v, __ATOMIC_ACQ_REL)
#define TENSOR__EXCHANGE(p, v) __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST)
#define TENSOR__CAS(p, expected, v) __atomic_compare_exchange_n(p, expected, v, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)
#else
#define TENSOR__LOAD(p) (*(p))
#define TENSOR__LOAD_ACQ(p) (*(p))
#define TENSOR__STORE(p, v) (*(p) = (v))
#define TENSOR__LOAD_SC(p) (*(p))
#define TENSOR__STORE_SC(p, v) (*(p) = (v))
#define TENSOR__ADD(p, v) (*(p) += (v))
#define TENSOR__EXCHANGE(p, v) tensor__exchange_plain((void **)(p), (void *)(v))
#define TENSOR__CAS(p, expected, v) (*(p) == *(expected) ? (*(p) = (v), 1) : (*(expected) = *(p), 0))
static void *tensor__exchange_plain(void **p, void *v) { void *old = *p; *p = v; return old; }
#endif

#if defined(__GNUC__) || defined(__clang__)
#define TENSOR__PRINTF(f, a) __attribute__((format(printf, f, a)))
#define TENSOR__UNUSED __attribute__((unused))
#else
#define TENSOR__PRINTF(f, a)
#define TENSOR__UNUSED
#endif

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

#ifdef __cplusplus
extern "C" {
#endif

// >>core ---------------------------------------------------------------------------------------
/* A storage is a refcounted buffer on one device. A tensor is a view of one: dtype, shape, strides
   (in elements) and offset. Each `tensor` struct is one handle: the user owns it, or a scope does,
   or the library does (handles saved by autograd are "internal" and live outside the scopes). */

/* A reference count biased toward the thread that made the object (its owner), for storage and
   graph nodes (>>threads-state has the rules). */
typedef struct {
    struct tensor__thread *owner; /* set before any other thread can see the object */
    int64_t local;                /* references the owner holds: only the owner touches this; once it
                                     reaches 0 the owner's later references count in shared */
    int64_t shared;               /* atomic: 2 per reference another thread holds, + 1 once local is 0 */
} tensor__refs;

typedef struct tensor__storage {
    void *data;
    size_t nbytes;
    tensor__refs refs;      /* one per handle viewing it */
    tensor_device device;
    int64_t version;        /* bumped by every in-place write; autograd checks saved tensors against it */
    int64_t saved_by_graph; /* views of this storage saved by live autograd nodes, saved on its owner's thread */
    int64_t saved_shared;   /* atomic: the same, saved or released on other threads (may go negative) */
    /* the block that holds this struct and its data (>>memory) */
    struct tensor__storage *next_free; /* the next cached block of the same size class */
    void *raw;                         /* what TENSOR_MALLOC or mmap returned */
    size_t cap;                        /* data bytes the block holds */
    size_t map_len;                    /* mmap'd blocks: the mapping's length; 0 otherwise */
    int cls;                           /* size class; -1: too large to cache */
} tensor__storage;

struct tensor__node; /* an autograd graph node (>>autograd) */

struct tensor {
    tensor__storage *storage;
    int64_t offset;
    int64_t shape[TENSOR_MAX_DIMS];
    int64_t strides[TENSOR_MAX_DIMS];
    int ndim;
    tensor_dtype dtype;
    /* ownership: the list of handles this one sits in (a scope level, or the internal list), in
       the state of the thread that made it (>>threads-state) */
    struct tensor *list_prev, *list_next;
    int list_level; /* 0: root, k: the k-th nested scope, -1: internal (owned by the library) */
    struct tensor__thread *owner;
    struct tensor *remote_next; /* freed by another thread: the next in owner's remote_free */
    /* autograd */
    bool requires_grad;
    struct tensor__node *grad_fn;  /* the node that made this tensor; for a leaf that requires grad,
                                      its accumulator (which holds .grad) */
};

// >>errors -------------------------------------------------------------------------------------
static TENSOR__THREAD_LOCAL char tensor__error_buf[1024];
static TENSOR__THREAD_LOCAL bool tensor__error_set;
static tensor_error_fn tensor__error_handler;
static void *tensor__error_user;

TENSOR_API const char *tensor_last_error(void) { return tensor__error_set ? tensor__error_buf : NULL; }
TENSOR_API void tensor_clear_error(void) { tensor__error_set = false; tensor__error_buf[0] = 0; }
TENSOR_API void tensor_set_error_handler(tensor_error_fn fn, void *user) {
    tensor__error_handler = fn;
    tensor__error_user = user;
}

/* Records "fn: message". The first message is kept until cleared (later ones would usually be
   consequences of it); the handler sees every one. Always returns NULL so callers can
   `return tensor__fail(...)`. */
static TENSOR__PRINTF(2, 3) tensor *tensor__fail(const char *fn, const char *fmt, ...) {
    char msg[1024];
    int n = snprintf(msg, sizeof msg, "%s: ", fn);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof msg) vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
    va_end(ap);
    if (!tensor__error_set) {
        memcpy(tensor__error_buf, msg, sizeof msg);
        tensor__error_set = true;
    }
    if (tensor__error_handler) tensor__error_handler(msg, tensor__error_user);
    return NULL;
}

/* A NULL argument: either an earlier call failed (its message stands) or the caller passed NULL. */
static tensor *tensor__null_arg(const char *fn, const char *arg) {
    if (!tensor__error_set) tensor__fail(fn, "argument '%s' is NULL", arg);
    return NULL;
}
#define TENSOR__CHECK_ARG(fn, t) do { if (!(t)) return tensor__null_arg(fn, #t); } while (0)

// >>dtypes -------------------------------------------------------------------------------------
static const char *const tensor__dtype_names[TENSOR_DTYPE_COUNT] = {
    "float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8", "bool"};
static const size_t tensor__dtype_sizes[TENSOR_DTYPE_COUNT] = {4, 8, 2, 2, 4, 8, 1, 1};

static bool tensor__dtype_valid(tensor_dtype d) { return (unsigned)d < TENSOR_DTYPE_COUNT; }
static bool tensor__is_float(tensor_dtype d) { return d == TENSOR_F32 || d == TENSOR_F64 || d == TENSOR_F16 || d == TENSOR_BF16; }
static bool tensor__is_int(tensor_dtype d) { return d == TENSOR_I32 || d == TENSOR_I64 || d == TENSOR_U8; }

TENSOR_API const char *tensor_dtype_name(tensor_dtype d) { return tensor__dtype_valid(d) ? tensor__dtype_names[d] : "invalid"; }
TENSOR_API size_t tensor_dtype_size(tensor_dtype d) { return tensor__dtype_valid(d) ? tensor__dtype_sizes[d] : 0; }

/* torch.promote_types. Rows and columns in enum order: f32 f64 f16 bf16 i32 i64 u8 bool. */
static const unsigned char tensor__promotion[TENSOR_DTYPE_COUNT][TENSOR_DTYPE_COUNT] = {
    /* f32  */ {TENSOR_F32, TENSOR_F64, TENSOR_F32, TENSOR_F32, TENSOR_F32, TENSOR_F32, TENSOR_F32, TENSOR_F32},
    /* f64  */ {TENSOR_F64, TENSOR_F64, TENSOR_F64, TENSOR_F64, TENSOR_F64, TENSOR_F64, TENSOR_F64, TENSOR_F64},
    /* f16  */ {TENSOR_F32, TENSOR_F64, TENSOR_F16, TENSOR_F32, TENSOR_F16, TENSOR_F16, TENSOR_F16, TENSOR_F16},
    /* bf16 */ {TENSOR_F32, TENSOR_F64, TENSOR_F32, TENSOR_BF16, TENSOR_BF16, TENSOR_BF16, TENSOR_BF16, TENSOR_BF16},
    /* i32  */ {TENSOR_F32, TENSOR_F64, TENSOR_F16, TENSOR_BF16, TENSOR_I32, TENSOR_I64, TENSOR_I32, TENSOR_I32},
    /* i64  */ {TENSOR_F32, TENSOR_F64, TENSOR_F16, TENSOR_BF16, TENSOR_I64, TENSOR_I64, TENSOR_I64, TENSOR_I64},
    /* u8   */ {TENSOR_F32, TENSOR_F64, TENSOR_F16, TENSOR_BF16, TENSOR_I32, TENSOR_I64, TENSOR_U8, TENSOR_U8},
    /* bool */ {TENSOR_F32, TENSOR_F64, TENSOR_F16, TENSOR_BF16, TENSOR_I32, TENSOR_I64, TENSOR_U8, TENSOR_BOOL},
};

TENSOR_API tensor_dtype tensor_promote_types(tensor_dtype a, tensor_dtype b) {
    if (!tensor__dtype_valid(a) || !tensor__dtype_valid(b)) {
        tensor__fail("tensor_promote_types", "invalid dtype %d or %d", (int)a, (int)b);
        return TENSOR_F32;
    }
    return (tensor_dtype)tensor__promotion[a][b];
}

static int tensor__category(tensor_dtype d) { return d == TENSOR_BOOL ? 0 : tensor__is_int(d) ? 1 : 2; }

/* PyTorch's result_type for tensors: dimensioned operands decide within a category; a 0-dim operand
   only matters when its category (bool < int < float) is higher than the dimensioned ones'. */
static tensor_dtype tensor__result_type(int n, tensor *const *ts) {
    int have_dim = 0, have_zero = 0;
    tensor_dtype dim_t = TENSOR_BOOL, zero_t = TENSOR_BOOL;
    for (int i = 0; i < n; i++) {
        if (!ts[i]) continue;
        if (ts[i]->ndim > 0) { dim_t = have_dim ? (tensor_dtype)tensor__promotion[dim_t][ts[i]->dtype] : ts[i]->dtype; have_dim = 1; }
        else { zero_t = have_zero ? (tensor_dtype)tensor__promotion[zero_t][ts[i]->dtype] : ts[i]->dtype; have_zero = 1; }
    }
    if (!have_dim) return zero_t;
    if (!have_zero) return dim_t;
    if (tensor__category(zero_t) > tensor__category(dim_t)) return (tensor_dtype)tensor__promotion[dim_t][zero_t];
    return dim_t;
}

/* f16 and bf16 <-> f32, round to nearest even. */
static float tensor__bits_to_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint32_t tensor__f32_to_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

static float tensor__f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0x1f) return tensor__bits_to_f32(sign | 0x7f800000u | (man << 13));   /* inf, NaN */
    if (exp == 0) {                                                                   /* zero, subnormal */
        float v = (float)man * (1.0f / 16777216.0f);                                    /* man * 2^-24 */
        return sign ? -v : v;
    }
    return tensor__bits_to_f32(sign | ((exp + 112) << 23) | (man << 13));
}

static uint16_t tensor__f32_to_f16(float f) {
    uint32_t u = tensor__f32_to_bits(f), sign = (u >> 16) & 0x8000;
    uint32_t a = u & 0x7fffffffu;
    if (a >= 0x7f800000u) return (uint16_t)(sign | 0x7c00 | (a > 0x7f800000u ? 0x200 | ((a >> 13) & 0x3ff) : 0));
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* rounds to >= 65520: inf */
    if (a < 0x38800000u) {                                  /* below 2^-14: subnormal or zero */
        float v = tensor__bits_to_f32(a) * 16777216.0f;      /* exact scaling: value in units of 2^-24 */
        uint32_t m = (uint32_t)v;
        float rem = v - (float)m;
        if (rem > 0.5f || (rem == 0.5f && (m & 1))) m++;
        return (uint16_t)(sign | m);
    }
    uint32_t r = a - 0x38000000u; /* rebias exponent 127 -> 15 */
    uint32_t h = r >> 13, low = r & 0x1fff;
    if (low > 0x1000 || (low == 0x1000 && (h & 1))) h++;
    return (uint16_t)(sign | h);
}

static float tensor__bf16_to_f32(uint16_t b) { return tensor__bits_to_f32((uint32_t)b << 16); }
static uint16_t tensor__f32_to_bf16(float f) {
    uint32_t u = tensor__f32_to_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fff + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

/* Generic loads and stores: the reference path of every kernel. Integer values narrow like C's
   conversion on two's-complement machines (wrap), defined here through unsigned arithmetic. */
static double tensor__load_f64(const char *p, tensor_dtype d) {
    switch (d) {
    case TENSOR_F32: { float v; memcpy(&v, p, 4); return v; }
    case TENSOR_F64: { double v; memcpy(&v, p, 8); return v; }
    case TENSOR_F16: { uint16_t v; memcpy(&v, p, 2); return tensor__f16_to_f32(v); }
    case TENSOR_BF16: { uint16_t v; memcpy(&v, p, 2); return tensor__bf16_to_f32(v); }
    case TENSOR_I32: { int32_t v; memcpy(&v, p, 4); return v; }
    case TENSOR_I64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
    case TENSOR_U8: return *(const uint8_t *)p;
    case TENSOR_BOOL: return *(const uint8_t *)p != 0;
    }
    return 0;
}

static int64_t tensor__load_i64(const char *p, tensor_dtype d) {
    switch (d) {
    case TENSOR_I32: { int32_t v; memcpy(&v, p, 4); return v; }
    case TENSOR_I64: { int64_t v; memcpy(&v, p, 8); return v; }
    case TENSOR_U8: return *(const uint8_t *)p;
    case TENSOR_BOOL: return *(const uint8_t *)p != 0;
    default: return tensor__double_to_i64(tensor__load_f64(p, d));
    }
}

static void tensor__store_i64(char *p, tensor_dtype d, int64_t v) {
    switch (d) {
    case TENSOR_I32: { int32_t w = (int32_t)(uint32_t)(uint64_t)v; memcpy(p, &w, 4); return; }
    case TENSOR_I64: memcpy(p, &v, 8); return;
    case TENSOR_U8: *(uint8_t *)p = (uint8_t)(uint64_t)v; return;
    case TENSOR_BOOL: *(uint8_t *)p = v != 0; return;
    case TENSOR_F32: { float w = (float)v; memcpy(p, &w, 4); return; }
    case TENSOR_F64: { double w = (double)v; memcpy(p, &w, 8); return; }
    case TENSOR_F16: { uint16_t w = tensor__f32_to_f16((float)v); memcpy(p, &w, 2); return; }
    case TENSOR_BF16: { uint16_t w = tensor__f32_to_bf16((float)v); memcpy(p, &w, 2); return; }
    }
}

static void tensor__store_f64(char *p, tensor_dtype d, double v) {
    switch (d) {
    case TENSOR_F32: { float w = (float)v; memcpy(p, &w, 4); return; }
    case TENSOR_F64: memcpy(p, &v, 8); return;
    case TENSOR_F16: { uint16_t w = tensor__f32_to_f16((float)v); memcpy(p, &w, 2); return; }
    case TENSOR_BF16: { uint16_t w = tensor__f32_to_bf16((float)v); memcpy(p, &w, 2); return; }
    case TENSOR_BOOL: *(uint8_t *)p = v != 0; return; /* NaN is true, as in PyTorch */
    default: tensor__store_i64(p, d, tensor__double_to_i64(v)); return;
    }
}

// >>memory -------------------------------------------------------------------------------------
/* Buffers for kernels' scratch: 64-byte aligned, the real block start kept just before the
   returned pointer. Plain TENSOR__MALLOC/TENSOR_FREE: kernels may call these from pool workers. */
static void *tensor__alloc_aligned(size_t n) {
    if (n > SIZE_MAX - 64 - sizeof(void *)) return NULL;
    char *raw = (char *)TENSOR__MALLOC(n + 64 + sizeof(void *));
    if (!raw) return NULL;
    uintptr_t a = ((uintptr_t)(raw + sizeof(void *)) + 63) & ~(uintptr_t)63;
    ((void **)a)[-1] = raw;
    return (void *)a;
}
static void tensor__free_aligned(void *p) { if (p) TENSOR_FREE(((void **)p)[-1]); }

/* The caching storage allocator. A storage is one block: its tensor__storage struct, then (64-byte
   aligned) its data. A released block goes to the free list of its size class and the next storage
   of that class takes it back, so an op that allocates its output in a training loop reuses last
   step's block: no malloc, no fresh pages to fault in, no zeroing by the kernel. Size classes:
   powers of two up to 4 KiB, then four per octave (at most 25% slack). Blocks of 2 MiB and more are
   mmap'd and marked MADV_HUGEPAGE on Linux (one fault per 2 MiB instead of 512). At most
   TENSOR_CACHE_LIMIT bytes wait in the cache; beyond that a released block is freed.
   tensor_live_bytes counts storage in use, not cached blocks.
   Threads: each user thread has free lists of its own (in its tensor__thread, below), so the hot
   path takes no lock; a block goes to the lists of the thread that releases it. A thread keeps at
   most its share of TENSOR_CACHE_LIMIT: the limit divided by the threads using the library (all
   of it in a single-threaded program). One shared cache under a spin lock was measured too: two
   uncontended atomic exchanges per op (a block taken, one given back), about 1 ns of the op
   overhead here, within the noise; but the design wants no lock on the hot path, and threads
   making tensors at once would contend on it. Kernels that run on pool workers through
   tensor__parallel_for only read and write their operands and allocate scratch with
   tensor__alloc_aligned. */
#define TENSOR__BLOCK_HEADER 128 /* sizeof(tensor__storage) rounded up to the data alignment */
#define TENSOR__N_CLASSES 160
#define TENSOR__HUGE ((size_t)2 << 20)

// >>threads-state ------------------------------------------------------------------------------
/* Several user threads may call the library at once, each with its own tensors.
   Per thread (a tensor__thread, made on the thread's first call): the scope stack and the handles
   its scopes own (and its internal list, handles the library owns for it), its caches of handle
   structs, storage blocks and graph nodes, its autograd release worklist, its random generator and
   its live counts. Only its own thread reads or writes these, so no op takes a lock. Also per
   thread, as thread-locals: the last error, grad mode, the pool's nesting flag.
   Shared, and how:
   - storage and graph nodes (a weight several threads read gets views and graph edges from each):
     biased reference counts (Choi et al., PACT 2018; CPython's free-threaded build has them). The
     thread that made an object (its owner) counts its own references in `local`, plain memory;
     other threads count theirs in `shared`, atomically. The rule that makes this exact: a
     reference is dropped on the thread that took it. A handle takes its references (storage, graph
     node) when it is made and drops them when it is released, on its owner's thread: tensor_free
     from another thread only sends the handle to its owner's `remote_free`, and the owner releases
     it at its next handle, scope end or count (tensor__drain). A node takes its references (its
     edges) when it is recorded and drops them when it is destroyed, on its owner's thread: the
     last reference dropped elsewhere sends the node to its owner's `remote_nodes`. So neither half
     goes negative; when `local` reaches 0 the owner adds 1 to `shared` and from then on counts its
     own references there too; whoever brings `shared` to 1 (local done, no reference left) frees
     the object. A single-threaded program only ever takes the plain path.
   - the counts tensor_live_handles and tensor_live_bytes report: per thread (a thread counts what
     it makes and what it frees, so one may go negative), stored atomically, summed over the
     registry.
   - the registry: every state, in a list under a spin lock taken when a thread makes its state or
     ends, by the counts' readers, and by tensor_shutdown, which frees every thread's handles. A
     state outlives its thread: a thread that ends gives its caches back (pthreads builds, >>threads)
     and leaves the handles it kept at its root, valid, for any thread to free; what is then sent to
     it is released at once by the sender, acting as the ended thread under the registry lock
     (tensor__reap); the next thread to start takes the state over.
   - the storage cache's bound (TENSOR_CACHE_LIMIT shared out, >>memory), the default seed (>>rng),
     the thread pool (>>threads), the backward pass's epoch counter (>>autograd): atomics or locks
     of their own. */
typedef struct { tensor *head; } tensor__handle_list;
/* A Philox4x32-10 generator (>>rng): the key, the 64-bit block counter, the block being read, and
   the stream (the counter's third word: generators of different streams never meet). */
typedef struct { uint32_t key[2]; uint64_t counter; uint32_t block[4]; int used; uint32_t stream; } tensor__philox;
#define TENSOR__NODE_LISTS 8 /* node cache lists: one per input count up to TENSOR__MAX_INPUTS (>>autograd checks) */

typedef struct tensor__thread {
    /* >>scopes: levels[0..depth] (level 0 the root), the internal list, freed handle structs */
    tensor__handle_list *levels;
    int depth, levels_cap;
    tensor__handle_list internal;
    tensor *free_handles; /* linked through list_next */
    int64_t n_free_handles;
    /* atomic: what other threads freed of this thread's, for it to release: handles (linked
       through remote_next) and graph nodes (linked through free_next); `pending` is set after a
       send and cleared before a drain, so the hot path checks one word */
    tensor *remote_free;
    struct tensor__node *remote_nodes;
    int pending;
    /* >>memory: the storage cache */
    tensor__storage *free_blocks[TENSOR__N_CLASSES];
    size_t cached_bytes;
    /* the counts, stored atomically by this thread only */
    int64_t live_handles, live_bytes;
    /* >>autograd: freed nodes by input count; the worklist of nodes to destroy */
    struct tensor__node *node_cache[TENSOR__NODE_LISTS];
    int64_t node_cache_n;
    struct tensor__node **release_stack;
    int64_t release_n, release_cap;
    bool releasing;
    /* >>rng: the generator, set up from the default seed on the first draw unless seeded here */
    tensor__philox rng;
    bool rng_seeded;
    /* the registry's */
    uint32_t index; /* its thread's place in the order threads started using the library: the
                       stream of an unseeded generator (a state taken over gets a new one) */
    int exited;     /* atomic (SC): its thread ended; the next new thread takes the state over */
    struct tensor__thread *next;
} tensor__thread;

typedef char tensor__block_header_fits[sizeof(tensor__storage) <= 128 ? 1 : -1]; /* TENSOR__BLOCK_HEADER */

static TENSOR__THREAD_LOCAL tensor__thread *tensor__self; /* NULL until this thread's first call */
static TENSOR__THREAD_LOCAL bool tensor__reaping;         /* acting as ended threads (tensor__reap) */
static tensor__thread *tensor__threads;                   /* the registry */
static int tensor__threads_lock;
static uint32_t tensor__n_starts;
static int tensor__n_running;                             /* states of running threads */
static size_t tensor__cache_share = TENSOR_CACHE_LIMIT;   /* atomic: TENSOR_CACHE_LIMIT / tensor__n_running */
/* atomic: what threads without a state (no memory for one) freed of others' handles and storage */
static int64_t tensor__stateless_handles, tensor__stateless_bytes;

/* The registry's lock: a spin lock, held for a few list steps (the counts' readers, a thread's
   start or end), or while releasing what was sent to ended threads, or for tensor_shutdown. */
static void tensor__registry_lock(void) {
#if defined(__GNUC__) || defined(__clang__)
    while (__atomic_exchange_n(&tensor__threads_lock, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(&tensor__threads_lock, __ATOMIC_RELAXED)) {
        }
#endif
}
static void tensor__registry_unlock(void) {
#if defined(__GNUC__) || defined(__clang__)
    __atomic_store_n(&tensor__threads_lock, 0, __ATOMIC_RELEASE);
#endif
}
/* Under the lock: a thread started or ended. */
static void tensor__running_add(int d) {
    tensor__n_running += d;
    TENSOR__STORE(&tensor__cache_share, TENSOR_CACHE_LIMIT / (size_t)(tensor__n_running > 1 ? tensor__n_running : 1));
}

static void tensor__thread_at_exit(tensor__thread *s); /* >>threads: have tensor__thread_exit(s) run when this thread ends (NULL: nothing) */

/* The calling thread's state: takes over an ended thread's (one with no scope left open) or makes
   one; NULL when there is no memory for it. */
static tensor__thread *tensor__thread_make(void) {
    tensor__thread *s = NULL;
    tensor__registry_lock();
    for (tensor__thread *t = tensor__threads; t && !s; t = t->next)
        if (TENSOR__LOAD_SC(&t->exited) && t->depth == 0) s = t;
    if (s) TENSOR__STORE_SC(&s->exited, 0);
    else if ((s = (tensor__thread *)TENSOR__MALLOC(sizeof *s)) != NULL) {
        memset(s, 0, sizeof *s);
        s->next = tensor__threads;
        tensor__threads = s;
    }
    if (s) {
        s->index = tensor__n_starts++;
        tensor__running_add(1);
    }
    tensor__registry_unlock();
    if (!s) return NULL;
    s->rng_seeded = false;
    tensor__self = s;
    tensor__thread_at_exit(s);
    return s;
}
static tensor__thread *tensor__me(void) {
    tensor__thread *s = tensor__self;
    return s ? s : tensor__thread_make();
}

/* Adds d to the calling thread's count (me: its state, or NULL). */
static void tensor__count_handles(tensor__thread *me, int64_t d) {
    if (me) TENSOR__STORE(&me->live_handles, me->live_handles + d);
    else TENSOR__ADD(&tensor__stateless_handles, d);
}
static void tensor__count_bytes(tensor__thread *me, int64_t d) {
    if (me) TENSOR__STORE(&me->live_bytes, me->live_bytes + d);
    else TENSOR__ADD(&tensor__stateless_bytes, d);
}

/* Biased reference counts: a new object's one reference, its owner's. */
static void tensor__refs_init(tensor__refs *r, tensor__thread *owner) {
    r->owner = owner;
    r->local = 1;
    r->shared = 0;
}
/* One more reference, taken by the calling thread me. */
static inline void tensor__refs_take(tensor__refs *r, tensor__thread *me) {
    if (r->owner == me && r->local > 0) r->local++;
    else TENSOR__ADD(&r->shared, 2);
}
/* Drops one reference me took; true when it was the last (the caller frees the object). When the
   owner drops its last and no other thread holds one, nobody can take one any more (a reference
   is only taken from one held): no read-modify-write then, the usual case. */
static inline bool tensor__refs_drop(tensor__refs *r, tensor__thread *me) {
    if (r->owner == me && r->local > 0)
        return --r->local == 0 && (TENSOR__LOAD_ACQ(&r->shared) == 0 || TENSOR__ADD(&r->shared, 1) == 1);
    return TENSOR__ADD(&r->shared, -2) == 1;
}
/* Whether me holds the only reference (one another thread may not be handed meanwhile). */
static TENSOR__UNUSED bool tensor__refs_sole(tensor__refs *r, tensor__thread *me) {
    return r->owner == me && r->local == 1 && TENSOR__LOAD(&r->shared) == 0;
}

static int tensor__log2_floor(uint64_t v) { /* v > 0 */
#if defined(__GNUC__) || defined(__clang__)
    return 63 - __builtin_clzll(v);
#else
    int r = 0;
    while (v >>= 1) r++;
    return r;
#endif
}

/* The size class of a block of n data bytes and its capacity; -1 (cap n) beyond the classes. */
static int tensor__size_class(size_t n, size_t *cap) {
    if (n <= 64) { *cap = 64; return 0; }
    if (n <= 4096) {
        int k = tensor__log2_floor((uint64_t)(n - 1)) + 1; /* 2^(k-1) < n <= 2^k */
        *cap = (size_t)1 << k;
        return k - 6;
    }
    int k = tensor__log2_floor((uint64_t)(n - 1)); /* 2^k < n <= 2^(k+1) */
    size_t step = (size_t)1 << (k - 2), base = (size_t)1 << k;
    size_t j = (n - base + step - 1) / step;          /* 1..4 quarter steps above 2^k */
    int cls = 7 + (k - 12) * 4 + (int)j - 1;
    if (cls >= TENSOR__N_CLASSES) { *cap = n; return -1; }
    *cap = base + j * step;
    return cls;
}

#if TENSOR__MMAP
/* The machine's RAM plus swap in bytes; SIZE_MAX when unknown. */
static size_t tensor__memory_total(void) {
    struct sysinfo si;
    if (sysinfo(&si) != 0 || si.mem_unit == 0) return SIZE_MAX;
    unsigned long long units = (unsigned long long)si.totalram + si.totalswap;
    return units > SIZE_MAX / si.mem_unit ? SIZE_MAX : (size_t)(units * si.mem_unit);
}
#endif

/* A new block for cap data bytes; NULL when the system has no memory. */
static tensor__storage *tensor__block_new(size_t cap, int cls) {
    if (cap > SIZE_MAX / 2) return NULL;
    tensor__storage *s;
#if TENSOR__MMAP
    if (cap >= TENSOR__HUGE) {
        /* over-map by 2 MiB so the block can start on a huge-page boundary */
        size_t len = (TENSOR__BLOCK_HEADER + cap + TENSOR__HUGE + 4095) & ~(size_t)4095;
        /* more than the machine has: refused now, as Linux's default overcommit would, rather than
           mapped (overcommit_memory=1) and then killed when a fill touches it (1 GiB and up only:
           smaller blocks skip the system call) */
        if (cap >= ((size_t)1 << 30) && len > tensor__memory_total()) return NULL;
        void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) return NULL;
        uintptr_t a = ((uintptr_t)m + TENSOR__HUGE - 1) & ~(uintptr_t)(TENSOR__HUGE - 1);
        madvise((void *)a, (len - (a - (uintptr_t)m)) & ~(size_t)4095, MADV_HUGEPAGE); /* advice only: failure is fine */
        s = (tensor__storage *)a;
        s->raw = m;
        s->map_len = len;
        s->cap = cap;
        s->cls = cls;
        s->data = (char *)a + TENSOR__BLOCK_HEADER;
        return s;
    }
#endif
    char *raw = (char *)TENSOR_MALLOC(TENSOR__BLOCK_HEADER + cap + 63); /* tensor__block_get counted the request */
    if (!raw) return NULL;
    s = (tensor__storage *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
    s->raw = raw;
    s->map_len = 0;
    s->cap = cap;
    s->cls = cls;
    s->data = (char *)s + TENSOR__BLOCK_HEADER;
    return s;
}

static void tensor__block_free(tensor__storage *s) {
#if TENSOR__MMAP
    if (s->map_len) { munmap(s->raw, s->map_len); return; }
#endif
    TENSOR_FREE(s->raw);
}

static void tensor__free_handles_clear(tensor__thread *me); /* >>scopes: the cached handle structs */
static void tensor__node_cache_clear(tensor__thread *me);   /* >>autograd: the cached graph nodes */

static void tensor__blocks_clear(tensor__thread *me) {
    for (int c = 0; c < TENSOR__N_CLASSES; c++)
        while (me->free_blocks[c]) {
            tensor__storage *s = me->free_blocks[c];
            me->free_blocks[c] = s->next_free;
            TENSOR__UNPOISON(s->data, s->cap);
            tensor__block_free(s);
        }
    me->cached_bytes = 0;
}

/* Gives the calling thread's cached blocks (and cached handle and graph-node structs) back to the
   system; other threads' caches are theirs (a thread's go back when it exits). */
static void tensor__devices_empty_cache(void); /* >>devices */
TENSOR_API void tensor_empty_cache(void) {
    tensor__devices_empty_cache();
    tensor__thread *me = tensor__self;
    if (!me) return;
    tensor__free_handles_clear(me);
    tensor__node_cache_clear(me);
    tensor__blocks_clear(me);
}

/* A block for nbytes of data: a cached one of its size class, or a new one; NULL when out of memory. */
static tensor__storage *tensor__block_get(size_t nbytes) {
    if (TENSOR__ALLOC_FAILS(nbytes)) return NULL;
    tensor__thread *me = tensor__self; /* NULL (a thread with no state): no cache */
    size_t cap;
    int cls = tensor__size_class(nbytes, &cap);
    tensor__storage *s = cls >= 0 && me ? me->free_blocks[cls] : NULL;
    if (s) {
        me->free_blocks[cls] = s->next_free;
        me->cached_bytes -= s->cap;
        TENSOR__UNPOISON(s->data, s->cap);
        return s;
    }
    s = tensor__block_new(cap, cls);
    if (!s && me && me->cached_bytes) { tensor_empty_cache(); s = tensor__block_new(cap, cls); } /* cached blocks of other sizes may be what is missing */
    return s;
}

/* Back to the cache of me (the calling thread's state, or NULL), or to the system when it does not
   fit in the thread's share of TENSOR_CACHE_LIMIT. */
static inline void tensor__block_put(tensor__thread *me, tensor__storage *s) {
    size_t limit = TENSOR__LOAD(&tensor__cache_share);
    if (me && s->cls >= 0 && me->cached_bytes <= limit && s->cap <= limit - me->cached_bytes) {
        s->next_free = me->free_blocks[s->cls];
        me->free_blocks[s->cls] = s;
        me->cached_bytes += s->cap;
        TENSOR__POISON(s->data, s->cap);
        return;
    }
    tensor__block_free(s);
}

/* Scratch memory of kernels from the same cache (64-byte aligned; NULL when out of memory): large
   temporary buffers then cost no page faults either. Only on a user's thread, like storage:
   code running on pool workers uses tensor__alloc_aligned. */
static TENSOR__UNUSED void *tensor__cache_alloc(size_t n) {
    tensor__storage *s = tensor__block_get(n);
    return s ? s->data : NULL;
}
static TENSOR__UNUSED void tensor__cache_free(void *p) {
    if (p) tensor__block_put(tensor__self, (tensor__storage *)((char *)p - TENSOR__BLOCK_HEADER));
}

/* me: the calling thread's state, the owner of the storage's references (tensor__storage_owner). */
static tensor__storage *tensor__storage_init(tensor__storage *s, tensor__thread *me, size_t nbytes, tensor_device device) {
    s->nbytes = nbytes;
    tensor__refs_init(&s->refs, me);
    s->device = device;
    s->version = 0;
    s->saved_by_graph = 0;
    s->saved_shared = 0;
    s->next_free = NULL;
    tensor__count_bytes(me, (int64_t)nbytes);
    return s;
}

static tensor__storage *tensor__storage_external(const char *fn, void *data, size_t nbytes, tensor_device device, void (*release)(void *), void *ctx);
static tensor__storage *tensor__device_storage(const char *fn, size_t nbytes, tensor_device device); /* >>devices */

/* The calling thread's state, made now when this is its first call (a load or a DLPack import
   makes storage before any handle), or NULL with an error. A storage owned by no state would
   count the reference its first handle takes over as another thread's, and its count would never
   come back to zero (issue 24: a file mapped on a fresh thread was never unmapped). */
static tensor__thread *tensor__storage_owner(const char *fn) {
    tensor__thread *me = tensor__me();
    if (!me) tensor__fail(fn, "out of memory for the calling thread's state");
    return me;
}

static tensor__storage *tensor__storage_new(const char *fn, size_t nbytes, tensor_device device) {
    if (device != TENSOR_CPU) return tensor__device_storage(fn, nbytes, device);
    tensor__thread *me = tensor__storage_owner(fn);
    if (!me) return NULL;
    tensor__storage *s = tensor__block_get(nbytes);
    if (!s) return (tensor__storage *)tensor__fail(fn, "out of memory allocating %zu bytes", nbytes);
    return tensor__storage_init(s, me, nbytes, device);
}

/* Storage over bytes someone else owns (a mapped file, a DLPack producer's buffer): a header block
   of its own, never cached, whose release function runs when the last view of it goes, on
   whichever thread that is. It takes ownership: on failure release runs at once. */
#define TENSOR__CLS_EXTERNAL (-2)
typedef struct { void (*release)(void *ctx); void *ctx; } tensor__external;
static tensor__external *tensor__external_of(tensor__storage *s) { return (tensor__external *)((char *)s + TENSOR__BLOCK_HEADER); }
static tensor__storage *tensor__storage_external(const char *fn, void *data, size_t nbytes, tensor_device device, void (*release)(void *), void *ctx) {
    tensor__thread *me = tensor__storage_owner(fn);
    if (!me) {
        if (release) release(ctx);
        return NULL;
    }
    char *raw = (char *)TENSOR__MALLOC(TENSOR__BLOCK_HEADER + sizeof(tensor__external) + 63);
    if (!raw) {
        if (release) release(ctx);
        return (tensor__storage *)tensor__fail(fn, "out of memory allocating a storage header");
    }
    tensor__storage *s = (tensor__storage *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
    s->raw = raw;
    s->map_len = 0;
    s->cap = 0;
    s->cls = TENSOR__CLS_EXTERNAL;
    s->data = data;
    tensor__external_of(s)->release = release;
    tensor__external_of(s)->ctx = ctx;
    return tensor__storage_init(s, me, nbytes, device);
}

/* Drops one reference the calling thread took; the last one gives the block back, whichever
   thread drops it (a storage holds no references itself). */
static inline void tensor__storage_release(tensor__thread *me, tensor__storage *s) {
    if (!s || !tensor__refs_drop(&s->refs, me)) return;
    tensor__count_bytes(me, -(int64_t)s->nbytes);
    if (s->cls == TENSOR__CLS_EXTERNAL) {
        tensor__external e = *tensor__external_of(s);
        TENSOR_FREE(s->raw);
        if (e.release) e.release(e.ctx);
        return;
    }
    tensor__block_put(me, s);
}

// >>devices ------------------------------------------------------------------------------------
/* Devices other than the CPU come from their own translation unit (tensor_cuda.cu), which passes
   its table to tensor__register_device from a static initializer, before main. The table is
   checked the first time the device is asked for (tensor__device_ready): a table built against
   another tensor.h (another ABI, another op list) is refused with a message, never called. Its
   state goes 0 (unchecked) -> 2 (being checked, by one thread) -> 1 (usable) or -1 (not). */
static const tensor__device *tensor__devices[TENSOR_DEVICE_COUNT];
static int tensor__device_states[TENSOR_DEVICE_COUNT]; /* atomic */
static int tensor__allow_tf32; /* atomic: tensor_set_allow_tf32's setting, given to a device when it gets ready too */

TENSOR_API void tensor__register_device(const tensor__device *d) {
    if (d && d->device != TENSOR_CPU && (unsigned)d->device < TENSOR_DEVICE_COUNT) tensor__devices[d->device] = d;
}

static const char *tensor__device_name(tensor_device d) { return d == TENSOR_CPU ? "cpu" : d == TENSOR_CUDA ? "cuda" : "?"; }

/* Why the registered table of dev cannot be used, into why[n]; NULL when it can. */
static const char *tensor__device_problem(tensor_device dev, char *why, size_t n) {
    const tensor__device *d = tensor__devices[dev];
    if (!d) return dev == TENSOR_CUDA ? "CUDA is not available (link tensor_cuda.o and run on a machine with a GPU)" : "no such device";
    if (d->abi != TENSOR__DEVICE_ABI || d->op_count != TENSOR_OP_COUNT || !d->op_names || !d->kernels || !d->device_count ||
        !d->alloc || !d->free || !d->copy || !d->synchronize) {
        snprintf(why, n, "the linked %s object was built for another version of tensor.h (device ABI %d, %d ops; this one: ABI %d, %d ops): rebuild it",
                 tensor__device_name(dev), d->abi, d->op_count, TENSOR__DEVICE_ABI, (int)TENSOR_OP_COUNT);
        return why;
    }
    for (int i = 0; i < TENSOR_OP_COUNT; i++)
        if (!d->op_names[i] || strcmp(d->op_names[i], tensor_op_name((tensor_op)i)) != 0) {
            snprintf(why, n, "the linked %s object was built for another op list (op %d is %s there, %s here): rebuild it", tensor__device_name(dev), i,
                     d->op_names[i] ? d->op_names[i] : "missing", tensor_op_name((tensor_op)i));
            return why;
        }
    return NULL;
}

static void tensor__device_fill_column(tensor_device dev); /* >>dispatch: the device's kernels into the table */

/* Whether dev's table is usable (checked once; every thread sees the same answer). */
static bool tensor__device_ready(tensor_device dev) {
    for (;;) {
        int st = TENSOR__LOAD_ACQ(&tensor__device_states[dev]), zero = 0;
        if (st == 1 || st == -1) return st == 1;
        if (st == 0 && TENSOR__CAS(&tensor__device_states[dev], &zero, 2)) {
            char why[256];
            bool ok = dev != TENSOR_CPU && !tensor__device_problem(dev, why, sizeof why);
            if (ok) tensor__device_fill_column(dev);
            TENSOR__STORE_SC(&tensor__device_states[dev], ok ? 1 : -1);
            return ok;
        }
        /* another thread is checking it: a moment */
    }
}
static void tensor__devices_empty_cache(void) {
    for (int d = 1; d < TENSOR_DEVICE_COUNT; d++) /* a device's cache is shared by every thread */
        if (TENSOR__LOAD_ACQ(&tensor__device_states[d]) == 1 && tensor__devices[d]->empty_cache) tensor__devices[d]->empty_cache();
}

/* dev's table when dev is usable and has a device present; else NULL after recording why. */
static const tensor__device *tensor__device_get(const char *fn, tensor_device dev) {
    char why[256];
    const char *problem;
    if (!tensor__device_ready(dev)) return (const tensor__device *)tensor__fail(fn, "%s", (problem = tensor__device_problem(dev, why, sizeof why)) ? problem : "no such device");
    const tensor__device *d = tensor__devices[dev];
    if (d->device_count() <= 0) return (const tensor__device *)tensor__fail(fn, "%s is not available: the linked %s object found no device", dev == TENSOR_CUDA ? "CUDA" : "the device", tensor__device_name(dev));
    return d;
}

static void tensor__device_release_cuda(void *p) { tensor__devices[TENSOR_CUDA]->free(p); }

/* Storage in device memory: the device's allocator holds the bytes, a header of our own points at
   them (external storage: the device's free runs when the last view goes, on any thread). */
static tensor__storage *tensor__device_storage(const char *fn, size_t nbytes, tensor_device device) {
    if (device != TENSOR_CUDA) return (tensor__storage *)tensor__fail(fn, "invalid device %d", (int)device);
    /* every op's output comes here: only the table's check (an atomic load once done), not the
       device count, which tensor_to_device asked when the first tensor went there */
    if (!tensor__device_ready(device)) return (tensor__storage *)tensor__device_get(fn, device);
    const tensor__device *d = tensor__devices[device];
    if (TENSOR__ALLOC_FAILS(nbytes)) return (tensor__storage *)tensor__fail(fn, "out of memory allocating %zu bytes on %s", nbytes, tensor__device_name(device));
    char err[256] = "";
    void *p = d->alloc(nbytes, err, sizeof err);
    if (!p) return (tensor__storage *)tensor__fail(fn, "%s", err[0] ? err : "out of device memory");
    return tensor__storage_external(fn, p, nbytes, device, tensor__device_release_cuda, p);
}

/* Autograd's saves of a storage's views (>>autograd): counted like references, but only summed. */
static TENSOR__UNUSED void tensor__storage_saved_add(tensor__storage *s, int64_t d) {
    if (s->refs.owner == tensor__self) TENSOR__STORE(&s->saved_by_graph, s->saved_by_graph + d);
    else TENSOR__ADD(&s->saved_shared, d);
}
static TENSOR__UNUSED bool tensor__storage_saved(tensor__storage *s) {
    return TENSOR__LOAD(&s->saved_by_graph) + TENSOR__LOAD(&s->saved_shared) > 0;
}

// >>scopes -------------------------------------------------------------------------------------
/* Handle lists, per thread (in its tensor__thread): level 0 is the root, each tensor_scope_begin
   opens the next level, and the internal list holds handles the library owns (autograd saves,
   .grad). A handle sits in a list of the thread that made it (its owner): only that thread links
   and unlinks, so lists need no lock. Any thread may free a handle: from another thread tensor_free
   counts it gone and sends it to its owner's remote_free, and the owner releases it (unlinks it,
   drops its references) before its next handle, at its next scope end or count (tensor__drain);
   an ended owner's are released by the sender (tensor__reap). tensor_shutdown empties every
   thread's lists. */
static tensor__handle_list *tensor__list_of(tensor__thread *s, int level) { return level < 0 ? &s->internal : &s->levels[level]; }

static bool tensor__levels_reserve(tensor__thread *s, int n) {
    if (n <= s->levels_cap) return true;
    int cap = s->levels_cap ? s->levels_cap * 2 : 16;
    while (cap < n) cap *= 2;
    tensor__handle_list *l = (tensor__handle_list *)TENSOR__MALLOC(sizeof *l * (size_t)cap);
    if (!l) return false;
    for (int i = 0; i < cap; i++) l[i].head = i < s->levels_cap ? s->levels[i].head : NULL;
    if (s->levels) TENSOR_FREE(s->levels);
    s->levels = l;
    s->levels_cap = cap;
    return true;
}

static void tensor__link(tensor *t, int level) {
    tensor__handle_list *l = tensor__list_of(t->owner, level);
    t->list_level = level;
    t->list_prev = NULL;
    t->list_next = l->head;
    if (l->head) l->head->list_prev = t;
    l->head = t;
}

static void tensor__unlink(tensor *t) {
    tensor__handle_list *l = tensor__list_of(t->owner, t->list_level);
    if (t->list_prev) t->list_prev->list_next = t->list_next;
    else l->head = t->list_next;
    if (t->list_next) t->list_next->list_prev = t->list_prev;
    t->list_prev = t->list_next = NULL;
}

/* Freed handle structs wait in their thread's free_handles (linked through list_next) for its next
   tensor__handle_new: most ops make one handle and free one, and a list pop is cheaper than
   malloc + free. */
#define TENSOR__MAX_FREE_HANDLES 4096

static void tensor__free_handles_clear(tensor__thread *me) {
    while (me->free_handles) {
        tensor *t = me->free_handles;
        me->free_handles = t->list_next;
        TENSOR__UNPOISON(t, sizeof *t);
        TENSOR_FREE(t);
    }
    me->n_free_handles = 0;
}

/* A released handle's struct back to its owner's cache (owner's thread only). */
static void tensor__handle_recycle(tensor__thread *me, tensor *t) {
    if (me->n_free_handles < TENSOR__MAX_FREE_HANDLES) {
        t->list_next = me->free_handles;
        me->free_handles = t;
        me->n_free_handles++;
        TENSOR__POISON(t, sizeof *t); /* a use after free stays visible to ASan: all but the link */
        TENSOR__UNPOISON(&t->list_next, sizeof t->list_next);
    } else TENSOR_FREE(t);
}

static void tensor__autograd_release(tensor *t); /* >>autograd: drops t's graph node */
static struct tensor__node *tensor__node_ref(struct tensor__node *n); /* >>autograd: one more reference */
static void tensor__drain_nodes(tensor__thread *me); /* >>autograd: destroys the nodes others sent to me */

/* Releases t, one of the calling thread's handles: unlinks it, drops its references, keeps the struct. */
static inline void tensor__handle_release(tensor__thread *me, tensor *t) {
    tensor__unlink(t);
    tensor__autograd_release(t);
    tensor__storage_release(me, t->storage);
    tensor__handle_recycle(me, t);
}

static bool tensor__pending(tensor__thread *s) { return TENSOR__LOAD_SC(&s->pending) != 0; }

/* Releases what other threads freed of me's (me is the calling thread's state, or an ended
   thread's it acts as). */
static void tensor__drain(tensor__thread *me) {
    while (tensor__pending(me)) {
        TENSOR__STORE_SC(&me->pending, 0);
        tensor *t = (tensor *)TENSOR__EXCHANGE(&me->remote_free, (tensor *)NULL);
        while (t) {
            tensor *next = t->remote_next;
            tensor__handle_release(me, t);
            t = next;
        }
        tensor__drain_nodes(me);
    }
}

static void tensor__thread_flush(tensor__thread *s);

/* Under the registry lock: releases what waits for ended threads (every thread: all), acting as
   each in turn (none runs, and the lock keeps out the others who would act as one and a thread
   that would take one over; `all` is for tensor_shutdown, which no thread may overlap) until
   nothing waits, for releasing can send more. */
static void tensor__drain_all(bool all) {
    tensor__thread *me = tensor__self;
    for (bool again = true; again;) {
        again = false;
        for (tensor__thread *s = tensor__threads; s; s = s->next)
            if ((all || TENSOR__LOAD_SC(&s->exited)) && tensor__pending(s)) { tensor__self = s; tensor__drain(s); again = true; }
    }
    tensor__self = me;
}
static void tensor__reap_locked(void) {
    tensor__drain_all(false);
    tensor__thread *me = tensor__self;
    for (tensor__thread *s = tensor__threads; s; s = s->next)
        if (TENSOR__LOAD_SC(&s->exited)) { tensor__self = s; tensor__thread_flush(s); } /* what releasing cached */
    tensor__self = me;
}
/* Something was sent to an ended thread. Inside a reap (or tensor_shutdown) the running round
   sees it. */
static void tensor__reap(void) {
    if (tensor__reaping) return;
    tensor__reaping = true;
    tensor__registry_lock();
    tensor__reap_locked();
    tensor__registry_unlock();
    tensor__reaping = false;
}

/* Sends t, freed on a thread other than its owner, to its owner to release. The push and the
   check of `exited` pair with an ending owner's store of `exited` and its last drain (both SC):
   one of the two sees the other, so nothing is left behind. */
static void tensor__send_handle(tensor *t) {
    tensor__thread *owner = t->owner;
    tensor *head = (tensor *)TENSOR__LOAD(&owner->remote_free);
    do t->remote_next = head;
    while (!TENSOR__CAS(&owner->remote_free, &head, t));
    TENSOR__STORE_SC(&owner->pending, 1);
    if (TENSOR__LOAD_SC(&owner->exited)) tensor__reap();
}

/* A new handle, in the innermost scope of the calling thread, with no storage yet. */
static tensor *tensor__handle_new(const char *fn) {
    tensor__thread *me = tensor__me();
    if (!me || (me->levels_cap < 1 && !tensor__levels_reserve(me, 1))) return tensor__fail(fn, "out of memory");
    if (TENSOR__ALLOC_FAILS(sizeof(tensor))) return tensor__fail(fn, "out of memory allocating a tensor handle");
    if (TENSOR__LOAD(&me->pending)) tensor__drain(me);
    tensor *t = me->free_handles;
    if (t) { me->free_handles = t->list_next; me->n_free_handles--; TENSOR__UNPOISON(t, sizeof *t); }
    else if (!(t = (tensor *)TENSOR_MALLOC(sizeof *t))) return tensor__fail(fn, "out of memory allocating a tensor handle");
    /* field by field: a memset of the whole struct compiles to `rep stos`, slow to start, and so
       does a loop over both arrays (GCC 12 -O2); one fixed-size memset per array is a few vector
       stores (measured on the bench's overhead loop: autograd fwd 147 -> 139 ns per op) */
    t->storage = NULL;
    t->offset = 0;
    memset(t->shape, 0, sizeof t->shape);
    memset(t->strides, 0, sizeof t->strides);
    t->ndim = 0;
    t->dtype = TENSOR_F32;
    t->requires_grad = false;
    t->grad_fn = NULL;
    t->owner = me;
    tensor__link(t, me->depth);
    tensor__count_handles(me, 1);
    return t;
}

TENSOR_API void tensor_free(tensor *t) {
    if (!t) return;
    tensor__thread *me = tensor__self;
    if (t->owner == me) {
        tensor__count_handles(me, -1);
        tensor__handle_release(me, t);
        return;
    }
    tensor__count_handles(tensor__me(), -1); /* another thread's: gone from the counts now */
    tensor__send_handle(t);
}

/* Moves t to the internal list: the library owns it now (saved for backward, a .grad). t is one
   of the calling thread's handles. */
static TENSOR__UNUSED tensor *tensor__make_internal(tensor *t) {
    if (t && t->list_level >= 0) { tensor__unlink(t); tensor__link(t, -1); }
    return t;
}

/* Opens one more scope level; false, with an error, when there is no memory for it. */
static bool tensor__scope_push(const char *fn) {
    tensor__thread *me = tensor__me();
    if (!me || !tensor__levels_reserve(me, me->depth + 2)) { tensor__fail(fn, "out of memory opening a scope"); return false; }
    me->depth++;
    me->levels[me->depth].head = NULL;
    return true;
}

/* A tensor_scope_begin that failed still gets its tensor_scope_end from the caller, and that end
   must not close (and free) the enclosing scope. Each failed open leaves the depth it happened at
   here; an end at that depth closes the failed open, an end deeper down closes a real scope
   opened after it. Handles made meanwhile belong to the enclosing scope. */
#define TENSOR__MAX_FAILED_SCOPES 64
static TENSOR__THREAD_LOCAL int tensor__failed_scope_depth[TENSOR__MAX_FAILED_SCOPES];
static TENSOR__THREAD_LOCAL int tensor__n_failed_scopes;

TENSOR_API void tensor_scope_begin(void) {
    if (tensor__scope_push("tensor_scope_begin")) return;
    int depth = tensor__self ? tensor__self->depth : 0;
    if (tensor__n_failed_scopes < TENSOR__MAX_FAILED_SCOPES) tensor__failed_scope_depth[tensor__n_failed_scopes++] = depth;
}

TENSOR_API void tensor_scope_end(void) {
    tensor__thread *me = tensor__self;
    int depth = me ? me->depth : 0;
    if (tensor__n_failed_scopes > 0 && tensor__failed_scope_depth[tensor__n_failed_scopes - 1] == depth) {
        tensor__n_failed_scopes--;
        return;
    }
    if (depth == 0) { tensor__fail("tensor_scope_end", "no scope is open (unbalanced tensor_scope_end)"); return; }
    tensor__drain(me); /* a handle another thread freed must not be freed again here */
    while (me->levels[depth].head) tensor_free(me->levels[depth].head);
    me->depth--;
}

TENSOR_API tensor *tensor_keep(tensor *t) {
    if (!t) return NULL;
    if (t->owner != tensor__self) return tensor__fail("tensor_keep", "the tensor belongs to another thread (only the thread that made a handle moves it between its scopes)");
    if (t->list_level > 0) {
        int to = t->list_level - 1;
        tensor__unlink(t);
        tensor__link(t, to);
    }
    return t;
}

/* A state's caches back to the system (its thread's exit, tensor_shutdown). */
static void tensor__thread_flush(tensor__thread *s) {
    tensor__free_handles_clear(s);
    tensor__node_cache_clear(s);
    tensor__blocks_clear(s);
    if (s->release_stack) TENSOR_FREE(s->release_stack);
    s->release_stack = NULL;
    s->release_n = s->release_cap = 0;
}

/* A thread with a state ends (>>threads calls this on it): its caches go back; the handles it
   still owns stay, for any thread to free, until a new thread takes the state over or
   tensor_shutdown. Marking it ended and draining it last pair with tensor__send_handle. */
static TENSOR__UNUSED void tensor__thread_exit(tensor__thread *s) {
    tensor__self = s;
    tensor__drain(s);
    tensor__registry_lock();
    TENSOR__STORE_SC(&s->exited, 1);
    tensor__running_add(-1);
    tensor__reaping = true;
    tensor__reap_locked(); /* drains s too, and flushes its caches */
    tensor__reaping = false;
    tensor__registry_unlock();
    tensor__self = NULL;
}

static void tensor__rng_reset(void);
static void tensor__runtime_shutdown(void);

/* Frees every thread's handles, acting as each thread's state in turn so its own take the owner's
   path. First every graph goes: each handle drops its graph node (an internal one moves to its
   root list, as dropping can free other internal ones: saved inputs, gradients), so no node is
   left to free a handle twice after the sweep has freed it; then every handle goes. The states of
   ended threads and the calling thread's are freed too (its next call makes a new one: the first
   again, stream 0 of the generator, when no other thread has one); those of other running threads
   stay, empty. */
TENSOR_API void tensor_shutdown(void) {
    tensor__thread *me = tensor__self;
    tensor__registry_lock();
    tensor__reaping = true;
    tensor__drain_all(true);
    for (tensor__thread *s = tensor__threads; s; s = s->next) {
        tensor__self = s;
        for (int level = s->depth; level >= 0 && s->levels; level--)
            for (tensor *t = s->levels[level].head; t; t = t->list_next) tensor__autograd_release(t); /* frees internal handles only */
        while (s->internal.head) {
            tensor *t = s->internal.head;
            tensor__unlink(t);
            tensor__link(t, 0); /* a state with internal handles has made levels[0] */
            tensor__autograd_release(t);
        }
    }
    tensor__drain_all(true);
    for (tensor__thread *s = tensor__threads; s; s = s->next) {
        tensor__self = s;
        for (int level = s->depth; level >= 0 && s->levels; level--)
            while (s->levels[level].head) tensor_free(s->levels[level].head);
    }
    tensor__drain_all(true);
    tensor__thread **at = &tensor__threads;
    while (*at) {
        tensor__thread *s = *at;
        tensor__self = s;
        tensor__thread_flush(s);
        if (s->levels) TENSOR_FREE(s->levels);
        s->levels = NULL;
        s->levels_cap = s->depth = 0;
        s->rng_seeded = false;
        TENSOR__STORE(&s->live_handles, 0);
        TENSOR__STORE(&s->live_bytes, 0);
        if (s == me) tensor__running_add(-1);
        if (s == me || TENSOR__LOAD_SC(&s->exited)) { *at = s->next; TENSOR_FREE(s); }
        else at = &s->next;
    }
    if (!tensor__threads) tensor__n_starts = 0;
    TENSOR__STORE(&tensor__stateless_handles, 0);
    TENSOR__STORE(&tensor__stateless_bytes, 0);
    tensor__self = NULL;
    tensor__reaping = false;
    tensor__registry_unlock();
    tensor__thread_at_exit(NULL); /* nothing left to give back when this thread ends */
    tensor__n_failed_scopes = 0;
    tensor__runtime_shutdown();
    tensor_empty_cache();
    tensor_clear_error();
}

/* Sums a count over every thread's state: exact for what the calling thread made and freed (it
   first releases what others freed of its), and for other threads' when they are not busy. */
static int64_t tensor__count_sum(bool bytes) {
    if (tensor__self) tensor__drain(tensor__self);
    tensor__registry_lock();
    int64_t n = TENSOR__LOAD(bytes ? &tensor__stateless_bytes : &tensor__stateless_handles);
    for (tensor__thread *s = tensor__threads; s; s = s->next) n += TENSOR__LOAD(bytes ? &s->live_bytes : &s->live_handles);
    tensor__registry_unlock();
    return n;
}
TENSOR_API int64_t tensor_live_handles(void) { return tensor__count_sum(false); }
TENSOR_API int64_t tensor_live_bytes(void) { return tensor__count_sum(true); }

// >>shapes -------------------------------------------------------------------------------------
/* "[2, 3]" into buf; used by every message that names a shape. */
static TENSOR__UNUSED const char *tensor__shape_str(char *buf, size_t n, int ndim, const int64_t *shape) {
    size_t at = 0;
    at += (size_t)snprintf(buf + at, n - at, "[");
    for (int i = 0; i < ndim && at < n; i++) at += (size_t)snprintf(buf + at, n - at, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (at < n) snprintf(buf + at, n - at, "]");
    return buf;
}
/* The shape of t as text, in one of a few rotating buffers so a message can name several. */
static const char *tensor__shape_of(const tensor *t) {
    static TENSOR__THREAD_LOCAL char bufs[4][160];
    static TENSOR__THREAD_LOCAL int next;
    char *b = bufs[next++ & 3];
    return tensor__shape_str(b, 160, t->ndim, t->shape);
}

/* The bound of every size (PyTorch refuses shapes whose sizes or strides overflow; so do we, with
   room for bytes): a tensor's element count, its strides, each size times its stride and the
   largest element offset a view reaches are all at most TENSOR__MAX_NUMEL, so times an element
   size (8 at most) they still fit in int64. Kernels may multiply the sizes, strides and element
   sizes of an existing tensor freely; whatever makes a new shape or view goes through the checked
   helpers below (tensor__new and tensor__view_of check every tensor they make). */
#define TENSOR__MAX_NUMEL (INT64_MAX / 8)

/* *out = a * b for sizes a, b >= 0; false (and *out untouched) past TENSOR__MAX_NUMEL. The checked
   product every shape-to-count computation uses. */
static bool tensor__size_mul(int64_t a, int64_t b, int64_t *out) {
#if defined(__GNUC__) || defined(__clang__)
    int64_t r; /* no division: views check their strides with this */
    if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r) || r > TENSOR__MAX_NUMEL) return false;
    *out = r;
#else
    if (a < 0 || b < 0 || (b && a > TENSOR__MAX_NUMEL / b)) return false;
    *out = a * b;
#endif
    return true;
}
/* *out = a + b for sizes a, b >= 0; false past TENSOR__MAX_NUMEL. */
static bool tensor__size_add(int64_t a, int64_t b, int64_t *out) {
    if (a < 0 || b < 0 || a > TENSOR__MAX_NUMEL - b) return false;
    *out = a + b;
    return true;
}
/* a * b, or INT64_MAX when it overflows (a, b >= 0): for estimates of work, such as m * n * k of
   a GEMM, that only pick a thread count. */
static TENSOR__UNUSED int64_t tensor__work_mul(int64_t a, int64_t b) { return b && a > INT64_MAX / b ? INT64_MAX : a * b; }

/* The product of a shape's sizes with 0 and 1 counted as 1: the size times stride of its first
   dim when contiguous, what its strides need; -1 past TENSOR__MAX_NUMEL. Sizes are >= 0. */
static int64_t tensor__shape_extent(int ndim, const int64_t *shape) {
    int64_t e = 1;
    for (int i = 0; i < ndim; i++)
        if (!tensor__size_mul(e, shape[i] > 1 ? shape[i] : 1, &e)) return -1;
    return e;
}

static TENSOR__UNUSED int64_t tensor__numel_of(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i]; /* within the extent of a checked shape */
    return n;
}

/* Checks a shape, given by the user or computed by an op: ndim in range, sizes >= 0, and its
   element count and contiguous strides within TENSOR__MAX_NUMEL (an empty shape such as
   [0, 2^53, 2^58] has no elements, but its strides overflow). Returns the element count, or -1
   with an error naming the shape. */
static int64_t tensor__check_shape(const char *fn, int ndim, const int64_t *shape) {
    if (ndim < 0 || ndim > TENSOR_MAX_DIMS) { tensor__fail(fn, "ndim %d is out of range [0, %d]", ndim, TENSOR_MAX_DIMS); return -1; }
    if (ndim > 0 && !shape) { tensor__fail(fn, "shape is NULL with ndim %d", ndim); return -1; }
    char b[200];
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0) {
            tensor__fail(fn, "negative size %lld in shape %s", (long long)shape[i], tensor__shape_str(b, sizeof b, ndim, shape));
            return -1;
        }
    if (tensor__shape_extent(ndim, shape) < 0) {
        tensor__fail(fn, "shape %s is too large: its element count or strides overflow (the product of its sizes, a 0 counted as 1, must be below 2^60)",
                     tensor__shape_str(b, sizeof b, ndim, shape));
        return -1;
    }
    return tensor__numel_of(ndim, shape);
}

/* Checks the geometry of a view: its shape as above, a non-negative offset, each |stride| and
   size times |stride| within TENSOR__MAX_NUMEL, and when it has elements the largest element
   offset it reaches too, so no byte offset into it overflows. false with an error naming it. */
static bool tensor__check_view(const char *fn, int ndim, const int64_t *shape, const int64_t *strides, int64_t offset) {
    int64_t numel = tensor__check_shape(fn, ndim, shape);
    if (numel < 0) return false;
    bool ok = offset >= 0 && offset <= TENSOR__MAX_NUMEL;
    int64_t reach = offset, span;
    for (int i = 0; i < ndim && ok; i++) {
        int64_t s = strides[i] < -TENSOR__MAX_NUMEL ? INT64_MAX : strides[i] < 0 ? -strides[i] : strides[i];
        ok = tensor__size_mul(shape[i] > 1 ? shape[i] : 1, s, &span);
        if (ok && numel > 0) ok = tensor__size_mul(shape[i] - 1, s, &span) && tensor__size_add(reach, span, &reach);
    }
    if (!ok) {
        char b[200], c[200];
        tensor__fail(fn, "a view of shape %s with strides %s and offset %lld is too large: its element offsets overflow",
                     tensor__shape_str(b, sizeof b, ndim, shape), tensor__shape_str(c, sizeof c, ndim, strides), (long long)offset);
    }
    return ok;
}

static void tensor__contiguous_strides(int ndim, const int64_t *shape, int64_t *strides) {
    int64_t s = 1; /* no overflow: within the extent of a checked shape */
    for (int i = ndim - 1; i >= 0; i--) { strides[i] = s; s *= shape[i] > 1 ? shape[i] : 1; }
}

/* Wraps a possibly negative dim into [0, ndim); -1 and an error if out of range. A 0-dim tensor
   accepts dims -1 and 0 where PyTorch does (pass ndim 1 for that). */
static int tensor__wrap_dim(const char *fn, int dim, int ndim) {
    if (dim < -ndim || dim >= ndim) {
        tensor__fail(fn, "dim %d is out of range for a tensor of %d dims (expected %d..%d)", dim, ndim, -ndim, ndim - 1);
        return -1;
    }
    return dim < 0 ? dim + ndim : dim;
}

/* Two-way broadcast of shapes a and b (NumPy rules) into out; false and an error if they clash.
   out may be a or b (a running shape): the result is built aside and copied at the end, since a
   longer b would otherwise shift a's sizes under the loop that still reads them. */
static bool tensor__broadcast_shapes(const char *fn, int na, const int64_t *a, int nb, const int64_t *b, int *nout, int64_t *out) {
    int n = na > nb ? na : nb;
    int64_t r[TENSOR_MAX_DIMS];
    for (int i = 0; i < n; i++) {
        int64_t da = i < n - na ? 1 : a[i - (n - na)], db = i < n - nb ? 1 : b[i - (n - nb)];
        if (da != db && da != 1 && db != 1) {
            char sa[160], sb[160];
            tensor__fail(fn, "shapes %s and %s cannot be broadcast (size %lld vs %lld at dim %d)",
                         tensor__shape_str(sa, sizeof sa, na, a), tensor__shape_str(sb, sizeof sb, nb, b),
                         (long long)da, (long long)db, i);
            return false;
        }
        r[i] = da == 1 ? db : da;
    }
    for (int i = 0; i < n; i++) out[i] = r[i];
    *nout = n;
    return true;
}

static TENSOR__UNUSED bool tensor__same_shape(const tensor *a, const tensor *b) {
    if (a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim; i++) if (a->shape[i] != b->shape[i]) return false;
    return true;
}

// >>tensors ------------------------------------------------------------------------------------
/* A new contiguous tensor with fresh, uninitialized storage. */
static tensor *tensor__new(const char *fn, int ndim, const int64_t *shape, tensor_dtype dtype, tensor_device device) {
    if (!tensor__dtype_valid(dtype)) return tensor__fail(fn, "invalid dtype %d", (int)dtype);
    int64_t numel = tensor__check_shape(fn, ndim, shape);
    if (numel < 0) return NULL;
    if ((uint64_t)numel > (uint64_t)(SIZE_MAX / 2) / tensor__dtype_sizes[dtype]) { /* its bytes do not fit in size_t (32-bit) */
        char b[200];
        return tensor__fail(fn, "tensor of shape %s (%lld elements of %s) is too large for this machine's size_t", tensor__shape_str(b, sizeof b, ndim, shape),
                            (long long)numel, tensor__dtype_names[dtype]);
    }
    tensor *t = tensor__handle_new(fn);
    if (!t) return NULL;
    t->storage = tensor__storage_new(fn, (size_t)numel * tensor__dtype_sizes[dtype], device);
    if (!t->storage) { tensor_free(t); return NULL; }
    t->ndim = ndim;
    t->dtype = dtype;
    for (int i = 0; i < ndim; i++) t->shape[i] = shape[i];
    tensor__contiguous_strides(ndim, shape, t->strides);
    return t;
}

static tensor *tensor__new_like(const char *fn, const tensor *t, tensor_dtype dtype) {
    return tensor__new(fn, t->ndim, t->shape, dtype, t->storage->device);
}

/* A new handle viewing base's storage with the given geometry. */
static tensor *tensor__view_of(const char *fn, const tensor *base, int ndim, const int64_t *shape, const int64_t *strides, int64_t offset) {
    if (!tensor__check_view(fn, ndim, shape, strides, offset)) return NULL;
    tensor *t = tensor__handle_new(fn);
    if (!t) return NULL;
    t->storage = base->storage;
    tensor__refs_take(&t->storage->refs, t->owner);
    t->offset = offset;
    t->ndim = ndim;
    t->dtype = base->dtype;
    for (int i = 0; i < ndim; i++) { t->shape[i] = shape[i]; t->strides[i] = strides[i]; }
    return t;
}

/* Another handle to the same tensor, autograd identity included (for ops that return their input
   unchanged, as PyTorch's do, and for tensors autograd saves). */
static tensor *tensor__alias(const char *fn, const tensor *t) {
    tensor *a = tensor__view_of(fn, t, t->ndim, t->shape, t->strides, t->offset);
    if (a) { a->grad_fn = tensor__node_ref(t->grad_fn); a->requires_grad = t->requires_grad; }
    return a;
}

#ifdef TENSOR_TEST_HOOKS
/* Test builds: host code that takes the data pointer of a device tensor (a GPU's memory, which the
   host cannot read) is counted and named here, and the suite fails the test that did it (the fake
   device's pointers would also fault when read). */
static int64_t tensor__test_device_reads; /* atomic */
static char tensor__test_device_read_fn[128];
static void *(*tensor__test_host_of)(const void *device_ptr); /* the fake device's: where its bytes are, so a sweep goes on */
static void tensor__test_device_read(const tensor *t) {
    if (__atomic_fetch_add(&tensor__test_device_reads, 1, __ATOMIC_RELAXED) == 0)
        snprintf(tensor__test_device_read_fn, sizeof tensor__test_device_read_fn, "a %dd %s tensor on %s", t->ndim, tensor__dtype_names[t->dtype],
                 t->storage->device == TENSOR_CUDA ? "cuda" : "another device");
    fprintf(stderr, "tensor.h test build: host code takes the data pointer of a device tensor (%s)\n", tensor__test_device_read_fn);
}
#endif
/* offset <= TENSOR__MAX_NUMEL (>>shapes): its byte offset fits. CPU tensors only: a device's
   memory is reached through its table (>>devices). */
static char *tensor__data(const tensor *t) {
    char *p = (char *)t->storage->data + t->offset * (int64_t)tensor__dtype_sizes[t->dtype];
#ifdef TENSOR_TEST_HOOKS
    if (t->storage->device != TENSOR_CPU) {
        tensor__test_device_read(t);
        if (tensor__test_host_of) p = (char *)tensor__test_host_of(p);
    }
#endif
    return p;
}

static bool tensor__contiguous(const tensor *t) {
    if (tensor__numel_of(t->ndim, t->shape) == 0) return true; /* as PyTorch: nothing to lay out */
    int64_t s = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] != 1 && t->strides[i] != s) return false;
        s *= t->shape[i];
    }
    return true;
}

TENSOR_API int tensor_ndim(const tensor *t) { return t ? t->ndim : -1; }
TENSOR_API const int64_t *tensor_shape(const tensor *t) { return t ? t->shape : NULL; }
TENSOR_API const int64_t *tensor_strides(const tensor *t) { return t ? t->strides : NULL; }
TENSOR_API int64_t tensor_numel(const tensor *t) { return t ? tensor__numel_of(t->ndim, t->shape) : 0; }
TENSOR_API tensor_dtype tensor_get_dtype(const tensor *t) { return t ? t->dtype : TENSOR_F32; }
TENSOR_API tensor_device tensor_get_device(const tensor *t) { return t ? t->storage->device : TENSOR_CPU; }
TENSOR_API bool tensor_is_contiguous(const tensor *t) { return t && tensor__contiguous(t); }
TENSOR_API bool tensor_shares_storage(const tensor *a, const tensor *b) { return a && b && a->storage == b->storage; }

TENSOR_API int64_t tensor_size(const tensor *t, int dim) {
    if (!t) { tensor__null_arg("tensor_size", "t"); return -1; }
    int d = tensor__wrap_dim("tensor_size", dim, t->ndim);
    return d < 0 ? -1 : t->shape[d];
}

TENSOR_API double tensor_item(tensor *t) {
    if (!t) { tensor__null_arg("tensor_item", "t"); return NAN; }
    if (tensor__numel_of(t->ndim, t->shape) != 1) {
        tensor__fail("tensor_item", "tensor of shape %s has %lld elements, expected 1", tensor__shape_of(t), (long long)tensor__numel_of(t->ndim, t->shape));
        return NAN;
    }
    if (t->storage->device != TENSOR_CPU) { /* waits for the work queued before it, like PyTorch's .item() */
        char v[8];
        if (tensor_copy_to(t, v, sizeof v)) return NAN;
        return tensor__load_f64(v, t->dtype);
    }
    return tensor__load_f64(tensor__data(t), t->dtype);
}
/* tensor_item of a one-element integer tensor, exact: a double rounds an int64 past 2^53, and
   INT64_MAX converted back is undefined. false (the error set) on failure. */
static bool tensor__item_i64(tensor *t, int64_t *v) {
    if (!t) return false;
    if (tensor__numel_of(t->ndim, t->shape) != 1) {
        tensor__fail("tensor_item", "tensor of shape %s has %lld elements, expected 1", tensor__shape_of(t), (long long)tensor__numel_of(t->ndim, t->shape));
        return false;
    }
    char b[8];
    if (t->storage->device != TENSOR_CPU && tensor_copy_to(t, b, sizeof b)) return false;
    *v = tensor__load_i64(t->storage->device != TENSOR_CPU ? b : tensor__data(t), t->dtype);
    return true;
}

TENSOR_API void *tensor_data_ptr(tensor *t) {
    if (!t) return tensor__null_arg("tensor_data_ptr", "t");
    if (t->storage->device != TENSOR_CPU)
        return tensor__fail("tensor_data_ptr", "the tensor is on %s, where the host cannot read it: copy it with tensor_to_device(t, TENSOR_CPU) or tensor_copy_to",
                            tensor__device_name(t->storage->device));
    if (!tensor__contiguous(t)) return tensor__fail("tensor_data_ptr", "tensor of shape %s is not contiguous; call tensor_contiguous first", tensor__shape_of(t));
    return tensor__data(t);
}
