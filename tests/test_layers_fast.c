/* The fast paths of the layer composites (generator/parts/pool.h, norm.h, resample.h: the window
   pools, batch_norm, interpolate, conv_transpose2d) against their composites, which run under
   tensor_set_reference_kernels(true): odd sizes, non-contiguous inputs, ceil_mode and dilation,
   align_corners, ties, NaN and infinities, f32 and f64. Each test also checks, with the test
   build's path counters, that the fast path ran. */
#include "test.h"

/* ---- helpers ---- */

/* a (the fast path's) and b (the composite's) have one shape and dtype, and the same values:
   NaN where the other is NaN, else within atol + rtol |b| (exact for integers: atol = rtol = 0). */
static void same_values(const char *what, tensor *a, tensor *b, double atol, double rtol) {
    CHECK_MSG(a && b, "%s: missing result (%s)", what, tensor_last_error() ? tensor_last_error() : "no error");
    if (!a || !b) return;
    CHECK_MSG(tensor_get_dtype(a) == tensor_get_dtype(b) && tensor_ndim(a) == tensor_ndim(b), "%s: dtype or rank differ", what);
    for (int d = 0; d < tensor_ndim(a) && d < tensor_ndim(b); d++)
        CHECK_MSG(tensor_shape(a)[d] == tensor_shape(b)[d], "%s: dim %d is %lld, the composite's %lld", what, d, (long long)tensor_shape(a)[d], (long long)tensor_shape(b)[d]);
    if (tensor_numel(a) != tensor_numel(b)) return;
    double *x = test_values(a), *y = test_values(b);
    for (int64_t i = 0; i < tensor_numel(a); i++) {
        bool ok = (x[i] != x[i] && y[i] != y[i]) || x[i] == y[i] || fabs(x[i] - y[i]) <= atol + rtol * fabs(y[i]);
        if (!ok) { CHECK_MSG(ok, "%s: element %lld: %.17g on the fast path, %.17g by the composite", what, (long long)i, x[i], y[i]); break; }
    }
    free(x);
    free(y);
}
static double tol_of(tensor_dtype dt) { return dt == TENSOR_F64 ? 1e-12 : 2e-6; }

/* Values with ties (-0 and +0 among them), infinities and a NaN now and then. */
static tensor *ties(tensor_dtype dt, int nd, const int64_t *shape, bool nans) {
    static const double pool[] = {-1, -0.0, 0.0, 1, 2, 0.5, -INFINITY, INFINITY, -2, 3.25};
    int64_t n = test_numel(nd, shape);
    double *v = (double *)malloc(sizeof(double) * (size_t)(n + 1));
    for (int64_t i = 0; i < n; i++) {
        int r = (int)test_uniform(0, 10);
        v[i] = pool[r < 10 ? r : 9];
        if (nans && test_uniform(0, 40) < 1) v[i] = NAN;
    }
    tensor *t = test_tensor(dt, nd, shape, v);
    free(v);
    return t;
}

/* A tensor of the given shape whose last two dims are a transposed view (not contiguous). */
static tensor *strided(tensor *(*make)(tensor_dtype, int, const int64_t *, bool), tensor_dtype dt, int nd, const int64_t *shape, bool nans) {
    int64_t s[8];
    for (int i = 0; i < nd; i++) s[i] = shape[i];
    s[nd - 1] = shape[nd - 2];
    s[nd - 2] = shape[nd - 1];
    return tensor_transpose(make(dt, nd, s, nans), nd - 1, nd - 2);
}
static tensor *uniform(tensor_dtype dt, int nd, const int64_t *shape, bool unused) {
    (void)unused;
    return test_random(dt, nd, shape, -2, 2);
}

/* ---- pools ---- */

typedef struct { int k, s, p, d; bool ceil; } pool_cfg;

static void check_max_pool(const char *what, tensor *x, const pool_cfg *c) {
    tensor *ir = NULL, *ifast = NULL;
    bool was = tensor_set_reference_kernels(true);
    tensor *yr = tensor_max_pool2d_with_indices(x, c->k, c->s, c->p, c->d, c->ceil, &ir);
    tensor_set_reference_kernels(was);
    tensor *yf = tensor_max_pool2d_with_indices(x, c->k, c->s, c->p, c->d, c->ceil, &ifast);
    same_values(what, yf, yr, 0, 0);
    same_values(what, ifast, ir, 0, 0);
}

