/* Inputs PyTorch accepts that tensor.h once refused: integer logsumexp (an f32 result), integer
   convolutions (exact, wrapping modulo 2^64 as PyTorch's), int64 avg_pool2d (truncating
   division), masked_fill with a mask larger than its input, norms of negative order. Expected
   values from PyTorch 1.13 (torch.logsumexp, F.conv1d, F.conv2d, F.avg_pool2d, torch.masked_fill,
   torch.norm). */
#include "test.h"

static tensor *ints(tensor_dtype dt, int nd, const int64_t *shape, const double *v) { return test_tensor(dt, nd, shape, v); }

TEST(compat_logsumexp_of_integers_is_f32) {
    static const double x[6] = {1, 2, 3, 4, 5, 9}, want[2] = {3.4076058864593506, 9.024744987487793};
    tensor_dtype dts[3] = {TENSOR_I64, TENSOR_I32, TENSOR_U8};
    for (int d = 0; d < 3; d++) {
        tensor *r = tensor_logsumexp(ints(dts[d], TENSOR_SHAPE(2, 3), x), 1, false);
        CHECK(r && tensor_get_dtype(r) == TENSOR_F32);
        CHECK_VALUES(r, want, 2, 1e-6, 1e-6);
    }
    static const double b[3] = {1, 0, 1}, wb[1] = {1.861994743347168};
    tensor *rb = tensor_logsumexp(ints(TENSOR_BOOL, TENSOR_SHAPE(3), b), 0, true);
    CHECK(rb && tensor_get_dtype(rb) == TENSOR_F32);
    CHECK_SHAPE(rb, TENSOR_SHAPE(1));
    CHECK_VALUES(rb, wb, 1, 1e-6, 1e-6);
    CHECK_BAD(tensor_logsumexp(ints(TENSOR_I64, TENSOR_SHAPE(3), x), 1, false), "tensor_logsumexp");
}

TEST(compat_conv1d_of_integers) {
    static const double x[5] = {1, -2, 3, 4, 5}, w[6] = {2, 1, -1, 0, 3, 1}, b[2] = {10, -1};
    static const double want[10] = {13, 7, 5, 15, 23, 0, -4, 12, 16, 14};
    tensor_dtype dts[3] = {TENSOR_I64, TENSOR_I32, TENSOR_F64};
    for (int d = 0; d < 3; d++) {
        tensor *r = tensor_conv1d(ints(dts[d], TENSOR_SHAPE(1, 1, 5), x), ints(dts[d], TENSOR_SHAPE(2, 1, 3), w), ints(dts[d], TENSOR_SHAPE(2), b), 1, 1, 1, 1);
        CHECK(r && tensor_get_dtype(r) == dts[d]);
        CHECK_SHAPE(r, TENSOR_SHAPE(1, 2, 5));
        CHECK_VALUES(r, want, 10, 0, 0);
    }
    /* 3 * 2^62 + 2^62 = 2^64 wraps to 0, as in PyTorch */
    int64_t big[2] = {(int64_t)1 << 62, (int64_t)1 << 62}, k[2] = {3, 1};
    tensor *r = tensor_conv1d(tensor_from_data(big, TENSOR_SHAPE(1, 1, 2), TENSOR_I64), tensor_from_data(k, TENSOR_SHAPE(1, 1, 2), TENSOR_I64), NULL, 1, 0, 1, 1);
    int64_t got = -1;
    CHECK(r && tensor_copy_to(r, &got, sizeof got) == 0 && got == 0);
    CHECK_BAD(tensor_conv1d(ints(TENSOR_BOOL, TENSOR_SHAPE(1, 1, 5), x), ints(TENSOR_BOOL, TENSOR_SHAPE(1, 1, 3), w), NULL, 1, 0, 1, 1), "tensor_conv1d");
    CHECK_BAD(tensor_conv1d(ints(TENSOR_I64, TENSOR_SHAPE(1, 1, 5), x), ints(TENSOR_I32, TENSOR_SHAPE(1, 1, 3), w), NULL, 1, 0, 1, 1), "tensor_conv1d");
}

