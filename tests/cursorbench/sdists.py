"""A tiny pure-Python package made into an sdist on the fly, for builder and validator tests:
no network, the same code paths as a package from the index (the sdist is placed in the
content-addressed cache, where a download would have put it)."""

from __future__ import annotations

import hashlib
import io
import os
import tarfile
import uuid
from pathlib import Path

from cursorbench.tasks.task import Task
from harness.home import build_cache

EXTRA = '''"""Text statistics: the feature a task deletes."""


def count_distinctive_vowels_in_text(text):
    return sum(1 for character in text.lower() if character in "aeiou")


def longest_word_of_the_sentence_given(text):
    words = text.split()
    return max(words, key=len) if words else ""


def reverse_every_word_in_sentence(text):
    return " ".join(word[::-1] for word in text.split())


def title_case_every_word_in_text(text):
    return " ".join(word[:1].upper() + word[1:] for word in text.split())


def count_sentences_in_paragraph(text):
    return sum(text.count(mark) for mark in ".!?")
'''

FILES = {
    "pyproject.toml": (
        '[project]\nname = "tinypkg"\nversion = "1.0"\n\n'
        '[tool.pytest.ini_options]\ntestpaths = ["tests"]\naddopts = "-x --strict-markers"\n'
    ),
    "src/tinypkg/__init__.py": '"""tinypkg."""\n',
    "src/tinypkg/core.py": (
        "def double(x):\n    return 2 * x\n\n\ndef square(x):\n    return x * x\n"
    ),
    "src/tinypkg/extra.py": EXTRA,
    "tests/test_core.py": (
        "from tinypkg.core import double, square\n\n\n"
        "def test_double():\n    assert double(2) == 4\n\n\n"
        "def test_square():\n    assert square(3) == 9\n\n\n"
        "def test_double_negative():\n    assert double(-1) == -2\n"
    ),
    "tests/test_extra.py": (
        "from tinypkg import extra\n\n\n"
        "def test_vowels():\n"
        "    assert extra.count_distinctive_vowels_in_text('Banana') == 3\n\n\n"
        "def test_longest():\n"
        "    assert extra.longest_word_of_the_sentence_given('a bbb cc') == 'bbb'\n\n\n"
        "def test_longest_empty():\n"
        "    assert extra.longest_word_of_the_sentence_given('') == ''\n\n\n"
        "def test_reverse():\n"
        "    assert extra.reverse_every_word_in_sentence('ab cd') == 'ba dc'\n\n\n"
        "def test_title():\n"
        "    assert extra.title_case_every_word_in_text('ab cd') == 'Ab Cd'\n\n\n"
        "def test_sentences():\n    assert extra.count_sentences_in_paragraph('A. B! C?') == 3\n"
    ),
    "src/tinypkg.egg-info/SOURCES.txt": "src/tinypkg/extra.py\n",
    "src/tinypkg/__pycache__/extra.cpython-311.pyc": "compiled\n",
}


def make_sdist(files: dict[str, str] = FILES, top: str = "tinypkg-1.0", mtime: int = 0) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as bundle:
        for name, text in sorted(files.items()):
            data = text.encode()
            info = tarfile.TarInfo(f"{top}/{name}")
            info.size = len(data)
            info.mtime = mtime
            bundle.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def place_sdist(home: Path, data: bytes, name: str = "tinypkg-1.0.tar.gz") -> str:
    """Puts the sdist where `fetch_sdist(source, home)` finds it (atomically: the session's
    build cache is shared by tests that may run at once)."""
    digest = hashlib.sha256(data).hexdigest()
    folder = home / "sdists" / digest
    folder.mkdir(parents=True, exist_ok=True)
    staging = folder / f".{name}.{uuid.uuid4().hex[:8]}"
    staging.write_bytes(data)
    os.replace(staging, folder / name)
    return digest


def tiny_task(home: Path, task_dir: Path, files: dict[str, str] = FILES, **changes: object) -> Task:
    """The tinypkg task; `home` is the test's home, and its sdist goes to the build cache
    (where builds look for sdists: the session's shared one in tests)."""
    sha = place_sdist(build_cache(), make_sdist(files))
    data = {
        "id": "tinypkg-extra",
        "suite_version": "test",
        "category": "new_feature",
        "prompt": "Add text statistics helpers to tinypkg.",
        "source": {"kind": "package", "name": "tinypkg", "version": "1.0", "sha256": sha},
        "mutation": {"operations": [{"op": "remove_file", "file": "src/tinypkg/extra.py"}]},
        "verification": {
            "test_args": ["tests"],
            "hidden_tests": ["tests/test_extra.py"],
            "fail_to_pass": [
                f"tests/test_extra.py::test_{name}"
                for name in ("vowels", "longest", "longest_empty", "reverse", "title", "sentences")
            ],
            "pass_to_pass": [
                "tests/test_core.py::test_double",
                "tests/test_core.py::test_square",
                "tests/test_core.py::test_double_negative",
            ],
        },
        **changes,
    }
    task_dir.mkdir(parents=True, exist_ok=True)
    return Task.model_validate(data).model_copy(update={"path": task_dir / "task.yaml"})
