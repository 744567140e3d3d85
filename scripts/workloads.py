#!/usr/bin/python3
"""More PyTorch (CPU) training workloads for profiling with `sentinel profile` (profiles/README.md).

Deterministic like scripts/train.py (same seed, same losses), synthetic data generated inside each
step. Models:
  resnet   ResNet-style CNN: stem, three stages of two basic blocks (conv/BN/ReLU, skip connections,
           1x1 strided projection where the shape changes), SGD with momentum
  gru      GRU language model: embedding, 2-layer GRU, vocabulary projection, loss at every position
  gpt      GPT-style decoder: token and position embeddings, pre-norm blocks of causal self-attention
           and a 4x MLP, untied vocabulary head, Adam (its state doubles the parameter memory)
  recsys   DLRM-style recommender: large sparse embedding tables (sparse gradients, SGD) and dense
           bottom/top MLPs (Adam)
  accum    an MLP trained with gradient accumulation: --micro micro-batches per optimizer step
--mark-steps calls sentinel_step_begin() (from the preloaded libsentinel.so) at every optimizer step.
"""
import argparse
import ctypes
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class BasicBlock(nn.Module):
    def __init__(self, cin, cout, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(cin, cout, 3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(cout)
        self.conv2 = nn.Conv2d(cout, cout, 3, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(cout)
        self.proj = None
        if stride != 1 or cin != cout:
            self.proj = nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False), nn.BatchNorm2d(cout))

    def forward(self, x):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return F.relu(out + (x if self.proj is None else self.proj(x)))


class ResNet(nn.Module):
    def __init__(self, c, classes):
        super().__init__()
        self.stem = nn.Sequential(nn.Conv2d(3, c, 3, padding=1, bias=False), nn.BatchNorm2d(c), nn.ReLU())
        blocks, cin = [], c
        for i, cout in enumerate([c, 2 * c, 4 * c]):
            blocks += [BasicBlock(cin, cout, 1 if i == 0 else 2), BasicBlock(cout, cout, 1)]
            cin = cout
        self.blocks = nn.Sequential(*blocks)
        self.head = nn.Linear(cin, classes)

    def forward(self, x):
        return self.head(F.adaptive_avg_pool2d(self.blocks(self.stem(x)), 1).flatten(1))


class GruLM(nn.Module):
    def __init__(self, vocab, dim, hidden):
        super().__init__()
        self.emb = nn.Embedding(vocab, dim)
        self.gru = nn.GRU(dim, hidden, num_layers=2, batch_first=True)
        self.out = nn.Linear(hidden, vocab)

    def forward(self, tokens):
        h, _ = self.gru(self.emb(tokens))
        return self.out(h)


class DecoderBlock(nn.Module):
    def __init__(self, dim, heads):
        super().__init__()
        self.ln1 = nn.LayerNorm(dim)
        self.attn = nn.MultiheadAttention(dim, heads, batch_first=True)
        self.ln2 = nn.LayerNorm(dim)
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x, mask):
        h = self.ln1(x)
        x = x + self.attn(h, h, h, attn_mask=mask, need_weights=False)[0]
        return x + self.mlp(self.ln2(x))


class Gpt(nn.Module):
    def __init__(self, vocab, dim, depth, heads, seq):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(seq, dim)
        self.blocks = nn.ModuleList([DecoderBlock(dim, heads) for _ in range(depth)])
        self.ln = nn.LayerNorm(dim)
        self.head = nn.Linear(dim, vocab, bias=False)
        self.register_buffer("mask", torch.triu(torch.full((seq, seq), float("-inf")), diagonal=1))

    def forward(self, tokens):
        x = self.tok(tokens) + self.pos(torch.arange(tokens.shape[1]))
        for b in self.blocks:
            x = b(x, self.mask)
        return self.head(self.ln(x))


