#!/usr/bin/env python3
"""compare_torch_gpt.py: examples/gpt.c's model against PyTorch's, written the nanoGPT way, on the
same machine in the same run (make bench-gpt).

The configuration is nanoGPT's character-level one: 6 layers, 6 heads, width 384, context 256,
vocabulary 256, GELU's tanh form, the head tied to the token embedding, dropout 0, f32, AdamW with
weight decay on the 2-D weights only, the gradient norm clipped at 1. Random byte batches (the speed
does not depend on the text). For 1 and 2 threads (torch.set_num_threads / tensor_set_num_threads):
- training tokens/s (batch x 256 tokens a step; the median step after a warm-up step) and peak
  memory: the process's peak RSS less its RSS just before the model was made (each item runs in a
  process of its own, PyTorch's and tensor.h's alike);
- sampling at batch 1 with a KV cache (a 16-byte prompt, then 200 tokens): tensor.h's
  gpt_generate against a KV-cache loop written here in PyTorch eager (preallocated cache tensors,
  as tensor.h's);
- tensor.h's fused causal attention against the composite of public ops (batch 8, 6 heads, 256
  positions, head size 64; no PyTorch).
Attention in PyTorch: F.scaled_dot_product_attention where the installed PyTorch has it (2.0 and later), else
nanoGPT's own fallback (matmul, masked_fill, softmax, matmul). OpenBLAS (Debian's PyTorch uses it)
is set to its best kernel for this CPU first, as bench/compare_torch.py does.

Needs build/bench_gpt (make bench-gpt builds it) and python3-torch; without torch it prints
tensor.h's numbers alone. Run from anywhere: python3 bench/compare_torch_gpt.py [--batch B] [--steps S]
"""
import argparse
import math
import os
import resource
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "bench"))
BENCH = os.path.join(ROOT, "build", "bench_gpt")
LAYERS, HEADS, EMBD, BLOCK, VOCAB = 6, 6, 384, 256, 256


def rss_kib(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field):
                return int(line.split()[1])
    return -1


