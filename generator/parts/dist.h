/* ---- distributed (>>dist): collectives over MPI, or a world of one rank ----
   With TENSOR_USE_MPI (build with mpicc, or link -lmpi) the collectives run on a duplicate of
   MPI_COMM_WORLD whose error handler returns, so an MPI failure comes back as an error and never
   aborts the program; without it the same functions act as a world of one rank, so a program
   written for N ranks runs unchanged on one.

   Every collective first makes the ranks agree on what each passed: a 64-bit signature of the call
   (which collective, the op, dtype, shape, root) is reduced with MIN and MAX in one small allreduce.
   A rank whose tensor differs in shape or dtype, or that rejected its own arguments (a NULL tensor,
   a CUDA tensor, an op the dtype has no meaning for), then makes the call fail on every rank rather
   than hang or reduce garbage. What it cannot see: a rank that skips the call altogether (the others
   wait, as in any MPI program), and ranks calling collectives in different orders.

   CPU tensors of every dtype and layout: a non-contiguous tensor is packed, reduced and written
   back; f16 and bf16 are reduced in f32 (sum, avg) and rounded once. Bool: SUM and MAX are logical
   or, MIN logical and (PyTorch's NCCL mapping); AVG needs a floating dtype. */

#ifdef TENSOR_USE_MPI
#ifdef __cplusplus
} /* system headers outside extern "C" */
#endif
#define OMPI_SKIP_MPICXX 1  /* the C API alone: no C++ bindings (Open MPI, MPICH) */
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>
#ifdef __cplusplus
extern "C" {
#endif
#endif

enum { TENSOR__DIST_NONE, TENSOR__DIST_OURS, TENSOR__DIST_ADOPTED }; /* who initialized MPI */
static int tensor__dist_state = TENSOR__DIST_NONE;  /* atomic; written by init and finalize (the main thread, as MPI requires) */
static int tensor__dist_rank_v = 0, tensor__dist_size_v = 1;
#ifdef TENSOR_USE_MPI
static MPI_Comm tensor__dist_comm; /* written before tensor__dist_state is published */
#endif

#ifdef TENSOR_USE_MPI
static bool tensor__dist_mpi_ok(const char *fn, const char *call, int rc) {
    if (rc == MPI_SUCCESS) return true;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) snprintf(msg, sizeof msg, "error code %d", rc);
    tensor__fail(fn, "%s failed: %s", call, msg);
    return false;
}
#endif

TENSOR_API int tensor_dist_init(int *argc, char ***argv) {
    const char *fn = "tensor_dist_init";
    if (TENSOR__LOAD_ACQ(&tensor__dist_state) != TENSOR__DIST_NONE) return 0; /* once */
#ifdef TENSOR_USE_MPI
    int inited = 0, provided = 0;
    if (!tensor__dist_mpi_ok(fn, "MPI_Initialized", MPI_Initialized(&inited))) return -1;
    int state = inited ? TENSOR__DIST_ADOPTED : TENSOR__DIST_OURS;
    /* THREAD_MULTIPLE when the MPI has it: DDP starts reductions from backward, on the user's thread */
    if (!inited && !tensor__dist_mpi_ok(fn, "MPI_Init_thread", MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided))) return -1;
    if (!tensor__dist_mpi_ok(fn, "MPI_Comm_dup", MPI_Comm_dup(MPI_COMM_WORLD, &tensor__dist_comm))) return -1;
    MPI_Comm_set_errhandler(tensor__dist_comm, MPI_ERRORS_RETURN);
    int rank = 0, size = 1;
    if (!tensor__dist_mpi_ok(fn, "MPI_Comm_rank", MPI_Comm_rank(tensor__dist_comm, &rank)) ||
        !tensor__dist_mpi_ok(fn, "MPI_Comm_size", MPI_Comm_size(tensor__dist_comm, &size))) return -1;
    TENSOR__STORE(&tensor__dist_rank_v, rank);
    TENSOR__STORE(&tensor__dist_size_v, size);
    TENSOR__STORE_SC(&tensor__dist_state, state);
#else
    (void)fn;
    (void)argc;
    (void)argv;
    TENSOR__STORE_SC(&tensor__dist_state, TENSOR__DIST_OURS);
#endif
    return 0;
}

TENSOR_API int tensor_dist_rank(void) { return TENSOR__LOAD(&tensor__dist_rank_v); }
TENSOR_API int tensor_dist_world_size(void) { return TENSOR__LOAD(&tensor__dist_size_v); }

TENSOR_API int tensor_dist_finalize(void) {
    int state = TENSOR__LOAD_ACQ(&tensor__dist_state);
    if (state == TENSOR__DIST_NONE) return 0;
#ifdef TENSOR_USE_MPI
    const char *fn = "tensor_dist_finalize";
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) {
        MPI_Comm_free(&tensor__dist_comm);
        /* an MPI the program initialized is the program's to finalize */
        if (state == TENSOR__DIST_OURS && !tensor__dist_mpi_ok(fn, "MPI_Finalize", MPI_Finalize())) return -1;
    }
