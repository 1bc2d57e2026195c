/* The collectives in a build without MPI: a world of one rank, where every collective gives its
   input back (all_gather and reduce_scatter as new tensors), and the same argument checks as over
   MPI (tests/dist/test_dist_mpi.c runs them on 2 and 3 ranks). */
#include "test.h"

TEST(dist_world_of_one) {
    CHECK(tensor_dist_init(NULL, NULL) == 0 && tensor_dist_init(NULL, NULL) == 0); /* twice: once */
    CHECK(tensor_dist_rank() == 0 && tensor_dist_world_size() == 1);
    CHECK(strstr(tensor_build_info(), "mpi: no") != NULL);
    const tensor_dtype dts[] = {TENSOR_F32, TENSOR_F64, TENSOR_F16, TENSOR_BF16, TENSOR_I32, TENSOR_I64, TENSOR_U8, TENSOR_BOOL};
    const tensor_reduce_op ops[] = {TENSOR_REDUCE_SUM, TENSOR_REDUCE_AVG, TENSOR_REDUCE_MAX, TENSOR_REDUCE_MIN};
    for (size_t d = 0; d < sizeof dts / sizeof dts[0]; d++) {
        bool fl = dts[d] == TENSOR_F32 || dts[d] == TENSOR_F64 || dts[d] == TENSOR_F16 || dts[d] == TENSOR_BF16;
        double v[12];
        for (int k = 0; k < 12; k++) v[k] = dts[d] == TENSOR_BOOL ? k % 2 : k % 5;
        tensor *base = test_tensor(dts[d], 2, (int64_t[]){3, 4}, v), *t = tensor_transpose(base, 0, 1); /* strided */
        double *want = test_values(t);
        for (int o = 0; o < 4; o++) {
            if (!fl && ops[o] == TENSOR_REDUCE_AVG) { CHECK_BAD_INT(tensor_dist_all_reduce(t, ops[o]) != 0, "tensor_dist_all_reduce"); continue; }
            CHECK(tensor_dist_all_reduce(t, ops[o]) == 0);
            CHECK_VALUES(t, want, 12, 0, 0);
            tensor *s = tensor_dist_reduce_scatter(t, ops[o]);
            CHECK_SHAPE(s, 2, (int64_t[]){4, 3});
            CHECK_VALUES(s, want, 12, 0, 0);
        }
        CHECK(tensor_dist_broadcast(t, 0) == 0);
        CHECK_VALUES(t, want, 12, 0, 0);
        tensor *g = tensor_dist_all_gather(t);
        CHECK_SHAPE(g, 2, (int64_t[]){4, 3});
        CHECK_VALUES(g, want, 12, 0, 0);
        CHECK(!tensor_shares_storage(g, t));
        free(want);
    }
    /* 0-dim and empty */
    tensor *z = tensor_full(0, NULL, 7, TENSOR_F32), *gz = tensor_dist_all_gather(z);
    CHECK_SHAPE(gz, 1, (int64_t[]){1});
    CHECK(tensor_item(gz) == 7 && tensor_dist_all_reduce(z, TENSOR_REDUCE_AVG) == 0 && tensor_item(z) == 7);
    tensor *e = tensor_zeros(2, (int64_t[]){0, 3}, TENSOR_F64);
    CHECK(tensor_dist_all_reduce(e, TENSOR_REDUCE_SUM) == 0 && tensor_dist_broadcast(e, 0) == 0);
    CHECK_SHAPE(tensor_dist_all_gather(e), 2, (int64_t[]){0, 3});
    CHECK_SHAPE(tensor_dist_reduce_scatter(e, TENSOR_REDUCE_SUM), 2, (int64_t[]){0, 3});
    CHECK(tensor_dist_barrier() == 0);
    CHECK(tensor_dist_finalize() == 0 && tensor_dist_world_size() == 1);
}