TEST(layers_fast_max_pool2d_with_indices) {
    static const pool_cfg cfgs[] = {{3, 2, 1, 1, false}, {3, 2, 1, 1, true}, {2, 2, 0, 2, true}, {2, 0, 1, 1, true}, {3, 1, 1, 2, false}, {1, 3, 0, 1, true}};
    int64_t before = tensor_test_path_count("layer_pool");
    tensor_scope_begin();
    for (int dt = 0; dt < 2; dt++) {
        tensor_dtype t = dt ? TENSOR_F64 : TENSOR_F32;
        for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
            char what[96];
            snprintf(what, sizeof what, "max_pool2d_with_indices %s k%d s%d p%d d%d ceil %d", dt ? "f64" : "f32", cfgs[i].k, cfgs[i].s, cfgs[i].p, cfgs[i].d, cfgs[i].ceil);
            check_max_pool(what, ties(t, TENSOR_SHAPE(2, 3, 7, 9), true), &cfgs[i]);
            check_max_pool(what, strided(ties, t, TENSOR_SHAPE(2, 3, 8, 5), true), &cfgs[i]);
            check_max_pool(what, ties(t, TENSOR_SHAPE(3, 6, 7), false), &cfgs[i]); /* unbatched */
        }
    }
    tensor_scope_end();
    CHECK(tensor_test_path_count("layer_pool") > before);
}

TEST(layers_fast_pools_adaptive_and_1d) {
    static const int64_t outs[][2] = {{4, 5}, {3, 3}, {7, 9}, {1, 1}, {9, 11}};
    int64_t before = tensor_test_path_count("layer_pool");
    tensor_scope_begin();
    for (int dt = 0; dt < 2; dt++) {
        tensor_dtype t = dt ? TENSOR_F64 : TENSOR_F32;
        tensor *xs[2] = {ties(t, TENSOR_SHAPE(2, 3, 7, 9), true), strided(uniform, t, TENSOR_SHAPE(2, 3, 7, 9), false)};
        for (int k = 0; k < 2; k++)
            for (size_t i = 0; i < sizeof outs / sizeof outs[0]; i++) {
                tensor *ir = NULL, *ifast = NULL;
                bool was = tensor_set_reference_kernels(true);
                tensor *mr = tensor_adaptive_max_pool2d(xs[k], outs[i][0], outs[i][1], &ir), *ar = tensor_adaptive_avg_pool2d(xs[k], outs[i][0], outs[i][1]);
                tensor_set_reference_kernels(was);
                tensor *mf = tensor_adaptive_max_pool2d(xs[k], outs[i][0], outs[i][1], &ifast), *af = tensor_adaptive_avg_pool2d(xs[k], outs[i][0], outs[i][1]);
                same_values("adaptive_max_pool2d", mf, mr, 0, 0);
                same_values("adaptive_max_pool2d indices", ifast, ir, 0, 0);
                same_values("adaptive_avg_pool2d", af, ar, tol_of(t), tol_of(t));
            }
        /* 1-D pools go through the same windows: ceil_mode, count_include_pad, dilation */
        tensor *x1 = strided(uniform, t, TENSOR_SHAPE(2, 11, 3), false); /* [2, 3, 11] */
        for (int ceil = 0; ceil < 2; ceil++)
            for (int cip = 0; cip < 2; cip++) {
                bool was = tensor_set_reference_kernels(true);
                tensor *ar = tensor_avg_pool1d(x1, 3, 2, 1, ceil, cip), *mr = tensor_max_pool1d(x1, 3, 2, 1, 2, ceil, NULL);
                tensor_set_reference_kernels(was);
                same_values("avg_pool1d", tensor_avg_pool1d(x1, 3, 2, 1, ceil, cip), ar, tol_of(t), tol_of(t));
                same_values("max_pool1d", tensor_max_pool1d(x1, 3, 2, 1, 2, ceil, NULL), mr, 0, 0);
            }
        same_values("adaptive_avg_pool1d", tensor_adaptive_avg_pool1d(x1, 4), (tensor_set_reference_kernels(true), tensor_adaptive_avg_pool1d(x1, 4)), tol_of(t), tol_of(t));
        tensor_set_reference_kernels(false);
    }
    tensor_scope_end();
    CHECK(tensor_test_path_count("layer_pool") > before);
}