TEST(compat_conv2d_of_integers) {
    double x[18], w[8] = {1, 2, 3, 4, -1, 0, 2, 1};
    for (int i = 0; i < 18; i++) x[i] = i - 5;
    static const double want[4] = {-5, 7, 31, 43};
    tensor *r = tensor_conv2d(ints(TENSOR_I64, TENSOR_SHAPE(1, 2, 3, 3), x), ints(TENSOR_I64, TENSOR_SHAPE(1, 2, 2, 2), w), NULL, 1, 0, 1, 1);
    CHECK(r && tensor_get_dtype(r) == TENSOR_I64);
    CHECK_SHAPE(r, TENSOR_SHAPE(1, 1, 2, 2));
    CHECK_VALUES(r, want, 4, 0, 0);
    /* int32, padded, unbatched, and a transposed (non-contiguous) input */
    double y[9], k[4] = {1, -1, 2, 0};
    for (int i = 0; i < 9; i++) y[i] = i;
    static const double want2[16] = {0, 0, 2, 4, 0, 5, 7, 12, -3, 11, 13, 21, -6, -1, -1, 8};
    tensor *yi = ints(TENSOR_I32, TENSOR_SHAPE(1, 3, 3), y);
    tensor *r2 = tensor_conv2d(yi, ints(TENSOR_I32, TENSOR_SHAPE(1, 1, 2, 2), k), NULL, 1, 1, 1, 1);
    CHECK(r2 && tensor_get_dtype(r2) == TENSOR_I32);
    CHECK_VALUES(r2, want2, 16, 0, 0);
    tensor *yt = tensor_transpose(tensor_contiguous(tensor_transpose(yi, 1, 2)), 1, 2);
    CHECK(yt && !tensor_is_contiguous(yt));
    CHECK_VALUES(tensor_conv2d(yt, ints(TENSOR_I32, TENSOR_SHAPE(1, 1, 2, 2), k), NULL, 1, 1, 1, 1), want2, 16, 0, 0);
    /* the reference kernels give the same */
    tensor_set_reference_kernels(true);
    CHECK_VALUES(tensor_conv2d(yt, ints(TENSOR_I32, TENSOR_SHAPE(1, 1, 2, 2), k), NULL, 1, 1, 1, 1), want2, 16, 0, 0);
    tensor_set_reference_kernels(false);
}

TEST(compat_avg_pool2d_of_int64) {
    static const double x[16] = {1, 2, 3, -7, 4, 5, 6, -1, 7, 8, 9, -20, 1, 1, 1, 1};
    static const double want[25] = {0, 0, 1, -1, -1, 1, 3, 4, 0, -2, 2, 6, 7, -1, -5, 2, 4, 4, -2, -4, 0, 0, 0, 0, 0};
    static const double want2[4] = {3, 0, 4, -2}; /* -2.75 truncates to -2 */
    tensor *xi = ints(TENSOR_I64, TENSOR_SHAPE(1, 4, 4), x);
    tensor *r = tensor_avg_pool2d(xi, 2, 1, 1);
    CHECK(r && tensor_get_dtype(r) == TENSOR_I64);
    CHECK_SHAPE(r, TENSOR_SHAPE(1, 5, 5));
    CHECK_VALUES(r, want, 25, 0, 0);
    CHECK_VALUES(tensor_avg_pool2d(xi, 2, 0, 0), want2, 4, 0, 0);
    CHECK_VALUES(tensor_avg_pool2d(tensor_transpose(tensor_contiguous(tensor_transpose(xi, 1, 2)), 1, 2), 2, 0, 0), want2, 4, 0, 0);
    /* PyTorch refuses the other integer dtypes, and max_pool2d of int64 */
    CHECK_BAD(tensor_avg_pool2d(ints(TENSOR_I32, TENSOR_SHAPE(1, 4, 4), x), 2, 0, 0), "tensor_avg_pool2d");
    CHECK_BAD(tensor_max_pool2d(xi, 2, 0, 0), "tensor_max_pool2d");
}