#endif
    TENSOR__STORE(&tensor__dist_rank_v, 0);
    TENSOR__STORE(&tensor__dist_size_v, 1);
    TENSOR__STORE_SC(&tensor__dist_state, TENSOR__DIST_NONE);
    return 0;
}

/* ---- the call's signature and the agreement on it ---- */

enum { TENSOR__DIST_ALL_REDUCE = 1, TENSOR__DIST_BROADCAST, TENSOR__DIST_ALL_GATHER, TENSOR__DIST_REDUCE_SCATTER, TENSOR__DIST_DDP };

static uint64_t tensor__dist_mix(uint64_t h, uint64_t v) { /* FNV-1a over v's 8 bytes */
    for (int i = 0; i < 8; i++) { h ^= (v >> (8 * i)) & 0xff; h *= 0x100000001b3ull; }
    return h;
}
/* 0 stands for "this rank rejected its arguments": a valid call never hashes to it */
static uint64_t tensor__dist_signature(int kind, int op, const tensor *t, int root) {
    uint64_t h = 0xcbf29ce484222325ull;
    h = tensor__dist_mix(h, (uint64_t)kind);
    h = tensor__dist_mix(h, (uint64_t)(int64_t)op);
    h = tensor__dist_mix(h, (uint64_t)(int64_t)root);
    if (t) {
        h = tensor__dist_mix(h, (uint64_t)t->dtype);
        h = tensor__dist_mix(h, (uint64_t)t->ndim);
        for (int d = 0; d < t->ndim; d++) h = tensor__dist_mix(h, (uint64_t)t->shape[d]);
    }
    return h ? h : 1;
}

/* Whether every rank made the same call with arguments it accepted: sig is this rank's signature
   (0 when it rejected them, with the error already set). False with an error on every rank. */
static bool tensor__dist_agree(const char *fn, uint64_t sig) {
#ifdef TENSOR_USE_MPI
    if (TENSOR__LOAD_ACQ(&tensor__dist_state) == TENSOR__DIST_NONE) {
        if (sig) tensor__fail(fn, "call tensor_dist_init first (this build runs over MPI)");
        return false;
    }
    {
        /* min(sig) and min(~sig) = ~max(sig) in one reduction */
        uint64_t v[2] = {sig, ~sig}, r[2];
        if (!tensor__dist_mpi_ok(fn, "MPI_Allreduce", MPI_Allreduce(v, r, 2, MPI_UINT64_T, MPI_MIN, tensor__dist_comm))) return false;
        if (sig == 0) return false;
        if (r[0] != ~r[1]) {
            tensor__fail(fn, "the ranks' calls differ (another rank passed a different dtype, shape, op or root, or rejected its arguments)");
            return false;
        }
        return true;
    }
#endif
    (void)fn;
    return sig != 0;
}

/* This rank's checks of a tensor argument; false with the error set. */
static bool tensor__dist_tensor_ok(const char *fn, const tensor *t) {
    if (!t) { tensor__null_arg(fn, "t"); return false; } /* (an earlier failure's message stands) */
    if (t->storage->device != TENSOR_CPU) {
        tensor__fail(fn, "%s tensors cannot be reduced in this build (tensor_cuda.cu with -DTENSOR_USE_NCCL reduces CUDA tensors)", tensor__device_name(t->storage->device));
        return false;
    }
    return true;
}

static bool tensor__dist_op_ok(const char *fn, const tensor *t, tensor_reduce_op op) {
    if (op < TENSOR_REDUCE_SUM || op > TENSOR_REDUCE_MIN) { tensor__fail(fn, "unknown reduce op %d", (int)op); return false; }
    if (op == TENSOR_REDUCE_AVG && !tensor__is_float(t->dtype)) {
        tensor__fail(fn, "AVG needs a floating dtype, got %s (reduce with SUM and divide as the integers need)", tensor__dtype_names[t->dtype]);
        return false;
    }
    return true;
}

#ifdef TENSOR_USE_MPI
/* The dtype a buffer of dt travels as: f16/bf16 reduce as f32 (reduce) or move as raw 16 bits */
static MPI_Datatype tensor__dist_type(tensor_dtype dt) {
    switch (dt) {
    case TENSOR_F32: return MPI_FLOAT;
    case TENSOR_F64: return MPI_DOUBLE;
    case TENSOR_I32: return MPI_INT32_T;
    case TENSOR_I64: return MPI_INT64_T;
    case TENSOR_F16:
    case TENSOR_BF16: return MPI_UINT16_T;
    default: return MPI_UINT8_T; /* u8, bool */
    }
}
static MPI_Op tensor__dist_mpi_op(tensor_dtype dt, tensor_reduce_op op) {
    if (dt == TENSOR_BOOL) return op == TENSOR_REDUCE_MIN ? MPI_MIN : MPI_MAX;
    return op == TENSOR_REDUCE_MAX ? MPI_MAX : op == TENSOR_REDUCE_MIN ? MPI_MIN : MPI_SUM;
}
#endif

