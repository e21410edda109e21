"""What people ask the store: the leaderboard, a run, two runs compared, one attempt, a
training run's checkpoints. Read-only functions of a SQLAlchemy connection, returning plain
pydantic models that the CLI prints and the dashboard renders.

One module per family, all re-exported here (callers use `queries.NAME`):
`leaderboard.standings` (the ranked leaderboard and its filters), `leaderboard.runs` (one run,
one attempt), `leaderboard.comparison` (two runs), `leaderboard.checkpoints` (a training run).

Not covered here: writing (`leaderboard.store`), deciding (`leaderboard.gate`).
"""

from __future__ import annotations

from leaderboard.checkpoints import (
    CheckpointPoint,
    CheckpointState,
    best_checkpoint,
    checkpoint_curve,
    training_checkpoints,
)
from leaderboard.comparison import Comparison, Flip, compare
from leaderboard.runs import (
    AttemptLine,
    AttemptView,
    RunDetail,
    attempt_lines,
    attempt_view,
    run_detail,
)
from leaderboard.standings import (
    Filters,
    LeaderRow,
    QueryError,
    filter_choices,
    leaderboard,
    unconfined_runs,
)

__all__ = [
    "AttemptLine",
    "AttemptView",
    "CheckpointPoint",
    "CheckpointState",
    "Comparison",
    "Filters",
    "Flip",
    "LeaderRow",
    "QueryError",
    "RunDetail",
    "attempt_lines",
    "attempt_view",
    "best_checkpoint",
    "checkpoint_curve",
    "compare",
    "filter_choices",
    "leaderboard",
    "run_detail",
    "training_checkpoints",
    "unconfined_runs",
]
