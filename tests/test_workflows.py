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
CPU_TORCH = "https://download.pytorch.org/whl/cpu"


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


def make_dry_run(*variables: str) -> str:
    """The commands ``make install`` would run, with ``variables`` (NAME=value) set, on a venv that does not exist."""
    result = subprocess.run(["make", "-n", "install", "VENV=/nonexistent/venv", *variables], cwd=ROOT,
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_workflows_pass_actionlint():
    files = sorted(WORKFLOWS.glob("*.yml"))
    assert {f.name for f in files} == {"test.yml", "publish.yml", "drift.yml", "release.yml"}, files
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
    assert "make test" in runs(load("test.yml")) and "make test" in runs(load("drift.yml"))


def test_make_install_is_uv_and_honours_the_torch_index_the_workflows_set():
    plain = make_dry_run("PIP_CONSTRAINT_FILE=")
    assert "-m pip install --quiet --upgrade uv" in plain, plain
    assert '-m uv pip install --python /nonexistent/venv/bin/python --resolution highest' in plain, plain
    assert '-e ".[book,test]"' in plain and "--extra-index-url" not in plain and "--constraint" not in plain, plain
    cpu = make_dry_run(f"TORCH_INDEX_URL={CPU_TORCH}", "PIP_CONSTRAINT_FILE=/etc/caps.txt")
    assert f"--extra-index-url {CPU_TORCH} --index-strategy unsafe-best-match" in cpu, cpu
    assert "--constraint /etc/caps.txt" in cpu, cpu
    assert "--resolution lowest-direct" in make_dry_run("RESOLUTION=lowest-direct")
    for name in ("test.yml", "publish.yml", "drift.yml"):
        assert load(name)["env"]["TORCH_INDEX_URL"] == CPU_TORCH, f"{name} installs PyPI's CUDA torch"


def test_tests_run_on_every_push_and_pull_request():
    workflow = load("test.yml")
    assert "push" in workflow["on"] and "pull_request" in workflow["on"]
    assert workflow["on"]["push"] is None, "every branch, not a filtered list"
    assert workflow["env"]["NHTLAB_REQUIRE_BROWSER"] == "1", "the browser test must run, not skip"
    assert runs(workflow).strip().splitlines()[-1] == "make test"


def test_publish_builds_with_the_result_cache_and_deploys_pages():
    workflow = load("publish.yml")
    assert workflow["on"]["push"]["branches"] == ["main"]
    cache = uses(workflow, "actions/cache")
    assert len(cache) == 1, "one actions/cache step"
    cached = cache[0]["with"]["path"].split()
    assert "_build/run-cache" in cached and "_build/executed/book" in cached, cached
    key = cache[0]["with"]["key"]
    assert "steps.nhtlab.outputs.version" in key, "the cache key names nhtlab's version"
    assert "hashFiles('nhtlab/**/*.py', 'book/*.py', 'book/*.ipynb'" in key, "and follows the chapters' and nhtlab's source"
    all_steps = steps(workflow)
    version_step = next(s for s in all_steps if s.get("id") == "nhtlab")
    assert "nhtlab/_version.py" in version_step["run"]
    order = [s.get("run", s.get("uses", "")).split("@")[0] for s in all_steps]
    assert order.index("actions/cache") < order.index("make book") < order.index("actions/upload-pages-artifact")
    assert uses(workflow, "actions/configure-pages")
    assert workflow["jobs"]["build"]["permissions"]["pages"] == "read", "configure-pages reads the Pages settings"
    assert uses(workflow, "actions/upload-pages-artifact")[0]["with"]["path"] == "_build/html"
    deploy = workflow["jobs"]["deploy"]
    assert deploy["needs"] == "build" and deploy["permissions"] == {"pages": "write", "id-token": "write"}
    assert uses(workflow, "actions/deploy-pages")


def test_drift_is_weekly_at_the_newest_releases_and_the_declared_minimums_and_fails_loudly():
    workflow = load("drift.yml")
    cron = workflow["on"]["schedule"][0]["cron"].split()
    assert len(cron) == 5 and cron[2] == "*" and cron[3] == "*" and cron[4] != "*", cron  # one day a week
    job = next(iter(workflow["jobs"].values()))
    ends = {entry["name"]: entry["resolution"] for entry in job["strategy"]["matrix"]["include"]}
    assert ends == {"newest": "highest", "minimum": "lowest-direct"}, ends
    assert job["strategy"]["fail-fast"] is False, "one end's drift must not cancel the other's run"
    assert job["env"]["RESOLUTION"] == "${{ matrix.resolution }}", "the Makefile reads RESOLUTION"
    text = runs(workflow)
    assert text.index("make install") < text.index("make test")
    assert workflow["env"]["NHTLAB_REQUIRE_BROWSER"] == "1", "the browser test must run, not skip"
    assert not any(step.get("continue-on-error") for step in steps(workflow)), "a failing step must fail the run"
    assert any("::error" in step.get("run", "") and step.get("if") == "failure()" for step in steps(workflow))


def test_release_tags_builds_and_attaches_the_wheel_and_sdist():
    workflow = load("release.yml")
    assert set(workflow["on"]) == {"workflow_dispatch"}, "a release is cut by hand, never by a push"
    job = workflow["jobs"]["release"]
    assert job["permissions"] == {"contents": "write"}
    text = runs(workflow)
    assert "nhtlab/_version.py" in text and "CHANGELOG.md" in text
    assert text.index("python -m build") < text.index("pip install --quiet dist/*.whl") < text.index("gh release create")
    assert 'gh release create "v$VERSION" dist/*' in text, "the tag is v<version> and both archives are attached"
