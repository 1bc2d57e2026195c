// >>threads ------------------------------------------------------------------------------------
/* A persistent thread pool (pthreads; no OpenMP). tensor__parallel_for(n, grain, fn, ctx) splits
   [0, n) into at most one chunk per thread, each of at least `grain` items, runs chunk after chunk
   on the workers and on the calling thread, and returns when all are done. Work of n <= grain runs
   on the calling thread without touching the pool, so small tensors never pay for threads. A call
   made from inside a parallel region, or while another thread holds the pool, also runs inline:
   several user threads share the one pool, whoever takes it (a try-lock, `busy`) runs its job on
   it, the others run theirs on their own thread meanwhile, so jobs never mix and nobody waits.
   Without pthreads (Windows, or TENSOR_NO_THREADS defined) everything runs inline. */
typedef void (*tensor__range_fn)(int64_t begin, int64_t end, void *ctx);

static int tensor__num_threads; /* atomic; 0 until set: then tensor__default_threads() */
static int tensor__default_threads(void);

#if defined(_WIN32) || defined(TENSOR_NO_THREADS)
#define TENSOR__HAVE_THREADS 0
static int tensor__cores(void) { return 1; }
static void tensor__parallel_for(int64_t n, int64_t grain, tensor__range_fn fn, void *ctx) { (void)grain; if (n > 0) fn(0, n, ctx); }
#ifdef TENSOR_TEST_HOOKS
TENSOR_API void tensor_test_hold_workers(bool hold) { (void)hold; }
#endif
static void tensor__pool_stop(void) {}
#define TENSOR__ATOMIC_SET(p, v) (*(p) = (v))
/* No thread-exit hook here: a thread's state (>>threads-state) waits for tensor_shutdown. */
static void tensor__thread_at_exit(tensor__thread *s) { (void)s; }
#else
#define TENSOR__HAVE_THREADS 1
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>
/* syscall() is declared where <unistd.h> has its BSD/GNU extensions (not a strict -std=c99 build) */
#if defined(__linux__) && (defined(__USE_MISC) || defined(_BSD_SOURCE) || defined(_GNU_SOURCE))
#include <sys/syscall.h>
#endif
#if defined(__linux__) && (defined(__USE_MISC) || defined(_BSD_SOURCE) || defined(_GNU_SOURCE)) && defined(SYS_getcpu) && \
    defined(SYS_sched_getaffinity) && defined(SYS_sched_setaffinity)
#define TENSOR__UNSHARE_CORE 1
#else
#define TENSOR__UNSHARE_CORE 0
#endif

/* A flag several kernel threads may raise. */
#define TENSOR__ATOMIC_SET(p, v) __atomic_store_n(p, v, __ATOMIC_RELAXED)

/* A user thread's state (>>threads-state) is given back when the thread ends, by the destructor of
   a pthread key whose value is the state (set when the state is made). */
static pthread_key_t tensor__exit_key;
static pthread_once_t tensor__exit_once = PTHREAD_ONCE_INIT;
static bool tensor__exit_key_made;
static void tensor__exit_key_run(void *s) { tensor__thread_exit((tensor__thread *)s); }
static void tensor__exit_key_make(void) { tensor__exit_key_made = pthread_key_create(&tensor__exit_key, tensor__exit_key_run) == 0; }
static void tensor__thread_at_exit(tensor__thread *s) {
    pthread_once(&tensor__exit_once, tensor__exit_key_make);
    if (tensor__exit_key_made) pthread_setspecific(tensor__exit_key, s);
}

/* Asked once: sysconf reads /sys on every call, microseconds that every op would pay. */
static int tensor__cores(void) {
    static int cached;
    int c = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (c) return c;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    c = n < 1 ? 1 : n > 256 ? 256 : (int)n;
    __atomic_store_n(&cached, c, __ATOMIC_RELAXED);
    return c;
}

/* How long a worker polls for the next job before it sleeps, and the caller polls for the workers
   to finish before it sleeps. Waking a sleeping thread costs 15-40 us here, and the woken worker
   lands on the caller's core (tensor__leave_cpu moves it, at a further cost). The MLP step has
   gaps between its threaded ops longer than 200 us: with 200 us of polling its 2-thread time was
   630-640 us in every run, with 5 ms 322 us (both measured with the move in place). So workers
   poll 5 ms (OpenBLAS's poll for about 100 ms, Intel OpenMP's 200 ms), yielding the core between
   rounds so a thread that shares it (another process, or the other side of the pool) runs. */
