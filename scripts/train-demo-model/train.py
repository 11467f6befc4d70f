#!/usr/bin/env python3
"""Trains EdgeLLM's embedded demo model and writes it as a llama GGUF (README.md beside this file).

  python3 train.py --out ../../assets/models/tinytales.gguf

Steps: the procedural story corpus (make_corpus.py), a 1024-piece SentencePiece-style BPE
vocabulary learned from it (spm_bpe.py), a small Llama (RMSNorm, RoPE on adjacent pairs as GGUF
"llama" files rotate them, grouped-query attention, SwiGLU, tied embeddings) trained with AdamW
on random 256-token windows, then the GGUF (gguf_write.py). Seeds are fixed; on one machine the
same command gives the same file (PyTorch's CPU kernels are deterministic for these ops, the
thread count is fixed at --threads).
"""
import argparse
import hashlib
import math
import os
import random
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gguf_write  # noqa: E402
import make_corpus  # noqa: E402
import spm_bpe  # noqa: E402


class Config:
    vocab = 1024
    dim = 64
    n_layers = 5
    n_heads = 2
    n_kv_heads = 1
    ffn = 192
    ctx = 256
    rope_base = 10000.0
    eps = 1e-5


def rope_tables(cfg, n):
    hd = cfg.dim // cfg.n_heads
    inv = cfg.rope_base ** (-torch.arange(0, hd, 2, dtype=torch.float64) / hd)  # (hd/2,)
    ang = torch.arange(n, dtype=torch.float64)[:, None] * inv[None, :]        # (n, hd/2)
    return torch.cos(ang).float(), torch.sin(ang).float()


def apply_rope(x, cos, sin):
    # x: (B, H, T, hd); pairs (x[2i], x[2i+1]) rotate by angle pos * base^(-2i/hd) ("normal" RoPE).
    x0, x1 = x[..., 0::2], x[..., 1::2]
    r0 = x0 * cos - x1 * sin
    r1 = x0 * sin + x1 * cos
    return torch.stack((r0, r1), dim=-1).flatten(-2)


_masks = {}


def causal_mask(n):
    # (n, n): 0 on and below the diagonal, -inf above it (a key after the query is not seen).
    if n not in _masks:
        _masks[n] = torch.full((n, n), float("-inf")).triu(1)
    return _masks[n]


class RMSNorm(nn.Module):
    def __init__(self, dim, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(dim))
        self.eps = eps

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps) * self.weight


class Block(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        hd = cfg.dim // cfg.n_heads
        self.cfg, self.hd = cfg, hd
        self.attn_norm = RMSNorm(cfg.dim, cfg.eps)
        self.wq = nn.Linear(cfg.dim, cfg.n_heads * hd, bias=False)
        self.wk = nn.Linear(cfg.dim, cfg.n_kv_heads * hd, bias=False)
        self.wv = nn.Linear(cfg.dim, cfg.n_kv_heads * hd, bias=False)
        self.wo = nn.Linear(cfg.n_heads * hd, cfg.dim, bias=False)
        self.ffn_norm = RMSNorm(cfg.dim, cfg.eps)
        self.w_gate = nn.Linear(cfg.dim, cfg.ffn, bias=False)
        self.w_up = nn.Linear(cfg.dim, cfg.ffn, bias=False)
        self.w_down = nn.Linear(cfg.ffn, cfg.dim, bias=False)

    def forward(self, x, cos, sin):
        B, T, _ = x.shape
        cfg, hd = self.cfg, self.hd
        h = self.attn_norm(x)
        q = self.wq(h).view(B, T, cfg.n_heads, hd).transpose(1, 2)
        k = self.wk(h).view(B, T, cfg.n_kv_heads, hd).transpose(1, 2)
        v = self.wv(h).view(B, T, cfg.n_kv_heads, hd).transpose(1, 2)
        q, k = apply_rope(q, cos, sin), apply_rope(k, cos, sin)
        # Query head j reads KV head j // (n_heads / n_kv_heads), as llama.cpp maps GQA heads.
        rep = cfg.n_heads // cfg.n_kv_heads
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        att = (q * (1.0 / math.sqrt(hd))) @ k.transpose(-2, -1)              # (B, H, T, T)
        a = (att + causal_mask(T)).softmax(-1) @ v                           # (B, H, T, hd)
        x = x + self.wo(a.transpose(1, 2).reshape(B, T, cfg.n_heads * hd))
        h = self.ffn_norm(x)
        return x + self.w_down(F.silu(self.w_gate(h)) * self.w_up(h))


class Llama(nn.Module):
    def __init__(self, cfg):
        super().__init__()
        self.cfg = cfg
        self.embed = nn.Embedding(cfg.vocab, cfg.dim)
        self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.n_layers))
        self.norm = RMSNorm(cfg.dim, cfg.eps)
        for m in self.modules():
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, std=0.02)
        for b in self.blocks:  # residual projections scaled down with depth (GPT-2)
            nn.init.normal_(b.wo.weight, std=0.02 / math.sqrt(2 * cfg.n_layers))
            nn.init.normal_(b.w_down.weight, std=0.02 / math.sqrt(2 * cfg.n_layers))

    def forward(self, idx):
        T = idx.shape[1]
        cos, sin = rope_tables(self.cfg, T)
        x = self.embed(idx)
        for b in self.blocks:
            x = b(x, cos, sin)
        return self.norm(x) @ self.embed.weight.t()  # tied output head


