"""The numba configuration: one set of options, and an import that survives no cache folder."""

import os
import shutil
import subprocess
import sys
import time

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


def _copy_package(dest: Path) -> Path:
    copy = dest / "pymc_pcrp"
    shutil.copytree(PACKAGE, copy, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


def _cache_run(site: Path, cache: Path, cwd: Path) -> list[str]:
    """Import the copy at ``site``, call one kernel, print its cache hits and misses."""
    code = (
        "import numpy as np, pymc_pcrp\n"
        "from pymc_pcrp._kernels import _config\n"
        "from pymc_pcrp._runtime import numba_cache as _cache\n"
        "from pymc_pcrp._kernels.partitions import canonical_labels\n"
        f"assert pymc_pcrp.__file__.startswith({str(site)!r}), pymc_pcrp.__file__\n"
        "canonical_labels(np.array([4, 4, 1, 4]))\n"
        "s = canonical_labels.stats\n"
        "print(_config.CACHE_LOCATOR_INSTALLED, _cache.PackageCacheLocator.key,\n"
        "      sum(s.cache_hits.values()), sum(s.cache_misses.values()), s.cache_path)\n"
    )
    env = dict(os.environ, PYTHONPATH=str(site), NUMBA_CACHE_DIR=str(cache))
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, cwd=cwd, capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout.split()


def test_two_copies_of_the_same_sources_share_one_cache_and_an_edit_starts_a_new_one(tmp_path):
    first, second = tmp_path / "clone", tmp_path / "site-packages"
    _copy_package(first)
    copy = _copy_package(second)
    cache = tmp_path / "cache"
    installed, key, hits, misses, path = _cache_run(first, cache, tmp_path)
    assert installed == "True" and misses == "1" and hits == "0"  # compiled, then saved
    assert Path(path) == cache / "pymc_pcrp" / key / "pymc_pcrp._kernels"
    # the other copy, at another path, loads what the first compiled
    assert _cache_run(second, cache, tmp_path)[1:4] == [key, "1", "0"]
    # an edit of any kernel source (here one that canonical_labels does not call) is a new key
    with open(copy / "_kernels" / "niw.py", "a") as f:
        f.write("\n# edited\n")
    _, new_key, hits, misses, _ = _cache_run(second, cache, tmp_path)
    assert new_key != key and (hits, misses) == ("0", "1")
    assert sorted(p.name for p in (cache / "pymc_pcrp").iterdir()) == sorted([key, new_key])


def test_folders_of_other_sources_are_pruned_after_two_weeks(tmp_path):
    from pymc_pcrp._runtime import numba_cache as _cache

    for name in ("current", "recent", "old"):
        (tmp_path / name).mkdir()
    old = time.time() - (_cache.PRUNE_AFTER_DAYS + 1) * 86400.0
    os.utime(tmp_path / "old", (old, old))
    os.utime(tmp_path / "current", (old, old))  # the folder in use is never removed
    _cache._prune(tmp_path, keep="current")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["current", "recent"]