TEST(dist_bad_arguments) {
    tensor *t = tensor_zeros(1, (int64_t[]){4}, TENSOR_F32);
    CHECK_BAD_INT(tensor_dist_all_reduce(NULL, TENSOR_REDUCE_SUM) != 0, "tensor_dist_all_reduce");
    CHECK_BAD_INT(tensor_dist_all_reduce(t, (tensor_reduce_op)9) != 0, "tensor_dist_all_reduce");
    CHECK_BAD_INT(tensor_dist_broadcast(NULL, 0) != 0, "tensor_dist_broadcast");
    CHECK_BAD_INT(tensor_dist_broadcast(t, 1) != 0, "tensor_dist_broadcast");   /* no rank 1 in a world of one */
    CHECK_BAD_INT(tensor_dist_broadcast(t, -1) != 0, "tensor_dist_broadcast");
    CHECK_BAD(tensor_dist_all_gather(NULL), "tensor_dist_all_gather");
    CHECK_BAD(tensor_dist_reduce_scatter(NULL, TENSOR_REDUCE_SUM), "tensor_dist_reduce_scatter");
    CHECK_BAD(tensor_dist_reduce_scatter(tensor_full(0, NULL, 1, TENSOR_F32), TENSOR_REDUCE_SUM), "tensor_dist_reduce_scatter");
    CHECK_BAD(tensor_dist_reduce_scatter(tensor_zeros(1, (int64_t[]){4}, TENSOR_I64), TENSOR_REDUCE_AVG), "tensor_dist_reduce_scatter");
    tensor_clear_error();
    tensor_free(t);
}

/* In a world of one tensor_ddp is an optimizer's bystander: nothing to average, no hooks. */
TEST(dist_ddp_world_of_one) {
    tensor *w = tensor_set_requires_grad(tensor_ones(2, (int64_t[]){3, 2}, TENSOR_F32), true);
    tensor *b = tensor_set_requires_grad(tensor_zeros(1, (int64_t[]){3}, TENSOR_F64), true);
    tensor *params[2] = {w, b};
    tensor_ddp *d = tensor_ddp_new(2, params, 0);
    CHECK(d != NULL);
    CHECK(tensor_backward(tensor_sum_all(tensor_mul(w, w))) == 0);
    CHECK(tensor_ddp_sync(d) == 0);
    double want[6] = {2, 2, 2, 2, 2, 2};
    CHECK_VALUES(tensor_grad(w), want, 6, 0, 0);
    CHECK(tensor_grad(b) == NULL);
    tensor_ddp_free(d);
    tensor_ddp_free(NULL);
    /* bad input */
    tensor *nl = tensor_mul_scalar(w, 2), *ints = tensor_zeros(1, (int64_t[]){2}, TENSOR_I32);
    CHECK_BAD_INT(tensor_ddp_new(0, params, 0) == NULL, "tensor_ddp_new");
    CHECK_BAD_INT(tensor_ddp_new(1, (tensor *[]){NULL}, 0) == NULL, "tensor_ddp_new");
    CHECK_BAD_INT(tensor_ddp_new(1, &nl, 0) == NULL, "tensor_ddp_new");     /* not a leaf */
    CHECK_BAD_INT(tensor_ddp_new(1, &ints, 0) == NULL, "tensor_ddp_new");   /* not floating */
    CHECK_BAD_INT(tensor_ddp_new(2, (tensor *[]){w, w}, 0) == NULL, "tensor_ddp_new");
    CHECK_BAD_INT(tensor_ddp_sync(NULL) != 0, "tensor_ddp_sync");
}

typedef struct { int calls; double sum; } hook_log;
static void hook_record(tensor *grad, void *user) {
    hook_log *l = (hook_log *)user;
    l->calls++;
    l->sum = tensor_item(tensor_sum_all(grad));
}

