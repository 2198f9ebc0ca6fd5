"""Every ``pymc_pcrp`` name the benchmark scripts use exists (no sampling).

The benchmarks import helpers from the package's modules inside their sections, so a
name moved to another module breaks a section only when that section runs (the
``start`` section of ``benchmarks/run.py`` once failed with an AttributeError after
``random_init_max_k`` moved from ``pcrp_gibbs`` to ``_options``). This test reads
each script's syntax tree and resolves, without running anything: every
``from pymc_pcrp... import name``, and every ``alias.name`` where ``alias`` is a
``pymc_pcrp`` module imported in the same script.
"""

import ast
import importlib

from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("*.py"))


def _package_names(tree: ast.Module) -> tuple[list[tuple[str, str, int]], dict[str, str]]:
    """``(module, name, line)`` of every from-import, and aliases of imported modules."""
    names: list[tuple[str, str, int]] = []
    aliases: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pymc_pcrp"):
            for alias in node.names:
                names.append((node.module, alias.name, node.lineno))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("pymc_pcrp"):
                    aliases[alias.asname or alias.name] = alias.name
    return names, aliases


@pytest.mark.parametrize("path", BENCHMARKS, ids=lambda p: p.name)
def test_benchmark_script_uses_only_names_that_exist(path):
    tree = ast.parse(path.read_text(), filename=str(path))
    names, aliases = _package_names(tree)
    missing = []
    for module, name, line in names:
        target = importlib.import_module(module)
        if not hasattr(target, name):
            try:  # a submodule imported by name
                importlib.import_module(f"{module}.{name}")
            except ImportError:
                missing.append(f"line {line}: from {module} import {name}")
                continue
            aliases.setdefault(name, f"{module}.{name}")
        elif isinstance(getattr(target, name), type(importlib)):
            aliases.setdefault(name, f"{module}.{name}")
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and isinstance(node.value, ast.Name)
            and node.value.id in aliases
            and isinstance(node.ctx, ast.Load)
        ):
            module = importlib.import_module(aliases[node.value.id])
            if not hasattr(module, node.attr):
                try:
                    importlib.import_module(f"{aliases[node.value.id]}.{node.attr}")
                except ImportError:
                    missing.append(f"line {node.lineno}: {node.value.id}.{node.attr}")
    assert not missing, f"{path.name} uses names that do not exist: {missing}"
