/* Tests of the CPU speed work on allocation and fused kernels: the caching storage allocator,
   the fast paths of the reductions, softmax/log_softmax, layer_norm/rms_norm and cross_entropy
   (against plain double loops written here and against the reference kernels,
   tensor_set_reference_kernels), and the fused backward kernels (against the op-composed formulas
   that create_graph and the reference kernels use). */
#include "test.h"

/* ---- helpers ---- */


/* a and b hold the same values within atol + rtol |b| (NaNs equal), and the same shape. */
static void check_same(int line, tensor *a, tensor *b, double atol, double rtol) {
    if (!a || !b) { test_fail(__FILE__, line, "NULL tensor (%s)", tensor_last_error() ? tensor_last_error() : "no error"); return; }
    bool shape_ok = tensor_ndim(a) == tensor_ndim(b);
    for (int d = 0; shape_ok && d < tensor_ndim(a); d++) shape_ok = tensor_shape(a)[d] == tensor_shape(b)[d];
    if (!shape_ok) { test_fail(__FILE__, line, "shapes differ"); return; }
    double *e = test_values(b);
    test_check_values(__FILE__, line, a, e, tensor_numel(b), atol, rtol);
    free(e);
}
#define CHECK_SAME(a, b, atol, rtol) check_same(__LINE__, a, b, atol, rtol)

/* ---- the caching allocator ---- */

TEST(alloc_reuses_freed_blocks_and_counts_live_bytes) {
    int64_t b0 = tensor_live_bytes();
    tensor *a = tensor_empty(TENSOR_SHAPE(1000), TENSOR_F32);
    void *pa = tensor_data_ptr(a);
    CHECK(tensor_live_bytes() == b0 + 4000);
    tensor_free(a);
    CHECK(tensor_live_bytes() == b0); /* a cached block is not live */
    /* the next storage of the same size class takes the block back (and its count) */
    tensor *b = tensor_empty(TENSOR_SHAPE(990), TENSOR_F32);
    CHECK(tensor_data_ptr(b) == pa);
    CHECK(tensor_live_bytes() == b0 + 3960);
    tensor_free(b);
    /* a large block (mmap'd, huge pages on Linux) comes back too */
    tensor *big = tensor_empty(TENSOR_SHAPE(3 << 20), TENSOR_F32);
    float *pb = (float *)tensor_data_ptr(big);
    CHECK(pb && ((uintptr_t)pb & 63) == 0);
    for (int64_t i = 0; i < (3 << 20); i += 4096) pb[i] = (float)i;
    tensor_free(big);
    tensor *big2 = tensor_empty(TENSOR_SHAPE(3 << 20), TENSOR_F32);
    CHECK(tensor_data_ptr(big2) == (void *)pb);
    tensor_free(big2);
    CHECK(tensor_live_bytes() == b0);
}

/* Blocks of every size class at once: 64-byte aligned, none overlapping another. */
TEST(alloc_size_classes_do_not_overlap) {
    enum { K = 120 };
    tensor *ts[K];
    for (int k = 0; k < K; k++) {
        int64_t n = k < 40 ? k : k < 80 ? (int64_t)(k - 39) * 517 : (int64_t)(k - 79) * 37000; /* 0 .. ~1.5M bytes */
        ts[k] = tensor_full(TENSOR_SHAPE(n), (double)k, TENSOR_U8);
        CHECK(ts[k] && ((uintptr_t)tensor_data_ptr(ts[k]) & 63) == 0);
    }
    /* free every third, make them again (taking cached blocks), then check every value */
    for (int k = 0; k < K; k += 3) tensor_free(ts[k]);
    for (int k = 0; k < K; k += 3) {
        int64_t n = k < 40 ? k : k < 80 ? (int64_t)(k - 39) * 517 : (int64_t)(k - 79) * 37000;
        ts[k] = tensor_full(TENSOR_SHAPE(n), (double)k, TENSOR_U8);
    }
    for (int k = 0; k < K; k++) {
        const uint8_t *p = (const uint8_t *)tensor_data_ptr(ts[k]);
        int64_t n = tensor_numel(ts[k]), bad = 0;
        for (int64_t i = 0; i < n; i++) bad += p[i] != (uint8_t)k;
        CHECK_MSG(bad == 0, "tensor %d: %lld bytes overwritten", k, (long long)bad);
    }
}

/* tensor_empty_cache gives cached blocks, handles and graph nodes back while live tensors, their
   graphs and later allocations keep working. */
TEST(alloc_empty_cache_keeps_live_tensors) {
    int64_t b0 = tensor_live_bytes(), h0 = tensor_live_handles();
    tensor *x = tensor_set_requires_grad(test_random(TENSOR_F32, TENSOR_SHAPE(8, 5), -1, 1), true);
    tensor *keep = tensor_full(TENSOR_SHAPE(3 << 20), 2.5, TENSOR_F32);
    for (int i = 0; i < 10; i++) tensor_free(tensor_exp(tensor_ones(TENSOR_SHAPE(1000 * (i + 1)), TENSOR_F32)));
    tensor *y = tensor_sum_all(tensor_square(tensor_tanh(x)));
    tensor_empty_cache();
    CHECK(tensor_live_bytes() > b0 && tensor_live_handles() > h0);
    CHECK(tensor_backward(y) == 0);
    tensor *g = tensor_grad(x);
    double *xv = test_values(x), *gv = test_values(g);
    for (int i = 0; i < 40; i++) {
        double t = tanh(xv[i]);
        CHECK_NEAR(gv[i], 2 * t * (1 - t * t), 1e-6, 1e-5);
    }
    free(xv);
    free(gv);
    const float *k = (const float *)tensor_data_ptr(keep);
    CHECK(k[0] == 2.5f && k[(3 << 20) - 1] == 2.5f);
    tensor_empty_cache();
    tensor_empty_cache(); /* twice is fine */
    tensor *z = tensor_add_scalar(keep, 1);
    CHECK(tensor_item(tensor_select(z, 0, 77)) == 3.5);
}

/* A training-style loop: the same shapes every step, so after the first step storage, handles and
   nodes all come from the caches; values stay right and nothing leaks. */
TEST(alloc_training_loop_reuses_everything) {
    tensor *w = tensor_set_requires_grad(test_random(TENSOR_F32, TENSOR_SHAPE(16, 8), -0.5, 0.5), true);
    tensor *xb = test_random(TENSOR_F32, TENSOR_SHAPE(32, 16), -1, 1);
    tensor *t = tensor_randint(0, 8, TENSOR_SHAPE(32), TENSOR_I64);
    double first = 0, last = 0;
    int64_t h1 = 0, b1 = 0;
    for (int step = 0; step < 50; step++) {
        tensor_scope_begin();
        tensor *loss = tensor_cross_entropy(tensor_matmul(xb, w), t);
        CHECK(tensor_backward(loss) == 0);
        if (step == 0) first = tensor_item(loss);
        last = tensor_item(loss);
        bool was = tensor_set_grad_enabled(false);
        tensor *upd = tensor_mul_scalar(tensor_grad(w), -0.5);
        tensor_add_(w, upd);
        tensor_set_grad_enabled(was);
        tensor_zero_grad(w);
        tensor_scope_end();
        if (step == 1) { h1 = tensor_live_handles(); b1 = tensor_live_bytes(); }
        else if (step > 1) CHECK(tensor_live_handles() == h1 && tensor_live_bytes() == b1);
    }
    CHECK(last < first);
}

