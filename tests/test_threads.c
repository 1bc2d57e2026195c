/* Several user threads at once: each trains its own model (scopes, randn, linear, matmul, tanh,
   cross-entropy, backward, AdamW) and must end with bitwise the parameters it gets alone; threads
   evaluate weights the main thread made and shares read-only; scope stacks are per thread; a
   tensor freed by a thread other than its owner (also one whose owner has ended) is released
   exactly once and the counts come back; random streams are per thread; tensor_shutdown frees
   every thread's handles. Worker threads never call CHECK (the harness is single-threaded): they
   record what they saw and the main thread checks it after joining them. */
#include "test.h"
#include <pthread.h>
#include <time.h>
#include <unistd.h>

#define N_WORKERS 4

/* Runs fn(arg[i]) on n threads at once (or one after the other when `alone`); false if a thread
   could not be started. */
static bool run_threads(int n, void *(*fn)(void *), void *args, size_t arg_size, bool alone) {
    pthread_t th[N_WORKERS];
    bool ok = true;
    for (int i = 0; i < n; i++) {
        void *a = (char *)args + (size_t)i * arg_size;
        if (pthread_create(&th[i], NULL, fn, a) != 0) { ok = false; n = i; break; }
        if (alone) pthread_join(th[i], NULL);
    }
    if (!alone)
        for (int i = 0; i < n; i++) pthread_join(th[i], NULL);
    return ok;
}

/* The first error a worker saw (its thread's tensor_last_error), kept for the main thread. */
static void note_error(char *buf, size_t n) {
    if (!buf[0] && tensor_last_error()) snprintf(buf, n, "%s", tensor_last_error());
}

/* ---- training on several threads ---- */

#define TR_IN 64
#define TR_HID 128
#define TR_OUT 10
#define TR_BATCH 128 /* the first layer's GEMM is 1M multiply-adds: the pool splits it */
#define TR_STEPS 24

typedef struct {
    uint64_t seed;
    float w1[TR_HID * TR_IN], b1[TR_HID], w2[TR_OUT * TR_HID];
    float loss;
    char error[256];
} train_job;

/* A uniform(-scale, scale) leaf from the thread's generator, made in a scope of its own. */
static tensor *train_param(int ndim, const int64_t *shape, double scale) {
    tensor_scope_begin();
    tensor *p = tensor_keep(tensor_sub_scalar(tensor_mul_scalar(tensor_rand(ndim, shape, TENSOR_F32), 2 * scale), scale));
    tensor_scope_end();
    return tensor_set_requires_grad(p, true);
}

static void *train_thread(void *arg) {
    train_job *j = (train_job *)arg;
    tensor_manual_seed(j->seed);
    tensor *w1 = train_param(TENSOR_SHAPE(TR_HID, TR_IN), 1 / sqrt(TR_IN));
    tensor *b1 = train_param(TENSOR_SHAPE(TR_HID), 1 / sqrt(TR_IN));
    tensor *w2 = train_param(TENSOR_SHAPE(TR_OUT, TR_HID), 1 / sqrt(TR_HID));
    tensor *params[3] = {w1, b1, w2};
    tensor_optim *opt = tensor_optim_adamw(3, params, 1e-2, 0.9, 0.999, 1e-8, 1e-2);
    for (int step = 0; step < TR_STEPS; step++) {
        tensor_scope_begin();
        tensor *x = tensor_randn(TENSOR_SHAPE(TR_BATCH, TR_IN), TENSOR_F32);
        tensor *y = tensor_randint(0, TR_OUT, TENSOR_SHAPE(TR_BATCH), TENSOR_I64);
        tensor *h = tensor_tanh(tensor_linear(x, w1, b1));
        tensor *logits = tensor_matmul(h, tensor_transpose(w2, 0, 1));
        tensor *loss = tensor_add(tensor_cross_entropy(logits, y), tensor_mul_scalar(tensor_sum_all(tensor_square(w1)), 1e-4));
        tensor_optim_zero_grad(opt);
        if (!loss || tensor_backward(loss) != 0 || tensor_optim_step(opt) != 0) note_error(j->error, sizeof j->error);
        if (step == TR_STEPS - 1) j->loss = (float)tensor_item(loss);
        tensor_scope_end();
    }
    if (tensor_copy_to(w1, j->w1, sizeof j->w1) || tensor_copy_to(b1, j->b1, sizeof j->b1) || tensor_copy_to(w2, j->w2, sizeof j->w2))
        note_error(j->error, sizeof j->error);
    note_error(j->error, sizeof j->error);
    tensor_optim_free(opt);
    tensor_free(w1);
    tensor_free(b1);
    tensor_free(w2);
    return NULL;
}