/* The buffer a collective works on: t itself when contiguous in the wanted dtype, else a
   contiguous copy (in dt) that tensor__dist_done writes back. NULL with the error set. */
static tensor *tensor__dist_buffer(const char *fn, tensor *t, tensor_dtype dt) {
    if (t->dtype == dt && tensor_is_contiguous(t)) return t;
    return tensor__contiguous_copy(fn, t, dt);
}
static void tensor__dist_done(tensor *t, tensor *buf, bool write_back) {
    if (buf != t) {
        if (write_back) tensor__copy_into(t, buf);
        tensor_free(buf);
    }
    if (write_back) t->storage->version++;
}

static tensor_dtype tensor__dist_reduce_dtype(tensor_dtype dt) { return dt == TENSOR_F16 || dt == TENSOR_BF16 ? TENSOR_F32 : dt; }

/* buf (contiguous, n elements of f32 or f64) divided by the world size: AVG after SUM */
static void tensor__dist_divide(tensor *buf, int64_t n, int world) {
    if (buf->dtype == TENSOR_F32) { float *p = (float *)tensor__data(buf); for (int64_t i = 0; i < n; i++) p[i] /= (float)world; }
    else { double *p = (double *)tensor__data(buf); for (int64_t i = 0; i < n; i++) p[i] /= (double)world; }
}

#ifdef TENSOR_USE_MPI
/* MPI counts are int: n elements of buf's dtype in pieces of at most 2^30, each by call(ptr, count) */
#define TENSOR__DIST_PIECES(ok, buf, n, ptr, count, call)                                             \
    for (int64_t at_ = 0; at_ < (n) && (ok); at_ += (int64_t)1 << 30) {                                \
        int count = (int)((n) - at_ < ((int64_t)1 << 30) ? (n) - at_ : ((int64_t)1 << 30));             \
        char *ptr = (char *)tensor__data(buf) + (size_t)at_ * tensor__dtype_sizes[(buf)->dtype];      \
        ok = (call);                                                                                   \
    }
#endif

/* Every local check and allocation comes before the agreement, so a rank that fails them fails
   the call on every rank instead of leaving the others waiting in MPI. */

TENSOR_API int tensor_dist_all_reduce(tensor *t, tensor_reduce_op op) {
    const char *fn = "tensor_dist_all_reduce";
    bool ok = tensor__dist_tensor_ok(fn, t) && tensor__dist_op_ok(fn, t, op);
    int world = tensor_dist_world_size();
    int64_t n = ok ? tensor__numel_of(t->ndim, t->shape) : 0;
    bool move = ok && n > 0 && world > 1; /* a world of one: every op gives t back */
    tensor *buf = move ? tensor__dist_buffer(fn, t, tensor__dist_reduce_dtype(t->dtype)) : NULL;
    if (!tensor__dist_agree(fn, ok && (buf || !move) ? tensor__dist_signature(TENSOR__DIST_ALL_REDUCE, (int)op, t, 0) : 0)) {
        if (buf && buf != t) tensor_free(buf);
        return -1;
    }
    if (!move) return 0;
    bool done = true;
#ifdef TENSOR_USE_MPI
    TENSOR__DIST_PIECES(done, buf, n, p, count,
                        tensor__dist_mpi_ok(fn, "MPI_Allreduce", MPI_Allreduce(MPI_IN_PLACE, p, count, tensor__dist_type(buf->dtype), tensor__dist_mpi_op(buf->dtype, op), tensor__dist_comm)))
#endif
    if (done && op == TENSOR_REDUCE_AVG) tensor__dist_divide(buf, n, world);
    tensor__dist_done(t, buf, done);
    return done ? 0 : -1;
}

TENSOR_API int tensor_dist_broadcast(tensor *t, int root) {
    const char *fn = "tensor_dist_broadcast";
    int world = tensor_dist_world_size();
    bool ok = tensor__dist_tensor_ok(fn, t);
    if (ok && (root < 0 || root >= world)) { tensor__fail(fn, "root %d is not a rank of this world of %d", root, world); ok = false; }
    int64_t n = ok ? tensor__numel_of(t->ndim, t->shape) : 0;
    bool move = ok && n > 0 && world > 1;
    tensor *buf = move ? tensor__dist_buffer(fn, t, t->dtype) : NULL;
    if (!tensor__dist_agree(fn, ok && (buf || !move) ? tensor__dist_signature(TENSOR__DIST_BROADCAST, 0, t, root) : 0)) {
        if (buf && buf != t) tensor_free(buf);
        return -1;
    }
    if (!move) return 0;
    bool done = true;
#ifdef TENSOR_USE_MPI
    TENSOR__DIST_PIECES(done, buf, n, p, count, tensor__dist_mpi_ok(fn, "MPI_Bcast", MPI_Bcast(p, count, tensor__dist_type(buf->dtype), root, tensor__dist_comm)))
#endif
    tensor__dist_done(t, buf, done && tensor_dist_rank() != root);
    return done ? 0 : -1;
}

