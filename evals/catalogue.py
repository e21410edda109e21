"""The scenarios of the evals: the curated ones (`scenarios/*.yaml`) and the generated split
(`evals.generated`), loaded and checked together.

Kept apart from `evals.scenario` (the scenario model), which the generator itself builds on.
"""

from __future__ import annotations

from pathlib import Path

import yaml
from pydantic import ValidationError

from evals import EVALS
from evals.generated import SEED, generate
from evals.scenario import SCENARIOS, Scenario, ScenarioError, Split


def load_scenarios(
    evals: list[str] | None = None,
    folder: Path = SCENARIOS,
    split: Split = "all",
    seed: int | None = None,
    sample: int | None = None,
) -> list[Scenario]:
    """The scenarios of the named evals (all when None): the curated ones in file order,
    then (split `all` or `generated`) the generated held-out split of `seed`
    (`evals.generated`), at most `sample` of each eval (its first ones for the seed)."""
    wanted = list(evals or EVALS)
    unknown = [name for name in wanted if name not in EVALS]
    if unknown:
        raise ScenarioError(f"unknown evals {', '.join(unknown)}; known: {', '.join(EVALS)}")
    scenarios = _curated(wanted, folder) if split != "generated" else []
    if split != "curated":
        scenarios += _generated(wanted, seed, sample)
    ids = [scenario.id for scenario in scenarios]
    if len(set(ids)) != len(ids):
        raise ScenarioError(
            f"duplicate scenario ids: {sorted({i for i in ids if ids.count(i) > 1})}"
        )
    return scenarios


def _generated(wanted: list[str], seed: int | None, sample: int | None) -> list[Scenario]:
    chosen: list[Scenario] = []
    for name in wanted:
        mine = [s for s in generate(SEED if seed is None else seed) if s.eval == name]
        chosen += mine[:sample]  # interleaved over kinds: a sample covers them
    return chosen


def _curated(wanted: list[str], folder: Path) -> list[Scenario]:
    scenarios: list[Scenario] = []
    for name in wanted:
        path = folder / f"{name}.yaml"
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as error:
            raise ScenarioError(f"{path}: {' '.join(str(error).split())}") from None
        for number, item in enumerate(data.get("scenarios", []), start=1):
            try:
                scenario = Scenario.model_validate({"eval": name, **item})
            except ValidationError as error:
                first = error.errors()[0]
                where = ".".join(map(str, first["loc"]))
                raise ScenarioError(f"{path}: scenario {number}: {where}: {first['msg']}") from None
            if not scenario.codebase_dir().is_dir():
                raise ScenarioError(f"{path}: {scenario.id}: no codebase {scenario.codebase!r}")
            scenarios.append(scenario)
    return scenarios
