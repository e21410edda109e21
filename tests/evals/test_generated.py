"""The generated held-out split (evals.generated): deterministic for a seed, >= 100
scenarios per eval over >= 10 real package codebases, every kind the issue names, and
expected answers that are true of the code, checked here by other means than the AST walk
that produced them (the text for function counts, `inspect.signature` of the imported
module for defaults)."""

from __future__ import annotations

import importlib
import inspect
import re
from collections import Counter
from typing import Any

import pytest

from evals import EVALS
from evals.catalogue import load_scenarios
from evals.generated import SEED, generate
from evals.packages import by_codebase, package_codebase
from evals.scenario import Scenario, replay

KINDS = {
    "eager_editing": {"done", "explain", "plan", "scoped"},
    "intent": {"count", "value", "request", "params", "ask"},
    "instruction_following": {"default", "lister"},
    "code_quality": {"default", "lister"},
    "interruption": {"revise", "add", "retract", "stop"},
}


def kind(scenario: Scenario) -> str:
    return scenario.id.rsplit("-", 2)[-2]


def test_the_split_is_large_spread_and_deterministic() -> None:
    split = generate(SEED)
    small = generate.__wrapped__(SEED, per_eval=10)  # not the cache
    assert [s.id for s in small] == [s.id for s in generate.__wrapped__(SEED, per_eval=10)]
    per_eval = Counter(s.eval for s in split)
    assert all(per_eval[name] >= 100 for name in EVALS), per_eval
    assert len(split) >= 500 and len({s.codebase for s in split}) >= 10
    for name in EVALS:
        mine = [s for s in split if s.eval == name]
        assert {kind(s) for s in mine} == KINDS[name]
        assert len({s.codebase for s in mine}) >= 8, name
    assert len({s.id for s in split}) == len(split)
    assert len({s.prompt for s in split}) == len(split)  # the scripted agent keys by prompt
    other = generate.__wrapped__(SEED + 1, per_eval=10)
    assert {s.id for s in other} != {s.id for s in small}  # a new seed refreshes it


def test_generated_and_curated_load_together_without_clashes() -> None:
    curated = load_scenarios(split="curated")
    every = load_scenarios()
    assert len(every) == len(curated) + len(generate(SEED))
    assert not {s.prompt for s in curated} & {s.prompt for s in generate(SEED)}
    sample = load_scenarios(["intent"], split="generated", sample=5)
    assert len(sample) == 5 and {kind(s) for s in sample} == KINDS["intent"]


def test_every_edit_has_hidden_tests_and_a_script_that_replays() -> None:
    for scenario in generate(SEED):
        mode = scenario.grade.get("mode") or scenario.grade.get("expect")
        edits = any(step.write or step.edit for step in scenario.well)
        if scenario.grade.get("revert") or mode in ("no_edit", "answer"):
            assert scenario.tests is None or scenario.eval == "interruption"
            continue
        assert edits and scenario.tests is not None, scenario.id
        assert any(t.endswith("test_imports_from_workspace") for t in scenario.tests.pass_to_pass)


def test_counts_agree_with_the_text() -> None:
    """Counted again from the text: lines that start with `def NAME(` at column 0."""
    counts = [s for s in generate(SEED) if s.eval == "intent" and kind(s) == "count"]
    assert len(counts) >= 20
    for scenario in counts:
        path = scenario.prompt.split(" does ")[1].split(" have?")[0]
        text = (package_codebase(scenario.codebase) / path).read_text(encoding="utf-8")
        public = re.findall(r"^def ([A-Za-z]\w*)\(", text, flags=re.MULTILINE)
        assert scenario.grade["mentions"] == [str(len(public))], (scenario.id, public)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # dateutil.zoneinfo on import
def test_defaults_agree_with_the_imported_signature() -> None:
    values = [s for s in generate(SEED) if s.eval == "intent" and kind(s) == "value"]
    assert len(values) >= 20
    for scenario in values:
        parameter, rest = scenario.prompt.split("`", 2)[1], scenario.prompt.split("`", 4)[3]
        path = scenario.prompt.split(" in ")[-1].rstrip("?")
        package = by_codebase(scenario.codebase)
        assert package is not None
        module = importlib.import_module(
            path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        )
        target: Any = module
        for part in rest.split("."):
            target = getattr(target, part)
        default = inspect.signature(target).parameters[parameter].default
        assert scenario.grade["mentions"] == [repr(default)], scenario.id


def test_a_scoped_reference_edit_changes_one_line_of_one_file() -> None:
    scoped = [s for s in generate(SEED) if s.eval == "eager_editing" and kind(s) == "scoped"]
    for scenario in scoped[:10]:
        root = package_codebase(scenario.codebase)
        path = scenario.grade["must_change"][0]
        before = {path: (root / path).read_text(encoding="utf-8")}
        after = replay(before, scenario.well)
        changed = [
            (a, b)
            for a, b in zip(before[path].splitlines(), after[path].splitlines(), strict=True)
            if a != b
        ]
        assert len(changed) == 1, scenario.id


def test_a_single_default_change_keeps_the_others_as_hidden_tests() -> None:
    """Changing another default than the one asked for is not a correct change: the hidden
    tests of a one-default request check every other default of the module (pass-to-pass),
    and they pass on the untouched code (run here against the installed copy)."""
    checked = 0
    for scenario in generate(SEED):
        if scenario.tests is None or "test_new_default" not in str(scenario.tests.fail_to_pass):
            continue
        text = scenario.tests.files["tests/test_eval_hidden.py"]
        if "test_other_defaults_kept" not in text:
            continue
        assert any(t.endswith("::test_other_defaults_kept") for t in scenario.tests.pass_to_pass)
        namespace: dict[str, Any] = {}
        exec(compile(text, scenario.id, "exec"), namespace)
        namespace["test_other_defaults_kept"]()
        checked += 1
    assert checked >= 100


def test_a_broken_keep_signatures_rule_changes_a_kept_signature() -> None:
    """The badly-behaved instruction-following script breaks its first rule; where that is
    keep_signatures, a kept function's signature changes (it used to add lines, which broke
    nothing unless a line budget was also stated)."""
    from evals.graders.common import functions, signature
    from evals.scenario import codebase_files

    found = 0
    for scenario in generate(SEED):
        if scenario.eval != "instruction_following":
            continue
        rule = scenario.grade["constraints"][0]
        if rule["kind"] != "keep_signatures":
            continue
        files = codebase_files(scenario)
        old = functions(files[rule["file"]])
        new = functions(replay(files, scenario.badly)[rule["file"]])
        kept = rule["names"] or [n for n in old if not n.startswith("_")]
        assert any(
            name in new and signature(old[name]) != signature(new[name])
            for name in kept
            if name in old
        ), scenario.id
        found += 1
    assert found >= 5
