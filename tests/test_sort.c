/* Tests of the sorting ops and the reductions of generator/parts/sort.h: values against numbers
   PyTorch 2 printed for the same calls (pasted below, no PyTorch needed to run), the kernels on
   long lines, many lines (threads) and strided inputs against a reference written here, gradient
   checks (gradcheck_NAME, run by the registry sweep of tests/test_autograd.c), gradients where
   PyTorch defines them at ties, and bad inputs (bad_input_NAME, run by tests/test_registry.c). */
#include "test.h"

/* ---- PyTorch's values (float64 inputs) ---- */
static const double X[] = {3.0, 1.0, NAN, 1.0, -2.0, 0.5, 0.5, 0.5, -1.0, 7.0, 2.0, NAN, -INFINITY, 4.0, 2.0};
static const double sort1_v[] = {-2.0, 1.0, 1.0, 3.0, NAN, -1.0, 0.5, 0.5, 0.5, 7.0, -INFINITY, 2.0, 2.0, 4.0, NAN};
static const double sort1_i[] = {4, 1, 3, 0, 2, 3, 0, 1, 2, 4, 2, 0, 4, 3, 1};
static const double sort1d_v[] = {NAN, 3.0, 1.0, 1.0, -2.0, 7.0, 0.5, 0.5, 0.5, -1.0, NAN, 4.0, 2.0, 2.0, -INFINITY};
static const double sort1d_i[] = {2, 0, 1, 3, 4, 4, 0, 1, 2, 3, 1, 3, 0, 4, 2};
static const double sort0_v[] = {0.5, 0.5, -INFINITY, -1.0, -2.0, 2.0, 1.0, 0.5, 1.0, 2.0, 3.0, NAN, NAN, 4.0, 7.0};
static const double sort0_i[] = {1, 1, 2, 1, 0, 2, 0, 1, 0, 2, 0, 2, 0, 2, 1};
static const double topk_v[] = {NAN, 3.0, 7.0, 0.5, NAN, 4.0};
static const double topk_i[] = {2, 0, 4, 2, 1, 3};
static const double topks_v[] = {0.5, 0.5, -INFINITY, -1.0, -2.0, 2.0, 1.0, 0.5, 1.0, 2.0, 3.0, NAN, NAN, 4.0, 7.0};
static const double topks_i[] = {1, 1, 2, 1, 0, 2, 0, 1, 0, 2, 0, 2, 0, 2, 1};
static const double Y[] = {4.0, 2.0, 2.0, 1.0, 3.0, 9.0, 5.0, 5.0, 4.0, 4.0, 4.0, 0.0, 1.0, NAN, 3.0, NAN, 2.0, 2.0};
static const double med_v[] = {2.0, 4.0, NAN};
static const double med_i[] = {2, 3, 1};
static const double nmed_v[] = {2.0, 4.0, 2.0};
static const double nmed_i[] = {2, 3, 4};
static const double med0_v[] = {4.0, 2.0, 2.0, 1.0, 3.0, 0.0};
static const double med0_i[] = {0, 0, 0, 0, 0, 1};
static const double medall[] = {4.0};
static const double nmedall[] = {3.0};
static const double kth_v[] = {2.0, 4.0};
static const double kth_i[] = {1, 2};
static const double mode_v[] = {2.0, 4.0};
static const double mode_i[] = {2, 4};
static const double mode0_v[] = {4.0, 2.0, 2.0, 1.0, 3.0, 0.0};
static const double mode0_i[] = {0, 0, 0, 0, 0, 1};
static const double Z[] = {1.0, 2.0, 0.0, 4.0, -1.0, 3.0, 0.5, 0.0, 2.0, 2.0, -2.0, 1.0};
static const double cumprod1[] = {1.0, 2.0, 0.0, 0.0, -1.0, -3.0, -1.5, -0.0, 2.0, 4.0, -8.0, -8.0};
static const double cumprod0[] = {1.0, 2.0, 0.0, 4.0, -1.0, 6.0, 0.0, 0.0, -2.0, 12.0, -0.0, 0.0};
static const double cmax_v[] = {3.0, 3.0, NAN, NAN, NAN, 0.5, 0.5, 0.5, 0.5, 7.0, 2.0, NAN, NAN, NAN, NAN};
static const double cmax_i[] = {0, 0, 2, 2, 2, 0, 1, 2, 2, 4, 0, 1, 1, 1, 1};
static const double cmin_v[] = {3.0, 1.0, NAN, NAN, NAN, 0.5, 0.5, 0.5, -1.0, -1.0, 2.0, NAN, NAN, NAN, NAN};
static const double cmin_i[] = {0, 1, 2, 2, 2, 0, 1, 2, 3, 3, 0, 1, 1, 1, 1};
static const double L[] = {-1000.0, 0.0, 1.0, -INFINITY, 1000.0, 1000.0, -2.0, 3.0, -INFINITY, -INFINITY, 0.5, NAN};
static const double lcse1[] = {-1000.0, 0.0, 1.3132616875182228, 1.3132616875182228, 1000.0, 1000.6931471805599, 1000.6931471805599, 1000.6931471805599, -INFINITY, -INFINITY, 0.5, NAN};
static const double lcse0[] = {-1000.0, 0.0, 1.0, -INFINITY, 1000.0, 1000.0, 1.048587351573742, 3.0, 1000.0, 1000.0, 1.5045969023422834, NAN};
static const double amax02[] = {3.0, 4.0};
static const double amin_all[] = {-2.0};
static const double nansum1[] = {3.0, 7.5, -INFINITY};
static const double nanmean1[] = {0.75, 1.5, -INFINITY};
static const double nanmean_all[] = {-INFINITY};
static const double Q[] = {0.3, -1.0, 2.5, 7.0, 1.0, 1.5, 4.0, 2.0, NAN, 1.0, 0.0, 3.0, -3.0, 5.0};
static const double q_linear[] = {-1.0, 0.65, 1.2000000000000002, 1.5, 5.200000000000001, 7.0};
static const double q_lower[] = {-1.0, 0.3, 1.0, 1.5, 4.0, 7.0};
static const double q_higher[] = {-1.0, 1.0, 1.5, 1.5, 7.0, 7.0};
static const double q_midpoint[] = {-1.0, 0.65, 1.25, 1.5, 5.5, 7.0};
static const double q_nearest[] = {-1.0, 1.0, 1.0, 1.5, 4.0, 7.0};
static const double q_dim1[] = {1.0499999999999998, NAN};
static const double nq_dim1[] = {1.0499999999999998, 0.75};
static const double nq_dim1_q[] = {-0.21999999999999992, -1.5, 3.25, 2.75};
static const double q_all[] = {2.0999999999999996};
static const double vm_v[] = {2.9166666666666665, 2.8958333333333335, 3.583333333333334};
static const double vm_m[] = {1.75, 0.625, 0.75};
static const double sm_v[] = {1.247219128924647, 0.4714045207910317, 1.0801234497346435, 1.699673171197595};
static const double sm_m[] = {0.6666666666666666, 2.3333333333333335, -0.5, 1.6666666666666667};
static const double cnz0[] = {3, 3, 2, 2};
static const double cnz_all[] = {10};
static const double dist2[] = {8.631338250816034};
static const double dist1[] = {18.0};
static const double distinf[] = {6.0};
static const double dist3[] = {7.054004063162272};
static const double qf[] = {0.8600000739097595, 2.799999713897705};
static const double g_amax[] = {0.0, 0.5, 0.5, 0.5, 0.5, 0.0};
static const double g_amin_all[] = {0.0, 0.0, 0.0, 0.0, 0.0, 1.0};
static const double g_med_all[] = {0.0, 0.0, 0.0, 0.5, 0.5, 0.0};
static const double g_cmax[] = {1.0, 1.0, 1.0, 1.0, 2.0, 0.0};
static const double g_cumprod[] = {3.0, 1.0, 10.0, 0.0, 5.5, -1.5, -3.0, -1.5, -5.0, -6.0, 8.0, -8.0};