class Recommender(nn.Module):
    def __init__(self, tables, rows, dim, dense):
        super().__init__()
        self.tables = nn.ModuleList([nn.EmbeddingBag(rows, dim, mode="sum", sparse=True) for _ in range(tables)])
        self.bottom = nn.Sequential(nn.Linear(dense, 256), nn.ReLU(), nn.Linear(256, dim), nn.ReLU())
        self.top = nn.Sequential(nn.Linear(dim * (tables + 1), 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                                 nn.Linear(256, 1))

    def forward(self, dense, ids, offsets):
        feats = [self.bottom(dense)] + [t(i, offsets) for t, i in zip(self.tables, ids)]
        return self.top(torch.cat(feats, dim=1)).squeeze(1)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", required=True, choices=["resnet", "gru", "gpt", "recsys", "accum"])
    p.add_argument("--steps", type=int, default=8, help="optimizer steps")
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--width", type=int, default=256, help="channels (resnet), hidden size, model width")
    p.add_argument("--depth", type=int, default=4)
    p.add_argument("--seq", type=int, default=32)
    p.add_argument("--vocab", type=int, default=8000)
    p.add_argument("--tables", type=int, default=8)
    p.add_argument("--rows", type=int, default=200000, help="rows per embedding table (recsys)")
    p.add_argument("--micro", type=int, default=4, help="micro-batches per optimizer step (accum)")
    p.add_argument("--seed", type=int, default=1234)
    p.add_argument("--mark-steps", action="store_true", help="call sentinel_step_begin() at every step")
    p.add_argument("--quiet", action="store_true")
    a = p.parse_args()
    torch.manual_seed(a.seed)
    gen = torch.Generator().manual_seed(a.seed + 1)

    if a.model == "resnet":
        model = ResNet(a.width, 10)
        opts = [torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)]
        def batch():
            return (torch.randn(a.batch, 3, 32, 32, generator=gen),), torch.randint(0, 10, (a.batch,), generator=gen)
        loss_of = F.cross_entropy
    elif a.model in ("gru", "gpt"):
        if a.model == "gru":
            model = GruLM(a.vocab, a.width, a.width)
            opts = [torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)]
        else:
            model = Gpt(a.vocab, a.width, a.depth, 8, a.seq)
            opts = [torch.optim.Adam(model.parameters(), lr=3e-4)]
        def batch():
            t = torch.randint(0, a.vocab, (a.batch, a.seq + 1), generator=gen)
            return (t[:, :-1],), t[:, 1:]
        def loss_of(logits, target):
            return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), target.reshape(-1))
    elif a.model == "recsys":
        model = Recommender(a.tables, a.rows, 64, 13)
        opts = [torch.optim.SGD(model.tables.parameters(), lr=0.05),
                torch.optim.Adam(list(model.bottom.parameters()) + list(model.top.parameters()), lr=1e-3)]
        def batch():
            ids = [torch.randint(0, a.rows, (a.batch * 4,), generator=gen) for _ in range(a.tables)]
            offsets = torch.arange(0, a.batch * 4, 4)
            return (torch.randn(a.batch, 13, generator=gen), ids, offsets), \
                torch.randint(0, 2, (a.batch,), generator=gen).float()
        loss_of = F.binary_cross_entropy_with_logits
    else:
        layers = []
        for i in range(a.depth):
            layers += [nn.Linear(a.width, a.width), nn.ReLU()]
        model = nn.Sequential(*layers, nn.Linear(a.width, 10))
        opts = [torch.optim.Adam(model.parameters(), lr=1e-3)]
        def batch():
            return (torch.randn(a.batch, a.width, generator=gen),), torch.randint(0, 10, (a.batch,), generator=gen)
        loss_of = F.cross_entropy
    micro = a.micro if a.model == "accum" else 1

    step_begin = None
    if a.mark_steps:
        step_begin = getattr(ctypes.CDLL(None), "sentinel_step_begin", None)
        if step_begin is None:
            print("note: Sentinel is not loaded; --mark-steps has no effect", file=sys.stderr)
    params = sum(x.numel() for x in model.parameters())
    times = []
    for step in range(a.steps):
        if step_begin is not None:
            step_begin()
        t0 = time.perf_counter()
        for o in opts:
            o.zero_grad()
        total = 0.0
        for _ in range(micro):
            inputs, target = batch()
            loss = loss_of(model(*inputs), target) / micro
            loss.backward()
            total += loss.item()
        for o in opts:
            o.step()
        times.append(time.perf_counter() - t0)
        if not a.quiet:
            print(f"step {step} loss {total:.6f} ({total.hex()}) {times[-1] * 1e3:.1f} ms", flush=True)
    steady = sorted(times[1:]) or times
    print(f"trained {a.model}: {params} parameters, {a.steps} steps, median step "
          f"{steady[len(steady) // 2] * 1e3:.1f} ms, final loss {total:.6f}", flush=True)


if __name__ == "__main__":
    main()
