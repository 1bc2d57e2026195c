/* Sizes that do not fit: a shape whose sizes, strides or bytes overflow is refused with a message
   naming it, wherever it comes from (creation, views, the outputs of cat, repeat, pad, ...); an op
   whose result is empty returns at once whatever its other dims are (the sizes below make any
   loop over them run for hours, so a regression shows as a hang, not as a slow pass); an
   allocation the machine cannot give fails fast, without touching memory. */
#include "test.h"

#define P(k) ((int64_t)1 << (k))

/* expr (a tensor *) fails with a message naming fn and holding text (the shape at fault). */
#define CHECK_REFUSED(expr, fn, text) do {                                                                \
        tensor_clear_error();                                                                            \
        tensor *r_ = (expr);                                                                             \
        const char *e_ = tensor_last_error();                                                            \
        CHECK_MSG(r_ == NULL, "%s: expected NULL", #expr);                                               \
        CHECK_MSG(e_ && strstr(e_, fn) && strstr(e_, text), "%s: message '%s' should name %s and %s",   \
                  #expr, e_ ? e_ : "(none)", fn, text);                                                  \
        tensor_free(r_);                                                                                 \
        tensor_clear_error();                                                                            \
    } while (0)

/* t is non-NULL, has this shape and no error was recorded. */
#define CHECK_EMPTY(t, ...) do {                                                                           \
        tensor *e_t_ = (t);                                                                              \
        CHECK_MSG(e_t_ != NULL, "%s failed: %s", #t, tensor_last_error() ? tensor_last_error() : "(no message)"); \
        if (e_t_) { CHECK_SHAPE(e_t_, __VA_ARGS__); CHECK(tensor_numel(e_t_) == 0); }                    \
        tensor_clear_error();                                                                            \
    } while (0)

typedef tensor *(*create_fn)(int ndim, const int64_t *shape);
static tensor *mk_empty(int n, const int64_t *s) { return tensor_empty(n, s, TENSOR_F32); }
static tensor *mk_zeros(int n, const int64_t *s) { return tensor_zeros(n, s, TENSOR_F64); }
static tensor *mk_ones(int n, const int64_t *s) { return tensor_ones(n, s, TENSOR_I32); }
static tensor *mk_full(int n, const int64_t *s) { return tensor_full(n, s, 2, TENSOR_U8); }
static tensor *mk_rand(int n, const int64_t *s) { return tensor_rand(n, s, TENSOR_F16); }
static tensor *mk_randn(int n, const int64_t *s) { return tensor_randn(n, s, TENSOR_F32); }
static tensor *mk_randint(int n, const int64_t *s) { return tensor_randint(0, 5, n, s, TENSOR_I64); }
static tensor *mk_from_data(int n, const int64_t *s) { return tensor_from_data(NULL, n, s, TENSOR_BOOL); }
static const struct { create_fn f; const char *fn; } creators[] = {
    {mk_empty, "tensor_empty"}, {mk_zeros, "tensor_zeros"}, {mk_ones, "tensor_ones"}, {mk_full, "tensor_full"},
    {mk_rand, "tensor_rand"}, {mk_randn, "tensor_randn"}, {mk_randint, "tensor_randint"}, {mk_from_data, "tensor_from_data"}};
#define N_CREATORS (int)(sizeof creators / sizeof creators[0])

/* ---- the reproductions ---- */

/* [0, 2^53, 2^58] holds nothing, but its contiguous strides (2^111 for dim 0) overflow int64; the
   other order was already refused by the element count. */
TEST(overflow_randn_zeros_huge_empty_shape) {
    CHECK_REFUSED(tensor_randn(TENSOR_SHAPE(0, P(53), P(58)), TENSOR_F32), "tensor_randn", "[0, 9007199254740992, 288230376151711744]");
    CHECK_REFUSED(tensor_zeros(TENSOR_SHAPE(0, P(53), P(58)), TENSOR_F32), "tensor_zeros", "[0, 9007199254740992, 288230376151711744]");
    CHECK_REFUSED(tensor_randn(TENSOR_SHAPE(P(53), P(58), 0), TENSOR_F32), "tensor_randn", "[9007199254740992, 288230376151711744, 0]");
    CHECK_REFUSED(tensor_zeros(TENSOR_SHAPE(P(53), P(58), 0), TENSOR_F32), "tensor_zeros", "[9007199254740992, 288230376151711744, 0]");
}

/* cross_entropy of a [0, 2^59] input: no rows, and its work grain (rows per thread) must not
   overflow to 0 (a division by zero). The mean over no rows is NaN, as in PyTorch. */
TEST(overflow_cross_entropy_empty_huge_classes) {
    tensor *x = tensor_zeros(TENSOR_SHAPE(0, P(59)), TENSOR_F32);
    tensor *y = tensor_zeros(TENSOR_SHAPE(0), TENSOR_I64);
    CHECK(x && y);
    tensor *l = tensor_cross_entropy(x, y);
    CHECK(l && tensor_ndim(l) == 0 && isnan(tensor_item(l)));
    tensor *p = tensor_zeros(TENSOR_SHAPE(0, P(59)), TENSOR_F32); /* probability targets */
    tensor *lp = tensor_cross_entropy(x, p);
    CHECK(lp && isnan(tensor_item(lp)));
    tensor *n = tensor_nll_loss(x, y);
    CHECK(n && isnan(tensor_item(n)));
    /* [N, C, d] with a huge d */
    tensor *x3 = tensor_zeros(TENSOR_SHAPE(0, 5, P(50)), TENSOR_F32), *y3 = tensor_zeros(TENSOR_SHAPE(0, P(50)), TENSOR_I64);
    tensor *l3 = tensor_cross_entropy(x3, y3);
    CHECK(l3 && isnan(tensor_item(l3)));
    /* and its backward */
    tensor *xg = tensor_set_requires_grad(tensor_zeros(TENSOR_SHAPE(0, P(59)), TENSOR_F32), true);
    tensor *lg = tensor_cross_entropy(xg, y);
    CHECK(lg && tensor_backward(lg) == 0);
    CHECK(tensor_grad(xg) && tensor_numel(tensor_grad(xg)) == 0);
    CHECK(tensor_last_error() == NULL);
}

/* cumsum, tril and triu of [2^40, 0]: nothing to compute, but the old loops walked every one of
   the 2^40 (empty) rows. */
TEST(overflow_cumsum_tril_triu_empty_huge_rows) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(P(40), 0), TENSOR_F32);
    tensor *b = tensor_zeros(TENSOR_SHAPE(0, P(40)), TENSOR_I32);
    for (int d = -2; d < 2; d++) {
        CHECK_EMPTY(tensor_cumsum(a, d), TENSOR_SHAPE(P(40), 0));
        CHECK_EMPTY(tensor_cumsum(b, d), TENSOR_SHAPE(0, P(40)));
    }
    int64_t diags[] = {-3, 0, 5, INT64_MAX, INT64_MIN};
    for (int i = 0; i < 5; i++) {
        CHECK_EMPTY(tensor_tril(a, diags[i]), TENSOR_SHAPE(P(40), 0));
        CHECK_EMPTY(tensor_triu(a, diags[i]), TENSOR_SHAPE(P(40), 0));
        CHECK_EMPTY(tensor_tril(b, diags[i]), TENSOR_SHAPE(0, P(40)));
        CHECK_EMPTY(tensor_triu(b, diags[i]), TENSOR_SHAPE(0, P(40)));
    }
    tensor *c = tensor_zeros(TENSOR_SHAPE(P(20), P(20), 0), TENSOR_F64);
    CHECK_EMPTY(tensor_tril(c, 0), TENSOR_SHAPE(P(20), P(20), 0));
    CHECK_EMPTY(tensor_cumsum(c, 1), TENSOR_SHAPE(P(20), P(20), 0));
}

