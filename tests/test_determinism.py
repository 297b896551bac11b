"""Determinism at any thread count: the same run at the same torch thread count gives the same history (issue 29).

At one thread every CPU kernel sums in one order. At two, a kernel may split a sum over the
threads; most split it the same way every call, but the backward of advanced indexing
(``index_put_`` with accumulation) did not, so the companion transformer's histories differed
from call to call at 2 threads. Its first block now gathers rows by an embedding lookup
(:func:`nhtlab.models.transformer.gather_rows`), whose backward sums in a fixed order.
"""

from __future__ import annotations

from contextlib import contextmanager

import pytest
import torch

import nhtlab
from nhtlab.models.transformer import gather_rows
from nhtlab.training.cache import ResultCache, config_key, key_threads

MLP = nhtlab.ModularRun(p=23, steps=6, eval_every=3, model_kwargs=dict(width=32), device="cpu")
# The companion transformer's architecture and protocol (minibatches sampled with replacement), small.
TRANSFORMER = nhtlab.ModularRun(p=23, model="transformer", model_kwargs=dict(d_model=32, n_heads=2, d_ff=64),
                                batch_size=512, steps=6, eval_every=3, lr=1e-3, device="cpu", fused=True)


@contextmanager
def threads(n: int):
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


@pytest.mark.parametrize("n", [1, 2])
@pytest.mark.parametrize("run", [MLP, TRANSFORMER], ids=["mlp", "transformer"])
def test_same_run_same_threads_same_history(run, n):
    with threads(n):
        first = nhtlab.run_modular(run, progress="none")
        second = nhtlab.run_modular(run, progress="none")
    assert first.rows == second.rows, f"two calls at {n} thread(s) gave different histories"
    assert first.config["threads"] == n, "the history records the thread count it trained at"


def test_gather_rows_backward_is_the_same_every_call_at_two_threads():
    # sizes where the old table[arange, tokens] backward summed in a varying order at 2 threads
    gen = torch.Generator().manual_seed(0)
    tokens = torch.randint(0, 97, (512, 2), generator=gen)
    table = torch.randn(2, 97, 128, generator=gen, requires_grad=True)
    upstream = torch.randn(512, 2, 128, generator=gen)
    grads = []
    with threads(2):
        for _ in range(20):
            table.grad = None
            (gather_rows(table, tokens) * upstream).sum().backward()
            grads.append(table.grad.clone())
    assert all(torch.equal(grads[0], g) for g in grads)
    expected = table.detach()[torch.arange(2), tokens]
    assert torch.equal(gather_rows(table.detach(), tokens), expected), "the same rows as advanced indexing"


def test_cache_key_holds_the_thread_count_of_a_cpu_run(tmp_path):
    config = MLP.cache_config()
    with threads(1):
        one = config_key(config)
        assert key_threads(config) is None  # one-thread keys read as before
    with threads(2):
        two = config_key(config)
        assert key_threads(config) == 2
        if not torch.cuda.is_available():
            assert key_threads(nhtlab.ModularRun(p=7, device="auto").cache_config()) == 2
    assert one != two, "a run trained at 2 threads is another result than at 1"
    assert key_threads({**config, "device": "cuda"}) is None


def test_sweep_caches_a_run_under_the_threads_it_trained_at(tmp_path):
    cache = ResultCache(tmp_path)
    with threads(2):
        nhtlab.sweep([MLP], strategy="sequential", cache=cache, progress="none")
        assert cache.get(MLP.cache_config()) is not None
    with threads(1):
        assert cache.get(MLP.cache_config()) is None, "a 2-thread result must not be reused at 1 thread"
        (row,) = nhtlab.sweep([MLP], strategy="sequential", cache=cache, progress="none")
        assert not row.cached and row.history.config["threads"] == 1
