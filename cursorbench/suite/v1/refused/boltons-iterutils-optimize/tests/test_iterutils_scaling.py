"""Operation counts of iterutils' grouping helpers on large inputs (a task's hidden tests).

Keys count their equality comparisons; a hash-based implementation compares a key with
another only on a hash collision, a list-based one with every key seen so far. The
bounds are linear in the input and sit far below what a quadratic scan needs, so a
loaded machine cannot change the verdict."""

from boltons.iterutils import bucketize, partition, redundant, unique, unique_iter

N = 2000


class CountedKey:
    comparisons = 0

    def __init__(self, value):
        self.value = value

    def __hash__(self):
        return hash(self.value)

    def __eq__(self, other):
        CountedKey.comparisons += 1
        return isinstance(other, CountedKey) and self.value == other.value

    def __repr__(self):
        return f"CountedKey({self.value!r})"


def counted(values):
    CountedKey.comparisons = 0
    return [CountedKey(v) for v in values]


def test_unique_compares_each_key_a_bounded_number_of_times():
    items = counted(list(range(N)) + list(range(N)))
    result = unique(items)
    assert [item.value for item in result] == list(range(N))
    assert CountedKey.comparisons <= 4 * len(items)


def test_unique_iter_with_a_key_function_scales_linearly():
    items = [{"id": CountedKey(i % N)} for i in range(2 * N)]
    CountedKey.comparisons = 0
    result = list(unique_iter(items, key=lambda item: item["id"]))
    assert [item["id"].value for item in result] == list(range(N))
    assert CountedKey.comparisons <= 4 * len(items)


def test_redundant_scales_linearly():
    items = counted(list(range(N)) + list(range(0, N, 2)))
    result = redundant(items)
    assert [item.value for item in result] == list(range(0, N, 2))
    assert CountedKey.comparisons <= 4 * len(items)


def test_redundant_groups_scale_linearly():
    items = counted(list(range(N)) * 3)
    groups = redundant(items, groups=True)
    assert len(groups) == N
    assert all(len(group) == 3 for group in groups)
    assert [group[0].value for group in groups] == list(range(N))
    assert CountedKey.comparisons <= 4 * len(items)


def test_bucketize_with_many_buckets_scales_linearly():
    items = counted(list(range(N)) * 2)
    buckets = bucketize(items, key=lambda item: item)
    assert len(buckets) == N
    assert all(len(values) == 2 for values in buckets.values())
    assert CountedKey.comparisons <= 4 * len(items)


def test_bucketize_by_attribute_scales_linearly():
    class Row:
        def __init__(self, key):
            self.key = key

    rows = [Row(key) for key in counted([i % N for i in range(2 * N)])]
    buckets = bucketize(rows, key="key")
    assert sorted(key.value for key in buckets) == list(range(N))
    assert CountedKey.comparisons <= 4 * len(rows)


def test_partition_keeps_order():
    items = counted(range(2 * N))
    evens, odds = partition(items, key=lambda item: item.value % 2 == 0)
    assert [item.value for item in evens] == list(range(0, 2 * N, 2))
    assert [item.value for item in odds] == list(range(1, 2 * N, 2))
    assert CountedKey.comparisons <= 4 * len(items)
