"""The example notebooks: committed without outputs, and all built into the docs.

The notebooks are executed by the documentation build, not here: ``docs/conf.py``
has myst-nb run every notebook of ``docs/notebooks/`` at reduced size
(``PYMC_PCRP_NB_QUICK=1``) and fail on the first cell that raises, and ``.ci/run``
builds the docs. Running them here too would run every notebook twice in CI. The
tests below are cheap and check that this arrangement covers every notebook.
"""

import ast
import json

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
DOCS_NOTEBOOKS = ROOT / "docs" / "notebooks"
NOTEBOOKS = sorted(EXAMPLES.glob("*.ipynb"))


def _conf_assignments() -> dict[str, ast.expr]:
    """The top-level ``name = value`` statements of docs/conf.py, unevaluated."""
    tree = ast.parse((ROOT / "docs" / "conf.py").read_text())
    found = {}
    for node in tree.body:
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if isinstance(target, ast.Name):
                    found[target.id] = node.value
    return found


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 5


def test_notebook_is_committed_without_outputs():
    dirty = {}
    for path in NOTEBOOKS:
        cells = json.loads(path.read_text())["cells"]
        with_outputs = [
            i
            for i, cell in enumerate(cells)
            if cell["cell_type"] == "code"
            and (cell.get("outputs") or cell.get("execution_count") is not None)
        ]
        if with_outputs:
            dirty[path.name] = with_outputs
    assert not dirty, f"clear the outputs of these cells: {dirty}"


def test_every_notebook_is_in_the_docs():
    # docs/notebooks/ holds links to the notebooks of examples/, so that the docs
    # build executes and renders each of them.
    in_docs = {p.resolve() for p in DOCS_NOTEBOOKS.glob("*.ipynb")}
    missing = [p.name for p in NOTEBOOKS if p.resolve() not in in_docs]
    assert not missing, f"not linked from docs/notebooks/: {missing}"
    index = (DOCS_NOTEBOOKS / "index.md").read_text()
    unlisted = [p.stem for p in NOTEBOOKS if p.stem not in index]
    assert not unlisted, f"not in the toctree of docs/notebooks/index.md: {unlisted}"


def test_docs_build_executes_the_notebooks_at_reduced_size():
    conf = (ROOT / "docs" / "conf.py").read_text()
    assert 'os.environ.setdefault("PYMC_PCRP_NB_QUICK", "1")' in conf
    values = _conf_assignments()
    # "off" only when PYMC_PCRP_DOCS_EXECUTE=0 is asked for; otherwise it executes.
    mode = values["nb_execution_mode"]
    assert isinstance(mode, ast.IfExp)
    assert ast.literal_eval(mode.body) == "off"
    assert ast.literal_eval(mode.orelse) in {"cache", "force", "auto"}
    assert ast.literal_eval(values["nb_execution_raise_on_error"]) is True
    for path in NOTEBOOKS:
        assert "PYMC_PCRP_NB_QUICK" in path.read_text(), f"{path.name} ignores the quick mode"
