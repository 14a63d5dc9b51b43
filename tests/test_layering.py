"""The import rule of CONTRIBUTING.md, checked on the source: calls go one way only.

cli, its verbs (tools/) and zero/ > gtp > selfplay/ > training, root_parallel > search > nn >
backends, with game/ at the bottom. A module may import its own layer or lower ones; game/
imports nothing outside game/; backends/ never sees game/, search/ or nn/; search/ never
imports nn/ (it is handed an evaluator); selfplay/ is below the GTP front end (it gets its
search settings from search/params.py, not from gtp/); the verbs (tools/) never reach into
cli (cli imports them). Imports inside functions count as
much as those at the top of a module, and no modules import each other in a circle.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "leelaz"

# Lower number = lower layer. A module may import layers with a number <= its own, except
# where FORBIDDEN says otherwise.
LAYERS = {"game": 0, "backends": 1, "nn": 2, "search": 3, "training": 4,
          "root_parallel": 4, "selfplay": 5, "gtp": 6, "cli": 7,
          "tools": 7, "zero": 7, "review": 7, "__main__": 8}
FORBIDDEN = {
    "game": {"backends", "nn", "search", "training", "gtp", "cli", "config"},
    "backends": {"game", "nn", "search", "training", "gtp", "cli"},
    "search": {"nn"},
    "tools": {"cli"},
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


def _import_graph(package: Path = PACKAGE) -> dict[str, set[str]]:
    """leelaz's modules (a package by its own name, for its __init__.py) and the modules of
    ours each imports, at the top or inside a function: `from leelaz.search import stats`
    imports leelaz.search.stats, `from leelaz.backends import create_backend` the package."""
    paths = {}
    for path in sorted(package.rglob("*.py")):
        parts = path.relative_to(package.parent).with_suffix("").parts
        paths[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    graph = {}
    for module, path in paths.items():
        edges = set()
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.Import):
                edges |= {a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                for a in node.names:
                    sub = f"{node.module}.{a.name}"
                    edges.add(sub if sub in paths else node.module)
        graph[module] = {m for m in edges if m in paths and m != module}
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The groups of modules that import each other, directly or round a circle (the strongly
    connected components of more than one module, Tarjan's algorithm, without recursion)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            module, targets = work[-1]
            target = next(targets, None)
            if target is not None:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                elif target in on_stack:
                    low[module] = min(low[module], index[target])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[module])
            if low[module] == index[module]:
                group = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    group.append(member)
                    if member == module:
                        break
                if len(group) > 1:
                    found.append(sorted(group))
    return found


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


def test_no_import_circles():
    """No module imports itself round a circle, not even from inside a function (a circle
    dodged that way still ties the modules into one)."""
    assert _cycles(_import_graph()) == []


def test_the_circle_finder_finds_circles(tmp_path):
    """_import_graph reads both kinds of import and _cycles finds a circle through a
    function-level import and a package's __init__.py, and only the circle."""
    pkg = tmp_path / "leelaz"
    (pkg / "sub").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from leelaz.sub import thing\n")
    (pkg / "sub" / "__init__.py").write_text("def f():\n    from leelaz import b\n")
    (pkg / "b.py").write_text("import leelaz.a\nfrom leelaz import c\n")
    (pkg / "c.py").write_text("")
    graph = _import_graph(pkg)
    assert graph["leelaz.a"] == {"leelaz.sub"} and graph["leelaz.sub"] == {"leelaz.b"}
    assert graph["leelaz.b"] == {"leelaz.a", "leelaz.c"}
    assert _cycles(graph) == [["leelaz.a", "leelaz.b", "leelaz.sub"]]
    assert _cycles({"x": {"y"}, "y": set()}) == []
