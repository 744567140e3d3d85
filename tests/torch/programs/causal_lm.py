#!/usr/bin/env python3
"""A Hugging Face causal language model built from a config, without weights (GPT-2 or a Llama-style
model, a few layers), trained on random token batches (seeded) with AdamW and gradient clipping, optionally
wrapped in torch.compile (inductor on the CPU). Needs PyTorch 2.x and transformers (the venv of
scripts/install-deps.sh)."""
import torch
from transformers import AutoModelForCausalLM, GPT2Config, LlamaConfig

from common import parser, report, setup, step_marker


def config(args):
    if args.family == "gpt2":
        return GPT2Config(vocab_size=args.vocab, n_positions=args.seq, n_embd=args.hidden, n_layer=args.layers,
                          n_head=args.heads, resid_pdrop=0.0, embd_pdrop=0.0, attn_pdrop=0.0, bos_token_id=0,
                          eos_token_id=1, loss_type="ForCausalLM")
    if args.family == "llama":
        return LlamaConfig(vocab_size=args.vocab, hidden_size=args.hidden, intermediate_size=args.hidden * 8 // 3,
                           num_hidden_layers=args.layers, num_attention_heads=args.heads,
                           num_key_value_heads=max(1, args.heads // 2), max_position_embeddings=args.seq,
                           bos_token_id=0, eos_token_id=1, loss_type="ForCausalLM")
    raise SystemExit(f"unknown --family {args.family}")


def main():
    p = parser(__doc__)
    p.add_argument("--family", default="gpt2", choices=["gpt2", "llama"])
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--hidden", type=int, default=128)
    p.add_argument("--heads", type=int, default=4)
    p.add_argument("--vocab", type=int, default=2000)
    p.add_argument("--seq", type=int, default=64)
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--compile", action="store_true", help="train torch.compile(model) (inductor)")
    args = p.parse_args()
    setup(args)
    mark = step_marker(args)
    model = AutoModelForCausalLM.from_config(config(args))
    model.train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=3e-4, weight_decay=0.01)
    forward = torch.compile(model) if args.compile else model
    g = torch.Generator().manual_seed(args.seed)
    losses = []
    for _ in range(args.steps):
        tokens = torch.randint(0, args.vocab, (args.batch, args.seq), generator=g)
        mark()
        loss = forward(input_ids=tokens, labels=tokens).loss
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        optimizer.zero_grad()
        losses.append(loss.item())
    report(args, f"{args.family}{'-compiled' if args.compile else ''}", losses)


if __name__ == "__main__":
    main()