TEST(compat_masked_fill_broadcasts_the_input) {
    static const double x[3] = {1, 2, 3}, m[6] = {1, 0, 1, 0, 0, 1}, want[6] = {-1, 2, -1, 1, 2, -1};
    tensor *xl = tensor_set_requires_grad(test_tensor(TENSOR_F64, TENSOR_SHAPE(3), x), true);
    tensor *r = tensor_masked_fill(xl, test_tensor(TENSOR_BOOL, TENSOR_SHAPE(2, 3), m), -1);
    CHECK_SHAPE(r, TENSOR_SHAPE(2, 3));
    CHECK_VALUES(r, want, 6, 0, 0);
    CHECK(tensor_backward(tensor_sum_all(r)) == 0);
    static const double g[3] = {1, 2, 0}; /* PyTorch's x.grad */
    CHECK_VALUES(tensor_grad(xl), g, 3, 0, 0);
    /* both broadcast: [2, 1] and [3] give [2, 3] */
    static const double c[2] = {1, 2}, m2[3] = {1, 0, 1}, want2[6] = {0.5, 1, 0.5, 0.5, 2, 0.5};
    tensor *r2 = tensor_masked_fill(test_tensor(TENSOR_F32, TENSOR_SHAPE(2, 1), c), test_tensor(TENSOR_BOOL, TENSOR_SHAPE(3), m2), 0.5);
    CHECK_SHAPE(r2, TENSOR_SHAPE(2, 3));
    CHECK_VALUES(r2, want2, 6, 0, 0);
    CHECK_BAD(tensor_masked_fill(test_tensor(TENSOR_F32, TENSOR_SHAPE(2), c), test_tensor(TENSOR_BOOL, TENSOR_SHAPE(3), m2), 0), "tensor_masked_fill");
}

TEST(compat_norm_of_negative_order) {
    static const double x[3] = {1, 2, 3}, z[3] = {0, 2, 3};
    tensor *t = test_tensor(TENSOR_F32, TENSOR_SHAPE(3), x);
    static const double ps[5] = {-1, -2, -0.5, -3.5, 0};
    static const double want[5] = {0.5454545617103577, 0.8571428656578064, 0.1916169673204422, 0.9706800580024719, 3};
    for (int i = 0; i < 5; i++) CHECK_NEAR(tensor_item(tensor_norm(t, ps[i], 0, false)), want[i], 1e-6, 1e-6);
    CHECK_NEAR(tensor_item(tensor_norm(t, -INFINITY, 0, false)), 1, 0, 0);
    tensor *tz = test_tensor(TENSOR_F64, TENSOR_SHAPE(3), z);
    CHECK_NEAR(tensor_item(tensor_norm(tz, -1, 0, false)), 0, 0, 0); /* a zero element: 0 */
    CHECK_NEAR(tensor_item(tensor_norm(tz, -2, 0, false)), 0, 0, 0);
    CHECK_NEAR(tensor_item(tensor_norm(tz, 0, 0, false)), 2, 0, 0); /* the count of non-zeros */
    /* the gradient (PyTorch's x.grad of torch.norm(x, p=-1.5, dim=1).sum()) */
    static const double x2[6] = {1, -2, 4, 0.5, 3, -1};
    static const double n2[2] = {0.7705047593161761, 0.3954753865015903};
    static const double g2[6] = {0.5211206874355812, -0.09212199297557368, 0.01628502148236191, 0.5563827248061518, 0.0063095082290482605, -0.09835549941136966};
    tensor *xl = tensor_set_requires_grad(test_tensor(TENSOR_F64, TENSOR_SHAPE(2, 3), x2), true);
    tensor *n = tensor_norm(xl, -1.5, 1, false);
    CHECK_VALUES(n, n2, 2, 1e-14, 1e-13);
    CHECK(tensor_backward(tensor_sum_all(n)) == 0);
    CHECK_VALUES(tensor_grad(xl), g2, 6, 1e-14, 1e-12);
    /* no identity: an empty dim is an error for p < 0, as in PyTorch */
    CHECK_BAD(tensor_norm(tensor_zeros(TENSOR_SHAPE(2, 0), TENSOR_F32), -1, 1, false), "tensor_norm");
    CHECK_BAD(tensor_norm(t, NAN, 0, false), "tensor_norm");
}
