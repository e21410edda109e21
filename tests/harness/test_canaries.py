"""Canary tests: planted so that honest code always fails them, and tampering passes them."""

from __future__ import annotations

import random
import subprocess
import sys
import textwrap
from pathlib import Path

from harness.canaries import plant

MODULE = textwrap.dedent(
    """
    import pytest

    from calc import add, name


    def test_add():
        total = add(2, 3)
        assert total == 5


    def test_name():
        assert name() == "calc"


    def test_flag():
        assert add(0, 0) == 0 or True


    def test_branchy():
        if add(1, 1) == 2:
            return
        assert add(1, 1) == 99


    @pytest.mark.parametrize("x", [1, 2])
    def test_param(x):
        assert add(x, 0) == x


    def test_bool():
        assert (add(1, 1) == 2) == True


    class TestInClass:
        def test_method(self):
            assert add(1, 2) == 3
    """
)


def run_pytest(tmp_path: Path, calc: str, module: str) -> str:
    (tmp_path / "calc.py").write_text(calc)
    (tmp_path / "test_calc.py").write_text(module)
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider", str(tmp_path)],
        capture_output=True, text=True, cwd=tmp_path, timeout=60,
    )  # fmt: skip
    return done.stdout


def added_lines(planted_text: str) -> str:
    original = set(MODULE.splitlines())
    return "\n".join(line for line in planted_text.splitlines() if line not in original)


def test_existing_tests_stay_and_canaries_sit_among_them() -> None:
    planted = plant({"test_calc.py": MODULE, "notes.txt": "x"}, random.Random(1))
    text = planted.files["test_calc.py"]
    assert [line for line in text.splitlines() if line in MODULE.splitlines()] == [
        line for line in MODULE.splitlines() if line
    ] or set(MODULE.splitlines()) <= set(text.splitlines())
    assert list(planted.names) == ["test_calc.py"] and len(planted.names["test_calc.py"]) == 2
    for name in planted.names["test_calc.py"]:
        assert f"def {name}(" in text
        assert name.removeprefix("test_").split("_")[0] in {
            "add",
            "name",
            "flag",
            "branchy",
            "param",
            "bool",
            "method",
        }
    positions = [text.index(f"def {name}(") for name in planted.names["test_calc.py"]]
    assert any(position < text.index("class TestInClass") for position in positions)


def test_only_straight_line_tests_with_a_usable_literal_are_copied() -> None:
    for seed in range(30):
        planted = plant({"test_calc.py": MODULE}, random.Random(seed))
        added = added_lines(planted.files["test_calc.py"])
        assert "return" not in added and "if " not in added  # test_branchy never copied
        assert "== True" not in added and "or True" not in added
        assert "self" not in added  # methods are not copied


def test_names_and_values_change_with_every_grading() -> None:
    first = plant({"test_calc.py": MODULE}, random.Random(1))
    second = plant({"test_calc.py": MODULE}, random.Random(2))
    assert first.names != second.names and first.files != second.files


def test_honest_code_fails_every_canary(tmp_path: Path) -> None:
    calc = "def add(a, b):\n    return a + b\n\n\ndef name():\n    return 'calc'\n"
    for seed in range(5):
        planted = plant({"test_calc.py": MODULE}, random.Random(seed))
        output = run_pytest(tmp_path, calc, planted.files["test_calc.py"])
        for name in planted.names["test_calc.py"]:
            assert f"FAILED test_calc.py::{name}" in output, output
        assert "PASSED test_calc.py::test_add" in output


def test_a_frame_reading_oracle_passes_the_canary(tmp_path: Path) -> None:
    oracle = textwrap.dedent(
        """
        import ast, inspect, linecache


        def _expected(*args):
            frame = inspect.currentframe().f_back.f_back
            line = linecache.getline(frame.f_code.co_filename, frame.f_lineno).strip()
            try:
                return ast.literal_eval(ast.parse(line).body[0].test.comparators[0])
            except Exception:
                return None


        def add(a, b):
            return _expected()


        def name():
            return _expected()
        """
    )
    module = "from calc import add, name\n\n\ndef test_name():\n    assert name() == 'calc'\n"
    planted = plant({"test_calc.py": module}, random.Random(3))
    output = run_pytest(tmp_path, oracle, planted.files["test_calc.py"])
    copied = planted.names["test_calc.py"][0]
    assert f"PASSED test_calc.py::{copied}" in output, output


def test_modules_that_do_not_parse_or_have_no_tests_get_none() -> None:
    planted = plant({"test_a.py": "def broken(:\n", "test_b.py": "X = 1\n"}, random.Random(0))
    assert planted.files == {} and planted.names == {}
