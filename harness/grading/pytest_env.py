"""How pytest runs inside a sandbox: one plugin set and one set of flags for grading and for
the agent's own test runs, so the pytest an agent tries is the pytest that grades it.

Grading starts pytest with plugin autoloading off (`PYTEST_ENV`) and, on its command line,
`GRADING_PYTEST_FLAGS` (no cache folder, the tree's `addopts` ignored). An agent's commands
get the same two through the environment (`AGENT_PYTEST_ENV`): `PYTEST_ADDOPTS` reaches
`pytest`, `python -m pytest` and `py.test` alike. Without this the agent's pytest would load
every plugin installed beside the harness (hypothesis, pytest-mock, ...), each uncached, and
run about four times slower than the grader's. Nothing in it names a hidden file.

One difference stays: grading runs `python -P`; an agent's `python` keeps its usual
`sys.path[0]`, since `PYTHONSAFEPATH` would change every script it runs, not only pytest.
"""

from __future__ import annotations

import shlex

# No plugin loads unless the tree's config or the command line asks for it.
PYTEST_ENV: dict[str, str] = {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}

# Flags grading passes besides its report and config ones (see `harness.grading.grade.pytest_argv`).
GRADING_PYTEST_FLAGS: tuple[str, ...] = ("-o", "addopts=", "-p", "no:cacheprovider")

# What the environment of every agent command adds.
AGENT_PYTEST_ENV: dict[str, str] = PYTEST_ENV | {"PYTEST_ADDOPTS": shlex.join(GRADING_PYTEST_FLAGS)}