static tensor *T64(int ndim, const int64_t *shape, const double *v) { return test_tensor(TENSOR_F64, ndim, shape, v); }
#define CHECK_IDX(t, v, n) CHECK_VALUES(t, v, n, 0, 0)

/* ---- values ---- */

TEST(sort_values_and_indices_like_pytorch) {
    tensor *x = T64(TENSOR_SHAPE(3, 5), X);
    tensor *i = NULL, *v = tensor_sort(x, 1, false, &i);
    CHECK_SHAPE(v, TENSOR_SHAPE(3, 5));
    CHECK(tensor_get_dtype(i) == TENSOR_I64);
    CHECK_VALUES(v, sort1_v, 15, 0, 0);
    CHECK_IDX(i, sort1_i, 15);
    v = tensor_sort(x, -1, true, &i);
    CHECK_VALUES(v, sort1d_v, 15, 0, 0);
    CHECK_IDX(i, sort1d_i, 15);
    v = tensor_sort(x, 0, false, &i);
    CHECK_VALUES(v, sort0_v, 15, 0, 0);
    CHECK_IDX(i, sort0_i, 15);
    /* the same through a transposed view (dim 1 of x is dim 0 of x^T), in f32 */
    tensor *xt = tensor_transpose(test_tensor(TENSOR_F32, TENSOR_SHAPE(3, 5), X), 0, 1);
    v = tensor_sort(xt, 0, false, &i);
    CHECK(tensor_get_dtype(v) == TENSOR_F32);
    CHECK_VALUES(tensor_transpose(v, 0, 1), sort1_v, 15, 0, 0);
    CHECK_IDX(tensor_transpose(i, 0, 1), sort1_i, 15);
    CHECK_VALUES(tensor_argsort(x, 1, false), sort1_i, 15, 0, 0);
    CHECK_VALUES(tensor_msort(x), sort0_v, 15, 0, 0);
    /* integers (descending, ties in order), bool, 0-dim, empty */
    tensor *n = test_tensor(TENSOR_I32, TENSOR_SHAPE(6), (const double[]){3, -7, 3, 100000, 0, -7});
    v = tensor_sort(n, 0, true, &i);
    CHECK(tensor_get_dtype(v) == TENSOR_I32);
    CHECK_VALUES(v, ((const double[]){100000, 3, 3, 0, -7, -7}), 6, 0, 0);
    CHECK_IDX(i, ((const double[]){3, 0, 2, 4, 1, 5}), 6);
    const int64_t bigv[3] = {9007199254740993, 1, 9007199254740992}; /* equal as doubles: sorted as int64 */
    tensor *big = tensor_from_data(bigv, TENSOR_SHAPE(3), TENSOR_I64);
    CHECK_VALUES(tensor_argsort(big, 0, false), ((const double[]){1, 2, 0}), 3, 0, 0);
    tensor *b = test_tensor(TENSOR_BOOL, TENSOR_SHAPE(4), (const double[]){1, 0, 1, 0});
    CHECK_VALUES(tensor_sort(b, 0, false, &i), ((const double[]){0, 0, 1, 1}), 4, 0, 0);
    CHECK_IDX(i, ((const double[]){1, 3, 0, 2}), 4);
    v = tensor_sort(tensor_scalar(2.5, TENSOR_F32), -1, false, &i);
    CHECK_SHAPE(v, 0, NULL);
    CHECK(tensor_item(v) == 2.5 && tensor_item(i) == 0);
    CHECK_SHAPE(tensor_sort(tensor_zeros(TENSOR_SHAPE(3, 0), TENSOR_F32), 1, false, &i), TENSOR_SHAPE(3, 0));
    CHECK_SHAPE(i, TENSOR_SHAPE(3, 0));
    /* f16 and bf16 keep their values */
    tensor *h = test_tensor(TENSOR_BF16, TENSOR_SHAPE(4), (const double[]){1.5, -0.25, 3, -8});
    CHECK_VALUES(tensor_sort(h, 0, false, NULL), ((const double[]){-8, -0.25, 1.5, 3}), 4, 0, 0);
}

/* The kernel on rows long enough to merge (and allocate), many rows (the thread pool), and a
   strided dim: every line sorted, a permutation, and ties in their original order. */
static void check_sorted_lines(tensor *x, int dim, bool desc) {
    tensor *idx = NULL, *v = tensor_sort(x, dim, desc, &idx);
    CHECK(v && idx);
    if (!v || !idx) return;
    int nd = tensor_ndim(x);
    int d = dim < 0 ? dim + nd : dim;
    tensor *xm = tensor_contiguous(tensor_movedim(x, d, -1)), *vm = tensor_contiguous(tensor_movedim(v, d, -1));
    tensor *im = tensor_contiguous(tensor_movedim(idx, d, -1));
    double *xv = test_values(xm), *vv = test_values(vm), *iv = test_values(im);
    int64_t n = tensor_shape(x)[d], rows = tensor_numel(x) / (n ? n : 1);
    char *seen = (char *)calloc((size_t)n, 1);
    int bad = 0;
    for (int64_t r = 0; r < rows && !bad; r++) {
        memset(seen, 0, (size_t)n);
        for (int64_t i = 0; i < n && !bad; i++) {
            int64_t k = (int64_t)iv[r * n + i];
            if (k < 0 || k >= n || seen[k] || xv[r * n + k] != vv[r * n + i]) { bad = 1; break; }
            seen[k] = 1;
            if (i > 0) {
                double a = vv[r * n + i - 1], c = vv[r * n + i];
                if (desc ? a < c : a > c) bad = 2;
                if (a == c && iv[r * n + i - 1] > iv[r * n + i]) bad = 3; /* stability */
            }
        }
    }
    CHECK_MSG(bad == 0, "sort of %s along dim %d (desc %d): line check %d failed", tensor_dtype_name(tensor_get_dtype(x)), dim, (int)desc, bad);
    free(seen); free(xv); free(vv); free(iv);
}
TEST(sort_long_many_and_strided_lines) {
    tensor *rounded = tensor_round(tensor_mul_scalar(tensor_rand(TENSOR_SHAPE(5000), TENSOR_F32), 300)); /* many ties */
    check_sorted_lines(rounded, 0, false);
    check_sorted_lines(rounded, 0, true);
    tensor *many = tensor_randn(TENSOR_SHAPE(700, 97), TENSOR_F64);
    check_sorted_lines(many, 1, false);
    check_sorted_lines(many, 0, true);
    check_sorted_lines(tensor_slice(tensor_transpose(many, 0, 1), 1, 0, 700, 3), 1, false);
    tensor *ints = tensor_randint(-50, 50, TENSOR_SHAPE(64, 300), TENSOR_I64);
    check_sorted_lines(ints, -1, true);
    check_sorted_lines(tensor_randint(-3, 3, TENSOR_SHAPE(4, 1000, 3), TENSOR_I32), 1, false);
    /* the reference kernels (one thread, the same code) agree */
    bool was = tensor_set_reference_kernels(true);
    tensor *i1 = NULL, *v1 = tensor_sort(many, 1, false, &i1);
    tensor_set_reference_kernels(was);
    tensor *i2 = NULL, *v2 = tensor_sort(many, 1, false, &i2);
    CHECK(test_same_bits(v1, v2) && test_same_bits(i1, i2));
}

