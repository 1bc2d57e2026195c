/* The random ops of issue 14: bernoulli, bernoulli_scalar, normal_tensor, normal_std_scalar,
   normal_mean_scalar, poisson, dropout1d, dropout2d, alpha_dropout, feature_alpha_dropout, rrelu.
   Reproducibility under a seed, shapes and dtypes, bad inputs (bad_input_NAME for the registry
   sweep), statistics with tolerances from the sample size (5 sigma: a wrong sampler fails them),
   the poisson kernel against its sampler on the Philox words it must take, and gradients:
   gradcheck_NAME (run by the registry sweep of tests/test_autograd.c) with the seed fixed inside
   the function, and PyTorch's zeros for bernoulli, normal and poisson. */
#define TENSOR__DEVICE_SOURCE /* >>formulas' samplers: tensor__philox_at, tensor__poisson_sample */
#include "test.h"

/* mean and (unbiased) variance of v[0..n) */
static void moments(const double *v, int64_t n, double *mean, double *var) {
    double m = 0, s = 0;
    for (int64_t i = 0; i < n; i++) m += v[i];
    m /= (double)n;
    for (int64_t i = 0; i < n; i++) s += (v[i] - m) * (v[i] - m);
    *mean = m;
    *var = s / (double)(n - 1);
}

/* ---- reproducibility, shapes, dtypes ---- */

static tensor *draw(int which, uint64_t seed) {
    tensor_manual_seed(seed);
    tensor *p = test_tensor(TENSOR_F32, 2, (const int64_t[]){3, 4}, (const double[]){0.1, 0.5, 0.9, 0.3, 0, 1, 0.2, 0.7, 0.4, 0.6, 0.8, 0.05});
    tensor *x = tensor_add_scalar(tensor_mul_scalar(tensor_rand(TENSOR_SHAPE(2, 3, 4), TENSOR_F32), 2), -1); /* drawn after the seed */
    switch (which) {
    case 0: return tensor_bernoulli(p);
    case 1: return tensor_bernoulli_scalar(x, 0.5);
    case 2: return tensor_normal_tensor(p, tensor_add_scalar(p, 1));
    case 3: return tensor_normal_std_scalar(p, 2);
    case 4: return tensor_normal_mean_scalar(-1, p);
    case 5: return tensor_poisson(tensor_mul_scalar(p, 40));
    case 6: return tensor_dropout1d(x, 0.5, true);
    case 7: return tensor_dropout2d(tensor_reshape(x, TENSOR_SHAPE(2, 3, 2, 2)), 0.5, true);
    case 8: return tensor_alpha_dropout(x, 0.5, true);
    case 9: return tensor_feature_alpha_dropout(x, 0.5, true);
    default: return tensor_rrelu(x, 0.1, 0.6, true);
    }
}

TEST(random_ops_same_seed_same_numbers) {
    for (int w = 0; w < 11; w++) {
        tensor *a = draw(w, 11), *b = draw(w, 11), *c = draw(w, 12);
        CHECK_MSG(a && b && c, "op %d: %s", w, tensor_last_error() ? tensor_last_error() : "?");
        if (!a || !b || !c) continue;
        CHECK_MSG(test_same_bits(a, b), "op %d: the same seed gave other numbers", w);
        CHECK_MSG(!test_same_bits(a, c), "op %d: another seed gave the same numbers", w);
        CHECK_MSG(tensor_get_dtype(a) == TENSOR_F32, "op %d: dtype", w);
        if (w == 7) CHECK_SHAPE(a, TENSOR_SHAPE(2, 3, 2, 2));
        else if (w == 1 || w >= 6) CHECK_SHAPE(a, TENSOR_SHAPE(2, 3, 4));
        else CHECK_SHAPE(a, TENSOR_SHAPE(3, 4));
    }
}

