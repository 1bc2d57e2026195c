/* fashion_mnist_cnn.c: two conv + max-pool blocks and a linear head (a 128-unit hidden layer with
   dropout) on Fashion-MNIST, AdamW with cosine learning-rate decay.
   Needs Debian's dataset-fashion-mnist (apt-get install dataset-fashion-mnist). From the project root:
       cc -O2 examples/fashion_mnist_cnn.c -o fashion_mnist_cnn -lm -lpthread -lz && ./fashion_mnist_cnn [epochs] [--bf16] [--cuda] [--save FILE] [--load FILE]
   Prints a progress line while training and the test accuracy after each epoch.
   On several processes (README: Training on several machines):
       mpicc -O2 -DTENSOR_USE_MPI examples/fashion_mnist_cnn.c -o fashion_mnist_cnn -lm -lpthread -lz && mpirun -np 2 ./fashion_mnist_cnn
   each rank trains on its share of every batch of 64 and tensor_ddp averages the gradients (the
   same steps as one process); rank 0 alone prints and saves.
   --save FILE: a checkpoint after each epoch (parameters, optimizer, generator; safetensors).
   --load FILE: resume from it (bit for bit the run that was interrupted), or, when it already holds
   every epoch asked for, evaluate the saved model.
   --cuda: the model and its batches on the GPU (link tensor_cuda.o: see the README's CUDA section).
   --bf16: mixed precision, as torch.autocast runs it. The optimizer keeps f32 master weights; each
   step the layers run on bf16 copies of them (tensor_to_dtype is differentiable: the gradients come
   back to the f32 weights as f32) and on bf16 activations, and the logits are cast to f32 for the
   loss. */
#define TENSOR_IMPLEMENTATION
#include "../tensor.h"
#include "train_util.h"

#define BATCH 64

typedef struct { tensor *c1w, *c1b, *c2w, *c2b, *fw, *fb, *ow, *ob; } cnn;

static tensor *param(int ndim, const int64_t *shape) { return tensor_set_requires_grad(tensor_zeros(ndim, shape, TENSOR_F32), true); }
/* PyTorch's default init of Conv2d and Linear: kaiming_uniform_(a = sqrt(5)), bias U(+-1/sqrt(fan_in)). */
static void layer_init(tensor *w, tensor *b) {
    tensor_kaiming_uniform_(w, sqrt(5.0));
    double fan_in = (double)(tensor_numel(w) / tensor_size(w, 0));
    tensor_uniform_(b, -1 / sqrt(fan_in), 1 / sqrt(fan_in));
}

/* x: [B, 1, 28, 28] -> conv 32 -> relu -> pool -> conv 64 -> relu -> pool -> [B, 64*7*7]
   -> 128 -> relu -> dropout -> 10, f32 logits; the layers compute in dt (f32, or bf16 for --bf16) */
static tensor *forward(cnn *m, tensor *x, bool training, tensor_dtype dt) {
    tensor *h = tensor_to_dtype(x, dt);
    h = tensor_max_pool2d(tensor_relu(tensor_conv2d(h, tensor_to_dtype(m->c1w, dt), tensor_to_dtype(m->c1b, dt), 1, 1, 1, 1)), 2, 2, 0);
    h = tensor_max_pool2d(tensor_relu(tensor_conv2d(h, tensor_to_dtype(m->c2w, dt), tensor_to_dtype(m->c2b, dt), 1, 1, 1, 1)), 2, 2, 0);
    h = tensor_linear(tensor_flatten(h, 1, -1), tensor_to_dtype(m->fw, dt), tensor_to_dtype(m->fb, dt));
    h = tensor_dropout(tensor_relu(h), 0.25, training);
    return tensor_to_dtype(tensor_linear(h, tensor_to_dtype(m->ow, dt), tensor_to_dtype(m->ob, dt)), TENSOR_F32);
}

static double accuracy(cnn *m, const float *x, const int64_t *y, int64_t n, tensor_dtype dt) {
    int64_t correct = 0;
    bool was = tensor_set_grad_enabled(false);
    for (int64_t i = 0; i < n; i += 500) {
        int64_t b = n - i < 500 ? n - i : 500;
        tensor_scope_begin();
        tensor *pred = tensor_argmax(forward(m, on_device(tensor_from_data(x + i * 784, TENSOR_SHAPE(b, 1, 28, 28), TENSOR_F32)), false, dt), 1, false);
        int64_t p[500];
        tensor_copy_to(pred, p, sizeof p);
        for (int64_t j = 0; j < b; j++) correct += p[j] == y[i + j];
        tensor_scope_end();
    }
    tensor_set_grad_enabled(was);
    return (double)correct / (double)n;
}

