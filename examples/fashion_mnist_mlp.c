/* fashion_mnist_mlp.c: a 784-256-128-10 MLP with ReLU and AdamW (cosine learning-rate decay) on Fashion-MNIST.
   Needs Debian's dataset-fashion-mnist (apt-get install dataset-fashion-mnist). From the project root:
       cc -O2 examples/fashion_mnist_mlp.c -o fashion_mnist_mlp -lm -lpthread -lz && ./fashion_mnist_mlp [epochs] [--bf16] [--cuda] [--save FILE] [--load FILE]
   Prints a progress line while training and the test accuracy after each epoch.
   On several processes (README: Training on several machines):
       mpicc -O2 -DTENSOR_USE_MPI examples/fashion_mnist_mlp.c -o fashion_mnist_mlp -lm -lpthread -lz && mpirun -np 2 ./fashion_mnist_mlp
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

typedef struct { tensor *w1, *b1, *w2, *b2, *w3, *b3; } mlp;

static tensor *param(int ndim, const int64_t *shape) { return tensor_set_requires_grad(tensor_zeros(ndim, shape, TENSOR_F32), true); }

/* torch.nn.Linear's default init: kaiming_uniform_(a = sqrt(5)) for the weight, U(+-1/sqrt(in)) for the bias. */
static void linear_init(tensor *w, tensor *b) {
    tensor_kaiming_uniform_(w, sqrt(5.0));
    double bound = 1.0 / sqrt((double)tensor_size(w, 1));
    tensor_uniform_(b, -bound, bound);
}

/* x: [B, 784] -> f32 logits [B, 10]; the layers compute in dt (f32, or bf16 for --bf16) */
static tensor *forward(mlp *m, tensor *x, tensor_dtype dt) {
    tensor *h = tensor_relu(tensor_linear(tensor_to_dtype(x, dt), tensor_to_dtype(m->w1, dt), tensor_to_dtype(m->b1, dt)));
    h = tensor_relu(tensor_linear(h, tensor_to_dtype(m->w2, dt), tensor_to_dtype(m->b2, dt)));
    return tensor_to_dtype(tensor_linear(h, tensor_to_dtype(m->w3, dt), tensor_to_dtype(m->b3, dt)), TENSOR_F32);
}

static double accuracy(mlp *m, const float *x, const int64_t *y, int64_t n, int64_t pixels, tensor_dtype dt) {
    int64_t correct = 0;
    bool was = tensor_set_grad_enabled(false);
    for (int64_t i = 0; i < n; i += 1000) {
        int64_t b = n - i < 1000 ? n - i : 1000;
        tensor_scope_begin();
        tensor *pred = tensor_argmax(forward(m, on_device(tensor_from_data(x + i * pixels, TENSOR_SHAPE(b, pixels), TENSOR_F32)), dt), 1, false);
        int64_t p[1000];
        tensor_copy_to(pred, p, sizeof p);
        for (int64_t j = 0; j < b; j++) correct += p[j] == y[i + j];
        tensor_scope_end();
    }
    tensor_set_grad_enabled(was);
    return (double)correct / (double)n;
}