/* The byte strides of cat's output slabs ([0, 2^60] would need 2^62-byte strides at 4 bytes):
   refused with the output shape; the halves fit. */
TEST(overflow_cat_huge_empty) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(0, P(59)), TENSOR_F32);
    CHECK(a);
    tensor *two[2] = {a, a};
    CHECK_REFUSED(tensor_cat(2, two, 1), "tensor_cat", "[0, 576460752303423488]");
    /* sizes that sum within bounds, into a shape whose strides do not fit */
    tensor *q = tensor_zeros(TENSOR_SHAPE(0, 4, P(57)), TENSOR_F32);
    CHECK(q);
    tensor *qq[2] = {q, q};
    CHECK_REFUSED(tensor_cat(2, qq, 1), "tensor_cat", "[0, 8, 144115188075855872]");
    CHECK_EMPTY(tensor_cat(2, two, 0), TENSOR_SHAPE(0, P(59)));
    tensor *h = tensor_zeros(TENSOR_SHAPE(0, P(58)), TENSOR_F32);
    tensor *hh[2] = {h, h};
    CHECK_EMPTY(tensor_cat(2, hh, 1), TENSOR_SHAPE(0, P(59)));
    tensor *r = tensor_zeros(TENSOR_SHAPE(P(40), 0), TENSOR_F64);
    tensor *rr[3] = {r, r, r};
    CHECK_EMPTY(tensor_cat(3, rr, 0), TENSOR_SHAPE(3 * P(40), 0));
    CHECK_EMPTY(tensor_cat(3, rr, 1), TENSOR_SHAPE(P(40), 0));
    CHECK_EMPTY(tensor_stack(3, rr, 1), TENSOR_SHAPE(P(40), 3, 0));
    /* many pieces whose sizes sum past int64 */
    tensor *e = tensor_expand(tensor_zeros(TENSOR_SHAPE(0, 1), TENSOR_F32), 2, (const int64_t[]){0, P(58)});
    tensor *many[40];
    for (int i = 0; i < 40; i++) many[i] = e;
    CHECK_REFUSED(tensor_cat(40, many, 1), "tensor_cat", "dim 1");
}

