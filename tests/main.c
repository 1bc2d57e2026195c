/* The test runner: builds the implementation, runs every registered TEST, checks that each leaves
   no live handle or storage behind, and prints `N passed, N failed`. Usage: test_all [FILTER] */
#define TENSOR_IMPLEMENTATION
#include "test.h"
#include <stdarg.h>

typedef struct { const char *name, *file; test_fn fn; } test_case;
static test_case *cases;
static int n_cases, cap_cases;
static int current_failures;
static const char *current_test;

void test_register(const char *name, const char *file, test_fn fn) {
    if (n_cases == cap_cases) {
        cap_cases = cap_cases ? 2 * cap_cases : 256;
        cases = (test_case *)realloc(cases, sizeof *cases * (size_t)cap_cases);
    }
    cases[n_cases].name = name;
    cases[n_cases].file = file;
    cases[n_cases].fn = fn;
    n_cases++;
}

void test_fail(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    printf("  FAIL %s:%d [%s] ", file, line, current_test);
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    current_failures++;
}

void test_expect_error(const char *file, int line, bool failed, const char *fn, const char *expr) {
    const char *msg = tensor_last_error();
    if (!failed) test_fail(file, line, "%s: expected failure, got success", expr);
    else if (!msg) test_fail(file, line, "%s: failed without a message", expr);
    else if (!strstr(msg, fn)) test_fail(file, line, "%s: message '%s' does not name %s", expr, msg, fn);
}

tensor *test_tensor(tensor_dtype dtype, int ndim, const int64_t *shape, const double *values) {
    tensor *t = tensor_from_data(values, ndim, shape, TENSOR_F64);
    tensor *r = tensor_to_dtype(t, dtype);
    tensor_free(t);
    return r;
}

double *test_values(tensor *t) {
    int64_t n = tensor_numel(t);
    double *v = (double *)malloc(sizeof(double) * (size_t)(n ? n : 1));
    tensor *d = tensor_to_dtype(t, TENSOR_F64);
    if (!d || tensor_copy_to(d, v, sizeof(double) * (size_t)n) != 0) for (int64_t i = 0; i < n; i++) v[i] = NAN;
    tensor_free(d);
    return v;
}

void test_check_values(const char *file, int line, tensor *t, const double *expected, int64_t n, double atol, double rtol) {
    if (!t) { test_fail(file, line, "tensor is NULL (%s)", tensor_last_error() ? tensor_last_error() : "no error"); return; }
    if (tensor_numel(t) != n) { test_fail(file, line, "numel %lld, expected %lld", (long long)tensor_numel(t), (long long)n); return; }
    double *v = test_values(t);
    int bad = 0;
    for (int64_t i = 0; i < n && bad < 5; i++) {
        double a = v[i], b = expected[i];
        bool ok = (a != a && b != b) || a == b || fabs(a - b) <= atol + rtol * fabs(b);
        if (!ok) { test_fail(file, line, "element %lld: got %.17g, expected %.17g", (long long)i, a, b); bad++; }
    }
    free(v);
}

void test_check_shape(const char *file, int line, tensor *t, int ndim, const int64_t *shape) {
    if (!t) { test_fail(file, line, "tensor is NULL (%s)", tensor_last_error() ? tensor_last_error() : "no error"); return; }
    bool ok = tensor_ndim(t) == ndim;
    for (int i = 0; ok && i < ndim; i++) ok = tensor_shape(t)[i] == shape[i];
    if (!ok) test_fail(file, line, "unexpected shape (ndim %d)", tensor_ndim(t));
}

double test_tol(tensor_dtype d) {
    switch (d) {
    case TENSOR_F64: return 1e-12;
    case TENSOR_F32: return 2e-6;
    case TENSOR_F16: return 2e-3;
    case TENSOR_BF16: return 1.6e-2;
    default: return 0;
    }
}

static uint64_t test_rng_state = 0x9E3779B97F4A7C15ull;
double test_uniform(double lo, double hi) {
    test_rng_state ^= test_rng_state << 13; test_rng_state ^= test_rng_state >> 7; test_rng_state ^= test_rng_state << 17;
    return lo + (hi - lo) * (double)(test_rng_state >> 11) * (1.0 / 9007199254740992.0);
}

static int case_order(const void *a, const void *b) {
    const test_case *x = (const test_case *)a, *y = (const test_case *)b;
    int c = strcmp(x->file, y->file);
    return c ? c : strcmp(x->name, y->name);
}

int main(int argc, char **argv) {
    const char *filter = argc > 1 ? argv[1] : NULL;
    qsort(cases, (size_t)n_cases, sizeof *cases, case_order);
    int passed = 0, failed = 0;
    for (int i = 0; i < n_cases; i++) {
        if (filter && !strstr(cases[i].name, filter) && !strstr(cases[i].file, filter)) continue;
        current_test = cases[i].name;
        current_failures = 0;
        int64_t handles = tensor_live_handles(), bytes = tensor_live_bytes();
        tensor_clear_error();
        tensor_manual_seed(0);
        tensor_scope_begin();
        cases[i].fn();
        tensor_scope_end();
        if (tensor_live_handles() != handles || tensor_live_bytes() != bytes)
            test_fail(cases[i].file, 0, "leaked %lld handles, %lld bytes", (long long)(tensor_live_handles() - handles), (long long)(tensor_live_bytes() - bytes));
        if (current_failures) { failed++; printf("FAIL %s (%s)\n", cases[i].name, cases[i].file); }
        else passed++;
    }
    tensor_shutdown();
    free(cases);
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
