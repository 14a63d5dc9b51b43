"""The import rule of CONTRIBUTING.md, checked on the source: calls go one way only.

cli and its verbs (tools/) > gtp > training, search_processes > search > nn > backends, with
game/ at the bottom. A module may import its own layer or lower ones; game/ imports nothing
outside game/; backends/ never sees game/, search/ or nn/; search/ never imports nn/ (it is
handed an evaluator).
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "leelaz"

# Lower number = lower layer. A module may import layers with a number <= its own, except
# where FORBIDDEN says otherwise.
LAYERS = {"game": 0, "backends": 1, "nn": 2, "search": 3, "training": 4,
          "search_processes": 4, "gtp": 5, "cli": 6,
          "tools": 6, "selfplay": 6, "zero": 6, "review": 6, "__main__": 7}
FORBIDDEN = {
    "game": {"backends", "nn", "search", "training", "gtp", "cli", "config"},
    "backends": {"game", "nn", "search", "training", "gtp", "cli"},
    "search": {"nn"},
}


def _layer_of(module: str) -> str | None:
    parts = module.split(".")
    if parts[0] != "leelaz" or len(parts) < 2:
        return None
    return parts[1]


def _imports(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.append(node.module)
    return names


def _modules():
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        yield ".".join(rel.parts), path


@pytest.mark.parametrize("module,path", list(_modules()), ids=lambda x: str(x))
def test_imports_go_one_way(module, path):
    own = _layer_of(module)
    if own is None or own not in LAYERS:
        return  # leelaz/__init__.py, config.py: imported by anyone, import nothing of ours
    for imported in _imports(path):
        target = _layer_of(imported)
        if target is None or target == own:
            continue
        assert target not in FORBIDDEN.get(own, set()), f"{module} imports {imported}"
        if target in LAYERS:
            assert LAYERS[target] <= LAYERS[own], f"{module} (layer {own}) imports {imported}"


def test_the_rule_catches_a_violation(tmp_path):
    """The checker itself finds an upward import (so the test above can fail)."""
    bad = tmp_path / "bad.py"
    bad.write_text("from leelaz.search.search import UCTSearch\nimport leelaz.gtp.engine\n")
    assert _imports(bad) == ["leelaz.search.search", "leelaz.gtp.engine"]
    assert LAYERS[_layer_of("leelaz.search.search")] > LAYERS["nn"]