TEST(sort_topk_kthvalue_like_pytorch) {
    tensor *x = T64(TENSOR_SHAPE(3, 5), X), *i = NULL;
    tensor *v = tensor_topk(x, 2, 1, true, true, &i);
    CHECK_SHAPE(v, TENSOR_SHAPE(3, 2));
    CHECK_VALUES(v, topk_v, 6, 0, 0);
    /* PyTorch's index among equal values is its selection's (here the last 0.5 of row 1); ours
       is the first in order: the values at the indices are the same */
    CHECK_IDX(i, ((const double[]){2, 0, 4, 0, 1, 3}), 6);
    CHECK(topk_i[3] == 2);
    CHECK_VALUES(tensor_gather(x, 1, i), topk_v, 6, 0, 0);
    v = tensor_topk(x, 3, 0, false, true, &i);
    CHECK_VALUES(v, topks_v, 15, 0, 0);
    CHECK_IDX(i, topks_i, 15);
    CHECK_SHAPE(tensor_topk(x, 0, 1, true, true, NULL), TENSOR_SHAPE(3, 0));
    tensor *y = T64(TENSOR_SHAPE(2, 6), Y);
    v = tensor_kthvalue(y, 3, 1, false, &i);
    CHECK_VALUES(v, kth_v, 2, 0, 0);
    /* ties: PyTorch's quickselect picks one of the equal values (indices 1, 2 here), ours is the
       k-th of a stable sort (2, 3); the values there agree */
    CHECK(kth_i[0] == 1 && kth_i[1] == 2);
    CHECK_IDX(i, ((const double[]){2, 3}), 2);
    CHECK_VALUES(tensor_gather(y, 1, tensor_unsqueeze(i, 1)), kth_v, 2, 0, 0);
    CHECK_SHAPE(tensor_kthvalue(y, 1, 0, true, NULL), TENSOR_SHAPE(1, 6));
    CHECK(tensor_item(tensor_kthvalue(tensor_scalar(3, TENSOR_F32), 1, 0, false, NULL)) == 3);
}

TEST(reduce_more_median_mode_like_pytorch) {
    tensor *y = T64(TENSOR_SHAPE(3, 6), Y), *i = NULL;
    tensor *v = tensor_median(y, 1, false, &i);
    CHECK_VALUES(v, med_v, 3, 0, 0);
    CHECK_IDX(i, med_i, 3);
    v = tensor_nanmedian(y, -1, true, &i);
    CHECK_SHAPE(v, TENSOR_SHAPE(3, 1));
    CHECK_VALUES(v, nmed_v, 3, 0, 0);
    CHECK_IDX(i, nmed_i, 3);
    tensor *y2 = tensor_narrow(y, 0, 0, 2);
    v = tensor_median(y2, 0, false, &i);
    CHECK_VALUES(v, med0_v, 6, 0, 0);
    CHECK_IDX(i, med0_i, 6);
    CHECK_VALUES(tensor_median_all(y2), medall, 1, 0, 0);
    CHECK_VALUES(tensor_nanmedian_all(y), nmedall, 1, 0, 0);
    CHECK(isnan(tensor_item(tensor_median_all(y))));
    CHECK(isnan(tensor_item(tensor_median_all(tensor_zeros(TENSOR_SHAPE(0), TENSOR_F32)))));
    v = tensor_mode(y2, 1, false, &i);
    CHECK_VALUES(v, mode_v, 2, 0, 0);
    CHECK_IDX(i, mode_i, 2);
    v = tensor_mode(y2, 0, false, &i);
    CHECK_VALUES(v, mode0_v, 6, 0, 0);
    CHECK_IDX(i, mode0_i, 6);
    /* integers: median stays i64 */
    tensor *n = test_tensor(TENSOR_I64, TENSOR_SHAPE(5), (const double[]){5, 1, 4, 1, 2});
    v = tensor_median(n, 0, false, &i);
    CHECK(tensor_get_dtype(v) == TENSOR_I64 && tensor_item(v) == 2 && tensor_item(i) == 4);
    CHECK(tensor_item(tensor_mode(n, 0, false, NULL)) == 1);
    v = tensor_median(tensor_scalar(7, TENSOR_F64), 0, false, &i);
    CHECK_SHAPE(v, 0, NULL);
    CHECK(tensor_item(v) == 7 && tensor_item(i) == 0);
}

TEST(reduce_more_scans_like_pytorch) {
    tensor *z = T64(TENSOR_SHAPE(3, 4), Z), *i = NULL;
    CHECK_VALUES(tensor_cumprod(z, 1), cumprod1, 12, 1e-15, 0);
    CHECK_VALUES(tensor_cumprod(tensor_transpose(tensor_contiguous(tensor_transpose(z, 0, 1)), 0, 1), 0), cumprod0, 12, 1e-15, 0);
    CHECK(tensor_get_dtype(tensor_cumprod(test_tensor(TENSOR_BOOL, TENSOR_SHAPE(2), (const double[]){1, 1}), 0)) == TENSOR_I64);
    CHECK_VALUES(tensor_cumprod(test_tensor(TENSOR_I32, TENSOR_SHAPE(4), (const double[]){2, -3, 4, 5}), 0), ((const double[]){2, -6, -24, -120}), 4, 0, 0);
    tensor *x = T64(TENSOR_SHAPE(3, 5), X);
    tensor *v = tensor_cummax(x, 1, &i);
    CHECK_VALUES(v, cmax_v, 15, 0, 0);
    CHECK_IDX(i, cmax_i, 15);
    v = tensor_cummin(tensor_contiguous(tensor_transpose(x, 0, 1)), 0, &i);
    CHECK_VALUES(tensor_transpose(v, 0, 1), cmin_v, 15, 0, 0);
    CHECK_IDX(tensor_transpose(i, 0, 1), cmin_i, 15);
    v = tensor_cummax(test_tensor(TENSOR_I32, TENSOR_SHAPE(3), (const double[]){1, 3, 3}), 0, &i);
    CHECK(tensor_get_dtype(v) == TENSOR_I32);
    CHECK_IDX(i, ((const double[]){0, 1, 2}), 3);
    tensor *l = T64(TENSOR_SHAPE(3, 4), L);
    CHECK_VALUES(tensor_logcumsumexp(l, 1), lcse1, 12, 1e-13, 1e-14);
    CHECK_VALUES(tensor_logcumsumexp(l, -2), lcse0, 12, 1e-13, 1e-14);
    CHECK_VALUES(tensor_logcumsumexp(test_tensor(TENSOR_F32, TENSOR_SHAPE(3, 4), L), 1), lcse1, 12, 1e-4, 1e-6);
}

