"""The NHT companion paper's transformer, nanoGPT-style: attention, block, model."""

from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F

from ..validation import require_int, require_real, require_size

__all__ = ["SelfAttention", "Block", "Transformer"]


def gather_rows(table: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """Row ``tokens[b, t]`` of ``table[t]`` for each sequence b and position t: (T, V, D), (B, T) → (B, T, D).

    An embedding lookup, not advanced indexing, whose backward sums in an order that changes between calls
    on several CPU threads; the embedding backward sums in a fixed order (issue 29).
    """
    T, V = table.shape[0], table.shape[1]
    flat = tokens + torch.arange(T, device=tokens.device) * V  # (B, T): row t·V + token
    return F.embedding(flat, table.reshape(T * V, table.shape[-1]))


class SelfAttention(nn.Module):
    """Multi-head self-attention without a causal mask (both tokens see each other)."""

    def __init__(self, d_model: int, n_heads: int):
        super().__init__()
        self.n_heads = n_heads
        self.qkv = nn.Linear(d_model, 3 * d_model)
        self.proj = nn.Linear(d_model, d_model)

    def forward(self, x: torch.Tensor, queries: int | None = None, tokens: torch.Tensor | None = None) -> torch.Tensor:
        """Attend from the last ``queries`` positions (all when None) to every position.

        ``x`` is (B, T, C); or, with ``tokens`` (B, T) given, a (T, V, C) table of each position's
        input for every token, which ``tokens`` index (see :meth:`Transformer.features`).
        """
        table = tokens is not None
        B, T = tokens.shape if table else x.shape[:2]
        C = x.shape[-1]
        Tq = T if queries is None else queries
        hs = C // self.n_heads
        w_q, w_kv = self.qkv.weight.split([C, 2 * C])
        b_q, b_kv = self.qkv.bias.split([C, 2 * C])
        q = F.linear(x[T - Tq:] if table else x[:, T - Tq:], w_q, b_q)
        kv = F.linear(x, w_kv, b_kv)
        if table:  # one row per (position, token) was projected: gather each sequence's rows
            q, kv = gather_rows(q, tokens[:, T - Tq:]), gather_rows(kv, tokens)
        q = q.reshape(B, Tq, 1, self.n_heads, hs)
        k, v = kv.reshape(B, 1, T, 2 * self.n_heads, hs).split(self.n_heads, dim=3)
        # Sequences here are 2 tokens long: broadcasting over (query, key) pairs does the work of
        # B·nh tiny batched matmuls without their per-matrix overhead, with the same result.
        att = (q * k).sum(-1) / math.sqrt(hs)  # (B, Tq, T, nh)
        y = (att.softmax(dim=2).unsqueeze(-1) * v).sum(2)  # (B, Tq, nh, hs)
        return self.proj(y.reshape(B, Tq, C))


class Block(nn.Module):
    """Post-norm encoder block, as ``nn.TransformerEncoderLayer`` (no dropout, GELU)."""

    def __init__(self, d_model: int, n_heads: int, d_ff: int):
        super().__init__()
        self.attn = SelfAttention(d_model, n_heads)
        self.ln_1 = nn.LayerNorm(d_model)
        self.fc = nn.Linear(d_model, d_ff)
        self.fc_out = nn.Linear(d_ff, d_model)
        self.ln_2 = nn.LayerNorm(d_model)

    def forward(self, x: torch.Tensor, last_only: bool = False, tokens: torch.Tensor | None = None) -> torch.Tensor:
        """``last_only``: the block at the last position only, the same numbers there for less compute.

        With ``tokens`` (B, T), ``x`` is a (T, V, C) table of inputs (:meth:`SelfAttention.forward`).
        """
        attended = self.attn(x, queries=1 if last_only else None, tokens=tokens)
        if tokens is not None:  # the rows of the positions read only: (B, 1 or T, C)
            x = gather_rows(x[-1:], tokens[:, -1:]) if last_only else gather_rows(x, tokens)
        x = self.ln_1((x[:, -1:] if last_only else x) + attended)
        x = self.ln_2(x + self.fc_out(F.gelu(self.fc(x))))
        return x


class Transformer(nn.Module):
    """The NHT companion paper's model: tokens [a, b] → transformer → LayerNorm → head.

    Defaults follow arXiv 2603.13331; ``p`` is the number of tokens and of classes. The features are the final
    LayerNorm's output at the last position. Two shortcuts give the same logits for fewer FLOPs: the last block
    runs at the read position only, and the first projects its inputs once per (position, token).
    ``init_scale`` multiplies every weight matrix and embedding after PyTorch's init, moving the norm memorised
    at: how the delay law's norm gap is varied at fixed ηλ. ``embed_init_scale`` multiplies the embeddings once
    more (chapter 05's embeddings that do not start large).
    """

    token_embeddings = ("tok.weight",)  # the token table the Fourier view reads (nhtlab.measures.fourier)

    def __init__(self, p: int, d_model: int = 128, n_heads: int = 4, d_ff: int = 512, n_layers: int = 1,
                 init_scale: float = 1.0, embed_init_scale: float = 1.0):
        super().__init__()
        for name, value in (("p", p), ("d_model", d_model), ("n_heads", n_heads), ("d_ff", d_ff), ("n_layers", n_layers)):
            require_int(value, name, low=2 if name == "p" else 1, owner="Transformer")
        require_real(init_scale, "init_scale", 0.0, low_open=True, owner="Transformer")
        require_size(n_layers * (4 * d_model + 2 * d_ff) * d_model + 2 * p * d_model, "'p', 'd_model', 'd_ff' and "
                     "'n_layers'", "Transformer")
        require_real(embed_init_scale, "embed_init_scale", 0.0, low_open=True, owner="Transformer")
        if d_model % n_heads:
            raise ValueError(
                f"The 'd_model' parameter of Transformer must be divisible by n_heads={n_heads}. Got {d_model} instead."
            )
        self.p = p
        self.tok = nn.Embedding(p, d_model)
        self.pos = nn.Embedding(2, d_model)
        self.blocks = nn.ModuleList(Block(d_model, n_heads, d_ff) for _ in range(n_layers))
        self.ln_f = nn.LayerNorm(d_model)
        self.readout = nn.Linear(d_model, p)
        with torch.no_grad():  # multiplying by one leaves a float as it is: the default init is PyTorch's, number for number
            for name, param in self.named_parameters():
                if name.endswith("weight") and param.ndim == 2:  # matrices and embeddings, not LayerNorm gains
                    param.mul_(init_scale * (embed_init_scale if name in ("tok.weight", "pos.weight") else 1.0))

    def features(self, x: torch.Tensor) -> torch.Tensor:
        # The first block's input at a position depends on one token: its projections are made once
        # per (position, token) row of this table and gathered, the same numbers for fewer FLOPs
        # (2·p rows instead of 2·n).
        h = self.tok.weight + self.pos.weight[:x.shape[1], None]  # (2, p, d_model)
        for i, block in enumerate(self.blocks):
            h = block(h, last_only=i == len(self.blocks) - 1, tokens=x if i == 0 else None)
        return self.ln_f(h[:, -1])  # (n, d_model)

    def forward(self, x: torch.Tensor, return_features: bool = False):
        h = self.features(x)
        logits = self.readout(h)
        return (logits, h) if return_features else logits


