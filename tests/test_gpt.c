/* examples/gpt.c, its functions included here: a resumed run equals the uninterrupted one bit for
   bit, sampling with the KV cache gives the logits of recomputing the whole sequence, and GPT-2's
   weights in Hugging Face's layout give PyTorch's logits (tests/interop/gpt2_reference.py). */
#define GPT_NO_MAIN
#include "../examples/gpt.c"
#include "gpt_text.h"
#include "test.h"

static const gpt_config small = {2, 2, 32, 16, 256, 0.1};

static gpt_train_opts small_opts(int64_t steps) {
    gpt_train_opts o;
    memset(&o, 0, sizeof o);
    o.steps = steps;
    o.batch = 4;
    o.accum = 2;
    o.warmup = 2;
    o.eval_every = 0;
    o.eval_batches = 1;
    o.lr = 3e-3;
    o.min_lr = 3e-4;
    o.weight_decay = 0.1;
    o.clip = 1.0;
    o.quiet = true;
    return o;
}

/* Train 8 steps; and 4, save to a file, reload into a fresh model, optimizer and generator, 4 more:
   the same parameters, bit for bit (dropout, batches and AdamW's moments all restored). */
TEST(gpt_resume_equals_an_uninterrupted_run) {
    gpt_data d = gpt_test_text();
    gpt_train_opts o = small_opts(8);
    gpt_model a, b;
    tensor_manual_seed(7);
    CHECK(gpt_init(&a, small, TENSOR_CPU, TENSOR_F32) == 0);
    tensor_optim *oa = gpt_optimizer(&a, &o);
    CHECK(oa && gpt_train(&a, oa, &d, &o, 0) == 0);

    tensor_manual_seed(7);
    CHECK(gpt_init(&b, small, TENSOR_CPU, TENSOR_F32) == 0);
    tensor_optim *ob = gpt_optimizer(&b, &o);
    gpt_train_opts half = o;
    half.stop = 4;
    CHECK(ob && gpt_train(&b, ob, &d, &half, 0) == 0);
    char path[256];
    snprintf(path, sizeof path, "%s/tensor_test_gpt_%d.safetensors", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    CHECK(gpt_save(path, &b, ob, 4) == 0);
    tensor_optim_free(ob);
    gpt_free(&b);

    tensor_manual_seed(99); /* another generator and other weights: the file must restore both */
    gpt_model c;
    CHECK(gpt_init(&c, small, TENSOR_CPU, TENSOR_F32) == 0);
    tensor_optim *oc = gpt_optimizer(&c, &o);
    tensor_dict *ck = tensor_load(path, 0);
    gpt_config cfg = {0, 0, 0, 0, 0, 0};
    CHECK(ck && gpt_checkpoint_config(ck, &cfg) == 0 && cfg.layers == 2 && cfg.embd == 32 && cfg.block == 16 && cfg.dropout == 0.1);
    int64_t done = -1;
    CHECK(gpt_restore(ck, &c, oc, &done) == 0 && done == 4);
    tensor_dict_free(ck);
    CHECK(gpt_train(&c, oc, &d, &o, done) == 0);
    int differ = 0;
    for (int i = 0; i < a.n_params; i++) differ += !test_same_bits(a.params[i], c.params[i]);
    CHECK_MSG(differ == 0, "%d of %d parameters differ from the uninterrupted run", differ, a.n_params);
    /* and the run did train: the parameters moved from their initial values */
    tensor_manual_seed(7);
    gpt_model init;
    CHECK(gpt_init(&init, small, TENSOR_CPU, TENSOR_F32) == 0);
    CHECK(!test_same_bits(init.h[0].qkv_w, a.h[0].qkv_w));
    gpt_free(&init);
    remove(path);
    tensor_optim_free(oa);
    tensor_optim_free(oc);
    gpt_free(&a);
    gpt_free(&c);
    free(d.bytes);
}

/* Training lowers the validation loss of the text, from about ln 256 at the start. */
TEST(gpt_training_lowers_the_loss) {
    gpt_data d = gpt_test_text();
    gpt_train_opts o = small_opts(40);
    o.lr = 1e-2;
    o.min_lr = 1e-3;
    gpt_model m;
    tensor_manual_seed(3);
    CHECK(gpt_init(&m, small, TENSOR_CPU, TENSOR_F32) == 0);
    tensor_optim *opt = gpt_optimizer(&m, &o);
    double before = gpt_eval(&m, &d, 8, 2);
    CHECK(opt && gpt_train(&m, opt, &d, &o, 0) == 0);
    double after = gpt_eval(&m, &d, 8, 2);
    CHECK_MSG(fabs(before - log(256.0)) < 0.3 && after < 3.0, "validation loss %.3f -> %.3f", before, after);
    tensor_optim_free(opt);
    gpt_free(&m);
    free(d.bytes);
}

/* 64 sampled steps with the KV cache (after a 16-token prompt) give the logits of running the whole
   sequence each step, within 1e-5. */
TEST(gpt_kv_cache_equals_recomputing) {
    gpt_config cfg = {2, 4, 32, 96, 256, 0};
    gpt_model m;
    tensor_manual_seed(5);
    CHECK(gpt_init(&m, cfg, TENSOR_CPU, TENSOR_F32) == 0);
    int64_t tokens[96];
    for (int i = 0; i < 16; i++) tokens[i] = (i * 37 + 11) % 256;
    float cached[256], full[256];
    bool was = tensor_set_grad_enabled(false);
    CHECK(gpt_cache_alloc(&m) == 0);
    CHECK(gpt_cached_logits(&m, tokens, 0, 16, cached) == 0);
    double worst = 0;
    for (int64_t n = 16; n < 16 + 64; n++) {
        tensor_scope_begin();
        tensor *logits = gpt_forward(&m, tensor_from_data(tokens, 2, (int64_t[]){1, n}, TENSOR_I64), 0, false, false);
        CHECK(logits && tensor_copy_to(tensor_select(tensor_select(logits, 0, 0), 0, n - 1), full, sizeof full) == 0);
        tensor_scope_end();
        for (int v = 0; v < 256; v++) {
            double e = fabs((double)cached[v] - full[v]) / (1 + fabs(full[v]));
            if (e > worst) worst = e;
        }
        tokens[n] = gpt_pick(full, 256, 1.0, 20); /* a sampled continuation */
        CHECK(gpt_cached_logits(&m, tokens, n, 1, cached) == 0);
    }
    CHECK_MSG(worst <= 1e-5, "cached logits differ by %.3g", worst);
    CHECK(m.cache_len == 16 + 64);
    /* past the context: an error, not a write outside the cache */
    CHECK(gpt_forward(&m, tensor_from_data(tokens, 2, (int64_t[]){1, 1}, TENSOR_I64), 96, false, true) == NULL);
    /* gpt_generate runs past the context (refilling the cache) without error */
    int64_t longer[16 + 200];
    memcpy(longer, tokens, sizeof(int64_t) * 16);
    CHECK(gpt_generate(&m, longer, 16, 200, 0.8, 10, NULL) == 0);
    for (int i = 16; i < 216; i++) CHECK(longer[i] >= 0 && longer[i] < 256);
    tensor_set_grad_enabled(was);
    gpt_free(&m);
}

/* Greedy generation with the cache follows the argmax of the recomputed logits. */
TEST(gpt_greedy_sampling_follows_the_argmax) {
    gpt_config cfg = {1, 2, 16, 32, 256, 0};
    gpt_model m;
    tensor_manual_seed(11);
    CHECK(gpt_init(&m, cfg, TENSOR_CPU, TENSOR_F32) == 0);
    int64_t tokens[4 + 20] = {72, 105, 33, 10};
    CHECK(gpt_generate(&m, tokens, 4, 20, 0, 0, NULL) == 0);
    bool was = tensor_set_grad_enabled(false);
    for (int n = 4; n < 24; n++) {
        float full[256];
        tensor_scope_begin();
        tensor *logits = gpt_forward(&m, tensor_from_data(tokens, 2, (int64_t[]){1, n}, TENSOR_I64), 0, false, false);
        CHECK(tensor_copy_to(tensor_select(tensor_select(logits, 0, 0), 0, n - 1), full, sizeof full) == 0);
        tensor_scope_end();
        CHECK_MSG(gpt_pick(full, 256, 0, 0) == tokens[n], "step %d", n);
    }
    tensor_set_grad_enabled(was);
    gpt_free(&m);
}

/* GPT-2's layout: weights written by PyTorch (a small GPT-2) load, and the logits agree within 1e-4. */
TEST(gpt2_weights_from_pytorch_give_its_logits) {
    if (system("/usr/bin/python3 -c 'import torch, numpy' > /dev/null 2>&1") != 0) {
        test_skip("no PyTorch for /usr/bin/python3 (apt-get install python3-torch)");
        return;
    }
    char st[256], npy[256], cmd[700];
    const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
    snprintf(st, sizeof st, "%s/tensor_test_gpt2_%d.safetensors", tmp, (int)getpid());
    snprintf(npy, sizeof npy, "%s/tensor_test_gpt2_%d.npy", tmp, (int)getpid());
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 tests/interop/gpt2_reference.py '%s' '%s' 2>&1", st, npy);
    fflush(stdout);
    CHECK(system(cmd) == 0);
    tensor_dict *d = tensor_load(st, TENSOR_LOAD_MMAP);
    tensor *want = tensor_load_npy(npy);
    CHECK_MSG(d && want, "%s", tensor_last_error());
    if (!d || !want) return;
    gpt_config cfg = {0, 0, 0, 0, 0, 0};
    CHECK(gpt2_is(d) && gpt2_config(d, 4, &cfg) == 0);
    CHECK(cfg.layers == 2 && cfg.embd == 64 && cfg.block == 32 && cfg.vocab == 300 && cfg.heads == 4);
    gpt_model m;
    CHECK(gpt_init(&m, cfg, TENSOR_CPU, TENSOR_F32) == 0);
    CHECK(gpt2_load(d, &m) == 0);
    const int64_t tokens[19] = {5, 17, 299, 0, 42, 42, 7, 150, 3, 88, 271, 9, 64, 1, 2, 250, 100, 31, 12};
    bool was = tensor_set_grad_enabled(false);
    tensor *got = gpt_forward(&m, tensor_from_data(tokens, 2, (int64_t[]){1, 19}, TENSOR_I64), 0, false, false);
    CHECK(got && tensor_ndim(got) == 3 && tensor_size(got, 1) == 19 && tensor_size(got, 2) == 300);
    double *g = test_values(got), *w = test_values(want), worst = 0;
    for (int64_t i = 0; i < 19 * 300; i++) {
        double e = fabs(g[i] - w[i]) / (fabs(w[i]) > 1 ? fabs(w[i]) : 1);
        if (e > worst) worst = e;
    }
    CHECK_MSG(worst <= 1e-4, "logits differ from PyTorch's by %.3g (relative)", worst);
    /* through the cache as well */
    float last[300];
    CHECK(gpt_cache_alloc(&m) == 0 && gpt_cached_logits(&m, tokens, 0, 19, last) == 0);
    CHECK(fabs(last[7] - w[18 * 300 + 7]) <= 1e-4 * (1 + fabs(w[18 * 300 + 7])));
    free(g);
    free(w);
    tensor_set_grad_enabled(was);
    /* a file whose shapes do not fit is refused with a message */
    gpt_config wrong = cfg;
    wrong.embd = 32;
    wrong.heads = 2;
    gpt_model m2;
    CHECK(gpt_init(&m2, wrong, TENSOR_CPU, TENSOR_F32) == 0);
    CHECK(gpt2_load(d, &m2) != 0);
    gpt_free(&m2);
    gpt_free(&m);
    tensor_dict_free(d);
    remove(st);
    remove(npy);
}

/* The text file reader and the model's size. */
TEST(gpt_data_and_parameter_count) {
    gpt_data d;
    CHECK(gpt_data_load(&d, "/nonexistent/text") == 2);
    char path[256];
    snprintf(path, sizeof path, "%s/tensor_test_gpt_text_%d", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", (int)getpid());
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f) return;
    for (int i = 0; i < 100; i++) fputs("%\nline of text\n", f); /* a "%" line is kept outside the fortunes */
    fclose(f);
    CHECK(gpt_data_load(&d, path) == 0 && d.n == 100 * 15 && d.n_train == d.n * 9 / 10 && d.bytes[0] == '%');
    free(d.bytes);
    remove(path);
    gpt_model m;
    tensor_manual_seed(1);
    CHECK(gpt_init(&m, small, TENSOR_CPU, TENSOR_F32) == 0);
    /* V C + T C + L (12 C^2 + 13 C) + 2 C */
    CHECK(gpt_count(&m) == 256 * 32 + 16 * 32 + 2 * (12 * 32 * 32 + 13 * 32) + 2 * 32);
    CHECK(m.n_params == 4 + 12 * 2);
    gpt_free(&m);
    gpt_config bad = small;
    bad.heads = 3; /* 32 is not a multiple of 3 */
    CHECK(gpt_init(&m, bad, TENSOR_CPU, TENSOR_F32) != 0);
}
