/* gpt.c: a GPT (GPT-2's architecture) trained on real English text, resumed from checkpoints,
   sampled with a KV cache, and able to run GPT-2's own weights. After nanoGPT (its character-level
   configuration is the default size here) and llm.c.

   The model: token and position embeddings; pre-LayerNorm blocks of causal self-attention (one fused
   q/k/v projection, tensor_scaled_dot_product_attention with is_causal) and a 4x MLP with GELU's
   tanh form, each added back to the residual stream; a final LayerNorm; the output head tied to the
   token embedding. Dropout on the embeddings and on each residual branch (nanoGPT also drops
   attention probabilities; tensor_scaled_dot_product_attention has no dropout argument).

   The data: the fortunes of Debian's `fortunes` package (apt-get install fortunes), every file
   under /usr/share/games/fortunes with the `%` separator lines dropped, as bytes (a vocabulary of
   256); the first 90% trains and the last 10% validates. --data FILE trains on any other file.

   Training: AdamW (weight decay on the linear layers' weight matrices only: biases, norms and the
   embedding tables form a second parameter group without it), linear warmup then cosine decay of
   the learning rate, the gradient norm clipped at 1.0, --accum micro-batches a step. --bf16 runs
   the matmuls and attention on bf16 copies of the f32 master weights (as torch.autocast), the loss
   in f32. --cuda runs it on the GPU (link tensor_cuda.o; see the README).

   From the project root:
       cc -O2 examples/gpt.c -o gpt -lm -lpthread
       ./gpt [--steps N] [--layers L --heads H --embd C --block T] [--batch B] [--accum K] [--lr LR]
             [--dropout P] [--eval-every N] [--save FILE] [--load FILE] [--bf16] [--cuda]
             [--sample N] [--prompt TEXT] [--temperature T] [--top-k K] [--seed S]
       ./gpt --load FILE --steps 0 --sample 500        samples from a checkpoint
       ./gpt --load model.safetensors --tokens "464 2068 7586"   GPT-2's weights (Hugging Face's
             file): prints the most likely next tokens, or with --sample N the ids of N sampled ones
   On several processes (README: Training on several machines), built with
       mpicc -O2 -DTENSOR_USE_MPI examples/gpt.c -o gpt -lm -lpthread && mpirun -np 2 ./gpt ...
   every rank draws the same batches and trains on its share of each (--batch must split evenly),
   tensor_ddp averages the gradients, and rank 0 alone prints, saves and samples.
   --save writes a checkpoint (weights, optimizer, generator, step) at every evaluation and at the
   end; --load resumes from one: the steps after it are bit for bit those of the uninterrupted run
   on the CPU. */
#ifndef GPT_NO_MAIN
#define TENSOR_IMPLEMENTATION
#elif defined(__GNUC__)
#pragma GCC diagnostic ignored "-Wunused-function" /* a test or bench includes this file for some of its functions */
#endif
#include "../tensor.h"
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- the model ---- */
typedef struct {
    int layers, heads, embd, block, vocab;
    double dropout;
} gpt_config;

typedef struct {
    tensor *ln1_w, *ln1_b, *qkv_w, *qkv_b, *proj_w, *proj_b; /* Linear weights as [out, in] */
    tensor *ln2_w, *ln2_b, *fc_w, *fc_b, *fc_proj_w, *fc_proj_b;
} gpt_block;

#define GPT_MAX_LAYERS 64
#define GPT_BLOCK_PARAMS 12
typedef struct {
    gpt_config cfg;
    tensor *wte, *wpe, *lnf_w, *lnf_b;
    gpt_block h[GPT_MAX_LAYERS];
    int n_params;
    tensor **params;   /* every parameter, in the order of names */
    char **names;
    tensor_dtype compute; /* f32, or bf16 for --bf16 */
    tensor_device device;
    /* the KV cache: per layer [1, heads, block, embd / heads], filled up to cache_len */
    tensor *cache_k[GPT_MAX_LAYERS], *cache_v[GPT_MAX_LAYERS];
    int64_t cache_len;
} gpt_model;

static int gpt_fail(const char *what) {
    fprintf(stderr, "%s: %s\n", what, tensor_last_error() ? tensor_last_error() : "out of memory");
    return -1;
}

static tensor *gpt_param_new(gpt_model *m, const char *name, int ndim, const int64_t *shape, double init_std, double fill) {
    tensor *t = tensor_zeros(ndim, shape, TENSOR_F32);
    if (t && init_std > 0) tensor_normal_(t, 0, init_std);
    else if (t && fill != 0) tensor_fill_(t, fill);
    if (!t) return NULL;
    if (m->device != TENSOR_CPU) { /* a leaf on the device */
        tensor *d = tensor_to_device(t, m->device);
        tensor_free(t);
        if (!d) return NULL;
        t = d;
    }
    tensor_set_requires_grad(t, true);
    char *copy = strdup(name);
    if (!copy) { tensor_free(t); return NULL; }
    m->params[m->n_params] = t;
    m->names[m->n_params] = copy;
    m->n_params++;
    return t;
}

static void gpt_free(gpt_model *m) {
    for (int i = 0; i < m->n_params; i++) { tensor_free(m->params[i]); free(m->names[i]); }
    for (int l = 0; l < m->cfg.layers; l++) { tensor_free(m->cache_k[l]); tensor_free(m->cache_v[l]); }
    free(m->params);
    free(m->names);
    memset(m, 0, sizeof *m);
}

/* A model of config c with GPT-2's initialization (normal(0, 0.02); the residual projections
   0.02 / sqrt(2 layers); biases 0, norms 1), from the current generator. 0, or -1 and a message. */