/* ---- reductions: fast paths against double loops and the reference kernels ---- */

/* sum and mean of t over dim, fast and reference, against a double loop over the values. */
static void check_sum_dim(int line, tensor *t, int dim) {
    int nd = tensor_ndim(t), d = dim < 0 ? dim + nd : dim;
    const int64_t *s = tensor_shape(t);
    int64_t outer = 1, inner = 1, n = s[d];
    for (int i = 0; i < d; i++) outer *= s[i];
    for (int i = d + 1; i < nd; i++) inner *= s[i];
    double *x = test_values(t), *want = (double *)malloc(sizeof(double) * (size_t)(outer * inner + 1));
    double *wantm = (double *)malloc(sizeof(double) * (size_t)(outer * inner + 1));
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            double acc = 0;
            for (int64_t k = 0; k < n; k++) acc += x[(o * n + k) * inner + i];
            want[o * inner + i] = acc;
            wantm[o * inner + i] = acc / (double)n;
        }
    tensor_dtype dt = tensor_get_dtype(t);
    bool fl = dt == TENSOR_F32 || dt == TENSOR_F64;
    double tol = test_tol(dt);
    tensor *fs = tensor_sum(t, dim, false), *fm = fl ? tensor_mean(t, dim, true) : NULL;
    bool was = tensor_set_reference_kernels(true);
    tensor *rs = tensor_sum(t, dim, false), *rm = fl ? tensor_mean(t, dim, true) : NULL;
    tensor_set_reference_kernels(was);
    test_check_values(__FILE__, line, fs, want, outer * inner, tol, tol);
    check_same(line, fs, rs, tol, tol);
    if (fl) {
        test_check_values(__FILE__, line, fm, wantm, outer * inner, tol, tol);
        check_same(line, fm, rm, tol, tol);
    }
    free(x);
    free(want);
    free(wantm);
}

TEST(fused_sum_mean_fast_paths) {
    tensor_dtype dts[2] = {TENSOR_F32, TENSOR_F64};
    for (int k = 0; k < 2; k++) {
        tensor *a = test_random(dts[k], TENSOR_SHAPE(37, 1003), -2, 2);        /* rows, tails of every length */
        check_sum_dim(__LINE__, a, 1);
        check_sum_dim(__LINE__, a, 0);                                 /* columns */
        tensor *b = test_random(dts[k], TENSOR_SHAPE(6000, 130), -1, 1);       /* columns split over threads */
        check_sum_dim(__LINE__, b, 0);
        check_sum_dim(__LINE__, b, -1);                                /* many short rows */
        tensor *c = test_random(dts[k], TENSOR_SHAPE(3, 300001), -1, 1);       /* few long rows: split sums */
        check_sum_dim(__LINE__, c, 1);
        tensor *d = test_random(dts[k], TENSOR_SHAPE(4, 50, 67), -3, 3);
        for (int dim = 0; dim < 3; dim++) check_sum_dim(__LINE__, d, dim);
        check_sum_dim(__LINE__, tensor_transpose(d, 0, 2), 1);         /* non-contiguous */
        check_sum_dim(__LINE__, tensor_slice(a, 1, 1, 1003, 2), 1);    /* stepped */
        /* cancelling sums keep double accuracy on the fast path */
        tensor *e = test_random(dts[k], TENSOR_SHAPE(2, 3, 4, 5), -2, 2);
        for (int dim = 0; dim < 4; dim++) check_sum_dim(__LINE__, e, dim);
    }
    /* integer columns through the threaded column path */
    tensor *ti = tensor_randint(-1000, 1000, TENSOR_SHAPE(5000, 77), TENSOR_I32);
    check_sum_dim(__LINE__, ti, 0);
}

/* sum_all of a long f32 tensor whose size is not a multiple of the split block; the result does
   not depend on the thread count. */
TEST(fused_sum_all_split_and_thread_independent) {
    int64_t n = 3 * 65536 + 12345;
    tensor *t = test_random(TENSOR_F32, TENSOR_SHAPE(n), -1, 3);
    const float *x = (const float *)tensor_data_ptr(t);
    double want = 0;
    for (int64_t i = 0; i < n; i++) want += x[i];
    tensor *s = tensor_sum_all(t), *m = tensor_mean_all(t);
    CHECK_NEAR(tensor_item(s), want, 0, 1e-7);
    CHECK_NEAR(tensor_item(m), want / (double)n, 0, 1e-7);
    int threads = tensor_get_num_threads();
    tensor_set_num_threads(1);
    tensor *s1 = tensor_sum_all(t), *c1 = tensor_sum(tensor_reshape(t, TENSOR_SHAPE(12345 + 65536 * 3, 1)), 0, false);
    tensor_set_num_threads(threads);
    tensor *c2 = tensor_sum(tensor_reshape(t, TENSOR_SHAPE(12345 + 65536 * 3, 1)), 0, false);
    CHECK(test_same_bits(s, s1));
    CHECK(test_same_bits(c1, c2));
    tensor *b = test_random(TENSOR_F32, TENSOR_SHAPE(4000, 300), -1, 1);
    tensor_set_num_threads(1);
    tensor *b1 = tensor_sum(b, 0, false);
    tensor_set_num_threads(2);
    tensor *b2 = tensor_sum(b, 0, false);
    tensor_set_num_threads(threads);
    CHECK(test_same_bits(b1, b2));
}

/* logsumexp's f32 fast path against double loops, including rows with -inf, +inf and NaN (which
   go back to the reference path) and very negative differences. */
TEST(fused_logsumexp_fast_path) {
    tensor *a = test_random(TENSOR_F32, TENSOR_SHAPE(19, 301), -30, 30);
    double *x = test_values(a), want[19];
    for (int r = 0; r < 19; r++) {
        double mx = -INFINITY, s = 0;
        for (int i = 0; i < 301; i++) mx = fmax(mx, x[r * 301 + i]);
        for (int i = 0; i < 301; i++) s += exp(x[r * 301 + i] - mx);
        want[r] = mx + log(s);
    }
    CHECK_VALUES(tensor_logsumexp(a, 1, false), want, 19, 1e-6, 1e-6);
    free(x);
    static const double sp[5][4] = {{-INFINITY, -INFINITY, -INFINITY, -INFINITY}, {1, INFINITY, 0, 2}, {1, NAN, 0, 2}, {0, -90, -150, -1e30}, {3, 3, 3, 3}};
    tensor *s = test_tensor(TENSOR_F32, TENSOR_SHAPE(5, 4), &sp[0][0]);
    double e[5] = {-INFINITY, INFINITY, NAN, log(1 + exp(-90.0) + exp(-150.0)), 3 + log(4.0)};
    CHECK_VALUES(tensor_logsumexp(s, 1, false), e, 5, 1e-7, 1e-6);
    bool was = tensor_set_reference_kernels(true);
    tensor *r = tensor_logsumexp(a, 1, false);
    tensor_set_reference_kernels(was);
    CHECK_SAME(tensor_logsumexp(a, 1, false), r, 1e-6, 1e-6);
}

/* ---- softmax and log_softmax ---- */

