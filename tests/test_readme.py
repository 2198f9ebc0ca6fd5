"""The README's quickstart runs as written."""

import re

from pathlib import Path

import matplotlib
import numpy as np

README = Path(__file__).resolve().parents[1] / "README.md"


def _quickstart_block() -> str:
    text = README.read_text()
    marker = text.index("<!-- quickstart:")
    match = re.search(r"```python\n(.*?)```", text[marker:], flags=re.S)
    assert match is not None
    return match.group(1)


def test_quickstart_runs_as_written():
    matplotlib.use("Agg")
    namespace: dict = {}
    exec(compile(_quickstart_block(), str(README), "exec"), namespace)
    idata = namespace["idata"]
    k = idata.posterior["n_clusters"].values
    assert k.shape == (4, 1000)
    assert np.all(k >= 1)
    assert "log_joint" in idata.sample_stats


def test_demo_command_runs(capsys):
    from pymc_pcrp.cli import main

    assert main(["demo", "--draws", "150", "--tune", "50", "--chains", "2"]) == 0
    out = capsys.readouterr().out
    assert "CRP (r=1)" in out and "pCRP (r=1.11)" in out
    assert "Posterior probability of the number of clusters K" in out