TEST(reduce_more_amax_nan_counts_like_pytorch) {
    tensor *z = T64(TENSOR_SHAPE(3, 4), Z), *i = NULL;
    tensor *z3 = tensor_reshape(z, TENSOR_SHAPE(3, 2, 2));
    CHECK_VALUES(tensor_amax(z3, 2, (const int[]){0, -1}, false), amax02, 2, 0, 0);
    CHECK_SHAPE(tensor_amax(z3, 2, (const int[]){0, 2}, true), TENSOR_SHAPE(1, 2, 1));
    CHECK_VALUES(tensor_amin(z, 0, NULL, false), amin_all, 1, 0, 0);
    tensor *hi = NULL, *lo = tensor_aminmax(z, (const int[]){1}, false, &hi);
    CHECK_VALUES(lo, ((const double[]){0, -1, -2}), 3, 0, 0);
    CHECK_VALUES(hi, ((const double[]){4, 3, 2}), 3, 0, 0);
    lo = tensor_aminmax(z, NULL, true, &hi);
    CHECK_SHAPE(lo, TENSOR_SHAPE(1, 1));
    CHECK(tensor_item(lo) == -2 && tensor_item(hi) == 4);
    tensor *v = tensor_max_dim(z, 1, true, &i);
    CHECK_SHAPE(v, TENSOR_SHAPE(3, 1));
    CHECK_VALUES(v, ((const double[]){4, 3, 2}), 3, 0, 0);
    CHECK_IDX(i, ((const double[]){3, 1, 0}), 3);
    v = tensor_min_dim(z, 0, false, &i);
    CHECK_VALUES(v, ((const double[]){-1, 2, -2, 0}), 4, 0, 0);
    CHECK_IDX(i, ((const double[]){1, 0, 2, 1}), 4);
    tensor *x = T64(TENSOR_SHAPE(3, 5), X);
    CHECK_VALUES(tensor_nansum(x, 1, (const int[]){1}, false), nansum1, 3, 0, 0);
    CHECK_VALUES(tensor_nanmean(x, 1, (const int[]){-1}, false), nanmean1, 3, 1e-15, 0);
    CHECK_VALUES(tensor_nanmean(x, 0, NULL, false), nanmean_all, 1, 0, 0);
    CHECK(tensor_item(tensor_nansum(test_tensor(TENSOR_I32, TENSOR_SHAPE(2), (const double[]){2, 3}), 0, NULL, false)) == 5);
    tensor *c = tensor_count_nonzero(z, 1, (const int[]){0});
    CHECK(tensor_get_dtype(c) == TENSOR_I64);
    CHECK_VALUES(c, cnz0, 4, 0, 0);
    CHECK_VALUES(tensor_count_nonzero(z, 0, NULL), cnz_all, 1, 0, 0);
    tensor *m = NULL;
    v = tensor_var_mean(z, 1, 1, false, &m);
    CHECK_VALUES(v, vm_v, 3, 1e-15, 1e-14);
    CHECK_VALUES(m, vm_m, 3, 1e-15, 1e-14);
    v = tensor_std_mean(z, 0, 0, true, &m);
    CHECK_SHAPE(v, TENSOR_SHAPE(1, 4));
    CHECK_VALUES(v, sm_v, 4, 1e-15, 1e-14);
    CHECK_VALUES(m, sm_m, 4, 1e-15, 1e-14);
    tensor *a = T64(TENSOR_SHAPE(2, 3), ((const double[]){1, 2, 3, 4, 5, 6})), *b = T64(TENSOR_SHAPE(3), ((const double[]){0.5, -1, 2}));
    CHECK_VALUES(tensor_dist(a, b, 2), dist2, 1, 1e-14, 1e-14);
    CHECK_VALUES(tensor_dist(a, b, 1), dist1, 1, 1e-14, 1e-14);
    CHECK_VALUES(tensor_dist(a, b, INFINITY), distinf, 1, 0, 0);
    CHECK_VALUES(tensor_dist(a, b, 3), dist3, 1, 1e-14, 1e-14);
}

TEST(reduce_more_quantile_like_pytorch) {
    tensor *q2 = T64(TENSOR_SHAPE(2, 7), Q);
    tensor *row = tensor_select(q2, 0, 0);
    tensor *qs = T64(TENSOR_SHAPE(6), ((const double[]){0, 0.25, 0.4, 0.5, 0.9, 1}));
    const char *modes[5] = {NULL, "lower", "higher", "midpoint", "nearest"};
    const double *want[5] = {q_linear, q_lower, q_higher, q_midpoint, q_nearest};
    for (int k = 0; k < 5; k++) {
        tensor *r = tensor_quantile_tensor(row, qs, NULL, false, modes[k]);
        CHECK_SHAPE(r, TENSOR_SHAPE(6));
        CHECK_VALUES(r, want[k], 6, 1e-15, 1e-15);
    }
    CHECK_VALUES(tensor_quantile(q2, 0.35, (const int[]){1}, false, "linear"), q_dim1, 2, 1e-15, 1e-15);
    CHECK_VALUES(tensor_nanquantile(q2, 0.35, (const int[]){1}, false, NULL), nq_dim1, 2, 1e-15, 1e-15);
    tensor *r = tensor_nanquantile_tensor(q2, T64(TENSOR_SHAPE(2), ((const double[]){0.1, 0.75})), (const int[]){1}, true, NULL);
    CHECK_SHAPE(r, TENSOR_SHAPE(2, 2, 1));
    CHECK_VALUES(r, nq_dim1_q, 4, 1e-15, 1e-15);
    r = tensor_quantile(tensor_reshape(row, TENSOR_SHAPE(7, 1)), 0.6, NULL, true, NULL);
    CHECK_SHAPE(r, TENSOR_SHAPE(1, 1));
    CHECK_VALUES(r, q_all, 1, 1e-15, 1e-15);
    r = tensor_quantile_tensor(test_tensor(TENSOR_F32, TENSOR_SHAPE(7), Q), test_tensor(TENSOR_F32, TENSOR_SHAPE(2), (const double[]){0.3, 0.7}), NULL, false, NULL);
    CHECK(tensor_get_dtype(r) == TENSOR_F32);
    CHECK_VALUES(r, qf, 2, 0, 1e-6);
    CHECK_SHAPE(tensor_quantile(q2, 0.5, (const int[]){0}, true, NULL), TENSOR_SHAPE(1, 7));
    CHECK_SHAPE(tensor_quantile(tensor_scalar(2, TENSOR_F64), 0.5, (const int[]){0}, false, NULL), 0, NULL);
}

/* ---- gradients where PyTorch defines them at ties ---- */

