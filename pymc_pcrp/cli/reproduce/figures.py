"""The paper's figures drawn from a reproduction run."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from pymc_pcrp.cli.reproduce.data import (
    PaperDataSet,
    PaperSample,
)
from pymc_pcrp.cli.reproduce.moves import paper_prior
from pymc_pcrp.cli.reproduce.paper_values import (
    METHODS,
)
from pymc_pcrp.cli.reproduce.protocol import (
    CVRun,
    Protocol,
    ReproductionResult,
    RunResult,
)
from pymc_pcrp.datasets import SIM1_PARAMS, SIM2_PARAMS

if TYPE_CHECKING:
    import arviz as az

    from matplotlib.figure import Figure


def _new_figure(ncols: int, nrows: int = 1, width: float = 4.2, height: float = 3.4):
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width * ncols, height * nrows), layout="constrained")
    axes = fig.subplots(nrows, ncols, squeeze=False)
    return fig, axes


def _save(fig: Figure, path: Path, result: ReproductionResult) -> None:
    fig.savefig(path, dpi=110)
    result.figures.append(path)


def _true_density(params, grid: np.ndarray) -> np.ndarray:
    from scipy.stats import norm

    return sum(
        w * norm.pdf(grid, m, s)
        for w, m, s in zip(params.weights, params.means, params.sds, strict=True)
    )


def figures_for_sample(
    data: PaperDataSet,
    sample: PaperSample,
    fits: dict[str, tuple[RunResult, az.InferenceData, np.ndarray]],
    out: Path,
    protocol: Protocol,
    result: ReproductionResult,
) -> None:
    """Draw the figures of one sample of a data set (posterior of K, cluster plots) into ``out``."""
    from pymc_pcrp.plots import (
        plot_cluster_sizes,
        plot_clusters_2d,
        plot_k_trace,
        plot_predictive_density,
    )

    tag = f"{data.key}_n{sample.n}"
    fig, axes = _new_figure(len(fits))
    plot_k_trace({m: run.k_draws for m, (run, _, _) in fits.items()}, ax=list(axes[0]))
    fig.suptitle(f"Fig. 3: trace of K, {data.name}, N = {sample.n}")
    _save(fig, out / f"fig3_k_trace_{tag}.png", result)

    if sample.X.shape[1] == 1:
        params = {"sim1": SIM1_PARAMS, "sim2": SIM2_PARAMS}[data.key]
        fig, axes = _new_figure(len(fits), width=4.6)
        for ax, (method, (run, idata, _)) in zip(axes[0], fits.items(), strict=True):
            plot_predictive_density(
                idata,
                power=run.power,
                alpha=run.alpha,
                max_draws=protocol.density_draws,
                ax=ax,
            )
            low, high = ax.get_xlim()
            grid = np.linspace(low, high, 400)
            ax.plot(grid, _true_density(params, grid), color="k", ls=":", label="true density")
            ax.legend(fontsize="x-small")
            ax.set_title(f"{method} (alpha = {run.alpha:.2f}, r = {run.power:g})")
        fig.suptitle(
            f"Fig. 4: posterior predictive density, {data.name}, N = {sample.n} "
            "(dashed: weighted components of a representative draw)"
        )
        _save(fig, out / f"fig4_density_{tag}.png", result)
    else:
        prior = paper_prior(sample.X)
        truth_name = "Manual" if data.key == "old_faithful" else "True digits"
        axis_names = (
            ("eruption duration (z-score)", "waiting time (z-score)")
            if data.key == "old_faithful"
            else ("spectral coordinate 1", "spectral coordinate 2")
        )
        panels = {truth_name: sample.labels}
        panels.update({m: labels for m, (_, _, labels) in fits.items()})
        fig, axes = _new_figure(len(panels), width=3.8, height=3.6)
        for ax, (name, labels) in zip(axes[0], panels.items(), strict=True):
            plot_clusters_2d(sample.X, labels, prior=prior, ax=ax)
            k = np.unique(labels).size
            ax.set_title(f"{name} (K = {k})")
            ax.set_xlabel(axis_names[0])
            ax.set_ylabel(axis_names[1])
        fig.suptitle(f"Fig. 6: {data.name}, N = {sample.n}: point estimates with 2-sd NIW ellipses")
        _save(fig, out / f"fig6_clusters_{tag}.png", result)

        fig, axes = _new_figure(1, width=6.0, height=3.6)
        plot_cluster_sizes(panels, ax=axes[0, 0])
        axes[0, 0].set_title(f"Fig. 7: cluster sizes, {data.name}, N = {sample.n}")
        _save(fig, out / f"fig7_cluster_sizes_{tag}.png", result)


def figures_for_dataset(
    data: PaperDataSet, result: ReproductionResult, out: Path, cv: CVRun | None
) -> None:
    """Draw a data set's summary figures (K posteriors across sizes, the CV curve) into ``out``."""
    from pymc_pcrp.plots import plot_cv_curve, plot_k_posterior

    fig, axes = _new_figure(len(data.samples))
    for ax, sample in zip(axes[0], data.samples, strict=True):
        ks = {m: result.run(data.name, sample.n, m).k_draws for m in METHODS}
        plot_k_posterior(ks, ax=ax)
        ax.axvline(data.k_true, color="0.5", lw=0.8, ls=":")
        ax.set_title(f"{data.name}, N = {sample.n}")
    fig.suptitle(f"Fig. 5: posterior of K (dotted line: true K = {data.k_true})")
    _save(fig, out / f"fig5_k_posterior_{data.key}.png", result)

    if cv is not None:
        fig, axes = _new_figure(1, width=5.2, height=3.6)
        plot_cv_curve(cv.result, ax=axes[0, 0], show_k=True)
        axes[0, 0].set_title(
            f"Fig. 2: CV of r, {data.name} ({cv.n_train} train / {cv.n_test} held out)"
        )
        _save(fig, out / f"fig2_cv_{data.key}.png", result)
