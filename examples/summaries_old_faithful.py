"""Posterior similarity matrix and loss-based point estimates on Old Faithful.

Run from the repository root (or anywhere after ``pip install .``)::

    python examples/summaries_old_faithful.py --out docs/summaries_old_faithful_psm.png
    python examples/summaries_old_faithful.py --speed   # also time N = 2000, 1000 draws

It fits the pCRP mixture (r = 1.11) to Old Faithful, computes the posterior
similarity matrix, the VI and Binder point estimates, prints their cluster sizes,
expected losses and timings, and saves the similarity plot next to a scatter of
the data coloured by the VI estimate. With ``--speed`` it also fits N = 2000
synthetic points and times the same summaries on 1000 draws. Every number in
docs/summaries.md comes from this script.
"""

import argparse
import os
import time

import matplotlib
import numpy as np

import pymc_pcrp as pcrp


def timed(fn, *args, **kwargs):
    start = time.perf_counter()
    result = fn(*args, **kwargs)
    return result, time.perf_counter() - start


def warm_up():
    """Compile (or load from numba's cache) every kernel before anything is timed."""
    tiny = np.array([[0, 0, 1, 1], [0, 1, 1, 1], [0, 1, 2, 3]])
    pcrp.posterior_similarity(tiny)
    pcrp.posterior_similarity(tiny, dtype=np.float32)
    pcrp.point_estimate(tiny, random_seed=0)
    pcrp.point_estimate(tiny, loss="binder", random_seed=0)


def describe(name, est):
    hits = int(np.sum(est.run_losses <= est.expected_loss + 1e-9))
    order = np.argsort(-est.sizes, kind="stable")
    print(
        f"  {name}: {est.n_clusters} clusters, sizes (largest first) {est.sizes[order].tolist()}, "
        f"expected loss {est.expected_loss:.4f}, best reached by {hits}/{est.run_losses.size} runs"
    )


def k_table(idata):
    k = idata.posterior["n_clusters"].values.ravel()
    values, counts = np.unique(k, return_counts=True)
    return ", ".join(f"K={v}: {c / k.size:.3f}" for v, c in zip(values, counts, strict=True))


def old_faithful(out, seed):
    import matplotlib.pyplot as plt

    x = pcrp.datasets.load_old_faithful()
    print(
        f"pcrp.fit(load_old_faithful(), power=1.11, draws=1000, tune=500, chains=2, "
        f"random_seed={seed})"
    )
    idata, t_fit = timed(pcrp.fit, x, power=1.11, draws=1000, tune=500, chains=2, random_seed=seed)
    n_draws = idata.posterior.sizes["chain"] * idata.posterior.sizes["draw"]
    print(f"  fit: {t_fit:.1f} s; N = {x.shape[0]}, {n_draws} draws")
    print(f"  posterior of K: {k_table(idata)}")

    psm, t_psm = timed(pcrp.posterior_similarity, idata)
    print(f"posterior_similarity: {t_psm * 1e3:.1f} ms, shape {psm.shape}, dtype {psm.dtype}")
    off = psm[np.triu_indices_from(psm, k=1)]
    middle = np.mean((off >= 0.01) & (off <= 0.99))
    print(
        f"  off-diagonal entries: {np.mean(off > 0.99):.3f} above 0.99, "
        f"{np.mean(off < 0.01):.3f} below 0.01, {middle:.3f} in between"
    )

    vi, t_vi = timed(pcrp.point_estimate, idata, loss="vi", random_seed=seed)
    print(f"point_estimate(loss='vi', random_seed={seed}): {t_vi:.2f} s, {vi.n_draws} draws used")
    describe("VI", vi)
    binder, t_binder = timed(pcrp.point_estimate, idata, loss="binder", random_seed=seed)
    print(f"point_estimate(loss='binder', random_seed={seed}): {t_binder:.2f} s")
    describe("Binder", binder)
    same = np.array_equal(vi.labels, binder.labels)
    print(f"  VI and Binder estimates identical: {same}")
    print(
        f"  cross-check: expected VI of the Binder estimate "
        f"{pcrp.posterior.expected_loss(binder.labels, idata):.4f}; expected Binder loss of the VI "
        f"estimate {pcrp.posterior.expected_loss(vi.labels, idata, loss='binder'):.4f}"
    )
    small = [k for k in range(binder.n_clusters) if binder.sizes[k] < 5]
    for k in small:
        rows = np.flatnonzero(binder.labels == k)
        print(
            f"  Binder cluster of size {rows.size}: rows {rows.tolist()}, data "
            f"{x[rows].tolist()}, VI labels {vi.labels[rows].tolist()}, mean similarity to "
            f"their VI cluster (self included) "
            f"{[round(float(psm[r, vi.labels == vi.labels[r]].mean()), 3) for r in rows]}"
        )
    again = pcrp.point_estimate(idata, loss="vi", random_seed=seed)
    print(f"  same seed, same VI labels: {np.array_equal(again.labels, vi.labels)}")

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5), layout="constrained")
    pcrp.plots.plot_similarity(psm, labels=vi, ax=axes[0])
    axes[0].set_title("Old Faithful: posterior similarity, sorted by the VI estimate")
    for k in range(vi.n_clusters):
        pts = x[vi.labels == k]
        axes[1].scatter(pts[:, 0], pts[:, 1], s=12, label=f"cluster {k} (n={len(pts)})")
    odd = np.isin(binder.labels, small)
    if odd.any():
        axes[1].scatter(
            x[odd, 0],
            x[odd, 1],
            s=60,
            marker="x",
            color="black",
            label="own cluster in the Binder estimate",
        )
    axes[1].set(
        title="VI point estimate",
        xlabel="eruption duration (min)",
        ylabel="waiting time (min)",
    )
    axes[1].legend(fontsize="small")
    fig.savefig(out, dpi=110)
    plt.close(fig)
    print(f"saved {out}")