static int gpt_init(gpt_model *m, gpt_config c, tensor_device device, tensor_dtype compute) {
    memset(m, 0, sizeof *m);
    if (c.layers < 1 || c.layers > GPT_MAX_LAYERS || c.heads < 1 || c.embd < 1 || c.embd % c.heads || c.block < 1 || c.vocab < 1) {
        fprintf(stderr, "bad model size: %d layers (1..%d), %d heads, width %d (a multiple of the heads), context %d, vocabulary %d\n",
                c.layers, GPT_MAX_LAYERS, c.heads, c.embd, c.block, c.vocab);
        return -1;
    }
    m->cfg = c;
    m->device = device;
    m->compute = compute;
    int total = 4 + GPT_BLOCK_PARAMS * c.layers;
    m->params = (tensor **)calloc((size_t)total, sizeof(tensor *));
    m->names = (char **)calloc((size_t)total, sizeof(char *));
    if (!m->params || !m->names) return gpt_fail("gpt_init");
    int64_t C = c.embd;
    double std = 0.02, proj_std = 0.02 / sqrt(2.0 * c.layers);
    bool ok = (m->wte = gpt_param_new(m, "tok_emb", 2, (int64_t[]){c.vocab, C}, std, 0)) != NULL;
    ok = ok && (m->wpe = gpt_param_new(m, "pos_emb", 2, (int64_t[]){c.block, C}, std, 0)) != NULL;
    for (int l = 0; ok && l < c.layers; l++) {
        gpt_block *b = &m->h[l];
        char n[64];
#define GPT_P(field, suffix, nd, shape, s, f) (snprintf(n, sizeof n, "blocks.%d.%s", l, suffix), ok = ok && (b->field = gpt_param_new(m, n, nd, shape, s, f)) != NULL)
        GPT_P(ln1_w, "ln1.weight", 1, ((int64_t[]){C}), 0, 1);
        GPT_P(ln1_b, "ln1.bias", 1, ((int64_t[]){C}), 0, 0);
        GPT_P(qkv_w, "attn.qkv.weight", 2, ((int64_t[]){3 * C, C}), std, 0);
        GPT_P(qkv_b, "attn.qkv.bias", 1, ((int64_t[]){3 * C}), 0, 0);
        GPT_P(proj_w, "attn.proj.weight", 2, ((int64_t[]){C, C}), proj_std, 0);
        GPT_P(proj_b, "attn.proj.bias", 1, ((int64_t[]){C}), 0, 0);
        GPT_P(ln2_w, "ln2.weight", 1, ((int64_t[]){C}), 0, 1);
        GPT_P(ln2_b, "ln2.bias", 1, ((int64_t[]){C}), 0, 0);
        GPT_P(fc_w, "mlp.fc.weight", 2, ((int64_t[]){4 * C, C}), std, 0);
        GPT_P(fc_b, "mlp.fc.bias", 1, ((int64_t[]){4 * C}), 0, 0);
        GPT_P(fc_proj_w, "mlp.proj.weight", 2, ((int64_t[]){C, 4 * C}), proj_std, 0);
        GPT_P(fc_proj_b, "mlp.proj.bias", 1, ((int64_t[]){C}), 0, 0);
#undef GPT_P
    }
    ok = ok && (m->lnf_w = gpt_param_new(m, "ln_f.weight", 1, (int64_t[]){C}, 0, 1)) != NULL;
    ok = ok && (m->lnf_b = gpt_param_new(m, "ln_f.bias", 1, (int64_t[]){C}, 0, 0)) != NULL;
    if (!ok) { gpt_free(m); return gpt_fail("gpt_init"); }
    return 0;
}

static int64_t gpt_count(const gpt_model *m) {
    int64_t n = 0;
    for (int i = 0; i < m->n_params; i++) n += tensor_numel(m->params[i]);
    return n;
}

/* x @ w^T + b in the compute dtype, back in f32 */
static tensor *gpt_linear(const gpt_model *m, tensor *x, tensor *w, tensor *b) {
    if (m->compute == TENSOR_F32) return tensor_linear(x, w, b);
    tensor_dtype d = m->compute;
    return tensor_to_dtype(tensor_linear(tensor_to_dtype(x, d), tensor_to_dtype(w, d), b ? tensor_to_dtype(b, d) : NULL), TENSOR_F32);
}

/* [B, T, C] -> [B, heads, T, C / heads] */
static tensor *gpt_heads(tensor *x, int64_t B, int64_t T, int heads, int64_t D) {
    return tensor_transpose(tensor_view(x, 4, (int64_t[]){B, T, heads, D}), 1, 2);
}

/* x itself when nothing is dropped (evaluation, or p == 0), as PyTorch's dropout returns its input */
static tensor *gpt_dropout(tensor *x, double p, bool training) { return training && p > 0 ? tensor_dropout(x, p, training) : x; }

/* idx [B, T] int64 (positions pos..pos+T-1) -> logits [B, T, vocab] in f32. With use_cache (B 1,
   under no-grad) the keys and values of these positions are written into the cache, and the
   attention reads every cached position: a whole prompt at pos 0, then one token a step. */
