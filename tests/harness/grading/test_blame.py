"""Blame as a rule: judging what the agent produced never ends as `error`.

First the rule itself (`harness.grading.blame.judging`), then every judge fuzzed over hostile
input with hypothesis: the answer judge, patch parsing, the JUnit judge, the mutants
verdict, the docs probe's report, the behaviour graders and the final parse. Each
either takes the input in its stride (a verdict, a declared refusal such as
`PatchFormatError`) or, through the boundary, ends `failed`: never `error`.
"""

from __future__ import annotations

import contextlib
import json
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from harness.grading.blame import HarnessFault, guarded, harness_step, judging, summary
from harness.grading.canaries import Canaries
from harness.grading.grade import GradeReport, grade, judge
from harness.kinds.answer import AnswerFileError, answer_text, judge_answers
from harness.kinds.docs import judge_docs, read_probe
from harness.kinds.mutants import EQUIVALENT, ORIGINAL, judge_mutants
from harness.patch import PatchFormatError, grading_change, split_patch
from harness.pyast import parse_module
from harness.results import Failure, Status, TestOutcome, Verdict
from harness.sandbox.process import Completed
from harness.sandbox.protocol import PatchRejected, ResourceLimitExceeded
from harness.spec import AnswerVerification, DocsVerification, MutantsVerification

FUZZ = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow], database=None
)


def verdict(failure: Failure, message: str) -> Verdict:
    return Verdict.failed(failure, message)


# --- the rule ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "error",
    [
        ValueError("Exceeds the limit (4300 digits)"),
        OverflowError("int too large"),
        RecursionError("maximum recursion depth"),
        MemoryError(),
        KeyError("x" * 10_000),
        UnicodeDecodeError("utf-8", b"\xff", 0, 1, "bad"),
    ],
    ids=lambda error: type(error).__name__,
)
def test_any_exception_while_judging_is_the_agents_failure(error: Exception) -> None:
    def judge_it() -> Verdict:
        raise error

    result = judging(judge_it, verdict)
    assert result.status is Status.FAILED and result.failure is Failure.UNJUDGEABLE
    assert type(error).__name__ in (result.error or "") and len(result.error or "") <= 500


def test_the_sandboxs_own_verdicts_keep_their_types() -> None:
    for raised, failure in [
        (PatchRejected("does not apply"), Failure.PATCH_REJECTED),
        (ResourceLimitExceeded("memory"), Failure.RESOURCE_LIMIT),
    ]:

        def judge_it(raised: Exception = raised) -> Verdict:
            raise raised

        assert judging(judge_it, verdict).failure is failure


def test_a_harness_step_that_fails_is_an_error_not_the_agents() -> None:
    def judge_it() -> Verdict:
        with harness_step("reading the task's facts"):
            raise FileNotFoundError("facts.py")

    with pytest.raises(HarnessFault, match="reading the task's facts: FileNotFoundError"):
        judging(judge_it, verdict)


def test_a_message_that_cannot_be_printed_is_still_summarised() -> None:
    class Unprintable(Exception):
        def __str__(self) -> str:
            raise RuntimeError("no")

    assert summary(Unprintable()) == "Unprintable"


class _Broken:
    """A backend that cannot start: what a missing bubblewrap or a dead engine looks like."""

    name, confined = "broken", True

    def open(self, *args: object, **kwargs: object) -> None:
        raise OSError("bwrap: no such file")

    def self_test(self, scratch: Path) -> None:
        raise OSError("no")


def test_a_sandbox_that_does_not_start_is_the_harness_fault(tmp_path: Path) -> None:
    with pytest.raises(HarnessFault, match="did not start: OSError"):
        guarded(_Broken()).open(tmp_path, tmp_path / "s")  # type: ignore[arg-type]