/* ---- creation ---- */

TEST(overflow_creation_refuses_shapes_that_do_not_fit) {
    struct { int n; int64_t s[4]; const char *text; } bad[] = {
        {3, {0, P(53), P(58)}, "[0, 9007199254740992, 288230376151711744]"},
        {3, {P(53), P(58), 0}, "[9007199254740992, 288230376151711744, 0]"},
        {2, {0, P(62)}, "[0, 4611686018427387904]"},       /* its f32 strides take 2^64 bytes */
        {2, {P(61), 0}, "[2305843009213693952, 0]"},
        {3, {0, P(31), P(31)}, "[0, 2147483648, 2147483648]"},
        {2, {INT64_MAX, 0}, "[9223372036854775807, 0]"},
        {4, {0, INT64_MAX, INT64_MAX, 2}, "[0, 9223372036854775807, 9223372036854775807, 2]"},
        {2, {P(40), P(20)}, "[1099511627776, 1048576]"},   /* 2^60 elements */
    };
    for (int c = 0; c < N_CREATORS; c++)
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) CHECK_REFUSED(creators[c].f(bad[i].n, bad[i].s), creators[c].fn, bad[i].text);
    /* empty shapes whose strides fit are fine, with PyTorch's strides */
    for (int c = 0; c < N_CREATORS; c++) {
        tensor *t = creators[c].f(TENSOR_SHAPE(0, P(20), P(39)));
        CHECK_MSG(t != NULL, "%s: %s", creators[c].fn, tensor_last_error() ? tensor_last_error() : "");
        if (!t) continue;
        const int64_t *st = tensor_strides(t);
        CHECK(st[0] == P(59) && st[1] == P(39) && st[2] == 1 && tensor_numel(t) == 0);
        tensor *u = creators[c].f(TENSOR_SHAPE(P(59), 0));
        CHECK(u && tensor_strides(u)[0] == 1 && tensor_strides(u)[1] == 1);
    }
    CHECK_REFUSED(tensor_linspace(0, 1, P(61), TENSOR_F32), "tensor_linspace", "[2305843009213693952]");
    CHECK_REFUSED(tensor_eye(P(31), TENSOR_F32), "tensor_eye", "[2147483648, 2147483648]");
    CHECK_REFUSED(tensor_one_hot(tensor_zeros(TENSOR_SHAPE(0, P(40)), TENSOR_I64), P(40)), "tensor_one_hot", "[0, 1099511627776, 1099511627776]");
    CHECK_EMPTY(tensor_one_hot(tensor_zeros(TENSOR_SHAPE(0), TENSOR_I64), P(40)), TENSOR_SHAPE(0, P(40)));
    CHECK(tensor_last_error() == NULL);
}

