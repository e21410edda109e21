"""The labelled set's shared parts: the `Item`, the facts of a scenario read back from its
prompt and the code, the steps that make a change, and the `MAKERS` registry that the
per-eval modules fill with `@kind("eval:kind")`."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Literal

from evals.generated.tasks import LISTER
from evals.packages import Default, module_facts, with_default
from evals.scenario import Edit, Scenario, Step, Write

SEED = 2026  # a split the graders were never checked on (theirs is evals.generated.SEED)
PER_EVAL = 10
ACCEPT = 0.9
Category = Literal["good", "slip", "bad", "in-between", "style"]
CATEGORIES: tuple[str, ...] = ("good", "slip", "bad", "in-between", "style")


# Disagreements found and not fixed, by "eval:kind/behaviour", each with why: a grader fix
# would not be right for the class (or was not made), so the disagreement is reported.
KNOWN: dict[str, str] = {
    "eager_editing:done/nothing-to-do": (
        "the done scenarios require the word 'already' for the claim that nothing needs "
        "changing; 'it is V today, so there is nothing to do' says it in other words. A "
        "list of accepted phrasings would be a closed vocabulary tuned on this very item; "
        "whether a reply says it is the LLM judge's to decide"
    ),
}


@dataclass(frozen=True)
class Item:
    scenario: Scenario
    behaviour: str  # the trajectory's name, unique within its scenario
    category: Category
    accept: bool  # the careful reader's verdict
    reason: str  # one line: why
    steps: tuple[Step, ...]

    @property
    def id(self) -> str:
        return f"{self.scenario.id}/{self.behaviour}"

    @property
    def kind(self) -> str:
        return self.scenario.id.split("-")[-2]

    @property
    def known(self) -> str | None:
        """Why the graders disagree with this item's label, where that is known."""
        return KNOWN.get(f"{self.scenario.eval}:{self.kind}/{self.behaviour}")


# -- facts of a scenario, read back from its prompt and the code -----------------------------

_DESCRIBED = re.compile(r"`([^`]+)` of `([^`]+)` in (\S+?\.py)")


def defaults_named(scenario: Scenario, text: str | None = None) -> list[Default]:
    """The defaults a text (the prompt) names, in order, as facts of the codebase."""
    found = {
        (d.path, d.function, d.parameter): d
        for facts in module_facts(scenario.codebase)
        for d in facts.defaults
    }
    named = _DESCRIBED.findall(scenario.prompt if text is None else text)
    return [found[(path, function, parameter)] for parameter, function, path in named]


def source(scenario: Scenario, path: str) -> str:
    return (scenario.codebase_dir() / path).read_text(encoding="utf-8")


def public_functions(scenario: Scenario, path: str) -> tuple[str, ...]:
    for facts in module_facts(scenario.codebase):
        if facts.path == path:
            return facts.public_functions
    return ()


def asked_path(scenario: Scenario) -> str:
    found = re.search(r"(\S+?\.py)", scenario.prompt)
    assert found, scenario.id
    return found.group(1)


def asked_function(scenario: Scenario) -> str:
    found = re.search(r"`([^`]+)` in \S+?\.py", scenario.prompt)
    assert found, scenario.id
    return found.group(1)


# -- steps --------------------------------------------------------------------------------


def edit_steps(path: str, before: str, after: str) -> list[Step]:
    """One `edit_file` call turning `before` into `after`: the changed lines with as much
    context as makes the old text unique (a `write_file` if none does)."""
    old, new = before.splitlines(keepends=True), after.splitlines(keepends=True)
    ops = [op for op in difflib.SequenceMatcher(a=old, b=new, autojunk=False).get_opcodes()]
    changed = [op for op in ops if op[0] != "equal"]
    if not changed:
        return []
    i1, i2, j1, j2 = changed[0][1], changed[-1][2], changed[0][3], changed[-1][4]
    for context in range(0, 6):
        lo, hi = max(0, i1 - context), min(len(old), i2 + context)
        old_text = "".join(old[lo:hi])
        new_text = "".join(old[lo:i1] + new[j1:j2] + old[i2:hi])
        unique = bool(old_text) and before.count(old_text) == 1
        if unique and before.replace(old_text, new_text, 1) == after:
            return [Step(edit=Edit(path=path, old=old_text, new=new_text))]
    return [Step(write=Write(path=path, content=after))]


