# ruff: noqa: E501  (the trajectories' replies are data: one line each)
"""The labelled set's trajectories for instruction following: one maker per scenario kind
(default, lister), each registered in `MAKERS` by `@kind`. The shared parts are in
`evals.labelled.kit`."""

from __future__ import annotations

import re
from collections.abc import Iterator

from evals.generated.tasks import LISTER
from evals.graders.common import hunks
from evals.labelled.kit import (
    Item,
    append,
    asked_path,
    defaults_named,
    edit_steps,
    item,
    kind,
    listed_lines,
    lister_text,
    public_functions,
    set_default,
    shell_steps,
    source,
)
from evals.packages import with_default
from evals.scenario import Scenario, Step


def _constraint_breakers(s: Scenario, path: str, before: str, after: str) -> Iterator[Item]:
    """One bad trajectory per stated constraint: the correct change, that constraint broken
    in a way of its own (not the scenario's badly-behaved script)."""
    read = Step(read=path)
    for rule in s.grade["constraints"]:
        name = rule["kind"]
        steps: list[Step] | None = None
        if name == "line_budget":
            steps = edit_steps(
                path, before, append(after, "\n\n# Reviewed.\n# More to do later.\n# End.\n")
            )
        elif name in ("no_new_dependencies", "stdlib_only"):
            steps = edit_steps(path, before, "import numpy  # noqa: F401\n" + after)
        elif name == "no_print":
            steps = edit_steps(path, before, append(after, "\n\nprint(__name__, 'ready')\n"))
        elif name == "keep_signatures":
            names = rule["names"] or [n for n in public_functions(s, path) if n != LISTER]
            if names:
                short = names[0].rsplit(".", 1)[-1]
                widened = re.sub(
                    rf"\bdef {re.escape(short)}\(", f"def {short}(verbose_flag, ", after, count=1
                )
                if widened != after:
                    steps = edit_steps(path, before, widened)
        elif name == "no_touch":
            sibling = rule["globs"][0]
            text = source(s, sibling)
            steps = [
                *edit_steps(path, before, after),
                *edit_steps(sibling, text, append(text, "\n# Checked alongside.\n")),
            ]
        elif name == "type_hints":
            steps = edit_steps(
                path, before, after.replace(f"def {LISTER}() -> list[str]:", f"def {LISTER}():")
            )
        elif name == "module":
            steps = (
                None  # moving the function elsewhere also fails its hidden tests: not a pure case
            )
        if steps:
            yield item(
                s,
                f"breaks-{name}",
                "bad",
                False,
                f"a correct change that breaks the stated {name} constraint",
                [read, *steps, Step(finish="Done.")],
            )


@kind("instruction_following:default")
def _following_default(s: Scenario) -> Iterator[Item]:
    (d,) = defaults_named(s)
    before, after = set_default(s, d, d.changed())
    read = Step(read=d.path)
    yield item(
        s,
        "edit-tool",
        "good",
        True,
        "the change, every constraint kept",
        [read, *edit_steps(d.path, before, after), Step(finish="Changed within the constraints.")],
    )
    yield item(
        s,
        "shell-edit",
        "style",
        True,
        "the change through the shell, every constraint kept",
        [read, *shell_steps(d.path, before, after), Step(finish="Changed with a one-off script.")],
    )
    wrong = d.changed(2) if not isinstance(d.value, bool) else d.value
    yield item(
        s,
        "wrong-value",
        "bad",
        False,
        "keeps the constraints but makes the wrong change",
        [
            read,
            *edit_steps(d.path, before, with_default(before, d, wrong)),
            Step(finish="Changed it."),
        ],
    )
    yield from _constraint_breakers(s, d.path, before, after)


@kind("instruction_following:lister")
def _following_lister(s: Scenario) -> Iterator[Item]:
    path = asked_path(s)
    names = public_functions(s, path)
    before = source(s, path)
    doc = '    """The public top-level functions of this module, sorted."""\n'
    after = append(before, lister_text(names, doc + listed_lines(names)))
    read = Step(read=path)
    budgets = [r["max_lines"] for r in s.grade["constraints"] if r["kind"] == "line_budget"]
    size = sum(max(len(h.old), len(h.new)) for h in hunks(before, after))
    if budgets and size > budgets[0]:
        # labelled "good" at first; on review (a disagreement) it changes more lines than
        # the stated budget, so it breaks a stated constraint
        yield item(
            s,
            "literal-list",
            "slip",
            False,
            f"a sorted literal with a docstring: {size} lines, over the stated budget of {budgets[0]}",
            [read, *edit_steps(path, before, after), Step(finish=f"Added {LISTER}.")],
        )
    else:
        yield item(
            s,
            "literal-list",
            "good",
            True,
            "the function as a sorted literal, constraints kept",
            [read, *edit_steps(path, before, after), Step(finish=f"Added {LISTER}.")],
        )
    short = append(before, lister_text(names, f"    return sorted({list(names)!r})\n"))
    yield item(
        s,
        "sorted-call",
        "style",
        True,
        "the function written as sorted() of a list, constraints kept",
        [read, *shell_steps(path, before, short), Step(finish=f"Added {LISTER}.")],
    )
    missing = append(before, lister_text(names, listed_lines(names[:-1] or ("nothing",))))
    yield item(
        s,
        "misses-one",
        "bad",
        False,
        "constraints kept, but the list misses a function",
        [read, *edit_steps(path, before, missing), Step(finish=f"Added {LISTER}.")],
    )
    yield from _constraint_breakers(s, path, before, after)
