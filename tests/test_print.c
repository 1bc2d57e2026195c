/* tensor_print / tensor_snprint: the expected strings are what PyTorch's repr prints for the same
   tensor with default print options (precision 4, threshold 1000, edgeitems 3, linewidth 80). */
#include "test.h"
#include <unistd.h>

/* The repr of t through tensor_snprint; checks the returned length against strlen(expected). */
static void check_repr(const char *file, int line, tensor *t, const char *expected) {
    if (!t) { test_fail(file, line, "tensor is NULL (%s)", tensor_last_error() ? tensor_last_error() : "no error"); return; }
    int need = tensor_snprint(t, NULL, 0);
    char *buf = (char *)malloc((size_t)(need > 0 ? need : 0) + 1);
    int got = tensor_snprint(t, buf, (size_t)need + 1);
    if (need < 0 || got != need) test_fail(file, line, "snprint returned %d then %d", need, got);
    else if (strcmp(buf, expected) != 0) test_fail(file, line, "repr:\n%s\nexpected:\n%s", buf, expected);
    else if ((size_t)got != strlen(expected)) test_fail(file, line, "length %d, expected %zu", got, strlen(expected));
    free(buf);
}
#define CHECK_REPR(t, expected) check_repr(__FILE__, __LINE__, (t), (expected))

static tensor *f32(int ndim, const int64_t *shape, const double *v) { return test_tensor(TENSOR_F32, ndim, shape, v); }

/* 0, 1, ..., n-1 as doubles (caller frees). */
static double *iota(int64_t n) {
    double *v = (double *)malloc(sizeof(double) * (size_t)n);
    for (int64_t i = 0; i < n; i++) v[i] = (double)i;
    return v;
}

TEST(print_float_integral_2d) {
    const double v[] = {1, 2, 3, 4};
    CHECK_REPR(f32(TENSOR_SHAPE(2, 2), v), "tensor([[1., 2.],\n        [3., 4.]])");
    const double w[] = {-1, 20, 300};
    CHECK_REPR(f32(TENSOR_SHAPE(3), w), "tensor([ -1.,  20., 300.])");
    const double z[] = {0, 0};
    CHECK_REPR(f32(TENSOR_SHAPE(2), z), "tensor([0., 0.])");
    const double nz[] = {-0.0};
    CHECK_REPR(f32(TENSOR_SHAPE(1), nz), "tensor([-0.])");
    /* ratio exactly 1000 is not > 1000: no sci mode */
    const double r[] = {1, 1000};
    CHECK_REPR(f32(TENSOR_SHAPE(2), r), "tensor([   1., 1000.])");
}

TEST(print_float_fractional) {
    const double v[] = {1.5, 2.25};
    CHECK_REPR(f32(TENSOR_SHAPE(2), v), "tensor([1.5000, 2.2500])");
    const double w[] = {-1.5, 0, 2.25, 100.125};
    CHECK_REPR(f32(TENSOR_SHAPE(4), w), "tensor([ -1.5000,   0.0000,   2.2500, 100.1250])");
    /* 4 decimals, rounded: 1/3 and 2/3 */
    const double t[] = {1.0 / 3, 2.0 / 3};
    CHECK_REPR(f32(TENSOR_SHAPE(2), t), "tensor([0.3333, 0.6667])");
}

TEST(print_sci_mode) {
    const double a[] = {1e-5, 1e5};
    CHECK_REPR(f32(TENSOR_SHAPE(2), a), "tensor([1.0000e-05, 1.0000e+05])");
    /* integral values: sci when max/min > 1000 */
    const double b[] = {1, 2000};
    CHECK_REPR(f32(TENSOR_SHAPE(2), b), "tensor([1.0000e+00, 2.0000e+03])");
    /* integral values: sci when max > 1e8 */
    const double c[] = {1e9, 2e9};
    CHECK_REPR(f32(TENSOR_SHAPE(2), c), "tensor([1.0000e+09, 2.0000e+09])");
    /* fractional values: sci when min < 1e-4 even if the ratio is small */
    const double d[] = {5e-5, 1e-4};
    CHECK_REPR(f32(TENSOR_SHAPE(2), d), "tensor([5.0000e-05, 1.0000e-04])");
    /* zeros are left out of the statistics; negative values are padded to one width */
    const double e[] = {0, -1e-5, 1e5};
    CHECK_REPR(f32(TENSOR_SHAPE(3), e), "tensor([ 0.0000e+00, -1.0000e-05,  1.0000e+05])");
    const double f[] = {1e-300, 1e300};
    CHECK_REPR(test_tensor(TENSOR_F64, TENSOR_SHAPE(2), f), "tensor([1.0000e-300, 1.0000e+300], dtype=torch.float64)");
}