TEST(threads_training_matches_alone) {
    static train_job alone[N_WORKERS], together[N_WORKERS];
    memset(alone, 0, sizeof alone);
    for (int i = 0; i < N_WORKERS; i++) alone[i].seed = 1000 + (uint64_t)i;
    memcpy(together, alone, sizeof alone);
    int64_t h0 = tensor_live_handles(), b0 = tensor_live_bytes();
    CHECK(run_threads(N_WORKERS, train_thread, alone, sizeof *alone, true));
    CHECK(run_threads(N_WORKERS, train_thread, together, sizeof *together, false));
    for (int i = 0; i < N_WORKERS; i++) {
        CHECK_MSG(!alone[i].error[0] && !together[i].error[0], "thread %d: %s%s", i, alone[i].error, together[i].error);
        CHECK_MSG(memcmp(alone[i].w1, together[i].w1, sizeof alone[i].w1) == 0 && memcmp(alone[i].b1, together[i].b1, sizeof alone[i].b1) == 0 &&
                      memcmp(alone[i].w2, together[i].w2, sizeof alone[i].w2) == 0,
                  "thread %d: parameters differ from its run alone", i);
        CHECK_MSG(alone[i].loss == alone[i].loss && alone[i].loss < 2.5f, "thread %d: loss %g", i, alone[i].loss);
        if (i) CHECK_MSG(memcmp(alone[i].w1, alone[0].w1, sizeof alone[0].w1) != 0, "threads 0 and %d trained the same model", i);
    }
    CHECK(tensor_live_handles() == h0);
    CHECK(tensor_live_bytes() == b0);
}

/* ---- evaluation of shared, read-only weights ---- */

#define EV_IN 48
#define EV_HID 96
#define EV_OUT 12
#define EV_BATCH 32
#define EV_ITERS 30

typedef struct {
    tensor *w1, *b1, *w2, *x; /* the main thread's; w1 requires grad (threads' graphs get edges to it) */
    bool grad;                /* evaluate with grad mode on (graphs recorded, never run) */
    float out[EV_BATCH * EV_OUT];
    bool same;                /* every iteration gave what the first did */
    char error[256];
} eval_job;

static tensor *eval_forward(eval_job *j) {
    tensor *h = tensor_tanh(tensor_linear(j->x, j->w1, j->b1));
    tensor *w2t = tensor_transpose(j->w2, 0, 1); /* a view of the shared weight */
    return tensor_log_softmax(tensor_matmul(h, w2t), 1);
}

static void *eval_thread(void *arg) {
    eval_job *j = (eval_job *)arg;
    bool was = tensor_set_grad_enabled(j->grad);
    j->same = true;
    for (int it = 0; it < EV_ITERS; it++) {
        tensor_scope_begin();
        float out[EV_BATCH * EV_OUT];
        tensor *y = eval_forward(j);
        if (!y || tensor_copy_to(y, it ? out : j->out, sizeof out)) note_error(j->error, sizeof j->error);
        else if (it && memcmp(out, j->out, sizeof out)) j->same = false;
        tensor_scope_end();
    }
    tensor_set_grad_enabled(was);
    note_error(j->error, sizeof j->error);
    return NULL;
}