/* ---- views ---- */

TEST(overflow_views_refuse_shapes_that_do_not_fit) {
    tensor *z = tensor_zeros(TENSOR_SHAPE(0), TENSOR_F32);
    CHECK_REFUSED(tensor_reshape(z, TENSOR_SHAPE(0, P(53), P(58))), "tensor_reshape", "[0, 9007199254740992, 288230376151711744]");
    CHECK_REFUSED(tensor_view(z, TENSOR_SHAPE(0, P(53), P(58))), "tensor_view", "[0, 9007199254740992, 288230376151711744]");
    CHECK_REFUSED(tensor_view(z, TENSOR_SHAPE(P(62), 0)), "tensor_view", "[4611686018427387904, 0]");
    CHECK_EMPTY(tensor_view(z, TENSOR_SHAPE(P(20), 0, P(39))), TENSOR_SHAPE(P(20), 0, P(39)));
    /* expand: stride 0 on the new sizes, but the sizes still must fit */
    tensor *col = tensor_zeros(TENSOR_SHAPE(0, 1), TENSOR_F64);
    CHECK_REFUSED(tensor_expand(col, TENSOR_SHAPE(0, P(61))), "tensor_expand", "[0, 2305843009213693952]");
    CHECK_REFUSED(tensor_expand(col, TENSOR_SHAPE(P(62), 0, 1)), "tensor_expand", "[4611686018427387904, 0, 1]");
    CHECK_REFUSED(tensor_expand(tensor_zeros(TENSOR_SHAPE(1), TENSOR_F32), TENSOR_SHAPE(P(40), P(40))), "tensor_expand", "[1099511627776, 1099511627776]");
    tensor *ex = tensor_expand(col, TENSOR_SHAPE(0, P(59)));
    CHECK_EMPTY(ex, TENSOR_SHAPE(0, P(59)));
    CHECK_EMPTY(tensor_contiguous(ex), TENSOR_SHAPE(0, P(59)));
    CHECK_EMPTY(tensor_clone(ex), TENSOR_SHAPE(0, P(59)));
    /* the other views of a large empty tensor: strides as PyTorch's, no overflow */
    tensor *e = tensor_zeros(TENSOR_SHAPE(0, P(30), P(29)), TENSOR_F32);
    CHECK(e);
    for (int d = 0; d <= 3; d++) {
        tensor *u = tensor_unsqueeze(e, d);
        CHECK(u && tensor_ndim(u) == 4 && tensor_shape(u)[d] == 1);
        if (u) CHECK(tensor_strides(u)[d] == (d < 3 ? tensor_shape(e)[d] * tensor_strides(e)[d] : 1));
    }
    CHECK_EMPTY(tensor_flatten(e, 1, 2), TENSOR_SHAPE(0, P(59)));
    CHECK_EMPTY(tensor_flatten(e, 0, 1), TENSOR_SHAPE(0, P(29)));
    CHECK_EMPTY(tensor_transpose(e, 0, 2), TENSOR_SHAPE(P(29), P(30), 0));
    CHECK_EMPTY(tensor_permute(e, 3, (const int[]){2, 0, 1}), TENSOR_SHAPE(P(29), 0, P(30)));
    CHECK_EMPTY(tensor_select(e, 1, P(30) - 1), TENSOR_SHAPE(0, P(29)));
    CHECK_EMPTY(tensor_slice(e, 2, 1, INT64_MAX, P(40)), TENSOR_SHAPE(0, P(30), 1));
    CHECK_EMPTY(tensor_squeeze(tensor_unsqueeze(e, 1), 1), TENSOR_SHAPE(0, P(30), P(29)));
    CHECK_EMPTY(tensor_reshape(tensor_transpose(e, 1, 2), TENSOR_SHAPE(-1, P(30))), TENSOR_SHAPE(0, P(30)));
    tensor *parts[4];
    CHECK(tensor_split(e, P(28), 2, parts, 4) == 2);
    /* a huge step on a short dim: one element, whatever stride the step would give */
    tensor *s = tensor_slice(tensor_arange(0, 5, 1, TENSOR_F32), 0, 1, INT64_MAX, P(62));
    CHECK(s && tensor_numel(s) == 1 && tensor_item(s) == 1);
    CHECK(tensor_item(tensor_sum_all(tensor_unsqueeze(s, 0))) == 1);
    CHECK(tensor_last_error() == NULL);
}