/* Under autograd: max pooling's fast path (gather at its indices) and the average pools' node
   (its adjoint kernel) give the composite's gradients. */
static tensor *pool_of(int which, tensor *x) {
    switch (which) {
    case 0: return tensor_max_pool2d_with_indices(x, 3, 2, 1, 1, true, NULL);
    case 1: return tensor_adaptive_max_pool2d(x, 3, 4, NULL);
    case 2: return tensor_adaptive_avg_pool2d(x, 1, 1);
    case 3: return tensor_adaptive_avg_pool2d(x, 4, 5);
    case 4: return tensor_avg_pool1d(x, 3, 2, 1, true, false);
    case 5: return tensor_avg_pool1d(x, 4, 3, 2, true, true);
    default: return tensor_adaptive_avg_pool1d(x, 4);
    }
}
static void pool_grads(int which, tensor *x0, tensor *gy, bool reference, tensor **y, tensor **gx) {
    tensor *x = tensor_set_requires_grad(tensor_clone(x0), true);
    bool was = tensor_set_reference_kernels(reference);
    *y = pool_of(which, x);
    int rc = *y ? tensor_backward_with(*y, gy) : -1;
    tensor_set_reference_kernels(was);
    CHECK_MSG(rc == 0, "backward failed: %s", tensor_last_error() ? tensor_last_error() : "?");
    *gx = rc == 0 ? tensor_grad(x) : NULL;
}
TEST(layers_fast_pools_backward) {
    tensor_scope_begin();
    for (int dt = 0; dt < 2; dt++)
        for (int which = 0; which < 7; which++) {
            tensor_dtype t = dt ? TENSOR_F64 : TENSOR_F32;
            tensor *x = which >= 4 ? strided(uniform, t, TENSOR_SHAPE(2, 11, 3), false)
                      : which >= 2 ? test_random(t, TENSOR_SHAPE(2, 3, 7, 9), -1, 1) : ties(t, TENSOR_SHAPE(2, 3, 7, 9), false);
            tensor *y0 = pool_of(which, x);
            tensor *gy = y0 ? test_random(t, tensor_ndim(y0), tensor_shape(y0), -1, 1) : NULL;
            tensor *yr, *gr, *yf, *gf;
            pool_grads(which, x, gy, true, &yr, &gr);
            int64_t b = tensor_test_path_count("layer_pool");
            pool_grads(which, x, gy, false, &yf, &gf);
            CHECK_MSG(tensor_test_path_count("layer_pool") > b, "pool %d: the fast path did not run under autograd", which);
            char what[64];
            snprintf(what, sizeof what, "pool %d (%s)", which, dt ? "f64" : "f32");
            same_values(what, yf, yr, tol_of(t), tol_of(t));
            same_values(what, gf, gr, tol_of(t), tol_of(t));
        }
    tensor_scope_end();
}

/* ---- batch_norm ---- */

static void check_bn(const char *what, tensor *x, bool with_wb, bool training) {
    tensor_dtype dt = tensor_get_dtype(x);
    int64_t C = tensor_shape(x)[1];
    tensor *w = with_wb ? test_random(dt, TENSOR_SHAPE(C), 0.5, 1.5) : NULL, *b = with_wb ? test_random(dt, TENSOR_SHAPE(C), -1, 1) : NULL;
    tensor *rm0 = test_random(TENSOR_F32, TENSOR_SHAPE(C), -0.5, 0.5), *rv0 = test_random(TENSOR_F32, TENSOR_SHAPE(C), 0.5, 2);
    tensor *rm_r = tensor_clone(rm0), *rv_r = tensor_clone(rv0), *rm_f = tensor_clone(rm0), *rv_f = tensor_clone(rv0);
    bool was = tensor_set_reference_kernels(true);
    tensor *yr = tensor_batch_norm(x, rm_r, rv_r, w, b, training, 0.3, 1e-3);
    tensor_set_reference_kernels(was);
    tensor *yf = tensor_batch_norm(x, rm_f, rv_f, w, b, training, 0.3, 1e-3);
    double tol = dt == TENSOR_F64 ? 1e-12 : 1e-5;
    same_values(what, yf, yr, tol, tol);
    same_values("batch_norm running_mean", rm_f, rm_r, 1e-6, 1e-6);
    same_values("batch_norm running_var", rv_f, rv_r, 1e-6, 1e-6);
}