TEST(print_zero_dim) {
    CHECK_REPR(tensor_scalar(3, TENSOR_F32), "tensor(3.)");
    CHECK_REPR(tensor_scalar(2.5, TENSOR_F32), "tensor(2.5000)");
    CHECK_REPR(tensor_scalar(0, TENSOR_F32), "tensor(0.)");
    CHECK_REPR(tensor_scalar(1e10, TENSOR_F32), "tensor(1.0000e+10)");
    CHECK_REPR(tensor_scalar(-7, TENSOR_I64), "tensor(-7)");
    CHECK_REPR(tensor_scalar(7, TENSOR_I32), "tensor(7, dtype=torch.int32)");
    CHECK_REPR(tensor_scalar(1, TENSOR_BOOL), "tensor(True)");
    CHECK_REPR(tensor_scalar(0.5, TENSOR_F64), "tensor(0.5000, dtype=torch.float64)");
    CHECK_REPR(tensor_scalar(NAN, TENSOR_F32), "tensor(nan)");
}

TEST(print_empty) {
    CHECK_REPR(tensor_zeros(TENSOR_SHAPE(0, 3), TENSOR_F32), "tensor([], size=(0, 3))");
    CHECK_REPR(tensor_zeros(TENSOR_SHAPE(0), TENSOR_F32), "tensor([])");
    /* no element shows the dtype, so every non-float32 dtype is named, int64 and bool too */
    CHECK_REPR(tensor_zeros(TENSOR_SHAPE(0), TENSOR_I64), "tensor([], dtype=torch.int64)");
    CHECK_REPR(tensor_zeros(TENSOR_SHAPE(0), TENSOR_BOOL), "tensor([], dtype=torch.bool)");
    CHECK_REPR(tensor_zeros(TENSOR_SHAPE(2, 0, 4), TENSOR_F64), "tensor([], size=(2, 0, 4), dtype=torch.float64)");
}

TEST(print_integers_and_bools) {
    const double v[] = {1, 2, 3};
    CHECK_REPR(test_tensor(TENSOR_I32, TENSOR_SHAPE(3), v), "tensor([1, 2, 3], dtype=torch.int32)");
    CHECK_REPR(test_tensor(TENSOR_I64, TENSOR_SHAPE(3), v), "tensor([1, 2, 3])");
    CHECK_REPR(test_tensor(TENSOR_U8, TENSOR_SHAPE(3), v), "tensor([1, 2, 3], dtype=torch.uint8)");
    const double w[] = {-5, 10, 200, 7};
    CHECK_REPR(test_tensor(TENSOR_I64, TENSOR_SHAPE(2, 2), w), "tensor([[ -5,  10],\n        [200,   7]])");
    const double b[] = {1, 0, 1};
    CHECK_REPR(test_tensor(TENSOR_BOOL, TENSOR_SHAPE(3), b), "tensor([ True, False,  True])");
    const double bt[] = {1, 1};
    CHECK_REPR(test_tensor(TENSOR_BOOL, TENSOR_SHAPE(2), bt), "tensor([True, True])");
    /* int64 extremes print exactly (no trip through double) */
    const int64_t big[] = {INT64_MIN, INT64_MAX};
    CHECK_REPR(tensor_from_data(big, TENSOR_SHAPE(2), TENSOR_I64), "tensor([-9223372036854775808,  9223372036854775807])");
}

