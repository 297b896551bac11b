"""Colab, simulated: a chapter's install cell, run as Colab runs it, installs nhtlab from the ref the launch
button opens and leaves Colab's own torch and ipywidgets 7 in place.

The stand-in for a Colab runtime is a venv that sees this project's environment (torch, altair, numpy, ...
as Colab has them preinstalled) with ipywidgets 7 installed in front of it, as Colab ships, and a
``google.colab`` module. The chapter's first code cell is run by IPython exactly as the notebook has it,
except that the repository URL points at a local git repository of this working tree (same ref), so the
test needs the package index (ipywidgets 7, the build backend) but not GitHub. It must not skip: CI
reaches the package index.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import sysconfig
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
COLAB_IPYWIDGETS = "7.7.1"  # what Colab ships
COLAB_NOTEBOOK = "notebook>=6.5,<7"


def run(command: list[str], **kwargs) -> subprocess.CompletedProcess:
    result = subprocess.run(command, capture_output=True, text=True, timeout=600, **kwargs)
    assert result.returncode == 0, f"{command}\n{result.stdout}\n{result.stderr}"
    return result


def local_origin(tmp_path: Path, ref: str) -> Path:
    """A git repository holding this working tree's package at ``ref`` (a branch, or a tag on main)."""
    origin = tmp_path / "origin"
    origin.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(ROOT / name, origin / name)
    shutil.copytree(ROOT / "nhtlab", origin / "nhtlab", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    git = ["git", "-C", str(origin), "-c", "user.name=test", "-c", "user.email=test@example.invalid",
           "-c", "commit.gpgsign=false"]
    branch = "main" if ref.startswith("v") else ref
    run([*git, "init", "--quiet", "--initial-branch", branch])
    run([*git, "add", "--all"])
    run([*git, "commit", "--quiet", "--message", "working tree"])
    if ref != branch:
        run([*git, "tag", ref])
    return origin


def install_cell(stem: str) -> str:
    """The first code cell of the chapter's notebook, as Colab runs it."""
    notebook = json.loads((ROOT / "book" / f"{stem}.ipynb").read_text())
    return "".join(next(c for c in notebook["cells"] if c["cell_type"] == "code")["source"])


@pytest.mark.slow
def test_colab_install_cell_installs_the_launch_ref_and_keeps_colabs_torch_and_widgets(tmp_path):
    import sync_repo
    import torch

    repo = sync_repo.repository()
    cell = install_cell("01_grokking")
    assert f'%pip install -q "{repo.install_requirement}"' in cell, "sync_repo's requirement is the cell's"
    assert f"/blob/{repo.branch}/" in repo.colab_url("01_grokking"), "the launch button opens the same ref"
    origin = local_origin(tmp_path, repo.branch)
    local_cell = cell.replace(f"git+{repo.url}@", f"git+{origin.as_uri()}@")
    assert local_cell.count(origin.as_uri()) == 1

    # The Colab runtime: a venv that sees this environment's packages, ipywidgets 7 in front of them.
    colab = tmp_path / "colab"
    venv.create(colab, with_pip=True)
    python = str(colab / "bin" / "python")
    site = run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"]).stdout.strip()
    (Path(site) / "project_env.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    # Colab's pip is a recent one (ensurepip's may be too old to parse 'name @ git+file:///...')
    run([python, "-m", "pip", "install", "--quiet", "--upgrade", "pip"])
    # the venv's own setuptools (ensurepip's, older than torch requires) would shadow the environment's
    run([python, "-m", "pip", "uninstall", "--quiet", "--yes", "setuptools"])
    # ipywidgets 7 with what it needs, as Colab has it (its widgetsnbextension 3 needs the classic notebook)
    run([python, "-m", "pip", "install", "--quiet", f"ipywidgets=={COLAB_IPYWIDGETS}", COLAB_NOTEBOOK])
    stub = tmp_path / "stub" / "google" / "colab"
    stub.mkdir(parents=True)
    (stub.parent / "__init__.py").write_text("")
    (stub / "__init__.py").write_text('"""Stand-in for the module Colab preloads."""\n')
    env = {**os.environ, "PYTHONPATH": str(tmp_path / "stub"), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    env.pop("NHTLAB_BOOK", None)

    def versions() -> dict:
        code = ("import json, torch, ipywidgets, altair, numpy; print(json.dumps({'torch': torch.__version__, "
                "'ipywidgets': ipywidgets.__version__, 'altair': altair.__version__, 'numpy': numpy.__version__}))")
        return json.loads(run([python, "-c", code], env=env, cwd=tmp_path).stdout)

    before = versions()
    assert before["ipywidgets"] == COLAB_IPYWIDGETS and before["torch"] == torch.__version__, before

    # What pip would do for the cell's requirement: install nhtlab and nothing else.
    report = tmp_path / "report.json"
    requirement = repo.install_requirement.replace(f"git+{repo.url}@", f"git+{origin.as_uri()}@")
    run([python, "-m", "pip", "install", "--quiet", "--dry-run", "--report", str(report), requirement], env=env,
        cwd=tmp_path)
    planned = sorted(item["metadata"]["name"] for item in json.loads(report.read_text())["install"])
    assert planned == ["nhtlab"], f"the Colab cell would also install or replace {planned}"

    # The cell itself, run by IPython in the runtime (its %pip installs into the runtime's python).
    script = tmp_path / "cell.ipy"
    script.write_text("import google.colab\n" + local_cell + "\n")
    out = run([python, "-m", "IPython", "--quick", "--no-banner", "--colors=NoColor", str(script)], env=env,
              cwd=tmp_path)
    assert "Launch note:" in out.stdout, out.stdout + out.stderr
    assert versions() == before, "installing nhtlab replaced a package Colab ships"
    check = ("import nhtlab, ipywidgets\nfrom nhtlab.book.widgets import train_panel\n"
             "panel = train_panel(nhtlab.companion(1.0))\n"
             "print(nhtlab.__file__, nhtlab.__version__, type(panel).__name__, ipywidgets.__version__)")
    where, version, panel, widgets = run([python, "-c", check], env=env, cwd=tmp_path).stdout.split()
    assert Path(where).is_relative_to(colab) and not Path(where).is_relative_to(ROOT), where
    assert version == sync_repo.package_version() and widgets == COLAB_IPYWIDGETS
    assert panel == "VBox", "the λ panel builds with Colab's ipywidgets 7"
