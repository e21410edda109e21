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


class ReportError(ValueError):
    """The report is not one well-formed JUnit document: garbled, or written to twice."""


def parse_junit(path: Path) -> dict[tuple[str, str], TestOutcome]:
    """Outcomes by (classname, name); empty when the file is missing or unreadable."""
    try:
        return parse_junit_report(path.read_bytes())
    except (OSError, ReportError):
        return {}


def parse_junit_report(data: bytes) -> dict[tuple[str, str], TestOutcome]:
    """Outcomes from the bytes pytest streamed; empty when it wrote nothing.

    A second document after the first (code under test writing its own report) or
    anything else that does not parse is a `ReportError`, and no test counts as passed.
    """
    if not data.strip():
        return {}
    try:
        root = ET.fromstring(data)
    except ET.ParseError as error:
        raise ReportError(f"the test report is not one JUnit document ({error})") from None
    outcomes: dict[tuple[str, str], TestOutcome] = {}
    if root.tag not in ("testsuites", "testsuite"):
        raise ReportError(f"the test report's root is <{root.tag}>, not <testsuites>")
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