/* The ranks' tensors one after another along dim 0: [world * d0, ...]; a 0-dim t gives [world]. */
TENSOR_API tensor *tensor_dist_all_gather(tensor *t) {
    const char *fn = "tensor_dist_all_gather";
    int world = tensor_dist_world_size();
    bool ok = tensor__dist_tensor_ok(fn, t);
    int64_t n = ok ? tensor__numel_of(t->ndim, t->shape) : 0, shape[TENSOR_MAX_DIMS] = {0};
    if (ok && n > INT_MAX) { tensor__fail(fn, "%lld elements a rank: more than MPI_Allgather's int count", (long long)n); ok = false; }
    tensor *out = NULL, *buf = NULL;
    if (ok) {
        shape[0] = (t->ndim ? t->shape[0] : 1) * world;
        for (int d = 1; d < t->ndim; d++) shape[d] = t->shape[d];
        out = tensor__new(fn, t->ndim ? t->ndim : 1, shape, t->dtype, TENSOR_CPU);
        buf = out && n > 0 ? tensor__dist_buffer(fn, t, t->dtype) : NULL;
    }
    if (!tensor__dist_agree(fn, out && (buf || n == 0) ? tensor__dist_signature(TENSOR__DIST_ALL_GATHER, 0, t, 0) : 0)) {
        if (buf && buf != t) tensor_free(buf);
        tensor_free(out);
        return NULL;
    }
    if (n == 0) return out;
    bool done = true;
    size_t bytes = (size_t)n * tensor__dtype_sizes[t->dtype];
    if (world == 1) memcpy(tensor__data(out), tensor__data(buf), bytes);
#ifdef TENSOR_USE_MPI
    else done = tensor__dist_mpi_ok(fn, "MPI_Allgather", MPI_Allgather(tensor__data(buf), (int)n, tensor__dist_type(t->dtype), tensor__data(out), (int)n,
                                                                       tensor__dist_type(t->dtype), tensor__dist_comm));
#endif
    tensor__dist_done(t, buf, false);
    if (!done) { tensor_free(out); return NULL; }
    return out;
}

/* t [world * n, ...] reduced across ranks, rank r keeping rows [r n, (r + 1) n): [n, ...]. */
TENSOR_API tensor *tensor_dist_reduce_scatter(tensor *t, tensor_reduce_op op) {
    const char *fn = "tensor_dist_reduce_scatter";
    int world = tensor_dist_world_size();
    bool ok = tensor__dist_tensor_ok(fn, t) && tensor__dist_op_ok(fn, t, op);
    if (ok && t->ndim == 0) { tensor__fail(fn, "t is 0-dim: there is no dim 0 to split across the ranks"); ok = false; }
    if (ok && t->shape[0] % world) {
        tensor__fail(fn, "dim 0 of t (%lld) must be a multiple of the world size %d", (long long)t->shape[0], world);
        ok = false;
    }
    int64_t shape[TENSOR_MAX_DIMS] = {0}, n = 0;
    tensor *out = NULL, *buf = NULL, *res = NULL;
    tensor_dtype rd = ok ? tensor__dist_reduce_dtype(t->dtype) : TENSOR_F32;
    if (ok) {
        for (int d = 0; d < t->ndim; d++) shape[d] = t->shape[d];
        shape[0] /= world;
        n = tensor__numel_of(t->ndim, shape);
        if (n > INT_MAX) { tensor__fail(fn, "%lld elements a rank: more than MPI_Reduce_scatter_block's int count", (long long)n); ok = false; }
    }
    if (ok && (out = tensor__new(fn, t->ndim, shape, t->dtype, TENSOR_CPU)) != NULL && n > 0) {
        buf = tensor__dist_buffer(fn, t, rd);
        res = buf && rd != t->dtype ? tensor__new(fn, t->ndim, shape, rd, TENSOR_CPU) : out;
    }
    if (!tensor__dist_agree(fn, out && (n == 0 || (buf && res)) ? tensor__dist_signature(TENSOR__DIST_REDUCE_SCATTER, (int)op, t, 0) : 0)) {
        if (res && res != out) tensor_free(res);
        if (buf && buf != t) tensor_free(buf);
        tensor_free(out);
        return NULL;
    }
    if (n == 0) return out;
    bool done = true;
    if (world == 1) memcpy(tensor__data(res), tensor__data(buf), (size_t)n * tensor__dtype_sizes[rd]);
#ifdef TENSOR_USE_MPI
    else done = tensor__dist_mpi_ok(fn, "MPI_Reduce_scatter_block", MPI_Reduce_scatter_block(tensor__data(buf), tensor__data(res), (int)n, tensor__dist_type(rd),
                                                                                             tensor__dist_mpi_op(rd, op), tensor__dist_comm));
#endif
    if (done && op == TENSOR_REDUCE_AVG) tensor__dist_divide(res, n, world);
    if (done && res != out) tensor__copy_into(out, res);
    if (res != out) tensor_free(res);
    tensor__dist_done(t, buf, false);
    if (!done) { tensor_free(out); return NULL; }
    return out;
}

