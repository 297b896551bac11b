"""The GitHub Actions workflows: they pass actionlint (offline) and do what the README promises."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = ROOT / ".github" / "workflows"
WATCHED = ("torch", "altair", "jupyter-book", "papermill", "ipywidgets")


def actionlint() -> str:
    """The actionlint executable installed by the test extra (next to this Python, else on PATH)."""
    here = Path(sys.executable).parent / "actionlint"
    found = str(here) if here.exists() else shutil.which("actionlint")
    if found is None:
        pytest.fail("actionlint is not installed; it comes with the test extra: pip install -e '.[test]'")
    return found


def load(name: str) -> dict:
    workflow = yaml.safe_load((WORKFLOWS / name).read_text())
    workflow["on"] = workflow.pop(True, workflow.get("on"))  # YAML 1.1 reads the key `on` as True
    return workflow


def steps(workflow: dict) -> list[dict]:
    return [step for job in workflow["jobs"].values() for step in job.get("steps", [])]


def runs(workflow: dict) -> str:
    return "\n".join(step.get("run", "") for step in steps(workflow))


def uses(workflow: dict, action: str) -> list[dict]:
    return [step for step in steps(workflow) if step.get("uses", "").split("@")[0] == action]


def test_workflows_pass_actionlint():
    files = sorted(WORKFLOWS.glob("*.yml"))
    assert {f.name for f in files} >= {"publish.yml", "drift.yml"}, files
    result = subprocess.run([actionlint(), "-oneline", "-no-color", *map(str, files)], cwd=ROOT,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr


def test_actionlint_rejects_a_broken_workflow(tmp_path):
    broken = tmp_path / "broken.yml"
    broken.write_text("on: push\njobs:\n  build:\n    runs-on: ubuntu-latest\n    steps:\n"
                      "      - run: echo ${{ github.no_such_field.x }}\n      - uses: actions/checkout@v6\n"
                      "        with:\n          no-such-input: 1\n")
    result = subprocess.run([actionlint(), "-oneline", "-no-color", str(broken)], cwd=tmp_path,
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "no-such-input" in result.stdout, result.stdout


def test_readme_commands_are_the_workflows_commands():
    readme = (ROOT / "README.md").read_text()
    assert "make book" in readme and "make test" in readme
    assert "make book" in runs(load("publish.yml"))
    assert "make test" in runs(load("drift.yml"))


def test_publish_builds_with_the_result_cache_and_deploys_pages():
    workflow = load("publish.yml")
    assert workflow["on"]["push"]["branches"] == ["main"]
    cache = uses(workflow, "actions/cache")
    assert len(cache) == 1, "one actions/cache step"
    cached = cache[0]["with"]["path"].split()
    assert "_build/run-cache" in cached and "_build/executed/book" in cached, cached
    assert "hashFiles('nhtlab/**/*.py'" in cache[0]["with"]["key"], "the cache key follows nhtlab's source"
    all_steps = steps(workflow)
    order = [s.get("run", s.get("uses", "")).split("@")[0] for s in all_steps]
    assert order.index("actions/cache") < order.index("make book") < order.index("actions/upload-pages-artifact")
    assert uses(workflow, "actions/upload-pages-artifact")[0]["with"]["path"] == "_build/html"
    deploy = workflow["jobs"]["deploy"]
    assert deploy["needs"] == "build" and deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert uses(workflow, "actions/deploy-pages")


def test_drift_is_weekly_with_the_newest_releases_and_fails_loudly():
    workflow = load("drift.yml")
    cron = workflow["on"]["schedule"][0]["cron"].split()
    assert len(cron) == 5 and cron[2] == "*" and cron[3] == "*" and cron[4] != "*", cron  # one day a week
    job = next(iter(workflow["jobs"].values()))
    # Each watched package alone, then all together; bare names, so no version pin applies, except
    # jupyter-book, held below 2 (Jupyter Book 2 is another tool, not a release of this one).
    upgrades = job["strategy"]["matrix"]["upgrade"]
    watched = [name if name != "jupyter-book" else "jupyter-book<2" for name in WATCHED]
    assert upgrades == [*watched, " ".join(watched)], upgrades
    assert job["strategy"]["fail-fast"] is False, "one package's drift must not cancel the others' runs"
    assert job["env"]["UPGRADE"] == "${{ matrix.upgrade }}"
    text = runs(workflow)
    assert "pip install --upgrade $UPGRADE" in text
    assert text.index("make install") < text.index("pip install --upgrade") < text.index("make test")
    assert job["env"]["NHTLAB_REQUIRE_BROWSER"] == "1", "the browser test must run, not skip"
    assert not any(step.get("continue-on-error") for step in steps(workflow)), "a failing step must fail the run"
    assert any("::error" in step.get("run", "") and step.get("if") == "failure()" for step in steps(workflow))
