#define TENSOR__DEVICE_SOURCE   /* the shared formulas too */
#include "tensor.h"             /* declarations only: never TENSOR_IMPLEMENTATION */
/* tensor_cuda.cu: the CUDA device of tensor.h. Compile it with nvcc and link the object beside a
   program built with tensor.h's implementation; a static initializer registers the table below
   with tensor__register_device, so nothing else is needed. Only device 0 is used: each host thread
   sets it on its first CUDA use and runs its work on a stream of its own.

   Sections: >>cuda-runtime (errors, streams, device info), >>cuda-alloc (the caching allocator),
   >>cuda-copy (host <-> device copies), >>cuda-convert (loads and stores of every dtype, as the
   CPU's), >>cuda-offsets (broadcast and strided indexing), >>cuda-elementwise (the formula lists
   as kernels), >>cuda-copykernels (copy, fill), >>cuda-optim (the optimizers' step),
   >>cuda-reduce (reductions and cumsum), >>cuda-nn (matmul through cuBLAS, softmax, norms, losses,
   embedding), >>cuda-index (flip, repeat, pad, tril/triu, gather, scatter_add, index_select,
   masked_fill, dropout; cat is tensor.h's copies), >>cuda-conv (conv1d/2d by im2col + cuBLAS,
   pooling), >>cuda-linalg-decomp (LU, Cholesky, triangular solves: a block per matrix),
   >>cuda-linalg-qr-eigh (QR, eigh: a thread per matrix), >>cuda-linalg-svd (the one-sided Jacobi
   SVD: a thread per matrix), >>cuda-backward (fused backward kernels), >>cuda-register (the tables). */

#ifdef TENSOR_IMPLEMENTATION
#error "tensor_cuda.cu includes tensor.h for its declarations only: compile it without TENSOR_IMPLEMENTATION"
#endif
#ifdef TENSOR_STATIC
#error "tensor_cuda.cu registers itself with tensor.h's implementation, which TENSOR_STATIC hides"
#endif

#include <cuda_runtime.h>
#ifdef TENSOR_USE_CUDNN
#include <cudnn.h>
#endif

#include <atomic>
#include <cfloat>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <new>
#include <set>
#include <unordered_map>
#include <utility>
#include <vector>

// >>cuda-runtime ---------------------------------------------------------------------------------
#if defined(__GNUC__) || defined(__clang__)
#define TENSOR__CUDA_PRINTF(f, a) __attribute__((format(printf, f, a)))
#else
#define TENSOR__CUDA_PRINTF(f, a) /* MSVC: no format checking */
#endif

static void tensor__cuda_msg(char *error, size_t len, const char *fmt, ...) TENSOR__CUDA_PRINTF(3, 4);
static void tensor__cuda_msg(char *error, size_t len, const char *fmt, ...) {
    if (!error || !len) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(error, len, fmt, ap);
    va_end(ap);
}
/* Reports a failed CUDA call and clears the thread's last-error state, so that a later launch
   check does not blame its own kernel for it (sticky faults stay: every later call returns them). */
static void tensor__cuda_msg_err(char *error, size_t len, const char *what, cudaError_t e) {
    tensor__cuda_msg(error, len, "CUDA error: %s: %s", what, cudaGetErrorString(e));
    (void)cudaGetLastError();
}

static int tensor__cuda_device_count(void) {
    int n = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) { (void)cudaGetLastError(); return 0; } /* no driver, no device: none */
    return n;
}

static const char *tensor__cuda_info(void) {
    static char line[256];
    static std::once_flag once;
    std::call_once(once, [] {
        cudaDeviceProp prop;
        int rt = 0;
        cudaError_t e = cudaGetDeviceProperties(&prop, 0);
        if (e == cudaSuccess) e = cudaRuntimeGetVersion(&rt);
        if (e != cudaSuccess) {
            snprintf(line, sizeof line, "no CUDA device (%s)", cudaGetErrorString(e));
            (void)cudaGetLastError();
            return;
        }
        int at = snprintf(line, sizeof line, "%.180s (sm_%d%d), CUDA runtime %d.%d", prop.name, prop.major, prop.minor, rt / 1000, (rt % 1000) / 10);
#ifdef TENSOR_USE_CUDNN
        size_t v = cudnnGetVersion(); /* 9.x: major * 10000 + minor * 100 + patch */
        if (at > 0 && (size_t)at < sizeof line) snprintf(line + at, sizeof line - (size_t)at, ", cuDNN %zu.%zu", v / 10000, v / 100 % 100);
#else
        (void)at;
#endif
    });
    return line;
}

static std::atomic<bool> tensor__cuda_tf32(false);
static void tensor__cuda_set_allow_tf32(bool allow) { tensor__cuda_tf32.store(allow); }

/* What each host thread owns: its stream (every launch, copy and cuBLAS call of the thread runs on
   it) and its pinned staging buffer for copies, two halves, each guarded by an event recorded after
   the last copy that reads or writes it. Made on first use; given back when the thread ends, after
   its queued work is done. */
#define TENSOR__CUDA_STAGE_MAX ((size_t)8 << 20)   /* bytes per half: copies go in chunks of this */
#define TENSOR__CUDA_STAGE_MIN ((size_t)64 << 10)
struct tensor__cuda_thread {
    cudaStream_t stream = nullptr;
    bool have_stream = false;
    cudaEvent_t ev[2] = {nullptr, nullptr};
    bool ev_recorded[2] = {false, false};
    char *stage = nullptr;                 /* 2 * stage_half bytes of pinned memory */
    size_t stage_half = 0;
    ~tensor__cuda_thread() {
        /* at process exit the runtime may be gone already: every result is ignored */
        for (int k = 0; k < 2; k++)
            if (ev_recorded[k]) (void)cudaEventSynchronize(ev[k]);
        if (stage) (void)cudaFreeHost(stage);
        if (have_stream) {
            (void)cudaStreamSynchronize(stream);
            for (int k = 0; k < 2; k++) (void)cudaEventDestroy(ev[k]);
            (void)cudaStreamDestroy(stream);
        }
        (void)cudaGetLastError();
    }
};
static thread_local tensor__cuda_thread tensor__cuda_self;

/* The calling thread's stream, made (with its two events) on first use; false + message if CUDA
   cannot give one. */
static bool tensor__cuda_stream(cudaStream_t *s, char *error, size_t len) {
    tensor__cuda_thread &t = tensor__cuda_self;
    if (!t.have_stream) {
        cudaError_t e = cudaSetDevice(0);
        if (e == cudaSuccess) e = cudaStreamCreateWithFlags(&t.stream, cudaStreamNonBlocking);
        if (e != cudaSuccess) { tensor__cuda_msg_err(error, len, "cannot create a stream", e); return false; }
        for (int k = 0; k < 2 && e == cudaSuccess; k++) e = cudaEventCreateWithFlags(&t.ev[k], cudaEventDisableTiming);
        if (e != cudaSuccess) {
            for (int k = 0; k < 2; k++) if (t.ev[k]) (void)cudaEventDestroy(t.ev[k]);
            t.ev[0] = t.ev[1] = nullptr;
            (void)cudaStreamDestroy(t.stream);
            tensor__cuda_msg_err(error, len, "cannot create an event", e);
            return false;
        }
        t.have_stream = true;
    }
    *s = t.stream;
    return true;
}

static int tensor__cuda_synchronize(char *error, size_t len) {
    tensor__cuda_thread &t = tensor__cuda_self;
    if (!t.have_stream) return 0; /* this thread queued nothing */
    cudaError_t e = cudaStreamSynchronize(t.stream);
    if (e == cudaSuccess) e = cudaGetLastError();
    if (e != cudaSuccess) {
        tensor__cuda_msg(error, len, "CUDA error: %s", cudaGetErrorString(e));
        (void)cudaGetLastError();
        return -1;
    }
    return 0;
}

// >>cuda-alloc -----------------------------------------------------------------------------------
/* A caching allocator in the manner of PyTorch's CUDACachingAllocator. cudaMalloc and cudaFree are
   slow and cudaFree waits for the whole device, so freed blocks stay cached and are handed out
   again. Rules:
   - A block belongs to the stream of the thread that allocated it and is reused only by that
     stream: work queued on the stream before the free runs before any work of the next owner, so
     no synchronization is needed. A block freed by a thread with another stream (a tensor made by
     one thread, used and dropped by another) may still be read by work queued on that stream: an
     event is recorded there and the block waits in `pending` until the event has completed (what
     PyTorch's record_stream asks its users to do by hand).
   - Small requests (<= 1 MiB) are rounded up to 512 B and carved out of 2 MiB segments; large ones
     are rounded up to a multiple of 2 MiB and get a segment of exactly that size. Each kind has
     its own pool of free blocks ordered by (stream, size, address); a request takes the best fit
     (the smallest free block of its stream that is big enough), and a bigger block is split when
     the rest is worth keeping (>= 512 B in the small pool, > 1 MiB in the large one).
   - A freed block merges with free neighbours of its segment.
   - When cudaMalloc fails, every wholly free segment is given back and the request tried once more.
   - One mutex guards it all: blocks are freed from any thread.
   The state is never destroyed (a free after static destructors have run must still work). */
#define TENSOR__CUDA_SMALL ((size_t)1 << 20)
#define TENSOR__CUDA_SMALL_SEGMENT ((size_t)2 << 20)
#define TENSOR__CUDA_ROUND ((size_t)512)
#define TENSOR__CUDA_LARGE_ROUND ((size_t)2 << 20)

struct tensor__cuda_block {
    char *ptr;
    size_t size;
    cudaStream_t stream;
    bool small;                            /* which pool */
    bool allocated;
    tensor__cuda_block *prev, *next;       /* neighbours in its segment (NULL at the ends) */
};
struct tensor__cuda_block_less {
    bool operator()(const tensor__cuda_block *a, const tensor__cuda_block *b) const {
        if (a->stream != b->stream) return (uintptr_t)a->stream < (uintptr_t)b->stream;
        if (a->size != b->size) return a->size < b->size;
        return (uintptr_t)a->ptr < (uintptr_t)b->ptr;
    }
};
typedef std::set<tensor__cuda_block *, tensor__cuda_block_less> tensor__cuda_pool;
struct tensor__cuda_allocator {
    std::mutex mu;
    tensor__cuda_pool small, large;                           /* free blocks */
    std::unordered_map<void *, tensor__cuda_block *> live;    /* allocated blocks by address */
    std::vector<std::pair<tensor__cuda_block *, cudaEvent_t>> pending; /* freed, waiting for another stream */
    size_t in_use = 0, reserved = 0;                          /* bytes in live and pending blocks, in all segments */
};
static tensor__cuda_allocator *tensor__cuda_allocator_get(void) {
    static tensor__cuda_allocator *a = new (std::nothrow) tensor__cuda_allocator; /* never deleted: see above */
    return a;
}

/* Gives back every wholly free segment (a free block with no neighbours). The device is
   synchronized first: a cached block may still be read by queued work. Called with a->mu held. */
static void tensor__cuda_release_pending(tensor__cuda_allocator *a, bool all);
static void tensor__cuda_release_cached(tensor__cuda_allocator *a) {
    (void)cudaDeviceSynchronize();
    tensor__cuda_release_pending(a, true); /* every event has completed */
    tensor__cuda_pool *pools[2] = {&a->small, &a->large};
    for (int k = 0; k < 2; k++) {
        tensor__cuda_pool &p = *pools[k];
        for (auto it = p.begin(); it != p.end();) {
            tensor__cuda_block *b = *it;
            if (b->prev || b->next) { ++it; continue; }
            it = p.erase(it);
            (void)cudaFree(b->ptr);
            a->reserved -= b->size;
            delete b;
        }
    }
    (void)cudaGetLastError(); /* a failure here is not the next kernel's */
}

/* Hands out block b (already in a->live and out of the pools) for a request of `size` bytes,
   splitting off the rest when it is worth keeping. Never throws: without memory for the split the
   whole block is handed out. */
static void tensor__cuda_take(tensor__cuda_allocator *a, tensor__cuda_block *b, size_t size) {
    size_t rest = b->size - size;
    bool split = b->small ? rest >= TENSOR__CUDA_ROUND : rest > TENSOR__CUDA_SMALL;
    if (split) {
        tensor__cuda_block *r = new (std::nothrow) tensor__cuda_block;
        if (r) {
            *r = {b->ptr + size, rest, b->stream, b->small, false, b, b->next};
            try {
                (b->small ? a->small : a->large).insert(r);
                if (b->next) b->next->prev = r;
                b->next = r;
                b->size = size;
            } catch (const std::bad_alloc &) {
                delete r;
            }
        }
    }
    b->allocated = true;
    a->in_use += b->size;
}

static size_t tensor__cuda_round_up(size_t n, size_t m) { return (n + m - 1) / m * m; }

static void *tensor__cuda_alloc(size_t nbytes, char *error, size_t len) {
    cudaStream_t stream;
    if (!tensor__cuda_stream(&stream, error, len)) return nullptr;
    tensor__cuda_allocator *a = tensor__cuda_allocator_get();
    if (!a) { tensor__cuda_msg(error, len, "out of host memory for the CUDA allocator"); return nullptr; }
    if (nbytes > SIZE_MAX / 2) {
        tensor__cuda_msg(error, len, "CUDA out of memory: tried to allocate %zu bytes", nbytes);
        return nullptr;
    }
    bool small = nbytes <= TENSOR__CUDA_SMALL;
    /* a zero-byte request gets a block of its own too: its pointer is unique and not NULL */
    size_t size = small ? tensor__cuda_round_up(nbytes ? nbytes : 1, TENSOR__CUDA_ROUND) : tensor__cuda_round_up(nbytes, TENSOR__CUDA_LARGE_ROUND);
    std::lock_guard<std::mutex> lock(a->mu);
    if (!a->pending.empty()) tensor__cuda_release_pending(a, false);
    tensor__cuda_pool &pool = small ? a->small : a->large;
    try {
        tensor__cuda_block key = {nullptr, size, stream, small, false, nullptr, nullptr};
        auto it = pool.lower_bound(&key);
        if (it != pool.end() && (*it)->stream == stream) { /* best fit: the smallest that is big enough */
            tensor__cuda_block *b = *it;
            a->live.emplace(b->ptr, b); /* first: if it throws, nothing has changed */
            pool.erase(it);
            tensor__cuda_take(a, b, size);
            return b->ptr;
        }
        size_t seg = small ? TENSOR__CUDA_SMALL_SEGMENT : size;
        void *p = nullptr;
        cudaError_t e = cudaMalloc(&p, seg);
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            tensor__cuda_release_cached(a);
            e = cudaMalloc(&p, seg);
        }
        if (e != cudaSuccess) {
            (void)cudaGetLastError();
            tensor__cuda_msg(error, len, "CUDA out of memory: tried to allocate %zu bytes (%zu in use, %zu cached)", nbytes, a->in_use, a->reserved - a->in_use);
            return nullptr;
        }
        tensor__cuda_block *b = new (std::nothrow) tensor__cuda_block;
        if (!b) { (void)cudaFree(p); throw std::bad_alloc(); }
        *b = {(char *)p, seg, stream, small, false, nullptr, nullptr};
        try {
            a->live.emplace(p, b);
        } catch (const std::bad_alloc &) {
            delete b;
            (void)cudaFree(p);
            throw;
        }
        a->reserved += seg;
        tensor__cuda_take(a, b, size);
        return p;
    } catch (const std::bad_alloc &) {
        tensor__cuda_msg(error, len, "out of host memory in the CUDA allocator (request of %zu bytes)", nbytes);
        return nullptr;
    }
}

/* Returns a freed block to its pool, merged with free neighbours. Called with a->mu held. */
static void tensor__cuda_release(tensor__cuda_allocator *a, tensor__cuda_block *b) {
    a->in_use -= b->size;
    b->allocated = false;
    tensor__cuda_pool &pool = b->small ? a->small : a->large;
    /* merge with free neighbours: each leaves the pool before its key (size, address) changes */
    if (b->prev && !b->prev->allocated) {
        tensor__cuda_block *q = b->prev;
        pool.erase(q);
        b->ptr = q->ptr;
        b->size += q->size;
        b->prev = q->prev;
        if (b->prev) b->prev->next = b;
        delete q;
    }
    if (b->next && !b->next->allocated) {
        tensor__cuda_block *q = b->next;
        pool.erase(q);
        b->size += q->size;
        b->next = q->next;
        if (b->next) b->next->prev = b;
        delete q;
    }
    try {
        pool.insert(b);
    } catch (const std::bad_alloc &) {
        /* out of host memory: the block stays out of the pool (free, so neighbours still merge
           with it; pool.erase of a block not there is a no-op), its bytes cached but unused */
    }
}
/* Releases the pending blocks whose event has completed (all: every one, the device having been
   synchronized). A failed query counts as completed: the fault is sticky and reported by the next
   call on any stream. Called with a->mu held. */
static void tensor__cuda_release_pending(tensor__cuda_allocator *a, bool all) {
    size_t kept = 0;
    for (size_t i = 0; i < a->pending.size(); i++) {
        std::pair<tensor__cuda_block *, cudaEvent_t> q = a->pending[i];
        if (!all && cudaEventQuery(q.second) == cudaErrorNotReady) {
            a->pending[kept++] = q;
            continue;
        }
        (void)cudaEventDestroy(q.second);
        tensor__cuda_release(a, q.first);
    }
    a->pending.resize(kept);
    (void)cudaGetLastError(); /* cudaErrorNotReady is not an error of the next launch */
}

static void tensor__cuda_free(void *p) {
    if (!p) return;
    tensor__cuda_allocator *a = tensor__cuda_allocator_get();
    if (!a) return;
    tensor__cuda_thread &t = tensor__cuda_self; /* its stream, if this thread ever queued work */
    std::lock_guard<std::mutex> lock(a->mu);
    auto found = a->live.find(p);
    if (found == a->live.end()) return; /* not ours: ignored */
    tensor__cuda_block *b = found->second;
    a->live.erase(found);
    if (t.have_stream && t.stream != b->stream) {
        /* this thread's stream may still read the block: its owner waits for an event there */
        cudaEvent_t ev = nullptr;
        bool queued = false;
        if (cudaEventCreateWithFlags(&ev, cudaEventDisableTiming) == cudaSuccess && cudaEventRecord(ev, t.stream) == cudaSuccess) {
            try {
                a->pending.emplace_back(b, ev);
                queued = true;
            } catch (const std::bad_alloc &) {
            }
        }
        if (!queued) { /* no event (or no host memory for the list): wait here instead */
            if (ev) (void)cudaEventDestroy(ev);
            (void)cudaStreamSynchronize(t.stream);
            (void)cudaGetLastError();
            tensor__cuda_release(a, b);
        }
        return;
    }
    tensor__cuda_release(a, b);
}

static void tensor__cuda_empty_cache(void) {
    tensor__cuda_allocator *a = tensor__cuda_allocator_get();
    if (!a) return;
    cudaStream_t s;
    char ignored[8];
    if (!tensor__cuda_stream(&s, ignored, sizeof ignored)) return; /* sets device 0 on this thread */
    std::lock_guard<std::mutex> lock(a->mu);
    tensor__cuda_release_cached(a);
}

// >>cuda-copy ------------------------------------------------------------------------------------
/* Copies between pageable host memory and the device go through the thread's pinned staging
   buffer, in chunks of up to TENSOR__CUDA_STAGE_MAX bytes alternating between its two halves, so
   that the memcpy of one chunk overlaps the DMA of the other. Before a half is written (by memcpy
   or by a DMA) its event is waited for: a half is never overwritten while a queued copy still uses
   it, which lets a copy to the device return as soon as its last chunk is queued. */

/* Makes the staging buffer at least `want` bytes a half (up to the maximum); false + message. */
static bool tensor__cuda_stage(tensor__cuda_thread &t, size_t want, char *error, size_t len) {
    want = want < TENSOR__CUDA_STAGE_MIN ? TENSOR__CUDA_STAGE_MIN : want > TENSOR__CUDA_STAGE_MAX ? TENSOR__CUDA_STAGE_MAX : tensor__cuda_round_up(want, TENSOR__CUDA_STAGE_MIN);
    if (t.stage && t.stage_half >= want) return true;
    for (int k = 0; k < 2; k++) { /* the old buffer may still be read by queued copies */
        if (!t.ev_recorded[k]) continue;
        cudaError_t e = cudaEventSynchronize(t.ev[k]);
        if (e != cudaSuccess) { tensor__cuda_msg_err(error, len, "copy", e); return false; }
        t.ev_recorded[k] = false;
    }
    if (t.stage) { (void)cudaFreeHost(t.stage); t.stage = nullptr; t.stage_half = 0; }
    void *p = nullptr;
    cudaError_t e = cudaHostAlloc(&p, 2 * want, cudaHostAllocDefault);
    if (e != cudaSuccess) { tensor__cuda_msg_err(error, len, "cannot allocate pinned host memory for a copy", e); return false; }
    t.stage = (char *)p;
    t.stage_half = want;
    return true;
}
/* Waits until half k of the staging buffer is no longer used by a queued copy. */
static bool tensor__cuda_stage_wait(tensor__cuda_thread &t, int k, char *error, size_t len) {
    if (!t.ev_recorded[k]) return true;
    cudaError_t e = cudaEventSynchronize(t.ev[k]);
    if (e != cudaSuccess) { tensor__cuda_msg_err(error, len, "copy", e); return false; }
    t.ev_recorded[k] = false;
    return true;
}
/* Queues a copy that uses half k and records its event. */
static bool tensor__cuda_stage_copy(tensor__cuda_thread &t, int k, void *dst, const void *src, size_t n, cudaMemcpyKind kind, char *error, size_t len) {
    cudaError_t e = cudaMemcpyAsync(dst, src, n, kind, t.stream);
    if (e == cudaSuccess) e = cudaEventRecord(t.ev[k], t.stream);
    if (e != cudaSuccess) { tensor__cuda_msg_err(error, len, "copy", e); return false; }
    t.ev_recorded[k] = true;
    return true;
}

static int tensor__cuda_copy(void *dst, const void *src, size_t nbytes, tensor__copy_kind kind, char *error, size_t len) {
    if (nbytes == 0) return 0;
    cudaStream_t stream;
    if (!tensor__cuda_stream(&stream, error, len)) return -1;
    tensor__cuda_thread &t = tensor__cuda_self;
    if (kind == TENSOR__COPY_ON_DEVICE) {
        if (dst == src) return 0;
        cudaError_t e = cudaMemcpyAsync(dst, src, nbytes, cudaMemcpyDeviceToDevice, stream);
        if (e != cudaSuccess) { tensor__cuda_msg_err(error, len, "copy on the device", e); return -1; }
        return 0;
    }
    if (kind != TENSOR__COPY_TO_DEVICE && kind != TENSOR__COPY_TO_HOST) { tensor__cuda_msg(error, len, "invalid copy kind %d", (int)kind); return -1; }
    if (!tensor__cuda_stage(t, nbytes, error, len)) return -1;
    size_t chunk = t.stage_half, chunks = (nbytes + chunk - 1) / chunk;
    if (kind == TENSOR__COPY_TO_DEVICE) {
        const char *s = (const char *)src;
        char *d = (char *)dst;
        for (size_t i = 0; i < chunks; i++) {
            int k = (int)(i & 1);
            size_t off = i * chunk, n = nbytes - off < chunk ? nbytes - off : chunk;
            if (!tensor__cuda_stage_wait(t, k, error, len)) return -1;
            memcpy(t.stage + (size_t)k * chunk, s + off, n);
            if (!tensor__cuda_stage_copy(t, k, d + off, t.stage + (size_t)k * chunk, n, cudaMemcpyHostToDevice, error, len)) return -1;
        }
        return 0;
    }
    /* to the host: chunk i + 1 is queued before chunk i is copied out of the staging buffer */
    const char *s = (const char *)src;
    char *d = (char *)dst;
    for (size_t i = 0; i <= chunks; i++) {
        if (i < chunks) { /* queue chunk i */
            int k = (int)(i & 1);
            size_t off = i * chunk, n = nbytes - off < chunk ? nbytes - off : chunk;
            if (!tensor__cuda_stage_wait(t, k, error, len)) return -1;
            if (!tensor__cuda_stage_copy(t, k, t.stage + (size_t)k * chunk, s + off, n, cudaMemcpyDeviceToHost, error, len)) return -1;
        }
        if (i > 0) { /* chunk i - 1 is there once its event completes (an earlier fault shows here) */
            int k = (int)((i - 1) & 1);
            size_t off = (i - 1) * chunk, n = nbytes - off < chunk ? nbytes - off : chunk;
            if (!tensor__cuda_stage_wait(t, k, error, len)) return -1;
            memcpy(d + off, t.stage + (size_t)k * chunk, n);
        }
    }
    return 0;
}

// >>cuda-convert ---------------------------------------------------------------------------------
/* Loads and stores of every dtype with exactly the CPU's conversions (tensor__load_f64 and friends
   in >>core): f16/bf16 <-> f32 with round to nearest even and the same NaN bits, a double reaches
   f16/bf16 through f32, a bool stores v != 0 (NaN is true), a float reaches an integer dtype
   through tensor__double_to_i64 (NaN 0, saturating) and integers narrow by wrapping. They serve
   the kernels, and the host for scalars passed by value (where they read and write through
   memcpy: no aliasing games on the host). Device pointers are aligned to their element. */
#define TENSOR__CUDA_HD static inline __host__ __device__
#define TENSOR__CUDA_D static inline __device__

template <class T> TENSOR__CUDA_HD T tensor__cuda_rd(const char *p) {
#ifdef __CUDA_ARCH__
    return *reinterpret_cast<const T *>(p);
#else
    T v;
    memcpy(&v, p, sizeof v);
    return v;
#endif
}
template <class T> TENSOR__CUDA_HD void tensor__cuda_wr(char *p, T v) {
#ifdef __CUDA_ARCH__
    *reinterpret_cast<T *>(p) = v;
#else
    memcpy(p, &v, sizeof v);
#endif
}
TENSOR__CUDA_HD float tensor__cuda_bits_f32(uint32_t u) {
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float f;
    memcpy(&f, &u, 4);
    return f;
#endif
}
TENSOR__CUDA_HD uint32_t tensor__cuda_f32_bits(float f) {
#ifdef __CUDA_ARCH__
    return __float_as_uint(f);
#else
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
#endif
}
TENSOR__CUDA_HD float tensor__cuda_f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0x1f) return tensor__cuda_bits_f32(sign | 0x7f800000u | (man << 13)); /* inf, NaN */
    if (exp == 0) {                                                                 /* zero, subnormal */
        float v = (float)man * (1.0f / 16777216.0f);                                  /* exact */
        return sign ? -v : v;
    }
    return tensor__cuda_bits_f32(sign | ((exp + 112) << 23) | (man << 13));
}
TENSOR__CUDA_HD uint16_t tensor__cuda_f32_to_f16(float f) {
    uint32_t u = tensor__cuda_f32_bits(f), sign = (u >> 16) & 0x8000, a = u & 0x7fffffffu;
    if (a >= 0x7f800000u) return (uint16_t)(sign | 0x7c00 | (a > 0x7f800000u ? 0x200 | ((a >> 13) & 0x3ff) : 0));
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* rounds to >= 65520: inf */
    if (a < 0x38800000u) {                                  /* below 2^-14: subnormal or zero */
        float v = tensor__cuda_bits_f32(a) * 16777216.0f;    /* exact: the value in units of 2^-24 */
        uint32_t m = (uint32_t)v;
        float rem = v - (float)m;                            /* exact too, fused or not */
        if (rem > 0.5f || (rem == 0.5f && (m & 1))) m++;
        return (uint16_t)(sign | m);
    }
    uint32_t r = a - 0x38000000u; /* exponent bias 127 -> 15 */
    uint32_t h = r >> 13, low = r & 0x1fff;
    if (low > 0x1000 || (low == 0x1000 && (h & 1))) h++;
    return (uint16_t)(sign | h);
}
TENSOR__CUDA_HD float tensor__cuda_bf16_to_f32(uint16_t b) { return tensor__cuda_bits_f32((uint32_t)b << 16); }
TENSOR__CUDA_HD uint16_t tensor__cuda_f32_to_bf16(float f) {
    uint32_t u = tensor__cuda_f32_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fff + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

TENSOR__CUDA_HD bool tensor__cuda_is_float(tensor_dtype d) { return d == TENSOR_F32 || d == TENSOR_F64 || d == TENSOR_F16 || d == TENSOR_BF16; }
TENSOR__CUDA_HD int tensor__cuda_size(tensor_dtype d) {
    switch (d) {
    case TENSOR_F64: case TENSOR_I64: return 8;
    case TENSOR_F32: case TENSOR_I32: return 4;
    case TENSOR_F16: case TENSOR_BF16: return 2;
    default: return 1;
    }
}
TENSOR__CUDA_HD double tensor__cuda_load_f64(const char *p, tensor_dtype d) {
    switch (d) {
    case TENSOR_F32: return tensor__cuda_rd<float>(p);
    case TENSOR_F64: return tensor__cuda_rd<double>(p);
    case TENSOR_F16: return tensor__cuda_f16_to_f32(tensor__cuda_rd<uint16_t>(p));
    case TENSOR_BF16: return tensor__cuda_bf16_to_f32(tensor__cuda_rd<uint16_t>(p));
    case TENSOR_I32: return tensor__cuda_rd<int32_t>(p);
    case TENSOR_I64: return (double)tensor__cuda_rd<int64_t>(p);
    case TENSOR_U8: return tensor__cuda_rd<uint8_t>(p);
    case TENSOR_BOOL: return tensor__cuda_rd<uint8_t>(p) != 0;
    }
    return 0;
}
TENSOR__CUDA_HD int64_t tensor__cuda_load_i64(const char *p, tensor_dtype d) {
    switch (d) {
    case TENSOR_I32: return tensor__cuda_rd<int32_t>(p);
    case TENSOR_I64: return tensor__cuda_rd<int64_t>(p);
    case TENSOR_U8: return tensor__cuda_rd<uint8_t>(p);
    case TENSOR_BOOL: return tensor__cuda_rd<uint8_t>(p) != 0;
    default: return tensor__double_to_i64(tensor__cuda_load_f64(p, d));
    }
}
TENSOR__CUDA_HD void tensor__cuda_store_i64(char *p, tensor_dtype d, int64_t v) {
    switch (d) {
    case TENSOR_I32: tensor__cuda_wr<int32_t>(p, (int32_t)(uint32_t)(uint64_t)v); return;
    case TENSOR_I64: tensor__cuda_wr<int64_t>(p, v); return;
    case TENSOR_U8: tensor__cuda_wr<uint8_t>(p, (uint8_t)(uint64_t)v); return;
    case TENSOR_BOOL: tensor__cuda_wr<uint8_t>(p, v != 0); return;
    case TENSOR_F32: tensor__cuda_wr<float>(p, (float)v); return;
    case TENSOR_F64: tensor__cuda_wr<double>(p, (double)v); return;
    case TENSOR_F16: tensor__cuda_wr<uint16_t>(p, tensor__cuda_f32_to_f16((float)v)); return;
    case TENSOR_BF16: tensor__cuda_wr<uint16_t>(p, tensor__cuda_f32_to_bf16((float)v)); return;
    }
}
TENSOR__CUDA_HD void tensor__cuda_store_f64(char *p, tensor_dtype d, double v) {
    switch (d) {
    case TENSOR_F32: tensor__cuda_wr<float>(p, (float)v); return;
    case TENSOR_F64: tensor__cuda_wr<double>(p, v); return;
    case TENSOR_F16: tensor__cuda_wr<uint16_t>(p, tensor__cuda_f32_to_f16((float)v)); return;
    case TENSOR_BF16: tensor__cuda_wr<uint16_t>(p, tensor__cuda_f32_to_bf16((float)v)); return;
    case TENSOR_BOOL: tensor__cuda_wr<uint8_t>(p, v != 0); return; /* NaN is true, as on the CPU */
    default: tensor__cuda_store_i64(p, d, tensor__double_to_i64(v)); return;
    }
}
/* Element copies and stores of raw bits (little-endian, as the host's): same-dtype copies move
   bits, as the CPU's memcpy does (NaN payloads included). */
TENSOR__CUDA_HD void tensor__cuda_store_bits(char *p, int size, uint64_t bits) {
    switch (size) {
    case 8: tensor__cuda_wr<uint64_t>(p, bits); return;
    case 4: tensor__cuda_wr<uint32_t>(p, (uint32_t)bits); return;
    case 2: tensor__cuda_wr<uint16_t>(p, (uint16_t)bits); return;
    default: tensor__cuda_wr<uint8_t>(p, (uint8_t)bits); return;
    }
}
TENSOR__CUDA_HD uint64_t tensor__cuda_load_bits(const char *p, int size) {
    switch (size) {
    case 8: return tensor__cuda_rd<uint64_t>(p);
    case 4: return tensor__cuda_rd<uint32_t>(p);
    case 2: return tensor__cuda_rd<uint16_t>(p);
    default: return tensor__cuda_rd<uint8_t>(p);
    }
}

// >>cuda-offsets ---------------------------------------------------------------------------------
/* Where each operand's element i (row-major over out's shape) lies. The host builds, from out's
   shape and each operand's strides, the same coalesced description as the CPU's tensor__iter_init:
   operands right-aligned to out's shape (a missing or size-1 dim strides 0), size-1 dims of out
   dropped, adjacent dims merged where every operand steps evenly across both. A kernel turns the
   linear index into byte offsets by div/mod over the coalesced dims, the last one fastest; a
   layout that coalesces to one dim (every operand dense or broadcast) needs no division. */
#define TENSOR__CUDA_MAX_OPS 4
struct tensor__cuda_offsets {
    int ndim;
    int64_t shape[TENSOR_MAX_DIMS];
    int64_t stride[TENSOR__CUDA_MAX_OPS][TENSOR_MAX_DIMS]; /* in bytes */
};

static int64_t tensor__cuda_numel(const tensor__dev_operand &t) {
    int64_t n = 1;
    for (int d = 0; d < t.ndim; d++) n *= t.shape[d];
    return n;
}

/* Fills o for the n operands ops (ops[0] the output, whose shape the iteration has). With
   skip_broadcast_out, dims along which the output strides 0 are dropped (a fill of an expanded
   view writes each location once). Returns the number of elements the description covers. */
static int64_t tensor__cuda_offsets_init(tensor__cuda_offsets *o, int n, const tensor__dev_operand *const *ops, bool skip_broadcast_out) {
    memset(o, 0, sizeof *o);
    int ndim = ops[0]->ndim;
    const int64_t *shape = ops[0]->shape;
    int nd = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 1 || (skip_broadcast_out && ops[0]->strides[d] == 0)) continue;
        o->shape[nd] = shape[d];
        for (int k = 0; k < n; k++) {
            const tensor__dev_operand *t = ops[k];
            int td = d - (ndim - t->ndim);
            o->stride[k][nd] = (t->by_value || td < 0 || t->shape[td] == 1) ? 0 : t->strides[td] * tensor__cuda_size(t->dtype);
        }
        nd++;
    }
    int out = 0;
    for (int d = 0; d < nd; d++) {
        if (out > 0) {
            bool ok = true;
            for (int k = 0; k < n && ok; k++) ok = o->stride[k][out - 1] == o->stride[k][d] * o->shape[d];
            if (ok) {
                o->shape[out - 1] *= o->shape[d];
                for (int k = 0; k < n; k++) o->stride[k][out - 1] = o->stride[k][d];
                continue;
            }
        }
        o->shape[out] = o->shape[d];
        for (int k = 0; k < n; k++) o->stride[k][out] = o->stride[k][d];
        out++;
    }
    if (out == 0) { /* a single element */
        o->shape[0] = 1;
        for (int k = 0; k < n; k++) o->stride[k][0] = 0;
        out = 1;
    }
    o->ndim = out;
    int64_t numel = 1;
    for (int d = 0; d < out; d++) numel *= o->shape[d];
    return numel;
}
/* Whether operand k of o is dense over the whole iteration (one dim of its element size, or a
   single element). */
static bool tensor__cuda_dense(const tensor__cuda_offsets &o, int k, int size) {
    return o.ndim == 1 && (o.stride[k][0] == size || o.shape[0] == 1);
}

template <int N> TENSOR__CUDA_D void tensor__cuda_offsets_get(const tensor__cuda_offsets &o, int64_t i, int64_t (&off)[N]) {
    if (o.ndim == 1) {
#pragma unroll
        for (int k = 0; k < N; k++) off[k] = i * o.stride[k][0];
        return;
    }
#pragma unroll
    for (int k = 0; k < N; k++) off[k] = 0;
    for (int d = o.ndim - 1; d >= 0; d--) {
        int64_t s = o.shape[d], q = i / s, idx = i - q * s;
        i = q;
#pragma unroll
        for (int k = 0; k < N; k++) off[k] += idx * o.stride[k][d];
    }
}

/* Launch shape: 256 threads a block and a grid-stride loop, so the result never depends on the
   grid (capped: a thread then does several elements). */
#define TENSOR__CUDA_THREADS 256
#define TENSOR__CUDA_MAX_BLOCKS 65536
static unsigned tensor__cuda_blocks(int64_t n) {
    int64_t b = (n + TENSOR__CUDA_THREADS - 1) / TENSOR__CUDA_THREADS;
    return (unsigned)(b < 1 ? 1 : b > TENSOR__CUDA_MAX_BLOCKS ? TENSOR__CUDA_MAX_BLOCKS : b);
}
#define TENSOR__CUDA_LOOP(i, n) \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += (int64_t)gridDim.x * blockDim.x)

/* ---- kernels' host side: messages ---- */
#define TENSOR__CUDA_NAME(name, kind, impl, types, grad, params, doc) #name,
static const char *const tensor__cuda_op_names[TENSOR_OP_COUNT] = {TENSOR_OPS(TENSOR__CUDA_NAME)};
static const char *tensor__cuda_op_name(tensor_op op) { return (unsigned)op < TENSOR_OP_COUNT ? tensor__cuda_op_names[op] : "?"; }

static int tensor__cuda_fail(tensor__dev_call *c, const char *fmt, ...) TENSOR__CUDA_PRINTF(2, 3);
static int tensor__cuda_fail(tensor__dev_call *c, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->error, sizeof c->error, fmt, ap);
    va_end(ap);
    return 1;
}
static int tensor__cuda_fail_cuda(tensor__dev_call *c, const char *what, cudaError_t e) {
    tensor__cuda_fail(c, "CUDA error: %s %s: %s", tensor__cuda_op_name(c->op), what, cudaGetErrorString(e));
    (void)cudaGetLastError();
    return 1;
}
/* A kernel's launch: any earlier error state is cleared first (it was reported where it arose;
   a sticky fault comes back from the launch itself), and the launch is checked at once. */
#define TENSOR__CUDA_LAUNCH_BEGIN() (void)cudaGetLastError()
static int tensor__cuda_launch_check(tensor__dev_call *c) {
    cudaError_t e = cudaGetLastError();
    return e == cudaSuccess ? 0 : tensor__cuda_fail_cuda(c, "kernel launch", e);
}
/* The operands a kernel is given must be there (a device pointer, or a value) with a valid dtype. */
static bool tensor__cuda_operand_ok(tensor__dev_call *c, const tensor__dev_operand &t, const char *which) {
    if ((unsigned)t.dtype >= TENSOR_DTYPE_COUNT || t.ndim < 0 || t.ndim > TENSOR_MAX_DIMS) {
        tensor__cuda_fail(c, "%s: invalid %s operand", tensor__cuda_op_name(c->op), which);
        return false;
    }
    if (!t.by_value && !t.data) {
        tensor__cuda_fail(c, "%s: the %s operand has no device data", tensor__cuda_op_name(c->op), which);
        return false;
    }
    return true;
}

// >>cuda-elementwise -----------------------------------------------------------------------------
/* Every op of the shared formula lists (>>formulas) becomes a functor whose f evaluates the float
   formula in double and i the integer formula in int64, as the CPU's reference loops do; the
   kernels load each input as double or int64 (by the compute dtype, float or not), evaluate, and
   store into the output's dtype. */
struct tensor__cuda_ew_args {
    char *base[TENSOR__CUDA_MAX_OPS];     /* [0] the output; NULL for an input passed by value */
    tensor_dtype dt[TENSOR__CUDA_MAX_OPS];
    bool byval[TENSOR__CUDA_MAX_OPS];
    double fv[TENSOR__CUDA_MAX_OPS];      /* a by-value input as the CPU would load it: as double, */
    int64_t iv[TENSOR__CUDA_MAX_OPS];     /* as int64, */
    uint64_t bits[TENSOR__CUDA_MAX_OPS];  /* and its bits in its own dtype */
    double p0, p1;
    int *err;                             /* the flag integer fmod, remainder, floor_divide raise; NULL for other ops */
    bool int_compute;
};
/* Slot k of a: operand t. A by-value scalar is stored in its dtype and loaded back, so the kernel
   sees exactly what the CPU loads from a 0-dim tensor. */
static void tensor__cuda_args_set(tensor__cuda_ew_args *a, int k, const tensor__dev_operand &t) {
    a->base[k] = (char *)t.data;
    a->dt[k] = t.dtype;
    a->byval[k] = t.by_value;
    a->fv[k] = 0;
    a->iv[k] = 0;
    a->bits[k] = 0;
    if (!t.by_value) return;
    char buf[8] = {0};
    if (tensor__cuda_is_float(t.dtype)) tensor__cuda_store_f64(buf, t.dtype, t.value);
    else tensor__cuda_store_i64(buf, t.dtype, t.ivalue);
    memcpy(&a->bits[k], buf, sizeof buf); /* little-endian: the element in the low bytes */
    a->fv[k] = tensor__cuda_load_f64(buf, t.dtype);
    a->iv[k] = tensor__cuda_load_i64(buf, t.dtype);
}

/* The formulas take x (and y) as parameters: a formula that ignores its operand (the integer
   formula 0 of a float-only op) then leaves an unused parameter, which (void) quiets, where an
   unused local would still draw nvcc's "set but never used". */
#define TENSOR__CUDA_UNARY_OP(name, FEXPR, IEXPR)                                                              \
    struct tensor__cuda_op_##name {                                                                        \
        static constexpr tensor_op op = TENSOR_OP_##name;                                                  \
        __device__ static double f1(double x, double p0, double p1) { (void)x; (void)p0; (void)p1; return (double)(FEXPR); } \
        __device__ static int64_t i1(int64_t x, double p0, double p1) { (void)x; (void)p0; (void)p1; return (int64_t)(IEXPR); } \
        __device__ static double f(const double *v, double p0, double p1, int *) { return f1(v[0], p0, p1); } \
        __device__ static int64_t i(const int64_t *v, double p0, double p1, int *) { return i1(v[0], p0, p1); } \
    };
#define TENSOR__CUDA_BINARY_OP(name, FEXPR, IEXPR)                                                             \
    struct tensor__cuda_op_##name {                                                                        \
        static constexpr tensor_op op = TENSOR_OP_##name;                                                  \
        __device__ static double f2(double x, double y, double p0, int *err) { (void)x; (void)y; (void)p0; (void)err; return (double)(FEXPR); } \
        __device__ static int64_t i2(int64_t x, int64_t y, int *err) { (void)x; (void)y; (void)err; return (int64_t)(IEXPR); } \
        __device__ static double f(const double *v, double p0, double, int *err) { return f2(v[0], v[1], p0, err); } \
        __device__ static int64_t i(const int64_t *v, double, double, int *err) { return i2(v[0], v[1], err); } \
    };
TENSOR__UNARY_FORMULAS(TENSOR__CUDA_UNARY_OP)
TENSOR__BINARY_FORMULAS(TENSOR__CUDA_BINARY_OP)
/* misc: the ternary formulas (lerp, addcmul, addcdiv): x, y, z and the op's number p0 */
#define TENSOR__CUDA_TERNARY_OP(name, FEXPR, IEXPR)                                                            \
    struct tensor__cuda_op_##name {                                                                        \
        static constexpr tensor_op op = TENSOR_OP_##name;                                                  \
        __device__ static double f3(double x, double y, double z, double p0) { (void)x; (void)y; (void)z; (void)p0; return (double)(FEXPR); } \
        __device__ static int64_t i3(int64_t x, int64_t y, int64_t z, double p0) { (void)x; (void)y; (void)z; (void)p0; return (int64_t)(IEXPR); } \
        __device__ static double f(const double *v, double p0, double, int *) { return f3(v[0], v[1], v[2], p0); } \
        __device__ static int64_t i(const int64_t *v, double p0, double, int *) { return i3(v[0], v[1], v[2], p0); } \
    };
TENSOR__TERNARY_FORMULAS(TENSOR__CUDA_TERNARY_OP)

/* Any layout, any dtypes: offsets by the description, loads and stores converting. */
template <class Op, int NIN>
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_ew_kernel(tensor__cuda_offsets o, tensor__cuda_ew_args a, int64_t n) {
    TENSOR__CUDA_LOOP(i, n) {
        int64_t off[NIN + 1];
        tensor__cuda_offsets_get<NIN + 1>(o, i, off);
        if (a.int_compute) {
            int64_t v[NIN];
#pragma unroll
            for (int j = 1; j <= NIN; j++) v[j - 1] = a.byval[j] ? a.iv[j] : tensor__cuda_load_i64(a.base[j] + off[j], a.dt[j]);
            tensor__cuda_store_i64(a.base[0] + off[0], a.dt[0], Op::i(v, a.p0, a.p1, a.err));
        } else {
            double v[NIN];
#pragma unroll
            for (int j = 1; j <= NIN; j++) v[j - 1] = a.byval[j] ? a.fv[j] : tensor__cuda_load_f64(a.base[j] + off[j], a.dt[j]);
            tensor__cuda_store_f64(a.base[0] + off[0], a.dt[0], Op::f(v, a.p0, a.p1, a.err));
        }
    }
}

/* f32 in, f32 out, every operand dense (or a by-value scalar: p[j] NULL, its value s[j]): the
   same formula, with 16-byte loads and stores when every pointer is 16-byte aligned. */
struct tensor__cuda_f32_in {
    const float *p[3];
    float s[3];
};
template <class Op, int NIN>
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_ew_f32_kernel(float *out, tensor__cuda_f32_in in, double p0, double p1, int64_t n, bool vec) {
    int64_t done = 0;
    if (vec) {
        int64_t n4 = n / 4;
        TENSOR__CUDA_LOOP(i, n4) {
            float x[NIN][4];
#pragma unroll
            for (int j = 0; j < NIN; j++) {
                float4 q = in.p[j] ? reinterpret_cast<const float4 *>(in.p[j])[i] : make_float4(in.s[j], in.s[j], in.s[j], in.s[j]);
                x[j][0] = q.x; x[j][1] = q.y; x[j][2] = q.z; x[j][3] = q.w;
            }
            float r[4];
#pragma unroll
            for (int e = 0; e < 4; e++) {
                double v[NIN];
#pragma unroll
                for (int j = 0; j < NIN; j++) v[j] = x[j][e];
                r[e] = (float)Op::f(v, p0, p1, nullptr);
            }
            reinterpret_cast<float4 *>(out)[i] = make_float4(r[0], r[1], r[2], r[3]);
        }
        done = n4 * 4;
    }
    for (int64_t i = done + (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < n; i += (int64_t)gridDim.x * blockDim.x) {
        double v[NIN];
#pragma unroll
        for (int j = 0; j < NIN; j++) v[j] = in.p[j] ? in.p[j][i] : in.s[j];
        out[i] = (float)Op::f(v, p0, p1, nullptr);
    }
}

static bool tensor__cuda_aligned16(const void *p) { return ((uintptr_t)p & 15) == 0; }

/* Runs out = Op(ins[0..NIN)) computing in `compute` (its integer formula when that is not a float
   dtype). Integer fmod, remainder and floor_divide also check their division-by-zero flag, which
   waits for the kernel. */
template <class Op, int NIN>
static int tensor__cuda_ew_run(tensor__dev_call *c, const tensor__dev_operand *ins, tensor_dtype compute) {
    const tensor__dev_operand &out = c->out;
    if (!tensor__cuda_operand_ok(c, out, "output")) return 1;
    for (int j = 0; j < NIN; j++)
        if (!tensor__cuda_operand_ok(c, ins[j], "input")) return 1;
    if (out.by_value) return tensor__cuda_fail(c, "%s: the output cannot be a value", tensor__cuda_op_name(c->op));
    int64_t n = tensor__cuda_numel(out);
    if (n == 0) return 0;
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    const tensor__dev_operand *ops[NIN + 1];
    ops[0] = &out;
    for (int j = 0; j < NIN; j++) ops[j + 1] = &ins[j];
    tensor__cuda_offsets o;
    tensor__cuda_offsets_init(&o, NIN + 1, ops, false);
    bool int_compute = !tensor__cuda_is_float(compute);
    int *flag = nullptr;
    if (int_compute && (Op::op == TENSOR_OP_fmod || Op::op == TENSOR_OP_remainder || Op::op == TENSOR_OP_floor_divide)) {
        flag = (int *)tensor__cuda_alloc(sizeof(int), c->error, sizeof c->error);
        if (!flag) return 1;
        cudaError_t e = cudaMemsetAsync(flag, 0, sizeof(int), s);
        if (e != cudaSuccess) { tensor__cuda_free(flag); return tensor__cuda_fail_cuda(c, "clearing its error flag", e); }
    }
    bool fast = !int_compute && out.dtype == TENSOR_F32 && tensor__cuda_dense(o, 0, 4);
    for (int j = 0; j < NIN; j++) fast = fast && ins[j].dtype == TENSOR_F32 && (ins[j].by_value || tensor__cuda_dense(o, j + 1, 4));
    TENSOR__CUDA_LAUNCH_BEGIN();
    if (fast) {
        tensor__cuda_f32_in in;
        bool vec = tensor__cuda_aligned16(out.data);
        for (int j = 0; j < 3; j++) { in.p[j] = nullptr; in.s[j] = 0; }
        for (int j = 0; j < NIN; j++) {
            in.p[j] = ins[j].by_value ? nullptr : (const float *)ins[j].data;
            in.s[j] = ins[j].by_value ? (float)ins[j].value : 0.0f; /* an f32 value: exact */
            vec = vec && (ins[j].by_value || tensor__cuda_aligned16(ins[j].data));
        }
        tensor__cuda_ew_f32_kernel<Op, NIN><<<tensor__cuda_blocks(vec ? n / 4 : n), TENSOR__CUDA_THREADS, 0, s>>>((float *)out.data, in, c->p[0], c->p[1], n, vec);
    } else {
        tensor__cuda_ew_args a;
        memset(&a, 0, sizeof a);
        tensor__cuda_args_set(&a, 0, out);
        for (int j = 0; j < NIN; j++) tensor__cuda_args_set(&a, j + 1, ins[j]);
        a.p0 = c->p[0];
        a.p1 = c->p[1];
        a.err = flag;
        a.int_compute = int_compute;
        tensor__cuda_ew_kernel<Op, NIN><<<tensor__cuda_blocks(n), TENSOR__CUDA_THREADS, 0, s>>>(o, a, n);
    }
    if (tensor__cuda_launch_check(c)) { tensor__cuda_free(flag); return 1; }
    if (flag) {
        int raised = 0;
        cudaError_t e = cudaMemcpyAsync(&raised, flag, sizeof raised, cudaMemcpyDeviceToHost, s);
        if (e == cudaSuccess) e = cudaStreamSynchronize(s);
        tensor__cuda_free(flag); /* after the wait: nothing queued uses it any more */
        if (e != cudaSuccess) return tensor__cuda_fail_cuda(c, "reading its error flag", e);
        if (raised) return tensor__cuda_fail(c, "integer division by zero");
    }
    return 0;
}

/* The kernel of a formula op: its call record as the CPU's tensor__run_elementwise reads it. */
template <class Op, int NIN>
static int tensor__cuda_ew(tensor__dev_call *c) {
    if (c->n_in != NIN) return tensor__cuda_fail(c, "%s: expected %d inputs, got %d", tensor__cuda_op_name(c->op), NIN, c->n_in);
    return tensor__cuda_ew_run<Op, NIN>(c, c->in, c->compute);
}

/* where: in[0] the bool condition, in[1] a, in[2] b; the output has the compute dtype. An element
   of the output's own dtype is copied bit for bit, another converted through int64 (integer
   compute) or double, as the CPU's tensor__loop_where does. */
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_where_kernel(tensor__cuda_offsets o, tensor__cuda_ew_args a, int64_t n) {
    int osize = tensor__cuda_size(a.dt[0]);
    TENSOR__CUDA_LOOP(i, n) {
        int64_t off[4];
        tensor__cuda_offsets_get<4>(o, i, off);
        bool cond = a.byval[1] ? a.iv[1] != 0 : tensor__cuda_rd<uint8_t>(a.base[1] + off[1]) != 0;
        int k = cond ? 2 : 3;
        char *dst = a.base[0] + off[0];
        const char *src = a.base[k] + off[k];
        if (a.dt[k] == a.dt[0]) tensor__cuda_store_bits(dst, osize, a.byval[k] ? a.bits[k] : tensor__cuda_load_bits(src, osize));
        else if (a.int_compute) tensor__cuda_store_i64(dst, a.dt[0], a.byval[k] ? a.iv[k] : tensor__cuda_load_i64(src, a.dt[k]));
        else tensor__cuda_store_f64(dst, a.dt[0], a.byval[k] ? a.fv[k] : tensor__cuda_load_f64(src, a.dt[k]));
    }
}
static int tensor__cuda_where(tensor__dev_call *c) {
    if (c->n_in != 3) return tensor__cuda_fail(c, "where: expected 3 inputs, got %d", c->n_in);
    const tensor__dev_operand &out = c->out;
    if (!tensor__cuda_operand_ok(c, out, "output") || out.by_value) return 1;
    for (int j = 0; j < 3; j++)
        if (!tensor__cuda_operand_ok(c, c->in[j], "input")) return 1;
    int64_t n = tensor__cuda_numel(out);
    if (n == 0) return 0;
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    const tensor__dev_operand *ops[4] = {&out, &c->in[0], &c->in[1], &c->in[2]};
    tensor__cuda_offsets o;
    tensor__cuda_offsets_init(&o, 4, ops, false);
    tensor__cuda_ew_args a;
    memset(&a, 0, sizeof a);
    for (int k = 0; k < 4; k++) tensor__cuda_args_set(&a, k, *ops[k]);
    a.int_compute = !tensor__cuda_is_float(c->compute);
    TENSOR__CUDA_LAUNCH_BEGIN();
    tensor__cuda_where_kernel<<<tensor__cuda_blocks(n), TENSOR__CUDA_THREADS, 0, s>>>(o, a, n);
    return tensor__cuda_launch_check(c);
}

/* In-place ops, with the call records of their CPU kernels. add_: out = in[0] = a, in[1] = b,
   computed in a's dtype. */
static int tensor__cuda_add_(tensor__dev_call *c) {
    if (c->n_in != 2) return tensor__cuda_fail(c, "add_: expected 2 inputs, got %d", c->n_in);
    return tensor__cuda_ew_run<tensor__cuda_op_add, 2>(c, c->in, c->out.dtype);
}
/* mul_scalar_: out = in[0] = a, the scalar in p[0]. As on the CPU, the scalar is first stored as
   the 0-dim tensor the CPU wraps it in (f64 for an f64 a, f32 for another float dtype, i64 through
   tensor__double_to_i64 for integers), and the product is computed in a's dtype. */
static int tensor__cuda_mul_scalar_(tensor__dev_call *c) {
    tensor__dev_operand ins[2];
    ins[0] = c->out;
    memset(&ins[1], 0, sizeof ins[1]);
    ins[1].by_value = true;
    tensor_dtype d = c->out.dtype;
    if (tensor__cuda_is_float(d)) {
        ins[1].dtype = d == TENSOR_F64 ? TENSOR_F64 : TENSOR_F32;
        ins[1].value = c->p[0]; /* rounded to the scalar's dtype by tensor__cuda_args_set */
    } else {
        ins[1].dtype = TENSOR_I64;
        ins[1].ivalue = tensor__double_to_i64(c->p[0]);
    }
    return tensor__cuda_ew_run<tensor__cuda_op_mul, 2>(c, ins, d);
}

// >>cuda-copykernels -----------------------------------------------------------------------------
/* The converting strided copy of clone, contiguous, to_dtype and copy_ (src broadcast to dst's
   shape), with the CPU's tensor__copy_loop rules: the same dtype moves bits; otherwise through
   double when either side is a float dtype, else through int64. */
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_copy_kernel(tensor__cuda_offsets o, char *dst, const char *src, tensor_dtype dd, tensor_dtype sd, int64_t n) {
    int size = tensor__cuda_size(dd);
    bool via_double = tensor__cuda_is_float(dd) || tensor__cuda_is_float(sd);
    TENSOR__CUDA_LOOP(i, n) {
        int64_t off[2];
        tensor__cuda_offsets_get<2>(o, i, off);
        if (dd == sd) tensor__cuda_store_bits(dst + off[0], size, tensor__cuda_load_bits(src + off[1], size));
        else if (via_double) tensor__cuda_store_f64(dst + off[0], dd, tensor__cuda_load_f64(src + off[1], sd));
        else tensor__cuda_store_i64(dst + off[0], dd, tensor__cuda_load_i64(src + off[1], sd));
    }
}
/* Every element of dst (any layout) = bits, an element of dst's dtype. */
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_fill_kernel(tensor__cuda_offsets o, char *dst, int size, uint64_t bits, int64_t n) {
    TENSOR__CUDA_LOOP(i, n) {
        int64_t off[1];
        tensor__cuda_offsets_get<1>(o, i, off);
        tensor__cuda_store_bits(dst + off[0], size, bits);
    }
}

static int tensor__cuda_fill_run(tensor__dev_call *c, const tensor__dev_operand &dst, uint64_t bits) {
    if (!tensor__cuda_operand_ok(c, dst, "output") || dst.by_value) return 1;
    if (tensor__cuda_numel(dst) == 0) return 0;
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    const tensor__dev_operand *ops[1] = {&dst};
    tensor__cuda_offsets o;
    int64_t n = tensor__cuda_offsets_init(&o, 1, ops, true); /* an expanded view: each location once */
    int size = tensor__cuda_size(dst.dtype);
    bool bytes_alike = size == 1 || bits == 0 ||
                       (size == 2 && (bits & 0xff) == (bits >> 8)) ||
                       (size == 4 && bits == (bits & 0xff) * 0x01010101u) ||
                       (size == 8 && bits == (bits & 0xff) * 0x0101010101010101ull);
    if (bytes_alike && tensor__cuda_dense(o, 0, size)) { /* one byte value throughout: a memset */
        cudaError_t e = cudaMemsetAsync(dst.data, (int)(bits & 0xff), (size_t)n * (size_t)size, s);
        return e == cudaSuccess ? 0 : tensor__cuda_fail_cuda(c, "memset", e);
    }
    TENSOR__CUDA_LAUNCH_BEGIN();
    tensor__cuda_fill_kernel<<<tensor__cuda_blocks(n), TENSOR__CUDA_THREADS, 0, s>>>(o, (char *)dst.data, size, bits, n);
    return tensor__cuda_launch_check(c);
}

/* The bits of value stored in dtype d, as the CPU's tensor__store_f64 stores it. */
static uint64_t tensor__cuda_bits_of(double value, tensor_dtype d) {
    char buf[8] = {0};
    tensor__cuda_store_f64(buf, d, value);
    uint64_t bits;
    memcpy(&bits, buf, sizeof bits);
    return bits;
}

static int tensor__cuda_copy_run(tensor__dev_call *c, const tensor__dev_operand &dst, const tensor__dev_operand &src) {
    if (!tensor__cuda_operand_ok(c, dst, "output") || dst.by_value || !tensor__cuda_operand_ok(c, src, "input")) return 1;
    int64_t n = tensor__cuda_numel(dst);
    if (n == 0) return 0;
    if (src.by_value) { /* a value: a fill with it, converted as the copy would */
        tensor__cuda_ew_args a;
        memset(&a, 0, sizeof a);
        tensor__cuda_args_set(&a, 1, src);
        uint64_t bits;
        if (dst.dtype == src.dtype) bits = a.bits[1];
        else if (tensor__cuda_is_float(dst.dtype) || tensor__cuda_is_float(src.dtype)) bits = tensor__cuda_bits_of(a.fv[1], dst.dtype);
        else {
            char buf[8] = {0};
            tensor__cuda_store_i64(buf, dst.dtype, a.iv[1]);
            memcpy(&bits, buf, sizeof bits);
        }
        return tensor__cuda_fill_run(c, dst, bits);
    }
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    const tensor__dev_operand *ops[2] = {&dst, &src};
    tensor__cuda_offsets o;
    tensor__cuda_offsets_init(&o, 2, ops, false);
    int size = tensor__cuda_size(dst.dtype);
    if (dst.dtype == src.dtype && tensor__cuda_dense(o, 0, size) && tensor__cuda_dense(o, 1, size)) {
        if (dst.data == src.data) return 0;
        cudaError_t e = cudaMemcpyAsync(dst.data, src.data, (size_t)n * (size_t)size, cudaMemcpyDeviceToDevice, s);
        return e == cudaSuccess ? 0 : tensor__cuda_fail_cuda(c, "copy", e);
    }
    TENSOR__CUDA_LAUNCH_BEGIN();
    tensor__cuda_copy_kernel<<<tensor__cuda_blocks(n), TENSOR__CUDA_THREADS, 0, s>>>(o, (char *)dst.data, (const char *)src.data, dst.dtype, src.dtype, n);
    return tensor__cuda_launch_check(c);
}

/* clone, contiguous, to_dtype: out = in[0] converted; copy_: out = in[0] = dst, in[1] = src. */
static int tensor__cuda_copy_op(tensor__dev_call *c) {
    if (c->n_in < 1) return tensor__cuda_fail(c, "%s: expected an input", tensor__cuda_op_name(c->op));
    return tensor__cuda_copy_run(c, c->out, c->in[0]);
}
static int tensor__cuda_copy_(tensor__dev_call *c) {
    if (c->n_in != 2) return tensor__cuda_fail(c, "copy_: expected 2 inputs, got %d", c->n_in);
    return tensor__cuda_copy_run(c, c->out, c->in[1]);
}
/* fill_: every element of out = p[0] in out's dtype; zero_: = 0. */
static int tensor__cuda_fill_(tensor__dev_call *c) { return tensor__cuda_fill_run(c, c->out, tensor__cuda_bits_of(c->p[0], c->out.dtype)); }
static int tensor__cuda_zero_(tensor__dev_call *c) { return tensor__cuda_fill_run(c, c->out, 0); }

// >>cuda-optim -----------------------------------------------------------------------------------
/* The optimizers' step (tensor_optim_step of CUDA parameters): every element runs the shared
   update formula (tensor__optim_update, >>formulas), in double, rounding the state to its dtype as
   the CPU's reference loop does, on the calling thread's stream. Parameters whose operands are
   all contiguous (the usual case: the optimizer makes the states, autograd the gradients) go up to
   TENSOR__CUDA_OPTIM_LIST at a time in one launch, whose argument lists them: a model's step is a
   few launches, not one per parameter. Others get a launch each, through the offset calculator. */
#define TENSOR__CUDA_OPTIM_LIST 24
struct tensor__cuda_optim_list {
    int n;
    int64_t end[TENSOR__CUDA_OPTIM_LIST]; /* element k of the list ends at end[k] of the whole */
    char *p[TENSOR__CUDA_OPTIM_LIST], *s1[TENSOR__CUDA_OPTIM_LIST], *s2[TENSOR__CUDA_OPTIM_LIST];
    const char *g[TENSOR__CUDA_OPTIM_LIST];
    unsigned char pd[TENSOR__CUDA_OPTIM_LIST], gd[TENSOR__CUDA_OPTIM_LIST], sd[TENSOR__CUDA_OPTIM_LIST];
    tensor__optim_rule rule[TENSOR__CUDA_OPTIM_LIST];
};
static_assert(sizeof(tensor__cuda_optim_list) <= 4000, "a kernel's arguments stay within 4 KB");

TENSOR__CUDA_HD void tensor__cuda_optim_one(const tensor__optim_rule &r, char *p, const char *g, char *s1, char *s2, tensor_dtype pd, tensor_dtype gd, tensor_dtype sd) {
    double v1 = s1 ? tensor__cuda_load_f64(s1, sd) : 0, v2 = s2 ? tensor__cuda_load_f64(s2, sd) : 0;
    double np = tensor__optim_update(&r, tensor__cuda_load_f64(p, pd), tensor__cuda_load_f64(g, gd), &v1, &v2, sd == TENSOR_F64);
    if (s1) tensor__cuda_store_f64(s1, sd, v1);
    if (s2) tensor__cuda_store_f64(s2, sd, v2);
    tensor__cuda_store_f64(p, pd, np);
}
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_optim_kernel(tensor__cuda_offsets o, tensor__optim_rule r, char *p, const char *g, char *s1, char *s2,
                                                                                   tensor_dtype pd, tensor_dtype gd, tensor_dtype sd, int64_t n) {
    TENSOR__CUDA_LOOP(i, n) {
        int64_t off[4];
        tensor__cuda_offsets_get<4>(o, i, off);
        tensor__cuda_optim_one(r, p + off[0], g + off[1], s1 ? s1 + off[2] : nullptr, s2 ? s2 + off[3] : nullptr, pd, gd, sd);
    }
}
/* Element i of the list's concatenation: its parameter k (a scan of at most
   TENSOR__CUDA_OPTIM_LIST ends; neighbouring threads share k) and its index there. */
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_optim_list_kernel(tensor__cuda_optim_list l) {
    TENSOR__CUDA_LOOP(i, l.end[l.n - 1]) {
        int k = 0;
        while (i >= l.end[k]) k++;
        int64_t j = i - (k ? l.end[k - 1] : 0);
        tensor_dtype pd = (tensor_dtype)l.pd[k], gd = (tensor_dtype)l.gd[k], sd = (tensor_dtype)l.sd[k];
        tensor__cuda_optim_one(l.rule[k], l.p[k] + j * tensor__cuda_size(pd), l.g[k] + j * tensor__cuda_size(gd), l.s1[k] ? l.s1[k] + j * tensor__cuda_size(sd) : nullptr,
                               l.s2[k] ? l.s2[k] + j * tensor__cuda_size(sd) : nullptr, pd, gd, sd);
    }
}

static bool tensor__cuda_row_major(const tensor__dev_operand &t) {
    int64_t expect = 1;
    for (int d = t.ndim - 1; d >= 0; d--) {
        if (t.shape[d] != 1 && t.strides[d] != expect) return false;
        expect *= t.shape[d];
    }
    return true;
}
static int tensor__cuda_optim_launched(tensor__dev_optim *s) {
    cudaError_t e = cudaGetLastError();
    if (e == cudaSuccess) return 0;
    snprintf(s->error, sizeof s->error, "CUDA error: optimizer step: kernel launch: %s", cudaGetErrorString(e));
    return 1;
}
static int tensor__cuda_optim_flush(tensor__dev_optim *s, tensor__cuda_optim_list *l, cudaStream_t stream) {
    if (l->n == 0) return 0;
    TENSOR__CUDA_LAUNCH_BEGIN();
    tensor__cuda_optim_list_kernel<<<tensor__cuda_blocks(l->end[l->n - 1]), TENSOR__CUDA_THREADS, 0, stream>>>(*l);
    l->n = 0;
    return tensor__cuda_optim_launched(s);
}

static int tensor__cuda_optim_step(tensor__dev_optim *s) {
    cudaStream_t stream;
    if (!tensor__cuda_stream(&stream, s->error, sizeof s->error)) return 1;
    tensor__cuda_optim_list l;
    l.n = 0;
    for (int k = 0; k < s->n; k++) {
        const tensor__dev_operand *p = &s->params[k], *g = &s->grads[k], *m = &s->state1[k], *v = &s->state2[k];
        if (!p->data || !g->data || (unsigned)p->dtype >= TENSOR_DTYPE_COUNT || (unsigned)g->dtype >= TENSOR_DTYPE_COUNT) {
            snprintf(s->error, sizeof s->error, "optimizer step: parameter %d has no device data", k);
            return 1;
        }
        int64_t n = tensor__cuda_numel(*p);
        if (n == 0) continue;
        tensor_dtype sd = m->data ? m->dtype : p->dtype == TENSOR_F64 ? TENSOR_F64 : TENSOR_F32;
        if (tensor__cuda_numel(*g) == n && tensor__cuda_row_major(*p) && tensor__cuda_row_major(*g) && (!m->data || (tensor__cuda_numel(*m) == n && tensor__cuda_row_major(*m))) &&
            (!v->data || (tensor__cuda_numel(*v) == n && tensor__cuda_row_major(*v)))) {
            l.end[l.n] = (l.n ? l.end[l.n - 1] : 0) + n;
            l.p[l.n] = (char *)p->data;
            l.g[l.n] = (const char *)g->data;
            l.s1[l.n] = (char *)m->data;
            l.s2[l.n] = (char *)v->data;
            l.pd[l.n] = (unsigned char)p->dtype;
            l.gd[l.n] = (unsigned char)g->dtype;
            l.sd[l.n] = (unsigned char)sd;
            l.rule[l.n] = s->rules[k];
            if (++l.n == TENSOR__CUDA_OPTIM_LIST && tensor__cuda_optim_flush(s, &l, stream)) return 1;
            continue;
        }
        /* an absent state stands in as the parameter's own operand (never read: its pointer is NULL) */
        const tensor__dev_operand *ops[4] = {p, g, m->data ? m : p, v->data ? v : p};
        tensor__cuda_offsets o;
        tensor__cuda_offsets_init(&o, 4, ops, false);
        TENSOR__CUDA_LAUNCH_BEGIN();
        tensor__cuda_optim_kernel<<<tensor__cuda_blocks(n), TENSOR__CUDA_THREADS, 0, stream>>>(o, s->rules[k], (char *)p->data, (const char *)g->data, (char *)m->data,
                                                                                                (char *)v->data, p->dtype, g->dtype, sd, n);
        if (tensor__cuda_optim_launched(s)) return 1;
    }
    return tensor__cuda_optim_flush(s, &l, stream);
}

/* tensor_clip_grad_norm's sum of squares over every gradient, in double: contiguous tensors go
   TENSOR__CUDA_OPTIM_LIST at a time in one launch, others one launch each; every launch writes a
   partial sum per block (at most TENSOR__CUDA_SQ_BLOCKS) and one block adds the partials in order,
   so the total does not depend on timing. One value comes back. */
#define TENSOR__CUDA_SQ_BLOCKS 256
struct tensor__cuda_sq_list {
    int n;
    int64_t end[TENSOR__CUDA_OPTIM_LIST];
    const char *x[TENSOR__CUDA_OPTIM_LIST];
    unsigned char dt[TENSOR__CUDA_OPTIM_LIST];
};
/* The block's total of v, in thread 0. */
TENSOR__CUDA_D double tensor__cuda_block_sum(double v) {
    __shared__ double warp_sums[TENSOR__CUDA_THREADS / 32];
    for (int d = 16; d > 0; d >>= 1) v += __shfl_down_sync(0xffffffffu, v, d);
    if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x >> 5] = v;
    __syncthreads();
    double t = 0;
    if (threadIdx.x == 0)
        for (int k = 0; k < (int)(blockDim.x >> 5); k++) t += warp_sums[k];
    return t;
}
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_sq_list_kernel(tensor__cuda_sq_list l, double *partial) {
    double acc = 0;
    TENSOR__CUDA_LOOP(i, l.end[l.n - 1]) {
        int k = 0;
        while (i >= l.end[k]) k++;
        tensor_dtype dt = (tensor_dtype)l.dt[k];
        double v = tensor__cuda_load_f64(l.x[k] + (i - (k ? l.end[k - 1] : 0)) * tensor__cuda_size(dt), dt);
        acc += v * v;
    }
    double t = tensor__cuda_block_sum(acc);
    if (threadIdx.x == 0) partial[blockIdx.x] = t;
}
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_sq_strided_kernel(tensor__cuda_offsets o, const char *x, tensor_dtype dt, int64_t n, double *partial) {
    double acc = 0;
    TENSOR__CUDA_LOOP(i, n) {
        int64_t off[1];
        tensor__cuda_offsets_get<1>(o, i, off);
        double v = tensor__cuda_load_f64(x + off[0], dt);
        acc += v * v;
    }
    double t = tensor__cuda_block_sum(acc);
    if (threadIdx.x == 0) partial[blockIdx.x] = t;
}
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_sq_final_kernel(const double *partial, int64_t n, double *total) {
    double acc = 0;
    for (int64_t i = threadIdx.x; i < n; i += blockDim.x) acc += partial[i];
    double t = tensor__cuda_block_sum(acc);
    if (threadIdx.x == 0) *total = t;
}
static unsigned tensor__cuda_sq_grid(int64_t n) {
    unsigned b = tensor__cuda_blocks(n);
    return b < TENSOR__CUDA_SQ_BLOCKS ? b : TENSOR__CUDA_SQ_BLOCKS;
}
static int tensor__cuda_sum_squares(int n, const tensor__dev_operand *ts, double *total, char *error, size_t len) {
    *total = 0;
    cudaStream_t stream;
    if (!tensor__cuda_stream(&stream, error, len)) return 1;
    int launches = 0, listed = 0;
    for (int k = 0; k < n; k++) {
        if (!ts[k].data || (unsigned)ts[k].dtype >= TENSOR_DTYPE_COUNT) { tensor__cuda_msg(error, len, "sum of squares: tensor %d has no device data", k); return 1; }
        if (tensor__cuda_numel(ts[k]) == 0) continue;
        if (tensor__cuda_row_major(ts[k])) launches += listed++ % TENSOR__CUDA_OPTIM_LIST == 0;
        else launches++;
    }
    if (!launches) return 0;
    /* partials of every launch, then the total */
    double *partial = (double *)tensor__cuda_alloc(((size_t)launches * TENSOR__CUDA_SQ_BLOCKS + 1) * sizeof(double), error, len);
    if (!partial) return 1;
    int64_t used = 0;
    tensor__cuda_sq_list l;
    l.n = 0;
    cudaError_t e = cudaSuccess;
    TENSOR__CUDA_LAUNCH_BEGIN();
    for (int k = 0; k <= n && e == cudaSuccess; k++) {
        bool last = k == n;
        if (!last && tensor__cuda_numel(ts[k]) == 0) continue;
        if (!last && tensor__cuda_row_major(ts[k])) {
            l.end[l.n] = (l.n ? l.end[l.n - 1] : 0) + tensor__cuda_numel(ts[k]);
            l.x[l.n] = (const char *)ts[k].data;
            l.dt[l.n] = (unsigned char)ts[k].dtype;
            l.n++;
        } else if (!last) {
            const tensor__dev_operand *ops[1] = {&ts[k]};
            tensor__cuda_offsets o;
            int64_t m = tensor__cuda_offsets_init(&o, 1, ops, false);
            unsigned g = tensor__cuda_sq_grid(m);
            tensor__cuda_sq_strided_kernel<<<g, TENSOR__CUDA_THREADS, 0, stream>>>(o, (const char *)ts[k].data, ts[k].dtype, m, partial + used);
            used += g;
            e = cudaGetLastError();
        }
        if (l.n && (l.n == TENSOR__CUDA_OPTIM_LIST || last)) {
            unsigned g = tensor__cuda_sq_grid(l.end[l.n - 1]);
            tensor__cuda_sq_list_kernel<<<g, TENSOR__CUDA_THREADS, 0, stream>>>(l, partial + used);
            used += g;
            l.n = 0;
            e = cudaGetLastError();
        }
    }
    double *dev_total = partial + (size_t)launches * TENSOR__CUDA_SQ_BLOCKS;
    if (e == cudaSuccess) {
        tensor__cuda_sq_final_kernel<<<1, TENSOR__CUDA_THREADS, 0, stream>>>(partial, used, dev_total);
        e = cudaGetLastError();
    }
    if (e == cudaSuccess) e = cudaMemcpyAsync(total, dev_total, sizeof *total, cudaMemcpyDeviceToHost, stream);
    if (e == cudaSuccess) e = cudaStreamSynchronize(stream);
    tensor__cuda_free(partial); /* after the wait (or after a failure: stream-ordered, as any free) */
    if (e != cudaSuccess) {
        tensor__cuda_msg_err(error, len, "sum of squares", e);
        return 1;
    }
    return 0;
}

// >>cuda-reduce ----------------------------------------------------------------------------------
/* The reductions of >>reduce (sum, mean, prod, max, min, argmax, argmin, var, std, logsumexp,
   norm, all, any and cumsum), with the call record their CPU kernels read: in[0] the input;
   dims[0..n_dims) the reduced dims (none for a 0-dim input); ip[1] the correction of var and std;
   p[0] the order of norm. Keepdim is read from the output's rank, whose strides say where each
   result goes (any layout).

   The host splits the input's dims into kept dims (one output element each) and reduced dims
   (walked inside one output element, row-major), each list without size-1 dims and with adjacent
   dims merged where they step evenly, as the CPU's tensor__red_init does. Output element e is
   computed by one group of threads, chosen from the shapes alone (never from the grid, which only
   decides which block takes which outputs):
   - a thread (mode 0): nothing to reduce, or the innermost kept dim is contiguous in the input and
     the reduced ones are not, with enough outputs (adjacent threads read adjacent elements);
   - a warp (mode 1): fewer than TENSOR__CUDA_RED_WARP_MAX reduced elements;
   - a block of TENSOR__CUDA_THREADS threads (mode 2): otherwise.
   Lane l of a group of G accumulates reduced elements l, l + G, l + 2G, ... in that order; the
   lanes' states are then combined by a shuffle tree (lane l with lane l + d for d = 16, 8, 4, 2, 1)
   and, in a block, the warps' totals by thread 0 in warp order. A result depends on the shapes
   and strides only; against the CPU it differs by the reassociation of float sums.
   Float inputs accumulate in double (f32 values are exact in double) and the result is rounded
   once to the output dtype; bool and integer sums and products accumulate in int64 with wrapping
   arithmetic (tensor__iadd, tensor__imul), which is exact in any order. */
#define TENSOR__CUDA_RED_WARP_MAX 1024  /* reduced elements below which a warp does an output */
#define TENSOR__CUDA_RED_COLS_MIN 8192  /* outputs from which a thread does one (mode 0) */

struct tensor__cuda_red {
    int nk, nr;
    int64_t kshape[TENSOR_MAX_DIMS], kin[TENSOR_MAX_DIMS], kout[TENSOR_MAX_DIMS]; /* kept: size; byte strides in the input, output */
    int64_t rshape[TENSOR_MAX_DIMS], rin[TENSOR_MAX_DIMS];                        /* reduced: size; byte stride in the input */
    int64_t knumel, rnumel;
    const char *in;
    char *out;
    tensor_dtype in_dt, out_dt;
};
/* The op's parameters: p the order of norm, corr the correction of var/std, kind which variant
   (mean or sum, max or min, std or var, all or any, the kind of norm), index whether argmax/argmin. */
struct tensor__cuda_red_prm {
    double p;
    int64_t corr;
    int kind;
    bool index;
};

/* Splits in's dims by the bit mask `reduced`; ostride[d] is the output byte stride of kept dim d.
   The same lists as the CPU's tensor__red_init. */
static void tensor__cuda_red_build(tensor__cuda_red *r, const tensor__dev_operand &in, unsigned reduced, const int64_t *ostride, const tensor__dev_operand &out) {
    memset(r, 0, sizeof *r);
    int64_t esz = tensor__cuda_size(in.dtype);
    r->knumel = r->rnumel = 1;
    for (int d = 0; d < in.ndim; d++) {
        int64_t n = in.shape[d], s = in.strides[d] * esz;
        if (reduced >> d & 1) {
            r->rnumel *= n;
            if (n == 1) continue;
            if (r->nr > 0 && r->rin[r->nr - 1] == s * n) { r->rshape[r->nr - 1] *= n; r->rin[r->nr - 1] = s; continue; }
            r->rshape[r->nr] = n;
            r->rin[r->nr] = s;
            r->nr++;
        } else {
            r->knumel *= n;
            if (n == 1) continue;
            if (r->nk > 0 && r->kin[r->nk - 1] == s * n && r->kout[r->nk - 1] == ostride[d] * n) {
                r->kshape[r->nk - 1] *= n;
                r->kin[r->nk - 1] = s;
                r->kout[r->nk - 1] = ostride[d];
                continue;
            }
            r->kshape[r->nk] = n;
            r->kin[r->nk] = s;
            r->kout[r->nk] = ostride[d];
            r->nk++;
        }
    }
    r->in = (const char *)in.data;
    r->out = (char *)out.data;
    r->in_dt = in.dtype;
    r->out_dt = out.dtype;
}

/* The reduced-dims mask of the call, checked against the input; false + message. */
static bool tensor__cuda_red_mask(tensor__dev_call *c, unsigned *mask) {
    const tensor__dev_operand &in = c->in[0];
    *mask = 0;
    if (c->n_dims < 0 || c->n_dims > in.ndim) {
        tensor__cuda_fail(c, "%s: %d reduced dims for an input of %d dims", tensor__cuda_op_name(c->op), c->n_dims, in.ndim);
        return false;
    }
    for (int i = 0; i < c->n_dims; i++) {
        int d = c->dims[i];
        if (d < 0 || d >= in.ndim || (*mask >> d & 1)) {
            tensor__cuda_fail(c, "%s: invalid reduced dim %d for an input of %d dims", tensor__cuda_op_name(c->op), d, in.ndim);
            return false;
        }
        *mask |= 1u << d;
    }
    return true;
}

/* The description of a reduction call. The output has the input's rank (keepdim: size 1 at the
   reduced dims) or the kept dims only; its own strides place the results. */
static bool tensor__cuda_red_from_call(tensor__dev_call *c, tensor__cuda_red *r) {
    const char *name = tensor__cuda_op_name(c->op);
    if (c->n_in < 1) { tensor__cuda_fail(c, "%s: expected an input", name); return false; }
    const tensor__dev_operand &in = c->in[0], &out = c->out;
    if (!tensor__cuda_operand_ok(c, in, "input") || !tensor__cuda_operand_ok(c, out, "output")) return false;
    if (in.by_value || out.by_value) { tensor__cuda_fail(c, "%s: the operands cannot be values", name); return false; }
    unsigned mask;
    if (!tensor__cuda_red_mask(c, &mask)) return false;
    int nred = c->n_dims;
    bool keepdim = out.ndim == in.ndim; /* the same mapping as without keepdim when nothing is reduced */
    if (!keepdim && out.ndim != in.ndim - nred) {
        tensor__cuda_fail(c, "%s: an output of %d dims for an input of %d dims reduced over %d", name, out.ndim, in.ndim, nred);
        return false;
    }
    int64_t ostride[TENSOR_MAX_DIMS], osz = tensor__cuda_size(out.dtype);
    int od = 0;
    for (int d = 0; d < in.ndim; d++) {
        bool red = mask >> d & 1;
        ostride[d] = 0;
        if (red && !keepdim) continue;
        int64_t want = red ? 1 : in.shape[d];
        if (out.shape[od] != want) {
            tensor__cuda_fail(c, "%s: output dim %d has size %lld, expected %lld", name, od, (long long)out.shape[od], (long long)want);
            return false;
        }
        if (!red) ostride[d] = out.strides[od] * osz;
        od++;
    }
    tensor__cuda_red_build(r, in, mask, ostride, out);
    return true;
}

/* ---- offsets (host and device: the host tests them), group reductions ---- */
/* The byte offsets of output element e's first input element and of the output element. */
TENSOR__CUDA_HD void tensor__cuda_red_kept(const tensor__cuda_red &r, int64_t e, int64_t *io, int64_t *oo) {
    int64_t a = 0, b = 0;
    for (int d = r.nk - 1; d >= 0; d--) {
        int64_t s = r.kshape[d], q = e / s, idx = e - q * s;
        e = q;
        a += idx * r.kin[d];
        b += idx * r.kout[d];
    }
    *io = a;
    *oo = b;
}
/* The byte offset of reduced element j (row-major over the reduced dims) from the first one. */
TENSOR__CUDA_HD int64_t tensor__cuda_red_off(const tensor__cuda_red &r, int64_t j) {
    if (r.nr == 1) return j * r.rin[0];
    int64_t a = 0;
    for (int d = r.nr - 1; d >= 0; d--) {
        int64_t s = r.rshape[d], q = j / s, idx = j - q * s;
        j = q;
        a += idx * r.rin[d];
    }
    return a;
}

/* Shuffles of a state of any 8-byte-multiple size, word by word. */
template <class S> TENSOR__CUDA_D S tensor__cuda_shfl_down(const S &s, int delta) {
    static_assert(sizeof(S) % 8 == 0, "reduction states are whole 8-byte words");
    unsigned long long w[sizeof(S) / 8];
    memcpy(w, &s, sizeof(S));
#pragma unroll
    for (int k = 0; k < (int)(sizeof(S) / 8); k++) w[k] = __shfl_down_sync(0xffffffffu, w[k], delta);
    S r;
    memcpy(&r, w, sizeof(S));
    return r;
}
template <class S> TENSOR__CUDA_D S tensor__cuda_shfl_lane0(const S &s) {
    unsigned long long w[sizeof(S) / 8];
    memcpy(w, &s, sizeof(S));
#pragma unroll
    for (int k = 0; k < (int)(sizeof(S) / 8); k++) w[k] = __shfl_sync(0xffffffffu, w[k], 0);
    S r;
    memcpy(&r, w, sizeof(S));
    return r;
}

/* Shared scratch of a block: a state per warp and the total. */
#define TENSOR__CUDA_RED_STATE_MAX 32
#define TENSOR__CUDA_RED_WORDS ((TENSOR__CUDA_THREADS / 32 + 1) * TENSOR__CUDA_RED_STATE_MAX / 8)

/* The block part of tensor__cuda_grp_reduce: lane 0 of each warp holds its warp's total; thread 0
   combines them in warp order and every thread gets the result. */
template <class S, class C> TENSOR__CUDA_D S tensor__cuda_block_total(S s, C comb, unsigned long long *buf) {
    S *sm = reinterpret_cast<S *>(buf);
    int w = (int)(threadIdx.x >> 5), nw = (int)(blockDim.x >> 5);
    if ((threadIdx.x & 31) == 0) sm[w] = s;
    __syncthreads();
    if (threadIdx.x == 0) {
        S t = sm[0];
        for (int k = 1; k < nw; k++) t = comb(t, sm[k]);
        sm[nw] = t;
    }
    __syncthreads();
    S t = sm[nw];
    __syncthreads(); /* the scratch may be written again at once */
    return t;
}

/* Combines the states of the group (see the section's comment for the order) and returns the
   total to every lane. Every thread of the group calls it (a block: every thread of the block). */
template <int MODE, class S, class C> TENSOR__CUDA_D S tensor__cuda_grp_reduce(S s, C comb, unsigned long long *buf) {
    static_assert(sizeof(S) <= TENSOR__CUDA_RED_STATE_MAX, "reduction state too big for the scratch");
    if (MODE != 0) {
        for (int d = 16; d > 0; d >>= 1) s = comb(s, tensor__cuda_shfl_down(s, d));
        if (MODE == 1) s = tensor__cuda_shfl_lane0(s);
        else s = tensor__cuda_block_total(s, comb, buf);
    }
    return s;
}

/* The states and how two combine. */
struct tensor__cuda_add_f { __device__ double operator()(double a, double b) const { return a + b; } };
struct tensor__cuda_add_i { __device__ int64_t operator()(int64_t a, int64_t b) const { return tensor__iadd(a, b); } };
struct tensor__cuda_mul_f { __device__ double operator()(double a, double b) const { return a * b; } };
struct tensor__cuda_mul_i { __device__ int64_t operator()(int64_t a, int64_t b) const { return tensor__imul(a, b); } };
struct tensor__cuda_or_i { __device__ int64_t operator()(int64_t a, int64_t b) const { return a | b; } };

/* max / min with the index of its first occurrence; NaN counts as both the maximum and the
   minimum and the first NaN wins (the CPU's tensor__row_ext). found: an element was seen. The
   host can run these too (tested there against the CPU's sequential rule). */
template <class T> struct tensor__cuda_ext {
    T v;
    int64_t idx, found;
};
template <class T> struct tensor__cuda_ext_comb {
    bool is_max;
    __host__ __device__ tensor__cuda_ext<T> operator()(const tensor__cuda_ext<T> &a, const tensor__cuda_ext<T> &b) const {
        if (!a.found) return b;
        if (!b.found) return a;
        bool an = a.v != a.v, bn = b.v != b.v; /* NaN: never for integers */
        if (an || bn) {
            if (an && bn) return a.idx < b.idx ? a : b;
            return an ? a : b;
        }
        if (a.v == b.v) return a.idx < b.idx ? a : b;
        return (is_max ? b.v > a.v : b.v < a.v) ? b : a;
    }
};
/* Element j (value x) after those of lower index that this lane has seen; false once a NaN holds
   (nothing can change the lane's state any more). */
template <class T> TENSOR__CUDA_HD bool tensor__cuda_ext_add(tensor__cuda_ext<T> &s, T x, int64_t j, bool is_max) {
    if (!s.found || x != x || (is_max ? x > s.v : x < s.v)) {
        s.v = x;
        s.idx = j;
        s.found = 1;
    }
    return !(s.v != s.v);
}

/* Stores a float (d) or an integer (i) result in the output's dtype, as tensor__red_store. */
TENSOR__CUDA_D void tensor__cuda_red_store_f(const tensor__cuda_red &r, char *out, double d) { tensor__cuda_store_f64(out, r.out_dt, d); }
TENSOR__CUDA_D void tensor__cuda_red_store_i(const tensor__cuda_red &r, char *out, int64_t i) { tensor__cuda_store_i64(out, r.out_dt, i); }

/* ---- the ops: each computes one output element with its group ---- */
/* sum (kind 0) or mean (kind 1; of no elements 0/0 = NaN). */
struct tensor__cuda_red_sum {
    template <int MODE> __device__ static void elem(const tensor__cuda_red &r, const tensor__cuda_red_prm &p, const char *in, char *out, int lane, int g, unsigned long long *buf) {
        if (!tensor__cuda_is_float(r.in_dt)) {
            int64_t s = 0;
            for (int64_t j = lane; j < r.rnumel; j += g) s = tensor__iadd(s, tensor__cuda_load_i64(in + tensor__cuda_red_off(r, j), r.in_dt));
            s = tensor__cuda_grp_reduce<MODE>(s, tensor__cuda_add_i(), buf);
            if (lane == 0) tensor__cuda_red_store_i(r, out, s);
            return;
        }
        double s = 0;
        for (int64_t j = lane; j < r.rnumel; j += g) s += tensor__cuda_load_f64(in + tensor__cuda_red_off(r, j), r.in_dt);
        s = tensor__cuda_grp_reduce<MODE>(s, tensor__cuda_add_f(), buf);
        if (p.kind) s /= (double)r.rnumel;
        if (lane == 0) tensor__cuda_red_store_f(r, out, s);
    }
};
/* prod: 1 of no elements. */
struct tensor__cuda_red_prod {
    template <int MODE> __device__ static void elem(const tensor__cuda_red &r, const tensor__cuda_red_prm &, const char *in, char *out, int lane, int g, unsigned long long *buf) {
        if (!tensor__cuda_is_float(r.in_dt)) {
            int64_t s = 1;
            for (int64_t j = lane; j < r.rnumel; j += g) s = tensor__imul(s, tensor__cuda_load_i64(in + tensor__cuda_red_off(r, j), r.in_dt));
            s = tensor__cuda_grp_reduce<MODE>(s, tensor__cuda_mul_i(), buf);
            if (lane == 0) tensor__cuda_red_store_i(r, out, s);
            return;
        }
        double s = 1;
        for (int64_t j = lane; j < r.rnumel; j += g) s *= tensor__cuda_load_f64(in + tensor__cuda_red_off(r, j), r.in_dt);
        s = tensor__cuda_grp_reduce<MODE>(s, tensor__cuda_mul_f(), buf);
        if (lane == 0) tensor__cuda_red_store_f(r, out, s);
    }
};
/* max/min (kind 1 / 0) store the value in the input's dtype, argmax/argmin (index) its index in
   i64. No elements (the front-end refuses them): 0, as the CPU's kernel would store. Integers
   compare as int64, floats as double. */
struct tensor__cuda_red_ext {
    template <int MODE, class T> __device__ static void run(const tensor__cuda_red &r, const tensor__cuda_red_prm &p, const char *in, char *out, int lane, int g, unsigned long long *buf) {
        bool is_max = p.kind == 1;
        tensor__cuda_ext<T> s;
        s.v = 0;
        s.idx = 0;
        s.found = 0;
        for (int64_t j = lane; j < r.rnumel; j += g) {
            const char *q = in + tensor__cuda_red_off(r, j);
            T x = tensor__cuda_is_float(r.in_dt) ? (T)tensor__cuda_load_f64(q, r.in_dt) : (T)tensor__cuda_load_i64(q, r.in_dt);
            if (!tensor__cuda_ext_add(s, x, j, is_max)) break;
        }
        tensor__cuda_ext_comb<T> comb;
        comb.is_max = is_max;
        s = tensor__cuda_grp_reduce<MODE>(s, comb, buf);
        if (lane != 0) return;
        if (p.index) tensor__cuda_store_i64(out, TENSOR_I64, s.idx);
        else if (tensor__cuda_is_float(r.in_dt)) tensor__cuda_red_store_f(r, out, (double)s.v);
        else tensor__cuda_red_store_i(r, out, (int64_t)s.v);
    }
    template <int MODE> __device__ static void elem(const tensor__cuda_red &r, const tensor__cuda_red_prm &p, const char *in, char *out, int lane, int g, unsigned long long *buf) {
        if (tensor__cuda_is_float(r.in_dt)) run<MODE, double>(r, p, in, out, lane, g, buf);
        else run<MODE, int64_t>(r, p, in, out, lane, g, buf);
    }
};
/* var / std (kind 1), two passes in double as the CPU's: the mean m = sum / N, then the sum of
   (x - m)^2, divided by N - correction, or by 0 where that is <= 0 (NaN or inf). */
struct tensor__cuda_red_var {
    template <int MODE> __device__ static void elem(const tensor__cuda_red &r, const tensor__cuda_red_prm &p, const char *in, char *out, int lane, int g, unsigned long long *buf) {
        double s = 0;
        for (int64_t j = lane; j < r.rnumel; j += g) s += tensor__cuda_load_f64(in + tensor__cuda_red_off(r, j), r.in_dt);
        s = tensor__cuda_grp_reduce<MODE>(s, tensor__cuda_add_f(), buf);
        double m = s / (double)r.rnumel, q = 0;
        for (int64_t j = lane; j < r.rnumel; j += g) {
            double x = tensor__cuda_load_f64(in + tensor__cuda_red_off(r, j), r.in_dt);
            q += (x - m) * (x - m);
        }
        q = tensor__cuda_grp_reduce<MODE>(q, tensor__cuda_add_f(), buf);
        double dof = (double)r.rnumel - (double)p.corr;
        q /= dof > 0 ? dof : 0;
        if (p.kind) q = sqrt(q);
        if (lane == 0) tensor__cuda_red_store_f(r, out, q);
    }
};
/* logsumexp: m the max (NaN wins), replaced by 0 when infinite (all -inf gives -inf, a +inf
   gives +inf), then log(sum(exp(x - m))) + m; no elements: -inf. */
struct tensor__cuda_red_lse {
    template <int MODE> __device__ static void elem(const tensor__cuda_red &r, const tensor__cuda_red_prm &, const char *in, char *out, int lane, int g, unsigned long long *buf) {
        tensor__cuda_ext<double> e;
        e.v = 0;
        e.idx = 0;
        e.found = 0;
        for (int64_t j = lane; j < r.rnumel; j += g)
            if (!tensor__cuda_ext_add(e, tensor__cuda_load_f64(in + tensor__cuda_red_off(r, j), r.in_dt), j, true)) break;
        tensor__cuda_ext_comb<double> comb;
        comb.is_max = true;
        e = tensor__cuda_grp_reduce<MODE>(e, comb, buf);
        double m = e.found ? e.v : -INFINITY;
        if (isinf(m)) m = 0;
        double s = 0;
        for (int64_t j = lane; j < r.rnumel; j += g) s += exp(tensor__cuda_load_f64(in + tensor__cuda_red_off(r, j), r.in_dt) - m);
        s = tensor__cuda_grp_reduce<MODE>(s, tensor__cuda_add_f(), buf);
        if (lane == 0) tensor__cuda_red_store_f(r, out, log(s) + m);
    }
};
/* The kinds of p-norm, as the CPU's. */
enum { TENSOR__CUDA_NORM_INF, TENSOR__CUDA_NORM_NEG_INF, TENSOR__CUDA_NORM_ZERO, TENSOR__CUDA_NORM_ONE, TENSOR__CUDA_NORM_TWO, TENSOR__CUDA_NORM_P };
/* norm: inf max |x|, -inf min |x| (NaN wins either way; no elements: 0), 0 the count of non-zeros
   (NaN counts), 1 sum |x|, 2 sqrt(sum x^2), else pow(sum pow(|x|, p), 1/p). */
struct tensor__cuda_red_norm {
    template <int MODE> __device__ static void elem(const tensor__cuda_red &r, const tensor__cuda_red_prm &p, const char *in, char *out, int lane, int g, unsigned long long *buf) {
        int kind = p.kind;
        if (kind == TENSOR__CUDA_NORM_INF || kind == TENSOR__CUDA_NORM_NEG_INF) {
            bool is_max = kind == TENSOR__CUDA_NORM_INF;
            tensor__cuda_ext<double> e;
            e.v = 0;
            e.idx = 0;
            e.found = 0;
            for (int64_t j = lane; j < r.rnumel; j += g)
                if (!tensor__cuda_ext_add(e, fabs(tensor__cuda_load_f64(in + tensor__cuda_red_off(r, j), r.in_dt)), j, is_max)) break;
            tensor__cuda_ext_comb<double> comb;
            comb.is_max = is_max;
            e = tensor__cuda_grp_reduce<MODE>(e, comb, buf);
            if (lane == 0) tensor__cuda_red_store_f(r, out, e.v);
            return;
        }
        double s = 0, q = p.p;
        for (int64_t j = lane; j < r.rnumel; j += g) {
            double x = tensor__cuda_load_f64(in + tensor__cuda_red_off(r, j), r.in_dt);
            switch (kind) {
            case TENSOR__CUDA_NORM_ZERO: s += x != 0; break;
            case TENSOR__CUDA_NORM_ONE: s += fabs(x); break;
            case TENSOR__CUDA_NORM_TWO: s += x * x; break;
            default: s += pow(fabs(x), q); break;
            }
        }
        s = tensor__cuda_grp_reduce<MODE>(s, tensor__cuda_add_f(), buf);
        if (kind == TENSOR__CUDA_NORM_TWO) s = sqrt(s);
        else if (kind == TENSOR__CUDA_NORM_P) s = pow(s, 1.0 / q);
        if (lane == 0) tensor__cuda_red_store_f(r, out, s);
    }
};
/* all (kind 1): no element is zero; any (kind 0): some element is non-zero. NaN is non-zero;
   every dtype loads exactly enough as a double to tell zero from non-zero. */
struct tensor__cuda_red_allany {
    template <int MODE> __device__ static void elem(const tensor__cuda_red &r, const tensor__cuda_red_prm &p, const char *in, char *out, int lane, int g, unsigned long long *buf) {
        bool want_zero = p.kind == 1;
        int64_t hit = 0;
        for (int64_t j = lane; j < r.rnumel && !hit; j += g)
            hit = (tensor__cuda_load_f64(in + tensor__cuda_red_off(r, j), r.in_dt) == 0) == want_zero;
        hit = tensor__cuda_grp_reduce<MODE>(hit, tensor__cuda_or_i(), buf);
        if (lane == 0) tensor__cuda_red_store_i(r, out, want_zero ? !hit : hit);
    }
};

/* Output e is done by thread e (mode 0), by warp e (mode 1) or by a block (mode 2), each
   grid-striding over the outputs (the loop is uniform over the group, as its reductions need). */
template <class Op, int MODE>
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_red_kernel(tensor__cuda_red r, tensor__cuda_red_prm p) {
    __shared__ unsigned long long buf[TENSOR__CUDA_RED_WORDS];
    int64_t first, step;
    int lane, g;
    if (MODE == 0) {
        first = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
        step = (int64_t)gridDim.x * blockDim.x;
        lane = 0;
        g = 1;
    } else if (MODE == 1) {
        first = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
        step = ((int64_t)gridDim.x * blockDim.x) >> 5;
        lane = (int)(threadIdx.x & 31);
        g = 32;
    } else {
        first = blockIdx.x;
        step = gridDim.x;
        lane = (int)threadIdx.x;
        g = (int)blockDim.x;
    }
    for (int64_t e = first; e < r.knumel; e += step) {
        int64_t io, oo;
        tensor__cuda_red_kept(r, e, &io, &oo);
        Op::template elem<MODE>(r, p, r.in + io, r.out + oo, lane, g, buf);
    }
}

/* The group of an output element (see the section's comment): from the shapes alone. */
static int tensor__cuda_red_mode(const tensor__cuda_red &r) {
    int64_t esz = tensor__cuda_size(r.in_dt);
    if (r.rnumel <= 1) return 0;
    bool cols = r.nk >= 1 && r.kin[r.nk - 1] == esz && (r.nr == 0 || r.rin[r.nr - 1] != esz);
    if (cols && r.knumel >= TENSOR__CUDA_RED_COLS_MIN) return 0;
    return r.rnumel < TENSOR__CUDA_RED_WARP_MAX ? 1 : 2;
}

template <class Op> static int tensor__cuda_red_launch(tensor__dev_call *c, const tensor__cuda_red &r, const tensor__cuda_red_prm &p) {
    if (r.knumel == 0) return 0;
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    int mode = tensor__cuda_red_mode(r);
    TENSOR__CUDA_LAUNCH_BEGIN();
    if (mode == 0) {
        tensor__cuda_red_kernel<Op, 0><<<tensor__cuda_blocks(r.knumel), TENSOR__CUDA_THREADS, 0, s>>>(r, p);
    } else if (mode == 1) {
        int64_t warps = TENSOR__CUDA_THREADS / 32, b = (r.knumel + warps - 1) / warps;
        unsigned blocks = (unsigned)(b > TENSOR__CUDA_MAX_BLOCKS ? TENSOR__CUDA_MAX_BLOCKS : b);
        tensor__cuda_red_kernel<Op, 1><<<blocks, TENSOR__CUDA_THREADS, 0, s>>>(r, p);
    } else {
        unsigned blocks = (unsigned)(r.knumel > TENSOR__CUDA_MAX_BLOCKS ? TENSOR__CUDA_MAX_BLOCKS : r.knumel);
        tensor__cuda_red_kernel<Op, 2><<<blocks, TENSOR__CUDA_THREADS, 0, s>>>(r, p);
    }
    return tensor__cuda_launch_check(c);
}

/* sum and mean of a few outputs over many elements: one block an output would leave the other
   SMs idle, so the reduced range is cut into slices of TENSOR__CUDA_RED_SLICE elements, a block
   sums each (partial sums in double, or wrapping int64), and a second kernel adds an output's
   partials in slice order. The cut depends on the shapes only, so the result does too. */
#define TENSOR__CUDA_RED_SLICE 65536
#define TENSOR__CUDA_RED_SPLIT_OUTPUTS 64   /* outputs up to which the split is taken */
template <class T, class Add>
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_sum_slices(tensor__cuda_red r, int64_t slices, T *partial) {
    __shared__ unsigned long long buf[TENSOR__CUDA_RED_WORDS];
    for (int64_t b = blockIdx.x; b < r.knumel * slices; b += gridDim.x) {
        int64_t e = b / slices, lo = (b - e * slices) * TENSOR__CUDA_RED_SLICE, hi = lo + TENSOR__CUDA_RED_SLICE < r.rnumel ? lo + TENSOR__CUDA_RED_SLICE : r.rnumel;
        int64_t io, oo;
        tensor__cuda_red_kept(r, e, &io, &oo);
        const char *in = r.in + io;
        Add add;
        T acc = 0;
        for (int64_t j = lo + threadIdx.x; j < hi; j += blockDim.x) {
            const char *q = in + tensor__cuda_red_off(r, j);
            acc = add(acc, tensor__cuda_is_float(r.in_dt) ? (T)tensor__cuda_load_f64(q, r.in_dt) : (T)tensor__cuda_load_i64(q, r.in_dt));
        }
        acc = tensor__cuda_grp_reduce<2>(acc, add, buf);
        if (threadIdx.x == 0) partial[b] = acc;
    }
}
template <class T, class Add>
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_sum_partials(tensor__cuda_red r, tensor__cuda_red_prm p, int64_t slices, const T *partial) {
    __shared__ unsigned long long buf[TENSOR__CUDA_RED_WORDS];
    for (int64_t e = blockIdx.x; e < r.knumel; e += gridDim.x) {
        Add add;
        T acc = 0;
        for (int64_t k = threadIdx.x; k < slices; k += blockDim.x) acc = add(acc, partial[e * slices + k]);
        acc = tensor__cuda_grp_reduce<2>(acc, add, buf);
        if (threadIdx.x != 0) continue;
        int64_t io, oo;
        tensor__cuda_red_kept(r, e, &io, &oo);
        if (tensor__cuda_is_float(r.in_dt)) tensor__cuda_red_store_f(r, r.out + oo, p.kind ? (double)acc / (double)r.rnumel : (double)acc);
        else tensor__cuda_red_store_i(r, r.out + oo, (int64_t)acc);
    }
}
/* 0 done, 1 error, -1 not taken (many outputs or few elements: tensor__cuda_red_launch). */
static int tensor__cuda_sum_split(tensor__dev_call *c, const tensor__cuda_red &r, const tensor__cuda_red_prm &p) {
    if (r.knumel == 0 || r.knumel > TENSOR__CUDA_RED_SPLIT_OUTPUTS || r.rnumel < 2 * TENSOR__CUDA_RED_SLICE || tensor__cuda_red_mode(r) != 2) return -1;
    int64_t slices = (r.rnumel + TENSOR__CUDA_RED_SLICE - 1) / TENSOR__CUDA_RED_SLICE;
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    void *partial = tensor__cuda_alloc((size_t)(r.knumel * slices) * 8, c->error, sizeof c->error);
    if (!partial) return 1;
    int64_t blocks = r.knumel * slices;
    unsigned grid = (unsigned)(blocks > TENSOR__CUDA_MAX_BLOCKS ? TENSOR__CUDA_MAX_BLOCKS : blocks), out_grid = (unsigned)r.knumel;
    TENSOR__CUDA_LAUNCH_BEGIN();
    if (tensor__cuda_is_float(r.in_dt)) {
        tensor__cuda_sum_slices<double, tensor__cuda_add_f><<<grid, TENSOR__CUDA_THREADS, 0, s>>>(r, slices, (double *)partial);
        tensor__cuda_sum_partials<double, tensor__cuda_add_f><<<out_grid, TENSOR__CUDA_THREADS, 0, s>>>(r, p, slices, (const double *)partial);
    } else {
        tensor__cuda_sum_slices<int64_t, tensor__cuda_add_i><<<grid, TENSOR__CUDA_THREADS, 0, s>>>(r, slices, (int64_t *)partial);
        tensor__cuda_sum_partials<int64_t, tensor__cuda_add_i><<<out_grid, TENSOR__CUDA_THREADS, 0, s>>>(r, p, slices, (const int64_t *)partial);
    }
    int rc = tensor__cuda_launch_check(c);
    tensor__cuda_free(partial); /* stream-ordered: after both kernels */
    return rc;
}

/* ---- the kernels of the table ---- */
static bool tensor__cuda_red_float_only(tensor__dev_call *c, const tensor__cuda_red &r) {
    if (tensor__cuda_is_float(r.in_dt)) return true;
    tensor__cuda_fail(c, "%s: input dtype must be floating point", tensor__cuda_op_name(c->op));
    return false;
}
/* sum, sum_all, sum_dims, mean, mean_all, mean_dims */
static int tensor__cuda_sum(tensor__dev_call *c) {
    tensor__cuda_red r;
    if (!tensor__cuda_red_from_call(c, &r)) return 1;
    tensor__cuda_red_prm p;
    memset(&p, 0, sizeof p);
    p.kind = c->op == TENSOR_OP_mean || c->op == TENSOR_OP_mean_all || c->op == TENSOR_OP_mean_dims;
    if (p.kind && !tensor__cuda_red_float_only(c, r)) return 1;
    int split = tensor__cuda_sum_split(c, r, p);
    if (split >= 0) return split;
    return tensor__cuda_red_launch<tensor__cuda_red_sum>(c, r, p);
}
static int tensor__cuda_prod(tensor__dev_call *c) {
    tensor__cuda_red r;
    if (!tensor__cuda_red_from_call(c, &r)) return 1;
    tensor__cuda_red_prm p;
    memset(&p, 0, sizeof p);
    return tensor__cuda_red_launch<tensor__cuda_red_prod>(c, r, p);
}
/* max, max_all, min, min_all, argmax, argmin, amax, amin */
static int tensor__cuda_ext_op(tensor__dev_call *c) {
    tensor__cuda_red r;
    if (!tensor__cuda_red_from_call(c, &r)) return 1;
    tensor__cuda_red_prm p;
    memset(&p, 0, sizeof p);
    p.kind = c->op == TENSOR_OP_max || c->op == TENSOR_OP_max_all || c->op == TENSOR_OP_argmax || c->op == TENSOR_OP_amax;
    p.index = c->op == TENSOR_OP_argmax || c->op == TENSOR_OP_argmin;
    return tensor__cuda_red_launch<tensor__cuda_red_ext>(c, r, p);
}
/* var, std */
static int tensor__cuda_var(tensor__dev_call *c) {
    tensor__cuda_red r;
    if (!tensor__cuda_red_from_call(c, &r) || !tensor__cuda_red_float_only(c, r)) return 1;
    tensor__cuda_red_prm p;
    memset(&p, 0, sizeof p);
    p.kind = c->op == TENSOR_OP_std;
    p.corr = c->ip[1];
    return tensor__cuda_red_launch<tensor__cuda_red_var>(c, r, p);
}
static int tensor__cuda_logsumexp(tensor__dev_call *c) {
    tensor__cuda_red r;
    if (!tensor__cuda_red_from_call(c, &r) || !tensor__cuda_red_float_only(c, r)) return 1;
    tensor__cuda_red_prm p;
    memset(&p, 0, sizeof p);
    return tensor__cuda_red_launch<tensor__cuda_red_lse>(c, r, p);
}
static int tensor__cuda_norm(tensor__dev_call *c) {
    tensor__cuda_red r;
    if (!tensor__cuda_red_from_call(c, &r) || !tensor__cuda_red_float_only(c, r)) return 1;
    tensor__cuda_red_prm p;
    memset(&p, 0, sizeof p);
    double q = c->p[0];
    p.p = q;
    p.kind = q == INFINITY ? TENSOR__CUDA_NORM_INF : q == -INFINITY ? TENSOR__CUDA_NORM_NEG_INF : q == 0 ? TENSOR__CUDA_NORM_ZERO
           : q == 1 ? TENSOR__CUDA_NORM_ONE : q == 2 ? TENSOR__CUDA_NORM_TWO : TENSOR__CUDA_NORM_P;
    return tensor__cuda_red_launch<tensor__cuda_red_norm>(c, r, p);
}
/* all, any */
static int tensor__cuda_allany(tensor__dev_call *c) {
    tensor__cuda_red r;
    if (!tensor__cuda_red_from_call(c, &r)) return 1;
    tensor__cuda_red_prm p;
    memset(&p, 0, sizeof p);
    p.kind = c->op == TENSOR_OP_all;
    return tensor__cuda_red_launch<tensor__cuda_red_allany>(c, r, p);
}

/* cumsum along one dim (none for a 0-dim input): a block per line (grid-striding over the lines),
   the line in chunks of blockDim elements. Floats accumulate in double, bool and integers in int64
   (wrapping), as the CPU's; the result is stored in the output's dtype. Element i of a chunk gets
   carry + (the warps before its own, added by thread 0 in order) + (an inclusive shuffle scan
   within its warp): the CPU adds left to right, so float results differ by reassociation only. */
TENSOR__CUDA_D double tensor__cuda_scan_add(double a, double b) { return a + b; }
TENSOR__CUDA_D int64_t tensor__cuda_scan_add(int64_t a, int64_t b) { return tensor__iadd(a, b); }
TENSOR__CUDA_D void tensor__cuda_scan_load(double *x, const char *p, tensor_dtype d) { *x = tensor__cuda_load_f64(p, d); }
TENSOR__CUDA_D void tensor__cuda_scan_load(int64_t *x, const char *p, tensor_dtype d) { *x = tensor__cuda_load_i64(p, d); }
TENSOR__CUDA_D void tensor__cuda_scan_store(char *p, tensor_dtype d, double x) { tensor__cuda_store_f64(p, d, x); }
TENSOR__CUDA_D void tensor__cuda_scan_store(char *p, tensor_dtype d, int64_t x) { tensor__cuda_store_i64(p, d, x); }

template <class T>
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_cumsum_kernel(tensor__cuda_red r, int64_t n, int64_t is, int64_t os) {
    __shared__ T wsum[TENSOR__CUDA_THREADS / 32 + 1];
    int lane = (int)(threadIdx.x & 31), w = (int)(threadIdx.x >> 5), nw = (int)(blockDim.x >> 5);
    for (int64_t e = blockIdx.x; e < r.knumel; e += gridDim.x) {
        int64_t io, oo;
        tensor__cuda_red_kept(r, e, &io, &oo);
        const char *in = r.in + io;
        char *out = r.out + oo;
        T carry = 0;
        for (int64_t c0 = 0; c0 < n; c0 += blockDim.x) {
            int64_t i = c0 + threadIdx.x;
            T x = 0;
            if (i < n) tensor__cuda_scan_load(&x, in + i * is, r.in_dt);
            for (int d = 1; d < 32; d <<= 1) {
                T y = __shfl_up_sync(0xffffffffu, x, d);
                if (lane >= d) x = tensor__cuda_scan_add(y, x);
            }
            if (lane == 31) wsum[w] = x;
            __syncthreads();
            if (threadIdx.x == 0) { /* wsum[k] becomes what comes before warp k; wsum[nw] the new carry */
                T acc = carry;
                for (int k = 0; k < nw; k++) {
                    T t = wsum[k];
                    wsum[k] = acc;
                    acc = tensor__cuda_scan_add(acc, t);
                }
                wsum[nw] = acc;
            }
            __syncthreads();
            x = tensor__cuda_scan_add(wsum[w], x);
            if (i < n) tensor__cuda_scan_store(out + i * os, r.out_dt, x);
            carry = wsum[nw];
            __syncthreads(); /* wsum is written again by the next chunk */
        }
    }
}

static int tensor__cuda_cumsum(tensor__dev_call *c) {
    if (c->n_in != 1) return tensor__cuda_fail(c, "cumsum: expected 1 input, got %d", c->n_in);
    const tensor__dev_operand &in = c->in[0], &out = c->out;
    if (!tensor__cuda_operand_ok(c, in, "input") || !tensor__cuda_operand_ok(c, out, "output")) return 1;
    if (in.by_value || out.by_value) return tensor__cuda_fail(c, "cumsum: the operands cannot be values");
    if (out.ndim != in.ndim) return tensor__cuda_fail(c, "cumsum: an output of %d dims for an input of %d", out.ndim, in.ndim);
    for (int d = 0; d < in.ndim; d++)
        if (out.shape[d] != in.shape[d]) return tensor__cuda_fail(c, "cumsum: the output's shape differs from the input's at dim %d", d);
    if (c->n_dims > 1) return tensor__cuda_fail(c, "cumsum: %d dims, expected one", c->n_dims);
    unsigned mask;
    if (!tensor__cuda_red_mask(c, &mask)) return 1;
    if (tensor__cuda_numel(in) == 0) return 0;
    int dim = c->n_dims ? c->dims[0] : -1;
    int64_t esz = tensor__cuda_size(in.dtype), osz = tensor__cuda_size(out.dtype), ostride[TENSOR_MAX_DIMS];
    for (int d = 0; d < in.ndim; d++) ostride[d] = out.strides[d] * osz;
    tensor__cuda_red r;
    tensor__cuda_red_build(&r, in, mask, ostride, out);
    int64_t n = dim >= 0 ? in.shape[dim] : 1, is = dim >= 0 ? in.strides[dim] * esz : 0, os = dim >= 0 ? ostride[dim] : 0;
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    unsigned blocks = (unsigned)(r.knumel > TENSOR__CUDA_MAX_BLOCKS ? TENSOR__CUDA_MAX_BLOCKS : r.knumel);
    unsigned threads = n <= 32 ? 32 : TENSOR__CUDA_THREADS;
    TENSOR__CUDA_LAUNCH_BEGIN();
    if (tensor__cuda_is_float(in.dtype)) tensor__cuda_cumsum_kernel<double><<<blocks, threads, 0, s>>>(r, n, is, os);
    else tensor__cuda_cumsum_kernel<int64_t><<<blocks, threads, 0, s>>>(r, n, is, os);
    return tensor__cuda_launch_check(c);
}

// >>cuda-sort ------------------------------------------------------------------------------------
/* sort, cumprod, cummax, cummin, logcumsumexp: the call layout of >>sort (in[0] the input, dims[0]
   the dim, out the values, out2 the i64 indices of sort/cummax/cummin, ip[0] sort's descending).
   Lines are the kept positions of a tensor__cuda_red with the dim reduced; out and out2 are
   contiguous with one shape, so an output's element offset is the same in both.
   sort: a block per line with a bitonic sort in shared memory for lines up to
   TENSOR__CUDA_SORT_SHARED elements, and one thread per line with a bottom-up merge sort in
   global scratch beyond. Both order pairs by (key, original index), a total order, so either gives
   exactly the CPU's stable sort (NaN after every number; descending puts it first).
   The scans: one thread per line, in order, with the CPU's arithmetic (double, or wrapping int64). */
#define TENSOR__CUDA_SORT_SHARED 2048
TENSOR__CUDA_D bool tensor__cuda_key_before(double a, double b, bool desc) {
    if (desc) { double t = a; a = b; b = t; }
    return a < b || (b != b && a == a);
}
TENSOR__CUDA_D bool tensor__cuda_key_before(int64_t a, int64_t b, bool desc) { return desc ? a > b : a < b; }
/* (ka, ia) strictly before (kb, ib): by key, then by index; a pad (index < 0) after everything */
template <class K> TENSOR__CUDA_D bool tensor__cuda_pair_before(K ka, int64_t ia, K kb, int64_t ib, bool desc) {
    if (ia < 0) return false;
    if (ib < 0) return true;
    if (tensor__cuda_key_before(ka, kb, desc)) return true;
    if (tensor__cuda_key_before(kb, ka, desc)) return false;
    return ia < ib;
}

struct tensor__cuda_line {
    int64_t n, is, os, xs, osz; /* line length; byte strides along it in the input, out, out2; out's element size */
    char *idx;                  /* out2's data, or NULL */
};

template <class K>
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_sort_block_kernel(tensor__cuda_red r, tensor__cuda_line L, int64_t P, bool desc) {
    __shared__ K key[TENSOR__CUDA_SORT_SHARED];
    __shared__ int pos[TENSOR__CUDA_SORT_SHARED];
    for (int64_t e = blockIdx.x; e < r.knumel; e += gridDim.x) {
        int64_t io, oo;
        tensor__cuda_red_kept(r, e, &io, &oo);
        for (int64_t i = threadIdx.x; i < P; i += blockDim.x) {
            if (i < L.n) { tensor__cuda_scan_load(&key[i], r.in + io + i * L.is, r.in_dt); pos[i] = (int)i; }
            else { key[i] = (K)0; pos[i] = -1; }
        }
        __syncthreads();
        for (int64_t k = 2; k <= P; k <<= 1)
            for (int64_t j = k >> 1; j > 0; j >>= 1) {
                for (int64_t i = threadIdx.x; i < P; i += blockDim.x) {
                    int64_t l = i ^ j;
                    if (l <= i) continue;
                    bool up = (i & k) == 0; /* this pair's half of the bitonic sequence goes up */
                    bool swap = up ? tensor__cuda_pair_before<K>(key[l], pos[l], key[i], pos[i], desc)
                                   : tensor__cuda_pair_before<K>(key[i], pos[i], key[l], pos[l], desc);
                    if (swap) {
                        K tk = key[i]; key[i] = key[l]; key[l] = tk;
                        int tp = pos[i]; pos[i] = pos[l]; pos[l] = tp;
                    }
                }
                __syncthreads();
            }
        char *out = r.out + oo, *ix = L.idx + oo / L.osz * 8;
        for (int64_t i = threadIdx.x; i < L.n; i += blockDim.x) {
            tensor__cuda_scan_store(out + i * L.os, r.out_dt, key[i]);
            *(int64_t *)(ix + i * L.xs) = pos[i];
        }
        __syncthreads(); /* the shared arrays are filled again for the next line */
    }
}

/* One thread per line: the line copied into its 2n scratch pairs, merged bottom-up (runs of 1, 2,
   4, ...; the right run's element goes first only when strictly before: stable), written out. */
template <class K>
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_sort_line_kernel(tensor__cuda_red r, tensor__cuda_line L, bool desc, K *kbuf, int64_t *ibuf) {
    int64_t n = L.n;
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < r.knumel; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t io, oo;
        tensor__cuda_red_kept(r, e, &io, &oo);
        K *ka = kbuf + e * 2 * n, *kb = ka + n;
        int64_t *ia = ibuf + e * 2 * n, *ib = ia + n;
        for (int64_t i = 0; i < n; i++) { tensor__cuda_scan_load(&ka[i], r.in + io + i * L.is, r.in_dt); ia[i] = i; }
        for (int64_t w = 1; w < n; w *= 2) {
            for (int64_t lo = 0; lo < n; lo += 2 * w) {
                int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n, i = lo, j = mid, o = lo;
                while (i < mid && j < hi) {
                    if (tensor__cuda_key_before(ka[j], ka[i], desc)) { kb[o] = ka[j]; ib[o++] = ia[j++]; }
                    else { kb[o] = ka[i]; ib[o++] = ia[i++]; }
                }
                while (i < mid) { kb[o] = ka[i]; ib[o++] = ia[i++]; }
                while (j < hi) { kb[o] = ka[j]; ib[o++] = ia[j++]; }
            }
            K *tk = ka; ka = kb; kb = tk;
            int64_t *ti = ia; ia = ib; ib = ti;
        }
        char *out = r.out + oo, *ix = L.idx + oo / L.osz * 8;
        for (int64_t i = 0; i < n; i++) {
            tensor__cuda_scan_store(out + i * L.os, r.out_dt, ka[i]);
            *(int64_t *)(ix + i * L.xs) = ia[i];
        }
    }
}

/* The scans: cumprod, and cummax/cummin (a later equal value or a NaN takes over: the last index
   of a tie, NaN kept once seen), logcumsumexp (a running logaddexp), as the CPU's lines. */
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_scan_f_kernel(tensor__cuda_red r, tensor__cuda_line L, int op) {
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < r.knumel; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t io, oo;
        tensor__cuda_red_kept(r, e, &io, &oo);
        const char *in = r.in + io;
        char *out = r.out + oo, *ix = L.idx ? L.idx + oo / L.osz * 8 : NULL;
        double acc = op == TENSOR_OP_cumprod ? 1.0 : op == TENSOR_OP_logcumsumexp ? -INFINITY : 0.0;
        int64_t best = 0;
        for (int64_t i = 0; i < L.n; i++) {
            double x = tensor__cuda_load_f64(in + i * L.is, r.in_dt);
            if (op == TENSOR_OP_cumprod) acc *= x;
            else if (op == TENSOR_OP_logcumsumexp) {
                double lo = x != x ? x : acc < x ? acc : x, hi = x != x ? x : acc < x ? x : acc;
                acc = (lo != hi || isfinite(lo)) ? log1p(exp(lo - hi)) + hi : lo;
            } else {
                bool is_max = op == TENSOR_OP_cummax;
                if (i == 0 || x != x || (acc == acc && (is_max ? x >= acc : x <= acc))) { acc = x; best = i; }
                *(int64_t *)(ix + i * L.xs) = best;
            }
            tensor__cuda_store_f64(out + i * L.os, r.out_dt, acc);
        }
    }
}
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_scan_i_kernel(tensor__cuda_red r, tensor__cuda_line L, int op) {
    for (int64_t e = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; e < r.knumel; e += (int64_t)gridDim.x * blockDim.x) {
        int64_t io, oo;
        tensor__cuda_red_kept(r, e, &io, &oo);
        const char *in = r.in + io;
        char *out = r.out + oo, *ix = L.idx ? L.idx + oo / L.osz * 8 : NULL;
        int64_t acc = op == TENSOR_OP_cumprod ? 1 : 0, best = 0;
        for (int64_t i = 0; i < L.n; i++) {
            int64_t x = tensor__cuda_load_i64(in + i * L.is, r.in_dt);
            if (op == TENSOR_OP_cumprod) acc = tensor__imul(acc, x);
            else {
                bool is_max = op == TENSOR_OP_cummax;
                if (i == 0 || (is_max ? x >= acc : x <= acc)) { acc = x; best = i; }
                *(int64_t *)(ix + i * L.xs) = best;
            }
            tensor__cuda_store_i64(out + i * L.os, r.out_dt, acc);
        }
    }
}

/* Checks the call and describes its lines; false + message. */
static bool tensor__cuda_line_setup(tensor__dev_call *c, tensor__cuda_red *r, tensor__cuda_line *L, bool want_idx) {
    const char *name = tensor__cuda_op_name(c->op);
    if (c->n_in != 1) { tensor__cuda_fail(c, "%s: expected 1 input, got %d", name, c->n_in); return false; }
    const tensor__dev_operand &in = c->in[0], &out = c->out, &out2 = c->out2;
    if (!tensor__cuda_operand_ok(c, in, "input") || !tensor__cuda_operand_ok(c, out, "output")) return false;
    if (in.by_value || out.by_value) { tensor__cuda_fail(c, "%s: the operands cannot be values", name); return false; }
    if (out.ndim != in.ndim) { tensor__cuda_fail(c, "%s: an output of %d dims for an input of %d", name, out.ndim, in.ndim); return false; }
    for (int d = 0; d < in.ndim; d++)
        if (out.shape[d] != in.shape[d]) { tensor__cuda_fail(c, "%s: the output's shape differs from the input's at dim %d", name, d); return false; }
    if (want_idx) {
        if (!tensor__cuda_operand_ok(c, out2, "indices") || out2.dtype != TENSOR_I64 || out2.ndim != out.ndim) {
            tensor__cuda_fail(c, "%s: expected i64 indices of the output's shape", name);
            return false;
        }
        for (int d = 0; d < out.ndim; d++)
            if (out2.shape[d] != out.shape[d] || out2.strides[d] != out.strides[d]) {
                tensor__cuda_fail(c, "%s: the indices must have the output's shape and strides", name);
                return false;
            }
    }
    if (c->n_dims > 1) { tensor__cuda_fail(c, "%s: %d dims, expected one", name, c->n_dims); return false; }
    unsigned mask;
    if (!tensor__cuda_red_mask(c, &mask)) return false;
    int dim = c->n_dims ? c->dims[0] : -1;
    int64_t esz = tensor__cuda_size(in.dtype), osz = tensor__cuda_size(out.dtype), ostride[TENSOR_MAX_DIMS];
    for (int d = 0; d < in.ndim; d++) ostride[d] = out.strides[d] * osz;
    tensor__cuda_red_build(r, in, mask, ostride, out);
    L->n = dim >= 0 ? in.shape[dim] : 1;
    L->is = dim >= 0 ? in.strides[dim] * esz : 0;
    L->os = dim >= 0 ? ostride[dim] : 0;
    L->xs = dim >= 0 && want_idx ? out2.strides[dim] * 8 : 0;
    L->osz = osz;
    L->idx = want_idx ? (char *)out2.data : NULL;
    return true;
}

static int tensor__cuda_sort(tensor__dev_call *c) {
    tensor__cuda_red r;
    tensor__cuda_line L;
    if (!tensor__cuda_line_setup(c, &r, &L, true)) return 1;
    if (tensor__cuda_numel(c->in[0]) == 0) return 0;
    bool desc = c->ip[0] != 0, fl = tensor__cuda_is_float(c->in[0].dtype);
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    if (L.n <= TENSOR__CUDA_SORT_SHARED) {
        int64_t P = 1;
        while (P < L.n) P <<= 1;
        unsigned blocks = (unsigned)(r.knumel > TENSOR__CUDA_MAX_BLOCKS ? TENSOR__CUDA_MAX_BLOCKS : r.knumel);
        TENSOR__CUDA_LAUNCH_BEGIN();
        if (fl) tensor__cuda_sort_block_kernel<double><<<blocks, TENSOR__CUDA_THREADS, 0, s>>>(r, L, P, desc);
        else tensor__cuda_sort_block_kernel<int64_t><<<blocks, TENSOR__CUDA_THREADS, 0, s>>>(r, L, P, desc);
        return tensor__cuda_launch_check(c);
    }
    size_t pairs = (size_t)r.knumel * 2 * (size_t)L.n;
    void *kbuf = tensor__cuda_alloc(pairs * 8, c->error, sizeof c->error); /* double and int64 keys: 8 bytes */
    if (!kbuf) return 1;
    void *ibuf = tensor__cuda_alloc(pairs * 8, c->error, sizeof c->error);
    if (!ibuf) { tensor__cuda_free(kbuf); return 1; }
    TENSOR__CUDA_LAUNCH_BEGIN();
    if (fl) tensor__cuda_sort_line_kernel<double><<<tensor__cuda_blocks(r.knumel), TENSOR__CUDA_THREADS, 0, s>>>(r, L, desc, (double *)kbuf, (int64_t *)ibuf);
    else tensor__cuda_sort_line_kernel<int64_t><<<tensor__cuda_blocks(r.knumel), TENSOR__CUDA_THREADS, 0, s>>>(r, L, desc, (int64_t *)kbuf, (int64_t *)ibuf);
    int rc = tensor__cuda_launch_check(c);
    tensor__cuda_free(kbuf); /* stream-ordered: after the kernel */
    tensor__cuda_free(ibuf);
    return rc;
}
/* cumprod, cummax, cummin, logcumsumexp */
static int tensor__cuda_scan_op(tensor__dev_call *c) {
    bool want_idx = c->op == TENSOR_OP_cummax || c->op == TENSOR_OP_cummin;
    tensor__cuda_red r;
    tensor__cuda_line L;
    if (!tensor__cuda_line_setup(c, &r, &L, want_idx)) return 1;
    if (c->op == TENSOR_OP_logcumsumexp && !tensor__cuda_red_float_only(c, r)) return 1;
    if (tensor__cuda_numel(c->in[0]) == 0) return 0;
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    TENSOR__CUDA_LAUNCH_BEGIN();
    if (tensor__cuda_is_float(c->in[0].dtype)) tensor__cuda_scan_f_kernel<<<tensor__cuda_blocks(r.knumel), TENSOR__CUDA_THREADS, 0, s>>>(r, L, (int)c->op);
    else tensor__cuda_scan_i_kernel<<<tensor__cuda_blocks(r.knumel), TENSOR__CUDA_THREADS, 0, s>>>(r, L, (int)c->op);
    return tensor__cuda_launch_check(c);
}

// >>cuda-nn --------------------------------------------------------------------------------------
/* The fused nn ops with the call records of their CPU kernels (>>linalg, >>nn, >>norm, >>loss):
   softmax and log_softmax, layer_norm and rms_norm, cross_entropy and nll_loss, embedding, and
   matmul through cuBLAS (integers: a tiled kernel). Rows are reduced in the accumulation type Acc:
   float for f32, f16 and bf16 inputs, double for f64 (the CPU's reference loops use double
   throughout, its f32 fast paths float lanes). Loss sums over rows are in double, in a fixed order
   (one block), so they do not depend on the launch. An invalid class or embedding index raises a
   device flag (the first bad position, by atomicMin) that the host reads back after the launch,
   waiting for it, and reports with the CPU's message. */
#include <cublas_v2.h>
#include <climits>
#include <cmath>

TENSOR__CUDA_D float tensor__cuda_exp(float x) { return expf(x); }
TENSOR__CUDA_D double tensor__cuda_exp(double x) { return exp(x); }
TENSOR__CUDA_D float tensor__cuda_log(float x) { return logf(x); }
TENSOR__CUDA_D double tensor__cuda_log(double x) { return log(x); }

/* A float dtype's element as Acc, as tensor__cuda_load_f64 reads it (exact: f16/bf16/f32 fit in
   float). */
template <class Acc> TENSOR__CUDA_D Acc tensor__cuda_ldf(const char *p, tensor_dtype d) {
    switch (d) {
    case TENSOR_F32: return (Acc)tensor__cuda_rd<float>(p);
    case TENSOR_F64: return (Acc)tensor__cuda_rd<double>(p);
    case TENSOR_F16: return (Acc)tensor__cuda_f16_to_f32(tensor__cuda_rd<uint16_t>(p));
    case TENSOR_BF16: return (Acc)tensor__cuda_bf16_to_f32(tensor__cuda_rd<uint16_t>(p));
    default: return (Acc)tensor__cuda_load_f64(p, d);
    }
}

/* Row groups: TPR threads (1, 32 or 256) share a row; a block of 256 threads holds 256 / TPR
   groups. TPR 1 serves rows whose elements are not adjacent (a dim other than the innermost):
   neighbouring threads then read neighbouring rows. The group reductions below leave the same
   result in every thread of the group: the warp's butterfly is symmetric, and the block's partials
   are added in warp order by every thread. */
#define TENSOR__CUDA_NN_THREADS 256
#define TENSOR__CUDA_FULL_MASK 0xffffffffu

template <class T, int TPR> TENSOR__CUDA_D T tensor__cuda_group_sum(T v, T *sh) {
    if constexpr (TPR > 1) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(TENSOR__CUDA_FULL_MASK, v, o);
    }
    if constexpr (TPR > 32) {
        if (threadIdx.x % 32 == 0) sh[threadIdx.x / 32] = v;
        __syncthreads();
        v = 0;
        for (int w = 0; w < TPR / 32; w++) v += sh[w];
        __syncthreads(); /* sh is free for the next reduction */
    }
    (void)sh;
    return v;
}

/* Running softmax statistics: m the largest element so far, s the sum of e^(x - m). An infinity or
   NaN makes s NaN, as the CPU's sum of e^(x - max) becomes (a row of -inf too). */
template <class Acc> TENSOR__CUDA_D void tensor__cuda_ms_add(Acc &m, Acc &s, Acc x) {
    if (x > m) { s *= tensor__cuda_exp(m - x); m = x; }
    s += tensor__cuda_exp(x - m);
}
/* Merges (m2, s2) into (m, s); a side with no elements (s == 0) counts for nothing. Symmetric. */
template <class Acc> TENSOR__CUDA_D void tensor__cuda_ms_merge(Acc &m, Acc &s, Acc m2, Acc s2) {
    Acc mm = m2 > m ? m2 : m;
    Acc a = s == 0 ? (Acc)0 : s * tensor__cuda_exp(m - mm);
    Acc b = s2 == 0 ? (Acc)0 : s2 * tensor__cuda_exp(m2 - mm);
    m = mm;
    s = a + b;
}
template <class Acc, int TPR> TENSOR__CUDA_D void tensor__cuda_group_ms(Acc &m, Acc &s, Acc *shm, Acc *shs) {
    if constexpr (TPR > 1) {
#pragma unroll
        for (int o = 16; o > 0; o >>= 1) {
            Acc m2 = __shfl_xor_sync(TENSOR__CUDA_FULL_MASK, m, o), s2 = __shfl_xor_sync(TENSOR__CUDA_FULL_MASK, s, o);
            tensor__cuda_ms_merge(m, s, m2, s2);
        }
    }
    (void)shm;
    (void)shs;
    if constexpr (TPR > 32) {
        if (threadIdx.x % 32 == 0) { shm[threadIdx.x / 32] = m; shs[threadIdx.x / 32] = s; }
        __syncthreads();
        m = -(Acc)INFINITY;
        s = 0;
        for (int w = 0; w < TPR / 32; w++) tensor__cuda_ms_merge(m, s, shm[w], shs[w]);
        __syncthreads();
    }
}

/* Operand t without dim (dim < 0: t itself): the description of its rows' first elements. */
static tensor__dev_operand tensor__cuda_drop_dim(const tensor__dev_operand &t, int dim) {
    tensor__dev_operand r = t;
    if (dim < 0 || dim >= t.ndim) return r;
    for (int d = dim; d + 1 < t.ndim; d++) { r.shape[d] = t.shape[d + 1]; r.strides[d] = t.strides[d + 1]; }
    r.ndim = t.ndim - 1;
    return r;
}
/* Blocks for `rows` rows of TPR threads each. */
template <int TPR> static unsigned tensor__cuda_row_blocks(int64_t rows) {
    const int64_t per = TENSOR__CUDA_NN_THREADS / TPR;
    int64_t b = (rows + per - 1) / per;
    return (unsigned)(b < 1 ? 1 : b > TENSOR__CUDA_MAX_BLOCKS ? TENSOR__CUDA_MAX_BLOCKS : b);
}
/* The loop over the rows of a block's groups: `row` the group's row, `live` whether it exists.
   Every thread of the block runs the same iterations, so group reductions may synchronize. */
#define TENSOR__CUDA_ROWS_LOOP(TPR, rows, row, live)                                                                   \
    for (int64_t row##_0 = (int64_t)blockIdx.x * (TENSOR__CUDA_NN_THREADS / TPR); row##_0 < (rows);                     \
         row##_0 += (int64_t)gridDim.x * (TENSOR__CUDA_NN_THREADS / TPR))                                               \
        for (int64_t row = row##_0 + threadIdx.x / TPR, row##_once = 0; row##_once < 1; row##_once++)                   \
            for (bool live = row < (rows), live##_once = true; live##_once; live##_once = false)

/* The max m and sum s of e^(x - m) of one row of len elements (byte step xs), by the TPR threads
   of its group: every thread of the group calls it, live or not (the group merges by shuffles). */
template <class Acc, int TPR>
TENSOR__CUDA_D void tensor__cuda_row_max_sum(const char *x, int64_t xs, tensor_dtype xd, int64_t len, bool live, Acc *shm, Acc *shs, Acc &m, Acc &s) {
    m = -(Acc)INFINITY;
    s = 0;
    if (live)
        for (int64_t i = threadIdx.x % TPR; i < len; i += TPR) tensor__cuda_ms_add(m, s, tensor__cuda_ldf<Acc>(x + i * xs, xd));
    tensor__cuda_group_ms<Acc, TPR>(m, s, shm, shs);
}
/* The statistics of one row of the norms, by its group as above: mean (0 unless center) and
   rstd = 1 / sqrt(var + eps), var the biased variance of x - mean (rms_norm: the mean of x^2). */
template <class Acc, int TPR>
TENSOR__CUDA_D void tensor__cuda_row_norm_stats(const char *x, int64_t xs, tensor_dtype xd, int64_t n, bool center, double eps, bool live, Acc *sh, Acc &mean,
                                                Acc &rstd) {
    const int lane = threadIdx.x % TPR;
    Acc acc = 0;
    mean = 0;
    if (center) {
        if (live)
            for (int64_t i = lane; i < n; i += TPR) acc += tensor__cuda_ldf<Acc>(x + i * xs, xd);
        mean = tensor__cuda_group_sum<Acc, TPR>(acc, sh) / (Acc)n;
        acc = 0;
    }
    if (live)
        for (int64_t i = lane; i < n; i += TPR) {
            Acc d = tensor__cuda_ldf<Acc>(x + i * xs, xd) - mean;
            acc += d * d;
        }
    Acc var = tensor__cuda_group_sum<Acc, TPR>(acc, sh) / (Acc)n;
    rstd = (Acc)(1.0 / sqrt((double)var + eps));
}

/* ---- softmax, log_softmax: in[0] x, out y (x's shape), ip[0] the dim (-1 for a 0-dim x) ---- */
struct tensor__cuda_row_io {
    tensor__cuda_offsets o; /* over the rows: [0] y, [1] x */
    const char *x;
    char *y;
    tensor_dtype xd, yd;
    int64_t xs, ys;         /* bytes between a row's elements */
    int64_t rows, len;
};
template <class Acc, int TPR>
__global__ void __launch_bounds__(TENSOR__CUDA_NN_THREADS) tensor__cuda_softmax_kernel(tensor__cuda_row_io a, bool log_form) {
    __shared__ Acc shm[TENSOR__CUDA_NN_THREADS / 32], shs[TENSOR__CUDA_NN_THREADS / 32];
    const int lane = threadIdx.x % TPR;
    TENSOR__CUDA_ROWS_LOOP(TPR, a.rows, row, live) {
        int64_t off[2] = {0, 0};
        if (live) tensor__cuda_offsets_get<2>(a.o, row, off);
        const char *x = a.x + off[1];
        char *y = a.y + off[0];
        Acc m, s;
        tensor__cuda_row_max_sum<Acc, TPR>(x, a.xs, a.xd, a.len, live, shm, shs, m, s);
        if (!live) continue;
        Acc lse = m + tensor__cuda_log(s);
        for (int64_t i = lane; i < a.len; i += TPR) {
            Acc v = tensor__cuda_ldf<Acc>(x + i * a.xs, a.xd);
            tensor__cuda_store_f64(y + i * a.ys, a.yd, (double)(log_form ? v - lse : tensor__cuda_exp(v - m) / s));
        }
    }
}

/* Fills the row description of y and x along dim; false when there is nothing to do. */
static bool tensor__cuda_row_io_init(tensor__cuda_row_io *a, const tensor__dev_operand &y, const tensor__dev_operand &x, int dim) {
    tensor__dev_operand ry = tensor__cuda_drop_dim(y, dim), rx = tensor__cuda_drop_dim(x, dim);
    const tensor__dev_operand *ops[2] = {&ry, &rx};
    a->rows = tensor__cuda_offsets_init(&a->o, 2, ops, false);
    a->len = dim >= 0 ? x.shape[dim] : 1;
    a->x = (const char *)x.data;
    a->y = (char *)y.data;
    a->xd = x.dtype;
    a->yd = y.dtype;
    a->xs = dim >= 0 ? x.strides[dim] * tensor__cuda_size(x.dtype) : 0;
    a->ys = dim >= 0 ? y.strides[dim] * tensor__cuda_size(y.dtype) : 0;
    return tensor__cuda_numel(x) > 0;
}
/* TPR for rows of len elements: adjacent elements, a warp (or a block for long rows); else 1. */
static int tensor__cuda_row_tpr(bool adjacent, int64_t len) { return !adjacent ? 1 : len > 1024 ? 256 : 32; }

template <class Acc>
static void tensor__cuda_softmax_launch(const tensor__cuda_row_io &a, bool log_form, int tpr, cudaStream_t s) {
    if (tpr == 1) tensor__cuda_softmax_kernel<Acc, 1><<<tensor__cuda_row_blocks<1>(a.rows), TENSOR__CUDA_NN_THREADS, 0, s>>>(a, log_form);
    else if (tpr == 32) tensor__cuda_softmax_kernel<Acc, 32><<<tensor__cuda_row_blocks<32>(a.rows), TENSOR__CUDA_NN_THREADS, 0, s>>>(a, log_form);
    else tensor__cuda_softmax_kernel<Acc, 256><<<tensor__cuda_row_blocks<256>(a.rows), TENSOR__CUDA_NN_THREADS, 0, s>>>(a, log_form);
}
static int tensor__cuda_softmax_run(tensor__dev_call *c, bool log_form) {
    if (c->n_in < 1) return tensor__cuda_fail(c, "%s: expected an input", tensor__cuda_op_name(c->op));
    const tensor__dev_operand &x = c->in[0], &y = c->out;
    if (!tensor__cuda_operand_ok(c, x, "input") || x.by_value || !tensor__cuda_operand_ok(c, y, "output") || y.by_value) return 1;
    if (!tensor__cuda_is_float(x.dtype) || !tensor__cuda_is_float(y.dtype)) return tensor__cuda_fail(c, "%s: expected a floating tensor", tensor__cuda_op_name(c->op));
    int dim = (int)c->ip[0];
    if (dim >= x.ndim || dim < -1 || (dim < 0 && x.ndim != 0)) return tensor__cuda_fail(c, "%s: invalid dim %d", tensor__cuda_op_name(c->op), dim);
    tensor__cuda_row_io a;
    if (!tensor__cuda_row_io_init(&a, y, x, dim)) return 0;
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    bool adjacent = a.len == 1 || (a.xs == tensor__cuda_size(x.dtype) && a.ys == tensor__cuda_size(y.dtype));
    int tpr = tensor__cuda_row_tpr(adjacent, a.len);
    TENSOR__CUDA_LAUNCH_BEGIN();
    if (x.dtype == TENSOR_F64) tensor__cuda_softmax_launch<double>(a, log_form, tpr, s);
    else tensor__cuda_softmax_launch<float>(a, log_form, tpr, s);
    return tensor__cuda_launch_check(c);
}
static int tensor__cuda_softmax(tensor__dev_call *c) { return tensor__cuda_softmax_run(c, false); }
static int tensor__cuda_log_softmax(tensor__dev_call *c) { return tensor__cuda_softmax_run(c, true); }

/* ---- layer_norm, rms_norm over the last dim: in[0] x, in[1] weight, in[2] bias (layer_norm;
   each optional: data NULL), p[0] eps, out y (x's shape). No saved statistics (the CPU writes no
   out2). layer_norm: the mean, then the biased variance of x - mean (two passes, as the CPU),
   y = (x - mean) rstd w + b; rms_norm: y = x rstd w with rstd = 1 / sqrt(mean(x^2) + eps);
   rstd is computed in double from the Acc statistics. ---- */
struct tensor__cuda_norm_args {
    tensor__cuda_row_io r;
    const char *w, *b;      /* NULL: 1, 0 */
    tensor_dtype wd, bd;
    int64_t ws, bs;         /* bytes */
    double eps;
    bool center;
};
template <class Acc, int TPR>
__global__ void __launch_bounds__(TENSOR__CUDA_NN_THREADS) tensor__cuda_norm_kernel(tensor__cuda_norm_args a) {
    __shared__ Acc sh[TENSOR__CUDA_NN_THREADS / 32];
    const int lane = threadIdx.x % TPR;
    const int64_t n = a.r.len;
    TENSOR__CUDA_ROWS_LOOP(TPR, a.r.rows, row, live) {
        int64_t off[2] = {0, 0};
        if (live) tensor__cuda_offsets_get<2>(a.r.o, row, off);
        const char *x = a.r.x + off[1];
        char *y = a.r.y + off[0];
        Acc mean, rstd;
        tensor__cuda_row_norm_stats<Acc, TPR>(x, a.r.xs, a.r.xd, n, a.center, a.eps, live, sh, mean, rstd);
        if (!live) continue;
        for (int64_t i = lane; i < n; i += TPR) {
            Acc v = (tensor__cuda_ldf<Acc>(x + i * a.r.xs, a.r.xd) - mean) * rstd;
            if (a.w) v *= tensor__cuda_ldf<Acc>(a.w + i * a.ws, a.wd);
            if (a.b) v += tensor__cuda_ldf<Acc>(a.b + i * a.bs, a.bd);
            tensor__cuda_store_f64(y + i * a.r.ys, a.r.yd, (double)v);
        }
    }
}
template <class Acc>
static void tensor__cuda_norm_launch(const tensor__cuda_norm_args &a, int tpr, cudaStream_t s) {
    if (tpr == 1) tensor__cuda_norm_kernel<Acc, 1><<<tensor__cuda_row_blocks<1>(a.r.rows), TENSOR__CUDA_NN_THREADS, 0, s>>>(a);
    else if (tpr == 32) tensor__cuda_norm_kernel<Acc, 32><<<tensor__cuda_row_blocks<32>(a.r.rows), TENSOR__CUDA_NN_THREADS, 0, s>>>(a);
    else tensor__cuda_norm_kernel<Acc, 256><<<tensor__cuda_row_blocks<256>(a.r.rows), TENSOR__CUDA_NN_THREADS, 0, s>>>(a);
}
/* An optional 1-D parameter of n elements: true when absent or usable. */
static bool tensor__cuda_norm_param(tensor__dev_call *c, const tensor__dev_operand &p, int64_t n, const char *what, const char **data, tensor_dtype *dt, int64_t *step) {
    *data = nullptr;
    *dt = TENSOR_F32;
    *step = 0;
    if (!p.data && !p.by_value) return true; /* absent */
    if (!tensor__cuda_operand_ok(c, p, what) || p.by_value || p.ndim != 1 || p.shape[0] != n || !tensor__cuda_is_float(p.dtype)) {
        tensor__cuda_fail(c, "%s: invalid %s operand", tensor__cuda_op_name(c->op), what);
        return false;
    }
    *data = (const char *)p.data;
    *dt = p.dtype;
    *step = p.strides[0] * tensor__cuda_size(p.dtype);
    return true;
}
static int tensor__cuda_norm_run(tensor__dev_call *c, bool center) {
    if (c->n_in < 1) return tensor__cuda_fail(c, "%s: expected an input", tensor__cuda_op_name(c->op));
    const tensor__dev_operand &x = c->in[0], &y = c->out;
    if (!tensor__cuda_operand_ok(c, x, "input") || x.by_value || !tensor__cuda_operand_ok(c, y, "output") || y.by_value) return 1;
    if (x.ndim < 1 || !tensor__cuda_is_float(x.dtype) || !tensor__cuda_is_float(y.dtype)) return tensor__cuda_fail(c, "%s: expected a floating input of at least 1 dim", tensor__cuda_op_name(c->op));
    tensor__cuda_norm_args a;
    memset(&a, 0, sizeof a);
    int last = x.ndim - 1;
    if (!tensor__cuda_row_io_init(&a.r, y, x, last)) return 0;
    if (c->n_in > 1 && !tensor__cuda_norm_param(c, c->in[1], a.r.len, "weight", &a.w, &a.wd, &a.ws)) return 1;
    if (center && c->n_in > 2 && !tensor__cuda_norm_param(c, c->in[2], a.r.len, "bias", &a.b, &a.bd, &a.bs)) return 1;
    a.eps = c->p[0];
    a.center = center;
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    /* a group per row even when the last dim is strided: its rows are not neighbours either */
    int tpr = tensor__cuda_row_tpr(true, a.r.len);
    TENSOR__CUDA_LAUNCH_BEGIN();
    if (x.dtype == TENSOR_F64) tensor__cuda_norm_launch<double>(a, tpr, s);
    else tensor__cuda_norm_launch<float>(a, tpr, s);
    return tensor__cuda_launch_check(c);
}
static int tensor__cuda_layer_norm(tensor__dev_call *c) { return tensor__cuda_norm_run(c, true); }
static int tensor__cuda_rms_norm(tensor__dev_call *c) { return tensor__cuda_norm_run(c, false); }

/* ---- errors found on the device: a flag holding the first bad position (ULLONG_MAX: none) ---- */
static unsigned long long *tensor__cuda_flag_new(tensor__dev_call *c, cudaStream_t s) {
    unsigned long long *f = (unsigned long long *)tensor__cuda_alloc(sizeof *f, c->error, sizeof c->error);
    if (!f) return nullptr;
    cudaError_t e = cudaMemsetAsync(f, 0xff, sizeof *f, s);
    if (e != cudaSuccess) {
        tensor__cuda_free(f);
        tensor__cuda_fail_cuda(c, "clearing its error flag", e);
        return nullptr;
    }
    return f;
}
/* Waits for the stream, reads the flag into *pos and frees it; 0, or 1 after an error. */
static int tensor__cuda_flag_read(tensor__dev_call *c, cudaStream_t s, unsigned long long *f, unsigned long long *pos) {
    *pos = ULLONG_MAX;
    cudaError_t e = cudaMemcpyAsync(pos, f, sizeof *pos, cudaMemcpyDeviceToHost, s);
    if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    tensor__cuda_free(f); /* after the wait: nothing queued uses it any more */
    return e == cudaSuccess ? 0 : tensor__cuda_fail_cuda(c, "reading its error flag", e);
}
/* The integer at row-major position pos of t (read back, waiting for the stream); 0 or 1. */
static int tensor__cuda_int_at(tensor__dev_call *c, cudaStream_t s, const tensor__dev_operand &t, unsigned long long pos, int64_t *v) {
    int64_t off = 0, q = (int64_t)pos;
    for (int d = t.ndim - 1; d >= 0; d--) {
        int64_t n = t.shape[d] > 0 ? t.shape[d] : 1;
        off += (q % n) * t.strides[d];
        q /= n;
    }
    char buf[8] = {0};
    int size = tensor__cuda_size(t.dtype);
    cudaError_t e = cudaMemcpyAsync(buf, (const char *)t.data + off * size, (size_t)size, cudaMemcpyDeviceToHost, s);
    if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    if (e != cudaSuccess) return tensor__cuda_fail_cuda(c, "reading a bad index", e);
    *v = tensor__cuda_load_i64(buf, t.dtype);
    return 0;
}
static void tensor__cuda_shape_text(char *buf, size_t n, const tensor__dev_operand &t) {
    size_t at = (size_t)snprintf(buf, n, "[");
    for (int d = 0; d < t.ndim && at < n; d++) at += (size_t)snprintf(buf + at, n - at, d ? ", %lld" : "%lld", (long long)t.shape[d]);
    if (at < n) snprintf(buf + at, n - at, "]");
}

/* ---- losses (mean reduction, ignore_index -100, as the CPU's) ----
   Per row a double loss and whether it counts go to scratch; one block then adds them in a fixed
   order and stores sign * sum / count into the 0-dim output. */
#define TENSOR__CUDA_IGNORE_INDEX (-100)
__global__ void __launch_bounds__(TENSOR__CUDA_NN_THREADS) tensor__cuda_loss_final(const double *loss, const unsigned char *used, int64_t rows, int64_t count, double sign, char *out, tensor_dtype od) {
    __shared__ double ssum[TENSOR__CUDA_NN_THREADS];
    __shared__ long long scnt[TENSOR__CUDA_NN_THREADS];
    double sum = 0;
    long long cnt = 0;
    for (int64_t i = threadIdx.x; i < rows; i += TENSOR__CUDA_NN_THREADS) {
        sum += loss[i];
        if (used) cnt += used[i];
    }
    ssum[threadIdx.x] = sum;
    scnt[threadIdx.x] = cnt;
    __syncthreads();
    for (int h = TENSOR__CUDA_NN_THREADS / 2; h > 0; h >>= 1) {
        if ((int)threadIdx.x < h) { ssum[threadIdx.x] += ssum[threadIdx.x + h]; scnt[threadIdx.x] += scnt[threadIdx.x + h]; }
        __syncthreads();
    }
    if (threadIdx.x == 0) tensor__cuda_store_f64(out, od, sign * ssum[0] / (double)(used ? (int64_t)scnt[0] : count));
}

/* cross_entropy: in[0] logits, in[1] targets, ip[0] 1 for probability targets (the logits'
   shape), else class indices (the logits' shape without the class dim). Per row along the class
   dim (1, or 0 for 1-D logits): lse = m + log(s) in double from the Acc statistics, the loss
   lse - x[t] or sum_c p_c (lse - x_c) in double. Mean over the counted rows (probabilities: every
   row when C > 0, else none); none counted gives NaN. */
struct tensor__cuda_ce_args {
    tensor__cuda_offsets o;  /* over the rows: [0] logits, [1] targets (class) or probabilities */
    const char *x, *t;
    tensor_dtype xd, td;
    int64_t xs, ts;          /* bytes along the class dim (ts: probabilities) */
    int64_t rows, C;
    bool prob;
    double *loss;
    unsigned char *used;
    unsigned long long *bad;
};
template <class Acc, int TPR>
__global__ void __launch_bounds__(TENSOR__CUDA_NN_THREADS) tensor__cuda_ce_kernel(tensor__cuda_ce_args a) {
    __shared__ Acc shm[TENSOR__CUDA_NN_THREADS / 32], shs[TENSOR__CUDA_NN_THREADS / 32];
    __shared__ double shd[TENSOR__CUDA_NN_THREADS / 32];
    const int lane = threadIdx.x % TPR;
    TENSOR__CUDA_ROWS_LOOP(TPR, a.rows, row, live) {
        int64_t off[2] = {0, 0};
        if (live) tensor__cuda_offsets_get<2>(a.o, row, off);
        const char *x = a.x + off[0];
        int64_t k = 0;
        bool skip = false; /* the whole group agrees: k is the row's */
        if (!a.prob && live) {
            k = tensor__cuda_load_i64(a.t + off[1], a.td);
            if (k == TENSOR__CUDA_IGNORE_INDEX) skip = true;
            else if (k < 0 || k >= a.C) {
                skip = true;
                if (lane == 0) atomicMin(a.bad, (unsigned long long)row);
            }
        }
        Acc m, s;
        tensor__cuda_row_max_sum<Acc, TPR>(x, a.xs, a.xd, a.C, live && !skip, shm, shs, m, s);
        double lse = (double)m + log((double)s), acc = 0;
        if (a.prob && live && a.C > 0)
            for (int64_t i = lane; i < a.C; i += TPR)
                acc += tensor__cuda_load_f64(a.t + off[1] + i * a.ts, a.td) * (lse - tensor__cuda_load_f64(x + i * a.xs, a.xd));
        if (a.prob) acc = tensor__cuda_group_sum<double, TPR>(acc, shd);
        if (!live || lane != 0) continue;
        if (a.prob) a.loss[row] = acc;
        else if (skip || a.C == 0) { a.loss[row] = 0; a.used[row] = 0; }
        else { a.loss[row] = lse - tensor__cuda_load_f64(x + k * a.xs, a.xd); a.used[row] = 1; }
    }
}
template <class Acc>
static void tensor__cuda_ce_launch(const tensor__cuda_ce_args &a, int tpr, cudaStream_t s) {
    if (tpr == 1) tensor__cuda_ce_kernel<Acc, 1><<<tensor__cuda_row_blocks<1>(a.rows), TENSOR__CUDA_NN_THREADS, 0, s>>>(a);
    else if (tpr == 32) tensor__cuda_ce_kernel<Acc, 32><<<tensor__cuda_row_blocks<32>(a.rows), TENSOR__CUDA_NN_THREADS, 0, s>>>(a);
    else tensor__cuda_ce_kernel<Acc, 256><<<tensor__cuda_row_blocks<256>(a.rows), TENSOR__CUDA_NN_THREADS, 0, s>>>(a);
}

/* Checks the scalar output and the class targets' shape shared by both losses. */
static bool tensor__cuda_loss_operands(tensor__dev_call *c) {
    if (c->n_in < 2) { tensor__cuda_fail(c, "%s: expected 2 inputs, got %d", tensor__cuda_op_name(c->op), c->n_in); return false; }
    for (int j = 0; j < 2; j++)
        if (!tensor__cuda_operand_ok(c, c->in[j], "input") || c->in[j].by_value) return false;
    if (!tensor__cuda_operand_ok(c, c->out, "output") || c->out.by_value) return false;
    if (c->in[0].ndim < 1 || !tensor__cuda_is_float(c->in[0].dtype)) { tensor__cuda_fail(c, "%s: expected a floating input of at least 1 dim", tensor__cuda_op_name(c->op)); return false; }
    return true;
}
/* Frees the loss scratch on every path (stream-ordered: queued kernels finish first). */
struct tensor__cuda_scratch {
    void *p[3] = {nullptr, nullptr, nullptr};
    ~tensor__cuda_scratch() { for (void *q : p) tensor__cuda_free(q); }
};
/* The bad class target at *pos, reported as the CPU does; always 1. */
static int tensor__cuda_bad_target(tensor__dev_call *c, cudaStream_t s, const tensor__dev_operand &t, unsigned long long pos, int64_t C) {
    int64_t v = 0;
    if (tensor__cuda_int_at(c, s, t, pos, &v)) return 1;
    return tensor__cuda_fail(c, "target %lld is out of bounds for %lld classes", (long long)v, (long long)C);
}

static int tensor__cuda_cross_entropy(tensor__dev_call *c) {
    if (!tensor__cuda_loss_operands(c)) return 1;
    const tensor__dev_operand &x = c->in[0], &t = c->in[1];
    bool prob = c->ip[0] != 0;
    int cdim = x.ndim == 1 ? 0 : 1;
    if (prob ? !tensor__cuda_is_float(t.dtype) || t.ndim != x.ndim : tensor__cuda_is_float(t.dtype) || t.ndim != x.ndim - 1)
        return tensor__cuda_fail(c, "cross_entropy: targets do not match the logits");
    tensor__cuda_ce_args a;
    memset(&a, 0, sizeof a);
    tensor__dev_operand rx = tensor__cuda_drop_dim(x, cdim), rt = prob ? tensor__cuda_drop_dim(t, cdim) : t;
    const tensor__dev_operand *ops[2] = {&rx, &rt};
    a.rows = tensor__cuda_offsets_init(&a.o, 2, ops, false);
    if (tensor__cuda_numel(rx) == 0) a.rows = 0;
    a.C = x.shape[cdim];
    a.x = (const char *)x.data;
    a.t = (const char *)t.data;
    a.xd = x.dtype;
    a.td = t.dtype;
    a.xs = x.strides[cdim] * tensor__cuda_size(x.dtype);
    a.ts = prob ? t.strides[cdim] * tensor__cuda_size(t.dtype) : 0;
    a.prob = prob;
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    tensor__cuda_scratch sc;
    size_t nrows = (size_t)a.rows;
    if (!(sc.p[0] = tensor__cuda_alloc(nrows * sizeof(double), c->error, sizeof c->error))) return 1;
    if (!prob && !(sc.p[1] = tensor__cuda_alloc(nrows, c->error, sizeof c->error))) return 1;
    a.loss = (double *)sc.p[0];
    a.used = (unsigned char *)sc.p[1];
    if (!prob && !(a.bad = tensor__cuda_flag_new(c, s))) return 1;
    if (a.rows > 0) {
        bool adjacent = a.C <= 1 || (a.xs == tensor__cuda_size(x.dtype) && (!prob || a.ts == tensor__cuda_size(t.dtype)));
        TENSOR__CUDA_LAUNCH_BEGIN();
        if (x.dtype == TENSOR_F64) tensor__cuda_ce_launch<double>(a, tensor__cuda_row_tpr(adjacent, a.C), s);
        else tensor__cuda_ce_launch<float>(a, tensor__cuda_row_tpr(adjacent, a.C), s);
        if (tensor__cuda_launch_check(c)) { tensor__cuda_free(a.bad); return 1; }
    }
    if (a.bad) { /* the CPU checks every target before it computes: so does this, before the mean */
        unsigned long long pos;
        if (tensor__cuda_flag_read(c, s, a.bad, &pos)) return 1;
        if (pos != ULLONG_MAX) return tensor__cuda_bad_target(c, s, t, pos, a.C);
    }
    TENSOR__CUDA_LAUNCH_BEGIN();
    tensor__cuda_loss_final<<<1, TENSOR__CUDA_NN_THREADS, 0, s>>>(a.loss, a.used, a.rows, a.C ? a.rows : 0, 1.0, (char *)c->out.data, c->out.dtype);
    return tensor__cuda_launch_check(c);
}

/* nll_loss: in[0] log_probs [C] or [N, C, d1, ...], in[1] class targets (its shape without the
   class dim); out = -sum of the picked log_probs / the counted targets (NaN when none counts). */
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_nll_kernel(tensor__cuda_offsets o, const char *t, tensor_dtype td, const char *x, tensor_dtype xd,
                                                                               int64_t xs, int64_t C, int64_t n, double *loss, unsigned char *used, unsigned long long *bad) {
    TENSOR__CUDA_LOOP(q, n) {
        int64_t off[2];
        tensor__cuda_offsets_get<2>(o, q, off);
        int64_t k = tensor__cuda_load_i64(t + off[0], td);
        loss[q] = 0;
        used[q] = 0;
        if (k == TENSOR__CUDA_IGNORE_INDEX) continue;
        if (k < 0 || k >= C) { atomicMin(bad, (unsigned long long)q); continue; }
        loss[q] = tensor__cuda_load_f64(x + off[1] + k * xs, xd);
        used[q] = 1;
    }
}
static int tensor__cuda_nll_loss(tensor__dev_call *c) {
    if (!tensor__cuda_loss_operands(c)) return 1;
    const tensor__dev_operand &x = c->in[0], &t = c->in[1];
    int cdim = x.ndim == 1 ? 0 : 1;
    if (tensor__cuda_is_float(t.dtype) || t.ndim != x.ndim - 1) return tensor__cuda_fail(c, "nll_loss: targets do not match the input");
    tensor__dev_operand rx = tensor__cuda_drop_dim(x, cdim);
    const tensor__dev_operand *ops[2] = {&t, &rx};
    tensor__cuda_offsets o;
    int64_t n = tensor__cuda_offsets_init(&o, 2, ops, false);
    if (tensor__cuda_numel(t) == 0) n = 0;
    int64_t C = x.shape[cdim];
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    tensor__cuda_scratch sc;
    if (!(sc.p[0] = tensor__cuda_alloc((size_t)n * sizeof(double), c->error, sizeof c->error))) return 1;
    if (!(sc.p[1] = tensor__cuda_alloc((size_t)n, c->error, sizeof c->error))) return 1;
    unsigned long long *bad = tensor__cuda_flag_new(c, s);
    if (!bad) return 1;
    if (n > 0) {
        TENSOR__CUDA_LAUNCH_BEGIN();
        tensor__cuda_nll_kernel<<<tensor__cuda_blocks(n), TENSOR__CUDA_THREADS, 0, s>>>(o, (const char *)t.data, t.dtype, (const char *)x.data, x.dtype,
                                                                                      x.strides[cdim] * tensor__cuda_size(x.dtype), C, n, (double *)sc.p[0], (unsigned char *)sc.p[1], bad);
        if (tensor__cuda_launch_check(c)) { tensor__cuda_free(bad); return 1; }
    }
    unsigned long long pos;
    if (tensor__cuda_flag_read(c, s, bad, &pos)) return 1;
    if (pos != ULLONG_MAX) return tensor__cuda_bad_target(c, s, t, pos, C);
    TENSOR__CUDA_LAUNCH_BEGIN();
    tensor__cuda_loss_final<<<1, TENSOR__CUDA_NN_THREADS, 0, s>>>((const double *)sc.p[0], (const unsigned char *)sc.p[1], n, 0, -1.0, (char *)c->out.data, c->out.dtype);
    return tensor__cuda_launch_check(c);
}

/* cross_entropy_ex and nll_loss_ex: in[0] input [C] or [N, C, d1, ...], in[1] targets (class
   indices: the input's shape without the class dim; cross_entropy_ex's probabilities: the input's
   shape), in[2] class weights [C] (absent: none), ip[0] 1 for probability targets, ip[1]
   ignore_index, ip[2] reduction, p[0] label smoothing. One thread per row
   along the class dim, in double, the CPU's formulas (>>loss): the row's loss (written out for
   reduction none) and its share of the mean's divisor; one block then adds them up. */
struct tensor__cuda_cex_args {
    tensor__cuda_offsets o;   /* over the rows: [0] input, [1] targets */
    const char *x, *t, *w;
    tensor_dtype xd, td, wd;
    int64_t xs, ts, ws;       /* bytes along the class dim (ts: probabilities), along the weight */
    int64_t rows, C, ignore;
    double eps;
    bool prob, nll;
    double *loss, *div;       /* per row */
    char *out;                /* reduction none: the row losses, contiguous (else null) */
    tensor_dtype od;
    unsigned long long *bad;
};
__device__ static double tensor__cuda_cex_w(const tensor__cuda_cex_args &a, int64_t c) { return a.w ? tensor__cuda_load_f64(a.w + c * a.ws, a.wd) : 1.0; }
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_cex_kernel(tensor__cuda_cex_args a) {
    TENSOR__CUDA_LOOP(q, a.rows) {
        int64_t off[2];
        tensor__cuda_offsets_get<2>(a.o, q, off);
        const char *x = a.x + off[0];
        double l = 0, d = 0;
        int64_t k = 0;
        bool counted = a.C > 0 || !a.prob;
        if (!a.prob) {
            k = tensor__cuda_load_i64(a.t + off[1], a.td);
            if (k == a.ignore) counted = false;
            else if (k < 0 || k >= a.C) {
                atomicMin(a.bad, (unsigned long long)q);
                counted = false;
            }
        }
        if (counted && a.nll) {
            d = tensor__cuda_cex_w(a, k);
            l = -d * tensor__cuda_load_f64(x + k * a.xs, a.xd);
        } else if (counted) {
            double m = -INFINITY, s = 0, ec = a.eps / (double)a.C;
            for (int64_t c = 0; c < a.C; c++) {
                double v = tensor__cuda_load_f64(x + c * a.xs, a.xd);
                if (v > m) m = v;
            }
            for (int64_t c = 0; c < a.C; c++) s += exp(tensor__cuda_load_f64(x + c * a.xs, a.xd) - m);
            double lse = m + log(s);
            if (a.prob) {
                for (int64_t c = 0; c < a.C; c++) {
                    double pv = tensor__cuda_load_f64(a.t + off[1] + c * a.ts, a.td);
                    if (a.eps > 0) pv = pv * (1 - a.eps) + ec;
                    l += tensor__cuda_cex_w(a, c) * pv * (lse - tensor__cuda_load_f64(x + c * a.xs, a.xd));
                }
                d = 1;
            } else {
                d = tensor__cuda_cex_w(a, k);
                l = d * (lse - tensor__cuda_load_f64(x + k * a.xs, a.xd));
                if (a.eps > 0) {
                    double sm = 0;
                    for (int64_t c = 0; c < a.C; c++) sm += tensor__cuda_cex_w(a, c) * (lse - tensor__cuda_load_f64(x + c * a.xs, a.xd));
                    l = (1 - a.eps) * l + ec * sm;
                }
            }
        }
        a.loss[q] = l;
        a.div[q] = d;
        if (a.out) tensor__cuda_store_f64(a.out + q * tensor__cuda_size(a.od), a.od, l);
    }
}
/* out = sum(loss) (sum) or sum(loss) / sum(div) (mean), one block. */
__global__ void __launch_bounds__(TENSOR__CUDA_NN_THREADS) tensor__cuda_cex_final(const double *loss, const double *div, int64_t rows, bool mean, char *out, tensor_dtype od) {
    __shared__ double sl[TENSOR__CUDA_NN_THREADS], sd[TENSOR__CUDA_NN_THREADS];
    double l = 0, d = 0;
    for (int64_t i = threadIdx.x; i < rows; i += TENSOR__CUDA_NN_THREADS) {
        l += loss[i];
        d += div[i];
    }
    sl[threadIdx.x] = l;
    sd[threadIdx.x] = d;
    __syncthreads();
    for (int h = TENSOR__CUDA_NN_THREADS / 2; h > 0; h >>= 1) {
        if ((int)threadIdx.x < h) { sl[threadIdx.x] += sl[threadIdx.x + h]; sd[threadIdx.x] += sd[threadIdx.x + h]; }
        __syncthreads();
    }
    if (threadIdx.x == 0) tensor__cuda_store_f64(out, od, mean ? sl[0] / sd[0] : sl[0]);
}
static int tensor__cuda_class_loss(tensor__dev_call *c, bool nll) {
    if (!tensor__cuda_loss_operands(c)) return 1;
    const tensor__dev_operand &x = c->in[0], &t = c->in[1];
    bool prob = !nll && c->ip[0] != 0, has_w = c->n_in > 2 && c->in[2].data;
    int cdim = x.ndim == 1 ? 0 : 1;
    if (prob ? !tensor__cuda_is_float(t.dtype) || t.ndim != x.ndim : tensor__cuda_is_float(t.dtype) || t.ndim != x.ndim - 1)
        return tensor__cuda_fail(c, "%s: targets do not match the input", tensor__cuda_op_name(c->op));
    if (has_w && (!tensor__cuda_operand_ok(c, c->in[2], "weight") || c->in[2].by_value || c->in[2].ndim != 1 || c->in[2].shape[0] != x.shape[cdim] ||
                  !tensor__cuda_is_float(c->in[2].dtype)))
        return tensor__cuda_fail(c, "%s: expected floating class weights of %lld elements", tensor__cuda_op_name(c->op), (long long)x.shape[cdim]);
    int reduction = (int)c->ip[2];
    tensor__cuda_cex_args a;
    memset(&a, 0, sizeof a);
    tensor__dev_operand rx = tensor__cuda_drop_dim(x, cdim), rt = prob ? tensor__cuda_drop_dim(t, cdim) : t;
    const tensor__dev_operand *ops[2] = {&rx, &rt};
    a.rows = tensor__cuda_offsets_init(&a.o, 2, ops, false);
    if (tensor__cuda_numel(rx) == 0) a.rows = 0;
    a.C = x.shape[cdim];
    a.x = (const char *)x.data;
    a.t = (const char *)t.data;
    a.w = has_w ? (const char *)c->in[2].data : nullptr;
    a.xd = x.dtype;
    a.td = t.dtype;
    a.wd = has_w ? c->in[2].dtype : x.dtype;
    a.xs = x.strides[cdim] * tensor__cuda_size(x.dtype);
    a.ts = prob ? t.strides[cdim] * tensor__cuda_size(t.dtype) : 0;
    a.ws = has_w ? c->in[2].strides[0] * tensor__cuda_size(c->in[2].dtype) : 0;
    a.ignore = c->ip[1];
    a.eps = nll ? 0 : c->p[0];
    a.prob = prob;
    a.nll = nll;
    a.out = reduction == TENSOR_REDUCTION_NONE ? (char *)c->out.data : nullptr;
    a.od = c->out.dtype;
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    tensor__cuda_scratch sc;
    size_t nrows = (size_t)(a.rows > 0 ? a.rows : 1);
    if (!(sc.p[0] = tensor__cuda_alloc(nrows * sizeof(double), c->error, sizeof c->error))) return 1;
    if (!(sc.p[1] = tensor__cuda_alloc(nrows * sizeof(double), c->error, sizeof c->error))) return 1;
    a.loss = (double *)sc.p[0];
    a.div = (double *)sc.p[1];
    if (!(a.bad = tensor__cuda_flag_new(c, s))) return 1;
    if (a.rows > 0) {
        TENSOR__CUDA_LAUNCH_BEGIN();
        tensor__cuda_cex_kernel<<<tensor__cuda_blocks(a.rows), TENSOR__CUDA_THREADS, 0, s>>>(a);
        if (tensor__cuda_launch_check(c)) { tensor__cuda_free(a.bad); return 1; }
    }
    unsigned long long pos;
    if (tensor__cuda_flag_read(c, s, a.bad, &pos)) return 1;
    if (pos != ULLONG_MAX) return tensor__cuda_bad_target(c, s, t, pos, a.C);
    if (reduction == TENSOR_REDUCTION_NONE) return 0;
    TENSOR__CUDA_LAUNCH_BEGIN();
    tensor__cuda_cex_final<<<1, TENSOR__CUDA_NN_THREADS, 0, s>>>(a.loss, a.div, a.rows, reduction == TENSOR_REDUCTION_MEAN, (char *)c->out.data, c->out.dtype);
    return tensor__cuda_launch_check(c);
}
static int tensor__cuda_cross_entropy_ex(tensor__dev_call *c) { return tensor__cuda_class_loss(c, false); }
static int tensor__cuda_nll_loss_ex(tensor__dev_call *c) { return tensor__cuda_class_loss(c, true); }

/* ---- embedding: in[0] weight [V, D] (any dtype), in[1] indices (i64 or i32), out
   [*indices.shape, D] = weight rows, bits copied. Every index is checked first (as the CPU, which
   fails on a bad index even when D is 0); the first bad one in row-major order is reported. ---- */
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_embedding_check(tensor__cuda_offsets oi, const char *ix, tensor_dtype id, int64_t V, int64_t n, unsigned long long *bad) {
    TENSOR__CUDA_LOOP(q, n) {
        int64_t off[1];
        tensor__cuda_offsets_get<1>(oi, q, off);
        int64_t v = tensor__cuda_load_i64(ix + off[0], id);
        if (v < 0 || v >= V) atomicMin(bad, (unsigned long long)q);
    }
}
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_embedding_kernel(tensor__cuda_offsets oo, tensor__cuda_offsets oi, char *out, const char *ix, tensor_dtype id,
                                                                                     const char *w, int64_t ws0, int64_t ws1, int size, int64_t D, int64_t n) {
    TENSOR__CUDA_LOOP(i, n) {
        int64_t q = i / D, d = i - q * D, oof[1], iof[1];
        tensor__cuda_offsets_get<1>(oo, i, oof);
        tensor__cuda_offsets_get<1>(oi, q, iof);
        int64_t v = tensor__cuda_load_i64(ix + iof[0], id); /* checked already */
        tensor__cuda_store_bits(out + oof[0], size, tensor__cuda_load_bits(w + (v * ws0 + d * ws1) * size, size));
    }
}
static int tensor__cuda_embedding(tensor__dev_call *c) {
    if (c->n_in != 2) return tensor__cuda_fail(c, "embedding: expected 2 inputs, got %d", c->n_in);
    const tensor__dev_operand &w = c->in[0], &ix = c->in[1], &out = c->out;
    if (!tensor__cuda_operand_ok(c, w, "input") || w.by_value || !tensor__cuda_operand_ok(c, ix, "input") || ix.by_value ||
        !tensor__cuda_operand_ok(c, out, "output") || out.by_value)
        return 1;
    if (w.ndim != 2 || (ix.dtype != TENSOR_I64 && ix.dtype != TENSOR_I32) || out.ndim != ix.ndim + 1 || out.dtype != w.dtype)
        return tensor__cuda_fail(c, "embedding: invalid operands");
    int64_t V = w.shape[0], D = w.shape[1], n = tensor__cuda_numel(ix);
    if (n == 0) return 0;
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    const tensor__dev_operand *iops[1] = {&ix};
    tensor__cuda_offsets oi;
    tensor__cuda_offsets_init(&oi, 1, iops, false);
    unsigned long long *bad = tensor__cuda_flag_new(c, s);
    if (!bad) return 1;
    TENSOR__CUDA_LAUNCH_BEGIN();
    tensor__cuda_embedding_check<<<tensor__cuda_blocks(n), TENSOR__CUDA_THREADS, 0, s>>>(oi, (const char *)ix.data, ix.dtype, V, n, bad);
    if (tensor__cuda_launch_check(c)) { tensor__cuda_free(bad); return 1; }
    unsigned long long pos;
    if (tensor__cuda_flag_read(c, s, bad, &pos)) return 1;
    if (pos != ULLONG_MAX) {
        int64_t v = 0;
        if (tensor__cuda_int_at(c, s, ix, pos, &v)) return 1;
        char shape[160];
        tensor__cuda_shape_text(shape, sizeof shape, w);
        return tensor__cuda_fail(c, "index %lld is out of range for %lld embeddings (weight shape %s)", (long long)v, (long long)V, shape);
    }
    if (D == 0) return 0;
    const tensor__dev_operand *oops[1] = {&out};
    tensor__cuda_offsets oo;
    tensor__cuda_offsets_init(&oo, 1, oops, false);
    TENSOR__CUDA_LAUNCH_BEGIN();
    tensor__cuda_embedding_kernel<<<tensor__cuda_blocks(n * D), TENSOR__CUDA_THREADS, 0, s>>>(oo, oi, (char *)out.data, (const char *)ix.data, ix.dtype, (const char *)w.data,
                                                                                              w.strides[0], w.strides[1], tensor__cuda_size(w.dtype), D, n * D);
    return tensor__cuda_launch_check(c);
}

/* ---- matmul: in[0] a, in[1] b (one dtype, not bool), out [batch..., n, m] in that dtype (the n
   or m dim absent where a or b is 1-D), batch dims broadcast. Floats through cuBLAS: f32 with
   CUBLAS_COMPUTE_32F (CUBLAS_COMPUTE_32F_FAST_TF32 when set_allow_tf32 is on), f64 with
   CUBLAS_COMPUTE_64F, f16/bf16 with f32 accumulation (reduced-precision reductions disallowed)
   rounded once into the output's dtype, as the CPU. Integers: a tiled kernel in wrapping int64.
   k == 0 gives zeros. ---- */
struct tensor__cuda_mm {
    int64_t n, m, k;
    int64_t a_rs, a_cs, b_rs, b_cs;   /* elements */
    int nb;
    int64_t bshape[TENSOR_MAX_DIMS], a_bs[TENSOR_MAX_DIMS], b_bs[TENSOR_MAX_DIMS];
    int64_t batches;
};
static void tensor__cuda_mm_geometry(const tensor__dev_operand &a, const tensor__dev_operand &b, const tensor__dev_operand &out, tensor__cuda_mm *g) {
    memset(g, 0, sizeof *g);
    int ad = a.ndim, bd = b.ndim;
    g->k = a.shape[ad - 1];
    g->a_cs = a.strides[ad - 1];
    if (ad >= 2) { g->n = a.shape[ad - 2]; g->a_rs = a.strides[ad - 2]; }
    else { g->n = 1; g->a_rs = 0; }
    if (bd >= 2) { g->m = b.shape[bd - 1]; g->b_cs = b.strides[bd - 1]; g->b_rs = b.strides[bd - 2]; }
    else { g->m = 1; g->b_cs = 0; g->b_rs = b.strides[0]; }
    int abn = ad >= 2 ? ad - 2 : 0, bbn = bd >= 2 ? bd - 2 : 0;
    g->nb = out.ndim - (ad >= 2) - (bd >= 2);
    g->batches = 1;
    for (int i = 0; i < g->nb; i++) {
        int ai = i - (g->nb - abn), bi = i - (g->nb - bbn);
        g->bshape[i] = out.shape[i];
        g->a_bs[i] = (ai >= 0 && a.shape[ai] != 1) ? a.strides[ai] : 0;
        g->b_bs[i] = (bi >= 0 && b.shape[bi] != 1) ? b.strides[bi] : 0;
        g->batches *= out.shape[i];
    }
}

/* Integer matmul: 16 x 16 tiles of out per block, operands read through their strides. */
#define TENSOR__CUDA_MM_TILE 16
struct tensor__cuda_mm_int_args {
    tensor__cuda_mm g;
    const char *a, *b;
    char *o;                          /* contiguous [batches, n, m] */
    tensor_dtype ad, bd, od;
};
__global__ void __launch_bounds__(TENSOR__CUDA_MM_TILE * TENSOR__CUDA_MM_TILE) tensor__cuda_mm_int_kernel(tensor__cuda_mm_int_args p) {
    __shared__ uint64_t ta[TENSOR__CUDA_MM_TILE][TENSOR__CUDA_MM_TILE], tb[TENSOR__CUDA_MM_TILE][TENSOR__CUDA_MM_TILE];
    const tensor__cuda_mm &g = p.g;
    const int tx = threadIdx.x, ty = threadIdx.y;
    const int sa = tensor__cuda_size(p.ad), sb = tensor__cuda_size(p.bd), so = tensor__cuda_size(p.od);
    int64_t tiles_n = (g.n + TENSOR__CUDA_MM_TILE - 1) / TENSOR__CUDA_MM_TILE, tiles_m = (g.m + TENSOR__CUDA_MM_TILE - 1) / TENSOR__CUDA_MM_TILE;
    for (int64_t bi = blockIdx.z; bi < g.batches; bi += gridDim.z) {
        int64_t ao = 0, bo = 0, rest = bi;
        for (int d = g.nb - 1; d >= 0; d--) {
            int64_t i = rest % g.bshape[d];
            rest /= g.bshape[d];
            ao += i * g.a_bs[d];
            bo += i * g.b_bs[d];
        }
        for (int64_t tr = blockIdx.y; tr < tiles_n; tr += gridDim.y)
            for (int64_t tc = blockIdx.x; tc < tiles_m; tc += gridDim.x) {
                int64_t i = tr * TENSOR__CUDA_MM_TILE + ty, j = tc * TENSOR__CUDA_MM_TILE + tx;
                uint64_t acc = 0;
                for (int64_t k0 = 0; k0 < g.k; k0 += TENSOR__CUDA_MM_TILE) {
                    int64_t ka = k0 + tx, kb = k0 + ty;
                    ta[ty][tx] = (i < g.n && ka < g.k) ? (uint64_t)tensor__cuda_load_i64(p.a + (ao + i * g.a_rs + ka * g.a_cs) * sa, p.ad) : 0;
                    tb[ty][tx] = (kb < g.k && j < g.m) ? (uint64_t)tensor__cuda_load_i64(p.b + (bo + kb * g.b_rs + j * g.b_cs) * sb, p.bd) : 0;
                    __syncthreads();
#pragma unroll
                    for (int q = 0; q < TENSOR__CUDA_MM_TILE; q++) acc += ta[ty][q] * tb[q][tx];
                    __syncthreads();
                }
                if (i < g.n && j < g.m) tensor__cuda_store_i64(p.o + ((bi * g.n + i) * g.m + j) * so, p.od, (int64_t)acc);
            }
    }
}

/* cuBLAS: one handle per host thread, bound to the thread's stream, made on first use and
   destroyed when the thread ends (before its stream: it is made after the stream's owner). */
struct tensor__cuda_blas_thread {
    cublasHandle_t h = nullptr;
    ~tensor__cuda_blas_thread() {
        if (h) (void)cublasDestroy(h);
        (void)cudaGetLastError();
    }
};
static int tensor__cuda_fail_blas(tensor__dev_call *c, const char *what, cublasStatus_t st) {
    return tensor__cuda_fail(c, "cuBLAS error: %s %s: %s", tensor__cuda_op_name(c->op), what, cublasGetStatusString(st));
}
static bool tensor__cuda_blas(tensor__dev_call *c, cublasHandle_t *out) {
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return false;
    static thread_local tensor__cuda_blas_thread t;
    if (!t.h) {
        cublasHandle_t h = nullptr;
        cublasStatus_t st = cublasCreate(&h);
        if (st != CUBLAS_STATUS_SUCCESS) { tensor__cuda_fail_blas(c, "cublasCreate", st); return false; }
        st = cublasSetStream(h, s);
        if (st == CUBLAS_STATUS_SUCCESS) st = cublasSetMathMode(h, (cublasMath_t)(CUBLAS_DEFAULT_MATH | CUBLAS_MATH_DISALLOW_REDUCED_PRECISION_REDUCTION));
        if (st != CUBLAS_STATUS_SUCCESS) {
            (void)cublasDestroy(h);
            tensor__cuda_fail_blas(c, "setting up its handle", st);
            return false;
        }
        t.h = h;
    }
    *out = t.h;
    return true;
}

/* A matrix of R x C elements rs, cs apart, as cuBLAS takes it: *trans false when its rows are
   dense (read as the column-major C x R matrix with leading dimension *ld), true when its columns
   are (the column-major R x C matrix, transposed by cuBLAS). False when neither. */
static bool tensor__cuda_mm_layout(int64_t R, int64_t C, int64_t rs, int64_t cs, bool *trans, int64_t *ld) {
    int64_t one = 1;
    if ((C <= 1 || cs == 1) && (R <= 1 || rs >= (C > one ? C : one))) {
        *trans = false;
        *ld = R <= 1 ? (C > one ? C : one) : rs;
        return true;
    }
    if ((R <= 1 || rs == 1) && (C <= 1 || cs >= (R > one ? R : one))) {
        *trans = true;
        *ld = C <= 1 ? (R > one ? R : one) : cs;
        return true;
    }
    return false;
}
/* The one stride that steps through the batches of an operand (batch strides bs), if there is. */
static bool tensor__cuda_mm_uniform(const tensor__cuda_mm &g, const int64_t *bs, int64_t *stride) {
    *stride = 0;
    int64_t next = -1; /* what the next outer dim's stride must be; -1: none seen */
    for (int d = g.nb - 1; d >= 0; d--) {
        if (g.bshape[d] == 1) continue;
        if (next < 0) *stride = bs[d];
        else if (bs[d] != next) return false;
        next = bs[d] * g.bshape[d];
    }
    return *stride >= 0;
}
/* Operand x (matrix dims R x C at strides rs, cs, batch strides bs) copied densely, broadcast to
   every batch, into scratch: [batches, R, C]. NULL after an error. */
static void *tensor__cuda_mm_dense(tensor__dev_call *c, const tensor__dev_operand &x, const tensor__cuda_mm &g, const int64_t *bs, int64_t R, int64_t C, int64_t rs, int64_t cs) {
    tensor__dev_operand dst, src;
    memset(&dst, 0, sizeof dst);
    memset(&src, 0, sizeof src);
    int nd = 0;
    for (int d = 0; d < g.nb; d++) {
        if (g.bshape[d] == 1) continue;
        if (nd >= TENSOR_MAX_DIMS) { tensor__cuda_fail(c, "matmul: too many dims to copy an operand on the device"); return nullptr; }
        src.shape[nd] = g.bshape[d];
        src.strides[nd++] = bs[d];
    }
    if (nd + 2 > TENSOR_MAX_DIMS) { tensor__cuda_fail(c, "matmul: too many dims to copy an operand on the device"); return nullptr; }
    src.shape[nd] = R;
    src.strides[nd++] = rs;
    src.shape[nd] = C;
    src.strides[nd++] = cs;
    src.ndim = dst.ndim = nd;
    src.data = x.data;
    src.dtype = dst.dtype = x.dtype;
    int64_t step = 1;
    for (int d = nd - 1; d >= 0; d--) { dst.shape[d] = src.shape[d]; dst.strides[d] = step; step *= src.shape[d]; }
    dst.data = tensor__cuda_alloc((size_t)step * (size_t)tensor__cuda_size(x.dtype), c->error, sizeof c->error);
    if (!dst.data) return nullptr;
    if (tensor__cuda_copy_run(c, dst, src)) { tensor__cuda_free(dst.data); return nullptr; }
    return dst.data;
}

/* out (contiguous [batches, n, m] at o) = a @ b through cuBLAS. */
static int tensor__cuda_mm_blas(tensor__dev_call *c, const tensor__dev_operand &a, const tensor__dev_operand &b, tensor__cuda_mm g, char *o) {
    cublasHandle_t h;
    if (!tensor__cuda_blas(c, &h)) return 1;
    tensor__cuda_scratch sc;
    const char *pa = (const char *)a.data, *pb = (const char *)b.data;
    int esz = tensor__cuda_size(a.dtype);
    bool ta, tb;
    int64_t lda, ldb, sa, sb;
    if (!tensor__cuda_mm_layout(g.n, g.k, g.a_rs, g.a_cs, &ta, &lda) || !tensor__cuda_mm_uniform(g, g.a_bs, &sa)) {
        if (!(sc.p[0] = tensor__cuda_mm_dense(c, a, g, g.a_bs, g.n, g.k, g.a_rs, g.a_cs))) return 1;
        pa = (const char *)sc.p[0];
        g.a_rs = g.k;
        g.a_cs = 1;
        tensor__cuda_mm_layout(g.n, g.k, g.a_rs, g.a_cs, &ta, &lda);
        sa = g.n * g.k;
    }
    if (!tensor__cuda_mm_layout(g.k, g.m, g.b_rs, g.b_cs, &tb, &ldb) || !tensor__cuda_mm_uniform(g, g.b_bs, &sb)) {
        if (!(sc.p[1] = tensor__cuda_mm_dense(c, b, g, g.b_bs, g.k, g.m, g.b_rs, g.b_cs))) return 1;
        pb = (const char *)sc.p[1];
        g.b_rs = g.m;
        g.b_cs = 1;
        tensor__cuda_mm_layout(g.k, g.m, g.b_rs, g.b_cs, &tb, &ldb);
        sb = g.k * g.m;
    }
    int64_t n = g.n, batches = g.batches;
    /* b shared by every batch and a's batches evenly spaced dense rows: one tall GEMM */
    if (batches > 1 && sb == 0 && !ta) {
        bool t2;
        int64_t ld2;
        int64_t rs = n == 1 ? sa : g.a_rs;
        if ((n == 1 || sa == n * g.a_rs) && tensor__cuda_mm_layout(n * batches, g.k, rs, g.a_cs, &t2, &ld2) && !t2) {
            n *= batches;
            batches = 1;
            lda = ld2;
        }
    }
    cudaDataType_t dt;
    cublasComputeType_t ct;
    float one32 = 1.0f, zero32 = 0.0f;
    double one64 = 1.0, zero64 = 0.0;
    const void *alpha = &one32, *beta = &zero32;
    switch (a.dtype) {
    case TENSOR_F32: dt = CUDA_R_32F; ct = tensor__cuda_tf32.load() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F; break;
    case TENSOR_F64: dt = CUDA_R_64F; ct = CUBLAS_COMPUTE_64F; alpha = &one64; beta = &zero64; break;
    case TENSOR_F16: dt = CUDA_R_16F; ct = CUBLAS_COMPUTE_32F; break;
    case TENSOR_BF16: dt = CUDA_R_16BF; ct = CUBLAS_COMPUTE_32F; break;
    default: return tensor__cuda_fail(c, "matmul: no cuBLAS path for this dtype");
    }
    /* row-major out = a b is column-major out^T = b^T a^T: cuBLAS's A is b (m x k), its B is a */
    const int64_t chunk = 65535;
    for (int64_t b0 = 0; b0 < batches; b0 += chunk) {
        int64_t cnt = batches - b0 < chunk ? batches - b0 : chunk;
        cublasStatus_t st = cublasGemmStridedBatchedEx_64(h, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, g.m, n, g.k, alpha,
                                                          pb + b0 * sb * esz, dt, ldb, sb, pa + b0 * sa * esz, dt, lda, sa, beta,
                                                          o + b0 * n * g.m * esz, dt, g.m, n * g.m, cnt, ct, CUBLAS_GEMM_DEFAULT);
        if (st != CUBLAS_STATUS_SUCCESS) return tensor__cuda_fail_blas(c, "cublasGemmStridedBatchedEx", st);
    }
    return 0;
}

static int tensor__cuda_matmul(tensor__dev_call *c) {
    if (c->n_in != 2) return tensor__cuda_fail(c, "matmul: expected 2 inputs, got %d", c->n_in);
    const tensor__dev_operand &a = c->in[0], &b = c->in[1], &out = c->out;
    if (!tensor__cuda_operand_ok(c, a, "input") || a.by_value || !tensor__cuda_operand_ok(c, b, "input") || b.by_value ||
        !tensor__cuda_operand_ok(c, out, "output") || out.by_value)
        return 1;
    if (a.ndim < 1 || b.ndim < 1 || a.dtype != b.dtype || out.dtype != a.dtype || a.dtype == TENSOR_BOOL)
        return tensor__cuda_fail(c, "matmul: invalid operands");
    tensor__cuda_mm g;
    tensor__cuda_mm_geometry(a, b, out, &g);
    if (tensor__cuda_numel(out) == 0) return 0;
    if (g.k == 0) return tensor__cuda_fill_run(c, out, 0);
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    /* the result goes to out when it is dense, else to scratch and then through the copy kernel */
    bool dense = true;
    int64_t step = 1;
    for (int d = out.ndim - 1; d >= 0; d--) {
        if (out.shape[d] != 1 && out.strides[d] != step) dense = false;
        step *= out.shape[d];
    }
    int esz = tensor__cuda_size(out.dtype);
    tensor__cuda_scratch sc;
    char *o = (char *)out.data;
    if (!dense) {
        if (!(sc.p[0] = tensor__cuda_alloc((size_t)step * (size_t)esz, c->error, sizeof c->error))) return 1;
        o = (char *)sc.p[0];
    }
    if (tensor__cuda_is_float(a.dtype)) {
        if (tensor__cuda_mm_blas(c, a, b, g, o)) return 1;
    } else {
        tensor__cuda_mm_int_args p;
        p.g = g;
        p.a = (const char *)a.data;
        p.b = (const char *)b.data;
        p.o = o;
        p.ad = a.dtype;
        p.bd = b.dtype;
        p.od = out.dtype;
        int64_t tn = (g.n + TENSOR__CUDA_MM_TILE - 1) / TENSOR__CUDA_MM_TILE, tm = (g.m + TENSOR__CUDA_MM_TILE - 1) / TENSOR__CUDA_MM_TILE;
        dim3 grid((unsigned)(tm < 65535 ? tm : 65535), (unsigned)(tn < 65535 ? tn : 65535), (unsigned)(g.batches < 65535 ? g.batches : 65535));
        TENSOR__CUDA_LAUNCH_BEGIN();
        tensor__cuda_mm_int_kernel<<<grid, dim3(TENSOR__CUDA_MM_TILE, TENSOR__CUDA_MM_TILE), 0, s>>>(p);
        if (tensor__cuda_launch_check(c)) return 1;
    }
    if (dense) return 0;
    tensor__dev_operand src = out;
    src.data = o;
    step = 1;
    for (int d = out.ndim - 1; d >= 0; d--) { src.strides[d] = step; step *= out.shape[d]; }
    return tensor__cuda_copy_run(c, out, src);
}

// >>cuda-index -----------------------------------------------------------------------------------
/* The shape and index ops with the call records of their CPU kernels (>>shape, >>nn's dropout):
   cat, flip and pad are converting copies (tensor__cuda_copy_run) between crafted views of the
   operands (a window of out, a view with a negative stride); repeat, tril/triu, gather,
   scatter_add, index_select, masked_fill and dropout are kernels of their own. The index math of
   each element is a __host__ __device__ function, so it can be checked on the host. A bad index
   raises the device flag of >>cuda-nn (the first bad position in row-major order, by atomicMin),
   read back after the launch and reported with the CPU's message. */

/* t with dim d narrowed to [start, start + len) (a window: same strides, data moved). */
static tensor__dev_operand tensor__cuda_narrow(const tensor__dev_operand &t, int d, int64_t start, int64_t len) {
    tensor__dev_operand w = t;
    w.data = (char *)t.data + start * t.strides[d] * tensor__cuda_size(t.dtype);
    w.shape[d] = len;
    return w;
}

/* ---- flip: in[0] t, ip[0] the (wrapped) dim; out = t with dim reversed: a copy from a view
   that starts at t's last element along dim and steps backwards. A 0-dim t is copied. ---- */
static tensor__dev_operand tensor__cuda_flipped(const tensor__dev_operand &t, int d) {
    tensor__dev_operand w = t;
    w.data = (char *)t.data + (t.shape[d] - 1) * t.strides[d] * tensor__cuda_size(t.dtype);
    w.strides[d] = -t.strides[d];
    return w;
}
static int tensor__cuda_flip(tensor__dev_call *c) {
    if (c->n_in != 1) return tensor__cuda_fail(c, "flip: expected 1 input, got %d", c->n_in);
    const tensor__dev_operand &t = c->in[0];
    if (!tensor__cuda_operand_ok(c, t, "input") || t.by_value) return 1;
    if (tensor__cuda_numel(t) == 0) return 0;
    if (t.ndim == 0) return tensor__cuda_copy_run(c, c->out, t);
    int d = (int)c->ip[0];
    if (d < 0 || d >= t.ndim) return tensor__cuda_fail(c, "flip: invalid dim %d for an input of %d dims", d, t.ndim);
    return tensor__cuda_copy_run(c, c->out, tensor__cuda_flipped(t, d));
}

/* ---- repeat: in[0] t, n_dims = out's ndim, ip[0..n_dims-1] the repeats; out[i] = t[i mod P]
   per dim, P = t's shape with leading 1s (bits copied: one dtype). One kernel over out. ---- */
struct tensor__cuda_repeat_geom {
    int nd;
    int64_t oshape[TENSOR_MAX_DIMS], ostride[TENSOR_MAX_DIMS];  /* out: elements, bytes */
    int64_t sshape[TENSOR_MAX_DIMS], sstride[TENSOR_MAX_DIMS];  /* t with leading 1s (stride 0) */
};
/* The byte offsets in out and t of out's row-major element i. */
TENSOR__CUDA_HD void tensor__cuda_repeat_offsets(const tensor__cuda_repeat_geom &g, int64_t i, int64_t *oo, int64_t *so) {
    int64_t o = 0, s = 0;
    for (int d = g.nd - 1; d >= 0; d--) {
        int64_t q = i / g.oshape[d], idx = i - q * g.oshape[d];
        i = q;
        o += idx * g.ostride[d];
        s += (idx % g.sshape[d]) * g.sstride[d];
    }
    *oo = o;
    *so = s;
}
/* Fills g from the operands; false if they do not fit the repeats. */
static bool tensor__cuda_repeat_geom_of(const tensor__dev_operand &t, const tensor__dev_operand &out, const int64_t *reps, int nreps, tensor__cuda_repeat_geom *g) {
    memset(g, 0, sizeof *g);
    int nd = out.ndim, lead = nd - t.ndim;
    if (nreps != nd || lead < 0) return false;
    int size = tensor__cuda_size(t.dtype);
    g->nd = nd;
    for (int d = 0; d < nd; d++) {
        g->sshape[d] = d < lead ? 1 : t.shape[d - lead];
        g->sstride[d] = d < lead ? 0 : t.strides[d - lead] * size;
        g->oshape[d] = out.shape[d];
        g->ostride[d] = out.strides[d] * size;
        if (reps[d] < 0 || g->sshape[d] * reps[d] != out.shape[d]) return false;
    }
    return true;
}
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_repeat_kernel(tensor__cuda_repeat_geom g, char *out, const char *src, int size, int64_t n) {
    TENSOR__CUDA_LOOP(i, n) {
        int64_t oo, so;
        tensor__cuda_repeat_offsets(g, i, &oo, &so);
        tensor__cuda_store_bits(out + oo, size, tensor__cuda_load_bits(src + so, size));
    }
}
static int tensor__cuda_repeat(tensor__dev_call *c) {
    if (c->n_in != 1) return tensor__cuda_fail(c, "repeat: expected 1 input, got %d", c->n_in);
    const tensor__dev_operand &t = c->in[0], &out = c->out;
    if (!tensor__cuda_operand_ok(c, t, "input") || t.by_value || !tensor__cuda_operand_ok(c, out, "output") || out.by_value) return 1;
    if (out.dtype != t.dtype) return tensor__cuda_fail(c, "repeat: the output's dtype differs from the input's");
    int64_t n = tensor__cuda_numel(out);
    if (n == 0) return 0;
    tensor__cuda_repeat_geom g;
    if (!tensor__cuda_repeat_geom_of(t, out, c->ip, c->n_dims, &g)) return tensor__cuda_fail(c, "repeat: the output's shape does not match the input and the repeats");
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    TENSOR__CUDA_LAUNCH_BEGIN();
    tensor__cuda_repeat_kernel<<<tensor__cuda_blocks(n), TENSOR__CUDA_THREADS, 0, s>>>(g, (char *)out.data, (const char *)t.data, tensor__cuda_size(t.dtype), n);
    return tensor__cuda_launch_check(c);
}

/* ---- pad: in[0] t, ip[0] npad, ip[1] the CPU's pads array (host memory, valid during the call),
   p[0] the value; dim nd-1-k gets pads[2k] before and pads[2k+1] after (negative: a crop). out =
   the value (stored as the CPU's tensor__store_f64 does), then the overlap of t and out copied in
   (bits: one dtype). ---- */
/* The windows of t (*src) and out (*dst) that overlap after the pads; false when nothing of t
   survives the crops. */
static bool tensor__cuda_pad_windows(const tensor__dev_operand &t, const tensor__dev_operand &out, int npairs, const int64_t *pads, tensor__dev_operand *src, tensor__dev_operand *dst) {
    *src = t;
    *dst = out;
    for (int k = 0; k < npairs; k++) {
        int d = out.ndim - 1 - k;
        int64_t before = pads[2 * k], after = pads[2 * k + 1];
        int64_t in_start = before < 0 ? -before : 0, out_start = before > 0 ? before : 0;
        int64_t len = t.shape[d] - in_start + (after < 0 ? after : 0);
        if (len <= 0) return false;
        *src = tensor__cuda_narrow(*src, d, in_start, len);
        *dst = tensor__cuda_narrow(*dst, d, out_start, len);
    }
    return true;
}
static int tensor__cuda_pad(tensor__dev_call *c) {
    if (c->n_in != 1) return tensor__cuda_fail(c, "pad: expected 1 input, got %d", c->n_in);
    const tensor__dev_operand &t = c->in[0], &out = c->out;
    if (!tensor__cuda_operand_ok(c, t, "input") || t.by_value || !tensor__cuda_operand_ok(c, out, "output") || out.by_value) return 1;
    int64_t npad = c->ip[0];
    const int64_t *pads = (const int64_t *)(uintptr_t)c->ip[1];
    if (npad < 0 || npad % 2 || npad / 2 > out.ndim || out.ndim != t.ndim || out.dtype != t.dtype || (npad > 0 && !pads))
        return tensor__cuda_fail(c, "pad: invalid call (npad %lld)", (long long)npad);
    if (tensor__cuda_fill_run(c, out, tensor__cuda_bits_of(c->p[0], out.dtype))) return 1;
    tensor__dev_operand src, dst;
    if (!tensor__cuda_pad_windows(t, out, (int)(npad / 2), pads, &src, &dst)) return 0;
    if (tensor__cuda_numel(dst) == 0) return 0;
    return tensor__cuda_copy_run(c, dst, src);
}

/* ---- tril, triu: in[0] t [..., M, N], ip[0] diagonal; out = t where j - i <= diagonal (tril) or
   >= diagonal (triu), else zero bits (0 in every dtype). One kernel: keep or zero each element. ---- */
/* Whether out's row-major element lin of a [..., m, n] tensor is kept. */
TENSOR__CUDA_HD bool tensor__cuda_tri_keep(int64_t lin, int64_t m, int64_t n, int64_t diag, bool lower) {
    int64_t r = lin / n, j = lin - r * n, i = r % m;
    return lower ? j - i <= diag : j - i >= diag; /* j - i lies in (-m, n): no overflow */
}
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_tri_kernel(tensor__cuda_offsets o, char *out, const char *src, int size, int64_t m, int64_t ncols, int64_t diag,
                                                                                bool lower, int64_t n) {
    TENSOR__CUDA_LOOP(i, n) {
        int64_t off[2];
        tensor__cuda_offsets_get<2>(o, i, off);
        tensor__cuda_store_bits(out + off[0], size, tensor__cuda_tri_keep(i, m, ncols, diag, lower) ? tensor__cuda_load_bits(src + off[1], size) : 0);
    }
}
static int tensor__cuda_triangle(tensor__dev_call *c, bool lower) {
    if (c->n_in != 1) return tensor__cuda_fail(c, "%s: expected 1 input, got %d", tensor__cuda_op_name(c->op), c->n_in);
    const tensor__dev_operand &t = c->in[0], &out = c->out;
    if (!tensor__cuda_operand_ok(c, t, "input") || t.by_value || !tensor__cuda_operand_ok(c, out, "output") || out.by_value) return 1;
    if (out.ndim < 2 || out.ndim != t.ndim || out.dtype != t.dtype) return tensor__cuda_fail(c, "%s: invalid operands", tensor__cuda_op_name(c->op));
    int64_t n = tensor__cuda_numel(out);
    if (n == 0) return 0;
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    const tensor__dev_operand *ops[2] = {&out, &t};
    tensor__cuda_offsets o;
    tensor__cuda_offsets_init(&o, 2, ops, false);
    TENSOR__CUDA_LAUNCH_BEGIN();
    tensor__cuda_tri_kernel<<<tensor__cuda_blocks(n), TENSOR__CUDA_THREADS, 0, s>>>(o, (char *)out.data, (const char *)t.data, tensor__cuda_size(t.dtype), out.shape[out.ndim - 2],
                                                                                    out.shape[out.ndim - 1], c->ip[0], lower, n);
    return tensor__cuda_launch_check(c);
}
static int tensor__cuda_tril(tensor__dev_call *c) { return tensor__cuda_triangle(c, true); }
static int tensor__cuda_triu(tensor__dev_call *c) { return tensor__cuda_triangle(c, false); }

/* ---- gather and scatter_add: in = {t, index (i64 or i32)[, src]}, ip[0] the (wrapped) dim; a
   0-dim tensor is seen as [1] (the CPU's tensor__geom). Element q (row-major over index) reads
   index value k, which must lie in [0, t.shape[dim]); its position with dim replaced by k is the
   element of t (gather) or of out (scatter_add) it reads or adds to, and its own position that of
   out (gather) or src (scatter_add). ---- */
struct tensor__cuda_scatter_geom {
    int nd, dim;
    int64_t shape[TENSOR_MAX_DIMS];                   /* index's */
    int64_t istride[TENSOR_MAX_DIMS];                 /* bytes: index */
    int64_t tstride[TENSOR_MAX_DIMS];                 /* t (gather), out (scatter_add) */
    int64_t sstride[TENSOR_MAX_DIMS];                 /* out (gather), src (scatter_add) */
    int64_t size;                                     /* the size of t (or out) along dim */
};
/* The byte offsets of element q: in index, in t / out with dim's component left out, in out / src. */
TENSOR__CUDA_HD void tensor__cuda_scatter_offsets(const tensor__cuda_scatter_geom &g, int64_t q, int64_t *io, int64_t *to, int64_t *so) {
    int64_t a = 0, b = 0, e = 0;
    for (int d = g.nd - 1; d >= 0; d--) {
        int64_t r = q / g.shape[d], idx = q - r * g.shape[d];
        q = r;
        a += idx * g.istride[d];
        e += idx * g.sstride[d];
        if (d != g.dim) b += idx * g.tstride[d];
    }
    *io = a;
    *to = b;
    *so = e;
}
/* A geometry's dims (0-dim as [1]) into shape (may be NULL) and byte strides; returns its ndim. */
static int tensor__cuda_geom_dims(const tensor__dev_operand &t, int64_t *shape, int64_t *stride) {
    int size = tensor__cuda_size(t.dtype);
    if (t.ndim == 0) {
        if (shape) shape[0] = 1;
        stride[0] = 0;
        return 1;
    }
    for (int d = 0; d < t.ndim; d++) {
        if (shape) shape[d] = t.shape[d];
        stride[d] = t.strides[d] * size;
    }
    return t.ndim;
}
/* g from index, the indexed tensor x (t or out) and the other one y (out or src); false if their
   dims disagree or an index dim is larger than y's or (but along dim) x's. */
static bool tensor__cuda_scatter_geom_of(const tensor__dev_operand &index, const tensor__dev_operand &x, const tensor__dev_operand &y, int dim, tensor__cuda_scatter_geom *g) {
    memset(g, 0, sizeof *g);
    int64_t xshape[TENSOR_MAX_DIMS], yshape[TENSOR_MAX_DIMS];
    g->nd = tensor__cuda_geom_dims(index, g->shape, g->istride);
    if (tensor__cuda_geom_dims(x, xshape, g->tstride) != g->nd || tensor__cuda_geom_dims(y, yshape, g->sstride) != g->nd) return false;
    if (dim < 0 || dim >= g->nd) return false;
    for (int d = 0; d < g->nd; d++)
        if (g->shape[d] > yshape[d] || (d != dim && g->shape[d] > xshape[d])) return false;
    g->dim = dim;
    g->size = xshape[dim];
    return true;
}
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_gather_kernel(tensor__cuda_scatter_geom g, char *out, const char *t, const char *ix, tensor_dtype id, int size,
                                                                                   int64_t n, unsigned long long *bad) {
    TENSOR__CUDA_LOOP(q, n) {
        int64_t io, to, so;
        tensor__cuda_scatter_offsets(g, q, &io, &to, &so);
        int64_t k = tensor__cuda_load_i64(ix + io, id);
        if (k < 0 || k >= g.size) { atomicMin(bad, (unsigned long long)q); continue; }
        tensor__cuda_store_bits(out + so, size, tensor__cuda_load_bits(t + to + k * g.tstride[g.dim], size));
    }
}
/* The first bad index (row-major position pos of index), reported as the CPU does; always 1. */
static int tensor__cuda_bad_scatter_index(tensor__dev_call *c, cudaStream_t s, const tensor__dev_operand &index, unsigned long long pos, int dim, int64_t size) {
    int64_t v = 0;
    if (tensor__cuda_int_at(c, s, index, pos, &v)) return 1;
    return tensor__cuda_fail(c, "index %lld is out of bounds for dim %d with size %lld", (long long)v, dim, (long long)size);
}
/* Launches the gather or scatter_add kernel over index's n elements and reports a bad index. */
static int tensor__cuda_scatter_launch(tensor__dev_call *c, bool gather, const tensor__cuda_scatter_geom &g, const tensor__dev_operand &index, const tensor__dev_operand &x,
                                       const tensor__dev_operand &y, int64_t n);

static int tensor__cuda_gather(tensor__dev_call *c) {
    if (c->n_in != 2) return tensor__cuda_fail(c, "gather: expected 2 inputs, got %d", c->n_in);
    const tensor__dev_operand &t = c->in[0], &index = c->in[1], &out = c->out;
    if (!tensor__cuda_operand_ok(c, t, "input") || t.by_value || !tensor__cuda_operand_ok(c, index, "input") || index.by_value || !tensor__cuda_operand_ok(c, out, "output") ||
        out.by_value)
        return 1;
    if ((index.dtype != TENSOR_I64 && index.dtype != TENSOR_I32) || out.dtype != t.dtype) return tensor__cuda_fail(c, "gather: invalid operands");
    int64_t n = tensor__cuda_numel(index);
    if (n == 0) return 0; /* an empty index: its shape was not checked against t's */
    tensor__cuda_scatter_geom g;
    if (!tensor__cuda_scatter_geom_of(index, t, out, (int)c->ip[0], &g)) return tensor__cuda_fail(c, "gather: the index does not fit the input");
    return tensor__cuda_scatter_launch(c, true, g, index, t, out, n);
}

/* *q += *sp in dtype dt, atomically. f32, f64: atomicAdd (the order of colliding adds is the
   scheduler's, not the CPU's row-major order: sums of colliding floats may differ in the last
   bits); f16, bf16: a compare-and-swap of the aligned 32-bit word holding the element, each sum
   rounded to the dtype as the CPU's (load, add in double, store); integers wrap (exact in any
   order); bool: q || sp. u8 and bool through the word's compare-and-swap too. */
TENSOR__CUDA_D void tensor__cuda_atomic_acc(char *q, const char *sp, tensor_dtype dt) {
    switch (dt) {
    case TENSOR_F32: atomicAdd(reinterpret_cast<float *>(q), tensor__cuda_rd<float>(sp)); return;
    case TENSOR_F64: atomicAdd(reinterpret_cast<double *>(q), tensor__cuda_rd<double>(sp)); return;
    case TENSOR_I32: atomicAdd(reinterpret_cast<unsigned int *>(q), tensor__cuda_rd<unsigned int>(sp)); return;
    case TENSOR_I64: atomicAdd(reinterpret_cast<unsigned long long *>(q), tensor__cuda_rd<unsigned long long>(sp)); return;
    default: break;
    }
    uintptr_t addr = reinterpret_cast<uintptr_t>(q);
    unsigned int *word = reinterpret_cast<unsigned int *>(addr & ~(uintptr_t)3);
    unsigned int shift = (unsigned int)(addr & 3) * 8, mask = (dt == TENSOR_F16 || dt == TENSOR_BF16 ? 0xffffu : 0xffu) << shift;
    unsigned int old = *word, assumed;
    do {
        assumed = old;
        unsigned int cur = (assumed & mask) >> shift, next;
        if (dt == TENSOR_F16 || dt == TENSOR_BF16) {
            uint16_t h = (uint16_t)cur;
            char e[2];
            tensor__cuda_wr<uint16_t>(e, h);
            tensor__cuda_store_f64(e, dt, tensor__cuda_load_f64(e, dt) + tensor__cuda_load_f64(sp, dt));
            next = tensor__cuda_rd<uint16_t>(e);
        } else if (dt == TENSOR_BOOL) {
            next = (cur != 0 || tensor__cuda_rd<uint8_t>(sp) != 0) ? 1u : 0u;
        } else { /* u8 */
            next = (cur + tensor__cuda_rd<uint8_t>(sp)) & 0xffu;
        }
        old = atomicCAS(word, assumed, (assumed & ~mask) | (next << shift));
    } while (old != assumed);
}
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_scatter_add_kernel(tensor__cuda_scatter_geom g, char *out, const char *src, const char *ix, tensor_dtype id,
                                                                                        tensor_dtype dt, int64_t n, unsigned long long *bad) {
    TENSOR__CUDA_LOOP(q, n) {
        int64_t io, to, so;
        tensor__cuda_scatter_offsets(g, q, &io, &to, &so);
        int64_t k = tensor__cuda_load_i64(ix + io, id);
        if (k < 0 || k >= g.size) { atomicMin(bad, (unsigned long long)q); continue; }
        tensor__cuda_atomic_acc(out + to + k * g.tstride[g.dim], src + so, dt);
    }
}
static int tensor__cuda_scatter_launch(tensor__dev_call *c, bool gather, const tensor__cuda_scatter_geom &g, const tensor__dev_operand &index, const tensor__dev_operand &x,
                                       const tensor__dev_operand &y, int64_t n) {
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    unsigned long long *bad = tensor__cuda_flag_new(c, s);
    if (!bad) return 1;
    TENSOR__CUDA_LAUNCH_BEGIN();
    if (gather)
        tensor__cuda_gather_kernel<<<tensor__cuda_blocks(n), TENSOR__CUDA_THREADS, 0, s>>>(g, (char *)y.data, (const char *)x.data, (const char *)index.data, index.dtype,
                                                                                           tensor__cuda_size(x.dtype), n, bad);
    else
        tensor__cuda_scatter_add_kernel<<<tensor__cuda_blocks(n), TENSOR__CUDA_THREADS, 0, s>>>(g, (char *)x.data, (const char *)y.data, (const char *)index.data, index.dtype,
                                                                                                x.dtype, n, bad);
    if (tensor__cuda_launch_check(c)) { tensor__cuda_free(bad); return 1; }
    unsigned long long pos;
    if (tensor__cuda_flag_read(c, s, bad, &pos)) return 1;
    if (pos != ULLONG_MAX) return tensor__cuda_bad_scatter_index(c, s, index, pos, g.dim, g.size);
    return 0;
}

/* scatter_add: in = {t, index, src (t's dtype)}; out = t, then out[...k...] += src[q]. */
static int tensor__cuda_scatter_add(tensor__dev_call *c) {
    if (c->n_in != 3) return tensor__cuda_fail(c, "scatter_add: expected 3 inputs, got %d", c->n_in);
    const tensor__dev_operand &t = c->in[0], &index = c->in[1], &src = c->in[2], &out = c->out;
    for (int i = 0; i < 3; i++)
        if (!tensor__cuda_operand_ok(c, c->in[i], "input") || c->in[i].by_value) return 1;
    if (!tensor__cuda_operand_ok(c, out, "output") || out.by_value) return 1;
    if ((index.dtype != TENSOR_I64 && index.dtype != TENSOR_I32) || out.dtype != t.dtype || src.dtype != t.dtype) return tensor__cuda_fail(c, "scatter_add: invalid operands");
    if (tensor__cuda_copy_run(c, out, t)) return 1;
    int64_t n = tensor__cuda_numel(index);
    if (n == 0) return 0; /* an empty index: its shape was not checked against src's */
    tensor__cuda_scatter_geom g;
    if (!tensor__cuda_scatter_geom_of(index, out, src, (int)c->ip[0], &g)) return tensor__cuda_fail(c, "scatter_add: the index does not fit the input or src");
    return tensor__cuda_scatter_launch(c, false, g, index, out, src, n);
}

/* ---- indexing (more): scatter, scatter_reduce, searchsorted (>>index) ----
   scatter and scatter_reduce: in = {t, index, src (t's dtype)}, ip[0] the (wrapped) dim,
   scatter_reduce's ip[1] the reduction (0 sum, 1 prod, 3 amax, 4 amin: the CPU's
   TENSOR__SCATTER_* values; scatter is -1, a plain store) and ip[2] include_self. out = t; a first
   kernel checks every index (and, without include_self, writes the reduction's identity at each
   target); the second combines. Colliding updates go through a compare-and-swap of the word that
   holds the element, each one rounded to the dtype as the CPU's loop rounds it (the order of
   colliding float sums and products is the scheduler's); colliding plain stores leave one of the
   values, as PyTorch's scatter does. */
TENSOR__CUDA_D void tensor__cuda_scatter_combine(char *q, const char *sp, tensor_dtype dt, int mode) {
    if (tensor__cuda_is_float(dt)) {
        double a = tensor__cuda_load_f64(q, dt), b = tensor__cuda_load_f64(sp, dt), r;
        switch (mode) {
        case 0: r = a + b; break;
        case 1: r = a * b; break;
        case 3: r = a != a || b != b ? (double)NAN : a > b ? a : b; break;
        default: r = a != a || b != b ? (double)NAN : a < b ? a : b; break;
        }
        tensor__cuda_store_f64(q, dt, r);
        return;
    }
    if (dt == TENSOR_BOOL) {
        uint8_t a = *(const uint8_t *)q != 0, b = *(const uint8_t *)sp != 0;
        *(uint8_t *)q = (uint8_t)(mode == 0 || mode == 3 ? (a | b) : (a & b));
        return;
    }
    int64_t a = tensor__cuda_load_i64(q, dt), b = tensor__cuda_load_i64(sp, dt), r;
    switch (mode) {
    case 0: r = (int64_t)((uint64_t)a + (uint64_t)b); break;
    case 1: r = (int64_t)((uint64_t)a * (uint64_t)b); break;
    case 3: r = a > b ? a : b; break;
    default: r = a < b ? a : b; break;
    }
    tensor__cuda_store_i64(q, dt, r);
}
TENSOR__CUDA_D void tensor__cuda_scatter_identity(char *q, tensor_dtype dt, int mode) {
    bool fl = tensor__cuda_is_float(dt);
    switch (mode) {
    case 1: tensor__cuda_store_f64(q, dt, 1); return;
    case 3:
        if (fl) tensor__cuda_store_f64(q, dt, -(double)INFINITY);
        else tensor__cuda_store_i64(q, dt, dt == TENSOR_I64 ? INT64_MIN : dt == TENSOR_I32 ? (int64_t)INT32_MIN : 0);
        return;
    case 4:
        if (fl) tensor__cuda_store_f64(q, dt, (double)INFINITY);
        else tensor__cuda_store_i64(q, dt, dt == TENSOR_I64 ? INT64_MAX : dt == TENSOR_I32 ? (int64_t)INT32_MAX : dt == TENSOR_U8 ? 255 : 1);
        return;
    default: tensor__cuda_store_f64(q, dt, 0); return;
    }
}
/* *q = *q op *sp atomically: a compare-and-swap loop on the 8-byte element, or on the aligned
   4-byte word holding a smaller one (the other bytes of the word kept as they are). */
TENSOR__CUDA_D void tensor__cuda_atomic_reduce(char *q, const char *sp, tensor_dtype dt, int mode) {
    int size = tensor__cuda_size(dt);
    if (size == 8) {
        unsigned long long *w = reinterpret_cast<unsigned long long *>(q);
        unsigned long long old = *w, assumed;
        do {
            assumed = old;
            char e[8];
            tensor__cuda_wr<unsigned long long>(e, assumed);
            tensor__cuda_scatter_combine(e, sp, dt, mode);
            old = atomicCAS(w, assumed, tensor__cuda_rd<unsigned long long>(e));
        } while (old != assumed);
        return;
    }
    uintptr_t addr = reinterpret_cast<uintptr_t>(q);
    unsigned int *word = reinterpret_cast<unsigned int *>(addr & ~(uintptr_t)3);
    unsigned int shift = (unsigned int)(addr & 3) * 8;
    unsigned int low = size == 4 ? 0xffffffffu : size == 2 ? 0xffffu : 0xffu, mask = low << shift;
    unsigned int old = *word, assumed;
    do {
        assumed = old;
        char e[4];
        tensor__cuda_wr<unsigned int>(e, (assumed & mask) >> shift); /* the element in e's first bytes (little-endian) */
        tensor__cuda_scatter_combine(e, sp, dt, mode);
        unsigned int next = tensor__cuda_rd<unsigned int>(e) & low;
        old = atomicCAS(word, assumed, (assumed & ~mask) | (next << shift));
    } while (old != assumed);
}
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_scatter_check_kernel(tensor__cuda_scatter_geom g, char *out, const char *ix, tensor_dtype id, tensor_dtype dt,
                                                                                          int mode, bool init, int64_t n, unsigned long long *bad) {
    TENSOR__CUDA_LOOP(q, n) {
        int64_t io, to, so;
        tensor__cuda_scatter_offsets(g, q, &io, &to, &so);
        int64_t k = tensor__cuda_load_i64(ix + io, id);
        if (k < 0 || k >= g.size) { atomicMin(bad, (unsigned long long)q); continue; }
        if (init) tensor__cuda_scatter_identity(out + to + k * g.tstride[g.dim], dt, mode);
    }
}
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_scatter_reduce_kernel(tensor__cuda_scatter_geom g, char *out, const char *src, const char *ix, tensor_dtype id,
                                                                                           tensor_dtype dt, int mode, int64_t n) {
    TENSOR__CUDA_LOOP(q, n) {
        int64_t io, to, so;
        tensor__cuda_scatter_offsets(g, q, &io, &to, &so);
        char *p = out + to + tensor__cuda_load_i64(ix + io, id) * g.tstride[g.dim]; /* checked by the first kernel */
        if (mode < 0) tensor__cuda_store_bits(p, tensor__cuda_size(dt), tensor__cuda_load_bits(src + so, tensor__cuda_size(dt)));
        else tensor__cuda_atomic_reduce(p, src + so, dt, mode);
    }
}
static int tensor__cuda_scatter_modes(tensor__dev_call *c, const char *what, int mode, bool include_self) {
    if (c->n_in != 3) return tensor__cuda_fail(c, "%s: expected 3 inputs, got %d", what, c->n_in);
    const tensor__dev_operand &t = c->in[0], &index = c->in[1], &src = c->in[2], &out = c->out;
    for (int i = 0; i < 3; i++)
        if (!tensor__cuda_operand_ok(c, c->in[i], "input") || c->in[i].by_value) return 1;
    if (!tensor__cuda_operand_ok(c, out, "output") || out.by_value) return 1;
    if ((index.dtype != TENSOR_I64 && index.dtype != TENSOR_I32) || out.dtype != t.dtype || src.dtype != t.dtype || mode < -1 || mode > 4 || mode == 2)
        return tensor__cuda_fail(c, "%s: invalid operands", what);
    if (tensor__cuda_copy_run(c, out, t)) return 1;
    int64_t n = tensor__cuda_numel(index);
    if (n == 0) return 0; /* an empty index: its shape was not checked against src's */
    tensor__cuda_scatter_geom g;
    if (!tensor__cuda_scatter_geom_of(index, out, src, (int)c->ip[0], &g)) return tensor__cuda_fail(c, "%s: the index does not fit the input or src", what);
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    unsigned long long *bad = tensor__cuda_flag_new(c, s);
    if (!bad) return 1;
    TENSOR__CUDA_LAUNCH_BEGIN();
    tensor__cuda_scatter_check_kernel<<<tensor__cuda_blocks(n), TENSOR__CUDA_THREADS, 0, s>>>(g, (char *)out.data, (const char *)index.data, index.dtype, out.dtype, mode,
                                                                                              mode >= 0 && !include_self, n, bad);
    if (tensor__cuda_launch_check(c)) { tensor__cuda_free(bad); return 1; }
    unsigned long long pos;
    if (tensor__cuda_flag_read(c, s, bad, &pos)) return 1;
    if (pos != ULLONG_MAX) return tensor__cuda_bad_scatter_index(c, s, index, pos, g.dim, g.size);
    TENSOR__CUDA_LAUNCH_BEGIN();
    tensor__cuda_scatter_reduce_kernel<<<tensor__cuda_blocks(n), TENSOR__CUDA_THREADS, 0, s>>>(g, (char *)out.data, (const char *)src.data, (const char *)index.data, index.dtype,
                                                                                               out.dtype, mode, n);
    return tensor__cuda_launch_check(c);
}
static int tensor__cuda_scatter(tensor__dev_call *c) { return tensor__cuda_scatter_modes(c, "scatter", -1, true); }
static int tensor__cuda_scatter_reduce(tensor__dev_call *c) { return tensor__cuda_scatter_modes(c, "scatter_reduce", (int)c->ip[1], c->ip[2] != 0); }

/* searchsorted: in = {sorted rows [..., M], values [..., K]} (contiguous, one dtype), ip[0] right;
   out (values' shape, i64 or i32) = the first i with row[i] >= v (right: > v), compared as the
   CPU does (in double for floats, int64 for integers). One thread per value. */
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_searchsorted_kernel(const char *seq, const char *val, char *out, tensor_dtype dt, tensor_dtype odt,
                                                                                         int64_t n, int64_t M, int64_t K, bool rows, bool right) {
    int esz = tensor__cuda_size(dt), osz = tensor__cuda_size(odt);
    bool fl = tensor__cuda_is_float(dt);
    TENSOR__CUDA_LOOP(q, n) {
        const char *row = seq + (rows ? (q / K) * M : 0) * esz;
        int64_t lo = 0, hi = M;
        while (lo < hi) {
            int64_t mid = lo + (hi - lo) / 2;
            bool go_right;
            if (fl) {
                double x = tensor__cuda_load_f64(row + mid * esz, dt), v = tensor__cuda_load_f64(val + q * esz, dt);
                go_right = right ? !(x > v) : !(x >= v);
            } else {
                int64_t x = tensor__cuda_load_i64(row + mid * esz, dt), v = tensor__cuda_load_i64(val + q * esz, dt);
                go_right = right ? !(x > v) : !(x >= v);
            }
            if (go_right) lo = mid + 1;
            else hi = mid;
        }
        tensor__cuda_store_i64(out + q * osz, odt, lo);
    }
}
/* t's strides are row-major contiguous (size-1 dims aside). */
static bool tensor__cuda_dense(const tensor__dev_operand &t) {
    int64_t st = 1;
    for (int d = t.ndim - 1; d >= 0; d--) {
        if (t.shape[d] != 1 && t.strides[d] != st) return false;
        st *= t.shape[d];
    }
    return true;
}
static int tensor__cuda_searchsorted(tensor__dev_call *c) {
    if (c->n_in != 2) return tensor__cuda_fail(c, "searchsorted: expected 2 inputs, got %d", c->n_in);
    const tensor__dev_operand &seq = c->in[0], &val = c->in[1], &out = c->out;
    for (int i = 0; i < 2; i++)
        if (!tensor__cuda_operand_ok(c, c->in[i], "input") || c->in[i].by_value) return 1;
    if (!tensor__cuda_operand_ok(c, out, "output") || out.by_value) return 1;
    if (seq.ndim < 1 || seq.dtype != val.dtype || (out.dtype != TENSOR_I64 && out.dtype != TENSOR_I32) || !tensor__cuda_dense(seq) || !tensor__cuda_dense(val) ||
        !tensor__cuda_dense(out) || tensor__cuda_numel(out) != tensor__cuda_numel(val))
        return tensor__cuda_fail(c, "searchsorted: invalid operands");
    int64_t n = tensor__cuda_numel(val), M = seq.shape[seq.ndim - 1], K = val.ndim ? val.shape[val.ndim - 1] : 1;
    if (n == 0) return 0;
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    TENSOR__CUDA_LAUNCH_BEGIN();
    tensor__cuda_searchsorted_kernel<<<tensor__cuda_blocks(n), TENSOR__CUDA_THREADS, 0, s>>>((const char *)seq.data, (const char *)val.data, (char *)out.data, val.dtype, out.dtype, n, M,
                                                                                             K, seq.ndim > 1, c->ip[0] != 0);
    return tensor__cuda_launch_check(c);
}

/* ---- index_select: in = {t, index (0-dim or 1-D, i64 or i32)}, ip[0] the (wrapped) dim; out =
   t's shape with dim's size = index's numel, slab p along dim = slab index[p] of t (bits). Every
   index is checked first, as the CPU does: the first bad one is reported. A 0-dim t is copied. ---- */
struct tensor__cuda_select_geom {
    int nd, dim;
    int64_t shape[TENSOR_MAX_DIMS], ostride[TENSOR_MAX_DIMS], tstride[TENSOR_MAX_DIMS]; /* out's shape; bytes */
    int64_t istride;                                                                     /* bytes */
};
/* The byte offsets of out's row-major element i in out and (but along dim) in t, and its position p along dim. */
TENSOR__CUDA_HD void tensor__cuda_select_offsets(const tensor__cuda_select_geom &g, int64_t i, int64_t *oo, int64_t *to, int64_t *p) {
    int64_t a = 0, b = 0, at = 0;
    for (int d = g.nd - 1; d >= 0; d--) {
        int64_t q = i / g.shape[d], idx = i - q * g.shape[d];
        i = q;
        a += idx * g.ostride[d];
        if (d == g.dim) at = idx;
        else b += idx * g.tstride[d];
    }
    *oo = a;
    *to = b;
    *p = at;
}
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_index_check(const char *ix, int64_t istride, tensor_dtype id, int64_t size, int64_t n, unsigned long long *bad) {
    TENSOR__CUDA_LOOP(p, n) {
        int64_t k = tensor__cuda_load_i64(ix + p * istride, id);
        if (k < 0 || k >= size) atomicMin(bad, (unsigned long long)p);
    }
}
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_index_select_kernel(tensor__cuda_select_geom g, char *out, const char *t, const char *ix, tensor_dtype id, int size,
                                                                                        int64_t n) {
    TENSOR__CUDA_LOOP(i, n) {
        int64_t oo, to, p;
        tensor__cuda_select_offsets(g, i, &oo, &to, &p);
        int64_t k = tensor__cuda_load_i64(ix + p * g.istride, id); /* checked already */
        tensor__cuda_store_bits(out + oo, size, tensor__cuda_load_bits(t + to + k * g.tstride[g.dim], size));
    }
}
static int tensor__cuda_index_select(tensor__dev_call *c) {
    if (c->n_in != 2) return tensor__cuda_fail(c, "index_select: expected 2 inputs, got %d", c->n_in);
    const tensor__dev_operand &t = c->in[0], &index = c->in[1], &out = c->out;
    if (!tensor__cuda_operand_ok(c, t, "input") || t.by_value || !tensor__cuda_operand_ok(c, index, "input") || index.by_value || !tensor__cuda_operand_ok(c, out, "output") ||
        out.by_value)
        return 1;
    int dim = (int)c->ip[0];
    int64_t n = tensor__cuda_numel(index);
    if ((index.dtype != TENSOR_I64 && index.dtype != TENSOR_I32) || index.ndim > 1 || out.dtype != t.dtype || out.ndim != t.ndim || (t.ndim > 0 && (dim < 0 || dim >= t.ndim)) ||
        (t.ndim > 0 && out.shape[dim] != n) || (t.ndim == 0 && n != 1))
        return tensor__cuda_fail(c, "index_select: invalid operands");
    int64_t size = t.ndim ? t.shape[dim] : 1;
    int64_t istride = (index.ndim ? index.strides[0] : 0) * tensor__cuda_size(index.dtype);
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    if (n > 0) { /* every index first: no partial work on a bad one */
        unsigned long long *bad = tensor__cuda_flag_new(c, s);
        if (!bad) return 1;
        TENSOR__CUDA_LAUNCH_BEGIN();
        tensor__cuda_index_check<<<tensor__cuda_blocks(n), TENSOR__CUDA_THREADS, 0, s>>>((const char *)index.data, istride, index.dtype, size, n, bad);
        if (tensor__cuda_launch_check(c)) { tensor__cuda_free(bad); return 1; }
        unsigned long long pos;
        if (tensor__cuda_flag_read(c, s, bad, &pos)) return 1;
        if (pos != ULLONG_MAX) {
            int64_t v = 0;
            if (tensor__cuda_int_at(c, s, index, pos, &v)) return 1;
            return tensor__cuda_fail(c, "index %lld is out of range for dim %d of size %lld", (long long)v, dim, (long long)size);
        }
    }
    int64_t total = tensor__cuda_numel(out);
    if (total == 0) return 0;
    if (t.ndim == 0) return tensor__cuda_copy_run(c, out, t);
    tensor__cuda_select_geom g;
    memset(&g, 0, sizeof g);
    int esize = tensor__cuda_size(t.dtype);
    g.nd = t.ndim;
    g.dim = dim;
    g.istride = istride;
    for (int d = 0; d < t.ndim; d++) {
        g.shape[d] = out.shape[d];
        g.ostride[d] = out.strides[d] * esize;
        g.tstride[d] = t.strides[d] * esize;
    }
    TENSOR__CUDA_LAUNCH_BEGIN();
    tensor__cuda_index_select_kernel<<<tensor__cuda_blocks(total), TENSOR__CUDA_THREADS, 0, s>>>(g, (char *)out.data, (const char *)t.data, (const char *)index.data, index.dtype,
                                                                                                  esize, total);
    return tensor__cuda_launch_check(c);
}

/* ---- masked_fill: in = {t, mask (bool, broadcast to t's shape)}, p[0] the value; out = t, with
   the value (stored as the CPU's tensor__store_f64 does) where the mask byte is not 0. ---- */
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_masked_fill_kernel(tensor__cuda_offsets o, char *out, const char *t, const char *mask, int size, uint64_t bits,
                                                                                        int64_t n) {
    TENSOR__CUDA_LOOP(i, n) {
        int64_t off[3];
        tensor__cuda_offsets_get<3>(o, i, off);
        tensor__cuda_store_bits(out + off[0], size, tensor__cuda_rd<uint8_t>(mask + off[2]) ? bits : tensor__cuda_load_bits(t + off[1], size));
    }
}
static int tensor__cuda_masked_fill(tensor__dev_call *c) {
    if (c->n_in != 2) return tensor__cuda_fail(c, "masked_fill: expected 2 inputs, got %d", c->n_in);
    const tensor__dev_operand &t = c->in[0], &mask = c->in[1], &out = c->out;
    if (!tensor__cuda_operand_ok(c, t, "input") || t.by_value || !tensor__cuda_operand_ok(c, mask, "input") || mask.by_value || !tensor__cuda_operand_ok(c, out, "output") ||
        out.by_value)
        return 1;
    if (mask.dtype != TENSOR_BOOL || out.dtype != t.dtype || mask.ndim > out.ndim) return tensor__cuda_fail(c, "masked_fill: invalid operands");
    int64_t n = tensor__cuda_numel(out);
    if (n == 0) return 0;
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    const tensor__dev_operand *ops[3] = {&out, &t, &mask};
    tensor__cuda_offsets o;
    tensor__cuda_offsets_init(&o, 3, ops, false);
    TENSOR__CUDA_LAUNCH_BEGIN();
    tensor__cuda_masked_fill_kernel<<<tensor__cuda_blocks(n), TENSOR__CUDA_THREADS, 0, s>>>(o, (char *)out.data, (const char *)t.data, (const char *)mask.data,
                                                                                            tensor__cuda_size(out.dtype), tensor__cuda_bits_of(c->p[0], out.dtype), n);
    return tensor__cuda_launch_check(c);
}

/* ---- dropout: in[0] x, p[0] p, ip[0] training; out = x * mask, the mask (out2, x's dtype) 0 or
   1 / (1 - p), kept with probability 1 - p. Not training, or p == 0: a copy (no mask, no draw).
   The mask's words are the CPU's, bit for bit: element i (row-major) takes word skip + i of the
   Philox4x32-10 stream from block `counter` (word w % 4 of block counter + w / 4), kept where
   word / 2^32 >= p (p == 1: never), the product rounded once to the dtype, as tensor__rng_fill's
   KEEP. The CPU kernel takes these words from the calling thread's generator itself
   (tensor__rng_fill_take) and makes out2 itself; for a device the front-end (tensor_dropout) does
   both and passes them in the record:
     out2     the mask, allocated by the front-end like out (contiguous, x's dtype)
     ip[1]    the generator's key as uint64 (key[0] | key[1] << 32: tensor_rng_state_save's v[0])
     ip[2]    the block counter of the draw's first word (tensor__rng_fill's counter)
     ip[3]    the stream
     ip[4]    skip: words of that block already used (0..3)
   the front-end having advanced the thread's generator by numel words (tensor__rng_fill_take).
   Without out2 the kernel refuses to train rather than lose the mask the backward needs. ---- */
/* tensor__philox_block of >>rng: the four words of block `counter` of stream `stream`. */
TENSOR__CUDA_HD void tensor__cuda_philox(uint32_t k0, uint32_t k1, uint64_t counter, uint32_t stream, uint32_t out[4]) {
    tensor__philox_at(k0, k1, counter, stream, 0, out);
}
struct tensor__cuda_keep {
    uint32_t key[2], stream;
    uint64_t counter;
    int skip;
    double p, scale;
};
/* The mask value of a word: scale where word / 2^32 >= p, else 0 (p == 1: 0). */
TENSOR__CUDA_HD double tensor__cuda_keep_of(const tensor__cuda_keep &k, uint32_t word) {
    return k.p == 1 ? 0.0 : ((double)word * (1.0 / 4294967296.0) >= k.p ? k.scale : 0.0);
}
/* Thread b computes block counter + b once and serves the (up to four) elements whose words it holds. */
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_dropout_kernel(tensor__cuda_offsets o, tensor__cuda_keep k, char *out, const char *x, char *mask, tensor_dtype dt,
                                                                                    int64_t n, int64_t blocks) {
    TENSOR__CUDA_LOOP(b, blocks) {
        uint32_t w[4];
        tensor__cuda_philox(k.key[0], k.key[1], k.counter + (uint64_t)b, k.stream, w);
        for (int j = 0; j < 4; j++) {
            int64_t i = 4 * b + j - k.skip;
            if (i < 0 || i >= n) continue;
            int64_t off[3];
            tensor__cuda_offsets_get<3>(o, i, off);
            double keep = tensor__cuda_keep_of(k, w[j]);
            tensor__cuda_store_f64(mask + off[2], dt, keep);
            tensor__cuda_store_f64(out + off[0], dt, tensor__cuda_load_f64(x + off[1], dt) * keep);
        }
    }
}
static int tensor__cuda_dropout(tensor__dev_call *c) {
    if (c->n_in != 1) return tensor__cuda_fail(c, "dropout: expected 1 input, got %d", c->n_in);
    const tensor__dev_operand &x = c->in[0], &out = c->out, &mask = c->out2;
    if (!tensor__cuda_operand_ok(c, x, "input") || x.by_value || !tensor__cuda_operand_ok(c, out, "output") || out.by_value) return 1;
    double p = c->p[0];
    bool training = c->ip[0] != 0;
    if (!training || p == 0) return tensor__cuda_copy_run(c, out, x);
    if (!mask.data)
        return tensor__cuda_fail(c, "dropout: training on CUDA needs the mask output and the generator's state in the device call record, which this tensor.h does not pass");
    if (!tensor__cuda_operand_ok(c, mask, "mask") || !tensor__cuda_is_float(out.dtype) || x.dtype != out.dtype || mask.dtype != out.dtype || mask.ndim != out.ndim ||
        !(p > 0 && p <= 1) || c->ip[4] < 0 || c->ip[4] > 3)
        return tensor__cuda_fail(c, "dropout: invalid operands");
    for (int d = 0; d < out.ndim; d++)
        if (mask.shape[d] != out.shape[d]) return tensor__cuda_fail(c, "dropout: the mask's shape differs from the output's");
    int64_t n = tensor__cuda_numel(out);
    if (n == 0) return 0;
    tensor__cuda_keep k;
    uint64_t key = (uint64_t)c->ip[1];
    k.key[0] = (uint32_t)key;
    k.key[1] = (uint32_t)(key >> 32);
    k.counter = (uint64_t)c->ip[2];
    k.stream = (uint32_t)c->ip[3];
    k.skip = (int)c->ip[4];
    k.p = p;
    k.scale = p == 1 ? 0 : 1.0 / (1.0 - p);
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    const tensor__dev_operand *ops[3] = {&out, &x, &mask};
    tensor__cuda_offsets o;
    tensor__cuda_offsets_init(&o, 3, ops, false);
    int64_t blocks = (k.skip + n + 3) / 4;
    TENSOR__CUDA_LAUNCH_BEGIN();
    tensor__cuda_dropout_kernel<<<tensor__cuda_blocks(blocks), TENSOR__CUDA_THREADS, 0, s>>>(o, k, (char *)out.data, (const char *)x.data, (char *)mask.data, out.dtype, n, blocks);
    return tensor__cuda_launch_check(c);
}

/* ---- multinomial: in[0] probs [C] or [R, C] (floating), out [R?, ns] i64; ip[0] num_samples,
   ip[1] replacement, and the generator's place as for dropout: ip[2] key, ip[3] counter, ip[4]
   stream, ip[5] skip, the front-end having advanced the thread's generator by the 2 R ns words the
   CPU kernel takes (sample q of the row-major output draws words 2q, 2q + 1 as one 53-bit
   uniform). A block per row: each thread owns a run of categories and sums it (double); thread 0
   turns the runs' sums into running totals, finds the run where a draw u * total falls and its
   owner scans it, as the CPU scans the row (the picks agree with the CPU's but where a total
   rounded differently decides a boundary). Without replacement a pick's weight drops to 0 in a
   scratch copy of the row (one per block, so the scratch stays small). The first invalid row, in row order, is reported
   through a flag: ((row C + j) 3 + kind), kind 0 a bad weight at j, 1 a row summing to 0, 2 too
   few non-zero categories. ---- */
#define TENSOR__CUDA_MN_THREADS 256
#define TENSOR__CUDA_MN_SCRATCH ((size_t)64 << 20) /* bytes of row copies at most */
struct tensor__cuda_mn_args {
    tensor__cuda_keep k; /* key, stream, counter, skip (p and scale unused) */
    const char *probs;
    tensor_dtype dt;
    int64_t rs, cs, R, C, ns; /* row and category strides of probs, in elements */
    bool replacement;
    int64_t *out;
    double *w;                /* without replacement: a row copy per block, [gridDim, C] */
    unsigned long long *bad;
};
/* Word `word` (0-based, after skip) of the draw whose place is k. */
TENSOR__CUDA_HD uint32_t tensor__cuda_rng_word(const tensor__cuda_keep &k, uint64_t word) {
    uint64_t at = (uint64_t)k.skip + word;
    uint32_t w[4];
    tensor__cuda_philox(k.key[0], k.key[1], k.counter + at / 4, k.stream, w);
    return w[at % 4];
}
__global__ void __launch_bounds__(TENSOR__CUDA_MN_THREADS) tensor__cuda_multinomial_kernel(tensor__cuda_mn_args a) {
    __shared__ double run_sum[TENSOR__CUDA_MN_THREADS], run_start[TENSOR__CUDA_MN_THREADS + 1], u;
    __shared__ int64_t nonzero[TENSOR__CUDA_MN_THREADS];
    __shared__ int row_failed, target;
    int t = threadIdx.x, size = tensor__cuda_size(a.dt);
    int64_t per = (a.C + TENSOR__CUDA_MN_THREADS - 1) / TENSOR__CUDA_MN_THREADS;
    int64_t lo = t * per < a.C ? t * per : a.C, hi = lo + per < a.C ? lo + per : a.C;
    double *w = a.replacement ? nullptr : a.w + (int64_t)blockIdx.x * a.C;
    for (int64_t r = blockIdx.x; r < a.R; r += gridDim.x) {
        const char *row = a.probs + r * a.rs * size;
        double sum = 0;
        int64_t nz = 0;
        int bad = 0;
        for (int64_t j = lo; j < hi; j++) {
            double v = tensor__cuda_load_f64(row + j * a.cs * size, a.dt);
            if (w) w[j] = v;
            if (!(v >= 0) || isinf(v)) {
                if (!bad) atomicMin(a.bad, (unsigned long long)(r * a.C + j) * 3ull);
                bad = 1;
            }
            sum += v;
            nz += v > 0;
        }
        run_sum[t] = sum;
        nonzero[t] = nz;
        bad = __syncthreads_or(bad);
        if (t == 0) {
            double total = 0;
            int64_t nonzeros = 0;
            for (int i = 0; i < TENSOR__CUDA_MN_THREADS; i++) {
                run_start[i] = total;
                total += run_sum[i];
                nonzeros += nonzero[i];
            }
            run_start[TENSOR__CUDA_MN_THREADS] = total;
            unsigned long long last = (unsigned long long)(r * a.C + a.C - 1) * 3ull;
            if (!bad && !(total > 0)) { atomicMin(a.bad, last + 1); bad = 1; }
            else if (!bad && !a.replacement && nonzeros < a.ns) { atomicMin(a.bad, last + 2); bad = 1; }
            row_failed = bad;
        }
        __syncthreads();
        if (row_failed) continue; /* every thread: the next row's first write waits for __syncthreads_or */
        for (int64_t s = 0; s < a.ns; s++) {
            if (t == 0) {
                uint64_t q = (uint64_t)(r * a.ns + s);
                uint64_t bits = (uint64_t)tensor__cuda_rng_word(a.k, 2 * q) << 32 | tensor__cuda_rng_word(a.k, 2 * q + 1);
                u = (double)(int64_t)(bits >> 11) * (1.0 / 9007199254740992.0) * run_start[TENSOR__CUDA_MN_THREADS];
                /* the first run whose running total passes u, else the last run with weight (it
                   absorbs rounding, as the CPU's last positive category does) */
                target = -1;
                for (int i = 0; i < TENSOR__CUDA_MN_THREADS; i++) {
                    if (nonzero[i] == 0) continue;
                    target = i;
                    if (u < run_start[i] + run_sum[i]) break;
                }
            }
            __syncthreads();
            if (t == target) {
                double acc = run_start[t];
                int64_t pick = -1;
                for (int64_t j = lo; j < hi; j++) {
                    double v = w ? w[j] : tensor__cuda_load_f64(row + j * a.cs * size, a.dt);
                    if (v <= 0) continue;
                    pick = j;
                    acc += v;
                    if (u < acc) break;
                }
                a.out[r * a.ns + s] = pick;
                if (w && pick >= 0) { /* the totals from this run on drop by the pick's weight */
                    double dw = w[pick];
                    w[pick] = 0;
                    run_sum[t] = --nonzero[t] ? run_sum[t] - dw : 0.0; /* an emptied run holds no rounding */
                    for (int i = t + 1; i <= TENSOR__CUDA_MN_THREADS; i++) run_start[i] -= dw;
                }
            }
            __syncthreads();
        }
    }
}
static int tensor__cuda_multinomial(tensor__dev_call *c) {
    if (c->n_in != 1) return tensor__cuda_fail(c, "multinomial: expected 1 input, got %d", c->n_in);
    const tensor__dev_operand &p = c->in[0], &out = c->out;
    if (!tensor__cuda_operand_ok(c, p, "input") || p.by_value || !tensor__cuda_operand_ok(c, out, "output") || out.by_value) return 1;
    int64_t R = p.ndim == 2 ? p.shape[0] : 1, C = p.ndim >= 1 ? p.shape[p.ndim - 1] : 0, ns = c->ip[0];
    if ((p.ndim != 1 && p.ndim != 2) || !tensor__cuda_is_float(p.dtype) || out.dtype != TENSOR_I64 || out.ndim != p.ndim || C <= 0 || ns <= 0 ||
        out.shape[out.ndim - 1] != ns || (p.ndim == 2 && out.shape[0] != R) || c->ip[5] < 0 || c->ip[5] > 3)
        return tensor__cuda_fail(c, "multinomial: invalid operands");
    if (out.strides[out.ndim - 1] != 1 || (out.ndim == 2 && R > 1 && out.strides[0] != ns)) return tensor__cuda_fail(c, "multinomial: expected a contiguous output");
    if (R == 0) return 0;
    tensor__cuda_mn_args a;
    memset(&a, 0, sizeof a);
    uint64_t key = (uint64_t)c->ip[2];
    a.k.key[0] = (uint32_t)key;
    a.k.key[1] = (uint32_t)(key >> 32);
    a.k.counter = (uint64_t)c->ip[3];
    a.k.stream = (uint32_t)c->ip[4];
    a.k.skip = (int)c->ip[5];
    a.probs = (const char *)p.data;
    a.dt = p.dtype;
    a.rs = p.ndim == 2 ? p.strides[0] : 0;
    a.cs = p.strides[p.ndim - 1];
    a.R = R;
    a.C = C;
    a.ns = ns;
    a.replacement = c->ip[1] != 0;
    a.out = (int64_t *)out.data;
    int64_t blocks = R < 65535 ? R : 65535;
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    tensor__cuda_scratch sc;
    if (!a.replacement) { /* as many blocks as row copies fit the scratch, at least one */
        int64_t fit = (int64_t)(TENSOR__CUDA_MN_SCRATCH / sizeof(double) / (uint64_t)C);
        if (blocks > fit) blocks = fit > 0 ? fit : 1;
        if (!(sc.p[0] = tensor__cuda_alloc((size_t)blocks * (size_t)C * sizeof(double), c->error, sizeof c->error))) return 1;
        a.w = (double *)sc.p[0];
    }
    if (!(a.bad = tensor__cuda_flag_new(c, s))) return 1;
    TENSOR__CUDA_LAUNCH_BEGIN();
    tensor__cuda_multinomial_kernel<<<(unsigned)blocks, TENSOR__CUDA_MN_THREADS, 0, s>>>(a);
    if (tensor__cuda_launch_check(c)) { tensor__cuda_free(a.bad); return 1; }
    unsigned long long flag;
    if (tensor__cuda_flag_read(c, s, a.bad, &flag)) return 1;
    if (flag == ULLONG_MAX) return 0;
    int64_t r = (int64_t)(flag / 3) / C, j = (int64_t)(flag / 3) % C;
    if (flag % 3 == 1) return tensor__cuda_fail(c, "row %lld of probabilities sums to 0", (long long)r);
    if (flag % 3 == 2)
        return tensor__cuda_fail(c, "cannot draw %lld samples without replacement from row %lld: it has fewer non-zero categories", (long long)ns, (long long)r);
    double v = 0; /* the bad weight, read back from probs */
    char buf[8] = {0};
    int size = tensor__cuda_size(p.dtype);
    cudaError_t e = cudaMemcpyAsync(buf, (const char *)p.data + (r * a.rs + j * a.cs) * size, (size_t)size, cudaMemcpyDeviceToHost, s);
    if (e == cudaSuccess) e = cudaStreamSynchronize(s);
    if (e != cudaSuccess) return tensor__cuda_fail_cuda(c, "reading a bad probability", e);
    v = tensor__cuda_load_f64(buf, p.dtype);
    return tensor__cuda_fail(c, "probabilities must be finite and non-negative, row %lld has %g", (long long)r, v);
}

/* ---- poisson (the random ops of issue 14): in[0] the rates (floating, any layout), out (their
   dtype); ip[0] key (key[0] | key[1] << 32), ip[1] block counter, ip[2] stream, the front-end
   having taken n whole blocks of the thread's stream (tensor_poisson, for every device alike).
   Element i (row-major) is >>formulas' tensor__poisson_sample of its rate on the blocks
   (counter + i, stream, j): the CPU kernel's code on the same words, so the same samples. ---- */
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_poisson_kernel(tensor__cuda_offsets o, char *out, const char *x, tensor_dtype dt, uint32_t k0, uint32_t k1,
                                                                                    uint64_t counter, uint32_t stream, int64_t n) {
    TENSOR__CUDA_LOOP(i, n) {
        int64_t off[2];
        tensor__cuda_offsets_get<2>(o, i, off);
        double lam = tensor__cuda_load_f64(x + off[1], dt);
        tensor__cuda_store_f64(out + off[0], dt, tensor__poisson_sample(lam, k0, k1, counter + (uint64_t)i, stream));
    }
}
static int tensor__cuda_poisson(tensor__dev_call *c) {
    if (c->n_in != 1) return tensor__cuda_fail(c, "poisson: expected 1 input, got %d", c->n_in);
    const tensor__dev_operand &x = c->in[0], &out = c->out;
    if (!tensor__cuda_operand_ok(c, x, "input") || x.by_value || !tensor__cuda_operand_ok(c, out, "output") || out.by_value) return 1;
    if (!tensor__cuda_is_float(out.dtype) || x.dtype != out.dtype || x.ndim != out.ndim) return tensor__cuda_fail(c, "poisson: invalid operands");
    for (int d = 0; d < out.ndim; d++)
        if (x.shape[d] != out.shape[d]) return tensor__cuda_fail(c, "poisson: the rates' shape differs from the output's");
    int64_t n = tensor__cuda_numel(out);
    if (n == 0) return 0;
    uint64_t key = (uint64_t)c->ip[0];
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    const tensor__dev_operand *ops[2] = {&out, &x};
    tensor__cuda_offsets o;
    tensor__cuda_offsets_init(&o, 2, ops, false);
    TENSOR__CUDA_LAUNCH_BEGIN();
    tensor__cuda_poisson_kernel<<<tensor__cuda_blocks(n), TENSOR__CUDA_THREADS, 0, s>>>(o, (char *)out.data, (const char *)x.data, out.dtype, (uint32_t)key, (uint32_t)(key >> 32),
                                                                                        (uint64_t)c->ip[1], (uint32_t)c->ip[2], n);
    return tensor__cuda_launch_check(c);
}

// >>cuda-conv ------------------------------------------------------------------------------------
/* conv1d, conv2d (im2col + cuBLAS GEMM) and max_pool2d, avg_pool2d, with the call records of the
   CPU's kernels (>>conv, >>pool). A convolution is 2-D throughout: conv1d is H = kH = 1. The images
   go in chunks (cols of at most TENSOR__CUDA_CONV_CHUNK bytes, at least one image): for a chunk of
   nb images, cols [C kH kW, nb P] (P = oH oW; row (c, ki, kj), column (n, p)) holds the input
   patches, and one strided batched GEMM over the groups gives outT [O, nb P] = w_g [Og, K] @ cols_g
   [K, nb P] (K = Cg kH kW). The operands stay in x's dtype (f16/bf16 read by cuBLAS as they are),
   products accumulate in the compute dtype ct (f64 for f64, else f32: CUBLAS_COMPUTE_32F,
   CUBLAS_COMPUTE_32F_FAST_TF32 for f32 when set_allow_tf32 is on), and the epilogue adds the bias
   in ct and rounds once into out's dtype, as the CPU does. No atomics: every kernel here writes
   each element once, in an order fixed by the geometry. */
#define TENSOR__CUDA_CONV_CHUNK ((size_t)256 << 20)

struct tensor__cuda_conv_geom {
    int64_t N, C, H, W, O, kH, kW, oH, oW, sh, sw, ph, pw, dh, dw, groups;
    int64_t xs[4];   /* element strides of x as [n, c, h, w]; 0 on absent dims */
    int64_t os[4];   /* of the output (or its gradient) as [n, o, h, w] */
};
/* From x, w, the output (or its gradient: its shape and strides) and ip = {stride, padding,
   dilation, groups}, as the CPU's tensor__conv_geometry_of. */
static void tensor__cuda_conv_geometry(const tensor__dev_operand &x, const tensor__dev_operand &w, const tensor__dev_operand &out, int sd, const int64_t *ip,
                                       tensor__cuda_conv_geom *g) {
    memset(g, 0, sizeof *g);
    bool batched = x.ndim == sd + 2;
    int xd = x.ndim, od = out.ndim;
    g->N = batched ? x.shape[0] : 1;
    g->xs[0] = batched ? x.strides[0] : 0;
    g->os[0] = batched ? out.strides[0] : 0;
    g->C = x.shape[xd - sd - 1];
    g->xs[1] = x.strides[xd - sd - 1];
    g->O = w.shape[0];
    g->os[1] = out.strides[od - sd - 1];
    g->W = x.shape[xd - 1];
    g->xs[3] = x.strides[xd - 1];
    g->kW = w.shape[w.ndim - 1];
    g->oW = out.shape[od - 1];
    g->os[3] = out.strides[od - 1];
    g->sw = ip[0];
    g->pw = ip[1];
    g->dw = ip[2];
    if (sd == 2) {
        g->H = x.shape[xd - 2];
        g->xs[2] = x.strides[xd - 2];
        g->kH = w.shape[2];
        g->oH = out.shape[od - 2];
        g->os[2] = out.strides[od - 2];
        g->sh = ip[0];
        g->ph = ip[1];
        g->dh = ip[2];
    } else {
        g->H = 1;
        g->kH = 1;
        g->oH = 1;
        g->sh = 1;
        g->ph = 0;
        g->dh = 1;
    }
    g->groups = ip[3];
}
/* The convolution operands' checks shared by forward and backward: x, w (and the output or its
   gradient y) of the shapes the CPU's front gives. */
static bool tensor__cuda_conv_check(tensor__dev_call *c, int sd, const tensor__dev_operand &x, const tensor__dev_operand &w, const tensor__dev_operand &y) {
    if (!tensor__cuda_operand_ok(c, x, "input") || x.by_value || !tensor__cuda_operand_ok(c, w, "weight") || w.by_value ||
        !tensor__cuda_operand_ok(c, y, "output") || y.by_value)
        return false;
    bool batched = x.ndim == sd + 2;
    if ((x.ndim != sd + 1 && !batched) || w.ndim != sd + 2 || y.ndim != x.ndim || !tensor__cuda_is_float(x.dtype) || w.dtype != x.dtype ||
        !tensor__cuda_is_float(y.dtype) || (batched && y.shape[0] != x.shape[0]) || y.shape[y.ndim - sd - 1] != w.shape[0]) {
        tensor__cuda_fail(c, "%s: invalid operands", tensor__cuda_op_name(c->op));
        return false;
    }
    int64_t groups = c->ip[3], C = x.shape[x.ndim - sd - 1];
    if (c->ip[0] < 1 || c->ip[1] < 0 || c->ip[2] < 1 || groups < 1 || w.shape[0] % groups != 0 || w.shape[1] * groups != C) {
        tensor__cuda_fail(c, "%s: invalid stride, padding, dilation or groups", tensor__cuda_op_name(c->op));
        return false;
    }
    return true;
}

/* cuBLAS's types for operands of dtype d and results in ct (f32 or f64). */
static bool tensor__cuda_conv_types(tensor_dtype d, tensor_dtype ct, cudaDataType_t *ab, cudaDataType_t *cdt, cublasComputeType_t *comp) {
    switch (d) {
    case TENSOR_F32: *ab = CUDA_R_32F; break;
    case TENSOR_F64: *ab = CUDA_R_64F; break;
    case TENSOR_F16: *ab = CUDA_R_16F; break;
    case TENSOR_BF16: *ab = CUDA_R_16BF; break;
    default: return false;
    }
    if (ct == TENSOR_F64) {
        if (d != TENSOR_F64) return false;
        *cdt = CUDA_R_64F;
        *comp = CUBLAS_COMPUTE_64F;
        return true;
    }
    if (d == TENSOR_F64) return false;
    *cdt = CUDA_R_32F;
    *comp = d == TENSOR_F32 && tensor__cuda_tf32.load() ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
    return true;
}
/* One column-major strided batched GEMM of cuBLAS (C = op(A) op(B) + beta C, beta 0 or 1), A and
   B of dtype d, C of ct (dense: ldc == m, sC == m n). k == 0 gives zeros (beta 0) or leaves C. */
static int tensor__cuda_conv_gemm(tensor__dev_call *c, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const void *A, int64_t lda, int64_t sA,
                                  const void *B, int64_t ldb, int64_t sB, bool accumulate, void *C, int64_t sC, int64_t batches, tensor_dtype d, tensor_dtype ct) {
    if (m == 0 || n == 0 || batches == 0) return 0;
    int csz = tensor__cuda_size(ct);
    if (k == 0) {
        if (accumulate) return 0;
        cudaStream_t s;
        if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
        cudaError_t e = cudaMemsetAsync(C, 0, (size_t)(batches * sC) * (size_t)csz, s);
        return e == cudaSuccess ? 0 : tensor__cuda_fail_cuda(c, "memset", e);
    }
    cudaDataType_t ab, cdt;
    cublasComputeType_t comp;
    if (!tensor__cuda_conv_types(d, ct, &ab, &cdt, &comp)) return tensor__cuda_fail(c, "%s: no cuBLAS path for this dtype", tensor__cuda_op_name(c->op));
    cublasHandle_t h;
    if (!tensor__cuda_blas(c, &h)) return 1;
    float one32 = 1.0f, beta32 = accumulate ? 1.0f : 0.0f;
    double one64 = 1.0, beta64 = accumulate ? 1.0 : 0.0;
    const void *alpha = ct == TENSOR_F64 ? (const void *)&one64 : (const void *)&one32;
    const void *beta = ct == TENSOR_F64 ? (const void *)&beta64 : (const void *)&beta32;
    int esz = tensor__cuda_size(d);
    const int64_t chunk = 65535;
    for (int64_t b0 = 0; b0 < batches; b0 += chunk) {
        int64_t cnt = batches - b0 < chunk ? batches - b0 : chunk;
        cublasStatus_t st = cublasGemmStridedBatchedEx_64(h, ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, m, n, k, alpha,
                                                          (const char *)A + b0 * sA * esz, ab, lda, sA, (const char *)B + b0 * sB * esz, ab, ldb, sB, beta,
                                                          (char *)C + b0 * sC * csz, cdt, m, sC, cnt, comp, CUBLAS_GEMM_DEFAULT);
        if (st != CUBLAS_STATUS_SUCCESS) return tensor__cuda_fail_blas(c, "cublasGemmStridedBatchedEx", st);
    }
    return 0;
}

/* Whether t is dense in row-major order. */
static bool tensor__cuda_rowmajor(const tensor__dev_operand &t) {
    int64_t step = 1;
    for (int d = t.ndim - 1; d >= 0; d--) {
        if (t.shape[d] != 1 && t.strides[d] != step) return false;
        step *= t.shape[d];
    }
    return true;
}
/* t as a dense row-major array of dtype d: t's own data when it already is, else a copy in
   scratch (*own, freed by the caller). NULL after an error. */
static const void *tensor__cuda_dense_as(tensor__dev_call *c, const tensor__dev_operand &t, tensor_dtype d, void **own) {
    *own = nullptr;
    if (t.dtype == d && tensor__cuda_rowmajor(t)) return t.data;
    tensor__dev_operand dst = t;
    dst.dtype = d;
    int64_t step = 1;
    for (int k = t.ndim - 1; k >= 0; k--) { dst.strides[k] = step; step *= t.shape[k]; }
    dst.data = *own = tensor__cuda_alloc((size_t)step * (size_t)tensor__cuda_size(d), c->error, sizeof c->error);
    if (!dst.data) return nullptr;
    if (tensor__cuda_copy_run(c, dst, t)) return nullptr;
    return dst.data;
}
/* Scratch freed on every path (stream-ordered: queued work finishes first). */
struct tensor__cuda_conv_scratch {
    void *p[6] = {nullptr, nullptr, nullptr, nullptr, nullptr, nullptr};
    ~tensor__cuda_conv_scratch() { for (void *q : p) tensor__cuda_free(q); }
};

/* cols [C kH kW, nb P] of dtype cd = the patches of images n0.. of x (any layout, dtype xd), 0 in
   the padding. Same dtypes move bits; else through double (exact for the float dtypes). */
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_im2col_kernel(tensor__cuda_conv_geom g, const char *x, tensor_dtype xd, char *cols, tensor_dtype cd,
                                                                                  int64_t n0, int64_t nb, int64_t total) {
    const int64_t P = g.oH * g.oW, ld = nb * P;
    const int xsz = tensor__cuda_size(xd), csz = tensor__cuda_size(cd);
    TENSOR__CUDA_LOOP(i, total) {
        int64_t row = i / ld, col = i - row * ld;
        int64_t n = col / P, p = col - n * P;
        int64_t oh = p / g.oW, ow = p - oh * g.oW;
        int64_t kj = row % g.kW, rest = row / g.kW, ki = rest % g.kH, ch = rest / g.kH;
        int64_t ih = oh * g.sh - g.ph + ki * g.dh, iw = ow * g.sw - g.pw + kj * g.dw;
        char *dst = cols + i * csz;
        if (ih < 0 || ih >= g.H || iw < 0 || iw >= g.W) { tensor__cuda_store_bits(dst, csz, 0); continue; }
        const char *src = x + ((n0 + n) * g.xs[0] + ch * g.xs[1] + ih * g.xs[2] + iw * g.xs[3]) * xsz;
        if (xd == cd) tensor__cuda_store_bits(dst, csz, tensor__cuda_load_bits(src, csz));
        else tensor__cuda_store_f64(dst, cd, tensor__cuda_load_f64(src, xd));
    }
}
static int tensor__cuda_im2col(tensor__dev_call *c, const tensor__cuda_conv_geom &g, const void *x, tensor_dtype xd, void *cols, tensor_dtype cd, int64_t n0, int64_t nb,
                               cudaStream_t s) {
    int64_t total = g.C * g.kH * g.kW * nb * g.oH * g.oW;
    if (total == 0) return 0;
    TENSOR__CUDA_LAUNCH_BEGIN();
    tensor__cuda_im2col_kernel<<<tensor__cuda_blocks(total), TENSOR__CUDA_THREADS, 0, s>>>(g, (const char *)x, xd, (char *)cols, cd, n0, nb, total);
    return tensor__cuda_launch_check(c);
}

/* out[n0 + n, o, oh, ow] (through out's strides) = outT[o, n P + p] + bias[o], in Acc. */
template <class Acc>
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_conv_epilogue(tensor__cuda_conv_geom g, const Acc *outT, const char *bias, tensor_dtype bd, int64_t bs,
                                                                                  char *out, tensor_dtype od, int64_t n0, int64_t nb, int64_t total) {
    const int64_t P = g.oH * g.oW;
    const int osz = tensor__cuda_size(od);
    TENSOR__CUDA_LOOP(i, total) {
        int64_t p = i % P, r = i / P, o = r % g.O, n = r / g.O;
        int64_t oh = p / g.oW, ow = p - oh * g.oW;
        Acc v = outT[o * nb * P + n * P + p];
        if (bias) v += tensor__cuda_ldf<Acc>(bias + o * bs, bd);
        tensor__cuda_store_f64(out + ((n0 + n) * g.os[0] + o * g.os[1] + oh * g.os[2] + ow * g.os[3]) * osz, od, (double)v);
    }
}

#ifdef TENSOR_USE_CUDNN
/* cuDNN (tensor_cuda.cu built with -DTENSOR_USE_CUDNN and linked with -lcudnn): conv1d/conv2d
   forward and the input and weight gradients by cuDNN's algorithms (the first of its heuristics'
   ranking that runs in a workspace the allocator gives); the bias and its gradient by the kernels
   here. Only dense NCHW operands of one float dtype go to cuDNN; anything else, or a convolution
   cuDNN reports it cannot do (bf16 on an older GPU, say), takes the im2col path, so enabling
   cuDNN never loses an op. f32 keeps FMA math (no TF32) unless set_allow_tf32 is on, as PyTorch's
   allow_tf32 for cuDNN. Returns 0 done, 1 error (in c->error), -1 not taken (nothing written). */
struct tensor__cudnn_thread {
    cudnnHandle_t h = nullptr;
    ~tensor__cudnn_thread() {
        if (h) (void)cudnnDestroy(h);
        (void)cudaGetLastError();
    }
};
static int tensor__cudnn_fail(tensor__dev_call *c, const char *what, cudnnStatus_t st) {
    return tensor__cuda_fail(c, "cuDNN error: %s %s: %s", tensor__cuda_op_name(c->op), what, cudnnGetErrorString(st));
}
/* One handle per host thread, bound to its stream (as cuBLAS's). */
static bool tensor__cudnn_handle(tensor__dev_call *c, cudnnHandle_t *out) {
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return false;
    static thread_local tensor__cudnn_thread t;
    if (!t.h) {
        cudnnHandle_t h = nullptr;
        cudnnStatus_t st = cudnnCreate(&h);
        if (st != CUDNN_STATUS_SUCCESS) { tensor__cudnn_fail(c, "cudnnCreate", st); return false; }
        if ((st = cudnnSetStream(h, s)) != CUDNN_STATUS_SUCCESS) {
            (void)cudnnDestroy(h);
            tensor__cudnn_fail(c, "cudnnSetStream", st);
            return false;
        }
        t.h = h;
    }
    *out = t.h;
    return true;
}
/* The descriptors of one convolution, destroyed on every path. */
struct tensor__cudnn_conv {
    cudnnTensorDescriptor_t x = nullptr, y = nullptr;
    cudnnFilterDescriptor_t w = nullptr;
    cudnnConvolutionDescriptor_t conv = nullptr;
    bool f64 = false;
    ~tensor__cudnn_conv() {
        if (x) (void)cudnnDestroyTensorDescriptor(x);
        if (y) (void)cudnnDestroyTensorDescriptor(y);
        if (w) (void)cudnnDestroyFilterDescriptor(w);
        if (conv) (void)cudnnDestroyConvolutionDescriptor(conv);
    }
};
/* Describes the convolution of geometry g in dtype d (x [N, C, H, W], w [O, C / groups, kH, kW],
   y [N, O, oH, oW], all dense). false: cuDNN cannot take it (dtype, sizes past int). */
static bool tensor__cudnn_describe(const tensor__cuda_conv_geom &g, tensor_dtype d, tensor__cudnn_conv *cd) {
    cudnnDataType_t t, compute;
    cudnnMathType_t math;
    switch (d) {
    case TENSOR_F32: t = CUDNN_DATA_FLOAT; compute = CUDNN_DATA_FLOAT; math = tensor__cuda_tf32.load() ? CUDNN_TENSOR_OP_MATH : CUDNN_FMA_MATH; break;
    case TENSOR_F64: t = CUDNN_DATA_DOUBLE; compute = CUDNN_DATA_DOUBLE; math = CUDNN_DEFAULT_MATH; break;
    case TENSOR_F16: t = CUDNN_DATA_HALF; compute = CUDNN_DATA_FLOAT; math = CUDNN_TENSOR_OP_MATH; break;
    case TENSOR_BF16: t = CUDNN_DATA_BFLOAT16; compute = CUDNN_DATA_FLOAT; math = CUDNN_TENSOR_OP_MATH; break;
    default: return false;
    }
    const int64_t sizes[] = {g.N, g.C, g.H, g.W, g.O, g.kH, g.kW, g.oH, g.oW, g.sh, g.sw, g.ph, g.pw, g.dh, g.dw, g.groups,
                             g.N * g.C * g.H * g.W, g.N * g.O * g.oH * g.oW, g.O * (g.C / g.groups) * g.kH * g.kW};
    for (int64_t v : sizes)
        if (v > INT_MAX) return false;
    cd->f64 = d == TENSOR_F64;
    return cudnnCreateTensorDescriptor(&cd->x) == CUDNN_STATUS_SUCCESS && cudnnCreateTensorDescriptor(&cd->y) == CUDNN_STATUS_SUCCESS &&
           cudnnCreateFilterDescriptor(&cd->w) == CUDNN_STATUS_SUCCESS && cudnnCreateConvolutionDescriptor(&cd->conv) == CUDNN_STATUS_SUCCESS &&
           cudnnSetTensor4dDescriptor(cd->x, CUDNN_TENSOR_NCHW, t, (int)g.N, (int)g.C, (int)g.H, (int)g.W) == CUDNN_STATUS_SUCCESS &&
           cudnnSetTensor4dDescriptor(cd->y, CUDNN_TENSOR_NCHW, t, (int)g.N, (int)g.O, (int)g.oH, (int)g.oW) == CUDNN_STATUS_SUCCESS &&
           cudnnSetFilter4dDescriptor(cd->w, t, CUDNN_TENSOR_NCHW, (int)g.O, (int)(g.C / g.groups), (int)g.kH, (int)g.kW) == CUDNN_STATUS_SUCCESS &&
           cudnnSetConvolution2dDescriptor(cd->conv, (int)g.ph, (int)g.pw, (int)g.sh, (int)g.sw, (int)g.dh, (int)g.dw, CUDNN_CROSS_CORRELATION, compute) ==
               CUDNN_STATUS_SUCCESS &&
           cudnnSetConvolutionGroupCount(cd->conv, (int)g.groups) == CUDNN_STATUS_SUCCESS && cudnnSetConvolutionMathType(cd->conv, math) == CUDNN_STATUS_SUCCESS;
}
/* Runs run(algo, workspace, bytes) for the heuristics' algorithms in rank order until one is
   supported and its workspace can be had: 0 done, 1 error, -1 none would (nothing written). */
template <class Perf, class Run> static int tensor__cudnn_try(tensor__dev_call *c, const char *what, const Perf *perf, int found, Run run) {
    for (int i = 0; i < found; i++) {
        if (perf[i].status != CUDNN_STATUS_SUCCESS) continue;
        void *ws = nullptr;
        if (perf[i].memory && !(ws = tensor__cuda_alloc(perf[i].memory, c->error, sizeof c->error))) continue; /* a smaller one may do */
        cudnnStatus_t st = run(perf[i].algo, ws, perf[i].memory);
        tensor__cuda_free(ws); /* stream-ordered: after the convolution */
        if (st == CUDNN_STATUS_SUCCESS) return 0;
        if (st != CUDNN_STATUS_NOT_SUPPORTED) return tensor__cudnn_fail(c, what, st);
    }
    c->error[0] = 0;
    return -1;
}
/* out[n, o, p] += bias[o] over a dense out [N, O, P], in double, rounded once more; bs: the bias's
   step in bytes (tensor__cuda_norm_param's). It was taken in elements and multiplied by the
   element size again, so every output channel but the first got another channel's bias (or read
   past the bias): the wrong values the first GPU run found with cuDNN (issue 25). */
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cudnn_bias_kernel(char *out, tensor_dtype od, const char *bias, tensor_dtype bd, int64_t bs, int64_t O, int64_t P,
                                                                                   int64_t total) {
    const int osz = tensor__cuda_size(od);
    TENSOR__CUDA_LOOP(i, total) {
        char *o = out + i * osz;
        tensor__cuda_store_f64(o, od, tensor__cuda_load_f64(o, od) + tensor__cuda_load_f64(bias + ((i / P) % O) * bs, bd));
    }
}
/* Configurations cuDNN takes: those a GPU run has shown equal to the CPU. Groups and dilation
   were among the wrong answers of the first run (a bias bug, fixed since, but not yet run on a
   GPU): they take the im2col path until one does. */
static bool tensor__cudnn_proven(const tensor__cuda_conv_geom &g) { return g.groups == 1 && g.dh == 1 && g.dw == 1; }
static int tensor__cudnn_conv_forward(tensor__dev_call *c, const tensor__cuda_conv_geom &g, const tensor__dev_operand &x, const tensor__dev_operand &w,
                                      const tensor__dev_operand &out, const char *bias, tensor_dtype bd, int64_t bstep) {
    if (!tensor__cudnn_proven(g)) return -1;
    if (w.dtype != x.dtype || out.dtype != x.dtype || !tensor__cuda_rowmajor(x) || !tensor__cuda_rowmajor(w) || !tensor__cuda_rowmajor(out)) return -1;
    tensor__cudnn_conv cd;
    if (!tensor__cudnn_describe(g, x.dtype, &cd)) return -1;
    cudnnHandle_t h;
    if (!tensor__cudnn_handle(c, &h)) return 1;
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int found = 0;
    if (cudnnGetConvolutionForwardAlgorithm_v7(h, cd.x, cd.w, cd.conv, cd.y, CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &found, perf) != CUDNN_STATUS_SUCCESS) return -1;
    float one32 = 1, zero32 = 0;
    double one64 = 1, zero64 = 0;
    const void *one = cd.f64 ? (const void *)&one64 : (const void *)&one32, *zero = cd.f64 ? (const void *)&zero64 : (const void *)&zero32;
    int r = tensor__cudnn_try(c, "cudnnConvolutionForward", perf, found, [&](cudnnConvolutionFwdAlgo_t algo, void *ws, size_t bytes) {
        return cudnnConvolutionForward(h, one, cd.x, x.data, cd.w, w.data, cd.conv, algo, ws, bytes, zero, cd.y, out.data);
    });
    if (r || !bias) return r;
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    int64_t P = g.oH * g.oW, total = g.N * g.O * P;
    TENSOR__CUDA_LAUNCH_BEGIN();
    tensor__cudnn_bias_kernel<<<tensor__cuda_blocks(total), TENSOR__CUDA_THREADS, 0, s>>>((char *)out.data, out.dtype, bias, bd, bstep, g.O, P, total);
    return tensor__cuda_launch_check(c);
}
/* The input and weight gradients (either may be absent); the bias's is done already. */
static int tensor__cudnn_conv_backward(tensor__dev_call *c, const tensor__cuda_conv_geom &g, const tensor__dev_operand &x, const tensor__dev_operand &w,
                                       const tensor__dev_operand &gy, const tensor__dev_operand *gx, const tensor__dev_operand *gw) {
    tensor_dtype d = x.dtype;
    if (!tensor__cudnn_proven(g)) return -1;
    if (w.dtype != d || gy.dtype != d || !tensor__cuda_rowmajor(x) || !tensor__cuda_rowmajor(w) || !tensor__cuda_rowmajor(gy) ||
        (gx && (gx->dtype != d || !tensor__cuda_rowmajor(*gx))) || (gw && (gw->dtype != d || !tensor__cuda_rowmajor(*gw))))
        return -1;
    tensor__cudnn_conv cd;
    if (!tensor__cudnn_describe(g, d, &cd)) return -1;
    cudnnHandle_t h;
    if (!tensor__cudnn_handle(c, &h)) return 1;
    cudnnConvolutionBwdDataAlgoPerf_t dperf[CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT];
    cudnnConvolutionBwdFilterAlgoPerf_t fperf[CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT];
    int dfound = 0, ffound = 0;
    /* both choices first, so a convolution cuDNN cannot do falls back before anything is written */
    if (gx && cudnnGetConvolutionBackwardDataAlgorithm_v7(h, cd.w, cd.y, cd.conv, cd.x, CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT, &dfound, dperf) != CUDNN_STATUS_SUCCESS) return -1;
    if (gw && cudnnGetConvolutionBackwardFilterAlgorithm_v7(h, cd.x, cd.y, cd.conv, cd.w, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT, &ffound, fperf) != CUDNN_STATUS_SUCCESS)
        return -1;
    float one32 = 1, zero32 = 0;
    double one64 = 1, zero64 = 0;
    const void *one = cd.f64 ? (const void *)&one64 : (const void *)&one32, *zero = cd.f64 ? (const void *)&zero64 : (const void *)&zero32;
    bool wrote = false;
    if (gx) {
        int r = tensor__cudnn_try(c, "cudnnConvolutionBackwardData", dperf, dfound, [&](cudnnConvolutionBwdDataAlgo_t algo, void *ws, size_t bytes) {
            return cudnnConvolutionBackwardData(h, one, cd.w, w.data, cd.y, gy.data, cd.conv, algo, ws, bytes, zero, cd.x, gx->data);
        });
        if (r) return r;
        wrote = true;
    }
    if (gw) {
        int r = tensor__cudnn_try(c, "cudnnConvolutionBackwardFilter", fperf, ffound, [&](cudnnConvolutionBwdFilterAlgo_t algo, void *ws, size_t bytes) {
            return cudnnConvolutionBackwardFilter(h, one, cd.x, x.data, cd.y, gy.data, cd.conv, algo, ws, bytes, zero, cd.w, gw->data);
        });
        /* gx written and no algorithm for gw: the whole backward again by im2col (it rewrites gx) */
        if (r < 0 && wrote) return -1;
        if (r) return r;
    }
    return 0;
}
#endif /* TENSOR_USE_CUDNN */

/* conv1d/conv2d: in[0] x [N, C, (H,) W] or unbatched, in[1] w [O, C / groups, (kH,) kW], in[2]
   bias [O] (optional), ip = {stride, padding, dilation, groups}; out [N, O, (oH,) oW]. */
static int tensor__cuda_conv_run(tensor__dev_call *c, int sd) {
    if (c->n_in < 2) return tensor__cuda_fail(c, "%s: expected 2 or 3 inputs, got %d", tensor__cuda_op_name(c->op), c->n_in);
    const tensor__dev_operand &x = c->in[0], &w = c->in[1], &out = c->out;
    if (!tensor__cuda_conv_check(c, sd, x, w, out)) return 1;
    const char *bias = nullptr;
    tensor_dtype bd = TENSOR_F32;
    int64_t bstep = 0;
    if (c->n_in > 2 && !tensor__cuda_norm_param(c, c->in[2], w.shape[0], "bias", &bias, &bd, &bstep)) return 1;
    tensor__cuda_conv_geom g;
    tensor__cuda_conv_geometry(x, w, out, sd, c->ip, &g);
    if (tensor__cuda_numel(out) == 0) return 0;
#ifdef TENSOR_USE_CUDNN
    int by_cudnn = tensor__cudnn_conv_forward(c, g, x, w, out, bias, bd, bstep);
    if (by_cudnn >= 0) return by_cudnn;
#endif
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    tensor_dtype ct = x.dtype == TENSOR_F64 ? TENSOR_F64 : TENSOR_F32;
    int xsz = tensor__cuda_size(x.dtype), csz = tensor__cuda_size(ct);
    int64_t Cg = g.C / g.groups, Og = g.O / g.groups, K = Cg * g.kH * g.kW, P = g.oH * g.oW, rows = g.C * g.kH * g.kW;
    tensor__cuda_conv_scratch sc;
    const void *wd = tensor__cuda_dense_as(c, w, x.dtype, &sc.p[0]);
    if (!wd) return 1;
    size_t per_image = (size_t)(rows * P) * (size_t)xsz + (size_t)(g.O * P) * (size_t)csz;
    int64_t nb = per_image ? (int64_t)(TENSOR__CUDA_CONV_CHUNK / per_image) : g.N;
    if (nb < 1) nb = 1;
    if (nb > g.N) nb = g.N;
    if (!(sc.p[1] = tensor__cuda_alloc((size_t)(rows * nb * P) * (size_t)xsz, c->error, sizeof c->error))) return 1;
    if (!(sc.p[2] = tensor__cuda_alloc((size_t)(g.O * nb * P) * (size_t)csz, c->error, sizeof c->error))) return 1;
    for (int64_t n0 = 0; n0 < g.N; n0 += nb) {
        int64_t bn = g.N - n0 < nb ? g.N - n0 : nb, ld = bn * P;
        if (tensor__cuda_im2col(c, g, x.data, x.dtype, sc.p[1], x.dtype, n0, bn, s)) return 1;
        /* row-major outT_g [Og, ld] = w_g [Og, K] @ cols_g [K, ld]: column-major outT_g^T = cols_g^T w_g^T */
        if (tensor__cuda_conv_gemm(c, false, false, ld, Og, K, sc.p[1], ld, K * ld, wd, K, Og * K, false, sc.p[2], Og * ld, g.groups, x.dtype, ct)) return 1;
        int64_t total = bn * g.O * P;
        TENSOR__CUDA_LAUNCH_BEGIN();
        if (ct == TENSOR_F64)
            tensor__cuda_conv_epilogue<double><<<tensor__cuda_blocks(total), TENSOR__CUDA_THREADS, 0, s>>>(g, (const double *)sc.p[2], bias, bd, bstep, (char *)out.data, out.dtype, n0, bn, total);
        else
            tensor__cuda_conv_epilogue<float><<<tensor__cuda_blocks(total), TENSOR__CUDA_THREADS, 0, s>>>(g, (const float *)sc.p[2], bias, bd, bstep, (char *)out.data, out.dtype, n0, bn, total);
        if (tensor__cuda_launch_check(c)) return 1;
    }
    return 0;
}
static int tensor__cuda_conv2d(tensor__dev_call *c) { return tensor__cuda_conv_run(c, 2); }
static int tensor__cuda_conv1d(tensor__dev_call *c) { return tensor__cuda_conv_run(c, 1); }

/* ---- pooling: in[0] x [N, C, H, W] or [C, H, W], ip = {kernel, stride (resolved), padding}, out
   [.., oH, oW]. Window (oh, ow) covers rows [oh s - pad, + k) and columns [ow s - pad, + k)
   clipped to the input; max: the first maximum in row-major order, or the first NaN (a window of
   -inf picks its first element); avg: the in-bounds sum in Acc, row-major, / k^2 (padding counted,
   as the CPU). Acc: double for f64, else float (the CPU's compute dtype). ---- */
struct tensor__cuda_pool_geom {
    int64_t N, C, H, W, oH, oW, k, s, pad;
    int64_t xs[4];   /* element strides of x as [n, c, h, w] (0 on an absent n) */
    int64_t ys[4];   /* of the pooled operand (the output or its gradient) */
};
static bool tensor__cuda_pool_geometry(tensor__dev_call *c, const tensor__dev_operand &x, const tensor__dev_operand &y, tensor__cuda_pool_geom *p) {
    memset(p, 0, sizeof *p);
    if ((x.ndim != 3 && x.ndim != 4) || y.ndim != x.ndim || !tensor__cuda_is_float(x.dtype) || !tensor__cuda_is_float(y.dtype) ||
        (x.ndim == 4 && y.shape[0] != x.shape[0]) || y.shape[x.ndim - 3] != x.shape[x.ndim - 3] || c->ip[0] < 1 || c->ip[1] < 1 || c->ip[2] < 0) {
        tensor__cuda_fail(c, "%s: invalid operands", tensor__cuda_op_name(c->op));
        return false;
    }
    int b = x.ndim == 4 ? 1 : 0;
    p->N = b ? x.shape[0] : 1;
    p->C = x.shape[b];
    p->H = x.shape[b + 1];
    p->W = x.shape[b + 2];
    p->oH = y.shape[b + 1];
    p->oW = y.shape[b + 2];
    p->k = c->ip[0];
    p->s = c->ip[1];
    p->pad = c->ip[2];
    for (int d = 0; d < 4; d++) {
        p->xs[d] = d < 1 - b ? 0 : x.strides[d - (1 - b)];
        p->ys[d] = d < 1 - b ? 0 : y.strides[d - (1 - b)];
    }
    return true;
}
/* The window of output (oh, ow), clipped: rows [h0, h1), columns [w0, w1). */
TENSOR__CUDA_HD void tensor__cuda_pool_window(const tensor__cuda_pool_geom &p, int64_t oh, int64_t ow, int64_t *h0, int64_t *h1, int64_t *w0, int64_t *w1) {
    int64_t a = oh * p.s - p.pad, b = ow * p.s - p.pad;
    *h1 = a + p.k < p.H ? a + p.k : p.H;
    *w1 = b + p.k < p.W ? b + p.k : p.W;
    *h0 = a < 0 ? 0 : a;
    *w0 = b < 0 ? 0 : b;
}
/* The position (ih * W + iw) max pooling picks in a window of plane x (element strides xs[2],
   xs[3], dtype xd), as the CPU's tensor__pool_argmax. */
template <class Acc>
TENSOR__CUDA_D int64_t tensor__cuda_pool_argmax(const tensor__cuda_pool_geom &p, const char *x, tensor_dtype xd, int64_t h0, int64_t h1, int64_t w0, int64_t w1) {
    const int xsz = tensor__cuda_size(xd);
    int64_t at = h0 * p.W + w0;
    Acc best = -(Acc)INFINITY;
    for (int64_t ih = h0; ih < h1; ih++)
        for (int64_t iw = w0; iw < w1; iw++) {
            Acc v = tensor__cuda_ldf<Acc>(x + (ih * p.xs[2] + iw * p.xs[3]) * xsz, xd);
            if (v != v) return ih * p.W + iw;
            if (v > best) { best = v; at = ih * p.W + iw; }
        }
    return at;
}
template <class Acc>
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_pool_kernel(tensor__cuda_pool_geom p, const char *x, tensor_dtype xd, char *y, tensor_dtype yd, bool is_max,
                                                                                int64_t total) {
    const int xsz = tensor__cuda_size(xd), ysz = tensor__cuda_size(yd);
    const Acc div = (Acc)(p.k * p.k);
    TENSOR__CUDA_LOOP(i, total) {
        int64_t ow = i % p.oW, r = i / p.oW, oh = r % p.oH, plane = r / p.oH, ch = plane % p.C, n = plane / p.C;
        const char *xp = x + (n * p.xs[0] + ch * p.xs[1]) * xsz;
        int64_t h0, h1, w0, w1;
        tensor__cuda_pool_window(p, oh, ow, &h0, &h1, &w0, &w1);
        Acc v;
        if (is_max) {
            int64_t at = tensor__cuda_pool_argmax<Acc>(p, xp, xd, h0, h1, w0, w1), ih = at / p.W, iw = at - ih * p.W;
            v = tensor__cuda_ldf<Acc>(xp + (ih * p.xs[2] + iw * p.xs[3]) * xsz, xd);
        } else {
            Acc acc = 0;
            for (int64_t ih = h0; ih < h1; ih++)
                for (int64_t iw = w0; iw < w1; iw++) acc += tensor__cuda_ldf<Acc>(xp + (ih * p.xs[2] + iw * p.xs[3]) * xsz, xd);
            v = acc / div;
        }
        tensor__cuda_store_f64(y + (n * p.ys[0] + ch * p.ys[1] + oh * p.ys[2] + ow * p.ys[3]) * ysz, yd, (double)v);
    }
}
static int tensor__cuda_pool_run(tensor__dev_call *c, bool is_max) {
    if (c->n_in < 1) return tensor__cuda_fail(c, "%s: expected an input", tensor__cuda_op_name(c->op));
    const tensor__dev_operand &x = c->in[0], &y = c->out;
    if (!tensor__cuda_operand_ok(c, x, "input") || x.by_value || !tensor__cuda_operand_ok(c, y, "output") || y.by_value) return 1;
    tensor__cuda_pool_geom p;
    if (!tensor__cuda_pool_geometry(c, x, y, &p)) return 1;
    int64_t total = p.N * p.C * p.oH * p.oW;
    if (total == 0 || p.H * p.W == 0) return 0;
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    TENSOR__CUDA_LAUNCH_BEGIN();
    if (x.dtype == TENSOR_F64)
        tensor__cuda_pool_kernel<double><<<tensor__cuda_blocks(total), TENSOR__CUDA_THREADS, 0, s>>>(p, (const char *)x.data, x.dtype, (char *)y.data, y.dtype, is_max, total);
    else
        tensor__cuda_pool_kernel<float><<<tensor__cuda_blocks(total), TENSOR__CUDA_THREADS, 0, s>>>(p, (const char *)x.data, x.dtype, (char *)y.data, y.dtype, is_max, total);
    return tensor__cuda_launch_check(c);
}
static int tensor__cuda_max_pool2d(tensor__dev_call *c) { return tensor__cuda_pool_run(c, true); }
static int tensor__cuda_avg_pool2d(tensor__dev_call *c) { return tensor__cuda_pool_run(c, false); }

/* ---- grid_sample: in[0] input [N, C, H, W], in[1] grid [N, Ho, Wo, 2] (one float dtype, any
   strides), ip = {mode, padding_mode, align_corners}; out [N, C, Ho, Wo]. A thread per grid point
   (all channels), in double, the taps from the shared tensor__gs_taps_of (>>formulas), as the CPU's
   kernel. ---- */
struct tensor__cuda_gs_args {
    const char *x, *g;
    int64_t xs[4], gs[4], N, C, H, W, Ho, Wo;
    tensor_dtype dt;
    int size, mode, pad, align;
};
TENSOR__CUDA_D void tensor__cuda_gs_point(const tensor__cuda_gs_args &a, int64_t q, tensor__gs_taps *tx, tensor__gs_taps *ty, int64_t *n, int64_t *h, int64_t *w) {
    int64_t P = a.Ho * a.Wo, p = q % P;
    *n = q / P;
    *h = p / a.Wo;
    *w = p % a.Wo;
    const char *gp = a.g + (*n * a.gs[0] + *h * a.gs[1] + *w * a.gs[2]) * a.size;
    tensor__gs_taps_of(tensor__cuda_load_f64(gp, a.dt), a.W, a.mode, a.pad, a.align, tx);
    tensor__gs_taps_of(tensor__cuda_load_f64(gp + a.gs[3] * a.size, a.dt), a.H, a.mode, a.pad, a.align, ty);
}
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_gs_kernel(tensor__cuda_gs_args a, char *out, int64_t os0, int64_t os1, int64_t os2, int64_t os3, int64_t n) {
    TENSOR__CUDA_LOOP(q, n) {
        tensor__gs_taps tx, ty;
        int64_t b, h, w;
        tensor__cuda_gs_point(a, q, &tx, &ty, &b, &h, &w);
        for (int64_t c = 0; c < a.C; c++) {
            const char *xc = a.x + (b * a.xs[0] + c * a.xs[1]) * a.size;
            double acc = 0;
            for (int j = 0; j < ty.k; j++)
                for (int i = 0; i < tx.k; i++)
                    if (ty.v[j] && tx.v[i]) acc += tensor__cuda_load_f64(xc + (ty.c[j] * a.xs[2] + tx.c[i] * a.xs[3]) * a.size, a.dt) * (tx.w[i] * ty.w[j]);
            tensor__cuda_store_f64(out + (b * os0 + c * os1 + h * os2 + w * os3) * a.size, a.dt, acc);
        }
    }
}
static bool tensor__cuda_gs_setup(tensor__dev_call *c, tensor__cuda_gs_args *a) {
    const tensor__dev_operand &x = c->in[0], &g = c->in[1];
    if (c->n_in != 2 || !tensor__cuda_operand_ok(c, x, "input") || x.by_value || !tensor__cuda_operand_ok(c, g, "grid") || g.by_value) {
        if (c->n_in != 2) tensor__cuda_fail(c, "grid_sample: expected 2 inputs, got %d", c->n_in);
        return false;
    }
    if (x.ndim != 4 || g.ndim != 4 || g.shape[3] != 2 || g.shape[0] != x.shape[0] || x.dtype != g.dtype || !tensor__cuda_is_float(x.dtype)) {
        tensor__cuda_fail(c, "grid_sample: invalid operands");
        return false;
    }
    a->x = (const char *)x.data;
    a->g = (const char *)g.data;
    for (int d = 0; d < 4; d++) { a->xs[d] = x.strides[d]; a->gs[d] = g.strides[d]; }
    a->N = x.shape[0]; a->C = x.shape[1]; a->H = x.shape[2]; a->W = x.shape[3]; a->Ho = g.shape[1]; a->Wo = g.shape[2];
    a->dt = x.dtype;
    a->size = tensor__cuda_size(x.dtype);
    a->mode = (int)c->ip[0]; a->pad = (int)c->ip[1]; a->align = (int)c->ip[2];
    return true;
}
static int tensor__cuda_grid_sample(tensor__dev_call *c) {
    tensor__cuda_gs_args a;
    if (!tensor__cuda_gs_setup(c, &a)) return 1;
    const tensor__dev_operand &out = c->out;
    if (!tensor__cuda_operand_ok(c, out, "output") || out.by_value || out.ndim != 4 || out.dtype != a.dt) return tensor__cuda_fail(c, "grid_sample: invalid output");
    int64_t n = a.N * a.Ho * a.Wo;
    if (n == 0 || a.C == 0) return 0;
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    TENSOR__CUDA_LAUNCH_BEGIN();
    tensor__cuda_gs_kernel<<<tensor__cuda_blocks(n), TENSOR__CUDA_THREADS, 0, s>>>(a, (char *)out.data, out.strides[0], out.strides[1], out.strides[2], out.strides[3], n);
    return tensor__cuda_launch_check(c);
}

// >>cuda-linalg-decomp ---------------------------------------------------------------------------
/* linalg_lu_factor, linalg_cholesky, linalg_solve_triangular (tensor.h's >>linalg-decomp; its
   front-ends hand these contiguous f32/f64 operands at one batch shape): one thread block per
   matrix, working in global memory (out holds the copy of A being factored); plain loops, kept
   simple. The front-ends read U's / L's diagonal afterwards for the singular / not
   positive-definite errors, so the kernels report nothing of their own. */
static bool tensor__cuda_la_dense(const tensor__dev_operand &t) {
    int64_t s = 1;
    for (int d = t.ndim - 1; d >= 0; d--) {
        if (t.shape[d] != 1 && t.strides[d] != s) return false;
        s *= t.shape[d];
    }
    return true;
}
/* the operands' common checks; *batches: matrices in out, n: their order */
static bool tensor__cuda_la_operands(tensor__dev_call *c, int n_in, int64_t *batches, int64_t *n) {
    if (c->n_in != n_in) { tensor__cuda_fail(c, "%s: expected %d inputs, got %d", tensor__cuda_op_name(c->op), n_in, c->n_in); return false; }
    for (int i = 0; i < n_in; i++) {
        const tensor__dev_operand &t = c->in[i];
        if (!tensor__cuda_operand_ok(c, t, "input") || t.by_value || t.ndim < 2 || t.dtype != c->out.dtype || !tensor__cuda_la_dense(t)) {
            tensor__cuda_fail(c, "%s: expected dense f32/f64 matrices", tensor__cuda_op_name(c->op));
            return false;
        }
    }
    const tensor__dev_operand &out = c->out;
    if (!tensor__cuda_operand_ok(c, out, "output") || out.by_value || out.ndim < 2 || !tensor__cuda_la_dense(out) || (out.dtype != TENSOR_F32 && out.dtype != TENSOR_F64)) {
        tensor__cuda_fail(c, "%s: expected a dense f32/f64 output", tensor__cuda_op_name(c->op));
        return false;
    }
    *n = c->in[0].shape[c->in[0].ndim - 1];
    int64_t rows = out.shape[out.ndim - 2] * out.shape[out.ndim - 1];
    *batches = rows ? tensor__cuda_numel(out) / rows : 0;
    if (*batches > 2147483647) { tensor__cuda_fail(c, "%s: more than 2^31 - 1 matrices", tensor__cuda_op_name(c->op)); return false; }
    return true;
}

template <typename T>
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_lu_kernel(const T *in, T *out, int32_t *piv, int64_t n) {
    __shared__ int64_t pivot_row;
    const int64_t nn = n * n;
    const T *src = in + (int64_t)blockIdx.x * nn;
    T *a = out + (int64_t)blockIdx.x * nn;
    int32_t *pv = piv + (int64_t)blockIdx.x * n;
    for (int64_t i = threadIdx.x; i < nn; i += blockDim.x) a[i] = src[i];
    __syncthreads();
    for (int64_t j = 0; j < n; j++) {
        if (threadIdx.x == 0) { /* the first row of largest |value| in column j, as LAPACK */
            int64_t p = j;
            T best = a[j * n + j] < 0 ? -a[j * n + j] : a[j * n + j];
            for (int64_t i = j + 1; i < n; i++) {
                T v = a[i * n + j] < 0 ? -a[i * n + j] : a[i * n + j];
                if (v > best) { best = v; p = i; }
            }
            pv[j] = (int32_t)(p + 1);
            pivot_row = p;
        }
        __syncthreads();
        const int64_t p = pivot_row;
        if (p != j)
            for (int64_t c = threadIdx.x; c < n; c += blockDim.x) { T t = a[j * n + c]; a[j * n + c] = a[p * n + c]; a[p * n + c] = t; }
        __syncthreads();
        const T d = a[j * n + j];
        if (d != 0)
            for (int64_t i = j + 1 + threadIdx.x; i < n; i += blockDim.x) a[i * n + j] /= d;
        __syncthreads();
        const int64_t m = n - j - 1;
        for (int64_t idx = threadIdx.x; idx < m * m; idx += blockDim.x) {
            int64_t i = j + 1 + idx / m, c = j + 1 + idx % m;
            a[i * n + c] -= a[i * n + j] * a[j * n + c];
        }
        __syncthreads();
    }
}
/* lower Cholesky factor; a leading minor that is not positive-definite leaves NaN on the diagonal
   there (the front-end's check) and stops */
template <typename T>
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_cholesky_kernel(const T *in, T *out, int64_t n) {
    __shared__ int bad;
    const int64_t nn = n * n;
    const T *src = in + (int64_t)blockIdx.x * nn;
    T *a = out + (int64_t)blockIdx.x * nn;
    for (int64_t i = threadIdx.x; i < nn; i += blockDim.x) a[i] = src[i];
    if (threadIdx.x == 0) bad = 0;
    __syncthreads();
    for (int64_t j = 0; j < n; j++) {
        if (threadIdx.x == 0) {
            T d = a[j * n + j];
            for (int64_t p = 0; p < j; p++) d -= a[j * n + p] * a[j * n + p];
            if (!(d > 0)) { a[j * n + j] = (T)NAN; bad = 1; }
            else a[j * n + j] = sqrt(d);
        }
        __syncthreads();
        if (bad) break; /* the same for every thread of the block */
        const T d = a[j * n + j];
        for (int64_t i = j + 1 + threadIdx.x; i < n; i += blockDim.x) {
            T s = a[i * n + j];
            for (int64_t p = 0; p < j; p++) s -= a[i * n + p] * a[j * n + p];
            a[i * n + j] = s / d;
        }
        __syncthreads();
    }
    __syncthreads();
    for (int64_t idx = threadIdx.x; idx < nn; idx += blockDim.x)
        if (idx % n > idx / n) a[idx] = 0;
}
/* X = A^-1 B for triangular A: each thread substitutes down (or up) its own columns of X */
template <typename T>
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_trsm_kernel(const T *A, const T *B, T *X, int64_t n, int64_t k, bool upper, bool unit) {
    const T *a = A + (int64_t)blockIdx.x * n * n;
    const T *b = B + (int64_t)blockIdx.x * n * k;
    T *x = X + (int64_t)blockIdx.x * n * k;
    for (int64_t c = threadIdx.x; c < k; c += blockDim.x) {
        for (int64_t s = 0; s < n; s++) {
            int64_t i = upper ? n - 1 - s : s, p0 = upper ? i + 1 : 0, p1 = upper ? n : i;
            T v = b[i * k + c];
            for (int64_t p = p0; p < p1; p++) v -= a[i * n + p] * x[p * k + c];
            if (!unit) v /= a[i * n + i];
            x[i * k + c] = v;
        }
    }
}

static int tensor__cuda_linalg_lu_factor(tensor__dev_call *c) {
    int64_t batches, n;
    if (!tensor__cuda_la_operands(c, 1, &batches, &n)) return 1;
    const tensor__dev_operand &piv = c->out2;
    if (!tensor__cuda_operand_ok(c, piv, "pivots") || piv.by_value || piv.dtype != TENSOR_I32 || !tensor__cuda_la_dense(piv))
        return tensor__cuda_fail(c, "%s: expected dense i32 pivots", tensor__cuda_op_name(c->op));
    if (batches == 0 || n == 0) return 0;
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    TENSOR__CUDA_LAUNCH_BEGIN();
    if (c->out.dtype == TENSOR_F64)
        tensor__cuda_lu_kernel<double><<<(unsigned)batches, TENSOR__CUDA_THREADS, 0, s>>>((const double *)c->in[0].data, (double *)c->out.data, (int32_t *)piv.data, n);
    else
        tensor__cuda_lu_kernel<float><<<(unsigned)batches, TENSOR__CUDA_THREADS, 0, s>>>((const float *)c->in[0].data, (float *)c->out.data, (int32_t *)piv.data, n);
    return tensor__cuda_launch_check(c);
}
static int tensor__cuda_linalg_cholesky(tensor__dev_call *c) {
    int64_t batches, n;
    if (!tensor__cuda_la_operands(c, 1, &batches, &n)) return 1;
    if (batches == 0 || n == 0) return 0;
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    TENSOR__CUDA_LAUNCH_BEGIN();
    if (c->out.dtype == TENSOR_F64)
        tensor__cuda_cholesky_kernel<double><<<(unsigned)batches, TENSOR__CUDA_THREADS, 0, s>>>((const double *)c->in[0].data, (double *)c->out.data, n);
    else
        tensor__cuda_cholesky_kernel<float><<<(unsigned)batches, TENSOR__CUDA_THREADS, 0, s>>>((const float *)c->in[0].data, (float *)c->out.data, n);
    return tensor__cuda_launch_check(c);
}
static int tensor__cuda_linalg_solve_triangular(tensor__dev_call *c) {
    int64_t batches, n;
    if (!tensor__cuda_la_operands(c, 2, &batches, &n)) return 1;
    int64_t k = c->out.shape[c->out.ndim - 1];
    if (batches == 0 || n == 0 || k == 0) return 0;
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    bool upper = c->ip[0] != 0, unit = c->ip[1] != 0;
    TENSOR__CUDA_LAUNCH_BEGIN();
    if (c->out.dtype == TENSOR_F64)
        tensor__cuda_trsm_kernel<double><<<(unsigned)batches, TENSOR__CUDA_THREADS, 0, s>>>((const double *)c->in[0].data, (const double *)c->in[1].data, (double *)c->out.data, n, k, upper, unit);
    else
        tensor__cuda_trsm_kernel<float><<<(unsigned)batches, TENSOR__CUDA_THREADS, 0, s>>>((const float *)c->in[0].data, (const float *)c->in[1].data, (float *)c->out.data, n, k, upper, unit);
    return tensor__cuda_launch_check(c);
}

// >>cuda-linalg-qr-eigh ------------------------------------------------------------------------
/* linalg_qr and linalg_eigh (tensor.h's >>linalg-qr-eigh: the front-ends hand these a contiguous
   f32/f64 A and a packed output per matrix): one thread per matrix running the CPU's algorithm
   (Householder QR with LAPACK's reflectors and Q accumulated backwards; Householder
   tridiagonalisation and implicit QL with Wilkinson shifts), its working copies in global scratch.
   Plain loops, kept simple; eigh leaves NaN eigenvalues where it did not converge, which the
   front-end reports. */
__device__ inline float tensor__qe_abs(float x) { return fabsf(x); }
__device__ inline double tensor__qe_abs(double x) { return fabs(x); }
__device__ inline float tensor__qe_sqrt(float x) { return sqrtf(x); }
__device__ inline double tensor__qe_sqrt(double x) { return sqrt(x); }
__device__ inline float tensor__qe_hypot(float a, float b) { return hypotf(a, b); }
__device__ inline double tensor__qe_hypot(double a, double b) { return hypot(a, b); }
__device__ inline float tensor__qe_copysign(float a, float b) { return copysignf(a, b); }
__device__ inline double tensor__qe_copysign(double a, double b) { return copysign(a, b); }
__device__ inline float tensor__qe_eps(float) { return FLT_EPSILON; }
__device__ inline double tensor__qe_eps(double) { return DBL_EPSILON; }
__device__ inline float tensor__qe_tiny(float) { return FLT_MIN; }
__device__ inline double tensor__qe_tiny(double) { return DBL_MIN; }

/* LAPACK's dlarfg on x[0..len): x[0] becomes beta, x[1..] v's tail; returns tau */
template <typename T>
__device__ T tensor__qe_house(T *x, int64_t len) {
    if (len <= 1) return 0;
    T scale = 0, ssq = 0;
    bool nan = false;
    for (int64_t i = 1; i < len; i++) { if (tensor__qe_abs(x[i]) > scale) scale = tensor__qe_abs(x[i]); nan |= x[i] != x[i]; }
    if (nan) scale = 1;
    else if (scale == 0) return 0;
    for (int64_t i = 1; i < len; i++) { T t = x[i] / scale; ssq += t * t; }
    T xnorm = scale * tensor__qe_sqrt(ssq), alpha = x[0];
    T beta = -tensor__qe_copysign(tensor__qe_hypot(alpha, xnorm), alpha);
    T tau = (beta - alpha) / beta, s = 1 / (alpha - beta);
    for (int64_t i = 1; i < len; i++) x[i] *= s;
    x[0] = beta;
    return tau;
}
/* y[0..len) -= tau v (v . y), v = [1, v1[0..len-1)] */
template <typename T>
__device__ void tensor__qe_house_apply(const T *v1, T tau, T *y, int64_t len) {
    T s = y[0];
    for (int64_t i = 1; i < len; i++) s += v1[i - 1] * y[i];
    s *= tau;
    y[0] -= s;
    for (int64_t i = 1; i < len; i++) y[i] -= s * v1[i - 1];
}
/* a: [batches, m, n]; out: [batches, m*kq + kr*n]; scratch: [batches, n*m + k + kq*m] */
template <typename T>
__global__ void tensor__cuda_qr_kernel(const T *in, T *out, T *scratch, int64_t batches, int64_t m, int64_t n, int64_t kq, int64_t kr) {
    int64_t b = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= batches) return;
    int64_t k = m < n ? m : n;
    const T *a = in + b * m * n;
    T *q = out + b * (m * kq + kr * n), *r = q + m * kq;
    T *at = scratch + b * (n * m + k + kq * m), *tau = at + n * m, *qt = tau + k;
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < n; j++) at[j * m + i] = a[i * n + j];
    for (int64_t j = 0; j < k; j++) {
        T *cj = at + j * m + j;
        tau[j] = tensor__qe_house(cj, m - j);
        if (tau[j] != 0)
            for (int64_t c = j + 1; c < n; c++) tensor__qe_house_apply(cj + 1, tau[j], at + c * m + j, m - j);
    }
    for (int64_t i = 0; i < kr; i++)
        for (int64_t c = 0; c < n; c++) r[i * n + c] = i <= c && i < k ? at[c * m + i] : (T)0;
    if (!kq) return;
    for (int64_t c = 0; c < kq; c++)
        for (int64_t i = 0; i < m; i++) qt[c * m + i] = i == c ? (T)1 : (T)0;
    for (int64_t j = k - 1; j >= 0; j--) {
        if (tau[j] == 0) continue;
        for (int64_t c = j; c < kq; c++) tensor__qe_house_apply(at + j * m + j + 1, tau[j], qt + c * m + j, m - j);
    }
    for (int64_t i = 0; i < m; i++)
        for (int64_t c = 0; c < kq; c++) q[i * kq + c] = qt[c * m + i];
}
/* a: [batches, n, n]; out: [batches, n (+ n*n)]: eigenvalues ascending, then V; scratch:
   [batches, 2 n*n + 4 n] */
template <typename T>
__global__ void tensor__cuda_eigh_kernel(const T *in, T *out, T *scratch, int64_t batches, int64_t n, bool upper, bool vectors) {
    int64_t b = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= batches) return;
    const T *a = in + b * n * n;
    T *wout = out + b * (n + (vectors ? n * n : 0)), *vout = wout + n;
    T *s = scratch + b * (2 * n * n + 4 * n), *z = s + n * n, *d = z + n * n, *e = d + n, *tau = e + n, *tmp = tau + n;
    for (int64_t i = 0; i < n; i++)
        for (int64_t j = 0; j <= i; j++) s[i * n + j] = s[j * n + i] = upper ? a[j * n + i] : a[i * n + j];
    for (int64_t k = 0; k + 2 < n; k++) {
        int64_t p = n - k - 1;
        T *x = s + k * n + k + 1;
        d[k] = s[k * n + k];
        T t = tau[k] = tensor__qe_house(x, p);
        e[k] = x[0];
        if (t == 0) continue;
        T yv = 0;
        for (int64_t i = 0; i < p; i++) {
            const T *row = s + (k + 1 + i) * n + k + 1;
            T acc = row[0];
            for (int64_t j = 1; j < p; j++) acc += row[j] * x[j];
            tmp[i] = t * acc;
            yv += tmp[i] * (i ? x[i] : (T)1);
        }
        T kk = t * yv / 2;
        for (int64_t i = 0; i < p; i++) tmp[i] -= kk * (i ? x[i] : (T)1);
        for (int64_t i = 0; i < p; i++) {
            T *row = s + (k + 1 + i) * n + k + 1;
            T vi = i ? x[i] : (T)1, wi = tmp[i];
            row[0] -= vi * tmp[0] + wi;
            for (int64_t j = 1; j < p; j++) row[j] -= vi * tmp[j] + wi * x[j];
        }
    }
    if (n >= 2) {
        d[n - 2] = s[(n - 2) * n + n - 2];
        e[n - 2] = s[(n - 2) * n + n - 1];
        tau[n - 2] = 0;
    }
    d[n - 1] = s[(n - 1) * n + n - 1];
    e[n - 1] = 0;
    if (vectors) {
        for (int64_t i = 0; i < n * n; i++) z[i] = 0;
        for (int64_t i = 0; i < n; i++) z[i * n + i] = 1;
        for (int64_t k = n - 3; k >= 0; k--) {
            T t = tau[k];
            if (t == 0) continue;
            int64_t p = n - k - 1;
            const T *x = s + k * n + k + 1;
            for (int64_t c = 0; c < p; c++) tmp[c] = 0;
            for (int64_t i = 0; i < p; i++) {
                T vi = i ? x[i] : (T)1;
                const T *row = z + (k + 1 + i) * n + k + 1;
                for (int64_t c = 0; c < p; c++) tmp[c] += vi * row[c];
            }
            for (int64_t i = 0; i < p; i++) {
                T f = t * (i ? x[i] : (T)1);
                T *row = z + (k + 1 + i) * n + k + 1;
                for (int64_t c = 0; c < p; c++) row[c] -= f * tmp[c];
            }
        }
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = i + 1; j < n; j++) { T t = z[i * n + j]; z[i * n + j] = z[j * n + i]; z[j * n + i] = t; }
    }
    const T eps = tensor__qe_eps((T)0), tiny = tensor__qe_tiny((T)0);
    bool ok = true;
    for (int64_t l = 0; l < n && ok; l++) {
        int iter = 0;
        int64_t m;
        for (;;) {
            for (m = l; m < n - 1; m++) {
                T dd = tensor__qe_abs(d[m]) + tensor__qe_abs(d[m + 1]);
                if (tensor__qe_abs(e[m]) <= eps * dd || tensor__qe_abs(e[m]) < tiny) break;
            }
            if (m == l) break;
            if (++iter > 60) { ok = false; break; }
            T g = (d[l + 1] - d[l]) / (2 * e[l]);
            T r = tensor__qe_hypot(g, (T)1);
            g = d[m] - d[l] + e[l] / (g + tensor__qe_copysign(r, g));
            T sn = 1, cs = 1, p = 0;
            int64_t i;
            for (i = m - 1; i >= l; i--) {
                T f = sn * e[i], bb = cs * e[i];
                e[i + 1] = r = tensor__qe_hypot(f, g);
                if (r == 0) { d[i + 1] -= p; e[m] = 0; break; }
                sn = f / r;
                cs = g / r;
                g = d[i + 1] - p;
                r = (d[i] - g) * sn + 2 * cs * bb;
                p = sn * r;
                d[i + 1] = g + p;
                g = cs * r - bb;
                if (vectors) {
                    T *zi = z + i * n, *zj = z + (i + 1) * n;
                    for (int64_t c = 0; c < n; c++) {
                        T f2 = zj[c];
                        zj[c] = sn * zi[c] + cs * f2;
                        zi[c] = cs * zi[c] - sn * f2;
                    }
                }
            }
            if (r == 0 && i >= l) continue;
            d[l] -= p;
            e[l] = g;
            e[m] = 0;
        }
    }
    if (!ok) {
        for (int64_t i = 0; i < n; i++) wout[i] = (T)NAN;
        if (vectors) for (int64_t i = 0; i < n * n; i++) vout[i] = (T)NAN;
        return;
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t bi = i;
        for (int64_t j = i + 1; j < n; j++) if (d[j] < d[bi]) bi = j;
        if (bi == i) continue;
        T t = d[i]; d[i] = d[bi]; d[bi] = t;
        if (vectors)
            for (int64_t c = 0; c < n; c++) { t = z[i * n + c]; z[i * n + c] = z[bi * n + c]; z[bi * n + c] = t; }
    }
    for (int64_t i = 0; i < n; i++) wout[i] = d[i];
    if (vectors)
        for (int64_t i = 0; i < n; i++)
            for (int64_t j = 0; j < n; j++) vout[i * n + j] = z[j * n + i];
}

/* the operands' checks: one dense f32/f64 input [..., m, n], a dense output of its dtype */
static bool tensor__cuda_qe_operands(tensor__dev_call *c, int64_t *batches, int64_t *m, int64_t *n) {
    const tensor__dev_operand &a = c->in[0], &out = c->out;
    if (c->n_in != 1 || !tensor__cuda_operand_ok(c, a, "input") || a.by_value || a.ndim < 2 || !tensor__cuda_la_dense(a) ||
        (a.dtype != TENSOR_F32 && a.dtype != TENSOR_F64)) {
        tensor__cuda_fail(c, "%s: expected a dense f32/f64 input", tensor__cuda_op_name(c->op));
        return false;
    }
    if (!tensor__cuda_operand_ok(c, out, "output") || out.by_value || out.ndim < 1 || !tensor__cuda_la_dense(out) || out.dtype != a.dtype) {
        tensor__cuda_fail(c, "%s: expected a dense output of the input's dtype", tensor__cuda_op_name(c->op));
        return false;
    }
    *m = a.shape[a.ndim - 2];
    *n = a.shape[a.ndim - 1];
    *batches = 1;
    for (int d = 0; d < a.ndim - 2; d++) *batches *= a.shape[d];
    return true;
}
static int tensor__cuda_linalg_qr(tensor__dev_call *c) {
    int64_t batches, m, n;
    if (!tensor__cuda_qe_operands(c, &batches, &m, &n)) return 1;
    int64_t k = m < n ? m : n, kq = c->ip[0] == 2 ? 0 : c->ip[0] == 1 ? m : k, kr = c->ip[0] == 1 ? m : k;
    if (batches == 0 || m * kq + kr * n == 0) return 0;
    size_t esz = c->out.dtype == TENSOR_F64 ? 8 : 4;
    tensor__cuda_scratch sc;
    sc.p[0] = tensor__cuda_alloc((size_t)(batches * (n * m + k + kq * m)) * esz, c->error, sizeof c->error);
    if (!sc.p[0]) return 1;
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    unsigned blocks = (unsigned)((batches + 127) / 128);
    TENSOR__CUDA_LAUNCH_BEGIN();
    if (c->out.dtype == TENSOR_F64)
        tensor__cuda_qr_kernel<double><<<blocks, 128, 0, s>>>((const double *)c->in[0].data, (double *)c->out.data, (double *)sc.p[0], batches, m, n, kq, kr);
    else
        tensor__cuda_qr_kernel<float><<<blocks, 128, 0, s>>>((const float *)c->in[0].data, (float *)c->out.data, (float *)sc.p[0], batches, m, n, kq, kr);
    return tensor__cuda_launch_check(c);
}
static int tensor__cuda_linalg_eigh(tensor__dev_call *c) {
    int64_t batches, m, n;
    if (!tensor__cuda_qe_operands(c, &batches, &m, &n)) return 1;
    if (m != n) return tensor__cuda_fail(c, "linalg_eigh: expected square matrices");
    if (batches == 0 || n == 0) return 0;
    bool upper = c->ip[0] != 0, vectors = c->ip[1] == 0;
    size_t esz = c->out.dtype == TENSOR_F64 ? 8 : 4;
    tensor__cuda_scratch sc;
    sc.p[0] = tensor__cuda_alloc((size_t)(batches * (2 * n * n + 4 * n)) * esz, c->error, sizeof c->error);
    if (!sc.p[0]) return 1;
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    unsigned blocks = (unsigned)((batches + 127) / 128);
    TENSOR__CUDA_LAUNCH_BEGIN();
    if (c->out.dtype == TENSOR_F64)
        tensor__cuda_eigh_kernel<double><<<blocks, 128, 0, s>>>((const double *)c->in[0].data, (double *)c->out.data, (double *)sc.p[0], batches, n, upper, vectors);
    else
        tensor__cuda_eigh_kernel<float><<<blocks, 128, 0, s>>>((const float *)c->in[0].data, (float *)c->out.data, (float *)sc.p[0], batches, n, upper, vectors);
    return tensor__cuda_launch_check(c);
}

// >>cuda-linalg-svd ------------------------------------------------------------------------------
/* linalg_svd (tensor.h's >>linalg-svd; its front-end hands a contiguous f32/f64 A [..., m, n] and
   a contiguous output: U, S, Vh packed per matrix, or S only when ip[1]): one thread per matrix
   running the CPU's algorithm line for line (one-sided Jacobi in double, sorted descending,
   Gram-Schmidt completion from the unit vectors), its G, R and Q in a global scratch. */
__device__ static void tensor__cuda_svd_complete(double *Q, int64_t have, int64_t want, int64_t L) {
    int64_t cand = 0;
    for (int64_t j = have; j < want; j++) {
        double *v = Q + j * L;
        for (int64_t tries = 0; tries < L; tries++, cand = (cand + 1) % L) {
            for (int64_t i = 0; i < L; i++) v[i] = i == cand ? 1.0 : 0.0;
            for (int pass = 0; pass < 2; pass++)
                for (int64_t r = 0; r < j; r++) {
                    const double *q = Q + r * L;
                    double d = 0;
                    for (int64_t i = 0; i < L; i++) d += q[i] * v[i];
                    for (int64_t i = 0; i < L; i++) v[i] -= d * q[i];
                }
            double s = 0;
            for (int64_t i = 0; i < L; i++) s += v[i] * v[i];
            if (s > 0.5 / (double)L) {
                s = 1 / sqrt(s);
                for (int64_t i = 0; i < L; i++) v[i] *= s;
                cand = (cand + 1) % L;
                break;
            }
        }
    }
}
template <typename T>
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_svd_kernel(const T *in, T *out, double *scratch, int64_t *perms, int64_t batches, int64_t m, int64_t n, bool full, bool values) {
    int64_t b = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (b >= batches) return;
    const bool tall = m >= n;
    const int64_t L = tall ? m : n, k = tall ? n : m, uc = full ? m : k, vr = full ? n : k;
    const int64_t per = values ? k : m * uc + k + vr * n;
    const T *a = in + b * m * n;
    T *o = out + b * per;
    double *G = scratch + b * (k * L + k * k + L * L + k), *R = G + k * L, *Q = R + k * k, *sig = Q + L * L;
    int64_t *perm = perms + b * k;
    for (int64_t j = 0; j < k; j++)
        for (int64_t i = 0; i < L; i++) G[j * L + i] = (double)(tall ? a[i * n + j] : a[j * n + i]);
    for (int64_t i = 0; i < k * k; i++) R[i] = i / k == i % k ? 1.0 : 0.0;
    const double tol = sqrt((double)L) * 2.220446049250313e-16; /* sqrt(L) DBL_EPSILON */
    for (int sweep = 0; sweep < 80; sweep++) { /* TENSOR__SVD_SWEEPS */
        bool rotated = false;
        for (int64_t p = 0; p + 1 < k; p++)
            for (int64_t q = p + 1; q < k; q++) {
                double *gp = G + p * L, *gq = G + q * L;
                double alpha = 0, beta = 0, gamma = 0;
                for (int64_t i = 0; i < L; i++) { alpha += gp[i] * gp[i]; beta += gq[i] * gq[i]; gamma += gp[i] * gq[i]; }
                if (!(fabs(gamma) > tol * sqrt(alpha) * sqrt(beta))) continue;
                rotated = true;
                double zeta = (beta - alpha) / (2 * gamma);
                double t = (zeta >= 0 ? 1.0 : -1.0) / (fabs(zeta) + sqrt(1 + zeta * zeta));
                double c = 1 / sqrt(1 + t * t), s = c * t;
                for (int64_t i = 0; i < L; i++) { double x = gp[i], y = gq[i]; gp[i] = c * x - s * y; gq[i] = s * x + c * y; }
                double *rp = R + p * k, *rq = R + q * k;
                for (int64_t i = 0; i < k; i++) { double x = rp[i], y = rq[i]; rp[i] = c * x - s * y; rq[i] = s * x + c * y; }
            }
        if (!rotated) break;
    }
    for (int64_t j = 0; j < k; j++) {
        double s = 0;
        for (int64_t i = 0; i < L; i++) s += G[j * L + i] * G[j * L + i];
        sig[j] = sqrt(s);
        perm[j] = j;
    }
    for (int64_t j = 1; j < k; j++) {
        int64_t v = perm[j], i = j;
        while (i > 0 && (sig[perm[i - 1]] < sig[v] || (sig[perm[i - 1]] != sig[perm[i - 1]] && sig[v] == sig[v]))) { perm[i] = perm[i - 1]; i--; }
        perm[i] = v;
    }
    T *os = values ? o : o + m * uc;
    for (int64_t j = 0; j < k; j++) os[j] = (T)sig[perm[j]];
    if (values) return;
    int64_t r = 0;
    while (r < k && sig[perm[r]] > 0) r++;
    for (int64_t j = 0; j < r; j++)
        for (int64_t i = 0; i < L; i++) Q[j * L + i] = G[perm[j] * L + i] / sig[perm[j]];
    tensor__cuda_svd_complete(Q, r, full ? L : k, L);
    T *u = o, *vh = o + m * uc + k;
    if (tall) {
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < uc; j++) u[i * uc + j] = (T)Q[j * L + i];
        for (int64_t j = 0; j < k; j++)
            for (int64_t i = 0; i < n; i++) vh[j * n + i] = (T)R[perm[j] * k + i];
    } else {
        for (int64_t j = 0; j < vr; j++)
            for (int64_t i = 0; i < n; i++) vh[j * n + i] = (T)Q[j * L + i];
        for (int64_t i = 0; i < m; i++)
            for (int64_t j = 0; j < k; j++) u[i * uc + j] = (T)R[perm[j] * k + i];
    }
}
static int tensor__cuda_linalg_svd(tensor__dev_call *c) {
    if (c->n_in != 1) return tensor__cuda_fail(c, "%s: expected 1 input, got %d", tensor__cuda_op_name(c->op), c->n_in);
    const tensor__dev_operand &a = c->in[0], &out = c->out;
    if (!tensor__cuda_operand_ok(c, a, "input") || !tensor__cuda_operand_ok(c, out, "output")) return 1;
    if (a.by_value || out.by_value || a.ndim < 2 || out.ndim < 1 || a.dtype != out.dtype || (a.dtype != TENSOR_F32 && a.dtype != TENSOR_F64) ||
        !tensor__cuda_la_dense(a) || !tensor__cuda_la_dense(out))
        return tensor__cuda_fail(c, "%s: expected a dense f32/f64 input and output of its dtype", tensor__cuda_op_name(c->op));
    int64_t m = a.shape[a.ndim - 2], n = a.shape[a.ndim - 1], batches = 1;
    for (int d = 0; d < a.ndim - 2; d++) batches *= a.shape[d];
    bool full = c->ip[0] != 0, values = c->ip[1] != 0;
    int64_t k = m < n ? m : n, L = m < n ? n : m;
    if (batches == 0) return 0;
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    tensor__cuda_scratch sc;
    size_t per = (size_t)(k * L + k * k + L * L + k);
    if (!(sc.p[0] = tensor__cuda_alloc(sizeof(double) * per * (size_t)batches + 8, c->error, sizeof c->error))) return 1;
    if (!(sc.p[1] = tensor__cuda_alloc(sizeof(int64_t) * (size_t)(k * batches) + 8, c->error, sizeof c->error))) return 1;
    unsigned blocks = (unsigned)((batches + TENSOR__CUDA_THREADS - 1) / TENSOR__CUDA_THREADS);
    TENSOR__CUDA_LAUNCH_BEGIN();
    if (a.dtype == TENSOR_F64)
        tensor__cuda_svd_kernel<double><<<blocks, TENSOR__CUDA_THREADS, 0, s>>>((const double *)a.data, (double *)out.data, (double *)sc.p[0], (int64_t *)sc.p[1], batches, m, n, full, values);
    else
        tensor__cuda_svd_kernel<float><<<blocks, TENSOR__CUDA_THREADS, 0, s>>>((const float *)a.data, (float *)out.data, (double *)sc.p[0], (int64_t *)sc.p[1], batches, m, n, full, values);
    return tensor__cuda_launch_check(c);
}

// >>cuda-backward --------------------------------------------------------------------------------
/* Fused backward kernels (the device table's backward_kernels), with the CPU's math (>>conv,
   >>pool, >>nn, >>norm, >>loss: tensor__conv_backward, tensor__pool_backward,
   tensor__relu_backward, tensor__softmax_backward, tensor__norm_backward,
   tensor__cross_entropy_backward). Each gets its forward's call record (in[] the saved inputs, p/ip
   as the forward got them), grad the gradient of the forward's output (any layout and float dtype)
   and grads[i] the contiguous gradients to write (data NULL where none is wanted), and writes every
   element of each wanted one. No atomics on floats: every sum is in a fixed order (a gather, a
   per-thread loop, or a block's fixed tree), so results do not depend on the grid; cuBLAS GEMMs are
   deterministic for a given device and problem. */

/* The wanted gradient i (contiguous, of in[i]'s shape, a float dtype); NULL when not wanted or
   after an error (*bad set). */
static const tensor__dev_operand *tensor__cuda_bwd_grad(tensor__dev_call *c, int i, bool *bad) {
    if (i >= c->n_in) return nullptr;
    const tensor__dev_operand &g = c->grads[i], &x = c->in[i];
    if (!g.data) return nullptr;
    bool ok = g.ndim == x.ndim && tensor__cuda_is_float(g.dtype) && !g.by_value && tensor__cuda_rowmajor(g);
    for (int d = 0; ok && d < g.ndim; d++) ok = g.shape[d] == x.shape[d];
    if (!ok) {
        tensor__cuda_fail(c, "%s backward: invalid gradient operand %d", tensor__cuda_op_name(c->op), i);
        *bad = true;
    }
    return ok ? &g : nullptr;
}
/* The incoming gradient: there, and of the forward output's shape `like` (ndim, shape). */
static bool tensor__cuda_bwd_incoming(tensor__dev_call *c, const tensor__dev_operand &like) {
    const tensor__dev_operand &g = c->grad;
    if (!tensor__cuda_operand_ok(c, g, "gradient") || g.by_value || !tensor__cuda_is_float(g.dtype)) return false;
    bool ok = g.ndim == like.ndim;
    for (int d = 0; ok && d < g.ndim; d++) ok = g.shape[d] == like.shape[d];
    if (!ok) tensor__cuda_fail(c, "%s backward: the gradient does not have the output's shape", tensor__cuda_op_name(c->op));
    return ok;
}

/* ---- conv1d/conv2d: gx, gw, gb from x, w and the output's gradient gy. Per chunk of images
   (as the forward): gyT [O, nb P] = gy's chunk in the operand dtype opd (x's dtype when gy has
   it, else the compute dtype ct, as the CPU: a wider gradient is not rounded to bf16), then
     gw_g [Og, K] (+)= gyT_g [Og, nb P] @ cols_g^T, cols = im2col of x in opd (one GEMM over the
       groups; chunks after the first add with beta 1),
     cols_g [K, nb P] = w_g^T @ gyT_g in ct, and col2im as a gather: each gx element sums, in
       (ki, kj) order, the cols entries read from it (the CPU's order), and is written once;
   gb[o] = the sum of gy[:, o] in double (one block per channel, a fixed tree). ---- */
template <class Acc>
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_col2im_kernel(tensor__cuda_conv_geom g, const Acc *cols, char *gx, tensor_dtype gd, int64_t n0, int64_t nb,
                                                                                  int64_t total) {
    const int64_t P = g.oH * g.oW, ld = nb * P, HW = g.H * g.W, kk = g.kH * g.kW;
    const int gsz = tensor__cuda_size(gd);
    TENSOR__CUDA_LOOP(i, total) {
        int64_t iw = i % g.W, r = i / g.W, ih = r % g.H;
        r /= g.H;
        int64_t ch = r % g.C, n = r / g.C;
        Acc acc = 0;
        for (int64_t ki = 0; ki < g.kH; ki++) {
            int64_t th = ih + g.ph - ki * g.dh;
            if (th < 0 || th % g.sh != 0 || th / g.sh >= g.oH) continue;
            int64_t oh = th / g.sh;
            for (int64_t kj = 0; kj < g.kW; kj++) {
                int64_t tw = iw + g.pw - kj * g.dw;
                if (tw < 0 || tw % g.sw != 0 || tw / g.sw >= g.oW) continue;
                acc += cols[(ch * kk + ki * g.kW + kj) * ld + n * P + oh * g.oW + tw / g.sw];
            }
        }
        tensor__cuda_store_f64(gx + ((n0 + n) * g.C * HW + ch * HW + ih * g.W + iw) * gsz, gd, (double)acc);
    }
}
__global__ void __launch_bounds__(TENSOR__CUDA_NN_THREADS) tensor__cuda_conv_gb_kernel(tensor__cuda_conv_geom g, const char *gy, tensor_dtype yd, char *gb, tensor_dtype bd) {
    __shared__ double sh[TENSOR__CUDA_NN_THREADS];
    const int64_t P = g.oH * g.oW, total = g.N * P;
    const int ysz = tensor__cuda_size(yd), bsz = tensor__cuda_size(bd);
    for (int64_t o = blockIdx.x; o < g.O; o += gridDim.x) {
        double acc = 0;
        for (int64_t j = threadIdx.x; j < total; j += TENSOR__CUDA_NN_THREADS) {
            int64_t n = j / P, p = j - n * P, oh = p / g.oW, ow = p - oh * g.oW;
            acc += tensor__cuda_load_f64(gy + (n * g.os[0] + o * g.os[1] + oh * g.os[2] + ow * g.os[3]) * ysz, yd);
        }
        sh[threadIdx.x] = acc;
        __syncthreads();
        for (int h = TENSOR__CUDA_NN_THREADS / 2; h > 0; h >>= 1) {
            if ((int)threadIdx.x < h) sh[threadIdx.x] += sh[threadIdx.x + h];
            __syncthreads();
        }
        if (threadIdx.x == 0) tensor__cuda_store_f64(gb + o * bsz, bd, sh[0]);
        __syncthreads();
    }
}
static int tensor__cuda_conv_backward_run(tensor__dev_call *c, int sd) {
    if (c->n_in < 2) return tensor__cuda_fail(c, "%s backward: expected 2 or 3 inputs, got %d", tensor__cuda_op_name(c->op), c->n_in);
    const tensor__dev_operand &x = c->in[0], &w = c->in[1], &gy = c->grad;
    if (!tensor__cuda_operand_ok(c, gy, "gradient") || !tensor__cuda_conv_check(c, sd, x, w, gy)) return 1;
    bool bad = false;
    const tensor__dev_operand *gx = tensor__cuda_bwd_grad(c, 0, &bad), *gw = tensor__cuda_bwd_grad(c, 1, &bad), *gb = tensor__cuda_bwd_grad(c, 2, &bad);
    if (bad) return 1;
    if (gb && (gb->ndim != 1 || gb->shape[0] != w.shape[0])) return tensor__cuda_fail(c, "%s backward: invalid bias gradient", tensor__cuda_op_name(c->op));
    tensor__cuda_conv_geom g;
    tensor__cuda_conv_geometry(x, w, gy, sd, c->ip, &g);
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    if (tensor__cuda_numel(gy) == 0) { /* every term has a factor of gy: zeros */
        const tensor__dev_operand *all[3] = {gx, gw, gb};
        for (const tensor__dev_operand *t : all)
            if (t && tensor__cuda_fill_run(c, *t, 0)) return 1;
        return 0;
    }
    if (gb && g.O > 0) {
        TENSOR__CUDA_LAUNCH_BEGIN();
        unsigned blocks = (unsigned)(g.O < TENSOR__CUDA_MAX_BLOCKS ? g.O : TENSOR__CUDA_MAX_BLOCKS);
        tensor__cuda_conv_gb_kernel<<<blocks, TENSOR__CUDA_NN_THREADS, 0, s>>>(g, (const char *)gy.data, gy.dtype, (char *)gb->data, gb->dtype);
        if (tensor__cuda_launch_check(c)) return 1;
    }
    if (!gx && !gw) return 0;
#ifdef TENSOR_USE_CUDNN
    int by_cudnn = tensor__cudnn_conv_backward(c, g, x, w, gy, gx, gw);
    if (by_cudnn >= 0) return by_cudnn;
#endif
    tensor_dtype ct = x.dtype == TENSOR_F64 ? TENSOR_F64 : TENSOR_F32, opd = gy.dtype == x.dtype ? x.dtype : ct;
    int csz = tensor__cuda_size(ct), osz = tensor__cuda_size(opd), big = csz > osz ? csz : osz;
    int64_t Cg = g.C / g.groups, Og = g.O / g.groups, K = Cg * g.kH * g.kW, P = g.oH * g.oW, rows = g.C * g.kH * g.kW;
    tensor__cuda_conv_scratch sc;
    const void *wd = nullptr;
    if (gx && !(wd = tensor__cuda_dense_as(c, w, opd, &sc.p[0]))) return 1;
    void *gwd = nullptr; /* gw in ct: gw itself when it has that dtype */
    if (gw) {
        if (gw->dtype == ct) gwd = gw->data;
        else if (!(gwd = sc.p[1] = tensor__cuda_alloc((size_t)(g.O * K) * (size_t)csz, c->error, sizeof c->error))) return 1;
    }
    size_t per_image = (size_t)(rows * P) * (size_t)big + (size_t)(g.O * P) * (size_t)osz;
    int64_t nb = per_image ? (int64_t)(TENSOR__CUDA_CONV_CHUNK / per_image) : g.N;
    if (nb < 1) nb = 1;
    if (nb > g.N) nb = g.N;
    if (!(sc.p[2] = tensor__cuda_alloc((size_t)(rows * nb * P) * (size_t)big, c->error, sizeof c->error))) return 1;   /* cols */
    if (!(sc.p[3] = tensor__cuda_alloc((size_t)(g.O * nb * P) * (size_t)osz, c->error, sizeof c->error))) return 1;    /* gyT */
    for (int64_t n0 = 0; n0 < g.N; n0 += nb) {
        int64_t bn = g.N - n0 < nb ? g.N - n0 : nb, ld = bn * P;
        /* gyT [O, bn P]: gy's images n0.. as [bn, O, oH, oW] written at strides [P, bn P, oW, 1] */
        tensor__dev_operand dst, src;
        memset(&dst, 0, sizeof dst);
        memset(&src, 0, sizeof src);
        dst.ndim = src.ndim = 4;
        const int64_t shape[4] = {bn, g.O, g.oH, g.oW}, dstr[4] = {P, ld, g.oW, 1};
        for (int d = 0; d < 4; d++) {
            dst.shape[d] = src.shape[d] = shape[d];
            dst.strides[d] = dstr[d];
            src.strides[d] = g.os[d];
        }
        dst.data = sc.p[3];
        dst.dtype = opd;
        src.data = (char *)gy.data + n0 * g.os[0] * tensor__cuda_size(gy.dtype);
        src.dtype = gy.dtype;
        if (tensor__cuda_copy_run(c, dst, src)) return 1;
        if (gw) {
            if (tensor__cuda_im2col(c, g, x.data, x.dtype, sc.p[2], opd, n0, bn, s)) return 1;
            /* row-major gw_g [Og, K] = gyT_g [Og, ld] @ cols_g^T: column-major gw_g^T = (cols_g^T)^T gyT_g^T */
            if (tensor__cuda_conv_gemm(c, true, false, K, Og, ld, sc.p[2], ld, K * ld, sc.p[3], ld, Og * ld, n0 > 0, gwd, Og * K, g.groups, opd, ct)) return 1;
        }
        if (gx) {
            /* row-major cols_g [K, ld] = w_g^T [K, Og] @ gyT_g [Og, ld]: column-major cols_g^T = gyT_g^T w_g */
            if (tensor__cuda_conv_gemm(c, false, true, ld, K, Og, sc.p[3], ld, Og * ld, wd, K, Og * K, false, sc.p[2], K * ld, g.groups, opd, ct)) return 1;
            int64_t total = bn * g.C * g.H * g.W;
            if (total > 0) {
                TENSOR__CUDA_LAUNCH_BEGIN();
                if (ct == TENSOR_F64)
                    tensor__cuda_col2im_kernel<double><<<tensor__cuda_blocks(total), TENSOR__CUDA_THREADS, 0, s>>>(g, (const double *)sc.p[2], (char *)gx->data, gx->dtype, n0, bn, total);
                else
                    tensor__cuda_col2im_kernel<float><<<tensor__cuda_blocks(total), TENSOR__CUDA_THREADS, 0, s>>>(g, (const float *)sc.p[2], (char *)gx->data, gx->dtype, n0, bn, total);
                if (tensor__cuda_launch_check(c)) return 1;
            }
        }
    }
    if (gw && gwd != gw->data) { /* ct -> gw's dtype */
        tensor__dev_operand src = *gw;
        src.data = gwd;
        src.dtype = ct;
        if (tensor__cuda_copy_run(c, *gw, src)) return 1;
    }
    return 0;
}
static int tensor__cuda_conv2d_backward(tensor__dev_call *c) { return tensor__cuda_conv_backward_run(c, 2); }
static int tensor__cuda_conv1d_backward(tensor__dev_call *c) { return tensor__cuda_conv_backward_run(c, 1); }

/* ---- max_pool2d / avg_pool2d: gx as a gather: each x element sums, over the windows that hold it
   in row-major window order (the CPU's order), gy (max: where the window's pick, computed once per
   window into scratch, is this element) or gy / k^2 (avg), in Acc, from zero. ---- */
template <class Acc>
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_pool_pick_kernel(tensor__cuda_pool_geom p, const char *x, tensor_dtype xd, int64_t *pick, int64_t total) {
    const int xsz = tensor__cuda_size(xd);
    TENSOR__CUDA_LOOP(i, total) {
        int64_t ow = i % p.oW, r = i / p.oW, oh = r % p.oH, plane = r / p.oH, ch = plane % p.C, n = plane / p.C;
        int64_t h0, h1, w0, w1;
        tensor__cuda_pool_window(p, oh, ow, &h0, &h1, &w0, &w1);
        pick[i] = tensor__cuda_pool_argmax<Acc>(p, x + (n * p.xs[0] + ch * p.xs[1]) * xsz, xd, h0, h1, w0, w1);
    }
}
/* The outputs whose windows hold input row (or column) i: [*lo, *hi] (empty when lo > hi). */
TENSOR__CUDA_HD void tensor__cuda_pool_span(int64_t i, int64_t k, int64_t s, int64_t pad, int64_t on, int64_t *lo, int64_t *hi) {
    int64_t t = i + pad - k + 1; /* o s >= t and o s <= i + pad */
    *lo = t <= 0 ? 0 : (t + s - 1) / s;
    int64_t h = (i + pad) / s;
    *hi = h < on - 1 ? h : on - 1;
}
template <class Acc>
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_pool_bwd_kernel(tensor__cuda_pool_geom p, const int64_t *pick, const char *gy, tensor_dtype yd, char *gx,
                                                                                    tensor_dtype gd, int64_t total) {
    const int ysz = tensor__cuda_size(yd), gsz = tensor__cuda_size(gd);
    const Acc div = (Acc)(p.k * p.k);
    TENSOR__CUDA_LOOP(i, total) {
        int64_t iw = i % p.W, r = i / p.W, ih = r % p.H, plane = r / p.H, ch = plane % p.C, n = plane / p.C;
        int64_t hlo, hhi, wlo, whi;
        tensor__cuda_pool_span(ih, p.k, p.s, p.pad, p.oH, &hlo, &hhi);
        tensor__cuda_pool_span(iw, p.k, p.s, p.pad, p.oW, &wlo, &whi);
        const char *gp = gy + (n * p.ys[0] + ch * p.ys[1]) * ysz;
        Acc acc = 0;
        for (int64_t oh = hlo; oh <= hhi; oh++)
            for (int64_t ow = wlo; ow <= whi; ow++) {
                if (pick && pick[(plane * p.oH + oh) * p.oW + ow] != ih * p.W + iw) continue;
                Acc v = tensor__cuda_ldf<Acc>(gp + (oh * p.ys[2] + ow * p.ys[3]) * ysz, yd);
                acc += pick ? v : v / div;
            }
        tensor__cuda_store_f64(gx + i * gsz, gd, (double)acc);
    }
}
static int tensor__cuda_pool_backward_run(tensor__dev_call *c, bool is_max) {
    if (c->n_in < 1) return tensor__cuda_fail(c, "%s backward: expected an input", tensor__cuda_op_name(c->op));
    const tensor__dev_operand &x = c->in[0], &gy = c->grad;
    if (!tensor__cuda_operand_ok(c, x, "input") || x.by_value || !tensor__cuda_operand_ok(c, gy, "gradient") || gy.by_value) return 1;
    bool bad = false;
    const tensor__dev_operand *gx = tensor__cuda_bwd_grad(c, 0, &bad);
    if (bad) return 1;
    if (!gx) return 0;
    tensor__cuda_pool_geom p;
    if (!tensor__cuda_pool_geometry(c, x, gy, &p)) return 1;
    int64_t total = p.N * p.C * p.H * p.W, pooled = p.N * p.C * p.oH * p.oW;
    if (total == 0) return 0;
    if (pooled == 0) return tensor__cuda_fill_run(c, *gx, 0);
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    tensor__cuda_conv_scratch sc;
    bool f64 = x.dtype == TENSOR_F64;
    if (is_max) {
        if (!(sc.p[0] = tensor__cuda_alloc((size_t)pooled * sizeof(int64_t), c->error, sizeof c->error))) return 1;
        TENSOR__CUDA_LAUNCH_BEGIN();
        if (f64) tensor__cuda_pool_pick_kernel<double><<<tensor__cuda_blocks(pooled), TENSOR__CUDA_THREADS, 0, s>>>(p, (const char *)x.data, x.dtype, (int64_t *)sc.p[0], pooled);
        else tensor__cuda_pool_pick_kernel<float><<<tensor__cuda_blocks(pooled), TENSOR__CUDA_THREADS, 0, s>>>(p, (const char *)x.data, x.dtype, (int64_t *)sc.p[0], pooled);
        if (tensor__cuda_launch_check(c)) return 1;
    }
    TENSOR__CUDA_LAUNCH_BEGIN();
    if (f64) tensor__cuda_pool_bwd_kernel<double><<<tensor__cuda_blocks(total), TENSOR__CUDA_THREADS, 0, s>>>(p, (const int64_t *)sc.p[0], (const char *)gy.data, gy.dtype, (char *)gx->data, gx->dtype, total);
    else tensor__cuda_pool_bwd_kernel<float><<<tensor__cuda_blocks(total), TENSOR__CUDA_THREADS, 0, s>>>(p, (const int64_t *)sc.p[0], (const char *)gy.data, gy.dtype, (char *)gx->data, gx->dtype, total);
    return tensor__cuda_launch_check(c);
}
static int tensor__cuda_max_pool2d_backward(tensor__dev_call *c) { return tensor__cuda_pool_backward_run(c, true); }
static int tensor__cuda_avg_pool2d_backward(tensor__dev_call *c) { return tensor__cuda_pool_backward_run(c, false); }

/* ---- relu: gx = x <= 0 ? 0 : g (a NaN x passes g), as PyTorch's threshold_backward; mode 1 (the
   softmax of a 0-dim x, a constant): gx = g * 0. Through double, exact for the float dtypes. ---- */
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_relu_bwd_kernel(tensor__cuda_offsets o, char *gx, tensor_dtype gxd, const char *x, tensor_dtype xd,
                                                                                    const char *g, tensor_dtype gd, int mode, int64_t n) {
    TENSOR__CUDA_LOOP(i, n) {
        int64_t off[3];
        tensor__cuda_offsets_get<3>(o, i, off);
        double gv = tensor__cuda_load_f64(g + off[2], gd);
        double v = mode == 1 ? gv * 0.0 : tensor__cuda_load_f64(x + off[1], xd) <= 0 ? 0.0 : gv;
        tensor__cuda_store_f64(gx + off[0], gxd, v);
    }
}
static int tensor__cuda_relu_bwd_run(tensor__dev_call *c, int mode) {
    if (c->n_in < 1) return tensor__cuda_fail(c, "%s backward: expected an input", tensor__cuda_op_name(c->op));
    const tensor__dev_operand &x = c->in[0];
    if (!tensor__cuda_operand_ok(c, x, "input") || x.by_value || !tensor__cuda_bwd_incoming(c, x)) return 1;
    bool bad = false;
    const tensor__dev_operand *gx = tensor__cuda_bwd_grad(c, 0, &bad);
    if (bad) return 1;
    if (!gx) return 0;
    int64_t n = tensor__cuda_numel(x);
    if (n == 0) return 0;
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    const tensor__dev_operand *ops[3] = {gx, &x, &c->grad};
    tensor__cuda_offsets o;
    tensor__cuda_offsets_init(&o, 3, ops, false);
    TENSOR__CUDA_LAUNCH_BEGIN();
    tensor__cuda_relu_bwd_kernel<<<tensor__cuda_blocks(n), TENSOR__CUDA_THREADS, 0, s>>>(o, (char *)gx->data, gx->dtype, (const char *)x.data, x.dtype, (const char *)c->grad.data,
                                                                                       c->grad.dtype, mode, n);
    return tensor__cuda_launch_check(c);
}
static int tensor__cuda_relu_backward(tensor__dev_call *c) { return tensor__cuda_relu_bwd_run(c, 0); }

/* ---- rows of a backward along one dim: gx (contiguous), x and g ---- */
struct tensor__cuda_bwd_rows {
    tensor__cuda_offsets o;  /* over the rows: [0] gx (or x, when gx is absent), [1] x, [2] g */
    char *gx;
    const char *x, *g;
    tensor_dtype gxd, xd, gd;
    int64_t gxs, xs, gs;     /* bytes between a row's elements */
    int64_t rows, len;
};
static void tensor__cuda_bwd_rows_init(tensor__cuda_bwd_rows *a, const tensor__dev_operand *gx, const tensor__dev_operand &x, const tensor__dev_operand &g, int dim) {
    tensor__dev_operand rgx = tensor__cuda_drop_dim(gx ? *gx : x, dim), rx = tensor__cuda_drop_dim(x, dim), rg = tensor__cuda_drop_dim(g, dim);
    const tensor__dev_operand *ops[3] = {&rgx, &rx, &rg};
    a->rows = tensor__cuda_offsets_init(&a->o, 3, ops, false);
    if (tensor__cuda_numel(x) == 0) a->rows = 0;
    a->len = dim >= 0 ? x.shape[dim] : 1;
    a->gx = gx ? (char *)gx->data : nullptr;
    a->x = (const char *)x.data;
    a->g = (const char *)g.data;
    a->gxd = gx ? gx->dtype : x.dtype;
    a->xd = x.dtype;
    a->gd = g.dtype;
    a->gxs = dim >= 0 && gx ? gx->strides[dim] * tensor__cuda_size(gx->dtype) : 0;
    a->xs = dim >= 0 ? x.strides[dim] * tensor__cuda_size(x.dtype) : 0;
    a->gs = dim >= 0 ? g.strides[dim] * tensor__cuda_size(g.dtype) : 0;
}

/* ---- softmax: gx = y (g - sum(g y)); log_softmax: gx = g - y sum(g); y = e^(x - max) / sum,
   recomputed from x in Acc (double for f64, else float; the CPU's f16/bf16 backward composes ops
   rounded to those dtypes, this does not round between steps). ---- */
template <class Acc, int TPR>
__global__ void __launch_bounds__(TENSOR__CUDA_NN_THREADS) tensor__cuda_softmax_bwd_kernel(tensor__cuda_bwd_rows a, bool log_form) {
    __shared__ Acc shm[TENSOR__CUDA_NN_THREADS / 32], shs[TENSOR__CUDA_NN_THREADS / 32];
    const int lane = threadIdx.x % TPR;
    TENSOR__CUDA_ROWS_LOOP(TPR, a.rows, row, live) {
        int64_t off[3] = {0, 0, 0};
        if (live) tensor__cuda_offsets_get<3>(a.o, row, off);
        const char *x = a.x + off[1], *g = a.g + off[2];
        char *gx = a.gx + off[0];
        Acc m, s;
        tensor__cuda_row_max_sum<Acc, TPR>(x, a.xs, a.xd, a.len, live, shm, shs, m, s);
        Acc dot = 0;
        if (live)
            for (int64_t i = lane; i < a.len; i += TPR) {
                Acc gv = tensor__cuda_ldf<Acc>(g + i * a.gs, a.gd);
                dot += log_form ? gv : gv * (tensor__cuda_exp(tensor__cuda_ldf<Acc>(x + i * a.xs, a.xd) - m) / s);
            }
        dot = tensor__cuda_group_sum<Acc, TPR>(dot, shs);
        if (!live) continue;
        for (int64_t i = lane; i < a.len; i += TPR) {
            Acc y = tensor__cuda_exp(tensor__cuda_ldf<Acc>(x + i * a.xs, a.xd) - m) / s, gv = tensor__cuda_ldf<Acc>(g + i * a.gs, a.gd);
            tensor__cuda_store_f64(gx + i * a.gxs, a.gxd, (double)(log_form ? gv - y * dot : y * (gv - dot)));
        }
    }
}
template <class Acc>
static void tensor__cuda_softmax_bwd_launch(const tensor__cuda_bwd_rows &a, bool log_form, int tpr, cudaStream_t s) {
    if (tpr == 1) tensor__cuda_softmax_bwd_kernel<Acc, 1><<<tensor__cuda_row_blocks<1>(a.rows), TENSOR__CUDA_NN_THREADS, 0, s>>>(a, log_form);
    else if (tpr == 32) tensor__cuda_softmax_bwd_kernel<Acc, 32><<<tensor__cuda_row_blocks<32>(a.rows), TENSOR__CUDA_NN_THREADS, 0, s>>>(a, log_form);
    else tensor__cuda_softmax_bwd_kernel<Acc, 256><<<tensor__cuda_row_blocks<256>(a.rows), TENSOR__CUDA_NN_THREADS, 0, s>>>(a, log_form);
}
static int tensor__cuda_softmax_bwd_run(tensor__dev_call *c, bool log_form) {
    if (c->n_in < 1) return tensor__cuda_fail(c, "%s backward: expected an input", tensor__cuda_op_name(c->op));
    const tensor__dev_operand &x = c->in[0];
    if (!tensor__cuda_operand_ok(c, x, "input") || x.by_value || !tensor__cuda_is_float(x.dtype) || !tensor__cuda_bwd_incoming(c, x)) return 1;
    int dim = (int)c->ip[0];
    if (dim >= x.ndim || dim < -1 || (dim < 0 && x.ndim != 0)) return tensor__cuda_fail(c, "%s backward: invalid dim %d", tensor__cuda_op_name(c->op), dim);
    if (dim < 0) return tensor__cuda_relu_bwd_run(c, 1); /* a 0-dim x: the derivative's g * 0 */
    bool bad = false;
    const tensor__dev_operand *gx = tensor__cuda_bwd_grad(c, 0, &bad);
    if (bad) return 1;
    if (!gx) return 0;
    tensor__cuda_bwd_rows a;
    tensor__cuda_bwd_rows_init(&a, gx, x, c->grad, dim);
    if (a.rows == 0 || a.len == 0) return 0;
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    bool adjacent = a.len == 1 || (a.xs == tensor__cuda_size(x.dtype) && a.gxs == tensor__cuda_size(gx->dtype));
    int tpr = tensor__cuda_row_tpr(adjacent, a.len);
    TENSOR__CUDA_LAUNCH_BEGIN();
    if (x.dtype == TENSOR_F64) tensor__cuda_softmax_bwd_launch<double>(a, log_form, tpr, s);
    else tensor__cuda_softmax_bwd_launch<float>(a, log_form, tpr, s);
    return tensor__cuda_launch_check(c);
}
static int tensor__cuda_softmax_backward(tensor__dev_call *c) { return tensor__cuda_softmax_bwd_run(c, false); }
static int tensor__cuda_log_softmax_backward(tensor__dev_call *c) { return tensor__cuda_softmax_bwd_run(c, true); }

/* ---- layer_norm (center) / rms_norm over the last dim: in[0] x, in[1] w, in[2] b (each optional
   but x), p[0] eps. Per row (statistics as the forward's, in Acc): xhat = (x - mean) rstd, gh = g w,
   gx = rstd (gh - mean(gh) - xhat mean(gh xhat)) (rms_norm: no mean(gh) term); the row's mean and
   rstd go to scratch. gw = sum over rows of g xhat, gb = sum of g: in double over fixed groups of
   TENSOR__CUDA_NORM_GROUP rows (the CPU's 64), the groups' partials then added in group order. ---- */
#define TENSOR__CUDA_NORM_GROUP 64
struct tensor__cuda_norm_bwd_args {
    tensor__cuda_bwd_rows r;
    const char *w;           /* NULL: 1 */
    tensor_dtype wd;
    int64_t ws;              /* bytes */
    double eps;
    bool center;
    void *mean, *rstd;       /* [rows] of Acc, or NULL */
};
template <class Acc, int TPR>
__global__ void __launch_bounds__(TENSOR__CUDA_NN_THREADS) tensor__cuda_norm_bwd_kernel(tensor__cuda_norm_bwd_args a) {
    __shared__ Acc sh[TENSOR__CUDA_NN_THREADS / 32];
    const int lane = threadIdx.x % TPR;
    const int64_t n = a.r.len;
    TENSOR__CUDA_ROWS_LOOP(TPR, a.r.rows, row, live) {
        int64_t off[3] = {0, 0, 0};
        if (live) tensor__cuda_offsets_get<3>(a.r.o, row, off);
        const char *x = a.r.x + off[1], *g = a.r.g + off[2];
        Acc mean, rstd;
        tensor__cuda_row_norm_stats<Acc, TPR>(x, a.r.xs, a.r.xd, n, a.center, a.eps, live, sh, mean, rstd);
        Acc s1 = 0, s2 = 0;
        if (live && a.r.gx)
            for (int64_t i = lane; i < n; i += TPR) {
                Acc xh = (tensor__cuda_ldf<Acc>(x + i * a.r.xs, a.r.xd) - mean) * rstd, gh = tensor__cuda_ldf<Acc>(g + i * a.r.gs, a.r.gd);
                if (a.w) gh *= tensor__cuda_ldf<Acc>(a.w + i * a.ws, a.wd);
                s1 += gh;
                s2 += gh * xh;
            }
        if (a.r.gx) { /* the same branch in every thread: a kernel-wide argument */
            s1 = tensor__cuda_group_sum<Acc, TPR>(s1, sh);
            s2 = tensor__cuda_group_sum<Acc, TPR>(s2, sh);
        }
        if (!live) continue;
        if (lane == 0 && a.mean) {
            ((Acc *)a.mean)[row] = mean;
            ((Acc *)a.rstd)[row] = rstd;
        }
        if (!a.r.gx) continue;
        Acc m1 = a.center ? s1 / (Acc)n : (Acc)0, m2 = s2 / (Acc)n;
        char *gx = a.r.gx + off[0];
        for (int64_t i = lane; i < n; i += TPR) {
            Acc xh = (tensor__cuda_ldf<Acc>(x + i * a.r.xs, a.r.xd) - mean) * rstd, gh = tensor__cuda_ldf<Acc>(g + i * a.r.gs, a.r.gd);
            if (a.w) gh *= tensor__cuda_ldf<Acc>(a.w + i * a.ws, a.wd);
            tensor__cuda_store_f64(gx + i * a.r.gxs, a.r.gxd, (double)(rstd * (gh - m1 - xh * m2)));
        }
    }
}
template <class Acc>
static void tensor__cuda_norm_bwd_launch(const tensor__cuda_norm_bwd_args &a, int tpr, cudaStream_t s) {
    if (tpr == 1) tensor__cuda_norm_bwd_kernel<Acc, 1><<<tensor__cuda_row_blocks<1>(a.r.rows), TENSOR__CUDA_NN_THREADS, 0, s>>>(a);
    else if (tpr == 32) tensor__cuda_norm_bwd_kernel<Acc, 32><<<tensor__cuda_row_blocks<32>(a.r.rows), TENSOR__CUDA_NN_THREADS, 0, s>>>(a);
    else tensor__cuda_norm_bwd_kernel<Acc, 256><<<tensor__cuda_row_blocks<256>(a.r.rows), TENSOR__CUDA_NN_THREADS, 0, s>>>(a);
}
/* Partial sums of group grp, column j: pw = sum of g xhat, pb = sum of g over the group's rows. */
template <class Acc>
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_norm_param_partial(tensor__cuda_norm_bwd_args a, double *pw, double *pb, int64_t groups) {
    const int64_t n = a.r.len, total = groups * n;
    TENSOR__CUDA_LOOP(i, total) {
        int64_t grp = i / n, j = i - grp * n;
        int64_t q1 = (grp + 1) * TENSOR__CUDA_NORM_GROUP < a.r.rows ? (grp + 1) * TENSOR__CUDA_NORM_GROUP : a.r.rows;
        double sw = 0, sb = 0;
        for (int64_t q = grp * TENSOR__CUDA_NORM_GROUP; q < q1; q++) {
            int64_t off[3];
            tensor__cuda_offsets_get<3>(a.r.o, q, off);
            double gv = tensor__cuda_load_f64(a.r.g + off[2] + j * a.r.gs, a.r.gd);
            if (pw) {
                Acc xh = (tensor__cuda_ldf<Acc>(a.r.x + off[1] + j * a.r.xs, a.r.xd) - ((const Acc *)a.mean)[q]) * ((const Acc *)a.rstd)[q];
                sw += gv * (double)xh;
            }
            sb += gv;
        }
        if (pw) pw[i] = sw;
        if (pb) pb[i] = sb;
    }
}
/* dst[j] = the sum of part[grp n + j] over the groups, in group order, stored in dst's dtype. */
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_norm_param_final(const double *part, int64_t groups, int64_t n, char *dst, tensor_dtype dd) {
    const int dsz = tensor__cuda_size(dd);
    TENSOR__CUDA_LOOP(j, n) {
        double s = 0;
        for (int64_t grp = 0; grp < groups; grp++) s += part[grp * n + j];
        tensor__cuda_store_f64(dst + j * dsz, dd, s);
    }
}
static int tensor__cuda_norm_bwd_run(tensor__dev_call *c, bool center) {
    if (c->n_in < 1) return tensor__cuda_fail(c, "%s backward: expected an input", tensor__cuda_op_name(c->op));
    const tensor__dev_operand &x = c->in[0];
    if (!tensor__cuda_operand_ok(c, x, "input") || x.by_value || x.ndim < 1 || !tensor__cuda_is_float(x.dtype) || !tensor__cuda_bwd_incoming(c, x)) return 1;
    bool bad = false;
    const tensor__dev_operand *gx = tensor__cuda_bwd_grad(c, 0, &bad), *gw = tensor__cuda_bwd_grad(c, 1, &bad), *gb = center ? tensor__cuda_bwd_grad(c, 2, &bad) : nullptr;
    if (bad) return 1;
    tensor__cuda_norm_bwd_args a;
    memset(&a, 0, sizeof a);
    int last = x.ndim - 1;
    tensor__cuda_bwd_rows_init(&a.r, gx, x, c->grad, last);
    const char *bias_unused;
    tensor_dtype bd_unused;
    int64_t bs_unused;
    if (c->n_in > 1 && !tensor__cuda_norm_param(c, c->in[1], a.r.len, "weight", &a.w, &a.wd, &a.ws)) return 1;
    if (center && c->n_in > 2 && !tensor__cuda_norm_param(c, c->in[2], a.r.len, "bias", &bias_unused, &bd_unused, &bs_unused)) return 1;
    a.eps = c->p[0];
    a.center = center;
    int64_t n = a.r.len, rows = a.r.rows, groups = (rows + TENSOR__CUDA_NORM_GROUP - 1) / TENSOR__CUDA_NORM_GROUP;
    if (n == 0) return 0;
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    if (rows == 0) { /* no rows: the parameters' gradients are empty sums */
        if (gw && tensor__cuda_fill_run(c, *gw, 0)) return 1;
        if (gb && tensor__cuda_fill_run(c, *gb, 0)) return 1;
        return 0;
    }
    bool f64 = x.dtype == TENSOR_F64;
    size_t asz = f64 ? sizeof(double) : sizeof(float);
    tensor__cuda_conv_scratch sc;
    if (gw) {
        if (!(a.mean = sc.p[0] = tensor__cuda_alloc((size_t)rows * asz, c->error, sizeof c->error))) return 1;
        if (!(a.rstd = sc.p[1] = tensor__cuda_alloc((size_t)rows * asz, c->error, sizeof c->error))) return 1;
    }
    if (gx || gw) {
        int tpr = tensor__cuda_row_tpr(true, n);
        TENSOR__CUDA_LAUNCH_BEGIN();
        if (f64) tensor__cuda_norm_bwd_launch<double>(a, tpr, s);
        else tensor__cuda_norm_bwd_launch<float>(a, tpr, s);
        if (tensor__cuda_launch_check(c)) return 1;
    }
    if (!gw && !gb) return 0;
    size_t part = (size_t)(groups * n) * sizeof(double);
    if (gw && !(sc.p[2] = tensor__cuda_alloc(part, c->error, sizeof c->error))) return 1;
    if (gb && !(sc.p[3] = tensor__cuda_alloc(part, c->error, sizeof c->error))) return 1;
    TENSOR__CUDA_LAUNCH_BEGIN();
    if (f64) tensor__cuda_norm_param_partial<double><<<tensor__cuda_blocks(groups * n), TENSOR__CUDA_THREADS, 0, s>>>(a, (double *)sc.p[2], (double *)sc.p[3], groups);
    else tensor__cuda_norm_param_partial<float><<<tensor__cuda_blocks(groups * n), TENSOR__CUDA_THREADS, 0, s>>>(a, (double *)sc.p[2], (double *)sc.p[3], groups);
    if (tensor__cuda_launch_check(c)) return 1;
    const tensor__dev_operand *dst[2] = {gw, gb};
    for (int k = 0; k < 2; k++) {
        if (!dst[k]) continue;
        TENSOR__CUDA_LAUNCH_BEGIN();
        tensor__cuda_norm_param_final<<<tensor__cuda_blocks(n), TENSOR__CUDA_THREADS, 0, s>>>((const double *)sc.p[2 + k], groups, n, (char *)dst[k]->data, dst[k]->dtype);
        if (tensor__cuda_launch_check(c)) return 1;
    }
    return 0;
}
static int tensor__cuda_layer_norm_backward(tensor__dev_call *c) { return tensor__cuda_norm_bwd_run(c, true); }
static int tensor__cuda_rms_norm_backward(tensor__dev_call *c) { return tensor__cuda_norm_bwd_run(c, false); }

/* ---- cross_entropy: in[0] logits x, in[1] targets, ip[0] 1 for probability targets; grad the
   0-dim gradient g of the mean loss. scale = g / count (class targets: the rows whose target is not
   ignore_index; probabilities: every row when C > 0), computed on the device by one block (an
   integer count: no order to depend on). Per row, lse = m + log(s) in double from the Acc
   statistics; class targets: gx = (e^(x - lse) - onehot) scale, 0 on ignored rows;
   probabilities: gx = (e^(x - lse) sum(p) - p) scale and gp = (lse - x) scale (grads[1], when
   wanted). A bad class target (the forward checked them; a later in-place change would be caught
   by the engine's version check) is still reported as the CPU does, after a wait. ---- */
struct tensor__cuda_ce_bwd_args {
    tensor__cuda_offsets o;  /* over the rows: [0] gx, [1] x, [2] targets (class) or p, [3] gp (or gx) */
    char *gx, *gp;
    const char *x, *t;
    tensor_dtype gxd, gpd, xd, td;
    int64_t gxs, gps, xs, ts; /* bytes along the class dim */
    int64_t rows, C;
    bool prob;
    const double *scale;
};
__global__ void __launch_bounds__(TENSOR__CUDA_NN_THREADS) tensor__cuda_ce_scale_kernel(tensor__cuda_offsets o, const char *t, tensor_dtype td, int64_t rows, int64_t C,
                                                                                       int64_t fixed_count, const char *g, tensor_dtype gd, double *scale,
                                                                                       unsigned long long *bad) {
    __shared__ long long sc[TENSOR__CUDA_NN_THREADS];
    long long cnt = 0;
    if (fixed_count < 0)
        for (int64_t q = threadIdx.x; q < rows; q += TENSOR__CUDA_NN_THREADS) {
            int64_t off[1];
            tensor__cuda_offsets_get<1>(o, q, off);
            int64_t k = tensor__cuda_load_i64(t + off[0], td);
            if (k == TENSOR__CUDA_IGNORE_INDEX) continue;
            if (k < 0 || k >= C) atomicMin(bad, (unsigned long long)q);
            cnt++;
        }
    sc[threadIdx.x] = cnt;
    __syncthreads();
    for (int h = TENSOR__CUDA_NN_THREADS / 2; h > 0; h >>= 1) {
        if ((int)threadIdx.x < h) sc[threadIdx.x] += sc[threadIdx.x + h];
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        int64_t count = fixed_count < 0 ? (int64_t)sc[0] : fixed_count;
        *scale = tensor__cuda_load_f64(g, gd) / (double)(count > 0 ? count : 1);
    }
}
template <class Acc, int TPR>
__global__ void __launch_bounds__(TENSOR__CUDA_NN_THREADS) tensor__cuda_ce_bwd_kernel(tensor__cuda_ce_bwd_args a) {
    __shared__ Acc shm[TENSOR__CUDA_NN_THREADS / 32], shs[TENSOR__CUDA_NN_THREADS / 32];
    __shared__ double shd[TENSOR__CUDA_NN_THREADS / 32];
    const int lane = threadIdx.x % TPR;
    const double scale = *a.scale;
    TENSOR__CUDA_ROWS_LOOP(TPR, a.rows, row, live) {
        int64_t off[4] = {0, 0, 0, 0};
        if (live) tensor__cuda_offsets_get<4>(a.o, row, off);
        const char *x = a.x + off[1];
        char *gx = a.gx + off[0];
        int64_t k = -1;
        bool skip = false; /* the whole group agrees: k is the row's */
        if (!a.prob && live) {
            k = tensor__cuda_load_i64(a.t + off[2], a.td);
            skip = k == TENSOR__CUDA_IGNORE_INDEX;
        }
        Acc m, s;
        tensor__cuda_row_max_sum<Acc, TPR>(x, a.xs, a.xd, a.C, live && !skip, shm, shs, m, s);
        double lse = (double)m + log((double)s), psum = 0;
        if (a.prob && live)
            for (int64_t i = lane; i < a.C; i += TPR) psum += tensor__cuda_load_f64(a.t + off[2] + i * a.ts, a.td);
        if (a.prob) psum = tensor__cuda_group_sum<double, TPR>(psum, shd);
        if (!live) continue;
        for (int64_t i = lane; i < a.C; i += TPR) {
            double v;
            if (skip) v = 0;
            else {
                double e = exp(tensor__cuda_load_f64(x + i * a.xs, a.xd) - lse);
                v = a.prob ? (e * psum - tensor__cuda_load_f64(a.t + off[2] + i * a.ts, a.td)) * scale : (e - (double)(i == k)) * scale;
            }
            tensor__cuda_store_f64(gx + i * a.gxs, a.gxd, v);
            if (a.gp) tensor__cuda_store_f64(a.gp + off[3] + i * a.gps, a.gpd, (lse - tensor__cuda_load_f64(x + i * a.xs, a.xd)) * scale);
        }
    }
}
template <class Acc>
static void tensor__cuda_ce_bwd_launch(const tensor__cuda_ce_bwd_args &a, int tpr, cudaStream_t s) {
    if (tpr == 1) tensor__cuda_ce_bwd_kernel<Acc, 1><<<tensor__cuda_row_blocks<1>(a.rows), TENSOR__CUDA_NN_THREADS, 0, s>>>(a);
    else if (tpr == 32) tensor__cuda_ce_bwd_kernel<Acc, 32><<<tensor__cuda_row_blocks<32>(a.rows), TENSOR__CUDA_NN_THREADS, 0, s>>>(a);
    else tensor__cuda_ce_bwd_kernel<Acc, 256><<<tensor__cuda_row_blocks<256>(a.rows), TENSOR__CUDA_NN_THREADS, 0, s>>>(a);
}
static int tensor__cuda_cross_entropy_backward(tensor__dev_call *c) {
    if (c->n_in < 2) return tensor__cuda_fail(c, "cross_entropy backward: expected 2 inputs, got %d", c->n_in);
    const tensor__dev_operand &x = c->in[0], &t = c->in[1], &g = c->grad;
    for (int j = 0; j < 2; j++)
        if (!tensor__cuda_operand_ok(c, c->in[j], "input") || c->in[j].by_value) return 1;
    if (!tensor__cuda_operand_ok(c, g, "gradient") || g.by_value || !tensor__cuda_is_float(g.dtype) || tensor__cuda_numel(g) != 1)
        return tensor__cuda_fail(c, "cross_entropy backward: expected a one-element floating gradient");
    bool prob = c->ip[0] != 0;
    if (x.ndim < 1 || !tensor__cuda_is_float(x.dtype)) return tensor__cuda_fail(c, "cross_entropy backward: expected floating logits of at least 1 dim");
    int cdim = x.ndim == 1 ? 0 : 1;
    if (prob ? !tensor__cuda_is_float(t.dtype) || t.ndim != x.ndim : tensor__cuda_is_float(t.dtype) || t.ndim != x.ndim - 1)
        return tensor__cuda_fail(c, "cross_entropy backward: targets do not match the logits");
    bool bad = false;
    const tensor__dev_operand *gx = tensor__cuda_bwd_grad(c, 0, &bad), *gp = prob ? tensor__cuda_bwd_grad(c, 1, &bad) : nullptr;
    if (bad) return 1;
    tensor__cuda_ce_bwd_args a;
    memset(&a, 0, sizeof a);
    a.C = x.shape[cdim];
    tensor__dev_operand rx = tensor__cuda_drop_dim(x, cdim), rt = prob ? tensor__cuda_drop_dim(t, cdim) : t;
    bool fits = !prob || t.shape[cdim] == a.C;
    for (int d = 0; d < rt.ndim; d++) fits = fits && rt.shape[d] == rx.shape[d];
    if (!fits) return tensor__cuda_fail(c, "cross_entropy backward: targets do not match the logits");
    if ((!gx && !gp) || tensor__cuda_numel(rx) == 0 || a.C == 0) return 0; /* nothing to write (empty gradients) */
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    tensor__cuda_conv_scratch sc;
    tensor__dev_operand gx_stand_in; /* gx is written by the kernel: contiguous scratch when only gp is wanted */
    if (!gx) {
        gx_stand_in = x;
        int64_t step = 1;
        for (int d = x.ndim - 1; d >= 0; d--) { gx_stand_in.strides[d] = step; step *= x.shape[d]; }
        if (!(gx_stand_in.data = sc.p[2] = tensor__cuda_alloc((size_t)step * (size_t)tensor__cuda_size(x.dtype), c->error, sizeof c->error))) return 1;
        gx = &gx_stand_in;
    }
    tensor__dev_operand rgx = tensor__cuda_drop_dim(*gx, cdim), rgp = gp ? tensor__cuda_drop_dim(*gp, cdim) : rgx;
    const tensor__dev_operand *ops[4] = {&rgx, &rx, &rt, &rgp};
    a.rows = tensor__cuda_offsets_init(&a.o, 4, ops, false);
    a.gx = (char *)gx->data;
    a.gp = gp ? (char *)gp->data : nullptr;
    a.x = (const char *)x.data;
    a.t = (const char *)t.data;
    a.gxd = gx->dtype;
    a.gpd = gp ? gp->dtype : TENSOR_F32;
    a.xd = x.dtype;
    a.td = t.dtype;
    a.gxs = gx->strides[cdim] * tensor__cuda_size(gx->dtype);
    a.gps = gp ? gp->strides[cdim] * tensor__cuda_size(gp->dtype) : 0;
    a.xs = x.strides[cdim] * tensor__cuda_size(x.dtype);
    a.ts = prob ? t.strides[cdim] * tensor__cuda_size(t.dtype) : 0;
    a.prob = prob;
    if (!(sc.p[0] = tensor__cuda_alloc(sizeof(double), c->error, sizeof c->error))) return 1;
    a.scale = (const double *)sc.p[0];
    unsigned long long *flag = nullptr;
    if (!prob && !(flag = tensor__cuda_flag_new(c, s))) return 1;
    const tensor__dev_operand *tops[1] = {&t};
    tensor__cuda_offsets ot;
    tensor__cuda_offsets_init(&ot, 1, tops, false);
    TENSOR__CUDA_LAUNCH_BEGIN();
    tensor__cuda_ce_scale_kernel<<<1, TENSOR__CUDA_NN_THREADS, 0, s>>>(ot, (const char *)t.data, t.dtype, a.rows, a.C, prob ? a.rows : -1, (const char *)g.data, g.dtype,
                                                                       (double *)sc.p[0], flag);
    if (tensor__cuda_launch_check(c)) { tensor__cuda_free(flag); return 1; }
    bool adjacent = a.C <= 1 || (a.xs == tensor__cuda_size(x.dtype) && a.gxs == tensor__cuda_size(gx->dtype));
    TENSOR__CUDA_LAUNCH_BEGIN();
    if (x.dtype == TENSOR_F64) tensor__cuda_ce_bwd_launch<double>(a, tensor__cuda_row_tpr(adjacent, a.C), s);
    else tensor__cuda_ce_bwd_launch<float>(a, tensor__cuda_row_tpr(adjacent, a.C), s);
    if (tensor__cuda_launch_check(c)) { tensor__cuda_free(flag); return 1; }
    if (flag) {
        unsigned long long pos;
        if (tensor__cuda_flag_read(c, s, flag, &pos)) return 1;
        if (pos != ULLONG_MAX) return tensor__cuda_bad_target(c, s, t, pos, a.C);
    }
    return 0;
}

/* ---- ctc_loss: in[0] log_probs [T, N, C], in[1] targets ([N, S] padded or 1-D concatenated),
   in[2] input_lengths and in[3] target_lengths (int64 [N], contiguous), ip[0] blank, ip[1]
   reduction, ip[2] zero_infinity, ip[3] 1 for concatenated targets, ip[4] the longest target.
   One block per batch element looping over time, its threads over the 2 L + 1 states: the CPU's
   recursions (>>loss) in double, alpha and beta kept in global scratch [N, T, 2 smax + 1]. */
struct tensor__cuda_ctc_args {
    const char *lp, *tg;
    tensor_dtype lpd, tgd;
    int64_t ls0, ls1, ls2, ts0, ts1;  /* bytes */
    const int64_t *il, *tl;
    int64_t T, N, C, blank, ss;       /* ss: 2 smax + 1, the states' stride */
    bool concat;
    double *alpha, *beta, *lg, *nll;  /* lg: [N, T, C] log of the summed alpha beta per label */
    unsigned long long *bad;          /* the first batch element with a label out of range */
};
/* lp[t][b][c], -inf for a label out of range (reported through bad) */
__device__ static double tensor__cuda_ctc_lp(const tensor__cuda_ctc_args &a, int64_t t, int64_t b, int64_t c) {
    if (c < 0 || c >= a.C) return -INFINITY;
    return tensor__cuda_load_f64(a.lp + t * a.ls0 + b * a.ls1 + c * a.ls2, a.lpd);
}
/* the label of state s of batch element b (targets from off on) */
__device__ static int64_t tensor__cuda_ctc_label(const tensor__cuda_ctc_args &a, int64_t b, int64_t off, int64_t s) {
    if (s % 2 == 0) return a.blank;
    int64_t i = s / 2;
    return tensor__cuda_load_i64(a.tg + (a.concat ? (off + i) * a.ts0 : b * a.ts0 + i * a.ts1), a.tgd);
}
__device__ static double tensor__cuda_ctc_lse3(double x, double y, double z) {
    double m = x > y ? x : y;
    if (z > m) m = z;
    if (m == -INFINITY) m = 0;
    return log(exp(x - m) + exp(y - m) + exp(z - m)) + m;
}
__device__ static int64_t tensor__cuda_ctc_offset(const tensor__cuda_ctc_args &a, int64_t b) {
    int64_t off = 0;
    if (a.concat)
        for (int64_t j = 0; j < b; j++) off += a.tl[j];
    return off;
}
/* alpha of batch element blockIdx.x, and its loss in nll[b]; every thread of the block calls it */
__device__ static void tensor__cuda_ctc_forward_rows(const tensor__cuda_ctc_args &a) {
    int64_t b = blockIdx.x, Tb = a.il[b], L = a.tl[b], S = 2 * L + 1, off = tensor__cuda_ctc_offset(a, b);
    double *al = a.alpha + b * a.T * a.ss;
    for (int64_t i = threadIdx.x; i < L; i += blockDim.x) {
        int64_t k = tensor__cuda_ctc_label(a, b, off, 2 * i + 1);
        if (k < 0 || k >= a.C) atomicMin(a.bad, (unsigned long long)b);
    }
    if (Tb == 0) {
        if (threadIdx.x == 0) a.nll[b] = L == 0 ? 0 : INFINITY;
        __syncthreads();
        return;
    }
    for (int64_t s = threadIdx.x; s < S; s += blockDim.x)
        al[s] = s == 0 ? tensor__cuda_ctc_lp(a, 0, b, a.blank) : s == 1 ? tensor__cuda_ctc_lp(a, 0, b, tensor__cuda_ctc_label(a, b, off, 1)) : -INFINITY;
    __syncthreads();
    for (int64_t t = 1; t < Tb; t++) {
        const double *prev = al + (t - 1) * a.ss;
        for (int64_t s = threadIdx.x; s < S; s += blockDim.x) {
            int64_t cur = tensor__cuda_ctc_label(a, b, off, s);
            double a2 = s > 0 ? prev[s - 1] : -INFINITY;
            double a3 = s > 1 && tensor__cuda_ctc_label(a, b, off, s - 2) != cur ? prev[s - 2] : -INFINITY;
            al[t * a.ss + s] = tensor__cuda_ctc_lse3(prev[s], a2, a3) + tensor__cuda_ctc_lp(a, t, b, cur);
        }
        __syncthreads();
    }
    if (threadIdx.x == 0) {
        const double *last = al + (Tb - 1) * a.ss;
        a.nll[b] = -tensor__cuda_ctc_lse3(last[S - 1], L > 0 ? last[S - 2] : -INFINITY, -INFINITY);
    }
    __syncthreads();
}
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_ctc_forward_kernel(tensor__cuda_ctc_args a) { tensor__cuda_ctc_forward_rows(a); }
/* the output from the losses: none [N], or their sum / mean (one thread: N is a batch) */
__global__ void tensor__cuda_ctc_final(const double *nll, const int64_t *tl, int64_t N, int reduction, bool zero_inf, char *out, tensor_dtype od) {
    if (threadIdx.x != 0 || blockIdx.x != 0) return;
    double sum = 0;
    for (int64_t b = 0; b < N; b++) {
        double l = zero_inf && nll[b] == INFINITY ? 0 : nll[b];
        if (reduction == TENSOR_REDUCTION_NONE) tensor__cuda_store_f64(out + b * tensor__cuda_size(od), od, l);
        else sum += reduction == TENSOR_REDUCTION_MEAN ? l / (double)(tl[b] > 1 ? tl[b] : 1) : l;
    }
    if (reduction == TENSOR_REDUCTION_MEAN) sum /= (double)N;
    if (reduction != TENSOR_REDUCTION_NONE) tensor__cuda_store_f64(out, od, sum);
}
/* beta and the gradient rows [t][b][:] of grad ([T, N, C], contiguous) for the output gradient
   g (gs: its bytes between batch elements, 0 for one shared value) */
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_ctc_backward_kernel(tensor__cuda_ctc_args a, const char *g, tensor_dtype gd, int64_t gs, int reduction,
                                                                                      bool zero_inf, char *grad, tensor_dtype grd) {
    tensor__cuda_ctc_forward_rows(a);
    int64_t b = blockIdx.x, Tb = a.il[b], L = a.tl[b], S = 2 * L + 1, off = tensor__cuda_ctc_offset(a, b), C = a.C;
    double nll = a.nll[b], gr = tensor__cuda_load_f64(g + b * gs, gd);
    if (reduction == TENSOR_REDUCTION_MEAN) gr /= (double)(L > 1 ? L : 1) * (double)a.N;
    if (zero_inf && nll == INFINITY) gr = 0;
    int grs = tensor__cuda_size(grd);
    for (int64_t i = threadIdx.x; i < a.T * C; i += blockDim.x) tensor__cuda_store_f64(grad + (((i / C) * a.N + b) * C + i % C) * grs, grd, 0);
    if (Tb == 0 || gr == 0) return; /* the block agrees */
    const double *al = a.alpha + b * a.T * a.ss;
    double *be = a.beta + b * a.T * a.ss, *lg = a.lg + b * a.T * C;
    for (int64_t i = threadIdx.x; i < Tb * a.ss; i += blockDim.x) be[i] = -INFINITY;
    for (int64_t i = threadIdx.x; i < Tb * C; i += blockDim.x) lg[i] = -INFINITY;
    __syncthreads();
    int64_t t1 = Tb - 1;
    if (threadIdx.x == 0) {
        be[t1 * a.ss + S - 1] = tensor__cuda_ctc_lp(a, t1, b, a.blank);
        lg[t1 * C + a.blank] = al[t1 * a.ss + S - 1] + be[t1 * a.ss + S - 1];
        if (L > 0) {
            int64_t k = tensor__cuda_ctc_label(a, b, off, S - 2);
            be[t1 * a.ss + S - 2] = tensor__cuda_ctc_lp(a, t1, b, k);
            if (k >= 0 && k < C) lg[t1 * C + k] = al[t1 * a.ss + S - 2] + be[t1 * a.ss + S - 2];
        }
    }
    __syncthreads();
    for (int64_t t = Tb - 2; t >= 0; t--) {
        const double *next = be + (t + 1) * a.ss;
        for (int64_t s = threadIdx.x; s < S; s += blockDim.x) {
            int64_t cur = tensor__cuda_ctc_label(a, b, off, s);
            double b2 = s < S - 1 ? next[s + 1] : -INFINITY;
            double b3 = s < S - 2 && tensor__cuda_ctc_label(a, b, off, s + 2) != cur ? next[s + 2] : -INFINITY;
            be[t * a.ss + s] = tensor__cuda_ctc_lse3(next[s], b2, b3) + tensor__cuda_ctc_lp(a, t, b, cur);
        }
        __syncthreads();
        if (threadIdx.x == 0) /* the log-sums per label, in the CPU's order */
            for (int64_t s = S - 1; s >= 0; s--) {
                int64_t cur = tensor__cuda_ctc_label(a, b, off, s);
                if (cur < 0 || cur >= C) continue;
                double ab = al[t * a.ss + s] + be[t * a.ss + s], *acc = &lg[t * C + cur];
                if (*acc == -INFINITY) *acc = ab;
                else {
                    double m = *acc > ab ? *acc : ab;
                    *acc = log(exp(*acc - m) + exp(ab - m)) + m;
                }
            }
        __syncthreads();
    }
    for (int64_t i = threadIdx.x; i < Tb * C; i += blockDim.x) {
        int64_t t = i / C, c = i % C;
        double lpv = tensor__cuda_ctc_lp(a, t, b, c);
        tensor__cuda_store_f64(grad + ((t * a.N + b) * C + c) * grs, grd, (exp(lpv) - exp(lg[i] + nll - lpv)) * gr);
    }
}
/* Checks the operands and fills a (its scratch from sc); 0, or 1 after an error. */
static int tensor__cuda_ctc_setup(tensor__dev_call *c, tensor__cuda_ctc_args *a, tensor__cuda_conv_scratch *sc, bool backward, cudaStream_t s) {
    if (c->n_in < 4) return tensor__cuda_fail(c, "ctc_loss: expected 4 inputs, got %d", c->n_in);
    for (int j = 0; j < 4; j++)
        if (!tensor__cuda_operand_ok(c, c->in[j], "input") || c->in[j].by_value) return 1;
    const tensor__dev_operand &lp = c->in[0], &tg = c->in[1], &il = c->in[2], &tl = c->in[3];
    if (lp.ndim != 3 || !tensor__cuda_is_float(lp.dtype)) return tensor__cuda_fail(c, "ctc_loss: expected floating log_probs [T, N, C]");
    int64_t N = lp.shape[1];
    if (il.dtype != TENSOR_I64 || tl.dtype != TENSOR_I64 || il.ndim != 1 || tl.ndim != 1 || il.shape[0] != N || tl.shape[0] != N || (N > 1 && (il.strides[0] != 1 || tl.strides[0] != 1)))
        return tensor__cuda_fail(c, "ctc_loss: expected contiguous int64 lengths of %lld elements", (long long)N);
    bool concat = c->ip[3] != 0;
    if (tensor__cuda_is_float(tg.dtype) || tg.ndim != (concat ? 1 : 2)) return tensor__cuda_fail(c, "ctc_loss: targets do not match the call");
    memset(a, 0, sizeof *a);
    int ls = tensor__cuda_size(lp.dtype), ts = tensor__cuda_size(tg.dtype);
    a->lp = (const char *)lp.data;
    a->tg = (const char *)tg.data;
    a->lpd = lp.dtype;
    a->tgd = tg.dtype;
    a->ls0 = lp.strides[0] * ls;
    a->ls1 = lp.strides[1] * ls;
    a->ls2 = lp.strides[2] * ls;
    a->ts0 = tg.strides[0] * ts;
    a->ts1 = concat ? 0 : tg.strides[1] * ts;
    a->il = (const int64_t *)il.data;
    a->tl = (const int64_t *)tl.data;
    a->T = lp.shape[0];
    a->N = N;
    a->C = lp.shape[2];
    a->blank = c->ip[0];
    a->ss = 2 * c->ip[4] + 1;
    a->concat = concat;
    size_t states = (size_t)(a->N * a->T * a->ss > 0 ? a->N * a->T * a->ss : 1) * sizeof(double);
    if (!(sc->p[0] = tensor__cuda_alloc(states, c->error, sizeof c->error))) return 1;
    if (!(sc->p[1] = tensor__cuda_alloc((size_t)(N > 0 ? N : 1) * sizeof(double), c->error, sizeof c->error))) return 1;
    a->alpha = (double *)sc->p[0];
    a->nll = (double *)sc->p[1];
    if (backward) {
        size_t lgs = (size_t)(a->N * a->T * a->C > 0 ? a->N * a->T * a->C : 1) * sizeof(double);
        if (!(sc->p[2] = tensor__cuda_alloc(states, c->error, sizeof c->error))) return 1;
        if (!(sc->p[3] = tensor__cuda_alloc(lgs, c->error, sizeof c->error))) return 1;
        a->beta = (double *)sc->p[2];
        a->lg = (double *)sc->p[3];
    }
    return (a->bad = tensor__cuda_flag_new(c, s)) ? 0 : 1;
}
/* Reads the bad-label flag (freeing it); 0, or 1 with the error. */
static int tensor__cuda_ctc_check(tensor__dev_call *c, cudaStream_t s, tensor__cuda_ctc_args *a) {
    unsigned long long pos;
    if (tensor__cuda_flag_read(c, s, a->bad, &pos)) return 1;
    if (pos != ULLONG_MAX) return tensor__cuda_fail(c, "a target of batch element %llu is out of range for %lld classes", pos, (long long)a->C);
    return 0;
}
static int tensor__cuda_ctc_loss(tensor__dev_call *c) {
    if (!tensor__cuda_operand_ok(c, c->out, "output") || c->out.by_value) return 1;
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    tensor__cuda_conv_scratch sc;
    tensor__cuda_ctc_args a;
    if (tensor__cuda_ctc_setup(c, &a, &sc, false, s)) return 1;
    if (a.N > 0) {
        TENSOR__CUDA_LAUNCH_BEGIN();
        tensor__cuda_ctc_forward_kernel<<<(unsigned)a.N, TENSOR__CUDA_THREADS, 0, s>>>(a);
        if (tensor__cuda_launch_check(c)) { tensor__cuda_free(a.bad); return 1; }
    }
    if (tensor__cuda_ctc_check(c, s, &a)) return 1;
    TENSOR__CUDA_LAUNCH_BEGIN();
    tensor__cuda_ctc_final<<<1, 1, 0, s>>>(a.nll, a.tl, a.N, (int)c->ip[1], c->ip[2] != 0, (char *)c->out.data, c->out.dtype);
    return tensor__cuda_launch_check(c);
}
static int tensor__cuda_ctc_loss_backward(tensor__dev_call *c) {
    bool bad = false;
    const tensor__dev_operand *gx = tensor__cuda_bwd_grad(c, 0, &bad), &g = c->grad;
    if (bad) return 1;
    if (!gx) return 0;
    int reduction = (int)c->ip[1];
    if (!tensor__cuda_operand_ok(c, g, "gradient") || g.by_value || !tensor__cuda_is_float(g.dtype) ||
        (reduction == TENSOR_REDUCTION_NONE ? g.ndim != 1 || g.shape[0] != c->in[0].shape[1] : tensor__cuda_numel(g) != 1))
        return tensor__cuda_fail(c, "ctc_loss backward: the output gradient does not match the loss");
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    tensor__cuda_conv_scratch sc;
    tensor__cuda_ctc_args a;
    if (tensor__cuda_ctc_setup(c, &a, &sc, true, s)) return 1;
    if (a.N > 0) {
        int64_t gs = reduction == TENSOR_REDUCTION_NONE ? g.strides[0] * tensor__cuda_size(g.dtype) : 0;
        TENSOR__CUDA_LAUNCH_BEGIN();
        tensor__cuda_ctc_backward_kernel<<<(unsigned)a.N, TENSOR__CUDA_THREADS, 0, s>>>(a, (const char *)g.data, g.dtype, gs, reduction, c->ip[2] != 0, (char *)gx->data, gx->dtype);
        if (tensor__cuda_launch_check(c)) { tensor__cuda_free(a.bad); return 1; }
    }
    return tensor__cuda_ctc_check(c, s, &a);
}

/* ---- grid_sample: gx (of in[0]) and gg (of in[1]) from the output's gradient gy. A thread per
   grid point, as the forward: its taps' weights times gy added into a double buffer of gx's size
   (atomically: points share taps), then converted to gx's dtype; the point's own two entries of gg
   (the taps' values times the weights' derivatives), written once. ---- */
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_gs_bwd_kernel(tensor__cuda_gs_args a, const char *gy, int64_t gy0, int64_t gy1, int64_t gy2, int64_t gy3,
                                                                                  tensor_dtype gyd, double *gx, char *gg, tensor_dtype ggd, int64_t n) {
    int gys = tensor__cuda_size(gyd);
    TENSOR__CUDA_LOOP(q, n) {
        tensor__gs_taps tx, ty;
        int64_t b, h, w;
        tensor__cuda_gs_point(a, q, &tx, &ty, &b, &h, &w);
        double gix = 0, giy = 0;
        for (int64_t c = 0; c < a.C; c++) {
            const char *xc = a.x + (b * a.xs[0] + c * a.xs[1]) * a.size;
            double go = tensor__cuda_load_f64(gy + (b * gy0 + c * gy1 + h * gy2 + w * gy3) * gys, gyd);
            for (int j = 0; j < ty.k; j++)
                for (int i = 0; i < tx.k; i++) {
                    if (!ty.v[j] || !tx.v[i]) continue;
                    if (gx) atomicAdd(gx + ((b * a.C + c) * a.H + ty.c[j]) * a.W + tx.c[i], tx.w[i] * ty.w[j] * go);
                    if (gg) {
                        double v = tensor__cuda_load_f64(xc + (ty.c[j] * a.xs[2] + tx.c[i] * a.xs[3]) * a.size, a.dt) * go;
                        gix += v * tx.dw[i] * ty.w[j];
                        giy += v * tx.w[i] * ty.dw[j];
                    }
                }
        }
        if (gg) {
            int ggs = tensor__cuda_size(ggd);
            tensor__cuda_store_f64(gg + 2 * q * ggs, ggd, gix);
            tensor__cuda_store_f64(gg + (2 * q + 1) * ggs, ggd, giy);
        }
    }
}
__global__ void __launch_bounds__(TENSOR__CUDA_THREADS) tensor__cuda_gs_unpack_kernel(char *dst, tensor_dtype dd, const double *src, int64_t n) {
    int size = tensor__cuda_size(dd);
    TENSOR__CUDA_LOOP(i, n) tensor__cuda_store_f64(dst + i * size, dd, src[i]);
}
static int tensor__cuda_grid_sample_backward(tensor__dev_call *c) {
    tensor__cuda_gs_args a;
    if (!tensor__cuda_gs_setup(c, &a)) return 1;
    int64_t oshape[4] = {a.N, a.C, a.Ho, a.Wo};
    tensor__dev_operand like = c->in[0];
    for (int d = 0; d < 4; d++) like.shape[d] = oshape[d];
    if (!tensor__cuda_bwd_incoming(c, like)) return 1;
    bool bad = false;
    const tensor__dev_operand *gx = tensor__cuda_bwd_grad(c, 0, &bad), *gg = tensor__cuda_bwd_grad(c, 1, &bad);
    if (bad) return 1;
    int64_t nx = a.N * a.C * a.H * a.W, n = a.N * a.Ho * a.Wo;
    cudaStream_t s;
    if (!tensor__cuda_stream(&s, c->error, sizeof c->error)) return 1;
    tensor__cuda_scratch sc;
    if (gx && !(sc.p[0] = tensor__cuda_alloc((size_t)(nx > 0 ? nx : 1) * sizeof(double), c->error, sizeof c->error))) return 1;
    if (gx && nx > 0 && cudaMemsetAsync(sc.p[0], 0, (size_t)nx * sizeof(double), s) != cudaSuccess) return tensor__cuda_fail(c, "grid_sample backward: clearing the gradient failed");
    if (n > 0 && (gx || gg)) {
        const tensor__dev_operand &gy = c->grad;
        TENSOR__CUDA_LAUNCH_BEGIN();
        tensor__cuda_gs_bwd_kernel<<<tensor__cuda_blocks(n), TENSOR__CUDA_THREADS, 0, s>>>(a, (const char *)gy.data, gy.strides[0], gy.strides[1], gy.strides[2], gy.strides[3], gy.dtype,
                                                                                        (double *)sc.p[0], gg ? (char *)gg->data : nullptr, gg ? gg->dtype : a.dt, n);
        if (tensor__cuda_launch_check(c)) return 1;
    }
    if (gx && nx > 0) {
        TENSOR__CUDA_LAUNCH_BEGIN();
        tensor__cuda_gs_unpack_kernel<<<tensor__cuda_blocks(nx), TENSOR__CUDA_THREADS, 0, s>>>((char *)gx->data, gx->dtype, (const double *)sc.p[0], nx);
        if (tensor__cuda_launch_check(c)) return 1;
    }
    return 0;
}

// >>cuda-register --------------------------------------------------------------------------------
/* The kernel table, built at compile time: tensor__cuda_kernel_of<op>::k is NULL unless an op has
   a specialization below, and the table lists it for every op of TENSOR_OPS in enum order. */
template <tensor_op OP> struct tensor__cuda_kernel_of { static constexpr tensor__dev_kernel k = nullptr; };
#define TENSOR__CUDA_KERNEL(name, ...) \
    template <> struct tensor__cuda_kernel_of<TENSOR_OP_##name> { static constexpr tensor__dev_kernel k = __VA_ARGS__; };
#define TENSOR__CUDA_KERNEL_UNARY(name, FEXPR, IEXPR) TENSOR__CUDA_KERNEL(name, &tensor__cuda_ew<tensor__cuda_op_##name, 1>)
#define TENSOR__CUDA_KERNEL_BINARY(name, FEXPR, IEXPR) TENSOR__CUDA_KERNEL(name, &tensor__cuda_ew<tensor__cuda_op_##name, 2>)
TENSOR__UNARY_FORMULAS(TENSOR__CUDA_KERNEL_UNARY)
TENSOR__BINARY_FORMULAS(TENSOR__CUDA_KERNEL_BINARY)
#define TENSOR__CUDA_KERNEL_TERNARY(name, FEXPR, IEXPR) TENSOR__CUDA_KERNEL(name, &tensor__cuda_ew<tensor__cuda_op_##name, 3>)
TENSOR__TERNARY_FORMULAS(TENSOR__CUDA_KERNEL_TERNARY)
TENSOR__CUDA_KERNEL(where, &tensor__cuda_where)
TENSOR__CUDA_KERNEL(add_, &tensor__cuda_add_)
TENSOR__CUDA_KERNEL(mul_scalar_, &tensor__cuda_mul_scalar_)
TENSOR__CUDA_KERNEL(copy_, &tensor__cuda_copy_)
TENSOR__CUDA_KERNEL(fill_, &tensor__cuda_fill_)
TENSOR__CUDA_KERNEL(zero_, &tensor__cuda_zero_)
TENSOR__CUDA_KERNEL(clone, &tensor__cuda_copy_op)
TENSOR__CUDA_KERNEL(contiguous, &tensor__cuda_copy_op)
TENSOR__CUDA_KERNEL(to_dtype, &tensor__cuda_copy_op)
TENSOR__CUDA_KERNEL(sum, &tensor__cuda_sum)
TENSOR__CUDA_KERNEL(sum_all, &tensor__cuda_sum)
TENSOR__CUDA_KERNEL(sum_dims, &tensor__cuda_sum)
TENSOR__CUDA_KERNEL(mean, &tensor__cuda_sum)
TENSOR__CUDA_KERNEL(mean_all, &tensor__cuda_sum)
TENSOR__CUDA_KERNEL(mean_dims, &tensor__cuda_sum)
TENSOR__CUDA_KERNEL(prod, &tensor__cuda_prod)
TENSOR__CUDA_KERNEL(max, &tensor__cuda_ext_op)
TENSOR__CUDA_KERNEL(max_all, &tensor__cuda_ext_op)
TENSOR__CUDA_KERNEL(min, &tensor__cuda_ext_op)
TENSOR__CUDA_KERNEL(min_all, &tensor__cuda_ext_op)
TENSOR__CUDA_KERNEL(argmax, &tensor__cuda_ext_op)
TENSOR__CUDA_KERNEL(argmin, &tensor__cuda_ext_op)
TENSOR__CUDA_KERNEL(amax, &tensor__cuda_ext_op)
TENSOR__CUDA_KERNEL(amin, &tensor__cuda_ext_op)
TENSOR__CUDA_KERNEL(sort, &tensor__cuda_sort)
TENSOR__CUDA_KERNEL(cumprod, &tensor__cuda_scan_op)
TENSOR__CUDA_KERNEL(cummax, &tensor__cuda_scan_op)
TENSOR__CUDA_KERNEL(cummin, &tensor__cuda_scan_op)
TENSOR__CUDA_KERNEL(logcumsumexp, &tensor__cuda_scan_op)
TENSOR__CUDA_KERNEL(var, &tensor__cuda_var)
TENSOR__CUDA_KERNEL(std, &tensor__cuda_var)
TENSOR__CUDA_KERNEL(logsumexp, &tensor__cuda_logsumexp)
TENSOR__CUDA_KERNEL(norm, &tensor__cuda_norm)
TENSOR__CUDA_KERNEL(cumsum, &tensor__cuda_cumsum)
TENSOR__CUDA_KERNEL(all, &tensor__cuda_allany)
TENSOR__CUDA_KERNEL(any, &tensor__cuda_allany)
TENSOR__CUDA_KERNEL(softmax, &tensor__cuda_softmax)
TENSOR__CUDA_KERNEL(log_softmax, &tensor__cuda_log_softmax)
TENSOR__CUDA_KERNEL(layer_norm, &tensor__cuda_layer_norm)
TENSOR__CUDA_KERNEL(rms_norm, &tensor__cuda_rms_norm)
TENSOR__CUDA_KERNEL(cross_entropy, &tensor__cuda_cross_entropy)
TENSOR__CUDA_KERNEL(nll_loss, &tensor__cuda_nll_loss)
TENSOR__CUDA_KERNEL(cross_entropy_ex, &tensor__cuda_cross_entropy_ex)
TENSOR__CUDA_KERNEL(nll_loss_ex, &tensor__cuda_nll_loss_ex)
TENSOR__CUDA_KERNEL(ctc_loss, &tensor__cuda_ctc_loss)
TENSOR__CUDA_KERNEL(embedding, &tensor__cuda_embedding)
TENSOR__CUDA_KERNEL(matmul, &tensor__cuda_matmul)
TENSOR__CUDA_KERNEL(flip, &tensor__cuda_flip)
TENSOR__CUDA_KERNEL(repeat, &tensor__cuda_repeat)
TENSOR__CUDA_KERNEL(pad, &tensor__cuda_pad)
TENSOR__CUDA_KERNEL(tril, &tensor__cuda_tril)
TENSOR__CUDA_KERNEL(linalg_lu_factor, &tensor__cuda_linalg_lu_factor)
TENSOR__CUDA_KERNEL(linalg_cholesky, &tensor__cuda_linalg_cholesky)
TENSOR__CUDA_KERNEL(linalg_solve_triangular, &tensor__cuda_linalg_solve_triangular)
TENSOR__CUDA_KERNEL(linalg_qr, &tensor__cuda_linalg_qr)
TENSOR__CUDA_KERNEL(linalg_eigh, &tensor__cuda_linalg_eigh)
TENSOR__CUDA_KERNEL(linalg_svd, &tensor__cuda_linalg_svd)
TENSOR__CUDA_KERNEL(triu, &tensor__cuda_triu)
TENSOR__CUDA_KERNEL(gather, &tensor__cuda_gather)
TENSOR__CUDA_KERNEL(scatter_add, &tensor__cuda_scatter_add)
TENSOR__CUDA_KERNEL(index_select, &tensor__cuda_index_select)
TENSOR__CUDA_KERNEL(scatter, &tensor__cuda_scatter)
TENSOR__CUDA_KERNEL(scatter_reduce, &tensor__cuda_scatter_reduce)
TENSOR__CUDA_KERNEL(searchsorted, &tensor__cuda_searchsorted)
TENSOR__CUDA_KERNEL(masked_fill, &tensor__cuda_masked_fill)
TENSOR__CUDA_KERNEL(dropout, &tensor__cuda_dropout)
TENSOR__CUDA_KERNEL(multinomial, &tensor__cuda_multinomial)
TENSOR__CUDA_KERNEL(poisson, &tensor__cuda_poisson) /* random ops (issue 14) */
TENSOR__CUDA_KERNEL(conv2d, &tensor__cuda_conv2d)
TENSOR__CUDA_KERNEL(conv1d, &tensor__cuda_conv1d)
TENSOR__CUDA_KERNEL(max_pool2d, &tensor__cuda_max_pool2d)
TENSOR__CUDA_KERNEL(avg_pool2d, &tensor__cuda_avg_pool2d)
TENSOR__CUDA_KERNEL(grid_sample, &tensor__cuda_grid_sample)

#define TENSOR__CUDA_KERNEL_ROW(name, kind, impl, types, grad, params, doc) tensor__cuda_kernel_of<TENSOR_OP_##name>::k,
static const tensor__dev_kernel tensor__cuda_kernels[TENSOR_OP_COUNT] = {TENSOR_OPS(TENSOR__CUDA_KERNEL_ROW)};

/* The fused backward kernels (>>cuda-backward), built the same way: NULL where an op has none (its
   derivative is composed of ops). */
template <tensor_op OP> struct tensor__cuda_backward_of { static constexpr tensor__dev_kernel k = nullptr; };
#define TENSOR__CUDA_BACKWARD(name, ...) \
    template <> struct tensor__cuda_backward_of<TENSOR_OP_##name> { static constexpr tensor__dev_kernel k = __VA_ARGS__; };
TENSOR__CUDA_BACKWARD(conv2d, &tensor__cuda_conv2d_backward)
TENSOR__CUDA_BACKWARD(conv1d, &tensor__cuda_conv1d_backward)
TENSOR__CUDA_BACKWARD(max_pool2d, &tensor__cuda_max_pool2d_backward)
TENSOR__CUDA_BACKWARD(avg_pool2d, &tensor__cuda_avg_pool2d_backward)
TENSOR__CUDA_BACKWARD(relu, &tensor__cuda_relu_backward)
TENSOR__CUDA_BACKWARD(softmax, &tensor__cuda_softmax_backward)
TENSOR__CUDA_BACKWARD(log_softmax, &tensor__cuda_log_softmax_backward)
TENSOR__CUDA_BACKWARD(layer_norm, &tensor__cuda_layer_norm_backward)
TENSOR__CUDA_BACKWARD(rms_norm, &tensor__cuda_rms_norm_backward)
TENSOR__CUDA_BACKWARD(cross_entropy, &tensor__cuda_cross_entropy_backward)
TENSOR__CUDA_BACKWARD(ctc_loss, &tensor__cuda_ctc_loss_backward)
TENSOR__CUDA_BACKWARD(grid_sample, &tensor__cuda_grid_sample_backward)

#define TENSOR__CUDA_BACKWARD_ROW(name, kind, impl, types, grad, params, doc) tensor__cuda_backward_of<TENSOR_OP_##name>::k,
static const tensor__dev_kernel tensor__cuda_backward_kernels[TENSOR_OP_COUNT] = {TENSOR_OPS(TENSOR__CUDA_BACKWARD_ROW)};


static const tensor__device tensor__cuda_device = {
    TENSOR__DEVICE_ABI,
    TENSOR_CUDA,
    TENSOR_OP_COUNT,
    tensor__cuda_op_names,
    tensor__cuda_kernels,
    tensor__cuda_device_count,
    tensor__cuda_info,
    tensor__cuda_alloc,
    tensor__cuda_free,
    tensor__cuda_copy,
    tensor__cuda_synchronize,
    tensor__cuda_empty_cache,
    tensor__cuda_set_allow_tf32,
    tensor__cuda_optim_step,
    tensor__cuda_backward_kernels,
    tensor__cuda_sum_squares,
};

/* Registration before main: linking this object is all a program does to get the device. The
   constructor only hands over the table (constant data); no CUDA call runs before main. */
namespace {
struct tensor__cuda_registrar {
    tensor__cuda_registrar() { tensor__register_device(&tensor__cuda_device); }
};
tensor__cuda_registrar tensor__cuda_registrar_instance;
} // namespace