TEST(random_ops_dtypes_and_empty) {
    tensor *z = tensor_zeros(TENSOR_SHAPE(5), TENSOR_I64);
    tensor *b = tensor_bernoulli_scalar(z, 0.5);
    CHECK(b && tensor_get_dtype(b) == TENSOR_I64);
    CHECK(tensor_get_dtype(tensor_bernoulli_scalar(tensor_zeros(TENSOR_SHAPE(5), TENSOR_BOOL), 0.5)) == TENSOR_BOOL);
    CHECK(tensor_get_dtype(tensor_bernoulli(tensor_full(TENSOR_SHAPE(2), 0.5, TENSOR_F64))) == TENSOR_F64);
    CHECK(tensor_get_dtype(tensor_bernoulli(tensor_full(TENSOR_SHAPE(2), 0.5, TENSOR_BF16))) == TENSOR_BF16);
    /* normal: mean's dtype (f32 mean, f64 std: f32, as PyTorch); a number mean: std's */
    CHECK(tensor_get_dtype(tensor_normal_tensor(tensor_zeros(TENSOR_SHAPE(2), TENSOR_F32), tensor_ones(TENSOR_SHAPE(2), TENSOR_F64))) == TENSOR_F32);
    CHECK(tensor_get_dtype(tensor_normal_tensor(tensor_zeros(TENSOR_SHAPE(2), TENSOR_F64), tensor_ones(TENSOR_SHAPE(2), TENSOR_I64))) == TENSOR_F64);
    CHECK(tensor_get_dtype(tensor_normal_mean_scalar(0, tensor_ones(TENSOR_SHAPE(2), TENSOR_F16))) == TENSOR_F16);
    CHECK_SHAPE(tensor_normal_tensor(tensor_zeros(TENSOR_SHAPE(2, 1), TENSOR_F32), tensor_ones(TENSOR_SHAPE(3), TENSOR_F32)), TENSOR_SHAPE(2, 3));
    CHECK(tensor_get_dtype(tensor_poisson(tensor_ones(TENSOR_SHAPE(2), TENSOR_F16))) == TENSOR_F16);
    /* empty inputs: empty results, nothing checked, nothing drawn */
    tensor *e = tensor_zeros(TENSOR_SHAPE(0, 3), TENSOR_F32);
    tensor_manual_seed(5);
    tensor *r1 = tensor_rand(TENSOR_SHAPE(2), TENSOR_F64);
    tensor_manual_seed(5);
    tensor *outs[8] = {tensor_bernoulli(e), tensor_bernoulli_scalar(e, 0.3), tensor_normal_tensor(e, e), tensor_normal_std_scalar(e, 1),
                       tensor_normal_mean_scalar(1, e), tensor_poisson(e), tensor_dropout2d(e, 0.5, true), tensor_rrelu(e, 0.1, 0.3, true)};
    for (int i = 0; i < 8; i++) CHECK_MSG(outs[i] && tensor_numel(outs[i]) == 0, "empty case %d", i);
    CHECK(test_same_bits(tensor_rand(TENSOR_SHAPE(2), TENSOR_F64), r1));
}

/* ---- bernoulli ---- */

TEST(bernoulli_frequencies) {
    enum { N = 20000 };
    static const double ps[4] = {0.02, 0.3, 0.5, 0.9};
    tensor *p = tensor_expand(test_tensor(TENSOR_F64, 2, (const int64_t[]){4, 1}, ps), TENSOR_SHAPE(4, N)); /* a broadcast view */
    tensor_manual_seed(3);
    double *v = test_values(tensor_bernoulli(p));
    for (int r = 0; r < 4; r++) {
        double ones = 0;
        bool binary = true;
        for (int i = 0; i < N; i++) { ones += v[r * N + i]; binary &= v[r * N + i] == 0 || v[r * N + i] == 1; }
        CHECK(binary);
        double sigma = sqrt(ps[r] * (1 - ps[r]) / N);
        CHECK_MSG(fabs(ones / N - ps[r]) < 5 * sigma, "p %g: frequency %g", ps[r], ones / N);
    }
    free(v);
    /* p 0 and 1 are certain */
    static const double edge[4] = {0, 1, 1, 0};
    CHECK_VALUES(tensor_bernoulli(test_tensor(TENSOR_F32, 1, (const int64_t[]){4}, edge)), edge, 4, 0, 0);
    CHECK_VALUES(tensor_bernoulli_scalar(tensor_zeros(TENSOR_SHAPE(4), TENSOR_I32), 0), ((const double[]){0, 0, 0, 0}), 4, 0, 0);
    CHECK_VALUES(tensor_bernoulli_scalar(tensor_zeros(TENSOR_SHAPE(4), TENSOR_U8), 1), ((const double[]){1, 1, 1, 1}), 4, 0, 0);
    /* bernoulli_scalar: the frequency of p */
    double *w = test_values(tensor_bernoulli_scalar(tensor_zeros(TENSOR_SHAPE(N), TENSOR_BOOL), 0.25));
    double ones = 0;
    for (int i = 0; i < N; i++) ones += w[i];
    CHECK_NEAR(ones / N, 0.25, 5 * sqrt(0.25 * 0.75 / N), 0);
    free(w);
}

/* ---- normal ---- */