int main(int argc, char **argv) {
    if (dist_begin(&argc, &argv, BATCH)) return 1;
    train_args args = {10, TENSOR_F32, NULL, NULL};
    if (parse_train_args(argc, argv, &args)) return 2;
    int epochs = args.epochs;
    tensor_dtype dtype = args.dtype; /* the layers' (--bf16: bf16) */
    fashion_mnist d;
    if (fashion_mnist_load(&d)) return 1;
    printf("Fashion-MNIST: %lld train, %lld test images; %s\n", (long long)d.n_train, (long long)d.n_test, tensor_build_info());
    tensor_manual_seed(1);
    mlp m = {param(TENSOR_SHAPE(256, 784)), param(TENSOR_SHAPE(256)), param(TENSOR_SHAPE(128, 256)), param(TENSOR_SHAPE(128)),
             param(TENSOR_SHAPE(10, 128)), param(TENSOR_SHAPE(10))};
    linear_init(m.w1, m.b1);
    linear_init(m.w2, m.b2);
    linear_init(m.w3, m.b3);
    tensor **fields[6] = {&m.w1, &m.b1, &m.w2, &m.b2, &m.w3, &m.b3};
    for (int i = 0; i < 6; i++) /* --cuda: the model lives on the GPU */
        if (!(*fields[i] = device_param(*fields[i]))) return 1;
    tensor *params[6] = {m.w1, m.b1, m.w2, m.b2, m.w3, m.b3};
    tensor_optim *opt = tensor_optim_adamw(6, params, 1e-3, 0.9, 0.999, 1e-8, 1e-2);
    static const char *const names[6] = {"fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias", "fc3.weight", "fc3.bias"};
    if (!opt) { fprintf(stderr, "%s\n", tensor_last_error()); return 1; }
    int done_epochs = 0;
    if (args.load) {
        if (checkpoint_load(args.load, 6, names, params, opt, &done_epochs)) return 1;
        printf("loaded %s: %d epochs done\n", args.load, done_epochs);
    }
    tensor_ddp *ddp = tensor_ddp_new(6, params, 0); /* mpirun: rank 0's parameters everywhere, gradients averaged */
    if (!ddp) { fprintf(stderr, "%s\n", tensor_last_error()); return 1; }

    int64_t steps = d.n_train / BATCH;
    int64_t *order = (int64_t *)malloc(sizeof(int64_t) * (size_t)d.n_train);
    float *bx = (float *)malloc(sizeof(float) * BATCH * (size_t)d.pixels);
    int64_t by[BATCH], per = BATCH / dist_world;
    progress p;
    double train_seconds = 0, acc = 0;
    if (done_epochs >= epochs) { /* a finished run: evaluate it */
        acc = accuracy(&m, d.test_x, d.test_y, d.n_test, d.pixels, dtype);
        printf("test accuracy of %s: %.2f%%\n", args.load, 100 * acc);
    } else
        progress_begin(&p, steps * (epochs - done_epochs));
    for (int epoch = done_epochs + 1; epoch <= epochs; epoch++) {
        double t0 = now_seconds();
        tensor_scope_begin();
        tensor *perm = tensor_randperm(d.n_train, TENSOR_I64);
        tensor_copy_to(perm, order, sizeof(int64_t) * (size_t)d.n_train);
        tensor_scope_end();
        for (int64_t s = 0; s < steps; s++) {
            double done = (double)((epoch - 1) * steps + s) / (double)(epochs * steps);
            tensor_optim_set_lr(opt, 1e-3 * 0.5 * (1 + cos(M_PI * done))); /* cosine decay to 0 */
            for (int j = 0; j < per; j++) { /* this rank's share of the batch */
                int64_t k = order[s * BATCH + dist_rank * per + j];
                memcpy(bx + j * d.pixels, d.train_x + k * d.pixels, sizeof(float) * (size_t)d.pixels);
                by[j] = d.train_y[k];
            }
            tensor_scope_begin();
            tensor *x = on_device(tensor_from_data(bx, TENSOR_SHAPE(per, d.pixels), TENSOR_F32));
            tensor *y = on_device(tensor_from_data(by, TENSOR_SHAPE(per), TENSOR_I64));
            tensor *loss = tensor_cross_entropy(forward(&m, x, dtype), y);
            tensor_optim_zero_grad(opt);
            if (tensor_backward(loss) || tensor_ddp_sync(ddp) || tensor_optim_step(opt)) { fprintf(stderr, "%s\n", tensor_last_error()); return 1; }
            progress_step(&p, epoch, s + 1, steps, tensor_item(loss), BATCH, 1.0);
            tensor_scope_end();
        }
        double dt = now_seconds() - t0;
        train_seconds += dt;
        acc = accuracy(&m, d.test_x, d.test_y, d.n_test, d.pixels, dtype);
        printf("epoch %d: test accuracy %.2f%%, %.1f s\n", epoch, 100 * acc, dt);
        if (args.save && dist_rank == 0 && checkpoint_save(args.save, 6, names, params, opt, epoch)) return 1;
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
