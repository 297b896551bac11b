"""Every public entry point refuses bad input with a message that names the parameter and what is allowed.

Each case calls one entry point with one bad value and checks the exception type, that the message
quotes the parameter's name, and that it states the allowed values (or range). Entry points of
the package are listed whether or not they exist yet: a case whose module or function is
missing fails, so a rename cannot hide a case.
"""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import numpy as np
import pytest
import torch

import nhtlab
from nhtlab.history import History
from nhtlab.training.loop import TrainConfig


def _data(**changes):
    d = nhtlab.modular_data(p=7, seed=0)
    return SimpleNamespace(**{**vars(d), **changes})


def _mlp():
    return nhtlab.models.EmbeddingMLP(7, width=8)


def _history():
    return History(rows=[{"step": s, "train_acc": 1.0, "test_acc": 0.5, "norm": 10.0 - s, "norm/a": 5.0 - s / 2,
                          "norm/b": 5.0 - s / 2} for s in range(6)], status="completed", config={"lr": 1e-3, "weight_decay": 1.0})


PROFILES = {"quick": {"steps": 1}, "book": {"steps": 2}, "full": {"steps": 3}}
FEATURES = torch.randn(20, 5, generator=torch.Generator().manual_seed(0))
OUTPUTS = torch.randn(20, 3, generator=torch.Generator().manual_seed(1))

