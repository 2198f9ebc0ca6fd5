"""Sphinx configuration of the pymc_pcrp documentation.

Build (what ``.ci/docs`` runs)::

    pip install ".[docs]"
    sphinx-build -W --keep-going -b html docs docs/_build/html

The example notebooks are committed without outputs; the build executes each of
them (myst-nb, one fresh kernel per notebook of the Python running Sphinx) and
renders the outputs, plots included. A notebook cell that raises fails the
build, so the build is also the test that the notebooks run. They run at reduced
size: this file sets ``PYMC_PCRP_NB_QUICK=1`` unless it is already set (set it
to ``0`` for the full-size notebooks). ``PYMC_PCRP_DOCS_EXECUTE=0`` skips the
execution, for a quick look at the prose.

MathJax is served from the site itself (the ``sphinx-mathjax-offline``
extension copies it into ``_static/mathjax``), so the maths renders without
network access. ``PYMC_PCRP_DOCS_INTERSPHINX=1`` links to the Python, NumPy,
PyMC and ArviZ documentation; it needs network access, so it is off by default.
"""

from __future__ import annotations

import importlib
import os
import sys

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Document the source tree beside this file, also when it is not installed.
sys.path.insert(0, str(ROOT))

import pymc_pcrp  # noqa: E402

project = "pymc_pcrp"
author = "pymc_pcrp developers"
copyright = "2026, pymc_pcrp developers"
release = pymc_pcrp.__version__
version = ".".join(release.split(".")[:2])

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    # Ships MathJax 3 and points mathjax_path at the copy in _static/mathjax.
    "sphinx-mathjax-offline",
    "sphinx.ext.viewcode",
    "numpydoc",
    "myst_nb",
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
root_doc = "index"
exclude_patterns = [
    "_build",
    "**.ipynb_checkpoints",
    "Thumbs.db",
    ".DS_Store",
]
templates_path: list[str] = []

# -- MyST and myst-nb ------------------------------------------------------------------

myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
# The kernels myst-nb starts inherit this environment: the notebooks run small.
os.environ.setdefault("PYMC_PCRP_NB_QUICK", "1")
nb_execution_mode = "off" if os.environ.get("PYMC_PCRP_DOCS_EXECUTE") == "0" else "cache"
nb_execution_timeout = 600  # seconds per cell; a quick notebook takes a few minutes in all
nb_execution_raise_on_error = True
nb_merge_streams = True

# -- autodoc, autosummary, numpydoc ----------------------------------------------------

autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "none"  # numpydoc parameter lists carry the types
autosummary_generate = False  # the API pages are written out in docs/api/
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False

# -- intersphinx (needs the network, so opt-in) ----------------------------------------

if os.environ.get("PYMC_PCRP_DOCS_INTERSPHINX") == "1":
    extensions.append("sphinx.ext.intersphinx")
    intersphinx_mapping = {
        "python": ("https://docs.python.org/3", None),
        "numpy": ("https://numpy.org/doc/stable", None),
        "pymc": ("https://www.pymc.io/projects/docs/en/stable", None),
        "arviz": ("https://python.arviz.org/en/stable", None),
        "xarray": ("https://docs.xarray.dev/en/stable", None),
        "joblib": ("https://joblib.readthedocs.io/en/stable", None),
        "distributed": ("https://distributed.dask.org/en/stable", None),
    }

# -- HTML ------------------------------------------------------------------------------

html_theme = "pydata_sphinx_theme"
html_title = "pymc_pcrp"
html_static_path = ["_static"]
html_css_files = ["custom.css"]
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_sidebars = {"index": [], "getting_started": []}

# -- The API reference must cover the public API ---------------------------------------

# Every name in the __all__ of these modules must be documented somewhere in
# docs/api/ (under its public name or its defining module); a missing one is a
# warning, so `sphinx-build -W` fails when an export is added without docs. The
# modules that only re-export names defined and checked elsewhere (pymc_pcrp.stats,
# and the 0.2.0 names pymc_pcrp.diagnostics, .metrics and .model_selection) are not
# listed.
API_MODULES = [
    "pymc_pcrp",
    "pymc_pcrp.cli",
    "pymc_pcrp.cli.cluster",
    "pymc_pcrp.cli.reproduce",
    "pymc_pcrp.datasets",
    "pymc_pcrp.distributed",
    "pymc_pcrp.distributions",
    "pymc_pcrp.fitting",
    "pymc_pcrp.plots",
    "pymc_pcrp.posterior",
    "pymc_pcrp.posterior.ppc",
    "pymc_pcrp.posterior.prediction",
    "pymc_pcrp.posterior.similarity",
    "pymc_pcrp.prior",
    "pymc_pcrp.stats.chain_comparison",
    "pymc_pcrp.stats.convergence",
    "pymc_pcrp.stats.cross_validation",
    "pymc_pcrp.stats.metrics",
    "pymc_pcrp.stats.power_choice",
    "pymc_pcrp.step_methods",
]
_NOT_OBJECTS = {"__version__"}


def _check_api_coverage(app, env) -> None:
    from sphinx.util import logging

    logger = logging.getLogger(__name__)
    documented = set(env.get_domain("py").objects)
    for module_name in API_MODULES:
        module = importlib.import_module(module_name)
        for name in getattr(module, "__all__", []):
            if name in _NOT_OBJECTS:
                continue
            obj = getattr(module, name)
            candidates = {f"{module_name}.{name}", f"pymc_pcrp.{name}"}
            defining = getattr(obj, "__module__", None)
            if isinstance(defining, str):
                candidates.add(f"{defining}.{getattr(obj, '__qualname__', name)}")
            if not candidates & documented:
                logger.warning(
                    "%s.%s is public (in __all__) but not documented in docs/api/",
                    module_name,
                    name,
                )


def setup(app):
    """Register the API coverage check."""
    app.connect("env-check-consistency", _check_api_coverage)