TEST(layers_fast_batch_norm) {
    int64_t before = tensor_test_path_count("layer_batch_norm");
    tensor_scope_begin();
    for (int dt = 0; dt < 2; dt++) {
        tensor_dtype t = dt ? TENSOR_F64 : TENSOR_F32;
        for (int training = 0; training < 2; training++)
            for (int wb = 0; wb < 2; wb++) {
                check_bn("batch_norm [4, 3, 5, 7]", test_random(t, TENSOR_SHAPE(4, 3, 5, 7), -3, 5), wb, training);
                check_bn("batch_norm [5, 4] (2-D)", test_random(t, TENSOR_SHAPE(5, 4), -1, 2), wb, training);
                check_bn("batch_norm [2, 3, 13]", test_random(t, TENSOR_SHAPE(2, 3, 13), -1, 2), wb, training);
                tensor *p = tensor_permute(test_random(t, TENSOR_SHAPE(3, 5, 2, 4), -2, 2), 4, (const int[]){2, 3, 1, 0}); /* [2, 4, 5, 3] strided */
                check_bn("batch_norm (permuted input)", p, wb, training);
            }
    }
    /* statistics of f32 values far from 0 with a small spread: the shifted sums in double give the
       mean and the unbiased variance of the f32 values to double precision */
    int64_t n = 4 * 2 * 50;
    double *v = (double *)malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) v[i] = (double)(float)(1000 + test_uniform(-0.01, 0.01));
    tensor *x = test_tensor(TENSOR_F32, TENSOR_SHAPE(4, 2, 50), v);
    tensor *rm = tensor_zeros(TENSOR_SHAPE(2), TENSOR_F64), *rv = tensor_zeros(TENSOR_SHAPE(2), TENSOR_F64);
    CHECK(tensor_batch_norm(x, rm, rv, NULL, NULL, true, 1.0, 1e-5) != NULL);
    for (int c = 0; c < 2; c++) {
        double s = 0, q = 0;
        for (int k = 0; k < 4; k++)
            for (int l = 0; l < 50; l++) s += v[(k * 2 + c) * 50 + l];
        double mean = s / 200;
        for (int k = 0; k < 4; k++)
            for (int l = 0; l < 50; l++) q += (v[(k * 2 + c) * 50 + l] - mean) * (v[(k * 2 + c) * 50 + l] - mean);
        double *m = test_values(rm), *r = test_values(rv);
        CHECK_NEAR(m[c], mean, 0, 1e-12);
        CHECK_NEAR(r[c], q / 199, 0, 1e-9);
        free(m);
        free(r);
    }
    free(v);
    tensor_scope_end();
    CHECK(tensor_test_path_count("layer_batch_norm") > before);
}

/* ---- interpolate ---- */

typedef struct { const char *mode; bool align; int64_t size[2]; double scale; } interp_cfg;