TEST(threads_evaluate_shared_weights) {
    tensor_manual_seed(7);
    eval_job jobs[N_WORKERS];
    memset(jobs, 0, sizeof jobs);
    tensor *w1 = tensor_set_requires_grad(tensor_randn(TENSOR_SHAPE(EV_HID, EV_IN), TENSOR_F32), true);
    tensor *b1 = tensor_randn(TENSOR_SHAPE(EV_HID), TENSOR_F32);
    tensor *w2 = tensor_randn(TENSOR_SHAPE(EV_OUT, EV_HID), TENSOR_F32);
    tensor *x = tensor_randn(TENSOR_SHAPE(EV_BATCH, EV_IN), TENSOR_F32);
    for (int i = 0; i < N_WORKERS; i++) {
        jobs[i].w1 = w1, jobs[i].b1 = b1, jobs[i].w2 = w2, jobs[i].x = x;
        jobs[i].grad = i % 2 == 0;
    }
    float want[EV_BATCH * EV_OUT];
    tensor *y = eval_forward(&jobs[0]);
    CHECK(y && tensor_copy_to(y, want, sizeof want) == 0);
    CHECK(run_threads(N_WORKERS, eval_thread, jobs, sizeof *jobs, false));
    for (int i = 0; i < N_WORKERS; i++) {
        CHECK_MSG(!jobs[i].error[0], "thread %d: %s", i, jobs[i].error);
        CHECK_MSG(jobs[i].same && memcmp(jobs[i].out, want, sizeof want) == 0, "thread %d: results differ from the main thread's", i);
    }
    /* the shared leaf is still a leaf with its one accumulator, and backward through it works */
    CHECK(tensor_backward(tensor_sum_all(y)) == 0);
    CHECK(tensor_grad(w1) != NULL);
    tensor *again = eval_forward(&jobs[0]);
    float now[EV_BATCH * EV_OUT];
    CHECK(again && tensor_copy_to(again, now, sizeof now) == 0 && memcmp(now, want, sizeof want) == 0);
}

/* ---- scopes are per thread ---- */

typedef struct {
    int id;
    pthread_barrier_t *sync;
    double kept_sum;  /* what the kept tensors held at the end */
    int64_t leftover; /* handles the thread still had after its last scope (its kept ones) */
    bool end_refused; /* an unbalanced tensor_scope_end failed on this thread only */
    char error[256];
} scope_job;

static void *scope_thread(void *arg) {
    scope_job *j = (scope_job *)arg;
    tensor *kept[8];
    int n_kept = 0;
    uint32_t r = 12345u + (uint32_t)j->id * 7919u;
    /* everyone opens a scope and waits: then ends on one thread must not touch the others' */
    tensor_scope_begin();
    tensor *mine = tensor_full(TENSOR_SHAPE(3), (double)j->id, TENSOR_F64);
    pthread_barrier_wait(j->sync);
    if (j->id == 0) { /* closes its scope, then one more: refused here, the others' scopes stay open */
        tensor_scope_end();
        tensor_clear_error();
        tensor_scope_end();
        j->end_refused = tensor_last_error() && strstr(tensor_last_error(), "tensor_scope_end");
        tensor_clear_error();
    }
    pthread_barrier_wait(j->sync);
    if (j->id != 0) {
        if (tensor_item(tensor_sum_all(mine)) != 3.0 * j->id) snprintf(j->error, sizeof j->error, "a scope end on another thread freed this thread's tensor");
        tensor_scope_end();
    }
    /* then each thread interleaves scopes of its own pattern with the others' */
    for (int round = 0; round < 200; round++) {
        r = r * 1103515245u + 12345u;
        int depth = 1 + (int)(r >> 28) % 4;
        for (int d = 0; d < depth; d++) {
            tensor_scope_begin();
            tensor *t = tensor_add_scalar(tensor_ones(TENSOR_SHAPE(4), TENSOR_F32), d);
            if (d == depth - 1 && d > 0 && round % 3 == 0) t = tensor_keep(t); /* to the scope around it */
            (void)t;
        }
        for (int d = depth - 1; d >= 0; d--) tensor_scope_end();
        if (round % 25 == 0 && n_kept < 8) {
            /* made at the root: survives every scope of the next rounds */
            kept[n_kept++] = tensor_full(TENSOR_SHAPE(2), (double)round, TENSOR_F64);
        }
    }
    double s = 0;
    tensor_scope_begin();
    for (int i = 0; i < n_kept; i++) s += tensor_item(tensor_select(kept[i], 0, 1));
    tensor_scope_end();
    j->kept_sum = s;
    for (int i = 0; i < n_kept; i++) tensor_free(kept[i]);
    note_error(j->error, sizeof j->error);
    return NULL;
}

