/* Gradient checks of the linear-algebra, neural-network and loss ops (tests/test_autograd.c sweeps
   them through the gradcheck_NAME functions below), their double backward (GRADGRADCHECK), and
   cross_entropy's gradient against composed forms and the closed form (softmax - onehot) / N. */
#include "test.h"

static tensor *i64_tensor(int nd, const int64_t *shape, const double *v) { return test_tensor(TENSOR_I64, nd, shape, v); }

/* ---- matmul ---- */

/* ta / tb: the leaf holds the operand transposed (last two dims), f transposes it back, so the
   op sees a non-contiguous operand. */
typedef struct { int ta, tb; } mm_ctx;
static tensor *f_matmul(tensor *const *in, const void *vctx) {
    const mm_ctx *c = (const mm_ctx *)vctx;
    tensor *a = c && c->ta ? tensor_transpose(in[0], -1, -2) : in[0];
    tensor *b = c && c->tb ? tensor_transpose(in[1], -1, -2) : in[1];
    return tensor_matmul(a, b);
}

static void matmul_case(int nda, const int64_t *sa, int ndb, const int64_t *sb, int ta, int tb, bool second) {
    mm_ctx c = {ta, tb};
    tensor *in[2] = {test_leaf(nda, sa, -1, 1), test_leaf(ndb, sb, -1, 1)};
    CHECK(GRADCHECK(f_matmul, &c, 2, in) == tensor_numel(in[0]) + tensor_numel(in[1]));
    if (second) CHECK(GRADGRADCHECK(f_matmul, &c, 2, in) > 0);
}

void gradcheck_matmul(void) {
    matmul_case(TENSOR_SHAPE(3), TENSOR_SHAPE(3), 0, 0, false);          /* 1-D x 1-D: a dot product */
    matmul_case(TENSOR_SHAPE(3), TENSOR_SHAPE(3, 4), 0, 0, false);       /* 1-D x 2-D */
    matmul_case(TENSOR_SHAPE(3, 4), TENSOR_SHAPE(4), 0, 0, false);       /* 2-D x 1-D */
    matmul_case(TENSOR_SHAPE(3, 4), TENSOR_SHAPE(4, 2), 0, 0, false);    /* 2-D */
    matmul_case(TENSOR_SHAPE(2, 1, 3, 4), TENSOR_SHAPE(5, 4, 2), 0, 0, false); /* batch broadcast [2,1]x[5] */
    matmul_case(TENSOR_SHAPE(4), TENSOR_SHAPE(2, 4, 3), 0, 0, false);    /* 1-D x batched */
    matmul_case(TENSOR_SHAPE(2, 3, 4), TENSOR_SHAPE(4), 0, 0, false);    /* batched x 1-D */
    matmul_case(TENSOR_SHAPE(4, 3), TENSOR_SHAPE(4, 2), 1, 0, false);    /* a^T @ b */
    matmul_case(TENSOR_SHAPE(3, 4), TENSOR_SHAPE(2, 4), 0, 1, false);    /* a @ b^T */
    matmul_case(TENSOR_SHAPE(2, 4, 3), TENSOR_SHAPE(2, 4), 1, 1, false); /* both transposed, batch broadcast */
}

TEST(grad_matmul_double_backward) {
    matmul_case(TENSOR_SHAPE(3), TENSOR_SHAPE(3), 0, 0, true);
    matmul_case(TENSOR_SHAPE(3), TENSOR_SHAPE(3, 4), 0, 0, true);
    matmul_case(TENSOR_SHAPE(3, 4), TENSOR_SHAPE(4), 0, 0, true);
    matmul_case(TENSOR_SHAPE(3, 4), TENSOR_SHAPE(4, 2), 0, 0, true);
    matmul_case(TENSOR_SHAPE(2, 1, 3, 4), TENSOR_SHAPE(5, 4, 2), 0, 0, true);
    matmul_case(TENSOR_SHAPE(4, 3), TENSOR_SHAPE(2, 4), 1, 1, true);
}

/* A direct check of the matmul gradient against the formula gA = G B^T, gB = A^T G written in
   loops (G = ones), so a symmetric error in both the derivative and the numeric check cannot hide. */
TEST(grad_matmul_closed_form) {
    tensor *a = test_leaf(TENSOR_SHAPE(3, 4), -1, 1), *b = test_leaf(TENSOR_SHAPE(4, 2), -1, 1);
    CHECK(tensor_backward(tensor_sum_all(tensor_matmul(a, b))) == 0);
    double *av = test_values(a), *bv = test_values(b), ga[12], gb[8];
    for (int i = 0; i < 3; i++)
        for (int k = 0; k < 4; k++) { ga[i * 4 + k] = 0; for (int j = 0; j < 2; j++) ga[i * 4 + k] += bv[k * 2 + j]; }
    for (int k = 0; k < 4; k++)
        for (int j = 0; j < 2; j++) { gb[k * 2 + j] = 0; for (int i = 0; i < 3; i++) gb[k * 2 + j] += av[i * 4 + k]; }
    CHECK_VALUES(tensor_grad(a), ga, 12, 1e-12, 1e-12);
    CHECK_VALUES(tensor_grad(b), gb, 8, 1e-12, 1e-12);
    free(av);
    free(bv);
}

