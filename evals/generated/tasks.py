"""The real edits generated scenarios ask for, on a package codebase, each with its hidden
tests and the reference's scripted steps:

- `DefaultChange`: a parameter's int or bool default becomes another value (the test reads
  it back through `inspect.signature` of the workspace's module);
- `AddLister`: a new function at the end of a module returns the sorted names of the
  module's public top-level functions, as its AST lists them today.

Every hidden test file also checks that the module under test is the workspace's copy (not
an installed one), so a test cannot pass on code the agent never saw.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from evals.packages import Default, ModuleFacts, facts_of, with_default
from evals.scenario import HiddenTests, Step, Write

HIDDEN = "tests/test_eval_hidden.py"
GUARD = "test_imports_from_workspace"
LISTER = "public_function_names"

HEADER = """import importlib
import inspect
from pathlib import Path

MODULE = {module!r}


def _module():
    return importlib.import_module(MODULE)


def _target(qualified):
    found = _module()
    for part in qualified.split("."):
        found = getattr(found, part)
    return found


def _default(qualified, parameter):
    return inspect.signature(_target(qualified)).parameters[parameter].default


def {guard}():
    workspace = Path(__file__).resolve().parents[1]
    assert Path(_module().__file__).resolve().is_relative_to(workspace)
"""


def literal(value: int | bool) -> str:
    return repr(value)


def _check(name: str, default: Default, value: int | bool) -> str:
    kind = "bool" if isinstance(value, bool) else "int"
    return (
        f"\n\ndef {name}():\n"
        f"    value = _default({default.function!r}, {default.parameter!r})\n"
        f"    assert type(value) is {kind} and value == {value!r}\n"
    )


KEPT = "test_other_defaults_kept"


def _kept(others: list[Default]) -> str:
    listed = "".join(f"        ({d.function!r}, {d.parameter!r}, {d.value!r}),\n" for d in others)
    return (
        f"\n\ndef {KEPT}():\n"
        f"    for qualified, parameter, value in [\n{listed}    ]:\n"
        "        found = _default(qualified, parameter)\n"
        "        assert type(found) is type(value) and found == value, (qualified, parameter)\n"
    )


def hidden_tests(
    module: str, checks: list[tuple[str, Default, int | bool]], others: Sequence[Default] = ()
) -> HiddenTests:
    """A test file asserting each (test name, default, value); the guard passes before and
    after (pass-to-pass), the checks are the fail-to-pass tests. `others`: defaults of the
    module the request does not name, which must keep their values (pass-to-pass: a change
    of another default than the one asked for is not a correct change)."""
    text = HEADER.format(module=module, guard=GUARD)
    text += "".join(_check(name, default, value) for name, default, value in checks)
    kept = [f"{HIDDEN}::{GUARD}"]
    if others:
        text += _kept(list(others))
        kept.append(f"{HIDDEN}::{KEPT}")
    return HiddenTests(
        files={HIDDEN: text},
        fail_to_pass=[f"{HIDDEN}::{name}" for name, _, _ in checks],
        pass_to_pass=kept,
    )


def describe(default: Default) -> str:
    return f"`{default.parameter}` of `{default.function}` in {default.path}"


@dataclass(frozen=True)
class DefaultChange:
    default: Default
    source: str  # the module's text on the untouched tree
    step: int = 1

    @property
    def new(self) -> int | bool:
        return self.default.changed(self.step)

    def request(self) -> str:
        old, new = literal(self.default.value), literal(self.new)
        return f"change the default of {describe(self.default)} from {old} to {new}"

    def changed_source(self, source: str | None = None) -> str:
        return with_default(self.source if source is None else source, self.default, self.new)

    def steps(self) -> list[Step]:
        path = self.default.path
        return [Step(read=path), Step(write=Write(path=path, content=self.changed_source()))]

    def tests(self) -> HiddenTests:
        facts = facts_of(self.default.path, self.source)
        others = [
            d
            for d in (facts.defaults if facts else ())
            if (d.function, d.parameter) != (self.default.function, self.default.parameter)
        ]
        return hidden_tests(
            self.default.module, [("test_new_default", self.default, self.new)], others
        )


def lister_source(names: tuple[str, ...], style: int = 0) -> str:
    """The new function, in one of two styles (a literal list, or sorted() of a tuple)."""
    listed = sorted(names)
    if style == 0:
        body = "    return [" + ", ".join(repr(name) for name in listed) + "]\n"
    else:
        body = "    return sorted((" + "".join(f"{name!r}, " for name in listed) + "))\n"
    if len(body) > 88:  # one name a line, as a formatter would
        opener, closer = ("[", "]") if style == 0 else ("sorted((", "))")
        items = "".join(f"        {name!r},\n" for name in listed)
        body = f"    return {opener}\n{items}    {closer}\n"
    doc = '    """The sorted names of this module\'s public top-level functions."""\n'
    return f"\n\ndef {LISTER}() -> list[str]:\n{doc}{body}"


@dataclass(frozen=True)
class AddLister:
    facts: ModuleFacts
    source: str

    @property
    def module(self) -> str:
        return self.facts.path.removesuffix(".py").removesuffix("/__init__").replace("/", ".")

    def request(self) -> str:
        return (
            f"add a function `{LISTER}() -> list[str]` at the end of {self.facts.path} that "
            "returns the sorted names of the module's public top-level functions (those "
            "defined with `def` at the top level whose names do not start with an underscore; "
            "not counting the new function)"
        )

    def changed_source(self, style: int = 0) -> str:
        return self.source.rstrip("\n") + "\n" + lister_source(self.facts.public_functions, style)

    def steps(self, style: int = 0) -> list[Step]:
        path = self.facts.path
        return [Step(read=path), Step(write=Write(path=path, content=self.changed_source(style)))]

    def tests(self) -> HiddenTests:
        text = HEADER.format(module=self.module, guard=GUARD)
        expected = sorted(self.facts.public_functions)
        text += (
            f"\n\ndef test_lists_public_functions():\n"
            f"    assert _module().{LISTER}() == {expected!r}\n"
        )
        return HiddenTests(
            files={HIDDEN: text},
            fail_to_pass=[f"{HIDDEN}::test_lists_public_functions"],
            pass_to_pass=[f"{HIDDEN}::{GUARD}"],
        )