def speed(seed):
    rng = np.random.default_rng(seed)
    n = 2000
    centres = np.array([[-6.0, -6.0], [-6.0, 6.0], [6.0, -6.0], [6.0, 6.0]])
    x = centres[rng.integers(0, 4, size=n)] + rng.standard_normal((n, 2))
    print(
        f"\nSpeed: N = {n} synthetic points (four unit Gaussians at (+-6, +-6), seed {seed}); "
        "pcrp.fit(power=1.11, draws=500, tune=200, chains=2)"
    )
    idata, t_fit = timed(pcrp.fit, x, power=1.11, draws=500, tune=200, chains=2, random_seed=seed)
    print(f"  fit: {t_fit:.1f} s; posterior of K: {k_table(idata)}")
    draws = pcrp.posterior.label_draws(idata)
    print(f"  label draws: shape {draws.shape}")
    for dtype in (np.float64, np.float32):
        psm, t = timed(pcrp.posterior_similarity, draws, dtype=dtype)
        print(
            f"  posterior_similarity(dtype={dtype.__name__}): {t:.2f} s, {psm.nbytes / 1e6:.0f} MB"
        )
    vi, t = timed(pcrp.point_estimate, draws, loss="vi", random_seed=seed)
    print(f"  point_estimate(loss='vi'): {t:.2f} s ({vi.n_draws} draws)")
    describe("VI", vi)
    binder, t = timed(pcrp.point_estimate, draws, loss="binder", random_seed=seed)
    print(f"  point_estimate(loss='binder') (includes computing the PSM): {t:.2f} s")
    describe("Binder", binder)
    _, t = timed(pcrp.point_estimate, psm, loss="binder", random_seed=seed)
    print(f"  point_estimate(psm (float32), loss='binder'): {t:.2f} s")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="summaries_old_faithful_psm.png")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--speed", action="store_true", help="also time N = 2000, 1000 draws")
    args = parser.parse_args()
    matplotlib.use("Agg")
    print(
        f"pymc_pcrp {pcrp.__version__}; os.cpu_count() = {os.cpu_count()}; load {os.getloadavg()}"
    )
    warm_up()
    old_faithful(args.out, args.seed)
    if args.speed:
        speed(args.seed)


if __name__ == "__main__":
    main()