/* An operand stored transposed gets its gradient in the same layout (PyTorch's mm backward), so
   linear's weight, used as weight^T, gets a contiguous gradient that needs no strided copy into
   its .grad; the values are the closed forms in both operand positions. */
TEST(grad_matmul_transposed_operands) {
    for (int which = 0; which < 2; which++) {
        /* which 0: y = a @ b^T with a [3, 5]; which 1: y = a^T @ b^T with a [5, 3] (both transposed) */
        tensor *a = which == 0 ? test_leaf(TENSOR_SHAPE(3, 5), -1, 1) : test_leaf(TENSOR_SHAPE(5, 3), -1, 1);
        tensor *b = test_leaf(TENSOR_SHAPE(4, 5), -1, 1);
        tensor *w = test_random(TENSOR_F64, TENSOR_SHAPE(3, 4), -1, 1);
        tensor *y = tensor_matmul(which == 0 ? a : tensor_transpose(a, 0, 1), tensor_transpose(b, 0, 1));
        CHECK(tensor_backward(tensor_sum_all(tensor_mul(y, w))) == 0);
        double *av = test_values(a), *bv = test_values(b), *wv = test_values(w), ga[15], gb[20];
        /* y[i][j] = sum_k A[i][k] b[j][k], A = a (which 0) or a^T (which 1) */
        for (int i = 0; i < 3; i++)
            for (int k = 0; k < 5; k++) {
                double s = 0;
                for (int j = 0; j < 4; j++) s += wv[i * 4 + j] * bv[j * 5 + k];
                if (which == 0) ga[i * 5 + k] = s; else ga[k * 3 + i] = s;
            }
        for (int j = 0; j < 4; j++)
            for (int k = 0; k < 5; k++) {
                gb[j * 5 + k] = 0;
                for (int i = 0; i < 3; i++) gb[j * 5 + k] += wv[i * 4 + j] * (which == 0 ? av[i * 5 + k] : av[k * 3 + i]);
            }
        CHECK_VALUES(tensor_grad(a), ga, 15, 1e-12, 1e-12);
        CHECK_VALUES(tensor_grad(b), gb, 20, 1e-12, 1e-12);
        /* the layout itself, as the derivative hands it on (a leaf's .grad is made contiguous either
           way, so look at tensor_autograd_grad's results, which are not copied) */
        tensor *y2 = tensor_matmul(which == 0 ? a : tensor_transpose(a, 0, 1), tensor_transpose(b, 0, 1));
        tensor *outs[1] = {tensor_sum_all(tensor_mul(y2, w))}, *ins[2] = {a, b}, *got[2] = {NULL, NULL};
        CHECK(tensor_autograd_grad(1, outs, NULL, 2, ins, got, false) == 0);
        CHECK(got[1] && tensor_is_contiguous(got[1]));
        if (which == 1) CHECK(got[0] && tensor_is_contiguous(got[0]));
        tensor_free(got[0]);
        tensor_free(got[1]);
        free(av);
        free(bv);
        free(wv);
    }
}

/* ---- linear ---- */

typedef struct { bool bias; bool tx; } lin_ctx;
static tensor *f_linear(tensor *const *in, const void *vctx) {
    const lin_ctx *c = (const lin_ctx *)vctx;
    tensor *x = c->tx ? tensor_transpose(in[0], 0, 1) : in[0];
    return tensor_linear(x, in[1], c->bias ? in[2] : NULL);
}

void gradcheck_linear(void) {
    lin_ctx with = {true, false}, without = {false, false}, tr = {true, true};
    {   /* 3-D x with bias */
        tensor *in[3] = {test_leaf(TENSOR_SHAPE(2, 3, 4), -1, 1), test_leaf(TENSOR_SHAPE(5, 4), -1, 1), test_leaf(TENSOR_SHAPE(5), -1, 1)};
        CHECK(GRADCHECK(f_linear, &with, 3, in) == 24 + 20 + 5);
    }
    {   /* 3-D x without bias */
        tensor *in[2] = {test_leaf(TENSOR_SHAPE(2, 3, 4), -1, 1), test_leaf(TENSOR_SHAPE(5, 4), -1, 1)};
        CHECK(GRADCHECK(f_linear, &without, 2, in) == 24 + 20);
    }
    {   /* 2-D and 1-D x */
        tensor *in[3] = {test_leaf(TENSOR_SHAPE(3, 4), -1, 1), test_leaf(TENSOR_SHAPE(2, 4), -1, 1), test_leaf(TENSOR_SHAPE(2), -1, 1)};
        CHECK(GRADCHECK(f_linear, &with, 3, in) > 0);
        tensor *in1[3] = {test_leaf(TENSOR_SHAPE(4), -1, 1), in[1], in[2]};
        CHECK(GRADCHECK(f_linear, &with, 3, in1) > 0);
    }
    {   /* a 1-D weight [in]: the output drops the feature dim; bias 0-dim */
        tensor *in[3] = {test_leaf(TENSOR_SHAPE(2, 3, 4), -1, 1), test_leaf(TENSOR_SHAPE(4), -1, 1), test_leaf(0, NULL, -1, 1)};
        CHECK(GRADCHECK(f_linear, &with, 3, in) == 24 + 4 + 1);
        CHECK(GRADCHECK(f_linear, &without, 2, in) == 24 + 4);
    }
    {   /* a transposed (non-contiguous) x: the leaf is [in, batch] */
        tensor *in[3] = {test_leaf(TENSOR_SHAPE(4, 3), -1, 1), test_leaf(TENSOR_SHAPE(2, 4), -1, 1), test_leaf(TENSOR_SHAPE(2), -1, 1)};
        CHECK(GRADCHECK(f_linear, &tr, 3, in) > 0);
    }
}

