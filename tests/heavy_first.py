"""The order the parallel phase hands out its test files in: the heaviest first.

`scripts/test.sh` runs that phase with `--dist loadfile --no-loadscope-reorder`: each worker
takes a whole file (its module fixtures are then made once, on one worker), and the next
file goes to the first worker that runs out, in collection order. Collected in path order,
the heaviest files came last (tests/training/: `test_rl_learns` alone is ~220 s), so one
worker was still in them while the others had nothing left. Sorted heaviest first (longest
processing time first), the phase ends on short files instead.

A file's weight is the sum of its selected tests' estimated seconds (so `-m "not slow"`
weighs only what it runs): `SECONDS` for the tests that took longest in a CI run
(`--durations`, 3 workers beside the Docker phase, rounded; a module fixture's set-up counted
with the test that paid it), else `SLOW_S` for a test marked `slow` and `QUICK_S` for any
other. Only the order depends on these figures: a stale or missing entry costs time, never a
result.
"""

from __future__ import annotations

import os
from collections import defaultdict

import pytest

SLOW_S = 8.0
QUICK_S = 0.3
# seconds per test (each parametrized case), by file and function
SECONDS: dict[str, dict[str, float]] = {
    "tests/training/rl/test_rl_learns.py": {
        "test_rl_learns_on_micro_tasks_scores_every_checkpoint_and_resumes": 220,
    },
    "tests/cursorbench/harbor/test_harbor.py": {
        "test_the_smoke_tasks_pass_harbors_lint_and_load_in_its_loader": 95,
        "test_the_verifier_resolves_the_reference_and_fails_the_untouched_workspace": 36,
        "test_a_sample_of_v1_passes_harbors_lint_and_loader_and_grades_right": 25,
    },
    "tests/cursorbench/test_generality.py": {
        "test_a_task_for_another_package_builds_and_validates": 90,
    },
    "tests/training/test_pipeline.py": {
        "test_the_toy_pipeline_gates_every_checkpoint_and_resumes": 85,
    },
    "tests/cursorbench/validation/test_canary_order.py": {
        "test_a_stateful_hidden_test_is_found_exempted_by_derive_and_then_valid": 80,
        "test_a_canary_honest_code_passes_makes_its_original_exempt": 28,
        "test_a_failure_that_is_no_canarys_exempts_nothing": 26,
    },
    "tests/cursorbench/validation/test_checks.py": {
        "test_v1_sample_builds_and_tells_solved_from_unsolved": 62,
        "test_weak_or_wrong_tasks_are_rejected": 20,
    },
    "tests/cursorbench/validation/test_validate.py": {
        "test_bundled_task_is_valid": 25,
        "test_a_task_whose_tests_do_not_fail_is_reported": 23,
    },
    "tests/cursorbench/validation/test_perturb.py": {
        "test_validation_drops_a_dated_test_id_and_an_order_dependent_test": 36,
        "test_a_task_left_with_too_few_stable_hidden_tests_is_refused": 23,
    },
    "tests/cursorbench/validation/test_leaks.py": {
        "test_the_scan_walks_the_system_tree_a_sandbox_shows": 26,
        "test_the_build_deletes_the_spec_of_the_deleted_api": 21,
    },
    "tests/cursorbench/factory/test_factory_refactor.py": {
        "test_refactor_tasks_propose_validate_and_resolve_with_the_reference": 53,
    },
    "tests/cursorbench/factory/test_factory_testing.py": {
        "test_a_testing_task_is_proposed_and_validated": 44,
    },
    "tests/cursorbench/factory/test_factory_modules.py": {
        "test_a_module_task_is_proposed_validated_and_resolved": 40,
    },
    "tests/cursorbench/factory/test_factory.py": {
        "test_bugs_propose_on_two_jobs_validate_then_resume": 32,
    },
    "tests/cursorbench/factory/test_factory_review.py": {
        "test_review_tasks_propose_validate_and_resolve_with_the_reference": 27,
    },
    "tests/cursorbench/factory/test_factory_usages.py": {
        "test_usage_tasks_propose_validate_and_resolve_with_the_reference": 18,
    },
    "tests/evals/test_baselines.py": {
        "test_baseline_scores_zero_on_every_eval": 30,
    },
    "tests/evals/test_separation.py": {
        "test_well_and_badly_behaved_agents_are_separated": 17,
    },
    "tests/evals/test_evals_run.py": {
        "test_every_eval_scenario_runs_with_the_reference_agent": 33,
    },
    "tests/training/test_serve_command.py": {
        "test_the_gate_serves_each_checkpoint_with_the_command": 27,
    },
    "tests/training/test_gate.py": {
        "test_checkpoints_are_gated_once_and_the_best_survives_a_restart": 18,
    },
    "tests/cursorbench/cli/test_cli.py": {
        "test_an_interrupted_run_finishes_the_rest_when_started_again": 20,
    },
    "tests/cursorbench/cli/test_cli_tasks.py": {
        "test_tasks_validate_reports_every_bad_file_then_checks_the_good_ones": 17,
    },
    "tests/harness/test_red_team_forgery.py": {
        "test_control_the_honest_solution_of_the_unittest_task_resolves": 21,
    },
    "tests/leaderboard/test_dashboard.py": {
        "test_run_page_filters_attempts": 20,
    },
}


def estimate(item: pytest.Item) -> float:
    """The seconds this test is expected to take (see the module docstring)."""
    file, _, name = item.nodeid.split("[", 1)[0].partition("::")
    known = SECONDS.get(file, {}).get(name)
    if known is not None:
        return known
    return SLOW_S if item.get_closest_marker("slow") is not None else QUICK_S


def heaviest_files_first(items: list[pytest.Item]) -> None:
    """Sorts `items` in place: whole files, the heaviest first; within a file (and between
    files of equal weight) the collection order stays (the sort is stable)."""
    weight: dict[str, float] = defaultdict(float)
    for item in items:
        weight[item.nodeid.split("::", 1)[0]] += estimate(item)
    items.sort(key=lambda item: -weight[item.nodeid.split("::", 1)[0]])


@pytest.hookimpl(trylast=True)  # after `-m` and `-k` deselected theirs: only what runs weighs
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """On xdist workers only (a serial run keeps the path order)."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        heaviest_files_first(items)