TEST(normal_moments) {
    enum { N = 20000 };
    tensor *mean = test_tensor(TENSOR_F64, 2, (const int64_t[]){2, 1}, (const double[]){-2, 3});
    tensor_manual_seed(21);
    /* mean [2, 1] broadcast against std [2, N] (an expanded view) */
    tensor *sd = tensor_expand(test_tensor(TENSOR_F64, 2, (const int64_t[]){2, 1}, (const double[]){0.5, 4}), TENSOR_SHAPE(2, N));
    tensor *y = tensor_normal_tensor(mean, sd);
    CHECK_SHAPE(y, TENSOR_SHAPE(2, N));
    double *v = test_values(y);
    static const double mu[2] = {-2, 3}, sg[2] = {0.5, 4};
    for (int r = 0; r < 2; r++) {
        double m, var;
        moments(v + r * N, N, &m, &var);
        CHECK_MSG(fabs(m - mu[r]) < 5 * sg[r] / sqrt(N), "row %d: mean %g", r, m);
        CHECK_MSG(fabs(var / (sg[r] * sg[r]) - 1) < 5 * sqrt(2.0 / (N - 1)), "row %d: variance %g", r, var);
    }
    free(v);
    /* the number forms, in f32 */
    double *a = test_values(tensor_normal_std_scalar(tensor_full(TENSOR_SHAPE(N), 10, TENSOR_F32), 3));
    double m, var;
    moments(a, N, &m, &var);
    CHECK_NEAR(m, 10, 5 * 3 / sqrt(N), 0);
    CHECK_NEAR(var / 9, 1, 5 * sqrt(2.0 / (N - 1)), 0);
    free(a);
    double *b = test_values(tensor_normal_mean_scalar(-4, tensor_full(TENSOR_SHAPE(N), 0.25, TENSOR_F32)));
    moments(b, N, &m, &var);
    CHECK_NEAR(m, -4, 5 * 0.25 / sqrt(N), 0);
    CHECK_NEAR(var / 0.0625, 1, 5 * sqrt(2.0 / (N - 1)), 0);
    free(b);
    /* std 0: exactly the mean; the numbers are randn's: mean + std randn under the same seed */
    CHECK_VALUES(tensor_normal_std_scalar(test_tensor(TENSOR_F64, 1, (const int64_t[]){2}, mu), 0), mu, 2, 0, 0);
    tensor_manual_seed(8);
    double *z = test_values(tensor_randn(TENSOR_SHAPE(3), TENSOR_F64));
    tensor_manual_seed(8);
    double *n3 = test_values(tensor_normal_mean_scalar(1, test_tensor(TENSOR_F64, 1, (const int64_t[]){3}, (const double[]){1, 2, 3})));
    for (int i = 0; i < 3; i++) CHECK_NEAR(n3[i], 1 + (i + 1) * z[i], 1e-15, 1e-15);
    free(z);
    free(n3);
}

/* ---- poisson ---- */

TEST(poisson_moments_and_probabilities) {
    enum { N = 20000 };
    static const double rates[4] = {0.5, 4, 30, 500};
    tensor *r = tensor_contiguous(tensor_expand(test_tensor(TENSOR_F64, 2, (const int64_t[]){4, 1}, rates), TENSOR_SHAPE(4, N)));
    tensor_manual_seed(17);
    tensor *y = tensor_poisson(r);
    CHECK(y && tensor_get_dtype(y) == TENSOR_F64);
    double *v = test_values(y);
    for (int k = 0; k < 4; k++) {
        const double *x = v + (int64_t)k * N, lam = rates[k];
        bool integral = true;
        for (int i = 0; i < N; i++) integral &= x[i] >= 0 && x[i] == floor(x[i]);
        CHECK_MSG(integral, "rate %g: a sample is not a non-negative integer", lam);
        double m, var;
        moments(x, N, &m, &var);
        CHECK_MSG(fabs(m - lam) < 5 * sqrt(lam / N), "rate %g: mean %g", lam, m);
        CHECK_MSG(fabs(var - lam) < 5 * sqrt((lam + 2 * lam * lam) / N), "rate %g: variance %g", lam, var);
        /* P(X = mode) against the pmf: exp(-lam) lam^k / k! at k = floor(lam) */
        double mode = floor(lam), pk = exp(-lam + mode * log(lam) - lgamma(mode + 1)), hits = 0;
        for (int i = 0; i < N; i++) hits += x[i] == mode;
        CHECK_MSG(fabs(hits / N - pk) < 5 * sqrt(pk * (1 - pk) / N), "rate %g: P(X = %g) %g, expected %g", lam, mode, hits / N, pk);
        /* chi-square against the pmf over the values expected at least 20 times (and one bin for
           the rest): below df + 5 sqrt(2 df) */
        double chi = 0, rest_e = N, rest_o = N;
        int df = 0;
        for (int kv = 0; kv < 2000; kv++) {
            double e = N * exp(-lam + kv * log(lam) - lgamma(kv + 1.0)), o = 0;
            if (e < 20) continue;
            for (int i = 0; i < N; i++) o += x[i] == kv;
            chi += (o - e) * (o - e) / e;
            rest_e -= e;
            rest_o -= o;
            df++;
        }
        if (rest_e > 1) chi += (rest_o - rest_e) * (rest_o - rest_e) / rest_e;
        CHECK_MSG(df > 0 && chi < df + 5 * sqrt(2.0 * df), "rate %g: chi-square %g over %d bins", lam, chi, df + 1);
    }
    free(v);
    /* rate 0 gives 0; +inf gives +inf; f32 */
    CHECK_VALUES(tensor_poisson(test_tensor(TENSOR_F32, 1, (const int64_t[]){3}, (const double[]){0, INFINITY, 0})), ((const double[]){0, INFINITY, 0}), 3, 0, 0);
}

