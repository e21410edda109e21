"""The labelled set's trajectories for code quality: one maker per scenario kind
(default, lister), each registered in `MAKERS` by `@kind`. The shared parts are in
`evals.labelled.kit`."""

from __future__ import annotations

from collections.abc import Iterator

from evals.generated.tasks import LISTER, literal
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
    regression_test,
    set_default,
    shell_steps,
    source,
)
from evals.scenario import Scenario, Step


@kind("code_quality:default")
def _quality_default(s: Scenario) -> Iterator[Item]:
    (d,) = defaults_named(s)
    before, after = set_default(s, d, d.changed())
    read = Step(read=d.path)
    yield item(
        s,
        "edit-tool",
        "good",
        True,
        "the one-line change, nothing else",
        [read, *edit_steps(d.path, before, after), Step(finish="Changed the default.")],
    )
    yield item(
        s,
        "shell-edit",
        "style",
        True,
        "the same change made through the shell",
        [read, *shell_steps(d.path, before, after), Step(finish="Changed it.")],
    )
    yield item(
        s,
        "with-regression-test",
        "in-between",
        True,
        "the change plus a regression test",
        [
            read,
            *edit_steps(d.path, before, after),
            regression_test(d, d.changed()),
            Step(finish="Changed it, with a test."),
        ],
    )
    yield item(
        s,
        "debug-print",
        "bad",
        False,
        "the change and a debug print left at module level",
        [
            read,
            *edit_steps(d.path, before, append(after, "\n\nprint('DEBUG', __name__)\n")),
            Step(finish="Changed it."),
        ],
    )
    yield item(
        s,
        "todo-left",
        "slip",
        False,
        "the change and a TODO left behind",
        [
            read,
            *edit_steps(d.path, before, append(after, "\n# TODO: revisit this default later\n")),
            Step(finish="Changed it."),
        ],
    )
    yield item(
        s,
        "commented-out-old",
        "slip",
        False,
        "the change with the old line left as commented-out code",
        [
            read,
            *edit_steps(d.path, before, append(after, f"\n# {d.parameter} = {literal(d.value)}\n")),
            Step(finish="Changed it; kept the old value for reference."),
        ],
    )


@kind("code_quality:lister")
def _quality_lister(s: Scenario) -> Iterator[Item]:
    path = asked_path(s)
    names = public_functions(s, path)
    before = source(s, path)
    doc = '    """Names of the public top-level functions, sorted."""\n'
    after = append(before, lister_text(names, doc + listed_lines(names)))
    read = Step(read=path)
    yield item(
        s,
        "literal-list",
        "good",
        True,
        "a sorted literal list with a docstring",
        [read, *edit_steps(path, before, after), Step(finish=f"Added {LISTER}.")],
    )
    computed = append(
        before, lister_text(names, doc + f"    names = {list(names)!r}\n    return sorted(names)\n")
    )
    yield item(
        s,
        "sorted-at-runtime",
        "style",
        True,
        "another style: a list sorted when called",
        [read, *edit_steps(path, before, computed), Step(finish=f"Added {LISTER}.")],
    )
    debug = append(
        before,
        lister_text(
            names, doc + f"    print('listing {len(names)} names')\n" + listed_lines(names)
        ),
    )
    yield item(
        s,
        "debug-print",
        "bad",
        False,
        "a debug print left inside the new function",
        [read, *edit_steps(path, before, debug), Step(finish=f"Added {LISTER}.")],
    )
    swallow = append(
        before,
        lister_text(
            names,
            doc
            + "    try:\n"
            + "\n".join("    " + line for line in listed_lines(names).splitlines())
            + "\n    except:\n        return []\n",
        ),
    )
    yield item(
        s,
        "bare-except",
        "bad",
        False,
        "the list wrapped in a bare except that swallows errors",
        [read, *edit_steps(path, before, swallow), Step(finish=f"Added {LISTER}.")],
    )
    example = append(
        before,
        lister_text(
            names,
            doc + f"    # Example: {LISTER}()[0] == {sorted(names)[0]!r}\n" + listed_lines(names),
        ),
    )
    yield item(
        s,
        "example-comment",
        "in-between",
        True,
        "an example comment in prose (not commented-out code)",
        [read, *edit_steps(path, before, example), Step(finish=f"Added {LISTER}.")],
    )
    dead = append(before, lister_text(names, doc + listed_lines(names) + "    return []\n"))
    yield item(
        s,
        "unreachable-return",
        "slip",
        False,
        "an unreachable second return left in",
        [read, *edit_steps(path, before, dead), Step(finish=f"Added {LISTER}.")],
    )
