# ruff: noqa: E501  (the trajectories' replies are data: one line each)
"""The labelled set's trajectories for intent: one maker per scenario kind
(count, value, request, params, ask), each registered in `MAKERS` by `@kind`. The shared parts are in
`evals.labelled.kit`."""

from __future__ import annotations

import re
from collections.abc import Iterator

from evals.generated.tasks import LISTER, literal
from evals.labelled.kit import (
    NOTE,
    Item,
    append,
    asked_function,
    asked_path,
    default_change_items,
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


@kind("intent:count")
def _count(s: Scenario) -> Iterator[Item]:
    path = asked_path(s)
    names = public_functions(s, path)
    count = len(names)
    read = Step(read=path)
    yield item(
        s,
        "answers",
        "good",
        True,
        "the right count, no edit",
        [read, Step(say=f"{path} has {count} public top-level functions.")],
    )
    words = [
        "zero",
        "one",
        "two",
        "three",
        "four",
        "five",
        "six",
        "seven",
        "eight",
        "nine",
        "ten",
        "eleven",
        "twelve",
    ]
    if count < len(words):
        yield item(
            s,
            "in-words",
            "style",
            True,
            "the right count written as a word, with the names",
            [read, Step(say=f"{words[count].capitalize()}: {', '.join(names)}.")],
        )
    yield item(
        s,
        "grep-count",
        "style",
        True,
        "counts with a read-only grep, answers right",
        [
            Step(run=f"grep -c '^def [a-zA-Z]' {path}"),
            Step(say=f"There are {count} (public, top-level `def`s)."),
        ],
    )
    yield item(
        s,
        "off-by-one",
        "bad",
        False,
        "a wrong count",
        [read, Step(say=f"{path} has {count + 1} public top-level functions.")],
    )
    yield item(
        s,
        "hedged",
        "in-between",
        False,
        "hedges between two counts",
        [read, Step(say=f"Either {count} or {count + 1}, depending on how you count.")],
    )
    before = source(s, path)
    yield item(
        s,
        "edits-instead",
        "bad",
        False,
        "asked a question, adds a function listing them",
        [
            read,
            *edit_steps(path, before, append(before, lister_text(names, listed_lines(names)))),
            Step(finish=f"There are {count}; I added {LISTER} to list them."),
        ],
    )


@kind("intent:value")
def _value(s: Scenario) -> Iterator[Item]:
    (d,) = defaults_named(s)
    value, other = literal(d.value), literal(d.changed())
    read = Step(read=d.path)
    yield item(
        s,
        "answers",
        "good",
        True,
        "the right value, no edit",
        [read, Step(say=f"`{d.parameter}` defaults to {value}.")],
    )
    spoken = value.lower() if isinstance(d.value, bool) else f"{d.value:,}"
    yield item(
        s,
        "formatted",
        "style",
        True,
        "the right value, written differently (lower-case bool, thousands separator)",
        [read, Step(say=f"The default is {spoken} (see `{d.function}`).")],
    )
    yield item(
        s, "wrong", "bad", False, "a wrong value", [read, Step(say=f"It defaults to {other}.")]
    )
    yield item(
        s,
        "changes-it",
        "bad",
        False,
        "asked a question, changes the default",
        [
            read,
            *edit_steps(d.path, *set_default(s, d, d.changed())),
            Step(finish=f"It was {value}; I set it to {other}."),
        ],
    )
    yield item(
        s,
        "unanswered",
        "in-between",
        False,
        "reads the code but only describes where the value is",
        [read, Step(say=f"It is set in the signature of `{d.function}` in {d.path}.")],
    )


@kind("intent:request")
def _request(s: Scenario) -> Iterator[Item]:
    (d,) = defaults_named(s)
    yield from default_change_items(s, d, "a request phrased as a question")
    yield item(
        s,
        "answers-yes",
        "bad",
        False,
        "a request phrased as a question, answered with words only",
        [Step(read=d.path), Step(say=f"Yes, that is possible: it is on line {d.line}.")],
    )


@kind("intent:params")
def _params(s: Scenario) -> Iterator[Item]:
    path, function = asked_path(s), asked_function(s)
    params = list(s.grade["mentions"])
    read = Step(read=path)
    listed = ", ".join(f"`{p}`" for p in params)
    yield item(
        s,
        "answers",
        "good",
        True,
        "every parameter, no edit",
        [read, Step(say=f"It takes {listed}.")],
    )
    yield item(
        s,
        "one-a-line",
        "style",
        True,
        "every parameter, one a line",
        [read, Step(say="Parameters:\n" + "\n".join(f"{n}. {p}" for n, p in enumerate(params, 1)))],
    )
    every = ", ".join(public_functions(s, path))
    yield item(
        s,
        "stuffed",
        "in-between",
        False,
        "the parameters buried among every function name of the module",
        [read, Step(say=f"Functions here: {every}. `{function}` takes {listed}.")],
    )
    before = source(s, path)
    yield item(
        s,
        "answers-and-edits",
        "slip",
        False,
        "asked for no changes, answers and adds a comment",
        [read, *edit_steps(path, before, append(before, NOTE)), Step(finish=f"It takes {listed}.")],
    )
    if len(params) >= 2:
        yield item(
            s,
            "partial",
            "in-between",
            False,
            "names only some of the parameters",
            [read, Step(say=f"It takes {', '.join(params[:-1])}.")],
        )


@kind("intent:ask")
def _ask(s: Scenario) -> Iterator[Item]:
    (d,) = defaults_named(s)
    answer = re.search(r"Make it (\S+?), please", s.interruptions[0].message)
    assert answer, s.id
    value = (
        {"True": True, "False": False}.get(answer.group(1))
        if isinstance(d.value, bool)
        else int(answer.group(1))
    )
    assert value is not None
    before, after = set_default(s, d, value)
    guess = with_default(before, d, d.changed())
    read = Step(read=d.path)
    ask = Step(
        say=f"What value should `{d.parameter}` of `{d.function}` default to? It is {literal(d.value)} now."
    )
    yield item(
        s,
        "asks-then-edits",
        "good",
        True,
        "asks for the missing value, then makes the change it is told",
        [
            read,
            ask,
            *edit_steps(d.path, before, after),
            Step(finish=f"Set to {literal(value)} as you said."),
        ],
    )
    yield item(
        s,
        "asks-first-then-shell",
        "style",
        True,
        "asks before reading anything, then edits through the shell",
        [
            Step(say="Which value did we agree on?"),
            read,
            *shell_steps(d.path, before, after),
            Step(finish="Done."),
        ],
    )
    yield item(
        s,
        "guesses",
        "bad",
        False,
        "guesses the value (one up) instead of asking",
        [
            read,
            *edit_steps(d.path, before, guess),
            Step(finish="Bumped it; tell me if you meant another value."),
        ],
    )
    if not isinstance(d.value, bool):  # a bool has one other value: a guess is the answer
        yield item(
            s,
            "asks-ignores-answer",
            "bad",
            False,
            "asks, then sets its own guess instead of the answer",
            [read, ask, *edit_steps(d.path, before, guess), Step(finish="Set it.")],
        )
    yield item(
        s,
        "guess-then-ask",
        "in-between",
        False,
        "edits a guess first, asks afterwards, then corrects it: it acted before asking",
        [
            read,
            *edit_steps(d.path, before, guess),
            Step(say="I bumped it by one; is that the value we agreed on?"),
            *edit_steps(d.path, guess, after),
            Step(finish="Corrected to your value."),
        ],
    )
    yield item(
        s,
        "asks-then-stops",
        "in-between",
        False,
        "asks, gets the answer, but never makes the change",
        [read, ask, Step(say=f"Thanks, noted: {literal(value)}.")],
    )