/* Element i is the shared sampler on the blocks (counter + i, stream, j) of the generator's place,
   and the next draw starts after those n blocks; the threads and the input's layout change
   nothing. */
TEST(poisson_draws_its_own_blocks) {
    static const double rates[6] = {3, 50, 0.7, 9.99, 10, 1e6};
    tensor_manual_seed(0x123456789abcull);
    tensor_rand(TENSOR_SHAPE(1), TENSOR_F32); /* part-way through block 0: poisson starts at block 1 */
    double *v = test_values(tensor_poisson(test_tensor(TENSOR_F64, 1, (const int64_t[]){6}, rates)));
    double *after = test_values(tensor_rand(TENSOR_SHAPE(1), TENSOR_F64));
    uint32_t k0 = 0x56789abcu, k1 = 0x1234u, w[4];
    for (int i = 0; i < 6; i++) CHECK_MSG(v[i] == tensor__poisson_sample(rates[i], k0, k1, 1 + (uint64_t)i, 0), "element %d: %g", i, v[i]);
    uint32_t kk[2] = {k0, k1};
    test_philox_block(kk, 7, 0, w);
    CHECK(after[0] == tensor__u53_of(w[0], w[1]));
    uint32_t w2[4];
    tensor__philox_at(k0, k1, 7, 0, 0, w2); /* word3 0 is the stream's own block */
    CHECK(memcmp(w, w2, sizeof w) == 0);
    free(v);
    free(after);
    /* threads, layout */
    tensor *r = tensor_mul_scalar(test_random(TENSOR_F64, 2, (const int64_t[]){64, 70}, 0, 1), 40);
    int threads = tensor_get_num_threads();
    tensor_manual_seed(4);
    tensor_set_num_threads(1);
    tensor *one = tensor_poisson(r);
    tensor_set_num_threads(threads);
    tensor_manual_seed(4);
    tensor *all = tensor_poisson(r);
    CHECK(test_same_bits(one, all));
    tensor_manual_seed(4);
    tensor *t = tensor_poisson(tensor_transpose(tensor_contiguous(tensor_transpose(r, 0, 1)), 0, 1));
    CHECK(test_same_bits(t, all));
}

/* ---- dropout1d, dropout2d ---- */

/* y of x == 1 [N, C, rest] (f64): every channel all 0 or all 1 / (1 - p); the dropped fraction. */
static double channel_drop_rate(tensor *y, int64_t channels, int64_t rest, double p) {
    double *v = test_values(y), dropped = 0;
    bool whole = true;
    for (int64_t c = 0; c < channels; c++) {
        double first = v[c * rest];
        whole &= first == 0 || first == 1 / (1 - p);
        for (int64_t i = 1; i < rest; i++) whole &= v[c * rest + i] == first;
        dropped += first == 0;
    }
    free(v);
    CHECK_MSG(whole, "a channel is not all 0 or all 1 / (1 - p)");
    return dropped / (double)channels;
}

TEST(dropout2d_zeroes_whole_channels) {
    tensor_manual_seed(9);
    double p = 0.4, sigma = sqrt(p * (1 - p) / 2048);
    CHECK_NEAR(channel_drop_rate(tensor_dropout2d(tensor_ones(TENSOR_SHAPE(32, 64, 2, 3), TENSOR_F64), p, true), 2048, 6, p), p, 5 * sigma, 0);
    /* 3-D: [N, C, L] as PyTorch 1.13; dropout1d the same, and [C, L] a batch of one */
    CHECK_NEAR(channel_drop_rate(tensor_dropout2d(tensor_ones(TENSOR_SHAPE(32, 64, 5), TENSOR_F64), p, true), 2048, 5, p), p, 5 * sigma, 0);
    CHECK_NEAR(channel_drop_rate(tensor_dropout1d(tensor_ones(TENSOR_SHAPE(32, 64, 5), TENSOR_F64), p, true), 2048, 5, p), p, 5 * sigma, 0);
    tensor *u = tensor_dropout1d(tensor_ones(TENSOR_SHAPE(2048, 3), TENSOR_F64), p, true);
    CHECK_SHAPE(u, TENSOR_SHAPE(2048, 3));
    CHECK_NEAR(channel_drop_rate(u, 2048, 3, p), p, 5 * sigma, 0);
    /* the mask is the same draw as dropout2d's of the batched input */
    tensor *x = test_random(TENSOR_F32, 2, (const int64_t[]){4, 6}, -1, 1);
    tensor_manual_seed(2);
    tensor *a = tensor_dropout1d(x, 0.5, true);
    tensor_manual_seed(2);
    tensor *b = tensor_squeeze(tensor_dropout2d(tensor_unsqueeze(x, 0), 0.5, true), 0);
    CHECK(test_same_bits(a, b));
    /* values: x times the channel's 0 or 2 */
    double *xv = test_values(x), *av = test_values(a);
    for (int c = 0; c < 4; c++)
        for (int i = 0; i < 6; i++) CHECK(av[c * 6 + i] == (av[c * 6] == 0 && xv[c * 6] != 0 ? 0 : (double)(float)(xv[c * 6 + i] * 2)));
    free(xv);
    free(av);
    /* eval and p 0: x; p 1: zeros, NaN stays NaN */
    static const double xs[4] = {1, -2, NAN, 4};
    tensor *t = test_tensor(TENSOR_F32, 2, (const int64_t[]){2, 2}, xs);
    CHECK_VALUES(tensor_dropout2d(t, 0.5, false), xs, 4, 0, 0);
    CHECK_VALUES(tensor_dropout1d(t, 0, true), xs, 4, 0, 0);
    CHECK_VALUES(tensor_dropout2d(t, 1, true), ((const double[]){0, 0, NAN, 0}), 4, 0, 0);
    /* an integer input is fine when nothing is dropped, as PyTorch */
    CHECK(tensor_dropout2d(tensor_ones(TENSOR_SHAPE(2, 2), TENSOR_I64), 0.5, false) != NULL);
}

