"""`make install`: uv, from the package index into the venv, installs nhtlab[book,test] with the
Makefile's arguments; checked offline on toy wheels (the command is the one `make -n install` prints)."""

from __future__ import annotations

import importlib.util
import shlex
import subprocess
import sys
import textwrap
import venv
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def uv() -> list[str]:
    """``python -m uv`` of this environment (make install puts uv there; so does the test extra)."""
    if importlib.util.find_spec("uv") is None:
        pytest.fail("uv is not installed in this environment; `make install` installs it (pip install uv)")
    return [sys.executable, "-m", "uv"]


def make_install_uv_args(*variables: str) -> list[str]:
    """The arguments the Makefile hands to ``uv pip install`` (between ``--python PY`` and ``-e``)."""
    printed = subprocess.run(["make", "-n", "install", "VENV=/nonexistent/venv", *variables], cwd=ROOT,
                             capture_output=True, text=True, timeout=60, check=True).stdout
    line = next(line for line in printed.splitlines() if " -m uv pip install " in line)
    words = shlex.split(line)
    assert words[words.index("install") + 1:words.index("install") + 3] == ["--python", "/nonexistent/venv/bin/python"]
    assert words[-2:] == ["-e", ".[book,test]"], words
    return words[words.index("install") + 3:-2]


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



def toy_project(tmp_path: Path) -> tuple[Path, Path]:
    """A toy project needing toy_app (which needs toy_base), and a folder of wheels: toy_base 1.0 and 1.1."""
    project = tmp_path / "project"
    project.mkdir()
    (project / "toy_backend.py").write_text(BACKEND)
    spec = importlib.util.spec_from_file_location("toy_backend", project / "toy_backend.py")
    backend = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(backend)
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    backend.write_wheel(wheels, "toy_base", "1.0", [], {"toy_base.py": "VALUE = 41\n"})
    backend.write_wheel(wheels, "toy_base", "1.1", [], {"toy_base.py": "VALUE = 0\n"})
    backend.write_wheel(wheels, "toy_app", "2.0", ["toy_base>=1"],
                        {"toy_app.py": "import toy_base\nVALUE = toy_base.VALUE + 1\n"})
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
        [project.optional-dependencies]
        book = []
        test = []
    """))
    (project / "toy_project.py").write_text("import toy_app\nVALUE = toy_app.VALUE\n")
    return project, wheels


def test_make_install_installs_editable_with_uv_under_pips_constraints(tmp_path):
    """The Makefile's uv arguments, offline: the project editable, its dependencies, and a machine's pip
    constraint file (the cap this project's machines put on torch) holding toy_base at 1.0 below 1.1."""
    project, wheels = toy_project(tmp_path)
    caps = tmp_path / "constraints.txt"
    caps.write_text("toy_base<=1.0\n")
    args = make_install_uv_args(f"PIP_CONSTRAINT_FILE={caps}")
    assert args == ["--resolution", "highest", "--constraint", str(caps)], args
    env = tmp_path / "env"
    venv.create(env, with_pip=False)  # uv needs no pip in the target environment
    out = subprocess.run([*uv(), "pip", "install", "--python", str(env / "bin" / "python"), *args,
                          "--offline", "--no-index", "--find-links", str(wheels), "--cache-dir", str(tmp_path / "cache"),
                          "-e", ".[book,test]"], capture_output=True, text=True, cwd=project, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    check = subprocess.run([str(env / "bin" / "python"), "-c", "import toy_project; print(toy_project.VALUE)"],
                           capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert check.stdout.strip() == "42", check.stdout + check.stderr  # toy_base 1.0, not the newer 1.1
    listed = subprocess.run([*uv(), "pip", "list", "--python", str(env / "bin" / "python"), "--format", "freeze"],
                            capture_output=True, text=True, timeout=60).stdout.lower().replace("_", "-")
    assert "toy-base==1.0" in listed and "toy-unused" not in listed, listed  # only what the resolution asked for
    # an edit to the source shows without reinstalling: the install is editable
    (project / "toy_project.py").write_text("import toy_app\nVALUE = -toy_app.VALUE\n")
    again = subprocess.run([str(env / "bin" / "python"), "-c", "import toy_project; print(toy_project.VALUE)"],
                           capture_output=True, text=True, cwd=tmp_path, timeout=60)
    assert again.stdout.strip() == "-42", again.stderr


def test_lowest_direct_resolution_takes_the_declared_minimums(tmp_path):
    """drift.yml's minimum job: RESOLUTION=lowest-direct installs toy_app's declared minimum of toy_base."""
    project, wheels = toy_project(tmp_path)
    (project / "pyproject.toml").write_text((project / "pyproject.toml").read_text().replace(
        'dependencies = ["toy_app"]', 'dependencies = ["toy_app", "toy_base>=1.0"]'))
    args = make_install_uv_args("RESOLUTION=lowest-direct", "PIP_CONSTRAINT_FILE=")
    assert args == ["--resolution", "lowest-direct"], args
    env = tmp_path / "env"
    venv.create(env, with_pip=False)
    out = subprocess.run([*uv(), "pip", "install", "--python", str(env / "bin" / "python"), *args,
                          "--offline", "--no-index", "--find-links", str(wheels), "--cache-dir", str(tmp_path / "cache"),
                          "-e", ".[book,test]"], capture_output=True, text=True, cwd=project, timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    check = subprocess.run([str(env / "bin" / "python"), "-c", "import toy_base; print(toy_base.VALUE)"],
                           capture_output=True, text=True, timeout=60)
    assert check.stdout.strip() == "41", check.stdout + check.stderr  # 1.0, the minimum, not the newest 1.1
