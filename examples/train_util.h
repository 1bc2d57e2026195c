/* train_util.h: what the training examples share: reading Fashion-MNIST's IDX files through zlib,
   batching, and a progress line (redrawn in place on a terminal, one line per interval otherwise).
   Include it after tensor.h. */
#ifndef TRAIN_UTIL_H
#define TRAIN_UTIL_H
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Where the model and its batches live: TENSOR_CUDA with --cuda (link tensor_cuda.o; see the README). */
static tensor_device train_device = TENSOR_CPU;

/* t on train_device (a new handle; the same storage on the CPU). */
static tensor *on_device(tensor *t) { return tensor_to_device(t, train_device); }

/* A parameter (a leaf that requires grad) moved to train_device: a leaf there, the CPU one freed.
   NULL and a message when the device is not available. */
static tensor *device_param(tensor *p) {
    if (train_device == TENSOR_CPU) return p;
    bool was = tensor_set_grad_enabled(false); /* the copy is a new leaf, not a node of p's graph */
    tensor *d = tensor_to_device(p, train_device);
    tensor_set_grad_enabled(was);
    tensor_free(p);
    if (!d) { fprintf(stderr, "%s\n", tensor_last_error()); return NULL; }
    return tensor_set_requires_grad(d, true);
}

/* ---- Several processes: mpirun -np N ./prog, built with mpicc -DTENSOR_USE_MPI (README: Training
   on several machines). Every rank trains on its share of each batch and tensor_ddp averages the
   gradients, so N ranks take the steps one process would; rank 0 alone prints and saves. A plain
   build is a world of one rank. ---- */
static int dist_rank, dist_world = 1;

/* tensor_dist_init, then checks that batch splits evenly over the ranks; 0, or 1 after a message.
   Ranks other than 0 write nothing to stdout. */
static int dist_begin(int *argc, char ***argv, int64_t batch) {
    if (tensor_dist_init(argc, argv)) { fprintf(stderr, "%s\n", tensor_last_error()); return 1; }
    dist_rank = tensor_dist_rank();
    dist_world = tensor_dist_world_size();
    if (batch % dist_world) {
        if (dist_rank == 0) fprintf(stderr, "a batch of %lld does not split evenly over %d ranks\n", (long long)batch, dist_world);
        return 1;
    }
    if (dist_rank != 0 && !freopen("/dev/null", "w", stdout)) return 1;
    return 0;
}

/* The command line of the training examples: [epochs] [--bf16] [--cuda] [--save FILE] [--load FILE]. */
typedef struct {
    int epochs;         /* left at the caller's default when absent */
    tensor_dtype dtype; /* the layers' dtype: f32, or bf16 for --bf16 */
    const char *save;   /* --save: a checkpoint after each epoch (safetensors) */
    const char *load;   /* --load: resume from a checkpoint (or only evaluate it, when it holds every epoch) */
} train_args;

/* Returns 0, or 2 after printing the usage. */
static int parse_train_args(int argc, char **argv, train_args *a) {
    a->dtype = TENSOR_F32;
    a->save = a->load = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--bf16")) a->dtype = TENSOR_BF16;
        else if (!strcmp(argv[i], "--cuda")) train_device = TENSOR_CUDA;
        else if (!strcmp(argv[i], "--save") && i + 1 < argc) a->save = argv[++i];
        else if (!strcmp(argv[i], "--load") && i + 1 < argc) a->load = argv[++i];
        else if (atoi(argv[i]) > 0) a->epochs = atoi(argv[i]);
        else { fprintf(stderr, "usage: %s [epochs] [--bf16] [--cuda] [--save FILE] [--load FILE]\n", argv[0]); return 2; }
    }
    if (train_device == TENSOR_CUDA && !tensor_cuda_available()) {
        tensor *probe = tensor_zeros(TENSOR_SHAPE(1), TENSOR_F32), *d = tensor_to_device(probe, TENSOR_CUDA); /* records why */
        fprintf(stderr, "--cuda: %s\n", d ? "" : tensor_last_error());
        tensor_free(d);
        tensor_free(probe);
        return 2;
    }
    printf("precision: %s\n", a->dtype == TENSOR_BF16 ? "bf16 layers, f32 master weights and loss (--bf16)" : "f32");
    return 0;
}