/* ---- alpha dropout ---- */

TEST(alpha_dropout_keeps_mean_and_variance) {
    enum { N = 20000 };
    const double p = 0.3, al = 1.7580993408473766, a = 1 / sqrt((al * al * p + 1) * (1 - p));
    tensor_manual_seed(31);
    tensor *x = tensor_randn(TENSOR_SHAPE(N), TENSOR_F64);
    double *xv = test_values(x), *y = test_values(tensor_alpha_dropout(x, p, true));
    double m, var, dropped = 0;
    bool forms = true;
    for (int i = 0; i < N; i++) {
        bool d = fabs(y[i] - al * a * (p - 1)) <= 1e-12 && fabs(a * xv[i] + al * a * p - y[i]) > 1e-12;
        forms &= d || fabs(y[i] - (a * xv[i] + al * a * p)) <= 1e-12;
        dropped += d;
    }
    CHECK(forms);
    CHECK_NEAR(dropped / N, p, 5 * sqrt(p * (1 - p) / N), 0);
    moments(y, N, &m, &var);
    /* 5 sigma of the mean (variance 1) and of the variance (the fourth moment of y is below 4) */
    CHECK_NEAR(m, 0, 5 / sqrt(N), 0);
    CHECK_NEAR(var, 1, 5 * sqrt(3.0 / N), 0);
    free(xv);
    free(y);
    /* PyTorch's values for p 0.5: kept a x + alpha a p, dropped alpha a (p - 1), a = 0.8864..., so
       an input of 1 becomes 1.6655988251839635 or -0.7791939305180315 (torch 1.13, f64) */
    double *o = test_values(tensor_alpha_dropout(tensor_ones(TENSOR_SHAPE(64), TENSOR_F32), 0.5, true));
    for (int i = 0; i < 64; i++) CHECK_MSG(fabs(o[i] - 1.6655988251839635) < 1e-6 || fabs(o[i] + 0.7791939305180315) < 1e-6, "%g", o[i]);
    free(o);
    /* feature_alpha_dropout: one draw per channel */
    double *f = test_values(tensor_feature_alpha_dropout(tensor_ones(TENSOR_SHAPE(16, 8, 3), TENSOR_F64), 0.5, true));
    bool whole = true;
    for (int c = 0; c < 128; c++) whole &= f[c * 3 + 1] == f[c * 3] && f[c * 3 + 2] == f[c * 3];
    CHECK(whole);
    free(f);
    CHECK_VALUES(tensor_alpha_dropout(tensor_ones(TENSOR_SHAPE(3), TENSOR_F32), 1, true), ((const double[]){0, 0, 0}), 3, 0, 0);
    CHECK_VALUES(tensor_feature_alpha_dropout(tensor_ones(TENSOR_SHAPE(1, 3), TENSOR_F32), 0.5, false), ((const double[]){1, 1, 1}), 3, 0, 0);
}

/* ---- rrelu ---- */

TEST(rrelu_values_and_slopes) {
    static const double xs[5] = {-2, -0.5, 0, 0.5, 3};
    tensor *x = test_tensor(TENSOR_F64, 1, (const int64_t[]){5}, xs);
    CHECK_VALUES(tensor_rrelu(x, 0.1, 0.3, false), ((const double[]){-0.4, -0.1, 0, 0.5, 3}), 5, 1e-15, 1e-15);
    /* training: negative x times a slope in [lower, upper], their mean (lower + upper) / 2 */
    enum { N = 20000 };
    tensor *neg = tensor_full(TENSOR_SHAPE(N), -1, TENSOR_F64);
    tensor_manual_seed(6);
    double *v = test_values(tensor_rrelu(neg, 0.125, 1.0 / 3, true));
    bool inside = true;
    for (int i = 0; i < N; i++) inside &= -v[i] >= 0.125 && -v[i] < 1.0 / 3;
    CHECK(inside);
    double m, var, w = 1.0 / 3 - 0.125;
    moments(v, N, &m, &var);
    CHECK_NEAR(-m, (0.125 + 1.0 / 3) / 2, 5 * w / sqrt(12.0 * N), 0);
    CHECK_NEAR(var, w * w / 12, 5 * w * w * sqrt((1.0 / 80 - 1.0 / 144) / N), 0); /* the sample variance's variance: (mu4 - sigma^4) / N */
    free(v);
    CHECK_VALUES(tensor_rrelu(x, 0.25, 0.25, true), ((const double[]){-0.5, -0.125, 0, 0.5, 3}), 5, 1e-15, 1e-15);
}

