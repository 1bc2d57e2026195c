/* The optimizers' update (tensor__optim_update, >>formulas) must round the same wherever it is
   compiled: tests/compile_matrix.sh builds this twice, with the compiler free to contract a * b + c
   into a fused multiply-add (-mfma -ffp-contract=fast, as nvcc does by default) and with
   contraction off, and compares what the two print: a hash of the bits of many updates. */
#define TENSOR__DEVICE_SOURCE /* the shared formulas only, as tensor_cuda.cu gets them */
#include "tensor.h"
#include <stdio.h>
#include <string.h>

static uint64_t state = 88172645463325252ull;
static double next_uniform(double lo, double hi) { /* xorshift64 */
    state ^= state << 13;
    state ^= state >> 7;
    state ^= state << 17;
    return lo + (hi - lo) * (double)(state >> 11) * (1.0 / 9007199254740992.0);
}
static uint64_t hash_in(uint64_t h, double v) {
    uint64_t b;
    memcpy(&b, &v, sizeof b);
    return (h ^ b) * 1099511628211ull;
}

int main(void) {
    uint64_t h = 14695981039346656037ull;
    for (int kind = 0; kind < 3; kind++)
        for (int i = 0; i < 20000; i++) {
            tensor__optim_rule r;
            memset(&r, 0, sizeof r);
            r.kind = kind == 0 ? TENSOR__SGD : kind == 1 ? TENSOR__ADAM : TENSOR__ADAMW;
            r.first = i % 7 == 0;
            r.nesterov = i % 2 == 0;
            r.lr = next_uniform(1e-4, 0.3);
            r.momentum = i % 3 ? next_uniform(0.5, 0.99) : 0;
            r.weight_decay = i % 5 ? next_uniform(0, 0.1) : 0;
            r.beta1 = next_uniform(0.8, 0.95);
            r.beta2 = next_uniform(0.9, 0.9999);
            r.eps = 1e-8;
            r.bias1 = next_uniform(0.05, 1);
            r.bias2 = next_uniform(0.001, 1);
            double p = next_uniform(-3, 3), g = next_uniform(-2, 2), s1 = next_uniform(-1, 1), s2 = next_uniform(0, 1);
            bool f64 = i % 2 == 1;
            p = tensor__optim_update(&r, p, g, &s1, &s2, f64);
            h = hash_in(hash_in(hash_in(h, p), s1), s2);
        }
    printf("%016llx\n", (unsigned long long)h);
    return 0;
}