/* The hook runs once a backward pass, with the leaf's whole gradient (both uses summed) */
TEST(post_accumulate_grad_hook) {
    tensor *x = tensor_set_requires_grad(tensor_full(1, (int64_t[]){4}, 3, TENSOR_F64), true);
    hook_log a = {0, 0}, b = {0, 0};
    CHECK(tensor_register_post_accumulate_grad_hook(x, hook_record, &a) == 0);
    CHECK(tensor_register_post_accumulate_grad_hook(x, hook_record, &b) == 0);
    /* y = sum(x * x) + sum(2 x): dy/dx = 2 x + 2 = 8 each, 32 in all */
    CHECK(tensor_backward(tensor_add(tensor_sum_all(tensor_mul(x, x)), tensor_sum_all(tensor_mul_scalar(x, 2)))) == 0);
    CHECK(a.calls == 1 && a.sum == 32 && b.calls == 1);
    /* the second pass's hook sees the accumulated .grad */
    CHECK(tensor_backward(tensor_sum_all(x)) == 0);
    CHECK(a.calls == 2 && a.sum == 36);
    CHECK(tensor_remove_post_accumulate_grad_hook(x, hook_record, &a) == 0);
    CHECK(tensor_backward(tensor_sum_all(x)) == 0);
    CHECK(a.calls == 2 && b.calls == 3);
    /* tensor_autograd_grad accumulates nothing: no hook */
    tensor *g = NULL;
    CHECK(tensor_autograd_grad(1, (tensor *[]){tensor_sum_all(x)}, NULL, 1, &x, &g, false) == 0 && b.calls == 3);
    CHECK_BAD_INT(tensor_remove_post_accumulate_grad_hook(x, hook_record, &a) != 0, "tensor_remove_post_accumulate_grad_hook");
    CHECK_BAD_INT(tensor_register_post_accumulate_grad_hook(NULL, hook_record, &a) != 0, "tensor_register_post_accumulate_grad_hook");
    CHECK_BAD_INT(tensor_register_post_accumulate_grad_hook(x, NULL, &a) != 0, "tensor_register_post_accumulate_grad_hook");
    CHECK_BAD_INT(tensor_register_post_accumulate_grad_hook(tensor_mul_scalar(x, 2), hook_record, &a) != 0, "tensor_register_post_accumulate_grad_hook");
    CHECK_BAD_INT(tensor_register_post_accumulate_grad_hook(tensor_ones(1, (int64_t[]){2}, TENSOR_F32), hook_record, &a) != 0,
                  "tensor_register_post_accumulate_grad_hook");
    tensor_free(x); /* the hooks go with the leaf's accumulator */
}

/* Every memory request of tensor_ddp_new failing in turn: NULL with an error, nothing leaked
   (the suite's leak check), and the parameters untouched. */
TEST(dist_ddp_new_out_of_memory) {
    tensor *p[3] = {tensor_set_requires_grad(tensor_ones(2, (int64_t[]){4, 3}, TENSOR_F32), true),
                    tensor_set_requires_grad(tensor_ones(1, (int64_t[]){4}, TENSOR_BF16), true),
                    tensor_set_requires_grad(tensor_ones(1, (int64_t[]){2}, TENSOR_F64), true)};
    int64_t total = -1;
    for (int64_t at = 0; at <= total || total < 0; at++) {
        tensor_clear_error();
        tensor_test_fail_alloc(at);
        tensor_ddp *d = tensor_ddp_new(3, p, 16); /* 16 bytes: three buckets */
        int64_t used = tensor_test_alloc_count();
        tensor_test_fail_alloc(0);
        if (at == 0) { total = used; CHECK(d != NULL); }
        else CHECK_MSG(d != NULL || tensor_last_error() != NULL, "request %lld failed without an error", (long long)at);
        if (d) CHECK(tensor_ddp_sync(d) == 0);
        tensor_ddp_free(d);
    }
    CHECK(total > 5);
    double ones[12] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    for (int i = 0; i < 3; i++) CHECK_VALUES(p[i], ones, tensor_numel(p[i]), 0, 0);
    tensor_clear_error();
}
