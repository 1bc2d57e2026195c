/* bench_nn.c: the fast paths of the layer composites (pools with windows, batch_norm,
   conv_transpose2d, interpolate) against their composites, measured in the same run on the same
   data: the reference is the composite path (tensor__layers_composite, the other kernels as
   they are). Each row: the median time of each side (alternate runs after a warm-up run), the
   ratio reference / fast path ("X.XXx": > 1 the fast path is faster) and the largest difference
   of the results, relative to the largest magnitude. forward: no graph recorded; fwd+bwd: x
   (and the parameters) require grad, the sum of the output's product with a fixed gradient is
   backpropagated.
   Build and run: make BUILD=build bench-nn (plain cc -O2). Options: --quick, --only SUBSTRING,
   --threads N (default 2). */
#define TENSOR_IMPLEMENTATION
#include "../tensor.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}
static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double g_budget = 1.0;
static const char *g_only;

typedef struct bench_case bench_case;
typedef tensor *(*case_fn)(bench_case *c, tensor *x);
struct bench_case {
    const char *name;
    case_fn fn;
    tensor *x, *w, *b, *rm, *rv; /* inputs (w, b, rm, rv where the op has them) */
    bool backward;
    tensor *gy;                  /* the output's gradient (random, made on the first run) */
};

/* One run: the op (and its backward), returning a copy of the output (or of x's gradient). */
static tensor *run_once(bench_case *c) {
    tensor_scope_begin();
    tensor *x = c->backward ? tensor_set_requires_grad(tensor_detach(c->x), true) : c->x;
    bench_case cc = *c; /* with grad: the weight and bias require grad too */
    if (c->backward && c->w) cc.w = tensor_set_requires_grad(tensor_detach(c->w), true);
    if (c->backward && c->b) cc.b = tensor_set_requires_grad(tensor_detach(c->b), true);
    tensor *y = c->fn(&cc, x);
    tensor *keep = y;
    if (y && c->backward) {
        if (!c->gy) {
            tensor_manual_seed(5);
            c->gy = tensor_keep(tensor_randn(tensor_ndim(y), tensor_shape(y), tensor_get_dtype(y)));
        }
        if (tensor_backward_with(y, c->gy) == 0) keep = tensor_grad(x);
        else keep = NULL;
    }
    if (keep) keep = tensor_keep(tensor_clone(keep));
    tensor_scope_end();
    if (!keep) { fprintf(stderr, "%s: %s\n", c->name, tensor_last_error() ? tensor_last_error() : "failed"); exit(1); }
    return keep;
}
static double time_once(bench_case *c, bool composite) {
    tensor__layers_composite = composite;
    double s = now_s();
    tensor *r = run_once(c);
    double t = now_s() - s;
    tensor_free(r);
    tensor__layers_composite = false;
    return t;
}

static double max_diff(tensor *a, tensor *b) {
    tensor *ad = tensor_to_dtype(a, TENSOR_F64), *bd = tensor_to_dtype(b, TENSOR_F64);
    const double *p = (const double *)tensor_data_ptr(ad), *q = (const double *)tensor_data_ptr(bd);
    int64_t n = tensor_numel(ad);
    double m = 0, d = 0;
    for (int64_t i = 0; i < n; i++) {
        if (fabs(p[i]) > m) m = fabs(p[i]);
        if (fabs(p[i] - q[i]) > d || (p[i] != p[i]) != (q[i] != q[i])) d = fabs(p[i] - q[i]);
    }
    tensor_free(ad); tensor_free(bd);
    return m > 0 ? d / m : d;
}

