import io
from decimal import Decimal

import pytest

from ledger import CsvFormatError, Inventory, export_csv, import_csv, load_csv, save_csv


@pytest.fixture
def inv():
    inventory = Inventory()
    inventory.add("B-2", "Banana, ripe", "0.25", 3)
    inventory.add("A-1", "Apple", "0.5", 10)
    return inventory


def test_export(inv):
    out = io.StringIO()
    assert export_csv(inv, out) == 2
    assert out.getvalue().splitlines() == [
        "sku,name,unit_price,quantity",
        "A-1,Apple,0.50,10",
        'B-2,"Banana, ripe",0.25,3',
    ]


def test_export_empty_inventory():
    out = io.StringIO()
    assert export_csv(Inventory(), out) == 0
    assert out.getvalue().splitlines() == ["sku,name,unit_price,quantity"]


def test_import():
    inv = import_csv(io.StringIO("sku,name,unit_price,quantity\nX-1,Widget,2.5,4\n"))
    item = inv.get("X-1")
    assert (item.name, item.unit_price, item.quantity) == ("Widget", Decimal("2.50"), 4)


def test_round_trip(inv):
    buffer = io.StringIO()
    export_csv(inv, buffer)
    buffer.seek(0)
    again = import_csv(buffer)
    assert [(i.sku, i.name, i.unit_price, i.quantity) for i in again] == [
        (i.sku, i.name, i.unit_price, i.quantity) for i in inv
    ]


def test_import_ignores_column_order_extra_columns_and_whitespace():
    text = "quantity,notes,unit_price,name,sku\n 7 ,fragile, 1.20 ,Cup , C-9 \n"
    inv = import_csv(io.StringIO(text))
    item = inv.get("C-9")
    assert (item.name, item.unit_price, item.quantity) == ("Cup", Decimal("1.20"), 7)


def test_import_merges_repeated_skus():
    text = "sku,name,unit_price,quantity\nX,Widget,1,2\nX,Widget,1,3\n"
    assert import_csv(io.StringIO(text)).get("X").quantity == 5


def test_import_into_existing_inventory(inv):
    text = "sku,name,unit_price,quantity\nA-1,Apple,0.60,5\nD-4,Dates,3,1\n"
    result = import_csv(io.StringIO(text), inv)
    assert result is inv
    assert inv.get("A-1").quantity == 15
    assert inv.get("A-1").unit_price == Decimal("0.60")
    assert "D-4" in inv


class TestErrors:
    def test_is_a_value_error(self):
        assert issubclass(CsvFormatError, ValueError)

    def test_missing_columns(self):
        with pytest.raises(CsvFormatError) as info:
            import_csv(io.StringIO("sku,name\nX,Widget\n"))
        assert info.value.line == 1

    def test_bad_price_reports_line(self):
        text = "sku,name,unit_price,quantity\nX,Widget,1,2\nY,Gadget,abc,1\n"
        with pytest.raises(CsvFormatError) as info:
            import_csv(io.StringIO(text))
        assert info.value.line == 3

    def test_bad_quantity(self):
        text = "sku,name,unit_price,quantity\nX,Widget,1,two\n"
        with pytest.raises(CsvFormatError) as info:
            import_csv(io.StringIO(text))
        assert info.value.line == 2

    def test_negative_values(self):
        with pytest.raises(CsvFormatError):
            import_csv(io.StringIO("sku,name,unit_price,quantity\nX,Widget,1,-2\n"))

    def test_missing_sku(self):
        text = "sku,name,unit_price,quantity\nX,Widget,1,2\n  ,Gadget,1,2\n"
        with pytest.raises(CsvFormatError) as info:
            import_csv(io.StringIO(text))
        assert info.value.line == 3

    def test_conflicting_names(self):
        text = "sku,name,unit_price,quantity\nX,Widget,1,2\nX,Gizmo,1,2\n"
        with pytest.raises(CsvFormatError) as info:
            import_csv(io.StringIO(text))
        assert info.value.line == 3

    def test_bad_file_leaves_inventory_unchanged(self, inv):
        text = "sku,name,unit_price,quantity\nA-1,Apple,0.50,5\nZ,Zucchini,x,1\n"
        with pytest.raises(CsvFormatError):
            import_csv(io.StringIO(text), inv)
        assert inv.get("A-1").quantity == 10
        assert "Z" not in inv


def test_save_and_load(inv, tmp_path):
    path = tmp_path / "stock.csv"
    assert save_csv(inv, path) == 2
    loaded = load_csv(path)
    assert loaded.total_value() == inv.total_value()
    assert [item.name for item in loaded] == ["Apple", "Banana, ripe"]