static double *ref_softmax_rows(const double *x, int64_t R, int64_t C, bool log_form) {
    double *y = (double *)malloc(sizeof(double) * (size_t)(R * C + 1));
    for (int64_t r = 0; r < R; r++) {
        double mx = -INFINITY, s = 0;
        for (int64_t i = 0; i < C; i++) if (x[r * C + i] > mx) mx = x[r * C + i];
        for (int64_t i = 0; i < C; i++) s += exp(x[r * C + i] - mx);
        for (int64_t i = 0; i < C; i++) y[r * C + i] = log_form ? x[r * C + i] - mx - log(s) : exp(x[r * C + i] - mx) / s;
    }
    return y;
}

/* softmax and log_softmax of t over its last dim: fast, reference and double loops agree. */
static void check_softmax_rows(int line, tensor *t) {
    int nd = tensor_ndim(t);
    int64_t C = tensor_shape(t)[nd - 1], R = C ? tensor_numel(t) / C : 0;
    double *x = test_values(t);
    for (int lf = 0; lf < 2; lf++) {
        double *want = ref_softmax_rows(x, R, C, lf != 0);
        tensor *f = lf ? tensor_log_softmax(t, -1) : tensor_softmax(t, -1);
        bool was = tensor_set_reference_kernels(true);
        tensor *r = lf ? tensor_log_softmax(t, -1) : tensor_softmax(t, -1);
        tensor_set_reference_kernels(was);
        test_check_values(__FILE__, line, f, want, R * C, 1e-6, 2e-6);
        check_same(line, f, r, 1e-6, 2e-6);
        free(want);
    }
    free(x);
}

/* softmax and log_softmax of t over dim (not the innermost: the rows are gathered), against the
   double loops on t with dim moved last and against the reference kernels */
static void check_softmax_dim(int line, tensor *t, int dim) {
    int nd = tensor_ndim(t), perm[8], k = 0;
    for (int d = 0; d < nd; d++) if (d != dim) perm[k++] = d;
    perm[k] = dim;
    int64_t C = tensor_shape(t)[dim], R = C ? tensor_numel(t) / C : 0;
    double *x = test_values(tensor_contiguous(tensor_permute(t, nd, perm)));
    for (int lf = 0; lf < 2; lf++) {
        double *want = ref_softmax_rows(x, R, C, lf != 0);
        tensor *f = lf ? tensor_log_softmax(t, dim) : tensor_softmax(t, dim);
        bool was = tensor_set_reference_kernels(true);
        tensor *r = lf ? tensor_log_softmax(t, dim) : tensor_softmax(t, dim);
        tensor_set_reference_kernels(was);
        CHECK(f && r);
        if (f) test_check_values(__FILE__, line, tensor_contiguous(tensor_permute(f, nd, perm)), want, R * C, 1e-6, 2e-6);
        if (f && r) check_same(line, f, r, 1e-6, 2e-6);
        free(want);
    }
    free(x);
}

TEST(fused_softmax_fast_path) {
    check_softmax_rows(__LINE__, test_random(TENSOR_F32, TENSOR_SHAPE(1, 1), -1, 1));
    for (int64_t c = 1; c <= 41; c += 4) check_softmax_rows(__LINE__, test_random(TENSOR_F32, TENSOR_SHAPE(5, c), -5, 5)); /* every tail */
    check_softmax_rows(__LINE__, test_random(TENSOR_F32, TENSOR_SHAPE(300, 1000), -10, 10));   /* threads over rows */
    check_softmax_rows(__LINE__, test_random(TENSOR_F32, TENSOR_SHAPE(2, 3, 77), -4, 4));
    check_softmax_rows(__LINE__, test_random(TENSOR_F32, TENSOR_SHAPE(3, 5000), -80, 80));      /* wide range: tiny probabilities */
    tensor *big = test_random(TENSOR_F32, TENSOR_SHAPE(4, 100), 1e4, 1e4 + 50);                /* large logits */
    check_softmax_rows(__LINE__, big);
    check_softmax_rows(__LINE__, tensor_slice(test_random(TENSOR_F32, TENSOR_SHAPE(9, 40), -3, 3), 0, 1, 9, 3)); /* strided rows */
    check_softmax_rows(__LINE__, tensor_transpose(test_random(TENSOR_F32, TENSOR_SHAPE(40, 9), -3, 3), 0, 1));   /* rows gathered */
    /* over a dim that is not the innermost (the rows gathered), threads over rows, one-element rows */
    check_softmax_dim(__LINE__, test_random(TENSOR_F32, TENSOR_SHAPE(3, 7, 5, 4), -4, 4), 1);
    check_softmax_dim(__LINE__, test_random(TENSOR_F32, TENSOR_SHAPE(6, 8, 50, 80), -4, 4), 0); /* 32000 rows of 6: 6 chunks */
    check_softmax_dim(__LINE__, test_random(TENSOR_F32, TENSOR_SHAPE(1, 9, 3), -4, 4), 0);
    check_softmax_rows(__LINE__, tensor_zeros(TENSOR_SHAPE(0, 5), TENSOR_F32));
    /* rows with -inf (masked), all -inf, +inf, NaN, and exponents that underflow */
    static const double sp[6][9] = {{0, -INFINITY, 1, 2, -INFINITY, 3, 4, 5, 6},
                                    {-INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY, -INFINITY},
                                    {1, 2, INFINITY, 0, 0, 0, 0, 0, 0},
                                    {1, 2, 3, NAN, 0, 0, 0, 0, 0},
                                    {0, -87, -88, -90, -100, -103, -104, -120, -1e30},
                                    {5, 5, 5, 5, 5, 5, 5, 5, 5}};
    tensor *s = test_tensor(TENSOR_F32, TENSOR_SHAPE(6, 9), &sp[0][0]);
    tensor *fs = tensor_softmax(s, 1);
    double *x = test_values(s), *want = ref_softmax_rows(x, 6, 9, false), *got = test_values(fs);
    for (int i = 0; i < 54; i++) {
        double w = (double)(float)want[i]; /* what rounding the double result to f32 gives */
        CHECK_MSG((w != w && got[i] != got[i]) || fabs(got[i] - w) <= 2e-6 * fabs(w) + 1e-44, "softmax element %d: %.9g vs %.9g", i, got[i], w);
    }
    free(want);
    free(got);
    want = ref_softmax_rows(x, 6, 9, true);
    CHECK_VALUES(tensor_log_softmax(s, 1), want, 54, 1e-5, 1e-6);
    free(want);
    free(x);
    /* the same rows gathered: down the columns of the transpose */
    tensor *st = tensor_contiguous(tensor_transpose(s, 0, 1));
    x = test_values(s), want = ref_softmax_rows(x, 6, 9, false);
    got = test_values(tensor_contiguous(tensor_transpose(tensor_softmax(st, 0), 0, 1)));
    for (int i = 0; i < 54; i++) {
        double w = (double)(float)want[i];
        CHECK_MSG((w != w && got[i] != got[i]) || fabs(got[i] - w) <= 2e-6 * fabs(w) + 1e-44, "softmax over dim 0, element %d: %.9g vs %.9g", i, got[i], w);
    }
    free(want);
    free(got);
    free(x);
}

/* Fused backward (no create_graph) against the composed formula (create_graph, and the reference
   kernels), for f32 and f64, the dim innermost or not, g contiguous, expanded or transposed. */
static tensor *sm_apply(bool lf, tensor *x, int dim) { return lf ? tensor_log_softmax(x, dim) : tensor_softmax(x, dim); }