static tensor *gpt_forward(gpt_model *m, tensor *idx, int64_t pos, bool training, bool use_cache) {
    const gpt_config *c = &m->cfg;
    int64_t B = tensor_size(idx, 0), T = tensor_size(idx, 1), C = c->embd, D = C / c->heads;
    if (pos + T > c->block) {
        fprintf(stderr, "gpt_forward: positions up to %lld, the context is %d\n", (long long)(pos + T), c->block);
        return NULL;
    }
    if (use_cache && pos > 0 && T != 1) {
        fprintf(stderr, "gpt_forward: after the prompt the cache takes one token a step\n");
        return NULL;
    }
    tensor *positions = tensor_narrow(m->wpe, 0, pos, T); /* [T, C], broadcast over the batch */
    tensor *x = gpt_dropout(tensor_add(tensor_embedding(m->wte, idx), positions), c->dropout, training);
    for (int l = 0; l < c->layers; l++) {
        gpt_block *b = &m->h[l];
        tensor *qkv = gpt_linear(m, tensor_layer_norm(x, b->ln1_w, b->ln1_b, 1e-5), b->qkv_w, b->qkv_b); /* [B, T, 3C] */
        tensor *parts[3] = {NULL, NULL, NULL};
        if (tensor_split(qkv, C, 2, parts, 3) != 3) return NULL;
        tensor *q = gpt_heads(parts[0], B, T, c->heads, D), *k = gpt_heads(parts[1], B, T, c->heads, D), *v = gpt_heads(parts[2], B, T, c->heads, D);
        bool causal = true;
        if (use_cache) { /* write these positions, then attend over all that is cached */
            if (!tensor_copy_(tensor_narrow(m->cache_k[l], 2, pos, T), k) || !tensor_copy_(tensor_narrow(m->cache_v[l], 2, pos, T), v)) return NULL;
            k = tensor_narrow(m->cache_k[l], 2, 0, pos + T);
            v = tensor_narrow(m->cache_v[l], 2, 0, pos + T);
            causal = pos == 0; /* the prompt: causal within itself; one new token sees every cached one */
        }
        if (m->compute != TENSOR_F32) { q = tensor_to_dtype(q, m->compute); k = tensor_to_dtype(k, m->compute); v = tensor_to_dtype(v, m->compute); }
        tensor *y = tensor_to_dtype(tensor_scaled_dot_product_attention(q, k, v, NULL, causal), TENSOR_F32); /* [B, H, T, D] */
        y = tensor_reshape(tensor_transpose(y, 1, 2), 3, (int64_t[]){B, T, C});
        x = tensor_add(x, gpt_dropout(gpt_linear(m, y, b->proj_w, b->proj_b), c->dropout, training));
        tensor *h = tensor_gelu_tanh(gpt_linear(m, tensor_layer_norm(x, b->ln2_w, b->ln2_b, 1e-5), b->fc_w, b->fc_b));
        x = tensor_add(x, gpt_dropout(gpt_linear(m, h, b->fc_proj_w, b->fc_proj_b), c->dropout, training));
    }
    if (use_cache) m->cache_len = pos + T;
    return gpt_linear(m, tensor_layer_norm(x, m->lnf_w, m->lnf_b, 1e-5), m->wte, NULL); /* the head is the token embedding */
}

/* The mean cross-entropy of predicting targets [B, T] from idx [B, T]. */
static tensor *gpt_loss(gpt_model *m, tensor *idx, tensor *targets, bool training) {
    tensor *logits = gpt_forward(m, idx, 0, training, false);
    int64_t n = tensor_numel(idx);
    return tensor_cross_entropy(tensor_view(logits, 2, (int64_t[]){n, m->cfg.vocab}), tensor_view(targets, 1, &n));
}

/* The cache tensors (once; kept out of every scope). */
static int gpt_cache_alloc(gpt_model *m) {
    if (m->cache_k[0]) { m->cache_len = 0; return 0; }
    int64_t shape[4] = {1, m->cfg.heads, m->cfg.block, m->cfg.embd / m->cfg.heads};
    for (int l = 0; l < m->cfg.layers; l++) {
        tensor *k = tensor_zeros(4, shape, TENSOR_F32), *v = tensor_zeros(4, shape, TENSOR_F32);
        m->cache_k[l] = k && m->device != TENSOR_CPU ? tensor_to_device(k, m->device) : k;
        m->cache_v[l] = v && m->device != TENSOR_CPU ? tensor_to_device(v, m->device) : v;
        if (m->device != TENSOR_CPU) { tensor_free(k); tensor_free(v); }
        if (!m->cache_k[l] || !m->cache_v[l]) return gpt_fail("gpt_cache_alloc");
    }
    m->cache_len = 0;
    return 0;
}

/* ---- data ---- */
typedef struct {
    unsigned char *bytes;
    int64_t n, n_train; /* [0, n_train) trains, [n_train, n) validates */
} gpt_data;

static int gpt_cmp_names(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Appends the file at path to *buf, dropping the lines that are only "%" when drop_separators. */
static int gpt_append_file(const char *path, bool drop_separators, unsigned char **buf, int64_t *n, int64_t *cap) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    char line[65536];
    while (fgets(line, sizeof line, f)) {
        size_t len = strlen(line);
        if (drop_separators && (!strcmp(line, "%\n") || !strcmp(line, "%"))) continue;
        if (*n + (int64_t)len > *cap) {
            *cap = (*cap + (int64_t)len) * 2;
            unsigned char *nb = (unsigned char *)realloc(*buf, (size_t)*cap);
            if (!nb) { fclose(f); return -1; }
            *buf = nb;
        }
        memcpy(*buf + *n, line, len);
        *n += (int64_t)len;
    }
    fclose(f);
    return 0;
}

#define GPT_FORTUNES "/usr/share/games/fortunes"
/* The text: path, or every fortune file (names without a dot: the .dat indexes and .u8 links are
   not text), sorted by name. 0; 2 after a message when it is missing. */
static int gpt_data_load(gpt_data *d, const char *path) {
    memset(d, 0, sizeof *d);
    int64_t cap = 0;
    if (path) {
        if (gpt_append_file(path, false, &d->bytes, &d->n, &cap)) { fprintf(stderr, "cannot read %s\n", path); return 2; }
    } else {
        DIR *dir = opendir(GPT_FORTUNES);
        if (!dir) {
            fprintf(stderr, "cannot open %s: the training text is Debian's fortunes (apt-get install fortunes), or pass --data FILE\n", GPT_FORTUNES);
            return 2;
        }
        char *names[512];
        int count = 0;
        struct dirent *e;
        while ((e = readdir(dir)) && count < 512)
            if (e->d_name[0] != '.' && !strchr(e->d_name, '.') && (names[count] = strdup(e->d_name)) != NULL) count++;
        closedir(dir);
        qsort(names, (size_t)count, sizeof names[0], gpt_cmp_names);
        for (int i = 0; i < count; i++) {
            char p[1024];
            snprintf(p, sizeof p, "%s/%s", GPT_FORTUNES, names[i]);
            gpt_append_file(p, true, &d->bytes, &d->n, &cap); /* a directory or unreadable file adds nothing */
            free(names[i]);
        }
        if (d->n == 0) { fprintf(stderr, "no fortunes under %s (apt-get install fortunes)\n", GPT_FORTUNES); return 2; }
    }
    d->n_train = d->n * 9 / 10;
    return 0;
}

/* A batch of B windows of T + 1 bytes: x the first T, y the T after each (one byte on). Windows of
   the training part start at random offsets (the current generator); of the validation part, at
   B evenly spaced offsets shifted by `which`, so every evaluation sees the same text. */
