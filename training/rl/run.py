"""An RL run on micro-tasks, end to end: warm start, asynchronous RL through the harness,
every checkpoint scored on held-out tasks (and gated into the leaderboard when a database
is given), metrics logged, resumable from the latest complete checkpoint.

    python -m training.rl run --config rl.yaml        # or: --out DIR --steps N ...
"""

from __future__ import annotations

import copy
import json
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import torch
from pydantic import BaseModel, ConfigDict, Field

from training.checkpoint import (
    OPTIMIZER_FILE,
    Checkpoint,
    checkpoint_name,
    latest_checkpoint,
    load_model,
    save_checkpoint,
)
from training.model import Transformer
from training.rl.env import HarnessEnv
from training.rl.exact_score import (
    ExactScore,
    Trajectory,
    exact_score,
    load_pool,
    save_pool,
    trajectories,
)
from training.rl.learner import Learner, LearnerConfig, Rollout, StepMetrics
from training.rl.microtasks import OPERATIONS, MicroTask, build_micro_tasks, write_micro_tasks
from training.rl.orchestrator import Orchestrator
from training.rl.policy import Sampler
from training.rl.warm_cache import cached_warm_start
from training.rl.warmstart import (
    micro_model,
    micro_tokenizer,
    reference_probability,
    warm_start,
)
from training.rl.workers import ProcessWorker, RolloutWorker, WorkerSpec
from training.serve import TOKENIZER_FILE
from training.tokenizer import CodeTokenizer

Log = Callable[[str], None]
HELD_OUT_TRAJECTORIES = "held-out-trajectories.jsonl"  # every checkpoint's, for `exact_rise`
GRADE_MEMO = "grade-memo"  # each distinct change's verdict, shared by the run's processes


class RLConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")

    out: Path
    steps: int = Field(default=8, ge=1, description="Learner steps in all (a resumed run goes on).")
    groups_per_step: int = Field(default=3, ge=1)
    workers: int = Field(default=2, ge=1)
    executor: Literal["processes", "ray"] = Field(
        default="processes", description="Rollout workers as local processes or Ray actors."
    )
    ray_address: str | None = Field(
        default=None, description="The Ray cluster's address [default: start a local one]."
    )
    max_lag: int = Field(default=1, ge=0)
    inflight: bool = True
    checkpoint_every: int = Field(default=4, ge=1)
    warm_start_steps: int = Field(default=100, ge=0)
    init: Path | None = Field(
        default=None,
        description="A checkpoint (with its tokenizer) to start from instead of the warm start.",
    )
    warm_start_cache: Path | None = Field(
        default=None,
        description="Share warm starts by content hash under this folder (when no `init`).",
    )
    context_length: int = 1536
    sandbox: str = "auto"
    held_out_samples: int = Field(default=2, ge=1, description="Samples per held-out task.")
    held_out_k: int | None = Field(
        default=None, ge=1, description="The k of held-out best-of-k [default: all samples]."
    )
    db_url: str | None = Field(default=None, description="Gate each checkpoint into it.")
    training_run: str | None = Field(
        default=None, description="The leaderboard's name for the run [default: rl-<out's name>]."
    )
    operations: list[str] | None = Field(
        default=None,
        description="The micro-tasks' operations, trained and held out [default: all three].",
    )
    seed: int = 0
    learner: LearnerConfig = Field(
        default_factory=lambda: LearnerConfig(group_size=4, max_tokens=96, lr=3e-4)
    )


def _tokenizer(config: RLConfig) -> CodeTokenizer:
    path = config.out / TOKENIZER_FILE
    if not path.exists():
        config.out.mkdir(parents=True, exist_ok=True)
        if config.init is not None:  # the tokenizer the checkpoint was trained with
            path.write_text((config.init / TOKENIZER_FILE).read_text())
        else:
            micro_tokenizer().save(path)
    return CodeTokenizer.load(path)


def _save(config: RLConfig, learner: Learner, tokens: int) -> Checkpoint:
    text = (config.out / TOKENIZER_FILE).read_text()
    return save_checkpoint(
        config.out / "checkpoints",
        learner.model,
        learner.version,
        {"version": learner.version, "tokens_seen": tokens},
        optimizer_state=learner.optimizer.state_dict(),
        extra_files={TOKENIZER_FILE: text},
    )


