"""What people ask the store: the leaderboard, a run, two runs compared, one attempt, a
training run's checkpoints. Read-only functions of a SQLAlchemy connection, returning plain
pydantic models that the CLI prints and the dashboard renders.

One module per family, all re-exported here (callers use `queries.NAME`):
`leaderboard.standings` (the ranked runs and their filters), `leaderboard.board` (one row per
model), `leaderboard.ids` (run id prefixes), `leaderboard.runs` (one run, its attempts paged,
one attempt), `leaderboard.comparison` (two runs), `leaderboard.checkpoints` (a training run).

Not covered here: writing (`leaderboard.store`), deciding (`leaderboard.gate`).
"""

from __future__ import annotations

from leaderboard.board import ModelEntry, SuiteBoard, model_board
from leaderboard.checkpoints import (
    CheckpointPoint,
    CheckpointState,
    best_checkpoint,
    checkpoint_curve,
    training_checkpoints,
)
from leaderboard.comparison import Comparison, Flip, compare
from leaderboard.ids import ShortIds, resolve_run, short_ids
from leaderboard.runs import (
    AttemptFilters,
    AttemptLine,
    AttemptView,
    RunDetail,
    attempt_lines,
    attempt_page,
    attempt_view,
    breakdowns_of,
    failures_of,
    run_detail,
)
from leaderboard.standings import (
    Filters,
    LeaderRow,
    QueryError,
    filter_choices,
    leaderboard,
    standings,
    unconfined_runs,
)

__all__ = [
    "AttemptFilters",
    "AttemptLine",
    "AttemptView",
    "CheckpointPoint",
    "CheckpointState",
    "Comparison",
    "Filters",
    "Flip",
    "LeaderRow",
    "ModelEntry",
    "QueryError",
    "RunDetail",
    "ShortIds",
    "SuiteBoard",
    "attempt_lines",
    "attempt_page",
    "attempt_view",
    "best_checkpoint",
    "breakdowns_of",
    "checkpoint_curve",
    "compare",
    "failures_of",
    "filter_choices",
    "leaderboard",
    "model_board",
    "resolve_run",
    "run_detail",
    "short_ids",
    "standings",
    "training_checkpoints",
    "unconfined_runs",
]