static int gpt_batch(const gpt_data *d, bool train, int64_t B, int64_t T, int64_t which, tensor_device device, tensor **x, tensor **y) {
    int64_t lo = train ? 0 : d->n_train, span = (train ? d->n_train : d->n - d->n_train) - T - 1;
    if (span < 1) { fprintf(stderr, "the %s text (%lld bytes) is shorter than the context + 1\n", train ? "training" : "validation", (long long)(span + T + 1)); return -1; }
    int64_t *xs = (int64_t *)malloc(sizeof(int64_t) * (size_t)(B * T)), *ys = (int64_t *)malloc(sizeof(int64_t) * (size_t)(B * T));
    int64_t *start = (int64_t *)malloc(sizeof(int64_t) * (size_t)B);
    int rc = xs && ys && start ? 0 : -1;
    if (rc == 0 && train) rc = tensor_copy_to(tensor_randint(0, span, 1, &B, TENSOR_I64), start, sizeof(int64_t) * (size_t)B);
    for (int64_t b = 0; rc == 0 && b < B; b++) {
        /* validation: the golden ratio's multiples spread the windows evenly over the text */
        int64_t s = train ? start[b] : (int64_t)(fmod((double)(which * B + b + 1) * 0.6180339887498949, 1.0) * (double)span);
        for (int64_t t = 0; t < T; t++) {
            xs[b * T + t] = d->bytes[lo + s + t];
            ys[b * T + t] = d->bytes[lo + s + t + 1];
        }
    }
    *x = rc == 0 ? tensor_from_data(xs, 2, (int64_t[]){B, T}, TENSOR_I64) : NULL;
    *y = rc == 0 ? tensor_from_data(ys, 2, (int64_t[]){B, T}, TENSOR_I64) : NULL;
    if (*x && device != TENSOR_CPU) { *x = tensor_to_device(*x, device); *y = tensor_to_device(*y, device); }
    free(xs); free(ys); free(start);
    return *x && *y ? 0 : -1;
}

/* The mean validation loss over n_batches fixed batches. */
static double gpt_eval(gpt_model *m, const gpt_data *d, int64_t B, int n_batches) {
    bool was = tensor_set_grad_enabled(false);
    double total = 0;
    for (int i = 0; i < n_batches; i++) {
        tensor_scope_begin();
        tensor *x, *y;
        double v = gpt_batch(d, false, B, m->cfg.block, i, m->device, &x, &y) ? NAN : tensor_item(gpt_loss(m, x, y, false));
        tensor_scope_end();
        total += v;
    }
    tensor_set_grad_enabled(was);
    return total / n_batches;
}

/* ---- training ---- */
typedef struct {
    int64_t steps, batch, accum, warmup, eval_every;
    int eval_batches;
    double lr, min_lr, weight_decay, clip;
    const char *save;
    bool quiet;
    int64_t stop; /* stop after this step (the schedule still runs to steps); 0: at steps */
    tensor_ddp *ddp; /* under mpirun: averages the gradients; rank `rank` of `world` trains on its share of each batch */
    int rank, world;
} gpt_train_opts;

/* AdamW over m: group 0 the weight matrices of the linear layers with weight decay, group 1 the
   rest without: biases, norms and the embedding tables (the token table, the head's weight too,
   among them). */
static tensor_optim *gpt_optimizer(gpt_model *m, const gpt_train_opts *o) {
    tensor **decay = (tensor **)malloc(sizeof(tensor *) * (size_t)m->n_params), **plain = (tensor **)malloc(sizeof(tensor *) * (size_t)m->n_params);
    int nd = 0, np = 0;
    for (int i = 0; decay && plain && i < m->n_params; i++) {
        if (tensor_ndim(m->params[i]) >= 2 && m->params[i] != m->wte && m->params[i] != m->wpe) decay[nd++] = m->params[i];
        else plain[np++] = m->params[i];
    }
    tensor_optim *opt = decay && plain ? tensor_optim_adamw(nd, decay, o->lr, 0.9, 0.99, 1e-8, o->weight_decay) : NULL;
    if (opt && tensor_optim_add_group(opt, np, plain, o->lr, 0) != 1) { tensor_optim_free(opt); opt = NULL; }
    free(decay);
    free(plain);
    if (!opt) gpt_fail("gpt_optimizer");
    return opt;
}

/* Checkpoint: the weights under their names, the optimizer under "optim", the generator under "rng",
   the steps done under "step", the sizes in the metadata. */
static int gpt_save(const char *path, gpt_model *m, tensor_optim *opt, int64_t step) {
    tensor_dict *d = tensor_state_dict(m->n_params, (const char *const *)m->names, m->params);
    tensor *s = tensor_scalar((double)step, TENSOR_I64);
    char sizes[160];
    snprintf(sizes, sizeof sizes, "layers %d heads %d embd %d block %d vocab %d dropout %.17g", m->cfg.layers, m->cfg.heads, m->cfg.embd, m->cfg.block,
             m->cfg.vocab, m->cfg.dropout);
    int rc = d && s ? tensor_dict_set(d, "step", s) : -1;
    if (rc == 0 && opt) rc = tensor_optim_state_save(opt, d, "optim");
    if (rc == 0) rc = tensor_rng_state_save(d, "rng");
    if (rc == 0) rc = tensor_dict_set_metadata(d, "gpt", sizes);
    if (rc == 0) rc = tensor_save(path, d);
    if (rc) gpt_fail(path);
    tensor_free(s);
    tensor_dict_free(d);
    return rc;
}

/* The sizes a checkpoint of ours records; 0, or -1 when it is not one. */
static int gpt_checkpoint_config(const tensor_dict *d, gpt_config *c) {
    const char *s = tensor_dict_metadata(d, "gpt");
    return s && sscanf(s, "layers %d heads %d embd %d block %d vocab %d dropout %lf", &c->layers, &c->heads, &c->embd, &c->block, &c->vocab, &c->dropout) == 6 ? 0 : -1;
}

