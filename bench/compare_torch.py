#!/usr/bin/env python3
"""compare_torch.py: tensor.h against PyTorch (CPU) on the same machine, in the same session.

For each thread count (1 and 2, or --threads N) it measures in PyTorch, with torch.set_num_threads to
match: add/mul/exp/tanh/gelu on 16M floats (allocating results), the per-op overhead on 1-element
tensors (chains of 100 alternating add/mul: no autograd; autograd forward; autograd forward+backward),
one training step of the 784-256-10 MLP and of the small CNN of examples/fashion_mnist_cnn.c (batch 64,
cross_entropy, backward, AdamW). Right after, it runs `build/bench --torch-subset --threads N`, which
measures the same items in tensor.h, and prints the ratio per item:
"tensor.h is X.XXx PyTorch's speed" (PyTorch time / tensor.h time; > 1: tensor.h is faster).
Times are medians of repeated runs after a warm-up run, as in bench.c.

Needs Debian's python3-torch (apt-get install python3-torch); without it this says so and exits 0.
Run from anywhere: python3 bench/compare_torch.py [--threads N] [--quick]
"""
import argparse
import gc
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "build", "bench")
EW_N = 16 * 1024 * 1024
OVH_OPS = 100
BATCH = 64

BUDGET = 1.0
MAX_REPS = 101