/* ---- softmax, log_softmax ---- */

typedef struct { int dim; bool transposed; } dim_ctx;
static tensor *f_softmax(tensor *const *in, const void *vctx) {
    const dim_ctx *c = (const dim_ctx *)vctx;
    return tensor_softmax(c->transposed ? tensor_transpose(in[0], 0, 1) : in[0], c->dim);
}
static tensor *f_log_softmax(tensor *const *in, const void *vctx) {
    const dim_ctx *c = (const dim_ctx *)vctx;
    return tensor_log_softmax(c->transposed ? tensor_transpose(in[0], 0, 1) : in[0], c->dim);
}

static void softmax_cases(test_fn_of f, bool second) {
    static const dim_ctx dims2[] = {{0, false}, {1, false}, {-1, false}, {-2, false}, {1, true}};
    for (size_t i = 0; i < sizeof dims2 / sizeof dims2[0]; i++) {
        tensor *in[1] = {test_leaf(TENSOR_SHAPE(3, 4), -2, 2)};
        CHECK(GRADCHECK(f, &dims2[i], 1, in) == 12);
        if (second) CHECK(GRADGRADCHECK(f, &dims2[i], 1, in) == 12);
    }
    static const dim_ctx dims3[] = {{0, false}, {1, false}, {2, false}, {-1, true}};
    for (size_t i = 0; i < sizeof dims3 / sizeof dims3[0]; i++) {
        tensor *in[1] = {test_leaf(TENSOR_SHAPE(2, 3, 3), -2, 2)};
        CHECK(GRADCHECK(f, &dims3[i], 1, in) == 18);
        if (second) CHECK(GRADGRADCHECK(f, &dims3[i], 1, in) == 18);
    }
    {   /* 1-D and 0-dim (softmax of one element is the constant 1: zero gradient) */
        dim_ctx d0 = {0, false};
        tensor *in[1] = {test_leaf(TENSOR_SHAPE(5), -3, 3)};
        CHECK(GRADCHECK(f, &d0, 1, in) == 5);
        tensor *in0[1] = {test_leaf(0, NULL, -1, 1)};
        CHECK(GRADCHECK(f, &d0, 1, in0) == 1);
    }
}
void gradcheck_softmax(void) { softmax_cases(f_softmax, false); }
void gradcheck_log_softmax(void) { softmax_cases(f_log_softmax, false); }
TEST(grad_softmax_double_backward) { softmax_cases(f_softmax, true); }
TEST(grad_log_softmax_double_backward) { softmax_cases(f_log_softmax, true); }

/* ---- layer_norm, rms_norm ---- */

/* which: bit 0 weight, bit 1 bias; the inputs are x, then weight and bias as present */
typedef struct { int which; double eps; } norm_ctx;
static tensor *f_layer_norm(tensor *const *in, const void *vctx) {
    const norm_ctx *c = (const norm_ctx *)vctx;
    int k = 1;
    tensor *w = c->which & 1 ? in[k++] : NULL;
    tensor *b = c->which & 2 ? in[k++] : NULL;
    return tensor_layer_norm(in[0], w, b, c->eps);
}
static tensor *f_rms_norm(tensor *const *in, const void *vctx) {
    const norm_ctx *c = (const norm_ctx *)vctx;
    return tensor_rms_norm(in[0], c->which & 1 ? in[1] : NULL, c->eps);
}
/* layer_norm of a non-contiguous x: the leaf is [C, N], transposed inside f */
static tensor *f_layer_norm_t(tensor *const *in, const void *vctx) {
    (void)vctx;
    return tensor_layer_norm(tensor_transpose(in[0], 0, 1), in[1], in[2], 1e-5);
}

