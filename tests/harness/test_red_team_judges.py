"""Red team: the graded kinds' judges, attacked through the real CLI (issue 16, findings 2, 5, 9).

- 2: a docs example whose call never runs (`>>> if False: f()`) documents nothing, nor
  (issue 37 a) one that calls every method and swallows what they do or prints a constant;
- 5: what the agent produced is judged whatever its size or shape: a 5,000-digit
  integer or an integer no float holds in `answers.json`, a documented module holding a
  300,000-term expression; each ends `failed/tests_failed`, never `error/infra_error`;
- 9: the harness's own diff quotes a file name carrying a patch header line, so such a
  name reaches grading as a path (the refusal of those headers: `test_patch.py`).

Positive controls: the reference solutions of the two bundled tasks of these kinds resolve.
"""

from __future__ import annotations

import json
import re

import pytest

from cursorbench.tasks.loader import bundled_suite
from tests.harness.red_team_kit import assert_failed, assert_resolved, reference_steps, shell, write

DOCS_TASK = "ledger-inventory-docs"
ANSWER_TASK = "ledger-facts"
INVENTORY = (bundled_suite() / "repos" / "ledger" / "ledger" / "inventory.py").read_text()
RIGHT = {
    "rounding": "ROUND_HALF_UP",
    "cent": 0.01,
    "max_percent": 100,
    "discount_classes": [
        "PercentageDiscount", "FixedDiscount", "BulkDiscount", "BuyXGetYFree", "BestOf",
    ],
}  # fmt: skip


def answers(text: str) -> list:
    return [write("answers.json", text)]


# --- positive controls ---------------------------------------------------------------------


@pytest.mark.slow
def test_control_the_documented_methods_resolve(red_team) -> None:
    assert_resolved(red_team(reference_steps(DOCS_TASK), tasks=(DOCS_TASK,)))


@pytest.mark.slow
def test_control_the_right_answers_resolve(red_team) -> None:
    assert_resolved(red_team(reference_steps(ANSWER_TASK), tasks=(ANSWER_TASK,)))
    assert_resolved(red_team(answers(json.dumps(RIGHT)), tasks=(ANSWER_TASK,)))


# --- 2. an example that holds a call but never makes it ------------------------------------


@pytest.mark.slow
def test_examples_whose_calls_never_run_document_nothing(red_team) -> None:
    never = "        >>> if False: Inventory().add('x', 'y', 1)\n"
    hollow = re.sub(
        r"(?m)^\n        >>> .*?(?=^        \"\"\")", "\n" + never, INVENTORY, flags=re.S
    )
    assert hollow.count("if False") == 5 and ">>> stock" not in hollow
    result = red_team([write("ledger/inventory.py", hollow)], tasks=(DOCS_TASK,))
    assert_failed(result, "tests_failed")
    assert "never calls it" in result["error"]
    assert result["tests"]["ledger/inventory.py::ledger.inventory.Inventory.add"] == "passed"
    assert result["tests"]["docs:Inventory.add"] == "failed"


# --- issue 37 a: examples that call every method and show nothing of them ----------------------

CALL_ALL = (
    "        >>> stock = Inventory()\n"
    "        >>> try:\n"
    '        ...     _ = stock.add("A1", "apple", 1, 3), stock.remove("A1"), stock.total_value()\n'
    '        ...     _ = stock.low_stock(), stock.search("a")\n'
    "        ... except Exception:\n"
    "        ...     pass\n"
)


@pytest.mark.slow
@pytest.mark.parametrize("shown", ["", "        >>> print(3)\n        3\n"])
def test_examples_that_swallow_or_print_constants_document_nothing(red_team, shown) -> None:
    hollow = re.sub(
        r"(?m)^\n        >>> .*?(?=^        \"\"\")", "\n" + CALL_ALL + shown, INVENTORY, flags=re.S
    )
    assert hollow.count("except Exception") == 5 and ">>> stock.add" not in hollow
    result = red_team([write("ledger/inventory.py", hollow)], tasks=(DOCS_TASK,))
    assert_failed(result, "tests_failed")
    assert "shows what it returns or does" in result["error"]
    assert result["tests"]["ledger/inventory.py::ledger.inventory.Inventory.add"] == "passed"
    assert all(result["tests"][f"docs:Inventory.{name}"] == "failed"
               for name in ("add", "remove", "total_value", "low_stock", "search"))  # fmt: skip


# --- 5. output of any size or shape is judged: failed, never error ----------------------------


@pytest.mark.slow
def test_an_answer_with_a_5000_digit_integer_is_failed(red_team) -> None:
    text = json.dumps(RIGHT).replace('"max_percent": 100', '"max_percent": 1' + "0" * 4999)
    result = red_team(answers(text), tasks=(ANSWER_TASK,))
    assert_failed(result, "tests_failed")
    assert "4300" in result["error"] or "digits" in result["error"]


@pytest.mark.slow
def test_an_answer_no_float_holds_nan_and_wrong_shapes_are_failed(red_team) -> None:
    text = json.dumps(RIGHT).replace('"max_percent": 100', '"max_percent": 1' + "0" * 400)
    result = red_team(answers(text), tasks=(ANSWER_TASK,))  # float() of it: OverflowError
    assert_failed(result, "tests_failed")
    assert result["tests"]["answer:max_percent"] == "failed"
    assert result["tests"]["answer:rounding"] == "passed"
    odd = {"rounding": [[[]]] * 3, "cent": "NaN", "max_percent": "1e999",
           "discount_classes": {"a": None}}  # fmt: skip
    result = red_team(answers(json.dumps(odd)), tasks=(ANSWER_TASK,))
    assert_failed(result, "tests_failed")
    deep = "[" * 100_000 + "]" * 100_000  # RecursionError in the JSON parser
    assert_failed(red_team(answers(deep), tasks=(ANSWER_TASK,)), "tests_failed")


@pytest.mark.slow
def test_a_documented_module_with_a_300000_term_expression_is_failed(red_team) -> None:
    grow = shell(
        "python3 -c \"open('ledger/inventory.py', 'a').write("
        "'_HUGE = ' + '+'.join(['1'] * 300000) + '\\n')\""
    )
    result = red_team([*reference_steps(DOCS_TASK), grow], tasks=(DOCS_TASK,))
    assert_failed(result, "tests_failed")
    assert result["tests"]["docs:Inventory.add"] == "failed"


# --- 9. a file name carrying a patch header line stays a path --------------------------------


@pytest.mark.slow
def test_a_file_name_with_a_header_line_is_quoted_by_the_harness_diff(red_team) -> None:
    odd = shell("printf x > \"$(printf 'notes\\ncopy to conftest.py')\"")
    result = red_team([*reference_steps(ANSWER_TASK), odd], tasks=(ANSWER_TASK,))
    assert_resolved(result)
    diff = next(r for r in result["records"] if r["type"] == "diff")["patch"]
    assert '"b/notes\\ncopy to conftest.py"' in diff
