/* bench_gpt.c: one measurement of examples/gpt.c's model a run, printed as one line that
   bench/compare_torch_gpt.py reads (it runs PyTorch's nanoGPT-style model on the same
   configuration, then this, one process per item, so each peak RSS is that item's alone):
       bench_gpt train  --threads N [--batch B] [--steps S]   training tokens/s and peak memory
       bench_gpt sample --threads N [--tokens T]              sampling tokens/s at batch 1, KV cache
       bench_gpt attention --threads N                        the fused attention kernel against the
                                                               composite (matmul, where, softmax, matmul)
   The model is nanoGPT's character configuration (6 layers, 6 heads, width 384, context 256,
   vocabulary 256), dropout 0, f32, AdamW (weight decay on the 2-D weights), gradient clipping at 1;
   the batches are random bytes (the speed does not depend on the text). Times: the median step
   after one warm-up step. Peak memory: the process's peak RSS (VmHWM) less its RSS before the
   model was made. */
#define GPT_NO_MAIN
#define TENSOR_IMPLEMENTATION
#include "../examples/gpt.c"

static int64_t rss_kib(const char *field) {
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    int64_t v = -1;
    size_t n = strlen(field);
    while (f && fgets(line, sizeof line, f))
        if (!strncmp(line, field, n)) v = atoll(line + n + 1);
    if (f) fclose(f);
    return v;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Causal attention of the char config's shape (batch 8, 6 heads, 256 positions, head size 64), f32,
   forward and forward + backward (q, k, v requiring grad): the fused kernel against the composite
   written with public ops, medians of 7 runs each after a warm-up. */
static int attention(int threads) {
    int64_t B = 8, H = 6, T = 256, D = 64, s[4] = {B, H, T, D}, ms[2] = {T, T};
    tensor *q = tensor_set_requires_grad(tensor_randn(4, s, TENSOR_F32), true), *k = tensor_set_requires_grad(tensor_randn(4, s, TENSOR_F32), true);
    tensor *v = tensor_set_requires_grad(tensor_randn(4, s, TENSOR_F32), true), *mask = tensor_tril(tensor_ones(2, ms, TENSOR_BOOL), 0);
    tensor *ninf = tensor_scalar(-INFINITY, TENSOR_F32);
    double med[2][2];
    for (int way = 0; way < 2; way++)
        for (int bwd = 0; bwd < 2; bwd++) {
            double t[8];
            for (int r = 0; r < 8; r++) {
                tensor_scope_begin();
                double t0 = gpt_now();
                tensor *y = way == 0 ? tensor_scaled_dot_product_attention(q, k, v, NULL, true)
                                     : tensor_matmul(tensor_softmax(tensor_where(mask, tensor_mul_scalar(tensor_matmul(q, tensor_transpose(k, -1, -2)), 1 / sqrt((double)D)), ninf), -1), v);
                if (!y || (bwd && tensor_backward(tensor_sum_all(y)))) return gpt_fail("attention"), 1;
                t[r] = gpt_now() - t0;
                tensor_scope_end();
                tensor_zero_grad(q);
                tensor_zero_grad(k);
                tensor_zero_grad(v);
            }
            qsort(t + 1, 7, sizeof(double), cmp_double);
            med[way][bwd] = t[4];
        }
    printf("attention threads %d fused_fwd_ms %.2f composite_fwd_ms %.2f fused_fwdbwd_ms %.2f composite_fwdbwd_ms %.2f\n", threads, med[0][0] * 1e3,
           med[1][0] * 1e3, med[0][1] * 1e3, med[1][1] * 1e3);
    tensor_shutdown();
    return 0;
}

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: %s train|sample|attention --threads N [--batch B] [--steps S] [--tokens T]\n", argv[0]); return 2; }
    bool train = !strcmp(argv[1], "train");
    int threads = 1;
    int64_t batch = 8, steps = 5, n_tokens = 200;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--threads")) threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--batch")) batch = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--steps")) steps = atoll(argv[i + 1]);
        else if (!strcmp(argv[i], "--tokens")) n_tokens = atoll(argv[i + 1]);
    }
    if (steps < 1 || steps > 1000 || batch < 1 || n_tokens < 1 || n_tokens > 10000) return 2;
    tensor_set_num_threads(threads);
    tensor_manual_seed(1);
    if (!strcmp(argv[1], "attention")) return attention(threads);
    int64_t base = rss_kib("VmRSS:");
    gpt_config cfg = {6, 6, 384, 256, 256, 0};
    gpt_model m;
    if (gpt_init(&m, cfg, TENSOR_CPU, TENSOR_F32)) return 1;
    if (train) {
        gpt_train_opts o;
        memset(&o, 0, sizeof o);
        o.lr = 1e-3;
        o.weight_decay = 0.1;
        o.clip = 1.0;
        tensor_optim *opt = gpt_optimizer(&m, &o);
        if (!opt) return 1;
        int64_t T = cfg.block;
        double times[1001];
        for (int64_t s = 0; s <= steps; s++) {
            double t0 = gpt_now();
            tensor_scope_begin();
            tensor *x = tensor_randint(0, 256, 2, (int64_t[]){batch, T}, TENSOR_I64), *y = tensor_randint(0, 256, 2, (int64_t[]){batch, T}, TENSOR_I64);
            tensor *loss = gpt_loss(&m, x, y, true);
            int rc = loss ? tensor_backward(loss) : -1;
            tensor_scope_end();
            if (rc || tensor_clip_grad_norm(m.n_params, m.params, 1.0) < 0 || tensor_optim_step(opt)) return gpt_fail("bench_gpt"), 1;
            tensor_optim_zero_grad(opt);
            times[s] = gpt_now() - t0;
        }
        qsort(times + 1, (size_t)steps, sizeof(double), cmp_double); /* step 0 is the warm-up */
        double med = times[1 + steps / 2];
        printf("train threads %d batch %lld params %lld tokens_per_s %.1f peak_mib %.1f\n", threads, (long long)batch, (long long)gpt_count(&m),
               (double)(batch * T) / med, (double)(rss_kib("VmHWM:") - base) / 1024);
        tensor_optim_free(opt);
    } else {
        int64_t *tokens = (int64_t *)malloc(sizeof(int64_t) * (size_t)(16 + n_tokens));
        for (int i = 0; i < 16; i++) tokens[i] = 'a' + i;
        if (gpt_generate(&m, tokens, 16, 16, 1.0, 0, NULL)) return 1; /* warm-up */
        double t0 = gpt_now();
        if (gpt_generate(&m, tokens, 16, n_tokens, 1.0, 0, NULL)) return 1;
        double el = gpt_now() - t0;
        printf("sample threads %d tokens %lld tokens_per_s %.1f peak_mib %.1f\n", threads, (long long)n_tokens, (double)n_tokens / el,
               (double)(rss_kib("VmHWM:") - base) / 1024);
        free(tokens);
    }
    gpt_free(&m);
    tensor_shutdown();
    return 0;
}