#ifndef TENSOR_SPIN_US
#define TENSOR_SPIN_US 5000
#endif
#if defined(__x86_64__) || defined(__i386__)
#define TENSOR__CPU_RELAX() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define TENSOR__CPU_RELAX() __asm__ __volatile__("yield")
#else
#define TENSOR__CPU_RELAX() ((void)0)
#endif

/* The posted job lives in the pool itself, not on the caller's stack, and every chunk is claimed
   through one word, `ticket`: the job's generation in its high 32 bits, the next chunk to claim in
   its low 32 (TENSOR__POOL_CLOSED while a job is being posted). A worker reads the job's fields,
   then claims a chunk by a compare-and-swap of the ticket it read them under: the swap fails if a
   new job was posted in between, so nobody runs a chunk with another job's fields. The caller
   claims chunks the same way, and waits only for chunks that somebody claimed (`chunks_done`): a
   worker the scheduler has not run yet has claimed nothing, and the caller does its share itself
   (with other processes busy on every core, a step then takes about its one-thread time instead
   of waiting a time slice for each worker at each op).
   Sleeping and waking: a worker about to sleep counts itself in `sleepers`, then re-checks the
   generation under `mu` and waits on `wake`; the caller bumps the generation, then reads
   `sleepers` and only when some sleep takes `mu` to broadcast. Both pairs are seq_cst, so one side
   sees the other's store and no wake-up is lost, and an op whose workers are polling takes no
   lock. The caller's wait for claimed chunks is the same pattern the other way (caller_waits,
   `done`). */
#define TENSOR__POOL_CLOSED 0xffffffffu
typedef struct {
    pthread_t threads[256];
    int n_workers;
    bool started;
    int stop;           /* atomic */
    uint64_t ticket;    /* atomic: generation << 32 | next chunk */
    uint32_t spawn_generation; /* workers start waiting for the generation after this one */
    /* the job of the ticket's generation (atomics: a late worker may read them while the next job
       is posted; its claim then fails) */
    tensor__range_fn fn;
    void *ctx;
    int64_t n, chunk, n_chunks;
    int64_t chunks_done; /* atomic: chunks of this job finished */
    int sleepers;       /* atomic: workers waiting on `wake` */
    int caller_waits;   /* atomic: the caller waits on `done` */
    int caller_cpu;     /* atomic: the core the caller woke the sleepers from (-1: unknown) */
    pthread_mutex_t mu, busy;
    pthread_cond_t wake, done;
} tensor__pool_state;

static tensor__pool_state tensor__pool = {{0}, 0, false, 0, 0, 0, NULL, NULL, 0, 0, 0, 0, 0, 0, -1, PTHREAD_MUTEX_INITIALIZER,
                                          PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER};
static TENSOR__THREAD_LOCAL bool tensor__in_parallel;

/* Polls until pred(arg) holds or about TENSOR_SPIN_US pass; returns whether it holds. The clock
   is CLOCK_MONOTONIC where <time.h> declares it (POSIX); a strict -std=c99 build has none and
   counts rounds of 64 pauses instead (1-3 us each on current x86). */