/* ---- ops whose result is empty, with huge other dims ---- */

TEST(overflow_empty_elementwise_and_reductions) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(P(40), 0), TENSOR_F32), *b = tensor_zeros(TENSOR_SHAPE(0, P(40)), TENSOR_F32);
    CHECK_EMPTY(tensor_add(a, a), TENSOR_SHAPE(P(40), 0));
    CHECK_EMPTY(tensor_exp(b), TENSOR_SHAPE(0, P(40)));
    CHECK_EMPTY(tensor_clamp(a, 0, 1), TENSOR_SHAPE(P(40), 0));
    CHECK_EMPTY(tensor_where(tensor_zeros(TENSOR_SHAPE(0, 1), TENSOR_BOOL), b, b), TENSOR_SHAPE(0, P(40)));
    CHECK_EMPTY(tensor_mul(tensor_zeros(TENSOR_SHAPE(0, 1), TENSOR_F32), tensor_expand(tensor_zeros(TENSOR_SHAPE(1), TENSOR_F32), TENSOR_SHAPE(1, P(40)))), TENSOR_SHAPE(0, P(40)));
    CHECK_EMPTY(tensor_to_dtype(a, TENSOR_F64), TENSOR_SHAPE(P(40), 0));
    CHECK_EMPTY(tensor_dropout(a, 0.5, true), TENSOR_SHAPE(P(40), 0));
    CHECK(tensor_add_(a, a) != NULL && tensor_fill_(b, 3) != NULL && tensor_zero_(a) != NULL);
    CHECK(tensor_copy_(b, b) != NULL && tensor_mul_scalar_(a, 2) != NULL);
    /* a over its huge dim 0, b over its huge dim 1: empty results */
    for (int d = 0; d < 2; d++) {
        tensor *t = d ? b : a;
        CHECK_EMPTY(tensor_sum(t, d, false), TENSOR_SHAPE(0));
        if (d) CHECK_EMPTY(tensor_mean(t, d, true), TENSOR_SHAPE(0, 1));
        else CHECK_EMPTY(tensor_mean(t, d, true), TENSOR_SHAPE(1, 0));
        CHECK_EMPTY(tensor_prod(t, d, false), TENSOR_SHAPE(0));
        CHECK_EMPTY(tensor_var(t, d, 1, false), TENSOR_SHAPE(0));
        CHECK_EMPTY(tensor_std(t, d, 1, false), TENSOR_SHAPE(0));
        CHECK_EMPTY(tensor_logsumexp(t, d, false), TENSOR_SHAPE(0));
        CHECK_EMPTY(tensor_norm(t, 2, d, false), TENSOR_SHAPE(0));
        CHECK_EMPTY(tensor_sum_dims(t, 1, &d, false), TENSOR_SHAPE(0));
    }
    CHECK_EMPTY(tensor_max(b, 1, false), TENSOR_SHAPE(0));
    CHECK_EMPTY(tensor_argmin(b, 1, true), TENSOR_SHAPE(0, 1));
    CHECK(tensor_item(tensor_sum_all(a)) == 0 && tensor_item(tensor_sum_all(b)) == 0);
    CHECK(isnan(tensor_item(tensor_mean_all(a))));
    CHECK(tensor_item(tensor_prod(tensor_flatten(b, 0, 1), 0, false)) == 1);
    CHECK(tensor_item(tensor_all(a)) == 1 && tensor_item(tensor_any(b)) == 0);
    CHECK(isnan(tensor_item(tensor_mse_loss(a, a))));
    CHECK(isnan(tensor_item(tensor_binary_cross_entropy_with_logits(b, b))));
    CHECK(tensor_last_error() == NULL);
}