/* The gradient of training rrelu is the slope it drew: y / x where x < 0, 1 where x > 0. */
TEST(rrelu_gradient_is_the_drawn_slope) {
    tensor *x = test_leaf(TENSOR_SHAPE(40), -1, 1);
    tensor *y = tensor_rrelu(x, 0.1, 0.9, true);
    CHECK(tensor_backward(tensor_sum_all(y)) == 0);
    double *g = test_values(tensor_grad(x)), *xv = test_values(x), *yv = test_values(y);
    for (int i = 0; i < 40; i++) {
        if (xv[i] > 0) CHECK(g[i] == 1);
        else if (xv[i] < 0) CHECK_NEAR(g[i], yv[i] / xv[i], 1e-14, 1e-14);
        if (xv[i] < 0) CHECK(g[i] >= 0.1 && g[i] < 0.9);
    }
    free(g);
    free(xv);
    free(yv);
}

/* ---- gradients ---- */

/* bernoulli, normal, poisson: the result requires grad and every input's gradient is 0 (PyTorch
   defines them so: torch.normal(mean, std).sum().backward() leaves zeros), broadcast reduced. */
static void expect_zero_grads(tensor *out, int n, tensor *const *leaves) {
    CHECK(out && tensor_requires_grad(out));
    CHECK(tensor_backward(tensor_sum_all(out)) == 0);
    for (int i = 0; i < n; i++) {
        tensor *g = tensor_grad(leaves[i]);
        CHECK_MSG(g && tensor_numel(g) == tensor_numel(leaves[i]), "leaf %d: no gradient of its shape", i);
        if (!g) continue;
        double *v = test_values(g);
        for (int64_t k = 0; k < tensor_numel(g); k++) CHECK(v[k] == 0);
        free(v);
    }
}
void gradcheck_bernoulli(void) {
    tensor *p = test_leaf(TENSOR_SHAPE(3, 4), 0.1, 0.9);
    expect_zero_grads(tensor_bernoulli(p), 1, &p);
    tensor *q = tensor_set_requires_grad(tensor_ones(TENSOR_SHAPE(3), TENSOR_F32), true);
    expect_zero_grads(tensor_bernoulli(q), 1, &q);
    CHECK(!tensor_requires_grad(tensor_bernoulli(tensor_full(TENSOR_SHAPE(2), 0.5, TENSOR_F64))));
}
void gradcheck_normal_tensor(void) {
    tensor *ms[2] = {test_leaf(TENSOR_SHAPE(2, 1), -1, 1), test_leaf(TENSOR_SHAPE(3), 0.5, 1)};
    tensor *y = tensor_normal_tensor(ms[0], ms[1]);
    CHECK_SHAPE(y, TENSOR_SHAPE(2, 3));
    expect_zero_grads(y, 2, ms);
    tensor *f32[2] = {tensor_set_requires_grad(tensor_zeros(TENSOR_SHAPE(2), TENSOR_F32), true), test_leaf(TENSOR_SHAPE(2), 0.5, 1)};
    tensor *z = tensor_normal_tensor(f32[0], f32[1]); /* f32 mean, f64 std: f32 */
    CHECK(z && tensor_get_dtype(z) == TENSOR_F32);
    expect_zero_grads(z, 2, f32);
}
void gradcheck_normal_std_scalar(void) {
    tensor *m = test_leaf(TENSOR_SHAPE(2, 3), -1, 1);
    expect_zero_grads(tensor_normal_std_scalar(m, 2), 1, &m);
}
void gradcheck_normal_mean_scalar(void) {
    tensor *s = test_leaf(TENSOR_SHAPE(4), 0.5, 2);
    expect_zero_grads(tensor_normal_mean_scalar(3, s), 1, &s);
}
void gradcheck_poisson(void) {
    tensor *r = test_leaf(TENSOR_SHAPE(2, 3), 0.5, 40);
    expect_zero_grads(tensor_poisson(r), 1, &r);
    tensor *t = test_leaf(TENSOR_SHAPE(3, 2), 0.5, 40);
    expect_zero_grads(tensor_poisson(tensor_transpose(t, 0, 1)), 1, &t);
}