def _start(config: RLConfig, tokenizer: CodeTokenizer, log: Log) -> tuple[Learner, int]:
    """The learner: from the latest checkpoint, else warm-started (saved as step 0)."""
    found = latest_checkpoint(config.out / "checkpoints")
    if found is not None:
        model = load_model(found.path)
        learner = Learner(model, config.learner, _reference(config), found.step)
        optimizer = found.path / OPTIMIZER_FILE
        if optimizer.exists():
            learner.optimizer.load_state_dict(torch.load(optimizer, weights_only=True))
            for group in learner.optimizer.param_groups:  # the config's rate, not the saved one
                group["lr"] = config.learner.lr
        log(f"resumed from {found.path.name} (version {found.step})")
        return learner, int(found.state.get("tokens_seen", 0))
    if config.init is not None:
        model = load_model(config.init)
        log(f"started from {config.init}")
    else:
        model = micro_model(tokenizer, config.seed, config.context_length)
        loss = warm_start(
            model, tokenizer, config.warm_start_steps, config.seed, operations=config.operations
        )
        log(f"warm start: {config.warm_start_steps} SFT steps, loss {loss:.4f}")
    learner = Learner(model, config.learner, copy.deepcopy(model).eval())
    return learner, 0


def _reference(config: RLConfig) -> Transformer | None:
    """The KL reference, the warm start (step 0): in the reward when `beta` > 0, and the
    `kl_ref` each step logs."""
    first = config.out / "checkpoints" / checkpoint_name(0)
    if not first.exists():
        return None
    return load_model(first).eval()


def best_of_k(rewards: list[float], k: int) -> float:
    """The expected best reward of `k` samples drawn without replacement from `rewards`
    (unbiased from n >= k samples, like pass@k): sorted ascending, the i-th is the best of a
    k-subset in C(i - 1, k - 1) of the C(n, k) subsets."""
    ordered = sorted(rewards)
    n = len(ordered)
    if not 1 <= k <= n:
        raise ValueError(f"best of {k} from {n} samples")
    return sum(r * math.comb(i, k - 1) for i, r in enumerate(ordered)) / math.comb(n, k)


def held_out_score(
    model: Transformer,
    env: HarnessEnv,
    tasks: list[MicroTask],
    samples: int,
    seed: int,
    k: int | None = None,
    keep: list[Trajectory] | None = None,
) -> dict[str, Any]:
    """Mean reward and best-of-k (k = all samples unless given) on held-out tasks, through
    the harness, and every sample's reward (task by task); the sampling seeds depend on
    `seed` only, so a flat twin scored with the same `seed` draws the same random numbers
    (the sampler's draws are coupled: `training.rl.rise`). Beside them, without sampling,
    the mean probability that the policy writes the reference edit for a held-out prompt
    (`warmstart.reference_probability`): it moves only when the weights do; and the exact
    mean reward and best-of-k over the distinct trajectories sampled (`exact_score`: lower
    bounds, with the mass they cover). The trajectories are appended to `keep`."""
    sampler = Sampler(model)
    means, best, every, reference = [], [], [], []
    seen: list[Rollout] = []
    for index, micro in enumerate(tasks):
        rollouts = [
            env.rollout(micro.task, sampler, 0, seed * 1000 + index * samples + j)
            for j in range(samples)
        ]
        seen += rollouts
        rewards = [r.reward for r in rollouts]
        means.append(sum(rewards) / len(rewards))
        best.append(best_of_k(rewards, k or samples))
        every += [round(r, 6) for r in rewards]
        symbol = OPERATIONS[micro.operation][0]
        reference.append(reference_probability(model, env.tokenizer(), micro.task.prompt, symbol))
    pool = trajectories(seen)
    exact = exact_score(model, pool, k or samples)
    if keep is not None:
        keep += pool
    return {
        "held_out_reward": sum(means) / len(means),
        "held_out_best_of_k": sum(best) / len(best),
        "held_out_rewards": every,
        "held_out_reference_p": sum(reference) / len(reference),
        "held_out_reward_exact": exact.mean_reward,
        "held_out_best_of_k_exact": exact.best_of_k,
        "held_out_covered": exact.covered,
    }


def _gate(config: RLConfig, checkpoint: Checkpoint, held_out: list[Path], log: Log) -> str:
    from training.gate import CheckpointGate, GateConfig

    gate_config = GateConfig(
        suite=None,
        tasks=[str(p) for p in held_out],
        sandbox=config.sandbox,
        max_tokens=config.learner.max_tokens,
        context_length=config.context_length,
        concurrency=1,
    )
    runs = config.out / "gate-runs"
    name = config.training_run or f"rl-{config.out.resolve().name}"
    with CheckpointGate(gate_config, name, config.db_url or "", runs, log) as gate:
        return gate.gate(checkpoint).decision