int main(int argc, char **argv) {
    if (dist_begin(&argc, &argv, BATCH)) return 1;
    train_args args = {8, TENSOR_F32, NULL, NULL};
    if (parse_train_args(argc, argv, &args)) return 2;
    int epochs = args.epochs;
    tensor_dtype dtype = args.dtype; /* the layers' (--bf16: bf16) */
    fashion_mnist d;
    if (fashion_mnist_load(&d)) return 1;
    printf("Fashion-MNIST: %lld train, %lld test images; %s\n", (long long)d.n_train, (long long)d.n_test, tensor_build_info());
    tensor_manual_seed(1);
    cnn m = {param(TENSOR_SHAPE(32, 1, 3, 3)), param(TENSOR_SHAPE(32)), param(TENSOR_SHAPE(64, 32, 3, 3)), param(TENSOR_SHAPE(64)),
             param(TENSOR_SHAPE(128, 64 * 7 * 7)), param(TENSOR_SHAPE(128)), param(TENSOR_SHAPE(10, 128)), param(TENSOR_SHAPE(10))};
    layer_init(m.c1w, m.c1b);
    layer_init(m.c2w, m.c2b);
    layer_init(m.fw, m.fb);
    layer_init(m.ow, m.ob);
    tensor **fields[8] = {&m.c1w, &m.c1b, &m.c2w, &m.c2b, &m.fw, &m.fb, &m.ow, &m.ob};
    for (int i = 0; i < 8; i++) /* --cuda: the model lives on the GPU */
        if (!(*fields[i] = device_param(*fields[i]))) return 1;
    tensor *params[8] = {m.c1w, m.c1b, m.c2w, m.c2b, m.fw, m.fb, m.ow, m.ob};
    tensor_optim *opt = tensor_optim_adamw(8, params, 1e-3, 0.9, 0.999, 1e-8, 1e-2);
    static const char *const names[8] = {"conv1.weight", "conv1.bias", "conv2.weight", "conv2.bias", "fc.weight", "fc.bias", "out.weight", "out.bias"};
    if (!opt) { fprintf(stderr, "%s\n", tensor_last_error()); return 1; }
    int done_epochs = 0;
    if (args.load) {
        if (checkpoint_load(args.load, 8, names, params, opt, &done_epochs)) return 1;
        printf("loaded %s: %d epochs done\n", args.load, done_epochs);
    }
    tensor_ddp *ddp = tensor_ddp_new(8, params, 0); /* mpirun: rank 0's parameters everywhere, gradients averaged */
    if (!ddp) { fprintf(stderr, "%s\n", tensor_last_error()); return 1; }

    int64_t steps = d.n_train / BATCH;
    int64_t *order = (int64_t *)malloc(sizeof(int64_t) * (size_t)d.n_train);
    float *bx = (float *)malloc(sizeof(float) * BATCH * 784);
    int64_t by[BATCH], per = BATCH / dist_world;
    progress p;
    double train_seconds = 0, acc = 0;
    if (done_epochs >= epochs) { /* a finished run: evaluate it */
        acc = accuracy(&m, d.test_x, d.test_y, d.n_test, dtype);
        printf("test accuracy of %s: %.2f%%\n", args.load, 100 * acc);
    } else
        progress_begin(&p, steps * (epochs - done_epochs));
    for (int epoch = done_epochs + 1; epoch <= epochs; epoch++) {
        double t0 = now_seconds();
        tensor_scope_begin();
        tensor_copy_to(tensor_randperm(d.n_train, TENSOR_I64), order, sizeof(int64_t) * (size_t)d.n_train);
        tensor_scope_end();
        for (int64_t s = 0; s < steps; s++) {
            double done = (double)((epoch - 1) * steps + s) / (double)(epochs * steps);
            tensor_optim_set_lr(opt, 1e-3 * 0.5 * (1 + cos(M_PI * done))); /* cosine decay to 0 */
            for (int j = 0; j < per; j++) { /* this rank's share of the batch */
                int64_t k = order[s * BATCH + dist_rank * per + j];
                memcpy(bx + j * 784, d.train_x + k * 784, sizeof(float) * 784);
                by[j] = d.train_y[k];
            }
            tensor_scope_begin();
            tensor *x = on_device(tensor_from_data(bx, TENSOR_SHAPE(per, 1, 28, 28), TENSOR_F32));
            tensor *y = on_device(tensor_from_data(by, TENSOR_SHAPE(per), TENSOR_I64));
            tensor *loss = tensor_cross_entropy(forward(&m, x, true, dtype), y);
            tensor_optim_zero_grad(opt);
            if (tensor_backward(loss) || tensor_ddp_sync(ddp) || tensor_optim_step(opt)) { fprintf(stderr, "%s\n", tensor_last_error()); return 1; }
            progress_step(&p, epoch, s + 1, steps, tensor_item(loss), BATCH, 2.0);
            tensor_scope_end();
        }
        double dt = now_seconds() - t0;
        train_seconds += dt;
        acc = accuracy(&m, d.test_x, d.test_y, d.n_test, dtype);
        printf("epoch %d: test accuracy %.2f%%, %.1f s\n", epoch, 100 * acc, dt);
        if (args.save && dist_rank == 0 && checkpoint_save(args.save, 8, names, params, opt, epoch)) return 1;
    }
    if (epochs > done_epochs)
        printf("summary: %d epochs, test accuracy %.2f%%, %.1f s per epoch (training only)\n", epochs, 100 * acc, train_seconds / (epochs - done_epochs));
    free(order);
    free(bx);
    tensor_ddp_free(ddp);
    tensor_optim_free(opt);
    fashion_mnist_free(&d);
    tensor_dist_finalize();
    tensor_shutdown();
    return 0;
}