TEST(layers_fast_interpolate) {
    static const interp_cfg cfgs[] = {
        {"nearest", false, {9, 4}, 0}, {"nearest", false, {0, 0}, 2}, {"nearest", false, {0, 0}, 1.5}, {"nearest-exact", false, {9, 4}, 0},
        {"nearest-exact", false, {0, 0}, 0.6}, {"bilinear", false, {9, 4}, 0}, {"bilinear", true, {9, 4}, 0}, {"bilinear", false, {0, 0}, 2},
        {"bilinear", true, {0, 0}, 2}, {"bilinear", false, {0, 0}, 0.7}, {"bilinear", false, {1, 1}, 0}, {"bilinear", true, {1, 3}, 0},
        {"bicubic", false, {9, 4}, 0}, {"bicubic", true, {9, 4}, 0}, {"bicubic", false, {0, 0}, 1.75},
    };
    int64_t before = tensor_test_path_count("layer_interpolate");
    tensor_scope_begin();
    for (int dt = 0; dt < 2; dt++) {
        tensor_dtype t = dt ? TENSOR_F64 : TENSOR_F32;
        tensor *xs[2] = {test_random(t, TENSOR_SHAPE(2, 3, 5, 7), -2, 2), strided(uniform, t, TENSOR_SHAPE(2, 3, 5, 7), false)};
        for (int k = 0; k < 2; k++)
            for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
                const interp_cfg *c = &cfgs[i];
                const int64_t *size = c->scale > 0 ? NULL : c->size;
                const double *scale = c->scale > 0 ? &c->scale : NULL;
                int n = c->scale > 0 ? 1 : 2;
                bool was = tensor_set_reference_kernels(true);
                tensor *yr = tensor_interpolate(xs[k], n, size, scale, c->mode, c->align);
                tensor_set_reference_kernels(was);
                char what[96];
                snprintf(what, sizeof what, "interpolate %s align %d size %lld x %lld scale %g", c->mode, c->align, (long long)c->size[0], (long long)c->size[1], c->scale);
                same_values(what, tensor_interpolate(xs[k], n, size, scale, c->mode, c->align), yr, tol_of(t), tol_of(t));
            }
        /* one spatial dim */
        tensor *x1 = strided(uniform, t, TENSOR_SHAPE(2, 11, 3), false);
        static const char *const modes[] = {"linear", "nearest", "nearest-exact"};
        for (int m = 0; m < 3; m++)
            for (int align = 0; align < (m == 0 ? 2 : 1); align++) {
                int64_t size = 17;
                double sc = 0.5;
                bool was = tensor_set_reference_kernels(true);
                tensor *a = tensor_interpolate(x1, 1, &size, NULL, modes[m], align), *b = tensor_interpolate(x1, 1, NULL, &sc, modes[m], align);
                tensor_set_reference_kernels(was);
                same_values(modes[m], tensor_interpolate(x1, 1, &size, NULL, modes[m], align), a, tol_of(t), tol_of(t));
                same_values(modes[m], tensor_interpolate(x1, 1, NULL, &sc, modes[m], align), b, tol_of(t), tol_of(t));
            }
    }
    tensor_scope_end();
    CHECK(tensor_test_path_count("layer_interpolate") > before);
}

/* ---- conv_transpose2d ---- */

typedef struct { int64_t ci, cog, kh, kw; int stride, padding, output_padding, groups, dilation; bool bias; } convt_cfg;

TEST(layers_fast_conv_transpose2d) {
    static const convt_cfg cfgs[] = {
        {4, 3, 3, 2, 2, 1, 1, 2, 1, true}, {4, 2, 3, 3, 1, 2, 1, 1, 2, false}, {3, 5, 4, 4, 2, 1, 0, 1, 1, true}, {6, 1, 2, 3, 3, 0, 2, 3, 1, true},
    };
    int64_t before = tensor_test_path_count("layer_conv_transpose");
    tensor_scope_begin();
    for (int dt = 0; dt < 2; dt++) {
        tensor_dtype t = dt ? TENSOR_F64 : TENSOR_F32;
        for (size_t i = 0; i < sizeof cfgs / sizeof cfgs[0]; i++) {
            const convt_cfg *c = &cfgs[i];
            tensor *w = test_random(t, TENSOR_SHAPE(c->ci, c->cog, c->kh, c->kw), -1, 1);
            tensor *b = c->bias ? test_random(t, TENSOR_SHAPE(c->cog * c->groups), -1, 1) : NULL;
            tensor *xs[3] = {test_random(t, TENSOR_SHAPE(2, c->ci, 5, 6), -1, 1), strided(uniform, t, TENSOR_SHAPE(2, c->ci, 5, 6), false),
                             test_random(t, TENSOR_SHAPE(c->ci, 4, 7), -1, 1)};
            for (int k = 0; k < 3; k++) {
                bool was = tensor_set_reference_kernels(true);
                tensor *yr = tensor_conv_transpose2d(xs[k], w, b, c->stride, c->padding, c->output_padding, c->groups, c->dilation);
                tensor_set_reference_kernels(was);
                char what[64];
                snprintf(what, sizeof what, "conv_transpose2d case %d input %d", (int)i, k);
                double tol = dt ? 1e-12 : 1e-5;
                same_values(what, tensor_conv_transpose2d(xs[k], w, b, c->stride, c->padding, c->output_padding, c->groups, c->dilation), yr, tol, tol);
            }
        }
    }
    tensor_scope_end();
    CHECK(tensor_test_path_count("layer_conv_transpose") > before);
}