TEST(threads_scopes_are_per_thread) {
    int64_t h0 = tensor_live_handles(), b0 = tensor_live_bytes();
    pthread_barrier_t sync;
    CHECK(pthread_barrier_init(&sync, NULL, N_WORKERS) == 0);
    scope_job jobs[N_WORKERS];
    memset(jobs, 0, sizeof jobs);
    for (int i = 0; i < N_WORKERS; i++) jobs[i].id = i, jobs[i].sync = &sync;
    CHECK(run_threads(N_WORKERS, scope_thread, jobs, sizeof *jobs, false));
    pthread_barrier_destroy(&sync);
    double want = 0;
    for (int round = 0; round < 200; round += 25) want += round;
    for (int i = 0; i < N_WORKERS; i++) {
        CHECK_MSG(!jobs[i].error[0], "thread %d: %s", i, jobs[i].error);
        CHECK_MSG(jobs[i].kept_sum == want, "thread %d: kept tensors sum to %g, not %g", i, jobs[i].kept_sum, want);
    }
    CHECK(jobs[0].end_refused);
    CHECK(tensor_last_error() == NULL); /* errors are per thread too */
    /* the tensors kept in the innermost scopes went to the next level and died with it */
    CHECK(tensor_live_handles() == h0);
    CHECK(tensor_live_bytes() == b0);
}

/* ---- a tensor freed by a thread other than the one that made it ---- */

typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    int stage;
    tensor *made[4]; /* the worker's: w (requires grad), y = tanh(w) with its graph, a plain tensor, a view */
    int64_t handles_after_free, bytes_after_free;
    char error[256];
} handoff;

static void handoff_wait(handoff *h, int stage) {
    pthread_mutex_lock(&h->mu);
    while (h->stage < stage) pthread_cond_wait(&h->cv, &h->mu);
    pthread_mutex_unlock(&h->mu);
}
static void handoff_go(handoff *h, int stage) {
    pthread_mutex_lock(&h->mu);
    h->stage = stage;
    pthread_cond_broadcast(&h->cv);
    pthread_mutex_unlock(&h->mu);
}

static void *handoff_thread(void *arg) {
    handoff *h = (handoff *)arg;
    static const double wv[3] = {-0.5, 0.25, 1.5};
    h->made[0] = tensor_set_requires_grad(tensor_from_data(wv, TENSOR_SHAPE(3), TENSOR_F64), true);
    h->made[1] = tensor_tanh(h->made[0]);
    h->made[2] = tensor_full(TENSOR_SHAPE(1000), 2.0, TENSOR_F32);
    h->made[3] = tensor_slice(h->made[2], 0, 10, 20, 1);
    note_error(h->error, sizeof h->error);
    handoff_go(h, 1);
    handoff_wait(h, 2); /* the main thread freed the plain tensor and its view */
    tensor *probe = tensor_ones(TENSOR_SHAPE(1), TENSOR_F32); /* this thread's next handle releases what was sent to it */
    tensor_free(probe);
    h->handles_after_free = tensor_live_handles();
    h->bytes_after_free = tensor_live_bytes();
    return NULL; /* ends with w and y still alive: the main thread frees them */
}