typedef struct { bool lf, transpose_in; int dim, kind; tensor *w; } sm_case;
static tensor *sm_loss(const sm_case *c, tensor *leaf) {
    int nd = tensor_ndim(leaf);
    tensor *x = c->transpose_in ? tensor_transpose(leaf, 0, nd - 1) : leaf;
    tensor *y = sm_apply(c->lf, x, c->dim);
    if (c->kind == 0) return tensor_sum_all(tensor_mul(y, c->w));
    if (c->kind == 1) return tensor_sum_all(y);                                  /* g expanded */
    return tensor_sum_all(tensor_mul(tensor_transpose(y, 0, nd - 1), tensor_transpose(c->w, 0, nd - 1))); /* g transposed */
}

/* The gradient of leaf three ways: fused (no create_graph), composed (create_graph), reference. */
static void grads_three_ways(tensor *(*loss_of)(const void *, int, tensor *const *), const void *ctx, int n, tensor *const *ins,
                             tensor **gf, tensor **gc, tensor **gr) {
    tensor *l = loss_of(ctx, n, ins);
    CHECK(l && tensor_autograd_grad(1, &l, NULL, n, ins, gf, false) == 0);
    l = loss_of(ctx, n, ins);
    CHECK(l && tensor_autograd_grad(1, &l, NULL, n, ins, gc, true) == 0);
    bool was = tensor_set_reference_kernels(true);
    l = loss_of(ctx, n, ins);
    CHECK(l && tensor_autograd_grad(1, &l, NULL, n, ins, gr, false) == 0);
    tensor_set_reference_kernels(was);
}

static tensor *sm_loss_of(const void *ctx, int n, tensor *const *ins) { (void)n; return sm_loss((const sm_case *)ctx, ins[0]); }

static void check_softmax_backward(int line, tensor_dtype dt, int nd, const int64_t *shape, int dim, bool transpose_in) {
    for (int lf = 0; lf < 2; lf++)
        for (int kind = 0; kind < 3; kind++) {
            sm_case c;
            c.lf = lf != 0;
            c.transpose_in = transpose_in;
            c.dim = dim;
            c.kind = kind;
            tensor *leaf = tensor_set_requires_grad(test_random(dt, nd, shape, -3, 3), true);
            tensor *x = transpose_in ? tensor_transpose(leaf, 0, nd - 1) : leaf;
            c.w = test_random(dt, tensor_ndim(x), tensor_shape(x), -1, 1);
            tensor *gf = NULL, *gc = NULL, *gr = NULL;
            grads_three_ways(sm_loss_of, &c, 1, &leaf, &gf, &gc, &gr);
            double tol = dt == TENSOR_F64 ? 1e-13 : 2e-6;
            check_same(line, gf, gc, tol, tol);
            check_same(line, gf, gr, tol, tol);
        }
}

TEST(fused_softmax_backward_matches_composed) {
    tensor_dtype dts[2] = {TENSOR_F32, TENSOR_F64};
    for (int k = 0; k < 2; k++) {
        check_softmax_backward(__LINE__, dts[k], TENSOR_SHAPE(7, 13), -1, false);
        check_softmax_backward(__LINE__, dts[k], TENSOR_SHAPE(7, 13), 0, false);       /* not innermost: composed */
        check_softmax_backward(__LINE__, dts[k], TENSOR_SHAPE(3, 4, 37), 2, false);
        check_softmax_backward(__LINE__, dts[k], TENSOR_SHAPE(9, 6), 0, true);          /* transposed input */
        check_softmax_backward(__LINE__, dts[k], TENSOR_SHAPE(200, 300), 1, false);    /* threads */
        check_softmax_backward(__LINE__, dts[k], TENSOR_SHAPE(4, 1), 1, false);
    }
    /* against the closed form in double: d sum(w softmax(x)) / dx = s (w - sum(w s)) */
    tensor *x = tensor_set_requires_grad(test_random(TENSOR_F32, TENSOR_SHAPE(5, 21), -2, 2), true);
    tensor *w = test_random(TENSOR_F32, TENSOR_SHAPE(5, 21), -1, 1);
    CHECK(tensor_backward(tensor_sum_all(tensor_mul(tensor_softmax(x, 1), w))) == 0);
    double *xv = test_values(x), *wv = test_values(w), *s = ref_softmax_rows(xv, 5, 21, false), g[105];
    for (int r = 0; r < 5; r++) {
        double dot = 0;
        for (int i = 0; i < 21; i++) dot += wv[r * 21 + i] * s[r * 21 + i];
        for (int i = 0; i < 21; i++) g[r * 21 + i] = s[r * 21 + i] * (wv[r * 21 + i] - dot);
    }
    CHECK_VALUES(tensor_grad(x), g, 105, 1e-7, 1e-5);
    free(xv);
    free(wv);
    free(s);
}

/* ---- layer_norm and rms_norm ---- */

/* x's rows are its last dim (x may be a strided view); w, b may be NULL. */
static void check_norm_forward(int line, tensor *x, tensor *w, tensor *b, double eps) {
    int nd = tensor_ndim(x);
    int64_t C = tensor_shape(x)[nd - 1], R = C ? tensor_numel(x) / C : 0;
    double *xv = test_values(x), *wv = w ? test_values(w) : NULL, *bv = b ? test_values(b) : NULL;
    for (int rms = 0; rms < 2; rms++) {
        double *want = test_ref_norm(xv, R, C, wv, rms ? NULL : bv, eps, rms != 0);
        tensor *f = rms ? tensor_rms_norm(x, w, eps) : tensor_layer_norm(x, w, b, eps);
        bool was = tensor_set_reference_kernels(true);
        tensor *r = rms ? tensor_rms_norm(x, w, eps) : tensor_layer_norm(x, w, b, eps);
        tensor_set_reference_kernels(was);
        test_check_values(__FILE__, line, f, want, R * C, 1e-5, 1e-5);
        check_same(line, f, r, 1e-5, 1e-5);
        free(want);
    }
    free(xv);
    free(wv);
    free(bv);
}

TEST(fused_norm_forward_fast_path) {
    for (int64_t c = 1; c <= 35; c += 2) {
        tensor *x = test_random(TENSOR_F32, TENSOR_SHAPE(6, c), -3, 3);
        check_norm_forward(__LINE__, x, test_random(TENSOR_F32, TENSOR_SHAPE(c), 0.5, 1.5), test_random(TENSOR_F32, TENSOR_SHAPE(c), -1, 1), 1e-5);
        check_norm_forward(__LINE__, x, NULL, NULL, 1e-5);
    }
    tensor *x = test_random(TENSOR_F32, TENSOR_SHAPE(300, 512), -2, 4);                       /* threads over rows */
    check_norm_forward(__LINE__, x, test_random(TENSOR_F32, TENSOR_SHAPE(512), 0.5, 1.5), test_random(TENSOR_F32, TENSOR_SHAPE(512), -1, 1), 1e-5);
    tensor *x3 = test_random(TENSOR_F32, TENSOR_SHAPE(2, 5, 40), 100, 101);                  /* a large mean */
    check_norm_forward(__LINE__, x3, test_random(TENSOR_F64, TENSOR_SHAPE(40), 0.5, 1.5), NULL, 1e-5); /* f64 weight */
    tensor *xs = tensor_slice(test_random(TENSOR_F32, TENSOR_SHAPE(9, 24), -1, 1), 0, 0, 9, 2);       /* strided rows */
    tensor *wt = tensor_slice(test_random(TENSOR_F32, TENSOR_SHAPE(48), 0.5, 1.5), 0, 0, 48, 2);      /* strided weight */
    check_norm_forward(__LINE__, xs, wt, test_random(TENSOR_BF16, TENSOR_SHAPE(24), -1, 1), 0.5);
    check_norm_forward(__LINE__, tensor_transpose(test_random(TENSOR_F32, TENSOR_SHAPE(24, 5), -1, 1), 0, 1), NULL, NULL, 1e-5); /* reference path */
    check_norm_forward(__LINE__, tensor_zeros(TENSOR_SHAPE(0, 8), TENSOR_F32), NULL, NULL, 1e-5);
    check_norm_forward(__LINE__, tensor_full(TENSOR_SHAPE(3, 16), 2, TENSOR_F32), NULL, NULL, 1e-5);  /* zero variance */
}

