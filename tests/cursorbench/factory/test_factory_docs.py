"""Documentation tasks from the factory (`cursorbench/factory/docs_tasks.py`): examples cut
out of docstrings and nothing else, names whose doctests are unstable dropped, and a
package going from `propose --kind docs` to a task that `tasks validate` accepts, the
reference resolves and an agent that does nothing fails."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

import pytest
import yaml

from cursorbench.factory.docs_tasks import example_docstrings, keep_measured, without_examples
from tests.cursorbench.factory_pkg import propose_from, validate_then_run

CLI = [sys.executable, "-m", "cursorbench.cli.app"]
TEXTS = '''"""Small text helpers, each with an example."""


def shout(text):
    """Upper-case the text and add an exclamation mark.

    >>> shout("hi")
    'HI!'
    """
    return text.upper() + "!"


def whisper(text):
    """Lower-case the text.

    Examples:
        >>> whisper("HeLLo")
        'hello'
        >>> whisper("")
        ''
    """
    return text.lower()


def initials(name):
    """The first letter of each word, upper-cased.

    >>> initials("ada king lovelace")
    'AKL'

    Words are split on whitespace.
    """
    return "".join(word[0].upper() for word in name.split())


def repeat(text, times=2):
    """The text repeated, joined by spaces.

    >>> repeat("la", 3)
    'la la la'
    >>> repeat("x",
    ...        times=1)
    'x'
    """
    return " ".join([text] * times)


def vowels(text):
    """How many vowels the text holds.

    >>> vowels("banana")
    3
    """
    return sum(1 for character in text.lower() if character in "aeiou")


class Counter:
    """Counts calls.

    >>> c = Counter()
    >>> c.tick(); c.tick()
    1
    2
    """

    def __init__(self):
        self.count = 0

    def tick(self):
        """One more call; the count so far.

        >>> Counter().tick()
        1
        """
        self.count += 1
        return self.count


def echo(text):
    """The text as it is (its example shows another function: not asked for).

    >>> shout("x")
    'X!'
    """
    return text


def wrap(function):
    return function


@wrap
def decorated(text):
    """Maybe no function once decorated: not documented.

    >>> decorated("a")
    'a'
    """
    return text


def _private(text):
    """Not documented for users.

    >>> _private("a")
    'a'
    """
    return text
'''
TEST_TEXTS = """from dockit.texts import Counter, initials, repeat, shout, vowels, whisper


def test_shout():
    assert shout("a") == "A!"


def test_whisper():
    assert whisper("AB") == "ab"


def test_initials():
    assert initials("grace brewster hopper") == "GBH"


def test_repeat():
    assert repeat("a") == "a a"


def test_vowels():
    assert vowels("xyz") == 0


def test_counter():
    counter = Counter()
    counter.tick()
    assert counter.tick() == 2
"""
FILES = {
    "pyproject.toml": (
        '[project]\nname = "dockit"\nversion = "0.1"\n\n'
        '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n'
    ),
    "PKG-INFO": "Metadata-Version: 2.1\nName: dockit\nVersion: 0.1\n",
    "src/dockit/__init__.py": '"""dockit: text helpers with examples."""\n',
    "src/dockit/texts.py": TEXTS,
    "tests/test_texts.py": TEST_TEXTS,
}


def test_examples_go_and_the_prose_and_layout_stay() -> None:
    doc = "Sum.\n\n    Examples:\n        >>> add(1,\n        ...     2)\n        3\n"
    doc += "\n    Notes.\n    "
    assert without_examples(doc) == "Sum.\n\n    Notes.\n    "
    one = "Creates one.\n\n        >>> f(1)\n        [0]\n\n        "
    assert without_examples(one) == "Creates one.\n\n        "
    kept = "Example with prose:\n    Call it.\n\n    >>> f()\n    1\n    "
    assert without_examples(kept) == "Example with prose:\n    Call it.\n    "
    # text on the line after the opening quotes stays there (else only the lines it moved
    # would differ, and the build's leak scan would find the answer's prose in them)
    opened = "\n    Joins them.\n\n    >>> join()\n    1\n    "
    assert without_examples(opened) == "\n    Joins them.\n    "


def test_every_docstring_loses_its_examples_and_the_public_plain_ones_are_asked_for() -> None:
    found = example_docstrings(TEXTS)
    asked = ["shout", "whisper", "initials", "repeat", "vowels", "Counter", "Counter.tick"]
    assert [d.name for d in found if d.asked] == [*asked, "echo"]
    assert [d.name for d in found if not d.asked] == ["decorated", "_private"]
    for item in found:
        assert TEXTS.count(item.old) == 1 and ">>>" not in item.new
        ast.parse(TEXTS.replace(item.old, item.new))  # still a module
    initials = next(d for d in found if d.name == "initials")
    assert "Words are split on whitespace." in initials.new


def test_names_whose_doctests_are_not_stable_are_not_asked_for() -> None:
    data = {
        "verification": {
            "documented": ["a", "b", "c"],
            "fail_to_pass": ["m.py::m.a", "m.py::m.b", "m.py::m.c"],
        },
        "mutation": {"operations": [{"old": "A"}, {"old": "B"}, {"old": "C"}]},
    }
    assert keep_measured(data, ["m.py::m.a", "m.py::m.c"]) == 2
    assert data["verification"]["documented"] == ["a", "c"]  # type: ignore[index]
    # b's examples stay removed: kept, they could hold lines of the answer
    assert data["mutation"]["operations"] == [{"old": "A"}, {"old": "B"}, {"old": "C"}]  # type: ignore[index]


@pytest.mark.slow
def test_docs_tasks_propose_validate_and_resolve_with_the_reference(tmp_path: Path) -> None:
    out = tmp_path / "proposed"
    summary = propose_from(FILES, "dockit==0.1", out, "docs")
    assert summary["proposed_by_kind"] == {"docs": 1}, summary
    task = yaml.safe_load((out / "tasks" / "dockit-texts-docs.yaml").read_text())
    assert task["category"] == "documentation" and task["verification"]["kind"] == "docs"
    check = task["verification"]
    assert check["hidden_tests"] == ["tests/test_texts.py"]
    assert check["documented"] == [
        "shout", "whisper", "initials", "repeat", "vowels", "Counter", "Counter.tick",
    ]  # fmt: skip
    # echo's doctest passes with its examples, but they never call it: neither asked nor graded
    assert "src/dockit/texts.py::dockit.texts.echo" not in check["fail_to_pass"]
    assert "src/dockit/texts.py::dockit.texts.Counter.tick" in check["fail_to_pass"]
    assert "echo" not in task["prompt"]
    assert len(task["mutation"]["operations"]) == 10  # the unasked examples go too
    graded = check["fail_to_pass"] + check["pass_to_pass"]
    assert not any(t.endswith((".decorated", "._private")) for t in graded)
    assert "shout" in task["prompt"] and "Counter.tick" in task["prompt"]
    run = validate_then_run(out / "tasks", tmp_path)  # validate: untouched and stub fail
    assert run["attempts"] == run["resolved"] == 1