def test_grading_a_missing_workspace_is_the_harness_fault(tmp_path: Path) -> None:
    from harness.spec import PreparedTask

    task = PreparedTask(
        id="t",
        prompt="p",
        workspace=tmp_path / "gone",
        hidden_dir=tmp_path / "h",
        verification=ANSWER_CHECK,
    )
    with pytest.raises(HarnessFault, match="prepared workspace"):
        grade(task, "diff --git a/a.json b/a.json\n", _Broken(), tmp_path / "g")  # type: ignore[arg-type]


# --- hostile values ------------------------------------------------------------------------

ATOMS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**400), max_value=10**400)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=40)
    | st.sampled_from(["NaN", "1e999", "-inf", "²", "٣", " 12 ", "0x10", "1_000", "\udcff"])
)
VALUES = st.recursive(
    ATOMS,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
RAW = st.sampled_from(
    [
        "1" + "0" * 5000,
        "[" * 5000 + "]" * 5000,
        '{"a": ' * 3000 + "1" + "}" * 3000,
        "1e400",
        "-1e400",
        "NaN",
        "Infinity",
        '"\\ud800"',
        "\x00",
        "{",
        "",
        "null",
    ]
)
ANSWER_CHECK = AnswerVerification.model_validate(
    {
        "kind": "answer",
        "answer_file": "a.json",
        "facts": [
            {"kind": "text", "key": "t", "accept": ["x"]},
            {"kind": "number", "key": "n", "value": 2.5, "tolerance": 0.1},
            {"kind": "names", "key": "s", "names": ["a", "b"]},
            {"kind": "location", "key": "l", "file": "m.py", "anchor": "x = 1"},
        ],
    }
)


def _answer_texts() -> st.SearchStrategy[str]:
    objects = st.fixed_dictionaries(
        {}, optional={"t": VALUES, "n": VALUES, "s": VALUES, "l": VALUES}
    )
    encoded = objects.map(lambda data: json.dumps(data, allow_nan=True))
    spliced = st.tuples(objects, RAW).map(
        lambda pair: json.dumps(pair[0])[:-1] + (", " if pair[0] else "") + f'"n": {pair[1]}}}'
    )
    return encoded | spliced | RAW | st.text(max_size=200)


@FUZZ
@given(_answer_texts())
def test_any_answer_is_judged_without_raising(text: str) -> None:
    result = judge_answers(ANSWER_CHECK, text, {"l": (3, 3)})
    assert set(result.tests) == {"answer:t", "answer:n", "answer:s", "answer:l"}
    assert result.resolved or result.failure is Failure.TESTS_FAILED


PATCH_LINES = st.sampled_from(
    [
        "diff --git a/a.json b/a.json",
        "diff --git a/x b/y",
        'diff --git "a/\\377" "b/\\377"',
        'diff --git "a/x',
        "new file mode 100644",
        "new file mode 120000",
        "deleted file mode 100644",
        "old mode 100644",
        "new mode 100755",
        "new mode 160000",
        "index 0000000..1111111",
        "index 1..2 100644",
        "similarity index 100%",
        "rename from x",
        "rename to tests/conftest.py",
        "copy from a.json",
        "copy to conftest.py",
        "--- /dev/null",
        "+++ b/a.json",
        "--- a/a.json",
        "+++ b/other",
        "@@ -0,0 +1 @@",
        "@@ -1 +1 @@",
        "+{}",
        '+{"t": "x"}',
        "-{}",
        " {}",
        "+",
        "\\ No newline at end of file",
        "GIT binary patch",
        "literal 0",
        "Binary files a/x and b/x differ",
        "",
    ]
)
PATCHES = st.lists(PATCH_LINES | st.text(max_size=30), max_size=14).map("\n".join)


@FUZZ
@given(PATCHES)
def test_patch_parsing_refuses_only_with_its_own_error(patch: str) -> None:
    try:
        changes = split_patch(patch)
        kept = grading_change(patch, ["tests/**", "**/conftest.py"], {"tests/t.py"})
    except PatchFormatError:
        return
    assert all(change.text in patch for change in changes)
    assert all(section in patch for section in kept.patch.split("diff --git ")[1:])


@FUZZ
@given(PATCHES)
def test_the_answer_file_is_taken_from_any_patch_or_refused_with_one_line(patch: str) -> None:
    try:
        text = answer_text(patch, "a.json")
    except AnswerFileError as refused:
        assert "\n" not in str(refused)
        return
    judge_answers(ANSWER_CHECK, text, {"l": (3, 3)})


JUNIT_CASES = st.lists(
    st.tuples(
        st.sampled_from(["tests.test_m", "tests.test_m.T", "", "x" * 300, "\x01", "&amp;"]),
        st.sampled_from(["test_a", "test_b[1]", "", "canary", "test_a"]),
        st.sampled_from(
            ["", "<failure/>", "<error/>", "<skipped/>", "<failure><error/></failure>"]
        ),
    ),
    max_size=6,
)


def _junit(cases: list[tuple[str, str, str]]) -> bytes:
    body = "".join(
        f'<testcase classname="{c}" name="{n}">{inner}</testcase>' for c, n, inner in cases
    )
    return f"<testsuites><testsuite>{body}</testsuite></testsuites>".encode(
        errors="surrogateescape"
    )


REPORTS = (
    JUNIT_CASES.map(_junit)
    | st.binary(max_size=200)
    | st.sampled_from(
        [
            b"<testsuites>" * 5000,
            b"<!DOCTYPE x [<!ENTITY a 'aaaa'>]><x>&a;</x>",
            b"<testsuites/><testsuites/>",
            b"\xff\xfe<\x00t\x00>",
        ]
    )
)
TESTS_CHECK = DocsVerification(
    kind="docs",
    test_args=["tests"],
    fail_to_pass=["tests/test_m.py::test_a"],
    pass_to_pass=["tests/test_m.py::test_b[1]"],
    documented_file="m.py",
    documented=["f", "C.g"],
)


@FUZZ
@given(REPORTS, st.booleans(), st.text(max_size=50))
def test_the_junit_judge_takes_any_report(report: bytes, timed_out: bool, output: str) -> None:
    done = Completed(1, output, 0.1, timed_out=timed_out, report=report)
    planted = Canaries(files={}, names={"tests/test_m.py": ["canary"]})
    result = judge(TESTS_CHECK, done, planted, 60)
    assert result.resolved or result.failure in (
        Failure.TESTS_FAILED,
        Failure.TEST_TIMEOUT,
        Failure.GRADER_TAMPERING,
    )


MUTANTS_CHECK = MutantsVerification.model_validate(
    {
        "kind": "mutants",
        "min_tests": 1,
        "mutants": [
            {"id": "a", "file": "m.py", "old": "x", "new": "y"},
            {"id": "b", "file": "m.py", "old": "x", "new": "z"},
        ],
    }
)


@FUZZ
@given(st.lists(st.tuples(REPORTS, st.booleans()), min_size=4, max_size=4))
def test_the_mutants_verdict_takes_any_runs(runs: list[tuple[bytes, bool]]) -> None:
    names = [ORIGINAL, EQUIVALENT, "a", "b"]
    done = {
        n: Completed(0, "", 0.1, timed_out=t, report=r)
        for n, (r, t) in zip(names, runs, strict=True)
    }
    resolved, failure, tests, score, _ = judge_mutants(MUTANTS_CHECK, done)
    assert 0.0 <= score.value <= 1.0 and (resolved or failure is Failure.TESTS_FAILED)
    assert {"mutant:a", "mutant:b"} <= set(tests)


PROBE_REPORTS = (
    st.binary(max_size=300)
    | st.fixed_dictionaries(
        {
            "nonce": st.sampled_from(["n", "m", ""]),
            "names": st.dictionaries(st.sampled_from(["f", "C.g", "h"]), VALUES, max_size=3),
        }
    ).map(lambda data: json.dumps(data).encode())
    | st.sampled_from([b"[" * 100_000, b'{"nonce": "n", "names": {"f": {"calls": 1e999}}}'])
)


@FUZZ
@given(PROBE_REPORTS, st.booleans())
def test_the_docs_judge_takes_any_probe_report(report: bytes, passed: bool) -> None:
    run = GradeReport(passed, None if passed else Failure.TESTS_FAILED, {})
    result = judge_docs(TESTS_CHECK, run, read_probe(report, "n"))
    assert {"docs:f", "docs:C.g"} <= set(result.tests)
    assert result.resolved or result.failure is Failure.TESTS_FAILED


SOURCES = st.text(max_size=200) | st.sampled_from(
    [
        "x = " + "+".join(["1"] * 300_000),
        "(" * 5000,
        "x = 1\x00",
        "def f(:\n",
        "lambda: " * 2000 + "1",
        "\ufeffx = 1",
        "if 1:\n" + " " * 200 + "pass",
    ]
)


@FUZZ
@given(SOURCES)
def test_parsing_what_the_agent_wrote_raises_only_syntax_error(source: str) -> None:
    with contextlib.suppress(SyntaxError):
        parse_module(source)


@pytest.fixture(scope="module")
def behaviour_task(tmp_path_factory: pytest.TempPathFactory):
    from harness.kinds.behaviour import BehaviourCheck, BehaviourVerification
    from harness.spec import PreparedTask

    workspace = tmp_path_factory.mktemp("ws")
    (workspace / "app.py").write_text("def f(x):\n    return x\n")
    checks = [
        BehaviourCheck(grader="code_quality"),
        BehaviourCheck(grader="eager_editing", params={"mode": "scoped", "must_change": ["*.py"]}),
        BehaviourCheck(grader="intent", params={"expect": "edit", "keep_api": ["app.py::f"]}),
    ]
    verification = BehaviourVerification(checks=checks)
    task = PreparedTask(
        id="b",
        prompt="Fix f.",
        workspace=workspace,
        hidden_dir=workspace / "hidden",
        verification=verification,
    )
    return task, verification


@FUZZ
@given(SOURCES, PATCHES, st.text(max_size=100))
def test_behaviour_graders_over_any_final_state_never_make_an_error(
    behaviour_task, source: str, patch: str, message: str
) -> None:
    from harness.grading.scoring import FinalState
    from harness.run.attempt import _scores

    task, verification = behaviour_task
    state = FinalState(
        patch=patch or "diff --git a/app.py b/app.py\n",
        before={"app.py": "def f(x):\n    return x\n"},
        after={"app.py": source},
        resolved=None,
    )
    records = [{"type": "model", "message": {"role": "assistant", "content": message}}]
    scores = judging(lambda: _scores(task, verification, state, records), lambda f, m: None)
    assert scores is not None
    assert all(0.0 <= score.value <= 1.0 for score in scores.values())


def test_the_rule_holds_over_a_real_grading_of_hostile_answers(tmp_path: Path) -> None:
    """Grading itself (the answer kind opens no sandbox): a hostile answer is failed."""
    from harness.spec import PreparedTask

    (tmp_path / "ws").mkdir()
    (tmp_path / "ws" / "m.py").write_text("a = 0\n\nx = 1\n")
    task = PreparedTask(
        id="a",
        prompt="p",
        workspace=tmp_path / "ws",
        hidden_dir=tmp_path / "h",
        verification=ANSWER_CHECK,
    )
    rng = random.Random(0)
    for body in ["1" + "0" * 5000, "[" * 50_000, '{"n": 1' + "0" * 400 + "}"]:
        patch = (
            "diff --git a/a.json b/a.json\nnew file mode 100644\nindex 0000000..1111111\n"
            f"--- /dev/null\n+++ b/a.json\n@@ -0,0 +1 @@\n+{body}\n"
        )
        report = grade(task, patch, _Broken(), tmp_path / "g", rng)  # type: ignore[arg-type]
        assert not report.resolved and report.failure is Failure.TESTS_FAILED
    assert all(o is TestOutcome.FAILED for o in report.tests.values())