static void layer_norm_cases(bool second) {
    for (int which = 0; which < 4; which++) {
        norm_ctx c = {which, 1e-5};
        tensor *in[3] = {test_leaf(TENSOR_SHAPE(3, 5), -2, 2), NULL, NULL};
        int k = 1;
        if (which & 1) in[k++] = test_leaf(TENSOR_SHAPE(5), 0.5, 1.5);
        if (which & 2) in[k++] = test_leaf(TENSOR_SHAPE(5), -1, 1);
        CHECK(GRADCHECK(f_layer_norm, &c, k, in) == 15 + 5 * (k - 1));
        if (second) CHECK(GRADGRADCHECK(f_layer_norm, &c, k, in) > 0);
    }
    {   /* 3-D x, a large eps (it enters the gradient) */
        norm_ctx c = {3, 0.5};
        tensor *in[3] = {test_leaf(TENSOR_SHAPE(2, 2, 4), -2, 2), test_leaf(TENSOR_SHAPE(4), 0.5, 1.5), test_leaf(TENSOR_SHAPE(4), -1, 1)};
        CHECK(GRADCHECK(f_layer_norm, &c, 3, in) == 16 + 8);
        if (second) CHECK(GRADGRADCHECK(f_layer_norm, &c, 3, in) > 0);
    }
    {
        tensor *in[3] = {test_leaf(TENSOR_SHAPE(4, 3), -2, 2), test_leaf(TENSOR_SHAPE(4), 0.5, 1.5), test_leaf(TENSOR_SHAPE(4), -1, 1)};
        CHECK(GRADCHECK(f_layer_norm_t, NULL, 3, in) == 12 + 8);
        if (second) CHECK(GRADGRADCHECK(f_layer_norm_t, NULL, 3, in) > 0);
    }
}
void gradcheck_layer_norm(void) { layer_norm_cases(false); }
TEST(grad_layer_norm_double_backward) { layer_norm_cases(true); }

void gradcheck_rms_norm(void) {
    norm_ctx plain = {0, 1e-6}, weighted = {1, 1e-6}, big_eps = {1, 0.3};
    tensor *x = test_leaf(TENSOR_SHAPE(3, 5), -2, 2), *w = test_leaf(TENSOR_SHAPE(5), 0.5, 1.5);
    tensor *in1[1] = {x}, *in2[2] = {x, w};
    CHECK(GRADCHECK(f_rms_norm, &plain, 1, in1) == 15);
    CHECK(GRADCHECK(f_rms_norm, &weighted, 2, in2) == 20);
    tensor *in3[2] = {test_leaf(TENSOR_SHAPE(2, 2, 3), -2, 2), test_leaf(TENSOR_SHAPE(3), -1, 1)};
    CHECK(GRADCHECK(f_rms_norm, &big_eps, 2, in3) == 15);
    CHECK(GRADGRADCHECK(f_rms_norm, &weighted, 2, in2) > 0);
}

/* ---- embedding ---- */

static tensor *f_embedding(tensor *const *in, const void *vctx) {
    (void)vctx;
    return tensor_embedding(in[0], in[1]);
}
/* a non-contiguous weight: the leaf is [D, V] */
static tensor *f_embedding_t(tensor *const *in, const void *vctx) {
    (void)vctx;
    return tensor_embedding(tensor_transpose(in[0], 0, 1), in[1]);
}

void gradcheck_embedding(void) {
    static const double idx[] = {1, 3, 1, 0, 3, 3}; /* repeated rows accumulate; row 2 and 4 get none */
    tensor *in[2] = {test_leaf(TENSOR_SHAPE(5, 3), -1, 1), i64_tensor(TENSOR_SHAPE(2, 3), idx)};
    CHECK(GRADCHECK(f_embedding, NULL, 2, in) == 15); /* only the weight is differentiable */
    tensor *in32[2] = {in[0], test_tensor(TENSOR_I32, TENSOR_SHAPE(6), idx)};
    CHECK(GRADCHECK(f_embedding, NULL, 2, in32) == 15);
    tensor *in0[2] = {in[0], i64_tensor(0, NULL, idx + 1)}; /* a 0-dim index: one row */
    CHECK(GRADCHECK(f_embedding, NULL, 2, in0) == 15);
    tensor *int_t[2] = {test_leaf(TENSOR_SHAPE(3, 5), -1, 1), in[1]};
    CHECK(GRADCHECK(f_embedding_t, NULL, 2, int_t) == 15);
}

/* The rows' counts, directly: d sum(embedding(w, idx)) / dw[v, :] = number of times v occurs. */
TEST(grad_embedding_counts_repeats) {
    static const double idx[] = {1, 3, 1, 0, 3, 3};
    tensor *w = test_leaf(TENSOR_SHAPE(5, 2), -1, 1);
    tensor *e = tensor_embedding(w, i64_tensor(TENSOR_SHAPE(6), idx));
    CHECK(tensor_backward(tensor_sum_all(e)) == 0);
    static const double expect[] = {1, 1, 2, 2, 0, 0, 3, 3, 0, 0};
    CHECK_VALUES(tensor_grad(w), expect, 10, 0, 0);
    CHECK(!tensor_requires_grad(i64_tensor(TENSOR_SHAPE(6), idx)));
}

/* ---- dropout ---- */

typedef struct { double p; bool training; } drop_ctx;
static tensor *f_dropout(tensor *const *in, const void *vctx) {
    const drop_ctx *c = (const drop_ctx *)vctx;
    tensor_manual_seed(1234); /* the same mask on every evaluation */
    return tensor_dropout(in[0], c->p, c->training);
}
static tensor *f_dropout_t(tensor *const *in, const void *vctx) {
    const drop_ctx *c = (const drop_ctx *)vctx;
    tensor_manual_seed(99);
    return tensor_dropout(tensor_transpose(in[0], 0, 1), c->p, c->training);
}

