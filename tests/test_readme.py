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


def _bash_blocks(section: str) -> list[str]:
    text = README.read_text()
    start = text.index(section)
    end = text.find("\n## ", start + len(section))
    return re.findall(r"```bash\n(.*?)```", text[start:end], flags=re.S)


def test_fresh_machine_commands_are_the_demo_and_the_ci_test_command():
    demo, tests = (block.strip() for block in _bash_blocks("## Two commands on a fresh machine"))
    assert demo == (
        "python -m venv .venv && .venv/bin/pip install . && .venv/bin/python -m pymc_pcrp demo"
    )
    ci_run = (README.parent / ".ci" / "run").read_text().splitlines()
    assert tests in ci_run, ".ci/run must run the README's fast-tier command verbatim"


def test_readme_links_and_images_point_to_files_of_the_repository():
    text = README.read_text()
    targets = re.findall(r"\]\(([^)\s]+)\)", text)
    local = [t.split("#", 1)[0] for t in targets if not re.match(r"[a-z]+:", t)]
    assert local, "the README links to no file of the repository"
    missing = [t for t in local if t and not (README.parent / t).exists()]
    assert not missing, f"README links to missing files: {missing}"
    assert len(text.splitlines()) <= 250, "the README is a front page: at most ~250 lines"