TEST(threads_free_on_another_thread) {
    int64_t h0 = tensor_live_handles(), b0 = tensor_live_bytes();
    handoff h;
    memset(&h, 0, sizeof h);
    pthread_mutex_init(&h.mu, NULL);
    pthread_cond_init(&h.cv, NULL);
    pthread_t th;
    CHECK(pthread_create(&th, NULL, handoff_thread, &h) == 0);
    handoff_wait(&h, 1);
    CHECK_MSG(!h.error[0], "worker: %s", h.error);
    int64_t h1 = tensor_live_handles(), b1 = tensor_live_bytes(); /* the worker's 4 and y's saved input */
    CHECK(h1 >= h0 + 4 && b1 == b0 + 3 * 8 * 2 + 1000 * 4);
    CHECK_BAD(tensor_keep(h.made[2]), "tensor_keep"); /* only its owner moves it between its scopes */
    tensor *mine = tensor_mul_scalar(h.made[3], 3.0); /* an op on another thread's view */
    tensor_free(h.made[3]);                            /* their owner is alive and waiting: it releases them */
    tensor_free(h.made[2]);
    CHECK(tensor_live_handles() == h1 - 1);            /* gone from the counts at once */
    handoff_go(&h, 2);
    pthread_join(th, NULL);
    CHECK(h.handles_after_free == h1 - 1);
    CHECK(h.bytes_after_free == b1 - 1000 * 4 + 10 * 4); /* released: the storage is back; mine is there */
    CHECK(tensor_item(tensor_sum_all(mine)) == 60.0);
    /* the worker has ended: its graph runs backward here, and what is freed of its is released at once */
    CHECK(tensor_backward(tensor_sum_all(h.made[1])) == 0);
    static const double wv[3] = {-0.5, 0.25, 1.5};
    double g[3];
    for (int i = 0; i < 3; i++) g[i] = 1 - tanh(wv[i]) * tanh(wv[i]);
    CHECK_VALUES(tensor_grad(h.made[0]), g, 3, 1e-15, 1e-15);
    tensor_free(h.made[1]);
    tensor_free(h.made[0]);
    tensor_free(mine);
    tensor_scope_end(); /* the harness's scope: the sum and the backward's scalars */
    tensor_scope_begin();
    CHECK(tensor_live_handles() == h0);
    CHECK(tensor_live_bytes() == b0);
    pthread_cond_destroy(&h.cv);
    pthread_mutex_destroy(&h.mu);
}

/* A thread that ends with its scopes closed leaves its state to the next thread; handles it kept
   at its root stay valid and countable until someone frees them. */
static void *leave_thread(void *arg) {
    tensor **out = (tensor **)arg;
    tensor_scope_begin();
    out[0] = tensor_keep(tensor_arange(0, 5, 1, TENSOR_F64));
    tensor_scope_end();
    out[1] = tensor_detach(out[0]);
    return NULL;
}
TEST(threads_handles_outlive_their_thread) {
    int64_t h0 = tensor_live_handles(), b0 = tensor_live_bytes();
    for (int round = 0; round < 3; round++) { /* later rounds take over earlier threads' states */
        int64_t hr = tensor_live_handles(), br = tensor_live_bytes();
        tensor *t[2] = {NULL, NULL};
        pthread_t th;
        CHECK(pthread_create(&th, NULL, leave_thread, t) == 0);
        pthread_join(th, NULL);
        CHECK(tensor_live_handles() == hr + 2);
        CHECK(tensor_live_bytes() == br + 5 * 8);
        CHECK(t[0] && tensor_item(tensor_sum_all(t[1])) == 10.0);
        tensor_free(t[1]);
        CHECK(tensor_live_handles() == hr + 2); /* t[0] and the sum (this thread's scope) */
        tensor_free(t[0]);                      /* its owner has ended: released at once */
        CHECK(tensor_live_bytes() == br + 8);   /* the sum's */
    }
    tensor_scope_end();
    tensor_scope_begin();
    CHECK(tensor_live_handles() == h0);
    CHECK(tensor_live_bytes() == b0);
}

/* ---- random numbers ---- */

typedef struct {
    bool seed; /* seed 42 first, else draw from the default seed's stream for this thread */
    double v[8];
} rng_job;