static bool tensor__spin_until(bool (*pred)(const void *), const void *arg) {
    if (pred(arg)) return true;
    if (TENSOR_SPIN_US <= 0) return false;
#ifdef CLOCK_MONOTONIC
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t deadline = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000 + TENSOR_SPIN_US;
#else
    int64_t rounds = TENSOR_SPIN_US / 2 + 1;
#endif
    for (;;) {
        for (int i = 0; i < 64; i++) {
            TENSOR__CPU_RELAX();
            if (pred(arg)) return true;
        }
        sched_yield();
#ifdef CLOCK_MONOTONIC
        clock_gettime(CLOCK_MONOTONIC, &ts);
        if ((int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000 >= deadline) return false;
#else
        if (--rounds <= 0) return false;
#endif
    }
}
static uint32_t tensor__pool_generation(void) { return (uint32_t)(__atomic_load_n(&tensor__pool.ticket, __ATOMIC_ACQUIRE) >> 32); }
static bool tensor__pool_posted(const void *seen) {
    return tensor__pool_generation() != *(const uint32_t *)seen || __atomic_load_n(&tensor__pool.stop, __ATOMIC_ACQUIRE);
}
static bool tensor__pool_finished(const void *n_chunks) {
    return __atomic_load_n(&tensor__pool.chunks_done, __ATOMIC_ACQUIRE) == *(const int64_t *)n_chunks;
}

/* This VM's scheduler (Linux 6.x under Firecracker) wakes a sleeping worker on the core of the
   thread that woke it, and with both threads busy it can leave the pair there for seconds: a
   2-thread op then runs at 1-thread speed (measured: the 2-thread MLP step at 640 instead of 320
   us in some runs). So a worker woken on its caller's core moves off it: it drops that core from
   its affinity mask, which migrates it at once, and restores the mask, which leaves it where it is
   now and free to move later. Raw syscalls: the glibc wrappers need _GNU_SOURCE before the first
   include, which is the user's to define. */
#if TENSOR__UNSHARE_CORE
static int tensor__current_cpu(void) {
    unsigned cpu = 0;
    return syscall(SYS_getcpu, &cpu, NULL, NULL) == 0 ? (int)cpu : -1;
}
static void tensor__leave_cpu(int cpu) {
    unsigned long mask[16], keep[16]; /* up to 1024 cores; more: the call fails and nothing moves */
    const int bits = (int)(8 * sizeof(unsigned long));
    long n = syscall(SYS_sched_getaffinity, 0, sizeof mask, mask); /* bytes written */
    if (n <= 0 || cpu < 0 || cpu >= 8 * n) return;
    memcpy(keep, mask, (size_t)n);
    mask[cpu / bits] &= ~(1UL << (cpu % bits));
    bool other = false;
    for (long i = 0; i < n / (long)sizeof(unsigned long); i++) other = other || mask[i] != 0;
    if (other && syscall(SYS_sched_setaffinity, 0, (size_t)n, mask) == 0) syscall(SYS_sched_setaffinity, 0, (size_t)n, keep);
}
#endif

/* Claims and runs chunks of the posted job until none is left or another job replaces it. */
static void tensor__pool_run_chunks(void) {
    uint64_t t = __atomic_load_n(&tensor__pool.ticket, __ATOMIC_ACQUIRE);
    for (;;) {
        uint32_t c = (uint32_t)t;
        if (c == TENSOR__POOL_CLOSED) return;
        tensor__range_fn fn = __atomic_load_n(&tensor__pool.fn, __ATOMIC_RELAXED);
        void *ctx = __atomic_load_n(&tensor__pool.ctx, __ATOMIC_RELAXED);
        int64_t n = __atomic_load_n(&tensor__pool.n, __ATOMIC_RELAXED), chunk = __atomic_load_n(&tensor__pool.chunk, __ATOMIC_RELAXED);
        int64_t n_chunks = __atomic_load_n(&tensor__pool.n_chunks, __ATOMIC_RELAXED);
        if ((int64_t)c >= n_chunks) return;
        /* the fields belong to t's job only if the ticket is still t: claim chunk c of it */
        if (!__atomic_compare_exchange_n(&tensor__pool.ticket, &t, t + 1, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) continue;
        int64_t begin = (int64_t)c * chunk, end = begin + chunk < n ? begin + chunk : n;
        fn(begin, end, ctx);
        if (__atomic_add_fetch(&tensor__pool.chunks_done, 1, __ATOMIC_SEQ_CST) == n_chunks &&
            __atomic_load_n(&tensor__pool.caller_waits, __ATOMIC_SEQ_CST)) {
            pthread_mutex_lock(&tensor__pool.mu); /* the caller is asleep on `done`, or about to be */
            pthread_cond_signal(&tensor__pool.done);
            pthread_mutex_unlock(&tensor__pool.mu);
        }
        t = __atomic_load_n(&tensor__pool.ticket, __ATOMIC_ACQUIRE);
    }
}

#ifdef TENSOR_TEST_HOOKS
/* tensor_test_hold_workers: while set, a worker that sees a job claims nothing, as a worker that
   the scheduler does not run. */
static int tensor__pool_hold; /* atomic */
static bool tensor__pool_released(const void *unused) {
    (void)unused;
    return !__atomic_load_n(&tensor__pool_hold, __ATOMIC_ACQUIRE) || __atomic_load_n(&tensor__pool.stop, __ATOMIC_ACQUIRE);
}
TENSOR_API void tensor_test_hold_workers(bool hold) { __atomic_store_n(&tensor__pool_hold, hold ? 1 : 0, __ATOMIC_RELEASE); }
#endif

static void *tensor__worker(void *arg) {
    (void)arg;
    tensor__in_parallel = true;
    uint32_t seen = tensor__pool.spawn_generation; /* not the ticket's: a job may already be posted */
#if TENSOR__UNSHARE_CORE
    int creator = __atomic_load_n(&tensor__pool.caller_cpu, __ATOMIC_RELAXED);
    if (creator >= 0 && tensor__current_cpu() == creator) tensor__leave_cpu(creator);
#endif
    for (;;) {
        if (!tensor__spin_until(tensor__pool_posted, &seen)) {
            pthread_mutex_lock(&tensor__pool.mu);
            __atomic_add_fetch(&tensor__pool.sleepers, 1, __ATOMIC_SEQ_CST);
            while (!tensor__pool_posted(&seen)) pthread_cond_wait(&tensor__pool.wake, &tensor__pool.mu);
            __atomic_sub_fetch(&tensor__pool.sleepers, 1, __ATOMIC_SEQ_CST);
            int caller = __atomic_load_n(&tensor__pool.caller_cpu, __ATOMIC_RELAXED);
            pthread_mutex_unlock(&tensor__pool.mu);
#if TENSOR__UNSHARE_CORE
            if (caller >= 0 && tensor__current_cpu() == caller) tensor__leave_cpu(caller);
#else
            (void)caller;
#endif
        }
        if (__atomic_load_n(&tensor__pool.stop, __ATOMIC_ACQUIRE)) break;
        seen = tensor__pool_generation();
#ifdef TENSOR_TEST_HOOKS
        while (!tensor__spin_until(tensor__pool_released, NULL)) {} /* a worker the scheduler does not run */
#endif
        tensor__pool_run_chunks();
    }
    return NULL;
}

/* Joins the workers (tensor_shutdown, or a change of the thread count). Holds `busy`. */
static void tensor__pool_stop_locked(void) {
    if (!tensor__pool.started) return;
    pthread_mutex_lock(&tensor__pool.mu);
    __atomic_store_n(&tensor__pool.stop, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&tensor__pool.wake);
    pthread_mutex_unlock(&tensor__pool.mu);
    for (int i = 0; i < tensor__pool.n_workers; i++) pthread_join(tensor__pool.threads[i], NULL);
    tensor__pool.started = false;
    __atomic_store_n(&tensor__pool.stop, 0, __ATOMIC_RELEASE);
    tensor__pool.n_workers = 0;
}
static void tensor__pool_stop(void) {
    pthread_mutex_lock(&tensor__pool.busy);
    tensor__pool_stop_locked();
    pthread_mutex_unlock(&tensor__pool.busy);
}

/* Starts workers-many threads; false (and no pool) if the system refuses. Holds `busy`. */
static bool tensor__pool_start_locked(int workers) {
    if (tensor__pool.started && tensor__pool.n_workers == workers) return true;
    tensor__pool_stop_locked();
#if TENSOR__UNSHARE_CORE
    __atomic_store_n(&tensor__pool.caller_cpu, tensor__current_cpu(), __ATOMIC_RELAXED); /* a new thread starts here too */
#endif
    tensor__pool.spawn_generation = tensor__pool_generation();
    for (int i = 0; i < workers; i++) {
        if (pthread_create(&tensor__pool.threads[i], NULL, tensor__worker, NULL) != 0) {
            tensor__pool.n_workers = i;
            tensor__pool.started = true;
            tensor__pool_stop_locked();
            return false;
        }
        tensor__pool.n_workers = i + 1;
    }
    tensor__pool.started = true;
    return true;
}

static void tensor__parallel_for(int64_t n, int64_t grain, tensor__range_fn fn, void *ctx) {
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    if (n <= grain) { fn(0, n, ctx); return; } /* small work: no pool, no thread count lookup */
    int threads = TENSOR__LOAD(&tensor__num_threads);
    if (!threads) threads = tensor__default_threads();
    if (threads <= 1 || tensor__in_parallel || pthread_mutex_trylock(&tensor__pool.busy) != 0) {
        fn(0, n, ctx);
        return;
    }
    int64_t chunks = (n + grain - 1) / grain;
    if (chunks > threads) chunks = threads;
    if (!tensor__pool_start_locked(threads - 1)) {
        pthread_mutex_unlock(&tensor__pool.busy);
        fn(0, n, ctx);
        return;
    }
    /* post: close the ticket (a late worker's claim of the last job fails from here on), set the
       job, then open the ticket at chunk 0 of the next generation */
    uint32_t gen = tensor__pool_generation() + 1;
    __atomic_exchange_n(&tensor__pool.ticket, (uint64_t)gen << 32 | TENSOR__POOL_CLOSED, __ATOMIC_SEQ_CST);
    __atomic_store_n(&tensor__pool.fn, fn, __ATOMIC_RELAXED);
    __atomic_store_n(&tensor__pool.ctx, ctx, __ATOMIC_RELAXED);
    __atomic_store_n(&tensor__pool.n, n, __ATOMIC_RELAXED);
    __atomic_store_n(&tensor__pool.n_chunks, chunks, __ATOMIC_RELAXED);
    __atomic_store_n(&tensor__pool.chunk, (n + chunks - 1) / chunks, __ATOMIC_RELAXED);
    __atomic_store_n(&tensor__pool.chunks_done, (int64_t)0, __ATOMIC_RELAXED);
    __atomic_store_n(&tensor__pool.ticket, (uint64_t)gen << 32, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&tensor__pool.sleepers, __ATOMIC_SEQ_CST)) { /* wakes the workers that stopped polling */
        pthread_mutex_lock(&tensor__pool.mu);
#if TENSOR__UNSHARE_CORE
        __atomic_store_n(&tensor__pool.caller_cpu, tensor__current_cpu(), __ATOMIC_RELAXED);
#endif
        pthread_cond_broadcast(&tensor__pool.wake);
        pthread_mutex_unlock(&tensor__pool.mu);
    }
    tensor__in_parallel = true;
    tensor__pool_run_chunks();
    tensor__in_parallel = false;
    /* every chunk is claimed now: wait for those that others run */
    if (!tensor__spin_until(tensor__pool_finished, &chunks)) {
        pthread_mutex_lock(&tensor__pool.mu);
        __atomic_store_n(&tensor__pool.caller_waits, 1, __ATOMIC_SEQ_CST);
        while (__atomic_load_n(&tensor__pool.chunks_done, __ATOMIC_SEQ_CST) != chunks) pthread_cond_wait(&tensor__pool.done, &tensor__pool.mu);
        __atomic_store_n(&tensor__pool.caller_waits, 0, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&tensor__pool.mu);
    }
    pthread_mutex_unlock(&tensor__pool.busy);
}
#endif

/* The thread count when none is set: TENSOR_NUM_THREADS from the environment, read at the first
   use (as PyTorch reads OMP_NUM_THREADS), else every core. A value that is not a whole number from
   1 to 256 is ignored. */
static int tensor__default_threads(void) {
    static int cached; /* atomic */
    int c = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (c) return c;
    const char *env = getenv("TENSOR_NUM_THREADS");
    char *end = NULL;
    long v = env ? strtol(env, &end, 10) : 0;
    c = env && end != env && *end == 0 && v >= 1 && v <= 256 ? (int)v : tensor__cores();
    __atomic_store_n(&cached, c, __ATOMIC_RELAXED);
    return c;
}

TENSOR_API void tensor_set_num_threads(int n) {
    if (n < 0) { tensor__fail("tensor_set_num_threads", "thread count must be >= 0, got %d", n); return; }
    if (n > 256) n = 256;
    TENSOR__STORE(&tensor__num_threads, n); /* the pool restarts with the new size at its next use */
}
TENSOR_API int tensor_get_num_threads(void) {
    int n = TENSOR__LOAD(&tensor__num_threads);
    return n ? n : tensor__default_threads();
}
