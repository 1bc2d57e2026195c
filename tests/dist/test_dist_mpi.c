/* The collectives over MPI, on however many ranks mpirun starts (tests/dist/run.sh: 2 and 3, over
   shared memory and over TCP alone). Built with mpicc -DTENSOR_USE_MPI. Each rank fills its tensors
   with values that depend on its rank; every rank computes what every rank filled and checks the
   result against that single-process reference. Each test's failures are summed over the ranks,
   and rank 0 prints `ok NAME` or `FAIL NAME` (run.sh counts them); a rank's own mismatches go to
   stderr with its rank. */
#define TENSOR_IMPLEMENTATION
#include "../../tensor.h"
#define GPT_NO_MAIN
#include "../../examples/gpt.c" /* its model and training loop, for the GPT test */
#include "../gpt_text.h"
#include <mpi.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int rank, world, fails;
static bool early_ok; /* a collective before tensor_dist_init failed as it should */

#define CHECK(cond) do { if (!(cond)) { fails++; fprintf(stderr, "rank %d: %s:%d: CHECK(%s) failed (%s)\n", rank, __FILE__, __LINE__, #cond, tensor_last_error() ? tensor_last_error() : "no error"); } } while (0)
/* call (true when it failed) fails with an error containing text (the first error since the clear) */
#define CHECK_FAILS(call, text) do { tensor_clear_error(); bool failed_ = (call); CHECK(failed_ && tensor_last_error() && strstr(tensor_last_error(), text)); } while (0)

static const tensor_dtype dtypes[] = {TENSOR_F32, TENSOR_F64, TENSOR_F16, TENSOR_BF16, TENSOR_I32, TENSOR_I64, TENSOR_U8, TENSOR_BOOL};
#define N_DTYPES (int)(sizeof dtypes / sizeof dtypes[0])

/* rank r's element k: small integers, exact in every dtype (bool: 0 or 1; u8: not negative) */
static double value(tensor_dtype dt, int r, int64_t k) {
    if (dt == TENSOR_BOOL) return (double)((k + r) % 3 == 0);
    double v = (double)((k * 7 + r * 13) % 11);
    return dt == TENSOR_U8 ? v : v - 5;
}

/* A tensor of shape [a, b] (or 0-dim when a < 0) holding value(dt, r, k) at row-major k, laid out
   as asked: 0 contiguous, 1 a transposed view, 2 a narrowed view (a storage offset). */
static tensor *make(tensor_dtype dt, int r, int64_t a, int64_t b, int layout) {
    int nd = a < 0 ? 0 : 2;
    int64_t n = a < 0 ? 1 : a * b;
    int64_t base_shape[2] = {layout == 1 ? b : a, layout == 1 ? a : b + (layout == 2 ? 3 : 0)};
    tensor *base = tensor_empty(nd, base_shape, TENSOR_F64);
    double *p = (double *)tensor_data_ptr(base);
    if (!p) return NULL;
    for (int64_t k = 0; k < n; k++) {
        int64_t i = nd ? k / b : 0, j = nd ? k % b : 0;
        if (layout == 1) p[j * a + i] = value(dt, r, k);
        else if (layout == 2) p[i * (b + 3) + j + 2] = value(dt, r, k);
        else p[k] = value(dt, r, k);
    }
    tensor *t = tensor_to_dtype(base, dt);
    if (layout == 1) t = tensor_transpose(t, 0, 1);
    if (layout == 2) t = tensor_narrow(t, 1, 2, b);
    return t;
}

/* t's values (any layout) as doubles; malloc'd */
static double *values(tensor *t) {
    tensor *c = tensor_contiguous(tensor_to_dtype(t, TENSOR_F64));
    int64_t n = tensor_numel(t);
    double *v = (double *)malloc(sizeof(double) * (size_t)(n ? n : 1));
    const double *p = c ? (const double *)tensor_data_ptr(c) : NULL;
    for (int64_t k = 0; k < n; k++) v[k] = p ? p[k] : NAN;
    return v;
}