/* Fused norm backward against the composed formula (create_graph; reference kernels), with the
   weight and bias optional, more rows than one group of partial sums, thread-count independent. */
typedef struct { bool rms; double eps; tensor *u; int which; } norm_case;
static tensor *norm_loss_of(const void *ctx, int n, tensor *const *ins) {
    const norm_case *c = (const norm_case *)ctx;
    (void)n;
    int k = 1;
    tensor *w = c->which & 1 ? ins[k++] : NULL;
    tensor *b = c->which & 2 ? ins[k++] : NULL;
    tensor *y = c->rms ? tensor_rms_norm(ins[0], w, c->eps) : tensor_layer_norm(ins[0], w, b, c->eps);
    return tensor_sum_all(tensor_mul(y, c->u));
}

static void check_norm_backward(int line, tensor_dtype dt, int64_t R, int64_t C, int which, bool rms, double eps) {
    norm_case c;
    c.rms = rms;
    c.eps = eps;
    c.which = rms ? which & 1 : which;
    c.u = test_random(dt, TENSOR_SHAPE(R, C), -1, 1);
    tensor *ins[3] = {tensor_set_requires_grad(test_random(dt, TENSOR_SHAPE(R, C), -2, 2), true), NULL, NULL};
    int n = 1;
    if (c.which & 1) ins[n++] = tensor_set_requires_grad(test_random(dt, TENSOR_SHAPE(C), 0.5, 1.5), true);
    if (c.which & 2) ins[n++] = tensor_set_requires_grad(test_random(dt, TENSOR_SHAPE(C), -1, 1), true);
    tensor *gf[3] = {0}, *gc[3] = {0}, *gr[3] = {0}, *g1[3] = {0};
    grads_three_ways(norm_loss_of, &c, n, ins, gf, gc, gr);
    int threads = tensor_get_num_threads();
    tensor_set_num_threads(1);
    tensor *l = norm_loss_of(&c, n, ins);
    CHECK(tensor_autograd_grad(1, &l, NULL, n, ins, g1, false) == 0);
    tensor_set_num_threads(threads);
    /* C == 1: gx is 0 exactly, and each way leaves f32 rounding of g w times rstd (up to
       1/sqrt(eps) = 316), so the bound is that noise, not the usual one */
    double tol = dt == TENSOR_F64 ? 1e-12 : C == 1 ? 4e-7 / sqrt(eps) : 1e-5;
    for (int i = 0; i < n; i++) {
        double t = tol * (i ? sqrt((double)R) : 1); /* gw, gb sum over R rows */
        check_same(line, gf[i], gc[i], t, t);
        check_same(line, gf[i], gr[i], t, t);
        if (!test_same_bits(gf[i], g1[i])) test_fail(__FILE__, line, "gradient %d depends on the thread count", i);
    }
}

TEST(fused_norm_backward_matches_composed) {
    tensor_dtype dts[2] = {TENSOR_F32, TENSOR_F64};
    for (int k = 0; k < 2; k++)
        for (int which = 0; which < 4; which++) {
            check_norm_backward(__LINE__, dts[k], 5, 13, which, false, 1e-5);
            check_norm_backward(__LINE__, dts[k], 5, 13, which, true, 1e-6);
            check_norm_backward(__LINE__, dts[k], 150, 40, which, false, 0.5);    /* 3 groups of partial sums */
            check_norm_backward(__LINE__, dts[k], 150, 40, which, true, 1e-5);
        }
    check_norm_backward(__LINE__, TENSOR_F32, 700, 256, 3, false, 1e-5);         /* threads */
    check_norm_backward(__LINE__, TENSOR_F32, 3, 1, 3, false, 1e-5);
    /* a non-contiguous x and an f64 weight for f32 x: the fused path copies and converts */
    tensor *leaf = tensor_set_requires_grad(test_random(TENSOR_F32, TENSOR_SHAPE(6, 12), -2, 2), true);
    tensor *w = tensor_set_requires_grad(test_random(TENSOR_F64, TENSOR_SHAPE(6), 0.5, 1.5), true);
    tensor *ins[2] = {leaf, w}, *gf[2] = {0}, *gc[2] = {0};
    tensor *loss = tensor_sum_all(tensor_square(tensor_layer_norm(tensor_transpose(leaf, 0, 1), w, NULL, 1e-5)));
    CHECK(tensor_autograd_grad(1, &loss, NULL, 2, ins, gc, true) == 0);
    CHECK(tensor_autograd_grad(1, &loss, NULL, 2, ins, gf, false) == 0);
    CHECK(tensor_get_dtype(gf[1]) == TENSOR_F64);
    CHECK_SAME(gf[0], gc[0], 1e-5, 1e-5);
    CHECK_SAME(gf[1], gc[1], 1e-5, 1e-5);
}

/* ---- cross_entropy: the fused kernel and its backward ---- */

/* The loss in double: logits [N, C, S] (S positions after the class dim), class targets [N, S]
   (ignore -100) or probabilities of the logits' shape. */
static double ref_ce(const double *x, int64_t N, int64_t C, int64_t S, const double *cls, const double *p) {
    double sum = 0;
    int64_t used = 0;
    for (int64_t n = 0; n < N; n++)
        for (int64_t s = 0; s < S; s++) {
            if (cls && cls[n * S + s] == -100) continue;
            double mx = -INFINITY, e = 0;
            for (int64_t c = 0; c < C; c++) mx = fmax(mx, x[(n * C + c) * S + s]);
            for (int64_t c = 0; c < C; c++) e += exp(x[(n * C + c) * S + s] - mx);
            double lse = mx + log(e);
            if (cls) sum += lse - x[(n * C + (int64_t)cls[n * S + s]) * S + s];
            else for (int64_t c = 0; c < C; c++) sum += p[(n * C + c) * S + s] * (lse - x[(n * C + c) * S + s]);
            used++;
        }
    return sum / (double)used;
}

