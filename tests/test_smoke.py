"""The smoke cap: select_profile and the stamp honour NHTLAB_SMOKE; the core (training, cache keys) never reads it."""

import pytest

import nhtlab
from nhtlab.training.cache import ResultCache, config_key
from nhtlab.book.closing import science_checks
from nhtlab.plumbing.smoke import cap_settings, smoke_enabled

PROFILES = {
    "quick": dict(steps=100, seeds=[0]),
    "book": dict(steps=200, seeds=[0, 1]),
    "full": dict(steps=50_000, seeds=[0, 1, 2], eval_every=780, stop_after=None, lams=[0.1, 1.0],
                 batch_size=512, run=dict(steps=78_000, eval_every=780, batch_size=None, channels=(32, 64)),
                 shuffle_steps=4000, budget=10_000, every=50, batch=128, n_seeds=7, n_layers=7),
}
RUN = nhtlab.ModularRun(p=11, model_kwargs=dict(width=16), steps=60, eval_every=10, device="cpu")


@pytest.fixture
def smoke(monkeypatch):
    monkeypatch.setenv("NHTLAB_SMOKE", "1")
    monkeypatch.setenv("NHTLAB_SMOKE_STEPS", "8")
    monkeypatch.delenv("NHTLAB_SMOKE_SEEDS", raising=False)
    monkeypatch.delenv("NHTLAB_SMOKE_BATCH", raising=False)


def test_off_by_default_and_select_profile_untouched(monkeypatch):
    monkeypatch.delenv("NHTLAB_SMOKE", raising=False)
    assert not smoke_enabled()
    cfg = nhtlab.book.select_profile(PROFILES, "full")
    assert cfg.smoke is False
    assert cfg.steps == 50_000 and cfg.seeds == [0, 1, 2] and cfg.run["steps"] == 78_000
    monkeypatch.setenv("NHTLAB_SMOKE", "0")
    assert not smoke_enabled() and nhtlab.book.select_profile(PROFILES, "full").steps == 50_000


def test_select_profile_caps_by_name(smoke):
    cfg = nhtlab.book.select_profile(PROFILES, "full")
    assert cfg.smoke is True and cfg.profile == "full"
    assert cfg.steps == 8 and cfg.shuffle_steps == 8 and cfg.budget == 8
    assert cfg.eval_every == 4 and cfg.every == 4  # max(1, 8 // 2)
    assert cfg.seeds == [0] and cfg.lams == [0.1, 1.0]  # sweeps keep their shape
    assert cfg.stop_after is None and cfg.batch_size == 8 and cfg.batch == 8
    assert cfg.run == dict(steps=8, eval_every=4, batch_size=None, channels=(32, 64))  # nested dicts too
    assert cfg.n_seeds == 1 and cfg.n_layers == 7  # *_seeds is capped; undocumented names are not


def test_cap_settings_rules(smoke, monkeypatch):
    monkeypatch.setenv("NHTLAB_SMOKE_SEEDS", "2")
    assert cap_settings({"seeds": 10, "stop_after": 3000, "warmup_steps": 5}) == {"seeds": 2, "stop_after": 8, "warmup_steps": 5}
    assert cap_settings({"seeds": (4, 5, 6), "flag": True}) == {"seeds": (4, 5), "flag": True}
    # a dict keyed by values takes its name's rule; one keyed by names is capped by those names
    assert cap_settings({"budgets": {0.1: 2000, 2.0: 3}, "eta_seeds": [0, 1, 2]}) == {"budgets": {0.1: 8, 2.0: 3},
                                                                                       "eta_seeds": [0, 1]}
    assert cap_settings({"model": {"steps": 50, 1: 99}}) == {"model": {"steps": 8, 1: 99}}
    # an image count of None (every image) is capped to the cap's count; a None of any other setting stays
    assert cap_settings({"images": {"train_limit": None, "n_test": 40}, "batch_size": None}) == {
        "images": {"train_limit": 16, "n_test": 16}, "batch_size": None}