/* Restores what gpt_save wrote (the optimizer's part when opt is given); *step gets the steps done. */
static int gpt_restore(const tensor_dict *d, gpt_model *m, tensor_optim *opt, int64_t *step) {
    tensor_dict *model = tensor_dict_new();
    int rc = model ? 0 : -1;
    for (int i = 0; rc == 0 && i < tensor_dict_len(d); i++) {
        const char *name = tensor_dict_name(d, i);
        if (strncmp(name, "optim.", 6) && strcmp(name, "rng") && strcmp(name, "step")) rc = tensor_dict_set(model, name, tensor_dict_at(d, i));
    }
    if (rc == 0) rc = tensor_load_state_dict(model, m->n_params, (const char *const *)m->names, m->params, true);
    if (rc == 0 && opt) rc = tensor_optim_state_load(opt, d, "optim");
    if (rc == 0 && opt) rc = tensor_rng_state_load(d, "rng");
    tensor *s = rc == 0 ? tensor_dict_get(d, "step") : NULL;
    if (s) *step = (int64_t)tensor_item(s);
    else rc = -1;
    tensor_dict_free(model);
    return rc ? gpt_fail("cannot restore the checkpoint") : 0;
}

static double gpt_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* The lr of step s (from 0): warmup, then cosine to min_lr at the last step (a warmup as long as the
   run shrinks to a tenth of it). */
static double gpt_lr(const gpt_train_opts *o, int64_t s) {
    int64_t warmup = o->warmup < o->steps ? o->warmup : o->steps / 10;
    return tensor_lr_linear_warmup_cosine(s, warmup, o->steps, o->lr, o->min_lr);
}

/* Steps from+1 .. o->steps. Each: o->accum micro-batches of o->batch windows (the loss of each
   scaled by 1/accum), the gradient norm clipped, the schedule's lr, one AdamW step. 0 or -1. */
static int gpt_train(gpt_model *m, tensor_optim *opt, const gpt_data *d, const gpt_train_opts *o, int64_t from) {
    int64_t T = m->cfg.block, tokens = o->batch * T * o->accum;
    bool tty = !o->quiet && isatty(fileno(stdout));
    double t0 = gpt_now(), last = t0, smooth = NAN;
    int64_t end = o->stop > 0 && o->stop < o->steps ? o->stop : o->steps;
    int64_t per = o->batch / (o->world > 1 ? o->world : 1); /* every rank draws the whole batch (the same generator) and takes its rows */
    for (int64_t s = from; s < end; s++) {
        double lr = gpt_lr(o, s);
        if (isnan(lr)) return gpt_fail("learning-rate schedule");
        tensor_optim_set_lr(opt, lr);
        double loss_sum = 0;
        for (int64_t k = 0; k < o->accum; k++) {
            tensor_scope_begin();
            tensor *x, *y;
            tensor *loss = gpt_batch(d, true, o->batch, T, 0, m->device, &x, &y) ? NULL
                         : gpt_loss(m, tensor_narrow(x, 0, o->rank * per, per), tensor_narrow(y, 0, o->rank * per, per), true);
            int rc = loss ? tensor_backward(tensor_div_scalar(loss, (double)o->accum)) : -1;
            loss_sum += rc ? NAN : tensor_item(loss);
            tensor_scope_end();
            if (rc) return gpt_fail("training step");
        }
        if (o->ddp && tensor_ddp_sync(o->ddp)) return gpt_fail("averaging the gradients");
        if (tensor_clip_grad_norm(m->n_params, m->params, o->clip) < 0 || tensor_optim_step(opt)) return gpt_fail("optimizer step");
        tensor_optim_zero_grad(opt);
        double loss = loss_sum / (double)o->accum;
        smooth = isnan(smooth) ? loss : 0.9 * smooth + 0.1 * loss;
        double t = gpt_now();
        bool eval = o->eval_every > 0 && ((s + 1) % o->eval_every == 0 || s + 1 == o->steps);
        if (!o->quiet && (t - last >= 1.0 || eval || s + 1 == o->steps)) {
            double el = t - t0, done = (double)(s + 1 - from);
            printf("%sstep %lld/%lld  loss %.4f  lr %.2e  %.0f tokens/s  ETA %.0fs%s", tty ? "\r" : "", (long long)(s + 1), (long long)o->steps, smooth,
                   lr, done * (double)tokens / el,
                   el / done * (double)(o->steps - s - 1), tty ? "   " : "\n");
            fflush(stdout);
            last = t;
        }
        if (eval) {
            double val = gpt_eval(m, d, o->batch, o->eval_batches);
            if (isnan(val)) return gpt_fail("evaluation");
            if (!o->quiet) printf("%sstep %lld: validation loss %.4f nats/byte (%.0f s)\n", tty ? "\n" : "", (long long)(s + 1), val, gpt_now() - t0);
            if (o->save && o->rank == 0 && gpt_save(o->save, m, opt, s + 1)) return -1;
        }
    }
    return 0;
}

/* ---- sampling ---- */
/* The next token from logits [vocab] (host floats): divided by the temperature, all but the top_k
   largest dropped (top_k <= 0: none), a softmax, one draw of the current generator; greedy when the
   temperature is 0. */
static int64_t gpt_pick(float *logits, int vocab, double temperature, int top_k) {
    int64_t best = 0;
    for (int i = 1; i < vocab; i++) if (logits[i] > logits[best]) best = i;
    if (temperature <= 0) return best;
    float cut = -INFINITY;
    if (top_k > 0 && top_k < vocab) { /* the k-th largest: a selection over a copy */
        float *c = (float *)malloc(sizeof(float) * (size_t)vocab);
        if (!c) return best;
        memcpy(c, logits, sizeof(float) * (size_t)vocab);
        for (int i = 0; i < top_k; i++) {
            int j = i;
            for (int k = i + 1; k < vocab; k++) if (c[k] > c[j]) j = k;
            float tmp = c[i]; c[i] = c[j]; c[j] = tmp;
        }
        cut = c[top_k - 1];
        free(c);
    }
    double *p = (double *)malloc(sizeof(double) * (size_t)vocab), sum = 0;
    if (!p) return best;
    for (int i = 0; i < vocab; i++) {
        p[i] = logits[i] < cut ? 0 : exp((logits[i] - logits[best]) / temperature);
        sum += p[i];
    }
    for (int i = 0; i < vocab; i++) p[i] /= sum;
    tensor_scope_begin();
    int64_t pick = (int64_t)tensor_item(tensor_multinomial(tensor_from_data(p, 1, (int64_t[]){vocab}, TENSOR_F64), 1, false));
    tensor_scope_end();
    free(p);
    return pick < 0 ? best : pick;
}