/* (softmax - onehot) / count for class targets; (softmax sum(p) - p) / rows for probabilities */
static double *ref_ce_grad(const double *x, int64_t N, int64_t C, int64_t S, const double *cls, const double *p) {
    double *g = (double *)calloc((size_t)(N * C * S + 1), sizeof(double));
    int64_t used = 0;
    for (int64_t i = 0; i < N * S; i++) used += !cls || cls[i] != -100;
    for (int64_t n = 0; n < N; n++)
        for (int64_t s = 0; s < S; s++) {
            if (cls && cls[n * S + s] == -100) continue;
            double mx = -INFINITY, e = 0, ps = 0;
            for (int64_t c = 0; c < C; c++) mx = fmax(mx, x[(n * C + c) * S + s]);
            for (int64_t c = 0; c < C; c++) e += exp(x[(n * C + c) * S + s] - mx);
            for (int64_t c = 0; c < C; c++) ps += cls ? 0 : p[(n * C + c) * S + s];
            for (int64_t c = 0; c < C; c++) {
                double sm = exp(x[(n * C + c) * S + s] - mx) / e;
                int64_t i = (n * C + c) * S + s;
                g[i] = (cls ? sm - (c == (int64_t)cls[n * S + s]) : sm * ps - p[i]) / (double)used;
            }
        }
    return g;
}

static tensor *with_reference(tensor *(*f)(tensor *, tensor *), tensor *a, tensor *b) {
    bool was = tensor_set_reference_kernels(true);
    tensor *r = f(a, b);
    tensor_set_reference_kernels(was);
    return r;
}

TEST(fused_cross_entropy_forward) {
    tensor_dtype dts[3] = {TENSOR_F32, TENSOR_F64, TENSOR_F16};
    for (int k = 0; k < 3; k++) {
        double tol = dts[k] == TENSOR_F64 ? 1e-13 : dts[k] == TENSOR_F32 ? 1e-6 : test_tol(TENSOR_F16);
        int64_t N = 67, C = 29; /* rows and classes that fill no vector exactly */
        tensor *x = test_random(dts[k], TENSOR_SHAPE(N, C), -4, 4);
        double *xv = test_values(x), cls[67];
        for (int i = 0; i < N; i++) cls[i] = i % 11 == 3 ? -100 : (double)((i * 7) % C);
        tensor *t = test_tensor(TENSOR_I64, TENSOR_SHAPE(N), cls);
        double want = ref_ce(xv, N, C, 1, cls, NULL);
        CHECK_NEAR(tensor_item(tensor_cross_entropy(x, t)), want, tol, tol);
        CHECK_NEAR(tensor_item(with_reference(tensor_cross_entropy, x, t)), want, tol, tol);
        CHECK_NEAR(tensor_item(tensor_cross_entropy(x, tensor_to_dtype(t, TENSOR_I32))), want, tol, tol);
        /* probabilities, in the logits' dtype and in f64 (the loss then is f64) */
        tensor *p = tensor_softmax(test_random(dts[k], TENSOR_SHAPE(N, C), -2, 2), 1);
        double *pv = test_values(p);
        double wp = ref_ce(xv, N, C, 1, NULL, pv);
        tensor *lp = tensor_cross_entropy(x, p);
        CHECK(tensor_get_dtype(lp) == dts[k]);
        CHECK_NEAR(tensor_item(lp), wp, tol, tol);
        CHECK_NEAR(tensor_item(with_reference(tensor_cross_entropy, x, p)), wp, tol, tol);
        tensor *l64 = tensor_cross_entropy(x, tensor_to_dtype(p, TENSOR_F64));
        CHECK(tensor_get_dtype(l64) == TENSOR_F64);
        CHECK_NEAR(tensor_item(l64), wp, 1e-12, dts[k] == TENSOR_F64 ? 1e-12 : 1e-6); /* f32 logits: their exp in f32 */
        free(pv);
        /* non-contiguous logits (the leaf is [C, N]) and [N, C, S] */
        tensor *xt = tensor_transpose(test_random(dts[k], TENSOR_SHAPE(C, N), -4, 4), 0, 1);
        double *xtv = test_values(xt);
        CHECK_NEAR(tensor_item(tensor_cross_entropy(xt, t)), ref_ce(xtv, N, C, 1, cls, NULL), tol, tol);
        free(xtv);
        tensor *x3 = test_random(dts[k], TENSOR_SHAPE(3, 5, 4), -3, 3);
        double *x3v = test_values(x3);
        static const double t3[12] = {0, 4, -100, 2, 1, 1, 3, 0, 4, 4, 2, -100};
        CHECK_NEAR(tensor_item(tensor_cross_entropy(x3, test_tensor(TENSOR_I64, TENSOR_SHAPE(3, 4), t3))), ref_ce(x3v, 3, 5, 4, t3, NULL), tol, tol);
        free(x3v);
        free(xv);
    }
    /* many rows: the partial sums over groups of rows split over the pool */
    tensor *xb = test_random(TENSOR_F32, TENSOR_SHAPE(5000, 100), -5, 5);
    tensor *tb = tensor_randint(0, 100, TENSOR_SHAPE(5000), TENSOR_I64);
    double *xbv = test_values(xb), *tbv = test_values(tb);
    CHECK_NEAR(tensor_item(tensor_cross_entropy(xb, tb)), ref_ce(xbv, 5000, 100, 1, tbv, NULL), 1e-6, 1e-6);
    free(xbv);
    free(tbv);
    /* rows with infinities and NaN take the reference path: same answers as PyTorch's formula */
    static const double sx[3][3] = {{-INFINITY, 0, 1}, {1000, -1000, 0}, {NAN, 0, 0}};
    tensor *x = test_tensor(TENSOR_F32, TENSOR_SHAPE(3, 3), &sx[0][0]);
    static const double st[3] = {2, 0, -100};
    CHECK_NEAR(tensor_item(tensor_cross_entropy(x, test_tensor(TENSOR_I64, TENSOR_SHAPE(3), st))), (log(1 + exp(-1.0)) + 0) / 2, 1e-6, 1e-6);
    static const double st2[3] = {2, 0, 1};
    CHECK(isnan(tensor_item(tensor_cross_entropy(x, test_tensor(TENSOR_I64, TENSOR_SHAPE(3), st2)))));
    /* nothing counted: NaN; a bad class is refused by the kernel with the public name */
    static const double all_ign[2] = {-100, -100};
    CHECK(isnan(tensor_item(tensor_cross_entropy(test_random(TENSOR_F32, TENSOR_SHAPE(2, 4), -1, 1), test_tensor(TENSOR_I64, TENSOR_SHAPE(2), all_ign)))));
    CHECK(isnan(tensor_item(tensor_cross_entropy(tensor_zeros(TENSOR_SHAPE(3, 0), TENSOR_F32), tensor_zeros(TENSOR_SHAPE(3, 0), TENSOR_F32)))));
    static const double bad[2] = {1, 4};
    CHECK_BAD(tensor_cross_entropy(test_random(TENSOR_F32, TENSOR_SHAPE(2, 4), -1, 1), test_tensor(TENSOR_I64, TENSOR_SHAPE(2), bad)), "tensor_cross_entropy");
    CHECK_BAD(tensor_cross_entropy(test_random(TENSOR_F32, TENSOR_SHAPE(2, 4), -1, 1), tensor_full(TENSOR_SHAPE(2), -1, TENSOR_I64)), "tensor_cross_entropy");
}

static tensor *ce3_loss_of(const void *ctx, int n, tensor *const *ins) {
    (void)n;
    return tensor_mul_scalar(tensor_cross_entropy(ins[0], (tensor *)(uintptr_t)ctx), 3);
}
static tensor *cep_loss_of(const void *ctx, int n, tensor *const *ins) {
    (void)ctx;
    (void)n;
    return tensor_cross_entropy(ins[0], ins[1]);
}

