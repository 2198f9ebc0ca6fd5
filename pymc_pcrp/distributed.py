"""Run chains as independent jobs, on local processes or on a Dask cluster.

MCMC chains do not talk to each other, and neither do the grid points of
:func:`~pymc_pcrp.stats.cross_validation.cross_validate_power`. Both can therefore run as separate
:mod:`joblib` jobs, and joblib hands jobs to whatever backend is active: its
own worker processes (``loky``, the default), or the workers of a Dask cluster
after ``joblib.parallel_config(backend="dask")`` with a
``dask.distributed.Client`` connected. This module adds no scheduler of its own.

* :func:`fit_parallel` is :func:`~pymc_pcrp.fit` with one job per chain. The
  chains are seeded exactly as ``pm.sample`` seeds them, so its result is the
  same as ``pymc_pcrp.fit(X, chains=chains, random_seed=random_seed)``, on any
  backend and for any number of workers.
* :func:`~pymc_pcrp.stats.cross_validation.cross_validate_power` with ``n_jobs=None``
  already runs its grid points through ``joblib.Parallel``; inside
  ``joblib.parallel_config(backend="dask")`` they run on the cluster.

Examples
--------
On the local machine, with two worker processes::

    import joblib
    from dask.distributed import Client, LocalCluster
    import pymc_pcrp as pcrp
    from pymc_pcrp.distributed import fit_parallel

    X = pcrp.datasets.load_old_faithful()
    with LocalCluster(n_workers=2, threads_per_worker=1) as cluster, Client(cluster):
        with joblib.parallel_config(backend="dask"):
            idata = fit_parallel(X, power=1.11, chains=4, random_seed=1)
"""

from __future__ import annotations

import arviz as az
import numpy as np

from joblib import Parallel, delayed
from pymc.stats.convergence import log_warnings

from pymc_pcrp._validation import check_data
from pymc_pcrp.fitting import build_model, fit
from pymc_pcrp.step_methods._convergence import run_convergence_checks

__all__ = ["chain_seeds", "fit_parallel"]

_MODEL_ARGS = ("power", "alpha", "prior", "covariance")


def chain_seeds(random_seed, chains: int) -> list[np.random.SeedSequence]:
    """Seed sequences of the chains that ``pm.sample(random_seed=..., chains=...)`` runs.

    ``pm.sample`` turns its ``random_seed`` into a generator and spawns one child
    generator per chain (``get_random_generator(random_seed).spawn(chains)``).
    Chain ``i`` of that call is reproduced by a one-chain ``pm.sample`` whose
    ``random_seed`` is ``numpy.random.default_rng(chain_seeds(random_seed,
    chains)[i])``: its single spawned child is the same seed sequence.

    Parameters
    ----------
    random_seed : int, numpy.random.SeedSequence, numpy.random.Generator or None
        The seed of the whole run. ``None`` draws fresh entropy once, so that
        the chains are still distinct children of one seed sequence. A
        generator is not advanced.
    chains : int
        Number of chains, at least 1.

    Returns
    -------
    list of numpy.random.SeedSequence
        One per chain. Each is the parent of the chain's stream, not the stream
        itself: pass it through ``numpy.random.default_rng`` to ``pm.sample``.
    """
    chains = _check_chains(chains)
    if isinstance(random_seed, np.random.Generator):
        parent = random_seed.bit_generator.seed_seq
        if not isinstance(parent, np.random.SeedSequence):
            raise ValueError(
                "Argument 'random_seed' is a Generator without a numpy.random.SeedSequence; "
                "build it with numpy.random.default_rng(seed)."
            )
    elif isinstance(random_seed, np.random.SeedSequence):
        parent = random_seed
    elif random_seed is None or _is_integer(random_seed):
        parent = np.random.SeedSequence(None if random_seed is None else int(random_seed))
    else:
        raise ValueError(
            "Argument 'random_seed' must be an int, a numpy.random.SeedSequence, a "
            f"numpy.random.Generator or None, got {type(random_seed).__name__}."
        )
    return [
        np.random.SeedSequence(
            parent.entropy,
            spawn_key=parent.spawn_key,
            pool_size=parent.pool_size,
            n_children_spawned=parent.n_children_spawned + i,
        )
        for i in range(chains)
    ]


