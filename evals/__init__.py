"""The five behaviour evals: intent, instruction-following, eager editing, code quality,
interruption. Scenarios are data (`scenarios/*.yaml`) over small codebases written for
this project (`codebases/`); graders are pure functions registered in
`harness.grading.scoring` (`graders/`); `agents.py` has the scripted well- and badly-behaved
agents (test doubles, not models)."""

EVALS = ("intent", "instruction_following", "eager_editing", "code_quality", "interruption")