/* what op gives over every rank's value(dt, r, k), rounded to dt as the library rounds */
static double reduced(tensor_dtype dt, tensor_reduce_op op, int64_t k) {
    double acc = value(dt, 0, k);
    for (int r = 1; r < world; r++) {
        double v = value(dt, r, k);
        if (op == TENSOR_REDUCE_MAX || (dt == TENSOR_BOOL && op == TENSOR_REDUCE_SUM)) acc = v > acc ? v : acc;
        else if (op == TENSOR_REDUCE_MIN) acc = v < acc ? v : acc;
        else acc += v;
    }
    if (op == TENSOR_REDUCE_AVG) acc = dt == TENSOR_F64 ? acc / world : (double)((float)acc / (float)world);
    tensor *s = tensor_to_dtype(tensor_full(0, NULL, acc, TENSOR_F64), dt); /* the dtype's rounding */
    return tensor_item(s);
}

static bool op_valid(tensor_dtype dt, tensor_reduce_op op) {
    return op != TENSOR_REDUCE_AVG || dt == TENSOR_F32 || dt == TENSOR_F64 || dt == TENSOR_F16 || dt == TENSOR_BF16;
}

static void check_values(tensor *t, const double *want, int64_t n, const char *what) {
    double *got = values(t);
    int bad = 0;
    for (int64_t k = 0; k < n; k++)
        if (!(got[k] == want[k])) {
            if (bad++ < 3) fprintf(stderr, "rank %d: %s: element %lld is %g, want %g\n", rank, what, (long long)k, got[k], want[k]);
        }
    if (bad) fails++;
    free(got);
}

static void test_all_reduce(void) {
    static const tensor_reduce_op ops[] = {TENSOR_REDUCE_SUM, TENSOR_REDUCE_AVG, TENSOR_REDUCE_MAX, TENSOR_REDUCE_MIN};
    static const int64_t sizes[][2] = {{5, 7}, {1, 1001}, {0, 3}, {-1, 1}}; /* odd sizes, empty, 0-dim */
    for (int d = 0; d < N_DTYPES; d++)
        for (int o = 0; o < 4; o++)
            for (int s = 0; s < 4; s++)
                for (int layout = 0; layout < 3; layout++) {
                    if (sizes[s][0] <= 0 && layout) continue;
                    tensor_dtype dt = dtypes[d];
                    tensor_scope_begin();
                    tensor *t = make(dt, rank, sizes[s][0], sizes[s][1], layout);
                    if (!op_valid(dt, ops[o])) CHECK_FAILS(tensor_dist_all_reduce(t, ops[o]) == -1, "AVG needs a floating dtype");
                    else {
                        CHECK(tensor_dist_all_reduce(t, ops[o]) == 0);
                        int64_t n = tensor_numel(t);
                        double *want = (double *)malloc(sizeof(double) * (size_t)(n ? n : 1));
                        for (int64_t k = 0; k < n; k++) want[k] = reduced(dt, ops[o], k);
                        char what[96];
                        snprintf(what, sizeof what, "all_reduce %s op %d size %d layout %d", tensor_dtype_name(dt), (int)ops[o], s, layout);
                        check_values(t, want, n, what);
                        free(want);
                    }
                    tensor_scope_end();
                }
}

static void test_broadcast(void) {
    for (int d = 0; d < N_DTYPES; d++)
        for (int root = 0; root < world; root++)
            for (int layout = 0; layout < 3; layout++) {
                tensor_scope_begin();
                tensor *t = make(dtypes[d], rank, 3, 5, layout);
                CHECK(tensor_dist_broadcast(t, root) == 0);
                double want[15];
                for (int k = 0; k < 15; k++) want[k] = value(dtypes[d], root, k);
                check_values(t, want, 15, "broadcast");
                tensor_scope_end();
            }
    tensor_scope_begin(); /* empty and 0-dim */
    tensor *e = make(TENSOR_F32, rank, 0, 4, 0), *z = make(TENSOR_F64, rank, -1, 1, 0);
    CHECK(tensor_dist_broadcast(e, 0) == 0 && tensor_dist_broadcast(z, world - 1) == 0);
    CHECK(tensor_item(z) == value(TENSOR_F64, world - 1, 0));
    tensor_scope_end();
}