/* ---- under autograd: the nodes of batch_norm, conv_transpose2d and interpolate ---- */

static tensor *layer_of(tensor *const *in, int which) {
    double sc = 1.5;
    int64_t size[2] = {7, 4};
    switch (which) {
    case 0: return tensor_batch_norm(in[0], NULL, NULL, in[1], in[2], true, 0.1, 1e-3);
    case 1: return tensor_batch_norm(in[0], in[3], in[4], in[1], in[2], false, 0.1, 1e-3);
    case 2: return tensor_batch_norm(in[0], NULL, NULL, NULL, NULL, true, 0.1, 1e-3);
    case 3: return tensor_conv_transpose2d(in[0], in[1], in[2], 2, 1, 1, 2, 1);
    case 4: return tensor_conv_transpose2d(in[0], in[1], NULL, 1, 1, 0, 1, 2);
    case 5: return tensor_interpolate(in[0], 1, NULL, &sc, "bilinear", false);
    case 6: return tensor_interpolate(in[0], 2, size, NULL, "bicubic", true);
    case 7: return tensor_interpolate(in[0], 1, NULL, &sc, "nearest", false);
    default: return NULL;
    }
}
/* The gradients of every input (n of them require grad) of layer `which` on the fast path and on
   the composite, for one output gradient. */
static void layer_grads(int which, int n, tensor *const *in0, tensor *gy, bool reference, tensor **y, tensor **grads) {
    tensor *in[5];
    for (int i = 0; i < 5; i++) in[i] = in0[i] && i < n ? tensor_set_requires_grad(tensor_clone(in0[i]), true) : in0[i];
    bool was = tensor_set_reference_kernels(reference);
    *y = layer_of(in, which);
    int rc = *y ? tensor_backward_with(*y, gy) : -1;
    tensor_set_reference_kernels(was);
    CHECK_MSG(rc == 0, "layer %d: backward failed: %s", which, tensor_last_error() ? tensor_last_error() : "?");
    for (int i = 0; i < n; i++) grads[i] = rc == 0 ? tensor_grad(in[i]) : NULL;
}
TEST(layers_fast_nodes_backward) {
    static const char *const paths[] = {"layer_batch_norm", "layer_batch_norm", "layer_batch_norm", "layer_conv_transpose", "layer_conv_transpose",
                                        "layer_interpolate", "layer_interpolate", "layer_interpolate"};
    tensor_scope_begin();
    for (int dt = 0; dt < 2; dt++) {
        tensor_dtype t = dt ? TENSOR_F64 : TENSOR_F32;
        double tol = dt ? 1e-11 : 2e-5;
        for (int which = 0; which < 8; which++) {
            tensor *in[5] = {NULL, NULL, NULL, NULL, NULL};
            int n = 1;
            if (which <= 2) {
                in[0] = strided(uniform, t, TENSOR_SHAPE(3, 4, 5, 6), false);
                in[1] = test_random(t, TENSOR_SHAPE(4), 0.5, 1.5);
                in[2] = test_random(t, TENSOR_SHAPE(4), -1, 1);
                in[3] = test_random(t, TENSOR_SHAPE(4), -1, 1);
                in[4] = test_random(t, TENSOR_SHAPE(4), 0.5, 2);
                n = which == 2 ? 1 : 3;
            } else if (which <= 4) {
                in[0] = strided(uniform, t, TENSOR_SHAPE(2, 4, 6, 5), false);
                in[1] = which == 3 ? test_random(t, TENSOR_SHAPE(4, 3, 3, 2), -1, 1) : test_random(t, TENSOR_SHAPE(4, 2, 3, 3), -1, 1);
                in[2] = test_random(t, TENSOR_SHAPE(6), -1, 1);
                n = which == 3 ? 3 : 2;
            } else {
                in[0] = strided(uniform, t, TENSOR_SHAPE(2, 3, 6, 5), false);
            }
            tensor *y0 = layer_of(in, which); /* no graph: for the output's shape */
            tensor *gy = y0 ? test_random(t, tensor_ndim(y0), tensor_shape(y0), -1, 1) : NULL;
            tensor *yr, *yf, *gr[3] = {NULL, NULL, NULL}, *gf[3] = {NULL, NULL, NULL};
            layer_grads(which, n, in, gy, true, &yr, gr);
            int64_t before = tensor_test_path_count(paths[which]);
            layer_grads(which, n, in, gy, false, &yf, gf);
            CHECK_MSG(tensor_test_path_count(paths[which]) > before, "layer %d: the fast path did not run under autograd", which);
            char what[64];
            snprintf(what, sizeof what, "layer %d (%s) forward", which, dt ? "f64" : "f32");
            same_values(what, yf, yr, tol, tol);
            for (int i = 0; i < n; i++) {
                snprintf(what, sizeof what, "layer %d (%s) gradient %d", which, dt ? "f64" : "f32", i);
                same_values(what, gf[i], gr[i], tol, tol);
            }
        }
    }
    tensor_scope_end();
}

