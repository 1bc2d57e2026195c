"""PyTorch CUDA's figures for the rows of bench/bench_cuda.c, measured the same way (best of 5
rounds, synchronized): matmul, the memory-bound ops, the per-op overhead on 1-element tensors, and
the MLP and CNN training steps of examples/ at batch 256. Usage: compare_torch_cuda.py [ROWS], ROWS
the `key value` file bench_cuda wrote in the same `make bench-cuda` (BENCH_CUDA_ROWS): each line
then also prints tensor.h's figure and the ratio (> 1: tensor.h faster). Says so and exits 0 when
torch or a GPU is missing."""
import sys
import time

ours = {}
if len(sys.argv) > 1:
    with open(sys.argv[1]) as f:
        for line in f:
            k, v = line.split()
            ours[k] = float(v)


def row(key, text, value, higher_is_better=True):
    """Prints PyTorch's figure, and tensor.h's with the ratio when bench_cuda measured the row."""
    if key in ours and value > 0 and ours[key] > 0:
        ratio = ours[key] / value if higher_is_better else value / ours[key]
        print("%s   tensor.h %.6g   ratio %.2fx" % (text, ours[key], ratio))
    else:
        print(text)

try:
    import torch
except ImportError:
    print("compare_torch_cuda: PyTorch is not installed: no PyTorch figures")
    sys.exit(0)
if not torch.cuda.is_available():
    print("compare_torch_cuda: PyTorch sees no CUDA device: no PyTorch figures")
    sys.exit(0)

torch.backends.cuda.matmul.allow_tf32 = False  # as bench_cuda.c: f32 is f32
torch.backends.cudnn.allow_tf32 = False
dev = torch.device("cuda")


def best_of(fn, reps):
    fn()
    torch.cuda.synchronize()
    best = 1e30
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best


print("PyTorch %s, %s" % (torch.__version__, torch.cuda.get_device_name(0)))
for dt, name in ((torch.float32, "f32"), (torch.bfloat16, "bf16")):
    for n in (1024, 2048, 4096, 8192):
        a = torch.randn(n, n, device=dev).to(dt)
        b = torch.randn(n, n, device=dev).to(dt)
        t = best_of(lambda: a @ b, 3 if n >= 8192 else 10 if n >= 4096 else 50)
        row("matmul_%s_%d" % (name, n), "torch matmul %-5s %5d      %8.1f TFLOP/s" % (name, n, 2.0 * n ** 3 / t * 1e-12), 2.0 * n ** 3 / t * 1e-12)

n = 1 << 28
x = torch.rand(n, device=dev)
y = torch.rand(n, device=dev)
for name, fn, moved in (("add", lambda: x + y, 3), ("mul", lambda: x * y, 3), ("exp", lambda: torch.exp(x), 2)):
    t = best_of(fn, 10)
    row(name, "torch %-18s 256M f32  %8.0f GB/s" % (name, moved * 4.0 * n / t * 1e-9), moved * 4.0 * n / t * 1e-9)
del x, y
x = torch.rand(16384, n // 16384, device=dev)
for key, name, fn, moved in (("sum_rows", "sum over rows", lambda: x.sum(1), 1), ("softmax_rows", "softmax over rows", lambda: torch.softmax(x, 1), 2),
                             ("layer_norm", "layer_norm", lambda: torch.nn.functional.layer_norm(x, (x.shape[1],)), 2)):
    t = best_of(fn, 10)
    row(key, "torch %-18s 256M f32  %8.0f GB/s" % (name, moved * 4.0 * n / t * 1e-9), moved * 4.0 * n / t * 1e-9)
del x

a = torch.ones((), device=dev)
b = torch.full((), 1.0001, device=dev)


def chain():
    z = a
    for i in range(100):
        z = z * b if i & 1 else z + b
    return z


us = best_of(chain, 100) / 100 * 1e6
row("overhead_us", "torch per-op overhead, 1 element  %8.2f us per op" % us, us, higher_is_better=False)


def step_time(model, shape):
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, weight_decay=1e-2)
    xb = torch.rand(*shape, device=dev)
    yb = torch.randint(0, 10, (shape[0],), device=dev)

    def step():
        opt.zero_grad(set_to_none=True)
        torch.nn.functional.cross_entropy(model(xb), yb).backward()
        opt.step()
    return best_of(step, 50)


nn = torch.nn
mlp = nn.Sequential(nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 128), nn.ReLU(), nn.Linear(128, 10)).to(dev)
us = step_time(mlp, (256, 784)) * 1e6
row("mlp_step_us", "torch MLP training step, batch 256  %8.1f us" % us, us, higher_is_better=False)
cnn = nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                    nn.Flatten(), nn.Linear(64 * 7 * 7, 128), nn.ReLU(), nn.Dropout(0.25), nn.Linear(128, 10)).to(dev)
us = step_time(cnn, (256, 1, 28, 28)) * 1e6
row("cnn_step_us", "torch CNN training step, batch 256  %8.1f us" % us, us, higher_is_better=False)