TENSOR_API int tensor_dist_barrier(void) {
    const char *fn = "tensor_dist_barrier";
#ifdef TENSOR_USE_MPI
    if (TENSOR__LOAD_ACQ(&tensor__dist_state) != TENSOR__DIST_NONE)
        return tensor__dist_mpi_ok(fn, "MPI_Barrier", MPI_Barrier(tensor__dist_comm)) ? 0 : -1;
#endif
    (void)fn;
    return 0;
}

/* ---- data-parallel training (torch.nn.parallel.DistributedDataParallel's scheme) ----
   tensor_ddp_new broadcasts rank 0's parameters, then lays their gradients out in buckets of at
   most bucket_bytes (25 MiB by default, PyTorch's), filled in the reverse of the parameters' order
   (about the order backward finishes them: the last layer first). Each parameter's
   post-accumulate-grad hook copies its final gradient into its bucket during backward; a bucket
   whose gradients have all arrived starts its MPI_Iallreduce at once, so the reductions overlap the
   rest of backward. Buckets start strictly in index order, the same order on every rank (MPI pairs
   collectives by order), so a bucket waits for those before it. tensor_ddp_sync then starts what
   is left (a parameter without a gradient this step adds zeros, as find_unused_parameters does),
   waits, and writes each average into .grad. Two backward passes before a sync (gradient
   accumulation) make the reductions already started stale: sync reduces every bucket again from
   the final .grad (every rank agrees on that, and on which parameters had a gradient anywhere, in
   one small allreduce). A parameter no rank gave a gradient keeps its .grad as it was. */

typedef struct {
    tensor *buf;          /* [elements] in the reduce dtype (f32 for f16/bf16 parameters) */
    int n_params, pending; /* its parameters, and those whose gradient has not arrived this step */
    bool started;
#ifdef TENSOR_USE_MPI
    MPI_Request req;
#endif
} tensor__ddp_bucket;

typedef struct { struct tensor_ddp *d; int index; } tensor__ddp_slot;

struct tensor_ddp {
    int n, n_buckets, next;  /* next: the first bucket not started this step */
    tensor **params;         /* internal aliases */
    tensor **views;          /* [n] each parameter's place in its bucket, shaped as the parameter */
    int *bucket;             /* [n] */
    bool *ready;             /* [n] its place in the bucket is filled this step */
    bool *got;               /* [n] its gradient arrived this step */
    bool *idle;              /* [n] it had no gradient last step: presumed to have none this step */
    unsigned char *flags;    /* [n + 1] exchanged at sync: a gradient here; [n]: stale reductions */
    bool stale, hooked, failed, primed;
    tensor__ddp_slot *slots; /* [n] the hooks' user data */
    tensor__ddp_bucket *buckets;
};

static void tensor__ddp_start(tensor_ddp *d, int b) {
    tensor__ddp_bucket *k = &d->buckets[b];
    k->started = true;
#ifdef TENSOR_USE_MPI
    int64_t n = tensor__numel_of(k->buf->ndim, k->buf->shape);
    /* bucket sizes are checked at creation to fit an int count */
    if (MPI_Iallreduce(MPI_IN_PLACE, tensor__data(k->buf), (int)n, tensor__dist_type(k->buf->dtype), MPI_SUM, tensor__dist_comm, &k->req) != MPI_SUCCESS) {
        k->req = MPI_REQUEST_NULL;
        d->failed = true;
    }
#endif
}

/* Starts every bucket from d->next on that is complete, in order. */
static void tensor__ddp_start_ready(tensor_ddp *d) {
    while (d->next < d->n_buckets && d->buckets[d->next].pending == 0) tensor__ddp_start(d, d->next++);
#ifdef TENSOR_USE_MPI
    for (int b = 0; b < d->next; b++) { /* MPI progresses inside its calls: give it one */
        int done = 0;
        if (d->buckets[b].req != MPI_REQUEST_NULL) MPI_Test(&d->buckets[b].req, &done, MPI_STATUS_IGNORE);
    }
#endif
}

static void tensor__ddp_zero(tensor *view) {
    memset(tensor__data(view), 0, (size_t)tensor__numel_of(view->ndim, view->shape) * tensor__dtype_sizes[view->dtype]);
}