/* The fused backward against the closed form, the composed formula (create_graph) and the
   reference kernels; probability targets get their gradient -log_softmax(x) g / rows. */
TEST(fused_cross_entropy_backward) {
    tensor_dtype dts[2] = {TENSOR_F32, TENSOR_F64};
    for (int k = 0; k < 2; k++) {
        double tol = dts[k] == TENSOR_F64 ? 1e-14 : 1e-7;
        int64_t N = 45, C = 19;
        tensor *x = tensor_set_requires_grad(test_random(dts[k], TENSOR_SHAPE(N, C), -4, 4), true);
        double *xv = test_values(x), cls[45];
        for (int i = 0; i < N; i++) cls[i] = i % 7 == 5 ? -100 : (double)((i * 5) % C);
        tensor *t = test_tensor(TENSOR_I64, TENSOR_SHAPE(N), cls);
        double *want = ref_ce_grad(xv, N, C, 1, cls, NULL);
        for (int i = 0; i < N * C; i++) want[i] *= 3;
        tensor *gf = NULL, *gc = NULL, *gr = NULL;
        grads_three_ways(ce3_loss_of, t, 1, &x, &gf, &gc, &gr); /* 3 ce: g = 3 */
        CHECK_VALUES(gf, want, N * C, tol, 1e-5);
        CHECK_VALUES(gc, want, N * C, tol, 1e-5);
        CHECK_VALUES(gr, want, N * C, tol, 1e-5);
        free(want);
        /* [N, C, S] with ignored positions (generic rows) and [C] with a 0-dim target */
        tensor *x3 = tensor_set_requires_grad(test_random(dts[k], TENSOR_SHAPE(3, 5, 4), -3, 3), true);
        static const double t3[12] = {0, 4, -100, 2, 1, 1, 3, 0, 4, 4, 2, -100};
        CHECK(tensor_backward(tensor_cross_entropy(x3, test_tensor(TENSOR_I64, TENSOR_SHAPE(3, 4), t3))) == 0);
        double *x3v = test_values(x3), *w3 = ref_ce_grad(x3v, 3, 5, 4, t3, NULL);
        CHECK_VALUES(tensor_grad(x3), w3, 60, tol, 1e-5);
        free(x3v);
        free(w3);
        tensor *x1 = tensor_set_requires_grad(test_random(dts[k], TENSOR_SHAPE(7), -3, 3), true);
        CHECK(tensor_backward(tensor_cross_entropy(x1, tensor_scalar(6, TENSOR_I64))) == 0);
        double *x1v = test_values(x1), c6 = 6, *w1 = ref_ce_grad(x1v, 1, 7, 1, &c6, NULL);
        CHECK_VALUES(tensor_grad(x1), w1, 7, tol, 1e-5);
        free(x1v);
        free(w1);
        /* probabilities: both arguments get gradients */
        tensor *p = tensor_set_requires_grad(tensor_softmax(test_random(dts[k], TENSOR_SHAPE(N, C), -2, 2), 1), true);
        tensor *ins[2] = {x, p}, *pf[2] = {0}, *pc[2] = {0}, *pr[2] = {0};
        grads_three_ways(cep_loss_of, NULL, 2, ins, pf, pc, pr);
        double *pv = test_values(p), *wx = ref_ce_grad(xv, N, C, 1, NULL, pv), *wpg = (double *)malloc(sizeof(double) * (size_t)(N * C));
        for (int64_t r = 0; r < N; r++) {
            double mx = -INFINITY, e = 0;
            for (int64_t c = 0; c < C; c++) mx = fmax(mx, xv[r * C + c]);
            for (int64_t c = 0; c < C; c++) e += exp(xv[r * C + c] - mx);
            for (int64_t c = 0; c < C; c++) wpg[r * C + c] = (mx + log(e) - xv[r * C + c]) / (double)N;
        }
        CHECK_VALUES(pf[0], wx, N * C, tol, 1e-5);
        CHECK_VALUES(pc[0], wx, N * C, tol, 1e-5);
        CHECK_VALUES(pr[0], wx, N * C, tol, 1e-5);
        CHECK_VALUES(pf[1], wpg, N * C, tol, 1e-5);
        CHECK_VALUES(pc[1], wpg, N * C, tol, 1e-5);
        CHECK_VALUES(pr[1], wpg, N * C, tol, 1e-5);
        free(pv);
        free(wx);
        free(wpg);
        free(xv);
    }
    /* every target ignored: zero gradient */
    static const double ign[3] = {-100, -100, -100};
    tensor *x = tensor_set_requires_grad(test_random(TENSOR_F32, TENSOR_SHAPE(3, 10), -1, 1), true);
    CHECK(tensor_backward(tensor_cross_entropy(x, test_tensor(TENSOR_I64, TENSOR_SHAPE(3), ign))) == 0);
    static const double z[30] = {0};
    CHECK_VALUES(tensor_grad(x), z, 30, 0, 0);
    /* a big batch through the threaded rows, and an MLP-sized f32 step against the closed form */
    tensor *xb = tensor_set_requires_grad(test_random(TENSOR_F32, TENSOR_SHAPE(3000, 10), -6, 6), true);
    tensor *tb = tensor_randint(0, 10, TENSOR_SHAPE(3000), TENSOR_I64);
    CHECK(tensor_backward(tensor_cross_entropy(xb, tb)) == 0);
    double *xbv = test_values(xb), *tbv = test_values(tb), *wb = ref_ce_grad(xbv, 3000, 10, 1, tbv, NULL);
    CHECK_VALUES(tensor_grad(xb), wb, 30000, 1e-9, 1e-5);
    free(xbv);
    free(tbv);
    free(wb);
}

/* ---- fused backward of unary ops ---- */

/* d sum(f(x) w) / dx on the fused one-pass kernel against the composed formula on the reference
   kernels, and against f'(x) w written here in double (central to each op's choice at the kinks). */