static void test_all_gather(void) {
    for (int d = 0; d < N_DTYPES; d++)
        for (int layout = 0; layout < 3; layout++) {
            tensor_scope_begin();
            tensor *t = make(dtypes[d], rank, 2, 3, layout), *g = tensor_dist_all_gather(t);
            CHECK(g && tensor_ndim(g) == 2 && tensor_size(g, 0) == 2 * world && tensor_size(g, 1) == 3 && tensor_get_dtype(g) == dtypes[d]);
            double *want = (double *)malloc(sizeof(double) * (size_t)(6 * world));
            for (int r = 0; r < world; r++)
                for (int k = 0; k < 6; k++) want[r * 6 + k] = value(dtypes[d], r, k);
            if (g) check_values(g, want, 6 * world, "all_gather");
            free(want);
            tensor_scope_end();
        }
    tensor_scope_begin();
    tensor *z = tensor_dist_all_gather(make(TENSOR_I64, rank, -1, 1, 0)); /* 0-dim: [world] */
    CHECK(z && tensor_ndim(z) == 1 && tensor_size(z, 0) == world);
    double want[16];
    for (int r = 0; r < world && r < 16; r++) want[r] = value(TENSOR_I64, r, 0);
    if (z) check_values(z, want, world, "all_gather 0-dim");
    tensor *e = tensor_dist_all_gather(make(TENSOR_F32, rank, 0, 3, 0)); /* empty: [0, 3] */
    CHECK(e && tensor_size(e, 0) == 0 && tensor_size(e, 1) == 3);
    tensor_scope_end();
}

static void test_reduce_scatter(void) {
    static const tensor_reduce_op ops[] = {TENSOR_REDUCE_SUM, TENSOR_REDUCE_AVG, TENSOR_REDUCE_MAX, TENSOR_REDUCE_MIN};
    for (int d = 0; d < N_DTYPES; d++)
        for (int o = 0; o < 4; o++)
            for (int layout = 0; layout < 2; layout++) {
                if (!op_valid(dtypes[d], ops[o])) continue;
                tensor_scope_begin();
                tensor *t = make(dtypes[d], rank, 2 * world, 3, layout), *s = tensor_dist_reduce_scatter(t, ops[o]);
                CHECK(s && tensor_size(s, 0) == 2 && tensor_size(s, 1) == 3);
                double want[6];
                for (int k = 0; k < 6; k++) want[k] = reduced(dtypes[d], ops[o], rank * 6 + k);
                if (s) check_values(s, want, 6, "reduce_scatter");
                tensor_scope_end();
            }
    tensor_scope_begin();
    CHECK_FAILS(!tensor_dist_reduce_scatter(make(TENSOR_F32, rank, 2 * world + 1, 2, 0), TENSOR_REDUCE_SUM), "multiple of the world size");
    tensor *e = tensor_dist_reduce_scatter(make(TENSOR_F32, rank, 0, 3, 0), TENSOR_REDUCE_SUM);
    CHECK(e && tensor_size(e, 0) == 0);
    tensor_scope_end();
}