TEST(overflow_empty_shape_ops) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(P(40), 0), TENSOR_F32), *b = tensor_zeros(TENSOR_SHAPE(0, P(40)), TENSOR_F32);
    CHECK_EMPTY(tensor_flip(a, 0), TENSOR_SHAPE(P(40), 0));
    CHECK_EMPTY(tensor_repeat(tensor_zeros(TENSOR_SHAPE(P(20), 0), TENSOR_F32), 2, (const int64_t[]){P(20), 3}), TENSOR_SHAPE(P(40), 0));
    CHECK_EMPTY(tensor_repeat(b, 3, (const int64_t[]){P(10), 5, 2}), TENSOR_SHAPE(P(10), 0, P(41)));
    CHECK_REFUSED(tensor_repeat(b, 2, (const int64_t[]){1, P(20)}), "tensor_repeat", "[0, 1099511627776]");
    CHECK_EMPTY(tensor_pad(b, 2, (const int64_t[]){1, 2}, 0), TENSOR_SHAPE(0, P(40) + 3));
    CHECK_EMPTY(tensor_pad(a, 4, (const int64_t[]){0, 0, 1, 1}, 0), TENSOR_SHAPE(P(40) + 2, 0));
    CHECK_EMPTY(tensor_pad(a, 4, (const int64_t[]){0, 0, -5, 3}, 0), TENSOR_SHAPE(P(40) - 2, 0));
    tensor *ia = tensor_zeros(TENSOR_SHAPE(P(40), 0), TENSOR_I64);
    CHECK_EMPTY(tensor_gather(a, 0, ia), TENSOR_SHAPE(P(40), 0));
    CHECK_EMPTY(tensor_gather(a, 1, ia), TENSOR_SHAPE(P(40), 0));
    CHECK_EMPTY(tensor_scatter_add(a, 1, ia, a), TENSOR_SHAPE(P(40), 0));
    CHECK_EMPTY(tensor_index_select(a, 0, tensor_zeros(TENSOR_SHAPE(3), TENSOR_I64)), TENSOR_SHAPE(3, 0));
    CHECK_EMPTY(tensor_index_select(a, 1, tensor_zeros(TENSOR_SHAPE(0), TENSOR_I64)), TENSOR_SHAPE(P(40), 0));
    CHECK_EMPTY(tensor_index_select(b, 0, tensor_zeros(TENSOR_SHAPE(0), TENSOR_I32)), TENSOR_SHAPE(0, P(40)));
    CHECK_EMPTY(tensor_masked_fill(a, tensor_zeros(TENSOR_SHAPE(1, 0), TENSOR_BOOL), 1), TENSOR_SHAPE(P(40), 0));
    CHECK(tensor_last_error() == NULL);
}