static double ref_dunary(const char *name, double x, double p0, double p1) {
    double s = 1 / (1 + exp(-x));
    if (!strcmp(name, "relu")) return x <= 0 ? 0 : 1; /* threshold_backward: a NaN x passes g */
    if (!strcmp(name, "leaky_relu")) return x > 0 ? 1 : p0;
    if (!strcmp(name, "relu6")) return x > 0 && x < 6 ? 1 : 0;
    if (!strcmp(name, "hardtanh")) return x > p0 && x < p1 ? 1 : 0;
    if (!strcmp(name, "clamp")) return x >= p0 && x <= p1 ? 1 : 0;
    if (!strcmp(name, "tanh")) return 1 - tanh(x) * tanh(x);
    if (!strcmp(name, "sigmoid")) return s * (1 - s);
    if (!strcmp(name, "exp")) return exp(x);
    if (!strcmp(name, "silu")) return s * (1 + x * (1 - s));
    if (!strcmp(name, "gelu_tanh")) {
        double k = sqrt(2 / M_PI), t = tanh(k * (x + 0.044715 * x * x * x));
        return 0.5 * (1 + t) + 0.5 * x * (1 - t * t) * k * (1 + 3 * 0.044715 * x * x);
    }
    return 0.5 * (1 + erf(x / sqrt(2.0))) + x * exp(-x * x / 2) / sqrt(2 * M_PI); /* gelu */
}
static tensor *apply_unary(const char *name, tensor *x, double p0, double p1) {
    if (!strcmp(name, "relu")) return tensor_relu(x);
    if (!strcmp(name, "leaky_relu")) return tensor_leaky_relu(x, p0);
    if (!strcmp(name, "relu6")) return tensor_relu6(x);
    if (!strcmp(name, "hardtanh")) return tensor_hardtanh(x, p0, p1);
    if (!strcmp(name, "clamp")) return tensor_clamp(x, p0, p1);
    if (!strcmp(name, "tanh")) return tensor_tanh(x);
    if (!strcmp(name, "sigmoid")) return tensor_sigmoid(x);
    if (!strcmp(name, "exp")) return tensor_exp(x);
    if (!strcmp(name, "silu")) return tensor_silu(x);
    if (!strcmp(name, "gelu_tanh")) return tensor_gelu_tanh(x);
    return tensor_gelu(x);
}
TEST(fused_unary_backward_matches_composed) {
    static const char *const names[] = {"relu", "leaky_relu", "relu6", "hardtanh", "clamp", "tanh", "sigmoid", "exp", "silu", "gelu", "gelu_tanh"};
    tensor_dtype dts[2] = {TENSOR_F32, TENSOR_F64};
    for (int k = 0; k < 2; k++)
        for (size_t o = 0; o < sizeof names / sizeof names[0]; o++)
            for (int layout = 0; layout < 3; layout++) { /* contiguous, transposed, large (threads) */
                const char *name = names[o];
                double p0 = !strcmp(name, "leaky_relu") ? 0.1 : -1.5, p1 = 2.0;
                int64_t r = layout == 2 ? 300 : 9, c = layout == 2 ? 700 : 37;
                tensor *x0 = test_random(dts[k], TENSOR_SHAPE(r, c), -8, 8);
                double *xs = test_values(x0);
                /* the kinks and edges exactly: 0, the clamp bounds, 6, and the chunk boundary */
                double edges[6] = {0, -0.0, p0, p1, 6, -1e-30};
                for (int e = 0; e < 6; e++) xs[e * 5] = edges[e];
                tensor *x = tensor_set_requires_grad(test_tensor(dts[k], TENSOR_SHAPE(r, c), xs), true);
                tensor *w = test_random(dts[k], TENSOR_SHAPE(layout == 1 ? c : r, layout == 1 ? r : c), -1, 1);
                tensor *wv_t = layout == 1 ? tensor_transpose(w, 0, 1) : w;
                CHECK(tensor_backward(tensor_sum_all(tensor_mul(apply_unary(name, x, p0, p1), wv_t))) == 0);
                tensor *fast = tensor_clone(tensor_grad(x));
                tensor_zero_grad(x);
                bool was = tensor_set_reference_kernels(true);
                CHECK(tensor_backward(tensor_sum_all(tensor_mul(apply_unary(name, x, p0, p1), wv_t))) == 0);
                tensor_set_reference_kernels(was);
                double tol = dts[k] == TENSOR_F32 ? 2e-6 : 1e-13;
                CHECK_SAME(fast, tensor_grad(x), tol, tol);
                double *wv = test_values(wv_t), *want = (double *)malloc(sizeof(double) * (size_t)(r * c));
                double *xv = test_values(x);
                for (int64_t i = 0; i < r * c; i++) want[i] = ref_dunary(name, xv[i], p0, p1) * wv[i];
                test_check_values(__FILE__, __LINE__, fast, want, r * c, dts[k] == TENSOR_F32 ? 1e-5 : 1e-12, dts[k] == TENSOR_F32 ? 1e-5 : 1e-12);
                free(xs);
                free(xv);
                free(wv);
                free(want);
                if (test_failures_in_current_test()) { printf("  (op %s, %s, layout %d)\n", name, k ? "f64" : "f32", layout); return; }
            }
}

/* linear on x [B, T, C] (the batch folded into the rows for the weight's gradient) and a split of
   its output (each part's gradient copied into zeros, not scattered): the gradients of the weight,
   the bias and x against double loops, with and without create_graph (which records the composed,
   differentiable formulas). */
TEST(fused_linear_and_split_backward) {
    const int64_t B = 3, T = 5, C = 7, O = 6; /* O = 3 parts of 2 */
    for (int cg = 0; cg < 2; cg++) {
        tensor *x = tensor_set_requires_grad(test_random(TENSOR_F64, 3, (int64_t[]){B, T, C}, -1, 1), true);
        tensor *w = tensor_set_requires_grad(test_random(TENSOR_F64, 2, (int64_t[]){O, C}, -1, 1), true);
        tensor *b = tensor_set_requires_grad(test_random(TENSOR_F64, 1, &O, -1, 1), true);
        tensor *gw[3] = {test_random(TENSOR_F64, 3, (int64_t[]){B, T, 2}, -1, 1), test_random(TENSOR_F64, 3, (int64_t[]){B, T, 2}, -1, 1),
                         test_random(TENSOR_F64, 3, (int64_t[]){B, T, 2}, -1, 1)};
        tensor *parts[3] = {NULL, NULL, NULL};
        tensor *y = tensor_linear(x, w, b);
        CHECK(y && tensor_split(y, 2, 2, parts, 3) == 3);
        if (!parts[2]) return;
        /* loss = sum_i sum(part_i * gw_i) (part 1 twice: two slices of one part accumulate) */
        tensor *loss = tensor_add(tensor_add(tensor_sum_all(tensor_mul(parts[0], gw[0])), tensor_sum_all(tensor_mul(parts[1], gw[1]))),
                                  tensor_add(tensor_sum_all(tensor_mul(parts[2], gw[2])), tensor_sum_all(tensor_mul(parts[1], gw[1]))));
        tensor *ins[3] = {x, w, b}, *grads[3] = {NULL, NULL, NULL};
        CHECK(tensor_autograd_grad(1, &loss, NULL, 3, ins, grads, cg == 1) == 0);
        if (!grads[2]) return;
        /* dy [B, T, O]: gw's parts side by side, part 1 doubled */
        double *xv = test_values(x), *wv = test_values(w), *g[3] = {test_values(gw[0]), test_values(gw[1]), test_values(gw[2])};
        double dy[3 * 5 * 6], dx[3 * 5 * 7] = {0}, dw[6 * 7] = {0}, db[6] = {0};
        for (int64_t r = 0; r < B * T; r++)
            for (int64_t o = 0; o < O; o++) dy[r * O + o] = g[o / 2][r * 2 + o % 2] * (o / 2 == 1 ? 2 : 1);
        for (int64_t r = 0; r < B * T; r++)
            for (int64_t o = 0; o < O; o++) {
                db[o] += dy[r * O + o];
                for (int64_t c = 0; c < C; c++) { dw[o * C + c] += dy[r * O + o] * xv[r * C + c]; dx[r * C + c] += dy[r * O + o] * wv[o * C + c]; }
            }
        CHECK_VALUES(grads[0], dx, B * T * C, 1e-13, 1e-13);
        CHECK_VALUES(grads[1], dw, O * C, 1e-13, 1e-13);
        CHECK_VALUES(grads[2], db, O, 1e-13, 1e-13);
        free(xv);
        free(wv);
        for (int i = 0; i < 3; i++) free(g[i]);
        if (test_failures_in_current_test()) { printf("  (create_graph %d)\n", cg); return; }
    }
}
