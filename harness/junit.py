"""Per-test outcomes from a JUnit XML report written by pytest.

Test ids are pytest node ids (`tests/test_x.py::TestY::test_z[p]`); JUnit
names a test by `classname` (the path with dots, plus classes) and `name`.
`junit_key` maps a node id onto that pair so the two can be matched.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from harness.results import TestOutcome

# When a test is reported twice (a failing call, then an erroring teardown), the worst wins.
SEVERITY = [TestOutcome.PASSED, TestOutcome.SKIPPED, TestOutcome.FAILED, TestOutcome.ERROR]


def junit_key(node_id: str) -> tuple[str, str]:
    address, bracket, parameters = node_id.partition("[")  # ids may hold "::" themselves
    path, _, rest = address.partition("::")
    module = path.removesuffix(".py").replace("/", ".")
    *classes, name = rest.split("::") if rest else [""]
    return ".".join([module, *classes]), name + bracket + parameters


def parse_junit(path: Path) -> dict[tuple[str, str], TestOutcome]:
    """Outcomes by (classname, name); empty when the report is missing or unreadable."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return {}
    outcomes: dict[tuple[str, str], TestOutcome] = {}
    for case in root.iter("testcase"):
        key = (case.get("classname", ""), case.get("name", ""))
        outcome = _outcome(case)
        previous = outcomes.get(key)
        if previous is None or SEVERITY.index(outcome) > SEVERITY.index(previous):
            outcomes[key] = outcome
    return outcomes


def _outcome(case: ET.Element) -> TestOutcome:
    tags = {child.tag for child in case}
    if "error" in tags:
        return TestOutcome.ERROR
    if "failure" in tags:
        return TestOutcome.FAILED
    if "skipped" in tags:
        return TestOutcome.SKIPPED
    return TestOutcome.PASSED


def outcomes_for(
    node_ids: list[str], report: dict[tuple[str, str], TestOutcome]
) -> dict[str, TestOutcome]:
    return {node_id: report.get(junit_key(node_id), TestOutcome.MISSING) for node_id in node_ids}
