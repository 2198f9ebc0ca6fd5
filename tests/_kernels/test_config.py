"""The numba configuration: one set of options, and an import that survives no cache folder."""

import os
import shutil
import subprocess
import sys

from pathlib import Path

import pymc_pcrp

from pymc_pcrp._kernels._config import NJIT_KWARGS

PACKAGE = Path(pymc_pcrp.__file__).resolve().parent


def test_kernels_use_strict_arithmetic_and_no_parallelism():
    assert NJIT_KWARGS["fastmath"] is False
    assert "parallel" not in NJIT_KWARGS
    assert NJIT_KWARGS["nogil"] is True


def test_import_works_without_any_writable_numba_cache(tmp_path):
    """No cache beside the package, in NUMBA_CACHE_DIR or in the user cache: warn, run uncached.

    Tests run as root, so read-only permissions would not stop numba; instead every place
    numba could create its cache folder is taken by a plain file of that name.
    """
    copy = tmp_path / "site" / "pymc_pcrp"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    for folder in [copy, *[p for p in copy.rglob("*") if p.is_dir()]]:
        (folder / "__pycache__").write_text("not a folder")
    xdg = tmp_path / "xdg"
    xdg.mkdir()
    (xdg / "numba").write_text("not a folder")
    env = dict(os.environ)
    env.update(
        PYTHONPATH=str(copy.parent),
        NUMBA_CACHE_DIR=str(tmp_path / "blocked" / "cache"),
        XDG_CACHE_HOME=str(xdg),
        PYTHONDONTWRITEBYTECODE="1",
    )
    (tmp_path / "blocked").write_text("not a folder")
    code = (
        "import numpy as np, pymc_pcrp\n"
        "from pymc_pcrp._kernels._config import NJIT_KWARGS\n"
        "from pymc_pcrp._kernels.partitions import canonical_labels\n"
        f"assert pymc_pcrp.__file__.startswith({str(copy)!r}), pymc_pcrp.__file__\n"
        "print(NJIT_KWARGS['cache'], canonical_labels(np.array([4, 4, 1, 4])).tolist())\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split() == ["False", "[0,", "0,", "1,", "0]"]
    assert "numba found no writable cache folder" in done.stderr
    assert "NUMBA_CACHE_DIR" in done.stderr