static void *rng_thread(void *arg) {
    rng_job *j = (rng_job *)arg;
    if (j->seed) tensor_manual_seed(42);
    tensor *t = tensor_randn(TENSOR_SHAPE(8), TENSOR_F64);
    if (t) tensor_copy_to(t, j->v, sizeof j->v);
    tensor_free(t);
    return NULL;
}

TEST(threads_random_streams) {
    tensor_manual_seed(42);
    double main_v[8];
    tensor *t = tensor_randn(TENSOR_SHAPE(8), TENSOR_F64);
    CHECK(tensor_copy_to(t, main_v, sizeof main_v) == 0);
    rng_job jobs[N_WORKERS];
    memset(jobs, 0, sizeof jobs);
    jobs[0].seed = jobs[1].seed = true;
    CHECK(run_threads(N_WORKERS, rng_thread, jobs, sizeof *jobs, false));
    /* a thread that seeds gets the numbers a single thread gets from that seed */
    CHECK(memcmp(jobs[0].v, main_v, sizeof main_v) == 0);
    CHECK(memcmp(jobs[1].v, main_v, sizeof main_v) == 0);
    /* threads that do not draw from the default seed (42 now) on streams of their own */
    CHECK(memcmp(jobs[2].v, main_v, sizeof main_v) != 0);
    CHECK(memcmp(jobs[3].v, main_v, sizeof main_v) != 0);
    CHECK(memcmp(jobs[2].v, jobs[3].v, sizeof main_v) != 0);
    CHECK(fabs(jobs[2].v[0]) < 10 && fabs(jobs[3].v[7]) < 10);
}

/* ---- the pool, wanted by several threads at once ---- */

typedef struct {
    tensor *a, *b; /* shared inputs */
    float c[4];    /* corners of a @ b */
    double s;      /* sum of a */
} pool_job;

static void *pool_thread(void *arg) {
    pool_job *j = (pool_job *)arg;
    for (int it = 0; it < 4; it++) {
        tensor_scope_begin();
        tensor *c = tensor_matmul(j->a, j->b); /* 16M multiply-adds: split over the pool when free */
        int64_t n = tensor_size(c, 0) - 1;
        j->c[0] = (float)tensor_item(tensor_select(tensor_select(c, 0, 0), 0, 0));
        j->c[1] = (float)tensor_item(tensor_select(tensor_select(c, 0, 0), 0, n));
        j->c[2] = (float)tensor_item(tensor_select(tensor_select(c, 0, n), 0, 0));
        j->c[3] = (float)tensor_item(tensor_select(tensor_select(c, 0, n), 0, n));
        j->s = tensor_item(tensor_sum_all(tensor_exp(j->a))); /* 64k elements: split too */
        tensor_scope_end();
    }
    return NULL;
}

TEST(threads_share_the_pool) {
    tensor_manual_seed(3);
    pool_job jobs[N_WORKERS];
    tensor *a = tensor_randn(TENSOR_SHAPE(256, 256), TENSOR_F32), *b = tensor_randn(TENSOR_SHAPE(256, 256), TENSOR_F32);
    for (int i = 0; i < N_WORKERS; i++) jobs[i].a = a, jobs[i].b = b;
    pool_job want = jobs[0];
    pool_thread(&want);
    CHECK(run_threads(N_WORKERS, pool_thread, jobs, sizeof *jobs, false));
    for (int i = 0; i < N_WORKERS; i++) {
        CHECK_MSG(memcmp(jobs[i].c, want.c, sizeof want.c) == 0, "thread %d: matmul differs", i);
        CHECK_MSG(jobs[i].s == want.s, "thread %d: sum %.17g, not %.17g", i, jobs[i].s, want.s);
    }
}

/* ---- tensor_shutdown with several threads' handles alive ----
   In a child run of this binary (tensor_shutdown would free the harness's tensors): a worker
   trains a step with AdamW and ends leaving everything alive (its optimizer holds internal
   aliases of the weight, whose .grad is newer than them); another worker is alive, idle, with
   handles at its root; the main thread has its own graph. tensor_shutdown frees them all. The
   optimizer structs leak by design (freeing them after tensor_shutdown would free their handles
   twice): the child runs without leak detection. */
