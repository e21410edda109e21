"""Token prices: a table shipped as data, overridable per model.

A model with no price has an unknown cost, not a free one: the run records
`unknown_price_warning(model)` among its warnings, and `price_unknown(warnings)` is how the
leaderboard and the gate tell (its attempts' `cost_usd` stays 0 and must not be read as $0).
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib import resources
from pathlib import Path

import yaml
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from harness.errors import CursorBenchError


class Price(BaseModel):
    """US dollars per million tokens."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)

    def cost(self, tokens_in: int, tokens_out: int) -> float:
        return (tokens_in * self.input + tokens_out * self.output) / 1_000_000


PriceTable = dict[str, Price]
_TABLE = TypeAdapter(PriceTable)


class PriceTableError(CursorBenchError, ValueError):
    pass


def load_price_table(path: Path | None = None) -> PriceTable:
    """The shipped table, updated by the file at `path` if given."""
    shipped = resources.files("harness") / "data" / "prices.yaml"
    table = _TABLE.validate_python(yaml.safe_load(shipped.read_text()))
    if path is not None:
        try:
            table.update(_TABLE.validate_python(yaml.safe_load(path.read_text())))
        except (OSError, yaml.YAMLError, ValidationError) as error:
            first = str(error).splitlines()[0]
            raise PriceTableError(f"{path}: not a price table ({first})") from None
    return table


def price_for(model: str, table: PriceTable) -> Price | None:
    if model in table:
        return table[model]
    prefixes = [name for name in table if model.startswith(name)]
    return table[max(prefixes, key=len)] if prefixes else None


UNKNOWN_PRICE = "no price known for "


def unknown_price_warning(model: str) -> str:
    return f"{UNKNOWN_PRICE}{model!r}; cost is unknown (see --prices, --price-input)"


def price_unknown(warnings: Sequence[str]) -> bool:
    """Whether a run's warnings say its model had no price (its cost is unknown)."""
    return any(warning.startswith(UNKNOWN_PRICE) for warning in warnings)