static void bench(bench_case *c) {
    if (g_only && !strstr(c->name, g_only)) return;
    tensor__layers_composite = true;
    tensor *ref = run_once(c);
    tensor__layers_composite = false;
    tensor *ours = run_once(c);
    double diff = max_diff(ours, ref);
    tensor_free(ref); tensor_free(ours);
    double t0 = now_s();
    time_once(c, false);
    time_once(c, true);
    double first = now_s() - t0;
    int reps = first > 0 ? (int)(2 * g_budget / first) : 101;
    if (reps < 3) reps = 3;
    if (reps > 101) reps = 101;
    if (reps % 2 == 0) reps++;
    double *ta = (double *)malloc(sizeof(double) * 2 * (size_t)reps), *tb = ta + reps;
    for (int i = 0; i < reps; i++) {
        ta[i] = time_once(c, false);
        tb[i] = time_once(c, true);
    }
    qsort(ta, (size_t)reps, sizeof(double), cmp_double);
    qsort(tb, (size_t)reps, sizeof(double), cmp_double);
    double ours_t = ta[reps / 2], ref_t = tb[reps / 2];
    free(ta);
    printf("%-46s %-8s %9.2f ms  composite %9.2f ms  %6.2fx  diff %.1e%s\n", c->name, c->backward ? "fwd+bwd" : "forward", 1e3 * ours_t, 1e3 * ref_t,
           ref_t / ours_t, diff, diff > 1e-4 ? "  MISMATCH" : "");
    fflush(stdout);
}

static tensor *f_maxpool(bench_case *c, tensor *x) { (void)c; tensor *ix = NULL; tensor *y = tensor_max_pool2d_with_indices(x, 3, 2, 1, 1, false, &ix); tensor_free(ix); return y; }
static tensor *f_maxpool_dil(bench_case *c, tensor *x) { (void)c; return tensor_max_pool2d_with_indices(x, 2, 2, 0, 2, true, NULL); }
static tensor *f_aavg7(bench_case *c, tensor *x) { (void)c; return tensor_adaptive_avg_pool2d(x, 7, 7); }
static tensor *f_aavg5(bench_case *c, tensor *x) { (void)c; return tensor_adaptive_avg_pool2d(x, 5, 5); }
static tensor *f_aavg1(bench_case *c, tensor *x) { (void)c; return tensor_adaptive_avg_pool2d(x, 1, 1); }
static tensor *f_amax7(bench_case *c, tensor *x) { (void)c; tensor *ix = NULL; tensor *y = tensor_adaptive_max_pool2d(x, 7, 7, &ix); tensor_free(ix); return y; }
static tensor *f_bilinear(bench_case *c, tensor *x) { (void)c; double s = 2; return tensor_interpolate(x, 1, NULL, &s, "bilinear", false); }
static tensor *f_bilinear_ac(bench_case *c, tensor *x) { (void)c; double s = 2; return tensor_interpolate(x, 1, NULL, &s, "bilinear", true); }
static tensor *f_nearest(bench_case *c, tensor *x) { (void)c; double s = 2; return tensor_interpolate(x, 1, NULL, &s, "nearest", false); }
static tensor *f_bn_train(bench_case *c, tensor *x) { return tensor_batch_norm(x, c->rm, c->rv, c->w, c->b, true, 0.1, 1e-5); }
static tensor *f_bn_eval(bench_case *c, tensor *x) { return tensor_batch_norm(x, c->rm, c->rv, c->w, c->b, false, 0.1, 1e-5); }
static tensor *f_convt(bench_case *c, tensor *x) { return tensor_conv_transpose2d(x, c->w, c->b, 2, 1, 0, 1, 1); }

