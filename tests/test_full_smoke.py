"""Every chapter's ``full`` profile executed end to end under the smoke cap (nhtlab.plumbing.smoke).

Each chapter runs with papermill (``profile = "full"``) in a kernel that sees
``NHTLAB_SMOKE=1``: the same models, loaders, sweeps and layer names as the
real ``full``, a few steps each. ``NHTLAB_CACHE=off`` keeps real results out;
CIFAR-10 comes from a small archive in CIFAR-10's format written by the test
(``NHTLAB_CIFAR_ROOT``); ``NHTLAB_DEVICE_CHECK=1`` turns on nhtlab's device
audit (:mod:`nhtlab.training.device`) in the kernel. On a machine with CUDA the kernels
train on the GPU (``pick_device`` picks it) and the audit is left off.

Each execution's seconds are printed (``pytest -s``), never asserted: a time depends on the machine and
its load. The book's measurements page holds measured times.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch

from test_cifar_offline import write_fake_cifar10

ROOT = Path(__file__).resolve().parent.parent
CHAPTERS = sorted((ROOT / "book").glob("[0-9][0-9]_*.ipynb"))
# Images per class in each split of the fake CIFAR-10: two, so that no class is a single image, and few,
# since each evaluation of chapter 06's ResNet-18 runs over every split.
SMOKE_PER_CLASS = 2


def smoke_env(cifar_root: Path) -> dict[str, str]:
    """What the kernel of a smoke execution sees (on top of the test process's environment)."""
    env = {
        "NHTLAB_SMOKE": "1", "NHTLAB_CACHE": "off", "NHTLAB_PROGRESS": "none", "NHTLAB_BOOK": "1",
        "NHTLAB_CIFAR_ROOT": str(cifar_root), "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
        "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
    }
    if not torch.cuda.is_available():
        env["NHTLAB_DEVICE_CHECK"] = "1"
    return env


def execute_smoke(notebook: Path, out: Path, env: dict[str, str], profile: str = "full") -> float:
    """Execute ``notebook`` with papermill in ``profile`` under ``env``; return the seconds it took."""
    import build_book  # tools/ is on sys.path (tests/conftest.py)

    return build_book.run_papermill(notebook, out, profile, env)


def outputs_text(path: Path) -> str:
    """All stream and plain-text outputs of an executed notebook, joined."""
    nb = json.loads(path.read_text())
    parts = []
    for cell in nb["cells"]:
        for output in cell.get("outputs", []):
            parts.append("".join(output.get("text", "")))
            parts.append("".join(output.get("data", {}).get("text/plain", "")))
    return "\n".join(parts)


@pytest.fixture(scope="module")
def cifar_root(tmp_path_factory) -> Path:
    return write_fake_cifar10(tmp_path_factory.mktemp("cifar"), per_class=SMOKE_PER_CLASS)


def test_harness_runs_a_notebook_under_the_cap(tmp_path, cifar_root):
    """The harness itself: the cap, the cache switch and the CIFAR root reach the kernel."""
    import nbformat

    nb = nbformat.v4.new_notebook(metadata={"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                                            "language_info": {"name": "python"}})
    nb.cells = [
        nbformat.v4.new_code_cell('profile = "book"', metadata={"tags": ["parameters"]}),
        nbformat.v4.new_code_cell(
            "import os, nhtlab\n"
            "PROFILES = {'quick': dict(steps=10, root='data', n_train=10), 'book': dict(steps=10, root='data', n_train=10),\n"
            "            'full': dict(steps=50_000, seeds=[0, 1, 2], eval_every=500, root='data', n_train=50_000)}\n"
            "cfg = nhtlab.book.select_profile(PROFILES, profile)\n"
            "nhtlab.book.stamp(profile, cfg)"),
        nbformat.v4.new_code_cell(
            "run = nhtlab.companion(1.0, seed=cfg.seeds[0], steps=cfg.steps, eval_every=cfg.eval_every, device='cpu')\n"
            "history = nhtlab.training.cache.cached_run(run, nhtlab.book.cache())\n"
            "data = nhtlab.cifar10(cfg.root, download=True, train_limit=cfg.n_train)\n"
            "print('steps', [int(s) for s in history.column('step')], 'seeds', cfg.seeds, 'cached', history.cached,\n"
            "      'cifar', len(data.y_train))"),
        nbformat.v4.new_code_cell("if nhtlab.book.science_checks(cfg):\n    assert False, 'a capped run must skip this'"),
    ]
    src = tmp_path / "tiny.ipynb"
    nbformat.write(nb, src)
    env = smoke_env(cifar_root)
    env["NHTLAB_CACHE"] = "on"
    env["NHTLAB_CACHE_DIR"] = str(tmp_path / "cache")  # a real-run entry there must not be read
    seconds = execute_smoke(src, tmp_path / "out.ipynb", env)
    text = outputs_text(tmp_path / "out.ipynb")
    assert "SMOKE RUN (NHTLAB_SMOKE=1)" in text
    assert "steps [0, 4, 8] seeds [0] cached False cifar 16" in text
    assert "the scientific checks of this chapter are skipped" in text
    print(f"tiny notebook under the cap: {seconds:.1f} s")


def execute_all_smoke(folder: Path, jobs: int) -> dict[str, float | str]:
    """Every chapter's ``full`` profile under the cap into ``folder``, ``jobs`` kernels at a time (each on one
    thread), CIFAR-10 from a small fake archive there: per chapter its seconds, or its error's text."""
    from concurrent.futures import ProcessPoolExecutor

    folder.mkdir(parents=True, exist_ok=True)
    env = smoke_env(write_fake_cifar10(folder / "cifar", per_class=SMOKE_PER_CLASS))
    with ProcessPoolExecutor(max(1, jobs)) as pool:
        futures = {nb.stem: pool.submit(execute_smoke, nb, folder / nb.name, env) for nb in CHAPTERS}
        # a chapter that fails is reported by its own test, not by all of them
        return {stem: f"{type(e).__name__}: {e}" if (e := future.exception()) else future.result()
                for stem, future in futures.items()}


@pytest.fixture(scope="module")
def smoke_outputs(tmp_path_factory) -> dict[str, tuple[Path, float | str]]:
    """Every chapter's ``full`` profile under the cap: from tests/conftest.py's background process, or here."""
    from conftest import Background

    results = Background.result("smoke")
    folder = Background.folder / "smoke" if results is not None else tmp_path_factory.mktemp("smoke")
    if results is None:
        results = execute_all_smoke(folder, int(os.environ.get("NHTLAB_TEST_JOBS", "2")))
    return {stem: (folder / f"{stem}.ipynb", result) for stem, result in results.items()}


@pytest.mark.parametrize("notebook", CHAPTERS, ids=lambda p: p.stem)
def test_full_profile_runs_under_the_smoke_cap(notebook, smoke_outputs):
    out, seconds = smoke_outputs[notebook.stem]
    if isinstance(seconds, str):
        pytest.fail(f"{notebook.stem}'s full profile under the smoke cap failed: {seconds}")
    print(f"{notebook.stem}: full profile under the smoke cap in {seconds:.1f} s")
    text = outputs_text(out)
    assert "SMOKE RUN" in text, "the stamp must show that the run is capped"
    assert "scientific checks of this chapter are skipped" in text, "the closing checks must go through nhtlab.book.science_checks(cfg)"
