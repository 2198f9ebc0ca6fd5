"""Where numba keeps the compiled kernels: one folder per version of the kernel sources.

By default numba caches a function beside its source file (``__pycache__``) or
in a folder named after the source file's absolute path. Two copies of this
package, say a clone whose root is the working directory and the copy installed
in a virtual environment, then compile the same kernels twice, and numba judges
a cached kernel fresh by its own file's time stamp only: an edited kernel that
another kernel calls leaves the caller's cache stale.

:class:`PackageCacheLocator` puts the cache of every numba function of
``pymc_pcrp`` in one place whatever the import path,
``<cache root>/pymc_pcrp/<key>/<subpackage>``, where the key is a hash of the
package's numba sources (the names and contents of the ``.py`` files that declare
compiled functions or numba types) and the cache root is ``NUMBA_CACHE_DIR`` when set, numba's
user-wide cache folder otherwise. Copies with the same sources share the compiled
kernels; any change to any kernel source gives a new key, so nothing stale is
ever loaded. Folders of other keys that have not been used for
:data:`PRUNE_AFTER_DAYS` days are removed.

The locator plugs into numba's list of cache locators
(``numba.core.caching.CacheImpl._locator_classes``), an attribute numba does not
document. :func:`install` checks that what it needs is there and otherwise
leaves numba's own locators alone: the kernels are then cached as numba does by
default, and nothing else changes.
"""

from __future__ import annotations

import hashlib
import shutil
import time

from pathlib import Path

__all__ = ["PRUNE_AFTER_DAYS", "PackageCacheLocator", "cache_root", "install", "sources_key"]

PACKAGE = Path(__file__).resolve().parent.parent
PRUNE_AFTER_DAYS = 14


def _numba_sources(package: Path = PACKAGE) -> list[Path]:
    """Return the package's files that define numba code, sorted by their path in the package.

    Those are the ``.py`` files that mention ``njit`` or ``structref``: every compiled
    function and numba type is declared with one of them.
    """
    files = []
    for path in sorted(package.rglob("*.py")):
        if "__pycache__" in path.parts:
            continue
        text = path.read_bytes()
        if b"njit" in text or b"structref" in text:
            files.append(path)
    return files


def sources_key(package: Path = PACKAGE) -> str:
    """Hash of the names and contents of the package's numba sources (16 hex digits)."""
    digest = hashlib.sha256()
    for path in _numba_sources(package):
        digest.update(path.relative_to(package).as_posix().encode())
        digest.update(b"\0")
        digest.update(path.read_bytes())
        digest.update(b"\0")
    return digest.hexdigest()[:16]


def cache_root() -> Path:
    """``NUMBA_CACHE_DIR/pymc_pcrp`` when that is set, else numba's user cache folder's."""
    from numba.core import config
    from numba.misc.appdirs import AppDirs

    base = config.CACHE_DIR or AppDirs(appname="numba", appauthor=False).user_cache_dir
    return Path(base) / "pymc_pcrp"


def _prune(root: Path, keep: str, days: float = PRUNE_AFTER_DAYS) -> None:
    """Remove the folders of other keys not modified for ``days`` days (best effort)."""
    limit = time.time() - days * 86400.0
    try:
        entries = list(root.iterdir())
    except OSError:
        return
    for entry in entries:
        try:
            if entry.name != keep and entry.is_dir() and entry.stat().st_mtime < limit:
                shutil.rmtree(entry, ignore_errors=True)
        except OSError:
            continue


def _make_locator_class(base: type) -> type:
    """Build the locator on numba's user-wide locator class ``base``."""

    class PackageCacheLocator(base):
        """numba cache locator for the functions defined in ``pymc_pcrp`` (see the module)."""

        key: str = ""
        root: Path = Path()

        def __init__(self, py_func, py_file):
            self._py_file = py_file
            self._lineno = py_func.__code__.co_firstlineno
            where = Path(py_file).resolve().parent.relative_to(PACKAGE.parent)
            self._cache_path = str(self.root / self.key / where.as_posix().replace("/", "."))

        def get_cache_path(self) -> str:
            return self._cache_path

        def get_source_stamp(self) -> str:
            # The folder is already specific to these sources; the stamp need not be the
            # file's time (which differs between two copies of the same sources).
            return self.key

        @classmethod
        def from_function(cls, py_func, py_file):
            try:
                inside = Path(py_file).resolve().is_relative_to(PACKAGE)
            except (OSError, TypeError, ValueError):
                return None
            if not inside or not cls.key:
                return None
            locator = cls(py_func, py_file)
            try:
                locator.ensure_cache_path()
            except OSError:  # not writable: numba tries its own locators next
                return None
            return locator

    return PackageCacheLocator


PackageCacheLocator: type | None = None


def install() -> bool:
    """Put :class:`PackageCacheLocator` first in numba's locator list; say if it is in use.

    Returns ``False``, and changes nothing, when numba lacks what the locator
    relies on, when ``NUMBA_CACHE_LOCATOR_CLASSES`` chooses the locators, or when
    the package's sources cannot be read.
    """
    global PackageCacheLocator
    try:
        from numba.core import caching, config

        impl = caching.CacheImpl
        locators = impl._locator_classes
        base = caching.UserWideCacheLocator
        if not isinstance(locators, list) or getattr(config, "CACHE_LOCATOR_CLASSES", ""):
            return False
        if PackageCacheLocator is not None and PackageCacheLocator in locators:
            return True
        cls = _make_locator_class(base)
        cls.key = sources_key()
        cls.root = cache_root()
    except Exception:  # an unfamiliar numba or an unreadable copy: numba's defaults
        return False
    PackageCacheLocator = cls
    locators.insert(0, cls)
    _prune(cls.root, cls.key)
    return True