# (module, attribute, call, exception, parameter, allowed) — `call` gets the attribute and makes the bad call.
CASES = [
    # data
    ("nhtlab.data.modular", "modular_data", lambda f: f(p=1), ValueError, "p", "int in the range [2, 4096]"),
    ("nhtlab.data.modular", "modular_data", lambda f: f(p=7.5), TypeError, "p", "must be an int"),
    ("nhtlab.data.modular", "modular_data", lambda f: f(operation="%"), ValueError, "operation", "'+', '-', '*', '/'"),
    ("nhtlab.data.modular", "modular_data", lambda f: f(train_fraction=1.0), ValueError, "train_fraction", "(0.0, 1.0)"),
    ("nhtlab.data.modular", "modular_data", lambda f: f(p=12, operation="/"), ValueError, "p", "prime"),
    ("nhtlab.data.modular", "modular_data", lambda f: f(seed=-1), ValueError, "seed", "in the range [0, "),
    ("nhtlab.data.images", "digits", lambda f: f(size=4), ValueError, "size", "[8, 256]"),
    ("nhtlab.data.images", "digits", lambda f: f(test_fraction=0.0), ValueError, "test_fraction", "(0.0, 1.0)"),
    ("nhtlab.data.images", "cifar10", lambda f: f(root=3), TypeError, "root", "str or Path"),
    ("nhtlab.data.images", "cifar10", lambda f: f("data", download="yes"), TypeError, "download", "bool"),
    ("nhtlab.data.cues", "border_shortcut", lambda f: f("digits"), TypeError, "base", "ImageData"),
    ("nhtlab.data.cues", "border_shortcut", lambda f: f(nhtlab.digits(size=8), rho=1.5), ValueError, "rho", "[0.0, 1.0]"),
    ("nhtlab.data.cues", "border_shortcut", lambda f: f(nhtlab.digits(size=8), otherwise="x"), ValueError, "otherwise", "one of"),
    ("nhtlab.data.cues", "tint_shortcut", lambda f: f(nhtlab.digits(size=8), strength=0.0), ValueError, "strength", "(0.0, 1.0]"),
    ("nhtlab.training.shortcut_run", "ShortcutRun", lambda f: f(kind="stripes"), ValueError, "kind", "one of"),
    ("nhtlab.training.shortcut_run", "ShortcutRun", lambda f: f(base="imagenet"), ValueError, "base", "one of"),
    ("nhtlab.training.shortcut_run", "ShortcutRun", lambda f: f(schedule="linear"), ValueError, "schedule", "'constant', 'cosine'"),
    ("nhtlab.training.shortcut_run", "ShortcutRun", lambda f: f(stop_after=10), ValueError, "stop_after", "None"),
    ("nhtlab.training.shortcut_run", "run_shortcut", lambda f: f(nhtlab.ModularRun(p=7)), TypeError, "run", "ShortcutRun"),
    # models
    ("nhtlab.models", "EmbeddingMLP", lambda f: f(7, width=0), ValueError, "width", ">= 1"),
    ("nhtlab.models", "EmbeddingMLP", lambda f: f(7, embed_std=0.0), ValueError, "embed_std", "> 0.0"),
    ("nhtlab.models", "Transformer", lambda f: f(7, d_model=30, n_heads=4), ValueError, "d_model", "divisible by n_heads"),
    ("nhtlab.models", "make_model", lambda f: f("rnn", 7), ValueError, "name", "'mlp', 'transformer'"),
    ("nhtlab.models.cnn", "SimpleCNN", lambda f: f(num_classes=1), ValueError, "num_classes", "[2, 16384]"),
    ("nhtlab.models.cnn", "SimpleCNN", lambda f: f(norm="magic"), ValueError, "norm", "one of"),
    ("nhtlab.models.cnn", "SimpleCNN", lambda f: f(channels=(8, 8)), ValueError, "channels", "6 ints"),
    # training
    ("nhtlab.training.loop", "TrainConfig", lambda f: f(eval_every=0), ValueError, "eval_every", ">= 1"),
    ("nhtlab.training.loop", "TrainConfig", lambda f: f(stop_after=-1), ValueError, "stop_after", ">= 0"),
    ("nhtlab.training.loop", "TrainConfig", lambda f: f(betas=(0.9, 1.0)), ValueError, "betas", "[0.0, 1.0)"),
    ("nhtlab.training.loop", "TrainConfig", lambda f: f(lr=True), TypeError, "lr", "float"),
    ("nhtlab.training.loop", "train", lambda f: f("model", _data(), TrainConfig(steps=1)), TypeError, "model", "Module"),
    ("nhtlab.training.loop", "train", lambda f: f(_mlp(), _data(), {"steps": 1}), TypeError, "config", "TrainConfig"),
    ("nhtlab.training.loop", "train", lambda f: f(_mlp(), _data(y_train=_data().y_train.float()), TrainConfig(steps=1)),
     ValueError, "data", "1-d integer tensor of class indices"),
    ("nhtlab.training.loop", "train", lambda f: f(_mlp(), _data(y_train=_data().y_train[:-1]), TrainConfig(steps=1)),
     ValueError, "data", "must match"),
    ("nhtlab.training.loop", "train", lambda f: f(_mlp(), SimpleNamespace(x_train=1, y_train=2), TrainConfig(steps=1)),
     TypeError, "data", "'x_test' and 'y_test'"),
    ("nhtlab.training.loop", "train", lambda f: f(_mlp(), _data(), TrainConfig(steps=1), eval_sets={"v": torch.zeros(3)}),
     TypeError, "eval_sets", "(x, y) pairs"),
    ("nhtlab.training.loop", "train", lambda f: f(_mlp(), _data(), TrainConfig(steps=1), checkpoint_every=5),
     ValueError, "checkpoint_every", "'checkpoint_dir'"),
    ("nhtlab.training.loop", "train", lambda f: f(_mlp(), _data(), TrainConfig(steps=1), checkpoint_dir=3), TypeError,
     "checkpoint_dir", "str or PathLike"),
    # experiment
    ("nhtlab.training.modular_run", "ModularRun", lambda f: f(p=1), ValueError, "p", "in the range [2, "),
    ("nhtlab.training.modular_run", "ModularRun", lambda f: f(operation="^"), ValueError, "operation", "'+', '-', '*', '/'"),
    ("nhtlab.training.modular_run", "ModularRun", lambda f: f(model="rnn"), ValueError, "model", "'mlp', 'transformer'"),
    ("nhtlab.training.modular_run", "ModularRun", lambda f: f(train_fraction=0.0), ValueError, "train_fraction", "(0.0, 1.0)"),
    ("nhtlab.training.modular_run", "ModularRun", lambda f: f(model_kwargs={"wdth": 8}), ValueError, "model_kwargs",
     "'width', 'depth', 'embed_std'"),
    ("nhtlab.training.modular_run", "ModularRun", lambda f: f(model_kwargs=[("width", 8)]), TypeError, "model_kwargs", "dict"),
    ("nhtlab.training.modular_run", "ModularRun", lambda f: f(weight_decay=-1.0), ValueError, "weight_decay", ">= 0.0"),
    ("nhtlab.training.modular_run", "run_modular", lambda f: f({"p": 7}), TypeError, "run", "ModularRun"),
    ("nhtlab.training.modular_run", "run_modular", lambda f: f(nhtlab.ModularRun(p=7, steps=1), run_dir=5), TypeError, "run_dir",
     "str or PathLike"),
    # events, delay, profiles, progress, device, norms
    ("nhtlab.analysis.events", "find_events", lambda f: f({"rows": []}), TypeError, "history", "History"),
    ("nhtlab.analysis.events", "find_events", lambda f: f(_history(), threshold=0.0), ValueError, "threshold", "(0.0, 1.0]"),
    ("nhtlab.analysis.events", "find_events", lambda f: f(History()), ValueError, "history", "no evaluated step"),
    ("nhtlab.analysis.delay", "predicted_delay", lambda f: f(0.0, 1.0, 1e-3, 1.0), ValueError, "v_sc", "> 0.0"),
    ("nhtlab.analysis.delay", "predicted_delay", lambda f: f(2.0, 1.0, 1e-3, -1.0), ValueError, "weight_decay", ">= 0.0"),
    ("nhtlab.analysis.delay", "predicted_delay", lambda f: f(2.0, 1.0, "fast", 1.0), TypeError, "lr", "float"),
    ("nhtlab.analysis.delay", "delay_summary", lambda f: f([]), TypeError, "history", "History"),
    ("nhtlab.book.profiles", "select_profile", lambda f: f(PROFILES, "fast"), ValueError, "profile", "'quick', 'book', 'full'"),
    ("nhtlab.book.profiles", "select_profile", lambda f: f({"quick": {}}, "quick"), ValueError, "profiles", "'book', 'full'"),
    ("nhtlab.book.profiles", "select_profile", lambda f: f(PROFILES, "quick", stpes=3), ValueError, "stpes", "['steps']"),
    ("nhtlab.book.profiles", "select_profile", lambda f: f([("quick", {})], "quick"), TypeError, "profiles", "Mapping"),
    ("nhtlab.training.progress", "Progress", lambda f: f(10, "x", mode="loud"), ValueError, "progress", "'auto', 'text', 'bar'"),
    ("nhtlab.training.device", "pick_device", lambda f: f("tpu"), ValueError, "preference", "'auto', 'cpu', 'cuda'"),
    ("nhtlab.training.device", "seed_everything", lambda f: f(-3), ValueError, "seed", "in the range [0, "),
    ("nhtlab.measures.norms", "layer_norms", lambda f: f("model"), TypeError, "model", "Module"),
    # checkpoints and cache
    ("nhtlab.training.checkpoint", "save_checkpoint", lambda f: f("/tmp", ["not", "a", "dict"]), TypeError, "payload", "dict"),
    ("nhtlab.training.checkpoint", "atomic_write_bytes", lambda f: f("/tmp/x", "text"), TypeError, "data", "bytes"),
    ("nhtlab.training.cache", "ResultCache", lambda f: f(root=42), TypeError, "root", "str or PathLike"),
    ("nhtlab.training.cache", "config_key", lambda f: f([1, 2]), TypeError, "config", "Mapping"),
    ("nhtlab.training.cache", "cached_run", lambda f: f({"p": 7}), TypeError, "run", "ModularRun"),
    ("nhtlab.training.cache", "cached_run", lambda f: f(nhtlab.ModularRun(p=7), use_cache="yes"), TypeError, "use_cache", "bool"),
    ("nhtlab.training.cache", "cached_run", lambda f: f(nhtlab.ModularRun(p=7), cache="~/.cache"), TypeError, "cache", "ResultCache"),
    # sweeps
    ("nhtlab.training.sweeps", "sweep", lambda f: f([nhtlab.ModularRun(p=7)], strategy="fastest"), ValueError, "strategy",
     "'sequential', 'parallel', 'batched'"),
    ("nhtlab.training.sweeps", "sweep", lambda f: f(nhtlab.ModularRun(p=7)), TypeError, "runs", "list or tuple"),
    ("nhtlab.training.sweeps", "sweep", lambda f: f([{"p": 7}]), TypeError, "runs", "ModularRun"),
    ("nhtlab.training.sweeps", "sweep", lambda f: f([TrainConfig()]), TypeError, "runs", "ShortcutRun"),
    ("nhtlab.training.sweeps", "sweep", lambda f: f([nhtlab.ShortcutRun()], strategy="batched"), ValueError, "strategy",
     "'sequential' or 'parallel'"),
    ("nhtlab.training.sweeps", "grid", lambda f: f(nhtlab.ShortcutRun(), lamda=[1.0]), ValueError, "lamda", "weight_decay"),
    ("nhtlab.training.sweeps", "sweep", lambda f: f([nhtlab.ModularRun(p=7)], executor="dask"), TypeError, "executor", "Executor"),
    ("nhtlab.training.sweeps", "sweep", lambda f: f([nhtlab.ModularRun(p=7)], workers=0), ValueError, "workers", ">= 1"),
    ("nhtlab.training.sweeps", "sweep", lambda f: f([nhtlab.ModularRun(p=7)], cache={}), TypeError, "cache", "get(config_dict)"),
    ("nhtlab.training.sweeps", "grid", lambda f: f(nhtlab.ModularRun(p=7), lamda=[1.0]), ValueError, "lamda", "weight_decay"),
    ("nhtlab.training.sweeps", "grid", lambda f: f(nhtlab.ModularRun(p=7), seed=[]), ValueError, "seed", "at least one value"),
    ("nhtlab.training.batched", "train_batched", lambda f: f([]), ValueError, "runs", "at least one ModularRun"),
    ("nhtlab.training.batched", "train_batched", lambda f: f([nhtlab.ModularRun(p=7), nhtlab.ModularRun(p=11)]), ValueError,
     "runs", "must hold runs that share"),
    # regimes and the delay law
    ("nhtlab.analysis.regimes", "diagnose_regime", lambda f: f("history"), TypeError, "history", "History"),
    ("nhtlab.analysis.regimes", "diagnose_regime", lambda f: f(_history(), fit_threshold=1.5), ValueError, "fit_threshold",
     "(0.0, 1.0]"),
    ("nhtlab.analysis.regimes", "diagnose_regime", lambda f: f(_history(), min_contraction=1.0), ValueError, "min_contraction",
     "[0.0, 1.0)"),
    ("nhtlab.analysis.regimes", "regime_order_ok", lambda f: f([0.1, 1.0], ["weak", "grokking"]), ValueError, "regimes",
     "'weak', 'intermediate', 'strong'"),
    ("nhtlab.analysis.delay", "linear_fit", lambda f: f([1.0, 2.0, 3.0], [1.0, 2.0]), ValueError, "y", "same length"),
    ("nhtlab.analysis.delay", "linear_fit", lambda f: f([1.0], [1.0]), ValueError, "x", "at least 2 points"),
    ("nhtlab.analysis.delay", "delay_point", lambda f: f(_history(), definition="peak"), ValueError, "definition", "'companion', 'grok'"),
    # DLR, CKA, features
    ("nhtlab.measures.dlr", "dlr", lambda f: f(FEATURES, OUTPUTS, rank="most"), ValueError, "rank", "or a positive int"),
    ("nhtlab.measures.dlr", "dlr", lambda f: f(FEATURES, OUTPUTS, rank=2.5), TypeError, "rank", "or a positive int"),
    ("nhtlab.measures.dlr", "dlr", lambda f: f(FEATURES, OUTPUTS, rank=0), ValueError, "rank", ">= 1"),
    ("nhtlab.measures.dlr", "dlr", lambda f: f(FEATURES.numpy(), OUTPUTS), TypeError, "features", "Tensor"),
    ("nhtlab.measures.dlr", "dlr", lambda f: f(FEATURES, OUTPUTS[:5]), ValueError, "outputs", "rows"),
    ("nhtlab.training.dlr_tracker", "DLRTracker", lambda f: f(x=[1, 2, 3]), TypeError, "x", "Tensor"),
    ("nhtlab.measures.cka", "linear_cka", lambda f: f(FEATURES[:1], OUTPUTS[:1]), ValueError, "x", "at least 2 rows"),
    ("nhtlab.measures.cka", "linear_cka", lambda f: f("a", OUTPUTS), TypeError, "x", "Tensor"),
    ("nhtlab.measures.features", "capture", lambda f: f(_mlp(), torch.zeros(3, 2, dtype=torch.long), layer="nope"), ValueError,
     "layer", "embed_a"),
    ("nhtlab.measures.features", "capture", lambda f: f(_mlp(), torch.zeros(3, 2, dtype=torch.long), which="middle"), ValueError,
     "which", "one of"),
    # layers, separation, monitor, emergence
    ("nhtlab.analysis.layers", "layer_transitions", lambda f: f("history"), TypeError, "history", "History"),
    ("nhtlab.analysis.layers", "layer_transitions", lambda f: f(_history(), layers=["nope"]), ValueError, "layers", "'a'"),
    ("nhtlab.analysis.separation", "clean_norm_separation", lambda f: f([0, 1, 2], [1.0, 2.0], [0.1, 0.2, 0.3]), ValueError,
     "norm", "1-d arrays of one length"),
    ("nhtlab.analysis.separation", "clean_norm_separation", lambda f: f(np.arange(5), np.ones(5), np.ones(5), min_points=2),
     ValueError, "min_points", ">= 3"),
    ("nhtlab.analysis.separation", "separation_from_history", lambda f: f(_history(), 10, kind="other"), ValueError, "kind",
     "'shortcut'"),
    ("nhtlab.training.monitor", "online_regime", lambda f: f([1.0, 2.0, 3.0], drop=0.0), ValueError, "drop", "(0.0, 1.0)"),
    ("nhtlab.training.monitor", "Monitor", lambda f: f(_mlp(), every=0), ValueError, "every", ">= 1"),
    ("nhtlab.training.monitor", "Monitor", lambda f: f(_mlp(), head="nope"), ValueError, "head", "'readout'"),
    ("nhtlab.analysis.emergence", "fraction_generalised", lambda f: f([], budget=-5), ValueError, "budget", ">= 0"),
]


