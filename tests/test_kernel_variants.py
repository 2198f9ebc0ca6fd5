"""The tests' kernel copies (tests/kernel_variants.py) are faithful where nothing is changed."""

import numpy as np
import pytest

from kernel_variants import module_with, recompiled, sweep_variant

from pymc_pcrp._kernels import moves
from pymc_pcrp._kernels.scores import SKIP_NATS
from pymc_pcrp._kernels.sweep import gibbs_sweeps, init_state, make_params, sweep_tables


def test_a_copy_that_rebinds_a_constant_to_its_own_value_draws_as_the_shipped_sweep():
    rng = np.random.default_rng(3)
    x = np.r_[rng.normal(size=(20, 2)), rng.normal(size=(20, 2)) + 4.0]
    params = make_params(1.0, 1.2, 0.5, 4.0, np.eye(2))
    tables = sweep_tables(x, params)
    runs = []
    for sweep in (gibbs_sweeps, sweep_variant(skip_nats=SKIP_NATS)):
        state = init_state(x, np.zeros(40, dtype=np.int64), params)
        sweep(np.random.default_rng(11), (x, state, params, tables), 30)
        runs.append(state.labels.copy())
    np.testing.assert_array_equal(runs[0], runs[1])


def test_a_name_the_kernel_does_not_read_is_refused():
    with pytest.raises(ValueError, match="reads no global named"):
        recompiled(gibbs_sweeps, SKIP_NAT=1.0)
    with pytest.raises(ValueError, match="has no attribute"):
        module_with(moves, split_gains=None)
