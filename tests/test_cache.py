"""The result cache: hits, misses on any config or version change, damaged entries recomputed."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path

import pytest

import nhtlab
from nhtlab.training.cache import ResultCache, cached_run, config_key, default_cache_dir
from nhtlab.training.modular_run import ModularRun
from nhtlab.history import History

RUN = ModularRun(p=11, model_kwargs=dict(width=16), steps=40, eval_every=10, seed=5, device="cpu")


@pytest.fixture(autouse=True)
def _no_default_cache(monkeypatch, tmp_path):
    """Never touch the user's real cache directory from the tests."""
    monkeypatch.setenv("NHTLAB_CACHE_DIR", str(tmp_path / "default-cache"))


@pytest.fixture
def cache(tmp_path) -> ResultCache:
    return ResultCache(tmp_path / "cache")


def _trained(cache, run=RUN):
    """Run through the cache and say whether it trained (a fresh history carries the model)."""
    history = cached_run(run, cache, use_cache=True, progress="none")
    return history, not history.cached


def test_hit_returns_the_same_history_without_training(cache):
    first, trained = _trained(cache)
    assert trained and hasattr(first, "model") and len(cache) == 1
    second, trained = _trained(cache)
    assert not trained and not hasattr(second, "model")
    assert second.rows == first.rows and second.status == "completed" and second.config == {**RUN.to_dict(), "threads": 1}
    assert cache.get(RUN.cache_config()).rows == first.rows


def test_any_config_change_misses(cache):
    _trained(cache)
    for change in (dict(weight_decay=0.5), dict(seed=6), dict(model_kwargs=dict(width=17)), dict(steps=41)):
        assert cache.get(RUN.replace(**change).cache_config()) is None, change
    assert cache.get(RUN.cache_config()) is not None


def test_key_is_canonical_and_version_dependent(monkeypatch, cache):
    a = {"lr": 1e-3, "betas": (0.9, 0.98), "model_kwargs": {"width": 8, "depth": 1}}
    b = {"model_kwargs": {"depth": 1, "width": 8}, "betas": [0.9, 0.98], "lr": 0.001}
    assert config_key(a) == config_key(b)
    history = History(rows=[{"step": 0, "x": 1.5}], status="completed", config=a)
    cache.put(a, history)
    assert cache.get(b).rows == history.rows
    old_key = config_key(a)
    monkeypatch.setattr(nhtlab._version, "__version__", "999.0.0")
    assert config_key(a) != old_key
    assert cache.get(a) is None  # a new nhtlab version never reuses old results


def test_version_change_retrains_a_run(monkeypatch, cache):
    _trained(cache)
    monkeypatch.setattr(nhtlab._version, "__version__", "0.0.0-test")
    _, trained = _trained(cache)
    assert trained and len(cache) == 2