typedef struct {
    tensor_optim *opt;
    pthread_mutex_t *mu;
    pthread_cond_t *cv;
    int *stage;
} shutdown_job;

static void *shutdown_trainer(void *arg) {
    shutdown_job *j = (shutdown_job *)arg;
    tensor *w = tensor_set_requires_grad(tensor_randn(TENSOR_SHAPE(4, 3), TENSOR_F32), true);
    j->opt = tensor_optim_adamw(1, &w, 1e-3, 0.9, 0.999, 1e-8, 1e-2);
    tensor *x = tensor_randn(TENSOR_SHAPE(2, 3), TENSOR_F32);
    tensor_backward(tensor_sum_all(tensor_tanh(tensor_linear(x, w, NULL))));
    tensor_optim_step(j->opt);
    return NULL;
}
static void *shutdown_idler(void *arg) {
    shutdown_job *j = (shutdown_job *)arg;
    tensor_randn(TENSOR_SHAPE(100), TENSOR_F32);
    tensor_scope_begin();
    tensor_ones(TENSOR_SHAPE(5), TENSOR_F32);
    pthread_mutex_lock(j->mu);
    *j->stage = 1;
    pthread_cond_broadcast(j->cv);
    while (*j->stage < 2) pthread_cond_wait(j->cv, j->mu);
    pthread_mutex_unlock(j->mu);
    return NULL; /* its scope is still open: its state is never taken over */
}

