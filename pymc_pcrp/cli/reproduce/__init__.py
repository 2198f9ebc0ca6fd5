"""Re-run the experiments of Lu, Li & Dunson (2018) and set our numbers beside theirs.

:func:`run_reproduction` is what ``python -m pymc_pcrp reproduce --out DIR``
calls. For each data set of the paper it

1. chooses the pCRP power ``r`` by cross-validation on separate data
   (:func:`pymc_pcrp.stats.cross_validation.cross_validate_power`), as the paper does;
2. clusters the data at each of the paper's sample sizes with the three methods
   of the paper: **CRP-Oracle** (``r = 1``, ``alpha = K_true / log N``), **CRP**
   (``r = 1``, ``alpha = 1``) and **pCRP** (``alpha = 1``, the cross-validated
   ``r``);
3. scores every kept draw against the true partition (NMI, VI, ``K``) and
   writes ``DIR/tables.md`` with the paper's reported values
   (:data:`PAPER_TABLE_1`, :data:`PAPER_TABLE_2`, :data:`PAPER_OLD_FAITHFUL`,
   :data:`PAPER_SETTINGS`, :data:`PAPER_K_PROBABILITIES`) side by side with
   ours, a mechanical check of each of the paper's claims, and every figure
   as a PNG in ``DIR``. The whole :class:`ReproductionResult` is also pickled
   to ``DIR/result.pkl``, so the tables can be rendered again with
   :func:`format_tables` without re-running the fits.

Everything the paper leaves open is settled once in :data:`FULL_PROTOCOL` and
in the data-set builders below, and written into ``tables.md``:

* **Sampler.** The paper runs one chain of 20,000 sweeps, discards 10,000 and
  keeps every fifth. Here each of two chains does exactly that (``tune=2000``
  and ``draws=2000`` draws of ``sweeps_per_draw=5`` sweeps), in parallel on two
  cores, so every table row pools 4,000 kept draws and the R-hat and effective
  sample size of ``K`` come for free. Chains start from random partitions
  (:class:`~pymc_pcrp.PCRPGibbs` ``init="random"``) and use the single-point
  collapsed Gibbs sweep of the paper's Algorithm 1 (``split_merge=0``). Both are
  passed explicitly to every fit, cross-validation fits included
  (:data:`ALGORITHM_1`), whatever the step's defaults are.
* **Prior.** :meth:`NIWPrior.from_data(X, scale=0.1) <pymc_pcrp.NIWPrior.from_data>`
  (:func:`paper_prior`), a fixed prior, passed explicitly to every fit. That
  prior rescales with the data, so the posterior does not depend on a
  per-feature rescaling of the data.
* **The default sampler beside it.** For the pCRP at the cross-validated ``r``,
  one more fit per size uses :class:`~pymc_pcrp.PCRPGibbs`'s *default* options
  (:func:`default_step_options`, read from its signature at run time and named
  in the tables), with the same data, prior, ``r``, seed and sweeps; its rows
  (:data:`DEFAULT_MOVES`) sit beside the paper's in ``tables.md`` and in a
  table of their own with R-hat of ``K``. The paper's claims are checked on
  the Algorithm 1 fits only.
* **Data.** Sim 1 and Sim 2 as :func:`pymc_pcrp.datasets.sim1` / :func:`pymc_pcrp.datasets.sim2`
  define them (raw, one dimension); the digits 1-4 in the standardised 2-D
  spectral embedding of :func:`pymc_pcrp.datasets.load_digits_1to4`; Old Faithful
  standardised (its two columns are in minutes of different magnitude, and the
  paper shows it standardised), with the "manual clustering" taken to be the
  classical split at an eruption duration of 3 minutes.
* **Cross-validation.** Grid ``r = 1.00, 1.05, ..., 1.50``; each grid point is
  fitted with two chains of 10,000 sweeps (5,000 burn-in, every fifth kept),
  half the main protocol; grid points run in parallel. Training and held-out
  data: Sim 1/2 an independent sample (another seed) of 200 + 200 points
  (the paper trains on 200); digits a disjoint sample of 1,000 images split in
  half (the paper's "different set of 1000 samples"); Old Faithful 100 randomly
  chosen eruptions split in half, the other 172 being the ones clustered.

:data:`QUICK_PROTOCOL` runs the same pipeline with small data and few sweeps.
"""

from pymc_pcrp.cli.reproduce.moves import (
    ALGORITHM_1,
    DEFAULT_MOVES,
    PRIOR_SCALE,
    default_step_options,
    paper_prior,
)
from pymc_pcrp.cli.reproduce.paper_values import (
    K_TRUE,
    METHODS,
    PAPER_K_PROBABILITIES,
    PAPER_OLD_FAITHFUL,
    PAPER_SETTINGS,
    PAPER_TABLE_1,
    PAPER_TABLE_2,
    TABLE_TITLES,
    PaperRow,
)
from pymc_pcrp.cli.reproduce.protocol import (
    FULL_PROTOCOL,
    QUICK_PROTOCOL,
    CVRun,
    Protocol,
    ReproductionResult,
    RunResult,
)
from pymc_pcrp.cli.reproduce.report import format_tables
from pymc_pcrp.cli.reproduce.run import run_reproduction

__all__ = [
    "ALGORITHM_1",
    "DEFAULT_MOVES",
    "FULL_PROTOCOL",
    "K_TRUE",
    "METHODS",
    "PAPER_K_PROBABILITIES",
    "PAPER_OLD_FAITHFUL",
    "PAPER_SETTINGS",
    "PAPER_TABLE_1",
    "PAPER_TABLE_2",
    "PRIOR_SCALE",
    "QUICK_PROTOCOL",
    "TABLE_TITLES",
    "CVRun",
    "PaperRow",
    "Protocol",
    "ReproductionResult",
    "RunResult",
    "default_step_options",
    "format_tables",
    "paper_prior",
    "run_reproduction",
]