TEST(overflow_empty_nn_ops) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(P(40), 0), TENSOR_F32), *b = tensor_zeros(TENSOR_SHAPE(0, P(40)), TENSOR_F32);
    for (int d = 0; d < 2; d++) {
        CHECK_EMPTY(tensor_softmax(a, d), TENSOR_SHAPE(P(40), 0));
        CHECK_EMPTY(tensor_log_softmax(a, d), TENSOR_SHAPE(P(40), 0));
        CHECK_EMPTY(tensor_softmax(b, d), TENSOR_SHAPE(0, P(40)));
        CHECK_EMPTY(tensor_log_softmax(b, d), TENSOR_SHAPE(0, P(40)));
    }
    tensor *w0 = tensor_zeros(TENSOR_SHAPE(0), TENSOR_F32);
    CHECK_EMPTY(tensor_layer_norm(a, w0, w0, 1e-5), TENSOR_SHAPE(P(40), 0));
    CHECK_EMPTY(tensor_rms_norm(a, NULL, 1e-5), TENSOR_SHAPE(P(40), 0));
    CHECK_EMPTY(tensor_layer_norm(b, NULL, NULL, 1e-5), TENSOR_SHAPE(0, P(40)));
    /* matmul: an empty batch, and an empty output whose reduction dim is huge */
    CHECK_EMPTY(tensor_matmul(tensor_zeros(TENSOR_SHAPE(P(40), 0, 3), TENSOR_F32), tensor_zeros(TENSOR_SHAPE(3, 4), TENSOR_F32)), TENSOR_SHAPE(P(40), 0, 4));
    CHECK_EMPTY(tensor_matmul(tensor_zeros(TENSOR_SHAPE(P(40), 3, 0), TENSOR_F64), tensor_zeros(TENSOR_SHAPE(0, 0), TENSOR_F64)), TENSOR_SHAPE(P(40), 3, 0));
    tensor *bk = tensor_expand(tensor_zeros(TENSOR_SHAPE(1, 5), TENSOR_F32), TENSOR_SHAPE(P(40), 5));
    CHECK_EMPTY(tensor_matmul(b, bk), TENSOR_SHAPE(0, 5));
    CHECK_EMPTY(tensor_matmul(tensor_zeros(TENSOR_SHAPE(0, P(40)), TENSOR_I32), tensor_expand(tensor_zeros(TENSOR_SHAPE(1, 5), TENSOR_I32), TENSOR_SHAPE(P(40), 5))), TENSOR_SHAPE(0, 5));
    CHECK_EMPTY(tensor_linear(a, tensor_zeros(TENSOR_SHAPE(0, 0), TENSOR_F32), NULL), TENSOR_SHAPE(P(40), 0));
    /* conv and pool with a 0 batch and huge planes */
    tensor *x = tensor_zeros(TENSOR_SHAPE(0, 3, P(25), P(25)), TENSOR_F32);
    CHECK_EMPTY(tensor_conv2d(x, tensor_zeros(TENSOR_SHAPE(4, 3, 3, 3), TENSOR_F32), tensor_zeros(TENSOR_SHAPE(4), TENSOR_F32), 1, 0, 1, 1),
                TENSOR_SHAPE(0, 4, P(25) - 2, P(25) - 2));
    CHECK_EMPTY(tensor_conv1d(tensor_zeros(TENSOR_SHAPE(0, 3, P(50)), TENSOR_F32), tensor_zeros(TENSOR_SHAPE(4, 3, 3), TENSOR_F32), NULL, 1, 1, 1, 1),
                TENSOR_SHAPE(0, 4, P(50)));
    CHECK_EMPTY(tensor_max_pool2d(x, 2, 2, 0), TENSOR_SHAPE(0, 3, P(24), P(24)));
    CHECK_EMPTY(tensor_avg_pool2d(x, 3, 1, 1), TENSOR_SHAPE(0, 3, P(25), P(25)));
    /* embedding rows of nothing; attention over empty sequences */
    CHECK_EMPTY(tensor_embedding(tensor_zeros(TENSOR_SHAPE(5, 3), TENSOR_F32), tensor_zeros(TENSOR_SHAPE(P(40), 0), TENSOR_I64)), TENSOR_SHAPE(P(40), 0, 3));
    tensor *q = tensor_zeros(TENSOR_SHAPE(P(40), 0, 8), TENSOR_F32);
    CHECK_EMPTY(tensor_scaled_dot_product_attention(q, q, q, NULL, true), TENSOR_SHAPE(P(40), 0, 8));
    CHECK(tensor_last_error() == NULL);
}

