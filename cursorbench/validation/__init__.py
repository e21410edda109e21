"""Validating a task before it is published: the checks (`validate`, `checks`), test runs of
its trees (`testruns`, `tree_runs`), perturbations (`perturb`), the leak scan (`leaks`),
coverage (`coverage_check`), canary order (`canary_order`), health and review flags
(`health`, `pins`).
"""