static tensor *leafv(int ndim, const int64_t *shape, const double *v) {
    return tensor_set_requires_grad(tensor_from_data(v, ndim, shape, TENSOR_F64), true);
}
TEST(grad_sort_reductions_ties_like_pytorch) {
    const double w[6] = {1, 3, 3, 2, 2, -1};
    tensor *x = leafv(TENSOR_SHAPE(2, 3), w);
    CHECK(tensor_backward(tensor_sum_all(tensor_amax(x, 1, (const int[]){1}, false))) == 0);
    CHECK_VALUES(tensor_grad(x), g_amax, 6, 1e-15, 0);
    x = leafv(TENSOR_SHAPE(2, 3), w);
    CHECK(tensor_backward(tensor_amin(x, 2, (const int[]){0, 1}, false)) == 0);
    CHECK_VALUES(tensor_grad(x), g_amin_all, 6, 1e-15, 0);
    x = leafv(TENSOR_SHAPE(2, 3), w);
    tensor *m = tensor_median_all(x);
    CHECK(tensor_item(m) == 2);
    CHECK(tensor_backward(m) == 0);
    CHECK_VALUES(tensor_grad(x), g_med_all, 6, 1e-15, 0);
    x = leafv(TENSOR_SHAPE(2, 3), w);
    tensor *i = NULL;
    CHECK(tensor_backward(tensor_sum_all(tensor_cummax(x, 1, &i))) == 0);
    CHECK_VALUES(tensor_grad(x), g_cmax, 6, 0, 0);
    tensor *z = leafv(TENSOR_SHAPE(3, 4), Z);
    CHECK(tensor_backward(tensor_sum_all(tensor_cumprod(z, 1))) == 0);
    CHECK_VALUES(tensor_grad(z), g_cumprod, 12, 1e-15, 1e-15);
}

/* ---- gradient checks (the registry sweep calls gradcheck_NAME) ---- */

typedef struct { int op; int dim; bool keep, flag, transposed, squared; int64_t k; double p; const char *interp; } sargs;

static tensor *f_sortop(tensor *const *in, const void *ctx) {
    const sargs *a = (const sargs *)ctx;
    tensor *x = a->transposed ? tensor_transpose(in[0], 0, tensor_ndim(in[0]) - 1) : in[0];
    tensor *idx = NULL, *r = NULL;
    const int dims1[1] = {a->dim}, dims2[2] = {0, tensor_ndim(x) > 1 ? -1 : 0};
    int n2 = tensor_ndim(x) > 1 ? 2 : 1;
    switch (a->op) {
    case TENSOR_OP_sort: r = tensor_sort(x, a->dim, a->flag, &idx); break;
    case TENSOR_OP_msort: r = tensor_msort(x); break;
    case TENSOR_OP_topk: r = tensor_topk(x, a->k, a->dim, a->flag, true, &idx); break;
    case TENSOR_OP_amax: r = a->flag ? tensor_amax(x, n2, dims2, a->keep) : tensor_amax(x, 1, dims1, a->keep); break;
    case TENSOR_OP_amin: r = a->flag ? tensor_amin(x, 0, NULL, a->keep) : tensor_amin(x, 1, dims1, a->keep); break;
    case TENSOR_OP_aminmax: { tensor *hi = NULL, *lo = tensor_aminmax(x, a->flag ? NULL : dims1, a->keep, &hi); r = tensor_add(lo, tensor_mul_scalar(hi, 2)); break; }
    case TENSOR_OP_max_dim: r = tensor_max_dim(x, a->dim, a->keep, &idx); break;
    case TENSOR_OP_min_dim: r = tensor_min_dim(x, a->dim, a->keep, &idx); break;
    case TENSOR_OP_nansum: r = tensor_nansum(x, 1, dims1, a->keep); break;
    case TENSOR_OP_nanmean: r = tensor_nanmean(x, a->flag ? n2 : 1, a->flag ? dims2 : dims1, a->keep); break;
    case TENSOR_OP_median_all: r = tensor_median_all(x); break;
    case TENSOR_OP_nanmedian_all: r = tensor_nanmedian_all(x); break;
    case TENSOR_OP_median: r = tensor_median(x, a->dim, a->keep, &idx); break;
    case TENSOR_OP_nanmedian: r = tensor_nanmedian(x, a->dim, a->keep, &idx); break;
    case TENSOR_OP_kthvalue: r = tensor_kthvalue(x, a->k, a->dim, a->keep, &idx); break;
    case TENSOR_OP_mode: r = tensor_mode(x, a->dim, a->keep, &idx); break;
    case TENSOR_OP_quantile: r = tensor_quantile(x, a->p, a->flag ? NULL : dims1, a->keep, a->interp); break;
    case TENSOR_OP_nanquantile: r = tensor_nanquantile(x, a->p, a->flag ? NULL : dims1, a->keep, a->interp); break;
    case TENSOR_OP_quantile_tensor:
    case TENSOR_OP_nanquantile_tensor: {
        tensor *q = tensor_from_data((const double[]){0.2, 0.5, 0.85}, TENSOR_SHAPE(3), TENSOR_F64);
        r = a->op == TENSOR_OP_quantile_tensor ? tensor_quantile_tensor(x, q, a->flag ? NULL : dims1, a->keep, a->interp)
                                               : tensor_nanquantile_tensor(x, q, a->flag ? NULL : dims1, a->keep, a->interp);
        tensor_free(q);
        break;
    }
    case TENSOR_OP_var_mean: { tensor *m = NULL, *v = tensor_var_mean(x, a->dim, a->k, a->keep, &m); r = tensor_add(v, tensor_mul_scalar(m, 3)); break; }
    case TENSOR_OP_std_mean: { tensor *m = NULL, *v = tensor_std_mean(x, a->dim, a->k, a->keep, &m); r = tensor_add(v, tensor_mul_scalar(m, 3)); break; }
    case TENSOR_OP_cumprod: r = tensor_cumprod(x, a->dim); break;
    case TENSOR_OP_cummax: r = tensor_cummax(x, a->dim, a->flag ? &idx : NULL); break;
    case TENSOR_OP_cummin: r = tensor_cummin(x, a->dim, a->flag ? &idx : NULL); break;
    case TENSOR_OP_logcumsumexp: r = tensor_logcumsumexp(x, a->dim); break;
    case TENSOR_OP_dist: r = tensor_dist(x, in[1], a->p); break;
    default: break;
    }
    tensor_free(idx);
    return a->squared ? tensor_square(r) : r; /* squared: the gradient depends on x, so second derivatives are checked */
}

/* GRADCHECK on a [3, 4, 5] leaf (an f64 leaf of distinct well-spaced values: no ties) and on its
   transposed view, for each case; the first also gets GRADGRADCHECK where twice. */