static void tensor__ddp_on_grad(tensor *grad, void *user) {
    tensor__ddp_slot *s = (tensor__ddp_slot *)user;
    tensor_ddp *d = s->d;
    int i = s->index;
    if (!d->primed) { /* the step's first gradient: what had none last step is taken as zeros now,
                         so its bucket need not wait for the end of backward (PyTorch finds unused
                         parameters by walking the graph; this learns them from the last step) */
        d->primed = true;
        for (int j = 0; j < d->n; j++)
            if (d->idle[j]) { tensor__ddp_zero(d->views[j]); d->ready[j] = true; d->buckets[d->bucket[j]].pending--; }
    }
    if (d->got[i] || (d->ready[i] && d->buckets[d->bucket[i]].started)) { /* a second backward before the sync, or a guess that was wrong */
        d->got[i] = true;
        d->stale = true;
        return;
    }
    d->got[i] = true;
    tensor__copy_into(d->views[i], grad);
    if (d->ready[i]) return; /* presumed idle, its bucket not started: the gradient is in time */
    d->ready[i] = true;
    if (--d->buckets[d->bucket[i]].pending == 0) tensor__ddp_start_ready(d);
}

static void tensor__ddp_reset(tensor_ddp *d) {
    for (int i = 0; i < d->n; i++) { d->idle[i] = !d->got[i]; d->ready[i] = d->got[i] = false; }
    d->primed = false;
    for (int b = 0; b < d->n_buckets; b++) {
        d->buckets[b].pending = d->buckets[b].n_params;
        d->buckets[b].started = false;
#ifdef TENSOR_USE_MPI
        d->buckets[b].req = MPI_REQUEST_NULL;
#endif
    }
    d->next = 0;
    d->stale = false;
    d->failed = false;
}

TENSOR_API void tensor_ddp_free(tensor_ddp *d) {
    if (!d) return;
    for (int i = 0; i < d->n; i++) {
        if (d->hooked && d->params[i]) tensor_remove_post_accumulate_grad_hook(d->params[i], tensor__ddp_on_grad, &d->slots[i]);
        if (d->params) tensor_free(d->params[i]);
        if (d->views) tensor_free(d->views[i]);
    }
#ifdef TENSOR_USE_MPI
    for (int b = 0; b < d->n_buckets; b++)
        if (d->buckets[b].started && d->buckets[b].req != MPI_REQUEST_NULL) MPI_Wait(&d->buckets[b].req, MPI_STATUS_IGNORE);
#endif
    for (int b = 0; b < d->n_buckets; b++) tensor_free(d->buckets[b].buf);
    TENSOR_FREE(d->params);
    TENSOR_FREE(d->views);
    TENSOR_FREE(d->bucket);
    TENSOR_FREE(d->ready);
    TENSOR_FREE(d->got);
    TENSOR_FREE(d->idle);
    TENSOR_FREE(d->flags);
    TENSOR_FREE(d->slots);
    TENSOR_FREE(d->buckets);
    TENSOR_FREE(d);
}

/* This rank's checks of tensor_ddp_new's parameters; false with the error set. */
static bool tensor__ddp_check(const char *fn, int n, tensor *const *params) {
    if (n <= 0 || !params) { tensor__fail(fn, "needs n > 0 parameters, got %d", n); return false; }
    for (int i = 0; i < n; i++) {
        if (!params[i]) { tensor__null_arg(fn, "params[i]"); return false; }
        if (!tensor__is_float(params[i]->dtype)) { tensor__fail(fn, "parameter %d is %s, not floating", i, tensor__dtype_names[params[i]->dtype]); return false; }
        if (!params[i]->requires_grad || !tensor__is_leaf(params[i])) { tensor__fail(fn, "parameter %d is not a leaf that requires grad", i); return false; }
        if (params[i]->storage->device != TENSOR_CPU && tensor_dist_world_size() > 1) { /* (a world of one reduces nothing) */
            tensor__fail(fn, "parameter %d is on %s: its gradients cannot be reduced in this build (tensor_cuda.cu with -DTENSOR_USE_NCCL reduces CUDA tensors)", i, tensor__device_name(params[i]->storage->device));
            return false;
        }
        if (!tensor__grad_edge(params[i])) { tensor__fail(fn, "out of memory making the gradient accumulator of parameter %d", i); return false; }
        for (int j = 0; j < i; j++)
            if (params[j]->grad_fn == params[i]->grad_fn) { tensor__fail(fn, "parameter %d is parameter %d again", i, j); return false; }
    }
    return true;
}

static tensor_ddp *tensor__ddp_build(const char *fn, int n, tensor *const *params, size_t bucket_bytes);

/* Every rank takes part in each agreement below whatever its own checks found, so a rank whose
   parameters or memory fail makes tensor_ddp_new fail on every rank. */