/* Backward passes through empty tensors with huge dims. */
TEST(overflow_empty_backward) {
    tensor *a = tensor_set_requires_grad(tensor_zeros(TENSOR_SHAPE(P(40), 0), TENSOR_F32), true);
    tensor *w = tensor_set_requires_grad(tensor_zeros(TENSOR_SHAPE(0), TENSOR_F32), true);
    tensor *y = tensor_layer_norm(tensor_cumsum(tensor_softmax(a, 1), 0), w, w, 1e-5);
    tensor *l = tensor_sum_all(tensor_tril(tensor_mul_scalar(y, 2), 0));
    CHECK(l && tensor_backward(l) == 0);
    CHECK(tensor_grad(a) && tensor_numel(tensor_grad(a)) == 0 && tensor_shape(tensor_grad(a))[0] == P(40));
    CHECK(tensor_grad(w) && tensor_numel(tensor_grad(w)) == 0);
    tensor *x = tensor_set_requires_grad(tensor_zeros(TENSOR_SHAPE(0, 3, P(25), P(25)), TENSOR_F32), true);
    tensor *k = tensor_set_requires_grad(tensor_zeros(TENSOR_SHAPE(4, 3, 3, 3), TENSOR_F32), true);
    tensor *lc = tensor_sum_all(tensor_max_pool2d(tensor_conv2d(x, k, NULL, 1, 1, 1, 1), 2, 2, 0));
    CHECK(lc && tensor_backward(lc) == 0);
    CHECK(tensor_grad(k) && tensor_item(tensor_sum_all(tensor_abs(tensor_grad(k)))) == 0);
    CHECK(tensor_last_error() == NULL);
}

/* ---- allocation ---- */

/* 10^12 f32 elements (4 TB): a valid shape, but more than the machine has. Refused by the
   allocator at once (storage of 2 MiB and more is mapped, and mapping it is not touching it). */
TEST(overflow_allocation_beyond_the_machine) {
    const int64_t n = 1000000000000;
    tensor *one = tensor_ones(TENSOR_SHAPE(1), TENSOR_F64);
    int64_t h0 = tensor_live_handles(), b0 = tensor_live_bytes();
    tensor_clear_error();
    CHECK(tensor_empty(1, &n, TENSOR_F32) == NULL);
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "tensor_empty") && strstr(tensor_last_error(), "out of memory"));
    tensor_clear_error();
    CHECK_BAD(tensor_zeros(TENSOR_SHAPE(1000000, 1000000), TENSOR_F32), "tensor_zeros");
    tensor *big = tensor_expand(one, 1, &n); /* a view: no memory */
    CHECK(big != NULL);
    CHECK_BAD(tensor_contiguous(big), "tensor_contiguous");
    tensor_free(big);
    CHECK(tensor_live_handles() == h0 && tensor_live_bytes() == b0);
    CHECK_NEAR(tensor_item(tensor_sum_all(tensor_ones(TENSOR_SHAPE(3), TENSOR_F32))), 3, 0, 0);
}
