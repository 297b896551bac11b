"""The package's layers: the science core imports nothing from the book's layer or the build's plumbing.

Three layers (tools/package_shape.py prints them): the core (ground, data / models / measures,
analysis, training, charts), the build's plumbing (``nhtlab.plumbing``) and the book's layer
(``nhtlab.book``). Imports point downwards only: the core never reaches the plumbing or the book,
which wrap it from outside, and it reads no environment variable. Function-local imports are the named few.
"""

from __future__ import annotations

from pathlib import Path

import pytest

import package_shape  # tools/ is on sys.path (tests/conftest.py)

PKG = package_shape.PKG
LAYERS = {"_version": 0, "history": 0, "validation": 0, "papers": 0, "thresholds": 0,
          "data": 1, "models": 1, "measures": 1, "analysis": 2, "training": 3, "charts": 4,
          "plumbing": 5, "book": 6, "": 7}
# Function-local imports that stay, each for a reason (an optional or slow dependency; fcntl: POSIX only,
# imported in a try block by the CPU slots).
LOCAL_ALLOWED = {"tqdm.std", "tqdm.notebook", "torchvision", "torchvision.models", "sklearn.datasets", "ipywidgets",
                 "IPython.display", "scipy", "fcntl", "google.colab",
                 # inductor's compiler and AOTAutograd's config: seconds to import, needed by a compiled run only
                 "torch._inductor.compile_fx", "torch._inductor.decomposition", "torch._inductor.lowering",
                 "torch._functorch"}
MODULES = sorted(PKG.rglob("*.py"))
module_name = package_shape.module_name


def layer(module: str) -> int:
    return LAYERS[module.split(".")[0]]


def imports(path: Path) -> list[tuple[str, bool]]:
    """(imported module, is_function_local) for each import in ``path``; nhtlab modules as ``nhtlab:<module>``."""
    import ast

    tree = ast.parse(path.read_text())
    here = module_name(path).split(".") if module_name(path) else []
    package = here if path.name == "__init__.py" else here[:-1]
    top = {id(node) for node in tree.body}
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = ".".join([*base, node.module] if node.module else base)
                names = [target] if node.module else [".".join([*base, a.name]) for a in node.names]
                out += [("nhtlab:" + n, id(node) not in top) for n in names]
            else:
                out.append((node.module, id(node) not in top))
        elif isinstance(node, ast.Import):
            out += [(a.name, id(node) not in top) for a in node.names]
    return out


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PKG)))
def test_imports_point_downwards(path):
    source = module_name(path)
    for target, _ in imports(path):
        if target and target.startswith("nhtlab:"):
            target = target[len("nhtlab:"):]
            assert layer(target) <= layer(source), f"{source} (layer {layer(source)}) imports {target} (layer {layer(target)})"


def test_the_core_imports_nothing_from_the_book_or_the_build():
    assert package_shape.core_imports_of_outer_layers() == []


def test_the_scanner_sees_an_import_of_the_book(tmp_path, monkeypatch):
    (tmp_path / "analysis").mkdir()
    (tmp_path / "analysis" / "x.py").write_text("from ..book.closing import closing_checks\nimport nhtlab.plumbing.smoke\n")
    monkeypatch.setattr(package_shape, "PKG", tmp_path)
    assert package_shape.core_imports_of_outer_layers() == ["analysis.x -> book.closing", "analysis.x -> plumbing.smoke"]


def test_the_package_meets_its_targets():
    result = package_shape.report()
    assert result["public_names"] <= package_shape.MAX_PUBLIC_NAMES, result["public_names"]
    assert result["package_lines"] <= package_shape.MAX_PACKAGE_LINES, result["layers"]
    assert all(result["targets_met"].values()), result


def test_one_run_s_path_is_short_and_holds_no_plumbing():
    """Issue 56: following one run's config through the code means few cross-module entries, none of the build."""
    path = package_shape.run_path()
    assert ("training/modular_run.py", "run_modular") in path and ("training/loop.py", "train") in path
    assert len(path) <= package_shape.MAX_RUN_PATH, path
    assert not [m for m, _ in path if package_shape.layer_of(m.removesuffix(".py").replace("/", ".")) != "core"]


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PKG)))
def test_function_local_imports_are_the_named_few(path):
    local = [t for t, is_local in imports(path) if is_local]
    assert not [t for t in local if t.startswith("nhtlab:")], f"{path.name}: nhtlab imported inside a function: {local}"
    assert set(local) <= LOCAL_ALLOWED, f"{path.name}: unexpected function-local import {set(local) - LOCAL_ALLOWED}"


def test_no_import_cycle_and_the_depth_is_reported():
    graph = {module_name(p): set() for p in MODULES}
    for p in MODULES:
        for target, _ in imports(p):
            if target and target.startswith("nhtlab:"):
                t = target[len("nhtlab:"):]
                graph[module_name(p)].add(t if t in graph else ".".join(t.split(".")[:-1]))
    depth: dict[str, int] = {}

    def longest(m: str, stack: tuple[str, ...] = ()) -> int:
        assert m not in stack, f"import cycle: {' -> '.join((*stack, m))}"
        if m not in depth:
            depth[m] = 1 + max((longest(t, (*stack, m)) for t in graph[m] if t != m and t in graph), default=0)
        return depth[m]

    assert max(longest(m) for m in graph) <= 9  # nhtlab -> nhtlab.book -> a report -> … the core's seven


def test_no_module_is_named_like_a_standard_library_module():
    import sys

    clashes = [str(p.relative_to(PKG)) for p in MODULES if p.stem in sys.stdlib_module_names]
    assert not clashes, f"named like a standard-library module: {clashes}"


def test_the_core_reads_no_environment_variable():
    """Settings reach the core as arguments; only the book's layer and the plumbing read the environment."""
    readers = []
    for path in MODULES:
        if package_shape.layer_of(module_name(path)) in package_shape.OUTER:
            continue
        text = path.read_text()
        readers += [f"{path.relative_to(PKG)}: {word}" for word in ("os.environ", "getenv", "environ[") if word in text]
    assert readers == []


def test_the_environment_scan_sees_a_reader(tmp_path, monkeypatch):
    (tmp_path / "training").mkdir()
    (tmp_path / "training" / "x.py").write_text("import os\nSTEPS = os.environ.get('NHTLAB_SMOKE_STEPS')\n")
    monkeypatch.setattr(package_shape, "PKG", tmp_path)
    path = tmp_path / "training" / "x.py"
    assert package_shape.layer_of(package_shape.module_name(path)) == "core" and "os.environ" in path.read_text()
