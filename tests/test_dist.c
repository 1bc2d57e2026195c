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