/* Ranks that pass different things fail together, and the next call works. */
static void test_mismatch(void) {
    tensor_scope_begin();
    tensor *t = make(TENSOR_F32, rank, 1, rank == 0 ? 4 : 5, 0);
    CHECK_FAILS(tensor_dist_all_reduce(t, TENSOR_REDUCE_SUM) == -1, "calls differ");
    tensor *u = make(rank == world - 1 ? TENSOR_F64 : TENSOR_F32, rank, 2, 2, 0);
    CHECK_FAILS(tensor_dist_broadcast(u, 0) == -1, "calls differ");
    tensor *r = make(TENSOR_F32, rank, 2, 2, 0);
    CHECK_FAILS(tensor_dist_broadcast(r, rank == 0 ? 0 : 1) == -1, "calls differ"); /* roots differ */
    /* one rank's NULL: its own message, the others' "differ" */
    tensor *v = rank == 1 ? NULL : make(TENSOR_F32, rank, 2, 2, 0);
    CHECK_FAILS(tensor_dist_all_reduce(v, TENSOR_REDUCE_SUM) == -1, rank == 1 ? "is NULL" : "calls differ");
    CHECK_FAILS(!tensor_dist_all_gather(rank == 0 ? NULL : r), rank == 0 ? "is NULL" : "calls differ");
    tensor *q = make(TENSOR_F32, rank, 2 * world, rank == 0 ? 2 : 3, 0);
    CHECK_FAILS(!tensor_dist_reduce_scatter(q, TENSOR_REDUCE_SUM), "calls differ");
    /* an op one rank rejects (AVG of integers there) */
    tensor *i = make(rank == 0 ? TENSOR_I32 : TENSOR_F32, rank, 2, 2, 0);
    CHECK_FAILS(tensor_dist_all_reduce(i, TENSOR_REDUCE_AVG) == -1, rank == 0 ? "AVG needs" : "calls differ");
    CHECK_FAILS(tensor_dist_broadcast(r, world) == -1, "not a rank");
    /* still in step */
    tensor *w = make(TENSOR_F64, rank, 3, 3, 0);
    CHECK(tensor_dist_all_reduce(w, TENSOR_REDUCE_SUM) == 0);
    double want[9];
    for (int k = 0; k < 9; k++) want[k] = reduced(TENSOR_F64, TENSOR_REDUCE_SUM, k);
    check_values(w, want, 9, "after the mismatches");
    CHECK(tensor_dist_barrier() == 0);
    tensor_scope_end();
}

/* f16/bf16 sums go through f32: 1 + 2^-11 per rank would be lost adding in f16 itself */
static void test_half_in_f32(void) {
    tensor_scope_begin();
    int64_t n = 4;
    tensor *t = tensor_full(1, &n, rank == 0 ? 2048 : 1, TENSOR_F16); /* 2048 + 1 + 1 = 2050 is an f16; 2048 + 1 is not */
    CHECK(tensor_dist_all_reduce(t, TENSOR_REDUCE_SUM) == 0);
    double want[4] = {2048 + (world - 1), 2048 + (world - 1), 2048 + (world - 1), 2048 + (world - 1)};
    want[0] = want[1] = want[2] = want[3] = tensor_item(tensor_to_dtype(tensor_full(0, NULL, want[0], TENSOR_F64), TENSOR_F16));
    check_values(t, want, 4, "f16 sum in f32");
    tensor_scope_end();
}

static void test_info(void) {
    CHECK(early_ok);
    char want[64];
    snprintf(want, sizeof want, "mpi: yes (rank %d of %d)", rank, world);
    CHECK(strstr(tensor_build_info(), want) != NULL);
    CHECK(tensor_dist_rank() == rank && tensor_dist_world_size() == world);
}

/* ---- DDP: ranks with 32 rows each end where one process with all 32 * world rows does ----
   The MLP x [B, 6] -> tanh(x W1^T + b1) [B, 16] -> h W2^T + b2 [B, 3], mean cross-entropy, in f64;
   u [4] enters rank 0's loss alone (sum u^2: the other ranks have no gradient for it, and add
   zeros), z [2] enters nobody's (its .grad stays NULL). */
typedef struct { tensor *p[6]; } mlp; /* w1 b1 w2 b2 u z */

static void mlp_init(mlp *m, uint64_t seed) {
    tensor_manual_seed(seed);
    const int64_t shapes[6][2] = {{16, 6}, {16, 0}, {3, 16}, {3, 0}, {4, 0}, {2, 0}};
    for (int i = 0; i < 6; i++) {
        tensor *t = tensor_mul_scalar(tensor_randn(shapes[i][1] ? 2 : 1, shapes[i], TENSOR_F64), 0.5);
        m->p[i] = tensor_set_requires_grad(tensor_contiguous(t), true);
    }
}

