"""Running attempts: one attempt (`attempt`), the plan (`plan`), the runner and its executors
(`runner`, `executor`, `ray_executor`, `remote`), the run folder (`rundir`), its summary
(`summary`) and the result store protocol (`store`).
"""