def write_gguf(model, vocab, path, meta):
    cfg = model.cfg
    w = gguf_write.GgufWriter()
    w.add_string("general.architecture", "llama")
    w.add_string("general.name", "EdgeLLM tinytales")
    w.add_string("general.description", meta)
    w.add_u32("general.alignment", gguf_write.ALIGNMENT)
    w.add_u32("llama.context_length", cfg.ctx)
    w.add_u32("llama.embedding_length", cfg.dim)
    w.add_u32("llama.feed_forward_length", cfg.ffn)
    w.add_u32("llama.block_count", cfg.n_layers)
    w.add_u32("llama.attention.head_count", cfg.n_heads)
    w.add_u32("llama.attention.head_count_kv", cfg.n_kv_heads)
    w.add_u32("llama.rope.dimension_count", cfg.dim // cfg.n_heads)
    w.add_f32("llama.rope.freq_base", cfg.rope_base)
    w.add_f32("llama.attention.layer_norm_rms_epsilon", cfg.eps)
    w.add_u32("llama.vocab_size", cfg.vocab)
    w.add_string("tokenizer.ggml.model", "llama")
    w.add_array("tokenizer.ggml.tokens", gguf_write.STRING, vocab.tokens)
    w.add_array("tokenizer.ggml.scores", gguf_write.F32, vocab.scores)
    w.add_array("tokenizer.ggml.token_type", gguf_write.I32, vocab.types)
    w.add_u32("tokenizer.ggml.unknown_token_id", spm_bpe.UNK)
    w.add_u32("tokenizer.ggml.bos_token_id", spm_bpe.BOS)
    w.add_u32("tokenizer.ggml.eos_token_id", spm_bpe.EOS)
    w.add_bool("tokenizer.ggml.add_bos_token", True)
    w.add_bool("tokenizer.ggml.add_eos_token", False)
    w.add_bool("tokenizer.ggml.add_space_prefix", True)
    sd = {k: v.detach().float().numpy() for k, v in model.state_dict().items()}
    w.add_tensor("token_embd.weight", sd["embed.weight"])
    for i in range(cfg.n_layers):
        p = f"blocks.{i}."
        for ours, theirs in [("attn_norm", "attn_norm.weight"), ("attn_q", "wq.weight"), ("attn_k", "wk.weight"),
                             ("attn_v", "wv.weight"), ("attn_output", "wo.weight"), ("ffn_norm", "ffn_norm.weight"),
                             ("ffn_gate", "w_gate.weight"), ("ffn_up", "w_up.weight"), ("ffn_down", "w_down.weight")]:
            w.add_tensor(f"blk.{i}.{ours}.weight", sd[p + theirs])
    w.add_tensor("output_norm.weight", sd["norm.weight"])
    w.write(path)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--stories", type=int, default=20000)
    ap.add_argument("--steps", type=int, default=300)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--lr", type=float, default=3e-3)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--checkpoint-every", type=int, default=0,
                    help="also write OUT.partial every N steps (to try a long run before it ends)")
    args = ap.parse_args()

    random.seed(args.seed)
    np.random.seed(args.seed)
    torch.manual_seed(args.seed)
    torch.set_num_threads(args.threads)
    t0 = time.time()
    rng = random.Random(args.seed)
    stories = [make_corpus.story(rng) for _ in range(args.stories)]
    cfg = Config()
    vocab = spm_bpe.train(stories[:4000], cfg.vocab)
    assert len(vocab) == cfg.vocab, len(vocab)
    ids = []
    for s in stories:
        ids += [spm_bpe.BOS] + vocab.encode(s) + [spm_bpe.EOS]
    data = torch.tensor(ids, dtype=torch.long)
    # The last 2 % of the tokens are held out for the validation loss.
    n_val = len(ids) // 50
    train_data, val_data = data[:-n_val], data[-n_val:]
    print(f"corpus: {len(stories)} stories, {len(ids)} tokens ({sum(map(len, stories)) / len(ids):.2f} chars/token), "
          f"vocab {len(vocab)}; {time.time() - t0:.1f} s", flush=True)

    model = Llama(cfg)
    n_params = sum(p.numel() for p in model.parameters())
    print(f"model: {n_params} parameters", flush=True)
    opt = torch.optim.AdamW(model.parameters(), lr=args.lr, betas=(0.9, 0.95), weight_decay=0.1)
    gen = torch.Generator().manual_seed(args.seed)
    T = cfg.ctx

    def batch(src):
        starts = torch.randint(0, len(src) - T - 1, (args.batch,), generator=gen)
        x = torch.stack([src[s:s + T] for s in starts])
        y = torch.stack([src[s + 1:s + T + 1] for s in starts])
        return x, y

    def lr_at(step):
        warm = 30
        if step < warm:
            return args.lr * (step + 1) / warm
        frac = (step - warm) / max(1, args.steps - warm)
        return args.lr * (0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * frac)))

    t_train = time.time()
    loss_avg = None
    for step in range(args.steps):
        for g in opt.param_groups:
            g["lr"] = lr_at(step)
        x, y = batch(train_data)
        loss = F.cross_entropy(model(x).view(-1, cfg.vocab), y.view(-1))
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        loss_avg = loss.item() if loss_avg is None else 0.95 * loss_avg + 0.05 * loss.item()
        if args.checkpoint_every and step > 0 and step % args.checkpoint_every == 0:
            write_gguf(model, vocab, args.out + ".partial", f"checkpoint at step {step}")
        if step % 25 == 0 or step == args.steps - 1:
            print(f"step {step:5d}  loss {loss.item():.4f}  (avg {loss_avg:.4f})  lr {lr_at(step):.2e}  "
                  f"{time.time() - t_train:.0f} s", flush=True)
    model.eval()
    with torch.no_grad():
        vgen = torch.Generator().manual_seed(args.seed + 1)
        losses = []
        for _ in range(20):
            starts = torch.randint(0, len(val_data) - T - 1, (args.batch,), generator=vgen)
            x = torch.stack([val_data[s:s + T] for s in starts])
            y = torch.stack([val_data[s + 1:s + T + 1] for s in starts])
            losses.append(F.cross_entropy(model(x).view(-1, cfg.vocab), y.view(-1)).item())
        val = sum(losses) / len(losses)
        # A greedy sample, to see the model writes English before anything else does.
        ctx = torch.tensor([[spm_bpe.BOS] + vocab.encode("Once upon a time")])
        for _ in range(80):
            nxt = int(model(ctx)[0, -1].argmax())
            if nxt == spm_bpe.EOS:
                break
            ctx = torch.cat([ctx, torch.tensor([[nxt]])], dim=1)
        print("greedy sample:", vocab.decode(ctx[0, 1:].tolist()), flush=True)
    train_s = time.time() - t_train
    meta = (f"A {n_params}-parameter Llama trained by scripts/train-demo-model/train.py (seed {args.seed}, "
            f"{args.steps} steps of {args.batch}x{T} tokens) on procedurally generated children's stories. "
            f"Final training loss {loss_avg:.4f}, validation loss {val:.4f} nats/token.")
    os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
    write_gguf(model, vocab, args.out, meta)
    sha = hashlib.sha256(open(args.out, "rb").read()).hexdigest()
    print(f"training: {train_s:.0f} s; final loss {loss_avg:.4f} (average of the last steps), validation {val:.4f}")
    print(f"wrote {args.out}: {os.path.getsize(args.out)} bytes, sha256 {sha}")


if __name__ == "__main__":
    main()