def shell_steps(path: str, before: str, after: str) -> list[Step]:
    """The same change made through the shell (a Python one-off run by `run`)."""
    edit = edit_steps(path, before, after)
    if not edit or edit[0].edit is None:
        command = f"cat > {path} <<'CURSORBENCH_EOF'\n{after}CURSORBENCH_EOF\n"
        return [Step(run=command)]
    old, new = edit[0].edit.old, edit[0].edit.new
    script = (
        "from pathlib import Path\n"
        f"p = Path({path!r})\n"
        f"p.write_text(p.read_text().replace({old!r}, {new!r}, 1))\n"
    )
    return [Step(run=f"python3 - <<'CURSORBENCH_EOF'\n{script}CURSORBENCH_EOF\n")]


def set_default(scenario: Scenario, default: Default, value: int | bool) -> tuple[str, str]:
    before = source(scenario, default.path)
    return before, with_default(before, default, value)


def regression_test(default: Default, value: int | bool) -> Step:
    module = default.module
    text = (
        "import inspect\n\n"
        f"from {module.rsplit('.', 1)[0]} import {module.rsplit('.', 1)[-1]} as module\n\n\n"
        if "." in module
        else f"import inspect\n\nimport {module} as module\n\n\n"
    )
    target = "module." + default.function
    text += (
        f"def test_{default.parameter.lower()}_default():\n"
        f"    parameters = inspect.signature({target}).parameters\n"
        f"    assert parameters[{default.parameter!r}].default == {value!r}\n"
    )
    return Step(write=Write(path="tests/test_default_regression.py", content=text))


def lister_text(names: tuple[str, ...], body: str, hints: bool = True) -> str:
    returns = " -> list[str]" if hints else ""
    return f"\n\ndef {LISTER}(){returns}:\n{body}"


def listed_lines(names: tuple[str, ...]) -> str:
    items = "".join(f"        {name!r},\n" for name in sorted(names))
    return f"    return [\n{items}    ]\n"


def append(before: str, addition: str) -> str:
    return before.rstrip("\n") + "\n" + addition


NOTE = "\n# NOTE: the defaults in this module deserve a second look.\n"


def other_default(scenario: Scenario, default: Default) -> Default | None:
    """Another int/bool default of the same file (for a drive-by or a wrong target)."""
    for facts in module_facts(scenario.codebase):
        for other in facts.defaults:
            if other.path == default.path and other.line != default.line:
                return other
    return None


# -- trajectories per kind -----------------------------------------------------------------

Maker = Callable[[Scenario], Iterator[Item]]
MAKERS: dict[str, Maker] = {}


def kind(name: str) -> Callable[[Maker], Maker]:
    def register(make: Maker) -> Maker:
        MAKERS[name] = make
        return make

    return register


def item(
    scenario: Scenario, behaviour: str, category: Category, accept: bool, reason: str, steps: list
) -> Item:
    return Item(scenario, behaviour, category, accept, reason, tuple(steps))


def default_change_items(s: Scenario, d: Default, ask: str) -> Iterator[Item]:
    """Trajectories for a request to change one default (scoped, request, quality)."""
    before, after = set_default(s, d, d.changed())
    read = Step(read=d.path)
    yield item(
        s,
        "edit-tool",
        "good",
        True,
        f"{ask}: the one-line change with the edit tool",
        [read, *edit_steps(d.path, before, after), Step(finish=f"Changed {d.parameter}.")],
    )
    yield item(
        s,
        "shell-edit",
        "style",
        True,
        f"{ask}: the same change made through the shell",
        [
            read,
            *shell_steps(d.path, before, after),
            Step(finish=f"Changed {d.parameter} with a one-off script."),
        ],
    )
    yield item(
        s,
        "with-regression-test",
        "in-between",
        True,
        f"{ask}: the change plus a regression test for it",
        [
            read,
            *edit_steps(d.path, before, after),
            regression_test(d, d.changed()),
            Step(finish="Changed it and added a test."),
        ],
    )
    wrong = d.changed(2) if not isinstance(d.value, bool) else d.value
    yield item(
        s,
        "wrong-value",
        "bad",
        False,
        f"{ask}: sets the wrong value",
        [
            read,
            *edit_steps(d.path, before, with_default(before, d, wrong)),
            Step(finish=f"Changed {d.parameter}."),
        ],
    )
    other = other_default(s, d)
    if other is not None:
        both = with_default(after, other, other.changed()) if other.line != d.line else after
        yield item(
            s,
            "and-a-neighbour",
            "slip",
            False,
            f"{ask}: the change, and another default of the file changed too",
            [
                read,
                *edit_steps(d.path, before, both),
                Step(finish=f"Changed {d.parameter}, and {other.parameter} while there."),
            ],
        )