/* Last-position logits of a cached forward of tokens[pos..pos+n) into out (host floats). */
static int gpt_cached_logits(gpt_model *m, const int64_t *tokens, int64_t pos, int64_t n, float *out) {
    tensor_scope_begin();
    tensor *idx = tensor_from_data(tokens + pos, 2, (int64_t[]){1, n}, TENSOR_I64);
    if (idx && m->device != TENSOR_CPU) idx = tensor_to_device(idx, m->device);
    tensor *logits = gpt_forward(m, idx, pos, false, true);
    tensor *lastrow = logits ? tensor_select(tensor_select(logits, 0, 0), 0, n - 1) : NULL;
    if (lastrow && m->device != TENSOR_CPU) lastrow = tensor_to_device(lastrow, TENSOR_CPU);
    int rc = lastrow ? tensor_copy_to(lastrow, out, sizeof(float) * (size_t)m->cfg.vocab) : -1;
    tensor_scope_end();
    return rc ? gpt_fail("sampling") : 0;
}

/* Extends tokens[0..n_prompt) by n_new tokens (tokens has room for n_prompt + n_new): the prompt is
   run once to fill the KV cache, then one token a step. When the context is full, the cache is
   refilled from the last half of it (positions restart at 0, as nanoGPT's cropped context). */
static int gpt_generate(gpt_model *m, int64_t *tokens, int64_t n_prompt, int64_t n_new, double temperature, int top_k, void (*emit)(int64_t token)) {
    bool was = tensor_set_grad_enabled(false);
    float *logits = (float *)malloc(sizeof(float) * (size_t)m->cfg.vocab);
    int rc = logits && n_prompt > 0 ? gpt_cache_alloc(m) : -1;
    int64_t block = m->cfg.block, start = n_prompt > block ? n_prompt - block : 0; /* the window: tokens[start..n) */
    if (rc == 0) rc = gpt_cached_logits(m, tokens + start, 0, n_prompt - start, logits);
    for (int64_t i = 0; rc == 0 && i < n_new; i++) {
        int64_t n = n_prompt + i;
        tokens[n] = gpt_pick(logits, m->cfg.vocab, temperature, top_k);
        if (emit) emit(tokens[n]);
        if (i + 1 == n_new) break;
        if (n + 1 - start > block) { /* full: keep the last half and prefill it again */
            start = n + 1 - block / 2;
            rc = gpt_cached_logits(m, tokens + start, 0, n + 1 - start, logits);
        } else {
            rc = gpt_cached_logits(m, tokens + start, n - start, 1, logits);
        }
    }
    free(logits);
    tensor_set_grad_enabled(was);
    return rc;
}

/* ---- GPT-2's weights in Hugging Face's layout ---- */
/* The tensor of name (with or without the "transformer." prefix of GPT2LMHeadModel), or NULL. */
static tensor *gpt2_get(const tensor_dict *d, const char *name) {
    char full[160];
    for (int i = 0; i < tensor_dict_len(d); i++) {
        const char *n = tensor_dict_name(d, i);
        snprintf(full, sizeof full, "transformer.%s", name);
        if (!strcmp(n, name) || !strcmp(n, full)) return tensor_dict_at(d, i);
    }
    return NULL;
}
static bool gpt2_is(const tensor_dict *d) { return gpt2_get(d, "wte.weight") != NULL; }

/* The sizes of a GPT-2 checkpoint (heads: not in the file; GPT-2's are 64 wide unless given). */
static int gpt2_config(const tensor_dict *d, int heads, gpt_config *c) {
    tensor *wte = gpt2_get(d, "wte.weight"), *wpe = gpt2_get(d, "wpe.weight");
    if (!wte || !wpe || tensor_ndim(wte) != 2 || tensor_ndim(wpe) != 2) { fprintf(stderr, "not a GPT-2 checkpoint: no wte.weight and wpe.weight\n"); return -1; }
    memset(c, 0, sizeof *c);
    c->vocab = (int)tensor_size(wte, 0);
    c->embd = (int)tensor_size(wte, 1);
    c->block = (int)tensor_size(wpe, 0);
    char name[64];
    for (c->layers = 0; c->layers < GPT_MAX_LAYERS; c->layers++) {
        snprintf(name, sizeof name, "h.%d.ln_1.weight", c->layers);
        if (!gpt2_get(d, name)) break;
    }
    c->heads = heads > 0 ? heads : c->embd / 64 > 0 ? c->embd / 64 : 1;
    return 0;
}

/* Copies src (HF name, transposed when Conv1D's [in, out]) into dst, shapes checked. */
static int gpt2_copy(const tensor_dict *d, const char *name, tensor *dst, bool conv1d) {
    tensor *src = gpt2_get(d, name);
    if (!src) { fprintf(stderr, "the GPT-2 checkpoint has no %s\n", name); return -1; }
    tensor_scope_begin();
    tensor *s = conv1d ? tensor_transpose(src, 0, 1) : src;
    int rc = 0;
    if (tensor_ndim(s) != tensor_ndim(dst)) rc = -1;
    for (int i = 0; rc == 0 && i < tensor_ndim(s); i++) rc = tensor_size(s, i) == tensor_size(dst, i) ? 0 : -1;
    if (rc) fprintf(stderr, "%s: shape does not fit the model\n", name);
    bool was = tensor_set_grad_enabled(false);
    if (rc == 0 && !tensor_copy_(dst, s)) rc = gpt_fail(name);
    tensor_set_grad_enabled(was);
    tensor_scope_end();
    return rc;
}

/* GPT-2's weights (wte, wpe, h.{i}.ln_1, attn.c_attn, attn.c_proj, ln_2, mlp.c_fc, mlp.c_proj,
   ln_f; the stored attn.bias / attn.masked_bias buffers are ignored) into m, made by gpt2_config. */
