"""Calibrating the behaviour evals through the real runner: the baselines that must score
about 0 (`baselines`) and the graders' agreement with the labelled set (`agreement`). The
evals define both (`evals.baselines`, `evals.labelled.agreement`); running them takes the
suite's API, so the runs are made here, above the evals.
"""