static void spread(tensor *t) {
    double *d = (double *)tensor_data_ptr(t);
    for (int64_t i = 0; i < tensor_numel(t); i++) d[i] = 4 * fmod((double)(i + 1) * 0.6180339887498949, 1.0) - 2;
}
static void sort_case(int line, sargs a, int ndim, const int64_t *shape, bool twice) {
    tensor *x = test_leaf(ndim, shape, -1, 1);
    spread(x);
    char where[160];
    snprintf(where, sizeof where, "%s (%s dim %d keep %d flag %d k %lld transposed %d)", __FILE__, tensor_op_name((tensor_op)a.op), a.dim, (int)a.keep, (int)a.flag,
             (long long)a.k, (int)a.transposed);
    int got = test_gradcheck(where, line, f_sortop, &a, 1, &x, 1e-6, 1e-5);
    if (got != tensor_numel(x)) test_fail(where, line, "gradcheck compared %d elements, expected %lld", got, (long long)tensor_numel(x));
    a.squared = true;
    if (twice) test_gradgradcheck(where, line, f_sortop, &a, 1, &x, 1e-5, 1e-4);
}
static void sort_sweep(int line, sargs a, bool twice) {
    static const int dims[] = {0, 1, -1};
    for (int i = 0; i < 3; i++)
        for (int keep = 0; keep < 2; keep++) {
            a.dim = dims[i];
            a.keep = keep;
            a.transposed = false;
            sort_case(line, a, TENSOR_SHAPE(3, 4, 5), twice && i == 1 && keep == 0);
        }
    a.dim = 1; a.keep = false; a.transposed = true;
    sort_case(line, a, TENSOR_SHAPE(3, 4, 5), false);
    a.dim = 0; a.transposed = false;
    sort_case(line, a, TENSOR_SHAPE(7), false);
}
#define SORT_SWEEP(twice, ...) do { sargs a_ = {__VA_ARGS__}; sort_sweep(__LINE__, a_, twice); } while (0)

void gradcheck_sort(void) { SORT_SWEEP(true, .op = TENSOR_OP_sort); SORT_SWEEP(false, .op = TENSOR_OP_sort, .flag = true); }
void gradcheck_msort(void) { SORT_SWEEP(false, .op = TENSOR_OP_msort); }
void gradcheck_topk(void) { SORT_SWEEP(true, .op = TENSOR_OP_topk, .k = 2, .flag = true); SORT_SWEEP(false, .op = TENSOR_OP_topk, .k = 3); }
void gradcheck_amax(void) { SORT_SWEEP(true, .op = TENSOR_OP_amax); SORT_SWEEP(false, .op = TENSOR_OP_amax, .flag = true); }
void gradcheck_amin(void) { SORT_SWEEP(false, .op = TENSOR_OP_amin); SORT_SWEEP(false, .op = TENSOR_OP_amin, .flag = true); }
void gradcheck_aminmax(void) { SORT_SWEEP(false, .op = TENSOR_OP_aminmax); SORT_SWEEP(false, .op = TENSOR_OP_aminmax, .flag = true); }
void gradcheck_max_dim(void) { SORT_SWEEP(true, .op = TENSOR_OP_max_dim); }
void gradcheck_min_dim(void) { SORT_SWEEP(false, .op = TENSOR_OP_min_dim); }
void gradcheck_nansum(void) { SORT_SWEEP(true, .op = TENSOR_OP_nansum); }
void gradcheck_nanmean(void) { SORT_SWEEP(false, .op = TENSOR_OP_nanmean); SORT_SWEEP(false, .op = TENSOR_OP_nanmean, .flag = true); }
void gradcheck_median_all(void) { SORT_SWEEP(false, .op = TENSOR_OP_median_all); }
void gradcheck_nanmedian_all(void) { SORT_SWEEP(false, .op = TENSOR_OP_nanmedian_all); }
void gradcheck_median(void) { SORT_SWEEP(true, .op = TENSOR_OP_median); }
void gradcheck_nanmedian(void) { SORT_SWEEP(false, .op = TENSOR_OP_nanmedian); }
void gradcheck_kthvalue(void) { SORT_SWEEP(true, .op = TENSOR_OP_kthvalue, .k = 2); SORT_SWEEP(false, .op = TENSOR_OP_kthvalue, .k = 3); }
void gradcheck_mode(void) { SORT_SWEEP(false, .op = TENSOR_OP_mode); }
static void quantile_sweep(int op) {
    const char *modes[5] = {NULL, "lower", "higher", "midpoint", "nearest"};
    for (int k = 0; k < 5; k++) {
        SORT_SWEEP(k == 0, .op = op, .p = 0.37, .interp = modes[k]);
        sargs a = {.op = op, .p = 0.37, .interp = modes[k], .flag = true}; /* over everything */
        sort_case(__LINE__, a, TENSOR_SHAPE(3, 4, 5), false);
        a.keep = true;
        sort_case(__LINE__, a, TENSOR_SHAPE(3, 4), false);
    }
}
void gradcheck_quantile(void) { quantile_sweep(TENSOR_OP_quantile); }
void gradcheck_nanquantile(void) { quantile_sweep(TENSOR_OP_nanquantile); }
void gradcheck_quantile_tensor(void) { quantile_sweep(TENSOR_OP_quantile_tensor); }
void gradcheck_nanquantile_tensor(void) { quantile_sweep(TENSOR_OP_nanquantile_tensor); }
void gradcheck_var_mean(void) { SORT_SWEEP(true, .op = TENSOR_OP_var_mean, .k = 1); SORT_SWEEP(false, .op = TENSOR_OP_var_mean, .k = 0); }
void gradcheck_std_mean(void) { SORT_SWEEP(true, .op = TENSOR_OP_std_mean, .k = 1); }
void gradcheck_cumprod(void) {
    SORT_SWEEP(true, .op = TENSOR_OP_cumprod);
    /* zeros: one in a line, two in another (cumprod is linear in each entry: exact differences) */
    sargs a = {.op = TENSOR_OP_cumprod, .dim = 1};
    tensor *x = test_leaf(TENSOR_SHAPE(3, 4), -1.5, 1.5);
    double *d = (double *)tensor_data_ptr(x);
    d[1] = 0; d[4 + 0] = 0; d[4 + 2] = 0;
    CHECK(test_gradcheck(__FILE__, __LINE__, f_sortop, &a, 1, &x, 1e-6, 1e-5) == 12);
    a.squared = true;
    test_gradgradcheck(__FILE__, __LINE__, f_sortop, &a, 1, &x, 1e-5, 1e-4);
    /* three zeros in a line: the second's gradient is x_first times a sum, the third's 0 to second order */
    tensor *y = test_leaf(TENSOR_SHAPE(2, 6), -1.5, 1.5);
    d = (double *)tensor_data_ptr(y);
    d[1] = 0; d[3] = 0; d[4] = 0; d[6 + 2] = 0;
    a.squared = false;
    CHECK(test_gradcheck(__FILE__, __LINE__, f_sortop, &a, 1, &y, 1e-6, 1e-5) == 12);
    a.squared = true;
    test_gradgradcheck(__FILE__, __LINE__, f_sortop, &a, 1, &y, 1e-5, 1e-4);
}
void gradcheck_cummax(void) { SORT_SWEEP(true, .op = TENSOR_OP_cummax, .flag = true); SORT_SWEEP(false, .op = TENSOR_OP_cummax); }
void gradcheck_cummin(void) { SORT_SWEEP(false, .op = TENSOR_OP_cummin, .flag = true); }
/* first order only: its derivative takes log |g| and masks with -inf, whose own derivative is NaN
   where g's parts are masked (not differentiated twice here) */
void gradcheck_logcumsumexp(void) { SORT_SWEEP(false, .op = TENSOR_OP_logcumsumexp); }
void gradcheck_dist(void) {
    const double ps[4] = {2, 1, 3, INFINITY};
    for (int k = 0; k < 4; k++) {
        sargs a = {.op = TENSOR_OP_dist, .p = ps[k]};
        tensor *in[2] = {test_leaf(TENSOR_SHAPE(3, 4), -1, 1), test_leaf(TENSOR_SHAPE(4), -1, 1)};
        spread(in[0]);
        CHECK(test_gradcheck(__FILE__, __LINE__, f_sortop, &a, 2, in, 1e-6, 1e-5) == 16);
        a.squared = true;
        if (k == 0) test_gradgradcheck(__FILE__, __LINE__, f_sortop, &a, 2, in, 1e-5, 1e-4);
    }
}

