"""Execute the example notebooks at reduced size, so that they never rot.

Every ``examples/*.ipynb`` runs top to bottom in a fresh kernel of the Python
running the tests, with ``PYMC_PCRP_NB_QUICK=1`` (each notebook reads it and
uses less data and fewer draws). The notebooks are committed without outputs;
a second test keeps it that way.
"""

import json
import sys

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="needs the test extra (nbclient, ipykernel)")
nbclient = pytest.importorskip("nbclient", reason="needs the test extra (nbclient, ipykernel)")
pytest.importorskip("ipykernel", reason="needs the test extra (nbclient, ipykernel)")

from jupyter_client.kernelspec import KernelSpecManager  # noqa: E402
from jupyter_client.manager import KernelManager  # noqa: E402

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
NOTEBOOKS = sorted(EXAMPLES.glob("*.ipynb"))
KERNEL_NAME = "pymc-pcrp-tests"
CELL_TIMEOUT = 600  # seconds; a quick notebook takes well under a minute in all


@pytest.fixture(scope="module")
def kernel_dir(tmp_path_factory):
    """A kernel spec that starts this interpreter, whatever kernels Jupyter knows of."""
    root = tmp_path_factory.mktemp("kernels")
    spec = root / KERNEL_NAME
    spec.mkdir()
    kernel = {
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": f"Python ({sys.executable})",
        "language": "python",
        "env": {"PYMC_PCRP_NB_QUICK": "1", "MPLBACKEND": "Agg"},
    }
    (spec / "kernel.json").write_text(json.dumps(kernel))
    return root


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 5


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_committed_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    with_outputs = [
        i
        for i, cell in enumerate(nb.cells)
        if cell.cell_type == "code" and (cell.outputs or cell.execution_count is not None)
    ]
    assert not with_outputs, f"{path.name}: clear the outputs of cells {with_outputs}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path, kernel_dir):
    nb = nbformat.read(path, as_version=4)
    specs = KernelSpecManager(kernel_dirs=[str(kernel_dir)], ensure_native_kernel=False)
    manager = KernelManager(kernel_name=KERNEL_NAME, kernel_spec_manager=specs)
    client = nbclient.NotebookClient(
        nb,
        km=manager,
        timeout=CELL_TIMEOUT,
        resources={"metadata": {"path": str(EXAMPLES)}},
    )
    client.execute()