def _damage(cache: ResultCache, path: Path, how: str) -> None:
    text = path.read_text()
    if how == "partial":
        path.write_text(text[: len(text) // 2])
    elif how == "empty":
        path.write_text("")
    elif how == "bitflip":  # still valid JSON, but one measured value changed
        entry = json.loads(text)
        entry["body"]["history"]["rows"][1]["test_acc"] += 0.25
        path.write_text(json.dumps(entry))
    elif how == "swapped":  # a whole, valid entry of another config copied over this one
        other = cache.put({"another": "config"}, History(rows=[{"step": 0}], status="completed"))
        path.write_bytes(other.read_bytes())


@pytest.mark.parametrize("how", ["partial", "empty", "bitflip", "swapped"])
def test_damaged_entries_are_recomputed_never_used(cache, how):
    first, _ = _trained(cache)
    path = cache.path(RUN.cache_config())
    _damage(cache, path, how)
    with pytest.warns(RuntimeWarning, match="Ignoring a damaged result-cache entry .* will be recomputed"):
        again, trained = _trained(cache)
    assert trained and again.rows == first.rows
    assert path.with_name(path.name + ".corrupt").exists()
    assert cache.get(RUN.cache_config()).rows == first.rows  # the recomputed entry is whole again


def test_diverged_and_nan_histories_round_trip(cache):
    rows = [{"step": 0, "train_loss": 1.0}, {"step": 10, "train_loss": math.nan, "norm": math.inf}]
    cache.put({"k": 1}, History(rows=rows, status="diverged", message="non-finite", config={}))
    back = cache.get({"k": 1})
    assert back.status == "diverged" and math.isnan(back.rows[1]["train_loss"]) and back.rows[1]["norm"] == math.inf


def test_running_histories_and_bad_arguments_are_refused(cache, tmp_path):
    with pytest.raises(ValueError, match="'history' parameter of ResultCache.put must be a finished run .* Got status 'running'"):
        cache.put({"k": 1}, History())
    with pytest.raises(TypeError, match="'run' parameter of cached_run must be of type ModularRun"):
        cached_run({"p": 11}, cache)
    with pytest.raises(TypeError, match="'root' parameter of ResultCache must be of type str or PathLike"):
        ResultCache(3)
    with pytest.raises(ValueError, match="'callbacks' parameter of cached_run is not supported"):
        cached_run(RUN, cache, callbacks=[print])


def test_the_core_cache_ignores_the_environment_and_the_book_cache_reads_it(monkeypatch, tmp_path, cache):
    from nhtlab.book.runs import BookCache
    from nhtlab.book.runs import cache as book_cache

    monkeypatch.setenv("NHTLAB_CACHE_DIR", str(tmp_path / "drive"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    monkeypatch.setenv("NHTLAB_CACHE", "off")
    monkeypatch.setenv("NHTLAB_CHECKPOINTS", "on")
    assert ResultCache().root == default_cache_dir() == Path.home() / ".cache" / "nhtlab"
    assert ResultCache().checkpoints is False
    cached_run(RUN, cache, progress="none")
    assert len(cache) == 1  # the core's cached_run reads no NHTLAB_CACHE
    assert book_cache() is None  # the book's cache is off
    monkeypatch.setenv("NHTLAB_CACHE", "on")
    assert isinstance(book_cache(), BookCache) and book_cache().root == tmp_path / "drive" and book_cache().checkpoints
    monkeypatch.delenv("NHTLAB_CACHE_DIR")
    assert book_cache().root == tmp_path / "xdg" / "nhtlab"
    cached_run(RUN, cache, use_cache=False, progress="none")
    assert cache.clear() == 1 and len(cache) == 0  # use_cache=False neither reads nor writes


def test_the_book_cache_trains_in_a_slot_and_writes_the_ledger(tmp_path):
    from nhtlab.book.runs import BookCache
    from nhtlab.plumbing.ledger import read_ledger

    cache = BookCache(tmp_path / "c")
    assert cache.get(RUN.cache_config()) is None
    history = cached_run(RUN, cache, progress="none")
    (line,) = read_ledger(cache.root)
    assert line["run"] == config_key(RUN.cache_config()) and line["how"] == "alone"
    assert line["steps"] == history.rows[-1]["step"] and cached_run(RUN, cache).cached


def test_a_modular_run_keeps_the_key_form_of_nhtlab_0_2_0():
    """ModularRun gained eval_batch_size from its TrainConfig base; at its default it stays out of the key."""
    assert {**RUN.to_dict(), "records": ["fourier"]} == RUN.cache_config() and RUN.to_dict() == {
        "p": 11, "operation": "+", "train_fraction": 0.5, "model": "mlp", "model_kwargs": {"width": 16},
        "steps": 40, "lr": 3e-3, "weight_decay": 1.0, "betas": [0.9, 0.98], "batch_size": None, "eval_every": 10,
        "schedule": "constant", "seed": 5, "device": "cpu", "stop_after": None}
    assert list(RUN.to_dict())[:5] == ["p", "operation", "train_fraction", "model", "model_kwargs"]
    assert RUN.replace(eval_batch_size=256).to_dict()["eval_batch_size"] == 256
    assert config_key(RUN.replace(eval_batch_size=256).to_dict()) != config_key(RUN.to_dict())
    assert ModularRun(**RUN.to_dict()) == RUN


def test_a_cached_history_keeps_its_column_order(cache):
    """The stored JSON sorts keys; the history comes back with the model's layer order, as a fresh one has it.

    A transformer's layers are tok, pos, blocks.…, readout: sorted, blocks.0.… would come first and the
    analysis that reads the first layer off the history (P4 of the scorecard) would read another layer.
    """
    rows = [{"step": s, "train_acc": 0.5, "norm": 3.0, "norm/tok": 1.0, "norm/pos": 1.0, "norm/blocks.0.attn.proj": 1.0,
             "norm/readout": 1.0} for s in (0, 10)]
    history = History(rows=rows, status="completed")
    cache.put({"run": 1}, history)
    back = cache.get({"run": 1})
    assert [list(r) for r in back.rows] == [list(r) for r in rows]
    assert back.layers == ["tok", "pos", "blocks.0.attn.proj", "readout"]
    fresh, _ = _trained(cache, RUN.replace(model="transformer", model_kwargs={}, p=7, steps=10, eval_every=5))
    again, trained = _trained(cache, RUN.replace(model="transformer", model_kwargs={}, p=7, steps=10, eval_every=5))
    assert not trained and again.columns == fresh.columns and again.layers[0] == "tok"


_CLAIM_AND_TRAIN = """
import sys
from pathlib import Path
import nhtlab
from nhtlab.training.cache import ResultCache
from nhtlab.training.modular_run import ModularRun
run = ModularRun(**__import__("json").loads(sys.argv[2]))
cache = ResultCache(sys.argv[1])
with cache.claim(run.cache_config()) as hit:
    assert hit is None
    Path(sys.argv[3]).touch()  # claimed: the test process may ask for the run now
    assert sys.stdin.readline() == "train\\n"  # held until the test process has seen its sweep wait on the claim
    history = nhtlab.run_modular(run, progress="none")
    cache.put(run.cache_config(), history)
"""


def _waiting_on(path: Path) -> bool:
    """Whether a thread of this process is blocked asking for ``path``'s file lock (a ``->`` line of /proc/locks:
    ``3: -> FLOCK  ADVISORY  WRITE <pid> <major>:<minor>:<inode> 0 EOF``)."""
    inode, pid = f":{path.stat().st_ino}", str(os.getpid())
    return any(fields[1] == "->" and pid in fields and any(f.endswith(inode) for f in fields)
               for fields in map(str.split, Path("/proc/locks").read_text().splitlines()))


@pytest.mark.skipif(not Path("/proc/locks").exists(), reason="Linux only (/proc/locks shows who waits on a lock)")
def test_a_run_claimed_by_another_process_is_waited_for_and_read_not_trained(cache, tmp_path):
    """Chapters executed side by side train a shared run once: the second waits for the first's claim.

    No clock decides: the other process holds its claim, untrained, until this one's sweep is seen
    blocked on the claim's lock; only then does it train and put the run.
    """
    import subprocess
    import sys
    import threading
    import time

    flag = tmp_path / "claimed"
    # the other process trains at one thread, as this one does: a run's cache key holds its thread count
    other = subprocess.Popen([sys.executable, "-c", _CLAIM_AND_TRAIN, str(cache.root), json.dumps(RUN.to_dict()),
                              str(flag)], env={**os.environ, "OMP_NUM_THREADS": "1"}, stdin=subprocess.PIPE, text=True)
    swept = []
    sweeper = threading.Thread(target=lambda: swept.extend(
        nhtlab.sweep([RUN], strategy="sequential", cache=cache, progress="none")), daemon=True)
    try:
        deadline = time.monotonic() + 120  # only a hang ever meets it
        while not flag.exists():
            assert other.poll() is None and time.monotonic() < deadline, "the other process did not claim the run"
            time.sleep(0.02)
        lock = cache.path(RUN.cache_config()).with_name(cache.path(RUN.cache_config()).name + ".lock")
        sweeper.start()
        while not _waiting_on(lock):
            assert sweeper.is_alive(), "the sweep returned while another process held the run's claim"
            assert time.monotonic() < deadline, "the sweep never asked for the claim"
            sweeper.join(0.02)
        other.stdin.write("train\n")
        other.stdin.close()
        sweeper.join(timeout=120)
    finally:
        if other.stdin and not other.stdin.closed:
            other.stdin.close()
        other.wait(timeout=120)
    assert other.returncode == 0 and not sweeper.is_alive()
    (row,) = swept
    assert row.cached and row.seconds == 0.0, "the run was trained twice"
    assert row.history.rows == cache.get(RUN.cache_config()).rows and len(cache) == 1


def test_a_claim_is_released_when_training_fails(cache):
    import threading

    config = RUN.cache_config()
    with pytest.raises(RuntimeError, match="training failed"):
        with cache.claim(config) as hit:
            assert hit is None
            raise RuntimeError("training failed")
    acquired = threading.Event()

    def claim_again():
        with cache.claim(config) as hit:
            assert hit is None  # nothing was put: the next claimant trains
            acquired.set()

    thread = threading.Thread(target=claim_again)
    thread.start()
    thread.join(timeout=10)
    assert acquired.is_set(), "the claim of the failed training was never released"


def test_a_run_listed_twice_in_a_parallel_sweep_trains_once(cache):
    result = nhtlab.sweep([RUN, RUN], strategy="parallel", workers=2, cache=cache, progress="none")
    assert sorted(row.source for row in result) == ["cache", "computed"]
    assert result[0].history.rows == result[1].history.rows and len(cache) == 1
    # and the entries the workers put are the ones a later sweep reads
    again = nhtlab.sweep([RUN], strategy="sequential", cache=cache, progress="none")
    assert again[0].cached and again[0].history.rows == result[0].history.rows


# -- what the key names: the code that computed the run, not its docs ------------------------------------------
_CHILD = """
import json, sys
import nhtlab
from nhtlab.training.cache import ResultCache, cached_run
run = nhtlab.ModularRun(p=7, model_kwargs=dict(width=8), steps=6, eval_every=3, device="cpu")
history = cached_run(run, ResultCache(sys.argv[1]), use_cache=True, progress="none")
print(json.dumps([history.cached, history.rows[-1]["train_loss"]]))
"""


def _copy_run(package: Path, cache_dir: Path) -> tuple[bool, float]:
    """Run a tiny run through the cache in a process that imports ``package`` (a copy of nhtlab)."""
    import subprocess
    import sys

    env = {**os.environ, "PYTHONPATH": str(package.parent), "NHTLAB_PROGRESS": "none", "OMP_NUM_THREADS": "1"}
    out = subprocess.run([sys.executable, "-c", _CHILD, str(cache_dir)], cwd=package.parent, env=env,
                         capture_output=True, text=True, check=True).stdout
    cached, loss = json.loads(out.strip().splitlines()[-1])
    return cached, loss


def test_an_edit_of_the_training_code_misses_and_an_edit_of_its_docstring_hits(tmp_path):
    import shutil

    package = tmp_path / "copy" / "nhtlab"
    shutil.copytree(Path(nhtlab.__file__).parent, package, ignore=shutil.ignore_patterns("__pycache__"))
    loop = package / "training" / "loop.py"
    source = loop.read_text()
    assert _copy_run(package, tmp_path / "c")[0] is False  # trained
    cached, loss = _copy_run(package, tmp_path / "c")
    assert cached is True
    loop.write_text(source.replace('"""The training loop:', '"""Edited docs. The training loop:', 1)
                    .replace("    def measure(step: int) -> bool:", "    # an edited comment\n    def measure(step: int) -> bool:", 1))
    assert _copy_run(package, tmp_path / "c") == (True, loss), "a docstring or comment edit must still hit"
    edited = source.replace("F.cross_entropy(logits, yb) if", "1.5 * F.cross_entropy(logits, yb) if")
    assert edited != source
    loop.write_text(edited)
    cached, changed = _copy_run(package, tmp_path / "c")
    assert cached is False and changed != loss, "an edit of the training code must miss and retrain"


def test_the_key_names_torch_device_dtype_and_threads(monkeypatch):
    import torch

    from nhtlab.training import cache_key

    config = RUN.cache_config()
    key = config_key(config)
    assert config_key({**config, "device": "cuda"}) != config_key(config)  # the device kind ("auto" resolves too)
    monkeypatch.setattr(torch, "__version__", "0.0.0")
    assert config_key(config) != key
    monkeypatch.undo()
    before = torch.get_default_dtype()
    torch.set_default_dtype(torch.float64)
    try:
        assert config_key(config) != key
    finally:
        torch.set_default_dtype(before)
    assert config_key(config) == key and cache_key.numerics_hash() == cache_key.numerics_hash(cache_key.NUMERICS_ROOT)


def test_equal_configs_have_one_key_and_one_hash():
    import numpy as np

    one = nhtlab.companion(1)
    assert one == nhtlab.companion(1.0) == nhtlab.companion(np.float32(1.0))
    assert hash(one) == hash(nhtlab.companion(1.0)) and config_key(one.cache_config()) == config_key(
        nhtlab.companion(np.int64(1)).cache_config())
    run = ModularRun(p=np.int64(11), seed=np.int32(5), model_kwargs=dict(width=np.int64(16), embed_std=0.1), device="cpu")
    assert run.p == 11 and type(run.p) is int and run.model_kwargs == {"width": 16}
    assert config_key(run.cache_config()) == config_key(ModularRun(p=11, seed=5, model_kwargs=dict(width=16),
                                                                   device="cpu").cache_config())
    assert config_key({"a": 1, "b": [np.float64(0.5)]}) == config_key({"a": 1.0, "b": (0.5,)})


@pytest.mark.parametrize("damage", ["root is a file", "entry is a folder", "no claim", "no claim, entry there"])
def test_an_unusable_cache_warns_and_keeps_the_finished_training(tmp_path, monkeypatch, damage):
    root = tmp_path / "cache"
    if damage == "root is a file":
        root.write_text("not a folder")
    elif damage == "entry is a folder":
        ResultCache(root).path(RUN.cache_config()).mkdir(parents=True)
        (ResultCache(root).path(RUN.cache_config()) / "x").write_text("")  # a folder that cannot be replaced
    if damage.startswith("no claim"):  # a read-only folder (root ignores permissions, so the lock is refused here)
        if damage.endswith("there"):
            first = cached_run(RUN, ResultCache(root), use_cache=True, progress="none")

        def refused(self, config):
            raise PermissionError(13, "Permission denied", str(self.path(config)) + ".lock")
        monkeypatch.setattr(ResultCache, "claim", refused)
    if damage.endswith("there"):  # read from the cache, nothing trained, nothing to warn about
        history = cached_run(RUN, ResultCache(root), use_cache=True, progress="none")
        assert history.cached is True and history.rows == first.rows
        return
    with pytest.warns(RuntimeWarning, match="could not be written|damaged"):
        history = cached_run(RUN, ResultCache(root), use_cache=True, progress="none")
    assert history.status == "completed" and len(history.rows) == 5 and history.cached is False