typedef struct { int which; double p; bool training; } rdrop_ctx;
static tensor *f_rdrop(tensor *const *in, const void *vctx) {
    const rdrop_ctx *c = (const rdrop_ctx *)vctx;
    tensor_manual_seed(77); /* the same noise on every evaluation */
    switch (c->which) {
    case 0: return tensor_dropout1d(in[0], c->p, c->training);
    case 1: return tensor_dropout2d(in[0], c->p, c->training);
    case 2: return tensor_alpha_dropout(in[0], c->p, c->training);
    case 3: return tensor_feature_alpha_dropout(in[0], c->p, c->training);
    case 4: return tensor_rrelu(in[0], 0.1, 0.6, c->training);
    default: return tensor_dropout1d(tensor_transpose(in[0], 0, 1), c->p, c->training);
    }
}
static void rdrop_gradchecks(int which, tensor *x) {
    rdrop_ctx cs[4] = {{which, 0.4, true}, {which, 0.4, false}, {which, 0, true}, {which, 1, true}};
    int64_t n = tensor_numel(x);
    for (int k = 0; k < 4; k++) CHECK_MSG(GRADCHECK(f_rdrop, &cs[k], 1, &x) == n, "op %d case %d", which, k);
}
void gradcheck_dropout1d(void) {
    rdrop_gradchecks(0, test_leaf(TENSOR_SHAPE(2, 3, 2), -1, 1));
    rdrop_gradchecks(0, test_leaf(TENSOR_SHAPE(3, 2), -1, 1));
    rdrop_gradchecks(5, test_leaf(TENSOR_SHAPE(2, 3), -1, 1)); /* non-contiguous */
}
void gradcheck_dropout2d(void) { rdrop_gradchecks(1, test_leaf(TENSOR_SHAPE(2, 3, 2, 2), -1, 1)); }
void gradcheck_alpha_dropout(void) { rdrop_gradchecks(2, test_leaf(TENSOR_SHAPE(3, 4), -1, 1)); }
void gradcheck_feature_alpha_dropout(void) { rdrop_gradchecks(3, test_leaf(TENSOR_SHAPE(2, 3, 2), -1, 1)); }
void gradcheck_rrelu(void) {
    tensor *x = test_leaf(TENSOR_SHAPE(3, 4), 0.05, 1); /* away from the kink at 0 */
    tensor *nx = tensor_set_requires_grad(tensor_detach(tensor_neg(x)), true);
    rdrop_ctx train = {4, 0, true}, eval = {4, 0, false};
    CHECK(GRADCHECK(f_rdrop, &train, 1, &x) == 12);
    CHECK(GRADCHECK(f_rdrop, &train, 1, &nx) == 12);
    CHECK(GRADCHECK(f_rdrop, &eval, 1, &nx) == 12);
}

/* ---- bad inputs ---- */