int main(int argc, char **argv) {
    int threads = 2;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) g_budget = 0.1;
        else if (!strcmp(argv[i], "--only") && i + 1 < argc) g_only = argv[++i];
        else if (!strcmp(argv[i], "--threads") && i + 1 < argc) threads = atoi(argv[++i]);
        else { fprintf(stderr, "usage: %s [--quick] [--only SUBSTRING] [--threads N]\n", argv[0]); return 2; }
    }
    tensor_set_num_threads(threads);
    tensor_manual_seed(1);
    printf("bench_nn: fast paths against the composites, %d thread(s); %s\n", threads, tensor_build_info());
    int64_t xs[4] = {32, 64, 56, 56}, cs[1] = {64}, ts[4] = {8, 64, 32, 32}, ws[4] = {64, 32, 4, 4}, bs[1] = {32};
    tensor *x = tensor_randn(4, xs, TENSOR_F32);
    tensor *w = tensor_randn(1, cs, TENSOR_F32), *b = tensor_randn(1, cs, TENSOR_F32);
    tensor *rm = tensor_zeros(1, cs, TENSOR_F32), *rv = tensor_ones(1, cs, TENSOR_F32);
    tensor *xt = tensor_randn(4, ts, TENSOR_F32), *wt = tensor_randn(4, ws, TENSOR_F32), *bt = tensor_randn(1, bs, TENSOR_F32);
    bench_case cases[] = {
        {"max_pool2d_with_indices [32,64,56,56] k3 s2 p1", f_maxpool, x, NULL, NULL, NULL, NULL, false, NULL},
        {"max_pool2d_with_indices [32,64,56,56] k3 s2 p1", f_maxpool, x, NULL, NULL, NULL, NULL, true, NULL},
        {"max_pool2d_with_indices k2 d2 ceil_mode", f_maxpool_dil, x, NULL, NULL, NULL, NULL, false, NULL},
        {"adaptive_max_pool2d [32,64,56,56] -> 7x7", f_amax7, x, NULL, NULL, NULL, NULL, false, NULL},
        {"adaptive_max_pool2d [32,64,56,56] -> 7x7", f_amax7, x, NULL, NULL, NULL, NULL, true, NULL},
        {"adaptive_avg_pool2d [32,64,56,56] -> 7x7", f_aavg7, x, NULL, NULL, NULL, NULL, false, NULL},
        {"adaptive_avg_pool2d [32,64,56,56] -> 5x5", f_aavg5, x, NULL, NULL, NULL, NULL, false, NULL},
        {"adaptive_avg_pool2d [32,64,56,56] -> 1x1", f_aavg1, x, NULL, NULL, NULL, NULL, false, NULL},
        {"adaptive_avg_pool2d [32,64,56,56] -> 1x1", f_aavg1, x, NULL, NULL, NULL, NULL, true, NULL},
        {"interpolate bilinear x2 [32,64,56,56]", f_bilinear, x, NULL, NULL, NULL, NULL, false, NULL},
        {"interpolate bilinear x2 [32,64,56,56]", f_bilinear, x, NULL, NULL, NULL, NULL, true, NULL},
        {"interpolate bilinear x2 align_corners", f_bilinear_ac, x, NULL, NULL, NULL, NULL, false, NULL},
        {"interpolate nearest x2 [32,64,56,56]", f_nearest, x, NULL, NULL, NULL, NULL, false, NULL},
        {"interpolate nearest x2 [32,64,56,56]", f_nearest, x, NULL, NULL, NULL, NULL, true, NULL},
        {"batch_norm training [32,64,56,56]", f_bn_train, x, w, b, rm, rv, false, NULL},
        {"batch_norm training [32,64,56,56]", f_bn_train, x, w, b, rm, rv, true, NULL},
        {"batch_norm eval [32,64,56,56]", f_bn_eval, x, w, b, rm, rv, false, NULL},
        {"batch_norm eval [32,64,56,56]", f_bn_eval, x, w, b, rm, rv, true, NULL},
        {"conv_transpose2d [8,64,32,32] -> 32, k4 s2 p1", f_convt, xt, wt, bt, NULL, NULL, false, NULL},
        {"conv_transpose2d [8,64,32,32] -> 32, k4 s2 p1", f_convt, xt, wt, bt, NULL, NULL, true, NULL},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        bench(&cases[i]);
        tensor_free(cases[i].gy);
    }
    tensor_free(x); tensor_free(w); tensor_free(b); tensor_free(rm); tensor_free(rv);
    tensor_free(xt); tensor_free(wt); tensor_free(bt);
    return 0;
}