void gradcheck_dropout(void) {
    drop_ctx train = {0.5, true}, eval = {0.5, false}, p0 = {0, true}, p1 = {1, true}, p02 = {0.2, true};
    tensor *in[1] = {test_leaf(TENSOR_SHAPE(4, 5), -1, 1)};
    CHECK(GRADCHECK(f_dropout, &train, 1, in) == 20);
    CHECK(GRADCHECK(f_dropout, &eval, 1, in) == 20);
    CHECK(GRADCHECK(f_dropout, &p0, 1, in) == 20);
    CHECK(GRADCHECK(f_dropout, &p1, 1, in) == 20);
    CHECK(GRADCHECK(f_dropout_t, &p02, 1, in) == 20);
}

/* The gradient is the mask: 0 where dropped, 1 / (1 - p) where kept, so grad * x == y; training
   false passes the gradient through unchanged. */
TEST(grad_dropout_is_the_mask) {
    tensor *x = test_leaf(TENSOR_SHAPE(40), 0.5, 1.5);
    tensor *y = tensor_dropout(x, 0.5, true);
    CHECK(tensor_backward(tensor_sum_all(y)) == 0);
    double *g = test_values(tensor_grad(x)), *xv = test_values(x), *yv = test_values(y);
    int zeros = 0, twos = 0;
    for (int i = 0; i < 40; i++) {
        zeros += g[i] == 0;
        twos += g[i] == 2;
        CHECK_NEAR(g[i] * xv[i], yv[i], 1e-15, 1e-15);
    }
    CHECK(zeros + twos == 40);
    CHECK(zeros > 5 && twos > 5);
    free(g);
    free(xv);
    free(yv);
    tensor_zero_grad(x);
    CHECK(tensor_backward(tensor_sum_all(tensor_dropout(x, 0.5, false))) == 0);
    static const double ones[40] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
                                    1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    CHECK_VALUES(tensor_grad(x), ones, 40, 0, 0);
}

/* ---- scaled_dot_product_attention ---- */

/* mode 0: no mask; 1: bool mask in[3]; 2: is_causal; 3: float mask in[3] (differentiable) */
typedef struct { int mode; } sdpa_ctx;
static tensor *f_sdpa(tensor *const *in, const void *vctx) {
    const sdpa_ctx *c = (const sdpa_ctx *)vctx;
    return tensor_scaled_dot_product_attention(in[0], in[1], in[2], c->mode == 1 || c->mode == 3 ? in[3] : NULL, c->mode == 2);
}
/* k given as a [.., E, S] leaf, transposed inside f */
static tensor *f_sdpa_kt(tensor *const *in, const void *vctx) {
    (void)vctx;
    return tensor_scaled_dot_product_attention(in[0], tensor_transpose(in[1], -1, -2), in[2], NULL, false);
}

void gradcheck_scaled_dot_product_attention(void) {
    sdpa_ctx none = {0}, boolm = {1}, causal = {2}, floatm = {3};
    tensor *q = test_leaf(TENSOR_SHAPE(2, 3, 4), -1, 1), *k = test_leaf(TENSOR_SHAPE(2, 5, 4), -1, 1), *v = test_leaf(TENSOR_SHAPE(2, 5, 3), -1, 1);
    tensor *in[4] = {q, k, v, NULL};
    CHECK(GRADCHECK(f_sdpa, &none, 3, in) == 24 + 40 + 30);
    /* a bool mask [3, 5] broadcast over the batch; each row keeps at least one key */
    static const double m[15] = {1, 0, 1, 0, 0, 0, 1, 1, 1, 0, 1, 1, 1, 1, 1};
    in[3] = test_tensor(TENSOR_BOOL, TENSOR_SHAPE(3, 5), m);
    CHECK(GRADCHECK(f_sdpa, &boolm, 4, in) == 24 + 40 + 30);
    in[3] = test_leaf(TENSOR_SHAPE(3, 5), -1, 1);
    CHECK(GRADCHECK(f_sdpa, &floatm, 4, in) == 24 + 40 + 30 + 15);
    /* causal, L == S, with heads: [B, H, L, E] */
    tensor *qc[3] = {test_leaf(TENSOR_SHAPE(1, 2, 4, 3), -1, 1), test_leaf(TENSOR_SHAPE(1, 2, 4, 3), -1, 1), test_leaf(TENSOR_SHAPE(1, 2, 4, 2), -1, 1)};
    CHECK(GRADCHECK(f_sdpa, &causal, 3, qc) == 24 + 24 + 16);
    /* batch broadcast: q [2, 1, 3, 4] with k, v [2, 5, 4] / [2, 5, 3]; k non-contiguous */
    tensor *qb[3] = {test_leaf(TENSOR_SHAPE(2, 1, 3, 4), -1, 1), test_leaf(TENSOR_SHAPE(2, 4, 5), -1, 1), v};
    CHECK(GRADCHECK(f_sdpa_kt, NULL, 3, qb) == 24 + 40 + 30);
}