void bad_input_bernoulli(void) {
    CHECK_BAD(tensor_bernoulli(NULL), "tensor_bernoulli");
    CHECK_BAD(tensor_bernoulli(tensor_ones(TENSOR_SHAPE(2), TENSOR_I64)), "tensor_bernoulli");
    CHECK_BAD(tensor_bernoulli(test_tensor(TENSOR_F32, 1, (const int64_t[]){2}, (const double[]){0.5, 1.5})), "tensor_bernoulli");
    CHECK_BAD(tensor_bernoulli(test_tensor(TENSOR_F32, 1, (const int64_t[]){2}, (const double[]){-0.5, 0.5})), "tensor_bernoulli");
    CHECK_BAD(tensor_bernoulli(test_tensor(TENSOR_F64, 1, (const int64_t[]){2}, (const double[]){0.5, NAN})), "tensor_bernoulli");
}
void bad_input_bernoulli_scalar(void) {
    tensor *t = tensor_zeros(TENSOR_SHAPE(2), TENSOR_F32);
    CHECK_BAD(tensor_bernoulli_scalar(NULL, 0.5), "tensor_bernoulli_scalar");
    CHECK_BAD(tensor_bernoulli_scalar(t, 1.5), "tensor_bernoulli_scalar");
    CHECK_BAD(tensor_bernoulli_scalar(t, -0.1), "tensor_bernoulli_scalar");
    CHECK_BAD(tensor_bernoulli_scalar(t, NAN), "tensor_bernoulli_scalar");
}
void bad_input_normal_tensor(void) {
    tensor *m = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32), *s = tensor_ones(TENSOR_SHAPE(3), TENSOR_F32);
    CHECK_BAD(tensor_normal_tensor(NULL, s), "tensor_normal_tensor");
    CHECK_BAD(tensor_normal_tensor(m, NULL), "tensor_normal_tensor");
    CHECK_BAD(tensor_normal_tensor(m, tensor_ones(TENSOR_SHAPE(4), TENSOR_F32)), "tensor_normal_tensor");
    CHECK_BAD(tensor_normal_tensor(tensor_zeros(TENSOR_SHAPE(3), TENSOR_I64), s), "tensor_normal_tensor");
    CHECK_BAD(tensor_normal_tensor(m, test_tensor(TENSOR_F32, 1, (const int64_t[]){3}, (const double[]){1, -1, 1})), "tensor_normal_tensor");
    CHECK_BAD(tensor_normal_tensor(m, test_tensor(TENSOR_F32, 1, (const int64_t[]){3}, (const double[]){1, NAN, 1})), "tensor_normal_tensor");
}
void bad_input_normal_std_scalar(void) {
    CHECK_BAD(tensor_normal_std_scalar(NULL, 1), "tensor_normal_std_scalar");
    CHECK_BAD(tensor_normal_std_scalar(tensor_zeros(TENSOR_SHAPE(2), TENSOR_F32), -1), "tensor_normal_std_scalar");
    CHECK_BAD(tensor_normal_std_scalar(tensor_zeros(TENSOR_SHAPE(2), TENSOR_F32), NAN), "tensor_normal_std_scalar");
    CHECK_BAD(tensor_normal_std_scalar(tensor_zeros(TENSOR_SHAPE(2), TENSOR_I32), 1), "tensor_normal_std_scalar");
}
void bad_input_normal_mean_scalar(void) {
    CHECK_BAD(tensor_normal_mean_scalar(0, NULL), "tensor_normal_mean_scalar");
    CHECK_BAD(tensor_normal_mean_scalar(0, tensor_ones(TENSOR_SHAPE(2), TENSOR_I64)), "tensor_normal_mean_scalar");
    CHECK_BAD(tensor_normal_mean_scalar(0, tensor_full(TENSOR_SHAPE(2), -0.5, TENSOR_F64)), "tensor_normal_mean_scalar");
}
void bad_input_poisson(void) {
    CHECK_BAD(tensor_poisson(NULL), "tensor_poisson");
    CHECK_BAD(tensor_poisson(tensor_ones(TENSOR_SHAPE(2), TENSOR_I64)), "tensor_poisson");
    CHECK_BAD(tensor_poisson(test_tensor(TENSOR_F32, 1, (const int64_t[]){2}, (const double[]){1, -1})), "tensor_poisson");
    CHECK_BAD(tensor_poisson(test_tensor(TENSOR_F64, 1, (const int64_t[]){2}, (const double[]){NAN, 1})), "tensor_poisson");
}
static void bad_feature_dropout(tensor *(*f)(tensor *, double, bool), const char *fn) {
    tensor *x = tensor_ones(TENSOR_SHAPE(2, 3, 4), TENSOR_F32);
    CHECK_BAD(f(NULL, 0.5, true), fn);
    CHECK_BAD(f(x, -0.1, true), fn);
    CHECK_BAD(f(x, 1.5, false), fn);
    CHECK_BAD(f(x, NAN, true), fn);
    CHECK_BAD(f(tensor_ones(TENSOR_SHAPE(2, 3, 4), TENSOR_I64), 0.5, true), fn);
}
void bad_input_dropout1d(void) {
    bad_feature_dropout(tensor_dropout1d, "tensor_dropout1d");
    CHECK_BAD(tensor_dropout1d(tensor_ones(TENSOR_SHAPE(4), TENSOR_F32), 0.5, true), "tensor_dropout1d");
    CHECK_BAD(tensor_dropout1d(tensor_ones(TENSOR_SHAPE(1, 2, 3, 4), TENSOR_F32), 0.5, false), "tensor_dropout1d");
}
void bad_input_dropout2d(void) {
    bad_feature_dropout(tensor_dropout2d, "tensor_dropout2d");
    CHECK_BAD(tensor_dropout2d(tensor_ones(TENSOR_SHAPE(4), TENSOR_F32), 0.5, true), "tensor_dropout2d");
}
void bad_input_alpha_dropout(void) { bad_feature_dropout(tensor_alpha_dropout, "tensor_alpha_dropout"); }
void bad_input_feature_alpha_dropout(void) {
    bad_feature_dropout(tensor_feature_alpha_dropout, "tensor_feature_alpha_dropout");
    CHECK_BAD(tensor_feature_alpha_dropout(tensor_ones(TENSOR_SHAPE(4), TENSOR_F32), 0.5, true), "tensor_feature_alpha_dropout");
}
void bad_input_rrelu(void) {
    tensor *x = tensor_ones(TENSOR_SHAPE(3), TENSOR_F32);
    CHECK_BAD(tensor_rrelu(NULL, 0.1, 0.3, true), "tensor_rrelu");
    CHECK_BAD(tensor_rrelu(x, 0.5, 0.1, true), "tensor_rrelu");
    CHECK_BAD(tensor_rrelu(x, NAN, 0.3, false), "tensor_rrelu");
    CHECK_BAD(tensor_rrelu(tensor_ones(TENSOR_SHAPE(3), TENSOR_I64), 0.1, 0.3, false), "tensor_rrelu");
}