/* rows [r0, r0 + n) of the data; u_scale: the weight of sum(u^2) in this loss */
static tensor *mlp_loss(mlp *m, tensor *x, tensor *y, int64_t r0, int64_t n, double u_scale) {
    tensor *xs = tensor_narrow(x, 0, r0, n), *ys = tensor_narrow(y, 0, r0, n);
    tensor *h = tensor_tanh(tensor_linear(xs, m->p[0], m->p[1]));
    tensor *loss = tensor_cross_entropy(tensor_linear(h, m->p[2], m->p[3]), ys);
    return u_scale ? tensor_add(loss, tensor_mul_scalar(tensor_sum_all(tensor_mul(m->p[4], m->p[4])), u_scale)) : loss;
}

/* mode 0: one bucket (the reduction starts when backward ends: no overlap); 1: 64-byte buckets
   (they start during backward); 2: small buckets and two micro-batches a step (accumulation) */
static void ddp_case(int mode) {
    const int64_t per = 32, total = per * world;
    tensor_scope_begin();
    tensor_manual_seed(99);
    tensor *x = tensor_randn(2, (int64_t[]){total, 6}, TENSOR_F64);
    int64_t *yv = (int64_t *)malloc(sizeof(int64_t) * (size_t)total);
    for (int64_t k = 0; k < total; k++) yv[k] = k % 3;
    tensor *y = tensor_from_data(yv, 1, &total, TENSOR_I64);
    free(yv);
    mlp ref, dp;
    mlp_init(&ref, 7);            /* rank 0's initial values */
    mlp_init(&dp, 7 + (uint64_t)rank); /* each rank's own: tensor_ddp_new must broadcast rank 0's */
    tensor_ddp *d = tensor_ddp_new(6, dp.p, mode == 0 ? SIZE_MAX : 64);
    CHECK(d != NULL);
    if (!d) { tensor_scope_end(); return; }
    CHECK(d->n_buckets == (mode == 0 ? 1 : 5)); /* 64 bytes: {z, u}, then one parameter a bucket */
    tensor_optim *oref = tensor_optim_adamw(6, ref.p, 1e-2, 0.9, 0.999, 1e-8, 0.01), *odp = tensor_optim_adamw(6, dp.p, 1e-2, 0.9, 0.999, 1e-8, 0.01);
    int started_in_backward = 0;
    for (int step = 0; step < 20; step++) {
        tensor_scope_begin();
        /* the reference: every rank's rows at once; u's weight 1 / world gives 2 u / world, the average */
        CHECK(tensor_backward(mlp_loss(&ref, x, y, 0, total, 1.0 / world)) == 0);
        if (mode < 2) {
            CHECK(tensor_backward(mlp_loss(&dp, x, y, rank * per, per, rank == 0 ? 1.0 : 0.0)) == 0);
        } else { /* two halves, each weighted 1/2: the same mean */
            for (int h = 0; h < 2; h++)
                CHECK(tensor_backward(tensor_mul_scalar(mlp_loss(&dp, x, y, rank * per + h * per / 2, per / 2, rank == 0 ? 1.0 : 0.0), 0.5)) == 0);
        }
        started_in_backward += d->next > 0;
        CHECK(tensor_ddp_sync(d) == 0);
        CHECK(tensor_grad(dp.p[5]) == NULL); /* nobody's gradient: none made */
        for (int i = 0; i < 5; i++) { /* the averaged gradients are the whole batch's */
            double *a = values(tensor_grad(ref.p[i])), *g = values(tensor_grad(dp.p[i]));
            for (int64_t k = 0; k < tensor_numel(ref.p[i]); k++)
                if (!(fabs(a[k] - g[k]) <= 1e-9 * (fabs(a[k]) + 1e-6))) { fails++; fprintf(stderr, "rank %d: ddp mode %d step %d: gradient %d [%lld] is %g, want %g\n", rank, mode, step, i, (long long)k, g[k], a[k]); break; }
            free(a);
            free(g);
        }
        CHECK(tensor_optim_step(oref) == 0);
        tensor_optim_zero_grad(oref);
        CHECK(tensor_optim_step(odp) == 0);
        tensor_optim_zero_grad(odp);
        tensor_scope_end();
    }
    /* from the second step on, z (and u on ranks other than 0) is known to have no gradient and
       buckets start inside backward (mode 0's one bucket when the last gradient arrives); in the
       first, z holds its bucket, and so every later one, until the sync */
    CHECK(started_in_backward == 19);
    for (int i = 0; i < 6; i++) {
        double *a = values(ref.p[i]), *b = values(dp.p[i]);
        double worst = 0;
        for (int64_t k = 0; k < tensor_numel(ref.p[i]); k++) {
            double e = fabs(a[k] - b[k]) / (fabs(a[k]) + 1e-3);
            worst = e > worst ? e : worst;
        }
        if (!(worst <= 1e-9)) { fails++; fprintf(stderr, "rank %d: ddp mode %d: parameter %d differs from one process's by %g (relative)\n", rank, mode, i, worst); }
        free(a);
        free(b);
    }
    tensor_ddp_free(d);
    tensor_optim_free(oref);
    tensor_optim_free(odp);
    tensor_scope_end();
}