def test_a_bad_cap_names_the_variable(smoke, monkeypatch):
    monkeypatch.setenv("NHTLAB_SMOKE_STEPS", "zero")
    with pytest.raises(ValueError, match="NHTLAB_SMOKE_STEPS must be a positive integer. Got 'zero'"):
        nhtlab.book.select_profile(PROFILES, "full")


def test_profile_may_not_define_smoke():
    with pytest.raises(ValueError, match="defines 'smoke'"):
        nhtlab.book.select_profile({k: dict(v, smoke=1) for k, v in PROFILES.items()}, "quick")


def test_the_core_trains_what_it_is_given_under_the_cap(smoke):
    """The cap rewrites a chapter's settings (select_profile); a run handed to the core trains as written."""
    assert nhtlab.run_modular(RUN, progress="none").column("step")[-1] == 60
    stacked = nhtlab.training.batched.train_batched([RUN, RUN.replace(seed=1)], progress="none")
    assert [h.column("step")[-1] for h in stacked] == [60, 60]
    capped = nhtlab.book.select_profile({name: dict(steps=60) for name in ("quick", "book", "full")}, "full")
    assert nhtlab.run_modular(RUN.replace(steps=capped.steps), progress="none").column("step").tolist() == [0, 8]


def test_science_checks(smoke, capsys, monkeypatch):
    cfg = nhtlab.book.select_profile(PROFILES, "full")
    assert science_checks(cfg) is False
    out = capsys.readouterr().out
    assert "smoke run" in out and "scientific checks of this chapter are skipped" in out
    monkeypatch.delenv("NHTLAB_SMOKE")
    assert science_checks(nhtlab.book.select_profile(PROFILES, "full")) is True
    assert capsys.readouterr().out == ""


def test_stamp_shows_the_cap_loudly(smoke, capsys):
    cfg = nhtlab.book.select_profile(PROFILES, "full")
    facts = nhtlab.book.stamp("full", cfg, device="cpu")
    assert list(facts)[0] == "SMOKE RUN" and "capped at 8 steps" in facts["SMOKE RUN"]
    assert repr(facts).startswith("SMOKE RUN: SMOKE RUN (NHTLAB_SMOKE=1)")
    assert "color:#c00" in facts._repr_html_() and "SMOKE RUN" in facts._repr_html_().split("</summary>")[0]
    assert "SMOKE RUN" in capsys.readouterr().out
    assert "smoke" not in facts["settings"]


def test_stamp_of_a_real_run_has_no_banner(monkeypatch):
    monkeypatch.delenv("NHTLAB_SMOKE", raising=False)
    facts = nhtlab.book.stamp("full", nhtlab.book.select_profile(PROFILES, "full"), device="cpu")
    assert "SMOKE RUN" not in facts and "SMOKE" not in facts._repr_html_()


def test_a_capped_run_has_its_own_key_and_real_keys_ignore_the_cap(tmp_path, monkeypatch):
    monkeypatch.delenv("NHTLAB_SMOKE", raising=False)
    config = RUN.to_dict()
    real_key = config_key(config)
    cache = ResultCache(tmp_path)
    real = nhtlab.run_modular(RUN, progress="none")
    cache.put(config, real)
    monkeypatch.setenv("NHTLAB_SMOKE", "1")
    assert config_key(config) == real_key  # nothing of the build enters a key
    steps = nhtlab.book.select_profile({name: dict(steps=RUN.steps) for name in ("quick", "book", "full")}, "full").steps
    capped_run = RUN.replace(steps=steps)
    assert config_key(capped_run.to_dict()) != real_key and cache.get(capped_run.to_dict()) is None
    capped = nhtlab.training.cache.cached_run(capped_run, cache, progress="none")
    assert capped.column("step")[-1] == 8 and capped.cached is False
    assert nhtlab.training.cache.cached_run(capped_run, cache).cached is True
    assert cache.get(config).rows == real.rows
