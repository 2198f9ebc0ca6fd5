"""Shared pytest configuration: helper imports, the two tiers (``slow`` marks), shared data."""

import sys

from pathlib import Path

import pytest

TESTS_DIR = Path(__file__).resolve().parent

# Let test modules in sub-folders import the helpers here, e.g. ``from reference import ...``.
if str(TESTS_DIR) not in sys.path:
    sys.path.insert(0, str(TESTS_DIR))


# -- The two tiers -------------------------------------------------------------------------
#
# Fast tier, ``python -m pytest`` (the README's command): every test not marked slow. It
# checks every module, including the sampler's exactness at sizes small enough to be cheap.
# Full tier, ``python -m pytest --runslow -m slow`` (``.ci/run`` runs it after the fast tier,
# so nothing runs twice): the tests marked slow, i.e. the statistical tests and the long
# end-to-end runs. The marks are given here, by location, so that the test files need not
# carry them and keep them when moved between folders. A test is slow if
#
# - it sits in a folder named in SLOW_FOLDERS, at any depth under tests/, or
# - its module's file name (without ``.py``) is in SLOW_MODULES, or
# - its test function's name is listed under its module's file name in SLOW_TESTS.
#
# When the whole suite is collected, an entry that matches no test is an error, so that a
# renamed test or module cannot silently move a long test into the fast tier.

SLOW_FOLDERS: frozenset[str] = frozenset({"statistical"})
SLOW_MODULES: frozenset[str] = frozenset()
SLOW_TESTS: dict[str, frozenset[str]] = {
    # fit on 300 rows of 8 bool columns from 3 latent classes (the check; 7 s warm)
    "test_table_fit": frozenset({"test_fit_finds_three_latent_classes_in_a_bool_table"}),
    # the split-merge move keeps the exact posterior from exact draws, 9 settings; a chain
    # of moves alone, and the cluster-first pair rule, against enumeration (18-26 s each);
    # test_wrong_acceptance_ratio_is_detected stays fast. Both cluster-first tests are here:
    # the pair rule is one the step does not use (built in tests/kernel_variants.py), and
    # its own compilation of the move costs several seconds
    "test_splitmerge": frozenset(
        {
            "test_one_move_from_exact_draws_keeps_exact_posterior",
            "test_split_merge_chain_alone_reaches_exact_posterior",
            "test_cluster_pair_rules_keep_exact_posterior",
            "test_pair_rule_without_selection_ratio_is_detected",
            # prior-only moves against the exact prior on K (6-7 s warm)
            "test_prior_only_move_keeps_pcrp_prior",
        }
    ),
    # the pair move against enumeration: a kernel the step does not use yet, whose
    # compilation would add 15 s to a cold fast tier (the pair-table test stays fast)
    "test_pair_moves": frozenset(
        {"test_one_pair_move_keeps_the_exact_posterior", "test_a_wrong_prior_ratio_is_detected"}
    ),
    # parallel tempering by enumeration: the cold chain (19 s warm on the 2-core VM of
    # 2026-11-29; tests/statistical/test_tempering_enumeration.py checks it too), the
    # learned-scale cases and the second wrong swap ratio (a hot replica and one wrong
    # ratio stay fast)
    "test_tempering": frozenset(
        {
            "test_cold_replica_of_the_tempered_chain_matches_the_posterior",
            "test_hot_replica_with_a_learned_scale_matches_the_tempered_posterior",
            "test_cold_replica_with_a_learned_scale_matches_the_posterior",
            "test_a_swap_ratio_of_the_wrong_sign_is_detected",
        }
    ),
    # the diagonal family's chain kernel (advance_diag): compiling it takes 30-45 s on a
    # cold cache; the kernel-against-reference tests of the family stay fast
    "test_diag": frozenset(
        {"test_state_after_moves_equals_a_fresh_state_and_log_joint_is_the_models"}
    ),
    "test_diag_family": frozenset(
        {"test_sampling_log_joint_equals_the_model_log_density_and_ppc_works"}
    ),
    # a random alpha: the Gamma prior and the mixture on K recovered by sampling
    "test_alpha_rv": frozenset(
        {"test_prior_only_model_recovers_the_gamma_prior_on_alpha_and_the_mixture_on_k"}
    ),
    # a local dask cluster (both tests start one, 15-20 s)
    "test_distributed": frozenset(
        {"test_fit_parallel_on_dask_equals_fit", "test_cross_validation_on_dask_equals_sequential"}
    ),
    # a real cluster command interrupted by SIGINT (the fit-level check stays fast), and a
    # fresh process importing the whole package to be interrupted as it shuts down (the
    # start-up interrupt stays fast: it ends the process early in its imports)
    "test_interrupts": frozenset(
        {
            "test_cluster_command_interrupted_publishes_nothing",
            "test_a_ctrl_c_during_shutdown_ends_with_the_commands_status",
        }
    ),
    # the command run as a user runs it, in a fresh process (5-13 s of imports); the same
    # refusals run in-process in the fast tier
    "test_cli_inputs": frozenset({"test_the_command_refuses_bad_input_as_a_user_runs_it"}),
    # two fresh processes, the first compiling every kernel into an empty cache
    "test_compile_notice": frozenset(
        {"test_cold_cache_announces_compilation_once_and_warm_cache_does_not"}
    ),
    # three fresh processes on two copies of the package sharing one numba cache
    "test_config": frozenset(
        {"test_two_copies_of_the_same_sources_share_one_cache_and_an_edit_starts_a_new_one"}
    ),
    # a latent NIWMixture: NUTS and PCRPGibbs against a quadrature posterior (4 x 3,000 draws),
    # and the recovery of 3 types of 40 groups
    "test_niw_latent": frozenset(
        {
            "test_latent_partition_posterior_matches_quadrature",
            "test_three_types_of_groups_are_recovered",
        }
    ),
    # 80 fuzz cases, each compiling a model's log density (test_fuzz_few_cases stays fast)
    "test_fuzz": frozenset({"test_fuzz_many_cases"}),
    # az.loo against 40 refits, each leaving one point out
    "test_log_likelihood": frozenset({"test_psis_loo_matches_brute_force_refits"}),
    # cross-validation run several times over, and a whole loss curve (5-8 s); the loss,
    # the jump rule, the split and the warnings stay fast
    "test_model_selection": frozenset(
        {
            "test_results_do_not_depend_on_n_jobs_or_grid_order",
            "test_loss_curve_jumps_where_the_two_clusters_merge",
        }
    ),
    # README's quickstart as written: 4 chains x 2,000 draws of 30 sweeps (14 s warm, 22 s
    # cold); the demo command's test stays fast
    "test_readme": frozenset({"test_quickstart_runs_as_written"}),
    # the four tests sharing the quick reproduction run (28 fits)
    "test_reproduce": frozenset(
        {
            "test_quick_run_prints_progress",
            "test_quick_run_writes_every_table_and_figure",
            "test_quick_run_methods_and_settings",
            "test_quick_run_pins_algorithm_1_and_the_fixed_prior",
        }
    ),
}


