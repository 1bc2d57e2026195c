/* makemore.c: a character-level language model of English words (after Bengio et al. 2003 and
   Karpathy's makemore): embeddings of the previous BLOCK characters, an MLP with layer norm, a
   softmax over the next character. Trains on Debian's word list (apt-get install wamerican),
   reports train and validation loss against the uniform baseline ln(27), and samples new words.
   From the project root:
       cc -O2 examples/makemore.c -o makemore -lm -lpthread && ./makemore [steps] [--save FILE]
       ./makemore --load FILE [--samples N]     samples from a saved model (no training)
   The saved file is safetensors: the weights under the names below, the sizes in its metadata. */
#define TENSOR_IMPLEMENTATION
#include "../tensor.h"
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define BLOCK 6      /* characters of context */
#define EMB 24       /* embedding size */
#define HIDDEN 384
#define VOCAB 27     /* '.' (start/end) and a-z */
#define BATCH 128

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Every (context, next character) pair of a list of words. */
typedef struct { int64_t *ctx, *next; int64_t n, cap; } examples;
static void add_word(examples *e, const char *w) {
    int64_t c[BLOCK] = {0};
    size_t len = strlen(w);
    for (size_t i = 0; i <= len; i++) {
        if (e->n == e->cap) {
            e->cap = e->cap ? 2 * e->cap : 1 << 16;
            e->ctx = (int64_t *)realloc(e->ctx, sizeof(int64_t) * BLOCK * (size_t)e->cap);
            e->next = (int64_t *)realloc(e->next, sizeof(int64_t) * (size_t)e->cap);
        }
        int64_t ch = i < len ? w[i] - 'a' + 1 : 0;
        memcpy(e->ctx + e->n * BLOCK, c, sizeof c);
        e->next[e->n++] = ch;
        memmove(c, c + 1, sizeof(int64_t) * (BLOCK - 1));
        c[BLOCK - 1] = ch;
    }
}

typedef struct { tensor *emb, *w1, *b1, *ln_w, *ln_b, *w2, *b2; } model;

static tensor *param(int ndim, const int64_t *shape) { return tensor_set_requires_grad(tensor_zeros(ndim, shape, TENSOR_F32), true); }

/* ctx: [B, BLOCK] int64 -> logits [B, VOCAB] */
static tensor *forward(model *m, tensor *ctx) {
    tensor *e = tensor_embedding(m->emb, ctx);                       /* [B, BLOCK, EMB] */
    tensor *h = tensor_linear(tensor_flatten(e, 1, -1), m->w1, m->b1); /* [B, HIDDEN] */
    h = tensor_tanh(tensor_layer_norm(h, m->ln_w, m->ln_b, 1e-5));
    return tensor_linear(h, m->w2, m->b2);
}

static double mean_loss(model *m, const examples *e, int64_t limit) {
    bool was = tensor_set_grad_enabled(false);
    double total = 0;
    int64_t n = e->n < limit ? e->n : limit, done = 0;
    for (int64_t i = 0; i < n; i += 4096) {
        int64_t b = n - i < 4096 ? n - i : 4096;
        tensor_scope_begin();
        tensor *loss = tensor_cross_entropy(forward(m, tensor_from_data(e->ctx + i * BLOCK, TENSOR_SHAPE(b, BLOCK), TENSOR_I64)),
                                            tensor_from_data(e->next + i, TENSOR_SHAPE(b), TENSOR_I64));
        total += tensor_item(loss) * (double)b;
        done += b;
        tensor_scope_end();
    }
    tensor_set_grad_enabled(was);
    return total / (double)done;
}

static const char *const names[7] = {"emb", "fc1.weight", "fc1.bias", "ln.weight", "ln.bias", "fc2.weight", "fc2.bias"};

/* The model's weights into path, with its sizes in the metadata. */
static int save_model(const char *path, tensor *const *params) {
    tensor_dict *d = tensor_state_dict(7, names, params);
    char sizes[64];
    snprintf(sizes, sizeof sizes, "block %d, embedding %d, hidden %d", BLOCK, EMB, HIDDEN);
    int rc = d ? tensor_dict_set_metadata(d, "sizes", sizes) : -1;
    if (rc == 0) rc = tensor_save(path, d);
    tensor_dict_free(d);
    return rc;
}
/* Weights of the same names and shapes from path into params (every name and shape checked first). */
static int load_model(const char *path, tensor *const *params) {
    tensor_dict *d = tensor_load(path, TENSOR_LOAD_MMAP);
    int rc = d ? tensor_load_state_dict(d, 7, names, params, true) : -1;
    tensor_dict_free(d);
    return rc;
}