/* ---- losses ---- */

static tensor *f_cross_entropy(tensor *const *in, const void *vctx) {
    (void)vctx;
    return tensor_cross_entropy(in[0], in[1]);
}
static tensor *f_nll_loss(tensor *const *in, const void *vctx) {
    (void)vctx;
    return tensor_nll_loss(in[0], in[1]);
}
/* nll_loss is linear in its input: its second derivative shows only behind a nonlinearity */
static tensor *f_nll_loss_squared(tensor *const *in, const void *vctx) {
    (void)vctx;
    return tensor_square(tensor_nll_loss(in[0], in[1]));
}
static tensor *f_nll_loss_of_square(tensor *const *in, const void *vctx) {
    (void)vctx;
    return tensor_nll_loss(tensor_square(in[0]), in[1]);
}
static tensor *f_mse_loss(tensor *const *in, const void *vctx) {
    (void)vctx;
    return tensor_mse_loss(in[0], in[1]);
}
static tensor *f_mse_loss_t(tensor *const *in, const void *vctx) {
    (void)vctx;
    return tensor_mse_loss(tensor_transpose(in[0], 0, 1), in[1]);
}
static tensor *f_bce(tensor *const *in, const void *vctx) {
    (void)vctx;
    return tensor_binary_cross_entropy_with_logits(in[0], in[1]);
}

static const double ce_targets4[4] = {2, 0, 4, 2};
static const double ce_targets_nd[8] = {0, 2, 1, 1, 2, 2, 0, 1}; /* [2, 4] for logits [2, 3, 4] */
static const double ce_targets_ign[4] = {2, -100, 4, 1};    /* -100: PyTorch's ignore_index */

static void cross_entropy_cases(test_fn_of f, bool logits_are_log_probs, bool second) {
    /* nll_loss gets log-probabilities in PyTorch, but its math holds for any input */
    double lo = logits_are_log_probs ? -3 : -2, hi = logits_are_log_probs ? -0.1 : 2;
    tensor *in[2] = {test_leaf(TENSOR_SHAPE(4, 5), lo, hi), i64_tensor(TENSOR_SHAPE(4), ce_targets4)};
    CHECK(GRADCHECK(f, NULL, 2, in) == 20);
    if (second) CHECK(GRADGRADCHECK(f, NULL, 2, in) == 20);
    tensor *in1[2] = {test_leaf(TENSOR_SHAPE(5), lo, hi), i64_tensor(0, NULL, ce_targets4)}; /* [C] with a 0-dim target */
    CHECK(GRADCHECK(f, NULL, 2, in1) == 5);
    if (second) CHECK(GRADGRADCHECK(f, NULL, 2, in1) == 5);
    tensor *in3[2] = {test_leaf(TENSOR_SHAPE(2, 3, 4), lo, hi), i64_tensor(TENSOR_SHAPE(2, 4), ce_targets_nd)}; /* [N, C, d] */
    CHECK(GRADCHECK(f, NULL, 2, in3) == 24);
    if (second) CHECK(GRADGRADCHECK(f, NULL, 2, in3) == 24);
    tensor *ini[2] = {in[0], i64_tensor(TENSOR_SHAPE(4), ce_targets_ign)}; /* an ignored target */
    CHECK(GRADCHECK(f, NULL, 2, ini) == 20);
    if (second) CHECK(GRADGRADCHECK(f, NULL, 2, ini) == 20);
    tensor *in32[2] = {in[0], test_tensor(TENSOR_I32, TENSOR_SHAPE(4), ce_targets4)};
    CHECK(GRADCHECK(f, NULL, 2, in32) == 20);
}

void gradcheck_cross_entropy(void) {
    cross_entropy_cases(f_cross_entropy, false, false);
    /* probability targets: both arguments are differentiable */
    tensor *p = tensor_softmax(test_leaf(TENSOR_SHAPE(3, 4), -1, 1), 1);
    tensor *in[2] = {test_leaf(TENSOR_SHAPE(3, 4), -2, 2), tensor_set_requires_grad(tensor_clone(tensor_detach(p)), true)};
    CHECK(GRADCHECK(f_cross_entropy, NULL, 2, in) == 24);
}
TEST(grad_cross_entropy_double_backward) {
    cross_entropy_cases(f_cross_entropy, false, true);
    tensor *p = tensor_softmax(test_leaf(TENSOR_SHAPE(3, 4), -1, 1), 1);
    tensor *in[2] = {test_leaf(TENSOR_SHAPE(3, 4), -2, 2), tensor_set_requires_grad(tensor_clone(tensor_detach(p)), true)};
    CHECK(GRADGRADCHECK(f_cross_entropy, NULL, 2, in) == 24);
}

void gradcheck_nll_loss(void) { cross_entropy_cases(f_nll_loss, true, false); }
TEST(grad_nll_loss_double_backward) {
    cross_entropy_cases(f_nll_loss_squared, true, true);
    cross_entropy_cases(f_nll_loss_of_square, true, true);
}