def _id(case) -> str:
    module, attribute, _, _, parameter, _ = case
    return f"{module.rsplit('.', 1)[-1]}.{attribute}:{parameter}"


@pytest.mark.parametrize("case", CASES, ids=[f"{_id(c)}-{i}" for i, c in enumerate(CASES)])
def test_bad_input_names_the_parameter_and_what_is_allowed(case, tmp_path, monkeypatch):
    module_name, attribute, call, exception, parameter, allowed = case
    monkeypatch.chdir(tmp_path)  # anything an entry point might write lands in a temporary directory
    module = importlib.import_module(module_name)  # a renamed or removed entry point fails here, never skips
    assert hasattr(module, attribute), f"{module_name}.{attribute} does not exist: update this table"
    with pytest.raises(exception) as info:
        call(getattr(module, attribute))
    message = str(info.value)
    assert f"'{parameter}'" in message, f"message does not name the parameter {parameter!r}: {message}"
    assert allowed in message, f"message does not state what is allowed ({allowed!r}): {message}"


def test_environment_settings_are_validated_too(monkeypatch):
    monkeypatch.setenv("NHTLAB_PROGRESS", "loud")
    profiles = {name: {} for name in ("quick", "book", "full")}
    with pytest.raises(ValueError, match=r"'NHTLAB_PROGRESS' parameter of the environment must be one of 'auto', 'text'"):
        nhtlab.book.select_profile(profiles, "quick")
    with pytest.raises(ValueError, match=r"'mode' parameter of set_default_progress must be one of"):
        nhtlab.training.progress.set_default_progress("loud")
