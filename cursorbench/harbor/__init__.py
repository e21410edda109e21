"""Harbor's task folders: export (`export`), the verifiers that run in Harbor's container
(`verifier`, `harness`, `harness_verifier`) and the canary check of imported Harbor tasks
(`canary`). Reading a Harbor task folder as a task is the `harbor` task source's
(`cursorbench/tasks/sources/harbor.py`).
"""
