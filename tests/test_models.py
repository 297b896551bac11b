import pytest
import torch
import torch.nn.functional as F
from torch.func import functional_call

from nhtlab.models import EmbeddingMLP, Transformer, make_model
from nhtlab.models.transformer import SelfAttention, gather_rows


@pytest.mark.parametrize("model", [EmbeddingMLP(11, width=32, depth=2), Transformer(11, d_model=32, n_heads=4, d_ff=64)])
def test_forward_is_readout_of_features(model):
    x = torch.randint(0, 11, (20, 2))
    features = model.features(x)
    assert features.shape == (20, model.readout.in_features)
    torch.testing.assert_close(model(x), model.readout(features))
    logits, feats = functional_call(model, dict(model.named_parameters()), (x,), {"return_features": True})
    torch.testing.assert_close(feats, features)
    assert logits.shape == (20, 11)


def test_transformer_defaults_follow_the_companion_paper():
    model = Transformer(97)
    assert model.tok.weight.shape == (97, 128) and model.pos.weight.shape == (2, 128)
    assert len(model.blocks) == 1 and model.blocks[0].fc.out_features == 512 and model.blocks[0].attn.n_heads == 4


def test_bad_model_arguments():
    with pytest.raises(ValueError, match="'name' parameter of make_model must be one of 'mlp', 'transformer'. Got 'cnn'"):
        make_model("cnn", 7)
    with pytest.raises(ValueError, match="'d_model' parameter of Transformer must be divisible by n_heads=3"):
        Transformer(7, d_model=16, n_heads=3)
    with pytest.raises(ValueError, match="'embed_std' parameter of EmbeddingMLP"):
        EmbeddingMLP(7, embed_std=0.0)


@pytest.mark.parametrize("T, queries", [(2, None), (2, 1), (3, None), (3, 2)])
def test_attention_is_scaled_dot_product_attention(T, queries):
    # The broadcast form must give PyTorch's reference attention, values and gradients, per head.
    torch.manual_seed(0)
    attn = SelfAttention(d_model=32, n_heads=4)
    x = torch.randn(6, T, 32, requires_grad=True)
    Tq = T if queries is None else queries

    def reference() -> torch.Tensor:
        q, k, v = attn.qkv(x).split(32, dim=2)
        q = q[:, T - Tq:]
        heads = [t.view(6, -1, 4, 8).transpose(1, 2) for t in (q, k, v)]  # (B, nh, T, hs)
        y = F.scaled_dot_product_attention(*heads).transpose(1, 2).reshape(6, Tq, 32)
        return attn.proj(y)

    outputs, grads = [], []
    for forward in (reference, lambda: attn(x, queries=queries)):
        x.grad = None
        out = forward()
        out.square().sum().backward()
        outputs.append(out.detach())
        grads.append(x.grad.clone())
    assert outputs[1].shape == (6, Tq, 32)
    torch.testing.assert_close(outputs[1], outputs[0], rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(grads[1], grads[0], rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("n_layers", [1, 2])
def test_last_block_at_the_last_position_only_matches_the_full_block(n_layers):
    # The final block runs at the last position only (nothing reads the others); the logits
    # and their gradients must equal those of every block run at every position.
    torch.manual_seed(0)
    model = Transformer(13, d_model=32, n_heads=4, d_ff=64, n_layers=n_layers)
    x = torch.randint(0, 13, (50, 2))

    def full_forward() -> torch.Tensor:
        h = model.tok(x) + model.pos(torch.arange(2))
        for block in model.blocks:
            h = block(h)
        return model.readout(model.ln_f(h[:, -1]))

    reference = full_forward()
    torch.testing.assert_close(model(x), reference, rtol=1e-6, atol=1e-6)
    assert model.blocks[-1](torch.randn(5, 2, 32), last_only=True).shape == (5, 1, 32)
    grads = []
    for forward in (full_forward, lambda: model(x)):
        model.zero_grad()
        forward().square().sum().backward()
        grads.append([p.grad.clone() for p in model.parameters()])
    for g_full, g_last in zip(*grads):
        torch.testing.assert_close(g_last, g_full, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("queries", [None, 1])
def test_attention_on_a_token_table_matches_attention_on_the_sequences(queries):
    # The first block projects one row per (position, token) and gathers: the values and the
    # gradients (reaching the table through the gather) must be those of per-sequence inputs.
    torch.manual_seed(0)
    attn = SelfAttention(d_model=32, n_heads=4)
    table = torch.randn(2, 13, 32, requires_grad=True)  # (T, V, C)
    tokens = torch.randint(0, 13, (40, 2))
    outputs, grads = [], []
    for forward in (lambda: attn(gather_rows(table, tokens), queries=queries),
                    lambda: attn(table, queries=queries, tokens=tokens)):
        table.grad = None
        attn.zero_grad()
        out = forward()
        out.square().sum().backward()
        outputs.append(out.detach())
        grads.append([table.grad.clone()] + [p.grad.clone() for p in attn.parameters()])
    assert outputs[1].shape == (40, 2 if queries is None else 1, 32)
    torch.testing.assert_close(outputs[1], outputs[0], rtol=1e-6, atol=1e-6)
    for g_table, g_rows in zip(*grads):
        torch.testing.assert_close(g_rows, g_table, rtol=1e-5, atol=1e-5)
    assert gather_rows(table, tokens)[7, 1].equal(table[1, tokens[7, 1]])


def _block_before(self, x, last_only=False, tokens=None):
    """Block.forward as nhtlab 0.3.1 wrote it: the residual gathers every position's row, then reads the last."""
    attended = self.attn(x, queries=1 if last_only else None, tokens=tokens)
    if tokens is not None:
        x = gather_rows(x, tokens)
    x = self.ln_1((x[:, -1:] if last_only else x) + attended)
    return self.ln_2(x + self.fc_out(F.gelu(self.fc(x))))


def _features_before(self, x):
    """Transformer.features as nhtlab 0.3.1 wrote it: the positions through an embedding lookup."""
    h = self.tok.weight + self.pos(torch.arange(x.shape[1]))[:, None]
    for i, block in enumerate(self.blocks):
        h = block(h, last_only=i == len(self.blocks) - 1, tokens=x if i == 0 else None)
    return self.ln_f(h[:, -1])


@pytest.mark.parametrize("threads, fused", [(1, True), (2, False)])
def test_the_companion_step_trains_as_before_bit_for_bit(monkeypatch, threads, fused):
    # Fewer small ops in the step (issue 47) must not move a number: 20 AdamW steps of the companion's
    # transformer give the same losses and parameters, exactly, as the forms they replaced.
    def train(model):
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3, betas=(0.9, 0.98), weight_decay=1.0, fused=fused,
                                foreach=None if fused else True)
        gen, losses = torch.Generator().manual_seed(0), []
        for _ in range(20):
            x = torch.randint(0, 97, (512, 2), generator=gen)
            loss = F.cross_entropy(model(x), (x[:, 0] + x[:, 1]) % 97)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            losses.append(loss.item())
        return losses, [p.detach() for p in model.parameters()]

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        torch.manual_seed(0)
        model = make_model("transformer", 97)
        state = {k: v.clone() for k, v in model.state_dict().items()}
        now = train(model)
        model.load_state_dict(state)
        monkeypatch.setattr(Transformer, "features", _features_before)
        monkeypatch.setattr(type(model.blocks[0]), "forward", _block_before)
        then = train(model)
    finally:
        torch.set_num_threads(before)
    assert now[0] == then[0]
    assert all(a.equal(b) for a, b in zip(now[1], then[1]))