static int gpt2_load(const tensor_dict *d, gpt_model *m) {
    int rc = gpt2_copy(d, "wte.weight", m->wte, false);
    if (rc == 0) rc = gpt2_copy(d, "wpe.weight", m->wpe, false);
    for (int l = 0; rc == 0 && l < m->cfg.layers; l++) {
        gpt_block *b = &m->h[l];
        struct { const char *suffix; tensor *dst; bool conv1d; } map[GPT_BLOCK_PARAMS] = {
            {"ln_1.weight", b->ln1_w, false}, {"ln_1.bias", b->ln1_b, false}, {"attn.c_attn.weight", b->qkv_w, true}, {"attn.c_attn.bias", b->qkv_b, false},
            {"attn.c_proj.weight", b->proj_w, true}, {"attn.c_proj.bias", b->proj_b, false}, {"ln_2.weight", b->ln2_w, false}, {"ln_2.bias", b->ln2_b, false},
            {"mlp.c_fc.weight", b->fc_w, true}, {"mlp.c_fc.bias", b->fc_b, false}, {"mlp.c_proj.weight", b->fc_proj_w, true}, {"mlp.c_proj.bias", b->fc_proj_b, false}};
        for (int k = 0; rc == 0 && k < GPT_BLOCK_PARAMS; k++) {
            char name[96];
            snprintf(name, sizeof name, "h.%d.%s", l, map[k].suffix);
            rc = gpt2_copy(d, name, map[k].dst, map[k].conv1d);
        }
    }
    if (rc == 0) rc = gpt2_copy(d, "ln_f.weight", m->lnf_w, false);
    if (rc == 0) rc = gpt2_copy(d, "ln_f.bias", m->lnf_b, false);
    return rc;
}

#ifndef GPT_NO_MAIN
static void emit_byte(int64_t t) { putchar((int)t); fflush(stdout); }
static void emit_id(int64_t t) { printf(" %lld", (long long)t); fflush(stdout); }

static int usage(const char *prog) {
    fprintf(stderr,
            "usage: %s [--steps N] [--layers L] [--heads H] [--embd C] [--block T] [--batch B] [--accum K] [--lr LR] [--dropout P]\n"
            "          [--warmup N] [--eval-every N] [--eval-batches N] [--data FILE] [--save FILE] [--load FILE] [--gpt2] [--bf16] [--cuda]\n"
            "          [--threads N] [--sample N] [--prompt TEXT] [--tokens \"ID ID ...\"] [--temperature T] [--top-k K] [--seed S]\n",
            prog);
    return 2;
}

