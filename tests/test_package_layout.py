"""The package's shape: no import cycle, no module too long to read, no private name shared.

The import graph is read from the source (the imports at module level, outside
``if TYPE_CHECKING:``), as import-linter would: ``from a.b import c`` is an edge
to the module ``a.b.c`` when that is a module, else to ``a.b``. Imports inside a
function run when it is called, after every module has loaded, and are the
sanctioned way for two layers that call each other (``fit(power="auto")`` and
``choose_power``) to do so.

A name that starts with an underscore belongs to its module: another module of
the package neither imports it (``from a.b import _c``, unless ``a.b._c`` is a
module) nor reads it off a module it imported (``b._c``). What two modules
share has a public name; a module whose name starts with an underscore is
private to the package, not to itself.
"""

from __future__ import annotations

import ast

from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "pymc_pcrp"
MAX_LINES = 600


def _modules() -> dict[str, Path]:
    modules = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _imports(path: Path, modules: dict[str, Path]) -> set[str]:
    out = set()
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            continue
        statements = node.body if isinstance(node, ast.Try) else [node]
        for stmt in statements:
            if isinstance(stmt, ast.Import):
                out.update(a.name for a in stmt.names if a.name in modules)
            elif isinstance(stmt, ast.ImportFrom) and stmt.module in modules:
                subs = {f"{stmt.module}.{a.name}" for a in stmt.names} & modules.keys()
                out |= subs
                if len(subs) < len(stmt.names):
                    out.add(stmt.module)
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycle_between_modules():
    modules = _modules()
    graph = {name: _imports(path, modules) - {name} for name, path in modules.items()}
    assert _cycles(graph) == []


def test_no_module_over_600_lines():
    sizes = {name: len(path.read_text().splitlines()) for name, path in _modules().items()}
    assert len(sizes) > 50  # the package was found
    assert {name: n for name, n in sizes.items() if n > MAX_LINES} == {}


def _private_reads(path: Path, modules: dict[str, Path]) -> list[str]:
    """``line: name`` of every private name ``path`` takes from another module of the package."""
    tree = ast.parse(path.read_text())
    found = []
    module_names: set[str] = set()  # names bound to a module of the package
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name in modules and a.asname:
                    module_names.add(a.asname)
        elif isinstance(node, ast.ImportFrom) and node.module in modules:
            for a in node.names:
                if f"{node.module}.{a.name}" in modules:
                    module_names.add(a.asname or a.name)
                elif a.name.startswith("_") and not a.name.startswith("__"):
                    found.append(f"{node.lineno}: from {node.module} import {a.name}")
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in module_names
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
        ):
            found.append(f"{node.lineno}: {node.value.id}.{node.attr}")
    return found


def test_the_private_read_finder_finds_both_forms(tmp_path):
    modules = {
        "pkg": tmp_path / "__init__.py",
        "pkg.a": tmp_path / "a.py",
        "pkg.b": tmp_path / "b.py",
    }
    source = "from pkg.a import _x, y\nfrom pkg import b\nimport pkg.a as a\nb._z\na.w\n"
    (tmp_path / "c.py").write_text(source)
    assert _private_reads(tmp_path / "c.py", modules) == ["1: from pkg.a import _x", "4: b._z"]


def test_no_module_reads_another_modules_private_names():
    modules = _modules()
    reads = {name: _private_reads(path, modules) for name, path in modules.items()}
    assert {name: r for name, r in reads.items() if r} == {}
