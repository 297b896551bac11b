"""The package's layers: imports point downwards only, and function-local imports are the named few.

Layers, lowest first: the ground (the record of a run, argument checks, flags, the papers'
numbers), then data / models / measures, analysis, training, charts, notebook helpers, and
the top-level ``nhtlab`` that re-exports the public surface.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PKG = Path(__file__).resolve().parent.parent / "nhtlab"
LAYERS = {"_version": 0, "history": 0, "validation": 0, "smoke": 0, "flags": 0, "papers": 0,
          "data": 1, "models": 1, "measures": 1, "analysis": 2, "training": 3, "charts": 4, "notebook": 5, "": 6}
# Function-local imports that stay, each for a reason (an optional or slow dependency; fcntl: POSIX only,
# imported in a try block by the result cache, whose claims need it).
LOCAL_ALLOWED = {"tqdm.std", "tqdm.notebook", "torchvision", "torchvision.models", "sklearn.datasets", "ipywidgets",
                 "IPython.display", "scipy", "fcntl", "google.colab",
                 # inductor's compiler and AOTAutograd's config: seconds to import, needed by a compiled run only
                 "torch._inductor.compile_fx", "torch._inductor.decomposition", "torch._inductor.lowering",
                 "torch._functorch"}


def module_name(path: Path) -> str:
    parts = path.relative_to(PKG).with_suffix("").parts
    return ".".join(p for p in parts if p != "__init__")


def layer(module: str) -> int:
    return LAYERS[module.split(".")[0]]


def imports(path: Path) -> list[tuple[str, bool]]:
    """(imported nhtlab module or external module, is_function_local) for each import in ``path``."""
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


MODULES = sorted(PKG.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=lambda p: str(p.relative_to(PKG)))
def test_imports_point_downwards(path):
    source = module_name(path)
    for target, _ in imports(path):
        if target and target.startswith("nhtlab:"):
            target = target[len("nhtlab:"):]
            resolved = target if target.split(".")[0] in LAYERS else ""
            assert layer(resolved) <= layer(source), f"{source} (layer {layer(source)}) imports {target} (layer {layer(resolved)})"


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

    assert max(longest(m) for m in graph) <= 8