TEST(print_nonfinite) {
    const double a[] = {INFINITY, -INFINITY, NAN};
    /* PyTorch's width counts only finite non-zero values, so there is no padding here */
    CHECK_REPR(f32(TENSOR_SHAPE(3), a), "tensor([inf, -inf, nan])");
    const double b[] = {1.5, INFINITY, -NAN};
    CHECK_REPR(f32(TENSOR_SHAPE(3), b), "tensor([1.5000,    inf,    nan])");
    const double c[] = {1, INFINITY, -INFINITY, NAN};
    CHECK_REPR(f32(TENSOR_SHAPE(4), c), "tensor([1., inf, -inf, nan])");
}

TEST(print_nested_3d) {
    double *v = iota(8);
    CHECK_REPR(f32(TENSOR_SHAPE(2, 2, 2), v),
               "tensor([[[0., 1.],\n"
               "         [2., 3.]],\n"
               "\n"
               "        [[4., 5.],\n"
               "         [6., 7.]]])");
    CHECK_REPR(test_tensor(TENSOR_I32, TENSOR_SHAPE(2, 1, 1, 2), v),
               "tensor([[[[0, 1]]],\n"
               "\n"
               "\n"
               "        [[[2, 3]]]], dtype=torch.int32)");
    free(v);
}

TEST(print_dtype_suffixes) {
    const double v[] = {0.5, 1.25};
    CHECK_REPR(test_tensor(TENSOR_F64, TENSOR_SHAPE(2), v), "tensor([0.5000, 1.2500], dtype=torch.float64)");
    CHECK_REPR(test_tensor(TENSOR_F16, TENSOR_SHAPE(2), v), "tensor([0.5000, 1.2500], dtype=torch.float16)");
    CHECK_REPR(test_tensor(TENSOR_BF16, TENSOR_SHAPE(2), v), "tensor([0.5000, 1.2500], dtype=torch.bfloat16)");
    /* f16 widens to f32 before formatting: 0.1 is stored as 0.0999755859375 */
    const double t[] = {0.1};
    CHECK_REPR(test_tensor(TENSOR_F16, TENSOR_SHAPE(1), t), "tensor([0.1000], dtype=torch.float16)");
}

TEST(print_line_wrapping) {
    double *v = iota(40);
    /* floor((80 - 7) / (3 + 2)) = 14 elements per line */
    CHECK_REPR(f32(TENSOR_SHAPE(40), v),
               "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.,\n"
               "        14., 15., 16., 17., 18., 19., 20., 21., 22., 23., 24., 25., 26., 27.,\n"
               "        28., 29., 30., 31., 32., 33., 34., 35., 36., 37., 38., 39.])");
    /* the suffix moves to its own line when the last line would pass 80 columns */
    CHECK_REPR(test_tensor(TENSOR_F64, TENSOR_SHAPE(14), v),
               "tensor([ 0.,  1.,  2.,  3.,  4.,  5.,  6.,  7.,  8.,  9., 10., 11., 12., 13.],\n"
               "       dtype=torch.float64)");
    free(v);
}