/* Every target ignored: the loss is NaN (0 / 0, as PyTorch) and the gradient is zero. */
TEST(grad_nll_loss_all_ignored) {
    static const double t[2] = {-100, -100};
    tensor *x = test_leaf(TENSOR_SHAPE(2, 3), -2, -0.5);
    tensor *l = tensor_nll_loss(x, i64_tensor(TENSOR_SHAPE(2), t));
    CHECK(l && isnan(tensor_item(l)));
    CHECK(tensor_backward(l) == 0);
    static const double z[6] = {0, 0, 0, 0, 0, 0};
    CHECK_VALUES(tensor_grad(x), z, 6, 0, 0);
}

void gradcheck_mse_loss(void) {
    tensor *in[2] = {test_leaf(TENSOR_SHAPE(3, 4), -1, 1), test_leaf(TENSOR_SHAPE(3, 4), -1, 1)};
    CHECK(GRADCHECK(f_mse_loss, NULL, 2, in) == 24);
    tensor *inb[2] = {test_leaf(TENSOR_SHAPE(3, 4), -1, 1), test_leaf(TENSOR_SHAPE(4), -1, 1)}; /* broadcast target */
    CHECK(GRADCHECK(f_mse_loss, NULL, 2, inb) == 16);
    tensor *inc[2] = {test_leaf(TENSOR_SHAPE(3, 1), -1, 1), test_leaf(TENSOR_SHAPE(4), -1, 1)}; /* both broadcast */
    CHECK(GRADCHECK(f_mse_loss, NULL, 2, inc) == 7);
    tensor *int_[2] = {test_leaf(TENSOR_SHAPE(4, 3), -1, 1), test_leaf(TENSOR_SHAPE(3, 4), -1, 1)};
    CHECK(GRADCHECK(f_mse_loss_t, NULL, 2, int_) == 24);
    tensor *in0[2] = {test_leaf(0, NULL, -1, 1), test_leaf(0, NULL, -1, 1)};
    CHECK(GRADCHECK(f_mse_loss, NULL, 2, in0) == 2);
}
TEST(grad_mse_loss_double_backward) {
    tensor *in[2] = {test_leaf(TENSOR_SHAPE(3, 4), -1, 1), test_leaf(TENSOR_SHAPE(4), -1, 1)};
    CHECK(GRADGRADCHECK(f_mse_loss, NULL, 2, in) == 16);
}

/* logits kept away from 0 (where the composite's relu and abs have their kinks, which cancel). */
static tensor *bce_logits(int nd, const int64_t *shape) {
    tensor *t = test_leaf(nd, shape, 0.2, 3);
    double *d = (double *)tensor_data_ptr(t);
    for (int64_t i = 0; i < tensor_numel(t); i++) if (i % 2) d[i] = -d[i];
    return t;
}
void gradcheck_binary_cross_entropy_with_logits(void) {
    tensor *in[2] = {bce_logits(TENSOR_SHAPE(3, 4)), test_leaf(TENSOR_SHAPE(3, 4), 0.05, 0.95)};
    CHECK(GRADCHECK(f_bce, NULL, 2, in) == 24);
    tensor *in1[2] = {bce_logits(TENSOR_SHAPE(5)), test_leaf(TENSOR_SHAPE(5), 0, 1)};
    CHECK(GRADCHECK(f_bce, NULL, 2, in1) == 10);
}
TEST(grad_binary_cross_entropy_with_logits_double_backward) {
    tensor *in[2] = {bce_logits(TENSOR_SHAPE(3, 4)), test_leaf(TENSOR_SHAPE(3, 4), 0.05, 0.95)};
    CHECK(GRADGRADCHECK(f_bce, NULL, 2, in) == 24);
}

/* PyTorch's gradient of BCE-with-logits is (sigmoid(x) - y) / n everywhere, also at x == 0 (a
   zero-initialized output layer gives exactly 0) and for large |x|. */
TEST(grad_binary_cross_entropy_with_logits_closed_form) {
    static const double x[6] = {0, -0.0, 0.7, -1.3, 40, -40}, y[6] = {0.25, 1, 0, 0.5, 0.1, 0.9};
    tensor *xl = tensor_set_requires_grad(test_tensor(TENSOR_F64, TENSOR_SHAPE(6), x), true);
    tensor *yl = tensor_set_requires_grad(test_tensor(TENSOR_F64, TENSOR_SHAPE(6), y), true);
    CHECK(tensor_backward(tensor_binary_cross_entropy_with_logits(xl, yl)) == 0);
    double gx[6], gy[6];
    for (int i = 0; i < 6; i++) {
        gx[i] = (1 / (1 + exp(-x[i])) - y[i]) / 6;
        gy[i] = -x[i] / 6;
    }
    CHECK_VALUES(tensor_grad(xl), gx, 6, 1e-15, 1e-12);
    CHECK_VALUES(tensor_grad(yl), gy, 6, 1e-15, 1e-12);
}

