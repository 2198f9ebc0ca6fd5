"""How :class:`~pymc_pcrp.PCRPGibbs` reads its model and builds its chain's kernel inputs.

:class:`ModelInputs` locates the likelihood of a ``PowerCRP`` (and refuses what
the collapsed update cannot handle), reads ``alpha``, ``power``, the data
(observed, or latent values from the point) and the NIW parameters, and rebuilds
the centred data, parameters and sweep tables only when one of them changed. The
types it builds and caches are in :mod:`pymc_pcrp.sampler.inputs`; the cluster
family that builds them is chosen here (:func:`likelihood_family`).
"""

from __future__ import annotations

import math

import numpy as np

from pytensor.graph.traversal import ancestors

from pymc_pcrp._kernels.hyper import REBUILT
from pymc_pcrp._kernels.state import make_params
from pymc_pcrp._kernels.sweep import sweep_tables
from pymc_pcrp._validation import check_data, check_prior_scale, rebuild_message
from pymc_pcrp.distributions.niw import NIWMixtureRV
from pymc_pcrp.distributions.normaliser import is_constant, is_fixed, log_normaliser
from pymc_pcrp.distributions.table import TableMixtureRV
from pymc_pcrp.sampler.families import ClusterFamily, family_for
from pymc_pcrp.sampler.inputs import REFRESH_EVERY, InputCache, SweepInputs, same_objects
from pymc_pcrp.step_methods._readers import point_reader, value_reader

__all__ = ["ModelInputs", "likelihood_family"]


def likelihood_family(niw, latent: str | None) -> ClusterFamily:
    """Return the cluster family of the labels' NIWMixture ``niw`` (``None``: none, full).

    The family is named by the op's ``covariance``. A family that cannot have
    latent values (``latent`` is their name, ``None`` when observed) raises
    ``NotImplementedError``.
    """
    op = getattr(getattr(niw, "owner", None), "op", None)
    family = family_for(getattr(op, "covariance", "full") if op is not None else "full")
    if latent is not None and not family.supports_latent:
        raise NotImplementedError(
            f"The NIWMixture '{niw.name}' has latent values and covariance='{family.name}'; "
            "PCRPGibbs supports latent values with the full-covariance family only so far."
        )
    return family


