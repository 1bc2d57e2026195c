/* ==== begin generator/parts/manual.h ==== */
/* tensor.h - v0.1.0 - a single-file C tensor library with PyTorch's model of computation.

   GENERATED FILE: do not edit. It is made by generator/gen from ops.def, tensor_autograd.h and the
   parts listed in generator/manifest.txt. Regenerate with `make tensor.h`; `make check-amalgamation`
   verifies that this file matches its sources.

   USAGE
       In exactly one C or C++ file:
           #define TENSOR_IMPLEMENTATION
           #include "tensor.h"
       Every other file includes "tensor.h" without the define. Build with one command:
           cc -O2 app.c -o app -lm -lpthread

       #include "tensor.h"
       tensor *a = tensor_ones(TENSOR_SHAPE(2, 3), TENSOR_F32);
       tensor *b = tensor_arange(0, 3, 1, TENSOR_F32);
       tensor *c = tensor_add(a, b);              // broadcasting, like PyTorch
       if (!c) fprintf(stderr, "%s\n", tensor_last_error());
       tensor_print(c);
       tensor_free(a); tensor_free(b); tensor_free(c);

   RULES IN FOUR LINES
       Every tensor * a function returns is a handle you own: free it with tensor_free, or make it
       inside tensor_scope_begin()/tensor_scope_end() and it is freed there unless tensor_keep'd.
       Views share storage; storage lives while any handle (or autograd graph) refers to it.
       Nothing aborts on bad input: a failing function returns NULL (or non-zero) and records a
       message naming the function and the values at fault (tensor_last_error); NULL inputs fail
       without crashing, so a chain of calls can be checked once at its end.
       Threads may call the library at once, each with its own scopes, errors, grad mode and
       random generator; they may share tensors they only read, and free any handle (README:
       Threads).

   CONFIGURATION (define before including, in the implementing file)
       TENSOR_IMPLEMENTATION   emit the implementation in this translation unit      (undefined)
       TENSOR_STATIC           make every function static to this translation unit     (undefined)
       TENSOR_MALLOC(n)        allocator; define TENSOR_MALLOC and TENSOR_FREE together (malloc)
       TENSOR_FREE(p)          deallocator                                              (free)
       TENSOR_ASSERT(x)        internal invariant check, never used for bad input       (assert)
       TENSOR_CACHE_LIMIT      bytes of freed storage kept for reuse (tensor_empty_cache) (1 GiB)
       TENSOR_NO_SIMD          use the portable scalar kernels even where SIMD exists   (undefined)
       TENSOR_USE_SLEEF        SLEEF's vector math instead of ours (link -lsleef)       (undefined)
       TENSOR_NO_THREADS       run every kernel on the calling thread                   (undefined)
       TENSOR_SPIN_US          how long an idle pool worker polls before it sleeps, us  (5000)
   The SIMD instance (avx512, avx2, sse2, neon, scalar) is chosen at run time from the CPU; the
   environment variable TENSOR_SIMD=avx2 (etc.) picks a lower one, and the GEMM kernel follows.
   tensor_build_info() names both.

   SECTIONS (search for the anchor)
       >>api >>impl >>core >>errors >>scopes >>dtypes >>dispatch >>iter >>create >>rng
       >>elementwise >>reduce >>shape >>index >>linalg >>nn >>print >>autograd >>runtime

   VERSION 0.1.0. The licence (MIT) is at the end of the file.
*/
/* ==== end generator/parts/manual.h ==== */
/* ==== begin generator/parts/api.h ==== */
// >>api ----------------------------------------------------------------------------------------
#ifndef TENSOR_H
#define TENSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TENSOR_VERSION_MAJOR 0
#define TENSOR_VERSION_MINOR 1
#define TENSOR_VERSION_PATCH 0

#ifndef TENSOR_API
#ifdef TENSOR_STATIC
#if defined(__GNUC__) || defined(__clang__)
#define TENSOR_API static __attribute__((unused)) /* a TU need not call every function */
#else
#define TENSOR_API static
#endif
#else
#define TENSOR_API extern
#endif
#endif

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { TENSOR_F32, TENSOR_F64, TENSOR_F16, TENSOR_BF16,
               TENSOR_I32, TENSOR_I64, TENSOR_U8, TENSOR_BOOL } tensor_dtype;
#define TENSOR_DTYPE_COUNT 8
typedef enum { TENSOR_CPU, TENSOR_CUDA } tensor_device;
#define TENSOR_DEVICE_COUNT 2
#define TENSOR_MAX_DIMS 8

/* TENSOR_SHAPE(3, 4) expands to the two arguments `2, (const int64_t[]){3, 4}`:
   tensor_zeros(TENSOR_SHAPE(3, 4), TENSOR_F32). In C++ the array is a temporary that lives until
   the end of the full expression, which covers the call. */
#define TENSOR__NARG(...) TENSOR__NARG_(__VA_ARGS__, 8, 7, 6, 5, 4, 3, 2, 1, 0)
#define TENSOR__NARG_(a1, a2, a3, a4, a5, a6, a7, a8, n, ...) n
#ifdef __cplusplus
} /* extern "C" */
template <int N> struct tensor__shape_array { int64_t v[N]; };
extern "C" {
#define TENSOR_SHAPE(...) TENSOR__NARG(__VA_ARGS__), (tensor__shape_array<TENSOR__NARG(__VA_ARGS__)>{{__VA_ARGS__}}.v)
#else
#define TENSOR_SHAPE(...) TENSOR__NARG(__VA_ARGS__), ((const int64_t[]){__VA_ARGS__})
#endif

typedef struct tensor tensor;

/* The op registry, generated from ops.def: X(name, kind, impl, types, grad, params, doc) */
#define TENSOR_OPS(X) \
    X(empty, CREATE, KERNEL, ANY, NODIFF, (int ndim, const int64_t *shape, tensor_dtype dtype), "uninitialized tensor of the given shape") \
    X(zeros, CREATE, KERNEL, ANY, NODIFF, (int ndim, const int64_t *shape, tensor_dtype dtype), "tensor filled with 0") \
    X(ones, CREATE, KERNEL, ANY, NODIFF, (int ndim, const int64_t *shape, tensor_dtype dtype), "tensor filled with 1") \
    X(full, CREATE, KERNEL, ANY, NODIFF, (int ndim, const int64_t *shape, double value, tensor_dtype dtype), "tensor filled with value") \
    X(scalar, CREATE, KERNEL, ANY, NODIFF, (double value, tensor_dtype dtype), "0-dim tensor holding value") \
    X(from_data, CREATE, KERNEL, ANY, NODIFF, (const void *data, int ndim, const int64_t *shape, tensor_dtype dtype), "copy of row-major data of the given dtype") \
    X(arange, CREATE, KERNEL, ANY, NODIFF, (double start, double end, double step, tensor_dtype dtype), "start, start+step, ... below end (torch.arange)") \
    X(linspace, CREATE, KERNEL, ANY, NODIFF, (double start, double end, int64_t steps, tensor_dtype dtype), "steps evenly spaced values from start to end inclusive") \
    X(eye, CREATE, KERNEL, ANY, NODIFF, (int64_t n, tensor_dtype dtype), "n x n identity matrix") \
    X(rand, CREATE, KERNEL, ANY, NODIFF, (int ndim, const int64_t *shape, tensor_dtype dtype), "uniform samples in [0, 1) (floating dtypes)") \
    X(randn, CREATE, KERNEL, ANY, NODIFF, (int ndim, const int64_t *shape, tensor_dtype dtype), "standard normal samples (floating dtypes)") \
    X(randint, CREATE, KERNEL, ANY, NODIFF, (int64_t low, int64_t high, int ndim, const int64_t *shape, tensor_dtype dtype), "uniform integers in [low, high)") \
    X(randperm, CREATE, KERNEL, ANY, NODIFF, (int64_t n, tensor_dtype dtype), "random permutation of 0..n-1") \
    X(multinomial, CREATE, KERNEL, ANY, NODIFF, (tensor *probs, int64_t num_samples, bool replacement), "indices sampled from the rows of probs (i64)") \
    X(clone, CREATE, KERNEL, ANY, DIFF, (tensor *t), "contiguous copy with its own storage") \
    X(contiguous, CREATE, KERNEL, ANY, DIFF, (tensor *t), "t if already contiguous (a new handle), else a contiguous copy") \
    X(add, BINARY, KERNEL, SAME, DIFF, (tensor *a, tensor *b), "a + b") \
    X(sub, BINARY, KERNEL, NUM, DIFF, (tensor *a, tensor *b), "a - b") \
    X(mul, BINARY, KERNEL, SAME, DIFF, (tensor *a, tensor *b), "a * b") \
    X(div, BINARY, KERNEL, FLOAT, DIFF, (tensor *a, tensor *b), "a / b, true division (ints give f32)") \
    X(pow, BINARY, KERNEL, SAME, DIFF, (tensor *a, tensor *b), "a ** b") \
    X(maximum, BINARY, KERNEL, SAME, DIFF, (tensor *a, tensor *b), "elementwise max (NaN propagates)") \
    X(minimum, BINARY, KERNEL, SAME, DIFF, (tensor *a, tensor *b), "elementwise min (NaN propagates)") \
    X(atan2, BINARY, KERNEL, FLOAT, DIFF, (tensor *a, tensor *b), "atan2(a, b)") \
    X(fmod, BINARY, KERNEL, NUM, DIFF, (tensor *a, tensor *b), "C fmod: remainder with the sign of a") \
    X(eq, BINARY, KERNEL, BOOL, NODIFF, (tensor *a, tensor *b), "a == b (bool)") \
    X(ne, BINARY, KERNEL, BOOL, NODIFF, (tensor *a, tensor *b), "a != b (bool)") \
    X(lt, BINARY, KERNEL, BOOL, NODIFF, (tensor *a, tensor *b), "a < b (bool)") \
    X(le, BINARY, KERNEL, BOOL, NODIFF, (tensor *a, tensor *b), "a <= b (bool)") \
    X(gt, BINARY, KERNEL, BOOL, NODIFF, (tensor *a, tensor *b), "a > b (bool)") \
    X(ge, BINARY, KERNEL, BOOL, NODIFF, (tensor *a, tensor *b), "a >= b (bool)") \
    X(logical_and, BINARY, KERNEL, BOOL, NODIFF, (tensor *a, tensor *b), "a && b (bool)") \
    X(logical_or, BINARY, KERNEL, BOOL, NODIFF, (tensor *a, tensor *b), "a || b (bool)") \
    X(add_scalar, SCALAR, COMPOSITE, SAME, DIFF, (tensor *a, double s), "a + s") \
    X(sub_scalar, SCALAR, COMPOSITE, NUM, DIFF, (tensor *a, double s), "a - s") \
    X(mul_scalar, SCALAR, COMPOSITE, SAME, DIFF, (tensor *a, double s), "a * s") \
    X(div_scalar, SCALAR, COMPOSITE, FLOAT, DIFF, (tensor *a, double s), "a / s") \
    X(pow_scalar, SCALAR, COMPOSITE, SAME, DIFF, (tensor *a, double s), "a ** s") \
    X(where, TERNARY, KERNEL, SAME, DIFF, (tensor *cond, tensor *a, tensor *b), "cond ? a : b, broadcasting all three") \
    X(neg, UNARY, KERNEL, NUM, DIFF, (tensor *a), "-a") \
    X(abs, UNARY, KERNEL, NUM, DIFF, (tensor *a), "|a|") \
    X(sign, UNARY, KERNEL, SAME, DIFF, (tensor *a), "-1, 0 or 1") \
    X(sqrt, UNARY, KERNEL, FLOAT, DIFF, (tensor *a), "square root") \
    X(rsqrt, UNARY, KERNEL, FLOAT, DIFF, (tensor *a), "1 / sqrt(a)") \
    X(square, UNARY, KERNEL, SAME, DIFF, (tensor *a), "a * a") \
    X(reciprocal, UNARY, KERNEL, FLOAT, DIFF, (tensor *a), "1 / a") \
    X(exp, UNARY, KERNEL, FLOAT, DIFF, (tensor *a), "e ** a") \
    X(exp2, UNARY, KERNEL, FLOAT, DIFF, (tensor *a), "2 ** a") \
    X(expm1, UNARY, KERNEL, FLOAT, DIFF, (tensor *a), "e ** a - 1, accurate near 0") \
    X(log, UNARY, KERNEL, FLOAT, DIFF, (tensor *a), "natural logarithm") \
    X(log2, UNARY, KERNEL, FLOAT, DIFF, (tensor *a), "base-2 logarithm") \
    X(log1p, UNARY, KERNEL, FLOAT, DIFF, (tensor *a), "log(1 + a), accurate near 0") \
    X(sin, UNARY, KERNEL, FLOAT, DIFF, (tensor *a), "sine") \
    X(cos, UNARY, KERNEL, FLOAT, DIFF, (tensor *a), "cosine") \
    X(tan, UNARY, KERNEL, FLOAT, DIFF, (tensor *a), "tangent") \
    X(asin, UNARY, KERNEL, FLOAT, DIFF, (tensor *a), "arcsine") \
    X(acos, UNARY, KERNEL, FLOAT, DIFF, (tensor *a), "arccosine") \
    X(atan, UNARY, KERNEL, FLOAT, DIFF, (tensor *a), "arctangent") \
    X(sinh, UNARY, KERNEL, FLOAT, DIFF, (tensor *a), "hyperbolic sine") \
    X(cosh, UNARY, KERNEL, FLOAT, DIFF, (tensor *a), "hyperbolic cosine") \
    X(tanh, UNARY, KERNEL, FLOAT, DIFF, (tensor *a), "hyperbolic tangent") \
    X(asinh, UNARY, KERNEL, FLOAT, DIFF, (tensor *a), "inverse hyperbolic sine") \
    X(acosh, UNARY, KERNEL, FLOAT, DIFF, (tensor *a), "inverse hyperbolic cosine") \
    X(atanh, UNARY, KERNEL, FLOAT, DIFF, (tensor *a), "inverse hyperbolic tangent") \
    X(sigmoid, UNARY, KERNEL, FLOAT, DIFF, (tensor *a), "1 / (1 + e ** -a)") \
    X(logsigmoid, UNARY, KERNEL, FLOAT, DIFF, (tensor *a), "log(sigmoid(a)), stable for large |a|") \
    X(relu, UNARY, KERNEL, NUM, DIFF, (tensor *a), "max(a, 0)") \
    X(relu6, UNARY, KERNEL, NUM, DIFF, (tensor *a), "min(max(a, 0), 6)") \
    X(gelu, UNARY, KERNEL, FLOAT, DIFF, (tensor *a), "a * Phi(a), the exact (erf) GELU") \
    X(gelu_tanh, UNARY, KERNEL, FLOAT, DIFF, (tensor *a), "GELU, tanh approximation") \
    X(silu, UNARY, KERNEL, FLOAT, DIFF, (tensor *a), "a * sigmoid(a)") \
    X(mish, UNARY, KERNEL, FLOAT, DIFF, (tensor *a), "a * tanh(softplus(a))") \
    X(softplus, UNARY, KERNEL, FLOAT, DIFF, (tensor *a), "log(1 + e ** a) (beta 1, threshold 20)") \
    X(erf, UNARY, KERNEL, FLOAT, DIFF, (tensor *a), "error function") \
    X(floor, UNARY, KERNEL, SAME, NODIFF, (tensor *a), "round toward -inf") \
    X(ceil, UNARY, KERNEL, SAME, NODIFF, (tensor *a), "round toward +inf") \
    X(round, UNARY, KERNEL, SAME, NODIFF, (tensor *a), "round half to even") \
    X(trunc, UNARY, KERNEL, SAME, NODIFF, (tensor *a), "round toward 0") \
    X(logical_not, UNARY, KERNEL, BOOL, NODIFF, (tensor *a), "!a (bool)") \
    X(isnan, UNARY, KERNEL, BOOL, NODIFF, (tensor *a), "a is NaN (bool)") \
    X(isinf, UNARY, KERNEL, BOOL, NODIFF, (tensor *a), "a is +-inf (bool)") \
    X(leaky_relu, UNARY_P, KERNEL, FLOAT, DIFF, (tensor *a, double slope), "a if a > 0 else slope * a") \
    X(elu, UNARY_P, KERNEL, FLOAT, DIFF, (tensor *a, double alpha), "a if a > 0 else alpha * (e ** a - 1)") \
    X(hardtanh, UNARY_P, KERNEL, NUM, DIFF, (tensor *a, double lo, double hi), "a clamped to [lo, hi]") \
    X(clamp, UNARY_P, KERNEL, NUM, DIFF, (tensor *a, double lo, double hi), "a clamped to [lo, hi] (NaN bounds: no bound)") \
    X(add_, INPLACE, KERNEL, ANY, NODIFF, (tensor *a, tensor *b), "a += b (b broadcast to a)") \
    X(mul_scalar_, INPLACE, KERNEL, ANY, NODIFF, (tensor *a, double s), "a *= s") \
    X(copy_, INPLACE, KERNEL, ANY, NODIFF, (tensor *dst, tensor *src), "dst[...] = src (broadcast, converted to dst's dtype)") \
    X(fill_, INPLACE, KERNEL, ANY, NODIFF, (tensor *a, double value), "every element of a = value") \
    X(zero_, INPLACE, KERNEL, ANY, NODIFF, (tensor *a), "every element of a = 0") \
    X(sum, REDUCE, KERNEL, ANY, DIFF, (tensor *t, int dim, bool keepdim), "sum over dim (ints and bool sum to i64)") \
    X(sum_all, REDUCE, KERNEL, ANY, DIFF, (tensor *t), "sum of every element (0-dim)") \
    X(sum_dims, REDUCE, KERNEL, ANY, DIFF, (tensor *t, int n, const int *dims, bool keepdim), "sum over several dims") \
    X(mean, REDUCE, KERNEL, ANY, DIFF, (tensor *t, int dim, bool keepdim), "mean over dim (floating dtypes)") \
    X(mean_all, REDUCE, KERNEL, ANY, DIFF, (tensor *t), "mean of every element (0-dim)") \
    X(mean_dims, REDUCE, KERNEL, ANY, DIFF, (tensor *t, int n, const int *dims, bool keepdim), "mean over several dims") \
    X(prod, REDUCE, KERNEL, ANY, DIFF, (tensor *t, int dim, bool keepdim), "product over dim") \
    X(max, REDUCE, KERNEL, ANY, DIFF, (tensor *t, int dim, bool keepdim), "maximum over dim (values)") \
    X(max_all, REDUCE, KERNEL, ANY, DIFF, (tensor *t), "maximum of every element (0-dim)") \
    X(min, REDUCE, KERNEL, ANY, DIFF, (tensor *t, int dim, bool keepdim), "minimum over dim (values)") \
    X(min_all, REDUCE, KERNEL, ANY, DIFF, (tensor *t), "minimum of every element (0-dim)") \
    X(argmax, REDUCE, KERNEL, ANY, NODIFF, (tensor *t, int dim, bool keepdim), "index of the first maximum over dim (i64)") \
    X(argmin, REDUCE, KERNEL, ANY, NODIFF, (tensor *t, int dim, bool keepdim), "index of the first minimum over dim (i64)") \
    X(var, REDUCE, KERNEL, ANY, DIFF, (tensor *t, int dim, int64_t correction, bool keepdim), "variance over dim, divided by N - correction") \
    X(std, REDUCE, KERNEL, ANY, DIFF, (tensor *t, int dim, int64_t correction, bool keepdim), "standard deviation over dim, divided by N - correction") \
    X(logsumexp, REDUCE, KERNEL, ANY, DIFF, (tensor *t, int dim, bool keepdim), "log(sum(exp(t))) over dim, stable") \
    X(norm, REDUCE, KERNEL, ANY, DIFF, (tensor *t, double p, int dim, bool keepdim), "p-norm over dim (p may be INFINITY)") \
    X(cumsum, REDUCE, KERNEL, ANY, DIFF, (tensor *t, int dim), "cumulative sum along dim") \
    X(all, REDUCE, KERNEL, ANY, NODIFF, (tensor *t), "true if every element is non-zero (0-dim bool)") \
    X(any, REDUCE, KERNEL, ANY, NODIFF, (tensor *t), "true if some element is non-zero (0-dim bool)") \
    X(reshape, SHAPE, COMPOSITE, ANY, DIFF, (tensor *t, int ndim, const int64_t *shape), "a view when strides allow, else a copy; one -1 allowed") \
    X(view, SHAPE, VIEW, ANY, DIFF, (tensor *t, int ndim, const int64_t *shape), "a view with a new shape; error if the strides do not allow it") \
    X(permute, SHAPE, VIEW, ANY, DIFF, (tensor *t, int ndim, const int *dims), "view with dims reordered") \
    X(transpose, SHAPE, VIEW, ANY, DIFF, (tensor *t, int dim0, int dim1), "view with two dims swapped") \
    X(expand, SHAPE, VIEW, ANY, DIFF, (tensor *t, int ndim, const int64_t *shape), "broadcast view (-1 keeps a size)") \
    X(squeeze, SHAPE, VIEW, ANY, DIFF, (tensor *t, int dim), "view without dim if its size is 1") \
    X(unsqueeze, SHAPE, VIEW, ANY, DIFF, (tensor *t, int dim), "view with a new dim of size 1 at dim") \
    X(flatten, SHAPE, COMPOSITE, ANY, DIFF, (tensor *t, int start_dim, int end_dim), "dims start_dim..end_dim merged into one (reshape)") \
    X(slice, SHAPE, VIEW, ANY, DIFF, (tensor *t, int dim, int64_t start, int64_t end, int64_t step), "view of start:end:step along dim (Python slice rules, step > 0)") \
    X(select, SHAPE, VIEW, ANY, DIFF, (tensor *t, int dim, int64_t index), "view of one index along dim, dim removed") \
    X(cat, SHAPE, KERNEL, ANY, DIFF, (int n, tensor *const *ts, int dim), "concatenation along dim") \
    X(stack, SHAPE, COMPOSITE, ANY, DIFF, (int n, tensor *const *ts, int dim), "concatenation along a new dim") \
    X(flip, SHAPE, KERNEL, ANY, DIFF, (tensor *t, int dim), "copy with dim reversed") \
    X(repeat, SHAPE, KERNEL, ANY, DIFF, (tensor *t, int ndim, const int64_t *repeats), "tiled copy (torch.Tensor.repeat)") \
    X(pad, SHAPE, KERNEL, ANY, DIFF, (tensor *t, int npad, const int64_t *pads, double value), "constant padding of the last dims, pads = (left, right, top, bottom, ...)") \
    X(tril, SHAPE, KERNEL, ANY, DIFF, (tensor *t, int64_t diagonal), "lower triangle of the last two dims, rest 0") \
    X(triu, SHAPE, KERNEL, ANY, DIFF, (tensor *t, int64_t diagonal), "upper triangle of the last two dims, rest 0") \
    X(gather, INDEX, KERNEL, ANY, DIFF, (tensor *t, int dim, tensor *index), "out[i][j] = t[index[i][j]][j] along dim (torch.gather)") \
    X(scatter_add, INDEX, KERNEL, ANY, DIFF, (tensor *t, int dim, tensor *index, tensor *src), "copy of t with src added at index along dim") \
    X(index_select, INDEX, KERNEL, ANY, DIFF, (tensor *t, int dim, tensor *index), "entries of t at the 1-D index along dim") \
    X(masked_fill, INDEX, KERNEL, ANY, DIFF, (tensor *t, tensor *mask, double value), "copy of t with value where mask (broadcast) is true") \
    X(one_hot, INDEX, KERNEL, ANY, NODIFF, (tensor *indices, int64_t num_classes), "i64 one-hot encoding, new last dim (num_classes -1: max + 1)") \
    X(to_dtype, INDEX, KERNEL, ANY, DIFF, (tensor *t, tensor_dtype dtype), "converted copy (a new handle to t if the dtype is the same)") \
    X(to_device, INDEX, KERNEL, ANY, DIFF, (tensor *t, tensor_device device), "copy on another device (a new handle to t if already there)") \
    X(matmul, LINALG, KERNEL, ANY, DIFF, (tensor *a, tensor *b), "matrix product, NumPy/PyTorch semantics with batch broadcasting") \
    X(linear, LINALG, COMPOSITE, ANY, DIFF, (tensor *x, tensor *weight, tensor *bias), "x @ weight^T + bias; weight [out, in]; bias may be NULL") \
    X(softmax, NN, KERNEL, ANY, DIFF, (tensor *t, int dim), "softmax along dim") \
    X(log_softmax, NN, KERNEL, ANY, DIFF, (tensor *t, int dim), "log of softmax along dim, stable") \
    X(layer_norm, NN, KERNEL, ANY, DIFF, (tensor *x, tensor *weight, tensor *bias, double eps), "normalization over the last dim; weight, bias may be NULL") \
    X(rms_norm, NN, KERNEL, ANY, DIFF, (tensor *x, tensor *weight, double eps), "x / sqrt(mean(x^2) + eps) * weight over the last dim; weight may be NULL") \
    X(conv2d, NN, KERNEL, ANY, DIFF, (tensor *x, tensor *w, tensor *bias, int stride, int padding, int dilation, int groups), "2-D convolution, x [N, C, H, W], w [O, C/groups, kH, kW]") \
    X(conv1d, NN, KERNEL, ANY, DIFF, (tensor *x, tensor *w, tensor *bias, int stride, int padding, int dilation, int groups), "1-D convolution, x [N, C, L], w [O, C/groups, k]") \
    X(max_pool2d, NN, KERNEL, ANY, DIFF, (tensor *x, int kernel, int stride, int padding), "2-D max pooling (stride 0: kernel)") \
    X(avg_pool2d, NN, KERNEL, ANY, DIFF, (tensor *x, int kernel, int stride, int padding), "2-D average pooling, padding counted (stride 0: kernel)") \
    X(embedding, NN, KERNEL, ANY, DIFF, (tensor *weight, tensor *indices), "rows of weight [V, D] at integer indices") \
    X(dropout, NN, KERNEL, ANY, DIFF, (tensor *x, double p, bool training), "zeroes elements with probability p and scales the rest by 1/(1-p) when training") \
    X(scaled_dot_product_attention, NN, COMPOSITE, ANY, DIFF, (tensor *q, tensor *k, tensor *v, tensor *mask, bool is_causal), "softmax(q k^T / sqrt(d) + mask) v; bool mask: true keeps") \
    X(cross_entropy, LOSS, KERNEL, ANY, DIFF, (tensor *logits, tensor *targets), "mean cross-entropy of logits [N, C] against class indices [N]") \
    X(nll_loss, LOSS, KERNEL, ANY, DIFF, (tensor *log_probs, tensor *targets), "mean negative log-likelihood of class indices") \
    X(mse_loss, LOSS, COMPOSITE, ANY, DIFF, (tensor *input, tensor *target), "mean squared error") \
    X(binary_cross_entropy_with_logits, LOSS, COMPOSITE, ANY, DIFF, (tensor *logits, tensor *targets), "mean binary cross-entropy on logits, stable")

/* One enumerator per op of ops.def, in registry order. */
typedef enum tensor_op {
    TENSOR_OP_empty,
    TENSOR_OP_zeros,
    TENSOR_OP_ones,
    TENSOR_OP_full,
    TENSOR_OP_scalar,
    TENSOR_OP_from_data,
    TENSOR_OP_arange,
    TENSOR_OP_linspace,
    TENSOR_OP_eye,
    TENSOR_OP_rand,
    TENSOR_OP_randn,
    TENSOR_OP_randint,
    TENSOR_OP_randperm,
    TENSOR_OP_multinomial,
    TENSOR_OP_clone,
    TENSOR_OP_contiguous,
    TENSOR_OP_add,
    TENSOR_OP_sub,
    TENSOR_OP_mul,
    TENSOR_OP_div,
    TENSOR_OP_pow,
    TENSOR_OP_maximum,
    TENSOR_OP_minimum,
    TENSOR_OP_atan2,
    TENSOR_OP_fmod,
    TENSOR_OP_eq,
    TENSOR_OP_ne,
    TENSOR_OP_lt,
    TENSOR_OP_le,
    TENSOR_OP_gt,
    TENSOR_OP_ge,
    TENSOR_OP_logical_and,
    TENSOR_OP_logical_or,
    TENSOR_OP_add_scalar,
    TENSOR_OP_sub_scalar,
    TENSOR_OP_mul_scalar,
    TENSOR_OP_div_scalar,
    TENSOR_OP_pow_scalar,
    TENSOR_OP_where,
    TENSOR_OP_neg,
    TENSOR_OP_abs,
    TENSOR_OP_sign,
    TENSOR_OP_sqrt,
    TENSOR_OP_rsqrt,
    TENSOR_OP_square,
    TENSOR_OP_reciprocal,
    TENSOR_OP_exp,
    TENSOR_OP_exp2,
    TENSOR_OP_expm1,
    TENSOR_OP_log,
    TENSOR_OP_log2,
    TENSOR_OP_log1p,
    TENSOR_OP_sin,
    TENSOR_OP_cos,
    TENSOR_OP_tan,
    TENSOR_OP_asin,
    TENSOR_OP_acos,
    TENSOR_OP_atan,
    TENSOR_OP_sinh,
    TENSOR_OP_cosh,
    TENSOR_OP_tanh,
    TENSOR_OP_asinh,
    TENSOR_OP_acosh,
    TENSOR_OP_atanh,
    TENSOR_OP_sigmoid,
    TENSOR_OP_logsigmoid,
    TENSOR_OP_relu,
    TENSOR_OP_relu6,
    TENSOR_OP_gelu,
    TENSOR_OP_gelu_tanh,
    TENSOR_OP_silu,
    TENSOR_OP_mish,
    TENSOR_OP_softplus,
    TENSOR_OP_erf,
    TENSOR_OP_floor,
    TENSOR_OP_ceil,
    TENSOR_OP_round,
    TENSOR_OP_trunc,
    TENSOR_OP_logical_not,
    TENSOR_OP_isnan,
    TENSOR_OP_isinf,
    TENSOR_OP_leaky_relu,
    TENSOR_OP_elu,
    TENSOR_OP_hardtanh,
    TENSOR_OP_clamp,
    TENSOR_OP_add_,
    TENSOR_OP_mul_scalar_,
    TENSOR_OP_copy_,
    TENSOR_OP_fill_,
    TENSOR_OP_zero_,
    TENSOR_OP_sum,
    TENSOR_OP_sum_all,
    TENSOR_OP_sum_dims,
    TENSOR_OP_mean,
    TENSOR_OP_mean_all,
    TENSOR_OP_mean_dims,
    TENSOR_OP_prod,
    TENSOR_OP_max,
    TENSOR_OP_max_all,
    TENSOR_OP_min,
    TENSOR_OP_min_all,
    TENSOR_OP_argmax,
    TENSOR_OP_argmin,
    TENSOR_OP_var,
    TENSOR_OP_std,
    TENSOR_OP_logsumexp,
    TENSOR_OP_norm,
    TENSOR_OP_cumsum,
    TENSOR_OP_all,
    TENSOR_OP_any,
    TENSOR_OP_reshape,
    TENSOR_OP_view,
    TENSOR_OP_permute,
    TENSOR_OP_transpose,
    TENSOR_OP_expand,
    TENSOR_OP_squeeze,
    TENSOR_OP_unsqueeze,
    TENSOR_OP_flatten,
    TENSOR_OP_slice,
    TENSOR_OP_select,
    TENSOR_OP_cat,
    TENSOR_OP_stack,
    TENSOR_OP_flip,
    TENSOR_OP_repeat,
    TENSOR_OP_pad,
    TENSOR_OP_tril,
    TENSOR_OP_triu,
    TENSOR_OP_gather,
    TENSOR_OP_scatter_add,
    TENSOR_OP_index_select,
    TENSOR_OP_masked_fill,
    TENSOR_OP_one_hot,
    TENSOR_OP_to_dtype,
    TENSOR_OP_to_device,
    TENSOR_OP_matmul,
    TENSOR_OP_linear,
    TENSOR_OP_softmax,
    TENSOR_OP_log_softmax,
    TENSOR_OP_layer_norm,
    TENSOR_OP_rms_norm,
    TENSOR_OP_conv2d,
    TENSOR_OP_conv1d,
    TENSOR_OP_max_pool2d,
    TENSOR_OP_avg_pool2d,
    TENSOR_OP_embedding,
    TENSOR_OP_dropout,
    TENSOR_OP_scaled_dot_product_attention,
    TENSOR_OP_cross_entropy,
    TENSOR_OP_nll_loss,
    TENSOR_OP_mse_loss,
    TENSOR_OP_binary_cross_entropy_with_logits,
    TENSOR_OP_COUNT
} tensor_op;

/* ---- Lifetime ---- */
TENSOR_API void    tensor_free(tensor *t);          /* releases one handle, from any thread; NULL is fine */
TENSOR_API void    tensor_scope_begin(void);        /* handles this thread creates after this ... */
TENSOR_API void    tensor_scope_end(void);          /* ... are released here, unless kept */
TENSOR_API tensor *tensor_keep(tensor *t);          /* moves t out of the innermost scope; returns t (its thread's) */
TENSOR_API void    tensor_shutdown(void);           /* frees everything the library still holds, every thread's */
TENSOR_API int64_t tensor_live_handles(void);       /* handles not yet freed, all threads (leak checks) */
TENSOR_API int64_t tensor_live_bytes(void);         /* bytes of storage not yet freed, all threads (leak checks) */
TENSOR_API void    tensor_empty_cache(void);        /* gives this thread's cached free blocks back (threads keep
                                                       at most TENSOR_CACHE_LIMIT bytes together, default 1 GiB) */

/* ---- Errors ---- */
TENSOR_API const char *tensor_last_error(void);     /* NULL when no error since the last clear; per thread */
TENSOR_API void        tensor_clear_error(void);
typedef void (*tensor_error_fn)(const char *message, void *user);
TENSOR_API void        tensor_set_error_handler(tensor_error_fn fn, void *user);   /* NULL: none */

/* ---- Creation and data (the creating functions are registry ops, below) ---- */
TENSOR_API void           tensor_manual_seed(uint64_t seed);   /* same seed, same numbers, on every platform; seeds this thread */
TENSOR_API int            tensor_ndim(const tensor *t);        /* -1 for NULL */
TENSOR_API const int64_t *tensor_shape(const tensor *t);
TENSOR_API const int64_t *tensor_strides(const tensor *t);     /* in elements */
TENSOR_API int64_t        tensor_size(const tensor *t, int dim);   /* -1 and an error on a bad dim */
TENSOR_API int64_t        tensor_numel(const tensor *t);
TENSOR_API tensor_dtype   tensor_get_dtype(const tensor *t);
TENSOR_API tensor_device  tensor_get_device(const tensor *t);
TENSOR_API bool           tensor_is_contiguous(const tensor *t);
TENSOR_API bool           tensor_shares_storage(const tensor *a, const tensor *b);
TENSOR_API double         tensor_item(tensor *t);              /* one-element tensors; NaN and an error otherwise */
TENSOR_API int            tensor_copy_to(tensor *t, void *dst, size_t dst_bytes); /* row-major, any layout; 0 ok */
TENSOR_API void          *tensor_data_ptr(tensor *t);          /* CPU contiguous storage, else NULL + error */
TENSOR_API void           tensor_print(tensor *t);             /* PyTorch-like text to stdout */
TENSOR_API int            tensor_snprint(tensor *t, char *buf, size_t n); /* like snprintf: length it needs */
TENSOR_API const char    *tensor_dtype_name(tensor_dtype dtype);   /* "float32", ... */
TENSOR_API size_t         tensor_dtype_size(tensor_dtype dtype);   /* bytes per element; 0 if invalid */
TENSOR_API tensor_dtype   tensor_promote_types(tensor_dtype a, tensor_dtype b); /* torch.promote_types */

/* ---- Shape helpers that return several tensors ---- */
TENSOR_API int tensor_split(tensor *t, int64_t split_size, int dim, tensor **out, int max_out); /* views; returns count, -1 on error */

/* ---- The op registry at run time ---- */
TENSOR_API const char *tensor_op_name(tensor_op op);          /* "add", ...; NULL if out of range */
TENSOR_API bool        tensor_op_differentiable(tensor_op op);

/* ---- Autograd ---- */
TENSOR_API tensor *tensor_set_requires_grad(tensor *t, bool on);   /* returns t; floating leaves only */
TENSOR_API bool    tensor_requires_grad(const tensor *t);
TENSOR_API int     tensor_backward(tensor *loss);                   /* loss must have one element; 0 ok */
TENSOR_API int     tensor_backward_with(tensor *out, tensor *grad_out); /* d(sum(out * grad_out)) */
TENSOR_API tensor *tensor_grad(tensor *t);                          /* accumulated .grad, borrowed; NULL if none */
TENSOR_API void    tensor_zero_grad(tensor *t);                     /* drops .grad (PyTorch's set_to_none) */
TENSOR_API tensor *tensor_detach(tensor *t);                        /* a view outside the graph */
TENSOR_API bool    tensor_set_grad_enabled(bool on);                /* returns the previous setting; per thread */
TENSOR_API int     tensor_autograd_grad(int n_out, tensor *const *outputs, tensor *const *grad_outputs,
                                        int n_in, tensor *const *inputs, tensor **grads_out, bool create_graph);

/* ---- Initialization (in place, PyTorch's formulas; return t) ---- */
TENSOR_API tensor *tensor_uniform_(tensor *t, double lo, double hi);
TENSOR_API tensor *tensor_normal_(tensor *t, double mean, double std);
TENSOR_API tensor *tensor_kaiming_uniform_(tensor *t, double a);    /* torch.nn.init.kaiming_uniform_, fan_in, leaky_relu */
TENSOR_API tensor *tensor_xavier_uniform_(tensor *t, double gain);  /* torch.nn.init.xavier_uniform_ */

/* ---- Optimizers (torch.optim's update rules) ---- */
typedef struct tensor_optim tensor_optim;
TENSOR_API tensor_optim *tensor_optim_sgd(int n, tensor *const *params, double lr, double momentum,
                                          double weight_decay, bool nesterov);
TENSOR_API tensor_optim *tensor_optim_adam(int n, tensor *const *params, double lr, double beta1, double beta2,
                                           double eps, double weight_decay);   /* Adam (L2 weight decay) */
TENSOR_API tensor_optim *tensor_optim_adamw(int n, tensor *const *params, double lr, double beta1, double beta2,
                                            double eps, double weight_decay);  /* decoupled decay */
TENSOR_API int     tensor_optim_step(tensor_optim *o);
TENSOR_API void    tensor_optim_zero_grad(tensor_optim *o);
TENSOR_API void    tensor_optim_set_lr(tensor_optim *o, double lr);
TENSOR_API void    tensor_optim_free(tensor_optim *o);
TENSOR_API double  tensor_clip_grad_norm(int n, tensor *const *params, double max_norm);  /* returns total norm */

/* ---- Files: safetensors (the native format), NumPy's .npy/.npz, checkpoints, DLPack ----
   Loaders treat every file as hostile: a malformed file is an error naming the problem, never a
   crash, and never makes them allocate more than the file's size implies. Writers replace the file
   only once it is complete (they write PATH.tmp and rename it). */
typedef struct tensor_dict tensor_dict;          /* ordered: insertion order, or file order when loaded */
TENSOR_API tensor_dict *tensor_dict_new(void);
TENSOR_API int          tensor_dict_set(tensor_dict *d, const char *name, tensor *t);  /* holds its own reference
                                                                                         (replaces a tensor of that name); 0 ok */
TENSOR_API tensor      *tensor_dict_get(const tensor_dict *d, const char *name);       /* borrowed; NULL + error if absent */
TENSOR_API bool         tensor_dict_contains(const tensor_dict *d, const char *name);
TENSOR_API int          tensor_dict_len(const tensor_dict *d);
TENSOR_API const char  *tensor_dict_name(const tensor_dict *d, int i);                 /* NULL if out of range */
TENSOR_API tensor      *tensor_dict_at(const tensor_dict *d, int i);                   /* borrowed */
TENSOR_API int          tensor_dict_set_metadata(tensor_dict *d, const char *key, const char *value);
TENSOR_API const char  *tensor_dict_metadata(const tensor_dict *d, const char *key);   /* NULL if absent */
TENSOR_API int          tensor_dict_metadata_len(const tensor_dict *d);
TENSOR_API const char  *tensor_dict_metadata_key(const tensor_dict *d, int i);         /* NULL if out of range */
TENSOR_API void         tensor_dict_free(tensor_dict *d);                              /* before tensor_shutdown */

#define TENSOR_LOAD_MMAP 1 /* map the file (private, copy on write): tensors share the file's pages, a write
                              to one copies its page and never reaches the file */
TENSOR_API int          tensor_save(const char *path, const tensor_dict *d);           /* safetensors; 0 ok */
TENSOR_API tensor_dict *tensor_load(const char *path, int flags);                      /* safetensors */
TENSOR_API int          tensor_save_safetensors(const char *path, int n, const char *const *names, tensor *const *ts);
TENSOR_API int          tensor_load_safetensors(const char *path, int *n, char ***names, tensor ***ts);
                        /* the caller frees each name and the arrays with free(), each tensor with tensor_free */
TENSOR_API int          tensor_save_npy(const char *path, tensor *t);
TENSOR_API tensor      *tensor_load_npy(const char *path);
TENSOR_API int          tensor_save_npz(const char *path, const tensor_dict *d);       /* stored (uncompressed) members */
TENSOR_API tensor_dict *tensor_load_npz(const char *path);   /* deflated members need -DTENSOR_USE_ZLIB -lz */

/* Checkpoints: optimizer state (steps, moments, hyperparameters) and this thread's random generator,
   under a name prefix, in a dict saved with the parameters (tensor_save); loading restores them so
   training resumes bit for bit. */
TENSOR_API int tensor_optim_state_save(const tensor_optim *o, tensor_dict *d, const char *prefix);
TENSOR_API int tensor_optim_state_load(tensor_optim *o, const tensor_dict *d, const char *prefix);
TENSOR_API int tensor_rng_state_save(tensor_dict *d, const char *name);
TENSOR_API int tensor_rng_state_load(const tensor_dict *d, const char *name);

/* DLPack: zero-copy exchange with NumPy, PyTorch, JAX, CuPy (include dlpack.h to use the structs).
   tensor_to_dlpack: the capsule shares t's storage and keeps it alive until its deleter is called.
   tensor_from_dlpack takes ownership: the producer's deleter runs when the last tensor viewing the
   memory is freed (at once on error). */
struct DLManagedTensorVersioned;
struct DLManagedTensor;
TENSOR_API struct DLManagedTensorVersioned *tensor_to_dlpack(tensor *t);
TENSOR_API tensor *tensor_from_dlpack(struct DLManagedTensorVersioned *m);
TENSOR_API struct DLManagedTensor *tensor_to_dlpack_unversioned(tensor *t);   /* DLPack before 1.0 */
TENSOR_API tensor *tensor_from_dlpack_unversioned(struct DLManagedTensor *m);

/* ---- Runtime ---- */
TENSOR_API void        tensor_set_num_threads(int n);   /* 0: all cores */
TENSOR_API int         tensor_get_num_threads(void);
TENSOR_API bool        tensor_cuda_available(void);
TENSOR_API const char *tensor_version(void);            /* "MAJOR.MINOR.PATCH" */
TENSOR_API const char *tensor_build_info(void);         /* SIMD level, SLEEF, CUDA, threads */
TENSOR_API bool        tensor_set_reference_kernels(bool on); /* true: plain scalar reference kernels only
                                                                 (to check optimized paths); returns previous */
#ifdef TENSOR_TEST_HOOKS
/* Test builds only (the suite defines TENSOR_TEST_HOOKS): how many times a fast path ran, by name
   (conv_winograd, conv_im2col_simd, conv_smallk, maxpool_fast, relu_backward_fused,
   unary_backward_fused, optim_simd); -1 for another name. The tests compare each fast path with the
   reference, and with these they also see that it is taken where it should be. */
TENSOR_API int64_t     tensor_test_path_count(const char *path);
/* Allocation-failure injection: from now on, count every memory request of the library (storage,
   handles, graph nodes, scratch, whether cached or not) and fail the k-th one (0: fail none).
   tensor_test_alloc_count() is the number of requests since the last call. */
TENSOR_API void        tensor_test_fail_alloc(int64_t k);
TENSOR_API int64_t     tensor_test_alloc_count(void);
#endif

/* ---- Ops of the registry (ops.def), one prototype each ---- */

/* -- CREATE ops -- */
/* uninitialized tensor of the given shape */
TENSOR_API tensor *tensor_empty(int ndim, const int64_t *shape, tensor_dtype dtype);
/* tensor filled with 0 */
TENSOR_API tensor *tensor_zeros(int ndim, const int64_t *shape, tensor_dtype dtype);
/* tensor filled with 1 */
TENSOR_API tensor *tensor_ones(int ndim, const int64_t *shape, tensor_dtype dtype);
/* tensor filled with value */
TENSOR_API tensor *tensor_full(int ndim, const int64_t *shape, double value, tensor_dtype dtype);
/* 0-dim tensor holding value */
TENSOR_API tensor *tensor_scalar(double value, tensor_dtype dtype);
/* copy of row-major data of the given dtype */
TENSOR_API tensor *tensor_from_data(const void *data, int ndim, const int64_t *shape, tensor_dtype dtype);
/* start, start+step, ... below end (torch.arange) */
TENSOR_API tensor *tensor_arange(double start, double end, double step, tensor_dtype dtype);
/* steps evenly spaced values from start to end inclusive */
TENSOR_API tensor *tensor_linspace(double start, double end, int64_t steps, tensor_dtype dtype);
/* n x n identity matrix */
TENSOR_API tensor *tensor_eye(int64_t n, tensor_dtype dtype);
/* uniform samples in [0, 1) (floating dtypes) */
TENSOR_API tensor *tensor_rand(int ndim, const int64_t *shape, tensor_dtype dtype);
/* standard normal samples (floating dtypes) */
TENSOR_API tensor *tensor_randn(int ndim, const int64_t *shape, tensor_dtype dtype);
/* uniform integers in [low, high) */
TENSOR_API tensor *tensor_randint(int64_t low, int64_t high, int ndim, const int64_t *shape, tensor_dtype dtype);
/* random permutation of 0..n-1 */
TENSOR_API tensor *tensor_randperm(int64_t n, tensor_dtype dtype);
/* indices sampled from the rows of probs (i64) */
TENSOR_API tensor *tensor_multinomial(tensor *probs, int64_t num_samples, bool replacement);
/* contiguous copy with its own storage */
TENSOR_API tensor *tensor_clone(tensor *t);
/* t if already contiguous (a new handle), else a contiguous copy */
TENSOR_API tensor *tensor_contiguous(tensor *t);

/* -- BINARY ops -- */
/* a + b */
TENSOR_API tensor *tensor_add(tensor *a, tensor *b);
/* a - b */
TENSOR_API tensor *tensor_sub(tensor *a, tensor *b);
/* a * b */
TENSOR_API tensor *tensor_mul(tensor *a, tensor *b);
/* a / b, true division (ints give f32) */
TENSOR_API tensor *tensor_div(tensor *a, tensor *b);
/* a ** b */
TENSOR_API tensor *tensor_pow(tensor *a, tensor *b);
/* elementwise max (NaN propagates) */
TENSOR_API tensor *tensor_maximum(tensor *a, tensor *b);
/* elementwise min (NaN propagates) */
TENSOR_API tensor *tensor_minimum(tensor *a, tensor *b);
/* atan2(a, b) */
TENSOR_API tensor *tensor_atan2(tensor *a, tensor *b);
/* C fmod: remainder with the sign of a */
TENSOR_API tensor *tensor_fmod(tensor *a, tensor *b);
/* a == b (bool) */
TENSOR_API tensor *tensor_eq(tensor *a, tensor *b);
/* a != b (bool) */
TENSOR_API tensor *tensor_ne(tensor *a, tensor *b);
/* a < b (bool) */
TENSOR_API tensor *tensor_lt(tensor *a, tensor *b);
/* a <= b (bool) */
TENSOR_API tensor *tensor_le(tensor *a, tensor *b);
/* a > b (bool) */
TENSOR_API tensor *tensor_gt(tensor *a, tensor *b);
/* a >= b (bool) */
TENSOR_API tensor *tensor_ge(tensor *a, tensor *b);
/* a && b (bool) */
TENSOR_API tensor *tensor_logical_and(tensor *a, tensor *b);
/* a || b (bool) */
TENSOR_API tensor *tensor_logical_or(tensor *a, tensor *b);

/* -- SCALAR ops -- */
/* a + s */
TENSOR_API tensor *tensor_add_scalar(tensor *a, double s);
/* a - s */
TENSOR_API tensor *tensor_sub_scalar(tensor *a, double s);
/* a * s */
TENSOR_API tensor *tensor_mul_scalar(tensor *a, double s);
/* a / s */
TENSOR_API tensor *tensor_div_scalar(tensor *a, double s);
/* a ** s */
TENSOR_API tensor *tensor_pow_scalar(tensor *a, double s);

/* -- TERNARY ops -- */
/* cond ? a : b, broadcasting all three */
TENSOR_API tensor *tensor_where(tensor *cond, tensor *a, tensor *b);

/* -- UNARY ops -- */
/* -a */
TENSOR_API tensor *tensor_neg(tensor *a);
/* |a| */
TENSOR_API tensor *tensor_abs(tensor *a);
/* -1, 0 or 1 */
TENSOR_API tensor *tensor_sign(tensor *a);
/* square root */
TENSOR_API tensor *tensor_sqrt(tensor *a);
/* 1 / sqrt(a) */
TENSOR_API tensor *tensor_rsqrt(tensor *a);
/* a * a */
TENSOR_API tensor *tensor_square(tensor *a);
/* 1 / a */
TENSOR_API tensor *tensor_reciprocal(tensor *a);
/* e ** a */
TENSOR_API tensor *tensor_exp(tensor *a);
/* 2 ** a */
TENSOR_API tensor *tensor_exp2(tensor *a);
/* e ** a - 1, accurate near 0 */
TENSOR_API tensor *tensor_expm1(tensor *a);
/* natural logarithm */
TENSOR_API tensor *tensor_log(tensor *a);
/* base-2 logarithm */
TENSOR_API tensor *tensor_log2(tensor *a);
/* log(1 + a), accurate near 0 */
TENSOR_API tensor *tensor_log1p(tensor *a);
/* sine */
TENSOR_API tensor *tensor_sin(tensor *a);
/* cosine */
TENSOR_API tensor *tensor_cos(tensor *a);
/* tangent */
TENSOR_API tensor *tensor_tan(tensor *a);
/* arcsine */
TENSOR_API tensor *tensor_asin(tensor *a);
/* arccosine */
TENSOR_API tensor *tensor_acos(tensor *a);
/* arctangent */
TENSOR_API tensor *tensor_atan(tensor *a);
/* hyperbolic sine */
TENSOR_API tensor *tensor_sinh(tensor *a);
/* hyperbolic cosine */
TENSOR_API tensor *tensor_cosh(tensor *a);
/* hyperbolic tangent */
TENSOR_API tensor *tensor_tanh(tensor *a);
/* inverse hyperbolic sine */
TENSOR_API tensor *tensor_asinh(tensor *a);
/* inverse hyperbolic cosine */
TENSOR_API tensor *tensor_acosh(tensor *a);
/* inverse hyperbolic tangent */
TENSOR_API tensor *tensor_atanh(tensor *a);
/* 1 / (1 + e ** -a) */
TENSOR_API tensor *tensor_sigmoid(tensor *a);
/* log(sigmoid(a)), stable for large |a| */
TENSOR_API tensor *tensor_logsigmoid(tensor *a);
/* max(a, 0) */
TENSOR_API tensor *tensor_relu(tensor *a);
/* min(max(a, 0), 6) */
TENSOR_API tensor *tensor_relu6(tensor *a);
/* a * Phi(a), the exact (erf) GELU */
TENSOR_API tensor *tensor_gelu(tensor *a);
/* GELU, tanh approximation */
TENSOR_API tensor *tensor_gelu_tanh(tensor *a);
/* a * sigmoid(a) */
TENSOR_API tensor *tensor_silu(tensor *a);
/* a * tanh(softplus(a)) */
TENSOR_API tensor *tensor_mish(tensor *a);
/* log(1 + e ** a) (beta 1, threshold 20) */
TENSOR_API tensor *tensor_softplus(tensor *a);
/* error function */
TENSOR_API tensor *tensor_erf(tensor *a);
/* round toward -inf */
TENSOR_API tensor *tensor_floor(tensor *a);
/* round toward +inf */
TENSOR_API tensor *tensor_ceil(tensor *a);
/* round half to even */
TENSOR_API tensor *tensor_round(tensor *a);
/* round toward 0 */
TENSOR_API tensor *tensor_trunc(tensor *a);
/* !a (bool) */
TENSOR_API tensor *tensor_logical_not(tensor *a);
/* a is NaN (bool) */
TENSOR_API tensor *tensor_isnan(tensor *a);
/* a is +-inf (bool) */
TENSOR_API tensor *tensor_isinf(tensor *a);

/* -- UNARY_P ops -- */
/* a if a > 0 else slope * a */
TENSOR_API tensor *tensor_leaky_relu(tensor *a, double slope);
/* a if a > 0 else alpha * (e ** a - 1) */
TENSOR_API tensor *tensor_elu(tensor *a, double alpha);
/* a clamped to [lo, hi] */
TENSOR_API tensor *tensor_hardtanh(tensor *a, double lo, double hi);
/* a clamped to [lo, hi] (NaN bounds: no bound) */
TENSOR_API tensor *tensor_clamp(tensor *a, double lo, double hi);

/* -- INPLACE ops -- */
/* a += b (b broadcast to a) */
TENSOR_API tensor *tensor_add_(tensor *a, tensor *b);
/* a *= s */
TENSOR_API tensor *tensor_mul_scalar_(tensor *a, double s);
/* dst[...] = src (broadcast, converted to dst's dtype) */
TENSOR_API tensor *tensor_copy_(tensor *dst, tensor *src);
/* every element of a = value */
TENSOR_API tensor *tensor_fill_(tensor *a, double value);
/* every element of a = 0 */
TENSOR_API tensor *tensor_zero_(tensor *a);

/* -- REDUCE ops -- */
/* sum over dim (ints and bool sum to i64) */
TENSOR_API tensor *tensor_sum(tensor *t, int dim, bool keepdim);
/* sum of every element (0-dim) */
TENSOR_API tensor *tensor_sum_all(tensor *t);
/* sum over several dims */
TENSOR_API tensor *tensor_sum_dims(tensor *t, int n, const int *dims, bool keepdim);
/* mean over dim (floating dtypes) */
TENSOR_API tensor *tensor_mean(tensor *t, int dim, bool keepdim);
/* mean of every element (0-dim) */
TENSOR_API tensor *tensor_mean_all(tensor *t);
/* mean over several dims */
TENSOR_API tensor *tensor_mean_dims(tensor *t, int n, const int *dims, bool keepdim);
/* product over dim */
TENSOR_API tensor *tensor_prod(tensor *t, int dim, bool keepdim);
/* maximum over dim (values) */
TENSOR_API tensor *tensor_max(tensor *t, int dim, bool keepdim);
/* maximum of every element (0-dim) */
TENSOR_API tensor *tensor_max_all(tensor *t);
/* minimum over dim (values) */
TENSOR_API tensor *tensor_min(tensor *t, int dim, bool keepdim);
/* minimum of every element (0-dim) */
TENSOR_API tensor *tensor_min_all(tensor *t);
/* index of the first maximum over dim (i64) */
TENSOR_API tensor *tensor_argmax(tensor *t, int dim, bool keepdim);
/* index of the first minimum over dim (i64) */
TENSOR_API tensor *tensor_argmin(tensor *t, int dim, bool keepdim);
/* variance over dim, divided by N - correction */
TENSOR_API tensor *tensor_var(tensor *t, int dim, int64_t correction, bool keepdim);
/* standard deviation over dim, divided by N - correction */
TENSOR_API tensor *tensor_std(tensor *t, int dim, int64_t correction, bool keepdim);
/* log(sum(exp(t))) over dim, stable */
TENSOR_API tensor *tensor_logsumexp(tensor *t, int dim, bool keepdim);
/* p-norm over dim (p may be INFINITY) */
TENSOR_API tensor *tensor_norm(tensor *t, double p, int dim, bool keepdim);
/* cumulative sum along dim */
TENSOR_API tensor *tensor_cumsum(tensor *t, int dim);
/* true if every element is non-zero (0-dim bool) */
TENSOR_API tensor *tensor_all(tensor *t);
/* true if some element is non-zero (0-dim bool) */
TENSOR_API tensor *tensor_any(tensor *t);

/* -- SHAPE ops -- */
/* a view when strides allow, else a copy; one -1 allowed */
TENSOR_API tensor *tensor_reshape(tensor *t, int ndim, const int64_t *shape);
/* a view with a new shape; error if the strides do not allow it */
TENSOR_API tensor *tensor_view(tensor *t, int ndim, const int64_t *shape);
/* view with dims reordered */
TENSOR_API tensor *tensor_permute(tensor *t, int ndim, const int *dims);
/* view with two dims swapped */
TENSOR_API tensor *tensor_transpose(tensor *t, int dim0, int dim1);
/* broadcast view (-1 keeps a size) */
TENSOR_API tensor *tensor_expand(tensor *t, int ndim, const int64_t *shape);
/* view without dim if its size is 1 */
TENSOR_API tensor *tensor_squeeze(tensor *t, int dim);
/* view with a new dim of size 1 at dim */
TENSOR_API tensor *tensor_unsqueeze(tensor *t, int dim);
/* dims start_dim..end_dim merged into one (reshape) */
TENSOR_API tensor *tensor_flatten(tensor *t, int start_dim, int end_dim);
/* view of start:end:step along dim (Python slice rules, step > 0) */
TENSOR_API tensor *tensor_slice(tensor *t, int dim, int64_t start, int64_t end, int64_t step);
/* view of one index along dim, dim removed */
TENSOR_API tensor *tensor_select(tensor *t, int dim, int64_t index);
/* concatenation along dim */
TENSOR_API tensor *tensor_cat(int n, tensor *const *ts, int dim);
/* concatenation along a new dim */
TENSOR_API tensor *tensor_stack(int n, tensor *const *ts, int dim);
/* copy with dim reversed */
TENSOR_API tensor *tensor_flip(tensor *t, int dim);
/* tiled copy (torch.Tensor.repeat) */
TENSOR_API tensor *tensor_repeat(tensor *t, int ndim, const int64_t *repeats);
/* constant padding of the last dims, pads = (left, right, top, bottom, ...) */
TENSOR_API tensor *tensor_pad(tensor *t, int npad, const int64_t *pads, double value);
/* lower triangle of the last two dims, rest 0 */
TENSOR_API tensor *tensor_tril(tensor *t, int64_t diagonal);
/* upper triangle of the last two dims, rest 0 */
TENSOR_API tensor *tensor_triu(tensor *t, int64_t diagonal);

/* -- INDEX ops -- */
/* out[i][j] = t[index[i][j]][j] along dim (torch.gather) */
TENSOR_API tensor *tensor_gather(tensor *t, int dim, tensor *index);
/* copy of t with src added at index along dim */
TENSOR_API tensor *tensor_scatter_add(tensor *t, int dim, tensor *index, tensor *src);
/* entries of t at the 1-D index along dim */
TENSOR_API tensor *tensor_index_select(tensor *t, int dim, tensor *index);
/* copy of t with value where mask (broadcast) is true */
TENSOR_API tensor *tensor_masked_fill(tensor *t, tensor *mask, double value);
/* i64 one-hot encoding, new last dim (num_classes -1: max + 1) */
TENSOR_API tensor *tensor_one_hot(tensor *indices, int64_t num_classes);
/* converted copy (a new handle to t if the dtype is the same) */
TENSOR_API tensor *tensor_to_dtype(tensor *t, tensor_dtype dtype);
/* copy on another device (a new handle to t if already there) */
TENSOR_API tensor *tensor_to_device(tensor *t, tensor_device device);

/* -- LINALG ops -- */
/* matrix product, NumPy/PyTorch semantics with batch broadcasting */
TENSOR_API tensor *tensor_matmul(tensor *a, tensor *b);
/* x @ weight^T + bias; weight [out, in]; bias may be NULL */
TENSOR_API tensor *tensor_linear(tensor *x, tensor *weight, tensor *bias);

/* -- NN ops -- */
/* softmax along dim */
TENSOR_API tensor *tensor_softmax(tensor *t, int dim);
/* log of softmax along dim, stable */
TENSOR_API tensor *tensor_log_softmax(tensor *t, int dim);
/* normalization over the last dim; weight, bias may be NULL */
TENSOR_API tensor *tensor_layer_norm(tensor *x, tensor *weight, tensor *bias, double eps);
/* x / sqrt(mean(x^2) + eps) * weight over the last dim; weight may be NULL */
TENSOR_API tensor *tensor_rms_norm(tensor *x, tensor *weight, double eps);
/* 2-D convolution, x [N, C, H, W], w [O, C/groups, kH, kW] */
TENSOR_API tensor *tensor_conv2d(tensor *x, tensor *w, tensor *bias, int stride, int padding, int dilation, int groups);
/* 1-D convolution, x [N, C, L], w [O, C/groups, k] */
TENSOR_API tensor *tensor_conv1d(tensor *x, tensor *w, tensor *bias, int stride, int padding, int dilation, int groups);
/* 2-D max pooling (stride 0: kernel) */
TENSOR_API tensor *tensor_max_pool2d(tensor *x, int kernel, int stride, int padding);
/* 2-D average pooling, padding counted (stride 0: kernel) */
TENSOR_API tensor *tensor_avg_pool2d(tensor *x, int kernel, int stride, int padding);
/* rows of weight [V, D] at integer indices */
TENSOR_API tensor *tensor_embedding(tensor *weight, tensor *indices);
/* zeroes elements with probability p and scales the rest by 1/(1-p) when training */
TENSOR_API tensor *tensor_dropout(tensor *x, double p, bool training);
/* softmax(q k^T / sqrt(d) + mask) v; bool mask: true keeps */
TENSOR_API tensor *tensor_scaled_dot_product_attention(tensor *q, tensor *k, tensor *v, tensor *mask, bool is_causal);

/* -- LOSS ops -- */
/* mean cross-entropy of logits [N, C] against class indices [N] */
TENSOR_API tensor *tensor_cross_entropy(tensor *logits, tensor *targets);
/* mean negative log-likelihood of class indices */
TENSOR_API tensor *tensor_nll_loss(tensor *log_probs, tensor *targets);
/* mean squared error */
TENSOR_API tensor *tensor_mse_loss(tensor *input, tensor *target);
/* mean binary cross-entropy on logits, stable */
TENSOR_API tensor *tensor_binary_cross_entropy_with_logits(tensor *logits, tensor *targets);

#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* TENSOR_H */
/* ==== end generator/parts/api.h ==== */
/* ==== begin generator/parts/core.h ==== */
// >>impl ---------------------------------------------------------------------------------------
#ifdef TENSOR_IMPLEMENTATION
#ifndef TENSOR__IMPLEMENTATION_DONE
#define TENSOR__IMPLEMENTATION_DONE

#include <float.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The fast paths' counts for tensor_test_path_count (TENSOR_TEST_HOOKS builds; nothing otherwise):
   kernels bump theirs with TENSOR__PATH_TAKEN(name), from any thread. */
#define TENSOR__PATHS(X) X(conv_winograd) X(conv_im2col_simd) X(conv_smallk) X(conv_bf16) X(maxpool_fast) X(relu_backward_fused) X(unary_backward_fused) X(optim_simd)
#ifdef TENSOR_TEST_HOOKS
#define TENSOR__PATH_ENUM(name) TENSOR__PATH_##name,
enum { TENSOR__PATHS(TENSOR__PATH_ENUM) TENSOR__N_PATHS };
static int64_t tensor__path_counts[TENSOR__N_PATHS];
#define TENSOR__PATH_TAKEN(name) __atomic_fetch_add(&tensor__path_counts[TENSOR__PATH_##name], 1, __ATOMIC_RELAXED)
#else
#define TENSOR__PATH_TAKEN(name) ((void)0)
#endif

#if defined(TENSOR_MALLOC) && defined(TENSOR_FREE)
#define TENSOR__USER_ALLOCATOR 1 /* storage then comes only from TENSOR_MALLOC (no mmap) */
#elif !defined(TENSOR_MALLOC) && !defined(TENSOR_FREE)
#define TENSOR_MALLOC(n) malloc(n)
#define TENSOR_FREE(p) free(p)
#else
#error "tensor.h: define both TENSOR_MALLOC and TENSOR_FREE, or neither"
#endif

/* Storage blocks of 2 MiB and more are mapped with mmap and marked for transparent huge pages
   (Linux, unless the user supplies the allocator; a strict -std=c99 build without _GNU_SOURCE or
   _DEFAULT_SOURCE does not see MAP_ANONYMOUS and madvise, and uses malloc instead). */
#if defined(__linux__) && !defined(TENSOR__USER_ALLOCATOR)
#include <sys/mman.h>
#include <sys/sysinfo.h>
#endif
#if defined(__linux__) && !defined(TENSOR__USER_ALLOCATOR) && defined(MAP_ANONYMOUS) && defined(MADV_HUGEPAGE)
#define TENSOR__MMAP 1
#else
#define TENSOR__MMAP 0
#endif

/* Under AddressSanitizer the data of cached blocks is poisoned, so a use after tensor_free is still
   reported although the block is not given back. */
#if defined(__SANITIZE_ADDRESS__)
#define TENSOR__ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TENSOR__ASAN 1
#endif
#endif
#ifdef TENSOR__ASAN
#include <sanitizer/asan_interface.h>
#define TENSOR__POISON(p, n) ASAN_POISON_MEMORY_REGION(p, n)
#define TENSOR__UNPOISON(p, n) ASAN_UNPOISON_MEMORY_REGION(p, n)
#else
#define TENSOR__POISON(p, n) ((void)0)
#define TENSOR__UNPOISON(p, n) ((void)0)
#endif

/* Bytes of freed storage the caching allocator keeps for reuse (tensor_empty_cache frees them). */
#ifndef TENSOR_CACHE_LIMIT
#define TENSOR_CACHE_LIMIT ((size_t)1 << 30)
#endif

/* Allocation-failure injection (TENSOR_TEST_HOOKS builds): every place the library asks for memory
   goes through TENSOR__MALLOC or TENSOR__ALLOC_FAILS, so a test can count the requests of a run
   and then fail the k-th one, whether the cache or the system would have served it. */
#ifdef TENSOR_TEST_HOOKS
static int64_t tensor__test_alloc_count, tensor__test_alloc_fail_at;
static int tensor__test_alloc_fails(void) {
    int64_t k = __atomic_add_fetch(&tensor__test_alloc_count, 1, __ATOMIC_RELAXED);
    return k == __atomic_load_n(&tensor__test_alloc_fail_at, __ATOMIC_RELAXED);
}
#define TENSOR__ALLOC_FAILS() tensor__test_alloc_fails()
#else
#define TENSOR__ALLOC_FAILS() 0
#endif
#define TENSOR__MALLOC(n) (TENSOR__ALLOC_FAILS() ? NULL : TENSOR_MALLOC(n))

#ifndef TENSOR_ASSERT
#include <assert.h>
#define TENSOR_ASSERT(x) assert(x)
#endif

#if defined(__cplusplus)
#define TENSOR__THREAD_LOCAL thread_local
#elif defined(_MSC_VER)
#define TENSOR__THREAD_LOCAL __declspec(thread)
#elif defined(__GNUC__) || defined(__clang__)
#define TENSOR__THREAD_LOCAL __thread
#else
#define TENSOR__THREAD_LOCAL _Thread_local
#endif

/* Atomics for what user threads share (>>threads-state): the shared half of reference counts,
   the counts other threads sum, the queues of what other threads freed. GCC and Clang builtins;
   another compiler gets plain accesses (then one user thread at a time). LOAD and STORE are
   relaxed (plain moves on x86 and ARM: the owner's stores to counts other threads read); ADD
   returns the new value with acquire-release order (the last reference's drop sees all others);
   the queue operations and SC accesses are sequentially consistent (a sender and an exiting
   owner must see each other's writes, >>scopes). */
#if defined(__GNUC__) || defined(__clang__)
#define TENSOR__LOAD(p) __atomic_load_n(p, __ATOMIC_RELAXED)
#define TENSOR__LOAD_ACQ(p) __atomic_load_n(p, __ATOMIC_ACQUIRE)
#define TENSOR__STORE(p, v) __atomic_store_n(p, v, __ATOMIC_RELAXED)
#define TENSOR__LOAD_SC(p) __atomic_load_n(p, __ATOMIC_SEQ_CST)
#define TENSOR__STORE_SC(p, v) __atomic_store_n(p, v, __ATOMIC_SEQ_CST)
#define TENSOR__ADD(p, v) __atomic_add_fetch(p, v, __ATOMIC_ACQ_REL)
#define TENSOR__EXCHANGE(p, v) __atomic_exchange_n(p, v, __ATOMIC_SEQ_CST)
#define TENSOR__CAS(p, expected, v) __atomic_compare_exchange_n(p, expected, v, true, __ATOMIC_SEQ_CST, __ATOMIC_RELAXED)
#else
#define TENSOR__LOAD(p) (*(p))
#define TENSOR__LOAD_ACQ(p) (*(p))
#define TENSOR__STORE(p, v) (*(p) = (v))
#define TENSOR__LOAD_SC(p) (*(p))
#define TENSOR__STORE_SC(p, v) (*(p) = (v))
#define TENSOR__ADD(p, v) (*(p) += (v))
#define TENSOR__EXCHANGE(p, v) tensor__exchange_plain((void **)(p), (void *)(v))
#define TENSOR__CAS(p, expected, v) (*(p) == *(expected) ? (*(p) = (v), 1) : (*(expected) = *(p), 0))
static void *tensor__exchange_plain(void **p, void *v) { void *old = *p; *p = v; return old; }
#endif

#if defined(__GNUC__) || defined(__clang__)
#define TENSOR__PRINTF(f, a) __attribute__((format(printf, f, a)))
#define TENSOR__UNUSED __attribute__((unused))
#else
#define TENSOR__PRINTF(f, a)
#define TENSOR__UNUSED
#endif

#ifndef M_PI
#define M_PI 3.14159265358979323846
#endif

#ifdef __cplusplus
extern "C" {
#endif

// >>core ---------------------------------------------------------------------------------------
/* A storage is a refcounted buffer on one device. A tensor is a view of one: dtype, shape, strides
   (in elements) and offset. Each `tensor` struct is one handle: the user owns it, or a scope does,
   or the library does (handles saved by autograd are "internal" and live outside the scopes). */

/* A reference count biased toward the thread that made the object (its owner), for storage and
   graph nodes (>>threads-state has the rules). */
typedef struct {
    struct tensor__thread *owner; /* set before any other thread can see the object */
    int64_t local;                /* references the owner holds: only the owner touches this; once it
                                     reaches 0 the owner's later references count in shared */
    int64_t shared;               /* atomic: 2 per reference another thread holds, + 1 once local is 0 */
} tensor__refs;

typedef struct tensor__storage {
    void *data;
    size_t nbytes;
    tensor__refs refs;      /* one per handle viewing it */
    tensor_device device;
    int64_t version;        /* bumped by every in-place write; autograd checks saved tensors against it */
    int64_t saved_by_graph; /* views of this storage saved by live autograd nodes, saved on its owner's thread */
    int64_t saved_shared;   /* atomic: the same, saved or released on other threads (may go negative) */
    /* the block that holds this struct and its data (>>memory) */
    struct tensor__storage *next_free; /* the next cached block of the same size class */
    void *raw;                         /* what TENSOR_MALLOC or mmap returned */
    size_t cap;                        /* data bytes the block holds */
    size_t map_len;                    /* mmap'd blocks: the mapping's length; 0 otherwise */
    int cls;                           /* size class; -1: too large to cache */
} tensor__storage;

struct tensor__node; /* an autograd graph node (>>autograd) */

struct tensor {
    tensor__storage *storage;
    int64_t offset;
    int64_t shape[TENSOR_MAX_DIMS];
    int64_t strides[TENSOR_MAX_DIMS];
    int ndim;
    tensor_dtype dtype;
    /* ownership: the list of handles this one sits in (a scope level, or the internal list), in
       the state of the thread that made it (>>threads-state) */
    struct tensor *list_prev, *list_next;
    int list_level; /* 0: root, k: the k-th nested scope, -1: internal (owned by the library) */
    struct tensor__thread *owner;
    struct tensor *remote_next; /* freed by another thread: the next in owner's remote_free */
    /* autograd */
    bool requires_grad;
    struct tensor__node *grad_fn;  /* the node that made this tensor; for a leaf that requires grad,
                                      its accumulator (which holds .grad) */
};

// >>errors -------------------------------------------------------------------------------------
static TENSOR__THREAD_LOCAL char tensor__error_buf[1024];
static TENSOR__THREAD_LOCAL bool tensor__error_set;
static tensor_error_fn tensor__error_handler;
static void *tensor__error_user;

TENSOR_API const char *tensor_last_error(void) { return tensor__error_set ? tensor__error_buf : NULL; }
TENSOR_API void tensor_clear_error(void) { tensor__error_set = false; tensor__error_buf[0] = 0; }
TENSOR_API void tensor_set_error_handler(tensor_error_fn fn, void *user) {
    tensor__error_handler = fn;
    tensor__error_user = user;
}

/* Records "fn: message". The first message is kept until cleared (later ones would usually be
   consequences of it); the handler sees every one. Always returns NULL so callers can
   `return tensor__fail(...)`. */
static TENSOR__PRINTF(2, 3) tensor *tensor__fail(const char *fn, const char *fmt, ...) {
    char msg[1024];
    int n = snprintf(msg, sizeof msg, "%s: ", fn);
    va_list ap;
    va_start(ap, fmt);
    if (n > 0 && (size_t)n < sizeof msg) vsnprintf(msg + n, sizeof msg - (size_t)n, fmt, ap);
    va_end(ap);
    if (!tensor__error_set) {
        memcpy(tensor__error_buf, msg, sizeof msg);
        tensor__error_set = true;
    }
    if (tensor__error_handler) tensor__error_handler(msg, tensor__error_user);
    return NULL;
}

/* A NULL argument: either an earlier call failed (its message stands) or the caller passed NULL. */
static tensor *tensor__null_arg(const char *fn, const char *arg) {
    if (!tensor__error_set) tensor__fail(fn, "argument '%s' is NULL", arg);
    return NULL;
}
#define TENSOR__CHECK_ARG(fn, t) do { if (!(t)) return tensor__null_arg(fn, #t); } while (0)

// >>dtypes -------------------------------------------------------------------------------------
static const char *const tensor__dtype_names[TENSOR_DTYPE_COUNT] = {
    "float32", "float64", "float16", "bfloat16", "int32", "int64", "uint8", "bool"};
static const size_t tensor__dtype_sizes[TENSOR_DTYPE_COUNT] = {4, 8, 2, 2, 4, 8, 1, 1};

static bool tensor__dtype_valid(tensor_dtype d) { return (unsigned)d < TENSOR_DTYPE_COUNT; }
static bool tensor__is_float(tensor_dtype d) { return d == TENSOR_F32 || d == TENSOR_F64 || d == TENSOR_F16 || d == TENSOR_BF16; }
static bool tensor__is_int(tensor_dtype d) { return d == TENSOR_I32 || d == TENSOR_I64 || d == TENSOR_U8; }

TENSOR_API const char *tensor_dtype_name(tensor_dtype d) { return tensor__dtype_valid(d) ? tensor__dtype_names[d] : "invalid"; }
TENSOR_API size_t tensor_dtype_size(tensor_dtype d) { return tensor__dtype_valid(d) ? tensor__dtype_sizes[d] : 0; }

/* torch.promote_types. Rows and columns in enum order: f32 f64 f16 bf16 i32 i64 u8 bool. */
static const unsigned char tensor__promotion[TENSOR_DTYPE_COUNT][TENSOR_DTYPE_COUNT] = {
    /* f32  */ {TENSOR_F32, TENSOR_F64, TENSOR_F32, TENSOR_F32, TENSOR_F32, TENSOR_F32, TENSOR_F32, TENSOR_F32},
    /* f64  */ {TENSOR_F64, TENSOR_F64, TENSOR_F64, TENSOR_F64, TENSOR_F64, TENSOR_F64, TENSOR_F64, TENSOR_F64},
    /* f16  */ {TENSOR_F32, TENSOR_F64, TENSOR_F16, TENSOR_F32, TENSOR_F16, TENSOR_F16, TENSOR_F16, TENSOR_F16},
    /* bf16 */ {TENSOR_F32, TENSOR_F64, TENSOR_F32, TENSOR_BF16, TENSOR_BF16, TENSOR_BF16, TENSOR_BF16, TENSOR_BF16},
    /* i32  */ {TENSOR_F32, TENSOR_F64, TENSOR_F16, TENSOR_BF16, TENSOR_I32, TENSOR_I64, TENSOR_I32, TENSOR_I32},
    /* i64  */ {TENSOR_F32, TENSOR_F64, TENSOR_F16, TENSOR_BF16, TENSOR_I64, TENSOR_I64, TENSOR_I64, TENSOR_I64},
    /* u8   */ {TENSOR_F32, TENSOR_F64, TENSOR_F16, TENSOR_BF16, TENSOR_I32, TENSOR_I64, TENSOR_U8, TENSOR_U8},
    /* bool */ {TENSOR_F32, TENSOR_F64, TENSOR_F16, TENSOR_BF16, TENSOR_I32, TENSOR_I64, TENSOR_U8, TENSOR_BOOL},
};

TENSOR_API tensor_dtype tensor_promote_types(tensor_dtype a, tensor_dtype b) {
    if (!tensor__dtype_valid(a) || !tensor__dtype_valid(b)) {
        tensor__fail("tensor_promote_types", "invalid dtype %d or %d", (int)a, (int)b);
        return TENSOR_F32;
    }
    return (tensor_dtype)tensor__promotion[a][b];
}

static int tensor__category(tensor_dtype d) { return d == TENSOR_BOOL ? 0 : tensor__is_int(d) ? 1 : 2; }

/* PyTorch's result_type for tensors: dimensioned operands decide within a category; a 0-dim operand
   only matters when its category (bool < int < float) is higher than the dimensioned ones'. */
static tensor_dtype tensor__result_type(int n, tensor *const *ts) {
    int have_dim = 0, have_zero = 0;
    tensor_dtype dim_t = TENSOR_BOOL, zero_t = TENSOR_BOOL;
    for (int i = 0; i < n; i++) {
        if (!ts[i]) continue;
        if (ts[i]->ndim > 0) { dim_t = have_dim ? (tensor_dtype)tensor__promotion[dim_t][ts[i]->dtype] : ts[i]->dtype; have_dim = 1; }
        else { zero_t = have_zero ? (tensor_dtype)tensor__promotion[zero_t][ts[i]->dtype] : ts[i]->dtype; have_zero = 1; }
    }
    if (!have_dim) return zero_t;
    if (!have_zero) return dim_t;
    if (tensor__category(zero_t) > tensor__category(dim_t)) return (tensor_dtype)tensor__promotion[dim_t][zero_t];
    return dim_t;
}

/* f16 and bf16 <-> f32, round to nearest even. */
static float tensor__bits_to_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint32_t tensor__f32_to_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }

static float tensor__f16_to_f32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, exp = (h >> 10) & 0x1f, man = h & 0x3ff;
    if (exp == 0x1f) return tensor__bits_to_f32(sign | 0x7f800000u | (man << 13));   /* inf, NaN */
    if (exp == 0) {                                                                   /* zero, subnormal */
        float v = (float)man * (1.0f / 16777216.0f);                                    /* man * 2^-24 */
        return sign ? -v : v;
    }
    return tensor__bits_to_f32(sign | ((exp + 112) << 23) | (man << 13));
}

static uint16_t tensor__f32_to_f16(float f) {
    uint32_t u = tensor__f32_to_bits(f), sign = (u >> 16) & 0x8000;
    uint32_t a = u & 0x7fffffffu;
    if (a >= 0x7f800000u) return (uint16_t)(sign | 0x7c00 | (a > 0x7f800000u ? 0x200 | ((a >> 13) & 0x3ff) : 0));
    if (a >= 0x477ff000u) return (uint16_t)(sign | 0x7c00); /* rounds to >= 65520: inf */
    if (a < 0x38800000u) {                                  /* below 2^-14: subnormal or zero */
        float v = tensor__bits_to_f32(a) * 16777216.0f;      /* exact scaling: value in units of 2^-24 */
        uint32_t m = (uint32_t)v;
        float rem = v - (float)m;
        if (rem > 0.5f || (rem == 0.5f && (m & 1))) m++;
        return (uint16_t)(sign | m);
    }
    uint32_t r = a - 0x38000000u; /* rebias exponent 127 -> 15 */
    uint32_t h = r >> 13, low = r & 0x1fff;
    if (low > 0x1000 || (low == 0x1000 && (h & 1))) h++;
    return (uint16_t)(sign | h);
}

static float tensor__bf16_to_f32(uint16_t b) { return tensor__bits_to_f32((uint32_t)b << 16); }
static uint16_t tensor__f32_to_bf16(float f) {
    uint32_t u = tensor__f32_to_bits(f);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40); /* quiet NaN */
    u += 0x7fff + ((u >> 16) & 1);
    return (uint16_t)(u >> 16);
}

/* double -> integer without undefined behaviour: NaN gives 0, out-of-range saturates. */
static int64_t tensor__double_to_i64(double v) {
    if (v != v) return 0;
    if (v >= 9223372036854775807.0) return INT64_MAX;
    if (v <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)v;
}

/* Generic loads and stores: the reference path of every kernel. Integer values narrow like C's
   conversion on two's-complement machines (wrap), defined here through unsigned arithmetic. */
static double tensor__load_f64(const char *p, tensor_dtype d) {
    switch (d) {
    case TENSOR_F32: { float v; memcpy(&v, p, 4); return v; }
    case TENSOR_F64: { double v; memcpy(&v, p, 8); return v; }
    case TENSOR_F16: { uint16_t v; memcpy(&v, p, 2); return tensor__f16_to_f32(v); }
    case TENSOR_BF16: { uint16_t v; memcpy(&v, p, 2); return tensor__bf16_to_f32(v); }
    case TENSOR_I32: { int32_t v; memcpy(&v, p, 4); return v; }
    case TENSOR_I64: { int64_t v; memcpy(&v, p, 8); return (double)v; }
    case TENSOR_U8: return *(const uint8_t *)p;
    case TENSOR_BOOL: return *(const uint8_t *)p != 0;
    }
    return 0;
}

static int64_t tensor__load_i64(const char *p, tensor_dtype d) {
    switch (d) {
    case TENSOR_I32: { int32_t v; memcpy(&v, p, 4); return v; }
    case TENSOR_I64: { int64_t v; memcpy(&v, p, 8); return v; }
    case TENSOR_U8: return *(const uint8_t *)p;
    case TENSOR_BOOL: return *(const uint8_t *)p != 0;
    default: return tensor__double_to_i64(tensor__load_f64(p, d));
    }
}

static void tensor__store_i64(char *p, tensor_dtype d, int64_t v) {
    switch (d) {
    case TENSOR_I32: { int32_t w = (int32_t)(uint32_t)(uint64_t)v; memcpy(p, &w, 4); return; }
    case TENSOR_I64: memcpy(p, &v, 8); return;
    case TENSOR_U8: *(uint8_t *)p = (uint8_t)(uint64_t)v; return;
    case TENSOR_BOOL: *(uint8_t *)p = v != 0; return;
    case TENSOR_F32: { float w = (float)v; memcpy(p, &w, 4); return; }
    case TENSOR_F64: { double w = (double)v; memcpy(p, &w, 8); return; }
    case TENSOR_F16: { uint16_t w = tensor__f32_to_f16((float)v); memcpy(p, &w, 2); return; }
    case TENSOR_BF16: { uint16_t w = tensor__f32_to_bf16((float)v); memcpy(p, &w, 2); return; }
    }
}

static void tensor__store_f64(char *p, tensor_dtype d, double v) {
    switch (d) {
    case TENSOR_F32: { float w = (float)v; memcpy(p, &w, 4); return; }
    case TENSOR_F64: memcpy(p, &v, 8); return;
    case TENSOR_F16: { uint16_t w = tensor__f32_to_f16((float)v); memcpy(p, &w, 2); return; }
    case TENSOR_BF16: { uint16_t w = tensor__f32_to_bf16((float)v); memcpy(p, &w, 2); return; }
    case TENSOR_BOOL: *(uint8_t *)p = v != 0; return; /* NaN is true, as in PyTorch */
    default: tensor__store_i64(p, d, tensor__double_to_i64(v)); return;
    }
}

// >>memory -------------------------------------------------------------------------------------
/* Buffers for kernels' scratch: 64-byte aligned, the real block start kept just before the
   returned pointer. Plain TENSOR__MALLOC/TENSOR_FREE: kernels may call these from pool workers. */
static void *tensor__alloc_aligned(size_t n) {
    if (n > SIZE_MAX - 64 - sizeof(void *)) return NULL;
    char *raw = (char *)TENSOR__MALLOC(n + 64 + sizeof(void *));
    if (!raw) return NULL;
    uintptr_t a = ((uintptr_t)(raw + sizeof(void *)) + 63) & ~(uintptr_t)63;
    ((void **)a)[-1] = raw;
    return (void *)a;
}
static void tensor__free_aligned(void *p) { if (p) TENSOR_FREE(((void **)p)[-1]); }

/* The caching storage allocator. A storage is one block: its tensor__storage struct, then (64-byte
   aligned) its data. A released block goes to the free list of its size class and the next storage
   of that class takes it back, so an op that allocates its output in a training loop reuses last
   step's block: no malloc, no fresh pages to fault in, no zeroing by the kernel. Size classes:
   powers of two up to 4 KiB, then four per octave (at most 25% slack). Blocks of 2 MiB and more are
   mmap'd and marked MADV_HUGEPAGE on Linux (one fault per 2 MiB instead of 512). At most
   TENSOR_CACHE_LIMIT bytes wait in the cache; beyond that a released block is freed.
   tensor_live_bytes counts storage in use, not cached blocks.
   Threads: each user thread has free lists of its own (in its tensor__thread, below), so the hot
   path takes no lock; a block goes to the lists of the thread that releases it. A thread keeps at
   most its share of TENSOR_CACHE_LIMIT: the limit divided by the threads using the library (all
   of it in a single-threaded program). One shared cache under a spin lock was measured too: two
   uncontended atomic exchanges per op (a block taken, one given back), about 1 ns of the op
   overhead here, within the noise; but the design wants no lock on the hot path, and threads
   making tensors at once would contend on it. Kernels that run on pool workers through
   tensor__parallel_for only read and write their operands and allocate scratch with
   tensor__alloc_aligned. */
#define TENSOR__BLOCK_HEADER 128 /* sizeof(tensor__storage) rounded up to the data alignment */
#define TENSOR__N_CLASSES 160
#define TENSOR__HUGE ((size_t)2 << 20)

// >>threads-state ------------------------------------------------------------------------------
/* Several user threads may call the library at once, each with its own tensors.
   Per thread (a tensor__thread, made on the thread's first call): the scope stack and the handles
   its scopes own (and its internal list, handles the library owns for it), its caches of handle
   structs, storage blocks and graph nodes, its autograd release worklist, its random generator and
   its live counts. Only its own thread reads or writes these, so no op takes a lock. Also per
   thread, as thread-locals: the last error, grad mode, the pool's nesting flag.
   Shared, and how:
   - storage and graph nodes (a weight several threads read gets views and graph edges from each):
     biased reference counts (Choi et al., PACT 2018; CPython's free-threaded build has them). The
     thread that made an object (its owner) counts its own references in `local`, plain memory;
     other threads count theirs in `shared`, atomically. The rule that makes this exact: a
     reference is dropped on the thread that took it. A handle takes its references (storage, graph
     node) when it is made and drops them when it is released, on its owner's thread: tensor_free
     from another thread only sends the handle to its owner's `remote_free`, and the owner releases
     it at its next handle, scope end or count (tensor__drain). A node takes its references (its
     edges) when it is recorded and drops them when it is destroyed, on its owner's thread: the
     last reference dropped elsewhere sends the node to its owner's `remote_nodes`. So neither half
     goes negative; when `local` reaches 0 the owner adds 1 to `shared` and from then on counts its
     own references there too; whoever brings `shared` to 1 (local done, no reference left) frees
     the object. A single-threaded program only ever takes the plain path.
   - the counts tensor_live_handles and tensor_live_bytes report: per thread (a thread counts what
     it makes and what it frees, so one may go negative), stored atomically, summed over the
     registry.
   - the registry: every state, in a list under a spin lock taken when a thread makes its state or
     ends, by the counts' readers, and by tensor_shutdown, which frees every thread's handles. A
     state outlives its thread: a thread that ends gives its caches back (pthreads builds, >>threads)
     and leaves the handles it kept at its root, valid, for any thread to free; what is then sent to
     it is released at once by the sender, acting as the ended thread under the registry lock
     (tensor__reap); the next thread to start takes the state over.
   - the storage cache's bound (TENSOR_CACHE_LIMIT shared out, >>memory), the default seed (>>rng),
     the thread pool (>>threads), the backward pass's epoch counter (>>autograd): atomics or locks
     of their own. */
typedef struct { tensor *head; } tensor__handle_list;
/* A Philox4x32-10 generator (>>rng): the key, the 64-bit block counter, the block being read, and
   the stream (the counter's third word: generators of different streams never meet). */
typedef struct { uint32_t key[2]; uint64_t counter; uint32_t block[4]; int used; uint32_t stream; } tensor__philox;
#define TENSOR__NODE_LISTS 8 /* node cache lists: one per input count up to TENSOR__MAX_INPUTS (>>autograd checks) */

typedef struct tensor__thread {
    /* >>scopes: levels[0..depth] (level 0 the root), the internal list, freed handle structs */
    tensor__handle_list *levels;
    int depth, levels_cap;
    tensor__handle_list internal;
    tensor *free_handles; /* linked through list_next */
    int64_t n_free_handles;
    /* atomic: what other threads freed of this thread's, for it to release: handles (linked
       through remote_next) and graph nodes (linked through free_next); `pending` is set after a
       send and cleared before a drain, so the hot path checks one word */
    tensor *remote_free;
    struct tensor__node *remote_nodes;
    int pending;
    /* >>memory: the storage cache */
    tensor__storage *free_blocks[TENSOR__N_CLASSES];
    size_t cached_bytes;
    /* the counts, stored atomically by this thread only */
    int64_t live_handles, live_bytes;
    /* >>autograd: freed nodes by input count; the worklist of nodes to destroy */
    struct tensor__node *node_cache[TENSOR__NODE_LISTS];
    int64_t node_cache_n;
    struct tensor__node **release_stack;
    int64_t release_n, release_cap;
    bool releasing;
    /* >>rng: the generator, set up from the default seed on the first draw unless seeded here */
    tensor__philox rng;
    bool rng_seeded;
    /* the registry's */
    uint32_t index; /* its thread's place in the order threads started using the library: the
                       stream of an unseeded generator (a state taken over gets a new one) */
    int exited;     /* atomic (SC): its thread ended; the next new thread takes the state over */
    struct tensor__thread *next;
} tensor__thread;

typedef char tensor__block_header_fits[sizeof(tensor__storage) <= 128 ? 1 : -1]; /* TENSOR__BLOCK_HEADER */

static TENSOR__THREAD_LOCAL tensor__thread *tensor__self; /* NULL until this thread's first call */
static TENSOR__THREAD_LOCAL bool tensor__reaping;         /* acting as ended threads (tensor__reap) */
static tensor__thread *tensor__threads;                   /* the registry */
static int tensor__threads_lock;
static uint32_t tensor__n_starts;
static int tensor__n_running;                             /* states of running threads */
static size_t tensor__cache_share = TENSOR_CACHE_LIMIT;   /* atomic: TENSOR_CACHE_LIMIT / tensor__n_running */
/* atomic: what threads without a state (no memory for one) freed of others' handles and storage */
static int64_t tensor__stateless_handles, tensor__stateless_bytes;

/* The registry's lock: a spin lock, held for a few list steps (the counts' readers, a thread's
   start or end), or while releasing what was sent to ended threads, or for tensor_shutdown. */
static void tensor__registry_lock(void) {
#if defined(__GNUC__) || defined(__clang__)
    while (__atomic_exchange_n(&tensor__threads_lock, 1, __ATOMIC_ACQUIRE))
        while (__atomic_load_n(&tensor__threads_lock, __ATOMIC_RELAXED)) {
        }
#endif
}
static void tensor__registry_unlock(void) {
#if defined(__GNUC__) || defined(__clang__)
    __atomic_store_n(&tensor__threads_lock, 0, __ATOMIC_RELEASE);
#endif
}
/* Under the lock: a thread started or ended. */
static void tensor__running_add(int d) {
    tensor__n_running += d;
    TENSOR__STORE(&tensor__cache_share, TENSOR_CACHE_LIMIT / (size_t)(tensor__n_running > 1 ? tensor__n_running : 1));
}

static void tensor__thread_at_exit(tensor__thread *s); /* >>threads: have tensor__thread_exit(s) run when this thread ends (NULL: nothing) */

/* The calling thread's state: takes over an ended thread's (one with no scope left open) or makes
   one; NULL when there is no memory for it. */
static tensor__thread *tensor__thread_make(void) {
    tensor__thread *s = NULL;
    tensor__registry_lock();
    for (tensor__thread *t = tensor__threads; t && !s; t = t->next)
        if (TENSOR__LOAD_SC(&t->exited) && t->depth == 0) s = t;
    if (s) TENSOR__STORE_SC(&s->exited, 0);
    else if ((s = (tensor__thread *)TENSOR__MALLOC(sizeof *s)) != NULL) {
        memset(s, 0, sizeof *s);
        s->next = tensor__threads;
        tensor__threads = s;
    }
    if (s) {
        s->index = tensor__n_starts++;
        tensor__running_add(1);
    }
    tensor__registry_unlock();
    if (!s) return NULL;
    s->rng_seeded = false;
    tensor__self = s;
    tensor__thread_at_exit(s);
    return s;
}
static tensor__thread *tensor__me(void) {
    tensor__thread *s = tensor__self;
    return s ? s : tensor__thread_make();
}

/* Adds d to the calling thread's count (me: its state, or NULL). */
static void tensor__count_handles(tensor__thread *me, int64_t d) {
    if (me) TENSOR__STORE(&me->live_handles, me->live_handles + d);
    else TENSOR__ADD(&tensor__stateless_handles, d);
}
static void tensor__count_bytes(tensor__thread *me, int64_t d) {
    if (me) TENSOR__STORE(&me->live_bytes, me->live_bytes + d);
    else TENSOR__ADD(&tensor__stateless_bytes, d);
}

/* Biased reference counts: a new object's one reference, its owner's. */
static void tensor__refs_init(tensor__refs *r, tensor__thread *owner) {
    r->owner = owner;
    r->local = 1;
    r->shared = 0;
}
/* One more reference, taken by the calling thread me. */
static inline void tensor__refs_take(tensor__refs *r, tensor__thread *me) {
    if (r->owner == me && r->local > 0) r->local++;
    else TENSOR__ADD(&r->shared, 2);
}
/* Drops one reference me took; true when it was the last (the caller frees the object). When the
   owner drops its last and no other thread holds one, nobody can take one any more (a reference
   is only taken from one held): no read-modify-write then, the usual case. */
static inline bool tensor__refs_drop(tensor__refs *r, tensor__thread *me) {
    if (r->owner == me && r->local > 0)
        return --r->local == 0 && (TENSOR__LOAD_ACQ(&r->shared) == 0 || TENSOR__ADD(&r->shared, 1) == 1);
    return TENSOR__ADD(&r->shared, -2) == 1;
}
/* Whether me holds the only reference (one another thread may not be handed meanwhile). */
static TENSOR__UNUSED bool tensor__refs_sole(tensor__refs *r, tensor__thread *me) {
    return r->owner == me && r->local == 1 && TENSOR__LOAD(&r->shared) == 0;
}

static int tensor__log2_floor(uint64_t v) { /* v > 0 */
#if defined(__GNUC__) || defined(__clang__)
    return 63 - __builtin_clzll(v);
#else
    int r = 0;
    while (v >>= 1) r++;
    return r;
#endif
}

/* The size class of a block of n data bytes and its capacity; -1 (cap n) beyond the classes. */
static int tensor__size_class(size_t n, size_t *cap) {
    if (n <= 64) { *cap = 64; return 0; }
    if (n <= 4096) {
        int k = tensor__log2_floor((uint64_t)(n - 1)) + 1; /* 2^(k-1) < n <= 2^k */
        *cap = (size_t)1 << k;
        return k - 6;
    }
    int k = tensor__log2_floor((uint64_t)(n - 1)); /* 2^k < n <= 2^(k+1) */
    size_t step = (size_t)1 << (k - 2), base = (size_t)1 << k;
    size_t j = (n - base + step - 1) / step;          /* 1..4 quarter steps above 2^k */
    int cls = 7 + (k - 12) * 4 + (int)j - 1;
    if (cls >= TENSOR__N_CLASSES) { *cap = n; return -1; }
    *cap = base + j * step;
    return cls;
}

#if TENSOR__MMAP
/* The machine's RAM plus swap in bytes; SIZE_MAX when unknown. */
static size_t tensor__memory_total(void) {
    struct sysinfo si;
    if (sysinfo(&si) != 0 || si.mem_unit == 0) return SIZE_MAX;
    unsigned long long units = (unsigned long long)si.totalram + si.totalswap;
    return units > SIZE_MAX / si.mem_unit ? SIZE_MAX : (size_t)(units * si.mem_unit);
}
#endif

/* A new block for cap data bytes; NULL when the system has no memory. */
static tensor__storage *tensor__block_new(size_t cap, int cls) {
    if (cap > SIZE_MAX / 2) return NULL;
    tensor__storage *s;
#if TENSOR__MMAP
    if (cap >= TENSOR__HUGE) {
        /* over-map by 2 MiB so the block can start on a huge-page boundary */
        size_t len = (TENSOR__BLOCK_HEADER + cap + TENSOR__HUGE + 4095) & ~(size_t)4095;
        /* more than the machine has: refused now, as Linux's default overcommit would, rather than
           mapped (overcommit_memory=1) and then killed when a fill touches it (1 GiB and up only:
           smaller blocks skip the system call) */
        if (cap >= ((size_t)1 << 30) && len > tensor__memory_total()) return NULL;
        void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (m == MAP_FAILED) return NULL;
        uintptr_t a = ((uintptr_t)m + TENSOR__HUGE - 1) & ~(uintptr_t)(TENSOR__HUGE - 1);
        madvise((void *)a, (len - (a - (uintptr_t)m)) & ~(size_t)4095, MADV_HUGEPAGE); /* advice only: failure is fine */
        s = (tensor__storage *)a;
        s->raw = m;
        s->map_len = len;
        s->cap = cap;
        s->cls = cls;
        s->data = (char *)a + TENSOR__BLOCK_HEADER;
        return s;
    }
#endif
    char *raw = (char *)TENSOR_MALLOC(TENSOR__BLOCK_HEADER + cap + 63); /* tensor__block_get counted the request */
    if (!raw) return NULL;
    s = (tensor__storage *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
    s->raw = raw;
    s->map_len = 0;
    s->cap = cap;
    s->cls = cls;
    s->data = (char *)s + TENSOR__BLOCK_HEADER;
    return s;
}

static void tensor__block_free(tensor__storage *s) {
#if TENSOR__MMAP
    if (s->map_len) { munmap(s->raw, s->map_len); return; }
#endif
    TENSOR_FREE(s->raw);
}

static void tensor__free_handles_clear(tensor__thread *me); /* >>scopes: the cached handle structs */
static void tensor__node_cache_clear(tensor__thread *me);   /* >>autograd: the cached graph nodes */

static void tensor__blocks_clear(tensor__thread *me) {
    for (int c = 0; c < TENSOR__N_CLASSES; c++)
        while (me->free_blocks[c]) {
            tensor__storage *s = me->free_blocks[c];
            me->free_blocks[c] = s->next_free;
            TENSOR__UNPOISON(s->data, s->cap);
            tensor__block_free(s);
        }
    me->cached_bytes = 0;
}

/* Gives the calling thread's cached blocks (and cached handle and graph-node structs) back to the
   system; other threads' caches are theirs (a thread's go back when it exits). */
TENSOR_API void tensor_empty_cache(void) {
    tensor__thread *me = tensor__self;
    if (!me) return;
    tensor__free_handles_clear(me);
    tensor__node_cache_clear(me);
    tensor__blocks_clear(me);
}

/* A block for nbytes of data: a cached one of its size class, or a new one; NULL when out of memory. */
static tensor__storage *tensor__block_get(size_t nbytes) {
    if (TENSOR__ALLOC_FAILS()) return NULL;
    tensor__thread *me = tensor__self; /* NULL (a thread with no state): no cache */
    size_t cap;
    int cls = tensor__size_class(nbytes, &cap);
    tensor__storage *s = cls >= 0 && me ? me->free_blocks[cls] : NULL;
    if (s) {
        me->free_blocks[cls] = s->next_free;
        me->cached_bytes -= s->cap;
        TENSOR__UNPOISON(s->data, s->cap);
        return s;
    }
    s = tensor__block_new(cap, cls);
    if (!s && me && me->cached_bytes) { tensor_empty_cache(); s = tensor__block_new(cap, cls); } /* cached blocks of other sizes may be what is missing */
    return s;
}

/* Back to the cache of me (the calling thread's state, or NULL), or to the system when it does not
   fit in the thread's share of TENSOR_CACHE_LIMIT. */
static inline void tensor__block_put(tensor__thread *me, tensor__storage *s) {
    size_t limit = TENSOR__LOAD(&tensor__cache_share);
    if (me && s->cls >= 0 && me->cached_bytes <= limit && s->cap <= limit - me->cached_bytes) {
        s->next_free = me->free_blocks[s->cls];
        me->free_blocks[s->cls] = s;
        me->cached_bytes += s->cap;
        TENSOR__POISON(s->data, s->cap);
        return;
    }
    tensor__block_free(s);
}

/* Scratch memory of kernels from the same cache (64-byte aligned; NULL when out of memory): large
   temporary buffers then cost no page faults either. Only on a user's thread, like storage:
   code running on pool workers uses tensor__alloc_aligned. */
static TENSOR__UNUSED void *tensor__cache_alloc(size_t n) {
    tensor__storage *s = tensor__block_get(n);
    return s ? s->data : NULL;
}
static TENSOR__UNUSED void tensor__cache_free(void *p) {
    if (p) tensor__block_put(tensor__self, (tensor__storage *)((char *)p - TENSOR__BLOCK_HEADER));
}

static tensor__storage *tensor__storage_init(tensor__storage *s, size_t nbytes, tensor_device device) {
    s->nbytes = nbytes;
    tensor__refs_init(&s->refs, tensor__self);
    s->device = device;
    s->version = 0;
    s->saved_by_graph = 0;
    s->saved_shared = 0;
    s->next_free = NULL;
    tensor__count_bytes(tensor__self, (int64_t)nbytes);
    return s;
}

static tensor__storage *tensor__storage_new(const char *fn, size_t nbytes, tensor_device device) {
    if (device != TENSOR_CPU) return (tensor__storage *)tensor__fail(fn, "device %d storage is not available in this build", (int)device);
    tensor__storage *s = tensor__block_get(nbytes);
    if (!s) return (tensor__storage *)tensor__fail(fn, "out of memory allocating %zu bytes", nbytes);
    return tensor__storage_init(s, nbytes, device);
}

/* Storage over bytes someone else owns (a mapped file, a DLPack producer's buffer): a header block
   of its own, never cached, whose release function runs when the last view of it goes, on
   whichever thread that is. It takes ownership: on failure release runs at once. */
#define TENSOR__CLS_EXTERNAL (-2)
typedef struct { void (*release)(void *ctx); void *ctx; } tensor__external;
static tensor__external *tensor__external_of(tensor__storage *s) { return (tensor__external *)((char *)s + TENSOR__BLOCK_HEADER); }
static TENSOR__UNUSED tensor__storage *tensor__storage_external(const char *fn, void *data, size_t nbytes, tensor_device device, void (*release)(void *), void *ctx) {
    char *raw = (char *)TENSOR__MALLOC(TENSOR__BLOCK_HEADER + sizeof(tensor__external) + 63);
    if (!raw) {
        if (release) release(ctx);
        return (tensor__storage *)tensor__fail(fn, "out of memory allocating a storage header");
    }
    tensor__storage *s = (tensor__storage *)(((uintptr_t)raw + 63) & ~(uintptr_t)63);
    s->raw = raw;
    s->map_len = 0;
    s->cap = 0;
    s->cls = TENSOR__CLS_EXTERNAL;
    s->data = data;
    tensor__external_of(s)->release = release;
    tensor__external_of(s)->ctx = ctx;
    return tensor__storage_init(s, nbytes, device);
}

/* Drops one reference the calling thread took; the last one gives the block back, whichever
   thread drops it (a storage holds no references itself). */
static inline void tensor__storage_release(tensor__thread *me, tensor__storage *s) {
    if (!s || !tensor__refs_drop(&s->refs, me)) return;
    tensor__count_bytes(me, -(int64_t)s->nbytes);
    if (s->cls == TENSOR__CLS_EXTERNAL) {
        tensor__external e = *tensor__external_of(s);
        TENSOR_FREE(s->raw);
        if (e.release) e.release(e.ctx);
        return;
    }
    tensor__block_put(me, s);
}

/* Autograd's saves of a storage's views (>>autograd): counted like references, but only summed. */
static TENSOR__UNUSED void tensor__storage_saved_add(tensor__storage *s, int64_t d) {
    if (s->refs.owner == tensor__self) TENSOR__STORE(&s->saved_by_graph, s->saved_by_graph + d);
    else TENSOR__ADD(&s->saved_shared, d);
}
static TENSOR__UNUSED bool tensor__storage_saved(tensor__storage *s) {
    return TENSOR__LOAD(&s->saved_by_graph) + TENSOR__LOAD(&s->saved_shared) > 0;
}

// >>scopes -------------------------------------------------------------------------------------
/* Handle lists, per thread (in its tensor__thread): level 0 is the root, each tensor_scope_begin
   opens the next level, and the internal list holds handles the library owns (autograd saves,
   .grad). A handle sits in a list of the thread that made it (its owner): only that thread links
   and unlinks, so lists need no lock. Any thread may free a handle: from another thread tensor_free
   counts it gone and sends it to its owner's remote_free, and the owner releases it (unlinks it,
   drops its references) before its next handle, at its next scope end or count (tensor__drain);
   an ended owner's are released by the sender (tensor__reap). tensor_shutdown empties every
   thread's lists. */
static tensor__handle_list *tensor__list_of(tensor__thread *s, int level) { return level < 0 ? &s->internal : &s->levels[level]; }

static bool tensor__levels_reserve(tensor__thread *s, int n) {
    if (n <= s->levels_cap) return true;
    int cap = s->levels_cap ? s->levels_cap * 2 : 16;
    while (cap < n) cap *= 2;
    tensor__handle_list *l = (tensor__handle_list *)TENSOR__MALLOC(sizeof *l * (size_t)cap);
    if (!l) return false;
    for (int i = 0; i < cap; i++) l[i].head = i < s->levels_cap ? s->levels[i].head : NULL;
    if (s->levels) TENSOR_FREE(s->levels);
    s->levels = l;
    s->levels_cap = cap;
    return true;
}

static void tensor__link(tensor *t, int level) {
    tensor__handle_list *l = tensor__list_of(t->owner, level);
    t->list_level = level;
    t->list_prev = NULL;
    t->list_next = l->head;
    if (l->head) l->head->list_prev = t;
    l->head = t;
}

static void tensor__unlink(tensor *t) {
    tensor__handle_list *l = tensor__list_of(t->owner, t->list_level);
    if (t->list_prev) t->list_prev->list_next = t->list_next;
    else l->head = t->list_next;
    if (t->list_next) t->list_next->list_prev = t->list_prev;
    t->list_prev = t->list_next = NULL;
}

/* Freed handle structs wait in their thread's free_handles (linked through list_next) for its next
   tensor__handle_new: most ops make one handle and free one, and a list pop is cheaper than
   malloc + free. */
#define TENSOR__MAX_FREE_HANDLES 4096

static void tensor__free_handles_clear(tensor__thread *me) {
    while (me->free_handles) {
        tensor *t = me->free_handles;
        me->free_handles = t->list_next;
        TENSOR__UNPOISON(t, sizeof *t);
        TENSOR_FREE(t);
    }
    me->n_free_handles = 0;
}

/* A released handle's struct back to its owner's cache (owner's thread only). */
static void tensor__handle_recycle(tensor__thread *me, tensor *t) {
    if (me->n_free_handles < TENSOR__MAX_FREE_HANDLES) {
        t->list_next = me->free_handles;
        me->free_handles = t;
        me->n_free_handles++;
        TENSOR__POISON(t, sizeof *t); /* a use after free stays visible to ASan: all but the link */
        TENSOR__UNPOISON(&t->list_next, sizeof t->list_next);
    } else TENSOR_FREE(t);
}

static void tensor__autograd_release(tensor *t); /* >>autograd: drops t's graph node */
static struct tensor__node *tensor__node_ref(struct tensor__node *n); /* >>autograd: one more reference */
static void tensor__drain_nodes(tensor__thread *me); /* >>autograd: destroys the nodes others sent to me */

/* Releases t, one of the calling thread's handles: unlinks it, drops its references, keeps the struct. */
static inline void tensor__handle_release(tensor__thread *me, tensor *t) {
    tensor__unlink(t);
    tensor__autograd_release(t);
    tensor__storage_release(me, t->storage);
    tensor__handle_recycle(me, t);
}

static bool tensor__pending(tensor__thread *s) { return TENSOR__LOAD_SC(&s->pending) != 0; }

/* Releases what other threads freed of me's (me is the calling thread's state, or an ended
   thread's it acts as). */
static void tensor__drain(tensor__thread *me) {
    while (tensor__pending(me)) {
        TENSOR__STORE_SC(&me->pending, 0);
        tensor *t = (tensor *)TENSOR__EXCHANGE(&me->remote_free, (tensor *)NULL);
        while (t) {
            tensor *next = t->remote_next;
            tensor__handle_release(me, t);
            t = next;
        }
        tensor__drain_nodes(me);
    }
}

static void tensor__thread_flush(tensor__thread *s);

/* Under the registry lock: releases what waits for ended threads (every thread: all), acting as
   each in turn (none runs, and the lock keeps out the others who would act as one and a thread
   that would take one over; `all` is for tensor_shutdown, which no thread may overlap) until
   nothing waits, for releasing can send more. */
static void tensor__drain_all(bool all) {
    tensor__thread *me = tensor__self;
    for (bool again = true; again;) {
        again = false;
        for (tensor__thread *s = tensor__threads; s; s = s->next)
            if ((all || TENSOR__LOAD_SC(&s->exited)) && tensor__pending(s)) { tensor__self = s; tensor__drain(s); again = true; }
    }
    tensor__self = me;
}
static void tensor__reap_locked(void) {
    tensor__drain_all(false);
    tensor__thread *me = tensor__self;
    for (tensor__thread *s = tensor__threads; s; s = s->next)
        if (TENSOR__LOAD_SC(&s->exited)) { tensor__self = s; tensor__thread_flush(s); } /* what releasing cached */
    tensor__self = me;
}
/* Something was sent to an ended thread. Inside a reap (or tensor_shutdown) the running round
   sees it. */
static void tensor__reap(void) {
    if (tensor__reaping) return;
    tensor__reaping = true;
    tensor__registry_lock();
    tensor__reap_locked();
    tensor__registry_unlock();
    tensor__reaping = false;
}

/* Sends t, freed on a thread other than its owner, to its owner to release. The push and the
   check of `exited` pair with an ending owner's store of `exited` and its last drain (both SC):
   one of the two sees the other, so nothing is left behind. */
static void tensor__send_handle(tensor *t) {
    tensor__thread *owner = t->owner;
    tensor *head = (tensor *)TENSOR__LOAD(&owner->remote_free);
    do t->remote_next = head;
    while (!TENSOR__CAS(&owner->remote_free, &head, t));
    TENSOR__STORE_SC(&owner->pending, 1);
    if (TENSOR__LOAD_SC(&owner->exited)) tensor__reap();
}

/* A new handle, in the innermost scope of the calling thread, with no storage yet. */
static tensor *tensor__handle_new(const char *fn) {
    tensor__thread *me = tensor__me();
    if (!me || (me->levels_cap < 1 && !tensor__levels_reserve(me, 1))) return tensor__fail(fn, "out of memory");
    if (TENSOR__ALLOC_FAILS()) return tensor__fail(fn, "out of memory allocating a tensor handle");
    if (TENSOR__LOAD(&me->pending)) tensor__drain(me);
    tensor *t = me->free_handles;
    if (t) { me->free_handles = t->list_next; me->n_free_handles--; TENSOR__UNPOISON(t, sizeof *t); }
    else if (!(t = (tensor *)TENSOR_MALLOC(sizeof *t))) return tensor__fail(fn, "out of memory allocating a tensor handle");
    /* field by field: a memset of the whole struct compiles to `rep stos`, slow to start, and so
       does a loop over both arrays (GCC 12 -O2); one fixed-size memset per array is a few vector
       stores (measured on the bench's overhead loop: autograd fwd 147 -> 139 ns per op) */
    t->storage = NULL;
    t->offset = 0;
    memset(t->shape, 0, sizeof t->shape);
    memset(t->strides, 0, sizeof t->strides);
    t->ndim = 0;
    t->dtype = TENSOR_F32;
    t->requires_grad = false;
    t->grad_fn = NULL;
    t->owner = me;
    tensor__link(t, me->depth);
    tensor__count_handles(me, 1);
    return t;
}

TENSOR_API void tensor_free(tensor *t) {
    if (!t) return;
    tensor__thread *me = tensor__self;
    if (t->owner == me) {
        tensor__count_handles(me, -1);
        tensor__handle_release(me, t);
        return;
    }
    tensor__count_handles(tensor__me(), -1); /* another thread's: gone from the counts now */
    tensor__send_handle(t);
}

/* Moves t to the internal list: the library owns it now (saved for backward, a .grad). t is one
   of the calling thread's handles. */
static TENSOR__UNUSED tensor *tensor__make_internal(tensor *t) {
    if (t && t->list_level >= 0) { tensor__unlink(t); tensor__link(t, -1); }
    return t;
}

/* Opens one more scope level; false, with an error, when there is no memory for it. */
static bool tensor__scope_push(const char *fn) {
    tensor__thread *me = tensor__me();
    if (!me || !tensor__levels_reserve(me, me->depth + 2)) { tensor__fail(fn, "out of memory opening a scope"); return false; }
    me->depth++;
    me->levels[me->depth].head = NULL;
    return true;
}

/* A tensor_scope_begin that failed still gets its tensor_scope_end from the caller, and that end
   must not close (and free) the enclosing scope. Each failed open leaves the depth it happened at
   here; an end at that depth closes the failed open, an end deeper down closes a real scope
   opened after it. Handles made meanwhile belong to the enclosing scope. */
#define TENSOR__MAX_FAILED_SCOPES 64
static TENSOR__THREAD_LOCAL int tensor__failed_scope_depth[TENSOR__MAX_FAILED_SCOPES];
static TENSOR__THREAD_LOCAL int tensor__n_failed_scopes;

TENSOR_API void tensor_scope_begin(void) {
    if (tensor__scope_push("tensor_scope_begin")) return;
    int depth = tensor__self ? tensor__self->depth : 0;
    if (tensor__n_failed_scopes < TENSOR__MAX_FAILED_SCOPES) tensor__failed_scope_depth[tensor__n_failed_scopes++] = depth;
}

TENSOR_API void tensor_scope_end(void) {
    tensor__thread *me = tensor__self;
    int depth = me ? me->depth : 0;
    if (tensor__n_failed_scopes > 0 && tensor__failed_scope_depth[tensor__n_failed_scopes - 1] == depth) {
        tensor__n_failed_scopes--;
        return;
    }
    if (depth == 0) { tensor__fail("tensor_scope_end", "no scope is open (unbalanced tensor_scope_end)"); return; }
    tensor__drain(me); /* a handle another thread freed must not be freed again here */
    while (me->levels[depth].head) tensor_free(me->levels[depth].head);
    me->depth--;
}

TENSOR_API tensor *tensor_keep(tensor *t) {
    if (!t) return NULL;
    if (t->owner != tensor__self) return tensor__fail("tensor_keep", "the tensor belongs to another thread (only the thread that made a handle moves it between its scopes)");
    if (t->list_level > 0) {
        int to = t->list_level - 1;
        tensor__unlink(t);
        tensor__link(t, to);
    }
    return t;
}

/* A state's caches back to the system (its thread's exit, tensor_shutdown). */
static void tensor__thread_flush(tensor__thread *s) {
    tensor__free_handles_clear(s);
    tensor__node_cache_clear(s);
    tensor__blocks_clear(s);
    if (s->release_stack) TENSOR_FREE(s->release_stack);
    s->release_stack = NULL;
    s->release_n = s->release_cap = 0;
}

/* A thread with a state ends (>>threads calls this on it): its caches go back; the handles it
   still owns stay, for any thread to free, until a new thread takes the state over or
   tensor_shutdown. Marking it ended and draining it last pair with tensor__send_handle. */
static TENSOR__UNUSED void tensor__thread_exit(tensor__thread *s) {
    tensor__self = s;
    tensor__drain(s);
    tensor__registry_lock();
    TENSOR__STORE_SC(&s->exited, 1);
    tensor__running_add(-1);
    tensor__reaping = true;
    tensor__reap_locked(); /* drains s too, and flushes its caches */
    tensor__reaping = false;
    tensor__registry_unlock();
    tensor__self = NULL;
}

static void tensor__rng_reset(void);
static void tensor__runtime_shutdown(void);

/* Frees every thread's handles, acting as each thread's state in turn so its own take the owner's
   path. First every graph goes: each handle drops its graph node (an internal one moves to its
   root list, as dropping can free other internal ones: saved inputs, gradients), so no node is
   left to free a handle twice after the sweep has freed it; then every handle goes. The states of
   ended threads and the calling thread's are freed too (its next call makes a new one: the first
   again, stream 0 of the generator, when no other thread has one); those of other running threads
   stay, empty. */
TENSOR_API void tensor_shutdown(void) {
    tensor__thread *me = tensor__self;
    tensor__registry_lock();
    tensor__reaping = true;
    tensor__drain_all(true);
    for (tensor__thread *s = tensor__threads; s; s = s->next) {
        tensor__self = s;
        for (int level = s->depth; level >= 0 && s->levels; level--)
            for (tensor *t = s->levels[level].head; t; t = t->list_next) tensor__autograd_release(t); /* frees internal handles only */
        while (s->internal.head) {
            tensor *t = s->internal.head;
            tensor__unlink(t);
            tensor__link(t, 0); /* a state with internal handles has made levels[0] */
            tensor__autograd_release(t);
        }
    }
    tensor__drain_all(true);
    for (tensor__thread *s = tensor__threads; s; s = s->next) {
        tensor__self = s;
        for (int level = s->depth; level >= 0 && s->levels; level--)
            while (s->levels[level].head) tensor_free(s->levels[level].head);
    }
    tensor__drain_all(true);
    tensor__thread **at = &tensor__threads;
    while (*at) {
        tensor__thread *s = *at;
        tensor__self = s;
        tensor__thread_flush(s);
        if (s->levels) TENSOR_FREE(s->levels);
        s->levels = NULL;
        s->levels_cap = s->depth = 0;
        s->rng_seeded = false;
        TENSOR__STORE(&s->live_handles, 0);
        TENSOR__STORE(&s->live_bytes, 0);
        if (s == me) tensor__running_add(-1);
        if (s == me || TENSOR__LOAD_SC(&s->exited)) { *at = s->next; TENSOR_FREE(s); }
        else at = &s->next;
    }
    if (!tensor__threads) tensor__n_starts = 0;
    TENSOR__STORE(&tensor__stateless_handles, 0);
    TENSOR__STORE(&tensor__stateless_bytes, 0);
    tensor__self = NULL;
    tensor__reaping = false;
    tensor__registry_unlock();
    tensor__thread_at_exit(NULL); /* nothing left to give back when this thread ends */
    tensor__n_failed_scopes = 0;
    tensor__runtime_shutdown();
    tensor_empty_cache();
    tensor_clear_error();
}

/* Sums a count over every thread's state: exact for what the calling thread made and freed (it
   first releases what others freed of its), and for other threads' when they are not busy. */
static int64_t tensor__count_sum(bool bytes) {
    if (tensor__self) tensor__drain(tensor__self);
    tensor__registry_lock();
    int64_t n = TENSOR__LOAD(bytes ? &tensor__stateless_bytes : &tensor__stateless_handles);
    for (tensor__thread *s = tensor__threads; s; s = s->next) n += TENSOR__LOAD(bytes ? &s->live_bytes : &s->live_handles);
    tensor__registry_unlock();
    return n;
}
TENSOR_API int64_t tensor_live_handles(void) { return tensor__count_sum(false); }
TENSOR_API int64_t tensor_live_bytes(void) { return tensor__count_sum(true); }

// >>shapes -------------------------------------------------------------------------------------
/* "[2, 3]" into buf; used by every message that names a shape. */
static TENSOR__UNUSED const char *tensor__shape_str(char *buf, size_t n, int ndim, const int64_t *shape) {
    size_t at = 0;
    at += (size_t)snprintf(buf + at, n - at, "[");
    for (int i = 0; i < ndim && at < n; i++) at += (size_t)snprintf(buf + at, n - at, i ? ", %lld" : "%lld", (long long)shape[i]);
    if (at < n) snprintf(buf + at, n - at, "]");
    return buf;
}
/* The shape of t as text, in one of a few rotating buffers so a message can name several. */
static const char *tensor__shape_of(const tensor *t) {
    static TENSOR__THREAD_LOCAL char bufs[4][160];
    static TENSOR__THREAD_LOCAL int next;
    char *b = bufs[next++ & 3];
    return tensor__shape_str(b, 160, t->ndim, t->shape);
}

/* The bound of every size (PyTorch refuses shapes whose sizes or strides overflow; so do we, with
   room for bytes): a tensor's element count, its strides, each size times its stride and the
   largest element offset a view reaches are all at most TENSOR__MAX_NUMEL, so times an element
   size (8 at most) they still fit in int64. Kernels may multiply the sizes, strides and element
   sizes of an existing tensor freely; whatever makes a new shape or view goes through the checked
   helpers below (tensor__new and tensor__view_of check every tensor they make). */
#define TENSOR__MAX_NUMEL (INT64_MAX / 8)

/* *out = a * b for sizes a, b >= 0; false (and *out untouched) past TENSOR__MAX_NUMEL. The checked
   product every shape-to-count computation uses. */
static bool tensor__size_mul(int64_t a, int64_t b, int64_t *out) {
#if defined(__GNUC__) || defined(__clang__)
    int64_t r; /* no division: views check their strides with this */
    if (a < 0 || b < 0 || __builtin_mul_overflow(a, b, &r) || r > TENSOR__MAX_NUMEL) return false;
    *out = r;
#else
    if (a < 0 || b < 0 || (b && a > TENSOR__MAX_NUMEL / b)) return false;
    *out = a * b;
#endif
    return true;
}
/* *out = a + b for sizes a, b >= 0; false past TENSOR__MAX_NUMEL. */
static bool tensor__size_add(int64_t a, int64_t b, int64_t *out) {
    if (a < 0 || b < 0 || a > TENSOR__MAX_NUMEL - b) return false;
    *out = a + b;
    return true;
}
/* a * b, or INT64_MAX when it overflows (a, b >= 0): for estimates of work, such as m * n * k of
   a GEMM, that only pick a thread count. */
static TENSOR__UNUSED int64_t tensor__work_mul(int64_t a, int64_t b) { return b && a > INT64_MAX / b ? INT64_MAX : a * b; }

/* The product of a shape's sizes with 0 and 1 counted as 1: the size times stride of its first
   dim when contiguous, what its strides need; -1 past TENSOR__MAX_NUMEL. Sizes are >= 0. */
static int64_t tensor__shape_extent(int ndim, const int64_t *shape) {
    int64_t e = 1;
    for (int i = 0; i < ndim; i++)
        if (!tensor__size_mul(e, shape[i] > 1 ? shape[i] : 1, &e)) return -1;
    return e;
}

static TENSOR__UNUSED int64_t tensor__numel_of(int ndim, const int64_t *shape) {
    int64_t n = 1;
    for (int i = 0; i < ndim; i++) n *= shape[i]; /* within the extent of a checked shape */
    return n;
}

/* Checks a shape, given by the user or computed by an op: ndim in range, sizes >= 0, and its
   element count and contiguous strides within TENSOR__MAX_NUMEL (an empty shape such as
   [0, 2^53, 2^58] has no elements, but its strides overflow). Returns the element count, or -1
   with an error naming the shape. */
static int64_t tensor__check_shape(const char *fn, int ndim, const int64_t *shape) {
    if (ndim < 0 || ndim > TENSOR_MAX_DIMS) { tensor__fail(fn, "ndim %d is out of range [0, %d]", ndim, TENSOR_MAX_DIMS); return -1; }
    if (ndim > 0 && !shape) { tensor__fail(fn, "shape is NULL with ndim %d", ndim); return -1; }
    char b[200];
    for (int i = 0; i < ndim; i++)
        if (shape[i] < 0) {
            tensor__fail(fn, "negative size %lld in shape %s", (long long)shape[i], tensor__shape_str(b, sizeof b, ndim, shape));
            return -1;
        }
    if (tensor__shape_extent(ndim, shape) < 0) {
        tensor__fail(fn, "shape %s is too large: its element count or strides overflow (the product of its sizes, a 0 counted as 1, must be below 2^60)",
                     tensor__shape_str(b, sizeof b, ndim, shape));
        return -1;
    }
    return tensor__numel_of(ndim, shape);
}

/* Checks the geometry of a view: its shape as above, a non-negative offset, each |stride| and
   size times |stride| within TENSOR__MAX_NUMEL, and when it has elements the largest element
   offset it reaches too, so no byte offset into it overflows. false with an error naming it. */
static bool tensor__check_view(const char *fn, int ndim, const int64_t *shape, const int64_t *strides, int64_t offset) {
    int64_t numel = tensor__check_shape(fn, ndim, shape);
    if (numel < 0) return false;
    bool ok = offset >= 0 && offset <= TENSOR__MAX_NUMEL;
    int64_t reach = offset, span;
    for (int i = 0; i < ndim && ok; i++) {
        int64_t s = strides[i] < -TENSOR__MAX_NUMEL ? INT64_MAX : strides[i] < 0 ? -strides[i] : strides[i];
        ok = tensor__size_mul(shape[i] > 1 ? shape[i] : 1, s, &span);
        if (ok && numel > 0) ok = tensor__size_mul(shape[i] - 1, s, &span) && tensor__size_add(reach, span, &reach);
    }
    if (!ok) {
        char b[200], c[200];
        tensor__fail(fn, "a view of shape %s with strides %s and offset %lld is too large: its element offsets overflow",
                     tensor__shape_str(b, sizeof b, ndim, shape), tensor__shape_str(c, sizeof c, ndim, strides), (long long)offset);
    }
    return ok;
}

static void tensor__contiguous_strides(int ndim, const int64_t *shape, int64_t *strides) {
    int64_t s = 1; /* no overflow: within the extent of a checked shape */
    for (int i = ndim - 1; i >= 0; i--) { strides[i] = s; s *= shape[i] > 1 ? shape[i] : 1; }
}

/* Wraps a possibly negative dim into [0, ndim); -1 and an error if out of range. A 0-dim tensor
   accepts dims -1 and 0 where PyTorch does (pass ndim 1 for that). */
static int tensor__wrap_dim(const char *fn, int dim, int ndim) {
    if (dim < -ndim || dim >= ndim) {
        tensor__fail(fn, "dim %d is out of range for a tensor of %d dims (expected %d..%d)", dim, ndim, -ndim, ndim - 1);
        return -1;
    }
    return dim < 0 ? dim + ndim : dim;
}

/* Two-way broadcast of shapes a and b (NumPy rules) into out; false and an error if they clash. */
static bool tensor__broadcast_shapes(const char *fn, int na, const int64_t *a, int nb, const int64_t *b, int *nout, int64_t *out) {
    int n = na > nb ? na : nb;
    for (int i = 0; i < n; i++) {
        int64_t da = i < n - na ? 1 : a[i - (n - na)], db = i < n - nb ? 1 : b[i - (n - nb)];
        if (da != db && da != 1 && db != 1) {
            char sa[160], sb[160];
            tensor__fail(fn, "shapes %s and %s cannot be broadcast (size %lld vs %lld at dim %d)",
                         tensor__shape_str(sa, sizeof sa, na, a), tensor__shape_str(sb, sizeof sb, nb, b),
                         (long long)da, (long long)db, i);
            return false;
        }
        out[i] = da == 1 ? db : da;
    }
    *nout = n;
    return true;
}

static TENSOR__UNUSED bool tensor__same_shape(const tensor *a, const tensor *b) {
    if (a->ndim != b->ndim) return false;
    for (int i = 0; i < a->ndim; i++) if (a->shape[i] != b->shape[i]) return false;
    return true;
}

// >>tensors ------------------------------------------------------------------------------------
/* A new contiguous tensor with fresh, uninitialized storage. */
static tensor *tensor__new(const char *fn, int ndim, const int64_t *shape, tensor_dtype dtype, tensor_device device) {
    if (!tensor__dtype_valid(dtype)) return tensor__fail(fn, "invalid dtype %d", (int)dtype);
    int64_t numel = tensor__check_shape(fn, ndim, shape);
    if (numel < 0) return NULL;
    if ((uint64_t)numel > (uint64_t)(SIZE_MAX / 2) / tensor__dtype_sizes[dtype]) { /* its bytes do not fit in size_t (32-bit) */
        char b[200];
        return tensor__fail(fn, "tensor of shape %s (%lld elements of %s) is too large for this machine's size_t", tensor__shape_str(b, sizeof b, ndim, shape),
                            (long long)numel, tensor__dtype_names[dtype]);
    }
    tensor *t = tensor__handle_new(fn);
    if (!t) return NULL;
    t->storage = tensor__storage_new(fn, (size_t)numel * tensor__dtype_sizes[dtype], device);
    if (!t->storage) { tensor_free(t); return NULL; }
    t->ndim = ndim;
    t->dtype = dtype;
    for (int i = 0; i < ndim; i++) t->shape[i] = shape[i];
    tensor__contiguous_strides(ndim, shape, t->strides);
    return t;
}

static tensor *tensor__new_like(const char *fn, const tensor *t, tensor_dtype dtype) {
    return tensor__new(fn, t->ndim, t->shape, dtype, t->storage->device);
}

/* A new handle viewing base's storage with the given geometry. */
static tensor *tensor__view_of(const char *fn, const tensor *base, int ndim, const int64_t *shape, const int64_t *strides, int64_t offset) {
    if (!tensor__check_view(fn, ndim, shape, strides, offset)) return NULL;
    tensor *t = tensor__handle_new(fn);
    if (!t) return NULL;
    t->storage = base->storage;
    tensor__refs_take(&t->storage->refs, t->owner);
    t->offset = offset;
    t->ndim = ndim;
    t->dtype = base->dtype;
    for (int i = 0; i < ndim; i++) { t->shape[i] = shape[i]; t->strides[i] = strides[i]; }
    return t;
}

/* Another handle to the same tensor, autograd identity included (for ops that return their input
   unchanged, as PyTorch's do, and for tensors autograd saves). */
static tensor *tensor__alias(const char *fn, const tensor *t) {
    tensor *a = tensor__view_of(fn, t, t->ndim, t->shape, t->strides, t->offset);
    if (a) { a->grad_fn = tensor__node_ref(t->grad_fn); a->requires_grad = t->requires_grad; }
    return a;
}

/* offset <= TENSOR__MAX_NUMEL (>>shapes): its byte offset fits */
static char *tensor__data(const tensor *t) { return (char *)t->storage->data + t->offset * (int64_t)tensor__dtype_sizes[t->dtype]; }

static bool tensor__contiguous(const tensor *t) {
    if (tensor__numel_of(t->ndim, t->shape) == 0) return true; /* as PyTorch: nothing to lay out */
    int64_t s = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->shape[i] != 1 && t->strides[i] != s) return false;
        s *= t->shape[i];
    }
    return true;
}

TENSOR_API int tensor_ndim(const tensor *t) { return t ? t->ndim : -1; }
TENSOR_API const int64_t *tensor_shape(const tensor *t) { return t ? t->shape : NULL; }
TENSOR_API const int64_t *tensor_strides(const tensor *t) { return t ? t->strides : NULL; }
TENSOR_API int64_t tensor_numel(const tensor *t) { return t ? tensor__numel_of(t->ndim, t->shape) : 0; }
TENSOR_API tensor_dtype tensor_get_dtype(const tensor *t) { return t ? t->dtype : TENSOR_F32; }
TENSOR_API tensor_device tensor_get_device(const tensor *t) { return t ? t->storage->device : TENSOR_CPU; }
TENSOR_API bool tensor_is_contiguous(const tensor *t) { return t && tensor__contiguous(t); }
TENSOR_API bool tensor_shares_storage(const tensor *a, const tensor *b) { return a && b && a->storage == b->storage; }

TENSOR_API int64_t tensor_size(const tensor *t, int dim) {
    if (!t) { tensor__null_arg("tensor_size", "t"); return -1; }
    int d = tensor__wrap_dim("tensor_size", dim, t->ndim);
    return d < 0 ? -1 : t->shape[d];
}

TENSOR_API double tensor_item(tensor *t) {
    if (!t) { tensor__null_arg("tensor_item", "t"); return NAN; }
    if (tensor__numel_of(t->ndim, t->shape) != 1) {
        tensor__fail("tensor_item", "tensor of shape %s has %lld elements, expected 1", tensor__shape_of(t), (long long)tensor__numel_of(t->ndim, t->shape));
        return NAN;
    }
    if (t->storage->device != TENSOR_CPU) { tensor__fail("tensor_item", "tensor is not on the CPU"); return NAN; }
    return tensor__load_f64(tensor__data(t), t->dtype);
}

TENSOR_API void *tensor_data_ptr(tensor *t) {
    if (!t) return tensor__null_arg("tensor_data_ptr", "t");
    if (t->storage->device != TENSOR_CPU) return tensor__fail("tensor_data_ptr", "tensor is on %s, not the CPU", "cuda");
    if (!tensor__contiguous(t)) return tensor__fail("tensor_data_ptr", "tensor of shape %s is not contiguous; call tensor_contiguous first", tensor__shape_of(t));
    return tensor__data(t);
}
/* ==== end generator/parts/core.h ==== */
/* ==== begin generator/parts/threads.h ==== */
// >>threads ------------------------------------------------------------------------------------
/* A persistent thread pool (pthreads; no OpenMP). tensor__parallel_for(n, grain, fn, ctx) splits
   [0, n) into at most one chunk per thread, each of at least `grain` items, runs chunk after chunk
   on the workers and on the calling thread, and returns when all are done. Work of n <= grain runs
   on the calling thread without touching the pool, so small tensors never pay for threads. A call
   made from inside a parallel region, or while another thread holds the pool, also runs inline:
   several user threads share the one pool, whoever takes it (a try-lock, `busy`) runs its job on
   it, the others run theirs on their own thread meanwhile, so jobs never mix and nobody waits.
   Without pthreads (Windows, or TENSOR_NO_THREADS defined) everything runs inline. */
typedef void (*tensor__range_fn)(int64_t begin, int64_t end, void *ctx);

static int tensor__num_threads; /* atomic; 0 until set: then every core */

#if defined(_WIN32) || defined(TENSOR_NO_THREADS)
#define TENSOR__HAVE_THREADS 0
static int tensor__cores(void) { return 1; }
static void tensor__parallel_for(int64_t n, int64_t grain, tensor__range_fn fn, void *ctx) { (void)grain; if (n > 0) fn(0, n, ctx); }
static void tensor__pool_stop(void) {}
#define TENSOR__ATOMIC_SET(p, v) (*(p) = (v))
/* No thread-exit hook here: a thread's state (>>threads-state) waits for tensor_shutdown. */
static void tensor__thread_at_exit(tensor__thread *s) { (void)s; }
#else
#define TENSOR__HAVE_THREADS 1
#include <pthread.h>
#include <sched.h>
#include <time.h>
#include <unistd.h>
/* syscall() is declared where <unistd.h> has its BSD/GNU extensions (not a strict -std=c99 build) */
#if defined(__linux__) && (defined(__USE_MISC) || defined(_BSD_SOURCE) || defined(_GNU_SOURCE))
#include <sys/syscall.h>
#endif
#if defined(__linux__) && (defined(__USE_MISC) || defined(_BSD_SOURCE) || defined(_GNU_SOURCE)) && defined(SYS_getcpu) && \
    defined(SYS_sched_getaffinity) && defined(SYS_sched_setaffinity)
#define TENSOR__UNSHARE_CORE 1
#else
#define TENSOR__UNSHARE_CORE 0
#endif

/* A flag several kernel threads may raise. */
#define TENSOR__ATOMIC_SET(p, v) __atomic_store_n(p, v, __ATOMIC_RELAXED)

/* A user thread's state (>>threads-state) is given back when the thread ends, by the destructor of
   a pthread key whose value is the state (set when the state is made). */
static pthread_key_t tensor__exit_key;
static pthread_once_t tensor__exit_once = PTHREAD_ONCE_INIT;
static bool tensor__exit_key_made;
static void tensor__exit_key_run(void *s) { tensor__thread_exit((tensor__thread *)s); }
static void tensor__exit_key_make(void) { tensor__exit_key_made = pthread_key_create(&tensor__exit_key, tensor__exit_key_run) == 0; }
static void tensor__thread_at_exit(tensor__thread *s) {
    pthread_once(&tensor__exit_once, tensor__exit_key_make);
    if (tensor__exit_key_made) pthread_setspecific(tensor__exit_key, s);
}

/* Asked once: sysconf reads /sys on every call, microseconds that every op would pay. */
static int tensor__cores(void) {
    static int cached;
    int c = __atomic_load_n(&cached, __ATOMIC_RELAXED);
    if (c) return c;
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    c = n < 1 ? 1 : n > 256 ? 256 : (int)n;
    __atomic_store_n(&cached, c, __ATOMIC_RELAXED);
    return c;
}

/* How long a worker polls for the next job before it sleeps, and the caller polls for the workers
   to finish before it sleeps. Waking a sleeping thread costs 15-40 us here, and the woken worker
   lands on the caller's core (tensor__leave_cpu moves it, at a further cost). The MLP step has
   gaps between its threaded ops longer than 200 us: with 200 us of polling its 2-thread time was
   630-640 us in every run, with 5 ms 322 us (both measured with the move in place). So workers
   poll 5 ms (OpenBLAS's poll for about 100 ms, Intel OpenMP's 200 ms), yielding the core between
   rounds so a thread that shares it (another process, or the other side of the pool) runs. */
#ifndef TENSOR_SPIN_US
#define TENSOR_SPIN_US 5000
#endif
#if defined(__x86_64__) || defined(__i386__)
#define TENSOR__CPU_RELAX() __builtin_ia32_pause()
#elif defined(__aarch64__)
#define TENSOR__CPU_RELAX() __asm__ __volatile__("yield")
#else
#define TENSOR__CPU_RELAX() ((void)0)
#endif

typedef struct {
    tensor__range_fn fn;
    void *ctx;
    int64_t n, chunk, n_chunks;
    int64_t next;     /* the next chunk to claim (atomic) */
} tensor__job;

/* Posting a job: the caller (holding `busy`) stores job, zeroes workers_done and bumps generation;
   workers see the new generation by polling or after a wake-up. A worker about to sleep counts
   itself in `sleepers`, then re-checks the generation under `mu` and waits on `wake`; the caller
   bumps the generation, then reads `sleepers` and only when some sleep takes `mu` to broadcast.
   Both pairs are seq_cst, so one side sees the other's store and no wake-up is lost, and an op
   whose workers are polling takes no lock. Each worker checks out of every generation once
   (workers_done); the caller returns only when all have, because the job lives on its stack. The
   caller's wait for them is the same pattern the other way (caller_waits, `done`). */
typedef struct {
    pthread_t threads[256];
    int n_workers;
    int workers_done;   /* atomic */
    bool started;
    int stop;           /* atomic */
    int64_t generation; /* atomic */
    int64_t spawn_generation; /* workers start waiting for the generation after this one */
    tensor__job *job;   /* atomic */
    int sleepers;       /* atomic: workers waiting on `wake` */
    int caller_waits;   /* atomic: the caller waits on `done` */
    int caller_cpu;     /* atomic: the core the caller woke the sleepers from (-1: unknown) */
    pthread_mutex_t mu, busy;
    pthread_cond_t wake, done;
} tensor__pool_state;

static tensor__pool_state tensor__pool = {{0}, 0, 0, false, 0, 0, 0, NULL, 0, 0, -1, PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
                                          PTHREAD_COND_INITIALIZER, PTHREAD_COND_INITIALIZER};
static TENSOR__THREAD_LOCAL bool tensor__in_parallel;

/* Polls until pred(arg) holds or about TENSOR_SPIN_US pass; returns whether it holds. The clock
   is CLOCK_MONOTONIC where <time.h> declares it (POSIX); a strict -std=c99 build has none and
   counts rounds of 64 pauses instead (1-3 us each on current x86). */
static bool tensor__spin_until(bool (*pred)(const void *), const void *arg) {
    if (pred(arg)) return true;
    if (TENSOR_SPIN_US <= 0) return false;
#ifdef CLOCK_MONOTONIC
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t deadline = (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000 + TENSOR_SPIN_US;
#else
    int64_t rounds = TENSOR_SPIN_US / 2 + 1;
#endif
    for (;;) {
        for (int i = 0; i < 64; i++) {
            TENSOR__CPU_RELAX();
            if (pred(arg)) return true;
        }
        sched_yield();
#ifdef CLOCK_MONOTONIC
        clock_gettime(CLOCK_MONOTONIC, &ts);
        if ((int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000 >= deadline) return false;
#else
        if (--rounds <= 0) return false;
#endif
    }
}
static bool tensor__pool_posted(const void *seen) {
    return __atomic_load_n(&tensor__pool.generation, __ATOMIC_ACQUIRE) != *(const int64_t *)seen ||
           __atomic_load_n(&tensor__pool.stop, __ATOMIC_ACQUIRE);
}
static bool tensor__pool_finished(const void *unused) {
    (void)unused;
    return __atomic_load_n(&tensor__pool.workers_done, __ATOMIC_ACQUIRE) == tensor__pool.n_workers;
}

/* This VM's scheduler (Linux 6.x under Firecracker) wakes a sleeping worker on the core of the
   thread that woke it, and with both threads busy it can leave the pair there for seconds: a
   2-thread op then runs at 1-thread speed (measured: the 2-thread MLP step at 640 instead of 320
   us in some runs). So a worker woken on its caller's core moves off it: it drops that core from
   its affinity mask, which migrates it at once, and restores the mask, which leaves it where it is
   now and free to move later. Raw syscalls: the glibc wrappers need _GNU_SOURCE before the first
   include, which is the user's to define. */
#if TENSOR__UNSHARE_CORE
static int tensor__current_cpu(void) {
    unsigned cpu = 0;
    return syscall(SYS_getcpu, &cpu, NULL, NULL) == 0 ? (int)cpu : -1;
}
static void tensor__leave_cpu(int cpu) {
    unsigned long mask[16], keep[16]; /* up to 1024 cores; more: the call fails and nothing moves */
    const int bits = (int)(8 * sizeof(unsigned long));
    long n = syscall(SYS_sched_getaffinity, 0, sizeof mask, mask); /* bytes written */
    if (n <= 0 || cpu < 0 || cpu >= 8 * n) return;
    memcpy(keep, mask, (size_t)n);
    mask[cpu / bits] &= ~(1UL << (cpu % bits));
    bool other = false;
    for (long i = 0; i < n / (long)sizeof(unsigned long); i++) other = other || mask[i] != 0;
    if (other && syscall(SYS_sched_setaffinity, 0, (size_t)n, mask) == 0) syscall(SYS_sched_setaffinity, 0, (size_t)n, keep);
}
#endif

static void tensor__run_chunks(tensor__job *job) {
    for (;;) {
        int64_t c = __atomic_fetch_add(&job->next, 1, __ATOMIC_RELAXED);
        if (c >= job->n_chunks) return;
        int64_t begin = c * job->chunk, end = begin + job->chunk < job->n ? begin + job->chunk : job->n;
        job->fn(begin, end, job->ctx);
    }
}

static void *tensor__worker(void *arg) {
    (void)arg;
    tensor__in_parallel = true;
    int64_t seen = tensor__pool.spawn_generation; /* not .generation: a job may already be posted */
#if TENSOR__UNSHARE_CORE
    int creator = __atomic_load_n(&tensor__pool.caller_cpu, __ATOMIC_RELAXED);
    if (creator >= 0 && tensor__current_cpu() == creator) tensor__leave_cpu(creator);
#endif
    for (;;) {
        if (!tensor__spin_until(tensor__pool_posted, &seen)) {
            pthread_mutex_lock(&tensor__pool.mu);
            __atomic_add_fetch(&tensor__pool.sleepers, 1, __ATOMIC_SEQ_CST);
            while (!tensor__pool_posted(&seen)) pthread_cond_wait(&tensor__pool.wake, &tensor__pool.mu);
            __atomic_sub_fetch(&tensor__pool.sleepers, 1, __ATOMIC_SEQ_CST);
            int caller = __atomic_load_n(&tensor__pool.caller_cpu, __ATOMIC_RELAXED);
            pthread_mutex_unlock(&tensor__pool.mu);
#if TENSOR__UNSHARE_CORE
            if (caller >= 0 && tensor__current_cpu() == caller) tensor__leave_cpu(caller);
#else
            (void)caller;
#endif
        }
        if (__atomic_load_n(&tensor__pool.stop, __ATOMIC_ACQUIRE)) break;
        seen = __atomic_load_n(&tensor__pool.generation, __ATOMIC_ACQUIRE);
        tensor__run_chunks(__atomic_load_n(&tensor__pool.job, __ATOMIC_ACQUIRE));
        /* checked out: the job may be gone from here on */
        if (__atomic_add_fetch(&tensor__pool.workers_done, 1, __ATOMIC_SEQ_CST) == tensor__pool.n_workers &&
            __atomic_load_n(&tensor__pool.caller_waits, __ATOMIC_SEQ_CST)) {
            pthread_mutex_lock(&tensor__pool.mu); /* the caller is asleep on `done`, or about to be */
            pthread_cond_signal(&tensor__pool.done);
            pthread_mutex_unlock(&tensor__pool.mu);
        }
    }
    return NULL;
}

/* Joins the workers (tensor_shutdown, or a change of the thread count). Holds `busy`. */
static void tensor__pool_stop_locked(void) {
    if (!tensor__pool.started) return;
    pthread_mutex_lock(&tensor__pool.mu);
    __atomic_store_n(&tensor__pool.stop, 1, __ATOMIC_RELEASE);
    pthread_cond_broadcast(&tensor__pool.wake);
    pthread_mutex_unlock(&tensor__pool.mu);
    for (int i = 0; i < tensor__pool.n_workers; i++) pthread_join(tensor__pool.threads[i], NULL);
    tensor__pool.started = false;
    __atomic_store_n(&tensor__pool.stop, 0, __ATOMIC_RELEASE);
    tensor__pool.n_workers = 0;
}
static void tensor__pool_stop(void) {
    pthread_mutex_lock(&tensor__pool.busy);
    tensor__pool_stop_locked();
    pthread_mutex_unlock(&tensor__pool.busy);
}

/* Starts workers-many threads; false (and no pool) if the system refuses. Holds `busy`. */
static bool tensor__pool_start_locked(int workers) {
    if (tensor__pool.started && tensor__pool.n_workers == workers) return true;
    tensor__pool_stop_locked();
#if TENSOR__UNSHARE_CORE
    __atomic_store_n(&tensor__pool.caller_cpu, tensor__current_cpu(), __ATOMIC_RELAXED); /* a new thread starts here too */
#endif
    tensor__pool.spawn_generation = __atomic_load_n(&tensor__pool.generation, __ATOMIC_RELAXED);
    for (int i = 0; i < workers; i++) {
        if (pthread_create(&tensor__pool.threads[i], NULL, tensor__worker, NULL) != 0) {
            tensor__pool.n_workers = i;
            tensor__pool.started = true;
            tensor__pool_stop_locked();
            return false;
        }
        tensor__pool.n_workers = i + 1;
    }
    tensor__pool.started = true;
    return true;
}

static void tensor__parallel_for(int64_t n, int64_t grain, tensor__range_fn fn, void *ctx) {
    if (n <= 0) return;
    if (grain < 1) grain = 1;
    if (n <= grain) { fn(0, n, ctx); return; } /* small work: no pool, no thread count lookup */
    int threads = TENSOR__LOAD(&tensor__num_threads);
    if (!threads) threads = tensor__cores();
    if (threads <= 1 || tensor__in_parallel || pthread_mutex_trylock(&tensor__pool.busy) != 0) {
        fn(0, n, ctx);
        return;
    }
    int64_t chunks = (n + grain - 1) / grain;
    if (chunks > threads) chunks = threads;
    if (!tensor__pool_start_locked(threads - 1)) {
        pthread_mutex_unlock(&tensor__pool.busy);
        fn(0, n, ctx);
        return;
    }
    tensor__job job;
    job.fn = fn;
    job.ctx = ctx;
    job.n = n;
    job.n_chunks = chunks;
    job.chunk = (n + chunks - 1) / chunks;
    job.next = 0;
    __atomic_store_n(&tensor__pool.job, &job, __ATOMIC_RELAXED);
    __atomic_store_n(&tensor__pool.workers_done, 0, __ATOMIC_RELAXED);
    __atomic_add_fetch(&tensor__pool.generation, 1, __ATOMIC_SEQ_CST);
    if (__atomic_load_n(&tensor__pool.sleepers, __ATOMIC_SEQ_CST)) { /* wakes the workers that stopped polling */
        pthread_mutex_lock(&tensor__pool.mu);
#if TENSOR__UNSHARE_CORE
        __atomic_store_n(&tensor__pool.caller_cpu, tensor__current_cpu(), __ATOMIC_RELAXED);
#endif
        pthread_cond_broadcast(&tensor__pool.wake);
        pthread_mutex_unlock(&tensor__pool.mu);
    }
    tensor__in_parallel = true;
    tensor__run_chunks(&job);
    tensor__in_parallel = false;
    if (!tensor__spin_until(tensor__pool_finished, NULL)) {
        pthread_mutex_lock(&tensor__pool.mu);
        __atomic_store_n(&tensor__pool.caller_waits, 1, __ATOMIC_SEQ_CST);
        while (__atomic_load_n(&tensor__pool.workers_done, __ATOMIC_SEQ_CST) != tensor__pool.n_workers)
            pthread_cond_wait(&tensor__pool.done, &tensor__pool.mu);
        __atomic_store_n(&tensor__pool.caller_waits, 0, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&tensor__pool.mu);
    }
    __atomic_store_n(&tensor__pool.job, (tensor__job *)NULL, __ATOMIC_RELAXED);
    pthread_mutex_unlock(&tensor__pool.busy);
}
#endif

TENSOR_API void tensor_set_num_threads(int n) {
    if (n < 0) { tensor__fail("tensor_set_num_threads", "thread count must be >= 0, got %d", n); return; }
    if (n > 256) n = 256;
    TENSOR__STORE(&tensor__num_threads, n); /* the pool restarts with the new size at its next use */
}
TENSOR_API int tensor_get_num_threads(void) {
    int n = TENSOR__LOAD(&tensor__num_threads);
    return n ? n : tensor__cores();
}
/* ==== end generator/parts/threads.h ==== */
/* ==== begin generator/parts/simd.h ==== */
// >>simd ---------------------------------------------------------------------------------------
/* The vector layer: f32 kernels written once and compiled for every instruction set the target
   has, one of which is chosen at run time.

   Kernels are the bodies of the macros TENSOR__SIMD_MATH and TENSOR__SIMD_KERNELS below. They use
   GCC/Clang vector extensions (operators, comparisons, casts between same-size vectors) and a few
   names each instance defines before expanding them:
     TENSOR__VF  TENSOR__W floats         TENSOR__VI  TENSOR__W int32 (what a float comparison gives)
     TENSOR__VU  TENSOR__W uint32 (arithmetic that may wrap: signed overflow is undefined)
     TENSOR__VD  TENSOR__DW doubles       TENSOR__VL  TENSOR__DW int64 (double comparisons)
     TENSOR__VB  TENSOR__W int8           TENSOR__F(name)  the instance's name for a function
     TENSOR__FMA / TENSOR__FMAD (fused where the ISA has it), TENSOR__SQRT, TENSOR__SEL / TENSOR__SELD
     (lane select by mask), TENSOR__MIN / TENSOR__MAX (a NaN first operand gives the second),
     TENSOR__ANY / TENSOR__ANYD (any lane of a float / double mask set), TENSOR__LOADH /
     TENSOR__STOREH (TENSOR__DW floats <-> doubles),
     TENSOR__TARGET (the instance's __attribute__((target(...))), empty where none is needed).
   Instances: avx512 (16 lanes, "avx512f"), avx2 (8, "avx2,fma"), sse2 (4) on x86; neon (4) on
   aarch64; scalar (1 lane, plain C) everywhere but x86-64, where SSE2 is the floor. The x86
   instances carry target attributes, so a plain `cc -O2` build holds all of them and runs the best
   one the CPU has (__builtin_cpu_supports, asked once, the first time a kernel needs the choice).
   The environment variable TENSOR_SIMD (scalar, sse2, avx2, avx512, neon) picks a lower one, for
   tests and comparisons (scalar on x86-64: sse2). TENSOR_NO_SIMD
   compiles the scalar instance only; compilers without vector extensions (MSVC) get none, and the
   elementwise ops keep their reference loops. TENSOR_USE_SLEEF (link -lsleef) makes exp, log,
   expm1, log1p, sin, cos, tanh and erf call SLEEF's 1-ulp vector functions instead of ours.

   The math: range reduction + polynomial, coefficients fitted for this library (near-minimax,
   weighted least squares). Errors are stated in ulp of the f32 result against the exact value and
   are measured by tests/test_simd.c over a dense sweep of the f32 range, for every instance. */

#if defined(__GNUC__) || defined(__clang__)
#define TENSOR__SIMD 1
#else
#define TENSOR__SIMD 0
#endif
#if TENSOR__SIMD && !defined(TENSOR_NO_SIMD) && (defined(__x86_64__) || defined(__i386__))
#define TENSOR__SIMD_X86 1
#else
#define TENSOR__SIMD_X86 0
#endif
#if TENSOR__SIMD && !defined(TENSOR_NO_SIMD) && defined(__aarch64__) && defined(__ARM_NEON)
#define TENSOR__SIMD_NEON 1
#else
#define TENSOR__SIMD_NEON 0
#endif
/* The scalar instance: wherever there is no vector one, and on i386 (whose CPUs may lack SSE2);
   on x86-64, whose every CPU has SSE2, sse2 is the floor and a scalar instance would be compiled
   for nothing (it cost about 6% of the implementation's compile time). */
#if TENSOR__SIMD && !(TENSOR__SIMD_X86 && defined(__x86_64__))
#define TENSOR__SIMD_SCALAR 1
#else
#define TENSOR__SIMD_SCALAR 0
#endif

#ifdef __cplusplus
} /* system headers outside extern "C" */
#endif
#if TENSOR__SIMD_X86
#include <immintrin.h>
#endif
#if TENSOR__SIMD_NEON
#include <arm_neon.h>
#endif
#if TENSOR__SIMD && defined(TENSOR_USE_SLEEF)
#include <sleef.h>
#endif
#ifdef __cplusplus
extern "C" {
#endif

/* Row kernels, as the elementwise loops call them: n floats from unaligned pointers. `mode` says
   which operands are arrays: 0 both, 1 a only (b[0] is a broadcast scalar), 2 b only. */
typedef void (*tensor__vec_unary_fn)(float *out, const float *a, int64_t n, const double *param);
typedef void (*tensor__vec_binary_fn)(float *out, const float *a, const float *b, int64_t n, int mode);
typedef void (*tensor__vec_compare_fn)(uint8_t *out, const float *a, const float *b, int64_t n, int mode);
/* The optimizer update (optim.h): kinds, and the per-step constants of one parameter, already
   rounded to f32 the way torch.optim's f32 kernels see its Python scalars. */
enum { TENSOR__SGD, TENSOR__ADAM, TENSOR__ADAMW };
typedef struct {
    int kind;
    bool first;      /* SGD: the momentum buffer starts as the gradient */
    bool nesterov;   /* SGD */
    bool decay;      /* weight_decay != 0 (SGD, Adam: g += wd p only then, as torch) */
    float neg_lr;    /* SGD: -lr */
    float momentum;  /* SGD */
    float weight_decay;
    float keep;      /* AdamW: 1 - lr wd */
    float beta1, one_minus_beta1, beta2, one_minus_beta2;
    float sqrt_bias2; /* sqrt(1 - beta2^t) */
    float eps;
    float step_size; /* lr / (1 - beta1^t) */
} tensor__optim_consts;
/* n elements of a parameter p, its gradient g and its state s1 (momentum buffer / exp_avg; NULL for
   SGD without momentum) and s2 (exp_avg_sq; Adam/AdamW only), all f32 and contiguous. */
typedef void (*tensor__vec_optim_fn)(float *p, const float *g, float *s1, float *s2, int64_t n, const tensor__optim_consts *k);
typedef struct {
    const char *name; /* as tensor_build_info reports it */
    int width;        /* f32 lanes */
    bool bf16dot;     /* avx512 chosen and the CPU has avx512_bf16 (vdpbf16ps): the bf16 GEMM kernel */
    bool f16c;        /* avx2 or above chosen and the CPU has F16C: the SIMD f16/bf16 <-> f32 rows */
    tensor__vec_unary_fn unary[TENSOR_OP_COUNT];
    tensor__vec_binary_fn binary[TENSOR_OP_COUNT];
    tensor__vec_compare_fn compare[TENSOR_OP_COUNT];
    tensor__vec_optim_fn optim; /* the optimizer update (TENSOR__SIMD_OPTIM) */
    /* the row primitives of the reductions, softmax, cross_entropy and the norms (TENSOR__SIMD_ROWS
       below; tensor__row_*_f32 at the end of this part say what each computes) */
    double (*row_sum)(const float *x, int64_t n);
    double (*row_sum_f64)(const double *x, int64_t n);
    void (*row_cols_add)(double *acc, const float *x, int64_t n);
    double (*row_sqdev)(const float *x, int64_t n, float m);
    double (*row_dot)(const float *a, const float *b, int64_t n);
    float (*row_max)(const float *x, int64_t n);
    double (*row_sumexp)(float *y, const float *x, int64_t n, float m);
    void (*row_affine)(float *y, const float *x, int64_t n, float s, float t);
    void (*row_sub2)(float *y, const float *x, int64_t n, float a, float b);
    void (*row_smbwd)(float *y, const float *g, int64_t n, float s, float d);
    void (*row_fms)(float *y, const float *g, int64_t n, float c);
    void (*row_norm)(float *y, const float *x, int64_t n, float mh, float ml, float rstd, const float *w, const float *b);
    void (*row_norm_bwd)(float *gx, const float *x, const float *g, const float *w, int64_t n, float mh, float ml, float rstd, bool center,
                         double *gw, double *gb);
    /* the random fills (create.h's tensor__rng_blocks_ref and tensor__rng_normal_ref say what each
       computes) */
    void (*rng_blocks)(uint32_t *out, int64_t n, const uint32_t key[2], uint64_t counter, uint32_t stream);
    void (*rng_normal)(double *c, double *s, const double *u1, const double *u2, int64_t n);
    void (*rng_normal4)(float *out, int64_t n, const uint32_t key[2], uint64_t counter, uint32_t stream);
} tensor__simd_isa;

#if TENSOR__SIMD
typedef float tensor__f32x1 __attribute__((vector_size(4)));
typedef double tensor__f64x1 __attribute__((vector_size(8)));
typedef int8_t tensor__i8x1 __attribute__((vector_size(1)));
typedef int8_t tensor__i8x4 __attribute__((vector_size(4)));
typedef int8_t tensor__i8x8 __attribute__((vector_size(8)));
typedef int8_t tensor__i8x16 __attribute__((vector_size(16)));
typedef int32_t tensor__i32x1 __attribute__((vector_size(4)));
typedef uint32_t tensor__u32x1 __attribute__((vector_size(4)));
typedef uint32_t tensor__u32x4 __attribute__((vector_size(16)));
typedef uint32_t tensor__u32x8 __attribute__((vector_size(32)));
typedef uint32_t tensor__u32x16 __attribute__((vector_size(64)));
typedef int32_t tensor__i32x4 __attribute__((vector_size(16)));
typedef int32_t tensor__i32x8 __attribute__((vector_size(32)));
typedef int32_t tensor__i32x16 __attribute__((vector_size(64)));
typedef int64_t tensor__i64x1 __attribute__((vector_size(8)));
typedef int64_t tensor__i64x2 __attribute__((vector_size(16)));
typedef int64_t tensor__i64x4 __attribute__((vector_size(32)));
typedef int64_t tensor__i64x8 __attribute__((vector_size(64)));

/* the math helpers are inlined into the row loops, whose constants then stay in registers */
#define TENSOR__INLINE inline __attribute__((always_inline))
#define TENSOR__F(name) TENSOR__F2(TENSOR__ISA, name)
#define TENSOR__F2(isa, name) TENSOR__F3(isa, name)
#define TENSOR__F3(isa, name) isa##_##name
/* one Horner step with a constant coefficient */
#define TENSOR__H(p, x, c) TENSOR__FMA(p, x, TENSOR__F(splat)(c))
#define TENSOR__HD(p, x, c) TENSOR__FMAD(p, x, TENSOR__F(splatd)(c))

/* Polynomial coefficients, lowest degree first (fitted on the ranges named). */
/* (e^r - 1 - r - r^2/2) / r^3 on |r| <= ln2/2: error 2^-31.5 of e^r */
static const float tensor__expf_q[5] = {1.666666716e-01f, 4.166655615e-02f, 8.333301172e-03f, 1.392622129e-03f, 1.989934099e-04f};
/* (log1p(f) - f) / f^2 on [sqrt(1/2) - 1, sqrt(2) - 1]: error 2^-27.9 of log1p(f) */
static const float tensor__logf_p[9] = {-4.999998808e-01f, 3.333332539e-01f, -2.500159144e-01f, 2.000200152e-01f, -1.660889089e-01f,
                                        1.418115795e-01f, -1.324395686e-01f, 1.290922165e-01f, -7.625278831e-02f};
/* (tanh(x) - x) / x^3 as a polynomial in x^2, |x| <= 0.9: error 2^-29.7 of tanh(x) */
static const float tensor__tanhf_p[7] = {-3.333332241e-01f, 1.333297640e-01f, -5.392910913e-02f, 2.166276798e-02f, -8.262984455e-03f,
                                         2.581131412e-03f, -4.548712459e-04f};
/* (e^r - 1 - r - r^2/2) / r^3 on |r| <= ln2/2, one degree less than expf_q: error 2^-26.6 of e^r,
   enough for gelu, whose S is good to 2^-24.7 */
static const float tensor__geluf_q[4] = {1.666660756e-01f, 4.166973755e-02f, 8.360692300e-03f, 1.363661024e-03f};
/* gelu's S(t) = Phi(-a) e^(a^2 / 2) as a polynomial in t = 1 / (1 + 0.3 a), a in [0, 14.5] (relative
   error 2^-24.7), each coefficient times 2^-40 (exactly; see geluf) */
#define TENSOR__GELU_S(c) (c * 9.094947017729282e-13f)
static const float tensor__geluf_s[10] = {
    TENSOR__GELU_S(1.438426716049435e-05f), TENSOR__GELU_S(1.193338856101036e-01f), TENSOR__GELU_S(1.233142614364624e-01f),
    TENSOR__GELU_S(8.763142675161362e-02f), TENSOR__GELU_S(1.645114272832870e-01f), TENSOR__GELU_S(-1.203321814537048e-01f),
    TENSOR__GELU_S(2.847211658954620e-01f), TENSOR__GELU_S(-2.136338502168655e-01f), TENSOR__GELU_S(5.827609822154045e-02f),
    TENSOR__GELU_S(-3.836604068055749e-03f)};
/* f64 helpers, accurate far beyond f32 (they serve sin, cos, erf and gelu_tanh) */
/* (e^r - 1 - r - r^2/2) / r^3 on |r| <= ln2/2: error 2^-37 of e^r */
static const double tensor__expd_q[6] = {1.66666666816701142e-01, 4.16666667566754495e-02, 8.33331087990160820e-03,
                                         1.38888414909583632e-03, 1.98910407082777404e-04, 2.48679465296688266e-05};
/* erf(x) / x as a polynomial in x^2, |x| <= 2: error 2^-42 (2^-34 of 1 + erf(x) at x = -2, where
   gelu cancels most) */
static const double tensor__erfd_p[14] = {1.12837916709528363e+00, -3.76126389010594364e-01, 1.12837916378376549e-01, -2.68661685900906111e-02,
                                          5.22397091098407949e-03, -8.54819450515384915e-04, 1.20536241329603368e-04, -1.49105504317090634e-05,
                                          1.63680346969746760e-06, -1.59462676052313462e-07, 1.34620787171949495e-08, -9.20705734256231601e-10,
                                          4.43390075302266444e-11, -1.09254395060707299e-12};
/* erfc(z) e^(z^2) (z + 2) as a polynomial in t = 1 / (z + 2), z in [1, 12]: error 2^-34 */
static const double tensor__erfcd_g[11] = {5.64191142236527443e-01, 1.12826526557746587e+00, 1.97832734523613718e+00, 2.75256400573056403e+00,
                                           3.50092182385075823e+00, -6.90983916484099314e+00, 2.90965209189257159e+01, -1.46348592369453144e+02,
                                           2.96425981702165416e+02, -2.73734929451720575e+02, 9.78002515400119563e+01};
/* (sin r - r) / r^3 and (cos r - 1 + r^2/2) / r^4 as polynomials in r^2, |r| <= pi/4: error 2^-38 */
static const double tensor__sind_s[4] = {-1.66666666638323829e-01, 8.33333186521217559e-03, -1.98400814279559604e-04, 2.72492228615599520e-06};
static const double tensor__cosd_c[4] = {4.16666666643014036e-02, -1.38888876638947425e-03, 2.48005958633951376e-05, -2.73003634391574619e-07};

/* ---- f32 math, written once for every instance ---- */
#define TENSOR__SIMD_MATH                                                                                             \
/* c in every lane (-0 included, which 0 + c would lose) */                                                           \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VF TENSOR__F(splat)(float c) {                            \
    TENSOR__VF v = {0};                                                                                               \
    for (int j = 0; j < TENSOR__W; j++) v[j] = c;                                                                     \
    return v;                                                                                                         \
}                                                                                                                     \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VD TENSOR__F(splatd)(double c) {                          \
    TENSOR__VD v = {0};                                                                                               \
    for (int j = 0; j < TENSOR__DW; j++) v[j] = c;                                                                    \
    return v;                                                                                                         \
}                                                                                                                     \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VF TENSOR__F(load)(const float *p) { TENSOR__VF v; memcpy(&v, p, sizeof v); return v; } \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET void TENSOR__F(store)(float *p, TENSOR__VF v) { memcpy(p, &v, sizeof v); } \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VF TENSOR__F(abs)(TENSOR__VF x) { return (TENSOR__VF)((TENSOR__VI)x & 0x7fffffff); } \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VD TENSOR__F(absd)(TENSOR__VD x) { return (TENSOR__VD)((TENSOR__VL)x & 0x7fffffffffffffffLL); } \
/* |m| with the sign of s */                                                                                          \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VF TENSOR__F(copysign)(TENSOR__VF m, TENSOR__VF s) {      \
    return (TENSOR__VF)(((TENSOR__VI)m & 0x7fffffff) | ((TENSOR__VI)s & ~0x7fffffff));                                \
}                                                                                                                     \
/* PyTorch's clamp: NaN stays NaN, a NaN bound clamps nothing */                                                      \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VF TENSOR__F(clamp)(TENSOR__VF x, float lo, float hi) {   \
    TENSOR__VF t = TENSOR__SEL(x < lo, TENSOR__F(splat)(lo), x);                                                      \
    return TENSOR__SEL(t > hi, TENSOR__F(splat)(hi), t);                                                              \
}                                                                                                                     \
/* round to nearest integer, for |x| < 2^22 */                                                                        \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VF TENSOR__F(rint)(TENSOR__VF x) { return (x + 12582912.0f) - 12582912.0f; } \
/* p * 2^n for an integral n in [-252, 252] held in a float: two exact power-of-two factors, so a                     \
   result that underflows is rounded once */                                                                          \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VF TENSOR__F(scale)(TENSOR__VF p, TENSOR__VF nf) {        \
    TENSOR__VI n = (TENSOR__VI)(nf + 12582912.0f) - 0x4b400000;                                                       \
    TENSOR__VI n1 = n >> 1, n2 = n - n1;                                                                              \
    return p * (TENSOR__VF)((n1 + 127) << 23) * (TENSOR__VF)((n2 + 127) << 23);                                       \
}                                                                                                                     \
/* e^x = p 2^n: n = rint(x / ln2), p = e^r with r = x - n ln2 in [-0.347, 0.347]. ln2 is split in                     \
   16 bits + the rest, so n * LN2_HI is exact for |n| < 256 with or without FMA and r carries one                     \
   rounding; p = 1 + r + r^2 (1/2 + r Q(r)). x must be finite with |x| < 160. */                                      \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VF TENSOR__F(exp_core)(TENSOR__VF x, TENSOR__VF *n) {     \
    TENSOR__VF nf = TENSOR__F(rint)(x * 1.44269504f);                                                                 \
    TENSOR__VF r = TENSOR__FMA(nf, TENSOR__F(splat)(-0.693145751953125f), x);                                         \
    r = TENSOR__FMA(nf, TENSOR__F(splat)(-1.428606765e-06f), r);                                                      \
    TENSOR__VF q = TENSOR__F(splat)(tensor__expf_q[4]);                                                               \
    q = TENSOR__H(q, r, tensor__expf_q[3]);                                                                           \
    q = TENSOR__H(q, r, tensor__expf_q[2]);                                                                           \
    q = TENSOR__H(q, r, tensor__expf_q[1]);                                                                           \
    q = TENSOR__H(q, r, tensor__expf_q[0]);                                                                           \
    *n = nf;                                                                                                          \
    return TENSOR__FMA(r * r, TENSOR__H(q, r, 0.5f), r) + 1.0f;                                                       \
}                                                                                                                     \
/* e^x: <= 1 ulp (the reduction leaves r within 0.5 ulp(r), the polynomial within 2^-31.5, the                        \
   final 1 + ... rounds once); overflow to inf above 88.72, gradual underflow below -87.3.                            \
   Measured over every f32 in [-104, 89]: 0.978 ulp with FMA, 0.951 without (SSE2). */                                \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VF TENSOR__F(exp)(TENSOR__VF x) {                         \
    TENSOR__VF xc = TENSOR__MAX(TENSOR__MIN(x, TENSOR__F(splat)(100.0f)), TENSOR__F(splat)(-110.0f)); /* NaN -> 100, restored below */ \
    TENSOR__VF nf, p = TENSOR__F(exp_core)(xc, &nf), r;                                                               \
    if (TENSOR__ANY(TENSOR__F(abs)(x) > 86.0f)) r = TENSOR__F(scale)(p, nf);                                          \
    else r = (TENSOR__VF)((TENSOR__VU)p + ((TENSOR__VU)(nf + 12582912.0f) << 23)); /* normal: add n to the exponent */ \
    return TENSOR__SEL(x == x, r, x);                                                                                 \
}                                                                                                                     \
/* gelu(x) = x Phi(x) in f32, Phi(x) = 0.5 erfc(-x / sqrt2): one formula for every x, with no                       \
   cancellation in the negative tail. Q(a) = Phi(-a) = e^(-a^2 / 2) S(a) for a = |x|, S a polynomial                  \
   in t = 1 / (1 + 0.3 a) (fitted on [0, 14.5] for relative error, 2^-24.7); a^2 / 2 is split                         \
   exactly (Dekker: 12-bit halves, no FMA needed), so the exponential sees no rounding of it; then                    \
   Phi = Q for x < 0, 1 - Q above. Q is carried scaled by 2^40, which keeps it normal up to a =                       \
   14.5 (where x Q rounds to 0 in f32): the exponential needs no subnormal path and no branch, and                    \
   the negative tail's product x Q rounds once, when it is scaled back (rounded twice, as it was                      \
   before, a subnormal result near x = -13 was 11.5 ulp off). The exponential's polynomial                            \
   goes by Estrin's scheme and S's by Horner's rule in t^2 on pairs of terms (shorter chains),                        \
   and small terms are folded into other operations: 6.0 -> 5.0 ms on 16M, one thread. Measured                       \
   over every f32 in [-20, 20]: 7.34 ulp at most with FMA (AVX-512, AVX2), 7.51 without (SSE2).                       \
   About 1.6 times the time of a memory-bound exp on one thread: it is bound by its ~30                               \
   multiplies and fused multiply-adds a vector. (In double and rounded once, as it once was:                          \
   0.5 ulp, 6 times slower.) */                                                                                       \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VF TENSOR__F(geluf)(TENSOR__VF x) {                       \
    TENSOR__VF a = TENSOR__MIN(TENSOR__F(abs)(x), TENSOR__F(splat)(14.5f)); /* a Q rounds to 0 beyond; NaN -> 14.5 */ \
    /* -a^2 / 2 = g + m exactly: m from one fused multiply-add, or Dekker's 12-bit halves (there g                    \
       comes from the rounded a^2, so no multiply that sets g's rounding can be contracted into an add) */            \
    TENSOR__VF g, m;                                                                                                  \
    if (TENSOR__FMA_EXACT) {                                                                                          \
        TENSOR__VF na = -0.5f * a;                                                                                    \
        g = na * a;                                                                                                   \
        m = TENSOR__FMA(na, a, -g);                                                                                   \
    } else {                                                                                                          \
        TENSOR__VF ah = (TENSOR__VF)((TENSOR__VI)a & -4096), al = a - ah, h = a * a;                                  \
        g = -0.5f * h;                                                                                                \
        m = -0.5f * (((ah * ah - h) + 2.0f * ah * al) + al * al);                                                     \
    }                                                                                                                 \
    /* e^(g + m) = 2^n p as exp_core computes it (m joins the reduced argument), the polynomial of                    \
       degree 6 (fitted for gelu: 2^-26.6) by Estrin's scheme */                                                      \
    TENSOR__VF nf = TENSOR__F(rint)(g * 1.44269504f);                                                                 \
    TENSOR__VF r = TENSOR__FMA(nf, TENSOR__F(splat)(-0.693145751953125f), g);                                         \
    r = TENSOR__FMA(nf, TENSOR__F(splat)(-1.428606765e-06f), r) + m;                                                  \
    TENSOR__VF r2 = r * r, q01 = TENSOR__H(TENSOR__F(splat)(tensor__geluf_q[1]), r, tensor__geluf_q[0]);              \
    TENSOR__VF q = TENSOR__FMA(r2, TENSOR__H(TENSOR__F(splat)(tensor__geluf_q[3]), r, tensor__geluf_q[2]), q01);      \
    TENSOR__VF p = TENSOR__FMA(r2, TENSOR__H(q, r, 0.5f), r) + 1.0f;                                                 \
    TENSOR__VF e = (TENSOR__VF)((TENSOR__VU)p + ((TENSOR__VU)(nf + (12582912.0f + 40.0f)) << 23));                   \
    TENSOR__VF ae = a * e; /* a e^(-a^2/2) 2^40 */                                                                    \
    TENSOR__VF t = 1.0f / (1.0f + 0.3f * a), t2 = t * t;                                                              \
    /* S(t) = c0 + c1 t + ... + c9 t^9 by Horner's rule in t^2 on the pairs (c0 + c1 t), ...: a shorter               \
       chain than Horner's in t, fewer operations than Estrin's (which also loses more without FMA) */                \
    TENSOR__VF s01 = TENSOR__H(TENSOR__F(splat)(tensor__geluf_s[1]), t, tensor__geluf_s[0]);                          \
    TENSOR__VF s23 = TENSOR__H(TENSOR__F(splat)(tensor__geluf_s[3]), t, tensor__geluf_s[2]);                          \
    TENSOR__VF s45 = TENSOR__H(TENSOR__F(splat)(tensor__geluf_s[5]), t, tensor__geluf_s[4]);                          \
    TENSOR__VF s67 = TENSOR__H(TENSOR__F(splat)(tensor__geluf_s[7]), t, tensor__geluf_s[6]);                          \
    TENSOR__VF s89 = TENSOR__H(TENSOR__F(splat)(tensor__geluf_s[9]), t, tensor__geluf_s[8]);                          \
    TENSOR__VF sp = TENSOR__FMA(TENSOR__FMA(TENSOR__FMA(TENSOR__FMA(s89, t2, s67), t2, s45), t2, s23), t2, s01);      \
    TENSOR__VF s = ae * sp; /* a Q: S's coefficients carry the 2^-40, so a subnormal rounds once, here */          \
    /* x Phi(x) = x - a Q for x >= 0, -a Q below: x m - a Q with m = 1 or 0 (NaN and -inf give NaN, as x Phi(x)) */  \
    return TENSOR__FMA(x, TENSOR__SEL(x >= 0.0f, TENSOR__F(splat)(1.0f), TENSOR__F(splat)(0.0f)), -s);               \
}                                                                                                                     \
/* log(x): <= 1 ulp. x = 2^e m, m in [sqrt(1/2), sqrt(2)), f = m - 1 exactly; log x = e ln2 + f +                     \
   f^2 P(f). e LN2_HI + f is summed exactly (Fast2Sum: |e LN2_HI| > |f| unless e = 0) and the small                   \
   terms, which are below 0.21 of the result, are added last: one rounding of the result, plus                        \
   the polynomial's 2^-28. Subnormal x are scaled by 2^23 first. Measured over every positive                         \
   f32: 0.876 ulp with FMA, 0.897 without. */                                                                         \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VF TENSOR__F(log_tail)(TENSOR__VI e, TENSOR__VF f, TENSOR__VF extra) { \
    TENSOR__VF ef = __builtin_convertvector(e, TENSOR__VF);                                                           \
    TENSOR__VF hi = ef * 0.693145751953125f, s = hi + f, err = (hi - s) + f;                                          \
    TENSOR__VF p = TENSOR__F(splat)(tensor__logf_p[8]);                                                               \
    p = TENSOR__H(p, f, tensor__logf_p[7]);                                                                           \
    p = TENSOR__H(p, f, tensor__logf_p[6]);                                                                           \
    p = TENSOR__H(p, f, tensor__logf_p[5]);                                                                           \
    p = TENSOR__H(p, f, tensor__logf_p[4]);                                                                           \
    p = TENSOR__H(p, f, tensor__logf_p[3]);                                                                           \
    p = TENSOR__H(p, f, tensor__logf_p[2]);                                                                           \
    p = TENSOR__H(p, f, tensor__logf_p[1]);                                                                           \
    p = TENSOR__H(p, f, tensor__logf_p[0]);                                                                           \
    return s + TENSOR__FMA(f * f, p, TENSOR__FMA(ef, TENSOR__F(splat)(1.428606765e-06f), err + extra));               \
}                                                                                                                     \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VF TENSOR__F(log)(TENSOR__VF x) {                         \
    TENSOR__VI sub = x < 1.17549435e-38f;                                                                             \
    TENSOR__VF xs = TENSOR__SEL(sub, x * 8388608.0f, x);                                                              \
    TENSOR__VI b = (TENSOR__VI)((TENSOR__VU)xs - 0x3f3504f3u); /* unsigned: wraps for negative x */                   \
    TENSOR__VF m = (TENSOR__VF)((b & 0x007fffff) + 0x3f3504f3);                                                       \
    TENSOR__VF r = TENSOR__F(log_tail)((b >> 23) - (sub & 23), m - 1.0f, TENSOR__F(splat)(0.0f));                     \
    r = TENSOR__SEL(x < INFINITY, r, x); /* +inf and NaN */                                                           \
    r = TENSOR__SEL(x < 0.0f, TENSOR__F(splat)(NAN), r);                                                              \
    return TENSOR__SEL(x == 0.0f, TENSOR__F(splat)(-INFINITY), r);                                                    \
}                                                                                                                     \
/* log1p(x): <= 1 ulp by the same argument as log. u = 1 + x rounded, with its rounding error c                       \
   recovered exactly (Fast2Sum on 1 and x by magnitude); log1p x = log u + c / u. When u falls in                     \
   the first binade (e = 0), f = x itself, exactly, and no correction is needed. Measured over                        \
   every f32 >= -1: 0.876 ulp with FMA, 0.974 without. */                                                             \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VF TENSOR__F(log1p)(TENSOR__VF x) {                       \
    TENSOR__VF one = TENSOR__F(splat)(1.0f), u = x + 1.0f;                                                            \
    TENSOR__VI big = TENSOR__F(abs)(x) > 1.0f;                                                                        \
    TENSOR__VF c = (TENSOR__SEL(big, x, one) - u) + TENSOR__SEL(big, one, x);                                         \
    TENSOR__VI b = (TENSOR__VI)((TENSOR__VU)u - 0x3f3504f3u), e = b >> 23;                                            \
    TENSOR__VF m = (TENSOR__VF)((b & 0x007fffff) + 0x3f3504f3);                                                       \
    TENSOR__VI e0 = e == 0;                                                                                           \
    TENSOR__VF f = TENSOR__SEL(e0, x, m - 1.0f);                                                                      \
    TENSOR__VF r = TENSOR__F(log_tail)(e, f, TENSOR__SEL(e0, TENSOR__F(splat)(0.0f), c / u));                         \
    r = TENSOR__SEL(x < INFINITY, r, x);                                                                              \
    r = TENSOR__SEL(x < -1.0f, TENSOR__F(splat)(NAN), r);                                                             \
    r = TENSOR__SEL(x == -1.0f, TENSOR__F(splat)(-INFINITY), r);                                                      \
    return TENSOR__SEL(x == 0.0f, x, r); /* keeps -0 */                                                               \
}                                                                                                                     \
/* e^x - 1: <= 1 ulp. e^x - 1 = 2 (h e^r - 1/2) with h = 2^(n-1), summed as s + (err + h r^2 P(r))                    \
   where s + err = (h - 1/2) + h r exactly (Fast2Sum: |h - 1/2| >= |h r| unless n = 0, and h - 1/2                    \
   is exact for n <= 24; above, the -1/2 joins the small terms). So the cancellation near                             \
   x = +-ln2/2 costs nothing and one rounding of the result remains, plus r's and the polynomial's                    \
   small errors. Clamped to [-30, 89]: -1 below, inf above. Measured over every f32 in [-18, 89]:                     \
   0.988 ulp with FMA, 0.991 without. */                                                                              \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VF TENSOR__F(expm1)(TENSOR__VF x) {                       \
    TENSOR__VF xc = TENSOR__MAX(TENSOR__MIN(x, TENSOR__F(splat)(89.0f)), TENSOR__F(splat)(-30.0f)); /* NaN -> 89, restored below */ \
    TENSOR__VF nf = TENSOR__F(rint)(xc * 1.44269504f);                                                                \
    TENSOR__VF r = TENSOR__FMA(nf, TENSOR__F(splat)(-0.693145751953125f), xc);                                        \
    r = TENSOR__FMA(nf, TENSOR__F(splat)(-1.428606765e-06f), r);                                                      \
    TENSOR__VF q = TENSOR__F(splat)(tensor__expf_q[4]);                                                               \
    q = TENSOR__H(q, r, tensor__expf_q[3]);                                                                           \
    q = TENSOR__H(q, r, tensor__expf_q[2]);                                                                           \
    q = TENSOR__H(q, r, tensor__expf_q[1]);                                                                           \
    q = TENSOR__H(q, r, tensor__expf_q[0]);                                                                           \
    TENSOR__VF h = (TENSOR__VF)(((TENSOR__VI)(nf + 12582912.0f) - (0x4b400000 - 126)) << 23); /* n in [-43, 128] */   \
    TENSOR__VI big = nf > 24.0f;                                                                                      \
    TENSOR__VF c = TENSOR__SEL(big, h, h - 0.5f), hr = h * r;                                                         \
    TENSOR__VF s = c + hr, err = (c - s) + hr;                                                                        \
    TENSOR__VF t = TENSOR__FMA(h * (r * r), TENSOR__H(q, r, 0.5f), err + TENSOR__SEL(big, TENSOR__F(splat)(-0.5f), TENSOR__F(splat)(0.0f))); \
    TENSOR__VF res = (s + t) * 2.0f;                                                                                  \
    return TENSOR__SEL((TENSOR__F(abs)(x) < 2.98e-8f) | (x != x), x, res); /* x + x^2/2 rounds to x */                \
}                                                                                                                     \
/* tanh(x): <= 1.5 ulp. |x| < 0.9: x + x^3 P(x^2) (polynomial 2^-29.7). Above: 1 - 2 / (E + 1) with                   \
   E = e^(2|x|) >= 6.05: the subtracted term is below 0.29 and carries E's ulp, the sum's and the                     \
   quotient's roundings (< 1.75 2^-23 relative), so at most 0.29 * 1.75 2^-23 < 1 ulp of the                          \
   result, plus its own rounding. |x| is clamped to 10 (tanh is 1 in f32 from 9.01 on). Measured                      \
   over every f32 in [-9.1, 9.1]: 0.996 ulp with FMA, 1.037 without. */                                               \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VF TENSOR__F(tanh)(TENSOR__VF x) {                        \
    TENSOR__VF a = TENSOR__F(abs)(x), z = a * a;                                                                      \
    TENSOR__VF p = TENSOR__F(splat)(tensor__tanhf_p[6]);                                                              \
    p = TENSOR__H(p, z, tensor__tanhf_p[5]);                                                                          \
    p = TENSOR__H(p, z, tensor__tanhf_p[4]);                                                                          \
    p = TENSOR__H(p, z, tensor__tanhf_p[3]);                                                                          \
    p = TENSOR__H(p, z, tensor__tanhf_p[2]);                                                                          \
    p = TENSOR__H(p, z, tensor__tanhf_p[1]);                                                                          \
    p = TENSOR__H(p, z, tensor__tanhf_p[0]);                                                                          \
    TENSOR__VF small = TENSOR__FMA(a * z, p, a);                                                                      \
    TENSOR__VF nf, e = TENSOR__F(exp_core)(TENSOR__MIN(a, TENSOR__F(splat)(10.0f)) * 2.0f, &nf); /* NaN -> 10 */      \
    e = (TENSOR__VF)((TENSOR__VI)e + (((TENSOR__VI)(nf + 12582912.0f) - 0x4b400000) << 23)); /* * 2^n, n in [0, 29] */ \
    TENSOR__VF big = 1.0f - 2.0f / (e + 1.0f);                                                                        \
    TENSOR__VF r = TENSOR__SEL(a >= 0.9f, big, small); /* NaN: small, which is NaN */                                 \
    return (TENSOR__VF)((TENSOR__VI)r | ((TENSOR__VI)x & ~0x7fffffff)); /* r >= 0: x's sign */                        \
}                                                                                                                     \
/* softplus(x) = max(x, 0) + log1p(e^-|x|), and x above 20 (PyTorch's threshold, as the reference                     \
   loop): <= 2 ulp (log1p's argument is within 1 ulp and log1p damps relative errors, then one                        \
   more rounding for the sum). Measured over every f32 in [-104, 21]: 1.711 ulp. */                                   \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VF TENSOR__F(softplus)(TENSOR__VF x) {                    \
    TENSOR__VF l = TENSOR__F(log1p)(TENSOR__F(exp)(-TENSOR__F(abs)(x)));                                              \
    TENSOR__VF r = TENSOR__SEL(x > 0.0f, x, TENSOR__F(splat)(0.0f)) + l;                                              \
    return TENSOR__SEL(x > 20.0f, x, r);                                                                              \
}                                                                                                                     \
                                                                                                                      \
/* ---- f64 helpers: the functions below are computed in double and rounded once to f32, so their                     \
   f32 results are within 0.5 ulp + 2^-10 ulp of exact (the f64 polynomials are good to 2^-34; the                    \
   sweeps measure 0.501). They cost about 2-3x the f32 functions, the price of accuracy where a                       \
   float formula cancels (gelu instead has an f32 formula without the cancellation, geluf). ---- */                   \
/* e^x for finite x in [-708, 708] */                                                                                 \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VD TENSOR__F(expd)(TENSOR__VD x) {                        \
    TENSOR__VD nf = (x * 1.4426950408889634 + 6755399441055744.0) - 6755399441055744.0;                               \
    TENSOR__VD r = TENSOR__FMAD(nf, TENSOR__F(splatd)(-6.93147180559890330e-01), x);                                  \
    r = TENSOR__FMAD(nf, TENSOR__F(splatd)(-5.49792301870837116e-14), r);                                             \
    TENSOR__VD q = TENSOR__F(splatd)(tensor__expd_q[5]);                                                              \
    q = TENSOR__HD(q, r, tensor__expd_q[4]);                                                                          \
    q = TENSOR__HD(q, r, tensor__expd_q[3]);                                                                          \
    q = TENSOR__HD(q, r, tensor__expd_q[2]);                                                                          \
    q = TENSOR__HD(q, r, tensor__expd_q[1]);                                                                          \
    q = TENSOR__HD(q, r, tensor__expd_q[0]);                                                                          \
    TENSOR__VD p = TENSOR__FMAD(r * r, TENSOR__HD(q, r, 0.5), r) + 1.0;                                               \
    TENSOR__VL n = (TENSOR__VL)(nf + 6755399441055744.0) - 0x4338000000000000LL;                                      \
    return p * (TENSOR__VD)((n + 1023) << 52);                                                                        \
}                                                                                                                     \
/* erf(x) / x for |x| <= 2, as a polynomial in x^2 (wide enough that the tail below is rarely                         \
   needed for data of unit scale) */                                                                                  \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VD TENSOR__F(erfd_small)(TENSOR__VD x) {                  \
    TENSOR__VD z = x * x, p = TENSOR__F(splatd)(tensor__erfd_p[13]);                                                  \
    p = TENSOR__HD(p, z, tensor__erfd_p[12]);                                                                         \
    p = TENSOR__HD(p, z, tensor__erfd_p[11]);                                                                         \
    p = TENSOR__HD(p, z, tensor__erfd_p[10]);                                                                         \
    p = TENSOR__HD(p, z, tensor__erfd_p[9]);                                                                          \
    p = TENSOR__HD(p, z, tensor__erfd_p[8]);                                                                          \
    p = TENSOR__HD(p, z, tensor__erfd_p[7]);                                                                          \
    p = TENSOR__HD(p, z, tensor__erfd_p[6]);                                                                          \
    p = TENSOR__HD(p, z, tensor__erfd_p[5]);                                                                          \
    p = TENSOR__HD(p, z, tensor__erfd_p[4]);                                                                          \
    p = TENSOR__HD(p, z, tensor__erfd_p[3]);                                                                          \
    p = TENSOR__HD(p, z, tensor__erfd_p[2]);                                                                          \
    p = TENSOR__HD(p, z, tensor__erfd_p[1]);                                                                          \
    return TENSOR__HD(p, z, tensor__erfd_p[0]);                                                                       \
}                                                                                                                     \
/* erfc(z) for z >= 1 (relative error 2^-34): e^(-z^2) t G(t), t = 1 / (z + 2); 0 from z = 12                         \
   on (erfc(12) < 2^-210: every f32 result the callers form from it is 0 or 1 there). */                              \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VD TENSOR__F(erfcd_tail)(TENSOR__VD z) {                  \
    TENSOR__VL in = (TENSOR__VL)(z < 12.0);                                                                           \
    z = TENSOR__SELD(in, z, TENSOR__F(splatd)(12.0));                                                                 \
    TENSOR__VD t = 1.0 / (z + 2.0), g = TENSOR__F(splatd)(tensor__erfcd_g[10]);                                       \
    g = TENSOR__HD(g, t, tensor__erfcd_g[9]);                                                                         \
    g = TENSOR__HD(g, t, tensor__erfcd_g[8]);                                                                         \
    g = TENSOR__HD(g, t, tensor__erfcd_g[7]);                                                                         \
    g = TENSOR__HD(g, t, tensor__erfcd_g[6]);                                                                         \
    g = TENSOR__HD(g, t, tensor__erfcd_g[5]);                                                                         \
    g = TENSOR__HD(g, t, tensor__erfcd_g[4]);                                                                         \
    g = TENSOR__HD(g, t, tensor__erfcd_g[3]);                                                                         \
    g = TENSOR__HD(g, t, tensor__erfcd_g[2]);                                                                         \
    g = TENSOR__HD(g, t, tensor__erfcd_g[1]);                                                                         \
    g = TENSOR__HD(g, t, tensor__erfcd_g[0]);                                                                         \
    return TENSOR__SELD(in, TENSOR__F(expd)(-(z * z)) * t * g, TENSOR__F(splatd)(0.0));                               \
}                                                                                                                     \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VD TENSOR__F(erfd)(TENSOR__VD x) {                        \
    TENSOR__VD ax = TENSOR__F(absd)(x), r = x * TENSOR__F(erfd_small)(x);                                             \
    TENSOR__VL tail = ~(TENSOR__VL)(ax < 2.0);                                                                        \
    if (TENSOR__ANYD(tail)) {                                                                                         \
        TENSOR__VD big = (TENSOR__VD)((TENSOR__VL)(1.0 - TENSOR__F(erfcd_tail)(ax)) | ((TENSOR__VL)x & (-0x7fffffffffffffffLL - 1))); \
        r = TENSOR__SELD(tail, big, r);                                                                               \
    }                                                                                                                 \
    return TENSOR__SELD(x == x, r, x);                                                                                \
}                                                                                                                     \
/* sigmoid(x) = 1 / (1 + e) for x >= 0 and e / (1 + e) below, e = e^-|x|; silu(x) = x sigmoid(x) (-inf                \
   gives NaN, as the reference formula x / (1 + e^-x) does) */                                                        \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VD TENSOR__F(sigmoidd)(TENSOR__VD x) {                    \
    TENSOR__VD ax = TENSOR__F(absd)(x);                                                                               \
    TENSOR__VD e = TENSOR__F(expd)(-TENSOR__SELD(ax < 700.0, ax, TENSOR__F(splatd)(700.0))); /* NaN -> 700, restored below */ \
    TENSOR__VD s = TENSOR__SELD(x >= 0.0, TENSOR__F(splatd)(1.0), e) / (1.0 + e);                                     \
    return TENSOR__SELD(x == x, s, x);                                                                                \
}                                                                                                                     \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VD TENSOR__F(silud)(TENSOR__VD x) {                       \
    return TENSOR__SELD(x > -INFINITY, x * TENSOR__F(sigmoidd)(x), x * 0.0);                                          \
}                                                                                                                     \
/* gelu_tanh(x) = x (1 + tanh u) / 2 = x sigmoid(2u), u = sqrt(2/pi) (x + 0.044715 x^3); in double,                   \
   with the sigmoid split by sign so the negative tail does not cancel. */                                            \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VD TENSOR__F(gelu_tanhd)(TENSOR__VD x) {                  \
    TENSOR__VD y = 2.0 * (0.7978845608028654 * (x + 0.044715 * (x * x * x)));                                         \
    return TENSOR__SELD(x > -INFINITY, x * TENSOR__F(sigmoidd)(y), x * 0.0);                                          \
}                                                                                                                     \
/* sin x (cos when q0 = 1) for |x| <= 2^20: k = rint(2x / pi), r = x - k pi/2 with pi/2 in three                      \
   parts (33 + 32 + 53 bits: k * part is exact, r keeps ~2^-53 relative), then the quadrant's sin                     \
   or cos polynomial. Larger arguments, inf and NaN are left to the caller. */                                        \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VD TENSOR__F(sincosd)(TENSOR__VD x, int q0) {             \
    TENSOR__VD kf = (x * 0.63661977236758134 + 6755399441055744.0) - 6755399441055744.0;                              \
    TENSOR__VD r = TENSOR__FMAD(kf, TENSOR__F(splatd)(-1.57079632673412561e+00), x);                                  \
    r = TENSOR__FMAD(kf, TENSOR__F(splatd)(-6.07710050630396598e-11), r);                                             \
    r = TENSOR__FMAD(kf, TENSOR__F(splatd)(-2.02226624879595063e-21), r);                                             \
    TENSOR__VL q = (TENSOR__VL)(kf + 6755399441055744.0) - 0x4338000000000000LL + q0;                                 \
    TENSOR__VD z = r * r;                                                                                             \
    TENSOR__VD s = TENSOR__F(splatd)(tensor__sind_s[3]), c = TENSOR__F(splatd)(tensor__cosd_c[3]);                    \
    s = TENSOR__HD(s, z, tensor__sind_s[2]);                                                                          \
    c = TENSOR__HD(c, z, tensor__cosd_c[2]);                                                                          \
    s = TENSOR__HD(s, z, tensor__sind_s[1]);                                                                          \
    c = TENSOR__HD(c, z, tensor__cosd_c[1]);                                                                          \
    s = TENSOR__HD(s, z, tensor__sind_s[0]);                                                                          \
    c = TENSOR__HD(c, z, tensor__cosd_c[0]);                                                                          \
    s = TENSOR__FMAD(r * z, s, r);                                                                                    \
    c = TENSOR__FMAD(z * z, c, 1.0 - 0.5 * z);                                                                        \
    TENSOR__VD v = TENSOR__SELD((TENSOR__VL)((q & 1) == 0), s, c);                                                    \
    v = TENSOR__SELD((TENSOR__VL)((q & 2) == 0), v, -v);                                                              \
    return q0 ? v : TENSOR__SELD((TENSOR__VL)(x == 0.0), x, v); /* sin(-0) = -0 */                                    \
}

/* ---- row kernels: out[i] = f(a[i]) etc. over n floats, any alignment ---- */
/* f32 lanes; a tail shorter than a vector goes through a zero-padded buffer */
#define TENSOR__SIMD_UNARY_F32(name, EXPR)                                                                            \
static TENSOR__TARGET void TENSOR__F(u_##name)(float *o, const float *a, int64_t n, const double *prm) {              \
    (void)prm;                                                                                                        \
    for (int64_t i = 0; i < n; i += TENSOR__W) {                                                                      \
        float buf[TENSOR__W];                                                                                         \
        const float *src = a + i;                                                                                     \
        float *dst = o + i;                                                                                           \
        if (n - i < TENSOR__W) { /* the tail, through a zero-padded buffer */                                         \
            memset(buf, 0, sizeof buf);                                                                               \
            memcpy(buf, src, (size_t)(n - i) * sizeof(float));                                                        \
            src = dst = buf;                                                                                          \
        }                                                                                                             \
        TENSOR__VF x = TENSOR__F(load)(src);                                                                          \
        TENSOR__F(store)(dst, EXPR);                                                                                  \
        if (dst == buf) memcpy(o + i, buf, (size_t)(n - i) * sizeof(float));                                          \
    }                                                                                                                 \
}
/* computed in double: TENSOR__DW lanes at a time */
#define TENSOR__SIMD_UNARY_F64(name, EXPR)                                                                            \
static TENSOR__TARGET void TENSOR__F(u_##name)(float *o, const float *a, int64_t n, const double *prm) {              \
    (void)prm;                                                                                                        \
    for (int64_t i = 0; i < n; i += TENSOR__DW) {                                                                     \
        float buf[TENSOR__DW];                                                                                        \
        const float *src = a + i;                                                                                     \
        float *dst = o + i;                                                                                           \
        if (n - i < TENSOR__DW) {                                                                                     \
            memset(buf, 0, sizeof buf);                                                                               \
            memcpy(buf, src, (size_t)(n - i) * sizeof(float));                                                        \
            src = dst = buf;                                                                                          \
        }                                                                                                             \
        TENSOR__VD x = TENSOR__LOADH(src);                                                                            \
        TENSOR__STOREH(dst, EXPR);                                                                                    \
        if (dst == buf) memcpy(o + i, buf, (size_t)(n - i) * sizeof(float));                                          \
    }                                                                                                                 \
}
/* sin and cos: the vector path for |x| <= 2^20, libm in double for the rare larger, inf or NaN */
#define TENSOR__SIMD_SINCOS(name, Q0, LIBM)                                                                           \
static TENSOR__TARGET void TENSOR__F(u_##name)(float *o, const float *a, int64_t n, const double *prm) {              \
    (void)prm;                                                                                                        \
    for (int64_t i = 0; i < n; i += TENSOR__DW) {                                                                     \
        float buf[TENSOR__DW] = {0};                                                                                  \
        int64_t len = n - i < TENSOR__DW ? n - i : TENSOR__DW;                                                        \
        const float *src = a + i;                                                                                     \
        float *dst = o + i;                                                                                           \
        if (len < TENSOR__DW) {                                                                                       \
            memcpy(buf, src, (size_t)len * sizeof(float));                                                            \
            src = dst = buf;                                                                                          \
        }                                                                                                             \
        TENSOR__VD x = TENSOR__LOADH(src);                                                                            \
        TENSOR__VL far = ~(TENSOR__VL)(TENSOR__F(absd)(x) <= 1048576.0);                                              \
        /* far lanes (and inf, NaN) go in as 0: their quadrant would overflow the int64 lanes */                      \
        TENSOR__STOREH(dst, TENSOR__F(sincosd)(TENSOR__SELD(far, TENSOR__F(splatd)(0.0), x), Q0));                    \
        if (TENSOR__ANYD(far))                                                                                        \
            for (int64_t j = 0; j < len; j++)                                                                         \
                if (far[j]) dst[j] = (float)LIBM((double)a[i + j]);                                                   \
        if (len < TENSOR__DW) memcpy(o + i, buf, (size_t)len * sizeof(float));                                        \
    }                                                                                                                 \
}
#define TENSOR__SIMD_BINARY(name, EXPR)                                                                               \
static TENSOR__TARGET void TENSOR__F(b_##name)(float *o, const float *a, const float *b, int64_t n, int mode) {       \
    int64_t i = 0;                                                                                                    \
    if (mode == 0)                                                                                                    \
        for (; i + TENSOR__W <= n; i += TENSOR__W) {                                                                  \
            TENSOR__VF x = TENSOR__F(load)(a + i), y = TENSOR__F(load)(b + i);                                        \
            TENSOR__F(store)(o + i, EXPR);                                                                            \
        }                                                                                                             \
    else if (mode == 1) {                                                                                             \
        TENSOR__VF y = TENSOR__F(splat)(b[0]);                                                                        \
        for (; i + TENSOR__W <= n; i += TENSOR__W) {                                                                  \
            TENSOR__VF x = TENSOR__F(load)(a + i);                                                                    \
            TENSOR__F(store)(o + i, EXPR);                                                                            \
        }                                                                                                             \
    } else {                                                                                                          \
        TENSOR__VF x = TENSOR__F(splat)(a[0]);                                                                        \
        for (; i + TENSOR__W <= n; i += TENSOR__W) {                                                                  \
            TENSOR__VF y = TENSOR__F(load)(b + i);                                                                    \
            TENSOR__F(store)(o + i, EXPR);                                                                            \
        }                                                                                                             \
    }                                                                                                                 \
    if (i < n) {                                                                                                      \
        float ba[TENSOR__W] = {0}, bb[TENSOR__W] = {0};                                                               \
        for (int64_t j = i; j < n; j++) {                                                                             \
            ba[j - i] = a[mode == 2 ? 0 : j];                                                                         \
            bb[j - i] = b[mode == 1 ? 0 : j];                                                                         \
        }                                                                                                             \
        TENSOR__VF x = TENSOR__F(load)(ba), y = TENSOR__F(load)(bb);                                                  \
        TENSOR__F(store)(ba, EXPR);                                                                                   \
        memcpy(o + i, ba, (size_t)(n - i) * sizeof(float));                                                           \
    }                                                                                                                 \
}
/* comparisons: bool (0/1 bytes) out */
#define TENSOR__SIMD_COMPARE(name, OP)                                                                                \
static TENSOR__TARGET void TENSOR__F(c_##name)(uint8_t *o, const float *a, const float *b, int64_t n, int mode) {     \
    for (int64_t i = 0; i < n; i += TENSOR__W) {                                                                      \
        int64_t len = n - i < TENSOR__W ? n - i : TENSOR__W;                                                          \
        TENSOR__VF x, y;                                                                                              \
        if (len == TENSOR__W) {                                                                                       \
            x = mode == 2 ? TENSOR__F(splat)(a[0]) : TENSOR__F(load)(a + i);                                          \
            y = mode == 1 ? TENSOR__F(splat)(b[0]) : TENSOR__F(load)(b + i);                                          \
        } else {                                                                                                      \
            float ba[TENSOR__W] = {0}, bb[TENSOR__W] = {0};                                                           \
            for (int64_t j = i; j < n; j++) {                                                                         \
                ba[j - i] = a[mode == 2 ? 0 : j];                                                                     \
                bb[j - i] = b[mode == 1 ? 0 : j];                                                                     \
            }                                                                                                         \
            x = TENSOR__F(load)(ba);                                                                                  \
            y = TENSOR__F(load)(bb);                                                                                  \
        }                                                                                                             \
        TENSOR__VB v = __builtin_convertvector((TENSOR__VI)(x OP y), TENSOR__VB) & 1;                                 \
        memcpy(o + i, &v, (size_t)len);                                                                               \
    }                                                                                                                 \
}

/* SLEEF 3.5's log1pf overflows to inf from about 1e38 on: log x is log1p x in f32 long before. */
#ifdef TENSOR_USE_SLEEF
#define TENSOR__SIMD_OWN_OR_SLEEF                                                                          \
    TENSOR__SIMD_UNARY_F32(exp, TENSOR__SLEEF(exp, x))                                                     \
    TENSOR__SIMD_UNARY_F32(log, TENSOR__SLEEF(log, x))                                                     \
    TENSOR__SIMD_UNARY_F32(expm1, TENSOR__SLEEF(expm1, x))                                                 \
    TENSOR__SIMD_UNARY_F32(log1p, TENSOR__SEL(x < 1e30f, TENSOR__SLEEF(log1p, x), TENSOR__SLEEF(log, x)))         \
    TENSOR__SIMD_UNARY_F32(tanh, TENSOR__SLEEF(tanh, x))                                                   \
    TENSOR__SIMD_UNARY_F32(sin, TENSOR__SLEEF(sin, x))                                                     \
    TENSOR__SIMD_UNARY_F32(cos, TENSOR__SLEEF(cos, x))                                                     \
    TENSOR__SIMD_UNARY_F32(erf, TENSOR__SLEEF(erf, x))
#else
#define TENSOR__SIMD_OWN_OR_SLEEF                                                                          \
    TENSOR__SIMD_UNARY_F32(exp, TENSOR__F(exp)(x))                                                         \
    TENSOR__SIMD_UNARY_F32(log, TENSOR__F(log)(x))                                                         \
    TENSOR__SIMD_UNARY_F32(expm1, TENSOR__F(expm1)(x))                                                     \
    TENSOR__SIMD_UNARY_F32(log1p, TENSOR__F(log1p)(x))                                                     \
    TENSOR__SIMD_UNARY_F32(tanh, TENSOR__F(tanh)(x))                                                       \
    TENSOR__SIMD_SINCOS(sin, 0, sin)                                                                       \
    TENSOR__SIMD_SINCOS(cos, 1, cos)                                                                       \
    TENSOR__SIMD_UNARY_F64(erf, TENSOR__F(erfd)(x))
#endif

/* The optimizer update with torch.optim's formulas (optim.h has the reference loop, in double), in
   f32 lanes. TENSOR__FMA fuses where the ISA has it (avx2, avx512, neon), so instances may differ
   in the last bits; sqrt and the divides are IEEE (correctly rounded), no approximations. The tail
   goes through zero-padded buffers, so every element takes the same vector arithmetic wherever a
   thread's range starts: the result does not depend on the thread count. */
#define TENSOR__SIMD_OPTIM                                                                                            \
static TENSOR__TARGET void TENSOR__F(optim)(float *p, const float *g, float *s1, float *s2, int64_t n, const tensor__optim_consts *k) { \
    const int kind = k->kind;                                                                                         \
    const bool first = k->first, nesterov = k->nesterov, decay = k->decay;                                            \
    const TENSOR__VF neg_lr = TENSOR__F(splat)(k->neg_lr), mom = TENSOR__F(splat)(k->momentum);                       \
    const TENSOR__VF wd = TENSOR__F(splat)(k->weight_decay), keep = TENSOR__F(splat)(k->keep);                        \
    const TENSOR__VF b1 = TENSOR__F(splat)(k->beta1), c1 = TENSOR__F(splat)(k->one_minus_beta1);                      \
    const TENSOR__VF b2 = TENSOR__F(splat)(k->beta2), c2 = TENSOR__F(splat)(k->one_minus_beta2);                      \
    const TENSOR__VF sb2 = TENSOR__F(splat)(k->sqrt_bias2), eps = TENSOR__F(splat)(k->eps);                           \
    const TENSOR__VF step = TENSOR__F(splat)(k->step_size);                                                           \
    for (int64_t i = 0; i < n; i += TENSOR__W) {                                                                      \
        int64_t len = n - i < TENSOR__W ? n - i : TENSOR__W;                                                          \
        float *pp = p + i, *pm = s1 ? s1 + i : NULL, *pv = s2 ? s2 + i : NULL;                                        \
        const float *pg = g + i;                                                                                      \
        float bp[TENSOR__W], bg[TENSOR__W], bm[TENSOR__W], bv[TENSOR__W];                                             \
        if (len < TENSOR__W) { /* the tail, through zero-padded buffers */                                            \
            memset(bp, 0, sizeof bp);                                                                                 \
            memset(bg, 0, sizeof bg);                                                                                 \
            memset(bm, 0, sizeof bm);                                                                                 \
            memset(bv, 0, sizeof bv);                                                                                 \
            memcpy(bp, pp, (size_t)len * sizeof(float));                                                              \
            memcpy(bg, pg, (size_t)len * sizeof(float));                                                              \
            if (pm) { memcpy(bm, pm, (size_t)len * sizeof(float)); pm = bm; }                                         \
            if (pv) { memcpy(bv, pv, (size_t)len * sizeof(float)); pv = bv; }                                         \
            pp = bp;                                                                                                  \
            pg = bg;                                                                                                  \
        }                                                                                                             \
        TENSOR__VF P = TENSOR__F(load)(pp), G = TENSOR__F(load)(pg);                                                  \
        if (kind == TENSOR__SGD) {                                                                                    \
            if (decay) G = TENSOR__FMA(wd, P, G);                                                                     \
            if (pm) {                                                                                                 \
                TENSOR__VF M = G; /* dampening 0 */                                                                   \
                if (!first) M = TENSOR__FMA(mom, TENSOR__F(load)(pm), G);                                             \
                TENSOR__F(store)(pm, M);                                                                              \
                if (nesterov) G = TENSOR__FMA(mom, M, G);                                                             \
                else G = M;                                                                                           \
            }                                                                                                         \
            P = TENSOR__FMA(neg_lr, G, P);                                                                            \
        } else {                                                                                                      \
            if (kind == TENSOR__ADAMW) P = P * keep;                                                                  \
            else if (decay) G = TENSOR__FMA(wd, P, G);                                                                \
            TENSOR__VF M = TENSOR__FMA(c1, G, b1 * TENSOR__F(load)(pm));                                              \
            TENSOR__VF V = TENSOR__FMA(c2 * G, G, b2 * TENSOR__F(load)(pv));                                          \
            TENSOR__F(store)(pm, M);                                                                                  \
            TENSOR__F(store)(pv, V);                                                                                  \
            TENSOR__VF denom = TENSOR__SQRT(V) / sb2 + eps;                                                           \
            P = P - step * M / denom;                                                                                 \
        }                                                                                                             \
        TENSOR__F(store)(pp, P);                                                                                      \
        if (len < TENSOR__W) {                                                                                        \
            memcpy(p + i, bp, (size_t)len * sizeof(float));                                                           \
            if (s1) memcpy(s1 + i, bm, (size_t)len * sizeof(float));                                                  \
            if (s2) memcpy(s2 + i, bv, (size_t)len * sizeof(float));                                                  \
        }                                                                                                             \
    }                                                                                                                 \
}

/* The kernels of one instance and the function that installs them. The float-valued ops that are
   exact in f32 (neg, abs, sqrt, square, reciprocal, relu, clamps, + - * /, max, min, comparisons)
   give bit-identical results to the reference loops, which compute in double and round once;
   leaky_relu computes in double for the same reason. */
#define TENSOR__SIMD_KERNELS                                                                                          \
TENSOR__SIMD_MATH                                                                                                     \
TENSOR__SIMD_OWN_OR_SLEEF                                                                                             \
TENSOR__SIMD_UNARY_F32(neg, -x)                                                                                       \
TENSOR__SIMD_UNARY_F32(abs, TENSOR__F(abs)(x))                                                                        \
TENSOR__SIMD_UNARY_F32(sqrt, TENSOR__SQRT(x))                                                                         \
TENSOR__SIMD_UNARY_F32(square, x * x)                                                                                 \
TENSOR__SIMD_UNARY_F32(reciprocal, 1.0f / x)                                                                          \
TENSOR__SIMD_UNARY_F32(relu, TENSOR__SEL(x < 0.0f, TENSOR__F(splat)(0.0f), x))                                        \
TENSOR__SIMD_UNARY_F32(relu6, TENSOR__F(clamp)(x, 0.0f, 6.0f))                                                        \
TENSOR__SIMD_UNARY_F32(hardtanh, TENSOR__F(clamp)(x, (float)prm[0], (float)prm[1]))                                   \
TENSOR__SIMD_UNARY_F32(clamp, TENSOR__F(clamp)(x, (float)prm[0], (float)prm[1]))                                      \
TENSOR__SIMD_UNARY_F64(leaky_relu, TENSOR__SELD(x > 0.0, x, x * prm[0]))                                              \
TENSOR__SIMD_UNARY_F64(sigmoid, TENSOR__F(sigmoidd)(x))                                                               \
TENSOR__SIMD_UNARY_F64(silu, TENSOR__F(silud)(x))                                                                     \
TENSOR__SIMD_UNARY_F32(softplus, TENSOR__F(softplus)(x))                                                              \
TENSOR__SIMD_UNARY_F32(gelu, TENSOR__F(geluf)(x))                                                                     \
TENSOR__SIMD_UNARY_F64(gelu_tanh, TENSOR__F(gelu_tanhd)(x))                                                           \
TENSOR__SIMD_BINARY(add, x + y)                                                                                       \
TENSOR__SIMD_BINARY(sub, x - y)                                                                                       \
TENSOR__SIMD_BINARY(mul, x * y)                                                                                       \
TENSOR__SIMD_BINARY(div, x / y)                                                                                       \
TENSOR__SIMD_BINARY(maximum, TENSOR__SEL((x > y) | (x != x), x, y)) /* a NaN x or y gives it */                        \
TENSOR__SIMD_BINARY(minimum, TENSOR__SEL((x < y) | (x != x), x, y))                                                 \
TENSOR__SIMD_COMPARE(eq, ==)                                                                                          \
TENSOR__SIMD_COMPARE(ne, !=)                                                                                          \
TENSOR__SIMD_COMPARE(lt, <)                                                                                           \
TENSOR__SIMD_COMPARE(le, <=)                                                                                          \
TENSOR__SIMD_COMPARE(gt, >)                                                                                           \
TENSOR__SIMD_COMPARE(ge, >=)                                                                                          \
TENSOR__SIMD_OPTIM                                                                                                    \
static void TENSOR__F(install)(tensor__simd_isa *t) {                                                                 \
    t->width = TENSOR__W;                                                                                             \
    t->unary[TENSOR_OP_exp] = TENSOR__F(u_exp);                                                                       \
    t->unary[TENSOR_OP_log] = TENSOR__F(u_log);                                                                       \
    t->unary[TENSOR_OP_expm1] = TENSOR__F(u_expm1);                                                                   \
    t->unary[TENSOR_OP_log1p] = TENSOR__F(u_log1p);                                                                   \
    t->unary[TENSOR_OP_tanh] = TENSOR__F(u_tanh);                                                                     \
    t->unary[TENSOR_OP_sin] = TENSOR__F(u_sin);                                                                       \
    t->unary[TENSOR_OP_cos] = TENSOR__F(u_cos);                                                                       \
    t->unary[TENSOR_OP_erf] = TENSOR__F(u_erf);                                                                       \
    t->unary[TENSOR_OP_neg] = TENSOR__F(u_neg);                                                                       \
    t->unary[TENSOR_OP_abs] = TENSOR__F(u_abs);                                                                       \
    t->unary[TENSOR_OP_sqrt] = TENSOR__F(u_sqrt);                                                                     \
    t->unary[TENSOR_OP_square] = TENSOR__F(u_square);                                                                 \
    t->unary[TENSOR_OP_reciprocal] = TENSOR__F(u_reciprocal);                                                         \
    t->unary[TENSOR_OP_relu] = TENSOR__F(u_relu);                                                                     \
    t->unary[TENSOR_OP_relu6] = TENSOR__F(u_relu6);                                                                   \
    t->unary[TENSOR_OP_hardtanh] = TENSOR__F(u_hardtanh);                                                             \
    t->unary[TENSOR_OP_clamp] = TENSOR__F(u_clamp);                                                                   \
    t->unary[TENSOR_OP_leaky_relu] = TENSOR__F(u_leaky_relu);                                                         \
    t->unary[TENSOR_OP_sigmoid] = TENSOR__F(u_sigmoid);                                                               \
    t->unary[TENSOR_OP_silu] = TENSOR__F(u_silu);                                                                     \
    t->unary[TENSOR_OP_softplus] = TENSOR__F(u_softplus);                                                             \
    t->unary[TENSOR_OP_gelu] = TENSOR__F(u_gelu);                                                                     \
    t->unary[TENSOR_OP_gelu_tanh] = TENSOR__F(u_gelu_tanh);                                                           \
    t->binary[TENSOR_OP_add] = TENSOR__F(b_add);                                                                      \
    t->binary[TENSOR_OP_sub] = TENSOR__F(b_sub);                                                                      \
    t->binary[TENSOR_OP_mul] = TENSOR__F(b_mul);                                                                      \
    t->binary[TENSOR_OP_div] = TENSOR__F(b_div);                                                                      \
    t->binary[TENSOR_OP_maximum] = TENSOR__F(b_maximum);                                                              \
    t->binary[TENSOR_OP_minimum] = TENSOR__F(b_minimum);                                                              \
    t->compare[TENSOR_OP_eq] = TENSOR__F(c_eq);                                                                       \
    t->compare[TENSOR_OP_ne] = TENSOR__F(c_ne);                                                                       \
    t->compare[TENSOR_OP_lt] = TENSOR__F(c_lt);                                                                       \
    t->compare[TENSOR_OP_le] = TENSOR__F(c_le);                                                                       \
    t->compare[TENSOR_OP_gt] = TENSOR__F(c_gt);                                                                       \
    t->compare[TENSOR_OP_ge] = TENSOR__F(c_ge);                                                                       \
    t->optim = TENSOR__F(optim);                                                                                      \
}

/* ---- row primitives: the contiguous f32 loops of the reductions, softmax, cross_entropy and the
   norms (the tensor__row_*_f32 entry points at the end of this part call them through the table) ----
   The public sum and mean (row_sum) convert each element to double and add there, in four vector
   accumulators: as exact as the reference for sums that cancel, and still faster than memory
   delivers a long row. The sums inside softmax, cross_entropy and the norms (of e^x, squares,
   products) accumulate in f32 lanes over blocks of TENSOR__ROW_BLOCK elements and then in double:
   a block adds at most ~10 roundings of 2^-24 relative to its own magnitude. Tails shorter than a
   vector go through zero-padded buffers or plain loops. */
#define TENSOR__ROW_BLOCK 256 /* a multiple of 2 vectors of every instance */
#define TENSOR__SIMD_ROWS                                                                                             \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VD TENSOR__F(rw_loadd)(const double *p) { TENSOR__VD v; memcpy(&v, p, sizeof v); return v; } \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET void TENSOR__F(rw_stored)(double *p, TENSOR__VD v) { memcpy(p, &v, sizeof v); } \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET double TENSOR__F(rw_hsumd)(TENSOR__VD v) {                        \
    double d[8] = {0, 0, 0, 0, 0, 0, 0, 0}; /* pairwise, written out: the compiler keeps it in registers */           \
    memcpy(d, &v, sizeof v);                                                                                          \
    if (TENSOR__DW > 4) { d[0] += d[4]; d[1] += d[5]; d[2] += d[6]; d[3] += d[7]; }                                   \
    if (TENSOR__DW > 2) { d[0] += d[2]; d[1] += d[3]; }                                                               \
    if (TENSOR__DW > 1) d[0] += d[1];                                                                                 \
    return d[0];                                                                                                      \
}                                                                                                                     \
/* acc (doubles) += the lanes of v, whose floats are in f (v stored) */                                               \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VD TENSOR__F(rw_widen)(TENSOR__VD acc, TENSOR__VF v) {    \
    float f[TENSOR__W];                                                                                               \
    TENSOR__F(store)(f, v);                                                                                           \
    for (int k = 0; k < TENSOR__W; k += TENSOR__DW) acc = acc + TENSOR__LOADH(f + k);                                 \
    return acc;                                                                                                       \
}                                                                                                                     \
/* d[0 .. W) += the lanes of v, in double */                                                                          \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET void TENSOR__F(rw_addh)(double *d, TENSOR__VF v) {                \
    float f[TENSOR__W];                                                                                               \
    TENSOR__F(store)(f, v);                                                                                           \
    for (int k = 0; k < TENSOR__W; k += TENSOR__DW)                                                                   \
        TENSOR__F(rw_stored)(d + k, TENSOR__F(rw_loadd)(d + k) + TENSOR__LOADH(f + k));                               \
}                                                                                                                     \
/* The first k < W elements of p, the other lanes `fill`; and the store of the first k lanes. These                   \
   are the plain versions: an instance with masked loads and stores defines TENSOR__ROW_LOADN /                       \
   TENSOR__ROW_STOREN with them, the others as these. */                                                              \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VF TENSOR__F(rw_part)(const float *p, int64_t k, float fill) { \
    float f[TENSOR__W];                                                                                               \
    for (int j = 0; j < TENSOR__W; j++) f[j] = fill;                                                                  \
    for (int64_t j = 0; j < k; j++) f[j] = p[j];                                                                      \
    return TENSOR__F(load)(f);                                                                                        \
}                                                                                                                     \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET void TENSOR__F(rw_store_part)(float *p, TENSOR__VF v, int64_t k) { \
    float f[TENSOR__W];                                                                                               \
    TENSOR__F(store)(f, v);                                                                                           \
    for (int64_t j = 0; j < k; j++) p[j] = f[j];                                                                      \
}                                                                                                                     \
/* lanes below k set */                                                                                               \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET TENSOR__VI TENSOR__F(rw_first)(int64_t k) {                       \
    TENSOR__VI io;                                                                                                    \
    for (int j = 0; j < TENSOR__W; j++) io[j] = j;                                                                    \
    return io < (int32_t)k;                                                                                           \
}                                                                                                                     \
/* sum of a row, each element in double (the public sum and mean) */                                                  \
static TENSOR__TARGET double TENSOR__F(row_sum)(const float *x, int64_t n) {                                          \
    TENSOR__VD a0 = TENSOR__F(splatd)(0.0), a1 = a0;                                                                  \
    int64_t i = 0;                                                                                                    \
    for (; i + 2 * TENSOR__DW <= n; i += 2 * TENSOR__DW) {                                                            \
        a0 = a0 + TENSOR__LOADH(x + i);                                                                               \
        a1 = a1 + TENSOR__LOADH(x + i + TENSOR__DW);                                                                  \
    }                                                                                                                 \
    if (i + TENSOR__DW <= n) { a0 = a0 + TENSOR__LOADH(x + i); i += TENSOR__DW; }                                     \
    double tail = 0;                                                                                                  \
    for (; i < n; i++) tail += (double)x[i];                                                                          \
    return TENSOR__F(rw_hsumd)(a0 + a1) + tail;                                                                       \
}                                                                                                                     \
static TENSOR__TARGET double TENSOR__F(row_sum_f64)(const double *x, int64_t n) {                                     \
    TENSOR__VD a0 = TENSOR__F(splatd)(0.0), a1 = a0, a2 = a0, a3 = a0;                                                \
    int64_t i = 0;                                                                                                    \
    for (; i + 4 * TENSOR__DW <= n; i += 4 * TENSOR__DW) {                                                            \
        a0 = a0 + TENSOR__F(rw_loadd)(x + i);                                                                         \
        a1 = a1 + TENSOR__F(rw_loadd)(x + i + TENSOR__DW);                                                            \
        a2 = a2 + TENSOR__F(rw_loadd)(x + i + 2 * TENSOR__DW);                                                        \
        a3 = a3 + TENSOR__F(rw_loadd)(x + i + 3 * TENSOR__DW);                                                        \
    }                                                                                                                 \
    double tail = 0;                                                                                                  \
    for (; i < n; i++) tail += x[i];                                                                                  \
    return TENSOR__F(rw_hsumd)((a0 + a1) + (a2 + a3)) + tail;                                                         \
}                                                                                                                     \
/* acc[j] += x[j] in double (the column sums of reductions over outer dims) */                                        \
static TENSOR__TARGET void TENSOR__F(row_cols_add)(double *acc, const float *x, int64_t n) {                          \
    int64_t j = 0;                                                                                                    \
    for (; j + TENSOR__DW <= n; j += TENSOR__DW)                                                                      \
        TENSOR__F(rw_stored)(acc + j, TENSOR__F(rw_loadd)(acc + j) + TENSOR__LOADH(x + j));                           \
    for (; j < n; j++) acc[j] += (double)x[j];                                                                        \
}                                                                                                                     \
/* sum of (x - m)^2: padding lanes hold m */                                                                          \
static TENSOR__TARGET double TENSOR__F(row_sqdev)(const float *x, int64_t n, float m) {                               \
    TENSOR__VD d = TENSOR__F(splatd)(0.0);                                                                            \
    TENSOR__VF vm = TENSOR__F(splat)(m);                                                                              \
    int64_t i = 0, full = n - n % TENSOR__W;                                                                          \
    while (i < full) {                                                                                                \
        int64_t end = full - i > TENSOR__ROW_BLOCK ? i + TENSOR__ROW_BLOCK : full;                                    \
        TENSOR__VF a0 = TENSOR__F(splat)(0.0f), a1 = a0;                                                              \
        for (; i + 2 * TENSOR__W <= end; i += 2 * TENSOR__W) {                                                        \
            TENSOR__VF d0 = TENSOR__F(load)(x + i) - vm, d1 = TENSOR__F(load)(x + i + TENSOR__W) - vm;                \
            a0 = TENSOR__FMA(d0, d0, a0);                                                                             \
            a1 = TENSOR__FMA(d1, d1, a1);                                                                             \
        }                                                                                                             \
        if (i < end) { TENSOR__VF d0 = TENSOR__F(load)(x + i) - vm; a0 = TENSOR__FMA(d0, d0, a0); i += TENSOR__W; }   \
        d = TENSOR__F(rw_widen)(d, a0 + a1);                                                                          \
    }                                                                                                                 \
    if (i < n) { TENSOR__VF d0 = TENSOR__ROW_LOADN(x + i, n - i, m) - vm; d = TENSOR__F(rw_widen)(d, d0 * d0); }      \
    return TENSOR__F(rw_hsumd)(d);                                                                                    \
}                                                                                                                     \
/* sum of a * b */                                                                                                    \
static TENSOR__TARGET double TENSOR__F(row_dot)(const float *a, const float *b, int64_t n) {                          \
    TENSOR__VD d = TENSOR__F(splatd)(0.0);                                                                            \
    int64_t i = 0, full = n - n % TENSOR__W;                                                                          \
    while (i < full) {                                                                                                \
        int64_t end = full - i > TENSOR__ROW_BLOCK ? i + TENSOR__ROW_BLOCK : full;                                    \
        TENSOR__VF a0 = TENSOR__F(splat)(0.0f), a1 = a0;                                                              \
        for (; i + 2 * TENSOR__W <= end; i += 2 * TENSOR__W) {                                                        \
            a0 = TENSOR__FMA(TENSOR__F(load)(a + i), TENSOR__F(load)(b + i), a0);                                     \
            a1 = TENSOR__FMA(TENSOR__F(load)(a + i + TENSOR__W), TENSOR__F(load)(b + i + TENSOR__W), a1);             \
        }                                                                                                             \
        if (i < end) { a0 = TENSOR__FMA(TENSOR__F(load)(a + i), TENSOR__F(load)(b + i), a0); i += TENSOR__W; }        \
        d = TENSOR__F(rw_widen)(d, a0 + a1);                                                                          \
    }                                                                                                                 \
    if (i < n) d = TENSOR__F(rw_widen)(d, TENSOR__ROW_LOADN(a + i, n - i, 0.0f) * TENSOR__ROW_LOADN(b + i, n - i, 0.0f)); \
    return TENSOR__F(rw_hsumd)(d);                                                                                    \
}                                                                                                                     \
/* the largest element, -inf for none (a NaN may or may not win: the callers find NaN rows from                       \
   row_sumexp, whose e^(NaN - m) is NaN) */                                                                           \
static TENSOR__TARGET float TENSOR__F(row_max)(const float *x, int64_t n) {                                           \
    TENSOR__VF m0 = TENSOR__F(splat)(-INFINITY), m1 = m0;                                                             \
    int64_t i = 0;                                                                                                    \
    for (; i + 2 * TENSOR__W <= n; i += 2 * TENSOR__W) {                                                              \
        m0 = TENSOR__MAX(m0, TENSOR__F(load)(x + i));                                                                 \
        m1 = TENSOR__MAX(m1, TENSOR__F(load)(x + i + TENSOR__W));                                                     \
    }                                                                                                                 \
    if (i + TENSOR__W <= n) { m0 = TENSOR__MAX(m0, TENSOR__F(load)(x + i)); i += TENSOR__W; }                         \
    if (i < n) m1 = TENSOR__MAX(m1, TENSOR__ROW_LOADN(x + i, n - i, -INFINITY));                                      \
    float f[16];                                                                                                      \
    TENSOR__F(store)(f, TENSOR__MAX(m0, m1));                                                                         \
    int w = TENSOR__W;                                                                                                \
    if (w > 8) { for (int j = 0; j < 8; j++) f[j] = f[j + 8] > f[j] ? f[j + 8] : f[j]; w = 8; }                       \
    if (w > 4) { for (int j = 0; j < 4; j++) f[j] = f[j + 4] > f[j] ? f[j + 4] : f[j]; w = 4; }                       \
    if (w > 2) { f[0] = f[2] > f[0] ? f[2] : f[0]; f[1] = f[3] > f[1] ? f[3] : f[1]; }                                \
    if (w > 1) f[0] = f[1] > f[0] ? f[1] : f[0];                                                                      \
    return f[0];                                                                                                      \
}                                                                                                                     \
/* sum of e^(x - m) (the layer's exp); e^(x - m) also stored to y when y is not NULL. Padding lanes                   \
   hold m and are zeroed after the exp. */                                                                            \
static TENSOR__TARGET double TENSOR__F(row_sumexp)(float *y, const float *x, int64_t n, float m) {                    \
    TENSOR__VD d = TENSOR__F(splatd)(0.0);                                                                            \
    TENSOR__VF vm = TENSOR__F(splat)(m);                                                                              \
    int64_t i = 0, full = n - n % TENSOR__W;                                                                          \
    while (i < full) {                                                                                                \
        int64_t end = full - i > TENSOR__ROW_BLOCK ? i + TENSOR__ROW_BLOCK : full;                                    \
        TENSOR__VF a0 = TENSOR__F(splat)(0.0f), a1 = a0;                                                              \
        for (; i + 2 * TENSOR__W <= end; i += 2 * TENSOR__W) { /* two independent exponentials per step */            \
            TENSOR__VF e0 = TENSOR__F(exp)(TENSOR__F(load)(x + i) - vm);                                              \
            TENSOR__VF e1 = TENSOR__F(exp)(TENSOR__F(load)(x + i + TENSOR__W) - vm);                                  \
            if (y) { TENSOR__F(store)(y + i, e0); TENSOR__F(store)(y + i + TENSOR__W, e1); }                          \
            a0 = a0 + e0;                                                                                             \
            a1 = a1 + e1;                                                                                             \
        }                                                                                                             \
        if (i < end) {                                                                                                \
            TENSOR__VF e0 = TENSOR__F(exp)(TENSOR__F(load)(x + i) - vm);                                              \
            if (y) TENSOR__F(store)(y + i, e0);                                                                       \
            a0 = a0 + e0;                                                                                             \
            i += TENSOR__W;                                                                                           \
        }                                                                                                             \
        d = TENSOR__F(rw_widen)(d, a0 + a1);                                                                          \
    }                                                                                                                 \
    if (i < n) {                                                                                                      \
        TENSOR__VF e0 = TENSOR__F(exp)(TENSOR__ROW_LOADN(x + i, n - i, m) - vm);                                      \
        e0 = TENSOR__SEL(TENSOR__F(rw_first)(n - i), e0, TENSOR__F(splat)(0.0f));                                     \
        if (y) TENSOR__ROW_STOREN(y + i, e0, n - i);                                                                  \
        d = TENSOR__F(rw_widen)(d, e0);                                                                               \
    }                                                                                                                 \
    return TENSOR__F(rw_hsumd)(d);                                                                                    \
}                                                                                                                     \
/* y = x * s + t */                                                                                                   \
static TENSOR__TARGET void TENSOR__F(row_affine)(float *y, const float *x, int64_t n, float s, float t) {             \
    TENSOR__VF vs = TENSOR__F(splat)(s), vt = TENSOR__F(splat)(t);                                                    \
    int64_t i = 0;                                                                                                    \
    for (; i + TENSOR__W <= n; i += TENSOR__W) TENSOR__F(store)(y + i, TENSOR__FMA(TENSOR__F(load)(x + i), vs, vt));  \
    if (i < n) TENSOR__ROW_STOREN(y + i, TENSOR__FMA(TENSOR__ROW_LOADN(x + i, n - i, 0.0f), vs, vt), n - i);          \
}                                                                                                                     \
/* y = (x - a) - b (log_softmax: x - max - log(sum)) */                                                               \
static TENSOR__TARGET void TENSOR__F(row_sub2)(float *y, const float *x, int64_t n, float a, float b) {               \
    TENSOR__VF va = TENSOR__F(splat)(a), vb = TENSOR__F(splat)(b);                                                    \
    int64_t i = 0;                                                                                                    \
    for (; i + TENSOR__W <= n; i += TENSOR__W) TENSOR__F(store)(y + i, (TENSOR__F(load)(x + i) - va) - vb);           \
    if (i < n) TENSOR__ROW_STOREN(y + i, (TENSOR__ROW_LOADN(x + i, n - i, 0.0f) - va) - vb, n - i);                   \
}                                                                                                                     \
/* y = (y * s) * (g - d) (softmax backward, y holding e^(x - max) and s = 1 / sum) */                                 \
static TENSOR__TARGET void TENSOR__F(row_smbwd)(float *y, const float *g, int64_t n, float s, float d) {              \
    TENSOR__VF vs = TENSOR__F(splat)(s), vd = TENSOR__F(splat)(d);                                                    \
    int64_t i = 0;                                                                                                    \
    for (; i + TENSOR__W <= n; i += TENSOR__W)                                                                        \
        TENSOR__F(store)(y + i, (TENSOR__F(load)(y + i) * vs) * (TENSOR__F(load)(g + i) - vd));                       \
    if (i < n)                                                                                                        \
        TENSOR__ROW_STOREN(y + i, (TENSOR__ROW_LOADN(y + i, n - i, 0.0f) * vs) * (TENSOR__ROW_LOADN(g + i, n - i, 0.0f) - vd), n - i); \
}                                                                                                                     \
/* y = g - y * c (log_softmax backward) */                                                                            \
static TENSOR__TARGET void TENSOR__F(row_fms)(float *y, const float *g, int64_t n, float c) {                         \
    TENSOR__VF vc = TENSOR__F(splat)(-c);                                                                             \
    int64_t i = 0;                                                                                                    \
    for (; i + TENSOR__W <= n; i += TENSOR__W) TENSOR__F(store)(y + i, TENSOR__FMA(TENSOR__F(load)(y + i), vc, TENSOR__F(load)(g + i))); \
    if (i < n)                                                                                                        \
        TENSOR__ROW_STOREN(y + i, TENSOR__FMA(TENSOR__ROW_LOADN(y + i, n - i, 0.0f), vc, TENSOR__ROW_LOADN(g + i, n - i, 0.0f)), n - i); \
}                                                                                                                     \
/* y = ((x - mh) - ml) * rstd * w + b, w and b optional (the norms' forward; the mean comes as mh + ml,               \
   its f32 rounding and the rest: x - mh is exact for x near the mean) */                                             \
static TENSOR__TARGET void TENSOR__F(row_norm)(float *y, const float *x, int64_t n, float mh, float ml, float rstd, const float *w, const float *b) { \
    TENSOR__VF vm = TENSOR__F(splat)(mh), vl = TENSOR__F(splat)(ml), vr = TENSOR__F(splat)(rstd);                     \
    int64_t i = 0;                                                                                                    \
    for (; i + TENSOR__W <= n; i += TENSOR__W) {                                                                      \
        TENSOR__VF v = ((TENSOR__F(load)(x + i) - vm) - vl) * vr;                                                     \
        if (w) v = v * TENSOR__F(load)(w + i);                                                                        \
        if (b) v = v + TENSOR__F(load)(b + i);                                                                        \
        TENSOR__F(store)(y + i, v);                                                                                   \
    }                                                                                                                 \
    if (i < n) {                                                                                                      \
        TENSOR__VF v = ((TENSOR__ROW_LOADN(x + i, n - i, mh) - vm) - vl) * vr;                                        \
        if (w) v = v * TENSOR__ROW_LOADN(w + i, n - i, 0.0f);                                                         \
        if (b) v = v + TENSOR__ROW_LOADN(b + i, n - i, 0.0f);                                                         \
        TENSOR__ROW_STOREN(y + i, v, n - i);                                                                          \
    }                                                                                                                 \
}                                                                                                                     \
/* The norms' backward for one row: xhat = (x - mean) rstd, gh = g w;                                                 \
   gx = rstd (gh - [center] mean(gh) - xhat mean(gh xhat)); gw += g xhat and gb += g (in double,                      \
   when not NULL). rms_norm is the case center = false, mean = 0. */                                                  \
static TENSOR__TARGET void TENSOR__F(row_norm_bwd)(float *gx, const float *x, const float *g, const float *w, int64_t n, float mh, float ml, \
                                                   float rstd, bool center, double *gw, double *gb) {                 \
    TENSOR__VF vm = TENSOR__F(splat)(mh), vl = TENSOR__F(splat)(ml), vr = TENSOR__F(splat)(rstd);                     \
    TENSOR__VD s1v = TENSOR__F(splatd)(0.0), s2v = s1v;                                                               \
    int64_t i = 0, full = n - n % TENSOR__W;                                                                          \
    while (i < full) {                                                                                                \
        int64_t end = full - i > TENSOR__ROW_BLOCK ? i + TENSOR__ROW_BLOCK : full;                                    \
        TENSOR__VF a1 = TENSOR__F(splat)(0.0f), a2 = a1;                                                              \
        for (; i < end; i += TENSOR__W) {                                                                             \
            TENSOR__VF gv = TENSOR__F(load)(g + i), xh = ((TENSOR__F(load)(x + i) - vm) - vl) * vr;                   \
            TENSOR__VF gh = gv;                                                                                       \
            if (w) gh = gv * TENSOR__F(load)(w + i);                                                                  \
            a1 = a1 + gh;                                                                                             \
            a2 = TENSOR__FMA(gh, xh, a2);                                                                             \
            if (gw) TENSOR__F(rw_addh)(gw + i, gv * xh);                                                              \
            if (gb) TENSOR__F(rw_addh)(gb + i, gv);                                                                   \
        }                                                                                                             \
        s1v = TENSOR__F(rw_widen)(s1v, a1);                                                                           \
        s2v = TENSOR__F(rw_widen)(s2v, a2);                                                                           \
    }                                                                                                                 \
    if (i < n) { /* the last n % W: padding lanes masked off */                                                       \
        int64_t k = n - i;                                                                                            \
        TENSOR__VI first = TENSOR__F(rw_first)(k);                                                                    \
        TENSOR__VF zero = TENSOR__F(splat)(0.0f), gv = TENSOR__ROW_LOADN(g + i, k, 0.0f);                             \
        TENSOR__VF xh = ((TENSOR__ROW_LOADN(x + i, k, mh) - vm) - vl) * vr;                                           \
        TENSOR__VF gh = gv;                                                                                           \
        if (w) gh = gv * TENSOR__ROW_LOADN(w + i, k, 0.0f);                                                           \
        s1v = TENSOR__F(rw_widen)(s1v, gh);                                                                           \
        s2v = TENSOR__F(rw_widen)(s2v, TENSOR__SEL(first, gh * xh, zero));                                            \
        float f[TENSOR__W];                                                                                           \
        if (gw) {                                                                                                     \
            TENSOR__F(store)(f, gv * xh);                                                                             \
            for (int64_t j = 0; j < k; j++) gw[i + j] += (double)f[j];                                                \
        }                                                                                                             \
        if (gb)                                                                                                       \
            for (int64_t j = 0; j < k; j++) gb[i + j] += (double)g[i + j];                                            \
    }                                                                                                                 \
    double s1 = TENSOR__F(rw_hsumd)(s1v), s2 = TENSOR__F(rw_hsumd)(s2v);                                              \
    float f1 = center ? (float)(s1 / (double)n) : 0.0f, f2 = (float)(s2 / (double)n);                                 \
    TENSOR__VF m1 = TENSOR__F(splat)(f1), m2 = TENSOR__F(splat)(-f2);                                                 \
    for (i = 0; i + TENSOR__W <= n; i += TENSOR__W) {                                                                 \
        TENSOR__VF gv = TENSOR__F(load)(g + i), xh = ((TENSOR__F(load)(x + i) - vm) - vl) * vr;                       \
        TENSOR__VF gh = gv;                                                                                           \
        if (w) gh = gv * TENSOR__F(load)(w + i);                                                                      \
        TENSOR__F(store)(gx + i, vr * TENSOR__FMA(xh, m2, gh - m1));                                                  \
    }                                                                                                                 \
    if (i < n) {                                                                                                      \
        TENSOR__VF gv = TENSOR__ROW_LOADN(g + i, n - i, 0.0f), xh = ((TENSOR__ROW_LOADN(x + i, n - i, mh) - vm) - vl) * vr; \
        TENSOR__VF gh = gv;                                                                                           \
        if (w) gh = gv * TENSOR__ROW_LOADN(w + i, n - i, 0.0f);                                                       \
        TENSOR__ROW_STOREN(gx + i, vr * TENSOR__FMA(xh, m2, gh - m1), n - i);                                         \
    }                                                                                                                 \
}                                                                                                                     \
static void TENSOR__F(install_rows)(tensor__simd_isa *t) {                                                            \
    t->row_sum = TENSOR__F(row_sum);                                                                                  \
    t->row_sum_f64 = TENSOR__F(row_sum_f64);                                                                          \
    t->row_cols_add = TENSOR__F(row_cols_add);                                                                        \
    t->row_sqdev = TENSOR__F(row_sqdev);                                                                              \
    t->row_dot = TENSOR__F(row_dot);                                                                                  \
    t->row_max = TENSOR__F(row_max);                                                                                  \
    t->row_sumexp = TENSOR__F(row_sumexp);                                                                            \
    t->row_affine = TENSOR__F(row_affine);                                                                            \
    t->row_sub2 = TENSOR__F(row_sub2);                                                                                \
    t->row_smbwd = TENSOR__F(row_smbwd);                                                                              \
    t->row_fms = TENSOR__F(row_fms);                                                                                  \
    t->row_norm = TENSOR__F(row_norm);                                                                                \
    t->row_norm_bwd = TENSOR__F(row_norm_bwd);                                                                        \
}

/* ---- the random fills (create.h): Philox blocks and Box-Muller, both in stream order ---- */
static void tensor__rng_blocks_ref(uint32_t *out, int64_t n, const uint32_t key[2], uint64_t counter, uint32_t stream); /* >>rng */
/* Box-Muller for n pairs (n a multiple of 16): c[j] = r cos t, s[j] = r sin t, r = sqrt(-2 log u1[j]),
   t = 2 pi u2[j], u1 in (0, 1], u2 in [0, 1). In double to a few ulp, by series with exact
   coefficients (nothing fitted): log m = 2 atanh((m - 1) / (m + 1)) for m in [sqrt(1/2), sqrt(2)),
   and Taylor's sin and cos on r = 2 pi (u2 - k / 4), |r| <= pi / 4, the quarter turn k = rint(4 u2)
   taken exactly from u2. So an f32 randn rounds the same double value on every instance, except
   where a fused multiply-add tips a rounding (about one value in 2^26). */
#define TENSOR__SIMD_RNG                                                                                              \
static TENSOR__TARGET void TENSOR__F(rng_normal)(double *c, double *s, const double *u1, const double *u2, int64_t n) { \
    for (int64_t j = 0; j < n; j += TENSOR__DW) {                                                                     \
        TENSOR__VD x, f;                                                                                              \
        memcpy(&x, u1 + j, sizeof x);                                                                                 \
        memcpy(&f, u2 + j, sizeof f);                                                                                 \
        TENSOR__VL b = (TENSOR__VL)x;                                                                                 \
        TENSOR__VL e = ((b >> 52) & 0x7ff) - 1023;                                                                    \
        TENSOR__VD m = (TENSOR__VD)((b & 0xfffffffffffffLL) | 0x3ff0000000000000LL);                                   \
        TENSOR__VL big = (TENSOR__VL)(m > 1.4142135623730951);                                                        \
        m = TENSOR__SELD(big, m * 0.5, m);                                                                            \
        e = e - big; /* big is -1 where set */                                                                        \
        TENSOR__VD q = (m - 1.0) / (m + 1.0), z = q * q, p = TENSOR__F(splatd)(1.0 / 23);                             \
        p = TENSOR__HD(p, z, 1.0 / 21);                                                                               \
        p = TENSOR__HD(p, z, 1.0 / 19);                                                                               \
        p = TENSOR__HD(p, z, 1.0 / 17);                                                                               \
        p = TENSOR__HD(p, z, 1.0 / 15);                                                                               \
        p = TENSOR__HD(p, z, 1.0 / 13);                                                                               \
        p = TENSOR__HD(p, z, 1.0 / 11);                                                                               \
        p = TENSOR__HD(p, z, 1.0 / 9);                                                                                \
        p = TENSOR__HD(p, z, 1.0 / 7);                                                                                \
        p = TENSOR__HD(p, z, 1.0 / 5);                                                                                \
        p = TENSOR__HD(p, z, 1.0 / 3);                                                                                \
        TENSOR__VD ef = (TENSOR__VD)(e + 0x4338000000000000LL) - 6755399441055744.0;                                  \
        /* ln 2 in two parts: e times the first (32 bits) is exact */                                                 \
        TENSOR__VD lg = TENSOR__FMAD(ef, TENSOR__F(splatd)(6.93147180369123816490e-01),                               \
                                     TENSOR__FMAD(ef, TENSOR__F(splatd)(1.90821492927058770002e-10), 2.0 * q * TENSOR__HD(p, z, 1.0))); \
        TENSOR__VD r = TENSOR__SQRTD(-2.0 * lg);                                                                      \
        TENSOR__VD kf = (f * 4.0 + 6755399441055744.0) - 6755399441055744.0;                                          \
        TENSOR__VL k = (TENSOR__VL)(f * 4.0 + 6755399441055744.0) - 0x4338000000000000LL;                             \
        TENSOR__VD a = (f - kf * 0.25) * 6.283185307179586, a2 = a * a; /* f - kf / 4 is exact */                     \
        TENSOR__VD sp = TENSOR__F(splatd)(1.0 / 355687428096000.0), cp = TENSOR__F(splatd)(-1.0 / 6402373705728000.0); \
        sp = TENSOR__HD(sp, a2, -1.0 / 1307674368000.0);                                                              \
        cp = TENSOR__HD(cp, a2, 1.0 / 20922789888000.0);                                                              \
        sp = TENSOR__HD(sp, a2, 1.0 / 6227020800.0);                                                                  \
        cp = TENSOR__HD(cp, a2, -1.0 / 87178291200.0);                                                                \
        sp = TENSOR__HD(sp, a2, -1.0 / 39916800.0);                                                                   \
        cp = TENSOR__HD(cp, a2, 1.0 / 479001600.0);                                                                   \
        sp = TENSOR__HD(sp, a2, 1.0 / 362880.0);                                                                      \
        cp = TENSOR__HD(cp, a2, -1.0 / 3628800.0);                                                                    \
        sp = TENSOR__HD(sp, a2, -1.0 / 5040.0);                                                                       \
        cp = TENSOR__HD(cp, a2, 1.0 / 40320.0);                                                                       \
        sp = TENSOR__HD(sp, a2, 1.0 / 120.0);                                                                         \
        cp = TENSOR__HD(cp, a2, -1.0 / 720.0);                                                                        \
        sp = TENSOR__HD(sp, a2, -1.0 / 6.0);                                                                          \
        cp = TENSOR__HD(cp, a2, 1.0 / 24.0);                                                                          \
        TENSOR__VD sn = TENSOR__FMAD(a * a2, sp, a), cs = TENSOR__FMAD(a2 * a2, cp, 1.0 - 0.5 * a2);                  \
        /* t = a + k pi / 2: the quarter turn k swaps and negates sin and cos */                                      \
        TENSOR__VL odd = (TENSOR__VL)((k & 1) != 0);                                                                  \
        TENSOR__VD st = TENSOR__SELD(odd, cs, sn), ct = TENSOR__SELD(odd, sn, cs);                                    \
        st = TENSOR__SELD((TENSOR__VL)((k & 2) != 0), -st, st);                                                       \
        ct = TENSOR__SELD((TENSOR__VL)(((k + 1) & 2) != 0), -ct, ct);                                                 \
        TENSOR__VD oc = r * ct, os = r * st;                                                                          \
        memcpy(c + j, &oc, sizeof oc);                                                                                \
        memcpy(s + j, &os, sizeof os);                                                                                \
    }                                                                                                                 \
}                                                                                                                     \
/* Box-Muller in f32 on two Philox words, the f32 randn (create.h's tensor__rng_normal4_ref says       \
   what it computes): u1 = float((x >> 1) | 1) 2^-31 in (0, 1], the angle y 2^-32 of a turn;         \
   c = r cos t, s = r sin t, r = sqrt(-2 ln u1). The quarter turn k = rint(4 y 2^-32) comes off y      \
   exactly in integers, so Taylor's sin and cos (to a^9 and a^10: 2^-28 on |a| <= pi / 4) run on a     \
   small angle; each value is within a few ulp of the double computation. */                          \
static TENSOR__UNUSED TENSOR__INLINE TENSOR__TARGET void TENSOR__F(box_muller)(TENSOR__VU x, TENSOR__VU y, TENSOR__VF *c, TENSOR__VF *s) { \
    TENSOR__VF u = __builtin_convertvector((TENSOR__VI)((x >> 1) | 1), TENSOR__VF) * 4.656612873e-10f; /* 2^-31 */    \
    TENSOR__VI b = (TENSOR__VI)((TENSOR__VU)u - 0x3f3504f3u); /* u = 2^e m, m in [sqrt(1/2), sqrt(2)) */         \
    TENSOR__VF m = (TENSOR__VF)((b & 0x007fffff) + 0x3f3504f3);                                                       \
    TENSOR__VF r = TENSOR__SQRT(-2.0f * TENSOR__F(log_tail)(b >> 23, m - 1.0f, TENSOR__F(splat)(0.0f)));            \
    TENSOR__VU k = (y + 0x20000000u) >> 30;                                                                           \
    TENSOR__VF a = __builtin_convertvector((TENSOR__VI)(y - (k << 30)), TENSOR__VF) * 1.462918079e-09f; /* 2 pi / 2^32 */ \
    TENSOR__VF a2 = a * a, sp = TENSOR__F(splat)(2.755731922e-06f), cp = TENSOR__F(splat)(-2.755731922e-07f);        \
    sp = TENSOR__H(sp, a2, -1.984126984e-04f);                                                                        \
    cp = TENSOR__H(cp, a2, 2.480158730e-05f);                                                                         \
    sp = TENSOR__H(sp, a2, 8.333333333e-03f);                                                                         \
    cp = TENSOR__H(cp, a2, -1.388888889e-03f);                                                                        \
    sp = TENSOR__H(sp, a2, -1.666666667e-01f);                                                                        \
    cp = TENSOR__H(cp, a2, 4.166666667e-02f);                                                                         \
    cp = TENSOR__H(cp, a2, -0.5f);                                                                                    \
    TENSOR__VF sn = TENSOR__FMA(a * a2, sp, a), cs = TENSOR__H(cp, a2, 1.0f);                                         \
    /* t = a + k pi / 2: an odd k swaps sin and cos, and the signs follow the quadrant */                             \
    TENSOR__VI odd = (TENSOR__VI)((k & 1) != 0);                                                                      \
    TENSOR__VF st = TENSOR__SEL(odd, cs, sn), ct = TENSOR__SEL(odd, sn, cs);                                          \
    st = (TENSOR__VF)((TENSOR__VU)st ^ ((k & 2) << 30));                                                              \
    ct = (TENSOR__VF)((TENSOR__VU)ct ^ (((k + 1) & 2) << 30));                                                        \
    *c = r * ct;                                                                                                      \
    *s = r * st;                                                                                                      \
}
#if TENSOR__SIMD_NEON
static TENSOR__UNUSED inline void tensor__store_blocks4(uint32_t *out, tensor__u32x4 c0, tensor__u32x4 c1, tensor__u32x4 c2, tensor__u32x4 c3) {
    for (int i = 0; i < 4; i++) { /* memcpy: out may hold floats (rng_normal4) */
        uint32_t w[4] = {c0[i], c1[i], c2[i], c3[i]};
        memcpy(out + 4 * i, w, sizeof w);
    }
}
#endif
/* Philox4x32-10 on TENSOR__W blocks at once, one a lane (the instances with 4 or more lanes;
   TENSOR__MULEV(a, b): the 64-bit products of the low halves of a's and b's 64-bit lanes;
   TENSOR__STORE_BLOCKS: the words into stream order; TENSOR__CLEAN: vzeroupper where needed). The
   words are those of tensor__philox_block, bit for bit, in stream order. */
#define TENSOR__SIMD_PHILOX                                                                                           \
typedef uint64_t TENSOR__F(vq) __attribute__((vector_size(TENSOR__W * 4)));                                          \
/* the 32-bit products a * m of every lane: their high and low halves */                                             \
static TENSOR__INLINE TENSOR__TARGET void TENSOR__F(mul32)(TENSOR__VU a, TENSOR__F(vq) m, TENSOR__VU *hi, TENSOR__VU *lo) { \
    TENSOR__F(vq) ev = TENSOR__MULEV((TENSOR__F(vq))a, m), od = TENSOR__MULEV((TENSOR__F(vq))a >> 32, m);           \
    *hi = (TENSOR__VU)((ev >> 32) | (od & 0xffffffff00000000ull));                                                    \
    *lo = (TENSOR__VU)((ev & 0xffffffffull) | (od << 32));                                                            \
}                                                                                                                     \
/* One Philox round on a group of lanes (c0..c3) with round keys k0, k1. */                             \
static TENSOR__INLINE TENSOR__TARGET void TENSOR__F(philox_round)(TENSOR__VU *c0, TENSOR__VU *c1, TENSOR__VU *c2, TENSOR__VU *c3, uint32_t k0, uint32_t k1) { \
    TENSOR__F(vq) zq = {0};                                                                                           \
    TENSOR__VU h0, l0, h1, l1;                                                                                        \
    TENSOR__F(mul32)(*c0, zq + 0xD2511F53u, &h0, &l0);                                                                \
    TENSOR__F(mul32)(*c2, zq + 0xCD9E8D57u, &h1, &l1);                                                                \
    *c0 = h1 ^ *c1 ^ k0;                                                                                              \
    *c2 = h0 ^ *c3 ^ k1;                                                                                              \
    *c1 = l1;                                                                                                         \
    *c3 = l0;                                                                                                         \
}                                                                                                                     \
/* The counters of the W blocks from `first`: low words in c0, high words (with the carry) in c1. */                  \
static TENSOR__INLINE TENSOR__TARGET void TENSOR__F(philox_counters)(uint64_t first, TENSOR__VU lane, TENSOR__VU *c0, TENSOR__VU *c1) { \
    TENSOR__VU zero = {0};                                                                                            \
    *c0 = lane + (uint32_t)first;                                                                                     \
    *c1 = (zero + (uint32_t)(first >> 32)) - (TENSOR__VU)(*c0 < (uint32_t)first);                                     \
}                                                                                                                     \
static TENSOR__TARGET void TENSOR__F(rng_blocks)(uint32_t *out, int64_t n, const uint32_t key[2], uint64_t counter, uint32_t stream) { \
    TENSOR__VU lane, zero = {0};                                                                                      \
    for (int i = 0; i < TENSOR__W; i++) lane[i] = (uint32_t)i;                                                        \
    int64_t b = 0;                                                                                                    \
    /* two groups of lanes side by side: independent chains, so one's multiplies fill the other's latency */         \
    for (; b + 2 * TENSOR__W <= n; b += 2 * TENSOR__W) {                                                              \
        TENSOR__VU a0, a1, a2 = zero + stream, a3 = zero, d0, d1, d2 = zero + stream, d3 = zero;                      \
        TENSOR__F(philox_counters)(counter + (uint64_t)b, lane, &a0, &a1);                                            \
        TENSOR__F(philox_counters)(counter + (uint64_t)(b + TENSOR__W), lane, &d0, &d1);                              \
        uint32_t k0 = key[0], k1 = key[1];                                                                            \
        for (int r = 0; r < 10; r++, k0 += 0x9E3779B9u, k1 += 0xBB67AE85u) {                                          \
            TENSOR__F(philox_round)(&a0, &a1, &a2, &a3, k0, k1);                                                      \
            TENSOR__F(philox_round)(&d0, &d1, &d2, &d3, k0, k1);                                                      \
        }                                                                                                             \
        TENSOR__STORE_BLOCKS(out + 4 * b, a0, a1, a2, a3); /* word q of lane i to out[4 i + q] */                    \
        TENSOR__STORE_BLOCKS(out + 4 * (b + TENSOR__W), d0, d1, d2, d3);                                              \
    }                                                                                                                 \
    for (; b + TENSOR__W <= n; b += TENSOR__W) {                                                                      \
        TENSOR__VU a0, a1, a2 = zero + stream, a3 = zero;                                                             \
        TENSOR__F(philox_counters)(counter + (uint64_t)b, lane, &a0, &a1);                                            \
        uint32_t k0 = key[0], k1 = key[1];                                                                            \
        for (int r = 0; r < 10; r++, k0 += 0x9E3779B9u, k1 += 0xBB67AE85u) TENSOR__F(philox_round)(&a0, &a1, &a2, &a3, k0, k1); \
        TENSOR__STORE_BLOCKS(out + 4 * b, a0, a1, a2, a3);                                                            \
    }                                                                                                                 \
    TENSOR__CLEAN(); /* gcc adds no vzeroupper before the scalar tail's calls */                                     \
    tensor__rng_blocks_ref(out + 4 * b, n - b, key, counter + (uint64_t)b, stream);                                   \
}                                                                                                                    \
/* n blocks of normal values: Philox in lanes, then Box-Muller on each block's words (0, 1) and                \
   (2, 3), the four values stored in stream order; a last part of W blocks goes through a buffer. */      \
static TENSOR__TARGET void TENSOR__F(rng_normal4)(float *out, int64_t n, const uint32_t key[2], uint64_t counter, uint32_t stream) { \
    TENSOR__VU lane, zero = {0};                                                                                      \
    for (int i = 0; i < TENSOR__W; i++) lane[i] = (uint32_t)i;                                                        \
    uint32_t part[4 * TENSOR__W];                                                                                     \
    for (int64_t b = 0; b < n; b += TENSOR__W) {                                                                      \
        TENSOR__VU a0, a1, a2 = zero + stream, a3 = zero;                                                             \
        TENSOR__F(philox_counters)(counter + (uint64_t)b, lane, &a0, &a1);                                            \
        uint32_t k0 = key[0], k1 = key[1];                                                                            \
        for (int r = 0; r < 10; r++, k0 += 0x9E3779B9u, k1 += 0xBB67AE85u) TENSOR__F(philox_round)(&a0, &a1, &a2, &a3, k0, k1); \
        TENSOR__VF c0, s0, c1, s1;                                                                                    \
        TENSOR__F(box_muller)(a0, a1, &c0, &s0);                                                                      \
        TENSOR__F(box_muller)(a2, a3, &c1, &s1);                                                                      \
        if (b + TENSOR__W <= n) {                                                                                     \
            TENSOR__STORE_BLOCKS((uint32_t *)(void *)(out + 4 * b), c0, s0, c1, s1);                                  \
            continue;                                                                                                 \
        }                                                                                                             \
        TENSOR__STORE_BLOCKS(part, c0, s0, c1, s1);                                                                   \
        memcpy(out + 4 * b, part, (size_t)(n - b) * 4 * sizeof(float));                                              \
    }                                                                                                                 \
    TENSOR__CLEAN();                                                                                                  \
}

/* ---- the instances ---- */
#define TENSOR__SEL_BITS(m, a, b) ((TENSOR__VF)(((TENSOR__VI)(m) & (TENSOR__VI)(a)) | (~(TENSOR__VI)(m) & (TENSOR__VI)(b))))
#define TENSOR__SELD_BITS(m, a, b) ((TENSOR__VD)(((TENSOR__VL)(m) & (TENSOR__VL)(a)) | (~(TENSOR__VL)(m) & (TENSOR__VL)(b))))

#if TENSOR__SIMD_SCALAR
/* scalar: one lane, plain C (the compiler may still fuse a * b + c where the target has FMA) */
static TENSOR__UNUSED inline tensor__f32x1 tensor__scalar_sqrt1(tensor__f32x1 a) { tensor__f32x1 r = {sqrtf(a[0])}; return r; }
static TENSOR__UNUSED inline tensor__f64x1 tensor__scalar_loadh(const float *p) { tensor__f64x1 r = {(double)p[0]}; return r; }
static TENSOR__UNUSED inline tensor__f64x1 tensor__scalar_sqrtd1(tensor__f64x1 a) { tensor__f64x1 r = {sqrt(a[0])}; return r; }
#ifdef TENSOR_USE_SLEEF
static inline tensor__f32x1 tensor__scalar_f1(float f) { tensor__f32x1 r = {f}; return r; }
#define TENSOR__SLEEF(fn, x) tensor__scalar_f1(Sleef_##fn##f_u10((x)[0]))
#endif
#define TENSOR__ISA tensor__scalar
#define TENSOR__TARGET
#define TENSOR__W 1
#define TENSOR__DW 1
#define TENSOR__VF tensor__f32x1
#define TENSOR__VI tensor__i32x1
#define TENSOR__VU tensor__u32x1
#define TENSOR__VD tensor__f64x1
#define TENSOR__VL tensor__i64x1
#define TENSOR__VB tensor__i8x1
#define TENSOR__FMA(a, b, c) ((a) * (b) + (c))
#define TENSOR__FMA_EXACT 0
#define TENSOR__FMAD(a, b, c) ((a) * (b) + (c))
#define TENSOR__SQRT(a) tensor__scalar_sqrt1(a)
#define TENSOR__SEL(m, a, b) TENSOR__SEL_BITS(m, a, b)
#define TENSOR__SELD(m, a, b) TENSOR__SELD_BITS(m, a, b)
#define TENSOR__MIN(a, b) TENSOR__SEL_BITS((a) < (b), a, b)
#define TENSOR__MAX(a, b) TENSOR__SEL_BITS((a) > (b), a, b)
#define TENSOR__ANY(m) ((m)[0] != 0)
#define TENSOR__LOADH(p) tensor__scalar_loadh(p)
#define TENSOR__STOREH(p, v) ((p)[0] = (float)(v)[0])
#define TENSOR__ANYD(m) ((m)[0] != 0)
TENSOR__SIMD_KERNELS
#define TENSOR__ROW_LOADN(p, k, fill) TENSOR__F(rw_part)(p, k, fill)
#define TENSOR__ROW_STOREN(p, v, k) TENSOR__F(rw_store_part)(p, v, k)
TENSOR__SIMD_ROWS
#undef TENSOR__ROW_LOADN
#undef TENSOR__ROW_STOREN
#define TENSOR__SQRTD(a) tensor__scalar_sqrtd1(a)
TENSOR__SIMD_RNG
#undef TENSOR__SQRTD
static void tensor__scalar_rng_normal4(float *out, int64_t n, const uint32_t key[2], uint64_t counter, uint32_t stream) {
    for (int64_t b = 0; b < n; b++) {
        uint32_t w[4];
        tensor__rng_blocks_ref(w, 1, key, counter + (uint64_t)b, stream);
        tensor__u32x1 x0 = {w[0]}, y0 = {w[1]}, x1 = {w[2]}, y1 = {w[3]};
        tensor__f32x1 c0, s0, c1, s1;
        tensor__scalar_box_muller(x0, y0, &c0, &s0);
        tensor__scalar_box_muller(x1, y1, &c1, &s1);
        out[4 * b] = c0[0], out[4 * b + 1] = s0[0], out[4 * b + 2] = c1[0], out[4 * b + 3] = s1[0];
    }
}
#undef TENSOR__ISA
#undef TENSOR__TARGET
#undef TENSOR__W
#undef TENSOR__DW
#undef TENSOR__VF
#undef TENSOR__VI
#undef TENSOR__VU
#undef TENSOR__VD
#undef TENSOR__VL
#undef TENSOR__VB
#undef TENSOR__FMA
#undef TENSOR__FMA_EXACT
#undef TENSOR__FMAD
#undef TENSOR__SQRT
#undef TENSOR__SEL
#undef TENSOR__SELD
#undef TENSOR__MIN
#undef TENSOR__MAX
#undef TENSOR__ANY
#undef TENSOR__LOADH
#undef TENSOR__STOREH
#undef TENSOR__ANYD
#undef TENSOR__SLEEF
#endif /* TENSOR__SIMD_SCALAR */

#if TENSOR__SIMD_X86
#ifdef TENSOR_USE_SLEEF
/* sleef.h declares the AVX2 and AVX-512 functions only when the translation unit is compiled for
   them: declared here under names of our own bound to SLEEF's symbols, so they cannot clash with
   sleef.h's declarations where it has them. */
#define TENSOR__SLEEF_STR2(s) #s
#define TENSOR__SLEEF_STR(s) TENSOR__SLEEF_STR2(s)
#define TENSOR__SLEEF_SYM(name) __asm__(TENSOR__SLEEF_STR(__USER_LABEL_PREFIX__) name)
#define TENSOR__SLEEF_DECLARE(fn)                                                                          \
    extern __attribute__((target("avx512f"))) __m512 tensor__sleef_##fn##16(__m512) TENSOR__SLEEF_SYM("Sleef_" #fn "f16_u10avx512f"); \
    extern __attribute__((target("avx2,fma"))) __m256 tensor__sleef_##fn##8(__m256) TENSOR__SLEEF_SYM("Sleef_" #fn "f8_u10avx2"); \
    extern __m128 tensor__sleef_##fn##4(__m128) TENSOR__SLEEF_SYM("Sleef_" #fn "f4_u10sse2");
TENSOR__SLEEF_DECLARE(exp)
TENSOR__SLEEF_DECLARE(log)
TENSOR__SLEEF_DECLARE(expm1)
TENSOR__SLEEF_DECLARE(log1p)
TENSOR__SLEEF_DECLARE(tanh)
TENSOR__SLEEF_DECLARE(sin)
TENSOR__SLEEF_DECLARE(cos)
TENSOR__SLEEF_DECLARE(erf)
#endif

/* Philox's words into stream order (TENSOR__STORE_BLOCKS): c0..c3 hold words 0..3 of one block a
   lane; out gets the blocks one after another. A 4 x 4 transpose of 32-bit words within each
   128-bit lane, then (AVX2, AVX-512) of the 128-bit lanes. */
#define TENSOR__TRANSPOSE4_EPI32(T, mm, c0, c1, c2, c3, r0, r1, r2, r3) do {                               \
        T t0_ = mm##_unpacklo_epi32(c0, c1), t1_ = mm##_unpackhi_epi32(c0, c1);                               \
        T t2_ = mm##_unpacklo_epi32(c2, c3), t3_ = mm##_unpackhi_epi32(c2, c3);                               \
        r0 = mm##_unpacklo_epi64(t0_, t2_);                                                                   \
        r1 = mm##_unpackhi_epi64(t0_, t2_);                                                                   \
        r2 = mm##_unpacklo_epi64(t1_, t3_);                                                                   \
        r3 = mm##_unpackhi_epi64(t1_, t3_);                                                                   \
    } while (0)
static TENSOR__UNUSED inline __attribute__((target("sse2"))) void tensor__sse2_store_blocks(uint32_t *out, __m128i c0, __m128i c1, __m128i c2, __m128i c3) {
    __m128i r0, r1, r2, r3;
    TENSOR__TRANSPOSE4_EPI32(__m128i, _mm, c0, c1, c2, c3, r0, r1, r2, r3);
    _mm_storeu_si128((__m128i *)(void *)out, r0);
    _mm_storeu_si128((__m128i *)(void *)(out + 4), r1);
    _mm_storeu_si128((__m128i *)(void *)(out + 8), r2);
    _mm_storeu_si128((__m128i *)(void *)(out + 12), r3);
}
static TENSOR__UNUSED inline __attribute__((target("avx2,fma"))) void tensor__avx2_store_blocks(uint32_t *out, __m256i c0, __m256i c1, __m256i c2, __m256i c3) {
    __m256i r0, r1, r2, r3; /* r0: blocks 0 and 4, r1: 1 and 5, ... */
    TENSOR__TRANSPOSE4_EPI32(__m256i, _mm256, c0, c1, c2, c3, r0, r1, r2, r3);
    _mm256_storeu_si256((__m256i *)(void *)out, _mm256_permute2x128_si256(r0, r1, 0x20));
    _mm256_storeu_si256((__m256i *)(void *)(out + 8), _mm256_permute2x128_si256(r2, r3, 0x20));
    _mm256_storeu_si256((__m256i *)(void *)(out + 16), _mm256_permute2x128_si256(r0, r1, 0x31));
    _mm256_storeu_si256((__m256i *)(void *)(out + 24), _mm256_permute2x128_si256(r2, r3, 0x31));
}
static TENSOR__UNUSED inline __attribute__((target("avx512f,avx2,fma"))) void tensor__avx512_store_blocks(uint32_t *out, __m512i c0, __m512i c1, __m512i c2, __m512i c3) {
    __m512i r0, r1, r2, r3; /* r0: blocks 0, 4, 8, 12; r1: 1, 5, 9, 13; ... */
    TENSOR__TRANSPOSE4_EPI32(__m512i, _mm512, c0, c1, c2, c3, r0, r1, r2, r3);
    __m512i a0 = _mm512_shuffle_i32x4(r0, r1, 0x44), a1 = _mm512_shuffle_i32x4(r2, r3, 0x44); /* lanes 0, 1 of each */
    __m512i a2 = _mm512_shuffle_i32x4(r0, r1, 0xee), a3 = _mm512_shuffle_i32x4(r2, r3, 0xee); /* lanes 2, 3 */
    _mm512_storeu_si512((void *)out, _mm512_shuffle_i32x4(a0, a1, 0x88));
    _mm512_storeu_si512((void *)(out + 16), _mm512_shuffle_i32x4(a0, a1, 0xdd));
    _mm512_storeu_si512((void *)(out + 32), _mm512_shuffle_i32x4(a2, a3, 0x88));
    _mm512_storeu_si512((void *)(out + 48), _mm512_shuffle_i32x4(a2, a3, 0xdd));
}

/* SSE2: 4 lanes (baseline on x86-64; the attribute matters on i386) */
static TENSOR__UNUSED inline __attribute__((target("sse2"))) __m128d tensor__sse2_loadh(const float *p) {
    double d;
    memcpy(&d, p, sizeof d); /* two floats, 4-byte aligned */
    return _mm_cvtps_pd(_mm_castpd_ps(_mm_set_sd(d)));
}
static TENSOR__UNUSED inline __attribute__((target("sse2"))) void tensor__sse2_storeh(float *p, __m128d v) {
    double d = _mm_cvtsd_f64(_mm_castps_pd(_mm_cvtpd_ps(v)));
    memcpy(p, &d, sizeof d);
}
#define TENSOR__ISA tensor__sse2
#define TENSOR__TARGET __attribute__((target("sse2")))
#define TENSOR__W 4
#define TENSOR__DW 2
#define TENSOR__VF __m128
#define TENSOR__VI tensor__i32x4
#define TENSOR__VU tensor__u32x4
#define TENSOR__VD __m128d
#define TENSOR__VL tensor__i64x2
#define TENSOR__VB tensor__i8x4
#define TENSOR__FMA(a, b, c) ((a) * (b) + (c))
#define TENSOR__FMA_EXACT 0
#define TENSOR__FMAD(a, b, c) ((a) * (b) + (c))
#define TENSOR__SQRT(a) _mm_sqrt_ps(a)
#define TENSOR__SEL(m, a, b) TENSOR__SEL_BITS(m, a, b)
#define TENSOR__SELD(m, a, b) TENSOR__SELD_BITS(m, a, b)
#define TENSOR__MIN(a, b) _mm_min_ps(a, b)
#define TENSOR__MAX(a, b) _mm_max_ps(a, b)
#define TENSOR__ANY(m) (_mm_movemask_ps((__m128)(m)) != 0)
#define TENSOR__LOADH(p) tensor__sse2_loadh(p)
#define TENSOR__STOREH(p, v) tensor__sse2_storeh(p, v)
#define TENSOR__ANYD(m) (_mm_movemask_pd((__m128d)(m)) != 0)
#define TENSOR__SLEEF(fn, x) tensor__sleef_##fn##4(x)
TENSOR__SIMD_KERNELS
#define TENSOR__ROW_LOADN(p, k, fill) TENSOR__F(rw_part)(p, k, fill)
#define TENSOR__ROW_STOREN(p, v, k) TENSOR__F(rw_store_part)(p, v, k)
TENSOR__SIMD_ROWS
#undef TENSOR__ROW_LOADN
#undef TENSOR__ROW_STOREN
#define TENSOR__SQRTD(a) _mm_sqrt_pd(a)
TENSOR__SIMD_RNG
#undef TENSOR__SQRTD
#define TENSOR__CLEAN() ((void)0)
#define TENSOR__STORE_BLOCKS(out, c0, c1, c2, c3) tensor__sse2_store_blocks(out, (__m128i)(c0), (__m128i)(c1), (__m128i)(c2), (__m128i)(c3))
#define TENSOR__MULEV(a, b) (TENSOR__F(vq))_mm_mul_epu32((__m128i)(a), (__m128i)(b))
TENSOR__SIMD_PHILOX
#undef TENSOR__MULEV
#undef TENSOR__STORE_BLOCKS
#undef TENSOR__CLEAN
#undef TENSOR__ISA
#undef TENSOR__TARGET
#undef TENSOR__W
#undef TENSOR__DW
#undef TENSOR__VF
#undef TENSOR__VI
#undef TENSOR__VU
#undef TENSOR__VD
#undef TENSOR__VL
#undef TENSOR__VB
#undef TENSOR__FMA
#undef TENSOR__FMA_EXACT
#undef TENSOR__FMAD
#undef TENSOR__SQRT
#undef TENSOR__SEL
#undef TENSOR__SELD
#undef TENSOR__MIN
#undef TENSOR__MAX
#undef TENSOR__ANY
#undef TENSOR__LOADH
#undef TENSOR__STOREH
#undef TENSOR__ANYD
#undef TENSOR__SLEEF

/* AVX2 + FMA: 8 lanes */
/* the first k < 8 floats, the other lanes `fill` / the store of the first k lanes (masked: no access past k) */
static TENSOR__UNUSED inline __attribute__((target("avx2,fma"))) __m256i tensor__avx2_first(int64_t k) {
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)k), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
}
static TENSOR__UNUSED inline __attribute__((target("avx2,fma"))) __m256 tensor__avx2_loadn(const float *p, int64_t k, float fill) {
    __m256i m = tensor__avx2_first(k);
    return _mm256_blendv_ps(_mm256_set1_ps(fill), _mm256_maskload_ps(p, m), _mm256_castsi256_ps(m));
}
static TENSOR__UNUSED inline __attribute__((target("avx2,fma"))) void tensor__avx2_storen(float *p, __m256 v, int64_t k) {
    _mm256_maskstore_ps(p, tensor__avx2_first(k), v);
}
#define TENSOR__ISA tensor__avx2
#define TENSOR__TARGET __attribute__((target("avx2,fma")))
#define TENSOR__W 8
#define TENSOR__DW 4
#define TENSOR__VF __m256
#define TENSOR__VI tensor__i32x8
#define TENSOR__VU tensor__u32x8
#define TENSOR__VD __m256d
#define TENSOR__VL tensor__i64x4
#define TENSOR__VB tensor__i8x8
#define TENSOR__FMA(a, b, c) _mm256_fmadd_ps(a, b, c)
#define TENSOR__FMA_EXACT 1
#define TENSOR__FMAD(a, b, c) _mm256_fmadd_pd(a, b, c)
#define TENSOR__SQRT(a) _mm256_sqrt_ps(a)
#define TENSOR__SEL(m, a, b) _mm256_blendv_ps(b, a, (__m256)(m))
#define TENSOR__SELD(m, a, b) _mm256_blendv_pd(b, a, (__m256d)(m))
#define TENSOR__MIN(a, b) _mm256_min_ps(a, b)
#define TENSOR__MAX(a, b) _mm256_max_ps(a, b)
#define TENSOR__ANY(m) (_mm256_movemask_ps((__m256)(m)) != 0)
#define TENSOR__LOADH(p) _mm256_cvtps_pd(_mm_loadu_ps(p))
#define TENSOR__STOREH(p, v) _mm_storeu_ps(p, _mm256_cvtpd_ps(v))
#define TENSOR__ANYD(m) (_mm256_movemask_pd((__m256d)(m)) != 0)
#define TENSOR__SLEEF(fn, x) tensor__sleef_##fn##8(x)
TENSOR__SIMD_KERNELS
#define TENSOR__ROW_LOADN(p, k, fill) tensor__avx2_loadn(p, k, fill)
#define TENSOR__ROW_STOREN(p, v, k) tensor__avx2_storen(p, v, k)
TENSOR__SIMD_ROWS
#undef TENSOR__ROW_LOADN
#undef TENSOR__ROW_STOREN
#define TENSOR__SQRTD(a) _mm256_sqrt_pd(a)
TENSOR__SIMD_RNG
#undef TENSOR__SQRTD
#define TENSOR__CLEAN() _mm256_zeroupper()
#define TENSOR__STORE_BLOCKS(out, c0, c1, c2, c3) tensor__avx2_store_blocks(out, (__m256i)(c0), (__m256i)(c1), (__m256i)(c2), (__m256i)(c3))
#define TENSOR__MULEV(a, b) (TENSOR__F(vq))_mm256_mul_epu32((__m256i)(a), (__m256i)(b))
TENSOR__SIMD_PHILOX
#undef TENSOR__MULEV
#undef TENSOR__STORE_BLOCKS
#undef TENSOR__CLEAN
#undef TENSOR__ISA
#undef TENSOR__TARGET
#undef TENSOR__W
#undef TENSOR__DW
#undef TENSOR__VF
#undef TENSOR__VI
#undef TENSOR__VU
#undef TENSOR__VD
#undef TENSOR__VL
#undef TENSOR__VB
#undef TENSOR__FMA
#undef TENSOR__FMA_EXACT
#undef TENSOR__FMAD
#undef TENSOR__SQRT
#undef TENSOR__SEL
#undef TENSOR__SELD
#undef TENSOR__MIN
#undef TENSOR__MAX
#undef TENSOR__ANY
#undef TENSOR__LOADH
#undef TENSOR__STOREH
#undef TENSOR__ANYD
#undef TENSOR__SLEEF

/* AVX-512F: 16 lanes. (Generic conversions instead of _mm512_cvtps_pd and the masked forms of min,
   max and sqrt: at -O2, GCC 12's C++ front end warns about the undefined vector inside the plain
   intrinsics, -Wmaybe-uninitialized.) */
static TENSOR__UNUSED inline __attribute__((target("avx512f,avx2,fma"))) __m512d tensor__avx512_loadh(const float *p) {
    /* the zero-masked form: one vcvtps2pd zmm (GCC splits __builtin_convertvector to 256 bits) */
    return _mm512_maskz_cvtps_pd((__mmask8)-1, _mm256_loadu_ps(p));
}
static TENSOR__UNUSED inline __attribute__((target("avx512f,avx2,fma"))) void tensor__avx512_storeh(float *p, __m512d v) {
    __m256 f = __builtin_convertvector(v, __m256);
    memcpy(p, &f, sizeof f);
}
/* the first k < 16 floats, the other lanes `fill` / the store of the first k lanes (masked: no access past k) */
static TENSOR__UNUSED inline __attribute__((target("avx512f,avx2,fma"))) __m512 tensor__avx512_loadn(const float *p, int64_t k, float fill) {
    return _mm512_mask_loadu_ps(_mm512_set1_ps(fill), (__mmask16)((1u << k) - 1), p);
}
static TENSOR__UNUSED inline __attribute__((target("avx512f,avx2,fma"))) void tensor__avx512_storen(float *p, __m512 v, int64_t k) {
    _mm512_mask_storeu_ps(p, (__mmask16)((1u << k) - 1), v);
}
#define TENSOR__ISA tensor__avx512
#define TENSOR__TARGET __attribute__((target("avx512f,avx2,fma")))
#define TENSOR__W 16
#define TENSOR__DW 8
#define TENSOR__VF __m512
#define TENSOR__VI tensor__i32x16
#define TENSOR__VU tensor__u32x16
#define TENSOR__VD __m512d
#define TENSOR__VL tensor__i64x8
#define TENSOR__VB tensor__i8x16
#define TENSOR__FMA(a, b, c) _mm512_fmadd_ps(a, b, c)
#define TENSOR__FMA_EXACT 1
#define TENSOR__FMAD(a, b, c) _mm512_fmadd_pd(a, b, c)
#define TENSOR__SQRT(a) _mm512_mask_sqrt_ps(a, (__mmask16)-1, a)
#define TENSOR__SEL(m, a, b) TENSOR__SEL_BITS(m, a, b)
#define TENSOR__SELD(m, a, b) TENSOR__SELD_BITS(m, a, b)
#define TENSOR__MIN(a, b) _mm512_mask_min_ps(b, (__mmask16)-1, a, b)
#define TENSOR__MAX(a, b) _mm512_mask_max_ps(b, (__mmask16)-1, a, b)
#define TENSOR__ANY(m) (_mm512_test_epi32_mask((__m512i)(m), (__m512i)(m)) != 0)
#define TENSOR__LOADH(p) tensor__avx512_loadh(p)
#define TENSOR__STOREH(p, v) tensor__avx512_storeh(p, v)
#define TENSOR__ANYD(m) (_mm512_test_epi64_mask((__m512i)(m), (__m512i)(m)) != 0)
#define TENSOR__SLEEF(fn, x) tensor__sleef_##fn##16(x)
TENSOR__SIMD_KERNELS
#define TENSOR__ROW_LOADN(p, k, fill) tensor__avx512_loadn(p, k, fill)
#define TENSOR__ROW_STOREN(p, v, k) tensor__avx512_storen(p, v, k)
TENSOR__SIMD_ROWS
#undef TENSOR__ROW_LOADN
#undef TENSOR__ROW_STOREN
#define TENSOR__SQRTD(a) _mm512_mask_sqrt_pd(a, (__mmask8)-1, a)
TENSOR__SIMD_RNG
#undef TENSOR__SQRTD
#define TENSOR__CLEAN() _mm256_zeroupper()
#define TENSOR__STORE_BLOCKS(out, c0, c1, c2, c3) tensor__avx512_store_blocks(out, (__m512i)(c0), (__m512i)(c1), (__m512i)(c2), (__m512i)(c3))
#define TENSOR__MULEV(a, b) (TENSOR__F(vq))_mm512_mul_epu32((__m512i)(a), (__m512i)(b))
TENSOR__SIMD_PHILOX
#undef TENSOR__MULEV
#undef TENSOR__STORE_BLOCKS
#undef TENSOR__CLEAN
#undef TENSOR__ISA
#undef TENSOR__TARGET
#undef TENSOR__W
#undef TENSOR__DW
#undef TENSOR__VF
#undef TENSOR__VI
#undef TENSOR__VU
#undef TENSOR__VD
#undef TENSOR__VL
#undef TENSOR__VB
#undef TENSOR__FMA
#undef TENSOR__FMA_EXACT
#undef TENSOR__FMAD
#undef TENSOR__SQRT
#undef TENSOR__SEL
#undef TENSOR__SELD
#undef TENSOR__MIN
#undef TENSOR__MAX
#undef TENSOR__ANY
#undef TENSOR__LOADH
#undef TENSOR__STOREH
#undef TENSOR__ANYD
#undef TENSOR__SLEEF
#endif /* TENSOR__SIMD_X86 */

#if TENSOR__SIMD_NEON
/* NEON (aarch64): 4 lanes */
#define TENSOR__ISA tensor__neon
#define TENSOR__TARGET
#define TENSOR__W 4
#define TENSOR__DW 2
#define TENSOR__VF float32x4_t
#define TENSOR__VI tensor__i32x4
#define TENSOR__VU tensor__u32x4
#define TENSOR__VD float64x2_t
#define TENSOR__VL tensor__i64x2
#define TENSOR__VB tensor__i8x4
#define TENSOR__FMA(a, b, c) vfmaq_f32(c, a, b)
#define TENSOR__FMA_EXACT 1
#define TENSOR__FMAD(a, b, c) vfmaq_f64(c, a, b)
#define TENSOR__SQRT(a) vsqrtq_f32(a)
#define TENSOR__SEL(m, a, b) vbslq_f32((uint32x4_t)(m), a, b)
#define TENSOR__SELD(m, a, b) vbslq_f64((uint64x2_t)(m), a, b)
#define TENSOR__MIN(a, b) vminnmq_f32(a, b)
#define TENSOR__MAX(a, b) vmaxnmq_f32(a, b)
#define TENSOR__ANY(m) (vmaxvq_u32((uint32x4_t)(m)) != 0)
#define TENSOR__LOADH(p) vcvt_f64_f32(vld1_f32(p))
#define TENSOR__STOREH(p, v) vst1_f32(p, vcvt_f32_f64(v))
#define TENSOR__ANYD(m) (vmaxvq_u32((uint32x4_t)(m)) != 0)
#define TENSOR__SLEEF(fn, x) Sleef_##fn##f4_u10(x)
TENSOR__SIMD_KERNELS
#define TENSOR__ROW_LOADN(p, k, fill) TENSOR__F(rw_part)(p, k, fill)
#define TENSOR__ROW_STOREN(p, v, k) TENSOR__F(rw_store_part)(p, v, k)
TENSOR__SIMD_ROWS
#undef TENSOR__ROW_LOADN
#undef TENSOR__ROW_STOREN
#define TENSOR__SQRTD(a) vsqrtq_f64(a)
TENSOR__SIMD_RNG
#undef TENSOR__SQRTD
#define TENSOR__CLEAN() ((void)0)
#define TENSOR__STORE_BLOCKS(out, c0, c1, c2, c3) tensor__store_blocks4(out, (tensor__u32x4)(c0), (tensor__u32x4)(c1), (tensor__u32x4)(c2), (tensor__u32x4)(c3))
#define TENSOR__MULEV(a, b) (TENSOR__F(vq))vmull_u32(vmovn_u64((uint64x2_t)(a)), vmovn_u64((uint64x2_t)(b)))
TENSOR__SIMD_PHILOX
#undef TENSOR__MULEV
#undef TENSOR__STORE_BLOCKS
#undef TENSOR__CLEAN
#undef TENSOR__ISA
#undef TENSOR__TARGET
#undef TENSOR__W
#undef TENSOR__DW
#undef TENSOR__VF
#undef TENSOR__VI
#undef TENSOR__VU
#undef TENSOR__VD
#undef TENSOR__VL
#undef TENSOR__VB
#undef TENSOR__FMA
#undef TENSOR__FMA_EXACT
#undef TENSOR__FMAD
#undef TENSOR__SQRT
#undef TENSOR__SEL
#undef TENSOR__SELD
#undef TENSOR__MIN
#undef TENSOR__MAX
#undef TENSOR__ANY
#undef TENSOR__LOADH
#undef TENSOR__STOREH
#undef TENSOR__ANYD
#undef TENSOR__SLEEF
#endif /* TENSOR__SIMD_NEON */

/* Picks the instance: the first the CPU runs, best first, unless TENSOR_SIMD names another it
   runs; "scalar" where none is compiled (x86-64) gives the lowest there is, sse2. */
typedef struct {
    const char *key, *name;
    bool ok;
    void (*install)(tensor__simd_isa *), (*install_rows)(tensor__simd_isa *);
    void (*rng_blocks)(uint32_t *, int64_t, const uint32_t *, uint64_t, uint32_t);
    void (*rng_normal)(double *, double *, const double *, const double *, int64_t);
    void (*rng_normal4)(float *, int64_t, const uint32_t *, uint64_t, uint32_t);
} tensor__simd_candidate;
static void tensor__simd_choose(tensor__simd_isa *t) {
    tensor__simd_candidate c[4];
    int n = 0;
#if TENSOR__SIMD_X86
    __builtin_cpu_init();
    bool avx2 = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    c[n].key = "avx512"; c[n].name = "avx512f"; c[n].ok = avx2 && __builtin_cpu_supports("avx512f"); c[n].install = tensor__avx512_install; c[n].install_rows = tensor__avx512_install_rows;
    c[n].rng_blocks = tensor__avx512_rng_blocks; c[n].rng_normal = tensor__avx512_rng_normal;
    c[n].rng_normal4 = tensor__avx512_rng_normal4; n++;
    c[n].key = "avx2"; c[n].name = "avx2+fma"; c[n].ok = avx2; c[n].install = tensor__avx2_install; c[n].install_rows = tensor__avx2_install_rows;
    c[n].rng_blocks = tensor__avx2_rng_blocks; c[n].rng_normal = tensor__avx2_rng_normal;
    c[n].rng_normal4 = tensor__avx2_rng_normal4; n++;
    c[n].key = "sse2"; c[n].name = "sse2"; c[n].ok = __builtin_cpu_supports("sse2"); c[n].install = tensor__sse2_install; c[n].install_rows = tensor__sse2_install_rows;
    c[n].rng_blocks = tensor__sse2_rng_blocks; c[n].rng_normal = tensor__sse2_rng_normal;
    c[n].rng_normal4 = tensor__sse2_rng_normal4; n++;
#endif
#if TENSOR__SIMD_NEON
    c[n].key = "neon"; c[n].name = "neon"; c[n].ok = true; c[n].install = tensor__neon_install; c[n].install_rows = tensor__neon_install_rows;
    c[n].rng_blocks = tensor__neon_rng_blocks; c[n].rng_normal = tensor__neon_rng_normal;
    c[n].rng_normal4 = tensor__neon_rng_normal4; n++;
#endif
#if TENSOR__SIMD_SCALAR
    c[n].key = "scalar"; c[n].name = "scalar"; c[n].ok = true; c[n].install = tensor__scalar_install; c[n].install_rows = tensor__scalar_install_rows;
    c[n].rng_blocks = tensor__rng_blocks_ref; c[n].rng_normal = tensor__scalar_rng_normal;
    c[n].rng_normal4 = tensor__scalar_rng_normal4; n++;
#endif
    const char *want = getenv("TENSOR_SIMD");
    int pick = -1;
    for (int i = 0; i < n && want; i++) if (c[i].ok && strcmp(want, c[i].key) == 0) pick = i;
    if (pick < 0 && want && !TENSOR__SIMD_SCALAR && strcmp(want, "scalar") == 0) pick = n - 1;
    for (int i = 0; i < n && pick < 0; i++) if (c[i].ok) pick = i;
    t->name = c[pick].name;
#if TENSOR__SIMD_X86
    unsigned r1[4] = {0, 0, 0, 0};
    __asm__("cpuid" : "=a"(r1[0]), "=b"(r1[1]), "=c"(r1[2]), "=d"(r1[3]) : "a"(1), "c"(0)); /* leaf 1: ecx bit 29 is F16C */
    t->f16c = pick <= 1 && (r1[2] >> 29 & 1);
    /* the bf16 kernel's packing and im2col use avx512bw/vl too (every avx512_bf16 CPU so far has them) */
    t->bf16dot = pick == 0 && __builtin_cpu_supports("avx512bf16") && __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
#endif
    c[pick].install(t);
    c[pick].install_rows(t);
    t->rng_blocks = c[pick].rng_blocks;
    t->rng_normal = c[pick].rng_normal;
    t->rng_normal4 = c[pick].rng_normal4;
}
#endif /* TENSOR__SIMD */

/* The chosen instance (chosen on first use; threads that race here wait for the first), or NULL
   where there is none. The check is inline: row primitives run on rows as short as 10 floats,
   where an out-of-line call per row showed in their time. */
#if TENSOR__SIMD
static tensor__simd_isa tensor__simd_table;
static int tensor__simd_state; /* 0: not chosen, 1: being chosen, 2: chosen */
static const tensor__simd_isa *tensor__simd_first_use(void) {
    int expected = 0;
    if (__atomic_compare_exchange_n(&tensor__simd_state, &expected, 1, false, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
        tensor__simd_choose(&tensor__simd_table);
        __atomic_store_n(&tensor__simd_state, 2, __ATOMIC_RELEASE);
    }
    while (__atomic_load_n(&tensor__simd_state, __ATOMIC_ACQUIRE) != 2) {
    }
    return &tensor__simd_table;
}
static inline const tensor__simd_isa *tensor__simd(void) {
    if (__atomic_load_n(&tensor__simd_state, __ATOMIC_ACQUIRE) == 2) return &tensor__simd_table;
    return tensor__simd_first_use();
}
#else
static inline const tensor__simd_isa *tensor__simd(void) { return NULL; }
#endif

/* ---- f32 row primitives (>>rowsimd) ----
   The contiguous f32 loops that the fast paths of the reductions, softmax, cross_entropy and the
   norms share, written once above (TENSOR__SIMD_ROWS) and compiled for each instance; these entry
   points call the chosen instance, or the plain loops below where there is none (compilers
   without vector extensions). The public sum and mean accumulate each element in double; the sums
   inside softmax, cross_entropy and the norms in f32 lanes over blocks of 256 elements and then
   in double (simd.h says more). tensor_set_reference_kernels(true) skips all of it: the callers
   take their reference paths. */
static double tensor__sum_f32(const float *x, int64_t n);
static double tensor__row_sum_f32(const float *x, int64_t n) {
    const tensor__simd_isa *v = tensor__simd();
    return v ? v->row_sum(x, n) : tensor__sum_f32(x, n);
}
static double tensor__row_sqdev_f32(const float *x, int64_t n, float m) {
    const tensor__simd_isa *v = tensor__simd();
    if (v) return v->row_sqdev(x, n, m);
    double acc = 0;
    for (int64_t i = 0; i < n; i++) { float d = x[i] - m; acc += (double)(d * d); }
    return acc;
}
static double tensor__row_dot_f32(const float *a, const float *b, int64_t n) {
    const tensor__simd_isa *v = tensor__simd();
    if (v) return v->row_dot(a, b, n);
    double acc = 0;
    for (int64_t i = 0; i < n; i++) acc += (double)(a[i] * b[i]);
    return acc;
}
static float tensor__row_max_f32(const float *x, int64_t n) {
    const tensor__simd_isa *v = tensor__simd();
    if (v) return v->row_max(x, n);
    float m = -INFINITY;
    for (int64_t i = 0; i < n; i++) m = x[i] > m ? x[i] : m;
    return m;
}
static double tensor__row_sumexp_f32(float *y, const float *x, int64_t n, float m) {
    const tensor__simd_isa *v = tensor__simd();
    if (v) return v->row_sumexp(y, x, n, m);
    double acc = 0;
    for (int64_t i = 0; i < n; i++) {
        float e = expf(x[i] - m);
        if (y) y[i] = e;
        acc += e;
    }
    return acc;
}
static void tensor__row_affine_f32(float *y, const float *x, int64_t n, float s, float t) {
    const tensor__simd_isa *v = tensor__simd();
    if (v) { v->row_affine(y, x, n, s, t); return; }
    for (int64_t i = 0; i < n; i++) y[i] = x[i] * s + t;
}
static void tensor__row_sub2_f32(float *y, const float *x, int64_t n, float a, float b) {
    const tensor__simd_isa *v = tensor__simd();
    if (v) { v->row_sub2(y, x, n, a, b); return; }
    for (int64_t i = 0; i < n; i++) y[i] = (x[i] - a) - b;
}
static void tensor__row_smbwd_f32(float *y, const float *g, int64_t n, float s, float d) {
    const tensor__simd_isa *v = tensor__simd();
    if (v) { v->row_smbwd(y, g, n, s, d); return; }
    for (int64_t i = 0; i < n; i++) y[i] = (y[i] * s) * (g[i] - d);
}
static void tensor__row_fms_f32(float *y, const float *g, int64_t n, float c) {
    const tensor__simd_isa *v = tensor__simd();
    if (v) { v->row_fms(y, g, n, c); return; }
    for (int64_t i = 0; i < n; i++) y[i] = g[i] - y[i] * c;
}
/* y = (x - mean) * rstd * w + b, w and b optional (the norms' forward). The mean goes in as
   mh + ml (its f32 rounding and the rest): x - mh is exact for x near the mean, so rows with a
   large mean and a small spread keep their accuracy. */
static void tensor__row_norm_f32(float *y, const float *x, int64_t n, double mean, float rstd, const float *w, const float *b) {
    float mh = (float)mean, ml = (float)(mean - mh);
    const tensor__simd_isa *v = tensor__simd();
    if (v) { v->row_norm(y, x, n, mh, ml, rstd, w, b); return; }
    for (int64_t i = 0; i < n; i++) {
        float r = ((x[i] - mh) - ml) * rstd;
        if (w) r *= w[i];
        if (b) r += b[i];
        y[i] = r;
    }
}
/* The norms' backward for one row: xhat = (x - mean) rstd, gh = g w;
   gx = rstd (gh - [center] mean(gh) - xhat mean(gh xhat)); gw += g xhat and gb += g (in double,
   when not NULL). rms_norm is the case center = false, mean = 0. */
static void tensor__row_norm_bwd_f32(float *gx, const float *x, const float *g, const float *w, int64_t n, double mean, float rstd,
                                     bool center, double *gw, double *gb) {
    float mh = (float)mean, ml = (float)(mean - mh);
    const tensor__simd_isa *v = tensor__simd();
    if (v) { v->row_norm_bwd(gx, x, g, w, n, mh, ml, rstd, center, gw, gb); return; }
    double s1 = 0, s2 = 0;
    for (int64_t i = 0; i < n; i++) {
        float xh = ((x[i] - mh) - ml) * rstd, gh = w ? g[i] * w[i] : g[i];
        s1 += gh;
        s2 += (double)gh * xh;
        if (gw) gw[i] += (double)(g[i] * xh);
        if (gb) gb[i] += g[i];
    }
    float f1 = center ? (float)(s1 / (double)n) : 0.0f, f2 = (float)(s2 / (double)n);
    for (int64_t i = 0; i < n; i++) {
        float xh = ((x[i] - mh) - ml) * rstd, gh = w ? g[i] * w[i] : g[i];
        gx[i] = rstd * ((gh - f1) - xh * f2);
    }
}

/* max and sum of e^(x - max) of a contiguous f32 row (the max in *mx); NaN for rows the fast path
   cannot take (a NaN, or an infinite max), which callers then compute on their reference path.
   When y is not NULL it receives e^(x - max). */
static double tensor__row_maxsumexp_f32(float *y, const float *x, int64_t n, float *mx) {
    const tensor__simd_isa *v = tensor__simd(); /* looked up once: rows may be short */
    float m = v ? v->row_max(x, n) : tensor__row_max_f32(x, n);
    *mx = m;
    if (isinf(m) || m != m) return NAN;
    double s = v ? v->row_sumexp(y, x, n, m) : tensor__row_sumexp_f32(y, x, n, m);
    return s == s ? s : NAN;
}

/* Contiguous rows of f16 / bf16 <-> f32 (the dtype casts, the GEMM's packing and its f32 results
   written back, the elementwise ops' bf16/f16 rows): 16 lanes where the SIMD layer chose avx512, F16C
   and AVX2 where it chose avx2, else the scalar conversions of >>core, with the same results (round
   to nearest even; a NaN stays a NaN). */
#if TENSOR__SIMD_X86
#define TENSOR__CVT_TARGET __attribute__((target("avx2,fma,f16c")))
TENSOR__CVT_TARGET static void tensor__half_to_f32_avx2(float *d, const uint16_t *s, int64_t n, bool bf16) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m128i h = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        __m256 f = bf16 ? _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16)) : _mm256_cvtph_ps(h);
        _mm256_storeu_ps(d + i, f);
    }
    for (; i < n; i++) d[i] = bf16 ? tensor__bf16_to_f32(s[i]) : tensor__f16_to_f32(s[i]);
}
TENSOR__CVT_TARGET static void tensor__f32_to_half_avx2(uint16_t *d, const float *s, int64_t n, bool bf16) {
    int64_t i = 0;
    const __m256i one = _mm256_set1_epi32(1), half = _mm256_set1_epi32(0x7fff), abs = _mm256_set1_epi32(0x7fffffff);
    const __m256i inf = _mm256_set1_epi32(0x7f800000), quiet = _mm256_set1_epi32(0x40);
    for (; i + 8 <= n; i += 8) {
        __m128i h;
        if (bf16) { /* u + 0x7fff + (bit 16 of u), high half; a NaN keeps its high half, quieted */
            __m256i u = _mm256_loadu_si256((const __m256i *)(const void *)(s + i)), hi = _mm256_srli_epi32(u, 16);
            __m256i r = _mm256_srli_epi32(_mm256_add_epi32(u, _mm256_add_epi32(half, _mm256_and_si256(hi, one))), 16);
            r = _mm256_blendv_epi8(r, _mm256_or_si256(hi, quiet), _mm256_cmpgt_epi32(_mm256_and_si256(u, abs), inf));
            h = _mm_packus_epi32(_mm256_castsi256_si128(r), _mm256_extracti128_si256(r, 1)); /* (each lane <= 0xffff) */
        } else {
            h = _mm256_cvtps_ph(_mm256_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT);
        }
        _mm_storeu_si128((__m128i *)(void *)(d + i), h);
    }
    for (; i < n; i++) d[i] = bf16 ? tensor__f32_to_bf16(s[i]) : tensor__f32_to_f16(s[i]);
}
/* AVX-512F has both f16 conversions and 16 lanes; its tails go to the 8-lane rows above */
#define TENSOR__CVT512_TARGET __attribute__((target("avx512f,avx2,fma,f16c")))
TENSOR__CVT512_TARGET static void tensor__half_to_f32_avx512(float *d, const uint16_t *s, int64_t n, bool bf16) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        __m256i h = _mm256_loadu_si256((const __m256i *)(const void *)(s + i));
        __m512 f = bf16 ? _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)) : _mm512_cvtph_ps(h);
        _mm512_storeu_ps(d + i, f);
    }
    tensor__half_to_f32_avx2(d + i, s + i, n - i, bf16);
}
TENSOR__CVT512_TARGET static void tensor__f32_to_half_avx512(uint16_t *d, const float *s, int64_t n, bool bf16) {
    int64_t i = 0;
    const __m512i one = _mm512_set1_epi32(1), half = _mm512_set1_epi32(0x7fff), abs = _mm512_set1_epi32(0x7fffffff);
    const __m512i inf = _mm512_set1_epi32(0x7f800000), quiet = _mm512_set1_epi32(0x40);
    for (; i + 16 <= n; i += 16) {
        __m256i h;
        if (bf16) { /* as the 8-lane row: u + 0x7fff + (bit 16 of u), high half; a NaN quieted */
            __m512i u = _mm512_loadu_si512((const void *)(s + i)), hi = _mm512_srli_epi32(u, 16);
            __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(half, _mm512_and_si512(hi, one))), 16);
            r = _mm512_mask_mov_epi32(r, _mm512_cmpgt_epi32_mask(_mm512_and_si512(u, abs), inf), _mm512_or_si512(hi, quiet));
            h = _mm512_cvtepi32_epi16(r);
        } else {
            h = _mm512_cvtps_ph(_mm512_loadu_ps(s + i), _MM_FROUND_TO_NEAREST_INT);
        }
        _mm256_storeu_si256((__m256i *)(void *)(d + i), h);
    }
    tensor__f32_to_half_avx2(d + i, s + i, n - i, bf16);
}
#endif
static void tensor__half_to_f32(float *d, const uint16_t *s, int64_t n, bool bf16) {
#if TENSOR__SIMD_X86
    const tensor__simd_isa *v = tensor__simd();
    if (v && v->f16c && v->width == 16) { tensor__half_to_f32_avx512(d, s, n, bf16); return; }
    if (v && v->f16c) { tensor__half_to_f32_avx2(d, s, n, bf16); return; }
#endif
    for (int64_t i = 0; i < n; i++) d[i] = bf16 ? tensor__bf16_to_f32(s[i]) : tensor__f16_to_f32(s[i]);
}
static void tensor__f32_to_half(uint16_t *d, const float *s, int64_t n, bool bf16) {
#if TENSOR__SIMD_X86
    const tensor__simd_isa *v = tensor__simd();
    if (v && v->f16c && v->width == 16) { tensor__f32_to_half_avx512(d, s, n, bf16); return; }
    if (v && v->f16c) { tensor__f32_to_half_avx2(d, s, n, bf16); return; }
#endif
    for (int64_t i = 0; i < n; i++) d[i] = bf16 ? tensor__f32_to_bf16(s[i]) : tensor__f32_to_f16(s[i]);
}
/* ==== end generator/parts/simd.h ==== */
/* ==== begin generator/parts/dispatch.h ==== */
// >>dispatch -----------------------------------------------------------------------------------
/* One call of an op, as its front-end prepared it: validated inputs, the allocated output and the
   op's parameters. Every kernel of every device takes this one struct, so the table below has one
   type. A kernel returns 0, or non-zero after recording an error. */
#define TENSOR__MAX_INPUTS 4
typedef struct tensor__call {
    tensor_op op;
    const char *fn;                    /* the public function, for messages */
    int n_in;
    tensor *in[TENSOR__MAX_INPUTS];    /* inputs (NULL where an optional one is absent) */
    tensor *out;                       /* the output, allocated by the front-end */
    tensor *out2;                      /* a second output where an op has one (indices, saved stats) */
    tensor_dtype compute;              /* the dtype elementwise kernels compute in */
    double p[4];                       /* double parameters */
    int64_t ip[16];                    /* integer parameters (sizes, flags, pads) */
    int n_dims;                        /* reductions: how many dims in dims[] */
    int dims[TENSOR_MAX_DIMS];
    int error;                         /* set by a kernel loop that met a bad value */
} tensor__call;

typedef int (*tensor__kernel_fn)(tensor__call *c);

/* Forward declarations of every CPU kernel the registry names (impl KERNEL). A kernel named here
   but never written fails to compile, so no op can be registered without one. */
#define TENSOR__DECLARE_KERNEL_KERNEL(name) static int tensor__cpu_##name(tensor__call *c);
#define TENSOR__DECLARE_KERNEL_VIEW(name)
#define TENSOR__DECLARE_KERNEL_COMPOSITE(name)
#define TENSOR__DECLARE_KERNEL(name, kind, impl, types, grad, params, doc) TENSOR__DECLARE_KERNEL_##impl(name)
TENSOR_OPS(TENSOR__DECLARE_KERNEL)

/* kernel[op][device]: the CPU column comes from the registry; the CUDA column is empty until
   tensor_cuda.cu registers its kernels at start-up. */
#define TENSOR__KERNEL_ENTRY_KERNEL(name) tensor__cpu_##name
#define TENSOR__KERNEL_ENTRY_VIEW(name) 0
#define TENSOR__KERNEL_ENTRY_COMPOSITE(name) 0
#define TENSOR__KERNEL_ROW(name, kind, impl, types, grad, params, doc) {TENSOR__KERNEL_ENTRY_##impl(name), 0},
static tensor__kernel_fn tensor__kernels[TENSOR_OP_COUNT][TENSOR_DEVICE_COUNT] = {TENSOR_OPS(TENSOR__KERNEL_ROW)};

/* Static facts about each op, from the registry. */
enum { TENSOR__TYPES_SAME, TENSOR__TYPES_FLOAT, TENSOR__TYPES_BOOL, TENSOR__TYPES_NUM, TENSOR__TYPES_ANY };
#define TENSOR__TYPES_OF_SAME TENSOR__TYPES_SAME
#define TENSOR__TYPES_OF_FLOAT TENSOR__TYPES_FLOAT
#define TENSOR__TYPES_OF_BOOL TENSOR__TYPES_BOOL
#define TENSOR__TYPES_OF_NUM TENSOR__TYPES_NUM
#define TENSOR__TYPES_OF_ANY TENSOR__TYPES_ANY
#define TENSOR__GRAD_OF_DIFF 1
#define TENSOR__GRAD_OF_NODIFF 0
typedef struct { const char *name, *fn, *kind; int types; bool differentiable; } tensor__op_info;
#define TENSOR__INFO_ROW(name, kind, impl, types, grad, params, doc) {#name, "tensor_" #name, #kind, TENSOR__TYPES_OF_##types, TENSOR__GRAD_OF_##grad != 0},
static const tensor__op_info tensor__ops[TENSOR_OP_COUNT] = {TENSOR_OPS(TENSOR__INFO_ROW)};

TENSOR_API const char *tensor_op_name(tensor_op op) { return (unsigned)op < TENSOR_OP_COUNT ? tensor__ops[op].name : NULL; }
TENSOR_API bool tensor_op_differentiable(tensor_op op) { return (unsigned)op < TENSOR_OP_COUNT && tensor__ops[op].differentiable; }

/* Installs a kernel into the table (the CUDA translation unit calls this at start-up). */
static TENSOR__UNUSED void tensor__register_kernel(tensor_op op, tensor_device device, tensor__kernel_fn fn) {
    if ((unsigned)op < TENSOR_OP_COUNT && (unsigned)device < TENSOR_DEVICE_COUNT) tensor__kernels[op][device] = fn;
}

/* true: kernels that have an optimized path take their plain reference path instead, so tests can
   compare the two (tensor_set_reference_kernels). */
static bool tensor__reference_kernels;
TENSOR_API bool tensor_set_reference_kernels(bool on) {
    bool was = tensor__reference_kernels;
    tensor__reference_kernels = on;
    return was;
}

static bool tensor__autograd_record(tensor__call *c); /* >>autograd: records a node when inputs need grad; false: no memory */

/* Runs c's kernel on the device of its output; on failure frees the output(s) and returns NULL. */
static tensor *tensor__dispatch(tensor__call *c) {
    tensor_device dev = c->out->storage->device;
    tensor__kernel_fn k = tensor__kernels[c->op][dev];
    int rc = k ? k(c) : (tensor__fail(c->fn, "no kernel for %s on this device", tensor__ops[c->op].name), 1);
    if (rc || !tensor__autograd_record(c)) {
        tensor_free(c->out);
        tensor_free(c->out2);
        c->out = c->out2 = NULL;
        return NULL;
    }
    tensor_free(c->out2); /* a kernel's second output: the graph keeps its own handle if it needs it */
    c->out2 = NULL;
    return c->out;
}

/* Starts a call record: the operands absent, no error. The parameters (p, ip, dims) are the
   front-end's to set, each one its op reads, and are left as they are: clearing the whole record
   for every op cost more than the rest of this. Test builds fill them with garbage instead, so a
   kernel or derivative that reads a parameter its front-end never set fails the suite. */
static void tensor__call_init(tensor__call *c, tensor_op op) {
    c->op = op;
    c->fn = tensor__ops[op].fn;
    c->n_in = 0;
    for (int i = 0; i < TENSOR__MAX_INPUTS; i++) c->in[i] = NULL;
    c->out = c->out2 = NULL;
    c->compute = TENSOR_F32;
    c->n_dims = 0;
    c->error = 0;
#ifdef TENSOR_TEST_HOOKS
    memset(c->p, 0xff, sizeof c->p); /* NaN */
    memset(c->ip, 0x5b, sizeof c->ip);
    memset(c->dims, 0x5b, sizeof c->dims);
#endif
}

/* Every input of an op must live on one device: never a silent copy. */
static bool tensor__same_device(const char *fn, int n, tensor *const *ts) {
    int first = -1;
    for (int i = 0; i < n; i++) {
        if (!ts[i]) continue;
        if (first < 0) first = i;
        else if (ts[i]->storage->device != ts[first]->storage->device) {
            tensor__fail(fn, "inputs are on different devices (%s and %s); move them with tensor_to_device",
                         ts[first]->storage->device == TENSOR_CPU ? "cpu" : "cuda", ts[i]->storage->device == TENSOR_CPU ? "cpu" : "cuda");
            return false;
        }
    }
    return true;
}

// >>iter ---------------------------------------------------------------------------------------
/* The iteration description every elementwise kernel consumes (like ATen's TensorIterator):
   operands broadcast to one shape (stride 0 on broadcast dims), dims coalesced where every operand
   is contiguous across them, strides in bytes. Operand 0 is the output by convention. A kernel
   supplies the inner loop over the last dim; tensor__iter_run walks the outer dims. */
#define TENSOR__MAX_OPERANDS 5
typedef struct {
    int ndim, n;
    int64_t shape[TENSOR_MAX_DIMS];
    int64_t stride[TENSOR__MAX_OPERANDS][TENSOR_MAX_DIMS];
    char *base[TENSOR__MAX_OPERANDS];
    tensor_dtype dtype[TENSOR__MAX_OPERANDS];
    int64_t numel;
} tensor__iter;

/* ptr[k] points at the first element of operand k in this row; stride[k] is its byte stride
   along the row; count elements. */
typedef void (*tensor__loop_fn)(char **ptr, const int64_t *stride, int64_t count, void *ctx);

/* No overflow here: every operand's |stride| * size is within TENSOR__MAX_NUMEL (>>shapes), so its
   byte strides, their products with the sizes and the offsets of its elements fit in int64. */
static void tensor__iter_init(tensor__iter *it, int n, tensor *const *ops, int ndim, const int64_t *shape) {
    TENSOR_ASSERT(n <= TENSOR__MAX_OPERANDS && ndim <= TENSOR_MAX_DIMS);
    it->n = n;
    it->numel = tensor__numel_of(ndim, shape);
    for (int k = 0; k < n; k++) { it->base[k] = tensor__data(ops[k]); it->dtype[k] = ops[k]->dtype; }
    /* drop size-1 dims, right-align each operand's dims to shape */
    int nd = 0;
    for (int d = 0; d < ndim; d++) {
        if (shape[d] == 1) continue;
        it->shape[nd] = shape[d];
        for (int k = 0; k < n; k++) {
            const tensor *t = ops[k];
            int td = d - (ndim - t->ndim);
            int64_t esz = (int64_t)tensor__dtype_sizes[t->dtype];
            it->stride[k][nd] = (td < 0 || t->shape[td] == 1) ? 0 : t->strides[td] * esz;
        }
        nd++;
    }
    /* coalesce dim d-1 into d when every operand steps evenly across both */
    int out = 0;
    for (int d = 0; d < nd; d++) {
        if (out > 0) {
            bool ok = true;
            for (int k = 0; k < n && ok; k++) ok = it->stride[k][out - 1] == it->stride[k][d] * it->shape[d];
            if (ok) {
                it->shape[out - 1] *= it->shape[d];
                for (int k = 0; k < n; k++) it->stride[k][out - 1] = it->stride[k][d];
                continue;
            }
        }
        it->shape[out] = it->shape[d];
        for (int k = 0; k < n; k++) it->stride[k][out] = it->stride[k][d];
        out++;
    }
    if (out == 0) { /* a single element */
        it->shape[0] = 1;
        for (int k = 0; k < n; k++) it->stride[k][0] = 0;
        out = 1;
    }
    it->ndim = out;
}

/* The odometer every walker shares (this iteration's, and the reductions' over kept and reduced
   dims): n byte pointers move over dims [0, nd) of shape, the last dim fastest; stride[k][d] is
   pointer k's byte stride along dim d. seek places them at position pos (row-major), step moves
   them one position on and returns false when that wrapped from the last position to the first. */
static inline void tensor__odometer_seek(int nd, const int64_t *shape, int64_t *idx, int n, char **ptr, char *const *base,
                                         const int64_t (*stride)[TENSOR_MAX_DIMS], int64_t pos) {
    for (int k = 0; k < n; k++) ptr[k] = base[k];
    for (int d = nd - 1; d >= 0; d--) {
        idx[d] = pos % shape[d];
        pos /= shape[d];
        for (int k = 0; k < n; k++) ptr[k] += idx[d] * stride[k][d];
    }
}
static inline bool tensor__odometer_step(int nd, const int64_t *shape, int64_t *idx, int n, char **ptr, const int64_t (*stride)[TENSOR_MAX_DIMS]) {
    for (int d = nd - 1; d >= 0; d--) {
        for (int k = 0; k < n; k++) ptr[k] += stride[k][d];
        if (++idx[d] < shape[d]) return true;
        for (int k = 0; k < n; k++) ptr[k] -= stride[k][d] * shape[d];
        idx[d] = 0;
    }
    return false;
}

/* Runs fn over the elements [begin, end) of the iteration, in row-major order: partial rows at
   the ends, whole rows between. */
static void tensor__iter_run_range(const tensor__iter *it, tensor__loop_fn fn, void *ctx, int64_t begin, int64_t end) {
    int nd = it->ndim, n = it->n;
    int64_t inner_n = it->shape[nd - 1], idx[TENSOR_MAX_DIMS], inner[TENSOR__MAX_OPERANDS];
    char *ptr[TENSOR__MAX_OPERANDS];
    tensor__odometer_seek(nd, it->shape, idx, n, ptr, it->base, it->stride, begin);
    for (int k = 0; k < n; k++) inner[k] = it->stride[k][nd - 1];
    int64_t at = begin;
    while (at < end) {
        int64_t count = inner_n - idx[nd - 1];
        if (count > end - at) count = end - at;
        fn(ptr, inner, count, ctx);
        at += count;
        if (at >= end) break;
        /* to the start of the next row: back along the row, one step over the outer dims */
        for (int k = 0; k < n; k++) ptr[k] -= idx[nd - 1] * inner[k];
        idx[nd - 1] = 0;
        tensor__odometer_step(nd - 1, it->shape, idx, n, ptr, it->stride);
    }
}

typedef struct { const tensor__iter *it; tensor__loop_fn fn; void *ctx; } tensor__iter_task;
static void tensor__iter_chunk(int64_t begin, int64_t end, void *task) {
    const tensor__iter_task *t = (const tensor__iter_task *)task;
    tensor__iter_run_range(t->it, t->fn, t->ctx, begin, end);
}

/* Elements per thread below which an elementwise op stays on one thread: about the work of a
   thread wake-up. */
#define TENSOR__GRAIN_ELEMENTWISE 32768
/* Items per thread chunk when each item (a row, an output element) is `per_item` elements of
   work: about TENSOR__GRAIN_ELEMENTWISE elements, and never 0, whatever per_item is (0 for an
   empty row, or huge). */
static int64_t tensor__grain(int64_t per_item) { return TENSOR__GRAIN_ELEMENTWISE / (per_item > 0 ? per_item : 1) + 1; }

/* Runs fn over every element; large iterations are split across the thread pool (fn must only
   write its own elements; its ctx is shared). */
static void tensor__iter_run(const tensor__iter *it, tensor__loop_fn fn, void *ctx) {
    if (it->numel == 0) return;
    tensor__iter_task t;
    t.it = it;
    t.fn = fn;
    t.ctx = ctx;
    tensor__parallel_for(it->numel, TENSOR__GRAIN_ELEMENTWISE, tensor__iter_chunk, &t);
}

/* Visits every element index of a shape in row-major order: a helper for kernels that are not
   elementwise (index math of gather, pooling, ...). Returns false when done. */
static TENSOR__UNUSED bool tensor__next_index(int ndim, const int64_t *shape, int64_t *idx) {
    return tensor__odometer_step(ndim, shape, idx, 0, NULL, NULL);
}

/* Element offset (in elements) of index idx in t. */
static TENSOR__UNUSED int64_t tensor__offset_of(const tensor *t, const int64_t *idx) {
    int64_t o = t->offset;
    for (int d = 0; d < t->ndim; d++) o += idx[d] * t->strides[d];
    return o;
}

/* Generic converting copy src -> dst (broadcasting src to dst's shape): the kernel of copy_,
   contiguous, clone and to_dtype. */
static void tensor__copy_loop(char **p, const int64_t *s, int64_t n, void *ctx) {
    const tensor__iter *it = (const tensor__iter *)ctx;
    tensor_dtype dd = it->dtype[0], sd = it->dtype[1];
    if (dd == sd) {
        size_t esz = tensor__dtype_sizes[dd];
        if (s[0] == (int64_t)esz && s[1] == (int64_t)esz) { memmove(p[0], p[1], (size_t)n * esz); return; }
        /* strided: typed moves (a memcpy call per element cost 3 ns) */
        char *d = p[0];
        const char *q = p[1];
        switch (esz) {
        case 8: for (int64_t i = 0; i < n; i++) *(uint64_t *)(void *)(d + i * s[0]) = *(const uint64_t *)(const void *)(q + i * s[1]); return;
        case 4: for (int64_t i = 0; i < n; i++) *(uint32_t *)(void *)(d + i * s[0]) = *(const uint32_t *)(const void *)(q + i * s[1]); return;
        case 2: for (int64_t i = 0; i < n; i++) *(uint16_t *)(void *)(d + i * s[0]) = *(const uint16_t *)(const void *)(q + i * s[1]); return;
        default: for (int64_t i = 0; i < n; i++) memcpy(d + i * s[0], q + i * s[1], esz); return;
        }
    }
    bool half_d = dd == TENSOR_F16 || dd == TENSOR_BF16, half_s = sd == TENSOR_F16 || sd == TENSOR_BF16;
    if (s[0] == (int64_t)tensor__dtype_sizes[dd] && s[1] == (int64_t)tensor__dtype_sizes[sd]) { /* contiguous f16/bf16 <-> f32: SIMD rows */
        if (dd == TENSOR_F32 && half_s) { tensor__half_to_f32((float *)(void *)p[0], (const uint16_t *)(const void *)p[1], n, sd == TENSOR_BF16); return; }
        if (sd == TENSOR_F32 && half_d) { tensor__f32_to_half((uint16_t *)(void *)p[0], (const float *)(const void *)p[1], n, dd == TENSOR_BF16); return; }
    }
    if (tensor__is_float(dd) || tensor__is_float(sd))
        for (int64_t i = 0; i < n; i++) tensor__store_f64(p[0] + i * s[0], dd, tensor__load_f64(p[1] + i * s[1], sd));
    else
        for (int64_t i = 0; i < n; i++) tensor__store_i64(p[0] + i * s[0], dd, tensor__load_i64(p[1] + i * s[1], sd));
}

static void tensor__copy_into(tensor *dst, const tensor *src) {
    tensor *ops[2] = {dst, (tensor *)src};
    tensor__iter it;
    tensor__iter_init(&it, 2, ops, dst->ndim, dst->shape);
    tensor__iter_run(&it, tensor__copy_loop, &it);
}

/* A contiguous copy of t in dtype (a plain helper for kernels; no autograd, no registry op). */
static tensor *tensor__contiguous_copy(const char *fn, const tensor *t, tensor_dtype dtype) {
    tensor *r = tensor__new_like(fn, t, dtype);
    if (r) tensor__copy_into(r, t);
    return r;
}
/* ==== end generator/parts/dispatch.h ==== */
/* ==== begin generator/parts/elementwise.h ==== */
// >>elementwise --------------------------------------------------------------------------------
/* Each elementwise op is one line below: its formula on double x (and y), and on int64_t x (and y)
   for ops that keep integer dtypes. TENSOR__UNARY/TENSOR__BINARY expand a formula into the op's
   reference CPU kernel: a loop over one row of the iteration description, with typed fast paths
   for f32 and f64, an f32 chunk path for bf16/f16 rows, and a converting path for every other
   dtype. Float formulas are evaluated in
   double and rounded once to the output dtype. p0, p1 are the op's parameters; k is the loop
   context (a formula sets k->error for a value it cannot compute, e.g. integer division by 0). */
/* ---- bf16 and f16 rows: converted in registers, a chunk at a time ----
   A row whose operands are bf16, f16 or f32 (dense, or a broadcast scalar) and whose output is
   one of those (or bool, for comparisons) runs as f32: each chunk of TENSOR__HALF_CHUNK elements is
   widened into a stack buffer, the op's f32 vector kernel (or its formula) runs on it, and the
   result is narrowed with round to nearest even, as tensor__f32_to_bf16 / tensor__f32_to_f16 do
   (NaN included). The reference loop rounds the double formula to f32 and then to the 16-bit
   type, so an op whose f32 kernel is correctly rounded gives the same bits either way. The
   conversions are the SIMD layer's (tensor__half_to_f32, tensor__f32_to_half); the f32 work is
   the op's own loop, run again on f32 chunks (tensor__half_rows), so no op carries a second copy. */
#define TENSOR__HALF_CHUNK 1024 /* 12 KiB of f32 buffers on the stack; the per-chunk calls amortized */

typedef struct {
    tensor_dtype out, in[3];
    bool int_compute;
    double p0, p1;
    int error;
    /* >>simd row kernels of this op for f32 operands (NULL: none, or reference kernels asked for) */
    tensor__vec_unary_fn vu;
    tensor__vec_binary_fn vb;
    tensor__vec_compare_fn vc;
    double prm[2];
    bool half; /* the f32 chunk path of bf16/f16 rows (off for the reference kernels) */
} tensor__ew_ctx;

/* Which operands of a binary row are f32 arrays (stride 4) and which a broadcast scalar (stride
   0), as the vector kernels' `mode` names it; -1 for any other layout. */
static int tensor__vec_mode(const int64_t *st) {
    if (st[1] == 4 && st[2] == 4) return 0;
    if (st[1] == 4 && st[2] == 0) return 1;
    if (st[1] == 0 && st[2] == 4) return 2;
    return -1;
}

/* Whether an operand of dtype d at byte stride st reads as f32 exactly: f32, bf16 or f16, dense or
   broadcast. */
static bool tensor__half_operand(tensor_dtype d, int64_t st) {
    return (d == TENSOR_F32 || d == TENSOR_BF16 || d == TENSOR_F16) && (st == 0 || st == (int64_t)tensor__dtype_sizes[d]);
}
/* The layout of a row that the f32 chunk path takes, as the vector kernels' `mode` (unary: 0), or
   -1. Inputs must read as f32 exactly and not all be broadcast; the output is dense f32, bf16 or
   f16, or bool for a comparison that has a vector kernel. */
static int tensor__half_mode(const tensor__ew_ctx *k, const int64_t *st, int n_in) {
    if (!k->half) return -1;
    if (k->out == TENSOR_BOOL) {
        if (n_in != 2 || !k->vc || st[0] != 1) return -1;
    } else if (!tensor__half_operand(k->out, st[0]) || st[0] == 0) {
        return -1;
    }
    for (int j = 0; j < n_in; j++) if (!tensor__half_operand(k->in[j], st[j + 1])) return -1;
    if (n_in == 1) return st[1] ? 0 : -1;
    return st[1] && st[2] ? 0 : st[1] ? 1 : st[2] ? 2 : -1;
}
/* Elements [i0, i0 + m) of an input row as f32: the row itself when it is f32, else widened into
   buf; a broadcast input's one value in buf[0]. */
static const float *tensor__half_in(tensor_dtype d, const char *p, int64_t st, int64_t i0, int64_t m, float *buf) {
    if (st == 0) { buf[0] = (float)tensor__load_f64(p, d); return buf; }
    if (d == TENSOR_F32) return (const float *)p + i0;
    tensor__half_to_f32(buf, (const uint16_t *)p + i0, m, d == TENSOR_BF16);
    return buf;
}
/* Where the f32 results of elements [i0, ...) go: the output row when it is f32, else buf, which
   tensor__half_out then narrows into the row. */
static float *tensor__half_dst(const tensor__ew_ctx *k, char *o, int64_t i0, float *buf) { return k->out == TENSOR_F32 ? (float *)o + i0 : buf; }
static void tensor__half_out(const tensor__ew_ctx *k, char *o, int64_t i0, int64_t m, const float *r) {
    if (k->out != TENSOR_F32) tensor__f32_to_half((uint16_t *)o + i0, r, m, k->out == TENSOR_BF16);
}
/* A row that tensor__half_mode takes, as f32 chunk by chunk: inputs widened (an f32 or broadcast
   one read in place), the op's own loop run on the f32 operands (its vector kernel, or its formula
   evaluated from f32 values), the results narrowed into the row. */
static void tensor__half_rows(char **ptr, const int64_t *st, int64_t n, tensor__ew_ctx *k, int n_in, tensor__loop_fn loop) {
    float in_buf[2][TENSOR__HALF_CHUNK], out_buf[TENSOR__HALF_CHUNK];
    tensor__ew_ctx k32 = *k;
    k32.half = false;
    k32.error = 0;
    if (k32.out != TENSOR_BOOL) k32.out = TENSOR_F32;
    for (int j = 0; j < n_in; j++) k32.in[j] = TENSOR_F32;
    for (int64_t i0 = 0; i0 < n; i0 += TENSOR__HALF_CHUNK) {
        int64_t m = n - i0 < TENSOR__HALF_CHUNK ? n - i0 : TENSOR__HALF_CHUNK, s[3];
        char *p[3];
        for (int j = 0; j < n_in; j++) {
            p[j + 1] = (char *)(uintptr_t)tensor__half_in(k->in[j], ptr[j + 1], st[j + 1], i0, m, in_buf[j]);
            s[j + 1] = st[j + 1] ? 4 : 0;
        }
        if (k->out == TENSOR_BOOL) p[0] = ptr[0] + i0, s[0] = 1;
        else p[0] = (char *)tensor__half_dst(k, ptr[0], i0, out_buf), s[0] = 4;
        loop(p, s, m, &k32);
        if (k->out != TENSOR_BOOL) tensor__half_out(k, ptr[0], i0, m, (const float *)(void *)p[0]);
    }
    if (k32.error) TENSOR__ATOMIC_SET(&k->error, 1);
}

/* Integer helpers: wrap on overflow like two's-complement hardware, with no undefined behaviour. */
static int64_t tensor__iadd(int64_t x, int64_t y) { return (int64_t)((uint64_t)x + (uint64_t)y); }
static int64_t tensor__isub(int64_t x, int64_t y) { return (int64_t)((uint64_t)x - (uint64_t)y); }
static int64_t tensor__imul(int64_t x, int64_t y) { return (int64_t)((uint64_t)x * (uint64_t)y); }
static int64_t tensor__ineg(int64_t x) { return (int64_t)(0 - (uint64_t)x); }
static int64_t tensor__iabs(int64_t x) { return x < 0 ? tensor__ineg(x) : x; }
static int64_t tensor__ipow(int64_t x, int64_t y) {
    if (y < 0) return x == 1 ? 1 : x == -1 ? (y & 1 ? -1 : 1) : 0; /* what truncating division gives */
    int64_t r = 1;
    while (y) { if (y & 1) r = tensor__imul(r, x); x = tensor__imul(x, x); y >>= 1; }
    return r;
}
static int64_t tensor__ifmod(int64_t x, int64_t y, tensor__ew_ctx *k) {
    if (y == 0) { TENSOR__ATOMIC_SET(&k->error, 1); return 0; } /* loops may run on several threads */
    if (y == -1) return 0; /* INT64_MIN % -1 would trap */
    return x % y;
}
static double tensor__fmaxnan(double x, double y) { return x != x ? x : y != y ? y : x > y ? x : y; }
static double tensor__fminnan(double x, double y) { return x != x ? x : y != y ? y : x < y ? x : y; }
static double tensor__clampd(double x, double lo, double hi) { double t = x < lo ? lo : x; return t > hi ? hi : t; }
static int64_t tensor__clampi(int64_t x, double lo, double hi) {
    int64_t t = (lo == lo && (double)x < lo) ? tensor__double_to_i64(lo) : x;
    return (hi == hi && (double)t > hi) ? tensor__double_to_i64(hi) : t;
}
static double tensor__softplus(double x) { return x > 20 ? x : log1p(exp(x)); }
static double tensor__logsigmoid(double x) { return x < 0 ? x - log1p(exp(x)) : -log1p(exp(-x)); }
static double tensor__gelu_tanh(double x) { return 0.5 * x * (1 + tanh(0.7978845608028654 * (x + 0.044715 * x * x * x))); }
static double tensor__sign(double x) { return x > 0 ? 1.0 : x < 0 ? -1.0 : x; }

/* One row of a unary op: ptr[0] is the output, ptr[1] the input. */
#define TENSOR__UNARY(name, FEXPR, IEXPR)                                                                  \
    static void tensor__loop_##name(char **ptr, const int64_t *st, int64_t n, void *vk) {                \
        tensor__ew_ctx *k = (tensor__ew_ctx *)vk;                                                        \
        double p0 = k->p0, p1 = k->p1;                                                                   \
        (void)p0; (void)p1;                                                                              \
        char *o = ptr[0], *a = ptr[1];                                                                   \
        if (k->int_compute) {                                                                            \
            for (int64_t i = 0; i < n; i++) {                                                            \
                int64_t x = tensor__load_i64(a + i * st[1], k->in[0]);                                   \
                (void)x;                                                                                 \
                tensor__store_i64(o + i * st[0], k->out, (int64_t)(IEXPR));                              \
            }                                                                                            \
        } else if (k->out == TENSOR_F32 && k->in[0] == TENSOR_F32) {                                     \
            if (k->vu && st[0] == 4 && st[1] == 4) { k->vu((float *)o, (const float *)a, n, k->prm); return; } \
            for (int64_t i = 0; i < n; i++) {                                                            \
                double x = *(const float *)(a + i * st[1]);                                              \
                *(float *)(o + i * st[0]) = (float)(FEXPR);                                              \
            }                                                                                            \
        } else if (k->out == TENSOR_F64 && k->in[0] == TENSOR_F64) {                                     \
            for (int64_t i = 0; i < n; i++) {                                                            \
                double x = *(const double *)(a + i * st[1]);                                             \
                *(double *)(o + i * st[0]) = (FEXPR);                                                    \
            }                                                                                            \
        } else if (tensor__half_mode(k, st, 1) == 0) {                                                   \
            tensor__half_rows(ptr, st, n, k, 1, tensor__loop_##name);                                    \
        } else {                                                                                         \
            for (int64_t i = 0; i < n; i++) {                                                            \
                double x = tensor__load_f64(a + i * st[1], k->in[0]);                                    \
                tensor__store_f64(o + i * st[0], k->out, (double)(FEXPR));                               \
            }                                                                                            \
        }                                                                                                \
    }                                                                                                    \
    static int tensor__cpu_##name(tensor__call *c) { return tensor__run_elementwise(c, tensor__loop_##name, TENSOR_OP_##name); }

/* One row of a binary op: ptr[0] the output, ptr[1] and ptr[2] the inputs. */
#define TENSOR__BINARY(name, FEXPR, IEXPR)                                                                 \
    static void tensor__loop_##name(char **ptr, const int64_t *st, int64_t n, void *vk) {                \
        tensor__ew_ctx *k = (tensor__ew_ctx *)vk;                                                        \
        char *o = ptr[0], *a = ptr[1], *b = ptr[2];                                                      \
        if (k->int_compute) {                                                                            \
            for (int64_t i = 0; i < n; i++) {                                                            \
                int64_t x = tensor__load_i64(a + i * st[1], k->in[0]);                                   \
                int64_t y = tensor__load_i64(b + i * st[2], k->in[1]);                                   \
                (void)x; (void)y;                                                                        \
                tensor__store_i64(o + i * st[0], k->out, (int64_t)(IEXPR));                              \
            }                                                                                            \
        } else if (k->out == TENSOR_F32 && k->in[0] == TENSOR_F32 && k->in[1] == TENSOR_F32) {          \
            int mode = k->vb && st[0] == 4 ? tensor__vec_mode(st) : -1;                                  \
            if (mode >= 0) { k->vb((float *)o, (const float *)a, (const float *)b, n, mode); return; }   \
            for (int64_t i = 0; i < n; i++) {                                                            \
                double x = *(const float *)(a + i * st[1]), y = *(const float *)(b + i * st[2]);         \
                *(float *)(o + i * st[0]) = (float)(FEXPR);                                              \
            }                                                                                            \
        } else if (k->out == TENSOR_F64 && k->in[0] == TENSOR_F64 && k->in[1] == TENSOR_F64) {          \
            for (int64_t i = 0; i < n; i++) {                                                            \
                double x = *(const double *)(a + i * st[1]), y = *(const double *)(b + i * st[2]);       \
                *(double *)(o + i * st[0]) = (FEXPR);                                                    \
            }                                                                                            \
        } else {                                                                                         \
            int mode = k->vc && st[0] == 1 && k->out == TENSOR_BOOL && k->in[0] == TENSOR_F32 &&         \
                       k->in[1] == TENSOR_F32 ? tensor__vec_mode(st) : -1;                               \
            if (mode >= 0) { k->vc((uint8_t *)o, (const float *)a, (const float *)b, n, mode); return; } \
            if (tensor__half_mode(k, st, 2) >= 0) { tensor__half_rows(ptr, st, n, k, 2, tensor__loop_##name); return; } \
            for (int64_t i = 0; i < n; i++) {                                                            \
                double x = tensor__load_f64(a + i * st[1], k->in[0]);                                    \
                double y = tensor__load_f64(b + i * st[2], k->in[1]);                                    \
                tensor__store_f64(o + i * st[0], k->out, (double)(FEXPR));                               \
            }                                                                                            \
        }                                                                                                \
    }                                                                                                    \
    static int tensor__cpu_##name(tensor__call *c) { return tensor__run_elementwise(c, tensor__loop_##name, TENSOR_OP_##name); }

/* Runs an elementwise loop over out = f(in...): operands broadcast to out's shape. `kernel` is the
   op whose loop this is (its vector kernels, if any, serve the f32 rows). */
static int tensor__run_elementwise(tensor__call *c, tensor__loop_fn loop, tensor_op kernel) {
    tensor *ops[TENSOR__MAX_OPERANDS];
    tensor__ew_ctx k;
    memset(&k, 0, sizeof k);
    ops[0] = c->out;
    k.out = c->out->dtype;
    k.int_compute = !tensor__is_float(c->compute);
    k.p0 = c->p[0];
    k.p1 = c->p[1];
    for (int i = 0; i < c->n_in; i++) { ops[i + 1] = c->in[i]; k.in[i] = c->in[i]->dtype; }
    const tensor__simd_isa *v = tensor__reference_kernels || k.int_compute ? NULL : tensor__simd();
    if (v) {
        k.vu = v->unary[kernel];
        k.vb = v->binary[kernel];
        k.vc = v->compare[kernel];
        k.prm[0] = k.p0;
        k.prm[1] = k.p1;
        k.half = k.out == TENSOR_BF16 || k.out == TENSOR_F16;
        for (int i = 0; i < c->n_in; i++) k.half = k.half || k.in[i] == TENSOR_BF16 || k.in[i] == TENSOR_F16;
    }
    tensor__iter it;
    tensor__iter_init(&it, c->n_in + 1, ops, c->out->ndim, c->out->shape);
    tensor__iter_run(&it, loop, &k);
    if (k.error) { tensor__fail(c->fn, "integer division by zero"); return 1; }
    return 0;
}

/*                name        float formula (double x)                    integer formula (int64_t x) */
TENSOR__UNARY(neg,         -x,                                          tensor__ineg(x))
TENSOR__UNARY(abs,         fabs(x),                                     tensor__iabs(x))
TENSOR__UNARY(sign,        tensor__sign(x),                             (x > 0) - (x < 0))
TENSOR__UNARY(sqrt,        sqrt(x),                                     0)
TENSOR__UNARY(rsqrt,       1.0 / sqrt(x),                               0)
TENSOR__UNARY(square,      x * x,                                       tensor__imul(x, x))
TENSOR__UNARY(reciprocal,  1.0 / x,                                     0)
TENSOR__UNARY(exp,         exp(x),                                      0)
TENSOR__UNARY(exp2,        exp2(x),                                     0)
TENSOR__UNARY(expm1,       expm1(x),                                    0)
TENSOR__UNARY(log,         log(x),                                      0)
TENSOR__UNARY(log2,        log2(x),                                     0)
TENSOR__UNARY(log1p,       log1p(x),                                    0)
TENSOR__UNARY(sin,         sin(x),                                      0)
TENSOR__UNARY(cos,         cos(x),                                      0)
TENSOR__UNARY(tan,         tan(x),                                      0)
TENSOR__UNARY(asin,        asin(x),                                     0)
TENSOR__UNARY(acos,        acos(x),                                     0)
TENSOR__UNARY(atan,        atan(x),                                     0)
TENSOR__UNARY(sinh,        sinh(x),                                     0)
TENSOR__UNARY(cosh,        cosh(x),                                     0)
TENSOR__UNARY(tanh,        tanh(x),                                     0)
TENSOR__UNARY(asinh,       asinh(x),                                    0)
TENSOR__UNARY(acosh,       acosh(x),                                    0)
TENSOR__UNARY(atanh,       atanh(x),                                    0)
TENSOR__UNARY(sigmoid,     1.0 / (1.0 + exp(-x)),                       0)
TENSOR__UNARY(logsigmoid,  tensor__logsigmoid(x),                       0)
TENSOR__UNARY(relu,        x < 0 ? 0.0 : x,                             x < 0 ? 0 : x)
TENSOR__UNARY(relu6,       tensor__clampd(x, 0, 6),                     tensor__clampi(x, 0, 6))
TENSOR__UNARY(gelu,        0.5 * x * (1 + erf(x * 0.7071067811865476)), 0)
TENSOR__UNARY(gelu_tanh,   tensor__gelu_tanh(x),                        0)
TENSOR__UNARY(silu,        x / (1.0 + exp(-x)),                         0)
TENSOR__UNARY(mish,        x * tanh(tensor__softplus(x)),               0)
TENSOR__UNARY(softplus,    tensor__softplus(x),                         0)
TENSOR__UNARY(erf,         erf(x),                                      0)
TENSOR__UNARY(floor,       floor(x),                                    x)
TENSOR__UNARY(ceil,        ceil(x),                                     x)
TENSOR__UNARY(round,       nearbyint(x),                                x)
TENSOR__UNARY(trunc,       trunc(x),                                    x)
TENSOR__UNARY(logical_not, x == 0,                                      x == 0)
TENSOR__UNARY(isnan,       x != x,                                      0)
TENSOR__UNARY(isinf,       isinf(x) != 0,                               0)
TENSOR__UNARY(leaky_relu,  x > 0 ? x : p0 * x,                          0)
TENSOR__UNARY(elu,         x > 0 ? x : p0 * expm1(x),                   0)
TENSOR__UNARY(hardtanh,    tensor__clampd(x, p0, p1),                   tensor__clampi(x, p0, p1))
TENSOR__UNARY(clamp,       tensor__clampd(x, p0, p1),                   tensor__clampi(x, p0, p1))

TENSOR__BINARY(add,         x + y,                          tensor__iadd(x, y))
TENSOR__BINARY(sub,         x - y,                          tensor__isub(x, y))
TENSOR__BINARY(mul,         x * y,                          tensor__imul(x, y))
TENSOR__BINARY(div,         x / y,                          0)
TENSOR__BINARY(pow,         pow(x, y),                      tensor__ipow(x, y))
TENSOR__BINARY(maximum,     tensor__fmaxnan(x, y),          x > y ? x : y)
TENSOR__BINARY(minimum,     tensor__fminnan(x, y),          x < y ? x : y)
TENSOR__BINARY(atan2,       atan2(x, y),                    0)
TENSOR__BINARY(fmod,        fmod(x, y),                     tensor__ifmod(x, y, k))
TENSOR__BINARY(eq,          x == y,                         x == y)
TENSOR__BINARY(ne,          x != y,                         x != y)
TENSOR__BINARY(lt,          x < y,                          x < y)
TENSOR__BINARY(le,          x <= y,                         x <= y)
TENSOR__BINARY(gt,          x > y,                          x > y)
TENSOR__BINARY(ge,          x >= y,                         x >= y)
TENSOR__BINARY(logical_and, x != 0 && y != 0,               x != 0 && y != 0)
TENSOR__BINARY(logical_or,  x != 0 || y != 0,               x != 0 || y != 0)

/* where: ptr[0] out, ptr[1] cond (bool), ptr[2] a, ptr[3] b. */
static void tensor__loop_where(char **ptr, const int64_t *st, int64_t n, void *vk) {
    tensor__ew_ctx *k = (tensor__ew_ctx *)vk;
    for (int64_t i = 0; i < n; i++) {
        bool c = *(const uint8_t *)(ptr[1] + i * st[1]) != 0;
        int src = c ? 2 : 3;
        char *p = ptr[src] + i * st[src];
        tensor_dtype d = k->in[src - 1];
        if (d == k->out) memcpy(ptr[0] + i * st[0], p, tensor__dtype_sizes[d]);
        else if (k->int_compute) tensor__store_i64(ptr[0] + i * st[0], k->out, tensor__load_i64(p, d));
        else tensor__store_f64(ptr[0] + i * st[0], k->out, tensor__load_f64(p, d));
    }
}
static int tensor__cpu_where(tensor__call *c) { return tensor__run_elementwise(c, tensor__loop_where, TENSOR_OP_where); }

/* ---- fused backward of unary ops ----
   gx = g * f'(x) in one pass over x and g (relu has its own, tensor__relu_backward in >>nn), for a
   backward without create_graph (the derivatives in
   tensor_autograd.h fall back to their op-composed formulas otherwise, and for the ops and dtypes
   this does not take). The formulas are the composed ones, evaluated in the same order, so f64
   gives the same values; f32 works in f32, with the SIMD layer's f(x) where the derivative needs
   it (tanh, sigmoid, exp, silu, gelu). Returns 1 done, 0 not taken, -1 error (recorded). */
#define TENSOR__DUNARY_CHUNK 256
typedef struct { tensor_op op; double p0, p1; const tensor__simd_isa *v; bool f32; } tensor__dunary_ctx;

/* y = f(x) for the functions the derivatives need, n <= TENSOR__DUNARY_CHUNK floats */
static void tensor__dunary_f32_of(const tensor__dunary_ctx *k, tensor_op f, float *y, const float *x, int64_t n) {
    tensor__vec_unary_fn vf = k->v ? k->v->unary[f] : NULL;
    if (vf) { vf(y, x, n, NULL); return; }
    for (int64_t i = 0; i < n; i++) {
        double t = x[i];
        y[i] = (float)(f == TENSOR_OP_tanh ? tanh(t) : f == TENSOR_OP_sigmoid ? 1.0 / (1.0 + exp(-t)) : f == TENSOR_OP_exp ? exp(t) : erf(t));
    }
}
#define TENSOR__DUNARY_MASKS(T, x, g, out, n, op, p0, p1)                                                    \
    switch (op) {                                                                                        \
    case TENSOR_OP_leaky_relu:                                                                           \
        for (int64_t i = 0; i < n; i++) { out[i] = x[i] > 0 ? g[i] : (T)(g[i] * p0); } return;           \
    case TENSOR_OP_relu6:                                                                                \
        for (int64_t i = 0; i < n; i++) { out[i] = g[i] * (x[i] > 0 && x[i] < 6 ? (T)1 : (T)0); } return; \
    case TENSOR_OP_hardtanh:                                                                             \
        for (int64_t i = 0; i < n; i++) { out[i] = g[i] * (x[i] > p0 && x[i] < p1 ? (T)1 : (T)0); } return; \
    case TENSOR_OP_clamp: {                                                                              \
        double lo = p0 == p0 ? p0 : -INFINITY, hi = p1 == p1 ? p1 : INFINITY;                            \
        for (int64_t i = 0; i < n; i++) out[i] = g[i] * (x[i] >= lo && x[i] <= hi ? (T)1 : (T)0);        \
        return;                                                                                          \
    }                                                                                                    \
    default: break;                                                                                      \
    }
static void tensor__dunary_f32(const tensor__dunary_ctx *k, float *out, const float *x, const float *g, int64_t n) {
    TENSOR__DUNARY_MASKS(float, x, g, out, n, k->op, k->p0, k->p1)
    float y[TENSOR__DUNARY_CHUNK], z[TENSOR__DUNARY_CHUNK];
    switch (k->op) {
    case TENSOR_OP_tanh: /* 1 - tanh^2 */
        tensor__dunary_f32_of(k, TENSOR_OP_tanh, y, x, n);
        for (int64_t i = 0; i < n; i++) { float t = y[i] * y[i]; out[i] = g[i] * (-t + 1.0f); }
        return;
    case TENSOR_OP_sigmoid: /* s (1 - s) */
        tensor__dunary_f32_of(k, TENSOR_OP_sigmoid, y, x, n);
        for (int64_t i = 0; i < n; i++) { float t = -y[i] + 1.0f; out[i] = g[i] * (y[i] * t); }
        return;
    case TENSOR_OP_exp:
        tensor__dunary_f32_of(k, TENSOR_OP_exp, y, x, n);
        for (int64_t i = 0; i < n; i++) out[i] = g[i] * y[i];
        return;
    case TENSOR_OP_silu: /* s (x (1 - s) + 1) */
        tensor__dunary_f32_of(k, TENSOR_OP_sigmoid, y, x, n);
        for (int64_t i = 0; i < n; i++) { float t = -y[i] + 1.0f, u = x[i] * t; out[i] = g[i] * (y[i] * (u + 1.0f)); }
        return;
    case TENSOR_OP_gelu: /* Phi(x) + x phi(x) */
        for (int64_t i = 0; i < n; i++) z[i] = (float)(x[i] * 0.70710678118654752440);
        tensor__dunary_f32_of(k, TENSOR_OP_erf, y, z, n);
        for (int64_t i = 0; i < n; i++) { float t = x[i] * x[i]; z[i] = (float)(t * -0.5); }
        tensor__dunary_f32_of(k, TENSOR_OP_exp, z, z, n);
        for (int64_t i = 0; i < n; i++) {
            float cdf = (float)((double)(y[i] + 1.0f) * 0.5), pdf = (float)(z[i] * 0.39894228040143267794);
            out[i] = g[i] * (cdf + x[i] * pdf);
        }
        return;
    default: return;
    }
}
static void tensor__dunary_f64(const tensor__dunary_ctx *k, double *out, const double *x, const double *g, int64_t n) {
    TENSOR__DUNARY_MASKS(double, x, g, out, n, k->op, k->p0, k->p1)
    for (int64_t i = 0; i < n; i++) {
        double v = x[i], d;
        switch (k->op) {
        case TENSOR_OP_tanh: { double t = tanh(v); d = -(t * t) + 1; break; }
        case TENSOR_OP_sigmoid: { double s = 1.0 / (1.0 + exp(-v)); d = s * (-s + 1); break; }
        case TENSOR_OP_exp: d = exp(v); break;
        case TENSOR_OP_silu: { double s = 1.0 / (1.0 + exp(-v)); d = s * (v * (-s + 1) + 1); break; }
        case TENSOR_OP_gelu: d = (erf(v * 0.70710678118654752440) + 1) * 0.5 + v * (exp(v * v * -0.5) * 0.39894228040143267794); break;
        default: d = 0; break;
        }
        out[i] = g[i] * d;
    }
}
/* ptr[0] out, ptr[1] x, ptr[2] g, all of one float dtype; strided rows go through chunk buffers */
static void tensor__loop_dunary(char **ptr, const int64_t *st, int64_t n, void *vk) {
    const tensor__dunary_ctx *k = (const tensor__dunary_ctx *)vk;
    int64_t es = k->f32 ? 4 : 8;
    double xb[TENSOR__DUNARY_CHUNK], gb[TENSOR__DUNARY_CHUNK], ob[TENSOR__DUNARY_CHUNK]; /* room for either dtype */
    for (int64_t i0 = 0; i0 < n; i0 += TENSOR__DUNARY_CHUNK) {
        int64_t m = n - i0 < TENSOR__DUNARY_CHUNK ? n - i0 : TENSOR__DUNARY_CHUNK;
        char *o = ptr[0] + i0 * st[0];
        const char *x = ptr[1] + i0 * st[1], *g = ptr[2] + i0 * st[2];
        bool xd = st[1] == es, gd = st[2] == es, od = st[0] == es; /* dense rows are used in place */
        if (!xd) for (int64_t i = 0; i < m; i++) memcpy((char *)xb + i * es, x + i * st[1], (size_t)es);
        if (!gd) for (int64_t i = 0; i < m; i++) memcpy((char *)gb + i * es, g + i * st[2], (size_t)es);
        const void *xp = xd ? (const void *)x : (const void *)xb, *gp = gd ? (const void *)g : (const void *)gb;
        void *op = od ? (void *)o : (void *)ob;
        if (k->f32) tensor__dunary_f32(k, (float *)op, (const float *)xp, (const float *)gp, m);
        else tensor__dunary_f64(k, (double *)op, (const double *)xp, (const double *)gp, m);
        if (!od) for (int64_t i = 0; i < m; i++) memcpy(o + i * st[0], (char *)ob + i * es, (size_t)es);
    }
}
static int tensor__unary_backward(tensor_op op, tensor *x, tensor *g, double p0, double p1, tensor **out) {
    const char *fn = "tensor_backward";
    if (tensor__reference_kernels || !x || !g || x->dtype != g->dtype || (x->dtype != TENSOR_F32 && x->dtype != TENSOR_F64)) return 0;
    if (x->storage->device != TENSOR_CPU || g->storage->device != TENSOR_CPU || x->ndim != g->ndim) return 0;
    for (int d = 0; d < x->ndim; d++) if (x->shape[d] != g->shape[d]) return 0;
    tensor *r = tensor__new(fn, x->ndim, x->shape, x->dtype, TENSOR_CPU);
    if (!r) return -1;
    tensor__dunary_ctx k;
    k.op = op;
    k.p0 = p0;
    k.p1 = p1;
    k.v = tensor__simd();
    k.f32 = x->dtype == TENSOR_F32;
    tensor *ops[3] = {r, x, g};
    tensor__iter it;
    tensor__iter_init(&it, 3, ops, r->ndim, r->shape);
    tensor__iter_run(&it, tensor__loop_dunary, &k);
    TENSOR__PATH_TAKEN(unary_backward_fused);
    *out = r;
    return 1;
}

/* ---- front-ends ---- */

/* The dtype an elementwise op gives for inputs of common dtype `common`; false + error if refused. */
static bool tensor__elementwise_types(tensor_op op, tensor_dtype common, tensor_dtype *out, tensor_dtype *compute) {
    switch (tensor__ops[op].types) {
    case TENSOR__TYPES_NUM:
        if (common == TENSOR_BOOL) { tensor__fail(tensor__ops[op].fn, "not supported for bool tensors"); return false; }
        *out = *compute = common;
        return true;
    case TENSOR__TYPES_FLOAT: *out = *compute = tensor__is_float(common) ? common : TENSOR_F32; return true;
    case TENSOR__TYPES_BOOL: *out = TENSOR_BOOL; *compute = common; return true;
    default: *out = *compute = common; return true;
    }
}

/* out = op(a) with parameters p0, p1. */
static tensor *tensor__unary(tensor_op op, tensor *a, double p0, double p1) {
    const char *fn = tensor__ops[op].fn;
    TENSOR__CHECK_ARG(fn, a);
    tensor__call c;
    tensor__call_init(&c, op);
    tensor_dtype out;
    if (!tensor__elementwise_types(op, a->dtype, &out, &c.compute)) return NULL;
    c.n_in = 1;
    c.in[0] = a;
    c.p[0] = p0;
    c.p[1] = p1;
    c.out = tensor__new(fn, a->ndim, a->shape, out, a->storage->device);
    return c.out ? tensor__dispatch(&c) : NULL;
}

/* out = op(a, b) broadcast, with the result and compute dtypes already decided. */
static tensor *tensor__binary_typed(tensor_op op, tensor *a, tensor *b, tensor_dtype out, tensor_dtype compute) {
    const char *fn = tensor__ops[op].fn;
    tensor *ins[2] = {a, b};
    if (!tensor__same_device(fn, 2, ins)) return NULL;
    int nd;
    int64_t shape[TENSOR_MAX_DIMS];
    if (!tensor__broadcast_shapes(fn, a->ndim, a->shape, b->ndim, b->shape, &nd, shape)) return NULL;
    tensor__call c;
    tensor__call_init(&c, op);
    c.n_in = 2;
    c.in[0] = a;
    c.in[1] = b;
    c.compute = compute;
    c.out = tensor__new(fn, nd, shape, out, a->storage->device);
    return c.out ? tensor__dispatch(&c) : NULL;
}

static tensor *tensor__binary(tensor_op op, tensor *a, tensor *b) {
    const char *fn = tensor__ops[op].fn;
    TENSOR__CHECK_ARG(fn, a);
    TENSOR__CHECK_ARG(fn, b);
    tensor *ins[2] = {a, b};
    tensor_dtype out, compute;
    /* subtraction refuses a bool operand even where the other one promotes it (PyTorch's bool - int) */
    tensor_dtype common = op == TENSOR_OP_sub && (a->dtype == TENSOR_BOOL || b->dtype == TENSOR_BOOL) ? TENSOR_BOOL : tensor__result_type(2, ins);
    if (!tensor__elementwise_types(op, common, &out, &compute)) return NULL;
    return tensor__binary_typed(op, a, b, out, compute);
}

/* A C double standing for a PyTorch scalar: integral values act as ints, others as floats. */
static bool tensor__scalar_is_integral(double s) { return s == floor(s) && fabs(s) < 9.2e18; }

/* The dtype of `a op s` when s is a wrapped number (PyTorch: a float tensor keeps its dtype, an int
   tensor stays int for an integral s and becomes f32 otherwise, bool + int gives i64). */
static tensor_dtype tensor__scalar_result_type(tensor_dtype a, double s) {
    if (tensor__is_float(a)) return a;
    if (!tensor__scalar_is_integral(s)) return TENSOR_F32;
    return a == TENSOR_BOOL ? TENSOR_I64 : a;
}

/* A 0-dim tensor holding s for use as the second operand of `a op s`. */
static tensor *tensor__wrapped_scalar(const char *fn, double s, tensor_dtype result) {
    tensor_dtype d = tensor__is_float(result) ? (result == TENSOR_F64 ? TENSOR_F64 : TENSOR_F32) : TENSOR_I64;
    tensor *t = tensor__new(fn, 0, NULL, d, TENSOR_CPU);
    if (!t) return NULL;
    if (d == TENSOR_I64) tensor__store_i64(tensor__data(t), d, tensor__double_to_i64(s));
    else tensor__store_f64(tensor__data(t), d, s);
    return t;
}

static tensor *tensor__binary_scalar(tensor_op op, tensor *a, double s) {
    const char *fn = tensor__ops[op].fn;
    TENSOR__CHECK_ARG(fn, a);
    tensor_op base;
    switch (op) {
    case TENSOR_OP_add_scalar: base = TENSOR_OP_add; break;
    case TENSOR_OP_sub_scalar: base = TENSOR_OP_sub; break;
    case TENSOR_OP_mul_scalar: base = TENSOR_OP_mul; break;
    case TENSOR_OP_div_scalar: base = TENSOR_OP_div; break;
    default: base = TENSOR_OP_pow; break;
    }
    tensor_dtype out, compute;
    tensor_dtype common = op == TENSOR_OP_sub_scalar && a->dtype == TENSOR_BOOL ? TENSOR_BOOL : tensor__scalar_result_type(a->dtype, s);
    if (!tensor__elementwise_types(op, common, &out, &compute)) return NULL;
    if (op == TENSOR_OP_pow_scalar && tensor__is_int(a->dtype) && tensor__scalar_is_integral(s) && s < 0) /* as PyTorch */
        return tensor__fail(fn, "integers to negative integer powers are not allowed (%s tensor, exponent %g)", tensor__dtype_names[a->dtype], s);
    tensor *b = tensor__wrapped_scalar(fn, s, compute);
    if (!b) return NULL;
    tensor *r = a->storage->device == TENSOR_CPU ? tensor__binary_typed(base, a, b, out, compute) : tensor__fail(fn, "scalar ops on this device are not available");
    tensor_free(b);
    return r;
}

/* Generated front-ends for the UNARY, BINARY and SCALAR ops of the registry. */
#define TENSOR__FRONT_UNARY(name, params) TENSOR_API tensor *tensor_##name params { return tensor__unary(TENSOR_OP_##name, a, 0, 0); }
#define TENSOR__FRONT_BINARY(name, params) TENSOR_API tensor *tensor_##name params { return tensor__binary(TENSOR_OP_##name, a, b); }
#define TENSOR__FRONT_SCALAR(name, params) TENSOR_API tensor *tensor_##name params { return tensor__binary_scalar(TENSOR_OP_##name, a, s); }
#define TENSOR__FRONT_NONE(name, params)
#define TENSOR__FRONT_UNARY_P TENSOR__FRONT_NONE
#define TENSOR__FRONT_TERNARY TENSOR__FRONT_NONE
#define TENSOR__FRONT_INPLACE TENSOR__FRONT_NONE
#define TENSOR__FRONT_CREATE TENSOR__FRONT_NONE
#define TENSOR__FRONT_REDUCE TENSOR__FRONT_NONE
#define TENSOR__FRONT_SHAPE TENSOR__FRONT_NONE
#define TENSOR__FRONT_INDEX TENSOR__FRONT_NONE
#define TENSOR__FRONT_LINALG TENSOR__FRONT_NONE
#define TENSOR__FRONT_NN TENSOR__FRONT_NONE
#define TENSOR__FRONT_LOSS TENSOR__FRONT_NONE
#define TENSOR__FRONT(name, kind, impl, types, grad, params, doc) TENSOR__FRONT_##kind(name, params)
TENSOR_OPS(TENSOR__FRONT)

/* Unary ops with parameters. Integer inputs with a fractional bound compute in f32 (PyTorch's
   promotion with a float scalar). */
static tensor *tensor__unary_bounds(tensor_op op, tensor *a, double lo, double hi) {
    const char *fn = tensor__ops[op].fn;
    TENSOR__CHECK_ARG(fn, a);
    if (!tensor__is_float(a->dtype) && a->dtype != TENSOR_BOOL &&
        ((lo == lo && !isinf(lo) && !tensor__scalar_is_integral(lo)) || (hi == hi && !isinf(hi) && !tensor__scalar_is_integral(hi)))) {
        tensor *f = tensor__contiguous_copy(fn, a, TENSOR_F32);
        tensor *r = f ? tensor__unary(op, f, lo, hi) : NULL;
        tensor_free(f);
        return r;
    }
    return tensor__unary(op, a, lo, hi);
}
TENSOR_API tensor *tensor_leaky_relu(tensor *a, double slope) { return tensor__unary(TENSOR_OP_leaky_relu, a, slope, 0); }
TENSOR_API tensor *tensor_elu(tensor *a, double alpha) { return tensor__unary(TENSOR_OP_elu, a, alpha, 0); }
TENSOR_API tensor *tensor_hardtanh(tensor *a, double lo, double hi) { return tensor__unary_bounds(TENSOR_OP_hardtanh, a, lo, hi); }
TENSOR_API tensor *tensor_clamp(tensor *a, double lo, double hi) { return tensor__unary_bounds(TENSOR_OP_clamp, a, lo, hi); }

TENSOR_API tensor *tensor_where(tensor *cond, tensor *a, tensor *b) {
    const char *fn = "tensor_where";
    TENSOR__CHECK_ARG(fn, cond);
    TENSOR__CHECK_ARG(fn, a);
    TENSOR__CHECK_ARG(fn, b);
    if (cond->dtype != TENSOR_BOOL) return tensor__fail(fn, "condition must be a bool tensor, got %s", tensor__dtype_names[cond->dtype]);
    tensor *ins[3] = {cond, a, b};
    if (!tensor__same_device(fn, 3, ins)) return NULL;
    int nd;
    int64_t s1[TENSOR_MAX_DIMS], s2[TENSOR_MAX_DIMS];
    if (!tensor__broadcast_shapes(fn, a->ndim, a->shape, b->ndim, b->shape, &nd, s1)) return NULL;
    if (!tensor__broadcast_shapes(fn, cond->ndim, cond->shape, nd, s1, &nd, s2)) return NULL;
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_where);
    c.n_in = 3;
    c.in[0] = cond;
    c.in[1] = a;
    c.in[2] = b;
    c.compute = tensor__result_type(2, ins + 1);
    c.out = tensor__new(fn, nd, s2, c.compute, a->storage->device);
    return c.out ? tensor__dispatch(&c) : NULL;
}

/* ---- in place: these return their first argument (the same handle, not a new one) ---- */

/* Refuses writes into tensors an autograd graph depends on (see >>autograd). */
static bool tensor__check_inplace(const char *fn, tensor *a);

/* The broadcast shape (nd, shape) of an in-place op's operands is a's own shape: a cannot grow. */
static bool tensor__broadcasts_into(int nd, const int64_t *shape, const tensor *a) {
    if (nd != a->ndim) return false;
    for (int i = 0; i < nd; i++) if (shape[i] != a->shape[i]) return false;
    return true;
}

/* A write into a view where several elements share one memory location (an expanded view) would
   depend on the order of the writes: refused, as PyTorch does (fill_ and zero_ write one value
   everywhere, so they allow it, as PyTorch's do). */
static bool tensor__check_no_overlap(const char *fn, const tensor *a) {
    for (int d = 0; d < a->ndim; d++)
        if (a->strides[d] == 0 && a->shape[d] > 1) {
            tensor__fail(fn, "more than one element of the written-to tensor (shape %s, an expanded view) refers to a single memory location; clone it first", tensor__shape_of(a));
            return false;
        }
    return true;
}

static tensor *tensor__inplace_run(tensor__call *c, tensor *a) {
    c->out = a;
    tensor__kernel_fn k = tensor__kernels[c->op][a->storage->device];
    if (!k) return tensor__fail(c->fn, "no kernel on this device");
    if (k(c)) return NULL;
    a->storage->version++;
    return a;
}

static int tensor__cpu_add_(tensor__call *c) { c->compute = c->out->dtype; return tensor__cpu_add(c); }
TENSOR_API tensor *tensor_add_(tensor *a, tensor *b) {
    const char *fn = "tensor_add_";
    TENSOR__CHECK_ARG(fn, a);
    TENSOR__CHECK_ARG(fn, b);
    tensor *ins[2] = {a, b};
    if (!tensor__same_device(fn, 2, ins) || !tensor__check_no_overlap(fn, a) || !tensor__check_inplace(fn, a)) return NULL;
    int nd;
    int64_t shape[TENSOR_MAX_DIMS];
    if (!tensor__broadcast_shapes(fn, a->ndim, a->shape, b->ndim, b->shape, &nd, shape)) return NULL;
    if (!tensor__broadcasts_into(nd, shape, a))
        return tensor__fail(fn, "shape %s of b does not broadcast to the shape %s of a", tensor__shape_of(b), tensor__shape_of(a));
    if (a->dtype == TENSOR_BOOL && b->dtype != TENSOR_BOOL) return tensor__fail(fn, "cannot add %s into a bool tensor", tensor__dtype_names[b->dtype]);
    if (!tensor__is_float(a->dtype) && tensor__is_float(b->dtype)) return tensor__fail(fn, "result type %s cannot be cast to %s in place", tensor__dtype_names[b->dtype], tensor__dtype_names[a->dtype]);
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_add_);
    c.n_in = 2;
    c.in[0] = a;
    c.in[1] = b;
    return tensor__inplace_run(&c, a);
}

static int tensor__cpu_mul_scalar_(tensor__call *c) {
    c->compute = c->out->dtype;
    tensor *s = tensor__wrapped_scalar(c->fn, c->p[0], c->out->dtype);
    if (!s) return 1;
    c->n_in = 2;
    c->in[1] = s;
    int rc = tensor__cpu_mul(c);
    tensor_free(s);
    return rc;
}
TENSOR_API tensor *tensor_mul_scalar_(tensor *a, double s) {
    const char *fn = "tensor_mul_scalar_";
    TENSOR__CHECK_ARG(fn, a);
    if (!tensor__check_no_overlap(fn, a) || !tensor__check_inplace(fn, a)) return NULL;
    if (a->dtype == TENSOR_BOOL || (!tensor__is_float(a->dtype) && !tensor__scalar_is_integral(s)))
        return tensor__fail(fn, "cannot multiply the %s tensor by %g in place", tensor__dtype_names[a->dtype], s);
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_mul_scalar_);
    c.n_in = 1;
    c.in[0] = a;
    c.p[0] = s;
    return tensor__inplace_run(&c, a);
}

static int tensor__cpu_copy_(tensor__call *c) { tensor__copy_into(c->out, c->in[1]); return 0; }
TENSOR_API tensor *tensor_copy_(tensor *dst, tensor *src) {
    const char *fn = "tensor_copy_";
    TENSOR__CHECK_ARG(fn, dst);
    TENSOR__CHECK_ARG(fn, src);
    tensor *ins[2] = {dst, src};
    if (!tensor__same_device(fn, 2, ins) || !tensor__check_no_overlap(fn, dst) || !tensor__check_inplace(fn, dst)) return NULL;
    int nd;
    int64_t shape[TENSOR_MAX_DIMS];
    if (!tensor__broadcast_shapes(fn, dst->ndim, dst->shape, src->ndim, src->shape, &nd, shape) || !tensor__broadcasts_into(nd, shape, dst))
        return tensor__fail(fn, "source shape %s does not broadcast to the destination shape %s", tensor__shape_of(src), tensor__shape_of(dst));
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_copy_);
    c.n_in = 2;
    c.in[0] = dst;
    c.in[1] = src;
    return tensor__inplace_run(&c, dst);
}

typedef struct { char elem[8]; size_t size; bool zero; } tensor__fill_ctx;
/* One row of a fill: memset for zero bits in a contiguous row, else stores of a fixed size (a
   memcpy of f->size bytes per element was a call, 3 ns: tensor_zeros of 16M floats ran at
   1.3 GB/s; one of a constant size compiles to a single store, and writes no typed lvalue). */
static void tensor__fill_loop(char **p, const int64_t *s, int64_t n, void *ctx) {
    const tensor__fill_ctx *f = (const tensor__fill_ctx *)ctx;
    char *o = p[0];
    int64_t st = s[0];
    if (f->zero && st == (int64_t)f->size) { memset(o, 0, (size_t)n * f->size); return; }
    switch (f->size) {
    case 8: for (int64_t i = 0; i < n; i++) memcpy(o + i * st, f->elem, 8); return;
    case 4: for (int64_t i = 0; i < n; i++) memcpy(o + i * st, f->elem, 4); return;
    case 2: for (int64_t i = 0; i < n; i++) memcpy(o + i * st, f->elem, 2); return;
    default: for (int64_t i = 0; i < n; i++) o[i * st] = f->elem[0]; return;
    }
}
/* Fills t (any layout) with value converted to t's dtype. */
static void tensor__fill(tensor *t, double value) {
    tensor__fill_ctx f;
    f.size = tensor__dtype_sizes[t->dtype];
    memset(f.elem, 0, sizeof f.elem);
    tensor__store_f64(f.elem, t->dtype, value);
    static const char zeros[8] = {0};
    f.zero = memcmp(f.elem, zeros, sizeof zeros) == 0;
    tensor__iter it;
    tensor__iter_init(&it, 1, &t, t->ndim, t->shape);
    tensor__iter_run(&it, tensor__fill_loop, &f);
}
static int tensor__cpu_fill_(tensor__call *c) { tensor__fill(c->out, c->p[0]); return 0; }
static int tensor__cpu_zero_(tensor__call *c) { tensor__fill(c->out, 0); return 0; }
TENSOR_API tensor *tensor_fill_(tensor *a, double value) {
    TENSOR__CHECK_ARG("tensor_fill_", a);
    if (!tensor__check_inplace("tensor_fill_", a)) return NULL;
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_fill_);
    c.p[0] = value;
    return tensor__inplace_run(&c, a);
}
TENSOR_API tensor *tensor_zero_(tensor *a) {
    TENSOR__CHECK_ARG("tensor_zero_", a);
    if (!tensor__check_inplace("tensor_zero_", a)) return NULL;
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_zero_);
    return tensor__inplace_run(&c, a);
}
/* ==== end generator/parts/elementwise.h ==== */
/* ==== begin generator/parts/create.h ==== */
// >>rng ----------------------------------------------------------------------------------------
/* Philox4x32-10 (Salmon et al., "Parallel random numbers: as easy as 1, 2, 3"): a counter-based
   generator, so the stream depends only on the seed and how many numbers were drawn, on every
   platform. The key is the seed; the 64-bit counter advances by one per block of four words; the
   counter's third word is the stream.
   Threads: each thread has its own generator (in its tensor__thread), so draws take no lock and a
   thread's numbers do not depend on what other threads draw. tensor_manual_seed(s) seeds the
   calling thread's generator: stream 0 from seed s, the numbers a single-threaded program gets
   from s. It also makes s the default seed: a thread that draws before seeding its own starts
   from the default seed on the stream of its place in the order threads started using the
   library (the first, usually main, has stream 0: a single-threaded program's numbers are as they
   always were; every later thread has a stream of its own, so numbers of its own). PyTorch instead
   has one global generator behind a lock, whose numbers then depend on how threads interleave. */
#define TENSOR__DEFAULT_SEED 67280421310721ull /* PyTorch's default seed */
static uint64_t tensor__default_seed = TENSOR__DEFAULT_SEED; /* atomic */
static TENSOR__THREAD_LOCAL tensor__philox tensor__rng_spare; /* a thread with no state (no memory for one) */

static void tensor__philox_block(const uint32_t key_in[2], uint64_t counter, uint32_t stream, uint32_t out[4]) {
    uint32_t c[4] = {(uint32_t)counter, (uint32_t)(counter >> 32), stream, 0};
    uint32_t k0 = key_in[0], k1 = key_in[1];
    for (int r = 0; r < 10; r++) {
        uint64_t p0 = (uint64_t)0xD2511F53u * c[0], p1 = (uint64_t)0xCD9E8D57u * c[2];
        uint32_t n0 = (uint32_t)(p1 >> 32) ^ c[1] ^ k0, n2 = (uint32_t)(p0 >> 32) ^ c[3] ^ k1;
        c[0] = n0;
        c[1] = (uint32_t)p1;
        c[2] = n2;
        c[3] = (uint32_t)p0;
        k0 += 0x9E3779B9u;
        k1 += 0xBB67AE85u;
    }
    memcpy(out, c, sizeof c);
}

static void tensor__philox_seed(tensor__philox *g, uint64_t seed, uint32_t stream) {
    g->key[0] = (uint32_t)seed;
    g->key[1] = (uint32_t)(seed >> 32);
    g->counter = 0;
    g->used = 4;
    g->stream = stream;
}

/* The calling thread's generator, set up on its first draw. */
static tensor__philox *tensor__rng_here(void) {
    tensor__thread *me = tensor__me();
    if (me && me->rng_seeded) return &me->rng;
    tensor__philox *g = me ? &me->rng : &tensor__rng_spare;
    if (me || !g->used) tensor__philox_seed(g, TENSOR__LOAD(&tensor__default_seed), me ? me->index : 0xffffffffu);
    if (me) me->rng_seeded = true;
    return g;
}

static uint32_t tensor__rng_u32(void) {
    tensor__philox *g = tensor__rng_here();
    if (g->used == 4) {
        tensor__philox_block(g->key, g->counter++, g->stream, g->block);
        g->used = 0;
    }
    return g->block[g->used++];
}
static uint64_t tensor__rng_u64(void) { uint64_t hi = tensor__rng_u32(); return hi << 32 | tensor__rng_u32(); }
/* Uniform in [0, 1) with 53 random bits. */
static inline double tensor__u53(uint64_t x) { return (double)(int64_t)(x >> 11) * (1.0 / 9007199254740992.0); } /* (the signed conversion is one instruction) */
static double tensor__rng_double(void) { return tensor__u53(tensor__rng_u64()); }

TENSOR_API void tensor_manual_seed(uint64_t seed) {
    TENSOR__STORE(&tensor__default_seed, seed);
    tensor__thread *me = tensor__me();
    tensor__philox_seed(me ? &me->rng : &tensor__rng_spare, seed, 0);
    if (me) me->rng_seeded = true;
}
/* tensor_shutdown: the default seed again, for the caller's generator and (once they draw) every
   other thread's. */
static void tensor__rng_reset(void) {
    TENSOR__STORE(&tensor__default_seed, TENSOR__DEFAULT_SEED);
    tensor__thread *me = tensor__self;
    if (me) me->rng_seeded = false;
}

/* A uniform integer in [0, n), n >= 1, without modulo bias (rejection). */
static uint64_t tensor__rng_below(uint64_t n) {
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t r;
    do r = tensor__rng_u64(); while (r >= limit);
    return r % n;
}

/* ---- fills: many numbers at once, on every thread, in SIMD lanes ----
   A fill of n values takes the next words of the calling thread's stream, exactly those that n
   draws one at a time would take (so a fill leaves the generator where they would), and computes
   each value from its own words: a value depends only on the seed and its place in the stream,
   never on the thread count, the chunking or the instruction set. The words come from Philox
   blocks computed in SIMD lanes (simd.h's rng_blocks, bit for bit tensor__philox_block); the
   normal values from Box-Muller in double (rng_normal) or, for randn below f64, in f32 on the
   words of whole blocks (rng_normal4). */

/* n Philox blocks from counter, their words in stream order: out[4 i + w] = word w of block
   counter + i. The reference of the SIMD layer's rng_blocks. */
static void tensor__rng_blocks_ref(uint32_t *out, int64_t n, const uint32_t key[2], uint64_t counter, uint32_t stream) {
    for (int64_t i = 0; i < n; i++) tensor__philox_block(key, counter + (uint64_t)i, stream, out + 4 * i);
}
/* Box-Muller, the reference of the SIMD layer's rng_normal (which computes the same in double with
   its own log, sin and cos): c[j] = r cos t, s[j] = r sin t, r = sqrt(-2 log u1[j]), t = 2 pi u2[j]. */
static TENSOR__UNUSED void tensor__rng_normal_ref(double *c, double *s, const double *u1, const double *u2, int64_t n) {
    for (int64_t j = 0; j < n; j++) {
        double r = sqrt(-2.0 * log(u1[j])), t = 2.0 * M_PI * u2[j];
        c[j] = r * cos(t);
        s[j] = r * sin(t);
    }
}

/* Box-Muller on whole Philox blocks, the reference of the SIMD layer's rng_normal4 (which computes in
   f32 with its own log, sin and cos, to a few ulp): block b from counter gives out[4 b .. 4 b + 3] =
   r0 cos t0, r0 sin t0, r1 cos t1, r1 sin t1 from its words (x0, y0, x1, y1): r = sqrt(-2 ln u),
   u = f32((x >> 1) | 1) 2^-31 in (0, 1] (down to 2^-31: values up to 6.5 sigma), t = 2 pi y 2^-32.
   One word a uniform, as PyTorch's f32 randn: half the words and a quarter of the work of the
   double path, which f64 keeps. */
static void tensor__rng_normal4_ref(float *out, int64_t n, const uint32_t key[2], uint64_t counter, uint32_t stream) {
    for (int64_t b = 0; b < n; b++) {
        uint32_t w[4];
        tensor__philox_block(key, counter + (uint64_t)b, stream, w);
        for (int h = 0; h < 2; h++) {
            double u = (double)(float)(int32_t)((w[2 * h] >> 1) | 1) * (1.0 / 2147483648.0), t = 2.0 * M_PI * ((double)w[2 * h + 1] * (1.0 / 4294967296.0));
            double r = sqrt(-2.0 * log(u));
            out[4 * b + 2 * h] = (float)(r * cos(t));
            out[4 * b + 2 * h + 1] = (float)(r * sin(t));
        }
    }
}

/* What a fill computes from its words. A unit is the words one step of the one-at-a-time code
   takes, and the values it gives:
     U24     1 word, 1 value: the top 24 bits / 2^24 (rand in f32; 11 bits in f16, 8 in bf16)
     U53     2 words, 1 value: 53 bits / 2^53 (rand in f64, uniform_)
     NORMAL  4 words, 2 values: Box-Muller's pair from u1 = 1 - U53, u2 = U53 (randn)
     NORMAL1 4 words, 1 value: the pair's first (normal_)
     NORMAL4 4 words, 4 values: two pairs in f32 from a whole block (randn below f64; its fill
             starts at the next whole block, leaving the rest of a block a draw began)
     KEEP    1 word, 1 value: dropout's mask, scale where word / 2^32 >= p, else 0 (out *= mask)
   Values are lo + scale * x, rounded once to the dtype. */
enum { TENSOR__RNG_U24, TENSOR__RNG_U53, TENSOR__RNG_NORMAL, TENSOR__RNG_NORMAL1, TENSOR__RNG_KEEP, TENSOR__RNG_NORMAL4 };
static const int tensor__rng_fill_words[] = {1, 2, 4, 4, 1, 4}, tensor__rng_fill_values[] = {1, 1, 2, 1, 1, 4};
typedef struct {
    uint32_t key[2], stream;
    uint64_t counter; /* the fill's word q is word (skip + q) % 4 of block counter + (skip + q) / 4 */
    int skip, kind;
    int64_t n;        /* values */
    tensor_dtype dtype;
    char *out;        /* n contiguous values */
    char *x;          /* KEEP: the data multiplied by the mask (out is the mask) */
    double lo, scale, p;
    void (*blocks)(uint32_t *, int64_t, const uint32_t *, uint64_t, uint32_t);
    void (*normal)(double *, double *, const double *, const double *, int64_t);
    void (*normal4)(float *, int64_t, const uint32_t *, uint64_t, uint32_t);
} tensor__rng_fill;

/* Takes the next `words` words of the calling thread's stream for f. */
static void tensor__rng_fill_take(tensor__rng_fill *f, int64_t words) {
    tensor__philox *g = tensor__rng_here();
    if (f->kind == TENSOR__RNG_NORMAL4) g->used = 4; /* whole blocks */
    memcpy(f->key, g->key, sizeof f->key);
    f->stream = g->stream;
    f->skip = g->used == 4 ? 0 : g->used;
    f->counter = g->used == 4 ? g->counter : g->counter - 1;
    uint64_t end = (uint64_t)f->skip + (uint64_t)words, last = f->counter + end / 4;
    if (end % 4 == 0) {
        g->counter = last;
        g->used = 4;
    } else { /* the last block is read in part: the next draw goes on in it */
        tensor__philox_block(g->key, last, g->stream, g->block);
        g->counter = last + 1;
        g->used = (int)(end % 4);
    }
}

#define TENSOR__RNG_CHUNK 512 /* units per step: their words and values stay in L1 */
static inline void tensor__rng_fill_store(const tensor__rng_fill *f, int64_t i, double v) {
    v = f->lo + f->scale * v;
    if (f->dtype == TENSOR_F32) ((float *)f->out)[i] = (float)v;
    else if (f->dtype == TENSOR_F64) ((double *)f->out)[i] = v;
    else tensor__store_f64(f->out + (size_t)i * tensor__dtype_sizes[f->dtype], f->dtype, v);
}
static inline double tensor__rng_fill_u53(const uint32_t *w) { return tensor__u53(((uint64_t)w[0] << 32) | w[1]); }
/* Units [u0, u1) of the fill ctx, in steps of TENSOR__RNG_CHUNK units. */
static void tensor__rng_fill_range(int64_t u0, int64_t u1, void *ctx) {
    const tensor__rng_fill *f = (const tensor__rng_fill *)ctx;
    int wpu = tensor__rng_fill_words[f->kind], vpu = tensor__rng_fill_values[f->kind];
    uint32_t words[4 * TENSOR__RNG_CHUNK + 8];
    float vals[4 * TENSOR__RNG_CHUNK]; /* NORMAL4's values on their way to another dtype */
    double a[TENSOR__RNG_CHUNK + 16], b[TENSOR__RNG_CHUNK + 16], c[TENSOR__RNG_CHUNK + 16], s[TENSOR__RNG_CHUNK + 16];
    for (int64_t u = u0; u < u1; u += TENSOR__RNG_CHUNK) {
        int64_t m = u1 - u < TENSOR__RNG_CHUNK ? u1 - u : TENSOR__RNG_CHUNK;
        if (f->kind == TENSOR__RNG_NORMAL4) { /* unit u is block counter + u (skip is 0) */
            int64_t v0 = 4 * u;
            if (f->dtype == TENSOR_F32 && f->lo == 0 && f->scale == 1 && v0 + 4 * m <= f->n) {
                f->normal4((float *)f->out + v0, m, f->key, f->counter + (uint64_t)u, f->stream);
                continue;
            }
            f->normal4(vals, m, f->key, f->counter + (uint64_t)u, f->stream);
            for (int64_t j = 0; j < 4 * m && v0 + j < f->n; j++) tensor__rng_fill_store(f, v0 + j, vals[j]);
            continue;
        }
        int64_t q0 = f->skip + u * wpu, q1 = f->skip + (u + m) * wpu; /* words from the fill's first block */
        f->blocks(words, (q1 + 3) / 4 - q0 / 4, f->key, f->counter + (uint64_t)(q0 / 4), f->stream);
        const uint32_t *w = words + q0 % 4;
        int64_t v0 = u * vpu; /* the first value */
        switch (f->kind) {
        case TENSOR__RNG_U24:
            if (f->dtype == TENSOR_F32 && f->lo == 0 && f->scale == 1)
                for (int64_t j = 0; j < m; j++) ((float *)f->out)[v0 + j] = (float)(w[j] >> 8) * (1.0f / 16777216.0f);
            else
                for (int64_t j = 0; j < m; j++)
                    tensor__rng_fill_store(f, v0 + j, f->dtype == TENSOR_F16 ? (double)(w[j] >> 21) * (1.0 / 2048.0)   /* 11 bits: exact in f16 */
                                                  : f->dtype == TENSOR_BF16 ? (double)(w[j] >> 24) * (1.0 / 256.0) /* 8 bits: exact in bf16 */
                                                  : (double)(w[j] >> 8) * (1.0 / 16777216.0));                     /* 24 bits: exact in f32 */
            break;
        case TENSOR__RNG_U53:
            for (int64_t j = 0; j < m; j++) tensor__rng_fill_store(f, v0 + j, tensor__rng_fill_u53(w + 2 * j));
            break;
        case TENSOR__RNG_NORMAL:
        case TENSOR__RNG_NORMAL1: {
            int64_t padded = (m + 15) / 16 * 16;
            for (int64_t j = 0; j < padded; j++) {
                a[j] = j < m ? 1.0 - tensor__rng_fill_u53(w + 4 * j) : 1.0; /* (0, 1] */
                b[j] = j < m ? tensor__rng_fill_u53(w + 4 * j + 2) : 0.0;
            }
            f->normal(c, s, a, b, padded);
            if (vpu == 2 && f->dtype == TENSOR_F32 && f->lo == 0 && f->scale == 1 && v0 + 2 * m <= f->n) {
                float *o = (float *)f->out + v0;
                for (int64_t j = 0; j < m; j++) o[2 * j] = (float)c[j], o[2 * j + 1] = (float)s[j];
                break;
            }
            for (int64_t j = 0; j < m; j++) {
                if (vpu == 1) { tensor__rng_fill_store(f, v0 + j, c[j]); continue; }
                tensor__rng_fill_store(f, v0 + 2 * j, c[j]);
                if (v0 + 2 * j + 1 < f->n) tensor__rng_fill_store(f, v0 + 2 * j + 1, s[j]); /* an odd n drops the last sine */
            }
            break;
        }
        case TENSOR__RNG_KEEP: {
            size_t esz = tensor__dtype_sizes[f->dtype];
            for (int64_t j = 0; j < m; j++) {
                int64_t i = v0 + j;
                double keep = f->p == 1 ? 0 : ((double)w[j] * (1.0 / 4294967296.0) >= f->p ? f->scale : 0.0);
                tensor__store_f64(f->out + (size_t)i * esz, f->dtype, keep);
                if (f->dtype == TENSOR_F32) ((float *)f->x)[i] = (float)((double)((float *)f->x)[i] * keep);
                else if (f->dtype == TENSOR_F64) ((double *)f->x)[i] *= keep;
                else tensor__store_f64(f->x + (size_t)i * esz, f->dtype, tensor__load_f64(f->x + (size_t)i * esz, f->dtype) * keep);
            }
            break;
        }
        }
    }
}
/* Fills n contiguous values at out (dtype) with lo + scale * x, x drawn as `kind` says, from the
   calling thread's stream; KEEP also multiplies x_data by the mask. */
static void tensor__rng_fill_run(int kind, tensor_dtype dtype, void *out, int64_t n, double lo, double scale, double p, void *x_data) {
    if (n <= 0) return;
    tensor__rng_fill f;
    f.kind = kind;
    f.n = n;
    f.dtype = dtype;
    f.out = (char *)out;
    f.x = (char *)x_data;
    f.lo = lo;
    f.scale = scale;
    f.p = p;
    f.blocks = tensor__rng_blocks_ref;
    f.normal = tensor__rng_normal_ref;
    f.normal4 = tensor__rng_normal4_ref;
#if TENSOR__SIMD
    const tensor__simd_isa *isa = tensor__simd();
    if (!tensor__reference_kernels) {
        f.blocks = isa->rng_blocks;
        f.normal = isa->rng_normal;
        f.normal4 = isa->rng_normal4;
    }
#endif
    int vpu = tensor__rng_fill_values[kind];
    int64_t units = (n + vpu - 1) / vpu;
    tensor__rng_fill_take(&f, units * tensor__rng_fill_words[kind]);
    tensor__parallel_for(units, 16384 / vpu, tensor__rng_fill_range, &f);
}

// >>create -------------------------------------------------------------------------------------
static bool tensor__check_dtype(const char *fn, tensor_dtype d) {
    if (tensor__dtype_valid(d)) return true;
    tensor__fail(fn, "invalid dtype %d", (int)d);
    return false;
}

/* Allocates out for a creation op and runs its kernel. */
static tensor *tensor__create(tensor__call *c, int ndim, const int64_t *shape, tensor_dtype dtype) {
    if (!tensor__check_dtype(c->fn, dtype)) return NULL;
    c->out = tensor__new(c->fn, ndim, shape, dtype, TENSOR_CPU);
    return c->out ? tensor__dispatch(c) : NULL;
}

static int tensor__cpu_empty(tensor__call *c) { (void)c; return 0; }
static int tensor__cpu_zeros(tensor__call *c) { tensor__fill(c->out, 0); return 0; }
static int tensor__cpu_ones(tensor__call *c) { tensor__fill(c->out, 1); return 0; }
static int tensor__cpu_full(tensor__call *c) { tensor__fill(c->out, c->p[0]); return 0; }
static int tensor__cpu_scalar(tensor__call *c) { tensor__fill(c->out, c->p[0]); return 0; }

TENSOR_API tensor *tensor_empty(int ndim, const int64_t *shape, tensor_dtype dtype) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_empty);
    return tensor__create(&c, ndim, shape, dtype);
}
TENSOR_API tensor *tensor_zeros(int ndim, const int64_t *shape, tensor_dtype dtype) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_zeros);
    return tensor__create(&c, ndim, shape, dtype);
}
TENSOR_API tensor *tensor_ones(int ndim, const int64_t *shape, tensor_dtype dtype) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_ones);
    return tensor__create(&c, ndim, shape, dtype);
}
TENSOR_API tensor *tensor_full(int ndim, const int64_t *shape, double value, tensor_dtype dtype) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_full);
    c.p[0] = value;
    return tensor__create(&c, ndim, shape, dtype);
}
TENSOR_API tensor *tensor_scalar(double value, tensor_dtype dtype) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_scalar);
    c.p[0] = value;
    return tensor__create(&c, 0, NULL, dtype);
}

static int tensor__cpu_from_data(tensor__call *c) {
    size_t n = (size_t)tensor__numel_of(c->out->ndim, c->out->shape) * tensor__dtype_sizes[c->out->dtype];
    if (n) memcpy(tensor__data(c->out), (const void *)(uintptr_t)c->ip[0], n); /* data may be NULL when n is 0 */
    return 0;
}
TENSOR_API tensor *tensor_from_data(const void *data, int ndim, const int64_t *shape, tensor_dtype dtype) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_from_data);
    int64_t numel = tensor__check_shape(c.fn, ndim, shape);
    if (numel < 0) return NULL;
    if (!data && numel > 0) return tensor__null_arg(c.fn, "data");
    c.ip[0] = (int64_t)(uintptr_t)data;
    return tensor__create(&c, ndim, shape, dtype);
}

static int tensor__cpu_arange(tensor__call *c) {
    int64_t n = c->out->shape[0];
    char *o = tensor__data(c->out);
    size_t esz = tensor__dtype_sizes[c->out->dtype];
    for (int64_t i = 0; i < n; i++) tensor__store_f64(o + (size_t)i * esz, c->out->dtype, c->p[0] + (double)i * c->p[2]);
    return 0;
}
TENSOR_API tensor *tensor_arange(double start, double end, double step, tensor_dtype dtype) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_arange);
    if (!(step != 0) || step != step) return tensor__fail(c.fn, "step must be non-zero and finite, got %g", step);
    if (!isfinite(start) || !isfinite(end)) return tensor__fail(c.fn, "start %g and end %g must be finite", start, end);
    /* signs compared, not multiplied: a product can underflow to -0 and let (end - start) / step
       be -inf, which no cast to int64_t survives */
    if ((end > start && step < 0) || (end < start && step > 0)) return tensor__fail(c.fn, "upper bound %g and lower bound %g are inconsistent with step sign %g", end, start, step);
    double count = ceil((end - start) / step);
    if (count > 9.0e15) return tensor__fail(c.fn, "range [%g, %g) with step %g is too long", start, end, step);
    int64_t n = (int64_t)count;
    c.p[0] = start;
    c.p[1] = end;
    c.p[2] = step;
    return tensor__create(&c, 1, &n, dtype);
}

static int tensor__cpu_linspace(tensor__call *c) {
    int64_t n = c->out->shape[0];
    char *o = tensor__data(c->out);
    size_t esz = tensor__dtype_sizes[c->out->dtype];
    double start = c->p[0], end = c->p[1], step = n > 1 ? (end - start) / (double)(n - 1) : 0;
    for (int64_t i = 0; i < n; i++) /* from both ends, as PyTorch does, so the last value is exactly end */
        tensor__store_f64(o + (size_t)i * esz, c->out->dtype, n == 1 ? start : i < n / 2 ? start + step * (double)i : end - step * (double)(n - 1 - i));
    return 0;
}
TENSOR_API tensor *tensor_linspace(double start, double end, int64_t steps, tensor_dtype dtype) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_linspace);
    if (steps < 0) return tensor__fail(c.fn, "number of steps must be non-negative, got %lld", (long long)steps);
    c.p[0] = start;
    c.p[1] = end;
    return tensor__create(&c, 1, &steps, dtype);
}

static int tensor__cpu_eye(tensor__call *c) {
    int64_t n = c->out->shape[0];
    tensor__fill(c->out, 0);
    char *o = tensor__data(c->out);
    size_t esz = tensor__dtype_sizes[c->out->dtype];
    for (int64_t i = 0; i < n; i++) tensor__store_f64(o + (size_t)(i * n + i) * esz, c->out->dtype, 1);
    return 0;
}
TENSOR_API tensor *tensor_eye(int64_t n, tensor_dtype dtype) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_eye);
    if (n < 0) return tensor__fail(c.fn, "n must be non-negative, got %lld", (long long)n);
    int64_t shape[2] = {n, n};
    return tensor__create(&c, 2, shape, dtype);
}

/* Random fills walk the output in row-major order, so the numbers drawn depend only on the seed,
   the shape and the dtype. */
static int tensor__cpu_rand(tensor__call *c) {
    tensor *o = c->out;
    tensor__rng_fill_run(o->dtype == TENSOR_F64 ? TENSOR__RNG_U53 : TENSOR__RNG_U24, o->dtype, tensor__data(o),
                     tensor__numel_of(o->ndim, o->shape), 0, 1, 0, NULL);
    return 0;
}
TENSOR_API tensor *tensor_rand(int ndim, const int64_t *shape, tensor_dtype dtype) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_rand);
    if (tensor__dtype_valid(dtype) && !tensor__is_float(dtype)) return tensor__fail(c.fn, "needs a floating dtype, got %s", tensor__dtype_names[dtype]);
    return tensor__create(&c, ndim, shape, dtype);
}

/* Box-Muller on pairs of 53-bit uniforms. */
static int tensor__cpu_randn(tensor__call *c) {
    tensor *o = c->out;
    tensor__rng_fill_run(o->dtype == TENSOR_F64 ? TENSOR__RNG_NORMAL : TENSOR__RNG_NORMAL4, o->dtype, tensor__data(o), tensor__numel_of(o->ndim, o->shape), 0, 1, 0, NULL);
    return 0;
}
TENSOR_API tensor *tensor_randn(int ndim, const int64_t *shape, tensor_dtype dtype) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_randn);
    if (tensor__dtype_valid(dtype) && !tensor__is_float(dtype)) return tensor__fail(c.fn, "needs a floating dtype, got %s", tensor__dtype_names[dtype]);
    return tensor__create(&c, ndim, shape, dtype);
}

static int tensor__cpu_randint(tensor__call *c) {
    int64_t n = tensor__numel_of(c->out->ndim, c->out->shape), low = c->ip[0];
    uint64_t range = (uint64_t)c->ip[1] - (uint64_t)low;
    char *o = tensor__data(c->out);
    size_t esz = tensor__dtype_sizes[c->out->dtype];
    for (int64_t i = 0; i < n; i++) tensor__store_i64(o + (size_t)i * esz, c->out->dtype, (int64_t)((uint64_t)low + tensor__rng_below(range)));
    return 0;
}
TENSOR_API tensor *tensor_randint(int64_t low, int64_t high, int ndim, const int64_t *shape, tensor_dtype dtype) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_randint);
    if (low >= high) return tensor__fail(c.fn, "low %lld must be less than high %lld", (long long)low, (long long)high);
    int64_t lo_ok = INT64_MIN, hi_ok = INT64_MAX; /* the dtype must hold every value of [low, high) */
    switch (dtype) {
    case TENSOR_BOOL: lo_ok = 0; hi_ok = 1; break;
    case TENSOR_U8: lo_ok = 0; hi_ok = 255; break;
    case TENSOR_I32: lo_ok = INT32_MIN; hi_ok = INT32_MAX; break;
    case TENSOR_F16: lo_ok = -2048; hi_ok = 2048; break;  /* integers exact in the significand */
    case TENSOR_BF16: lo_ok = -256; hi_ok = 256; break;
    case TENSOR_F32: lo_ok = -16777216; hi_ok = 16777216; break;
    default: break;
    }
    if (low < lo_ok || high - 1 > hi_ok) return tensor__fail(c.fn, "range [%lld, %lld) does not fit dtype %s", (long long)low, (long long)high, tensor_dtype_name(dtype));
    c.ip[0] = low;
    c.ip[1] = high;
    return tensor__create(&c, ndim, shape, dtype);
}

static int tensor__cpu_randperm(tensor__call *c) {
    int64_t n = c->out->shape[0];
    int64_t *perm = (int64_t *)tensor__alloc_aligned((size_t)(n ? n : 1) * sizeof(int64_t));
    if (!perm) { tensor__fail(c->fn, "out of memory"); return 1; }
    for (int64_t i = 0; i < n; i++) perm[i] = i;
    for (int64_t i = n - 1; i > 0; i--) { /* Fisher-Yates */
        int64_t j = (int64_t)tensor__rng_below((uint64_t)i + 1), t = perm[i];
        perm[i] = perm[j];
        perm[j] = t;
    }
    char *o = tensor__data(c->out);
    size_t esz = tensor__dtype_sizes[c->out->dtype];
    for (int64_t i = 0; i < n; i++) tensor__store_i64(o + (size_t)i * esz, c->out->dtype, perm[i]);
    tensor__free_aligned(perm);
    return 0;
}
TENSOR_API tensor *tensor_randperm(int64_t n, tensor_dtype dtype) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_randperm);
    if (n < 0) return tensor__fail(c.fn, "n must be non-negative, got %lld", (long long)n);
    if (dtype == TENSOR_BOOL || (dtype == TENSOR_U8 && n > 256) || ((dtype == TENSOR_F16 || dtype == TENSOR_BF16) && n > 256))
        return tensor__fail(c.fn, "n %lld is too large for dtype %s", (long long)n, tensor_dtype_name(dtype));
    return tensor__create(&c, 1, &n, dtype);
}

/* Each row of probs: num_samples draws by inverse CDF on a running total; without replacement a
   drawn category's weight drops to 0. */
static int tensor__cpu_multinomial(tensor__call *c) {
    tensor *p = c->in[0];
    int64_t rows = p->ndim == 2 ? p->shape[0] : 1, cats = p->shape[p->ndim - 1], ns = c->ip[0];
    bool replacement = c->ip[1] != 0;
    double *w = (double *)tensor__alloc_aligned((size_t)cats * sizeof(double));
    if (!w) { tensor__fail(c->fn, "out of memory"); return 1; }
    int64_t *o = (int64_t *)tensor__data(c->out);
    for (int64_t r = 0; r < rows; r++) {
        double total = 0;
        int64_t nonzero = 0;
        for (int64_t j = 0; j < cats; j++) {
            int64_t idx[2] = {r, j};
            int64_t off = p->ndim == 2 ? tensor__offset_of(p, idx) : tensor__offset_of(p, idx + 1);
            w[j] = tensor__load_f64((char *)p->storage->data + off * (int64_t)tensor__dtype_sizes[p->dtype], p->dtype);
            if (!(w[j] >= 0) || isinf(w[j])) { double bad = w[j]; tensor__free_aligned(w); tensor__fail(c->fn, "probabilities must be finite and non-negative, row %lld has %g", (long long)r, bad); return 1; }
            total += w[j];
            nonzero += w[j] > 0;
        }
        if (!(total > 0)) { tensor__free_aligned(w); tensor__fail(c->fn, "row %lld of probabilities sums to 0", (long long)r); return 1; }
        if (!replacement && nonzero < ns) {
            tensor__free_aligned(w);
            tensor__fail(c->fn, "cannot draw %lld samples without replacement from row %lld with %lld non-zero categories", (long long)ns, (long long)r, (long long)nonzero);
            return 1;
        }
        for (int64_t s = 0; s < ns; s++) {
            double u = tensor__rng_double() * total, acc = 0;
            int64_t pick = -1;
            for (int64_t j = 0; j < cats; j++) {
                if (w[j] <= 0) continue;
                pick = j;  /* the last positive category absorbs rounding */
                acc += w[j];
                if (u < acc) break;
            }
            o[r * ns + s] = pick;
            if (!replacement) { total -= w[pick]; w[pick] = 0; }
        }
    }
    tensor__free_aligned(w);
    return 0;
}
TENSOR_API tensor *tensor_multinomial(tensor *probs, int64_t num_samples, bool replacement) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_multinomial);
    TENSOR__CHECK_ARG(c.fn, probs);
    if (probs->ndim != 1 && probs->ndim != 2) return tensor__fail(c.fn, "probs must be 1-D or 2-D, got shape %s", tensor__shape_of(probs));
    if (!tensor__is_float(probs->dtype)) return tensor__fail(c.fn, "probs must be a floating tensor, got %s", tensor__dtype_names[probs->dtype]);
    if (probs->storage->device != TENSOR_CPU) return tensor__fail(c.fn, "probs must be on the CPU");
    int64_t cats = probs->shape[probs->ndim - 1];
    if (cats == 0) return tensor__fail(c.fn, "probs has no categories");
    if (num_samples <= 0) return tensor__fail(c.fn, "num_samples must be positive, got %lld", (long long)num_samples);
    if (!replacement && num_samples > cats) return tensor__fail(c.fn, "cannot draw %lld samples without replacement from %lld categories", (long long)num_samples, (long long)cats);
    c.n_in = 1;
    c.in[0] = probs;
    c.ip[0] = num_samples;
    c.ip[1] = replacement;
    int64_t shape[2] = {probs->shape[0], num_samples};
    return probs->ndim == 2 ? tensor__create(&c, 2, shape, TENSOR_I64) : tensor__create(&c, 1, &num_samples, TENSOR_I64);
}

static int tensor__cpu_clone(tensor__call *c) { tensor__copy_into(c->out, c->in[0]); return 0; }
static int tensor__cpu_contiguous(tensor__call *c) { tensor__copy_into(c->out, c->in[0]); return 0; }

TENSOR_API tensor *tensor_clone(tensor *t) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_clone);
    TENSOR__CHECK_ARG(c.fn, t);
    c.n_in = 1;
    c.in[0] = t;
    c.out = tensor__new_like(c.fn, t, t->dtype);
    return c.out ? tensor__dispatch(&c) : NULL;
}

TENSOR_API tensor *tensor_contiguous(tensor *t) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_contiguous);
    TENSOR__CHECK_ARG(c.fn, t);
    if (tensor__contiguous(t)) return tensor__alias(c.fn, t);
    c.n_in = 1;
    c.in[0] = t;
    c.out = tensor__new_like(c.fn, t, t->dtype);
    return c.out ? tensor__dispatch(&c) : NULL;
}

TENSOR_API int tensor_copy_to(tensor *t, void *dst, size_t dst_bytes) {
    const char *fn = "tensor_copy_to";
    if (!t) { tensor__null_arg(fn, "t"); return -1; }
    int64_t numel = tensor__numel_of(t->ndim, t->shape); /* an expanded view may hold more than size_t counts (32-bit) */
    if ((uint64_t)numel > SIZE_MAX / tensor__dtype_sizes[t->dtype]) { tensor__fail(fn, "tensor of shape %s has more bytes than size_t holds", tensor__shape_of(t)); return -1; }
    size_t need = (size_t)numel * tensor__dtype_sizes[t->dtype];
    if (!dst && need) { tensor__null_arg(fn, "dst"); return -1; }
    if (dst_bytes < need) { tensor__fail(fn, "destination holds %zu bytes, tensor of shape %s needs %zu", dst_bytes, tensor__shape_of(t), need); return -1; }
    if (t->storage->device != TENSOR_CPU) { tensor__fail(fn, "copy from this device is not available"); return -1; }
    if (!need) return 0;
    /* view dst as a contiguous tensor of t's shape, on a stack storage that is never freed */
    tensor__storage s;
    memset(&s, 0, sizeof s);
    s.data = dst;
    s.nbytes = need;
    tensor__refs_init(&s.refs, NULL); /* no thread's: never released */
    tensor d;
    memset(&d, 0, sizeof d);
    d.storage = &s;
    d.ndim = t->ndim;
    d.dtype = t->dtype;
    for (int i = 0; i < t->ndim; i++) d.shape[i] = t->shape[i];
    tensor__contiguous_strides(t->ndim, t->shape, d.strides);
    tensor__copy_into(&d, t);
    return 0;
}

static int tensor__cpu_to_dtype(tensor__call *c) { tensor__copy_into(c->out, c->in[0]); return 0; }
TENSOR_API tensor *tensor_to_dtype(tensor *t, tensor_dtype dtype) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_to_dtype);
    TENSOR__CHECK_ARG(c.fn, t);
    if (!tensor__check_dtype(c.fn, dtype)) return NULL;
    if (t->dtype == dtype) return tensor__alias(c.fn, t);
    c.n_in = 1;
    c.in[0] = t;
    c.out = tensor__new_like(c.fn, t, dtype);
    return c.out ? tensor__dispatch(&c) : NULL;
}

/* Copies between devices are the job of the device's translation unit (tensor_cuda.cu). */
static int tensor__cpu_to_device(tensor__call *c) { tensor__copy_into(c->out, c->in[0]); return 0; }
TENSOR_API tensor *tensor_to_device(tensor *t, tensor_device device) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_to_device);
    TENSOR__CHECK_ARG(c.fn, t);
    if ((unsigned)device >= TENSOR_DEVICE_COUNT) return tensor__fail(c.fn, "invalid device %d", (int)device);
    if (t->storage->device == device) return tensor__alias(c.fn, t);
    if (device == TENSOR_CUDA && !tensor_cuda_available()) return tensor__fail(c.fn, "CUDA is not available (link tensor_cuda.o and run on a machine with a GPU)");
    return tensor__fail(c.fn, "no copy from %s to %s in this build", t->storage->device == TENSOR_CPU ? "cpu" : "cuda", device == TENSOR_CPU ? "cpu" : "cuda");
}
/* ==== end generator/parts/create.h ==== */
/* ==== begin generator/parts/reduce.h ==== */
// >>reduce -------------------------------------------------------------------------------------
/* Reductions. Every one runs on one description, tensor__red: the input's dims split into "kept"
   dims (one output element per position) and "reduced" dims (walked inside each output element,
   in row-major order). Both lists drop size-1 dims and coalesce dims that step evenly, so any
   strides work and a contiguous last-dim reduction is one row per output element. A reduction
   is an "elem" function (one output element) built from "row" functions (one run of the
   innermost reduced dim), which keep typed fast paths for f32 and f64.
   Float reductions accumulate in double and round once to the output dtype; bool and integer
   sums and products accumulate in int64 (wrapping, as PyTorch's int64 does).

   Call layout, read by the kernels and by the autograd formulas: in[0] the input;
   dims[0..n_dims) the reduced dims of the input, wrapped and ascending (none for a 0-dim input);
   ip[0] keepdim; ip[1] the correction of var and std; p[0] the order p of norm. */
typedef struct {
    int nk, nr;
    int64_t kshape[TENSOR_MAX_DIMS], kstride[2][TENSOR_MAX_DIMS]; /* kept: size; byte strides, [0] input, [1] output */
    int64_t rshape[TENSOR_MAX_DIMS], rstride[1][TENSOR_MAX_DIMS];  /* reduced: size; input byte stride */
    int64_t knumel, rnumel;
    const char *in;
    char *out;
    tensor_dtype in_dt, out_dt;
} tensor__red;

/* Splits t's dims by the bit mask `reduced`; ostride[d] is the output byte stride of kept dim d.
   No overflow: t's byte strides times its sizes fit (>>shapes), and so do the output's. */
static void tensor__red_init(tensor__red *r, const tensor *t, unsigned reduced, const int64_t *ostride, tensor *out) {
    int64_t esz = (int64_t)tensor__dtype_sizes[t->dtype];
    r->nk = r->nr = 0;
    r->knumel = r->rnumel = 1;
    for (int d = 0; d < t->ndim; d++) {
        int64_t n = t->shape[d], s = t->strides[d] * esz;
        if (reduced >> d & 1) {
            r->rnumel *= n;
            if (n == 1) continue;
            if (r->nr > 0 && r->rstride[0][r->nr - 1] == s * n) { r->rshape[r->nr - 1] *= n; r->rstride[0][r->nr - 1] = s; continue; }
            r->rshape[r->nr] = n;
            r->rstride[0][r->nr] = s;
            r->nr++;
        } else {
            r->knumel *= n;
            if (n == 1) continue;
            if (r->nk > 0 && r->kstride[0][r->nk - 1] == s * n && r->kstride[1][r->nk - 1] == ostride[d] * n) {
                r->kshape[r->nk - 1] *= n;
                r->kstride[0][r->nk - 1] = s;
                r->kstride[1][r->nk - 1] = ostride[d];
                continue;
            }
            r->kshape[r->nk] = n;
            r->kstride[0][r->nk] = s;
            r->kstride[1][r->nk] = ostride[d];
            r->nk++;
        }
    }
    r->in = tensor__data(t);
    r->out = tensor__data(out);
    r->in_dt = t->dtype;
    r->out_dt = out->dtype;
}

/* The description of a reduction call: the output is contiguous over the kept dims. */
static void tensor__red_from_call(tensor__red *r, const tensor__call *c) {
    const tensor *t = c->in[0];
    unsigned mask = 0;
    for (int i = 0; i < c->n_dims; i++) mask |= 1u << c->dims[i];
    int64_t ostride[TENSOR_MAX_DIMS], s = (int64_t)tensor__dtype_sizes[c->out->dtype];
    for (int d = t->ndim - 1; d >= 0; d--) {
        ostride[d] = 0;
        if (mask >> d & 1) continue;
        ostride[d] = s;
        s *= t->shape[d] > 1 ? t->shape[d] : 1;
    }
    tensor__red_init(r, t, mask, ostride, c->out);
}

/* One run of the innermost reduced dim: n elements from p, s bytes apart. */
typedef void (*tensor__row_fn)(void *state, const char *p, int64_t s, int64_t n);

/* Walks the reduced elements of the output element whose first input element is at base. */
static void tensor__red_walk(const tensor__red *r, const char *base, tensor__row_fn row, void *state) {
    if (r->rnumel == 0) return;
    if (r->nr == 0) { row(state, base, 0, 1); return; }
    int nr = r->nr;
    int64_t n = r->rshape[nr - 1], s = r->rstride[0][nr - 1];
    if (nr == 1) { row(state, base, s, n); return; }
    int64_t idx[TENSOR_MAX_DIMS] = {0}, rows = r->rnumel / n;
    char *p = (char *)base;
    for (int64_t k = 0; k < rows; k++) {
        row(state, p, s, n);
        tensor__odometer_step(nr - 1, r->rshape, idx, 1, &p, r->rstride); /* over the outer reduced dims */
    }
}

/* Computes one output element: in is its first input element, out where it goes. */
typedef void (*tensor__elem_fn)(const tensor__red *r, const char *in, char *out, void *ctx);

/* The first input element and the output element of output position pos. */
static void tensor__red_at(const tensor__red *r, int64_t pos, const char **in, char **out) {
    int64_t idx[TENSOR_MAX_DIMS];
    char *ptr[2], *base[2] = {(char *)r->in, r->out};
    tensor__odometer_seek(r->nk, r->kshape, idx, 2, ptr, base, r->kstride, pos);
    *in = ptr[0];
    *out = ptr[1];
}

/* Visits the output elements [begin, end). */
static void tensor__red_run_range(const tensor__red *r, tensor__elem_fn fn, void *ctx, int64_t begin, int64_t end) {
    int64_t idx[TENSOR_MAX_DIMS];
    char *ptr[2], *base[2] = {(char *)r->in, r->out}; /* input, output */
    tensor__odometer_seek(r->nk, r->kshape, idx, 2, ptr, base, r->kstride, begin);
    for (int64_t e = begin; e < end; e++) {
        fn(r, ptr[0], ptr[1], ctx);
        tensor__odometer_step(r->nk, r->kshape, idx, 2, ptr, r->kstride);
    }
}

/* Visits every output element, in order, on the calling thread. */
static void tensor__red_run(const tensor__red *r, tensor__elem_fn fn, void *ctx) {
    if (r->knumel > 0) tensor__red_run_range(r, fn, ctx, 0, r->knumel);
}

typedef struct { const tensor__red *r; tensor__elem_fn fn; void *ctx; } tensor__red_task;
static void tensor__red_chunk(int64_t begin, int64_t end, void *p) {
    const tensor__red_task *t = (const tensor__red_task *)p;
    tensor__red_run_range(t->r, t->fn, t->ctx, begin, end);
}

/* Visits every output element, split over the thread pool when there is enough work (fn writes
   only its own output; each output is computed the same way on any thread, so the result does not
   depend on the split). Reference kernels stay on the calling thread. */
static void tensor__red_run_parallel(const tensor__red *r, tensor__elem_fn fn, void *ctx) {
    if (r->knumel == 0) return;
    if (tensor__reference_kernels) { tensor__red_run(r, fn, ctx); return; }
    tensor__red_task t;
    t.r = r;
    t.fn = fn;
    t.ctx = ctx;
    tensor__parallel_for(r->knumel, tensor__grain(r->rnumel), tensor__red_chunk, &t);
}

/* The loop `for i < n: double x = element i; BODY...` with typed loads for f32 and f64 (the body
   may `break`). Integers load exactly as doubles only up to 2^53: integer paths use int64 instead. */
#define TENSOR__RED_LOOP(dt, p, s, n, ...)                                                              \
    do {                                                                                                 \
        if ((dt) == TENSOR_F32) {                                                                        \
            for (int64_t i = 0; i < (n); i++) { double x = *(const float *)((p) + i * (s)); __VA_ARGS__ }      \
        } else if ((dt) == TENSOR_F64) {                                                                 \
            for (int64_t i = 0; i < (n); i++) { double x = *(const double *)((p) + i * (s)); __VA_ARGS__ }     \
        } else {                                                                                         \
            for (int64_t i = 0; i < (n); i++) { double x = tensor__load_f64((p) + i * (s), (dt)); __VA_ARGS__ } \
        }                                                                                                \
    } while (0)

/* The running state of one output element. */
typedef struct {
    tensor_dtype dt;
    bool is_int;        /* bool and integer inputs: i holds the value */
    double d, ref;      /* float accumulator; a reference value (the mean, the max) */
    int64_t i;          /* integer accumulator */
    int64_t seen, best; /* elements visited so far; index of the extreme */
    int mode;           /* max/min: +1 / -1; norm: its kind */
    double p;           /* norm: the order */
    bool found, done;   /* an element was seen; the result cannot change any more */
} tensor__acc;

static void tensor__acc_init(tensor__acc *a, tensor_dtype dt) {
    memset(a, 0, sizeof *a);
    a->dt = dt;
    a->is_int = !tensor__is_float(dt);
}

/* Contiguous f32 and f64 rows: eight independent double accumulators (they vectorize and hide
   the add latency; f32 values are exact in double, so the order hardly matters). */
static double tensor__sum_f32(const float *x, int64_t n) {
    double a[8] = {0, 0, 0, 0, 0, 0, 0, 0}, tail = 0;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) a[j] += (double)x[i + j];
    for (; i < n; i++) tail += (double)x[i];
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7])) + tail;
}
static double tensor__sum_f64(const double *x, int64_t n) {
    double a[8] = {0, 0, 0, 0, 0, 0, 0, 0}, tail = 0;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int j = 0; j < 8; j++) a[j] += x[i + j];
    for (; i < n; i++) tail += x[i];
    return ((a[0] + a[1]) + (a[2] + a[3])) + ((a[4] + a[5]) + (a[6] + a[7])) + tail;
}

static void tensor__row_sum(void *st, const char *p, int64_t s, int64_t n) {
    tensor__acc *a = (tensor__acc *)st;
    if (a->is_int) {
        int64_t acc = a->i;
        if (a->dt == TENSOR_I64) for (int64_t i = 0; i < n; i++) acc = tensor__iadd(acc, *(const int64_t *)(p + i * s));
        else if (a->dt == TENSOR_I32) for (int64_t i = 0; i < n; i++) acc = tensor__iadd(acc, *(const int32_t *)(p + i * s));
        else for (int64_t i = 0; i < n; i++) acc = tensor__iadd(acc, tensor__load_i64(p + i * s, a->dt));
        a->i = acc;
    } else if (a->dt == TENSOR_F32 && s == 4) {
        a->d += tensor__reference_kernels ? tensor__sum_f32((const float *)p, n) : tensor__row_sum_f32((const float *)p, n);
    } else if (a->dt == TENSOR_F64 && s == 8) {
        const tensor__simd_isa *v = tensor__reference_kernels ? NULL : tensor__simd();
        a->d += v ? v->row_sum_f64((const double *)p, n) : tensor__sum_f64((const double *)p, n);
    } else {
        double acc = a->d;
        TENSOR__RED_LOOP(a->dt, p, s, n, acc += x;);
        a->d = acc;
    }
}

static void tensor__row_prod(void *st, const char *p, int64_t s, int64_t n) {
    tensor__acc *a = (tensor__acc *)st;
    if (a->is_int) {
        int64_t acc = a->i;
        for (int64_t i = 0; i < n; i++) acc = tensor__imul(acc, tensor__load_i64(p + i * s, a->dt));
        a->i = acc;
    } else {
        double acc = a->d;
        TENSOR__RED_LOOP(a->dt, p, s, n, acc *= x;);
        a->d = acc;
    }
}

/* max (mode +1) or min (mode -1) and the index of its first occurrence. NaN counts as both the
   maximum and the minimum: the first NaN wins, as in PyTorch. */
static void tensor__row_ext(void *st, const char *p, int64_t s, int64_t n) {
    tensor__acc *a = (tensor__acc *)st;
    if (a->done) return;
    bool is_max = a->mode > 0;
    if (a->is_int) {
        for (int64_t i = 0; i < n; i++) {
            int64_t x = tensor__load_i64(p + i * s, a->dt);
            if (!a->found || (is_max ? x > a->i : x < a->i)) { a->i = x; a->best = a->seen + i; a->found = true; }
        }
    } else {
        double b = a->d;
        int64_t best = a->best;
        bool found = a->found;
        TENSOR__RED_LOOP(a->dt, p, s, n,
            if (!found || x != x || (is_max ? x > b : x < b)) {
                b = x; best = a->seen + i; found = true;
                if (x != x) { a->done = true; break; }
            });
        a->d = b;
        a->best = best;
        a->found = found;
    }
    a->seen += n;
}

/* Sum of squared deviations from a->ref (the second pass of var). */
static void tensor__row_sqdev(void *st, const char *p, int64_t s, int64_t n) {
    tensor__acc *a = (tensor__acc *)st;
    double acc = a->d, m = a->ref;
    TENSOR__RED_LOOP(a->dt, p, s, n, acc += (x - m) * (x - m););
    a->d = acc;
}

/* Sum of exp(x - a->ref) (the second pass of logsumexp). */
static void tensor__row_sumexp(void *st, const char *p, int64_t s, int64_t n) {
    tensor__acc *a = (tensor__acc *)st;
    double acc = a->d, m = a->ref;
    TENSOR__RED_LOOP(a->dt, p, s, n, acc += exp(x - m););
    a->d = acc;
}

/* The kinds of p-norm, each with its own accumulation. */
enum { TENSOR__NORM_INF, TENSOR__NORM_NEG_INF, TENSOR__NORM_ZERO, TENSOR__NORM_ONE, TENSOR__NORM_TWO, TENSOR__NORM_P };

static void tensor__row_norm(void *st, const char *p, int64_t s, int64_t n) {
    tensor__acc *a = (tensor__acc *)st;
    double acc = a->d, q = a->p;
    switch (a->mode) {
    case TENSOR__NORM_INF:
        TENSOR__RED_LOOP(a->dt, p, s, n, double v = fabs(x); if (!a->found || v != v || v > acc) acc = v; a->found = true;);
        break;
    case TENSOR__NORM_NEG_INF:
        TENSOR__RED_LOOP(a->dt, p, s, n, double v = fabs(x); if (!a->found || v != v || v < acc) acc = v; a->found = true;);
        break;
    case TENSOR__NORM_ZERO: TENSOR__RED_LOOP(a->dt, p, s, n, acc += x != 0;); break;
    case TENSOR__NORM_ONE: TENSOR__RED_LOOP(a->dt, p, s, n, acc += fabs(x);); break;
    case TENSOR__NORM_TWO: TENSOR__RED_LOOP(a->dt, p, s, n, acc += x * x;); break;
    default: TENSOR__RED_LOOP(a->dt, p, s, n, acc += pow(fabs(x), q);); break;
    }
    a->d = acc;
}

/* all (mode 1): stays true until a zero; any (mode 0): becomes true at a non-zero. NaN is
   non-zero. Every dtype loads exactly enough as a double to tell zero from non-zero. */
static void tensor__row_allany(void *st, const char *p, int64_t s, int64_t n) {
    tensor__acc *a = (tensor__acc *)st;
    if (a->done) return;
    bool want_zero = a->mode == 1;
    TENSOR__RED_LOOP(a->dt, p, s, n, if ((x == 0) == want_zero) { a->done = true; break; });
}

/* Stores a float (v) or integer (iv) result in the output dtype. */
static void tensor__red_store(const tensor__red *r, char *out, const tensor__acc *a) {
    if (a->is_int && !tensor__is_float(r->out_dt)) tensor__store_i64(out, r->out_dt, a->i);
    else if (r->out_dt == TENSOR_F32) *(float *)out = (float)a->d;
    else tensor__store_f64(out, r->out_dt, a->d);
}

/* sum (ctx NULL) or mean (ctx non-NULL); a mean of no elements is 0/0 = NaN. */
static void tensor__elem_sum(const tensor__red *r, const char *in, char *out, void *ctx) {
    tensor__acc a;
    tensor__acc_init(&a, r->in_dt);
    tensor__red_walk(r, in, tensor__row_sum, &a);
    if (ctx) a.d /= (double)r->rnumel;
    tensor__red_store(r, out, &a);
}

/* Block sums for when the innermost kept dim is contiguous in the input but the reduced dims are
   not (a sum over dim 0 of [N, C], as a bias gradient does): walking each output's elements on
   its own would stride through memory once per output, so a block of adjacent outputs
   accumulates together while the input is read row by row. */
#define TENSOR__COL_BLOCK 8192 /* outputs per block: 64 KiB of accumulators, at most */
typedef struct { tensor_dtype dt; int64_t nb; double *acc; int64_t *iacc; bool fast; } tensor__cols_acc; /* acc: floats, iacc: integers */
typedef struct { int64_t n, in_stride, out_stride; bool mean; void *buf; } tensor__cols_ctx;

#if defined(__GNUC__) || defined(__clang__) || defined(_MSC_VER)
#define TENSOR__RESTRICT __restrict
#else
#define TENSOR__RESTRICT
#endif

static void tensor__row_cols(void *st, const char *p, int64_t s, int64_t n) {
    tensor__cols_acc *a = (tensor__cols_acc *)st;
    int64_t nb = a->nb;
    double *TENSOR__RESTRICT acc = a->acc;
    const tensor__simd_isa *v = a->fast && a->dt == TENSOR_F32 ? tensor__simd() : NULL;
    if (v) {
        for (int64_t k = 0; k < n; k++, p += s) v->row_cols_add(acc, (const float *)p, nb);
        return;
    }
    for (int64_t k = 0; k < n; k++, p += s) {
        switch (a->dt) {
        case TENSOR_F32: { const float *TENSOR__RESTRICT x = (const float *)p; for (int64_t j = 0; j < nb; j++) acc[j] += (double)x[j]; break; }
        case TENSOR_F64: { const double *TENSOR__RESTRICT x = (const double *)p; for (int64_t j = 0; j < nb; j++) acc[j] += x[j]; break; }
        case TENSOR_F16:
        case TENSOR_BF16: for (int64_t j = 0; j < nb; j++) acc[j] += tensor__load_f64(p + 2 * j, a->dt); break;
        default: {
            int64_t esz = (int64_t)tensor__dtype_sizes[a->dt];
            for (int64_t j = 0; j < nb; j++) a->iacc[j] = tensor__iadd(a->iacc[j], tensor__load_i64(p + esz * j, a->dt));
        }
        }
    }
}

/* Outputs j0 .. j0 + nb of the innermost kept dim, for the outer output element at in/out; buf
   holds nb accumulators. */
static void tensor__sum_cols_block(const tensor__red *r, const tensor__cols_ctx *cc, const char *in, char *out, void *buf, int64_t j0, int64_t nb, bool fast) {
    double *acc = (double *)buf;
    int64_t *iacc = (int64_t *)buf;
    tensor__cols_acc a;
    a.dt = r->in_dt;
    a.acc = acc;
    a.iacc = iacc;
    a.nb = nb;
    a.fast = fast;
    bool is_int = !tensor__is_float(r->in_dt);
    for (int64_t j = 0; j < nb; j++) { if (is_int) iacc[j] = 0; else acc[j] = 0; }
    tensor__red_walk(r, in + j0 * cc->in_stride, tensor__row_cols, &a);
    for (int64_t j = 0; j < nb; j++) {
        char *o = out + (j0 + j) * cc->out_stride;
        if (is_int) tensor__store_i64(o, r->out_dt, iacc[j]);
        else tensor__store_f64(o, r->out_dt, cc->mean ? acc[j] / (double)r->rnumel : acc[j]);
    }
}

/* r describes the outer kept dims only; ctx the innermost kept dim (n, strides). */
static void tensor__elem_sum_cols(const tensor__red *r, const char *in, char *out, void *ctx) {
    const tensor__cols_ctx *cc = (const tensor__cols_ctx *)ctx;
    for (int64_t j0 = 0; j0 < cc->n; j0 += TENSOR__COL_BLOCK)
        tensor__sum_cols_block(r, cc, in, out, cc->buf, j0, cc->n - j0 < TENSOR__COL_BLOCK ? cc->n - j0 : TENSOR__COL_BLOCK, false);
}

/* The column sums split over the pool: items are (outer element, block of cb columns), dealt out
   in n_parts contiguous runs, each with its own accumulators in buf. */
typedef struct { const tensor__red *r; const tensor__cols_ctx *cc; int64_t cb, nblk, items, n_parts; char *buf; } tensor__cols_task;
static void tensor__cols_parts(int64_t begin, int64_t end, void *vt) {
    const tensor__cols_task *t = (const tensor__cols_task *)vt;
    for (int64_t part = begin; part < end; part++) {
        int64_t i0 = t->items * part / t->n_parts, i1 = t->items * (part + 1) / t->n_parts;
        for (int64_t it = i0; it < i1; it++) {
            int64_t j0 = (it % t->nblk) * t->cb;
            const char *in;
            char *out;
            tensor__red_at(t->r, it / t->nblk, &in, &out);
            int64_t nb = t->cc->n - j0 < t->cb ? t->cc->n - j0 : t->cb;
            tensor__sum_cols_block(t->r, t->cc, in, out, t->buf + part * t->cb * 8, j0, nb, true);
        }
    }
}

/* One part of a long sum split into fixed blocks: partial[b] = the sum of block b (the blocks do
   not depend on the thread count, so neither does the result). */
#define TENSOR__SPLIT_BLOCK 65536
typedef struct { const char *in; int64_t n; tensor_dtype dt; double *partial; } tensor__split_task;
static void tensor__split_sum(int64_t begin, int64_t end, void *vt) {
    const tensor__split_task *t = (const tensor__split_task *)vt;
    for (int64_t b = begin; b < end; b++) {
        int64_t i0 = b * TENSOR__SPLIT_BLOCK, m = t->n - i0 < TENSOR__SPLIT_BLOCK ? t->n - i0 : TENSOR__SPLIT_BLOCK;
        tensor__acc a;
        tensor__acc_init(&a, t->dt);
        tensor__row_sum(&a, t->in + i0 * (int64_t)tensor__dtype_sizes[t->dt], (int64_t)tensor__dtype_sizes[t->dt], m);
        t->partial[b] = a.d;
    }
}

/* out: the kept shape = sum (or mean) of t over the reduced dims. */
static int tensor__reduce_sum(tensor__call *c, bool mean) {
    tensor__red r;
    tensor__red_from_call(&r, c);
    int64_t esz = (int64_t)tensor__dtype_sizes[r.in_dt];
    if (r.knumel == 0) return 0;
    if (r.nk >= 1 && r.nr >= 1 && r.kstride[0][r.nk - 1] == esz && r.rstride[0][r.nr - 1] != esz) {
        tensor__cols_ctx cc;
        cc.n = r.kshape[r.nk - 1];
        cc.in_stride = r.kstride[0][r.nk - 1];
        cc.out_stride = r.kstride[1][r.nk - 1];
        cc.mean = mean;
        r.nk--;
        r.knumel /= cc.n;
        if (!tensor__reference_kernels) {
            /* about one block of columns per thread, 64 at least, TENSOR__COL_BLOCK at most */
            int64_t threads = r.knumel * cc.n * r.rnumel >= 2 * TENSOR__GRAIN_ELEMENTWISE ? tensor_get_num_threads() : 1;
            int64_t cb = (cc.n + threads - 1) / threads;
            cb = cb < 64 ? 64 : cb > TENSOR__COL_BLOCK ? TENSOR__COL_BLOCK : (cb + 7) & ~(int64_t)7;
            tensor__cols_task t;
            t.r = &r;
            t.cc = &cc;
            t.cb = cb;
            t.nblk = (cc.n + cb - 1) / cb;
            t.items = r.knumel * t.nblk;
            t.n_parts = t.items < threads ? t.items : threads;
            size_t bytes = (size_t)(t.n_parts * cb) * 8; /* doubles or int64s */
            t.buf = (char *)tensor__cache_alloc(bytes);
            if (!t.buf) { tensor__fail(c->fn, "out of memory allocating %zu bytes", bytes); return 1; }
            tensor__parallel_for(t.n_parts, 1, tensor__cols_parts, &t);
            tensor__cache_free(t.buf);
            return 0;
        }
        size_t bytes = (size_t)(cc.n < TENSOR__COL_BLOCK ? cc.n : TENSOR__COL_BLOCK) * 8; /* doubles or int64s */
        cc.buf = TENSOR__MALLOC(bytes);
        if (!cc.buf) { tensor__fail(c->fn, "out of memory allocating %zu bytes", bytes); return 1; }
        tensor__red_run(&r, tensor__elem_sum_cols, &cc);
        TENSOR_FREE(cc.buf);
        return 0;
    }
    if (!tensor__reference_kernels && r.nr == 1 && r.rstride[0][0] == esz && (r.in_dt == TENSOR_F32 || r.in_dt == TENSOR_F64) &&
        r.knumel < 4 && r.rnumel >= 2 * TENSOR__SPLIT_BLOCK) {
        /* a few long contiguous sums (sum_all of a big tensor): each split over the pool */
        tensor__split_task t;
        int64_t nblk = (r.rnumel + TENSOR__SPLIT_BLOCK - 1) / TENSOR__SPLIT_BLOCK;
        t.partial = (double *)tensor__cache_alloc((size_t)nblk * sizeof(double));
        if (!t.partial) { tensor__fail(c->fn, "out of memory allocating %zu bytes", (size_t)nblk * sizeof(double)); return 1; }
        t.n = r.rnumel;
        t.dt = r.in_dt;
        for (int64_t e = 0; e < r.knumel; e++) {
            const char *in;
            char *out;
            tensor__red_at(&r, e, &in, &out);
            t.in = in;
            tensor__parallel_for(nblk, 1, tensor__split_sum, &t);
            tensor__acc a;
            tensor__acc_init(&a, r.in_dt);
            for (int64_t b = 0; b < nblk; b++) a.d += t.partial[b];
            if (mean) a.d /= (double)r.rnumel;
            tensor__red_store(&r, out, &a);
        }
        tensor__cache_free(t.partial);
        return 0;
    }
    tensor__red_run_parallel(&r, tensor__elem_sum, mean ? (void *)&r : NULL);
    return 0;
}

static void tensor__elem_prod(const tensor__red *r, const char *in, char *out, void *ctx) {
    (void)ctx;
    tensor__acc a;
    tensor__acc_init(&a, r->in_dt);
    a.d = 1;
    a.i = 1;
    tensor__red_walk(r, in, tensor__row_prod, &a);
    tensor__red_store(r, out, &a);
}

/* ctx: the call; max/min store the value, argmax/argmin its index. */
static void tensor__elem_ext(const tensor__red *r, const char *in, char *out, void *ctx) {
    tensor_op op = ((const tensor__call *)ctx)->op;
    tensor__acc a;
    tensor__acc_init(&a, r->in_dt);
    a.mode = (op == TENSOR_OP_max || op == TENSOR_OP_max_all || op == TENSOR_OP_argmax) ? 1 : -1;
    tensor__red_walk(r, in, tensor__row_ext, &a);
    if (op == TENSOR_OP_argmax || op == TENSOR_OP_argmin) { tensor__store_i64(out, TENSOR_I64, a.best); return; }
    tensor__red_store(r, out, &a);
}

/* var / std, two passes: the mean, then the squared deviations from it. Divided by
   N - correction, or by 0 where that is <= 0 (NaN or inf, as PyTorch gives). */
static void tensor__elem_var(const tensor__red *r, const char *in, char *out, void *ctx) {
    const tensor__call *c = (const tensor__call *)ctx;
    tensor__acc a;
    tensor__acc_init(&a, r->in_dt);
    tensor__red_walk(r, in, tensor__row_sum, &a);
    a.ref = a.d / (double)r->rnumel;
    a.d = 0;
    tensor__red_walk(r, in, tensor__row_sqdev, &a);
    double dof = (double)r->rnumel - (double)c->ip[1];
    a.d /= dof > 0 ? dof : 0;
    if (c->op == TENSOR_OP_std) a.d = sqrt(a.d);
    tensor__red_store(r, out, &a);
}

/* log(sum(exp(x - m))) + m with m the max; an infinite m is replaced by 0 so that all -inf gives
   -inf and a +inf gives +inf instead of NaN. No elements: -inf. */
static void tensor__elem_logsumexp(const tensor__red *r, const char *in, char *out, void *ctx) {
    (void)ctx;
    if (!tensor__reference_kernels && r->in_dt == TENSOR_F32 && r->nr == 1 && r->rstride[0][0] == 4) {
        float m;
        double v = tensor__row_maxsumexp_f32(NULL, (const float *)in, r->rnumel, &m);
        if (v == v) { *(float *)out = (float)((double)m + log(v)); return; } /* else a NaN or an infinity: the path below */
    }
    tensor__acc a;
    tensor__acc_init(&a, r->in_dt);
    a.mode = 1;
    tensor__red_walk(r, in, tensor__row_ext, &a);
    double m = a.found ? a.d : -INFINITY;
    if (isinf(m)) m = 0;
    a.ref = m;
    a.d = 0;
    tensor__red_walk(r, in, tensor__row_sumexp, &a);
    a.d = log(a.d) + m;
    tensor__red_store(r, out, &a);
}

static void tensor__elem_norm(const tensor__red *r, const char *in, char *out, void *ctx) {
    double p = ((const tensor__call *)ctx)->p[0];
    tensor__acc a;
    tensor__acc_init(&a, r->in_dt);
    a.p = p;
    a.mode = p == INFINITY ? TENSOR__NORM_INF : p == -INFINITY ? TENSOR__NORM_NEG_INF : p == 0 ? TENSOR__NORM_ZERO
           : p == 1 ? TENSOR__NORM_ONE : p == 2 ? TENSOR__NORM_TWO : TENSOR__NORM_P;
    tensor__red_walk(r, in, tensor__row_norm, &a);
    if (a.mode == TENSOR__NORM_TWO) a.d = sqrt(a.d);
    else if (a.mode == TENSOR__NORM_P) a.d = pow(a.d, 1.0 / p);
    tensor__red_store(r, out, &a);
}

static void tensor__elem_allany(const tensor__red *r, const char *in, char *out, void *ctx) {
    tensor__acc a;
    tensor__acc_init(&a, r->in_dt);
    a.mode = ((const tensor__call *)ctx)->op == TENSOR_OP_all;
    tensor__red_walk(r, in, tensor__row_allany, &a);
    *(uint8_t *)out = a.mode == 1 ? !a.done : a.done;
}

/* cumsum: r's single reduced dim is the scanned one; ctx its output byte stride. */
static void tensor__elem_cumsum(const tensor__red *r, const char *in, char *out, void *ctx) {
    int64_t os = *(const int64_t *)ctx, n = r->nr ? r->rshape[0] : r->rnumel, s = r->nr ? r->rstride[0][0] : 0;
    if (!tensor__is_float(r->in_dt)) {
        int64_t acc = 0;
        for (int64_t i = 0; i < n; i++) {
            acc = tensor__iadd(acc, tensor__load_i64(in + i * s, r->in_dt));
            *(int64_t *)(out + i * os) = acc;
        }
        return;
    }
    double acc = 0;
    tensor_dtype od = r->out_dt;
    if (od == TENSOR_F32) TENSOR__RED_LOOP(r->in_dt, in, s, n, acc += x; *(float *)(out + i * os) = (float)acc;);
    else TENSOR__RED_LOOP(r->in_dt, in, s, n, acc += x; tensor__store_f64(out + i * os, od, acc););
}

/* ---- kernels ---- */
static int tensor__reduce_run(tensor__call *c, tensor__elem_fn fn) {
    tensor__red r;
    tensor__red_from_call(&r, c);
    tensor__red_run_parallel(&r, fn, c);
    return 0;
}

/* out: t's shape without (or with size 1 at) the reduced dims */
static int tensor__cpu_sum(tensor__call *c) { return tensor__reduce_sum(c, false); }
static int tensor__cpu_sum_all(tensor__call *c) { return tensor__reduce_sum(c, false); }
static int tensor__cpu_sum_dims(tensor__call *c) { return tensor__reduce_sum(c, false); }
static int tensor__cpu_mean(tensor__call *c) { return tensor__reduce_sum(c, true); }
static int tensor__cpu_mean_all(tensor__call *c) { return tensor__reduce_sum(c, true); }
static int tensor__cpu_mean_dims(tensor__call *c) { return tensor__reduce_sum(c, true); }
static int tensor__cpu_prod(tensor__call *c) { return tensor__reduce_run(c, tensor__elem_prod); }
static int tensor__cpu_max(tensor__call *c) { return tensor__reduce_run(c, tensor__elem_ext); }
static int tensor__cpu_max_all(tensor__call *c) { return tensor__reduce_run(c, tensor__elem_ext); }
static int tensor__cpu_min(tensor__call *c) { return tensor__reduce_run(c, tensor__elem_ext); }
static int tensor__cpu_min_all(tensor__call *c) { return tensor__reduce_run(c, tensor__elem_ext); }
static int tensor__cpu_argmax(tensor__call *c) { return tensor__reduce_run(c, tensor__elem_ext); }
static int tensor__cpu_argmin(tensor__call *c) { return tensor__reduce_run(c, tensor__elem_ext); }
static int tensor__cpu_var(tensor__call *c) { return tensor__reduce_run(c, tensor__elem_var); }
static int tensor__cpu_std(tensor__call *c) { return tensor__reduce_run(c, tensor__elem_var); }
static int tensor__cpu_logsumexp(tensor__call *c) { return tensor__reduce_run(c, tensor__elem_logsumexp); }
static int tensor__cpu_norm(tensor__call *c) { return tensor__reduce_run(c, tensor__elem_norm); }
/* out: [] (bool) */
static int tensor__cpu_all(tensor__call *c) { return tensor__reduce_run(c, tensor__elem_allany); }
static int tensor__cpu_any(tensor__call *c) { return tensor__reduce_run(c, tensor__elem_allany); }

/* out: t's shape, out[..., i, ...] = sum of t[..., :i+1, ...] along the dim */
static int tensor__cpu_cumsum(tensor__call *c) {
    const tensor *t = c->in[0];
    if (tensor__numel_of(t->ndim, t->shape) == 0) return 0; /* [2^40, 0]: no scan to walk, whatever the other dims */
    unsigned mask = c->n_dims ? 1u << c->dims[0] : 0;
    int64_t esz = (int64_t)tensor__dtype_sizes[c->out->dtype], ostride[TENSOR_MAX_DIMS];
    for (int d = 0; d < t->ndim; d++) ostride[d] = c->out->strides[d] * esz;
    int64_t os = c->n_dims ? ostride[c->dims[0]] : 0;
    tensor__red r;
    tensor__red_init(&r, t, mask, ostride, c->out);
    tensor__red_run(&r, tensor__elem_cumsum, &os);
    return 0;
}

/* ---- front-ends ---- */

/* The output dtype of a reduction of t, or false + an error where t's dtype is refused. */
static bool tensor__reduce_dtype(tensor_op op, const tensor *t, tensor_dtype *out) {
    const char *fn = tensor__ops[op].fn;
    switch (op) {
    case TENSOR_OP_sum: case TENSOR_OP_sum_all: case TENSOR_OP_sum_dims:
    case TENSOR_OP_prod: case TENSOR_OP_cumsum:
        *out = tensor__is_float(t->dtype) ? t->dtype : TENSOR_I64; /* ints and bool sum to int64 */
        return true;
    case TENSOR_OP_mean: case TENSOR_OP_mean_all: case TENSOR_OP_mean_dims:
    case TENSOR_OP_var: case TENSOR_OP_std: case TENSOR_OP_logsumexp: case TENSOR_OP_norm:
        if (!tensor__is_float(t->dtype)) {
            tensor__fail(fn, "input dtype must be floating point, got %s (convert with tensor_to_dtype first)", tensor__dtype_names[t->dtype]);
            return false;
        }
        *out = t->dtype;
        return true;
    case TENSOR_OP_argmax: case TENSOR_OP_argmin: *out = TENSOR_I64; return true;
    case TENSOR_OP_all: case TENSOR_OP_any: *out = TENSOR_BOOL; return true;
    default: *out = t->dtype; return true; /* max, min */
    }
}

/* Reduces t over dims[0..n) (n < 0: every dim) for op, with keepdim, parameters p (norm) and
   correction (var, std). Validates everything, then allocates the output and dispatches. */
static tensor *tensor__reduce(tensor_op op, tensor *t, int n, const int *dims, bool keepdim, double p, int64_t correction) {
    const char *fn = tensor__ops[op].fn;
    TENSOR__CHECK_ARG(fn, t);
    tensor_dtype out_dt;
    if (!tensor__reduce_dtype(op, t, &out_dt)) return NULL;
    if (n > 0 && !dims) return tensor__null_arg(fn, "dims");
    unsigned mask = 0, seen = 0;
    if (n < 0) mask = (1u << t->ndim) - 1;
    for (int i = 0; i < n; i++) {
        int d = tensor__wrap_dim(fn, dims[i], t->ndim > 0 ? t->ndim : 1); /* a 0-dim tensor takes dim 0 and -1 */
        if (d < 0) return NULL;
        if (seen >> d & 1) return tensor__fail(fn, "dim %d appears more than once in the list of dims", d);
        seen |= 1u << d;
    }
    if (t->ndim > 0) mask |= seen;

    tensor__call c;
    tensor__call_init(&c, op);
    c.n_in = 1;
    c.in[0] = t;
    c.ip[0] = keepdim;
    c.ip[1] = correction;
    c.p[0] = p;
    int on = 0;
    int64_t oshape[TENSOR_MAX_DIMS];
    for (int d = 0; d < t->ndim; d++) {
        if (mask >> d & 1) {
            c.dims[c.n_dims++] = d;
            if (keepdim) oshape[on++] = 1;
        } else oshape[on++] = t->shape[d];
    }

    /* ops with no identity refuse to reduce over nothing */
    bool no_identity = op == TENSOR_OP_max || op == TENSOR_OP_max_all || op == TENSOR_OP_min || op == TENSOR_OP_min_all ||
                       op == TENSOR_OP_argmax || op == TENSOR_OP_argmin || (op == TENSOR_OP_norm && isinf(p));
    if (no_identity) {
        const char *what = op == TENSOR_OP_max || op == TENSOR_OP_max_all ? "the maximum" : op == TENSOR_OP_min || op == TENSOR_OP_min_all ? "the minimum"
                         : op == TENSOR_OP_argmax ? "the argmax" : op == TENSOR_OP_argmin ? "the argmin" : p > 0 ? "the inf norm" : "the -inf norm";
        for (int i = 0; i < c.n_dims; i++)
            if (t->shape[c.dims[i]] == 0) {
                if (n < 0) return tensor__fail(fn, "cannot compute %s of an empty tensor (shape %s): it has no identity", what, tensor__shape_of(t));
                return tensor__fail(fn, "cannot compute %s on an empty dim (dim %d of shape %s)", what, c.dims[i], tensor__shape_of(t));
            }
    }
    c.out = tensor__new(fn, on, oshape, out_dt, t->storage->device);
    return c.out ? tensor__dispatch(&c) : NULL;
}

TENSOR_API tensor *tensor_sum(tensor *t, int dim, bool keepdim) { return tensor__reduce(TENSOR_OP_sum, t, 1, &dim, keepdim, 0, 0); }
TENSOR_API tensor *tensor_sum_all(tensor *t) { return tensor__reduce(TENSOR_OP_sum_all, t, -1, NULL, false, 0, 0); }
TENSOR_API tensor *tensor_mean(tensor *t, int dim, bool keepdim) { return tensor__reduce(TENSOR_OP_mean, t, 1, &dim, keepdim, 0, 0); }
TENSOR_API tensor *tensor_mean_all(tensor *t) { return tensor__reduce(TENSOR_OP_mean_all, t, -1, NULL, false, 0, 0); }
TENSOR_API tensor *tensor_prod(tensor *t, int dim, bool keepdim) { return tensor__reduce(TENSOR_OP_prod, t, 1, &dim, keepdim, 0, 0); }
TENSOR_API tensor *tensor_max(tensor *t, int dim, bool keepdim) { return tensor__reduce(TENSOR_OP_max, t, 1, &dim, keepdim, 0, 0); }
TENSOR_API tensor *tensor_max_all(tensor *t) { return tensor__reduce(TENSOR_OP_max_all, t, -1, NULL, false, 0, 0); }
TENSOR_API tensor *tensor_min(tensor *t, int dim, bool keepdim) { return tensor__reduce(TENSOR_OP_min, t, 1, &dim, keepdim, 0, 0); }
TENSOR_API tensor *tensor_min_all(tensor *t) { return tensor__reduce(TENSOR_OP_min_all, t, -1, NULL, false, 0, 0); }
TENSOR_API tensor *tensor_argmax(tensor *t, int dim, bool keepdim) { return tensor__reduce(TENSOR_OP_argmax, t, 1, &dim, keepdim, 0, 0); }
TENSOR_API tensor *tensor_argmin(tensor *t, int dim, bool keepdim) { return tensor__reduce(TENSOR_OP_argmin, t, 1, &dim, keepdim, 0, 0); }
TENSOR_API tensor *tensor_var(tensor *t, int dim, int64_t correction, bool keepdim) { return tensor__reduce(TENSOR_OP_var, t, 1, &dim, keepdim, 0, correction); }
TENSOR_API tensor *tensor_std(tensor *t, int dim, int64_t correction, bool keepdim) { return tensor__reduce(TENSOR_OP_std, t, 1, &dim, keepdim, 0, correction); }
TENSOR_API tensor *tensor_logsumexp(tensor *t, int dim, bool keepdim) { return tensor__reduce(TENSOR_OP_logsumexp, t, 1, &dim, keepdim, 0, 0); }
TENSOR_API tensor *tensor_all(tensor *t) { return tensor__reduce(TENSOR_OP_all, t, -1, NULL, false, 0, 0); }
TENSOR_API tensor *tensor_any(tensor *t) { return tensor__reduce(TENSOR_OP_any, t, -1, NULL, false, 0, 0); }

/* n = 0 reduces every dim, as torch.sum(t, dim=[]) does. */
TENSOR_API tensor *tensor_sum_dims(tensor *t, int n, const int *dims, bool keepdim) {
    if (t && n < 0) return tensor__fail("tensor_sum_dims", "the number of dims must be >= 0, got %d", n);
    return tensor__reduce(TENSOR_OP_sum_dims, t, n == 0 ? -1 : n, dims, keepdim, 0, 0);
}
TENSOR_API tensor *tensor_mean_dims(tensor *t, int n, const int *dims, bool keepdim) {
    if (t && n < 0) return tensor__fail("tensor_mean_dims", "the number of dims must be >= 0, got %d", n);
    return tensor__reduce(TENSOR_OP_mean_dims, t, n == 0 ? -1 : n, dims, keepdim, 0, 0);
}

/* p > 0, p = 0 (the count of non-zeros), INFINITY (max |x|) or -INFINITY (min |x|). */
TENSOR_API tensor *tensor_norm(tensor *t, double p, int dim, bool keepdim) {
    if (t && (p != p || (p < 0 && p != -INFINITY)))
        return tensor__fail("tensor_norm", "order p must be >= 0, INFINITY or -INFINITY, got %g", p);
    return tensor__reduce(TENSOR_OP_norm, t, 1, &dim, keepdim, p, 0);
}

TENSOR_API tensor *tensor_cumsum(tensor *t, int dim) {
    const char *fn = "tensor_cumsum";
    TENSOR__CHECK_ARG(fn, t);
    tensor_dtype out_dt;
    if (!tensor__reduce_dtype(TENSOR_OP_cumsum, t, &out_dt)) return NULL;
    int d = tensor__wrap_dim(fn, dim, t->ndim > 0 ? t->ndim : 1);
    if (d < 0) return NULL;
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_cumsum);
    c.n_in = 1;
    c.in[0] = t;
    if (t->ndim > 0) { c.dims[0] = d; c.n_dims = 1; }
    c.out = tensor__new_like(fn, t, out_dt);
    return c.out ? tensor__dispatch(&c) : NULL;
}
/* ==== end generator/parts/reduce.h ==== */
/* ==== begin generator/parts/shape.h ==== */
// >>shape --------------------------------------------------------------------------------------
/* Shape ops. The view ops (view, permute, transpose, expand, squeeze, unsqueeze, slice, select)
   only compute a new geometry over t's storage: no kernel, no copy. reshape and flatten are views
   whenever the strides allow (PyTorch's computeStride rule), else copies. Each view op still fills
   a tensor__call (inputs, parameters, out) and hands it to the autograd hook, as tensor__dispatch
   does for kernels, so the derivative table can treat views like any other op:
     view/reshape/flatten: recorded as view;   expand: as expand (input shape from in[0]);
     permute: dims[0..n_dims-1];   transpose: ip[0], ip[1] (wrapped);
     squeeze, unsqueeze: ip[0] the wrapped dim;   select: ip[0] dim, ip[1] index (wrapped);
     slice (and each piece of tensor_split): ip[0] dim, ip[1] start, ip[2] end (both normalized
     to [0, size]), ip[3] step.
   reshape of a non-viewable tensor records contiguous (a copy) and then view. The kernel ops'
   calls: cat: ip[0] n, ip[1] the tensor array (read it while recording), ip[2] dim, in[] the first
   TENSOR__MAX_INPUTS inputs; stack: unsqueeze + cat; flip: ip[0] dim; repeat: ip[0..n_dims-1];
   pad: ip[0] npad, ip[1] the pads array, p[0] value; tril/triu: ip[0] diagonal; gather,
   index_select: in = {t, index}, ip[0] dim; scatter_add: in = {t, index, src}, ip[0] dim;
   masked_fill: in = {t, mask}, p[0] value; one_hot: ip[0] num_classes. */

/* Builds the view handle of c and records it for autograd. */
static tensor *tensor__make_view(tensor__call *c, tensor *t, int ndim, const int64_t *shape, const int64_t *strides, int64_t offset) {
    c->n_in = 1;
    c->in[0] = t;
    c->out = tensor__view_of(c->fn, t, ndim, shape, strides, offset);
    if (c->out && !tensor__autograd_record(c)) { tensor_free(c->out); c->out = NULL; }
    return c->out;
}

/* PyTorch's infer_size: the shape with its one -1 filled in so it holds numel elements; false and
   an error naming fn if there are two -1s, a negative size, or the element counts differ. */
static bool tensor__infer_shape(const char *fn, const tensor *t, int ndim, const int64_t *shape, int64_t *out) {
    if (ndim < 0 || ndim > TENSOR_MAX_DIMS) { tensor__fail(fn, "ndim %d is out of range [0, %d]", ndim, TENSOR_MAX_DIMS); return false; }
    if (ndim > 0 && !shape) { tensor__fail(fn, "shape is NULL with ndim %d", ndim); return false; }
    char b[160];
    int64_t numel = tensor__numel_of(t->ndim, t->shape), known = 1;
    int infer = -1;
    for (int i = 0; i < ndim; i++) {
        out[i] = shape[i];
        if (shape[i] == -1) {
            if (infer >= 0) { tensor__fail(fn, "only one dimension can be inferred, shape %s has two -1", tensor__shape_str(b, sizeof b, ndim, shape)); return false; }
            infer = i;
        } else if (shape[i] < 0) {
            tensor__fail(fn, "invalid size %lld at dim %d of shape %s", (long long)shape[i], i, tensor__shape_str(b, sizeof b, ndim, shape));
            return false;
        } else if (!tensor__size_mul(known, shape[i], &known)) {
            tensor__fail(fn, "shape %s has too many elements", tensor__shape_str(b, sizeof b, ndim, shape));
            return false;
        }
    }
    if (numel == known || (infer >= 0 && known > 0 && numel % known == 0)) {
        if (infer >= 0) {
            if (known == 0) {
                tensor__fail(fn, "cannot reshape tensor of 0 elements into shape %s because the unspecified dimension size -1 can be any value and is ambiguous",
                             tensor__shape_str(b, sizeof b, ndim, shape));
                return false;
            }
            out[infer] = numel / known;
        }
        return tensor__check_shape(fn, ndim, out) >= 0; /* an empty shape's strides may still overflow */
    }
    tensor__fail(fn, "shape %s is invalid for input of shape %s (%lld elements)", tensor__shape_str(b, sizeof b, ndim, shape), tensor__shape_of(t), (long long)numel);
    return false;
}

/* PyTorch's computeStride: strides that let t's elements be seen with shape (whose element count
   matches), walking chunks of dims that are contiguous with each other; false if a new dim would
   have to span two such chunks. */
static bool tensor__view_strides(const tensor *t, int ndim, const int64_t *shape, int64_t *strides) {
    int on = t->ndim;
    if (on == 0) { for (int i = 0; i < ndim; i++) strides[i] = 1; return true; }
    if (tensor__numel_of(on, t->shape) == 0) {
        bool same = on == ndim;
        for (int i = 0; same && i < ndim; i++) same = t->shape[i] == shape[i];
        if (same) { for (int i = 0; i < ndim; i++) strides[i] = t->strides[i]; return true; }
        tensor__contiguous_strides(ndim, shape, strides);
        return true;
    }
    int view_d = ndim - 1;
    int64_t chunk_base = t->strides[on - 1], tensor_numel = 1, view_numel = 1;
    for (int d = on - 1; d >= 0; d--) {
        tensor_numel *= t->shape[d];
        if (d == 0 || (t->shape[d - 1] != 1 && t->strides[d - 1] != tensor_numel * chunk_base)) {
            while (view_d >= 0 && (view_numel < tensor_numel || shape[view_d] == 1)) {
                strides[view_d] = view_numel * chunk_base;
                view_numel *= shape[view_d];
                view_d--;
            }
            if (view_numel != tensor_numel) return false;
            if (d > 0) {
                chunk_base = t->strides[d - 1];
                tensor_numel = 1;
                view_numel = 1;
            }
        }
    }
    return view_d == -1;
}

TENSOR_API tensor *tensor_view(tensor *t, int ndim, const int64_t *shape) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_view);
    TENSOR__CHECK_ARG(c.fn, t);
    int64_t sh[TENSOR_MAX_DIMS] = {0}, st[TENSOR_MAX_DIMS] = {0}; /* = {0}: quiets -O3 maybe-uninitialized */
    if (!tensor__infer_shape(c.fn, t, ndim, shape, sh)) return NULL;
    if (!tensor__view_strides(t, ndim, sh, st)) {
        char b[160];
        return tensor__fail(c.fn, "shape %s is not compatible with the size and strides of the input (shape %s): a dim would span two contiguous subspaces; use tensor_reshape",
                            tensor__shape_str(b, sizeof b, ndim, sh), tensor__shape_of(t));
    }
    return tensor__make_view(&c, t, ndim, sh, st, t->offset);
}

/* reshape, and flatten through it: a view when the strides allow, else a view of a contiguous
   copy (PyTorch's reshape is exactly this composite: view, or clone then view). Messages name fn. */
static tensor *tensor__reshape(const char *fn, tensor *t, int ndim, const int64_t *shape) {
    int64_t sh[TENSOR_MAX_DIMS] = {0}, st[TENSOR_MAX_DIMS] = {0}; /* = {0}: quiets -O3 maybe-uninitialized */
    if (!tensor__infer_shape(fn, t, ndim, shape, sh)) return NULL;
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_view);
    c.fn = fn;
    if (tensor__view_strides(t, ndim, sh, st)) return tensor__make_view(&c, t, ndim, sh, st, t->offset);
    tensor *copy = tensor_contiguous(t);
    if (!copy) return NULL;
    tensor__contiguous_strides(ndim, sh, st);
    tensor *r = tensor__make_view(&c, copy, ndim, sh, st, copy->offset);
    tensor_free(copy); /* the view keeps the storage */
    return r;
}

TENSOR_API tensor *tensor_reshape(tensor *t, int ndim, const int64_t *shape) {
    TENSOR__CHECK_ARG("tensor_reshape", t);
    return tensor__reshape("tensor_reshape", t, ndim, shape);
}

TENSOR_API tensor *tensor_flatten(tensor *t, int start_dim, int end_dim) {
    const char *fn = "tensor_flatten";
    TENSOR__CHECK_ARG(fn, t);
    int nd = t->ndim ? t->ndim : 1; /* a 0-dim tensor flattens to [1] */
    int s = tensor__wrap_dim(fn, start_dim, nd);
    if (s < 0) return NULL;
    int e = tensor__wrap_dim(fn, end_dim, nd);
    if (e < 0) return NULL;
    if (s > e) return tensor__fail(fn, "start_dim %d (dim %d) cannot come after end_dim %d (dim %d)", start_dim, s, end_dim, e);
    if (t->ndim == 0) { int64_t one = 1; return tensor__reshape(fn, t, 1, &one); }
    if (s == e) return tensor__reshape(fn, t, t->ndim, t->shape); /* a recorded view, not a bare alias */
    int64_t sh[TENSOR_MAX_DIMS];
    int n = 0;
    for (int i = 0; i < s; i++) sh[n++] = t->shape[i];
    int64_t m = 1;
    for (int i = s; i <= e; i++) m *= t->shape[i];
    sh[n++] = m;
    for (int i = e + 1; i < t->ndim; i++) sh[n++] = t->shape[i];
    return tensor__reshape(fn, t, n, sh);
}

TENSOR_API tensor *tensor_permute(tensor *t, int ndim, const int *dims) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_permute);
    TENSOR__CHECK_ARG(c.fn, t);
    if (ndim != t->ndim) return tensor__fail(c.fn, "number of dims %d does not match the %d dims of the input (shape %s)", ndim, t->ndim, tensor__shape_of(t));
    if (ndim > 0 && !dims) return tensor__fail(c.fn, "dims is NULL with ndim %d", ndim);
    int64_t sh[TENSOR_MAX_DIMS] = {0}, st[TENSOR_MAX_DIMS] = {0}; /* = {0}: quiets -O3 maybe-uninitialized */
    bool seen[TENSOR_MAX_DIMS] = {false};
    for (int i = 0; i < ndim; i++) {
        int d = tensor__wrap_dim(c.fn, dims[i], ndim);
        if (d < 0) return NULL;
        if (seen[d]) return tensor__fail(c.fn, "dim %d appears more than once in the permutation", d);
        seen[d] = true;
        c.dims[i] = d;
        sh[i] = t->shape[d];
        st[i] = t->strides[d];
    }
    c.n_dims = ndim;
    return tensor__make_view(&c, t, ndim, sh, st, t->offset);
}

TENSOR_API tensor *tensor_transpose(tensor *t, int dim0, int dim1) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_transpose);
    TENSOR__CHECK_ARG(c.fn, t);
    int nd = t->ndim ? t->ndim : 1; /* a 0-dim tensor accepts dims 0 and -1 */
    int d0 = tensor__wrap_dim(c.fn, dim0, nd);
    if (d0 < 0) return NULL;
    int d1 = tensor__wrap_dim(c.fn, dim1, nd);
    if (d1 < 0) return NULL;
    int64_t sh[TENSOR_MAX_DIMS] = {0}, st[TENSOR_MAX_DIMS] = {0}; /* = {0}: quiets -O3 maybe-uninitialized */
    for (int i = 0; i < t->ndim; i++) { sh[i] = t->shape[i]; st[i] = t->strides[i]; }
    if (t->ndim) {
        sh[d0] = t->shape[d1]; st[d0] = t->strides[d1];
        sh[d1] = t->shape[d0]; st[d1] = t->strides[d0];
    }
    c.ip[0] = d0;
    c.ip[1] = d1;
    return tensor__make_view(&c, t, t->ndim, sh, st, t->offset);
}

TENSOR_API tensor *tensor_expand(tensor *t, int ndim, const int64_t *shape) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_expand);
    TENSOR__CHECK_ARG(c.fn, t);
    if (ndim < 0 || ndim > TENSOR_MAX_DIMS) return tensor__fail(c.fn, "ndim %d is out of range [0, %d]", ndim, TENSOR_MAX_DIMS);
    if (ndim > 0 && !shape) return tensor__fail(c.fn, "shape is NULL with ndim %d", ndim);
    char b[160];
    if (ndim < t->ndim)
        return tensor__fail(c.fn, "the number of sizes provided (%d) must be greater or equal to the number of dims of the tensor (shape %s)", ndim, tensor__shape_of(t));
    int64_t sh[TENSOR_MAX_DIMS] = {0}, st[TENSOR_MAX_DIMS] = {0}; /* = {0}: quiets -O3 maybe-uninitialized */
    int lead = ndim - t->ndim;
    for (int i = 0; i < ndim; i++) {
        int64_t want = shape[i];
        if (i < lead) { /* a new leading dim */
            if (want < 0) return tensor__fail(c.fn, "size %lld is not allowed in the leading, new dim %d (target sizes %s)", (long long)want, i, tensor__shape_str(b, sizeof b, ndim, shape));
            sh[i] = want;
            st[i] = 0;
            continue;
        }
        int d = i - lead;
        if (want == -1) want = t->shape[d];
        if (want < 0) return tensor__fail(c.fn, "invalid size %lld at dim %d (target sizes %s)", (long long)want, i, tensor__shape_str(b, sizeof b, ndim, shape));
        if (want == t->shape[d]) { sh[i] = want; st[i] = t->strides[d]; }
        else if (t->shape[d] == 1) { sh[i] = want; st[i] = 0; }
        else return tensor__fail(c.fn, "the expanded size %lld must match the existing size %lld at non-singleton dim %d (target sizes %s, tensor shape %s)",
                                 (long long)want, (long long)t->shape[d], i, tensor__shape_str(b, sizeof b, ndim, shape), tensor__shape_of(t));
    }
    if (tensor__check_shape(c.fn, ndim, sh) < 0) return NULL;
    return tensor__make_view(&c, t, ndim, sh, st, t->offset);
}

TENSOR_API tensor *tensor_squeeze(tensor *t, int dim) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_squeeze);
    TENSOR__CHECK_ARG(c.fn, t);
    int d = tensor__wrap_dim(c.fn, dim, t->ndim ? t->ndim : 1);
    if (d < 0) return NULL;
    c.ip[0] = d;
    int64_t sh[TENSOR_MAX_DIMS] = {0}, st[TENSOR_MAX_DIMS] = {0}; /* = {0}: quiets -O3 maybe-uninitialized */
    int n = 0;
    for (int i = 0; i < t->ndim; i++) {
        if (i == d && t->shape[i] == 1) continue; /* only a size-1 dim goes; otherwise a plain view */
        sh[n] = t->shape[i];
        st[n++] = t->strides[i];
    }
    return tensor__make_view(&c, t, n, sh, st, t->offset);
}

TENSOR_API tensor *tensor_unsqueeze(tensor *t, int dim) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_unsqueeze);
    TENSOR__CHECK_ARG(c.fn, t);
    int d = tensor__wrap_dim(c.fn, dim, t->ndim + 1);
    if (d < 0) return NULL;
    if (t->ndim == TENSOR_MAX_DIMS) return tensor__fail(c.fn, "tensor of shape %s already has the maximum of %d dims", tensor__shape_of(t), TENSOR_MAX_DIMS);
    c.ip[0] = d;
    int64_t sh[TENSOR_MAX_DIMS] = {0}, st[TENSOR_MAX_DIMS] = {0}; /* = {0}: quiets -O3 maybe-uninitialized */
    for (int i = 0, j = 0; i <= t->ndim; i++) {
        if (i == d) {
            sh[i] = 1;
            st[i] = d < t->ndim ? t->shape[d] * t->strides[d] : 1; /* PyTorch's choice */
            continue;
        }
        sh[i] = t->shape[j];
        st[i] = t->strides[j++];
    }
    return tensor__make_view(&c, t, t->ndim + 1, sh, st, t->offset);
}

TENSOR_API tensor *tensor_slice(tensor *t, int dim, int64_t start, int64_t end, int64_t step) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_slice);
    TENSOR__CHECK_ARG(c.fn, t);
    if (t->ndim == 0) return tensor__fail(c.fn, "cannot slice a 0-dim tensor");
    int d = tensor__wrap_dim(c.fn, dim, t->ndim);
    if (d < 0) return NULL;
    if (step <= 0) return tensor__fail(c.fn, "slice step must be positive, got %lld", (long long)step);
    int64_t size = t->shape[d];
    /* Python rules: negative bounds count from the end, then both clamp to [0, size] */
    if (start < 0) start += size;
    if (end < 0) end += size;
    if (start < 0) start = 0;
    if (start > size) start = size;
    if (end < start) end = start;
    if (end > size) end = size;
    int64_t len = end - start, n = len == 0 ? 0 : 1 + (len - 1) / step;
    int64_t sh[TENSOR_MAX_DIMS] = {0}, st[TENSOR_MAX_DIMS] = {0}; /* = {0}: quiets -O3 maybe-uninitialized */
    for (int i = 0; i < t->ndim; i++) { sh[i] = t->shape[i]; st[i] = t->strides[i]; }
    sh[d] = n;
    /* step < size whenever n > 1, so the product is below size * stride then; for a size-0/1 dim
       it may pass the bound of strides (>>shapes), and the stride of such a dim never matters */
    int64_t as = t->strides[d] < 0 ? -t->strides[d] : t->strides[d];
    if (n > 1 || as <= TENSOR__MAX_NUMEL / step) st[d] = t->strides[d] * step;
    c.ip[0] = d;
    c.ip[1] = start;
    c.ip[2] = end;
    c.ip[3] = step;
    return tensor__make_view(&c, t, t->ndim, sh, st, t->offset + (n ? start * t->strides[d] : 0));
}

TENSOR_API tensor *tensor_select(tensor *t, int dim, int64_t index) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_select);
    TENSOR__CHECK_ARG(c.fn, t);
    if (t->ndim == 0) return tensor__fail(c.fn, "cannot select on a 0-dim tensor");
    int d = tensor__wrap_dim(c.fn, dim, t->ndim);
    if (d < 0) return NULL;
    int64_t size = t->shape[d];
    if (index < -size || index >= size)
        return tensor__fail(c.fn, "index %lld is out of range for dim %d of size %lld (shape %s)", (long long)index, d, (long long)size, tensor__shape_of(t));
    if (index < 0) index += size;
    int64_t sh[TENSOR_MAX_DIMS] = {0}, st[TENSOR_MAX_DIMS] = {0}; /* = {0}: quiets -O3 maybe-uninitialized */
    int n = 0;
    for (int i = 0; i < t->ndim; i++) {
        if (i == d) continue;
        sh[n] = t->shape[i];
        st[n++] = t->strides[i];
    }
    c.ip[0] = d;
    c.ip[1] = index;
    return tensor__make_view(&c, t, n, sh, st, t->offset + index * t->strides[d]);
}

/* tensor_split: views of split_size along dim (the last one smaller), as torch.split. */
TENSOR_API int tensor_split(tensor *t, int64_t split_size, int dim, tensor **out, int max_out) {
    const char *fn = "tensor_split";
    if (!t) { tensor__null_arg(fn, "t"); return -1; }
    if (!out) { tensor__null_arg(fn, "out"); return -1; }
    if (t->ndim == 0) { tensor__fail(fn, "cannot split a 0-dim tensor"); return -1; }
    int d = tensor__wrap_dim(fn, dim, t->ndim);
    if (d < 0) return -1;
    int64_t size = t->shape[d];
    if (split_size < 0 || (split_size == 0 && size != 0)) {
        tensor__fail(fn, "split_size must be positive (0 only for a dim of size 0), got %lld for dim %d of size %lld", (long long)split_size, d, (long long)size);
        return -1;
    }
    int64_t count = size == 0 ? 1 : 1 + (size - 1) / split_size; /* a size-0 dim gives one empty piece */
    if (count > max_out) {
        tensor__fail(fn, "splitting dim %d of size %lld into pieces of %lld gives %lld tensors, more than max_out %d", d, (long long)size, (long long)split_size, (long long)count, max_out);
        return -1;
    }
    for (int64_t i = 0; i < count; i++) {
        int64_t start = i * split_size, end = size - start < split_size ? size : start + split_size;
        tensor__call c;
        tensor__call_init(&c, TENSOR_OP_slice);
        c.fn = fn;
        int64_t sh[TENSOR_MAX_DIMS];
        for (int k = 0; k < t->ndim; k++) sh[k] = t->shape[k];
        sh[d] = end - start;
        c.ip[0] = d;
        c.ip[1] = start;
        c.ip[2] = end;
        c.ip[3] = 1;
        out[i] = tensor__make_view(&c, t, t->ndim, sh, t->strides, t->offset + start * t->strides[d]);
        if (!out[i]) {
            for (int64_t k = 0; k < i; k++) { tensor_free(out[k]); out[k] = NULL; }
            return -1;
        }
    }
    return (int)count;
}

/* ---- copies ---- */

/* A stack copy of t's handle whose geometry a kernel may change: a window onto t's storage that
   is never linked, freed or returned (the kernels below copy through it with tensor__copy_into). */
static void tensor__window(tensor *w, const tensor *t) { memcpy(w, t, sizeof *w); }

/* PyTorch skips 1-D empty tensors in cat whatever their shape elsewhere (legacy behaviour). */
static bool tensor__cat_skipped(const tensor *t) { return t->ndim == 1 && t->shape[0] == 0; }

/* out: the inputs' shape with the sizes along dim summed. Each input is copied (converted to the
   output dtype) into its slab of out. ip[0] = n, ip[1] = the tensor array, ip[2] = dim; in[] holds
   the first TENSOR__MAX_INPUTS inputs (the autograd record reads the whole array from ip[1]). */
static int tensor__cpu_cat(tensor__call *c) {
    int n = (int)c->ip[0], dim = (int)c->ip[2];
    tensor *const *ts = (tensor *const *)(uintptr_t)c->ip[1];
    int64_t at = 0;
    if (tensor__numel_of(c->out->ndim, c->out->shape) == 0) return 0; /* no slab holds anything */
    for (int i = 0; i < n; i++) {
        if (tensor__cat_skipped(ts[i]) && c->out->ndim != 1) continue;
        int64_t len = ts[i]->shape[dim];
        if (len == 0) continue;
        tensor slab;
        tensor__window(&slab, c->out);
        slab.shape[dim] = len;
        slab.offset += at * slab.strides[dim];
        tensor__copy_into(&slab, ts[i]);
        at += len;
    }
    return 0;
}

TENSOR_API tensor *tensor_cat(int n, tensor *const *ts, int dim) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_cat);
    if (n < 1) return tensor__fail(c.fn, "expects a non-empty list of tensors, got n = %d", n);
    if (!ts) return tensor__null_arg(c.fn, "ts");
    for (int i = 0; i < n; i++) {
        if (!ts[i]) {
            if (!tensor_last_error()) tensor__fail(c.fn, "tensor %d of the list is NULL", i);
            return NULL;
        }
        if (ts[i]->ndim == 0) return tensor__fail(c.fn, "zero-dimensional tensor (at position %d) cannot be concatenated", i);
    }
    if (!tensor__same_device(c.fn, n, ts)) return NULL;
    int ref = -1;
    for (int i = 0; i < n && ref < 0; i++) if (!tensor__cat_skipped(ts[i])) ref = i;
    const tensor *r = ts[ref < 0 ? 0 : ref];
    int d = tensor__wrap_dim(c.fn, dim, r->ndim);
    if (d < 0) return NULL;
    int64_t shape[TENSOR_MAX_DIMS];
    for (int k = 0; k < r->ndim; k++) shape[k] = r->shape[k];
    if (ref >= 0) {
        shape[d] = 0;
        for (int i = 0; i < n; i++) {
            const tensor *t = ts[i];
            if (tensor__cat_skipped(t)) continue;
            if (t->ndim != r->ndim)
                return tensor__fail(c.fn, "tensors must have the same number of dims: tensor %d has shape %s, tensor %d has shape %s", ref, tensor__shape_of(r), i, tensor__shape_of(t));
            for (int k = 0; k < r->ndim; k++)
                if (k != d && t->shape[k] != r->shape[k])
                    return tensor__fail(c.fn, "sizes of tensors must match except in dim %d: tensor %d has shape %s, tensor %d has shape %s (size %lld vs %lld at dim %d)",
                                        d, ref, tensor__shape_of(r), i, tensor__shape_of(t), (long long)r->shape[k], (long long)t->shape[k], k);
            if (!tensor__size_add(shape[d], t->shape[d], &shape[d]))
                return tensor__fail(c.fn, "the concatenated size along dim %d is too large: it passes 2^60 at tensor %d (shape %s)", d, i, tensor__shape_of(t));
        }
    }
    tensor_dtype dt = tensor__result_type(n, ts);
    c.n_in = n < TENSOR__MAX_INPUTS ? n : TENSOR__MAX_INPUTS;
    for (int i = 0; i < c.n_in; i++) c.in[i] = ts[i];
    c.ip[0] = n;
    c.ip[1] = (int64_t)(uintptr_t)ts;
    c.ip[2] = d;
    c.out = tensor__new(c.fn, r->ndim, shape, dt, r->storage->device);
    return c.out ? tensor__dispatch(&c) : NULL;
}

/* stack = unsqueeze every input at dim, then cat (PyTorch's composite). */
TENSOR_API tensor *tensor_stack(int n, tensor *const *ts, int dim) {
    const char *fn = "tensor_stack";
    if (n < 1) return tensor__fail(fn, "expects a non-empty list of tensors, got n = %d", n);
    if (!ts) return tensor__null_arg(fn, "ts");
    for (int i = 0; i < n; i++) {
        if (!ts[i]) {
            if (!tensor_last_error()) tensor__fail(fn, "tensor %d of the list is NULL", i);
            return NULL;
        }
        if (!tensor__same_shape(ts[i], ts[0]))
            return tensor__fail(fn, "expects each tensor to be equal size, but got %s at entry 0 and %s at entry %d", tensor__shape_of(ts[0]), tensor__shape_of(ts[i]), i);
    }
    int d = tensor__wrap_dim(fn, dim, ts[0]->ndim + 1);
    if (d < 0) return NULL;
    if (ts[0]->ndim == TENSOR_MAX_DIMS) return tensor__fail(fn, "tensors of shape %s already have the maximum of %d dims", tensor__shape_of(ts[0]), TENSOR_MAX_DIMS);
    if (!tensor__same_device(fn, n, ts)) return NULL;
    tensor **u = (tensor **)TENSOR__MALLOC(sizeof(tensor *) * (size_t)n);
    if (!u) return tensor__fail(fn, "out of memory");
    tensor *r = NULL;
    int made = 0;
    for (; made < n; made++) {
        u[made] = tensor_unsqueeze(ts[made], d);
        if (!u[made]) break;
    }
    if (made == n) r = tensor_cat(n, u, d);
    for (int i = 0; i < made; i++) tensor_free(u[i]);
    TENSOR_FREE(u);
    return r;
}

/* out = t with dim reversed: a copy through a window that walks dim backwards. */
static int tensor__cpu_flip(tensor__call *c) {
    tensor *t = c->in[0];
    if (tensor__numel_of(t->ndim, t->shape) == 0) return 0;
    tensor w;
    tensor__window(&w, t);
    if (t->ndim > 0) {
        int d = (int)c->ip[0];
        w.offset += (w.shape[d] - 1) * w.strides[d];
        w.strides[d] = -w.strides[d];
    }
    tensor__copy_into(c->out, &w);
    return 0;
}

TENSOR_API tensor *tensor_flip(tensor *t, int dim) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_flip);
    TENSOR__CHECK_ARG(c.fn, t);
    int d = tensor__wrap_dim(c.fn, dim, t->ndim ? t->ndim : 1);
    if (d < 0) return NULL;
    c.n_in = 1;
    c.in[0] = t;
    c.ip[0] = d;
    c.out = tensor__new_like(c.fn, t, t->dtype);
    return c.out ? tensor__dispatch(&c) : NULL;
}

/* out: [P0*R0, ..., Pn*Rn] where P is t's shape with leading 1s. t goes into the first tile, then
   each dim (last first) is filled by doubling the already-filled block along it: O(log R) copies
   per dim. ip[0..n_dims-1] = repeats. */
static int tensor__cpu_repeat(tensor__call *c) {
    tensor *t = c->in[0], *o = c->out;
    int nd = o->ndim, lead = nd - t->ndim;
    if (tensor__numel_of(nd, o->shape) == 0) return 0;
    tensor src, region;
    tensor__window(&src, t);
    tensor__window(&region, o);
    src.ndim = nd;
    for (int i = nd - 1; i >= 0; i--) {
        src.shape[i] = i < lead ? 1 : t->shape[i - lead];
        src.strides[i] = i < lead ? 0 : t->strides[i - lead];
        region.shape[i] = src.shape[i];
    }
    tensor__copy_into(&region, &src);
    for (int d = nd - 1; d >= 0; d--) {
        int64_t reps = c->ip[d], have = 1, p = src.shape[d];
        while (have < reps) {
            int64_t m = have < reps - have ? have : reps - have;
            tensor from, to;
            tensor__window(&from, &region);
            from.shape[d] = m * p;
            tensor__window(&to, &from);
            to.offset += have * p * o->strides[d];
            tensor__copy_into(&to, &from);
            have += m;
        }
        region.shape[d] = o->shape[d];
    }
    return 0;
}

TENSOR_API tensor *tensor_repeat(tensor *t, int ndim, const int64_t *repeats) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_repeat);
    TENSOR__CHECK_ARG(c.fn, t);
    if (ndim < 0 || ndim > TENSOR_MAX_DIMS) return tensor__fail(c.fn, "number of repeats %d is out of range [0, %d]", ndim, TENSOR_MAX_DIMS);
    if (ndim > 0 && !repeats) return tensor__fail(c.fn, "repeats is NULL with ndim %d", ndim);
    char b[160];
    if (ndim < t->ndim)
        return tensor__fail(c.fn, "number of repeats %d can not be smaller than the number of dims of the tensor (shape %s)", ndim, tensor__shape_of(t));
    int64_t shape[TENSOR_MAX_DIMS];
    int lead = ndim - t->ndim;
    for (int i = 0; i < ndim; i++) {
        int64_t s = i < lead ? 1 : t->shape[i - lead];
        if (repeats[i] < 0) return tensor__fail(c.fn, "negative repeat %lld at dim %d (repeats %s)", (long long)repeats[i], i, tensor__shape_str(b, sizeof b, ndim, repeats));
        if (!tensor__size_mul(s, repeats[i], &shape[i]))
            return tensor__fail(c.fn, "repeats %s of shape %s give too many elements", tensor__shape_str(b, sizeof b, ndim, repeats), tensor__shape_of(t));
        c.ip[i] = repeats[i];
    }
    c.n_dims = ndim;
    c.n_in = 1;
    c.in[0] = t;
    c.out = tensor__new(c.fn, ndim, shape, t->dtype, t->storage->device);
    return c.out ? tensor__dispatch(&c) : NULL;
}

/* A value written into a tensor of dtype d must be representable there, as PyTorch checks
   ("value cannot be converted to type ... without overflow"); infinities are fine for floats. */
static bool tensor__check_value_fits(const char *fn, double v, tensor_dtype d) {
    double lo = 0, hi = 0;
    switch (d) {
    case TENSOR_BOOL: case TENSOR_F64: return true;
    case TENSOR_F32: hi = FLT_MAX; break;
    case TENSOR_F16: hi = 65504.0; break;
    case TENSOR_BF16: hi = 3.3895313892515355e38; break;
    case TENSOR_I32: lo = -2147483648.0; hi = 2147483647.0; break;
    case TENSOR_I64: lo = -9223372036854775808.0; hi = 9223372036854775807.0; break;
    case TENSOR_U8: lo = 0; hi = 255; break;
    }
    bool ok;
    if (tensor__is_float(d)) ok = v != v || isinf(v) || (v >= -hi && v <= hi);
    else ok = v >= lo && v <= hi && (d != TENSOR_I64 || v < 9223372036854775807.0);
    if (!ok) tensor__fail(fn, "value %g cannot be converted to %s without overflow", v, tensor__dtype_names[d]);
    return ok;
}

/* out = value everywhere, then the overlap of t and out (after the crops of negative pads) copied
   in. Dim nd-1-k gets pads[2k] before and pads[2k+1] after. ip[0] = npad, ip[1] = the pads array,
   p[0] = value. */
static int tensor__cpu_pad(tensor__call *c) {
    tensor *t = c->in[0], *o = c->out;
    const int64_t *pads = (const int64_t *)(uintptr_t)c->ip[1];
    int npairs = (int)c->ip[0] / 2;
    tensor__fill(o, c->p[0]);
    tensor src, dst;
    tensor__window(&src, t);
    tensor__window(&dst, o);
    for (int k = 0; k < npairs; k++) {
        int d = o->ndim - 1 - k;
        int64_t before = pads[2 * k], after = pads[2 * k + 1];
        int64_t in_start = before < 0 ? -before : 0, out_start = before > 0 ? before : 0;
        int64_t len = t->shape[d] - in_start + (after < 0 ? after : 0);
        if (len <= 0) return 0; /* nothing of t survives the crop */
        src.offset += in_start * src.strides[d];
        src.shape[d] = len;
        dst.offset += out_start * dst.strides[d];
        dst.shape[d] = len;
    }
    if (tensor__numel_of(dst.ndim, dst.shape) > 0) tensor__copy_into(&dst, &src);
    return 0;
}

TENSOR_API tensor *tensor_pad(tensor *t, int npad, const int64_t *pads, double value) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_pad);
    TENSOR__CHECK_ARG(c.fn, t);
    if (npad < 0 || npad % 2) return tensor__fail(c.fn, "padding length %d must be a non-negative multiple of 2", npad);
    if (npad / 2 > t->ndim)
        return tensor__fail(c.fn, "padding length %d must be at most two times the number of dims of the input (shape %s)", npad, tensor__shape_of(t));
    if (npad > 0 && !pads) return tensor__fail(c.fn, "pads is NULL with npad %d", npad);
    if (!tensor__check_value_fits(c.fn, value, t->dtype)) return NULL;
    int64_t shape[TENSOR_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++) shape[i] = t->shape[i];
    for (int k = 0; k < npad / 2; k++) {
        int d = t->ndim - 1 - k;
        int64_t before = pads[2 * k], after = pads[2 * k + 1], size = t->shape[d];
        const int64_t lim = TENSOR__MAX_NUMEL; /* then size + before + after cannot overflow */
        if (before > lim || before < -lim || after > lim || after < -lim)
            return tensor__fail(c.fn, "padding (%lld, %lld) of dim %d is too large", (long long)before, (long long)after, d);
        if (size + before + after < 0)
            return tensor__fail(c.fn, "the input size %lld of dim %d plus the padding (%lld, %lld) gives a negative output size", (long long)size, d, (long long)before, (long long)after);
        if (size + (before < 0 ? before : 0) + (after < 0 ? after : 0) < 0)
            return tensor__fail(c.fn, "the negative padding (%lld, %lld) crops more than the size %lld of dim %d", (long long)before, (long long)after, (long long)size, d);
        shape[d] = size + before + after;
    }
    c.n_in = 1;
    c.in[0] = t;
    c.ip[0] = npad;
    c.ip[1] = (int64_t)(uintptr_t)pads;
    c.p[0] = value;
    c.out = tensor__new(c.fn, t->ndim, shape, t->dtype, t->storage->device);
    return c.out ? tensor__dispatch(&c) : NULL;
}

/* out: [..., M, N] = t, then each row's out-of-triangle part zeroed (all-zero bytes are 0 in every
   dtype). Element (i, j) is kept when j - i <= diagonal (tril) or >= diagonal (triu). */
static int tensor__triangle(tensor__call *c, bool lower) {
    tensor *o = c->out;
    if (tensor__numel_of(o->ndim, o->shape) == 0) return 0; /* [2^40, 0]: no row to walk */
    tensor__copy_into(o, c->in[0]);
    int64_t m = o->shape[o->ndim - 2], n = o->shape[o->ndim - 1], rows = tensor__numel_of(o->ndim - 1, o->shape);
    int64_t diag = c->ip[0];
    if (diag < -m - 1) diag = -m - 1; /* j - i lies in (-m, n): clamping keeps the result, avoids overflow */
    if (diag > n + 1) diag = n + 1;
    size_t esz = tensor__dtype_sizes[o->dtype];
    char *base = tensor__data(o);
    for (int64_t r = 0; r < rows; r++) {
        int64_t i = r % m, lo, hi; /* zero columns [lo, hi) */
        if (lower) { lo = i + diag + 1; hi = n; }
        else { lo = 0; hi = i + diag; }
        if (lo < 0) lo = 0;
        if (hi > n) hi = n;
        if (lo < hi) memset(base + (size_t)(r * n + lo) * esz, 0, (size_t)(hi - lo) * esz);
    }
    return 0;
}
static int tensor__cpu_tril(tensor__call *c) { return tensor__triangle(c, true); }
static int tensor__cpu_triu(tensor__call *c) { return tensor__triangle(c, false); }

static tensor *tensor__triangle_front(tensor_op op, tensor *t, int64_t diagonal) {
    tensor__call c;
    tensor__call_init(&c, op);
    TENSOR__CHECK_ARG(c.fn, t);
    if (t->ndim < 2) return tensor__fail(c.fn, "input must have at least 2 dims, got shape %s", tensor__shape_of(t));
    c.n_in = 1;
    c.in[0] = t;
    c.ip[0] = diagonal;
    c.out = tensor__new_like(c.fn, t, t->dtype);
    return c.out ? tensor__dispatch(&c) : NULL;
}
TENSOR_API tensor *tensor_tril(tensor *t, int64_t diagonal) { return tensor__triangle_front(TENSOR_OP_tril, t, diagonal); }
TENSOR_API tensor *tensor_triu(tensor *t, int64_t diagonal) { return tensor__triangle_front(TENSOR_OP_triu, t, diagonal); }

/* ---- indexing ---- */

/* A tensor's geometry with a 0-dim tensor seen as [1] (PyTorch's ensure_nonempty_dim/size). */
typedef struct { int ndim; int64_t shape[TENSOR_MAX_DIMS], strides[TENSOR_MAX_DIMS]; } tensor__geom;
static void tensor__geom_of(const tensor *t, tensor__geom *g) {
    g->ndim = t->ndim ? t->ndim : 1;
    g->shape[0] = 1;
    g->strides[0] = 0;
    for (int i = 0; i < t->ndim; i++) { g->shape[i] = t->shape[i]; g->strides[i] = t->strides[i]; }
}
static bool tensor__check_index_dtype(const char *fn, const tensor *index) {
    if (index->dtype == TENSOR_I64 || index->dtype == TENSOR_I32) return true;
    tensor__fail(fn, "index must be an int64 (or int32) tensor, got %s", tensor__dtype_names[index->dtype]);
    return false;
}

/* The shape rules of gather and scatter_add (PyTorch's gather/scatter_shape_check): same number of
   dims (0-dim counts as 1), index no larger than t except along dim, and no larger than src. */
static bool tensor__check_scatter_shapes(const char *fn, const tensor *t, int dim, const tensor *index, const tensor *src) {
    tensor__geom gt, gi, gs;
    tensor__geom_of(t, &gt);
    tensor__geom_of(index, &gi);
    if (gi.ndim != gt.ndim) {
        tensor__fail(fn, "index (shape %s) must have the same number of dims as the input (shape %s)", tensor__shape_of(index), tensor__shape_of(t));
        return false;
    }
    if (src) tensor__geom_of(src, &gs);
    if (src && gs.ndim != gt.ndim) {
        tensor__fail(fn, "src (shape %s) must have the same number of dims as the input (shape %s)", tensor__shape_of(src), tensor__shape_of(t));
        return false;
    }
    for (int d = 0; d < gt.ndim; d++) {
        if (d != dim && gi.shape[d] > gt.shape[d]) {
            tensor__fail(fn, "index of shape %s is larger than the input of shape %s at dim %d (only dim %d may be larger)", tensor__shape_of(index), tensor__shape_of(t), d, dim);
            return false;
        }
        if (src && gi.shape[d] > gs.shape[d]) {
            tensor__fail(fn, "index of shape %s is larger than src of shape %s at dim %d", tensor__shape_of(index), tensor__shape_of(src), d);
            return false;
        }
    }
    return true;
}

/* Element copy of a size known at compile time for the common sizes (a variable memcpy is a call). */
static void tensor__copy_elem(char *dst, const char *src, size_t esz) {
    switch (esz) {
    case 1: *dst = *src; return;
    case 2: memcpy(dst, src, 2); return;
    case 4: memcpy(dst, src, 4); return;
    case 8: memcpy(dst, src, 8); return;
    default: memcpy(dst, src, esz); return;
    }
}

/* The walk shared by gather and scatter_add: rows of index (every dim but the last), then the
   last dim with running pointers. For element j of a row, *ip is the index element, *tp the element
   of t (or of the scatter output) at the same position with the dim component left out, *sp the
   element of src (scatter) or of the gather output. */
typedef struct {
    tensor__geom gi, gt, gs;
    char *ib, *tb, *sb;      /* element 0 of index, t, src */
    size_t isz, tsz, ssz;
    int nd;
    int64_t rows, row_len;
} tensor__scatter_walk;

static void tensor__scatter_walk_init(tensor__scatter_walk *w, tensor *index, tensor *t, tensor *s) {
    tensor__geom_of(index, &w->gi);
    tensor__geom_of(t, &w->gt);
    tensor__geom_of(s, &w->gs);
    w->isz = tensor__dtype_sizes[index->dtype];
    w->tsz = tensor__dtype_sizes[t->dtype];
    w->ssz = tensor__dtype_sizes[s->dtype];
    w->ib = tensor__data(index);
    w->tb = tensor__data(t);
    w->sb = tensor__data(s);
    w->nd = w->gi.ndim;
    w->row_len = w->gi.shape[w->nd - 1];
    w->rows = w->row_len ? tensor__numel_of(index->ndim, index->shape) / w->row_len : 0;
}

/* Reads index value k at element j of the current row and checks it against size; -1 on error. */
static int tensor__scatter_index(tensor__call *c, const char *ip, tensor_dtype idt, int64_t size, int dim, int64_t *k) {
    *k = idt == TENSOR_I64 ? *(const int64_t *)(const void *)ip : (int64_t)*(const int32_t *)(const void *)ip;
    if (*k >= 0 && *k < size) return 0;
    tensor__fail(c->fn, "index %lld is out of bounds for dim %d with size %lld", (long long)*k, dim, (long long)size);
    return -1;
}

/* out[idx] = t[idx with idx[dim] = index[idx]]. out: index's shape (contiguous). ip[0] = dim. */
static int tensor__cpu_gather(tensor__call *c) {
    tensor *t = c->in[0], *index = c->in[1], *o = c->out;
    int dim = (int)c->ip[0];
    tensor__scatter_walk w;
    tensor__scatter_walk_init(&w, index, t, o);
    if (!w.rows) return 0; /* an empty index: its shape was not checked against t's */
    int last = w.nd - 1;
    int64_t size = w.gt.shape[dim], tdim = w.gt.strides[dim] * (int64_t)w.tsz;
    int64_t il = w.gi.strides[last] * (int64_t)w.isz, tl = last == dim ? 0 : w.gt.strides[last] * (int64_t)w.tsz;
    int64_t idx[TENSOR_MAX_DIMS] = {0};
    char *out = w.sb;
    for (int64_t r = 0; r < w.rows; r++) {
        int64_t io = 0, to = 0;
        for (int d = 0; d < last; d++) {
            io += idx[d] * w.gi.strides[d];
            if (d != dim) to += idx[d] * w.gt.strides[d];
        }
        const char *ip = w.ib + io * (int64_t)w.isz;
        const char *tp = w.tb + to * (int64_t)w.tsz;
        for (int64_t j = 0; j < w.row_len; j++, ip += il, tp += tl, out += w.tsz) {
            int64_t k;
            if (tensor__scatter_index(c, ip, index->dtype, size, dim, &k)) return 1;
            tensor__copy_elem(out, tp + k * tdim, w.tsz);
        }
        tensor__next_index(last, w.gi.shape, idx);
    }
    return 0;
}

TENSOR_API tensor *tensor_gather(tensor *t, int dim, tensor *index) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_gather);
    TENSOR__CHECK_ARG(c.fn, t);
    TENSOR__CHECK_ARG(c.fn, index);
    tensor *ins[2] = {t, index};
    if (!tensor__same_device(c.fn, 2, ins)) return NULL;
    int d = tensor__wrap_dim(c.fn, dim, t->ndim ? t->ndim : 1);
    if (d < 0 || !tensor__check_index_dtype(c.fn, index)) return NULL;
    if (tensor__numel_of(index->ndim, index->shape) > 0 && !tensor__check_scatter_shapes(c.fn, t, d, index, NULL)) return NULL;
    c.n_in = 2;
    c.in[0] = t;
    c.in[1] = index;
    c.ip[0] = d;
    c.out = tensor__new(c.fn, index->ndim, index->shape, t->dtype, t->storage->device);
    return c.out ? tensor__dispatch(&c) : NULL;
}

/* out = t, then out[idx with idx[dim] = index[idx]] += src[idx] for every idx of index (in
   row-major order, each sum rounded to the dtype as PyTorch's CPU loop does). ip[0] = dim. */
static int tensor__cpu_scatter_add(tensor__call *c) {
    tensor *index = c->in[1], *src = c->in[2], *o = c->out;
    int dim = (int)c->ip[0];
    tensor__copy_into(o, c->in[0]);
    tensor__scatter_walk w;
    tensor__scatter_walk_init(&w, index, o, src);
    if (!w.rows) return 0; /* an empty index: its shape was not checked against src's */
    int last = w.nd - 1;
    tensor_dtype dt = o->dtype;
    int64_t size = w.gt.shape[dim], tdim = w.gt.strides[dim] * (int64_t)w.tsz;
    int64_t il = w.gi.strides[last] * (int64_t)w.isz, tl = last == dim ? 0 : w.gt.strides[last] * (int64_t)w.tsz;
    int64_t sl = w.gs.strides[last] * (int64_t)w.ssz;
    int64_t idx[TENSOR_MAX_DIMS] = {0};
    for (int64_t r = 0; r < w.rows; r++) {
        int64_t io = 0, to = 0, so = 0;
        for (int d = 0; d < last; d++) {
            io += idx[d] * w.gi.strides[d];
            so += idx[d] * w.gs.strides[d];
            if (d != dim) to += idx[d] * w.gt.strides[d];
        }
        const char *ip = w.ib + io * (int64_t)w.isz, *sp = w.sb + so * (int64_t)w.ssz;
        char *tp = w.tb + to * (int64_t)w.tsz;
        for (int64_t j = 0; j < w.row_len; j++, ip += il, tp += tl, sp += sl) {
            int64_t k;
            if (tensor__scatter_index(c, ip, index->dtype, size, dim, &k)) return 1;
            char *q = tp + k * tdim;
            switch (dt) {
            case TENSOR_F32: *(float *)(void *)q += *(const float *)(const void *)sp; break;
            case TENSOR_F64: *(double *)(void *)q += *(const double *)(const void *)sp; break;
            case TENSOR_F16: case TENSOR_BF16: tensor__store_f64(q, dt, tensor__load_f64(q, dt) + tensor__load_f64(sp, dt)); break;
            case TENSOR_BOOL: *(uint8_t *)q = *(const uint8_t *)q || *(const uint8_t *)sp; break;
            default: tensor__store_i64(q, dt, (int64_t)((uint64_t)tensor__load_i64(q, dt) + (uint64_t)tensor__load_i64(sp, dt))); break;
            }
        }
        tensor__next_index(last, w.gi.shape, idx);
    }
    return 0;
}

TENSOR_API tensor *tensor_scatter_add(tensor *t, int dim, tensor *index, tensor *src) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_scatter_add);
    TENSOR__CHECK_ARG(c.fn, t);
    TENSOR__CHECK_ARG(c.fn, index);
    TENSOR__CHECK_ARG(c.fn, src);
    tensor *ins[3] = {t, index, src};
    if (!tensor__same_device(c.fn, 3, ins)) return NULL;
    int d = tensor__wrap_dim(c.fn, dim, t->ndim ? t->ndim : 1);
    if (d < 0 || !tensor__check_index_dtype(c.fn, index)) return NULL;
    if (src->dtype != t->dtype) return tensor__fail(c.fn, "src dtype %s must equal the input dtype %s", tensor__dtype_names[src->dtype], tensor__dtype_names[t->dtype]);
    if (tensor__numel_of(index->ndim, index->shape) > 0 && !tensor__check_scatter_shapes(c.fn, t, d, index, src)) return NULL;
    c.n_in = 3;
    c.in[0] = t;
    c.in[1] = index;
    c.in[2] = src;
    c.ip[0] = d;
    c.out = tensor__new_like(c.fn, t, t->dtype);
    return c.out ? tensor__dispatch(&c) : NULL;
}

/* out: t's shape with dim's size = index's numel; slab p of out along dim = slab index[p] of t.
   ip[0] = dim. */
static int tensor__cpu_index_select(tensor__call *c) {
    tensor *t = c->in[0], *index = c->in[1], *o = c->out;
    int dim = (int)c->ip[0];
    int64_t n = tensor__numel_of(index->ndim, index->shape), size = t->ndim ? t->shape[dim] : 1;
    int64_t istride = index->ndim ? index->strides[0] : 0;
    size_t isz = tensor__dtype_sizes[index->dtype];
    for (int64_t p = 0; p < n; p++) { /* every index first: no partial work on a bad one */
        int64_t k = tensor__load_i64(tensor__data(index) + p * istride * (int64_t)isz, index->dtype);
        if (k < 0 || k >= size) { tensor__fail(c->fn, "index %lld is out of range for dim %d of size %lld", (long long)k, dim, (long long)size); return 1; }
    }
    if (tensor__numel_of(o->ndim, o->shape) == 0) return 0; /* [2^40, 0]: no block to copy */
    if (t->ndim > 0 && tensor__contiguous(t)) { /* blocks of the dims after dim are contiguous runs */
        size_t esz = tensor__dtype_sizes[t->dtype];
        int64_t outer = tensor__numel_of(dim, t->shape), inner = tensor__numel_of(t->ndim - dim - 1, t->shape + dim + 1);
        size_t block = (size_t)inner * esz;
        const char *src = tensor__data(t);
        char *dst = tensor__data(o);
        for (int64_t q = 0; q < outer; q++)
            for (int64_t p = 0; p < n; p++, dst += block) {
                int64_t k = tensor__load_i64(tensor__data(index) + p * istride * (int64_t)isz, index->dtype);
                memcpy(dst, src + (size_t)(q * size + k) * block, block);
            }
        return 0;
    }
    for (int64_t p = 0; p < n; p++) {
        int64_t k = tensor__load_i64(tensor__data(index) + p * istride * (int64_t)isz, index->dtype);
        if (t->ndim == 0) { tensor__copy_into(o, t); continue; }
        tensor from, to;
        tensor__window(&from, t);
        tensor__window(&to, o);
        from.offset += k * t->strides[dim];
        from.shape[dim] = 1;
        to.offset += p * o->strides[dim];
        to.shape[dim] = 1;
        if (tensor__numel_of(to.ndim, to.shape) > 0) tensor__copy_into(&to, &from);
    }
    return 0;
}

TENSOR_API tensor *tensor_index_select(tensor *t, int dim, tensor *index) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_index_select);
    TENSOR__CHECK_ARG(c.fn, t);
    TENSOR__CHECK_ARG(c.fn, index);
    tensor *ins[2] = {t, index};
    if (!tensor__same_device(c.fn, 2, ins)) return NULL;
    int d = tensor__wrap_dim(c.fn, dim, t->ndim ? t->ndim : 1);
    if (d < 0 || !tensor__check_index_dtype(c.fn, index)) return NULL;
    if (index->ndim > 1) return tensor__fail(c.fn, "index must be 0-dim or 1-D, got shape %s", tensor__shape_of(index));
    int64_t n = tensor__numel_of(index->ndim, index->shape);
    if (t->ndim == 0 && n != 1) return tensor__fail(c.fn, "index into a 0-dim tensor must have exactly 1 value, got %lld", (long long)n);
    int64_t shape[TENSOR_MAX_DIMS];
    for (int i = 0; i < t->ndim; i++) shape[i] = t->shape[i];
    if (t->ndim) shape[d] = n;
    c.n_in = 2;
    c.in[0] = t;
    c.in[1] = index;
    c.ip[0] = d;
    c.out = tensor__new(c.fn, t->ndim, shape, t->dtype, t->storage->device);
    return c.out ? tensor__dispatch(&c) : NULL;
}

typedef struct { char elem[8]; size_t size; } tensor__masked_ctx;
static void tensor__masked_loop(char **p, const int64_t *s, int64_t n, void *ctx) {
    const tensor__masked_ctx *k = (const tensor__masked_ctx *)ctx;
    for (int64_t i = 0; i < n; i++)
        if (*(const uint8_t *)(p[1] + i * s[1])) memcpy(p[0] + i * s[0], k->elem, k->size);
}
/* out = t, then value where mask (broadcast to out's shape) is true. p[0] = value. */
static int tensor__cpu_masked_fill(tensor__call *c) {
    tensor *o = c->out;
    tensor__copy_into(o, c->in[0]);
    tensor__masked_ctx k;
    k.size = tensor__dtype_sizes[o->dtype];
    tensor__store_f64(k.elem, o->dtype, c->p[0]);
    tensor *ops[2] = {o, c->in[1]};
    tensor__iter it;
    tensor__iter_init(&it, 2, ops, o->ndim, o->shape);
    tensor__iter_run(&it, tensor__masked_loop, &k);
    return 0;
}

TENSOR_API tensor *tensor_masked_fill(tensor *t, tensor *mask, double value) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_masked_fill);
    TENSOR__CHECK_ARG(c.fn, t);
    TENSOR__CHECK_ARG(c.fn, mask);
    tensor *ins[2] = {t, mask};
    if (!tensor__same_device(c.fn, 2, ins)) return NULL;
    if (mask->dtype != TENSOR_BOOL) return tensor__fail(c.fn, "mask must be a bool tensor, got %s", tensor__dtype_names[mask->dtype]);
    int nd;
    int64_t shape[TENSOR_MAX_DIMS];
    if (!tensor__broadcast_shapes(c.fn, t->ndim, t->shape, mask->ndim, mask->shape, &nd, shape)) return NULL;
    bool same = nd == t->ndim;
    for (int i = 0; same && i < nd; i++) same = shape[i] == t->shape[i];
    if (!same) return tensor__fail(c.fn, "mask of shape %s does not broadcast to the input shape %s", tensor__shape_of(mask), tensor__shape_of(t));
    if (!tensor__check_value_fits(c.fn, value, t->dtype)) return NULL;
    c.n_in = 2;
    c.in[0] = t;
    c.in[1] = mask;
    c.p[0] = value;
    c.out = tensor__new_like(c.fn, t, t->dtype);
    return c.out ? tensor__dispatch(&c) : NULL;
}

/* out: [..., C] i64, zero but for out[..., indices[...]] = 1. ip[0] = C. The front-end has
   checked every index against [0, C). */
static int tensor__cpu_one_hot(tensor__call *c) {
    tensor *ind = c->in[0], *o = c->out;
    int64_t classes = c->ip[0], n = tensor__numel_of(ind->ndim, ind->shape), idx[TENSOR_MAX_DIMS] = {0};
    int64_t *out = (int64_t *)tensor__data(o);
    memset(out, 0, (size_t)(n * classes) * sizeof(int64_t));
    for (int64_t p = 0; p < n; p++) {
        int64_t k = tensor__load_i64((char *)ind->storage->data + tensor__offset_of(ind, idx) * (int64_t)tensor__dtype_sizes[ind->dtype], ind->dtype);
        if (k < 0 || k >= classes) { tensor__fail(c->fn, "class value %lld is out of range [0, %lld)", (long long)k, (long long)classes); return 1; }
        out[p * classes + k] = 1;
        tensor__next_index(ind->ndim, ind->shape, idx);
    }
    return 0;
}

TENSOR_API tensor *tensor_one_hot(tensor *indices, int64_t num_classes) {
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_one_hot);
    TENSOR__CHECK_ARG(c.fn, indices);
    if (!tensor__is_int(indices->dtype)) return tensor__fail(c.fn, "indices must be an integer tensor, got %s", tensor__dtype_names[indices->dtype]);
    if (indices->ndim == TENSOR_MAX_DIMS) return tensor__fail(c.fn, "indices of shape %s already have the maximum of %d dims", tensor__shape_of(indices), TENSOR_MAX_DIMS);
    if (num_classes < -1) return tensor__fail(c.fn, "num_classes must be -1 or non-negative, got %lld", (long long)num_classes);
    if (indices->storage->device != TENSOR_CPU) return tensor__fail(c.fn, "indices must be on the CPU");
    int64_t n = tensor__numel_of(indices->ndim, indices->shape), idx[TENSOR_MAX_DIMS] = {0}, lo = 0, hi = -1;
    if (n == 0 && num_classes == -1) return tensor__fail(c.fn, "cannot infer the number of classes from an empty tensor");
    for (int64_t p = 0; p < n; p++) { /* the range of the values decides the output's shape */
        int64_t k = tensor__load_i64((char *)indices->storage->data + tensor__offset_of(indices, idx) * (int64_t)tensor__dtype_sizes[indices->dtype], indices->dtype);
        if (p == 0 || k < lo) lo = k;
        if (p == 0 || k > hi) hi = k;
        tensor__next_index(indices->ndim, indices->shape, idx);
    }
    if (n > 0 && lo < 0) return tensor__fail(c.fn, "class values must be non-negative, got %lld", (long long)lo);
    if (num_classes == -1 && hi == INT64_MAX) return tensor__fail(c.fn, "class value %lld gives too many classes", (long long)hi);
    if (num_classes == -1) num_classes = hi + 1;
    else if (n > 0 && hi >= num_classes) return tensor__fail(c.fn, "class value %lld must be smaller than num_classes %lld", (long long)hi, (long long)num_classes);
    int64_t shape[TENSOR_MAX_DIMS];
    for (int i = 0; i < indices->ndim; i++) shape[i] = indices->shape[i];
    shape[indices->ndim] = num_classes;
    c.n_in = 1;
    c.in[0] = indices;
    c.ip[0] = num_classes;
    c.out = tensor__new(c.fn, indices->ndim + 1, shape, TENSOR_I64, TENSOR_CPU);
    return c.out ? tensor__dispatch(&c) : NULL;
}
/* ==== end generator/parts/shape.h ==== */
/* ==== begin generator/parts/gemm.h ==== */
// >>gemm ---------------------------------------------------------------------------------------
/* Dense f32 and f64 GEMM with the BLIS/OpenBLAS structure:

       C[m, n] = (add ? C : 0) + A[m, k] @ B[k, n]

   A, B and C are addressed through element strides (element (i, p) of A at A[i * a_rs + p * a_cs]),
   so every transposition case is a stride pattern and nothing is copied except into the packed
   panels. The loops, outermost first:
     jc: NC columns of B at a time;
     pc: the k dim in equal blocks of at most KC; B[pc.., jc..] is packed into NR-column panels
         (KC x NR each, p-major), a KC x NC block that stays in L2/L3;
     ic: MC rows of A at a time; A[ic.., pc..] is packed into MR-row panels (MR x KC each), an
         MC x KC block that stays in L2;
     jr: one B panel (KC x NR) at a time, which stays in L1 while
     ir: every A panel of the block streams past it through the micro-kernel, which keeps one
         MR x NR tile of C in registers for the whole KC loop and then adds it to C.
   Packing pads the last panels with zeros, so the micro-kernel always computes a full tile; a
   partial tile at the edge of C is stored with masks (AVX-512) or through a small buffer, as is
   a tile of a C with a column stride.
   Kernel families (tensor__gemm_impl_*: micro-kernel, packing, unpacked tile, tile and block
   sizes), one picked per call by tensor__gemm_pick_* from the SIMD layer's choice, so
   TENSOR_SIMD=avx2 gives the AVX2 family and sse2 or scalar the portable one:
     avx512f: 12 x 32 f32 and 12 x 16 f64 (24 accumulators of the 32 zmm registers, two loads
       of B and 12 broadcasts of A per k step), MC 240 / 120, KC 256, NC 4096. Measured on one
       Zen 5 core (GFLOP/s at 512 / 1024 / 2048, f32): 12 x 32 236 / 230 / 234, 14 x 32 (28
       accumulators) 230 / 225 / 226 (KC 192; 134 at 2048 with KC 256), 8 x 48 234 / 214 / 199
       (KC 160, its B panel in L1), 6 x 64 242 / 207-234 / 180 (KC 128, C read and written 16
       times at k = 2048); f64 at 512 / 1024 / 2048: 12 x 16 120 / 111 / 116, 14 x 16 119 / 103
       / 102, 8 x 24 116 / 95 / 93. MC 144..480 and KC 192..384 with 12 x 32 within noise (3%)
       of each other; KC 256 keeps the B panel (32 KiB) and an A panel (12 KiB) in L1 (48 KiB).
       A last panel of at most 4 rows (a block of 64 rows) runs a 4-row kernel. Unpacked A B^T
       tile: 4 x 4 (16 lanes along k).
     avx2+fma: 6 x 16 f32 and 6 x 8 f64 (12 accumulators of 8 floats / 4 doubles, two loads of
       B and six broadcasts of A per k step); unpacked tile 3 x 4.
     portable: scalar C of the AVX2 tile shape (the only one under TENSOR_NO_SIMD).
     avx512bf16 (bf16 operands, f32 results; only where the CPU has avx512_bf16 and the AVX-512
       kernels run): the 12 x 32 f32 schedule with vdpbf16ps, k packed in pairs (KP 2), KC 512.
       Measured on one Zen 5 core: the kernel 525 GFLOP/s in L1 (f32: 265), 1024^3 480, 2048^3 470.
   f16 / bf16 operands into a family that reads f32 are converted to f32 as they are packed (SIMD
   rows, tensor__gemm_pack_*), so any family takes them with no copy of the operands.
   TENSOR_NO_AVX512 leaves the first and the bf16 one out. The SIMD kernels carry __attribute__((target)), so a
   plain -O2 build has them all. Packing: 8 x 8 transposes in registers where the unit stride
   runs along k; a row-major B is packed by the kernel's first pass over it (no separate copy).
   Two cases skip the blocked loops: a narrow n whose transposed problem (C^T = B^T A^T) fills
   the tiles much better runs transposed, and a row-major A times a column-major B (x @ w^T of a
   linear layer) with few rows or columns runs unpacked dot-product tiles (tensor__gemm_ntk).
   Threads (tensor__gemm_task): the N (or M) range is cut into slices of whole panels that the
   threads claim one by one, so a thread woken late takes fewer; the operand every slice needs in
   full is packed once, unit by unit by whichever threads are there, when it is small (else each
   thread packs its own blocks). Problems below TENSOR__GEMM_PAR_MIN multiply-adds stay on the
   calling thread. */

#if !defined(TENSOR_NO_SIMD) && (defined(__x86_64__) || defined(__i386__)) && (defined(__GNUC__) || defined(__clang__))
#define TENSOR__GEMM_AVX2 1
#ifdef __cplusplus
}
#endif
#include <immintrin.h>
#ifdef __cplusplus
extern "C" {
#endif
#else
#define TENSOR__GEMM_AVX2 0
#endif
/* TENSOR_NO_AVX512 leaves the AVX-512 kernels out (the AVX2 ones then serve an AVX-512 CPU). */
#if TENSOR__GEMM_AVX2 && !defined(TENSOR_NO_AVX512)
#define TENSOR__GEMM_AVX512 1
#else
#define TENSOR__GEMM_AVX512 0
#endif

/* Tile and block sizes of the AVX2 and portable kernels, for the caches of the machine they were
   measured on (L1d 32 KiB, L2 1 MiB per core, L3 32 MiB): a B panel (KC x NR: 16 KiB in f32 and
   f64) fills half of L1 with the A panel streaming past it; the packed A block (MC x KC: 264 KiB
   f32, 384 KiB f64) sits in L2 next to the B panels passing through; the packed B block (KC x NC:
   4 MiB f32, 8 MiB f64) sits in L3. Measured there (one thread, against the alternatives MC
   72..384, KC 192..384): within 2% of the best everywhere. */
#define TENSOR__SGEMM_MR 6
#define TENSOR__SGEMM_NR 16
#define TENSOR__DGEMM_MR 6
#define TENSOR__DGEMM_NR 8
#ifndef TENSOR__SGEMM_MC
#define TENSOR__SGEMM_MC 264
#endif
#ifndef TENSOR__SGEMM_KC
#define TENSOR__SGEMM_KC 256
#endif
#ifndef TENSOR__SGEMM_NC
#define TENSOR__SGEMM_NC 4096
#endif
#ifndef TENSOR__DGEMM_MC
#define TENSOR__DGEMM_MC 192
#endif
#ifndef TENSOR__DGEMM_KC
#define TENSOR__DGEMM_KC 256
#endif
#ifndef TENSOR__DGEMM_NC
#define TENSOR__DGEMM_NC 4096
#endif
/* Fewer multiply-adds than this run on the calling thread (waking the pool costs microseconds). */
#ifndef TENSOR__GEMM_PAR_MIN
#define TENSOR__GEMM_PAR_MIN ((int64_t)1 << 18)
#endif

/* One micro-kernel call: acc[MR][NR] = sum over p < kc of a[p * MR + i] * b[p * NR + j] (packed
   panels), then C[i * rs + j * cs] = acc (+ C when add) for i < mr, j < nr. */
typedef void (*tensor__sgemm_kernel_fn)(int64_t kc, const float *a, const float *b, float *C, int64_t rs, int64_t cs, int mr, int nr, int add);
typedef void (*tensor__dgemm_kernel_fn)(int64_t kc, const double *a, const double *b, double *C, int64_t rs, int64_t cs, int mr, int nr, int add);
/* Packing of an mc x kc block of A into MR-row panels, or a kc x nc block of B into NR-column
   panels (rows/cols past the end are zero); src points at elements of the family's input dtype. */
typedef void (*tensor__spack_fn)(float *dst, const void *src, int64_t rows, int64_t cols, int64_t rs, int64_t cs);
typedef void (*tensor__dpack_fn)(double *dst, const void *src, int64_t rows, int64_t cols, int64_t rs, int64_t cs);

/* Writes a finished tile: C = acc (+ C) for the mr x nr corner (C's element (i, j) at
   C[i * rs + j * cs]); acc rows are ld apart. */
#define TENSOR__DEFINE_GEMM_STORE(sfx, T)                                                                \
    static void tensor__gemm_store_##sfx(const T *acc, int ld, T *C, int64_t rs, int64_t cs, int mr, int nr, int add) { \
        for (int i = 0; i < mr; i++) {                                                                  \
            T *c = C + i * rs;                                                                          \
            const T *r = acc + i * ld;                                                                  \
            if (add) for (int j = 0; j < nr; j++) c[j * cs] += r[j];                                    \
            else for (int j = 0; j < nr; j++) c[j * cs] = r[j];                                         \
        }                                                                                               \
    }
TENSOR__DEFINE_GEMM_STORE(f32, float)
TENSOR__DEFINE_GEMM_STORE(f64, double)

/* The portable micro-kernel: the same tile in a local array; the j loop has a fixed trip count,
   so the compiler keeps rows of acc in vector registers where it can. */
#define TENSOR__DEFINE_GEMM_KERNEL_SCALAR(sfx, T, MR, NR)                                                \
    static void tensor__gemm_kernel_scalar_##sfx(int64_t kc, const T *a, const T *b, T *C, int64_t rs, int64_t cs, int mr, int nr, int add) { \
        T acc[MR * NR];                                                                                 \
        for (int i = 0; i < MR * NR; i++) acc[i] = 0;                                                   \
        for (int64_t p = 0; p < kc; p++, a += MR, b += NR)                                              \
            for (int i = 0; i < MR; i++) {                                                              \
                T ai = a[i];                                                                            \
                T *r = acc + i * NR;                                                                    \
                for (int j = 0; j < NR; j++) r[j] += ai * b[j];                                         \
            }                                                                                           \
        tensor__gemm_store_##sfx(acc, NR, C, rs, cs, mr, nr, add);                                      \
    }
TENSOR__DEFINE_GEMM_KERNEL_SCALAR(f32, float, TENSOR__SGEMM_MR, TENSOR__SGEMM_NR)
TENSOR__DEFINE_GEMM_KERNEL_SCALAR(f64, double, TENSOR__DGEMM_MR, TENSOR__DGEMM_NR)

/* Portable packing for a tile of MR x NR (any: one instance per tile shape, named by `shape`).
   A: panel after panel of MR rows, dst[p * MR + r] = A[(i0 + r) * rs + p * cs].
   B: panel after panel of NR columns, dst[p * NR + c] = B[p * rs + (j0 + c) * cs]. The common
   layouts (unit stride along the panel's short side, or along k) get loops of fixed trip count. */
#define TENSOR__DEFINE_GEMM_PACK(shape, T, MR, NR)                                                       \
    static TENSOR__UNUSED void tensor__gemm_pack_a_##shape(T *dst, const void *A_, int64_t mc, int64_t kc, int64_t rs, int64_t cs) { \
        const T *A = (const T *)A_;                                                                     \
        for (int64_t i0 = 0; i0 < mc; i0 += MR, dst += MR * kc) {                                       \
            int64_t rows = mc - i0 < MR ? mc - i0 : MR;                                                 \
            const T *s = A + i0 * rs;                                                                   \
            if (rows == MR && rs == 1) {                                                                \
                for (int64_t p = 0; p < kc; p++) memcpy(dst + p * MR, s + p * cs, MR * sizeof(T));      \
            } else if (rows == MR && cs == 1) {                                                         \
                for (int r = 0; r < MR; r++)                                                            \
                    for (int64_t p = 0; p < kc; p++) dst[p * MR + r] = s[r * rs + p];                   \
            } else {                                                                                    \
                for (int64_t p = 0; p < kc; p++) {                                                      \
                    int r = 0;                                                                          \
                    for (; r < rows; r++) dst[p * MR + r] = s[r * rs + p * cs];                         \
                    for (; r < MR; r++) dst[p * MR + r] = 0;                                            \
                }                                                                                       \
            }                                                                                           \
        }                                                                                               \
    }                                                                                                   \
    static TENSOR__UNUSED void tensor__gemm_pack_b_##shape(T *dst, const void *B_, int64_t kc, int64_t nc, int64_t rs, int64_t cs) { \
        const T *B = (const T *)B_;                                                                     \
        for (int64_t j0 = 0; j0 < nc; j0 += NR, dst += NR * kc) {                                       \
            int64_t cols = nc - j0 < NR ? nc - j0 : NR;                                                 \
            const T *s = B + j0 * cs;                                                                   \
            if (cols == NR && cs == 1) {                                                                \
                for (int64_t p = 0; p < kc; p++) memcpy(dst + p * NR, s + p * rs, NR * sizeof(T));      \
            } else if (cols == NR && rs == 1) {                                                         \
                for (int c = 0; c < NR; c++)                                                            \
                    for (int64_t p = 0; p < kc; p++) dst[p * NR + c] = s[c * cs + p];                   \
            } else {                                                                                    \
                for (int64_t p = 0; p < kc; p++) {                                                      \
                    int c = 0;                                                                          \
                    for (; c < cols; c++) dst[p * NR + c] = s[p * rs + c * cs];                         \
                    for (; c < NR; c++) dst[p * NR + c] = 0;                                            \
                }                                                                                       \
            }                                                                                           \
        }                                                                                               \
    }
TENSOR__DEFINE_GEMM_PACK(f32_6x16, float, 6, 16)
TENSOR__DEFINE_GEMM_PACK(f64_6x8, double, 6, 8)

#if TENSOR__GEMM_AVX2
#define TENSOR__AVX2 __attribute__((target("avx2,fma")))

#ifndef TENSOR__GEMM_PF
#define TENSOR__GEMM_PF 16 /* rows of B ahead that the packing kernel prefetches */
#endif
/* 6 x 16 f32: c<row><half>; per k step two aligned loads of B, six broadcasts of A, 12 FMAs.
   The k loop is unrolled by four (the panels are read at fixed offsets from one pointer). */
#define TENSOR__SK_FMAS(q, b0, b1)                                                                       \
    do {                                                                                                \
        __m256 av;                                                                                      \
        av = _mm256_broadcast_ss(a + 6 * (q) + 0); c00 = _mm256_fmadd_ps(av, b0, c00); c01 = _mm256_fmadd_ps(av, b1, c01); \
        av = _mm256_broadcast_ss(a + 6 * (q) + 1); c10 = _mm256_fmadd_ps(av, b0, c10); c11 = _mm256_fmadd_ps(av, b1, c11); \
        av = _mm256_broadcast_ss(a + 6 * (q) + 2); c20 = _mm256_fmadd_ps(av, b0, c20); c21 = _mm256_fmadd_ps(av, b1, c21); \
        av = _mm256_broadcast_ss(a + 6 * (q) + 3); c30 = _mm256_fmadd_ps(av, b0, c30); c31 = _mm256_fmadd_ps(av, b1, c31); \
        av = _mm256_broadcast_ss(a + 6 * (q) + 4); c40 = _mm256_fmadd_ps(av, b0, c40); c41 = _mm256_fmadd_ps(av, b1, c41); \
        av = _mm256_broadcast_ss(a + 6 * (q) + 5); c50 = _mm256_fmadd_ps(av, b0, c50); c51 = _mm256_fmadd_ps(av, b1, c51); \
    } while (0)
#define TENSOR__SK_STEP(q)                                                                               \
    do {                                                                                                \
        __m256 b0 = _mm256_load_ps(b + 16 * (q)), b1 = _mm256_load_ps(b + 16 * (q) + 8);                \
        TENSOR__SK_FMAS(q, b0, b1);                                                                     \
    } while (0)
/* The same step reading B in place (16 contiguous floats per k step, bs rows apart) and writing
   the packed panel on the way, for the later A panels. */
#define TENSOR__SK_STEP_PACK(q)                                                                          \
    do {                                                                                                \
        _mm_prefetch((const char *)(bsrc + ((q) + TENSOR__GEMM_PF) * bs), _MM_HINT_T0);                \
        __m256 b0 = _mm256_loadu_ps(bsrc + (q) * bs), b1 = _mm256_loadu_ps(bsrc + (q) * bs + 8);        \
        _mm256_store_ps(b + 16 * (q), b0);                                                              \
        _mm256_store_ps(b + 16 * (q) + 8, b1);                                                          \
        TENSOR__SK_FMAS(q, b0, b1);                                                                     \
    } while (0)
#define TENSOR__SK_ROW(r, x0, x1)                                                                        \
    do {                                                                                                \
        float *c_ = C + (r) * rs;                                                                       \
        if (add) { x0 = _mm256_add_ps(x0, _mm256_loadu_ps(c_)); x1 = _mm256_add_ps(x1, _mm256_loadu_ps(c_ + 8)); } \
        _mm256_storeu_ps(c_, x0);                                                                       \
        _mm256_storeu_ps(c_ + 8, x1);                                                                   \
    } while (0)
#define TENSOR__SK_BEGIN                                                                                 \
    __m256 c00 = _mm256_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;            \
    __m256 c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;                            \
    bool full = mr == 6 && nr == 16 && cs == 1;                                                         \
    if (full)                                                                                           \
        for (int r = 0; r < 6; r++) { _mm_prefetch((const char *)(C + r * rs), _MM_HINT_T0); _mm_prefetch((const char *)(C + r * rs + 15), _MM_HINT_T0); } \
    int64_t p = 0
#define TENSOR__SK_END                                                                                   \
    if (full) {                                                                                         \
        TENSOR__SK_ROW(0, c00, c01);                                                                    \
        TENSOR__SK_ROW(1, c10, c11);                                                                    \
        TENSOR__SK_ROW(2, c20, c21);                                                                    \
        TENSOR__SK_ROW(3, c30, c31);                                                                    \
        TENSOR__SK_ROW(4, c40, c41);                                                                    \
        TENSOR__SK_ROW(5, c50, c51);                                                                    \
        return;                                                                                         \
    }                                                                                                   \
    float acc[6 * 16];                                                                                  \
    _mm256_storeu_ps(acc + 0, c00); _mm256_storeu_ps(acc + 8, c01);                                     \
    _mm256_storeu_ps(acc + 16, c10); _mm256_storeu_ps(acc + 24, c11);                                   \
    _mm256_storeu_ps(acc + 32, c20); _mm256_storeu_ps(acc + 40, c21);                                   \
    _mm256_storeu_ps(acc + 48, c30); _mm256_storeu_ps(acc + 56, c31);                                   \
    _mm256_storeu_ps(acc + 64, c40); _mm256_storeu_ps(acc + 72, c41);                                   \
    _mm256_storeu_ps(acc + 80, c50); _mm256_storeu_ps(acc + 88, c51);                                   \
    _mm256_zeroupper(); /* gcc adds none before this call: the SSE store would run dirty */             \
    tensor__gemm_store_f32(acc, 16, C, rs, cs, mr, nr, add)
TENSOR__AVX2 static void tensor__gemm_kernel_avx2_f32(int64_t kc, const float *a, const float *b, float *C, int64_t rs, int64_t cs, int mr, int nr, int add) {
    TENSOR__SK_BEGIN;
    for (; p + 4 <= kc; p += 4, a += 24, b += 64) {
        TENSOR__SK_STEP(0);
        TENSOR__SK_STEP(1);
        TENSOR__SK_STEP(2);
        TENSOR__SK_STEP(3);
    }
    for (; p < kc; p++, a += 6, b += 16) TENSOR__SK_STEP(0);
    TENSOR__SK_END;
}
/* The kernel for the first A panel against a B panel of 16 columns with unit column stride: it
   reads B in place (rows bs apart) and packs the panel into b as it goes, which saves the
   separate packing pass over B where few A panels share each B panel. */
TENSOR__AVX2 static void tensor__gemm_kernel_pack_avx2_f32(int64_t kc, const float *a, float *b, const float *bsrc, int64_t bs, float *C,
                                                          int64_t rs, int64_t cs, int mr, int nr, int add) {
    TENSOR__SK_BEGIN;
    for (; p + 4 <= kc; p += 4, a += 24, b += 64, bsrc += 4 * bs) {
        TENSOR__SK_STEP_PACK(0);
        TENSOR__SK_STEP_PACK(1);
        TENSOR__SK_STEP_PACK(2);
        TENSOR__SK_STEP_PACK(3);
    }
    for (; p < kc; p++, a += 6, b += 16, bsrc += bs) TENSOR__SK_STEP_PACK(0);
    TENSOR__SK_END;
}

/* 6 x 8 f64: the same schedule with 4 doubles per register. */
#define TENSOR__DK_STEP(q)                                                                               \
    do {                                                                                                \
        __m256d b0 = _mm256_load_pd(b + 8 * (q)), b1 = _mm256_load_pd(b + 8 * (q) + 4), av;             \
        av = _mm256_broadcast_sd(a + 6 * (q) + 0); c00 = _mm256_fmadd_pd(av, b0, c00); c01 = _mm256_fmadd_pd(av, b1, c01); \
        av = _mm256_broadcast_sd(a + 6 * (q) + 1); c10 = _mm256_fmadd_pd(av, b0, c10); c11 = _mm256_fmadd_pd(av, b1, c11); \
        av = _mm256_broadcast_sd(a + 6 * (q) + 2); c20 = _mm256_fmadd_pd(av, b0, c20); c21 = _mm256_fmadd_pd(av, b1, c21); \
        av = _mm256_broadcast_sd(a + 6 * (q) + 3); c30 = _mm256_fmadd_pd(av, b0, c30); c31 = _mm256_fmadd_pd(av, b1, c31); \
        av = _mm256_broadcast_sd(a + 6 * (q) + 4); c40 = _mm256_fmadd_pd(av, b0, c40); c41 = _mm256_fmadd_pd(av, b1, c41); \
        av = _mm256_broadcast_sd(a + 6 * (q) + 5); c50 = _mm256_fmadd_pd(av, b0, c50); c51 = _mm256_fmadd_pd(av, b1, c51); \
    } while (0)
#define TENSOR__DK_ROW(r, x0, x1)                                                                        \
    do {                                                                                                \
        double *c_ = C + (r) * rs;                                                                      \
        if (add) { x0 = _mm256_add_pd(x0, _mm256_loadu_pd(c_)); x1 = _mm256_add_pd(x1, _mm256_loadu_pd(c_ + 4)); } \
        _mm256_storeu_pd(c_, x0);                                                                       \
        _mm256_storeu_pd(c_ + 4, x1);                                                                   \
    } while (0)
TENSOR__AVX2 static void tensor__gemm_kernel_avx2_f64(int64_t kc, const double *a, const double *b, double *C, int64_t rs, int64_t cs, int mr, int nr, int add) {
    __m256d c00 = _mm256_setzero_pd(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00;
    __m256d c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00;
    bool full = mr == 6 && nr == 8 && cs == 1;
    if (full)
        for (int r = 0; r < 6; r++) { _mm_prefetch((const char *)(C + r * rs), _MM_HINT_T0); _mm_prefetch((const char *)(C + r * rs + 7), _MM_HINT_T0); }
    int64_t p = 0;
    for (; p + 4 <= kc; p += 4, a += 24, b += 32) {
        TENSOR__DK_STEP(0);
        TENSOR__DK_STEP(1);
        TENSOR__DK_STEP(2);
        TENSOR__DK_STEP(3);
    }
    for (; p < kc; p++, a += 6, b += 8) TENSOR__DK_STEP(0);
    if (full) {
        TENSOR__DK_ROW(0, c00, c01);
        TENSOR__DK_ROW(1, c10, c11);
        TENSOR__DK_ROW(2, c20, c21);
        TENSOR__DK_ROW(3, c30, c31);
        TENSOR__DK_ROW(4, c40, c41);
        TENSOR__DK_ROW(5, c50, c51);
        return;
    }
    double acc[6 * 8];
    _mm256_storeu_pd(acc + 0, c00); _mm256_storeu_pd(acc + 4, c01);
    _mm256_storeu_pd(acc + 8, c10); _mm256_storeu_pd(acc + 12, c11);
    _mm256_storeu_pd(acc + 16, c20); _mm256_storeu_pd(acc + 20, c21);
    _mm256_storeu_pd(acc + 24, c30); _mm256_storeu_pd(acc + 28, c31);
    _mm256_storeu_pd(acc + 32, c40); _mm256_storeu_pd(acc + 36, c41);
    _mm256_storeu_pd(acc + 40, c50); _mm256_storeu_pd(acc + 44, c51);
    _mm256_zeroupper(); /* as in the f32 kernel */
    tensor__gemm_store_f64(acc, 8, C, rs, cs, mr, nr, add);
}

/* In-register transpose of an 8 x 8 f32 block (r[i] row i in, column i out). */
TENSOR__AVX2 static inline void tensor__transpose8_f32(__m256 *r) {
    __m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
    __m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
    __m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
    __m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
    __m256 s0 = _mm256_shuffle_ps(t0, t2, 0x44), s1 = _mm256_shuffle_ps(t0, t2, 0xEE);
    __m256 s2 = _mm256_shuffle_ps(t1, t3, 0x44), s3 = _mm256_shuffle_ps(t1, t3, 0xEE);
    __m256 s4 = _mm256_shuffle_ps(t4, t6, 0x44), s5 = _mm256_shuffle_ps(t4, t6, 0xEE);
    __m256 s6 = _mm256_shuffle_ps(t5, t7, 0x44), s7 = _mm256_shuffle_ps(t5, t7, 0xEE);
    r[0] = _mm256_permute2f128_ps(s0, s4, 0x20); r[1] = _mm256_permute2f128_ps(s1, s5, 0x20);
    r[2] = _mm256_permute2f128_ps(s2, s6, 0x20); r[3] = _mm256_permute2f128_ps(s3, s7, 0x20);
    r[4] = _mm256_permute2f128_ps(s0, s4, 0x31); r[5] = _mm256_permute2f128_ps(s1, s5, 0x31);
    r[6] = _mm256_permute2f128_ps(s2, s6, 0x31); r[7] = _mm256_permute2f128_ps(s3, s7, 0x31);
}

/* Packing of f32 operands whose unit stride runs along k (A row-major, B column-major): the
   portable loops gather one element per row per k step; these transpose 8 x 8 blocks in
   registers. An A panel takes 6 rows (two zero rows complete the block) and writes each k step's
   8 lanes where the next step's 6 start: in order, every store overwrites the previous one's 2
   spare lanes; the panel's last step stores 6. */
TENSOR__AVX2 static void tensor__gemm_pack_a_avx2_f32(float *dst, const void *A_, int64_t mc, int64_t kc, int64_t rs, int64_t cs) {
    const float *A = (const float *)A_;
    if (cs != 1) { tensor__gemm_pack_a_f32_6x16(dst, A, mc, kc, rs, cs); return; }
    for (int64_t i0 = 0; i0 < mc; i0 += 6, dst += 6 * kc) {
        if (mc - i0 < 6) { tensor__gemm_pack_a_f32_6x16(dst, A + i0 * rs, mc - i0, kc, rs, cs); break; }
        const float *s = A + i0 * rs;
        int64_t p = 0;
        for (; p + 8 <= kc; p += 8) {
            __m256 r[8];
            for (int i = 0; i < 6; i++) r[i] = _mm256_loadu_ps(s + i * rs + p);
            r[6] = r[7] = _mm256_setzero_ps();
            tensor__transpose8_f32(r);
            for (int q = 0; q < 7; q++) _mm256_storeu_ps(dst + (p + q) * 6, r[q]);
            if (p + 8 < kc) {
                _mm256_storeu_ps(dst + (p + 7) * 6, r[7]);
            } else { /* the panel's last step: 6 lanes exactly, as another thread may be packing the next panel */
                _mm_storeu_ps(dst + (p + 7) * 6, _mm256_castps256_ps128(r[7]));
                _mm_storel_pi((__m64 *)(void *)(dst + (p + 7) * 6 + 4), _mm256_extractf128_ps(r[7], 1));
            }
        }
        for (; p < kc; p++)
            for (int i = 0; i < 6; i++) dst[p * 6 + i] = s[i * rs + p];
    }
}
TENSOR__AVX2 static void tensor__gemm_pack_b_avx2_f32(float *dst, const void *B_, int64_t kc, int64_t nc, int64_t rs, int64_t cs) {
    const float *B = (const float *)B_;
    if (cs == 1) { /* row-major: each k step copies 16 contiguous floats */
        for (int64_t j0 = 0; j0 + 16 <= nc; j0 += 16, dst += 16 * kc)
            for (int64_t p = 0; p < kc; p++) {
                _mm256_store_ps(dst + p * 16, _mm256_loadu_ps(B + p * rs + j0));
                _mm256_store_ps(dst + p * 16 + 8, _mm256_loadu_ps(B + p * rs + j0 + 8));
            }
        if (nc % 16) tensor__gemm_pack_b_f32_6x16(dst, B + (nc - nc % 16), kc, nc % 16, rs, cs);
        return;
    }
    if (rs != 1) { tensor__gemm_pack_b_f32_6x16(dst, B, kc, nc, rs, cs); return; }
    for (int64_t j0 = 0; j0 < nc; j0 += 16, dst += 16 * kc) {
        if (nc - j0 < 16) { tensor__gemm_pack_b_f32_6x16(dst, B + j0 * cs, kc, nc - j0, rs, cs); break; }
        const float *s = B + j0 * cs;
        int64_t p = 0;
        for (; p + 8 <= kc; p += 8)
            for (int h = 0; h < 2; h++) {
                __m256 r[8];
                for (int c = 0; c < 8; c++) r[c] = _mm256_loadu_ps(s + (h * 8 + c) * cs + p);
                tensor__transpose8_f32(r);
                for (int q = 0; q < 8; q++) _mm256_store_ps(dst + (p + q) * 16 + h * 8, r[q]);
            }
        for (; p < kc; p++)
            for (int c = 0; c < 16; c++) dst[p * 16 + c] = s[c * cs + p];
    }
}

/* The unpacked path for A row-major and B column-major (unit stride along k in both: x @ w^T of a
   linear layer). The vectors run along k: a 3 x 4 tile of C keeps 12 accumulators of partial dot
   products (3 rows of A and 4 columns of B loaded per vector of k, 12 FMAs: as many FMAs per load
   as the outer-product kernel), reduced across lanes at the end, four results at a time. Nothing
   is packed: the rows and columns are read in place as 7 sequential streams. An edge tile repeats
   its first row or column in the missing ones and drops their results; the end of k is read with
   a masked load. */
TENSOR__AVX2 static inline __m128 tensor__hsum4_f32(__m256 a, __m256 b, __m256 c, __m256 d) {
    __m256 t = _mm256_hadd_ps(_mm256_hadd_ps(a, b), _mm256_hadd_ps(c, d));
    return _mm_add_ps(_mm256_castps256_ps128(t), _mm256_extractf128_ps(t, 1)); /* sums of a, b, c, d */
}
TENSOR__AVX2 static inline __m256d tensor__hsum4_f64(__m256d a, __m256d b, __m256d c, __m256d d) {
    __m256d ab = _mm256_hadd_pd(a, b), cd = _mm256_hadd_pd(c, d); /* a01 b01 a23 b23, c01 d01 c23 d23 */
    return _mm256_add_pd(_mm256_permute2f128_pd(ab, cd, 0x20), _mm256_permute2f128_pd(ab, cd, 0x31));
}
TENSOR__AVX2 static inline void tensor__nt_out_f32(__m128 v, float *C, int64_t cs, int nr, int add) {
    float r[4];
    if (nr == 4 && cs == 1) {
        if (add) v = _mm_add_ps(v, _mm_loadu_ps(C));
        _mm_storeu_ps(C, v);
        return;
    }
    _mm_storeu_ps(r, v);
    for (int j = 0; j < nr; j++) C[j * cs] = add ? C[j * cs] + r[j] : r[j];
}
TENSOR__AVX2 static inline void tensor__nt_out_f64(__m256d v, double *C, int64_t cs, int nr, int add) {
    double r[4];
    if (nr == 4 && cs == 1) {
        if (add) v = _mm256_add_pd(v, _mm256_loadu_pd(C));
        _mm256_storeu_pd(C, v);
        return;
    }
    _mm256_storeu_pd(r, v);
    for (int j = 0; j < nr; j++) C[j * cs] = add ? C[j * cs] + r[j] : r[j];
}
/* C[i, j] (+)= sum_p A[i * lda + p] B[j * ldb + p] for i < mr <= 3, j < nr <= 4; C's (i, j) at
   C[i * rs + j * cs]. */
#define TENSOR__DEFINE_GEMM_NT(isa, TARGET, sfx, T, V, W, SET0, LOADU, MASKLOAD, MI, MASK, FMADD, HSUM)      \
    TARGET static void tensor__gemm_ntk_##isa##_##sfx(int64_t kc, const T *A, int64_t lda, const T *B, int64_t ldb, T *C, \
                                                   int64_t rs, int64_t cs, int mr, int nr, int add) {  \
        V c00 = SET0(), c01 = c00, c02 = c00, c03 = c00, c10 = c00, c11 = c00, c12 = c00, c13 = c00;    \
        V c20 = c00, c21 = c00, c22 = c00, c23 = c00;                                                   \
        const T *a0 = A, *a1 = mr > 1 ? A + lda : A, *a2 = mr > 2 ? A + 2 * lda : A;                   \
        const T *b0 = B, *b1 = nr > 1 ? B + ldb : B, *b2 = nr > 2 ? B + 2 * ldb : B, *b3 = nr > 3 ? B + 3 * ldb : B; \
        int64_t p = 0;                                                                                  \
        for (; p + W <= kc; p += W) {                                                                   \
            V x0 = LOADU(a0 + p), x1 = LOADU(a1 + p), x2 = LOADU(a2 + p), y;                            \
            y = LOADU(b0 + p); c00 = FMADD(x0, y, c00); c10 = FMADD(x1, y, c10); c20 = FMADD(x2, y, c20); \
            y = LOADU(b1 + p); c01 = FMADD(x0, y, c01); c11 = FMADD(x1, y, c11); c21 = FMADD(x2, y, c21); \
            y = LOADU(b2 + p); c02 = FMADD(x0, y, c02); c12 = FMADD(x1, y, c12); c22 = FMADD(x2, y, c22); \
            y = LOADU(b3 + p); c03 = FMADD(x0, y, c03); c13 = FMADD(x1, y, c13); c23 = FMADD(x2, y, c23); \
        }                                                                                               \
        if (p < kc) { /* lanes past the end load as zeros */                                            \
            MI mask = MASK(kc - p);                                                                     \
            V x0 = MASKLOAD(a0 + p, mask), x1 = MASKLOAD(a1 + p, mask), x2 = MASKLOAD(a2 + p, mask), y;  \
            y = MASKLOAD(b0 + p, mask); c00 = FMADD(x0, y, c00); c10 = FMADD(x1, y, c10); c20 = FMADD(x2, y, c20); \
            y = MASKLOAD(b1 + p, mask); c01 = FMADD(x0, y, c01); c11 = FMADD(x1, y, c11); c21 = FMADD(x2, y, c21); \
            y = MASKLOAD(b2 + p, mask); c02 = FMADD(x0, y, c02); c12 = FMADD(x1, y, c12); c22 = FMADD(x2, y, c22); \
            y = MASKLOAD(b3 + p, mask); c03 = FMADD(x0, y, c03); c13 = FMADD(x1, y, c13); c23 = FMADD(x2, y, c23); \
        }                                                                                               \
        tensor__nt_out_##sfx(HSUM(c00, c01, c02, c03), C, cs, nr, add);                                 \
        if (mr > 1) tensor__nt_out_##sfx(HSUM(c10, c11, c12, c13), C + rs, cs, nr, add);                \
        if (mr > 2) tensor__nt_out_##sfx(HSUM(c20, c21, c22, c23), C + 2 * rs, cs, nr, add);            \
    }
#define TENSOR__NT_MASK_f32(rem) _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(rem)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
#define TENSOR__NT_MASK_f64(rem) _mm256_cmpgt_epi64(_mm256_set1_epi64x((long long)(rem)), _mm256_setr_epi64x(0, 1, 2, 3))
TENSOR__DEFINE_GEMM_NT(avx2, TENSOR__AVX2, f32, float, __m256, 8, _mm256_setzero_ps, _mm256_loadu_ps, _mm256_maskload_ps, __m256i,
                       TENSOR__NT_MASK_f32, _mm256_fmadd_ps, tensor__hsum4_f32)
TENSOR__DEFINE_GEMM_NT(avx2, TENSOR__AVX2, f64, double, __m256d, 4, _mm256_setzero_pd, _mm256_loadu_pd, _mm256_maskload_pd, __m256i,
                       TENSOR__NT_MASK_f64, _mm256_fmadd_pd, tensor__hsum4_f64)
#endif

#if TENSOR__GEMM_AVX512
#define TENSOR__AVX512 __attribute__((target("avx512f,avx2,fma")))
/* Tile of the AVX-512 kernels: MR rows of A broadcast against NV vectors of B (16 f32 / 8 f64 lanes
   each), MR x NV accumulators of the 32 zmm registers. */
#ifndef TENSOR__SGEMM512_MR
#define TENSOR__SGEMM512_MR 12
#endif
#ifndef TENSOR__SGEMM512_NV
#define TENSOR__SGEMM512_NV 2
#endif
#ifndef TENSOR__DGEMM512_MR
#define TENSOR__DGEMM512_MR 12
#endif
#ifndef TENSOR__DGEMM512_NV
#define TENSOR__DGEMM512_NV 2
#endif
#define TENSOR__SGEMM512_NR (16 * TENSOR__SGEMM512_NV)
#define TENSOR__DGEMM512_NR (8 * TENSOR__DGEMM512_NV)
#ifndef TENSOR__SGEMM512_MC
#define TENSOR__SGEMM512_MC 240
#endif
#ifndef TENSOR__SGEMM512_KC
#define TENSOR__SGEMM512_KC 256
#endif
#ifndef TENSOR__SGEMM512_NC
#define TENSOR__SGEMM512_NC 4096
#endif
#ifndef TENSOR__DGEMM512_MC
#define TENSOR__DGEMM512_MC 120
#endif
#ifndef TENSOR__DGEMM512_KC
#define TENSOR__DGEMM512_KC 256
#endif
#ifndef TENSOR__DGEMM512_NC
#define TENSOR__DGEMM512_NC 4096
#endif

/* The type's vector operations, named so one kernel body serves f32 and f64. */
#define TENSOR__Z_V_f32 __m512
#define TENSOR__Z_M_f32 __mmask16
#define TENSOR__Z_L_f32 16
#define TENSOR__Z_ZERO_f32 _mm512_setzero_ps
#define TENSOR__Z_SET1_f32 _mm512_set1_ps
#define TENSOR__Z_LOAD_f32 _mm512_load_ps
#define TENSOR__Z_LOADU_f32 _mm512_loadu_ps
#define TENSOR__Z_STORE_f32 _mm512_store_ps
#define TENSOR__Z_STOREU_f32 _mm512_storeu_ps
#define TENSOR__Z_FMADD_f32 _mm512_fmadd_ps
#define TENSOR__Z_ADD_f32 _mm512_add_ps
#define TENSOR__Z_MLOADU_f32 _mm512_maskz_loadu_ps
#define TENSOR__Z_MSTOREU_f32 _mm512_mask_storeu_ps
#define TENSOR__Z_V_f64 __m512d
#define TENSOR__Z_M_f64 __mmask8
#define TENSOR__Z_L_f64 8
#define TENSOR__Z_ZERO_f64 _mm512_setzero_pd
#define TENSOR__Z_SET1_f64 _mm512_set1_pd
#define TENSOR__Z_LOAD_f64 _mm512_load_pd
#define TENSOR__Z_LOADU_f64 _mm512_loadu_pd
#define TENSOR__Z_STORE_f64 _mm512_store_pd
#define TENSOR__Z_STOREU_f64 _mm512_storeu_pd
#define TENSOR__Z_FMADD_f64 _mm512_fmadd_pd
#define TENSOR__Z_ADD_f64 _mm512_add_pd
#define TENSOR__Z_MLOADU_f64 _mm512_maskz_loadu_pd
#define TENSOR__Z_MSTOREU_f64 _mm512_mask_storeu_pd

/* The micro-kernel body: c[i][v] += a[i] * B vector v for MR rows and NV vectors per k step (the
   loops have fixed trip counts and are unrolled, so c lives in registers and each broadcast of A
   folds into its FMAs as a memory operand); the first ROWS of the panel's MR rows are computed. LOADB(sfx, v) gives B vector v of this k step; STEPEND
   advances what it reads. Then the tile goes to C: full rows of unit column stride directly,
   the last vector of a narrower tile with a masked load/store; a C with a column stride through a
   buffer and the portable store. */
#define TENSOR__ZK_BODY(sfx, T, MR, ROWS, NV, LOADB, STEPEND)                                            \
    enum { L_ = TENSOR__Z_L_##sfx };                                                                    \
    TENSOR__Z_V_##sfx c[ROWS][NV];                                                                      \
    _Pragma("GCC unroll 32") for (int i = 0; i < ROWS; i++)                                               \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) c[i][v] = TENSOR__Z_ZERO_##sfx();          \
    if (cs == 1)                                                                                        \
        for (int i = 0; i < mr; i++) {                                                                  \
            _mm_prefetch((const char *)(C + i * rs), _MM_HINT_T0);                                      \
            _mm_prefetch((const char *)(C + i * rs + NV * L_ - 1), _MM_HINT_T0);                        \
        }                                                                                               \
    _Pragma("GCC unroll 4") for (int64_t p = 0; p < kc; p++) {                                          \
        TENSOR__Z_V_##sfx bv[NV];                                                                       \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) bv[v] = LOADB(sfx, v);                        \
        _Pragma("GCC unroll 32") for (int i = 0; i < ROWS; i++) {                                         \
            TENSOR__Z_V_##sfx av = TENSOR__Z_SET1_##sfx(a[i]);                                          \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) c[i][v] = TENSOR__Z_FMADD_##sfx(av, bv[v], c[i][v]); \
        }                                                                                               \
        a += MR;                                                                                        \
        STEPEND;                                                                                        \
    }                                                                                                   \
    if (cs == 1) {                                                                                      \
        _Pragma("GCC unroll 32") for (int i = 0; i < ROWS; i++) {                                         \
            if (i >= mr) break;                                                                         \
            T *cr = C + i * rs;                                                                         \
            _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) {                                      \
                int lanes = nr - v * L_;                                                                \
                TENSOR__Z_V_##sfx x = c[i][v];                                                          \
                if (lanes >= L_) {                                                                      \
                    if (add) x = TENSOR__Z_ADD_##sfx(x, TENSOR__Z_LOADU_##sfx(cr + v * L_));            \
                    TENSOR__Z_STOREU_##sfx(cr + v * L_, x);                                             \
                } else if (lanes > 0) {                                                                 \
                    TENSOR__Z_M_##sfx mk = (TENSOR__Z_M_##sfx)((1u << lanes) - 1);                      \
                    if (add) x = TENSOR__Z_ADD_##sfx(x, TENSOR__Z_MLOADU_##sfx(mk, cr + v * L_));       \
                    TENSOR__Z_MSTOREU_##sfx(cr + v * L_, mk, x);                                        \
                }                                                                                       \
            }                                                                                           \
        }                                                                                               \
        return;                                                                                         \
    }                                                                                                   \
    T acc[ROWS * NV * L_];                                                                              \
    _Pragma("GCC unroll 32") for (int i = 0; i < ROWS; i++)                                               \
        _Pragma("GCC unroll 4") for (int v = 0; v < NV; v++) TENSOR__Z_STOREU_##sfx(acc + (i * NV + v) * L_, c[i][v]); \
    _mm256_zeroupper(); /* before the SSE code of the portable store */                                 \
    tensor__gemm_store_##sfx(acc, NV * L_, C, rs, cs, mr, nr, add)

#define TENSOR__ZK_LOADB_PANEL(sfx, v) TENSOR__Z_LOAD_##sfx(b + (v) * TENSOR__Z_L_##sfx)
/* reads B in place and writes the packed panel on the way */
#define TENSOR__ZK_LOADB_SRC(sfx, v)                                                                     \
    (bx_ = TENSOR__Z_LOADU_##sfx(bsrc + (v) * TENSOR__Z_L_##sfx), TENSOR__Z_STORE_##sfx(b + (v) * TENSOR__Z_L_##sfx, bx_), bx_)
#define TENSOR__DEFINE_GEMM_KERNEL_AVX512(sfx, T, MR, NV)                                                \
    TENSOR__AVX512 static void tensor__gemm_kernel_avx512_##sfx(int64_t kc, const T *a, const T *b, T *C, int64_t rs, int64_t cs, \
                                                               int mr, int nr, int add) {               \
        TENSOR__ZK_BODY(sfx, T, MR, MR, NV, TENSOR__ZK_LOADB_PANEL, b += NV * L_);                      \
    }                                                                                                   \
    /* the same for a last panel of at most MR / 3 rows (a block of 64 rows: 5 full panels and 4    \
       rows; 64 x 784 x 256: 199 -> 216 GFLOP/s) */                                                     \
    TENSOR__AVX512 static void tensor__gemm_kernel_short_avx512_##sfx(int64_t kc, const T *a, const T *b, T *C, int64_t rs, int64_t cs, \
                                                                     int mr, int nr, int add) {         \
        TENSOR__ZK_BODY(sfx, T, MR, MR / 3, NV, TENSOR__ZK_LOADB_PANEL, b += NV * L_);                  \
    }                                                                                                   \
    /* the kernel that packs the B panel on its first pass (as the AVX2 one) */                        \
    TENSOR__AVX512 static void tensor__gemm_kernel_pack_avx512_##sfx(int64_t kc, const T *a, T *b, const T *bsrc, int64_t bs, T *C, \
                                                                    int64_t rs, int64_t cs, int mr, int nr, int add) { \
        TENSOR__Z_V_##sfx bx_;                                                                          \
        TENSOR__ZK_BODY(sfx, T, MR, MR, NV, TENSOR__ZK_LOADB_SRC,                                       \
                        (_mm_prefetch((const char *)(bsrc + TENSOR__GEMM_PF * bs), _MM_HINT_T0), b += NV * L_, bsrc += bs)); \
    }
TENSOR__DEFINE_GEMM_KERNEL_AVX512(f32, float, TENSOR__SGEMM512_MR, TENSOR__SGEMM512_NV)
TENSOR__DEFINE_GEMM_KERNEL_AVX512(f64, double, TENSOR__DGEMM512_MR, TENSOR__DGEMM512_NV)

/* Packing for the AVX-512 tiles. The portable loops for any layout and for the edge panels; for
   f32, the layouts of the bench's and the layers' products in registers: a row-major B copies
   NR floats per k step; A row-major (or B column-major), whose unit stride runs along k, goes
   through 8 x 8 transposes: 8 rows (zero rows past the panel's MR) by 8 steps of k, each step's
   lanes stored with a mask where the panel has fewer than 8 rows left. */
TENSOR__DEFINE_GEMM_PACK(f32_512, float, TENSOR__SGEMM512_MR, TENSOR__SGEMM512_NR)
TENSOR__DEFINE_GEMM_PACK(f64_512, double, TENSOR__DGEMM512_MR, TENSOR__DGEMM512_NR)
TENSOR__AVX512 static void tensor__gemm_pack_a_avx512_f32(float *dst, const void *A_, int64_t mc, int64_t kc, int64_t rs, int64_t cs) {
    const float *A = (const float *)A_;
    enum { MR = TENSOR__SGEMM512_MR };
    if (cs != 1) { tensor__gemm_pack_a_f32_512(dst, A, mc, kc, rs, cs); return; }
    for (int64_t i0 = 0; i0 < mc; i0 += MR, dst += MR * kc) {
        if (mc - i0 < MR) { tensor__gemm_pack_a_f32_512(dst, A + i0 * rs, mc - i0, kc, rs, cs); break; }
        const float *s = A + i0 * rs;
        int64_t p = 0;
        for (; p + 8 <= kc; p += 8)
            for (int r0 = 0; r0 < MR; r0 += 8) {
                int rows = MR - r0 < 8 ? MR - r0 : 8;
                __m256 r[8];
                for (int i = 0; i < 8; i++) r[i] = i < rows ? _mm256_loadu_ps(s + (r0 + i) * rs + p) : _mm256_setzero_ps();
                tensor__transpose8_f32(r);
                __mmask16 mk = (__mmask16)((1u << rows) - 1);
                for (int q = 0; q < 8; q++) _mm512_mask_storeu_ps(dst + (p + q) * MR + r0, mk, _mm512_castps256_ps512(r[q]));
            }
        for (; p < kc; p++)
            for (int i = 0; i < MR; i++) dst[p * MR + i] = s[i * rs + p];
    }
}
TENSOR__AVX512 static void tensor__gemm_pack_b_avx512_f32(float *dst, const void *B_, int64_t kc, int64_t nc, int64_t rs, int64_t cs) {
    const float *B = (const float *)B_;
    enum { NV = TENSOR__SGEMM512_NV, NR = TENSOR__SGEMM512_NR };
    int64_t full = nc - nc % NR;
    if (cs == 1) {
        for (int64_t j0 = 0; j0 < full; j0 += NR, dst += NR * kc)
            for (int64_t p = 0; p < kc; p++)
                for (int v = 0; v < NV; v++) _mm512_store_ps(dst + p * NR + 16 * v, _mm512_loadu_ps(B + p * rs + j0 + 16 * v));
    } else if (rs == 1) {
        for (int64_t j0 = 0; j0 < full; j0 += NR, dst += NR * kc) {
            const float *s = B + j0 * cs;
            int64_t p = 0;
            for (; p + 8 <= kc; p += 8)
                for (int h = 0; h < NR / 8; h++) {
                    __m256 r[8];
                    for (int c = 0; c < 8; c++) r[c] = _mm256_loadu_ps(s + (h * 8 + c) * cs + p);
                    tensor__transpose8_f32(r);
                    for (int q = 0; q < 8; q++) _mm256_store_ps(dst + (p + q) * NR + h * 8, r[q]);
                }
            for (; p < kc; p++)
                for (int c = 0; c < NR; c++) dst[p * NR + c] = s[c * cs + p];
        }
    } else {
        full = 0;
    }
    if (full < nc) tensor__gemm_pack_b_f32_512(dst, B + full * cs, kc, nc - full, rs, cs);
}

/* The unpacked A B^T tiles (as the AVX2 ones) with 16 f32 / 8 f64 lanes along k: each vector
   sum is first folded to 256 bits, then reduced as there. */
TENSOR__AVX512 static inline __m256 tensor__fold512_f32(__m512 a) {
    return _mm256_add_ps(_mm512_castps512_ps256(a), _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(a), 1)));
}
TENSOR__AVX512 static inline __m128 tensor__hsum4_512_f32(__m512 a, __m512 b, __m512 c, __m512 d) {
    return tensor__hsum4_f32(tensor__fold512_f32(a), tensor__fold512_f32(b), tensor__fold512_f32(c), tensor__fold512_f32(d));
}
TENSOR__AVX512 static inline __m256d tensor__fold512_f64(__m512d a) { return _mm256_add_pd(_mm512_castpd512_pd256(a), _mm512_extractf64x4_pd(a, 1)); }
TENSOR__AVX512 static inline __m256d tensor__hsum4_512_f64(__m512d a, __m512d b, __m512d c, __m512d d) {
    return tensor__hsum4_f64(tensor__fold512_f64(a), tensor__fold512_f64(b), tensor__fold512_f64(c), tensor__fold512_f64(d));
}
/* The tile, measured on the 64 x 256 x 784 product (GFLOP/s, one Zen 5 core): 3 x 4 171, 3 x 8 191,
   2 x 8 198, 2 x 12 181, 5 x 4 216, 6 x 4 210, 4 x 4 222; the packed path 172. */
#ifndef TENSOR__NT512_R
#define TENSOR__NT512_R 4
#endif
#ifndef TENSOR__NT512_C
#define TENSOR__NT512_C 4
#endif
/* C[i, j] (+)= sum_p A[i * lda + p] B[j * ldb + p] for i < mr <= R, j < nr <= C (C a multiple of 4):
   R x C accumulators, R + C loads per vector of k; missing rows and columns repeat the first. */
#define TENSOR__DEFINE_GEMM_NT512(sfx, T, R, CC)                                                         \
    TENSOR__AVX512 static void tensor__gemm_ntk_avx512_##sfx(int64_t kc, const T *A, int64_t lda, const T *B, int64_t ldb, T *C, \
                                                            int64_t rs, int64_t cs, int mr, int nr, int add) { \
        enum { L_ = TENSOR__Z_L_##sfx };                                                                \
        TENSOR__Z_V_##sfx c[R][CC], x[R], y;                                                            \
        const T *a[R], *b[CC];                                                                          \
        _Pragma("GCC unroll 16") for (int i = 0; i < R; i++) a[i] = A + (i < mr ? i : 0) * lda;         \
        _Pragma("GCC unroll 16") for (int j = 0; j < CC; j++) b[j] = B + (j < nr ? j : 0) * ldb;        \
        _Pragma("GCC unroll 16") for (int i = 0; i < R; i++)                                            \
            _Pragma("GCC unroll 16") for (int j = 0; j < CC; j++) c[i][j] = TENSOR__Z_ZERO_##sfx();     \
        int64_t p = 0;                                                                                  \
        for (; p + L_ <= kc; p += L_) {                                                                 \
            _Pragma("GCC unroll 16") for (int i = 0; i < R; i++) x[i] = TENSOR__Z_LOADU_##sfx(a[i] + p); \
            _Pragma("GCC unroll 16") for (int j = 0; j < CC; j++) {                                     \
                y = TENSOR__Z_LOADU_##sfx(b[j] + p);                                                    \
                _Pragma("GCC unroll 16") for (int i = 0; i < R; i++) c[i][j] = TENSOR__Z_FMADD_##sfx(x[i], y, c[i][j]); \
            }                                                                                           \
        }                                                                                               \
        if (p < kc) { /* lanes past the end load as zeros */                                            \
            TENSOR__Z_M_##sfx mk = (TENSOR__Z_M_##sfx)((1u << (kc - p)) - 1);                           \
            _Pragma("GCC unroll 16") for (int i = 0; i < R; i++) x[i] = TENSOR__Z_MLOADU_##sfx(mk, a[i] + p); \
            _Pragma("GCC unroll 16") for (int j = 0; j < CC; j++) {                                     \
                y = TENSOR__Z_MLOADU_##sfx(mk, b[j] + p);                                               \
                _Pragma("GCC unroll 16") for (int i = 0; i < R; i++) c[i][j] = TENSOR__Z_FMADD_##sfx(x[i], y, c[i][j]); \
            }                                                                                           \
        }                                                                                               \
        for (int i = 0; i < mr; i++)                                                                    \
            for (int j = 0; j < nr; j += 4)                                                             \
                tensor__nt_out_##sfx(tensor__hsum4_512_##sfx(c[i][j], c[i][j + 1], c[i][j + 2], c[i][j + 3]), C + i * rs + j * cs, cs, \
                                     nr - j < 4 ? nr - j : 4, add);                                     \
    }
TENSOR__DEFINE_GEMM_NT512(f32, float, TENSOR__NT512_R, TENSOR__NT512_C)
TENSOR__DEFINE_GEMM_NT512(f64, double, TENSOR__NT512_R, TENSOR__NT512_C)

/* bf16 operands, f32 results: vdpbf16ps multiplies two bf16 pairs per f32 lane and adds both
   products to the lane, so the packed panels hold k in pairs, each pair one 32-bit element:
   A panels [k/2][MR] of (a[i, 2p], a[i, 2p + 1]), B panels [k/2][NR] of (b[2p, j], b[2p + 1, j])
   (low half the even k; an odd k's last pair padded with zero). The f32 kernel's schedule runs on
   them: one 32-bit broadcast of A per row and pair feeds NV dot products; the kernel's kc counts
   pairs. KC counts k (512: the B panel is 32 KiB, as the f32 one). */
#define TENSOR__AVX512BF16 __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,avx2,fma")))
#ifndef TENSOR__BGEMM512_MR
#define TENSOR__BGEMM512_MR 12 /* at most 16: a panel's pair row is one masked store */
#endif
#define TENSOR__BGEMM512_NV 2
#define TENSOR__BGEMM512_NR (16 * TENSOR__BGEMM512_NV)
#ifndef TENSOR__BGEMM512_MC
#define TENSOR__BGEMM512_MC 240
#endif
#ifndef TENSOR__BGEMM512_KC
#define TENSOR__BGEMM512_KC 512
#endif
#ifndef TENSOR__BGEMM512_NC
#define TENSOR__BGEMM512_NC 4096
#endif
typedef int32_t tensor__i32a __attribute__((may_alias)); /* a packed pair, read where floats were declared */
#define TENSOR__Z_V_bf16 __m512
#define TENSOR__Z_M_bf16 __mmask16
#define TENSOR__Z_L_bf16 16
#define TENSOR__Z_ZERO_bf16 _mm512_setzero_ps
#define TENSOR__Z_SET1_bf16(x) _mm512_castsi512_ps(_mm512_set1_epi32(*(const tensor__i32a *)&(x)))
#define TENSOR__Z_LOAD_bf16 _mm512_load_ps
#define TENSOR__Z_LOADU_bf16 _mm512_loadu_ps
#define TENSOR__Z_STOREU_bf16 _mm512_storeu_ps
#define TENSOR__Z_FMADD_bf16(a, b, c) _mm512_dpbf16_ps((c), (__m512bh)_mm512_castps_si512(a), (__m512bh)_mm512_castps_si512(b))
#define TENSOR__Z_ADD_bf16 _mm512_add_ps
#define TENSOR__Z_MLOADU_bf16 _mm512_maskz_loadu_ps
#define TENSOR__Z_MSTOREU_bf16 _mm512_mask_storeu_ps
#define tensor__gemm_store_bf16 tensor__gemm_store_f32
TENSOR__AVX512BF16 static void tensor__gemm_kernel_avx512_bf16(int64_t kc, const float *a, const float *b, float *C, int64_t rs, int64_t cs, int mr,
                                                               int nr, int add) {
    TENSOR__ZK_BODY(bf16, float, TENSOR__BGEMM512_MR, TENSOR__BGEMM512_MR, TENSOR__BGEMM512_NV, TENSOR__ZK_LOADB_PANEL,
                    b += TENSOR__BGEMM512_NV * L_);
}
/* One pair: (lo, hi) of two bf16 (a missing one is zero). */
static inline uint32_t tensor__bf16_pair(const uint16_t *lo, const uint16_t *hi) { return (uint32_t)(lo ? *lo : 0) | (uint32_t)(hi ? *hi : 0) << 16; }
/* A (mc x kc, bf16) into [k/2][MR] pair panels: a row-major A's pairs are 32-bit elements along
   its rows, transposed 8 x 8 in registers (as the f32 packing); a column-major A's pair is two
   rows of A^T zero-extended and merged; the rest (edges, odd k's last pair) one pair at a time. */
TENSOR__AVX512BF16 static void tensor__gemm_pack_a_bf16(float *dst_, const void *src, int64_t mc, int64_t kc, int64_t rs, int64_t cs) {
    const int64_t MR = TENSOR__BGEMM512_MR;
    tensor__i32a *dst = (tensor__i32a *)(void *)dst_;
    const uint16_t *A = (const uint16_t *)src;
    int64_t ks = (kc + 1) / 2, kf = kc / 2; /* pairs, whole pairs */
    for (int64_t i0 = 0; i0 < mc; i0 += MR, dst += MR * ks) {
        int64_t rows = mc - i0 < MR ? mc - i0 : MR, p = 0;
        const uint16_t *s = A + i0 * rs;
        if (rows == MR && cs == 1) {
            for (; p + 8 <= kf; p += 8)
                for (int r0 = 0; r0 < MR; r0 += 8) {
                    int n8 = MR - r0 < 8 ? MR - r0 : 8;
                    __m256 r[8];
                    for (int i = 0; i < 8; i++) r[i] = i < n8 ? _mm256_loadu_ps((const float *)(const void *)(s + (r0 + i) * rs + 2 * p)) : _mm256_setzero_ps();
                    tensor__transpose8_f32(r);
                    for (int q = 0; q < 8; q++) _mm512_mask_storeu_ps((void *)(dst + (p + q) * MR + r0), (__mmask16)((1u << n8) - 1), _mm512_castps256_ps512(r[q]));
                }
        } else if (rows == MR && rs == 1) {
            const __mmask16 mk = (__mmask16)((1u << MR) - 1);
            for (; p < kf; p++) {
                __m512i lo = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mk, s + 2 * p * cs));
                __m512i hi = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mk, s + (2 * p + 1) * cs));
                _mm512_mask_storeu_epi32((void *)(dst + p * MR), mk, _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
            }
        }
        for (; p < ks; p++)
            for (int64_t r = 0; r < MR; r++)
                dst[p * MR + r] = (int32_t)(r < rows ? tensor__bf16_pair(s + r * rs + 2 * p * cs, 2 * p + 1 < kc ? s + r * rs + (2 * p + 1) * cs : NULL) : 0);
    }
}
/* B (kc x nc, bf16) into [k/2][NR] pair panels: a row-major B's rows 2p and 2p + 1 zero-extended
   and merged, 16 columns at a time (masked: the edge panel's missing columns load as zeros); a
   column-major B's pairs are 32-bit elements down its columns, transposed 8 x 8. */
TENSOR__AVX512BF16 static void tensor__gemm_pack_b_bf16(float *dst_, const void *src, int64_t kc, int64_t nc, int64_t rs, int64_t cs) {
    const int64_t NR = TENSOR__BGEMM512_NR;
    tensor__i32a *dst = (tensor__i32a *)(void *)dst_;
    const uint16_t *B = (const uint16_t *)src;
    int64_t ks = (kc + 1) / 2, kf = kc / 2;
    for (int64_t j0 = 0; j0 < nc; j0 += NR, dst += NR * ks) {
        int64_t cols = nc - j0 < NR ? nc - j0 : NR, p = 0;
        const uint16_t *s = B + j0 * cs;
        if (cs == 1) {
            for (; p < kf; p++)
                for (int v = 0; v < NR / 16; v++) {
                    int64_t lanes = cols - 16 * v;
                    __mmask16 mk = (__mmask16)(lanes >= 16 ? 0xffffu : lanes > 0 ? (1u << lanes) - 1 : 0);
                    __m512i lo = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mk, s + 2 * p * rs + 16 * v));
                    __m512i hi = _mm512_cvtepu16_epi32(_mm256_maskz_loadu_epi16(mk, s + (2 * p + 1) * rs + 16 * v));
                    _mm512_storeu_si512((void *)(dst + p * NR + 16 * v), _mm512_or_si512(lo, _mm512_slli_epi32(hi, 16)));
                }
        } else if (cols == NR && rs == 1) {
            for (; p + 8 <= kf; p += 8)
                for (int h = 0; h < NR / 8; h++) {
                    __m256 r[8];
                    for (int c = 0; c < 8; c++) r[c] = _mm256_loadu_ps((const float *)(const void *)(s + (h * 8 + c) * cs + 2 * p));
                    tensor__transpose8_f32(r);
                    for (int q = 0; q < 8; q++) _mm256_storeu_ps((float *)(void *)(dst + (p + q) * NR + h * 8), r[q]);
                }
        }
        for (; p < ks; p++)
            for (int64_t c = 0; c < NR; c++)
                dst[p * NR + c] = (int32_t)(c < cols ? tensor__bf16_pair(s + c * cs + 2 * p * rs, 2 * p + 1 < kc ? s + c * cs + (2 * p + 1) * rs : NULL) : 0);
    }
}
#endif

/* Whether the AVX2+FMA kernels run: when the SIMD layer chose avx2 or avx512 (which needs avx2 and
   fma too), so TENSOR_SIMD=sse2 or scalar, and TENSOR_NO_SIMD, also choose the portable kernels. */
static TENSOR__UNUSED bool tensor__gemm_has_avx2(void) {
#if TENSOR__GEMM_AVX2 && TENSOR__SIMD_X86
    const tensor__simd_isa *v = tensor__simd();
    return v && v->width >= 8;
#else
    return false;
#endif
}

/* Whether the AVX-512 kernels run: when the SIMD layer chose avx512 (TENSOR_SIMD=avx2 and lower
   choose the AVX2 or portable ones). */
static TENSOR__UNUSED bool tensor__gemm_has_avx512(void) {
#if TENSOR__GEMM_AVX512 && TENSOR__SIMD_X86
    const tensor__simd_isa *v = tensor__simd();
    return v && v->width >= 16;
#else
    return false;
#endif
}

/* Whether the bf16 kernel runs: the AVX-512 kernels run and the CPU has avx512_bf16. */
static TENSOR__UNUSED bool tensor__gemm_has_bf16(void) {
#if TENSOR__GEMM_AVX512 && TENSOR__SIMD_X86
    return tensor__gemm_has_avx512() && tensor__simd()->bf16dot;
#else
    return false;
#endif
}

/* d[i] = s[i * stride] (elements of dtype sd) converted to T, i < n: a contiguous f16 / bf16 run
   through the SIMD rows, the rest one by one. */
static void tensor__gemm_cvt_f32(float *d, const char *s, tensor_dtype sd, int64_t n, int64_t stride) {
    const uint16_t *h = (const uint16_t *)(const void *)s;
    bool bf16 = sd == TENSOR_BF16;
    if (sd == TENSOR_F32) for (int64_t i = 0; i < n; i++) d[i] = ((const float *)(const void *)s)[i * stride];
    else if (stride == 1) tensor__half_to_f32(d, h, n, bf16);
    else if (bf16) for (int64_t i = 0; i < n; i++) d[i] = tensor__bf16_to_f32(h[i * stride]);
    else for (int64_t i = 0; i < n; i++) d[i] = tensor__f16_to_f32(h[i * stride]);
}
static TENSOR__UNUSED void tensor__gemm_cvt_f64(double *d, const char *s, tensor_dtype sd, int64_t n, int64_t stride) {
    int64_t e = (int64_t)tensor__dtype_sizes[sd];
    for (int64_t i = 0; i < n; i++) d[i] = tensor__load_f64(s + i * stride * e, sd);
}

/* The threads a GEMM may use: one inside a parallel region (a nested split would run inline). */
static int64_t tensor__gemm_threads(void) {
#if TENSOR__HAVE_THREADS
    if (tensor__in_parallel) return 1;
#endif
    return tensor_get_num_threads();
}

/* The count of finished slices the threads of one GEMM wait on by spinning: whoever they wait
   for claimed its slice and is running, so waits are short; after a while they yield the core, in
   case the one they wait for shares it. */
#if TENSOR__HAVE_THREADS
#if defined(__x86_64__) || defined(__i386__)
#define TENSOR__GEMM_PAUSE() __builtin_ia32_pause()
#else
#define TENSOR__GEMM_PAUSE() ((void)0)
#endif
static void tensor__gemm_wait_count(int *count, int n) {
    for (int spins = 0; __atomic_load_n(count, __ATOMIC_ACQUIRE) < n; spins++)
        if (spins < 256) TENSOR__GEMM_PAUSE(); else sched_yield();
}
#else
static void tensor__gemm_wait_count(int *count, int n) { (void)count; (void)n; }
#endif

#if TENSOR__GEMM_AVX2
#define TENSOR__GEMM_NT_DRIVER(sfx, T)                                                                   \
    /* The unpacked A row-major x B column-major path (AVX2): column slices of 4-column tiles are    \
       claimed like the packed path's; per slice the loops run over MB-row blocks of A (kept in L2), \
       KD-blocks of k and the slice's tiles, whose KD x 4 columns of B stay in L1 while the 3-row   \
       tiles of the block pass. */                                                                       \
    typedef struct {                                                                                    \
        const tensor__gemm_prob_##sfx *q;                                                               \
        int64_t tasks;                                                                                  \
        int next_task, done;                                                                            \
    } tensor__gemm_ntjob_##sfx;                                                                         \
    static void tensor__gemm_nt_task_##sfx(int64_t begin, int64_t end, void *ctx) {                     \
        (void)begin; (void)end;                                                                         \
        tensor__gemm_ntjob_##sfx *j = (tensor__gemm_ntjob_##sfx *)ctx;                                  \
        const tensor__gemm_prob_##sfx *q = j->q;                                                        \
        const int64_t TR = q->im->NTR, TC = q->im->NTC; /* the tile */                                  \
        int64_t tiles = (q->n + TC - 1) / TC;                                                           \
        for (;;) {                                                                                      \
            int64_t t = TENSOR__GEMM_CLAIM(&j->next_task);                                              \
            if (t >= j->tasks) break;                                                                   \
            int64_t n0 = tiles * t / j->tasks * TC, n1 = tiles * (t + 1) / j->tasks * TC;               \
            if (n1 > q->n) n1 = q->n;                                                                   \
            for (int64_t i0 = 0; i0 < q->m; i0 += TENSOR__GEMM_NT_MB)                                   \
                for (int64_t pc = 0; pc < q->k; pc += q->kb) {                                          \
                    int64_t kc = q->k - pc < q->kb ? q->k - pc : q->kb, i1 = q->m - i0 < TENSOR__GEMM_NT_MB ? q->m : i0 + TENSOR__GEMM_NT_MB; \
                    int addk = q->add || pc > 0;                                                        \
                    for (int64_t jt = n0; jt < n1; jt += TC)                                            \
                        for (int64_t it = i0; it < i1; it += TR) {                                      \
                            const T *a = (const T *)(const void *)q->A + it * q->a_rs + pc;             \
                            const T *b = (const T *)(const void *)q->B + jt * q->b_cs + pc;             \
                            T *c = q->C + it * q->c_rs + jt * q->c_cs;                                  \
                            q->im->ntk(kc, a, q->a_rs, b, q->b_cs, c, q->c_rs, q->c_cs, (int)(i1 - it < TR ? i1 - it : TR), \
                                       (int)(n1 - jt < TC ? n1 - jt : TC), addk);                       \
                        }                                                                               \
                }                                                                                       \
            TENSOR__GEMM_CLAIM(&j->done);                                                               \
        }                                                                                               \
        tensor__gemm_wait_count(&j->done, (int)j->tasks);                                               \
    }                                                                                                   \
    static void tensor__gemm_nt_##sfx(tensor__gemm_prob_##sfx *q) {                                     \
        tensor__gemm_ntjob_##sfx j;                                                                     \
        memset(&j, 0, sizeof j);                                                                        \
        j.q = q;                                                                                        \
        q->kb = (q->k + (q->k + TENSOR__GEMM_NT_KD / (int64_t)sizeof(T) - 1) / (TENSOR__GEMM_NT_KD / (int64_t)sizeof(T)) - 1) / \
                ((q->k + TENSOR__GEMM_NT_KD / (int64_t)sizeof(T) - 1) / (TENSOR__GEMM_NT_KD / (int64_t)sizeof(T))); \
        int64_t tiles = (q->n + q->im->NTC - 1) / q->im->NTC, threads = tensor__gemm_threads();         \
        int64_t work = tensor__work_mul(tensor__work_mul(q->m, q->n), q->k); /* may overflow */         \
        if (threads > work / TENSOR__GEMM_PAR_MIN) threads = work / TENSOR__GEMM_PAR_MIN;               \
        if (threads > tiles) threads = tiles;                                                           \
        if (threads < 1) threads = 1;                                                                   \
        j.tasks = threads;                                                                              \
        if (threads > 1) {                                                                              \
            int64_t t = work / (TENSOR__GEMM_PAR_MIN / 2);                                              \
            t = t < 4 * threads ? t : 4 * threads;                                                      \
            j.tasks = t < threads ? threads : t > tiles ? tiles : t;                                    \
            tensor__parallel_for(threads, 1, tensor__gemm_nt_task_##sfx, &j);                           \
        } else {                                                                                        \
            tensor__gemm_nt_task_##sfx(0, 1, &j);                                                       \
        }                                                                                               \
    }
#else
#define TENSOR__GEMM_NT_DRIVER(sfx, T)
#endif

/* The problem of one GEMM call: C[m, n] (+)= A[m, k] B[k, n], element (i, j) of C at
   C[i * c_rs + j * c_cs], and the kernel and packing routines chosen for this CPU. A and B hold
   elements of dtype src (esz bytes each): T, or f16 / bf16 for the f32 families. */
#define TENSOR__DEFINE_GEMM_DRIVER(sfx, T)                                                               \
    typedef struct {                                                                                    \
        const tensor__gemm_impl_##sfx *im;                                                              \
        int64_t m, n, k, kb, a_rs, a_cs, b_rs, b_cs, c_rs, c_cs, esz;                                   \
        const char *A, *B;                                                                              \
        T *C;                                                                                           \
        tensor_dtype src;                                                                               \
        int add;                                                                                        \
    } tensor__gemm_prob_##sfx;                                                                          \
    static int64_t tensor__gemm_round_##sfx(int64_t x, int64_t unit) { return (x + unit - 1) / unit * unit; } \
    /* Packs A (rows x cols = mc x kc, MR-row panels) or B (kc x nc, NR-column panels, when is_b)    \
       with the family's routine where it reads src; else (f16 / bf16 into an f32 family) converts   \
       a panel by ch steps of k at a time into buf, laid out as the operand is (unit stride along k  \
       or along the panel), so the family's fast layouts apply, and packs that. */                   \
    static void tensor__gemm_pack_##sfx(const tensor__gemm_prob_##sfx *q, bool is_b, T *dst, const char *src, int64_t rows, int64_t cols, \
                                        int64_t rs, int64_t cs) {                                       \
        const tensor__gemm_impl_##sfx *im = q->im;                                                      \
        tensor__##sfx##_pack_fn pack = is_b ? im->pack_b : im->pack_a;                                  \
        if (q->src == im->in) { pack(dst, src, rows, cols, rs, cs); return; }                           \
        enum { BUF = 2048 };                                                                            \
        T buf[BUF];                                                                                     \
        int64_t P = is_b ? im->NR : im->MR, K = is_b ? rows : cols, len = is_b ? cols : rows;          \
        int64_t ks = is_b ? rs : cs, ps = is_b ? cs : rs; /* strides along k and along the panel */    \
        int64_t ch = BUF / P > 8 ? BUF / P / 8 * 8 : BUF / P;                                           \
        for (int64_t i0 = 0; i0 < len; i0 += P, dst += P * K) {                                         \
            int64_t w = len - i0 < P ? len - i0 : P;                                                    \
            for (int64_t p0 = 0; p0 < K; p0 += ch) {                                                    \
                int64_t kk = K - p0 < ch ? K - p0 : ch, bk, bp; /* buf's strides along k, the panel */  \
                const char *s0 = src + (i0 * ps + p0 * ks) * q->esz;                                    \
                if (ks == 1) { bk = 1; bp = kk; for (int64_t r = 0; r < w; r++) tensor__gemm_cvt_##sfx(buf + r * kk, s0 + r * ps * q->esz, q->src, kk, 1); } \
                else { bk = w; bp = 1; for (int64_t p = 0; p < kk; p++) tensor__gemm_cvt_##sfx(buf + p * w, s0 + p * ks * q->esz, q->src, w, ps); } \
                if (is_b) pack(dst + p0 * P, buf, kk, w, bk, bp);                                       \
                else pack(dst + p0 * P, buf, w, kk, bp, bk);                                            \
            }                                                                                           \
        }                                                                                               \
    }                                                                                                   \
    /* The blocked loops over rows [m0, m1) and columns [n0, n1) of C; pa and pb hold one packed A    \
       block and one packed B block, KP steps of k per packed element (2 for bf16 pairs). */        \
    static void tensor__gemm_serial_##sfx(const tensor__gemm_prob_##sfx *q, int64_t m0, int64_t m1, int64_t n0, int64_t n1, \
                                          T *pa, T *pb) {                                               \
        const tensor__gemm_impl_##sfx *im = q->im;                                                      \
        const int64_t MR = im->MR, NR = im->NR, MC = im->MC, NC = im->NC, KP = im->KP, e = q->esz;      \
        int64_t k = q->k, kb = q->kb;                                                                   \
        for (int64_t jc = n0; jc < n1; jc += NC) {                                                      \
            int64_t nc = n1 - jc < NC ? n1 - jc : NC;                                                   \
            for (int64_t pc = 0; pc < k; pc += kb) {                                                    \
                int64_t kc = k - pc < kb ? k - pc : kb, ks = (kc + KP - 1) / KP;                        \
                int addk = q->add || pc > 0;                                                            \
                /* with a packing kernel, the full panels of a unit-column-stride B are packed by     \
                   their first use; the edge panel here */                                              \
                bool fuse = im->kern_pack && q->b_cs == 1 && q->src == im->in;                          \
                int64_t nfull = nc - nc % NR;                                                           \
                const char *bsrc = q->B + (pc * q->b_rs + jc * q->b_cs) * e;                            \
                if (!fuse) tensor__gemm_pack_##sfx(q, true, pb, bsrc, kc, nc, q->b_rs, q->b_cs);        \
                if (fuse && nfull < nc) im->pack_b(pb + nfull * ks, bsrc + nfull * e, kc, nc - nfull, q->b_rs, 1); \
                for (int64_t ic = m0; ic < m1; ic += MC) {                                              \
                    int64_t mc = m1 - ic < MC ? m1 - ic : MC;                                           \
                    const T *ablk = pa;                                                                 \
                    tensor__gemm_pack_##sfx(q, false, pa, q->A + (ic * q->a_rs + pc * q->a_cs) * e, mc, kc, q->a_rs, q->a_cs); \
                    for (int64_t jr = 0; jr < nc; jr += NR) {                                           \
                        int nr = (int)(nc - jr < NR ? nc - jr : NR);                                    \
                        const T *bp = pb + jr * ks;                                                     \
                        T *cc = q->C + ic * q->c_rs + (jc + jr) * q->c_cs;                              \
                        int64_t ir = 0;                                                                 \
                        if (fuse && ic == m0 && jr < nfull) {                                           \
                            im->kern_pack(kc, ablk, pb + jr * kc, (const T *)(const void *)bsrc + jr, q->b_rs, cc, q->c_rs, q->c_cs, \
                                         (int)(mc < MR ? mc : MR), nr, addk);                           \
                            ir = MR;                                                                    \
                        }                                                                               \
                        for (; ir < mc; ir += MR) {                                                     \
                            int mr = (int)(mc - ir < MR ? mc - ir : MR);                                \
                            (mr <= im->short_rows ? im->kern_short : im->kern)(ks, ablk + ir * ks, bp, cc + ir * q->c_rs, q->c_rs, \
                                                                               q->c_cs, mr, nr, addk);  \
                        }                                                                               \
                    }                                                                                   \
                }                                                                                       \
            }                                                                                           \
        }                                                                                               \
    }                                                                                                   \
    /* The split dim (n when split_n, else m) is cut at panel boundaries into `tasks` slices. Each  \
       call of the task function is one thread taking part: it takes the next scratch slot, then    \
       claims slices until none are left, so a thread that starts late takes fewer, and then waits  \
       (spinning: at most one slice) until every slice is done, so the caller rarely sleeps on the \
       pool. Each thread packs the operand every slice needs in full (A when split_n) itself: an   \
       earlier scheme packed a small one once, shared, with the slices waiting on flags for its    \
       parts, and was slower at every shape measured here (256^3 on 2 threads 184 -> 167 us). */   \
    typedef struct {                                                                                    \
        const tensor__gemm_prob_##sfx *q;                                                               \
        T *scratch;                                                                                     \
        int64_t pa_size, per_slot, tasks;                                                               \
        int split_n, next_slot, next_task, done;                                                        \
    } tensor__gemm_job_##sfx;                                                                           \
    static void tensor__gemm_task_##sfx(int64_t begin, int64_t end, void *ctx) {                        \
        (void)begin; (void)end;                                                                         \
        tensor__gemm_job_##sfx *j = (tensor__gemm_job_##sfx *)ctx;                                      \
        const tensor__gemm_prob_##sfx *q = j->q;                                                        \
        int64_t unit = j->split_n ? q->im->NR : q->im->MR, len = j->split_n ? q->n : q->m;                            \
        int64_t panels = (len + unit - 1) / unit;                                                       \
        int slot = TENSOR__GEMM_CLAIM(&j->next_slot);                                                   \
        T *pa = j->scratch + slot * j->per_slot, *pb = pa + j->pa_size;                                 \
        for (;;) {                                                                                      \
            int64_t t = TENSOR__GEMM_CLAIM(&j->next_task);                                              \
            if (t >= j->tasks) break;                                                                   \
            int64_t lo = panels * t / j->tasks * unit, hi = panels * (t + 1) / j->tasks * unit;         \
            if (hi > len) hi = len;                                                                     \
            if (lo < hi) {                                                                              \
                if (j->split_n) tensor__gemm_serial_##sfx(q, 0, q->m, lo, hi, pa, pb);                   \
                else tensor__gemm_serial_##sfx(q, lo, hi, 0, q->n, pa, pb);                              \
            }                                                                                           \
            TENSOR__GEMM_CLAIM(&j->done);                                                               \
        }                                                                                               \
        tensor__gemm_wait_count(&j->done, (int)j->tasks);                                               \
    }                                                                                                   \
    TENSOR__GEMM_NT_DRIVER(sfx, T)                                                                      \
    /* The fraction of a tile grid's work that lands inside an m x n result. */                        \
    static double tensor__gemm_fill_##sfx(int64_t m, int64_t n, int64_t MR, int64_t NR) {               \
        return (double)(m * n) / (double)(tensor__gemm_round_##sfx(m, MR) * tensor__gemm_round_##sfx(n, NR)); \
    }                                                                                                   \
    /* false when there is no memory for the packing panels (nothing is written then: a fallback    \
       loop would round differently, a silent change of the result) */                              \
    static bool tensor__gemm_##sfx##s(tensor_dtype src, int64_t m, int64_t n, int64_t k, const void *A, int64_t a_rs, int64_t a_cs, \
                                      const void *B, int64_t b_rs, int64_t b_cs, T *C, int64_t c_rs, int64_t c_cs, bool add) { \
        if (m <= 0 || n <= 0) return true;                                                              \
        if (k <= 0) {                                                                                   \
            if (!add)                                                                                   \
                for (int64_t i = 0; i < m; i++)                                                         \
                    for (int64_t q = 0; q < n; q++) C[i * c_rs + q * c_cs] = 0;                         \
            return true;                                                                                \
        }                                                                                               \
        tensor__gemm_prob_##sfx q;                                                                      \
        q.im = tensor__gemm_pick_##sfx(src);                                                            \
        const int64_t MR = q.im->MR, NR = q.im->NR, MC = q.im->MC, KC = q.im->KC, NC = q.im->NC, KP = q.im->KP; \
        /* C^T = B^T A^T: the transposed problem when its tiles fill much better (a narrow n, such    \
           as a matrix-vector product), its tiles then written with C's strides swapped */            \
        if (n < NR && tensor__gemm_fill_##sfx(n, m, MR, NR) > 1.25 * tensor__gemm_fill_##sfx(m, n, MR, NR)) {     \
            const void *t = A; A = B; B = t;                                                            \
            int64_t x = m; m = n; n = x;                                                                \
            x = a_rs; a_rs = b_cs; b_cs = x;                                                            \
            x = a_cs; a_cs = b_rs; b_rs = x;                                                            \
            x = c_rs; c_rs = c_cs; c_cs = x;                                                            \
        }                                                                                               \
        q.m = m; q.n = n; q.k = k; q.A = (const char *)A; q.B = (const char *)B; q.C = C; q.add = add;  \
        q.src = src; q.esz = (int64_t)tensor__dtype_sizes[src];                                         \
        q.a_rs = a_rs; q.a_cs = a_cs; q.b_rs = b_rs; q.b_cs = b_cs; q.c_rs = c_rs; q.c_cs = c_cs;       \
        TENSOR__GEMM_TRY_NT(sfx);                                                                       \
        /* k in equal blocks of at most KC (784 = 4 x 196, not 3 x 256 + 16: a thin last block      \
           would pay C's loads and stores for few multiply-adds) */                                    \
        q.kb = tensor__gemm_round_##sfx((k + (k + KC - 1) / KC - 1) / ((k + KC - 1) / KC), KP); /* whole pairs */ \
        tensor__gemm_job_##sfx j;                                                                       \
        memset(&j, 0, sizeof j);                                                                        \
        j.q = &q;                                                                                       \
        int64_t mp = (m + MR - 1) / MR, np = (n + NR - 1) / NR;                                         \
        int64_t work = tensor__work_mul(tensor__work_mul(m, n), k); /* m n k may overflow */            \
        int64_t threads = tensor__gemm_threads();                                                       \
        if (threads > work / TENSOR__GEMM_PAR_MIN) threads = work / TENSOR__GEMM_PAR_MIN;               \
        if (threads < 1) threads = 1;                                                                   \
        /* split the dim whose operand is cheaper to pack twice (n: each thread packs all of A) */      \
        j.split_n = np >= 2 && (n >= m || mp < 2);                                                      \
        int64_t cap = j.split_n ? np : mp;                                                              \
        if (threads > cap) threads = cap;                                                               \
        j.tasks = threads; /* one slice per thread */                                                   \
        /* each slot: an A block, then a B block (on a cache line, with some slack) */                  \
        int64_t line = 64 / (int64_t)sizeof(T), kc = ((k < KC ? k : KC) + KP - 1) / KP; /* packed steps */ \
        int64_t ms = j.split_n ? m : (mp + j.tasks - 1) / j.tasks * MR;                                 \
        int64_t ns = j.split_n ? (np + j.tasks - 1) / j.tasks * NR : n;                                 \
        int64_t asz = tensor__gemm_round_##sfx(ms < MC ? ms : MC, MR) * kc;                             \
        int64_t bsz = tensor__gemm_round_##sfx(ns < NC ? ns : NC, NR) * kc;                             \
        j.pa_size = tensor__gemm_round_##sfx(asz + 16, line);                                           \
        j.per_slot = j.pa_size + tensor__gemm_round_##sfx(bsz + 16, line);                              \
        size_t bytes = (size_t)(j.per_slot * threads) * sizeof(T);                                      \
        j.scratch = (T *)tensor__alloc_aligned(bytes);                                                  \
        if (!j.scratch) return false;                                                                   \
        if (threads > 1) tensor__parallel_for(threads, 1, tensor__gemm_task_##sfx, &j);                 \
        else tensor__gemm_task_##sfx(0, 1, &j);                                                         \
        tensor__free_aligned(j.scratch);                                                                \
        return true;                                                                                    \
    }

/* A row-major A and column-major B take the unpacked path where packing would cost the most
   against the multiply-adds: few rows of A (every packed B panel would serve few A panels: a
   linear layer's batch), few columns of B (up to a moderate m, whose rows stay in L2 while B's
   columns pass), or a matrix-vector product; k must be long enough to pay the lane sums. Measured
   here against the packed path: 64 x 256 x 784 106 vs 93 GFLOP/s, 1 x 512 x 512 30 vs 8; the
   packed path keeps 96 x 96 x 96 (95 vs 84) and 2048 x 64 x 1024 (97 vs 86). */
#if TENSOR__GEMM_AVX2
#define TENSOR__GEMM_TRY_NT(sfx)                                                                         \
    if (q.im->ntk && q.src == q.im->in && a_cs == 1 && b_rs == 1 &&                                     \
        ((k >= 16 && (m <= 4 || n <= 4)) || (k >= 128 && (m <= 64 || (n <= 64 && m <= 512))))) {        \
        tensor__gemm_nt_##sfx(&q);                                                                      \
        return true;                                                                                    \
    }
#else
#define TENSOR__GEMM_TRY_NT(sfx)
#endif
#ifndef TENSOR__GEMM_NT_MB
#define TENSOR__GEMM_NT_MB 128 /* rows of A per block: 128 x KD bytes in L2 */
#endif
#ifndef TENSOR__GEMM_NT_KD
#define TENSOR__GEMM_NT_KD 4096 /* bytes of k per block: 4 columns of B in 16 KiB of L1 */
#endif

/* Claims the next index of a counter shared by the threads of one GEMM (the count of finished
   slices too: acq_rel, so whoever sees the count sees the slices' results). */
#if TENSOR__HAVE_THREADS
#define TENSOR__GEMM_CLAIM(p) __atomic_fetch_add(p, 1, __ATOMIC_ACQ_REL)
#else
#define TENSOR__GEMM_CLAIM(p) ((*(p))++)
#endif

typedef tensor__sgemm_kernel_fn tensor__f32_kernel_fn;
typedef tensor__dgemm_kernel_fn tensor__f64_kernel_fn;
typedef tensor__spack_fn tensor__f32_pack_fn;
typedef tensor__dpack_fn tensor__f64_pack_fn;
/* A kernel family, chosen once per call (tensor__gemm_pick_*): its micro-kernel, the kernel that
   packs B on its first pass (or NULL), the packing routines, the unpacked A B^T tile kernel (or
   NULL: no unpacked path), and the tile (MR x NR) and block sizes the driver loops by. */
#define TENSOR__DEFINE_GEMM_IMPL(sfx, T)                                                                 \
    typedef void (*tensor__##sfx##_kpack_fn)(int64_t kc, const T *a, T *b, const T *bsrc, int64_t bs, T *C, int64_t rs, int64_t cs, \
                                             int mr, int nr, int add);                                  \
    typedef void (*tensor__##sfx##_ntk_fn)(int64_t kc, const T *A, int64_t lda, const T *B, int64_t ldb, T *C, int64_t rs, int64_t cs, \
                                           int mr, int nr, int add);                                    \
    typedef struct {                                                                                    \
        const char *name;                                                                               \
        tensor__##sfx##_kernel_fn kern;                                                                 \
        tensor__##sfx##_kpack_fn kern_pack;                                                             \
        tensor__##sfx##_pack_fn pack_a, pack_b;                                                         \
        tensor__##sfx##_ntk_fn ntk;                                                                     \
        tensor__##sfx##_kernel_fn kern_short; /* for a panel of at most short_rows rows (or NULL) */    \
        int64_t short_rows;                                                                             \
        int64_t MR, NR, MC, KC, NC;                                                                     \
        int64_t NTR, NTC; /* the tile of ntk */                                                         \
        tensor_dtype in; /* the dtype the packing routines read (other inputs are converted first) */   \
        int64_t KP;      /* steps of k per packed element: 2 where the kernel takes k in pairs (bf16) */ \
    } tensor__gemm_impl_##sfx;
TENSOR__DEFINE_GEMM_IMPL(f32, float)
TENSOR__DEFINE_GEMM_IMPL(f64, double)

static const tensor__gemm_impl_f32 tensor__gemm_portable_f32 = {"portable", tensor__gemm_kernel_scalar_f32, NULL, tensor__gemm_pack_a_f32_6x16,
                                                                tensor__gemm_pack_b_f32_6x16, NULL, NULL, 0, TENSOR__SGEMM_MR, TENSOR__SGEMM_NR,
                                                                TENSOR__SGEMM_MC, TENSOR__SGEMM_KC, TENSOR__SGEMM_NC, 3, 4, TENSOR_F32, 1};
static const tensor__gemm_impl_f64 tensor__gemm_portable_f64 = {"portable", tensor__gemm_kernel_scalar_f64, NULL, tensor__gemm_pack_a_f64_6x8,
                                                                tensor__gemm_pack_b_f64_6x8, NULL, NULL, 0, TENSOR__DGEMM_MR, TENSOR__DGEMM_NR,
                                                                TENSOR__DGEMM_MC, TENSOR__DGEMM_KC, TENSOR__DGEMM_NC, 3, 4, TENSOR_F64, 1};
#if TENSOR__GEMM_AVX2
static const tensor__gemm_impl_f32 tensor__gemm_avx2_f32 = {"avx2+fma", tensor__gemm_kernel_avx2_f32, tensor__gemm_kernel_pack_avx2_f32,
                                                            tensor__gemm_pack_a_avx2_f32, tensor__gemm_pack_b_avx2_f32, tensor__gemm_ntk_avx2_f32, NULL, 0,
                                                            TENSOR__SGEMM_MR, TENSOR__SGEMM_NR, TENSOR__SGEMM_MC, TENSOR__SGEMM_KC, TENSOR__SGEMM_NC, 3, 4, TENSOR_F32, 1};
static const tensor__gemm_impl_f64 tensor__gemm_avx2_f64 = {"avx2+fma", tensor__gemm_kernel_avx2_f64, NULL, tensor__gemm_pack_a_f64_6x8,
                                                            tensor__gemm_pack_b_f64_6x8, tensor__gemm_ntk_avx2_f64, NULL, 0, TENSOR__DGEMM_MR, TENSOR__DGEMM_NR,
                                                            TENSOR__DGEMM_MC, TENSOR__DGEMM_KC, TENSOR__DGEMM_NC, 3, 4, TENSOR_F64, 1};
#endif
#if TENSOR__GEMM_AVX512
static const tensor__gemm_impl_f32 tensor__gemm_avx512_f32 = {"avx512f", tensor__gemm_kernel_avx512_f32, tensor__gemm_kernel_pack_avx512_f32,
                                                              tensor__gemm_pack_a_avx512_f32, tensor__gemm_pack_b_avx512_f32, tensor__gemm_ntk_avx512_f32,
                                                              tensor__gemm_kernel_short_avx512_f32, TENSOR__SGEMM512_MR / 3,
                                                              TENSOR__SGEMM512_MR, TENSOR__SGEMM512_NR, TENSOR__SGEMM512_MC, TENSOR__SGEMM512_KC,
                                                              TENSOR__SGEMM512_NC, TENSOR__NT512_R, TENSOR__NT512_C, TENSOR_F32, 1};
static const tensor__gemm_impl_f64 tensor__gemm_avx512_f64 = {"avx512f", tensor__gemm_kernel_avx512_f64, tensor__gemm_kernel_pack_avx512_f64,
                                                              tensor__gemm_pack_a_f64_512, tensor__gemm_pack_b_f64_512, tensor__gemm_ntk_avx512_f64,
                                                              tensor__gemm_kernel_short_avx512_f64, TENSOR__DGEMM512_MR / 3,
                                                              TENSOR__DGEMM512_MR, TENSOR__DGEMM512_NR, TENSOR__DGEMM512_MC, TENSOR__DGEMM512_KC,
                                                              TENSOR__DGEMM512_NC, TENSOR__NT512_R, TENSOR__NT512_C, TENSOR_F64, 1};
static const tensor__gemm_impl_f32 tensor__gemm_avx512_bf16 = {"avx512bf16", tensor__gemm_kernel_avx512_bf16, NULL, tensor__gemm_pack_a_bf16,
                                                               tensor__gemm_pack_b_bf16, NULL, NULL, 0, TENSOR__BGEMM512_MR, TENSOR__BGEMM512_NR,
                                                               TENSOR__BGEMM512_MC, TENSOR__BGEMM512_KC, TENSOR__BGEMM512_NC, 0, 0, TENSOR_BF16, 2};
#endif
/* The family for this CPU and the SIMD layer's choice (TENSOR_SIMD=avx2 gives the AVX2 one,
   sse2 or scalar the portable one). */
#define TENSOR__DEFINE_GEMM_PICK(sfx)                                                                    \
    static const tensor__gemm_impl_##sfx *tensor__gemm_pick_##sfx(tensor_dtype src) {                   \
        (void)src;                                                                                      \
        TENSOR__GEMM_PICK_BF16_##sfx                                                                    \
        TENSOR__GEMM_PICK_AVX512(sfx)                                                                   \
        TENSOR__GEMM_PICK_AVX2(sfx)                                                                     \
        return &tensor__gemm_portable_##sfx;                                                            \
    }
#if TENSOR__GEMM_AVX512
#define TENSOR__GEMM_PICK_AVX512(sfx) if (tensor__gemm_has_avx512()) return &tensor__gemm_avx512_##sfx;
#else
#define TENSOR__GEMM_PICK_AVX512(sfx)
#endif
#if TENSOR__GEMM_AVX2
#define TENSOR__GEMM_PICK_AVX2(sfx) if (tensor__gemm_has_avx2()) return &tensor__gemm_avx2_##sfx;
#else
#define TENSOR__GEMM_PICK_AVX2(sfx)
#endif
/* bf16 operands into f32 results: the vdpbf16ps family where the CPU has it */
#if TENSOR__GEMM_AVX512
#define TENSOR__GEMM_PICK_BF16_f32 if (src == TENSOR_BF16 && tensor__gemm_has_bf16()) return &tensor__gemm_avx512_bf16;
#else
#define TENSOR__GEMM_PICK_BF16_f32
#endif
#define TENSOR__GEMM_PICK_BF16_f64
TENSOR__DEFINE_GEMM_PICK(f32)
TENSOR__DEFINE_GEMM_PICK(f64)
TENSOR__DEFINE_GEMM_DRIVER(f32, float)
TENSOR__DEFINE_GEMM_DRIVER(f64, double)

/* Whether `count` independent GEMMs of m x n x k (a batch, or the images of a convolution) should
   run side by side, each on one thread, rather than one after another, each split across the
   threads: yes when they are too small to split, or when they share out evenly (or nearly: at
   least 4 per thread), which needs no synchronization inside the GEMMs. */
static bool tensor__gemm_spread(int64_t count, int64_t m, int64_t n, int64_t k) {
    int64_t threads = tensor__gemm_threads();
    if (count < 2 || threads < 2) return false;
    if (tensor__work_mul(tensor__work_mul(m, n), k) < 2 * TENSOR__GEMM_PAR_MIN) return true; /* (m n k may overflow) */
    return count >= threads && (count % threads == 0 || count >= 4 * threads);
}
/* ==== end generator/parts/gemm.h ==== */
/* ==== begin generator/parts/nn.h ==== */
// >>linalg -------------------------------------------------------------------------------------
/* Matrix products and the neural-network functions built on them. The dense kernels (matmul and
   the convolutions, which lower to im2col + the same GEMM) have a fast path that packs operands
   into contiguous f32/f64/i64 panels and a plain reference loop; tensor_set_reference_kernels
   routes them through the reference loops so the tests can compare the two. */

/* Tells the compiler that the loop after it carries no dependence through memory (its output row
   never aliases its input rows), so it vectorizes without a run-time alias check. */
#if defined(__clang__)
#define TENSOR__IVDEP _Pragma("clang loop vectorize(assume_safety)")
#elif defined(__GNUC__)
#define TENSOR__IVDEP _Pragma("GCC ivdep")
#elif defined(_MSC_VER)
#define TENSOR__IVDEP __pragma(loop(ivdep))
#else
#define TENSOR__IVDEP
#endif


/* Scratch buffers of kernels: n bytes (at least 1), or NULL after recording an error. */
static void *tensor__scratch(const char *fn, size_t n) {
    void *p = tensor__alloc_aligned(n ? n : 1);
    if (!p) tensor__fail(fn, "out of memory allocating %zu bytes of scratch", n);
    return p;
}

/* out[n, m] = A[n, k] @ B[k, m] for the integer dtypes (as uint64_t: unsigned arithmetic wraps
   like PyTorch's integer matmul). Rows of A, B and out are contiguous, ld* elements apart. The
   loops run i-k-j so the innermost loop streams a row of B into a row of out (the compiler
   vectorizes it); B is walked in KB x NB blocks that stay in cache while every row of A passes
   over them, and four rows of B are folded per pass over the out row. f32 and f64 go through the
   packed GEMM of >>gemm instead. */
#define TENSOR__GEMM_NB 256
#define TENSOR__GEMM_KB 128
#define TENSOR__DEFINE_GEMM(sfx, T)                                                                      \
    static void tensor__gemm_##sfx(int64_t n, int64_t m, int64_t k, const T *A, int64_t lda,           \
                                   const T *B, int64_t ldb, T *out, int64_t ldo) {                      \
        for (int64_t i = 0; i < n; i++)                                                                 \
            for (int64_t j = 0; j < m; j++) out[i * ldo + j] = 0;                                       \
        for (int64_t j0 = 0; j0 < m; j0 += TENSOR__GEMM_NB) {                                           \
            int64_t jn = m - j0 < TENSOR__GEMM_NB ? m - j0 : TENSOR__GEMM_NB, jv = jn & ~(int64_t)15;  \
            for (int64_t k0 = 0; k0 < k; k0 += TENSOR__GEMM_KB) {                                       \
                int64_t kn = k - k0 < TENSOR__GEMM_KB ? k - k0 : TENSOR__GEMM_KB;                       \
                for (int64_t i = 0; i < n; i++) {                                                       \
                    T *o = out + i * ldo + j0;                                                          \
                    const T *ar = A + i * lda + k0;                                                     \
                    int64_t p = 0;                                                                      \
                    for (; p + 4 <= kn; p += 4) {                                                       \
                        const T a0 = ar[p], a1 = ar[p + 1], a2 = ar[p + 2], a3 = ar[p + 3];             \
                        const T *b0 = B + (k0 + p) * ldb + j0, *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb; \
                        TENSOR__IVDEP                                                                   \
                        for (int64_t j = 0; j < jv; j++) o[j] += a0 * b0[j] + a1 * b1[j] + a2 * b2[j] + a3 * b3[j]; \
                        for (int64_t j = jv; j < jn; j++) o[j] += a0 * b0[j] + a1 * b1[j] + a2 * b2[j] + a3 * b3[j]; \
                    }                                                                                   \
                    for (; p < kn; p++) {                                                               \
                        const T a0 = ar[p], *b0 = B + (k0 + p) * ldb + j0;                              \
                        TENSOR__IVDEP                                                                   \
                        for (int64_t j = 0; j < jv; j++) o[j] += a0 * b0[j];                            \
                        for (int64_t j = jv; j < jn; j++) o[j] += a0 * b0[j];                           \
                    }                                                                                   \
                }                                                                                       \
            }                                                                                           \
        }                                                                                               \
    }
TENSOR__DEFINE_GEMM(u64, uint64_t)

/* The compute dtype of the packed kernels for an output dtype: f32 for f32/f16/bf16, f64 for
   f64, i64 (as uint64_t) for the integer dtypes. */
static tensor_dtype tensor__gemm_dtype(tensor_dtype d) {
    return d == TENSOR_F64 ? TENSOR_F64 : tensor__is_float(d) ? TENSOR_F32 : TENSOR_I64;
}

/* out[n, m] (+)= A[n, k] @ B[k, m] in compute dtype ct, element (i, p) of A at A[i * a_rs + p * a_cs],
   (p, j) of B at B[p * b_rs + j * b_cs], (i, j) of out at out[i * o_rs + j * o_cs]. A and B hold
   dtype sd: ct, or f16 / bf16 for ct f32 (bf16 products in the bf16 kernel where the CPU has one,
   else converted to f32 as they are packed). add: accumulate into out. The integer dtypes need
   a_cs = b_cs = o_cs = 1 and add = false. false: no memory for the packing panels (the caller
   records the error; a pool task flags it in its job). */
static bool tensor__gemm_strided(tensor_dtype ct, tensor_dtype sd, int64_t n, int64_t m, int64_t k, const void *A, int64_t a_rs, int64_t a_cs,
                                 const void *B, int64_t b_rs, int64_t b_cs, void *out, int64_t o_rs, int64_t o_cs, bool add) {
    if (ct == TENSOR_F32) return tensor__gemm_f32s(sd, n, m, k, A, a_rs, a_cs, B, b_rs, b_cs, (float *)out, o_rs, o_cs, add);
    if (ct == TENSOR_F64) return tensor__gemm_f64s(TENSOR_F64, n, m, k, A, a_rs, a_cs, B, b_rs, b_cs, (double *)out, o_rs, o_cs, add);
    tensor__gemm_u64(n, m, k, (const uint64_t *)A, a_rs, (const uint64_t *)B, b_rs, (uint64_t *)out, o_rs);
    return true;
}
/* A pool task's GEMM: a failure raises the job's flag, which the caller checks after the pool. */
#define TENSOR__GEMM_IN_TASK(flag, gemm_call) do { if (!(gemm_call)) __atomic_store_n(&(flag), 1, __ATOMIC_RELAXED); } while (0)
#define TENSOR__TASK_FAILED(flag) __atomic_load_n(&(flag), __ATOMIC_RELAXED)

/* out[n, m] = A[n, k] @ B[k, m] with contiguous rows, ld* elements apart. */
static bool tensor__gemm(tensor_dtype ct, int64_t n, int64_t m, int64_t k, const void *A, int64_t lda,
                         const void *B, int64_t ldb, void *out, int64_t ldo) {
    return tensor__gemm_strided(ct, ct, n, m, k, A, lda, 1, B, ldb, 1, out, ldo, 1, false);
}

/* dst[r * cols + q] = src[r * rs + q * cs] (strides in elements of sd) converted to ct. */
static void tensor__pack(void *dst, tensor_dtype ct, const char *src, tensor_dtype sd, int64_t rows, int64_t cols, int64_t rs, int64_t cs) {
    int64_t esz = (int64_t)tensor__dtype_sizes[sd];
    for (int64_t r = 0; r < rows; r++) {
        const char *s = src + r * rs * esz;
        if (ct == TENSOR_F32) {
            float *d = (float *)dst + r * cols;
            if (sd == TENSOR_F32) { const float *f = (const float *)s; for (int64_t q = 0; q < cols; q++) d[q] = f[q * cs]; }
            else if (cs == 1 && (sd == TENSOR_F16 || sd == TENSOR_BF16)) tensor__half_to_f32(d, (const uint16_t *)(const void *)s, cols, sd == TENSOR_BF16);
            else for (int64_t q = 0; q < cols; q++) d[q] = (float)tensor__load_f64(s + q * cs * esz, sd);
        } else if (ct == TENSOR_F64) {
            double *d = (double *)dst + r * cols;
            if (sd == TENSOR_F64) { const double *f = (const double *)s; for (int64_t q = 0; q < cols; q++) d[q] = f[q * cs]; }
            else for (int64_t q = 0; q < cols; q++) d[q] = tensor__load_f64(s + q * cs * esz, sd);
        } else {
            uint64_t *d = (uint64_t *)dst + r * cols;
            for (int64_t q = 0; q < cols; q++) d[q] = (uint64_t)tensor__load_i64(s + q * cs * esz, sd);
        }
    }
}

/* dst (contiguous, dtype dd) = src (contiguous, compute dtype ct), count elements. */
static void tensor__unpack(char *dst, tensor_dtype dd, const void *src, tensor_dtype ct, int64_t count) {
    size_t esz = tensor__dtype_sizes[dd];
    if (ct == TENSOR_F32 && (dd == TENSOR_F16 || dd == TENSOR_BF16)) tensor__f32_to_half((uint16_t *)(void *)dst, (const float *)src, count, dd == TENSOR_BF16);
    else if (ct == TENSOR_F32) for (int64_t i = 0; i < count; i++) tensor__store_f64(dst + (size_t)i * esz, dd, ((const float *)src)[i]);
    else if (ct == TENSOR_F64) for (int64_t i = 0; i < count; i++) tensor__store_f64(dst + (size_t)i * esz, dd, ((const double *)src)[i]);
    else for (int64_t i = 0; i < count; i++) tensor__store_i64(dst + (size_t)i * esz, dd, (int64_t)((const uint64_t *)src)[i]);
}

/* The geometry of one matmul: per batch out[n, m] = A[n, k] @ B[k, m], with the matrix strides of
   a and b (a 1-D operand is a single row of A or column of B) and the batch dims of out, where
   a_bs/b_bs are 0 on dims an operand broadcasts over. */
typedef struct {
    int64_t n, m, k;
    int64_t a_rs, a_cs, b_rs, b_cs;
    int nb;
    int64_t bshape[TENSOR_MAX_DIMS], a_bs[TENSOR_MAX_DIMS], b_bs[TENSOR_MAX_DIMS];
    int64_t batches;
} tensor__mm_geom;

static void tensor__mm_geometry(const tensor *a, const tensor *b, const tensor *out, tensor__mm_geom *g) {
    int ad = a->ndim, bd = b->ndim;
    g->k = a->shape[ad - 1];
    g->a_cs = a->strides[ad - 1];
    if (ad >= 2) { g->n = a->shape[ad - 2]; g->a_rs = a->strides[ad - 2]; }
    else { g->n = 1; g->a_rs = 0; }
    if (bd >= 2) { g->m = b->shape[bd - 1]; g->b_cs = b->strides[bd - 1]; g->b_rs = b->strides[bd - 2]; }
    else { g->m = 1; g->b_cs = 0; g->b_rs = b->strides[0]; }
    int abn = ad >= 2 ? ad - 2 : 0, bbn = bd >= 2 ? bd - 2 : 0;
    g->nb = out->ndim - (ad >= 2) - (bd >= 2);
    g->batches = 1;
    for (int i = 0; i < g->nb; i++) {
        int ai = i - (g->nb - abn), bi = i - (g->nb - bbn);
        g->bshape[i] = out->shape[i];
        g->a_bs[i] = (ai >= 0 && a->shape[ai] != 1) ? a->strides[ai] : 0;
        g->b_bs[i] = (bi >= 0 && b->shape[bi] != 1) ? b->strides[bi] : 0;
        g->batches *= out->shape[i];
    }
}

/* The plain reference: one dot product per output element, in double (i64 for integers). */
static void tensor__matmul_reference(tensor__call *c, const tensor__mm_geom *g) {
    const tensor *a = c->in[0], *b = c->in[1];
    tensor *out = c->out;
    int64_t ea = (int64_t)tensor__dtype_sizes[a->dtype], eb = (int64_t)tensor__dtype_sizes[b->dtype];
    size_t eo = tensor__dtype_sizes[out->dtype];
    bool ints = !tensor__is_float(out->dtype);
    int64_t idx[TENSOR_MAX_DIMS] = {0};
    char *o = tensor__data(out);
    for (int64_t bi = 0; bi < g->batches; bi++) {
        int64_t ao = a->offset, bo = b->offset;
        for (int d = 0; d < g->nb; d++) { ao += idx[d] * g->a_bs[d]; bo += idx[d] * g->b_bs[d]; }
        const char *pa = (const char *)a->storage->data + ao * ea, *pb = (const char *)b->storage->data + bo * eb;
        for (int64_t i = 0; i < g->n; i++)
            for (int64_t j = 0; j < g->m; j++) {
                char *dst = o + (size_t)((bi * g->n + i) * g->m + j) * eo;
                if (ints) {
                    int64_t acc = 0;
                    for (int64_t p = 0; p < g->k; p++)
                        acc = tensor__iadd(acc, tensor__imul(tensor__load_i64(pa + (i * g->a_rs + p * g->a_cs) * ea, a->dtype),
                                                             tensor__load_i64(pb + (p * g->b_rs + j * g->b_cs) * eb, b->dtype)));
                    tensor__store_i64(dst, out->dtype, acc);
                } else {
                    double acc = 0;
                    for (int64_t p = 0; p < g->k; p++)
                        acc += tensor__load_f64(pa + (i * g->a_rs + p * g->a_cs) * ea, a->dtype) *
                               tensor__load_f64(pb + (p * g->b_rs + j * g->b_cs) * eb, b->dtype);
                    tensor__store_f64(dst, out->dtype, acc);
                }
            }
        tensor__next_index(g->nb, g->bshape, idx);
    }
}

/* The element offsets of batch bi's matrices of a and b. */
static void tensor__mm_batch_offsets(const tensor__mm_geom *g, int64_t bi, int64_t *ao, int64_t *bo) {
    int64_t ra = 0, rb = 0;
    for (int d = g->nb - 1; d >= 0; d--) {
        int64_t i = bi % g->bshape[d];
        bi /= g->bshape[d];
        ra += i * g->a_bs[d];
        rb += i * g->b_bs[d];
    }
    *ao = ra;
    *bo = rb;
}

/* A range of batches of a floating matmul: one strided GEMM per batch, straight from the operands'
   storage (of dtype sd) into the output (of the compute dtype ct). */
typedef struct {
    const tensor__mm_geom *g;
    tensor_dtype ct, sd;
    const char *a, *b; /* element 0 of a and b */
    char *o;
    int oom;           /* a GEMM had no memory (set from any thread) */
} tensor__mm_job;

static void tensor__mm_batches(int64_t begin, int64_t end, void *ctx) {
    tensor__mm_job *j = (tensor__mm_job *)ctx;
    const tensor__mm_geom *g = j->g;
    size_t cs = tensor__dtype_sizes[j->ct], es = tensor__dtype_sizes[j->sd];
    for (int64_t bi = begin; bi < end; bi++) {
        int64_t ao, bo;
        tensor__mm_batch_offsets(g, bi, &ao, &bo);
        TENSOR__GEMM_IN_TASK(j->oom, tensor__gemm_strided(j->ct, j->sd, g->n, g->m, g->k, j->a + (size_t)ao * es, g->a_rs, g->a_cs, j->b + (size_t)bo * es,
                                                          g->b_rs, g->b_cs, j->o + (size_t)(bi * g->n * g->m) * cs, g->m, 1, false));
    }
}

/* The fast path. f32/f64: every transposition and batch broadcast is a stride pattern of the
   GEMM, so operands are read in place. When b is shared by every batch and a's batches are
   evenly spaced rows (x [B, T, C] @ w [C, O]) the batches fold into one tall GEMM; otherwise
   there is one GEMM per batch, and batches too small for the GEMM to thread itself are spread
   over the threads instead. f16/bf16 the same, read in place too (the GEMM multiplies bf16 pairs,
   or converts to f32 as it packs), into an f32 result rounded into out once at the end. The
   integers (in i64): each operand
   is converted (or, for an integer operand with strided rows, packed) into a contiguous
   compute-dtype buffer once per distinct batch offset, then one GEMM per batch into the output
   (or a compute-dtype buffer converted back). */
static int tensor__matmul_fast(tensor__call *c, const tensor__mm_geom *g) {
    const tensor *a = c->in[0], *b = c->in[1];
    tensor *out = c->out;
    tensor_dtype dt = out->dtype, ct = tensor__gemm_dtype(dt);
    int64_t n = g->n, m = g->m, k = g->k;
    size_t cs = tensor__dtype_sizes[ct], eo = tensor__dtype_sizes[dt];
    int64_t ea = (int64_t)tensor__dtype_sizes[a->dtype], eb = (int64_t)tensor__dtype_sizes[b->dtype];
    bool half = ct == TENSOR_F32 && (dt == TENSOR_F16 || dt == TENSOR_BF16);
    if (ct != TENSOR_I64 && a->dtype == dt && b->dtype == dt && (dt == ct || half)) {
        tensor__mm_geom fg = *g;
        /* rs: the stride of the folded rows; next: where the next batch dim must step */
        bool fold = fg.batches > 1, have = n > 1;
        int64_t rs = fg.a_rs, next = n * fg.a_rs;
        for (int d = fg.nb - 1; d >= 0 && fold; d--) {
            if (fg.bshape[d] == 1) continue;
            if (!have) { rs = fg.a_bs[d]; next = rs; have = true; } /* one row per batch: its batch stride */
            fold = fg.b_bs[d] == 0 && fg.a_bs[d] == next;
            if (fold) next *= fg.bshape[d]; /* a's size times stride there: fits (>>shapes) */
        }
        if (fold) { /* n * batches rows of a, rs apart, against one b */
            fg.n = n * fg.batches;
            fg.a_rs = rs;
            fg.nb = 0;
            fg.batches = 1;
        }
        tensor__mm_job j;
        j.oom = 0;
        j.g = &fg;
        j.ct = ct;
        j.sd = dt;
        j.a = (const char *)a->storage->data + a->offset * ea;
        j.b = (const char *)b->storage->data + b->offset * eb;
        int64_t count = fg.batches * fg.n * m;
        float *acc = half ? (float *)tensor__cache_alloc((size_t)count * sizeof(float)) : NULL; /* (cached: no page faults) */
        if (half && !acc) { tensor__fail(c->fn, "out of memory allocating matmul scratch"); return 1; }
        j.o = half ? (char *)acc : tensor__data(out);
        int64_t per = tensor__work_mul(tensor__work_mul(fg.n, m), k);
        if (tensor__gemm_spread(fg.batches, fg.n, m, k))
            tensor__parallel_for(fg.batches, TENSOR__GEMM_PAR_MIN / (per > 0 ? per : 1) + 1, tensor__mm_batches, &j);
        else
            tensor__mm_batches(0, fg.batches, &j);
        if (half && !TENSOR__TASK_FAILED(j.oom)) tensor__f32_to_half((uint16_t *)(void *)tensor__data(out), acc, count, dt == TENSOR_BF16);
        tensor__cache_free(acc);
        if (TENSOR__TASK_FAILED(j.oom)) { tensor__fail(c->fn, "out of memory allocating matmul scratch"); return 1; }
        return 0;
    }
    bool a_direct = a->dtype == ct && (g->a_cs == 1 || k == 1);
    bool b_direct = b->dtype == ct && (g->b_cs == 1 || m == 1);
    bool o_direct = dt == ct;
    void *pa = a_direct ? NULL : tensor__scratch(c->fn, (size_t)(n * k) * cs);
    void *pb = b_direct ? NULL : tensor__scratch(c->fn, (size_t)(k * m) * cs);
    void *po = o_direct ? NULL : tensor__scratch(c->fn, (size_t)(n * m) * cs);
    if ((!a_direct && !pa) || (!b_direct && !pb) || (!o_direct && !po)) {
        tensor__free_aligned(pa); tensor__free_aligned(pb); tensor__free_aligned(po);
        return 1;
    }
    int64_t last_a = -1, last_b = -1;
    char *o = tensor__data(out);
    for (int64_t bi = 0; bi < g->batches; bi++) {
        int64_t ao, bo;
        tensor__mm_batch_offsets(g, bi, &ao, &bo);
        ao += a->offset;
        bo += b->offset;
        const char *sa = (const char *)a->storage->data + ao * ea, *sb = (const char *)b->storage->data + bo * eb;
        if (!a_direct && ao != last_a) tensor__pack(pa, ct, sa, a->dtype, n, k, g->a_rs, g->a_cs);
        if (!b_direct && bo != last_b) tensor__pack(pb, ct, sb, b->dtype, k, m, g->b_rs, g->b_cs);
        last_a = ao;
        last_b = bo;
        char *dst = o + (size_t)(bi * n * m) * eo;
        if (!tensor__gemm(ct, n, m, k, a_direct ? (const void *)sa : pa, a_direct ? g->a_rs : k,
                          b_direct ? (const void *)sb : pb, b_direct ? g->b_rs : m, o_direct ? (void *)dst : po, m)) {
            tensor__free_aligned(pa); tensor__free_aligned(pb); tensor__free_aligned(po);
            tensor__fail(c->fn, "out of memory allocating matmul scratch");
            return 1;
        }
        if (!o_direct) tensor__unpack(dst, dt, po, ct, n * m);
    }
    tensor__free_aligned(pa);
    tensor__free_aligned(pb);
    tensor__free_aligned(po);
    return 0;
}

/* out: [batch..., n, m] (the n or m dim absent where a or b is 1-D) */
static int tensor__cpu_matmul(tensor__call *c) {
    tensor__mm_geom g;
    tensor__mm_geometry(c->in[0], c->in[1], c->out, &g);
    if (tensor__numel_of(c->out->ndim, c->out->shape) == 0) return 0;
    if (g.k == 0) { tensor__fill(c->out, 0); return 0; }
    if (tensor__reference_kernels) { tensor__matmul_reference(c, &g); return 0; }
    return tensor__matmul_fast(c, &g);
}

TENSOR_API tensor *tensor_matmul(tensor *a, tensor *b) {
    const char *fn = "tensor_matmul";
    TENSOR__CHECK_ARG(fn, a);
    TENSOR__CHECK_ARG(fn, b);
    tensor *ins[2] = {a, b};
    if (!tensor__same_device(fn, 2, ins)) return NULL;
    if (a->ndim == 0 || b->ndim == 0)
        return tensor__fail(fn, "both arguments need at least 1 dim, got shapes %s and %s", tensor__shape_of(a), tensor__shape_of(b));
    if (a->dtype != b->dtype)
        return tensor__fail(fn, "expected both arguments to have the same dtype, got %s and %s", tensor__dtype_names[a->dtype], tensor__dtype_names[b->dtype]);
    if (a->dtype == TENSOR_BOOL) return tensor__fail(fn, "not supported for bool tensors");
    int ad = a->ndim, bd = b->ndim;
    int64_t ka = a->shape[ad - 1], kb = bd == 1 ? b->shape[0] : b->shape[bd - 2];
    if (ka != kb)
        return tensor__fail(fn, "shapes %s and %s cannot be multiplied (%lld != %lld)", tensor__shape_of(a), tensor__shape_of(b), (long long)ka, (long long)kb);
    /* batch dims: everything before the last two dims, broadcast */
    int abn = ad >= 2 ? ad - 2 : 0, bbn = bd >= 2 ? bd - 2 : 0, nb = abn > bbn ? abn : bbn;
    int64_t shape[TENSOR_MAX_DIMS];
    for (int i = 0; i < nb; i++) {
        int ai = i - (nb - abn), bi = i - (nb - bbn);
        int64_t da = ai >= 0 ? a->shape[ai] : 1, db = bi >= 0 ? b->shape[bi] : 1;
        if (da != db && da != 1 && db != 1) {
            char sa[160], sb[160];
            return tensor__fail(fn, "batch dims %s and %s of shapes %s and %s cannot be broadcast (size %lld vs %lld)",
                                tensor__shape_str(sa, sizeof sa, abn, a->shape), tensor__shape_str(sb, sizeof sb, bbn, b->shape),
                                tensor__shape_of(a), tensor__shape_of(b), (long long)da, (long long)db);
        }
        shape[i] = da == 1 ? db : da;
    }
    int nd = nb;
    if (ad >= 2) shape[nd++] = a->shape[ad - 2];
    if (bd >= 2) shape[nd++] = b->shape[bd - 1];
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_matmul);
    c.n_in = 2;
    c.in[0] = a;
    c.in[1] = b;
    c.out = tensor__new(fn, nd, shape, a->dtype, a->storage->device);
    return c.out ? tensor__dispatch(&c) : NULL;
}

/* True when shape a broadcasts to exactly shape b (b does not grow); records nothing. */
static bool tensor__broadcasts_to(int na, const int64_t *a, int nb, const int64_t *b) {
    if (na > nb) return false;
    for (int i = 1; i <= na; i++)
        if (a[na - i] != b[nb - i] && a[na - i] != 1) return false;
    return true;
}

/* x @ weight^T + bias, written with matmul, transpose and add so autograd flows through them. */
TENSOR_API tensor *tensor_linear(tensor *x, tensor *weight, tensor *bias) {
    const char *fn = "tensor_linear";
    TENSOR__CHECK_ARG(fn, x);
    TENSOR__CHECK_ARG(fn, weight);
    tensor *ins[3] = {x, weight, bias};
    if (!tensor__same_device(fn, 3, ins)) return NULL;
    if (x->ndim == 0) return tensor__fail(fn, "input must have at least 1 dim, got a 0-dim tensor");
    if (weight->ndim != 1 && weight->ndim != 2)
        return tensor__fail(fn, "weight must be [out_features, in_features] (or 1-D), got shape %s", tensor__shape_of(weight));
    if (x->dtype != weight->dtype || (bias && bias->dtype != x->dtype))
        return tensor__fail(fn, "input, weight and bias must have the same dtype, got %s, %s and %s", tensor__dtype_names[x->dtype],
                            tensor__dtype_names[weight->dtype], bias ? tensor__dtype_names[bias->dtype] : "none");
    if (!tensor__is_float(x->dtype) && x->dtype != TENSOR_I32 && x->dtype != TENSOR_I64 && x->dtype != TENSOR_U8)
        return tensor__fail(fn, "not supported for %s tensors", tensor__dtype_names[x->dtype]);
    int64_t in = x->shape[x->ndim - 1], win = weight->shape[weight->ndim - 1];
    if (in != win)
        return tensor__fail(fn, "input shape %s and weight shape %s are incompatible (in_features %lld != %lld)", tensor__shape_of(x),
                            tensor__shape_of(weight), (long long)in, (long long)win);
    /* the bias must broadcast onto the output [..., out_features] without growing it */
    int64_t oshape[TENSOR_MAX_DIMS];
    int ond = 0;
    for (int d = 0; d < x->ndim - 1; d++) oshape[ond++] = x->shape[d];
    if (weight->ndim == 2) oshape[ond++] = weight->shape[0];
    if (bias && !tensor__broadcasts_to(bias->ndim, bias->shape, ond, oshape)) {
        char b[160];
        return tensor__fail(fn, "bias of shape %s does not broadcast to the output shape %s (weight %s)", tensor__shape_of(bias),
                            tensor__shape_str(b, sizeof b, ond, oshape), tensor__shape_of(weight));
    }
    tensor *wt = NULL; /* a 1-D weight is used as it is, so autograd sees weight itself */
    if (weight->ndim == 2 && !(wt = tensor_transpose(weight, 0, 1))) return NULL;
    tensor *y = tensor_matmul(x, wt ? wt : weight);
    tensor_free(wt);
    if (!y || !bias) return y;
    tensor *r = tensor_add(y, bias);
    tensor_free(y);
    return r;
}

// >>nn -----------------------------------------------------------------------------------------
/* Rows along one dim: the start offsets (in elements) of every row of up to two tensors of one
   shape, walked in row-major order of the other dims. dim -1 stands for the single one-element
   row of a 0-dim tensor. */
typedef struct {
    int nd;
    int64_t shape[TENSOR_MAX_DIMS], idx[TENSOR_MAX_DIMS], stride[2][TENSOR_MAX_DIMS];
    int64_t off[2], count;
} tensor__rows;

static void tensor__rows_init(tensor__rows *r, const tensor *t0, const tensor *t1, int dim) {
    r->nd = 0;
    r->count = 1;
    for (int d = 0; d < t0->ndim; d++) {
        if (d == dim) continue;
        r->shape[r->nd] = t0->shape[d];
        r->stride[0][r->nd] = t0->strides[d];
        r->stride[1][r->nd] = t1->strides[d];
        r->idx[r->nd] = 0;
        r->count *= t0->shape[d];
        r->nd++;
    }
    r->off[0] = t0->offset;
    r->off[1] = t1->offset;
}

static void tensor__rows_next(tensor__rows *r) {
    for (int d = r->nd - 1; d >= 0; d--) {
        r->off[0] += r->stride[0][d];
        r->off[1] += r->stride[1][d];
        if (++r->idx[d] < r->shape[d]) return;
        r->off[0] -= r->stride[0][d] * r->shape[d];
        r->off[1] -= r->stride[1][d] * r->shape[d];
        r->idx[d] = 0;
    }
}

/* dst[i] = t's element at offset off + i * stride (elements), as double. */
static void tensor__load_row(double *dst, const tensor *t, int64_t off, int64_t stride, int64_t n) {
    const char *base = (const char *)t->storage->data;
    if (t->dtype == TENSOR_F32) { const float *s = (const float *)base + off; for (int64_t i = 0; i < n; i++) dst[i] = s[i * stride]; }
    else if (t->dtype == TENSOR_F64) { const double *s = (const double *)base + off; for (int64_t i = 0; i < n; i++) dst[i] = s[i * stride]; }
    else {
        int64_t esz = (int64_t)tensor__dtype_sizes[t->dtype];
        for (int64_t i = 0; i < n; i++) dst[i] = tensor__load_f64(base + (off + i * stride) * esz, t->dtype);
    }
}

/* t's elements at offset off + i * stride = src[i], rounded to t's dtype. */
static void tensor__store_row(tensor *t, int64_t off, int64_t stride, const double *src, int64_t n) {
    char *base = (char *)t->storage->data;
    if (t->dtype == TENSOR_F32) { float *d = (float *)base + off; for (int64_t i = 0; i < n; i++) d[i * stride] = (float)src[i]; }
    else if (t->dtype == TENSOR_F64) { double *d = (double *)base + off; for (int64_t i = 0; i < n; i++) d[i * stride] = src[i]; }
    else {
        int64_t esz = (int64_t)tensor__dtype_sizes[t->dtype];
        for (int64_t i = 0; i < n; i++) tensor__store_f64(base + (off + i * stride) * esz, t->dtype, src[i]);
    }
}

/* A 1-D optional parameter (norm weight or bias) as n doubles; fill where absent. */
static double *tensor__param_row(const char *fn, const tensor *t, int64_t n, double fill) {
    double *v = (double *)tensor__scratch(fn, (size_t)n * sizeof(double));
    if (!v) return NULL;
    if (t) tensor__load_row(v, t, t->offset, t->strides[0], n);
    else for (int64_t i = 0; i < n; i++) v[i] = fill;
    return v;
}

/* ---- softmax, log_softmax ---- */

/* Moves r (just initialized) to row q. */
static void tensor__rows_seek(tensor__rows *r, int64_t q) {
    if (q == 0) return; /* already there; and with no rows (a size-0 dim) nothing to divide by */
    for (int d = r->nd - 1; d >= 0; d--) {
        int64_t i = q % r->shape[d];
        q /= r->shape[d];
        r->idx[d] = i;
        r->off[0] += i * r->stride[0][d];
        r->off[1] += i * r->stride[1][d];
    }
}


/* One row of softmax (or log_softmax) in double, its elements xs and ys apart: the reference
   formula, for the rows with a NaN or an infinity that the fast path hands back (and for strided
   rows when there is no memory to gather them). */
static void tensor__softmax_row_f32(float *y, int64_t ys, const float *x, int64_t xs, int64_t n, bool log_form) {
    double mx = -INFINITY, sum = 0;
    for (int64_t i = 0; i < n; i++) if (x[i * xs] > mx) mx = x[i * xs];
    for (int64_t i = 0; i < n; i++) sum += exp((double)x[i * xs] - mx);
    if (log_form) {
        double lse = mx + log(sum);
        for (int64_t i = 0; i < n; i++) y[i * ys] = (float)((double)x[i * xs] - lse);
    } else {
        for (int64_t i = 0; i < n; i++) y[i * ys] = (float)(exp((double)x[i * xs] - mx) / sum);
    }
}

typedef struct { const tensor *x; tensor *y; int dim; int64_t len; bool log_form; int oom; } tensor__softmax_task;

/* Rows [begin, end) of an f32 softmax: max and e^(x - max) in one pass (the exponentials land in
   y), then one scaling pass. A row whose elements are not adjacent in x or y (softmax over a dim
   other than the innermost) is gathered into a buffer, done there and scattered back: the rows
   of a chunk sit side by side in memory, so the gathers share cache lines. */
static void tensor__softmax_rows_f32(int64_t begin, int64_t end, void *vt) {
    tensor__softmax_task *t = (tensor__softmax_task *)vt;
    tensor__rows r;
    tensor__rows_init(&r, t->x, t->y, t->dim);
    tensor__rows_seek(&r, begin);
    const float *xb = (const float *)t->x->storage->data;
    float *yb = (float *)t->y->storage->data;
    int64_t n = t->len, xs = t->x->strides[t->dim], ys = t->y->strides[t->dim];
    bool strided = n > 1 && (xs != 1 || ys != 1);
    float *buf = strided ? (float *)tensor__alloc_aligned(2 * (size_t)n * sizeof(float)) : NULL; /* (pool threads: no cache) */
    if (strided && !buf) { /* the double formula would round differently: an error, not a silent change */
        __atomic_store_n(&t->oom, 1, __ATOMIC_RELAXED);
        return;
    }
    for (int64_t q = begin; q < end; q++, tensor__rows_next(&r)) {
        const float *x = xb + r.off[0];
        float *y = yb + r.off[1], m;
        if (strided) {
            for (int64_t i = 0; i < n; i++) buf[i] = x[i * xs];
            x = buf, y = buf + n;
        }
        double s = tensor__row_maxsumexp_f32(t->log_form ? NULL : y, x, n, &m);
        if (s != s) tensor__softmax_row_f32(y, 1, x, 1, n, t->log_form);
        else if (t->log_form) tensor__row_sub2_f32(y, x, n, m, (float)log(s));
        else tensor__row_affine_f32(y, y, n, (float)(1.0 / s), 0.0f);
        if (strided)
            for (int64_t i = 0; i < n; i++) yb[r.off[1] + i * ys] = y[i];
    }
    tensor__free_aligned(buf);
}

/* out: same shape as x; each row along dim (ip[0]) becomes exp(x - max) / sum, or its log,
   computed in double. A row of -inf (fully masked) gives NaN, as in PyTorch. The fast path: f32
   rows, split over the pool. */
static int tensor__softmax_kernel(tensor__call *c, bool log_form) {
    tensor *x = c->in[0], *y = c->out;
    int dim = (int)c->ip[0];
    if (tensor__numel_of(x->ndim, x->shape) == 0) return 0;
    int64_t len = dim >= 0 ? x->shape[dim] : 1, xs = dim >= 0 ? x->strides[dim] : 0, ys = dim >= 0 ? y->strides[dim] : 0;
    if (!tensor__reference_kernels && x->dtype == TENSOR_F32 && dim >= 0) {
        tensor__softmax_task t;
        t.x = x;
        t.y = y;
        t.dim = dim;
        t.len = len;
        t.log_form = log_form;
        t.oom = 0;
        tensor__parallel_for(tensor__numel_of(x->ndim, x->shape) / len, tensor__grain(len), tensor__softmax_rows_f32, &t);
        if (TENSOR__TASK_FAILED(t.oom)) { tensor__fail(c->fn, "out of memory allocating %lld floats of scratch", (long long)(2 * len)); return 1; }
        return 0;
    }
    double *row = (double *)tensor__scratch(c->fn, (size_t)len * sizeof(double));
    if (!row) return 1;
    tensor__rows r;
    tensor__rows_init(&r, x, y, dim);
    for (int64_t q = 0; q < r.count; q++, tensor__rows_next(&r)) {
        tensor__load_row(row, x, r.off[0], xs, len);
        double mx = -INFINITY, sum = 0;
        for (int64_t i = 0; i < len; i++) if (row[i] > mx) mx = row[i];
        for (int64_t i = 0; i < len; i++) sum += exp(row[i] - mx);
        if (log_form) {
            double lse = mx + log(sum);
            for (int64_t i = 0; i < len; i++) row[i] = row[i] - lse;
        } else {
            for (int64_t i = 0; i < len; i++) row[i] = exp(row[i] - mx) / sum;
        }
        tensor__store_row(y, r.off[1], ys, row, len);
    }
    tensor__free_aligned(row);
    return 0;
}
static int tensor__cpu_softmax(tensor__call *c) { return tensor__softmax_kernel(c, false); }
static int tensor__cpu_log_softmax(tensor__call *c) { return tensor__softmax_kernel(c, true); }

/* Fused backward of softmax (s (g - sum(g s))) and log_softmax (g - s sum(g)) along dim, with s
   recomputed from x row by row: one kernel instead of five ops and their temporaries. Used by the
   derivatives when the backward pass is not itself recorded (no create_graph). */
#define TENSOR__DEFINE_SOFTMAX_BWD_ROW(sfx, T)                                                            \
    static void tensor__softmax_bwd_row_##sfx(T *gx, const T *x, const T *g, int64_t n, bool log_form) { \
        double mx = -INFINITY, sum = 0, dot = 0;                                                         \
        for (int64_t i = 0; i < n; i++) if (x[i] > mx) mx = x[i];                                        \
        for (int64_t i = 0; i < n; i++) sum += exp((double)x[i] - mx);                                   \
        for (int64_t i = 0; i < n; i++) dot += log_form ? (double)g[i] : (double)g[i] * (exp((double)x[i] - mx) / sum); \
        for (int64_t i = 0; i < n; i++) {                                                                \
            double s = exp((double)x[i] - mx) / sum;                                                     \
            gx[i] = (T)(log_form ? (double)g[i] - s * dot : s * ((double)g[i] - dot));                   \
        }                                                                                                \
    }
TENSOR__DEFINE_SOFTMAX_BWD_ROW(f32, float)
TENSOR__DEFINE_SOFTMAX_BWD_ROW(f64, double)

typedef struct { const char *x, *g; char *gx; int64_t len; bool log_form, f32; } tensor__softmax_bwd_task;
static void tensor__softmax_bwd_rows(int64_t begin, int64_t end, void *vt) {
    const tensor__softmax_bwd_task *t = (const tensor__softmax_bwd_task *)vt;
    int64_t n = t->len;
    for (int64_t q = begin; q < end; q++) {
        if (!t->f32) {
            tensor__softmax_bwd_row_f64((double *)t->gx + q * n, (const double *)t->x + q * n, (const double *)t->g + q * n, n, t->log_form);
            continue;
        }
        float *gx = (float *)t->gx + q * n, m;
        const float *x = (const float *)t->x + q * n, *g = (const float *)t->g + q * n;
        double s = tensor__row_maxsumexp_f32(gx, x, n, &m); /* gx = e^(x - max) */
        if (s != s) tensor__softmax_bwd_row_f32(gx, x, g, n, t->log_form);
        else if (t->log_form) tensor__row_fms_f32(gx, g, n, (float)(tensor__row_sum_f32(g, n) / s));
        else tensor__row_smbwd_f32(gx, g, n, (float)(1.0 / s), (float)(tensor__row_dot_f32(g, gx, n) / s));
    }
}

/* 1 with *gx set, 0 when this path does not take the case (not f32/f64, or dim is not the
   innermost dim), -1 on error. */
static int tensor__softmax_backward(const char *fn, tensor *x, tensor *g, int dim, bool log_form, tensor **gx) {
    if (tensor__reference_kernels || (x->dtype != TENSOR_F32 && x->dtype != TENSOR_F64)) return 0;
    for (int d = dim + 1; d < x->ndim; d++) if (x->shape[d] != 1) return 0;
    tensor *xc = tensor__contiguous(x) ? x : tensor__contiguous_copy(fn, x, x->dtype);
    tensor *gc = tensor__contiguous(g) && g->dtype == x->dtype ? g : tensor__contiguous_copy(fn, g, x->dtype);
    tensor *r = xc && gc ? tensor__new_like(fn, x, x->dtype) : NULL;
    if (r && tensor__numel_of(x->ndim, x->shape) > 0) {
        tensor__softmax_bwd_task t;
        t.x = tensor__data(xc);
        t.g = tensor__data(gc);
        t.gx = tensor__data(r);
        t.len = x->shape[dim];
        t.log_form = log_form;
        t.f32 = x->dtype == TENSOR_F32;
        tensor__parallel_for(tensor__numel_of(x->ndim, x->shape) / t.len, tensor__grain(t.len), tensor__softmax_bwd_rows, &t);
    }
    if (xc != x) tensor_free(xc);
    if (gc != g) tensor_free(gc);
    *gx = r;
    return r ? 1 : -1;
}

static tensor *tensor__softmax_front(tensor_op op, tensor *t, int dim) {
    const char *fn = tensor__ops[op].fn;
    TENSOR__CHECK_ARG(fn, t);
    if (!tensor__is_float(t->dtype))
        return tensor__fail(fn, "expected a floating tensor, got %s (convert it with tensor_to_dtype)", tensor__dtype_names[t->dtype]);
    int d = tensor__wrap_dim(fn, dim, t->ndim ? t->ndim : 1);
    if (d < 0) return NULL;
    tensor__call c;
    tensor__call_init(&c, op);
    c.n_in = 1;
    c.in[0] = t;
    c.ip[0] = t->ndim ? d : -1;
    c.out = tensor__new_like(fn, t, t->dtype);
    return c.out ? tensor__dispatch(&c) : NULL;
}
TENSOR_API tensor *tensor_softmax(tensor *t, int dim) { return tensor__softmax_front(TENSOR_OP_softmax, t, dim); }
TENSOR_API tensor *tensor_log_softmax(tensor *t, int dim) { return tensor__softmax_front(TENSOR_OP_log_softmax, t, dim); }

/* ---- layer_norm, rms_norm (over the last dim) ---- */

/* An optional norm parameter (weight, bias) as a contiguous array of dtype dt: the tensor's own
   data when it already is one, else a converted copy in *own (the caller frees it). NULL for an
   absent parameter; *failed on out-of-memory. */
static const void *tensor__param_data(const char *fn, const tensor *p, tensor_dtype dt, tensor **own, bool *failed) {
    *own = NULL;
    if (!p) return NULL;
    if (p->dtype == dt && (p->strides[0] == 1 || p->shape[0] <= 1)) return tensor__data(p);
    *own = tensor__contiguous_copy(fn, p, dt);
    if (!*own) { *failed = true; return NULL; }
    return tensor__data(*own);
}

typedef struct { const tensor *x; tensor *y; const float *w, *b; double eps; int64_t n; bool center; } tensor__norm_task;

/* Rows [begin, end) of an f32 layer_norm (center) or rms_norm with contiguous rows: the mean (of x
   or of x^2) and the variance accumulate in f32 lanes per block and in double across blocks. */
static void tensor__norm_rows_f32(int64_t begin, int64_t end, void *vt) {
    const tensor__norm_task *t = (const tensor__norm_task *)vt;
    int last = t->x->ndim - 1;
    tensor__rows r;
    tensor__rows_init(&r, t->x, t->y, last);
    tensor__rows_seek(&r, begin);
    int64_t n = t->n;
    for (int64_t q = begin; q < end; q++, tensor__rows_next(&r)) {
        const float *x = (const float *)t->x->storage->data + r.off[0];
        float *y = (float *)t->y->storage->data + r.off[1];
        double mean = t->center ? tensor__row_sum_f32(x, n) / (double)n : 0;
        double var = tensor__row_sqdev_f32(x, n, (float)mean) / (double)n;
        tensor__row_norm_f32(y, x, n, mean, (float)(1.0 / sqrt(var + t->eps)), t->w, t->b);
    }
}

/* The f32 fast path of both norms; 0, or 1 after an error. */
static int tensor__norm_fast_f32(tensor__call *c, bool center) {
    tensor *x = c->in[0], *own_w, *own_b;
    bool failed = false;
    tensor__norm_task t;
    t.w = (const float *)tensor__param_data(c->fn, c->in[1], TENSOR_F32, &own_w, &failed);
    t.b = center ? (const float *)tensor__param_data(c->fn, c->in[2], TENSOR_F32, &own_b, &failed) : NULL;
    if (!center) own_b = NULL;
    if (!failed) {
        t.x = x;
        t.y = c->out;
        t.eps = c->p[0];
        t.n = x->shape[x->ndim - 1];
        t.center = center;
        tensor__parallel_for(tensor__numel_of(x->ndim, x->shape) / t.n, tensor__grain(t.n), tensor__norm_rows_f32, &t);
    }
    tensor_free(own_w);
    tensor_free(own_b);
    return failed;
}

static bool tensor__norm_fast_ok(const tensor__call *c) {
    const tensor *x = c->in[0];
    return !tensor__reference_kernels && x->dtype == TENSOR_F32 && (x->strides[x->ndim - 1] == 1 || x->shape[x->ndim - 1] == 1);
}

/* out: [..., C] = (x - mean) / sqrt(var + eps) * weight + bias, biased variance, in double. */
static int tensor__cpu_layer_norm(tensor__call *c) {
    tensor *x = c->in[0], *y = c->out;
    int last = x->ndim - 1;
    int64_t n = x->shape[last];
    if (tensor__numel_of(x->ndim, x->shape) == 0) return 0;
    if (tensor__norm_fast_ok(c)) return tensor__norm_fast_f32(c, true);
    double *row = (double *)tensor__scratch(c->fn, (size_t)n * sizeof(double));
    double *w = tensor__param_row(c->fn, c->in[1], n, 1.0), *b = tensor__param_row(c->fn, c->in[2], n, 0.0);
    if (!row || !w || !b) { tensor__free_aligned(row); tensor__free_aligned(w); tensor__free_aligned(b); return 1; }
    tensor__rows r;
    tensor__rows_init(&r, x, y, last);
    for (int64_t q = 0; q < r.count; q++, tensor__rows_next(&r)) {
        tensor__load_row(row, x, r.off[0], x->strides[last], n);
        double mean = 0, var = 0;
        for (int64_t i = 0; i < n; i++) mean += row[i];
        mean /= (double)n;
        for (int64_t i = 0; i < n; i++) var += (row[i] - mean) * (row[i] - mean);
        var /= (double)n;
        double rstd = 1.0 / sqrt(var + c->p[0]);
        for (int64_t i = 0; i < n; i++) row[i] = (row[i] - mean) * rstd * w[i] + b[i];
        tensor__store_row(y, r.off[1], y->strides[last], row, n);
    }
    tensor__free_aligned(row);
    tensor__free_aligned(w);
    tensor__free_aligned(b);
    return 0;
}

/* out: [..., C] = x / sqrt(mean(x^2) + eps) * weight, in double. */
static int tensor__cpu_rms_norm(tensor__call *c) {
    tensor *x = c->in[0], *y = c->out;
    int last = x->ndim - 1;
    int64_t n = x->shape[last];
    if (tensor__numel_of(x->ndim, x->shape) == 0) return 0;
    if (tensor__norm_fast_ok(c)) return tensor__norm_fast_f32(c, false);
    double *row = (double *)tensor__scratch(c->fn, (size_t)n * sizeof(double));
    double *w = tensor__param_row(c->fn, c->in[1], n, 1.0);
    if (!row || !w) { tensor__free_aligned(row); tensor__free_aligned(w); return 1; }
    tensor__rows r;
    tensor__rows_init(&r, x, y, last);
    for (int64_t q = 0; q < r.count; q++, tensor__rows_next(&r)) {
        tensor__load_row(row, x, r.off[0], x->strides[last], n);
        double ms = 0;
        for (int64_t i = 0; i < n; i++) ms += row[i] * row[i];
        double rr = 1.0 / sqrt(ms / (double)n + c->p[0]);
        for (int64_t i = 0; i < n; i++) row[i] = row[i] * rr * w[i];
        tensor__store_row(y, r.off[1], y->strides[last], row, n);
    }
    tensor__free_aligned(row);
    tensor__free_aligned(w);
    return 0;
}

/* Fused backward of layer_norm (center) and rms_norm over the last dim, for f32 and f64 when the
   backward pass is not recorded: per row, with xhat = (x - mean) rstd and gh = g w,
   gx = rstd (gh - mean(gh) - xhat mean(gh xhat)) (rms_norm: mean 0, no mean(gh) term), and
   gw = sum over rows of g xhat, gb = sum over rows of g. Rows are dealt out in fixed groups whose
   gw/gb partial sums (double) add up in group order, so the result does not depend on the thread
   count. */
#define TENSOR__NORM_GROUP 64 /* rows per group of gw/gb partial sums */
static void tensor__norm_bwd_row_f64(double *gx, const double *x, const double *g, const double *w, int64_t n, double eps, bool center, double *gw, double *gb) {
    double mean = 0, var = 0, s1 = 0, s2 = 0;
    if (center) { for (int64_t i = 0; i < n; i++) mean += x[i]; mean /= (double)n; }
    for (int64_t i = 0; i < n; i++) var += (x[i] - mean) * (x[i] - mean);
    double rstd = 1.0 / sqrt(var / (double)n + eps);
    for (int64_t i = 0; i < n; i++) {
        double xh = (x[i] - mean) * rstd, gh = w ? g[i] * w[i] : g[i];
        s1 += gh;
        s2 += gh * xh;
        if (gw) gw[i] += g[i] * xh;
        if (gb) gb[i] += g[i];
    }
    double m1 = center ? s1 / (double)n : 0, m2 = s2 / (double)n;
    for (int64_t i = 0; i < n; i++) {
        double xh = (x[i] - mean) * rstd, gh = w ? g[i] * w[i] : g[i];
        gx[i] = rstd * (gh - m1 - xh * m2);
    }
}

typedef struct { const char *x, *g, *w; char *gx; double *gw, *gb; int64_t n, rows; double eps; bool center, f32; } tensor__norm_bwd_task;
static void tensor__norm_bwd_groups(int64_t begin, int64_t end, void *vt) {
    const tensor__norm_bwd_task *t = (const tensor__norm_bwd_task *)vt;
    int64_t n = t->n;
    for (int64_t grp = begin; grp < end; grp++) {
        double *gw = t->gw ? t->gw + grp * n : NULL, *gb = t->gb ? t->gb + grp * n : NULL;
        for (int64_t j = 0; j < n; j++) { if (gw) gw[j] = 0; if (gb) gb[j] = 0; }
        int64_t q1 = (grp + 1) * TENSOR__NORM_GROUP < t->rows ? (grp + 1) * TENSOR__NORM_GROUP : t->rows;
        for (int64_t q = grp * TENSOR__NORM_GROUP; q < q1; q++) {
            if (!t->f32) {
                tensor__norm_bwd_row_f64((double *)t->gx + q * n, (const double *)t->x + q * n, (const double *)t->g + q * n,
                                         (const double *)t->w, n, t->eps, t->center, gw, gb);
                continue;
            }
            const float *x = (const float *)t->x + q * n;
            double mean = t->center ? tensor__row_sum_f32(x, n) / (double)n : 0;
            double var = tensor__row_sqdev_f32(x, n, (float)mean) / (double)n;
            tensor__row_norm_bwd_f32((float *)t->gx + q * n, x, (const float *)t->g + q * n, (const float *)t->w, n, mean,
                                     (float)(1.0 / sqrt(var + t->eps)), t->center, gw, gb);
        }
    }
}

/* Sets *gx, *gw, *gb (each only where its pointer is not NULL; gb only for layer_norm). Returns 1
   when done, 0 when this path does not take the case (reference kernels, or a dtype other than
   f32/f64), -1 on error. */
static int tensor__norm_backward(const char *fn, bool center, tensor *x, tensor *w, tensor *g, double eps, tensor **gx, tensor **gw, tensor **gb) {
    if (tensor__reference_kernels || (x->dtype != TENSOR_F32 && x->dtype != TENSOR_F64)) return 0;
    tensor_dtype dt = x->dtype;
    int64_t n = x->shape[x->ndim - 1], rows = n ? tensor__numel_of(x->ndim, x->shape) / n : 0;
    int64_t groups = (rows + TENSOR__NORM_GROUP - 1) / TENSOR__NORM_GROUP;
    bool failed = false;
    tensor *own_w = NULL;
    tensor *xc = tensor__contiguous(x) ? x : tensor__contiguous_copy(fn, x, dt);
    tensor *gc = tensor__contiguous(g) && g->dtype == dt ? g : tensor__contiguous_copy(fn, g, dt);
    const void *wd = tensor__param_data(fn, w, dt, &own_w, &failed);
    tensor *rx = tensor__new_like(fn, x, dt);
    tensor *rw = gw ? tensor__new(fn, 1, &n, dt, TENSOR_CPU) : NULL, *rb = gb ? tensor__new(fn, 1, &n, dt, TENSOR_CPU) : NULL;
    size_t part_bytes = (size_t)(groups * n) * sizeof(double);
    double *pw = gw ? (double *)tensor__cache_alloc(part_bytes) : NULL, *pb = gb ? (double *)tensor__cache_alloc(part_bytes) : NULL;
    if ((gw && !pw) || (gb && !pb)) tensor__fail(fn, "out of memory allocating %zu bytes", part_bytes);
    if (!xc || !gc || failed || !rx || (gw && (!rw || !pw)) || (gb && (!rb || !pb))) failed = true;
    else if (rows > 0 && n > 0) {
        tensor__norm_bwd_task t;
        t.x = tensor__data(xc);
        t.g = tensor__data(gc);
        t.w = (const char *)wd;
        t.gx = tensor__data(rx);
        t.gw = pw;
        t.gb = pb;
        t.n = n;
        t.rows = rows;
        t.eps = eps;
        t.center = center;
        t.f32 = dt == TENSOR_F32;
        tensor__parallel_for(groups, tensor__grain(n) / TENSOR__NORM_GROUP + 1, tensor__norm_bwd_groups, &t);
    }
    if (!failed) { /* the groups' partial sums, in group order */
        for (int k = 0; k < 2; k++) {
            tensor *dst = k ? rb : rw;
            double *part = k ? pb : pw;
            if (!dst) continue;
            for (int64_t grp = 1; grp < groups; grp++)
                for (int64_t j = 0; j < n; j++) part[j] += part[grp * n + j];
            for (int64_t j = 0; j < n; j++) {
                double s = groups ? part[j] : 0;
                if (dt == TENSOR_F32) ((float *)tensor__data(dst))[j] = (float)s;
                else ((double *)tensor__data(dst))[j] = s;
            }
        }
    }
    if (xc != x) tensor_free(xc);
    if (gc != g) tensor_free(gc);
    tensor_free(own_w);
    tensor__cache_free(pw);
    tensor__cache_free(pb);
    if (failed) { tensor_free(rx); tensor_free(rw); tensor_free(rb); return -1; }
    if (gx) *gx = rx; else tensor_free(rx);
    if (gw) *gw = rw;
    if (gb) *gb = rb;
    return 1;
}

/* Checks an optional norm parameter: 1-D of the normalized size, floating. */
static bool tensor__check_norm_param(const char *fn, const char *what, const tensor *p, const tensor *x) {
    if (!p) return true;
    int64_t n = x->shape[x->ndim - 1];
    if (p->ndim != 1 || p->shape[0] != n) {
        tensor__fail(fn, "%s of shape %s does not match the normalized shape [%lld] (the last dim of input %s)", what, tensor__shape_of(p), (long long)n, tensor__shape_of(x));
        return false;
    }
    if (!tensor__is_float(p->dtype)) { tensor__fail(fn, "%s must be a floating tensor, got %s", what, tensor__dtype_names[p->dtype]); return false; }
    return true;
}

static tensor *tensor__norm_front(tensor_op op, tensor *x, tensor *weight, tensor *bias, double eps) {
    const char *fn = tensor__ops[op].fn;
    TENSOR__CHECK_ARG(fn, x);
    tensor *ins[3] = {x, weight, bias};
    if (!tensor__same_device(fn, 3, ins)) return NULL;
    if (x->ndim == 0) return tensor__fail(fn, "input must have at least 1 dim, got a 0-dim tensor");
    if (!tensor__is_float(x->dtype)) return tensor__fail(fn, "expected a floating input, got %s", tensor__dtype_names[x->dtype]);
    if (!tensor__check_norm_param(fn, "weight", weight, x) || !tensor__check_norm_param(fn, "bias", bias, x)) return NULL;
    tensor__call c;
    tensor__call_init(&c, op);
    c.n_in = 3;
    c.in[0] = x;
    c.in[1] = weight;
    c.in[2] = bias;
    c.p[0] = eps;
    c.out = tensor__new_like(fn, x, x->dtype);
    return c.out ? tensor__dispatch(&c) : NULL;
}
TENSOR_API tensor *tensor_layer_norm(tensor *x, tensor *weight, tensor *bias, double eps) { return tensor__norm_front(TENSOR_OP_layer_norm, x, weight, bias, eps); }
TENSOR_API tensor *tensor_rms_norm(tensor *x, tensor *weight, double eps) { return tensor__norm_front(TENSOR_OP_rms_norm, x, weight, NULL, eps); }

/* The vector level the kernels of this part may use: 2 for AVX2+FMA, 3 for AVX-512F as well (x86
   with gcc/clang), 0 for the plain loops. Chosen like the elementwise kernels (>>simd): the CPU's
   best, or a lower one named by TENSOR_SIMD, so the tests can run every path on one machine. */
#if TENSOR__SIMD_X86 /* gcc/clang on x86 without TENSOR_NO_SIMD; >>simd included <immintrin.h> */
#define TENSOR__NN_AVX2 1
#define TENSOR__NN_AVX512 1
#define TENSOR__AVX2_FN __attribute__((target("avx2,fma")))
#define TENSOR__AVX2_INLINE __attribute__((target("avx2,fma"), always_inline)) inline /* no call in the loops */
#define TENSOR__AVX512_FN __attribute__((target("avx512f,avx2,fma")))
/* Unrolls the next loop whole, so arrays of vectors indexed by its counter stay in registers (gcc
   -O2 keeps a 6-trip loop and its arrays in memory: 5x slower Winograd transforms, measured) */
#define TENSOR__UNROLL _Pragma("GCC unroll 8")
#else
#define TENSOR__NN_AVX2 0
#define TENSOR__NN_AVX512 0
#endif
static int tensor__nn_isa(void) {
#if TENSOR__NN_AVX512
    const tensor__simd_isa *v = tensor__simd();
    return !v ? 0 : v->width >= 16 ? 3 : v->width >= 8 ? 2 : 0;
#else
    return 0;
#endif
}

/* ---- convolutions: im2col + GEMM ---- */

/* One convolution as 2-D: conv1d is the case H = kH = 1 (stride, padding and dilation act on W). */
typedef struct {
    int64_t N, C, H, W, O, kH, kW, oH, oW, sh, sw, ph, pw, dh, dw, groups;
    int64_t xs[4], ws[4]; /* element strides of x [n, c, h, w] and w [o, c, h, w]; 0 on absent dims */
} tensor__conv_geom;

/* From x, w, the output (or its gradient: only its shape is read) and ip = {stride, padding,
   dilation, groups}. */
static void tensor__conv_geometry_of(const tensor *x, const tensor *w, const tensor *out, int sd, const int64_t *ip, tensor__conv_geom *g) {
    bool batched = x->ndim == sd + 2;
    int xd = x->ndim;
    int64_t s = ip[0], p = ip[1], d = ip[2];
    g->N = batched ? x->shape[0] : 1;
    g->xs[0] = batched ? x->strides[0] : 0;
    g->C = x->shape[xd - sd - 1];
    g->xs[1] = x->strides[xd - sd - 1];
    g->O = w->shape[0];
    g->ws[0] = w->strides[0];
    g->ws[1] = w->strides[1];
    g->W = x->shape[xd - 1];
    g->xs[3] = x->strides[xd - 1];
    g->kW = w->shape[w->ndim - 1];
    g->ws[3] = w->strides[w->ndim - 1];
    g->oW = out->shape[out->ndim - 1];
    g->sw = s; g->pw = p; g->dw = d;
    if (sd == 2) {
        g->H = x->shape[xd - 2]; g->xs[2] = x->strides[xd - 2];
        g->kH = w->shape[2]; g->ws[2] = w->strides[2];
        g->oH = out->shape[out->ndim - 2];
        g->sh = s; g->ph = p; g->dh = d;
    } else {
        g->H = 1; g->xs[2] = 0; g->kH = 1; g->ws[2] = 0; g->oH = 1;
        g->sh = 1; g->ph = 0; g->dh = 1;
    }
    g->groups = ip[3];
}

static void tensor__conv_geometry(const tensor__call *c, int sd, tensor__conv_geom *g) {
    tensor__conv_geometry_of(c->in[0], c->in[1], c->out, sd, c->ip, g);
}

/* The reference: the convolution sum written out, in double, straight from the strided inputs. */
static void tensor__conv_reference(tensor__call *c, const tensor__conv_geom *g) {
    const tensor *x = c->in[0], *w = c->in[1], *bias = c->in[2];
    tensor *out = c->out;
    int64_t ex = (int64_t)tensor__dtype_sizes[x->dtype], ew = (int64_t)tensor__dtype_sizes[w->dtype];
    size_t eo = tensor__dtype_sizes[out->dtype];
    const char *xb = (const char *)x->storage->data, *wb = (const char *)w->storage->data;
    int64_t Cg = g->C / g->groups, Og = g->O / g->groups;
    char *o = tensor__data(out);
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t oc = 0; oc < g->O; oc++)
            for (int64_t oh = 0; oh < g->oH; oh++)
                for (int64_t ow = 0; ow < g->oW; ow++) {
                    double acc = bias ? tensor__load_f64((const char *)bias->storage->data + (bias->offset + oc * bias->strides[0]) * (int64_t)tensor__dtype_sizes[bias->dtype], bias->dtype) : 0;
                    int64_t grp = oc / Og;
                    for (int64_t ic = 0; ic < Cg; ic++)
                        for (int64_t ki = 0; ki < g->kH; ki++)
                            for (int64_t kj = 0; kj < g->kW; kj++) {
                                int64_t ih = oh * g->sh - g->ph + ki * g->dh, iw = ow * g->sw - g->pw + kj * g->dw;
                                if (ih < 0 || ih >= g->H || iw < 0 || iw >= g->W) continue;
                                int64_t xo = x->offset + n * g->xs[0] + (grp * Cg + ic) * g->xs[1] + ih * g->xs[2] + iw * g->xs[3];
                                int64_t wo = w->offset + oc * g->ws[0] + ic * g->ws[1] + ki * g->ws[2] + kj * g->ws[3];
                                acc += tensor__load_f64(xb + xo * ex, x->dtype) * tensor__load_f64(wb + wo * ew, w->dtype);
                            }
                    tensor__store_f64(o + (size_t)(((n * g->O + oc) * g->oH + oh) * g->oW + ow) * eo, out->dtype, acc);
                }
}

/* d[i] += t[i], i < n, for rows that never overlap. As in the GEMM, the vector part runs to a
   multiple of 16 so gcc's -O2 cost model vectorizes it. */
#define TENSOR__DEFINE_ADD_ROW(sfx, T)                                                                   \
    static void tensor__add_row_##sfx(T *d, const T *t, int64_t n) {                                    \
        int64_t nv = n & ~(int64_t)15;                                                                  \
        TENSOR__IVDEP                                                                                   \
        for (int64_t i = 0; i < nv; i++) d[i] += t[i];                                                  \
        for (int64_t i = nv; i < n; i++) d[i] += t[i];                                                  \
    }
TENSOR__DEFINE_ADD_ROW(f32, float)
TENSOR__DEFINE_ADD_ROW(f64, double)

/* The output columns [*lo, *hi) whose input column ow * stride + off lies in [0, W); the
   others read padding. */
static void tensor__conv_span(int64_t off, int64_t stride, int64_t W, int64_t oW, int64_t *lo, int64_t *hi) {
    int64_t l = off >= 0 ? 0 : (-off + stride - 1) / stride;
    int64_t h = W - off <= 0 ? 0 : (W - off + stride - 1) / stride;
    if (h > oW) h = oW;
    if (l > h) l = h;
    *lo = l;
    *hi = h;
}

/* cols: [Cg * kH * kW, oH * oW] (rows ld elements apart) = the input patches of x: [Cg, H, W]
   (contiguous), zero outside.
   Each (channel, ki, kj) row is a strided copy of input rows: only the span of output columns
   that lands inside the input is read (a plain copy at stride 1); the rest is zero-filled. */
#define TENSOR__DEFINE_IM2COL(sfx, T)                                                                    \
    static void tensor__im2col_##sfx(T *cols, int64_t ld, const T *x, const tensor__conv_geom *g, int64_t Cg) { \
        for (int64_t ch = 0; ch < Cg; ch++)                                                             \
            for (int64_t ki = 0; ki < g->kH; ki++)                                                      \
                for (int64_t kj = 0; kj < g->kW; kj++) {                                                \
                    T *row = cols + ((ch * g->kH + ki) * g->kW + kj) * ld;                              \
                    int64_t off = kj * g->dw - g->pw, lo, hi;                                           \
                    tensor__conv_span(off, g->sw, g->W, g->oW, &lo, &hi);                               \
                    for (int64_t oh = 0; oh < g->oH; oh++) {                                            \
                        T *r = row + oh * g->oW;                                                        \
                        int64_t ih = oh * g->sh - g->ph + ki * g->dh;                                   \
                        if (ih < 0 || ih >= g->H) { for (int64_t ow = 0; ow < g->oW; ow++) r[ow] = 0; continue; } \
                        const T *xr = x + (ch * g->H + ih) * g->W;                                      \
                        for (int64_t ow = 0; ow < lo; ow++) r[ow] = 0;                                  \
                        if (g->sw == 1) { if (hi > lo) memcpy(r + lo, xr + lo + off, (size_t)(hi - lo) * sizeof(T)); } \
                        else for (int64_t ow = lo; ow < hi; ow++) r[ow] = xr[ow * g->sw + off];         \
                        for (int64_t ow = hi; ow < g->oW; ow++) r[ow] = 0;                              \
                    }                                                                                   \
                }                                                                                       \
    }
TENSOR__DEFINE_IM2COL(f32, float)
TENSOR__DEFINE_IM2COL(f64, double)
TENSOR__DEFINE_IM2COL(u16, uint16_t) /* bf16 operands of the bf16 GEMM kernel, moved as they are */

/* The adjoint of im2col: x: [Cg, H, W] (contiguous) += every patch entry of cols [Cg * kH * kW,
   oH * oW] (rows ld apart) at the input position it was read from (entries that fell in the padding
   are dropped). */
#define TENSOR__DEFINE_COL2IM(sfx, T)                                                                    \
    static void tensor__col2im_##sfx(T *x, const T *cols, int64_t ld, const tensor__conv_geom *g, int64_t Cg) { \
        for (int64_t ch = 0; ch < Cg; ch++)                                                             \
            for (int64_t ki = 0; ki < g->kH; ki++)                                                      \
                for (int64_t kj = 0; kj < g->kW; kj++) {                                                \
                    const T *row = cols + ((ch * g->kH + ki) * g->kW + kj) * ld;                        \
                    int64_t off = kj * g->dw - g->pw, lo, hi;                                           \
                    tensor__conv_span(off, g->sw, g->W, g->oW, &lo, &hi);                               \
                    for (int64_t oh = 0; oh < g->oH; oh++) {                                            \
                        int64_t ih = oh * g->sh - g->ph + ki * g->dh;                                   \
                        if (ih < 0 || ih >= g->H) continue;                                             \
                        const T *r = row + oh * g->oW;                                                  \
                        T *xr = x + (ch * g->H + ih) * g->W;                                            \
                        if (g->sw == 1 && hi > lo) {                                                    \
                            tensor__add_row_##sfx(xr + lo + off, r + lo, hi - lo);                      \
                        } else {                                                                        \
                            for (int64_t ow = lo; ow < hi; ow++) xr[ow * g->sw + off] += r[ow];         \
                        }                                                                               \
                    }                                                                                   \
                }                                                                                       \
    }
TENSOR__DEFINE_COL2IM(f32, float)
TENSOR__DEFINE_COL2IM(f64, double)

/* f32 im2col and col2im with AVX2 where the stride along W is 1 (any padding and dilation): each
   8-column chunk of a row is one load under the mask of the columns inside the input (the masked
   lanes read as 0, the padding). im2col writes each output row of cols; col2im runs the other way
   round, as a gather: each 8-column chunk of an input row sums, in registers, every cols entry that
   was read from it, and is stored once, so gx needs no zeroing and no read-modify-write. A row's
   last chunk overlaps the one before it when the row is not a multiple of 8 long (the lanes stored
   twice hold the same values). Rows shorter than 8 take the loops above. */
#define TENSOR__COL2IM_KW 16 /* the widest kernel of the AVX2 col2im (its masks sit in an array) */
#if TENSOR__NN_AVX2
static TENSOR__AVX2_INLINE __m256i tensor__conv_lanes(int64_t c0, int64_t lo, int64_t hi) { /* lo <= c0 + lane < hi */
    __m256i c = _mm256_add_epi32(_mm256_set1_epi32((int)c0), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    return _mm256_and_si256(_mm256_cmpgt_epi32(c, _mm256_set1_epi32((int)lo - 1)), _mm256_cmpgt_epi32(_mm256_set1_epi32((int)hi), c));
}
static TENSOR__AVX2_FN void tensor__im2col_avx2(float *cols, int64_t ld, const float *x, const tensor__conv_geom *g, int64_t Cg) {
    const int64_t H = g->H, W = g->W, oH = g->oH, oW = g->oW, sh = g->sh;
    for (int64_t ch = 0; ch < Cg; ch++)
        for (int64_t ki = 0; ki < g->kH; ki++) {
            int64_t ih0 = ki * g->dh - g->ph, oh_lo, oh_hi; /* output row oh reads input row oh * sh + ih0 */
            tensor__conv_span(ih0, sh, H, oH, &oh_lo, &oh_hi);
            for (int64_t kj = 0; kj < g->kW; kj++) {
                float *row = cols + ((ch * g->kH + ki) * g->kW + kj) * ld;
                int64_t off = kj * g->dw - g->pw, lo, hi; /* row entry ow reads input column ow + off */
                tensor__conv_span(off, 1, W, oW, &lo, &hi);
                for (int64_t c0 = 0; c0 < oW; c0 += 8) {
                    int64_t c = c0 + 8 > oW ? oW - 8 : c0, oh = 0;
                    __m256i m = tensor__conv_lanes(c, lo, hi);
                    const float *src = x + (ch * H + ih0) * W + off + c; /* + oh * sh * W */
                    float *dst = row + c;                                /* + oh * oW */
                    for (; oh < oh_lo; oh++) _mm256_storeu_ps(dst + oh * oW, _mm256_setzero_ps());
                    if (c >= lo && c + 8 <= hi)
                        for (; oh < oh_hi; oh++) _mm256_storeu_ps(dst + oh * oW, _mm256_loadu_ps(src + oh * sh * W));
                    else
                        for (; oh < oh_hi; oh++) _mm256_storeu_ps(dst + oh * oW, _mm256_maskload_ps(src + oh * sh * W, m));
                    for (; oh < oH; oh++) _mm256_storeu_ps(dst + oh * oW, _mm256_setzero_ps());
                }
            }
        }
    _mm256_zeroupper();
}
static TENSOR__AVX2_FN void tensor__col2im_avx2(float *x, const float *cols, int64_t ld, const tensor__conv_geom *g, int64_t Cg) {
    int64_t W = g->W, oW = g->oW, kW = g->kW;
    __m256i masks[TENSOR__COL2IM_KW];
    for (int64_t c0 = 0; c0 < W; c0 += 8) {
        int64_t c = c0 + 8 > W ? W - 8 : c0;
        for (int64_t kj = 0; kj < kW; kj++) {
            int64_t off = kj * g->dw - g->pw; /* input column iw was entry iw - off of the row */
            masks[kj] = tensor__conv_lanes(c, off > 0 ? off : 0, oW + off < W ? oW + off : W);
        }
        for (int64_t ch = 0; ch < Cg; ch++)
            for (int64_t ih = 0; ih < g->H; ih++) {
                __m256 acc = _mm256_setzero_ps();
                for (int64_t ki = 0; ki < g->kH; ki++) {
                    int64_t t = ih + g->ph - ki * g->dh, oh = t / g->sh; /* the output row that read input row ih */
                    if (t < 0 || t % g->sh != 0 || oh >= g->oH) continue;
                    const float *r = cols + (ch * g->kH + ki) * kW * ld + oh * oW + g->pw + c;
                    for (int64_t kj = 0; kj < kW; kj++) acc = _mm256_add_ps(acc, _mm256_maskload_ps(r + kj * (ld - g->dw), masks[kj]));
                }
                _mm256_storeu_ps(x + (ch * g->H + ih) * W + c, acc);
            }
    }
    _mm256_zeroupper();
}
#endif
/* The same with AVX-512F: a row of up to 16 columns is one load and one store under k-masks (fast,
   unlike AVX2's masked stores on AMD), so the 14 x 14 images take one vector per row, not two. */
#if TENSOR__NN_AVX512
static inline __mmask16 tensor__conv_kmask(int64_t c0, int64_t lo, int64_t hi) { /* lo <= c0 + lane < hi */
    int64_t l = lo - c0 < 0 ? 0 : lo - c0 > 16 ? 16 : lo - c0, h = hi - c0 < 0 ? 0 : hi - c0 > 16 ? 16 : hi - c0;
    return (__mmask16)(h > l ? ((1u << h) - 1u) & ~((1u << l) - 1u) : 0u);
}
static TENSOR__AVX512_FN void tensor__im2col_avx512(float *cols, int64_t ld, const float *x, const tensor__conv_geom *g, int64_t Cg) {
    const int64_t H = g->H, W = g->W, oH = g->oH, oW = g->oW, sh = g->sh;
    for (int64_t ch = 0; ch < Cg; ch++)
        for (int64_t ki = 0; ki < g->kH; ki++) {
            int64_t ih0 = ki * g->dh - g->ph, oh_lo, oh_hi; /* output row oh reads input row oh * sh + ih0 */
            tensor__conv_span(ih0, sh, H, oH, &oh_lo, &oh_hi);
            for (int64_t kj = 0; kj < g->kW; kj++) {
                float *row = cols + ((ch * g->kH + ki) * g->kW + kj) * ld;
                int64_t off = kj * g->dw - g->pw, lo, hi; /* row entry ow reads input column ow + off */
                tensor__conv_span(off, 1, W, oW, &lo, &hi);
                for (int64_t c = 0; c < oW; c += 16) {
                    __mmask16 m = tensor__conv_kmask(c, lo, hi), st = tensor__conv_kmask(c, 0, oW);
                    const float *src = x + (ch * H + ih0) * W + off + c; /* + oh * sh * W */
                    float *dst = row + c;                                /* + oh * oW */
                    int64_t oh = 0;
                    for (; oh < oh_lo; oh++) _mm512_mask_storeu_ps(dst + oh * oW, st, _mm512_setzero_ps());
                    for (; oh < oh_hi; oh++) _mm512_mask_storeu_ps(dst + oh * oW, st, _mm512_maskz_loadu_ps(m, src + oh * sh * W));
                    for (; oh < oH; oh++) _mm512_mask_storeu_ps(dst + oh * oW, st, _mm512_setzero_ps());
                }
            }
        }
    _mm256_zeroupper();
}
/* The bf16 operands of the bf16 GEMM kernel: the same rows, 16 bf16 columns per masked 256-bit
   load and store (avx512bw; it runs only where the bf16 kernel does). */
#if TENSOR__GEMM_AVX512
static TENSOR__AVX512BF16 void tensor__im2col_avx512_bf16(uint16_t *cols, int64_t ld, const uint16_t *x, const tensor__conv_geom *g, int64_t Cg) {
    const int64_t H = g->H, W = g->W, oH = g->oH, oW = g->oW, sh = g->sh;
    for (int64_t ch = 0; ch < Cg; ch++)
        for (int64_t ki = 0; ki < g->kH; ki++) {
            int64_t ih0 = ki * g->dh - g->ph, oh_lo, oh_hi;
            tensor__conv_span(ih0, sh, H, oH, &oh_lo, &oh_hi);
            for (int64_t kj = 0; kj < g->kW; kj++) {
                uint16_t *row = cols + ((ch * g->kH + ki) * g->kW + kj) * ld;
                int64_t off = kj * g->dw - g->pw, lo, hi;
                tensor__conv_span(off, 1, W, oW, &lo, &hi);
                for (int64_t c = 0; c < oW; c += 16) {
                    __mmask16 m = tensor__conv_kmask(c, lo, hi), st = tensor__conv_kmask(c, 0, oW);
                    const uint16_t *src = x + (ch * H + ih0) * W + off + c;
                    uint16_t *dst = row + c;
                    int64_t oh = 0;
                    for (; oh < oh_lo; oh++) _mm256_mask_storeu_epi16(dst + oh * oW, st, _mm256_setzero_si256());
                    for (; oh < oh_hi; oh++) _mm256_mask_storeu_epi16(dst + oh * oW, st, _mm256_maskz_loadu_epi16(m, src + oh * sh * W));
                    for (; oh < oH; oh++) _mm256_mask_storeu_epi16(dst + oh * oW, st, _mm256_setzero_si256());
                }
            }
        }
    _mm256_zeroupper();
}
#endif
static TENSOR__AVX512_FN void tensor__col2im_avx512(float *x, const float *cols, int64_t ld, const tensor__conv_geom *g, int64_t Cg) {
    int64_t W = g->W, oW = g->oW, kW = g->kW;
    __mmask16 masks[TENSOR__COL2IM_KW];
    for (int64_t c = 0; c < W; c += 16) {
        __mmask16 st = tensor__conv_kmask(c, 0, W);
        for (int64_t kj = 0; kj < kW; kj++) {
            int64_t off = kj * g->dw - g->pw; /* input column iw was entry iw - off of the row */
            masks[kj] = tensor__conv_kmask(c, off > 0 ? off : 0, oW + off < W ? oW + off : W);
        }
        for (int64_t ch = 0; ch < Cg; ch++)
            for (int64_t ih = 0; ih < g->H; ih++) {
                __m512 acc = _mm512_setzero_ps();
                for (int64_t ki = 0; ki < g->kH; ki++) {
                    int64_t t = ih + g->ph - ki * g->dh, oh = t / g->sh; /* the output row that read input row ih */
                    if (t < 0 || t % g->sh != 0 || oh >= g->oH) continue;
                    const float *r = cols + (ch * g->kH + ki) * kW * ld + oh * oW + g->pw + c;
                    for (int64_t kj = 0; kj < kW; kj++) acc = _mm512_add_ps(acc, _mm512_maskz_loadu_ps(masks[kj], r + kj * (ld - g->dw)));
                }
                _mm512_mask_storeu_ps(x + (ch * g->H + ih) * W + c, st, acc);
            }
    }
    _mm256_zeroupper();
}
#endif
#if TENSOR__NN_AVX2
/* out[Og, P] (rows ldo apart) = w[Og, K] @ cols[K, P] (rows ldc apart) + bias (when not NULL) for
   a short K (a first layer's K = 9): the GEMM's tiles would load and store C for a few
   multiply-adds each and pack cols first; here each 4 x 16 tile sums its K products in registers
   straight from cols, in the GEMM's order (one fused multiply-add per k from 0), then adds the bias,
   and is stored once. P >= 16: a row's last block overlaps the one before (the same values). */
static TENSOR__AVX2_FN void tensor__conv_smallk_avx2(float *out, int64_t ldo, const float *w, int64_t K, const float *cols, int64_t ldc, int64_t Og, int64_t P,
                                                     const float *bias) {
    int64_t o = 0;
    for (; o + 4 <= Og; o += 4) { /* 4 rows of out at a time, written front to back */
        const float *wr = w + o * K;
        float *r = out + o * ldo;
        for (int64_t p0 = 0; p0 < P; p0 += 16) {
            int64_t p = p0 + 16 > P ? P - 16 : p0;
            const float *c = cols + p;
            __m256 a0 = _mm256_setzero_ps(), a1 = a0, b0 = a0, b1 = a0, c0 = a0, c1 = a0, d0 = a0, d1 = a0;
            for (int64_t t = 0; t < K; t++) {
                __m256 x0 = _mm256_loadu_ps(c + t * ldc), x1 = _mm256_loadu_ps(c + t * ldc + 8), v;
                v = _mm256_broadcast_ss(wr + t); a0 = _mm256_fmadd_ps(v, x0, a0); a1 = _mm256_fmadd_ps(v, x1, a1);
                v = _mm256_broadcast_ss(wr + K + t); b0 = _mm256_fmadd_ps(v, x0, b0); b1 = _mm256_fmadd_ps(v, x1, b1);
                v = _mm256_broadcast_ss(wr + 2 * K + t); c0 = _mm256_fmadd_ps(v, x0, c0); c1 = _mm256_fmadd_ps(v, x1, c1);
                v = _mm256_broadcast_ss(wr + 3 * K + t); d0 = _mm256_fmadd_ps(v, x0, d0); d1 = _mm256_fmadd_ps(v, x1, d1);
            }
            if (bias) {
                __m256 v = _mm256_broadcast_ss(bias + o); a0 = _mm256_add_ps(a0, v); a1 = _mm256_add_ps(a1, v);
                v = _mm256_broadcast_ss(bias + o + 1); b0 = _mm256_add_ps(b0, v); b1 = _mm256_add_ps(b1, v);
                v = _mm256_broadcast_ss(bias + o + 2); c0 = _mm256_add_ps(c0, v); c1 = _mm256_add_ps(c1, v);
                v = _mm256_broadcast_ss(bias + o + 3); d0 = _mm256_add_ps(d0, v); d1 = _mm256_add_ps(d1, v);
            }
            _mm256_storeu_ps(r + p, a0); _mm256_storeu_ps(r + p + 8, a1);
            _mm256_storeu_ps(r + ldo + p, b0); _mm256_storeu_ps(r + ldo + p + 8, b1);
            _mm256_storeu_ps(r + 2 * ldo + p, c0); _mm256_storeu_ps(r + 2 * ldo + p + 8, c1);
            _mm256_storeu_ps(r + 3 * ldo + p, d0); _mm256_storeu_ps(r + 3 * ldo + p + 8, d1);
        }
    }
    for (; o < Og; o++)
        for (int64_t p0 = 0; p0 < P; p0 += 16) {
            int64_t p = p0 + 16 > P ? P - 16 : p0;
            __m256 a0 = _mm256_setzero_ps(), a1 = a0;
            for (int64_t t = 0; t < K; t++) {
                __m256 v = _mm256_broadcast_ss(w + o * K + t);
                a0 = _mm256_fmadd_ps(v, _mm256_loadu_ps(cols + t * ldc + p), a0);
                a1 = _mm256_fmadd_ps(v, _mm256_loadu_ps(cols + t * ldc + p + 8), a1);
            }
            if (bias) { __m256 v = _mm256_broadcast_ss(bias + o); a0 = _mm256_add_ps(a0, v); a1 = _mm256_add_ps(a1, v); }
            _mm256_storeu_ps(out + o * ldo + p, a0);
            _mm256_storeu_ps(out + o * ldo + p + 8, a1);
        }
    _mm256_zeroupper();
}
/* r[i] = q[i] + b, i < n (q may be r) */
static TENSOR__AVX2_FN void tensor__add_scalar_avx2(float *r, const float *q, float b, int64_t n) {
    __m256 v = _mm256_set1_ps(b);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(r + i, _mm256_add_ps(_mm256_loadu_ps(q + i), v));
    _mm256_zeroupper();
    for (; i < n; i++) r[i] = q[i] + b;
}
#endif
/* Which vector im2col / col2im apply: 3 (AVX-512) or 2 (AVX2, rows of at least 8) for f32 with
   stride 1 along W, kernels up to TENSOR__COL2IM_KW wide and sizes that fit the int32 lanes of the
   AVX2 masks; else 0 (the loops above). */
static int tensor__conv_vec(const tensor__conv_geom *g, tensor_dtype ct) {
    if (ct != TENSOR_F32 || g->sw != 1 || g->kW > TENSOR__COL2IM_KW || g->W + g->oW + g->kW * g->dw + g->pw >= ((int64_t)1 << 30)) return 0;
    int isa = tensor__nn_isa();
    return isa >= 3 ? 3 : isa == 2 && g->oW >= 8 && g->W >= 8 ? 2 : 0;
}

/* The fast path's work: blocks of `bn` consecutive images, in the compute dtype ct (f32, or f64
   for f64) on contiguous buffers. The images of a block go through one GEMM per group, side by side
   along the GEMM's n dim (cols [K, bn * P]): a P too short to fill the GEMM's tiles well (the 14 x 14
   images of a CNN's second layer: P = 196) fills them in a block of 4 (measured here, one thread:
   64 x 196 x 288 per image at 94 GFLOP/s alone, 105 in blocks of 4; the backward's GEMMs 100 -> 110
   and 93 -> 107). Each chunk of blocks claims a slot: its own im2col buffer and block buffer (and in
   the backward its own gw sum), so the blocks spread over the threads when their GEMMs are too
   small to thread themselves (tensor__conv_blocks). The slots' buffers come from the caching
   allocator, made on the calling thread before the chunks run: no allocation, no page faults
   inside the loop. */
typedef struct {
    const tensor__conv_geom *g;
    tensor_dtype ct;
    tensor_dtype sd;           /* x, w, gc and im2col's cols: ct, or bf16 for the bf16 GEMM kernel */
    bool direct;               /* 1x1 kernel, stride 1, no padding: cols is x itself */
    int vec;                   /* tensor__conv_vec */
    bool smallk;               /* forward: tensor__conv_smallk_avx2 instead of the GEMM */
    int64_t bn;                /* images per block */
    const char *x, *w, *gc;    /* x [N, C, H, W], w [O, Cg, kH, kW], backward: gc [N, O, oH * oW] */
    const char *bias;          /* forward: bias [O] in ct, or NULL */
    char *out;                 /* forward: out [N, O, oH * oW]; backward: gx [N, C, H, W] or NULL */
    char *gw;                  /* backward: gw [O, Cg * kH * kW] sums, one per slot, or NULL */
    double *gbn;               /* backward: [N, O] sums of gc over p, or NULL */
    char *scratch;             /* per slot: cols [K, bn * P], then (bn > 1) a block [Og, bn * P] */
    int slot;                  /* the next chunk's slot */
    int oom;                   /* a GEMM had no memory (set from any thread) */
} tensor__conv_job;

/* Forward GEMMs with K = Cg * kH * kW up to this take tensor__conv_smallk_avx2 (measured here, one
   thread, batch 64, 3x3 kernels: K 9 0.56 -> 0.32 ms, K 27 1.20 -> 0.93, K 72 5.0 -> 4.8; K 144
   2.5 -> 2.8 is the GEMM's). */
#ifndef TENSOR__CONV_SMALLK
#define TENSOR__CONV_SMALLK 64
#endif
/* Images per block: 1, or the largest power of two with bn * P at most TENSOR__CONV_BLOCK_COLS. */
#ifndef TENSOR__CONV_BLOCK_COLS
#define TENSOR__CONV_BLOCK_COLS 1024
#endif
static int64_t tensor__conv_block_images(const tensor__conv_geom *g, bool direct) {
    int64_t P = g->oH * g->oW, bn = 1;
    if (direct || P <= 0) return 1;
    while (bn * 2 * P <= TENSOR__CONV_BLOCK_COLS && bn * 2 <= g->N) bn *= 2;
    return bn;
}
/* (sized in ct even for bf16 operands: the backward's cols hold w^T gc in ct) */
static size_t tensor__conv_slot_bytes(const tensor__conv_geom *g, tensor_dtype ct, bool direct, int64_t bn) {
    int64_t K = g->C / g->groups * g->kH * g->kW, Og = g->O / g->groups, P = g->oH * g->oW;
    /* K * bn * P may overflow (expanded operands): SIZE_MAX then, which no allocation serves */
    int64_t n = tensor__work_mul(direct ? 0 : K, bn * P), m = bn > 1 ? Og * bn * P : 0;
    if (n > INT64_MAX - m || (uint64_t)(n + m) > (SIZE_MAX - 63) / tensor__dtype_sizes[ct]) return SIZE_MAX;
    return ((size_t)(n + m) * tensor__dtype_sizes[ct] + 63) & ~(size_t)63;
}
static int tensor__conv_claim(tensor__conv_job *j) {
#if TENSOR__HAVE_THREADS
    return __atomic_fetch_add(&j->slot, 1, __ATOMIC_RELAXED);
#else
    return j->slot++;
#endif
}

/* cols [K, ld] from columns col0.. = im2col of the image group at xg; x itself when direct. */
static const char *tensor__conv_im2col(const tensor__conv_job *j, char *cols, int64_t ld, int64_t col0, const char *xg) {
    if (j->direct) return xg;
    int64_t Cg = j->g->C / j->g->groups;
#if TENSOR__NN_AVX512 && TENSOR__GEMM_AVX512
    if (j->sd == TENSOR_BF16 && j->vec == 3) { tensor__im2col_avx512_bf16((uint16_t *)(void *)cols + col0, ld, (const uint16_t *)(const void *)xg, j->g, Cg); return cols; }
#endif
    if (j->sd == TENSOR_BF16) { tensor__im2col_u16((uint16_t *)(void *)cols + col0, ld, (const uint16_t *)(const void *)xg, j->g, Cg); return cols; }
    if (j->ct == TENSOR_F64) { tensor__im2col_f64((double *)cols + col0, ld, (const double *)xg, j->g, Cg); return cols; }
#if TENSOR__NN_AVX2
    if (j->vec == 2) { TENSOR__PATH_TAKEN(conv_im2col_simd); tensor__im2col_avx2((float *)cols + col0, ld, (const float *)xg, j->g, Cg); return cols; }
#endif
#if TENSOR__NN_AVX512
    if (j->vec == 3) { TENSOR__PATH_TAKEN(conv_im2col_simd); tensor__im2col_avx512((float *)cols + col0, ld, (const float *)xg, j->g, Cg); return cols; }
#endif
    tensor__im2col_f32((float *)cols + col0, ld, (const float *)xg, j->g, Cg);
    return cols;
}

/* row[i] = src[i] + b, i < n (src may be row) */
static void tensor__row_plus(tensor_dtype ct, char *row, const char *src, const char *bias, int64_t o, int64_t n) {
    if (ct == TENSOR_F64) {
        double b = bias ? ((const double *)bias)[o] : 0, *r = (double *)row;
        const double *q = (const double *)src;
        for (int64_t i = 0; i < n; i++) r[i] = q[i] + b;
        return;
    }
    float b = bias ? ((const float *)bias)[o] : 0, *r = (float *)row;
    const float *q = (const float *)src;
#if TENSOR__NN_AVX2
    if (tensor__nn_isa() >= 2) { tensor__add_scalar_avx2(r, q, b, n); return; }
#endif
    for (int64_t i = 0; i < n; i++) r[i] = q[i] + b;
}

/* Per block of images and group: cols [K, bn * P] = the images' patches side by side,
   blk [Og, bn * P] = w_g[Og, K] @ cols (P = oH * oW, K = Cg * kH * kW), then each image's rows
   (plus the bias) into out; a block of one image is written into out directly, the bias added
   while its rows are in cache. */
static void tensor__conv_fwd_blocks(int64_t begin, int64_t end, void *ctx) {
    tensor__conv_job *j = (tensor__conv_job *)ctx;
    const tensor__conv_geom *g = j->g;
    size_t cs = tensor__dtype_sizes[j->ct], es = tensor__dtype_sizes[j->sd];
    int64_t Cg = g->C / g->groups, Og = g->O / g->groups, K = Cg * g->kH * g->kW, P = g->oH * g->oW, X = Cg * g->H * g->W;
    char *cols = j->scratch + (size_t)tensor__conv_claim(j) * tensor__conv_slot_bytes(g, j->ct, j->direct, j->bn);
    char *blk = j->direct ? cols : cols + (size_t)(K * j->bn * P) * cs;
    if (j->sd == TENSOR_BF16) TENSOR__PATH_TAKEN(conv_bf16);
    for (int64_t bi = begin; bi < end; bi++) {
        int64_t n0 = bi * j->bn, bn = g->N - n0 < j->bn ? g->N - n0 : j->bn, ld = bn * P;
        for (int64_t grp = 0; grp < g->groups; grp++) {
            const char *B = NULL;
            for (int64_t i = 0; i < bn; i++) B = tensor__conv_im2col(j, cols, ld, i * P, j->x + (size_t)(((n0 + i) * g->groups + grp) * X) * es);
            const char *wg = j->w + (size_t)(grp * Og * K) * es;
#if TENSOR__NN_AVX2
            if (j->smallk) {
                TENSOR__PATH_TAKEN(conv_smallk);
                for (int64_t i = 0; i < bn; i++)
                    tensor__conv_smallk_avx2((float *)j->out + ((n0 + i) * g->O + grp * Og) * P, P, (const float *)wg, K, (const float *)B + i * P, ld, Og, P,
                                             j->bias ? (const float *)j->bias + grp * Og : NULL);
                continue;
            }
#endif
            if (bn == 1) {
                char *o = j->out + (size_t)((n0 * g->O + grp * Og) * P) * cs;
                TENSOR__GEMM_IN_TASK(j->oom, tensor__gemm_strided(j->ct, j->sd, Og, P, K, wg, K, 1, B, P, 1, o, P, 1, false));
                for (int64_t q = 0; j->bias && q < Og; q++) tensor__row_plus(j->ct, o + (size_t)(q * P) * cs, o + (size_t)(q * P) * cs, j->bias, grp * Og + q, P);
                continue;
            }
            TENSOR__GEMM_IN_TASK(j->oom, tensor__gemm_strided(j->ct, j->sd, Og, ld, K, wg, K, 1, B, ld, 1, blk, ld, 1, false));
            for (int64_t i = 0; i < bn; i++)
                for (int64_t q = 0; q < Og; q++)
                    tensor__row_plus(j->ct, j->out + (size_t)(((n0 + i) * g->O + grp * Og + q) * P) * cs, blk + (size_t)(q * ld + i * P) * cs, j->bias,
                                     grp * Og + q, P);
        }
    }
}

/* Whether the blocks spread over the threads (tensor__gemm_spread), each GEMM on one thread,
   rather than run one after another with each GEMM (Og x bn P x K) split across the threads. */
static int64_t tensor__conv_nblocks(const tensor__conv_job *j) { return (j->g->N + j->bn - 1) / j->bn; }
static bool tensor__conv_spread(const tensor__conv_job *j) {
    const tensor__conv_geom *g = j->g;
    return tensor__gemm_spread(tensor__conv_nblocks(j), g->O / g->groups, j->bn * g->oH * g->oW, g->C / g->groups * g->kH * g->kW);
}
/* The slots a run of tensor__conv_blocks needs: one per chunk (tensor__parallel_for makes at most
   one per thread). */
static int64_t tensor__conv_slots(const tensor__conv_job *j) { return tensor__conv_spread(j) ? tensor_get_num_threads() : 1; }
/* false when a GEMM had no memory (the caller records the error). */
static bool tensor__conv_blocks(tensor__range_fn fn, tensor__conv_job *j) {
    const tensor__conv_geom *g = j->g;
    int64_t per = tensor__work_mul(tensor__work_mul(g->O, g->C / g->groups * g->kH * g->kW), j->bn * g->oH * g->oW); /* multiply-adds per block */
    if (tensor__conv_spread(j)) tensor__parallel_for(tensor__conv_nblocks(j), TENSOR__GEMM_PAR_MIN / (per > 0 ? per : 1) + 1, fn, j);
    else fn(0, tensor__conv_nblocks(j), j);
    return !TENSOR__TASK_FAILED(j->oom);
}
/* The job's common fields and its slots' scratch (NULL, after recording an error, when there is
   no memory). */
static char *tensor__conv_job_init(const char *fn, tensor__conv_job *j, const tensor__conv_geom *g, tensor_dtype ct, tensor_dtype sd) {
    memset(j, 0, sizeof *j);
    j->g = g;
    j->ct = ct;
    j->sd = sd;
    j->direct = g->kH == 1 && g->kW == 1 && g->sh == 1 && g->sw == 1 && g->ph == 0 && g->pw == 0;
    j->vec = tensor__conv_vec(g, ct);
    j->bn = tensor__conv_block_images(g, j->direct);
    /* (rows of cols a multiple of 1 KiB apart would share the L1 sets: the GEMM then) */
    j->smallk = ct == TENSOR_F32 && sd == ct && tensor__nn_isa() >= 2 && g->C / g->groups * g->kH * g->kW <= TENSOR__CONV_SMALLK && g->oH * g->oW >= 16 &&
                (j->bn * g->oH * g->oW) % 256 != 0;
    size_t slot = tensor__conv_slot_bytes(g, ct, j->direct, j->bn), slots = (size_t)tensor__conv_slots(j);
    size_t bytes = slot > SIZE_MAX / slots ? SIZE_MAX : slots * slot;
    j->scratch = (char *)tensor__cache_alloc(bytes ? bytes : 1);
    if (!j->scratch) tensor__fail(fn, "out of memory allocating convolution scratch");
    return j->scratch;
}

/* ---- convolutions: Winograd F(4x4, 3x3) ---- */

/* A 3x3 convolution with stride 1, as 4x4 output tiles: each tile is A^T [sum over c of
   (G g G^T) . (B^T d B)] A for its 6x6 input patch d and 3x3 kernel g (Lavin and Gray, "Fast
   Algorithms for Convolutional Neural Networks", 2015, with the points 0, 1, -1, 2, -2). The 144
   multiply-adds per tile and channel pair of the direct sum become 36: the work is 36 GEMMs
   [O, C] @ [C, tiles], one per point of the 6x6 transform domain, and the transforms are a few
   adds and multiplies per value. It serves the forward, the input gradient (a convolution of the
   output's gradient with the kernel turned round and its channels swapped, padding 2 - p) and the
   weight gradient (G^T [sum over tiles of (A gy A^T) . (B^T d B)] G). Against F(2x2, 3x3) (16
   GEMMs per 2x2 tile: 4 multiply-adds per output against 2.25 here; 2.94 on 14 x 14 outputs, whose
   4x4 tiles cover 16 x 16) it saves a quarter of the GEMM work and rounds more: the transforms'
   4, 5, 8 and 1/6 spread the terms. Measured here (bench's conv rows, 64 x 32 x 14 x 14 -> 64
   channels, max |a - b| / (1 + |b|) against im2col + OpenBLAS): forward 1.1e-5 (F(2x2): 9.9e-7),
   input gradient 2.0e-5 (1.1e-6), weight gradient 1.7e-4 (2.9e-5; its entries are sums of 12544
   products); CNN training step (examples/fashion_mnist_cnn.c's layers), 1 thread: 11.7-12.4 ms
   against 14.0-14.3 for F(2x2) with the same plane copies and unrolled transforms. TENSOR_NO_WINOGRAD leaves every convolution to im2col + GEMM. f32 with AVX2
   (the transforms run two groups of 4 tiles at a time), when both channel counts are at least
   TENSOR__WINO_MIN_CH: with fewer the transforms cost more than they save (measured here, forward
   + backward of 64 images of 14 x 14, C = O, 1 thread, Winograd vs im2col: C 4 0.37 vs 0.32 ms,
   6 0.41 vs 0.56, 8 0.69 vs 0.89, 12 0.92 vs 1.48, 16 1.54 vs 2.50, 32 4.5 vs 8.4). */
#define TENSOR__WINO_PTS 36 /* points of the transform domain, 6 x 6: point (a, b) is a * 6 + b */
#ifndef TENSOR__WINO_MIN_CH
#define TENSOR__WINO_MIN_CH 8
#endif
/* Tiles per block (a few images): the block's transformed input and GEMM results stay in L2. */
#ifndef TENSOR__WINO_TILES
#define TENSOR__WINO_TILES 128
#endif

static bool tensor__wino_ok(const tensor__conv_geom *g, tensor_dtype ct) {
#ifdef TENSOR_NO_WINOGRAD
    (void)g, (void)ct;
    return false;
#endif
    return TENSOR__NN_AVX2 && ct == TENSOR_F32 && tensor__nn_isa() >= 2 && g->groups == 1 && g->kH == 3 && g->kW == 3 && g->sh == 1 && g->sw == 1 &&
           g->dh == 1 && g->dw == 1 && g->ph == g->pw && g->ph <= 2 && g->C >= TENSOR__WINO_MIN_CH && g->O >= TENSOR__WINO_MIN_CH && g->N >= 1 && g->H >= 1 && g->W >= 1 && g->oH >= 1 &&
           g->oW >= 1 && g->H < ((int64_t)1 << 24) && g->W < ((int64_t)1 << 24) && g->C < ((int64_t)1 << 24) && g->O < ((int64_t)1 << 24); /* (32-bit gather offsets) */
}

#if TENSOR__NN_AVX2 /* the rest of Winograd: it runs only with AVX2 */
/* G, the kernel transform (6 x 3) */
static const double tensor__wino_G[6][3] = {{0.25, 0, 0},           {-1.0 / 6, -1.0 / 6, -1.0 / 6}, {-1.0 / 6, 1.0 / 6, -1.0 / 6},
                                            {1.0 / 24, 1.0 / 12, 1.0 / 6}, {1.0 / 24, -1.0 / 12, 1.0 / 6}, {0, 0, 1}};

/* U[(i * 6 + l) * us + lane] = (G k G^T)[i][l] for up to 8 kernels k at once (lanes < n), their
   element (i, j) at w[lane * ws + i * 3 + j] (or, turned round, at (2 - i) * 3 + 2 - j) */
static TENSOR__AVX2_FN void tensor__wino_kernels8(float *U, int64_t us, const float *w, int ws, bool flip, int n) {
    __m256 g[3][3], t[6][3];
    __m256i lane = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), off = _mm256_mullo_epi32(lane, _mm256_set1_epi32(ws));
    __m256i live = tensor__avx2_first(n);
    TENSOR__UNROLL for (int e = 0; e < 9; e++)
        g[e / 3][e % 3] = _mm256_mask_i32gather_ps(_mm256_setzero_ps(), w, _mm256_add_epi32(off, _mm256_set1_epi32(flip ? 8 - e : e)), _mm256_castsi256_ps(live), 4);
    TENSOR__UNROLL for (int i = 0; i < 6; i++) {
        TENSOR__UNROLL for (int j = 0; j < 3; j++) {
            __m256 acc = _mm256_mul_ps(_mm256_set1_ps((float)tensor__wino_G[i][0]), g[0][j]);
            acc = _mm256_fmadd_ps(_mm256_set1_ps((float)tensor__wino_G[i][1]), g[1][j], acc);
            t[i][j] = _mm256_fmadd_ps(_mm256_set1_ps((float)tensor__wino_G[i][2]), g[2][j], acc);
        }
    }
    TENSOR__UNROLL for (int i = 0; i < 6; i++) {
        TENSOR__UNROLL for (int l = 0; l < 6; l++) {
            __m256 acc = _mm256_mul_ps(_mm256_set1_ps((float)tensor__wino_G[l][0]), t[i][0]);
            acc = _mm256_fmadd_ps(_mm256_set1_ps((float)tensor__wino_G[l][1]), t[i][1], acc);
            acc = _mm256_fmadd_ps(_mm256_set1_ps((float)tensor__wino_G[l][2]), t[i][2], acc);
            if (n == 8) _mm256_storeu_ps(U + (i * 6 + l) * us, acc);
            else _mm256_maskstore_ps(U + (i * 6 + l) * us, live, acc);
        }
    }
}
/* gw[lane * 9 + i * 3 + j] = (G^T d G)[i][j] for up to 8 pairs at once (lanes < n), their points
   d[xi] at gU[xi * gs + lane] */
static TENSOR__AVX2_FN void tensor__wino_grads8(float *gw, const float *gU, int64_t gs, int n) {
    __m256 h[3][6], d[TENSOR__WINO_PTS];
    __m256i live = tensor__avx2_first(n);
    float r[9][8];
    for (int xi = 0; xi < TENSOR__WINO_PTS; xi++) d[xi] = _mm256_maskload_ps(gU + xi * gs, live);
    TENSOR__UNROLL for (int i = 0; i < 3; i++) {
        TENSOR__UNROLL for (int l = 0; l < 6; l++) {
            __m256 acc = _mm256_setzero_ps();
            TENSOR__UNROLL for (int a = 0; a < 6; a++) if (tensor__wino_G[a][i] != 0) acc = _mm256_fmadd_ps(_mm256_set1_ps((float)tensor__wino_G[a][i]), d[a * 6 + l], acc);
            h[i][l] = acc;
        }
    }
    TENSOR__UNROLL for (int i = 0; i < 3; i++) {
        TENSOR__UNROLL for (int j = 0; j < 3; j++) {
            __m256 acc = _mm256_setzero_ps();
            TENSOR__UNROLL for (int l = 0; l < 6; l++) if (tensor__wino_G[l][j] != 0) acc = _mm256_fmadd_ps(_mm256_set1_ps((float)tensor__wino_G[l][j]), h[i][l], acc);
            _mm256_storeu_ps(r[i * 3 + j], acc);
        }
    }
    for (int l = 0; l < n; l++)
        for (int e = 0; e < 9; e++) gw[l * 9 + e] = r[e][l];
}

/* U[xi][a][b] = (G k G^T)[xi] for the kernel k [3][3] from output channel a to input channel b:
   w's [a][b] itself (w [O, C, 3, 3]), or with flip its [b][a] turned round 180 degrees (the input
   gradient's convolution: O_ = C, C_ = O). */
typedef struct { float *U; const float *w; int64_t O, C; bool flip; } tensor__wino_wjob;
static void tensor__wino_weights_range(int64_t a0, int64_t a1, void *ctx) {
    const tensor__wino_wjob *q = (const tensor__wino_wjob *)ctx;
    int64_t O = q->O, C = q->C, A = q->flip ? C : O, B = q->flip ? O : C;
    /* 8 kernels at a time: (a, b + lane) is w's [a][b + lane], 9 floats apart, or turned round its
       [b + lane][a], 9 C apart */
    for (int64_t a = a0; a < a1; a++)
        for (int64_t b = 0; b < B; b += 8)
            tensor__wino_kernels8(q->U + a * B + b, A * B, q->flip ? q->w + (b * C + a) * 9 : q->w + (a * C + b) * 9, q->flip ? (int)(9 * C) : 9, q->flip,
                                  (int)(B - b < 8 ? B - b : 8));
}
static void tensor__wino_weights(float *U, const float *w, int64_t O, int64_t C, bool flip) {
    tensor__wino_wjob q = {U, w, O, C, flip};
    tensor__parallel_for(flip ? C : O, 8, tensor__wino_weights_range, &q);
}

/* gw [O, C, 3, 3] = G^T gU[xi] G for each pair (o, c); gU [36][O][C]. */
static void tensor__wino_weights_grad(float *gw, const float *gU, int64_t O, int64_t C) {
    for (int64_t o = 0; o < O; o++)
        for (int64_t c = 0; c < C; c += 8) tensor__wino_grads8(gw + (o * C + c) * 9, gU + o * C + c, O * C, (int)(C - c < 8 ? C - c : 8));
}

/* One run: out [N, Co, Ho, Wo] = the convolution of in [N, Ci, Hi, Wi] (zero-padded by p) with the
   transformed kernels U [36][Co][Ci], plus bias; or (gy set) the weight-gradient sums
   gU[slot] [36][Co][Ci] += the tiles' (A gy A^T) times their (B^T d B). Blocks of bn images are
   spread over the threads, each chunk with its slot of scratch: the transformed input V
   [36][Ci][T], the GEMMs' results (or gy's transform) M [36][Co][T], the zero-padded input plane
   and (weight gradient) gy's plane, T the block's tiles. A plane's tiles are transformed in groups
   of 4 along a tile row (tQ groups to a row), two groups at a time. */
typedef struct {
    int64_t N, Ci, Hi, Wi, Co, Ho, Wo, p, tH, tW, tQ, bn;
    int64_t ld, ldg;        /* row lengths of the padded planes */
    const float *in, *U, *bias, *gy;
    float *out, *gU;        /* gU: slots * 36 * Co * Ci sums (weight gradient) */
    double *gbn;            /* weight-gradient mode: [N, Co] sums of gy over each plane, or NULL */
    char *scratch;
    size_t slot_bytes;
    int slot;
    int oom;                /* a GEMM had no memory (set from any thread) */
} tensor__wino_job;

/* 4 floats at a in the low half, 4 at b in the high half */
static TENSOR__AVX2_INLINE __m256 tensor__wino_load2(const float *a, const float *b) {
    return _mm256_insertf128_ps(_mm256_castps128_ps256(_mm_loadu_ps(a)), _mm_loadu_ps(b), 1);
}
/* One row of two groups of 4 tiles (tile k's columns start 4 k floats after a, or after b): d[c]
   holds column c (< n, n 4 or 6) of the 4 tiles of a in its low half, of b in its high half. */
static TENSOR__AVX2_INLINE void tensor__wino_columns(const float *a, const float *b, int n, __m256 *d) {
    __m256 r0 = tensor__wino_load2(a, b), r1 = tensor__wino_load2(a + 4, b + 4);
    __m256 r2 = tensor__wino_load2(a + 8, b + 8), r3 = tensor__wino_load2(a + 12, b + 12);
    __m256 t0 = _mm256_unpacklo_ps(r0, r1), t1 = _mm256_unpackhi_ps(r0, r1), t2 = _mm256_unpacklo_ps(r2, r3), t3 = _mm256_unpackhi_ps(r2, r3);
    d[0] = _mm256_shuffle_ps(t0, t2, 0x44), d[1] = _mm256_shuffle_ps(t0, t2, 0xEE);
    d[2] = _mm256_shuffle_ps(t1, t3, 0x44), d[3] = _mm256_shuffle_ps(t1, t3, 0xEE);
    if (n > 4) {
        __m256 r4 = tensor__wino_load2(a + 16, b + 16), u0 = _mm256_unpacklo_ps(r1, r2), u1 = _mm256_unpacklo_ps(r3, r4);
        d[4] = _mm256_shuffle_ps(u0, u1, 0x44), d[5] = _mm256_shuffle_ps(u0, u1, 0xEE);
    }
}
/* v's halves to p + ta and p + tb (one store when they are adjacent; a before b, so b wins where a
   group past its row's end spills over the next) */
static TENSOR__AVX2_INLINE void tensor__wino_put2(float *p, int64_t ta, int64_t tb, __m256 v) {
    if (tb == ta + 4) { _mm256_storeu_ps(p + ta, v); return; }
    _mm_storeu_ps(p + ta, _mm256_castps256_ps128(v));
    _mm_storeu_ps(p + tb, _mm256_extractf128_ps(v, 1));
}
static TENSOR__AVX2_INLINE __m256 tensor__wino_get2(const float *p, int64_t ta, int64_t tb) {
    return tb == ta + 4 ? _mm256_loadu_ps(p + ta) : tensor__wino_load2(p + ta, p + tb);
}
/* o = B^T d: 4 d0 - 5 d2 + d4, -4 d1 - 4 d2 + d3 + d4, 4 d1 - 4 d2 - d3 + d4, -2 d1 - d2 + 2 d3 + d4,
   2 d1 - d2 - 2 d3 + d4, 4 d1 - 5 d3 + d5 */
static TENSOR__AVX2_INLINE void tensor__wino_bt(const __m256 *d, __m256 *o) {
    __m256 four = _mm256_set1_ps(4.0f);
    __m256 t0 = _mm256_fnmadd_ps(four, d[2], d[4]), t1 = _mm256_fnmadd_ps(four, d[1], d[3]);
    __m256 t2 = _mm256_sub_ps(d[4], d[2]), t3 = _mm256_sub_ps(d[3], d[1]);
    t3 = _mm256_add_ps(t3, t3);
    o[0] = _mm256_fmadd_ps(four, _mm256_sub_ps(d[0], d[2]), t2);
    o[1] = _mm256_add_ps(t0, t1), o[2] = _mm256_sub_ps(t0, t1);
    o[3] = _mm256_add_ps(t2, t3), o[4] = _mm256_sub_ps(t2, t3);
    o[5] = _mm256_fmadd_ps(four, _mm256_sub_ps(d[1], d[3]), _mm256_sub_ps(d[5], d[3]));
}
/* y = A^T m: m0 + m1 + m2 + m3 + m4, m1 - m2 + 2 (m3 - m4), m1 + m2 + 4 (m3 + m4), m1 - m2 + 8 (m3 - m4) + m5 */
static TENSOR__AVX2_INLINE void tensor__wino_at(const __m256 *m, __m256 *y) {
    __m256 a = _mm256_add_ps(m[1], m[2]), b = _mm256_sub_ps(m[1], m[2]), c = _mm256_add_ps(m[3], m[4]), d = _mm256_sub_ps(m[3], m[4]);
    y[0] = _mm256_add_ps(_mm256_add_ps(m[0], a), c);
    y[1] = _mm256_fmadd_ps(_mm256_set1_ps(2.0f), d, b);
    y[2] = _mm256_fmadd_ps(_mm256_set1_ps(4.0f), c, a);
    y[3] = _mm256_add_ps(_mm256_fmadd_ps(_mm256_set1_ps(8.0f), d, b), m[5]);
}
/* z = A g: g0, g0 + g1 + g2 + g3, g0 - g1 + g2 - g3, g0 + 2 g1 + 4 g2 + 8 g3, g0 - 2 g1 + 4 g2 - 8 g3, g3 */
static TENSOR__AVX2_INLINE void tensor__wino_a(const __m256 *g, __m256 *z) {
    __m256 four = _mm256_set1_ps(4.0f);
    __m256 e = _mm256_add_ps(g[0], g[2]), f = _mm256_add_ps(g[1], g[3]), e2 = _mm256_fmadd_ps(four, g[2], g[0]), f2 = _mm256_fmadd_ps(four, g[3], g[1]);
    f2 = _mm256_add_ps(f2, f2);
    z[0] = g[0], z[1] = _mm256_add_ps(e, f), z[2] = _mm256_sub_ps(e, f);
    z[3] = _mm256_add_ps(e2, f2), z[4] = _mm256_sub_ps(e2, f2), z[5] = g[3];
}

/* T p T^T of two groups of 4 tiles, t the 1-D transform T (n values to 6): their n x n pieces p
   from a and b (a padded plane's rows, ld apart), into V[xi * vs + ta + k] and V[xi * vs + tb + k]
   for the groups' tiles k < 4. A group past its tile row's end fills tiles of later rows or of the
   row padding: stored first. */
static TENSOR__AVX2_INLINE void tensor__wino_pair(float *V, int64_t vs, int64_t ta, int64_t tb, const float *a, const float *b, int64_t ld, int n,
                                                  void (*t)(const __m256 *, __m256 *)) {
    __m256 w[6][6], d[6], o[6];
    TENSOR__UNROLL for (int r = 0; r < n; r++) {
        tensor__wino_columns(a + r * ld, b + r * ld, n, d);
        t(d, w[r]);
    }
    TENSOR__UNROLL for (int k = 0; k < 6; k++) {
        TENSOR__UNROLL for (int r = 0; r < n; r++) d[r] = w[r][k];
        t(d, o);
        TENSOR__UNROLL for (int i = 0; i < 6; i++) tensor__wino_put2(V + (i * 6 + k) * vs, ta, tb, o[i]);
    }
}
/* B^T d B of the input's 6x6 patches */
static TENSOR__AVX2_FN void tensor__wino_input_pair(float *V, int64_t vs, int64_t ta, int64_t tb, const float *a, const float *b, int64_t ld) {
    tensor__wino_pair(V, vs, ta, tb, a, b, ld, 6, tensor__wino_bt);
}
/* A gy A^T of the output gradient's 4x4 pieces */
static TENSOR__AVX2_FN void tensor__wino_grad_pair(float *M, int64_t ms, int64_t ta, int64_t tb, const float *a, const float *b, int64_t ld) {
    tensor__wino_pair(M, ms, ta, tb, a, b, ld, 4, tensor__wino_a);
}

/* The first n (<= 8) lanes of v to y. */
static TENSOR__AVX2_INLINE void tensor__wino_store(float *y, __m256 v, int64_t n) {
    if (n >= 8) { _mm256_storeu_ps(y, v); return; }
    __m128 h = _mm256_castps256_ps128(v);
    if (n >= 4) { _mm_storeu_ps(y, h); y += 4; n -= 4; h = _mm256_extractf128_ps(v, 1); }
    if (n >= 2) { _mm_storel_pi((__m64 *)(void *)y, h); y += 2; n -= 2; h = _mm_movehl_ps(h, h); }
    if (n >= 1) _mm_store_ss(y, h);
}

/* A^T M A (+ bias) of two groups of 4 tiles: M[xi * ms + ta + k] and M[xi * ms + tb + k], into the
   output rows from ya and yb (Wo apart; ra and rb of them, <= 4) and their first ca and cb (<= 16)
   columns. No store past a row's end: the next row may be another thread's. */
static TENSOR__AVX2_FN void tensor__wino_output_pair(float *ya, float *yb, int64_t Wo, int64_t ra, int64_t rb, int64_t ca, int64_t cb, const float *M,
                                                    int64_t ms, int64_t ta, int64_t tb, float bias) {
    __m256 s[4][6], m[6], y[4], bv = _mm256_set1_ps(bias);
    TENSOR__UNROLL for (int k = 0; k < 6; k++) {
        TENSOR__UNROLL for (int i = 0; i < 6; i++) m[i] = tensor__wino_get2(M + (i * 6 + k) * ms, ta, tb);
        tensor__wino_at(m, y);
        TENSOR__UNROLL for (int r = 0; r < 4; r++) s[r][k] = y[r];
    }
    TENSOR__UNROLL for (int r = 0; r < 4; r++) {
        tensor__wino_at(s[r], y);
        TENSOR__UNROLL for (int c = 0; c < 4; c++) y[c] = _mm256_add_ps(y[c], bv);
        /* lanes from (tile, column) to (column, tile): each half then holds its group's 16 pixels */
        __m256 t0 = _mm256_unpacklo_ps(y[0], y[1]), t1 = _mm256_unpackhi_ps(y[0], y[1]), t2 = _mm256_unpacklo_ps(y[2], y[3]), t3 = _mm256_unpackhi_ps(y[2], y[3]);
        __m256 p0 = _mm256_shuffle_ps(t0, t2, 0x44), p1 = _mm256_shuffle_ps(t0, t2, 0xEE), p2 = _mm256_shuffle_ps(t1, t3, 0x44), p3 = _mm256_shuffle_ps(t1, t3, 0xEE);
        if (r < ra) {
            tensor__wino_store(ya + r * Wo, _mm256_permute2f128_ps(p0, p1, 0x20), ca);
            if (ca > 8) tensor__wino_store(ya + r * Wo + 8, _mm256_permute2f128_ps(p2, p3, 0x20), ca - 8);
        }
        if (r < rb) {
            tensor__wino_store(yb + r * Wo, _mm256_permute2f128_ps(p0, p1, 0x31), cb);
            if (cb > 8) tensor__wino_store(yb + r * Wo + 8, _mm256_permute2f128_ps(p2, p3, 0x31), cb - 8);
        }
    }
}

/* The plane src [H, W] into the rows of dst (ld apart), 8 floats at a time: a row's last piece
   is loaded masked and stored whole, so up to 7 zeros land past the row's end. The planes' rows are
   short (14 here), where a memcpy call or a scalar tail costs more than the copy. The zeros fall on
   the padding (which is zero), on a later row's cells (written after), or on the 8 floats of slack
   after the plane. */
/* and asks for the next plane's cache lines, whose transform follows (the planes come from L3 or
   memory; a prefetch past the tensor's end is harmless) */
static TENSOR__AVX2_FN void tensor__wino_copy(float *dst, int64_t ld, const float *src, int64_t H, int64_t W) {
    for (int64_t i = 0; i < H * W; i += 16) _mm_prefetch((const char *)(src + H * W + i), _MM_HINT_T0);
    __m256i tail = tensor__avx2_first(W % 8);
    for (int64_t y = 0; y < H; y++, dst += ld, src += W) {
        int64_t i = 0;
        for (; i + 8 <= W; i += 8) _mm256_storeu_ps(dst + i, _mm256_loadu_ps(src + i));
        if (i < W) _mm256_storeu_ps(dst + i, _mm256_maskload_ps(src + i, tail));
    }
}

/* group g of a plane: tile row g / tQ, its tiles from 4 (g % tQ); the offsets of its first tile in
   the block's tile order and of its patch in a padded plane */
#define TENSOR__WINO_TILE(g) ((g) / tQ * tW + (g) % tQ * 4)
/* The distance of V's (or M's) rows of two points, n floats or a few more: an odd number of cache
   lines, as the transforms touch all 36 rows at once (a multiple of 4 KiB would put them all in
   the same few L1 sets; measured with n itself, 32 channels of 136 tiles: the input and gradient
   transforms 1.5-1.8x slower, the CNN step 12.1-12.3 ms against 11.3-11.5) */
static int64_t tensor__wino_pitch(int64_t n) { return n + (48 - n % 32) % 32; }
#define TENSOR__WINO_AT(g, ld) (4 * ((g) / tQ) * (ld) + 16 * ((g) % tQ))
static void tensor__wino_blocks(int64_t begin, int64_t end, void *ctx) {
    tensor__wino_job *j = (tensor__wino_job *)ctx;
    int64_t Ci = j->Ci, Co = j->Co, tH = j->tH, tW = j->tW, tQ = j->tQ, tiles = tH * tW, groups = tH * tQ, Tmax = j->bn * tiles + 8;
    int64_t Hp = 4 * tH + 2, Hg = 4 * tH;
#if TENSOR__HAVE_THREADS
    int slot = __atomic_fetch_add(&j->slot, 1, __ATOMIC_RELAXED);
#else
    int slot = j->slot++;
#endif
    float *V = (float *)(void *)(j->scratch + (size_t)slot * j->slot_bytes), *M = V + TENSOR__WINO_PTS * (Ci * Tmax + 32);
    float *pl = M + TENSOR__WINO_PTS * (Co * Tmax + 32), *pg = pl + Hp * j->ld + 8; /* 8: the slack of tensor__wino_copy */
    float *gU = j->gU ? j->gU + (size_t)slot * TENSOR__WINO_PTS * Co * Ci : NULL;
    memset(pl, 0, (size_t)(Hp * j->ld) * sizeof(float)); /* the border stays zero: only the interior is written */
    if (j->gy) memset(pg, 0, (size_t)(Hg * j->ldg) * sizeof(float));
    for (int64_t bi = begin; bi < end; bi++) {
        /* each row of V and M padded by 8 tiles: the last group's spill */
        int64_t n0 = bi * j->bn, nb = j->N - n0 < j->bn ? j->N - n0 : j->bn, T = nb * tiles + 8, vs = tensor__wino_pitch(Ci * T), ms = tensor__wino_pitch(Co * T);
        for (int64_t i = 0; i < nb; i++)
            for (int64_t c = 0; c < Ci; c++) {
                tensor__wino_copy(pl + j->p * j->ld + j->p, j->ld, j->in + ((n0 + i) * Ci + c) * j->Hi * j->Wi, j->Hi, j->Wi);
                for (int64_t g = 0; g < groups; g += 2) {
                    int64_t h = g + 1 < groups ? g + 1 : g; /* the partner: the next group, or itself at the end */
                    tensor__wino_input_pair(V + c * T + i * tiles, vs, TENSOR__WINO_TILE(g), TENSOR__WINO_TILE(h), pl + TENSOR__WINO_AT(g, j->ld),
                                            pl + TENSOR__WINO_AT(h, j->ld), j->ld);
                }
            }
        if (!j->gy) {
            for (int xi = 0; xi < TENSOR__WINO_PTS; xi++)
                TENSOR__GEMM_IN_TASK(j->oom, tensor__gemm_strided(TENSOR_F32, TENSOR_F32, Co, T - 8, Ci, j->U + xi * Co * Ci, Ci, 1, V + xi * vs, T, 1, M + xi * ms, T, 1, false));
            for (int64_t i = 0; i < nb; i++)
                for (int64_t o = 0; o < Co; o++) {
                    float *yo = j->out + ((n0 + i) * Co + o) * j->Ho * j->Wo;
                    for (int64_t g = 0; g < groups; g += 2) {
                        int64_t h = g + 1 < groups ? g + 1 : g, ya = 4 * (g / tQ), yb = 4 * (h / tQ), xa = 16 * (g % tQ), xb = 16 * (h % tQ);
                        tensor__wino_output_pair(yo + ya * j->Wo + xa, yo + yb * j->Wo + xb, j->Wo, j->Ho - ya < 4 ? j->Ho - ya : 4, j->Ho - yb < 4 ? j->Ho - yb : 4,
                                                 j->Wo - xa < 16 ? j->Wo - xa : 16, j->Wo - xb < 16 ? j->Wo - xb : 16, M + o * T + i * tiles, ms,
                                                 TENSOR__WINO_TILE(g), TENSOR__WINO_TILE(h), j->bias ? j->bias[o] : 0.0f);
                    }
                }
        } else {
            for (int64_t i = 0; i < nb; i++)
                for (int64_t o = 0; o < Co; o++) {
                    const float *src = j->gy + ((n0 + i) * Co + o) * j->Ho * j->Wo;
                    tensor__wino_copy(pg, j->ldg, src, j->Ho, j->Wo);
                    if (j->gbn) j->gbn[(n0 + i) * Co + o] = tensor__row_sum_f32(src, j->Ho * j->Wo);
                    for (int64_t g = 0; g < groups; g += 2) {
                        int64_t h = g + 1 < groups ? g + 1 : g;
                        tensor__wino_grad_pair(M + o * T + i * tiles, ms, TENSOR__WINO_TILE(g), TENSOR__WINO_TILE(h), pg + TENSOR__WINO_AT(g, j->ldg),
                                               pg + TENSOR__WINO_AT(h, j->ldg), j->ldg);
                    }
                }
            for (int xi = 0; xi < TENSOR__WINO_PTS; xi++)
                TENSOR__GEMM_IN_TASK(j->oom, tensor__gemm_strided(TENSOR_F32, TENSOR_F32, Co, Ci, T - 8, M + xi * ms, T, 1, V + xi * vs, 1, T, gU + xi * Co * Ci, Ci, 1, true));
        }
    }
}
#undef TENSOR__WINO_TILE
#undef TENSOR__WINO_AT
/* Runs a job whose geometry, operands and (gy) mode the caller set: blocks, scratch, slots; in the
   weight-gradient mode j->gU holds the sums afterwards ([36][Co][Ci], the caller frees it with
   tensor__cache_free). Returns 0, or 1 after recording an error. */
static int tensor__wino_run(const char *fn, tensor__wino_job *j) {
    j->tH = (j->Ho + 3) / 4;
    j->tW = (j->Wo + 3) / 4;
    j->tQ = (j->tW + 3) / 4;
    int64_t tiles = j->tH * j->tW;
    j->bn = TENSOR__WINO_TILES / tiles;
    j->bn = j->bn < 1 ? 1 : j->bn > j->N ? j->N : j->bn;
    /* a block count the threads share evenly (64 images: 16 blocks of 4 on 2 threads, not 13 of 5
       where one thread waits for the other's 7th), if a block no smaller than half the size gives one */
    for (int64_t b = j->bn, th = tensor_get_num_threads(); th > 1 && b > 1 && 2 * b >= j->bn; b--)
        if (((j->N + b - 1) / b) % th == 0) { j->bn = b; break; }
    j->ld = 16 * j->tQ + 8; /* a group's patch reads 20 floats from 16 q */
    j->ldg = 16 * j->tQ;
    int64_t T = j->bn * tiles, nblocks = (j->N + j->bn - 1) / j->bn, threads = tensor_get_num_threads();
    int64_t slots = nblocks < threads ? nblocks : threads, sums = TENSOR__WINO_PTS * j->Co * j->Ci;
    size_t floats = (size_t)(TENSOR__WINO_PTS * ((j->Ci + j->Co) * (T + 8) + 64) + (4 * j->tH + 2) * j->ld + 8 + (j->gy ? 4 * j->tH * j->ldg + 8 : 0));
    j->slot_bytes = (floats * sizeof(float) + 63) & ~(size_t)63;
    j->slot = 0;
    j->scratch = (char *)tensor__cache_alloc((size_t)slots * j->slot_bytes);
    j->gU = j->gy ? (float *)tensor__cache_alloc((size_t)(slots * sums) * sizeof(float)) : NULL;
    if (!j->scratch || (j->gy && !j->gU)) {
        tensor__cache_free(j->scratch);
        tensor__cache_free(j->gU);
        j->gU = NULL;
        tensor__fail(fn, "out of memory allocating convolution scratch");
        return 1;
    }
    if (j->gU) memset(j->gU, 0, (size_t)(slots * sums) * sizeof(float));
    TENSOR__PATH_TAKEN(conv_winograd);
    tensor__parallel_for(nblocks, 1, tensor__wino_blocks, j);
    if (TENSOR__TASK_FAILED(j->oom)) {
        tensor__cache_free(j->scratch);
        tensor__cache_free(j->gU);
        j->gU = NULL;
        tensor__fail(fn, "out of memory allocating convolution scratch");
        return 1;
    }
    for (int s = 1; j->gU && s < j->slot && s < slots; s++)
        for (int64_t i = 0; i < sums; i++) j->gU[i] += j->gU[s * sums + i];
    tensor__cache_free(j->scratch);
    return 0;
}

/* out [N, O, oH, oW] of x [N, C, H, W] and w [O, C, 3, 3] (contiguous), bias [O] or NULL. */
static int tensor__wino_forward(const char *fn, const tensor__conv_geom *g, const float *x, const float *w, const float *bias, float *out) {
    float *U = (float *)tensor__cache_alloc((size_t)(TENSOR__WINO_PTS * g->O * g->C) * sizeof(float));
    if (!U) { tensor__fail(fn, "out of memory allocating convolution scratch"); return 1; }
    tensor__wino_weights(U, w, g->O, g->C, false);
    tensor__wino_job j;
    memset(&j, 0, sizeof j);
    j.N = g->N, j.Ci = g->C, j.Hi = g->H, j.Wi = g->W, j.Co = g->O, j.Ho = g->oH, j.Wo = g->oW, j.p = g->ph;
    j.in = x, j.U = U, j.bias = bias, j.out = out;
    int rc = tensor__wino_run(fn, &j);
    tensor__cache_free(U);
    return rc;
}

/* The gradients, each where its pointer is set: gx [N, C, H, W] (needs w), gw [O, C, 3, 3] (needs
   x), gb [O]; gc: the output's gradient [N, O, oH, oW]; all contiguous f32. */
static int tensor__wino_backward(const char *fn, const tensor__conv_geom *g, const float *x, const float *w, const float *gc, float *gx, float *gw, float *gb) {
    int64_t P = g->oH * g->oW;
    if (gx) {
        float *U = (float *)tensor__cache_alloc((size_t)(TENSOR__WINO_PTS * g->O * g->C) * sizeof(float));
        if (!U) { tensor__fail(fn, "out of memory allocating convolution scratch"); return 1; }
        tensor__wino_weights(U, w, g->O, g->C, true);
        tensor__wino_job j;
        memset(&j, 0, sizeof j);
        j.N = g->N, j.Ci = g->O, j.Hi = g->oH, j.Wi = g->oW, j.Co = g->C, j.Ho = g->H, j.Wo = g->W, j.p = 2 - g->ph;
        j.in = gc, j.U = U, j.out = gx;
        int rc = tensor__wino_run(fn, &j);
        tensor__cache_free(U);
        if (rc) return 1;
    }
    if (gw) {
        tensor__wino_job j;
        memset(&j, 0, sizeof j);
        j.N = g->N, j.Ci = g->C, j.Hi = g->H, j.Wi = g->W, j.Co = g->O, j.Ho = g->oH, j.Wo = g->oW, j.p = g->ph;
        j.in = x, j.gy = gc;
        j.gbn = gb ? (double *)tensor__cache_alloc((size_t)(g->N * g->O) * sizeof(double)) : NULL;
        if ((gb && !j.gbn) || tensor__wino_run(fn, &j)) {
            if (gb && !j.gbn) tensor__fail(fn, "out of memory allocating convolution scratch");
            tensor__cache_free(j.gbn);
            return 1;
        }
        tensor__wino_weights_grad(gw, j.gU, g->O, g->C);
        tensor__cache_free(j.gU);
        for (int64_t o = 0; gb && o < g->O; o++) { /* per image in float, over the images in double, as the GEMM path */
            double acc = 0;
            for (int64_t n = 0; n < g->N; n++) acc += j.gbn[n * g->O + o];
            gb[o] = (float)acc;
        }
        tensor__cache_free(j.gbn);
        return 0;
    }
    for (int64_t o = 0; gb && o < g->O; o++) { /* no weight gradient: the sums here */
        double acc = 0;
        for (int64_t n = 0; n < g->N; n++) acc += tensor__row_sum_f32(gc + (n * g->O + o) * P, P);
        gb[o] = (float)acc;
    }
    return 0;
}
#endif

/* The dtype a convolution's operands (x, w and the output's gradient, all of dtype dt) enter
   the GEMM in: bf16 as it is where the bf16 kernel runs (im2col on 2-byte elements, f32 products,
   results rounded once at the end), else the compute dtype (f16, and bf16 without avx512_bf16,
   converted to f32 first). A shape Winograd takes stays converted: a quarter of the multiplies at
   half the rate beat the bf16 kernel there (measured here, 1 thread, forward + backward, bf16
   kernel vs converted: 64 x 32 x 14 x 14 -> 64, 3x3, 5.1-5.6 vs 4.75 ms; 32 x 128 x 14 x 14 ->
   128 19.8 vs 16.7 ms (Winograd both); with stride 2 2.7 vs 3.2 ms, 64 x 64 x 14 x 14 -> 64 1x1
   1.35 vs 2.6 ms (im2col + the f32 GEMM)). */
static tensor_dtype tensor__conv_operand_dtype(tensor_dtype dt, const tensor__conv_geom *g) {
    return dt == TENSOR_BF16 && tensor__gemm_has_bf16() && !tensor__wino_ok(g, TENSOR_F32) ? TENSOR_BF16 : tensor__gemm_dtype(dt);
}

/* The fast path: x and w as contiguous tensors of the operand dtype, then tensor__conv_fwd_blocks
   (or Winograd, which runs in f32 only). */
static int tensor__conv_fast(tensor__call *c, const tensor__conv_geom *g) {
    tensor *x = c->in[0], *w = c->in[1], *bias = c->in[2], *out = c->out;
    tensor_dtype ct = tensor__gemm_dtype(x->dtype), sd = w->dtype == x->dtype ? tensor__conv_operand_dtype(x->dtype, g) : ct;
    size_t cs = tensor__dtype_sizes[ct];
    bool x_ok = x->dtype == sd && tensor__contiguous(x), w_ok = w->dtype == sd && tensor__contiguous(w);
    tensor *xc = x_ok ? NULL : tensor__contiguous_copy(c->fn, x, sd);
    tensor *wc = w_ok ? NULL : tensor__contiguous_copy(c->fn, w, sd);
    tensor *oc = out->dtype == ct ? NULL : tensor__new_like(c->fn, out, ct);
    char *bb = bias ? (char *)tensor__cache_alloc((size_t)g->O * cs) : NULL;
    tensor__conv_job j;
    int rc = (!x_ok && !xc) || (!w_ok && !wc) || (out->dtype != ct && !oc);
    if (!rc && bias && !bb) rc = (tensor__fail(c->fn, "out of memory allocating convolution scratch"), 1);
    bool wino = sd == ct && tensor__wino_ok(g, ct);
    if (wino || rc) memset(&j, 0, sizeof j); /* (no scratch to size when the copies failed) */
    else if (!tensor__conv_job_init(c->fn, &j, g, ct, sd)) rc = 1;
    if (!rc) {
        const char *bsrc = bias ? (const char *)bias->storage->data + bias->offset * (int64_t)tensor__dtype_sizes[bias->dtype] : NULL;
        bool bhalf = bias && (bias->dtype == TENSOR_BF16 || bias->dtype == TENSOR_F16);
        if (bias && ct == TENSOR_F32 && bhalf && (bias->strides[0] == 1 || g->O == 1)) { /* the bias in f32: one SIMD cast */
            tensor__half_to_f32((float *)(void *)bb, (const uint16_t *)(const void *)bsrc, g->O, bias->dtype == TENSOR_BF16);
        } else if (bias) { /* the bias in ct */
            int64_t eb = (int64_t)tensor__dtype_sizes[bias->dtype];
            for (int64_t o = 0; o < g->O; o++) {
                double bv = tensor__load_f64((const char *)bias->storage->data + (bias->offset + o * bias->strides[0]) * eb, bias->dtype);
                if (ct == TENSOR_F32) ((float *)bb)[o] = (float)bv;
                else ((double *)bb)[o] = bv;
            }
        }
        j.bias = bb;
        j.x = tensor__data(xc ? xc : x);
        j.w = tensor__data(wc ? wc : w);
        j.out = tensor__data(oc ? oc : out);
#if TENSOR__NN_AVX2
        if (wino) rc = tensor__wino_forward(c->fn, g, (const float *)j.x, (const float *)j.w, (const float *)bb, (float *)j.out);
        else
#endif
        if (!tensor__conv_blocks(tensor__conv_fwd_blocks, &j)) rc = (tensor__fail(c->fn, "out of memory allocating convolution scratch"), 1);
        if (oc && !rc) tensor__copy_into(out, oc);
    }
    tensor__cache_free(bb);
    tensor__cache_free(j.scratch);
    tensor_free(xc);
    tensor_free(wc);
    tensor_free(oc);
    return rc;
}

static int tensor__conv_kernel(tensor__call *c, int sd) {
    tensor__conv_geom g;
    tensor__conv_geometry(c, sd, &g);
    if (tensor__numel_of(c->out->ndim, c->out->shape) == 0) return 0;
    if (tensor__reference_kernels) { tensor__conv_reference(c, &g); return 0; }
    return tensor__conv_fast(c, &g);
}
/* out: [N, O, oH, oW] or [O, oH, oW] */
static int tensor__cpu_conv2d(tensor__call *c) { return tensor__conv_kernel(c, 2); }
/* out: [N, O, oL] or [O, oL] */
static int tensor__cpu_conv1d(tensor__call *c) { return tensor__conv_kernel(c, 1); }

/* The checks of PyTorch's convolution, for sd spatial dims (1 or 2), then the output shape. */
static tensor *tensor__conv_front(tensor_op op, int sd, tensor *x, tensor *w, tensor *bias, int stride, int padding, int dilation, int groups) {
    const char *fn = tensor__ops[op].fn;
    TENSOR__CHECK_ARG(fn, x);
    TENSOR__CHECK_ARG(fn, w);
    tensor *ins[3] = {x, w, bias};
    if (!tensor__same_device(fn, 3, ins)) return NULL;
    if (x->ndim != sd + 1 && x->ndim != sd + 2)
        return tensor__fail(fn, "expected a %d-D (unbatched) or %d-D (batched) input, got shape %s", sd + 1, sd + 2, tensor__shape_of(x));
    if (w->ndim != sd + 2)
        return tensor__fail(fn, "expected a %d-D weight [out_channels, in_channels/groups%s], got shape %s", sd + 2, sd == 2 ? ", kH, kW" : ", k", tensor__shape_of(w));
    if (!tensor__is_float(x->dtype)) return tensor__fail(fn, "expected a floating input, got %s", tensor__dtype_names[x->dtype]);
    if (w->dtype != x->dtype) return tensor__fail(fn, "input dtype %s and weight dtype %s should be the same", tensor__dtype_names[x->dtype], tensor__dtype_names[w->dtype]);
    if (bias && bias->dtype != x->dtype) return tensor__fail(fn, "input dtype %s and bias dtype %s should be the same", tensor__dtype_names[x->dtype], tensor__dtype_names[bias->dtype]);
    if (stride < 1) return tensor__fail(fn, "stride must be positive, got %d", stride);
    if (padding < 0) return tensor__fail(fn, "padding must be non-negative, got %d", padding);
    if (dilation < 1) return tensor__fail(fn, "dilation must be positive, got %d", dilation);
    if (groups < 1) return tensor__fail(fn, "groups must be positive, got %d", groups);
    int64_t O = w->shape[0], C = x->shape[x->ndim - sd - 1], wc;
    if (O % groups != 0)
        return tensor__fail(fn, "out_channels %lld of weight %s is not divisible by groups %d", (long long)O, tensor__shape_of(w), groups);
    if (!tensor__size_mul(w->shape[1], groups, &wc) || C != wc) /* (a product past 2^60 matches no input) */
        return tensor__fail(fn, "input of shape %s has %lld channels, expected %lld x %d (weight %s, groups %d)", tensor__shape_of(x), (long long)C,
                            (long long)w->shape[1], groups, tensor__shape_of(w), groups);
    if (bias && (bias->ndim != 1 || bias->shape[0] != O))
        return tensor__fail(fn, "bias must be 1-D with %lld elements (out_channels of weight %s), got shape %s", (long long)O, tensor__shape_of(w), tensor__shape_of(bias));
    int64_t shape[TENSOR_MAX_DIMS];
    int nd = 0;
    if (x->ndim == sd + 2) shape[nd++] = x->shape[0];
    shape[nd++] = O;
    for (int i = 0; i < sd; i++) {
        int64_t in = x->shape[x->ndim - sd + i], k = w->shape[2 + i];
        int64_t padded = in + 2 * (int64_t)padding, span = 1 - dilation; /* k = 0 */
        if (k > 0 && (!tensor__size_mul(k - 1, dilation, &span) || ++span > padded)) /* a span past 2^60 exceeds any input */
            return tensor__fail(fn, "padded input size %lld (input %s, padding %d) is smaller than the dilated kernel size (%lld - 1) * %d + 1 (weight %s)",
                                (long long)padded, tensor__shape_of(x), padding, (long long)k, dilation, tensor__shape_of(w));
        shape[nd++] = (padded - span) / stride + 1;
    }
    tensor__call c;
    tensor__call_init(&c, op);
    c.n_in = 3;
    c.in[0] = x;
    c.in[1] = w;
    c.in[2] = bias;
    c.ip[0] = stride;
    c.ip[1] = padding;
    c.ip[2] = dilation;
    c.ip[3] = groups;
    c.out = tensor__new(fn, nd, shape, x->dtype, x->storage->device);
    return c.out ? tensor__dispatch(&c) : NULL;
}
TENSOR_API tensor *tensor_conv2d(tensor *x, tensor *w, tensor *bias, int stride, int padding, int dilation, int groups) {
    return tensor__conv_front(TENSOR_OP_conv2d, 2, x, w, bias, stride, padding, dilation, groups);
}
TENSOR_API tensor *tensor_conv1d(tensor *x, tensor *w, tensor *bias, int stride, int padding, int dilation, int groups) {
    return tensor__conv_front(TENSOR_OP_conv1d, 1, x, w, bias, stride, padding, dilation, groups);
}

/* ---- pooling ---- */

/* One plane of pooling in the compute type T (f32, or f64 for f64). Window (oh, ow) covers input
   rows [oh * s - pad, + k) and columns [ow * s - pad, + k) clipped to the input: max treats the
   padding as -inf, avg as zeros (count_include_pad: the divisor is always k^2, floor mode).
   argmax: the position the max picks: the first maximum in row-major order, or the first NaN
   (NaN propagates); a window of -inf picks its first element, as PyTorch does.
   pool: y [oH, oW] from x [H, W]; pool_bwd: gx [H, W] = the adjoint, from gy [oH, oW]. */
#define TENSOR__DEFINE_POOL(sfx, T)                                                                      \
    static int64_t tensor__pool_argmax_##sfx(const T *x, int64_t W, int64_t h0, int64_t h1, int64_t w0, int64_t w1) { \
        int64_t at = h0 * W + w0;                                                                       \
        T best = (T)-INFINITY;                                                                          \
        for (int64_t ih = h0; ih < h1; ih++)                                                            \
            for (int64_t iw = w0; iw < w1; iw++) {                                                      \
                int64_t i = ih * W + iw;                                                                \
                T v = x[i];                                                                             \
                if (v != v) return i;                                                                   \
                int64_t gt = v > best; /* branch-free: random data makes this branch unpredictable */  \
                best = gt ? v : best;                                                                   \
                at += (i - at) & -gt;                                                                   \
            }                                                                                           \
        return at;                                                                                      \
    }                                                                                                   \
    static void tensor__pool_plane_##sfx(T *y, const T *x, const tensor__pool_geom *p, bool is_max) {   \
        T div = (T)(p->k * p->k);                                                                       \
        for (int64_t oh = 0; oh < p->oH; oh++) {                                                        \
            int64_t h0 = oh * p->s - p->pad, h1 = h0 + p->k < p->H ? h0 + p->k : p->H;                  \
            if (h0 < 0) h0 = 0;                                                                         \
            for (int64_t ow = 0; ow < p->oW; ow++) {                                                    \
                int64_t w0 = ow * p->s - p->pad, w1 = w0 + p->k < p->W ? w0 + p->k : p->W;              \
                if (w0 < 0) w0 = 0;                                                                     \
                if (is_max) { y[oh * p->oW + ow] = x[tensor__pool_argmax_##sfx(x, p->W, h0, h1, w0, w1)]; continue; } \
                T acc = 0;                                                                              \
                for (int64_t ih = h0; ih < h1; ih++)                                                    \
                    for (int64_t iw = w0; iw < w1; iw++) acc += x[ih * p->W + iw];                      \
                y[oh * p->oW + ow] = acc / div;                                                         \
            }                                                                                           \
        }                                                                                               \
    }                                                                                                   \
    static void tensor__pool_plane_bwd_##sfx(T *gx, const T *x, const T *gy, const tensor__pool_geom *p, bool is_max) { \
        T div = (T)(p->k * p->k);                                                                       \
        memset(gx, 0, (size_t)(p->H * p->W) * sizeof(T));                                               \
        for (int64_t oh = 0; oh < p->oH; oh++) {                                                        \
            int64_t h0 = oh * p->s - p->pad, h1 = h0 + p->k < p->H ? h0 + p->k : p->H;                  \
            if (h0 < 0) h0 = 0;                                                                         \
            for (int64_t ow = 0; ow < p->oW; ow++) {                                                    \
                int64_t w0 = ow * p->s - p->pad, w1 = w0 + p->k < p->W ? w0 + p->k : p->W;              \
                if (w0 < 0) w0 = 0;                                                                     \
                T g = gy[oh * p->oW + ow];                                                              \
                if (is_max) { gx[tensor__pool_argmax_##sfx(x, p->W, h0, h1, w0, w1)] += g; continue; }  \
                g = g / div;                                                                            \
                for (int64_t ih = h0; ih < h1; ih++)                                                    \
                    for (int64_t iw = w0; iw < w1; iw++) gx[ih * p->W + iw] += g;                       \
            }                                                                                           \
        }                                                                                               \
    }

typedef struct { int64_t H, W, oH, oW, k, s, pad; } tensor__pool_geom;
TENSOR__DEFINE_POOL(f32, float)
TENSOR__DEFINE_POOL(f64, double)

/* The fast path of max pooling with non-overlapping windows (kernel == stride, no padding: every
   window lies inside the input; floor mode leaves the last H % k rows and W % k columns out), such
   as a CNN's 2x2. It gives what tensor__pool_argmax picks: a running maximum m over the window in
   row-major order takes v when v > m or v is NaN, unless m already is NaN (so the first NaN stays,
   and of equal values the earlier one, which tells -0 from +0). Backward writes each element of gx
   once: gy at the window's pick (as 0 + gy, the reference's sum into zeros), 0 elsewhere. */
#define TENSOR__POOL_TAKES(m, v) (((m) == (m)) & (((v) > (m)) | ((v) != (v)))) /* no branches: random data */
#define TENSOR__DEFINE_POOL_NOV(sfx, T)                                                                  \
    static void tensor__maxpool_nov_##sfx(T *y, const T *x, const tensor__pool_geom *p) {               \
        int64_t k = p->k, W = p->W;                                                                     \
        if (k == 2 && tensor__maxpool2_plane_##sfx(y, x, p)) return;                                    \
        for (int64_t oh = 0; oh < p->oH; oh++) {                                                        \
            const T *r = x + oh * k * W;                                                                \
            T *yr = y + oh * p->oW;                                                                     \
            int64_t ow = 0;                                                                             \
            for (; k == 2 && ow < p->oW; ow++) {                                                        \
                const T *q = r + 2 * ow;                                                                \
                T m = q[0], v = q[1];                                                                   \
                m = TENSOR__POOL_TAKES(m, v) ? v : m;                                                   \
                v = q[W]; m = TENSOR__POOL_TAKES(m, v) ? v : m;                                         \
                v = q[W + 1]; m = TENSOR__POOL_TAKES(m, v) ? v : m;                                     \
                yr[ow] = m;                                                                             \
            }                                                                                           \
            for (; ow < p->oW; ow++) {                                                                  \
                const T *q = r + ow * k;                                                                \
                T m = q[0];                                                                             \
                for (int64_t i = 0; i < k; i++)                                                         \
                    for (int64_t j = 0; j < k; j++) {                                                   \
                        T v = q[i * W + j];                                                             \
                        m = TENSOR__POOL_TAKES(m, v) ? v : m;                                           \
                    }                                                                                   \
                yr[ow] = m;                                                                             \
            }                                                                                           \
        }                                                                                               \
    }                                                                                                   \
    static void tensor__maxpool_nov_bwd_##sfx(T *gx, const T *x, const T *gy, const tensor__pool_geom *p) { \
        int64_t k = p->k, W = p->W, cw = p->oW * k;                                                     \
        if (k == 2 && tensor__maxpool2_bwd_plane_##sfx(gx, x, gy, p)) return;                          \
        for (int64_t oh = 0; oh < p->oH; oh++) {                                                        \
            const T *r = x + oh * k * W, *gr = gy + oh * p->oW;                                         \
            T *o = gx + oh * k * W;                                                                     \
            int64_t ow = 0;                                                                             \
            for (; k == 2 && ow < p->oW; ow++) {                                                        \
                const T *q = r + 2 * ow;                                                                \
                T m = q[0], v = q[1], g = (T)0 + gr[ow];                                                \
                int at = 0, t = TENSOR__POOL_TAKES(m, v);                                               \
                m = t ? v : m; at = t ? 1 : at;                                                         \
                v = q[W]; t = TENSOR__POOL_TAKES(m, v); m = t ? v : m; at = t ? 2 : at;                 \
                v = q[W + 1]; t = TENSOR__POOL_TAKES(m, v); at = t ? 3 : at;                            \
                T *d = o + 2 * ow;                                                                      \
                d[0] = at == 0 ? g : 0;                                                                 \
                d[1] = at == 1 ? g : 0;                                                                 \
                d[W] = at == 2 ? g : 0;                                                                 \
                d[W + 1] = at == 3 ? g : 0;                                                             \
            }                                                                                           \
            for (; ow < p->oW; ow++) {                                                                  \
                const T *q = r + ow * k;                                                                \
                T *d = o + ow * k;                                                                      \
                T m = q[0];                                                                             \
                int64_t at = 0;                                                                         \
                for (int64_t i = 0; i < k; i++)                                                         \
                    for (int64_t j = 0; j < k; j++) {                                                   \
                        T v = q[i * W + j];                                                             \
                        bool t = TENSOR__POOL_TAKES(m, v);                                              \
                        m = t ? v : m;                                                                  \
                        at = t ? i * W + j : at;                                                        \
                        d[i * W + j] = 0;                                                               \
                    }                                                                                   \
                d[at] = (T)0 + gr[ow];                                                                  \
            }                                                                                           \
            for (int64_t i = 0; i < k && cw < W; i++) memset(o + i * W + cw, 0, (size_t)(W - cw) * sizeof(T)); \
        }                                                                                               \
        if (p->oH * k < p->H) memset(gx + p->oH * k * W, 0, (size_t)((p->H - p->oH * k) * W) * sizeof(T)); \
    }

/* 2x2 windows of f32 planes, eight at a time along a row (AVX2). The columns of the
   windows are split into even and odd ones (a, b of r0; c, d of r1), then the running maximum
   goes a, b, c, d as above. A row of at least 8 windows ends with a block that overlaps the one
   before it (no masks; the overlap is computed twice, the same). A shorter row is one block whose
   loads and stores run past the row, over data the plane's later rows overwrite; masked stores are
   slow on some CPUs, so only where the block would run past the plane (xa: elements from r1 to the
   end of the plane, ya: from y / gy) do the loads take a mask and the stores go through a buffer. */
#if TENSOR__NN_AVX2
static TENSOR__AVX2_INLINE __m256 tensor__pool_even(__m256 lo, __m256 hi) { /* lo[0, 2, 4, 6], hi[0, 2, 4, 6] */
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi, 0x88)), 0xD8));
}
static TENSOR__AVX2_INLINE __m256 tensor__pool_odd(__m256 lo, __m256 hi) {
    return _mm256_castpd_ps(_mm256_permute4x64_pd(_mm256_castps_pd(_mm256_shuffle_ps(lo, hi, 0xDD)), 0xD8));
}
/* lanes where the running maximum m takes v: v > m or v NaN (NLE_UQ), and m is not NaN */
static TENSOR__AVX2_INLINE __m256 tensor__pool_takes(__m256 m, __m256 v) {
    return _mm256_and_ps(_mm256_cmp_ps(v, m, _CMP_NLE_UQ), _mm256_cmp_ps(m, m, _CMP_ORD_Q));
}
static TENSOR__AVX2_INLINE void tensor__pool_corners(const float *r0, const float *r1, int64_t n, __m256 *a, __m256 *b, __m256 *c, __m256 *d) {
    __m256 l0, h0, l1, h1;
    if (n >= 16) { /* 16 columns of each row readable */
        l0 = _mm256_loadu_ps(r0); h0 = _mm256_loadu_ps(r0 + 8);
        l1 = _mm256_loadu_ps(r1); h1 = _mm256_loadu_ps(r1 + 8);
    } else { /* the first n only */
        __m256i ml = tensor__avx2_first(n), mh = tensor__avx2_first(n - 8);
        l0 = _mm256_maskload_ps(r0, ml); h0 = _mm256_maskload_ps(r0 + 8, mh);
        l1 = _mm256_maskload_ps(r1, ml); h1 = _mm256_maskload_ps(r1 + 8, mh);
    }
    *a = tensor__pool_even(l0, h0); *b = tensor__pool_odd(l0, h0);
    *c = tensor__pool_even(l1, h1); *d = tensor__pool_odd(l1, h1);
}
static TENSOR__AVX2_INLINE __m256 tensor__pool_max4(__m256 m, __m256 b, __m256 c, __m256 d) {
    m = _mm256_blendv_ps(m, b, tensor__pool_takes(m, b));
    m = _mm256_blendv_ps(m, c, tensor__pool_takes(m, c));
    return _mm256_blendv_ps(m, d, tensor__pool_takes(m, d));
}
/* y [oH, oW] from x [H, W] */
static TENSOR__AVX2_FN void tensor__maxpool2_plane_avx2(float *y, const float *x, const tensor__pool_geom *p) {
    const int64_t H = p->H, W = p->W, oH = p->oH, oW = p->oW;
    __m256 m, b, c, d;
    for (int64_t oh = 0; oh < oH; oh++) {
        const float *r0 = x + 2 * oh * W, *r1 = r0 + W;
        float *yr = y + oh * oW;
        if (oW >= 8) {
            for (int64_t o0 = 0; o0 < oW; o0 += 8) {
                int64_t ow = o0 + 8 > oW ? oW - 8 : o0;
                tensor__pool_corners(r0 + 2 * ow, r1 + 2 * ow, 16, &m, &b, &c, &d);
                _mm256_storeu_ps(yr + ow, tensor__pool_max4(m, b, c, d));
            }
            continue;
        }
        int64_t xa = (H - 2 * oh - 1) * W, ya = (oH - oh) * oW; /* elements from r1, yr to the plane's end */
        tensor__pool_corners(r0, r1, xa >= 16 ? 16 : 2 * oW, &m, &b, &c, &d);
        m = tensor__pool_max4(m, b, c, d);
        if (ya >= 8) {
            _mm256_storeu_ps(yr, m);
        } else {
            float t[8];
            _mm256_storeu_ps(t, m);
            for (int64_t i = 0; i < oW; i++) yr[i] = t[i];
        }
    }
    _mm256_zeroupper(); /* gcc leaves it out in some builds (-O1 with ASan); the tests check */
}
/* gx of one 2x2 block: the last take wins (d, else c, else b, else a), as 0 + g; the two rows'
   16 columns each, interleaved back. */
static TENSOR__AVX2_INLINE void tensor__pool_bwd_block(const float *r0, const float *r1, int64_t n, __m256 g, __m256 *o) {
    __m256 m, b, c, d;
    tensor__pool_corners(r0, r1, n, &m, &b, &c, &d);
    __m256 tb = tensor__pool_takes(m, b);
    m = _mm256_blendv_ps(m, b, tb);
    __m256 tc = tensor__pool_takes(m, c);
    m = _mm256_blendv_ps(m, c, tc);
    __m256 td = tensor__pool_takes(m, d);
    g = _mm256_add_ps(_mm256_setzero_ps(), g);
    __m256 later = _mm256_or_ps(tc, td);
    __m256 ga = _mm256_andnot_ps(_mm256_or_ps(tb, later), g), gb = _mm256_andnot_ps(later, _mm256_and_ps(tb, g));
    __m256 gc = _mm256_andnot_ps(td, _mm256_and_ps(tc, g)), gd = _mm256_and_ps(td, g);
    /* [a0 b0 a1 b1 | a4 b4 a5 b5] and [a2 b2 a3 b3 | a6 b6 a7 b7], then their halves */
    __m256 lo0 = _mm256_unpacklo_ps(ga, gb), hi0 = _mm256_unpackhi_ps(ga, gb), lo1 = _mm256_unpacklo_ps(gc, gd), hi1 = _mm256_unpackhi_ps(gc, gd);
    o[0] = _mm256_permute2f128_ps(lo0, hi0, 0x20); o[1] = _mm256_permute2f128_ps(lo0, hi0, 0x31);
    o[2] = _mm256_permute2f128_ps(lo1, hi1, 0x20); o[3] = _mm256_permute2f128_ps(lo1, hi1, 0x31);
}
/* gx [H, W] from x [H, W] and gy [oH, oW], every element written (the column and row that no
   window covers when W or H is odd get 0, after the blocks that spill over them) */
static TENSOR__AVX2_FN void tensor__maxpool2_bwd_plane_avx2(float *gx, const float *x, const float *gy, const tensor__pool_geom *p) {
    const int64_t H = p->H, W = p->W, oH = p->oH, oW = p->oW;
    __m256 o[4];
    for (int64_t oh = 0; oh < oH; oh++) {
        const float *r0 = x + 2 * oh * W, *r1 = r0 + W, *gr = gy + oh * oW;
        float *g0 = gx + 2 * oh * W, *g1 = g0 + W;
        if (oW >= 8) {
            for (int64_t o0 = 0; o0 < oW; o0 += 8) {
                int64_t ow = o0 + 8 > oW ? oW - 8 : o0;
                tensor__pool_bwd_block(r0 + 2 * ow, r1 + 2 * ow, 16, _mm256_loadu_ps(gr + ow), o);
                _mm256_storeu_ps(g0 + 2 * ow, o[0]); _mm256_storeu_ps(g0 + 2 * ow + 8, o[1]);
                _mm256_storeu_ps(g1 + 2 * ow, o[2]); _mm256_storeu_ps(g1 + 2 * ow + 8, o[3]);
            }
        } else {
            int64_t xa = (H - 2 * oh - 1) * W, ya = (oH - oh) * oW;
            __m256 g = ya >= 8 ? _mm256_loadu_ps(gr) : _mm256_maskload_ps(gr, tensor__avx2_first(oW));
            tensor__pool_bwd_block(r0, r1, xa >= 16 ? 16 : 2 * oW, g, o);
            if (xa >= 16) { /* g0's spill lands in g1, stored after it; g1's in the next rows */
                _mm256_storeu_ps(g0, o[0]); _mm256_storeu_ps(g0 + 8, o[1]);
                _mm256_storeu_ps(g1, o[2]); _mm256_storeu_ps(g1 + 8, o[3]);
            } else {
                float t[32];
                for (int i = 0; i < 4; i++) _mm256_storeu_ps(t + 8 * i, o[i]);
                for (int64_t i = 0; i < 2 * oW; i++) { g0[i] = t[i]; g1[i] = t[16 + i]; }
            }
        }
        if (W & 1) g0[W - 1] = g1[W - 1] = 0;
    }
    _mm256_zeroupper();
    if (H & 1) memset(gx + (H - 1) * W, 0, (size_t)W * sizeof(float));
}
#endif
/* The 2x2 plane kernels where the CPU has AVX2 (f32); false: the scalar loops do the plane. */
static bool tensor__maxpool2_plane_f32(float *y, const float *x, const tensor__pool_geom *p) {
#if TENSOR__NN_AVX2
    if (tensor__nn_isa() >= 2) { TENSOR__PATH_TAKEN(maxpool_fast); tensor__maxpool2_plane_avx2(y, x, p); return true; }
#endif
    (void)y; (void)x; (void)p;
    return false;
}
static bool tensor__maxpool2_bwd_plane_f32(float *gx, const float *x, const float *gy, const tensor__pool_geom *p) {
#if TENSOR__NN_AVX2
    if (tensor__nn_isa() >= 2) { TENSOR__PATH_TAKEN(maxpool_fast); tensor__maxpool2_bwd_plane_avx2(gx, x, gy, p); return true; }
#endif
    (void)gx; (void)x; (void)gy; (void)p;
    return false;
}
static bool tensor__maxpool2_plane_f64(double *y, const double *x, const tensor__pool_geom *p) { (void)y; (void)x; (void)p; return false; }
static bool tensor__maxpool2_bwd_plane_f64(double *gx, const double *x, const double *gy, const tensor__pool_geom *p) {
    (void)gx; (void)x; (void)gy; (void)p;
    return false;
}
TENSOR__DEFINE_POOL_NOV(f32, float)
TENSOR__DEFINE_POOL_NOV(f64, double)

/* The planes of a pooling's operand t ([N, C, h, w] or [C, h, w]) in the compute dtype ct: plane
   i of a contiguous t of dtype ct is used in place, else it is packed into buf. */
static bool tensor__pool_direct(const tensor *t, tensor_dtype ct) { return t->dtype == ct && tensor__contiguous(t); }
static const char *tensor__pool_plane_of(const tensor *t, int64_t i, int64_t C, tensor_dtype ct, void *buf) {
    int nd = t->ndim;
    int64_t h = t->shape[nd - 2], w = t->shape[nd - 1];
    size_t cs = tensor__dtype_sizes[ct];
    if (tensor__pool_direct(t, ct)) return tensor__data(t) + (size_t)(i * h * w) * cs;
    int64_t n = i / C, ch = i % C;
    int64_t off = t->offset + (nd == 4 ? n * t->strides[0] : 0) + ch * t->strides[nd - 3];
    tensor__pack(buf, ct, (const char *)t->storage->data + off * (int64_t)tensor__dtype_sizes[t->dtype], t->dtype, h, w, t->strides[nd - 2], t->strides[nd - 1]);
    return (const char *)buf;
}

/* A range of planes of a pooling, forward (out from x) or backward (out = gx from x and gy), in
   f32 (f64 for f64): operands are read in place when contiguous of that dtype, else packed into
   this range's own buffers; the result (a new contiguous tensor) is written in place when of that
   dtype, else converted. fast: the non-overlapping max pooling kernels above, else the per-window
   loops of TENSOR__DEFINE_POOL (the reference). */
typedef struct {
    const tensor *x, *gy;
    tensor *out;
    const tensor__pool_geom *p;
    int64_t C;
    tensor_dtype ct;
    bool is_max, backward, fast;
    int failed;
} tensor__pool_job;

static void tensor__pool_planes(int64_t begin, int64_t end, void *ctx) {
    tensor__pool_job *j = (tensor__pool_job *)ctx;
    const tensor__pool_geom *p = j->p;
    tensor_dtype ct = j->ct;
    size_t cs = tensor__dtype_sizes[ct], eo = tensor__dtype_sizes[j->out->dtype];
    bool f32 = ct == TENSOR_F32, need_x = !j->backward || j->is_max, out_direct = j->out->dtype == ct;
    int64_t in_n = p->H * p->W, pooled_n = p->oH * p->oW, out_n = j->backward ? in_n : pooled_n;
    void *xb = need_x && !tensor__pool_direct(j->x, ct) ? tensor__alloc_aligned((size_t)in_n * cs) : NULL;
    void *gb = j->backward && !tensor__pool_direct(j->gy, ct) ? tensor__alloc_aligned((size_t)pooled_n * cs) : NULL;
    void *ob = out_direct ? NULL : tensor__alloc_aligned((size_t)out_n * cs);
    if ((need_x && !xb && !tensor__pool_direct(j->x, ct)) || (j->backward && !gb && !tensor__pool_direct(j->gy, ct)) || (!out_direct && !ob)) {
        TENSOR__ATOMIC_SET(&j->failed, 1);
    } else {
        for (int64_t i = begin; i < end; i++) {
            const char *xp = need_x ? tensor__pool_plane_of(j->x, i, j->C, ct, xb) : NULL;
            const char *gp = j->backward ? tensor__pool_plane_of(j->gy, i, j->C, ct, gb) : NULL;
            char *op = out_direct ? tensor__data(j->out) + (size_t)(i * out_n) * cs : (char *)ob;
            if (j->fast && j->backward) {
                if (f32) tensor__maxpool_nov_bwd_f32((float *)op, (const float *)xp, (const float *)gp, p);
                else tensor__maxpool_nov_bwd_f64((double *)op, (const double *)xp, (const double *)gp, p);
            } else if (j->fast) {
                if (f32) tensor__maxpool_nov_f32((float *)op, (const float *)xp, p);
                else tensor__maxpool_nov_f64((double *)op, (const double *)xp, p);
            } else if (j->backward) {
                if (f32) tensor__pool_plane_bwd_f32((float *)op, (const float *)xp, (const float *)gp, p, j->is_max);
                else tensor__pool_plane_bwd_f64((double *)op, (const double *)xp, (const double *)gp, p, j->is_max);
            } else {
                if (f32) tensor__pool_plane_f32((float *)op, (const float *)xp, p, j->is_max);
                else tensor__pool_plane_f64((double *)op, (const double *)xp, p, j->is_max);
            }
            if (!out_direct) tensor__unpack(tensor__data(j->out) + (size_t)(i * out_n) * eo, j->out->dtype, ob, ct, out_n);
        }
    }
    tensor__free_aligned(xb);
    tensor__free_aligned(gb);
    tensor__free_aligned(ob);
}

/* Forward (out from x) or backward (gx from x and gy) of max/avg pooling, plane by plane: the
   planes split over the threads, with the non-overlapping max pooling kernels where they apply;
   under tensor_set_reference_kernels, the per-window loops on the calling thread. */
static int tensor__pool_run(const char *fn, bool is_max, bool backward, const tensor *x, const tensor *gy, tensor *out, const int64_t *ip) {
    int xd = x->ndim;
    const tensor *pooled = backward ? gy : out; /* the [.., oH, oW] operand */
    tensor__pool_geom p;
    p.H = x->shape[xd - 2]; p.W = x->shape[xd - 1];
    p.oH = pooled->shape[xd - 2]; p.oW = pooled->shape[xd - 1];
    p.k = ip[0]; p.s = ip[1]; p.pad = ip[2];
    int64_t C = x->shape[xd - 3], planes = (xd == 4 ? x->shape[0] : 1) * C;
    if (planes == 0 || p.H * p.W == 0 || p.oH * p.oW == 0) return 0;
    tensor__pool_job j;
    memset(&j, 0, sizeof j);
    j.x = x;
    j.gy = gy;
    j.out = out;
    j.p = &p;
    j.C = C;
    j.ct = tensor__gemm_dtype(x->dtype);
    j.is_max = is_max;
    j.backward = backward;
    j.fast = !tensor__reference_kernels && is_max && p.k == p.s && p.pad == 0;
    if (tensor__reference_kernels) tensor__pool_planes(0, planes, &j);
    else tensor__parallel_for(planes, 16384 / (p.H * p.W) + 1, tensor__pool_planes, &j);
    if (j.failed) { tensor__fail(fn, "out of memory allocating pooling scratch"); return 1; }
    return 0;
}

/* out: [N, C, oH, oW] or [C, oH, oW]; ip = {kernel, stride, padding}. */
static int tensor__pool_kernel(tensor__call *c, bool is_max) {
    return tensor__pool_run(c->fn, is_max, false, c->in[0], NULL, c->out, c->ip);
}
static int tensor__cpu_max_pool2d(tensor__call *c) { return tensor__pool_kernel(c, true); }
static int tensor__cpu_avg_pool2d(tensor__call *c) { return tensor__pool_kernel(c, false); }

static tensor *tensor__pool_front(tensor_op op, tensor *x, int kernel, int stride, int padding) {
    const char *fn = tensor__ops[op].fn;
    TENSOR__CHECK_ARG(fn, x);
    if (x->ndim != 3 && x->ndim != 4) return tensor__fail(fn, "expected a 3-D [C, H, W] or 4-D [N, C, H, W] input, got shape %s", tensor__shape_of(x));
    for (int d = x->ndim - 3; d < x->ndim; d++)
        if (x->shape[d] == 0) return tensor__fail(fn, "input of shape %s has a zero-size non-batch dim", tensor__shape_of(x));
    if (!tensor__is_float(x->dtype)) return tensor__fail(fn, "expected a floating input, got %s", tensor__dtype_names[x->dtype]);
    if (kernel < 1) return tensor__fail(fn, "kernel size must be positive, got %d", kernel);
    if (stride < 0) return tensor__fail(fn, "stride must be positive (or 0 for the kernel size), got %d", stride);
    if (stride == 0) stride = kernel;
    if (padding < 0) return tensor__fail(fn, "padding must be non-negative, got %d", padding);
    if (padding > kernel / 2) return tensor__fail(fn, "padding %d must be at most half the kernel size %d", padding, kernel);
    int64_t shape[4];
    for (int d = 0; d < x->ndim; d++) shape[d] = x->shape[d];
    for (int d = x->ndim - 2; d < x->ndim; d++) {
        int64_t padded = x->shape[d] + 2 * (int64_t)padding;
        if (padded < kernel)
            return tensor__fail(fn, "output size is too small: input %s with padding %d is smaller than the kernel size %d", tensor__shape_of(x), padding, kernel);
        shape[d] = (padded - kernel) / stride + 1;
    }
    tensor__call c;
    tensor__call_init(&c, op);
    c.n_in = 1;
    c.in[0] = x;
    c.ip[0] = kernel;
    c.ip[1] = stride;
    c.ip[2] = padding;
    c.out = tensor__new(fn, x->ndim, shape, x->dtype, x->storage->device);
    return c.out ? tensor__dispatch(&c) : NULL;
}
TENSOR_API tensor *tensor_max_pool2d(tensor *x, int kernel, int stride, int padding) { return tensor__pool_front(TENSOR_OP_max_pool2d, x, kernel, stride, padding); }
TENSOR_API tensor *tensor_avg_pool2d(tensor *x, int kernel, int stride, int padding) { return tensor__pool_front(TENSOR_OP_avg_pool2d, x, kernel, stride, padding); }

/* ---- embedding ---- */

/* out: [*indices.shape, D] = weight[indices[...], :]; an index outside [0, V) is an error. */
static int tensor__cpu_embedding(tensor__call *c) {
    tensor *w = c->in[0], *ix = c->in[1], *out = c->out;
    int64_t V = w->shape[0], D = w->shape[1];
    size_t esz = tensor__dtype_sizes[w->dtype];
    int64_t count = tensor__numel_of(ix->ndim, ix->shape), idx[TENSOR_MAX_DIMS] = {0};
    const char *wb = (const char *)w->storage->data, *ib = (const char *)ix->storage->data;
    char *o = tensor__data(out);
    for (int64_t q = 0; q < count; q++, tensor__next_index(ix->ndim, ix->shape, idx)) {
        int64_t v = tensor__load_i64(ib + tensor__offset_of(ix, idx) * (int64_t)tensor__dtype_sizes[ix->dtype], ix->dtype);
        if (v < 0 || v >= V) {
            tensor__fail(c->fn, "index %lld is out of range for %lld embeddings (weight shape %s)", (long long)v, (long long)V, tensor__shape_of(w));
            return 1;
        }
        const char *src = wb + (size_t)(w->offset + v * w->strides[0]) * esz;
        char *dst = o + (size_t)(q * D) * esz;
        if (w->strides[1] == 1 || D <= 1) memcpy(dst, src, (size_t)D * esz);
        else for (int64_t d = 0; d < D; d++) memcpy(dst + (size_t)d * esz, src + (size_t)(d * w->strides[1]) * esz, esz);
    }
    return 0;
}

TENSOR_API tensor *tensor_embedding(tensor *weight, tensor *indices) {
    const char *fn = "tensor_embedding";
    TENSOR__CHECK_ARG(fn, weight);
    TENSOR__CHECK_ARG(fn, indices);
    tensor *ins[2] = {weight, indices};
    if (!tensor__same_device(fn, 2, ins)) return NULL;
    if (weight->ndim != 2) return tensor__fail(fn, "weight must be 2-D [num_embeddings, embedding_dim], got shape %s", tensor__shape_of(weight));
    if (indices->dtype != TENSOR_I64 && indices->dtype != TENSOR_I32)
        return tensor__fail(fn, "indices must be an int64 or int32 tensor, got %s", tensor__dtype_names[indices->dtype]);
    if (indices->ndim + 1 > TENSOR_MAX_DIMS) return tensor__fail(fn, "indices of shape %s have too many dims for the output", tensor__shape_of(indices));
    int64_t shape[TENSOR_MAX_DIMS];
    for (int d = 0; d < indices->ndim; d++) shape[d] = indices->shape[d];
    shape[indices->ndim] = weight->shape[1];
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_embedding);
    c.n_in = 2;
    c.in[0] = weight;
    c.in[1] = indices;
    c.out = tensor__new(fn, indices->ndim + 1, shape, weight->dtype, weight->storage->device);
    return c.out ? tensor__dispatch(&c) : NULL;
}

/* ---- dropout ---- */

/* out: same shape as x = x * mask, mask (out2, kept for the derivative) 0 or 1 / (1 - p), drawn
   from the library RNG in row-major order (one 32-bit draw per element, kept with probability
   1 - p). Not training or p == 0: a copy; p == 1: x * 0 (NaN stays NaN, as in PyTorch). */
static int tensor__cpu_dropout(tensor__call *c) {
    tensor *out = c->out;
    double p = c->p[0];
    bool training = c->ip[0] != 0;
    tensor__copy_into(out, c->in[0]);
    if (!training || p == 0) return 0;
    c->out2 = tensor__new_like(c->fn, out, out->dtype);
    if (!c->out2) return 1;
    double scale = p == 1 ? 0 : 1.0 / (1.0 - p);
    tensor__rng_fill_run(TENSOR__RNG_KEEP, out->dtype, tensor__data(c->out2), tensor__numel_of(out->ndim, out->shape), 0, scale, p, tensor__data(out));
    return 0;
}

TENSOR_API tensor *tensor_dropout(tensor *x, double p, bool training) {
    const char *fn = "tensor_dropout";
    TENSOR__CHECK_ARG(fn, x);
    if (!(p >= 0 && p <= 1)) return tensor__fail(fn, "dropout probability has to be between 0 and 1, got %g", p);
    if (training && p > 0 && !tensor__is_float(x->dtype))
        return tensor__fail(fn, "expected a floating input when training, got %s", tensor__dtype_names[x->dtype]);
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_dropout);
    c.n_in = 1;
    c.in[0] = x;
    c.p[0] = p;
    c.ip[0] = training;
    c.out = tensor__new_like(fn, x, x->dtype);
    return c.out ? tensor__dispatch(&c) : NULL;
}

/* ---- attention ---- */

/* softmax(q k^T / sqrt(E) + bias) v, written with matmul, transpose, softmax and where/add so
   autograd flows through it. A bool mask keeps where true (else -inf); a float mask is added;
   is_causal keeps the lower triangle of [L, S]. A fully masked row gives NaN, as in PyTorch. */
TENSOR_API tensor *tensor_scaled_dot_product_attention(tensor *q, tensor *k, tensor *v, tensor *mask, bool is_causal) {
    const char *fn = "tensor_scaled_dot_product_attention";
    TENSOR__CHECK_ARG(fn, q);
    TENSOR__CHECK_ARG(fn, k);
    TENSOR__CHECK_ARG(fn, v);
    tensor *ins[4] = {q, k, v, mask};
    if (!tensor__same_device(fn, 4, ins)) return NULL;
    if (q->ndim < 2 || k->ndim < 2 || v->ndim < 2)
        return tensor__fail(fn, "query, key and value need at least 2 dims [..., L, E], got shapes %s, %s and %s", tensor__shape_of(q), tensor__shape_of(k), tensor__shape_of(v));
    if (!tensor__is_float(q->dtype) || k->dtype != q->dtype || v->dtype != q->dtype)
        return tensor__fail(fn, "query, key and value must have the same floating dtype, got %s, %s and %s", tensor__dtype_names[q->dtype],
                            tensor__dtype_names[k->dtype], tensor__dtype_names[v->dtype]);
    int64_t L = q->shape[q->ndim - 2], E = q->shape[q->ndim - 1], S = k->shape[k->ndim - 2];
    if (k->shape[k->ndim - 1] != E)
        return tensor__fail(fn, "query %s and key %s must have the same embedding size (%lld != %lld)", tensor__shape_of(q), tensor__shape_of(k), (long long)E, (long long)k->shape[k->ndim - 1]);
    if (v->shape[v->ndim - 2] != S)
        return tensor__fail(fn, "key %s and value %s must have the same sequence length (%lld != %lld)", tensor__shape_of(k), tensor__shape_of(v), (long long)S, (long long)v->shape[v->ndim - 2]);
    /* the scores' shape: q's and k's batch dims broadcast, then [L, S] */
    int nd, nd2;
    int64_t bs[TENSOR_MAX_DIMS], sshape[TENSOR_MAX_DIMS], tmp[TENSOR_MAX_DIMS];
    if (!tensor__broadcast_shapes(fn, q->ndim - 2, q->shape, k->ndim - 2, k->shape, &nd, bs)) return NULL;
    if (!tensor__broadcast_shapes(fn, nd, bs, v->ndim - 2, v->shape, &nd2, tmp)) return NULL;
    for (int i = 0; i < nd; i++) sshape[i] = bs[i];
    sshape[nd] = L;
    sshape[nd + 1] = S;
    if (mask) {
        if (is_causal) return tensor__fail(fn, "a mask and is_causal cannot both be given");
        if (mask->dtype != TENSOR_BOOL && mask->dtype != q->dtype)
            return tensor__fail(fn, "mask must be bool or have the query's dtype %s, got %s", tensor__dtype_names[q->dtype], tensor__dtype_names[mask->dtype]);
        if (!tensor__broadcasts_to(mask->ndim, mask->shape, nd + 2, sshape)) {
            char b[160];
            return tensor__fail(fn, "mask of shape %s does not broadcast to the attention scores' shape %s", tensor__shape_of(mask), tensor__shape_str(b, sizeof b, nd + 2, sshape));
        }
    }
    tensor *causal = NULL;
    if (is_causal) {
        int64_t cs[2] = {L, S};
        causal = tensor__new(fn, 2, cs, TENSOR_BOOL, q->storage->device);
        if (!causal) return NULL;
        uint8_t *m = (uint8_t *)tensor__data(causal);
        for (int64_t i = 0; i < L; i++)
            for (int64_t j = 0; j < S; j++) m[i * S + j] = j <= i;
        mask = causal;
    }
    tensor *kt = tensor_transpose(k, -2, -1);
    tensor *qk = kt ? tensor_matmul(q, kt) : NULL;
    tensor *scores = qk ? tensor_mul_scalar(qk, 1.0 / sqrt((double)E)) : NULL;
    tensor_free(kt);
    tensor_free(qk);
    if (scores && mask) {
        tensor *masked;
        if (mask->dtype == TENSOR_BOOL) {
            tensor *ninf = tensor_scalar(-INFINITY, scores->dtype);
            masked = ninf ? tensor_where(mask, scores, ninf) : NULL;
            tensor_free(ninf);
        } else {
            masked = tensor_add(scores, mask);
        }
        tensor_free(scores);
        scores = masked;
    }
    tensor_free(causal);
    tensor *attn = scores ? tensor_softmax(scores, -1) : NULL;
    tensor_free(scores);
    tensor *r = attn ? tensor_matmul(attn, v) : NULL;
    tensor_free(attn);
    return r;
}

/* ---- losses (mean reduction) ---- */

/* Checks class-index targets against input [C] (targets 0-dim), [N, C] (targets [N]) or
   [N, C, d1, ...] (targets [N, d1, ...]): PyTorch's nll_loss shapes. */
static bool tensor__check_class_targets(const char *fn, const tensor *input, const tensor *targets) {
    if (input->ndim == 0) { tensor__fail(fn, "input must have at least 1 dim [C] or [N, C, ...], got a 0-dim tensor"); return false; }
    if (!tensor__is_float(input->dtype)) { tensor__fail(fn, "expected a floating input, got %s", tensor__dtype_names[input->dtype]); return false; }
    if (!tensor__is_int(targets->dtype)) {
        tensor__fail(fn, "targets must be an integer tensor of class indices, got %s", tensor__dtype_names[targets->dtype]);
        return false;
    }
    bool ok;
    if (input->ndim == 1) ok = targets->ndim == 0;
    else {
        ok = targets->ndim == input->ndim - 1 && targets->shape[0] == input->shape[0];
        for (int d = 1; ok && d < targets->ndim; d++) ok = targets->shape[d] == input->shape[d + 1];
    }
    if (!ok) {
        tensor__fail(fn, "targets of shape %s do not match input of shape %s (expected the input's shape without its class dim %d)",
                     tensor__shape_of(targets), tensor__shape_of(input), input->ndim == 1 ? 0 : 1);
        return false;
    }
    return true;
}

#define TENSOR__IGNORE_INDEX (-100) /* PyTorch's default ignore_index: such targets count for nothing */

/* out: 0-dim = -mean over targets t (except ignore_index -100) of input[n, t, ...]. All ignored
   (or no targets) gives NaN, as in PyTorch. */
static int tensor__cpu_nll_loss(tensor__call *c) {
    tensor *x = c->in[0], *t = c->in[1];
    int cdim = x->ndim == 1 ? 0 : 1;
    int64_t C = x->shape[cdim], count = tensor__numel_of(t->ndim, t->shape), used = 0;
    int64_t ti[TENSOR_MAX_DIMS] = {0}, xi[TENSOR_MAX_DIMS];
    int64_t ex = (int64_t)tensor__dtype_sizes[x->dtype], et = (int64_t)tensor__dtype_sizes[t->dtype];
    double sum = 0;
    for (int64_t q = 0; q < count; q++, tensor__next_index(t->ndim, t->shape, ti)) {
        int64_t cls = tensor__load_i64((const char *)t->storage->data + tensor__offset_of(t, ti) * et, t->dtype);
        if (cls == TENSOR__IGNORE_INDEX) continue;
        if (cls < 0 || cls >= C) { tensor__fail(c->fn, "target %lld is out of bounds for %lld classes", (long long)cls, (long long)C); return 1; }
        if (x->ndim == 1) xi[0] = cls;
        else {
            xi[0] = ti[0];
            xi[1] = cls;
            for (int d = 1; d < t->ndim; d++) xi[d + 1] = ti[d];
        }
        sum += tensor__load_f64((const char *)x->storage->data + tensor__offset_of(x, xi) * ex, x->dtype);
        used++;
    }
    tensor__store_f64(tensor__data(c->out), c->out->dtype, -sum / (double)used);
    return 0;
}

TENSOR_API tensor *tensor_nll_loss(tensor *log_probs, tensor *targets) {
    const char *fn = "tensor_nll_loss";
    TENSOR__CHECK_ARG(fn, log_probs);
    TENSOR__CHECK_ARG(fn, targets);
    tensor *ins[2] = {log_probs, targets};
    if (!tensor__same_device(fn, 2, ins) || !tensor__check_class_targets(fn, log_probs, targets)) return NULL;
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_nll_loss);
    c.n_in = 2;
    c.in[0] = log_probs;
    c.in[1] = targets;
    c.out = tensor__new(fn, 0, NULL, log_probs->dtype, log_probs->storage->device);
    return c.out ? tensor__dispatch(&c) : NULL;
}

/* cross_entropy as one kernel: per row of logits along the class dim, lse = max + log(sum(e^(x -
   max))) and the row's loss lse - x[target] (class indices; ignore_index -100 rows count for
   nothing) or sum_c p_c (lse - x_c) (class probabilities p of the logits' shape); the mean over
   the counted rows (all ignored, or no rows: NaN, as PyTorch). Computed in double; f32 rows that
   are contiguous take the vector path. The backward kernel below writes (softmax - onehot) / N
   directly.
   Call layout: in[0] logits, in[1] targets, ip[0] 1 for probability targets. */
#define TENSOR__CE_GROUP 32 /* rows per partial sum of the loss */

/* max and sum(e^(x - max)) of n elements s bytes apart, in double (the reference row). */
static double tensor__ce_lse(const char *x, int64_t s, tensor_dtype dt, int64_t n) {
    double mx = -INFINITY, sum = 0;
    for (int64_t i = 0; i < n; i++) { double v = tensor__load_f64(x + i * s, dt); if (v > mx) mx = v; }
    for (int64_t i = 0; i < n; i++) sum += exp(tensor__load_f64(x + i * s, dt) - mx);
    return mx + log(sum);
}

typedef struct {
    const tensor *x, *p;      /* logits; probability targets (or NULL) */
    const int64_t *cls;       /* class targets, one per row in row order (or NULL) */
    int cdim;
    int64_t C, rows;
    double *partial;          /* one per group of TENSOR__CE_GROUP rows */
    bool fast;
} tensor__ce_task;

static void tensor__ce_groups(int64_t begin, int64_t end, void *vt) {
    const tensor__ce_task *t = (const tensor__ce_task *)vt;
    const tensor *x = t->x, *p = t->p ? t->p : t->x;
    int64_t ex = (int64_t)tensor__dtype_sizes[x->dtype], ep = (int64_t)tensor__dtype_sizes[p->dtype];
    int64_t xs = x->strides[t->cdim] * ex, ps = p->strides[t->cdim] * ep, C = t->C;
    bool fast_rows = t->fast && x->dtype == TENSOR_F32 && (xs == 4 || C == 1);
    tensor__rows r;
    tensor__rows_init(&r, x, p, t->cdim);
    tensor__rows_seek(&r, begin * TENSOR__CE_GROUP);
    for (int64_t grp = begin; grp < end; grp++) {
        double sum = 0;
        int64_t q1 = (grp + 1) * TENSOR__CE_GROUP < t->rows ? (grp + 1) * TENSOR__CE_GROUP : t->rows;
        for (int64_t q = grp * TENSOR__CE_GROUP; q < q1; q++, tensor__rows_next(&r)) {
            int64_t k = t->cls ? t->cls[q] : 0;
            if (t->cls && k == TENSOR__IGNORE_INDEX) continue;
            const char *xr = (const char *)x->storage->data + r.off[0] * ex;
            double lse = NAN;
            if (fast_rows) {
                float m;
                double s = tensor__row_maxsumexp_f32(NULL, (const float *)xr, C, &m);
                if (s == s) lse = (double)m + log(s);
            }
            if (lse != lse) lse = tensor__ce_lse(xr, xs, x->dtype, C);
            if (t->cls) { sum += lse - tensor__load_f64(xr + k * xs, x->dtype); continue; }
            const char *pr = (const char *)p->storage->data + r.off[1] * ep;
            for (int64_t c = 0; c < C; c++) sum += tensor__load_f64(pr + c * ps, p->dtype) * (lse - tensor__load_f64(xr + c * xs, x->dtype));
        }
        t->partial[grp] = sum;
    }
}

/* Class targets as int64 in row order, checked (0 <= t < C or ignore_index); *count gets the rows
   that count. NULL after an error. */
static int64_t *tensor__ce_classes(const char *fn, const tensor *targets, int64_t C, int64_t *count) {
    int64_t n = tensor__numel_of(targets->ndim, targets->shape), idx[TENSOR_MAX_DIMS] = {0}, used = 0;
    int64_t *cls = (int64_t *)tensor__cache_alloc((size_t)n * sizeof(int64_t));
    if (!cls) { tensor__fail(fn, "out of memory allocating %zu bytes", (size_t)n * sizeof(int64_t)); return NULL; }
    int64_t et = (int64_t)tensor__dtype_sizes[targets->dtype];
    for (int64_t q = 0; q < n; q++, tensor__next_index(targets->ndim, targets->shape, idx)) {
        int64_t k = tensor__load_i64((const char *)targets->storage->data + tensor__offset_of(targets, idx) * et, targets->dtype);
        if (k != TENSOR__IGNORE_INDEX && (k < 0 || k >= C)) {
            tensor__cache_free(cls);
            tensor__fail(fn, "target %lld is out of bounds for %lld classes", (long long)k, (long long)C);
            return NULL;
        }
        used += k != TENSOR__IGNORE_INDEX;
        cls[q] = k;
    }
    *count = used;
    return cls;
}

/* out: [] = the mean cross-entropy */
static int tensor__cpu_cross_entropy(tensor__call *c) {
    tensor *x = c->in[0], *t = c->in[1];
    bool prob = c->ip[0] != 0;
    tensor__ce_task k;
    k.x = x;
    k.cdim = x->ndim == 1 ? 0 : 1;
    k.C = x->shape[k.cdim];
    k.rows = 1;
    for (int d = 0; d < x->ndim; d++) if (d != k.cdim) k.rows *= x->shape[d];
    k.p = prob ? t : NULL;
    k.cls = NULL;
    k.fast = !tensor__reference_kernels;
    int64_t count = k.C ? k.rows : 0; /* probabilities over no classes: 0 / 0 */
    int64_t *cls = NULL;
    if (!prob && !(cls = tensor__ce_classes(c->fn, t, k.C, &count))) return 1;
    k.cls = cls;
    int64_t groups = (k.rows + TENSOR__CE_GROUP - 1) / TENSOR__CE_GROUP;
    k.partial = (double *)tensor__cache_alloc((size_t)groups * sizeof(double));
    if (!k.partial) { tensor__cache_free(cls); tensor__fail(c->fn, "out of memory allocating %zu bytes", (size_t)groups * sizeof(double)); return 1; }
    if (k.C > 0) {
        if (k.fast) tensor__parallel_for(groups, tensor__grain(k.C) / TENSOR__CE_GROUP + 1, tensor__ce_groups, &k); /* C * 32 may overflow */
        else tensor__ce_groups(0, groups, &k);
    } else for (int64_t g = 0; g < groups; g++) k.partial[g] = 0; /* no classes: only ignored rows got past the check */
    double sum = 0;
    for (int64_t g = 0; g < groups; g++) sum += k.partial[g];
    tensor__store_f64(tensor__data(c->out), c->out->dtype, sum / (double)count);
    tensor__cache_free(cls);
    tensor__cache_free(k.partial);
    return 0;
}

/* nll_loss(log_softmax(logits, class dim), targets); with floating targets of the logits' shape
   (class probabilities), -sum(targets * log_softmax) / (numel / C), as PyTorch. */
TENSOR_API tensor *tensor_cross_entropy(tensor *logits, tensor *targets) {
    const char *fn = "tensor_cross_entropy";
    TENSOR__CHECK_ARG(fn, logits);
    TENSOR__CHECK_ARG(fn, targets);
    tensor *ins[2] = {logits, targets};
    if (!tensor__same_device(fn, 2, ins)) return NULL;
    bool prob = tensor__is_float(targets->dtype);
    if (prob) {
        if (logits->ndim == 0) return tensor__fail(fn, "input must have at least 1 dim [C] or [N, C, ...], got a 0-dim tensor");
        if (!tensor__is_float(logits->dtype)) return tensor__fail(fn, "expected a floating input, got %s", tensor__dtype_names[logits->dtype]);
        if (!tensor__same_shape(logits, targets))
            return tensor__fail(fn, "probability targets of shape %s must have the input's shape %s", tensor__shape_of(targets), tensor__shape_of(logits));
    } else if (!tensor__check_class_targets(fn, logits, targets)) return NULL;
    tensor__call c;
    tensor__call_init(&c, TENSOR_OP_cross_entropy);
    c.n_in = 2;
    c.in[0] = logits;
    c.in[1] = targets;
    c.ip[0] = prob;
    c.out = tensor__new(fn, 0, NULL, prob ? (tensor_dtype)tensor__promotion[logits->dtype][targets->dtype] : logits->dtype, logits->storage->device);
    return c.out ? tensor__dispatch(&c) : NULL;
}

/* The fused backward of cross_entropy (the derivative uses it when the backward pass is not
   recorded): with scale = g / count, gx = (softmax(x) - onehot(target)) scale per counted row
   (ignored rows: 0), or for probabilities p, gx = (softmax(x) sum(p) - p) scale and
   gp = (lse - x) scale. */
typedef struct {
    const tensor *x, *p;
    tensor *gx, *gp;
    const int64_t *cls;
    int cdim;
    int64_t C;
    double scale;
    bool fast;
} tensor__ce_bwd_task;

static void tensor__ce_bwd_rows(int64_t begin, int64_t end, void *vt) {
    const tensor__ce_bwd_task *t = (const tensor__ce_bwd_task *)vt;
    const tensor *x = t->x;
    tensor *gx = t->gx;
    int64_t ex = (int64_t)tensor__dtype_sizes[x->dtype], eg = (int64_t)tensor__dtype_sizes[gx->dtype], C = t->C;
    int64_t xs = x->strides[t->cdim] * ex, gs = gx->strides[t->cdim] * eg;
    bool fast_rows = t->fast && t->cls && x->dtype == TENSOR_F32 && gx->dtype == TENSOR_F32 && ((xs == 4 && gs == 4) || C == 1);
    tensor__rows r, rp; /* rp: the rows of p and gp */
    tensor__rows_init(&r, x, gx, t->cdim);
    tensor__rows_seek(&r, begin);
    tensor__rows_init(&rp, t->p ? t->p : x, t->gp ? t->gp : t->p ? t->p : x, t->cdim);
    tensor__rows_seek(&rp, begin);
    for (int64_t q = begin; q < end; q++, tensor__rows_next(&r), tensor__rows_next(&rp)) {
        const char *xr = (const char *)x->storage->data + r.off[0] * ex;
        char *gr = (char *)gx->storage->data + r.off[1] * eg;
        int64_t k = t->cls ? t->cls[q] : -1;
        if (t->cls && k == TENSOR__IGNORE_INDEX) {
            for (int64_t c = 0; c < C; c++) tensor__store_f64(gr + c * gs, gx->dtype, 0);
            continue;
        }
        if (fast_rows) {
            float m, *g = (float *)gr;
            double s = tensor__row_maxsumexp_f32(g, (const float *)xr, C, &m); /* g = e^(x - max) */
            if (s == s) {
                tensor__row_affine_f32(g, g, C, (float)(t->scale / s), 0.0f);
                g[k] -= (float)t->scale;
                continue;
            }
        }
        double lse = tensor__ce_lse(xr, xs, x->dtype, C);
        if (t->cls) {
            for (int64_t c = 0; c < C; c++)
                tensor__store_f64(gr + c * gs, gx->dtype, (exp(tensor__load_f64(xr + c * xs, x->dtype) - lse) - (c == k)) * t->scale);
            continue;
        }
        const tensor *p = t->p;
        int64_t ep = (int64_t)tensor__dtype_sizes[p->dtype], ps = p->strides[t->cdim] * ep;
        const char *pr = (const char *)p->storage->data + rp.off[0] * ep;
        double psum = 0;
        for (int64_t c = 0; c < C; c++) psum += tensor__load_f64(pr + c * ps, p->dtype);
        for (int64_t c = 0; c < C; c++) {
            double xv = tensor__load_f64(xr + c * xs, x->dtype), pv = tensor__load_f64(pr + c * ps, p->dtype);
            tensor__store_f64(gr + c * gs, gx->dtype, (exp(xv - lse) * psum - pv) * t->scale);
        }
        if (t->gp) {
            int64_t eq = (int64_t)tensor__dtype_sizes[t->gp->dtype], qs = t->gp->strides[t->cdim] * eq;
            char *qr = (char *)t->gp->storage->data + rp.off[1] * eq;
            for (int64_t c = 0; c < C; c++) tensor__store_f64(qr + c * qs, t->gp->dtype, (lse - tensor__load_f64(xr + c * xs, x->dtype)) * t->scale);
        }
    }
}

/* Sets *gx (logits' shape and dtype) and, for probability targets, *gp (when gp is not NULL) for
   the loss gradient g (0-dim). 0, or -1 after an error. */
static int tensor__cross_entropy_backward(const char *fn, tensor *x, tensor *targets, bool prob, tensor *g, tensor **gx, tensor **gp) {
    tensor__ce_bwd_task k;
    k.x = x;
    k.cdim = x->ndim == 1 ? 0 : 1;
    k.C = x->shape[k.cdim];
    int64_t rows = 1, count;
    for (int d = 0; d < x->ndim; d++) if (d != k.cdim) rows *= x->shape[d];
    count = k.C ? rows : 0;
    int64_t *cls = NULL;
    if (!prob && !(cls = tensor__ce_classes(fn, targets, k.C, &count))) return -1;
    k.cls = cls;
    k.p = prob ? targets : NULL;
    k.gx = tensor__new_like(fn, x, x->dtype);
    k.gp = prob && gp ? tensor__new_like(fn, targets, targets->dtype) : NULL;
    k.scale = tensor__load_f64(tensor__data(g), g->dtype) / (double)(count > 0 ? count : 1);
    k.fast = !tensor__reference_kernels;
    if (!k.gx || (prob && gp && !k.gp)) { tensor_free(k.gx); tensor_free(k.gp); tensor__cache_free(cls); return -1; }
    if (k.C > 0 && rows > 0) tensor__parallel_for(rows, tensor__grain(k.C), tensor__ce_bwd_rows, &k);
    tensor__cache_free(cls);
    *gx = k.gx;
    if (gp) *gp = k.gp;
    return 0;
}

/* mean((input - target)^2). Shapes that differ are broadcast (PyTorch warns and does the same). */
TENSOR_API tensor *tensor_mse_loss(tensor *input, tensor *target) {
    const char *fn = "tensor_mse_loss";
    TENSOR__CHECK_ARG(fn, input);
    TENSOR__CHECK_ARG(fn, target);
    tensor *ins[2] = {input, target};
    if (!tensor__same_device(fn, 2, ins)) return NULL;
    if (!tensor__is_float(tensor__result_type(2, ins)))
        return tensor__fail(fn, "expected floating inputs, got %s and %s", tensor__dtype_names[input->dtype], tensor__dtype_names[target->dtype]);
    int nd;
    int64_t shape[TENSOR_MAX_DIMS];
    if (!tensor__broadcast_shapes(fn, input->ndim, input->shape, target->ndim, target->shape, &nd, shape)) return NULL;
    tensor *d = tensor_sub(input, target);
    tensor *sq = d ? tensor_square(d) : NULL;
    tensor *r = sq ? tensor_mean_all(sq) : NULL;
    tensor_free(d);
    tensor_free(sq);
    return r;
}

/* mean((1 - y) x - logsigmoid(x)): the same value as max(x, 0) - x y + log(1 + exp(-|x|)), stable
   for large |x|, and written without relu/abs so its gradient is sigmoid(x) - y everywhere, x = 0
   included (PyTorch's; the kinks of relu and abs would give -y there). */
TENSOR_API tensor *tensor_binary_cross_entropy_with_logits(tensor *logits, tensor *targets) {
    const char *fn = "tensor_binary_cross_entropy_with_logits";
    TENSOR__CHECK_ARG(fn, logits);
    TENSOR__CHECK_ARG(fn, targets);
    tensor *ins[2] = {logits, targets};
    if (!tensor__same_device(fn, 2, ins)) return NULL;
    if (!tensor__same_shape(logits, targets))
        return tensor__fail(fn, "target shape %s must be the same as input shape %s", tensor__shape_of(targets), tensor__shape_of(logits));
    if (!tensor__is_float(logits->dtype) || !tensor__is_float(targets->dtype))
        return tensor__fail(fn, "expected floating input and target, got %s and %s", tensor__dtype_names[logits->dtype], tensor__dtype_names[targets->dtype]);
    tensor *xy = tensor_mul(logits, targets);
    tensor *t1 = xy ? tensor_sub(logits, xy) : NULL;
    tensor *ls = tensor_logsigmoid(logits);
    tensor *t2 = t1 && ls ? tensor_sub(t1, ls) : NULL;
    tensor *r = t2 ? tensor_mean_all(t2) : NULL;
    tensor_free(xy);
    tensor_free(t1);
    tensor_free(ls);
    tensor_free(t2);
    return r;
}

/* ---- backward kernels (used by the derivatives in >>autograd) ---- */

/* relu's gradient in one pass, PyTorch's threshold_backward: gx = x <= 0 ? 0 : g (so a NaN x
   passes g, and an infinite or NaN g at x <= 0 gives 0, not inf * 0). The op-composed formula of
   >>autograd (create_graph, and the reference kernels) computes the same values. */
#if TENSOR__NN_AVX2
static TENSOR__AVX2_FN int64_t tensor__relu_bwd_avx2_f32(float *o, const float *x, const float *g, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) /* NLE_UQ: x > 0 or NaN */
        _mm256_storeu_ps(o + i, _mm256_and_ps(_mm256_cmp_ps(_mm256_loadu_ps(x + i), _mm256_setzero_ps(), _CMP_NLE_UQ), _mm256_loadu_ps(g + i)));
    _mm256_zeroupper();
    return i;
}
static TENSOR__AVX2_FN int64_t tensor__relu_bwd_avx2_f64(double *o, const double *x, const double *g, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4)
        _mm256_storeu_pd(o + i, _mm256_and_pd(_mm256_cmp_pd(_mm256_loadu_pd(x + i), _mm256_setzero_pd(), _CMP_NLE_UQ), _mm256_loadu_pd(g + i)));
    _mm256_zeroupper();
    return i;
}
#endif
typedef struct { const char *x, *g; char *gx; bool f32; } tensor__relu_bwd_task;
static void tensor__relu_bwd_range(int64_t begin, int64_t end, void *vt) {
    const tensor__relu_bwd_task *t = (const tensor__relu_bwd_task *)vt;
    int64_t n = end - begin, i = 0;
    if (t->f32) {
        float *o = (float *)t->gx + begin;
        const float *x = (const float *)t->x + begin, *g = (const float *)t->g + begin;
#if TENSOR__NN_AVX2
        if (tensor__nn_isa() >= 2) { TENSOR__PATH_TAKEN(relu_backward_fused); i = tensor__relu_bwd_avx2_f32(o, x, g, n); }
#endif
        for (; i < n; i++) o[i] = x[i] <= 0 ? 0.0f : g[i];
    } else {
        double *o = (double *)t->gx + begin;
        const double *x = (const double *)t->x + begin, *g = (const double *)t->g + begin;
#if TENSOR__NN_AVX2
        if (tensor__nn_isa() >= 2) i = tensor__relu_bwd_avx2_f64(o, x, g, n);
#endif
        for (; i < n; i++) o[i] = x[i] <= 0 ? 0.0 : g[i];
    }
}

/* 1 with *gx set, 0 when this path does not take the case (the reference kernels; not f32/f64;
   g of another dtype or shape; an operand not contiguous), -1 on error. g is the engine's, dropped
   after the derivative: when its storage has no other handle (a gradient made by the derivative
   below, not the caller's grad_out), gx is written over it, which saves a buffer's worth of memory
   traffic. */
static int tensor__relu_backward(const char *fn, tensor *x, tensor *g, tensor **gx) {
    if (tensor__reference_kernels || (x->dtype != TENSOR_F32 && x->dtype != TENSOR_F64) || g->dtype != x->dtype || !tensor__same_shape(x, g) ||
        !tensor__contiguous(x) || !tensor__contiguous(g))
        return 0;
    tensor *r = tensor__refs_sole(&g->storage->refs, tensor__self) ? tensor__view_of(fn, g, g->ndim, g->shape, g->strides, g->offset) : tensor__new_like(fn, x, x->dtype);
    if (!r) return -1;
    tensor__relu_bwd_task t;
    t.x = tensor__data(x);
    t.g = tensor__data(g);
    t.gx = tensor__data(r);
    t.f32 = x->dtype == TENSOR_F32;
    tensor__parallel_for(tensor__numel_of(x->ndim, x->shape), TENSOR__GRAIN_ELEMENTWISE, tensor__relu_bwd_range, &t);
    *gx = r;
    return 1;
}

/* The element strides of a convolution output's gradient as [n, o, h, w] (0 on absent dims). */
static void tensor__conv_out_strides(const tensor *gr, int sd, bool batched, int64_t *gs) {
    int nd = gr->ndim;
    gs[0] = batched ? gr->strides[0] : 0;
    gs[1] = gr->strides[nd - sd - 1];
    gs[2] = sd == 2 ? gr->strides[nd - 2] : 0;
    gs[3] = gr->strides[nd - 1];
}

/* The reference: the adjoint of the convolution sum, written out in double straight from the
   strided x, w and gradient gr. gx: [N, C, H, W], gw: [O, Cg, kH, kW], gb: [O] (row-major doubles,
   zeroed by the caller; NULL where not wanted) accumulate. */
static void tensor__conv_backward_reference(const tensor *x, const tensor *w, const tensor *gr, const int64_t *gs, const tensor__conv_geom *g,
                                            double *gx, double *gw, double *gb) {
    int64_t ex = (int64_t)tensor__dtype_sizes[x->dtype], ew = (int64_t)tensor__dtype_sizes[w->dtype], eg = (int64_t)tensor__dtype_sizes[gr->dtype];
    const char *xb = (const char *)x->storage->data, *wb = (const char *)w->storage->data, *gbase = (const char *)gr->storage->data;
    int64_t Cg = g->C / g->groups, Og = g->O / g->groups;
    for (int64_t n = 0; n < g->N; n++)
        for (int64_t oc = 0; oc < g->O; oc++)
            for (int64_t oh = 0; oh < g->oH; oh++)
                for (int64_t ow = 0; ow < g->oW; ow++) {
                    double gv = tensor__load_f64(gbase + (gr->offset + n * gs[0] + oc * gs[1] + oh * gs[2] + ow * gs[3]) * eg, gr->dtype);
                    if (gb) gb[oc] += gv;
                    int64_t grp = oc / Og;
                    for (int64_t ic = 0; ic < Cg; ic++)
                        for (int64_t ki = 0; ki < g->kH; ki++)
                            for (int64_t kj = 0; kj < g->kW; kj++) {
                                int64_t ih = oh * g->sh - g->ph + ki * g->dh, iw = ow * g->sw - g->pw + kj * g->dw;
                                if (ih < 0 || ih >= g->H || iw < 0 || iw >= g->W) continue;
                                int64_t c = grp * Cg + ic;
                                if (gx) {
                                    int64_t wo = w->offset + oc * g->ws[0] + ic * g->ws[1] + ki * g->ws[2] + kj * g->ws[3];
                                    gx[((n * g->C + c) * g->H + ih) * g->W + iw] += gv * tensor__load_f64(wb + wo * ew, w->dtype);
                                }
                                if (gw) {
                                    int64_t xo = x->offset + n * g->xs[0] + c * g->xs[1] + ih * g->xs[2] + iw * g->xs[3];
                                    gw[((oc * Cg + ic) * g->kH + ki) * g->kW + kj] += gv * tensor__load_f64(xb + xo * ex, x->dtype);
                                }
                            }
                }
}

/* sum of r[0..n) in double, four chains so the adds overlap (f32 rows: tensor__row_sum_f32). */
static double tensor__sum_row_f64(const double *r, int64_t n) {
    double a0 = 0, a1 = 0, a2 = 0, a3 = 0;
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) { a0 += r[i]; a1 += r[i + 1]; a2 += r[i + 2]; a3 += r[i + 3]; }
    for (; i < n; i++) a0 += r[i];
    return (a0 + a1) + (a2 + a3);
}

/* sum of the bf16 r[0..n), through f32 in chunks that stay in L1. */
static double tensor__sum_row_bf16(const uint16_t *r, int64_t n) {
    float t[256];
    double acc = 0;
    for (int64_t i = 0; i < n; i += 256) {
        int64_t m = n - i < 256 ? n - i : 256;
        tensor__half_to_f32(t, r + i, m, true);
        acc += tensor__row_sum_f32(t, m);
    }
    return acc;
}

/* d[i] += t[i], i < n (compute dtype ct). */
static void tensor__add_to(void *d, const void *t, int64_t n, tensor_dtype ct) {
    if (ct == TENSOR_F32) tensor__add_row_f32((float *)d, (const float *)t, n);
    else tensor__add_row_f64((double *)d, (const double *)t, n);
}

/* Per block of images and group (gc_g: the images' gc[n, grp * Og.., :] side by side, [Og, bn P];
   a block of one image reads gc in place, a larger one copies the rows into the block buffer):
     gx: cols[K, bn P] = w_g^T[K, Og] @ gc_g (w_g read transposed through strides), then col2im
         sums each image's columns into its gx [Cg, H, W] (a 1x1 kernel with stride 1 and no padding
         writes gx itself);
     gw: cols = the images' im2col [K, bn P]; sum_g[Og, K] += gc_g @ cols^T (cols read transposed),
         into this chunk's own sum (slot 0's is gw itself);
     gb: the rows of gc summed (in double) into gbn[n, grp * Og..], while they are in cache. */
static void tensor__conv_bwd_blocks(int64_t begin, int64_t end, void *ctx) {
    tensor__conv_job *j = (tensor__conv_job *)ctx;
    const tensor__conv_geom *g = j->g;
    size_t cs = tensor__dtype_sizes[j->ct], es = tensor__dtype_sizes[j->sd];
    int64_t Cg = g->C / g->groups, Og = g->O / g->groups, K = Cg * g->kH * g->kW, P = g->oH * g->oW, X = Cg * g->H * g->W;
    int slot = tensor__conv_claim(j);
    char *gw = j->gw ? j->gw + (size_t)(slot * g->O * K) * cs : NULL;
    char *cols = j->scratch + (size_t)slot * tensor__conv_slot_bytes(g, j->ct, j->direct, j->bn);
    char *blk = j->direct ? cols : cols + (size_t)(K * j->bn * P) * cs;
    if (j->sd == TENSOR_BF16) TENSOR__PATH_TAKEN(conv_bf16);
    for (int64_t bi = begin; bi < end; bi++) {
        int64_t n0 = bi * j->bn, bn = g->N - n0 < j->bn ? g->N - n0 : j->bn, ld = bn * P;
        /* the scatter col2im adds into gx: zeroed first (the vector gathers write every element) */
        if (j->out && !j->direct && !j->vec) memset(j->out + (size_t)(n0 * g->C * g->H * g->W) * cs, 0, (size_t)(bn * g->C * g->H * g->W) * cs);
        for (int64_t grp = 0; grp < g->groups; grp++) {
            const char *gcg = j->gc + (size_t)((n0 * g->O + grp * Og) * P) * es;
            for (int64_t i = 0; i < bn; i++)
                for (int64_t q = 0; q < Og; q++) {
                    const char *r = j->gc + (size_t)(((n0 + i) * g->O + grp * Og + q) * P) * es;
                    if (bn > 1) r = (const char *)memcpy(blk + (size_t)(q * ld + i * P) * es, r, (size_t)P * es); /* then summed in L1 */
                    if (j->gbn)
                        j->gbn[(n0 + i) * g->O + grp * Og + q] = j->sd == TENSOR_BF16 ? tensor__sum_row_bf16((const uint16_t *)(const void *)r, P)
                                                                 : j->ct == TENSOR_F32  ? tensor__row_sum_f32((const float *)r, P)
                                                                                        : tensor__sum_row_f64((const double *)r, P);
                }
            if (bn > 1) gcg = blk;
            if (j->out) {
                char *xg = j->out + (size_t)((n0 * g->groups + grp) * X) * cs;
                TENSOR__GEMM_IN_TASK(j->oom, tensor__gemm_strided(j->ct, j->sd, K, ld, Og, j->w + (size_t)(grp * Og * K) * es, 1, K, gcg, ld, 1, j->direct ? (void *)xg : cols, ld, 1, false));
                for (int64_t i = 0; i < bn && !j->direct; i++) {
                    char *xi = j->out + (size_t)(((n0 + i) * g->groups + grp) * X) * cs;
#if TENSOR__NN_AVX2
                    if (j->vec == 2) { tensor__col2im_avx2((float *)xi, (const float *)cols + i * P, ld, g, Cg); continue; }
#endif
#if TENSOR__NN_AVX512
                    if (j->vec == 3) { tensor__col2im_avx512((float *)xi, (const float *)cols + i * P, ld, g, Cg); continue; }
#endif
                    if (j->ct == TENSOR_F32) tensor__col2im_f32((float *)xi, (const float *)cols + i * P, ld, g, Cg);
                    else tensor__col2im_f64((double *)xi, (const double *)cols + i * P, ld, g, Cg);
                }
            }
            if (gw) {
                const char *B = NULL;
                for (int64_t i = 0; i < bn; i++) B = tensor__conv_im2col(j, cols, ld, i * P, j->x + (size_t)(((n0 + i) * g->groups + grp) * X) * es);
                TENSOR__GEMM_IN_TASK(j->oom, tensor__gemm_strided(j->ct, j->sd, Og, K, ld, gcg, ld, 1, B, 1, ld, gw + (size_t)(grp * Og * K) * cs, K, 1, true));
            }
        }
    }
}

/* The fast path, in the compute dtype ct (f32, or f64 for f64) with the forward's machinery: gc is
   the gradient [N, O, P] (P = oH * oW), contiguous of the operand dtype sd (ct, or bf16 for the
   bf16 kernel, which then reads x and w as bf16 too; its products still land in ct); gx, gw and
   the per-image sums of gb come from tensor__conv_bwd_blocks, spread over the blocks like the
   forward; gb adds the images' sums in order, in double. gx, gw, gb are contiguous ct buffers of x's, w's and [O]'s size, or NULL.
   Returns 0, or 1 after recording an error. */
static int tensor__conv_backward_fast(const char *fn, const tensor *x, const tensor *w, const char *gc, const tensor__conv_geom *g, tensor_dtype ct,
                                      tensor_dtype sd, void *gx, void *gw, void *gb) {
    size_t cs = tensor__dtype_sizes[ct];
    int64_t K = g->C / g->groups * g->kH * g->kW, wn = g->O * K;
    tensor *xc = NULL, *wc = NULL;
    int rc = 0;
    if (gw && !(x->dtype == sd && tensor__contiguous(x))) rc |= !(xc = tensor__contiguous_copy(fn, x, sd));
    if (gx && !(w->dtype == sd && tensor__contiguous(w))) rc |= !(wc = tensor__contiguous_copy(fn, w, sd));
#if TENSOR__NN_AVX2
    if (sd == ct && tensor__wino_ok(g, ct)) {
        rc = rc || tensor__wino_backward(fn, g, gw ? (const float *)tensor__data(xc ? xc : x) : NULL, gx ? (const float *)tensor__data(wc ? wc : w) : NULL,
                                         (const float *)gc, (float *)gx, (float *)gw, (float *)gb);
        tensor_free(xc);
        tensor_free(wc);
        return rc;
    }
#endif
    tensor__conv_job j;
    if (!tensor__conv_job_init(fn, &j, g, ct, sd)) rc = 1;
    /* the slots' gw sums side by side (gw itself when there is one slot); the images' gb sums */
    int64_t slots = tensor__conv_slots(&j);
    char *sums = !gw ? NULL : slots > 1 ? (char *)tensor__cache_alloc((size_t)(slots * wn) * cs) : (char *)gw;
    j.gbn = gb ? (double *)tensor__cache_alloc((size_t)(g->N * g->O) * sizeof(double) + 1) : NULL;
    if (!rc && ((gw && !sums) || (gb && !j.gbn))) rc = (tensor__fail(fn, "out of memory allocating convolution scratch"), 1);
    if (!rc) {
        j.x = gw ? (const char *)tensor__data(xc ? xc : x) : NULL;
        j.w = gx ? (const char *)tensor__data(wc ? wc : w) : NULL;
        j.gc = gc;
        j.out = (char *)gx;
        j.gw = sums;
        if (sums) memset(sums, 0, (size_t)((sums == (char *)gw ? 1 : slots) * wn) * cs);
        if (!tensor__conv_blocks(tensor__conv_bwd_blocks, &j)) rc = (tensor__fail(fn, "out of memory allocating convolution scratch"), 1);
        if (!rc && sums && sums != (char *)gw) {
            memcpy(gw, sums, (size_t)wn * cs);
            for (int s = 1; s < j.slot && s < slots; s++) tensor__add_to(gw, sums + (size_t)(s * wn) * cs, wn, ct);
        }
        for (int64_t o = 0; !rc && gb && o < g->O; o++) {
            double acc = 0;
            for (int64_t n = 0; n < g->N; n++) acc += j.gbn[n * g->O + o];
            if (ct == TENSOR_F32) ((float *)gb)[o] = (float)acc;
            else ((double *)gb)[o] = acc;
        }
    }
    if (sums != (char *)gw) tensor__cache_free(sums);
    tensor__cache_free(j.scratch);
    tensor__cache_free(j.gbn);
    tensor_free(xc);
    tensor_free(wc);
    return rc;
}

/* Gradients of a convolution with the call layout of conv2d/conv1d (ip = {stride, padding,
   dilation, groups}, sd spatial dims): gx of x's shape, gw of w's shape, gb [O], each computed only
   where its pointer is non-NULL, each a new contiguous tensor of x's dtype (f16/bf16 compute in
   f32). g: the output's gradient, any layout and floating dtype. Returns 0, or 1 after recording an
   error. */
static int tensor__conv_backward(const char *fn, int sd, tensor *x, tensor *w, tensor *g, const int64_t *ip, tensor **gx, tensor **gw, tensor **gb) {
    tensor__conv_geom geo;
    bool batched = x->ndim == sd + 2;
    int od = batched ? sd + 2 : sd + 1;
    if (g->ndim != od || (batched && g->shape[0] != x->shape[0]) || g->shape[od - sd - 1] != w->shape[0]) {
        tensor__fail(fn, "the gradient of shape %s does not fit a convolution of input %s and weight %s", tensor__shape_of(g), tensor__shape_of(x), tensor__shape_of(w));
        return 1;
    }
    tensor__conv_geometry_of(x, w, g, sd, ip, &geo);
    int64_t O = geo.O;
    tensor *rx = gx ? tensor__new_like(fn, x, x->dtype) : NULL;
    tensor *rw = gw ? tensor__new_like(fn, w, x->dtype) : NULL;
    tensor *rb = gb ? tensor__new(fn, 1, &O, x->dtype, x->storage->device) : NULL;
    int rc = (gx && !rx) || (gw && !rw) || (gb && !rb);
    tensor *outs[3] = {rx, rw, rb};
    int64_t counts[3] = {rx ? tensor__numel_of(rx->ndim, rx->shape) : 0, rw ? tensor__numel_of(rw->ndim, rw->shape) : 0, rb ? O : 0};
    /* the compute buffers: doubles for the reference; ct for the fast path, the results themselves
       where they are of ct */
    bool ref = tensor__reference_kernels;
    tensor_dtype ct = ref ? TENSOR_F64 : tensor__gemm_dtype(x->dtype);
    void *buf[3] = {NULL, NULL, NULL};
    bool own[3] = {false, false, false};
    for (int i = 0; i < 3 && !rc; i++) {
        if (!outs[i]) continue;
        own[i] = ref || outs[i]->dtype != ct;
        buf[i] = own[i] ? tensor__scratch(fn, (size_t)counts[i] * tensor__dtype_sizes[ct]) : (void *)tensor__data(outs[i]);
        rc |= !buf[i];
    }
    if (!rc && tensor__numel_of(g->ndim, g->shape) == 0) { /* every term has a factor of g: all zero, whatever the planes' size */
        for (int i = 0; i < 3; i++) if (buf[i]) memset(buf[i], 0, (size_t)counts[i] * tensor__dtype_sizes[ct]);
    } else if (!rc) {
        if (ref) {
            for (int i = 0; i < 3; i++) if (buf[i]) memset(buf[i], 0, (size_t)counts[i] * sizeof(double));
            int64_t gs[4];
            tensor__conv_out_strides(g, sd, batched, gs);
            tensor__conv_backward_reference(x, w, g, gs, &geo, (double *)buf[0], (double *)buf[1], (double *)buf[2]);
        } else {
            /* bf16 operands only when all three are bf16 (a wider gradient is not rounded to bf16) */
            tensor_dtype opd = x->dtype == w->dtype && g->dtype == x->dtype ? tensor__conv_operand_dtype(x->dtype, &geo) : ct;
            bool g_ok = g->dtype == opd && tensor__contiguous(g);
            tensor *gcopy = g_ok ? NULL : tensor__contiguous_copy(fn, g, opd);
            rc = (!g_ok && !gcopy) || tensor__conv_backward_fast(fn, x, w, tensor__data(gcopy ? gcopy : g), &geo, ct, opd, buf[0], buf[1], buf[2]);
            tensor_free(gcopy);
        }
    }
    for (int i = 0; i < 3; i++) {
        if (!rc && own[i]) tensor__unpack(tensor__data(outs[i]), outs[i]->dtype, buf[i], ct, counts[i]);
        if (own[i]) tensor__free_aligned(buf[i]);
    }
    if (rc) {
        tensor_free(rx);
        tensor_free(rw);
        tensor_free(rb);
        return 1;
    }
    if (gx) *gx = rx;
    if (gw) *gw = rw;
    if (gb) *gb = rb;
    return 0;
}

/* Gradient of max or average pooling (ip = {kernel, stride, padding}, stride already resolved) for
   x: a new contiguous tensor of x's shape and dtype (f16/bf16 compute in f32). g: the output's
   gradient, any layout and floating dtype. Max sends each window's gradient to the position the
   forward picked (tensor__pool_argmax); avg spreads g / k^2 over the window's in-bounds elements. */
static tensor *tensor__pool_backward(const char *fn, bool is_max, tensor *x, tensor *g, const int64_t *ip) {
    int xd = x->ndim;
    if (g->ndim != xd || (xd == 4 && g->shape[0] != x->shape[0]) || g->shape[xd - 3] != x->shape[xd - 3])
        return tensor__fail(fn, "the gradient of shape %s does not fit a pooling of input %s", tensor__shape_of(g), tensor__shape_of(x));
    tensor *r = tensor__new_like(fn, x, x->dtype);
    if (!r) return NULL;
    if (tensor__numel_of(g->ndim, g->shape) == 0) { tensor__fill(r, 0); return r; }
    if (tensor__pool_run(fn, is_max, true, x, g, r, ip)) { tensor_free(r); return NULL; }
    return r;
}
/* ==== end generator/parts/nn.h ==== */
/* ==== begin generator/parts/print.h ==== */
// >>print ------------------------------------------------------------------------------------------
/* tensor_print / tensor_snprint: the text of PyTorch's repr(tensor) with its default print options
   (torch/_tensor_str.py: precision 4, threshold 1000, edgeitems 3, linewidth 80), so output can be
   compared with PyTorch's line by line. The rules, as PyTorch applies them:

   Layout
   - "tensor(" + body + suffixes + ")". A 0-dim tensor's body is its one value: tensor(3.).
   - A 1-D body is "[a, b, c]"; a k-D body is "[" + the (k-1)-D bodies of its rows joined by ","
     followed by k-1 newlines and the indent + 1 spaces + "]". The indent starts at 7 (the length of
     "tensor(") and grows by one per nesting level, so rows line up under the first "[".
   - A 1-D row wraps after floor((80 - indent) / (width + 2)) elements (at least 1); continuation
     lines start with indent + 1 spaces.
   - Summarization: when numel > 1000, every dim longer than 6 shows its first 3 and last 3 entries
     with "..." between them (an element " ..." inside a row, a row "..." between rows; the " ..."
     element counts as an element when wrapping).
   - Empty tensors: body "[]"; the size is added as a suffix unless the tensor is 1-D
     (tensor([], size=(0, 3))), and the dtype whenever it is not float32 (tensor([], dtype=torch.int64)).
   Element text (every element right-aligned to one width per tensor)
   - bool: True / False. Integers: decimal.
   - Floating (f16/bf16 are widened to f32 first): statistics over the finite non-zero values
     (in summarized mode only over the entries shown):
     int mode when every such value is integral: "%.0f" + "." (3. and -0.);
     sci mode when max|x| / min|x| > 1000 or max|x| > 1e8, or, outside int mode, min|x| < 1e-4:
     "%.4e" (1.0000e-05); otherwise "%.4f" (1.5000).
     The width is the longest of those texts over the finite non-zero values (int mode counts the
     "."), at least 1; zeros and non-finite values do not widen it, so tensor([inf, -inf, nan])
     has no padding. NaN prints as nan whatever its sign bit, infinities as inf and -inf.
   Suffixes, in PyTorch's order, joined by ", " (or ",\n" + 7 spaces when the last line would pass
   80 columns, counting as PyTorch does): device='cuda:0' for a CUDA tensor; size=(...) for empty
   tensors as above; dtype=torch.NAME unless the dtype is float32, int64 or bool (PyTorch's
   defaults); requires_grad=True for a leaf that requires grad. */

#define TENSOR__PRINT_LINEWIDTH 80
#define TENSOR__PRINT_THRESHOLD 1000
#define TENSOR__PRINT_EDGE 3

/* Output sink: a caller's buffer (snprintf rules: as much as fits, the full length counted) or a
   stream. `line` counts the characters since the last newline, for the suffix line breaks. */
typedef struct {
    FILE *f;
    char *buf;
    size_t cap;
    size_t len;
    size_t line;
} tensor__pw;

static void tensor__pw_put(tensor__pw *w, const char *s, size_t k) {
    if (w->f) fwrite(s, 1, k, w->f);
    else if (w->buf && w->len + 1 < w->cap) {
        size_t room = w->cap - 1 - w->len;
        memcpy(w->buf + w->len, s, k < room ? k : room);
    }
    w->len += k;
    for (size_t i = 0; i < k; i++) w->line = s[i] == '\n' ? 0 : w->line + 1;
}
static void tensor__pw_str(tensor__pw *w, const char *s) { tensor__pw_put(w, s, strlen(s)); }
static void tensor__pw_spaces(tensor__pw *w, int n) {
    static const char sp[] = "                                ";
    while (n > 0) {
        int k = n < 32 ? n : 32;
        tensor__pw_put(w, sp, (size_t)k);
        n -= k;
    }
}

/* How every element of one tensor is written (PyTorch's _Formatter). */
typedef struct {
    const tensor *t;
    bool floating, int_mode, sci_mode, summarize;
    int width;
    /* statistics of the finite non-zero values */
    int64_t count;
    double amin, amax;
} tensor__fmt;

static const char *tensor__elem_ptr(const tensor *t, int64_t off) {
    return (const char *)t->storage->data + off * (int64_t)tensor__dtype_sizes[t->dtype];
}

/* The element at element offset off, unpadded, into s (64 bytes); returns its length. */
static int tensor__format_elem(const tensor__fmt *f, int64_t off, char *s) {
    const tensor *t = f->t;
    const char *p = tensor__elem_ptr(t, off);
    if (!f->floating) {
        if (t->dtype == TENSOR_BOOL) return snprintf(s, 64, "%s", *(const uint8_t *)p ? "True" : "False");
        return snprintf(s, 64, "%lld", (long long)tensor__load_i64(p, t->dtype));
    }
    double v = tensor__load_f64(p, t->dtype);
    if (v != v) return snprintf(s, 64, "nan");  /* C would print -nan for a set sign bit */
    if (isinf(v)) return snprintf(s, 64, "%s", v < 0 ? "-inf" : "inf");
    if (f->sci_mode) return snprintf(s, 64, "%.4e", v);
    if (f->int_mode) return snprintf(s, 64, "%.0f.", v);
    return snprintf(s, 64, "%.4f", v);
}

/* Visits the elements that will be shown (all, or the edges of each long dim when summarizing),
   in row-major order. pass 0 gathers statistics, pass 1 the width. */
static void tensor__fmt_visit(tensor__fmt *f, int dim, int64_t off, int pass) {
    const tensor *t = f->t;
    if (dim == t->ndim) {
        char s[64];
        if (!f->floating) {
            int k = tensor__format_elem(f, off, s);
            if (k > f->width) f->width = k;
            return;
        }
        double v = tensor__load_f64(tensor__elem_ptr(t, off), t->dtype);
        if (!isfinite(v) || v == 0) return;
        if (pass == 0) {
            double a = fabs(v);
            if (f->count == 0 || a < f->amin) f->amin = a;
            if (f->count == 0 || a > f->amax) f->amax = a;
            if (v != ceil(v)) f->int_mode = false;
            f->count++;
        } else {
            int k = tensor__format_elem(f, off, s);
            if (k > f->width) f->width = k;
        }
        return;
    }
    int64_t n = t->shape[dim];
    bool cut = f->summarize && n > 2 * TENSOR__PRINT_EDGE;
    for (int64_t i = 0; i < n; i++) {
        if (cut && i == TENSOR__PRINT_EDGE) i = n - TENSOR__PRINT_EDGE;
        tensor__fmt_visit(f, dim + 1, off + i * t->strides[dim], pass);
    }
}

static void tensor__fmt_init(tensor__fmt *f, const tensor *t, bool summarize) {
    memset(f, 0, sizeof *f);
    f->t = t;
    f->floating = tensor__is_float(t->dtype);
    f->int_mode = true;
    f->summarize = summarize;
    f->width = 1;
    if (!f->floating) { tensor__fmt_visit(f, 0, t->offset, 1); return; }
    tensor__fmt_visit(f, 0, t->offset, 0);
    if (f->count == 0) return; /* only zeros and non-finite values: int mode, width 1 */
    double ratio = f->amax / f->amin;
    if (f->int_mode) f->sci_mode = ratio > 1000.0 || f->amax > 1.0e8;
    else f->sci_mode = ratio > 1000.0 || f->amax > 1.0e8 || f->amin < 1.0e-4;
    tensor__fmt_visit(f, 0, t->offset, 1);
}

static void tensor__print_elem(tensor__pw *w, const tensor__fmt *f, int64_t off) {
    char s[64];
    int k = tensor__format_elem(f, off, s);
    if (k < 0) k = 0;
    if (k > 63) k = 63;
    tensor__pw_spaces(w, f->width - k);
    tensor__pw_put(w, s, (size_t)k);
}

/* The body from dim on, at element offset off; indent as in PyTorch's _tensor_str_with_formatter. */
static void tensor__print_body(tensor__pw *w, const tensor__fmt *f, int dim, int64_t off, int indent) {
    const tensor *t = f->t;
    if (t->ndim == 0) { tensor__print_elem(w, f, off); return; }
    int64_t n = t->shape[dim];
    bool cut = f->summarize && n > 2 * TENSOR__PRINT_EDGE;
    tensor__pw_str(w, "[");
    if (dim == t->ndim - 1) {
        int per_line = (TENSOR__PRINT_LINEWIDTH - indent) / (f->width + 2);
        if (per_line < 1) per_line = 1;
        int64_t k = 0; /* items written, " ..." included */
        for (int64_t i = 0; i < n; i++, k++) {
            if (k > 0) {
                if (k % per_line == 0) { tensor__pw_str(w, ",\n"); tensor__pw_spaces(w, indent + 1); }
                else tensor__pw_str(w, ", ");
            }
            if (cut && i == TENSOR__PRINT_EDGE) {
                tensor__pw_str(w, " ...");
                i = n - TENSOR__PRINT_EDGE - 1;
                continue;
            }
            tensor__print_elem(w, f, off + i * t->strides[dim]);
        }
    } else {
        int newlines = t->ndim - dim - 1;
        for (int64_t i = 0; i < n; i++) {
            if (i > 0) {
                tensor__pw_str(w, ",");
                for (int j = 0; j < newlines; j++) tensor__pw_str(w, "\n");
                tensor__pw_spaces(w, indent + 1);
            }
            if (cut && i == TENSOR__PRINT_EDGE) {
                tensor__pw_str(w, "...");
                tensor__pw_str(w, ",");
                for (int j = 0; j < newlines; j++) tensor__pw_str(w, "\n");
                tensor__pw_spaces(w, indent + 1);
                i = n - TENSOR__PRINT_EDGE;
            }
            tensor__print_body(w, f, dim + 1, off + i * t->strides[dim], indent + 1);
        }
    }
    tensor__pw_str(w, "]");
}

/* Appends one suffix the way PyTorch's _add_suffixes does: its line length starts at the
   characters since the last newline + 2. */
static void tensor__print_suffix(tensor__pw *w, const char *suffix) {
    size_t last = w->line + 2, k = strlen(suffix);
    if (last + k + 2 > TENSOR__PRINT_LINEWIDTH) { tensor__pw_str(w, ",\n"); tensor__pw_spaces(w, 7); }
    else tensor__pw_str(w, ", ");
    tensor__pw_str(w, suffix);
}

/* Writes the whole repr of t (a CPU tensor) to w; user is the handle the caller passed (its
   device and autograd flags name the suffixes). */
static void tensor__print_to(tensor__pw *w, const tensor *t, const tensor *user) {
    int64_t numel = tensor__numel_of(t->ndim, t->shape);
    char suffix[200];
    tensor__pw_str(w, "tensor(");
    if (numel == 0) tensor__pw_str(w, "[]");
    else {
        tensor__fmt f;
        tensor__fmt_init(&f, t, numel > TENSOR__PRINT_THRESHOLD);
        tensor__print_body(w, &f, 0, t->offset, 7);
    }
    if (user->storage->device == TENSOR_CUDA) tensor__print_suffix(w, "device='cuda:0'");
    if (numel == 0 && t->ndim != 1) {
        size_t at = (size_t)snprintf(suffix, sizeof suffix, "size=(");
        for (int i = 0; i < t->ndim && at < sizeof suffix; i++)
            at += (size_t)snprintf(suffix + at, sizeof suffix - at, i ? ", %lld" : "%lld", (long long)t->shape[i]);
        if (at < sizeof suffix) snprintf(suffix + at, sizeof suffix - at, ")");
        tensor__print_suffix(w, suffix);
    }
    bool default_dtype = numel == 0 ? t->dtype == TENSOR_F32 : (t->dtype == TENSOR_F32 || t->dtype == TENSOR_I64 || t->dtype == TENSOR_BOOL);
    if (!default_dtype) {
        snprintf(suffix, sizeof suffix, "dtype=torch.%s", tensor__dtype_names[t->dtype]);
        tensor__print_suffix(w, suffix);
    }
    if (user->requires_grad && !user->grad_fn) tensor__print_suffix(w, "requires_grad=True");
    tensor__pw_str(w, ")");
}

/* Prints t into w; false (error recorded under fn) if t cannot be read. */
static bool tensor__print_run(const char *fn, tensor__pw *w, tensor *t) {
    if (!t) { tensor__null_arg(fn, "t"); return false; }
    if (t->storage->device == TENSOR_CPU) { tensor__print_to(w, t, t); return true; }
    tensor *c = tensor_to_device(t, TENSOR_CPU);
    if (!c) { tensor__fail(fn, "cannot copy the tensor to the CPU for printing"); return false; }
    tensor__print_to(w, c, t);
    tensor_free(c);
    return true;
}

TENSOR_API int tensor_snprint(tensor *t, char *buf, size_t n) {
    const char *fn = "tensor_snprint";
    if (buf && n > 0) buf[0] = 0;
    if (!buf && n > 0) { tensor__fail(fn, "buf is NULL but n is %zu", n); return -1; }
    tensor__pw w;
    memset(&w, 0, sizeof w);
    w.buf = buf;
    w.cap = n;
    if (!tensor__print_run(fn, &w, t)) return -1;
    if (buf && n > 0) buf[w.len < n ? w.len : n - 1] = 0;
    if (w.len > (size_t)INT_MAX) { tensor__fail(fn, "text of %zu characters does not fit an int", w.len); return -1; }
    return (int)w.len;
}

TENSOR_API void tensor_print(tensor *t) {
    tensor__pw w;
    memset(&w, 0, sizeof w);
    w.f = stdout;
    if (tensor__print_run("tensor_print", &w, t)) fputc('\n', stdout);
}
/* ==== end generator/parts/print.h ==== */
/* ==== begin tensor_autograd.h ==== */
// >>autograd -----------------------------------------------------------------------------------
/* tensor_autograd.h: reverse-mode automatic differentiation, define-by-run like PyTorch.
   The generator amalgamates this file into tensor.h after the kernels.

   The graph: an op whose inputs require grad records a node on its output (tensor__dispatch calls
   tensor__autograd_record). A node keeps the op, its parameters, aliases of its inputs (for the
   derivative), and one edge per input: the node that made that input, or the input's accumulator if
   it is a leaf that requires grad. A leaf's accumulator node holds its .grad, so every handle of a
   leaf sees one gradient. Nodes are refcounted by the handles that point at them and by the nodes
   downstream; they are freed without recursion, so a 100,000-op chain is fine.

   The derivatives: below the engine, one function per differentiable op of ops.def, keyed by name
   (tensor__derivative_NAME). Each is written with the library's own ops, so when the engine runs
   with create_graph the backward pass is itself recorded and can be differentiated again. */

static TENSOR__THREAD_LOCAL bool tensor__no_grad; /* grad mode is per thread, as in PyTorch */

TENSOR_API bool tensor_set_grad_enabled(bool on) {
    bool was = !tensor__no_grad;
    tensor__no_grad = !on;
    return was;
}

typedef struct tensor__node {
    tensor__refs refs;                          /* biased: the owner is the thread that recorded it (>>threads-state) */
    int op;                                     /* a tensor_op, or -1 for a leaf's accumulator */
    tensor *grad;                               /* accumulators: the leaf's .grad (internal handle) */
    int n_in;
    struct tensor__node **next;                 /* [n_in] where each input's gradient goes; NULL: nowhere */
    tensor **saved;                             /* [n_in] the inputs, while the graph is alive */
    int64_t *saved_version;                     /* [n_in] their storage versions when saved */
    tensor *extra;                              /* a kernel's second output it needs (dropout's mask) */
    double p[4];
    int64_t ip[16];
    int64_t pads[2 * TENSOR_MAX_DIMS];          /* pad: a copy of the pads */
    int n_dims, dims[TENSOR_MAX_DIMS];
    bool released;                              /* saved tensors freed after a backward pass */
    /* engine scratch */
    tensor *acc;                                /* gradient of the output accumulated so far */
    int64_t deps, epoch;
    struct tensor__node *free_next;             /* in the node cache, the next free node */
} tensor__node;

typedef int (*tensor__derivative_fn)(tensor__node *n, tensor *g, tensor **grads);

/* ---- node lifetime (no recursion: releases go through a worklist) ----
   Threads: the worklist and the node cache are the calling thread's (in its tensor__thread). A
   node's references are biased toward its owner (a shared weight's accumulator gets edges from
   every thread's graphs); the node is destroyed on its owner's thread, which took its edges: the
   last reference dropped on another thread sends it there (tensor__send_node). */
static void tensor__node_free_saved(tensor__node *n) {
    for (int i = 0; i < n->n_in; i++) {
        if (n->saved[i]) { tensor__storage_saved_add(n->saved[i]->storage, -1); tensor_free(n->saved[i]); n->saved[i] = NULL; }
    }
    if (n->extra) { tensor__storage_saved_add(n->extra->storage, -1); tensor_free(n->extra); n->extra = NULL; }
    n->released = true;
}

static void tensor__node_destroy(tensor__node *n);

/* Freed nodes of up to TENSOR__MAX_INPUTS inputs wait in the thread's node_cache, one list per
   input count, for the next op that records one (a training step records and frees the same
   nodes every step). */
#define TENSOR__NODE_CACHE_MAX 4096
typedef char tensor__node_lists_fit[TENSOR__MAX_INPUTS < TENSOR__NODE_LISTS ? 1 : -1];

static void tensor__node_recycle(tensor__node *n) {
    tensor__thread *me = tensor__self;
    if (!me || n->n_in > TENSOR__MAX_INPUTS || me->node_cache_n >= TENSOR__NODE_CACHE_MAX) { TENSOR_FREE(n); return; }
    n->free_next = me->node_cache[n->n_in];
    me->node_cache[n->n_in] = n;
    me->node_cache_n++;
    TENSOR__POISON(n, sizeof *n); /* ASan still sees a use after free: all but the link */
    TENSOR__UNPOISON(&n->free_next, sizeof n->free_next);
}
static void tensor__node_cache_clear(tensor__thread *me) {
    for (int k = 0; k <= TENSOR__MAX_INPUTS; k++)
        while (me->node_cache[k]) {
            tensor__node *n = me->node_cache[k];
            me->node_cache[k] = n->free_next;
            TENSOR__UNPOISON(n, sizeof *n);
            TENSOR_FREE(n);
        }
    me->node_cache_n = 0;
}

/* n, whose last reference went on a thread other than its owner, to its owner to destroy (the
   same pairing with an ending owner as tensor__send_handle's). */
static void tensor__send_node(tensor__node *n) {
    tensor__thread *owner = n->refs.owner;
    tensor__node *head = (tensor__node *)TENSOR__LOAD(&owner->remote_nodes);
    do n->free_next = head;
    while (!TENSOR__CAS(&owner->remote_nodes, &head, n));
    TENSOR__STORE_SC(&owner->pending, 1);
    if (TENSOR__LOAD_SC(&owner->exited)) tensor__reap();
}

/* n's last reference went on thread me: n goes to its owner, or on the worklist here. */
static void tensor__node_dead(tensor__node *n, tensor__thread *me) {
    if (n->refs.owner != me) { tensor__send_node(n); return; }
    if (me->release_n == me->release_cap) {
        int64_t cap = me->release_cap ? me->release_cap * 2 : 256;
        tensor__node **s = (tensor__node **)TENSOR__MALLOC(sizeof *s * (size_t)cap);
        if (!s) { tensor__node_destroy(n); return; } /* no room to defer: free it now */
        if (me->release_n) memcpy(s, me->release_stack, sizeof *s * (size_t)me->release_n);
        if (me->release_stack) TENSOR_FREE(me->release_stack);
        me->release_stack = s;
        me->release_cap = cap;
    }
    me->release_stack[me->release_n++] = n;
    if (me->releasing) return;
    me->releasing = true;
    while (me->release_n > 0) tensor__node_destroy(me->release_stack[--me->release_n]);
    me->releasing = false;
}
/* Drops one reference the calling thread took (inline: most drops are not the last). */
static inline void tensor__node_unref(tensor__node *n) {
    tensor__thread *me = tensor__self;
    if (n && tensor__refs_drop(&n->refs, me)) tensor__node_dead(n, me);
}

static void tensor__node_destroy(tensor__node *n) {
    tensor__node_free_saved(n);
    for (int i = 0; i < n->n_in; i++) tensor__node_unref(n->next[i]);
    tensor_free(n->grad);
    tensor_free(n->acc);
    tensor__node_recycle(n);
}

/* One block: the node, then its n_in edges, saved inputs and versions. */
static tensor__node *tensor__node_new(int op, int n_in) {
    size_t bytes = sizeof(tensor__node) + (size_t)n_in * (sizeof(tensor__node *) + sizeof(tensor *) + sizeof(int64_t));
    if (TENSOR__ALLOC_FAILS()) return NULL;
    tensor__thread *me = tensor__self;
    tensor__node *n = me && n_in <= TENSOR__MAX_INPUTS ? me->node_cache[n_in] : NULL;
    if (n) { me->node_cache[n_in] = n->free_next; me->node_cache_n--; TENSOR__UNPOISON(n, sizeof *n); }
    else if (!(n = (tensor__node *)TENSOR_MALLOC(bytes))) return NULL;
    memset(n, 0, bytes);
    tensor__refs_init(&n->refs, me);
    n->op = op;
    n->n_in = n_in;
    n->saved_version = (int64_t *)(n + 1);
    n->next = (tensor__node **)(n->saved_version + n_in);
    n->saved = (tensor **)(n->next + n_in);
    return n;
}

static tensor__node *tensor__node_ref(tensor__node *n) {
    if (n) tensor__refs_take(&n->refs, tensor__self);
    return n;
}

/* Destroys the nodes other threads sent to me (>>scopes' tensor__drain). */
static void tensor__drain_nodes(tensor__thread *me) {
    tensor__node *n = (tensor__node *)TENSOR__EXCHANGE(&me->remote_nodes, (tensor__node *)NULL);
    while (n) {
        tensor__node *next = n->free_next;
        tensor__refs_init(&n->refs, me); /* a reference of me's to drop: the usual path destroys it */
        tensor__node_unref(n);
        n = next;
    }
}

static void tensor__autograd_release(tensor *t) {
    tensor__node_unref(t->grad_fn);
    t->grad_fn = NULL;
}

/* An internal alias of t that keeps t's autograd identity (for saved inputs). */
static tensor *tensor__save(const tensor *t) {
    tensor__thread *me = tensor__me();
    if (!me) return tensor__fail("tensor_backward", "out of memory");
    int depth = me->depth;
    me->depth = -1; /* made straight into the internal list (handles are linked at depth), not moved
                       there (the op overhead's 3 ns); an error handler making tensors meanwhile makes
                       internal ones */
    tensor *s = tensor__alias("tensor_backward", t);
    me->depth = depth;
    if (!s) return NULL;
    tensor__storage_saved_add(s->storage, 1);
    return s;
}

// >>autograd-record ----------------------------------------------------------------------------
static bool tensor__is_leaf(const tensor *t) { return !t->grad_fn || t->grad_fn->op < 0; }

/* The edge an input's gradient flows along: its creator node, or its accumulator if it is a leaf
   that requires grad (made on first use), or NULL. NULL for a tensor that requires grad means no
   memory for its accumulator: callers check tensor__has_edge. */
static tensor__node *tensor__grad_edge(tensor *t) {
    if (!t || !t->requires_grad) return NULL;
    if (!t->grad_fn && (t->grad_fn = tensor__node_new(-1, 0)) != NULL)
        t->grad_fn->refs.owner = t->owner; /* its one reference is t's, dropped on t's owner's thread */
    return t->grad_fn;
}
static bool tensor__has_edge(tensor *t) { return !t || !t->requires_grad || tensor__grad_edge(t); }

/* Records c's node on c->out. false, with an error, when there is no memory for the node, an
   edge or a saved input: the caller then frees the output and fails, so an op never returns a
   result whose gradient would silently go missing. */
static bool tensor__autograd_record(tensor__call *c) {
    if (tensor__no_grad || !c->out || !tensor__ops[c->op].differentiable) return true;
    bool needed = false;
    for (int i = 0; i < c->n_in; i++) needed |= c->in[i] && c->in[i]->requires_grad;
    if (!needed) return true;
    if (!tensor__is_float(c->out->dtype)) return true; /* integer results carry no gradient */
    /* cat takes any number of inputs: the call holds the array (ip[1]) and its length (ip[0]) */
    tensor *const *in = c->op == TENSOR_OP_cat ? (tensor *const *)(uintptr_t)c->ip[1] : c->in;
    int n_in = c->op == TENSOR_OP_cat ? (int)c->ip[0] : c->n_in;
    if (c->op == TENSOR_OP_cat) {
        needed = false;
        for (int i = 0; i < n_in; i++) needed |= in[i]->requires_grad;
        if (!needed) return true;
    }
    tensor__node *n = tensor__node_new(c->op, n_in);
    if (!n) { tensor__fail(c->fn, "out of memory recording the autograd graph"); return false; }
    memcpy(n->p, c->p, sizeof n->p);
    memcpy(n->ip, c->ip, sizeof n->ip);
    n->n_dims = c->n_dims;
    memcpy(n->dims, c->dims, sizeof n->dims);
    if (c->op == TENSOR_OP_pad) /* the call points at the caller's pads: keep a copy */
        for (int i = 0; i < (int)c->ip[0]; i++) n->pads[i] = ((const int64_t *)(uintptr_t)c->ip[1])[i];
    bool ok = true;
    for (int i = 0; i < n_in && ok; i++) {
        if (!in[i]) continue;
        ok = tensor__has_edge(in[i]) && (n->saved[i] = tensor__save(in[i])) != NULL;
        n->next[i] = tensor__node_ref(tensor__grad_edge(in[i]));
        n->saved_version[i] = in[i]->storage->version;
    }
    if (ok && c->out2) ok = (n->extra = tensor__save(c->out2)) != NULL;
    if (!ok) {
        tensor__node_unref(n); /* frees what was saved and drops the edges */
        tensor__fail(c->fn, "out of memory recording the autograd graph");
        return false;
    }
    c->out->grad_fn = n;
    c->out->requires_grad = true;
    return true;
}

/* Refuses in-place writes that could make a gradient silently wrong. */
static bool tensor__check_inplace(const char *fn, tensor *a) {
    if (tensor__no_grad) return true; /* e.g. an optimizer step; a later backward checks versions */
    if (a->requires_grad) {
        tensor__fail(fn, "in-place op on a tensor that requires grad%s; use the out-of-place op or disable grad",
                     tensor__is_leaf(a) ? " (a leaf)" : "");
        return false;
    }
    if (tensor__storage_saved(a->storage)) {
        tensor__fail(fn, "in-place op on a tensor that an autograd graph saved for its backward pass; "
                         "run backward first, clone it, or disable grad");
        return false;
    }
    return true;
}

// >>autograd-api -------------------------------------------------------------------------------
TENSOR_API tensor *tensor_set_requires_grad(tensor *t, bool on) {
    const char *fn = "tensor_set_requires_grad";
    TENSOR__CHECK_ARG(fn, t);
    if (on && !tensor__is_float(t->dtype)) return tensor__fail(fn, "only floating tensors can require grad, got %s", tensor__dtype_names[t->dtype]);
    if (!tensor__is_leaf(t)) {
        if (!on) return tensor__fail(fn, "cannot turn off requires_grad of a non-leaf tensor; use tensor_detach");
        return t;
    }
    t->requires_grad = on;
    if (on && !tensor__grad_edge(t)) {
        t->requires_grad = false;
        return tensor__fail(fn, "out of memory making the gradient accumulator");
    }
    return t;
}

TENSOR_API bool tensor_requires_grad(const tensor *t) { return t && t->requires_grad; }

TENSOR_API tensor *tensor_grad(tensor *t) {
    if (!t) return tensor__null_arg("tensor_grad", "t");
    return t->grad_fn && t->grad_fn->op < 0 ? t->grad_fn->grad : NULL;
}

TENSOR_API void tensor_zero_grad(tensor *t) {
    if (t && t->grad_fn && t->grad_fn->op < 0) { tensor_free(t->grad_fn->grad); t->grad_fn->grad = NULL; }
}

TENSOR_API tensor *tensor_detach(tensor *t) {
    TENSOR__CHECK_ARG("tensor_detach", t);
    tensor *d = tensor__view_of("tensor_detach", t, t->ndim, t->shape, t->strides, t->offset);
    return d; /* tensor__view_of makes a handle with no grad_fn and requires_grad false */
}

// >>autograd-engine ----------------------------------------------------------------------------
/* derivative[op]: one function per differentiable op of the registry with a kernel or a view,
   defined below the engine; such an op without one fails to compile.
   Composite ops need none: the ops they are written with record the graph. */
#define TENSOR__DECLARE_DERIVATIVE_KERNEL_DIFF(name) static int tensor__derivative_##name(tensor__node *n, tensor *g, tensor **grads);
#define TENSOR__DECLARE_DERIVATIVE_VIEW_DIFF TENSOR__DECLARE_DERIVATIVE_KERNEL_DIFF
#define TENSOR__DECLARE_DERIVATIVE_KERNEL_NODIFF(name)
#define TENSOR__DECLARE_DERIVATIVE_VIEW_NODIFF(name)
#define TENSOR__DECLARE_DERIVATIVE_COMPOSITE_DIFF(name)
#define TENSOR__DECLARE_DERIVATIVE_COMPOSITE_NODIFF(name)
#define TENSOR__DECLARE_DERIVATIVE_(impl, grad, name) TENSOR__DECLARE_DERIVATIVE_##impl##_##grad(name)
#define TENSOR__DECLARE_DERIVATIVE(name, kind, impl, types, grad, params, doc) TENSOR__DECLARE_DERIVATIVE_(impl, grad, name)
TENSOR_OPS(TENSOR__DECLARE_DERIVATIVE)
#define TENSOR__DERIVATIVE_ENTRY_KERNEL_DIFF(name) tensor__derivative_##name,
#define TENSOR__DERIVATIVE_ENTRY_VIEW_DIFF TENSOR__DERIVATIVE_ENTRY_KERNEL_DIFF
#define TENSOR__DERIVATIVE_ENTRY_KERNEL_NODIFF(name) 0,
#define TENSOR__DERIVATIVE_ENTRY_VIEW_NODIFF(name) 0,
#define TENSOR__DERIVATIVE_ENTRY_COMPOSITE_DIFF(name) 0,
#define TENSOR__DERIVATIVE_ENTRY_COMPOSITE_NODIFF(name) 0,
#define TENSOR__DERIVATIVE_ENTRY_(impl, grad, name) TENSOR__DERIVATIVE_ENTRY_##impl##_##grad(name)
#define TENSOR__DERIVATIVE_ENTRY(name, kind, impl, types, grad, params, doc) TENSOR__DERIVATIVE_ENTRY_(impl, grad, name)
static const tensor__derivative_fn tensor__derivatives[TENSOR_OP_COUNT] = {TENSOR_OPS(TENSOR__DERIVATIVE_ENTRY)};

/* g reduced to shape (ndim, shape) by summing the dims broadcasting added or expanded. */
static tensor *tensor__sum_to(tensor *g, int ndim, const int64_t *shape) {
    if (!g) return NULL;
    int lead = g->ndim - ndim, dims[TENSOR_MAX_DIMS], nd = 0;
    for (int d = 0; d < g->ndim; d++)
        if (d < lead || (shape[d - lead] == 1 && g->shape[d] != 1)) dims[nd++] = d;
    if (nd == 0 && lead == 0) return tensor__alias("tensor_backward", g);
    tensor *s = tensor_sum_dims(g, nd, dims, true);
    tensor *r = tensor_reshape(s, ndim, shape);
    tensor_free(s);
    return r;
}

/* Moves an internal handle to the innermost scope, where the user owns it. */
static tensor *tensor__make_owned(tensor *t) {
    if (t && t->list_level < 0) { tensor__unlink(t); tensor__link(t, t->owner->depth); }
    return t;
}

/* acc += g, keeping acc an internal handle (NULL acc: takes g). */
static bool tensor__accumulate(tensor **acc, tensor *g) {
    if (!*acc) { *acc = tensor__make_internal(g); return true; }
    tensor *s = tensor_add(*acc, g);
    tensor_free(g);
    if (!s) return false;
    tensor_free(*acc);
    *acc = tensor__make_internal(s);
    return true;
}

typedef struct { tensor__node **v; int64_t n, cap; } tensor__node_list;
static bool tensor__node_push(tensor__node_list *l, tensor__node *n) {
    if (l->n == l->cap) {
        int64_t cap = l->cap ? l->cap * 2 : 64;
        tensor__node **v = (tensor__node **)TENSOR__MALLOC(sizeof *v * (size_t)cap);
        if (!v) return false;
        if (l->n) memcpy(v, l->v, sizeof *v * (size_t)l->n);
        if (l->v) TENSOR_FREE(l->v);
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = n;
    return true;
}

/* One count for every thread (atomic): two passes, whichever threads run them, never share an
   epoch, so a node that both reach (a shared weight's accumulator) is never taken as visited. */
static int64_t tensor__epoch;

/* The engine. Runs the graph above the roots once in reverse topological order (dependency
   counting, no recursion). accumulate: leaves' .grad += their gradient (tensor_backward);
   otherwise the gradients reaching the nodes of `wanted` are returned in got[] (autograd_grad).
   Returns 0, or -1 with an error. */
static int tensor__run_backward(const char *fn, int n_roots, tensor *const *roots, tensor *const *root_grads,
                                bool create_graph, bool accumulate, int n_wanted, tensor__node *const *wanted, tensor **got) {
    tensor__node_list all = {NULL, 0, 0}, stack = {NULL, 0, 0}, ready = {NULL, 0, 0};
    int64_t epoch = TENSOR__ADD(&tensor__epoch, 1);
    int rc = 0;
    bool grad_was = tensor_set_grad_enabled(create_graph);
    /* 1. find the nodes above the roots; count each one's consumers */
    for (int r = 0; r < n_roots; r++) {
        tensor__node *n = roots[r]->grad_fn;
        if (n->epoch != epoch) { n->epoch = epoch; n->deps = 0; if (!tensor__node_push(&stack, n) || !tensor__node_push(&all, n)) goto oom; }
    }
    while (stack.n) {
        tensor__node *n = stack.v[--stack.n];
        if (n->released && n->op >= 0) {
            tensor__fail(fn, "the graph through %s was already freed by an earlier backward pass", tensor__ops[n->op].fn);
            rc = -1;
            goto done;
        }
        for (int i = 0; i < n->n_in; i++) {
            tensor__node *m = n->next[i];
            if (!m) continue;
            if (m->epoch != epoch) { m->epoch = epoch; m->deps = 0; if (!tensor__node_push(&stack, m) || !tensor__node_push(&all, m)) goto oom; }
            m->deps++;
        }
    }
    /* 2. seed the roots */
    for (int r = 0; r < n_roots; r++) {
        tensor *rg = root_grads ? root_grads[r] : NULL;
        tensor *g = rg ? tensor__alias(fn, rg) : tensor_ones(roots[r]->ndim, roots[r]->shape, roots[r]->dtype);
        if (!g || !tensor__accumulate(&roots[r]->grad_fn->acc, g)) { rc = -1; goto done; }
    }
    for (int64_t i = 0; i < all.n; i++)
        if (all.v[i]->deps == 0 && !tensor__node_push(&ready, all.v[i])) goto oom;
    /* 3. run each node once all its consumers have passed their gradient down */
    while (ready.n) {
        tensor__node *n = ready.v[--ready.n];
        tensor *g = n->acc;
        n->acc = NULL;
        for (int w = 0; w < n_wanted; w++)
            if (wanted[w] == n && g) {
                tensor *c = tensor__alias(fn, g);
                if (!c || (got[w] && !tensor__accumulate(&got[w], c))) { rc = -1; tensor_free(g); goto done; }
                if (!got[w]) got[w] = tensor__make_internal(c);
            }
        tensor *small[TENSOR__MAX_INPUTS] = {NULL, NULL, NULL, NULL};
        tensor **grads = small;
        if (n->n_in > TENSOR__MAX_INPUTS) {
            grads = (tensor **)TENSOR__MALLOC(sizeof(tensor *) * (size_t)n->n_in);
            if (!grads) { tensor_free(g); goto oom; }
            memset(grads, 0, sizeof(tensor *) * (size_t)n->n_in);
        }
        if (n->op < 0) {                                      /* a leaf's accumulator */
            if (accumulate && g) {
                /* a first .grad gets storage of its own, as PyTorch's AccumulateGrad: g may be an
                   expanded view or share its storage with another leaf's gradient (add passes g
                   to both inputs), and .grad is written in place (tensor_clip_grad_norm, users) */
                if (!n->grad && (!tensor__refs_sole(&g->storage->refs, tensor__self) || !tensor__contiguous(g))) {
                    tensor *own = tensor_clone(g);
                    tensor_free(g);
                    if (!own) { if (grads != small) TENSOR_FREE(grads); rc = -1; goto done; }
                    g = own;
                }
                tensor *add = create_graph ? g : tensor_detach(g);
                if (add != g) tensor_free(g);
                g = NULL;
                /* the new .grad waits in acc until the whole pass has succeeded (see done:), so a
                   pass that fails leaves every .grad as it was */
                tensor *sum = add && n->grad ? tensor_add(n->grad, add) : add;
                if (sum != add) tensor_free(add);
                if (!sum) { if (grads != small) TENSOR_FREE(grads); rc = -1; goto done; }
                n->acc = tensor__make_internal(sum);
            }
        } else if (g) {
            for (int i = 0; i < n->n_in; i++)
                if (n->saved[i] && n->saved[i]->storage->version != n->saved_version[i]) {
                    tensor__fail(fn, "an input of %s was modified in place after it was used; its gradient would be wrong", tensor__ops[n->op].fn);
                    tensor_free(g);
                    rc = -1;
                    goto done;
                }
            if (!tensor__scope_push(fn)) { /* the derivative's intermediates need a scope of their own */
                tensor_free(g);
                if (grads != small) TENSOR_FREE(grads);
                rc = -1;
                goto done;
            }
            int drc = tensor__derivatives[n->op](n, g, grads);
            for (int i = 0; i < n->n_in; i++) {
                if (!n->next[i] || !grads[i]) {
                    /* an input that needs a gradient and got none: the derivative failed without saying so */
                    if (n->next[i] && !drc) drc = (tensor__fail(fn, "the derivative of %s gave no gradient for input %d", tensor__ops[n->op].fn, i), 1);
                    grads[i] = NULL;
                    continue;
                }
                /* the gradient of an input has the input's shape and dtype */
                tensor *s = tensor__sum_to(grads[i], n->saved[i]->ndim, n->saved[i]->shape);
                tensor *d = s && s->dtype != n->saved[i]->dtype ? tensor_to_dtype(s, n->saved[i]->dtype) : s;
                grads[i] = d ? tensor__make_internal(tensor_keep(d)) : NULL;
                if (!d) drc = 1;
            }
            tensor_scope_end();
            tensor_free(g);
            g = NULL;
            if (drc) {
                for (int i = 0; i < n->n_in; i++) tensor_free(grads[i]);
                if (grads != small) TENSOR_FREE(grads);
                if (!tensor_last_error()) tensor__fail(fn, "the derivative of %s failed", tensor__ops[n->op].fn);
                rc = -1;
                goto done;
            }
        }
        tensor_free(g);
        bool ok = true;
        for (int i = 0; i < n->n_in; i++) {
            tensor__node *m = n->next[i];
            if (!m) continue;
            if (grads[i] && ok && !tensor__accumulate(&m->acc, grads[i])) ok = false;
            else if (!ok) tensor_free(grads[i]);
            if (--m->deps == 0 && !tensor__node_push(&ready, m)) ok = false;
        }
        if (grads != small) TENSOR_FREE(grads);
        if (!ok) { if (!tensor_last_error()) tensor__fail(fn, "out of memory in backward"); rc = -1; goto done; }
    }
    goto done;
oom:
    tensor__fail(fn, "out of memory walking the autograd graph");
    rc = -1;
done:
    for (int64_t i = 0; i < all.n; i++) {
        tensor__node *n = all.v[i];
        if (rc == 0 && accumulate && n->op < 0 && n->acc) { /* commit the leaves' new .grad: no allocation, cannot fail */
            tensor_free(n->grad);
            n->grad = n->acc;
        } else tensor_free(n->acc);
        n->acc = NULL;
        if (!create_graph && n->op >= 0) tensor__node_free_saved(n); /* the graph frees itself */
    }
    if (all.v) TENSOR_FREE(all.v);
    if (stack.v) TENSOR_FREE(stack.v);
    if (ready.v) TENSOR_FREE(ready.v);
    tensor_set_grad_enabled(grad_was);
    return rc;
}

TENSOR_API int tensor_backward_with(tensor *out, tensor *grad_out) {
    const char *fn = "tensor_backward_with";
    if (!out) { tensor__null_arg(fn, "out"); return -1; }
    if (!out->requires_grad || !out->grad_fn) { tensor__fail(fn, "the tensor does not require grad and has no graph"); return -1; }
    if (grad_out && !tensor__same_shape(out, grad_out)) {
        tensor__fail(fn, "grad_out of shape %s does not match the output shape %s", tensor__shape_of(grad_out), tensor__shape_of(out));
        return -1;
    }
    if (!grad_out && tensor__numel_of(out->ndim, out->shape) != 1) {
        tensor__fail(fn, "grad_out can be omitted only for one-element outputs, not shape %s", tensor__shape_of(out));
        return -1;
    }
    return tensor__run_backward(fn, 1, &out, &grad_out, false, true, 0, NULL, NULL);
}

TENSOR_API int tensor_backward(tensor *loss) {
    const char *fn = "tensor_backward";
    if (!loss) { tensor__null_arg(fn, "loss"); return -1; }
    if (tensor__numel_of(loss->ndim, loss->shape) != 1) { tensor__fail(fn, "loss must have one element, got shape %s (use tensor_backward_with)", tensor__shape_of(loss)); return -1; }
    if (!loss->requires_grad || !loss->grad_fn) { tensor__fail(fn, "the loss does not require grad and has no graph"); return -1; }
    return tensor__run_backward(fn, 1, &loss, NULL, false, true, 0, NULL, NULL) ;
}

TENSOR_API int tensor_autograd_grad(int n_out, tensor *const *outputs, tensor *const *grad_outputs,
                                    int n_in, tensor *const *inputs, tensor **grads_out, bool create_graph) {
    const char *fn = "tensor_autograd_grad";
    if (n_out <= 0 || n_in <= 0 || !outputs || !inputs || !grads_out) { tensor__fail(fn, "needs n_out > 0 outputs, n_in > 0 inputs and grads_out"); return -1; }
    for (int i = 0; i < n_in; i++) grads_out[i] = NULL;
    tensor__node *wanted[64];
    if (n_in > 64) { tensor__fail(fn, "at most 64 inputs, got %d", n_in); return -1; }
    for (int i = 0; i < n_in; i++) {
        if (!inputs[i]) { tensor__null_arg(fn, "inputs[i]"); return -1; }
        if (!inputs[i]->requires_grad) { tensor__fail(fn, "input %d does not require grad", i); return -1; }
        if (!(wanted[i] = tensor__grad_edge(inputs[i]))) { tensor__fail(fn, "out of memory making the gradient accumulator of input %d", i); return -1; }
    }
    for (int i = 0; i < n_out; i++) {
        if (!outputs[i]) { tensor__null_arg(fn, "outputs[i]"); return -1; }
        if (!outputs[i]->requires_grad || !outputs[i]->grad_fn) { tensor__fail(fn, "output %d does not require grad", i); return -1; }
        tensor *go = grad_outputs ? grad_outputs[i] : NULL;
        if (go && !tensor__same_shape(go, outputs[i])) { tensor__fail(fn, "grad_outputs[%d] has shape %s, output has %s", i, tensor__shape_of(go), tensor__shape_of(outputs[i])); return -1; }
        if (!go && tensor__numel_of(outputs[i]->ndim, outputs[i]->shape) != 1) { tensor__fail(fn, "grad_outputs[%d] is needed for the output of shape %s", i, tensor__shape_of(outputs[i])); return -1; }
    }
    int rc = tensor__run_backward(fn, n_out, outputs, grad_outputs ? grad_outputs : NULL, create_graph, false, n_in, wanted, grads_out);
    for (int i = 0; i < n_in && !rc; i++) {
        if (!grads_out[i]) rc = (grads_out[i] = tensor_zeros(inputs[i]->ndim, inputs[i]->shape, inputs[i]->dtype)) ? 0 : -1; /* unreachable input: zeros */
        else tensor__make_owned(grads_out[i]);
    }
    for (int i = 0; i < n_in && rc; i++) { tensor_free(grads_out[i]); grads_out[i] = NULL; }
    return rc;
}

// >>derivatives --------------------------------------------------------------------------------
/* Each derivative gets the node n (n->saved[i] is input i, n->p / n->ip / n->dims the parameters)
   and g, the gradient of the output; it sets grads[i] for the inputs. It runs inside a scope, so
   intermediates need no freeing, and with the engine's grad mode, so create_graph records it. The
   engine reduces each grads[i] to its input's shape and dtype (broadcasting, promotion). */
#define TENSOR__X (n->saved[0])
#define TENSOR__Y (n->saved[1])
#define TENSOR__OK(t) ((t) != NULL ? 0 : 1)

/* d out / d x for unary ops: grads[0] = g * (FORMULA written with x). */
#define TENSOR__DERIV_UNARY(name, LOCAL_DERIVATIVE)                                                        \
    static int tensor__derivative_##name(tensor__node *n, tensor *g, tensor **grads) {                   \
        tensor *x = TENSOR__X;                                                                           \
        (void)x;                                                                                         \
        grads[0] = (LOCAL_DERIVATIVE);                                                                   \
        return TENSOR__OK(grads[0]);                                                                     \
    }

/* The same, trying the fused one-pass kernel of >>elementwise first when no graph is being built. */
#define TENSOR__DERIV_UNARY_FUSED(name, LOCAL_DERIVATIVE)                                                  \
    static int tensor__derivative_##name(tensor__node *n, tensor *g, tensor **grads) {                   \
        tensor *x = TENSOR__X;                                                                           \
        int fused = tensor__no_grad ? tensor__unary_backward(TENSOR_OP_##name, x, g, n->p[0], n->p[1], &grads[0]) : 0; \
        if (fused) return fused < 0;                                                                     \
        grads[0] = (LOCAL_DERIVATIVE);                                                                   \
        return TENSOR__OK(grads[0]);                                                                     \
    }

static tensor *tensor__mask_float(tensor *mask, tensor *like) { return tensor_to_dtype(mask, like->dtype); }
/* 1 - t */
static tensor *tensor__one_minus(tensor *t) { return tensor_add_scalar(tensor_neg(t), 1); }
/* x OP s for a comparison op, s a wrapped scalar (bool result). */
static tensor *tensor__cmp_scalar(tensor_op op, tensor *x, double s) {
    if (!x) return NULL;
    tensor *b = tensor__wrapped_scalar(tensor__ops[op].fn, s, x->dtype);
    tensor *r = b ? tensor__binary(op, x, b) : NULL;
    tensor_free(b);
    return r;
}
static tensor *tensor__sigmoid_grad(tensor *g, tensor *s) { return tensor_mul(g, tensor_mul(s, tensor__one_minus(s))); }
/* d/dx x Phi(x) = Phi(x) + x phi(x) */
static tensor *tensor__gelu_grad(tensor *x) {
    tensor *cdf = tensor_mul_scalar(tensor_add_scalar(tensor_erf(tensor_mul_scalar(x, 0.70710678118654752440)), 1), 0.5);
    tensor *pdf = tensor_mul_scalar(tensor_exp(tensor_mul_scalar(tensor_square(x), -0.5)), 0.39894228040143267794);
    return tensor_add(cdf, tensor_mul(x, pdf));
}
/* u = k (x + c x^3), t = tanh(u): 0.5 (1 + t) + 0.5 x (1 - t^2) k (1 + 3 c x^2) */
static tensor *tensor__gelu_tanh_grad(tensor *x) {
    const double k = 0.79788456080286535588, c = 0.044715;
    tensor *x2 = tensor_square(x);
    tensor *t = tensor_tanh(tensor_mul_scalar(tensor_mul(x, tensor_add_scalar(tensor_mul_scalar(x2, c), 1)), k));
    tensor *left = tensor_mul_scalar(tensor_add_scalar(t, 1), 0.5);
    tensor *right = tensor_mul(tensor_mul_scalar(tensor_mul(x, tensor__one_minus(tensor_square(t))), 0.5 * k), tensor_add_scalar(tensor_mul_scalar(x2, 3 * c), 1));
    return tensor_add(left, right);
}
/* d/dx x s(x) = s (1 + x (1 - s)) */
static tensor *tensor__silu_grad(tensor *x) {
    tensor *sg = tensor_sigmoid(x);
    return tensor_mul(sg, tensor_add_scalar(tensor_mul(x, tensor__one_minus(sg)), 1));
}
/* d/dx x tanh(softplus(x)) = tsp + x (1 - tsp^2) sigmoid(x) */
static tensor *tensor__mish_grad(tensor *x) {
    tensor *tsp = tensor_tanh(tensor_softplus(x));
    return tensor_add(tsp, tensor_mul(tensor_mul(x, tensor__one_minus(tensor_square(tsp))), tensor_sigmoid(x)));
}

TENSOR__DERIV_UNARY(neg, tensor_neg(g))
TENSOR__DERIV_UNARY(abs, tensor_mul(g, tensor_sign(x)))
TENSOR__DERIV_UNARY(sign, tensor_mul_scalar(g, 0))
TENSOR__DERIV_UNARY(sqrt, tensor_div(tensor_mul_scalar(g, 0.5), tensor_sqrt(x)))
TENSOR__DERIV_UNARY(rsqrt, tensor_mul(tensor_mul_scalar(g, -0.5), tensor_div(tensor_rsqrt(x), x)))
TENSOR__DERIV_UNARY(square, tensor_mul(g, tensor_mul_scalar(x, 2)))
TENSOR__DERIV_UNARY(reciprocal, tensor_neg(tensor_div(g, tensor_square(x))))
TENSOR__DERIV_UNARY_FUSED(exp, tensor_mul(g, tensor_exp(x)))
TENSOR__DERIV_UNARY(exp2, tensor_mul(g, tensor_mul_scalar(tensor_exp2(x), 0.69314718055994530942)))
TENSOR__DERIV_UNARY(expm1, tensor_mul(g, tensor_exp(x)))
TENSOR__DERIV_UNARY(log, tensor_div(g, x))
TENSOR__DERIV_UNARY(log2, tensor_div(g, tensor_mul_scalar(x, 0.69314718055994530942)))
TENSOR__DERIV_UNARY(log1p, tensor_div(g, tensor_add_scalar(x, 1)))
TENSOR__DERIV_UNARY(sin, tensor_mul(g, tensor_cos(x)))
TENSOR__DERIV_UNARY(cos, tensor_neg(tensor_mul(g, tensor_sin(x))))
TENSOR__DERIV_UNARY(tan, tensor_mul(g, tensor_add_scalar(tensor_square(tensor_tan(x)), 1)))
TENSOR__DERIV_UNARY(asin, tensor_mul(g, tensor_rsqrt(tensor__one_minus(tensor_square(x)))))
TENSOR__DERIV_UNARY(acos, tensor_neg(tensor_mul(g, tensor_rsqrt(tensor__one_minus(tensor_square(x))))))
TENSOR__DERIV_UNARY(atan, tensor_div(g, tensor_add_scalar(tensor_square(x), 1)))
TENSOR__DERIV_UNARY(sinh, tensor_mul(g, tensor_cosh(x)))
TENSOR__DERIV_UNARY(cosh, tensor_mul(g, tensor_sinh(x)))
TENSOR__DERIV_UNARY_FUSED(tanh, tensor_mul(g, tensor__one_minus(tensor_square(tensor_tanh(x)))))
TENSOR__DERIV_UNARY(asinh, tensor_mul(g, tensor_rsqrt(tensor_add_scalar(tensor_square(x), 1))))
TENSOR__DERIV_UNARY(acosh, tensor_mul(g, tensor_rsqrt(tensor_sub_scalar(tensor_square(x), 1))))
TENSOR__DERIV_UNARY(atanh, tensor_div(g, tensor__one_minus(tensor_square(x))))
TENSOR__DERIV_UNARY_FUSED(sigmoid, tensor__sigmoid_grad(g, tensor_sigmoid(x)))
TENSOR__DERIV_UNARY(logsigmoid, tensor_mul(g, tensor_sigmoid(tensor_neg(x))))
/* relu: PyTorch's threshold_backward, x <= 0 ? 0 : g (a NaN x passes g; an infinite g at x <= 0
   gives 0). Without create_graph (grad mode off here) the fused kernel of >>nn does it in one pass;
   with create_graph, and under the reference kernels, masked_fill computes the same values. */
static int tensor__derivative_relu(tensor__node *n, tensor *g, tensor **grads) {
    int fused = tensor__no_grad ? tensor__relu_backward("tensor_backward", TENSOR__X, g, &grads[0]) : 0;
    if (fused) return fused < 0;
    return TENSOR__OK(grads[0] = tensor_masked_fill(g, tensor__cmp_scalar(TENSOR_OP_le, TENSOR__X, 0), 0));
}
TENSOR__DERIV_UNARY_FUSED(relu6, tensor_mul(g, tensor__mask_float(tensor_logical_and(tensor__cmp_scalar(TENSOR_OP_gt, x, 0), tensor__cmp_scalar(TENSOR_OP_lt, x, 6)), g)))
TENSOR__DERIV_UNARY_FUSED(gelu, tensor_mul(g, tensor__gelu_grad(x)))
TENSOR__DERIV_UNARY(gelu_tanh, tensor_mul(g, tensor__gelu_tanh_grad(x)))
TENSOR__DERIV_UNARY_FUSED(silu, tensor_mul(g, tensor__silu_grad(x)))
TENSOR__DERIV_UNARY(mish, tensor_mul(g, tensor__mish_grad(x)))
TENSOR__DERIV_UNARY(softplus, tensor_where(tensor__cmp_scalar(TENSOR_OP_gt, x, 20), g, tensor_mul(g, tensor_sigmoid(x))))
TENSOR__DERIV_UNARY(erf, tensor_mul(g, tensor_mul_scalar(tensor_exp(tensor_neg(tensor_square(x))), 1.12837916709551257390)))
TENSOR__DERIV_UNARY_FUSED(leaky_relu, tensor_where(tensor__cmp_scalar(TENSOR_OP_gt, x, 0), g, tensor_mul_scalar(g, n->p[0])))
TENSOR__DERIV_UNARY(elu, tensor_where(tensor__cmp_scalar(TENSOR_OP_gt, x, 0), g, tensor_mul(g, tensor_mul_scalar(tensor_exp(x), n->p[0]))))
/* hardtanh passes the gradient strictly inside (lo, hi), clamp on [lo, hi] (PyTorch's choice). */
TENSOR__DERIV_UNARY_FUSED(hardtanh, tensor_mul(g, tensor__mask_float(tensor_logical_and(tensor__cmp_scalar(TENSOR_OP_gt, x, n->p[0]), tensor__cmp_scalar(TENSOR_OP_lt, x, n->p[1])), g)))
TENSOR__DERIV_UNARY_FUSED(clamp, tensor_mul(g, tensor__mask_float(tensor_logical_and(tensor__cmp_scalar(TENSOR_OP_ge, x, n->p[0] == n->p[0] ? n->p[0] : -INFINITY),
                                                                              tensor__cmp_scalar(TENSOR_OP_le, x, n->p[1] == n->p[1] ? n->p[1] : INFINITY)), g)))

/* Binary ops: grads[0] for a, grads[1] for b (the engine sums broadcast dims away). */
#define TENSOR__DERIV_BINARY(name, GRAD_A, GRAD_B)                                                         \
    static int tensor__derivative_##name(tensor__node *n, tensor *g, tensor **grads) {                   \
        tensor *x = TENSOR__X, *y = TENSOR__Y;                                                           \
        (void)x; (void)y;                                                                                \
        if (n->next[0] && !(grads[0] = (GRAD_A))) return 1;                                              \
        if (n->next[1] && !(grads[1] = (GRAD_B))) return 1;                                              \
        return 0;                                                                                        \
    }

/* pow: d/da = b a^(b-1), taken as 0 where b == 0 (PyTorch; b a^(b-1) would be 0 * inf at a == 0);
   d/db = a^b log a, taken as 0 where a == 0 and b >= 0 (PyTorch). */
static tensor *tensor__pow_grad_base(tensor *g, tensor *x, tensor *y) {
    tensor *v = tensor_mul(g, tensor_mul(y, tensor_pow(x, tensor_sub_scalar(y, 1))));
    return tensor_masked_fill(v, tensor__cmp_scalar(TENSOR_OP_eq, y, 0), 0);
}
static tensor *tensor__pow_grad_exponent(tensor *g, tensor *x, tensor *y) {
    tensor *v = tensor_mul(g, tensor_mul(tensor_pow(x, y), tensor_log(x)));
    tensor *zero_base = tensor_logical_and(tensor__cmp_scalar(TENSOR_OP_eq, x, 0), tensor__cmp_scalar(TENSOR_OP_ge, y, 0));
    return tensor_masked_fill(v, zero_base, 0);
}
/* maximum/minimum: x gets the gradient unless it loses, half of it on a tie (PyTorch; so where
   either is NaN both get all of it). */
static tensor *tensor__extreme_grad(tensor *g, tensor *x, tensor *y, tensor_op loses) {
    tensor *keep = tensor__mask_float(tensor_logical_not(tensor__binary(loses, x, y)), g), *tie = tensor__mask_float(tensor_eq(x, y), g);
    return tensor_mul(g, tensor_sub(keep, tensor_mul_scalar(tie, 0.5)));
}

TENSOR__DERIV_BINARY(add, tensor__alias("tensor_backward", g), tensor__alias("tensor_backward", g))
TENSOR__DERIV_BINARY(sub, tensor__alias("tensor_backward", g), tensor_neg(g))
TENSOR__DERIV_BINARY(mul, tensor_mul(g, y), tensor_mul(g, x))
TENSOR__DERIV_BINARY(div, tensor_div(g, y), tensor_neg(tensor_div(tensor_mul(g, x), tensor_square(y))))
TENSOR__DERIV_BINARY(pow, tensor__pow_grad_base(g, x, y), tensor__pow_grad_exponent(g, x, y))
TENSOR__DERIV_BINARY(maximum, tensor__extreme_grad(g, x, y, TENSOR_OP_lt), tensor__extreme_grad(g, y, x, TENSOR_OP_lt))
TENSOR__DERIV_BINARY(minimum, tensor__extreme_grad(g, x, y, TENSOR_OP_gt), tensor__extreme_grad(g, y, x, TENSOR_OP_gt))
TENSOR__DERIV_BINARY(atan2, tensor_div(tensor_mul(g, y), tensor_add(tensor_square(x), tensor_square(y))),
                     tensor_neg(tensor_div(tensor_mul(g, x), tensor_add(tensor_square(x), tensor_square(y)))))
TENSOR__DERIV_BINARY(fmod, tensor__alias("tensor_backward", g), tensor_neg(tensor_mul(g, tensor_trunc(tensor_div(x, y)))))

static int tensor__derivative_where(tensor__node *n, tensor *g, tensor **grads) {
    tensor *cond = n->saved[0];
    if (n->next[1] && !(grads[1] = tensor_masked_fill(g, tensor_logical_not(cond), 0))) return 1;
    if (n->next[2] && !(grads[2] = tensor_masked_fill(g, cond, 0))) return 1;
    return 0;
}

/* Copies and conversions pass the gradient through (the engine converts it to the input's dtype). */
static int tensor__derivative_pass(tensor__node *n, tensor *g, tensor **grads) {
    (void)n;
    grads[0] = tensor__alias("tensor_backward", g);
    return TENSOR__OK(grads[0]);
}
static int tensor__derivative_clone(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_pass(n, g, grads); }
static int tensor__derivative_contiguous(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_pass(n, g, grads); }
static int tensor__derivative_to_dtype(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_pass(n, g, grads); }
static int tensor__derivative_to_device(tensor__node *n, tensor *g, tensor **grads) {
    grads[0] = tensor_to_device(g, n->saved[0]->storage->device);
    return TENSOR__OK(grads[0]);
}

/* ---- reductions: n->dims[0..n_dims) are the reduced dims (wrapped, ascending; none for a 0-dim
   input), n->ip[0] is keepdim, n->ip[1] the correction of var/std, n->p[0] the p of norm. ---- */

/* A reduced tensor (g, or a statistic) brought back to broadcast against x: the reduced dims
   reinserted as size 1 when keepdim was false. */
static tensor *tensor__unsqueeze_reduced(tensor__node *n, tensor *r) {
    if (n->ip[0]) return tensor__alias("tensor_backward", r);
    tensor *u = tensor__alias("tensor_backward", r);
    for (int i = 0; i < n->n_dims && u; i++) u = tensor_unsqueeze(u, n->dims[i]); /* ascending: positions are final */
    return u;
}
/* g expanded back to x's shape. */
static tensor *tensor__unreduce(tensor__node *n, tensor *g) {
    tensor *x = TENSOR__X;
    return tensor_expand(tensor__unsqueeze_reduced(n, g), x->ndim, x->shape);
}
static double tensor__reduced_count(tensor__node *n) {
    double c = 1;
    for (int i = 0; i < n->n_dims; i++) c *= (double)TENSOR__X->shape[n->dims[i]];
    return c;
}
/* The reduction re-run with keepdim, for derivatives that need its value (a 0-dim input has no
   reduced dim: dim 0 then reduces its one element, so norm gives |x| and std 0, not x). */
static tensor *tensor__keep_stat(tensor__node *n, tensor_op op) {
    tensor *x = TENSOR__X;
    int d = n->n_dims ? n->dims[0] : 0;
    switch (op) {
    case TENSOR_OP_mean: return tensor_mean_dims(x, n->n_dims, n->dims, true);
    case TENSOR_OP_logsumexp: return tensor_logsumexp(x, d, true);
    case TENSOR_OP_std: return tensor_std(x, d, n->ip[1], true);
    case TENSOR_OP_norm: return tensor_norm(x, n->p[0], d, true);
    case TENSOR_OP_prod: return tensor_prod(x, d, true);
    default: return tensor__fail("tensor_backward", "no statistic for %s", tensor__ops[op].fn);
    }
}

static int tensor__derivative_sum(tensor__node *n, tensor *g, tensor **grads) { return TENSOR__OK(grads[0] = tensor__unreduce(n, g)); }
static int tensor__derivative_sum_all(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_sum(n, g, grads); }
static int tensor__derivative_sum_dims(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_sum(n, g, grads); }
static int tensor__derivative_mean(tensor__node *n, tensor *g, tensor **grads) {
    return TENSOR__OK(grads[0] = tensor_div_scalar(tensor__unreduce(n, g), tensor__reduced_count(n)));
}
static int tensor__derivative_mean_all(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_mean(n, g, grads); }
static int tensor__derivative_mean_dims(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_mean(n, g, grads); }

/* prod: d/dx_i = prod of the others. Where x_i == 0 that is the product of the non-zeros if x_i is
   the only zero of its slice, else 0; elsewhere it is prod / x_i. */
static int tensor__derivative_prod(tensor__node *n, tensor *g, tensor **grads) {
    tensor *x = TENSOR__X;
    if (x->ndim == 0) return TENSOR__OK(grads[0] = tensor__alias("tensor_backward", g));
    int d = n->dims[0];
    tensor *is_zero = tensor__cmp_scalar(TENSOR_OP_eq, x, 0);
    tensor *prod = tensor__keep_stat(n, TENSOR_OP_prod);
    tensor *prod_nonzero = tensor_prod(tensor_masked_fill(x, is_zero, 1), d, true);
    tensor *zeros_in_slice = tensor_sum(is_zero, d, true);
    tensor *at_zero = tensor_masked_fill(prod_nonzero, tensor_logical_not(tensor__cmp_scalar(TENSOR_OP_eq, zeros_in_slice, 1)), 0);
    tensor *others = tensor_where(is_zero, tensor_expand(at_zero, x->ndim, x->shape), tensor_div(prod, tensor_masked_fill(x, is_zero, 1)));
    return TENSOR__OK(grads[0] = tensor_mul(tensor__unreduce(n, g), others));
}

/* max/min over a dim: the gradient goes to the index the reduction picked (the first extreme). */
static int tensor__derivative_extreme_dim(tensor__node *n, tensor *g, tensor **grads, bool is_max) {
    tensor *x = TENSOR__X;
    if (x->ndim == 0) return TENSOR__OK(grads[0] = tensor__alias("tensor_backward", g));
    int d = n->dims[0];
    tensor *idx = is_max ? tensor_argmax(x, d, true) : tensor_argmin(x, d, true);
    tensor *zeros = tensor_zeros(x->ndim, x->shape, g->dtype);
    return TENSOR__OK(grads[0] = tensor_scatter_add(zeros, d, idx, tensor__unsqueeze_reduced(n, g)));
}
static int tensor__derivative_max(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_extreme_dim(n, g, grads, true); }
static int tensor__derivative_min(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_extreme_dim(n, g, grads, false); }
/* max/min of everything: ties share the gradient evenly (PyTorch). */
static int tensor__derivative_extreme_all(tensor__node *n, tensor *g, tensor **grads, bool is_max) {
    tensor *x = TENSOR__X;
    tensor *m = is_max ? tensor_max_all(x) : tensor_min_all(x);
    tensor *hit = tensor__mask_float(tensor_eq(x, m), g);
    return TENSOR__OK(grads[0] = tensor_mul(tensor_div(hit, tensor_sum_all(hit)), g));
}
static int tensor__derivative_max_all(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_extreme_all(n, g, grads, true); }
static int tensor__derivative_min_all(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_extreme_all(n, g, grads, false); }

/* var: 2 (x - mean) / (N - correction); std: (x - mean) / ((N - correction) std), taken as 0 where
   std is 0 (PyTorch's choice at that kink). */
static int tensor__derivative_var(tensor__node *n, tensor *g, tensor **grads) {
    tensor *x = TENSOR__X;
    double denom = tensor__reduced_count(n) - (double)n->ip[1];
    tensor *centered = tensor_sub(x, tensor__keep_stat(n, TENSOR_OP_mean));
    return TENSOR__OK(grads[0] = tensor_mul(tensor__unreduce(n, g), tensor_mul_scalar(centered, 2.0 / denom)));
}
static int tensor__derivative_std(tensor__node *n, tensor *g, tensor **grads) {
    tensor *x = TENSOR__X;
    double denom = tensor__reduced_count(n) - (double)n->ip[1];
    tensor *centered = tensor_sub(x, tensor__keep_stat(n, TENSOR_OP_mean));
    tensor *sd = tensor__keep_stat(n, TENSOR_OP_std), *sd_zero = tensor__cmp_scalar(TENSOR_OP_eq, sd, 0);
    tensor *scaled = tensor_div(centered, tensor_mul_scalar(tensor_masked_fill(sd, sd_zero, 1), denom));
    return TENSOR__OK(grads[0] = tensor_mul(tensor__unreduce(n, g), tensor_masked_fill(scaled, sd_zero, 0)));
}
/* logsumexp: softmax of x along the dim. */
static int tensor__derivative_logsumexp(tensor__node *n, tensor *g, tensor **grads) {
    tensor *x = TENSOR__X;
    return TENSOR__OK(grads[0] = tensor_mul(tensor__unreduce(n, g), tensor_exp(tensor_sub(x, tensor__keep_stat(n, TENSOR_OP_logsumexp)))));
}
/* norm: p = 2: x / |x|; p = 1: sign x; p = 0: 0; p = +-inf: sign x shared among the entries that
   reach the norm; else x |x|^(p-2) / |x|_p^(p-1). A zero norm gives a zero gradient. */
static int tensor__derivative_norm(tensor__node *n, tensor *g, tensor **grads) {
    tensor *x = TENSOR__X;
    double p = n->p[0];
    tensor *gu = tensor__unreduce(n, g), *local;
    if (p == 0) local = tensor_mul_scalar(x, 0);
    else if (p == 1) local = tensor_sign(x);
    else {
        tensor *nrm = tensor__keep_stat(n, TENSOR_OP_norm);
        tensor *nrm_zero = tensor__cmp_scalar(TENSOR_OP_eq, nrm, 0);
        if (isinf(p)) {
            tensor *hit = tensor__mask_float(tensor_eq(tensor_abs(x), nrm), x);
            tensor *count = x->ndim ? tensor_sum_dims(hit, n->n_dims, n->dims, true) : hit;
            local = tensor_div(tensor_mul(tensor_sign(x), hit), count);
        } else if (p == 2) {
            local = tensor_div(x, tensor_masked_fill(nrm, nrm_zero, 1));
        } else {
            tensor *num = tensor_mul(x, tensor_pow_scalar(tensor_abs(x), p - 2));
            local = tensor_div(num, tensor_pow_scalar(tensor_masked_fill(nrm, nrm_zero, 1), p - 1));
        }
        local = tensor_masked_fill(local, nrm_zero, 0);
    }
    return TENSOR__OK(grads[0] = tensor_mul(gu, local));
}
/* cumsum: the reversed cumulative sum of g. */
static int tensor__derivative_cumsum(tensor__node *n, tensor *g, tensor **grads) {
    if (TENSOR__X->ndim == 0) return TENSOR__OK(grads[0] = tensor__alias("tensor_backward", g));
    int d = n->dims[0];
    return TENSOR__OK(grads[0] = tensor_flip(tensor_cumsum(tensor_flip(g, d), d), d));
}

/* ---- shape and indexing: n->dims[0] is the dim an op works along; see each op for the rest ---- */
static int tensor__derivative_reshape_back(tensor__node *n, tensor *g, tensor **grads) {
    return TENSOR__OK(grads[0] = tensor_reshape(g, TENSOR__X->ndim, TENSOR__X->shape));
}
static int tensor__derivative_view(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_reshape_back(n, g, grads); }
static int tensor__derivative_squeeze(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_reshape_back(n, g, grads); }
static int tensor__derivative_unsqueeze(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_reshape_back(n, g, grads); }
static int tensor__derivative_expand(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_pass(n, g, grads); }
/* permute: n->dims is the permutation; the gradient goes back through its inverse. */
static int tensor__derivative_permute(tensor__node *n, tensor *g, tensor **grads) {
    int inv[TENSOR_MAX_DIMS];
    for (int i = 0; i < n->n_dims; i++) inv[n->dims[i]] = i;
    return TENSOR__OK(grads[0] = tensor_permute(g, n->n_dims, inv));
}
static int tensor__derivative_transpose(tensor__node *n, tensor *g, tensor **grads) {
    return TENSOR__OK(grads[0] = tensor_transpose(g, (int)n->ip[0], (int)n->ip[1]));
}
/* g added into zeros of x's shape at positions start + step * i along dim (scatter_add keeps it
   differentiable in g). idx_len positions; g has the output's shape. */
static tensor *tensor__scatter_back(tensor__node *n, tensor *g, int dim, int64_t start, int64_t step) {
    tensor *x = TENSOR__X;
    if (!g) return NULL; /* select's unsqueeze of g failed */
    int64_t len = g->shape[dim];
    /* len positions (the arange's end falls between the last and the next); none for an empty slice */
    tensor *pos = tensor_arange((double)start, (double)start + (len ? (double)step * (double)len - 0.5 : 0), (double)step, TENSOR_I64);
    int64_t shape[TENSOR_MAX_DIMS];
    for (int d = 0; d < g->ndim; d++) shape[d] = d == dim ? len : 1;
    tensor *idx = tensor_expand(tensor_reshape(pos, g->ndim, shape), g->ndim, g->shape);
    return tensor_scatter_add(tensor_zeros(x->ndim, x->shape, g->dtype), dim, idx, g);
}
/* slice: ip[0] the dim, ip[1] the first index taken, ip[3] the step. */
static int tensor__derivative_slice(tensor__node *n, tensor *g, tensor **grads) {
    return TENSOR__OK(grads[0] = tensor__scatter_back(n, g, (int)n->ip[0], n->ip[1], n->ip[3]));
}
/* select: ip[0] the dim, ip[1] the index taken. */
static int tensor__derivative_select(tensor__node *n, tensor *g, tensor **grads) {
    int d = (int)n->ip[0];
    return TENSOR__OK(grads[0] = tensor__scatter_back(n, tensor_unsqueeze(g, d), d, n->ip[1], 1));
}
/* cat: each input gets its slice of g (ip[2] the dim). */
static int tensor__derivative_cat(tensor__node *n, tensor *g, tensor **grads) {
    int d = (int)n->ip[2];
    int64_t at = 0;
    for (int i = 0; i < n->n_in; i++) {
        int64_t len = n->saved[i]->ndim ? n->saved[i]->shape[n->saved[i]->ndim == g->ndim ? d : 0] : 0;
        if (n->saved[i]->ndim != g->ndim) continue; /* a skipped empty 1-D input */
        if (n->next[i] && !(grads[i] = tensor_slice(g, d, at, at + len, 1))) return 1;
        at += len;
    }
    return 0;
}
static int tensor__derivative_flip(tensor__node *n, tensor *g, tensor **grads) { return TENSOR__OK(grads[0] = tensor_flip(g, (int)n->ip[0])); }
/* repeat: n->ip[0..n_dims) are the repeats; g viewed as [r0, s0, r1, s1, ...] summed over the r's. */
static int tensor__derivative_repeat(tensor__node *n, tensor *g, tensor **grads) {
    tensor *x = TENSOR__X;
    int nd = n->n_dims, lead = nd - x->ndim, sum_dims[TENSOR_MAX_DIMS];
    if (2 * nd > TENSOR_MAX_DIMS) {
        /* too many dims to interleave: sum the repeats one dim at a time */
        tensor *r = tensor__alias("tensor_backward", g);
        for (int d = nd - 1; d >= 0 && r; d--) {
            int64_t s = d < lead ? 1 : x->shape[d - lead], shape[TENSOR_MAX_DIMS + 1] = {0};
            int k = 0;
            for (int e = 0; e < r->ndim; e++) {
                if (e == d) { shape[k++] = n->ip[d]; shape[k++] = s; } else shape[k++] = r->shape[e];
            }
            if (k > TENSOR_MAX_DIMS) return TENSOR__OK(tensor__fail("tensor_backward", "repeat over %d dims is not differentiable", nd));
            r = tensor_sum(tensor_reshape(r, k, shape), d, false);
        }
        return TENSOR__OK(grads[0] = tensor_reshape(r, x->ndim, x->shape));
    }
    int64_t shape[TENSOR_MAX_DIMS] = {0};
    for (int d = 0; d < nd; d++) {
        shape[2 * d] = n->ip[d];
        shape[2 * d + 1] = d < lead ? 1 : x->shape[d - lead];
        sum_dims[d] = 2 * d;
    }
    tensor *s = tensor_sum_dims(tensor_reshape(g, 2 * nd, shape), nd, sum_dims, false);
    return TENSOR__OK(grads[0] = tensor_reshape(s, x->ndim, x->shape));
}
/* pad: n->ip[0] is npad, n->pads the pads; padding by the negated pads crops g back. */
static int tensor__derivative_pad(tensor__node *n, tensor *g, tensor **grads) {
    int64_t pads[2 * TENSOR_MAX_DIMS];
    int np = (int)n->ip[0];
    for (int i = 0; i < np; i++) pads[i] = -n->pads[i];
    return TENSOR__OK(grads[0] = tensor_pad(g, np, pads, 0));
}
static int tensor__derivative_tril(tensor__node *n, tensor *g, tensor **grads) { return TENSOR__OK(grads[0] = tensor_tril(g, n->ip[0])); }
static int tensor__derivative_triu(tensor__node *n, tensor *g, tensor **grads) { return TENSOR__OK(grads[0] = tensor_triu(g, n->ip[0])); }
/* gather(t, dim, index): g scattered back. */
static int tensor__derivative_gather(tensor__node *n, tensor *g, tensor **grads) {
    tensor *x = TENSOR__X;
    return TENSOR__OK(grads[0] = tensor_scatter_add(tensor_zeros(x->ndim, x->shape, g->dtype), (int)n->ip[0], n->saved[1], g));
}
/* scatter_add(t, dim, index, src): t gets g, src gets g gathered at index; where src is larger
   than index its part outside index was not used (zeros padded after). */
static int tensor__derivative_scatter_add(tensor__node *n, tensor *g, tensor **grads) {
    tensor *index = n->saved[1], *src = n->saved[2];
    if (n->next[0] && !(grads[0] = tensor__alias("tensor_backward", g))) return 1;
    if (!n->next[2]) return 0;
    if (tensor__numel_of(index->ndim, index->shape) == 0) return TENSOR__OK(grads[2] = tensor_zeros(src->ndim, src->shape, g->dtype));
    tensor *gs = tensor_gather(g, (int)n->ip[0], index);
    int64_t pads[2 * TENSOR_MAX_DIMS], ishape[TENSOR_MAX_DIMS];
    bool same = true;
    for (int d = 0; d < src->ndim; d++) ishape[d] = index->ndim ? index->shape[d] : 1; /* a 0-dim index counts as [1] */
    if (index->ndim != src->ndim) gs = tensor_reshape(gs, src->ndim, ishape);
    for (int k = 0; k < src->ndim; k++) {
        int d = src->ndim - 1 - k;
        pads[2 * k] = 0;
        pads[2 * k + 1] = src->shape[d] - ishape[d];
        same &= pads[2 * k + 1] == 0;
    }
    return TENSOR__OK(grads[2] = same ? gs : tensor_pad(gs, 2 * src->ndim, pads, 0));
}
/* index_select(t, dim, index): g added back at index along dim. */
static int tensor__derivative_index_select(tensor__node *n, tensor *g, tensor **grads) {
    tensor *x = TENSOR__X, *index = n->saved[1];
    int d = (int)n->ip[0];
    if (x->ndim == 0) return TENSOR__OK(grads[0] = tensor_reshape(g, 0, NULL));
    int64_t shape[TENSOR_MAX_DIMS];
    for (int i = 0; i < g->ndim; i++) shape[i] = i == d ? g->shape[d] : 1;
    tensor *idx = tensor_expand(tensor_reshape(index, g->ndim, shape), g->ndim, g->shape);
    return TENSOR__OK(grads[0] = tensor_scatter_add(tensor_zeros(x->ndim, x->shape, g->dtype), d, idx, g));
}
static int tensor__derivative_masked_fill(tensor__node *n, tensor *g, tensor **grads) {
    return TENSOR__OK(grads[0] = tensor_masked_fill(g, n->saved[1], 0));
}
/* embedding(weight [V, D], indices): rows of g added into the rows they came from. */
static int tensor__derivative_embedding(tensor__node *n, tensor *g, tensor **grads) {
    tensor *w = TENSOR__X, *indices = n->saved[1];
    int64_t rows = tensor__numel_of(indices->ndim, indices->shape), d = w->shape[1];
    int64_t gshape[2] = {rows, d}, ishape[2] = {rows, 1};
    tensor *idx = tensor_expand(tensor_reshape(indices, 2, ishape), 2, gshape);
    return TENSOR__OK(grads[0] = tensor_scatter_add(tensor_zeros(2, w->shape, g->dtype), 0, idx, tensor_reshape(g, 2, gshape)));
}

/* ---- linear algebra and neural-network functions ---- */

/* matmul: ga = g b^T, gb = a^T g, with 1-D operands made 2-D first and batch dims summed away. */
/* [r, c] stored column by column (a transposed view of a contiguous [c, r]). */
static bool tensor__transposed_2d(const tensor *t) {
    return t->ndim == 2 && t->shape[0] > 1 && t->shape[1] > 1 && t->strides[0] == 1 && t->strides[1] == t->shape[0];
}
static int tensor__derivative_matmul(tensor__node *n, tensor *g, tensor **grads) {
    tensor *a = n->saved[0], *b = n->saved[1];
    tensor *a2 = a->ndim == 1 ? tensor_unsqueeze(a, 0) : tensor__alias("tensor_backward", a);
    tensor *b2 = b->ndim == 1 ? tensor_unsqueeze(b, 1) : tensor__alias("tensor_backward", b);
    tensor *g2 = tensor__alias("tensor_backward", g);
    if (a->ndim == 1) g2 = tensor_unsqueeze(g2, g2 ? (b->ndim == 1 ? 0 : g2->ndim - 1) : 0);
    if (b->ndim == 1) g2 = tensor_unsqueeze(g2, g2 ? g2->ndim : 0);
    if (!a2 || !b2 || !g2) return 1;
    /* A 2-D operand stored transposed (weight^T in linear) gets its gradient in the same layout, as
       PyTorch's mm backward does: the transpose's backward then hands a contiguous gradient to the
       leaf instead of one that must be copied element by element. */
    if (n->next[0] && tensor__transposed_2d(a2) && g2->ndim == 2 && b2->ndim == 2) {
        if (!(grads[0] = tensor_transpose(tensor_matmul(b2, tensor_transpose(g2, 0, 1)), 0, 1))) return 1;
    } else if (n->next[0]) {
        tensor *ga = tensor__sum_to(tensor_matmul(g2, tensor_transpose(b2, -1, -2)), a2->ndim, a2->shape);
        if (!(grads[0] = tensor_reshape(ga, a->ndim, a->shape))) return 1;
    }
    if (n->next[1] && tensor__transposed_2d(b2) && g2->ndim == 2 && a2->ndim == 2) {
        if (!(grads[1] = tensor_transpose(tensor_matmul(tensor_transpose(g2, 0, 1), a2), 0, 1))) return 1;
    } else if (n->next[1]) {
        tensor *gb = tensor__sum_to(tensor_matmul(tensor_transpose(a2, -1, -2), g2), b2->ndim, b2->shape);
        if (!(grads[1] = tensor_reshape(gb, b->ndim, b->shape))) return 1;
    }
    return 0;
}

/* softmax: s (g - sum(g s)); log_softmax: g - softmax sum(g). ip[0] is the dim, -1 for a 0-dim
   input (whose softmax is the constant 1). Without create_graph (grad mode off here) a fused kernel of >>nn does it in one pass. */
static int tensor__derivative_softmax(tensor__node *n, tensor *g, tensor **grads) {
    int d = (int)n->ip[0];
    if (d < 0) return TENSOR__OK(grads[0] = tensor_mul_scalar(g, 0));
    int fused = tensor__no_grad ? tensor__softmax_backward("tensor_backward", TENSOR__X, g, d, false, &grads[0]) : 0;
    if (fused) return fused < 0;
    tensor *s = tensor_softmax(TENSOR__X, d);
    return TENSOR__OK(grads[0] = tensor_mul(s, tensor_sub(g, tensor_sum(tensor_mul(g, s), d, true))));
}
static int tensor__derivative_log_softmax(tensor__node *n, tensor *g, tensor **grads) {
    int d = (int)n->ip[0];
    if (d < 0) return TENSOR__OK(grads[0] = tensor_mul_scalar(g, 0));
    int fused = tensor__no_grad ? tensor__softmax_backward("tensor_backward", TENSOR__X, g, d, true, &grads[0]) : 0;
    if (fused) return fused < 0;
    tensor *s = tensor_softmax(TENSOR__X, d);
    return TENSOR__OK(grads[0] = tensor_sub(g, tensor_mul(s, tensor_sum(g, d, true))));
}

/* layer_norm over the last dim: with xhat = (x - mean) rstd and gh = g w,
   gx = rstd (gh - mean(gh) - xhat mean(gh xhat)), gw = g xhat, gb = g (summed to [C]). Without
   create_graph, the fused kernel of >>nn (tensor__norm_backward) computes all three in one pass. */
static int tensor__derivative_layer_norm(tensor__node *n, tensor *g, tensor **grads) {
    tensor *x = n->saved[0], *w = n->saved[1];
    int fused = tensor__no_grad ? tensor__norm_backward("tensor_backward", true, x, w, g, n->p[0], n->next[0] ? &grads[0] : NULL,
                                                        n->next[1] ? &grads[1] : NULL, n->next[2] ? &grads[2] : NULL) : 0;
    if (fused) return fused < 0;
    tensor *mu = tensor_mean(x, -1, true);
    tensor *rstd = tensor_rsqrt(tensor_add_scalar(tensor_var(x, -1, 0, true), n->p[0]));
    tensor *xhat = tensor_mul(tensor_sub(x, mu), rstd);
    tensor *gh = w ? tensor_mul(g, w) : tensor__alias("tensor_backward", g);
    if (n->next[0]) {
        tensor *inner = tensor_sub(tensor_sub(gh, tensor_mean(gh, -1, true)), tensor_mul(xhat, tensor_mean(tensor_mul(gh, xhat), -1, true)));
        if (!(grads[0] = tensor_mul(rstd, inner))) return 1;
    }
    if (n->next[1] && !(grads[1] = tensor_mul(g, xhat))) return 1;
    if (n->next[2] && !(grads[2] = tensor__alias("tensor_backward", g))) return 1;
    return 0;
}
/* rms_norm: with r = 1 / sqrt(mean(x^2) + eps) and gh = g w, gx = r (gh - x r^2 mean(gh x)), gw = g x r
   (fused without create_graph, as layer_norm). */
static int tensor__derivative_rms_norm(tensor__node *n, tensor *g, tensor **grads) {
    tensor *x = n->saved[0], *w = n->saved[1];
    int fused = tensor__no_grad ? tensor__norm_backward("tensor_backward", false, x, w, g, n->p[0], n->next[0] ? &grads[0] : NULL,
                                                        n->next[1] ? &grads[1] : NULL, NULL) : 0;
    if (fused) return fused < 0;
    tensor *r = tensor_rsqrt(tensor_add_scalar(tensor_mean(tensor_square(x), -1, true), n->p[0]));
    tensor *gh = w ? tensor_mul(g, w) : tensor__alias("tensor_backward", g);
    if (n->next[0]) {
        tensor *inner = tensor_sub(gh, tensor_mul(tensor_mul(x, tensor_square(r)), tensor_mean(tensor_mul(gh, x), -1, true)));
        if (!(grads[0] = tensor_mul(r, inner))) return 1;
    }
    if (n->next[1] && !(grads[1] = tensor_mul(g, tensor_mul(x, r)))) return 1;
    return 0;
}

/* Class targets t with ignore_index entries, for a gradient g along class dim cdim: idx (t with
   the ignored entries 0, any valid index, unsqueezed at cdim), keep_w (1 where kept, 0 where
   ignored, in g's dtype, unsqueezed) and k, the number kept. false on error. */
static bool tensor__class_targets(tensor *t, tensor *g, int cdim, tensor **idx, tensor **keep_w, double *k) {
    tensor *ignored = tensor__cmp_scalar(TENSOR_OP_eq, t, TENSOR__IGNORE_INDEX);
    tensor *kept = ignored ? tensor_logical_not(ignored) : NULL;
    tensor *count = kept ? tensor_sum_all(kept) : NULL;
    if (!count) return false;
    *k = tensor_item(count);
    *idx = tensor_unsqueeze(tensor_masked_fill(t, ignored, 0), cdim);
    *keep_w = tensor_unsqueeze(tensor__mask_float(kept, g), cdim);
    return *idx && *keep_w;
}

/* nll_loss (mean over the targets that are not ignore_index): -g / count at each kept target's
   position along the class dim; ignored targets get nothing (all ignored: zeros, as PyTorch). */
static int tensor__derivative_nll_loss(tensor__node *n, tensor *g, tensor **grads) {
    tensor *lp = n->saved[0], *target = n->saved[1], *idx, *keep_w;
    int class_dim = lp->ndim == 1 ? 0 : 1;
    double k;
    if (!tensor__class_targets(target, g, class_dim, &idx, &keep_w, &k)) return 1;
    tensor *src = tensor_mul(tensor_div_scalar(tensor_neg(g), k > 0 ? k : 1), keep_w);
    if (!src) return 1;
    return TENSOR__OK(grads[0] = tensor_scatter_add(tensor_zeros(lp->ndim, lp->shape, g->dtype), class_dim, idx, src));
}

/* cross_entropy (in = {logits, targets}, ip[0] 1 for probability targets): without create_graph
   the fused kernel of >>nn writes (softmax - onehot) g / count directly. With create_graph the same
   gradient is composed of differentiable ops: for class targets (softmax(x) keep - onehot) g / count,
   keep 0 on ignore_index rows; for probabilities p, gx = (softmax(x) sum(p) - p) g / rows and
   gp = -log_softmax(x) g / rows. */
static int tensor__derivative_cross_entropy(tensor__node *n, tensor *g, tensor **grads) {
    tensor *x = n->saved[0], *t = n->saved[1];
    bool prob = n->ip[0] != 0;
    int cdim = x->ndim == 1 ? 0 : 1;
    if (tensor__no_grad)
        return tensor__cross_entropy_backward("tensor_backward", x, t, prob, g, &grads[0], prob && n->next[1] ? &grads[1] : NULL) != 0;
    if (prob) {
        int64_t C = x->shape[cdim], rows = C ? tensor__numel_of(x->ndim, x->shape) / C : 0;
        tensor *scale = tensor_div_scalar(g, (double)rows);
        if (n->next[0] && !(grads[0] = tensor_mul(tensor_sub(tensor_mul(tensor_softmax(x, cdim), tensor_sum(t, cdim, true)), t), scale))) return 1;
        if (n->next[1] && !(grads[1] = tensor_mul(tensor_neg(tensor_log_softmax(x, cdim)), scale))) return 1;
        return 0;
    }
    tensor *idx, *keep_w;
    double k;
    if (!tensor__class_targets(t, g, cdim, &idx, &keep_w, &k)) return 1;
    tensor *onehot = tensor_scatter_add(tensor_zeros(x->ndim, x->shape, g->dtype), cdim, idx, keep_w);
    tensor *diff = onehot ? tensor_sub(tensor_mul(tensor_softmax(x, cdim), keep_w), onehot) : NULL;
    return TENSOR__OK(grads[0] = tensor_mul(diff, tensor_div_scalar(g, k > 0 ? k : 1)));
}

/* dropout: the kernel's mask (0 or 1 / (1 - p)), kept in n->extra. */
static int tensor__derivative_dropout(tensor__node *n, tensor *g, tensor **grads) {
    if (!n->extra) return TENSOR__OK(grads[0] = tensor__alias("tensor_backward", g)); /* identity (not training) */
    return TENSOR__OK(grads[0] = tensor_mul(g, n->extra));
}

/* conv and pooling: fused backward kernels of >>nn (tensor__conv_backward, tensor__pool_backward),
   not written with differentiable ops, so a graph of them cannot be differentiated again: with
   create_graph they refuse rather than give a silently wrong second derivative. Call layout:
   in = {x, w, bias}, ip = {stride, padding, dilation, groups}; pooling in = {x}, ip = {kernel,
   stride, padding}. */
static bool tensor__first_order_only(tensor__node *n) {
    if (tensor__no_grad) return true;
    tensor__fail("tensor_autograd_grad", "create_graph through %s is not supported (its backward is a fused kernel)", tensor__ops[n->op].fn);
    return false;
}
static int tensor__derivative_conv(tensor__node *n, tensor *g, tensor **grads, int sd) {
    if (!tensor__first_order_only(n)) return 1;
    return tensor__conv_backward("tensor_backward", sd, n->saved[0], n->saved[1], g, n->ip, n->next[0] ? &grads[0] : NULL,
                                 n->next[1] ? &grads[1] : NULL, n->next[2] ? &grads[2] : NULL);
}
static int tensor__derivative_conv2d(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_conv(n, g, grads, 2); }
static int tensor__derivative_conv1d(tensor__node *n, tensor *g, tensor **grads) { return tensor__derivative_conv(n, g, grads, 1); }
static int tensor__derivative_max_pool2d(tensor__node *n, tensor *g, tensor **grads) {
    if (!tensor__first_order_only(n)) return 1;
    return TENSOR__OK(grads[0] = tensor__pool_backward("tensor_backward", true, n->saved[0], g, n->ip));
}
static int tensor__derivative_avg_pool2d(tensor__node *n, tensor *g, tensor **grads) {
    if (!tensor__first_order_only(n)) return 1;
    return TENSOR__OK(grads[0] = tensor__pool_backward("tensor_backward", false, n->saved[0], g, n->ip));
}
/* ==== end tensor_autograd.h ==== */
/* ==== begin generator/parts/optim.h ==== */
// >>init ---------------------------------------------------------------------------------------
/* In-place initializers (torch.nn.init): they write the storage directly, like PyTorch's under
   no_grad, so they work on leaves that require grad. */
/* t = lo + scale * U[0, 1) (or lo + scale * N(0, 1)), in place. */
static tensor *tensor__init_fill(const char *fn, tensor *t, double lo, double scale, bool normal) {
    TENSOR__CHECK_ARG(fn, t);
    if (!tensor__is_float(t->dtype)) return tensor__fail(fn, "needs a floating tensor, got %s", tensor__dtype_names[t->dtype]);
    if (t->storage->device != TENSOR_CPU) return tensor__fail(fn, "only CPU tensors can be initialized in place");
    int kind = normal ? TENSOR__RNG_NORMAL1 : TENSOR__RNG_U53;
    int64_t n = tensor__numel_of(t->ndim, t->shape);
    if (tensor_is_contiguous(t)) {
        tensor__rng_fill_run(kind, t->dtype, tensor__data(t), n, lo, scale, 0, NULL);
    } else { /* a view: the same values, in row-major order, through a contiguous copy */
        tensor *tmp = tensor__new(fn, t->ndim, t->shape, t->dtype, TENSOR_CPU);
        if (!tmp) return NULL;
        tensor__rng_fill_run(kind, t->dtype, tensor__data(tmp), n, lo, scale, 0, NULL);
        tensor__copy_into(t, tmp);
        tensor_free(tmp);
    }
    t->storage->version++;
    return t;
}

TENSOR_API tensor *tensor_uniform_(tensor *t, double lo, double hi) {
    if (!(lo <= hi)) return tensor__fail("tensor_uniform_", "lo %g must not exceed hi %g", lo, hi);
    return tensor__init_fill("tensor_uniform_", t, lo, hi - lo, false);
}
TENSOR_API tensor *tensor_normal_(tensor *t, double mean, double std) {
    if (!(std >= 0)) return tensor__fail("tensor_normal_", "std must be non-negative, got %g", std);
    return tensor__init_fill("tensor_normal_", t, mean, std, true);
}
/* fan_in = size(1) * receptive field, fan_out = size(0) * receptive field (torch.nn.init). */
static bool tensor__fans(const char *fn, tensor *t, double *fan_in, double *fan_out) {
    if (!t) { tensor__null_arg(fn, "t"); return false; }
    if (t->ndim < 2) { tensor__fail(fn, "fan in and fan out need at least 2 dims, got shape %s", tensor__shape_of(t)); return false; }
    double rf = 1;
    for (int d = 2; d < t->ndim; d++) rf *= (double)t->shape[d];
    *fan_in = (double)t->shape[1] * rf;
    *fan_out = (double)t->shape[0] * rf;
    return true;
}
TENSOR_API tensor *tensor_kaiming_uniform_(tensor *t, double a) {
    const char *fn = "tensor_kaiming_uniform_";
    double fan_in, fan_out;
    if (!tensor__fans(fn, t, &fan_in, &fan_out)) return NULL;
    if (fan_in == 0) return tensor__fail(fn, "cannot initialize a tensor with zero fan in, shape %s", tensor__shape_of(t));
    double bound = sqrt(2.0 / (1.0 + a * a)) * sqrt(3.0 / fan_in); /* gain of leaky_relu(a) */
    return tensor__init_fill(fn, t, -bound, 2 * bound, false);
}
TENSOR_API tensor *tensor_xavier_uniform_(tensor *t, double gain) {
    const char *fn = "tensor_xavier_uniform_";
    double fan_in, fan_out;
    if (!tensor__fans(fn, t, &fan_in, &fan_out)) return NULL;
    if (fan_in + fan_out == 0) return tensor__fail(fn, "cannot initialize a tensor with zero fans, shape %s", tensor__shape_of(t));
    double bound = gain * sqrt(6.0 / (fan_in + fan_out));
    return tensor__init_fill(fn, t, -bound, 2 * bound, false);
}

// >>optim --------------------------------------------------------------------------------------
/* Optimizers with torch.optim's update rules. Each keeps aliases of its parameters (so .grad is
   found through the leaves' accumulators) and its state as internal contiguous tensors, made on a
   parameter's first gradient: f32 state for f32 parameters and f64 for f64, as torch.optim; f16 and
   bf16 parameters also get f32 state (torch would keep f16: exp_avg_sq = (1 - beta2) g^2 underflows
   there for gradients below about 1e-2).
   The update: contiguous f32 parameters with f32 gradients take the vector kernel of simd.h
   (tensor__vec_optim_fn: f32 arithmetic, as torch.optim's CPU kernels), split over the thread
   pool; everything else, and every parameter under tensor_set_reference_kernels(true), takes the
   reference loop below, which computes in double and rounds once into each stored value. Every
   element is independent, so neither depends on the thread count. The kinds (TENSOR__SGD, ...) are
   defined in simd.h, next to the kernel's constants. */
struct tensor_optim {
    int kind, n;
    tensor **params, **state1, **state2; /* momentum buffer / exp_avg, exp_avg_sq */
    double lr, momentum, beta1, beta2, eps, weight_decay;
    bool nesterov;
    int64_t *steps; /* [n] per parameter: counted from its first gradient, as torch.optim's state['step'] */
};

static tensor_optim *tensor__optim_new(const char *fn, int kind, int n, tensor *const *params) {
    if (n <= 0 || !params) return (tensor_optim *)tensor__fail(fn, "needs n > 0 parameters, got %d", n);
    for (int i = 0; i < n; i++) {
        if (!params[i]) return (tensor_optim *)tensor__null_arg(fn, "params[i]");
        if (!tensor__is_float(params[i]->dtype)) return (tensor_optim *)tensor__fail(fn, "parameter %d is %s, not floating", i, tensor__dtype_names[params[i]->dtype]);
        if (!params[i]->requires_grad || !tensor__is_leaf(params[i])) return (tensor_optim *)tensor__fail(fn, "parameter %d is not a leaf that requires grad", i);
        if (params[i]->storage->device != TENSOR_CPU) return (tensor_optim *)tensor__fail(fn, "parameter %d is not on the CPU", i);
        if (!tensor__grad_edge(params[i])) return (tensor_optim *)tensor__fail(fn, "out of memory making the gradient accumulator of parameter %d", i);
    }
    tensor_optim *o = (tensor_optim *)TENSOR__MALLOC(sizeof *o);
    tensor **arrays = (tensor **)TENSOR__MALLOC(sizeof(tensor *) * 3 * (size_t)n);
    int64_t *steps = (int64_t *)TENSOR__MALLOC(sizeof(int64_t) * (size_t)n);
    if (!o || !arrays || !steps) {
        if (o) TENSOR_FREE(o);
        if (arrays) TENSOR_FREE(arrays);
        if (steps) TENSOR_FREE(steps);
        return (tensor_optim *)tensor__fail(fn, "out of memory");
    }
    memset(o, 0, sizeof *o);
    memset(arrays, 0, sizeof(tensor *) * 3 * (size_t)n);
    memset(steps, 0, sizeof(int64_t) * (size_t)n);
    o->steps = steps;
    o->kind = kind;
    o->n = n;
    o->params = arrays;
    o->state1 = arrays + n;
    o->state2 = arrays + 2 * n;
    for (int i = 0; i < n; i++) {
        o->params[i] = tensor__alias(fn, params[i]);
        if (!o->params[i]) { tensor_optim_free(o); return NULL; }
        tensor__make_internal(o->params[i]);
    }
    return o;
}

TENSOR_API tensor_optim *tensor_optim_sgd(int n, tensor *const *params, double lr, double momentum, double weight_decay, bool nesterov) {
    const char *fn = "tensor_optim_sgd";
    if (!(lr >= 0) || !(momentum >= 0) || !(weight_decay >= 0)) return (tensor_optim *)tensor__fail(fn, "lr %g, momentum %g and weight_decay %g must be non-negative", lr, momentum, weight_decay);
    if (nesterov && momentum <= 0) return (tensor_optim *)tensor__fail(fn, "nesterov needs a positive momentum");
    tensor_optim *o = tensor__optim_new(fn, TENSOR__SGD, n, params);
    if (!o) return NULL;
    o->lr = lr;
    o->momentum = momentum;
    o->weight_decay = weight_decay;
    o->nesterov = nesterov;
    return o;
}

static tensor_optim *tensor__adam_new(const char *fn, int kind, int n, tensor *const *params, double lr, double beta1, double beta2, double eps, double weight_decay) {
    if (!(lr >= 0) || !(eps >= 0) || !(weight_decay >= 0)) return (tensor_optim *)tensor__fail(fn, "lr %g, eps %g and weight_decay %g must be non-negative", lr, eps, weight_decay);
    if (!(beta1 >= 0 && beta1 < 1) || !(beta2 >= 0 && beta2 < 1)) return (tensor_optim *)tensor__fail(fn, "betas (%g, %g) must be in [0, 1)", beta1, beta2);
    tensor_optim *o = tensor__optim_new(fn, kind, n, params);
    if (!o) return NULL;
    o->lr = lr;
    o->beta1 = beta1;
    o->beta2 = beta2;
    o->eps = eps;
    o->weight_decay = weight_decay;
    return o;
}
TENSOR_API tensor_optim *tensor_optim_adam(int n, tensor *const *params, double lr, double beta1, double beta2, double eps, double weight_decay) {
    return tensor__adam_new("tensor_optim_adam", TENSOR__ADAM, n, params, lr, beta1, beta2, eps, weight_decay);
}
TENSOR_API tensor_optim *tensor_optim_adamw(int n, tensor *const *params, double lr, double beta1, double beta2, double eps, double weight_decay) {
    return tensor__adam_new("tensor_optim_adamw", TENSOR__ADAMW, n, params, lr, beta1, beta2, eps, weight_decay);
}

/* ---- the reference update: any dtype and layout, in double ---- */
typedef struct { const tensor_optim *o; double bias1, bias2; bool first; tensor_dtype pd, gd, sd; } tensor__step_ctx;

/* One row: ptr[0] the parameter, ptr[1] its gradient, then the state tensors the kind has (SGD
   with momentum: the buffer; Adam/AdamW: exp_avg, exp_avg_sq). */
static void tensor__step_loop(char **ptr, const int64_t *st, int64_t count, void *vctx) {
    const tensor__step_ctx *c = (const tensor__step_ctx *)vctx;
    const tensor_optim *o = c->o;
    for (int64_t i = 0; i < count; i++) {
        char *pp = ptr[0] + i * st[0];
        double p = tensor__load_f64(pp, c->pd), g = tensor__load_f64(ptr[1] + i * st[1], c->gd);
        if (o->kind == TENSOR__SGD) {
            if (o->weight_decay != 0) g += o->weight_decay * p;
            if (o->momentum != 0) {
                char *pb = ptr[2] + i * st[2];
                double buf = c->first ? g : o->momentum * tensor__load_f64(pb, c->sd) + g; /* dampening 0 */
                tensor__store_f64(pb, c->sd, buf);
                buf = tensor__load_f64(pb, c->sd); /* the stored (rounded) buffer, as torch uses */
                g = o->nesterov ? g + o->momentum * buf : buf;
            }
            p -= o->lr * g;
        } else {
            char *pm = ptr[2] + i * st[2], *pv = ptr[3] + i * st[3];
            if (o->kind == TENSOR__ADAMW) p *= 1 - o->lr * o->weight_decay;
            else if (o->weight_decay != 0) g += o->weight_decay * p;
            tensor__store_f64(pm, c->sd, o->beta1 * tensor__load_f64(pm, c->sd) + (1 - o->beta1) * g);
            tensor__store_f64(pv, c->sd, o->beta2 * tensor__load_f64(pv, c->sd) + (1 - o->beta2) * g * g);
            double m = tensor__load_f64(pm, c->sd), v = tensor__load_f64(pv, c->sd);
            double denom = sqrt(v) / sqrt(c->bias2) + o->eps;
            p -= o->lr / c->bias1 * m / denom;
        }
        tensor__store_f64(pp, c->pd, p);
    }
}

/* ---- the vector kernel over the thread pool ---- */
/* Elements per block: thread ranges start at block boundaries (whole vectors and cache lines, so
   two threads never write the same line). A parameter of up to TENSOR__GRAIN_ELEMENTWISE elements
   stays on the calling thread, as the elementwise ops do (Adam runs about 0.4 ns per element on
   one AVX-512 core: 13 us there, against a pool wake-up of a few us). */
#define TENSOR__OPTIM_BLOCK 256
#define TENSOR__OPTIM_GRAIN (TENSOR__GRAIN_ELEMENTWISE / TENSOR__OPTIM_BLOCK)
typedef struct {
    tensor__vec_optim_fn fn;
    const tensor__optim_consts *k;
    float *p, *s1, *s2;
    const float *g;
    int64_t n;
} tensor__optim_task;
static void tensor__optim_blocks(int64_t begin, int64_t end, void *vtask) {
    const tensor__optim_task *t = (const tensor__optim_task *)vtask;
    int64_t from = begin * TENSOR__OPTIM_BLOCK, to = end * TENSOR__OPTIM_BLOCK < t->n ? end * TENSOR__OPTIM_BLOCK : t->n;
    t->fn(t->p + from, t->g + from, t->s1 ? t->s1 + from : NULL, t->s2 ? t->s2 + from : NULL, to - from, t->k);
}

/* The kernel for this parameter, or NULL where the reference loop must run. */
static tensor__vec_optim_fn tensor__optim_kernel(const tensor *p, const tensor *g, tensor_dtype sd) {
    if (tensor__reference_kernels || p->dtype != TENSOR_F32 || g->dtype != TENSOR_F32 || sd != TENSOR_F32) return NULL;
    if (!tensor__contiguous(p) || !tensor__contiguous(g)) return NULL; /* the state is always contiguous */
    const tensor__simd_isa *v = tensor__simd();
    return v ? v->optim : NULL;
}

TENSOR_API int tensor_optim_step(tensor_optim *o) {
    const char *fn = "tensor_optim_step";
    if (!o) { tensor__null_arg(fn, "o"); return -1; }
    tensor__step_ctx c;
    c.o = o;
    int n_state = o->kind != TENSOR__SGD ? 2 : o->momentum != 0 ? 1 : 0;
    /* every new state first, so a step that runs out of memory has changed no parameter */
    bool fresh[64], *first = o->n <= 64 ? fresh : (bool *)TENSOR__MALLOC(sizeof(bool) * (size_t)o->n);
    if (!first) { tensor__fail(fn, "out of memory"); return -1; }
    for (int i = 0; i < o->n; i++) {
        tensor *p = o->params[i];
        first[i] = n_state > 0 && o->state1[i] == NULL;
        for (int k = 0; k < n_state && tensor_grad(p); k++) {
            tensor **s = k ? &o->state2[i] : &o->state1[i];
            if (!*s && !(*s = tensor__make_internal(tensor_zeros(p->ndim, p->shape, p->dtype == TENSOR_F64 ? TENSOR_F64 : TENSOR_F32)))) {
                for (int j = 0; j <= i; j++) /* drop the states made here: the next step makes them anew */
                    if (first[j]) { tensor_free(o->state1[j]); tensor_free(o->state2[j]); o->state1[j] = o->state2[j] = NULL; }
                if (first != fresh) TENSOR_FREE(first);
                return -1;
            }
        }
    }
    for (int i = 0; i < o->n; i++) {
        tensor *p = o->params[i], *g = tensor_grad(p);
        if (!g) continue; /* a parameter that got no gradient is left alone, as in PyTorch */
        tensor_dtype sd = p->dtype == TENSOR_F64 ? TENSOR_F64 : TENSOR_F32;
        c.first = first[i];
        o->steps[i]++;
        c.bias1 = 1 - pow(o->beta1, (double)o->steps[i]);
        c.bias2 = 1 - pow(o->beta2, (double)o->steps[i]);
        c.pd = p->dtype;
        c.gd = g->dtype;
        c.sd = sd;
        int64_t numel = tensor__numel_of(p->ndim, p->shape);
        tensor__vec_optim_fn kernel = tensor__optim_kernel(p, g, sd);
        if (kernel && numel > 0) {
            TENSOR__PATH_TAKEN(optim_simd);
            tensor__optim_consts k;
            memset(&k, 0, sizeof k);
            k.kind = o->kind;
            k.first = c.first;
            k.nesterov = o->nesterov;
            k.decay = o->weight_decay != 0;
            k.neg_lr = (float)-o->lr;
            k.momentum = (float)o->momentum;
            k.weight_decay = (float)o->weight_decay;
            k.keep = (float)(1 - o->lr * o->weight_decay);
            k.beta1 = (float)o->beta1;
            k.one_minus_beta1 = (float)(1 - o->beta1);
            k.beta2 = (float)o->beta2;
            k.one_minus_beta2 = (float)(1 - o->beta2);
            k.sqrt_bias2 = (float)sqrt(c.bias2);
            k.eps = (float)o->eps;
            k.step_size = (float)(o->lr / c.bias1);
            tensor__optim_task t;
            t.fn = kernel;
            t.k = &k;
            t.p = (float *)tensor__data(p);
            t.g = (const float *)tensor__data(g);
            t.s1 = n_state > 0 ? (float *)tensor__data(o->state1[i]) : NULL;
            t.s2 = n_state > 1 ? (float *)tensor__data(o->state2[i]) : NULL;
            t.n = numel;
            tensor__parallel_for((numel + TENSOR__OPTIM_BLOCK - 1) / TENSOR__OPTIM_BLOCK, TENSOR__OPTIM_GRAIN, tensor__optim_blocks, &t);
        } else {
            tensor *ops[4] = {p, g, o->state1[i], o->state2[i]};
            tensor__iter it;
            tensor__iter_init(&it, 2 + n_state, ops, p->ndim, p->shape);
            tensor__iter_run(&it, tensor__step_loop, &c);
        }
        p->storage->version++;
    }
    if (first != fresh) TENSOR_FREE(first);
    return 0;
}

TENSOR_API void tensor_optim_zero_grad(tensor_optim *o) {
    if (!o) return;
    for (int i = 0; i < o->n; i++) tensor_zero_grad(o->params[i]);
}
TENSOR_API void tensor_optim_set_lr(tensor_optim *o, double lr) {
    if (!o) { tensor__null_arg("tensor_optim_set_lr", "o"); return; }
    if (!(lr >= 0)) { tensor__fail("tensor_optim_set_lr", "lr must be non-negative, got %g", lr); return; }
    o->lr = lr;
}
TENSOR_API void tensor_optim_free(tensor_optim *o) {
    if (!o) return;
    for (int i = 0; i < 3 * o->n; i++) tensor_free(o->params[i]);
    TENSOR_FREE(o->params);
    TENSOR_FREE(o->steps);
    TENSOR_FREE(o);
}

/* Scales every gradient by max_norm / (total + 1e-6) when the total 2-norm exceeds max_norm
   (torch.nn.utils.clip_grad_norm_). Returns the total norm before clipping, or -1 on error. */
TENSOR_API double tensor_clip_grad_norm(int n, tensor *const *params, double max_norm) {
    const char *fn = "tensor_clip_grad_norm";
    if (n < 0 || (n > 0 && !params)) { tensor__fail(fn, "needs n >= 0 parameters, got %d", n); return -1; }
    if (!(max_norm >= 0)) { tensor__fail(fn, "max_norm must be non-negative, got %g", max_norm); return -1; }
    double total = 0;
    for (int i = 0; i < n; i++) {
        if (!params[i]) { tensor__null_arg(fn, "params[i]"); return -1; }
        tensor *g = tensor_grad(params[i]);
        if (!g) continue;
        int64_t k = tensor__numel_of(g->ndim, g->shape);
        tensor *c = tensor__contiguous_copy(fn, g, TENSOR_F64);
        if (!c) return -1;
        const double *v = (const double *)tensor__data(c);
        for (int64_t j = 0; j < k; j++) total += v[j] * v[j];
        tensor_free(c);
    }
    total = sqrt(total);
    double coef = max_norm / (total + 1e-6);
    if (coef < 1)
        for (int i = 0; i < n; i++) {
            tensor *g = tensor_grad(params[i]);
            if (!g) continue;
            bool was = tensor_set_grad_enabled(false);
            bool ok = tensor_mul_scalar_(g, coef) != NULL; /* returns g itself */
            tensor_set_grad_enabled(was);
            if (!ok) return -1;
        }
    return total;
}
/* ==== end generator/parts/optim.h ==== */
/* ==== begin generator/parts/files.h ==== */
// >>dict ---------------------------------------------------------------------------------------
/* tensor_dict: named tensors in insertion (or file) order, plus a string map of metadata. Each entry
   holds an internal alias of the tensor it was given (its own reference, as an optimizer holds its
   parameters), so the caller may free theirs. Lookup goes through an open-addressing hash index
   of the names, so a file with a million entries loads in linear time. */
struct tensor_dict {
    int n, cap;
    char **names;
    tensor **ts;
    int *index;    /* [index_cap]: entry + 1, 0 empty; index_cap a power of two > 2 n */
    int index_cap;
    int n_meta, meta_cap;
    char **meta_keys, **meta_values;
};

static uint64_t tensor__hash_str(const char *s) { /* FNV-1a */
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++) h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static char *tensor__strdup(const char *s) {
    size_t n = strlen(s) + 1;
    char *r = (char *)TENSOR__MALLOC(n);
    if (r) memcpy(r, s, n);
    return r;
}

/* The entry named name, or -1; *slot gets the index slot where it is or would go. */
static int tensor__dict_find(const tensor_dict *d, const char *name, int *slot) {
    if (!d->index_cap) { if (slot) *slot = -1; return -1; }
    unsigned mask = (unsigned)d->index_cap - 1, i = (unsigned)tensor__hash_str(name) & mask;
    for (;; i = (i + 1) & mask) {
        int e = d->index[i];
        if (!e || !strcmp(d->names[e - 1], name)) {
            if (slot) *slot = (int)i;
            return e - 1;
        }
    }
}

static bool tensor__dict_grow(tensor_dict *d) {
    if (d->n >= INT_MAX / 4) return false;
    int cap = d->cap ? d->cap * 2 : 16;
    char **names = (char **)TENSOR__MALLOC(sizeof(char *) * (size_t)cap);
    tensor **ts = (tensor **)TENSOR__MALLOC(sizeof(tensor *) * (size_t)cap);
    int icap = 4 * cap, *index = (int *)TENSOR__MALLOC(sizeof(int) * (size_t)icap);
    if (!names || !ts || !index) {
        if (names) TENSOR_FREE(names);
        if (ts) TENSOR_FREE(ts);
        if (index) TENSOR_FREE(index);
        return false;
    }
    if (d->n) {
        memcpy(names, d->names, sizeof(char *) * (size_t)d->n);
        memcpy(ts, d->ts, sizeof(tensor *) * (size_t)d->n);
    }
    if (d->names) { TENSOR_FREE(d->names); TENSOR_FREE(d->ts); TENSOR_FREE(d->index); }
    d->names = names;
    d->ts = ts;
    d->index = index;
    d->index_cap = icap;
    d->cap = cap;
    memset(index, 0, sizeof(int) * (size_t)icap);
    for (int e = 0; e < d->n; e++) {
        int slot;
        tensor__dict_find(d, d->names[e], &slot);
        d->index[slot] = e + 1;
    }
    return true;
}

TENSOR_API tensor_dict *tensor_dict_new(void) {
    tensor_dict *d = (tensor_dict *)TENSOR__MALLOC(sizeof *d);
    if (!d) return (tensor_dict *)tensor__fail("tensor_dict_new", "out of memory");
    memset(d, 0, sizeof *d);
    return d;
}

/* Adds (or replaces) name -> an alias of t that the dict owns; 0, or -1 with an error. */
static int tensor__dict_put(const char *fn, tensor_dict *d, const char *name, tensor *t) {
    if (!d) { tensor__null_arg(fn, "d"); return -1; }
    if (!name) { tensor__null_arg(fn, "name"); return -1; }
    if (!t) { tensor__null_arg(fn, "t"); return -1; }
    tensor *a = tensor__make_internal(tensor__alias(fn, t));
    if (!a) return -1;
    int slot, e = tensor__dict_find(d, name, &slot);
    if (e >= 0) {
        tensor_free(d->ts[e]);
        d->ts[e] = a;
        return 0;
    }
    char *copy = tensor__strdup(name);
    if (!copy || (d->n == d->cap && !tensor__dict_grow(d))) {
        if (copy) TENSOR_FREE(copy);
        tensor_free(a);
        tensor__fail(fn, "out of memory adding '%.200s'", name);
        return -1;
    }
    tensor__dict_find(d, name, &slot); /* the index may have been rebuilt */
    d->names[d->n] = copy;
    d->ts[d->n] = a;
    d->index[slot] = ++d->n;
    return 0;
}

TENSOR_API int tensor_dict_set(tensor_dict *d, const char *name, tensor *t) { return tensor__dict_put("tensor_dict_set", d, name, t); }

TENSOR_API tensor *tensor_dict_get(const tensor_dict *d, const char *name) {
    const char *fn = "tensor_dict_get";
    TENSOR__CHECK_ARG(fn, d);
    TENSOR__CHECK_ARG(fn, name);
    int e = tensor__dict_find(d, name, NULL);
    return e >= 0 ? d->ts[e] : tensor__fail(fn, "no tensor named '%.200s'", name);
}
TENSOR_API bool tensor_dict_contains(const tensor_dict *d, const char *name) { return d && name && tensor__dict_find(d, name, NULL) >= 0; }
TENSOR_API int tensor_dict_len(const tensor_dict *d) { return d ? d->n : 0; }
TENSOR_API const char *tensor_dict_name(const tensor_dict *d, int i) {
    if (!d) return (const char *)tensor__null_arg("tensor_dict_name", "d");
    if (i < 0 || i >= d->n) return (const char *)tensor__fail("tensor_dict_name", "index %d is out of range for %d entries", i, d->n);
    return d->names[i];
}
TENSOR_API tensor *tensor_dict_at(const tensor_dict *d, int i) {
    TENSOR__CHECK_ARG("tensor_dict_at", d);
    if (i < 0 || i >= d->n) return tensor__fail("tensor_dict_at", "index %d is out of range for %d entries", i, d->n);
    return d->ts[i];
}

TENSOR_API int tensor_dict_set_metadata(tensor_dict *d, const char *key, const char *value) {
    const char *fn = "tensor_dict_set_metadata";
    if (!d) { tensor__null_arg(fn, "d"); return -1; }
    if (!key) { tensor__null_arg(fn, "key"); return -1; }
    if (!value) { tensor__null_arg(fn, "value"); return -1; }
    char *v = tensor__strdup(value);
    if (!v) { tensor__fail(fn, "out of memory"); return -1; }
    for (int i = 0; i < d->n_meta; i++)
        if (!strcmp(d->meta_keys[i], key)) {
            TENSOR_FREE(d->meta_values[i]);
            d->meta_values[i] = v;
            return 0;
        }
    char *k = tensor__strdup(key);
    if (!k || d->n_meta >= INT_MAX / 2) { if (k) TENSOR_FREE(k); TENSOR_FREE(v); tensor__fail(fn, "out of memory"); return -1; }
    if (d->n_meta == d->meta_cap) {
        int cap = d->meta_cap ? d->meta_cap * 2 : 8;
        char **keys = (char **)TENSOR__MALLOC(sizeof(char *) * 2 * (size_t)cap);
        if (!keys) { TENSOR_FREE(k); TENSOR_FREE(v); tensor__fail(fn, "out of memory"); return -1; }
        for (int i = 0; i < d->n_meta; i++) { keys[i] = d->meta_keys[i]; keys[cap + i] = d->meta_values[i]; }
        if (d->meta_keys) TENSOR_FREE(d->meta_keys);
        d->meta_keys = keys;
        d->meta_values = keys + cap;
        d->meta_cap = cap;
    }
    d->meta_keys[d->n_meta] = k;
    d->meta_values[d->n_meta++] = v;
    return 0;
}
TENSOR_API const char *tensor_dict_metadata(const tensor_dict *d, const char *key) {
    if (!d || !key) return NULL;
    for (int i = 0; i < d->n_meta; i++) if (!strcmp(d->meta_keys[i], key)) return d->meta_values[i];
    return NULL;
}
TENSOR_API int tensor_dict_metadata_len(const tensor_dict *d) { return d ? d->n_meta : 0; }
TENSOR_API const char *tensor_dict_metadata_key(const tensor_dict *d, int i) { return d && i >= 0 && i < d->n_meta ? d->meta_keys[i] : NULL; }

TENSOR_API void tensor_dict_free(tensor_dict *d) {
    if (!d) return;
    for (int i = 0; i < d->n; i++) { tensor_free(d->ts[i]); TENSOR_FREE(d->names[i]); }
    for (int i = 0; i < d->n_meta; i++) { TENSOR_FREE(d->meta_keys[i]); TENSOR_FREE(d->meta_values[i]); }
    if (d->names) { TENSOR_FREE(d->names); TENSOR_FREE(d->ts); TENSOR_FREE(d->index); }
    if (d->meta_keys) TENSOR_FREE(d->meta_keys);
    TENSOR_FREE(d);
}

// >>external ---------------------------------------------------------------------------------
/* A tensor over storage s (made by tensor__storage_external or tensor__storage_new), taking s's one
   reference: strides NULL means contiguous. On failure s is released (its release function runs). */
static TENSOR__UNUSED tensor *tensor__from_storage(const char *fn, tensor__storage *s, tensor_dtype dtype, int ndim, const int64_t *shape,
                                                   const int64_t *strides, int64_t offset) {
    if (!s) return NULL;
    int64_t st[TENSOR_MAX_DIMS];
    if (ndim >= 0 && ndim <= TENSOR_MAX_DIMS && !strides) { tensor__contiguous_strides(ndim, shape, st); strides = st; }
    tensor *t = tensor__check_view(fn, ndim, shape, strides, offset) ? tensor__handle_new(fn) : NULL;
    if (!t) {
        tensor__storage_release(tensor__self, s);
        return NULL;
    }
    t->storage = s;
    t->offset = offset;
    t->ndim = ndim;
    t->dtype = dtype;
    for (int i = 0; i < ndim; i++) { t->shape[i] = shape[i]; t->strides[i] = strides[i]; }
    return t;
}

// >>file-io ------------------------------------------------------------------------------------
/* Reading and writing whole files. Readers know the file's size before they trust anything in it;
   writers write PATH.tmp and rename it over PATH once every byte is out, so a crash (or a full
   disk) mid-save leaves the previous file intact. Files are little-endian: a big-endian host swaps
   elements on their way in and out (tensor__to_le). */
typedef struct {
    FILE *fp;
    const unsigned char *mem; /* or the file's bytes in memory (the fuzzers: tensor__rfile_mem) */
    int64_t size;
    const char *path;
} tensor__rfile;

static TENSOR__UNUSED void tensor__rfile_mem(tensor__rfile *f, const void *data, size_t n, const char *name) {
    f->fp = NULL;
    f->mem = (const unsigned char *)data;
    f->size = (int64_t)n;
    f->path = name;
}

static bool tensor__rfile_open(const char *fn, const char *path, tensor__rfile *f) {
    f->fp = NULL;
    f->mem = NULL;
    f->path = path;
    if (!path) { tensor__null_arg(fn, "path"); return false; }
    f->fp = fopen(path, "rb");
    if (!f->fp) { tensor__fail(fn, "cannot open '%.300s' for reading", path); return false; }
#if defined(_WIN32)
    bool ok = _fseeki64(f->fp, 0, SEEK_END) == 0 && (f->size = _ftelli64(f->fp)) >= 0 && _fseeki64(f->fp, 0, SEEK_SET) == 0;
#else
    bool ok = fseek(f->fp, 0, SEEK_END) == 0 && (f->size = ftell(f->fp)) >= 0 && fseek(f->fp, 0, SEEK_SET) == 0;
#endif
    if (!ok) {
        fclose(f->fp);
        f->fp = NULL;
        tensor__fail(fn, "cannot find the size of '%.300s' (not a regular file?)", path);
        return false;
    }
    return true;
}
static void tensor__rfile_close(tensor__rfile *f) {
    if (f->fp) fclose(f->fp);
    f->fp = NULL;
}
/* n bytes at offset off (checked against the size first). */
static bool tensor__rfile_read(const char *fn, tensor__rfile *f, int64_t off, void *buf, size_t n) {
    if (off < 0 || off > f->size || (uint64_t)n > (uint64_t)(f->size - off)) {
        tensor__fail(fn, "'%.300s': %zu bytes at offset %lld run past the end of the file (%lld bytes)", f->path, n, (long long)off, (long long)f->size);
        return false;
    }
    if (f->mem) {
        if (n) memcpy(buf, f->mem + off, n);
        return true;
    }
#if defined(_WIN32)
    bool ok = _fseeki64(f->fp, off, SEEK_SET) == 0;
#else
    bool ok = (long)off == off && fseek(f->fp, (long)off, SEEK_SET) == 0;
#endif
    if (!ok || fread(buf, 1, n, f->fp) != n) {
        tensor__fail(fn, "'%.300s': reading %zu bytes at offset %lld failed", f->path, n, (long long)off);
        return false;
    }
    return true;
}

static bool tensor__big_endian(void) {
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 0;
}
/* Reverses the bytes of each of n elements of `size` bytes (little-endian <-> host on a big-endian
   host, and .npy's '>' data). */
static void tensor__swap_bytes(void *p, int64_t n, size_t size) {
    unsigned char *b = (unsigned char *)p;
    if (size < 2) return;
    for (int64_t i = 0; i < n; i++, b += size)
        for (size_t j = 0; j < size / 2; j++) { unsigned char t = b[j]; b[j] = b[size - 1 - j]; b[size - 1 - j] = t; }
}

typedef struct {
    FILE *fp;
    char *tmp;        /* PATH.tmp */
    const char *path;
    bool failed;
} tensor__wfile;

static bool tensor__wfile_open(const char *fn, const char *path, tensor__wfile *w) {
    w->fp = NULL;
    w->tmp = NULL;
    w->path = path;
    w->failed = false;
    if (!path) { tensor__null_arg(fn, "path"); return false; }
    size_t n = strlen(path);
    w->tmp = (char *)TENSOR__MALLOC(n + 5);
    if (!w->tmp) { tensor__fail(fn, "out of memory"); return false; }
    memcpy(w->tmp, path, n);
    memcpy(w->tmp + n, ".tmp", 5);
    w->fp = fopen(w->tmp, "wb");
    if (!w->fp) {
        tensor__fail(fn, "cannot open '%.300s' for writing", w->tmp);
        TENSOR_FREE(w->tmp);
        w->tmp = NULL;
        return false;
    }
    return true;
}
static void tensor__wfile_write(const char *fn, tensor__wfile *w, const void *p, size_t n) {
    if (w->failed || !n) return;
    if (fwrite(p, 1, n, w->fp) != n) {
        w->failed = true;
        tensor__fail(fn, "writing '%.300s' failed (disk full?)", w->tmp);
    }
}
/* Closes the file and, when everything was written (and ok: the caller's own checks passed),
   renames it to its path; otherwise removes it. 0 or -1. */
static int tensor__wfile_close(const char *fn, tensor__wfile *w, bool ok) {
    if (!w->fp) return -1;
    bool good = ok && !w->failed;
    if (fclose(w->fp) != 0 && good) { tensor__fail(fn, "writing '%.300s' failed (disk full?)", w->tmp); good = false; }
    w->fp = NULL;
#if defined(_WIN32)
    if (good) remove(w->path); /* rename does not replace a file there */
#endif
    if (good && rename(w->tmp, w->path) != 0) { tensor__fail(fn, "cannot rename '%.300s' to '%.300s'", w->tmp, w->path); good = false; }
    if (!good) remove(w->tmp);
    TENSOR_FREE(w->tmp);
    w->tmp = NULL;
    return good ? 0 : -1;
}

/* Writes t's elements in row-major order, little-endian, whatever its layout or device: a contiguous
   CPU tensor straight from its storage, anything else through contiguous chunks. */
static void tensor__wfile_tensor(const char *fn, tensor__wfile *w, tensor *t) {
    size_t es = tensor__dtype_sizes[t->dtype];
    int64_t numel = tensor__numel_of(t->ndim, t->shape);
    if (!numel || w->failed) return;
    if (t->storage->device == TENSOR_CPU && tensor__contiguous(t) && !tensor__big_endian()) {
        tensor__wfile_write(fn, w, tensor__data(t), (size_t)numel * es);
        return;
    }
    tensor *c = tensor__contiguous_copy(fn, t, t->dtype); /* the copy runs on t's device */
    if (!c) { w->failed = true; return; }
    if (c->storage->device != TENSOR_CPU) {
        tensor *h = tensor_to_device(c, TENSOR_CPU);
        tensor_free(c);
        if (!h) { w->failed = true; return; }
        c = h;
    }
    if (tensor__big_endian()) tensor__swap_bytes(tensor__data(c), numel, es);
    tensor__wfile_write(fn, w, tensor__data(c), (size_t)numel * es);
    tensor_free(c);
}

/* Whether s[0..n) is well-formed UTF-8: no overlong forms, no surrogates, nothing above U+10FFFF
   (RFC 3629); the offset of the first bad byte in *bad. */
static bool tensor__utf8_valid(const unsigned char *s, size_t n, size_t *bad) {
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t len = c < 0x80 ? 1 : (c & 0xE0) == 0xC0 ? 2 : (c & 0xF0) == 0xE0 ? 3 : (c & 0xF8) == 0xF0 ? 4 : 0;
        if (!len || i + len > n) break;
        uint32_t cp = len == 1 ? c : len == 2 ? (c & 0x1F) : len == 3 ? (c & 0x0F) : (c & 0x07);
        size_t k = 1;
        for (; k < len && (s[i + k] & 0xC0) == 0x80; k++) cp = cp << 6 | (s[i + k] & 0x3F);
        if (k < len) break;
        static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
        if (cp < min_cp[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) break;
        i += len;
    }
    if (bad) *bad = i;
    return i == n;
}
/* ==== end generator/parts/files.h ==== */
/* ==== begin generator/parts/npy.h ==== */
// >>npy ----------------------------------------------------------------------------------------
/* NumPy's .npy (one array: magic "\x93NUMPY", version, header length, a Python dict literal
   {'descr', 'fortran_order', 'shape'} padded to 64 bytes, then the data) and .npz (a zip archive of
   NAME.npy members, stored, or deflated with -DTENSOR_USE_ZLIB). The header parser is a small strict
   reader of exactly the literals NumPy writes (any key order, either quote, trailing commas), capped
   at NumPy's 10,000 bytes; object arrays (pickles) are refused. The zip reader checks every offset
   and size against the file before it reads or allocates, takes sizes from the central directory
   (ZIP64 included), and verifies each member's CRC-32. tensor__npy_parse and tensor__npz_parse work
   on any tensor__rfile, so the fuzzers feed them memory. */
#ifdef TENSOR_USE_ZLIB
#ifdef __cplusplus
} /* system headers outside extern "C" */
#endif
#include <zlib.h>
#ifdef __cplusplus
extern "C" {
#endif
#endif

/* Member sizes and offsets at or above this take ZIP64 fields (tests build with a smaller one). */
#ifndef TENSOR__ZIP64_LIMIT
#define TENSOR__ZIP64_LIMIT 0xFFFFFFFFull
#endif
#define TENSOR__NPY_MAX_HEADER 10000 /* NumPy's default max_header_size */

/* CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320), as zip stores it. */
static const uint32_t tensor__crc32_table[256] = {
    0x00000000, 0x77073096, 0xee0e612c, 0x990951ba, 0x076dc419, 0x706af48f, 0xe963a535, 0x9e6495a3,
    0x0edb8832, 0x79dcb8a4, 0xe0d5e91e, 0x97d2d988, 0x09b64c2b, 0x7eb17cbd, 0xe7b82d07, 0x90bf1d91,
    0x1db71064, 0x6ab020f2, 0xf3b97148, 0x84be41de, 0x1adad47d, 0x6ddde4eb, 0xf4d4b551, 0x83d385c7,
    0x136c9856, 0x646ba8c0, 0xfd62f97a, 0x8a65c9ec, 0x14015c4f, 0x63066cd9, 0xfa0f3d63, 0x8d080df5,
    0x3b6e20c8, 0x4c69105e, 0xd56041e4, 0xa2677172, 0x3c03e4d1, 0x4b04d447, 0xd20d85fd, 0xa50ab56b,
    0x35b5a8fa, 0x42b2986c, 0xdbbbc9d6, 0xacbcf940, 0x32d86ce3, 0x45df5c75, 0xdcd60dcf, 0xabd13d59,
    0x26d930ac, 0x51de003a, 0xc8d75180, 0xbfd06116, 0x21b4f4b5, 0x56b3c423, 0xcfba9599, 0xb8bda50f,
    0x2802b89e, 0x5f058808, 0xc60cd9b2, 0xb10be924, 0x2f6f7c87, 0x58684c11, 0xc1611dab, 0xb6662d3d,
    0x76dc4190, 0x01db7106, 0x98d220bc, 0xefd5102a, 0x71b18589, 0x06b6b51f, 0x9fbfe4a5, 0xe8b8d433,
    0x7807c9a2, 0x0f00f934, 0x9609a88e, 0xe10e9818, 0x7f6a0dbb, 0x086d3d2d, 0x91646c97, 0xe6635c01,
    0x6b6b51f4, 0x1c6c6162, 0x856530d8, 0xf262004e, 0x6c0695ed, 0x1b01a57b, 0x8208f4c1, 0xf50fc457,
    0x65b0d9c6, 0x12b7e950, 0x8bbeb8ea, 0xfcb9887c, 0x62dd1ddf, 0x15da2d49, 0x8cd37cf3, 0xfbd44c65,
    0x4db26158, 0x3ab551ce, 0xa3bc0074, 0xd4bb30e2, 0x4adfa541, 0x3dd895d7, 0xa4d1c46d, 0xd3d6f4fb,
    0x4369e96a, 0x346ed9fc, 0xad678846, 0xda60b8d0, 0x44042d73, 0x33031de5, 0xaa0a4c5f, 0xdd0d7cc9,
    0x5005713c, 0x270241aa, 0xbe0b1010, 0xc90c2086, 0x5768b525, 0x206f85b3, 0xb966d409, 0xce61e49f,
    0x5edef90e, 0x29d9c998, 0xb0d09822, 0xc7d7a8b4, 0x59b33d17, 0x2eb40d81, 0xb7bd5c3b, 0xc0ba6cad,
    0xedb88320, 0x9abfb3b6, 0x03b6e20c, 0x74b1d29a, 0xead54739, 0x9dd277af, 0x04db2615, 0x73dc1683,
    0xe3630b12, 0x94643b84, 0x0d6d6a3e, 0x7a6a5aa8, 0xe40ecf0b, 0x9309ff9d, 0x0a00ae27, 0x7d079eb1,
    0xf00f9344, 0x8708a3d2, 0x1e01f268, 0x6906c2fe, 0xf762575d, 0x806567cb, 0x196c3671, 0x6e6b06e7,
    0xfed41b76, 0x89d32be0, 0x10da7a5a, 0x67dd4acc, 0xf9b9df6f, 0x8ebeeff9, 0x17b7be43, 0x60b08ed5,
    0xd6d6a3e8, 0xa1d1937e, 0x38d8c2c4, 0x4fdff252, 0xd1bb67f1, 0xa6bc5767, 0x3fb506dd, 0x48b2364b,
    0xd80d2bda, 0xaf0a1b4c, 0x36034af6, 0x41047a60, 0xdf60efc3, 0xa867df55, 0x316e8eef, 0x4669be79,
    0xcb61b38c, 0xbc66831a, 0x256fd2a0, 0x5268e236, 0xcc0c7795, 0xbb0b4703, 0x220216b9, 0x5505262f,
    0xc5ba3bbe, 0xb2bd0b28, 0x2bb45a92, 0x5cb36a04, 0xc2d7ffa7, 0xb5d0cf31, 0x2cd99e8b, 0x5bdeae1d,
    0x9b64c2b0, 0xec63f226, 0x756aa39c, 0x026d930a, 0x9c0906a9, 0xeb0e363f, 0x72076785, 0x05005713,
    0x95bf4a82, 0xe2b87a14, 0x7bb12bae, 0x0cb61b38, 0x92d28e9b, 0xe5d5be0d, 0x7cdcefb7, 0x0bdbdf21,
    0x86d3d2d4, 0xf1d4e242, 0x68ddb3f8, 0x1fda836e, 0x81be16cd, 0xf6b9265b, 0x6fb077e1, 0x18b74777,
    0x88085ae6, 0xff0f6a70, 0x66063bca, 0x11010b5c, 0x8f659eff, 0xf862ae69, 0x616bffd3, 0x166ccf45,
    0xa00ae278, 0xd70dd2ee, 0x4e048354, 0x3903b3c2, 0xa7672661, 0xd06016f7, 0x4969474d, 0x3e6e77db,
    0xaed16a4a, 0xd9d65adc, 0x40df0b66, 0x37d83bf0, 0xa9bcae53, 0xdebb9ec5, 0x47b2cf7f, 0x30b5ffe9,
    0xbdbdf21c, 0xcabac28a, 0x53b39330, 0x24b4a3a6, 0xbad03605, 0xcdd70693, 0x54de5729, 0x23d967bf,
    0xb3667a2e, 0xc4614ab8, 0x5d681b02, 0x2a6f2b94, 0xb40bbe37, 0xc30c8ea1, 0x5a05df1b, 0x2d02ef8d,
};
static uint32_t tensor__crc32(uint32_t crc, const void *p, size_t n) {
    const unsigned char *b = (const unsigned char *)p;
    crc = ~crc;
    for (size_t i = 0; i < n; i++) crc = tensor__crc32_table[(crc ^ b[i]) & 0xFF] ^ (crc >> 8);
    return ~crc;
}

static uint32_t tensor__le16(const unsigned char *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8; }
static uint32_t tensor__le32(const unsigned char *p) { return tensor__le16(p) | tensor__le16(p + 2) << 16; }
static uint64_t tensor__le64(const unsigned char *p) { return (uint64_t)tensor__le32(p) | (uint64_t)tensor__le32(p + 4) << 32; }
static void tensor__put_le(unsigned char *p, uint64_t v, int n) {
    for (int i = 0; i < n; i++) p[i] = (unsigned char)(v >> (8 * i));
}

// >>npy-header ---------------------------------------------------------------------------------
/* The header dict: a cursor over its bytes, and the first problem found (with where). */
typedef struct {
    const char *s;
    size_t n, i;
    const char *fn, *path;
    bool failed, py2; /* py2: versions 1.0 and 2.0 may hold Python 2 longs such as 3L (NumPy drops the L) */
} tensor__npy_lex;

static bool tensor__npy_bad(tensor__npy_lex *x, const char *what) {
    size_t n = x->n; /* the header quoted without its padding, up to 120 bytes */
    while (n && (x->s[n - 1] == ' ' || x->s[n - 1] == '\n')) n--;
    if (!x->failed)
        tensor__fail(x->fn, "'%.300s': bad .npy header: %s at byte %zu of \"%.*s%s\"", x->path, what, x->i, (int)(n < 120 ? n : 120), x->s, n > 120 ? "..." : "");
    x->failed = true;
    return false;
}
static void tensor__npy_ws(tensor__npy_lex *x) {
    while (x->i < x->n && (x->s[x->i] == ' ' || x->s[x->i] == '\t' || x->s[x->i] == '\n' || x->s[x->i] == '\r' || x->s[x->i] == '\f' || x->s[x->i] == '\v')) x->i++;
}
/* Skips blanks, then consumes c if it is next. */
static bool tensor__npy_eat(tensor__npy_lex *x, char c) {
    tensor__npy_ws(x);
    if (x->i < x->n && x->s[x->i] == c) { x->i++; return true; }
    return false;
}
/* A quoted string of printable ASCII without escapes, into out[cap]. */
static bool tensor__npy_string(tensor__npy_lex *x, char *out, size_t cap) {
    tensor__npy_ws(x);
    if (x->i >= x->n || (x->s[x->i] != '\'' && x->s[x->i] != '"')) return tensor__npy_bad(x, "expected a quoted string");
    char q = x->s[x->i++];
    size_t k = 0;
    for (;; x->i++) {
        if (x->i >= x->n) return tensor__npy_bad(x, "unterminated string");
        char c = x->s[x->i];
        if (c == q) break;
        if (c == '\\') return tensor__npy_bad(x, "escape sequences are not supported in strings");
        if ((unsigned char)c < 0x20 || (unsigned char)c > 0x7E) return tensor__npy_bad(x, "unexpected character in a string");
        if (k + 1 >= cap) return tensor__npy_bad(x, "string too long");
        out[k++] = c;
    }
    x->i++;
    out[k] = 0;
    return true;
}
static bool tensor__npy_word(tensor__npy_lex *x, const char *w) {
    size_t n = strlen(w);
    if (x->n - x->i < n || memcmp(x->s + x->i, w, n)) return false;
    if (x->i + n < x->n) {
        char c = x->s[x->i + n];
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_') return false;
    }
    x->i += n;
    return true;
}
/* shape: a tuple of non-negative ints, (), (3,), (3, 4) or (3, 4,). */
static bool tensor__npy_shape(tensor__npy_lex *x, int *ndim, int64_t *shape) {
    *ndim = 0;
    if (!tensor__npy_eat(x, '(')) return tensor__npy_bad(x, "'shape' must be a tuple such as (3, 4), (3,) or ()");
    if (tensor__npy_eat(x, ')')) return true;
    for (;;) {
        tensor__npy_ws(x);
        bool neg = x->i < x->n && x->s[x->i] == '-';
        if (neg) { x->i++; tensor__npy_ws(x); }
        size_t start = x->i;
        uint64_t v = 0;
        bool big = false;
        while (x->i < x->n && x->s[x->i] >= '0' && x->s[x->i] <= '9') {
            unsigned d = (unsigned)(x->s[x->i++] - '0');
            if (v > ((uint64_t)INT64_MAX - d) / 10) big = true;
            else v = v * 10 + d;
        }
        if (x->i == start) return tensor__npy_bad(x, "expected an integer in 'shape'");
        size_t digits = x->i - start;
        if (x->py2 && x->i < x->n && x->s[x->i] == 'L') x->i++;
        if (digits > 1 && x->s[start] == '0') return tensor__npy_bad(x, "an integer with a leading zero in 'shape'");
        if (neg && (v || big)) return tensor__npy_bad(x, "negative dimension in 'shape'");
        if (big) return tensor__npy_bad(x, "dimension in 'shape' is too large");
        if (*ndim == TENSOR_MAX_DIMS) return tensor__npy_bad(x, "'shape' has more than 8 dimensions (TENSOR_MAX_DIMS)");
        shape[(*ndim)++] = (int64_t)v;
        if (tensor__npy_eat(x, ',')) {
            if (tensor__npy_eat(x, ')')) return true;
            continue;
        }
        if (tensor__npy_eat(x, ')')) {
            if (*ndim == 1) return tensor__npy_bad(x, "'shape' (n) is not a tuple: a 1-d shape is written (n,)");
            return true;
        }
        return tensor__npy_bad(x, "expected ',' or ')' in 'shape'");
    }
}

/* The dtype of a descr, and whether its bytes need swapping on this host; -1 with an error. */
static int tensor__npy_dtype(tensor__npy_lex *x, const char *descr, bool *swap) {
    static const char *const codes[7] = {"b1", "u1", "i4", "i8", "f2", "f4", "f8"};
    static const tensor_dtype dts[7] = {TENSOR_BOOL, TENSOR_U8, TENSOR_I32, TENSOR_I64, TENSOR_F16, TENSOR_F32, TENSOR_F64};
    char o = descr[0];
    if ((o == '|' || o == '<' || o == '>' || o == '=') && descr[1] == 'O') {
        tensor__fail(x->fn, "'%.300s': object arrays (descr '%.40s') hold Python pickles and are not supported", x->path, descr);
        return -1;
    }
    if (o == '<' || o == '>' || o == '=' || o == '|')
        for (int k = 0; k < 7; k++) {
            if (strcmp(descr + 1, codes[k])) continue;
            if (o == '|' && tensor__dtype_sizes[dts[k]] > 1) break; /* '|' (no byte order) only for single bytes */
            *swap = tensor__dtype_sizes[dts[k]] > 1 && ((o == '>' && !tensor__big_endian()) || (o == '<' && tensor__big_endian()));
            return (int)dts[k];
        }
    tensor__fail(x->fn, "'%.300s': unsupported descr '%.40s': tensor.h reads |b1, |u1, <i4, <i8, <f2, <f4, <f8 (and their '>' and '=' forms)", x->path, descr);
    return -1;
}

typedef struct {
    tensor_dtype dtype;
    bool swap, fortran;
    int ndim;
    int64_t shape[TENSOR_MAX_DIMS];
} tensor__npy_info;

/* Parses the header dict s[0..n): exactly the keys descr, fortran_order and shape, in any order. */
static bool tensor__npy_dict(const char *fn, const char *path, const char *s, size_t n, bool py2, tensor__npy_info *info) {
    tensor__npy_lex x;
    x.s = s; x.n = n; x.i = 0; x.fn = fn; x.path = path; x.failed = false; x.py2 = py2;
    bool seen[3] = {false, false, false};
    char key[32], descr[48];
    if (!tensor__npy_eat(&x, '{')) return tensor__npy_bad(&x, "expected '{'");
    while (!tensor__npy_eat(&x, '}')) {
        if (!tensor__npy_string(&x, key, sizeof key)) return false;
        if (!tensor__npy_eat(&x, ':')) return tensor__npy_bad(&x, "expected ':' after a key");
        int k = !strcmp(key, "descr") ? 0 : !strcmp(key, "fortran_order") ? 1 : !strcmp(key, "shape") ? 2 : -1;
        if (k < 0) return tensor__npy_bad(&x, "unknown key (the keys are 'descr', 'fortran_order' and 'shape')");
        if (seen[k]) return tensor__npy_bad(&x, "duplicate key");
        seen[k] = true;
        tensor__npy_ws(&x);
        if (k == 0) {
            if (x.i < x.n && (x.s[x.i] == '[' || x.s[x.i] == '{')) return tensor__npy_bad(&x, "structured dtypes are not supported");
            if (!tensor__npy_string(&x, descr, sizeof descr)) return false;
        } else if (k == 1) {
            if (tensor__npy_word(&x, "True")) info->fortran = true;
            else if (tensor__npy_word(&x, "False")) info->fortran = false;
            else return tensor__npy_bad(&x, "'fortran_order' must be True or False");
        } else if (!tensor__npy_shape(&x, &info->ndim, info->shape)) {
            return false;
        }
        if (tensor__npy_eat(&x, ',')) continue;
        if (tensor__npy_eat(&x, '}')) break;
        return tensor__npy_bad(&x, "expected ',' or '}'");
    }
    tensor__npy_ws(&x);
    if (x.i != x.n) return tensor__npy_bad(&x, "unexpected text after the dict");
    if (!seen[0] || !seen[1] || !seen[2]) {
        tensor__fail(fn, "'%.300s': bad .npy header: missing key '%s'", path, !seen[0] ? "descr" : !seen[1] ? "fortran_order" : "shape");
        return false;
    }
    int dt = tensor__npy_dtype(&x, descr, &info->swap);
    if (dt < 0) return false;
    info->dtype = (tensor_dtype)dt;
    return true;
}

// >>npy-read -----------------------------------------------------------------------------------
/* The .npy occupying [off, off + len) of f. */
static tensor *tensor__npy_parse(const char *fn, tensor__rfile *f, int64_t off, int64_t len) {
    unsigned char pre[12];
    if (off < 0 || len < 0 || off > f->size || len > f->size - off) return tensor__fail(fn, "'%.300s': .npy range runs past the end of the file", f->path);
    if (len < 10) return tensor__fail(fn, "'%.300s': %lld bytes is too short for a .npy file", f->path, (long long)len);
    if (!tensor__rfile_read(fn, f, off, pre, 10)) return NULL;
    if (memcmp(pre, "\x93NUMPY", 6)) return tensor__fail(fn, "'%.300s': not a .npy file (bad magic)", f->path);
    int major = pre[6], minor = pre[7];
    if (major < 1 || major > 3 || minor != 0) return tensor__fail(fn, "'%.300s': unsupported .npy version %d.%d (1.0, 2.0 and 3.0 are)", f->path, major, minor);
    int64_t pos = 10;
    uint64_t hlen = tensor__le16(pre + 8);
    if (major > 1) {
        if (len < 12) return tensor__fail(fn, "'%.300s': %lld bytes is too short for a version %d.0 .npy file", f->path, (long long)len, major);
        if (!tensor__rfile_read(fn, f, off + 10, pre + 10, 2)) return NULL;
        hlen = tensor__le32(pre + 8);
        pos = 12;
    }
    if (hlen > TENSOR__NPY_MAX_HEADER)
        return tensor__fail(fn, "'%.300s': .npy header of %llu bytes is longer than NumPy's limit of %d", f->path, (unsigned long long)hlen, TENSOR__NPY_MAX_HEADER);
    if ((int64_t)hlen > len - pos)
        return tensor__fail(fn, "'%.300s': .npy header of %llu bytes runs past the end of the file (%lld bytes)", f->path, (unsigned long long)hlen, (long long)len);
    char *h = (char *)TENSOR__MALLOC((size_t)hlen + 1);
    if (!h) return tensor__fail(fn, "out of memory");
    if (!tensor__rfile_read(fn, f, off + pos, h, (size_t)hlen)) { TENSOR_FREE(h); return NULL; }
    h[hlen] = 0;
    size_t bad;
    tensor__npy_info info;
    memset(&info, 0, sizeof info);
    bool ok = true;
    if (major == 3 && !tensor__utf8_valid((const unsigned char *)h, (size_t)hlen, &bad)) {
        tensor__fail(fn, "'%.300s': .npy 3.0 header is not valid UTF-8 (byte %zu)", f->path, bad);
        ok = false;
    }
    if (ok && memchr(h, 0, (size_t)hlen)) {
        tensor__fail(fn, "'%.300s': bad .npy header: it contains a NUL byte", f->path);
        ok = false;
    }
    ok = ok && tensor__npy_dict(fn, f->path, h, (size_t)hlen, major < 3, &info);
    TENSOR_FREE(h);
    if (!ok) return NULL;
    pos += (int64_t)hlen;

    /* the shape's element count and strides must not overflow; the data must fill the rest exactly */
    int64_t extent = 1, numel = 1, need;
    char b[200];
    for (int i = 0; i < info.ndim && extent >= 0; i++) {
        if (!tensor__size_mul(extent, info.shape[i] > 1 ? info.shape[i] : 1, &extent)) extent = -1;
        else numel *= info.shape[i];
    }
    if (extent < 0)
        return tensor__fail(fn, "'%.300s': .npy shape %s is too large (its element count overflows)", f->path, tensor__shape_str(b, sizeof b, info.ndim, info.shape));
    size_t es = tensor__dtype_sizes[info.dtype];
    need = numel * (int64_t)es; /* numel <= 2^60, es <= 8 */
    if (len - pos < need)
        return tensor__fail(fn, "'%.300s': .npy data holds %lld bytes, shape %s of %s needs %lld", f->path, (long long)(len - pos),
                            tensor__shape_str(b, sizeof b, info.ndim, info.shape), tensor__dtype_names[info.dtype], (long long)need);
    if (len - pos > need)
        return tensor__fail(fn, "'%.300s': %lld bytes of trailing data after the .npy array (shape %s of %s)", f->path, (long long)(len - pos - need),
                            tensor__shape_str(b, sizeof b, info.ndim, info.shape), tensor__dtype_names[info.dtype]);

    /* Fortran order: the data is the C-order array of the reversed shape, transposed back below */
    bool fortran = info.fortran && info.ndim > 1 && numel > 0;
    int64_t rshape[TENSOR_MAX_DIMS];
    for (int i = 0; i < info.ndim; i++) rshape[i] = fortran ? info.shape[info.ndim - 1 - i] : info.shape[i];
    tensor *t = tensor__new(fn, info.ndim, rshape, info.dtype, TENSOR_CPU);
    if (!t) return NULL;
    char *data = tensor__data(t);
    if (!tensor__rfile_read(fn, f, off + pos, data, (size_t)need)) { tensor_free(t); return NULL; }
    if (info.swap) tensor__swap_bytes(data, numel, es);
    if (info.dtype == TENSOR_BOOL)
        for (int64_t i = 0; i < numel; i++) data[i] = data[i] != 0;
    if (fortran) {
        int dims[TENSOR_MAX_DIMS];
        for (int i = 0; i < info.ndim; i++) dims[i] = info.ndim - 1 - i;
        tensor *p = tensor_permute(t, info.ndim, dims);
        tensor *c = p ? tensor_contiguous(p) : NULL;
        tensor_free(p);
        tensor_free(t);
        t = c;
    }
    return t;
}

TENSOR_API tensor *tensor_load_npy(const char *path) {
    const char *fn = "tensor_load_npy";
    tensor__rfile f;
    if (!tensor__rfile_open(fn, path, &f)) return NULL;
    tensor *t = tensor__npy_parse(fn, &f, 0, f.size);
    tensor__rfile_close(&f);
    return t;
}

// >>npy-write ----------------------------------------------------------------------------------
/* The preamble NumPy (>= 1.23) writes for t: magic, version, length, the dict with 21 - digits
   spaces of room to grow the first dim, padded with spaces and '\n' to a multiple of 64. Its
   length in buf[cap], or -1 with an error (bfloat16 has no NumPy dtype). */
static int tensor__npy_header(const char *fn, const char *path, const tensor *t, char *buf, size_t cap) {
    static const char *const descrs[TENSOR_DTYPE_COUNT] = {"<f4", "<f8", "<f2", NULL, "<i4", "<i8", "|u1", "|b1"};
    const char *descr = descrs[t->dtype];
    if (!descr) {
        tensor__fail(fn, "'%.300s': %s has no NumPy dtype: convert it first (tensor_to_dtype(t, TENSOR_F32))", path ? path : "", tensor__dtype_names[t->dtype]);
        return -1;
    }
    char d[400];
    int n = snprintf(d, sizeof d, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    for (int i = 0; i < t->ndim; i++) n += snprintf(d + n, sizeof d - (size_t)n, i ? ", %lld" : "%lld", (long long)t->shape[i]);
    n += snprintf(d + n, sizeof d - (size_t)n, "%s), }", t->ndim == 1 ? "," : "");
    if (t->ndim > 0) {
        int digits = snprintf(NULL, 0, "%lld", (long long)t->shape[0]);
        for (int i = digits; i < 21; i++) d[n++] = ' ';
    }
    size_t hlen = (size_t)n + 1, lenbytes = 2;
    size_t pad = 64 - (8 + lenbytes + hlen) % 64;
    if (hlen + pad > 65535) { lenbytes = 4; pad = 64 - (8 + lenbytes + hlen) % 64; }
    size_t total = 8 + lenbytes + hlen + pad;
    if (total > cap) { tensor__fail(fn, ".npy header too long"); return -1; }
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = lenbytes == 2 ? 1 : 2;
    buf[7] = 0;
    tensor__put_le((unsigned char *)buf + 8, hlen + pad, (int)lenbytes);
    memcpy(buf + 8 + lenbytes, d, (size_t)n);
    memset(buf + 8 + lenbytes + n, ' ', pad);
    buf[total - 1] = '\n';
    return (int)total;
}

TENSOR_API int tensor_save_npy(const char *path, tensor *t) {
    const char *fn = "tensor_save_npy";
    if (!path) { tensor__null_arg(fn, "path"); return -1; }
    if (!t) { tensor__null_arg(fn, "t"); return -1; }
    char hdr[512];
    int hn = tensor__npy_header(fn, path, t, hdr, sizeof hdr);
    if (hn < 0) return -1;
    tensor__wfile w;
    if (!tensor__wfile_open(fn, path, &w)) return -1;
    tensor__wfile_write(fn, &w, hdr, (size_t)hn);
    tensor__wfile_tensor(fn, &w, t);
    return tensor__wfile_close(fn, &w, true);
}

// >>npz-read -----------------------------------------------------------------------------------
#define TENSOR__ZIP_CHUNK 65536

/* CRC-32 of [off, off + n) of f, read in chunks through buf[TENSOR__ZIP_CHUNK]. */
static bool tensor__zip_crc_range(const char *fn, tensor__rfile *f, int64_t off, int64_t n, unsigned char *buf, uint32_t *crc) {
    uint32_t c = 0;
    while (n > 0) {
        size_t k = n < TENSOR__ZIP_CHUNK ? (size_t)n : TENSOR__ZIP_CHUNK;
        if (!tensor__rfile_read(fn, f, off, buf, k)) return false;
        c = tensor__crc32(c, buf, k);
        off += (int64_t)k;
        n -= (int64_t)k;
    }
    *crc = c;
    return true;
}

#ifdef TENSOR_USE_ZLIB
/* Inflates the raw deflate stream [off, off + csize) of f into out[usize]; it must end exactly there
   and produce exactly usize bytes. */
static bool tensor__zip_inflate(const char *fn, tensor__rfile *f, const char *what, int64_t off, int64_t csize, unsigned char *out, int64_t usize,
                                unsigned char *buf) {
    z_stream zs;
    memset(&zs, 0, sizeof zs);
    if (inflateInit2(&zs, -15) != Z_OK) { tensor__fail(fn, "'%.300s': zlib's inflateInit2 failed", what); return false; }
    int64_t in_done = 0, out_done = 0;
    const char *err = NULL;
    for (;;) {
        if (zs.avail_in == 0 && in_done < csize) {
            size_t k = csize - in_done < TENSOR__ZIP_CHUNK ? (size_t)(csize - in_done) : TENSOR__ZIP_CHUNK;
            if (!tensor__rfile_read(fn, f, off + in_done, buf, k)) { inflateEnd(&zs); return false; }
            zs.next_in = buf;
            zs.avail_in = (uInt)k;
            in_done += (int64_t)k;
        }
        if (zs.avail_out == 0) {
            int64_t k = usize - out_done < ((int64_t)1 << 30) ? usize - out_done : ((int64_t)1 << 30);
            zs.next_out = out + out_done;
            zs.avail_out = (uInt)k;
            out_done += k;
        }
        int rc = inflate(&zs, Z_NO_FLUSH);
        if (rc == Z_STREAM_END) break;
        if (rc == Z_OK) continue;
        if (rc == Z_BUF_ERROR && zs.avail_in == 0 && in_done == csize) err = "the compressed data ends early";
        else if (rc == Z_BUF_ERROR) err = "it inflates to more bytes than its declared size";
        else err = "the compressed data is corrupt";
        break;
    }
    if (!err && out_done - (int64_t)zs.avail_out != usize) err = "it inflates to fewer bytes than its declared size";
    if (!err && (zs.avail_in != 0 || in_done != csize)) err = "bytes follow the end of its compressed data";
    inflateEnd(&zs);
    if (err) tensor__fail(fn, "'%.300s': deflated member: %s", what, err);
    return !err;
}
#endif

/* One central directory entry, its ZIP64 fields applied. */
typedef struct {
    uint32_t flags, method, crc, nlen;
    uint64_t csize, usize, local;
    const unsigned char *name;
} tensor__zip_entry;

/* The ZIP64 extended information field of extra[0..n): each of usize, csize, local (and the disk)
   is there when its 32-bit field holds the 0xFFFFFFFF marker. */
static bool tensor__zip64_extra(const unsigned char *x, size_t n, tensor__zip_entry *e, uint32_t disk) {
    bool need = e->usize == 0xFFFFFFFFu || e->csize == 0xFFFFFFFFu || e->local == 0xFFFFFFFFu || disk == 0xFFFF;
    size_t i = 0;
    while (i + 4 <= n) {
        uint32_t id = tensor__le16(x + i), sz = tensor__le16(x + i + 2);
        if (sz > n - i - 4) return false;
        if (id == 1) {
            const unsigned char *p = x + i + 4;
            size_t left = sz;
            uint64_t *fields[3] = {&e->usize, &e->csize, &e->local};
            for (int k = 0; k < 3; k++) {
                if (*fields[k] != 0xFFFFFFFFu) continue;
                if (left < 8) return false;
                *fields[k] = tensor__le64(p);
                p += 8;
                left -= 8;
            }
            return true;
        }
        i += 4 + sz;
    }
    return !need;
}

static tensor_dict *tensor__npz_parse(const char *fn, tensor__rfile *f) {
    const int64_t size = f->size;
    if (size < 22) return (tensor_dict *)tensor__fail(fn, "'%.300s': %lld bytes is too short for a zip archive (.npz)", f->path, (long long)size);
    /* the end of central directory record: the last signature whose comment ends the file */
    size_t tail = size < 22 + 65535 ? (size_t)size : 22 + 65535;
    unsigned char *buf = (unsigned char *)TENSOR__MALLOC(tail > TENSOR__ZIP_CHUNK ? tail : TENSOR__ZIP_CHUNK);
    if (!buf) return (tensor_dict *)tensor__fail(fn, "out of memory");
    unsigned char *cd = NULL, *out = NULL;
    char *what = NULL, *key = NULL;
    tensor_dict *d = NULL;
    int64_t eocd = -1;
    unsigned char e[56];
    if (!tensor__rfile_read(fn, f, size - (int64_t)tail, buf, tail)) goto fail;
    for (size_t p = tail - 22 + 1; p-- > 0;)
        if (tensor__le32(buf + p) == 0x06054b50u && p + 22 + tensor__le16(buf + p + 20) == tail) { eocd = size - (int64_t)tail + (int64_t)p; memcpy(e, buf + p, 22); break; }
    if (eocd < 0) { tensor__fail(fn, "'%.300s': not a zip archive (.npz): no end of central directory record", f->path); goto fail; }
    {
        uint64_t disk = tensor__le16(e + 4), cd_disk = tensor__le16(e + 6), n_disk = tensor__le16(e + 8), n = tensor__le16(e + 10);
        uint64_t cd_size = tensor__le32(e + 12), cd_off = tensor__le32(e + 16);
        int64_t cd_limit = eocd; /* the central directory ends before the records that follow it */
        unsigned char loc[20];
        if (eocd >= 20 && tensor__rfile_read(fn, f, eocd - 20, loc, 20) && tensor__le32(loc) == 0x07064b50u) {
            uint64_t z = tensor__le64(loc + 8);
            if (z > (uint64_t)(eocd - 20) || eocd - 20 - (int64_t)z < 56) { tensor__fail(fn, "'%.300s': zip: the ZIP64 end of central directory record is out of place", f->path); goto fail; }
            if (!tensor__rfile_read(fn, f, (int64_t)z, e, 56)) goto fail;
            if (tensor__le32(e) != 0x06064b50u) { tensor__fail(fn, "'%.300s': zip: bad ZIP64 end of central directory record", f->path); goto fail; }
            disk = tensor__le32(e + 16); cd_disk = tensor__le32(e + 20); n_disk = tensor__le64(e + 24); n = tensor__le64(e + 32);
            cd_size = tensor__le64(e + 40); cd_off = tensor__le64(e + 48);
            cd_limit = (int64_t)z;
        }
        if (disk || cd_disk || n_disk != n) { tensor__fail(fn, "'%.300s': zip: multi-disk archives are not supported", f->path); goto fail; }
        if (cd_off > (uint64_t)cd_limit || cd_size > (uint64_t)cd_limit - cd_off) {
            tensor__fail(fn, "'%.300s': zip: the central directory (%llu bytes at offset %llu) runs past its end (%lld)", f->path, (unsigned long long)cd_size,
                         (unsigned long long)cd_off, (long long)cd_limit);
            goto fail;
        }
        if (n > cd_size / 46) {
            tensor__fail(fn, "'%.300s': zip: a central directory of %llu bytes cannot hold %llu entries (truncated?)", f->path, (unsigned long long)cd_size, (unsigned long long)n);
            goto fail;
        }
        if (cd_size > SIZE_MAX / 2) { tensor__fail(fn, "'%.300s': zip: the central directory is too large for this machine", f->path); goto fail; }
        cd = (unsigned char *)TENSOR__MALLOC(cd_size ? (size_t)cd_size : 1);
        d = tensor_dict_new();
        if (!cd || !d) { tensor__fail(fn, "out of memory"); goto fail; }
        if (!tensor__rfile_read(fn, f, (int64_t)cd_off, cd, (size_t)cd_size)) goto fail;
        size_t pos = 0;
        for (uint64_t i = 0; i < n; i++) {
            tensor__zip_entry z;
            const unsigned char *c = cd + pos;
            if (cd_size - pos < 46 || tensor__le32(c) != 0x02014b50u) { tensor__fail(fn, "'%.300s': zip: central directory entry %llu is truncated or corrupt", f->path, (unsigned long long)i); goto fail; }
            z.flags = tensor__le16(c + 8); z.method = tensor__le16(c + 10); z.crc = tensor__le32(c + 16);
            z.csize = tensor__le32(c + 20); z.usize = tensor__le32(c + 24); z.nlen = tensor__le16(c + 28);
            size_t xlen = tensor__le16(c + 30), clen = tensor__le16(c + 32);
            uint32_t edisk = tensor__le16(c + 34);
            z.local = tensor__le32(c + 42);
            z.name = c + 46;
            if (cd_size - pos - 46 < z.nlen + xlen + clen) { tensor__fail(fn, "'%.300s': zip: central directory entry %llu runs past the directory's end", f->path, (unsigned long long)i); goto fail; }
            pos += 46 + z.nlen + xlen + clen;
            /* the name: UTF-8, no NUL, not a directory; its key drops ".npy" */
            size_t bad;
            if (!z.nlen || memchr(z.name, 0, z.nlen) || !tensor__utf8_valid(z.name, z.nlen, &bad)) {
                tensor__fail(fn, "'%.300s': zip: member %llu has an empty name, or one that is not valid UTF-8", f->path, (unsigned long long)i);
                goto fail;
            }
            if (what) TENSOR_FREE(what);
            size_t plen = strlen(f->path);
            what = (char *)TENSOR__MALLOC(plen + z.nlen + 3);
            if (!what) { tensor__fail(fn, "out of memory"); goto fail; }
            memcpy(what, f->path, plen);
            what[plen] = '[';
            memcpy(what + plen + 1, z.name, z.nlen);
            what[plen + 1 + z.nlen] = ']';
            what[plen + 2 + z.nlen] = 0;
            if (z.name[z.nlen - 1] == '/') { tensor__fail(fn, "'%.300s': zip: member is a directory", what); goto fail; }
            if (z.flags & 0x41) { tensor__fail(fn, "'%.300s': zip: member is encrypted", what); goto fail; }
            if (z.method != 0 && z.method != 8) { tensor__fail(fn, "'%.300s': zip: compression method %u is not supported (stored and deflate are)", what, (unsigned)z.method); goto fail; }
            if (!tensor__zip64_extra(c + 46 + z.nlen, xlen, &z, edisk) || (edisk && edisk != 0xFFFF)) {
                tensor__fail(fn, "'%.300s': zip: bad or missing ZIP64 extra field", what);
                goto fail;
            }
            /* the local header: same name; the data follows it and its extra field */
            unsigned char lh[30];
            if (z.local > (uint64_t)size || size - (int64_t)z.local < 30) { tensor__fail(fn, "'%.300s': zip: the local header's offset %llu runs past the end of the file", what, (unsigned long long)z.local); goto fail; }
            if (!tensor__rfile_read(fn, f, (int64_t)z.local, lh, 30)) goto fail;
            if (tensor__le32(lh) != 0x04034b50u || tensor__le16(lh + 26) != z.nlen) { tensor__fail(fn, "'%.300s': zip: bad local header", what); goto fail; }
            if (tensor__le16(lh + 8) != z.method || (tensor__le16(lh + 6) & 0x41)) { tensor__fail(fn, "'%.300s': zip: the local header disagrees with the central directory", what); goto fail; }
            int64_t data = (int64_t)z.local + 30, lx = tensor__le16(lh + 28);
            if (size - data < (int64_t)z.nlen + lx) { tensor__fail(fn, "'%.300s': zip: the local header runs past the end of the file", what); goto fail; }
            if (!tensor__rfile_read(fn, f, data, buf, z.nlen)) goto fail;
            if (memcmp(buf, z.name, z.nlen)) { tensor__fail(fn, "'%.300s': zip: the local header names another member", what); goto fail; }
            data += (int64_t)z.nlen + lx;
            if (z.csize > (uint64_t)(size - data)) {
                tensor__fail(fn, "'%.300s': zip: %llu bytes of data at offset %lld run past the end of the file (%lld bytes)", what, (unsigned long long)z.csize, (long long)data, (long long)size);
                goto fail;
            }
            if (key) TENSOR_FREE(key);
            key = (char *)TENSOR__MALLOC(z.nlen + 1);
            if (!key) { tensor__fail(fn, "out of memory"); goto fail; }
            memcpy(key, z.name, z.nlen);
            key[z.nlen >= 4 && !memcmp(z.name + z.nlen - 4, ".npy", 4) ? z.nlen - 4 : z.nlen] = 0;
            if (tensor_dict_contains(d, key)) { tensor__fail(fn, "'%.300s': zip: duplicate member '%.200s'", f->path, key); goto fail; }
            uint32_t crc = 0;
            tensor__rfile mf;
            tensor *t = NULL;
            if (z.method == 0) {
                if (z.csize != z.usize) { tensor__fail(fn, "'%.300s': zip: a stored member's sizes differ (%llu, %llu)", what, (unsigned long long)z.csize, (unsigned long long)z.usize); goto fail; }
                if (!tensor__zip_crc_range(fn, f, data, (int64_t)z.csize, buf, &crc)) goto fail;
                if (crc != z.crc) { tensor__fail(fn, "'%.300s': zip: CRC-32 mismatch (stored %08x, computed %08x)", what, (unsigned)z.crc, (unsigned)crc); goto fail; }
                mf = *f;
                mf.path = what;
                t = tensor__npy_parse(fn, &mf, data, (int64_t)z.csize);
            } else {
#ifdef TENSOR_USE_ZLIB
                /* deflate expands at most 1032:1: a larger declared size is a lie, refused before allocating */
                if (z.usize / 1032 > z.csize + 64 || z.usize > (uint64_t)TENSOR__MAX_NUMEL || z.usize > SIZE_MAX / 2) {
                    tensor__fail(fn, "'%.300s': zip: declared size %llu is impossible for %llu compressed bytes", what, (unsigned long long)z.usize, (unsigned long long)z.csize);
                    goto fail;
                }
                out = (unsigned char *)TENSOR__MALLOC(z.usize ? (size_t)z.usize : 1);
                if (!out) { tensor__fail(fn, "out of memory inflating '%.300s'", what); goto fail; }
                if (!tensor__zip_inflate(fn, f, what, data, (int64_t)z.csize, out, (int64_t)z.usize, buf)) goto fail;
                crc = tensor__crc32(0, out, (size_t)z.usize);
                if (crc != z.crc) { tensor__fail(fn, "'%.300s': zip: CRC-32 mismatch (stored %08x, computed %08x)", what, (unsigned)z.crc, (unsigned)crc); goto fail; }
                tensor__rfile_mem(&mf, out, (size_t)z.usize, what);
                t = tensor__npy_parse(fn, &mf, 0, (int64_t)z.usize);
                TENSOR_FREE(out);
                out = NULL;
#else
                tensor__fail(fn, "'%.300s': zip: the member is deflated (numpy.savez_compressed): build with -DTENSOR_USE_ZLIB and link -lz to read it", what);
                goto fail;
#endif
            }
            if (!t) goto fail;
            int rc = tensor__dict_put(fn, d, key, t);
            tensor_free(t);
            if (rc) goto fail;
        }
        if (pos != cd_size) { tensor__fail(fn, "'%.300s': zip: %llu bytes follow the central directory's %llu entries", f->path, (unsigned long long)(cd_size - pos), (unsigned long long)n); goto fail; }
    }
    TENSOR_FREE(buf);
    TENSOR_FREE(cd);
    if (what) TENSOR_FREE(what);
    if (key) TENSOR_FREE(key);
    return d;
fail:
    TENSOR_FREE(buf);
    if (cd) TENSOR_FREE(cd);
    if (out) TENSOR_FREE(out);
    if (what) TENSOR_FREE(what);
    if (key) TENSOR_FREE(key);
    tensor_dict_free(d);
    return NULL;
}

TENSOR_API tensor_dict *tensor_load_npz(const char *path) {
    const char *fn = "tensor_load_npz";
    tensor__rfile f;
    if (!tensor__rfile_open(fn, path, &f)) return NULL;
    tensor_dict *d = tensor__npz_parse(fn, &f);
    tensor__rfile_close(&f);
    return d;
}

// >>npz-write ----------------------------------------------------------------------------------
/* t's elements row-major little-endian: its own storage when that is already so, else a contiguous
   CPU copy in *holder (free it after use). NULL with an error. */
static const char *tensor__npy_bytes(const char *fn, tensor *t, tensor **holder) {
    *holder = NULL;
    if (t->storage->device == TENSOR_CPU && tensor__contiguous(t) && !tensor__big_endian()) return tensor__data(t);
    tensor *c = tensor__contiguous_copy(fn, t, t->dtype);
    if (c && c->storage->device != TENSOR_CPU) {
        tensor *h = tensor_to_device(c, TENSOR_CPU);
        tensor_free(c);
        c = h;
    }
    if (!c) return NULL;
    if (tensor__big_endian()) tensor__swap_bytes(tensor__data(c), tensor__numel_of(c->ndim, c->shape), tensor__dtype_sizes[c->dtype]);
    *holder = c;
    return tensor__data(c);
}

typedef struct {
    uint64_t offset, size;
    uint32_t crc;
} tensor__zip_out;

/* Stored members NAME.npy, then the central directory and its end record (ZIP64 records and fields
   where a size, offset or count reaches its 32-bit (16-bit) field's limit). DOS time 1980-01-01 00:00. */
TENSOR_API int tensor_save_npz(const char *path, const tensor_dict *d) {
    const char *fn = "tensor_save_npz";
    if (!path) { tensor__null_arg(fn, "path"); return -1; }
    if (!d) { tensor__null_arg(fn, "d"); return -1; }
    char hdr[512];
    for (int i = 0; i < d->n; i++) {
        size_t nl = strlen(d->names[i]), bad;
        if (nl > 65535 - 4) { tensor__fail(fn, "'%.300s': name '%.100s...' is too long for a zip member", path, d->names[i]); return -1; }
        if (!tensor__utf8_valid((const unsigned char *)d->names[i], nl, &bad)) { tensor__fail(fn, "'%.300s': name '%.200s' is not valid UTF-8", path, d->names[i]); return -1; }
        if (tensor__npy_header(fn, path, d->ts[i], hdr, sizeof hdr) < 0) return -1;
    }
    tensor__zip_out *m = (tensor__zip_out *)TENSOR__MALLOC(sizeof(tensor__zip_out) * (size_t)(d->n ? d->n : 1));
    if (!m) { tensor__fail(fn, "out of memory"); return -1; }
    tensor__wfile w;
    if (!tensor__wfile_open(fn, path, &w)) { TENSOR_FREE(m); return -1; }
    const uint64_t lim = TENSOR__ZIP64_LIMIT;
    unsigned char h[46 + 28];
    uint64_t pos = 0;
    bool ok = true;
    for (int i = 0; i < d->n && ok && !w.failed; i++) {
        tensor *t = d->ts[i], *holder;
        int hn = tensor__npy_header(fn, path, t, hdr, sizeof hdr);
        const char *bytes = hn < 0 ? NULL : tensor__npy_bytes(fn, t, &holder);
        if (!bytes) { ok = false; break; }
        uint64_t nbytes = (uint64_t)tensor__numel_of(t->ndim, t->shape) * tensor__dtype_sizes[t->dtype];
        size_t nl = strlen(d->names[i]);
        m[i].offset = pos;
        m[i].size = (uint64_t)hn + nbytes;
        m[i].crc = tensor__crc32(tensor__crc32(0, hdr, (size_t)hn), bytes, (size_t)nbytes);
        bool z64 = m[i].size >= lim, utf8 = false;
        for (size_t k = 0; k < nl; k++) utf8 |= (unsigned char)d->names[i][k] >= 0x80;
        memset(h, 0, sizeof h);
        tensor__put_le(h, 0x04034b50u, 4);
        tensor__put_le(h + 4, z64 ? 45 : 20, 2);
        tensor__put_le(h + 6, utf8 ? 0x800 : 0, 2);
        tensor__put_le(h + 12, 0x21, 2); /* 1980-01-01 */
        tensor__put_le(h + 14, m[i].crc, 4);
        tensor__put_le(h + 18, z64 ? 0xFFFFFFFFu : m[i].size, 4);
        tensor__put_le(h + 22, z64 ? 0xFFFFFFFFu : m[i].size, 4);
        tensor__put_le(h + 26, nl + 4, 2);
        tensor__put_le(h + 28, z64 ? 20 : 0, 2);
        tensor__wfile_write(fn, &w, h, 30);
        tensor__wfile_write(fn, &w, d->names[i], nl);
        tensor__wfile_write(fn, &w, ".npy", 4);
        if (z64) {
            tensor__put_le(h, 1, 2);
            tensor__put_le(h + 2, 16, 2);
            tensor__put_le(h + 4, m[i].size, 8);
            tensor__put_le(h + 12, m[i].size, 8);
            tensor__wfile_write(fn, &w, h, 20);
        }
        tensor__wfile_write(fn, &w, hdr, (size_t)hn);
        tensor__wfile_write(fn, &w, bytes, (size_t)nbytes);
        tensor_free(holder);
        pos += 30 + nl + 4 + (z64 ? 20 : 0) + m[i].size;
    }
    uint64_t cd_off = pos;
    for (int i = 0; i < d->n && ok && !w.failed; i++) {
        size_t nl = strlen(d->names[i]);
        bool zs = m[i].size >= lim, zo = m[i].offset >= lim, utf8 = false;
        for (size_t k = 0; k < nl; k++) utf8 |= (unsigned char)d->names[i][k] >= 0x80;
        int xl = (zs || zo) ? 4 + (zs ? 16 : 0) + (zo ? 8 : 0) : 0;
        memset(h, 0, sizeof h);
        tensor__put_le(h, 0x02014b50u, 4);
        tensor__put_le(h + 4, 45, 2);
        tensor__put_le(h + 6, xl ? 45 : 20, 2);
        tensor__put_le(h + 8, utf8 ? 0x800 : 0, 2);
        tensor__put_le(h + 14, 0x21, 2);
        tensor__put_le(h + 16, m[i].crc, 4);
        tensor__put_le(h + 20, zs ? 0xFFFFFFFFu : m[i].size, 4);
        tensor__put_le(h + 24, zs ? 0xFFFFFFFFu : m[i].size, 4);
        tensor__put_le(h + 28, nl + 4, 2);
        tensor__put_le(h + 30, (uint64_t)xl, 2);
        tensor__put_le(h + 42, zo ? 0xFFFFFFFFu : m[i].offset, 4);
        tensor__wfile_write(fn, &w, h, 46);
        tensor__wfile_write(fn, &w, d->names[i], nl);
        tensor__wfile_write(fn, &w, ".npy", 4);
        if (xl) {
            unsigned char *x = h + 46;
            int k = 4;
            tensor__put_le(x, 1, 2);
            tensor__put_le(x + 2, (uint64_t)xl - 4, 2);
            if (zs) { tensor__put_le(x + k, m[i].size, 8); tensor__put_le(x + k + 8, m[i].size, 8); k += 16; }
            if (zo) tensor__put_le(x + k, m[i].offset, 8);
            tensor__wfile_write(fn, &w, x, (size_t)xl);
        }
        pos += 46 + nl + 4 + (uint64_t)xl;
    }
    uint64_t cd_size = pos - cd_off, n = (uint64_t)d->n;
    bool z64 = n >= 0xFFFF || cd_off >= lim || cd_size >= lim;
    if (ok && z64) {
        unsigned char r[56 + 20];
        memset(r, 0, sizeof r);
        tensor__put_le(r, 0x06064b50u, 4);
        tensor__put_le(r + 4, 44, 8);
        tensor__put_le(r + 12, 45, 2);
        tensor__put_le(r + 14, 45, 2);
        tensor__put_le(r + 24, n, 8);
        tensor__put_le(r + 32, n, 8);
        tensor__put_le(r + 40, cd_size, 8);
        tensor__put_le(r + 48, cd_off, 8);
        tensor__put_le(r + 56, 0x07064b50u, 4);
        tensor__put_le(r + 64, pos, 8);
        tensor__put_le(r + 72, 1, 4);
        tensor__wfile_write(fn, &w, r, sizeof r);
    }
    memset(h, 0, 22);
    tensor__put_le(h, 0x06054b50u, 4);
    tensor__put_le(h + 8, z64 && n >= 0xFFFF ? 0xFFFF : n, 2);
    tensor__put_le(h + 10, z64 && n >= 0xFFFF ? 0xFFFF : n, 2);
    tensor__put_le(h + 12, z64 && cd_size >= lim ? 0xFFFFFFFFu : cd_size, 4);
    tensor__put_le(h + 16, z64 && cd_off >= lim ? 0xFFFFFFFFu : cd_off, 4);
    if (ok) tensor__wfile_write(fn, &w, h, 22);
    TENSOR_FREE(m);
    return tensor__wfile_close(fn, &w, ok);
}
/* ==== end generator/parts/npy.h ==== */
/* ==== begin generator/parts/dlpack.h ==== */
// >>dlpack -------------------------------------------------------------------------------------
/* DLPack: to be written. */
/* ==== end generator/parts/dlpack.h ==== */
/* ==== begin generator/parts/runtime.h ==== */
// >>runtime ------------------------------------------------------------------------------------
TENSOR_API bool tensor_cuda_available(void) { return false; }
TENSOR_API const char *tensor_version(void) { return "0.1.0"; }
TENSOR_API const char *tensor_build_info(void) {
    static TENSOR__THREAD_LOCAL char info[320]; /* per thread: two threads asking at once each get theirs */
    const tensor__simd_isa *v = tensor__simd();
    char simd[64];
    if (v) snprintf(simd, sizeof simd, "%s (%d x f32)%s", v->name, v->width, tensor__reference_kernels ? ", reference kernels on" : "");
    else snprintf(simd, sizeof simd, "none (reference loops)");
#if TENSOR__SIMD && defined(TENSOR_USE_SLEEF)
    const char *sleef = "yes (exp log expm1 log1p sin cos tanh erf)";
#else
    const char *sleef = "no";
#endif
    const tensor__gemm_impl_f32 *gs = tensor__gemm_pick_f32(TENSOR_F32), *gb = tensor__gemm_pick_f32(TENSOR_BF16);
    const tensor__gemm_impl_f64 *gd = tensor__gemm_pick_f64(TENSOR_F64);
    char gemm[128], bf[48] = "";
    if (gb != gs) snprintf(bf, sizeof bf, ", %s %lldx%lld bf16", gb->name, (long long)gb->MR, (long long)gb->NR);
    snprintf(gemm, sizeof gemm, "%s %lldx%lld f32, %s %lldx%lld f64%s", gs->name, (long long)gs->MR, (long long)gs->NR, gd->name,
             (long long)gd->MR, (long long)gd->NR, bf);
    snprintf(info, sizeof info, "tensor.h %s; simd: %s; gemm: %s; sleef: %s; cuda: no; threads: %d (%s)", tensor_version(), simd,
             gemm, sleef, tensor_get_num_threads(), TENSOR__HAVE_THREADS ? "pthread pool" : "no thread support: 1 used");
    return info;
}

#ifdef TENSOR_TEST_HOOKS
TENSOR_API int64_t tensor_test_path_count(const char *path) {
#define TENSOR__PATH_NAME(name) #name,
    static const char *const names[TENSOR__N_PATHS] = {TENSOR__PATHS(TENSOR__PATH_NAME)};
    for (int i = 0; path && i < TENSOR__N_PATHS; i++)
        if (!strcmp(path, names[i])) return __atomic_load_n(&tensor__path_counts[i], __ATOMIC_RELAXED);
    return -1;
}
TENSOR_API void tensor_test_fail_alloc(int64_t k) {
    __atomic_store_n(&tensor__test_alloc_fail_at, k, __ATOMIC_RELAXED);
    __atomic_store_n(&tensor__test_alloc_count, 0, __ATOMIC_RELAXED);
}
TENSOR_API int64_t tensor_test_alloc_count(void) { return __atomic_load_n(&tensor__test_alloc_count, __ATOMIC_RELAXED); }
#endif

static void tensor__runtime_shutdown(void) {
    tensor__rng_reset();
    tensor__pool_stop();
}
/* ==== end generator/parts/runtime.h ==== */
/* ==== begin generator/parts/end.h ==== */
#ifdef __cplusplus
} /* extern "C" */
#endif
#endif /* TENSOR__IMPLEMENTATION_DONE */
#endif /* TENSOR_IMPLEMENTATION */

/*
------------------------------------------------------------------------------
MIT License

Copyright (c) 2026 the tensor.h developers

Permission is hereby granted, free of charge, to any person obtaining a copy of
this software and associated documentation files (the "Software"), to deal in
the Software without restriction, including without limitation the rights to
use, copy, modify, merge, publish, distribute, sublicense, and/or sell copies
of the Software, and to permit persons to whom the Software is furnished to do
so, subject to the following conditions:

The above copyright notice and this permission notice shall be included in all
copies or substantial portions of the Software.

THE SOFTWARE IS PROVIDED "AS IS", WITHOUT WARRANTY OF ANY KIND, EXPRESS OR
IMPLIED, INCLUDING BUT NOT LIMITED TO THE WARRANTIES OF MERCHANTABILITY,
FITNESS FOR A PARTICULAR PURPOSE AND NONINFRINGEMENT. IN NO EVENT SHALL THE
AUTHORS OR COPYRIGHT HOLDERS BE LIABLE FOR ANY CLAIM, DAMAGES OR OTHER
LIABILITY, WHETHER IN AN ACTION OF CONTRACT, TORT OR OTHERWISE, ARISING FROM,
OUT OF OR IN CONNECTION WITH THE SOFTWARE OR THE USE OR OTHER DEALINGS IN THE
SOFTWARE.
------------------------------------------------------------------------------
*/
/* ==== end generator/parts/end.h ==== */
