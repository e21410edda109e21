"""The generated, held-out split of the behaviour evals: scenarios composed from facts of
real package codebases (`evals.packages`), drawn by a seeded random source.

`generate(seed, per_eval)` is deterministic for a seed (and the packages installed, which
the project's environment pins): every kind of every eval lists its candidates in a fixed
order, the seed shuffles them, and they are taken round-robin over the codebases so each
eval spans them all. Refreshing the split is choosing another seed; the curated scenarios
(`evals/scenarios/*.yaml`, the ones the graders were tuned on) are never among them.
"""

from __future__ import annotations

import functools
import itertools
import random
from collections.abc import Callable, Iterator
from functools import cache
from typing import Any

from evals.generated import builders as b
from evals.generated.constraints import following_default, following_lister
from evals.generated.tasks import LISTER
from evals.packages import Default, ModuleFacts, module_facts, packages, source_files
from evals.scenario import Scenario

SEED = 17
PER_EVAL = 110
Make = Callable[[random.Random], Scenario | None]


def contexts() -> list[b.Context]:
    found = []
    for package in packages():
        facts = {f.path: f for f in module_facts(package.codebase)}
        if not facts:
            continue
        sources = {p: s for p, s in source_files(package).items() if p in facts}
        found.append(b.Context(package, sources, facts))
    return found


def _defaults(context: b.Context) -> list[Default]:
    return [d for facts in context.facts.values() for d in facts.defaults]


def _modules(context: b.Context) -> list[ModuleFacts]:
    return [
        f for f in context.facts.values() if f.public_functions and LISTER not in f.public_functions
    ]


def _functions(context: b.Context) -> list[tuple[str, str]]:
    return [(f.path, name) for f in context.facts.values() for name in f.public_functions]


def _pairs(context: b.Context) -> list[tuple[Default, Default]]:
    every = _defaults(context)
    return [
        (one, two)
        for one, two in itertools.permutations(every, 2)
        if one.path == two.path and one.line != two.line
    ]


def _ignore_rng(
    make: Callable[..., Scenario | None], item: tuple[Any, ...], rng: random.Random
) -> Scenario | None:
    return make(*item)


def _quality_lister(context: b.Context, facts: ModuleFacts, rng: random.Random) -> Scenario:
    return b.quality_lister(context, facts, rng.randrange(2))  # either style is good work


def _kinds(context: b.Context) -> dict[str, dict[str, list[Make]]]:
    """Per eval, per kind, a maker per candidate of this codebase."""

    def each(items: list[Any], make: Callable[..., Scenario | None]) -> list[Make]:
        return [functools.partial(_ignore_rng, make, item) for item in items]

    c = context
    defaults = [(c, d) for d in _defaults(c)]
    modules = [(c, m) for m in _modules(c)]
    named = [(c, path, name) for path, name in _functions(c)]
    pairs = [(c, one, two) for one, two in _pairs(c)]
    return {
        "eager_editing": {
            "done": each(defaults, b.eager_done),
            "explain": each(named, b.eager_explain),
            "plan": each(defaults, b.eager_plan),
            "scoped": each(defaults, b.eager_scoped),
        },
        "intent": {
            "count": each(modules, b.intent_count),
            "value": each(defaults, b.intent_value),
            "request": each(defaults, b.intent_request),
            "params": each(named, b.intent_params),
            "ask": each(defaults, b.intent_ask),
        },
        "instruction_following": {
            "default": [functools.partial(following_default, c, d) for d in _defaults(c)],
            "lister": [functools.partial(following_lister, c, m) for m in _modules(c)],
        },
        "code_quality": {
            "lister": [functools.partial(_quality_lister, c, m) for m in _modules(c)],
            "default": each(defaults, b.quality_default),
        },
        "interruption": {
            "revise": each(defaults, b.interruption_revise),
            "add": each(pairs, b.interruption_add),
            "retract": each(defaults, b.interruption_retract),
            "stop": each(pairs, b.interruption_stop),
        },
    }


def _round_robin(groups: list[list[Make]]) -> Iterator[Make]:
    for row in itertools.zip_longest(*groups):
        yield from (make for make in row if make is not None)


def _take(
    makers: dict[str, list[Make]], rng: random.Random, quota: int, seen: set[str]
) -> list[Scenario]:
    """Up to `quota` scenarios, round-robin over the codebases (the dict's keys)."""
    groups = []
    for name in sorted(makers):
        group = list(makers[name])
        rng.shuffle(group)
        groups.append(group)
    taken: list[Scenario] = []
    for make in _round_robin(groups):
        if len(taken) >= quota:
            break
        made = make(rng)
        if made is not None and made.prompt not in seen:
            seen.add(made.prompt)
            taken.append(made)
    return taken


@cache
def generate(seed: int = SEED, per_eval: int = PER_EVAL) -> tuple[Scenario, ...]:
    """The generated split: about `per_eval` scenarios of each eval, split evenly over its
    kinds (a kind with fewer candidates leaves its share to the others), in a fixed order
    for the seed."""
    from evals import EVALS

    by_codebase = {context.package.codebase: _kinds(context) for context in contexts()}
    seen: set[str] = set()
    result: list[Scenario] = []
    for eval_name in EVALS:
        kinds = sorted({kind for k in by_codebase.values() for kind in k[eval_name]})
        size = {
            kind: sum(len(k[eval_name].get(kind, [])) for k in by_codebase.values())
            for kind in kinds
        }
        left, per_kind = per_eval, []
        for number, kind in enumerate(sorted(kinds, key=lambda kind: (size[kind], kind))):
            rng = random.Random(f"{seed}:{eval_name}:{kind}")
            makers = {name: k[eval_name].get(kind, []) for name, k in by_codebase.items()}
            taken = _take(makers, rng, -(-left // (len(kinds) - number)), seen)
            left -= len(taken)
            per_kind.append(taken)
        # interleaved over the kinds: the first N of an eval cover its kinds evenly
        result += [s for row in itertools.zip_longest(*per_kind) for s in row if s is not None]
    return tuple(result)