def torch_item(what, threads, batch, steps, tokens):
    """One measurement in this process (run as a child of the main script): prints one line."""
    # OpenBLAS (under Debian's PyTorch) keeps threads of its own beside torch's: the same count
    os.environ["OPENBLAS_NUM_THREADS"] = os.environ["OMP_NUM_THREADS"] = str(threads)
    from compare_torch import set_openblas_core
    set_openblas_core()
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    torch.set_num_threads(threads)
    torch.manual_seed(1)
    sdpa = getattr(F, "scaled_dot_product_attention", None)

    class Attention(nn.Module):
        def __init__(self):
            super().__init__()
            self.c_attn = nn.Linear(EMBD, 3 * EMBD)
            self.c_proj = nn.Linear(EMBD, EMBD)
            self.register_buffer("bias", torch.tril(torch.ones(BLOCK, BLOCK)).view(1, 1, BLOCK, BLOCK))
            self.cache = None

        def forward(self, x, pos=None):
            B, T, C = x.shape
            q, k, v = self.c_attn(x).split(EMBD, dim=2)
            q, k, v = (t.view(B, T, HEADS, C // HEADS).transpose(1, 2) for t in (q, k, v))
            causal = True
            if pos is not None:  # the KV cache: write these positions, attend over all cached
                kc, vc = self.cache
                kc[:, :, pos:pos + T] = k
                vc[:, :, pos:pos + T] = v
                k, v = kc[:, :, :pos + T], vc[:, :, :pos + T]
                causal = pos == 0
            if sdpa is not None:
                y = sdpa(q, k, v, is_causal=causal)
            else:  # nanoGPT's path without flash attention
                att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
                if causal:
                    att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
                y = F.softmax(att, dim=-1) @ v
            return self.c_proj(y.transpose(1, 2).contiguous().view(B, T, C))

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.ln_1, self.attn, self.ln_2 = nn.LayerNorm(EMBD), Attention(), nn.LayerNorm(EMBD)
            self.c_fc, self.c_proj = nn.Linear(EMBD, 4 * EMBD), nn.Linear(4 * EMBD, EMBD)

        def forward(self, x, pos=None):
            x = x + self.attn(self.ln_1(x), pos)
            return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))

    class GPT(nn.Module):
        def __init__(self):
            super().__init__()
            self.wte, self.wpe = nn.Embedding(VOCAB, EMBD), nn.Embedding(BLOCK, EMBD)
            self.h = nn.ModuleList(Block() for _ in range(LAYERS))
            self.ln_f = nn.LayerNorm(EMBD)

        def forward(self, idx, pos=None):
            p0 = pos or 0
            x = self.wte(idx) + self.wpe(torch.arange(p0, p0 + idx.shape[1]))
            for b in self.h:
                x = b(x, pos)
            return self.ln_f(x) @ self.wte.weight.t()

    base = rss_kib("VmRSS:")
    model = GPT()
    if what == "train":
        decay = [p for p in model.parameters() if p.dim() >= 2]
        plain = [p for p in model.parameters() if p.dim() < 2]
        opt = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": plain, "weight_decay": 0.0}], lr=1e-3, betas=(0.9, 0.99))
        times = []
        for s in range(steps + 1):
            t0 = time.perf_counter()
            x = torch.randint(0, VOCAB, (batch, BLOCK))
            y = torch.randint(0, VOCAB, (batch, BLOCK))
            loss = F.cross_entropy(model(x).view(-1, VOCAB), y.view(-1))
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
            times.append(time.perf_counter() - t0)
        med = sorted(times[1:])[steps // 2]
        print("train threads %d batch %d tokens_per_s %.1f peak_mib %.1f" % (threads, batch, batch * BLOCK / med, (rss_kib("VmHWM:") - base) / 1024))
    else:
        hd = EMBD // HEADS

        def generate(prompt, n):
            for b in model.h:
                b.attn.cache = (torch.zeros(1, HEADS, BLOCK, hd), torch.zeros(1, HEADS, BLOCK, hd))
            toks = list(prompt)
            logits = model(torch.tensor([toks]), 0)[0, -1]
            for i in range(n):
                nxt = int(torch.multinomial(F.softmax(logits, -1), 1))
                toks.append(nxt)
                if i + 1 < n:
                    logits = model(torch.tensor([[nxt]]), len(toks) - 1)[0, -1]
            return toks

        with torch.no_grad():
            prompt = [ord("a") + i for i in range(16)]
            generate(prompt, 16)
            t0 = time.perf_counter()
            generate(prompt, tokens)
            el = time.perf_counter() - t0
        print("sample threads %d tokens %d tokens_per_s %.1f peak_mib %.1f" % (threads, tokens, tokens / el, (rss_kib("VmHWM:") - base) / 1024))


def parse(line):
    f = line.split()
    return dict(zip(f[1::2], f[2::2]))


def run(cmd):
    r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    lines = [l for l in r.stdout.splitlines() if l.startswith(("train ", "sample ", "attention "))]
    if r.returncode or not lines:
        sys.exit("failed: %s\n%s%s" % (" ".join(cmd), r.stdout, r.stderr))
    return parse(lines[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--tokens", type=int, default=200)
    ap.add_argument("--item", help=argparse.SUPPRESS)
    ap.add_argument("--threads", type=int, default=0, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.item:
        torch_item(a.item, a.threads, a.batch, a.steps, a.tokens)
        return
    if not os.path.exists(BENCH):
        sys.exit("%s is missing: run make bench-gpt" % BENCH)
    try:
        from compare_torch import set_openblas_core
        how = set_openblas_core()
        import torch
        have_torch = "PyTorch %s (%s; OpenBLAS %s)" % (torch.__version__, "F.scaled_dot_product_attention" if hasattr(torch.nn.functional, "scaled_dot_product_attention")
                                                        else "nanoGPT's attention without flash: matmul, masked_fill, softmax, matmul", how)
    except ImportError:
        have_torch = None
    print("GPT (nanoGPT's char config: 6 layers, 6 heads, width 384, context 256, vocabulary 256), f32, dropout 0; training batch %d x 256 tokens" % a.batch)
    print("reference: %s" % (have_torch or "none: python3-torch is not installed (apt-get install python3-torch), tensor.h alone"))
    me = [sys.executable, os.path.abspath(__file__)]
    for threads in (1, 2):
        for item in ("train", "sample"):
            extra = ["--batch", str(a.batch), "--steps", str(a.steps)] if item == "train" else ["--tokens", str(a.tokens)]
            ours = run([BENCH, item, "--threads", str(threads)] + extra)
            what = "training" if item == "train" else "sampling, batch 1, KV cache"
            line = "%-30s %d thread%s: tensor.h %8.0f tokens/s, peak +%6.0f MiB" % (what, threads, "s" if threads > 1 else " ", float(ours["tokens_per_s"]), float(ours["peak_mib"]))
            if have_torch:
                ref = run(me + ["--item", item, "--threads", str(threads)] + extra)
                line += " | PyTorch %8.0f tokens/s, peak +%6.0f MiB | speed %.2fx PyTorch's, memory %.2fx" % (
                    float(ref["tokens_per_s"]), float(ref["peak_mib"]), float(ours["tokens_per_s"]) / float(ref["tokens_per_s"]),
                    float(ours["peak_mib"]) / max(float(ref["peak_mib"]), 1e-9))
            print(line, flush=True)
        at = run([BENCH, "attention", "--threads", str(threads)])
        print("%-30s %d thread%s: fused forward %.2f ms (composite %.2f ms: %.2fx), forward+backward %.2f ms (composite %.2f ms: %.2fx)" % (
            "attention, B 8 H 6 T 256 D 64", threads, "s" if threads > 1 else " ", float(at["fused_fwd_ms"]), float(at["composite_fwd_ms"]),
            float(at["composite_fwd_ms"]) / float(at["fused_fwd_ms"]), float(at["fused_fwdbwd_ms"]), float(at["composite_fwdbwd_ms"]),
            float(at["composite_fwdbwd_ms"]) / float(at["fused_fwdbwd_ms"])), flush=True)


if __name__ == "__main__":
    main()
