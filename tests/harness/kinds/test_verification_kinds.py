"""The verification union: pytest (the default for files without `kind`), behaviour, both."""

from __future__ import annotations

import pytest
from pydantic import TypeAdapter, ValidationError

from harness.spec import (
    AnyVerification,
    BehaviourCheck,
    BehaviourVerification,
    BothVerification,
    Verification,
    behaviour_part,
    pytest_part,
    with_behaviour_checks,
)

PARSE = TypeAdapter(AnyVerification).validate_python
TESTS = {"fail_to_pass": ["tests/test_a.py::test_a"]}
CHECKS = {"checks": [{"grader": "intent", "params": {"expect": "answer"}}]}


def test_a_verification_without_kind_is_pytest() -> None:
    check = PARSE(TESTS)
    assert isinstance(check, Verification) and check.kind == "pytest"
    assert pytest_part(check) is check and behaviour_part(check) is None


def test_behaviour_and_both() -> None:
    behaviour = PARSE({"kind": "behaviour", **CHECKS})
    assert isinstance(behaviour, BehaviourVerification)
    assert pytest_part(behaviour) is None and behaviour.checks[0].score_key == "intent"
    both = PARSE({"kind": "both", "pytest": TESTS, "behaviour": CHECKS})
    assert isinstance(both, BothVerification)
    assert pytest_part(both) == both.pytest and behaviour_part(both) == both.behaviour
    assert both.protected_paths == both.pytest.protected_paths


def test_bad_kinds_are_refused() -> None:
    with pytest.raises(ValidationError):
        PARSE({"kind": "vibes", **TESTS})
    with pytest.raises(ValidationError):
        PARSE({"kind": "behaviour", "checks": []})


def test_task_behaviour_checks_add_scores_next_to_tests() -> None:
    tests = Verification(fail_to_pass=TESTS["fail_to_pass"])
    assert with_behaviour_checks(tests, []) is tests
    both = with_behaviour_checks(tests, ["code_quality"])
    assert isinstance(both, BothVerification)
    assert [check.grader for check in both.behaviour.checks] == ["code_quality"]


def test_the_graded_kinds_a_task_file_may_name() -> None:
    from harness.spec import (
        AnswerVerification,
        DocsVerification,
        MutantsVerification,
        TaskVerification,
        graded_by_run,
    )

    task_parse = TypeAdapter(TaskVerification).validate_python
    docs = task_parse({"kind": "docs", **TESTS, "documented_file": "m.py", "documented": ["f"]})
    assert isinstance(docs, DocsVerification) and pytest_part(docs) is docs
    mutant = {"id": "m1", "file": "m.py", "old": "<", "new": "<="}
    mutants = task_parse({"kind": "mutants", "mutants": [mutant]})
    assert isinstance(mutants, MutantsVerification) and mutants.hidden_tests == []
    answer = task_parse(
        {"kind": "answer", "answer_file": "a.json", "facts": [{"kind": "number", "key": "n",
                                                              "value": 3}]}
    )  # fmt: skip
    assert isinstance(answer, AnswerVerification) and pytest_part(answer) is None
    assert all(graded_by_run(check) for check in (docs, mutants, answer))
    assert not graded_by_run(PARSE({"kind": "behaviour", **CHECKS}))
    with pytest.raises(ValidationError):  # a task's tests are graded: no behaviour-only kind
        task_parse({"kind": "behaviour", **CHECKS})
    with pytest.raises(ValidationError, match="unique"):
        task_parse({"kind": "mutants", "mutants": [mutant, mutant]})
    with pytest.raises(ValidationError):
        task_parse({"kind": "answer", "answer_file": "a.json", "facts": [{"kind": "guess"}]})


def test_dispatch_is_by_the_registry() -> None:
    from harness.kinds.registry import KINDS, UnknownKind, kind_of, task_file_kinds

    assert task_file_kinds() == ["pytest", "docs", "mutants", "answer", "harbor"]
    assert kind_of(PARSE(TESTS)) is KINDS["pytest"]
    mutants = PARSE({"kind": "mutants", "mutants": [{"id": "m", "file": "m.py", "old": "<",
                                                     "new": "<="}]})  # fmt: skip
    with pytest.raises(ValueError, match="a mutants verification takes no behaviour checks"):
        with_behaviour_checks(mutants, ["intent"])

    class Unregistered(BehaviourVerification):
        kind: str = "vibes"  # type: ignore[assignment]

    with pytest.raises(UnknownKind, match="no verification kind named 'vibes'"):
        kind_of(Unregistered(checks=[BehaviourCheck(grader="intent")]))