def measure(fn):
    """Median seconds of one call of fn: one warm-up call, then as many as fit the budget (3..MAX_REPS, odd)."""
    t0 = time.perf_counter()
    fn()
    first = time.perf_counter() - t0
    reps = int(BUDGET / first) if first > 0 else MAX_REPS
    reps = max(3, min(MAX_REPS, reps))
    if reps % 2 == 0:
        reps += 1
    times = []
    for _ in range(reps):
        s = time.perf_counter()
        fn()
        times.append(time.perf_counter() - s)
    times.sort()
    return times[reps // 2]


def openblas_best_core():
    """OpenBLAS's best core for this CPU, as bench.c picks it (OpenBLAS 0.3.21 does not know this
    project's CPUs and silently runs a generic or AVX2 kernel); None when the flags give none."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except OSError:
        return None
    if all(x in flags for x in ("avx512f", "avx512bw", "avx512dq", "avx512vl")):
        return "SkylakeX"
    if "avx2" in flags and "fma" in flags:
        return "Haswell"
    return None


def openblas_level(core):
    core = (core or "").lower()
    if core in ("skylakex", "cooperlake", "sapphirerapids"):
        return 3
    return 2 if core in ("haswell", "zen", "skylake", "cascadelake", "excavator") else 1


def set_openblas_core():
    """Sets OPENBLAS_CORETYPE before torch loads OpenBLAS (it reads it once, at load); keeps the
    environment's when it names a core of the same ISA level. Returns how the core was chosen."""
    best, env = openblas_best_core(), os.environ.get("OPENBLAS_CORETYPE")
    if not best:
        return "as OpenBLAS detected it"
    if env and openblas_level(env) == openblas_level(best):
        return "OPENBLAS_CORETYPE=%s from the environment" % env
    os.environ["OPENBLAS_CORETYPE"] = best
    return "OPENBLAS_CORETYPE=%s set from the CPU's features%s" % (best, " in place of the environment's " + env if env else "")


def openblas_core_loaded():
    """The core reported by the OpenBLAS that this process (torch) loaded, or None."""
    import ctypes
    try:
        with open("/proc/self/maps") as f:
            libs = sorted({line.split()[-1] for line in f if "openblas" in line and line.split()[-1].startswith("/")})
        for lib in libs:
            fn = getattr(ctypes.CDLL(lib), "openblas_get_corename", None)
            if fn is not None:
                fn.restype = ctypes.c_char_p
                return fn().decode()
    except OSError:
        pass
    return None


def uniform(torch, shape, lo, hi, gen):
    return torch.rand(shape, generator=gen) * (hi - lo) + lo


def torch_items(torch, threads):
    """Seconds per call / op / step for every item, measured in PyTorch with `threads` threads."""
    F = torch.nn.functional
    torch.set_num_threads(threads)
    gen = torch.Generator().manual_seed(1)
    res = {}

    a = uniform(torch, (EW_N,), -1, 1, gen)
    b = uniform(torch, (EW_N,), -1, 1, gen)
    xe = uniform(torch, (EW_N,), -10, 10, gen)
    xt = uniform(torch, (EW_N,), -5, 5, gen)
    with torch.no_grad():
        res["add_16M"] = measure(lambda: torch.add(a, b))
        res["mul_16M"] = measure(lambda: torch.mul(a, b))
        res["exp_16M"] = measure(lambda: torch.exp(xe))
        res["tanh_16M"] = measure(lambda: torch.tanh(xt))
        res["gelu_16M"] = measure(lambda: F.gelu(xt))
        res["rand_16M"] = measure(lambda: torch.rand(EW_N))
        res["randn_16M"] = measure(lambda: torch.randn(EW_N))
    del a, b, xe, xt
    gc.collect()

    def chain(x, w, backward):
        y = x
        for i in range(OVH_OPS):
            y = y * w if i & 1 else y + w
        if backward:
            y.backward()
            x.grad = None
            w.grad = None

    x0 = torch.full((1,), 0.25)
    w0 = torch.full((1,), 0.5)
    res["op_nograd"] = measure(lambda: chain(x0, w0, False)) / OVH_OPS
    xg = torch.full((1,), 0.25, requires_grad=True)
    wg = torch.full((1,), 0.5, requires_grad=True)
    res["op_grad_fwd"] = measure(lambda: chain(xg, wg, False)) / OVH_OPS
    res["op_grad_fwdbwd"] = measure(lambda: chain(xg, wg, True)) / OVH_OPS

    def param(shape, bound):
        return uniform(torch, shape, -bound, bound, gen).requires_grad_(True)

    labels = torch.tensor([(i * 7) % 10 for i in range(BATCH)], dtype=torch.int64)

    # 784-256-10 MLP: linear, relu, linear, cross_entropy, backward, AdamW.
    p = [param((256, 784), 1 / 28), param((256,), 1 / 28), param((10, 256), 1 / 16), param((10,), 1 / 16)]
    x = uniform(torch, (BATCH, 784), 0, 1, gen)
    opt = torch.optim.AdamW(p, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2)

    def mlp_step():
        loss = F.cross_entropy(F.linear(F.relu(F.linear(x, p[0], p[1])), p[2], p[3]), labels)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        opt.step()

    res["mlp_step"] = measure(mlp_step)

    # examples/fashion_mnist_cnn.c: conv 1->32, relu, pool, conv 32->64, relu, pool, linear 3136->10.
    q = [param((32, 1, 3, 3), 1 / 3), param((32,), 1 / 3), param((64, 32, 3, 3), 288 ** -0.5), param((64,), 288 ** -0.5),
         param((10, 64 * 7 * 7), 3136 ** -0.5), param((10,), 3136 ** -0.5)]
    xc = uniform(torch, (BATCH, 1, 28, 28), 0, 1, gen)
    optc = torch.optim.AdamW(q, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=1e-2)

    def cnn_step():
        h = F.max_pool2d(F.relu(F.conv2d(xc, q[0], q[1], 1, 1)), 2, 2)
        h = F.max_pool2d(F.relu(F.conv2d(h, q[2], q[3], 1, 1)), 2, 2)
        loss = F.cross_entropy(F.linear(h.flatten(1), q[4], q[5]), labels)
        optc.zero_grad(set_to_none=True)
        loss.backward()
        optc.step()

    res["cnn_step"] = measure(cnn_step)
    return res


def tensor_h_items(threads, quick):
    cmd = [BENCH, "--torch-subset", "--threads", str(threads)] + (["--quick"] if quick else [])
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, universal_newlines=True).stdout
    res = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 4 and f[0] == "TORCH_SUBSET" and int(f[2]) == threads:
            res[f[1]] = float(f[3])
    return res


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def fmt_time(s):
    if s < 1e-6:
        return "%.1f ns" % (s * 1e9)
    if s < 1e-3:
        return "%.2f us" % (s * 1e6)
    if s < 1:
        return "%.2f ms" % (s * 1e3)
    return "%.3f s" % s


ITEMS = [
    ("add_16M", "add 16M f32 (allocating)"),
    ("mul_16M", "mul 16M f32 (allocating)"),
    ("exp_16M", "exp 16M f32 [-10,10]"),
    ("tanh_16M", "tanh 16M f32 [-5,5]"),
    ("gelu_16M", "gelu (erf) 16M f32 [-5,5]"),
    ("rand_16M", "rand 16M f32 (allocating)"),
    ("randn_16M", "randn 16M f32 (allocating)"),
    ("op_nograd", "op on 1 element, no autograd"),
    ("op_grad_fwd", "op on 1 element, autograd fwd"),
    ("op_grad_fwdbwd", "op on 1 element, autograd fwd+bwd"),
    ("mlp_step", "MLP 784-256-10 step, batch 64"),
    ("cnn_step", "CNN step (fashion_mnist_cnn), b64"),
]


