"""Token prices: the shipped table, prefix matching, override files."""

from __future__ import annotations

from pathlib import Path

import pytest

from harness.model.pricing import Price, PriceTableError, load_price_table, price_for


def test_shipped_table_loads() -> None:
    table = load_price_table()
    assert table["gpt-4o"] == Price(input=2.50, output=10.00)
    assert table["gpt-4o-mini"] == Price(input=0.15, output=0.60)
    assert table["reference-solver"] == Price(input=0.0, output=0.0)
    assert {"composer-2.5", "gpt-4.1", "gpt-4.1-mini"} <= set(table)


def test_cost_is_per_million_tokens() -> None:
    assert Price(input=2.5, output=10.0).cost(1_000_000, 0) == 2.5
    assert Price(input=2.5, output=10.0).cost(200_000, 50_000) == pytest.approx(1.0)
    assert Price(input=1, output=1).cost(0, 0) == 0.0


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("gpt-4o", "gpt-4o"),
        ("gpt-4o-2024-08-06", "gpt-4o"),
        ("gpt-4o-mini", "gpt-4o-mini"),
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("gpt-4.1-mini-2025-04-14", "gpt-4.1-mini"),
        ("gpt-4.1-2025-04-14", "gpt-4.1"),
    ],
)
def test_longest_prefix_wins(model: str, expected: str) -> None:
    table = load_price_table()
    assert price_for(model, table) == table[expected]


def test_unknown_model_has_no_price() -> None:
    table = load_price_table()
    assert price_for("llama-3-70b", table) is None
    assert price_for("gpt-4", table) is None  # a shorter name is not a prefix match


def test_override_file_updates_and_adds(tmp_path: Path) -> None:
    override = tmp_path / "prices.yaml"
    override.write_text("gpt-4o: {input: 1.0, output: 4.0}\nmy-model: {input: 0.1, output: 0.2}\n")
    table = load_price_table(override)
    assert table["gpt-4o"] == Price(input=1.0, output=4.0)
    assert price_for("my-model-v2", table) == Price(input=0.1, output=0.2)
    assert table["gpt-4o-mini"] == Price(input=0.15, output=0.60)  # the rest is kept
    assert price_for("gpt-4o-mini", table) == Price(input=0.15, output=0.60)


@pytest.mark.parametrize(
    "content",
    [
        "- just\n- a list\n",
        "gpt-4o: {input: -1, output: 2}\n",
        "gpt-4o: {input: 1}\n",
        "gpt-4o: {input: cheap, output: 2}\n",
        "gpt-4o: [unclosed\n",
        "",
        "plain text\n",
    ],
    ids=["list", "negative", "missing-output", "not-a-number", "bad-yaml", "empty", "scalar"],
)
def test_malformed_override_raises_one_line(tmp_path: Path, content: str) -> None:
    override = tmp_path / "prices.yaml"
    override.write_text(content)
    with pytest.raises(PriceTableError) as caught:
        load_price_table(override)
    message = str(caught.value)
    assert message.startswith(f"{override}: not a price table (")
    assert "\n" not in message


def test_missing_override_file_raises_one_line(tmp_path: Path) -> None:
    with pytest.raises(PriceTableError) as caught:
        load_price_table(tmp_path / "absent.yaml")
    assert "\n" not in str(caught.value)
    assert "absent.yaml: not a price table" in str(caught.value)