def run_rl(config: RLConfig, log: Log = print) -> list[dict[str, Any]]:
    """Train to `config.steps` learner steps; the metrics of the steps run now."""
    if config.init is None and config.warm_start_cache is not None:
        cached = cached_warm_start(
            config.warm_start_cache, config.warm_start_steps, config.seed,
            config.operations, config.context_length,
        )  # fmt: skip
        config = config.model_copy(update={"init": cached})
    torch.manual_seed(config.seed)
    torch.set_num_threads(1)  # tiny models: more threads only spin on a loaded machine
    tokenizer = _tokenizer(config)
    ops = config.operations
    train = [t.task for t in build_micro_tasks(config.out / "micro", operations=ops)]
    held_root = config.out / "micro-held-out"
    held_paths = write_micro_tasks(held_root, held_out=True, operations=ops)
    held = build_micro_tasks(held_root, held_out=True, operations=ops)
    learner, tokens = _start(config, tokenizer, log)
    env = HarnessEnv(
        config.out / TOKENIZER_FILE, config.out / "rollouts", config.context_length,
        config.learner.max_tokens, config.sandbox, memo_dir=config.out / GRADE_MEMO,
    )  # fmt: skip
    scorer = HarnessEnv(**{**env.__getstate__(), "work_dir": config.out / "held-out"})
    metrics_path = config.out / "metrics.jsonl"
    records: list[dict[str, Any]] = []

    def checkpoint(extra: dict[str, Any]) -> dict[str, Any]:
        saved = _save(config, learner, tokens)
        pool: list[Trajectory] = []
        scores = held_out_score(
            learner.model, scorer, held, config.held_out_samples, learner.version,
            config.held_out_k, pool,
        )  # fmt: skip
        save_pool(config.out / HELD_OUT_TRAJECTORIES, pool)
        record = {"checkpoint": saved.path.name, "version": learner.version, **scores, **extra}
        if config.db_url:
            record["gate"] = _gate(config, saved, held_paths, log)
        log(json.dumps(record))
        return record

    if learner.version == 0 and latest_checkpoint(config.out / "checkpoints") is None:
        _write(metrics_path, checkpoint({"kind": "checkpoint"}))
    remaining = config.steps - learner.version
    if remaining <= 0:
        return records
    state = {k: v.detach().clone() for k, v in learner.model.state_dict().items()}
    spec = WorkerSpec(learner.model.config.to_dict(), state, learner.version, env, config.inflight)
    workers = [_worker(config, spec) for _ in range(config.workers)]
    started = time.perf_counter()

    def on_step(metrics: StepMetrics, rollouts: list[Rollout]) -> None:
        nonlocal tokens
        tokens += metrics.tokens
        record = {"kind": "step", "wall_s": round(time.perf_counter() - started, 2)}
        record.update(metrics.__dict__)
        record["best_of_group"] = _best_of_group(rollouts, config.learner.group_size)
        log(json.dumps(record))
        _write(metrics_path, record)
        records.append(record)
        if metrics.version % config.checkpoint_every == 0 or metrics.version == config.steps:
            _write(metrics_path, checkpoint({"kind": "checkpoint"}))

    try:
        loop = Orchestrator(
            learner, workers, train, config.groups_per_step, config.max_lag, config.inflight,
            seed=config.seed * 7919 + learner.version,
        )  # fmt: skip
        loop.run(remaining, on_step)
    finally:
        for worker in workers:
            worker.close()
    return records


def _worker(config: RLConfig, spec: WorkerSpec) -> RolloutWorker:
    if config.executor == "ray":
        from training.rl.ray_workers import RayWorker  # Ray is imported only when asked for

        return RayWorker(spec, config.ray_address)
    return ProcessWorker(spec)


def _best_of_group(rollouts: list[Rollout], group_size: int) -> float:
    groups = [rollouts[i : i + group_size] for i in range(0, len(rollouts), group_size)]
    return sum(max(r.reward for r in g) for g in groups) / max(len(groups), 1)


def _write(path: Path, record: dict[str, Any]) -> None:
    with path.open("a") as handle:
        handle.write(json.dumps(record) + "\n")


def flat_twin(config: RLConfig, versions: list[int]) -> dict[int, dict[str, Any]]:
    """The held-out scores a flat twin (lr 0: the run's step-0 weights throughout) gets at
    each of `versions`, with the very sampling seeds the run's checkpoints were scored with:
    the run's noise floor, against which its rise is compared."""
    model = load_model(config.out / "checkpoints" / checkpoint_name(0))
    ops = config.operations
    held = build_micro_tasks(config.out / "micro-held-out", True, ops)
    scorer = HarnessEnv(
        config.out / TOKENIZER_FILE, config.out / "flat-twin", config.context_length,
        config.learner.max_tokens, config.sandbox, memo_dir=config.out / GRADE_MEMO,
    )  # fmt: skip
    return {
        v: held_out_score(model, scorer, held, config.held_out_samples, v, config.held_out_k)
        for v in versions
    }


def exact_rise(config: RLConfig, versions: list[int]) -> dict[int, ExactScore]:
    """The run's checkpoints at `versions` scored exactly on one pool: every distinct
    held-out trajectory any of its checkpoints sampled, graded by the harness when it was
    sampled. Two checkpoints compared this way (version 0 is the flat twin) differ only by
    their weights: no sampling noise."""
    pool = load_pool(config.out / HELD_OUT_TRAJECTORIES)
    k = config.held_out_k or config.held_out_samples
    checkpoints = config.out / "checkpoints"
    return {v: exact_score(load_model(checkpoints / checkpoint_name(v)), pool, k) for v in versions}