/* ---- Checkpoints: one safetensors file with the parameters under their names, the optimizer's
   state under "optim.", the generator under "rng" and the epochs done under "epoch", so a run
   resumed from it continues exactly as the uninterrupted run would have. Python reads it with
   the safetensors package (safetensors.numpy.load_file) or any reader of the format. ---- */
static int checkpoint_save(const char *path, int n, const char *const *names, tensor *const *params, tensor_optim *opt, int epoch) {
    tensor_dict *d = tensor_state_dict(n, names, params);
    tensor *e = tensor_scalar(epoch, TENSOR_I64);
    int rc = d && e ? 0 : -1;
    if (rc == 0) rc = tensor_dict_set(d, "epoch", e);
    if (rc == 0) rc = tensor_optim_state_save(opt, d, "optim");
    if (rc == 0) rc = tensor_rng_state_save(d, "rng");
    if (rc == 0) rc = tensor_dict_set_metadata(d, "content", "tensor.h checkpoint: parameters, optim.*, rng, epoch");
    if (rc == 0) rc = tensor_save(path, d); /* with "format": "pt", which Hugging Face's loaders ask for */
    if (rc) fprintf(stderr, "cannot save %s: %s\n", path, tensor_last_error() ? tensor_last_error() : "out of memory");
    tensor_free(e);
    tensor_dict_free(d);
    return rc;
}

/* Restores what checkpoint_save wrote into params (the same names and shapes, checked, on any
   device), the optimizer and the generator; *epoch gets the epochs done. */
static int checkpoint_load(const char *path, int n, const char *const *names, tensor *const *params, tensor_optim *opt, int *epoch) {
    tensor_dict *d = tensor_load(path, TENSOR_LOAD_MMAP), *model = d ? tensor_dict_new() : NULL;
    int rc = model ? 0 : -1;
    for (int i = 0; rc == 0 && i < tensor_dict_len(d); i++) { /* the model's entries: all but the optimizer's, rng and epoch */
        const char *name = tensor_dict_name(d, i);
        if (strncmp(name, "optim.", 6) && strcmp(name, "rng") && strcmp(name, "epoch")) rc = tensor_dict_set(model, name, tensor_dict_at(d, i));
    }
    if (rc == 0) rc = tensor_load_state_dict(model, n, names, params, true);
    if (rc == 0) rc = tensor_optim_state_load(opt, d, "optim");
    if (rc == 0) rc = tensor_rng_state_load(d, "rng");
    tensor *e = rc == 0 ? tensor_dict_get(d, "epoch") : NULL;
    if (e) *epoch = (int)tensor_item(e);
    else rc = -1;
    if (rc) fprintf(stderr, "cannot load %s: %s\n", path, tensor_last_error() ? tensor_last_error() : "out of memory");
    tensor_dict_free(model);
    tensor_dict_free(d);
    return rc;
}

/* ---- IDX files (yann.lecun.com/exdb/mnist format), gzip-compressed ---- */
static int read_be32(gzFile f, uint32_t *v) {
    unsigned char b[4];
    if (gzread(f, b, 4) != 4) return -1;
    *v = (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
    return 0;
}

/* Images as floats in [0, 1], shape [n, rows * cols]; NULL and a message on failure. */
static float *load_idx_images(const char *path, int64_t *n, int64_t *rows, int64_t *cols) {
    gzFile f = gzopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\nFashion-MNIST comes with Debian's package: apt-get install dataset-fashion-mnist\n", path);
        return NULL;
    }
    uint32_t magic, cnt, r, c;
    if (read_be32(f, &magic) || magic != 0x803 || read_be32(f, &cnt) || read_be32(f, &r) || read_be32(f, &c) || r > 4096 || c > 4096) {
        fprintf(stderr, "%s: not an IDX image file\n", path);
        gzclose(f);
        return NULL;
    }
    size_t total = (size_t)cnt * r * c;
    unsigned char *raw = (unsigned char *)malloc(total ? total : 1);
    float *out = (float *)malloc(sizeof(float) * (total ? total : 1));
    if (!raw || !out || gzread(f, raw, (unsigned)total) != (int)total) {
        fprintf(stderr, "%s: truncated or out of memory\n", path);
        free(raw); free(out); gzclose(f);
        return NULL;
    }
    for (size_t i = 0; i < total; i++) out[i] = raw[i] / 255.0f;
    free(raw);
    gzclose(f);
    *n = cnt; *rows = r; *cols = c;
    return out;
}