/* ---- bad inputs ---- */

void bad_input_sort(void) {
    tensor *x = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32), *i = x;
    CHECK_BAD(tensor_sort(NULL, 0, false, &i), "tensor_sort");
    CHECK(i == NULL); /* an out-pointer is cleared on failure */
    CHECK_BAD(tensor_sort(x, 2, false, NULL), "tensor_sort");
    CHECK_BAD(tensor_sort(x, -3, true, NULL), "tensor_sort");
    CHECK_BAD(tensor_sort(tensor_scalar(1, TENSOR_F32), 1, false, NULL), "tensor_sort");
}
void bad_input_argsort(void) {
    CHECK_BAD(tensor_argsort(NULL, 0, false), "tensor_argsort");
    CHECK_BAD(tensor_argsort(tensor_zeros(TENSOR_SHAPE(2), TENSOR_F32), 1, false), "tensor_sort");
}
void bad_input_msort(void) {
    CHECK_BAD(tensor_msort(NULL), "tensor_sort");
    CHECK_BAD(tensor_msort(tensor_scalar(1, TENSOR_F32)), "tensor_msort");
}
void bad_input_topk(void) {
    tensor *x = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32), *i = x;
    CHECK_BAD(tensor_topk(NULL, 1, 0, true, true, &i), "tensor_topk");
    CHECK(i == NULL);
    CHECK_BAD(tensor_topk(x, 4, 1, true, true, NULL), "tensor_topk");
    CHECK_BAD(tensor_topk(x, -1, 1, true, true, NULL), "tensor_topk");
    CHECK_BAD(tensor_topk(x, 1, 2, true, true, NULL), "tensor_topk");
}
void bad_input_amax(void) {
    tensor *x = tensor_zeros(TENSOR_SHAPE(2, 0), TENSOR_F32);
    CHECK_BAD(tensor_amax(NULL, 0, NULL, false), "tensor_amax");
    CHECK_BAD(tensor_amax(x, 1, (const int[]){1}, false), "tensor_amax");
    CHECK_BAD(tensor_amax(x, 0, NULL, false), "tensor_amax");
    CHECK_BAD(tensor_amax(x, 2, (const int[]){0, -2}, false), "tensor_amax");
    CHECK_BAD(tensor_amax(x, -1, NULL, false), "tensor_amax");
    CHECK_BAD(tensor_amax(x, 1, NULL, false), "tensor_amax");
}
void bad_input_amin(void) {
    CHECK_BAD(tensor_amin(NULL, 0, NULL, false), "tensor_amin");
    CHECK_BAD(tensor_amin(tensor_zeros(TENSOR_SHAPE(0, 2), TENSOR_F32), 1, (const int[]){0}, true), "tensor_amin");
    CHECK_BAD(tensor_amin(tensor_zeros(TENSOR_SHAPE(2), TENSOR_F32), 1, (const int[]){3}, true), "tensor_amin");
}
void bad_input_aminmax(void) {
    tensor *hi = (tensor *)1;
    CHECK_BAD(tensor_aminmax(NULL, NULL, false, &hi), "tensor_aminmax");
    CHECK(hi == NULL);
    CHECK_BAD(tensor_aminmax(tensor_zeros(TENSOR_SHAPE(0), TENSOR_F32), NULL, false, &hi), "tensor_amin");
    CHECK_BAD(tensor_aminmax(tensor_zeros(TENSOR_SHAPE(2), TENSOR_F32), (const int[]){1}, false, &hi), "tensor_amin");
}
void bad_input_max_dim(void) {
    tensor *i = (tensor *)1;
    CHECK_BAD(tensor_max_dim(NULL, 0, false, &i), "tensor_max_dim");
    CHECK(i == NULL);
    CHECK_BAD(tensor_max_dim(tensor_zeros(TENSOR_SHAPE(2), TENSOR_F32), 1, false, &i), "tensor_max");
    CHECK_BAD(tensor_max_dim(tensor_zeros(TENSOR_SHAPE(2, 0), TENSOR_F32), 1, false, &i), "tensor_max");
}
void bad_input_min_dim(void) {
    CHECK_BAD(tensor_min_dim(NULL, 0, false, NULL), "tensor_min_dim");
    CHECK_BAD(tensor_min_dim(tensor_zeros(TENSOR_SHAPE(0), TENSOR_F32), 0, false, NULL), "tensor_min");
}
void bad_input_nansum(void) {
    CHECK_BAD(tensor_nansum(NULL, 0, NULL, false), "tensor_nansum");
    CHECK_BAD(tensor_nansum(tensor_zeros(TENSOR_SHAPE(2), TENSOR_F32), -1, NULL, false), "tensor_nansum");
    CHECK_BAD(tensor_nansum(tensor_zeros(TENSOR_SHAPE(2), TENSOR_F32), 1, (const int[]){4}, false), "tensor_sum_dims");
}
void bad_input_nanmean(void) {
    CHECK_BAD(tensor_nanmean(NULL, 0, NULL, false), "tensor_nanmean");
    CHECK_BAD(tensor_nanmean(tensor_zeros(TENSOR_SHAPE(2), TENSOR_I32), 0, NULL, false), "tensor_nanmean");
    CHECK_BAD(tensor_nanmean(tensor_zeros(TENSOR_SHAPE(2), TENSOR_F32), -2, NULL, false), "tensor_nanmean");
}
void bad_input_median_all(void) { CHECK_BAD(tensor_median_all(NULL), "tensor_median_all"); }
void bad_input_nanmedian_all(void) { CHECK_BAD(tensor_nanmedian_all(NULL), "tensor_nanmedian_all"); }
void bad_input_median(void) {
    tensor *i = (tensor *)1;
    CHECK_BAD(tensor_median(NULL, 0, false, &i), "tensor_median");
    CHECK(i == NULL);
    CHECK_BAD(tensor_median(tensor_zeros(TENSOR_SHAPE(2, 0), TENSOR_F32), 1, false, NULL), "tensor_median");
    CHECK_BAD(tensor_median(tensor_zeros(TENSOR_SHAPE(2), TENSOR_F32), 1, false, NULL), "tensor_median");
}
void bad_input_nanmedian(void) {
    CHECK_BAD(tensor_nanmedian(NULL, 0, false, NULL), "tensor_nanmedian");
    CHECK_BAD(tensor_nanmedian(tensor_zeros(TENSOR_SHAPE(0), TENSOR_F32), 0, false, NULL), "tensor_nanmedian");
}
void bad_input_kthvalue(void) {
    tensor *x = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32);
    CHECK_BAD(tensor_kthvalue(NULL, 1, 0, false, NULL), "tensor_kthvalue");
    CHECK_BAD(tensor_kthvalue(x, 0, 1, false, NULL), "tensor_kthvalue");
    CHECK_BAD(tensor_kthvalue(x, 4, 1, false, NULL), "tensor_kthvalue");
    CHECK_BAD(tensor_kthvalue(x, 1, -3, false, NULL), "tensor_kthvalue");
}
void bad_input_mode(void) {
    CHECK_BAD(tensor_mode(NULL, 0, false, NULL), "tensor_mode");
    CHECK_BAD(tensor_mode(tensor_zeros(TENSOR_SHAPE(3, 0), TENSOR_F32), 1, false, NULL), "tensor_mode");
    CHECK_BAD(tensor_mode(tensor_zeros(TENSOR_SHAPE(3), TENSOR_F32), 1, false, NULL), "tensor_mode");
}
static void quantile_bad(bool nan) {
    const char *fn = nan ? "tensor_nanquantile" : "tensor_quantile";
    tensor *x = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32);