/* ---- cross_entropy against its composed forms ----
   cross_entropy has a fused backward kernel ((softmax - onehot) / N, used when backward runs
   without create_graph); it must keep giving the gradient of the composed forms below. */

static tensor *onehot_ce(tensor *x, tensor *t) {
    /* -mean over rows of sum(onehot(t) * log_softmax(x)) */
    tensor *oh = tensor_to_dtype(tensor_one_hot(t, tensor_size(x, 1)), tensor_get_dtype(x));
    return tensor_neg(tensor_mean_all(tensor_sum(tensor_mul(oh, tensor_log_softmax(x, 1)), 1, false)));
}

TEST(grad_cross_entropy_matches_composed) {
    static const double t[6] = {3, 0, 0, 6, 2, 5};
    tensor *tt = i64_tensor(TENSOR_SHAPE(6), t);
    tensor *x = test_leaf(TENSOR_SHAPE(6, 7), -3, 3);
    double *xv = test_values(x);
    tensor *losses[3], *grads[3];
    losses[0] = tensor_cross_entropy(x, tt);
    losses[1] = tensor_nll_loss(tensor_log_softmax(x, 1), tt);
    losses[2] = onehot_ce(x, tt);
    for (int i = 0; i < 3; i++) {
        grads[i] = NULL;
        CHECK(tensor_autograd_grad(1, &losses[i], NULL, 1, &x, &grads[i], false) == 0);
    }
    /* the closed form: (softmax(x) - onehot) / N, and the loss -mean(x[t] - logsumexp(x)) */
    double g[42], loss = 0;
    for (int r = 0; r < 6; r++) {
        double mx = -INFINITY, s = 0;
        for (int c = 0; c < 7; c++) mx = fmax(mx, xv[r * 7 + c]);
        for (int c = 0; c < 7; c++) s += exp(xv[r * 7 + c] - mx);
        for (int c = 0; c < 7; c++) g[r * 7 + c] = (exp(xv[r * 7 + c] - mx) / s - (c == (int)t[r])) / 6;
        loss -= (xv[r * 7 + (int)t[r]] - mx - log(s)) / 6;
    }
    for (int i = 0; i < 3; i++) {
        CHECK_NEAR(tensor_item(losses[i]), loss, 1e-14, 1e-13);
        CHECK_VALUES(grads[i], g, 42, 1e-15, 1e-12);
    }
    /* and the composed forms agree with each other to rounding */
    double *g0 = test_values(grads[0]), *g1 = test_values(grads[1]), *g2 = test_values(grads[2]);
    for (int i = 0; i < 42; i++) {
        CHECK_NEAR(g0[i], g1[i], 1e-16, 1e-14);
        CHECK_NEAR(g0[i], g2[i], 1e-16, 1e-14);
    }
    free(g0);
    free(g1);
    free(g2);
    /* f32 logits: the gradient matches the f64 closed form to f32 precision */
    tensor *x32 = tensor_set_requires_grad(tensor_to_dtype(tensor_detach(x), TENSOR_F32), true);
    CHECK(tensor_backward(tensor_cross_entropy(x32, tt)) == 0);
    CHECK(tensor_get_dtype(tensor_grad(x32)) == TENSOR_F32);
    CHECK_VALUES(tensor_grad(x32), g, 42, 1e-7, 1e-5);
    free(xv);
}

/* layer_norm's gradient against the same function written with elementwise ops and reductions. */
static tensor *layer_norm_composed(tensor *x, tensor *w, tensor *b, double eps) {
    tensor *mu = tensor_mean(x, -1, true);
    tensor *xc = tensor_sub(x, mu);
    tensor *var = tensor_mean(tensor_square(xc), -1, true);
    return tensor_add(tensor_mul(tensor_div(xc, tensor_sqrt(tensor_add_scalar(var, eps))), w), b);
}
TEST(grad_layer_norm_matches_composed) {
    tensor *x = test_leaf(TENSOR_SHAPE(4, 6), -2, 2), *w = test_leaf(TENSOR_SHAPE(6), 0.5, 1.5), *b = test_leaf(TENSOR_SHAPE(6), -1, 1);
    tensor *wt = tensor_rand(TENSOR_SHAPE(4, 6), TENSOR_F64);
    tensor *ins[3] = {x, w, b}, *g1[3] = {0}, *g2[3] = {0};
    tensor *l1 = tensor_sum_all(tensor_mul(tensor_layer_norm(x, w, b, 1e-5), wt));
    tensor *l2 = tensor_sum_all(tensor_mul(layer_norm_composed(x, w, b, 1e-5), wt));
    CHECK_NEAR(tensor_item(l1), tensor_item(l2), 1e-12, 1e-12);
    CHECK(tensor_autograd_grad(1, &l1, NULL, 3, ins, g1, false) == 0);
    CHECK(tensor_autograd_grad(1, &l2, NULL, 3, ins, g2, false) == 0);
    for (int i = 0; i < 3; i++) {
        double *e = test_values(g2[i]);
        CHECK_VALUES(g1[i], e, tensor_numel(ins[i]), 1e-12, 1e-10);
        free(e);
    }
}