static void test_ddp(void) { for (int mode = 0; mode < 3; mode++) ddp_case(mode); }

/* One rank's bad parameters (or different ones) fail tensor_ddp_new on every rank, without a hang */
static void test_ddp_bad(void) {
    tensor_scope_begin();
    tensor *w = tensor_set_requires_grad(tensor_ones(1, (int64_t[]){rank == 0 ? 3 : 4}, TENSOR_F32), true);
    CHECK_FAILS(tensor_ddp_new(1, &w, 0) == NULL, "calls differ");
    tensor *v = tensor_set_requires_grad(tensor_ones(1, (int64_t[]){3}, TENSOR_F32), true);
    tensor *nl = rank == 1 ? tensor_mul_scalar(v, 2) : v;
    CHECK_FAILS(tensor_ddp_new(1, &nl, 0) == NULL, rank == 1 ? "not a leaf" : "calls differ");
    tensor *two[2] = {v, w};
    CHECK_FAILS(tensor_ddp_new(rank == 0 ? 1 : 2, two, 0) == NULL, "calls differ"); /* counts differ */
    tensor_ddp *d = tensor_ddp_new(1, &v, 0); /* and then a good one */
    CHECK(d != NULL);
    CHECK(tensor_backward(tensor_sum_all(tensor_mul_scalar(v, (double)(rank + 1)))) == 0 && tensor_ddp_sync(d) == 0);
    double want = (world + 1) / 2.0; /* the mean of 1 .. world */
    double *g = values(tensor_grad(v));
    CHECK(g[0] == want && g[2] == want);
    free(g);
    tensor_ddp_free(d);
    tensor_scope_end();
}

/* examples/gpt.c's training loop on every rank's share of each batch, with tensor_ddp, ends where
   one process training on the whole batches does (f32, dropout 0: the averaged gradient differs
   from the whole batch's by rounding only). */
