/* Bugs the API fuzzer (tests/fuzz/fuzz_api.c) found, one test each, named as its input in
   tests/fuzz/regressions/ (which make test also replays). */
#include "test.h"

/* (end - start) * step underflowed to -0 and passed the sign check; the count, -inf, was cast
   to int64_t. */
TEST(fuzz_arange_sign_product_underflow) {
    CHECK_BAD(tensor_arange(0, -1e-10, 1e-320, TENSOR_F32), "tensor_arange");
    CHECK_BAD(tensor_arange(0, 1e-10, -1e-320, TENSOR_F32), "tensor_arange");
    tensor *t = tensor_arange(0, 1, 0.25, TENSOR_F32);
    CHECK_VALUES(t, ((const double[]){0, 0.25, 0.5, 0.75}), 4, 0, 0);
    tensor_free(t);
}

/* num_classes -1 takes the largest value + 1, which overflowed for INT64_MAX. */
TEST(fuzz_one_hot_class_int64_max) {
    tensor *i = tensor_from_data((const int64_t[]){1, INT64_MAX}, TENSOR_SHAPE(2), TENSOR_I64);
    CHECK_BAD(tensor_one_hot(i, -1), "tensor_one_hot");
    CHECK_BAD(tensor_one_hot(i, 3), "tensor_one_hot");
    tensor_free(i);
}

/* An empty batch on the reference path divided by the size-0 dim while seeking row 0. The mean
   over no rows is NaN, as PyTorch's. */
TEST(fuzz_cross_entropy_empty_batch_div_zero) {
    for (int ref = 0; ref < 2; ref++) {
        bool prev = tensor_set_reference_kernels(ref);
        tensor *x = tensor_zeros(TENSOR_SHAPE(0, 3), TENSOR_F32), *y = tensor_zeros(TENSOR_SHAPE(0), TENSOR_I64);
        tensor *l = tensor_cross_entropy(x, y);
        CHECK_MSG(l && isnan(tensor_item(l)), "reference kernels %d: %s", ref, l ? "not NaN" : tensor_last_error());
        tensor *s = tensor_softmax(x, 1), *ls = tensor_log_softmax(x, -1);
        CHECK(s && ls && tensor_numel(s) == 0 && tensor_numel(ls) == 0);
        tensor_free(l); tensor_free(s); tensor_free(ls); tensor_free(x); tensor_free(y);
        tensor_clear_error();
        tensor_set_reference_kernels(prev);
    }
}

/* An empty index skips the shape check (as in PyTorch), so src may have fewer dims than index;
   the kernels still read src's stride of index's last dim, past src's dims. An empty index now
   returns before touching any geometry: scatter_add gives t, gather an empty result. */
TEST(fuzz_scatter_add_empty_index_src_fewer_dims) {
    tensor *t = tensor_arange(0, 6, 1, TENSOR_F32), *t2 = tensor_reshape(t, TENSOR_SHAPE(2, 3));
    tensor *index = tensor_zeros(TENSOR_SHAPE(0, 3), TENSOR_I64), *src = tensor_ones(TENSOR_SHAPE(4), TENSOR_F32);
    tensor *r = tensor_scatter_add(t2, 1, index, src);
    CHECK_MSG(r != NULL, "%s", tensor_last_error());
    CHECK_VALUES(r, ((const double[]){0, 1, 2, 3, 4, 5}), 6, 0, 0);
    tensor *g = tensor_gather(src, 0, index);
    CHECK(g == NULL || tensor_numel(g) == 0);
    tensor_clear_error();
    tensor_free(r); tensor_free(g); tensor_free(src); tensor_free(index); tensor_free(t2); tensor_free(t);
}
