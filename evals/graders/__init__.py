"""The five behaviour evals' graders, registered in `harness.grading.scoring.GRADERS` on import:
`intent`, `instruction_following`, `eager_editing`, `code_quality`, `interruption`."""

from evals.graders import eager, instructions, intent, interruption, quality

__all__ = ["eager", "instructions", "intent", "interruption", "quality"]