/* n words drawn from the model, one character at a time. */
static void sample_words(model *m, int n) {
    bool was = tensor_set_grad_enabled(false);
    for (int w = 0; w < n; w++) {
        int64_t c[BLOCK] = {0};
        char out[64];
        int len = 0;
        for (;;) {
            tensor_scope_begin();
            tensor *probs = tensor_softmax(forward(m, tensor_from_data(c, TENSOR_SHAPE(1, BLOCK), TENSOR_I64)), 1);
            int64_t ch = (int64_t)tensor_item(tensor_multinomial(probs, 1, true));
            tensor_scope_end();
            if (ch == 0 || len == 63) break;
            out[len++] = (char)('a' + ch - 1);
            memmove(c, c + 1, sizeof(int64_t) * (BLOCK - 1));
            c[BLOCK - 1] = ch;
        }
        out[len] = 0;
        printf("  %s\n", out);
    }
    tensor_set_grad_enabled(was);
}

static model model_new(void) {
    model m = {param(TENSOR_SHAPE(VOCAB, EMB)), param(TENSOR_SHAPE(HIDDEN, BLOCK * EMB)), param(TENSOR_SHAPE(HIDDEN)),
               tensor_set_requires_grad(tensor_ones(TENSOR_SHAPE(HIDDEN), TENSOR_F32), true), param(TENSOR_SHAPE(HIDDEN)),
               param(TENSOR_SHAPE(VOCAB, HIDDEN)), param(TENSOR_SHAPE(VOCAB))};
    return m;
}