/* create_graph: batch_norm's node composes its gradient of ops (second derivatives by finite
   differences); the fused backward of conv_transpose2d, interpolate and the average pools refuse
   it, as conv2d's. */
static tensor *f_bn_train(tensor *const *in, const void *ctx) { (void)ctx; return tensor_batch_norm(in[0], NULL, NULL, in[1], in[2], true, 0.1, 1e-3); }
static tensor *f_bn_eval(tensor *const *in, const void *ctx) {
    (void)ctx;
    tensor *rm = tensor_full(TENSOR_SHAPE(3), 0.25, TENSOR_F64), *rv = tensor_full(TENSOR_SHAPE(3), 1.5, TENSOR_F64);
    tensor *y = tensor_batch_norm(in[0], rm, rv, in[1], in[2], false, 0.1, 1e-3);
    tensor_free(rm);
    tensor_free(rv);
    return y;
}
TEST(layers_fast_nodes_create_graph) {
    int64_t before = tensor_test_path_count("layer_batch_norm");
    tensor_scope_begin();
    tensor *in[3] = {test_leaf(TENSOR_SHAPE(3, 3, 2, 2), -1, 1), test_leaf(TENSOR_SHAPE(3), 0.5, 1.5), test_leaf(TENSOR_SHAPE(3), -1, 1)};
    CHECK(GRADCHECK(f_bn_train, NULL, 3, in) > 0);
    CHECK(GRADGRADCHECK(f_bn_train, NULL, 3, in) > 0);
    CHECK(GRADGRADCHECK(f_bn_eval, NULL, 3, in) > 0);
    tensor *x = test_leaf(TENSOR_SHAPE(1, 2, 3, 3), -1, 1), *w = test_leaf(TENSOR_SHAPE(2, 2, 2, 2), -1, 1);
    double sc = 2;
    tensor *ys[3] = {tensor_conv_transpose2d(x, w, NULL, 2, 0, 0, 1, 1), tensor_interpolate(x, 1, NULL, &sc, "bilinear", false), tensor_adaptive_avg_pool2d(x, 2, 2)};
    for (int i = 0; i < 3; i++) {
        tensor *gx = NULL;
        CHECK(ys[i] != NULL);
        int rc = tensor_autograd_grad(1, (tensor *[]){tensor_sum_all(tensor_mul(ys[i], ys[i]))}, NULL, 1, (tensor *[]){x}, &gx, true);
        CHECK_MSG(rc != 0 && tensor_last_error() && strstr(tensor_last_error(), "create_graph"), "case %d: create_graph through a fused backward should be refused", i);
    }
    tensor_scope_end();
    CHECK(tensor_test_path_count("layer_batch_norm") > before);
}