def fit_parallel(
    X,
    *,
    chains: int = 4,
    random_seed=None,
    n_jobs: int | None = None,
    compute_convergence_checks: bool = True,
    **fit_kwargs,
) -> az.InferenceData:
    """Sample like :func:`~pymc_pcrp.fit`, one joblib job per chain.

    Each chain is a one-chain :func:`~pymc_pcrp.fit` call run by
    :class:`joblib.Parallel`; the chains are joined along ``chain`` with
    :func:`arviz.concat`. The seeds come from :func:`chain_seeds`, so the
    posterior and the sample stats equal those of
    ``pymc_pcrp.fit(X, chains=chains, random_seed=random_seed, **fit_kwargs)``
    whatever the backend and the number of workers. Of the run-time
    attributes, ``sampling_time`` is the sum over the chains (CPU time rather
    than wall time when they run in parallel); the others are the first chain's.

    Parameters
    ----------
    X : array_like, shape (N, D) or (N,)
        Data.
    chains : int, default=4
        Number of chains, one job each.
    random_seed : int, numpy.random.SeedSequence, numpy.random.Generator or None
        Seed of the whole run (see :func:`chain_seeds`).
    n_jobs : int or None, default=None
        Passed to :class:`joblib.Parallel`. ``None`` defers to an enclosing
        ``joblib.parallel_config`` and otherwise means one job at a time;
        ``-1`` uses every CPU with the default ``loky`` backend. Inside
        ``joblib.parallel_config(backend="dask")`` the chains run on the
        workers of the active ``dask.distributed.Client``.
    compute_convergence_checks : bool, default=True
        After joining the chains, log PyMC's R-hat and ESS warnings as
        ``pm.sample`` does (about the number of clusters and the log joint
        density, see :mod:`pymc_pcrp`). The single-chain jobs do not check.
    **fit_kwargs
        Any other argument of :func:`~pymc_pcrp.fit` (``power``, ``alpha``,
        ``prior``, ``draws``, ``tune``, ``sweeps_per_draw``, ``init``, or
        ``pm.sample`` options); not ``cores``, since each job samples one chain.

    Returns
    -------
    arviz.InferenceData
        As :func:`~pymc_pcrp.fit`, with chains ``0..chains-1``.

    Examples
    --------
    >>> import joblib
    >>> import pymc_pcrp as pcrp
    >>> X = pcrp.datasets.load_old_faithful()
    >>> from pymc_pcrp.distributed import fit_parallel
    >>> with joblib.parallel_config(backend="loky", n_jobs=2):  # doctest: +SKIP
    ...     idata = fit_parallel(X, power=1.11, chains=4, random_seed=1)
    """
    if "cores" in fit_kwargs:
        raise ValueError("Argument 'cores' is not accepted: each job samples one chain.")
    x = check_data(X, "X")
    seeds = chain_seeds(random_seed, chains)
    # Build the model here too: bad arguments fail at once, not in every job.
    model = build_model(x, **{k: fit_kwargs[k] for k in _MODEL_ARGS if k in fit_kwargs})
    parts = Parallel(n_jobs=n_jobs)(delayed(_fit_chain)(x, seed, fit_kwargs) for seed in seeds)
    idata = parts[0] if len(parts) == 1 else _join_chains(parts)
    if compute_convergence_checks and not fit_kwargs.get("quiet", False):
        log_warnings(run_convergence_checks(idata, model))
    return idata


def _join_chains(parts: list) -> az.InferenceData:
    """Concatenate one-chain results along ``chain``; ``sampling_time`` becomes the total."""
    idata = az.concat(*parts, dim="chain")
    total = float(sum(part.posterior.attrs.get("sampling_time", 0.0) for part in parts))
    for group in idata.groups():
        attrs = idata[group].attrs
        # Bookkeeping az.concat adds when joining; the attrs of the first chain remain.
        attrs.pop("previous_created_at", None)
        attrs.pop("combined_sampling_time", None)
        if "sampling_time" in attrs:
            attrs["sampling_time"] = total
    return idata


def _fit_chain(x: np.ndarray, seed: np.random.SeedSequence, fit_kwargs: dict):
    """Sample one chain: what ``pm.sample`` does for chain ``i`` of a many-chain run."""
    return fit(
        x,
        chains=1,
        cores=1,
        random_seed=np.random.default_rng(seed),
        compute_convergence_checks=False,
        **fit_kwargs,
    )


def _is_integer(value) -> bool:
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def _check_chains(chains) -> int:
    if not _is_integer(chains) or chains < 1:
        raise ValueError(f"Argument 'chains' must be a positive integer, got {chains!r}.")
    return int(chains)
