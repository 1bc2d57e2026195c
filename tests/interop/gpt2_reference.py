"""A small model of GPT-2's architecture in PyTorch, written here with the names and layouts of
Hugging Face's GPT2Model (Conv1D weights stored [in, out], the causal-mask buffers h.{i}.attn.bias
stored too), for tests/test_gpt.c: it writes the weights as safetensors and the logits of a token
sequence as .npy, and the test loads the weights into examples/gpt.c's model and compares.
Run: /usr/bin/python3 tests/interop/gpt2_reference.py OUT.safetensors OUT_LOGITS.npy"""
import json
import math
import struct
import sys

import numpy as np
import torch

LAYERS, HEADS, EMBD, BLOCK, VOCAB = 2, 4, 64, 32, 300
TOKENS = [5, 17, 299, 0, 42, 42, 7, 150, 3, 88, 271, 9, 64, 1, 2, 250, 100, 31, 12]


class Conv1D(torch.nn.Module):  # transformers.pytorch_utils.Conv1D: y = x @ W + b, W [in, out]
    def __init__(self, n_out, n_in):
        super().__init__()
        self.weight = torch.nn.Parameter(torch.randn(n_in, n_out) * 0.1)
        self.bias = torch.nn.Parameter(torch.randn(n_out) * 0.1)

    def forward(self, x):
        return x @ self.weight + self.bias


class Attention(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c_attn = Conv1D(3 * EMBD, EMBD)
        self.c_proj = Conv1D(EMBD, EMBD)
        self.register_buffer("bias", torch.tril(torch.ones(BLOCK, BLOCK)).view(1, 1, BLOCK, BLOCK))

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, HEADS, C // HEADS).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(C // HEADS)
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf")).softmax(-1)
        return self.c_proj((att @ v).transpose(1, 2).reshape(B, T, C))


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.c_fc = Conv1D(4 * EMBD, EMBD)
        self.c_proj = Conv1D(EMBD, 4 * EMBD)

    def forward(self, x):
        return self.c_proj(torch.nn.functional.gelu(self.c_fc(x), approximate="tanh"))


def layer_norm():
    ln = torch.nn.LayerNorm(EMBD, eps=1e-5)
    with torch.no_grad():  # not the identity, so a swapped weight and bias shows
        ln.weight.copy_(1 + 0.1 * torch.randn(EMBD))
        ln.bias.copy_(0.1 * torch.randn(EMBD))
    return ln


class Block(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.ln_1, self.attn, self.ln_2, self.mlp = layer_norm(), Attention(), layer_norm(), MLP()

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT2(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = torch.nn.Embedding(VOCAB, EMBD)
        self.wpe = torch.nn.Embedding(BLOCK, EMBD)
        self.h = torch.nn.ModuleList(Block() for _ in range(LAYERS))
        self.ln_f = layer_norm()

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.shape[1]))
        for b in self.h:
            x = b(x)
        return self.ln_f(x) @ self.wte.weight.T  # the head tied to the token embedding


def save_safetensors(path, tensors):  # the format: 8-byte header length, JSON header, raw data
    header, offset, blobs = {"__metadata__": {"format": "pt"}}, 0, []
    for name, t in tensors.items():
        b = t.detach().contiguous().numpy().astype("<f4").tobytes()
        header[name] = {"dtype": "F32", "shape": list(t.shape), "data_offsets": [offset, offset + len(b)]}
        offset += len(b)
        blobs.append(b)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


torch.manual_seed(0)
model = GPT2()
with torch.no_grad():
    logits = model(torch.tensor([TOKENS]))[0]
save_safetensors(sys.argv[1], model.state_dict())
np.save(sys.argv[2], logits.numpy().astype(np.float32))
