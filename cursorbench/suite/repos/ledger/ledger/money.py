"""Money amounts: Decimals rounded half-up to whole cents."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation

CENT = Decimal("0.01")


def to_money(value: Decimal | int | float | str) -> Decimal:
    """Convert ``value`` to a Decimal with exactly two decimal places.

    Floats go through ``str`` first, so ``to_money(0.1)`` is ``Decimal("0.10")``.
    Raises ValueError for values that are not finite numbers.
    """
    if isinstance(value, float):
        value = str(value)
    try:
        amount = Decimal(value)
    except (InvalidOperation, TypeError, ValueError):
        raise ValueError(f"not a money amount: {value!r}") from None
    if not amount.is_finite():
        raise ValueError(f"not a money amount: {value!r}")
    return amount.quantize(CENT, rounding=ROUND_HALF_UP)
