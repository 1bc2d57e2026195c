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

static int tensor__num_threads; /* atomic; 0 until set: then every core */

#if defined(_WIN32) || defined(TENSOR_NO_THREADS)
#define TENSOR__HAVE_THREADS 0
static int tensor__cores(void) { return 1; }
static void tensor__parallel_for(int64_t n, int64_t grain, tensor__range_fn fn, void *ctx) { (void)grain; if (n > 0) fn(0, n, ctx); }
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

typedef struct {
    tensor__range_fn fn;
    void *ctx;
    int64_t n, chunk, n_chunks;
    int64_t next;     /* the next chunk to claim (atomic) */
} tensor__job;

/* Posting a job: the caller (holding `busy`) stores job, zeroes workers_done and bumps generation;
   workers see the new generation by polling or after a wake-up. A worker about to sleep counts
   itself in `sleepers`, then re-checks the generation under `mu` and waits on `wake`; the caller
   bumps the generation, then reads `sleepers` and only when some sleep takes `mu` to broadcast.
   Both pairs are seq_cst, so one side sees the other's store and no wake-up is lost, and an op
   whose workers are polling takes no lock. Each worker checks out of every generation once
   (workers_done); the caller returns only when all have, because the job lives on its stack. The
   caller's wait for them is the same pattern the other way (caller_waits, `done`). */
typedef struct {
    pthread_t threads[256];
    int n_workers;
    int workers_done;   /* atomic */
    bool started;
    int stop;           /* atomic */
    int64_t generation; /* atomic */
    int64_t spawn_generation; /* workers start waiting for the generation after this one */
    tensor__job *job;   /* atomic */
    int sleepers;       /* atomic: workers waiting on `wake` */
    int caller_waits;   /* atomic: the caller waits on `done` */
    int caller_cpu;     /* atomic: the core the caller woke the sleepers from (-1: unknown) */
    pthread_mutex_t mu, busy;
    pthread_cond_t wake, done;
} tensor__pool_state;

static tensor__pool_state tensor__pool = {{0}, 0, 0, false, 0, 0, 0, NULL, 0, 0, -1, PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
                                          PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER};
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
static bool tensor__pool_posted(const void *seen) {
    return __atomic_load_n(&tensor__pool.generation, __ATOMIC_ACQUIRE) != *(const int64_t *)seen ||
           __atomic_load_n(&tensor__pool.stop, __ATOMIC_ACQUIRE);
}
static bool tensor__pool_finished(const void *unused) {
    (void)unused;
    return __atomic_load_n(&tensor__pool.workers_done, __ATOMIC_ACQUIRE) == tensor__pool.n_workers;
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

static void tensor__run_chunks(tensor__job *job) {
    for (;;) {
        int64_t c = __atomic_fetch_add(&job->next, 1, __ATOMIC_RELAXED);
        if (c >= job->n_chunks) return;
        int64_t begin = c * job->chunk, end = begin + job->chunk < job->n ? begin + job->chunk : job->n;
        job->fn(begin, end, job->ctx);
    }
}

static void *tensor__worker(void *arg) {
    (void)arg;
    tensor__in_parallel = true;
    int64_t seen = tensor__pool.spawn_generation; /* not .generation: a job may already be posted */
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
        seen = __atomic_load_n(&tensor__pool.generation, __ATOMIC_ACQUIRE);
        tensor__run_chunks(__atomic_load_n(&tensor__pool.job, __ATOMIC_ACQUIRE));
        /* checked out: the job may be gone from here on */
        if (__atomic_add_fetch(&tensor__pool.workers_done, 1, __ATOMIC_SEQ_CST) == tensor__pool.n_workers &&
            __atomic_load_n(&tensor__pool.caller_waits, __ATOMIC_SEQ_CST)) {
            pthread_mutex_lock(&tensor__pool.mu); /* the caller is asleep on `done`, or about to be */
            pthread_cond_signal(&tensor__pool.done);
            pthread_mutex_unlock(&tensor__pool.mu);
        }
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
    tensor__pool.spawn_generation = __atomic_load_n(&tensor__pool.generation, __ATOMIC_RELAXED);
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
    if (!threads) threads = tensor__cores();
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
    tensor__job job;
    job.fn = fn;
    job.ctx = ctx;
    job.n = n;
    job.n_chunks = chunks;
    job.chunk = (n + chunks - 1) / chunks;
    job.next = 0;
    __atomic_store_n(&tensor__pool.job, &job, __ATOMIC_RELAXED);
    __atomic_store_n(&tensor__pool.workers_done, 0, __ATOMIC_RELAXED);
    __atomic_add_fetch(&tensor__pool.generation, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&tensor__pool.sleepers, __ATOMIC_SEQ_CST)) { /* wakes the workers that stopped polling */
        pthread_mutex_lock(&tensor__pool.mu);
#if TENSOR__UNSHARE_CORE
        __atomic_store_n(&tensor__pool.caller_cpu, tensor__current_cpu(), __ATOMIC_RELAXED);
#endif
        pthread_cond_broadcast(&tensor__pool.wake);
        pthread_mutex_unlock(&tensor__pool.mu);
    }
    tensor__in_parallel = true;
    tensor__run_chunks(&job);
    tensor__in_parallel = false;
    if (!tensor__spin_until(tensor__pool_finished, NULL)) {
        pthread_mutex_lock(&tensor__pool.mu);
        __atomic_store_n(&tensor__pool.caller_waits, 1, __ATOMIC_SEQ_CST);
        while (__atomic_load_n(&tensor__pool.workers_done, __ATOMIC_SEQ_CST) != tensor__pool.n_workers)
            pthread_cond_wait(&tensor__pool.done, &tensor__pool.mu);
        __atomic_store_n(&tensor__pool.caller_waits, 0, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&tensor__pool.mu);
    }
    __atomic_store_n(&tensor__pool.job, (tensor__job *)NULL, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&tensor__pool.busy);
}
#endif

TENSOR_API void tensor_set_num_threads(int n) {
    if (n < 0) { tensor__fail("tensor_set_num_threads", "thread count must be >= 0, got %d", n); return; }
    if (n > 256) n = 256;
    TENSOR__STORE(&tensor__num_threads, n); /* the pool restarts with the new size at its next use */
}
TENSOR_API int tensor_get_num_threads(void) {
    int n = TENSOR__LOAD(&tensor__num_threads);
    return n ? n : tensor__cores();
}