int main(int argc, char **argv) {
    int64_t steps = 30000;
    const char *save = NULL, *load = NULL;
    int samples = 20;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--save") && i + 1 < argc) save = argv[++i];
        else if (!strcmp(argv[i], "--load") && i + 1 < argc) load = argv[++i];
        else if (!strcmp(argv[i], "--samples") && i + 1 < argc) samples = atoi(argv[++i]);
        else if (atoll(argv[i]) > 0) steps = atoll(argv[i]);
        else { fprintf(stderr, "usage: %s [steps] [--save FILE] | --load FILE [--samples N]\n", argv[0]); return 2; }
    }
    if (load) { /* sample from a saved model */
        model m = model_new();
        tensor *params[7] = {m.emb, m.w1, m.b1, m.ln_w, m.ln_b, m.w2, m.b2};
        if (load_model(load, params)) {
            fprintf(stderr, "cannot load %s: %s\n", load, tensor_last_error() ? tensor_last_error() : "see above");
            return 1;
        }
        tensor_manual_seed((uint64_t)time(NULL));
        printf("%d words sampled from %s:\n", samples, load);
        sample_words(&m, samples);
        tensor_shutdown();
        return 0;
    }
    FILE *f = fopen("/usr/share/dict/words", "r");
    if (!f) { fprintf(stderr, "cannot open /usr/share/dict/words: apt-get install wamerican\n"); return 1; }
    /* lower-cased words of letters only, deduplicated (the list has "Ada" and "ada") */
    char line[256], prev[256] = "";
    char **words = NULL;
    int64_t n_words = 0, cap = 0;
    while (fgets(line, sizeof line, f)) {
        size_t len = strcspn(line, "\r\n");
        line[len] = 0;
        bool ok = len > 0;
        for (size_t i = 0; i < len && ok; i++) { ok = isalpha((unsigned char)line[i]) && (unsigned char)line[i] < 128; line[i] = (char)tolower((unsigned char)line[i]); }
        if (!ok || !strcmp(line, prev)) continue;
        strcpy(prev, line);
        if (n_words == cap) { cap = cap ? 2 * cap : 4096; words = (char **)realloc(words, sizeof(char *) * (size_t)cap); }
        words[n_words++] = strdup(line);
    }
    fclose(f);
    tensor_manual_seed(42);
    /* shuffle the words, then 90% train / 10% validation */
    tensor_scope_begin();
    int64_t *perm = (int64_t *)malloc(sizeof(int64_t) * (size_t)n_words);
    tensor_copy_to(tensor_randperm(n_words, TENSOR_I64), perm, sizeof(int64_t) * (size_t)n_words);
    tensor_scope_end();
    examples train = {0}, val = {0};
    for (int64_t i = 0; i < n_words; i++) add_word(i < n_words * 9 / 10 ? &train : &val, words[perm[i]]);
    printf("%lld words: %lld training and %lld validation examples; context %d, embedding %d, hidden %d\n",
           (long long)n_words, (long long)train.n, (long long)val.n, BLOCK, EMB, HIDDEN);

    model m = model_new();
    tensor_normal_(m.emb, 0, 1);
    tensor_kaiming_uniform_(m.w1, sqrt(5.0));
    tensor_uniform_(m.b1, -1 / sqrt(BLOCK * EMB), 1 / sqrt(BLOCK * EMB));
    tensor_normal_(m.w2, 0, 0.01); /* small logits at first: the loss starts near ln(27) */
    tensor *params[7] = {m.emb, m.w1, m.b1, m.ln_w, m.ln_b, m.w2, m.b2};
    double lr = 3e-3;
    tensor_optim *opt = tensor_optim_adamw(7, params, lr, 0.9, 0.999, 1e-8, 1e-2);
    if (!opt) { fprintf(stderr, "%s\n", tensor_last_error()); return 1; }

    int64_t bctx[BATCH * BLOCK], bnext[BATCH];
    bool tty = isatty(fileno(stdout));
    double t0 = now_seconds(), last = t0, smooth = log(27.0);
    for (int64_t s = 1; s <= steps; s++) {
        if (s == steps * 3 / 4) tensor_optim_set_lr(opt, lr / 10); /* a late step down, as makemore does */
        tensor_scope_begin();
        tensor *pick = tensor_randint(0, train.n, TENSOR_SHAPE(BATCH), TENSOR_I64);
        int64_t idx[BATCH];
        tensor_copy_to(pick, idx, sizeof idx);
        for (int j = 0; j < BATCH; j++) {
            memcpy(bctx + j * BLOCK, train.ctx + idx[j] * BLOCK, sizeof(int64_t) * BLOCK);
            bnext[j] = train.next[idx[j]];
        }
        tensor *loss = tensor_cross_entropy(forward(&m, tensor_from_data(bctx, TENSOR_SHAPE(BATCH, BLOCK), TENSOR_I64)),
                                            tensor_from_data(bnext, TENSOR_SHAPE(BATCH), TENSOR_I64));
        tensor_optim_zero_grad(opt);
        if (tensor_backward(loss) || tensor_optim_step(opt)) { fprintf(stderr, "%s\n", tensor_last_error()); return 1; }
        smooth = 0.99 * smooth + 0.01 * tensor_item(loss);
        tensor_scope_end();
        double t = now_seconds();
        if (t - last >= 1.0 || s == steps) {
            double el = t - t0;
            printf("%sstep %lld/%lld  loss %.4f  %.0f ex/s  ETA %.0fs%s", tty ? "\r" : "", (long long)s, (long long)steps, smooth,
                   (double)(s * BATCH) / el, el / (double)s * (double)(steps - s), tty ? "   " : "\n");
            fflush(stdout);
            last = t;
        }
    }
    if (tty) printf("\n");
    double train_loss = mean_loss(&m, &train, 200000), val_loss = mean_loss(&m, &val, val.n);
    printf("train loss %.4f, validation loss %.4f (uniform baseline ln(27) = %.4f), %.1f s\n", train_loss, val_loss, log(27.0), now_seconds() - t0);

    if (save) {
        if (save_model(save, params)) { fprintf(stderr, "cannot save %s: %s\n", save, tensor_last_error()); return 1; }
        printf("saved the model to %s (sample from it: ./makemore --load %s)\n", save, save);
    }
    printf("%d sampled words:\n", samples);
    sample_words(&m, samples);
    tensor_optim_free(opt);
    for (int64_t i = 0; i < n_words; i++) free(words[i]);
    free(words); free(perm);
    free(train.ctx); free(train.next); free(val.ctx); free(val.next);
    tensor_shutdown();
    return 0;
}
