"""Reading label draws and observed data back out of an ``InferenceData``.

Every posterior summary in the package (metrics, similarity matrices, point
estimates, predictions) starts from the same two arrays: the label draws of a
:class:`~pymc_pcrp.PowerCRP` variable and the data it clusters. This module is
the one place that finds them.
"""

from __future__ import annotations

import arviz as az
import numpy as np

__all__ = ["draw_indices", "label_draws", "observed_points"]


def label_draws(idata: az.InferenceData, var_name: str | None = None) -> np.ndarray:
    """Label draws of a pCRP variable, shape ``(chain, draw, N)``, dtype ``int64``.

    Parameters
    ----------
    idata : arviz.InferenceData
        Output of ``pm.sample`` (or :func:`pymc_pcrp.fit`).
    var_name : str, optional
        Name of the label variable. If omitted, the posterior must hold exactly
        one integer variable with a trailing dimension over the points besides the
        cluster counts; ``"z"`` is tried first.

    Raises
    ------
    ValueError
        If there is no posterior group, the variable is absent (for example
        because ``pm.sample(var_names=...)`` left it out), or the choice is
        ambiguous.
    """
    if "posterior" not in idata.groups():
        raise ValueError("Argument 'idata' has no posterior group; pass the output of pm.sample.")
    post = idata.posterior
    if var_name is None:
        candidates = [
            name
            for name, da in post.data_vars.items()
            if da.ndim == 3 and np.issubdtype(da.dtype, np.integer)
        ]
        if "z" in candidates:
            var_name = "z"
        elif len(candidates) == 1:
            var_name = candidates[0]
        elif not candidates:
            raise ValueError(
                "idata.posterior holds no label vector (an integer variable with dims "
                "(chain, draw, N)). Was it dropped with pm.sample(var_names=...)? Keep the "
                "labels to use this function."
            )
        else:
            raise ValueError(
                f"idata.posterior holds several label vectors {candidates}; pass var_name."
            )
    if var_name not in post:
        raise ValueError(
            f"Argument 'var_name': '{var_name}' is not in idata.posterior "
            f"(it has {sorted(post.data_vars)})."
        )
    values = np.asarray(post[var_name].values)
    if values.ndim != 3 or not np.issubdtype(values.dtype, np.integer):
        raise ValueError(
            f"'{var_name}' is not a label vector: expected integer draws of shape "
            f"(chain, draw, N), got dtype {values.dtype} and shape {values.shape}."
        )
    return values.astype(np.int64, copy=False)


def observed_points(idata: az.InferenceData, var_name: str | None = None) -> np.ndarray:
    """Return the clustered data from ``idata.observed_data`` as a float64 ``(N, D)`` array.

    Parameters
    ----------
    idata : arviz.InferenceData
    var_name : str, optional
        Name of the observed variable; needed only when there are several.
    """
    if "observed_data" not in idata.groups():
        raise ValueError(
            "Argument 'idata' has no observed_data group; sample a model with an observed "
            "NIWMixture (pm.sample stores it by default)."
        )
    obs = idata.observed_data
    names = list(obs.data_vars)
    if var_name is None:
        if len(names) != 1:
            raise ValueError(f"idata.observed_data holds {names}; pass var_name.")
        var_name = names[0]
    if var_name not in obs:
        raise ValueError(f"Argument 'var_name': '{var_name}' is not in idata.observed_data.")
    x = np.asarray(obs[var_name].values, dtype=np.float64)
    return x[:, None] if x.ndim == 1 else x


def draw_indices(n_chains: int, n_draws: int, max_draws: int | None) -> np.ndarray:
    """Flat indices into ``(chain, draw)`` of the draws to use, evenly spaced."""
    total = n_chains * n_draws
    if max_draws is None or max_draws >= total:
        return np.arange(total)
    if int(max_draws) != max_draws or max_draws < 1:
        raise ValueError(f"Argument 'max_draws' must be a positive integer, got {max_draws}.")
    return np.unique(np.linspace(0, total - 1, int(max_draws)).round().astype(np.int64))
