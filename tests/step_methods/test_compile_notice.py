"""The first model in a new environment says that the kernels are being compiled, once."""

import os
import subprocess
import sys

SCRIPT = (
    "import numpy as np, pymc as pm, pymc_pcrp as pcrp\n"
    "x = np.random.default_rng(0).normal(size=(20, 2))\n"
    "with pm.Model():\n"
    "    z = pcrp.PowerCRP('z', alpha=1.0, power=1.1, n=20)\n"
    "    pcrp.NIWMixture('x', z=z, prior=pcrp.NIWPrior.from_data(x), observed=x)\n"
    "    pm.sample(draws=5, tune=5, chains=1, progressbar=False, random_seed=1,\n"
    "              compute_convergence_checks=False)\n"
    "print('SAMPLED')\n"
)


def _run(cache_dir):
    env = dict(os.environ, NUMBA_CACHE_DIR=str(cache_dir))
    return subprocess.run(
        [sys.executable, "-c", SCRIPT],
        env=env,
        cwd=cache_dir,
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_cold_cache_announces_compilation_once_and_warm_cache_does_not(tmp_path):
    # An empty NUMBA_CACHE_DIR is a new environment as far as numba's cache goes.
    cold = _run(tmp_path)
    assert cold.returncode == 0, cold.stderr[-3000:]
    assert "SAMPLED" in cold.stdout
    assert cold.stderr.count("compiling the numba kernels") == 1
    warm = _run(tmp_path)
    assert warm.returncode == 0, warm.stderr[-3000:]
    assert "compiling the numba kernels" not in warm.stderr