TENSOR_API tensor_ddp *tensor_ddp_new(int n, tensor *const *params, size_t bucket_bytes) {
    const char *fn = "tensor_ddp_new";
    if (bucket_bytes == 0) bucket_bytes = (size_t)25 << 20;
    uint64_t sig = tensor__dist_signature(TENSOR__DIST_DDP, n, NULL, (int)(bucket_bytes % INT_MAX));
    if (!tensor__dist_agree(fn, tensor__ddp_check(fn, n, params) ? sig : 0)) return NULL;
    /* every rank starts from rank 0's values (each broadcast also checks that the ranks' parameters agree) */
    for (int i = 0; i < n; i++)
        if (tensor_dist_broadcast(params[i], 0) != 0) return NULL;
    tensor_ddp *d = tensor__ddp_build(fn, n, params, bucket_bytes);
    if (!tensor__dist_agree(fn, d ? sig : 0)) { tensor_ddp_free(d); return NULL; }
    return d;
}

/* The buckets, views and hooks (this rank's part of tensor_ddp_new); NULL with the error set. */
static tensor_ddp *tensor__ddp_build(const char *fn, int n, tensor *const *params, size_t bucket_bytes) {
    tensor_ddp *d = (tensor_ddp *)TENSOR__MALLOC(sizeof *d);
    if (!d) { tensor__fail(fn, "out of memory"); return NULL; }
    memset(d, 0, sizeof *d);
    d->n = n;
    d->params = (tensor **)TENSOR__MALLOC(sizeof(tensor *) * (size_t)n);
    d->views = (tensor **)TENSOR__MALLOC(sizeof(tensor *) * (size_t)n);
    d->bucket = (int *)TENSOR__MALLOC(sizeof(int) * (size_t)n);
    d->ready = (bool *)TENSOR__MALLOC(sizeof(bool) * (size_t)n);
    d->got = (bool *)TENSOR__MALLOC(sizeof(bool) * (size_t)n);
    d->idle = (bool *)TENSOR__MALLOC(sizeof(bool) * (size_t)n);
    d->flags = (unsigned char *)TENSOR__MALLOC((size_t)n + 1);
    d->slots = (tensor__ddp_slot *)TENSOR__MALLOC(sizeof(tensor__ddp_slot) * (size_t)n);
    d->buckets = (tensor__ddp_bucket *)TENSOR__MALLOC(sizeof(tensor__ddp_bucket) * (size_t)n); /* at most one a parameter */
    if (d->params) memset(d->params, 0, sizeof(tensor *) * (size_t)n); /* (what tensor_ddp_free looks at) */
    if (d->views) memset(d->views, 0, sizeof(tensor *) * (size_t)n);
    if (!d->params || !d->views || !d->bucket || !d->ready || !d->got || !d->idle || !d->flags || !d->slots || !d->buckets) { tensor_ddp_free(d); tensor__fail(fn, "out of memory"); return NULL; }
    memset(d->buckets, 0, sizeof(tensor__ddp_bucket) * (size_t)n);
    for (int i = 0; i < n; i++) d->got[i] = true; /* the first step presumes nothing idle */
    /* buckets: the parameters from the last, a new one when the dtype changes or the next would overflow */
    int64_t *offset = (int64_t *)TENSOR__MALLOC(sizeof(int64_t) * (size_t)n), used = 0;
    if (!offset) { tensor_ddp_free(d); tensor__fail(fn, "out of memory"); return NULL; }
    tensor_dtype bdt = TENSOR_F32;
    for (int i = n - 1; i >= 0; i--) {
        tensor_dtype rd = tensor__dist_reduce_dtype(params[i]->dtype);
        int64_t el = tensor__numel_of(params[i]->ndim, params[i]->shape);
        size_t es = tensor__dtype_sizes[rd];
        bool fits = d->n_buckets > 0 && rd == bdt && (size_t)(used + el) * es <= bucket_bytes && used + el <= INT_MAX;
        if (!fits) { d->n_buckets++; used = 0; bdt = rd; }
        d->bucket[i] = d->n_buckets - 1;
        offset[i] = used;
        used += el;
        d->buckets[d->n_buckets - 1].n_params++;
        if (used > INT_MAX) { TENSOR_FREE(offset); tensor_ddp_free(d); tensor__fail(fn, "parameter %d has more than 2^31 - 1 elements", i); return NULL; }
    }
    bool ok = true;
    for (int b = 0; b < d->n_buckets && ok; b++) {
        int64_t el = 0;
        tensor_dtype dt = TENSOR_F32;
        for (int i = 0; i < n; i++)
            if (d->bucket[i] == b) { el = offset[i] + tensor__numel_of(params[i]->ndim, params[i]->shape) > el ? offset[i] + tensor__numel_of(params[i]->ndim, params[i]->shape) : el; dt = tensor__dist_reduce_dtype(params[i]->dtype); }
        ok = (d->buckets[b].buf = tensor__make_internal(tensor__new(fn, 1, &el, dt, TENSOR_CPU))) != NULL;
    }
    for (int i = 0; i < n && ok; i++) {
        tensor *p = params[i], *buf = d->buckets[d->bucket[i]].buf;
        int64_t strides[TENSOR_MAX_DIMS], st = 1;
        for (int k = p->ndim - 1; k >= 0; k--) { strides[k] = st; st *= p->shape[k]; }
        ok = (d->params[i] = tensor__make_internal(tensor__alias(fn, p))) != NULL &&
             (d->views[i] = tensor__make_internal(tensor__view_of(fn, buf, p->ndim, p->shape, strides, buf->offset + offset[i]))) != NULL;
        d->slots[i].d = d;
        d->slots[i].index = i;
    }
    TENSOR_FREE(offset);
    if (!ok) { tensor_ddp_free(d); return NULL; }
    tensor__ddp_reset(d);
    if (tensor_dist_world_size() > 1) { /* a world of one has nothing to reduce */
        for (int i = 0; i < n; i++)
            if (tensor_register_post_accumulate_grad_hook(d->params[i], tensor__ddp_on_grad, &d->slots[i]) != 0) {
                for (int j = 0; j < i; j++) tensor_remove_post_accumulate_grad_hook(d->params[j], tensor__ddp_on_grad, &d->slots[j]);
                tensor_ddp_free(d);
                return NULL;
            }
        d->hooked = true;
    }
    return d;
}

