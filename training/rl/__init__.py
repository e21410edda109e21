"""Asynchronous RL on harness tasks: the harness is the environment, workers sample with
version-stamped tokens, a learner trains with Dr. GRPO and pushes weight deltas back."""
