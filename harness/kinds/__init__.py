"""Verification kinds: how an attempt is verified, one module per kind.

Each kind module holds the kind's spec model (what a task file writes under
`verification:`), its grading, its reference and stub files, its validation
problems, its hidden and protected paths and its test counts, behind the
`VerificationKind` protocol (`base.py`). `registry.py` maps each kind's name to
it; everything else dispatches through `registry.kind_of`. A new kind is one
module and one line in `registry.KINDS`; `tests/harness/kinds/` pins its contract.

This package imports nothing at start, so that kind modules and the shared test
run (`testrun.py`) can be imported in any order.
"""