/* Every parameter's gradient averaged across the ranks, into its .grad. 0, or -1 with an error. */
TENSOR_API int tensor_ddp_sync(tensor_ddp *d) {
    const char *fn = "tensor_ddp_sync";
    if (!d) { tensor__null_arg(fn, "d"); return -1; }
    if (!d->hooked) return 0;
    int world = tensor_dist_world_size(), rc = 0;
#ifdef TENSOR_USE_MPI
    /* what is left: parameters without a gradient here add zeros */
    for (int i = 0; i < d->n; i++)
        if (!d->ready[i]) { tensor__ddp_zero(d->views[i]); d->ready[i] = true; d->buckets[d->bucket[i]].pending--; }
    while (d->next < d->n_buckets) tensor__ddp_start(d, d->next++);
    /* which parameters had a gradient on some rank, and whether any rank's reductions are stale */
    for (int i = 0; i < d->n; i++) d->flags[i] = d->got[i];
    d->flags[d->n] = d->stale;
    int ok = tensor__dist_mpi_ok(fn, "MPI_Allreduce", MPI_Allreduce(MPI_IN_PLACE, d->flags, d->n + 1, MPI_UNSIGNED_CHAR, MPI_MAX, tensor__dist_comm));
    for (int b = 0; b < d->n_buckets; b++)
        if (d->buckets[b].req != MPI_REQUEST_NULL && !tensor__dist_mpi_ok(fn, "MPI_Iallreduce", MPI_Wait(&d->buckets[b].req, MPI_STATUS_IGNORE))) ok = 0;
    if (d->failed && ok) ok = (tensor__fail(fn, "MPI_Iallreduce could not start a bucket's reduction"), 0);
    if (ok && d->flags[d->n]) { /* gradient accumulation: reduce the final gradients again */
        for (int i = 0; i < d->n; i++) {
            tensor *g = tensor_grad(d->params[i]);
            if (g) tensor__copy_into(d->views[i], g);
            else tensor__ddp_zero(d->views[i]);
        }
        for (int b = 0; b < d->n_buckets && ok; b++) {
            tensor *buf = d->buckets[b].buf;
            ok = tensor__dist_mpi_ok(fn, "MPI_Allreduce", MPI_Allreduce(MPI_IN_PLACE, tensor__data(buf), (int)tensor__numel_of(1, buf->shape), tensor__dist_type(buf->dtype), MPI_SUM, tensor__dist_comm));
        }
    }
    for (int b = 0; b < d->n_buckets && ok; b++) tensor__dist_divide(d->buckets[b].buf, d->buckets[b].buf->shape[0], world);
    /* the averages into .grad: in place where there is one, else a new one */
    for (int i = 0; i < d->n && ok; i++) {
        if (!d->flags[i]) continue; /* no rank had a gradient: .grad stays as it was */
        tensor__node *acc = d->params[i]->grad_fn;
        tensor *g = acc->grad;
        if (!g) {
            g = tensor__new(fn, d->params[i]->ndim, d->params[i]->shape, d->params[i]->dtype, TENSOR_CPU);
            if (!g) { ok = 0; break; }
            acc->grad = tensor__make_internal(g);
        }
        tensor__copy_into(g, d->views[i]);
        g->storage->version++;
    }
    rc = ok ? 0 : -1;
#else
    (void)fn;
    (void)world;
#endif
    tensor__ddp_reset(d);
    return rc;
}