int main(int argc, char **argv) {
    if (tensor_dist_init(&argc, &argv)) return gpt_fail("tensor_dist_init"), 1;
    gpt_config cfg = {6, 6, 384, 256, 256, 0.2}; /* nanoGPT's character-level configuration */
    gpt_train_opts o = {5000, 64, 1, 100, 250, 20, 1e-3, 1e-4, 0.1, 1.0, NULL, false, 0, NULL, 0, 1};
    const char *load = NULL, *data_path = NULL, *prompt = "\n", *token_list = NULL;
    bool bf16 = false, cuda = false, gpt2 = false, steps_given = false, heads_given = false;
    int64_t n_sample = 300, seed = 1337;
    double temperature = 0.8;
    int top_k = 40, threads = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
#define GPT_ARG(flag) (!strcmp(a, flag) && v && (++i, true))
        if (GPT_ARG("--steps")) { o.steps = atoll(v); steps_given = true; }
        else if (GPT_ARG("--layers")) cfg.layers = atoi(v);
        else if (GPT_ARG("--heads")) { cfg.heads = atoi(v); heads_given = true; }
        else if (GPT_ARG("--embd")) cfg.embd = atoi(v);
        else if (GPT_ARG("--block")) cfg.block = atoi(v);
        else if (GPT_ARG("--batch")) o.batch = atoll(v);
        else if (GPT_ARG("--accum")) o.accum = atoll(v);
        else if (GPT_ARG("--lr")) { o.lr = atof(v); o.min_lr = o.lr / 10; }
        else if (GPT_ARG("--dropout")) cfg.dropout = atof(v);
        else if (GPT_ARG("--warmup")) o.warmup = atoll(v);
        else if (GPT_ARG("--eval-every")) o.eval_every = atoll(v);
        else if (GPT_ARG("--eval-batches")) o.eval_batches = atoi(v);
        else if (GPT_ARG("--data")) data_path = v;
        else if (GPT_ARG("--save")) o.save = v;
        else if (GPT_ARG("--load")) load = v;
        else if (GPT_ARG("--threads")) threads = atoi(v);
        else if (GPT_ARG("--sample")) n_sample = atoll(v);
        else if (GPT_ARG("--prompt")) prompt = v;
        else if (GPT_ARG("--tokens")) token_list = v;
        else if (GPT_ARG("--temperature")) temperature = atof(v);
        else if (GPT_ARG("--top-k")) top_k = atoi(v);
        else if (GPT_ARG("--seed")) seed = atoll(v);
        else if (!strcmp(a, "--gpt2")) gpt2 = true;
        else if (!strcmp(a, "--bf16")) bf16 = true;
        else if (!strcmp(a, "--cuda")) cuda = true;
        else return usage(argv[0]);
#undef GPT_ARG
    }
    if (o.steps < 0 || o.batch < 1 || o.accum < 1 || o.eval_batches < 1 || !(o.lr > 0) || !(cfg.dropout >= 0 && cfg.dropout < 1) || n_sample < 0) return usage(argv[0]);
    o.rank = tensor_dist_rank();
    o.world = tensor_dist_world_size();
    if (o.batch % o.world) { fprintf(stderr, "a batch of %lld does not split evenly over %d ranks\n", (long long)o.batch, o.world); return 2; }
    if (o.rank != 0 && !freopen("/dev/null", "w", stdout)) return 1; /* rank 0 alone prints */
    if (gpt2) { cfg.layers = 12; cfg.heads = 12; cfg.embd = 768; cfg.block = 1024; cfg.vocab = 50257; }
    if (threads > 0) tensor_set_num_threads(threads);
    tensor_device device = TENSOR_CPU;
    if (cuda) {
        if (!tensor_cuda_available()) {
            tensor *probe = tensor_zeros(1, (int64_t[]){1}, TENSOR_F32), *dv = tensor_to_device(probe, TENSOR_CUDA); /* records why */
            fprintf(stderr, "--cuda: %s\n", dv ? "" : tensor_last_error());
            return 2;
        }
        device = TENSOR_CUDA;
    }
    tensor_manual_seed(1337);

    /* a checkpoint to resume or sample from, or GPT-2's weights */
    tensor_dict *ckpt = NULL;
    int64_t done = 0;
    if (load) {
        ckpt = tensor_load(load, TENSOR_LOAD_MMAP);
        if (!ckpt) return gpt_fail(load), 1;
        if (gpt2_is(ckpt)) {
            if (gpt2_config(ckpt, heads_given ? cfg.heads : 0, &cfg)) return 1;
            cfg.dropout = 0;
            if (!steps_given) o.steps = 0;
        } else if (gpt_checkpoint_config(ckpt, &cfg)) {
            fprintf(stderr, "%s is neither a checkpoint of this program nor GPT-2's weights\n", load);
            return 1;
        }
    }
    gpt_model m;
    if (gpt_init(&m, cfg, device, bf16 ? TENSOR_BF16 : TENSOR_F32)) return 1;
    tensor_optim *opt = gpt_optimizer(&m, &o);
    if (!opt) return 1;
    if (ckpt && gpt2_is(ckpt)) {
        if (gpt2_load(ckpt, &m)) return 1;
        printf("GPT-2 weights from %s: %d layers, %d heads, width %d, context %d, vocabulary %d, %.1fM parameters\n", load, cfg.layers, cfg.heads,
               cfg.embd, cfg.block, cfg.vocab, (double)gpt_count(&m) / 1e6);
    } else if (ckpt) {
        if (gpt_restore(ckpt, &m, opt, &done)) return 1;
        printf("resumed from %s after step %lld\n", load, (long long)done);
    }
    tensor_dict_free(ckpt);
    if (!(o.ddp = tensor_ddp_new(m.n_params, m.params, 0))) return gpt_fail("tensor_ddp_new"), 1; /* a world of one: nothing to average */
    printf("model: %d layers, %d heads, width %d, context %d, vocabulary %d, dropout %g: %.2fM parameters; %s%s, %d threads\n", cfg.layers, cfg.heads,
           cfg.embd, cfg.block, cfg.vocab, cfg.dropout, (double)gpt_count(&m) / 1e6, bf16 ? "bf16 matmuls and attention, f32 weights" : "f32",
           cuda ? " on CUDA" : "", tensor_get_num_threads());

    if (o.steps > done) {
        if (cfg.vocab != 256) { fprintf(stderr, "training reads bytes: the vocabulary must be 256, not %d\n", cfg.vocab); return 2; }
        gpt_data d;
        int rc = gpt_data_load(&d, data_path);
        if (rc) return rc;
        printf("text: %lld bytes (%lld train, %lld validation); %lld steps of %lld x %lld x %d tokens\n", (long long)d.n, (long long)d.n_train,
               (long long)(d.n - d.n_train), (long long)o.steps, (long long)o.accum, (long long)o.batch, cfg.block);
        if (done == 0 && !o.quiet) printf("step 0: validation loss %.4f nats/byte\n", gpt_eval(&m, &d, o.batch, o.eval_batches));
        rc = gpt_train(&m, opt, &d, &o, done);
        free(d.bytes);
        if (rc) return 1;
        if (o.save) printf("saved %s\n", o.save);
    }

    if (n_sample > 0 && o.rank == 0) { /* sample: bytes from a prompt, or token ids for another vocabulary */
        tensor_manual_seed((uint64_t)seed);
        bool ids = token_list || cfg.vocab != 256;
        char *buf = NULL;
        size_t len = 0;
        if (ids && !token_list) { /* ids on stdin */
            FILE *mem = open_memstream(&buf, &len);
            int ch;
            while (mem && (ch = getchar()) != EOF) fputc(ch, mem);
            if (mem) fclose(mem);
            token_list = buf ? buf : "";
        }
        /* room for the prompt (at most a token a byte of its text) and the samples, made once */
        int64_t n_prompt = 0, cap = (int64_t)strlen(ids ? token_list : prompt) + 1 + n_sample;
        int64_t *tokens = (int64_t *)malloc(sizeof(int64_t) * (size_t)cap);
        if (!tokens) { fprintf(stderr, "out of memory\n"); return 1; }
        if (ids) {
            for (const char *p = token_list; *p;) {
                char *end;
                long long id = strtoll(p, &end, 10);
                if (end == p) { p++; continue; }
                if (id < 0 || id >= cfg.vocab) { fprintf(stderr, "token %lld is outside the vocabulary of %d\n", id, cfg.vocab); return 2; }
                tokens[n_prompt++] = id;
                p = end;
            }
            if (n_prompt == 0) { fprintf(stderr, "no token ids (--tokens \"ID ID ...\" or on stdin)\n"); return 2; }
        } else {
            for (const char *p = prompt; *p; p++) tokens[n_prompt++] = (unsigned char)*p;
            if (n_prompt == 0) tokens[n_prompt++] = '\n';
        }
        bool bytes = !ids;
        printf("%lld %s sampled (temperature %g, top-k %d, seed %lld):\n", (long long)n_sample, bytes ? "bytes" : "token ids", temperature, top_k, (long long)seed);
        if (bytes) fwrite(prompt, 1, strlen(prompt), stdout);
        double t0 = gpt_now();
        if (gpt_generate(&m, tokens, n_prompt, n_sample, temperature, top_k, bytes ? emit_byte : emit_id)) return 1;
        printf("\n(%.1f tokens/s with the KV cache)\n", (double)n_sample / (gpt_now() - t0));
        free(tokens);
        free(buf);
    }
    tensor_ddp_free(o.ddp);
    tensor_optim_free(opt);
    gpt_free(&m);
    tensor_dist_finalize();
    tensor_shutdown();
    return 0;
}
#endif
