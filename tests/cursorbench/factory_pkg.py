"""wordkit: a small package the v1 suite does not use, made into an sdist on the fly (as
`sdists.py` makes tinypkg), for the task factory's tests: two modules, one of whose
functions is exercised by a whole test file and by nothing else."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from harness.home import build_cache
from tests.cli_runner import cursorbench
from tests.cursorbench.sdists import make_sdist, place_sdist

CASES = r'''"""Converting identifiers between naming styles."""

import re


def split_identifier_words(text):
    """Break an identifier into its lower-case words, whatever its style."""
    spaced = re.sub(r"([a-z0-9])([A-Z])", r"\1 \2", text)
    return [w.lower() for w in re.split(r"[\s_\-]+", spaced) if w]


def to_camel_identifier(text, upper_first=False):
    """Join the words of an identifier in camel case.

    The first word stays lower case unless `upper_first` is given.
    """
    words = split_identifier_words(text)
    if not words:
        return ""
    head = words[0].capitalize() if upper_first else words[0]
    tail = "".join(word.capitalize() for word in words[1:])
    return head + tail


def to_kebab_identifier(text):
    """Join the words of an identifier with hyphens."""
    return "-".join(split_identifier_words(text))
'''

COUNTS = '''"""Counting things in text."""


def vowel_total(text):
    """How many vowels the text holds."""
    return sum(1 for character in text.lower() if character in "aeiou")


def word_total(text):
    """How many words the text holds."""
    return len(text.split())
'''

TEST_CASES = r"""from wordkit.cases import to_camel_identifier, to_kebab_identifier


def test_camel_from_snake():
    assert to_camel_identifier("hello_big_world") == "helloBigWorld"


def test_camel_from_kebab():
    assert to_camel_identifier("hello-world") == "helloWorld"


def test_camel_upper_first():
    assert to_camel_identifier("hello_world", upper_first=True) == "HelloWorld"


def test_camel_from_camel():
    assert to_camel_identifier("helloWorld") == "helloWorld"


def test_camel_empty():
    assert to_camel_identifier("") == ""


def test_camel_single_word():
    assert to_camel_identifier("word") == "word"


def test_camel_from_spaces():
    assert to_camel_identifier("two words") == "twoWords"
"""

TEST_KEBAB = """from wordkit.cases import to_kebab_identifier


def test_kebab_from_camel():
    assert to_kebab_identifier("helloWorld") == "hello-world"


def test_kebab_from_snake():
    assert to_kebab_identifier("a_b") == "a-b"
"""

TEST_COUNTS = """from wordkit.counts import vowel_total, word_total


def test_vowels():
    assert vowel_total("Banana") == 3


def test_words():
    assert word_total("a b c") == 3


def test_no_words():
    assert word_total("") == 0
"""

FILES = {
    "pyproject.toml": (
        '[project]\nname = "wordkit"\nversion = "0.3"\n\n'
        '[tool.pytest.ini_options]\ntestpaths = ["tests"]\n'
    ),
    "PKG-INFO": "Metadata-Version: 2.1\nName: wordkit\nVersion: 0.3\n",
    "src/wordkit/__init__.py": '"""wordkit: small text helpers."""\n',
    "src/wordkit/cases.py": CASES,
    "src/wordkit/counts.py": COUNTS,
    "tests/test_cases.py": TEST_CASES,
    "tests/test_kebab.py": TEST_KEBAB,
    "tests/test_counts.py": TEST_COUNTS,
}
RELEASED = 1_717_243_200  # 2024-06-01 12:00 UTC, the date the sdist's members carry


def place_wordkit() -> str:
    """Puts wordkit 0.3's sdist in the build cache; its sha256."""
    return place_sdist(
        build_cache(), make_sdist(FILES, "wordkit-0.3", mtime=RELEASED), "wordkit-0.3.tar.gz"
    )


def validate_then_run(tasks: Path, tmp_path: Path) -> dict[str, Any]:
    """`tasks validate` then `cursorbench run` (the reference solver) on proposed tasks,
    through the real CLI (in this process: `tests/cli_runner.py`), each exiting 0; the run's
    `summary.json`."""
    for argv in (
        ["tasks", "validate", "--tasks", str(tasks)],
        ["run", "--tasks", str(tasks), "--out", str(tmp_path / "run"),
         "--db", f"sqlite:///{tmp_path / 'lb.sqlite'}"],
    ):  # fmt: skip
        done = cursorbench(*argv)
        assert done.returncode == 0, done.stdout + done.stderr
    summary: dict[str, Any] = json.loads((tmp_path / "run" / "summary.json").read_text())
    return summary


def propose_from(files: dict[str, str], release: str, out: Path, kind: str) -> dict[str, Any]:
    """Makes the release's sdist from `files` (in the build cache), runs `tasks propose
    --kind KIND` on it through the real CLI (in this process, exit 0) and returns its
    `proposals.json`."""
    name, _, version = release.partition("==")
    stem = f"{name}-{version}"
    place_sdist(build_cache(), make_sdist(files, stem, mtime=RELEASED), f"{stem}.tar.gz")
    done = cursorbench("tasks", "propose", release, "--out", str(out), "--kind", kind)
    assert done.returncode == 0, done.stdout + done.stderr
    summary: dict[str, Any] = json.loads((out / "proposals.json").read_text())
    return summary
