"""The wheel and the sdist: the package with its type marker and metadata, and no tests in the sdist."""

from __future__ import annotations

import email
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
FILES = ("pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md", "CITATION.cff", "MANIFEST.in")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path]:
    """The sdist and the wheel setuptools builds from a copy of the tree (the checkout stays untouched)."""
    src = tmp_path_factory.mktemp("src")
    for name in FILES:
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "nhtlab", src / "nhtlab", ignore=shutil.ignore_patterns("__pycache__"))
    (src / "tests").mkdir()
    (src / "tests" / "test_x.py").write_text("")  # must stay out of the sdist
    out = tmp_path_factory.mktemp("dist")
    # build_meta rewrites sys.argv for setup(): read the arguments first
    code = ("import sys, pathlib; out, listing = sys.argv[1:3]; from setuptools import build_meta as b; "
            "names = [b.build_sdist(out), b.build_wheel(out)]; pathlib.Path(listing).write_text('\\n'.join(names))")
    listing = src / "built.txt"
    result = subprocess.run([sys.executable, "-c", code, str(out), str(listing)], cwd=src, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    sdist, wheel = listing.read_text().splitlines()
    return out / sdist, out / wheel


def test_sdist_is_the_package_without_the_tests(built):
    sdist, _ = built
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    for needed in ("pyproject.toml", "README.md", "LICENSE", "CHANGELOG.md", "CITATION.cff", "nhtlab/__init__.py",
                   "nhtlab/py.typed", "nhtlab/_version.py"):
        assert needed in names, needed
    assert not [n for n in names if n.startswith(("tests/", "book/", "tools/")) or "__pycache__" in n], names


def test_wheel_is_typed_and_describes_itself(built):
    _, wheel = built
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = email.message_from_bytes(archive.read(next(n for n in names if n.endswith(".dist-info/METADATA"))))
    assert "nhtlab/py.typed" in names and not [n for n in names if n.startswith("tests/")]
    classifiers = metadata.get_all("Classifier")
    assert "Typing :: Typed" in classifiers and "License :: OSI Approved :: MIT License" not in classifiers
    urls = dict(u.split(", ", 1) for u in metadata.get_all("Project-URL"))
    assert {"Homepage", "Source", "Changelog"} <= set(urls), urls
    requires = metadata.get_all("Requires-Dist")
    assert "ipywidgets>=7.6" in requires, "Colab's ipywidgets 7 satisfies nhtlab (tests/test_colab.py)"
    assert metadata["Keywords"] and "grokking" in metadata["Keywords"]


# pyproject.toml's name → conda-forge's, where they differ; dask[distributed] is two conda packages.
CONDA_NAMES = {"torch": ["pytorch"], "dask": ["dask", "distributed"]}


def test_environment_yml_has_the_package_dependencies():
    """environment.yml lists every dependency of nhtlab and its book and test extras, with the same
    bounds, conda-forge's name where it has one and pip's otherwise, and installs nhtlab itself."""
    import re
    import tomllib

    import yaml

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = [*project["dependencies"], *project["optional-dependencies"]["book"],
              *project["optional-dependencies"]["test"]]
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
    listed = {}
    for spec in [*conda, *pip]:
        name, bound = re.match(r"([A-Za-z0-9_.-]+)(.*)", spec.replace(" ", "")).groups()
        listed[name.lower()] = bound
    for requirement in dict.fromkeys(wanted):
        name, extra, bound = re.match(r"([A-Za-z0-9_.-]+)(\[[^\]]*\])?(.*)", requirement.replace(" ", "")).groups()
        for conda_name in CONDA_NAMES.get(name.lower(), [name.lower()]):
            assert conda_name in listed, f"environment.yml lacks {conda_name} ({requirement} in pyproject.toml)"
            assert listed[conda_name] == bound, f"{conda_name}: environment.yml says {listed[conda_name]!r}, pyproject.toml {bound!r}"
    assert "-e." in listed or any(p.replace(" ", "") == "-e." for p in pip), "environment.yml does not install nhtlab"
    python = next(b for n, b in listed.items() if n == "python")
    assert python == project["requires-python"].replace(" ", ""), (python, project["requires-python"])