def main():
    global BUDGET, MAX_REPS
    ap = argparse.ArgumentParser(description="tensor.h vs PyTorch on the same machine, same session")
    ap.add_argument("--threads", type=int, default=0, help="one thread count (default: 1 and 2)")
    ap.add_argument("--quick", action="store_true", help="shorter measurements (noisier)")
    args = ap.parse_args()
    # a re-run under /usr/bin/python3 (below) keeps what the first run said it did
    core_how = os.environ.get("COMPARE_TORCH_CORE_HOW") or set_openblas_core()
    os.environ["COMPARE_TORCH_CORE_HOW"] = core_how
    try:
        import torch
    except ImportError:
        # Debian's python3-torch is in /usr/lib/python3/dist-packages, which only Debian's own
        # interpreter sees; a python3 from pyenv/venv earlier in PATH does not.
        system = "/usr/bin/python3"
        if os.path.exists(system) and os.path.realpath(sys.executable) != os.path.realpath(system) \
                and not os.environ.get("COMPARE_TORCH_REEXEC"):
            os.environ["COMPARE_TORCH_REEXEC"] = "1"
            probe = subprocess.run([system, "-c", "import torch"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if probe.returncode == 0:
                print("(torch is not importable from %s; running under %s, which has it)" % (sys.executable, system))
                sys.stdout.flush()
                os.execv(system, [system] + sys.argv)
        print("compare_torch.py: PyTorch is not installed, so nothing was measured.\n"
              "Install Debian's build with:  sudo apt-get install python3-torch\n"
              "then run:  python3 bench/compare_torch.py")
        return 0
    if args.quick:
        BUDGET, MAX_REPS = 0.1, 11
    # make rebuilds the binary when tensor.h or bench.c changed (a stale one would measure old code)
    subprocess.run(["make", "-s", "-C", ROOT, "build/bench"], check=True, stdout=subprocess.DEVNULL)

    thread_counts = [args.threads] if args.threads > 0 else [1, 2]
    print("PyTorch %s (%s); mkldnn: %s; %d cores" % (torch.__version__, torch.__file__, torch.backends.mkldnn.is_available(),
                                                       os.cpu_count() or 0))
    core = openblas_core_loaded()
    best = openblas_best_core()
    print("PyTorch's OpenBLAS: core %s (%s)." % (core or "unknown (no OpenBLAS loaded: torch uses another BLAS)", core_how))
    if core and best and openblas_level(core) < openblas_level(best):
        print("WARNING: PyTorch's OpenBLAS runs core %s, weaker than %s which this CPU runs: its matmul-bound times "
              "(the training steps) are not at their best." % (core, best))
    print("tensor.h: %s --torch-subset, run from this script after the PyTorch measurements of each thread count" % BENCH)
    print("Times: median of repeated runs after a warm-up run. Ratio = PyTorch time / tensor.h time (> 1: tensor.h is faster).")
    print("PyTorch: torch.no_grad() for the elementwise ops, opt.zero_grad(set_to_none=True); Python loop overhead is "
          "part of PyTorch's per-op times.\n")
    load = loadavg()
    if load is not None:
        print("Load average (1 min) at start: %.2f. PyTorch's OpenMP threads spin while they wait, so with other "
              "processes running its multi-thread times can be many times slower than on an idle machine." % load)
    print("%-35s %2s %12s %12s  %s" % ("item", "th", "tensor.h", "PyTorch", "ratio"))
    for threads in thread_counts:
        theirs = torch_items(torch, threads)
        gc.collect()
        ours = tensor_h_items(threads, args.quick)
        for key, label in ITEMS:
            if key not in ours or key not in theirs:
                print("%-35s %2d %12s %12s  (missing from %s)" % (label, threads, "-", "-", "tensor.h" if key not in ours else "PyTorch"))
                continue
            print("%-35s %2d %12s %12s  tensor.h is %5.2fx PyTorch's speed" %
                  (label, threads, fmt_time(ours[key]), fmt_time(theirs[key]), theirs[key] / ours[key]))
        sys.stdout.flush()
    load = loadavg()
    if load is not None:
        print("Load average (1 min) at the end: %.2f" % load)
    return 0


if __name__ == "__main__":
    sys.exit(main())