TEST(print_summarized) {
    double *v = iota(2000);
    CHECK_REPR(test_tensor(TENSOR_I64, TENSOR_SHAPE(2000), v), "tensor([   0,    1,    2,  ..., 1997, 1998, 1999])");
    /* the formatter sees only the shown values: 1999 / 1 > 1000 gives sci mode, 6 per line */
    CHECK_REPR(f32(TENSOR_SHAPE(2000), v),
               "tensor([0.0000e+00, 1.0000e+00, 2.0000e+00,  ..., 1.9970e+03, 1.9980e+03,\n"
               "        1.9990e+03])");
    CHECK_REPR(test_tensor(TENSOR_I64, TENSOR_SHAPE(2, 1000), v),
               "tensor([[   0,    1,    2,  ...,  997,  998,  999],\n"
               "        [1000, 1001, 1002,  ..., 1997, 1998, 1999]])");
    CHECK_REPR(test_tensor(TENSOR_I32, TENSOR_SHAPE(100, 20), v),
               "tensor([[   0,    1,    2,  ...,   17,   18,   19],\n"
               "        [  20,   21,   22,  ...,   37,   38,   39],\n"
               "        [  40,   41,   42,  ...,   57,   58,   59],\n"
               "        ...,\n"
               "        [1940, 1941, 1942,  ..., 1957, 1958, 1959],\n"
               "        [1960, 1961, 1962,  ..., 1977, 1978, 1979],\n"
               "        [1980, 1981, 1982,  ..., 1997, 1998, 1999]], dtype=torch.int32)");
    /* 3-D: a "..." block between blocks, separated by a blank line */
    CHECK_REPR(test_tensor(TENSOR_I64, TENSOR_SHAPE(8, 5, 50), v),
               "tensor([[[   0,    1,    2,  ...,   47,   48,   49],\n"
               "         [  50,   51,   52,  ...,   97,   98,   99],\n"
               "         [ 100,  101,  102,  ...,  147,  148,  149],\n"
               "         [ 150,  151,  152,  ...,  197,  198,  199],\n"
               "         [ 200,  201,  202,  ...,  247,  248,  249]],\n"
               "\n"
               "        [[ 250,  251,  252,  ...,  297,  298,  299],\n"
               "         [ 300,  301,  302,  ...,  347,  348,  349],\n"
               "         [ 350,  351,  352,  ...,  397,  398,  399],\n"
               "         [ 400,  401,  402,  ...,  447,  448,  449],\n"
               "         [ 450,  451,  452,  ...,  497,  498,  499]],\n"
               "\n"
               "        [[ 500,  501,  502,  ...,  547,  548,  549],\n"
               "         [ 550,  551,  552,  ...,  597,  598,  599],\n"
               "         [ 600,  601,  602,  ...,  647,  648,  649],\n"
               "         [ 650,  651,  652,  ...,  697,  698,  699],\n"
               "         [ 700,  701,  702,  ...,  747,  748,  749]],\n"
               "\n"
               "        ...,\n"
               "\n"
               "        [[1250, 1251, 1252,  ..., 1297, 1298, 1299],\n"
               "         [1300, 1301, 1302,  ..., 1347, 1348, 1349],\n"
               "         [1350, 1351, 1352,  ..., 1397, 1398, 1399],\n"
               "         [1400, 1401, 1402,  ..., 1447, 1448, 1449],\n"
               "         [1450, 1451, 1452,  ..., 1497, 1498, 1499]],\n"
               "\n"
               "        [[1500, 1501, 1502,  ..., 1547, 1548, 1549],\n"
               "         [1550, 1551, 1552,  ..., 1597, 1598, 1599],\n"
               "         [1600, 1601, 1602,  ..., 1647, 1648, 1649],\n"
               "         [1650, 1651, 1652,  ..., 1697, 1698, 1699],\n"
               "         [1700, 1701, 1702,  ..., 1747, 1748, 1749]],\n"
               "\n"
               "        [[1750, 1751, 1752,  ..., 1797, 1798, 1799],\n"
               "         [1800, 1801, 1802,  ..., 1847, 1848, 1849],\n"
               "         [1850, 1851, 1852,  ..., 1897, 1898, 1899],\n"
               "         [1900, 1901, 1902,  ..., 1947, 1948, 1949],\n"
               "         [1950, 1951, 1952,  ..., 1997, 1998, 1999]]])");
    /* exactly 1000 elements: not summarized (the threshold is numel > 1000) */
    tensor *t = test_tensor(TENSOR_I64, TENSOR_SHAPE(1000), v);
    int n = tensor_snprint(t, NULL, 0);
    char *buf = (char *)malloc((size_t)n + 1);
    tensor_snprint(t, buf, (size_t)n + 1);
    CHECK(strstr(buf, "...") == NULL);
    CHECK(strstr(buf, "tensor([  0,   1,   2,") == buf);
    CHECK(strstr(buf, " 998, 999])") != NULL);
    free(buf);
    free(v);
}

/* A view with non-unit strides prints its logical elements, not its storage order. */
TEST(print_transposed_view) {
    double *v = iota(6);
    tensor *a = f32(TENSOR_SHAPE(2, 3), v);
    tensor *t = tensor_transpose(a, 0, 1);
    CHECK(t && !tensor_is_contiguous(t));
    CHECK_REPR(t, "tensor([[0., 3.],\n        [1., 4.],\n        [2., 5.]])");
    /* a strided slice of a summarized tensor: every other element of 0..2999 */
    double *w = iota(3000);
    tensor *s = tensor_slice(test_tensor(TENSOR_I64, TENSOR_SHAPE(3000), w), 0, 1, 3000, 2);
    CHECK_REPR(s, "tensor([   1,    3,    5,  ..., 2995, 2997, 2999])");
    /* an expanded (stride 0) view */
    tensor *e = tensor_expand(test_tensor(TENSOR_I32, TENSOR_SHAPE(1, 3), v), TENSOR_SHAPE(2, 3));
    CHECK_REPR(e, "tensor([[0, 1, 2],\n        [0, 1, 2]], dtype=torch.int32)");
    free(w);
    free(v);
}