#define QB(t, q, dim, interp) CHECK_BAD(nan ? tensor_nanquantile(t, q, dim, false, interp) : tensor_quantile(t, q, dim, false, interp), fn)
    QB(NULL, 0.5, NULL, NULL);
    QB(x, 1.5, NULL, NULL);
    QB(x, -0.1, NULL, NULL);
    QB(x, NAN, NULL, NULL);
    QB(x, 0.5, NULL, "cubic");
    QB(x, 0.5, ((const int[]){2}), NULL);
    QB(tensor_zeros(TENSOR_SHAPE(2), TENSOR_I32), 0.5, NULL, NULL);
    QB(tensor_zeros(TENSOR_SHAPE(2, 0), TENSOR_F32), 0.5, NULL, NULL);
#undef QB
}
static void quantile_tensor_bad(bool nan) {
    const char *fn = nan ? "tensor_nanquantile_tensor" : "tensor_quantile_tensor";
    tensor *x = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32);
#define QB(t, q) CHECK_BAD(nan ? tensor_nanquantile_tensor(t, q, NULL, false, NULL) : tensor_quantile_tensor(t, q, NULL, false, NULL), fn)
    QB(NULL, tensor_scalar(0.5, TENSOR_F32));
    QB(x, NULL);
    QB(x, tensor_scalar(0.5, TENSOR_F64));                                          /* dtype differs */
    QB(x, tensor_zeros(TENSOR_SHAPE(2, 2), TENSOR_F32));                            /* 2-D q */
    QB(x, test_tensor(TENSOR_F32, TENSOR_SHAPE(2), (const double[]){0.5, 1.25}));  /* out of [0, 1] */
#undef QB
}
void bad_input_quantile(void) { quantile_bad(false); }
void bad_input_nanquantile(void) { quantile_bad(true); }
void bad_input_quantile_tensor(void) { quantile_tensor_bad(false); }
void bad_input_nanquantile_tensor(void) { quantile_tensor_bad(true); }
void bad_input_var_mean(void) {
    tensor *m = (tensor *)1;
    CHECK_BAD(tensor_var_mean(NULL, 0, 1, false, &m), "tensor_var_mean");
    CHECK(m == NULL);
    CHECK_BAD(tensor_var_mean(tensor_zeros(TENSOR_SHAPE(2), TENSOR_I32), 0, 1, false, &m), "tensor_var");
    CHECK_BAD(tensor_var_mean(tensor_zeros(TENSOR_SHAPE(2), TENSOR_F32), 1, 1, false, &m), "tensor_var");
}
void bad_input_std_mean(void) {
    CHECK_BAD(tensor_std_mean(NULL, 0, 1, false, NULL), "tensor_std_mean");
    CHECK_BAD(tensor_std_mean(tensor_zeros(TENSOR_SHAPE(2), TENSOR_BOOL), 0, 1, false, NULL), "tensor_std");
}
void bad_input_count_nonzero(void) {
    CHECK_BAD(tensor_count_nonzero(NULL, 0, NULL), "tensor_count_nonzero");
    CHECK_BAD(tensor_count_nonzero(tensor_zeros(TENSOR_SHAPE(2), TENSOR_F32), -1, NULL), "tensor_count_nonzero");
    CHECK_BAD(tensor_count_nonzero(tensor_zeros(TENSOR_SHAPE(2), TENSOR_F32), 1, (const int[]){1}), "tensor_sum_dims");
}
void bad_input_cumprod(void) {
    CHECK_BAD(tensor_cumprod(NULL, 0), "tensor_cumprod");
    CHECK_BAD(tensor_cumprod(tensor_zeros(TENSOR_SHAPE(2), TENSOR_F32), 1), "tensor_cumprod");
}
void bad_input_cummax(void) {
    tensor *i = (tensor *)1;
    CHECK_BAD(tensor_cummax(NULL, 0, &i), "tensor_cummax");
    CHECK(i == NULL);
    CHECK_BAD(tensor_cummax(tensor_zeros(TENSOR_SHAPE(2, 2), TENSOR_F32), -3, NULL), "tensor_cummax");
}
void bad_input_cummin(void) {
    CHECK_BAD(tensor_cummin(NULL, 0, NULL), "tensor_cummin");
    CHECK_BAD(tensor_cummin(tensor_zeros(TENSOR_SHAPE(2, 2), TENSOR_F32), 2, NULL), "tensor_cummin");
}
void bad_input_logcumsumexp(void) {
    CHECK_BAD(tensor_logcumsumexp(NULL, 0), "tensor_logcumsumexp");
    CHECK_BAD(tensor_logcumsumexp(tensor_zeros(TENSOR_SHAPE(2), TENSOR_I64), 0), "tensor_logcumsumexp");
    CHECK_BAD(tensor_logcumsumexp(tensor_zeros(TENSOR_SHAPE(2), TENSOR_F32), 1), "tensor_logcumsumexp");
}
void bad_input_dist(void) {
    tensor *a = tensor_zeros(TENSOR_SHAPE(2, 3), TENSOR_F32);
    CHECK_BAD(tensor_dist(NULL, a, 2), "tensor_dist");
    CHECK_BAD(tensor_dist(a, NULL, 2), "tensor_dist");
    CHECK_BAD(tensor_dist(a, a, NAN), "tensor_dist");
    CHECK_BAD(tensor_dist(a, tensor_zeros(TENSOR_SHAPE(4), TENSOR_F32), 2), "tensor_sub");
    CHECK_BAD(tensor_dist(tensor_zeros(TENSOR_SHAPE(2), TENSOR_I32), tensor_zeros(TENSOR_SHAPE(2), TENSOR_I32), 2), "tensor_dist");
}
TEST(sort_reduce_more_bad_inputs) {
    bad_input_sort(); bad_input_argsort(); bad_input_msort(); bad_input_topk(); bad_input_amax(); bad_input_amin();
    bad_input_aminmax(); bad_input_max_dim(); bad_input_min_dim(); bad_input_nansum(); bad_input_nanmean();
    bad_input_median_all(); bad_input_nanmedian_all(); bad_input_median(); bad_input_nanmedian(); bad_input_kthvalue();
    bad_input_mode(); bad_input_quantile(); bad_input_nanquantile(); bad_input_quantile_tensor(); bad_input_nanquantile_tensor();
    bad_input_var_mean(); bad_input_std_mean(); bad_input_count_nonzero(); bad_input_cumprod(); bad_input_cummax();
    bad_input_cummin(); bad_input_logcumsumexp(); bad_input_dist();
}