/* Labels as int64, shape [n]. */
static int64_t *load_idx_labels(const char *path, int64_t *n) {
    gzFile f = gzopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\nFashion-MNIST comes with Debian's package: apt-get install dataset-fashion-mnist\n", path);
        return NULL;
    }
    uint32_t magic, cnt;
    if (read_be32(f, &magic) || magic != 0x801 || read_be32(f, &cnt)) {
        fprintf(stderr, "%s: not an IDX label file\n", path);
        gzclose(f);
        return NULL;
    }
    unsigned char *raw = (unsigned char *)malloc(cnt ? cnt : 1);
    int64_t *out = (int64_t *)malloc(sizeof(int64_t) * (cnt ? cnt : 1));
    if (!raw || !out || gzread(f, raw, cnt) != (int)cnt) {
        fprintf(stderr, "%s: truncated or out of memory\n", path);
        free(raw); free(out); gzclose(f);
        return NULL;
    }
    for (uint32_t i = 0; i < cnt; i++) out[i] = raw[i];
    free(raw);
    gzclose(f);
    *n = cnt;
    return out;
}

#define FASHION_DIR "/usr/share/datasets/fashion-mnist/"

typedef struct { float *train_x, *test_x; int64_t *train_y, *test_y; int64_t n_train, n_test, pixels; } fashion_mnist;

static int fashion_mnist_load(fashion_mnist *d) {
    int64_t r, c, nl;
    memset(d, 0, sizeof *d);
    d->train_x = load_idx_images(FASHION_DIR "train-images-idx3-ubyte.gz", &d->n_train, &r, &c);
    d->train_y = d->train_x ? load_idx_labels(FASHION_DIR "train-labels-idx1-ubyte.gz", &nl) : NULL;
    d->test_x = d->train_y ? load_idx_images(FASHION_DIR "t10k-images-idx3-ubyte.gz", &d->n_test, &r, &c) : NULL;
    d->test_y = d->test_x ? load_idx_labels(FASHION_DIR "t10k-labels-idx1-ubyte.gz", &nl) : NULL;
    d->pixels = r * c;
    return d->test_y ? 0 : -1;
}
static void fashion_mnist_free(fashion_mnist *d) { free(d->train_x); free(d->train_y); free(d->test_x); free(d->test_y); }

/* ---- progress line ---- */
typedef struct { double start, last_print; int64_t total_steps, done_steps, examples; bool tty; } progress;

static void progress_begin(progress *p, int64_t total_steps) {
    memset(p, 0, sizeof *p);
    p->start = p->last_print = now_seconds();
    p->total_steps = total_steps;
    p->tty = isatty(fileno(stdout));
}

/* Prints "epoch E step S/T loss L  N ex/s  ETA Ms" at most every `interval` seconds (and at the end). */
static void progress_step(progress *p, int epoch, int64_t step_in_epoch, int64_t steps_per_epoch, double loss, int64_t batch, double interval) {
    p->done_steps++;
    p->examples += batch;
    double t = now_seconds();
    bool last = p->done_steps == p->total_steps;
    if (!last && t - p->last_print < interval) return;
    p->last_print = t;
    double el = t - p->start, rate = p->examples / (el > 0 ? el : 1e-9);
    double eta = (double)(p->total_steps - p->done_steps) * (el / (double)p->done_steps);
    printf("%sepoch %d  step %lld/%lld  loss %.4f  %.0f ex/s  ETA %.0fs%s", p->tty ? "\r" : "", epoch,
           (long long)step_in_epoch, (long long)steps_per_epoch, loss, rate, eta, p->tty ? "   " : "\n");
    if (p->tty && last) printf("\n");
    fflush(stdout);
}
#endif
