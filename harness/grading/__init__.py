"""Grading an attempt: the grade (`grade`), scores (`scoring`), JUnit reports (`junit`), tamper
evidence (`canaries`, `twin`, `flags`), blame for failures (`blame`), the memo of clean-state
grades (`memo`) and pytest's environment (`pytest_env`).
"""