class ModelInputs:
    """What one ``PowerCRP`` variable's step reads from its model, and the inputs it builds.

    Parameters
    ----------
    model : pm.Model
    rv : TensorVariable
        The ``PowerCRP`` random variable.
    name : str
        The name of its value variable in the point.
    compile_kwargs : dict, optional
        Passed to the compiled readers of a random ``alpha`` or power.

    Attributes
    ----------
    n : int
        The number of labels.
    family : ClusterFamily
        The cluster family of the labels' NIWMixture (the full one without).
    alpha : AlphaUpdate or None
        The ``alpha`` the step owns, set by the step (``None``: fixed, or another's).
    chain : Chain
        The chain whose scale bookkeeping the inputs inform, set by the step.
    """

    def __init__(self, model, rv, name: str, compile_kwargs=None):
        self.n = int(rv.owner.op.dist_params(rv.owner)[-1].eval())
        self.name = name
        self.prior_readers, (alpha_random, power_random) = self.prior_value_readers(
            model, rv, compile_kwargs
        )
        # a random alpha or power is read from the point at every step (PCRPHyper draws it)
        self.alpha_is_random = alpha_random or power_random
        self.power_is_random = power_random
        # the model's logp holds -log Z_N unless alpha and power are constants (PowerCRP.logp):
        # random ones, and pm.Data or shared ones, which pm.set_data may change
        self.normaliser_in_logp = not all(
            is_constant(param) for param in rv.owner.op.dist_params(rv.owner)[:2]
        )
        self._log_z: tuple | None = None  # (alpha, power, log Z_N) of the last data values
        self.latest: np.ndarray | None = None  # latent values from the last point
        self.data_readers, self.niw = self.find_likelihood(model, rv)
        self.latent = None if self.niw is None else self.latent_name(model, self.niw)
        # the cluster family of the NIWMixture (its covariance), which picks the kernels
        self.family = likelihood_family(self.niw, self.latent)
        self.cache: InputCache | None = None  # see arrays
        self.alpha = None
        self.alpha_draws = 0  # owned-alpha draws since the new-cluster weights were recomputed
        self.chain = None

    def log_normaliser(self, params) -> float:
        """Return ``log Z_N(alpha, r)`` at the kernel parameters (cached for fixed values)."""
        alpha, power = math.exp(params.log_alpha), params.power
        if self.power_is_random:  # a new power at (nearly) every draw: nothing to keep
            return log_normaliser(self.n, alpha, power, "recursion")
        if self._log_z is None or self._log_z[:2] != (alpha, power):
            self._log_z = (alpha, power, log_normaliser(self.n, alpha, power, "row"))
        return self._log_z[2]

    def check_observed(self) -> None:
        """Check observed data against the prior before any sampling (a swamped prior)."""
        if self.is_table:
            return
        if self.data_readers is not None and self.latent is None:
            data, mu0, _, _, psi0, grid, *_ = (read() for read in self.data_readers)
            check_prior_scale(
                check_data(data, "observed"), np.asarray(mu0), np.asarray(psi0), np.min(grid)
            )

    # -- model inspection -------------------------------------------------

    @staticmethod
    def prior_value_readers(model, rv, compile_kwargs=None):
        """Readers of ``alpha`` and ``power`` from a point, and whether each is random.

        A random parameter is compiled as a function of the point (through its
        value variables, so their transforms are applied); a fixed one is read
        directly.
        """
        readers, random = [], []
        for param in rv.owner.op.dist_params(rv.owner)[:2]:
            (value,) = model.replace_rvs_by_values([param])
            if is_fixed(value):
                read = value_reader(value)
                readers.append(lambda point, read=read: read())
                random.append(False)
            else:
                readers.append(point_reader(model, value, compile_kwargs))
                random.append(True)
        return tuple(readers), tuple(random)

    def find_likelihood(self, model, rv):
        """Locate the single NIWMixture fed by ``rv`` and refuse any other use of it.

        The NIWMixture may be observed, or a free variable (latent values that the
        labels cluster). Terms that depend on the labels only through the
        NIWMixture's values (the latent values' own likelihood) are fine: given
        those values they do not involve the labels.
        """
        niw = [
            v
            for v in model.basic_RVs
            if isinstance(v.owner.op, NIWMixtureRV | TableMixtureRV)
            and v.owner.op.dist_params(v.owner)[0] is rv
        ]
        niw = niw[0] if len(niw) == 1 else None
        blockers = [] if niw is None else [niw]
        terms = [v for v in model.basic_RVs if v is not rv] + list(model.potentials)
        for term in terms:
            inputs = term.owner.inputs if term in model.basic_RVs else [term]
            if term is niw or rv not in set(ancestors(inputs, blockers=blockers)):
                continue
            raise ValueError(
                f"The labels '{rv.name}' feed the model term '{term.name}', which PCRPGibbs cannot "
                "account for: its collapsed update is exact only when the labels enter the model "
                "through a single NIWMixture (z=<labels>), observed or latent. Remove that term, "
                "or give the labels to a different sampler."
            )
        if niw is None:
            return None, None
        _, *params = niw.owner.op.dist_params(niw.owner)
        if niw in model.observed_RVs:
            read_data = value_reader(model.rvs_to_values[niw])
        else:
            read_data = self.latest_values
        readers = [read_data, *(value_reader(v) for v in params)]
        return readers, niw

    @staticmethod
    def latent_name(model, niw) -> str | None:
        """Name of a latent NIWMixture's value variable in the point (None when observed)."""
        if niw in model.observed_RVs:
            return None
        return model.rvs_to_values[niw].name

    def latest_values(self) -> np.ndarray:
        """Return the latent NIWMixture values of the point being stepped (see :meth:`_arrays`)."""
        if self.latest is None:
            raise ValueError(
                f"The values of the latent NIWMixture '{self.niw.name}' are read from the "
                "point: call the step with one."
            )
        return self.latest

    @property
    def is_table(self) -> bool:
        """Whether the labels' likelihood is a TableMixture (the table family)."""
        return self.niw is not None and isinstance(self.niw.owner.op, TableMixtureRV)

    def learns_nu0(self) -> bool:
        """Whether the NIWMixture's prior has a grid of ``nu0`` values (a hyperprior on it)."""
        if self.data_readers is None or self.is_table:
            return False
        return int(np.size(self.data_readers[-2]())) > 1

    def data_dimension(self) -> int:
        """``D`` of the NIWMixture data (0 without a likelihood), from the prior mean."""
        if self.data_readers is None:
            return 0
        return int(np.size(self.data_readers[1]()))  # mu0, or a table's column kinds

    # -- per-step arrays --------------------------------------------------

    def arrays(self, point=None) -> SweepInputs:
        """Centred data, sweep parameters and sweep tables, rebuilt only when an input changes.

        A random ``alpha`` is read from ``point`` (required then); when it changed,
        the parameters and the tables (which hold ``log alpha``) are rebuilt, in
        ``O(N D^2)``.
        """
        if point is None and self.alpha_is_random:
            raise ValueError("The alpha of this PowerCRP is random: pass the point to read it.")
        if self.latent is not None and point is not None:
            # a copy: a new object at every draw, so the inputs are always rebuilt from it
            self.latest = np.array(point[self.latent], dtype=np.float64)
        read_alpha, read_power = self.prior_readers
        owned = self.alpha is not None
        raw_alpha = self.alpha.current(point) if owned else read_alpha(point)
        raw_power = read_power(point)
        raw: tuple = ()
        if (owned or not self.alpha_is_random) and self.data_readers is not None:
            # Fast path for every draw after the first: the very objects of last
            # time (constants, or pm.Data not replaced since) give the same arrays;
            # an alpha this step owns changes them in O(N) (_with_prior).
            raw = (raw_power, *[read() for read in self.data_readers])
            if not owned:
                raw = (raw_alpha, *raw)
            last = self.cache
            if last is not None and same_objects(raw, last.raw):
                if owned and raw_alpha != self.alpha.tables_alpha:
                    # not the value the kernel left (a new chain's start): shift the tables
                    self.alpha.move_tables(last.inputs.tables[0], raw_alpha)
                return last.inputs
        if owned:  # the cache must say which alpha the tables hold (the kernel moves it)
            self._sync_owned_alpha()
        if self.cache is not None:
            self.cache = self.cache._replace(raw=())  # stays so if the build raises
        inputs = self._build_arrays(float(raw_alpha), float(raw_power))
        self.cache = self.cache._replace(raw=raw)
        if owned:
            self.alpha.tables_built(float(raw_alpha), inputs.params.log_alpha)
        return inputs

    def _sync_owned_alpha(self) -> None:
        """Write the alpha the kernel left in the tables into the cached values and parameters.

        With an owned ``alpha`` the kernel shifts the new-cluster weights itself and
        the cached parameters keep the ``log_alpha`` they were built with (so that
        the arrays keep their identity from draw to draw); before anything is
        rebuilt from the cache, it must hold the tables' value.
        """
        last = self.cache
        log_alpha = float(self.alpha.log_alpha[0])
        if last is None or last.inputs.params.log_alpha == log_alpha:
            return
        params = last.inputs.params._replace(log_alpha=log_alpha)
        values = (self.alpha.tables_alpha, *last.values[1:])
        self.cache = last._replace(values=values, inputs=last.inputs._replace(params=params))

    def refresh_owned_alpha(self, inputs: SweepInputs) -> None:
        """Recompute the new-cluster weights exactly every ``REFRESH_EVERY`` owned draws.

        The kernel shifts them by each change of ``log alpha``; recomputing them
        now and then keeps rounding from accumulating.
        """
        self.alpha_draws += 1
        if self.alpha_draws < REFRESH_EVERY:
            return
        self.alpha_draws = 0
        if inputs.scale is not None:
            inputs.scale.current[1] = max(inputs.scale.current[1], REBUILT)  # the kernel does it
        else:
            params = inputs.params._replace(log_alpha=float(self.alpha.log_alpha[0]))
            inputs.tables[0][:] = self.family.new_cluster_weights(inputs.xc, params)

    def _build_arrays(self, alpha: float, power: float) -> SweepInputs:
        """Compare the inputs' values with the cache and rebuild what changed (slow path)."""
        if not (alpha > 0 and power > 0):
            raise ValueError(f"PowerCRP needs alpha > 0 and power > 0, got {alpha}, {power}.")
        last = self.cache
        if self.data_readers is None:
            values = (alpha, power)
            if last is None or values != last.values:
                xc = np.zeros((self.n, 0))
                params = make_params(alpha, power, 1.0, 1.0, np.zeros((0, 0)))
                last = InputCache(values, (), (), SweepInputs(xc, params, sweep_tables(xc, params)))
                self.cache = last
            return last.inputs
        if self.is_table:
            return self._build_table_arrays(alpha, power, last)
        data, mu0, kappa0, nu0, psi0, grid, log_w, nu_grid, nu_log_w = (
            read() for read in self.data_readers
        )
        values = (alpha, power, float(kappa0), float(nu0))
        sources = (data, mu0, psi0, grid, log_w, nu_grid, nu_log_w)
        same_sources = last is not None and same_objects(sources, last.sources)
        if same_sources and values == last.values:
            return last.inputs
        if same_sources and values[2:] == last.values[2:]:
            # Only alpha or power changed (a random one, drawn by PCRPHyper): keep
            # the centred data, the kept sweep state and the compiled kernel.
            return self._with_prior(last, alpha, power, values)
        else:
            # New data (pm.set_data) get the checks NIWMixture made at construction.
            x = check_data(data, "observed" if self.latent is None else self.latent)
            if self.latent is None:  # latent values move with every draw: no fixed data
                check_prior_scale(x, np.asarray(mu0), np.asarray(psi0), float(np.min(grid)))
            if x.shape[0] != self.n:
                raise ValueError(rebuild_message(self.niw.name, x.shape[0], self.name, self.n))
            xc = np.ascontiguousarray(x - np.asarray(mu0, dtype=np.float64))
        grid = np.asarray(grid, dtype=np.float64)
        log_w = np.asarray(log_w, dtype=np.float64)
        keep = same_sources and xc is last.inputs.xc
        inputs, nu0_start = self.family.build_inputs(
            xc,
            (alpha, power, float(kappa0), float(nu0)),
            (psi0, grid, log_w, nu_grid, nu_log_w),
            last.inputs.scale if keep else None,
        )
        if nu0_start is not None:
            self.chain.nu0_start = nu0_start
        self.cache = InputCache(values, sources, (), inputs)
        return inputs

    def _build_table_arrays(self, alpha: float, power: float, last) -> SweepInputs:
        """:meth:`_build_arrays` for a TableMixture: the encoded table, NaN where missing.

        Gaussian columns are centred at their prior means (``hyp[:, 3]``).
        """
        data, kind, nlev, conc, hyp, mask = (read() for read in self.data_readers)
        values = (alpha, power)
        sources = (data, kind, nlev, conc, hyp, mask)
        same_sources = last is not None and same_objects(sources, last.sources)
        if same_sources and values == last.values:
            return last.inputs
        if same_sources:  # only alpha or power changed: O(N) (see _with_prior)
            return self._with_prior(last, alpha, power, values)
        x = np.array(data, dtype=np.float64)
        if x.shape[0] != self.n:
            raise ValueError(rebuild_message(self.niw.name, x.shape[0], self.name, self.n))
        hyp = np.asarray(hyp, dtype=np.float64)
        gaussian = np.asarray(kind) == 2
        x[:, gaussian] -= hyp[gaussian, 3]
        x[np.asarray(mask) <= 0] = np.nan
        xc = np.ascontiguousarray(x)
        inputs, _ = self.family.build_inputs(xc, (alpha, power), (kind, nlev, conc, hyp), None)
        self.cache = InputCache(values, sources, (), inputs)
        return inputs

    def _with_prior(self, last: InputCache, alpha: float, power: float, values) -> SweepInputs:
        """Return the cached inputs for a new ``alpha`` or ``power``, in ``O(N)``.

        ``alpha`` enters the sweep tables only as ``log alpha`` added to every
        point's new-cluster weight, and ``power`` only as ``r log m`` in the
        per-size table, so both are rewritten in place (the new-cluster weights
        from a copy taken without ``log alpha``, so nothing drifts). The arrays
        keep their identity, so the compiled kernel is reused (see
        ``Chain.call_advance``). With a learned NIW scale the new-cluster weights
        belong to the chain's current ``s`` (the kernel rewrites them when ``s``
        changes), so they are shifted by the change of ``log alpha`` instead; the
        step recomputes them from scratch at least every ``REFRESH_EVERY``
        shifts, so that rounding cannot accumulate.
        """
        old = last.inputs
        log_new, pred_const, by_size = old.tables
        log_alpha = math.log(alpha)
        base = last.log_new_base
        if old.scale is not None:
            base = None
            if log_alpha != old.params.log_alpha:
                log_new += log_alpha - old.params.log_alpha
            self.chain.prior_shifts += 1
        elif log_alpha != old.params.log_alpha:
            if base is None:
                base = log_new - old.params.log_alpha
            np.add(base, log_alpha, out=log_new)
        if power != old.params.power:
            sizes = by_size.shape[0] - 1
            log_sizes = np.log(np.arange(1, sizes + 1, dtype=np.float64))
            by_size[1:, 0] = power * log_sizes + pred_const[1 : sizes + 1]
        params = old.params._replace(log_alpha=log_alpha, power=float(power))
        inputs = old._replace(params=params)
        self.cache = InputCache(values, last.sources, (), inputs, base)
        return inputs