static void test_gpt(void) {
    gpt_data d = gpt_test_text();
    if (!d.bytes) { fails++; return; }
    const gpt_config cfg = {2, 2, 32, 16, 256, 0};
    gpt_train_opts o;
    memset(&o, 0, sizeof o);
    o.steps = 6;
    o.batch = 2 * world;
    o.accum = 1;
    o.warmup = 2;
    o.eval_batches = 1;
    o.lr = 3e-3;
    o.min_lr = 3e-4;
    o.weight_decay = 0.1;
    o.clip = 1.0;
    o.quiet = true;
    gpt_model one, many;
    tensor_manual_seed(5);
    CHECK(gpt_init(&one, cfg, TENSOR_CPU, TENSOR_F32) == 0);
    tensor_optim *o1 = gpt_optimizer(&one, &o);
    tensor_manual_seed(5 + (uint64_t)rank); /* other weights: tensor_ddp_new brings rank 0's */
    CHECK(gpt_init(&many, cfg, TENSOR_CPU, TENSOR_F32) == 0);
    tensor_optim *on = gpt_optimizer(&many, &o);
    gpt_train_opts od = o;
    od.ddp = tensor_ddp_new(many.n_params, many.params, 0);
    od.rank = rank;
    od.world = world;
    CHECK(o1 && on && od.ddp);
    tensor_manual_seed(11); /* the same batches for both runs */
    CHECK(gpt_train(&one, o1, &d, &o, 0) == 0);
    tensor_manual_seed(11);
    CHECK(gpt_train(&many, on, &d, &od, 0) == 0);
    double worst = 0;
    for (int i = 0; i < one.n_params; i++) {
        double *a = values(one.params[i]), *b = values(many.params[i]);
        for (int64_t k = 0; k < tensor_numel(one.params[i]); k++) {
            double e = fabs(a[k] - b[k]);
            worst = e > worst ? e : worst;
        }
        free(a);
        free(b);
    }
    /* 6 AdamW steps of at most lr 3e-3 each: rounding moves a parameter far less than one step */
    if (!(worst < 1e-4)) { fails++; fprintf(stderr, "rank %d: gpt: a parameter differs from one process's by %g\n", rank, worst); }
    /* and each rank did train on its share alone: without the averaging it ends elsewhere */
    gpt_model alone;
    tensor_manual_seed(5);
    CHECK(gpt_init(&alone, cfg, TENSOR_CPU, TENSOR_F32) == 0);
    tensor_optim *oa = gpt_optimizer(&alone, &o);
    gpt_train_opts os = od;
    os.ddp = NULL;
    tensor_manual_seed(11);
    CHECK(oa && gpt_train(&alone, oa, &d, &os, 0) == 0);
    double apart = 0;
    for (int i = 0; i < one.n_params; i++) {
        double *a = values(one.params[i]), *b = values(alone.params[i]);
        for (int64_t k = 0; k < tensor_numel(one.params[i]); k++) apart = fabs(a[k] - b[k]) > apart ? fabs(a[k] - b[k]) : apart;
        free(a);
        free(b);
    }
    if (!(apart > 1e-3)) { fails++; fprintf(stderr, "rank %d: gpt: training on the share alone ends %g from the whole batch's\n", rank, apart); }
    tensor_optim_free(oa);
    gpt_free(&alone);
    tensor_ddp_free(od.ddp);
    tensor_optim_free(o1);
    tensor_optim_free(on);
    gpt_free(&one);
    gpt_free(&many);
    free(d.bytes);
}

static int passed, failed;
static void run(const char *name, void (*fn)(void)) {
    fails = 0;
    fn();
    int total = 0;
    MPI_Allreduce(&fails, &total, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);
    if (total) failed++; else passed++;
    if (rank == 0) printf("%s dist %s (%d ranks)\n", total ? "FAIL" : "ok", name, world);
    fflush(stdout);
}

int main(int argc, char **argv) {
    /* before tensor_dist_init: an error, not a world of one, in a build with MPI */
    int64_t two = 2;
    tensor *early = tensor_zeros(1, &two, TENSOR_F32);
    int early_rc = tensor_dist_all_reduce(early, TENSOR_REDUCE_SUM);
    early_ok = early_rc == -1 && tensor_last_error() && strstr(tensor_last_error(), "tensor_dist_init first");
    tensor_clear_error();
    tensor_free(early);
    if (tensor_dist_init(&argc, &argv) != 0) { fprintf(stderr, "tensor_dist_init: %s\n", tensor_last_error()); return 1; }
    rank = tensor_dist_rank();
    world = tensor_dist_world_size();
    run("info", test_info);
    run("all_reduce", test_all_reduce);
    run("broadcast", test_broadcast);
    run("all_gather", test_all_gather);
    run("reduce_scatter", test_reduce_scatter);
    run("mismatch", test_mismatch);
    run("half_in_f32", test_half_in_f32);
    run("ddp", test_ddp);
    run("ddp_bad", test_ddp_bad);
    run("gpt", test_gpt);
    if (tensor_dist_finalize() != 0) { fprintf(stderr, "tensor_dist_finalize: %s\n", tensor_last_error()); return 1; }
    tensor_shutdown();
    return failed ? 1 : 0;
}
