"""tools/install.py: pip's resolution installed by parallel pip processes, checked offline on toy wheels."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import textwrap
import venv
from pathlib import Path

import install  # tools/ is on sys.path (conftest.py)

ROOT = Path(__file__).resolve().parent.parent


def test_split_by_size_places_every_archive_once_and_balances_the_bytes():
    items = [("a", 10), ("b", 9), ("c", 3), ("d", 3), ("e", 2), ("f", 1)]
    groups = install.split_by_size(items, 2)
    assert sorted(u for g in groups for u in g) == ["a", "b", "c", "d", "e", "f"]
    size = dict(items)
    assert sorted(sum(size[u] for u in g) for g in groups) == [14, 14]


def test_split_by_size_counts_unknown_sizes_as_the_median_and_allows_empty_parts():
    # u weighs the median known size, 50: big + tiny against mid + u (weighing 0, u would join mid and tiny)
    groups = install.split_by_size([("big", 100), ("mid", 50), ("tiny", 1), ("u", None)], 2)
    assert sorted(sorted(g) for g in groups) == [["big", "tiny"], ["mid", "u"]]
    assert install.split_by_size([("only", None)], 3) == [["only"], [], []]


def test_pinned_url_carries_the_resolved_hash_and_drops_any_other_fragment():
    entry = {"download_info": {"url": "https://x.org/p-1.0-py3-none-any.whl#md5=00",
                               "archive_info": {"hashes": {"sha256": "ab12"}}}}
    assert install.pinned_url(entry) == "https://x.org/p-1.0-py3-none-any.whl#sha256=ab12"
    assert install.pinned_url({"download_info": {"url": "file:///w/p.whl"}}) == "file:///w/p.whl"


def test_archive_size_reads_local_files_and_admits_what_it_cannot_know(tmp_path):
    wheel = tmp_path / "p.whl"
    wheel.write_bytes(b"x" * 123)
    assert install.archive_size(wheel.as_uri()) == 123
    assert install.archive_size((tmp_path / "missing.whl").as_uri()) is None
    assert install.archive_size("ftp://example.invalid/p.whl") is None
    # a registry that refuses the connection (nothing listens on port 9 here) leaves the size unknown
    assert install.archive_size("http://127.0.0.1:9/p.whl", timeout=2) is None
    assert install.archive_sizes([wheel.as_uri(), "http://127.0.0.1:9/p.whl"], deadline=3) == [123, None]


# An in-tree PEP 517/660 backend for the toy project (an editable wheel is a .pth file pointing at its source).
# Its write_wheel, a minimal pure-Python wheel (PEP 427) written by hand, also makes the toy dependencies, so the
# test needs no build tool and no network.
BACKEND = '''
import base64, hashlib, os, zipfile

def write_wheel(directory, name, version, requires, files):
    dist_info = f"{name}-{version}.dist-info"
    files = dict(files)
    files[f"{dist_info}/METADATA"] = (f"Metadata-Version: 2.1\\nName: {name}\\nVersion: {version}\\n"
                                      + "".join(f"Requires-Dist: {r}\\n" for r in requires))
    files[f"{dist_info}/WHEEL"] = "Wheel-Version: 1.0\\nGenerator: toy\\nRoot-Is-Purelib: true\\nTag: py3-none-any\\n"
    lines = []
    for path, text in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(text.encode()).digest()).rstrip(b"=").decode()
        lines.append(f"{path},sha256={digest},{len(text.encode())}")
    files[f"{dist_info}/RECORD"] = "\\n".join(lines + [f"{dist_info}/RECORD,,"]) + "\\n"
    filename = f"{name}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(directory, filename), "w") as archive:
        for path, text in files.items():
            archive.writestr(path, text)
    return filename

def get_requires_for_build_wheel(config_settings=None):
    return []

get_requires_for_build_editable = get_requires_for_build_wheel

def build_wheel(directory, config_settings=None, metadata_directory=None):
    return write_wheel(directory, "toy_project", "0.1", ["toy_app"], {"toy_project.py": open("toy_project.py").read()})

def build_editable(directory, config_settings=None, metadata_directory=None):
    return write_wheel(directory, "toy_project", "0.1", ["toy_app"], {"toy_project.pth": os.path.abspath(".") + "\\n"})
'''


def test_installs_the_resolved_set_in_parallel_then_the_project_editable(tmp_path):
    project = tmp_path / "project"
    project.mkdir()
    (project / "toy_backend.py").write_text(BACKEND)
    spec = importlib.util.spec_from_file_location("toy_backend", project / "toy_backend.py")
    backend = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(backend)
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    backend.write_wheel(wheels, "toy_base", "1.0", [], {"toy_base.py": "VALUE = 41\n"})
    backend.write_wheel(wheels, "toy_app", "2.0", ["toy_base>=1"], {"toy_app.py": "import toy_base\nVALUE = toy_base.VALUE + 1\n"})
    backend.write_wheel(wheels, "toy_unused", "1.0", [], {"toy_unused.py": ""})
    (project / "pyproject.toml").write_text(textwrap.dedent("""
        [build-system]
        requires = []
        build-backend = "toy_backend"
        backend-path = ["."]
        [project]
        name = "toy_project"
        version = "0.1"
        dependencies = ["toy_app"]
    """))
    (project / "toy_project.py").write_text("import toy_app\nVALUE = toy_app.VALUE\n")
    env = tmp_path / "env"
    venv.create(env, with_pip=True)
    python = env / "bin" / "python"
    out = subprocess.run(
        [str(python), str(ROOT / "tools" / "install.py"), str(project), "--jobs", "2",
         "--no-index", "--find-links", str(wheels), "--disable-pip-version-check"],
        check=False, capture_output=True, text=True, cwd=tmp_path)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "2 distributions resolved" in out.stdout and "in 2 pip processes" in out.stdout, out.stdout
    # the project imports through its editable .pth, its dependencies through the parallel installs
    check = subprocess.run([str(python), "-c", "import toy_project; print(toy_project.VALUE)"],
                           check=False, capture_output=True, text=True, cwd=tmp_path)
    assert check.stdout.strip() == "42", check.stderr
    listed = subprocess.run([str(python), "-m", "pip", "list", "--format=freeze"], check=False, capture_output=True, text=True)
    assert "toy-unused" not in listed.stdout.lower().replace("_", "-")  # only what the resolution asked for


def test_rejects_a_job_count_below_one():
    out = subprocess.run([sys.executable, str(ROOT / "tools" / "install.py"), ".", "--jobs", "0"],
                         check=False, capture_output=True, text=True)
    assert out.returncode == 2 and "--jobs must be at least 1. Got 0 instead." in out.stderr