TEST(print_snprint_contract) {
    tensor *t = tensor_scalar(3, TENSOR_F32); /* "tensor(3.)": 10 characters */
    CHECK(tensor_snprint(t, NULL, 0) == 10);
    char buf[32];
    memset(buf, 'x', sizeof buf);
    CHECK(tensor_snprint(t, buf, 0) == 10);
    CHECK(buf[0] == 'x'); /* n == 0: nothing written */
    memset(buf, 'x', sizeof buf);
    CHECK(tensor_snprint(t, buf, 1) == 10);
    CHECK(buf[0] == 0 && buf[1] == 'x');
    memset(buf, 'x', sizeof buf);
    CHECK(tensor_snprint(t, buf, 8) == 10);
    CHECK(strcmp(buf, "tensor(") == 0 && buf[8] == 'x');
    memset(buf, 'x', sizeof buf);
    CHECK(tensor_snprint(t, buf, 10) == 10); /* one short: the last character gives way to the NUL */
    CHECK(strcmp(buf, "tensor(3.") == 0 && buf[10] == 'x');
    memset(buf, 'x', sizeof buf);
    CHECK(tensor_snprint(t, buf, 11) == 10);
    CHECK(strcmp(buf, "tensor(3.)") == 0 && buf[11] == 'x');
    CHECK(tensor_snprint(t, buf, sizeof buf) == 10);
    CHECK(strcmp(buf, "tensor(3.)") == 0);
    /* multi-line text truncates the same way */
    const double v[] = {1, 2, 3, 4};
    tensor *m = f32(TENSOR_SHAPE(2, 2), v);
    CHECK(tensor_snprint(m, buf, 16) == 36);
    CHECK(strcmp(buf, "tensor([[1., 2.") == 0);
    CHECK(tensor_last_error() == NULL);
}

TEST(print_to_stdout) {
    fflush(stdout);
    FILE *tmp = tmpfile();
    CHECK(tmp != NULL);
    if (!tmp) return;
    int saved = dup(fileno(stdout));
    dup2(fileno(tmp), fileno(stdout));
    const double v[] = {1.5, 2.25};
    tensor_print(f32(TENSOR_SHAPE(2), v));
    tensor_print(tensor_scalar(1, TENSOR_BOOL));
    fflush(stdout);
    dup2(saved, fileno(stdout));
    close(saved);
    char text[128] = {0};
    rewind(tmp);
    size_t n = fread(text, 1, sizeof text - 1, tmp);
    fclose(tmp);
    CHECK(n == strlen("tensor([1.5000, 2.2500])\ntensor(True)\n"));
    CHECK(strcmp(text, "tensor([1.5000, 2.2500])\ntensor(True)\n") == 0);
}

TEST(print_bad_input) {
    char buf[16] = "untouched";
    CHECK_BAD_INT(tensor_snprint(NULL, buf, sizeof buf) == -1, "tensor_snprint");
    CHECK(buf[0] == 0);
    CHECK_BAD_INT(tensor_snprint(NULL, NULL, 0) == -1, "tensor_snprint");
    tensor *t = tensor_scalar(1, TENSOR_F32);
    CHECK_BAD_INT(tensor_snprint(t, NULL, 5) == -1, "tensor_snprint");
    tensor_clear_error();
    tensor_print(NULL);
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "tensor_print"));
    tensor_clear_error();
    /* after an earlier failure the first message stands */
    tensor *bad = tensor_zeros(TENSOR_SHAPE(-2), TENSOR_F32);
    CHECK(tensor_snprint(bad, buf, sizeof buf) == -1);
    CHECK(tensor_last_error() && strstr(tensor_last_error(), "tensor_zeros"));
    tensor_clear_error();
}
