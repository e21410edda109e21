"""Operation counts of the priority queues on many tasks (a task's hidden tests).

Priorities count every comparison made between them. A binary heap needs about log2(n)
comparisons per push or pop and none to remove a task (it is marked and skipped later);
scanning a list needs about n. The bounds sit an order of magnitude below the scans, so
a loaded machine cannot change the verdict."""

import math
import random

from boltons.queueutils import HeapPriorityQueue, SortedPriorityQueue

N = 1500
LOG_N = math.log2(N)


class CountedPriority:
    comparisons = 0

    def __init__(self, value):
        self.value = value

    def _count(self, other):
        CountedPriority.comparisons += 1
        return other.value

    def __eq__(self, other):
        return self.value == self._count(other)

    def __lt__(self, other):
        return self.value < self._count(other)

    def __le__(self, other):
        return self.value <= self._count(other)

    def __gt__(self, other):
        return self.value > self._count(other)

    def __ge__(self, other):
        return self.value >= self._count(other)

    __hash__ = None


def counted_queue(queue_type):
    CountedPriority.comparisons = 0
    return queue_type(priority_key=lambda priority: CountedPriority(-priority))


def shuffled(seed):
    values = list(range(N))
    random.Random(seed).shuffle(values)
    return values


def drain(queue):
    return [queue.pop() for _ in range(len(queue))]


def test_heap_pushes_take_logarithmic_comparisons():
    queue = counted_queue(HeapPriorityQueue)
    for value in shuffled(1):
        queue.add(f"task-{value}", value)
    assert CountedPriority.comparisons <= 4 * N * LOG_N
    assert drain(queue) == [f"task-{value}" for value in reversed(range(N))]


def test_heap_interleaved_pushes_and_pops_stay_logarithmic():
    queue = counted_queue(HeapPriorityQueue)
    popped = []
    for step, value in enumerate(shuffled(2)):
        queue.add(value, value)
        if step % 3 == 2:
            popped.append(queue.pop())
    popped += drain(queue)
    assert sorted(popped) == list(range(N))
    assert CountedPriority.comparisons <= 8 * N * LOG_N


def test_heap_removing_tasks_needs_no_scan():
    queue = counted_queue(HeapPriorityQueue)
    for value in range(N):
        queue.add(value, value)
    CountedPriority.comparisons = 0
    for value in shuffled(3)[: N - 10]:
        queue.remove(value)
    assert CountedPriority.comparisons <= 2 * N
    assert len(queue) == 10
    assert drain(queue) == sorted(shuffled(3)[N - 10 :], reverse=True)


def test_sorted_queue_removing_tasks_needs_no_scan():
    queue = counted_queue(SortedPriorityQueue)
    for value in range(N):
        queue.add(value, value)
    CountedPriority.comparisons = 0
    for value in shuffled(4)[: N - 10]:
        queue.remove(value)
    assert CountedPriority.comparisons <= 2 * N
    assert drain(queue) == sorted(shuffled(4)[N - 10 :], reverse=True)


def test_heap_changing_priorities_stays_logarithmic():
    queue = counted_queue(HeapPriorityQueue)
    for value in range(N):
        queue.add(value, value)
    CountedPriority.comparisons = 0
    for value in shuffled(5):
        queue.add(value, N - value)  # re-adding a task replaces its priority
    assert CountedPriority.comparisons <= 8 * N * LOG_N
    assert drain(queue) == list(range(N))


def test_sorted_queue_changing_priorities_stays_logarithmic():
    queue = counted_queue(SortedPriorityQueue)
    for value in range(N):
        queue.add(value, value)
    CountedPriority.comparisons = 0
    for value in shuffled(6):
        queue.add(value, N - value)
    assert CountedPriority.comparisons <= 8 * N * LOG_N
    assert drain(queue) == list(range(N))


def test_equal_priorities_pop_in_insertion_order():
    for queue_type in (HeapPriorityQueue, SortedPriorityQueue):
        queue = counted_queue(queue_type)
        for value in range(50):
            queue.add(value, value % 2)
        assert drain(queue) == list(range(1, 50, 2)) + list(range(0, 50, 2))
