// >>special --------------------------------------------------------------------------------------
/* torch.special. The functions themselves are formulas (>>formulas: tensor__erfcx, tensor__ndtri,
   tensor__bessel_i, tensor__zeta, tensor__polygamma, ...) that the elementwise kernels of every
   device expand, with their derivatives in tensor_autograd.h; here are polygamma's front-end and
   PyTorch's other names for ops of the library. */

TENSOR_API tensor *tensor_polygamma(int64_t n, tensor *a) {
    if (n < 0) return tensor__fail("tensor_polygamma", "polygamma(n, x) does not support negative n, got %lld", (long long)n);
    if (n > 170) return tensor__fail("tensor_polygamma", "polygamma(n, x) needs n <= 170 (n! overflows a double beyond), got %lld", (long long)n);
    return tensor__unary(TENSOR_OP_polygamma, a, (double)n, 0);
}

TENSOR_API tensor *tensor_special_expit(tensor *a) { return tensor_sigmoid(a); }
TENSOR_API tensor *tensor_special_exp2(tensor *a) { return tensor_exp2(a); }
TENSOR_API tensor *tensor_special_expm1(tensor *a) { return tensor_expm1(a); }
TENSOR_API tensor *tensor_special_log1p(tensor *a) { return tensor_log1p(a); }
TENSOR_API tensor *tensor_special_erf(tensor *a) { return tensor_erf(a); }
TENSOR_API tensor *tensor_special_erfc(tensor *a) { return tensor_erfc(a); }
TENSOR_API tensor *tensor_special_erfinv(tensor *a) { return tensor_erfinv(a); }
TENSOR_API tensor *tensor_special_gammaln(tensor *a) { return tensor_lgamma(a); }
TENSOR_API tensor *tensor_special_digamma(tensor *a) { return tensor_digamma(a); }
TENSOR_API tensor *tensor_special_psi(tensor *a) { return tensor_digamma(a); }
TENSOR_API tensor *tensor_special_polygamma(int64_t n, tensor *a) { return tensor_polygamma(n, a); }
TENSOR_API tensor *tensor_special_sinc(tensor *a) { return tensor_sinc(a); }
TENSOR_API tensor *tensor_special_round(tensor *a) { return tensor_round(a); }
TENSOR_API tensor *tensor_special_i0(tensor *a) { return tensor_i0(a); }
TENSOR_API tensor *tensor_special_logit(tensor *a, double eps) { return tensor_logit(a, eps); }
TENSOR_API tensor *tensor_special_xlogy(tensor *a, tensor *b) { return tensor_xlogy(a, b); }
TENSOR_API tensor *tensor_special_xlog1py(tensor *a, tensor *b) { return tensor_xlog1py(a, b); }
TENSOR_API tensor *tensor_special_softmax(tensor *t, int dim) { return tensor_softmax(t, dim); }
TENSOR_API tensor *tensor_special_log_softmax(tensor *t, int dim) { return tensor_log_softmax(t, dim); }
TENSOR_API tensor *tensor_special_logsumexp(tensor *t, int dim, bool keepdim) { return tensor_logsumexp(t, dim, keepdim); }

/* The multivariate log-gamma: a sum of p shifted lgammas, composed (so it differentiates and runs
   on any device); its domain is checked on the values, as PyTorch does (one value back). */
static tensor *tensor__multigammaln(const char *fn, tensor *a, int64_t p) {
    TENSOR__CHECK_ARG(fn, a);
    if (p < 1) return tensor__fail(fn, "p has to be greater than or equal to 1, got %lld", (long long)p);
    /* PyTorch's mvlgamma: bool refused, the other integers promoted to the default dtype (f32) */
    if (a->dtype == TENSOR_BOOL) return tensor__fail(fn, "the input tensor may not be a boolean tensor");
    if (!tensor__is_float(a->dtype)) {
        tensor *f = tensor_to_dtype(a, TENSOR_F32), *r = f ? tensor__multigammaln(fn, f, p) : NULL;
        tensor_free(f);
        return r;
    }
    if (tensor__numel_of(a->ndim, a->shape) > 0) {
        bool was = tensor_set_grad_enabled(false);
        tensor *m = tensor_min_all(a);
        double lo = m ? tensor_item(m) : NAN;
        tensor_free(m);
        tensor_set_grad_enabled(was);
        if (!m) return NULL;
        if (!(lo > 0.5 * (double)(p - 1))) return tensor__fail(fn, "all elements must be greater than (p-1)/2 = %g, found %g", 0.5 * (double)(p - 1), lo);
    }
    tensor *sum = tensor_lgamma(a);
    for (int64_t j = 1; j < p && sum; j++) {
        tensor *shifted = tensor_add_scalar(a, -0.5 * (double)j), *lg = tensor_lgamma(shifted), *next = tensor_add(sum, lg);
        tensor_free(shifted);
        tensor_free(lg);
        tensor_free(sum);
        sum = next;
    }
    tensor *out = tensor_add_scalar(sum, (double)p * (double)(p - 1) / 4 * 1.14472988584940017414); /* log(pi) */
    tensor_free(sum);
    return out;
}
TENSOR_API tensor *tensor_special_multigammaln(tensor *a, int64_t p) { return tensor__multigammaln("tensor_special_multigammaln", a, p); }
TENSOR_API tensor *tensor_mvlgamma(tensor *a, int64_t p) { return tensor__multigammaln("tensor_mvlgamma", a, p); }