TEST(threads_shutdown_child) {
    if (!getenv("TENSOR_TEST_THREADS_SHUTDOWN")) return; /* runs only in threads_shutdown's child */
    pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
    int stage = 0;
    shutdown_job tj = {NULL, &mu, &cv, &stage}, ij = tj;
    pthread_t trainer, idler;
    CHECK(pthread_create(&trainer, NULL, shutdown_trainer, &tj) == 0);
    pthread_join(trainer, NULL);
    CHECK(pthread_create(&idler, NULL, shutdown_idler, &ij) == 0);
    pthread_mutex_lock(&mu);
    while (stage < 1) pthread_cond_wait(&cv, &mu);
    pthread_mutex_unlock(&mu);
    tensor *v = tensor_set_requires_grad(tensor_ones(TENSOR_SHAPE(3), TENSOR_F32), true);
    tensor_optim *mine = tensor_optim_sgd(1, &v, 0.1, 0.9, 0, false);
    tensor_backward(tensor_sum_all(tensor_exp(v)));
    tensor_optim_step(mine);
    CHECK(tensor_live_handles() > 10);
    tensor_shutdown(); /* the idle thread is waiting: nothing runs meanwhile */
    CHECK(tensor_live_handles() == 0);
    CHECK(tensor_live_bytes() == 0);
    pthread_mutex_lock(&mu);
    stage = 2;
    pthread_cond_broadcast(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(idler, NULL);
    tensor_scope_begin(); /* for the harness's scope end */
}

TEST(threads_shutdown) {
#if defined(__linux__)
    test_run_at_simd_level(__FILE__, __LINE__, "scalar", "TENSOR_TEST_THREADS_SHUTDOWN=1 ASAN_OPTIONS=detect_leaks=0 ", "threads_shutdown_child", NULL);
#endif
}

/* ---- the pool when its workers get no core ----
   With other processes busy on every core, the scheduler may not run a worker for a whole time
   slice. The caller must not wait for a worker that has not started: it takes the unclaimed chunks
   itself. tensor_test_hold_workers(true) stands in for that scheduler (workers see each job and
   claim nothing). A training run on 2 threads then finishes on the caller alone, with bitwise the
   parameters of a run whose workers take part (chunks are the same, whoever runs them). A
   watchdog releases the workers after 20 s, so a pool that waits for them cannot hang the suite:
   that is a failure here, not a slow pass. */
typedef struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done, expired;
} pool_watchdog;
static void *pool_watchdog_run(void *arg) {
    pool_watchdog *w = (pool_watchdog *)arg;
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 20;
    pthread_mutex_lock(&w->mu);
    while (!w->done)
        if (pthread_cond_timedwait(&w->cv, &w->mu, &until) != 0) break;
    if (!w->done) {
        w->expired = true;
        tensor_test_hold_workers(false);
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

TEST(threads_pool_runs_without_its_workers) {
    int saved = tensor_get_num_threads();
    tensor_set_num_threads(2);
    static train_job free_run, held_run; /* static: 140 KB each */
    memset(&free_run, 0, sizeof free_run);
    memset(&held_run, 0, sizeof held_run);
    free_run.seed = held_run.seed = 77;
    train_thread(&free_run); /* also starts the workers */
    pool_watchdog w;
    memset(&w, 0, sizeof w);
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    pthread_t dog;
    tensor_test_hold_workers(true);
    CHECK(pthread_create(&dog, NULL, pool_watchdog_run, &w) == 0);
    train_thread(&held_run);
    pthread_mutex_lock(&w.mu);
    w.done = true;
    bool expired = w.expired;
    pthread_cond_signal(&w.cv);
    pthread_mutex_unlock(&w.mu);
    pthread_join(dog, NULL);
    tensor_test_hold_workers(false);
    pthread_mutex_destroy(&w.mu);
    pthread_cond_destroy(&w.cv);
    tensor_set_num_threads(saved);
    CHECK_MSG(!expired, "the caller waited for workers that never ran (released by the watchdog after 20 s)");
    CHECK_MSG(!free_run.error[0] && !held_run.error[0], "errors: '%s' '%s'", free_run.error, held_run.error);
    CHECK(memcmp(free_run.w1, held_run.w1, sizeof free_run.w1) == 0);
    CHECK(memcmp(free_run.w2, held_run.w2, sizeof free_run.w2) == 0);
    CHECK(free_run.loss == held_run.loss);
}

/* TENSOR_NUM_THREADS sets the default thread count, as OMP_NUM_THREADS does for PyTorch; a value
   that is not a count from 1 to 256 is ignored (every core). Child runs of this binary. */
TEST(threads_num_threads_env_child) {
    const char *want = getenv("TENSOR_TEST_EXPECT_THREADS");
    if (!want) return; /* runs only in threads_num_threads_env's children */
    int expect = atoi(want);
    if (expect == 0) expect = (int)sysconf(_SC_NPROCESSORS_ONLN);
    CHECK_MSG(tensor_get_num_threads() == expect, "tensor_get_num_threads() %d, expected %d", tensor_get_num_threads(), expect);
    tensor_set_num_threads(1);
    CHECK(tensor_get_num_threads() == 1); /* tensor_set_num_threads overrides it */
    tensor_set_num_threads(0);            /* and 0 goes back to it */
    CHECK_MSG(tensor_get_num_threads() == expect, "after set 0: %d, expected %d", tensor_get_num_threads(), expect);
}
TEST(threads_num_threads_env) {
#if defined(__linux__)
    test_run_at_simd_level(__FILE__, __LINE__, "scalar", "TENSOR_NUM_THREADS=3 TENSOR_TEST_EXPECT_THREADS=3 ", "threads_num_threads_env_child", NULL);
    test_run_at_simd_level(__FILE__, __LINE__, "scalar", "TENSOR_NUM_THREADS=1 TENSOR_TEST_EXPECT_THREADS=1 ", "threads_num_threads_env_child", NULL);
    test_run_at_simd_level(__FILE__, __LINE__, "scalar", "TENSOR_NUM_THREADS=2x TENSOR_TEST_EXPECT_THREADS=0 ", "threads_num_threads_env_child", NULL);
    test_run_at_simd_level(__FILE__, __LINE__, "scalar", "TENSOR_NUM_THREADS=0 TENSOR_TEST_EXPECT_THREADS=0 ", "threads_num_threads_env_child", NULL);
#endif
}