def pytest_configure(config):
    """Import the package (and PyMC) in pytest-xdist's controller before any worker starts.

    The controller rebuilds each warning a worker reports by importing the module of
    its class, in the receiving thread of that worker. When two workers' first
    warnings of a package arrive together, two threads import PyMC at once, and
    Python's import lock can then hand one of them a partially initialised module
    (CI once failed so: ``cannot import name 'modelcontext' from partially initialized
    module 'pymc.model.core'``). Imported here, once, in one thread, it is in place.
    """
    if not hasattr(config, "workerinput"):  # the controller, or a run without -n
        import pymc_pcrp  # noqa: F401


def pytest_addoption(parser):
    parser.addoption(
        "--runslow", action="store_true", default=False, help="also run tests marked slow"
    )


def _is_slow(item: pytest.Item) -> bool:
    path = item.path
    try:
        folders = path.relative_to(TESTS_DIR).parts[:-1]
    except ValueError:
        folders = ()
    name = getattr(item, "originalname", item.name)
    return (
        bool(SLOW_FOLDERS.intersection(folders))
        or path.stem in SLOW_MODULES
        or name in SLOW_TESTS.get(path.stem, frozenset())
    )


def _unmatched_entries(items: list[pytest.Item]) -> list[str]:
    seen = {(item.path.stem, getattr(item, "originalname", item.name)) for item in items}
    folders = {part for item in items for part in item.path.parts}
    unmatched = [f"folder {f}" for f in sorted(SLOW_FOLDERS - folders)]
    unmatched += [f"module {m}" for m in sorted(SLOW_MODULES - {m for m, _ in seen})]
    unmatched += [
        f"{module}::{test}"
        for module, tests in sorted(SLOW_TESTS.items())
        for test in sorted(tests)
        if (module, test) not in seen
    ]
    return unmatched


@pytest.hookimpl(tryfirst=True)  # before -m selects on the marks
def pytest_collection_modifyitems(config, items):
    for item in items:
        if _is_slow(item):
            item.add_marker(pytest.mark.slow)
    if config.args_source == pytest.Config.ArgsSource.TESTPATHS:
        unmatched = _unmatched_entries(items)
        if unmatched:
            raise pytest.UsageError(
                "tests/conftest.py lists slow tests that do not exist (renamed or moved?): "
                + ", ".join(unmatched)
            )
    # `-m slow` alone would select the slow tests only to skip them all: it implies --runslow.
    if config.getoption("--runslow") or "slow" in (config.getoption("markexpr") or ""):
        return
    skip_slow = pytest.mark.skip(reason="slow test: run with --runslow")
    for item in items:
        if "slow" in item.keywords:
            item.add_marker(skip_slow)


@pytest.fixture(scope="session")
def shared_data_dir() -> Path:
    """The ``shared/data`` folder that sits beside the repository, if present."""
    path = TESTS_DIR.parent.parent / "shared" / "data"
    if not path.is_dir():
        pytest.skip(f"shared data folder {path} not found (it lives beside the repository)")
    return path
